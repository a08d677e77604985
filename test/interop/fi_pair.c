/*
 * fi-pair: defects of libfabric's EFA provider shown between two libfabric
 * processes, with no efarm at all (the interop suite found them against efarm:
 * test/interop/README.md, "Known libfabric defects the test tolerates" and
 * "Found, and kept out of the suite").
 *
 *   fi-pair CASE [--timeout S]
 *
 * A case is a few rounds. Each round forks an origin and a target; each sets its
 * own environment with setenv() before its first libfabric call (efasim reads its
 * knobs per process at start), opens an FI_EP_RDM endpoint of provider efa with
 * FI_MSG | FI_RMA (and FI_ATOMIC where the case needs it), and learns the other's
 * address (fi_getname, fi_av_insert), and the target's region and key, over
 * pipes. Both print what they saw; every wait is bounded by the timeout (default
 * 10 s) and an operation that never completes is reported as such. The last line
 * is "fi-pair CASE: SHOWN <what>" or "fi-pair CASE: NOT SHOWN <what happened
 * instead>".
 *
 * Cases:
 *   unreadable-write  origin on a device with RDMA write (EFASIM_RDMA_WRITE=1),
 *                     target without (0), both FI_EFA_USE_DEVICE_RDMA=1: a 1 MiB
 *                     fi_writemsg from a buffer registered FI_WRITE only, with and
 *                     without FI_DELIVERY_COMPLETE, to a target with and without an
 *                     EQ. libfabric from 2.5 gives such a buffer no remote read yet
 *                     sends the write by LONGREAD_RTW: shown when the data does not
 *                     land and the target's RDMA read of the origin's buffer fails
 *                     with the device's remote error (EFA status 7).
 *   bad-key-write     emulated RMA (FI_EFA_USE_DEVICE_RDMA=0): a 64 B write with a
 *                     wrong key (the real one XOR 0x5a5a) to a target without an
 *                     EQ; delivery-complete and plain ones to a target with one;
 *                     fi_fetch_atomic SUM int64 with a wrong key after one with the
 *                     right key. Shown when one wrong key ends a target that binds no
 *                     EQ and the delivery-complete write either never completes at
 *                     its origin or ends a target that binds an EQ too.
 *   widened-key       device RDMA (FI_EFA_USE_DEVICE_RDMA=1): the target receives a
 *                     2 MiB message into an unregistered buffer and sends it back
 *                     from there (libfabric registers the buffer through its MR cache
 *                     for the RDMA reads: 1.17 as receiver, 2.x as sender), frees it
 *                     and takes the same memory again (malloc of the same size; mmap
 *                     at its address; or keeps it), registers a 1 MiB region 64 KiB
 *                     into it, and the origin reads 64 B from 32 B before the region
 *                     with the region's key. Shown when that read succeeds.
 *   cq-data-context   two 16 B messages first (the target's fi_recv with a context
 *                     of its own, posted before the first came and after the second
 *                     did), then a 64 B fi_writemsg with FI_REMOTE_CQ_DATA:
 *                     emulated (EAGER_RTW with the CQ-data header) and, both on a
 *                     device with RDMA write (EFASIM_RDMA_WRITE=1), as an RDMA
 *                     write with immediate. fi_cq(3): a completion no posted
 *                     operation caused has a NULL op_context. Shown when the
 *                     target's completion of the write (FI_REMOTE_WRITE) has
 *                     another: libfabric 2.x fills it from the receive entry it
 *                     reused, which the fi_recv's context was.
 *
 * Exit status: 0 shown, 1 not shown, 2 on bad usage or a setup error.
 */
#include <errno.h>
#include <execinfo.h>
#include <getopt.h>
#include <malloc.h>
#include <poll.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FP_MIB         (1024 * 1024)
#define FP_MAX_OPS     6 /* the origin's slots 0-3, the target's from FP_TARGET_SLOT */
#define FP_TARGET_SLOT 4
#define FP_ADDR_MAX    64
#define FP_NOTE        160
#define FP_KEY_XOR     0x5a5aull /* a wrong key: the real one with these bits flipped */
#define FP_UW_LEN      FP_MIB    /* unreadable-write: the write and the region */
#define FP_BK_LEN      4096      /* bad-key-write: the target's region, int64 elements */
#define FP_BK_WRITE    64
#define FP_BK_BASE     1000                 /* element i of that region holds FP_BK_BASE + i */
#define FP_BK_UNSET    0x5a5a5a5a5a5a5a5all /* the fetch's result buffer before */
#define FP_WK_MSG      (2 * FP_MIB)         /* widened-key: the long message */
#define FP_WK_OFFSET   (64 * 1024)          /* where the region starts in the reused memory */
#define FP_WK_REGION   FP_MIB
#define FP_WK_READ     64
#define FP_WK_BEFORE   0xbb /* bytes before the region */
#define FP_WK_INSIDE   0xaa /* bytes of the region */

enum fp_state { FP_NOT_RUN, FP_PENDING, FP_OK, FP_ERROR, FP_NEVER, FP_POST_FAILED };
enum fp_region { FP_REGION_UNCHECKED, FP_REGION_UNCHANGED, FP_REGION_WRITTEN, FP_REGION_OTHER };

/* What one side saw of one operation, kept in memory both processes share with the parent. */
struct fp_op_fact {
    int state;
    int err;
    int prov_errno;
    char detail[48]; /* what a completed operation brought back */
};

/* One round's findings: written by the two sides as they go, read by the parent after. */
struct fp_facts {
    bool origin_ready, target_ready; /* setup done (endpoint open, peer known) */
    bool setup_failed;
    struct fp_op_fact op[FP_MAX_OPS];
    unsigned eq_errors; /* the target's; the first one's err and prov_errno */
    int eq_err, eq_prov_errno;
    int region;
    char note[FP_NOTE]; /* what the target found in its region, or of it */
    int origin_status, target_status;
    bool origin_exited, target_exited;
    int origin_signal, target_signal; /* a fatal signal the side got, whoever handled it */
    /* The target's completions of the peer's writes (FI_REMOTE_WRITE): how many, the
       first's op_context and data, and whether that context was one of its own ops. */
    unsigned remote_writes;
    uint64_t remote_data;
    void *remote_context;
    bool remote_context_ours;
};

struct fp_side {
    const char *role, *peer_role;
    struct fp_facts *facts;
    double timeout;
    int in, out; /* control pipes from and to the peer */
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_eq *eq;
    struct fid_ep *ep;
    fi_addr_t peer;
    struct fp_op *last_recv; /* the context of the last fi_recv posted */
};

struct fp_op {
    struct fi_context2 ctx; /* first: a completion's op_context points here */
    int state;
    int err;
    int prov_errno;
};

enum fp_io_kind { FP_IO_SEND, FP_IO_RECV, FP_IO_WRITE, FP_IO_READ, FP_IO_FETCH_SUM };

/* One operation to post: fp_run's argument. */
struct fp_io {
    enum fp_io_kind kind;
    const char *what;
    void *buf;
    size_t len;
    void *desc;
    uint64_t raddr, key, flags;
    uint64_t data; /* FI_REMOTE_CQ_DATA's */
    int64_t *result;
};

enum fp_msg_kind { FP_MSG_ADDR = 1, FP_MSG_REGION, FP_MSG_GO, FP_MSG_DONE, FP_MSG_CHECKED };

