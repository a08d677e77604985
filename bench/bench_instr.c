/*
 * bench-instr: the phases bench/run-instr-bench.sh counts instructions in,
 * under valgrind's callgrind. Two ranks ping-pong MPI_Send/MPI_Recv of SIZE
 * bytes (8 by default); callgrind's client requests zero its counts before a
 * phase and dump them after it, so each dump holds one phase of one rank and
 * nothing of start-up, warm-up or the phase bookkeeping:
 *
 *   rt-N    N round trips (every -n count: the script fits with two);
 *   idle-R  rank R receives one message its partner sends only after
 *           sleeping DELAY ms: one receive and many progress calls that find
 *           nothing, which gives the cost of an empty poll.
 *
 * Before and after each phase a rank reads the netmod's MPI_T counters
 * efarm_nm_progress_calls and efarm_nm_progress_idle (any MPI without them
 * reports -1) and prints, on stdout,
 *
 *   PHASE <rank> <pid> <name> <round trips> <progress calls> <idle calls>
 *
 * Outside valgrind the client requests do nothing and the program still runs
 * (a smoke test of the phases themselves). Written against MPI-3.1 and
 * valgrind's callgrind.h only.
 *
 *   mpiexec -n 2 valgrind --tool=callgrind ... bench-instr [-n 200,1000] [-s 8] [-d 300]
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

#define MAX_COUNTS 4
#define WARMUP     200
#define MAX_SIZE   (1 << 20)

struct counters {
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handle[2];
    int found[2];
};

static const char *const counter_names[2] = {"efarm_nm_progress_calls", "efarm_nm_progress_idle"};

static void counters_open(struct counters *c)
{
    MPI_T_pvar_session_create(&c->session);
    for (int i = 0; i < 2; i++) {
        int index, count;

        c->found[i] = MPI_T_pvar_get_index(counter_names[i], MPI_T_PVAR_CLASS_COUNTER, &index) ==
                          MPI_SUCCESS &&
                      MPI_T_pvar_handle_alloc(c->session, index, NULL, &c->handle[i], &count) ==
                          MPI_SUCCESS &&
                      count == 1;
    }
}

/* The counter's value, or -1 when this MPI has no such counter. */
static long long counter_read(struct counters *c, int i)
{
    unsigned long long v;

    if (!c->found[i] || MPI_T_pvar_read(c->session, c->handle[i], &v) != MPI_SUCCESS)
        return -1;
    return (long long)v;
}

static void phase_print(struct counters *c, int rank, const char *name, int iters,
                        const long long before[2])
{
    long long after[2];

    for (int i = 0; i < 2; i++) {
        long long v = counter_read(c, i);

        after[i] = v < 0 || before[i] < 0 ? -1 : v - before[i];
    }
    printf("PHASE %d %ld %s %d %lld %lld\n", rank, (long)getpid(), name, iters, after[0], after[1]);
    fflush(stdout);
}

/* Whether the receives take MPI_ANY_SOURCE instead of the peer's rank (-a). */
static int g_any_source;

static void round_trips(int rank, char *buf, int size, int iters)
{
    int peer = 1 - rank, source = g_any_source ? MPI_ANY_SOURCE : peer;

    for (int i = 0; i < iters; i++) {
        if (rank == 0) {
            MPI_Send(buf, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, size, MPI_BYTE, source, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, size, MPI_BYTE, source, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        }
    }
}

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};

    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        continue;
}

static int usage(int rank)
{
    if (rank == 0)
        fprintf(stderr,
                "usage: mpiexec -n 2 bench-instr [-n N1,N2,...] [-s SIZE] [-d MS] [-a]\n"
                "  -n  round trips per measured phase (default 200,1000; at most %d)\n"
                "  -s  message size in bytes (default 8; at most %d)\n"
                "  -d  the idle phase's sender delay in ms (default 300)\n"
                "  -a  receive with MPI_ANY_SOURCE\n",
                MAX_COUNTS, MAX_SIZE);
    return 2;
}

/* Parses a positive int no larger than max; -1 when it is not one. */
static int parse_int(const char *s, char **end, int max)
{
    long v;

    errno = 0;
    v = strtol(s, end, 10);
    if (errno || *end == s || v < 1 || v > max)
        return -1;
    return (int)v;
}

int main(int argc, char **argv)
{
    int rank, nranks, size = 8, delay_ms = 300, counts[MAX_COUNTS] = {200, 1000}, ncounts = 2;
    struct counters c;
    char *buf, *end;
    int opt;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    while ((opt = getopt(argc, argv, "n:s:d:a")) != -1) {
        const char *p = optarg;

        switch (opt) {
        case 'n':
            ncounts = 0;
            do {
                if (ncounts == MAX_COUNTS ||
                    (counts[ncounts++] = parse_int(p, &end, 100000000)) < 0 ||
                    (*end && *end != ','))
                    MPI_Abort(MPI_COMM_WORLD, usage(rank));
                p = end + 1;
            } while (*end);
            break;
        case 's':
            if ((size = parse_int(optarg, &end, MAX_SIZE)) < 0 || *end)
                MPI_Abort(MPI_COMM_WORLD, usage(rank));
            break;
        case 'd':
            if ((delay_ms = parse_int(optarg, &end, 60000)) < 0 || *end)
                MPI_Abort(MPI_COMM_WORLD, usage(rank));
            break;
        case 'a':
            g_any_source = 1;
            break;
        default:
            MPI_Abort(MPI_COMM_WORLD, usage(rank));
        }
    }
    if (nranks != 2) {
        if (rank == 0)
            fprintf(stderr, "bench-instr: needs exactly 2 ranks (has %d)\n", nranks);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    {
        int provided;

        MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    }
    counters_open(&c);
    buf = calloc(1, (size_t)size);
    if (!buf)
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (rank == 0 && !RUNNING_ON_VALGRIND)
        fprintf(stderr, "bench-instr: not under valgrind: phases run, nothing is counted\n");

    round_trips(rank, buf, size, WARMUP);
    /*
     * One message each way that arrives before its receive is posted: an
     * engine's first unexpected message may create its pool of records (efarm
     * allocates its first chunk then), once per process; no phase may count it.
     */
    for (int r = 0; r < 2; r++) {
        if (rank == r)
            MPI_Send(buf, size, MPI_BYTE, 1 - r, 3, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1 - r)
            MPI_Recv(buf, size, MPI_BYTE, r, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    for (int k = 0; k < ncounts; k++) {
        long long before[2];
        char name[32];

        snprintf(name, sizeof(name), "rt-%d", counts[k]);
        MPI_Barrier(MPI_COMM_WORLD);
        before[0] = counter_read(&c, 0);
        before[1] = counter_read(&c, 1);
        CALLGRIND_ZERO_STATS;
        round_trips(rank, buf, size, counts[k]);
        CALLGRIND_DUMP_STATS_AT(name);
        phase_print(&c, rank, name, counts[k], before);
    }
    for (int measured = 0; measured < 2; measured++) {
        long long before[2];
        char name[32];

        snprintf(name, sizeof(name), "idle-%d", measured);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == measured) {
            before[0] = counter_read(&c, 0);
            before[1] = counter_read(&c, 1);
            CALLGRIND_ZERO_STATS;
            MPI_Recv(buf, size, MPI_BYTE, 1 - rank, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CALLGRIND_DUMP_STATS_AT(name);
            phase_print(&c, rank, name, 0, before);
        } else {
            sleep_ms(delay_ms);
            MPI_Send(buf, size, MPI_BYTE, measured, 2, MPI_COMM_WORLD);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(buf);
    MPI_T_pvar_session_free(&c.session);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
