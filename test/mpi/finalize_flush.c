/*
 * MPI_Finalize must not lose the last messages. Every rank but 0 sends
 * MPITEST_FLUSH_N (default 2000) messages of 1000 bytes to rank 0 with
 * MPI_Send, which returns once the data is in efarm's packets, and goes
 * straight into MPI_Finalize; rank 0 starts receiving only 200 ms later.
 * Run with efasim dropping datagrams, the senders' last packets are still
 * being resent when they finalize: MPI_Finalize must wait until they were
 * acknowledged before closing, or rank 0 waits forever for them.
 */
#include "efarm_mpitest.h"

#include <stdio.h>
#include <stdlib.h>

enum { TAG_FLUSH = 50, LEN = 1000 };

int main(int argc, char **argv)
{
    uint8_t *buf = mpitest_malloc(LEN);
    size_t n;

    mpitest_init(&argc, &argv, "finalize_flush");
    n = mpitest_env_size("MPITEST_FLUSH_N", 2000);
    if (g_mpitest_rank != 0) {
        mpitest_context("rank %d sending %zu messages", g_mpitest_rank, n);
        for (size_t i = 0; i < n; i++) {
            mpitest_fill(buf, LEN, mpitest_seed((uint64_t)g_mpitest_rank, 50, i, 0));
            CHECK_MPI(MPI_Send(buf, LEN, MPI_BYTE, 0, TAG_FLUSH, MPI_COMM_WORLD));
        }
    } else {
        double t0 = MPI_Wtime();

        while (MPI_Wtime() - t0 < 0.2) /* no MPI call: the senders go ahead alone */
            ;
        for (int src = 1; src < g_mpitest_size; src++) {
            mpitest_context("receiving from rank %d", src);
            for (size_t i = 0; i < n; i++) {
                MPI_Status st;
                int count = -1;

                CHECK_MPI(MPI_Recv(buf, LEN, MPI_BYTE, src, TAG_FLUSH, MPI_COMM_WORLD, &st));
                CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
                CHECK_EQ(count, LEN);
                CHECK_DATA(buf, LEN, mpitest_seed((uint64_t)src, 50, i, 0));
            }
        }
    }
    free(buf);
    /* No barrier (mpitest_finalize has one): MPI_Finalize is the only synchronization. */
    int err = MPI_Finalize();
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "finalize_flush: rank %d: MPI_Finalize failed (%d)\n", g_mpitest_rank, err);
        return 1;
    }
    if (g_mpitest_rank == 0)
        printf("finalize_flush: OK (%d ranks)\n", g_mpitest_size);
    return 0;
}
