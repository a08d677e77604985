/*
 * Registration cache tests, with fake ops that record every registration:
 * hits and misses, page enlargement, access upgrades, LRU order, the bounds,
 * -ENOSPC/-E2BIG, registration failures, invalidation, close, threads, the
 * pass-through fallback, an allocation-failure walk, and the reuse cases the
 * memory hook exists for (memory released and mapped again at the same address
 * must not hit a stale registration).
 *
 * Tests of the cache's logic set g_efarm_mr_cache_assume_hook, so they run in
 * every build; the reuse tests do not, and check whatever mode the build gives
 * (caching with a live hook, or pass-through where the hook is compiled out).
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "efarm_errno.h"
#include "efarm_mr_cache.h"
#include "efarm_test.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define TEST_HOOK_NOT_BUILT 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TEST_HOOK_NOT_BUILT 1
#endif
#ifdef TEST_ASAN
#include <sanitizer/lsan_interface.h>
#endif

#define ACC_LOCAL_WRITE 1u
#define ACC_REMOTE_READ 4u

/* ---- Fake registration backend ------------------------------------------------------ */

struct fake_mr {
    uintptr_t addr;
    size_t len;
    unsigned access;
    uint32_t lkey;
    atomic_int test_refs; /* references the test holds; dereg must see 0 */
};

struct fake {
    pthread_mutex_t lock;
    atomic_ulong nreg, nreg_calls, ndereg;
    size_t live, live_bytes, max_live; /* max_live: 0 = no device limit */
    int fail_ret;                      /* return this from reg ... */
    unsigned fail_count;               /* ... this many times */
    uintptr_t last_dereg_addr;
    atomic_int errors; /* dereg of a registration the test still references */
    void (*during_reg)(struct fake *f, void *addr, size_t len);
    struct efarm_mr_cache *cache;
};

static int fake_reg(void *ctx, void *addr, size_t len, unsigned access, void **handle_p,
                    uint32_t *lkey_p, uint32_t *rkey_p)
{
    struct fake *f = ctx;
    struct fake_mr *mr;
    int ret = 0;

    atomic_fetch_add(&f->nreg_calls, 1);
    if (f->during_reg)
        f->during_reg(f, addr, len);
    pthread_mutex_lock(&f->lock);
    if (f->fail_count) {
        f->fail_count--;
        ret = f->fail_ret;
    } else if (f->max_live && f->live == f->max_live) {
        ret = -ENOMEM;
    } else {
        f->live++;
        f->live_bytes += len;
    }
    pthread_mutex_unlock(&f->lock);
    if (ret)
        return ret;
    mr = calloc(1, sizeof(*mr)); /* the device allocates too: the hook sees it */
    if (!mr)
        abort();
    mr->addr = (uintptr_t)addr;
    mr->len = len;
    mr->access = access;
    mr->lkey = (uint32_t)atomic_fetch_add(&f->nreg, 1) + 1;
    *handle_p = mr;
    *lkey_p = mr->lkey;
    *rkey_p = mr->lkey | 0x80000000u;
    return 0;
}

static void fake_dereg(void *ctx, void *handle)
{
    struct fake *f = ctx;
    struct fake_mr *mr = handle;

    if (atomic_load(&mr->test_refs))
        atomic_fetch_add(&f->errors, 1);
    pthread_mutex_lock(&f->lock);
    f->live--;
    f->live_bytes -= mr->len;
    f->last_dereg_addr = mr->addr;
    pthread_mutex_unlock(&f->lock);
    atomic_fetch_add(&f->ndereg, 1);
    free(mr);
}

static const struct efarm_mr_cache_ops g_fake_ops = {.reg = fake_reg, .dereg = fake_dereg};

static size_t g_page;

static void fake_init(struct fake *f)
{
    *f = (struct fake){0};
    pthread_mutex_init(&f->lock, NULL);
    g_page = (size_t)sysconf(_SC_PAGESIZE);
}

/* A cache with the logic under test, whatever the build does about the hook. */
static struct efarm_mr_cache *open_forced(struct fake *f, size_t max_entries, size_t max_bytes)
{
    struct efarm_mr_cache *cache = NULL;

    fake_init(f);
    atomic_store(&g_efarm_mr_cache_assume_hook, 1);
    EXPECT_RET(efarm_mr_cache_open(&g_fake_ops, f, max_entries, max_bytes, &cache), 0);
    f->cache = cache;
    return cache;
}

