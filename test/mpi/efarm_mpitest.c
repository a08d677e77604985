/*
 * Helpers shared by the MPI test programs: checks that abort the job with both
 * operands, deterministic data, and efarm's counters read through MPI_T.
 */
#define _POSIX_C_SOURCE 200809L
#include "efarm_mpitest.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int g_mpitest_rank = -1;
int g_mpitest_size = 0;
struct mpitest_limits g_mpitest_limits;

static const char *g_name = "mpitest";
static char g_context[256];
static int g_pvar_checks = 1;
static int g_verbose; /* MPITEST_VERBOSE=1: print every context as it is set (finding hangs) */
static int g_mpi_t_up;
static MPI_T_pvar_session g_session;

/* One cached MPI_T handle per counter name the program read. */
#define MAX_PVARS 64
static struct pvar {
    char name[64];
    MPI_T_pvar_handle handle;
    MPI_Datatype type;
} g_pvars[MAX_PVARS];
static int g_npvars;

void mpitest_context(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(g_context, sizeof(g_context), fmt, ap);
    va_end(ap);
    if (g_verbose) {
        fprintf(stderr, "%s: rank %d: %s\n", g_name, g_mpitest_rank, g_context);
        fflush(stderr);
    }
}

_Noreturn void mpitest_fail(const char *file, int line, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "FAILED %s: rank %d of %d: %s:%d: %s%s%s%s\n", g_name, g_mpitest_rank,
            g_mpitest_size, file, line, msg, g_context[0] ? " [while: " : "", g_context,
            g_context[0] ? "]" : "");
    fflush(stderr);
    fflush(stdout);
    /* Give mpiexec time to forward the report before MPI_Abort tears the job down. */
    nanosleep(&(struct timespec){.tv_nsec = 200000000}, NULL);
    MPI_Abort(MPI_COMM_WORLD, 1);
    abort(); /* MPI_Abort does not return; this keeps _Noreturn honest */
}

void mpitest_check_mpi(const char *file, int line, const char *call, int err)
{
    char str[MPI_MAX_ERROR_STRING];
    int len = 0;

    if (err == MPI_SUCCESS)
        return;
    if (MPI_Error_string(err, str, &len) != MPI_SUCCESS)
        snprintf(str, sizeof(str), "(no error string)");
    mpitest_fail(file, line, "%s returned %d: %s", call, err, str);
}

void mpitest_check_err_class(const char *file, int line, const char *what, int err, int cls)
{
    char got[MPI_MAX_ERROR_STRING], want[MPI_MAX_ERROR_STRING];
    int got_cls = MPI_SUCCESS, len = 0;

    if (err != MPI_SUCCESS && MPI_Error_class(err, &got_cls) != MPI_SUCCESS)
        mpitest_fail(file, line, "%s: MPI_Error_class(%d) failed", what, err);
    if (got_cls == cls)
        return;
    if (MPI_Error_string(got_cls, got, &len) != MPI_SUCCESS)
        got[0] = '\0';
    if (MPI_Error_string(cls, want, &len) != MPI_SUCCESS)
        want[0] = '\0';
    mpitest_fail(file, line, "error class of %s: %d (%s) vs %d (%s)", what, got_cls, got, cls,
                 want);
}

/* ---- Data ----------------------------------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
    /* splitmix64's finalizer: every input bit reaches every output bit. */
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t mpitest_seed(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    return mix64(mix64(mix64(mix64(a) ^ b) ^ c) ^ d);
}

uint8_t mpitest_byte(uint64_t seed, size_t i)
{
    return (uint8_t)(mix64(seed ^ ((uint64_t)(i >> 3) << 1)) >> ((i & 7) * 8));
}

void mpitest_fill(void *buf, size_t len, uint64_t seed)
{
    uint8_t *p = buf;
    size_t i = 0;

    for (; i + 8 <= len; i += 8) {
        uint64_t w = mix64(seed ^ ((uint64_t)(i >> 3) << 1));

        for (int k = 0; k < 8; k++)
            p[i + (size_t)k] = (uint8_t)(w >> (k * 8));
    }
    for (; i < len; i++)
        p[i] = mpitest_byte(seed, i);
}

