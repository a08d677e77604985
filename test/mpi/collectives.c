/*
 * Collectives over efarm: MPICH's algorithms run on the netmod's
 * point-to-point (MPIR_CVAR_NOLOCAL=1 makes every rank its own node).
 *
 * At a small count (7 ints) and a large one (MPITEST_COLL_COUNT, default
 * 262144 ints = 1 MiB per block): barrier, bcast and reduce (SUM and MAX)
 * from every root, allreduce (SUM and BXOR), alltoall, alltoallv (uneven
 * counts, gaps between blocks), allgather, allgatherv (uneven), gather and
 * scatter from every root, and the nonblocking ibarrier, ibcast, iallreduce
 * and ialltoall. Every result is compared with values computed locally; the
 * receive buffers start as a sentinel so untouched gaps can be checked. For
 * each operation efarm's counters must show at least the bytes the rank has
 * to receive from the others (e.g. (p-1) blocks for alltoall, one block for
 * a non-root in bcast).
 */
#include "efarm_mpitest.h"

#include <stdlib.h>
#include <string.h>

#define SENTINEL_INT (-7777777)

static int g_me, g_np;

/* Element j of the block that rank `from` gives to `to` (or to everyone, to = -1) in `round`. */
static int val(int from, int to, size_t j, int round)
{
    uint32_t x = (uint32_t)from * 7919u + (uint32_t)(to + 1) * 104729u + (uint32_t)j * 31u +
                 (uint32_t)round * 1000003u;

    return (int)(x & 0xfffffu); /* 20 bits: sums over 64 ranks cannot overflow */
}

static void fill_vals(int *buf, size_t n, int from, int to, int round)
{
    for (size_t j = 0; j < n; j++)
        buf[j] = val(from, to, j, round);
}

static void check_vals(const int *buf, size_t n, int from, int to, int round, const char *what)
{
    for (size_t j = 0; j < n; j++)
        if (buf[j] != val(from, to, j, round))
            mpitest_fail(__FILE__, __LINE__,
                         "%s: element %zu of the block from rank %d is %d, want %d", what, j, from,
                         buf[j], val(from, to, j, round));
}

static void check_sentinel(const int *buf, size_t n, const char *what)
{
    for (size_t j = 0; j < n; j++)
        if (buf[j] != SENTINEL_INT)
            mpitest_fail(__FILE__, __LINE__, "%s: gap element %zu was overwritten (%d)", what, j,
                         buf[j]);
}

static void set_sentinel(int *buf, size_t n)
{
    for (size_t j = 0; j < n; j++)
        buf[j] = SENTINEL_INT;
}

/* Counter window around one collective: this rank received at least `bytes` through efarm. */
static struct mpitest_counters g_before;

static void window_open(const char *what, size_t n)
{
    mpitest_context("%s, %zu ints", what, n);
    mpitest_counters_read(&g_before);
}

static void window_close(unsigned long long min_recv_bytes, int must_send)
{
    struct mpitest_counters after, d;

    mpitest_counters_read(&after);
    mpitest_counters_diff(&after, &g_before, &d);
    CHECK_COUNTER(d.nm_recv_bytes, >=, min_recv_bytes);
    if (min_recv_bytes)
        CHECK_COUNTER(d.nm_recv_msgs, >=, 1);
    if (must_send)
        CHECK_COUNTER(d.nm_send_msgs, >=, 1);
}

static void barriers(void)
{
    window_open("MPI_Barrier", 0);
    for (int i = 0; i < 3; i++)
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    window_close(0, g_np > 1);
    mpitest_counters_read(&g_before);
    {
        struct mpitest_counters after;

        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        mpitest_counters_read(&after);
        /* every rank of a barrier hears from at least one other */
        if (g_np > 1)
            CHECK_COUNTER(after.nm_recv_msgs, >, g_before.nm_recv_msgs);
    }
}

