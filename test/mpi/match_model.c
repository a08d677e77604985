/*
 * Wildcard matching as MPI code relies on it (issue 39): one arrival order for
 * every wildcard match, so that a probe and the wildcard receive after it
 * agree, on top of MPI's non-overtaking rule.
 *
 * 1. Probe pairs, the pattern of the issue: every rank sends 1, 2 and 3 ints
 *    (one tag) to every rank, itself included, then receives 3 x size
 *    messages (one tag in odd iterations, another in even ones: a rank can
 *    be one iteration ahead), each one found first by a probe with
 *    MPI_ANY_SOURCE:
 *    MPI_Probe + MPI_Recv(MPI_ANY_SOURCE) into a buffer of exactly the probed
 *    count (as MPICH's own MPI_Dist_graph_create does), MPI_Iprobe in a loop +
 *    MPI_Recv(MPI_ANY_SOURCE), MPI_Mprobe + MPI_Mrecv, MPI_Improbe +
 *    MPI_Imrecv, in turn. The receive must return the probed message: the
 *    same source, the same count, and the data that source sent with that
 *    count; messages from one source come in send order. Errors return (a
 *    truncated receive is counted, not fatal) and every rank prints how many
 *    pairs disagreed before the job fails, so a failure shows the rate.
 * 2. MPI_Dist_graph_create with destinations {r-1, r, r+1} (mod size),
 *    unweighted and weighted, MPITEST_MATCH_GRAPHS (500) times each: the
 *    in-degree is 3 and the sources are {r+1, r, r-1}. MPICH builds the graph
 *    with MPI_Probe(MPI_ANY_SOURCE) and MPI_Recv(MPI_ANY_SOURCE).
 * 3. Random rounds (MPITEST_MATCH_ROUNDS, 200), a model of matching under MPI:
 *    every rank plans 0-10 messages to random ranks (itself too) on two
 *    communicators, 4 tags, sizes from 32 B to past the medium size (and
 *    read-sized ones now and then), sent by MPI_Isend or MPI_Issend; the plans
 *    are exchanged, so every receiver knows every message it will get (its
 *    source, communicator, tag, size and place in its sender's order). It
 *    receives them in a random style per message: MPI_Probe(ANY, ANY) +
 *    MPI_Recv(ANY, ANY) of the probed size (they must agree), MPI_Iprobe(ANY,
 *    tag) + MPI_Recv(probed source, probed tag), MPI_Mprobe + MPI_Mrecv,
 *    MPI_Recv(ANY, ANY), MPI_Recv(source, ANY_TAG), MPI_Recv(ANY, tag), and a
 *    receive posted for a tag never sent and cancelled. Each message carries
 *    its plan entry; every receive checks status against it, its data, that
 *    it was not received before, and non-overtaking: no earlier message of
 *    the same sender and communicator that the receive also matched is still
 *    waiting. At the end of each round every planned message was received.
 * 4. Arrival order across MPICH's shared memory and efarm
 *    (MPITEST_MATCH_CROSS, 64): a receiver gets one message from its partner
 *    and one from itself, in a known order, and every kind of MPI_ANY_SOURCE
 *    operation must find the earlier (cross_module_order).
 *
 * Runs with 2, 4 and 8 ranks, and under efasim's faults. Seed: MPITEST_SEED.
 */
#include "efarm_mpitest.h"

#include <stdlib.h>
#include <string.h>

enum { TAG_PAIRS = 7, NTAGS = 4, TAG_NEVER = 99, MAX_PLAN = 10, NSTYLES = 7 };

static MPI_Comm g_comms[2];
static uint64_t g_rng;

static unsigned rnd(unsigned n)
{
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)((g_rng >> 33) % n);
}

/* ---- 1. Probe pairs ---------------------------------------------------------------------- */

