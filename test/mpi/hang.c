/*
 * A job that hangs on purpose, for the hang guard (scripts/hang-guard.sh):
 * every rank waits in MPI_Recv for a message that nobody sends. The run must
 * end at its time limit, not before, with the stack of every rank in its log,
 * each inside MPI_Recv (run-mpi-tests.sh's hang runs check both).
 */
#include "efarm_mpitest.h"

int main(int argc, char **argv)
{
    int peer, value = 0;

    mpitest_init(&argc, &argv, "hang");
    peer = (g_mpitest_rank + 1) % g_mpitest_size;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* every rank has its efarm endpoint up */
    CHECK_MPI(MPI_Recv(&value, 1, MPI_INT, peer, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    mpitest_finalize();
    return 0;
}
