/*
 * Native RMA on dynamic windows (MPI_Win_create_dynamic, attach, detach).
 *
 * Every rank attaches NREG regions of different sizes (one element to a
 * megabyte; more than the directory's first capacity, so it grows), and the
 * ranks exchange the regions' addresses. Then, under lock_all + flush and
 * under fence, every rank puts a seeded pattern into its right neighbour's
 * regions and reads its left neighbour's back, all ranks add into one
 * counter of every rank with MPI_Accumulate and fetch_and_op (checked for
 * lost updates and distinct tickets), and compare_and_swap hands a token
 * round. A region is detached and another attached (new memory, new key)
 * between epochs: accesses to the new one work, and an access to memory no
 * longer attached fails with MPI_ERR_RMA_RANGE (native) without touching
 * anything. Puts, gets and accumulates span two adjacent attached regions,
 * one of them with a noncontiguous target (a vector of 8 pieces).
 * MPITEST_RMA_PASSIVE=S adds the one-sided progress check on a
 * dynamic window: rank 1 computes without calling MPI until rank 0's put
 * lands in its attached memory (RDMA reads the directory, RDMA writes it).
 *
 * Counters (MPI_T): with MPITEST_RMA_EXPECT=native (default) every data
 * operation went native and none fell back, and directory reads stay few
 * (one lookup serves a whole epoch); with MPITEST_RMA_EXPECT=am
 * (EFARM_RMA_NATIVE=0) nothing went native.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "efarm_mpitest.h"

enum { NREG = 20, COUNTER = 0 };

static int g_native;
static unsigned long long g_self_ops; /* operations on this rank itself: MPIDIG applies those */
static const size_t g_sizes[] = {8, 24, 64, 1000, 4096, 8192, 9000, 65536, 131072, 1 << 20};

static size_t reg_size(int i)
{
    return g_sizes[i % (int)(sizeof(g_sizes) / sizeof(g_sizes[0]))];
}

static unsigned long long pv(const char *name)
{
    return mpitest_pvar_read(name);
}

/* Attach this rank's regions and learn everyone's addresses: addr[rank * NREG + i]. */
static void attach_all(MPI_Win win, uint8_t **reg, MPI_Aint *addr)
{
    MPI_Aint mine[NREG];

    for (int i = 0; i < NREG; i++) {
        reg[i] = mpitest_malloc(reg_size(i));
        memset(reg[i], 0, reg_size(i));
        CHECK_MPI(MPI_Win_attach(win, reg[i], (MPI_Aint)reg_size(i)));
        CHECK_MPI(MPI_Get_address(reg[i], &mine[i]));
    }
    CHECK_MPI(MPI_Allgather(mine, NREG, MPI_AINT, addr, NREG, MPI_AINT, MPI_COMM_WORLD));
}

/* Opens an access epoch to every rank: a fence, or lock_all. */
static void epoch_open(MPI_Win win, int fence)
{
    if (fence)
        CHECK_MPI(MPI_Win_fence(0, win));
    else
        CHECK_MPI(MPI_Win_lock_all(0, win));
}

