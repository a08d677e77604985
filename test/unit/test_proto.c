/*
 * The protocol engine's functional suite: two endpoints in one process on
 * efasim, driven by the test thread.
 *
 * Every transfer checks the bytes (patterns that name their offset, guard
 * bytes past the receive buffer) AND the counters: the subprotocol the
 * sender chose, the exact number of REQ, CTSDATA, CTS, EOR and RECEIPT
 * packets each side sent and received, the RDMA reads posted. So a message
 * that arrives intact but was carried by the wrong subprotocol still fails.
 * Expected packet counts are computed here from the MTU and the header sizes
 * of the codec table, independently of the engine's own arithmetic.
 *
 * Parts: the subprotocol matrix at every size boundary (tagged, untagged,
 * receive posted before and after arrival, DC, at defaults, with small
 * thresholds, and under efasim's loss/duplication/reordering/delay);
 * truncation; CQ data; MPI matching; probes and cancel; msg_id wraparound
 * and the overflow list; back-pressure and RNR; resource exhaustion;
 * registration failures; pinned structure sizes; allocation-failure walks
 * over efarm_ep_open.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "efarm_config.h"
#include "efarm_device.h"
#include "efarm_errno.h"
#include "efarm_mr_cache.h"
#include "efarm_pkt.h"
#include "efarm_pool.h"
#include "efarm_proto.h"
#include "efarm_proto_v4.h"
#include "efarm_test.h"
#include "proto_common.h"

#define GUARD      64 /* bytes past every receive buffer that must stay untouched */
#define GUARD_BYTE 0xa5
#define WAIT_S     20.0

/* Matching key of most tests, and the one of the handshake warm-up (never reused). */
#define CTX    7
#define SRC    11
#define TAG    0x1234
#define HS_CTX EFARM_CONTEXT_MAX

