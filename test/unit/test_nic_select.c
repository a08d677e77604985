/*
 * NIC selection on synthetic topologies: the hwloc XML for each machine is
 * written here (packages, NUMA nodes, cores, and EFA devices as PCI devices
 * with an OpenFabrics OS device under the package, a NUMA node's group or the
 * machine), loaded with I/O objects kept, checked, and every local rank's
 * choice is asserted.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <hwloc.h>

#include "efarm_errno.h"
#include "efarm_nic.h"
#include "efarm_test.h"
#include "topo_xml.h"

#define TEST_MAX_RANKS 64
#define TEST_MAX_NICS  32

/* The cpuset a NIC's non-I/O ancestor should have. */
static void nic_expected_locality(hwloc_topology_t topo, const struct topo_spec *s,
                                  const struct nic_at *nic, hwloc_bitmap_t cpus)
{
    int numa = topo_nic_numa(s, nic);

    if (nic->package < 0) {
        hwloc_bitmap_copy(cpus, hwloc_topology_get_topology_cpuset(topo));
    } else if (numa < 0) {
        hwloc_bitmap_copy(
            cpus, hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, (unsigned)nic->package)->cpuset);
    } else {
        unsigned os = (unsigned)nic->package * s->numas + (unsigned)numa;

        hwloc_bitmap_copy(cpus, hwloc_get_numanode_obj_by_os_index(topo, os)->cpuset);
    }
}

/* Check that the loaded topology is the machine described, its NICs where they were put. */
static void topo_check(hwloc_topology_t topo, const struct topo_spec *s)
{
    hwloc_bitmap_t want = hwloc_bitmap_alloc();
    unsigned nosdev = 0, nrdma = 0;
    hwloc_obj_t obj = NULL;

    EXPECT_EQ(hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE), s->packages);
    EXPECT_EQ(hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE), s->packages * s->numas);
    EXPECT_EQ(hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU), s->packages * s->numas * s->cores);
    while ((obj = hwloc_get_next_osdev(topo, obj)) != NULL) {
        nosdev++;
        nrdma += obj->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS;
    }
    EXPECT_EQ(nosdev, s->nnics);
    for (unsigned i = 0; i < s->nnics; i++) {
        efarm_test_context("topology NIC %s", s->nics[i].name);
        nrdma -= !s->nics[i].netdev;
        obj = NULL;
        while ((obj = hwloc_get_next_osdev(topo, obj)) != NULL &&
               (strcmp(obj->name, s->nics[i].name) ||
                obj->attr->osdev.type !=
                    (s->nics[i].netdev ? HWLOC_OBJ_OSDEV_NETWORK : HWLOC_OBJ_OSDEV_OPENFABRICS)))
            ;
        EXPECT_TRUE(obj != NULL);
        EXPECT_EQ(obj->parent->type, HWLOC_OBJ_PCI_DEVICE);
        nic_expected_locality(topo, s, &s->nics[i], want);
        EXPECT_TRUE(hwloc_bitmap_isequal(hwloc_get_non_io_ancestor_obj(topo, obj)->cpuset, want));
    }
    EXPECT_EQ(nrdma, 0);
    efarm_test_context("%s", "");
    if (s->latency) {
        struct hwloc_distances_s *d;
        unsigned nr = 1;

        EXPECT_EQ(hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, &d, 0, 0), 0);
        EXPECT_EQ(nr, 1);
        EXPECT_EQ(d->nbobjs, s->packages * s->numas);
        EXPECT_EQ(d->values[1], s->latency[1]);
        hwloc_distances_release(topo, d);
    }
    hwloc_bitmap_free(want);
}

static hwloc_topology_t topo_load(const struct topo_spec *s)
{
    char *xml = topo_xml(s);
    hwloc_topology_t topo;

    EXPECT_TRUE(xml != NULL);
    EXPECT_EQ(hwloc_topology_init(&topo), 0);
    EXPECT_EQ(hwloc_topology_set_xmlbuffer(topo, xml, (int)strlen(xml) + 1), 0);
    EXPECT_EQ(hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT), 0);
    EXPECT_EQ(hwloc_topology_load(topo), 0);
    free(xml);
    topo_check(topo, s);
    return topo;
}

/* The CPU bindings of a node's local ranks, by local rank. */
struct ranks {
    hwloc_const_cpuset_t bind[TEST_MAX_RANKS];
    hwloc_bitmap_t owned[TEST_MAX_RANKS];
    unsigned n;
};

static void ranks_add(struct ranks *r, hwloc_const_cpuset_t binding)
{
    EXPECT_TRUE(r->n < TEST_MAX_RANKS);
    r->bind[r->n++] = binding;
}