struct fp_msg {
    uint32_t kind;
    uint32_t len;
    uint64_t a, b;
    uint8_t data[FP_ADDR_MAX];
};

struct fp_round {
    const char *name;  /* printed before the round */
    const char *label; /* names the round in the verdict */
    int variant;       /* the case's own */
    bool target_eq;
    unsigned slot;   /* the origin's operation the verdict reports */
    const char *env; /* both sides' environment on top of the case's, or NULL */
};

struct fp_case {
    const char *name;
    const char *origin_env, *target_env; /* "NAME=VALUE ..." */
    uint64_t caps;
    const struct fp_round *rounds;
    unsigned nrounds;
    int (*origin)(struct fp_side *s, const struct fp_round *r);
    int (*target)(struct fp_side *s, const struct fp_round *r);
    bool (*verdict)(const struct fp_facts *f, char *what, size_t len);
};

static double fp_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One line on stdout in one write, so that the two sides' lines do not mix. */
static void fp_say(const char *role, const char *fmt, ...)
{
    char line[1024];
    int n = role ? snprintf(line, sizeof(line), "  %s: ", role) : 0;
    va_list ap;

    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof(line) - 2)
        n = sizeof(line) - 2;
    line[n++] = '\n';
    if (write(STDOUT_FILENO, line, n) < 0)
        return;
}

static const char *fp_errstr(int err)
{
    return fi_strerror(err < 0 ? -err : err);
}

static void fp_setenv_list(const char *role, const char *list)
{
    char copy[256], *save = NULL;

    snprintf(copy, sizeof(copy), "%s", list);
    for (char *kv = strtok_r(copy, " ", &save); kv; kv = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(kv, '=');

        if (eq) {
            *eq = '\0';
            setenv(kv, eq + 1, 1);
        }
    }
    fp_say(role, "environment %s%s%s", list,
           getenv("FI_EFA_MR_CACHE_ENABLE") ? "; FI_EFA_MR_CACHE_ENABLE=" : "",
           getenv("FI_EFA_MR_CACHE_ENABLE") ? getenv("FI_EFA_MR_CACHE_ENABLE") : "");
}

/* ---- Fatal signals ------------------------------------------------------------------------ */

/*
 * A fatal signal is written down with a backtrace on stderr, then handed on to whatever handled it
 * before (Debian's libfabric loads libpsm2, whose handler prints a backtrace and exits 1 on
 * SIGABRT), so that the process ends as it would have.
 */
static int *g_fp_signal;
static struct sigaction g_fp_old[NSIG];
static const int g_fp_fatal[] = {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};

static void fp_on_fatal(int sig)
{
    void *frames[32];

    if (g_fp_signal && *g_fp_signal == 0)
        *g_fp_signal = sig;
    backtrace_symbols_fd(frames, backtrace(frames, 32), STDERR_FILENO);
    sigaction(sig, &g_fp_old[sig], NULL);
    raise(sig);
}

static void fp_watch_fatal(int *signal_p)
{
    struct sigaction act = {.sa_handler = fp_on_fatal};
    void *frame;

    backtrace(&frame, 1); /* loads what backtrace() needs, outside the handler */
    g_fp_signal = signal_p;
    sigemptyset(&act.sa_mask);
    for (size_t i = 0; i < sizeof(g_fp_fatal) / sizeof(g_fp_fatal[0]); i++)
        sigaction(g_fp_fatal[i], &act, &g_fp_old[g_fp_fatal[i]]);
}

/* ---- Endpoint ------------------------------------------------------------------------------ */

/* The EFA provider's RDM fabric: not 2.x's efa-direct, which carries no protocol. */
static struct fi_info *fp_pick(struct fi_info *list)
{
    for (struct fi_info *i = list; i; i = i->next)
        if (strcasecmp(i->fabric_attr->name, "efa-direct"))
            return i;
    return NULL;
}

static int fp_open(struct fp_side *s, uint64_t caps, bool with_eq)
{
    struct fi_info *hints = fi_allocinfo(), *pick;
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_DATA, .size = 1024};
    struct fi_eq_attr eq_attr = {.size = 64, .wait_obj = FI_WAIT_NONE};
    int ret;

    if (hints == NULL)
        return -FI_ENOMEM;
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = caps;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->fabric_attr->prov_name = strdup("efa");
    ret = fi_getinfo(FI_VERSION(1, 14), NULL, NULL, 0, hints, &s->info);
    fi_freeinfo(hints);
    if (ret) {
        fp_say(s->role, "fi_getinfo(efa, FI_EP_RDM, caps 0x%llx): %s", (unsigned long long)caps,
               fp_errstr(ret));
        return ret;
    }
    pick = fp_pick(s->info);
    if (pick == NULL) {
        fp_say(s->role, "fi_getinfo listed no efa RDM fabric");
        return -FI_ENODATA;
    }
    if ((ret = fi_fabric(pick->fabric_attr, &s->fabric, NULL)) ||
        (ret = fi_domain(s->fabric, pick, &s->domain, NULL)) ||
        (ret = fi_av_open(s->domain, &av_attr, &s->av, NULL)) ||
        (ret = fi_cq_open(s->domain, &cq_attr, &s->cq, NULL)) ||
        (ret = fi_endpoint(s->domain, pick, &s->ep, NULL)) ||
        (ret = fi_ep_bind(s->ep, &s->av->fid, 0)) ||
        (ret = fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV))) {
        fp_say(s->role, "opening the endpoint: %s", fp_errstr(ret));
        return ret;
    }
    if (with_eq && ((ret = fi_eq_open(s->fabric, &eq_attr, &s->eq, NULL)) ||
                    (ret = fi_ep_bind(s->ep, &s->eq->fid, 0)))) {
        fp_say(s->role, "binding an EQ: %s", fp_errstr(ret));
        return ret;
    }
    ret = fi_enable(s->ep);
    if (ret) {
        fp_say(s->role, "fi_enable: %s", fp_errstr(ret));
        return ret;
    }
    fp_say(s->role, "libfabric %u.%u, fabric %s, domain %s, %s", FI_MAJOR(fi_version()),
           FI_MINOR(fi_version()), pick->fabric_attr->name, pick->domain_attr->name,
           with_eq ? "EQ bound" : "no EQ bound");
    return 0;
}

static void fp_close(struct fp_side *s)
{
    struct fid *fids[] = {s->ep ? &s->ep->fid : NULL,         s->eq ? &s->eq->fid : NULL,
                          s->cq ? &s->cq->fid : NULL,         s->av ? &s->av->fid : NULL,
                          s->domain ? &s->domain->fid : NULL, s->fabric ? &s->fabric->fid : NULL};

    for (size_t i = 0; i < sizeof(fids) / sizeof(fids[0]); i++)
        if (fids[i])
            fi_close(fids[i]);
    if (s->info)
        fi_freeinfo(s->info);
}

/*
 * The EFA device's completion status (rdma-core's efa_io_defs.h), which the EFA
 * provider passes on as prov_errno; libfabric's own numbers start at 4096.
 */
