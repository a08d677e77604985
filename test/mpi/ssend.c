/*
 * Synchronous send: MPI_Issend completes only after the receive matched.
 *
 * Ranks pair up (rank ^ 1); the lower rank sends. For sizes in every
 * subprotocol (0 bytes to read-sized):
 * A. The sender starts MPI_Issend while the receiver sits in a receive for a
 *    different tag (GO). For MPITEST_SSEND_HOLD_MS (default 200 ms) the
 *    sender's MPI_Test must say "not complete" although the message has had
 *    all that time to arrive; then the sender sends GO, the receiver posts
 *    the data receive, and MPI_Wait on the Issend returns.
 * B. The same, but the receiver first MPI_Probes the message and tells the
 *    sender so (PROBED): a probe does not match, so the Issend must still stay
 *    incomplete for the hold time after PROBED arrived.
 * C. MPI_Ssend into a receive posted beforehand completes.
 * No barrier is used: the sender learns the receiver's state only through
 * messages of other tags. efarm's counters must show the data message (and
 * GO) sent by the engine, by a subprotocol its size allows.
 */
#include "efarm_mpitest.h"

#include <stdlib.h>
#include <string.h>

enum { TAG_DATA = 30, TAG_GO = 31, TAG_PROBED = 32, TAG_POSTED = 33 };

#define NSIZES 6
static size_t g_sizes[NSIZES];
static double g_hold;

static uint64_t seed_of(int from, int phase, int i)
{
    return mpitest_seed((uint64_t)from, 30, (uint64_t)phase, (uint64_t)i);
}

/* MPI_Test on req for `seconds`: it must stay incomplete all along. */
static void hold_incomplete(MPI_Request *req, double seconds)
{
    double t0 = MPI_Wtime();
    long tests = 0;

    while (MPI_Wtime() - t0 < seconds) {
        MPI_Status st;
        int flag = -1;

        CHECK_MPI(MPI_Test(req, &flag, &st));
        if (flag)
            mpitest_fail(__FILE__, __LINE__,
                         "MPI_Issend completed after %.3f s and %ld tests, before the receiver "
                         "posted a matching receive",
                         MPI_Wtime() - t0, tests);
        tests++;
    }
}

static void sender(int partner, int phase, int i, size_t n)
{
    struct mpitest_counters before, after, d;
    const size_t lens[2] = {n, 0};
    uint8_t *buf = mpitest_malloc(n);
    MPI_Request req;
    MPI_Status st;

    mpitest_fill(buf, n, seed_of(g_mpitest_rank, phase, i));
    if (phase == 2) { /* C: the receive is already posted */
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, partner, TAG_POSTED, MPI_COMM_WORLD, &st));
        mpitest_counters_read(&before);
        CHECK_MPI(MPI_Ssend(buf, (int)n, MPI_BYTE, partner, TAG_DATA, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, partner, TAG_GO, MPI_COMM_WORLD));
    } else {
        mpitest_counters_read(&before);
        CHECK_MPI(MPI_Issend(buf, (int)n, MPI_BYTE, partner, TAG_DATA, MPI_COMM_WORLD, &req));
        if (phase == 1) { /* B: wait for PROBED, testing the Issend all along */
            MPI_Request probed;
            int flag = 0;
            double t0 = MPI_Wtime();

            CHECK_MPI(MPI_Irecv(NULL, 0, MPI_BYTE, partner, TAG_PROBED, MPI_COMM_WORLD, &probed));
            while (!flag) {
                int done = -1;

                CHECK_MPI(MPI_Test(&req, &done, &st));
                CHECK_EQ(done, 0);
                CHECK_MPI(MPI_Test(&probed, &flag, &st));
                CHECK(MPI_Wtime() - t0 < 60.0);
            }
        }
        hold_incomplete(&req, g_hold);
        CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, partner, TAG_GO, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Wait(&req, &st));
    }
    mpitest_counters_read(&after);
    mpitest_counters_diff(&after, &before, &d);
    CHECK_SENT_SIZES(&d, lens, 2);
    CHECK_COUNTER(d.proto_dc, <=, 1);
    free(buf);
}

static void receiver(int partner, int phase, int i, size_t n)
{
    uint8_t *buf = mpitest_malloc(n + 16);
    MPI_Request req;
    MPI_Status st;
    int count = -1;

    if (phase == 2) {
        CHECK_MPI(MPI_Irecv(buf, (int)n + 16, MPI_BYTE, partner, TAG_DATA, MPI_COMM_WORLD, &req));
        CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, partner, TAG_POSTED, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Wait(&req, &st));
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, partner, TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
        if (phase == 1) {
            CHECK_MPI(MPI_Probe(partner, TAG_DATA, MPI_COMM_WORLD, &st));
            CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
            CHECK_EQ(count, n);
            CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, partner, TAG_PROBED, MPI_COMM_WORLD));
        }
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, partner, TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_MPI(
            MPI_Recv(buf, (int)n + 16, MPI_BYTE, MPI_ANY_SOURCE, TAG_DATA, MPI_COMM_WORLD, &st));
    }
    CHECK_EQ(st.MPI_SOURCE, partner);
    CHECK_EQ(st.MPI_TAG, TAG_DATA);
    CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
    CHECK_EQ(count, n);
    CHECK_DATA(buf, n, seed_of(partner, phase, i));
    free(buf);
}

int main(int argc, char **argv)
{
    const struct mpitest_limits *l = &g_mpitest_limits;
    static const char *const phase_names[] = {"hold until GO", "hold after a probe",
                                              "receive posted first"};
    size_t max;
    int partner;

    mpitest_init(&argc, &argv, "ssend");
    max = mpitest_env_size("MPITEST_MAX_SIZE", 4u << 20);
    CHECK(max <= (size_t)1 << 30);
    g_hold = (double)mpitest_env_size("MPITEST_SSEND_HOLD_MS", 200) / 1000.0;
    {
        const size_t s[NSIZES] = {
            0, 1, l->eager_lo, l->eager_hi + 1, l->medium_max + 1, l->read_min + 3};

        for (int i = 0; i < NSIZES; i++)
            g_sizes[i] = s[i] < max ? s[i] : max;
    }
    partner = g_mpitest_rank ^ 1;
    if (partner < g_mpitest_size) {
        for (int phase = 0; phase < 3; phase++)
            for (int i = 0; i < NSIZES; i++) {
                mpitest_context("%s, %zu bytes", phase_names[phase], g_sizes[i]);
                if (g_mpitest_rank < partner)
                    sender(partner, phase, i, g_sizes[i]);
                else
                    receiver(partner, phase, i, g_sizes[i]);
            }
    }
    mpitest_finalize();
    return 0;
}
