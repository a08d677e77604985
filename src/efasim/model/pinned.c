/*
 * What registering memory costs, counted as Linux and EFA's device count it.
 *
 * The process's pinned pages (Linux drivers/infiniband/core/umem.c,
 * ib_umem_get): every registration adds the 4 KiB pages its range spans to
 * mm->pinned_vm, one counter per process that every context of every device
 * shares (mlock's locked_vm is another). Without CAP_IPC_LOCK, a soft
 * RLIMIT_MEMLOCK of 0 refuses any registration (EPERM, can_do_mlock), and a
 * total beyond the limit refuses this one (ENOMEM), which is counted back out
 * at once. The limit is read at each registration, as the kernel reads it;
 * the capability once. Deregistration subtracts. A forked child starts at 0
 * (dup_mm gives the child's mm no pinned pages), and what its parent
 * registered before the fork is never subtracted from the child's count.
 *
 * The device's pages (Linux drivers/infiniband/hw/efa/efa_verbs.c,
 * efa_register_mr): EFA's device is given each MR as a list of pages of the
 * best size it supports for the buffer (ib_umem_find_best_pgsz over
 * page_size_cap, then ib_umem_num_dma_blocks). Pages of a hugetlb mapping
 * (MAP_HUGETLB, files of a hugetlbfs mount) are physically contiguous and
 * aligned, so a buffer that lies wholly in them is given as whole huge pages;
 * anything else as 4 KiB pages. Transparent huge pages count as 4 KiB pages
 * here: the kernel may merge them into larger blocks, so on EFA such a buffer
 * costs at most what efasim charges, never more. The budget itself is
 * objects.c's (EFASIM_MAX_REG_PAGES).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "efasim_model.h"

/* The kernel's PAGE_SHIFT on EFA's hosts (x86-64, and arm64 with 4 KiB pages). */
#define PIN_PAGE_SHIFT 12
#define PIN_PAGE_SIZE  (1ull << PIN_PAGE_SHIFT)

static uint64_t g_pinned_vm; /* pages: the process's pinned_vm (atomic) */
static uint32_t g_pin_epoch; /* which process counted a registration: new in each child */
static bool g_pin_ipc_lock;  /* CAP_IPC_LOCK in the effective set, read once */
static pthread_once_t g_pin_once = PTHREAD_ONCE_INIT;

/*
 * /proc/self/maps, kept open for PROCMAP_QUERY (stateless: threads share it):
 * an open per registration would cost more than the query. It names the
 * process that opened it, so a forked child opens its own.
 */
static int g_maps_fd = -1;

/* The child of a fork has pinned nothing yet (dup_mm); its parent's MRs are not its own. */
static void pin_atfork_child(void)
{
    int fd = __atomic_exchange_n(&g_maps_fd, -1, __ATOMIC_RELAXED);

    if (fd >= 0)
        close(fd);
    __atomic_store_n(&g_pinned_vm, 0, __ATOMIC_RELAXED);
    __atomic_add_fetch(&g_pin_epoch, 1, __ATOMIC_RELAXED);
}

static void pin_init(void)
{
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct d[2];

    /* capable(CAP_IPC_LOCK) asks the effective set. */
    g_pin_ipc_lock = !syscall(SYS_capget, &h, d) &&
                     (d[CAP_IPC_LOCK / 32].effective & (1u << (CAP_IPC_LOCK % 32)));
    if (pthread_atfork(NULL, NULL, pin_atfork_child))
        fprintf(stderr, "efasim: pthread_atfork failed: a forked child counts its parent's "
                        "pinned pages\n");
}

/* The pages of size `page` that [addr, addr + length) touches (ib_umem_num_dma_blocks). */
static uint64_t span_pages(uint64_t addr, uint64_t length, uint64_t page)
{
    uint64_t first = addr & ~(page - 1);
    uint64_t end = (addr + length + page - 1) & ~(page - 1);

    return (end - first) / page;
}

/*
 * The limit on pinned pages and whether it binds: EFASIM_MEMLOCK=kernel reads
 * the process's soft RLIMIT_MEMLOCK and capability, a byte count stands for a
 * process without CAP_IPC_LOCK whose limit it is.
 */