void mpitest_check_data(const char *file, int line, const char *what, const void *buf, size_t len,
                        uint64_t seed)
{
    const uint8_t *p = buf;
    size_t i = 0;

    for (; i + 8 <= len; i += 8) {
        uint64_t w = mix64(seed ^ ((uint64_t)(i >> 3) << 1));

        for (int k = 0; k < 8; k++)
            if (p[i + (size_t)k] != (uint8_t)(w >> (k * 8)))
                goto mismatch;
    }
    for (; i < len; i++)
        if (p[i] != mpitest_byte(seed, i))
            goto mismatch;
    return;
mismatch:
    for (; i < len && p[i] == mpitest_byte(seed, i); i++)
        ;
    mpitest_fail(file, line, "%s: byte %zu of %zu is 0x%02x, want 0x%02x (seed %#llx)", what, i,
                 len, p[i], mpitest_byte(seed, i), (unsigned long long)seed);
}

void mpitest_check_bytes(const char *file, int line, const char *what, const void *buf, size_t len,
                         uint8_t value)
{
    const uint8_t *p = buf;

    for (size_t i = 0; i < len; i++)
        if (p[i] != value)
            mpitest_fail(file, line, "%s: byte %zu of %zu is 0x%02x, want 0x%02x", what, i, len,
                         p[i], value);
}

int mpitest_mpich_version(void)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len, major = 0, minor = 0;
    const char *p;

    CHECK_MPI(MPI_Get_library_version(v, &len));
    p = strstr(v, "MPICH Version:");
    CHECK(p != NULL);
    CHECK(sscanf(p, "MPICH Version: %d.%d", &major, &minor) == 2);
    return major * 100 + minor;
}

void *mpitest_malloc(size_t len)
{
    void *p = malloc(len ? len : 1);

    if (!p)
        mpitest_fail(__FILE__, __LINE__, "cannot allocate %zu bytes", len);
    return p;
}

size_t mpitest_env_size(const char *name, size_t def)
{
    const char *s = getenv(name);
    char *end;
    unsigned long long v;

    if (!s || !*s)
        return def;
    errno = 0;
    v = strtoull(s, &end, 0);
    if (errno || *end || *s == '-' || v > SIZE_MAX)
        mpitest_fail(__FILE__, __LINE__, "%s=\"%s\": not a nonnegative integer", name, s);
    return (size_t)v;
}

/* ---- MPI_T counters ------------------------------------------------------------------- */

int mpitest_pvar_checks(void)
{
    return g_pvar_checks;
}

int mpitest_pvar_lookup(const char *name)
{
    int num = 0;

    CHECK_MPI(MPI_T_pvar_get_num(&num));
    for (int i = 0; i < num; i++) {
        char vname[256], desc[256];
        int name_len = sizeof(vname), desc_len = sizeof(desc), verbosity, var_class, bind;
        int readonly, continuous, atomic;
        MPI_Datatype type;
        MPI_T_enum enumtype;

        if (MPI_T_pvar_get_info(i, vname, &name_len, &verbosity, &var_class, &type, &enumtype, desc,
                                &desc_len, &bind, &readonly, &continuous, &atomic) != MPI_SUCCESS)
            continue; /* an index that went invalid is not ours */
        if (strcmp(vname, name) == 0)
            return i;
    }
    return -1;
}

static struct pvar *pvar_open(const char *name)
{
    char vname[256], desc[256];
    int name_len = sizeof(vname), desc_len = sizeof(desc), verbosity, var_class, bind;
    int readonly, continuous, atomic, count = 0, index;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    struct pvar *v;

