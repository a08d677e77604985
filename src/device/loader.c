/*
 * Run-time choice of the verbs libraries: the system's rdma-core (real EFA)
 * or efasim's drop-in ones. efarm never links libibverbs; it dlopen()s one
 * pair and resolves every exported function it calls into g_efarm_verbs.
 *
 * Only one pair may ever be loaded in a process: both carry the soname
 * libibverbs.so.1, and efasim's libefa binds to whichever is loaded. So
 * "auto" decides from sysfs (an Amazon EFA device present or not) without
 * loading anything first.
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

#ifndef EFARM_EFASIM_DIR
#define EFARM_EFASIM_DIR "/usr/local/lib/efarm/efasim"
#endif

struct efarm_verbs g_efarm_verbs;

static pthread_once_t g_load_once = PTHREAD_ONCE_INIT;
static int g_load_result;
static enum efarm_device_kind g_kind;

/* True when sysfs lists an RDMA device whose PCI vendor is Amazon (EFA). */
static bool sysfs_has_efa(void)
{
    DIR *dir = opendir("/sys/class/infiniband");
    struct dirent *e;
    bool found = false;

    if (!dir)
        return false;
    while (!found && (e = readdir(dir))) {
        char path[512], vendor[32] = "";
        FILE *f;

        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device/vendor", e->d_name);
        f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(vendor, sizeof(vendor), f) && !strncmp(vendor, "0x1d0f", 6))
            found = true;
        fclose(f);
    }
    closedir(dir);
    return found;
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
    const char *want = efarm_config()->device;
    const char *dir = NULL;
    void *verbs, *efa;
    int ret = 0;

    if (!want || !*want || !strcmp(want, "auto")) {
        g_kind = sysfs_has_efa() ? EFARM_DEVICE_EFA : EFARM_DEVICE_SIM;
    } else if (!strcmp(want, "efa")) {
        g_kind = EFARM_DEVICE_EFA;
    } else if (!strcmp(want, "sim")) {
        g_kind = EFARM_DEVICE_SIM;
    } else { /* efarm_config refused it, and nothing may start */
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
