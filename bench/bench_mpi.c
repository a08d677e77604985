/*
 * bench-mpi: OSU-style MPI point-to-point benchmarks between two ranks, written
 * against the MPI standard only (MPI-3.1), so any MPI's mpicc builds it. The
 * patterns are the ones the OSU micro-benchmarks made the common yardstick:
 *
 *   latency  ping-pong with MPI_Send/MPI_Recv; one-way latency is half the
 *            round trip; average, median, 99th percentile and minimum over
 *            the timed iterations; sizes 0, 1, 2, 4 .. max bytes;
 *   bw       rank 0 posts a window of MPI_Isend, waits for all of them, and
 *            waits for a 0-byte acknowledgement that rank 1 sends once its
 *            window of MPI_Irecv completed; MB/s = 10^6 bytes per second;
 *   bibw     both ranks post a window of MPI_Irecv and a window of MPI_Isend
 *            and wait for all of them; bytes of both directions count;
 *   msgrate  the bw pattern with 8-byte messages, in messages per second.
 *
 * Every size runs warm-up iterations first (a tenth of the timed ones, at least
 * one); sizes above 8 KiB run fewer iterations, about the bytes 8 KiB moves,
 * but never fewer than a floor. As in OSU, all sends of a window read one buffer
 * and all receives of a window write one buffer. Before each size's timing, one
 * message each way carries a pattern that the receiver checks: a corrupted byte
 * aborts the run with its offset.
 *
 *   mpiexec -n 2 bench-mpi [-t latency,bw,bibw,msgrate] [-m 4M] [-i 1] [-w 64]
 *                          [-p MPI_T_PVAR]...
 *
 * Output (rank 0): a table per test for people, and for scripts one line per
 * figure, "RESULT <test> <bytes> <value> <unit>" (tests latency, latency_p50,
 * bw, bibw, msgrate; units us, MB/s, msg/s), and "PVAR <name> <total> <rank 0>
 * <rank 1>" (or "PVAR <name> missing") for each -p counter, its change over
 * the benchmark summed over both ranks, then "SENT <messages> <bytes>": what both ranks
 * sent (acknowledgements and check messages included), so a script can tell from a
 * netmod's counters that every message crossed it (bench_mpit.h, shared with
 * bench_mt.c). Exit status 2: bad arguments.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BENCH_PROG "bench-mpi"
#include "bench_args.h"
#include "bench_mpit.h"

#define TAG_DATA     1
#define TAG_ACK      2
#define TAG_CHECK    3
#define LARGE        8192        /* sizes above it move about its bytes per test */
#define MAX_SIZE_LIM (1ul << 30) /* counts stay in an int */
#define DEFAULT_MAX  (4ul << 20)
#define RATE_SIZE    8
#define MAX_PVARS    16

enum test { TEST_LATENCY, TEST_BW, TEST_BIBW, TEST_MSGRATE, TEST_COUNT };

static const char *const g_test_names[TEST_COUNT] = {"latency", "bw", "bibw", "msgrate"};

/* Timed iterations at sizes up to LARGE, and the floor for the largest sizes. */
static const int g_base_iters[TEST_COUNT] = {10000, 200, 200, 2000};
static const int g_min_iters[TEST_COUNT] = {20, 5, 5, 20};

struct opts {
    unsigned tests; /* bit per enum test */
    size_t max_size;
    double scale;
    int window;
    const char *pvars[MAX_PVARS];
    int npvars;
};

struct bench {
    int rank, peer;
    struct opts o;
    unsigned char *sbuf, *rbuf;
    MPI_Request *reqs; /* 2 * window */
    MPI_Status *stats; /* 2 * window: MPICH's MPI_STATUSES_IGNORE trips gcc 12's
                        * -Wstringop-overflow in MPI_Waitall */
    double *lat;       /* rank 0's one-way times of one latency size */
    unsigned long long sent_msgs, sent_bytes; /* every message this rank sent, acks included */
};

/* RESULT lines of the current table, printed after it. */
struct result {
    const char *test, *unit;
    size_t size;
    double value;
};

static struct result g_results[128];
static int g_nresults;

