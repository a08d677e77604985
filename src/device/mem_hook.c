/*
 * Memory hook for the registration cache: efarm defines the functions that
 * release memory (munmap, mremap, mmap with MAP_FIXED, madvise discarding
 * pages, brk/sbrk shrinking, shmdt, free, realloc, reallocarray), tells every
 * open cache about the released range (efarm_mr_cache_hook_release), then
 * forwards to the next definition, found with dlsym(RTLD_NEXT). mr_cache.c
 * explains why free() and realloc() are included and lists what is and is not
 * covered.
 *
 * Resolving the next definitions: a constructor resolves them at load time;
 * a hook that runs before (or during) that resolves lazily. dlsym may call
 * malloc and free, so while one thread resolves, a hook never waits: munmap,
 * mmap, mremap, madvise and shmdt issue the system call themselves, brk, sbrk
 * and realloc fail with ENOMEM, and free leaks its block (a few bytes from
 * dlsym itself, once per process).
 *
 * The definitions only take effect if the process finds them first;
 * efarm_mem_hook_status() checks that, so a cache never relies on a hook
 * that is not there. Under ASan, TSan and MSan nothing is defined (nor with
 * EFARM_MEM_HOOK_DISABLE) and caches pass through: clang links the sanitizer
 * runtimes' own munmap, free, ... into the executable, where efarm's would
 * replace them, and gcc's runtime calls free from its initialization, before
 * the shadow memory that instrumented code here would touch exists.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#undef _FILE_OFFSET_BITS /* mmap and mmap64 are defined separately below */

#include "efarm_mr_cache.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define EFARM_MEM_HOOK_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define EFARM_MEM_HOOK_SANITIZER 1
#endif

#if defined(EFARM_MEM_HOOK_DISABLE) || defined(EFARM_MEM_HOOK_SANITIZER)

enum efarm_mem_hook_status efarm_mem_hook_status(void)
{
    return EFARM_MEM_HOOK_NOT_BUILT;
}

#else

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <unistd.h>

_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "dlsym results must fit a function");

/* The definitions efarm's forward to. */
struct mem_hook_next {
    int (*munmap)(void *, size_t);
    void *(*mremap)(void *, size_t, size_t, int, ...);
    void *(*mmap)(void *, size_t, int, int, int, off_t);
    void *(*mmap64)(void *, size_t, int, int, int, off64_t);
    int (*madvise)(void *, size_t, int);
    int (*brk)(void *);
    void *(*sbrk)(intptr_t);
    int (*shmdt)(const void *);
    void (*free)(void *);
    void *(*realloc)(void *, size_t);
    size_t (*malloc_usable_size)(void *);
};

static struct mem_hook_next g_next;

enum { MEM_HOOK_UNRESOLVED, MEM_HOOK_RESOLVING, MEM_HOOK_RESOLVED };
static atomic_int g_resolve_state;
static atomic_int g_status = -1; /* enum efarm_mem_hook_status once known */

/* Every function this file defines: each must be the one the process finds first. */
static const char *const g_hooked_names[] = {
    "munmap", "mremap", "mmap", "mmap64",  "madvise",      "brk",
    "sbrk",   "shmdt",  "free", "realloc", "reallocarray",
};

/* dlsym into a function pointer (POSIX guarantees the representation fits). */
static void mem_hook_sym(void *handle, const char *name, void *fn_p)
{
    void *sym = dlsym(handle, name);

    memcpy(fn_p, &sym, sizeof(sym));
}

static void *mem_hook_fn_addr(const void *fn_p)
{
    void *addr;

    memcpy(&addr, fn_p, sizeof(addr));
    return addr;
}

/* True once the next definitions are known; false (never waiting) while they are not. */
static bool mem_hook_resolve(void)
{
    int state = atomic_load_explicit(&g_resolve_state, memory_order_acquire);

    if (state == MEM_HOOK_RESOLVED)
        return true;
    if (state == MEM_HOOK_RESOLVING ||
        !atomic_compare_exchange_strong(&g_resolve_state, &state, MEM_HOOK_RESOLVING))
        return false;
    mem_hook_sym(RTLD_NEXT, "munmap", &g_next.munmap);
    mem_hook_sym(RTLD_NEXT, "mremap", &g_next.mremap);
    mem_hook_sym(RTLD_NEXT, "mmap", &g_next.mmap);
    mem_hook_sym(RTLD_NEXT, "mmap64", &g_next.mmap64);
    mem_hook_sym(RTLD_NEXT, "madvise", &g_next.madvise);
    mem_hook_sym(RTLD_NEXT, "brk", &g_next.brk);
    mem_hook_sym(RTLD_NEXT, "sbrk", &g_next.sbrk);
    mem_hook_sym(RTLD_NEXT, "shmdt", &g_next.shmdt);
    mem_hook_sym(RTLD_NEXT, "free", &g_next.free);
    mem_hook_sym(RTLD_NEXT, "realloc", &g_next.realloc);
    mem_hook_sym(RTLD_NEXT, "malloc_usable_size", &g_next.malloc_usable_size);
    atomic_store_explicit(&g_resolve_state, MEM_HOOK_RESOLVED, memory_order_release);
    return true;
}

