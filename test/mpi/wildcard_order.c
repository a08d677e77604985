/*
 * Wildcards and ordering.
 *
 * 1. MPI_ANY_SOURCE + MPI_ANY_TAG: rank 0 collects one message from every
 *    other rank per round, at eager, medium, long-CTS and read sizes; each
 *    status names the sender and its tag, each sender is seen once.
 * 2. One wildcard at a time: ANY_SOURCE with a tag must skip the earlier
 *    message of another tag; ANY_TAG with a source must take that source's
 *    messages in the order they were sent.
 * 3. Non-overtaking between one pair with mixed sizes (small right after
 *    large, zero bytes, read-sized): receives posted first, and receives
 *    posted only after everything arrived (the unexpected path), both with
 *    named and with wildcard source and tag.
 * 4. Many outstanding receives: 1000 receives with distinct tags posted in a
 *    shuffled order, sent in reverse; then 1000 ANY_TAG receives that must
 *    match in send order.
 * Every message's data, status count and source/tag are checked, and efarm's
 * counters must show the messages and bytes on the senders and receivers.
 * With MPITEST_EXPECT_REORDER=1 (the runner's efasim loss/reorder run) the
 * engines must also have seen REQ packets out of order.
 */
#include "efarm_mpitest.h"

#include <stdlib.h>
#include <string.h>

enum {
    TAG_ROUND = 100,  /* + source rank */
    TAG_SKIP_A = 200, /* sent first, received last */
    TAG_SKIP_B = 201, /* sent second, received first */
    TAG_ORDER = 300,  /* the same-source ANY_TAG sequence starts here */
    TAG_SEQ = 400,    /* the non-overtaking sequence */
    TAG_GO = 401,     /* "everything is sent" / "everything is posted" */
    TAG_ACK = 402,
    TAG_MANY = 1000, /* + message index */
};

#define NMANY 1000

static size_t g_max;
static uint8_t *g_buf;

static uint64_t seed_of(int from, int to, int tag, int i)
{
    return mpitest_seed((uint64_t)from, (uint64_t)to, (uint64_t)tag, (uint64_t)i);
}

static void check_msg(const MPI_Status *st, const void *buf, int from, int tag, size_t n,
                      uint64_t seed)
{
    int count = -1;

    CHECK_EQ(st->MPI_SOURCE, from);
    CHECK_EQ(st->MPI_TAG, tag);
    CHECK_MPI(MPI_Get_count(st, MPI_BYTE, &count));
    CHECK_EQ(count, n);
    CHECK_DATA(buf, n, seed);
}

static size_t cap(size_t n)
{
    return n < g_max ? n : g_max;
}

/* 1. Rank 0 collects one message from every other rank with both wildcards. */
static void any_source_any_tag(void)
{
    const struct mpitest_limits *l = &g_mpitest_limits;
    const size_t base[] = {10, l->eager_hi + 100, l->medium_max + 1000, l->read_min + 64};
    int me = g_mpitest_rank, np = g_mpitest_size;

    for (int round = 0; round < (int)(sizeof(base) / sizeof(base[0])); round++) {
        struct mpitest_counters before, after, d;
        MPI_Status st;

        mpitest_counters_read(&before);
        if (me == 0) {
            char seen[64] = {0};
            unsigned long long bytes = 0;

            for (int k = 1; k < np; k++) {
                int from;
                size_t n;

                mpitest_context("round %d: ANY_SOURCE/ANY_TAG receive %d of %d", round, k, np - 1);
                CHECK_MPI(MPI_Recv(g_buf, (int)g_max, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
                                   MPI_COMM_WORLD, &st));
                from = st.MPI_SOURCE;
                CHECK(from >= 1 && from < np);
                CHECK_EQ(seen[from], 0);
                seen[from] = 1;
                n = cap(base[round] + (size_t)from);
                check_msg(&st, g_buf, from, TAG_ROUND + from, n, seed_of(from, 0, round, 0));
                bytes += n;
            }
            mpitest_counters_read(&after);
            mpitest_counters_diff(&after, &before, &d);
            CHECK_RECEIVED(&d, (unsigned long long)(np - 1), bytes);
            for (int k = 1; k < np; k++)
                CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, k, TAG_ACK, MPI_COMM_WORLD));
        } else {
            size_t n = cap(base[round] + (size_t)me);

            mpitest_context("round %d: send %zu bytes to the wildcard receiver", round, n);
            mpitest_fill(g_buf, n, seed_of(me, 0, round, 0));
            CHECK_MPI(MPI_Send(g_buf, (int)n, MPI_BYTE, 0, TAG_ROUND + me, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_ACK, MPI_COMM_WORLD, &st));
            mpitest_counters_read(&after);
            mpitest_counters_diff(&after, &before, &d);
            CHECK_SENT(&d, 1, n);
        }
    }
}

