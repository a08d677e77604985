/*
 * Probe and matched probe.
 *
 * Ranks pair up (rank ^ 1); the lower rank sends, the higher one probes and
 * receives, at sizes in every subprotocol (0 bytes to read-sized):
 * 1. MPI_Probe for each tag, in the reverse of the send order, twice (a probe
 *    does not consume), then a receive into a buffer of exactly the probed
 *    count; status source, tag, MPI_Get_count and MPI_Get_elements checked.
 * 2. MPI_Iprobe says no for a tag that was never sent, and for messages that
 *    have not been sent yet, then finds each one with ANY_SOURCE/ANY_TAG.
 * 3. MPI_Mprobe claims message A; a later message B of the same tag is then
 *    what MPI_Probe sees; B and then A are received with MPI_Mrecv.
 * 4. MPI_Improbe in a loop, MPI_Imrecv and MPI_Wait, with both wildcards.
 * 5. MPI_PROC_NULL: Probe, Iprobe, Mprobe, Improbe and Mrecv answer at once
 *    with source MPI_PROC_NULL, tag MPI_ANY_TAG, count 0, MPI_MESSAGE_NO_PROC,
 *    and send nothing through efarm.
 * 6. Rank 0 probes ANY_SOURCE for one message from every other rank and
 *    receives each by the probed source and tag (MPI_Probe, then MPI_Mprobe).
 * efarm's counters must show every message and byte on both sides.
 */
#include "efarm_mpitest.h"

#include <stdlib.h>
#include <string.h>

enum { TAG_BASE = 10, TAG_NEVER = 99, TAG_START = 98, TAG_ACK = 97, TAG_SAME = 50, TAG_ALL = 60 };

#define NSIZES MPITEST_PROTO_NSIZES
static size_t g_sizes[NSIZES];
static size_t g_max;

static uint64_t seed_of(int from, int tag, int section, int i)
{
    return mpitest_seed((uint64_t)from, (uint64_t)tag, (uint64_t)section, (uint64_t)i);
}

static void build_sizes(void)
{
    mpitest_proto_sizes(g_sizes, g_max);
}

static void check_status(const MPI_Status *st, int from, int tag, size_t n)
{
    int count = -1, elements = -1;

    CHECK_EQ(st->MPI_SOURCE, from);
    CHECK_EQ(st->MPI_TAG, tag);
    CHECK_MPI(MPI_Get_count(st, MPI_BYTE, &count));
    CHECK_EQ(count, n);
    CHECK_MPI(MPI_Get_elements(st, MPI_BYTE, &elements));
    CHECK_EQ(elements, n);
}

/* Receive a probed message into a buffer of exactly its size and check it. */
static void recv_exact(const MPI_Status *probed, int section, int i, size_t n)
{
    MPI_Status st;
    int count = -1;
    uint8_t *buf;

    CHECK_MPI(MPI_Get_count(probed, MPI_BYTE, &count));
    CHECK_EQ(count, n);
    buf = mpitest_malloc((size_t)count);
    CHECK_MPI(
        MPI_Recv(buf, count, MPI_BYTE, probed->MPI_SOURCE, probed->MPI_TAG, MPI_COMM_WORLD, &st));
    check_status(&st, probed->MPI_SOURCE, probed->MPI_TAG, n);
    CHECK_DATA(buf, n, seed_of(probed->MPI_SOURCE, probed->MPI_TAG, section, i));
    free(buf);
}

/* The sender's side of a section: messages (tag, size) sent in order, closed by an ack. */
static void send_all(int to, int section, const int *tags, const size_t *lens, int n, int start)
{
    struct mpitest_counters before, after, d;
    uint8_t **bufs = mpitest_malloc((size_t)n * sizeof(*bufs));
    MPI_Request *reqs = mpitest_malloc((size_t)n * sizeof(*reqs));
    MPI_Status *sts = mpitest_malloc((size_t)n * sizeof(*sts)), st;

    if (start) /* the receiver probes for absent messages first */
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, to, TAG_START, MPI_COMM_WORLD, &st));
    mpitest_counters_read(&before);
    /* All at once: the receiver may probe for a later message before it takes an earlier one. */
    for (int i = 0; i < n; i++) {
        mpitest_context("section %d: send %d (%zu bytes, tag %d)", section, i, lens[i], tags[i]);
        bufs[i] = mpitest_malloc(lens[i]);
        mpitest_fill(bufs[i], lens[i], seed_of(g_mpitest_rank, tags[i], section, i));
        CHECK_MPI(
            MPI_Isend(bufs[i], (int)lens[i], MPI_BYTE, to, tags[i], MPI_COMM_WORLD, &reqs[i]));
    }
    CHECK_MPI(MPI_Waitall(n, reqs, sts));
    CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, to, TAG_ACK, MPI_COMM_WORLD, &st));
    mpitest_counters_read(&after);
    mpitest_counters_diff(&after, &before, &d);
    CHECK_SENT_SIZES(&d, lens, (size_t)n);
    for (int i = 0; i < n; i++)
        free(bufs[i]);
    free(bufs);
    free(reqs);
    free(sts);
}