    for (int i = 0; i < g_npvars; i++)
        if (strcmp(g_pvars[i].name, name) == 0)
            return &g_pvars[i];
    if (g_npvars == MAX_PVARS || strlen(name) >= sizeof(g_pvars[0].name))
        mpitest_fail(__FILE__, __LINE__, "too many or too long counter names (%s)", name);
    index = mpitest_pvar_lookup(name);
    if (index < 0)
        mpitest_fail(__FILE__, __LINE__,
                     "no MPI_T performance variable \"%s\": is this MPICH built with "
                     "ch4:efarm and its counters? (MPITEST_NO_PVAR_CHECK=1 skips the "
                     "counter checks, for debugging only)",
                     name);
    CHECK_MPI(MPI_T_pvar_get_info(index, vname, &name_len, &verbosity, &var_class, &type, &enumtype,
                                  desc, &desc_len, &bind, &readonly, &continuous, &atomic));
    /* Counters, levels (efarm_level_*) and the NIC facts (efarm_nm_nic_*, generic). */
    if ((var_class != MPI_T_PVAR_CLASS_COUNTER && var_class != MPI_T_PVAR_CLASS_GENERIC &&
         var_class != MPI_T_PVAR_CLASS_LEVEL) ||
        bind != MPI_T_BIND_NO_OBJECT)
        mpitest_fail(__FILE__, __LINE__,
                     "%s: class %d bind %d, want a counter, level or generic variable bound to "
                     "no object",
                     name, var_class, bind);
    if (type != MPI_UNSIGNED_LONG_LONG && type != MPI_UNSIGNED_LONG && type != MPI_UNSIGNED)
        mpitest_fail(__FILE__, __LINE__, "%s: not an unsigned integer variable", name);
    v = &g_pvars[g_npvars];
    snprintf(v->name, sizeof(v->name), "%s", name);
    v->type = type;
    CHECK_MPI(MPI_T_pvar_handle_alloc(g_session, index, NULL, &v->handle, &count));
    CHECK_EQ(count, 1);
    if (!continuous)
        CHECK_MPI(MPI_T_pvar_start(g_session, v->handle));
    g_npvars++;
    return v;
}

unsigned long long mpitest_pvar_read(const char *name)
{
    struct pvar *v;

    if (!g_pvar_checks)
        return 0;
    v = pvar_open(name);
    if (v->type == MPI_UNSIGNED_LONG_LONG) {
        unsigned long long x = 0;

        CHECK_MPI(MPI_T_pvar_read(g_session, v->handle, &x));
        return x;
    }
    if (v->type == MPI_UNSIGNED_LONG) {
        unsigned long x = 0;

        CHECK_MPI(MPI_T_pvar_read(g_session, v->handle, &x));
        return x;
    }
    unsigned x = 0;

    CHECK_MPI(MPI_T_pvar_read(g_session, v->handle, &x));
    return x;
}

void mpitest_counters_read(struct mpitest_counters *c_p)
{
#define READ_(name) c_p->name = mpitest_pvar_read("efarm_" #name);
    MPITEST_COUNTER_LIST(READ_)
#undef READ_
}

void mpitest_counters_diff(const struct mpitest_counters *after,
                           const struct mpitest_counters *before, struct mpitest_counters *d_p)
{
#define DIFF_(name) d_p->name = after->name - before->name;
    MPITEST_COUNTER_LIST(DIFF_)
#undef DIFF_
}

void mpitest_counters_print(FILE *out, const char *title, const struct mpitest_counters *c)
{
    fprintf(out, "rank %d: %s:", g_mpitest_rank, title);
#define PRINT_(name) fprintf(out, " " #name "=%llu", c->name);
    MPITEST_COUNTER_LIST(PRINT_)
#undef PRINT_
    fputc('\n', out);
}

/* ---- Subprotocol expectations --------------------------------------------------------- */

/* Slack below the MTU for the REQ header and its optional parts (raw address, connid, CQ data). */
#define REQ_HEADER_SLACK 256