/* Page-aligned memory the tests never release (so no hook ever invalidates it). */
static char *arena(size_t pages)
{
    char *p = mmap(NULL, pages * (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    EXPECT_TRUE(p != MAP_FAILED);
    return p;
}

static struct efarm_mr_cache_stats stats_of(struct efarm_mr_cache *cache)
{
    struct efarm_mr_cache_stats s;

    efarm_mr_cache_stats(cache, &s);
    return s;
}

/* Under ASan, fail if the test leaked heap memory (the runner's _exit skips LeakSanitizer). */
static void expect_no_leaks(void)
{
#ifdef TEST_ASAN
    EXPECT_EQ(__lsan_do_recoverable_leak_check(), 0);
#endif
}

static const struct fake_mr *mr_of(const struct efarm_mr_ref *ref)
{
    return ref->handle;
}

/* ---- Logic ---------------------------------------------------------------------- */

EFARM_TEST(mr_cache_hit_miss)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_forced(&f, 16, 1 << 20);
    char *a = arena(4);
    struct efarm_mr_ref r1, r2, r3;

    EXPECT_RET(efarm_mr_cache_get(cache, a + 64, 1000, ACC_LOCAL_WRITE, &r1), 0);
    EXPECT_EQ(f.nreg, 1);
    EXPECT_EQ(r1.lkey, 1);
    EXPECT_EQ(r1.rkey, 0x80000001u);
    efarm_mr_cache_put(cache, &r1);
    EXPECT_TRUE(r1.entry == NULL);
    efarm_mr_cache_put(cache, &r1); /* a cleared reference: nothing */

    EXPECT_RET(efarm_mr_cache_get(cache, a + 64, 1000, ACC_LOCAL_WRITE, &r2), 0);
    EXPECT_RET(efarm_mr_cache_get(cache, a + 10, 20, 0, &r3), 0);
    EXPECT_EQ(r2.lkey, 1);
    EXPECT_EQ(r3.lkey, 1);
    EXPECT_EQ(f.nreg, 1);

    struct efarm_mr_cache_stats s = stats_of(cache);
    EXPECT_EQ(s.hits, 2);
    EXPECT_EQ(s.misses, 1);
    EXPECT_EQ(s.entries, 1);
    EXPECT_EQ(s.cached, 1);
    EXPECT_EQ(s.bytes, g_page);
    EXPECT_TRUE(s.caching);
    efarm_mr_cache_put(cache, &r2);
    efarm_mr_cache_put(cache, &r3);
    EXPECT_EQ(f.ndereg, 0);
    efarm_mr_cache_close(cache);
    EXPECT_EQ(f.ndereg, 1);
    EXPECT_EQ(f.errors, 0);
}

EFARM_TEST(mr_cache_page_enlargement)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_forced(&f, 16, 1 << 20);
    char *a = arena(8);
    struct efarm_mr_ref r;

    EXPECT_RET(efarm_mr_cache_get(cache, a + 100, 10, 0, &r), 0);
    EXPECT_TRUE(r.addr == a);
    EXPECT_EQ(r.length, g_page);
    EXPECT_EQ(mr_of(&r)->addr, (uintptr_t)a);
    EXPECT_EQ(mr_of(&r)->len, g_page);
    efarm_mr_cache_put(cache, &r);

    /* Across a page boundary: registered as the union with the overlapped entry. */
    EXPECT_RET(efarm_mr_cache_get(cache, a + g_page - 5, 10, 0, &r), 0);
    EXPECT_TRUE(r.addr == a);
    EXPECT_EQ(r.length, 2 * g_page);
    EXPECT_EQ(f.ndereg, 1); /* the one-page registration it replaced */
    EXPECT_EQ(f.last_dereg_addr, (uintptr_t)a);
    efarm_mr_cache_put(cache, &r);

    EXPECT_RET(efarm_mr_cache_get(cache, a + 10, 5, 0, &r), 0);
    EXPECT_EQ(r.lkey, 2);
    efarm_mr_cache_put(cache, &r);

    /* An exactly page-aligned range is not enlarged. */
    EXPECT_RET(efarm_mr_cache_get(cache, a + 4 * g_page, 2 * g_page, 0, &r), 0);
    EXPECT_TRUE(r.addr == a + 4 * g_page);
    EXPECT_EQ(r.length, 2 * g_page);
    efarm_mr_cache_put(cache, &r);
    EXPECT_EQ(stats_of(cache).cached, 2);
    efarm_mr_cache_close(cache);
    EXPECT_EQ(f.nreg, f.ndereg);
}

EFARM_TEST(mr_cache_merge_beyond_max_bytes)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_forced(&f, 16, 3 * (size_t)sysconf(_SC_PAGESIZE));
    char *a = arena(8);
    struct efarm_mr_ref r;

    EXPECT_RET(efarm_mr_cache_get(cache, a, 2 * g_page, 0, &r), 0);
    efarm_mr_cache_put(cache, &r);
    /* The union [a, a + 4 pages) would exceed max_bytes: register only the range. */
    EXPECT_RET(efarm_mr_cache_get(cache, a + g_page, 3 * g_page, 0, &r), 0);
    EXPECT_TRUE(r.addr == a + g_page);
    EXPECT_EQ(r.length, 3 * g_page);
    EXPECT_EQ(f.ndereg, 1);
    struct efarm_mr_cache_stats s = stats_of(cache);
    EXPECT_EQ(s.cached, 1);
    EXPECT_EQ(s.entries, 1);
    EXPECT_EQ(s.bytes, 3 * g_page);
    efarm_mr_cache_put(cache, &r);
    efarm_mr_cache_close(cache);
}

EFARM_TEST(mr_cache_access_upgrade)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_forced(&f, 16, 1 << 20);
    char *a = arena(4);
    struct efarm_mr_ref r, held;

    EXPECT_RET(efarm_mr_cache_get(cache, a, 100, ACC_LOCAL_WRITE, &held), 0);
    /* Needs more access than cached: a miss, registering the union of the bits. */
    EXPECT_RET(efarm_mr_cache_get(cache, a, 100, ACC_REMOTE_READ, &r), 0);
    EXPECT_EQ(f.nreg, 2);
    EXPECT_EQ(mr_of(&r)->access, ACC_LOCAL_WRITE | ACC_REMOTE_READ);
    EXPECT_EQ(f.ndereg, 0); /* the old one is still referenced */
    efarm_mr_cache_put(cache, &r);

    EXPECT_RET(efarm_mr_cache_get(cache, a, 100, ACC_LOCAL_WRITE, &r), 0);
    EXPECT_EQ(r.lkey, 2);
    efarm_mr_cache_put(cache, &r);
    EXPECT_RET(efarm_mr_cache_get(cache, a, 100, ACC_REMOTE_READ | ACC_LOCAL_WRITE, &r), 0);
    EXPECT_EQ(r.lkey, 2);
    efarm_mr_cache_put(cache, &r);
    EXPECT_RET(efarm_mr_cache_get(cache, a, 100, 2, &r), 0);
    EXPECT_EQ(r.lkey, 3);
    EXPECT_EQ(mr_of(&r)->access, 7);
    efarm_mr_cache_put(cache, &r);

    struct efarm_mr_cache_stats s = stats_of(cache);
    EXPECT_EQ(s.entries, 2); /* the cached one and the retired, held one */
    EXPECT_EQ(s.cached, 1);
    efarm_mr_cache_put(cache, &held); /* the last reference deregisters it */
    EXPECT_EQ(f.ndereg, 2);
    EXPECT_EQ(stats_of(cache).entries, 1);
    efarm_mr_cache_close(cache);
    EXPECT_EQ(f.nreg, f.ndereg);
}

/* get and put one page of the arena. */
static void touch(struct efarm_mr_cache *cache, char *base, unsigned page_index)
{
    struct efarm_mr_ref r;

    efarm_test_context("touch page %u", page_index);
    EXPECT_RET(efarm_mr_cache_get(cache, base + page_index * g_page, 64, 0, &r), 0);
    efarm_mr_cache_put(cache, &r);
}

