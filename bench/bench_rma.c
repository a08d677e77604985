/*
 * bench-rma: OSU-style MPI one-sided benchmarks between two ranks, written
 * against the MPI standard only (MPI-3.1), so any MPI's mpicc builds it.
 * Rank 0 is the origin; rank 1 the passive target, waiting in MPI_Barrier
 * (so MPI progresses on it) except in the *_busy tests. Windows come from
 * MPI_Win_allocate; every test runs inside one MPI_Win_lock_all epoch.
 *
 *   pingpong     MPI_Send/MPI_Recv round trip of 8 bytes: the reference the
 *                one-sided figures are compared with (median round trip);
 *   put_lat      MPI_Put of s bytes then MPI_Win_flush: median time, as
 *                osu_put_latency times it; get_lat the same with MPI_Get;
 *   put_bw       a window of MPI_Put then one flush; MB/s = 10^6 bytes per
 *                second; get_bw the same with MPI_Get;
 *   acc_lat      MPI_Accumulate of one double (MPI_SUM) then flush;
 *   fop_lat      MPI_Fetch_and_op of one int64 (MPI_SUM) then flush;
 *   cas_lat      MPI_Compare_and_swap of one int64 then flush;
 *   put_busy, get_busy  8-byte put_lat/get_lat while the target computes
 *                without calling MPI (it spins until rank 0 tells it, by a
 *                put into its window, that the test is over, or for at most
 *                -b seconds): one-sided progress. An operation that needs the
 *                target's CPU waits for the target's next MPI call, which
 *                put_busy_max/get_busy_max (the slowest one) show.
 *
 *   mpiexec -n 2 bench-rma [-t put_lat,get_lat,...] [-m 4M] [-i 1] [-w 64] [-b 5]
 *                          [-p MPI_T_PVAR]...
 *
 * Output (rank 0): one line per figure, "RESULT <test> <bytes> <value> <unit>"
 * (units us, MB/s), and "PVAR <name> <rank 0> <rank 1>" per -p counter, its
 * change over the run. Put and get data is checked once per size. Exit
 * status 2: bad arguments.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PVARS 16

enum test {
    T_PINGPONG,
    T_PUT_LAT,
    T_GET_LAT,
    T_PUT_BW,
    T_GET_BW,
    T_ACC_LAT,
    T_FOP_LAT,
    T_CAS_LAT,
    T_PUT_BUSY,
    T_GET_BUSY,
    T_COUNT
};

static const char *const g_names[T_COUNT] = {"pingpong", "put_lat", "get_lat", "put_bw",
                                             "get_bw",   "acc_lat", "fop_lat", "cas_lat",
                                             "put_busy", "get_busy"};

struct opts {
    unsigned tests;
    size_t max;
    double scale, busy_s;
    int window;
    const char *pvars[MAX_PVARS];
    int npvars;
};

static int g_rank;

static void usage(void)
{
    if (g_rank == 0)
        fprintf(stderr, "usage: bench-rma [-t tests] [-m max] [-i scale] [-w window] "
                        "[-b busy_seconds] [-p pvar]...\n");
}

static int parse(int argc, char **argv, struct opts *o)
{
    o->tests = (1u << T_COUNT) - 1;
    o->max = 4u << 20;
    o->scale = 1;
    o->busy_s = 5;
    o->window = 64;
    o->npvars = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end;

        if (v == NULL)
            return -1;
        i++;
        if (!strcmp(a, "-t")) {
            char buf[256], *tok, *save;

            o->tests = 0;
            snprintf(buf, sizeof(buf), "%s", v);
            for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                int t;

                for (t = 0; t < T_COUNT && strcmp(tok, g_names[t]); t++)
                    ;
                if (t == T_COUNT)
                    return -1;
                o->tests |= 1u << t;
            }
        } else if (!strcmp(a, "-m")) {
            double m = strtod(v, &end);

            if (*end == 'K' || *end == 'k')
                m *= 1024;
            else if (*end == 'M' || *end == 'm')
                m *= 1024 * 1024;
            if (m < 8 || m > (1u << 30))
                return -1;
            o->max = (size_t)m;
        } else if (!strcmp(a, "-i")) {
            o->scale = strtod(v, &end);
            if (*end || o->scale <= 0 || o->scale > 100)
                return -1;
        } else if (!strcmp(a, "-w")) {
            o->window = atoi(v);
            if (o->window < 1 || o->window > 4096)
                return -1;
        } else if (!strcmp(a, "-b")) {
            o->busy_s = strtod(v, &end);
            if (*end || o->busy_s <= 0 || o->busy_s > 600)
                return -1;
        } else if (!strcmp(a, "-p") && o->npvars < MAX_PVARS) {
            o->pvars[o->npvars++] = v;
        } else {
            return -1;
        }
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return v[n / 2];
}

static int iters(const struct opts *o, int base, size_t size)
{
    double n = base * o->scale;

    if (size > 8192)
        n = n * 8192 / (double)size;
    return n < 10 ? 10 : (int)n;
}

static void result(const char *test, size_t size, double v, const char *unit)
{
    printf("RESULT %s %zu %.3f %s\n", test, size, v, unit);
    fflush(stdout);
}

static void die(const char *what)
{
    fprintf(stderr, "bench-rma: rank %d: %s\n", g_rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

struct ctx {
    struct opts o;
    MPI_Win win;
    uint8_t *base; /* window memory: max + 64 bytes */
    uint8_t *buf;
    double *t;
};

