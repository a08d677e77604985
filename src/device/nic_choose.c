/*
 * Choosing this rank's NIC on the machine: the devices the verbs libraries
 * list, the machine's hwloc topology with its I/O objects, the CPU bindings of
 * the node's ranks, EFARM_IFACE, and EFARM_NIC_VERBOSE (see efarm_nic.h for
 * the rules). The netmod gathers the bindings of the node's ranks.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strverscmp */
#endif
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device_internal.h"
#include "efarm_config.h"
#include "efarm_errno.h"
#include "efarm_device_limits.h"
#include "efarm_nic.h"

#define V (&g_efarm_verbs)

int efarm_dev_name_order(const char *a, const char *b)
{
    return strverscmp(a, b);
}

static int name_order(const void *a, const void *b)
{
    return efarm_dev_name_order(*(const char *const *)a, *(const char *const *)b);
}

int efarm_dev_choose_nic_in(hwloc_topology_t topo, unsigned local_rank, unsigned nlocal,
                            const char *const *bindings, char name_p[EFARM_DEV_NAME_MAX],
                            struct efarm_nic_choice *choice_p)
{
    struct efarm_nic_choice choice;
    hwloc_bitmap_t *sets = NULL;
    const char **names = NULL;
    struct ibv_device **list;
    int ndev = 0, ret;

    if (!nlocal || local_rank >= nlocal)
        return -EINVAL;
    ret = efarm_device_initialize();
    if (ret)
        return ret;
    list = V->ibv_get_device_list(&ndev);
    if (!list || !ndev) {
        ret = EFARM_E(DEV_NONE);
        goto out_free_list;
    }
    names = efarm_dev_calloc((size_t)ndev, sizeof(*names));
    sets = efarm_dev_calloc(nlocal, sizeof(*sets));
    if (!names || !sets) {
        ret = -ENOMEM;
        goto out_free;
    }
    for (int i = 0; i < ndev; i++)
        names[i] = V->ibv_get_device_name(list[i]);
    /*
     * rdma-core lists devices in its sysfs directory's order, which no kernel
     * promises: in name order, a NIC's index (ties, rails, the MPI_T variable)
     * means the same on every host.
     */
    qsort(names, (size_t)ndev, sizeof(*names), name_order);
    /* A NULL or empty binding is an unbound rank; others are hwloc CPU lists ("0-3,8"). */
    for (unsigned r = 0; r < nlocal; r++) {
        if (!bindings || !bindings[r] || !*bindings[r])
            continue;
        sets[r] = efarm_dev_alloc_fails() ? NULL : hwloc_bitmap_alloc();
        if (!sets[r]) {
            ret = -ENOMEM;
            goto out_free;
        }
        if (hwloc_bitmap_list_sscanf(sets[r], bindings[r]) < 0 || hwloc_bitmap_iszero(sets[r])) {
            ret = -EINVAL;
            goto out_free;
        }
    }
    ret = efarm_nic_select(topo, names, (unsigned)ndev, (const hwloc_const_cpuset_t *)sets, nlocal,
                           local_rank, efarm_config()->iface, &choice);
    if (ret)
        goto out_free;
    snprintf(name_p, EFARM_DEV_NAME_MAX, "%s", names[choice.index]);
    {
        /* The node's ranks whose endpoints share each NIC: its share of the NIC's handles. */
        unsigned rails =
            efarm_config()->rails < choice.ntied ? (unsigned)efarm_config()->rails : choice.ntied;

        efarm_dev_note_nic_sharers((choice.nsharing * rails + choice.ntied - 1) / choice.ntied);
    }
    if (choice_p)
        *choice_p = choice;
    if (efarm_config()->nic_verbose && !choice_p) /* a caller that takes the choice reports it */
        efarm_nic_choice_print(stderr, local_rank, names, &choice);

out_free:
    for (unsigned r = 0; sets && r < nlocal; r++)
        hwloc_bitmap_free(sets[r]);
    free(sets);
    free(names);
out_free_list:
    if (list)
        V->ibv_free_device_list(list);
    return ret;
}

