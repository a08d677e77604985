/*
 * The engine suite's model test of MPI matching (see proto_rig.h): random
 * operations at a receiver b, each checked at once against a reference
 * matcher written plainly here (arrays in arrival and posting order,
 * searched from the front; nothing shared with src/proto/tm.c or tm_model.h).
 *
 * Three endpoints on efasim in one process: b receives from a1, a2 and from
 * itself (b's own address inserted into its address vector). A sender names
 * any (context, source, tag) in the wire tag, and the keys are few (2
 * contexts, sources 0..3, tags 0..3), so keys of different senders collide
 * all the time and only the order of arrival can tell their messages apart.
 *
 * The order of arrival is known exactly: one operation sends a batch of one
 * to four messages from one sender only (the engine delivers a peer's
 * messages in send order) and waits until b has handled every one of them
 * (each went unexpected, or the receive it matched completed) before
 * anything else happens. Operations at b between batches: post a receive
 * (exact, ANY_SOURCE, ANY_TAG or both), peek with a probe, claim with a
 * matched probe and later receive the claimed message with tmrecv, cancel a
 * posted receive (or try to cancel one that matched). The reference says
 * which message each receive takes (the earliest-arrived matching one),
 * which receive each arrival takes (the earliest-posted matching one), what
 * each probe reports, and that a claimed message is out of matching.
 *
 * Messages take every subprotocol (eager, medium, long-CTS and the read
 * protocols at g_small's thresholds, some DC, some with CQ data, some
 * injected); receive buffers are sometimes shorter than the message. The
 * payload is a pattern seeded by the message's id, so every completed
 * receive shows exactly which message it got: its key, length, peer, CQ
 * data and bytes are checked, and the guard bytes past what it delivered.
 * On failure the last operations are printed, with the seed that replays
 * the run (efarm-unit --seed N proto_match_model).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "efarm_errno.h"
#include "efarm_pkt.h"
#include "efarm_proto.h"
#include "efarm_test.h"
#include "proto_common.h"
#include "proto_rig.h"

enum {
    MM_B = 0,           /* the receiver's index among the endpoints */
    MM_EPS = 3,         /* b, a1, a2 */
    MM_SELF = 2,        /* the sender index of b sending to itself (a1 is 0, a2 is 1) */
    MM_SENDERS = 3,     /* a1, a2, b */
    MM_CONTEXTS = 2,    /* contexts MM_CTX0 and MM_CTX0 + 1 */
    MM_CTX0 = 5,        /* not HS_CTX, which the warm-up uses */
    MM_KEYS = 4,        /* sources and tags 0..3 */
    MM_LIST_MAX = 32,   /* posted receives at most; waiting plus claimed messages at most */
    MM_CLAIMED_MAX = 8, /* claimed messages at most */
    MM_BATCH_MAX = 4,
    MM_TRACE = 40, /* operations printed on failure */
    MM_TRACE_LEN = 256,
};

static const char *const g_sender_name[MM_SENDERS] = {"a1", "a2", "b"};
static const char *const g_shape_name[4] = {"exact", "ANY_SOURCE", "ANY_TAG", "ANY_SOURCE+ANY_TAG"};

struct mm_key {
    uint32_t context;
    int32_t source, tag; /* EFARM_ANY_* in a receive or a probe */
};

struct mm_msg {
    unsigned sender;
    struct mm_key key;
    uint64_t len;
    uint32_t flags; /* EFARM_SEND_* */
    uint64_t cq_data;
    uint8_t *src; /* pattern seeded by the message's id (its index + 1) */
    struct efarm_req sreq;
    unsigned sends_done; /* completions of sreq (its callback) */
    bool sent_now;       /* by efarm_tsend_now: no request */
    int recv;            /* the receive that took it (reference), or -1 */
    efarm_tm_handle_t handle;
};

enum mm_recv_state { RECV_POSTED, RECV_DONE, RECV_CANCELLED };

struct mm_recv {
    struct mm_key key;
    uint64_t buf_len;
    uint8_t *buf; /* buf_len bytes and GUARD guard bytes */
    struct efarm_req req;
    unsigned completions; /* of req (its callback) */
    int msg;              /* the message the reference says it takes, or -1 */
    enum mm_recv_state state;
};

/* What one run covered (EFARM_TEST_VERBOSE prints it; the end checks minimums). */
struct mm_stats {
    unsigned batches, msgs, by_sender[MM_SENDERS], proto[EFARM_PROTO_COUNT];
    unsigned dc, cq, inject, now, arrived_matched, arrived_waiting;
    unsigned posts[4], posts_matched, peeks, peek_hits, claims, claim_hits;
    unsigned tmrecvs, stale_tmrecvs, cancels, cancels_refused, cancels_receiving, truncated;
};

struct mm_world {
    struct efarm_ep *ep[MM_EPS];
    struct efarm_ep *sender_ep[MM_SENDERS];
    efarm_peer_t to_b[MM_SENDERS]; /* b in the sender's address vector */
    efarm_peer_t at_b[MM_SENDERS]; /* the sender in b's address vector */
    uint64_t eager_max, medium_max, read_min, len_max;
    struct mm_msg *msgs;
    struct mm_recv *recvs;
    unsigned nmsgs, max_msgs, nrecvs, max_recvs, sent_done; /* msgs[< sent_done] checked */
    /* The reference matcher: indices into msgs and recvs, in arrival and posting order. */
    unsigned waiting[MM_LIST_MAX], nwaiting;
    unsigned posted[MM_LIST_MAX], nposted;
    unsigned claimed[MM_CLAIMED_MAX], nclaimed;
    uint64_t unexpected_total, truncated_total; /* what b's counters must have grown by */
    uint64_t unexpected0, truncated0;
    unsigned step;
    bool running;
    char trace[MM_TRACE][MM_TRACE_LEN];
    unsigned ntrace;
    struct mm_stats st;
};

