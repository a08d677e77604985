/*
 * fork and registered memory, as rdma-core 44's libibverbs handles them
 * (libibverbs/memory.c, verbs.c, init.c of v44.0).
 *
 * On a kernel that copies pinned pages at fork (Linux 5.13 and later, which
 * EFA's instances run; EFASIM_COPY_ON_FORK=1) a child gets a copy of the
 * registered pages as they were at the fork, and the device goes on writing
 * into the parent's: nothing has to be prepared, and ibv_is_fork_initialized
 * says IBV_FORK_UNNEEDED (v44 asks the kernel over RDMA netlink,
 * get_copy_on_fork). ibv_fork_init still works as on older kernels: once it
 * succeeded, every registration marks its pages MADV_DONTFORK, so a child has
 * no mapping there at all, and deregistration gives them back (MADV_DOFORK)
 * when no other registration covers them. It must come before the first
 * registration (v44's too_late: EINVAL after), and RDMAV_FORK_SAFE or
 * IBV_FORK_SAFE set to anything but 0 calls it from the first
 * ibv_get_device_list (ibverbs_init). With RDMAV_HUGEPAGES_SAFE the ranges are
 * rounded to the page size of the mapping they start in, as v44 rounds them.
 *
 * v44 keeps a red-black tree of page ranges with counts; this is a sorted
 * array of disjoint ranges with a count each (ranges at 0 are left out), which
 * gives the same madvise calls: DONTFORK where a count goes from 0 to 1,
 * DOFORK where it goes from 1 to 0. An unbalanced ibv_dofork_range leaves a
 * negative count, as in v44.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "efasim_verbs.h"

struct fork_range {
    uintptr_t start, end; /* [start, end), page-aligned */
    int count;            /* registrations over it: never 0 in the table */
};

static pthread_mutex_t g_fork_lock = PTHREAD_MUTEX_INITIALIZER;
static bool g_fork_on;       /* ibv_fork_init succeeded (v44's mm_root) */
static bool g_fork_too_late; /* a range was registered before it (v44's too_late) */
static bool g_fork_huge;     /* RDMAV_HUGEPAGES_SAFE */
static size_t g_fork_page;
static struct fork_range *g_ranges; /* sorted by start; under g_fork_lock */
static size_t g_nranges, g_ranges_cap;

/* v44's check_env: set, and not "0". */
static bool env_on(const char *name)
{
    const char *v = getenv(name);

    return v && strcmp(v, "0");
}

EFASIM_EXPORT int ibv_fork_init(void)
{
    void *probe;
    int ret;

    if (getenv("RDMAV_HUGEPAGES_SAFE"))
        __atomic_store_n(&g_fork_huge, true, __ATOMIC_RELAXED);
    pthread_mutex_lock(&g_fork_lock);
    if (g_fork_on) {
        pthread_mutex_unlock(&g_fork_lock);
        return 0;
    }
    if (g_fork_too_late) {
        pthread_mutex_unlock(&g_fork_lock);
        return EINVAL;
    }
    g_fork_page = (size_t)sysconf(_SC_PAGESIZE);
    /* Whether the kernel has the two advices at all (v44: ENOSYS if not). */
    if (posix_memalign(&probe, g_fork_page, g_fork_page)) {
        pthread_mutex_unlock(&g_fork_lock);
        return ENOMEM;
    }
    ret = madvise(probe, g_fork_page, MADV_DONTFORK) || madvise(probe, g_fork_page, MADV_DOFORK);
    free(probe);
    if (!ret)
        __atomic_store_n(&g_fork_on, true, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g_fork_lock);
    return ret ? ENOSYS : 0;
}

EFASIM_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
    if (efasim_config()->copy_on_fork)
        return IBV_FORK_UNNEEDED;
    return __atomic_load_n(&g_fork_on, __ATOMIC_ACQUIRE) ? IBV_FORK_ENABLED : IBV_FORK_DISABLED;
}

void efasim_vfork_env_init(void)
{
    if ((env_on("RDMAV_FORK_SAFE") || env_on("IBV_FORK_SAFE")) && ibv_fork_init())
        fprintf(stderr, "libibverbs: Warning: fork()-safety requested but init failed\n");
}