static void bcasts(size_t n, int *buf, int round)
{
    for (int root = 0; root < g_np; root++) {
        window_open("MPI_Bcast", n);
        if (g_me == root)
            fill_vals(buf, n, root, -1, round);
        else
            set_sentinel(buf, n + 3);
        CHECK_MPI(MPI_Bcast(buf, (int)n, MPI_INT, root, MPI_COMM_WORLD));
        check_vals(buf, n, root, -1, round, "MPI_Bcast");
        if (g_me != root)
            check_sentinel(buf + n, 3, "MPI_Bcast");
        window_close(g_me == root ? 0 : n * sizeof(int), g_me == root && g_np > 1);
    }
}

static void reduces(size_t n, int *in, int *out, int round)
{
    fill_vals(in, n, g_me, -1, round);
    for (int root = 0; root < g_np; root++) {
        window_open("MPI_Reduce(SUM)", n);
        set_sentinel(out, n);
        CHECK_MPI(MPI_Reduce(in, out, (int)n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
        if (g_me == root)
            for (size_t j = 0; j < n; j++) {
                int want = 0;

                for (int r = 0; r < g_np; r++)
                    want += val(r, -1, j, round);
                if (out[j] != want)
                    mpitest_fail(__FILE__, __LINE__, "MPI_Reduce(SUM) element %zu: %d, want %d", j,
                                 out[j], want);
            }
        else
            check_sentinel(out, n, "MPI_Reduce result buffer of a non-root");
        window_close(g_me == root ? n * sizeof(int) : 0, g_me != root);

        window_open("MPI_Reduce(MAX)", n);
        CHECK_MPI(MPI_Reduce(in, out, (int)n, MPI_INT, MPI_MAX, root, MPI_COMM_WORLD));
        if (g_me == root)
            for (size_t j = 0; j < n; j++) {
                int want = val(0, -1, j, round);

                for (int r = 1; r < g_np; r++)
                    want = val(r, -1, j, round) > want ? val(r, -1, j, round) : want;
                if (out[j] != want)
                    mpitest_fail(__FILE__, __LINE__, "MPI_Reduce(MAX) element %zu: %d, want %d", j,
                                 out[j], want);
            }
        window_close(g_me == root ? n * sizeof(int) : 0, g_me != root);
    }
}

static void allreduces(size_t n, int *in, int *out, int round)
{
    MPI_Request req;

    fill_vals(in, n, g_me, -1, round);
    for (int nb = 0; nb < 2; nb++) {
        window_open(nb ? "MPI_Iallreduce(SUM)" : "MPI_Allreduce(SUM)", n);
        set_sentinel(out, n);
        if (nb) {
            CHECK_MPI(MPI_Iallreduce(in, out, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req));
            CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        } else {
            CHECK_MPI(MPI_Allreduce(in, out, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        }
        for (size_t j = 0; j < n; j++) {
            int want = 0;

            for (int r = 0; r < g_np; r++)
                want += val(r, -1, j, round);
            if (out[j] != want)
                mpitest_fail(__FILE__, __LINE__, "allreduce(SUM) element %zu: %d, want %d", j,
                             out[j], want);
        }
        window_close(g_np > 1 ? n * sizeof(int) : 0, g_np > 1);
    }
    window_open("MPI_Allreduce(BXOR, in place)", n);
    memcpy(out, in, n * sizeof(int));
    CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, out, (int)n, MPI_INT, MPI_BXOR, MPI_COMM_WORLD));
    for (size_t j = 0; j < n; j++) {
        int want = 0;

        for (int r = 0; r < g_np; r++)
            want ^= val(r, -1, j, round);
        if (out[j] != want)
            mpitest_fail(__FILE__, __LINE__, "MPI_Allreduce(BXOR) element %zu: %d, want %d", j,
                         out[j], want);
    }
    window_close(g_np > 1 ? n * sizeof(int) : 0, g_np > 1);
}

static void alltoalls(size_t n, int *in, int *out, int round)
{
    MPI_Request req;

    for (int nb = 0; nb < 2; nb++) {
        window_open(nb ? "MPI_Ialltoall" : "MPI_Alltoall", n);
        for (int to = 0; to < g_np; to++)
            fill_vals(in + (size_t)to * n, n, g_me, to, round + nb);
        set_sentinel(out, n * (size_t)g_np);
        if (nb) {
            CHECK_MPI(
                MPI_Ialltoall(in, (int)n, MPI_INT, out, (int)n, MPI_INT, MPI_COMM_WORLD, &req));
            CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        } else {
            CHECK_MPI(MPI_Alltoall(in, (int)n, MPI_INT, out, (int)n, MPI_INT, MPI_COMM_WORLD));
        }
        for (int from = 0; from < g_np; from++)
            check_vals(out + (size_t)from * n, n, from, g_me, round + nb, "alltoall");
        window_close((unsigned long long)(g_np - 1) * n * sizeof(int), g_np > 1);
    }
}

/* Alltoallv: rank `from` gives `to` a block of n/2 + (from + 2 to) % 5 ints; blocks 3 ints apart.
 */
static int vcount(size_t n, int from, int to)
{
    return (int)(n / 2) + (from + 2 * to) % 5;
}

static void alltoallvs(size_t n, int *in, int *out, int round)
{
    int *scounts = mpitest_malloc((size_t)g_np * sizeof(int)),
        *sdispls = mpitest_malloc((size_t)g_np * sizeof(int)),
        *rcounts = mpitest_malloc((size_t)g_np * sizeof(int)),
        *rdispls = mpitest_malloc((size_t)g_np * sizeof(int));
    unsigned long long must = 0;
    int sd = 0, rd = 0;

    for (int q = 0; q < g_np; q++) {
        scounts[q] = vcount(n, g_me, q);
        sdispls[q] = sd;
        sd += scounts[q] + 3;
        rcounts[q] = vcount(n, q, g_me);
        rdispls[q] = rd;
        rd += rcounts[q] + 3;
        if (q != g_me)
            must += (unsigned long long)rcounts[q] * sizeof(int);
    }
    window_open("MPI_Alltoallv", n);
    for (int q = 0; q < g_np; q++)
        fill_vals(in + sdispls[q], (size_t)scounts[q], g_me, q, round);
    set_sentinel(out, (size_t)rd);
    CHECK_MPI(MPI_Alltoallv(in, scounts, sdispls, MPI_INT, out, rcounts, rdispls, MPI_INT,
                            MPI_COMM_WORLD));
    for (int q = 0; q < g_np; q++) {
        check_vals(out + rdispls[q], (size_t)rcounts[q], q, g_me, round, "MPI_Alltoallv");
        check_sentinel(out + rdispls[q] + rcounts[q], 3, "MPI_Alltoallv");
    }
    window_close(must, g_np > 1);
    free(scounts);
    free(sdispls);
    free(rcounts);
    free(rdispls);
}

static void allgathers(size_t n, int *in, int *out, int round)
{
    int *counts = mpitest_malloc((size_t)g_np * sizeof(int)),
        *displs = mpitest_malloc((size_t)g_np * sizeof(int));
    unsigned long long must = 0;
    int d = 0;

    window_open("MPI_Allgather", n);
    fill_vals(in, n, g_me, -1, round);
    set_sentinel(out, n * (size_t)g_np);
    CHECK_MPI(MPI_Allgather(in, (int)n, MPI_INT, out, (int)n, MPI_INT, MPI_COMM_WORLD));
    for (int q = 0; q < g_np; q++)
        check_vals(out + (size_t)q * n, n, q, -1, round, "MPI_Allgather");
    window_close((unsigned long long)(g_np - 1) * n * sizeof(int), g_np > 1);

    for (int q = 0; q < g_np; q++) {
        counts[q] = (int)n - 3 * q > 0 ? (int)n - 3 * q : q;
        displs[q] = d;
        d += counts[q] + 2;
        if (q != g_me)
            must += (unsigned long long)counts[q] * sizeof(int);
    }
    window_open("MPI_Allgatherv", n);
    fill_vals(in, (size_t)counts[g_me], g_me, -2, round);
    set_sentinel(out, (size_t)d);
    CHECK_MPI(
        MPI_Allgatherv(in, counts[g_me], MPI_INT, out, counts, displs, MPI_INT, MPI_COMM_WORLD));
    for (int q = 0; q < g_np; q++) {
        check_vals(out + displs[q], (size_t)counts[q], q, -2, round, "MPI_Allgatherv");
        check_sentinel(out + displs[q] + counts[q], 2, "MPI_Allgatherv");
    }
    window_close(must, g_np > 1);
    free(counts);
    free(displs);
}

static void gathers_scatters(size_t n, int *in, int *out, int round)
{
    for (int root = 0; root < g_np; root++) {
        window_open("MPI_Gather", n);
        fill_vals(in, n, g_me, root, round);
        set_sentinel(out, n * (size_t)g_np);
        CHECK_MPI(MPI_Gather(in, (int)n, MPI_INT, out, (int)n, MPI_INT, root, MPI_COMM_WORLD));
        if (g_me == root)
            for (int q = 0; q < g_np; q++)
                check_vals(out + (size_t)q * n, n, q, root, round, "MPI_Gather");
        else
            check_sentinel(out, n * (size_t)g_np, "MPI_Gather result buffer of a non-root");
        window_close(g_me == root ? (unsigned long long)(g_np - 1) * n * sizeof(int) : 0,
                     g_me != root);

        window_open("MPI_Scatter", n);
        if (g_me == root)
            for (int q = 0; q < g_np; q++)
                fill_vals(in + (size_t)q * n, n, root, q, round + 1);
        set_sentinel(out, n + 5);
        CHECK_MPI(MPI_Scatter(in, (int)n, MPI_INT, out, (int)n, MPI_INT, root, MPI_COMM_WORLD));
        check_vals(out, n, root, g_me, round + 1, "MPI_Scatter");
        check_sentinel(out + n, 5, "MPI_Scatter");
        window_close(g_me == root ? 0 : n * sizeof(int), g_me == root && g_np > 1);
    }
}

static void nonblocking(size_t n, int *buf, int round)
{
    MPI_Request reqs[2];
    MPI_Status sts[2];

    window_open("MPI_Ibarrier + MPI_Ibcast", n);
    if (g_me == 0)
        fill_vals(buf, n, 0, -3, round);
    else
        set_sentinel(buf, n);
    CHECK_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &reqs[0]));
    CHECK_MPI(MPI_Ibcast(buf, (int)n, MPI_INT, 0, MPI_COMM_WORLD, &reqs[1]));
    CHECK_MPI(MPI_Waitall(2, reqs, sts));
    check_vals(buf, n, 0, -3, round, "MPI_Ibcast");
    window_close(g_me == 0 ? 0 : n * sizeof(int), g_np > 1);
}

