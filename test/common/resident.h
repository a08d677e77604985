/*
 * The resident set of this process in bytes (from /proc/self/statm; 0 when it
 * cannot be read). Header-only, for programs built by efarm's build and by
 * MPICH's mpicc alike (bench-av, bench/init_scale.c, test/mpi/soak.c).
 */
#ifndef EFARM_RESIDENT_H
#define EFARM_RESIDENT_H

#include <stdio.h>
#include <unistd.h>

static inline double resident_bytes(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return (double)resident * (double)sysconf(_SC_PAGESIZE);
}

#endif /* EFARM_RESIDENT_H */