static void finish_recv(int from, const struct mpitest_counters *before, const size_t *lens, int n)
{
    struct mpitest_counters after, d;
    unsigned long long bytes = 0;

    mpitest_counters_read(&after);
    mpitest_counters_diff(&after, before, &d);
    for (int i = 0; i < n; i++)
        bytes += lens[i];
    CHECK_RECEIVED(&d, (unsigned long long)n, bytes);
    CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, from, TAG_ACK, MPI_COMM_WORLD));
}

static void section_probe(int partner, int sender)
{
    int tags[NSIZES];
    struct mpitest_counters before;
    MPI_Status st, st2;

    for (int i = 0; i < NSIZES; i++)
        tags[i] = TAG_BASE + i;
    if (sender) {
        send_all(partner, 1, tags, g_sizes, NSIZES, 0);
        return;
    }
    mpitest_counters_read(&before);
    for (int i = NSIZES - 1; i >= 0; i--) {
        mpitest_context("MPI_Probe for tag %d (%zu bytes)", tags[i], g_sizes[i]);
        CHECK_MPI(MPI_Probe(partner, tags[i], MPI_COMM_WORLD, &st));
        check_status(&st, partner, tags[i], g_sizes[i]);
        CHECK_MPI(MPI_Probe(MPI_ANY_SOURCE, tags[i], MPI_COMM_WORLD, &st2));
        check_status(&st2, partner, tags[i], g_sizes[i]);
        recv_exact(&st, 1, i, g_sizes[i]);
    }
    finish_recv(partner, &before, g_sizes, NSIZES);
}

static void section_iprobe(int partner, int sender)
{
    int tags[NSIZES];
    struct mpitest_counters before;
    MPI_Status st;
    int flag = -1;

    for (int i = 0; i < NSIZES; i++)
        tags[i] = TAG_BASE + i;
    if (sender) {
        send_all(partner, 2, tags, g_sizes, NSIZES, 1);
        return;
    }
    mpitest_context("MPI_Iprobe before anything was sent");
    mpitest_counters_read(&before);
    for (int k = 0; k < 100; k++) {
        CHECK_MPI(MPI_Iprobe(partner, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
        CHECK_EQ(flag, 0);
    }
    CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, partner, TAG_START, MPI_COMM_WORLD));
    for (int i = 0; i < NSIZES; i++) {
        double t0 = MPI_Wtime();

        mpitest_context("MPI_Iprobe ANY_SOURCE/ANY_TAG for message %d (%zu bytes)", i, g_sizes[i]);
        do {
            CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
            CHECK(MPI_Wtime() - t0 < 60.0);
        } while (!flag);
        check_status(&st, partner, tags[i], g_sizes[i]);
        CHECK_MPI(MPI_Iprobe(partner, TAG_NEVER, MPI_COMM_WORLD, &flag, &st));
        CHECK_EQ(flag, 0);
        CHECK_MPI(MPI_Iprobe(partner, tags[i], MPI_COMM_WORLD, &flag, &st));
        CHECK_EQ(flag, 1);
        recv_exact(&st, 2, i, g_sizes[i]);
    }
    finish_recv(partner, &before, g_sizes, NSIZES);
}