EFARM_TEST(mr_cache_lru_order)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_forced(&f, 3, 1 << 20);
    char *a = arena(16);

    touch(cache, a, 0); /* A */
    touch(cache, a, 2); /* B */
    touch(cache, a, 4); /* C */
    touch(cache, a, 0); /* A again: now the most recent */
    EXPECT_EQ(f.nreg, 3);
    touch(cache, a, 6); /* D evicts B */
    EXPECT_EQ(f.ndereg, 1);
    EXPECT_EQ(f.last_dereg_addr, (uintptr_t)(a + 2 * g_page));
    touch(cache, a, 8); /* E evicts C */
    EXPECT_EQ(f.last_dereg_addr, (uintptr_t)(a + 4 * g_page));
    touch(cache, a, 0); /* A is still cached */
    EXPECT_EQ(f.nreg, 5);
    touch(cache, a, 10); /* evicts D, the least recent after A's use */
    EXPECT_EQ(f.last_dereg_addr, (uintptr_t)(a + 6 * g_page));

    struct efarm_mr_cache_stats s = stats_of(cache);
    EXPECT_EQ(s.evictions, 3);
    EXPECT_EQ(s.entries, 3);
    EXPECT_EQ(s.hits, 2);
    EXPECT_EQ(s.misses, 6);
    efarm_mr_cache_close(cache);
    EXPECT_EQ(f.nreg, f.ndereg);
}

EFARM_TEST(mr_cache_bound_by_bytes)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_forced(&f, 100, 4 * (size_t)sysconf(_SC_PAGESIZE));
    char *a = arena(32);
    struct efarm_mr_ref r;

    for (unsigned i = 0; i < 8; i++) {
        efarm_test_context("buffer %u", i);
        /* 2-page buffers, a page apart so they never merge. */
        EXPECT_RET(efarm_mr_cache_get(cache, a + 3 * i * g_page, 2 * g_page, 0, &r), 0);
        efarm_mr_cache_put(cache, &r);
        struct efarm_mr_cache_stats s = stats_of(cache);
        EXPECT_TRUE(s.bytes <= 4 * g_page);
        EXPECT_EQ(s.bytes, f.live_bytes);
        EXPECT_EQ(s.entries, i < 2 ? i + 1 : 2);
    }
    /* A 1-page buffer fits next to one 2-page buffer only after evicting the older. */
    EXPECT_RET(efarm_mr_cache_get(cache, a + 30 * g_page, 1, 0, &r), 0);
    EXPECT_EQ(f.last_dereg_addr, (uintptr_t)(a + 18 * g_page));
    efarm_mr_cache_put(cache, &r);
    EXPECT_EQ(stats_of(cache).evictions, 7);
    efarm_mr_cache_close(cache);
    EXPECT_EQ(f.nreg, f.ndereg);
}

EFARM_TEST(mr_cache_bound_by_entries)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_forced(&f, 4, 1 << 30);
    char *a = arena(64);

    for (unsigned i = 0; i < 20; i++) {
        touch(cache, a, 2 * i);
        EXPECT_TRUE(stats_of(cache).entries <= 4);
        EXPECT_TRUE(f.live <= 4);
    }
    EXPECT_EQ(stats_of(cache).evictions, 16);
    efarm_mr_cache_close(cache);
    EXPECT_EQ(f.nreg, f.ndereg);
}

EFARM_TEST(mr_cache_all_referenced_enospc)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_forced(&f, 2, 1 << 20);
    char *a = arena(16);
    struct efarm_mr_ref r1, r2, r3;

    EXPECT_RET(efarm_mr_cache_get(cache, a, 8, 0, &r1), 0);
    EXPECT_RET(efarm_mr_cache_get(cache, a + 2 * g_page, 8, 0, &r2), 0);
    r3.lkey = 12345;
    EXPECT_RET(efarm_mr_cache_get(cache, a + 4 * g_page, 8, 0, &r3), -ENOSPC);
    EXPECT_EQ(r3.lkey, 12345); /* untouched on failure */
    EXPECT_EQ(f.nreg_calls, 2);
    EXPECT_EQ(stats_of(cache).entries, 2);
    /* A hit still works at the bound. */
    EXPECT_RET(efarm_mr_cache_get(cache, a + 16, 8, 0, &r3), 0);
    efarm_mr_cache_put(cache, &r3);
    efarm_mr_cache_put(cache, &r1);
    EXPECT_RET(efarm_mr_cache_get(cache, a + 4 * g_page, 8, 0, &r3), 0);
    EXPECT_EQ(f.last_dereg_addr, (uintptr_t)a);
    efarm_mr_cache_put(cache, &r2);
    efarm_mr_cache_put(cache, &r3);
    efarm_mr_cache_close(cache);

    /* The same by bytes: two referenced pages fill a two-page cache. */
    cache = open_forced(&f, 100, 2 * g_page);
    EXPECT_RET(efarm_mr_cache_get(cache, a, 8, 0, &r1), 0);
    EXPECT_RET(efarm_mr_cache_get(cache, a + 2 * g_page, 8, 0, &r2), 0);
    EXPECT_RET(efarm_mr_cache_get(cache, a + 4 * g_page, 8, 0, &r3), -ENOSPC);
    efarm_mr_cache_put(cache, &r1);
    efarm_mr_cache_put(cache, &r2);
    efarm_mr_cache_close(cache);
    EXPECT_EQ(f.nreg, f.ndereg);
    expect_no_leaks();
}

EFARM_TEST(mr_cache_reg_failure_evicts_and_retries)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_forced(&f, 16, 1 << 20);
    char *a = arena(32);
    struct efarm_mr_ref r, held[3];

    /* The device holds 3 registrations; the cache would hold 16. */
    f.max_live = 3;
    touch(cache, a, 0);
    touch(cache, a, 2);
    touch(cache, a, 4);
    EXPECT_RET(efarm_mr_cache_get(cache, a + 6 * g_page, 8, 0, &r), 0);
    EXPECT_EQ(f.nreg_calls, 5); /* one -ENOMEM, then the retry */
    EXPECT_EQ(f.ndereg, 3);     /* everything unreferenced was evicted */
    EXPECT_EQ(stats_of(cache).evictions, 3);
    efarm_mr_cache_put(cache, &r);
    efarm_mr_cache_close(cache);

    /* Everything referenced: nothing to evict, no retry, the error comes back. */
    cache = open_forced(&f, 16, 1 << 20);
    f.max_live = 3;
    for (unsigned i = 0; i < 3; i++)
        EXPECT_RET(efarm_mr_cache_get(cache, a + 2 * i * g_page, 8, 0, &held[i]), 0);
    EXPECT_RET(efarm_mr_cache_get(cache, a + 6 * g_page, 8, 0, &r), -ENOMEM);
    EXPECT_EQ(f.nreg_calls, 4);
    struct efarm_mr_cache_stats s = stats_of(cache);
    EXPECT_EQ(s.entries, 3);
    EXPECT_EQ(s.bytes, 3 * g_page);
    for (unsigned i = 0; i < 3; i++)
        efarm_mr_cache_put(cache, &held[i]);
    efarm_mr_cache_close(cache);

    /* The retry fails too: its error is returned. */
    cache = open_forced(&f, 16, 1 << 20);
    touch(cache, a, 0);
    f.fail_ret = -ENOSPC;
    f.fail_count = 2;
    EXPECT_RET(efarm_mr_cache_get(cache, a + 2 * g_page, 8, 0, &r), -ENOSPC);
    EXPECT_EQ(f.nreg_calls, 3);
    EXPECT_EQ(stats_of(cache).entries, 0);
    /* Other errors are not retried. */
    touch(cache, a, 0);
    f.fail_ret = -EFAULT;
    f.fail_count = 1;
    EXPECT_RET(efarm_mr_cache_get(cache, a + 2 * g_page, 8, 0, &r), -EFAULT);
    EXPECT_EQ(f.nreg_calls, 5);
    EXPECT_EQ(stats_of(cache).entries, 1);
    efarm_mr_cache_close(cache);
    EXPECT_EQ(f.nreg, f.ndereg);
    expect_no_leaks();
}