static const char *fp_efa_status(int status)
{
    static const char *const names[] = {"ok",
                                        "flushed",
                                        "local QP internal error",
                                        "local unsupported operation",
                                        "local invalid AH",
                                        "local invalid key",
                                        "local bad length",
                                        "remote bad address or key",
                                        "remote abort",
                                        "remote bad QP number",
                                        "remote RNR",
                                        "remote bad length",
                                        "remote bad status",
                                        "remote unresponsive",
                                        "remote unknown peer",
                                        "remote unreachable"};

    if (status >= 0 && status < (int)(sizeof(names) / sizeof(names[0])))
        return names[status];
    return status >= 4096 ? "libfabric's own" : "?";
}

/* ---- Progress and operations --------------------------------------------------------------- */

static void fp_progress_eq(struct fp_side *s)
{
    struct fi_eq_err_entry err = {0};
    struct fi_eq_entry entry;
    uint32_t event;
    ssize_t n = fi_eq_read(s->eq, &event, &entry, sizeof(entry), 0);

    if (n > 0) {
        fp_say(s->role, "EQ event %u", event);
        return;
    }
    if (n != -FI_EAVAIL || fi_eq_readerr(s->eq, &err, 0) <= 0)
        return;
    /* Not fi_eq_strerror: libfabric's EQ knows none of the EFA provider's numbers. */
    fp_say(s->role, "EQ error: %s (err %d, prov_errno %d: %s)", fi_strerror(err.err), err.err,
           err.prov_errno, fp_efa_status(err.prov_errno));
    if (s->facts->eq_errors++ == 0) {
        s->facts->eq_err = err.err;
        s->facts->eq_prov_errno = err.prov_errno;
    }
}

static void fp_progress(struct fp_side *s)
{
    struct fi_cq_data_entry e[8];
    struct fi_cq_err_entry err = {0};
    ssize_t n = fi_cq_read(s->cq, e, 8);

    for (ssize_t i = 0; i < n; i++) {
        struct fp_op *op = e[i].op_context;

        if (e[i].flags & FI_REMOTE_WRITE) {
            /* No operation of ours caused it: its op_context should be NULL. */
            if (s->facts->remote_writes++ == 0) {
                s->facts->remote_data = e[i].data;
                s->facts->remote_context = op;
                s->facts->remote_context_ours = op == s->last_recv;
            }
            fp_say(s->role,
                   "completion of the peer's write: flags 0x%llx, data 0x%llx, len %zu, "
                   "op_context %p%s",
                   (unsigned long long)e[i].flags, (unsigned long long)e[i].data, e[i].len,
                   e[i].op_context, op && op == s->last_recv ? " (its earlier fi_recv's)" : "");
            continue;
        }
        if (op)
            op->state = FP_OK;
        else
            fp_say(s->role, "completion without a context (flags 0x%llx)",
                   (unsigned long long)e[i].flags);
    }
    if (n == -FI_EAVAIL && fi_cq_readerr(s->cq, &err, 0) == 1) {
        struct fp_op *op = err.op_context;

        if (op) {
            op->state = FP_ERROR;
            op->err = err.err;
            op->prov_errno = err.prov_errno;
        } else {
            fp_say(s->role, "completion error without a context: %s (prov_errno %d: %s)",
                   fi_strerror(err.err), err.prov_errno,
                   fi_cq_strerror(s->cq, err.prov_errno, err.err_data, NULL, 0));
        }
    }
    if (s->eq)
        fp_progress_eq(s);
}

/* Progress for about a millisecond: both cores may be busy with efasim's threads too. */
static void fp_progress_a_while(struct fp_side *s)
{
    fp_progress(s);
    usleep(200);
}

static ssize_t fp_post(struct fp_side *s, struct fp_op *op, const struct fp_io *io)
{
    struct iovec iov = {.iov_base = io->buf, .iov_len = io->len};
    struct fi_rma_iov rma = {.addr = io->raddr, .len = io->len, .key = io->key};
    void *desc = io->desc;
    struct fi_msg_rma msg = {.msg_iov = &iov,
                             .desc = &desc,
                             .iov_count = 1,
                             .addr = s->peer,
                             .rma_iov = &rma,
                             .rma_iov_count = 1,
                             .context = &op->ctx,
                             .data = io->data};

    switch (io->kind) {
    case FP_IO_SEND:
        return fi_send(s->ep, io->buf, io->len, io->desc, s->peer, &op->ctx);
    case FP_IO_RECV:
        s->last_recv = op;
        return fi_recv(s->ep, io->buf, io->len, io->desc, s->peer, &op->ctx);
    case FP_IO_WRITE:
        return fi_writemsg(s->ep, &msg, FI_COMPLETION | io->flags);
    case FP_IO_READ:
        return fi_read(s->ep, io->buf, io->len, io->desc, s->peer, io->raddr, io->key, &op->ctx);
    case FP_IO_FETCH_SUM:
        return fi_fetch_atomic(s->ep, io->buf, 1, io->desc, io->result, NULL, s->peer, io->raddr,
                               io->key, FI_INT64, FI_SUM, &op->ctx);
    }
    return -FI_EINVAL;
}

/* Post io (again while the provider says EAGAIN) without waiting for it. */
static int fp_start(struct fp_side *s, struct fp_op *op, const struct fp_io *io)
{
    double deadline = fp_now() + s->timeout;
    ssize_t ret;

    memset(op, 0, sizeof(*op));
    op->state = FP_PENDING;
    while ((ret = fp_post(s, op, io)) == -FI_EAGAIN && fp_now() < deadline)
        fp_progress_a_while(s);
    if (ret) {
        op->state = FP_POST_FAILED;
        op->err = (int)-ret;
    }
    return (int)ret;
}

/* Wait for op at most the timeout, say how it ended and keep that in the facts' slot. */
static int fp_finish(struct fp_side *s, struct fp_op *op, const struct fp_io *io, unsigned slot)
{
    struct fp_op_fact *f = &s->facts->op[slot];
    double deadline = fp_now() + s->timeout;

    while (op->state == FP_PENDING && fp_now() < deadline)
        fp_progress_a_while(s);
    if (op->state == FP_PENDING)
        op->state = FP_NEVER;
    f->state = op->state;
    f->err = op->err;
    f->prov_errno = op->prov_errno;
    switch (op->state) {
    case FP_OK:
        fp_say(s->role, "%s completed", io->what);
        break;
    case FP_ERROR:
        fp_say(s->role, "%s completed with an error: %s (prov_errno %d: %s)", io->what,
               fi_strerror(op->err), op->prov_errno,
               fi_cq_strerror(s->cq, op->prov_errno, NULL, NULL, 0));
        break;
    case FP_NEVER:
        fp_say(s->role, "%s: the operation never completed (waited %g s)", io->what, s->timeout);
        break;
    default:
        fp_say(s->role, "%s could not be posted: %s", io->what, fp_errstr(op->err));
        break;
    }
    return op->state;
}

static int fp_run(struct fp_side *s, struct fp_op *op, const struct fp_io *io, unsigned slot)
{
    fp_start(s, op, io);
    return fp_finish(s, op, io, slot);
}

/* ---- Control pipes ------------------------------------------------------------------------- */

static int fp_send(struct fp_side *s, uint32_t kind, uint64_t a, uint64_t b, const void *data,
                   uint32_t len)
{
    struct fp_msg m = {.kind = kind, .len = len, .a = a, .b = b};

    if (len > sizeof(m.data))
        return -EINVAL;
    if (len)
        memcpy(m.data, data, len);
    /* Smaller than PIPE_BUF: written whole or not at all. */
    return write(s->out, &m, sizeof(m)) == (ssize_t)sizeof(m) ? 0 : -EPIPE;
}

