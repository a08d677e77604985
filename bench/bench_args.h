/*
 * The command-line pieces the two-rank MPI benchmarks (bench_mpi.c, bench_mt.c)
 * share: errors in the arguments reported once (by rank 0), the -p counter list,
 * the check that nothing follows the options, and the comparison their medians
 * sort with. Header-only, static functions, like bench_mpit.h: each benchmark
 * stays one source file built by one mpicc command with any MPI. The including
 * file defines BENCH_PROG (its name in messages) and sets g_rank before parsing.
 */
#ifndef BENCH_ARGS_H
#define BENCH_ARGS_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#ifndef BENCH_PROG
#error "define BENCH_PROG (the benchmark's name in its messages) before bench_args.h"
#endif

static int g_rank; /* errors in the arguments are reported by rank 0 only */

/* An error in the arguments, on stderr, once. */
static void complain(const char *fmt, ...)
{
    va_list ap;

    if (g_rank != 0)
        return;
    va_start(ap, fmt);
    fputs(BENCH_PROG ": ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

/* -p NAME: one more MPI_T counter to print (at most max). */
static int bench_arg_pvar(const char **pvars, int *npvars, int max, const char *name)
{
    if (*npvars == max) {
        complain("-p: at most %d counters\n", max);
        return -EINVAL;
    }
    pvars[(*npvars)++] = name;
    return 0;
}

/* getopt's '?' or ':': an unknown option or one without its value. */
static int bench_arg_unknown(int opt)
{
    complain("unknown option or missing value: -%c\n", opt);
    return -EINVAL;
}

/* After getopt: the benchmarks take no operands. */
static int bench_args_end(int argc, char **argv, int next)
{
    if (next < argc) {
        complain("unexpected argument '%s'\n", argv[next]);
        return -EINVAL;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

#endif /* BENCH_ARGS_H */