EFARM_TEST(mr_cache_bad_ranges)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_forced(&f, 16, 4 * (size_t)sysconf(_SC_PAGESIZE));
    char *a = arena(8);
    struct efarm_mr_ref r;

    EXPECT_RET(efarm_mr_cache_get(cache, a, 5 * g_page, 0, &r), -E2BIG);
    EXPECT_RET(efarm_mr_cache_get(cache, a + 1, 4 * g_page, 0, &r), -E2BIG); /* spans 5 pages */
    EXPECT_RET(efarm_mr_cache_get(cache, a, 0, 0, &r), -EINVAL);
    EXPECT_RET(efarm_mr_cache_get(cache, (void *)(UINTPTR_MAX - 10), 20, 0, &r), -EINVAL);
    EXPECT_RET(efarm_mr_cache_get(cache, (void *)(UINTPTR_MAX - 10), 5, 0, &r), -EINVAL);
    EXPECT_EQ(f.nreg_calls, 0);
    EXPECT_RET(efarm_mr_cache_get(cache, a, 4 * g_page, 0, &r), 0);
    efarm_mr_cache_put(cache, &r);
    efarm_mr_cache_close(cache);

    struct efarm_mr_cache *c2 = NULL;
    EXPECT_RET(efarm_mr_cache_open(&g_fake_ops, &f, 0, 100, &c2), -EINVAL);
    EXPECT_RET(efarm_mr_cache_open(&g_fake_ops, &f, 10, 0, &c2), -EINVAL);
    EXPECT_RET(efarm_mr_cache_open(NULL, &f, 10, 100, &c2), -EINVAL);
    EXPECT_RET(efarm_mr_cache_open(&g_fake_ops, &f, SIZE_MAX, 100, &c2), -EINVAL);
    EXPECT_TRUE(c2 == NULL);
}

EFARM_TEST(mr_cache_invalidate_defers_referenced)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_forced(&f, 16, 1 << 20);
    char *a = arena(16);
    struct efarm_mr_ref held, r;

    EXPECT_RET(efarm_mr_cache_get(cache, a, 8, 0, &held), 0);
    touch(cache, a, 2);
    touch(cache, a, 8);
    efarm_mr_cache_invalidate(cache, a, 3 * g_page);
    EXPECT_EQ(f.ndereg, 1); /* page 2 now; page 0 is referenced */
    EXPECT_EQ(f.last_dereg_addr, (uintptr_t)(a + 2 * g_page));
    struct efarm_mr_cache_stats s = stats_of(cache);
    EXPECT_EQ(s.invalidations, 2);
    EXPECT_EQ(s.cached, 1); /* page 8 */
    EXPECT_EQ(s.entries, 2);

    /* The range is looked up afresh; the held reference stays valid. */
    EXPECT_RET(efarm_mr_cache_get(cache, a, 8, 0, &r), 0);
    EXPECT_TRUE(r.lkey != held.lkey);
    EXPECT_EQ(f.nreg, 4);
    efarm_mr_cache_put(cache, &r);
    EXPECT_EQ(f.ndereg, 1);
    efarm_mr_cache_put(cache, &held);
    EXPECT_EQ(f.ndereg, 2);
    EXPECT_EQ(f.last_dereg_addr, (uintptr_t)a);

    efarm_mr_cache_invalidate(cache, a + 100 * g_page, g_page); /* nothing there */
    efarm_mr_cache_invalidate(cache, a, 0);
    EXPECT_EQ(stats_of(cache).invalidations, 2);
    efarm_mr_cache_close(cache);
    EXPECT_EQ(f.nreg, f.ndereg);
    EXPECT_EQ(f.errors, 0);
}

/* An invalidation that arrives while the range is being registered. */
static void invalidate_during_reg(struct fake *f, void *addr, size_t len)
{
    efarm_mr_cache_invalidate(f->cache, addr, len);
}

EFARM_TEST(mr_cache_invalidate_during_registration)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_forced(&f, 16, 1 << 20);
    char *a = arena(4);
    struct efarm_mr_ref r;

    f.during_reg = invalidate_during_reg;
    EXPECT_RET(efarm_mr_cache_get(cache, a, 8, 0, &r), 0);
    f.during_reg = NULL;
    EXPECT_EQ(stats_of(cache).cached, 0); /* valid for this get, not cached */
    EXPECT_EQ(stats_of(cache).invalidations, 1);
    efarm_mr_cache_put(cache, &r);
    EXPECT_EQ(f.ndereg, 1);
    EXPECT_RET(efarm_mr_cache_get(cache, a, 8, 0, &r), 0);
    EXPECT_EQ(f.nreg, 2);
    efarm_mr_cache_put(cache, &r);
    efarm_mr_cache_close(cache);
    EXPECT_EQ(f.nreg, f.ndereg);
}

EFARM_TEST(mr_cache_close_deregisters_everything)
{
    struct fake f;
    struct efarm_mr_cache *cache;
    char *a = arena(16);
    struct efarm_mr_ref held1, held2;

    efarm_mr_cache_close(open_forced(&f, 1, 1)); /* empty */
    efarm_mr_cache_close(NULL);
    cache = open_forced(&f, 16, 1 << 20);
    EXPECT_RET(efarm_mr_cache_get(cache, a, 8, 0, &held1), 0);
    EXPECT_RET(efarm_mr_cache_get(cache, a + 2 * g_page, 8, 0, &held2), 0);
    efarm_mr_cache_invalidate(cache, a + 2 * g_page, 1); /* held2 retired */
    touch(cache, a, 4);
    touch(cache, a, 6);
    /* Still referenced: a caller bug, reported on stderr and deregistered anyway. */
    efarm_mr_cache_close(cache);
    EXPECT_EQ(f.nreg, 4);
    EXPECT_EQ(f.ndereg, 4);
    EXPECT_EQ(f.live, 0);
    expect_no_leaks();
}

