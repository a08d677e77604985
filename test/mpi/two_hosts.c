/*
 * Two (emulated) hosts, ranks on both (run-two-hosts.sh): ranks that share a
 * host talk through MPICH's shared memory, ranks on different hosts through
 * efarm. Checks: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) groups exactly
 * MPITEST_RANKS_PER_HOST ranks, all with one processor name, and there are
 * size / MPITEST_RANKS_PER_HOST names; then each rank in turn sends 10
 * messages of 4 KiB to every other rank (every byte checked), and its
 * efarm send counter (nm_send_msgs) grows by exactly 10 for a rank on
 * another host and by 0 for one on its own.
 */
#include <stdlib.h>
#include <string.h>

#include "efarm_mpitest.h"

#define NMSG 10
#define LEN  4096

int main(int argc, char **argv)
{
    int per_host = (int)mpitest_env_size("MPITEST_RANKS_PER_HOST", 2);
    char name[MPI_MAX_PROCESSOR_NAME], *names;
    int len, local_size, distinct = 0;
    MPI_Comm local;
    unsigned char *buf;

    mpitest_init(&argc, &argv, "two_hosts");
    mpitest_context("placement");
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local));
    CHECK_MPI(MPI_Comm_size(local, &local_size));
    CHECK_EQ(local_size, per_host);
    memset(name, 0, sizeof(name));
    CHECK_MPI(MPI_Get_processor_name(name, &len));
    names = mpitest_malloc((size_t)g_mpitest_size * MPI_MAX_PROCESSOR_NAME);
    CHECK_MPI(MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME,
                            MPI_CHAR, MPI_COMM_WORLD));
    for (int r = 0; r < g_mpitest_size; r++) {
        int first = 1;

        for (int q = 0; q < r; q++)
            first &= strcmp(names + (size_t)q * MPI_MAX_PROCESSOR_NAME,
                            names + (size_t)r * MPI_MAX_PROCESSOR_NAME) != 0;
        distinct += first;
    }
    CHECK_EQ(distinct, g_mpitest_size / per_host);
    if (g_mpitest_rank == 0)
        printf("two_hosts: %d hosts, %d ranks each; rank 0 on %s\n", distinct, per_host, name);

    buf = mpitest_malloc(LEN);
    for (int src = 0; src < g_mpitest_size; src++) {
        for (int dst = 0; dst < g_mpitest_size; dst++) {
            int same;

            if (src == dst)
                continue;
            same = !strcmp(names + (size_t)src * MPI_MAX_PROCESSOR_NAME,
                           names + (size_t)dst * MPI_MAX_PROCESSOR_NAME);
            mpitest_context("%d -> %d (%s host)", src, dst, same ? "same" : "other");
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            if (g_mpitest_rank == src) {
                unsigned long long before = mpitest_pvar_read("efarm_nm_send_msgs"), after;

                for (int i = 0; i < NMSG; i++) {
                    mpitest_fill(buf, LEN,
                                 mpitest_seed((uint64_t)src, (uint64_t)dst, (uint64_t)i, 1));
                    CHECK_MPI(MPI_Send(buf, LEN, MPI_BYTE, dst, i, MPI_COMM_WORLD));
                }
                after = mpitest_pvar_read("efarm_nm_send_msgs");
                if (mpitest_pvar_checks())
                    CHECK_EQ(after - before, same ? 0 : NMSG);
            } else if (g_mpitest_rank == dst) {
                for (int i = 0; i < NMSG; i++) {
                    CHECK_MPI(
                        MPI_Recv(buf, LEN, MPI_BYTE, src, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                    CHECK_DATA(buf, LEN,
                               mpitest_seed((uint64_t)src, (uint64_t)dst, (uint64_t)i, 1));
                }
            }
        }
    }
    free(buf);
    free(names);
    CHECK_MPI(MPI_Comm_free(&local));
    mpitest_finalize();
    return 0;
}
