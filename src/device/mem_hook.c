/*
 * Memory hook for the registration cache, by relocation patching (what UCX's
 * ucm calls "reloc" mode). libefarm defines no munmap, free, ... of its own:
 * when the first cache that wants to cache opens (efarm_mem_hook_install(),
 * not at load, so programs that never cache run untouched), it walks every
 * loaded object (dl_iterate_phdr) and, in each object's relocation tables,
 * points the GOT entries that name a hooked function at efarm's hook for it.
 * A hook tells every open cache about the released range
 * (efarm_mr_cache_hook_release) and forwards to the definition the process
 * would have called, resolved once with dlsym(RTLD_DEFAULT) before anything
 * is patched.
 *
 * Why patching rather than defining the symbols: in an MPI program libefarm
 * is a DT_NEEDED of libmpi.so, after libc in the global lookup scope, so
 * definitions in libefarm would never be found first; and defining free() in
 * a library interposes every program that links it, used or not. Patching
 * reaches calls from every object whatever the load order, only once a
 * caching cache exists. Why not userfaultfd: it reports unmaps only to a
 * reader thread (efarm has none: progress is manual), needs privileges or
 * UFFD_USER_MODE_ONLY, and does not see free() of heap memory at all.
 *
 * Hooked names: munmap, mremap, mmap, mmap64 (MAP_FIXED), madvise, brk,
 * sbrk, shmdt, free, realloc, reallocarray. Relocations patched (x86-64):
 * R_X86_64_JUMP_SLOT (calls through the PLT, lazily bound or not),
 * R_X86_64_GLOB_DAT (address taken through the GOT) and R_X86_64_64 with
 * addend 0 that holds the real function (a function pointer in data). GOT
 * entries in the RELRO segment are made writable for the store and read-only
 * again after it.
 *
 * Objects loaded later: every efarm_mr_cache_get() first calls
 * efarm_mem_hook_sync(), which compares the loader's count of loaded objects
 * (dl_iterate_phdr's dlpi_adds) with the count at the last walk; if objects
 * were added it walks again, patching them, and makes every cache drop its
 * registrations once, because the new objects may have released memory
 * before they were patched. dlopen itself is deliberately not hooked: glibc's
 * dlopen finds its caller's RUNPATH and namespace from its return address, so
 * a dlopen called from efarm's hook would search efarm's RUNPATH instead of
 * the caller's; and the count also catches objects loaded by glibc itself
 * (NSS, iconv) and by dlmopen, which no dlopen hook would see.
 *
 * Skipped: the dynamic loader (it frees and unmaps only through its own
 * internal functions) and the vDSO (no relocations). libefarm itself is
 * patched like any other object: the hooks forward through the resolved
 * pointers, never through a GOT, so they cannot recurse.
 *
 * Honest status: LIVE only if every hooked name and malloc_usable_size were
 * resolved, malloc, free and malloc_usable_size come from one allocator, and
 * every reference in every object was patched: a GOT entry bound to a
 * definition other than the resolved one (another namespace, a private
 * definition) or a store that failed makes the status PATCH_FAILED, and the
 * caches then pass through. A later walk that fails makes every get flush its
 * cache (efarm_mem_hook_sync() returns false), which degrades to pass-through.
 * Once patched, libefarm pins itself (RTLD_NODELETE): the GOTs point into it.
 *
 * Under ASan, TSan and MSan (and with EFARM_MEM_HOOK_DISABLE, and off x86-64
 * Linux) nothing is patched and caches pass through: the sanitizer runtimes
 * interpose munmap, free, ... themselves. mr_cache.c lists what the hook
 * covers and what it does not.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#undef _FILE_OFFSET_BITS /* mmap and mmap64 are hooked separately below */

#include "efarm_log.h"
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

#if defined(EFARM_MEM_HOOK_DISABLE) || defined(EFARM_MEM_HOOK_SANITIZER) || \
    !defined(__x86_64__) || !defined(__linux__)

enum efarm_mem_hook_status efarm_mem_hook_install(void)
{
    return EFARM_MEM_HOOK_NOT_BUILT;
}

enum efarm_mem_hook_status efarm_mem_hook_status(void)
{
    return EFARM_MEM_HOOK_NOT_BUILT;
}

bool efarm_mem_hook_sync(void)
{
    return true;
}

#else

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <unistd.h>

_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "dlsym results must fit a function");