__attribute__((constructor)) static void mem_hook_initialize(void)
{
    mem_hook_resolve();
}

static enum efarm_mem_hook_status mem_hook_check(void)
{
    Dl_info self, info;
    const void *allocator;

    if (!dladdr(&g_next, &self))
        return EFARM_MEM_HOOK_UNRESOLVED;
    for (size_t i = 0; i < sizeof(g_hooked_names) / sizeof(g_hooked_names[0]); i++) {
        void *sym = dlsym(RTLD_DEFAULT, g_hooked_names[i]);

        if (!sym || !dladdr(sym, &info) || info.dli_fbase != self.dli_fbase)
            return EFARM_MEM_HOOK_NOT_FIRST;
    }
    if (!g_next.munmap || !g_next.mremap || !g_next.mmap || !g_next.mmap64 || !g_next.madvise ||
        !g_next.brk || !g_next.sbrk || !g_next.shmdt || !g_next.free || !g_next.realloc ||
        !g_next.malloc_usable_size)
        return EFARM_MEM_HOOK_UNRESOLVED;

    /* The allocator that malloc'ed a block must be the one that sizes and frees it. */
    if (!dladdr(dlsym(RTLD_DEFAULT, "malloc"), &info))
        return EFARM_MEM_HOOK_ALLOCATOR;
    allocator = info.dli_fbase;
    if (!dladdr(mem_hook_fn_addr(&g_next.free), &info) || info.dli_fbase != allocator ||
        !dladdr(mem_hook_fn_addr(&g_next.realloc), &info) || info.dli_fbase != allocator ||
        !dladdr(mem_hook_fn_addr(&g_next.malloc_usable_size), &info) || info.dli_fbase != allocator)
        return EFARM_MEM_HOOK_ALLOCATOR;
    return EFARM_MEM_HOOK_LIVE;
}

enum efarm_mem_hook_status efarm_mem_hook_status(void)
{
    int status = atomic_load(&g_status);

    if (status >= 0)
        return (enum efarm_mem_hook_status)status;
    if (!mem_hook_resolve())
        return EFARM_MEM_HOOK_UNRESOLVED; /* being resolved by another thread: ask later */
    status = (int)mem_hook_check();
    atomic_store(&g_status, status);
    return (enum efarm_mem_hook_status)status;
}

/* free() and realloc() size blocks with malloc_usable_size only once that is known to be safe. */
static bool mem_hook_allocator_live(void)
{
    return atomic_load_explicit(&g_status, memory_order_relaxed) == EFARM_MEM_HOOK_LIVE;
}

/*
 * Length of the System V segment attached at addr: its mapping in
 * /proc/self/maps plus the contiguous ones of the same inode (mprotect splits
 * a mapping). Returns 0 if not found. Reads with a stack buffer: no malloc.
 */
static size_t mem_hook_shm_length(uintptr_t addr)
{
    char buf[4096];
    size_t have = 0, length = 0;
    uintptr_t next = 0;
    unsigned long inode = 0;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return 0;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
        char *line = buf, *nl;

        if (n <= 0)
            break;
        have += (size_t)n;
        buf[have] = '\0';
        while ((nl = memchr(line, '\n', (size_t)(buf + have - line)))) {
            char *p;
            uintptr_t start, end;
            unsigned long ino;

            *nl = '\0';
            start = (uintptr_t)strtoull(line, &p, 16);
            end = *p == '-' ? (uintptr_t)strtoull(p + 1, &p, 16) : 0;
            for (int field = 0; field < 3; field++) { /* perms, offset, device */
                p += strspn(p, " ");
                p += strcspn(p, " ");
            }
            ino = strtoul(p, NULL, 10);
            line = nl + 1;
            if (!length && start == addr && end > start) {
                length = end - start;
                next = end;
                inode = ino;
            } else if (length && start == next && ino == inode) {
                length += end - start;
                next = end;
            } else if (length) {
                close(fd);
                return length;
            }
        }
        have = (size_t)(buf + have - line);
        memmove(buf, line, have);
        if (have == sizeof(buf) - 1)
            have = 0; /* a line longer than the buffer: drop it */
    }
    close(fd);
    return length;
}

int munmap(void *addr, size_t len)
{
    efarm_mr_cache_hook_release(addr, len, EFARM_MR_RELEASE_UNMAP);
    if (!mem_hook_resolve() || !g_next.munmap)
        return (int)syscall(SYS_munmap, addr, len);
    return g_next.munmap(addr, len);
}