static void probe_pairs(unsigned iters)
{
    const int n = g_mpitest_size, me = g_mpitest_rank;
    int *sendbuf = mpitest_malloc((size_t)n * 3 * 3 * sizeof(int));
    MPI_Request *reqs = mpitest_malloc((size_t)n * 3 * sizeof(MPI_Request));
    MPI_Status *sts = mpitest_malloc((size_t)n * 3 * sizeof(MPI_Status));
    long long wrong = 0, pairs = 0, total_wrong = 0;
    int *next_k = mpitest_malloc((size_t)n * sizeof(int));

    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    for (unsigned it = 0; it < iters; it++) {
        /* A rank can be one iteration ahead (never two): alternate tags keep iterations apart. */
        int style = (int)(it % 4), bad_iter = 0, tag = TAG_PAIRS + (int)(it & 1);

        mpitest_context("probe pairs: iteration %u, style %d", it, style);
        for (int d = 0; d < n; d++)
            for (int k = 0; k < 3; k++) {
                int *b = &sendbuf[(d * 3 + k) * 3];

                for (int j = 0; j <= k; j++)
                    b[j] = me * 1000 + k * 10 + j;
                CHECK_MPI(MPI_Isend(b, k + 1, MPI_INT, d, tag, MPI_COMM_WORLD, &reqs[d * 3 + k]));
            }
        memset(next_k, 0, (size_t)n * sizeof(int));
        for (int m = 0; m < 3 * n; m++) {
            MPI_Status ps, rs;
            MPI_Message msg;
            int pc = -1, rc = -1, rb[3] = {-1, -1, -1}, flag = 0, err;

            switch (style) {
            case 0:
                CHECK_MPI(MPI_Probe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &ps));
                CHECK_MPI(MPI_Get_count(&ps, MPI_INT, &pc));
                CHECK(pc >= 1 && pc <= 3);
                err = MPI_Recv(rb, pc, MPI_INT, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &rs);
                break;
            case 1:
                while (!flag)
                    CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, &ps));
                CHECK_MPI(MPI_Get_count(&ps, MPI_INT, &pc));
                CHECK(pc >= 1 && pc <= 3);
                err = MPI_Recv(rb, pc, MPI_INT, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &rs);
                break;
            case 2:
                CHECK_MPI(MPI_Mprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &msg, &ps));
                CHECK_MPI(MPI_Get_count(&ps, MPI_INT, &pc));
                CHECK(pc >= 1 && pc <= 3);
                err = MPI_Mrecv(rb, pc, MPI_INT, &msg, &rs);
                break;
            default: {
                MPI_Request r;

                while (!flag)
                    CHECK_MPI(MPI_Improbe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, &msg, &ps));
                CHECK_MPI(MPI_Get_count(&ps, MPI_INT, &pc));
                CHECK(pc >= 1 && pc <= 3);
                CHECK_MPI(MPI_Imrecv(rb, pc, MPI_INT, &msg, &r));
                err = MPI_Wait(&r, &rs);
                break;
            }
            }
            pairs++;
            if (err == MPI_SUCCESS)
                CHECK_MPI(MPI_Get_count(&rs, MPI_INT, &rc));
            if (err != MPI_SUCCESS || rs.MPI_SOURCE != ps.MPI_SOURCE || rc != pc) {
                /* Counted, not fatal: the message was still consumed, the round goes on. */
                if (wrong < 3)
                    printf("match_model: rank %d iteration %u style %d: probe said source %d count "
                           "%d, the receive returned source %d count %d (error %d)\n",
                           me, it, style, ps.MPI_SOURCE, pc, rs.MPI_SOURCE, rc, err);
                wrong++;
                bad_iter = 1;
                continue;
            }
            /* The message the probe named, whole, and in its sender's order. */
            CHECK(rs.MPI_SOURCE >= 0 && rs.MPI_SOURCE < n);
            if (!bad_iter)
                CHECK_EQ(rc, next_k[rs.MPI_SOURCE] + 1);
            for (int j = 0; j < rc; j++)
                CHECK_EQ(rb[j], rs.MPI_SOURCE * 1000 + (rc - 1) * 10 + j);
            next_k[rs.MPI_SOURCE]++;
        }
        CHECK_MPI(MPI_Waitall(3 * n, reqs, sts));
        for (int s = 0; s < n && !bad_iter; s++)
            CHECK_EQ(next_k[s], 3);
    }
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    CHECK_MPI(MPI_Allreduce(&wrong, &total_wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    if (me == 0)
        printf("match_model: probe pairs: %lld wrong of %lld on rank 0, %lld wrong in all\n", wrong,
               pairs, total_wrong);
    CHECK_EQ(total_wrong, 0);
    free(sendbuf);
    free(reqs);
    free(sts);
    free(next_k);
}

/* ---- 2. MPI_Dist_graph_create ------------------------------------------------------------ */

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

static void dist_graphs(unsigned count)
{
    const int n = g_mpitest_size, me = g_mpitest_rank;
    int dest[3] = {(me - 1 + n) % n, me, (me + 1) % n}, weights[3] = {1, 2, 3};
    int expect[3] = {(me + 1) % n, me, (me - 1 + n) % n};

    qsort(expect, 3, sizeof(int), cmp_int);
    for (unsigned i = 0; i < 2 * count; i++) {
        int weighted = (int)(i & 1), indeg = -1, outdeg = -1, isw = -1;
        int src[8], srcw[8], dst[8], dstw[8];
        MPI_Comm g;

        mpitest_context("dist graph %u (%s)", i / 2, weighted ? "weighted" : "unweighted");
        CHECK_MPI(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &me, (int[]){3}, dest,
                                        weighted ? weights : MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g));
        CHECK_MPI(MPI_Dist_graph_neighbors_count(g, &indeg, &outdeg, &isw));
        CHECK_EQ(indeg, 3);
        CHECK_EQ(outdeg, 3);
        CHECK_EQ(isw, weighted);
        CHECK_MPI(MPI_Dist_graph_neighbors(g, 3, src, weighted ? srcw : MPI_UNWEIGHTED, 3, dst,
                                           weighted ? dstw : MPI_UNWEIGHTED));
        qsort(src, 3, sizeof(int), cmp_int);
        for (int j = 0; j < 3; j++)
            CHECK_EQ(src[j], expect[j]);
        CHECK_MPI(MPI_Comm_free(&g));
    }
}

