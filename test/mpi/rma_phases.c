/*
 * Several RMA phases in one job, each with its own window, each window freed,
 * then MPI_Finalize, which must exit cleanly (a job that crashes at exit has
 * failed):
 *   1. MPI_Win_allocate and MPI_Win_create, fence epochs: every rank puts a
 *      block into its right neighbour and gets one from its left neighbour;
 *   2. exclusive-lock accumulates: every rank adds into rank 0's counters,
 *      MPITEST_RMA_BURST (default 200) MPI_Accumulate calls in one epoch;
 *   3. shared-lock sums and MPI_Get_accumulate: a fetch-and-add counter on
 *      rank 0; every fetched value is distinct and the final sum is exact;
 *   4. PSCW: each rank exposes its window to its left neighbour, which puts
 *      into it between MPI_Win_start and MPI_Win_complete;
 *   5. a dynamic window: every rank attaches a buffer, publishes its address,
 *      receives a put from its left neighbour, detaches;
 *   6. many gets in one epoch: every rank but 0 issues MPITEST_RMA_GETS
 *      (default 6000, more than EFARM_MAX_OPS' 4096) MPI_Get calls of 128 KiB
 *      from rank 0 under one shared lock: more messages than the engine has
 *      operation slots, which must wait for a slot, never fail or hang.
 * The data of every phase is checked, and the MPI_T counters must show that
 * the traffic crossed efarm. Run with MALLOC_PERTURB_ set so memory efarm
 * would read uninitialised is never accidentally zero.
 */
#include "efarm_mpitest.h"

#include <stdlib.h>
#include <string.h>

enum { BLOCK = 4096, NCOUNTERS = 16 };