/* The definitions efarm's hooks forward to. */
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
    void *(*reallocarray)(void *, size_t, size_t);
    size_t (*malloc_usable_size)(void *);
};

static struct mem_hook_next g_next;

/* One hooked name: its hook, and the definition it replaces (g_next's member). */
struct mem_hook_sym {
    const char *name;
    void *hook;
    void *next;
};

enum { MEM_HOOK_NSYMS = 11 };
static struct mem_hook_sym g_syms[MEM_HOOK_NSYMS];

static pthread_mutex_t g_walk_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int g_status = EFARM_MEM_HOOK_NOT_INSTALLED;
static atomic_ullong g_walked_adds; /* dlpi_adds when the last walk finished */
static atomic_bool g_degraded;      /* a walk after install failed: caches flush on every get */

static void *mem_hook_addr(const void *fn_p)
{
    void *addr;

    memcpy(&addr, fn_p, sizeof(addr));
    return addr;
}

/* dlsym into a function pointer (POSIX guarantees the representation fits). */
static void mem_hook_resolve(const char *name, void *fn_p)
{
    void *sym = dlsym(RTLD_DEFAULT, name);

    memcpy(fn_p, &sym, sizeof(sym));
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

/* ---- The hooks ------------------------------------------------------------------ */

static int mem_hook_munmap(void *addr, size_t len)
{
    efarm_mr_cache_hook_release(addr, len, EFARM_MR_RELEASE_UNMAP);
    return g_next.munmap(addr, len);
}

static void *mem_hook_mremap(void *old_address, size_t old_size, size_t new_size, int flags, ...)
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
    return g_next.mremap(old_address, old_size, new_size, flags, new_address);
}

static void *mem_hook_mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset)
{
    /* MAP_FIXED replaces whatever was mapped there (MAP_FIXED_NOREPLACE does not). */
    if (flags & MAP_FIXED)
        efarm_mr_cache_hook_release(addr, length, EFARM_MR_RELEASE_UNMAP);
    return g_next.mmap(addr, length, prot, flags, fd, offset);
}

static void *mem_hook_mmap64(void *addr, size_t length, int prot, int flags, int fd, off64_t offset)
{
    if (flags & MAP_FIXED)
        efarm_mr_cache_hook_release(addr, length, EFARM_MR_RELEASE_UNMAP);
    return g_next.mmap64(addr, length, prot, flags, fd, offset);
}

static int mem_hook_madvise(void *addr, size_t len, int advice)
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
    return g_next.madvise(addr, len, advice);
}

static int mem_hook_brk(void *addr)
{
    if (efarm_mr_cache_hook_wanted()) {
        uintptr_t now = (uintptr_t)g_next.sbrk(0);

        if (now != UINTPTR_MAX && (uintptr_t)addr < now)
            efarm_mr_cache_hook_release(addr, now - (uintptr_t)addr, EFARM_MR_RELEASE_UNMAP);
    }
    return g_next.brk(addr);
}

static void *mem_hook_sbrk(intptr_t increment)
{
    if (increment < 0 && efarm_mr_cache_hook_wanted()) {
        uintptr_t now = (uintptr_t)g_next.sbrk(0);

        if (now != UINTPTR_MAX)
            efarm_mr_cache_hook_release((void *)(now - (uintptr_t)-increment), (size_t)-increment,
                                        EFARM_MR_RELEASE_UNMAP);
    }
    return g_next.sbrk(increment);
}

static int mem_hook_shmdt(const void *shmaddr)
{
    if (efarm_mr_cache_hook_wanted()) {
        size_t length = mem_hook_shm_length((uintptr_t)shmaddr);

        efarm_mr_cache_hook_release(shmaddr, length ? length : 1, EFARM_MR_RELEASE_UNMAP);
    }
    return g_next.shmdt(shmaddr);
}

/*
 * free() and realloc() (glibc frees mmapped chunks and trims its heap with
 * internal calls no GOT sees; the pages under a block return only after the
 * block is freed, so seeing the free is enough).
 */
static void mem_hook_free(void *ptr)
{
    if (ptr && efarm_mr_cache_hook_wanted())
        efarm_mr_cache_hook_release(ptr, g_next.malloc_usable_size(ptr), EFARM_MR_RELEASE_FREE);
    g_next.free(ptr);
}

static void *mem_hook_realloc(void *ptr, size_t size)
{
    /* Moving, shrinking or growing may all give the block's pages back. */
    if (ptr && efarm_mr_cache_hook_wanted())
        efarm_mr_cache_hook_release(ptr, g_next.malloc_usable_size(ptr), EFARM_MR_RELEASE_FREE);
    return g_next.realloc(ptr, size);
}

