/*
 * Memory registration cache (see efarm_mr_cache.h for the API).
 *
 * Structure
 * ---------
 * Cached registrations never overlap: they sit in an array sorted by start
 * address, preallocated for max_entries, so a hit is one binary search under
 * the cache's mutex. A miss registers the page-aligned range, widened to the
 * union with the cached registrations it overlaps (and their access bits)
 * when that fits in max_bytes; the overlapped ones leave lookup. Insertion and
 * removal move the array's tail (O(n), n <= max_entries), which a miss pays
 * next to a registration that costs far more. Unreferenced cached entries are
 * on an LRU list; referenced entries that left lookup (invalidated, replaced)
 * wait on a retired list for their last put. The bounds count every
 * registration not yet deregistered, cached or not.
 *
 * The ops are never called, and no memory is freed or unmapped, with a cache
 * lock held: a get takes the lock to look up and reserve room, drops it to
 * allocate its entry and to register, and takes it again to insert. While an
 * entry is being registered it is on a pending list, so an invalidation that
 * arrives meanwhile keeps it out of the cache (its caller still gets a valid
 * registration, deregistered at put).
 *
 * Stale registrations, and the memory hook
 * ----------------------------------------
 * A registration pins the physical pages that were mapped when it was made.
 * If the application releases that memory and gets new pages at the same
 * address, a cached registration would hand the peer the old pages: silent
 * data corruption. mem_hook.c patches every loaded object's GOT references
 * to munmap, mremap, mmap (MAP_FIXED), madvise (MADV_DONTNEED, MADV_FREE,
 * MADV_REMOVE), brk/sbrk (shrinking), shmdt, free, realloc and reallocarray
 * (when the first caching cache opens; objects loaded later at the next get);
 * each hook tells every open cache about the range before forwarding to the
 * real function. Calls to these from the application and from every library
 * reach it, but glibc's own internal releases do not: free() of an mmapped
 * chunk, heap trimming and realloc's mremap call glibc-internal functions.
 * Hooking free() and realloc() closes that gap without knowing malloc's
 * internals: the pages under an allocation can only return to the system
 * after it is freed, so invalidating on free is enough. To keep unrelated
 * frees cheap, a free only invalidates registrations whose requested bytes
 * (not their page-rounded extent) overlap the freed block: every page of a
 * registration holds bytes of a buffer it was requested for, and that page
 * cannot be released while that buffer is allocated. A process-wide counting
 * filter over 1 MiB granules lets free() and munmap() skip all locks when
 * nothing registered is nearby.
 *
 * The hook never deregisters (the ops could take locks the interrupted code
 * holds): it moves unreferenced entries to a per-cache dead list that the
 * next get, put, invalidate or close deregisters. If a release happens on a
 * thread inside a cache critical section (a signal handler), the hook only
 * bumps a generation counter, and every cache drops all its entries the next
 * time its lock is taken. fork() waits for the hook and the caching caches
 * (pthread_atfork), so a child never inherits one of their locks held.
 *
 * Covered (with the hook live): munmap, mremap (old range; the destination
 * with MREMAP_FIXED), mmap MAP_FIXED over a mapping, madvise discarding pages,
 * brk/sbrk shrinking, shmdt, and free/realloc/reallocarray of memory from the
 * process's malloc (glibc's, or any allocator providing malloc, free and
 * malloc_usable_size in one object), whatever the allocator does afterwards.
 *
 * Not covered: releases by raw system calls (syscall(SYS_munmap, ...)) or by
 * code that does not call through a GOT (statically linked or -Bsymbolic
 * definitions of its own, the dynamic loader, function pointers copied
 * before the hook was installed, e.g. into a vtable built at run time); memory
 * glibc releases internally without a free (thread stacks unmapped when
 * glibc's stack cache overflows, dlclose of a library whose data was sent);
 * memory a user-level pool hands out again after giving its pages back by
 * one of those means; and memory the kernel takes away (truncated MAP_SHARED
 * files). For those, call efarm_mr_cache_invalidate(), or run with
 * EFARM_MR_CACHE=0. test/unit/test_mr_cache.c shows the raw-syscall gap.
 *
 * Safe default: a cache only caches when efarm_mem_hook_install() says the
 * hook is live, that is, every reference in every loaded object was patched
 * and malloc, free and malloc_usable_size come from one allocator. Otherwise
 * (a reference bound to another definition, a sanitizer build, another
 * architecture) and with EFARM_MR_CACHE=0 it passes through: every get
 * registers and every put deregisters.
 */