/* 2. One wildcard at a time. */
static void one_wildcard(void)
{
    int me = g_mpitest_rank, np = g_mpitest_size;
    const size_t n = 33;
    MPI_Status st;
    char seen[64] = {0};

    if (me != 0) {
        mpitest_context("sending the one-wildcard messages");
        mpitest_fill(g_buf, n, seed_of(me, 0, TAG_SKIP_A, 0));
        CHECK_MPI(MPI_Send(g_buf, (int)n, MPI_BYTE, 0, TAG_SKIP_A, MPI_COMM_WORLD));
        mpitest_fill(g_buf, n + 1, seed_of(me, 0, TAG_SKIP_B, 0));
        CHECK_MPI(MPI_Send(g_buf, (int)n + 1, MPI_BYTE, 0, TAG_SKIP_B, MPI_COMM_WORLD));
        for (int k = 0; k < 3; k++) {
            mpitest_fill(g_buf, n + (size_t)k, seed_of(me, 0, TAG_ORDER + k, k));
            CHECK_MPI(MPI_Send(g_buf, (int)n + k, MPI_BYTE, 0, TAG_ORDER + k, MPI_COMM_WORLD));
        }
        return;
    }
    /* ANY_SOURCE with tag B: every sender's B, though each sent A before it. */
    for (int k = 1; k < np; k++) {
        mpitest_context("ANY_SOURCE, tag %d, receive %d", TAG_SKIP_B, k);
        CHECK_MPI(
            MPI_Recv(g_buf, (int)g_max, MPI_BYTE, MPI_ANY_SOURCE, TAG_SKIP_B, MPI_COMM_WORLD, &st));
        CHECK(st.MPI_SOURCE >= 1 && st.MPI_SOURCE < np && !seen[st.MPI_SOURCE]);
        seen[st.MPI_SOURCE] = 1;
        check_msg(&st, g_buf, st.MPI_SOURCE, TAG_SKIP_B, n + 1,
                  seed_of(st.MPI_SOURCE, 0, TAG_SKIP_B, 0));
    }
    /* Named source, ANY_TAG: A first (sent first), then the ordered run; highest rank first. */
    for (int from = np - 1; from >= 1; from--) {
        mpitest_context("source %d, ANY_TAG", from);
        CHECK_MPI(MPI_Recv(g_buf, (int)g_max, MPI_BYTE, from, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        check_msg(&st, g_buf, from, TAG_SKIP_A, n, seed_of(from, 0, TAG_SKIP_A, 0));
        for (int k = 0; k < 3; k++) {
            CHECK_MPI(
                MPI_Recv(g_buf, (int)g_max, MPI_BYTE, from, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            check_msg(&st, g_buf, from, TAG_ORDER + k, n + (size_t)k,
                      seed_of(from, 0, TAG_ORDER + k, k));
        }
    }
}

/* 3. Non-overtaking with mixed sizes between a pair. */
static size_t g_seq[17]; /* the sequence, then a 0 for GO */
static int g_nseq;

static void build_seq(void)
{
    const struct mpitest_limits *l = &g_mpitest_limits;
    size_t S = 17, M = l->eager_hi + 500, L = 2 * l->medium_max + 3, R = l->read_min + 33;
    const size_t seq[] = {L, 0, S, M, L, S, R, 1, M, S, R, L, 0, S};

    g_nseq = (int)(sizeof(seq) / sizeof(seq[0]));
    for (int i = 0; i < g_nseq; i++)
        g_seq[i] = cap(seq[i]);
    g_seq[g_nseq] = 0;
}

static void non_overtaking(int partner, int unexpected, int wild)
{
    int me = g_mpitest_rank, sender = me < partner;
    int src = wild ? MPI_ANY_SOURCE : partner, tag = wild ? MPI_ANY_TAG : TAG_SEQ;
    struct mpitest_counters before, after, d;
    MPI_Request reqs[16];
    MPI_Status sts[16];
    uint8_t *bufs[16];
    unsigned long long bytes = 0;

    mpitest_counters_read(&before);
    if (sender) {
        mpitest_context("sending the mixed-size sequence (%s, %s)",
                        unexpected ? "unexpected" : "posted first", wild ? "wildcards" : "named");
        if (!unexpected) /* wait until every receive is posted */
            CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, partner, TAG_GO, MPI_COMM_WORLD, &sts[0]));
        for (int i = 0; i < g_nseq; i++) {
            bufs[i] = mpitest_malloc(g_seq[i]);
            mpitest_fill(bufs[i], g_seq[i], seed_of(me, partner, TAG_SEQ, i));
            CHECK_MPI(MPI_Isend(bufs[i], (int)g_seq[i], MPI_BYTE, partner, TAG_SEQ, MPI_COMM_WORLD,
                                &reqs[i]));
        }
        if (unexpected) /* sent after the sequence: once it matched, all of it has arrived */
            CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, partner, TAG_GO, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Waitall(g_nseq, reqs, sts));
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, partner, TAG_ACK, MPI_COMM_WORLD, &sts[0]));
        mpitest_counters_read(&after);
        mpitest_counters_diff(&after, &before, &d);
        /* in the unexpected variant GO (0 bytes) was sent in this window too */
        CHECK_SENT_SIZES(&d, g_seq, (size_t)g_nseq + (unexpected ? 1 : 0));
        for (int i = 0; i < g_nseq; i++)
            free(bufs[i]);
        return;
    }
    mpitest_context("receiving the mixed-size sequence (%s, %s)",
                    unexpected ? "unexpected" : "posted first", wild ? "wildcards" : "named");
    if (unexpected)
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, partner, TAG_GO, MPI_COMM_WORLD, &sts[0]));
    for (int i = 0; i < g_nseq; i++) {
        bufs[i] = mpitest_malloc(g_max);
        CHECK_MPI(MPI_Irecv(bufs[i], (int)g_max, MPI_BYTE, src, tag, MPI_COMM_WORLD, &reqs[i]));
    }
    if (!unexpected)
        CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, partner, TAG_GO, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Waitall(g_nseq, reqs, sts));
    mpitest_counters_read(&after);
    mpitest_counters_diff(&after, &before, &d);
    for (int i = 0; i < g_nseq; i++) {
        mpitest_context("message %d of the mixed-size sequence (%s, %s)", i,
                        unexpected ? "unexpected" : "posted first", wild ? "wildcards" : "named");
        check_msg(&sts[i], bufs[i], partner, TAG_SEQ, g_seq[i], seed_of(partner, me, TAG_SEQ, i));
        bytes += g_seq[i];
        free(bufs[i]);
    }
    CHECK_RECEIVED(&d, (unsigned long long)g_nseq, bytes);
    if (unexpected) /* the sequence was all there before its first receive */
        CHECK_COUNTER(d.unexpected, >=, 1);
    CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, partner, TAG_ACK, MPI_COMM_WORLD));
}