/* glibc's reallocarray calls its internal realloc, so it is replaced by one on top of realloc. */
static void *mem_hook_reallocarray(void *ptr, size_t nmemb, size_t size)
{
    if (size && nmemb > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return mem_hook_realloc(ptr, nmemb * size);
}

/* ---- Resolving ------------------------------------------------------------------ */

#define MEM_HOOK_SYM(i_, name_)                                                                   \
    do {                                                                                          \
        __typeof__(&mem_hook_##name_) hook_ = mem_hook_##name_;                                   \
        mem_hook_resolve(#name_, &g_next.name_);                                                  \
        g_syms[i_] = (struct mem_hook_sym){                                                       \
            .name = #name_, .hook = mem_hook_addr(&hook_), .next = mem_hook_addr(&g_next.name_)}; \
    } while (0)

/* Resolve what the hooks forward to; the status if that fails, else LIVE. */
static enum efarm_mem_hook_status mem_hook_resolve_all(void)
{
    Dl_info info;
    const void *allocator;

    MEM_HOOK_SYM(0, munmap);
    MEM_HOOK_SYM(1, mremap);
    MEM_HOOK_SYM(2, mmap);
    MEM_HOOK_SYM(3, mmap64);
    MEM_HOOK_SYM(4, madvise);
    MEM_HOOK_SYM(5, brk);
    MEM_HOOK_SYM(6, sbrk);
    MEM_HOOK_SYM(7, shmdt);
    MEM_HOOK_SYM(8, free);
    MEM_HOOK_SYM(9, realloc);
    MEM_HOOK_SYM(10, reallocarray);
    mem_hook_resolve("malloc_usable_size", &g_next.malloc_usable_size);
    for (size_t i = 0; i < MEM_HOOK_NSYMS; i++)
        if (!g_syms[i].next)
            return EFARM_MEM_HOOK_UNRESOLVED;
    if (!g_next.malloc_usable_size)
        return EFARM_MEM_HOOK_UNRESOLVED;

    /* The allocator that malloc'ed a block must be the one that sizes and frees it. */
    if (!dladdr(dlsym(RTLD_DEFAULT, "malloc"), &info))
        return EFARM_MEM_HOOK_ALLOCATOR;
    allocator = info.dli_fbase;
    if (!dladdr(mem_hook_addr(&g_next.free), &info) || info.dli_fbase != allocator ||
        !dladdr(mem_hook_addr(&g_next.realloc), &info) || info.dli_fbase != allocator ||
        !dladdr(mem_hook_addr(&g_next.malloc_usable_size), &info) || info.dli_fbase != allocator)
        return EFARM_MEM_HOOK_ALLOCATOR;
    return EFARM_MEM_HOOK_LIVE;
}

/* ---- Patching ------------------------------------------------------------------- */

struct mem_hook_walk {
    unsigned long long adds; /* dlpi_adds seen */
    size_t patched;          /* entries written */
    size_t foreign;          /* entries bound to another definition: left alone */
    size_t failed;           /* entries that could not be written */
};

/* The hooked name a relocation refers to, or NULL. */
static const struct mem_hook_sym *mem_hook_lookup(const char *name)
{
    for (size_t i = 0; i < MEM_HOOK_NSYMS; i++)
        if (!strcmp(name, g_syms[i].name))
            return &g_syms[i];
    return NULL;
}

/* The object's loaded segment that holds addr, or NULL. */
static const ElfW(Phdr) * mem_hook_segment(const struct dl_phdr_info *info, uintptr_t addr)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;

        if (ph->p_type == PT_LOAD && addr >= start && addr - start < ph->p_memsz)
            return ph;
    }
    return NULL;
}

/* Whether addr lies in one of the object's loaded segments (a lazy PLT stub does). */
static bool mem_hook_in_object(const struct dl_phdr_info *info, uintptr_t addr)
{
    return mem_hook_segment(info, addr) != NULL;
}

/* Whether slot lies in a segment the object maps writable (before RELRO takes it back). */
static bool mem_hook_writable(const struct dl_phdr_info *info, uintptr_t slot)
{
    const ElfW(Phdr) *ph = mem_hook_segment(info, slot);

    return ph != NULL && (ph->p_flags & PF_W) != 0;
}

/*
 * Store value in *slot, in a writable segment of the object. The dynamic
 * loader made the whole pages of [relro_lo, relro_hi) read-only (RELRO): such
 * a page is made writable for the store and read-only again.
 */
static int mem_hook_store(void **slot, void *value, uintptr_t relro_lo, uintptr_t relro_hi)
{
    uintptr_t addr = (uintptr_t)slot, page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = addr & ~(page - 1);

    if (addr < relro_lo || addr >= relro_hi) {
        __atomic_store_n(slot, value, __ATOMIC_RELEASE);
        return 0;
    }
    if (mprotect((void *)lo, page, PROT_READ | PROT_WRITE))
        return -errno;
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    return mprotect((void *)lo, page, PROT_READ) ? -errno : 0;
}

/* A dynamic-section address: relocated in place by glibc for most objects, an offset otherwise. */
static uintptr_t mem_hook_dyn_addr(const struct dl_phdr_info *info, ElfW(Addr) ptr)
{
    return ptr < info->dlpi_addr ? info->dlpi_addr + ptr : ptr;
}

static void mem_hook_patch_table(const struct dl_phdr_info *info, const ElfW(Rela) * rela,
                                 size_t count, const ElfW(Sym) * symtab, const char *strtab,
                                 uintptr_t relro_lo, uintptr_t relro_hi, struct mem_hook_walk *w)
{
    for (size_t i = 0; i < count; i++) {
        unsigned long type = ELF64_R_TYPE(rela[i].r_info), symidx = ELF64_R_SYM(rela[i].r_info);
        const struct mem_hook_sym *sym;
        void **slot, *now;

        if (!symidx ||
            (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT && type != R_X86_64_64))
            continue;
        sym = mem_hook_lookup(strtab + symtab[symidx].st_name);
        if (!sym)
            continue;
        slot = (void **)(info->dlpi_addr + rela[i].r_offset);
        now = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        if (now == sym->hook)
            continue;
        if (type == R_X86_64_64) {
            /* A function pointer in data: only the plain address of the real function. */
            if (rela[i].r_addend || now != sym->next)
                continue;
        } else if (now != sym->next &&
                   !(type == R_X86_64_JUMP_SLOT && mem_hook_in_object(info, (uintptr_t)now))) {
            /* Bound elsewhere (another namespace's libc, a private definition); a lazy
             * JUMP_SLOT still points at the object's own PLT stub. */
            w->foreign++;
            continue;
        }
        if (!mem_hook_writable(info, (uintptr_t)slot) ||
            mem_hook_store(slot, sym->hook, relro_lo, relro_hi))
            w->failed++;
        else
            w->patched++;
    }
}

static bool mem_hook_skip(const char *name)
{
    const char *base = strrchr(name, '/');

    base = base ? base + 1 : name;
    return !strncmp(base, "ld-linux", 8) || !strncmp(base, "ld64.so", 7) ||
           !strncmp(base, "linux-vdso", 10) || !strncmp(base, "linux-gate", 10);
}

static int mem_hook_patch_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct mem_hook_walk *w = arg;
    const ElfW(Dyn) *dyn = NULL;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    uintptr_t relro_lo = 0, relro_hi = 0, jmprel = 0, rela = 0;
    size_t jmprel_size = 0, rela_size = 0, rela_ent = sizeof(ElfW(Rela));
    long pltrel = DT_RELA;

    (void)size;
    w->adds = info->dlpi_adds;
    if (mem_hook_skip(info->dlpi_name ? info->dlpi_name : ""))
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

        if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
        else if (ph->p_type == PT_GNU_RELRO) {
            /* As glibc protects it: whole pages, the last partial one left writable. */
            uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);

            relro_lo = (info->dlpi_addr + ph->p_vaddr) & ~(page - 1);
            relro_hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz) & ~(page - 1);
        }
    }
    if (!dyn)
        return 0;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_SYMTAB:
            symtab = (const ElfW(Sym) *)mem_hook_dyn_addr(info, dyn->d_un.d_ptr);
            break;
        case DT_STRTAB:
            strtab = (const char *)mem_hook_dyn_addr(info, dyn->d_un.d_ptr);
            break;
        case DT_JMPREL:
            jmprel = mem_hook_dyn_addr(info, dyn->d_un.d_ptr);
            break;
        case DT_PLTRELSZ:
            jmprel_size = dyn->d_un.d_val;
            break;
        case DT_PLTREL:
            pltrel = (long)dyn->d_un.d_val;
            break;
        case DT_RELA:
            rela = mem_hook_dyn_addr(info, dyn->d_un.d_ptr);
            break;
        case DT_RELASZ:
            rela_size = dyn->d_un.d_val;
            break;
        case DT_RELAENT:
            rela_ent = dyn->d_un.d_val;
            break;
        case DT_REL:
            w->failed++; /* never on x86-64: an object we do not understand */
            break;
        default:
            break;
        }
    }
    if (!symtab || !strtab || rela_ent != sizeof(ElfW(Rela)) || pltrel != DT_RELA) {
        if (jmprel || rela)
            w->failed++;
        return 0;
    }
    if (jmprel)
        mem_hook_patch_table(info, (const ElfW(Rela) *)jmprel, jmprel_size / sizeof(ElfW(Rela)),
                             symtab, strtab, relro_lo, relro_hi, w);
    if (rela)
        mem_hook_patch_table(info, (const ElfW(Rela) *)rela, rela_size / sizeof(ElfW(Rela)), symtab,
                             strtab, relro_lo, relro_hi, w);
    return 0;
}