/* Puts into the right neighbour's regions, gets of the left's; `fence` or lock_all + flush. */
static void put_get(MPI_Win win, uint8_t **reg, const MPI_Aint *addr, int fence, int round)
{
    int me = g_mpitest_rank, n = g_mpitest_size;
    int right = (me + 1) % n, left = (me + n - 1) % n;
    size_t total = 0, off = 0;
    uint8_t *src, *dst = mpitest_malloc(1 << 20);

    /* Each put has its own source: under fence none completes before the closing fence. */
    for (int i = 0; i < NREG; i++)
        total += reg_size(i);
    src = mpitest_malloc(total);

    mpitest_context("put/get into attached memory, %s, round %d", fence ? "fence" : "lock_all",
                    round);
    epoch_open(win, fence);
    for (int i = 0; i < NREG; i++) {
        size_t len = reg_size(i);

        mpitest_fill(src + off, len, mpitest_seed((uint64_t)me, (uint64_t)i, (uint64_t)round, 1));
        CHECK_MPI(MPI_Put(src + off, (int)len, MPI_BYTE, right, addr[right * NREG + i], (int)len,
                          MPI_BYTE, win));
        off += len;
        if (!fence)
            CHECK_MPI(MPI_Win_flush(right, win));
    }
    if (fence)
        CHECK_MPI(MPI_Win_fence(0, win));
    else {
        CHECK_MPI(MPI_Win_unlock_all(win));
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    for (int i = 0; i < NREG; i++)
        CHECK_DATA(reg[i], reg_size(i),
                   mpitest_seed((uint64_t)left, (uint64_t)i, (uint64_t)round, 1));

    /* Read back what the left neighbour holds now (its left neighbour's pattern). */
    epoch_open(win, fence);
    for (int i = 0; i < NREG; i++) {
        size_t len = reg_size(i);

        memset(dst, 0xee, len);
        CHECK_MPI(
            MPI_Get(dst, (int)len, MPI_BYTE, left, addr[left * NREG + i], (int)len, MPI_BYTE, win));
        if (fence)
            CHECK_MPI(MPI_Win_fence(0, win));
        else
            CHECK_MPI(MPI_Win_flush(left, win));
        CHECK_DATA(
            dst, len,
            mpitest_seed((uint64_t)(left + n - 1) % (uint64_t)n, (uint64_t)i, (uint64_t)round, 1));
    }
    if (!fence)
        CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    free(src);
    free(dst);
}

/* Accumulates and fetch_and_op from every rank into every rank's counter (region 0). */
static void atomics(MPI_Win win, uint8_t **reg, const MPI_Aint *addr)
{
    enum { NACC = 50, NFOP = 50 };
    int me = g_mpitest_rank, n = g_mpitest_size;
    long long one = 1, *counter = (long long *)reg[COUNTER];
    long long *tickets = mpitest_malloc(sizeof(long long) * NFOP * (size_t)n);

    mpitest_context("accumulate and fetch_and_op on attached counters");
    *counter = 0;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_lock_all(0, win));
    g_self_ops += NACC + NFOP;
    for (int k = 0; k < NACC; k++)
        for (int t = 0; t < n; t++)
            CHECK_MPI(MPI_Accumulate(&one, 1, MPI_LONG_LONG, t, addr[t * NREG + COUNTER], 1,
                                     MPI_LONG_LONG, MPI_SUM, win));
    CHECK_MPI(MPI_Win_flush_all(win));
    for (int k = 0; k < NFOP; k++) {
        for (int t = 0; t < n; t++) {
            CHECK_MPI(MPI_Fetch_and_op(&one, &tickets[t * NFOP + k], MPI_LONG_LONG, t,
                                       addr[t * NREG + COUNTER], MPI_SUM, win));
            CHECK_MPI(MPI_Win_flush(t, win));
        }
    }
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_EQ(*counter, (long long)(NACC + NFOP) * n);
    /* Tickets from one target increase (this rank's own fetches are ordered). */
    for (int t = 0; t < n; t++)
        for (int k = 1; k < NFOP; k++)
            CHECK(tickets[t * NFOP + k] > tickets[t * NFOP + k - 1]);
    (void)me;
    free(tickets);
}

/* A token goes round the ring: rank r swaps r for r + 1 in rank 0's counter. */
static void cas_ring(MPI_Win win, uint8_t **reg, const MPI_Aint *addr)
{
    int me = g_mpitest_rank, n = g_mpitest_size;
    long long *counter = (long long *)reg[COUNTER], want = me, next = me + 1, old = -1;
    time_t deadline = time(NULL) + 30;

    mpitest_context("compare_and_swap token ring on attached memory");
    *counter = 0;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_lock_all(0, win));
    do {
        CHECK_MPI(MPI_Compare_and_swap(&next, &want, &old, MPI_LONG_LONG, 0, addr[COUNTER], win));
        CHECK_MPI(MPI_Win_flush(0, win));
        g_self_ops += me == 0;
        CHECK(old >= 0 && old <= me);
        if (old != want && time(NULL) > deadline)
            CHECK(!"the token never came");
    } while (old != want);
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0)
        CHECK_EQ(*counter, (long long)n);
}

/*
 * Detach region 1 and attach new memory in its place. The new address
 * works; natively, a put to the old one fails with MPI_ERR_RMA_RANGE at the
 * origin and the old memory (still allocated here) is unchanged.
 */