/* ---- 3. Random rounds --------------------------------------------------------------------- */

/* One planned message, as its sender announced it and as it travels (the first 32 bytes). */
struct plan {
    int32_t src, dst, comm, tag;
    int32_t seq;  /* its place among its sender's messages to dst on comm */
    int32_t len;  /* bytes, at least sizeof(struct plan) */
    int32_t sync; /* MPI_Issend */
    int32_t round;
};

static size_t g_sizes[6];
/* A draw of 0..15 to an index of g_sizes: mostly small, so a round stays short. */
static const unsigned char size_draw[16] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 5};

static void build_sizes(size_t max)
{
    const struct mpitest_limits *l = &g_mpitest_limits;
    const size_t s[6] = {sizeof(struct plan), 100,
                         l->eager_lo,         l->eager_hi + 50,
                         l->medium_max + 100, l->read_min + 8};

    for (int i = 0; i < 6; i++)
        g_sizes[i] = s[i] < max ? s[i] : max;
}

static uint64_t plan_seed(const struct plan *p)
{
    return mpitest_seed((uint64_t)p->src, (uint64_t)p->dst,
                        (uint64_t)p->round * 16 + (uint64_t)p->comm, (uint64_t)p->seq);
}

/* Whether a receive for (source, tag) on comm matches planned message p. */
static int matches(const struct plan *p, int comm, int source, int tag)
{
    return p->comm == comm && (source == MPI_ANY_SOURCE || source == p->src) &&
           (tag == MPI_ANY_TAG || tag == p->tag);
}

struct inbox {
    struct plan *msgs; /* every message planned for this rank this round */
    char *got;
    int n, left;
};

