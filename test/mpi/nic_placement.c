/*
 * NIC placement under mpiexec (issue 13): every rank's EFA device is the one
 * the placement rules give for its CPU binding, and its traffic leaves on it.
 *
 * The run gives efasim several devices (EFASIM_NDEV) and efarm a synthetic
 * machine (EFARM_TOPOLOGY, written by efarm-topo-xml) that places them on its
 * sockets; mpiexec binds the ranks (-bind-to core) or not. MPITEST_NIC_EXPECT
 * says what each rank must get, as groups separated by ';':
 *     PU:I,J,...   the ranks bound to exactly CPU PU take devices I, J, ...
 *                  round-robin, in rank order, on each host (under mpiexec
 *                  all ranks are on one host; under srun on several, each
 *                  host's ranks choose among their own)
 *     *:I,J,...    the same for ranks that are not bound (every CPU)
 * e.g. "0:0,2;1:1,3" on two sockets with two devices each. Each rank reads its
 * binding with sched_getaffinity and its device index from the MPI_T variable
 * efarm_nm_nic_index; rank 0 gathers them and checks every rank. Then every
 * rank exchanges messages with every other (MPI_Alltoall and a ring of
 * 64 KiB), so each chosen device carries traffic; rank 0 prints
 * "nic-used: efasim_I" per device in use, which the runner checks against
 * efasim's per-device counters (efasim-info --counters) after the job:
 * traffic on exactly those devices.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* open_memstream, sched_getaffinity */
#endif
#include "efarm_mpitest.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_GROUPS 64
#define MAX_NICS   64

struct group {
    int pu; /* -1: unbound */
    unsigned nnics;
    unsigned nics[MAX_NICS];
};

struct rank_info {
    int pu;       /* the one CPU the rank is bound to, -1 unbound, -2 several (not one) */
    int nic;      /* efarm_nm_nic_index */
    int nearness; /* efarm_nm_nic_nearness */
    int nlocal;   /* efarm_nm_nic_local_ranks */
    int ndevices; /* efarm_nm_nic_devices */
    int host;     /* the lowest world rank on this rank's host */
    int nhost;    /* ranks on this rank's host */
};

