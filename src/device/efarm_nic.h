/*
 * NIC selection: which EFA device each MPI rank on a node uses.
 *
 * Every local rank calls efarm_nic_select() with the same inputs (the node's
 * topology, the device names, the CPU bindings of all local ranks) and its own
 * local rank; each computes every rank's choice the same way, so the ranks
 * spread over the devices without talking to each other.
 *
 * Nearness. A device is located through hwloc: the OpenFabrics OS device of
 * the same name (normally under its PCI device); its locality is the cpuset
 * of its first non-I/O ancestor. For a process bound to the cpuset B, a
 * device is, best first:
 *   - EFARM_NIC_SAME_NUMA: the NUMA nodes its locality touches are all among
 *     the NUMA nodes B touches;
 *   - EFARM_NIC_SAME_PACKAGE: likewise for packages;
 *   - EFARM_NIC_NUMA_DISTANCE: the topology has a NUMA latency matrix, which
 *     gives the distance from B's NUMA node to the device's (the largest
 *     value when either spans several nodes); a smaller distance is nearer;
 *   - EFARM_NIC_ANYWHERE: anything else. Devices that are not in the topology
 *     (efasim's, or a topology loaded without I/O objects) have no locality
 *     and are always here, so they tie with remote devices when there is no
 *     matrix and only lose to devices that share B's NUMA node or package or
 *     have a known distance. If no device has locality, all are equal.
 * A process that is not bound (no cpuset, or one that covers the whole
 * topology) finds every device equally near: EFARM_NIC_UNBOUND.
 *
 * Balancing. The devices tied for nearest form the rank's tied set. The local
 * ranks whose tied set is the same, ordered by local rank, share those
 * devices round-robin: the k-th of them (from 0) gets the (k mod n)-th of the
 * n tied devices, in the order of the names array (efarm_dev_choose_nic passes the
 * devices in natural name order, not rdma-core's). The position is among the
 * ranks of the same group, not the global or local rank, so two sockets with
 * interleaved ranks each spread their ranks over their own devices.
 *
 * Override. An EFARM_IFACE value (like libfabric's FI_EFA_IFACE) is a comma-
 * separated list of device names; only those devices are candidates. NULL or
 * an empty list means every device; names matching no device are ignored with
 * a warning (from local rank 0) as long as one name matches.
 */
#ifndef EFARM_NIC_H
#define EFARM_NIC_H

#include <stdio.h>

#include <hwloc.h>

#include "efarm_device.h" /* struct efarm_nic_choice */

/*
 * Choose the device for local rank my_local_rank.
 *
 * topo: the node's topology, loaded with OS devices kept, e.g. after
 *   hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
 *   without them every device has no locality and the ranks are only balanced.
 * names[nnames]: the verbs names of the devices ("rdmap16s27", "efa_0").
 * local_bindings[nlocal]: the CPU binding of each local rank, indexed by
 *   local rank; NULL for a rank that is not bound. Not modified.
 * iface_list: EFARM_IFACE's value, or NULL.
 *
 * Returns 0 and fills *choice_p; -EINVAL for a NULL argument, an empty
 * binding or my_local_rank >= nlocal; -ENODEV, with the reason printed on
 * stderr, when nnames is 0 or iface_list names none of the devices; -ENOMEM.
 * *choice_p is written only on success. Allocates temporaries in proportion
 * to nnames and frees them before returning; keeps no state.
 */
int efarm_nic_select(hwloc_topology_t topo, const char *const *names, unsigned nnames,
                     const hwloc_const_cpuset_t *local_bindings, unsigned nlocal,
                     unsigned my_local_rank, const char *iface_list,
                     struct efarm_nic_choice *choice_p);

/* Print "rank R -> NAME -> REASON" and a newline to out (for EFARM_NIC_VERBOSE). */
void efarm_nic_choice_print(FILE *out, unsigned local_rank, const char *const *names,
                            const struct efarm_nic_choice *c);

#endif /* EFARM_NIC_H */