/* Bound to one core (PU). */
static void ranks_add_pu(struct ranks *r, unsigned pu)
{
    hwloc_bitmap_t b = hwloc_bitmap_alloc();

    hwloc_bitmap_only(b, pu);
    r->owned[r->n] = b;
    ranks_add(r, b);
}

static void ranks_add_package(struct ranks *r, hwloc_topology_t topo, unsigned package)
{
    ranks_add(r, hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, package)->cpuset);
}

static void ranks_free(struct ranks *r)
{
    for (unsigned i = 0; i < r->n; i++)
        hwloc_bitmap_free(r->owned[i]);
}

static struct efarm_nic_choice select_for(hwloc_topology_t topo, const char *const *names,
                                          unsigned nnames, const struct ranks *r, unsigned me,
                                          const char *iface)
{
    struct efarm_nic_choice c;

    efarm_test_context("local rank %u", me);
    EXPECT_RET(efarm_nic_select(topo, names, nnames, r->bind, r->n, me, iface, &c), 0);
    EXPECT_TRUE(c.index < nnames);
    EXPECT_TRUE(c.position < c.nsharing && c.ntied >= 1);
    return c;
}

/* Every local rank's choice, and print them when EFARM_TEST_VERBOSE is set. */
static void expect_choices(hwloc_topology_t topo, const char *const *names, unsigned nnames,
                           const struct ranks *r, const char *iface, const unsigned *expected)
{
    for (unsigned me = 0; me < r->n; me++) {
        struct efarm_nic_choice c = select_for(topo, names, nnames, r, me, iface);

        if (getenv("EFARM_TEST_VERBOSE"))
            efarm_nic_choice_print(stdout, me, names, &c);
        efarm_test_context("local rank %u chose %s: %s", me, names[c.index], c.reason);
        EXPECT_EQ(c.index, expected[me]);
    }
    efarm_test_context("%s", "");
}

/* Two sockets, four cores each, two NICs per socket; names deliberately interleaved. */
static const struct nic_at g_two_by_two[] = {
    NIC("rdmap16s27", 0, 0),
    NIC("rdmap144s27", 1, 0),
    NIC("rdmap17s27", 0, 0),
    NIC("rdmap145s27", 1, 0),
};
static const char *const g_two_by_two_names[] = {"rdmap16s27", "rdmap144s27", "rdmap17s27",
                                                 "rdmap145s27"};
static const uint64_t g_two_latency[] = {10, 21, 21, 10};

EFARM_TEST(nic_xml_topology_has_os_devices)
{
    /* NICs on a NUMA node's group, on a package and on the machine. */
    static const struct nic_at nics[] = {NIC("rdmap0s1", 0, 1), NIC("rdmap0s2", 0, -1),
                                         NIC("rdmap0s3", -1, -1), NIC("efa_3", 1, 0)};
    /* clang-format off */
    static const uint64_t lat[] = {10, 11, 21, 21,
                                   11, 10, 21, 21,
                                   21, 21, 10, 11,
                                   21, 21, 11, 10};
    /* clang-format on */
    struct topo_spec s = {2, 2, 2, nics, 4, lat, false};
    hwloc_topology_t topo = topo_load(&s);
    char *xml = topo_xml(&s);
    hwloc_topology_t bare;

    hwloc_topology_destroy(topo);

    /* Without I/O objects kept, the same XML has no OS devices (the caller must keep them). */
    EXPECT_EQ(hwloc_topology_init(&bare), 0);
    EXPECT_EQ(hwloc_topology_set_xmlbuffer(bare, xml, (int)strlen(xml) + 1), 0);
    EXPECT_EQ(hwloc_topology_load(bare), 0);
    EXPECT_TRUE(hwloc_get_next_osdev(bare, NULL) == NULL);
    hwloc_topology_destroy(bare);
    free(xml);
}

EFARM_TEST(nic_one_socket_one_nic)
{
    static const struct nic_at nics[] = {NIC("rdmap0s6", 0, 0)};
    static const char *const names[] = {"rdmap0s6"};
    static const unsigned expected[] = {0, 0, 0, 0, 0, 0};
    struct topo_spec s = {1, 1, 4, nics, 1, NULL, false};
    hwloc_topology_t topo = topo_load(&s);
    struct ranks r = {0};
    struct efarm_nic_choice c;

    for (unsigned pu = 0; pu < 4; pu++)
        ranks_add_pu(&r, pu);
    ranks_add_package(&r, topo, 0);
    ranks_add(&r, NULL);
    expect_choices(topo, names, 1, &r, NULL, expected);

    c = select_for(topo, names, 1, &r, 2, NULL);
    EXPECT_EQ(c.nearness, EFARM_NIC_SAME_NUMA);
    EXPECT_EQ(c.ntied, 1);
    EXPECT_EQ(c.nsharing, 6); /* bound and unbound ranks alike have only this NIC */
    EXPECT_EQ(c.position, 2);
    c = select_for(topo, names, 1, &r, 5, NULL);
    EXPECT_EQ(c.nearness, EFARM_NIC_UNBOUND);
    ranks_free(&r);
    hwloc_topology_destroy(topo);
}

