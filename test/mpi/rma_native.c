/*
 * Native MPI RMA on efarm: put and get of every size class (one element,
 * one packet, several packets, a megabyte) on allocated and created windows
 * under fence, PSCW, exclusive and shared locks and lock_all with flush;
 * accumulates of three datatypes from every rank at once into every rank,
 * checked for lost updates; fetch_and_op from every rank on one counter
 * (every returned value distinct, the total exact); compare_and_swap as a
 * ticket lock; get_accumulate with MPI_NO_OP and MPI_REPLACE; the request
 * forms; noncontiguous targets (vectors of 4 and 10 pieces go native, one
 * engine operation per 4 pieces; 100 pieces and MPI_MAXLOC go through
 * MPIDIG and must still work); a vector origin into contiguous target memory
 * goes native (packed, unpacked); a shared window's segments by put, get
 * and fetch_and_op.
 *
 * Counters (MPI_T) prove the path: with MPITEST_RMA_EXPECT=native (default)
 * the plain operations went native (efarm_nm_rma_native_ops grew by at least
 * their number) and only the exotic ones fell back; with
 * MPITEST_RMA_EXPECT=am (run with EFARM_RMA_NATIVE=0) nothing went native;
 * with MPITEST_RMA_EXPECT=mixed (a pinned-memory limit that refuses some
 * windows and origin buffers) the paths are not checked, only the data.
 * MPITEST_RMA_PROTO=direct or emulated checks which engine subprotocols
 * carried them. MPITEST_RMA_PASSIVE=S (direct RDMA available) adds the
 * one-sided progress check: rank 1 spins on its own window memory, for at
 * most S seconds, without calling MPI until rank 0's put lands there, which
 * only a put that needs no target CPU does (an emulated put must fail it).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "efarm_mpitest.h"

static int g_native; /* 1: expect native operations */

static unsigned long long native_ops(void)
{
    return mpitest_pvar_read("efarm_nm_rma_native_ops");
}

static unsigned long long fallback_ops(void)
{
    return mpitest_pvar_read("efarm_nm_rma_fallback_ops");
}

enum sync_mode { SYNC_FENCE, SYNC_PSCW, SYNC_LOCK_EXCL, SYNC_LOCK_SHARED, SYNC_LOCK_ALL, SYNC_N };
static const char *const g_sync_names[] = {"fence", "pscw", "lock-exclusive", "lock-shared",
                                           "lock_all+flush"};

/* Open an access/exposure epoch in which every rank may access `target`. */
static void epoch_begin(MPI_Win win, enum sync_mode m, int target, MPI_Group world)
{
    switch (m) {
    case SYNC_FENCE:
        CHECK_MPI(MPI_Win_fence(0, win));
        break;
    case SYNC_PSCW: {
        /* Ring: rank r accesses r+1 and exposes to r-1. */
        int size = g_mpitest_size, me = g_mpitest_rank;
        int to = (me + 1) % size, from = (me + size - 1) % size;
        MPI_Group gto, gfrom;

        CHECK_MPI(MPI_Group_incl(world, 1, &to, &gto));
        CHECK_MPI(MPI_Group_incl(world, 1, &from, &gfrom));
        CHECK_MPI(MPI_Win_post(gfrom, 0, win));
        CHECK_MPI(MPI_Win_start(gto, 0, win));
        MPI_Group_free(&gto);
        MPI_Group_free(&gfrom);
        break;
    }
    case SYNC_LOCK_EXCL:
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win));
        break;
    case SYNC_LOCK_SHARED:
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win));
        break;
    default:
        CHECK_MPI(MPI_Win_lock_all(0, win));
        break;
    }
}

static void epoch_flush(MPI_Win win, enum sync_mode m, int target)
{
    if (m == SYNC_LOCK_ALL)
        CHECK_MPI(MPI_Win_flush(target, win));
}

static void epoch_end(MPI_Win win, enum sync_mode m, int target)
{
    switch (m) {
    case SYNC_FENCE:
        CHECK_MPI(MPI_Win_fence(0, win));
        break;
    case SYNC_PSCW:
        CHECK_MPI(MPI_Win_complete(win));
        CHECK_MPI(MPI_Win_wait(win));
        break;
    case SYNC_LOCK_EXCL:
    case SYNC_LOCK_SHARED:
        CHECK_MPI(MPI_Win_unlock(target, win));
        break;
    default:
        CHECK_MPI(MPI_Win_unlock_all(win));
        break;
    }
}

