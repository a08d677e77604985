/* Synthetic hwloc topologies as XML (topo_xml.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* open_memstream, sched_getaffinity */
#endif
#include <stdio.h>
#include <stdlib.h>

#include <hwloc.h>

#include "topo_xml.h"

struct xml_writer {
    FILE *f;
    unsigned gp; /* next gp_index */
    bool failed;
};

unsigned topo_pu(const struct topo_spec *s, unsigned package, unsigned numa, unsigned core)
{
    unsigned k = numa * s->cores + core; /* index within the package */

    return s->interleave ? k * s->packages + package : package * s->numas * s->cores + k;
}

int topo_nic_numa(const struct topo_spec *s, const struct nic_at *nic)
{
    return nic->package < 0 || s->numas == 1 ? -1 : nic->numa;
}

/* The PUs of package p's NUMA node n (n < 0: the whole package; p < 0: the machine). */
static void pus_of(const struct topo_spec *s, int p, int n, hwloc_bitmap_t cpus)
{
    hwloc_bitmap_zero(cpus);
    for (unsigned pp = 0; pp < s->packages; pp++)
        for (unsigned nn = 0; nn < s->numas; nn++)
            for (unsigned c = 0; c < s->cores; c++)
                if ((p < 0 || pp == (unsigned)p) && (n < 0 || nn == (unsigned)n))
                    hwloc_bitmap_set(cpus, topo_pu(s, pp, nn, c));
}

static void xml_sets(FILE *f, hwloc_const_bitmap_t cpuset, hwloc_const_bitmap_t nodeset)
{
    char *c = NULL, *n = NULL;

    hwloc_bitmap_asprintf(&c, cpuset);
    hwloc_bitmap_asprintf(&n, nodeset);
    fprintf(f, " cpuset=\"%s\" complete_cpuset=\"%s\" nodeset=\"%s\" complete_nodeset=\"%s\"",
            c ? c : "", c ? c : "", n ? n : "", n ? n : "");
    free(c);
    free(n);
}

/* A host bridge, the EFA PCI device and its OS device for each NIC placed here. */
static void xml_nics(struct xml_writer *w, const struct topo_spec *s, int package, int numa,
                     int indent)
{
    for (unsigned i = 0; i < s->nnics; i++) {
        const struct nic_at *nic = &s->nics[i];
        unsigned bus = 0x10 + i;

        if (nic->package != package || topo_nic_numa(s, nic) != numa)
            continue;
        fprintf(w->f,
                "%*s<object type=\"Bridge\" gp_index=\"%u\" bridge_type=\"0-1\" depth=\"0\""
                " bridge_pci=\"0000:[%02x-%02x]\">\n",
                indent, "", w->gp++, bus, bus);
        fprintf(w->f,
                "%*s<object type=\"PCIDev\" gp_index=\"%u\" pci_busid=\"0000:%02x:00.0\""
                " pci_type=\"0200 [1d0f:efa1] [1d0f:efa1] 00\" pci_link_speed=\"0.000000\">\n",
                indent + 2, "", w->gp++, bus);
        fprintf(w->f, "%*s<object type=\"OSDev\" gp_index=\"%u\" name=\"%s\" osdev_type=\"%d\"/>\n",
                indent + 4, "", w->gp++, nic->name,
                (int)(nic->netdev ? HWLOC_OBJ_OSDEV_NETWORK : HWLOC_OBJ_OSDEV_OPENFABRICS));
        fprintf(w->f, "%*s</object>\n%*s</object>\n", indent + 2, "", indent, "");
    }
}

/* One NUMA node's memory object and cores (and the NICs of a NUMA-level group). */
static void xml_numa(struct xml_writer *w, const struct topo_spec *s, unsigned p, unsigned n,
                     int indent)
{
    unsigned os = p * s->numas + n;
    hwloc_bitmap_t cpus = hwloc_bitmap_alloc(), one = hwloc_bitmap_alloc(),
                   nodes = hwloc_bitmap_alloc();

    if (!cpus || !one || !nodes) {
        w->failed = true;
        goto out;
    }
    pus_of(s, (int)p, (int)n, cpus);
    hwloc_bitmap_only(nodes, os);
    if (s->numas > 1) {
        fprintf(w->f, "%*s<object type=\"Group\"", indent, "");
        xml_sets(w->f, cpus, nodes);
        fprintf(w->f, " gp_index=\"%u\">\n", w->gp++);
        indent += 2;
    }
    fprintf(w->f, "%*s<object type=\"NUMANode\" os_index=\"%u\"", indent, "", os);
    xml_sets(w->f, cpus, nodes);
    fprintf(w->f, " gp_index=\"%u\" local_memory=\"1073741824\"/>\n", w->gp++);
    for (unsigned c = 0; c < s->cores; c++) {
        unsigned pu = topo_pu(s, p, n, c);

        hwloc_bitmap_only(one, pu);
        fprintf(w->f, "%*s<object type=\"Core\" os_index=\"%u\"", indent, "", pu);
        xml_sets(w->f, one, nodes);
        fprintf(w->f, " gp_index=\"%u\">\n%*s<object type=\"PU\" os_index=\"%u\"", w->gp++,
                indent + 2, "", pu);
        xml_sets(w->f, one, nodes);
        fprintf(w->f, " gp_index=\"%u\"/>\n%*s</object>\n", w->gp++, indent, "");
    }
    if (s->numas > 1) {
        xml_nics(w, s, (int)p, (int)n, indent);
        fprintf(w->f, "%*s</object>\n", indent - 2, "");
    }
out:
    hwloc_bitmap_free(cpus);
    hwloc_bitmap_free(one);
    hwloc_bitmap_free(nodes);
}