static void limits_init(struct mpitest_limits *l)
{
    size_t mtu = mpitest_env_size("EFASIM_MTU", 8928);
    size_t eager_max = mpitest_env_size("EFARM_EAGER_MAX", 0);

    l->eager_hi = mtu;
    l->eager_lo = mtu > REQ_HEADER_SLACK ? mtu - REQ_HEADER_SLACK : 0;
    if (eager_max && eager_max < l->eager_hi)
        l->eager_hi = eager_max;
    if (eager_max && eager_max < l->eager_lo)
        l->eager_lo = eager_max;
    /* The thresholds in force, as the netmod reports them (EFARM_* or the selection profile). */
    if (g_pvar_checks) {
        l->medium_max = (size_t)mpitest_pvar_read("efarm_nm_medium_max");
        l->read_min = (size_t)mpitest_pvar_read("efarm_nm_read_min");
        l->read_min_unreg = (size_t)mpitest_pvar_read("efarm_nm_read_min_unreg");
        l->runt_min = (size_t)mpitest_pvar_read("efarm_nm_runt_min");
        l->medium_max_stream = (size_t)mpitest_pvar_read("efarm_nm_medium_max_stream");
        l->read_min_stream = (size_t)mpitest_pvar_read("efarm_nm_read_min_stream");
        l->read_min_stream_unreg = (size_t)mpitest_pvar_read("efarm_nm_read_min_stream_unreg");
    } else {
        l->medium_max = mpitest_env_size("EFARM_MEDIUM_MAX", 65536);
        l->read_min = mpitest_env_size("EFARM_READ_MIN", 1048576);
        l->read_min_unreg = l->read_min;
        l->runt_min = l->read_min;
        l->medium_max_stream = SIZE_MAX;
        l->read_min_stream = l->read_min;
        l->read_min_stream_unreg = l->read_min;
    }
    l->rdma_read =
        mpitest_env_size("EFARM_RDMA_READ", 1) && mpitest_env_size("EFASIM_RDMA_READ", 1);
}

size_t mpitest_proto_sizes(size_t sizes[MPITEST_PROTO_NSIZES], size_t cap)
{
    const struct mpitest_limits *l = &g_mpitest_limits;
    const size_t s[MPITEST_PROTO_NSIZES] = {0,
                                            1,
                                            l->eager_lo,
                                            l->eager_hi + 1,
                                            l->medium_max + 1,
                                            l->read_min + 5,
                                            3 * l->read_min + 11};
    size_t max = 0;

    for (int i = 0; i < MPITEST_PROTO_NSIZES; i++) {
        sizes[i] = s[i] < cap ? s[i] : cap;
        if (sizes[i] > max)
            max = sizes[i];
    }
    return max;
}

unsigned mpitest_expect_proto(size_t len)
{
    const struct mpitest_limits *l = &g_mpitest_limits;
    unsigned mask = 0;

    /*
     * The engine's rules in order: eager if it fits, medium up to medium_max
     * (and, with reads, below the read threshold), then reads. The read
     * threshold depends on whether the buffer is registered, and both it and
     * medium's bound on whether other sends to the peer are in flight (a
     * stream): every combination is allowed.
     */
    if (len <= l->eager_hi)
        mask |= MPITEST_EAGER;
    if (len <= l->eager_lo)
        return mask;
    for (int k = 0; k < 4; k++) {
        int cold = k & 1, stream = k >> 1;
        size_t read_min = stream ? (cold ? l->read_min_stream_unreg : l->read_min_stream)
                                 : (cold ? l->read_min_unreg : l->read_min);
        size_t runt_min = cold && l->read_min_unreg > l->runt_min ? l->read_min_unreg : l->runt_min;
        size_t medium_max =
            stream && l->medium_max_stream < l->medium_max ? l->medium_max_stream : l->medium_max;

        /* Runting read from its own threshold when its conditions hold (no read in flight...). */
        if (l->rdma_read && len >= runt_min)
            mask |= MPITEST_RUNTREAD;
        if (len <= medium_max && !(l->rdma_read && len >= read_min))
            mask |= MPITEST_MEDIUM;
        else if (len >= read_min && l->rdma_read)
            mask |= MPITEST_RUNTREAD | MPITEST_LONGREAD | MPITEST_LONGCTS;
        else
            mask |= MPITEST_LONGCTS;
    }
    return mask;
}