/* Eight ranks, one per core: each socket's ranks alternate between that socket's NICs. */
static void two_by_two_core_bound(const uint64_t *latency)
{
    static const unsigned expected[] = {0, 2, 0, 2, 1, 3, 1, 3};
    struct topo_spec s = {2, 1, 4, g_two_by_two, 4, latency, false};
    hwloc_topology_t topo = topo_load(&s);
    struct ranks r = {0};
    struct efarm_nic_choice c;

    for (unsigned pu = 0; pu < 8; pu++)
        ranks_add_pu(&r, pu);
    expect_choices(topo, g_two_by_two_names, 4, &r, NULL, expected);
    c = select_for(topo, g_two_by_two_names, 4, &r, 6, NULL);
    EXPECT_EQ(c.nearness, EFARM_NIC_SAME_NUMA);
    EXPECT_EQ(c.ntied, 2);
    EXPECT_EQ(c.nsharing, 4);
    EXPECT_EQ(c.position, 2);
    ranks_free(&r);
    hwloc_topology_destroy(topo);
}

EFARM_TEST(nic_two_sockets_four_nics_core_bound)
{
    two_by_two_core_bound(NULL);
}

EFARM_TEST(nic_two_sockets_four_nics_core_bound_with_distances)
{
    /* The matrix only orders NICs that share neither NUMA node nor package. */
    two_by_two_core_bound(g_two_latency);
}

/*
 * The same machine with its PUs numbered round-robin over the sockets (PU 0
 * on socket 0, PU 1 on socket 1, ...), as many two-socket machines number
 * them: ranks bound to PUs 0..7 alternate sockets, and each socket's ranks
 * alternate between its two NICs.
 */
EFARM_TEST(nic_two_sockets_four_nics_interleaved_pus)
{
    static const unsigned expected[] = {0, 1, 2, 3, 0, 1, 2, 3};
    struct topo_spec s = {2, 1, 4, g_two_by_two, 4, NULL, true};
    hwloc_topology_t topo = topo_load(&s);
    struct ranks r = {0};

    EXPECT_EQ(topo_pu(&s, 1, 0, 0), 1);
    EXPECT_TRUE(hwloc_bitmap_isset(hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, 1)->cpuset, 1));
    for (unsigned pu = 0; pu < 8; pu++)
        ranks_add_pu(&r, pu);
    expect_choices(topo, g_two_by_two_names, 4, &r, NULL, expected);
    ranks_free(&r);
    hwloc_topology_destroy(topo);
}

EFARM_TEST(nic_socket_bound_balanced_by_position_not_rank)
{
    /*
     * Ranks 0, 2, 4 are bound to socket 0 and 1, 3, 5 to socket 1: each
     * socket's ranks take its NICs in turn by their place among that socket's
     * ranks (0th, 1st, 2nd), which local rank parity (all even on socket 0)
     * would get wrong.
     */
    static const unsigned expected[] = {0, 1, 2, 3, 0, 1};
    struct topo_spec s = {2, 1, 4, g_two_by_two, 4, NULL, false};
    hwloc_topology_t topo = topo_load(&s);
    struct ranks r = {0};
    struct efarm_nic_choice c;

    for (unsigned i = 0; i < 6; i++)
        ranks_add_package(&r, topo, i % 2);
    expect_choices(topo, g_two_by_two_names, 4, &r, NULL, expected);
    c = select_for(topo, g_two_by_two_names, 4, &r, 4, NULL);
    EXPECT_EQ(c.position, 2);
    EXPECT_EQ(c.nsharing, 3);
    ranks_free(&r);
    hwloc_topology_destroy(topo);
}