/* Progress both endpoints (or only the receiver b) until cond holds; fail after timeout_s. */
#define SPIN_UNTIL_(p, both, cond, timeout_s)                                           \
    do {                                                                                \
        double deadline_ = proto_now_s() + (timeout_s);                                 \
        while (!(cond)) {                                                               \
            if (proto_now_s() > deadline_)                                              \
                efarm_test_fail(__FILE__, __LINE__, "timed out waiting for %s", #cond); \
            if (both)                                                                   \
                EXPECT_TRUE(efarm_ep_progress((p)->a) >= 0);                            \
            EXPECT_TRUE(efarm_ep_progress((p)->b) >= 0);                                \
        }                                                                               \
    } while (0)
#define SPIN_UNTIL(p, cond, timeout_s)   SPIN_UNTIL_(p, true, cond, timeout_s)
#define SPIN_B_UNTIL(p, cond, timeout_s) SPIN_UNTIL_(p, false, cond, timeout_s)

/* Counter delta since a snapshot. */
#define D(now, then, field) ((now)->field - (then)->field)

static const struct efarm_counters *cnt(const struct efarm_ep *ep)
{
    return efarm_ep_counters(ep);
}

static uint64_t div_up(uint64_t a, uint64_t b)
{
    return (a + b - 1) / b;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* efasim's fault injector (read once per process: call before the first endpoint opens). */
static void use_faults(void)
{
    char seed[32];

    snprintf(seed, sizeof(seed), "%llu", (unsigned long long)(efarm_test_rand() % 100000 + 1));
    setenv("EFASIM_LOSS", "0.05", 1);
    setenv("EFASIM_DUP", "0.05", 1);
    setenv("EFASIM_REORDER", "0.2", 1);
    setenv("EFASIM_DELAY", "0.05", 1);
    setenv("EFASIM_DELAY_US", "300", 1);
    setenv("EFASIM_SEED", seed, 1);
}

/* Packets that must never appear between two well-behaved endpoints. */
static void expect_clean(const struct efarm_ep *ep)
{
    const struct efarm_counters *c = cnt(ep);

    EXPECT_EQ(c->decode_errors, 0);
    EXPECT_EQ(c->unknown_sender, 0);
    EXPECT_EQ(c->connid_mismatch, 0);
    EXPECT_EQ(c->stale_ids, 0);
    EXPECT_EQ(c->unsupported, 0);
    EXPECT_EQ(c->send_errors, 0);
    EXPECT_EQ(c->recv_errors, 0);
}

/* ---- A pair of endpoints with the sender's thresholds ----------------------------------- */

struct rig {
    struct proto_pair p;
    uint32_t mtu;
    /* a's (the sender's) selection thresholds and credits, b's (the receiver's) window. */
    uint64_t medium_max, read_min, runt_size;
    uint32_t cts_credits, rx_window;
};

static uint64_t attr_or(uint64_t attr_value, uint64_t tunable)
{
    return attr_value ? attr_value : tunable;
}

static void rig_open(struct rig *r, const struct efarm_ep_attr *attr_a,
                     const struct efarm_ep_attr *attr_b)
{
    static const struct efarm_ep_attr none;
    const struct efarm_ep_attr *a = attr_a ? attr_a : &none, *b = attr_b ? attr_b : &none;
    const struct efarm_config *c;

    proto_use_efasim();
    proto_pair_open(&r->p, attr_a, attr_b);
    c = efarm_config();
    r->mtu = efarm_ep_caps(r->p.a)->max_msg_size;
    EXPECT_EQ(efarm_ep_caps(r->p.b)->max_msg_size, r->mtu);
    r->medium_max = attr_or(a->medium_max, c->medium_max);
    r->read_min = attr_or(a->read_min, c->read_min);
    r->runt_size = attr_or(a->runt_size, c->runt_size);
    r->cts_credits = (uint32_t)attr_or(a->cts_credits, c->cts_credits);
    r->rx_window = (uint32_t)attr_or(b->rx_window, c->rx_window);
}

/* One message each way, then wait until both sides have the other's HANDSHAKE. */
static void rig_handshake(struct rig *r)
{
    struct proto_pair *p = &r->p;
    uint8_t x = 1, y = 2, gx = 0, gy = 0;
    struct efarm_req s1 = {0}, s2 = {0}, r1 = {0}, r2 = {0};
    struct efarm_req *reqs[] = {&s1, &s2, &r1, &r2};

    EXPECT_RET(efarm_trecv(p->b, &gx, 1, HS_CTX, 0, 0, &r1), 0);
    EXPECT_RET(efarm_trecv(p->a, &gy, 1, HS_CTX, 0, 0, &r2), 0);
    EXPECT_RET(efarm_tsend(p->a, p->a_to_b, &x, 1, HS_CTX, 0, 0, 0, 0, &s1), 0);
    EXPECT_RET(efarm_tsend(p->b, p->b_to_a, &y, 1, HS_CTX, 0, 0, 0, 0, &s2), 0);
    proto_pair_wait(p, reqs, 4, WAIT_S);
    EXPECT_EQ(gx, 1);
    EXPECT_EQ(gy, 2);
    SPIN_UNTIL(p, cnt(p->a)->handshakes_recv && cnt(p->b)->handshakes_recv, WAIT_S);
}

static void rig_close(struct rig *r)
{
    expect_clean(r->p.a);
    expect_clean(r->p.b);
    proto_pair_close(&r->p);
}

/* ---- Expected wire traffic (from the spec's header sizes, not the engine's) -------------- */

static uint8_t rtm_type(uint8_t proto, bool tagged, bool dc)
{
    switch (proto) {
    case EFARM_PROTO_EAGER:
        return dc ? (tagged ? EFARM_PKT_DC_EAGER_TAGRTM : EFARM_PKT_DC_EAGER_MSGRTM)
                  : (tagged ? EFARM_PKT_EAGER_TAGRTM : EFARM_PKT_EAGER_MSGRTM);
    case EFARM_PROTO_MEDIUM:
        return dc ? (tagged ? EFARM_PKT_DC_MEDIUM_TAGRTM : EFARM_PKT_DC_MEDIUM_MSGRTM)
                  : (tagged ? EFARM_PKT_MEDIUM_TAGRTM : EFARM_PKT_MEDIUM_MSGRTM);
    case EFARM_PROTO_LONGCTS:
        return dc ? (tagged ? EFARM_PKT_DC_LONGCTS_TAGRTM : EFARM_PKT_DC_LONGCTS_MSGRTM)
                  : (tagged ? EFARM_PKT_LONGCTS_TAGRTM : EFARM_PKT_LONGCTS_MSGRTM);
    case EFARM_PROTO_LONGREAD:
        return tagged ? EFARM_PKT_LONGREAD_TAGRTM : EFARM_PKT_LONGREAD_MSGRTM;
    default:
        return tagged ? EFARM_PKT_RUNTREAD_TAGRTM : EFARM_PKT_RUNTREAD_MSGRTM;
    }
}

/* Header bytes of a REQ: mandatory, then the raw address (first contact) or connid, CQ data. */
static uint64_t req_hdr(uint8_t type, bool raw_addr, bool cq_data)
{
    return efarm_pkt_type_info(type)->hdr_size +
           (raw_addr ? sizeof(struct efarm_wire_req_opt_raw_addr) : EFARM_REQ_OPT_CONNID_LEN) +
           (cq_data ? EFARM_REQ_OPT_CQ_DATA_LEN : 0);
}

/* The largest eager message to a peer whose HANDSHAKE arrived (raw_addr false) or not. */
static uint64_t eager_fit(const struct rig *r, bool tagged, bool dc, bool cq, bool raw_addr)
{
    return r->mtu - req_hdr(rtm_type(EFARM_PROTO_EAGER, tagged, dc), raw_addr, cq);
}

/* Application bytes of one CTSDATA (the connid option is on between efarm endpoints). */
static uint64_t ctsdata_room(const struct rig *r)
{
    return r->mtu - sizeof(struct efarm_wire_ctsdata_hdr) - EFARM_OPT_FIELD_LEN;
}

/* ---- One message a -> b ----------------------------------------------------------------- */

struct msg {
    uint64_t len, buf_len;
    uint32_t flags; /* EFARM_SEND_* */
    bool tagged;
    uint8_t proto;     /* the subprotocol it must take */
    bool reg_fallback; /* the sender must fall back from a read protocol to long-CTS */
    uint32_t context;
    int32_t source, tag;
    uint64_t seed;
    uint8_t *src, *dst;
    struct efarm_req sreq, rreq;
};

static uint64_t msg_cq_data(const struct msg *m)
{
    return 0xc0ffee0000000000ull | m->seed;
}

static void msg_init(struct msg *m, uint64_t len, uint64_t buf_len, uint32_t flags, bool tagged,
                     uint8_t proto, uint64_t seed)
{
    memset(m, 0, sizeof(*m));
    m->len = len;
    m->buf_len = buf_len;
    m->flags = flags;
    m->tagged = tagged;
    m->proto = proto;
    m->context = CTX;
    m->source = SRC;
    m->tag = TAG;
    m->seed = seed;
    m->src = malloc(len + 1);
    m->dst = malloc(buf_len + GUARD);
    EXPECT_TRUE(m->src != NULL && m->dst != NULL);
    proto_fill(m->src, len, seed);
    memset(m->dst, GUARD_BYTE, buf_len + GUARD);
}

static void msg_free(struct msg *m)
{
    free(m->src);
    free(m->dst);
}

static void msg_send(struct rig *r, struct msg *m)
{
    if (m->tagged)
        EXPECT_RET(efarm_tsend(r->p.a, r->p.a_to_b, m->src, m->len, m->context, m->source, m->tag,
                               m->flags, msg_cq_data(m), &m->sreq),
                   0);
    else
        EXPECT_RET(
            efarm_send(r->p.a, r->p.a_to_b, m->src, m->len, m->flags, msg_cq_data(m), &m->sreq), 0);
}

static void msg_post(struct rig *r, struct msg *m)
{
    if (m->tagged)
        EXPECT_RET(efarm_trecv(r->p.b, m->dst, m->buf_len, m->context, m->source, m->tag, &m->rreq),
                   0);
    else
        EXPECT_RET(efarm_recv(r->p.b, m->dst, m->buf_len, r->p.b_to_a, &m->rreq), 0);
}

/* Bytes [from, to) of a receive buffer still hold the guard pattern. */
static void expect_guard(const uint8_t *buf, uint64_t from, uint64_t to)
{
    for (uint64_t i = from; i < to; i++) {
        if (buf[i] != GUARD_BYTE)
            efarm_test_fail(__FILE__, __LINE__, "byte %llu beyond the %llu delivered is %#x",
                            (unsigned long long)i, (unsigned long long)from, buf[i]);
    }
}

/* Both requests completed as the message says: statuses, lengths, key, CQ data, bytes. */
static void msg_check(const struct rig *r, const struct msg *m)
{
    uint64_t got = min_u64(m->len, m->buf_len);
    bool cq = m->flags & EFARM_SEND_CQ_DATA;

    EXPECT_TRUE(m->sreq.done);
    EXPECT_TRUE(m->rreq.done);
    EXPECT_RET(m->sreq.status, 0);
    EXPECT_EQ(m->sreq.length, m->len);
    EXPECT_EQ(m->sreq.proto, m->proto);
    EXPECT_RET(m->rreq.status, m->len > m->buf_len ? -EMSGSIZE : 0);
    EXPECT_EQ(m->rreq.length, got);
    EXPECT_EQ(m->rreq.msg_length, m->len);
    EXPECT_EQ(m->rreq.peer, r->p.b_to_a);
    if (m->tagged) {
        EXPECT_EQ(m->rreq.context, m->context);
        EXPECT_EQ(m->rreq.source, m->source);
        EXPECT_EQ(m->rreq.tag, m->tag);
    }
    EXPECT_EQ(m->rreq.has_cq_data, cq);
    if (cq)
        EXPECT_EQ(m->rreq.cq_data, msg_cq_data(m));
    proto_expect_pattern(m->dst, got, m->seed);
    expect_guard(m->dst, got, m->buf_len + GUARD);
}

/* REQ packets of the message (all share its msg_id), for a peer whose HANDSHAKE arrived. */
static uint64_t msg_req_pkts(const struct rig *r, const struct msg *m, uint64_t runt)
{
    uint8_t type = rtm_type(m->proto, m->tagged, m->flags & EFARM_SEND_DC);
    uint64_t room = r->mtu - req_hdr(type, false, m->flags & EFARM_SEND_CQ_DATA);

    switch (m->proto) {
    case EFARM_PROTO_MEDIUM:
        return div_up(m->len, room);
    case EFARM_PROTO_RUNTREAD:
        return div_up(runt, room - sizeof(struct efarm_wire_rma_iov));
    default:
        return 1;
    }
}

/* Packets every other type of the message's exchange takes. */
struct traffic {
    uint64_t req, ctsdata, cts, eor, receipt, reads, truncated, reg_fallbacks;
};

static void msg_traffic(const struct rig *r, const struct msg *m, uint64_t runt, struct traffic *t)
{
    bool dc = m->flags & EFARM_SEND_DC;
    uint8_t type = rtm_type(m->proto, m->tagged, dc);
    uint64_t end = min_u64(m->len, m->buf_len);

    memset(t, 0, sizeof(*t));
    t->req = msg_req_pkts(r, m, runt);
    t->truncated = m->len > m->buf_len;
    t->reg_fallbacks = m->reg_fallback;
    switch (m->proto) {
    case EFARM_PROTO_LONGCTS: {
        uint64_t first =
            min_u64(m->len, r->mtu - req_hdr(type, false, m->flags & EFARM_SEND_CQ_DATA));
        uint64_t credit = min_u64(div_up(m->len - first, ctsdata_room(r)), r->cts_credits);

        t->ctsdata = div_up(m->len - first, ctsdata_room(r));
        t->cts = div_up(t->ctsdata, min_u64(credit ? credit : 1, r->rx_window));
        t->receipt = dc;
        break;
    }
    case EFARM_PROTO_LONGREAD:
        t->eor = 1;
        t->reads = end > 0;
        break;
    case EFARM_PROTO_RUNTREAD:
        t->eor = 1;
        t->reads = end > runt;
        break;
    default:
        t->receipt = dc;
        break;
    }
}

/* Sum of counts of every REQ type (>= 64) in a per-type array delta. */
static uint64_t req_total(const uint64_t *now, const uint64_t *then)
{
    uint64_t n = 0;

    for (unsigned t = EFARM_PKT_REQ_BEGIN; t < 256; t++)
        n += now[t] - then[t];
    return n;
}

/* The counters moved exactly as one message whose exchange is *t makes them move. */
static void expect_traffic(const struct rig *r, const struct efarm_counters *a0,
                           const struct efarm_counters *b0, uint8_t type, const struct traffic *t)
{
    const struct efarm_counters *a = cnt(r->p.a), *b = cnt(r->p.b);
    bool rnr = D(a, a0, rnr) || D(b, b0, rnr); /* an RNR resend counts a packet twice */

    EXPECT_EQ(D(b, b0, rx_by_type[type]), t->req);
    EXPECT_EQ(req_total(b->rx_by_type, b0->rx_by_type), t->req);
    if (!rnr) {
        EXPECT_EQ(D(a, a0, tx_by_type[type]), t->req);
        EXPECT_EQ(req_total(a->tx_by_type, a0->tx_by_type), t->req);
        EXPECT_EQ(D(a, a0, tx_by_type[EFARM_PKT_CTSDATA]), t->ctsdata);
        EXPECT_EQ(D(b, b0, tx_by_type[EFARM_PKT_CTS]), t->cts);
        EXPECT_EQ(D(b, b0, tx_by_type[EFARM_PKT_EOR]), t->eor);
        EXPECT_EQ(D(b, b0, tx_by_type[EFARM_PKT_RECEIPT]), t->receipt);
    }
    EXPECT_EQ(D(b, b0, rx_by_type[EFARM_PKT_CTSDATA]), t->ctsdata);
    EXPECT_EQ(D(a, a0, rx_by_type[EFARM_PKT_CTS]), t->cts);
    EXPECT_EQ(D(a, a0, rx_by_type[EFARM_PKT_EOR]), t->eor);
    EXPECT_EQ(D(a, a0, rx_by_type[EFARM_PKT_RECEIPT]), t->receipt);
    EXPECT_EQ(D(b, b0, reads_posted), t->reads);
    EXPECT_EQ(D(b, b0, truncated), t->truncated);
    EXPECT_EQ(D(a, a0, tx_by_type[EFARM_PKT_READ_NACK]) + D(b, b0, tx_by_type[EFARM_PKT_READ_NACK]),
              0);
    EXPECT_EQ(D(a, a0, reg_fallbacks), t->reg_fallbacks);
}

static void expect_chosen(const struct efarm_counters *a, const struct efarm_counters *a0,
                          uint8_t proto, uint64_t n, uint64_t dc)
{
    EXPECT_EQ(D(a, a0, proto_eager), proto == EFARM_PROTO_EAGER ? n : 0);
    EXPECT_EQ(D(a, a0, proto_medium), proto == EFARM_PROTO_MEDIUM ? n : 0);
    EXPECT_EQ(D(a, a0, proto_longcts), proto == EFARM_PROTO_LONGCTS ? n : 0);
    EXPECT_EQ(D(a, a0, proto_longread), proto == EFARM_PROTO_LONGREAD ? n : 0);
    EXPECT_EQ(D(a, a0, proto_runtread), proto == EFARM_PROTO_RUNTREAD ? n : 0);
    EXPECT_EQ(D(a, a0, proto_dc), dc);
}

/* The sender completes only once the receiver matched: DC, long-CTS and the reads. */
static bool sender_waits_for_match(const struct msg *m)
{
    return (m->flags & EFARM_SEND_DC) || m->proto == EFARM_PROTO_LONGCTS ||
           m->proto == EFARM_PROTO_LONGREAD || m->proto == EFARM_PROTO_RUNTREAD;
}

/*
 * Send m a -> b with the receive posted first, or after every REQ packet
 * of the message arrived (unexpected); check data, results and counters.
 */
static void xfer(struct rig *r, struct msg *m, bool posted_first)
{
    struct proto_pair *p = &r->p;
    struct efarm_counters a0 = *cnt(p->a), b0 = *cnt(p->b);
    struct efarm_req *reqs[] = {&m->sreq, &m->rreq};
    uint8_t type = rtm_type(m->proto, m->tagged, m->flags & EFARM_SEND_DC);
    struct traffic t;

    efarm_test_context(
        "%s %s%s%s of %llu bytes into %llu, receive posted %s", m->tagged ? "tagged" : "untagged",
        efarm_proto_name(m->proto), m->flags & EFARM_SEND_DC ? " DC" : "",
        m->flags & EFARM_SEND_CQ_DATA ? " with CQ data" : "", (unsigned long long)m->len,
        (unsigned long long)m->buf_len, posted_first ? "first" : "after arrival");
    msg_traffic(r, m, min_u64(r->runt_size, m->len), &t);
    if (posted_first)
        msg_post(r, m);
    msg_send(r, m);
    EXPECT_EQ(m->sreq.proto, m->proto); /* chosen at the call */
    if (!posted_first) {
        SPIN_UNTIL(p, D(cnt(p->b), &b0, rx_by_type[type]) >= t.req, WAIT_S);
        EXPECT_EQ(D(cnt(p->b), &b0, unexpected), 1);
        EXPECT_TRUE(!m->rreq.done);
        if (sender_waits_for_match(m))
            EXPECT_TRUE(!m->sreq.done);
        msg_post(r, m);
    }
    proto_pair_wait(p, reqs, 2, WAIT_S);
    msg_check(r, m);
    EXPECT_EQ(D(cnt(p->b), &b0, unexpected), !posted_first);
    expect_chosen(cnt(p->a), &a0, m->proto, 1, (m->flags & EFARM_SEND_DC) != 0);
    expect_traffic(r, &a0, &b0, type, &t);
}

/* One message, both ways of posting the receive. */
static void xfer_both(struct rig *r, uint64_t len, uint64_t buf_len, uint32_t flags, bool tagged,
                      uint8_t proto)
{
    for (unsigned posted_first = 0; posted_first < 2; posted_first++) {
        struct msg m;

        msg_init(&m, len, buf_len, flags, tagged, proto, efarm_test_rand() % 1000000);
        xfer(r, &m, posted_first);
        msg_free(&m);
    }
}

/*
 * Two read-sized messages back to back: the first takes runting read and
 * spends the peer's runt budget (runt_size <= read_min), so the second, sent
 * before anything completes, must take long-read.
 */
static void xfer_runt_then_longread(struct rig *r, bool tagged, bool posted_first)
{
    struct proto_pair *p = &r->p;
    struct efarm_counters a0 = *cnt(p->a), b0 = *cnt(p->b);
    struct msg m[2];
    struct efarm_req *reqs[] = {&m[0].sreq, &m[0].rreq, &m[1].sreq, &m[1].rreq};
    struct traffic t0, t1;

    efarm_test_context("%s runting read then long-read, receives posted %s",
                       tagged ? "tagged" : "untagged", posted_first ? "first" : "after arrival");
    EXPECT_TRUE(r->runt_size <= r->read_min);
    msg_init(&m[0], r->read_min, r->read_min, 0, tagged, EFARM_PROTO_RUNTREAD, 11);
    msg_init(&m[1], r->read_min + 777, r->read_min + 777, 0, tagged, EFARM_PROTO_LONGREAD, 12);
    msg_traffic(r, &m[0], r->runt_size, &t0);
    msg_traffic(r, &m[1], 0, &t1);
    for (unsigned i = 0; posted_first && i < 2; i++)
        msg_post(r, &m[i]);
    msg_send(r, &m[0]);
    msg_send(r, &m[1]);
    EXPECT_EQ(m[0].sreq.proto, EFARM_PROTO_RUNTREAD);
    EXPECT_EQ(m[1].sreq.proto, EFARM_PROTO_LONGREAD);
    if (!posted_first) {
        SPIN_UNTIL(p, D(cnt(p->b), &b0, unexpected) == 2, WAIT_S);
        for (unsigned i = 0; i < 2; i++)
            msg_post(r, &m[i]);
    }
    proto_pair_wait(p, reqs, 4, WAIT_S);
    for (unsigned i = 0; i < 2; i++) {
        msg_check(r, &m[i]);
        msg_free(&m[i]);
    }
    EXPECT_EQ(D(cnt(p->a), &a0, proto_runtread), 1);
    EXPECT_EQ(D(cnt(p->a), &a0, proto_longread), 1);
    EXPECT_EQ(D(cnt(p->b), &b0, rx_by_type[rtm_type(EFARM_PROTO_RUNTREAD, tagged, false)]), t0.req);
    EXPECT_EQ(D(cnt(p->b), &b0, rx_by_type[rtm_type(EFARM_PROTO_LONGREAD, tagged, false)]), 1);
    EXPECT_EQ(D(cnt(p->a), &a0, rx_by_type[EFARM_PKT_EOR]), 2);
    EXPECT_EQ(D(cnt(p->b), &b0, reads_posted), t0.reads + t1.reads);
}

/* ---- 1. The matrix ------------------------------------------------------------------------- */

/*
 * Small thresholds: every subprotocol with few packets, several CTS rounds,
 * and a runt of exactly two full packets at efasim's default MTU.
 */
static const struct efarm_ep_attr g_small = {
    .medium_max = 32768,
    .read_min = 65536,
    .runt_size = 17704,
    .cts_credits = 2,
    .rx_window = 3,
};

/*
 * Every subprotocol at its boundaries, receive posted before and after
 * arrival: 0, 1, eager max and +1 (plain and DC), medium max and +1, read
 * min -1 and read min, runting read and long-read (busy runt budget, DC),
 * DC variants of eager, medium and long-CTS; and at packet boundaries, where
 * a byte more takes one packet more: medium of exactly two full packets,
 * long-CTS of exactly the REQ's data and k full CTSDATA.
 */
static void matrix(const struct efarm_ep_attr *attr, bool tagged)
{
    struct rig r;
    uint64_t e, edc, mmax, rmin, med2, med2dc, cts0, ctsk;
    uint64_t extra = tagged ? 0 : 100; /* untagged: receive buffers longer than the message */

    rig_open(&r, attr, attr);
    rig_handshake(&r);
    e = eager_fit(&r, tagged, false, false, false);
    edc = eager_fit(&r, tagged, true, false, false);
    mmax = r.medium_max;
    rmin = r.read_min;
    med2 = 2 * (r.mtu - req_hdr(rtm_type(EFARM_PROTO_MEDIUM, tagged, false), false, false));
    med2dc = 2 * (r.mtu - req_hdr(rtm_type(EFARM_PROTO_MEDIUM, tagged, true), false, false));
    /* The REQ's data and the fewest full CTSDATA that make a long-CTS message. */
    cts0 = r.mtu - req_hdr(rtm_type(EFARM_PROTO_LONGCTS, tagged, false), false, false);
    ctsk = cts0 + ((mmax - cts0) / ctsdata_room(&r) + 1) * ctsdata_room(&r);
    EXPECT_TRUE(e < mmax && mmax + 1 < rmin - 1);
    EXPECT_TRUE(med2 < mmax && med2dc < mmax && ctsk > mmax && ctsk + 1 < rmin);
    {
        const struct {
            uint64_t len;
            uint32_t flags;
            uint8_t proto;
        } cases[] = {
            {0, 0, EFARM_PROTO_EAGER},
            {1, 0, EFARM_PROTO_EAGER},
            {e, 0, EFARM_PROTO_EAGER},
            {e + 1, 0, EFARM_PROTO_MEDIUM},
            {mmax, 0, EFARM_PROTO_MEDIUM},
            {mmax + 1, 0, EFARM_PROTO_LONGCTS},
            {rmin - 1, 0, EFARM_PROTO_LONGCTS},
            {rmin, 0, EFARM_PROTO_RUNTREAD},
            {2 * rmin + 3, 0, EFARM_PROTO_RUNTREAD},
            {0, EFARM_SEND_DC, EFARM_PROTO_EAGER},
            {edc, EFARM_SEND_DC, EFARM_PROTO_EAGER},
            {edc + 1, EFARM_SEND_DC, EFARM_PROTO_MEDIUM},
            {mmax, EFARM_SEND_DC, EFARM_PROTO_MEDIUM},
            {mmax + 1, EFARM_SEND_DC, EFARM_PROTO_LONGCTS},
            {rmin - 1, EFARM_SEND_DC, EFARM_PROTO_LONGCTS},
            {rmin, EFARM_SEND_DC, EFARM_PROTO_LONGREAD}, /* no runting read for DC */
            {med2, 0, EFARM_PROTO_MEDIUM},
            {med2 + 1, 0, EFARM_PROTO_MEDIUM},
            {med2dc, EFARM_SEND_DC, EFARM_PROTO_MEDIUM},
            {med2dc + 1, EFARM_SEND_DC, EFARM_PROTO_MEDIUM},
            {ctsk, 0, EFARM_PROTO_LONGCTS},
            {ctsk + 1, 0, EFARM_PROTO_LONGCTS},
        };

        for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
            xfer_both(&r, cases[i].len, cases[i].len + extra, cases[i].flags, tagged,
                      cases[i].proto);
    }
    xfer_runt_then_longread(&r, tagged, true);
    xfer_runt_then_longread(&r, tagged, false);
    rig_close(&r);
}

EFARM_TEST_TIMEOUT(proto_matrix_tagged, 60)
{
    matrix(&g_small, true);
}

EFARM_TEST_TIMEOUT(proto_matrix_untagged, 60)
{
    matrix(&g_small, false);
}

EFARM_TEST_TIMEOUT(proto_matrix_tagged_defaults, 60)
{
    matrix(NULL, true);
}

EFARM_TEST_TIMEOUT(proto_matrix_untagged_defaults, 60)
{
    matrix(NULL, false);
}

EFARM_TEST_TIMEOUT(proto_matrix_tagged_faults, 90)
{
    use_faults();
    matrix(&g_small, true);
}

EFARM_TEST_TIMEOUT(proto_matrix_untagged_faults, 90)
{
    use_faults();
    matrix(&g_small, false);
}

/*
 * The eager boundary of a peer whose HANDSHAKE has not arrived: its REQ
 * carries the 40-byte raw-address header instead of the 4-byte connid, so
 * one packet holds 36 bytes less. Both directions' first messages go before
 * any progress, so neither side has heard the other's HANDSHAKE.
 */
EFARM_TEST(proto_eager_boundary_first_message)
{
    for (unsigned tagged = 0; tagged < 2; tagged++) {
        struct rig r;
        struct proto_pair *p = &r.p;
        uint64_t e;
        uint8_t *src1, *src2, *dst1, *dst2;
        struct efarm_req s1 = {0}, s2 = {0}, r1 = {0}, r2 = {0};
        struct efarm_req *reqs[] = {&s1, &s2, &r1, &r2};
        uint8_t eager = rtm_type(EFARM_PROTO_EAGER, tagged, false);
        uint8_t medium = rtm_type(EFARM_PROTO_MEDIUM, tagged, false);

        efarm_test_context("%s first messages", tagged ? "tagged" : "untagged");
        rig_open(&r, NULL, NULL);
        e = eager_fit(&r, tagged, false, false, true);
        EXPECT_EQ(e, r.mtu - efarm_pkt_type_info(eager)->hdr_size - 40);
        src1 = malloc(e + 1);
        src2 = malloc(e + 1);
        dst1 = malloc(e + 1);
        dst2 = malloc(e + 1);
        proto_fill(src1, e, 1);
        proto_fill(src2, e + 1, 2);
        if (tagged) {
            EXPECT_RET(efarm_tsend(p->a, p->a_to_b, src1, e, 1, 2, 3, 0, 0, &s1), 0);
            EXPECT_RET(efarm_tsend(p->b, p->b_to_a, src2, e + 1, 1, 2, 3, 0, 0, &s2), 0);
            EXPECT_RET(efarm_trecv(p->b, dst1, e + 1, 1, 2, 3, &r1), 0);
            EXPECT_RET(efarm_trecv(p->a, dst2, e + 1, 1, 2, 3, &r2), 0);
        } else {
            EXPECT_RET(efarm_send(p->a, p->a_to_b, src1, e, 0, 0, &s1), 0);
            EXPECT_RET(efarm_send(p->b, p->b_to_a, src2, e + 1, 0, 0, &s2), 0);
            EXPECT_RET(efarm_recv(p->b, dst1, e + 1, EFARM_PEER_NONE, &r1), 0);
            EXPECT_RET(efarm_recv(p->a, dst2, e + 1, EFARM_PEER_NONE, &r2), 0);
        }
        EXPECT_EQ(s1.proto, EFARM_PROTO_EAGER);
        EXPECT_EQ(s2.proto, EFARM_PROTO_MEDIUM);
        proto_pair_wait(p, reqs, 4, WAIT_S);
        EXPECT_RET(r1.status, 0);
        EXPECT_RET(r2.status, 0);
        EXPECT_EQ(r1.length, e);
        EXPECT_EQ(r2.length, e + 1);
        proto_expect_pattern(dst1, e, 1);
        proto_expect_pattern(dst2, e + 1, 2);
        EXPECT_EQ(cnt(p->a)->tx_by_type[eager], 1);
        EXPECT_EQ(cnt(p->b)->rx_by_type[eager], 1);
        EXPECT_EQ(cnt(p->b)->tx_by_type[medium], 2);
        EXPECT_EQ(cnt(p->a)->rx_by_type[medium], 2);
        /* Known peers: nobody was learnt from the raw address. */
        EXPECT_EQ(cnt(p->a)->implicit_peers + cnt(p->b)->implicit_peers, 0);

        /* Once the HANDSHAKE is in, the same e + 1 bytes fit one packet. */
        SPIN_UNTIL(p, cnt(p->a)->handshakes_recv && cnt(p->b)->handshakes_recv, WAIT_S);
        {
            struct msg m;

            msg_init(&m, e + 1, e + 1, 0, tagged, EFARM_PROTO_EAGER, 3);
            xfer(&r, &m, true);
            msg_free(&m);
        }
        free(src1);
        free(src2);
        free(dst1);
        free(dst2);
        rig_close(&r);
    }
}

/* EFARM_EAGER_MAX (attr.eager_max) caps eager below what a packet holds; CQ data takes 8 bytes. */
EFARM_TEST(proto_eager_boundary_eager_max_and_cq_data)
{
    struct efarm_ep_attr attr = {.eager_max = 1000};
    struct rig r;
    uint64_t e;

    rig_open(&r, &attr, &attr);
    rig_handshake(&r);
    xfer_both(&r, 1000, 1000, 0, true, EFARM_PROTO_EAGER);
    xfer_both(&r, 1001, 1001, 0, true, EFARM_PROTO_MEDIUM);
    xfer_both(&r, 1000, 1000, EFARM_SEND_DC, false, EFARM_PROTO_EAGER);
    xfer_both(&r, 1001, 1001, EFARM_SEND_DC, false, EFARM_PROTO_MEDIUM);
    rig_close(&r);

    rig_open(&r, NULL, NULL);
    rig_handshake(&r);
    for (unsigned tagged = 0; tagged < 2; tagged++) {
        e = eager_fit(&r, tagged, false, true, false);
        EXPECT_EQ(e + EFARM_REQ_OPT_CQ_DATA_LEN, eager_fit(&r, tagged, false, false, false));
        xfer_both(&r, e, e, EFARM_SEND_CQ_DATA, tagged, EFARM_PROTO_EAGER);
        xfer_both(&r, e + 1, e + 1, EFARM_SEND_CQ_DATA, tagged, EFARM_PROTO_MEDIUM);
        e = eager_fit(&r, tagged, true, true, false);
        xfer_both(&r, e, e, EFARM_SEND_CQ_DATA | EFARM_SEND_DC, tagged, EFARM_PROTO_EAGER);
        xfer_both(&r, e + 1, e + 1, EFARM_SEND_CQ_DATA | EFARM_SEND_DC, tagged, EFARM_PROTO_MEDIUM);
    }
    rig_close(&r);
}

/*
 * Long-read because a read is in flight on the sending endpoint: a posts an
 * RDMA read for b's runting-read message, and sends its own read-sized
 * message before it has polled that read's completion.
 */
EFARM_TEST(proto_longread_while_reading)
{
    struct rig r;
    struct proto_pair *p = &r.p;
    uint64_t len = g_small.read_min;
    uint8_t *bsrc = malloc(len), *adst = malloc(len);
    struct efarm_req bs = {0}, ar = {0};
    struct efarm_req *reqs[] = {&bs, &ar};
    struct msg m;
    uint64_t reads0;

    rig_open(&r, &g_small, &g_small);
    rig_handshake(&r);
    proto_fill(bsrc, len, 5);
    EXPECT_RET(efarm_trecv(p->a, adst, len, CTX, SRC, 1, &ar), 0);
    EXPECT_RET(efarm_tsend(p->b, p->b_to_a, bsrc, len, CTX, SRC, 1, 0, 0, &bs), 0);
    EXPECT_EQ(bs.proto, EFARM_PROTO_RUNTREAD);
    reads0 = cnt(p->a)->reads_posted;
    /* Progress a call at a time: the read is in flight right after the call that posted it. */
    for (double deadline = proto_now_s() + WAIT_S; cnt(p->a)->reads_posted == reads0;) {
        EXPECT_TRUE(proto_now_s() < deadline);
        EXPECT_TRUE(efarm_ep_progress(p->b) >= 0);
        EXPECT_TRUE(efarm_ep_progress(p->a) >= 0);
    }
    EXPECT_TRUE(!ar.done);
    msg_init(&m, len, len, 0, true, EFARM_PROTO_LONGREAD, 6);
    xfer(&r, &m, true);
    msg_free(&m);
    proto_pair_wait(p, reqs, 2, WAIT_S);
    EXPECT_RET(ar.status, 0);
    proto_expect_pattern(adst, len, 5);
    free(bsrc);
    free(adst);
    rig_close(&r);
}

/* ---- 2. Truncation, 3. CQ data -------------------------------------------------------------- */

/*
 * A receive buffer shorter than the message, for every subprotocol: the
 * receive completes with -EMSGSIZE and the buffer's length, msg_length
 * says what was sent, nothing past the buffer is written, and the sender
 * completes with 0 (the protocol ran to its end).
 */
EFARM_TEST_TIMEOUT(proto_truncation, 60)
{
    struct rig r;
    uint64_t e, mmax, rmin, runt;

    rig_open(&r, &g_small, &g_small);
    rig_handshake(&r);
    e = eager_fit(&r, true, false, false, false);
    mmax = r.medium_max;
    rmin = r.read_min;
    runt = r.runt_size;
    for (unsigned tagged = 0; tagged < 2; tagged++) {
        xfer_both(&r, 500, 0, 0, tagged, EFARM_PROTO_EAGER);
        xfer_both(&r, e - 8, 100, 0, tagged, EFARM_PROTO_EAGER);
        xfer_both(&r, mmax, mmax / 3, 0, tagged, EFARM_PROTO_MEDIUM);
        xfer_both(&r, mmax + 1, 1000, 0, tagged, EFARM_PROTO_LONGCTS); /* inside the REQ's data */
        xfer_both(&r, rmin - 1, mmax + 5, 0, tagged, EFARM_PROTO_LONGCTS);
        xfer_both(&r, rmin, runt / 2, 0, tagged, EFARM_PROTO_RUNTREAD); /* within the runt */
        xfer_both(&r, rmin + 1, runt + 1000, 0, tagged, EFARM_PROTO_RUNTREAD);
        xfer_both(&r, rmin, rmin - 1, EFARM_SEND_DC, tagged, EFARM_PROTO_LONGREAD);
        xfer_both(&r, 300, 299, EFARM_SEND_DC, tagged, EFARM_PROTO_EAGER);
        xfer_both(&r, mmax, 4000, EFARM_SEND_DC, tagged, EFARM_PROTO_MEDIUM);
        xfer_both(&r, mmax + 1, mmax, EFARM_SEND_DC, tagged, EFARM_PROTO_LONGCTS);
    }
    rig_close(&r);
}

/* CQ data reaches the receive for every subprotocol (and is absent without the flag: matrix). */
EFARM_TEST_TIMEOUT(proto_cq_data, 60)
{
    struct rig r;
    uint64_t mmax, rmin;

    rig_open(&r, &g_small, &g_small);
    rig_handshake(&r);
    mmax = r.medium_max;
    rmin = r.read_min;
    for (unsigned tagged = 0; tagged < 2; tagged++) {
        const uint32_t cq = EFARM_SEND_CQ_DATA, dc = EFARM_SEND_DC;

        xfer_both(&r, 0, 0, cq, tagged, EFARM_PROTO_EAGER);
        xfer_both(&r, 77, 77, cq, tagged, EFARM_PROTO_EAGER);
        xfer_both(&r, mmax, mmax, cq, tagged, EFARM_PROTO_MEDIUM);
        xfer_both(&r, mmax + 1, mmax + 1, cq, tagged, EFARM_PROTO_LONGCTS);
        xfer_both(&r, rmin, rmin, cq, tagged, EFARM_PROTO_RUNTREAD);
        xfer_both(&r, rmin, rmin, cq | dc, tagged, EFARM_PROTO_LONGREAD);
        xfer_both(&r, 77, 77, cq | dc, tagged, EFARM_PROTO_EAGER);
        xfer_both(&r, mmax, mmax, cq | dc, tagged, EFARM_PROTO_MEDIUM);
        xfer_both(&r, mmax + 1, mmax + 1, cq | dc, tagged, EFARM_PROTO_LONGCTS);
        xfer_both(&r, 4000, 100, cq, tagged, EFARM_PROTO_EAGER); /* truncated still has it */
    }
    rig_close(&r);
}

/* ---- 4. MPI matching --------------------------------------------------------------------- */

/* Wait for every request of n messages (both sides) and check each. */
static void msgs_wait_check(struct rig *r, struct msg *m, unsigned n)
{
    struct efarm_req **reqs = malloc(2 * n * sizeof(*reqs));

    for (unsigned i = 0; i < n; i++) {
        reqs[2 * i] = &m[i].sreq;
        reqs[2 * i + 1] = &m[i].rreq;
    }
    proto_pair_wait(&r->p, reqs, 2 * n, WAIT_S);
    free(reqs);
    for (unsigned i = 0; i < n; i++) {
        efarm_test_context("message %u of %u (%llu bytes, %s)", i, n, (unsigned long long)m[i].len,
                           efarm_proto_name(m[i].proto));
        msg_check(r, &m[i]);
    }
}

/* Post m's receive with other keys (wildcards): the request must still see m's own key. */
static void msg_post_as(struct rig *r, struct msg *m, int32_t source, int32_t tag)
{
    EXPECT_RET(efarm_trecv(r->p.b, m->dst, m->buf_len, m->context, source, tag, &m->rreq), 0);
}

/* ANY_SOURCE and ANY_TAG receives, posted before the messages and after them. */
EFARM_TEST(proto_match_wildcards)
{
    static const int32_t keys[4][2] = {{1, 10}, {2, 20}, {3, 30}, {4, 40}};
    struct rig r;
    struct msg m[4];

    rig_open(&r, &g_small, &g_small);
    rig_handshake(&r);
    for (unsigned i = 0; i < 4; i++) {
        msg_init(&m[i], 100 + i, 200, 0, true, EFARM_PROTO_EAGER, i);
        m[i].source = keys[i][0];
        m[i].tag = keys[i][1];
    }
    /* Posted first: each wildcard shape takes the message meant for it. */
    msg_post_as(&r, &m[0], EFARM_ANY_SOURCE, 10);
    msg_post_as(&r, &m[1], 2, EFARM_ANY_TAG);
    msg_post_as(&r, &m[2], EFARM_ANY_SOURCE, EFARM_ANY_TAG);
    msg_post(&r, &m[3]);
    for (unsigned i = 0; i < 4; i++)
        msg_send(&r, &m[i]);
    msgs_wait_check(&r, m, 4);
    for (unsigned i = 0; i < 4; i++)
        msg_free(&m[i]);

    /* Posted after arrival: each takes the earliest matching message. */
    for (unsigned i = 0; i < 3; i++) {
        msg_init(&m[i], 300 + i, 400, 0, true, EFARM_PROTO_EAGER, 10 + i);
        m[i].source = i == 1 ? 2 : 1;
        m[i].tag = 10 * (int32_t)(i + 1);
        msg_send(&r, &m[i]);
    }
    SPIN_UNTIL(&r.p, cnt(r.p.b)->unexpected >= 3, WAIT_S);
    msg_post_as(&r, &m[1], EFARM_ANY_SOURCE, 20);
    msg_post_as(&r, &m[0], 1, EFARM_ANY_TAG);
    msg_post_as(&r, &m[2], EFARM_ANY_SOURCE, EFARM_ANY_TAG);
    msgs_wait_check(&r, m, 3);
    for (unsigned i = 0; i < 3; i++)
        msg_free(&m[i]);
    rig_close(&r);
}

/* An arriving message takes the EARLIEST-POSTED matching receive, wildcard or not. */
EFARM_TEST(proto_match_posting_order)
{
    struct rig r;
    struct msg m[2];

    rig_open(&r, &g_small, &g_small);
    rig_handshake(&r);
    for (unsigned wildcard_first = 0; wildcard_first < 2; wildcard_first++) {
        for (unsigned shape = 0; shape < 3; shape++) {
            int32_t src = shape == 1 ? SRC : EFARM_ANY_SOURCE;
            int32_t tag = shape == 0 ? TAG : EFARM_ANY_TAG;

            efarm_test_context("wildcard shape %u posted %s", shape,
                               wildcard_first ? "first" : "second");
            for (unsigned i = 0; i < 2; i++)
                msg_init(&m[i], 50 + i, 100, 0, true, EFARM_PROTO_EAGER, 20 + i);
            if (shape == 2)
                src = EFARM_ANY_SOURCE;
            /* m[0] lands in the receive posted first, whichever shape it has. */
            if (wildcard_first) {
                msg_post_as(&r, &m[0], src, tag);
                msg_post(&r, &m[1]);
            } else {
                msg_post(&r, &m[0]);
                msg_post_as(&r, &m[1], src, tag);
            }
            msg_send(&r, &m[0]);
            proto_pair_wait(&r.p, (struct efarm_req *[]){&m[0].sreq, &m[0].rreq}, 2, WAIT_S);
            EXPECT_TRUE(!m[1].rreq.done);
            msg_send(&r, &m[1]);
            msgs_wait_check(&r, m, 2);
            for (unsigned i = 0; i < 2; i++)
                msg_free(&m[i]);
        }
    }
    rig_close(&r);
}

/* Different contexts never match; tagged and untagged never match each other. */
EFARM_TEST(proto_match_contexts_and_untagged)
{
    struct rig r;
    struct proto_pair *p = &r.p;
    struct efarm_probe_info info;
    struct msg m[4];

    rig_open(&r, &g_small, &g_small);
    rig_handshake(&r);
    for (unsigned i = 0; i < 4; i++)
        msg_init(&m[i], 64 + i, 100, 0, i < 2, EFARM_PROTO_EAGER, 30 + i);
    m[0].context = 2; /* sent first, on another context than the posted receive */
    m[1].context = 1;
    msg_post(&r, &m[1]);
    msg_send(&r, &m[0]);
    SPIN_UNTIL(p, cnt(p->b)->unexpected >= 1, WAIT_S);
    EXPECT_TRUE(!m[1].rreq.done);
    EXPECT_EQ(efarm_tprobe(p->b, 2, SRC, TAG, false, &info), 1);
    EXPECT_EQ(efarm_tprobe(p->b, 1, EFARM_ANY_SOURCE, EFARM_ANY_TAG, false, &info), 0);
    /* An untagged message is not seen by a tagged receive, nor a tagged one by an untagged. */
    msg_post(&r, &m[2]); /* untagged receive, must not take m[0] */
    EXPECT_TRUE(!m[2].rreq.done);
    EXPECT_EQ(efarm_tprobe(p->b, 0, EFARM_ANY_SOURCE, EFARM_ANY_TAG, false, &info), 0);
    msg_send(&r, &m[3]); /* untagged, must not go to the posted tagged receive m[1] */
    proto_pair_wait(p, (struct efarm_req *[]){&m[3].sreq}, 1, WAIT_S);
    /* m[3] lands in m[2]'s untagged receive (the first one posted). */
    proto_pair_wait(p, (struct efarm_req *[]){&m[2].rreq}, 1, WAIT_S);
    EXPECT_RET(m[2].rreq.status, 0);
    EXPECT_EQ(m[2].rreq.msg_length, m[3].len);
    proto_expect_pattern(m[2].dst, m[3].len, m[3].seed);
    EXPECT_TRUE(!m[1].rreq.done);
    msg_send(&r, &m[1]);
    msg_post(&r, &m[0]);
    proto_pair_wait(p, (struct efarm_req *[]){&m[0].sreq, &m[0].rreq, &m[1].sreq, &m[1].rreq}, 4,
                    WAIT_S);
    msg_check(&r, &m[0]);
    msg_check(&r, &m[1]);
    for (unsigned i = 0; i < 4; i++)
        msg_free(&m[i]);
    rig_close(&r);
}

/*
 * Non-overtaking: a sequence of every subprotocol on one tag (long-CTS and
 * reads between eager messages) is received in send order, with receives
 * posted after every message arrived, or half before and half after; half
 * the receives use ANY_TAG. Every receive buffer has the same size, so a
 * message in the wrong receive shows as a wrong length or pattern.
 */
static void nonovertaking(bool faults)
{
    enum { N = 12 };
    struct rig r;
    struct msg m[N];
    uint64_t mmax, rmin, buf;

    if (faults)
        use_faults();
    rig_open(&r, &g_small, &g_small);
    rig_handshake(&r);
    mmax = r.medium_max;
    rmin = r.read_min;
    buf = 2 * rmin;
    for (unsigned posted_before = 0; posted_before <= N / 2; posted_before += N / 2) {
        const struct {
            uint64_t len;
            uint32_t flags;
            uint8_t proto;
        } seq[N] = {
            {rmin - 1, 0, EFARM_PROTO_LONGCTS},
            {10, 0, EFARM_PROTO_EAGER},
            {11, 0, EFARM_PROTO_EAGER},
            {mmax, 0, EFARM_PROTO_MEDIUM},
            {rmin, 0, EFARM_PROTO_RUNTREAD},
            {12, 0, EFARM_PROTO_EAGER},
            {rmin + 5, 0, EFARM_PROTO_LONGREAD}, /* the runt budget is spent */
            {13, 0, EFARM_PROTO_EAGER},
            {14, EFARM_SEND_DC, EFARM_PROTO_EAGER},
            {mmax + 1, EFARM_SEND_DC, EFARM_PROTO_LONGCTS},
            {15, 0, EFARM_PROTO_EAGER},
            {0, 0, EFARM_PROTO_EAGER},
        };
        uint64_t unexp0 = cnt(r.p.b)->unexpected;

        efarm_test_context("%u receives posted before the sends", posted_before);
        for (unsigned i = 0; i < N; i++)
            msg_init(&m[i], seq[i].len, buf, seq[i].flags, true, seq[i].proto, 40 + i);
        for (unsigned i = 0; i < posted_before; i++)
            i % 2 ? msg_post_as(&r, &m[i], SRC, EFARM_ANY_TAG) : msg_post(&r, &m[i]);
        for (unsigned i = 0; i < N; i++)
            msg_send(&r, &m[i]);
        SPIN_UNTIL(&r.p, cnt(r.p.b)->unexpected - unexp0 >= N - posted_before, WAIT_S);
        for (unsigned i = posted_before; i < N; i++)
            i % 2 ? msg_post_as(&r, &m[i], SRC, EFARM_ANY_TAG) : msg_post(&r, &m[i]);
        msgs_wait_check(&r, m, N);
        for (unsigned i = 0; i < N; i++)
            msg_free(&m[i]);
    }
    rig_close(&r);
}

EFARM_TEST_TIMEOUT(proto_nonovertaking, 60)
{
    nonovertaking(false);
}

EFARM_TEST_TIMEOUT(proto_nonovertaking_faults, 60)
{
    nonovertaking(true);
}

/* ---- 5. Probe, matched probe, cancel ----------------------------------------------------- */

static void expect_probe(const struct rig *r, const struct efarm_probe_info *info,
                         const struct msg *m)
{
    EXPECT_EQ(info->peer, r->p.b_to_a);
    EXPECT_EQ(info->context, m->context);
    EXPECT_EQ(info->source, m->source);
    EXPECT_EQ(info->tag, m->tag);
    EXPECT_EQ(info->msg_length, m->len);
}

/* tprobe peeks the earliest matching message; a claiming probe removes it for tmrecv. */
EFARM_TEST(proto_probe_then_mrecv)
{
    struct rig r;
    struct proto_pair *p = &r.p;
    struct efarm_probe_info info, c0, c2, c3;
    struct efarm_req bogus = {0};
    struct msg m[4];
    uint64_t unexp0;

    rig_open(&r, &g_small, &g_small);
    rig_handshake(&r);
    msg_init(&m[0], 100, 100, 0, true, EFARM_PROTO_EAGER, 50);
    msg_init(&m[1], r.medium_max, r.medium_max, 0, true, EFARM_PROTO_MEDIUM, 51);
    msg_init(&m[2], r.read_min - 1, r.read_min - 1, 0, true, EFARM_PROTO_LONGCTS, 52);
    msg_init(&m[3], r.read_min, r.read_min, 0, true, EFARM_PROTO_RUNTREAD, 53);
    m[0].tag = m[1].tag = m[3].tag = 1;
    m[2].tag = 2;
    EXPECT_EQ(efarm_tprobe(p->b, CTX, SRC, EFARM_ANY_TAG, false, &info), 0);
    unexp0 = cnt(p->b)->unexpected;
    for (unsigned i = 0; i < 4; i++)
        msg_send(&r, &m[i]);
    SPIN_UNTIL(p, cnt(p->b)->unexpected - unexp0 == 4, WAIT_S);

    /* Peeking changes nothing, and always reports the earliest match with its length. */
    for (unsigned k = 0; k < 2; k++) {
        EXPECT_EQ(efarm_tprobe(p->b, CTX, SRC, EFARM_ANY_TAG, false, &info), 1);
        expect_probe(&r, &info, &m[0]);
        EXPECT_EQ(info.handle, 0);
    }
    EXPECT_EQ(efarm_tprobe(p->b, CTX, EFARM_ANY_SOURCE, 2, false, &info), 1);
    expect_probe(&r, &info, &m[2]);
    EXPECT_EQ(efarm_tprobe(p->b, CTX + 1, EFARM_ANY_SOURCE, EFARM_ANY_TAG, false, &info), 0);
    EXPECT_EQ(efarm_tprobe(p->b, CTX, SRC + 1, EFARM_ANY_TAG, false, &info), 0);
    EXPECT_EQ(efarm_tprobe(p->b, CTX, SRC, 3, false, &info), 0);
    EXPECT_RET(efarm_tprobe(p->b, CTX, SRC, -5, false, &info), -EINVAL);

    /* Claim m[0]: the next peek sees m[1]; a receive cannot take a claimed message. */
    EXPECT_EQ(efarm_tprobe(p->b, CTX, EFARM_ANY_SOURCE, EFARM_ANY_TAG, true, &c0), 1);
    expect_probe(&r, &c0, &m[0]);
    EXPECT_TRUE(c0.handle != 0);
    EXPECT_EQ(efarm_tprobe(p->b, CTX, SRC, 1, false, &info), 1);
    expect_probe(&r, &info, &m[1]);
    EXPECT_EQ(efarm_tprobe(p->b, CTX, SRC, 2, true, &c2), 1);
    expect_probe(&r, &c2, &m[2]);
    msg_post_as(&r, &m[1], SRC, EFARM_ANY_TAG); /* m[0] and m[2] are claimed: it takes m[1] */
    EXPECT_RET(efarm_tmrecv(p->b, c0.handle, m[0].dst, m[0].buf_len, &m[0].rreq), 0);
    EXPECT_TRUE(m[0].rreq.done); /* eager: completes in the call */
    EXPECT_RET(efarm_tmrecv(p->b, c0.handle, m[0].dst, m[0].buf_len, &bogus), -ENOENT);
    EXPECT_RET(efarm_tmrecv(p->b, c0.handle ^ 0x10000, m[0].dst, 1, &bogus), -ENOENT);
    EXPECT_TRUE(!bogus.done);
    EXPECT_RET(efarm_tmrecv(p->b, c2.handle, m[2].dst, m[2].buf_len, &m[2].rreq), 0);
    EXPECT_EQ(efarm_tprobe(p->b, CTX, SRC, EFARM_ANY_TAG, true, &c3), 1);
    expect_probe(&r, &c3, &m[3]);
    EXPECT_RET(efarm_tmrecv(p->b, c3.handle, m[3].dst, m[3].buf_len, &m[3].rreq), 0);
    msgs_wait_check(&r, m, 4);
    EXPECT_EQ(efarm_tprobe(p->b, CTX, EFARM_ANY_SOURCE, EFARM_ANY_TAG, false, &info), 0);
    for (unsigned i = 0; i < 4; i++)
        msg_free(&m[i]);
    rig_close(&r);
}

/*
 * Cancel completes a posted receive with -ECANCELED and a later message is
 * not delivered to it; a receive that matched (long-CTS in progress) or
 * completed cannot be cancelled (-ENOENT) and completes normally.
 */
EFARM_TEST(proto_cancel_recv)
{
    struct rig r;
    struct proto_pair *p = &r.p;
    struct efarm_probe_info info;
    struct msg m;
    uint64_t unexp0, rx0;
    uint8_t longcts = rtm_type(EFARM_PROTO_LONGCTS, true, false);

    rig_open(&r, &g_small, &g_small);
    rig_handshake(&r);
    for (unsigned tagged = 0; tagged < 2; tagged++) {
        efarm_test_context("%s receive cancelled before the message",
                           tagged ? "tagged" : "untagged");
        msg_init(&m, 200, 200, 0, tagged, EFARM_PROTO_EAGER, 60 + tagged);
        msg_post(&r, &m);
        EXPECT_RET(efarm_cancel_recv(p->b, &m.rreq), 0);
        EXPECT_TRUE(m.rreq.done);
        EXPECT_RET(m.rreq.status, -ECANCELED);
        EXPECT_RET(efarm_cancel_recv(p->b, &m.rreq), -ENOENT);
        unexp0 = cnt(p->b)->unexpected;
        msg_send(&r, &m);
        SPIN_UNTIL(p, cnt(p->b)->unexpected > unexp0 && m.sreq.done, WAIT_S);
        proto_pair_spin(p, 2000);
        EXPECT_RET(m.rreq.status, -ECANCELED);
        expect_guard(m.dst, 0, m.buf_len + GUARD);
        if (tagged)
            EXPECT_EQ(efarm_tprobe(p->b, CTX, SRC, TAG, false, &info), 1);
        m.rreq = (struct efarm_req){0};
        msg_post(&r, &m);
        proto_pair_wait(p, (struct efarm_req *[]){&m.rreq}, 1, WAIT_S);
        msg_check(&r, &m);
        EXPECT_RET(efarm_cancel_recv(p->b, &m.rreq), -ENOENT); /* completed */
        msg_free(&m);
    }

    /* Matched, still receiving: a long-CTS whose REQ reached the receive. */
    efarm_test_context("cancel after match");
    msg_init(&m, r.read_min - 1, r.read_min - 1, 0, true, EFARM_PROTO_LONGCTS, 62);
    msg_post(&r, &m);
    rx0 = cnt(p->b)->rx_by_type[longcts];
    msg_send(&r, &m);
    SPIN_B_UNTIL(p, cnt(p->b)->rx_by_type[longcts] > rx0, WAIT_S);
    EXPECT_TRUE(!m.rreq.done);
    EXPECT_RET(efarm_cancel_recv(p->b, &m.rreq), -ENOENT);
    proto_pair_wait(p, (struct efarm_req *[]){&m.sreq, &m.rreq}, 2, WAIT_S);
    msg_check(&r, &m);
    msg_free(&m);
    rig_close(&r);
}

/* ---- 6. msg_id wraparound, the reorder window's overflow list ----------------------------- */

/*
 * n messages of every subprotocol, three tagged for one untagged, all on one
 * key, sent in one burst through msg_id 2^32 - 1 -> 0 with efasim reordering
 * and delaying datagrams: both streams arrive in order and intact. Half the
 * receives are posted before the burst, half after.
 */
static void wraparound(uint32_t recvwin, unsigned n)
{
    struct efarm_ep_attr attr = g_small;
    struct rig r;
    struct msg *m = calloc(n, sizeof(*m));
    uint64_t e[2];

    use_faults();
    attr.first_msg_id = 0xfffffff0u;
    attr.recvwin = recvwin;
    rig_open(&r, &attr, &attr);
    rig_handshake(&r);
    e[0] = eager_fit(&r, false, false, false, false);
    e[1] = eager_fit(&r, true, false, false, false);
    for (unsigned i = 0; i < n; i++) {
        bool tagged = i % 4 != 3;
        static const uint8_t protos[6] = {EFARM_PROTO_EAGER,   EFARM_PROTO_EAGER,
                                          EFARM_PROTO_MEDIUM,  EFARM_PROTO_MEDIUM,
                                          EFARM_PROTO_LONGCTS, EFARM_PROTO_RUNTREAD};
        uint64_t lens[6] = {
            i % 50, e[tagged], e[tagged] + 1, r.medium_max, r.medium_max + 1 + i, r.read_min + i};

        msg_init(&m[i], lens[i % 6], lens[i % 6], 0, tagged, protos[i % 6], 1000 + i);
    }
    for (unsigned i = 0; i < n / 2; i++)
        msg_post(&r, &m[i]);
    for (unsigned i = 0; i < n; i++) {
        msg_send(&r, &m[i]);
        /* One runting read spends the runt budget; the reads behind it go long-read. */
        if (m[i].proto == EFARM_PROTO_RUNTREAD && m[i].sreq.proto == EFARM_PROTO_LONGREAD)
            m[i].proto = EFARM_PROTO_LONGREAD;
    }
    proto_pair_spin(&r.p, 5000);
    for (unsigned i = n / 2; i < n; i++)
        msg_post(&r, &m[i]);
    msgs_wait_check(&r, m, n);
    EXPECT_TRUE(cnt(r.p.b)->out_of_order > 0);
    if (recvwin < 16)
        EXPECT_TRUE(cnt(r.p.b)->overflow > 0);
    for (unsigned i = 0; i < n; i++)
        msg_free(&m[i]);
    free(m);
    rig_close(&r);
}

EFARM_TEST_TIMEOUT(proto_msg_id_wraparound, 60)
{
    wraparound(128, 300);
}

EFARM_TEST_TIMEOUT(proto_msg_id_wraparound_recvwin4, 60)
{
    wraparound(4, 300);
}

/*
 * attr.first_msg_id really moves the msg_ids (else the wraparound tests
 * would not wrap): a receiver that starts at 0 sees 0xfffffff0 as 16
 * behind and drops it as stale.
 */
EFARM_TEST(proto_first_msg_id_takes_effect)
{
    struct efarm_ep_attr attr_a = {.first_msg_id = 0xfffffff0u};
    struct rig r;
    uint8_t byte = 1, got = 0;
    struct efarm_req s = {0}, rr = {0};

    rig_open(&r, &attr_a, NULL);
    EXPECT_RET(efarm_trecv(r.p.b, &got, 1, CTX, SRC, TAG, &rr), 0);
    EXPECT_RET(efarm_tsend(r.p.a, r.p.a_to_b, &byte, 1, CTX, SRC, TAG, 0, 0, &s), 0);
    SPIN_UNTIL(&r.p, cnt(r.p.b)->stale_ids == 1, WAIT_S);
    proto_pair_spin(&r.p, 5000);
    EXPECT_TRUE(!rr.done);
    EXPECT_EQ(got, 0);
    proto_pair_close(&r.p);
}

/*
 * A multi-packet message whose turn comes while the unexpected queue is full
 * waits in its window slot, and its later packets join it there. When room
 * appears and it becomes an unexpected message, every packet of the slot
 * must go with it (a lost segment leaves the receive waiting forever and
 * leaks the packet's buffer).
 */
EFARM_TEST(proto_stalled_multipacket_message)
{
    struct efarm_ep_attr attr = g_small, attr_b = g_small;
    struct rig r;
    struct proto_pair *p = &r.p;
    struct msg m[3];
    uint64_t nreq[3], rx0[3];

    attr.runt_size = 20000; /* three runt packets */
    attr_b.max_unexpected = 1;
    rig_open(&r, &attr, &attr_b);
    rig_handshake(&r);
    msg_init(&m[0], 10, 10, 0, true, EFARM_PROTO_EAGER, 70);
    msg_init(&m[1], r.medium_max, r.medium_max, 0, true, EFARM_PROTO_MEDIUM, 71);
    msg_init(&m[2], r.read_min, r.read_min, 0, true, EFARM_PROTO_RUNTREAD, 72);
    for (unsigned i = 0; i < 3; i++) {
        uint8_t type = rtm_type(m[i].proto, true, false);

        nreq[i] = msg_req_pkts(&r, &m[i], r.runt_size);
        rx0[i] = cnt(p->b)->rx_by_type[type];
        msg_send(&r, &m[i]);
    }
    EXPECT_TRUE(nreq[1] > 1 && nreq[2] > 1);
    SPIN_UNTIL(p,
               cnt(p->b)->rx_by_type[EFARM_PKT_MEDIUM_TAGRTM] - rx0[1] == nreq[1] &&
                   cnt(p->b)->rx_by_type[EFARM_PKT_RUNTREAD_TAGRTM] - rx0[2] == nreq[2],
               WAIT_S);
    EXPECT_EQ(cnt(p->b)->unexpected, 1); /* m[0]; m[1] is deferred, m[2] waits behind it */
    EXPECT_TRUE(cnt(p->b)->deferred > 0);
    /* Each receive frees the one unexpected slot: the next message becomes unexpected there. */
    for (unsigned i = 0; i < 3; i++) {
        msg_post(&r, &m[i]);
        if (i < 2)
            SPIN_UNTIL(p, cnt(p->b)->unexpected == i + 2, WAIT_S);
    }
    msgs_wait_check(&r, m, 3);
    for (unsigned i = 0; i < 3; i++)
        msg_free(&m[i]);
    rig_close(&r);
}

/* ---- 7. Back-pressure and RNR ----------------------------------------------------------- */

/* n eager and medium messages on one tag, sizes spread over both subprotocols. */
static struct msg *stream_init(const struct rig *r, unsigned n)
{
    struct msg *m = calloc(n, sizeof(*m));
    uint64_t e = eager_fit(r, true, false, false, false);

    for (unsigned i = 0; i < n; i++) {
        bool medium = i % 3 == 2;
        uint64_t len = medium ? e + 1 + (i * 997u) % 20000 : (i * 37u) % e + 1;

        msg_init(&m[i], len, len, 0, true, medium ? EFARM_PROTO_MEDIUM : EFARM_PROTO_EAGER,
                 2000 + i);
    }
    return m;
}

static void stream_free(struct msg *m, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        msg_free(&m[i]);
    free(m);
}

/*
 * The receiver has 8 receive buffers, room for 4 unexpected messages,
 * 16 KiB of copies and a hard cap of 64 KiB, and posts no receive for
 * 100 ms while 300 messages come: the unexpected queue fills, the in-order
 * message is deferred, later packets are copied, then hold the receive
 * buffers, the last two (the reserve) are copied past the budget up to the
 * cap, and then the device refuses the rest (RNR). Once the receives are
 * posted everything arrives, in order; nothing is lost.
 */
static void backpressure_no_receives(const struct efarm_ep_attr *attr_a, uint64_t unexp_max,
                                     bool stuck)
{
    enum { N = 300 };
    struct efarm_ep_attr attr_b = {
        .rx_buffers = 8, .max_unexpected = 4, .unexp_bytes = 16384, .unexp_max_bytes = unexp_max};
    const struct efarm_counters *b;
    struct rig r;
    struct msg *m;
    unsigned sent_done = 0;

    setenv("EFASIM_RNR_BACKOFF_US", "200", 1);
    rig_open(&r, attr_a, &attr_b);
    rig_handshake(&r);
    b = cnt(r.p.b);
    m = stream_init(&r, N);
    for (unsigned i = 0; i < N; i++)
        msg_send(&r, &m[i]);
    proto_pair_spin(&r.p, 100000);
    for (unsigned i = 0; i < N; i++) {
        EXPECT_TRUE(!m[i].rreq.done);
        sent_done += m[i].sreq.done;
    }
    if (stuck)
        EXPECT_TRUE(sent_done < N - 20); /* the receiver is full: the stream is stuck */
    EXPECT_EQ(b->unexpected, 4);
    EXPECT_TRUE(b->deferred > 0);
    EXPECT_TRUE(b->held_rx > 0);
    EXPECT_TRUE(b->copy_overdraft > 0);
    for (unsigned i = 0; i < N; i++)
        msg_post(&r, &m[i]);
    msgs_wait_check(&r, m, N);
    stream_free(m, N);
    rig_close(&r);
}

/* The sender keeps one packet in flight and its device retries RNR forever: arrival in order. */
EFARM_TEST_TIMEOUT(proto_backpressure_no_receives, 60)
{
    struct efarm_ep_attr attr_a = {.sq_depth = 1, .rnr_retry = 7};

    backpressure_no_receives(&attr_a, 65536, true);
}

/*
 * A sender with many packets in flight whose RNR completions reach the
 * engine: retries land after later packets, so the receiver keeps packets
 * ahead of a missing one. They must not take the buffers the missing one
 * needs: the reserve keeps some posted (copying past the budget, up to a cap
 * larger than what the sender can put ahead of the hole), and everything
 * drains once the receives are posted.
 */
EFARM_TEST_TIMEOUT(proto_backpressure_reordered_by_rnr, 60)
{
    struct efarm_ep_attr attr_a = {.tx_pkts = 32, .rnr_retry = 1, .rnr_backoff_us = 100};

    backpressure_no_receives(&attr_a, 4u << 20, false);
}

/*
 * The receiver's receives are all posted but it is not progressed for 80 ms:
 * its 16 device buffers fill and efasim answers the sender with RNR, which
 * resends (and backs off) until the receiver runs again.
 */
EFARM_TEST_TIMEOUT(proto_rnr_receiver_not_progressed, 60)
{
    enum { N = 200 };
    struct efarm_ep_attr attr_a = {
        .rnr_retry = 1, .rnr_backoff_us = 100, .rnr_backoff_max_us = 4000};
    struct efarm_ep_attr attr_b = {.rx_buffers = 16};
    const struct efarm_counters *a;
    struct rig r;
    struct msg *m;

    setenv("EFASIM_RNR_BACKOFF_US", "200", 1);
    rig_open(&r, &attr_a, &attr_b);
    rig_handshake(&r);
    a = cnt(r.p.a);
    m = stream_init(&r, N);
    for (unsigned i = 0; i < N; i++)
        msg_post(&r, &m[i]);
    for (unsigned i = 0; i < N; i++)
        msg_send(&r, &m[i]);
    for (double end = proto_now_s() + 0.08; proto_now_s() < end;)
        EXPECT_TRUE(efarm_ep_progress(r.p.a) >= 0);
    EXPECT_TRUE(a->rnr > 0);
    EXPECT_TRUE(a->retransmits > 0);
    EXPECT_TRUE(a->rnr_backoff > 0);
    for (unsigned i = 0; i < N; i++)
        EXPECT_TRUE(!m[i].rreq.done);
    msgs_wait_check(&r, m, N);
    stream_free(m, N);
    rig_close(&r);
}

/* ---- 8. Resources ---------------------------------------------------------------------- */

/*
 * Every send takes an operation: with attr.max_ops ops in use the next send
 * returns -EAGAIN and leaves its request alone; it succeeds after progress.
 * Long-CTS sends hold theirs until the receiver answers.
 */
EFARM_TEST(proto_max_ops_eagain)
{
    enum { OPS = 4 };
    struct efarm_ep_attr attr_a = g_small;
    struct rig r;
    struct proto_pair *p = &r.p;
    struct msg m[OPS + 1];
    uint8_t byte = 0;

    attr_a.max_ops = OPS;
    rig_open(&r, &attr_a, &g_small);
    rig_handshake(&r);
    for (unsigned lng = 0; lng < 2; lng++) {
        uint64_t len = lng ? r.read_min - 1 : 100;
        uint8_t proto = lng ? EFARM_PROTO_LONGCTS : EFARM_PROTO_EAGER;

        efarm_test_context("%s sends", efarm_proto_name(proto));
        for (unsigned i = 0; i <= OPS; i++)
            msg_init(&m[i], len, len, 0, true, proto, 80 + i);
        for (unsigned i = 0; i < OPS; i++)
            msg_send(&r, &m[i]);
        EXPECT_RET(efarm_tsend(p->a, p->a_to_b, m[OPS].src, len, CTX, SRC, TAG, 0, 0, &m[OPS].sreq),
                   -EAGAIN);
        EXPECT_RET(efarm_send(p->a, p->a_to_b, &byte, 1, 0, 0, &m[OPS].sreq), -EAGAIN);
        EXPECT_TRUE(!m[OPS].sreq.done);
        if (lng) {
            /* No receive yet: the long-CTS sends wait for a CTS and keep their ops. */
            proto_pair_spin(p, 10000);
            EXPECT_RET(
                efarm_tsend(p->a, p->a_to_b, m[OPS].src, len, CTX, SRC, TAG, 0, 0, &m[OPS].sreq),
                -EAGAIN);
            for (unsigned i = 0; i < OPS; i++)
                msg_post(&r, &m[i]);
        }
        SPIN_UNTIL(p, m[0].sreq.done, WAIT_S);
        msg_send(&r, &m[OPS]);
        if (!lng)
            for (unsigned i = 0; i <= OPS; i++)
                msg_post(&r, &m[i]);
        else
            msg_post(&r, &m[OPS]);
        msgs_wait_check(&r, m, OPS + 1);
        for (unsigned i = 0; i <= OPS; i++)
            msg_free(&m[i]);
    }
    rig_close(&r);
}

/*
 * A receiver with 4 operations: unexpected messages beyond them wait
 * (deferred) without loss and arrive once receives are posted.
 */
EFARM_TEST(proto_receiver_max_ops)
{
    enum { N = 12 };
    struct efarm_ep_attr attr_b = g_small;
    struct rig r;
    struct msg m[N];

    attr_b.max_ops = 4;
    rig_open(&r, &g_small, &attr_b);
    rig_handshake(&r);
    for (unsigned i = 0; i < N; i++) {
        uint64_t len = i % 2 ? r.medium_max - i : 40 + i;

        msg_init(&m[i], len, len, 0, true, i % 2 ? EFARM_PROTO_MEDIUM : EFARM_PROTO_EAGER, 90 + i);
        msg_send(&r, &m[i]);
    }
    SPIN_UNTIL(&r.p, cnt(r.p.b)->deferred > 0, WAIT_S);
    proto_pair_spin(&r.p, 10000);
    EXPECT_EQ(cnt(r.p.b)->unexpected, 4);
    for (unsigned i = 0; i < N; i++)
        msg_post(&r, &m[i]);
    msgs_wait_check(&r, m, N);
    for (unsigned i = 0; i < N; i++)
        msg_free(&m[i]);
    rig_close(&r);
}

/*
 * Eight send buffers (two kept for control packets) and a send queue of 4:
 * 40 concurrent multi-packet sends build their packets as buffers come back
 * and queue them behind a full send queue; all complete, in order.
 */
EFARM_TEST(proto_tx_buffers_exhausted)
{
    enum { N = 40 };
    struct efarm_ep_attr attr_a = g_small;
    struct rig r;
    struct msg m[N];

    attr_a.tx_pkts = 8;
    attr_a.sq_depth = 4;
    rig_open(&r, &attr_a, &g_small);
    rig_handshake(&r);
    for (unsigned i = 0; i < N; i++) {
        static const uint8_t protos[4] = {EFARM_PROTO_MEDIUM, EFARM_PROTO_LONGCTS,
                                          EFARM_PROTO_EAGER, EFARM_PROTO_MEDIUM};
        uint64_t lens[4] = {r.medium_max, r.read_min - 1 - i, 1000 + i, r.medium_max - 7 * i};

        msg_init(&m[i], lens[i % 4], lens[i % 4], i % 5 == 4 ? EFARM_SEND_DC : 0, i % 3 != 0,
                 protos[i % 4], 100 + i);
        if (i < N / 2)
            msg_post(&r, &m[i]);
    }
    for (unsigned i = 0; i < N; i++)
        msg_send(&r, &m[i]);
    for (unsigned i = N / 2; i < N; i++)
        msg_post(&r, &m[i]);
    msgs_wait_check(&r, m, N);
    EXPECT_TRUE(cnt(r.p.a)->tx_queued > 0);
    for (unsigned i = 0; i < N; i++)
        msg_free(&m[i]);
    rig_close(&r);
}

/*
 * Posted receives beyond attr.max_posted return -EAGAIN; a receive that
 * finds its message already waiting needs no slot; slots come back.
 */
EFARM_TEST(proto_max_posted_eagain)
{
    enum { POSTED = 4 };
    struct efarm_ep_attr attr_b = {.max_posted = POSTED};
    struct rig r;
    struct msg m[POSTED + 2];
    struct efarm_req extra = {0}, refused = {0};
    uint8_t buf[8];

    rig_open(&r, NULL, &attr_b);
    rig_handshake(&r);
    for (unsigned i = 0; i < POSTED + 2; i++) {
        msg_init(&m[i], 30 + i, 64, 0, i != POSTED + 1, EFARM_PROTO_EAGER, 150 + i);
        m[i].tag = (int32_t)i;
    }
    for (unsigned i = 0; i < POSTED; i++)
        msg_post(&r, &m[i]);
    EXPECT_RET(efarm_trecv(r.p.b, buf, sizeof(buf), CTX, SRC, 99, &refused), -EAGAIN);
    EXPECT_RET(efarm_recv(r.p.b, buf, sizeof(buf), EFARM_PEER_NONE, &refused), -EAGAIN);
    EXPECT_TRUE(!refused.done);
    /* Waiting messages (tagged and untagged) are received without a slot. */
    msg_send(&r, &m[POSTED]);
    msg_send(&r, &m[POSTED + 1]);
    SPIN_UNTIL(&r.p, cnt(r.p.b)->unexpected == 2, WAIT_S);
    msg_post(&r, &m[POSTED]);
    msg_post(&r, &m[POSTED + 1]);
    msg_send(&r, &m[0]);
    msgs_wait_check(&r, &m[POSTED], 2);
    proto_pair_wait(&r.p, (struct efarm_req *[]){&m[0].sreq, &m[0].rreq}, 2, WAIT_S);
    msg_check(&r, &m[0]);
    /* m[0]'s slot is free again. */
    EXPECT_RET(efarm_trecv(r.p.b, buf, sizeof(buf), CTX, SRC, 99, &extra), 0);
    EXPECT_RET(efarm_trecv(r.p.b, buf, sizeof(buf), CTX, SRC, 98, &refused), -EAGAIN);
    for (unsigned i = 1; i < POSTED; i++)
        msg_send(&r, &m[i]);
    msgs_wait_check(&r, &m[1], POSTED - 1);
    EXPECT_RET(efarm_cancel_recv(r.p.b, &extra), 0);
    for (unsigned i = 0; i < POSTED + 2; i++)
        msg_free(&m[i]);
    rig_close(&r);
}

/* ---- 9. Registration failures ------------------------------------------------------------ */

/* An endpoint registers two regions of its own (send and receive buffers). */
EFARM_TEST(proto_endpoint_needs_two_registrations)
{
    struct efarm_ep *ep;

    proto_use_efasim();
    setenv("EFASIM_MAX_MR", "1", 1);
    EXPECT_TRUE(efarm_ep_open(NULL, &ep) < 0);
}

/*
 * No registration left (EFASIM_MAX_MR = 2: the endpoint's own two): a send
 * that would take runting read or long-read cannot register its buffer and
 * goes long-CTS instead (reg_fallbacks); DC keeps its RECEIPT.
 */
EFARM_TEST(proto_reg_failure_sender_falls_back)
{
    struct rig r;

    setenv("EFASIM_MAX_MR", "2", 1);
    rig_open(&r, &g_small, &g_small);
    rig_handshake(&r);
    for (unsigned tagged = 0; tagged < 2; tagged++) {
        for (unsigned dc = 0; dc < 2; dc++) {
            for (unsigned posted_first = 0; posted_first < 2; posted_first++) {
                struct msg m;

                msg_init(&m, r.read_min + 3, r.read_min + 3, dc ? EFARM_SEND_DC : 0, tagged,
                         EFARM_PROTO_LONGCTS, 160 + tagged);
                m.reg_fallback = true;
                xfer(&r, &m, posted_first);
                msg_free(&m);
            }
        }
    }
    rig_close(&r);
}

/*
 * READ_NACK (section 4.7): the receiver cannot register its buffer, the
 * sender can. EFASIM_MAX_MR = 3 leaves each endpoint one registration; b
 * spends its own on a read send to a that a does not receive yet, so b's
 * read of a's message fails to register and b answers READ_NACK; a finishes
 * by long-CTS (DC: with RECEIPT). Then a receives b's message by RDMA read.
 */
EFARM_TEST(proto_read_nack_receiver_cannot_register)
{
    struct rig r;
    struct proto_pair *p = &r.p;

    setenv("EFASIM_MAX_MR", "3", 1);
    rig_open(&r, &g_small, &g_small);
    rig_handshake(&r);
    for (unsigned dc = 0; dc < 2; dc++) {
        uint64_t len = r.read_min + 100;
        uint8_t *bsrc = malloc(len), *adst = malloc(len);
        struct efarm_req bs = {0}, ar = {0};
        struct efarm_counters a0, b0;
        uint8_t nack_type = rtm_type(EFARM_PROTO_LONGCTS, true, dc);
        struct msg m;

        efarm_test_context("%s read from a, b cannot register", dc ? "DC" : "non-DC");
        proto_fill(bsrc, len, 170 + dc);
        EXPECT_RET(efarm_tsend(p->b, p->b_to_a, bsrc, len, CTX, SRC, 1, 0, 0, &bs), 0);
        EXPECT_TRUE(bs.proto == EFARM_PROTO_RUNTREAD || bs.proto == EFARM_PROTO_LONGREAD);
        SPIN_UNTIL(p, efarm_tprobe(p->a, CTX, SRC, 1, false, &(struct efarm_probe_info){0}) == 1,
                   WAIT_S);
        a0 = *cnt(p->a);
        b0 = *cnt(p->b);
        msg_init(&m, len, len, dc ? EFARM_SEND_DC : 0, true,
                 dc ? EFARM_PROTO_LONGREAD : EFARM_PROTO_RUNTREAD, 172 + dc);
        msg_post(&r, &m);
        msg_send(&r, &m);
        proto_pair_wait(p, (struct efarm_req *[]){&m.sreq, &m.rreq}, 2, WAIT_S);
        msg_check(&r, &m); /* sreq.proto keeps the protocol chosen at the call */
        EXPECT_EQ(D(cnt(p->b), &b0, read_nacks_sent), 1);
        EXPECT_EQ(D(cnt(p->a), &a0, read_nacks_recv), 1);
        EXPECT_EQ(D(cnt(p->b), &b0, reads_posted), 0);
        EXPECT_EQ(D(cnt(p->b), &b0, rx_by_type[nack_type]), 1);
        EXPECT_TRUE(D(cnt(p->b), &b0, rx_by_type[EFARM_PKT_CTSDATA]) > 0);
        EXPECT_EQ(D(cnt(p->a), &a0, rx_by_type[EFARM_PKT_RECEIPT]), dc);
        EXPECT_EQ(D(cnt(p->a), &a0, rx_by_type[EFARM_PKT_EOR]), 0);
        msg_free(&m);

        /* a's own registration is free again: b's message goes by RDMA read. */
        EXPECT_RET(efarm_trecv(p->a, adst, len, CTX, SRC, 1, &ar), 0);
        proto_pair_wait(p, (struct efarm_req *[]){&bs, &ar}, 2, WAIT_S);
        EXPECT_RET(bs.status, 0);
        EXPECT_RET(ar.status, 0);
        proto_expect_pattern(adst, len, 170 + dc);
        EXPECT_TRUE(D(cnt(p->a), &a0, reads_posted) > 0);
        free(bsrc);
        free(adst);
    }
    rig_close(&r);
}

/* ---- 10. Sizes ------------------------------------------------------------------------- */

/*
 * The hot structures' sizes, pinned so a change is a decision: the
 * address-vector entry every peer costs, the per-peer state created on
 * contact (152 bytes plus a pointer per reorder-window slot), an operation,
 * and the send and stored-packet descriptors.
 */
EFARM_TEST(proto_structure_sizes)
{
    static const uint32_t recvwins[] = {4, 128};
    struct efarm_proto_sizes s;

    proto_use_efasim();
    for (unsigned i = 0; i < 2; i++) {
        struct efarm_ep_attr attr = {.recvwin = recvwins[i]};
        struct efarm_ep *ep;

        EXPECT_RET(efarm_ep_open(&attr, &ep), 0);
        efarm_proto_sizes(ep, &s);
        EXPECT_EQ(s.peer, 56);
        EXPECT_EQ(s.peer_state, 152 + 8 * recvwins[i]);
        EXPECT_EQ(s.op, 288);
        EXPECT_EQ(s.tx_pkt, 56);
        EXPECT_EQ(s.rx_pkt, 56);
        efarm_ep_close(ep);
    }
}

/* ---- 11. Allocation-failure walks ------------------------------------------------------ */

static void mr_cache_fail_at(unsigned n)
{
    atomic_store(&g_efarm_mr_cache_alloc_fail_at, n);
}

/*
 * Make the 1st, 2nd, ... allocation of efarm_ep_open fail through one of the
 * injection points until open needs no more: every failure returns -ENOMEM
 * and leaks nothing (LeakSanitizer checks the process), and the endpoint
 * that finally opens works.
 */
static void open_walk(void (*fail_at)(unsigned), unsigned min_points)
{
    struct efarm_ep *ep;
    struct rig r;
    unsigned k;
    int ret;

    proto_use_efasim();
    EXPECT_RET(efarm_ep_open(NULL, &ep), 0); /* loads the libraries and the topology once */
    efarm_ep_close(ep);
    for (k = 1; k < 1000; k++) {
        efarm_test_context("allocation %u fails", k);
        fail_at(k);
        ret = efarm_ep_open(NULL, &ep);
        fail_at(0);
        if (ret == 0)
            break;
        EXPECT_RET(ret, -ENOMEM);
    }
    EXPECT_TRUE(k > min_points && k < 1000);
    efarm_ep_close(ep);
    efarm_test_context("after the walk");
    rig_open(&r, NULL, NULL);
    rig_handshake(&r);
    xfer_both(&r, r.read_min, r.read_min, 0, true, EFARM_PROTO_RUNTREAD);
    rig_close(&r);
}

EFARM_TEST_TIMEOUT(proto_open_alloc_failure_walk, 60)
{
    open_walk(efarm_alloc_fail_at, 10);
}

EFARM_TEST_TIMEOUT(proto_open_dev_alloc_failure_walk, 60)
{
    open_walk(efarm_dev_alloc_fail_at, 2);
}

EFARM_TEST_TIMEOUT(proto_open_mr_cache_alloc_failure_walk, 60)
{
    open_walk(mr_cache_fail_at, 1);
}