static void xml_package(struct xml_writer *w, const struct topo_spec *s, unsigned p)
{
    hwloc_bitmap_t cpus = hwloc_bitmap_alloc(), nodes = hwloc_bitmap_alloc();

    if (!cpus || !nodes) {
        w->failed = true;
        goto out;
    }
    pus_of(s, (int)p, -1, cpus);
    hwloc_bitmap_set_range(nodes, (int)(p * s->numas), (int)(p * s->numas + s->numas - 1));
    fprintf(w->f, "    <object type=\"Package\" os_index=\"%u\"", p);
    xml_sets(w->f, cpus, nodes);
    fprintf(w->f, " gp_index=\"%u\">\n", w->gp++);
    for (unsigned n = 0; n < s->numas; n++)
        xml_numa(w, s, p, n, 6);
    xml_nics(w, s, (int)p, -1, 6);
    fprintf(w->f, "    </object>\n");
out:
    hwloc_bitmap_free(cpus);
    hwloc_bitmap_free(nodes);
}

/* The <distances2> element: hwloc wants each value list with its length in characters. */
static void xml_latency(struct xml_writer *w, const struct topo_spec *s)
{
    unsigned n = s->packages * s->numas;
    char indexes[1024] = "", values[8192] = "";
    size_t il = 0, vl = 0;

    for (unsigned i = 0; i < n && il < sizeof(indexes); i++)
        il += (size_t)snprintf(indexes + il, sizeof(indexes) - il, "%u ", i);
    for (unsigned i = 0; i < n * n && vl < sizeof(values); i++)
        vl += (size_t)snprintf(values + vl, sizeof(values) - vl, "%llu ",
                               (unsigned long long)s->latency[i]);
    if (il >= sizeof(indexes) || vl >= sizeof(values)) {
        w->failed = true;
        return;
    }
    fprintf(w->f,
            "  <distances2 type=\"NUMANode\" nbobjs=\"%u\" kind=\"%d\" name=\"NUMALatency\""
            " indexing=\"os\">\n    <indexes length=\"%zu\">%s</indexes>\n"
            "    <u64values length=\"%zu\">%s</u64values>\n  </distances2>\n",
            n, HWLOC_DISTANCES_KIND_FROM_OS | HWLOC_DISTANCES_KIND_MEANS_LATENCY, il, indexes, vl,
            values);
}

/* hwloc 2.9's XML for the machine (the schema hwloc_topology_export_xmlbuffer writes). */
char *topo_xml(const struct topo_spec *s)
{
    struct xml_writer w = {.gp = 1};
    hwloc_bitmap_t cpus = hwloc_bitmap_alloc(), nodes = hwloc_bitmap_alloc();
    char *xml = NULL, *c = NULL, *n = NULL;
    size_t len = 0;

    w.f = cpus && nodes ? open_memstream(&xml, &len) : NULL;
    if (!w.f) {
        hwloc_bitmap_free(cpus);
        hwloc_bitmap_free(nodes);
        return NULL;
    }
    pus_of(s, -1, -1, cpus);
    hwloc_bitmap_set_range(nodes, 0, (int)(s->packages * s->numas - 1));
    hwloc_bitmap_asprintf(&c, cpus);
    hwloc_bitmap_asprintf(&n, nodes);
    fprintf(w.f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n<topology version=\"2.0\">\n");
    fprintf(w.f, "  <object type=\"Machine\" os_index=\"0\"");
    xml_sets(w.f, cpus, nodes);
    fprintf(w.f, " allowed_cpuset=\"%s\" allowed_nodeset=\"%s\" gp_index=\"%u\">\n", c ? c : "",
            n ? n : "", w.gp++);
    for (unsigned p = 0; p < s->packages; p++)
        xml_package(&w, s, p);
    xml_nics(&w, s, -1, -1, 4);
    fprintf(w.f, "  </object>\n");
    if (s->latency)
        xml_latency(&w, s);
    fprintf(w.f, "</topology>\n");
    if (fclose(w.f) || !c || !n)
        w.failed = true;
    free(c);
    free(n);
    hwloc_bitmap_free(cpus);
    hwloc_bitmap_free(nodes);
    if (w.failed) {
        free(xml);
        return NULL;
    }
    return xml;
}
