/*
 * efasim's sysfs view: the part of /sys that rdma-core and libfabric read
 * about an EFA device, written to a directory of efasim's own, never to the
 * real /sys.
 *
 * Where: rdma-core's ibv_get_sysfs_path() and libfabric's EFA provider both
 * take sysfs from $SYSFS_PATH (when the process is not setuid) and default to
 * /sys. efasim does the same with one difference: without SYSFS_PATH, or when
 * SYSFS_PATH names the real sysfs (or procfs), it uses a per-user directory,
 * $XDG_RUNTIME_DIR/efasim-sysfs or else /tmp/efasim-sysfs-<uid>. So a program
 * that reads sysfs on its own (libfabric) must be run with SYSFS_PATH set to
 * that tree; `efasim-info --env` prints the line to use.
 *
 * What (EFA's kernel driver and uverbs lay it out so):
 *   class/infiniband_verbs/abi_version             uverbs ABI, 6
 *   class/infiniband_verbs/uverbs<i>/ibdev         efasim_<i>
 *   class/infiniband_verbs/uverbs<i>/abi_version   EFA's uverbs ABI, 1
 *   class/infiniband_verbs/uverbs<i>/device  ->    the PCI function below
 *   class/infiniband/efasim_<i>/node_guid, sys_image_guid, fw_ver, node_type
 *   class/infiniband/efasim_<i>/ports/1/state, phys_state, link_layer, lid, ...
 *   class/infiniband/efasim_<i>/device       ->    devices/pci0000:00/0000:<bus>:00.0
 *   devices/pci0000:00/0000:<bus>:00.0/vendor, device, numa_node
 *   devices/pci0000:00/0000:<bus>:00.0/driver ->   bus/pci/drivers/efa
 * libfabric realpath()s <ibdev_path>/device (PCI address) and .../device/driver
 * (driver name) and reads class/infiniband_verbs/abi_version.
 *
 * Every process writes the same files (only the number of devices depends on
 * EFASIM_NDEV), each by rename of a private temporary file, so processes that
 * start together never see a half-written file. Directories are checked to be
 * real directories owned by the user, so nothing is written through a link.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "efasim_model.h"

#define SYSFS_MAGIC_NUMBER 0x62656572u /* sysfs */
#define PROC_MAGIC_NUMBER  0x9fa0u     /* procfs */

static char g_root[IBV_SYSFS_PATH_MAX];
static bool g_root_ok; /* the tree could be written */
static pthread_once_t g_root_once = PTHREAD_ONCE_INIT;

static bool path_under(const char *path, const char *dir)
{
    size_t n = strlen(dir);

    return !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/');
}

/* True if path (existing or not) lies in the kernel's sysfs or procfs, or is "/". */
static bool is_kernel_fs(const char *path)
{
    char resolved[PATH_MAX], probe[PATH_MAX];
    struct statfs fs;

    /* The nearest existing ancestor tells which file system a new directory would be on. */
    snprintf(probe, sizeof(probe), "%s", path);
    while (statfs(probe, &fs)) {
        char *slash = strrchr(probe, '/');

        if (!slash || slash == probe) {
            snprintf(probe, sizeof(probe), "/");
            if (statfs(probe, &fs))
                return true; /* cannot tell: refuse */
            break;
        }
        *slash = '\0';
    }
    if ((unsigned)fs.f_type == SYSFS_MAGIC_NUMBER || (unsigned)fs.f_type == PROC_MAGIC_NUMBER)
        return true;
    /* The file system's root is no place for a sysfs copy either. */
    return !realpath(probe, resolved) || !strcmp(resolved, "/") || path_under(resolved, "/sys") ||
           path_under(resolved, "/proc");
}

static void root_choose(void)
{
    const char *env = getuid() == geteuid() ? getenv("SYSFS_PATH") : NULL;
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    size_t len;

    if (env && *env) {
        snprintf(g_root, sizeof(g_root), "%s", env);
        len = strlen(g_root);
        while (len > 1 && g_root[len - 1] == '/')
            g_root[--len] = '\0';
        /* Room for class/infiniband/<name> below it in struct ibv_device's paths. */
        if (len + 64 > IBV_SYSFS_PATH_MAX) {
            fprintf(stderr, "efasim: SYSFS_PATH=%s is too long (%zu bytes, at most %d); ignored\n",
                    env, len, IBV_SYSFS_PATH_MAX - 64);
        } else if (!is_kernel_fs(g_root)) {
            return;
        } else {
            fprintf(
                stderr,
                "efasim: SYSFS_PATH=%s is the kernel's sysfs (or /); efasim never writes there and "
                "uses its own tree instead (programs that read SYSFS_PATH themselves, such as "
                "libfabric, will not find efasim's devices: see efasim-info --env)\n",
                env);
        }
    }
    if (xdg && strlen(xdg) + 64 + 16 > IBV_SYSFS_PATH_MAX)
        xdg = NULL;
    if (xdg && *xdg && xdg[0] == '/')
        snprintf(g_root, sizeof(g_root), "%s/efasim-sysfs", xdg);
    else
        snprintf(g_root, sizeof(g_root), "/tmp/efasim-sysfs-%u", (unsigned)getuid());
}