/*
 * Put then get back every size, each rank into the next rank's window, in
 * one synchronisation mode. Each rank writes its own slice (no conflicts).
 */
static void put_get(MPI_Win win, uint8_t *base, size_t win_size, enum sync_mode m, MPI_Group world,
                    int created)
{
    static const size_t sizes[] = {1, 8, 1000, 8200, 20000, 65536, 65537, 1 << 20};
    int size = g_mpitest_size, me = g_mpitest_rank, to = (me + 1) % size;
    uint8_t *src = mpitest_malloc(1 << 20), *back = mpitest_malloc(1 << 20);

    for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t n = sizes[i], off = 64;
        uint64_t seed = mpitest_seed(me, to, (uint64_t)n, (uint64_t)m * 2 + (uint64_t)created);

        if (off + n > win_size)
            continue;
        mpitest_context("put/get %zu bytes, %s, %s window", n, g_sync_names[m],
                        created ? "created" : "allocated");
        memset(base, 0xee, win_size);
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        mpitest_fill(src, n, seed);
        epoch_begin(win, m, to, world);
        CHECK_MPI(MPI_Put(src, (int)n, MPI_BYTE, to, (MPI_Aint)off, (int)n, MPI_BYTE, win));
        epoch_flush(win, m, to);
        memset(back, 0, n);
        /* Get in the same epoch after a flush, or in the next epoch. */
        if (m != SYNC_LOCK_ALL) {
            epoch_end(win, m, to);
            epoch_begin(win, m, to, world);
        }
        CHECK_MPI(MPI_Get(back, (int)n, MPI_BYTE, to, (MPI_Aint)off, (int)n, MPI_BYTE, win));
        epoch_end(win, m, to);
        CHECK_DATA(back, n, seed);
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        /* What arrived here came from the previous rank, exactly, nothing around it. */
        CHECK_DATA(base + off, n,
                   mpitest_seed((me + size - 1) % size, me, (uint64_t)n,
                                (uint64_t)m * 2 + (uint64_t)created));
        CHECK_BYTES(base, off, 0xee);
        CHECK_BYTES(base + off + n, win_size - off - n, 0xee);
    }
    free(src);
    free(back);
}

/* Every rank accumulates into every rank at once: int, long long and double sums. */
static void accumulate_all(void)
{
    enum { N = 512, ROUNDS = 20 };
    int size = g_mpitest_size, me = g_mpitest_rank;
    MPI_Win wi, wl, wd;
    int *bi;
    long long *bl;
    double *bd;
    int oi[N];
    long long ol[N];
    double od[N];

    mpitest_context("concurrent accumulates");
    CHECK_MPI(
        MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &bi, &wi));
    CHECK_MPI(MPI_Win_allocate(N * sizeof(long long), sizeof(long long), MPI_INFO_NULL,
                               MPI_COMM_WORLD, &bl, &wl));
    CHECK_MPI(MPI_Win_allocate(N * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD,
                               &bd, &wd));
    for (int i = 0; i < N; i++) {
        bi[i] = 0;
        bl[i] = 0;
        bd[i] = 0;
        oi[i] = me + 1;
        ol[i] = (long long)(me + 1) << 33;
        od[i] = 0.5 * (me + 1);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_lock_all(0, wi));
    CHECK_MPI(MPI_Win_lock_all(0, wl));
    CHECK_MPI(MPI_Win_lock_all(0, wd));
    for (int r = 0; r < ROUNDS; r++)
        for (int t = 0; t < size; t++) {
            int target = (me + t + r) % size;

            CHECK_MPI(MPI_Accumulate(oi, N, MPI_INT, target, 0, N, MPI_INT, MPI_SUM, wi));
            CHECK_MPI(
                MPI_Accumulate(ol, N, MPI_LONG_LONG, target, 0, N, MPI_LONG_LONG, MPI_SUM, wl));
            CHECK_MPI(MPI_Accumulate(od, N, MPI_DOUBLE, target, 0, N, MPI_DOUBLE, MPI_SUM, wd));
            if (r % 5 == 4)
                CHECK_MPI(MPI_Win_flush(target, wi));
        }
    CHECK_MPI(MPI_Win_unlock_all(wi));
    CHECK_MPI(MPI_Win_unlock_all(wl));
    CHECK_MPI(MPI_Win_unlock_all(wd));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    {
        long long sum = (long long)size * (size + 1) / 2 * ROUNDS;

        for (int i = 0; i < N; i++) {
            CHECK_EQ(bi[i], sum);
            CHECK_EQ(bl[i], sum << 33);
            CHECK(bd[i] == 0.5 * (double)sum);
        }
    }
    MPI_Win_free(&wi);
    MPI_Win_free(&wl);
    MPI_Win_free(&wd);
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;

    return x < y ? -1 : x > y;
}

