/* The protocol engine suite's shared rig, messages and transfers (see proto_rig.h). */
#include "proto_rig.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "efarm_config.h"
#include "efarm_errno.h"
#include "efarm_pkt.h"
#include "efarm_proto_v4.h"

static uint64_t div_up(uint64_t a, uint64_t b)
{
    return (a + b - 1) / b;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* efasim's fault injector (read once per process: call before the first endpoint opens). */
void use_faults(void)
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

/*
 * Small thresholds: every subprotocol with few packets, several CTS rounds,
 * and a runt of exactly two full packets at efasim's default MTU.
 */
const struct efarm_ep_attr g_small = {
    .medium_max = 32768,
    .read_min = 65536,
    .runt_size = 17704,
    .cts_credits = 2,
    .rx_window = 3,
};

static uint64_t attr_or(uint64_t attr_value, uint64_t tunable)
{
    return attr_value ? attr_value : tunable;
}

void rig_open(struct rig *r, const struct efarm_ep_attr *attr_a, const struct efarm_ep_attr *attr_b)
{
    static const struct efarm_ep_attr none;
    const struct efarm_ep_attr *a = attr_a ? attr_a : &none, *b = attr_b ? attr_b : &none;
    const struct efarm_config *c;

    proto_use_efasim();
    proto_pair_open(&r->p, attr_a, attr_b);
    c = efarm_config();
    r->mtu = efarm_ep_caps(r->p.a)->max_msg_size;
    EXPECT_EQ(efarm_ep_caps(r->p.b)->max_msg_size, r->mtu);
    {
        struct efarm_ep_policy pol;

        efarm_ep_policy(r->p.a, &pol);
        r->medium_max = pol.medium_max;
        r->read_min = pol.read_min;
        EXPECT_EQ(r->medium_max, attr_or(a->medium_max, pol.medium_max));
    }
    r->runt_size = attr_or(a->runt_size, c->runt_size);
    r->cts_credits = (uint32_t)attr_or(a->cts_credits, c->cts_credits);
    r->rx_window = (uint32_t)attr_or(b->rx_window, c->rx_window);
}

/* One message each way, then wait until both sides have the other's HANDSHAKE. */
void rig_handshake(struct rig *r)
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

void rig_close(struct rig *r)
{
    expect_clean(r->p.a);
    expect_clean(r->p.b);
    proto_pair_close(&r->p);
}

/* ---- Expected wire traffic (from the spec's header sizes, not the engine's) -------------- */

uint8_t rtm_type(uint8_t proto, bool tagged, bool dc)
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
uint64_t req_hdr(uint8_t type, bool raw_addr, bool cq_data)
{
    return efarm_pkt_type_info(type)->hdr_size +
           (raw_addr ? sizeof(struct efarm_wire_req_opt_raw_addr) : EFARM_REQ_OPT_CONNID_LEN) +
           (cq_data ? EFARM_REQ_OPT_CQ_DATA_LEN : 0);
}

/* The largest eager message to a peer whose HANDSHAKE arrived (raw_addr false) or not. */
uint64_t eager_fit(const struct rig *r, bool tagged, bool dc, bool cq, bool raw_addr)
{
    return r->mtu - req_hdr(rtm_type(EFARM_PROTO_EAGER, tagged, dc), raw_addr, cq);
}

/* Application bytes of one CTSDATA (the connid option is on between efarm endpoints). */
uint64_t ctsdata_room(const struct rig *r)
{
    return r->mtu - sizeof(struct efarm_wire_ctsdata_hdr) - EFARM_OPT_FIELD_LEN;
}

/* ---- One message a -> b ----------------------------------------------------------------- */

static uint64_t msg_cq_data(const struct msg *m)
{
    return 0xc0ffee0000000000ull | m->seed;
}

void msg_init(struct msg *m, uint64_t len, uint64_t buf_len, uint32_t flags, bool tagged,
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

void msg_free(struct msg *m)
{
    free(m->src);
    free(m->dst);
}

void msg_send(struct rig *r, struct msg *m)
{
    if (m->tagged)
        EXPECT_RET(efarm_tsend(r->p.a, r->p.a_to_b, m->src, m->len, m->context, m->source, m->tag,
                               m->flags, msg_cq_data(m), &m->sreq),
                   0);
    else
        EXPECT_RET(
            efarm_send(r->p.a, r->p.a_to_b, m->src, m->len, m->flags, msg_cq_data(m), &m->sreq), 0);
}

void msg_post(struct rig *r, struct msg *m)
{
    if (m->tagged)
        EXPECT_RET(efarm_trecv(r->p.b, m->dst, m->buf_len, m->context, m->source, m->tag, &m->rreq),
                   0);
    else
        EXPECT_RET(efarm_recv(r->p.b, m->dst, m->buf_len, r->p.b_to_a, &m->rreq), 0);
}

/* Bytes [from, to) of a receive buffer still hold the guard pattern. */
void expect_guard(const uint8_t *buf, uint64_t from, uint64_t to)
{
    for (uint64_t i = from; i < to; i++) {
        if (buf[i] != GUARD_BYTE)
            efarm_test_fail(__FILE__, __LINE__, "byte %llu beyond the %llu delivered is %#x",
                            (unsigned long long)i, (unsigned long long)from, buf[i]);
    }
}

/* Both requests completed as the message says: statuses, lengths, key, CQ data, bytes. */
void msg_check(const struct rig *r, const struct msg *m)
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
uint64_t msg_req_pkts(const struct rig *r, const struct msg *m, uint64_t runt)
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

void msg_traffic(const struct rig *r, const struct msg *m, uint64_t runt, struct traffic *t)
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
void xfer(struct rig *r, struct msg *m, bool posted_first)
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
void xfer_both(struct rig *r, uint64_t len, uint64_t buf_len, uint32_t flags, bool tagged,
               uint8_t proto)
{
    for (unsigned posted_first = 0; posted_first < 2; posted_first++) {
        struct msg m;

        msg_init(&m, len, buf_len, flags, tagged, proto, efarm_test_rand() % 1000000);
        xfer(r, &m, posted_first);
        msg_free(&m);
    }
}

/* Wait for every request of n messages (both sides) and check each. */
void msgs_wait_check(struct rig *r, struct msg *m, unsigned n)
{
    struct efarm_req **reqs = calloc(2 * n, sizeof(*reqs));

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
