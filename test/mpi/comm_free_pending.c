/*
 * A communicator freed while a receive on it is pending, the receive freed too.
 *
 * Ranks pair up (rank ^ 1); the lower rank sends. Each round both ranks
 * MPI_Comm_dup MPI_COMM_WORLD. The receiver posts a receive on the duplicate,
 * frees the request and the communicator (MPI allows both: the receive still
 * completes and the communicator goes when it has), then receives AFTER on
 * MPI_COMM_WORLD. The sender sends the data on the duplicate, frees it and
 * sends AFTER.
 *
 * The request holds the communicator's last reference, so the receive's
 * completion, inside efarm's progress, frees the communicator, and MPICH then
 * probes it for unmatched messages: a progress call from inside one of efarm's
 * callbacks. That call must be no error (before, it was one: the communicator's
 * release failed halfway and its context id was never given back, so after
 * about 2,000 rounds MPI_Comm_dup ran out of them). So:
 * - ROUNDS (MPITEST_ROUNDS, default 2500: more than MPICH's 2048 context ids)
 *   rounds all succeed, and a last MPI_Comm_dup works;
 * - each round's data arrives intact. MPI promises that the freed receive
 *   completes, not when: after AFTER the receiver drives progress (MPI_Iprobe)
 *   until the buffer holds the data, for up to 30 s. With one VCI efarm
 *   delivers a peer's messages in sending order whatever the communicator, so
 *   the data is there at once; with several (vcis.c) the duplicate's messages
 *   may travel on another VCI's endpoint and land later;
 * - efarm's counter efarm_progress_nested shows such calls happened on the
 *   receivers (else the test would not test its case), on MPICH 4.1 and
 *   later: the probe came with 4.1 (pmodels/mpich#6186); on 4.0 the rounds
 *   run without it.
 */
#define _POSIX_C_SOURCE 200809L
#include "efarm_mpitest.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { TAG_DATA = 40, TAG_AFTER = 41, SLOTS = 8, LEN = 64 };

/* Whether this MPICH probes a communicator it frees (4.1 and later). */
static int mpich_probes_at_free(void)
{
    return mpitest_mpich_version() >= 401;
}

static uint64_t seed_of(int from, int round)
{
    return mpitest_seed((uint64_t)from, TAG_DATA, (uint64_t)round, 0);
}

/* Drive progress until buf holds want (a freed receive's data), for up to 30 s. */
static void await_data(const volatile uint8_t *buf, const uint8_t *want)
{
    struct timespec t0, t;
    int flag;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int same = 1;

        for (size_t i = 0; i < LEN && same; i++)
            same = buf[i] == want[i];
        if (same)
            return;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 30)
            return; /* CHECK_DATA reports what is there */
        CHECK_MPI(
            MPI_Iprobe(MPI_ANY_SOURCE, TAG_AFTER + 1, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
    }
}

int main(int argc, char **argv)
{
    static uint8_t slot[SLOTS][LEN];
    uint8_t out[LEN];
    int rounds = (int)mpitest_env_size("MPITEST_ROUNDS", 2500);
    unsigned long long nested0;

    mpitest_init(&argc, &argv, "comm_free_pending");
    int peer = g_mpitest_rank ^ 1;
    int sender = !(g_mpitest_rank & 1);

    if (peer >= g_mpitest_size)
        peer = MPI_PROC_NULL; /* an odd last rank only takes part in the dups */
    nested0 = mpitest_pvar_checks() ? mpitest_pvar_read("efarm_progress_nested") : 0;
    for (int r = 0; r < rounds; r++) {
        MPI_Comm c;
        MPI_Request req;
        int token = 0;

        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
        if (peer == MPI_PROC_NULL) {
            CHECK_MPI(MPI_Comm_free(&c));
            continue;
        }
        if (sender) {
            mpitest_fill(out, LEN, seed_of(g_mpitest_rank, r));
            CHECK_MPI(MPI_Send(out, LEN, MPI_BYTE, peer, TAG_DATA, c));
            CHECK_MPI(MPI_Comm_free(&c));
            CHECK_MPI(MPI_Send(&token, 1, MPI_INT, peer, TAG_AFTER, MPI_COMM_WORLD));
        } else {
            uint8_t *buf = slot[r % SLOTS];

            mpitest_context("round %d", r);
            memset(buf, 0, LEN);
            CHECK_MPI(MPI_Irecv(buf, LEN, MPI_BYTE, peer, TAG_DATA, c, &req));
            CHECK_MPI(MPI_Request_free(&req));
            CHECK(req == MPI_REQUEST_NULL);
            CHECK_MPI(MPI_Comm_free(&c));
            CHECK(c == MPI_COMM_NULL);
            CHECK_MPI(
                MPI_Recv(&token, 1, MPI_INT, peer, TAG_AFTER, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            mpitest_fill(out, LEN, seed_of(peer, r));
            await_data(buf, out);
            CHECK_DATA(buf, LEN, seed_of(peer, r));
        }
    }
    /* Context ids are left: one more duplicate works, and talks. */
    {
        MPI_Comm c;
        int sum = 0, one = 1;

        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
        CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c));
        CHECK_EQ(sum, g_mpitest_size);
        CHECK_MPI(MPI_Comm_free(&c));
    }
    if (!sender && peer != MPI_PROC_NULL && mpich_probes_at_free())
        CHECK_COUNTER(mpitest_pvar_read("efarm_progress_nested") - nested0, >, 0);
    mpitest_finalize();
    return 0;
}