unsigned long long mpitest_proto_count(const struct mpitest_counters *d, unsigned mask)
{
    return (mask & MPITEST_EAGER ? d->proto_eager : 0) +
           (mask & MPITEST_MEDIUM ? d->proto_medium : 0) +
           (mask & MPITEST_LONGCTS ? d->proto_longcts : 0) +
           (mask & MPITEST_LONGREAD ? d->proto_longread : 0) +
           (mask & MPITEST_RUNTREAD ? d->proto_runtread : 0);
}

#define ALL_PROTOS \
    (MPITEST_EAGER | MPITEST_MEDIUM | MPITEST_LONGCTS | MPITEST_LONGREAD | MPITEST_RUNTREAD)

void mpitest_check_sent_sizes(const char *file, int line, const struct mpitest_counters *d,
                              const size_t *lens, size_t nmsgs)
{
    static const unsigned protos[] = {MPITEST_EAGER, MPITEST_MEDIUM, MPITEST_LONGCTS,
                                      MPITEST_LONGREAD, MPITEST_RUNTREAD};
    unsigned long long bytes = 0, total = mpitest_proto_count(d, ALL_PROTOS);

    if (!g_pvar_checks)
        return;
    for (size_t i = 0; i < nmsgs; i++)
        bytes += lens[i];
    if (total != nmsgs)
        goto bad;
    /*
     * Each subprotocol carried no more messages than could go by it, and at
     * least those that could go by it alone (a size may allow several).
     */
    for (size_t k = 0; k < sizeof(protos) / sizeof(protos[0]); k++) {
        unsigned long long may = 0, must = 0, got = mpitest_proto_count(d, protos[k]);

        for (size_t i = 0; i < nmsgs; i++) {
            unsigned mask = mpitest_expect_proto(lens[i]);

            may += (mask & protos[k]) != 0;
            must += mask == protos[k];
        }
        if (got > may || got < must)
            goto bad;
    }
    if (d->nm_send_msgs < nmsgs || d->nm_send_bytes < bytes) {
        mpitest_counters_print(stderr, "counter difference", d);
        mpitest_fail(file, line,
                     "efarm's native sends moved %llu message(s), %llu bytes; want at least "
                     "%zu, %llu",
                     d->nm_send_msgs, d->nm_send_bytes, nmsgs, bytes);
    }
    return;
bad:
    mpitest_counters_print(stderr, "counter difference", d);
    mpitest_fail(file, line,
                 "%zu message(s) (first %zu bytes, mask %#x; %llu bytes in all) do not match "
                 "the subprotocols the engine counted (%llu in all)",
                 nmsgs, nmsgs ? lens[0] : 0, nmsgs ? mpitest_expect_proto(lens[0]) : 0, bytes,
                 total);
}

void mpitest_check_sent(const char *file, int line, const struct mpitest_counters *d,
                        unsigned long long nmsgs, size_t len)
{
    unsigned mask = mpitest_expect_proto(len);
    unsigned long long ok = mpitest_proto_count(d, mask);
    unsigned long long other = mpitest_proto_count(d, ALL_PROTOS & ~mask);

    if (!g_pvar_checks)
        return;
    if (ok != nmsgs || other != 0) {
        mpitest_counters_print(stderr, "counter difference", d);
        mpitest_fail(file, line,
                     "%llu message(s) of %zu bytes: %llu went by an allowed subprotocol (mask "
                     "%#x), %llu by another; want %llu and 0",
                     nmsgs, len, ok, mask, other, nmsgs);
    }
    if (d->nm_send_msgs < nmsgs || d->nm_send_bytes < nmsgs * (unsigned long long)len) {
        mpitest_counters_print(stderr, "counter difference", d);
        mpitest_fail(file, line,
                     "efarm's native sends moved %llu message(s), %llu bytes; want at least "
                     "%llu, %llu",
                     d->nm_send_msgs, d->nm_send_bytes, nmsgs, nmsgs * (unsigned long long)len);
    }
}

