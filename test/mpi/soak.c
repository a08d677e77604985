/*
 * Soak: random traffic for a chosen time, every byte checked, memory and
 * efarm's pool levels reported as it goes; at the end nothing may be lost
 * and nothing may have grown after warm-up.
 *
 * Rounds, all ranks in step (a round's plan comes from a seed every rank
 * derives the same way, then an allreduce ends the round and says whether
 * to report or stop):
 *   - a communicator: MPI_COMM_WORLD, a duplicate, or one with the ranks
 *     reversed (MPI_Comm_split);
 *   - 1 to 24 messages between random distinct ranks, sizes log-uniform from
 *     0 to MPITEST_SOAK_MAX (1 MiB), each with its own tag (its index), sent
 *     by MPI_Isend or MPI_Issend;
 *   - per receiving rank one style for the round: receives naming source and
 *     tag; naming the source with MPI_ANY_TAG; MPI_ANY_SOURCE and MPI_ANY_TAG;
 *     MPI_Probe then MPI_Recv of the probed count; MPI_Mprobe/MPI_Mrecv with
 *     both wildcards. A receive learns which message it got from its status
 *     (the tag) and checks its length and every byte;
 *   - one round in 8, one-sided: every rank puts a random block (up to
 *     64 KiB) into its right neighbour's window under MPI_Win_lock_all, adds
 *     to a counter there with MPI_Fetch_and_op, flushes; after a barrier each
 *     target checks the block and, at the end, the counter.
 * Every MPITEST_SOAK_REPORT seconds (5) rank 0 prints the elapsed time, the
 * rounds, messages and bytes so far, the largest resident set of any rank and
 * efarm's levels (MPI_T efarm_level_*, largest of any rank). At the end: the
 * message counts must match the plans (nothing lost, nothing twice), every
 * level that holds traffic must be back to 0 (within 5 s of progress after the
 * last barrier, whose own packets may still be in flight), and no rank's resident set may
 * have grown by more than MPITEST_SOAK_GROWTH_MB (16) from the report after
 * the first quarter of the run (warm-up) to the end.
 *
 * MPITEST_SOAK_SECONDS (10) sets the length; MPITEST_SOAK_RMA=0 leaves the
 * one-sided rounds out; MPITEST_SOAK_STYLES (31) is a mask of the receive
 * styles above, in that order (a style left out becomes the first). efasim's faults come from the
 * environment of the run.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "efarm_mpitest.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "resident.h"

enum { MAX_MSGS = 24, NCOMMS = 3, RMA_EVERY = 8, RMA_BLOCK = 65536 };
enum { STYLE_SPECIFIC, STYLE_ANY_TAG, STYLE_ANY_ANY, STYLE_PROBE, STYLE_MPROBE, NSTYLES };

#define LEVELS(X)   \
    X(ops)          \
    X(tx_bufs)      \
    X(rx_held)      \
    X(rx_copies)    \
    X(stored_bytes) \
    X(unexpected)   \
    X(windows)      \
    X(peer_states)

enum {
#define LEVEL_ENUM_(name) LEVEL_##name,
    LEVELS(LEVEL_ENUM_)
#undef LEVEL_ENUM_
        NLEVELS
};
static const char *const g_level_names[NLEVELS] = {
#define LEVEL_NAME_(name) #name,
    LEVELS(LEVEL_NAME_)
#undef LEVEL_NAME_
};

struct msg {
    int src, dst; /* ranks in the round's communicator */
    size_t len;
    int ssend;
};

static uint64_t g_rng;
static unsigned g_styles = (1u << NSTYLES) - 1; /* MPITEST_SOAK_STYLES: receive styles allowed */

static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* 0 .. max, log-uniform, with 0 and the small sizes common. */
static size_t rnd_size(size_t max)
{
    unsigned bits = 0;

    while ((1ull << bits) < max)
        bits++;
    size_t top = (size_t)1 << (rnd() % (bits + 1));
    size_t len = (size_t)(rnd() % (top + 1));

    return len > max ? max : len;
}

static uint64_t msg_seed(unsigned long round, int idx)
{
    return mpitest_seed(0x50a4, round, (uint64_t)idx, 0);
}

/* One receive's result: which message (its tag) and how long; check it against the plan. */
static void check_recv(const struct msg *plan, int nmsg, unsigned long round, int me, int tag,
                       int src, int count, const uint8_t *buf, unsigned *got)
{
    mpitest_context("round %lu, message %d (from %d, %d bytes)", round, tag, src, count);
    CHECK(tag >= 0 && tag < nmsg);
    CHECK_EQ(plan[tag].dst, me);
    CHECK_EQ(plan[tag].src, src);
    CHECK_EQ(count, (long long)plan[tag].len);
    CHECK_DATA(buf, plan[tag].len, msg_seed(round, tag));
    got[tag]++;
}