EFARM_TEST(nic_unbound_ranks_share_all_nics)
{
    /*
     * Unbound (no cpuset, or the whole machine) ranks spread over all four
     * NICs among themselves; bound ranks keep to their socket's.
     */
    static const unsigned expected[] = {0, 0, 1, 1, 2, 2, 3, 0};
    struct topo_spec s = {2, 1, 4, g_two_by_two, 4, NULL, false};
    hwloc_topology_t topo = topo_load(&s);
    struct ranks r = {0};
    struct efarm_nic_choice c;

    ranks_add_pu(&r, 0);                                     /* socket 0, 1st */
    ranks_add(&r, NULL);                                     /* unbound, 1st */
    ranks_add(&r, hwloc_topology_get_topology_cpuset(topo)); /* unbound, 2nd */
    ranks_add_pu(&r, 4);                                     /* socket 1, 1st */
    ranks_add(&r, NULL);                                     /* unbound, 3rd */
    ranks_add_pu(&r, 1);                                     /* socket 0, 2nd */
    ranks_add(&r, hwloc_topology_get_complete_cpuset(topo)); /* unbound, 4th */
    ranks_add(&r, NULL);                                     /* unbound, 5th */
    expect_choices(topo, g_two_by_two_names, 4, &r, NULL, expected);
    c = select_for(topo, g_two_by_two_names, 4, &r, 2, NULL);
    EXPECT_EQ(c.nearness, EFARM_NIC_UNBOUND);
    c = select_for(topo, g_two_by_two_names, 4, &r, 4, NULL);
    EXPECT_EQ(c.nearness, EFARM_NIC_UNBOUND);
    EXPECT_EQ(c.ntied, 4);
    EXPECT_EQ(c.nsharing, 5);
    EXPECT_EQ(c.position, 2);
    /* Its rails: the four NICs from its own on, wrapping. */
    EXPECT_EQ(c.nrails, 4);
    EXPECT_EQ(c.rails[0], 2);
    EXPECT_EQ(c.rails[1], 3);
    EXPECT_EQ(c.rails[2], 0);
    EXPECT_EQ(c.rails[3], 1);
    /*
     * A socket-0 rank: its socket's two NICs (0 and 2); the second socket-0 rank
     * starts at the other.
     */
    c = select_for(topo, g_two_by_two_names, 4, &r, 0, NULL);
    EXPECT_EQ(c.nrails, 2);
    EXPECT_EQ(c.rails[0], 0);
    EXPECT_EQ(c.rails[1], 2);
    c = select_for(topo, g_two_by_two_names, 4, &r, 5, NULL);
    EXPECT_EQ(c.nrails, 2);
    EXPECT_EQ(c.rails[0], 2);
    EXPECT_EQ(c.rails[1], 0);
    ranks_free(&r);
    hwloc_topology_destroy(topo);
}

/* Two sockets of 24 cores and 16 NICs each; NIC i is on socket i % 2. */
struct big_node {
    char names_buf[TEST_MAX_NICS][16];
    const char *names[TEST_MAX_NICS];
    struct nic_at nics[TEST_MAX_NICS];
    hwloc_topology_t topo;
};

static void big_node_load(struct big_node *b)
{
    struct topo_spec s = {2, 1, 24, b->nics, TEST_MAX_NICS, g_two_latency, false};

    for (unsigned i = 0; i < TEST_MAX_NICS; i++) {
        snprintf(b->names_buf[i], sizeof(b->names_buf[i]), "rdmap%us27", 16 + i);
        b->names[i] = b->names_buf[i];
        b->nics[i] = (struct nic_at)NIC(b->names[i], (int)(i % 2), 0);
    }
    b->topo = topo_load(&s);
}

EFARM_TEST(nic_two_sockets_32_nics_core_bound)
{
    struct big_node b;
    unsigned expected[48];
    struct ranks r = {0};

    big_node_load(&b);
    /* Rank i on core i is the (i % 24)-th on socket i / 24: that socket's (i % 24) % 16-th NIC. */
    for (unsigned i = 0; i < 48; i++) {
        ranks_add_pu(&r, i);
        expected[i] = 2 * ((i % 24) % 16) + i / 24;
    }
    expect_choices(b.topo, b.names, TEST_MAX_NICS, &r, NULL, expected);
    {
        /* Rank 15 (socket 0's NIC 30): four of its socket's 16 NICs from there, wrapping. */
        struct efarm_nic_choice c = select_for(b.topo, b.names, TEST_MAX_NICS, &r, 15, NULL);

        EXPECT_EQ(c.index, 30);
        EXPECT_EQ(c.nrails, EFARM_NIC_RAILS_MAX);
        EXPECT_EQ(c.rails[0], 30);
        EXPECT_EQ(c.rails[1], 0);
        EXPECT_EQ(c.rails[2], 2);
        EXPECT_EQ(c.rails[3], 4);
    }
    ranks_free(&r);
    hwloc_topology_destroy(b.topo);
}

EFARM_TEST(nic_two_sockets_32_nics_socket_bound_and_unbound)
{
    struct big_node b;
    unsigned expected[TEST_MAX_RANKS];
    struct ranks r = {0};

    big_node_load(&b);
    /* Ranks alternate sockets: rank i is the (i / 2)-th of socket i % 2. */
    for (unsigned i = 0; i < 40; i++) {
        ranks_add_package(&r, b.topo, i % 2);
        expected[i] = 2 * ((i / 2) % 16) + i % 2;
    }
    /* Then 20 unbound ranks: all 32 NICs in names order. */
    for (unsigned i = 0; i < 20; i++) {
        ranks_add(&r, NULL);
        expected[40 + i] = i;
    }
    expect_choices(b.topo, b.names, TEST_MAX_NICS, &r, NULL, expected);
    ranks_free(&r);
    hwloc_topology_destroy(b.topo);
}

