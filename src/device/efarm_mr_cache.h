/*
 * Memory registration cache for the buffers that a receiver RDMA-reads (the
 * long-read and runt-read protocols): the sender registers user buffers on the
 * fly, and registering costs far more than sending, so registrations are kept
 * and reused while the memory under them stays the same.
 *
 * The cache knows nothing about verbs: it registers and deregisters through a
 * caller-supplied ops table, so it is tested without a device. It is bounded
 * in registrations and in registered bytes, evicts least recently used
 * unreferenced registrations to make room, and is safe to call from several
 * threads (one mutex per cache).
 *
 * A cached registration goes stale when the application releases the memory
 * and later gets new pages at the same address; mem_hook.c watches releases
 * (munmap, mremap, mmap MAP_FIXED, madvise, brk/sbrk, shmdt, free, realloc) and
 * invalidates overlapping entries. mr_cache.c opens with the design, and
 * lists exactly which releases are seen and which are not. When the hook is
 * not active in the process, or EFARM_MR_CACHE=0, a cache passes through:
 * every get registers and every put deregisters.
 */
#ifndef EFARM_MR_CACHE_H
#define EFARM_MR_CACHE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct efarm_mr_cache;
struct efarm_mr_entry;

/*
 * Registration backend. Both functions are called without any cache lock
 * held, possibly from several threads at once, and may allocate, free and
 * unmap memory.
 */
struct efarm_mr_cache_ops {
    /*
     * Register [addr, addr + len) with `access` (IBV_ACCESS_* bits); on
     * success fill *handle_p (opaque to the cache, e.g. a struct ibv_mr *),
     * *lkey_p and *rkey_p and return 0. Otherwise return a negative errno:
     * -ENOMEM or -ENOSPC when the device or the memlock limit is exhausted
     * (the cache then evicts and retries once).
     */
    int (*reg)(void *ctx, void *addr, size_t len, unsigned access, void **handle_p,
               uint32_t *lkey_p, uint32_t *rkey_p);
    /* Deregister a handle that reg returned. */
    void (*dereg)(void *ctx, void *handle);
};

/*
 * A reference to a registration, filled by efarm_mr_cache_get(). The
 * registration stays valid until the reference is given back with
 * efarm_mr_cache_put(), even if the range is invalidated or evicted meanwhile.
 */
struct efarm_mr_ref {
    void *addr;    /* start of the registration (page aligned, covers the range asked for) */
    size_t length; /* length of the registration */
    void *handle;  /* what ops->reg returned */
    uint32_t lkey;
    uint32_t rkey;
    struct efarm_mr_entry *entry; /* private to the cache; NULL once put */
};

struct efarm_mr_cache_stats {
    uint64_t hits;          /* gets served by a cached registration */
    uint64_t misses;        /* gets that had to register (in pass-through mode, every get) */
    uint64_t evictions;     /* unreferenced registrations dropped to make room */
    uint64_t invalidations; /* registrations removed by invalidate() or the memory hook */
    size_t entries;         /* registrations held now: cached, referenced or awaiting dereg */
    size_t bytes;           /* bytes those registrations cover */
    size_t cached;          /* of them, registrations a get can hit */
    bool caching;           /* false: pass-through (EFARM_MR_CACHE=0 or no memory hook) */
};

/*
 * Open a cache that holds at most max_entries registrations covering at most
 * max_bytes bytes (both nonzero). ops and ctx must stay valid until
 * efarm_mr_cache_close(). Whether the cache caches or passes through is fixed
 * here: it caches when EFARM_MR_CACHE is not "0" and efarm_mem_hook_status()
 * is EFARM_MEM_HOOK_LIVE. A caching cache allocates its lookup array here, 16
 * bytes per entry, and a miss moves part of it: keep max_entries in the
 * thousands (bench-mr-cache prints the cost). The caller owns the cache and
 * closes it with efarm_mr_cache_close(). Returns 0, -EINVAL or -ENOMEM;
 * *cache_p is set only on success.
 */
int efarm_mr_cache_open(const struct efarm_mr_cache_ops *ops, void *ctx, size_t max_entries,
                        size_t max_bytes, struct efarm_mr_cache **cache_p);

/*
 * Deregister every registration and free the cache. References still held
 * are a caller bug: they are reported on stderr and deregistered anyway, so
 * they must not be used or put afterwards. No get or put may run concurrently.
 */
void efarm_mr_cache_close(struct efarm_mr_cache *cache);

/*
 * Take a reference to a registration covering [addr, addr + len) with at
 * least the access bits in `access`. A hit reuses a cached registration; a
 * miss registers the page-aligned enlargement of the range (merged with the
 * cached registrations it overlaps when the result fits in max_bytes), evicting
 * unreferenced registrations to stay within the bounds. Returns 0 and fills
 * *ref_p, or:
 *   -EINVAL  len is 0 or the range wraps around the address space;
 *   -E2BIG   the page-aligned range alone exceeds max_bytes;
 *   -ENOSPC  the bounds are reached and every registration is referenced
 *            (fall back to a protocol that needs no registration);
 *   -ENOMEM  the cache could not allocate its entry;
 *   or the error of ops->reg (after one eviction and retry for -ENOMEM/-ENOSPC).
 * The caller gives the reference back with efarm_mr_cache_put().
 */