static uint64_t pin_limit(bool *capable_p)
{
    uint64_t knob = efasim_config()->memlock;
    struct rlimit rl;

    if (knob != EFASIM_LIMIT_KERNEL) {
        *capable_p = false;
        return knob;
    }
    *capable_p = g_pin_ipc_lock;
    if (getrlimit(RLIMIT_MEMLOCK, &rl))
        return UINT64_MAX;
    return rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
}

int efasim_pin_charge(uint64_t addr, uint64_t length, bool strict, struct efasim_pin *pin_p)
{
    uint64_t limit, npages, total;
    bool capable;

    pthread_once(&g_pin_once, pin_init);
    /* ib_umem_get: the range or its page-aligned end wraps. */
    if (addr + length < addr || addr + length + PIN_PAGE_SIZE - 1 < addr + length)
        return -EINVAL;
    limit = pin_limit(&capable);
    if (!limit && !capable)
        return -EPERM; /* can_do_mlock */
    npages = span_pages(addr, length, PIN_PAGE_SIZE);
    if ((strict && !npages) || npages > UINT_MAX)
        return -EINVAL; /* ib_umem_get: npages isn't in the range 1..UINT_MAX */
    total = __atomic_add_fetch(&g_pinned_vm, npages, __ATOMIC_RELAXED);
    if (total > (limit >> PIN_PAGE_SHIFT) && !capable) {
        __atomic_sub_fetch(&g_pinned_vm, npages, __ATOMIC_RELAXED);
        return -ENOMEM; /* ib_umem_get: beyond RLIMIT_MEMLOCK */
    }
    /* Pinning faults every page in: one not mapped is EFAULT. efasim pins nothing. */
    if (strict &&
        msync((void *)(uintptr_t)(addr & ~(PIN_PAGE_SIZE - 1)), npages * PIN_PAGE_SIZE, MS_ASYNC)) {
        __atomic_sub_fetch(&g_pinned_vm, npages, __ATOMIC_RELAXED);
        return -EFAULT;
    }
    pin_p->pages = npages;
    pin_p->epoch = __atomic_load_n(&g_pin_epoch, __ATOMIC_RELAXED);
    return 0;
}

void efasim_pin_release(const struct efasim_pin *pin)
{
    /* ib_umem_release; a registration the parent made before a fork is not the child's. */
    if (pin->epoch == __atomic_load_n(&g_pin_epoch, __ATOMIC_RELAXED))
        __atomic_sub_fetch(&g_pinned_vm, pin->pages, __ATOMIC_RELAXED);
}

/* ---- Page sizes of mappings --------------------------------------------------- */

/* One line of f into buf, the rest of a longer line dropped; false at the end. */
static bool line_read(FILE *f, char *buf, int size)
{
    size_t n;
    int c;

    if (!fgets(buf, size, f))
        return false;
    n = strlen(buf);
    if (n && buf[n - 1] != '\n')
        while ((c = getc(f)) != EOF && c != '\n')
            ;
    return true;
}

/*
 * Linux 6.11's PROCMAP_QUERY ioctl on /proc/self/maps (<linux/fs.h>), which
 * finds the mapping at an address without printing the others; defined here
 * for older headers.
 */
struct procmap_query_abi {
    uint64_t size, query_flags, query_addr; /* in */
    uint64_t vma_start, vma_end, vma_flags; /* out */
    uint32_t vma_page_size;                 /* out: KernelPageSize */
    uint64_t vma_offset, inode;
    uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
    uint64_t vma_name_addr, build_id_addr;
};
_Static_assert(sizeof(struct procmap_query_abi) == 104, "Linux's struct procmap_query");
#define PROCMAP_QUERY_IOCTL _IOWR('f', 17, struct procmap_query_abi)

/*
 * The smallest page size of the mappings over [addr, end) by PROCMAP_QUERY:
 * 4 KiB where part of it is not mapped; 0 when the kernel has no such ioctl
 * (before 6.11), and the text is read instead.
 */