EFARM_TEST(mr_cache_env_disables_caching)
{
    struct fake f;
    struct efarm_mr_cache *cache;
    char *a = arena(8);
    struct efarm_mr_ref r1, r2, r3;

    setenv("EFARM_MR_CACHE", "0", 1);
    cache = open_forced(&f, 2, 1 << 20); /* the environment wins over the test hook */
    EXPECT_TRUE(!stats_of(cache).caching);
    EXPECT_RET(efarm_mr_cache_get(cache, a, 8, 0, &r1), 0);
    EXPECT_RET(efarm_mr_cache_get(cache, a, 8, 0, &r2), 0);
    EXPECT_EQ(f.nreg, 2);
    EXPECT_TRUE(r1.lkey != r2.lkey);
    EXPECT_RET(efarm_mr_cache_get(cache, a + 2 * g_page, 8, 0, &r3), -ENOSPC); /* still bounded */
    efarm_mr_cache_put(cache, &r1);
    EXPECT_EQ(f.ndereg, 1); /* every put deregisters */
    EXPECT_RET(efarm_mr_cache_get(cache, a, 8, 0, &r1), 0);
    EXPECT_EQ(f.nreg, 3);
    efarm_mr_cache_put(cache, &r1);
    efarm_mr_cache_put(cache, &r2);
    EXPECT_EQ(f.ndereg, 3);
    struct efarm_mr_cache_stats s = stats_of(cache);
    EXPECT_EQ(s.hits, 0);
    EXPECT_EQ(s.misses, 4);
    EXPECT_EQ(s.entries, 0);
    efarm_mr_cache_invalidate(cache, a, g_page); /* harmless */
    efarm_mr_cache_close(cache);
    EXPECT_EQ(f.nreg, f.ndereg);
}

/* ---- Allocation-failure walk ---------------------------------------------------------- */

/* open, three gets (two misses, one hit), puts, close; returns 0 or the first error. */
static int alloc_walk_once(struct fake *f, char *a)
{
    struct efarm_mr_cache *cache = NULL;
    struct efarm_mr_ref r1, r2, r3;
    int ret;

    ret = efarm_mr_cache_open(&g_fake_ops, f, 4, 1 << 20, &cache);
    if (ret)
        return ret;
    ret = efarm_mr_cache_get(cache, a, 8, 0, &r1);
    if (ret)
        goto out_close;
    ret = efarm_mr_cache_get(cache, a + 2 * g_page, 8, 0, &r2);
    if (ret)
        goto out_put1;
    ret = efarm_mr_cache_get(cache, a + 8, 8, 0, &r3);
    if (!ret)
        efarm_mr_cache_put(cache, &r3);
    efarm_mr_cache_put(cache, &r2);
out_put1:
    efarm_mr_cache_put(cache, &r1);
out_close:
    efarm_mr_cache_close(cache);
    return ret;
}

static void alloc_walk(bool caching)
{
    struct fake f;
    char *a = arena(8);
    unsigned long n;

    fake_init(&f);
    if (!caching)
        setenv("EFARM_MR_CACHE", "0", 1);
    atomic_store(&g_efarm_mr_cache_assume_hook, 1);
    for (n = 1;; n++) {
        efarm_test_context("caching %d, allocation %lu fails", caching, n);
        atomic_store(&g_efarm_mr_cache_alloc_fail_at, n);
        int ret = alloc_walk_once(&f, a);
        bool injected = atomic_load(&g_efarm_mr_cache_alloc_fail_at) == 0;

        atomic_store(&g_efarm_mr_cache_alloc_fail_at, 0);
        EXPECT_RET(ret, injected ? -ENOMEM : 0);
        EXPECT_EQ(f.nreg, f.ndereg);
        EXPECT_EQ(f.live, 0);
        if (!injected)
            break;
    }
    /* Caching: cache, lookup array, two entries (the third get hits); else cache, three entries. */
    EXPECT_EQ(n, 5);
    expect_no_leaks();
}

EFARM_TEST(mr_cache_alloc_failure_walk)
{
    alloc_walk(true);
}

EFARM_TEST(mr_cache_alloc_failure_walk_passthrough)
{
    alloc_walk(false);
}

/* ---- Threads --------------------------------------------------------------------- */

#define THREADS       4
#define THREAD_PAGES  20
#define THREAD_ACCESS 3u

struct thread_arg {
    struct efarm_mr_cache *cache;
    char *base;
    uint64_t seed;
    uint64_t gets, enospc, invalidates;
    int bad;
};

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1dull;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *hammer(void *p)
{
    struct thread_arg *t = p;
    struct efarm_mr_ref refs[2] = {{0}};
    double deadline = now_s() + 1.0;

    while (now_s() < deadline) {
        for (int k = 0; k < 64; k++) {
            uint64_t x = xorshift(&t->seed);
            unsigned slot = (unsigned)(x & 1), op = (unsigned)((x >> 1) % 16);
            size_t off = (size_t)((x >> 8) % ((THREAD_PAGES - 4) * g_page));
            size_t len = 1 + (size_t)((x >> 32) % (3 * g_page));
            unsigned access = (unsigned)(x >> 60) & THREAD_ACCESS;

            if (op == 0) {
                efarm_mr_cache_invalidate(t->cache, t->base + off, len);
                t->invalidates++;
                continue;
            }
            if (refs[slot].entry) {
                atomic_fetch_sub(&((struct fake_mr *)refs[slot].handle)->test_refs, 1);
                efarm_mr_cache_put(t->cache, &refs[slot]);
            }
            t->gets++;
            int ret = efarm_mr_cache_get(t->cache, t->base + off, len, access, &refs[slot]);
            if (ret == -ENOSPC) {
                t->enospc++;
                continue;
            }
            if (ret) {
                t->bad++;
                continue;
            }
            struct fake_mr *mr = refs[slot].handle;
            atomic_fetch_add(&mr->test_refs, 1);
            if ((uintptr_t)refs[slot].addr > (uintptr_t)(t->base + off) ||
                (uintptr_t)refs[slot].addr + refs[slot].length < (uintptr_t)(t->base + off + len) ||
                mr->addr != (uintptr_t)refs[slot].addr || mr->len != refs[slot].length ||
                (mr->access & access) != access || mr->lkey != refs[slot].lkey)
                t->bad++;
        }
    }
    for (int slot = 0; slot < 2; slot++) {
        if (refs[slot].entry) {
            atomic_fetch_sub(&((struct fake_mr *)refs[slot].handle)->test_refs, 1);
            efarm_mr_cache_put(t->cache, &refs[slot]);
        }
    }
    return NULL;
}