/* The index of the first range that ends after addr. */
static size_t range_find(uintptr_t addr)
{
    size_t lo = 0, hi = g_nranges;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (g_ranges[mid].end <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Room for `more` ranges besides those in the table. */
static int ranges_reserve(size_t more)
{
    struct fork_range *r;
    size_t cap = g_ranges_cap ? g_ranges_cap : 64;

    while (cap < g_nranges + more)
        cap *= 2;
    if (cap == g_ranges_cap)
        return 0;
    r = realloc(g_ranges, cap * sizeof(*r));
    if (!r)
        return -1;
    g_ranges = r;
    g_ranges_cap = cap;
    return 0;
}

/*
 * madvise(advice) every piece of [start, end) whose count is `count` (0 for
 * the holes between ranges). 0, or -1 with errno at the first failure, whose
 * piece ends at *to_p; a failed DOFORK is retried page by page and then
 * ignored, as v44's do_madvise does.
 */
static int pieces_advise(uintptr_t start, uintptr_t end, int count, int advice, uintptr_t *to_p)
{
    size_t i = range_find(start);
    uintptr_t at = start;

    while (at < end) {
        bool in = i < g_nranges && g_ranges[i].start <= at;
        uintptr_t to = in ? g_ranges[i].end : i < g_nranges ? g_ranges[i].start : end;

        to = to < end ? to : end;
        if ((in ? g_ranges[i].count : 0) == count && madvise((void *)at, to - at, advice)) {
            if (advice != MADV_DOFORK) {
                *to_p = to;
                return -1;
            }
            for (uintptr_t p = at; p < to; p += g_fork_page)
                madvise((void *)p, g_fork_page, MADV_DOFORK);
        }
        at = to;
        i += in;
    }
    return 0;
}

/*
 * The advice for adding inc to the counts of [start, end): DONTFORK where a
 * count goes up from 0, DOFORK where it goes down from 1. A DONTFORK that
 * fails is undone where it was given and fails the call, errno kept.
 */
static int range_advise(uintptr_t start, uintptr_t end, int inc)
{
    uintptr_t failed_to;
    int err;

    if (inc < 0)
        return pieces_advise(start, end, 1, MADV_DOFORK, NULL);
    if (!pieces_advise(start, end, 0, MADV_DONTFORK, &failed_to))
        return 0;
    err = errno;
    pieces_advise(start, failed_to, 0, MADV_DOFORK, NULL);
    errno = err;
    return -1;
}

/* Split the range holding addr (if any starts before it) so that one starts at addr. */
static void range_split(uintptr_t addr)
{
    size_t i = range_find(addr);

    if (i == g_nranges || g_ranges[i].start >= addr)
        return;
    memmove(&g_ranges[i + 1], &g_ranges[i], (g_nranges - i) * sizeof(*g_ranges));
    g_nranges++;
    g_ranges[i].end = addr;
    g_ranges[i + 1].start = addr;
}

/* Add inc to the count of every page of [start, end), holes included; drop counts of 0. */
static void range_count(uintptr_t start, uintptr_t end, int inc)
{
    size_t i, w;
    uintptr_t at = start;

    range_split(start);
    range_split(end);
    i = range_find(start);
    while (at < end) {
        if (i < g_nranges && g_ranges[i].start == at) {
            g_ranges[i].count += inc;
            at = g_ranges[i++].end;
            continue;
        }
        /* A hole up to the next range or end: a new range of count inc. */
        memmove(&g_ranges[i + 1], &g_ranges[i], (g_nranges - i) * sizeof(*g_ranges));
        g_nranges++;
        g_ranges[i] = (struct fork_range){
            .start = at,
            .end = i + 1 < g_nranges && g_ranges[i + 1].start < end ? g_ranges[i + 1].start : end,
            .count = inc};
        at = g_ranges[i++].end;
    }
    /* Ranges at 0 leave; neighbours with equal counts merge. */
    for (i = w = 0; i < g_nranges; i++) {
        if (!g_ranges[i].count)
            continue;
        if (w && g_ranges[w - 1].end == g_ranges[i].start &&
            g_ranges[w - 1].count == g_ranges[i].count)
            g_ranges[w - 1].end = g_ranges[i].end;
        else
            g_ranges[w++] = g_ranges[i];
    }
    g_nranges = w;
}

/* v44's ibv_madvise_range: 0, or -1 with errno. */
static int madvise_range(void *base, size_t size, int inc)
{
    uintptr_t page, start, end;
    int ret = 0;

    if (!size || !base)
        return 0;
    page = __atomic_load_n(&g_fork_huge, __ATOMIC_RELAXED) ? efasim_page_size_at((uintptr_t)base, 1)
                                                           : g_fork_page;
    start = (uintptr_t)base & ~(page - 1);
    end = ((uintptr_t)base + size + page - 1) & ~(page - 1);
    pthread_mutex_lock(&g_fork_lock);
    /* Each hole between the ranges met can become one, and either end splits one. */
    if (ranges_reserve(2 * (range_find(end) - range_find(start)) + 4)) {
        errno = ENOMEM;
        ret = -1;
    } else if (!range_advise(start, end, inc)) {
        range_count(start, end, inc);
    } else {
        ret = -1;
    }
    pthread_mutex_unlock(&g_fork_lock);
    return ret;
}

/* Before ibv_fork_init succeeded: nothing is done, but it is too late for it. */
static int fork_range(void *base, size_t size, int inc)
{
    if (__atomic_load_n(&g_fork_on, __ATOMIC_ACQUIRE))
        return madvise_range(base, size, inc);
    pthread_mutex_lock(&g_fork_lock);
    if (g_fork_on) {
        pthread_mutex_unlock(&g_fork_lock);
        return madvise_range(base, size, inc);
    }
    g_fork_too_late = true;
    pthread_mutex_unlock(&g_fork_lock);
    return 0;
}

EFASIM_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
    return fork_range(base, size, 1);
}

EFASIM_EXPORT int ibv_dofork_range(void *base, size_t size)
{
    return fork_range(base, size, -1);
}
