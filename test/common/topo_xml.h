/*
 * Synthetic hwloc topologies for the NIC-selection tests: a machine of
 * packages x NUMA nodes x cores (one PU each) with EFA devices placed as PCI
 * devices, each with an OpenFabrics OS device of the device's name (or a
 * network OS device), under a package, a NUMA node's group or the machine;
 * optionally a NUMA latency matrix. Written as hwloc 2 XML, for
 * hwloc_topology_set_xmlbuffer or a file that HWLOC_XMLFILE or
 * EFARM_TOPOLOGY names. Used by the unit tests (test_nic_select.c) and by
 * efarm-topo-xml, which writes the files of the MPI placement tests.
 */
#ifndef EFARM_TOPO_XML_H
#define EFARM_TOPO_XML_H

#include <stdbool.h>
#include <stdint.h>

/* Where a NIC sits. */
struct nic_at {
    const char *name;
    int package; /* -1: attached to the machine */
    int numa;    /* NUMA node within the package; -1: attached to the package */
    bool netdev; /* a network interface of that name, not an RDMA device */
};
/* clang-format off */
#define NIC(name, package, numa)    {name, package, numa, false}
#define NETDEV(name, package, numa) {name, package, numa, true}
/* clang-format on */

struct topo_spec {
    unsigned packages;
    unsigned numas; /* NUMA nodes per package */
    unsigned cores; /* cores per NUMA node */
    const struct nic_at *nics;
    unsigned nnics;
    const uint64_t *latency; /* NUMA latency matrix by OS index, row-major, or NULL */
    /*
     * PU numbering. false: in order, package by package (PU 0.. of package 0
     * first). true: round-robin over the packages, as many two-socket machines
     * number them (PU 0 on package 0, PU 1 on package 1, PU 2 on package 0...).
     */
    bool interleave;
};

/* The OS index of core `core` of NUMA node `numa` of package `package`. */
unsigned topo_pu(const struct topo_spec *s, unsigned package, unsigned numa, unsigned core);

/* The NUMA node a NIC is attached under, or -1 for its package (or the machine). */
int topo_nic_numa(const struct topo_spec *s, const struct nic_at *nic);

/* The machine as hwloc 2 XML (malloc'd, the caller frees), or NULL when out of memory. */
char *topo_xml(const struct topo_spec *s);

#endif /* EFARM_TOPO_XML_H */
