/*
 * bench-mt: multithreaded MPI point-to-point between two ranks (issue 42), written
 * against the MPI standard only (MPI-3.1 and POSIX threads), so any MPI's mpicc
 * builds it. Thread t of rank 0 talks to thread t of rank 1, all threads at once,
 * under MPI_THREAD_MULTIPLE:
 *
 *   rate  the osu_mbw_mr pattern per thread pair: a window of -w MPI_Isend, then a
 *         0-byte acknowledgement once the receiver's window of MPI_Irecv completed;
 *         messages per second over all threads, timed by rank 0 from the threads'
 *         common start (after an MPI_Barrier) to the last one's end, and the
 *         slowest and fastest thread's own rate;
 *   lat   the osu_latency_mt pattern per thread pair: MPI_Send/MPI_Recv ping-pong;
 *         one-way latency is half the round trip; median, average, 99th percentile
 *         and minimum over every round trip of every thread.
 *
 * Each pattern runs on two kinds of communicator (-c): own, every thread on its
 * own MPI_Comm_dup of MPI_COMM_WORLD made before the threads start (the pattern
 * per-communicator VCIs spread over VCIs), and shared, every thread on one
 * communicator with tag = thread id (as osu_latency_mt does).
 *
 * Checks: every message carries a stamp in its first 8 bytes (thread, direction,
 * sequence number; fewer bytes for smaller messages) and the receiver checks it
 * and the length, so a lost, duplicated, reordered or misdelivered message fails
 * the run; during the warm-up every byte of every message is checked against a
 * pattern. A failed check names the rank, thread, message and bytes, and aborts
 * with status 3. -x is its self-test: rank 0's thread 0 sends one wrong stamp in
 * each timed phase, and the run must fail.
 *
 * Each point (mode, communicator kind, size, thread count) runs a warm-up with the
 * full check, a second warm-up that rank 0 times to pick the iteration count for
 * about -T seconds, and the timed run.
 *
 *   mpiexec -n 2 bench-mt [-m rate,lat] [-c own,shared] [-t 1,2,4,8] [-s 8] [-w 64]
 *                         [-T 1] [-x] [-p MPI_T_PVAR]...
 *
 * Output (rank 0), for scripts: "MTINFO" with the library and the VCI count asked
 * for (MPIR_CVAR_CH4_NUM_VCIS through MPI_T when the library has it, else from the
 * environment, else "?"); one line per point,
 *   MT mode=rate comm=own threads=4 size=8 window=64 vcis=1 iters=N secs=S
 *      msgs_per_s=R per_thread_min=R per_thread_max=R
 *   MT mode=lat comm=shared threads=4 size=8 vcis=1 iters=N p50_us=L avg_us=L
 *      p99_us=L min_us=L
 * then bench_mpit.h's PVAR and SENT lines (what both ranks' threads sent), so a
 * script can tell from a netmod's counters that every message crossed it. Exit
 * status 1: no MPI_THREAD_MULTIPLE; 2: bad arguments; 3: a failed check.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BENCH_PROG "bench-mt"
#include "bench_args.h"
#include "bench_mpit.h"

#define MAX_THREADS   64
#define MAX_LIST      16
#define MAX_SIZE      (1 << 20)
#define MAX_SLOTS     (16 << 20) /* window x size per thread and direction */
#define MAX_PVARS     16
#define STAMP_BYTES   8
#define WARM_WINDOWS  8   /* rate: windows per thread in each warm-up */
#define WARM_TRIPS    100 /* lat: round trips per thread in each warm-up */
#define MAX_TRIPS     1000000
#define MAX_WINDOWS   100000000
#define TAG_ACK_FIRST MAX_THREADS /* data tag = thread id, acknowledgement tag above */

enum mode { MODE_RATE, MODE_LAT, MODE_COUNT };
enum comm_kind { COMM_OWN, COMM_SHARED, COMM_COUNT };

static const char *const g_mode_names[MODE_COUNT] = {"rate", "lat"};
static const char *const g_comm_names[COMM_COUNT] = {"own", "shared"};

struct opts {
    unsigned modes, comms; /* bit per enum mode, enum comm_kind */
    int threads[MAX_LIST], nthreads, max_threads;
    int sizes[MAX_LIST], nsizes;
    int window;
    double seconds;
    bool corrupt;
    const char *pvars[MAX_PVARS];
    int npvars;
};

