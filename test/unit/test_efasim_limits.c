/*
 * What registering memory costs, as Linux and EFA's device count it
 * (efasim's README, "Registered memory"):
 *
 * - RLIMIT_MEMLOCK against the process's pinned pages (ib_umem_get): every
 *   registration adds the 4 KiB pages it spans, over every context and device
 *   of the process; beyond the limit ENOMEM, a limit of 0 EPERM; a forked child
 *   starts at 0. EFASIM_MEMLOCK=N plays a process without CAP_IPC_LOCK whose
 *   limit is N bytes, so that these run as root too.
 * - the device's registered pages (efa_register_mr), EFASIM_MAX_REG_PAGES over
 *   every context of every process on the device: 4 KiB pages, or whole huge
 *   pages for a buffer in hugetlb memory; at most 2^20 in one MR open to remote
 *   write (EFASIM_MAX_RW_MR_PAGES).
 * - the device's address handle numbers (max_ah), over every context of every
 *   process on the device, given back when a process dies.
 * - fork as libibverbs 44 prepares for it: ibv_fork_init before the first
 *   registration, then registered pages absent from forked children.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "efasim_common.h"

#define PAGE 4096u

/* A child's exit status when its read of a page faulted (its SIGSEGV handler). */
#define CHILD_SEGV 42

