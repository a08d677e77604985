/*
 * Multi-rail striping (EFARM_RAILS): messages of EFARM_STRIPE_MIN bytes or
 * more travel as a head on rail 0 and a tail on every further rail.
 *
 * Ranks pair up (rank ^ 1). Every rank first checks its rails against
 * MPITEST_RAILS (MPI_T efarm_nm_nrails; 1: striping off); MPITEST_PEER_RAILS
 * (default the same) is its partner's, for runs whose ranks set EFARM_RAILS
 * differently: nothing is striped unless both have rails. Then, both ways:
 * A. sizes around EFARM_STRIPE_MIN and up to 4 MiB + 3: count and data, and
 *    efarm_nm_stripe_sends/_recvs count exactly the striped ones;
 * B. order: 12 messages with one tag, striped and not alternating, all
 *    started at once (MPI_Isend) and received into receives posted in order:
 *    each must be the one sent in that place (non-overtaking);
 * C. MPI_ANY_SOURCE, MPI_Probe (whole length in the status), MPI_Mprobe and
 *    MPI_Mrecv;
 * D. a receive buffer shorter than a striped message: MPI_ERR_TRUNCATE, and
 *    the next message still arrives intact (every rail was drained);
 * E. a noncontiguous receive (a vector of 3 of every 4 bytes... of ints);
 * F. MPI_Ssend of a striped message.
 * With MPITEST_STRIPE_MIN unset the threshold is 65536 (the runs set
 * EFARM_STRIPE_MIN to it).
 */
#include "efarm_mpitest.h"

#include <stdlib.h>
#include <string.h>

enum { TAG = 60, TAG_ORDER = 61, TAG_AFTER = 62 };

static int g_partner, g_rails, g_peer_rails;
static size_t g_min;
static uint8_t *g_sbuf, *g_rbuf;

static unsigned long long stripes(const char *which)
{
    return mpitest_pvar_checks() ? mpitest_pvar_read(which) : 0;
}

/* Whether a message of n bytes between the pair is striped: over the rails both have. */
static int striped(size_t n)
{
    return g_rails > 1 && g_peer_rails > 1 && n >= g_min;
}

/* One message each way between the pair, the lower rank first. */
static void exchange(size_t n, int phase)
{
    for (int turn = 0; turn < 2; turn++) {
        int i_send = (g_mpitest_rank < g_partner) == (turn == 0);
        int from = i_send ? g_mpitest_rank : g_partner;
        uint64_t seed = mpitest_seed((uint64_t)from, (uint64_t)phase, n, 0);
        unsigned long long before, after;

        mpitest_context("phase %d: %zu bytes %s rank %d", phase, n, i_send ? "to" : "from",
                        g_partner);
        if (i_send) {
            before = stripes("efarm_nm_stripe_sends");
            mpitest_fill(g_sbuf, n, seed);
            CHECK_MPI(MPI_Send(g_sbuf, (int)n, MPI_BYTE, g_partner, TAG, MPI_COMM_WORLD));
            after = stripes("efarm_nm_stripe_sends");
        } else {
            MPI_Status st;
            int count = -1;

            before = stripes("efarm_nm_stripe_recvs");
            memset(g_rbuf, 0, n + 16);
            CHECK_MPI(MPI_Recv(g_rbuf, (int)n + 16, MPI_BYTE, g_partner, TAG, MPI_COMM_WORLD, &st));
            CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
            CHECK_EQ(count, n);
            CHECK_EQ(st.MPI_SOURCE, g_partner);
            CHECK_DATA(g_rbuf, n, seed);
            CHECK_BYTES(g_rbuf + n, 16, 0);
            after = stripes("efarm_nm_stripe_recvs");
        }
        if (mpitest_pvar_checks())
            CHECK_EQ(after - before, (unsigned long long)striped(n));
    }
}

