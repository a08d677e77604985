/*
 * MPI_THREAD_MULTIPLE: several threads of each rank in MPI at once.
 *
 * Ranks pair up (rank ^ 1; with an odd count the last rank only joins the
 * collective checks). Each rank runs MPITEST_THREADS threads (4 by default)
 * besides the main one, all inside MPI at the same time:
 * 1. Own tags: thread t exchanges messages with thread t of the peer on tag t,
 *    at sizes in every subprotocol (0 bytes to read-sized), blocking sends
 *    and receives one way, windows of nonblocking ones the other.
 * 2. One tag for all: every thread of the lower rank sends MPITEST_THREAD_MSGS
 *    messages on one tag, each carrying (thread, sequence) in its first bytes;
 *    every thread of the higher rank receives the same number from the peer,
 *    half of them with MPI_ANY_SOURCE/MPI_ANY_TAG, the rest through
 *    MPI_Improbe/MPI_Mrecv. Every (thread, sequence) pair must arrive exactly
 *    once, with its payload intact.
 * 3. RMA: under MPI_Win_lock_all every thread puts its own slice of the
 *    peer's window and accumulates into a shared counter, then flushes;
 *    after a barrier each rank checks its window.
 * Any lost, duplicated or damaged message fails the job with the thread and
 * sequence; a hang is ended by the runner's time limit with every stack.
 * efarm's counters must show the traffic crossed efarm.
 */
#define _POSIX_C_SOURCE 200809L
#include "efarm_mpitest.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum { TAG_SHARED = 1000, NSIZES = MPITEST_PROTO_NSIZES, WINDOW = 8, MAX_THREADS = 16, HDR = 16 };

static int g_nthreads;
static int g_peer; /* -1: no partner */
static int g_lower;
static size_t g_sizes[NSIZES];
static size_t g_shared_len;
static size_t g_max;         /* largest message of phases 1 and 2 */
static int g_msgs;           /* per thread in phase 2 */
static atomic_uchar *g_seen; /* [thread][seq] arrivals, phase 2 */
static long long *g_win_mem;
static MPI_Win g_win;
static size_t g_slice; /* longs per thread in the RMA window */

static void build_sizes(void)
{
    g_max = mpitest_proto_sizes(g_sizes, mpitest_env_size("MPITEST_MAX_SIZE", 1u << 20));
}

/* Phase 1: thread t against thread t of the peer, tag t. */
static void own_tags(int t, unsigned char *buf, unsigned char *bufs[WINDOW])
{
    const int me = g_mpitest_rank;

    for (int k = 0; k < NSIZES; k++) {
        const size_t n = g_sizes[k];
        MPI_Request req[WINDOW];
        MPI_Status st, sts[WINDOW];
        int count = -1;

        /* Blocking, lower rank to higher: MPI_Send against MPI_Recv. */
        if (g_lower) {
            mpitest_fill(buf, n, mpitest_seed(me, t, k, 1));
            CHECK_MPI(MPI_Send(buf, (int)n, MPI_BYTE, g_peer, t, MPI_COMM_WORLD));
        } else {
            memset(buf, 0, n);
            CHECK_MPI(MPI_Recv(buf, (int)n, MPI_BYTE, g_peer, t, MPI_COMM_WORLD, &st));
            CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
            CHECK_EQ(count, n);
            CHECK_EQ(st.MPI_TAG, t);
            CHECK_DATA(buf, n, mpitest_seed(g_peer, t, k, 1));
        }
        /* Nonblocking windows, higher rank to lower, in order on one tag. */
        for (int w = 0; w < WINDOW; w++) {
            if (!g_lower) {
                mpitest_fill(bufs[w], n, mpitest_seed(me, t, k, 100 + w));
                CHECK_MPI(MPI_Isend(bufs[w], (int)n, MPI_BYTE, g_peer, t, MPI_COMM_WORLD, &req[w]));
            } else {
                memset(bufs[w], 0, n);
                CHECK_MPI(MPI_Irecv(bufs[w], (int)n, MPI_BYTE, g_peer, t, MPI_COMM_WORLD, &req[w]));
            }
        }
        CHECK_MPI(MPI_Waitall(WINDOW, req, sts));
        if (g_lower)
            for (int w = 0; w < WINDOW; w++)
                CHECK_DATA(bufs[w], n, mpitest_seed(g_peer, t, k, 100 + w));
    }
}

static void put_header(unsigned char *buf, int t, int seq)
{
    const uint32_t h[2] = {(uint32_t)t, (uint32_t)seq};

    memcpy(buf, h, sizeof h);
}