struct bench {
    int rank, peer;
    struct opts o;
    MPI_Comm own[MAX_THREADS]; /* one per thread, duplicated before any thread starts */
    MPI_Comm shared;
    char vcis[32];
    const char *vcis_from;
    unsigned long long sent_msgs, sent_bytes; /* every message this rank's threads sent */
};

/* One point being measured: what all its threads read. */
struct point {
    struct bench *b;
    enum mode mode;
    enum comm_kind comm;
    int threads, window;
    size_t size;
    long iters;      /* per thread: windows (rate) or round trips (lat) */
    bool full_check; /* every byte against the pattern, not just stamp and length */
    bool corrupt;    /* -x: rank 0's thread 0 sends one wrong stamp */
    pthread_barrier_t start;
};

struct worker {
    struct point *pt;
    int t;
    pthread_t thread;
    unsigned char *sbuf, *rbuf; /* window slots of size bytes each */
    MPI_Request *reqs;
    MPI_Status *stats;
    double *lat;        /* rank 0, lat: one-way us of each round trip */
    double secs;        /* this thread's own time in the phase */
    double start, stop; /* its MPI_Wtime when it began and when it ended */
    unsigned long long sent_msgs, sent_bytes;
};

static void usage(FILE *f)
{
    fprintf(f, "usage: mpiexec -n 2 bench-mt [-m MODES] [-c COMMS] [-t LIST] [-s LIST] [-w N]\n"
               "                             [-T SECONDS] [-x] [-p PVAR]...\n"
               "  -m MODES    rate, lat or rate,lat (default rate,lat)\n"
               "  -c COMMS    own (a communicator per thread), shared (tag = thread id)\n"
               "              or own,shared (default own,shared)\n"
               "  -t LIST     thread counts per rank, 1 to 64 (default 1,2,4,8)\n"
               "  -s LIST     message sizes in bytes, K or M allowed, up to 1M (default 8)\n"
               "  -w N        rate: messages per window (default 64)\n"
               "  -T SECONDS  about this long per timed point (default 1)\n"
               "  -x          self-test: one wrong stamp per timed phase; the run must fail\n"
               "  -p PVAR     print how much the MPI_T counter PVAR grew (repeatable)\n");
}

/* ---- Arguments ------------------------------------------------------------------ */

/* A comma-separated list of names from table; sets a bit per name. */
static int parse_names(char opt, const char *arg, const char *const *table, int n, unsigned *bits_p)
{
    char *copy = strdup(arg), *save = NULL, *word;
    unsigned bits = 0;
    int ret = 0;

    if (copy == NULL)
        return -ENOMEM;
    for (word = strtok_r(copy, ",", &save); word; word = strtok_r(NULL, ",", &save)) {
        int i;

        for (i = 0; i < n && strcmp(word, table[i]) != 0; i++)
            ;
        if (i == n) {
            complain("-%c: unknown name '%s'\n", opt, word);
            ret = -EINVAL;
            break;
        }
        bits |= 1u << i;
    }
    free(copy);
    if (ret == 0 && bits == 0) {
        complain("-%c: no name given\n", opt);
        ret = -EINVAL;
    }
    if (ret == 0)
        *bits_p = bits;
    return ret;
}

/* A comma-separated list of whole numbers from lo to hi, K and M suffixes allowed. */
static int parse_ints(char opt, const char *arg, long lo, long hi, int *v, int *n_p)
{
    const char *p = arg;
    int n = 0;

    while (*p) {
        char *end;
        long x;

        errno = 0;
        x = strtol(p, &end, 10);
        if (end == p || errno || *p == '-' || x > MAX_SLOTS)
            goto err_bad;
        if (*end == 'K' || *end == 'k')
            x <<= 10, end++;
        else if (*end == 'M' || *end == 'm')
            x <<= 20, end++;
        if ((*end != ',' && *end != '\0') || x < lo || x > hi)
            goto err_bad;
        if (n == MAX_LIST) {
            complain("-%c: at most %d values\n", opt, MAX_LIST);
            return -EINVAL;
        }
        v[n++] = (int)x;
        p = *end == ',' ? end + 1 : end;
    }
    if (n == 0)
        goto err_bad;
    *n_p = n;
    return 0;

err_bad:
    complain("-%c: '%s' is not a list of numbers from %ld to %ld\n", opt, arg, lo, hi);
    return -EINVAL;
}