#include "efarm_config.h"
#include "efarm_device_limits.h"
#include "efarm_log.h"
#include "efarm_mr_cache.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The counting filter: how many tracked registrations touch each 1 MiB granule. */
#define MR_FILTER_SHIFT   20
#define MR_FILTER_BUCKETS (1u << 15)

enum mr_entry_state {
    MR_ENTRY_PENDING, /* being registered, outside the lock */
    MR_ENTRY_CACHED,  /* in lookup; on the LRU list when unreferenced */
    MR_ENTRY_RETIRED, /* out of lookup, referenced: deregistered by the last put */
    MR_ENTRY_DEAD,    /* out of lookup, unreferenced: deregistered by the next cache call */
};

struct efarm_mr_entry {
    uintptr_t start, end;           /* registered range, page aligned */
    uintptr_t anchor_lo, anchor_hi; /* hull of the bytes asked for by the gets that made it */
    void *handle;
    uint32_t lkey, rkey;
    unsigned access;
    unsigned refcount;
    enum mr_entry_state state;
    bool invalidated; /* pending: an invalidation overlapped while registering */
    struct efarm_mr_entry *prev, *next;
};

/* Intrusive list; an entry is on at most one (LRU, pending, retired, dead or a victim list). */
struct mr_list {
    struct efarm_mr_entry *head, *tail;
    size_t count, bytes;
};

struct mr_slot {
    uintptr_t start;
    struct efarm_mr_entry *entry;
};

struct efarm_mr_cache {
    pthread_mutex_t lock;
    const struct efarm_mr_cache_ops *ops;
    void *ctx;
    size_t max_entries, max_bytes;
    uintptr_t page_mask;
    bool caching;
    uint64_t flush_seen;

    struct mr_slot *slots; /* lookup, sorted by start; max_entries long */
    size_t nslots;
    struct mr_list lru, pending, retired, dead;
    size_t nregs, reg_bytes; /* every registration not yet deregistered */
    uint64_t hits, misses, evictions, invalidations;

    struct efarm_mr_cache *reg_prev, *reg_next; /* the registry of caching caches */
};

atomic_ulong g_efarm_mr_cache_alloc_fail_at;
atomic_int g_efarm_mr_cache_assume_hook;

/* Caches the hook must tell about releases; the hook reads, open/close write. */
static pthread_rwlock_t g_registry_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct efarm_mr_cache *g_registry;

/* Registrations in lookup or pending over all caches, and the granules they touch. */
static atomic_size_t g_tracked;
static atomic_uint g_filter[MR_FILTER_BUCKETS];
static atomic_uint g_filter_wide; /* registrations spanning more granules than buckets */

/* Bumped by a release the hook could not process; every cache then flushes. */
static atomic_uint_fast64_t g_flush_generation;

/* Nonzero while this thread is inside a cache or registry critical section. */
static _Thread_local volatile sig_atomic_t t_lock_depth __attribute__((tls_model("initial-exec")));

/* Counters over every cache ever opened (efarm_mr_cache_totals). */
static struct {
    atomic_ullong hits, misses, evictions, invalidations;
} g_totals;

static atomic_int g_warned_env;
static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;

/* ---- Allocation, with the failure-injection hook ----------------------------------- */

static void *mr_alloc(size_t size)
{
    unsigned long n = atomic_load_explicit(&g_efarm_mr_cache_alloc_fail_at, memory_order_relaxed);

    while (n && !atomic_compare_exchange_weak(&g_efarm_mr_cache_alloc_fail_at, &n, n - 1))
        ;
    if (n == 1)
        return NULL;
    return malloc(size);
}

/* ---- Lists ----------------------------------------------------------------------- */

static size_t mr_entry_size(const struct efarm_mr_entry *e)
{
    return e->end - e->start;
}

static void mr_list_append(struct mr_list *l, struct efarm_mr_entry *e)
{
    e->next = NULL;
    e->prev = l->tail;
    if (l->tail)
        l->tail->next = e;
    else
        l->head = e;
    l->tail = e;
    l->count++;
    l->bytes += mr_entry_size(e);
}

static void mr_list_remove(struct mr_list *l, struct efarm_mr_entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        l->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        l->tail = e->prev;
    e->prev = e->next = NULL;
    l->count--;
    l->bytes -= mr_entry_size(e);
}

/* ---- The process-wide filter ------------------------------------------------------ */