static void reattach(MPI_Win win, uint8_t **reg, MPI_Aint *addr)
{
    int me = g_mpitest_rank, n = g_mpitest_size, right = (me + 1) % n, left = (me + n - 1) % n;
    size_t len = reg_size(1);
    uint8_t *fresh = mpitest_malloc(len);
    MPI_Aint old_right = addr[right * NREG + 1], mine;
    MPI_Aint *col = mpitest_malloc(sizeof(MPI_Aint) * (size_t)n);
    long long v = 0x1234 + me, bad = 7;

    mpitest_context("detach, attach new memory, access old and new addresses");
    memset(reg[1], 0x5a, len);
    CHECK_MPI(MPI_Win_detach(win, reg[1]));
    memset(fresh, 0, len);
    CHECK_MPI(MPI_Win_attach(win, fresh, (MPI_Aint)len));
    CHECK_MPI(MPI_Get_address(fresh, &mine));
    CHECK_MPI(MPI_Allgather(&mine, 1, MPI_AINT, col, 1, MPI_AINT, MPI_COMM_WORLD));
    for (int r = 0; r < n; r++)
        addr[r * NREG + 1] = col[r];
    CHECK_MPI(MPI_Win_lock_all(0, win));
    CHECK_MPI(MPI_Put(&v, 1, MPI_LONG_LONG, right, addr[right * NREG + 1], 1, MPI_LONG_LONG, win));
    CHECK_MPI(MPI_Win_flush(right, win));
    if (g_native) {
        int err;

        CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
        err = MPI_Put(&bad, 1, MPI_LONG_LONG, right, old_right, 1, MPI_LONG_LONG, win);
        CHECK_ERR_CLASS(err, MPI_ERR_RMA_RANGE);
        CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_ARE_FATAL));
    }
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_EQ(*(long long *)fresh, 0x1234LL + left);
    CHECK_BYTES(reg[1], len, 0x5a);
    free(reg[1]);
    reg[1] = fresh;
    free(col);
}

/*
 * One buffer attached as two adjacent regions: a put, a get and an
 * accumulate that span the boundary (MPI allows it; natively each becomes
 * one operation on two remote ranges, one per region's key).
 */
static void span(MPI_Win win)
{
    enum { HALF = 4096, LEN = 4096, NLL = LEN / 8, VEC_AT = (LEN / 2 - 64) / 8 };
    MPI_Datatype vec;
    long long ones[8];
    int me = g_mpitest_rank, n = g_mpitest_size, right = (me + 1) % n, left = (me + n - 1) % n;
    uint8_t *buf = mpitest_malloc(2 * HALF), *src = mpitest_malloc(LEN), *dst = mpitest_malloc(LEN);
    long long *add = mpitest_malloc(LEN);
    MPI_Aint mine, *where = mpitest_malloc(sizeof(MPI_Aint) * (size_t)n), at;

    mpitest_context("accesses spanning two adjacent attached regions");
    memset(buf, 0, 2 * HALF);
    CHECK_MPI(MPI_Win_attach(win, buf, HALF));
    CHECK_MPI(MPI_Win_attach(win, buf + HALF, HALF));
    CHECK_MPI(MPI_Get_address(buf, &mine));
    CHECK_MPI(MPI_Allgather(&mine, 1, MPI_AINT, where, 1, MPI_AINT, MPI_COMM_WORLD));
    at = where[right] + HALF - LEN / 2;
    mpitest_fill(src, LEN, mpitest_seed((uint64_t)me, 77, 0, 0));
    for (int k = 0; k < NLL; k++)
        add[k] = k + 1000LL * me;
    CHECK_MPI(MPI_Win_lock_all(0, win));
    CHECK_MPI(MPI_Put(src, LEN, MPI_BYTE, right, at, LEN, MPI_BYTE, win));
    CHECK_MPI(MPI_Win_flush(right, win));
    CHECK_MPI(MPI_Get(dst, LEN, MPI_BYTE, right, at, LEN, MPI_BYTE, win));
    CHECK_MPI(MPI_Win_flush(right, win));
    CHECK_DATA(dst, LEN, mpitest_seed((uint64_t)me, 77, 0, 0));
    CHECK_MPI(MPI_Put(src, 0, MPI_BYTE, right, at, 0, MPI_BYTE, win)); /* nothing moves */
    CHECK_MPI(MPI_Win_flush(right, win));
    memset(dst, 0, LEN);
    CHECK_MPI(MPI_Put(dst, LEN, MPI_BYTE, right, at, LEN, MPI_BYTE, win));
    CHECK_MPI(MPI_Win_flush(right, win));
    CHECK_MPI(MPI_Accumulate(add, NLL, MPI_LONG_LONG, right, at, NLL, MPI_LONG_LONG, MPI_SUM, win));
    /* A noncontiguous target across the boundary: 8 pieces, 4 in each region. */
    CHECK_MPI(MPI_Type_vector(8, 1, 2, MPI_LONG_LONG, &vec));
    CHECK_MPI(MPI_Type_commit(&vec));
    for (int k = 0; k < 8; k++)
        ones[k] = 1;
    CHECK_MPI(MPI_Accumulate(ones, 8, MPI_LONG_LONG, right, at + 8 * VEC_AT, 1, vec, MPI_SUM, win));
    CHECK_MPI(MPI_Type_free(&vec));
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int k = 0; k < NLL; k++) {
        long long v;

        memcpy(&v, buf + HALF - LEN / 2 + 8 * k, 8);
        CHECK_EQ(v, k + 1000LL * left + (k >= VEC_AT && k < VEC_AT + 16 && (k - VEC_AT) % 2 == 0));
    }
    CHECK_BYTES(buf, HALF - LEN / 2, 0);
    CHECK_BYTES(buf + HALF + LEN / 2, HALF - LEN / 2, 0);
    CHECK_MPI(MPI_Win_detach(win, buf));
    CHECK_MPI(MPI_Win_detach(win, buf + HALF));
    free(buf);
    free(src);
    free(dst);
    free(add);
    free(where);
}