static uint64_t range_query_page_size(int fd, uint64_t addr, uint64_t end)
{
    uint64_t cursor = addr, size = UINT64_MAX;

    while (cursor < end) {
        struct procmap_query_abi q = {.size = sizeof(q), .query_addr = cursor};

        if (ioctl(fd, PROCMAP_QUERY_IOCTL, &q))
            return errno == ENOENT ? PIN_PAGE_SIZE : 0; /* ENOENT: nothing mapped there */
        size = q.vma_page_size < size ? q.vma_page_size : size;
        if (size <= PIN_PAGE_SIZE || q.vma_end <= cursor)
            return PIN_PAGE_SIZE;
        cursor = q.vma_end;
    }
    return size;
}

/*
 * Whether files back every mapping over [addr, end) without a gap, from the
 * text of /proc/self/maps, which costs the kernel no page-table walk.
 * Anonymous memory (inode 0) is never hugetlb: the kernel gives every hugetlb
 * mapping a file, MAP_HUGETLB's being "/anon_hugepage" on its internal mount.
 */
static bool range_file_backed(FILE *maps, uint64_t addr, uint64_t end)
{
    uint64_t cursor = addr, lo, hi, inode;
    char line[256];

    while (cursor < end && line_read(maps, line, sizeof(line))) {
        if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %*s %*s %" SCNu64, &lo, &hi, &inode) != 3 ||
            hi <= cursor)
            continue;
        if (lo > cursor || !inode)
            break; /* a hole, or anonymous memory */
        cursor = hi;
    }
    return cursor >= end;
}

/*
 * The smallest KernelPageSize of the mappings over [addr, end), from
 * /proc/self/smaps, read only as far as the last of them: the kernel walks
 * the page tables of each mapping it prints there.
 */
static uint64_t range_kernel_page_size(uint64_t addr, uint64_t end)
{
    FILE *f = fopen("/proc/self/smaps", "re");
    uint64_t cursor = addr, size = UINT64_MAX, lo, hi = 0, kib;
    bool covering = false;
    char line[256], perms[8];

    if (!f)
        return PIN_PAGE_SIZE;
    while (cursor < end && line_read(f, line, sizeof(line))) {
        if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s", &lo, &hi, perms) == 3) {
            if (covering)
                size = PIN_PAGE_SIZE; /* the last one said nothing of its pages */
            covering = false;
            if (hi <= cursor)
                continue;
            if (lo > cursor)
                break; /* a hole */
            covering = true;
        } else if (covering && sscanf(line, "KernelPageSize: %" SCNu64 " kB", &kib) == 1) {
            size = kib * 1024 < size ? kib * 1024 : size;
            covering = false;
            cursor = hi;
        }
    }
    fclose(f);
    return cursor >= end && size != UINT64_MAX ? size : PIN_PAGE_SIZE;
}

/* The process's /proc/self/maps for PROCMAP_QUERY, opened on first use; -1 if it cannot be. */
static int maps_query_fd(void)
{
    int fd = __atomic_load_n(&g_maps_fd, __ATOMIC_ACQUIRE), expected = -1;

    if (fd >= 0)
        return fd;
    pthread_once(&g_pin_once, pin_init); /* its fork handler, before there is an fd to keep */
    fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (!__atomic_compare_exchange_n(&g_maps_fd, &expected, fd, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        close(fd); /* another thread's is in place */
        return expected;
    }
    return fd;
}

uint64_t efasim_page_size_at(uint64_t addr, uint64_t length)
{
    uint64_t end = addr + (length ? length : 1), size;
    int fd = end < addr ? -1 : maps_query_fd();
    bool file_backed;
    FILE *maps;

    if (fd < 0)
        return PIN_PAGE_SIZE;
    size = range_query_page_size(fd, addr, end);
    if (size)
        return size;
    /* Before Linux 6.11: the text, as far as the mappings over the range. */
    fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return PIN_PAGE_SIZE;
    maps = fdopen(fd, "r");
    if (!maps) {
        close(fd);
        return PIN_PAGE_SIZE;
    }
    file_backed = range_file_backed(maps, addr, end);
    fclose(maps);
    return file_backed ? range_kernel_page_size(addr, end) : PIN_PAGE_SIZE;
}

uint64_t efasim_device_pages(uint64_t addr, uint64_t length)
{
    return span_pages(addr, length, efasim_page_size_at(addr, length));
}