/* Patch every loaded object; g_walk_lock held. Returns whether every reference was patched. */
static bool mem_hook_walk(void)
{
    struct mem_hook_walk w = {0};

    dl_iterate_phdr(mem_hook_patch_object, &w);
    atomic_store_explicit(&g_walked_adds, w.adds, memory_order_release);
    efarm_log(w.foreign || w.failed ? EFARM_LOG_WARN : EFARM_LOG_INFO,
              "memory hook: %zu GOT entries patched, %zu bound elsewhere, %zu not writable",
              w.patched, w.foreign, w.failed);
    return !w.foreign && !w.failed;
}

static int mem_hook_first_adds(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    *(unsigned long long *)arg = info->dlpi_adds;
    return 1; /* the count is the same in every entry: stop at the first */
}

/* The objects the dynamic loader has ever loaded (never decreases). */
static unsigned long long mem_hook_loader_adds(void)
{
    unsigned long long adds = 0;

    dl_iterate_phdr(mem_hook_first_adds, &adds);
    return adds;
}

/* Keep libefarm mapped for good: patched GOTs point into it. */
static void mem_hook_pin_self(void)
{
    Dl_info self;

    if (dladdr(&g_next, &self) && self.dli_fname && self.dli_fname[0])
        (void)dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
}

enum efarm_mem_hook_status efarm_mem_hook_install(void)
{
    int status = atomic_load(&g_status);

