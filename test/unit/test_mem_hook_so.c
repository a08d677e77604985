/*
 * The memory hook as a real program meets it: this test links libefarm.so
 * (not the objects: nothing of mem_hook.c is compiled in here) and a shared
 * helper library, as an MPI program links libmpi.so and its dependencies.
 * free, realloc and munmap called from the executable, from the linked helper
 * and from a helper dlopen'ed after the hook went live must each invalidate
 * the cached registration of the memory they release; before any caching
 * cache opens, nothing is patched, and with EFARM_MR_CACHE=0 nothing ever is.
 * Under ASan/TSan/MSan the hook is not built: the tests check pass-through.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "efarm_errno.h"
#include "efarm_mr_cache.h"
#include "efarm_test.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define TEST_HOOK_NOT_BUILT 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TEST_HOOK_NOT_BUILT 1
#endif

/* From the linked helper (mem_hook_helper.c). */
void *memhook_helper_malloc(size_t size);
void memhook_helper_free(void *ptr);
void *memhook_helper_realloc(void *ptr, size_t size);
int memhook_helper_munmap(void *addr, size_t len);

/* ---- Fake registration: counts only ------------------------------------------------- */

static atomic_ulong g_nreg, g_ndereg;

static int fake_reg(void *ctx, void *addr, size_t len, unsigned access, void **handle_p,
                    uint32_t *lkey_p, uint32_t *rkey_p)
{
    unsigned long n = atomic_fetch_add(&g_nreg, 1) + 1;

    (void)ctx, (void)addr, (void)len, (void)access;
    *handle_p = (void *)(uintptr_t)n;
    *lkey_p = (uint32_t)n;
    *rkey_p = (uint32_t)n;
    return 0;
}

static void fake_dereg(void *ctx, void *handle)
{
    (void)ctx, (void)handle;
    atomic_fetch_add(&g_ndereg, 1);
}

static const struct efarm_mr_cache_ops g_fake_ops = {.reg = fake_reg, .dereg = fake_dereg};

static bool hook_expected(void)
{
#ifdef TEST_HOOK_NOT_BUILT
    return false;
#else
    return true;
#endif
}

static struct efarm_mr_cache *open_cache(void)
{
    struct efarm_mr_cache *cache = NULL;
    struct efarm_mr_cache_stats s;

    EXPECT_RET(efarm_mr_cache_open(&g_fake_ops, NULL, 64, 64 << 20, &cache), 0);
    efarm_mr_cache_stats(cache, &s);
    efarm_test_context("%s", efarm_mem_hook_status_string(efarm_mem_hook_status()));
    EXPECT_EQ(s.caching, hook_expected());
    EXPECT_EQ(efarm_mem_hook_status() == EFARM_MEM_HOOK_LIVE, hook_expected());
    return cache;
}

static struct efarm_mr_cache_stats stats_of(struct efarm_mr_cache *cache)
{
    struct efarm_mr_cache_stats s;

    efarm_mr_cache_stats(cache, &s);
    return s;
}

/* get and put [p, p + len); returns whether it hit. */
static bool cycle(struct efarm_mr_cache *cache, void *p, size_t len)
{
    uint64_t hits = stats_of(cache).hits;
    struct efarm_mr_ref r;

    EXPECT_RET(efarm_mr_cache_get(cache, p, len, 4u, &r), 0);
    efarm_mr_cache_put(cache, &r);
    return stats_of(cache).hits != hits;
}

/* Register p twice (a hit the second time when caching), run release, expect one invalidation. */
#define EXPECT_RELEASE_SEEN(cache, p, len, release)                            \
    do {                                                                       \
        bool caching_ = stats_of(cache).caching;                               \
        uint64_t inval_ = stats_of(cache).invalidations;                       \
        EXPECT_TRUE(!cycle((cache), (p), (len)));                              \
        EXPECT_EQ(cycle((cache), (p), (len)), caching_);                       \
        release;                                                               \
        EXPECT_EQ(stats_of(cache).invalidations - inval_, (uint64_t)caching_); \
    } while (0)

/* 1 MiB blocks stay mmapped, so their pages go back to the system at free. */
enum { BLOCK = 1 << 20 };

static char *block(void *(*alloc)(size_t))
{
    char *p;

    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    p = alloc(BLOCK);
    EXPECT_TRUE(p != NULL);
    memset(p, 0x5a, BLOCK);
    return p;
}

static void *map(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    EXPECT_TRUE(p != MAP_FAILED);
    return p;
}

/* The address of free as this executable's GOT has it now (not inlined: the compiler would
 * load the GOT entry once for both calls). */
__attribute__((noinline)) static void *got_free(void)
{
    void (*volatile fn)(void *) = free;
    void *addr;

    memcpy(&addr, (void *)&fn, sizeof(addr));
    return addr;
}

/* ---- Tests ---------------------------------------------------------------------- */

EFARM_TEST(mem_hook_so_untouched_until_a_cache_caches)
{
    struct efarm_mr_cache *cache;

#ifdef TEST_HOOK_NOT_BUILT
    EXPECT_EQ(efarm_mem_hook_status(), EFARM_MEM_HOOK_NOT_BUILT);
#else
    EXPECT_EQ(efarm_mem_hook_status(), EFARM_MEM_HOOK_NOT_INSTALLED);
#endif
    EXPECT_TRUE(got_free() == dlsym(RTLD_DEFAULT, "free")); /* libc's, unpatched */
    cache = open_cache();
    EXPECT_EQ(got_free() != dlsym(RTLD_DEFAULT, "free"), hook_expected());
    efarm_mr_cache_close(cache);
}