EFARM_TEST(nic_numa_distance_orders_remote_nics)
{
    /*
     * Four sockets of two cores, NICs on sockets 1 and 2. Socket 0 is nearer
     * socket 2, socket 3 nearer socket 1. A third NIC
     * hangs off the machine as a whole: it is as far as its farthest node
     * (30), so it never wins.
     */
    static const struct nic_at nics[] = {NIC("rdmap1s0", 1, 0), NIC("rdmap2s0", 2, 0),
                                         NIC("rdmap0s0", -1, -1)};
    static const char *const names[] = {"rdmap1s0", "rdmap2s0", "rdmap0s0"};
    /* clang-format off */
    static const uint64_t lat[] = {10, 30, 20, 30,
                                   30, 10, 20, 20,
                                   20, 20, 10, 30,
                                   30, 20, 30, 10};
    /* clang-format on */
    static const unsigned expected[] = {1, 1, 0, 0, 1, 1, 0, 0};
    struct topo_spec s = {4, 1, 2, nics, 3, lat, false};
    hwloc_topology_t topo = topo_load(&s);
    struct ranks r = {0};
    struct efarm_nic_choice c;

    for (unsigned pu = 0; pu < 8; pu++)
        ranks_add_pu(&r, pu);
    expect_choices(topo, names, 3, &r, NULL, expected);
    c = select_for(topo, names, 3, &r, 1, NULL);
    EXPECT_EQ(c.nearness, EFARM_NIC_NUMA_DISTANCE);
    EXPECT_EQ(c.ntied, 1);
    EXPECT_EQ(c.nsharing, 4); /* with socket 2's ranks, which have the same single NIC */
    EXPECT_EQ(c.position, 1);
    EXPECT_TRUE(strstr(c.reason, "NUMA distance 20 from the binding's NUMA node 0 to node 2"));
    ranks_free(&r);
    hwloc_topology_destroy(topo);
}

/* Give a loaded topology a NUMA x NUMA matrix of the given kind. */
static void add_numa_matrix(hwloc_topology_t topo, unsigned long kind, const uint64_t *values)
{
    hwloc_obj_t nodes[8];
    hwloc_uint64_t v[64];
    unsigned n = (unsigned)hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    hwloc_distances_add_handle_t h;

    EXPECT_TRUE(n <= 8);
    for (unsigned i = 0; i < n; i++)
        nodes[i] = hwloc_get_numanode_obj_by_os_index(topo, i);
    for (unsigned i = 0; i < n * n; i++)
        v[i] = values[i];
    h = hwloc_distances_add_create(topo, "test", kind, 0);
    EXPECT_TRUE(h != NULL);
    EXPECT_EQ(hwloc_distances_add_values(topo, h, n, nodes, v, 0), 0);
    EXPECT_EQ(hwloc_distances_add_commit(topo, h, 0), 0);
}

EFARM_TEST(nic_remote_nics_equal_without_distances)
{
    /*
     * The machine above without a matrix (nor the machine-wide NIC): sockets
     * 0 and 3 see both NICs as equally far and
     * share them as one group of four ranks (0, 1, 6, 7).
     */
    static const struct nic_at nics[] = {NIC("rdmap1s0", 1, 0), NIC("rdmap2s0", 2, 0)};
    static const char *const names[] = {"rdmap1s0", "rdmap2s0"};
    /* clang-format off */
    static const uint64_t bandwidth[] = {100,  10,  50,  50,
                                          10, 100,  50,  50,
                                          50,  50, 100,  10,
                                          10,  50,  10, 100};
    /* clang-format on */
    static const unsigned expected[] = {0, 1, 0, 0, 1, 1, 0, 1};
    struct topo_spec s = {4, 1, 2, nics, 2, NULL, false};
    hwloc_topology_t topo = topo_load(&s);
    struct ranks r = {0};
    struct efarm_nic_choice c;

    for (unsigned pu = 0; pu < 8; pu++)
        ranks_add_pu(&r, pu);
    expect_choices(topo, names, 2, &r, NULL, expected);
    c = select_for(topo, names, 2, &r, 6, NULL);
    EXPECT_EQ(c.nearness, EFARM_NIC_ANYWHERE);
    EXPECT_EQ(c.nsharing, 4);
    EXPECT_EQ(c.position, 2);

    /* A bandwidth matrix is no latency matrix (read as one, it sends socket 0 to rdmap1s0). */
    add_numa_matrix(topo, HWLOC_DISTANCES_KIND_FROM_USER | HWLOC_DISTANCES_KIND_MEANS_BANDWIDTH,
                    bandwidth);
    expect_choices(topo, names, 2, &r, NULL, expected);
    ranks_free(&r);
    hwloc_topology_destroy(topo);
}

