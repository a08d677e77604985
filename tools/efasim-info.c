/*
 * efasim-info: print every efasim knob (EFASIM_* environment variable) with
 * its default, the value in force and what it is for, then the devices the
 * emulator presents. Links efasim's libibverbs directly, so it describes the
 * emulator even when the system's rdma-core is first on the loader path.
 *
 *   efasim-info                 knobs and devices
 *   efasim-info --env           the environment that runs an unmodified program
 *                               on efasim, as shell lines: eval "$(efasim-info --env)"
 *   efasim-info --run CMD ...   run CMD in that environment
 *   efasim-info --env=kernel    the same for the kernel front end: the system's
 *   efasim-info --run=kernel CMD  libibverbs and libefa on efasim's emulated
 *                               uverbs device (LD_PRELOAD); --env=verbs is --env
 *   efasim-info --counters      each device's traffic counters (tx_pkts tx_bytes
 *                               rx_pkts rx_bytes fast_ops fast_bytes), summed over every process
 *                               that used it since its counter file was made
 *
 * The environment: LD_LIBRARY_PATH with efasim's libibverbs.so.1/libefa.so.1
 * first (kernel front end: LD_PRELOAD with its libefasim-kernel.so, and
 * efasim's directory off LD_LIBRARY_PATH, so the system's rdma-core loads),
 * SYSFS_PATH naming efasim's sysfs view (libfabric reads sysfs itself),
 * and FI_EFA_ENABLE_SHM_TRANSFER=0: processes on one host share efasim's
 * loopback GID, so libfabric would otherwise send between them through its
 * shared-memory provider instead of the (emulated) device.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../src/efasim/model/efasim_model.h"

/* Exported by libibverbs (efasim's as rdma-core's), declared by no public header. */
const char *ibv_get_sysfs_path(void);

/* The directory of the libibverbs.so.1 this program runs on (efasim's), or NULL. */
static const char *efasim_libdir(char *buf, size_t size)
{
    Dl_info info;
    char *slash;

    if (!dladdr((void *)ibv_get_device_list, &info) || !info.dli_fname ||
        !realpath(info.dli_fname, buf))
        return NULL;
    (void)size;
    slash = strrchr(buf, '/');
    if (!slash)
        return NULL;
    *slash = '\0';
    return buf;
}

struct env_var {
    const char *name;
    char value[PATH_MAX * 2];
    const char *why;
};

/* path without the directory dir (a ':'-separated list), into out. */
static void path_without(const char *path, const char *dir, char *out, size_t size)
{
    size_t n = 0, dlen = strlen(dir);

    out[0] = '\0';
    while (path && *path) {
        const char *end = strchr(path, ':');
        size_t len = end ? (size_t)(end - path) : strlen(path);

        if (!(len == dlen && !strncmp(path, dir, dlen)) && n + len + 2 < size) {
            if (n)
                out[n++] = ':';
            memcpy(out + n, path, len);
            n += len;
            out[n] = '\0';
        }
        path = end ? end + 1 : NULL;
    }
}

/*
 * Fills vars[3] for the drop-in (kernel: false) or the kernel front end;
 * returns 0, or -1 if efasim's library directory is unknown.
 */
static int efasim_env(struct env_var vars[3], bool kernel)
{
    char dir[PATH_MAX];
    const char *old = getenv(kernel ? "LD_PRELOAD" : "LD_LIBRARY_PATH");
    struct ibv_device **list;

    if (!efasim_libdir(dir, sizeof(dir))) {
        fprintf(stderr, "efasim-info: cannot tell where efasim's libibverbs.so.1 is\n");
        return -1;
    }
    /* Listing the devices writes efasim's sysfs view. */
    list = ibv_get_device_list(NULL);
    ibv_free_device_list(list);
    if (!kernel) {
        vars[0].name = "LD_LIBRARY_PATH";
        if (old && !strncmp(old, dir, strlen(dir)) &&
            (!old[strlen(dir)] || old[strlen(dir)] == ':'))
            snprintf(vars[0].value, sizeof(vars[0].value), "%s", old); /* already first */
        else
            snprintf(vars[0].value, sizeof(vars[0].value), "%s%s%s", dir, old && *old ? ":" : "",
                     old ? old : "");
        vars[0].why = "efasim's libibverbs.so.1 and libefa.so.1 before the system's rdma-core";
    } else {
        vars[0].name = "LD_PRELOAD";
        if (old && strstr(old, "libefasim-kernel.so"))
            snprintf(vars[0].value, sizeof(vars[0].value), "%s", old); /* already there */
        else
            snprintf(vars[0].value, sizeof(vars[0].value), "%s/libefasim-kernel.so%s%s", dir,
                     old && *old ? ":" : "", old ? old : "");
        vars[0].why = "efasim's kernel front end: the system's rdma-core on efasim's uverbs "
                      "device";
    }
    vars[1].name = "SYSFS_PATH";
    snprintf(vars[1].value, sizeof(vars[1].value), "%s", ibv_get_sysfs_path());
    vars[1].why = "efasim's sysfs view (libfabric and rdma-core read sysfs there)";
    vars[2].name = "FI_EFA_ENABLE_SHM_TRANSFER";
    snprintf(vars[2].value, sizeof(vars[2].value), "0");
    vars[2].why = "processes on one host share efasim's GID; keep libfabric on the device";
    return 0;
}