static void section_mprobe(int partner, int sender, int a, int b)
{
    const int tags[2] = {TAG_SAME, TAG_SAME};
    const size_t lens[2] = {g_sizes[a], g_sizes[b]};
    struct mpitest_counters before;
    MPI_Message msg_a, msg_b;
    MPI_Status st;
    uint8_t *buf_a, *buf_b;
    int section = 3 + a * NSIZES + b;

    if (sender) {
        send_all(partner, section, tags, lens, 2, 0);
        return;
    }
    mpitest_context("MPI_Mprobe of A (%zu bytes) then B (%zu bytes)", lens[0], lens[1]);
    mpitest_counters_read(&before);
    CHECK_MPI(MPI_Mprobe(partner, TAG_SAME, MPI_COMM_WORLD, &msg_a, &st));
    CHECK(msg_a != MPI_MESSAGE_NULL && msg_a != MPI_MESSAGE_NO_PROC);
    check_status(&st, partner, TAG_SAME, lens[0]);
    /* A is claimed: a probe of the same tag now sees B. */
    CHECK_MPI(MPI_Probe(partner, TAG_SAME, MPI_COMM_WORLD, &st));
    check_status(&st, partner, TAG_SAME, lens[1]);
    CHECK_MPI(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &msg_b, &st));
    check_status(&st, partner, TAG_SAME, lens[1]);
    buf_a = mpitest_malloc(lens[0]);
    buf_b = mpitest_malloc(lens[1]);
    CHECK_MPI(MPI_Mrecv(buf_b, (int)lens[1], MPI_BYTE, &msg_b, &st));
    CHECK(msg_b == MPI_MESSAGE_NULL);
    check_status(&st, partner, TAG_SAME, lens[1]);
    CHECK_DATA(buf_b, lens[1], seed_of(partner, TAG_SAME, section, 1));
    CHECK_MPI(MPI_Mrecv(buf_a, (int)lens[0], MPI_BYTE, &msg_a, &st));
    CHECK(msg_a == MPI_MESSAGE_NULL);
    check_status(&st, partner, TAG_SAME, lens[0]);
    CHECK_DATA(buf_a, lens[0], seed_of(partner, TAG_SAME, section, 0));
    free(buf_a);
    free(buf_b);
    finish_recv(partner, &before, lens, 2);
}

static void section_improbe(int partner, int sender)
{
    int tags[NSIZES];
    struct mpitest_counters before;
    MPI_Message msg;
    MPI_Request req;
    MPI_Status st;
    int flag;

    for (int i = 0; i < NSIZES; i++)
        tags[i] = TAG_BASE + i;
    if (sender) {
        send_all(partner, 100, tags, g_sizes, NSIZES, 1);
        return;
    }
    mpitest_counters_read(&before);
    mpitest_context("MPI_Improbe before anything was sent");
    CHECK_MPI(MPI_Improbe(partner, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg, &st));
    CHECK_EQ(flag, 0);
    CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, partner, TAG_START, MPI_COMM_WORLD));
    for (int i = 0; i < NSIZES; i++) {
        double t0 = MPI_Wtime();
        uint8_t *buf;

        mpitest_context("MPI_Improbe/MPI_Imrecv of message %d (%zu bytes)", i, g_sizes[i]);
        do {
            CHECK_MPI(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg, &st));
            CHECK(MPI_Wtime() - t0 < 60.0);
        } while (!flag);
        check_status(&st, partner, tags[i], g_sizes[i]);
        buf = mpitest_malloc(g_sizes[i]);
        CHECK_MPI(MPI_Imrecv(buf, (int)g_sizes[i], MPI_BYTE, &msg, &req));
        CHECK(msg == MPI_MESSAGE_NULL);
        CHECK_MPI(MPI_Wait(&req, &st));
        check_status(&st, partner, tags[i], g_sizes[i]);
        CHECK_DATA(buf, g_sizes[i], seed_of(partner, tags[i], 100, i));
        free(buf);
    }
    finish_recv(partner, &before, g_sizes, NSIZES);
}

static void check_proc_null_status(const MPI_Status *st)
{
    int count = -1;

    CHECK_EQ(st->MPI_SOURCE, MPI_PROC_NULL);
    CHECK_EQ(st->MPI_TAG, MPI_ANY_TAG);
    CHECK_MPI(MPI_Get_count(st, MPI_BYTE, &count));
    CHECK_EQ(count, 0);
}