    if (status != EFARM_MEM_HOOK_NOT_INSTALLED)
        return (enum efarm_mem_hook_status)status;
    pthread_mutex_lock(&g_walk_lock);
    status = atomic_load(&g_status);
    if (status == EFARM_MEM_HOOK_NOT_INSTALLED) {
        status = (int)mem_hook_resolve_all();
        if (status == EFARM_MEM_HOOK_LIVE) {
            mem_hook_pin_self();
            if (!mem_hook_walk())
                status = EFARM_MEM_HOOK_PATCH_FAILED;
        }
        atomic_store(&g_status, status);
    }
    pthread_mutex_unlock(&g_walk_lock);
    return (enum efarm_mem_hook_status)status;
}

enum efarm_mem_hook_status efarm_mem_hook_status(void)
{
    return (enum efarm_mem_hook_status)atomic_load(&g_status);
}

bool efarm_mem_hook_sync(void)
{
    unsigned long long adds;

    if (atomic_load_explicit(&g_status, memory_order_acquire) != EFARM_MEM_HOOK_LIVE)
        return true; /* nothing patched: nothing to keep up to date */
    adds = mem_hook_loader_adds();
    if (adds == atomic_load_explicit(&g_walked_adds, memory_order_acquire))
        return !atomic_load_explicit(&g_degraded, memory_order_relaxed);
    pthread_mutex_lock(&g_walk_lock);
    if (adds != atomic_load(&g_walked_adds)) {
        if (!mem_hook_walk() && !atomic_exchange(&g_degraded, true))
            efarm_log(EFARM_LOG_WARN, "memory hook: an object loaded later could not be patched; "
                                      "registrations are no longer reused");
        /* The new objects ran before they were patched: forget every registration. */
        efarm_mr_cache_hook_flush();
    }
    pthread_mutex_unlock(&g_walk_lock);
    return !atomic_load_explicit(&g_degraded, memory_order_relaxed);
}

#endif /* hook built */
