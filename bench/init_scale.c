/*
 * Start-up cost as the job grows: each rank times MPI_Init, a first
 * MPI_Alltoall of one int (every rank contacts every other: first contact,
 * handshakes) and a second one (all peers known), then MPI_Finalize; rank 0
 * prints the slowest rank's times and every rank's resident memory after
 * the first contact with every peer. Built and run by bench/run-init-scale.sh.
 *
 *   init_scale      prints "init_scale: ranks N init_ms X alltoall1_ms Y alltoall2_ms Z
 *                   rss_mb_max M rss_mb_mean A"
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "resident.h"

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    double t0 = now_ms(), t[4], mine[4], worst[4], rss_sum;
    int rank, size, *sbuf, *rbuf;

    MPI_Init(&argc, &argv);
    t[0] = now_ms() - t0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    sbuf = malloc(sizeof(int) * (size_t)size);
    rbuf = malloc(sizeof(int) * (size_t)size);
    if (!sbuf || !rbuf)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (int i = 0; i < size; i++)
        sbuf[i] = rank * size + i;
    t0 = now_ms();
    MPI_Alltoall(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, MPI_COMM_WORLD);
    t[1] = now_ms() - t0;
    for (int i = 0; i < size; i++) {
        if (rbuf[i] != i * size + rank) {
            fprintf(stderr, "init_scale: rank %d got %d from %d, expected %d\n", rank, rbuf[i], i,
                    i * size + rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    t0 = now_ms();
    MPI_Alltoall(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, MPI_COMM_WORLD);
    t[2] = now_ms() - t0;
    t[3] = resident_bytes() / 1e6;
    for (int i = 0; i < 4; i++)
        mine[i] = t[i];
    MPI_Reduce(mine, worst, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&t[3], &rss_sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("init_scale: ranks %d init_ms %.1f alltoall1_ms %.1f alltoall2_ms %.1f "
               "rss_mb_max %.1f rss_mb_mean %.1f\n",
               size, worst[0], worst[1], worst[2], worst[3], rss_sum / size);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