/* Wait for the peer's next message, which must be of the kind given, progressing meanwhile. */
static int fp_recv(struct fp_side *s, uint32_t kind, struct fp_msg *m, double timeout)
{
    double deadline = fp_now() + timeout;
    size_t got = 0;

    while (got < sizeof(*m)) {
        struct pollfd p = {.fd = s->in, .events = POLLIN};
        ssize_t n;

        if (fp_now() > deadline) {
            fp_say(s->role, "no word from the %s in %g s", s->peer_role, timeout);
            return -ETIMEDOUT;
        }
        fp_progress(s);
        if (poll(&p, 1, 1) <= 0)
            continue;
        n = read(s->in, (char *)m + got, sizeof(*m) - got);
        if (n <= 0) {
            fp_say(s->role, "the %s is gone (its pipe closed)", s->peer_role);
            return -EPIPE;
        }
        got += n;
    }
    if (m->kind != kind) {
        fp_say(s->role, "control message %u where %u was expected", m->kind, kind);
        return -EPROTO;
    }
    return 0;
}

static int fp_connect(struct fp_side *s)
{
    uint8_t mine[FP_ADDR_MAX];
    size_t len = sizeof(mine);
    struct fp_msg m;
    int ret = fi_getname(&s->ep->fid, mine, &len);

    if (ret) {
        fp_say(s->role, "fi_getname: %s", fp_errstr(ret));
        return ret;
    }
    if ((ret = fp_send(s, FP_MSG_ADDR, 0, 0, mine, (uint32_t)len)) ||
        (ret = fp_recv(s, FP_MSG_ADDR, &m, s->timeout)))
        return ret;
    if (fi_av_insert(s->av, m.data, 1, &s->peer, 0, NULL) != 1) {
        fp_say(s->role, "fi_av_insert of the peer's address failed");
        return -FI_EINVAL;
    }
    return 0;
}

/* ---- What both cases' targets do ----------------------------------------------------------- */

/* Register len bytes at buf for remote access and tell the origin where and with what key. */
static int fp_expose(struct fp_side *s, void *buf, size_t len, struct fid_mr **mr_p)
{
    struct fid_mr *mr;
    int ret = fi_mr_reg(s->domain, buf, len, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL);

    if (ret) {
        fp_say(s->role, "fi_mr_reg of its region: %s", fp_errstr(ret));
        s->facts->setup_failed = true;
        return ret;
    }
    fp_say(s->role, "region %p, %zu bytes, FI_REMOTE_READ | FI_REMOTE_WRITE, key 0x%llx", buf, len,
           (unsigned long long)fi_mr_key(mr));
    ret = fp_send(s, FP_MSG_REGION, (uint64_t)(uintptr_t)buf, fi_mr_key(mr), NULL, 0);
    if (ret) {
        fi_close(&mr->fid);
        return ret;
    }
    *mr_p = mr;
    return 0;
}

/*
 * Progress until the origin says it is done (each of its operations waits the
 * timeout at most), then a while longer: a plain write completes at its origin
 * when sent, before the target has seen it.
 */
static void fp_await_origin(struct fp_side *s)
{
    struct fp_msg m;
    double until;

    fp_recv(s, FP_MSG_DONE, &m, FP_TARGET_SLOT * s->timeout + 5);
    until = fp_now() + (s->timeout < 4 ? s->timeout / 2 : 2);
    while (fp_now() < until)
        fp_progress_a_while(s);
}

/* The origin is done: wait until the target has looked at its region (or is gone). */
static void fp_await_target(struct fp_side *s)
{
    struct fp_msg m;

    if (fp_send(s, FP_MSG_DONE, 0, 0, NULL, 0) == 0)
        fp_recv(s, FP_MSG_CHECKED, &m, s->timeout + 5);
}

static void fp_note(struct fp_side *s, int state, const char *fmt, ...)
{
    va_list ap;

    s->facts->region = state;
    va_start(ap, fmt);
    vsnprintf(s->facts->note, sizeof(s->facts->note), fmt, ap);
    va_end(ap);
    fp_say(s->role, "%s", s->facts->note);
}

/* ---- unreadable-write ---------------------------------------------------------------------- */

enum { FP_UW_DC, FP_UW_PLAIN };

static uint8_t fp_pattern(size_t i)
{
    return (uint8_t)(i % 251 + 1); /* never 0, the region's bytes before */
}

static int fp_uw_origin(struct fp_side *s, const struct fp_round *r)
{
    uint8_t *buf = aligned_alloc(4096, FP_UW_LEN);
    struct fp_io io = {.kind = FP_IO_WRITE, .buf = buf, .len = FP_UW_LEN};
    struct fid_mr *mr;
    struct fp_msg m;
    struct fp_op op;
    int ret;

    if (buf == NULL)
        return 2;
    for (size_t i = 0; i < FP_UW_LEN; i++)
        buf[i] = fp_pattern(i);
    ret = fi_mr_reg(s->domain, buf, FP_UW_LEN, FI_WRITE, 0, 0, 0, &mr, NULL);
    if (ret) {
        fp_say(s->role, "fi_mr_reg of its buffer with FI_WRITE: %s", fp_errstr(ret));
        s->facts->setup_failed = true;
        return 2;
    }
    fp_say(s->role, "its 1 MiB buffer %p registered with FI_WRITE only", (void *)buf);
    if (fp_recv(s, FP_MSG_REGION, &m, s->timeout))
        return 1;
    io.desc = fi_mr_desc(mr);
    io.raddr = m.a;
    io.key = m.b;
    io.flags = r->variant == FP_UW_DC ? FI_DELIVERY_COMPLETE : 0;
    io.what = r->variant == FP_UW_DC ? "fi_writemsg of 1 MiB, FI_DELIVERY_COMPLETE"
                                     : "fi_writemsg of 1 MiB";
    fp_run(s, &op, &io, 0);
    fp_await_target(s);
    if (op.state != FP_NEVER) { /* else libfabric may still read the buffer */
        fi_close(&mr->fid);
        free(buf);
    }
    return 0;
}

static int fp_uw_target(struct fp_side *s, const struct fp_round *r)
{
    uint8_t *region = aligned_alloc(4096, FP_UW_LEN);
    size_t match = 0, zero = 0;
    struct fid_mr *mr;

    (void)r;
    if (region == NULL)
        return 2;
    memset(region, 0, FP_UW_LEN);
    if (fp_expose(s, region, FP_UW_LEN, &mr))
        return 2;
    fp_await_origin(s);
    for (size_t i = 0; i < FP_UW_LEN; i++) {
        match += region[i] == fp_pattern(i);
        zero += region[i] == 0;
    }
    fp_note(s,
            match == FP_UW_LEN  ? FP_REGION_WRITTEN
            : zero == FP_UW_LEN ? FP_REGION_UNCHANGED
                                : FP_REGION_OTHER,
            "%zu of %zu bytes of its region hold the data written, %zu are still 0", match,
            (size_t)FP_UW_LEN, zero);
    fp_send(s, FP_MSG_CHECKED, 0, 0, NULL, 0);
    fi_close(&mr->fid);
    free(region);
    return 0;
}

