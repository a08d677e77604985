/*
 * The registration cache under MPI (issue 14): read-protocol messages (1 MiB
 * to 4 MiB) whose buffers are reused, freed, reallocated and unmapped, so
 * that addresses come back with new pages and new contents. Every byte must
 * be the new contents: a registration kept across a release would make the
 * peer RDMA-read the old pages.
 *
 * Ranks pair up (rank ^ 1); each round one message each way, the lower rank
 * sending first. Phases:
 * A. the same send and receive buffers for MPITEST_MR_ROUNDS (10) rounds per
 *    size, new contents every round: with the cache caching, the later rounds
 *    hit (no registration);
 * B. every round a new buffer on both sides, cycling through malloc + free,
 *    realloc (grow and shrink, the block moves or not) and mmap + munmap with
 *    the next mapping placed at the address just unmapped: the memory hook
 *    must invalidate, and the data must be new.
 * The cache's counters come from libefarm itself (efarm_mr_cache_totals and
 * efarm_mem_hook_status, found with dlsym) and must equal the netmod's MPI_T
 * variables efarm_nm_mr_cache_*; rank 0 prints them as "mr-cache:" lines.
 * MPITEST_MR_CACHE=on (default) requires the hook live, caching, and hits in
 * phase A on every rank; =off (run with EFARM_MR_CACHE=0) requires
 * pass-through: no hit, a registration per read.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "efarm_mpitest.h"

#include "../../src/device/efarm_mr_cache.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { TAG = 70, NSIZES = 3 };

static int g_partner;
static int g_expect_caching;

static void (*g_totals)(struct efarm_mr_cache_stats *);
static enum efarm_mem_hook_status (*g_status)(void);

static void find_fn(const char *name, void *fn_p)
{
    void *sym = dlsym(RTLD_DEFAULT, name);

    mpitest_context("dlsym(%s): libefarm.so from this tree must be the one loaded", name);
    CHECK(sym != NULL);
    memcpy(fn_p, &sym, sizeof(sym));
}

static struct efarm_mr_cache_stats totals(void)
{
    struct efarm_mr_cache_stats s;

    g_totals(&s);
    return s;
}

static unsigned long long reads_sent(void)
{
    return mpitest_pvar_checks() ? mpitest_pvar_read("efarm_proto_longread") +
                                       mpitest_pvar_read("efarm_proto_runtread")
                                 : 0;
}

/* One message each way between the pair; a buffer of at least n bytes on each side. */
static void exchange(uint8_t *sbuf, uint8_t *rbuf, size_t n, int phase, int round)
{
    for (int turn = 0; turn < 2; turn++) {
        int i_send = (g_mpitest_rank < g_partner) == (turn == 0);
        int from = i_send ? g_mpitest_rank : g_partner;
        uint64_t seed = mpitest_seed((uint64_t)from, (uint64_t)phase, n, (uint64_t)round);

        mpitest_context("phase %c round %d: %zu bytes %s rank %d", 'A' + phase, round, n,
                        i_send ? "to" : "from", g_partner);
        if (i_send) {
            mpitest_fill(sbuf, n, seed);
            CHECK_MPI(MPI_Send(sbuf, (int)n, MPI_BYTE, g_partner, TAG, MPI_COMM_WORLD));
        } else {
            MPI_Status st;
            int count = -1;

            memset(rbuf, 0, n);
            CHECK_MPI(MPI_Recv(rbuf, (int)n, MPI_BYTE, g_partner, TAG, MPI_COMM_WORLD, &st));
            CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
            CHECK_EQ(count, n);
            CHECK_DATA(rbuf, n, seed);
        }
    }
}

/* A: the same buffers every round. Returns the hits this rank's caches scored. */
static unsigned long long phase_reuse(const size_t *sizes, size_t max, int rounds)
{
    uint8_t *sbuf = mpitest_malloc(max), *rbuf = mpitest_malloc(max);
    struct efarm_mr_cache_stats before = totals(), after;

    for (int s = 0; s < NSIZES; s++)
        for (int round = 0; round < rounds; round++)
            exchange(sbuf, rbuf, sizes[s], 0, round);
    after = totals();
    free(sbuf);
    free(rbuf);
    return after.hits - before.hits;
}

/* B's buffers: how round r gets its memory and gives it back. */
struct phase_buf {
    uint8_t *p;
    size_t len;
    void *last_map; /* where the previous mapping was: the next one goes there */
};

static void buf_get(struct phase_buf *b, size_t n, int round)
{
    switch (round % 3) {
    case 0:
        b->p = mpitest_malloc(n);
        break;
    case 1:
        /* realloc a block of another size into this one: it may move, or grow in place. */
        b->p = mpitest_malloc(n / 2 + 4096);
        memset(b->p, 0xa5, n / 2 + 4096);
        b->p = realloc(b->p, n);
        CHECK(b->p != NULL);
        break;
    default:
        b->p = mmap(b->last_map, n, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | (b->last_map ? MAP_FIXED_NOREPLACE : 0), -1, 0);
        if (b->p == MAP_FAILED) /* the old place got taken: anywhere */
            b->p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(b->p != MAP_FAILED);
        b->last_map = b->p;
        break;
    }
    b->len = n;
}