static void mr_filter_update(uintptr_t lo, uintptr_t hi, bool add)
{
    uintptr_t g0 = lo >> MR_FILTER_SHIFT, g1 = (hi - 1) >> MR_FILTER_SHIFT;

    if (g1 - g0 >= MR_FILTER_BUCKETS) {
        if (add)
            atomic_fetch_add_explicit(&g_filter_wide, 1, memory_order_relaxed);
        else
            atomic_fetch_sub_explicit(&g_filter_wide, 1, memory_order_relaxed);
        return;
    }
    for (uintptr_t g = g0;; g++) {
        atomic_uint *bucket = &g_filter[g % MR_FILTER_BUCKETS];

        if (add)
            atomic_fetch_add_explicit(bucket, 1, memory_order_relaxed);
        else
            atomic_fetch_sub_explicit(bucket, 1, memory_order_relaxed);
        if (g == g1)
            break;
    }
}

/* False only if no tracked registration can overlap [lo, hi). */
static bool mr_filter_maybe(uintptr_t lo, uintptr_t hi)
{
    uintptr_t g0 = lo >> MR_FILTER_SHIFT, g1 = (hi - 1) >> MR_FILTER_SHIFT;

    if (atomic_load_explicit(&g_filter_wide, memory_order_relaxed) || g1 - g0 >= MR_FILTER_BUCKETS)
        return true;
    for (uintptr_t g = g0;; g++) {
        if (atomic_load_explicit(&g_filter[g % MR_FILTER_BUCKETS], memory_order_relaxed))
            return true;
        if (g == g1)
            return false;
    }
}

/* An entry the hook must find: in lookup, or pending in a caching cache. */
static void mr_track(const struct efarm_mr_entry *e)
{
    atomic_fetch_add_explicit(&g_tracked, 1, memory_order_relaxed);
    mr_filter_update(e->start, e->end, true);
}

static void mr_untrack(const struct efarm_mr_entry *e)
{
    mr_filter_update(e->start, e->end, false);
    atomic_fetch_sub_explicit(&g_tracked, 1, memory_order_relaxed);
}

/* ---- Locking ---------------------------------------------------------------------- */

static void mr_cache_flush_locked(struct efarm_mr_cache *c);

static void mr_cache_lock(struct efarm_mr_cache *c)
{
    uint64_t generation;

    t_lock_depth++;
    pthread_mutex_lock(&c->lock);
    generation = atomic_load_explicit(&g_flush_generation, memory_order_acquire);
    if (generation != c->flush_seen) {
        c->flush_seen = generation;
        mr_cache_flush_locked(c);
    }
}

static void mr_cache_unlock(struct efarm_mr_cache *c)
{
    pthread_mutex_unlock(&c->lock);
    t_lock_depth--;
}

/* ---- Lookup ----------------------------------------------------------------------- */

