/*
 * Run-time choice of the verbs libraries: the system's rdma-core (real EFA)
 * or efasim's drop-in ones. efarm never links libibverbs; it dlopen()s one
 * pair and resolves every exported function it calls into g_efarm_verbs.
 *
 * Only one pair may ever be loaded in a process: both carry the soname
 * libibverbs.so.1, and efasim's libefa binds to whichever is loaded. So
 * "auto" decides from sysfs (an Amazon EFA device present or not) without
 * loading anything first; without one it loads nothing (efarm_device_choose).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_internal.h"
#include "efarm_config.h"
#include "efarm_errno.h"
#include "efarm_log.h"

#ifndef EFARM_EFASIM_DIR
#define EFARM_EFASIM_DIR "/usr/local/lib/efarm/efasim"
#endif

struct efarm_verbs g_efarm_verbs;

static pthread_once_t g_load_once = PTHREAD_ONCE_INIT;
static int g_load_result;
static enum efarm_device_kind g_kind;

static struct efarm_device_choice g_choice;

/* The first RDMA device under ROOT/class/infiniband whose PCI vendor is Amazon (EFA). */
static bool sysfs_find_efa(const char *root, char *name, size_t len)
{
    char path[512];
    DIR *dir;
    struct dirent *e;
    bool found = false;

    snprintf(path, sizeof(path), "%s/class/infiniband", root);
    dir = opendir(path);
    if (!dir)
        return false;
    while (!found && (e = readdir(dir))) {
        char vendor[32] = "";
        FILE *f;

        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/class/infiniband/%s/device/vendor", root, e->d_name);
        f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(vendor, sizeof(vendor), f) && !strncmp(vendor, "0x1d0f", 6)) {
            found = true;
            snprintf(name, len, "%s", e->d_name);
        }
        fclose(f);
    }
    closedir(dir);
    return found;
}

void efarm_device_choose(const char *want, const char *sysfs_root, struct efarm_device_choice *c)
{
    /* As libibverbs looks: SYSFS_PATH when set, so auto and rdma-core see one sysfs. */
    const char *env = getenv("SYSFS_PATH");
    const char *root = sysfs_root ? sysfs_root : env && *env ? env : "/sys";
    char name[256];

    if (!strcmp(want, "efa")) {
        c->kind = EFARM_DEVICE_EFA;
        snprintf(c->reason, sizeof(c->reason),
                 "EFA through the system's rdma-core (EFARM_DEVICE=efa)");
    } else if (!strcmp(want, "sim")) {
        c->kind = EFARM_DEVICE_SIM;
        snprintf(c->reason, sizeof(c->reason),
                 "efasim, the emulated EFA device (EFARM_DEVICE=sim)");
    } else if (sysfs_find_efa(root, name, sizeof(name))) {
        c->kind = EFARM_DEVICE_EFA;
        snprintf(c->reason, sizeof(c->reason),
                 "EFA through the system's rdma-core (EFARM_DEVICE=auto: %.200s/class/infiniband "
                 "lists the EFA device %.64s)",
                 root, name);
    } else {
        c->kind = EFARM_DEVICE_NONE;
        snprintf(c->reason, sizeof(c->reason),
                 "no EFA device on this host (%.200s/class/infiniband lists none of Amazon's), and "
                 "EFARM_DEVICE=auto does not fall back to the emulator: set EFARM_DEVICE=sim "
                 "to run on efasim, or fix the host's EFA driver",
                 root);
    }
}

static void *open_lib(const char *dir, const char *soname)
{
    char path[4096];
    void *h;

    if (dir)
        snprintf(path, sizeof(path), "%s/%s", dir, soname);
    else
        snprintf(path, sizeof(path), "%s", soname);
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        fprintf(stderr, "efarm: cannot load %s: %s\n", path, dlerror());
    return h;
}

static int resolve(void *lib, const char *name, void **fn_p, bool required)
{
    *fn_p = dlsym(lib, name);
    if (!*fn_p && required) {
        fprintf(stderr, "efarm: %s is missing from the verbs libraries\n", name);
        return EFARM_E(DEV_LOAD);
    }
    return 0;
}

static void load(void)
{
    const char *dir = NULL;
    void *verbs, *efa;
    int ret = 0;

    if (efarm_config_status(NULL)) { /* a refused tunable: nothing may start */
        g_choice.kind = EFARM_DEVICE_NONE;
        snprintf(g_choice.reason, sizeof(g_choice.reason), "a tunable was refused");
        g_kind = EFARM_DEVICE_NONE;
        g_load_result = EFARM_E(DEV_LOAD);
        return;
    }
    efarm_device_choose(efarm_config()->device, NULL, &g_choice);
    g_kind = g_choice.kind;
    if (g_kind == EFARM_DEVICE_NONE) {
        efarm_log(EFARM_LOG_ERROR, "%s", g_choice.reason);
        g_load_result = EFARM_E(DEV_LOAD);
        return;
    }
    if (g_kind == EFARM_DEVICE_SIM)
        dir = *efarm_config()->efasim_path ? efarm_config()->efasim_path : EFARM_EFASIM_DIR;

    /* libibverbs first: efasim's libefa then binds to it by soname. */
    verbs = open_lib(dir, "libibverbs.so.1");
    efa = verbs ? open_lib(dir, "libefa.so.1") : NULL;
    if (!verbs || !efa) {
        g_load_result = EFARM_E(DEV_LOAD);
        return;
    }
#define EFARM_RESOLVE(r, name, params) \
    if (!ret)                          \
        ret = resolve(verbs, #name, (void **)&g_efarm_verbs.name, true);
    EFARM_VERBS_FUNCS(EFARM_RESOLVE)
#undef EFARM_RESOLVE
#define EFARM_RESOLVE_EFA(r, name, params) \
    if (!ret)                              \
        ret = resolve(efa, #name, (void **)&g_efarm_verbs.name, true);
    EFARM_EFADV_FUNCS(EFARM_RESOLVE_EFA)
#undef EFARM_RESOLVE_EFA
#define EFARM_RESOLVE_OPT(r, name, params) \
    if (!ret)                              \
        ret = resolve(efa, #name, (void **)&g_efarm_verbs.name, false);
    EFARM_EFADV_OPTIONAL_FUNCS(EFARM_RESOLVE_OPT)
#undef EFARM_RESOLVE_OPT
    g_load_result = ret;
}

int efarm_device_initialize(void)
{
    pthread_once(&g_load_once, load);
    return g_load_result;
}

enum efarm_device_kind efarm_device_kind(void)
{
    return g_kind;
}

const struct efarm_device_choice *efarm_device_choice(void)
{
    efarm_device_initialize();
    return &g_choice;
}
