// A C++ program over efarm, built with MPICH's mpicxx: every rank sends a
// vector of doubles round a ring (one message of a few bytes, one of 1 MiB,
// which takes the long subprotocols), checks every element, and the ranks
// agree on a checksum with MPI_Allreduce. Prints "lang_cxx: OK (N ranks)"
// on rank 0 when every check passed; exits nonzero otherwise.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

static int check(bool ok, const char *what, int rank)
{
    if (!ok)
        std::fprintf(stderr, "lang_cxx: rank %d: %s\n", rank, what);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    int rank, size, bad = 0, all_bad = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int to = (rank + 1) % size, from = (rank + size - 1) % size;
    for (std::size_t n : {std::size_t(3), std::size_t(1) << 17}) {
        std::vector<double> out(n), in(n, -1.0);
        for (std::size_t i = 0; i < n; i++)
            out[i] = rank * 1e6 + double(i);
        MPI_Sendrecv(out.data(), int(n), MPI_DOUBLE, to, 7, in.data(), int(n), MPI_DOUBLE, from, 7,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (std::size_t i = 0; i < n; i++)
            if (in[i] != from * 1e6 + double(i)) {
                bad += check(false, "ring data differs", rank);
                break;
            }
    }
    long long mine = rank + 1, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    bad += check(sum == (long long)size * (size + 1) / 2, "allreduce sum differs", rank);
    MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all_bad == 0)
        std::printf("lang_cxx: OK (%d ranks)\n", size);
    MPI_Finalize();
    return all_bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