/* The kernel front end must not find efasim's drop-in first on the loader path. */
static void loader_path_for_kernel(char *buf, size_t size)
{
    char dir[PATH_MAX];

    if (efasim_libdir(dir, sizeof(dir)))
        path_without(getenv("LD_LIBRARY_PATH"), dir, buf, size);
    else
        snprintf(buf, size, "%s", getenv("LD_LIBRARY_PATH") ? getenv("LD_LIBRARY_PATH") : "");
}

/* Single-quoted for the shell. */
static void print_quoted(const char *s)
{
    putchar('\'');
    for (; *s; s++) {
        if (*s == '\'')
            fputs("'\\''", stdout);
        else
            putchar(*s);
    }
    putchar('\'');
}

static int print_env(bool kernel)
{
    struct env_var vars[3];
    char ldpath[PATH_MAX * 2];

    if (efasim_env(vars, kernel))
        return 1;
    for (int i = 0; i < 3; i++) {
        printf("# %s\nexport %s=", vars[i].why, vars[i].name);
        print_quoted(vars[i].value);
        putchar('\n');
    }
    if (kernel) {
        loader_path_for_kernel(ldpath, sizeof(ldpath));
        printf("# not efasim's drop-in libibverbs.so.1: the system's rdma-core\n");
        printf("export LD_LIBRARY_PATH=");
        print_quoted(ldpath);
        putchar('\n');
    }
    return 0;
}

static int run(char **argv, bool kernel)
{
    struct env_var vars[3];
    char ldpath[PATH_MAX * 2];

    if (efasim_env(vars, kernel))
        return 1;
    for (int i = 0; i < 3; i++)
        if (setenv(vars[i].name, vars[i].value, 1)) {
            perror("efasim-info: setenv");
            return 1;
        }
    if (kernel) {
        loader_path_for_kernel(ldpath, sizeof(ldpath));
        if (setenv("LD_LIBRARY_PATH", ldpath, 1)) {
            perror("efasim-info: setenv");
            return 1;
        }
    }
    execvp(argv[0], argv);
    fprintf(stderr, "efasim-info: %s: %s\n", argv[0], strerror(errno));
    return 127;
}

static int describe(void)
{
    struct ibv_device **list;
    int n = 0;

    efasim_config_print(stdout);
    list = ibv_get_device_list(&n);
    printf("\n%d emulated device(s), sysfs view under %s:\n", n, ibv_get_sysfs_path());
    for (int i = 0; list && i < n; i++) {
        struct ibv_context *ctx = ibv_open_device(list[i]);
        union ibv_gid gid;
        char addr[INET6_ADDRSTRLEN] = "?";

        if (ctx && !ibv_query_gid(ctx, 1, 0, &gid))
            inet_ntop(AF_INET6, gid.raw, addr, sizeof(addr));
        printf("  %s  gid %s\n", ibv_get_device_name(list[i]), addr);
        if (ctx)
            ibv_close_device(ctx);
    }
    ibv_free_device_list(list);
    return 0;
}

/* One line per device: NAME tx_pkts N tx_bytes N rx_pkts N rx_bytes N fast_ops N fast_bytes N. */
static int print_counters(void)
{
    struct ibv_device **list;
    int n = 0, ret = 0;

    list = ibv_get_device_list(&n);
    if (!list)
        return 1;
    for (int i = 0; i < n; i++) {
        struct efasim_hw_counters c;
        const char *name = ibv_get_device_name(list[i]);
        int err = efasim_hw_counters_read(name, &c);

        if (err) {
            fprintf(stderr, "efasim-info: counters of %s: %s\n", name, strerror(-err));
            ret = 1;
            continue;
        }
        printf("%s tx_pkts %llu tx_bytes %llu rx_pkts %llu rx_bytes %llu fast_ops %llu "
               "fast_bytes %llu\n",
               name, (unsigned long long)c.tx_pkts, (unsigned long long)c.tx_bytes,
               (unsigned long long)c.rx_pkts, (unsigned long long)c.rx_bytes,
               (unsigned long long)c.fast_ops, (unsigned long long)c.fast_bytes);
    }
    ibv_free_device_list(list);
    return ret;
}

/* --env, --env=verbs, --env=kernel (and --run...): 0 drop-in, 1 kernel, -1 not this option. */
static int front_end(const char *arg, const char *option)
{
    size_t n = strlen(option);

    if (strncmp(arg, option, n))
        return -1;
    if (!arg[n] || !strcmp(arg + n, "=verbs"))
        return 0;
    if (!strcmp(arg + n, "=kernel"))
        return 1;
    return -1;
}

int main(int argc, char **argv)
{
    int fe;

    if (argc == 1)
        return describe();
    if (argc == 2 && (fe = front_end(argv[1], "--env")) >= 0)
        return print_env(fe);
    if (argc == 2 && !strcmp(argv[1], "--counters"))
        return print_counters();
    if (argc >= 3 && (fe = front_end(argv[1], "--run")) >= 0)
        return run(argv + 2, fe);
    fprintf(stderr, "usage: efasim-info [--env[=verbs|=kernel] | --counters | "
                    "--run[=verbs|=kernel] COMMAND [ARG...]]\n");
    return 2;
}