static void result_add(const char *test, size_t size, double value, const char *unit)
{
    if (g_nresults < (int)(sizeof(g_results) / sizeof(g_results[0])))
        g_results[g_nresults++] = (struct result){test, unit, size, value};
}

static void results_flush(void)
{
    printf("\n");
    for (int i = 0; i < g_nresults; i++)
        printf("RESULT %s %zu %.3f %s\n", g_results[i].test, g_results[i].size, g_results[i].value,
               g_results[i].unit);
    g_nresults = 0;
    fflush(stdout);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpiexec -n 2 bench-mpi [-t TESTS] [-m SIZE] [-i FACTOR] [-w N] [-p PVAR]...\n"
            "  -t TESTS   comma-separated: latency, bw, bibw, msgrate, all (default all)\n"
            "  -m SIZE    largest message in bytes, suffix K or M allowed (default 4M)\n"
            "  -i FACTOR  multiply the iteration counts (default 1; floors still apply)\n"
            "  -w N       messages per window for bw, bibw and msgrate (default 64)\n"
            "  -p PVAR    print how much the MPI_T counter PVAR grew (repeatable)\n");
}

/* ---- Arguments ------------------------------------------------------------------ */

static int parse_tests(const char *arg, unsigned *tests_p)
{
    char *copy = strdup(arg), *save = NULL, *word;
    unsigned tests = 0;
    int ret = 0;

    if (copy == NULL)
        return -ENOMEM;
    for (word = strtok_r(copy, ",", &save); word; word = strtok_r(NULL, ",", &save)) {
        int t;

        if (strcmp(word, "all") == 0) {
            tests |= (1u << TEST_COUNT) - 1;
            continue;
        }
        for (t = 0; t < TEST_COUNT && strcmp(word, g_test_names[t]) != 0; t++)
            ;
        if (t == TEST_COUNT) {
            complain("-t: unknown test '%s'\n", word);
            ret = -EINVAL;
            break;
        }
        tests |= 1u << t;
    }
    free(copy);
    if (ret == 0 && tests == 0) {
        complain("-t: no test named\n");
        ret = -EINVAL;
    }
    if (ret == 0)
        *tests_p = tests;
    return ret;
}

static int parse_size(const char *arg, size_t *size_p)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(arg, &end, 10);
    if (end == arg || errno || arg[0] == '-')
        goto err_bad;
    if (*end == 'K' || *end == 'k')
        v <<= 10, end++;
    else if (*end == 'M' || *end == 'm')
        v <<= 20, end++;
    if (*end != '\0' || v > MAX_SIZE_LIM)
        goto err_bad;
    *size_p = (size_t)v;
    return 0;

err_bad:
    complain("-m: '%s' is not a size from 0 to 1G (digits, then K or M)\n", arg);
    return -EINVAL;
}

static int parse_number(const char *opt, const char *arg, double lo, double hi, double *v_p)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(arg, &end);
    if (end == arg || *end != '\0' || errno || !(v >= lo && v <= hi)) {
        complain("%s: '%s' is not a number from %g to %g\n", opt, arg, lo, hi);
        return -EINVAL;
    }
    *v_p = v;
    return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
    double v;
    int c;

    *o = (struct opts){
        .tests = (1u << TEST_COUNT) - 1, .max_size = DEFAULT_MAX, .scale = 1, .window = 64};
    opterr = 0;
    while ((c = getopt(argc, argv, "t:m:i:w:p:h")) != -1) {
        switch (c) {
        case 't':
            if (parse_tests(optarg, &o->tests))
                return -EINVAL;
            break;
        case 'm':
            if (parse_size(optarg, &o->max_size))
                return -EINVAL;
            break;
        case 'i':
            if (parse_number("-i", optarg, 1e-6, 1e6, &o->scale))
                return -EINVAL;
            break;
        case 'w':
            if (parse_number("-w", optarg, 1, 1 << 16, &v))
                return -EINVAL;
            if (v != (int)v) {
                complain("-w: '%s' is not a whole number of messages\n", optarg);
                return -EINVAL;
            }
            o->window = (int)v;
            break;
        case 'p':
            if (bench_arg_pvar(o->pvars, &o->npvars, MAX_PVARS, optarg))
                return -EINVAL;
            break;
        case 'h':
            return 1;
        default:
            return bench_arg_unknown(optopt);
        }
    }
    if (bench_args_end(argc, argv, optind))
        return -EINVAL;
    return 0;
}