/* Rank 1's part of every test: wait in MPI (passive target) until rank 0 is done. */
static void target_wait(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
}

static void pingpong(struct ctx *c)
{
    int n = iters(&c->o, 10000, 8);
    char b[8] = {0};

    for (int i = 0; i < n; i++) {
        double t0 = MPI_Wtime();

        if (g_rank == 0) {
            MPI_Send(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
        c->t[i] = MPI_Wtime() - t0;
    }
    if (g_rank == 0)
        result("pingpong", 8, median(c->t, n) * 1e6, "us");
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Put (or get) then flush, n times; check the data once. */
static void lat(struct ctx *c, enum test t, size_t size)
{
    int n = iters(&c->o, 5000, size), warm = n / 10 + 1;

    if (g_rank == 0) {
        for (size_t i = 0; i < size; i++)
            c->buf[i] = (uint8_t)(i * 7 + size);
        for (int i = -warm; i < n; i++) {
            double t0 = MPI_Wtime();

            if (t == T_PUT_LAT)
                MPI_Put(c->buf, (int)size, MPI_BYTE, 1, 64, (int)size, MPI_BYTE, c->win);
            else
                MPI_Get(c->buf, (int)size, MPI_BYTE, 1, 64, (int)size, MPI_BYTE, c->win);
            MPI_Win_flush(1, c->win);
            if (i >= 0)
                c->t[i] = MPI_Wtime() - t0;
        }
        result(g_names[t], size, median(c->t, n) * 1e6, "us");
    }
    target_wait();
    /* Rank 1 checks the last put before rank 0 moves on to the next size. */
    if (t == T_PUT_LAT && g_rank == 1)
        for (size_t i = 0; i < size; i++)
            if (c->base[64 + i] != (uint8_t)(i * 7 + size)) {
                fprintf(stderr, "bench-rma: put of %zu bytes: byte %zu is %u, not %u\n", size, i,
                        c->base[64 + i], (uint8_t)(i * 7 + size));
                die("put data corrupted");
            }
    if (t == T_PUT_LAT)
        MPI_Barrier(MPI_COMM_WORLD);
}

static void bw(struct ctx *c, enum test t, size_t size)
{
    int n = iters(&c->o, 200, size), w = c->o.window;

    if (g_rank == 0) {
        double t0 = 0;

        for (int i = -1; i < n; i++) {
            if (i == 0)
                t0 = MPI_Wtime();
            for (int k = 0; k < w; k++) {
                if (t == T_PUT_BW)
                    MPI_Put(c->buf, (int)size, MPI_BYTE, 1, 64, (int)size, MPI_BYTE, c->win);
                else
                    MPI_Get(c->buf, (int)size, MPI_BYTE, 1, 64, (int)size, MPI_BYTE, c->win);
            }
            MPI_Win_flush(1, c->win);
        }
        result(g_names[t], size, (double)size * w * n / (MPI_Wtime() - t0) / 1e6, "MB/s");
    }
    target_wait();
}

static void atomic_lat(struct ctx *c, enum test t)
{
    int n = iters(&c->o, 5000, 8), warm = n / 10 + 1;

    if (g_rank == 0) {
        double one = 1.0;
        int64_t v = 1, cmp = 0, res;

        for (int i = -warm; i < n; i++) {
            double t0 = MPI_Wtime();

            if (t == T_ACC_LAT)
                MPI_Accumulate(&one, 1, MPI_DOUBLE, 1, 0, 1, MPI_DOUBLE, MPI_SUM, c->win);
            else if (t == T_FOP_LAT)
                MPI_Fetch_and_op(&v, &res, MPI_INT64_T, 1, 0, MPI_SUM, c->win);
            else
                MPI_Compare_and_swap(&v, &cmp, &res, MPI_INT64_T, 1, 0, c->win);
            MPI_Win_flush(1, c->win);
            if (i >= 0)
                c->t[i] = MPI_Wtime() - t0;
        }
        result(g_names[t], 8, median(c->t, n) * 1e6, "us");
    }
    target_wait();
}

/* The target computes (no MPI) until rank 0's last put sets its flag, or busy_s passed. */
static void busy(struct ctx *c, enum test t)
{
    int n = iters(&c->o, 2000, 8);
    volatile uint8_t *flag = c->base + 32;

    *flag = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 0) {
        uint8_t one = 1;

        for (int i = 0; i < n; i++) {
            double t0 = MPI_Wtime();

            if (t == T_PUT_BUSY)
                MPI_Put(c->buf, 8, MPI_BYTE, 1, 64, 8, MPI_BYTE, c->win);
            else
                MPI_Get(c->buf, 8, MPI_BYTE, 1, 64, 8, MPI_BYTE, c->win);
            MPI_Win_flush(1, c->win);
            c->t[i] = MPI_Wtime() - t0;
        }
        MPI_Put(&one, 1, MPI_BYTE, 1, 32, 1, MPI_BYTE, c->win);
        MPI_Win_flush(1, c->win);
        result(g_names[t], 8, median(c->t, n) * 1e6, "us");
        /* The worst one: an operation that waited for the target's CPU shows here. */
        result(t == T_PUT_BUSY ? "put_busy_max" : "get_busy_max", 8, c->t[n - 1] * 1e6, "us");
    } else {
        double end = MPI_Wtime() + c->o.busy_s;

        while (*flag == 0 && MPI_Wtime() < end)
            ; /* computing */
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static unsigned long long pvar_value(const char *name)
{
    int n, idx = -1;
    static MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
    MPI_T_pvar_handle h;
    unsigned long long v = 0;
    int count;

    if (session == MPI_T_PVAR_SESSION_NULL && MPI_T_pvar_session_create(&session) != MPI_SUCCESS)
        return 0;
    MPI_T_pvar_get_num(&n);
    for (int i = 0; i < n && idx < 0; i++) {
        char nm[256], desc[256];
        int nl = sizeof(nm), dl = sizeof(desc), verb, cls, bind, ro, cont, at;
        MPI_Datatype dt;
        MPI_T_enum en;

        if (MPI_T_pvar_get_info(i, nm, &nl, &verb, &cls, &dt, &en, desc, &dl, &bind, &ro, &cont,
                                &at) == MPI_SUCCESS &&
            !strcmp(nm, name))
            idx = i;
    }
    if (idx < 0)
        return 0;
    if (MPI_T_pvar_handle_alloc(session, idx, NULL, &h, &count) != MPI_SUCCESS || count != 1)
        return 0;
    MPI_T_pvar_read(session, h, &v);
    MPI_T_pvar_handle_free(session, &h);
    return v;
}

int main(int argc, char **argv)
{
    struct ctx c;
    int size, provided;
    unsigned long long before[MAX_PVARS];

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (parse(argc, argv, &c.o) || size != 2) {
        usage();
        MPI_Finalize();
        return 2;
    }
    for (int i = 0; i < c.o.npvars; i++)
        before[i] = pvar_value(c.o.pvars[i]);
    c.buf = malloc(c.o.max);
    c.t = malloc(sizeof(double) * 200000);
    if (!c.buf || !c.t)
        die("out of memory");
    memset(c.buf, 1, c.o.max);
    MPI_Win_allocate((MPI_Aint)(c.o.max + 64), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &c.base, &c.win);
    memset(c.base, 0, c.o.max + 64);
    MPI_Barrier(MPI_COMM_WORLD);
    if (c.o.tests & (1u << T_PINGPONG))
        pingpong(&c);
    MPI_Win_lock_all(0, c.win);
    for (int t = T_PUT_LAT; t < T_COUNT; t++) {
        if (!(c.o.tests & (1u << t)))
            continue;
        switch (t) {
        case T_PUT_LAT:
        case T_GET_LAT:
            for (size_t s = 8; s <= c.o.max; s *= 4)
                lat(&c, (enum test)t, s);
            break;
        case T_PUT_BW:
        case T_GET_BW:
            for (size_t s = 1024; s <= c.o.max; s *= 4)
                bw(&c, (enum test)t, s);
            break;
        case T_PUT_BUSY:
        case T_GET_BUSY:
            busy(&c, (enum test)t);
            break;
        default:
            atomic_lat(&c, (enum test)t);
            break;
        }
    }
    MPI_Win_unlock_all(c.win);
    for (int i = 0; i < c.o.npvars; i++) {
        unsigned long long d = pvar_value(c.o.pvars[i]) - before[i], all[2];

        MPI_Gather(&d, 1, MPI_UNSIGNED_LONG_LONG, all, 1, MPI_UNSIGNED_LONG_LONG, 0,
                   MPI_COMM_WORLD);
        if (g_rank == 0)
            printf("PVAR %s %llu %llu\n", c.o.pvars[i], all[0], all[1]);
    }
    MPI_Win_free(&c.win);
    free(c.buf);
    free(c.t);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
