/*
 * fork() with efarm's registered memory live (issue 56): applications run
 * system(), popen() and subprocesses, and OSU's multi-process tests fork,
 * while messages and RMA are in flight.
 *
 * Ranks pair up (rank ^ 1). Each round, with a read-protocol message each way
 * in flight (its buffers registered, in efarm's registration cache) and a put
 * of 64 KiB to the partner's window in a passive-target epoch, every rank:
 *   1. runs system("exit 7") and checks its status;
 *   2. reads a line from popen("echo ...");
 *   3. forks a child that execs /bin/sh;
 *   4. forks a child that checks the registered send buffer holds what it
 *      held at the fork (copy-on-fork: the child has a copy), overwrites its
 *      own copy and the window's, and leaves with exit() (atexit handlers and
 *      all), or with _exit() every other round;
 *   then completes the messages and the epoch, checks every byte (the put's
 *   too, in its own window), checks its own buffers
 *   and window untouched by the child, and runs a fence epoch of puts and
 *   gets on the window, checking every byte.
 * A child never calls MPI (doc/NETMOD.md, "fork").
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "efarm_mpitest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { TAG = 90, WIN_BYTES = 1 << 20, PUT_BYTES = 64 << 10, CHILD_BAD_DATA = 3 };

static int child_status(pid_t pid)
{
    int status = 0;

    CHECK(pid > 0);
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    return status;
}

/* The child of step 4: it sees the buffers as they were at the fork. */
static _Noreturn void child_check(const uint8_t *sbuf, size_t len, uint64_t seed, uint8_t *mine,
                                  uint8_t *win, int use_exit)
{
    int bad = 0;

    for (size_t i = 0; i < len; i += 4093)
        bad |= sbuf[i] != mpitest_byte(seed, i);
    memset(mine, 0x5a, len); /* its own copies: the parent's stay as they are */
    memset(win, 0x5a, WIN_BYTES);
    if (use_exit)
        exit(bad ? CHILD_BAD_DATA : 0);
    _exit(bad ? CHILD_BAD_DATA : 0);
}

static void forks(int round, const uint8_t *sbuf, size_t len, uint64_t seed, uint8_t *rbuf,
                  uint8_t *win)
{
    char line[64] = "";
    FILE *p;
    pid_t pid;
    int st;

    mpitest_context("round %d: system()", round);
    st = system("exit 7");
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), 7);

    mpitest_context("round %d: popen()", round);
    p = popen("echo efarm-fork-ok", "r");
    CHECK(p != NULL);
    CHECK(fgets(line, sizeof(line), p) != NULL);
    CHECK_EQ(pclose(p), 0);
    CHECK(strcmp(line, "efarm-fork-ok\n") == 0);

    mpitest_context("round %d: fork() and exec", round);
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", "exit 5", (char *)NULL);
        _exit(127);
    }
    st = child_status(pid);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), 5);

    mpitest_context("round %d: fork(), the child reads registered memory", round);
    fflush(NULL);
    pid = fork();
    if (pid == 0)
        child_check(sbuf, len, seed, rbuf, win, round % 2 == 0);
    st = child_status(pid);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), 0);
}

