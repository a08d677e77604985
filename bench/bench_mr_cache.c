/*
 * Registration cache benchmark: ns per hit and per miss (a get and its put)
 * with fake registration ops, at 16, 1024 and 65536 cached registrations.
 * The ops only count, and their cost is measured alone, so "logic" is what
 * the cache adds to a registration: lookup, LRU, eviction, entry allocation,
 * the sorted array's moves. Also: pass-through (EFARM_MR_CACHE=0) per
 * get+put, and what the memory hook adds to malloc+free.
 *
 *   bench-mr-cache [scale]   (scale multiplies the iteration counts; default 1)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "efarm_mr_cache.h"

static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Keeps the compiler from discarding work whose result is otherwise unused. */
static volatile uint64_t g_sink;
static uint32_t g_keys;

static int fake_reg(void *ctx, void *addr, size_t len, unsigned access, void **handle_p,
                    uint32_t *lkey_p, uint32_t *rkey_p)
{
    (void)ctx;
    (void)addr;
    (void)len;
    (void)access;
    *handle_p = &g_keys;
    *lkey_p = *rkey_p = ++g_keys;
    return 0;
}

static void fake_dereg(void *ctx, void *handle)
{
    (void)ctx;
    g_sink += (uintptr_t)handle;
}

static const struct efarm_mr_cache_ops g_ops = {.reg = fake_reg, .dereg = fake_dereg};

static size_t g_page;
static char *g_arena; /* address space only: the fake ops never touch it */

/* Buffer i: one page of the arena, with a free page after it so that none merge. */
static char *buffer(size_t i)
{
    return g_arena + 2 * i * g_page;
}

static void get_put(struct efarm_mr_cache *cache, char *p)
{
    struct efarm_mr_ref ref;

    if (efarm_mr_cache_get(cache, p + 64, 1024, 5, &ref))
        abort();
    g_sink += ref.lkey;
    efarm_mr_cache_put(cache, &ref);
}

static double best(double a, double b)
{
    return a < b ? a : b;
}

static double bench_fake_ops(long iters)
{
    double t = 1e30;

    for (int run = 0; run < 5; run++) {
        double t0 = now_ns();

        for (long i = 0; i < iters; i++) {
            void *handle;
            uint32_t lkey, rkey;

            fake_reg(NULL, buffer(0), g_page, 5, &handle, &lkey, &rkey);
            fake_dereg(NULL, handle);
        }
        t = best(t, (now_ns() - t0) / (double)iters);
    }
    return t;
}

/* Hits in random order over n cached registrations. */
static double bench_hits(struct efarm_mr_cache *cache, size_t n, long iters)
{
    uint32_t *order = malloc((size_t)iters * sizeof(*order));
    uint64_t x = 0x9e3779b97f4a7c15ull;
    double t = 1e30;

    if (!order)
        abort();
    for (long i = 0; i < iters; i++) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        order[i] = (uint32_t)((x * 0x2545f4914f6cdd1dull >> 32) % n);
    }
    for (int run = 0; run < 5; run++) {
        double t0 = now_ns();

        for (long i = 0; i < iters; i++)
            get_put(cache, buffer(order[i]));
        t = best(t, (now_ns() - t0) / (double)iters);
    }
    free(order);
    return t;
}

/*
 * Misses: cycling over 2n buffers (past the n first) through an n-entry LRU
 * misses every time. Checks that it did.
 */
static double bench_misses(struct efarm_mr_cache *cache, size_t n, long iters)
{
    struct efarm_mr_cache_stats before, after;
    size_t next = 0;
    double t = 1e30;

    efarm_mr_cache_stats(cache, &before);
    for (int run = 0; run < 5; run++) {
        double t0 = now_ns();

        for (long i = 0; i < iters; i++) {
            next = (next + 1) % (2 * n);
            get_put(cache, buffer(n + next));
        }
        t = best(t, (now_ns() - t0) / (double)iters);
    }
    efarm_mr_cache_stats(cache, &after);
    if (after.hits != before.hits || after.misses - before.misses != 5 * (uint64_t)iters)
        abort();
    return t;
}

