/*
 * Several VCIs (MPICH 4.3 or 5.0 with per-VCI critical sections and
 * MPIR_CVAR_CH4_NUM_VCIS > 1): one engine endpoint per VCI.
 *
 * Ranks pair up (rank ^ 1; with an odd count the last rank only joins the
 * collectives). Each rank runs MPITEST_THREADS threads (4 by default), and
 * thread t works on a duplicate of MPI_COMM_WORLD of its own, which MPICH
 * maps to a VCI by the communicator (its default VCI method), so the threads'
 * traffic spreads over the VCIs. Each thread, for MPITEST_ROUNDS rounds:
 * 1. the lower rank sends messages of every subprotocol's size on tags
 *    0, 1, 2, ...; the higher rank receives them with MPI_ANY_TAG and must see
 *    the tags in sending order (MPI's non-overtaking rule within a
 *    communicator) and every payload intact;
 * 2. the higher rank answers each size back through MPI_Improbe/MPI_Mrecv on
 *    the other side, with MPI_ANY_SOURCE;
 * 3. a synchronous send and an allreduce on the thread's communicator.
 * With MPITEST_STREAMS=1 (MPICH 4.1 and later, reserved VCIs:
 * MPIR_CVAR_CH4_RESERVE_VCIS), the main thread then makes an MPIX_Stream and
 * a stream communicator over each pair, which MPICH maps to a reserved VCI of
 * its own, and exchanges every size on it both ways.
 * Then, with MPI_T: efarm_nm_vcis must equal the VCIs MPICH asked for (the
 * expected count: MPITEST_VCIS, else MPIR_CVAR_CH4_NUM_VCIS, else 1) and,
 * with more than one, efarm_nm_vcis_used must be more than one (the traffic
 * did not all take VCI 0), with a stream more than two.
 */
#define _POSIX_C_SOURCE 200809L
#include "efarm_mpitest.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum { NSIZES = MPITEST_PROTO_NSIZES, MAX_THREADS = 16 };

static int g_nthreads, g_rounds, g_peer, g_lower;
static size_t g_sizes[NSIZES];
static size_t g_max; /* the largest of g_sizes: not always the last (medium's bound may pass the
                        read threshold) */
static MPI_Comm g_comm[MAX_THREADS];

static uint64_t seed_of(int t, int round, int k, int dir)
{
    return mpitest_seed((uint64_t)t, (uint64_t)round, (uint64_t)k, (uint64_t)dir);
}

static void *worker(void *arg)
{
    const int t = (int)(intptr_t)arg;
    MPI_Comm c = g_comm[t];
    size_t max = g_max;
    unsigned char *buf = mpitest_malloc(max ? max : 1);

    for (int r = 0; r < g_rounds; r++) {
        /* 1. In order, on ascending tags, received with MPI_ANY_TAG. */
        for (int k = 0; k < NSIZES; k++) {
            if (g_lower) {
                mpitest_fill(buf, g_sizes[k], seed_of(t, r, k, 0));
                CHECK_MPI(MPI_Send(buf, (int)g_sizes[k], MPI_BYTE, g_peer, k, c));
            } else {
                MPI_Status st;
                int count;

                memset(buf, 0, g_sizes[k]);
                CHECK_MPI(MPI_Recv(buf, (int)max, MPI_BYTE, g_peer, MPI_ANY_TAG, c, &st));
                CHECK_EQ(st.MPI_TAG, k);
                CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
                CHECK_EQ((size_t)count, g_sizes[k]);
                CHECK_DATA(buf, g_sizes[k], seed_of(t, r, k, 0));
            }
        }
        /* 2. Back, matched by MPI_Improbe with MPI_ANY_SOURCE. */
        for (int k = 0; k < NSIZES; k++) {
            if (!g_lower) {
                mpitest_fill(buf, g_sizes[k], seed_of(t, r, k, 1));
                CHECK_MPI(MPI_Send(buf, (int)g_sizes[k], MPI_BYTE, g_peer, 100 + k, c));
            } else {
                MPI_Message msg;
                MPI_Status st;
                int flag = 0, count;

                while (!flag)
                    CHECK_MPI(MPI_Improbe(MPI_ANY_SOURCE, 100 + k, c, &flag, &msg, &st));
                CHECK_EQ(st.MPI_SOURCE, g_peer);
                CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
                CHECK_EQ((size_t)count, g_sizes[k]);
                memset(buf, 0, g_sizes[k]);
                CHECK_MPI(MPI_Mrecv(buf, count, MPI_BYTE, &msg, MPI_STATUS_IGNORE));
                CHECK_DATA(buf, g_sizes[k], seed_of(t, r, k, 1));
            }
        }
        /* 3. A synchronous send and a collective on the thread's communicator. */
        {
            int v = r * MAX_THREADS + t, got = -1, sum = 0, one = 1;

            if (g_lower)
                CHECK_MPI(MPI_Ssend(&v, 1, MPI_INT, g_peer, 200, c));
            else
                CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, g_peer, 200, c, MPI_STATUS_IGNORE));
            if (!g_lower)
                CHECK_EQ(got, v);
            CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c));
            CHECK_EQ(sum, 2);
        }
    }
    free(buf);
    return NULL;
}

