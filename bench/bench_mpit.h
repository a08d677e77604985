/*
 * MPI_T counters for the two-rank MPI benchmarks (bench_mpi.c, bench_mt.c): open
 * the performance variables named on the command line (-p), read their growth
 * over the run, and print it next to what the benchmark itself sent, so a script
 * can tell from a netmod's counters that every message crossed it.
 *
 * Header-only, static functions: each benchmark stays one source file built by
 * one mpicc command with any MPI. Output (rank 0 of MPI_COMM_WORLD):
 *   PVAR <name> <total> <rank 0> <rank 1>    or    PVAR <name> missing
 *   SENT <messages> <bytes>
 */
#ifndef BENCH_MPIT_H
#define BENCH_MPIT_H

#include <mpi.h>

#include <stdbool.h>
#include <stdio.h>

#define BENCH_PVAR_MAX_ELEM 64

struct bench_pvar {
    const char *name;
    bool found;
    MPI_T_pvar_handle handle;
    MPI_Datatype type;
    int count;
    unsigned long long start;
};

/* Reads the counter's current value summed over its elements; 0 when not found. */
static unsigned long long bench_pvar_read(MPI_T_pvar_session session, const struct bench_pvar *p)
{
    union {
        unsigned long long ull[BENCH_PVAR_MAX_ELEM];
        unsigned long ul[BENCH_PVAR_MAX_ELEM];
        unsigned u[BENCH_PVAR_MAX_ELEM];
    } v;
    unsigned long long sum = 0;

    if (!p->found || MPI_T_pvar_read(session, p->handle, &v) != MPI_SUCCESS)
        return 0;
    for (int i = 0; i < p->count; i++) {
        if (p->type == MPI_UNSIGNED_LONG_LONG)
            sum += v.ull[i];
        else if (p->type == MPI_UNSIGNED_LONG)
            sum += v.ul[i];
        else
            sum += v.u[i];
    }
    return sum;
}

/* Finds the counter p->name and notes its start value; one that is missing is
 * skipped (its PVAR line says so), one that is unusable is reported on stderr
 * by rank 0 with the program's name prog. */
static void bench_pvar_open(MPI_T_pvar_session session, const char *prog, int rank,
                            struct bench_pvar *p)
{
    char name[256], desc[1024];
    int index, name_len = sizeof(name), desc_len = sizeof(desc), verbosity, var_class, bind;
    int readonly, continuous, atomic;
    MPI_T_enum enumtype;

    p->found = false;
    if (MPI_T_pvar_get_index(p->name, MPI_T_PVAR_CLASS_COUNTER, &index) != MPI_SUCCESS)
        return;
    if (MPI_T_pvar_get_info(index, name, &name_len, &verbosity, &var_class, &p->type, &enumtype,
                            desc, &desc_len, &bind, &readonly, &continuous,
                            &atomic) != MPI_SUCCESS ||
        bind != MPI_T_BIND_NO_OBJECT ||
        (p->type != MPI_UNSIGNED_LONG_LONG && p->type != MPI_UNSIGNED_LONG &&
         p->type != MPI_UNSIGNED)) {
        if (rank == 0)
            fprintf(stderr, "%s: -p %s: not an unsigned counter bound to no object\n", prog,
                    p->name);
        return;
    }
    if (MPI_T_pvar_handle_alloc(session, index, NULL, &p->handle, &p->count) != MPI_SUCCESS ||
        p->count < 1 || p->count > BENCH_PVAR_MAX_ELEM) {
        if (rank == 0)
            fprintf(stderr, "%s: -p %s: cannot read it\n", prog, p->name);
        return;
    }
    if (!continuous)
        MPI_T_pvar_start(session, p->handle);
    p->found = true;
    p->start = bench_pvar_read(session, p);
}

/* PVAR lines for the n counters, then the SENT line: the messages and bytes this
 * rank sent (sent_msgs, sent_bytes) summed over both ranks. Collective over
 * MPI_COMM_WORLD; rank 0 prints. */
static void bench_counters_report(MPI_T_pvar_session session, int rank, struct bench_pvar *p, int n,
                                  unsigned long long sent_msgs, unsigned long long sent_bytes)
{
    unsigned long long mine[2] = {sent_msgs, sent_bytes}, sent[2];

    if (rank == 0 && n > 0)
        printf("\n# MPI_T counters: growth over the benchmark (total, rank 0, rank 1)\n");
    for (int i = 0; i < n; i++) {
        unsigned long long grown = bench_pvar_read(session, &p[i]) - p[i].start, both[2];
        int found = p[i].found, all_found;

        MPI_Allreduce(&found, &all_found, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Gather(&grown, 1, MPI_UNSIGNED_LONG_LONG, both, 1, MPI_UNSIGNED_LONG_LONG, 0,
                   MPI_COMM_WORLD);
        if (rank != 0)
            continue;
        if (all_found)
            printf("PVAR %s %llu %llu %llu\n", p[i].name, both[0] + both[1], both[0], both[1]);
        else
            printf("PVAR %s missing\n", p[i].name);
    }
    MPI_Reduce(mine, sent, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("\n# messages both ranks sent, and their bytes\nSENT %llu %llu\n", sent[0], sent[1]);
}

#endif /* BENCH_MPIT_H */
