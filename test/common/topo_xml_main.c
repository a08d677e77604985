/*
 * efarm-topo-xml: write a synthetic machine (topo_xml.h) as hwloc XML on
 * stdout, for EFARM_TOPOLOGY or HWLOC_XMLFILE.
 *
 *   efarm-topo-xml [--packages P] [--numas N] [--cores C] [--interleave]
 *                  [--nics NAME:PACKAGE[:NUMA],...]
 *
 * P packages of N NUMA nodes of C cores each (defaults 1, 1, 4); PUs numbered
 * package by package, or round-robin over the packages with --interleave.
 * Each NIC is an EFA PCI device with an OpenFabrics OS device NAME under its
 * package (PACKAGE -1: the machine), or under NUMA node NUMA of it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_xml.h"

#define MAX_NICS 256

static int usage(void)
{
    fprintf(stderr, "usage: efarm-topo-xml [--packages P] [--numas N] [--cores C] [--interleave]\n"
                    "                      [--nics NAME:PACKAGE[:NUMA],...]\n");
    return 2;
}

static int parse_count(const char *arg, unsigned *out)
{
    char *end;
    unsigned long v = strtoul(arg ? arg : "", &end, 10);

    if (!arg || !*arg || *end || v == 0 || v > 4096)
        return -1;
    *out = (unsigned)v;
    return 0;
}

static int parse_nics(char *list, struct nic_at *nics, unsigned *n)
{
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        char *pkg = strchr(tok, ':'), *numa, *end;

        if (!pkg || *n >= MAX_NICS)
            return -1;
        *pkg++ = '\0';
        numa = strchr(pkg, ':');
        if (numa)
            *numa++ = '\0';
        nics[*n].name = tok;
        nics[*n].package = (int)strtol(pkg, &end, 10);
        if (*end || !*pkg)
            return -1;
        nics[*n].numa = numa ? (int)strtol(numa, &end, 10) : -1;
        if (numa && (*end || !*numa))
            return -1;
        nics[*n].netdev = false;
        (*n)++;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static struct nic_at nics[MAX_NICS];
    struct topo_spec s = {.packages = 1, .numas = 1, .cores = 4, .nics = nics};
    char *xml;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (!strcmp(a, "--interleave")) {
            s.interleave = true;
            continue;
        }
        if ((!strcmp(a, "--packages") && !parse_count(v, &s.packages)) ||
            (!strcmp(a, "--numas") && !parse_count(v, &s.numas)) ||
            (!strcmp(a, "--cores") && !parse_count(v, &s.cores)) ||
            (!strcmp(a, "--nics") && v && !parse_nics(argv[i + 1], nics, &s.nnics))) {
            i++;
            continue;
        }
        return usage();
    }
    for (unsigned i = 0; i < s.nnics; i++)
        if (nics[i].package >= (int)s.packages || nics[i].numa >= (int)s.numas) {
            fprintf(stderr, "efarm-topo-xml: NIC %s is outside the machine\n", nics[i].name);
            return 2;
        }
    xml = topo_xml(&s);
    if (!xml) {
        fprintf(stderr, "efarm-topo-xml: out of memory\n");
        return 1;
    }
    fputs(xml, stdout);
    free(xml);
    return fflush(stdout) ? 1 : 0;
}
