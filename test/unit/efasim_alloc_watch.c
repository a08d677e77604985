/*
 * Which threads allocate: malloc and its family, and mmap, munmap, mremap and
 * madvise, defined in the test program so that every call from efasim (a
 * shared library) comes here first. Each call is passed on to glibc and, when
 * it comes from a thread other than the one that called
 * efasim_alloc_watch_begin(), counted: in the tests that watch, the only other
 * threads are efasim's service threads, which must never enter these
 * functions (efasim_model.h, "Service thread": libfabric's memory monitor
 * overwrites their first bytes while the application runs).
 *
 * Compiled out under AddressSanitizer and ThreadSanitizer, which define the
 * same functions themselves (EFASIM_ALLOC_WATCH is 0 then).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "efasim_common.h"

static _Thread_local bool t_watcher;
static bool g_watching;
static unsigned long g_foreign;
static const char *g_first; /* the first function a foreign thread entered */

#if EFASIM_ALLOC_WATCH

static void note(const char *fn)
{
    const char *none = NULL;

    if (!__atomic_load_n(&g_watching, __ATOMIC_RELAXED) || t_watcher)
        return;
    __atomic_add_fetch(&g_foreign, 1, __ATOMIC_RELAXED);
    __atomic_compare_exchange_n(&g_first, &none, fn, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* glibc's own allocator, under the names it exports for this purpose. */
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void __libc_free(void *p);

void *malloc(size_t size)
{
    note("malloc");
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
    note("calloc");
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
    note("realloc");
    return __libc_realloc(p, size);
}

void free(void *p)
{
    if (p) /* glibc's thread exit frees NULL pointers; that never reaches munmap */
        note("free");
    __libc_free(p);
}

void *memalign(size_t align, size_t size)
{
    note("memalign");
    return __libc_memalign(align, size);
}

void *aligned_alloc(size_t align, size_t size)
{
    note("aligned_alloc");
    return __libc_memalign(align, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
    void *p;

    note("posix_memalign");
    if (align < sizeof(void *) || (align & (align - 1)))
        return EINVAL;
    if (!(p = __libc_memalign(align, size)))
        return ENOMEM;
    *out = p;
    return 0;
}

/*
 * The definition the process would have called without this file: the C
 * library's, or one a preloaded library puts in front of it (efasim's kernel
 * front end takes mmap and munmap of its device's queues). Resolved once;
 * while dlsym itself runs, calls go straight to the kernel.
 */
static void *next_fn(const char *name, void **slot)
{
    static _Thread_local bool resolving;
    void *fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

    if (fn || resolving)
        return fn;
    resolving = true;
    fn = dlsym(RTLD_NEXT, name);
    resolving = false;
    __atomic_store_n(slot, fn, __ATOMIC_RELEASE);
    return fn;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    static void *next;
    void *(*fn)(void *, size_t, int, int, int, off_t);

    note("mmap");
    *(void **)&fn = next_fn("mmap", &next);
    if (fn)
        return fn(addr, len, prot, flags, fd, off);
    return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

int munmap(void *addr, size_t len)
{
    static void *next;
    int (*fn)(void *, size_t);

    note("munmap");
    *(void **)&fn = next_fn("munmap", &next);
    if (fn)
        return fn(addr, len);
    return (int)syscall(SYS_munmap, addr, len);
}

int madvise(void *addr, size_t len, int advice)
{
    note("madvise");
    return (int)syscall(SYS_madvise, addr, len, advice);
}

void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
    void *new_addr = NULL;
    va_list ap;

    note("mremap");
    if (flags & MREMAP_FIXED) {
        va_start(ap, flags);
        new_addr = va_arg(ap, void *);
        va_end(ap);
    }
    return (void *)syscall(SYS_mremap, old, old_len, new_len, flags, new_addr);
}

#endif /* EFASIM_ALLOC_WATCH */

void efasim_alloc_watch_begin(void)
{
    t_watcher = true;
    __atomic_store_n(&g_foreign, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g_first, NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&g_watching, true, __ATOMIC_RELEASE);
}

unsigned long efasim_alloc_watch_end(const char **first)
{
    __atomic_store_n(&g_watching, false, __ATOMIC_RELEASE);
    *first = __atomic_load_n(&g_first, __ATOMIC_RELAXED);
    return __atomic_load_n(&g_foreign, __ATOMIC_RELAXED);
}