/* ---- Helpers ---------------------------------------------------------------------- */

/* Timed iterations of test t at size bytes: the base count up to LARGE, then the
 * bytes LARGE would move, never below the floor. */
static int iterations(const struct bench *b, enum test t, size_t size)
{
    double n = g_base_iters[t] * b->o.scale;

    if (size > LARGE)
        n = n * LARGE / (double)size;
    return n < g_min_iters[t] ? g_min_iters[t] : (int)n;
}

static int warmups(int iters)
{
    return iters / 10 > 0 ? iters / 10 : 1;
}

/* The next size after s: 0, 1, 2, 4, ... */
static size_t next_size(size_t s)
{
    return s == 0 ? 1 : s * 2;
}

static unsigned char pattern(size_t i, size_t size, int from)
{
    return (unsigned char)(i * 131 + size * 7 + (size_t)from * 29 + 1);
}

/* Counts n sends of size bytes each (the SENT line). */
static void note_sends(struct bench *b, unsigned long long n, size_t size)
{
    b->sent_msgs += n;
    b->sent_bytes += n * size;
}

/* One message each way with a pattern the receiver checks; aborts on a wrong byte. */
static void check_exchange(struct bench *b, size_t size)
{
    for (int from = 0; from < 2; from++) {
        if (b->rank == from) {
            for (size_t i = 0; i < size; i++)
                b->sbuf[i] = pattern(i, size, from);
            MPI_Send(b->sbuf, (int)size, MPI_BYTE, b->peer, TAG_CHECK, MPI_COMM_WORLD);
            note_sends(b, 1, size);
            continue;
        }
        MPI_Status st;
        int count;

        memset(b->rbuf, 0, size);
        MPI_Recv(b->rbuf, (int)size, MPI_BYTE, b->peer, TAG_CHECK, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        if ((size_t)count != size) {
            fprintf(stderr, "bench-mpi: rank %d: %zu-byte check message arrived with %d bytes\n",
                    b->rank, size, count);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        for (size_t i = 0; i < size; i++) {
            if (b->rbuf[i] != pattern(i, size, from)) {
                fprintf(stderr,
                        "bench-mpi: rank %d: %zu-byte message corrupted at byte %zu: "
                        "got 0x%02x, expected 0x%02x\n",
                        b->rank, size, i, b->rbuf[i], pattern(i, size, from));
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
        }
    }
}

/* ---- latency ---------------------------------------------------------------------- */

/* n round trips; rank 0 stores one-way microseconds in lat (NULL: warm-up). */
static void pingpong(struct bench *b, size_t size, int n, double *lat)
{
    for (int i = 0; i < n; i++) {
        if (b->rank == 0) {
            double t0 = MPI_Wtime();

            MPI_Send(b->sbuf, (int)size, MPI_BYTE, b->peer, TAG_DATA, MPI_COMM_WORLD);
            MPI_Recv(b->rbuf, (int)size, MPI_BYTE, b->peer, TAG_DATA, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            if (lat)
                lat[i] = (MPI_Wtime() - t0) * 1e6 / 2;
        } else {
            MPI_Recv(b->rbuf, (int)size, MPI_BYTE, b->peer, TAG_DATA, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            MPI_Send(b->sbuf, (int)size, MPI_BYTE, b->peer, TAG_DATA, MPI_COMM_WORLD);
        }
    }
    note_sends(b, (unsigned long long)n, size);
}

static void run_latency(struct bench *b)
{
    if (b->rank == 0) {
        printf("\n# latency: one-way = half the round trip of an MPI_Send/MPI_Recv ping-pong\n");
        printf("%10s %8s %10s %10s %10s %10s\n", "bytes", "iters", "avg us", "p50 us", "p99 us",
               "min us");
    }
    for (size_t size = 0; size <= b->o.max_size; size = next_size(size)) {
        int n = iterations(b, TEST_LATENCY, size);
        double sum = 0;

        check_exchange(b, size);
        MPI_Barrier(MPI_COMM_WORLD);
        pingpong(b, size, warmups(n), NULL);
        pingpong(b, size, n, b->lat);
        if (b->rank != 0)
            continue;
        for (int i = 0; i < n; i++)
            sum += b->lat[i];
        qsort(b->lat, (size_t)n, sizeof(*b->lat), cmp_double);
        double avg = sum / n, p50 = b->lat[n / 2], p99 = b->lat[(int)(n * 0.99)];

        printf("%10zu %8d %10.2f %10.2f %10.2f %10.2f\n", size, n, avg, p50, p99, b->lat[0]);
        result_add("latency", size, avg, "us");
        result_add("latency_p50", size, p50, "us");
        fflush(stdout);
    }
    if (b->rank == 0)
        results_flush();
}

/* ---- bw, bibw, msgrate ------------------------------------------------------------ */

/* n windows of the bw pattern (rank 0 sends, rank 1 acknowledges each window). */
static void stream(struct bench *b, size_t size, int n)
{
    int w = b->o.window;

    for (int i = 0; i < n; i++) {
        for (int j = 0; j < w; j++) {
            if (b->rank == 0)
                MPI_Isend(b->sbuf, (int)size, MPI_BYTE, b->peer, TAG_DATA, MPI_COMM_WORLD,
                          &b->reqs[j]);
            else
                MPI_Irecv(b->rbuf, (int)size, MPI_BYTE, b->peer, TAG_DATA, MPI_COMM_WORLD,
                          &b->reqs[j]);
        }
        MPI_Waitall(w, b->reqs, b->stats);
        if (b->rank == 0)
            MPI_Recv(NULL, 0, MPI_BYTE, b->peer, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else
            MPI_Send(NULL, 0, MPI_BYTE, b->peer, TAG_ACK, MPI_COMM_WORLD);
    }
    if (b->rank == 0)
        note_sends(b, (unsigned long long)n * w, size);
    else
        note_sends(b, (unsigned long long)n, 0);
}

/* n windows each way at once; receives are posted before sends. */
static void bistream(struct bench *b, size_t size, int n)
{
    int w = b->o.window;

    for (int i = 0; i < n; i++) {
        for (int j = 0; j < w; j++)
            MPI_Irecv(b->rbuf, (int)size, MPI_BYTE, b->peer, TAG_DATA, MPI_COMM_WORLD, &b->reqs[j]);
        for (int j = 0; j < w; j++)
            MPI_Isend(b->sbuf, (int)size, MPI_BYTE, b->peer, TAG_DATA, MPI_COMM_WORLD,
                      &b->reqs[w + j]);
        MPI_Waitall(2 * w, b->reqs, b->stats);
    }
    note_sends(b, (unsigned long long)n * w, size);
}

/* Seconds rank 0 measured for n timed windows after the warm-up. */
static double time_windows(struct bench *b, enum test t, size_t size, int n)
{
    void (*run)(struct bench *, size_t, int) = t == TEST_BIBW ? bistream : stream;
    double t0;

    check_exchange(b, size);
    MPI_Barrier(MPI_COMM_WORLD);
    run(b, size, warmups(n));
    t0 = MPI_Wtime();
    run(b, size, n);
    return MPI_Wtime() - t0;
}

static void run_bandwidth(struct bench *b, enum test t)
{
    int dirs = t == TEST_BIBW ? 2 : 1;

    if (b->rank == 0) {
        printf("\n# %s: %s, windows of %d messages, MB/s = 10^6 bytes/s\n", g_test_names[t],
               dirs == 2 ? "both ranks send and receive at once" : "rank 0 to rank 1, acked",
               b->o.window);
        printf("%10s %8s %12s\n", "bytes", "windows", "MB/s");
    }
    for (size_t size = 1; size <= b->o.max_size; size *= 2) {
        int n = iterations(b, t, size);
        double secs = time_windows(b, t, size, n);
        double mbs = (double)size * b->o.window * n * dirs / secs / 1e6;

        if (b->rank != 0)
            continue;
        printf("%10zu %8d %12.2f\n", size, n, mbs);
        result_add(g_test_names[t], size, mbs, "MB/s");
        fflush(stdout);
    }
    if (b->rank == 0)
        results_flush();
}

static void run_msgrate(struct bench *b)
{
    int n = iterations(b, TEST_MSGRATE, RATE_SIZE);
    double secs = time_windows(b, TEST_MSGRATE, RATE_SIZE, n);
    double rate = (double)n * b->o.window / secs;

    if (b->rank != 0)
        return;
    printf("\n# msgrate: %d-byte messages, rank 0 to rank 1, windows of %d, acked\n", RATE_SIZE,
           b->o.window);
    printf("%10s %8s %12s\n", "bytes", "windows", "msg/s");
    printf("%10d %8d %12.0f\n", RATE_SIZE, n, rate);
    result_add("msgrate", RATE_SIZE, rate, "msg/s");
    results_flush();
}

/* ---- main ------------------------------------------------------------------------- */

static void print_header(const struct bench *b)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING], host[MPI_MAX_PROCESSOR_NAME];
    int len;

    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n")] = '\0';
    MPI_Get_processor_name(host, &len);
    printf("# bench-mpi: 2 ranks on %s; %s\n", host, lib);
    printf("# max %zu bytes, window %d, iterations x%g (fewer above %d bytes), warm-up 1/10\n",
           b->o.max_size, b->o.window, b->o.scale, LARGE);
    fflush(stdout);
}

static int run(struct bench *b)
{
    struct bench_pvar pvars[MAX_PVARS];
    MPI_T_pvar_session session;
    int provided, n = b->o.npvars;

    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    for (int i = 0; i < n; i++) {
        pvars[i].name = b->o.pvars[i];
        bench_pvar_open(session, "bench-mpi", b->rank, &pvars[i]);
    }
    if (b->rank == 0)
        print_header(b);
    if (b->o.tests & 1u << TEST_LATENCY)
        run_latency(b);
    if (b->o.tests & 1u << TEST_BW)
        run_bandwidth(b, TEST_BW);
    if (b->o.tests & 1u << TEST_BIBW)
        run_bandwidth(b, TEST_BIBW);
    if (b->o.tests & 1u << TEST_MSGRATE)
        run_msgrate(b);
    bench_counters_report(session, b->rank, pvars, n, b->sent_msgs, b->sent_bytes);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    return 0;
}

int main(int argc, char **argv)
{
    struct bench b = {0};
    int size, ret;
    void *s = NULL, *r = NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
    g_rank = b.rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ret = parse_args(argc, argv, &b.o);
    if (ret == 0 && size != 2) {
        complain("needs exactly 2 ranks, got %d\n", size);
        ret = -EINVAL;
    }
    if (ret) {
        if (b.rank == 0)
            usage(ret > 0 ? stdout : stderr);
        MPI_Finalize();
        return ret > 0 ? 0 : 2;
    }
    b.peer = 1 - b.rank;
    b.reqs = malloc(2 * (size_t)b.o.window * sizeof(*b.reqs));
    b.stats = malloc(2 * (size_t)b.o.window * sizeof(*b.stats));
    b.lat = malloc((size_t)iterations(&b, TEST_LATENCY, 0) * sizeof(*b.lat));
    if (posix_memalign(&s, 4096, b.o.max_size + 1) || posix_memalign(&r, 4096, b.o.max_size + 1) ||
        b.reqs == NULL || b.stats == NULL || b.lat == NULL) {
        fprintf(stderr, "bench-mpi: rank %d: out of memory for %zu-byte buffers\n", b.rank,
                b.o.max_size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    b.sbuf = s;
    b.rbuf = r;
    memset(b.sbuf, 0xa5, b.o.max_size + 1);
    memset(b.rbuf, 0, b.o.max_size + 1);
    ret = run(&b);
    free(b.lat);
    free(b.stats);
    free(b.reqs);
    free(r);
    free(s);
    MPI_Finalize();
    return ret;
}