/* 4. Many outstanding receives. */
static size_t many_len(int i)
{
    return i % 97 == 0 ? cap(g_mpitest_limits.eager_hi + 1 + (size_t)i) : (size_t)(i % 61);
}

static void many_outstanding(int partner, int any_tag)
{
    int me = g_mpitest_rank, sender = me < partner;
    struct mpitest_counters before, after, d;
    MPI_Request *reqs = mpitest_malloc(NMANY * sizeof(*reqs));
    MPI_Status *sts = mpitest_malloc(NMANY * sizeof(*sts));
    size_t *lens = mpitest_malloc(NMANY * sizeof(*lens)), off = 0, total = 0;
    int *order = mpitest_malloc(NMANY * sizeof(*order));
    uint8_t *data;
    unsigned long long bytes = 0;

    for (int i = 0; i < NMANY; i++)
        total += many_len(i);
    data = mpitest_malloc(total);
    mpitest_counters_read(&before);
    if (sender) {
        mpitest_context("sending %d messages (%s)", NMANY, any_tag ? "ANY_TAG" : "tags");
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, partner, TAG_GO, MPI_COMM_WORLD, &sts[0]));
        /* Message i goes out k-th with k = NMANY - 1 - i: the last tag first. */
        for (int k = 0; k < NMANY; k++) {
            int i = NMANY - 1 - k;

            lens[k] = many_len(i);
            mpitest_fill(data + off, lens[k], seed_of(me, partner, TAG_MANY + i, any_tag));
            CHECK_MPI(MPI_Isend(data + off, (int)lens[k], MPI_BYTE, partner, TAG_MANY + i,
                                MPI_COMM_WORLD, &reqs[k]));
            off += lens[k];
        }
        CHECK_MPI(MPI_Waitall(NMANY, reqs, sts));
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, partner, TAG_ACK, MPI_COMM_WORLD, &sts[0]));
        mpitest_counters_read(&after);
        mpitest_counters_diff(&after, &before, &d);
        CHECK_SENT_SIZES(&d, lens, NMANY);
    } else {
        size_t *offs = mpitest_malloc(NMANY * sizeof(*offs));

        mpitest_context("posting %d receives (%s)", NMANY, any_tag ? "ANY_TAG" : "tags");
        for (int i = 0; i < NMANY; i++) {
            offs[i] = off;
            off += many_len(i);
            order[i] = i;
        }
        /* A deterministic shuffle of the posting order (Fisher-Yates on a fixed hash). */
        for (int i = NMANY - 1; i > 0; i--) {
            int j = (int)(mpitest_seed(7, (uint64_t)i, 0, 0) % (uint64_t)(i + 1)), t = order[i];

            order[i] = order[j];
            order[j] = t;
        }
        memset(data, 0, total);
        for (int k = 0; k < NMANY; k++) {
            int i = order[k];

            if (any_tag) /* request k takes the k-th message sent: index NMANY - 1 - k */
                CHECK_MPI(MPI_Irecv(data + offs[NMANY - 1 - k], (int)many_len(NMANY - 1 - k),
                                    MPI_BYTE, partner, MPI_ANY_TAG, MPI_COMM_WORLD, &reqs[k]));
            else
                CHECK_MPI(MPI_Irecv(data + offs[i], (int)many_len(i), MPI_BYTE, partner,
                                    TAG_MANY + i, MPI_COMM_WORLD, &reqs[k]));
        }
        CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, partner, TAG_GO, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Waitall(NMANY, reqs, sts));
        mpitest_counters_read(&after);
        mpitest_counters_diff(&after, &before, &d);
        for (int k = 0; k < NMANY; k++) {
            int i = any_tag ? NMANY - 1 - k : order[k];

            mpitest_context("receive %d of %d (message %d, %s)", k, NMANY, i,
                            any_tag ? "ANY_TAG" : "tags");
            check_msg(&sts[k], data + offs[i], partner, TAG_MANY + i, many_len(i),
                      seed_of(partner, me, TAG_MANY + i, any_tag));
            bytes += many_len(i);
        }
        CHECK_RECEIVED(&d, NMANY, bytes);
        CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, partner, TAG_ACK, MPI_COMM_WORLD));
        free(offs);
    }
    free(data);
    free(order);
    free(lens);
    free(sts);
    free(reqs);
}

