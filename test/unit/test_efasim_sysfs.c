/*
 * efasim's sysfs view: where it lives (SYSFS_PATH as rdma-core and libfabric
 * honour it, never the kernel's /sys, else a per-user directory) and what it
 * holds, read the way libfabric's EFA provider and rdma-core's tools read it.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "efasim_common.h"

/* Declared by rdma-core's private headers only; exported at IBVERBS_1.0. */
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* rm -r of a directory this test made. */
static void temp_dir_remove(const char *dir)
{
    nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh directory for this test under TMPDIR; the test removes it. */
static void temp_dir(char *buf, size_t size)
{
    const char *tmp = getenv("TMPDIR");

    snprintf(buf, size, "%s/efasim-sysfs-test.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(buf))
        efarm_test_fail(__FILE__, __LINE__, "mkdtemp(%s): %s", buf, strerror(errno));
}

static void expect_file(const char *dir, const char *file, const char *want)
{
    char buf[256];
    int n = ibv_read_sysfs_file(dir, file, buf, sizeof(buf));

    if (n < 0)
        efarm_test_fail(__FILE__, __LINE__, "ibv_read_sysfs_file(%s, %s): %s", dir, file,
                        strerror(errno));
    if (strcmp(buf, want))
        efarm_test_fail(__FILE__, __LINE__, "%s/%s holds \"%s\", expected \"%s\"", dir, file, buf,
                        want);
}

/* The last component of the path link resolves to. */
static const char *resolved_name(const char *link, char *buf)
{
    const char *slash;

    if (!realpath(link, buf))
        efarm_test_fail(__FILE__, __LINE__, "realpath(%s): %s", link, strerror(errno));
    slash = strrchr(buf, '/');
    EXPECT_TRUE(slash != NULL);
    return slash + 1;
}

/* The tree under root as libfabric 1.17's efa_device.c and rdma-core's tools read it. */
static void check_tree(const char *root, int ndev)
{
    struct ibv_device **list;
    char path[PATH_MAX], real[PATH_MAX], pci[64];
    int n = 0;

    list = ibv_get_device_list(&n);
    EXPECT_TRUE(list != NULL);
    EXPECT_EQ(n, ndev);
    if (strcmp(ibv_get_sysfs_path(), root))
        efarm_test_fail(__FILE__, __LINE__, "ibv_get_sysfs_path() is %s, expected %s",
                        ibv_get_sysfs_path(), root);
    expect_file(root, "class/infiniband_verbs/abi_version", "6");
    for (int i = 0; i < n; i++) {
        struct ibv_device *d = list[i];
        unsigned short dom;
        unsigned char bus, dev, fn;

        efarm_test_context("device %s", ibv_get_device_name(d));
        snprintf(path, sizeof(path), "%s/class/infiniband/%s", root, ibv_get_device_name(d));
        EXPECT_TRUE(!strcmp(d->ibdev_path, path));
        snprintf(path, sizeof(path), "%s/class/infiniband_verbs/%s", root, d->dev_name);
        EXPECT_TRUE(!strcmp(d->dev_path, path));
        expect_file(d->dev_path, "ibdev", ibv_get_device_name(d));
        expect_file(d->dev_path, "abi_version", "1");
        expect_file(d->ibdev_path, "ports/1/state", "4: ACTIVE");
        expect_file(d->ibdev_path, "ports/1/link_layer", "Unknown");

        /* efa_device_get_pci_attr: realpath(<ibdev_path>/device), a PCI address. */
        snprintf(path, sizeof(path), "%s/device", d->ibdev_path);
        EXPECT_EQ(sscanf(resolved_name(path, real), "%hx:%hhx:%hhx.%hhx", &dom, &bus, &dev, &fn),
                  4);
        expect_file(path, "vendor", "0x1d0f");
        /* efa_device_get_driver: realpath(<ibdev_path>/device/driver), the driver's name. */
        snprintf(path, sizeof(path), "%s/device/driver", d->ibdev_path);
        EXPECT_TRUE(!strcmp(resolved_name(path, real), "efa"));
        /* The uverbs entry points at the same PCI function. */
        snprintf(path, sizeof(path), "%s/device", d->ibdev_path);
        snprintf(pci, sizeof(pci), "%s", resolved_name(path, real));
        snprintf(path, sizeof(path), "%s/device", d->dev_path);
        EXPECT_TRUE(!strcmp(resolved_name(path, real), pci));
    }
    ibv_free_device_list(list);
}

EFARM_TEST(efasim_sysfs_at_sysfs_path)
{
    char root[PATH_MAX];

    temp_dir(root, sizeof(root));
    efasim_setenv("SYSFS_PATH", root);
    efasim_setenv("EFASIM_NDEV", "2");
    check_tree(root, 2);
    temp_dir_remove(root);
}

EFARM_TEST(efasim_sysfs_path_trailing_slashes)
{
    char root[PATH_MAX], with[PATH_MAX + 2];

    temp_dir(root, sizeof(root));
    snprintf(with, sizeof(with), "%s//", root);
    efasim_setenv("SYSFS_PATH", with);
    check_tree(root, 1); /* stripped, as rdma-core and libfabric strip them */
    temp_dir_remove(root);
}

EFARM_TEST(efasim_sysfs_default_per_user)
{
    char xdg[PATH_MAX], root[PATH_MAX + 32];

    efasim_drop_in_only("where the drop-in's ibv_get_sysfs_path() points; the system's "
                        "libibverbs takes SYSFS_PATH as given");
    temp_dir(xdg, sizeof(xdg));
    unsetenv("SYSFS_PATH");
    efasim_setenv("XDG_RUNTIME_DIR", xdg);
    snprintf(root, sizeof(root), "%s/efasim-sysfs", xdg);
    check_tree(root, 1);
    temp_dir_remove(xdg);
}

/* SYSFS_PATH=/sys (the kernel's): efasim neither reports nor writes it. */
EFARM_TEST(efasim_sysfs_never_the_kernels)
{
    static const char *const kernel[] = {"/sys", "/sys/", "/sys/class/..", "/proc", "/"};
    char xdg[PATH_MAX], root[PATH_MAX + 32];
    struct stat st;

    efasim_drop_in_only("where the drop-in's ibv_get_sysfs_path() points; the system's "
                        "libibverbs takes SYSFS_PATH as given");
    temp_dir(xdg, sizeof(xdg));
    efasim_setenv("XDG_RUNTIME_DIR", xdg);
    snprintf(root, sizeof(root), "%s/efasim-sysfs", xdg);
    for (unsigned i = 0; i < sizeof(kernel) / sizeof(kernel[0]); i++) {
        pid_t pid;
        int status;

        efarm_test_context("SYSFS_PATH=%s", kernel[i]);
        fflush(NULL);
        pid = fork(); /* efasim reads SYSFS_PATH once per process */
        EXPECT_TRUE(pid >= 0);
        if (!pid) {
            efasim_setenv("SYSFS_PATH", kernel[i]);
            check_tree(root, 1);
            fflush(NULL);
            _exit(0);
        }
        EXPECT_EQ(waitpid(pid, &status, 0), pid);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    /* Nothing of efasim's appeared in the real sysfs. */
    EXPECT_TRUE(stat("/sys/class/infiniband/efasim_0", &st) != 0);
    temp_dir_remove(xdg);
}
