/*
 * The kernel front end under a program that patches the C library's mmap and
 * munmap, as libfabric's memory monitor ("memhooks", its default, which MPICH's
 * ch4:ofi starts) does: it overwrites the first bytes of the functions its
 * dlsym() finds with a jump to its own, which make the system calls directly.
 * In a process with the front end preloaded those are the front end's, so
 * rdma-core's queue mappings of a uverbs descriptor reached the kernel (EBADF)
 * and ibv_create_cq failed under MPICH. The patch here is written the same
 * way (movabs %r11; jmp *%r11 over the entry), before the device is opened
 * and after it; rdma-core's mappings must still be the device's.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "efarm_errno.h"
#include "efasim_common.h"

#if defined(__x86_64__)

#define PATCH_LEN 13

struct patch {
    uint8_t *at;
    uint8_t saved[PATCH_LEN];
};

static unsigned g_hook_escaped;

static void *hook_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    long ret = syscall(SYS_mmap, addr, len, prot, flags, fd, off);

    if (ret == -EBADF || (ret == -1 && errno == EBADF))
        g_hook_escaped++; /* a uverbs descriptor reached the kernel */
    return (void *)ret;
}

static int hook_munmap(void *addr, size_t len)
{
    return (int)syscall(SYS_munmap, addr, len);
}

/*
 * The monitor's way: the function its dlsym() finds, overwritten at its entry.
 * Under MPICH that is the front end's own; in this program the test's
 * allocation watch (efasim_alloc_watch.c) comes first and passes each call on
 * to it, so the front end's is taken from the front end itself.
 */
static void patch(struct patch *p, const char *name, void *hook)
{
    uint8_t code[PATCH_LEN] = {0x49, 0xbb}; /* movabs $hook, %r11 */
    uintptr_t page, ps = (uintptr_t)sysconf(_SC_PAGESIZE);
    const char *preload = getenv("LD_PRELOAD");
    char path[4096];
    void *lib;

    EXPECT_TRUE(preload && strstr(preload, "libefasim-kernel"));
    snprintf(path, sizeof(path), "%s", preload);
    path[strcspn(path, ": ")] = '\0'; /* the first preloaded library: efasim-info's */
    lib = dlopen(path, RTLD_NOLOAD | RTLD_NOW);
    if (!lib)
        efarm_test_fail(__FILE__, __LINE__, "%s is not loaded: %s", path, dlerror());
    p->at = dlsym(lib, name);
    EXPECT_TRUE(p->at != NULL);
    memcpy(code + 2, &hook, sizeof(hook));
    code[10] = 0x41; /* jmp *%r11 */
    code[11] = 0xff;
    code[12] = 0xe3;
    page = (uintptr_t)p->at & ~(ps - 1);
    EXPECT_RET(mprotect((void *)page, 2 * ps, PROT_READ | PROT_WRITE | PROT_EXEC), 0);
    memcpy(p->saved, p->at, PATCH_LEN);
    memcpy(p->at, code, PATCH_LEN);
    __builtin___clear_cache((char *)p->at, (char *)p->at + PATCH_LEN);
}

static void unpatch(struct patch *p)
{
    memcpy(p->at, p->saved, PATCH_LEN);
    __builtin___clear_cache((char *)p->at, (char *)p->at + PATCH_LEN);
}

static void patch_both(struct patch ps[2])
{
    patch(&ps[0], "mmap", (void *)hook_mmap);
    patch(&ps[1], "munmap", (void *)hook_munmap);
}

static void unpatch_both(struct patch ps[2])
{
    unpatch(&ps[1]);
    unpatch(&ps[0]);
}

/* A CQ and a QP made and destroyed, then traffic: every queue mapping is the device's. */
static void queues_and_traffic(struct efasim_dev *dev)
{
    struct ibv_cq_ex *cq = efasim_cq_create(dev, 64);
    struct ibv_qp *qp = efasim_qp_create_raw(dev, cq);
    struct efasim_pair p;

    EXPECT_TRUE(qp != NULL);
    EXPECT_RET(ibv_destroy_qp(qp), 0);
    EXPECT_RET(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
    efasim_pair_open(&p, NULL, NULL);
    for (size_t len = 0; len <= 4096; len += 1024)
        efasim_pair_roundtrip(&p, len, EFASIM_API_WR);
    efasim_pair_close(&p);
}

/* The monitor starts after rdma-core opened the device (MPICH: at its domain's opening). */
EFARM_TEST(efasim_kernel_mmap_patched_after_open)
{
    struct efasim_dev dev;
    struct patch ps[2];

    if (!efasim_kernel_front_end())
        efarm_test_skip("the drop-in has no uverbs descriptors to map");
    efasim_dev_open(0, &dev);
    patch_both(ps);
    queues_and_traffic(&dev);
    efasim_dev_close(&dev);
    EXPECT_EQ(g_hook_escaped, 0);
    unpatch_both(ps);
}

/* The monitor starts before any device is opened. */
EFARM_TEST(efasim_kernel_mmap_patched_before_open)
{
    struct efasim_dev dev;
    struct patch ps[2];

    if (!efasim_kernel_front_end())
        efarm_test_skip("the drop-in has no uverbs descriptors to map");
    patch_both(ps);
    efasim_dev_open(0, &dev);
    queues_and_traffic(&dev);
    efasim_dev_close(&dev);
    EXPECT_EQ(g_hook_escaped, 0);
    unpatch_both(ps);
}

#endif