EFARM_TEST(mr_cache_threads)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_forced(&f, 12, 24 * (size_t)sysconf(_SC_PAGESIZE));
    char *a = arena(THREAD_PAGES);
    struct thread_arg args[THREADS];
    pthread_t threads[THREADS];
    uint64_t gets = 0, enospc = 0;

    for (int i = 0; i < THREADS; i++) {
        args[i] = (struct thread_arg){.cache = cache, .base = a, .seed = efarm_test_rand() | 1};
        EXPECT_EQ(pthread_create(&threads[i], NULL, hammer, &args[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        efarm_test_context("thread %d: %" PRIu64 " gets, %" PRIu64 " -ENOSPC", i, args[i].gets,
                           args[i].enospc);
        EXPECT_EQ(args[i].bad, 0);
        gets += args[i].gets;
        enospc += args[i].enospc;
    }
    struct efarm_mr_cache_stats s = stats_of(cache);
    efarm_test_context("%" PRIu64 " gets: %" PRIu64 " hits, %" PRIu64 " misses, %" PRIu64
                       " -ENOSPC, %" PRIu64 " evictions, %" PRIu64 " invalidations",
                       gets, s.hits, s.misses, enospc, s.evictions, s.invalidations);
    EXPECT_TRUE(gets > 1000);
    EXPECT_EQ(s.hits + s.misses, gets);
    EXPECT_TRUE(s.hits > 0);
    EXPECT_EQ(s.entries, f.nreg - f.ndereg);
    EXPECT_EQ(s.entries, f.live);
    EXPECT_EQ(s.bytes, f.live_bytes);
    EXPECT_EQ(s.entries, s.cached); /* every reference was put */
    EXPECT_TRUE(s.entries <= 12);
    EXPECT_TRUE(s.bytes <= 24 * g_page);
    EXPECT_EQ(f.errors, 0);
    efarm_mr_cache_close(cache);
    EXPECT_EQ(f.nreg, f.ndereg);
    expect_no_leaks();
}

/* ---- Reuse: released memory must not hit a stale registration --------------------------- */

/* A cache in whatever mode the build gives; caching exactly when the hook is live. */
static struct efarm_mr_cache *open_hooked(struct fake *f)
{
    struct efarm_mr_cache *cache = NULL;

    fake_init(f);
    EXPECT_RET(efarm_mr_cache_open(&g_fake_ops, f, 64, 64 << 20, &cache), 0);
    EXPECT_EQ(stats_of(cache).caching, efarm_mem_hook_status() == EFARM_MEM_HOOK_LIVE);
    f->cache = cache;
    return cache;
}

/* get and put [p, p + len); returns whether it hit. */
static bool cycle(struct efarm_mr_cache *cache, void *p, size_t len)
{
    uint64_t hits = stats_of(cache).hits;
    struct efarm_mr_ref r;

    EXPECT_RET(efarm_mr_cache_get(cache, p, len, ACC_REMOTE_READ, &r), 0);
    efarm_mr_cache_put(cache, &r);
    return stats_of(cache).hits != hits;
}

static void *map_at(void *hint, size_t len)
{
    void *p = mmap(hint, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (hint ? MAP_FIXED_NOREPLACE : 0), -1, 0);

    EXPECT_TRUE(p != MAP_FAILED);
    if (hint)
        EXPECT_TRUE(p == hint);
    return p;
}

EFARM_TEST(mr_cache_hook_status)
{
    enum efarm_mem_hook_status status = efarm_mem_hook_status();

#ifdef TEST_HOOK_NOT_BUILT
    EXPECT_EQ(status, EFARM_MEM_HOOK_NOT_BUILT);
#else
    EXPECT_EQ(status, EFARM_MEM_HOOK_NOT_INSTALLED); /* nothing patched until a cache caches */
#endif
    status = efarm_mem_hook_install();

    efarm_test_context("%s", efarm_mem_hook_status_string(status));
#ifdef TEST_HOOK_NOT_BUILT
    EXPECT_EQ(status, EFARM_MEM_HOOK_NOT_BUILT);
#else
    EXPECT_EQ(status, EFARM_MEM_HOOK_LIVE);
#endif
}

EFARM_TEST(mr_cache_reuse_munmap)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_hooked(&f);
    size_t len = 4 * g_page;
    void *p = map_at(NULL, len);
    bool caching = stats_of(cache).caching;

    EXPECT_TRUE(!cycle(cache, p, len));
    EXPECT_EQ(cycle(cache, p, len), caching); /* the same memory: a hit when caching */
    EXPECT_EQ(munmap(p, len), 0);
    EXPECT_EQ(stats_of(cache).invalidations, caching);
    map_at(p, len);
    EXPECT_TRUE(!cycle(cache, p, len)); /* new pages at the same address: a new registration */
    EXPECT_EQ(f.nreg, caching ? 2 : 3);
    EXPECT_EQ(f.nreg - f.ndereg, caching);
    munmap(p, len);
    efarm_mr_cache_close(cache);
    EXPECT_EQ(f.nreg, f.ndereg);
}

EFARM_TEST(mr_cache_reuse_partial_munmap)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_hooked(&f);
    size_t len = 8 * g_page;
    char *p = map_at(NULL, len);
    bool caching = stats_of(cache).caching;

    EXPECT_TRUE(!cycle(cache, p, g_page));           /* page 0 */
    EXPECT_TRUE(!cycle(cache, p + 4 * g_page, 100)); /* page 4 */
    EXPECT_EQ(munmap(p + 4 * g_page, 1), 0);         /* the kernel unmaps the whole page */
    EXPECT_EQ(stats_of(cache).invalidations, caching);
    EXPECT_EQ(cycle(cache, p, g_page), caching); /* page 0 untouched */
    map_at(p + 4 * g_page, g_page);
    EXPECT_TRUE(!cycle(cache, p + 4 * g_page, 100));
    munmap(p, len);
    efarm_mr_cache_close(cache);
}