static double bench_malloc_free(long iters)
{
    double t = 1e30;

    for (int run = 0; run < 5; run++) {
        double t0 = now_ns();

        for (long i = 0; i < iters; i++) {
            void *volatile p = malloc(64 + (size_t)(i & 255));

            free(p);
        }
        t = best(t, (now_ns() - t0) / (double)iters);
    }
    return t;
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {16, 1024, 65536};
    double scale = argc > 1 ? atof(argv[1]) : 1.0;
    long iters = (long)(1000000 * scale);
    struct efarm_mr_cache_stats stats;
    double fake, malloc_free_empty;

    g_page = (size_t)sysconf(_SC_PAGESIZE);
    g_arena = mmap(NULL, 6 * 65536 * g_page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (g_arena == MAP_FAILED || iters < 1000) {
        fprintf(stderr, "bench-mr-cache: no address space, or scale too small\n");
        return 1;
    }
    /*
     * The benchmark releases nothing it registers: cache whatever the hook's state. Install
     * the hook as a caching cache would, so that hits pay its check for newly loaded objects
     * and malloc+free goes through it, as in an MPI program.
     */
    efarm_mem_hook_install();
    atomic_store(&g_efarm_mr_cache_assume_hook, 1);
    fake = bench_fake_ops(iters);
    malloc_free_empty = bench_malloc_free(iters);

    printf("bench-mr-cache: best of 5; fake reg+dereg %.1f ns; memory hook: %s\n", fake,
           efarm_mem_hook_status_string(efarm_mem_hook_status()));
    printf("%8s  %12s  %12s  %12s  %14s  %14s\n", "entries", "hit get+put", "miss get+put",
           "miss logic", "pass-through", "malloc+free");
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k];
        struct efarm_mr_cache *cache, *passthrough;
        long miss_iters = n > 4096 ? iters / 50 : iters / 4;
        double hit, miss, pass, malloc_free;

        if (efarm_mr_cache_open(&g_ops, NULL, n, (size_t)-1, &cache))
            abort();
        for (size_t i = 0; i < n; i++)
            get_put(cache, buffer(i));
        hit = bench_hits(cache, n, iters);
        malloc_free = bench_malloc_free(iters);
        miss = bench_misses(cache, n, miss_iters);
        efarm_mr_cache_stats(cache, &stats);
        if (stats.entries != n || !stats.caching)
            abort();
        efarm_mr_cache_close(cache);

        setenv("EFARM_MR_CACHE", "0", 1);
        if (efarm_mr_cache_open(&g_ops, NULL, n, (size_t)-1, &passthrough))
            abort();
        unsetenv("EFARM_MR_CACHE");
        pass = bench_misses(passthrough, n, iters / 4);
        efarm_mr_cache_close(passthrough);

        printf("%8zu  %9.1f ns  %9.1f ns  %9.1f ns  %11.1f ns  %6.1f/%.1f ns\n", n, hit, miss,
               miss - fake, pass, malloc_free_empty, malloc_free);
    }
    printf("(miss logic = miss - fake reg+dereg; malloc+free: no registrations / n registrations"
           " elsewhere)\n");

    /* A registered heap buffer: frees in the same 1 MiB take the hook's locked path. */
    struct efarm_mr_cache *cache;
    struct efarm_mr_ref ref;
    char *heap = malloc(64 * 1024);

    if (!heap || efarm_mr_cache_open(&g_ops, NULL, 16, (size_t)-1, &cache) ||
        efarm_mr_cache_get(cache, heap, 64 * 1024, 5, &ref))
        abort();
    efarm_mr_cache_put(cache, &ref);
    printf("malloc+free next to a registered heap buffer: %.1f ns\n", bench_malloc_free(iters));
    efarm_mr_cache_close(cache);
    free(heap);
    return 0;
}