static void p2p_round(MPI_Comm comm, unsigned long round, size_t max, uint8_t **rbufs,
                      uint8_t **sbufs, unsigned long long *msgs, unsigned long long *bytes)
{
    struct msg plan[MAX_MSGS];
    MPI_Request sreq[MAX_MSGS], rreq[MAX_MSGS];
    MPI_Status sst[MAX_MSGS];
    int me, size, nmsg, nsend = 0, nrecv = 0, style, mine[MAX_MSGS], nmine = 0;
    unsigned got[MAX_MSGS] = {0};

    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    nmsg = 1 + (int)(rnd() % MAX_MSGS);
    for (int i = 0; i < nmsg; i++) {
        plan[i].src = (int)(rnd() % (uint64_t)size);
        plan[i].dst = (plan[i].src + 1 + (int)(rnd() % (uint64_t)(size - 1))) % size;
        plan[i].len = rnd_size(max);
        plan[i].ssend = rnd() % 4 == 0;
    }
    /* Every rank draws every rank's style, so the stream stays the same everywhere. */
    style = STYLE_SPECIFIC;
    for (int r = 0; r < size; r++) {
        int s = (int)(rnd() % NSTYLES);

        if (r == me)
            style = g_styles & (1u << s) ? s : STYLE_SPECIFIC;
    }
    for (int i = 0; i < nmsg; i++) {
        if (plan[i].dst == me)
            mine[nmine++] = i;
    }
    /* Receives first for the styles that post them; the sends after. */
    if (style == STYLE_SPECIFIC || style == STYLE_ANY_TAG || style == STYLE_ANY_ANY) {
        for (int k = 0; k < nmine; k++) {
            const struct msg *m = &plan[mine[k]];
            int src = style == STYLE_ANY_ANY ? MPI_ANY_SOURCE : m->src;
            int tag = style == STYLE_SPECIFIC ? mine[k] : MPI_ANY_TAG;

            CHECK_MPI(MPI_Irecv(rbufs[k], (int)max, MPI_BYTE, src, tag, comm, &rreq[nrecv++]));
        }
    }
    for (int i = 0; i < nmsg; i++) {
        if (plan[i].src != me)
            continue;
        mpitest_fill(sbufs[nsend], plan[i].len, msg_seed(round, i));
        if (plan[i].ssend)
            CHECK_MPI(MPI_Issend(sbufs[nsend], (int)plan[i].len, MPI_BYTE, plan[i].dst, i, comm,
                                 &sreq[nsend]));
        else
            CHECK_MPI(MPI_Isend(sbufs[nsend], (int)plan[i].len, MPI_BYTE, plan[i].dst, i, comm,
                                &sreq[nsend]));
        nsend++;
        *msgs += 1;
        *bytes += plan[i].len;
    }
    if (nrecv) {
        MPI_Status st[MAX_MSGS];

        CHECK_MPI(MPI_Waitall(nrecv, rreq, st));
        for (int k = 0; k < nrecv; k++) {
            int count;

            CHECK_MPI(MPI_Get_count(&st[k], MPI_BYTE, &count));
            check_recv(plan, nmsg, round, me, st[k].MPI_TAG, st[k].MPI_SOURCE, count, rbufs[k],
                       got);
        }
    } else {
        for (int k = 0; k < nmine; k++) {
            MPI_Status st;
            int count;

            if (style == STYLE_PROBE) {
                const struct msg *m = &plan[mine[k]];

                CHECK_MPI(MPI_Probe(m->src, mine[k], comm, &st));
                CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
                CHECK_MPI(MPI_Recv(rbufs[k], count, MPI_BYTE, m->src, mine[k], comm, &st));
            } else {
                MPI_Message msg;

                CHECK_MPI(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &msg, &st));
                CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
                CHECK_MPI(MPI_Mrecv(rbufs[k], count, MPI_BYTE, &msg, &st));
            }
            CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
            check_recv(plan, nmsg, round, me, st.MPI_TAG, st.MPI_SOURCE, count, rbufs[k], got);
        }
    }
    CHECK_MPI(MPI_Waitall(nsend, sreq, sst));
    for (int k = 0; k < nmine; k++) {
        mpitest_context("round %lu, message %d to rank %d", round, mine[k], me);
        CHECK_EQ(got[mine[k]], 1);
    }
}