EFARM_TEST(mr_cache_reuse_mremap)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_hooked(&f);
    size_t len = 4 * g_page;
    /* One more page than used: it stays mapped, so growing has to move. */
    char *p = map_at(NULL, len + g_page), *q;
    bool caching = stats_of(cache).caching;

    EXPECT_TRUE(!cycle(cache, p, len));
    q = mremap(p, len, 2 * len, MREMAP_MAYMOVE);
    EXPECT_TRUE(q != MAP_FAILED);
    EXPECT_TRUE(q != p);
    EXPECT_EQ(stats_of(cache).invalidations, caching);
    map_at(p, len);
    EXPECT_TRUE(!cycle(cache, p, len));
    EXPECT_TRUE(!cycle(cache, q, len));

    /* MREMAP_FIXED replaces the destination's pages. */
    char *src = map_at(NULL, len);
    EXPECT_EQ(cycle(cache, q, len), caching);
    EXPECT_TRUE(mremap(src, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, q) == q);
    EXPECT_TRUE(!cycle(cache, q, len));
    EXPECT_EQ(f.nreg, caching ? 4 : 5);
    efarm_mr_cache_close(cache);
}

EFARM_TEST(mr_cache_reuse_mmap_fixed)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_hooked(&f);
    size_t len = 4 * g_page;
    char *p = map_at(NULL, len);
    bool caching = stats_of(cache).caching;

    EXPECT_TRUE(!cycle(cache, p, len));
    EXPECT_TRUE(mmap(p + g_page, g_page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == p + g_page);
    EXPECT_EQ(stats_of(cache).invalidations, caching);
    EXPECT_TRUE(!cycle(cache, p, len));
    munmap(p, len);
    efarm_mr_cache_close(cache);
}

EFARM_TEST(mr_cache_reuse_madvise)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_hooked(&f);
    size_t len = 4 * g_page;
    char *p = map_at(NULL, len);
    bool caching = stats_of(cache).caching;

    EXPECT_TRUE(!cycle(cache, p, len));
    EXPECT_EQ(madvise(p, len, MADV_WILLNEED), 0); /* keeps the pages */
    EXPECT_EQ(cycle(cache, p, len), caching);
    EXPECT_EQ(madvise(p, g_page, MADV_DONTNEED), 0);
    EXPECT_EQ(stats_of(cache).invalidations, caching);
    EXPECT_TRUE(!cycle(cache, p, len));
    EXPECT_EQ(madvise(p + 3 * g_page, g_page, MADV_FREE), 0);
    EXPECT_EQ(stats_of(cache).invalidations, 2 * caching);
    munmap(p, len);
    efarm_mr_cache_close(cache);
}

EFARM_TEST(mr_cache_reuse_free_mmapped_chunk)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_hooked(&f);
    size_t len = 1 << 20;
    bool caching = stats_of(cache).caching;
    char *p, *q;

    /* A fixed threshold: 1 MiB blocks stay mmapped (glibc frees them with its internal munmap). */
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    p = malloc(len);
    EXPECT_TRUE(p != NULL);
    memset(p, 1, len);
    EXPECT_TRUE(!cycle(cache, p, len));
    EXPECT_EQ(cycle(cache, p, len), caching);
    free(p);
    EXPECT_EQ(stats_of(cache).invalidations, caching);
    q = malloc(len);
    EXPECT_TRUE(q != NULL);
    efarm_test_context("the second block is %s the first",
                       q == p ? "at the address of" : "apart from");
    EXPECT_TRUE(!cycle(cache, q, len));
    free(q);
    efarm_mr_cache_close(cache);
    EXPECT_EQ(f.nreg, f.ndereg);
}

EFARM_TEST(mr_cache_reuse_free_heap_chunk)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_hooked(&f);
    size_t len = 64 * 1024;
    bool caching = stats_of(cache).caching;
    struct efarm_mr_ref r;
    char *a, *b;

    mallopt(M_MMAP_THRESHOLD, 1 << 20); /* 64 KiB comes from the heap */
    a = malloc(len);
    b = malloc(64);
    EXPECT_TRUE(a && b);
    EXPECT_RET(efarm_mr_cache_get(cache, a, len, ACC_REMOTE_READ, &r), 0);
    bool neighbour =
        (uintptr_t)b >= (uintptr_t)r.addr && (uintptr_t)b < (uintptr_t)r.addr + r.length;
    efarm_mr_cache_put(cache, &r);
    /* Freeing another block on the registration's last page does not invalidate it. */
    free(b);
    EXPECT_EQ(stats_of(cache).invalidations, 0);
    efarm_test_context("the small block is %s the registered pages", neighbour ? "on" : "off");
    EXPECT_EQ(cycle(cache, a, len), caching);
    free(a);
    EXPECT_EQ(stats_of(cache).invalidations, caching);
    efarm_mr_cache_close(cache);
}

EFARM_TEST(mr_cache_reuse_realloc)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_hooked(&f);
    size_t len = 256 * 1024;
    bool caching = stats_of(cache).caching;
    char *p, *q;

    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    p = malloc(len);
    EXPECT_TRUE(p != NULL);
    EXPECT_TRUE(!cycle(cache, p, len));
    q = realloc(p, 2 * len); /* glibc mremaps the chunk internally */
    EXPECT_TRUE(q != NULL);
    EXPECT_EQ(stats_of(cache).invalidations, caching);
    EXPECT_TRUE(!cycle(cache, q, len));
    q = reallocarray(q, 4, len);
    EXPECT_TRUE(q != NULL);
    EXPECT_EQ(stats_of(cache).invalidations, 2 * caching);
    free(q);
    efarm_mr_cache_close(cache);
}

EFARM_TEST(mr_cache_reuse_shmdt)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_hooked(&f);
    size_t len = 4 * g_page;
    bool caching = stats_of(cache).caching;
    int id = shmget(IPC_PRIVATE, len, IPC_CREAT | 0600);
    char *p;

    if (id < 0) {
        printf("  (no System V shared memory here: %s)\n", strerror(errno));
        efarm_mr_cache_close(cache);
        return;
    }
    p = shmat(id, NULL, 0);
    shmctl(id, IPC_RMID, NULL);
    EXPECT_TRUE(p != (void *)-1);
    EXPECT_TRUE(!cycle(cache, p + 3 * g_page, 10)); /* the last page: the length was found */
    EXPECT_EQ(shmdt(p), 0);
    EXPECT_EQ(stats_of(cache).invalidations, caching);
    efarm_mr_cache_close(cache);
}

