/*
 * Intercommunicators over efarm: the ranks split into two groups (even and
 * odd world ranks), MPI_Intercomm_create joins them through MPI_COMM_WORLD
 * (with MPICH 5.0 the two leaders exchange their groups' process ids over
 * efarm's dynamic_sendrecv, and every process inserts the other group's),
 * then through a duplicate of MPI_COMM_WORLD with other leaders and tag.
 * Over each: messages of every subprotocol's size from each local rank to
 * the remote rank of the same number and back, every byte checked, with
 * efarm's counter of sent messages growing by at least their number; an
 * MPI_Intercomm_merge whose allreduce and ranks are checked; and a
 * collective across the two groups (MPI_Allreduce on the intercommunicator:
 * each group gets the other's sum). Needs an even number of ranks, at least 2.
 */
#include "efarm_mpitest.h"

#include <stdlib.h>
#include <string.h>

static const size_t g_sizes[] = {0, 8, 4000, 60000, 200000, 1 << 20};
#define NSIZES (sizeof(g_sizes) / sizeof(g_sizes[0]))

static void exchange(MPI_Comm inter, int low_group)
{
    int rank, rsize;
    unsigned long long before = mpitest_pvar_read("efarm_nm_send_msgs");

    CHECK_MPI(MPI_Comm_rank(inter, &rank));
    CHECK_MPI(MPI_Comm_remote_size(inter, &rsize));
    CHECK(rank < rsize);
    for (unsigned k = 0; k < NSIZES; k++) {
        size_t n = g_sizes[k];
        uint8_t *out = mpitest_malloc(n + 1), *in = mpitest_malloc(n + 1);
        uint64_t mine = mpitest_seed((uint64_t)low_group, (uint64_t)rank, k, 71),
                 theirs = mpitest_seed((uint64_t)!low_group, (uint64_t)rank, k, 71);

        mpitest_context("intercommunicator exchange of %zu bytes", n);
        mpitest_fill(out, n, mine);
        memset(in, 0, n + 1);
        CHECK_MPI(MPI_Sendrecv(out, (int)n, MPI_BYTE, rank, (int)k, in, (int)n, MPI_BYTE, rank,
                               (int)k, inter, MPI_STATUS_IGNORE));
        CHECK_DATA(in, n, theirs);
        free(out);
        free(in);
    }
    if (mpitest_pvar_checks())
        CHECK_GE(mpitest_pvar_read("efarm_nm_send_msgs") - before, NSIZES);
}

static void check_merge(MPI_Comm inter, int low_group)
{
    MPI_Comm merged;
    int mrank, msize, sum = 0, world_sum = 0;

    mpitest_context("MPI_Intercomm_merge");
    CHECK_MPI(MPI_Intercomm_merge(inter, !low_group, &merged));
    CHECK_MPI(MPI_Comm_rank(merged, &mrank));
    CHECK_MPI(MPI_Comm_size(merged, &msize));
    CHECK_EQ(msize, g_mpitest_size);
    /* The low group (high = 0) comes first in the merged communicator. */
    CHECK(low_group ? mrank < msize / 2 : mrank >= msize / 2);
    CHECK_MPI(MPI_Allreduce(&g_mpitest_rank, &sum, 1, MPI_INT, MPI_SUM, merged));
    world_sum = g_mpitest_size * (g_mpitest_size - 1) / 2;
    CHECK_EQ(sum, world_sum);
    CHECK_MPI(MPI_Comm_free(&merged));
}

static void check_inter_allreduce(MPI_Comm inter, int low_group)
{
    int one = g_mpitest_rank, other = -1, expect = 0;

    mpitest_context("MPI_Allreduce on the intercommunicator");
    CHECK_MPI(MPI_Allreduce(&one, &other, 1, MPI_INT, MPI_SUM, inter));
    for (int r = 0; r < g_mpitest_size; r++)
        if ((r % 2 == 0) != low_group)
            expect += r;
    CHECK_EQ(other, expect);
}

int main(int argc, char **argv)
{
    MPI_Comm local, inter, dup;
    int low_group;

    mpitest_init(&argc, &argv, "intercomm");
    if (g_mpitest_size < 2 || g_mpitest_size % 2) {
        if (g_mpitest_rank == 0)
            fprintf(stderr, "intercomm: needs an even number of ranks, not %d\n", g_mpitest_size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    low_group = g_mpitest_rank % 2 == 0;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, !low_group, g_mpitest_rank, &local));

    /* Leaders: world ranks 0 and 1, through MPI_COMM_WORLD. */
    mpitest_context("MPI_Intercomm_create through MPI_COMM_WORLD");
    CHECK_MPI(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, low_group ? 1 : 0, 17, &inter));
    exchange(inter, low_group);
    check_merge(inter, low_group);
    check_inter_allreduce(inter, low_group);
    CHECK_MPI(MPI_Comm_free(&inter));

    /* Other leaders (the last of each group) through a duplicate, another tag. */
    mpitest_context("MPI_Intercomm_create through a duplicate");
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    {
        int lsize;

        CHECK_MPI(MPI_Comm_size(local, &lsize));
        CHECK_MPI(MPI_Intercomm_create(local, lsize - 1, dup,
                                       low_group ? g_mpitest_size - 1 : g_mpitest_size - 2, 4242,
                                       &inter));
    }
    exchange(inter, low_group);
    check_inter_allreduce(inter, low_group);
    CHECK_MPI(MPI_Comm_free(&inter));
    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK_MPI(MPI_Comm_free(&local));
    mpitest_finalize();
    return 0;
}