EFARM_TEST(nic_numa_node_then_package)
{
    /*
     * Two sockets, two NUMA nodes (0-1, 2-3) of two cores each. NICs: n01 on
     * NUMA node 1, p0 on socket 0 as a whole, n10 on NUMA node 2.
     */
    static const struct nic_at nics[] = {NIC("n01", 0, 1), NIC("p0", 0, -1), NIC("n10", 1, 0)};
    static const char *const names[] = {"n01", "p0", "n10"};
    static const unsigned expected[] = {0, 0, 2, 2, 1, 0};
    struct topo_spec s = {2, 2, 2, nics, 3, NULL, false};
    hwloc_topology_t topo = topo_load(&s);
    struct ranks r = {0};
    struct efarm_nic_choice c;

    ranks_add_pu(&r, 0);            /* node 0: n01 and p0 share its package, n01 first */
    ranks_add_pu(&r, 2);            /* node 1: n01 */
    ranks_add_pu(&r, 4);            /* node 2: n10 */
    ranks_add_pu(&r, 6);            /* node 3: n10 shares its package */
    ranks_add_pu(&r, 1);            /* node 0 again: p0 */
    ranks_add_package(&r, topo, 0); /* nodes 0-1: n01 and p0 on its nodes, 3rd to share them */
    expect_choices(topo, names, 3, &r, NULL, expected);

    c = select_for(topo, names, 3, &r, 4, NULL);
    EXPECT_EQ(c.nearness, EFARM_NIC_SAME_PACKAGE);
    EXPECT_EQ(c.ntied, 2);
    EXPECT_TRUE(strstr(c.reason, "same package 0 as the binding"));
    c = select_for(topo, names, 3, &r, 3, NULL);
    EXPECT_EQ(c.nearness, EFARM_NIC_SAME_PACKAGE);
    EXPECT_EQ(c.ntied, 1);
    c = select_for(topo, names, 3, &r, 1, NULL);
    EXPECT_EQ(c.nearness, EFARM_NIC_SAME_NUMA);
    EXPECT_TRUE(strstr(c.reason, "same NUMA node 1 as the binding"));
    c = select_for(topo, names, 3, &r, 5, NULL);
    EXPECT_EQ(c.nearness, EFARM_NIC_SAME_NUMA);
    EXPECT_EQ(c.ntied, 2);
    EXPECT_EQ(c.nsharing, 3); /* with ranks 0 and 4: the same two NICs, for another reason */
    EXPECT_EQ(c.position, 2);
    ranks_free(&r);
    hwloc_topology_destroy(topo);
}

EFARM_TEST(nic_iface_limits_candidates)
{
    /* rdmap16s27 is socket 0's only candidate, rdmap145s27 socket 1's. */
    static const unsigned expected[] = {0, 0, 0, 0, 3, 3, 3, 3};
    /* Only socket 1's NICs: socket 0 finds them equally far, so all eight share them. */
    static const unsigned expected_remote[] = {1, 3, 1, 3, 1, 3, 1, 3};
    static const unsigned expected_all[] = {0, 2, 0, 2, 1, 3, 1, 3};
    struct topo_spec s = {2, 1, 4, g_two_by_two, 4, NULL, false};
    hwloc_topology_t topo = topo_load(&s);
    struct ranks r = {0};
    struct efarm_nic_choice c;

    for (unsigned pu = 0; pu < 8; pu++)
        ranks_add_pu(&r, pu);
    expect_choices(topo, g_two_by_two_names, 4, &r, " rdmap145s27 , rdmap16s27", expected);
    c = select_for(topo, g_two_by_two_names, 4, &r, 5, "rdmap145s27,rdmap16s27");
    EXPECT_EQ(c.ntied, 1);
    EXPECT_TRUE(strstr(c.reason, "(EFARM_IFACE)"));
    expect_choices(topo, g_two_by_two_names, 4, &r, "rdmap144s27,rdmap145s27,", expected_remote);
    expect_choices(topo, g_two_by_two_names, 4, &r, "", expected_all);
    expect_choices(topo, g_two_by_two_names, 4, &r, " , ", expected_all);
    c = select_for(topo, g_two_by_two_names, 4, &r, 5, "");
    EXPECT_TRUE(!strstr(c.reason, "EFARM_IFACE"));
    ranks_free(&r);
    hwloc_topology_destroy(topo);
}