/* A message of phase 2 arrived: header in range, first arrival, payload intact. (The
 * order in which receiver threads return says nothing of the order they matched in.) */
static void shared_arrived(const unsigned char *buf, const MPI_Status *st, int t_recv)
{
    uint32_t h[2];
    int count = -1;

    CHECK_EQ(st->MPI_SOURCE, g_peer);
    CHECK_EQ(st->MPI_TAG, TAG_SHARED);
    CHECK_MPI(MPI_Get_count(st, MPI_BYTE, &count));
    CHECK_EQ(count, g_shared_len);
    memcpy(h, buf, sizeof h);
    if (h[0] >= (uint32_t)g_nthreads || h[1] >= (uint32_t)g_msgs)
        mpitest_fail(__FILE__, __LINE__, "receiver thread %d: header (%u, %u) out of range", t_recv,
                     h[0], h[1]);
    if (atomic_fetch_add(&g_seen[h[0] * (size_t)g_msgs + h[1]], 1) != 0)
        mpitest_fail(__FILE__, __LINE__, "receiver thread %d: message (%u, %u) arrived twice",
                     t_recv, h[0], h[1]);
    CHECK_DATA(buf + HDR, g_shared_len - HDR, mpitest_seed(g_peer, h[0], h[1], 7));
}

/* Phase 2: every thread on one tag. */
static void shared_tag(int t, unsigned char *buf)
{
    for (int i = 0; i < g_msgs; i++) {
        MPI_Status st;

        if (g_lower) {
            put_header(buf, t, i);
            memset(buf + 8, 0, HDR - 8);
            mpitest_fill(buf + HDR, g_shared_len - HDR, mpitest_seed(g_mpitest_rank, t, i, 7));
            CHECK_MPI(
                MPI_Send(buf, (int)g_shared_len, MPI_BYTE, g_peer, TAG_SHARED, MPI_COMM_WORLD));
        } else if (i % 2 == 0) {
            CHECK_MPI(MPI_Recv(buf, (int)g_shared_len, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
                               MPI_COMM_WORLD, &st));
            shared_arrived(buf, &st, t);
        } else {
            MPI_Message msg = MPI_MESSAGE_NULL;
            int flag = 0;

            while (!flag)
                CHECK_MPI(MPI_Improbe(g_peer, TAG_SHARED, MPI_COMM_WORLD, &flag, &msg, &st));
            CHECK_MPI(MPI_Mrecv(buf, (int)g_shared_len, MPI_BYTE, &msg, &st));
            shared_arrived(buf, &st, t);
        }
    }
}

/* Phase 3: thread t puts its slice of the peer's window and adds to the counter. */
static void rma(int t)
{
    long long *src = malloc(g_slice * sizeof *src);

    CHECK(src != NULL);
    for (size_t i = 0; i < g_slice; i++)
        src[i] = ((long long)g_mpitest_rank << 40) | ((long long)t << 24) | (long long)i;
    for (int r = 0; r < 4; r++) {
        const long long one = 1;

        CHECK_MPI(MPI_Put(src, (int)g_slice, MPI_LONG_LONG, g_peer,
                          (MPI_Aint)(1 + (size_t)t * g_slice), (int)g_slice, MPI_LONG_LONG, g_win));
        CHECK_MPI(
            MPI_Accumulate(&one, 1, MPI_LONG_LONG, g_peer, 0, 1, MPI_LONG_LONG, MPI_SUM, g_win));
        CHECK_MPI(MPI_Win_flush(g_peer, g_win));
    }
    free(src);
}

struct thread_arg {
    int t;
    int phase;
};

static void *thread_main(void *p)
{
    const struct thread_arg *a = p;
    const size_t max = g_max > g_shared_len ? g_max : g_shared_len;
    unsigned char *buf = malloc(max ? max : 1);
    unsigned char *bufs[WINDOW];

    CHECK(buf != NULL);
    for (int w = 0; w < WINDOW; w++) {
        bufs[w] = malloc(max ? max : 1);
        CHECK(bufs[w] != NULL);
    }
    if (a->phase == 1)
        own_tags(a->t, buf, bufs);
    else if (a->phase == 2)
        shared_tag(a->t, buf);
    else
        rma(a->t);
    for (int w = 0; w < WINDOW; w++)
        free(bufs[w]);
    free(buf);
    return NULL;
}