EFARM_TEST(mr_cache_reuse_sbrk)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_hooked(&f);
    size_t len = 2 * g_page;
    bool caching = stats_of(cache).caching;
    char *old_break, *p;

    /* Leave malloc a large top chunk, so that the cache's own allocations never move the break. */
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    mallopt(M_MMAP_THRESHOLD, 4 << 20);
    free(malloc(1 << 20));
    old_break = sbrk(0);
    if ((uintptr_t)old_break & (g_page - 1)) {
        efarm_mr_cache_close(cache);
        return;
    }
    p = sbrk((intptr_t)len);
    EXPECT_TRUE(p == old_break);
    EXPECT_TRUE(!cycle(cache, p, len));
    if (sbrk(0) != p + len) { /* malloc moved the break meanwhile: leave it alone */
        efarm_mr_cache_close(cache);
        return;
    }
    EXPECT_TRUE(sbrk(-(intptr_t)g_page) == p + len);
    EXPECT_EQ(stats_of(cache).invalidations, caching);
    EXPECT_TRUE(!cycle(cache, p, g_page));
    EXPECT_TRUE(sbrk(0) == p + g_page);
    EXPECT_EQ(brk(p), 0);
    EXPECT_EQ(stats_of(cache).invalidations, 2 * caching);
    efarm_mr_cache_close(cache);
}

/*
 * The documented gap: a release by a raw system call is not seen, and the
 * stale registration is hit until efarm_mr_cache_invalidate() says otherwise.
 */
EFARM_TEST(mr_cache_reuse_raw_syscall_not_seen)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_hooked(&f);
    size_t len = 4 * g_page;
    char *p = map_at(NULL, len);
    bool caching = stats_of(cache).caching;

    EXPECT_TRUE(!cycle(cache, p, len));
    EXPECT_EQ(syscall(SYS_munmap, p, len), 0);
    EXPECT_TRUE((void *)syscall(SYS_mmap, p, len, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) == p);
    EXPECT_EQ(stats_of(cache).invalidations, 0);
    EXPECT_EQ(cycle(cache, p, len), caching); /* stale when caching */
    efarm_mr_cache_invalidate(cache, p, len);
    EXPECT_TRUE(!cycle(cache, p, len));
    efarm_mr_cache_close(cache);
}

/* ---- Releases from a signal handler ------------------------------------------------- */

static void *volatile g_victim;
static atomic_int g_victim_done;

static void unmap_victim(int sig)
{
    (void)sig;
    munmap(g_victim, (size_t)sysconf(_SC_PAGESIZE));
    atomic_store(&g_victim_done, 1);
}

struct signaller {
    pthread_t target;
    atomic_int armed, stop;
    uint64_t seed;
};

static void *signal_later(void *p)
{
    struct signaller *s = p;

    while (!atomic_load(&s->stop)) {
        if (!atomic_exchange(&s->armed, 0))
            continue;
        for (volatile unsigned spin = (unsigned)(xorshift(&s->seed) % 4000); spin; spin--)
            ;
        pthread_kill(s->target, SIGUSR1);
    }
    return NULL;
}

/*
 * munmap from a signal handler that may interrupt the cache's own critical
 * section (here, efarm_mr_cache_stats in a loop): the hook cannot take the
 * lock then, so every cache drops everything at its next lock. Either way the
 * unmapped page must never hit again.
 */
EFARM_TEST(mr_cache_release_in_signal_handler)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_hooked(&f);
    struct signaller s = {.target = pthread_self(), .seed = efarm_test_rand() | 1};
    struct sigaction sa = {.sa_handler = unmap_victim};
    char *other = arena(2);
    unsigned flushes = 0, iterations = 400;
    pthread_t thread;

    if (!stats_of(cache).caching) {
        efarm_mr_cache_close(cache); /* no hook in this build: nothing to release */
        return;
    }
    sigemptyset(&sa.sa_mask);
    EXPECT_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
    EXPECT_EQ(pthread_create(&thread, NULL, signal_later, &s), 0);
    for (unsigned i = 0; i < iterations; i++) {
        char *page = map_at(NULL, g_page);

        efarm_test_context("iteration %u", i);
        cycle(cache, other, 64); /* an unrelated entry: only a flush removes it */
        EXPECT_TRUE(!cycle(cache, page, 64));
        uint64_t before = stats_of(cache).invalidations;
        g_victim = page;
        atomic_store(&g_victim_done, 0);
        atomic_store(&s.armed, 1);
        while (!atomic_load(&g_victim_done))
            stats_of(cache);
        map_at(page, g_page);
        EXPECT_TRUE(!cycle(cache, page, 64));
        uint64_t removed = stats_of(cache).invalidations - before;
        EXPECT_TRUE(removed == 1 || removed == 2);
        flushes += removed == 2;
        munmap(page, g_page);
    }
    atomic_store(&s.stop, 1);
    pthread_join(thread, NULL);
    efarm_test_context("%u of %u releases landed inside a critical section", flushes, iterations);
    EXPECT_TRUE(flushes > 0);
    efarm_mr_cache_close(cache);
    EXPECT_EQ(f.nreg, f.ndereg);
}

/* ---- fork ------------------------------------------------------------------------- */

struct forker {
    struct efarm_mr_cache *cache;
    char *base;
    atomic_int stop;
};

static void *get_put_forever(void *p)
{
    struct forker *fk = p;

    for (unsigned i = 0; !atomic_load(&fk->stop); i++) {
        struct efarm_mr_ref r;

        if (!efarm_mr_cache_get(fk->cache, fk->base + (i % 8) * 2 * g_page, 64, 0, &r))
            efarm_mr_cache_put(fk->cache, &r);
    }
    return NULL;
}

/*
 * fork while another thread is inside the cache: the child's releases near
 * registrations (free, munmap) go through the hook and must not find a lock
 * held by a thread that does not exist in the child.
 */
EFARM_TEST(mr_cache_fork_while_busy)
{
    struct fake f;
    struct efarm_mr_cache *cache = open_hooked(&f);
    struct forker fk = {.cache = cache, .base = arena(16)};
    pthread_t thread;
    char *block = malloc(4096);
    struct efarm_mr_ref r;

    EXPECT_TRUE(block != NULL);
    EXPECT_RET(efarm_mr_cache_get(cache, block, 4096, 0, &r), 0);
    efarm_mr_cache_put(cache, &r);
    EXPECT_EQ(pthread_create(&thread, NULL, get_put_forever, &fk), 0);
    for (int i = 0; i < 50; i++) {
        pid_t pid = fork();
        int status;

        efarm_test_context("fork %d", i);
        EXPECT_TRUE(pid >= 0);
        if (pid == 0) {
            alarm(5);
            free(block);
            munmap(fk.base, g_page);
            _exit(0);
        }
        EXPECT_EQ(waitpid(pid, &status, 0), pid);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    atomic_store(&fk.stop, 1);
    pthread_join(thread, NULL);
    free(block);
    efarm_mr_cache_close(cache);
    EXPECT_EQ(f.nreg, f.ndereg);
}