/* One-sided: a block into the right neighbour's window and a fetch-and-add on its counter. */
static void rma_round(MPI_Win win, uint8_t *base, unsigned long round, long long *added)
{
    int me = g_mpitest_rank, n = g_mpitest_size, right = (me + 1) % n, left = (me + n - 1) % n;
    uint8_t *src = mpitest_malloc(RMA_BLOCK);
    size_t len = 0, left_len = 0;
    long long one = 1, old;

    /* Every rank draws every rank's length, in rank order. */
    for (int r = 0; r < n; r++) {
        size_t l = 1 + rnd() % RMA_BLOCK;

        if (r == me)
            len = l;
        if (r == left)
            left_len = l;
    }
    mpitest_fill(src, len, mpitest_seed(0x4a1, round, (uint64_t)me, 0));
    CHECK_MPI(MPI_Win_lock_all(0, win));
    CHECK_MPI(MPI_Put(src, (int)len, MPI_BYTE, right, sizeof(long long), (int)len, MPI_BYTE, win));
    CHECK_MPI(MPI_Fetch_and_op(&one, &old, MPI_LONG_LONG, right, 0, MPI_SUM, win));
    CHECK_MPI(MPI_Win_flush(right, win));
    CHECK_MPI(MPI_Win_unlock_all(win));
    *added += 1;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win));
    mpitest_context("round %lu, one-sided block from rank %d (%zu bytes)", round, left, left_len);
    CHECK_DATA(base + sizeof(long long), left_len, mpitest_seed(0x4a1, round, (uint64_t)left, 0));
    CHECK_MPI(MPI_Win_unlock(me, win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    free(src);
}

static void read_levels(unsigned long long *lv)
{
    char name[64];

    for (int i = 0; i < NLEVELS; i++) {
        snprintf(name, sizeof(name), "efarm_level_%s", g_level_names[i]);
        lv[i] = mpitest_pvar_checks() ? mpitest_pvar_read(name) : 0;
    }
}

int main(int argc, char **argv)
{
    size_t max, seconds, every, growth;
    bool rma;
    uint8_t *rbufs[MAX_MSGS], *sbufs[MAX_MSGS], *winbase;
    MPI_Comm comms[NCOMMS];
    MPI_Win win;
    double t0, next_report, warm_rss = -1;
    unsigned long round = 0;
    unsigned long long msgs = 0, bytes = 0;
    long long added = 0;

    mpitest_init(&argc, &argv, "soak");
    CHECK(g_mpitest_size >= 2);
    max = mpitest_env_size("MPITEST_SOAK_MAX", 1 << 20);
    seconds = mpitest_env_size("MPITEST_SOAK_SECONDS", 10);
    every = mpitest_env_size("MPITEST_SOAK_REPORT", 5);
    growth = mpitest_env_size("MPITEST_SOAK_GROWTH_MB", 16);
    rma = mpitest_env_size("MPITEST_SOAK_RMA", 1) != 0;
    g_styles = (unsigned)mpitest_env_size("MPITEST_SOAK_STYLES", g_styles);
    CHECK(max >= 1 && max <= (1u << 30));
    for (int i = 0; i < MAX_MSGS; i++) {
        rbufs[i] = mpitest_malloc(max);
        sbufs[i] = mpitest_malloc(max);
    }
    comms[0] = MPI_COMM_WORLD;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]));
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, g_mpitest_size - 1 - g_mpitest_rank, &comms[2]));
    CHECK_MPI(MPI_Win_allocate(sizeof(long long) + RMA_BLOCK, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                               &winbase, &win));
    memset(winbase, 0, sizeof(long long) + RMA_BLOCK);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (g_mpitest_rank == 0) {
        /* Set up, traffic starts: what a run that kills a host waits for (run-slurm.sh). */
        printf("soak: started, %d ranks\n", g_mpitest_size);
        fflush(stdout);
    }
    t0 = now_s();
    next_report = t0 + (double)every;
    for (;;) {
        int flags[2] = {0, 0}, all[2];

        g_rng = mpitest_seed(0x50a4, round, 1, 0) | 1;
        if (rma && round % RMA_EVERY == RMA_EVERY - 1)
            rma_round(win, winbase, round, &added);
        else
            p2p_round(comms[rnd() % NCOMMS], round, max, rbufs, sbufs, &msgs, &bytes);
        round++;
        if (g_mpitest_rank == 0) {
            double now = now_s();

            flags[0] = now >= t0 + (double)seconds;
            flags[1] = flags[0] || now >= next_report;
        }
        CHECK_MPI(MPI_Allreduce(flags, all, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
        if (all[1]) {
            unsigned long long lv[NLEVELS], lvmax[NLEVELS], tot[2] = {msgs, bytes}, sum[2];
            double rss = resident_bytes() / 1e6, rssmax;

            read_levels(lv);
            CHECK_MPI(
                MPI_Reduce(lv, lvmax, NLEVELS, MPI_UNSIGNED_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Reduce(&rss, &rssmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Reduce(tot, sum, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
            if (warm_rss < 0 && now_s() >= t0 + (double)seconds / 4)
                warm_rss = rss;
            if (g_mpitest_rank == 0) {
                printf("soak: %5.1f s: %lu rounds, %llu messages, %llu bytes; rss max %.1f MB;",
                       now_s() - t0, round, sum[0], sum[1], rssmax);
                for (int i = 0; i < NLEVELS; i++)
                    printf(" %s %llu", g_level_names[i], lvmax[i]);
                printf("\n");
                fflush(stdout);
            }
            next_report += (double)every;
        }
        if (all[0])
            break;
    }

    /* Nothing left behind: every level that holds traffic back to 0, memory flat. */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    {
        long long counter;

        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, g_mpitest_rank, 0, win));
        memcpy(&counter, winbase, sizeof(counter));
        CHECK_MPI(MPI_Win_unlock(g_mpitest_rank, win));
        mpitest_context("the one-sided counter (one add per one-sided round from the left)");
        CHECK_EQ(counter, added);
    }
    if (mpitest_pvar_checks()) {
        unsigned long long lv[NLEVELS];
        double until;
        int token = 0, n = g_mpitest_size, me = g_mpitest_rank;

        /*
         * The ranks take turns (a token around the ring, then a second lap
         * before anyone goes on), so that no message of a later call (the token
         * itself, a collective) is on its way to a rank while it looks. The last packets (the
         * barrier's) may still be in flight or unacknowledged: progress (MPI_Iprobe) until every
         * level that holds traffic is 0, for at most 5 s, then check.
         */
        if (me != 0)
            CHECK_MPI(MPI_Recv(&token, 1, MPI_INT, me - 1, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        until = now_s() + 5;
        for (;;) {
            int flag, busy = 0;

            read_levels(lv);
            for (int i = 0; i < NLEVELS; i++)
                busy |= i != LEVEL_peer_states && lv[i] != 0;
            if (!busy || now_s() > until)
                break;
            for (int c = 0; c < NCOMMS; c++) {
                MPI_Status st;

                CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comms[c], &flag, &st));
                mpitest_context("a message waits on communicator %d: from %d, tag %d", c,
                                st.MPI_SOURCE, st.MPI_TAG);
                CHECK_EQ(flag, 0); /* nothing is sent to this rank before its turn ends */
            }
        }
        CHECK_MPI(MPI_Send(&token, 1, MPI_INT, (me + 1) % n, 77, MPI_COMM_WORLD));
        if (me == 0)
            CHECK_MPI(MPI_Recv(&token, 1, MPI_INT, n - 1, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        /* A second lap: nobody goes on (to collectives) before every rank has looked. */
        if (me != 0)
            CHECK_MPI(MPI_Recv(&token, 1, MPI_INT, me - 1, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        if (me != n - 1)
            CHECK_MPI(MPI_Send(&token, 1, MPI_INT, me + 1, 78, MPI_COMM_WORLD));
        for (int i = 0; i < NLEVELS; i++) {
            mpitest_context("level efarm_level_%s at the end (ops %llu tx_bufs %llu rx_held %llu "
                            "rx_copies %llu stored_bytes %llu unexpected %llu windows %llu)",
                            g_level_names[i], lv[LEVEL_ops], lv[LEVEL_tx_bufs], lv[LEVEL_rx_held],
                            lv[LEVEL_rx_copies], lv[LEVEL_stored_bytes], lv[LEVEL_unexpected],
                            lv[LEVEL_windows]);
            if (i != LEVEL_peer_states)
                CHECK_EQ(lv[i], 0);
        }
    }
    if (warm_rss >= 0) {
        double rss = resident_bytes() / 1e6;

        mpitest_context("resident set: %.1f MB after warm-up, %.1f MB at the end", warm_rss, rss);
        CHECK_LE((long long)(rss - warm_rss), (long long)growth);
    }
    CHECK_MPI(MPI_Win_free(&win));
    CHECK_MPI(MPI_Comm_free(&comms[1]));
    CHECK_MPI(MPI_Comm_free(&comms[2]));
    for (int i = 0; i < MAX_MSGS; i++) {
        free(rbufs[i]);
        free(sbufs[i]);
    }
    if (g_mpitest_rank == 0)
        printf("soak: %lu rounds, %llu messages sent by rank 0 in %.1f s\n", round, msgs,
               now_s() - t0);
    mpitest_finalize();
    return 0;
}