/* A receive for (source, tag) on comm returned buf with status st: check it against the plan. */
static void received(struct inbox *in, int comm, int source, int tag, const char *buf,
                     const MPI_Status *st)
{
    struct plan p;
    int count = -1, idx = -1;

    CHECK_MPI(MPI_Get_count(st, MPI_BYTE, &count));
    CHECK_GE(count, (int)sizeof(p));
    memcpy(&p, buf, sizeof(p));
    for (int i = 0; i < in->n; i++)
        if (in->msgs[i].src == p.src && in->msgs[i].comm == p.comm && in->msgs[i].seq == p.seq)
            idx = i;
    CHECK(idx >= 0);
    CHECK(!in->got[idx]);
    CHECK(memcmp(&in->msgs[idx], &p, sizeof(p)) == 0);
    CHECK(matches(&p, comm, source, tag));
    CHECK_EQ(st->MPI_SOURCE, p.src);
    CHECK_EQ(st->MPI_TAG, p.tag);
    CHECK_EQ(count, p.len);
    CHECK_DATA(buf + sizeof(p), (size_t)p.len - sizeof(p), plan_seed(&p));
    /* Non-overtaking: no earlier message of this sender and communicator that matched waits. */
    for (int i = 0; i < in->n; i++)
        if (!in->got[i] && in->msgs[i].src == p.src && in->msgs[i].comm == p.comm &&
            in->msgs[i].seq < p.seq && matches(&in->msgs[i], comm, source, tag))
            mpitest_fail(__FILE__, __LINE__,
                         "message %d of rank %d (tag %d) overtook its message %d (tag %d); "
                         "receive for source %d tag %d",
                         p.seq, p.src, p.tag, in->msgs[i].seq, in->msgs[i].tag, source, tag);
    in->got[idx] = 1;
    in->left--;
}

/* A waiting message of this round, chosen at random: the key a receive can ask for. */
static const struct plan *pick_waiting(const struct inbox *in)
{
    int k = (int)rnd((unsigned)in->left);

    for (int i = 0; i < in->n; i++)
        if (!in->got[i] && k-- == 0)
            return &in->msgs[i];
    return NULL;
}

static void receive_one(struct inbox *in, char *buf, size_t max, long long *probe_agree)
{
    const struct plan *w = pick_waiting(in);
    int style = (int)rnd(NSTYLES), c = w->comm, flag = 0, count = -1;
    MPI_Comm comm = g_comms[c];
    MPI_Status ps, rs;
    MPI_Message msg;
    MPI_Request r;

    mpitest_context("random rounds: style %d, waiting for (src %d, comm %d, tag %d, seq %d)", style,
                    w->src, c, w->tag, w->seq);
    switch (style) {
    case 0: /* MPI_Probe + MPI_Recv, both wildcards, of exactly the probed size */
        CHECK_MPI(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &ps));
        CHECK_MPI(MPI_Get_count(&ps, MPI_BYTE, &count));
        CHECK_MPI(MPI_Recv(buf, count, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &rs));
        CHECK_EQ(rs.MPI_SOURCE, ps.MPI_SOURCE);
        CHECK_EQ(rs.MPI_TAG, ps.MPI_TAG);
        (*probe_agree)++;
        received(in, c, MPI_ANY_SOURCE, MPI_ANY_TAG, buf, &rs);
        break;
    case 1: /* MPI_Iprobe(ANY, tag), then a receive naming what the probe found */
        while (!flag)
            CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, w->tag, comm, &flag, &ps));
        CHECK_MPI(MPI_Recv(buf, (int)max, MPI_BYTE, ps.MPI_SOURCE, ps.MPI_TAG, comm, &rs));
        CHECK_MPI(MPI_Get_count(&rs, MPI_BYTE, &count));
        CHECK_MPI(MPI_Get_count(&ps, MPI_BYTE, &flag));
        CHECK_EQ(count, flag);
        received(in, c, ps.MPI_SOURCE, ps.MPI_TAG, buf, &rs);
        break;
    case 2: /* MPI_Mprobe + MPI_Mrecv */
        CHECK_MPI(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &msg, &ps));
        CHECK_MPI(MPI_Get_count(&ps, MPI_BYTE, &count));
        CHECK_MPI(MPI_Mrecv(buf, count, MPI_BYTE, &msg, &rs));
        CHECK_EQ(rs.MPI_SOURCE, ps.MPI_SOURCE);
        received(in, c, MPI_ANY_SOURCE, MPI_ANY_TAG, buf, &rs);
        break;
    case 3:
        CHECK_MPI(MPI_Recv(buf, (int)max, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &rs));
        received(in, c, MPI_ANY_SOURCE, MPI_ANY_TAG, buf, &rs);
        break;
    case 4:
        CHECK_MPI(MPI_Recv(buf, (int)max, MPI_BYTE, w->src, MPI_ANY_TAG, comm, &rs));
        received(in, c, w->src, MPI_ANY_TAG, buf, &rs);
        break;
    case 5:
        CHECK_MPI(MPI_Irecv(buf, (int)max, MPI_BYTE, MPI_ANY_SOURCE, w->tag, comm, &r));
        CHECK_MPI(MPI_Wait(&r, &rs));
        received(in, c, MPI_ANY_SOURCE, w->tag, buf, &rs);
        break;
    default: /* a receive for a tag nobody sends, cancelled: it takes nothing */
        CHECK_MPI(MPI_Irecv(buf, (int)max, MPI_BYTE, MPI_ANY_SOURCE, TAG_NEVER, comm, &r));
        CHECK_MPI(MPI_Cancel(&r));
        CHECK_MPI(MPI_Wait(&r, &rs));
        CHECK_MPI(MPI_Test_cancelled(&rs, &flag));
        CHECK(flag);
        break;
    }
}