int efarm_mr_cache_get(struct efarm_mr_cache *cache, void *addr, size_t len, unsigned access,
                       struct efarm_mr_ref *ref_p);

/*
 * Whether a registration in the cache already covers [addr, addr + len) with
 * access, so that efarm_mr_cache_get() would hit (false for a NULL cache or
 * with caching off). Takes no reference; for choosing a protocol.
 */
bool efarm_mr_cache_covers(struct efarm_mr_cache *cache, const void *addr, size_t len,
                           unsigned access);

/*
 * Give back a reference taken by efarm_mr_cache_get() and clear it; putting a
 * cleared reference does nothing. The registration is deregistered here if it
 * was the last reference to a registration no longer cached.
 */
void efarm_mr_cache_put(struct efarm_mr_cache *cache, struct efarm_mr_ref *ref);

/*
 * Remove every cached registration overlapping [addr, addr + len) from
 * lookup: unreferenced ones are deregistered now, referenced ones when their
 * last reference is put. For memory released in ways the memory hook does not
 * see (mr_cache.c lists them).
 */
void efarm_mr_cache_invalidate(struct efarm_mr_cache *cache, void *addr, size_t len);

/* Counters and occupancy, read consistently under the cache's lock. */
void efarm_mr_cache_stats(struct efarm_mr_cache *cache, struct efarm_mr_cache_stats *stats_p);

/* ---- Memory hook (mem_hook.c) ---------------------------------------------------- */

enum efarm_mem_hook_status {
    EFARM_MEM_HOOK_LIVE,          /* every reference to a hooked function in every object patched */
    EFARM_MEM_HOOK_NOT_BUILT,     /* compiled out (sanitizer build, EFARM_MEM_HOOK_DISABLE, not
                                   * x86-64 Linux) */
    EFARM_MEM_HOOK_NOT_INSTALLED, /* no caching cache has opened yet: nothing patched */
    EFARM_MEM_HOOK_PATCH_FAILED,  /* some reference could not be patched or is bound elsewhere */
    EFARM_MEM_HOOK_ALLOCATOR,  /* malloc, free and malloc_usable_size come from different objects */
    EFARM_MEM_HOOK_UNRESOLVED, /* a hooked function could not be resolved (dlsym) */
};

/*
 * Patch every loaded object's references to munmap, free and the other
 * hooked functions so that they reach the memory hook (mem_hook.c explains
 * the mechanism), once per process; later calls return the first outcome.
 * Caches call it when they open to cache, so programs that never cache are
 * never patched. Thread-safe. Returns the status, as efarm_mem_hook_status().
 */
enum efarm_mem_hook_status efarm_mem_hook_install(void);

/* The hook's status now (NOT_INSTALLED before efarm_mem_hook_install()); lock-free. */
enum efarm_mem_hook_status efarm_mem_hook_status(void);

/*
 * Patch objects loaded since the last call (every get calls it before its
 * lookup); if there were any, every cache drops its registrations once.
 * Returns false when the hook can no longer be trusted (an object loaded
 * later could not be patched): the caller must not reuse registrations.
 */
bool efarm_mem_hook_sync(void);

/* One-line description of a status; a static string. */
const char *efarm_mem_hook_status_string(enum efarm_mem_hook_status status);

/*
 * Between mem_hook.c and mr_cache.c only. efarm_mr_cache_hook_wanted() is a
 * lock-free check that some cache holds a registration; the release calls
 * invalidate what overlaps a released range in every cache: UNMAP compares
 * with the registered pages, FREE with the bytes the registrations were asked
 * for (a heap page is only returned to the system once every allocation on it
 * is freed). Neither blocks on a lock this thread holds, and neither calls the
 * ops: deregistration happens in the next cache call.
 */
enum efarm_mr_release { EFARM_MR_RELEASE_UNMAP, EFARM_MR_RELEASE_FREE };

bool efarm_mr_cache_hook_wanted(void);
void efarm_mr_cache_hook_release(const void *addr, size_t len, enum efarm_mr_release kind);

/* Make every caching cache drop all its registrations the next time its lock is taken. */
void efarm_mr_cache_hook_flush(void);

/*
 * Counters summed over every cache the process has opened, open or closed
 * (caching is whether the memory hook is live now); for tests and tools that
 * see no cache, such as an MPI program through dlsym.
 */
void efarm_mr_cache_totals(struct efarm_mr_cache_stats *stats_p);

/* ---- Testing hooks ------------------------------------------------------------- */

/*
 * When nonzero, counts down on every allocation the cache makes, and the
 * allocation that brings it to zero fails (1 fails the next one).
 */
extern atomic_ulong g_efarm_mr_cache_alloc_fail_at;

/*
 * When nonzero, caches opened afterwards cache even if the memory hook is not
 * live (EFARM_MR_CACHE=0 still wins). For unit tests and benchmarks that
 * release no registered memory; never for production use.
 */
extern atomic_int g_efarm_mr_cache_assume_hook;

#endif /* EFARM_MR_CACHE_H */