/* Index of the first slot starting above addr. */
static size_t mr_upper_bound(const struct efarm_mr_cache *c, uintptr_t addr)
{
    size_t lo = 0, hi = c->nslots;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (c->slots[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The slots [*first_p, *last_p) whose registered pages overlap [lo, hi). */
static void mr_overlap(const struct efarm_mr_cache *c, uintptr_t lo, uintptr_t hi, size_t *first_p,
                       size_t *last_p)
{
    size_t first = mr_upper_bound(c, lo), last;

    if (first > 0 && c->slots[first - 1].entry->end > lo)
        first--;
    for (last = first; last < c->nslots && c->slots[last].start < hi; last++)
        ;
    *first_p = first;
    *last_p = last;
}

static struct efarm_mr_entry *mr_lookup(const struct efarm_mr_cache *c, uintptr_t lo, uintptr_t hi,
                                        unsigned access)
{
    size_t i = mr_upper_bound(c, lo);
    struct efarm_mr_entry *e;

    if (!i)
        return NULL;
    e = c->slots[i - 1].entry;
    if (e->end >= hi && (e->access & access) == access)
        return e;
    return NULL;
}

static void mr_slots_insert(struct efarm_mr_cache *c, struct efarm_mr_entry *e)
{
    size_t i = mr_upper_bound(c, e->start);

    memmove(&c->slots[i + 1], &c->slots[i], (c->nslots - i) * sizeof(c->slots[0]));
    c->slots[i] = (struct mr_slot){e->start, e};
    c->nslots++;
}

/* e has left lookup (or never entered it): park it according to its references. */
static void mr_entry_retire(struct efarm_mr_cache *c, struct efarm_mr_entry *e)
{
    mr_untrack(e);
    if (e->refcount) {
        e->state = MR_ENTRY_RETIRED;
        mr_list_append(&c->retired, e);
    } else {
        mr_list_remove(&c->lru, e);
        e->state = MR_ENTRY_DEAD;
        mr_list_append(&c->dead, e);
    }
}

static bool mr_entry_overlaps(const struct efarm_mr_entry *e, uintptr_t lo, uintptr_t hi,
                              enum efarm_mr_release kind)
{
    if (kind == EFARM_MR_RELEASE_FREE)
        return e->anchor_lo < hi && e->anchor_hi > lo;
    return e->start < hi && e->end > lo;
}

/* Take the cached entries overlapping [lo, hi) out of lookup; returns how many. */
static size_t mr_remove_overlapping(struct efarm_mr_cache *c, uintptr_t lo, uintptr_t hi,
                                    enum efarm_mr_release kind)
{
    size_t first, last, out, removed = 0;

    mr_overlap(c, lo, hi, &first, &last);
    out = first;
    for (size_t i = first; i < last; i++) {
        struct efarm_mr_entry *e = c->slots[i].entry;

        if (!mr_entry_overlaps(e, lo, hi, kind)) {
            c->slots[out++] = c->slots[i];
            continue;
        }
        mr_entry_retire(c, e);
        removed++;
    }
    if (removed) {
        memmove(&c->slots[out], &c->slots[last], (c->nslots - last) * sizeof(c->slots[0]));
        c->nslots -= removed;
    }
    return removed;
}

/* Keep registrations in progress over [lo, hi) out of the cache; returns how many. */
static size_t mr_mark_pending(struct efarm_mr_cache *c, uintptr_t lo, uintptr_t hi,
                              enum efarm_mr_release kind)
{
    size_t marked = 0;

    for (struct efarm_mr_entry *e = c->pending.head; e; e = e->next) {
        if (!e->invalidated && mr_entry_overlaps(e, lo, hi, kind)) {
            e->invalidated = true;
            marked++;
        }
    }
    return marked;
}

static void mr_count_invalidations(struct efarm_mr_cache *c, size_t n)
{
    c->invalidations += n;
    atomic_fetch_add_explicit(&g_totals.invalidations, n, memory_order_relaxed);
}

static void mr_cache_flush_locked(struct efarm_mr_cache *c)
{
    size_t n = c->nslots;

    for (size_t i = 0; i < c->nslots; i++)
        mr_entry_retire(c, c->slots[i].entry);
    c->nslots = 0;
    n += mr_mark_pending(c, 0, UINTPTR_MAX, EFARM_MR_RELEASE_UNMAP);
    c->invalidations += n;
    atomic_fetch_add_explicit(&g_totals.invalidations, n, memory_order_relaxed);
}

/* ---- Deregistration, outside the lock --------------------------------------------- */

/* Move the dead entries to *victims, which the caller deregisters after unlocking. */
static void mr_drain_dead(struct efarm_mr_cache *c, struct mr_list *victims)
{
    struct efarm_mr_entry *e;

    while ((e = c->dead.head)) {
        mr_list_remove(&c->dead, e);
        c->nregs--;
        c->reg_bytes -= mr_entry_size(e);
        mr_list_append(victims, e);
    }
}

static void mr_release_victims(struct efarm_mr_cache *c, struct mr_list *victims)
{
    struct efarm_mr_entry *e;

    while ((e = victims->head)) {
        mr_list_remove(victims, e);
        c->ops->dereg(c->ctx, e->handle);
        free(e);
    }
}

static void mr_evict_lru(struct efarm_mr_cache *c, struct mr_list *victims)
{
    struct efarm_mr_entry *e = c->lru.head;
    size_t i = mr_upper_bound(c, e->start) - 1;

    memmove(&c->slots[i], &c->slots[i + 1], (c->nslots - i - 1) * sizeof(c->slots[0]));
    c->nslots--;
    mr_entry_retire(c, e);
    mr_drain_dead(c, victims);
    c->evictions++;
    atomic_fetch_add_explicit(&g_totals.evictions, 1, memory_order_relaxed);
}

/* ---- Miss path -------------------------------------------------------------------- */

/*
 * Choose the range to register for [lo, hi) (pages [plo, phi)), make room
 * for it and count it, or return -ENOSPC with nothing changed.
 */
static int mr_cache_reserve(struct efarm_mr_cache *c, struct efarm_mr_entry *e, uintptr_t lo,
                            uintptr_t hi, uintptr_t plo, uintptr_t phi, unsigned access,
                            struct mr_list *victims)
{
    size_t first = 0, last = 0, size;

    *e = (struct efarm_mr_entry){.start = plo,
                                 .end = phi,
                                 .anchor_lo = lo,
                                 .anchor_hi = hi,
                                 .access = access,
                                 .state = MR_ENTRY_PENDING};
    if (c->caching)
        mr_overlap(c, plo, phi, &first, &last);
    if (first < last) {
        struct efarm_mr_entry merged = *e;

        merged.start = c->slots[first].start < plo ? c->slots[first].start : plo;
        merged.end = c->slots[last - 1].entry->end > phi ? c->slots[last - 1].entry->end : phi;
        for (size_t i = first; i < last; i++) {
            const struct efarm_mr_entry *o = c->slots[i].entry;

            merged.access |= o->access;
            merged.anchor_lo = o->anchor_lo < merged.anchor_lo ? o->anchor_lo : merged.anchor_lo;
            merged.anchor_hi = o->anchor_hi > merged.anchor_hi ? o->anchor_hi : merged.anchor_hi;
        }
        /* Merge only if it fits; the overlapped entries leave lookup either way. */
        if (mr_entry_size(&merged) <= c->max_bytes &&
            c->reg_bytes - c->lru.bytes + mr_entry_size(&merged) <= c->max_bytes)
            *e = merged;
    }
    size = mr_entry_size(e);

    /* Would it fit once every unreferenced registration is gone? */
    if (c->nregs - c->lru.count + 1 > c->max_entries ||
        c->reg_bytes - c->lru.bytes + size > c->max_bytes)
        return -ENOSPC;

    if (first < last) {
        mr_remove_overlapping(c, e->start, e->end, EFARM_MR_RELEASE_UNMAP);
        mr_drain_dead(c, victims);
    }
    while (c->nregs + 1 > c->max_entries || c->reg_bytes + size > c->max_bytes)
        mr_evict_lru(c, victims);
    c->nregs++;
    c->reg_bytes += size;
    if (c->caching) {
        mr_list_append(&c->pending, e);
        mr_track(e);
    }
    return 0;
}

size_t efarm_mr_cache_trim(struct efarm_mr_cache *c)
{
    struct mr_list victims = {0};
    size_t released;

    if (c == NULL)
        return 0;
    mr_cache_lock(c);
    mr_drain_dead(c, &victims);
    while (c->lru.head)
        mr_evict_lru(c, &victims);
    mr_cache_unlock(c);
    released = victims.count;
    mr_release_victims(c, &victims);
    return released;
}

/* ops->reg; on -ENOMEM/-ENOSPC evict every unreferenced registration and retry once. */
static int mr_cache_register(struct efarm_mr_cache *c, struct efarm_mr_entry *e)
{
    int ret;

    ret = c->ops->reg(c->ctx, (void *)e->start, mr_entry_size(e), e->access, &e->handle, &e->lkey,
                      &e->rkey);
    if (ret != -ENOMEM && ret != -ENOSPC)
        return ret;
    if (!efarm_mr_cache_trim(c))
        return ret;
    return c->ops->reg(c->ctx, (void *)e->start, mr_entry_size(e), e->access, &e->handle, &e->lkey,
                       &e->rkey);
}

static void mr_ref_fill(struct efarm_mr_ref *ref, struct efarm_mr_entry *e)
{
    *ref = (struct efarm_mr_ref){.addr = (void *)e->start,
                                 .length = mr_entry_size(e),
                                 .handle = e->handle,
                                 .lkey = e->lkey,
                                 .rkey = e->rkey,
                                 .entry = e};
}

/* After ops->reg: cache the entry (or not) and hand out the first reference. */
static int mr_cache_complete(struct efarm_mr_cache *c, struct efarm_mr_entry *e, int ret,
                             struct efarm_mr_ref *ref_p)
{
    struct mr_list victims = {0};

    mr_cache_lock(c);
    mr_drain_dead(c, &victims);
    if (c->caching)
        mr_list_remove(&c->pending, e);
    if (ret) {
        c->nregs--;
        c->reg_bytes -= mr_entry_size(e);
        if (c->caching)
            mr_untrack(e);
        mr_cache_unlock(c);
        mr_release_victims(c, &victims);
        free(e);
        return ret;
    }
    e->refcount = 1;
    if (c->caching && !e->invalidated && c->nslots < c->max_entries) {
        /* Another get may have cached an overlapping registration meanwhile. */
        mr_remove_overlapping(c, e->start, e->end, EFARM_MR_RELEASE_UNMAP);
        mr_drain_dead(c, &victims);
        mr_slots_insert(c, e);
        e->state = MR_ENTRY_CACHED;
    } else {
        if (c->caching)
            mr_untrack(e);
        e->state = MR_ENTRY_RETIRED;
        mr_list_append(&c->retired, e);
    }
    mr_cache_unlock(c);
    mr_release_victims(c, &victims);
    mr_ref_fill(ref_p, e);
    return 0;
}

/* ---- fork ------------------------------------------------------------------------- */

/*
 * The child of a fork must not inherit a registry or cache lock that another
 * thread held: its first free() near a registration would wait forever. So
 * fork waits for the hook and for every caching cache, as glibc's malloc does
 * for its arenas.
 */
static void mr_atfork_prepare(void)
{
    t_lock_depth++;
    pthread_rwlock_wrlock(&g_registry_lock);
    for (struct efarm_mr_cache *c = g_registry; c; c = c->reg_next)
        pthread_mutex_lock(&c->lock);
}

static void mr_atfork_parent(void)
{
    for (struct efarm_mr_cache *c = g_registry; c; c = c->reg_next)
        pthread_mutex_unlock(&c->lock);
    pthread_rwlock_unlock(&g_registry_lock);
    t_lock_depth--;
}

/* The child is a new thread to the locks (an rwlock remembers its writer): start them afresh. */
static void mr_atfork_child(void)
{
    for (struct efarm_mr_cache *c = g_registry; c; c = c->reg_next)
        pthread_mutex_init(&c->lock, NULL);
    pthread_rwlock_init(&g_registry_lock, NULL);
    t_lock_depth--;
}

static void mr_atfork_register(void)
{
    pthread_atfork(mr_atfork_prepare, mr_atfork_parent, mr_atfork_child);
}

/* ---- API -------------------------------------------------------------------------- */

static void mr_cache_warn_env(const char *fmt, const char *arg)
{
    if (!atomic_exchange(&g_warned_env, 1))
        fprintf(stderr, fmt, arg);
}

/* EFARM_MR_CACHE=0 passes through; otherwise cache when the memory hook is live. */
static bool mr_cache_want_caching(void)
{
    enum efarm_mem_hook_status status;

    if (!efarm_config()->mr_cache)
        return false;
    if (atomic_load(&g_efarm_mr_cache_assume_hook))
        return true;
    status = efarm_mem_hook_install();
    if (status == EFARM_MEM_HOOK_LIVE)
        return true;
    if (getenv("EFARM_MR_CACHE")) /* asked for explicitly: say why it is not honoured */
        mr_cache_warn_env("efarm: EFARM_MR_CACHE=1 but not caching registrations: %s\n",
                          efarm_mem_hook_status_string(status));
    return false;
}

int efarm_mr_cache_open(const struct efarm_mr_cache_ops *ops, void *ctx, size_t max_entries,
                        size_t max_bytes, struct efarm_mr_cache **cache_p)
{
    struct efarm_mr_cache *c;
    long page_size = sysconf(_SC_PAGESIZE);
    int ret;

    if (!ops || !ops->reg || !ops->dereg || !max_entries || !max_bytes || !cache_p)
        return -EINVAL;
    if (max_entries > SIZE_MAX / sizeof(struct mr_slot))
        return -EINVAL;
    c = mr_alloc(sizeof(*c));
    if (!c)
        return -ENOMEM;
    *c = (struct efarm_mr_cache){.ops = ops,
                                 .ctx = ctx,
                                 .max_entries = max_entries,
                                 .max_bytes = max_bytes,
                                 .page_mask = (uintptr_t)(page_size > 0 ? page_size : 4096) - 1,
                                 .caching = mr_cache_want_caching()};
    if (c->caching) {
        c->slots = mr_alloc(max_entries * sizeof(c->slots[0]));
        if (!c->slots) {
            ret = -ENOMEM;
            goto err_free_cache;
        }
    }
    ret = -pthread_mutex_init(&c->lock, NULL);
    if (ret)
        goto err_free_slots;
    c->flush_seen = atomic_load(&g_flush_generation);
    if (c->caching) {
        pthread_once(&g_atfork_once, mr_atfork_register);
        t_lock_depth++;
        pthread_rwlock_wrlock(&g_registry_lock);
        c->reg_next = g_registry;
        if (g_registry)
            g_registry->reg_prev = c;
        g_registry = c;
        pthread_rwlock_unlock(&g_registry_lock);
        t_lock_depth--;
    }
    *cache_p = c;
    return 0;

err_free_slots:
    free(c->slots);
err_free_cache:
    free(c);
    return ret;
}

void efarm_mr_cache_close(struct efarm_mr_cache *c)
{
    struct mr_list victims = {0};
    size_t referenced = 0, pending;
    struct efarm_mr_entry *e;

    if (!c)
        return;
    if (c->caching) {
        t_lock_depth++;
        pthread_rwlock_wrlock(&g_registry_lock);
        if (c->reg_prev)
            c->reg_prev->reg_next = c->reg_next;
        else
            g_registry = c->reg_next;
        if (c->reg_next)
            c->reg_next->reg_prev = c->reg_prev;
        pthread_rwlock_unlock(&g_registry_lock);
        t_lock_depth--;
    }

    mr_cache_lock(c);
    for (size_t i = 0; i < c->nslots; i++) {
        e = c->slots[i].entry;
        mr_untrack(e);
        if (e->refcount)
            referenced++;
        else
            mr_list_remove(&c->lru, e);
        mr_list_append(&victims, e);
    }
    c->nslots = 0;
    while ((e = c->retired.head)) {
        mr_list_remove(&c->retired, e);
        mr_list_append(&victims, e);
        referenced++;
    }
    mr_drain_dead(c, &victims);
    pending = c->pending.count;
    mr_cache_unlock(c);

    if (referenced)
        fprintf(stderr,
                "efarm: mr cache closed with %zu registration(s) still referenced; "
                "deregistering them\n",
                referenced);
    if (pending)
        fprintf(stderr, "efarm: mr cache closed during %zu get(s) in progress\n", pending);
    efarm_log(EFARM_LOG_INFO,
              "registration cache %s: %llu hits, %llu misses (registrations), %llu "
              "invalidations, %llu evictions",
              c->caching ? "caching" : "passing through", (unsigned long long)c->hits,
              (unsigned long long)c->misses, (unsigned long long)c->invalidations,
              (unsigned long long)c->evictions);
    mr_release_victims(c, &victims);
    pthread_mutex_destroy(&c->lock);
    free(c->slots);
    free(c);
}

bool efarm_mr_cache_covers(struct efarm_mr_cache *c, const void *addr, size_t len, unsigned access)
{
    uintptr_t lo = (uintptr_t)addr;
    bool hit;

    if (!c || !len || len > UINTPTR_MAX - lo)
        return false;
    mr_cache_lock(c);
    hit = c->caching && mr_lookup(c, lo, lo + len, access) != NULL;
    mr_cache_unlock(c);
    return hit;
}

int efarm_mr_cache_get(struct efarm_mr_cache *c, void *addr, size_t len, unsigned access,
                       struct efarm_mr_ref *ref_p)
{
    uintptr_t lo = (uintptr_t)addr, hi, plo, phi;
    struct efarm_mr_entry *e = NULL, *hit;
    struct mr_list victims = {0};
    int ret;

    if (!len || len > UINTPTR_MAX - lo || lo + len > UINTPTR_MAX - c->page_mask)
        return -EINVAL;
    hi = lo + len;
    plo = lo & ~c->page_mask;
    phi = (hi + c->page_mask) & ~c->page_mask;
    if (phi - plo > c->max_bytes)
        return -E2BIG;

    /* Objects loaded since the last get are patched now (and the cache flushed, if any). */
    if (c->caching && !efarm_mem_hook_sync())
        efarm_mr_cache_hook_flush();

    /* Look up; on a miss, allocate the entry unlocked and look again. */
    for (;;) {
        mr_cache_lock(c);
        mr_drain_dead(c, &victims);
        hit = c->caching ? mr_lookup(c, lo, hi, access) : NULL;
        if (hit || e)
            break;
        mr_cache_unlock(c);
        mr_release_victims(c, &victims);
        e = mr_alloc(sizeof(*e));
        if (!e)
            return -ENOMEM;
    }
    if (hit) {
        if (!hit->refcount++)
            mr_list_remove(&c->lru, hit);
        c->hits++;
        atomic_fetch_add_explicit(&g_totals.hits, 1, memory_order_relaxed);
        mr_cache_unlock(c);
        mr_release_victims(c, &victims);
        free(e);
        mr_ref_fill(ref_p, hit);
        return 0;
    }

    c->misses++;
    atomic_fetch_add_explicit(&g_totals.misses, 1, memory_order_relaxed);
    ret = mr_cache_reserve(c, e, lo, hi, plo, phi, access, &victims);
    mr_cache_unlock(c);
    mr_release_victims(c, &victims);
    if (ret) {
        free(e);
        return ret;
    }
    ret = mr_cache_register(c, e);
    return mr_cache_complete(c, e, ret, ref_p);
}

void efarm_mr_cache_put(struct efarm_mr_cache *c, struct efarm_mr_ref *ref)
{
    struct efarm_mr_entry *e = ref->entry;
    struct mr_list victims = {0};

    if (!e)
        return;
    ref->entry = NULL;
    mr_cache_lock(c);
    mr_drain_dead(c, &victims);
    if (!--e->refcount) {
        if (e->state == MR_ENTRY_CACHED) {
            mr_list_append(&c->lru, e);
        } else {
            mr_list_remove(&c->retired, e);
            c->nregs--;
            c->reg_bytes -= mr_entry_size(e);
            mr_list_append(&victims, e);
        }
    }
    mr_cache_unlock(c);
    mr_release_victims(c, &victims);
}

void efarm_mr_cache_invalidate(struct efarm_mr_cache *c, void *addr, size_t len)
{
    uintptr_t lo = (uintptr_t)addr, hi = len > UINTPTR_MAX - lo ? UINTPTR_MAX : lo + len;
    struct mr_list victims = {0};

    if (!len)
        return;
    mr_cache_lock(c);
    if (c->caching) {
        mr_count_invalidations(c, mr_remove_overlapping(c, lo, hi, EFARM_MR_RELEASE_UNMAP) +
                                      mr_mark_pending(c, lo, hi, EFARM_MR_RELEASE_UNMAP));
    }
    mr_drain_dead(c, &victims);
    mr_cache_unlock(c);
    mr_release_victims(c, &victims);
}

void efarm_mr_cache_stats(struct efarm_mr_cache *c, struct efarm_mr_cache_stats *stats_p)
{
    mr_cache_lock(c);
    *stats_p = (struct efarm_mr_cache_stats){
        .hits = c->hits,
        .misses = c->misses,
        .evictions = c->evictions,
        .invalidations = c->invalidations,
        .entries = c->nregs,
        .bytes = c->reg_bytes,
        .cached = c->nslots,
        .caching = c->caching,
    };
    mr_cache_unlock(c);
}

/* ---- The memory hook's entry points ------------------------------------------------ */

bool efarm_mr_cache_hook_wanted(void)
{
    return atomic_load_explicit(&g_tracked, memory_order_relaxed) != 0;
}

void efarm_mr_cache_hook_release(const void *addr, size_t len, enum efarm_mr_release kind)
{
    uintptr_t lo = (uintptr_t)addr, hi = len > UINTPTR_MAX - lo ? UINTPTR_MAX : lo + len;

    if (!len || !efarm_mr_cache_hook_wanted() || !mr_filter_maybe(lo, hi))
        return;
    if (t_lock_depth) {
        /* Released inside our own critical section (a signal handler): flush everything. */
        atomic_fetch_add_explicit(&g_flush_generation, 1, memory_order_release);
        return;
    }
    t_lock_depth++;
    pthread_rwlock_rdlock(&g_registry_lock);
    for (struct efarm_mr_cache *c = g_registry; c; c = c->reg_next) {
        mr_cache_lock(c);
        mr_count_invalidations(c, mr_remove_overlapping(c, lo, hi, kind) +
                                      mr_mark_pending(c, lo, hi, kind));
        mr_cache_unlock(c);
    }
    pthread_rwlock_unlock(&g_registry_lock);
    t_lock_depth--;
}

void efarm_mr_cache_hook_flush(void)
{
    atomic_fetch_add_explicit(&g_flush_generation, 1, memory_order_release);
}

void efarm_mr_cache_totals(struct efarm_mr_cache_stats *stats_p)
{
    *stats_p = (struct efarm_mr_cache_stats){
        .hits = atomic_load_explicit(&g_totals.hits, memory_order_relaxed),
        .misses = atomic_load_explicit(&g_totals.misses, memory_order_relaxed),
        .evictions = atomic_load_explicit(&g_totals.evictions, memory_order_relaxed),
        .invalidations = atomic_load_explicit(&g_totals.invalidations, memory_order_relaxed),
        .caching = efarm_mem_hook_status() == EFARM_MEM_HOOK_LIVE,
    };
}

const char *efarm_mem_hook_status_string(enum efarm_mem_hook_status status)
{
    switch (status) {
    case EFARM_MEM_HOOK_LIVE:
        return "memory hook live";
    case EFARM_MEM_HOOK_NOT_BUILT:
        return "memory hook not built (ASan/TSan/MSan build, EFARM_MEM_HOOK_DISABLE, "
               "or not x86-64 Linux)";
    case EFARM_MEM_HOOK_NOT_INSTALLED:
        return "memory hook not installed (no caching registration cache opened yet)";
    case EFARM_MEM_HOOK_PATCH_FAILED:
        return "memory hook incomplete: a reference to munmap/free/... could not be patched "
               "or is bound to another definition (EFARM_LOG_LEVEL=info counts them)";
    case EFARM_MEM_HOOK_ALLOCATOR:
        return "memory hook unusable: malloc, free and malloc_usable_size come from "
               "different objects";
    case EFARM_MEM_HOOK_UNRESOLVED:
        return "memory hook unusable: the next munmap/free/... could not be resolved";
    }
    return "memory hook status unknown";
}