static void random_rounds(unsigned rounds, size_t max)
{
    const int n = g_mpitest_size, me = g_mpitest_rank;
    struct plan *out = mpitest_malloc(MAX_PLAN * sizeof(struct plan));
    struct plan *all = mpitest_malloc((size_t)n * MAX_PLAN * sizeof(struct plan));
    struct inbox in = {mpitest_malloc((size_t)n * MAX_PLAN * sizeof(struct plan)),
                       mpitest_malloc((size_t)n * MAX_PLAN), 0, 0};
    char *sbuf[MAX_PLAN], *rbuf = mpitest_malloc(max);
    MPI_Request reqs[MAX_PLAN];
    MPI_Status sts[MAX_PLAN];
    long long agree = 0, msgs = 0;
    int *seq = mpitest_malloc((size_t)n * 2 * sizeof(int));

    build_sizes(max);
    for (int i = 0; i < MAX_PLAN; i++)
        sbuf[i] = mpitest_malloc(max);
    for (unsigned round = 0; round < rounds; round++) {
        int nout = (int)rnd(MAX_PLAN + 1);

        mpitest_context("random rounds: round %u, planning", round);
        memset(seq, 0, (size_t)n * 2 * sizeof(int));
        memset(out, 0, MAX_PLAN * sizeof(struct plan));
        for (int i = 0; i < nout; i++) {
            struct plan *p = &out[i];
            unsigned sz = rnd(16);

            p->src = me;
            p->dst = (int32_t)rnd((unsigned)n);
            p->comm = (int32_t)rnd(2);
            p->tag = (int32_t)rnd(NTAGS);
            p->seq = seq[p->dst * 2 + p->comm]++;
            p->len = (int32_t)g_sizes[size_draw[sz]];
            p->sync = (int32_t)(rnd(4) == 0);
            p->round = (int32_t)round;
        }
        /* Everyone's plan to everyone (the unused entries have len 0). */
        CHECK_MPI(MPI_Allgather(out, MAX_PLAN * (int)sizeof(struct plan), MPI_BYTE, all,
                                MAX_PLAN * (int)sizeof(struct plan), MPI_BYTE, MPI_COMM_WORLD));
        in.n = 0;
        for (int i = 0; i < n * MAX_PLAN; i++)
            if (all[i].len > 0 && all[i].dst == me)
                in.msgs[in.n++] = all[i];
        memset(in.got, 0, (size_t)in.n);
        in.left = in.n;
        msgs += in.n;
        for (int i = 0; i < nout; i++) {
            memcpy(sbuf[i], &out[i], sizeof(struct plan));
            mpitest_fill(sbuf[i] + sizeof(struct plan), (size_t)out[i].len - sizeof(struct plan),
                         plan_seed(&out[i]));
            if (out[i].sync)
                CHECK_MPI(MPI_Issend(sbuf[i], out[i].len, MPI_BYTE, out[i].dst, out[i].tag,
                                     g_comms[out[i].comm], &reqs[i]));
            else
                CHECK_MPI(MPI_Isend(sbuf[i], out[i].len, MPI_BYTE, out[i].dst, out[i].tag,
                                    g_comms[out[i].comm], &reqs[i]));
        }
        while (in.left > 0)
            receive_one(&in, rbuf, max, &agree);
        CHECK_MPI(MPI_Waitall(nout, reqs, sts));
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    if (me == 0)
        printf("match_model: random rounds: %u rounds, %lld messages received by rank 0, %lld "
               "probe-then-receive pairs agreed\n",
               rounds, msgs, agree);
    for (int i = 0; i < MAX_PLAN; i++)
        free(sbuf[i]);
    free(out);
    free(all);
    free(in.msgs);
    free(in.got);
    free(rbuf);
    free(seq);
}

/* ---- 4. Arrival order across MPICH's shared memory and efarm ------------------------------ */

enum { TAG_CROSS = 40, TAG_GO = 41 };

/* Wait until a probe naming source `from` sees a message of tag TAG_CROSS on comm. */
static void wait_arrived(int from, MPI_Comm comm)
{
    int flag = 0;

    while (!flag)
        CHECK_MPI(MPI_Iprobe(from, TAG_CROSS, comm, &flag, MPI_STATUS_IGNORE));
}

/*
 * Pairs (r, r ^ 1): the receiver r gets one message from its partner (through
 * efarm) and one from itself (through MPICH's shared memory when it is built:
 * MPIR_CVAR_NOLOCAL keeps a rank's messages to itself there), in a known
 * order: each is seen by a probe naming its source before the other is sent.
 * Then an MPI_ANY_SOURCE operation (receive, probe, iprobe, mprobe, in turn)
 * must find the one that arrived first, as one unexpected queue would, and
 * the other is received after it. The partner sends first in even
 * iterations; in odd ones the receiver sends to itself first and then tells
 * the partner to send, on another communicator.
 */
static void cross_module_order(unsigned iters)
{
    const int me = g_mpitest_rank, partner = me ^ 1;
    MPI_Comm comm = g_comms[0], ctl = g_comms[1];
    int self_by_efarm = -1;

    if (partner >= g_mpitest_size)
        return; /* an odd rank out */
    for (unsigned it = 0; it < iters; it++) {
        int receiver = (int)(it / 2 % 2), partner_first = !(it & 1), style = (int)(it / 4 % 4);
        int first, value = -1, flag = 0;
        MPI_Status st;
        MPI_Message msg;
        MPI_Request sreq;

        mpitest_context("cross-module order: iteration %u, %s first, style %d", it,
                        partner_first ? "the partner" : "self", style);
        if ((me & 1) != receiver) {
            /* The partner: one message to the receiver, when told to in odd iterations. */
            int v = 1000 + (int)it;

            if (!partner_first)
                CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, partner, TAG_GO, ctl, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Send(&v, 1, MPI_INT, partner, TAG_CROSS, comm));
            CHECK_MPI(MPI_Barrier(ctl));
            continue;
        }
        {
            int self_v = 2000 + (int)it;

            if (partner_first) {
                wait_arrived(partner, comm);
                CHECK_MPI(MPI_Isend(&self_v, 1, MPI_INT, me, TAG_CROSS, comm, &sreq));
                wait_arrived(me, comm);
            } else {
                unsigned long long before =
                    mpitest_pvar_checks() ? mpitest_pvar_read("efarm_nm_send_msgs") : 0;

                CHECK_MPI(MPI_Isend(&self_v, 1, MPI_INT, me, TAG_CROSS, comm, &sreq));
                wait_arrived(me, comm);
                if (self_by_efarm < 0 && mpitest_pvar_checks())
                    self_by_efarm = mpitest_pvar_read("efarm_nm_send_msgs") != before;
                CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, partner, TAG_GO, ctl));
                wait_arrived(partner, comm);
            }
            first = partner_first ? partner : me;
            switch (style) {
            case 0:
                CHECK_MPI(MPI_Recv(&value, 1, MPI_INT, MPI_ANY_SOURCE, TAG_CROSS, comm, &st));
                break;
            case 1:
                CHECK_MPI(MPI_Probe(MPI_ANY_SOURCE, TAG_CROSS, comm, &st));
                break;
            case 2:
                CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &st));
                CHECK(flag);
                break;
            default:
                CHECK_MPI(MPI_Mprobe(MPI_ANY_SOURCE, TAG_CROSS, comm, &msg, &st));
                CHECK_MPI(MPI_Mrecv(&value, 1, MPI_INT, &msg, MPI_STATUS_IGNORE));
                break;
            }
            if (st.MPI_SOURCE != first)
                mpitest_fail(__FILE__, __LINE__,
                             "MPI_ANY_SOURCE (style %d) found rank %d's message, which arrived "
                             "after rank %d's",
                             style, st.MPI_SOURCE, first);
            if (style == 0 || style == 3)
                CHECK_EQ(value, (first == me ? 2000 : 1000) + (int)it);
            /* The rest, by their sources. */
            for (int k = 0; k < 2; k++) {
                int from = k == 0 ? first : (first == me ? partner : me);

                if ((style == 0 || style == 3) && k == 0)
                    continue;
                CHECK_MPI(MPI_Recv(&value, 1, MPI_INT, from, TAG_CROSS, comm, MPI_STATUS_IGNORE));
                CHECK_EQ(value, (from == me ? 2000 : 1000) + (int)it);
            }
            CHECK_MPI(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
        }
        CHECK_MPI(MPI_Barrier(ctl));
    }
    /* efarm's MPICH keeps its shared-memory module: through efarm, this part would prove nothing.
     */
    if (self_by_efarm == 1)
        mpitest_fail(__FILE__, __LINE__,
                     "a message to self went through efarm, not MPICH's shared memory: the "
                     "cross-module order was not exercised");
    if (me == 0)
        printf("match_model: cross-module order: %u iterations; messages to self through %s\n",
               iters,
               self_by_efarm < 0 ? "(not measured)"
               : self_by_efarm   ? "efarm (no shared memory: one queue)"
                                 : "MPICH's shared memory");
}