static void fence_phase(int allocate)
{
    int right = (g_mpitest_rank + 1) % g_mpitest_size;
    int left = (g_mpitest_rank + g_mpitest_size - 1) % g_mpitest_size;
    uint8_t *base, *mine = NULL, *got = mpitest_malloc(BLOCK);
    uint8_t *out = mpitest_malloc(BLOCK);
    MPI_Win win;

    mpitest_context("phase 1: fence, window %s", allocate ? "allocated" : "created");
    if (allocate) {
        CHECK_MPI(MPI_Win_allocate(2 * BLOCK, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    } else {
        mine = mpitest_malloc(2 * BLOCK);
        base = mine;
        CHECK_MPI(MPI_Win_create(base, 2 * BLOCK, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    }
    /* The second half is what the left neighbour gets: this rank's own stream. */
    mpitest_fill(base + BLOCK, BLOCK, mpitest_seed((uint64_t)g_mpitest_rank, 1, 1, 0));
    memset(base, 0, BLOCK);
    mpitest_fill(out, BLOCK, mpitest_seed((uint64_t)g_mpitest_rank, (uint64_t)right, 1, 1));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Put(out, BLOCK, MPI_BYTE, right, 0, BLOCK, MPI_BYTE, win));
    CHECK_MPI(MPI_Get(got, BLOCK, MPI_BYTE, left, BLOCK, BLOCK, MPI_BYTE, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_DATA(base, BLOCK, mpitest_seed((uint64_t)left, (uint64_t)g_mpitest_rank, 1, 1));
    CHECK_DATA(got, BLOCK, mpitest_seed((uint64_t)left, 1, 1, 0));
    CHECK_MPI(MPI_Win_free(&win));
    free(mine);
    free(got);
    free(out);
}

static void exclusive_accumulate_phase(size_t burst)
{
    long long *base;
    long long add[NCOUNTERS];
    MPI_Win win;

    mpitest_context("phase 2: exclusive-lock accumulates, %zu per rank", burst);
    CHECK_MPI(MPI_Win_allocate(NCOUNTERS * sizeof(long long), sizeof(long long), MPI_INFO_NULL,
                               MPI_COMM_WORLD, &base, &win));
    memset(base, 0, NCOUNTERS * sizeof(long long));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < NCOUNTERS; i++)
        add[i] = (long long)(g_mpitest_rank + 1) * (i + 1);
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
    for (size_t k = 0; k < burst; k++)
        CHECK_MPI(MPI_Accumulate(add, NCOUNTERS, MPI_LONG_LONG, 0, 0, NCOUNTERS, MPI_LONG_LONG,
                                 MPI_SUM, win));
    CHECK_MPI(MPI_Win_unlock(0, win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (g_mpitest_rank == 0) {
        long long ranks_sum = (long long)g_mpitest_size * (g_mpitest_size + 1) / 2;

        for (int i = 0; i < NCOUNTERS; i++)
            CHECK_EQ(base[i], ranks_sum * (i + 1) * (long long)burst);
    }
    CHECK_MPI(MPI_Win_free(&win));
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;

    return (x > y) - (x < y);
}

static void shared_get_accumulate_phase(void)
{
    enum { PER_RANK = 50 };
    long long *base, one = 1, fetched[PER_RANK], sum = 0, total = 0;
    long long *all = mpitest_malloc(sizeof(long long) * PER_RANK * (size_t)g_mpitest_size);
    MPI_Win win;

    mpitest_context("phase 3: shared-lock sums and get_accumulate");
    CHECK_MPI(MPI_Win_allocate(2 * sizeof(long long), sizeof(long long), MPI_INFO_NULL,
                               MPI_COMM_WORLD, &base, &win));
    base[0] = base[1] = 0;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
    for (int k = 0; k < PER_RANK; k++) {
        long long v = g_mpitest_rank * 1000 + k;

        CHECK_MPI(MPI_Get_accumulate(&one, 1, MPI_LONG_LONG, &fetched[k], 1, MPI_LONG_LONG, 0, 0, 1,
                                     MPI_LONG_LONG, MPI_SUM, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        CHECK_MPI(MPI_Accumulate(&v, 1, MPI_LONG_LONG, 0, 1, 1, MPI_LONG_LONG, MPI_SUM, win));
    }
    CHECK_MPI(MPI_Win_unlock(0, win));
    CHECK_MPI(MPI_Allgather(fetched, PER_RANK, MPI_LONG_LONG, all, PER_RANK, MPI_LONG_LONG,
                            MPI_COMM_WORLD));
    /* A fetch-and-add counter hands out 0 .. n-1, each value once. */
    qsort(all, (size_t)PER_RANK * (size_t)g_mpitest_size, sizeof(long long), cmp_ll);
    for (int i = 0; i < PER_RANK * g_mpitest_size; i++)
        CHECK_EQ(all[i], i);
    if (g_mpitest_rank == 0) {
        for (int r = 0; r < g_mpitest_size; r++)
            for (int k = 0; k < PER_RANK; k++)
                sum += r * 1000 + k;
        total = (long long)PER_RANK * g_mpitest_size;
        CHECK_EQ(base[0], total);
        CHECK_EQ(base[1], sum);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_free(&win));
    free(all);
}

static void pscw_phase(void)
{
    int right = (g_mpitest_rank + 1) % g_mpitest_size;
    int left = (g_mpitest_rank + g_mpitest_size - 1) % g_mpitest_size;
    uint8_t *base, *out = mpitest_malloc(BLOCK);
    MPI_Group world, to, from;
    MPI_Win win;

    mpitest_context("phase 4: PSCW");
    CHECK_MPI(MPI_Win_allocate(BLOCK, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    memset(base, 0, BLOCK);
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
    CHECK_MPI(MPI_Group_incl(world, 1, &right, &to));
    CHECK_MPI(MPI_Group_incl(world, 1, &left, &from));
    mpitest_fill(out, BLOCK, mpitest_seed((uint64_t)g_mpitest_rank, 4, 0, 0));
    CHECK_MPI(MPI_Win_post(from, 0, win));
    CHECK_MPI(MPI_Win_start(to, 0, win));
    CHECK_MPI(MPI_Put(out, BLOCK, MPI_BYTE, right, 0, BLOCK, MPI_BYTE, win));
    CHECK_MPI(MPI_Win_complete(win));
    CHECK_MPI(MPI_Win_wait(win));
    CHECK_DATA(base, BLOCK, mpitest_seed((uint64_t)left, 4, 0, 0));
    CHECK_MPI(MPI_Group_free(&to));
    CHECK_MPI(MPI_Group_free(&from));
    CHECK_MPI(MPI_Group_free(&world));
    CHECK_MPI(MPI_Win_free(&win));
    free(out);
}

static void dynamic_phase(void)
{
    int right = (g_mpitest_rank + 1) % g_mpitest_size;
    int left = (g_mpitest_rank + g_mpitest_size - 1) % g_mpitest_size;
    uint8_t *buf = mpitest_malloc(BLOCK), *out = mpitest_malloc(BLOCK);
    MPI_Aint addr, *addrs = mpitest_malloc(sizeof(MPI_Aint) * (size_t)g_mpitest_size);
    MPI_Win win;

    mpitest_context("phase 5: dynamic window with attach/detach");
    CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    memset(buf, 0, BLOCK);
    CHECK_MPI(MPI_Win_attach(win, buf, BLOCK));
    CHECK_MPI(MPI_Get_address(buf, &addr));
    CHECK_MPI(MPI_Allgather(&addr, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD));
    mpitest_fill(out, BLOCK, mpitest_seed((uint64_t)g_mpitest_rank, 5, 0, 0));
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    CHECK_MPI(MPI_Put(out, BLOCK, MPI_BYTE, right, addrs[right], BLOCK, MPI_BYTE, win));
    CHECK_MPI(MPI_Win_unlock(right, win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_DATA(buf, BLOCK, mpitest_seed((uint64_t)left, 5, 0, 0));
    CHECK_MPI(MPI_Win_detach(win, buf));
    CHECK_MPI(MPI_Win_free(&win));
    free(buf);
    free(out);
    free(addrs);
}

static void many_gets_phase(size_t ngets)
{
    enum { GET_LEN = 128 * 1024, SLOTS = 8 };
    uint8_t *base, *got = mpitest_malloc((size_t)GET_LEN * SLOTS);
    MPI_Win win;

    mpitest_context("phase 6: %zu gets of %d bytes in one epoch", ngets, GET_LEN);
    CHECK_MPI(MPI_Win_allocate(GET_LEN * SLOTS, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    if (g_mpitest_rank == 0)
        for (int i = 0; i < SLOTS; i++)
            mpitest_fill(base + (size_t)i * GET_LEN, GET_LEN, mpitest_seed(6, (uint64_t)i, 0, 0));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (g_mpitest_rank != 0) {
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        for (size_t k = 0; k < ngets; k++) {
            MPI_Aint off = (MPI_Aint)(k % SLOTS) * GET_LEN;

            CHECK_MPI(MPI_Get(got + off, GET_LEN, MPI_BYTE, 0, off, GET_LEN, MPI_BYTE, win));
        }
        CHECK_MPI(MPI_Win_unlock(0, win));
        for (int i = 0; i < SLOTS; i++)
            CHECK_DATA(got + (size_t)i * GET_LEN, GET_LEN, mpitest_seed(6, (uint64_t)i, 0, 0));
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_free(&win));
    free(got);
}

int main(int argc, char **argv)
{
    struct mpitest_counters before, after, d;
    size_t burst;

    mpitest_init(&argc, &argv, "rma_phases");
    burst = mpitest_env_size("MPITEST_RMA_BURST", 200);
    mpitest_counters_read(&before);
    fence_phase(1);
    fence_phase(0);
    exclusive_accumulate_phase(burst);
    shared_get_accumulate_phase();
    pscw_phase();
    dynamic_phase();
    many_gets_phase(mpitest_env_size("MPITEST_RMA_GETS", 6000));
    mpitest_counters_read(&after);
    mpitest_counters_diff(&after, &before, &d);
    /* Today RMA travels as MPIDIG active messages over efarm: they must have crossed it. */
    mpitest_context("counters");
    CHECK_COUNTER(d.nm_am_send, >, 0);
    CHECK_COUNTER(d.nm_am_recv, >, 0);
    mpitest_finalize();
    return 0;
}