/* Send stderr to a temporary file until capture_stderr_end(). */
static void capture_stderr_begin(int *saved_p, FILE **tmp_p)
{
    fflush(stderr);
    *tmp_p = tmpfile();
    EXPECT_TRUE(*tmp_p != NULL);
    *saved_p = dup(STDERR_FILENO);
    EXPECT_TRUE(*saved_p >= 0);
    EXPECT_TRUE(dup2(fileno(*tmp_p), STDERR_FILENO) >= 0);
}

/* Restore stderr and return what was written to it meanwhile (free it). */
static char *capture_stderr_end(int saved, FILE *tmp)
{
    char *text = calloc(1, 4096);
    size_t got;

    fflush(stderr);
    EXPECT_TRUE(dup2(saved, STDERR_FILENO) >= 0);
    close(saved);
    rewind(tmp);
    EXPECT_TRUE(text != NULL);
    got = fread(text, 1, 4095, tmp);
    text[got] = '\0';
    fclose(tmp);
    return text;
}

EFARM_TEST(nic_iface_naming_no_device_is_enodev)
{
    struct topo_spec s = {2, 1, 4, g_two_by_two, 4, NULL, false};
    hwloc_topology_t topo = topo_load(&s);
    struct efarm_nic_choice c, untouched;
    struct ranks r = {0};
    FILE *tmp;
    char *err;
    int saved;

    ranks_add_pu(&r, 0);
    memset(&c, 0xa5, sizeof(c));
    untouched = c;
    capture_stderr_begin(&saved, &tmp);
    EXPECT_RET(efarm_nic_select(topo, g_two_by_two_names, 4, r.bind, 1, 0, "mlx5_0, bogus", &c),
               -ENODEV);
    err = capture_stderr_end(saved, tmp);
    efarm_test_context("stderr: %s", err);
    EXPECT_TRUE(strstr(err, "EFARM_IFACE=\"mlx5_0, bogus\" names none of the 4 EFA devices"));
    EXPECT_TRUE(strstr(err, "rdmap16s27, rdmap144s27, rdmap17s27, rdmap145s27"));
    EXPECT_MEM_EQ(&c, &untouched, sizeof(c));
    free(err);
    ranks_free(&r);
    hwloc_topology_destroy(topo);
}

EFARM_TEST(nic_iface_unknown_entry_warned_by_local_rank_0)
{
    struct topo_spec s = {2, 1, 4, g_two_by_two, 4, NULL, false};
    hwloc_topology_t topo = topo_load(&s);
    struct ranks r = {0};
    struct efarm_nic_choice c;
    FILE *tmp;
    char *err;
    int saved;

    ranks_add_pu(&r, 4);
    ranks_add_pu(&r, 5);
    for (unsigned me = 0; me < 2; me++) {
        capture_stderr_begin(&saved, &tmp);
        c = select_for(topo, g_two_by_two_names, 4, &r, me, "rdmap144s27,rdmap99s0");
        err = capture_stderr_end(saved, tmp);
        efarm_test_context("local rank %u, stderr: %s", me, err);
        EXPECT_EQ(c.index, 1);
        EXPECT_EQ(!!strstr(err, "\"rdmap99s0\" names no EFA device"), me == 0);
        free(err);
    }
    ranks_free(&r);
    hwloc_topology_destroy(topo);
}

EFARM_TEST(nic_no_locality_balanced_by_local_rank)
{
    /* efasim's devices: not in the topology, so all equal, shared by bound and unbound alike. */
    static const char *const names[] = {"efa_0", "efa_1", "efa_2"};
    static const unsigned expected[] = {0, 1, 2, 0, 1, 2, 0};
    struct topo_spec s = {2, 1, 4, NULL, 0, g_two_latency, false};
    hwloc_topology_t topo = topo_load(&s);
    struct ranks r = {0};
    struct efarm_nic_choice c;

    ranks_add_pu(&r, 0);
    ranks_add_pu(&r, 7);
    ranks_add_package(&r, topo, 1);
    ranks_add(&r, NULL);
    ranks_add_pu(&r, 1);
    ranks_add_pu(&r, 5);
    ranks_add_pu(&r, 2);
    expect_choices(topo, names, 3, &r, NULL, expected);
    c = select_for(topo, names, 3, &r, 1, NULL);
    EXPECT_EQ(c.nearness, EFARM_NIC_ANYWHERE);
    EXPECT_EQ(c.ntied, 3);
    EXPECT_EQ(c.nsharing, 7); /* the unbound rank too: same three NICs */
    EXPECT_TRUE(strstr(c.reason, "no NIC has PCI locality"));
    ranks_free(&r);
    hwloc_topology_destroy(topo);
}

/*
 * One located NIC on socket 0 and one efasim-like NIC with no locality (a
 * network interface of the same name on socket 1 is not it). Ranks: socket 0,
 * socket 1, socket 0, socket 1, bound to the whole machine.
 */