/* An MPIX_Stream communicator over the pair: every size both ways. */
static void stream_phase(MPI_Comm pair)
{
#ifdef MPIX_STREAM_NULL
    size_t max = g_max;
    unsigned char *buf = mpitest_malloc(max ? max : 1);
    MPIX_Stream stream;
    MPI_Comm sc;

    CHECK_MPI(MPIX_Stream_create(MPI_INFO_NULL, &stream));
    CHECK_MPI(MPIX_Stream_comm_create(pair, stream, &sc));
    for (int dir = 0; dir < 2; dir++) {
        for (int k = 0; k < NSIZES; k++) {
            if (g_lower == (dir == 0)) {
                mpitest_fill(buf, g_sizes[k], seed_of(MAX_THREADS, dir, k, 2));
                CHECK_MPI(MPI_Send(buf, (int)g_sizes[k], MPI_BYTE, g_peer, k, sc));
            } else {
                memset(buf, 0, g_sizes[k]);
                CHECK_MPI(
                    MPI_Recv(buf, (int)g_sizes[k], MPI_BYTE, g_peer, k, sc, MPI_STATUS_IGNORE));
                CHECK_DATA(buf, g_sizes[k], seed_of(MAX_THREADS, dir, k, 2));
            }
        }
    }
    CHECK_MPI(MPI_Comm_free(&sc));
    CHECK_MPI(MPIX_Stream_free(&stream));
    free(buf);
#else
    (void)pair;
    CHECK(!"MPITEST_STREAMS=1 needs MPIX_Stream (MPICH 4.1 and later)");
#endif
}

int main(int argc, char **argv)
{
    pthread_t th[MAX_THREADS];
    const char *env;
    int expect_vcis;
    bool paired; /* an odd count's last rank only joins the collectives, on VCI 0 */

    mpitest_init_thread(&argc, &argv, "vcis", MPI_THREAD_MULTIPLE);
    g_nthreads = (int)mpitest_env_size("MPITEST_THREADS", 4);
    g_rounds = (int)mpitest_env_size("MPITEST_ROUNDS", 20);
    CHECK(g_nthreads >= 1 && g_nthreads <= MAX_THREADS);
    env = getenv("MPITEST_VCIS");
    if (env == NULL)
        env = getenv("MPIR_CVAR_CH4_NUM_VCIS");
    expect_vcis = env ? atoi(env) : 1;
    g_max = mpitest_proto_sizes(g_sizes, mpitest_env_size("MPITEST_MAX_SIZE", 256 * 1024));

    g_peer = g_mpitest_rank ^ 1;
    g_lower = !(g_mpitest_rank & 1);
    paired = g_peer < g_mpitest_size;
    /*
     * One communicator per thread for each pair of ranks, made in the same
     * order everywhere; a rank without a partner gets none.
     */
    for (int t = 0; t < g_nthreads; t++) {
        MPI_Comm pair;

        CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD,
                                 g_peer < g_mpitest_size ? g_mpitest_rank / 2 : MPI_UNDEFINED,
                                 g_mpitest_rank, &pair));
        g_comm[t] = pair;
    }
    if (paired) {
        g_peer = g_lower ? 1 : 0; /* the partner's rank in the pair's communicator */
        for (int t = 0; t < g_nthreads; t++)
            CHECK(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) == 0);
        for (int t = 0; t < g_nthreads; t++)
            CHECK(pthread_join(th[t], NULL) == 0);
        if (mpitest_env_size("MPITEST_STREAMS", 0))
            stream_phase(g_comm[0]);
    }
    for (int t = 0; t < g_nthreads; t++)
        if (g_comm[t] != MPI_COMM_NULL)
            CHECK_MPI(MPI_Comm_free(&g_comm[t]));

    if (mpitest_pvar_checks()) {
        unsigned long long vcis = mpitest_pvar_read("efarm_nm_vcis");
        unsigned long long used = mpitest_pvar_read("efarm_nm_vcis_used");

        mpitest_context("VCIs: %llu, %llu used, %d expected", vcis, used, expect_vcis);
        CHECK_EQ(vcis, (unsigned long long)expect_vcis);
        if (expect_vcis > 1 && g_nthreads > 1 && paired)
            CHECK_GE(used, 2ull);
        /* The stream's reserved VCI carried messages besides the implicit ones. */
        if (mpitest_env_size("MPITEST_STREAMS", 0) && expect_vcis > 2 && g_nthreads > 1 && paired)
            CHECK_GE(used, 3ull);
        if (g_mpitest_rank == 0)
            printf("vcis: %llu VCIs, %llu carried messages (rank 0)\n", vcis, used);
    }
    mpitest_finalize();
    return 0;
}