/* fetch_and_op on one counter from every rank: every value handed out exactly once. */
static void fetch_and_op_counter(void)
{
    enum { OPS = 200 };
    int size = g_mpitest_size, me = g_mpitest_rank;
    long long *counter, one = 1, got[OPS], *all = NULL;
    MPI_Win win;

    mpitest_context("fetch_and_op counter");
    CHECK_MPI(MPI_Win_allocate(sizeof(long long), sizeof(long long), MPI_INFO_NULL, MPI_COMM_WORLD,
                               &counter, &win));
    *counter = 0;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (int i = 0; i < OPS; i++) {
        CHECK_MPI(MPI_Fetch_and_op(&one, &got[i], MPI_LONG_LONG, 0, 0, MPI_SUM, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        if (i)
            CHECK(got[i] > got[i - 1]);
    }
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) {
        CHECK_EQ(*counter, (long long)size * OPS);
        all = mpitest_malloc(sizeof(long long) * OPS * size);
    }
    CHECK_MPI(MPI_Gather(got, OPS, MPI_LONG_LONG, all, OPS, MPI_LONG_LONG, 0, MPI_COMM_WORLD));
    if (me == 0) {
        qsort(all, (size_t)OPS * size, sizeof(long long), cmp_ll);
        for (int i = 0; i < OPS * size; i++)
            CHECK_EQ(all[i], i);
        free(all);
    }
    MPI_Win_free(&win);
}

/* compare_and_swap as a lock around a non-atomic read-modify-write of rank 0's memory. */
static void cas_lock(void)
{
    enum { ROUNDS = 30 };
    int me = g_mpitest_rank, size = g_mpitest_size;
    long long *mem, zero = 0, mine = me + 1, prev, val, back;
    MPI_Win win;

    mpitest_context("compare_and_swap lock");
    CHECK_MPI(MPI_Win_allocate(2 * sizeof(long long), sizeof(long long), MPI_INFO_NULL,
                               MPI_COMM_WORLD, &mem, &win));
    mem[0] = mem[1] = 0;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (int r = 0; r < ROUNDS; r++) {
        do {
            CHECK_MPI(MPI_Compare_and_swap(&mine, &zero, &prev, MPI_LONG_LONG, 0, 0, win));
            CHECK_MPI(MPI_Win_flush(0, win));
        } while (prev != 0);
        CHECK_MPI(MPI_Get(&val, 1, MPI_LONG_LONG, 0, 1, 1, MPI_LONG_LONG, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        val++;
        CHECK_MPI(MPI_Put(&val, 1, MPI_LONG_LONG, 0, 1, 1, MPI_LONG_LONG, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        CHECK_MPI(MPI_Compare_and_swap(&zero, &mine, &back, MPI_LONG_LONG, 0, 0, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        CHECK_EQ(back, mine);
    }
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0)
        CHECK_EQ(mem[1], (long long)size * ROUNDS);
    MPI_Win_free(&win);
}

/* get_accumulate NO_OP (atomic read) and REPLACE (atomic swap); request forms. */
static void get_acc_and_requests(void)
{
    int me = g_mpitest_rank, size = g_mpitest_size, to = (me + 1) % size;
    int *mem, v[4] = {me, me, me, me}, old[4], got[4];
    MPI_Request reqs[3];
    MPI_Status stats[2]; /* MPI_STATUSES_IGNORE trips gcc 12's -Wstringop-overflow */
    MPI_Win win;

    mpitest_context("get_accumulate and request forms");
    CHECK_MPI(
        MPI_Win_allocate(8 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    for (int i = 0; i < 8; i++)
        mem[i] = 100 + i;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, to, 0, win));
    CHECK_MPI(
        MPI_Get_accumulate(NULL, 0, MPI_INT, old, 4, MPI_INT, to, 0, 4, MPI_INT, MPI_NO_OP, win));
    CHECK_MPI(MPI_Win_flush(to, win));
    for (int i = 0; i < 4; i++)
        CHECK_EQ(old[i], 100 + i);
    CHECK_MPI(
        MPI_Get_accumulate(v, 4, MPI_INT, old, 4, MPI_INT, to, 0, 4, MPI_INT, MPI_REPLACE, win));
    CHECK_MPI(MPI_Win_flush(to, win));
    /* A put and an accumulate to the same place conflict unless a flush orders them. */
    CHECK_MPI(MPI_Rput(v, 4, MPI_INT, to, 4, 4, MPI_INT, win, &reqs[0]));
    CHECK_MPI(MPI_Wait(&reqs[0], &stats[0]));
    CHECK_MPI(MPI_Win_flush(to, win));
    CHECK_MPI(MPI_Raccumulate(v, 4, MPI_INT, to, 4, 4, MPI_INT, MPI_SUM, win, &reqs[1]));
    CHECK_MPI(MPI_Wait(&reqs[1], &stats[1]));
    CHECK_MPI(MPI_Win_flush(to, win));
    CHECK_MPI(MPI_Rget(got, 4, MPI_INT, to, 4, 4, MPI_INT, win, &reqs[2]));
    CHECK_MPI(MPI_Wait(&reqs[2], MPI_STATUS_IGNORE));
    for (int i = 0; i < 4; i++)
        CHECK_EQ(got[i], 2 * me);
    CHECK_MPI(MPI_Win_unlock(to, win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < 4; i++)
        CHECK_EQ(mem[i], (me + size - 1) % size);
    MPI_Win_free(&win);
}

/*
 * Noncontiguous origin data into contiguous target memory goes native: a put
 * packs it, a get unpacks into it (every other int of a vector).
 */
static void noncontig_origin(void)
{
    int me = g_mpitest_rank, size = g_mpitest_size, to = (me + 1) % size;
    int *mem, src[8], dst[8];
    MPI_Datatype vec;
    MPI_Win win;
    unsigned long long n0 = native_ops(), f0 = fallback_ops();

    mpitest_context("vector origin, contiguous target");
    CHECK_MPI(
        MPI_Win_allocate(8 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    for (int i = 0; i < 8; i++) {
        mem[i] = -1;
        src[i] = me * 100 + i;
        dst[i] = -2;
    }
    CHECK_MPI(MPI_Type_vector(4, 1, 2, MPI_INT, &vec));
    CHECK_MPI(MPI_Type_commit(&vec));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Put(src, 1, vec, to, 0, 4, MPI_INT, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int i = 0; i < 4; i++)
        CHECK_EQ(mem[i], ((me + size - 1) % size) * 100 + 2 * i);
    CHECK_EQ(mem[4], -1);
    CHECK_MPI(MPI_Get(dst, 1, vec, to, 0, 4, MPI_INT, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int i = 0; i < 8; i++)
        CHECK_EQ(dst[i], i % 2 ? -2 : me * 100 + i);
    if (g_native) {
        CHECK_EQ(native_ops() - n0, 2);
        CHECK_EQ(fallback_ops() - f0, 0);
    }
    MPI_Type_free(&vec);
    MPI_Win_free(&win);
}

/*
 * A shared window (MPI_Win_allocate_shared): puts, gets and fetch_and_op to
 * the right neighbour's segment go native. Under MPIR_CVAR_NOLOCAL=1 every
 * rank is its own node, so MPICH 4.0 gives each its own memory and load/store
 * through MPI_Win_shared_query reaches only a rank's own segment. MPICH 4.3
 * refuses such a window ("processes are not in the same shared memory
 * domain"), as MPI allows: the phase is left out there, saying so.
 */
static void shared_window(void)
{
    enum { N = 1024 };
    int me = g_mpitest_rank, size = g_mpitest_size, to = (me + 1) % size;
    int from = (me + size - 1) % size, disp;
    long long *mem, *peer, src[N], got[N], one = 1, old = -1;
    MPI_Aint peer_size;
    MPI_Win win;
    unsigned long long nat = native_ops();

    mpitest_context("shared window");
    if (mpitest_mpich_version() >= 403) {
        if (me == 0)
            printf("rma_native: shared window left out: MPICH 4.3 refuses one across nodes "
                   "(MPIR_CVAR_NOLOCAL=1)\n");
        return;
    }
    CHECK_MPI(MPI_Win_allocate_shared(N * sizeof(long long), sizeof(long long), MPI_INFO_NULL,
                                      MPI_COMM_WORLD, &mem, &win));
    CHECK_MPI(MPI_Win_shared_query(win, to, &peer_size, &disp, &peer));
    CHECK_EQ(peer_size, (MPI_Aint)(N * sizeof(long long)));
    for (int i = 0; i < N; i++) {
        mem[i] = -1;
        src[i] = me * 100000 + i;
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_lock_all(0, win));
    CHECK_MPI(MPI_Put(src, N - 1, MPI_LONG_LONG, to, 1, N - 1, MPI_LONG_LONG, win));
    CHECK_MPI(MPI_Win_flush(to, win));
    CHECK_MPI(MPI_Get(got, N - 1, MPI_LONG_LONG, to, 1, N - 1, MPI_LONG_LONG, win));
    CHECK_MPI(MPI_Win_flush(to, win));
    for (int i = 0; i < N - 1; i++)
        CHECK_EQ(got[i], me * 100000LL + i);
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_lock_all(0, win));
    CHECK_MPI(MPI_Fetch_and_op(&one, &old, MPI_LONG_LONG, to, 0, MPI_SUM, win));
    CHECK_MPI(MPI_Win_flush(to, win));
    CHECK_EQ(old, -1);
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_EQ(mem[0], 0);
    for (int i = 1; i < N; i++)
        CHECK_EQ(mem[i], from * 100000LL + i - 1);
    if (mpitest_pvar_checks())
        CHECK_EQ(native_ops() - nat, g_native && to != me ? 3 : 0);
    MPI_Win_free(&win);
}

/*
 * Noncontiguous target data: a vector of 4 pieces (one engine operation on 4
 * remote ranges), of 10 pieces (three engine operations) and of 100 pieces
 * (more than EFARM_RMA_TARGET_IOV_MAX: through MPIDIG), by put, get and
 * accumulate; and a MAXLOC accumulate, which has no native path. Every
 * element and every gap is checked.
 */
static void noncontig_targets(void)
{
    enum { N = 256 };
    int me = g_mpitest_rank, size = g_mpitest_size, to = (me + 1) % size;
    int from = (me + size - 1) % size;
    static const int pieces[] = {4, 10, 100};
    int *mem, src[N], got[N];
    struct {
        int v, loc;
    } * pairs, mine = {me * 10, me};
    MPI_Win win, wpair;
    unsigned long long fb = fallback_ops(), nat = native_ops(),
                       split = mpitest_pvar_read("efarm_nm_rma_native_split");

    CHECK_MPI(
        MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    CHECK_MPI(MPI_Win_allocate(sizeof(*pairs), sizeof(*pairs), MPI_INFO_NULL, MPI_COMM_WORLD,
                               &pairs, &wpair));
    for (unsigned p = 0; p < sizeof(pieces) / sizeof(pieces[0]); p++) {
        int np = pieces[p];
        MPI_Datatype vec;

        mpitest_context("noncontiguous target: vector of %d pieces", np);
        /* np single ints, every other int of the target from displacement 1 */
        CHECK_MPI(MPI_Type_vector(np, 1, 2, MPI_INT, &vec));
        CHECK_MPI(MPI_Type_commit(&vec));
        for (int i = 0; i < N; i++) {
            mem[i] = -1;
            src[i] = me * 1000 + i;
        }
        /* put: contiguous origin into every other int of the target */
        CHECK_MPI(MPI_Win_fence(0, win));
        CHECK_MPI(MPI_Put(src, np, MPI_INT, to, 1, 1, vec, win));
        CHECK_MPI(MPI_Win_fence(0, win));
        for (int i = 0; i < N; i++) {
            int k = i - 1;

            CHECK_EQ(mem[i], k >= 0 && k % 2 == 0 && k / 2 < np ? from * 1000 + k / 2 : -1);
        }
        /* get: the same pieces back into a contiguous buffer */
        memset(got, 0, sizeof(got));
        CHECK_MPI(MPI_Win_fence(0, win));
        CHECK_MPI(MPI_Get(got, np, MPI_INT, to, 1, 1, vec, win));
        CHECK_MPI(MPI_Win_fence(0, win));
        for (int k = 0; k < np; k++)
            CHECK_EQ(got[k], me * 1000 + k);
        CHECK_EQ(got[np], 0);
        /* accumulate: every rank adds 1 into the pieces of every rank */
        CHECK_MPI(MPI_Win_fence(0, win));
        for (int i = 0; i < N; i++)
            src[i] = 1;
        for (int t = 0; t < size; t++)
            CHECK_MPI(MPI_Accumulate(src, np, MPI_INT, t, 1, 1, vec, MPI_SUM, win));
        CHECK_MPI(MPI_Win_fence(0, win));
        for (int i = 0; i < N; i++) {
            int k = i - 1;

            CHECK_EQ(mem[i], k >= 0 && k % 2 == 0 && k / 2 < np ? from * 1000 + k / 2 + size : -1);
        }
        MPI_Type_free(&vec);
    }
    mpitest_context("MAXLOC accumulate");
    pairs->v = -1;
    pairs->loc = -1;
    CHECK_MPI(MPI_Win_fence(0, wpair));
    CHECK_MPI(MPI_Accumulate(&mine, 1, MPI_2INT, 0, 0, 1, MPI_2INT, MPI_MAXLOC, wpair));
    CHECK_MPI(MPI_Win_fence(0, wpair));
    if (me == 0) {
        CHECK_EQ(pairs->v, (size - 1) * 10);
        CHECK_EQ(pairs->loc, size - 1);
    }
    if (mpitest_pvar_checks()) {
        mpitest_context("noncontiguous target counters");
        if (g_native) {
            /*
             * Native: put, get and accumulates to others for 4 and 10 pieces;
             * through MPIDIG: 100 pieces (put, get, accumulates to all), the
             * accumulates to itself and MAXLOC (rank 0's own is local).
             */
            unsigned long long others = (unsigned long long)size - 1;

            CHECK_EQ(native_ops() - nat, 2 * (2 + others));
            CHECK_EQ(mpitest_pvar_read("efarm_nm_rma_native_split") - split, 2 + others);
            CHECK_EQ(fallback_ops() - fb, 2 + (unsigned long long)size + 2 + 1);
        } else {
            CHECK_EQ(native_ops() - nat, 0);
        }
    }
    MPI_Win_free(&win);
    MPI_Win_free(&wpair);
}

/*
 * Rank 1 computes (no MPI calls) until rank 0's put lands in its memory.
 * Rank 0 first reads (MPI_Get, RDMA) until rank 1 says it is spinning, so
 * the put cannot be applied by rank 1's progress in the barrier before.
 */
static void passive_progress(unsigned wait_s)
{
    volatile long long *mem;
    MPI_Win win;

    mpitest_context("one-sided progress while the target computes");
    CHECK_MPI(MPI_Win_allocate(2 * sizeof(long long), sizeof(long long), MPI_INFO_NULL,
                               MPI_COMM_WORLD, (void *)&mem, &win));
    mpitest_rma_passive_check(win, mem, 0, 1, wait_s);
    MPI_Win_free(&win);
}

/*
 * MPITEST_RMA_PROTO=direct: puts and gets went by RDMA write and read, none
 * emulated; =emulated: the reverse (EFARM_RDMA_WRITE=0 EFARM_RDMA_READ=0):
 * EAGER_RTW packets up to 64 KiB, LONGCTS_RTW above, SHORT_RTR up to one
 * READRSP, LONGCTS_RTR above; =longread (EFARM_RDMA_WRITE=0): gets by RDMA
 * read, the 1 MiB puts by LONGREAD_RTW (the target reads them).
 */
static void proto_check(void)
{
    const char *want = getenv("MPITEST_RMA_PROTO");
    unsigned long long dw = mpitest_pvar_read("efarm_rma_direct_write"),
                       dr = mpitest_pvar_read("efarm_rma_direct_read"),
                       ew = mpitest_pvar_read("efarm_rma_eager_rtw"),
                       er = mpitest_pvar_read("efarm_rma_short_rtr"),
                       lw = mpitest_pvar_read("efarm_rma_longcts_rtw"),
                       lrw = mpitest_pvar_read("efarm_rma_longread_rtw"),
                       lr = mpitest_pvar_read("efarm_rma_longcts_rtr");

    if (want == NULL)
        return;
    if (strcmp(want, "direct") == 0) {
        CHECK_GE(dw, 35);
        CHECK_GE(dr, 35);
        CHECK_EQ(ew + er + lw + lrw + lr, 0);
    } else if (strcmp(want, "longread") == 0) {
        CHECK_EQ(dw, 0);
        CHECK_GE(dr, 35);
        CHECK_GE(lrw, 2);
        CHECK_GE(ew, 30);
        CHECK_EQ(er + lr, 0);
    } else {
        CHECK_EQ(dw + dr + lrw, 0);
        CHECK_GE(ew, 30);
        CHECK_GE(lw, 2);
        CHECK_GE(er, 20);
        CHECK_GE(lr, 8);
    }
    /* Accumulates to the other ranks; fetch_and_op and the CAS lock target rank 0. */
    CHECK_GE(mpitest_pvar_read("efarm_rma_write_rta"), 60 * (g_mpitest_size - 1));
    CHECK_GE(mpitest_pvar_read("efarm_rma_fetch_rta"), (g_mpitest_rank ? 200 : 0) + 2);
    CHECK_GE(mpitest_pvar_read("efarm_rma_compare_rta"), g_mpitest_rank ? 60 : 0);
}

int main(int argc, char **argv)
{
    const char *expect;
    unsigned long long n0, f0;
    MPI_Group world;
    size_t win_size = (1 << 20) + 4096;

    mpitest_init(&argc, &argv, "rma_native");
    expect = getenv("MPITEST_RMA_EXPECT");
    g_native = expect == NULL || strcmp(expect, "am") != 0;
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
    n0 = native_ops();
    f0 = fallback_ops();

    for (int created = 0; created < 2; created++) {
        uint8_t *base, *mem = NULL;
        MPI_Win win;

        if (created) {
            mem = mpitest_malloc(win_size);
            CHECK_MPI(
                MPI_Win_create(mem, (MPI_Aint)win_size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
            base = mem;
        } else {
            CHECK_MPI(MPI_Win_allocate((MPI_Aint)win_size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                                       &win));
        }
        for (int m = 0; m < SYNC_N; m++)
            put_get(win, base, win_size, (enum sync_mode)m, world, created);
        MPI_Win_free(&win);
        free(mem);
    }
    accumulate_all();
    fetch_and_op_counter();
    cas_lock();
    get_acc_and_requests();
    mpitest_context("counters");
    if (mpitest_pvar_checks() && !(expect && strcmp(expect, "mixed") == 0)) {
        unsigned long long n = native_ops() - n0, f = fallback_ops() - f0;

        if (g_native) {
            /*
             * Native: put and get (2 windows x 5 modes x 7 sizes x 2), the
             * accumulates to other ranks (20 rounds x 3 types), 5 in
             * get_acc_and_requests, and for ranks other than 0 the 200
             * fetch_and_op and at least 4 x 30 operations of the CAS lock.
             * Atomics on the caller's own memory go through MPIDIG: exactly
             * the 60 accumulates to itself, plus rank 0's 200 fetch_and_op
             * and at least 2 x 30 compare_and_swap (its own puts and gets go
             * through ch4's shared-memory path: not counted here).
             */
            int me = g_mpitest_rank, others = g_mpitest_size - 1;

            CHECK_GE(n, 140 + 60 * others + 5 + (me ? 200 + 120 : 0));
            if (me)
                CHECK_EQ(f, 60);
            else
                CHECK_GE(f, 60 + 200 + 60);
            proto_check();
        } else {
            CHECK_EQ(n, 0);
            CHECK_GE(f, 2 * 5 * 7 * 2);
        }
    }
    noncontig_origin();
    noncontig_targets();
    shared_window();
    if (g_native && g_mpitest_size >= 2 && mpitest_env_size("MPITEST_RMA_PASSIVE", 0))
        passive_progress((unsigned)mpitest_env_size("MPITEST_RMA_PASSIVE", 0));
    MPI_Group_free(&world);
    mpitest_finalize();
    return 0;
}