static void rma_epoch(MPI_Win win, uint8_t *base, int partner, int round)
{
    const size_t half = WIN_BYTES / 2;
    uint8_t *got = mpitest_malloc(half);
    uint64_t mine = mpitest_seed((uint64_t)g_mpitest_rank, 91, (uint64_t)round, 0);
    uint64_t theirs = mpitest_seed((uint64_t)partner, 91, (uint64_t)round, 0);
    uint8_t *put = mpitest_malloc(half);

    /* My upper half: what the partner will put there. My lower half: mine, for its get. */
    mpitest_fill(base, half, mine);
    mpitest_fill(put, half, mine + 1);
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Put(put, (int)half, MPI_BYTE, partner, (MPI_Aint)half, (int)half, MPI_BYTE, win));
    CHECK_MPI(MPI_Get(got, (int)half, MPI_BYTE, partner, 0, (int)half, MPI_BYTE, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    mpitest_check_data(__FILE__, __LINE__, "window, put by the partner", base + half, half,
                       theirs + 1);
    mpitest_check_data(__FILE__, __LINE__, "window, got from the partner", got, half, theirs);
    CHECK_MPI(MPI_Win_fence(0, win));
    free(got);
    free(put);
}

int main(int argc, char **argv)
{
    size_t len;
    int rounds, partner;
    uint8_t *sbuf, *rbuf, *wbase;
    MPI_Win win;

    mpitest_init(&argc, &argv, "fork");
    len = mpitest_env_size("MPITEST_FORK_BYTES", 4u << 20);
    rounds = (int)mpitest_env_size("MPITEST_ROUNDS", 6);
    partner = g_mpitest_rank ^ 1;
    if (partner >= g_mpitest_size)
        partner = g_mpitest_rank; /* an odd rank out talks to itself */
    sbuf = mpitest_malloc(len);
    rbuf = mpitest_malloc(len);
    /*
     * The window on this process's own memory (MPI_Win_create): MPI_Win_allocate may
     * give memory shared with the node's other ranks (MPICH's shared-memory windows,
     * as over ch4:ucx), which a forked child shares too, so its writes would reach
     * the parent's window there.
     */
    wbase = mpitest_malloc(WIN_BYTES);
    CHECK_MPI(MPI_Win_create(wbase, WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    for (int round = 0; round < rounds; round++) {
        uint64_t seed = mpitest_seed((uint64_t)g_mpitest_rank, 90, (uint64_t)round, 1);
        uint64_t pseed = mpitest_seed((uint64_t)partner, 90, (uint64_t)round, 1);
        MPI_Request req[2];
        MPI_Status sts[2];
        uint8_t wsave[64];

        mpitest_fill(sbuf, len, seed);
        memset(rbuf, 0, len);
        CHECK_MPI(MPI_Irecv(rbuf, (int)len, MPI_BYTE, partner, TAG, MPI_COMM_WORLD, &req[0]));
        CHECK_MPI(MPI_Isend(sbuf, (int)len, MPI_BYTE, partner, TAG, MPI_COMM_WORLD, &req[1]));
        /* A put in flight too: the first PUT_BYTES of sbuf into the partner's upper half. */
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, partner, 0, win));
        CHECK_MPI(
            MPI_Put(sbuf, PUT_BYTES, MPI_BYTE, partner, WIN_BYTES / 2, PUT_BYTES, MPI_BYTE, win));
        memcpy(wsave, wbase, sizeof(wsave));
        forks(round, sbuf, len, seed, rbuf, wbase);
        mpitest_context("round %d: the messages and the put after the forks", round);
        CHECK_MPI(MPI_Win_unlock(partner, win));
        CHECK_MPI(MPI_Waitall(2, req, sts));
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* every put is in */
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, g_mpitest_rank, 0, win));
        mpitest_check_data(__FILE__, __LINE__, "window, put by the partner during the forks",
                           wbase + WIN_BYTES / 2, PUT_BYTES, pseed);
        CHECK_MPI(MPI_Win_unlock(g_mpitest_rank, win));
        mpitest_check_data(__FILE__, __LINE__, "received", rbuf, len, pseed);
        mpitest_check_data(__FILE__, __LINE__, "sent buffer, after the child wrote its copy", sbuf,
                           len, seed);
        CHECK(memcmp(wsave, wbase, sizeof(wsave)) == 0);
        mpitest_context("round %d: RMA after the forks", round);
        rma_epoch(win, wbase, partner, round);
    }
    CHECK_MPI(MPI_Win_free(&win));
    free(wbase);
    free(sbuf);
    free(rbuf);
    mpitest_finalize();
    return 0;
}