static void run_phase(int phase)
{
    pthread_t th[MAX_THREADS];
    struct thread_arg args[MAX_THREADS];

    mpitest_context("phase %d with %d threads", phase, g_nthreads);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (g_peer >= 0) {
        for (int t = 0; t < g_nthreads; t++) {
            args[t] = (struct thread_arg){.t = t, .phase = phase};
            CHECK_EQ(pthread_create(&th[t], NULL, thread_main, &args[t]), 0);
        }
        for (int t = 0; t < g_nthreads; t++)
            CHECK_EQ(pthread_join(th[t], NULL), 0);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

int main(int argc, char **argv)
{
    struct mpitest_counters c0, c1, d;
    long long total_pkts = 0, my_pkts;

    mpitest_init_thread(&argc, &argv, "threads", MPI_THREAD_MULTIPLE);
    g_nthreads = (int)mpitest_env_size("MPITEST_THREADS", 4);
    CHECK(g_nthreads >= 1 && g_nthreads <= MAX_THREADS);
    g_msgs = (int)mpitest_env_size("MPITEST_THREAD_MSGS", 200);
    CHECK(g_msgs >= 1);
    build_sizes();
    g_shared_len = HDR + g_mpitest_limits.eager_lo / 2;
    g_peer = g_mpitest_rank ^ 1;
    if (g_peer >= g_mpitest_size)
        g_peer = -1;
    g_lower = g_mpitest_rank < g_peer;
    g_seen = calloc((size_t)g_nthreads * (size_t)g_msgs, sizeof *g_seen);
    CHECK(g_seen != NULL);

    mpitest_counters_read(&c0);
    run_phase(1);
    run_phase(2);
    if (g_peer >= 0 && !g_lower)
        for (int t = 0; t < g_nthreads; t++)
            for (int i = 0; i < g_msgs; i++)
                if (atomic_load(&g_seen[(size_t)t * g_msgs + i]) != 1)
                    mpitest_fail(__FILE__, __LINE__, "message (%d, %d) never arrived", t, i);

    /* Phase 3: slot 0 counts the accumulates, then one slice per thread. */
    g_slice = mpitest_env_size("MPITEST_THREAD_SLICE", 4096);
    CHECK_MPI(MPI_Win_allocate((MPI_Aint)((1 + g_nthreads * g_slice) * sizeof(long long)),
                               sizeof(long long), MPI_INFO_NULL, MPI_COMM_WORLD, &g_win_mem,
                               &g_win));
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, g_mpitest_rank, 0, g_win));
    memset(g_win_mem, 0, (1 + g_nthreads * g_slice) * sizeof(long long));
    CHECK_MPI(MPI_Win_unlock(g_mpitest_rank, g_win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_lock_all(0, g_win));
    run_phase(3);
    CHECK_MPI(MPI_Win_unlock_all(g_win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, g_mpitest_rank, 0, g_win));
    if (g_peer >= 0) {
        mpitest_context("RMA window of rank %d", g_mpitest_rank);
        CHECK_EQ(g_win_mem[0], 4 * g_nthreads);
        for (int t = 0; t < g_nthreads; t++)
            for (size_t i = 0; i < g_slice; i++) {
                const long long want =
                    ((long long)g_peer << 40) | ((long long)t << 24) | (long long)i;
                if (g_win_mem[1 + (size_t)t * g_slice + i] != want)
                    mpitest_fail(__FILE__, __LINE__,
                                 "window slot of thread %d, element %zu: %lld, not %lld", t, i,
                                 g_win_mem[1 + (size_t)t * g_slice + i], want);
            }
    }
    CHECK_MPI(MPI_Win_unlock(g_mpitest_rank, g_win));
    CHECK_MPI(MPI_Win_free(&g_win));

    mpitest_counters_read(&c1);
    mpitest_counters_diff(&c1, &c0, &d);
    if (g_peer >= 0) {
        /* Phase 1 and 2 messages of this rank through efarm's own sends and receives. */
        const unsigned long long sent =
            (unsigned long long)g_nthreads * NSIZES * (g_lower ? 1 : WINDOW) +
            (g_lower ? (unsigned long long)g_nthreads * g_msgs : 0);
        CHECK_COUNTER(d.nm_send_msgs, >=, sent);
    }
    my_pkts = (long long)d.tx_pkts;
    CHECK_MPI(MPI_Allreduce(&my_pkts, &total_pkts, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    CHECK_COUNTER(total_pkts, >, 0);
    free(g_seen);
    mpitest_finalize();
    return 0;
}