/*
 * The machine's topology, loaded once and kept for the process: loading it
 * takes milliseconds, and destroying it unloads hwloc's I/O discovery plugin,
 * which leaves allocations behind that leak checkers then report.
 */
static hwloc_topology_t g_machine_topology;
static int g_machine_topology_ret;
static pthread_once_t g_machine_topology_once = PTHREAD_ONCE_INIT;

static void machine_topology_load(void)
{
    const char *xml = efarm_config()->topology;

    if (hwloc_topology_init(&g_machine_topology)) {
        g_machine_topology_ret = -ENOMEM;
        return;
    }
    /* Keep PCI and OS devices: without them every NIC would look placeless. */
    hwloc_topology_set_io_types_filter(g_machine_topology, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    /*
     * EFARM_TOPOLOGY: this machine described by an XML file (lstopo's, or a
     * test's), still this machine, so the process's binding is read from the
     * operating system and numbered as the file numbers CPUs.
     */
    if (xml && *xml &&
        (hwloc_topology_set_xml(g_machine_topology, xml) ||
         hwloc_topology_set_flags(g_machine_topology, HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM))) {
        fprintf(stderr, "efarm: EFARM_TOPOLOGY=%s: not an hwloc XML file hwloc can read (%s)\n",
                xml, strerror(errno));
        hwloc_topology_destroy(g_machine_topology);
        g_machine_topology_ret = -EINVAL;
        return;
    }
    if (hwloc_topology_load(g_machine_topology)) {
        if (xml && *xml)
            fprintf(stderr, "efarm: EFARM_TOPOLOGY=%s: hwloc cannot load it (%s)\n", xml,
                    strerror(errno));
        hwloc_topology_destroy(g_machine_topology);
        g_machine_topology_ret = xml && *xml ? -EINVAL : -EIO;
    }
}

int efarm_dev_choose_nic(unsigned local_rank, unsigned nlocal, const char *const *bindings,
                         char name_p[EFARM_DEV_NAME_MAX], struct efarm_nic_choice *choice_p)
{
    if (efarm_config_status(NULL))
        return -EINVAL; /* a refused tunable: nothing starts (efarm_config_status says which) */
    pthread_once(&g_machine_topology_once, machine_topology_load);
    if (g_machine_topology_ret)
        return g_machine_topology_ret;
    return efarm_dev_choose_nic_in(g_machine_topology, local_rank, nlocal, bindings, name_p,
                                   choice_p);
}

int efarm_dev_cpu_binding(char *buf, size_t size)
{
    hwloc_const_cpuset_t all;
    hwloc_bitmap_t set;
    int n, ret = 0;

    if (!buf || !size)
        return -EINVAL;
    buf[0] = '\0';
    pthread_once(&g_machine_topology_once, machine_topology_load);
    if (g_machine_topology_ret)
        return 0; /* no topology: cannot tell, so unbound */
    set = efarm_dev_alloc_fails() ? NULL : hwloc_bitmap_alloc();
    if (!set)
        return -ENOMEM;
    all = hwloc_topology_get_topology_cpuset(g_machine_topology);
    /*
     * A topology loaded from XML binds only as this system (EFARM_TOPOLOGY
     * sets that); otherwise hwloc cannot tell. Bound to every CPU the system
     * has online is not bound, whatever CPUs a topology file describes.
     */
    if (!hwloc_get_cpubind(g_machine_topology, set, HWLOC_CPUBIND_PROCESS) &&
        hwloc_bitmap_weight(set) < sysconf(_SC_NPROCESSORS_ONLN)) {
        hwloc_bitmap_and(set, set, all);
        if (!hwloc_bitmap_iszero(set) && !hwloc_bitmap_isincluded(all, set)) {
            n = hwloc_bitmap_list_snprintf(buf, size, set);
            if (n < 0 || (size_t)n >= size) {
                buf[0] = '\0';
                ret = -ENAMETOOLONG;
            }
        }
    }
    hwloc_bitmap_free(set);
    return ret;
}