static struct mm_world *g_model; /* for the trace at exit */

static uint64_t rnd(uint64_t n)
{
    return efarm_test_rand() % n;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* ---- The trace: what happened last, printed when a check fails -------------------------- */

static void trace_dump(void)
{
    struct mm_world *w = g_model;

    if (w == NULL || !w->running)
        return;
    fprintf(stderr, "  last operations (seed %#llx; efarm-unit --seed %#llx <test> replays):\n",
            (unsigned long long)efarm_test_seed(), (unsigned long long)efarm_test_seed());
    for (unsigned i = w->ntrace > MM_TRACE ? w->ntrace - MM_TRACE : 0; i < w->ntrace; i++)
        fprintf(stderr, "    %s\n", w->trace[i % MM_TRACE]);
}

static void trace(struct mm_world *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void trace(struct mm_world *w, const char *fmt, ...)
{
    char *line = w->trace[w->ntrace++ % MM_TRACE];
    int n = snprintf(line, MM_TRACE_LEN, "step %u: ", w->step);
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line + n, MM_TRACE_LEN - (size_t)n, fmt, ap);
    va_end(ap);
    efarm_test_context("seed %#llx %s", (unsigned long long)efarm_test_seed(), line);
}

static const char *key_str(const struct mm_key *k, char *buf, size_t n)
{
    char src[12], tag[12];

    snprintf(src, sizeof(src), "%d", k->source);
    snprintf(tag, sizeof(tag), "%d", k->tag);
    snprintf(buf, n, "(%u,%s,%s)", k->context, k->source == EFARM_ANY_SOURCE ? "*" : src,
             k->tag == EFARM_ANY_TAG ? "*" : tag);
    return buf;
}

static const char *msg_str(const struct mm_world *w, unsigned i, char *buf, size_t n)
{
    const struct mm_msg *m = &w->msgs[i];
    char k[40];

    snprintf(buf, n, "m%u %s%s %llu B%s%s", i + 1, g_sender_name[m->sender],
             key_str(&m->key, k, sizeof(k)), (unsigned long long)m->len,
             m->flags & EFARM_SEND_DC ? " DC" : "", m->flags & EFARM_SEND_CQ_DATA ? " cq" : "");
    return buf;
}

/* ---- The reference matcher ---------------------------------------------------------------- */

static bool key_matches(const struct mm_key *recv, const struct mm_key *msg)
{
    return recv->context == msg->context &&
           (recv->source == EFARM_ANY_SOURCE || recv->source == msg->source) &&
           (recv->tag == EFARM_ANY_TAG || recv->tag == msg->tag);
}

/* Position in `waiting` of the earliest-arrived message a receive key matches, or -1. */
static int ref_find_waiting(const struct mm_world *w, const struct mm_key *key)
{
    for (unsigned i = 0; i < w->nwaiting; i++) {
        if (key_matches(key, &w->msgs[w->waiting[i]].key))
            return (int)i;
    }
    return -1;
}

/* Position in `posted` of the earliest-posted receive a message matches, or -1. */
static int ref_find_posted(const struct mm_world *w, const struct mm_key *msg)
{
    for (unsigned i = 0; i < w->nposted; i++) {
        if (key_matches(&w->recvs[w->posted[i]].key, msg))
            return (int)i;
    }
    return -1;
}

/* Remove list[pos], keeping the order of the others; returns it. */
static unsigned list_take(unsigned *list, unsigned *n, unsigned pos)
{
    unsigned v = list[pos];

    memmove(&list[pos], &list[pos + 1], (*n - pos - 1) * sizeof(*list));
    (*n)--;
    return v;
}

/* ---- Endpoints ---------------------------------------------------------------------------- */

static void count_completion(struct efarm_req *req)
{
    unsigned *n = req->ctx;

    (*n)++;
}

static void progress_all(struct mm_world *w)
{
    for (unsigned i = 0; i < MM_EPS; i++)
        EXPECT_TRUE(efarm_ep_progress(w->ep[i]) >= 0);
}

/* Progress everything until *done; fail naming `what` after WAIT_S. */
static void wait_done(struct mm_world *w, const bool *done, const char *what, unsigned i)
{
    double deadline = proto_now_s() + WAIT_S;

    while (!*done) {
        if (proto_now_s() > deadline)
            efarm_test_fail(__FILE__, __LINE__, "%s%u not done after %.0f s", what, i + 1, WAIT_S);
        progress_all(w);
    }
}

/*
 * Each sender's first message (on HS_CTX, which the model never uses) brings
 * both HANDSHAKEs, so the model's DC sends find their peer's features known.
 */
static void warm_up(struct mm_world *w)
{
    double deadline = proto_now_s() + WAIT_S;

    for (unsigned s = 0; s < MM_SENDERS; s++) {
        uint8_t x = (uint8_t)s, got = 0xff;
        struct efarm_req sreq = {0}, rreq = {0};
        struct efarm_req *reqs[] = {&sreq, &rreq};

        efarm_test_context("warm-up from %s", g_sender_name[s]);
        EXPECT_RET(efarm_trecv(w->ep[MM_B], &got, 1, HS_CTX, 0, (int32_t)s, &rreq), 0);
        EXPECT_RET(
            efarm_tsend(w->sender_ep[s], w->to_b[s], &x, 1, HS_CTX, 0, (int32_t)s, 0, 0, &sreq), 0);
        proto_wait(w->ep, MM_EPS, reqs, 2, WAIT_S);
        EXPECT_EQ(got, s);
        EXPECT_EQ(rreq.peer, w->at_b[s]);
    }
    while (cnt(w->ep[MM_B])->handshakes_recv < MM_SENDERS || !cnt(w->ep[1])->handshakes_recv ||
           !cnt(w->ep[2])->handshakes_recv) {
        if (proto_now_s() > deadline)
            efarm_test_fail(__FILE__, __LINE__, "handshakes missing after %.0f s", WAIT_S);
        progress_all(w);
    }
}

/*
 * Open b, a1 and a2 with small thresholds; every sender knows b and b knows
 * every sender, itself included; then warm up.
 */
static void world_open(struct mm_world *w)
{
    uint8_t raw[MM_EPS][EFARM_RAW_ADDR_LEN];
    struct efarm_ep_policy pol;

    proto_use_efasim();
    for (unsigned i = 0; i < MM_EPS; i++) {
        EXPECT_RET(efarm_ep_open(&g_small, &w->ep[i]), 0);
        efarm_ep_addr(w->ep[i], raw[i]);
    }
    for (unsigned s = 0; s < MM_SENDERS; s++) {
        unsigned e = s == MM_SELF ? MM_B : s + 1;

        w->sender_ep[s] = w->ep[e];
        EXPECT_RET(efarm_av_insert(w->ep[e], raw[MM_B], &w->to_b[s]), 0);
        EXPECT_RET(efarm_av_insert(w->ep[MM_B], raw[e], &w->at_b[s]), 0);
    }
    /* b's own address is a peer of b like any other (the same entry both ways). */
    EXPECT_EQ(w->to_b[MM_SELF], w->at_b[MM_SELF]);
    efarm_ep_policy(w->ep[1], &pol);
    w->medium_max = pol.medium_max;
    w->read_min = pol.read_min;
    w->eager_max = efarm_ep_caps(w->ep[1])->max_msg_size -
                   req_hdr(rtm_type(EFARM_PROTO_EAGER, true, false), false, false);
    w->len_max = w->read_min + 16384;
    EXPECT_TRUE(w->eager_max < w->medium_max && w->medium_max < w->read_min);
    warm_up(w);
    w->unexpected0 = cnt(w->ep[MM_B])->unexpected;
    w->truncated0 = cnt(w->ep[MM_B])->truncated;
}

/* ---- Random messages, receives and keys ------------------------------------------------- */

/*
 * A length over every subprotocol: empty, eager, medium, long-CTS, read, and
 * one time in ten a threshold or its neighbour.
 */
static uint64_t random_len(const struct mm_world *w)
{
    const uint64_t edges[] = {w->eager_max,      w->eager_max + 1, w->medium_max,
                              w->medium_max + 1, w->read_min - 1,  w->read_min};
    uint64_t r = rnd(100);

    if (r < 4)
        return 0;
    if (r < 14)
        return edges[rnd(sizeof(edges) / sizeof(edges[0]))];
    if (r < 44)
        return 1 + rnd(w->eager_max);
    if (r < 64)
        return w->eager_max + 1 + rnd(w->medium_max - w->eager_max);
    if (r < 84)
        return w->medium_max + 1 + rnd(w->read_min - w->medium_max - 1);
    return w->read_min + rnd(w->len_max - w->read_min + 1);
}

/* A receive or probe key: exact 40%, ANY_SOURCE, ANY_TAG or both 20% each; shape in *shape_p. */
static void random_pattern(struct mm_key *k, unsigned *shape_p)
{
    uint64_t r = rnd(10);
    unsigned shape = r < 4 ? 0 : r < 6 ? 1 : r < 8 ? 2 : 3;

    k->context = MM_CTX0 + (uint32_t)rnd(MM_CONTEXTS);
    k->source = shape & 1 ? EFARM_ANY_SOURCE : (int32_t)rnd(MM_KEYS);
    k->tag = shape & 2 ? EFARM_ANY_TAG : (int32_t)rnd(MM_KEYS);
    *shape_p = shape;
}

/* A new message from sender s with a random key, length and flags; its buffer filled. */
static unsigned msg_new(struct mm_world *w, unsigned s)
{
    unsigned i = w->nmsgs++;
    struct mm_msg *m = &w->msgs[i];
    uint64_t r = rnd(100);

    EXPECT_TRUE(w->nmsgs <= w->max_msgs);
    m->sender = s;
    m->key.context = MM_CTX0 + (uint32_t)rnd(MM_CONTEXTS);
    m->key.source = (int32_t)rnd(MM_KEYS);
    m->key.tag = (int32_t)rnd(MM_KEYS);
    m->len = random_len(w);
    m->flags = r < 10 ? EFARM_SEND_DC : r < 20 ? EFARM_SEND_INJECT : 0;
    if (rnd(5) == 0) {
        m->flags |= EFARM_SEND_CQ_DATA;
        m->cq_data = 0xc0de000000000000ull | i;
    }
    m->recv = -1;
    m->src = malloc(m->len + 1);
    EXPECT_TRUE(m->src != NULL);
    proto_fill(m->src, m->len, i + 1);
    m->sreq.cb = count_completion;
    m->sreq.ctx = &m->sends_done;
    return i;
}

/* Start message i's send: efarm_tsend_now for some small plain ones, else efarm_tsend. */
static void msg_send_start(struct mm_world *w, unsigned i)
{
    struct mm_msg *m = &w->msgs[i];
    struct efarm_ep *ep = w->sender_ep[m->sender];
    efarm_peer_t peer = w->to_b[m->sender];

    w->st.msgs++;
    w->st.by_sender[m->sender]++;
    w->st.dc += (m->flags & EFARM_SEND_DC) != 0;
    w->st.cq += (m->flags & EFARM_SEND_CQ_DATA) != 0;
    w->st.inject += (m->flags & EFARM_SEND_INJECT) != 0;
    if (m->flags == EFARM_SEND_INJECT && m->len <= w->eager_max && rnd(2) == 0) {
        int ret = efarm_tsend_now(ep, peer, m->src, m->len, m->key.context, m->key.source,
                                  m->key.tag, m->flags);

        if (ret == 0) {
            m->sent_now = true;
            w->st.now++;
            w->st.proto[EFARM_PROTO_EAGER]++;
            return;
        }
        EXPECT_RET(ret, 1);
    }
    EXPECT_RET(efarm_tsend(ep, peer, m->src, m->len, m->key.context, m->key.source, m->key.tag,
                           m->flags, m->cq_data, &m->sreq),
               0);
    EXPECT_TRUE(m->sreq.proto < EFARM_PROTO_COUNT);
    w->st.proto[m->sreq.proto]++;
}

/* A new receive of key k with a random buffer: half the time room for any message. */
static unsigned recv_new(struct mm_world *w, const struct mm_key *k)
{
    unsigned i = w->nrecvs++;
    struct mm_recv *r = &w->recvs[i];

    EXPECT_TRUE(w->nrecvs <= w->max_recvs);
    r->key = *k;
    r->buf_len = rnd(2) ? w->len_max : random_len(w);
    r->buf = malloc(r->buf_len + GUARD);
    EXPECT_TRUE(r->buf != NULL);
    memset(r->buf, GUARD_BYTE, r->buf_len + GUARD);
    r->req.cb = count_completion;
    r->req.ctx = &r->completions;
    r->msg = -1;
    r->state = RECV_POSTED;
    return i;
}

/* ---- Checks ------------------------------------------------------------------------------- */

/* The message whose key, length, peer and first bytes a completed receive shows, or -1. */
static int identify(const struct mm_world *w, const struct mm_recv *r)
{
    uint64_t n = min_u64(min_u64(r->req.length, r->buf_len), 16);

    for (unsigned i = 0; i < w->nmsgs; i++) {
        const struct mm_msg *m = &w->msgs[i];
        uint64_t k = 0;

        if (m->len != r->req.msg_length || w->at_b[m->sender] != r->req.peer ||
            m->key.context != r->req.context || m->key.source != r->req.source ||
            m->key.tag != r->req.tag)
            continue;
        while (k < n && r->buf[k] == proto_pattern(i + 1, k))
            k++;
        if (k == n)
            return (int)i;
    }
    return -1;
}

/* Receive ri completed with exactly message mi, as the reference says; its buffer is freed. */
static void check_received(struct mm_world *w, unsigned ri, unsigned mi)
{
    struct mm_recv *r = &w->recvs[ri];
    const struct mm_msg *m = &w->msgs[mi];
    uint64_t got = min_u64(m->len, r->buf_len);
    char a[96], b[96];

    EXPECT_TRUE(r->req.done);
    EXPECT_EQ(r->completions, 1);
    if (r->req.msg_length != m->len || r->req.peer != w->at_b[m->sender] ||
        r->req.context != m->key.context || r->req.source != m->key.source ||
        r->req.tag != m->key.tag) {
        int other = identify(w, r);

        efarm_test_fail(__FILE__, __LINE__, "receive r%u got %s, the reference says %s", ri + 1,
                        other >= 0 ? msg_str(w, (unsigned)other, a, sizeof(a)) : "no sent message",
                        msg_str(w, mi, b, sizeof(b)));
    }
    EXPECT_RET(r->req.status, m->len > r->buf_len ? -EMSGSIZE : 0);
    EXPECT_EQ(r->req.length, got);
    EXPECT_EQ(r->req.has_cq_data, (m->flags & EFARM_SEND_CQ_DATA) != 0);
    if (m->flags & EFARM_SEND_CQ_DATA)
        EXPECT_EQ(r->req.cq_data, m->cq_data);
    proto_expect_pattern(r->buf, got, mi + 1);
    expect_guard(r->buf, got, r->buf_len + GUARD);
    w->st.truncated += m->len > r->buf_len;
    w->truncated_total += m->len > r->buf_len;
    r->state = RECV_DONE;
    free(r->buf);
    r->buf = NULL;
}

/* What a probe reported is message mi. */
static void check_probe(const struct mm_world *w, const struct efarm_probe_info *info, unsigned mi)
{
    const struct mm_msg *m = &w->msgs[mi];

    if (info->peer != w->at_b[m->sender] || info->context != m->key.context ||
        info->source != m->key.source || info->tag != m->key.tag || info->msg_length != m->len) {
        char b[96];

        efarm_test_fail(__FILE__, __LINE__,
                        "probe reported peer %u key (%u,%d,%d) %llu B, the reference says %s",
                        info->peer, info->context, info->source, info->tag,
                        (unsigned long long)info->msg_length, msg_str(w, mi, b, sizeof(b)));
    }
    EXPECT_EQ(info->has_cq_data, (m->flags & EFARM_SEND_CQ_DATA) != 0);
    EXPECT_EQ(info->cq_data, m->cq_data);
}

/*
 * Check every send that completed and whose message was received, and free
 * its buffer; sent_done moves past the messages done with.
 */
static void reap_sends(struct mm_world *w)
{
    for (unsigned i = w->sent_done; i < w->nmsgs; i++) {
        struct mm_msg *m = &w->msgs[i];

        if (m->src == NULL || (!m->sent_now && !m->sreq.done) || m->recv < 0 ||
            w->recvs[m->recv].state != RECV_DONE)
            continue;
        if (!m->sent_now) {
            EXPECT_RET(m->sreq.status, 0);
            EXPECT_EQ(m->sreq.length, m->len);
            EXPECT_EQ(m->sends_done, 1);
        }
        free(m->src);
        m->src = NULL;
    }
    while (w->sent_done < w->nmsgs && w->msgs[w->sent_done].src == NULL)
        w->sent_done++;
}

/*
 * After every operation: no receive the reference has posted completed, b
 * holds as many unexpected messages (claimed ones included) as the reference,
 * and b's counters of unexpected arrivals and truncations grew as predicted.
 */
static void check_state(struct mm_world *w)
{
    const struct efarm_counters *c = cnt(w->ep[MM_B]);
    struct efarm_levels lv;

    for (unsigned i = 0; i < w->nposted; i++) {
        const struct mm_recv *r = &w->recvs[w->posted[i]];

        if (r->req.done) {
            int other = identify(w, r);
            char a[96];

            efarm_test_fail(__FILE__, __LINE__,
                            "receive r%u completed (status %d, %s) but the reference has it posted",
                            w->posted[i] + 1, r->req.status,
                            other >= 0 ? msg_str(w, (unsigned)other, a, sizeof(a)) : "?");
        }
    }
    efarm_ep_levels(w->ep[MM_B], &lv);
    EXPECT_EQ(lv.unexpected, w->nwaiting + w->nclaimed);
    EXPECT_EQ(c->unexpected - w->unexpected0, w->unexpected_total);
    EXPECT_EQ(c->truncated - w->truncated0, w->truncated_total);
    EXPECT_EQ(c->recv_errors, 0);
    reap_sends(w);
}

/* ---- Operations at b ---------------------------------------------------------------------- */

/*
 * A long-CTS message matched posted receive ri (its REQ arrived, b sent a
 * CTS; the sender is not progressed, so no more data comes): the receive is
 * no longer cancellable. Skipped if b did something else (the caller's
 * checks say what).
 */
static void cancel_while_receiving(struct mm_world *w, unsigned ri)
{
    struct efarm_ep *b = w->ep[MM_B];
    const struct efarm_counters *c = cnt(b);
    struct mm_recv *r = &w->recvs[ri];
    uint64_t cts0 = c->tx_by_type[EFARM_PKT_CTS], unexp0 = c->unexpected;
    double deadline = proto_now_s() + WAIT_S;

    while (c->tx_by_type[EFARM_PKT_CTS] == cts0 && c->unexpected == unexp0 && !r->req.done) {
        if (proto_now_s() > deadline)
            efarm_test_fail(__FILE__, __LINE__, "no CTS for receive r%u after %.0f s", ri + 1,
                            WAIT_S);
        EXPECT_TRUE(efarm_ep_progress(b) >= 0);
    }
    if (c->unexpected != unexp0 || r->req.done)
        return;
    EXPECT_RET(efarm_cancel_recv(b, &r->req), -ENOENT);
    EXPECT_TRUE(!r->req.done);
    w->st.cancels_receiving++;
}

/*
 * Wait until b handled all n messages of a batch: each went unexpected, or
 * the receive it matched completed (any of the receives posted before).
 */
static void wait_batch(struct mm_world *w, const unsigned *before, unsigned nbefore,
                       uint64_t unexp0, unsigned n)
{
    const struct efarm_counters *c = cnt(w->ep[MM_B]);
    double deadline = proto_now_s() + WAIT_S;

    for (;;) {
        unsigned done = 0;

        for (unsigned i = 0; i < nbefore; i++)
            done += w->recvs[before[i]].req.done;
        if (c->unexpected - unexp0 + done >= n)
            return;
        if (proto_now_s() > deadline)
            efarm_test_fail(__FILE__, __LINE__,
                            "after %.0f s b handled %u of %u messages (%llu unexpected, %u "
                            "receives done)",
                            WAIT_S, (unsigned)(c->unexpected - unexp0) + done, n,
                            (unsigned long long)(c->unexpected - unexp0), done);
        progress_all(w);
    }
}

/*
 * b handled a batch as the reference says (the context names its
 * predictions): as many messages went unexpected, and exactly the receives
 * it names completed, each with its message.
 */
static void check_batch(struct mm_world *w, const unsigned *before, unsigned nbefore,
                        uint64_t unexp0, unsigned waiting)
{
    uint64_t unexp = cnt(w->ep[MM_B])->unexpected - unexp0;
    bool as_said = unexp == waiting;
    char got[MM_TRACE_LEN] = "";

    for (unsigned i = 0; i < nbefore; i++)
        as_said &= (w->recvs[before[i]].msg >= 0) == w->recvs[before[i]].req.done;
    if (!as_said) {
        for (unsigned i = 0; i < nbefore; i++) {
            const struct mm_recv *r = &w->recvs[before[i]];
            size_t len = strlen(got);
            int other = r->req.done ? identify(w, r) : -1;

            if (r->req.done && other >= 0)
                snprintf(got + len, sizeof(got) - len, " r%u got m%d", before[i] + 1, other + 1);
            else if (r->req.done)
                snprintf(got + len, sizeof(got) - len, " r%u got no sent message", before[i] + 1);
        }
        efarm_test_fail(__FILE__, __LINE__,
                        "b queued %llu of the batch unexpected (the reference: %u); receives "
                        "completed:%s",
                        (unsigned long long)unexp, waiting, got[0] ? got : " none");
    }
    for (unsigned i = 0; i < nbefore; i++) {
        if (w->recvs[before[i]].msg >= 0)
            check_received(w, before[i], (unsigned)w->recvs[before[i]].msg);
    }
}

/* One to four messages from one sender, in order; the reference predicts each one's fate. */
static void op_send(struct mm_world *w)
{
    unsigned s = (unsigned)rnd(MM_SENDERS), n = rnd(10) < 7 ? 1 : 2 + (unsigned)rnd(3);
    unsigned before[MM_LIST_MAX], nbefore = w->nposted, first = w->nmsgs, waiting = 0;
    uint64_t unexp0 = cnt(w->ep[MM_B])->unexpected;
    char line[MM_TRACE_LEN] = "", m[96];

    memcpy(before, w->posted, sizeof(before));
    for (unsigned k = 0; k < n; k++) {
        unsigned mi = msg_new(w, s);
        int pos = ref_find_posted(w, &w->msgs[mi].key);
        size_t len = strlen(line);

        if (pos >= 0) {
            unsigned ri = list_take(w->posted, &w->nposted, (unsigned)pos);

            w->recvs[ri].msg = (int)mi;
            w->msgs[mi].recv = (int)ri;
            w->st.arrived_matched++;
            snprintf(line + len, sizeof(line) - len, " %s->r%u", msg_str(w, mi, m, sizeof(m)),
                     ri + 1);
        } else {
            w->waiting[w->nwaiting++] = mi;
            waiting++;
            snprintf(line + len, sizeof(line) - len, " %s->waits", msg_str(w, mi, m, sizeof(m)));
        }
    }
    trace(w, "send%s", line);
    w->st.batches++;
    w->unexpected_total += waiting;
    w->st.arrived_waiting += waiting;
    for (unsigned k = 0; k < n; k++)
        msg_send_start(w, first + k);
    if (n == 1 && s != MM_SELF && w->msgs[first].recv >= 0 && !w->msgs[first].sent_now &&
        w->msgs[first].sreq.proto == EFARM_PROTO_LONGCTS)
        cancel_while_receiving(w, (unsigned)w->msgs[first].recv);
    wait_batch(w, before, nbefore, unexp0, n);
    check_batch(w, before, nbefore, unexp0, waiting);
}

/* Post a receive of a random key shape: it takes the earliest-arrived match, or waits. */
static void op_post(struct mm_world *w)
{
    struct efarm_ep *b = w->ep[MM_B];
    struct efarm_levels lv;
    struct mm_key key;
    unsigned shape, ri;
    int pos;
    char k[40], m[96];

    random_pattern(&key, &shape);
    ri = recv_new(w, &key);
    pos = ref_find_waiting(w, &key);
    w->st.posts[shape]++;
    trace(w, "post r%u %s %s into %llu B -> %s", ri + 1, g_shape_name[shape],
          key_str(&key, k, sizeof(k)), (unsigned long long)w->recvs[ri].buf_len,
          pos >= 0 ? msg_str(w, w->waiting[pos], m, sizeof(m)) : "posted");
    EXPECT_RET(efarm_trecv(b, w->recvs[ri].buf, w->recvs[ri].buf_len, key.context, key.source,
                           key.tag, &w->recvs[ri].req),
               0);
    if (pos < 0) {
        w->posted[w->nposted++] = ri;
        return;
    }
    w->recvs[ri].msg = (int)list_take(w->waiting, &w->nwaiting, (unsigned)pos);
    w->msgs[w->recvs[ri].msg].recv = (int)ri;
    w->st.posts_matched++;
    /* The message left b's unexpected ones in the call. */
    efarm_ep_levels(b, &lv);
    EXPECT_EQ(lv.unexpected, w->nwaiting + w->nclaimed);
    wait_done(w, &w->recvs[ri].req.done, "receive r", ri);
    check_received(w, ri, (unsigned)w->recvs[ri].msg);
}

/* Probe a random key shape; a claiming probe takes the message out of matching. */
static void op_probe(struct mm_world *w, bool claim)
{
    struct efarm_probe_info info;
    struct mm_key key;
    unsigned shape;
    int pos, ret;
    char k[40], m[96];

    random_pattern(&key, &shape);
    pos = ref_find_waiting(w, &key);
    trace(w, "%s %s %s -> %s", claim ? "claim" : "peek", g_shape_name[shape],
          key_str(&key, k, sizeof(k)),
          pos >= 0 ? msg_str(w, w->waiting[pos], m, sizeof(m)) : "nothing");
    memset(&info, 0, sizeof(info));
    ret = efarm_tprobe(w->ep[MM_B], key.context, key.source, key.tag, claim, &info);
    claim ? w->st.claims++ : w->st.peeks++;
    if (pos < 0) {
        if (ret == 1)
            efarm_test_fail(__FILE__, __LINE__,
                            "probe found peer %u key (%u,%d,%d) %llu B, the reference nothing",
                            info.peer, info.context, info.source, info.tag,
                            (unsigned long long)info.msg_length);
        EXPECT_RET(ret, 0);
        return;
    }
    EXPECT_RET(ret, 1);
    check_probe(w, &info, w->waiting[pos]);
    if (!claim) {
        EXPECT_EQ(info.handle, 0);
        w->st.peek_hits++;
        return;
    }
    EXPECT_TRUE(info.handle != 0);
    w->msgs[w->waiting[pos]].handle = info.handle;
    w->claimed[w->nclaimed++] = list_take(w->waiting, &w->nwaiting, (unsigned)pos);
    w->st.claim_hits++;
}

/* Receive a claimed message with tmrecv; its handle is stale afterwards. */
static void op_tmrecv(struct mm_world *w)
{
    struct efarm_ep *b = w->ep[MM_B];
    unsigned mi = list_take(w->claimed, &w->nclaimed, (unsigned)rnd(w->nclaimed));
    struct mm_msg *msg = &w->msgs[mi];
    unsigned ri = recv_new(w, &msg->key);
    struct mm_recv *r = &w->recvs[ri];
    char m[96];

    trace(w, "tmrecv r%u of %s into %llu B", ri + 1, msg_str(w, mi, m, sizeof(m)),
          (unsigned long long)r->buf_len);
    r->msg = (int)mi;
    msg->recv = (int)ri;
    EXPECT_RET(efarm_tmrecv(b, msg->handle, r->buf, r->buf_len, &r->req), 0);
    w->st.tmrecvs++;
    if (!r->req.done)
        EXPECT_RET(efarm_cancel_recv(b, &r->req), -ENOENT); /* it never was a posted receive */
    wait_done(w, &r->req.done, "tmrecv r", ri);
    check_received(w, ri, mi);
    if (rnd(3) == 0) {
        struct efarm_req stale = {0};
        uint8_t x = GUARD_BYTE;

        EXPECT_RET(efarm_tmrecv(b, msg->handle, &x, 1, &stale), -ENOENT);
        EXPECT_TRUE(!stale.done);
        w->st.stale_tmrecvs++;
    }
}

/* Cancel a random posted receive (it must succeed), or one that completed (it must not). */
static void op_cancel(struct mm_world *w)
{
    struct efarm_ep *b = w->ep[MM_B];
    unsigned ri;

    if (w->nposted == 0 || rnd(5) == 0) {
        if (w->nrecvs == 0)
            return;
        ri = w->nrecvs - 1 - (unsigned)rnd(min_u64(w->nrecvs, 64));
        if (w->recvs[ri].state == RECV_POSTED)
            return;
        trace(w, "cancel r%u, which %s", ri + 1,
              w->recvs[ri].state == RECV_DONE ? "completed" : "was cancelled");
        EXPECT_RET(efarm_cancel_recv(b, &w->recvs[ri].req), -ENOENT);
        EXPECT_EQ(w->recvs[ri].completions, 1);
        w->st.cancels_refused++;
        return;
    }
    ri = list_take(w->posted, &w->nposted, (unsigned)rnd(w->nposted));
    trace(w, "cancel posted r%u", ri + 1);
    EXPECT_RET(efarm_cancel_recv(b, &w->recvs[ri].req), 0);
    EXPECT_TRUE(w->recvs[ri].req.done);
    EXPECT_RET(w->recvs[ri].req.status, -ECANCELED);
    EXPECT_EQ(w->recvs[ri].completions, 1);
    expect_guard(w->recvs[ri].buf, 0, w->recvs[ri].buf_len + GUARD);
    free(w->recvs[ri].buf);
    w->recvs[ri].buf = NULL;
    w->recvs[ri].state = RECV_CANCELLED;
    w->st.cancels++;
}

/* ---- The run ------------------------------------------------------------------------------ */

/*
 * Operation weights (percent) of the three phases a run cycles through:
 * balanced, receives ahead of messages (posted receives pile up, so arrivals
 * meet them), messages ahead of receives (unexpected ones pile up).
 */
enum { OP_SEND, OP_POST, OP_PEEK, OP_CLAIM, OP_TMRECV, OP_CANCEL, OP_KINDS };

static const unsigned g_phase_weights[3][OP_KINDS] = {
    {32, 26, 14, 8, 9, 11},
    {12, 55, 8, 6, 10, 9},
    {50, 14, 14, 7, 8, 7},
};
#define MM_PHASE_STEPS 200

/* Whether an operation of this kind may run now (the lists stay within their bounds). */
static bool op_allowed(const struct mm_world *w, unsigned kind)
{
    switch (kind) {
    case OP_SEND:
        return w->nwaiting + w->nclaimed + MM_BATCH_MAX <= MM_LIST_MAX;
    case OP_POST:
        return w->nposted < MM_LIST_MAX;
    case OP_CLAIM:
        return w->nclaimed < MM_CLAIMED_MAX && w->nwaiting + w->nclaimed < MM_LIST_MAX;
    case OP_TMRECV:
        return w->nclaimed > 0;
    default:
        return true;
    }
}

/* One random operation, drawn with the weights of the current phase. */
static void model_step(struct mm_world *w)
{
    const unsigned *weight = g_phase_weights[w->step / MM_PHASE_STEPS % 3];
    unsigned kind;

    do {
        unsigned r = (unsigned)rnd(100);

        for (kind = 0; kind < OP_KINDS - 1 && r >= weight[kind]; kind++)
            r -= weight[kind];
    } while (!op_allowed(w, kind));
    switch (kind) {
    case OP_SEND:
        op_send(w);
        break;
    case OP_POST:
        op_post(w);
        break;
    case OP_PEEK:
    case OP_CLAIM:
        op_probe(w, kind == OP_CLAIM);
        break;
    case OP_TMRECV:
        op_tmrecv(w);
        break;
    default:
        op_cancel(w);
        break;
    }
}

/* Receive everything still waiting or claimed, cancel what is posted, wait for every send. */
static void drain(struct mm_world *w)
{
    while (w->nclaimed > 0)
        op_tmrecv(w);
    while (w->nwaiting > 0) {
        const struct mm_msg *m = &w->msgs[w->waiting[0]];
        struct mm_key key = {m->key.context, EFARM_ANY_SOURCE, EFARM_ANY_TAG};
        unsigned ri = recv_new(w, &key);
        unsigned mi = w->waiting[0];

        trace(w, "drain: post r%u (%u,*,*)", ri + 1, key.context);
        EXPECT_RET(efarm_trecv(w->ep[MM_B], w->recvs[ri].buf, w->recvs[ri].buf_len, key.context,
                               key.source, key.tag, &w->recvs[ri].req),
                   0);
        w->recvs[ri].msg = (int)list_take(w->waiting, &w->nwaiting, 0);
        w->msgs[mi].recv = (int)ri;
        wait_done(w, &w->recvs[ri].req.done, "receive r", ri);
        check_received(w, ri, mi);
    }
    while (w->nposted > 0)
        op_cancel(w);
    for (unsigned i = 0; i < w->nmsgs; i++) {
        if (!w->msgs[i].sent_now)
            wait_done(w, &w->msgs[i].sreq.done, "send of m", i);
    }
    check_state(w);
    EXPECT_EQ(w->sent_done, w->nmsgs);
}

static void stats_print(const struct mm_world *w, const char *name, double took)
{
    const struct mm_stats *s = &w->st;

    fprintf(stderr,
            "%s: %u steps in %.2f s; %u batches of %u messages (a1 %u, a2 %u, b %u; eager %u, "
            "medium %u, longcts %u, longread %u, runtread %u; dc %u, cq %u, inject %u, "
            "tsend_now %u): %u took a posted receive, %u waited\n",
            name, w->step, took, s->batches, s->msgs, s->by_sender[0], s->by_sender[1],
            s->by_sender[2], s->proto[EFARM_PROTO_EAGER], s->proto[EFARM_PROTO_MEDIUM],
            s->proto[EFARM_PROTO_LONGCTS], s->proto[EFARM_PROTO_LONGREAD],
            s->proto[EFARM_PROTO_RUNTREAD], s->dc, s->cq, s->inject, s->now, s->arrived_matched,
            s->arrived_waiting);
    fprintf(stderr,
            "%s: posts exact %u, ANY_SOURCE %u, ANY_TAG %u, both %u (%u took a waiting message); "
            "peeks %u (%u found); claims %u (%u found); tmrecvs %u (%u stale handles tried); "
            "cancels %u, refused %u (%u while receiving long-CTS); truncated %u; b's REQs out of "
            "order %llu\n",
            name, s->posts[0], s->posts[1], s->posts[2], s->posts[3], s->posts_matched, s->peeks,
            s->peek_hits, s->claims, s->claim_hits, s->tmrecvs, s->stale_tmrecvs, s->cancels,
            s->cancels_refused + s->cancels_receiving, s->cancels_receiving, s->truncated,
            (unsigned long long)cnt(w->ep[MM_B])->out_of_order);
}

/* The run covered every case often enough to mean something. */
static void expect_coverage(const struct mm_stats *s)
{
    for (unsigned i = 0; i < MM_SENDERS; i++)
        EXPECT_TRUE(s->by_sender[i] >= 100);
    EXPECT_TRUE(s->proto[EFARM_PROTO_EAGER] >= 100);
    EXPECT_TRUE(s->proto[EFARM_PROTO_MEDIUM] >= 50);
    EXPECT_TRUE(s->proto[EFARM_PROTO_LONGCTS] >= 50);
    EXPECT_TRUE(s->proto[EFARM_PROTO_LONGREAD] + s->proto[EFARM_PROTO_RUNTREAD] >= 50);
    EXPECT_TRUE(s->arrived_matched >= 200 && s->arrived_waiting >= 200);
    for (unsigned i = 0; i < 4; i++)
        EXPECT_TRUE(s->posts[i] >= 50);
    EXPECT_TRUE(s->posts_matched >= 100 && s->peek_hits >= 50 && s->claim_hits >= 20);
    EXPECT_TRUE(s->stale_tmrecvs >= 5 && s->cancels >= 50 && s->cancels_refused >= 10);
    EXPECT_TRUE(s->cancels_receiving >= 5 && s->truncated >= 50);
}

static void model_run(const char *name, bool faults, unsigned steps)
{
    static struct mm_world world;
    struct mm_world *w = &world;
    double t0 = proto_now_s();

    if (faults)
        use_faults();
    memset(w, 0, sizeof(*w));
    w->max_msgs = steps * MM_BATCH_MAX;
    w->max_recvs = steps + MM_LIST_MAX + MM_CLAIMED_MAX;
    w->msgs = calloc(w->max_msgs, sizeof(*w->msgs));
    w->recvs = calloc(w->max_recvs, sizeof(*w->recvs));
    EXPECT_TRUE(w->msgs != NULL && w->recvs != NULL);
    g_model = w;
    atexit(trace_dump);
    w->running = true;
    world_open(w);
    for (w->step = 0; w->step < steps; w->step++) {
        model_step(w);
        check_state(w);
    }
    drain(w);
    w->running = false;
    if (getenv("EFARM_TEST_VERBOSE"))
        stats_print(w, name, proto_now_s() - t0);
    expect_coverage(&w->st);
    if (faults)
        EXPECT_TRUE(cnt(w->ep[MM_B])->out_of_order > 0); /* the engine did reorder */
    for (unsigned i = 0; i < MM_EPS; i++) {
        const struct efarm_counters *c = cnt(w->ep[i]);

        EXPECT_EQ(c->send_errors + c->recv_errors + c->decode_errors + c->stale_ids, 0);
        EXPECT_EQ(c->unknown_sender + c->connid_mismatch + c->unsupported, 0);
        efarm_ep_close(w->ep[i]);
    }
    free(w->msgs);
    free(w->recvs);
}

EFARM_TEST_TIMEOUT(proto_match_model, 60)
{
    model_run("proto_match_model", false, 20000);
}

EFARM_TEST_TIMEOUT(proto_match_model_faults, 60)
{
    model_run("proto_match_model_faults", true, 8000);
}