/* mkdir -p for a directory under (or at) the root; each level must be our own directory. */
static int dir_make(const char *path)
{
    char buf[PATH_MAX];
    size_t root_len = strlen(g_root);
    struct stat st;

    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return -ENAMETOOLONG;
    for (char *p = buf + 1;; p++) {
        bool end = *p == '\0';

        if (*p != '/' && !end)
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) && errno != EEXIST)
            return -errno;
        /* Levels above the root are the user's business; from the root down, ours. */
        if (strlen(buf) >= root_len) {
            if (lstat(buf, &st))
                return -errno;
            if (!S_ISDIR(st.st_mode) || st.st_uid != getuid())
                return -EPERM;
        }
        if (end)
            break;
        *p = '/';
    }
    return 0;
}

/* Write root/rel with the formatted content, atomically (temporary file, rename). */
static int file_write(const char *rel, const char *fmt, ...)
{
    char path[PATH_MAX], tmp[PATH_MAX + 32], text[256];
    va_list ap;
    ssize_t n;
    int fd, len;

    va_start(ap, fmt);
    len = vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (len < 0 || len >= (int)sizeof(text) ||
        snprintf(path, sizeof(path), "%s/%s", g_root, rel) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    n = write(fd, text, (size_t)len);
    close(fd);
    if (n != len || rename(tmp, path)) {
        int err = n != len ? EIO : errno;

        unlink(tmp);
        return -err;
    }
    return 0;
}

/* Make root/rel a symbolic link to target (relative), replacing what was there. */
static int link_write(const char *rel, const char *target)
{
    char path[PATH_MAX], tmp[PATH_MAX + 32];

    if (snprintf(path, sizeof(path), "%s/%s", g_root, rel) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    unlink(tmp);
    if (symlink(target, tmp))
        return -errno;
    if (rename(tmp, path)) {
        int err = errno;

        unlink(tmp);
        return -err;
    }
    return 0;
}

static int subdir_make(const char *rel)
{
    char path[PATH_MAX];

    if (snprintf(path, sizeof(path), "%s/%s", g_root, rel) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    return dir_make(path);
}

/* The PCI address device i appears at: one bus per device, as EFA devices sit on AWS. */
static void device_pci_name(unsigned i, char *buf, size_t size)
{
    snprintf(buf, size, "0000:%02x:00.0", 0x10 + i);
}

static int device_write(unsigned i, const struct efasim_device *d)
{
    char rel[512], pci[32], verbs[64], ib[128], target[256];
    uint64_t guid = d->guid;
    int err = 0;

    device_pci_name(i, pci, sizeof(pci));
    snprintf(verbs, sizeof(verbs), "class/infiniband_verbs/uverbs%u", i);
    snprintf(ib, sizeof(ib), "class/infiniband/%s", d->name);

    /* The PCI function and its driver. */
    snprintf(rel, sizeof(rel), "devices/pci0000:00/%s", pci);
    err = err ? err : subdir_make(rel);
    snprintf(rel, sizeof(rel), "devices/pci0000:00/%s/vendor", pci);
    err = err ? err : file_write(rel, "0x%04x\n", EFASIM_VENDOR_ID);
    snprintf(rel, sizeof(rel), "devices/pci0000:00/%s/device", pci);
    err = err ? err : file_write(rel, "0x%04x\n", efasim_config()->device_id);
    snprintf(rel, sizeof(rel), "devices/pci0000:00/%s/numa_node", pci);
    err = err ? err : file_write(rel, "-1\n");
    snprintf(rel, sizeof(rel), "devices/pci0000:00/%s/driver", pci);
    err = err ? err : link_write(rel, "../../../bus/pci/drivers/efa");
    /* What rdma-core matches its providers against (VERBS_PCI_MATCH), as the PCI core writes it. */
    snprintf(rel, sizeof(rel), "devices/pci0000:00/%s/modalias", pci);
    err =
        err ? err
            : file_write(rel, "pci:v%08Xd%08Xsv%08Xsd%08Xbc02sc00i00\n", EFASIM_VENDOR_ID,
                         efasim_config()->device_id, EFASIM_VENDOR_ID, efasim_config()->device_id);

    /* The uverbs character device's class entry. */
    err = err ? err : subdir_make(verbs);
    snprintf(rel, sizeof(rel), "%s/ibdev", verbs);
    err = err ? err : file_write(rel, "%s\n", d->name);
    snprintf(rel, sizeof(rel), "%s/abi_version", verbs);
    err = err ? err : file_write(rel, "1\n");
    /* The character device's number: uverbs is major 231, its minors start at 192. */
    snprintf(rel, sizeof(rel), "%s/dev", verbs);
    err = err ? err : file_write(rel, "231:%u\n", 192 + i);
    snprintf(rel, sizeof(rel), "%s/device", verbs);
    snprintf(target, sizeof(target), "../../../devices/pci0000:00/%s", pci);
    err = err ? err : link_write(rel, target);

    /* The RDMA device's class entry and its one port. */
    snprintf(rel, sizeof(rel), "%s/ports/1", ib);
    err = err ? err : subdir_make(rel);
    snprintf(rel, sizeof(rel), "%s/device", ib);
    err = err ? err : link_write(rel, target);
    snprintf(rel, sizeof(rel), "%s/node_type", ib);
    err = err ? err : file_write(rel, "%d: unspecified\n", (int)IBV_NODE_UNSPECIFIED);
    snprintf(rel, sizeof(rel), "%s/node_guid", ib);
    err = err ? err
              : file_write(rel, "%04x:%04x:%04x:%04x\n", (unsigned)(guid >> 48) & 0xffff,
                           (unsigned)(guid >> 32) & 0xffff, (unsigned)(guid >> 16) & 0xffff,
                           (unsigned)guid & 0xffff);
    snprintf(rel, sizeof(rel), "%s/sys_image_guid", ib);
    err = err ? err
              : file_write(rel, "%04x:%04x:%04x:%04x\n", (unsigned)(guid >> 48) & 0xffff,
                           (unsigned)(guid >> 32) & 0xffff, (unsigned)(guid >> 16) & 0xffff,
                           (unsigned)guid & 0xffff);
    snprintf(rel, sizeof(rel), "%s/fw_ver", ib);
    err = err ? err : file_write(rel, "0.0.0.0\n");
    snprintf(rel, sizeof(rel), "%s/ports/1/state", ib);
    err = err ? err : file_write(rel, "4: ACTIVE\n");
    snprintf(rel, sizeof(rel), "%s/ports/1/phys_state", ib);
    err = err ? err : file_write(rel, "5: LinkUp\n");
    snprintf(rel, sizeof(rel), "%s/ports/1/link_layer", ib);
    err = err ? err : file_write(rel, "Unknown\n"); /* what EFA's kernel driver reports */
    snprintf(rel, sizeof(rel), "%s/ports/1/lid", ib);
    err = err ? err : file_write(rel, "0x0\n");
    snprintf(rel, sizeof(rel), "%s/ports/1/sm_lid", ib);
    err = err ? err : file_write(rel, "0x0\n");
    snprintf(rel, sizeof(rel), "%s/ports/1/lid_mask_count", ib);
    err = err ? err : file_write(rel, "1\n");
    /* The port's one GID, as the sysfs GID table shows it, and its type (not RoCE: IB). */
    snprintf(rel, sizeof(rel), "%s/ports/1/gids", ib);
    err = err ? err : subdir_make(rel);
    snprintf(rel, sizeof(rel), "%s/ports/1/gids/0", ib);
    err = err ? err
              : file_write(rel,
                           "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:"
                           "%02x%02x\n",
                           d->gid.raw[0], d->gid.raw[1], d->gid.raw[2], d->gid.raw[3],
                           d->gid.raw[4], d->gid.raw[5], d->gid.raw[6], d->gid.raw[7],
                           d->gid.raw[8], d->gid.raw[9], d->gid.raw[10], d->gid.raw[11],
                           d->gid.raw[12], d->gid.raw[13], d->gid.raw[14], d->gid.raw[15]);
    snprintf(rel, sizeof(rel), "%s/ports/1/gid_attrs/types", ib);
    err = err ? err : subdir_make(rel);
    snprintf(rel, sizeof(rel), "%s/ports/1/gid_attrs/types/0", ib);
    err = err ? err : file_write(rel, "IB/RoCE v1\n");
    return err;
}

const char *efasim_sysfs_root(void)
{
    pthread_once(&g_root_once, root_choose);
    return g_root;
}

bool efasim_sysfs_write(const struct efasim_device *devs, unsigned ndev)
{
    int err;

    efasim_sysfs_root();
    err = dir_make(g_root);
    err = err ? err : subdir_make("bus/pci/drivers/efa");
    err = err ? err : subdir_make("class/infiniband_verbs");
    err = err ? err : file_write("class/infiniband_verbs/abi_version", "6\n");
    for (unsigned i = 0; i < ndev && !err; i++)
        err = device_write(i, &devs[i]);
    if (err)
        fprintf(stderr,
                "efasim: cannot write its sysfs view under %s (%s); tools that read sysfs "
                "(libfabric's fi_info) will not see efasim's devices\n",
                g_root, strerror(-err));
    g_root_ok = !err;
    return g_root_ok;
}

void efasim_sysfs_paths(unsigned i, const char *name, char *dev_path, char *ibdev_path)
{
    efasim_sysfs_root();
    /* root_choose() left room for both; a cut path would only fail to open. */
    if (snprintf(dev_path, IBV_SYSFS_PATH_MAX, "%s/class/infiniband_verbs/uverbs%u", g_root, i) >=
            IBV_SYSFS_PATH_MAX ||
        snprintf(ibdev_path, IBV_SYSFS_PATH_MAX, "%s/class/infiniband/%s", g_root, name) >=
            IBV_SYSFS_PATH_MAX)
        fprintf(stderr, "efasim: sysfs paths of %s do not fit under %s\n", name, g_root);
}

/*
 * Per-device traffic counters. EFA's driver keeps port counters for the whole
 * device (tx_pkts, tx_bytes, rx_pkts, rx_bytes among them, read with `rdma
 * statistic` or from hw_counters in sysfs); efasim's device is shared by
 * processes, so its counters live in a small file per device under the root,
 * efasim/counters/<name>, which every context maps shared and adds to
 * atomically. fast_ops and fast_bytes count the RDMA chunks the device
 * served by direct copy between processes (fastpath.c), as the target. They only grow (since the
 * file was created, as since boot on EFA) and change nothing a program observes through verbs;
 * efasim-info
 * --counters prints them.
 */
#define HWC_FILE_SIZE 4096

static int hwc_path(const char *name, char *path, size_t size)
{
    efasim_sysfs_root();
    if (snprintf(path, size, "%s/efasim/counters/%s", g_root, name) >= (int)size)
        return -ENAMETOOLONG;
    return 0;
}

int efasim_state_file(const char *dir, const char *name, size_t size)
{
    char path[PATH_MAX], sub[PATH_MAX];
    struct stat st;
    int fd, err;

    efasim_sysfs_root();
    if (snprintf(sub, sizeof(sub), "%s/efasim/%s", g_root, dir) >= (int)sizeof(sub) ||
        snprintf(path, sizeof(path), "%s/%s", sub, name) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    err = dir_make(sub);
    if (err)
        return err;
    fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    /* Growing a file is safe when several processes do it at once; shrinking never happens. */
    if (fstat(fd, &st) || st.st_uid != getuid() || !S_ISREG(st.st_mode)) {
        close(fd);
        return -EPERM;
    }
    if (st.st_size < (off_t)size && ftruncate(fd, (off_t)size)) {
        err = -errno;
        close(fd);
        return err;
    }
    return fd;
}

struct efasim_hw_counters *efasim_hw_counters_map(const char *name)
{
    struct efasim_hw_counters *hwc;
    int fd = efasim_state_file("counters", name, HWC_FILE_SIZE);

    if (fd < 0)
        return NULL;
    hwc = mmap(NULL, HWC_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return hwc == MAP_FAILED ? NULL : hwc;
}

void efasim_hw_counters_unmap(struct efasim_hw_counters *hwc)
{
    if (hwc)
        munmap(hwc, HWC_FILE_SIZE);
}

int efasim_hw_counters_read(const char *name, struct efasim_hw_counters *out)
{
    char path[PATH_MAX];
    struct efasim_hw_counters *hwc;
    struct stat st;
    int fd, err;

    memset(out, 0, sizeof(*out));
    err = hwc_path(name, path, sizeof(path));
    if (err)
        return err;
    fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno; /* no traffic yet */
    if (fstat(fd, &st) || st.st_size < HWC_FILE_SIZE) {
        close(fd);
        return 0;
    }
    hwc = mmap(NULL, HWC_FILE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (hwc == MAP_FAILED)
        return -errno;
    out->tx_pkts = __atomic_load_n(&hwc->tx_pkts, __ATOMIC_RELAXED);
    out->tx_bytes = __atomic_load_n(&hwc->tx_bytes, __ATOMIC_RELAXED);
    out->rx_pkts = __atomic_load_n(&hwc->rx_pkts, __ATOMIC_RELAXED);
    out->rx_bytes = __atomic_load_n(&hwc->rx_bytes, __ATOMIC_RELAXED);
    out->fast_ops = __atomic_load_n(&hwc->fast_ops, __ATOMIC_RELAXED);
    out->fast_bytes = __atomic_load_n(&hwc->fast_bytes, __ATOMIC_RELAXED);
    munmap(hwc, HWC_FILE_SIZE);
    return 0;
}