/* ---- bad-key-write ------------------------------------------------------------------------- */

enum { FP_BK_WRITE_PLAIN, FP_BK_WRITE_DC, FP_BK_FETCH };

#define FP_BK_ELEMENTS (FP_BK_LEN / 8)

static int64_t fp_bk_expected(const struct fp_round *r, unsigned i)
{
    /* The fetch rounds' first atomic, with the right key, adds 1 to element 0. */
    return FP_BK_BASE + i + (r->variant == FP_BK_FETCH && i == 0);
}

static void fp_bk_fetch(struct fp_side *s, const struct fp_msg *m)
{
    static int64_t operand = 1, result[2];
    struct fp_io io = {.kind = FP_IO_FETCH_SUM, .buf = &operand, .len = sizeof(operand)};
    struct fp_op op;

    for (unsigned k = 0; k < 2; k++) {
        struct fp_op_fact *f = &s->facts->op[k];

        result[k] = FP_BK_UNSET;
        io.result = &result[k];
        io.raddr = m->a + 8 * k;
        io.key = k ? m->b ^ FP_KEY_XOR : m->b;
        io.what = k ? "fi_fetch_atomic SUM 1 on element 1 with the wrong key"
                    : "fi_fetch_atomic SUM 1 on element 0 with the right key";
        if (fp_run(s, &op, &io, k) != FP_OK)
            continue;
        if (result[k] == FP_BK_UNSET)
            snprintf(f->detail, sizeof(f->detail), "its result buffer never written");
        else
            snprintf(f->detail, sizeof(f->detail), "fetched %lld", (long long)result[k]);
        fp_say(s->role, "%s (the element held %d)", f->detail, FP_BK_BASE + k);
    }
}

static int fp_bk_origin(struct fp_side *s, const struct fp_round *r)
{
    static uint8_t data[FP_BK_WRITE];
    struct fp_io io = {.kind = FP_IO_WRITE, .buf = data, .len = FP_BK_WRITE};
    struct fp_msg m;
    struct fp_op op;

    memset(data, 0x5a, sizeof(data));
    if (fp_recv(s, FP_MSG_REGION, &m, s->timeout))
        return 1;
    fp_say(s->role, "the region's key 0x%llx; the wrong key 0x%llx", (unsigned long long)m.b,
           (unsigned long long)(m.b ^ FP_KEY_XOR));
    if (r->variant == FP_BK_FETCH) {
        fp_bk_fetch(s, &m);
    } else {
        io.raddr = m.a;
        io.key = m.b ^ FP_KEY_XOR;
        io.flags = r->variant == FP_BK_WRITE_DC ? FI_DELIVERY_COMPLETE : 0;
        io.what = io.flags ? "a 64 B write with the wrong key, FI_DELIVERY_COMPLETE"
                           : "a 64 B write with the wrong key";
        fp_run(s, &op, &io, 0);
    }
    fp_await_target(s);
    return 0;
}

static int fp_bk_target(struct fp_side *s, const struct fp_round *r)
{
    int64_t *region = aligned_alloc(4096, FP_BK_LEN);
    char changes[FP_NOTE] = "";
    unsigned changed = 0;
    struct fid_mr *mr;
    int n = 0;

    if (region == NULL)
        return 2;
    for (unsigned i = 0; i < FP_BK_ELEMENTS; i++)
        region[i] = FP_BK_BASE + i;
    if (fp_expose(s, region, FP_BK_LEN, &mr))
        return 2;
    fp_await_origin(s);
    for (unsigned i = 0; i < FP_BK_ELEMENTS; i++) {
        if (region[i] == fp_bk_expected(r, i))
            continue;
        if (changed++ < 3 && n < (int)sizeof(changes))
            n += snprintf(changes + n, sizeof(changes) - n, "%selement %u is %lld, not %lld",
                          n ? ", " : "", i, (long long)region[i], (long long)fp_bk_expected(r, i));
    }
    if (changed)
        fp_note(s, FP_REGION_OTHER, "%u element(s) of its region changed: %s", changed, changes);
    else
        fp_note(s, FP_REGION_UNCHANGED, "nothing in its region changed");
    fp_send(s, FP_MSG_CHECKED, 0, 0, NULL, 0);
    fi_close(&mr->fid);
    free(region);
    return 0;
}

/* ---- widened-key --------------------------------------------------------------------------- */

enum { FP_WK_HEAP, FP_WK_MMAP, FP_WK_LIVE };