int main(int argc, char **argv)
{
    struct mpitest_counters c0, c1;
    unsigned iters, graphs, rounds, cross;
    size_t max;

    mpitest_init(&argc, &argv, "match_model");
    iters = (unsigned)mpitest_env_size("MPITEST_MATCH_ITERS", 1000);
    graphs = (unsigned)mpitest_env_size("MPITEST_MATCH_GRAPHS", 500);
    rounds = (unsigned)mpitest_env_size("MPITEST_MATCH_ROUNDS", 200);
    cross = (unsigned)mpitest_env_size("MPITEST_MATCH_CROSS", 64);
    max = mpitest_env_size("MPITEST_MAX_SIZE", 2u << 20);
    g_rng = mpitest_seed(mpitest_env_size("MPITEST_SEED", 1), (uint64_t)g_mpitest_rank, 39, 0) | 1;
    /* Two communicators with world's ranks: the same keys, separate matching. */
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &g_comms[0]));
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &g_comms[1]));
    mpitest_counters_read(&c0);
    probe_pairs(iters);
    dist_graphs(graphs);
    random_rounds(rounds, max);
    cross_module_order(cross);
    mpitest_counters_read(&c1);
    /* The traffic crossed efarm (self-sends and shared memory aside, with 2 ranks or more). */
    CHECK(c1.nm_recv_msgs > c0.nm_recv_msgs || !mpitest_pvar_checks());
    CHECK_MPI(MPI_Comm_free(&g_comms[0]));
    CHECK_MPI(MPI_Comm_free(&g_comms[1]));
    mpitest_finalize();
    return 0;
}