int main(int argc, char **argv)
{
    size_t large, counts[2];
    int *in, *out;

    mpitest_init(&argc, &argv, "collectives");
    g_me = g_mpitest_rank;
    g_np = g_mpitest_size;
    large = mpitest_env_size("MPITEST_COLL_COUNT", 262144);
    CHECK_GE(large, 16);
    CHECK(large * (size_t)g_np <= (size_t)1 << 28);
    counts[0] = 7;
    counts[1] = large;
    /* room for p blocks plus the gaps alltoallv and allgatherv leave */
    in = mpitest_malloc((large + 8) * (size_t)g_np * sizeof(int));
    out = mpitest_malloc((large + 8) * (size_t)g_np * sizeof(int));
    barriers();
    for (int k = 0; k < 2; k++) {
        size_t n = counts[k];
        int round = 10 * k;

        bcasts(n, out, round);
        reduces(n, in, out, round + 1);
        allreduces(n, in, out, round + 2);
        alltoalls(n, in, out, round + 3);
        alltoallvs(n, in, out, round + 5);
        allgathers(n, in, out, round + 6);
        gathers_scatters(n, in, out, round + 7);
        nonblocking(n, out, round + 9);
    }
    free(in);
    free(out);
    mpitest_finalize();
    return 0;
}