/*
 * Rank 1 computes (no MPI calls) until rank 0's put lands in its attached
 * memory; rank 0 first reads until rank 1 says it is spinning. Only RDMA
 * (directory read, data write) can pass this.
 */
static void passive_progress(MPI_Win win, unsigned wait_s)
{
    volatile long long *mem = mpitest_malloc(2 * sizeof(long long));
    MPI_Aint mine, where[2];

    mpitest_context("one-sided progress on a dynamic window while the target computes");
    CHECK_MPI(MPI_Win_attach(win, (void *)mem, 2 * sizeof(long long)));
    CHECK_MPI(MPI_Get_address((void *)mem, &mine));
    CHECK_MPI(MPI_Allgather(&mine, 1, MPI_AINT, where, 1, MPI_AINT, MPI_COMM_WORLD));
    mpitest_rma_passive_check(win, mem, where[1], where[1] + (MPI_Aint)sizeof(long long), wait_s);
    CHECK_MPI(MPI_Win_detach(win, (void *)mem));
    free((void *)mem);
}

int main(int argc, char **argv)
{
    MPI_Win win;
    uint8_t *reg[NREG];
    MPI_Aint *addr;
    unsigned long long n0, f0, l0, l1;
    const char *expect = getenv("MPITEST_RMA_EXPECT");

    mpitest_init(&argc, &argv, "rma_dynamic");
    g_native = expect == NULL || strcmp(expect, "am") != 0;
    addr = mpitest_malloc(sizeof(MPI_Aint) * NREG * (size_t)g_mpitest_size);
    CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    attach_all(win, reg, addr);
    n0 = pv("efarm_nm_rma_native_ops");
    f0 = pv("efarm_nm_rma_fallback_ops");
    l0 = pv("efarm_nm_rma_dyn_lookups");
    put_get(win, reg, addr, 0, 0);
    l1 = pv("efarm_nm_rma_dyn_lookups");
    put_get(win, reg, addr, 1, 1);
    atomics(win, reg, addr);
    cas_ring(win, reg, addr);
    reattach(win, reg, addr);
    span(win);
    if (mpitest_pvar_checks()) {
        unsigned long long nat = pv("efarm_nm_rma_native_ops") - n0,
                           fb = pv("efarm_nm_rma_fallback_ops") - f0;

        mpitest_context("counters");
        if (g_native) {
            /* puts and gets, accumulates and fetches to the others, reattached and spanning */
            CHECK_GE(nat, 4 * NREG + 100 * (unsigned long long)(g_mpitest_size - 1) + 6);
            CHECK_EQ(fb, g_self_ops);
            /* lock_all epochs: one directory read per target serves all NREG regions. */
            CHECK_EQ(l1 - l0, 2);
            CHECK_EQ(pv("efarm_nm_rma_dyn_attached"), NREG + 3);
        } else {
            CHECK_EQ(nat, 0);
            CHECK_GE(fb, 4 * NREG + g_self_ops);
            CHECK_EQ(pv("efarm_nm_rma_dyn_lookups"), 0);
        }
    }
    if (g_native && g_mpitest_size >= 2 && mpitest_env_size("MPITEST_RMA_PASSIVE", 0))
        passive_progress(win, (unsigned)mpitest_env_size("MPITEST_RMA_PASSIVE", 0));
    for (int i = 0; i < NREG; i++) {
        CHECK_MPI(MPI_Win_detach(win, reg[i]));
        free(reg[i]);
    }
    CHECK_MPI(MPI_Win_free(&win));
    free(addr);
    mpitest_finalize();
    return 0;
}
