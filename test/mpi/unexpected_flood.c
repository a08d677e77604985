/*
 * Unexpected-message flood: every rank but 0 sends MPITEST_FLOOD_N (default
 * 20000) one-int messages to rank 0 with MPI_Send before rank 0 posts any
 * receive; then every rank enters MPI_Barrier, and only after it rank 0
 * receives them all, from each sender in send order, every value checked.
 * MPI puts no limit on messages that arrive before their receives, and
 * many-to-one patterns at scale produce thousands: efarm's operation table
 * (EFARM_MAX_OPS, 4096) must not be one. The barrier's messages from each
 * sender come after its flood in the sender's message order, so the barrier
 * completes only if every message of the flood found room at rank 0. efarm's
 * counters must show the flood arriving unexpected at rank 0.
 *
 * The runner also runs this program with a budget far too small for the
 * flood (EFARM_UNEXP_MAX_BYTES of 64 KiB): then rank 0 cannot receive the
 * barrier's message and must fail the job with an error naming
 * EFARM_UNEXP_MAX_BYTES after EFARM_RX_FULL_TIMEOUT_MS, not hang.
 */
#include "efarm_mpitest.h"

#include <stdlib.h>

enum { TAG_FLOOD = 40 };

int main(int argc, char **argv)
{
    struct mpitest_counters before, after, d;
    size_t n;

    mpitest_init(&argc, &argv, "unexpected_flood");
    n = mpitest_env_size("MPITEST_FLOOD_N", 20000);
    /*
     * No rank floods before rank 0 has read its counters: without this barrier a
     * sender that leaves mpitest_init first can have messages counted before rank 0
     * reads them (MPICH 4.3's barrier lets rank 0 leave last). The senders read
     * theirs after it, so that they count the flood alone.
     */
    if (g_mpitest_rank == 0)
        mpitest_counters_read(&before);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (g_mpitest_rank != 0)
        mpitest_counters_read(&before);
    mpitest_context("rank %d sending %zu messages", g_mpitest_rank, n);
    if (g_mpitest_rank != 0) {
        for (size_t i = 0; i < n; i++) {
            int v = (int)(i * 7919 + (size_t)g_mpitest_rank);

            CHECK_MPI(MPI_Send(&v, 1, MPI_INT, 0, TAG_FLOOD, MPI_COMM_WORLD));
        }
        mpitest_counters_read(&after);
        mpitest_counters_diff(&after, &before, &d);
        CHECK_SENT(&d, n + 0ull, sizeof(int));
    }
    mpitest_context("barrier after %zu messages from each of %d senders", n, g_mpitest_size - 1);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (g_mpitest_rank == 0) {
        double t0 = MPI_Wtime();
        int flag;

        /*
         * Everything arrives before a receive is posted. The barrier alone does not
         * order a sender's flood before it with 4 ranks (rank 0 may learn that rank 1
         * reached the barrier from another rank while rank 1's last sends are still
         * on the wire), so drive progress, without receiving, until all arrived or
         * 30 s passed.
         */
        do {
            CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, TAG_FLOOD + 1, MPI_COMM_WORLD, &flag,
                                 MPI_STATUS_IGNORE));
            mpitest_counters_read(&after);
            mpitest_counters_diff(&after, &before, &d);
        } while (mpitest_pvar_checks() && d.unexpected < n * (size_t)(g_mpitest_size - 1) &&
                 MPI_Wtime() - t0 < 30.0);
        CHECK_COUNTER(d.unexpected, >=, n * (size_t)(g_mpitest_size - 1));
        for (int src = 1; src < g_mpitest_size; src++) {
            mpitest_context("receiving the flood from rank %d", src);
            for (size_t i = 0; i < n; i++) {
                MPI_Status st;
                int v = -1, count = -1;

                CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, src, TAG_FLOOD, MPI_COMM_WORLD, &st));
                CHECK_EQ(v, (int)(i * 7919 + (size_t)src));
                CHECK_EQ(st.MPI_SOURCE, src);
                CHECK_EQ(st.MPI_TAG, TAG_FLOOD);
                CHECK_MPI(MPI_Get_count(&st, MPI_INT, &count));
                CHECK_EQ(count, 1);
            }
        }
        mpitest_counters_read(&after);
        mpitest_counters_diff(&after, &before, &d);
        CHECK_RECEIVED(&d, n * (size_t)(g_mpitest_size - 1),
                       n * (size_t)(g_mpitest_size - 1) * sizeof(int));
    }
    mpitest_finalize();
    return 0;
}