/* n fresh anonymous pages, page-aligned. */
static uint8_t *pages_map(size_t n)
{
    void *p = mmap(NULL, n * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    EXPECT_TRUE(p != MAP_FAILED);
    return p;
}

static struct ibv_mr *reg(struct efasim_dev *dev, void *addr, size_t len)
{
    struct ibv_mr *mr;

    errno = 0;
    mr = ibv_reg_mr(dev->pd, addr, len, IBV_ACCESS_LOCAL_WRITE);
    efarm_test_context("ibv_reg_mr(%p, %zu): errno %d (%s)", addr, len, errno, strerror(errno));
    EXPECT_TRUE(mr != NULL);
    return mr;
}

/* ibv_reg_mr of [addr, addr + len) must fail with errno want. */
static void reg_refused(struct efasim_dev *dev, void *addr, size_t len, int want)
{
    struct ibv_mr *mr;

    errno = 0;
    mr = ibv_reg_mr(dev->pd, addr, len, IBV_ACCESS_LOCAL_WRITE);
    efarm_test_context("ibv_reg_mr(%p, %zu) should be refused with errno %d (%s)", addr, len, want,
                       strerror(want));
    EXPECT_TRUE(mr == NULL);
    EXPECT_EQ(errno, want);
}

/*
 * RLIMIT_MEMLOCK of 64 KiB: 16 pinned pages. Sixteen pages register, the 17th
 * is refused with ENOMEM and fits once they are deregistered; a range counts
 * every page it touches, two bytes across a page boundary two.
 */
EFARM_TEST(efasim_limits_memlock)
{
    uint8_t *buf = pages_map(17);
    struct ibv_mr *mr16, *mr14, *across, *mr1;
    struct efasim_dev dev;

    efasim_setenv("EFASIM_MEMLOCK", "65536");
    efasim_dev_open(0, &dev);
    mr16 = reg(&dev, buf, 16 * PAGE);
    reg_refused(&dev, buf + 16 * PAGE, PAGE, ENOMEM);
    reg_refused(&dev, buf + 16 * PAGE, 1, ENOMEM);
    EXPECT_EQ(ibv_dereg_mr(mr16), 0);
    mr14 = reg(&dev, buf, 14 * PAGE);
    across = reg(&dev, buf + 15 * PAGE - 1, 2); /* pages 14 and 15: 16 in all */
    reg_refused(&dev, buf + 16 * PAGE, 1, ENOMEM);
    EXPECT_EQ(ibv_dereg_mr(across), 0);
    mr1 = reg(&dev, buf + 16 * PAGE, 1);               /* 15 */
    reg_refused(&dev, buf + 15 * PAGE - 1, 2, ENOMEM); /* two pages: one over */
    EXPECT_EQ(ibv_dereg_mr(mr1), 0);
    EXPECT_EQ(ibv_dereg_mr(mr14), 0);
    efasim_dev_close(&dev);
}

/* The count is the process's: two contexts of one device and a context of another share it. */
EFARM_TEST(efasim_limits_memlock_per_process)
{
    uint8_t *buf = pages_map(17);
    struct efasim_dev a, b, c;
    struct ibv_mr *ma, *mb, *mc;

    efasim_setenv("EFASIM_MEMLOCK", "65536");
    efasim_setenv("EFASIM_NDEV", "2");
    efasim_dev_open(0, &a);
    efasim_dev_open(0, &b);
    efasim_dev_open(1, &c);
    ma = reg(&a, buf, 8 * PAGE);
    mb = reg(&b, buf + 8 * PAGE, 4 * PAGE);
    mc = reg(&c, buf + 12 * PAGE, 4 * PAGE);
    reg_refused(&a, buf + 16 * PAGE, PAGE, ENOMEM);
    reg_refused(&b, buf + 16 * PAGE, PAGE, ENOMEM);
    reg_refused(&c, buf + 16 * PAGE, PAGE, ENOMEM);
    EXPECT_EQ(ibv_dereg_mr(mc), 0);
    EXPECT_EQ(ibv_dereg_mr(reg(&a, buf, 4 * PAGE)), 0); /* another context's pages freed */
    EXPECT_EQ(ibv_dereg_mr(mb), 0);
    efasim_dev_close(&b);
    mb = reg(&c, buf + 8 * PAGE, 8 * PAGE);
    reg_refused(&c, buf + 16 * PAGE, PAGE, ENOMEM);
    EXPECT_EQ(ibv_dereg_mr(mb), 0);
    EXPECT_EQ(ibv_dereg_mr(ma), 0);
    efasim_dev_close(&c);
    efasim_dev_close(&a);
}

/* A soft RLIMIT_MEMLOCK of 0 refuses any registration with EPERM (can_do_mlock). */
EFARM_TEST(efasim_limits_memlock_zero)
{
    uint8_t *buf = pages_map(1);
    struct efasim_dev dev;

    efasim_setenv("EFASIM_MEMLOCK", "0");
    efasim_dev_open(0, &dev);
    reg_refused(&dev, buf, PAGE, EPERM);
    reg_refused(&dev, buf, 1, EPERM);
    efasim_dev_close(&dev);
}

/*
 * A forked child's pinned pages start at 0 (dup_mm): with its parent holding
 * all 16 pages, the child, on a context of its own, registers 16 pages and not
 * a 17th.
 */
EFARM_TEST(efasim_limits_memlock_fork_child)
{
    uint8_t *buf = pages_map(17);
    struct ibv_mr *mr;
    struct efasim_dev dev;
    int status;
    pid_t child;

    if (TEST_TSAN)
        efarm_test_skip("the child opens a device, whose service thread TSan does not allow "
                        "in the child of a multithreaded process; the gcc and ASan runs have it");
    efasim_setenv("EFASIM_MEMLOCK", "65536");
    efasim_dev_open(0, &dev);
    mr = reg(&dev, buf, 16 * PAGE);
    reg_refused(&dev, buf + 16 * PAGE, PAGE, ENOMEM);
    fflush(NULL);
    child = fork();
    EXPECT_TRUE(child >= 0);
    if (!child) {
        struct efasim_dev cdev;
        struct ibv_mr *cmr;

        efasim_dev_open(0, &cdev);
        cmr = reg(&cdev, buf, 16 * PAGE);
        reg_refused(&cdev, buf + 16 * PAGE, PAGE, ENOMEM);
        EXPECT_EQ(ibv_dereg_mr(cmr), 0);
        cmr = reg(&cdev, buf + PAGE, 16 * PAGE);
        EXPECT_EQ(ibv_dereg_mr(cmr), 0);
        efasim_dev_close(&cdev);
        _exit(0);
    }
    EXPECT_EQ(waitpid(child, &status, 0), child);
    efarm_test_context("the child: status 0x%x", status);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* The child's registrations were its own: the parent's count is as it was. */
    reg_refused(&dev, buf + 16 * PAGE, PAGE, ENOMEM);
    EXPECT_EQ(ibv_dereg_mr(mr), 0);
    EXPECT_EQ(ibv_dereg_mr(reg(&dev, buf + PAGE, 16 * PAGE)), 0);
    efasim_dev_close(&dev);
}

/*
 * The device's registered pages: with EFASIM_MAX_REG_PAGES=16 the device holds
 * MRs over 16 pages, overlapping ones counted each, whichever context holds
 * them; the 17th page is refused with ENOMEM (the device's resource error) and
 * fits once others are deregistered.
 */
EFARM_TEST(efasim_limits_max_reg_pages)
{
    uint8_t *buf = pages_map(17);
    struct ibv_mr *mr8, *mr7, *mr1, *other;
    struct efasim_dev dev, dev2;

    efasim_setenv("EFASIM_MAX_REG_PAGES", "16");
    efasim_dev_open(0, &dev);
    efasim_dev_open(0, &dev2);
    mr8 = reg(&dev, buf, 8 * PAGE);
    mr7 = reg(&dev, buf + 4 * PAGE, 7 * PAGE);
    reg_refused(&dev, buf + 15 * PAGE - 1, 2, ENOMEM); /* two pages: one over */
    mr1 = reg(&dev, buf + 16 * PAGE, 1);
    reg_refused(&dev, buf, 1, ENOMEM);
    reg_refused(&dev2, buf, 1, ENOMEM); /* the device's budget, not the context's */
    EXPECT_EQ(ibv_dereg_mr(mr7), 0);
    other = reg(&dev2, buf + 8 * PAGE, 7 * PAGE);
    reg_refused(&dev, buf, 1, ENOMEM);
    EXPECT_EQ(ibv_dereg_mr(mr8), 0);
    EXPECT_EQ(ibv_dereg_mr(mr1), 0);
    mr8 = reg(&dev, buf, 9 * PAGE);
    reg_refused(&dev2, buf, 1, ENOMEM);
    EXPECT_EQ(ibv_dereg_mr(other), 0);
    efasim_dev_close(&dev2);
    EXPECT_EQ(ibv_dereg_mr(reg(&dev, buf + 9 * PAGE, 7 * PAGE)), 0);
    EXPECT_EQ(ibv_dereg_mr(mr8), 0);
    efasim_dev_close(&dev);
}

/*
 * One MR open to remote write takes at most EFASIM_MAX_RW_MR_PAGES device
 * pages (EFA: 2^20); beyond, ENOMEM. Without remote write the same MR fits.
 */
static void rw_mr_pages(uint8_t *buf, size_t pages)
{
    struct ibv_mr *mr;
    struct efasim_dev dev;

    efasim_dev_open(0, &dev);
    errno = 0;
    mr = ibv_reg_mr(dev.pd, buf, pages * PAGE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    efarm_test_context("%zu pages with remote write: errno %d", pages, errno);
    EXPECT_TRUE(mr != NULL);
    EXPECT_EQ(ibv_dereg_mr(mr), 0);
    errno = 0;
    mr =
        ibv_reg_mr(dev.pd, buf, pages * PAGE + 1, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    efarm_test_context("%zu pages and a byte with remote write: errno %d", pages, errno);
    EXPECT_TRUE(mr == NULL);
    EXPECT_EQ(errno, ENOMEM);
    mr = ibv_reg_mr(dev.pd, buf, pages * PAGE + 1, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
    efarm_test_context("%zu pages and a byte with remote read: errno %d", pages, errno);
    EXPECT_TRUE(mr != NULL);
    EXPECT_EQ(ibv_dereg_mr(mr), 0);
    efasim_dev_close(&dev);
}

EFARM_TEST(efasim_limits_rw_mr_pages)
{
    efasim_setenv("EFASIM_RDMA_WRITE", "1");
    efasim_setenv("EFASIM_MAX_RW_MR_PAGES", "16");
    rw_mr_pages(pages_map(17), 16);
}

/* EFA's own number: 4 GiB of 4 KiB pages, reserved address space, never touched. */
EFARM_TEST(efasim_limits_rw_mr_pages_default)
{
    size_t pages = (size_t)1 << 20;
    void *p = mmap(NULL, (pages + 1) * PAGE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

    EXPECT_TRUE(p != MAP_FAILED);
    efasim_setenv("EFASIM_RDMA_WRITE", "1");
    rw_mr_pages(p, pages);
    munmap(p, (pages + 1) * PAGE);
}

/* ---- What a device holds for every process on it ----------------------------------- */

/*
 * Run fn in a forked child that tells the parent (one byte on the pipe) when
 * it holds what it took, then waits for the parent's word before it exits
 * (without closing anything: the kernel gives back what a dead process held).
 */
struct proc_child {
    pid_t pid;
    int to_parent, to_child;
};

static void child_start(struct proc_child *c, void (*fn)(void))
{
    int up[2], down[2];

    EXPECT_EQ(pipe(up), 0);
    EXPECT_EQ(pipe(down), 0);
    fflush(NULL);
    c->pid = fork();
    EXPECT_TRUE(c->pid >= 0);
    if (!c->pid) {
        char b = 1;

        close(up[0]);
        close(down[1]);
        fn();
        if (write(up[1], &b, 1) != 1 || read(down[0], &b, 1) < 0)
            _exit(3);
        _exit(0);
    }
    close(up[1]);
    close(down[0]);
    c->to_parent = up[0];
    c->to_child = down[1];
}

/* The child holds what it took (or it failed: the test fails with its status). */
static void child_holds(struct proc_child *c)
{
    char b;
    int status;

    if (read(c->to_parent, &b, 1) != 1) {
        EXPECT_EQ(waitpid(c->pid, &status, 0), c->pid);
        efarm_test_context("the child: status 0x%x", status);
        EXPECT_TRUE(false);
    }
}

static void child_end(struct proc_child *c)
{
    char b = 1;
    int status;

    EXPECT_EQ(write(c->to_child, &b, 1), 1);
    EXPECT_EQ(waitpid(c->pid, &status, 0), c->pid);
    efarm_test_context("the child: status 0x%x", status);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(c->to_parent);
    close(c->to_child);
}

static void procs_skip_tsan(void)
{
    if (TEST_TSAN)
        efarm_test_skip("the child opens a device, whose service thread TSan does not allow "
                        "in the child of a multithreaded process; the gcc and ASan runs have it");
}

static uint8_t *g_proc_buf;

/* The child: 4 pages of the 16, and not a 5th. */
static void child_reg_pages(void)
{
    struct efasim_dev dev;

    efasim_dev_open(0, &dev);
    (void)reg(&dev, g_proc_buf + 12 * PAGE, 4 * PAGE);
    reg_refused(&dev, g_proc_buf, PAGE, ENOMEM);
}

/*
 * The device's page budget is shared by every process on it: with the parent
 * holding 12 of 16 pages a child gets 4, then the parent none; once the child
 * exited (holding its MR) its pages are the device's again.
 */
EFARM_TEST(efasim_limits_reg_pages_processes)
{
    struct proc_child c;
    struct efasim_dev dev;
    struct ibv_mr *mr12, *mr4;

    procs_skip_tsan();
    g_proc_buf = pages_map(16);
    efasim_setenv("EFASIM_MAX_REG_PAGES", "16");
    efasim_dev_open(0, &dev);
    mr12 = reg(&dev, g_proc_buf, 12 * PAGE);
    child_start(&c, child_reg_pages);
    child_holds(&c);
    reg_refused(&dev, g_proc_buf, PAGE, ENOMEM);
    child_end(&c);
    mr4 = reg(&dev, g_proc_buf + 12 * PAGE, 4 * PAGE);
    reg_refused(&dev, g_proc_buf, PAGE, ENOMEM);
    EXPECT_EQ(ibv_dereg_mr(mr4), 0);
    EXPECT_EQ(ibv_dereg_mr(mr12), 0);
    efasim_dev_close(&dev);
}

static union ibv_gid g_gid[3];

/* The child, on device 0: a number for device 1's GID (its own PD: its own number), not for 2's. */
static void child_ahs(void)
{
    struct efasim_dev dev;
    struct ibv_ah_attr attr = {.port_num = 1, .is_global = 1, .grh = {.dgid = g_gid[2]}};

    efasim_dev_open(0, &dev);
    (void)efasim_ah_create(&dev, &g_gid[1]);
    errno = 0;
    EXPECT_TRUE(ibv_create_ah(dev.pd, &attr) == NULL);
    EXPECT_EQ(errno, ENOMEM);
}

/*
 * The device's AH table (max_ah 2) is shared by every context and process on
 * it: with the parent holding one number, a second context takes the other
 * and a third is refused with ENOMEM; then a child process gets one number
 * and not two; once it exited (holding its AH), its number is free again.
 */
EFARM_TEST(efasim_limits_max_ah)
{
    struct ibv_ah_attr attr = {.port_num = 1, .is_global = 1};
    struct efasim_dev dev, dev2, peer1, peer2;
    struct ibv_ah *a1, *a1b, *a2;
    struct proc_child c;

    procs_skip_tsan();
    efasim_setenv("EFASIM_NDEV", "3");
    efasim_setenv("EFASIM_MAX_AH", "2");
    efasim_dev_open(0, &dev);
    efasim_dev_open(0, &dev2);
    efasim_dev_open(1, &peer1);
    efasim_dev_open(2, &peer2);
    g_gid[1] = peer1.gid;
    g_gid[2] = peer2.gid;
    a1 = efasim_ah_create(&dev, &g_gid[1]);
    a1b = efasim_ah_create(&dev, &g_gid[1]); /* the same (PD, GID): the same number */
    a2 = efasim_ah_create(&dev2, &g_gid[2]);
    attr.grh.dgid = g_gid[1];
    errno = 0;
    EXPECT_TRUE(ibv_create_ah(dev2.pd, &attr) == NULL); /* another PD: a third number */
    EXPECT_EQ(errno, ENOMEM);
    EXPECT_EQ(ibv_destroy_ah(a2), 0);
    EXPECT_EQ(ibv_destroy_ah(a1b), 0);

    /* One number held here, one free: the child takes it, and not a second. */
    child_start(&c, child_ahs);
    child_holds(&c);
    attr.grh.dgid = g_gid[2];
    errno = 0;
    EXPECT_TRUE(ibv_create_ah(dev2.pd, &attr) == NULL);
    EXPECT_EQ(errno, ENOMEM);
    child_end(&c);
    a2 = efasim_ah_create(&dev2, &g_gid[2]);
    EXPECT_EQ(ibv_destroy_ah(a2), 0);
    EXPECT_EQ(ibv_destroy_ah(a1), 0);
    efasim_dev_close(&peer2);
    efasim_dev_close(&peer1);
    efasim_dev_close(&dev2);
    efasim_dev_close(&dev);
}

/* ---- Huge pages ---------------------------------------------------------------- */

/* A number of /proc/meminfo ("Hugepagesize:" in kB, "HugePages_Free:"), or -1. */
static long meminfo(const char *key)
{
    FILE *f = fopen("/proc/meminfo", "re");
    char line[128];
    long v = -1;

    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, key, strlen(key)))
            v = strtol(line + strlen(key), NULL, 10);
    if (f)
        fclose(f);
    return v;
}

#define NR_HUGEPAGES "/proc/sys/vm/nr_hugepages"

static long nr_hugepages_read(void)
{
    FILE *f = fopen(NR_HUGEPAGES, "re");
    long v = -1;

    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

static bool nr_hugepages_write(long v)
{
    FILE *f = fopen(NR_HUGEPAGES, "we");
    bool ok;

    if (!f)
        return false;
    ok = fprintf(f, "%ld\n", v) > 0;
    return fclose(f) == 0 && ok;
}

/* Two huge pages of hugetlb memory, mapped with MAP_HUGETLB. */
static uint8_t *huge_map(size_t huge)
{
    void *p = mmap(NULL, 2 * huge, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);

    efarm_test_context("mmap(MAP_HUGETLB) of 2 huge pages of %zu bytes", huge);
    EXPECT_TRUE(p != MAP_FAILED);
    return p;
}

/*
 * The device is given a hugetlb buffer as huge pages, anything else as 4 KiB
 * pages: with n = the 4 KiB pages of two huge pages and a budget of n - 1, a
 * normal buffer of two huge pages' size is refused, the hugetlb one takes 2,
 * a piece across its two huge pages 2, one within a huge page 1.
 */
static void huge_device_pages(size_t huge)
{
    size_t n = 2 * huge / PAGE;
    uint8_t *normal = pages_map(n), *hb;
    struct ibv_mr *whole, *across, *within, *rest;
    struct efasim_dev dev;
    char budget[32];

    snprintf(budget, sizeof(budget), "%zu", n - 1);
    efasim_setenv("EFASIM_MAX_REG_PAGES", budget);
    efasim_dev_open(0, &dev);
    reg_refused(&dev, normal, n * PAGE, ENOMEM);
    hb = huge_map(huge);
    memset(hb, 1, 2 * huge);
    whole = reg(&dev, hb, 2 * huge);                /* 2 */
    across = reg(&dev, hb + huge - PAGE, 2 * PAGE); /* 2: one page of each huge page */
    rest = reg(&dev, normal, (n - 1 - 4) * PAGE);   /* n - 1 in all */
    reg_refused(&dev, normal + (n - 1) * PAGE, 1, ENOMEM);
    reg_refused(&dev, hb, 1, ENOMEM);
    EXPECT_EQ(ibv_dereg_mr(across), 0);               /* n - 3 */
    within = reg(&dev, hb + PAGE, 8 * PAGE);          /* n - 2: within one huge page */
    EXPECT_EQ(ibv_dereg_mr(reg(&dev, normal, 1)), 0); /* n - 1 */
    reg_refused(&dev, normal, PAGE + 1, ENOMEM);      /* two 4 KiB pages */
    EXPECT_EQ(ibv_dereg_mr(within), 0);
    EXPECT_EQ(ibv_dereg_mr(rest), 0);
    EXPECT_EQ(ibv_dereg_mr(whole), 0);
    efasim_dev_close(&dev);
}

/* The process's pinned pages count a hugetlb buffer in 4 KiB pages all the same. */
static void huge_pinned_pages(size_t huge)
{
    uint8_t *normal = pages_map(1), *hb;
    struct ibv_mr *whole;
    struct efasim_dev dev;
    char limit[32];

    snprintf(limit, sizeof(limit), "%zu", 2 * huge);
    efasim_setenv("EFASIM_MEMLOCK", limit);
    efasim_dev_open(0, &dev);
    hb = huge_map(huge);
    whole = reg(&dev, hb, 2 * huge);
    reg_refused(&dev, normal, 1, ENOMEM);
    EXPECT_EQ(ibv_dereg_mr(whole), 0);
    EXPECT_EQ(ibv_dereg_mr(reg(&dev, normal, 1)), 0);
    efasim_dev_close(&dev);
}

/* fn(huge) in a child of its own (it sets its knobs); its wait status. */
static int huge_child(void (*fn)(size_t huge), size_t huge)
{
    int status = -1;
    pid_t pid;

    fflush(NULL);
    pid = fork();
    if (!pid) {
        fn(huge);
        exit(0);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return status;
}

/*
 * Needs two free huge pages: when they are missing, this raises
 * vm.nr_hugepages (as root) by what is missing and puts it back after (if
 * nothing else changed it meanwhile); where it cannot, it is skipped. The
 * checks run in children, so that the setting is restored whatever they find.
 */
EFARM_TEST(efasim_limits_hugetlb)
{
    long huge_kib = meminfo("Hugepagesize:"), free_pages = meminfo("HugePages_Free:");
    long before = nr_hugepages_read(), raised_to = -1;
    int device_status, pinned_status;
    size_t huge;

    if (huge_kib <= 4 || huge_kib > 64 * 1024 || free_pages < 0 || before < 0)
        efarm_test_skip("no hugetlb pages of 8 KiB to 64 MiB here (Hugepagesize %ld kB)", huge_kib);
    huge = (size_t)huge_kib * 1024;
    if (free_pages < 2) {
        raised_to = before + 2 - free_pages;
        if (!nr_hugepages_write(raised_to))
            efarm_test_skip("no 2 free huge pages, and %s cannot be raised (not root?)",
                            NR_HUGEPAGES);
        if (meminfo("HugePages_Free:") < 2) {
            nr_hugepages_write(before);
            efarm_test_skip("%s raised, but the kernel found no 2 huge pages", NR_HUGEPAGES);
        }
    }
    device_status = huge_child(huge_device_pages, huge);
    pinned_status = huge_child(huge_pinned_pages, huge);
    /* Put back, unless another program (test/mpi's runs reserve 64) set it meanwhile. */
    if (raised_to >= 0 && nr_hugepages_read() == raised_to && !nr_hugepages_write(before))
        efarm_test_fail(__FILE__, __LINE__, "could not put %s back to %ld", NR_HUGEPAGES, before);
    efarm_test_context("the device's pages: child status 0x%x", device_status);
    EXPECT_TRUE(WIFEXITED(device_status) && WEXITSTATUS(device_status) == 0);
    efarm_test_context("the pinned pages: child status 0x%x", pinned_status);
    EXPECT_TRUE(WIFEXITED(pinned_status) && WEXITSTATUS(pinned_status) == 0);
}

/* ---- fork ------------------------------------------------------------------------- */

static void segv_exit(int sig)
{
    (void)sig;
    _exit(CHILD_SEGV);
}

/* A forked child reads *p: 0 if it read want, 1 if something else, CHILD_SEGV if it faulted. */
static int child_read(const volatile uint8_t *p, uint8_t want)
{
    int status;
    pid_t pid;

    fflush(NULL);
    pid = fork();
    EXPECT_TRUE(pid >= 0);
    if (!pid) {
        struct sigaction sa = {.sa_handler = segv_exit};

        sigaction(SIGSEGV, &sa, NULL);
        _exit(*p == want ? 0 : 1);
    }
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
        return CHILD_SEGV;
    efarm_test_context("a child reading %p: status 0x%x", (const void *)p, status);
    EXPECT_TRUE(WIFEXITED(status));
    return WEXITSTATUS(status);
}

/*
 * On a kernel that copies pinned pages at fork (efasim's default, EFA's
 * kernels), fork needs no preparation: ibv_is_fork_initialized says so, and a
 * child reads its copy of registered memory. rdma-core 44 learns this from
 * the kernel over RDMA netlink, which the kernel front end refuses.
 */
EFARM_TEST(efasim_limits_fork_unneeded)
{
    uint8_t *buf = pages_map(1);
    struct efasim_dev dev;
    struct ibv_mr *mr;

    efasim_dev_open(0, &dev); /* the kernel front end: rdma-core asks efasim's RDMA netlink */
    EXPECT_EQ(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
    buf[0] = 5;
    mr = reg(&dev, buf, PAGE);
    EXPECT_EQ(child_read(buf, 5), 0);
    /*
     * Too late, an MR came first: EINVAL in 44; from v51 ibv_fork_init answers 0
     * before that check when fork needs no preparation.
     */
    EXPECT_EQ(ibv_fork_init(), efasim_rdma_core_release() >= 51 ? 0 : EINVAL);
    EXPECT_EQ(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
    EXPECT_EQ(ibv_dereg_mr(mr), 0);
    efasim_dev_close(&dev);
}

/* ibv_fork_init after a registration is EINVAL (libibverbs 44's too_late), and stays so. */
EFARM_TEST(efasim_limits_fork_init_too_late)
{
    uint8_t *buf = pages_map(1);
    struct efasim_dev dev;
    struct ibv_mr *mr;

    efasim_setenv("EFASIM_COPY_ON_FORK", "0");
    efasim_dev_open(0, &dev);
    EXPECT_EQ(ibv_is_fork_initialized(), IBV_FORK_DISABLED);
    mr = reg(&dev, buf, PAGE);
    EXPECT_EQ(ibv_fork_init(), EINVAL);
    EXPECT_EQ(ibv_dereg_mr(mr), 0);
    EXPECT_EQ(ibv_fork_init(), EINVAL);
    EXPECT_EQ(ibv_is_fork_initialized(), IBV_FORK_DISABLED);
    buf[0] = 3;
    EXPECT_EQ(child_read(buf, 3), 0);
    efasim_dev_close(&dev);
}

/*
 * After ibv_fork_init, registered pages are absent from forked children
 * (MADV_DONTFORK over each MR's pages) until the last MR over them is
 * deregistered; unregistered pages are copied as ever.
 */
EFARM_TEST(efasim_limits_fork_init_dontfork)
{
    uint8_t *buf = pages_map(5);
    struct ibv_mr *mr01, *mr12, *mr3;
    struct efasim_dev dev;

    efasim_setenv("EFASIM_COPY_ON_FORK", "0");
    memset(buf, 7, 5 * PAGE);
    EXPECT_EQ(ibv_fork_init(), 0);
    EXPECT_EQ(ibv_fork_init(), 0);
    EXPECT_EQ(ibv_is_fork_initialized(), IBV_FORK_ENABLED);
    efasim_dev_open(0, &dev);
    mr01 = reg(&dev, buf, 2 * PAGE);
    mr12 = reg(&dev, buf + PAGE, 2 * PAGE);
    mr3 = reg(&dev, buf + 3 * PAGE + 100, 10); /* the whole page */
    for (unsigned i = 0; i < 4; i++) {
        efarm_test_context("page %u, every MR registered", i);
        EXPECT_EQ(child_read(buf + i * PAGE, 7), CHILD_SEGV);
    }
    EXPECT_EQ(child_read(buf + 4 * PAGE, 7), 0);
    EXPECT_EQ(ibv_dereg_mr(mr01), 0);
    EXPECT_EQ(child_read(buf, 7), 0);
    EXPECT_EQ(child_read(buf + PAGE, 7), CHILD_SEGV); /* still under mr12 */
    EXPECT_EQ(child_read(buf + 2 * PAGE, 7), CHILD_SEGV);
    EXPECT_EQ(ibv_dereg_mr(mr12), 0);
    EXPECT_EQ(ibv_dereg_mr(mr3), 0);
    for (unsigned i = 0; i < 5; i++) {
        efarm_test_context("page %u, every MR deregistered", i);
        EXPECT_EQ(child_read(buf + i * PAGE, 7), 0);
    }
    efasim_dev_close(&dev);
}

/* RDMAV_FORK_SAFE calls ibv_fork_init at the first ibv_get_device_list (ibverbs_init). */
EFARM_TEST(efasim_limits_fork_safe_env)
{
    uint8_t *buf = pages_map(1);
    struct efasim_dev dev;
    struct ibv_mr *mr;

    efasim_setenv("EFASIM_COPY_ON_FORK", "0");
    efasim_setenv("RDMAV_FORK_SAFE", "1");
    efasim_dev_open(0, &dev);
    EXPECT_EQ(ibv_is_fork_initialized(), IBV_FORK_ENABLED);
    mr = reg(&dev, buf, PAGE);
    EXPECT_EQ(child_read(buf, 0), CHILD_SEGV);
    EXPECT_EQ(ibv_dereg_mr(mr), 0);
    efasim_dev_close(&dev);
}

/* IBV_FORK_SAFE=0 is off (libibverbs 44's check_env). */
EFARM_TEST(efasim_limits_fork_safe_env_zero)
{
    struct efasim_dev dev;

    efasim_setenv("EFASIM_COPY_ON_FORK", "0");
    efasim_setenv("IBV_FORK_SAFE", "0");
    efasim_dev_open(0, &dev);
    EXPECT_EQ(ibv_is_fork_initialized(), IBV_FORK_DISABLED);
    efasim_dev_close(&dev);
}