static void section_proc_null(void)
{
    struct mpitest_counters before, after, d;
    MPI_Message msg;
    MPI_Request req;
    MPI_Status st;
    int flag = 0;
    char buf[8] = "unused";

    mpitest_context("probes of MPI_PROC_NULL");
    mpitest_counters_read(&before);
    CHECK_MPI(MPI_Probe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &st));
    check_proc_null_status(&st);
    CHECK_MPI(MPI_Iprobe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &flag, &st));
    CHECK_EQ(flag, 1);
    check_proc_null_status(&st);
    CHECK_MPI(MPI_Mprobe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &msg, &st));
    CHECK(msg == MPI_MESSAGE_NO_PROC);
    check_proc_null_status(&st);
    CHECK_MPI(MPI_Mrecv(buf, sizeof(buf), MPI_BYTE, &msg, &st));
    CHECK(msg == MPI_MESSAGE_NULL);
    check_proc_null_status(&st);
    flag = 0;
    CHECK_MPI(MPI_Improbe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &flag, &msg, &st));
    CHECK_EQ(flag, 1);
    CHECK(msg == MPI_MESSAGE_NO_PROC);
    CHECK_MPI(MPI_Imrecv(buf, sizeof(buf), MPI_BYTE, &msg, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    check_proc_null_status(&st);
    CHECK(strcmp(buf, "unused") == 0);
    mpitest_counters_read(&after);
    mpitest_counters_diff(&after, &before, &d);
    CHECK_COUNTER(d.nm_send_msgs + d.nm_am_send, ==, 0);
}

static void section_all_sources(int use_mprobe)
{
    int me = g_mpitest_rank, np = g_mpitest_size;
    int section = 200 + use_mprobe;
    struct mpitest_counters before;
    size_t *lens = mpitest_malloc((size_t)np * sizeof(*lens));
    char seen[64] = {0};

    for (int r = 0; r < np; r++)
        lens[r] = g_sizes[r % NSIZES];
    if (me != 0) {
        int tag = TAG_ALL + me;

        send_all(0, section, &tag, &lens[me], 1, 0);
        free(lens);
        return;
    }
    mpitest_counters_read(&before);
    for (int k = 1; k < np; k++) {
        MPI_Status st;
        int from;

        mpitest_context("%s ANY_SOURCE, message %d of %d", use_mprobe ? "MPI_Mprobe" : "MPI_Probe",
                        k, np - 1);
        if (use_mprobe) {
            MPI_Message msg;
            uint8_t *buf;

            CHECK_MPI(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &msg, &st));
            from = st.MPI_SOURCE;
            CHECK(from >= 1 && from < np && !seen[from]);
            check_status(&st, from, TAG_ALL + from, lens[from]);
            buf = mpitest_malloc(lens[from]);
            CHECK_MPI(MPI_Mrecv(buf, (int)lens[from], MPI_BYTE, &msg, &st));
            check_status(&st, from, TAG_ALL + from, lens[from]);
            CHECK_DATA(buf, lens[from], seed_of(from, TAG_ALL + from, section, 0));
            free(buf);
        } else {
            CHECK_MPI(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            from = st.MPI_SOURCE;
            CHECK(from >= 1 && from < np && !seen[from]);
            check_status(&st, from, TAG_ALL + from, lens[from]);
            recv_exact(&st, section, 0, lens[from]);
        }
        seen[from] = 1;
    }
    {
        struct mpitest_counters after, d;
        unsigned long long bytes = 0;

        mpitest_counters_read(&after);
        mpitest_counters_diff(&after, &before, &d);
        for (int r = 1; r < np; r++)
            bytes += lens[r];
        CHECK_RECEIVED(&d, (unsigned long long)(np - 1), bytes);
        for (int r = 1; r < np; r++)
            CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, r, TAG_ACK, MPI_COMM_WORLD));
    }
    free(lens);
}

int main(int argc, char **argv)
{
    int partner;

    mpitest_init(&argc, &argv, "probe");
    CHECK_LE(g_mpitest_size, 64);
    g_max = mpitest_env_size("MPITEST_MAX_SIZE", 4u << 20);
    CHECK(g_max <= (size_t)1 << 30);
    build_sizes();
    partner = g_mpitest_rank ^ 1;
    if (partner < g_mpitest_size) {
        int sender = g_mpitest_rank < partner;

        section_probe(partner, sender);
        section_iprobe(partner, sender);
        for (int a = 0; a < NSIZES; a++)
            section_mprobe(partner, sender, a, NSIZES - 1 - a);
        section_improbe(partner, sender);
    }
    section_proc_null();
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    section_all_sources(0);
    section_all_sources(1);
    mpitest_finalize();
    return 0;
}
