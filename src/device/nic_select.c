/*
 * NIC selection (see efarm_nic.h for the rules).
 *
 * Each device's locality is reduced once to two bitmaps: the OS indexes of
 * the NUMA nodes and the logical indexes of the packages its cpuset touches.
 * A binding is reduced the same way, so nearness is a few bitmap inclusions
 * per device and rank. The selection then computes the tied set of every
 * local rank (nlocal x nnames comparisons), which every rank does alike, so
 * all ranks agree on who shares what without communicating.
 */
#include "device_internal.h"
#include "efarm_nic.h"
#include "efarm_text.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* hwloc bitmaps through the device layer's allocation hook, so tests can fail them. */
static hwloc_bitmap_t nic_bitmap_alloc(void)
{
    return efarm_dev_alloc_fails() ? NULL : hwloc_bitmap_alloc();
}

/* One device as seen by the selection. */
struct nic_dev {
    bool candidate;          /* allowed by the iface list */
    hwloc_obj_t osdev;       /* NULL: not in the topology, no locality */
    hwloc_bitmap_t nodes;    /* NUMA nodes (OS indexes) its locality touches */
    hwloc_bitmap_t packages; /* packages (logical indexes) its locality touches */
};

/* Everything one selection needs; built and torn down by efarm_nic_select(). */
struct nic_sel {
    hwloc_topology_t topo;
    struct nic_dev *devs;
    unsigned ndevs;
    unsigned ncandidates;
    struct hwloc_distances_s *latency; /* NUMA latency matrix, or NULL */
    hwloc_bitmap_t bind_nodes;         /* the binding being looked at, reduced */
    hwloc_bitmap_t bind_packages;
};

/* A device's nearness to the current binding; smaller is nearer. */
struct nic_key {
    enum efarm_nic_nearness nearness;
    uint64_t distance; /* only for EFARM_NIC_NUMA_DISTANCE */
};