static void located_and_not(const uint64_t *latency, const unsigned *expected)
{
    static const struct nic_at nics[] = {NIC("rdmap16s27", 0, 0), NETDEV("efa_0", 1, 0)};
    static const char *const names[] = {"efa_0", "rdmap16s27"};
    struct topo_spec s = {2, 1, 4, nics, 2, latency, false};
    hwloc_topology_t topo = topo_load(&s);
    struct ranks r = {0};

    ranks_add_pu(&r, 0);
    ranks_add_pu(&r, 4);
    ranks_add_pu(&r, 1);
    ranks_add_pu(&r, 5);
    ranks_add(&r, hwloc_topology_get_topology_cpuset(topo));
    expect_choices(topo, names, 2, &r, NULL, expected);
    ranks_free(&r);
    hwloc_topology_destroy(topo);
}

EFARM_TEST(nic_no_locality_ties_with_remote_without_distances)
{
    /*
     * Socket 1's ranks find the remote NIC and the unlocated one equally far,
     * as does the unbound rank, so the three share both.
     */
    static const unsigned expected[] = {1, 0, 1, 1, 0};

    located_and_not(NULL, expected);
}

EFARM_TEST(nic_no_locality_after_nic_with_distance)
{
    /*
     * With a matrix the remote NIC has a known distance, which beats no
     * locality; the unbound rank alone has both.
     */
    static const unsigned expected[] = {1, 1, 1, 1, 0};

    located_and_not(g_two_latency, expected);
}

EFARM_TEST(nic_bad_arguments)
{
    struct topo_spec s = {1, 1, 2, NULL, 0, NULL, false};
    hwloc_topology_t topo = topo_load(&s);
    static const char *const names[] = {"efa_0", NULL};
    hwloc_bitmap_t empty = hwloc_bitmap_alloc();
    hwloc_const_cpuset_t bind[2] = {NULL, NULL};
    struct efarm_nic_choice c;
    FILE *tmp;
    char *err;
    int saved;

    EXPECT_RET(efarm_nic_select(NULL, names, 1, bind, 1, 0, NULL, &c), -EINVAL);
    EXPECT_RET(efarm_nic_select(topo, NULL, 1, bind, 1, 0, NULL, &c), -EINVAL);
    EXPECT_RET(efarm_nic_select(topo, names, 2, bind, 1, 0, NULL, &c), -EINVAL);
    EXPECT_RET(efarm_nic_select(topo, names, 1, NULL, 1, 0, NULL, &c), -EINVAL);
    EXPECT_RET(efarm_nic_select(topo, names, 1, bind, 2, 2, NULL, &c), -EINVAL);
    EXPECT_RET(efarm_nic_select(topo, names, 1, bind, 0, 0, NULL, &c), -EINVAL);
    EXPECT_RET(efarm_nic_select(topo, names, 1, bind, 1, 0, NULL, NULL), -EINVAL);
    bind[1] = empty;
    EXPECT_RET(efarm_nic_select(topo, names, 1, bind, 2, 0, NULL, &c), -EINVAL);
    capture_stderr_begin(&saved, &tmp);
    EXPECT_RET(efarm_nic_select(topo, names, 0, bind, 1, 0, NULL, &c), -ENODEV);
    err = capture_stderr_end(saved, tmp);
    EXPECT_TRUE(strstr(err, "no EFA device"));
    free(err);
    EXPECT_RET(efarm_nic_select(topo, names, 1, bind, 1, 0, NULL, &c), 0);
    EXPECT_EQ(c.index, 0);
    hwloc_bitmap_free(empty);
    hwloc_topology_destroy(topo);
}

EFARM_TEST(nic_choice_printed)
{
    struct topo_spec s = {2, 1, 4, g_two_by_two, 4, NULL, false};
    hwloc_topology_t topo = topo_load(&s);
    struct ranks r = {0};
    struct efarm_nic_choice c;
    char *text = NULL;
    size_t len = 0;
    FILE *out;

    for (unsigned pu = 0; pu < 8; pu++)
        ranks_add_pu(&r, pu);
    c = select_for(topo, g_two_by_two_names, 4, &r, 5, NULL);
    out = open_memstream(&text, &len);
    EXPECT_TRUE(out != NULL);
    efarm_nic_choice_print(out, 5, g_two_by_two_names, &c);
    fclose(out);
    efarm_test_context("printed: %s", text);
    EXPECT_TRUE(!strcmp(text, "rank 5 -> rdmap145s27 -> same NUMA node 1 as the binding; "
                              "2nd of 4 ranks sharing 2 equally near NICs\n"));
    free(text);
    ranks_free(&r);
    hwloc_topology_destroy(topo);
}