static unsigned parse_groups(const char *spec, struct group *g)
{
    char *copy = strdup(spec), *save = NULL;
    unsigned n = 0;

    CHECK(copy != NULL);
    for (char *tok = strtok_r(copy, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
        char *colon = strchr(tok, ':'), *save2 = NULL;

        CHECK(colon != NULL && n < MAX_GROUPS);
        *colon = '\0';
        memset(&g[n], 0, sizeof(g[n]));
        g[n].pu = strcmp(tok, "*") ? atoi(tok) : -1;
        for (char *i = strtok_r(colon + 1, ",", &save2); i; i = strtok_r(NULL, ",", &save2)) {
            CHECK(g[n].nnics < MAX_NICS);
            g[n].nics[g[n].nnics++] = (unsigned)atoi(i);
        }
        CHECK(g[n].nnics > 0);
        n++;
    }
    free(copy);
    return n;
}

static int my_pu(void)
{
    cpu_set_t set;
    long online = sysconf(_SC_NPROCESSORS_ONLN);

    CHECK(sched_getaffinity(0, sizeof(set), &set) == 0);
    if (CPU_COUNT(&set) == online)
        return -1;
    if (CPU_COUNT(&set) != 1)
        return -2;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            return c;
    return -2;
}

static void check_placement(const struct rank_info *all, const char *spec)
{
    struct group groups[MAX_GROUPS];
    unsigned ngroups = parse_groups(spec, groups);
    int used[MAX_NICS] = {0};

    for (int r = 0; r < g_mpitest_size; r++) {
        const struct rank_info *ri = &all[r];
        struct group *g = NULL;
        unsigned before = 0;

        printf("nic-map: rank %d host %d pu %d -> efasim_%d (nearness %d, %d local ranks, %d "
               "devices)\n",
               r, ri->host, ri->pu, ri->nic, ri->nearness, ri->nlocal, ri->ndevices);
        mpitest_context("rank %d on the host of rank %d, bound to CPU %d", r, ri->host, ri->pu);
        CHECK(ri->pu != -2); /* bound to one CPU or to none */
        for (unsigned i = 0; i < ngroups && !g; i++)
            if (groups[i].pu == ri->pu)
                g = &groups[i];
        CHECK(g != NULL); /* MPITEST_NIC_EXPECT names its CPU */
        /* Its place among the ranks of its host bound as it is. */
        for (int q = 0; q < r; q++)
            before += all[q].host == ri->host && all[q].pu == ri->pu;
        CHECK_EQ(ri->nic, g->nics[before % g->nnics]);
        /* The NIC choice must have seen every rank of its host. */
        CHECK_EQ(ri->nlocal, ri->nhost);
        CHECK(ri->nic >= 0 && ri->nic < MAX_NICS);
        used[ri->nic] = 1;
    }
    for (int i = 0; i < MAX_NICS; i++)
        if (used[i])
            printf("nic-used: efasim_%d\n", i);
    fflush(stdout);
}

static void exchange(void)
{
    enum { BIG = 65536 };
    int size = g_mpitest_size, rank = g_mpitest_rank;
    int *out = malloc(sizeof(int) * (size_t)size), *in = malloc(sizeof(int) * (size_t)size);
    char *sbuf = malloc(BIG), *rbuf = malloc(BIG);

    CHECK(out && in && sbuf && rbuf);
    for (int i = 0; i < size; i++)
        out[i] = rank * 1000 + i;
    mpitest_context("alltoall");
    CHECK_MPI(MPI_Alltoall(out, 1, MPI_INT, in, 1, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++)
        CHECK_EQ(in[i], i * 1000 + rank);
    for (int step = 1; step < size; step++) {
        int to = (rank + step) % size, from = (rank - step + size) % size;

        mpitest_context("ring step %d", step);
        memset(sbuf, (char)(rank + step), BIG);
        CHECK_MPI(MPI_Sendrecv(sbuf, BIG, MPI_CHAR, to, step, rbuf, BIG, MPI_CHAR, from, step,
                               MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_EQ(rbuf[0], (char)(from + step));
        CHECK_EQ(rbuf[BIG - 1], (char)(from + step));
    }
    free(out);
    free(in);
    free(sbuf);
    free(rbuf);
}

int main(int argc, char **argv)
{
    const char *spec = getenv("MPITEST_NIC_EXPECT");
    struct rank_info me, *all = NULL;

    mpitest_init(&argc, &argv, "nic_placement");
    CHECK(spec != NULL && *spec);
    me.pu = my_pu();
    me.nic = (int)mpitest_pvar_read("efarm_nm_nic_index");
    me.nearness = (int)mpitest_pvar_read("efarm_nm_nic_nearness");
    me.nlocal = (int)mpitest_pvar_read("efarm_nm_nic_local_ranks");
    me.ndevices = (int)mpitest_pvar_read("efarm_nm_nic_devices");
    {
        /*
         * The host by its name (MPI_COMM_TYPE_SHARED would not do: with
         * MPIR_CVAR_NOLOCAL=1 MPICH puts every rank on a node of its own).
         */
        char name[MPI_MAX_PROCESSOR_NAME] = "", *names;
        int len;

        CHECK_MPI(MPI_Get_processor_name(name, &len));
        names = calloc((size_t)g_mpitest_size, sizeof(name));
        CHECK(names != NULL);
        CHECK_MPI(MPI_Allgather(name, (int)sizeof(name), MPI_CHAR, names, (int)sizeof(name),
                                MPI_CHAR, MPI_COMM_WORLD));
        me.host = -1;
        me.nhost = 0;
        for (int r = 0; r < g_mpitest_size; r++)
            if (!strcmp(names + (size_t)r * sizeof(name), name)) {
                if (me.host < 0)
                    me.host = r;
                me.nhost++;
            }
        free(names);
    }
    if (g_mpitest_rank == 0)
        all = malloc(sizeof(*all) * (size_t)g_mpitest_size);
    CHECK(g_mpitest_rank != 0 || all != NULL);
    CHECK_MPI(MPI_Gather(&me, (int)sizeof(me), MPI_BYTE, all, (int)sizeof(me), MPI_BYTE, 0,
                         MPI_COMM_WORLD));
    if (g_mpitest_rank == 0)
        check_placement(all, spec);
    free(all);
    exchange();
    mpitest_finalize();
    return 0;
}