void *mremap(void *old_address, size_t old_size, size_t new_size, int flags, ...)
{
    void *new_address = NULL;

    /* As glibc does: the fifth argument is only passed with MREMAP_FIXED. */
    if (flags & MREMAP_FIXED) {
        va_list ap;

        va_start(ap, flags);
        new_address = va_arg(ap, void *);
        va_end(ap);
        efarm_mr_cache_hook_release(new_address, new_size, EFARM_MR_RELEASE_UNMAP);
    }
    efarm_mr_cache_hook_release(old_address, old_size, EFARM_MR_RELEASE_UNMAP);
    if (!mem_hook_resolve() || !g_next.mremap)
        return (void *)syscall(SYS_mremap, old_address, old_size, new_size, flags, new_address);
    return g_next.mremap(old_address, old_size, new_size, flags, new_address);
}

void *mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset)
{
    /* MAP_FIXED replaces whatever was mapped there (MAP_FIXED_NOREPLACE does not). */
    if (flags & MAP_FIXED)
        efarm_mr_cache_hook_release(addr, length, EFARM_MR_RELEASE_UNMAP);
    if (!mem_hook_resolve() || !g_next.mmap)
        return (void *)syscall(SYS_mmap, addr, length, prot, flags, fd, offset);
    return g_next.mmap(addr, length, prot, flags, fd, offset);
}

void *mmap64(void *addr, size_t length, int prot, int flags, int fd, off64_t offset)
{
    if (flags & MAP_FIXED)
        efarm_mr_cache_hook_release(addr, length, EFARM_MR_RELEASE_UNMAP);
    if (!mem_hook_resolve() || !g_next.mmap64)
        return (void *)syscall(SYS_mmap, addr, length, prot, flags, fd, offset);
    return g_next.mmap64(addr, length, prot, flags, fd, offset);
}

int madvise(void *addr, size_t len, int advice)
{
    /* Advice after which the range may read back other pages than the ones registered. */
    switch (advice) {
    case MADV_DONTNEED:
    case MADV_FREE:
    case MADV_REMOVE:
#ifdef MADV_DONTNEED_LOCKED
    case MADV_DONTNEED_LOCKED:
#endif
        efarm_mr_cache_hook_release(addr, len, EFARM_MR_RELEASE_UNMAP);
        break;
    default:
        break;
    }
    if (!mem_hook_resolve() || !g_next.madvise)
        return (int)syscall(SYS_madvise, addr, len, advice);
    return g_next.madvise(addr, len, advice);
}

int brk(void *addr)
{
    if (!mem_hook_resolve() || !g_next.brk || !g_next.sbrk) {
        errno = ENOMEM;
        return -1;
    }
    if (efarm_mr_cache_hook_wanted()) {
        uintptr_t now = (uintptr_t)g_next.sbrk(0);

        if (now != UINTPTR_MAX && (uintptr_t)addr < now)
            efarm_mr_cache_hook_release(addr, now - (uintptr_t)addr, EFARM_MR_RELEASE_UNMAP);
    }
    return g_next.brk(addr);
}

void *sbrk(intptr_t increment)
{
    if (!mem_hook_resolve() || !g_next.sbrk) {
        errno = ENOMEM;
        return (void *)-1;
    }
    if (increment < 0 && efarm_mr_cache_hook_wanted()) {
        uintptr_t now = (uintptr_t)g_next.sbrk(0);

        if (now != UINTPTR_MAX)
            efarm_mr_cache_hook_release((void *)(now - (uintptr_t)-increment), (size_t)-increment,
                                        EFARM_MR_RELEASE_UNMAP);
    }
    return g_next.sbrk(increment);
}

int shmdt(const void *shmaddr)
{
    if (efarm_mr_cache_hook_wanted()) {
        size_t length = mem_hook_shm_length((uintptr_t)shmaddr);

        efarm_mr_cache_hook_release(shmaddr, length ? length : 1, EFARM_MR_RELEASE_UNMAP);
    }
    if (!mem_hook_resolve() || !g_next.shmdt) {
#ifdef SYS_shmdt
        return (int)syscall(SYS_shmdt, shmaddr);
#else
        errno = ENOSYS;
        return -1;
#endif
    }
    return g_next.shmdt(shmaddr);
}

void free(void *ptr)
{
    if (ptr && efarm_mr_cache_hook_wanted() && mem_hook_allocator_live())
        efarm_mr_cache_hook_release(ptr, g_next.malloc_usable_size(ptr), EFARM_MR_RELEASE_FREE);
    if (mem_hook_resolve() && g_next.free)
        g_next.free(ptr);
    /* Otherwise the block leaks: only dlsym's own, while resolving. */
}

void *realloc(void *ptr, size_t size)
{
    /* Moving, shrinking or growing may all give the block's pages back. */
    if (ptr && efarm_mr_cache_hook_wanted() && mem_hook_allocator_live())
        efarm_mr_cache_hook_release(ptr, g_next.malloc_usable_size(ptr), EFARM_MR_RELEASE_FREE);
    if (!mem_hook_resolve() || !g_next.realloc) {
        errno = ENOMEM;
        return NULL;
    }
    return g_next.realloc(ptr, size);
}

/* glibc's reallocarray calls its internal realloc, so it is defined here on top of realloc(). */
void *reallocarray(void *ptr, size_t nmemb, size_t size)
{
    if (size && nmemb > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(ptr, nmemb * size);
}

#endif /* hook built */