static int parse_seconds(const char *arg, double *v_p)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(arg, &end);
    if (end == arg || *end != '\0' || errno || !(v >= 0.001 && v <= 600)) {
        complain("-T: '%s' is not a number of seconds from 0.001 to 600\n", arg);
        return -EINVAL;
    }
    *v_p = v;
    return 0;
}

/* Limits that involve more than one option. */
static int check_args(struct opts *o)
{
    int n = 0;

    for (int i = 0; i < o->nsizes; i++) {
        if ((long)o->sizes[i] * o->window > MAX_SLOTS) {
            complain("-s %d with -w %d: more than %d bytes in flight per thread\n", o->sizes[i],
                     o->window, MAX_SLOTS);
            return -EINVAL;
        }
        n += o->sizes[i] > 0;
    }
    if (o->corrupt && n == 0) {
        complain("-x: 0-byte messages carry no stamp to corrupt\n");
        return -EINVAL;
    }
    for (int i = 0; i < o->nthreads; i++)
        if (o->threads[i] > o->max_threads)
            o->max_threads = o->threads[i];
    return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
    int c, window[MAX_LIST], n = 0;

    *o = (struct opts){.modes = (1u << MODE_COUNT) - 1,
                       .comms = (1u << COMM_COUNT) - 1,
                       .threads = {1, 2, 4, 8},
                       .nthreads = 4,
                       .sizes = {8},
                       .nsizes = 1,
                       .window = 64,
                       .seconds = 1};
    opterr = 0;
    while ((c = getopt(argc, argv, "m:c:t:s:w:T:xp:h")) != -1) {
        switch (c) {
        case 'm':
            if (parse_names('m', optarg, g_mode_names, MODE_COUNT, &o->modes))
                return -EINVAL;
            break;
        case 'c':
            if (parse_names('c', optarg, g_comm_names, COMM_COUNT, &o->comms))
                return -EINVAL;
            break;
        case 't':
            if (parse_ints('t', optarg, 1, MAX_THREADS, o->threads, &o->nthreads))
                return -EINVAL;
            break;
        case 's':
            if (parse_ints('s', optarg, 0, MAX_SIZE, o->sizes, &o->nsizes))
                return -EINVAL;
            break;
        case 'w':
            if (parse_ints('w', optarg, 1, 1 << 16, window, &n))
                return -EINVAL;
            if (n != 1) {
                complain("-w: one number of messages\n");
                return -EINVAL;
            }
            o->window = window[0];
            break;
        case 'T':
            if (parse_seconds(optarg, &o->seconds))
                return -EINVAL;
            break;
        case 'x':
            o->corrupt = true;
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
    return check_args(o);
}

/* ---- Payload: stamps and pattern -------------------------------------------------- */

/* What message seq of thread t sent by rank from carries in its first bytes. */
static uint64_t stamp_of(int t, int from, uint64_t seq)
{
    return (uint64_t)from << 63 | (uint64_t)(t + 1) << 40 | seq;
}

static unsigned char pattern(size_t i, int t, int from)
{
    return (unsigned char)(i * 131 + (size_t)t * 29 + (size_t)from * 7 + 1);
}

static void stamp_put(unsigned char *buf, size_t size, uint64_t v)
{
    for (size_t i = 0; i < size && i < STAMP_BYTES; i++)
        buf[i] = (unsigned char)(v >> 8 * i);
}

/* A failed check: what arrived, where, then the whole job ends. */
static void check_fail(const struct worker *w, uint64_t seq, const char *fmt, ...)
{
    const struct point *pt = w->pt;
    va_list ap;

    fprintf(stderr,
            "bench-mt: CHECK FAILED: rank %d thread %d, mode=%s comm=%s threads=%d size=%zu, "
            "message %llu from rank %d: ",
            pt->b->rank, w->t, g_mode_names[pt->mode], g_comm_names[pt->comm], pt->threads,
            pt->size, (unsigned long long)seq, pt->b->peer);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

/* Message seq of this thread from the other rank: its length, stamp and (in the
 * warm-up) every byte. */
static void payload_check(const struct worker *w, const unsigned char *buf, const MPI_Status *st,
                          uint64_t seq)
{
    const struct point *pt = w->pt;
    int from = pt->b->peer, count;
    uint64_t want = stamp_of(w->t, from, seq), got = 0, mask;
    size_t n = pt->size < STAMP_BYTES ? pt->size : STAMP_BYTES;

    MPI_Get_count(st, MPI_BYTE, &count);
    if ((size_t)count != pt->size)
        check_fail(w, seq, "%d bytes arrived, expected %zu\n", count, pt->size);
    for (size_t i = 0; i < n; i++)
        got |= (uint64_t)buf[i] << 8 * i;
    mask = n == STAMP_BYTES ? ~(uint64_t)0 : ((uint64_t)1 << 8 * n) - 1;
    if (n == STAMP_BYTES && got != want)
        check_fail(
            w, seq,
            "stamp 0x%016llx (thread %lld, from rank %d, message %llu), expected 0x%016llx\n",
            (unsigned long long)got, (long long)((got >> 40) & 0x7fffff) - 1, (int)(got >> 63),
            (unsigned long long)(got & (((uint64_t)1 << 40) - 1)), (unsigned long long)want);
    if (n > 0 && got != (want & mask))
        check_fail(w, seq, "stamp 0x%llx in its %zu bytes, expected 0x%llx\n",
                   (unsigned long long)got, n, (unsigned long long)(want & mask));
    if (!pt->full_check)
        return;
    for (size_t i = STAMP_BYTES; i < pt->size; i++)
        if (buf[i] != pattern(i, w->t, from))
            check_fail(w, seq, "byte %zu is 0x%02x, expected 0x%02x\n", i, buf[i],
                       pattern(i, w->t, from));
}

/* The stamp rank 0's thread 0 sends in place of message seq's under -x: one wrong
 * sequence number in the middle of a timed phase. */
static uint64_t stamp_sent(const struct worker *w, uint64_t seq, uint64_t corrupt_at)
{
    const struct point *pt = w->pt;
    bool wrong = pt->corrupt && w->t == 0 && pt->b->rank == 0 && seq == corrupt_at;

    return stamp_of(w->t, pt->b->rank, wrong ? seq ^ 1 : seq);
}

/* ---- The two patterns, one thread pair each ---------------------------------------- */

static void rate_run(struct worker *w, MPI_Comm comm)
{
    const struct point *pt = w->pt;
    int W = pt->window, peer = pt->b->peer, tag = w->t;
    uint64_t corrupt_at = (uint64_t)(pt->iters / 2) * W + W / 2;

    for (long i = 0; i < pt->iters; i++) {
        for (int j = 0; j < W; j++) {
            unsigned char *slot = (pt->b->rank == 0 ? w->sbuf : w->rbuf) + (size_t)j * pt->size;
            uint64_t seq = (uint64_t)i * W + j;

            if (pt->b->rank == 0) {
                stamp_put(slot, pt->size, stamp_sent(w, seq, corrupt_at));
                MPI_Isend(slot, (int)pt->size, MPI_BYTE, peer, tag, comm, &w->reqs[j]);
            } else {
                MPI_Irecv(slot, (int)pt->size, MPI_BYTE, peer, tag, comm, &w->reqs[j]);
            }
        }
        MPI_Waitall(W, w->reqs, w->stats);
        if (pt->b->rank == 0) {
            MPI_Recv(NULL, 0, MPI_BYTE, peer, TAG_ACK_FIRST + tag, comm, &w->stats[0]);
            continue;
        }
        for (int j = 0; j < W; j++)
            payload_check(w, w->rbuf + (size_t)j * pt->size, &w->stats[j], (uint64_t)i * W + j);
        MPI_Send(NULL, 0, MPI_BYTE, peer, TAG_ACK_FIRST + tag, comm);
    }
    if (pt->b->rank == 0) {
        w->sent_msgs += (unsigned long long)pt->iters * W;
        w->sent_bytes += (unsigned long long)pt->iters * W * pt->size;
    } else {
        w->sent_msgs += (unsigned long long)pt->iters;
    }
}

static void lat_run(struct worker *w, MPI_Comm comm)
{
    const struct point *pt = w->pt;
    int size = (int)pt->size, peer = pt->b->peer, tag = w->t;
    uint64_t corrupt_at = (uint64_t)pt->iters / 2;
    MPI_Status st;

    for (long i = 0; i < pt->iters; i++) {
        if (pt->b->rank == 0) {
            double t0;

            stamp_put(w->sbuf, pt->size, stamp_sent(w, (uint64_t)i, corrupt_at));
            t0 = MPI_Wtime();
            MPI_Send(w->sbuf, size, MPI_BYTE, peer, tag, comm);
            MPI_Recv(w->rbuf, size, MPI_BYTE, peer, tag, comm, &st);
            w->lat[i] = (MPI_Wtime() - t0) * 1e6 / 2;
            payload_check(w, w->rbuf, &st, (uint64_t)i);
        } else {
            MPI_Recv(w->rbuf, size, MPI_BYTE, peer, tag, comm, &st);
            payload_check(w, w->rbuf, &st, (uint64_t)i);
            stamp_put(w->sbuf, pt->size, stamp_sent(w, (uint64_t)i, corrupt_at));
            MPI_Send(w->sbuf, size, MPI_BYTE, peer, tag, comm);
        }
    }
    w->sent_msgs += (unsigned long long)pt->iters;
    w->sent_bytes += (unsigned long long)pt->iters * pt->size;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct point *pt = w->pt;
    MPI_Comm comm = pt->comm == COMM_OWN ? pt->b->own[w->t] : pt->b->shared;
    pthread_barrier_wait(&pt->start);
    w->start = MPI_Wtime();
    if (pt->mode == MODE_RATE)
        rate_run(w, comm);
    else
        lat_run(w, comm);
    w->stop = MPI_Wtime();
    w->secs = w->stop - w->start;
    return NULL;
}

/* ---- A point: warm-ups, calibration, the timed run ---------------------------------- */

static void out_of_memory(const struct bench *b, const char *what)
{
    fprintf(stderr, "bench-mt: rank %d: out of memory for %s\n", b->rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/*
 * Starts the point's threads, releases them together after an MPI_Barrier, and
 * returns the seconds from the first thread's start to the last one's end, as
 * the threads clocked them. (Not the main thread's clock: with more busy
 * threads than cores it can be descheduled from the release until the work is
 * done; a warm-up clocked near zero once made calibrate ask for 10^8 windows.)
 */
static double phase(struct point *pt, struct worker *w)
{
    double first = 0, last = 0;

    if (pthread_barrier_init(&pt->start, NULL, (unsigned)pt->threads + 1))
        out_of_memory(pt->b, "a thread barrier");
    for (int t = 0; t < pt->threads; t++) {
        if (pt->b->rank == 0 && pt->mode == MODE_LAT) {
            free(w[t].lat);
            w[t].lat = malloc((size_t)pt->iters * sizeof(*w[t].lat));
            if (w[t].lat == NULL)
                out_of_memory(pt->b, "latency samples");
        }
        if (pthread_create(&w[t].thread, NULL, worker_main, &w[t])) {
            fprintf(stderr, "bench-mt: rank %d: cannot start thread %d\n", pt->b->rank, t);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    pthread_barrier_wait(&pt->start);
    for (int t = 0; t < pt->threads; t++)
        pthread_join(w[t].thread, NULL);
    pthread_barrier_destroy(&pt->start);
    for (int t = 0; t < pt->threads; t++) {
        first = t == 0 || w[t].start < first ? w[t].start : first;
        last = t == 0 || w[t].stop > last ? w[t].stop : last;
        pt->b->sent_msgs += w[t].sent_msgs;
        pt->b->sent_bytes += w[t].sent_bytes;
        w[t].sent_msgs = w[t].sent_bytes = 0;
    }
    return last - first;
}

/* Iterations for about -T seconds from a timed warm-up of warm iterations (rank 0
 * decides, both ranks use it). */
static long calibrate(const struct point *pt, long warm, double secs)
{
    long n = 0, max = pt->mode == MODE_LAT ? MAX_TRIPS : MAX_WINDOWS;

    if (pt->b->rank == 0) {
        double want = pt->b->o.seconds / (secs > 0 ? secs / warm : 1e-9);

        n = want < 1 ? 1 : want > max ? max : (long)want;
    }
    MPI_Bcast(&n, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    return n;
}

/* Rank 0's MT line for a rate point. */
static void report_rate(const struct point *pt, const struct worker *w, double secs)
{
    double per = (double)pt->iters * pt->window, lo = 0, hi = 0;

    for (int t = 0; t < pt->threads; t++) {
        double r = w[t].secs > 0 ? per / w[t].secs : 0;

        lo = t == 0 || r < lo ? r : lo;
        hi = t == 0 || r > hi ? r : hi;
    }
    printf("MT mode=rate comm=%s threads=%d size=%zu window=%d vcis=%s iters=%ld secs=%.3f "
           "msgs_per_s=%.0f per_thread_min=%.0f per_thread_max=%.0f\n",
           g_comm_names[pt->comm], pt->threads, pt->size, pt->window, pt->b->vcis, pt->iters, secs,
           per * pt->threads / secs, lo, hi);
}

/* Rank 0's MT line for a latency point: all threads' round trips together. */
static void report_lat(const struct point *pt, const struct worker *w)
{
    size_t n = (size_t)pt->iters * (size_t)pt->threads, k = 0;
    double *all = malloc(n * sizeof(*all)), sum = 0;

    if (all == NULL)
        out_of_memory(pt->b, "latency samples");
    for (int t = 0; t < pt->threads; t++)
        for (long i = 0; i < pt->iters; i++)
            sum += all[k++] = w[t].lat[i];
    qsort(all, n, sizeof(*all), cmp_double);
    printf("MT mode=lat comm=%s threads=%d size=%zu vcis=%s iters=%ld p50_us=%.2f avg_us=%.2f "
           "p99_us=%.2f min_us=%.2f\n",
           g_comm_names[pt->comm], pt->threads, pt->size, pt->b->vcis, pt->iters, all[n / 2],
           sum / (double)n, all[(size_t)((double)n * 0.99)], all[0]);
    free(all);
}

static void run_point(struct bench *b, enum mode mode, enum comm_kind comm, int threads,
                      size_t size)
{
    struct point pt = {.b = b, .mode = mode, .comm = comm, .threads = threads, .size = size};
    struct worker w[MAX_THREADS] = {{0}};
    long warm = mode == MODE_RATE ? WARM_WINDOWS : WARM_TRIPS;
    size_t slots = (mode == MODE_RATE ? (size_t)b->o.window : 1) * size;
    double secs;

    pt.window = mode == MODE_RATE ? b->o.window : 1;
    for (int t = 0; t < threads; t++) {
        w[t] = (struct worker){.pt = &pt, .t = t};
        w[t].sbuf = malloc(slots + 1);
        w[t].rbuf = malloc(slots + 1);
        w[t].reqs = malloc((size_t)pt.window * sizeof(*w[t].reqs));
        w[t].stats = malloc((size_t)pt.window * sizeof(*w[t].stats));
        if (!w[t].sbuf || !w[t].rbuf || !w[t].reqs || !w[t].stats)
            out_of_memory(b, "message buffers");
        for (size_t i = 0; i < slots; i++)
            w[t].sbuf[i] = pattern(i % (size ? size : 1), t, b->rank);
        memset(w[t].rbuf, 0, slots + 1);
    }
    pt.iters = warm;
    pt.full_check = true;
    phase(&pt, w);
    pt.full_check = false;
    secs = phase(&pt, w);
    pt.iters = calibrate(&pt, warm, secs);
    pt.corrupt = b->o.corrupt;
    secs = phase(&pt, w);
    if (b->rank == 0) {
        if (mode == MODE_RATE)
            report_rate(&pt, w, secs);
        else
            report_lat(&pt, w);
        fflush(stdout);
    }
    for (int t = 0; t < threads; t++) {
        free(w[t].lat);
        free(w[t].stats);
        free(w[t].reqs);
        free(w[t].rbuf);
        free(w[t].sbuf);
    }
}

/* ---- What runs: the library, its VCIs ---------------------------------------------- */

/* An int control variable by name, through MPI_T; -ENOENT when the library has none. */
static int cvar_int(const char *want, int *v_p)
{
    char name[256], desc[256];
    int index, name_len = sizeof(name), desc_len = sizeof(desc), verbosity, bind, scope, count;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    MPI_T_cvar_handle handle;
    int v;

    if (MPI_T_cvar_get_index(want, &index) != MPI_SUCCESS ||
        MPI_T_cvar_get_info(index, name, &name_len, &verbosity, &type, &enumtype, desc, &desc_len,
                            &bind, &scope) != MPI_SUCCESS ||
        type != MPI_INT || bind != MPI_T_BIND_NO_OBJECT)
        return -ENOENT;
    if (MPI_T_cvar_handle_alloc(index, NULL, &handle, &count) != MPI_SUCCESS)
        return -ENOENT;
    if (count != 1 || MPI_T_cvar_read(handle, &v) != MPI_SUCCESS) {
        MPI_T_cvar_handle_free(&handle);
        return -ENOENT;
    }
    MPI_T_cvar_handle_free(&handle);
    *v_p = v;
    return 0;
}

/* The VCI count asked for: MPICH's control variable when the library has it, else
 * the environment's, else "?". It is what was asked for; whether the netmod uses
 * that many is the library's business (efarm refuses more than one). */
static void vcis_find(struct bench *b)
{
    const char *env = getenv("MPIR_CVAR_CH4_NUM_VCIS");
    int v;

    if (cvar_int("MPIR_CVAR_CH4_NUM_VCIS", &v) == 0) {
        snprintf(b->vcis, sizeof(b->vcis), "%d", v);
        b->vcis_from = "mpi_t";
    } else if (env != NULL && *env != '\0' && strspn(env, "0123456789") == strlen(env) &&
               strlen(env) < sizeof(b->vcis)) {
        snprintf(b->vcis, sizeof(b->vcis), "%s", env);
        b->vcis_from = "environment";
    } else {
        snprintf(b->vcis, sizeof(b->vcis), "?");
        b->vcis_from = "unknown";
    }
}

static void print_header(const struct bench *b)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING], host[MPI_MAX_PROCESSOR_NAME];
    int len;

    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n")] = '\0';
    MPI_Get_processor_name(host, &len);
    printf("# bench-mt: 2 ranks on %s, MPI_THREAD_MULTIPLE; thread t of rank 0 with thread t "
           "of rank 1\n",
           host);
    printf("# about %g s per point after two warm-ups; rate windows of %d%s\n", b->o.seconds,
           b->o.window, b->o.corrupt ? "; -x: one wrong stamp per timed phase" : "");
    printf("MTINFO vcis=%s vcis_from=%s library=\"%s\"\n", b->vcis, b->vcis_from, lib);
    fflush(stdout);
}

static void run(struct bench *b)
{
    for (int m = 0; m < MODE_COUNT; m++)
        for (int c = 0; c < COMM_COUNT; c++)
            for (int s = 0; s < b->o.nsizes; s++)
                for (int t = 0; t < b->o.nthreads; t++)
                    if ((b->o.modes & 1u << m) && (b->o.comms & 1u << c))
                        run_point(b, (enum mode)m, (enum comm_kind)c, b->o.threads[t],
                                  (size_t)b->o.sizes[s]);
}

/* ---- main ------------------------------------------------------------------------- */

static int thread_level_check(int provided, int rank)
{
    const char *name = provided == MPI_THREAD_SINGLE       ? "MPI_THREAD_SINGLE"
                       : provided == MPI_THREAD_FUNNELED   ? "MPI_THREAD_FUNNELED"
                       : provided == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
                                                           : "an unknown level";

    if (provided == MPI_THREAD_MULTIPLE)
        return 0;
    if (rank == 0)
        fprintf(stderr,
                "bench-mt: MPI_Init_thread gave %s, not MPI_THREAD_MULTIPLE: this MPI library "
                "cannot run the threads' MPI calls concurrently\n",
                name);
    return -ENOTSUP;
}

int main(int argc, char **argv)
{
    struct bench b = {0};
    struct bench_pvar pvars[MAX_PVARS];
    MPI_T_pvar_session session;
    int size, provided, ret;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
    g_rank = b.rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (thread_level_check(provided, b.rank)) {
        MPI_Finalize();
        return 1;
    }
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
    for (int t = 0; t < b.o.max_threads; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &b.own[t]);
    MPI_Comm_dup(MPI_COMM_WORLD, &b.shared);

    MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided);
    MPI_T_pvar_session_create(&session);
    for (int i = 0; i < b.o.npvars; i++) {
        pvars[i].name = b.o.pvars[i];
        bench_pvar_open(session, "bench-mt", b.rank, &pvars[i]);
    }
    vcis_find(&b);
    if (b.rank == 0)
        print_header(&b);
    run(&b);
    bench_counters_report(session, b.rank, pvars, b.o.npvars, b.sent_msgs, b.sent_bytes);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();

    MPI_Comm_free(&b.shared);
    for (int t = 0; t < b.o.max_threads; t++)
        MPI_Comm_free(&b.own[t]);
    MPI_Finalize();
    return 0;
}