static void *fp_wk_alloc(int variant, void *hint)
{
    void *p;

    if (variant != FP_WK_MMAP)
        return malloc(FP_WK_MSG);
#ifdef MAP_FIXED_NOREPLACE
    p = mmap(hint, FP_WK_MSG, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | (hint ? MAP_FIXED_NOREPLACE : 0), -1, 0);
#else
    p = mmap(hint, FP_WK_MSG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
#endif
    return p == MAP_FAILED ? NULL : p;
}

static void fp_wk_free(int variant, void *p)
{
    if (variant == FP_WK_MMAP)
        munmap(p, FP_WK_MSG);
    else
        free(p);
}

/*
 * The memory the region lies in: the receive buffer's again, freed and taken back
 * (malloc of the same size from the heap, or mmap at its address), or still
 * allocated (live).
 */
static uint8_t *fp_wk_reuse(struct fp_side *s, int variant, uint8_t *old)
{
    uintptr_t from = (uintptr_t)old, start;
    uint8_t *mem = old;
    bool inside;

    if (variant != FP_WK_LIVE) {
        fp_wk_free(variant, old);
        mem = fp_wk_alloc(variant, old);
    }
    if (mem == NULL)
        return NULL;
    start = (uintptr_t)mem + FP_WK_OFFSET;
    inside = start - 32 >= from && start + FP_WK_REGION <= from + FP_WK_MSG;
    fp_say(s->role, "%s %p: the region %p..%p",
           variant == FP_WK_LIVE ? "kept it" : "freed it; took back", (void *)mem, (void *)start,
           (void *)(start + FP_WK_REGION));
    fp_note(s, inside ? FP_REGION_UNCHANGED : FP_REGION_OTHER,
            "the region lies %sinside the receive buffer's memory", inside ? "" : "NOT ");
    return mem;
}

static int fp_wk_target(struct fp_side *s, const struct fp_round *r)
{
    struct fp_io io = {.kind = FP_IO_RECV, .what = "fi_recv of 2 MiB (no desc)", .len = FP_WK_MSG};
    uint8_t *old, *mem;
    struct fid_mr *mr;
    struct fp_op op;

    if (r->variant == FP_WK_HEAP) {
        /*
         * From the heap, whose memory free() keeps mapped: glibc raises its mmap
         * threshold so itself once a large block is freed; here before the first.
         */
        mallopt(M_MMAP_THRESHOLD, 16 * FP_MIB);
        mallopt(M_TRIM_THRESHOLD, 512 * FP_MIB);
    }
    old = fp_wk_alloc(r->variant, NULL);
    if (old == NULL)
        return 2;
    fp_say(s->role, "receive buffer %p..%p (%s)", (void *)old, (void *)(old + FP_WK_MSG),
           r->variant == FP_WK_MMAP ? "mmap" : "malloc");
    io.buf = old;
    if (fp_start(s, &op, &io) || fp_send(s, FP_MSG_GO, 0, 0, NULL, 0))
        return 2;
    if (fp_finish(s, &op, &io, FP_TARGET_SLOT) != FP_OK)
        return 1;
    /* Back from the same buffer: a sender registers it too (2.x, where a receiver does not). */
    io.kind = FP_IO_SEND;
    io.what = "fi_send of the 2 MiB back from that buffer (no desc)";
    if (fp_run(s, &op, &io, FP_TARGET_SLOT + 1) != FP_OK)
        return 1;
    mem = fp_wk_reuse(s, r->variant, old);
    if (mem == NULL) {
        fp_say(s->role, "could not allocate the region's memory again");
        s->facts->setup_failed = true;
        return 2;
    }
    memset(mem, FP_WK_BEFORE, FP_WK_OFFSET);
    memset(mem + FP_WK_OFFSET, FP_WK_INSIDE, FP_WK_REGION);
    if (fp_expose(s, mem + FP_WK_OFFSET, FP_WK_REGION, &mr))
        return 2;
    fp_await_origin(s);
    fp_send(s, FP_MSG_CHECKED, 0, 0, NULL, 0);
    fi_close(&mr->fid);
    fp_wk_free(r->variant, mem);
    return 0;
}

/* A read of 64 B at offset from the region's start: how many bytes held what lies there. */
static void fp_wk_read(struct fp_side *s, const struct fp_msg *m, int64_t offset, unsigned slot)
{
    static uint8_t got[FP_MAX_OPS][FP_WK_READ];
    struct fp_io io = {.kind = FP_IO_READ,
                       .buf = got[slot],
                       .len = FP_WK_READ,
                       .raddr = m->a + offset,
                       .key = m->b};
    unsigned before = 0, inside = 0;
    struct fp_op op;

    io.what =
        offset ? "fi_read of 64 B from 32 B before the region" : "fi_read of 64 B of the region";
    memset(got[slot], 0x11, FP_WK_READ);
    if (fp_run(s, &op, &io, slot) != FP_OK)
        return;
    for (unsigned i = 0; i < FP_WK_READ; i++) {
        before += got[slot][i] == FP_WK_BEFORE && (int64_t)i < -offset;
        inside += got[slot][i] == FP_WK_INSIDE && (int64_t)i >= -offset;
    }
    snprintf(s->facts->op[slot].detail, sizeof(s->facts->op[slot].detail),
             "%u B of what lies before the region, %u of it", before, inside);
    fp_say(s->role, "it returned %s", s->facts->op[slot].detail);
}

static int fp_wk_origin(struct fp_side *s, const struct fp_round *r)
{
    uint8_t *msg = malloc(2 * FP_WK_MSG);
    struct fp_io io = {
        .kind = FP_IO_SEND, .what = "fi_send of 2 MiB (no desc)", .buf = msg, .len = FP_WK_MSG};
    struct fp_io back = {.kind = FP_IO_RECV,
                         .what = "fi_recv of the 2 MiB back (no desc)",
                         .buf = msg + FP_WK_MSG,
                         .len = FP_WK_MSG};
    struct fp_msg m;
    struct fp_op op, echo;

    (void)r;
    if (msg == NULL)
        return 2;
    for (size_t i = 0; i < FP_WK_MSG; i++)
        msg[i] = fp_pattern(i);
    if (fp_recv(s, FP_MSG_GO, &m, s->timeout) || fp_start(s, &echo, &back))
        return 1;
    if (fp_run(s, &op, &io, 0) != FP_OK || fp_finish(s, &echo, &back, 3) != FP_OK ||
        fp_recv(s, FP_MSG_REGION, &m, 2 * s->timeout)) {
        fp_await_target(s);
        return 1;
    }
    fp_wk_read(s, &m, 0, 1);
    fp_wk_read(s, &m, -32, 2);
    fp_await_target(s);
    free(msg);
    return 0;
}

/* ---- cq-data-context ---------------------------------------------------------------------- */

#define FP_CD_DATA 0xda7au

static int fp_cd_origin(struct fp_side *s, const struct fp_round *r)
{
    static uint8_t msg[16], data[64];
    struct fp_io send = {.kind = FP_IO_SEND, .what = "fi_send of 16 B", .buf = msg, .len = 16};
    struct fp_io io = {.kind = FP_IO_WRITE,
                       .what = "fi_writemsg of 64 B with FI_REMOTE_CQ_DATA",
                       .buf = data,
                       .len = sizeof(data),
                       .flags = FI_REMOTE_CQ_DATA,
                       .data = FP_CD_DATA};
    struct fid_mr *mr;
    struct fp_msg m;
    struct fp_op op;
    int ret;

    (void)r;
    memset(data, 0x5a, sizeof(data));
    ret = fi_mr_reg(s->domain, data, sizeof(data), FI_WRITE, 0, 0, 0, &mr, NULL);
    if (ret) {
        fp_say(s->role, "fi_mr_reg of its buffer: %s", fp_errstr(ret));
        s->facts->setup_failed = true;
        return 2;
    }
    io.desc = fi_mr_desc(mr);
    if (fp_recv(s, FP_MSG_REGION, &m, s->timeout) || fp_run(s, &op, &send, 0) != FP_OK ||
        fp_run(s, &op, &send, 2) != FP_OK || fp_recv(s, FP_MSG_GO, &m, s->timeout)) {
        fp_await_target(s);
        return 1;
    }
    io.raddr = m.a;
    io.key = m.b;
    fp_run(s, &op, &io, 1);
    fp_await_target(s);
    fi_close(&mr->fid);
    return 0;
}

static int fp_cd_target(struct fp_side *s, const struct fp_round *r)
{
    static uint8_t region[4096], msg[16];
    struct fp_io recv = {.kind = FP_IO_RECV, .what = "fi_recv of 16 B", .buf = msg, .len = 16};
    struct fid_mr *mr;
    struct fp_op op;
    struct fp_msg m;
    double until;

    (void)r;
    if (fp_start(s, &op, &recv) || fp_expose(s, region, sizeof(region), &mr))
        return 2;
    if (fp_finish(s, &op, &recv, FP_TARGET_SLOT) != FP_OK)
        return 1;
    /* The second message arrives before its receive is posted (unexpected). */
    until = fp_now() + 0.2;
    while (fp_now() < until)
        fp_progress_a_while(s);
    recv.what = "fi_recv of 16 B, posted after the message came";
    if (fp_run(s, &op, &recv, FP_TARGET_SLOT + 1) != FP_OK)
        return 1;
    /* The region's address and key once more, with the word to write. */
    fp_send(s, FP_MSG_GO, (uint64_t)(uintptr_t)region, fi_mr_key(mr), NULL, 0);
    fp_recv(s, FP_MSG_DONE, &m, FP_TARGET_SLOT * s->timeout + 5);
    until = fp_now() + (s->timeout < 4 ? s->timeout / 2 : 2);
    while (s->facts->remote_writes == 0 && fp_now() < until)
        fp_progress_a_while(s);
    fp_note(s, s->facts->remote_writes ? FP_REGION_WRITTEN : FP_REGION_UNCHANGED,
            "%u completion(s) of the write, the first with data 0x%llx and op_context %p%s",
            s->facts->remote_writes, (unsigned long long)s->facts->remote_data,
            s->facts->remote_context, s->facts->remote_context_ours ? " (its fi_recv's)" : "");
    fp_send(s, FP_MSG_CHECKED, 0, 0, NULL, 0);
    fi_close(&mr->fid);
    return 0;
}

static bool fp_cd_verdict(const struct fp_facts *f, char *what, size_t len)
{
    bool shown = false;
    int n = 0;

    for (int k = 0; k < 2; k++) {
        shown |= f[k].remote_writes && f[k].remote_context != NULL;
        n += snprintf(what + n, len - (size_t)n, "%s%s: %s", k ? "; " : "",
                      k ? "RDMA write with immediate" : "emulated",
                      !f[k].remote_writes           ? "no completion of the write"
                      : f[k].remote_context == NULL ? "op_context NULL"
                      : f[k].remote_context_ours    ? "op_context is the earlier fi_recv's"
                                                    : "op_context not NULL");
        if (n < 0 || (size_t)n >= len)
            break;
    }
    return shown;
}

/* ---- Verdicts ------------------------------------------------------------------------------ */

static const char *fp_op_brief(const struct fp_op_fact *o, char *buf, size_t len)
{
    switch (o->state) {
    case FP_OK:
        snprintf(buf, len, "completed%s%s", o->detail[0] ? ", " : "", o->detail);
        break;
    case FP_ERROR:
        snprintf(buf, len, "failed (%s, prov_errno %d: %s)", fi_strerror(o->err), o->prov_errno,
                 fp_efa_status(o->prov_errno));
        break;
    case FP_NEVER:
        snprintf(buf, len, "never completed");
        break;
    case FP_POST_FAILED:
        snprintf(buf, len, "could not be posted (%s)", fi_strerror(o->err));
        break;
    default:
        snprintf(buf, len, "was not run");
        break;
    }
    return buf;
}

static bool fp_target_signaled(const struct fp_facts *f)
{
    return f->target_signal || (f->target_exited && WIFSIGNALED(f->target_status));
}

static const char *fp_exit_brief(bool exited, int status, int sig, char *buf, size_t len)
{
    int n = 0;

    if (sig)
        n = snprintf(buf, len, "got SIG%s, then ", sigabbrev_np(sig) ?: "?");
    if (!exited)
        snprintf(buf + n, len - n, "did not exit (killed)");
    else if (WIFSIGNALED(status))
        snprintf(buf + n, len - n, "was killed by SIG%s", sigabbrev_np(WTERMSIG(status)) ?: "?");
    else
        snprintf(buf + n, len - n, "exited %d", WEXITSTATUS(status));
    return buf;
}

/* "LABEL: origin's operation ..., target ..." for each round, after what. */
static void fp_rounds_brief(const struct fp_case *c, const struct fp_facts *facts, char *what,
                            size_t len)
{
    size_t n = strlen(what);

    for (unsigned k = 0; k < c->nrounds && n < len; k++) {
        const struct fp_facts *f = &facts[k];
        char op[128], eq[96] = "", ex[64];

        if (f->eq_errors)
            snprintf(eq, sizeof(eq), "EQ error %s (prov_errno %d: %s), ", fi_strerror(f->eq_err),
                     f->eq_prov_errno, fp_efa_status(f->eq_prov_errno));
        n += snprintf(
            what + n, len - n, "%s%s: origin %s; target: %s%s%s%s", k ? "; " : " (",
            c->rounds[k].label, fp_op_brief(&f->op[c->rounds[k].slot], op, sizeof(op)), eq,
            f->region ? f->note : "", f->region ? ", " : "",
            fp_exit_brief(f->target_exited, f->target_status, f->target_signal, ex, sizeof(ex)));
    }
    if (n < len)
        snprintf(what + n, len - n, ")");
}

static bool fp_uw_verdict(const struct fp_facts *f, char *what, size_t len)
{
    bool landed = f[0].region == FP_REGION_WRITTEN;
    bool remote = f[0].eq_errors && f[0].eq_prov_errno == 7; /* remote bad address or key */

    if (landed)
        snprintf(what, len, "the 1 MiB write from a buffer registered FI_WRITE only landed");
    else if (remote)
        snprintf(what, len,
                 "a 1 MiB write from a buffer registered FI_WRITE only never landed: "
                 "the target's RDMA read of that buffer failed with the device's "
                 "remote error");
    else
        snprintf(what, len, "the 1 MiB write never landed, but %s",
                 f[0].eq_errors ? "the target's error was not the remote one of an unreadable "
                                  "buffer"
                                : "the target reported no error");
    return !landed && remote;
}

static bool fp_bk_verdict(const struct fp_facts *f, char *what, size_t len)
{
    bool ends = fp_target_signaled(&f[0]);
    bool dc = f[1].op[0].state == FP_NEVER || fp_target_signaled(&f[1]);

    snprintf(what, len, "one 64 B write with a wrong key %s a target that binds no EQ; %s",
             ends ? "ends" : "does not end",
             f[1].op[0].state == FP_NEVER ? "a delivery-complete one never completes"
             : fp_target_signaled(&f[1])  ? "a delivery-complete one ends a target with an EQ"
                                          : "a delivery-complete one does not hang");
    return ends && dc;
}

static bool fp_wk_verdict(const struct fp_facts *f, char *what, size_t len)
{
    bool shown = false;

    for (int k = 0; k < 3; k++)
        shown |= f[k].op[2].state == FP_OK;
    snprintf(what, len, "%s",
             shown ? "a 64 B read from 32 B before the region succeeded with the region's key"
                   : "no read from 32 B before the region succeeded");
    return shown;
}

/* ---- Cases and rounds ---------------------------------------------------------------------- */

static const struct fp_round fp_uw_rounds[] = {
    {"fi_writemsg of 1 MiB, FI_DELIVERY_COMPLETE; the target binds an EQ", "DC write, EQ", FP_UW_DC,
     true, 0, NULL},
    {"fi_writemsg of 1 MiB, plain; the target binds an EQ", "plain write, EQ", FP_UW_PLAIN, true, 0,
     NULL},
    {"fi_writemsg of 1 MiB, FI_DELIVERY_COMPLETE; the target binds no EQ", "DC write, no EQ",
     FP_UW_DC, false, 0, NULL},
};

static const struct fp_round fp_bk_rounds[] = {
    {"a 64 B write with a wrong key; the target binds no EQ", "plain write, no EQ",
     FP_BK_WRITE_PLAIN, false, 0, NULL},
    {"a 64 B write with a wrong key, FI_DELIVERY_COMPLETE; the target binds an EQ", "DC write, EQ",
     FP_BK_WRITE_DC, true, 0, NULL},
    {"a 64 B write with a wrong key; the target binds an EQ", "plain write, EQ", FP_BK_WRITE_PLAIN,
     true, 0, NULL},
    {"fi_fetch_atomic SUM int64, the right key then a wrong one; the target binds an EQ",
     "fetch, EQ", FP_BK_FETCH, true, 1, NULL},
    {"fi_fetch_atomic SUM int64, the right key then a wrong one; the target binds no EQ",
     "fetch, no EQ", FP_BK_FETCH, false, 1, NULL},
};

static const struct fp_round fp_wk_rounds[] = {
    {"heap: the receive buffer freed, malloc of the same size again", "heap", FP_WK_HEAP, false, 2,
     NULL},
    {"mmap: the receive buffer unmapped, mmap at its address again", "mmap", FP_WK_MMAP, false, 2,
     NULL},
    {"live: the region inside the receive buffer, still allocated", "live", FP_WK_LIVE, false, 2,
     NULL},
};

static const struct fp_round fp_cd_rounds[] = {
    {"a 16 B message, then a 64 B write with CQ data, emulated", "emulated", 0, false, 1, NULL},
    {"the same by RDMA write with immediate (both on a device with RDMA write)", "RDMA write", 0,
     false, 1, "EFASIM_RDMA_WRITE=1"},
};

static const struct fp_case fp_cases[] = {
    {"unreadable-write", "EFASIM_RDMA_WRITE=1 FI_EFA_USE_DEVICE_RDMA=1",
     "EFASIM_RDMA_WRITE=0 FI_EFA_USE_DEVICE_RDMA=1", FI_MSG | FI_RMA, fp_uw_rounds, 3, fp_uw_origin,
     fp_uw_target, fp_uw_verdict},
    {"bad-key-write", "FI_EFA_USE_DEVICE_RDMA=0", "FI_EFA_USE_DEVICE_RDMA=0",
     FI_MSG | FI_RMA | FI_ATOMIC, fp_bk_rounds, 5, fp_bk_origin, fp_bk_target, fp_bk_verdict},
    {"widened-key", "FI_EFA_USE_DEVICE_RDMA=1", "FI_EFA_USE_DEVICE_RDMA=1", FI_MSG | FI_RMA,
     fp_wk_rounds, 3, fp_wk_origin, fp_wk_target, fp_wk_verdict},
    {"cq-data-context", "FI_EFA_USE_DEVICE_RDMA=1", "FI_EFA_USE_DEVICE_RDMA=1", FI_MSG | FI_RMA,
     fp_cd_rounds, 2, fp_cd_origin, fp_cd_target, fp_cd_verdict},
};

/* One side of a round, in its own process: never returns. */
static void fp_child(const struct fp_case *c, const struct fp_round *r, bool origin, int in,
                     int out, struct fp_facts *f, double timeout)
{
    struct fp_side s = {.role = origin ? "origin" : "target",
                        .peer_role = origin ? "target" : "origin",
                        .facts = f,
                        .timeout = timeout,
                        .in = in,
                        .out = out};
    int ret;

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    fp_setenv_list(s.role, origin ? c->origin_env : c->target_env);
    if (r->env)
        fp_setenv_list(s.role, r->env);
    if (fp_open(&s, c->caps, !origin && r->target_eq)) {
        f->setup_failed = true;
        _exit(2);
    }
    /* After libfabric loaded its providers' libraries and they set their handlers. */
    fp_watch_fatal(origin ? &f->origin_signal : &f->target_signal);
    if (fp_connect(&s)) {
        f->setup_failed = true;
        _exit(2);
    }
    if (origin)
        f->origin_ready = true;
    else
        f->target_ready = true;
    ret = origin ? c->origin(&s, r) : c->target(&s, r);
    fp_close(&s);
    _exit(ret);
}

/* Wait for both sides until the deadline; then kill what is left, by its pid. */
static void fp_reap(const pid_t pid[2], struct fp_facts *f, double deadline)
{
    bool *exited[2] = {&f->origin_exited, &f->target_exited};
    int *status[2] = {&f->origin_status, &f->target_status};
    bool done[2] = {false, false};

    while (!(done[0] && done[1])) {
        for (int i = 0; i < 2; i++) {
            if (!done[i] && waitpid(pid[i], status[i], WNOHANG) == pid[i])
                done[i] = *exited[i] = true;
            if (!done[i] && fp_now() > deadline) {
                kill(pid[i], SIGKILL);
                waitpid(pid[i], status[i], 0);
                done[i] = true;
            }
        }
        usleep(10000);
    }
}

static int fp_round_run(const struct fp_case *c, unsigned k, double timeout, struct fp_facts *f)
{
    const struct fp_round *r = &c->rounds[k];
    int ot[2], to[2];
    pid_t pid[2];
    char oe[64], te[64];

    fp_say(NULL, "round %u/%u: %s", k + 1, c->nrounds, r->name);
    if (pipe(ot) || pipe(to)) {
        perror("fi-pair: pipe");
        return -1;
    }
    for (int i = 0; i < 2; i++) {
        pid[i] = fork();
        if (pid[i] < 0) {
            perror("fi-pair: fork");
            return -1;
        }
        if (pid[i] == 0) {
            close(i == 0 ? ot[0] : ot[1]);
            close(i == 0 ? to[1] : to[0]);
            fp_child(c, r, i == 0, i == 0 ? to[0] : ot[0], i == 0 ? ot[1] : to[1], f, timeout);
        }
    }
    close(ot[0]);
    close(ot[1]);
    close(to[0]);
    close(to[1]);
    fp_reap(pid, f, fp_now() + (FP_TARGET_SLOT + 4) * timeout + 20);
    fp_say(NULL, "  round %u: origin %s, target %s", k + 1,
           fp_exit_brief(f->origin_exited, f->origin_status, f->origin_signal, oe, sizeof(oe)),
           fp_exit_brief(f->target_exited, f->target_status, f->target_signal, te, sizeof(te)));
    return 0;
}

static void fp_usage(void)
{
    fprintf(stderr, "usage: fi-pair CASE [--timeout S]\ncases:");
    for (size_t i = 0; i < sizeof(fp_cases) / sizeof(fp_cases[0]); i++)
        fprintf(stderr, " %s", fp_cases[i].name);
    fprintf(stderr, "\n");
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"timeout", required_argument, NULL, 't'},
        {NULL, 0, NULL, 0},
    };
    const struct fp_case *c = NULL;
    struct fp_facts *facts;
    double timeout = 10;
    char what[2048];
    bool shown;
    int opt;

    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (opt != 't' || !((timeout = strtod(optarg, NULL)) > 0)) {
            fp_usage();
            return 2;
        }
    }
    for (size_t i = 0; optind == argc - 1 && i < sizeof(fp_cases) / sizeof(fp_cases[0]); i++)
        if (!strcmp(argv[optind], fp_cases[i].name))
            c = &fp_cases[i];
    if (c == NULL) {
        fp_usage();
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    facts = mmap(NULL, c->nrounds * sizeof(*facts), PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (facts == MAP_FAILED) {
        perror("fi-pair: mmap");
        return 2;
    }
    memset(facts, 0, c->nrounds * sizeof(*facts));
    for (unsigned k = 0; k < c->nrounds; k++) {
        struct fp_facts *f = &facts[k];

        if (fp_round_run(c, k, timeout, f))
            return 2;
        if (f->setup_failed || !f->origin_ready || !f->target_ready) {
            fp_say(NULL, "fi-pair %s: NOT SHOWN setting up round %u failed (origin %s, target %s)",
                   c->name, k + 1, f->origin_ready ? "ready" : "not ready",
                   f->target_ready ? "ready" : "not ready");
            return 2;
        }
    }
    shown = c->verdict(facts, what, sizeof(what));
    fp_rounds_brief(c, facts, what, sizeof(what));
    fp_say(NULL, "fi-pair %s: %s %s", c->name, shown ? "SHOWN" : "NOT SHOWN", what);
    return shown ? 0 : 1;
}
