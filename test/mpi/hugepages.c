/*
 * Buffers on huge pages (issue 56): hugetlbfs (MAP_HUGETLB) and transparent
 * huge pages (MADV_HUGEPAGE), through efarm's registration cache and its
 * memory hook, for point-to-point and RMA.
 *
 * Ranks pair up (rank ^ 1; an odd rank out talks to itself). For each kind
 * and round: map 8 MiB, send 4 MiB from an offset that is not page aligned
 * each way (a read protocol: the buffers are registered through the cache),
 * check every byte; expose 2 MiB of it as a window (MPI_Win_create), put and
 * get, check; free the window and unmap, so that the next round's mapping
 * (often at the same address, new pages) must not find the old registration:
 * the registration cache's invalidations (libefarm's own totals, found with
 * dlsym, as mr_cache_reuse.c does) must grow by the two buffers each rank
 * registered through it, the send and the receive buffer. On efasim an RDMA
 * read reads the peer's current memory, so a stale registration would not
 * show in the data here (it would on EFA): the count is what proves it.
 *
 * MPITEST_HUGETLB=require fails when MAP_HUGETLB cannot map (the runner
 * reserves huge pages first when it may); otherwise that kind is skipped with
 * a line saying so. Transparent huge pages are asked for; whether the kernel
 * gave any is printed (rank 0), not required.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "efarm_mpitest.h"

#include "../../src/device/efarm_mr_cache.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static void (*g_totals)(struct efarm_mr_cache_stats *);

enum { TAG = 95, MAP_BYTES = 8 << 20, MSG_BYTES = 4 << 20, WIN_BYTES = 2 << 20, OFF = 4096 + 13 };

/* 8 MiB of huge pages: hugetlb (kind 0) or anonymous memory asked to be THP (kind 1). */
static uint8_t *map_huge(int kind)
{
    void *p;

    if (kind == 0) {
        p = mmap(NULL, MAP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB,
                 -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    /* 2 MiB aligned, so the kernel can back it with huge pages. */
    p = mmap(NULL, MAP_BYTES + (2 << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
             0);
    CHECK(p != MAP_FAILED);
    {
        uintptr_t a = ((uintptr_t)p + (2 << 20) - 1) & ~(uintptr_t)((2 << 20) - 1);

        if (a > (uintptr_t)p)
            munmap(p, a - (uintptr_t)p);
        munmap((void *)(a + MAP_BYTES), (uintptr_t)p + MAP_BYTES + (2 << 20) - a - MAP_BYTES);
        p = (void *)a;
    }
    (void)madvise(p, MAP_BYTES, MADV_HUGEPAGE);
    memset(p, 0, MAP_BYTES); /* fault it in now, as huge pages where the kernel can */
    return p;
}

/* kB of the mapping at p backed by transparent huge pages (smaps AnonHugePages). */
static long thp_kb(const void *p)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[256];
    int in = 0;
    long kb = -1;

    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;

        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        else if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
            break;
    }
    fclose(f);
    return kb;
}

static void round_trip(int kind, int round, int partner)
{
    uint8_t *s = map_huge(kind), *r = map_huge(kind), *w = map_huge(kind);
    uint64_t mine = mpitest_seed((uint64_t)g_mpitest_rank, 95, (uint64_t)kind, (uint64_t)round);
    uint64_t theirs = mpitest_seed((uint64_t)partner, 95, (uint64_t)kind, (uint64_t)round);
    MPI_Request req[2];
    MPI_Status sts[2];
    MPI_Win win;

    CHECK(s && r && w);
    if (round == 0 && kind == 1 && g_mpitest_rank == 0)
        printf("hugepages: transparent huge pages backing the send buffer: %ld kB of %d\n",
               thp_kb(s), MAP_BYTES / 1024);
    mpitest_context("%s, round %d: point-to-point", kind ? "THP" : "hugetlb", round);
    mpitest_fill(s + OFF, MSG_BYTES, mine);
    CHECK_MPI(MPI_Irecv(r + OFF, MSG_BYTES, MPI_BYTE, partner, TAG, MPI_COMM_WORLD, &req[0]));
    CHECK_MPI(MPI_Isend(s + OFF, MSG_BYTES, MPI_BYTE, partner, TAG, MPI_COMM_WORLD, &req[1]));
    CHECK_MPI(MPI_Waitall(2, req, sts));
    mpitest_check_data(__FILE__, __LINE__, "received", r + OFF, MSG_BYTES, theirs);

    mpitest_context("%s, round %d: RMA", kind ? "THP" : "hugetlb", round);
    mpitest_fill(w, WIN_BYTES, mine + 1);
    CHECK_MPI(MPI_Win_create(w, WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK_MPI(MPI_Win_fence(0, win));
    /* Get the partner's first half into my receive buffer; put my send data in its second. */
    CHECK_MPI(MPI_Get(r, WIN_BYTES / 2, MPI_BYTE, partner, 0, WIN_BYTES / 2, MPI_BYTE, win));
    CHECK_MPI(MPI_Put(s + OFF, WIN_BYTES / 2, MPI_BYTE, partner, WIN_BYTES / 2, WIN_BYTES / 2,
                      MPI_BYTE, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    mpitest_check_data(__FILE__, __LINE__, "got", r, WIN_BYTES / 2, theirs + 1);
    mpitest_check_data(__FILE__, __LINE__, "put into my window", w + WIN_BYTES / 2, WIN_BYTES / 2,
                       theirs);
    CHECK_MPI(MPI_Win_free(&win));
    /* Unmapped: the next round's buffers may come back at these addresses with new pages. */
    {
        struct efarm_mr_cache_stats before, after;

        g_totals(&before);
        CHECK_EQ(munmap(s, MAP_BYTES), 0);
        CHECK_EQ(munmap(r, MAP_BYTES), 0);
        CHECK_EQ(munmap(w, MAP_BYTES), 0);
        g_totals(&after);
        mpitest_context("%s, round %d: the memory hook saw the munmap", kind ? "THP" : "hugetlb",
                        round);
        /* A rank paired with itself moves its data inside MPICH: nothing registered. */
        if (before.caching && partner != g_mpitest_rank)
            CHECK_GE(after.invalidations - before.invalidations, 2);
    }
}

int main(int argc, char **argv)
{
    const char *req = getenv("MPITEST_HUGETLB");
    int rounds, partner, have_hugetlb;

    mpitest_init(&argc, &argv, "hugepages");
    {
        void *sym = dlsym(RTLD_DEFAULT, "efarm_mr_cache_totals");

        mpitest_context("dlsym(efarm_mr_cache_totals): libefarm.so must be the one loaded");
        CHECK(sym != NULL);
        memcpy(&g_totals, &sym, sizeof(sym));
    }
    rounds = (int)mpitest_env_size("MPITEST_ROUNDS", 4);
    partner = g_mpitest_rank ^ 1;
    if (partner >= g_mpitest_size)
        partner = g_mpitest_rank;
    {
        /* Three 8 MiB mappings a rank: every rank must have them, or no rank runs hugetlb. */
        uint8_t *probe[3];
        int mine = 1;

        for (int i = 0; i < 3; i++) {
            probe[i] = map_huge(0);
            mine &= probe[i] != NULL;
        }
        for (int i = 0; i < 3; i++)
            if (probe[i])
                munmap(probe[i], MAP_BYTES);
        CHECK_MPI(MPI_Allreduce(&mine, &have_hugetlb, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    }
    if (!have_hugetlb) {
        CHECK(!(req && strcmp(req, "require") == 0));
        if (g_mpitest_rank == 0)
            printf("hugepages: SKIP hugetlb: MAP_HUGETLB cannot map 24 MiB a rank "
                   "(/proc/sys/vm/nr_hugepages)\n");
    }
    for (int kind = have_hugetlb ? 0 : 1; kind < 2; kind++)
        for (int round = 0; round < rounds; round++)
            round_trip(kind, round, partner);
    mpitest_finalize();
    return 0;
}
