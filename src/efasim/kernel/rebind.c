/*
 * rdma-core's own references to mmap, mmap64 and munmap, bound to the kernel
 * front end's functions directly.
 *
 * A program may divert the C library's memory-mapping functions by patching
 * their code. libfabric's memory monitor does ("memhooks", its default on
 * Linux, which MPICH's ch4:ofi starts with its EFA domain): it overwrites the
 * first bytes of the mmap and munmap that its dlsym() finds with a jump to
 * functions of its own, which make the system calls directly. With the kernel
 * front end preloaded, the functions found are the front end's, so a queue
 * mapping of a uverbs descriptor reached the kernel, which knows no such file
 * (EBADF), and every ibv_create_cq after the domain's failed. On Linux the
 * kernel serves every path to mmap.
 *
 * So, once those functions' entries changed (interpose.c checks at each uverbs
 * open and command), the GOT entries of rdma-core's libraries
 * (libibverbs, and the providers: libefa and its libibverbs driver module) for
 * those three names are pointed at functions of the front end that no symbol
 * names, so nothing finds them to patch. Those take uverbs descriptors and
 * queue mappings and pass every other call on through the public symbols,
 * patched or not: a monitor still sees rdma-core's other mappings. Both
 * relocation kinds a reference can take are rewritten (JUMP_SLOT through the
 * PLT, GLOB_DAT with -fno-plt); an entry in the RELRO segment is made writable
 * for the write and read-only again.
 */
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "uverbs.h"

#if defined(__x86_64__)

struct rebind {
    const struct efasim_rebind_fns *fns;
    unsigned rewritten;
};

/* rdma-core's libraries: libibverbs.so.*, libefa.so.*, and the driver modules lib*-rdmav*.so. */
static bool is_rdma_core(const char *path)
{
    const char *base = strrchr(path, '/');

    base = base ? base + 1 : path;
    return !strncmp(base, "libibverbs.so", 13) || !strncmp(base, "libefa.so", 9) ||
           (!strncmp(base, "lib", 3) && strstr(base, "-rdmav") && strstr(base, ".so"));
}

static void *target_of(const struct efasim_rebind_fns *fns, const char *name)
{
    if (!strcmp(name, "mmap"))
        return (void *)fns->mmap;
    if (!strcmp(name, "mmap64"))
        return (void *)fns->mmap64;
    if (!strcmp(name, "munmap"))
        return (void *)fns->munmap;
    return NULL;
}

/* Writes one GOT entry, through a writable window if it lies in the RELRO segment. */
static void write_slot(void **slot, void *value, uintptr_t relro, size_t relro_len)
{
    uintptr_t page = (uintptr_t)slot & ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    bool ro = relro_len && (uintptr_t)slot >= relro && (uintptr_t)slot < relro + relro_len;

    if (*slot == value)
        return;
    if (ro && mprotect((void *)page, ps, PROT_READ | PROT_WRITE))
        return; /* left as it is: the public functions still serve it unless patched */
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    if (ro)
        mprotect((void *)page, ps, PROT_READ);
}

static void rewrite_table(const ElfW(Rela) * rel, size_t bytes, const ElfW(Sym) * symtab,
                          const char *strtab, ElfW(Addr) base, uintptr_t relro, size_t relro_len,
                          struct rebind *rb)
{
    for (size_t i = 0; rel && i < bytes / sizeof(*rel); i++) {
        unsigned long type = ELF64_R_TYPE(rel[i].r_info);
        void *to;

        if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
            continue;
        to = target_of(rb->fns, strtab + symtab[ELF64_R_SYM(rel[i].r_info)].st_name);
        if (to) {
            write_slot((void **)(base + rel[i].r_offset), to, relro, relro_len);
            rb->rewritten++;
        }
    }
}

/* A dynamic-section address: glibc has relocated it in place on x86-64; a raw one is an offset. */
static uintptr_t dyn_addr(ElfW(Addr) base, ElfW(Addr) ptr)
{
    return ptr < base ? base + ptr : ptr;
}

static int rebind_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct rebind *rb = arg;
    const ElfW(Dyn) *dyn = NULL;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const ElfW(Rela) *jmprel = NULL, *rela = NULL;
    size_t jmprel_len = 0, rela_len = 0, relro_len = 0;
    uintptr_t relro = 0;

    (void)size;
    if (!info->dlpi_name || !is_rdma_core(info->dlpi_name))
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        else if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
            relro = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
            relro_len = info->dlpi_phdr[i].p_memsz;
        }
    }
    for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_SYMTAB:
            symtab = (const ElfW(Sym) *)dyn_addr(info->dlpi_addr, dyn->d_un.d_ptr);
            break;
        case DT_STRTAB:
            strtab = (const char *)dyn_addr(info->dlpi_addr, dyn->d_un.d_ptr);
            break;
        case DT_JMPREL:
            jmprel = (const ElfW(Rela) *)dyn_addr(info->dlpi_addr, dyn->d_un.d_ptr);
            break;
        case DT_PLTRELSZ:
            jmprel_len = dyn->d_un.d_val;
            break;
        case DT_RELA:
            rela = (const ElfW(Rela) *)dyn_addr(info->dlpi_addr, dyn->d_un.d_ptr);
            break;
        case DT_RELASZ:
            rela_len = dyn->d_un.d_val;
            break;
        default:
            break;
        }
    }
    if (!symtab || !strtab)
        return 0;
    rewrite_table(jmprel, jmprel_len, symtab, strtab, info->dlpi_addr, relro, relro_len, rb);
    rewrite_table(rela, rela_len, symtab, strtab, info->dlpi_addr, relro, relro_len, rb);
    return 0;
}

unsigned efasim_rebind_rdma_core(const struct efasim_rebind_fns *fns)
{
    struct rebind rb = {.fns = fns};

    dl_iterate_phdr(rebind_object, &rb);
    return rb.rewritten;
}

#else /* the kernel front end traps on x86-64 only (x86.c) */

unsigned efasim_rebind_rdma_core(const struct efasim_rebind_fns *fns)
{
    (void)fns;
    return 0;
}

#endif