static void order(void)
{
    enum { N = 12 };
    size_t lens[N];
    MPI_Request reqs[N];
    MPI_Status sts[N];
    uint8_t *bufs[N];

    for (int i = 0; i < N; i++) {
        lens[i] = i % 2 ? g_min * 2 + (size_t)i * 4099 : 100 + (size_t)i;
        bufs[i] = mpitest_malloc(lens[i]);
    }
    for (int turn = 0; turn < 2; turn++) {
        int i_send = (g_mpitest_rank < g_partner) == (turn == 0);
        int from = i_send ? g_mpitest_rank : g_partner;

        mpitest_context("order: %s rank %d", i_send ? "to" : "from", g_partner);
        for (int i = 0; i < N; i++) {
            if (i_send) {
                mpitest_fill(bufs[i], lens[i], mpitest_seed((uint64_t)from, 70, (uint64_t)i, 0));
                CHECK_MPI(MPI_Isend(bufs[i], (int)lens[i], MPI_BYTE, g_partner, TAG_ORDER,
                                    MPI_COMM_WORLD, &reqs[i]));
            } else {
                memset(bufs[i], 0, lens[i]);
                CHECK_MPI(MPI_Irecv(bufs[i], (int)lens[i], MPI_BYTE, g_partner, TAG_ORDER,
                                    MPI_COMM_WORLD, &reqs[i]));
            }
        }
        CHECK_MPI(MPI_Waitall(N, reqs, sts));
        if (!i_send)
            for (int i = 0; i < N; i++) {
                mpitest_context("order: message %d of %zu bytes from rank %d", i, lens[i],
                                g_partner);
                CHECK_DATA(bufs[i], lens[i], mpitest_seed((uint64_t)from, 70, (uint64_t)i, 0));
            }
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    for (int i = 0; i < N; i++)
        free(bufs[i]);
}

static void probes(size_t n)
{
    uint64_t seed = mpitest_seed((uint64_t)g_mpitest_rank, 80, n, 0);
    uint64_t pseed = mpitest_seed((uint64_t)g_partner, 80, n, 0);
    MPI_Request sreq;
    MPI_Status st;
    MPI_Message msg;
    int count = -1;

    mpitest_context("probes: %zu bytes with rank %d", n, g_partner);
    mpitest_fill(g_sbuf, n, seed);
    /* Any source, after a probe that must report the whole length. */
    CHECK_MPI(MPI_Isend(g_sbuf, (int)n, MPI_BYTE, g_partner, TAG, MPI_COMM_WORLD, &sreq));
    CHECK_MPI(MPI_Probe(MPI_ANY_SOURCE, TAG, MPI_COMM_WORLD, &st));
    CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
    CHECK_EQ(count, n);
    CHECK_EQ(st.MPI_SOURCE, g_partner);
    memset(g_rbuf, 0, n);
    CHECK_MPI(MPI_Recv(g_rbuf, (int)n, MPI_BYTE, MPI_ANY_SOURCE, TAG, MPI_COMM_WORLD, &st));
    CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
    CHECK_EQ(count, n);
    CHECK_DATA(g_rbuf, n, pseed);
    CHECK_MPI(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    /* Matched probe and its receive. */
    CHECK_MPI(MPI_Isend(g_sbuf, (int)n, MPI_BYTE, g_partner, TAG, MPI_COMM_WORLD, &sreq));
    CHECK_MPI(MPI_Mprobe(g_partner, TAG, MPI_COMM_WORLD, &msg, &st));
    CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
    CHECK_EQ(count, n);
    memset(g_rbuf, 0, n);
    CHECK_MPI(MPI_Mrecv(g_rbuf, (int)n, MPI_BYTE, &msg, &st));
    CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
    CHECK_EQ(count, n);
    CHECK_DATA(g_rbuf, n, pseed);
    CHECK_MPI(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

static void truncation(size_t n)
{
    uint64_t seed = mpitest_seed((uint64_t)g_mpitest_rank, 90, n, 0);
    uint64_t pseed = mpitest_seed((uint64_t)g_partner, 90, n, 0);
    MPI_Request sreq;
    MPI_Status st;
    int err, cls;

    mpitest_context("truncation: %zu bytes into %zu with rank %d", n, n / 2, g_partner);
    mpitest_fill(g_sbuf, n, seed);
    CHECK_MPI(MPI_Isend(g_sbuf, (int)n, MPI_BYTE, g_partner, TAG, MPI_COMM_WORLD, &sreq));
    memset(g_rbuf, 0, n);
    err = MPI_Recv(g_rbuf, (int)(n / 2), MPI_BYTE, g_partner, TAG, MPI_COMM_WORLD, &st);
    MPI_Error_class(err, &cls);
    CHECK_EQ(cls, MPI_ERR_TRUNCATE);
    CHECK_DATA(g_rbuf, n / 2, pseed); /* what fitted is the message's start */
    CHECK_BYTES(g_rbuf + n / 2, n - n / 2, 0);
    CHECK_MPI(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
    /* The next message finds every rail in order. */
    exchange(n, 91);
}

static void noncontiguous(size_t n)
{
    /* The receive: n / 4 blocks of 3 ints every 4: a packed buffer, unpacked at the end. */
    int nblocks = (int)(n / (3 * sizeof(int)));
    size_t bytes = (size_t)nblocks * 3 * sizeof(int);
    int *dst = mpitest_malloc((size_t)nblocks * 4 * sizeof(int));
    uint64_t pseed = mpitest_seed((uint64_t)g_partner, 95, bytes, 0);
    MPI_Datatype vec;
    MPI_Request sreq;
    MPI_Status st;
    int count = -1;

    mpitest_context("noncontiguous: %zu bytes with rank %d", bytes, g_partner);
    CHECK_MPI(MPI_Type_vector(nblocks, 3, 4, MPI_INT, &vec));
    CHECK_MPI(MPI_Type_commit(&vec));
    mpitest_fill(g_sbuf, bytes, mpitest_seed((uint64_t)g_mpitest_rank, 95, bytes, 0));
    CHECK_MPI(MPI_Isend(g_sbuf, (int)bytes, MPI_BYTE, g_partner, TAG, MPI_COMM_WORLD, &sreq));
    CHECK_MPI(MPI_Recv(dst, 1, vec, g_partner, TAG, MPI_COMM_WORLD, &st));
    CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
    CHECK_EQ(count, bytes);
    for (int b = 0; b < nblocks; b++)
        memcpy(g_rbuf + (size_t)b * 3 * sizeof(int), dst + (size_t)b * 4, 3 * sizeof(int));
    CHECK_DATA(g_rbuf, bytes, pseed);
    CHECK_MPI(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Type_free(&vec));
    free(dst);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

static void ssend(size_t n)
{
    uint64_t seed = mpitest_seed((uint64_t)g_mpitest_rank, 97, n, 0);
    uint64_t pseed = mpitest_seed((uint64_t)g_partner, 97, n, 0);
    MPI_Request rreq;

    mpitest_context("ssend: %zu bytes with rank %d", n, g_partner);
    mpitest_fill(g_sbuf, n, seed);
    memset(g_rbuf, 0, n);
    CHECK_MPI(MPI_Irecv(g_rbuf, (int)n, MPI_BYTE, g_partner, TAG, MPI_COMM_WORLD, &rreq));
    CHECK_MPI(MPI_Ssend(g_sbuf, (int)n, MPI_BYTE, g_partner, TAG, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Wait(&rreq, MPI_STATUS_IGNORE));
    CHECK_DATA(g_rbuf, n, pseed);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

int main(int argc, char **argv)
{
    size_t sizes[8];
    size_t max = (4u << 20) + 3;

    mpitest_init(&argc, &argv, "stripe");
    if (g_mpitest_size % 2)
        mpitest_fail(__FILE__, __LINE__, "needs an even number of ranks, not %d", g_mpitest_size);
    g_partner = g_mpitest_rank ^ 1;
    g_rails = (int)mpitest_env_size("MPITEST_RAILS", 2);
    g_peer_rails = (int)mpitest_env_size("MPITEST_PEER_RAILS", (size_t)g_rails);
    g_min = mpitest_env_size("MPITEST_STRIPE_MIN", 65536);
    if (mpitest_pvar_checks())
        CHECK_EQ(mpitest_pvar_read("efarm_nm_nrails"), g_rails);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    g_sbuf = mpitest_malloc(max + 16);
    g_rbuf = mpitest_malloc(max + 16);
    sizes[0] = 1000;
    sizes[1] = g_min - 1;
    sizes[2] = g_min;
    sizes[3] = g_min + 1;
    sizes[4] = 3 * g_min + 4095;
    sizes[5] = (1u << 20) + 5;
    sizes[6] = max;
    sizes[7] = 8192 * 2; /* below the threshold, above a packet */
    for (int i = 0; i < 8; i++)
        exchange(sizes[i], 1);
    order();
    probes(g_min * 3 + 7);
    truncation(g_min * 4 + 12345);
    noncontiguous(g_min * 2 + 100);
    ssend((2u << 20) + 1);
    free(g_sbuf);
    free(g_rbuf);
    mpitest_finalize();
    return 0;
}