void mpitest_check_received(const char *file, int line, const struct mpitest_counters *d,
                            unsigned long long nmsgs, unsigned long long bytes)
{
    if (!g_pvar_checks)
        return;
    if (d->nm_recv_msgs < nmsgs || d->nm_recv_bytes < bytes) {
        mpitest_counters_print(stderr, "counter difference", d);
        mpitest_fail(file, line,
                     "efarm's native receives got %llu message(s), %llu bytes; want at least "
                     "%llu, %llu",
                     d->nm_recv_msgs, d->nm_recv_bytes, nmsgs, bytes);
    }
}

/* ---- Start and end -------------------------------------------------------------------- */

static void init_common(int *argc, char ***argv, const char *name, int required)
{
    struct mpitest_counters c;
    int provided;
    const char *skip = getenv("MPITEST_NO_PVAR_CHECK");

    g_name = name;
    if (required < 0) {
        CHECK_MPI(MPI_Init(argc, argv));
    } else {
        CHECK_MPI(MPI_Init_thread(argc, argv, required, &provided));
        CHECK_GE(provided, required);
    }
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &g_mpitest_rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &g_mpitest_size));
    /* Errors come back to CHECK_MPI, which names the call, the place and the step. */
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    g_pvar_checks = !(skip && strcmp(skip, "1") == 0);
    g_verbose = mpitest_env_size("MPITEST_VERBOSE", 0) != 0;
    if (!g_pvar_checks && g_mpitest_rank == 0)
        fprintf(stderr, "%s: MPITEST_NO_PVAR_CHECK=1: efarm's counters are NOT checked\n", name);
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    g_mpi_t_up = 1;
    CHECK_MPI(MPI_T_pvar_session_create(&g_session));
    mpitest_counters_read(&c); /* every counter resolves now, or the job stops here */
    limits_init(&g_mpitest_limits);
}

void mpitest_init(int *argc, char ***argv, const char *name)
{
    init_common(argc, argv, name, -1);
}

void mpitest_init_thread(int *argc, char ***argv, const char *name, int required)
{
    init_common(argc, argv, name, required);
}

void mpitest_finalize(void)
{
    mpitest_context("finalize");
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < g_npvars; i++)
        CHECK_MPI(MPI_T_pvar_handle_free(g_session, &g_pvars[i].handle));
    g_npvars = 0;
    if (g_mpi_t_up) {
        CHECK_MPI(MPI_T_pvar_session_free(&g_session));
        CHECK_MPI(MPI_T_finalize());
        g_mpi_t_up = 0;
    }
    CHECK_MPI(MPI_Finalize());
    if (g_mpitest_rank == 0)
        printf("%s: OK (%d ranks)\n", g_name, g_mpitest_size);
}

void mpitest_rma_passive_check(MPI_Win win, volatile long long *mem, MPI_Aint flag_disp,
                               MPI_Aint spin_disp, unsigned wait_s)
{
    enum { SPINNING = 0x5b1, FLAG = 0x5eed };
    long long flag = FLAG, got = 0;

    mem[0] = 0;
    mem[1] = 0;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (g_mpitest_rank == 1) {
        time_t deadline = time(NULL) + (time_t)wait_s;

        mem[1] = SPINNING;
        while (mem[0] != FLAG && time(NULL) < deadline)
            ; /* computing: no MPI call */
        CHECK_EQ(mem[0], FLAG);
    } else if (g_mpitest_rank == 0) {
        time_t deadline = time(NULL) + 20;

        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 1, MPI_MODE_NOCHECK, win));
        do {
            CHECK_MPI(MPI_Get(&got, 1, MPI_LONG_LONG, 1, spin_disp, 1, MPI_LONG_LONG, win));
            CHECK_MPI(MPI_Win_flush(1, win));
        } while (got != SPINNING && time(NULL) < deadline);
        CHECK_EQ(got, SPINNING);
        CHECK_MPI(MPI_Put(&flag, 1, MPI_LONG_LONG, 1, flag_disp, 1, MPI_LONG_LONG, win));
        CHECK_MPI(MPI_Win_flush(1, win));
        CHECK_MPI(MPI_Win_unlock(1, win));
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}