int main(int argc, char **argv)
{
    struct mpitest_counters start, end, d;
    int partner;

    mpitest_init(&argc, &argv, "wildcard_order");
    CHECK_LE(g_mpitest_size, 64); /* the receivers' seen[] tables */
    g_max = mpitest_env_size("MPITEST_MAX_SIZE", 4u << 20);
    CHECK_GE(g_max, g_mpitest_limits.eager_hi + 2048); /* room for every round's sizes */
    CHECK(g_max <= (size_t)1 << 30);
    g_buf = mpitest_malloc(g_max);
    build_seq();
    mpitest_counters_read(&start);

    any_source_any_tag();
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    one_wildcard();
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    partner = g_mpitest_rank ^ 1;
    if (partner < g_mpitest_size) {
        for (int unexpected = 0; unexpected < 2; unexpected++)
            for (int wild = 0; wild < 2; wild++)
                non_overtaking(partner, unexpected, wild);
        many_outstanding(partner, 0);
        many_outstanding(partner, 1);
    }

    mpitest_counters_read(&end);
    mpitest_counters_diff(&end, &start, &d);
    if (getenv("MPITEST_EXPECT_REORDER") && mpitest_pvar_checks()) {
        unsigned long long sum = 0;

        mpitest_context("out-of-order REQ packets with efasim's reordering on");
        CHECK_MPI(MPI_Allreduce(&d.out_of_order, &sum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM,
                                MPI_COMM_WORLD));
        CHECK_GE(sum, 1);
        if (g_mpitest_rank == 0)
            printf("wildcard_order: %llu REQ packets arrived out of order over all ranks\n", sum);
    }
    free(g_buf);
    mpitest_finalize();
    return 0;
}