static void buf_put(struct phase_buf *b, int round)
{
    if (round % 3 == 2)
        CHECK_EQ(munmap(b->p, b->len), 0);
    else if (round % 3 == 1)
        free(realloc(b->p, 64)); /* shrink first: realloc releases too */
    else
        free(b->p);
    b->p = NULL;
}

/* B: new memory every round, often at the address just released. Returns the invalidations. */
static unsigned long long phase_release(const size_t *sizes, int rounds)
{
    struct phase_buf sb = {0}, rb = {0};
    struct efarm_mr_cache_stats before = totals(), after;

    for (int round = 0; round < rounds * NSIZES; round++) {
        size_t n = sizes[round % NSIZES];

        buf_get(&sb, sizes[NSIZES - 1], round);
        buf_get(&rb, sizes[NSIZES - 1], round);
        exchange(sb.p, rb.p, n, 1, round);
        /* Once more from the same memory: a hit when caching, new contents either way. */
        exchange(sb.p, rb.p, n, 1, round + 1000);
        buf_put(&sb, round);
        buf_put(&rb, round);
    }
    after = totals();
    return after.invalidations - before.invalidations;
}

static void report(const char *what, unsigned long long value)
{
    unsigned long long sum = 0;

    MPI_Reduce(&value, &sum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (g_mpitest_rank == 0)
        printf("mr-cache: %s %llu (all ranks)\n", what, sum);
}

int main(int argc, char **argv)
{
    const char *mode;
    size_t sizes[NSIZES], max;
    int rounds;
    unsigned long long hits, invalidations, reads0, reads;
    struct efarm_mr_cache_stats t0, t1;

    mpitest_init(&argc, &argv, "mr_cache_reuse");
    CHECK(g_mpitest_size % 2 == 0);
    g_partner = g_mpitest_rank ^ 1;
    mode = getenv("MPITEST_MR_CACHE");
    g_expect_caching = !mode || strcmp(mode, "off") != 0;
    rounds = (int)mpitest_env_size("MPITEST_MR_ROUNDS", 10);
    CHECK_GE(rounds, 2);
    find_fn("efarm_mr_cache_totals", &g_totals);
    find_fn("efarm_mem_hook_status", &g_status);

    /* Read sizes whatever the profile: from the unregistered-buffer read threshold to 4 MiB. */
    sizes[0] = g_mpitest_limits.read_min_unreg > (1u << 20) ? g_mpitest_limits.read_min_unreg
                                                            : (size_t)1 << 20;
    sizes[1] = sizes[0] * 2 + 3;
    sizes[2] = sizes[0] * 4;
    max = sizes[2];

    t0 = totals();
    reads0 = reads_sent();
    hits = phase_reuse(sizes, max, rounds);
    invalidations = phase_release(sizes, rounds);
    reads = reads_sent() - reads0;
    t1 = totals();

    mpitest_context("the cache after both phases (hook: %d)", (int)g_status());
    if (mpitest_pvar_checks())
        CHECK_GE(reads, (unsigned long long)rounds * NSIZES); /* read protocols were used */
    CHECK_EQ(t1.misses + t1.hits - t0.misses - t0.hits > 0, 1);
    if (g_expect_caching) {
        CHECK_EQ(g_status(), EFARM_MEM_HOOK_LIVE);
        CHECK(t1.caching);
        /* Phase A: each rank's send buffer alone hits in every round after a size's first. */
        CHECK_GE(hits, (unsigned long long)(rounds - 1) * NSIZES);
        /* Phase B: releases of registered memory were seen. */
        CHECK_GE(invalidations, 1);
    } else {
        CHECK(g_status() != EFARM_MEM_HOOK_LIVE); /* nothing wanted to cache: nothing patched */
        CHECK_EQ(t1.hits - t0.hits, 0);
    }
    if (mpitest_pvar_checks()) {
        mpitest_context("MPI_T efarm_nm_mr_cache_* against the cache's own totals");
        t1 = totals();
        CHECK_EQ(mpitest_pvar_read("efarm_nm_mr_cache_hits"), t1.hits);
        CHECK_EQ(mpitest_pvar_read("efarm_nm_mr_cache_misses"), t1.misses);
        CHECK_EQ(mpitest_pvar_read("efarm_nm_mr_cache_invalidations"), t1.invalidations);
        CHECK_EQ(mpitest_pvar_read("efarm_nm_mr_cache_evictions"), t1.evictions);
        CHECK_EQ(mpitest_pvar_read("efarm_nm_mr_cache_caching"), (unsigned long long)t1.caching);
    }
    report("read-protocol messages sent", reads);
    report("registrations (misses)", t1.misses - t0.misses);
    report("cache hits", t1.hits - t0.hits);
    report("invalidations", t1.invalidations - t0.invalidations);
    report("phase A hits", hits);
    report("phase B invalidations", invalidations);
    mpitest_finalize();
    return 0;
}