EFARM_TEST(mem_hook_so_env_off_patches_nothing)
{
    struct efarm_mr_cache *cache = NULL;

    setenv("EFARM_MR_CACHE", "0", 1);
    EXPECT_RET(efarm_mr_cache_open(&g_fake_ops, NULL, 64, 64 << 20, &cache), 0);
    EXPECT_TRUE(!stats_of(cache).caching);
    EXPECT_TRUE(efarm_mem_hook_status() != EFARM_MEM_HOOK_LIVE);
    EXPECT_TRUE(got_free() == dlsym(RTLD_DEFAULT, "free"));
    efarm_mr_cache_close(cache);
}

EFARM_TEST(mem_hook_so_free_from_executable)
{
    struct efarm_mr_cache *cache = open_cache();
    char *p = block(malloc);

    EXPECT_RELEASE_SEEN(cache, p, BLOCK, free(p));
    p = block(malloc); /* likely the same address, new pages */
    EXPECT_TRUE(!cycle(cache, p, BLOCK));
    free(p);
    efarm_mr_cache_close(cache);
    EXPECT_EQ(atomic_load(&g_nreg), atomic_load(&g_ndereg));
}

EFARM_TEST(mem_hook_so_realloc_from_executable)
{
    struct efarm_mr_cache *cache = open_cache();
    char *p = block(malloc);

    EXPECT_RELEASE_SEEN(cache, p, BLOCK, p = realloc(p, 4 * BLOCK));
    EXPECT_TRUE(p != NULL);
    free(p);
    efarm_mr_cache_close(cache);
}

EFARM_TEST(mem_hook_so_munmap_from_executable)
{
    struct efarm_mr_cache *cache = open_cache();
    size_t len = 16 * (size_t)sysconf(_SC_PAGESIZE);
    void *p = map(len);

    EXPECT_RELEASE_SEEN(cache, p, len, EXPECT_EQ(munmap(p, len), 0));
    efarm_mr_cache_close(cache);
}

EFARM_TEST(mem_hook_so_free_from_linked_library)
{
    struct efarm_mr_cache *cache = open_cache();
    char *p = block(memhook_helper_malloc);

    EXPECT_RELEASE_SEEN(cache, p, BLOCK, memhook_helper_free(p));
    efarm_mr_cache_close(cache);
}

EFARM_TEST(mem_hook_so_realloc_from_linked_library)
{
    struct efarm_mr_cache *cache = open_cache();
    char *p = block(malloc);

    EXPECT_RELEASE_SEEN(cache, p, BLOCK, p = memhook_helper_realloc(p, 4 * BLOCK));
    EXPECT_TRUE(p != NULL);
    free(p);
    efarm_mr_cache_close(cache);
}

EFARM_TEST(mem_hook_so_munmap_from_linked_library)
{
    struct efarm_mr_cache *cache = open_cache();
    size_t len = 16 * (size_t)sysconf(_SC_PAGESIZE);
    void *p = map(len);

    EXPECT_RELEASE_SEEN(cache, p, len, EXPECT_EQ(memhook_helper_munmap(p, len), 0));
    efarm_mr_cache_close(cache);
}

/* A function of the dlopen'ed helper, into a typed pointer. */
static void helper_sym(void *handle, const char *name, void *fn_p)
{
    void *sym = dlsym(handle, name);

    EXPECT_TRUE(sym != NULL);
    memcpy(fn_p, &sym, sizeof(sym));
}

EFARM_TEST(mem_hook_so_dlopened_after_live)
{
    struct efarm_mr_cache *cache = open_cache();
    size_t len = 16 * (size_t)sysconf(_SC_PAGESIZE);
    char *kept = block(malloc), *p;
    void (*helper_free)(void *);
    int (*helper_munmap)(void *, size_t);
    void *(*helper_realloc)(void *, size_t);
    void *handle, *m;
    bool caching = stats_of(cache).caching;
    uint64_t inval;

    /* Cached before the load: the next get forgets it (the new object ran unpatched). */
    EXPECT_TRUE(!cycle(cache, kept, BLOCK));
    handle = dlopen(EFARM_TEST_HELPER_MODULE, RTLD_NOW | RTLD_LOCAL);
    efarm_test_context("dlopen: %s", handle ? "ok" : dlerror());
    EXPECT_TRUE(handle != NULL);
    helper_sym(handle, "memhook_helper_free", &helper_free);
    helper_sym(handle, "memhook_helper_munmap", &helper_munmap);
    helper_sym(handle, "memhook_helper_realloc", &helper_realloc);
    inval = stats_of(cache).invalidations;
    EXPECT_TRUE(!cycle(cache, kept, BLOCK));
    EXPECT_EQ(stats_of(cache).invalidations - inval, (uint64_t)caching);
    EXPECT_EQ(cycle(cache, kept, BLOCK), caching);

    /* Its releases reach the hook. */
    p = block(malloc);
    EXPECT_RELEASE_SEEN(cache, p, BLOCK, helper_free(p));
    p = block(malloc);
    EXPECT_RELEASE_SEEN(cache, p, BLOCK, p = helper_realloc(p, 4 * BLOCK));
    free(p);
    m = map(len);
    EXPECT_RELEASE_SEEN(cache, m, len, EXPECT_EQ(helper_munmap(m, len), 0));
    free(kept);
    efarm_mr_cache_close(cache);
    dlclose(handle);
}