/* Set `packages` to the logical indexes of the packages that cpuset touches. */
static int nic_packages_of(hwloc_topology_t topo, hwloc_const_cpuset_t cpuset,
                           hwloc_bitmap_t packages)
{
    hwloc_obj_t pkg = NULL;

    hwloc_bitmap_zero(packages);
    while ((pkg = hwloc_get_next_obj_covering_cpuset_by_type(topo, cpuset, HWLOC_OBJ_PACKAGE,
                                                             pkg)) != NULL) {
        if (hwloc_bitmap_set(packages, pkg->logical_index) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* Reduce a cpuset to its NUMA nodes and packages. */
static int nic_reduce(hwloc_topology_t topo, hwloc_const_cpuset_t cpuset, hwloc_bitmap_t nodes,
                      hwloc_bitmap_t packages)
{
    if (hwloc_cpuset_to_nodeset(topo, cpuset, nodes) < 0)
        return -ENOMEM;
    return nic_packages_of(topo, cpuset, packages);
}

/* The OpenFabrics OS device called name, or NULL. */
static hwloc_obj_t nic_find_osdev(hwloc_topology_t topo, const char *name)
{
    hwloc_obj_t obj = NULL;

    while ((obj = hwloc_get_next_osdev(topo, obj)) != NULL) {
        if (obj->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && obj->name &&
            !strcmp(obj->name, name))
            return obj;
    }
    return NULL;
}

/*
 * Step through a comma list: the entry at p, blank-trimmed, goes to *entry_p
 * and *len_p (possibly empty). Returns where the next entry starts, or NULL
 * after the last one.
 */
static const char *nic_list_next(const char *p, const char **entry_p, size_t *len_p)
{
    size_t len = strcspn(p, ",");
    size_t start = strspn(p, " \t");

    if (start > len)
        start = len;
    while (len > start && (p[len - 1] == ' ' || p[len - 1] == '\t'))
        len--;
    *entry_p = p + start;
    *len_p = len - start;
    p += strcspn(p, ",");
    return *p ? p + 1 : NULL;
}

static bool nic_entry_is(const char *entry, size_t len, const char *name)
{
    return strlen(name) == len && !memcmp(entry, name, len);
}

static bool nic_list_has(const char *list, const char *name)
{
    const char *p = list, *entry;
    size_t len;

    while (p) {
        p = nic_list_next(p, &entry, &len);
        if (len && nic_entry_is(entry, len, name))
            return true;
    }
    return false;
}

/* Whether a comma list has no non-blank entry (NULL included). */
static bool nic_list_is_empty(const char *list)
{
    return !list || !list[strspn(list, " \t,")];
}

/*
 * Warn about entries of the iface list that name no device. Only called on
 * local rank 0, so a node prints each warning once.
 */
static void nic_list_warn_unknown(const char *list, const char *const *names, unsigned nnames)
{
    const char *p = list, *entry;
    size_t len;

    while (p) {
        bool known = false;

        p = nic_list_next(p, &entry, &len);
        for (unsigned i = 0; i < nnames; i++)
            known |= nic_entry_is(entry, len, names[i]);
        if (len && !known)
            fprintf(stderr, "efarm: EFARM_IFACE entry \"%.*s\" names no EFA device; ignored\n",
                    (int)len, entry);
    }
}

/* Log that the iface list matched nothing, with the devices it could have named. */
static void nic_list_report_none(const char *list, const char *const *names, unsigned nnames)
{
    char have[512];
    size_t used = 0;

    have[0] = '\0';
    for (unsigned i = 0; i < nnames && used < sizeof(have); i++) {
        int n = snprintf(have + used, sizeof(have) - used, "%s%s", i ? ", " : "", names[i]);

        if (n < 0)
            break;
        used += (size_t)n;
    }
    fprintf(stderr, "efarm: EFARM_IFACE=\"%s\" names none of the %u EFA devices (%s)\n", list,
            nnames, have);
}

/* Mark the candidates and locate them in the topology. */
static int nic_sel_scan(struct nic_sel *sel, const char *const *names, const char *iface_list)
{
    bool all = nic_list_is_empty(iface_list);

    for (unsigned i = 0; i < sel->ndevs; i++) {
        struct nic_dev *dev = &sel->devs[i];
        hwloc_obj_t parent;

        dev->candidate = all || nic_list_has(iface_list, names[i]);
        if (!dev->candidate)
            continue;
        sel->ncandidates++;
        dev->osdev = nic_find_osdev(sel->topo, names[i]);
        parent = dev->osdev ? hwloc_get_non_io_ancestor_obj(sel->topo, dev->osdev) : NULL;
        if (!parent) {
            dev->osdev = NULL;
            continue;
        }
        dev->nodes = nic_bitmap_alloc();
        dev->packages = nic_bitmap_alloc();
        if (!dev->nodes || !dev->packages)
            return -ENOMEM;
        if (nic_reduce(sel->topo, parent->cpuset, dev->nodes, dev->packages) < 0)
            return -ENOMEM;
    }
    return 0;
}

static void nic_sel_destruct(struct nic_sel *sel)
{
    for (unsigned i = 0; sel->devs && i < sel->ndevs; i++) {
        hwloc_bitmap_free(sel->devs[i].nodes);
        hwloc_bitmap_free(sel->devs[i].packages);
    }
    free(sel->devs);
    if (sel->latency)
        hwloc_distances_release(sel->topo, sel->latency);
    hwloc_bitmap_free(sel->bind_nodes);
    hwloc_bitmap_free(sel->bind_packages);
}

static int nic_sel_construct(struct nic_sel *sel, hwloc_topology_t topo, const char *const *names,
                             unsigned nnames, const char *iface_list)
{
    unsigned nr = 1;
    int ret;

    *sel = (struct nic_sel){.topo = topo, .ndevs = nnames};
    sel->devs = efarm_dev_calloc(nnames, sizeof(*sel->devs));
    sel->bind_nodes = nic_bitmap_alloc();
    sel->bind_packages = nic_bitmap_alloc();
    if (!sel->devs || !sel->bind_nodes || !sel->bind_packages) {
        ret = -ENOMEM;
        goto err_destruct;
    }
    /* Only latency: a bandwidth matrix would order the devices backwards. */
    if (hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, &sel->latency,
                                    HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) < 0 ||
        nr == 0)
        sel->latency = NULL;
    ret = nic_sel_scan(sel, names, iface_list);
    if (ret < 0)
        goto err_destruct;
    return 0;

err_destruct:
    nic_sel_destruct(sel);
    return ret;
}

/*
 * NUMA distance from the binding to a device: the largest over every pair of
 * their nodes (a span of nodes is as far as its farthest). -ENOENT when the
 * matrix lacks a pair or either side has no node.
 */
static int nic_distance(const struct nic_sel *sel, const struct nic_dev *dev, uint64_t *dist_p)
{
    uint64_t worst = 0;
    int b, d;

    if (hwloc_bitmap_iszero(sel->bind_nodes) || hwloc_bitmap_iszero(dev->nodes))
        return -ENOENT;
    for (b = hwloc_bitmap_first(sel->bind_nodes); b >= 0;
         b = hwloc_bitmap_next(sel->bind_nodes, b)) {
        hwloc_obj_t from = hwloc_get_numanode_obj_by_os_index(sel->topo, (unsigned)b);

        for (d = hwloc_bitmap_first(dev->nodes); d >= 0; d = hwloc_bitmap_next(dev->nodes, d)) {
            hwloc_obj_t to = hwloc_get_numanode_obj_by_os_index(sel->topo, (unsigned)d);
            hwloc_uint64_t there, back;

            if (!from || !to ||
                hwloc_distances_obj_pair_values(sel->latency, from, to, &there, &back) < 0)
                return -ENOENT;
            if (there > worst)
                worst = there;
        }
    }
    *dist_p = worst;
    return 0;
}

/* Nearness of a candidate to the binding held in sel->bind_*. */
static struct nic_key nic_key_of(const struct nic_sel *sel, const struct nic_dev *dev)
{
    struct nic_key key = {.nearness = EFARM_NIC_ANYWHERE};

    if (!dev->osdev)
        return key;
    if (!hwloc_bitmap_iszero(dev->nodes) && hwloc_bitmap_isincluded(dev->nodes, sel->bind_nodes))
        key.nearness = EFARM_NIC_SAME_NUMA;
    else if (!hwloc_bitmap_iszero(dev->packages) &&
             hwloc_bitmap_isincluded(dev->packages, sel->bind_packages))
        key.nearness = EFARM_NIC_SAME_PACKAGE;
    else if (sel->latency && nic_distance(sel, dev, &key.distance) == 0)
        key.nearness = EFARM_NIC_NUMA_DISTANCE;
    return key;
}

static int nic_key_cmp(struct nic_key a, struct nic_key b)
{
    if (a.nearness != b.nearness)
        return a.nearness < b.nearness ? -1 : 1;
    if (a.nearness == EFARM_NIC_NUMA_DISTANCE && a.distance != b.distance)
        return a.distance < b.distance ? -1 : 1;
    return 0;
}

static bool nic_is_unbound(const struct nic_sel *sel, hwloc_const_cpuset_t binding)
{
    return !binding ||
           hwloc_bitmap_isincluded(hwloc_topology_get_topology_cpuset(sel->topo), binding);
}

/*
 * Fill tied with the candidates nearest to binding and *key_p with their
 * nearness. Leaves the binding reduced in sel->bind_* (empty when unbound).
 */
static int nic_nearest(struct nic_sel *sel, hwloc_const_cpuset_t binding, hwloc_bitmap_t tied,
                       struct nic_key *key_p)
{
    struct nic_key best = {.nearness = EFARM_NIC_UNBOUND};
    bool unbound = nic_is_unbound(sel, binding);

    hwloc_bitmap_zero(tied);
    hwloc_bitmap_zero(sel->bind_nodes);
    hwloc_bitmap_zero(sel->bind_packages);
    if (!unbound && nic_reduce(sel->topo, binding, sel->bind_nodes, sel->bind_packages) < 0)
        return -ENOMEM;
    for (unsigned i = 0; i < sel->ndevs; i++) {
        struct nic_key key = {.nearness = EFARM_NIC_UNBOUND};
        int cmp;

        if (!sel->devs[i].candidate)
            continue;
        if (!unbound)
            key = nic_key_of(sel, &sel->devs[i]);
        cmp = nic_key_cmp(key, best);
        if (cmp < 0) {
            best = key;
            hwloc_bitmap_zero(tied);
        }
        if (cmp <= 0 && hwloc_bitmap_set(tied, i) < 0)
            return -ENOMEM;
    }
    *key_p = best;
    return 0;
}

/* "1st", "2nd", "3rd", "11th", "22nd". */
static const char *nic_ordinal_suffix(unsigned n)
{
    if (n % 100 >= 11 && n % 100 <= 13)
        return "th";
    switch (n % 10) {
    case 1:
        return "st";
    case 2:
        return "nd";
    case 3:
        return "rd";
    default:
        return "th";
    }
}

/* "node 1" or "nodes 0-1" for a bitmap; "node ?" if it is empty. */
static void nic_text_add_set(struct efarm_text *t, const char *noun, hwloc_const_bitmap_t set)
{
    char list[64] = "?";

    if (!hwloc_bitmap_iszero(set))
        hwloc_bitmap_list_snprintf(list, sizeof(list), set);
    efarm_text_add(t, "%s%s %s", noun, hwloc_bitmap_weight(set) > 1 ? "s" : "", list);
}

/* Why the tied devices were the nearest, for the chosen one. */
static void nic_text_add_why(struct efarm_text *t, const struct nic_sel *sel,
                             const struct nic_dev *dev, struct nic_key key)
{
    bool any_located = false;

    for (unsigned i = 0; i < sel->ndevs; i++)
        any_located |= sel->devs[i].candidate && sel->devs[i].osdev;
    switch (key.nearness) {
    case EFARM_NIC_SAME_NUMA:
        efarm_text_add(t, "same ");
        nic_text_add_set(t, "NUMA node", dev->nodes);
        efarm_text_add(t, " as the binding");
        break;
    case EFARM_NIC_SAME_PACKAGE:
        efarm_text_add(t, "same ");
        nic_text_add_set(t, "package", dev->packages);
        efarm_text_add(t, " as the binding (no NIC on its NUMA node)");
        break;
    case EFARM_NIC_NUMA_DISTANCE:
        efarm_text_add(t, "NUMA distance %llu from the binding's ",
                       (unsigned long long)key.distance);
        nic_text_add_set(t, "NUMA node", sel->bind_nodes);
        efarm_text_add(t, " to ");
        nic_text_add_set(t, "node", dev->nodes);
        break;
    case EFARM_NIC_ANYWHERE:
        if (!any_located)
            efarm_text_add(t, "no NIC has PCI locality");
        else
            efarm_text_add(t, "no NIC on the binding's NUMA node or package%s%s",
                           sel->latency ? "" : " and no NUMA distances",
                           dev->osdev ? "" : "; this one has no PCI locality");
        break;
    case EFARM_NIC_UNBOUND:
        efarm_text_add(t, "process not bound to CPUs");
        break;
    }
}

/*
 * Count the local ranks whose tied set equals mine, and my position among
 * them. Clobbers sel->bind_*.
 */
static int nic_sharing(struct nic_sel *sel, const hwloc_const_cpuset_t *local_bindings,
                       unsigned nlocal, unsigned my_local_rank, hwloc_const_bitmap_t mine,
                       unsigned *nsharing_p, unsigned *position_p)
{
    hwloc_bitmap_t other = nic_bitmap_alloc();
    unsigned nsharing = 0, position = 0;
    int ret = 0;

    if (!other)
        return -ENOMEM;
    for (unsigned j = 0; j < nlocal; j++) {
        struct nic_key key;

        if (j == my_local_rank) {
            position = nsharing++;
            continue;
        }
        ret = nic_nearest(sel, local_bindings[j], other, &key);
        if (ret < 0)
            break;
        nsharing += hwloc_bitmap_isequal(other, mine);
    }
    hwloc_bitmap_free(other);
    if (ret == 0) {
        *nsharing_p = nsharing;
        *position_p = position;
    }
    return ret;
}

static int nic_check_args(hwloc_topology_t topo, const char *const *names, unsigned nnames,
                          const hwloc_const_cpuset_t *local_bindings, unsigned nlocal,
                          unsigned my_local_rank, const struct efarm_nic_choice *choice_p)
{
    if (!topo || (!names && nnames) || !local_bindings || my_local_rank >= nlocal || !choice_p)
        return -EINVAL;
    for (unsigned i = 0; i < nnames; i++) {
        if (!names[i])
            return -EINVAL;
    }
    for (unsigned j = 0; j < nlocal; j++) {
        if (local_bindings[j] && hwloc_bitmap_iszero(local_bindings[j]))
            return -EINVAL;
    }
    if (nnames == 0) {
        fprintf(stderr, "efarm: no EFA device to choose from\n");
        return -ENODEV;
    }
    return 0;
}

int efarm_nic_select(hwloc_topology_t topo, const char *const *names, unsigned nnames,
                     const hwloc_const_cpuset_t *local_bindings, unsigned nlocal,
                     unsigned my_local_rank, const char *iface_list,
                     struct efarm_nic_choice *choice_p)
{
    struct efarm_nic_choice c = {0};
    struct efarm_text reason = {c.reason, sizeof(c.reason), 0};
    struct nic_sel sel;
    struct nic_key key;
    hwloc_bitmap_t mine;
    int ret, chosen;

    ret = nic_check_args(topo, names, nnames, local_bindings, nlocal, my_local_rank, choice_p);
    if (ret < 0)
        return ret;
    ret = nic_sel_construct(&sel, topo, names, nnames, iface_list);
    if (ret < 0)
        return ret;
    if (sel.ncandidates == 0) {
        nic_list_report_none(iface_list, names, nnames);
        ret = -ENODEV;
        goto out_destruct;
    }
    if (my_local_rank == 0 && !nic_list_is_empty(iface_list))
        nic_list_warn_unknown(iface_list, names, nnames);
    mine = nic_bitmap_alloc();
    if (!mine) {
        ret = -ENOMEM;
        goto out_destruct;
    }
    ret = nic_nearest(&sel, local_bindings[my_local_rank], mine, &key);
    if (ret == 0)
        ret = nic_sharing(&sel, local_bindings, nlocal, my_local_rank, mine, &c.nsharing,
                          &c.position);
    if (ret < 0)
        goto out_free_mine;
    c.nearness = key.nearness;
    c.ntied = (unsigned)hwloc_bitmap_weight(mine);
    chosen = hwloc_bitmap_first(mine);
    for (unsigned k = 0; k < c.position % c.ntied; k++)
        chosen = hwloc_bitmap_next(mine, chosen);
    c.index = (unsigned)chosen;
    {
        int t = chosen;

        /* The rails: the tied set in its order, wrapping, from the chosen device. */
        for (c.nrails = 0; c.nrails < c.ntied && c.nrails < EFARM_NIC_RAILS_MAX; c.nrails++) {
            c.rails[c.nrails] = (unsigned)t;
            t = hwloc_bitmap_next(mine, t);
            if (t < 0)
                t = hwloc_bitmap_first(mine);
        }
    }

    /* nic_sharing() clobbered the reduced binding, which the reason describes. */
    ret = nic_nearest(&sel, local_bindings[my_local_rank], mine, &key);
    if (ret < 0)
        goto out_free_mine;
    nic_text_add_why(&reason, &sel, &sel.devs[c.index], key);
    efarm_text_add(&reason, "; %u%s of %u rank%s sharing %u equally near NIC%s%s", c.position + 1,
                   nic_ordinal_suffix(c.position + 1), c.nsharing, c.nsharing > 1 ? "s" : "",
                   c.ntied, c.ntied > 1 ? "s" : "",
                   sel.ncandidates < nnames ? " (EFARM_IFACE)" : "");
    c.ndevices = nnames;
    *choice_p = c;

out_free_mine:
    hwloc_bitmap_free(mine);
out_destruct:
    nic_sel_destruct(&sel);
    return ret;
}

void efarm_nic_choice_print(FILE *out, unsigned local_rank, const char *const *names,
                            const struct efarm_nic_choice *c)
{
    fprintf(out, "rank %u -> %s -> %s\n", local_rank, names[c->index], c->reason);
}
