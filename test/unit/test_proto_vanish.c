/*
 * A peer that vanishes in the middle of a rendezvous (issue 16, item 5), and
 * one that is only slow.
 *
 * Three endpoints on efasim in this process: a, the survivor; b, its peer in
 * a rendezvous; c, an unrelated peer of a. b closes its endpoint (its QP is
 * destroyed) while a has an operation that waits on b with nothing to send:
 * a long-CTS send waiting for its CTS, a receive waiting for the CTSDATA its
 * CTS asked for, a long-read send waiting for its EOR, a DC send waiting for
 * its RECEIPT, a one-sided operation (an emulated read, a fetching atomic, a
 * write with remote completion) waiting for its response, a write waiting
 * for b's HANDSHAKE (b never answered a's trigger). Nothing of a's fails by
 * itself; a's liveness probe (EFARM_PEER_PROBE_MS, here 200 ms) must find b
 * gone, so the operation ends with the device's error (efasim reports b
 * silent after EFASIM_TIMEOUT_MS, here 300 ms: DEV_TIMEOUT) within
 * 2 x 200 + 300 ms plus scheduling slack, while a keeps exchanging messages
 * with c, before and after, and a's endpoint never fails.
 *
 * A peer whose process does not progress for many periods while its QP
 * lives (the device answers the probes) is never failed: the transfer
 * completes intact once it resumes. Without probes (EFARM_PEER_PROBE_MS=0)
 * the operation with the vanished peer still waits when the bound has long
 * passed: what the probes fix.
 */
#include <stdlib.h>
#include <string.h>

#include "efarm_errno.h"
#include "efarm_pkt.h"
#include "efarm_proto.h"
#include "efarm_rma.h"
#include "efarm_test.h"
#include "proto_common.h"
#include "proto_rig.h"

#define PROBE_MS   200u
#define SIM_MS     300u /* EFASIM_TIMEOUT_MS */
#define SLACK_S    0.8  /* scheduling on a shared 2-core machine */
#define BOUND_S    ((2.0 * PROBE_MS + SIM_MS) / 1000.0 + SLACK_S)
#define SRC_B      21
#define SRC_C      22
#define BIG        100000 /* long-CTS at g_small's thresholds */
#define EXCH_SMALL 1000
#define RDV_SEED   600
/* At g_small's thresholds BIG would go by runting read: the long-CTS tests force long-CTS. */
#define LONGCTS EFARM_SEND_PROTO(EFARM_PROTO_LONGCTS)

/* g_small's thresholds, with probes every PROBE_MS. */
static const struct efarm_ep_attr g_attr = {
    .medium_max = 32768,
    .read_min = 65536,
    .runt_size = 17704,
    .cts_credits = 2,
    .rx_window = 3,
    .peer_probe_ms = PROBE_MS,
};

struct trio {
    struct efarm_ep *a, *b, *c;
    efarm_peer_t a_to_b, b_to_a, a_to_c, c_to_a;
    unsigned exchanges; /* a <-> c exchanges completed */
};

static void link_eps(struct efarm_ep *x, struct efarm_ep *y, efarm_peer_t *x_to_y,
                     efarm_peer_t *y_to_x)
{
    uint8_t raw[EFARM_RAW_ADDR_LEN];

    efarm_ep_addr(y, raw);
    EXPECT_RET(efarm_av_insert(x, raw, x_to_y), 0);
    efarm_ep_addr(x, raw);
    EXPECT_RET(efarm_av_insert(y, raw, y_to_x), 0);
}

/* One message each way between x and y (source src_x from x, src_y from y), checked. */
static void exchange(struct efarm_ep *x, efarm_peer_t x_to_y, int32_t src_x, struct efarm_ep *y,
                     efarm_peer_t y_to_x, int32_t src_y, uint64_t len, uint64_t seed)
{
    uint8_t *sx = malloc(len), *sy = malloc(len), *rx = calloc(1, len), *ry = calloc(1, len);
    struct efarm_req a = {0}, b = {0}, c = {0}, d = {0};
    struct efarm_req *reqs[] = {&a, &b, &c, &d};
    struct efarm_ep *eps[] = {x, y};

    EXPECT_TRUE(sx && sy && rx && ry);
    proto_fill(sx, len, seed);
    proto_fill(sy, len, seed + 1);
    EXPECT_RET(efarm_trecv(x, rx, len, CTX, src_y, TAG, &a), 0);
    EXPECT_RET(efarm_trecv(y, ry, len, CTX, src_x, TAG, &b), 0);
    EXPECT_RET(efarm_tsend(x, x_to_y, sx, len, CTX, src_x, TAG, 0, 0, &c), 0);
    EXPECT_RET(efarm_tsend(y, y_to_x, sy, len, CTX, src_y, TAG, 0, 0, &d), 0);
    proto_wait(eps, 2, reqs, 4, WAIT_S);
    for (unsigned i = 0; i < 4; i++)
        EXPECT_RET(reqs[i]->status, 0);
    proto_expect_pattern(rx, len, seed + 1);
    proto_expect_pattern(ry, len, seed);
    free(sx);
    free(sy);
    free(rx);
    free(ry);
}

static void exchange_ac(struct trio *t, uint64_t len)
{
    exchange(t->a, t->a_to_c, SRC_C, t->c, t->c_to_a, SRC_C, len, 1000 + t->exchanges);
    t->exchanges++;
}

/*
 * a, b and c on efasim with probes every PROBE_MS (probe_ms 0: the tunable),
 * introduced; a and b have exchanged a message (their HANDSHAKEs) when
 * ab_contact.
 */
static void trio_open_ex(struct trio *t, uint32_t probe_ms, bool ab_contact)
{
    struct efarm_ep_attr attr = g_attr;

    attr.peer_probe_ms = probe_ms;
    setenv("EFASIM_TIMEOUT_MS", "300", 1);
    /*
     * QP numbers far above the lowest free ones: b's number, freed when b vanishes,
     * is not taken by another process's new QP (an MPI job started beside the
     * suite), whose packets would answer "no such QP" before the timeout tested here
     * (that answer, a number reused, is test_proto_restart's).
     */
    setenv("EFASIM_QPN", "200", 0);
    proto_use_efasim();
    memset(t, 0, sizeof(*t));
    EXPECT_RET(efarm_ep_open(&attr, &t->a), 0);
    EXPECT_RET(efarm_ep_open(&attr, &t->b), 0);
    EXPECT_RET(efarm_ep_open(&attr, &t->c), 0);
    link_eps(t->a, t->b, &t->a_to_b, &t->b_to_a);
    link_eps(t->a, t->c, &t->a_to_c, &t->c_to_a);
    /* Each pair handshakes first, as peers in the middle of a job have. */
    if (ab_contact)
        exchange(t->a, t->a_to_b, SRC_B, t->b, t->b_to_a, SRC_B, 8, 1);
    exchange_ac(t, 8);
}

static void trio_open(struct trio *t, uint32_t probe_ms)
{
    trio_open_ex(t, probe_ms, true);
}

/* Progress x alone until its packets are all acknowledged by the device. */
static void settle(struct efarm_ep *x)
{
    double deadline = proto_now_s() + WAIT_S;
    struct efarm_levels lv;

    for (;;) {
        EXPECT_TRUE(efarm_ep_progress(x) >= 0);
        efarm_ep_levels(x, &lv);
        if (lv.tx_bufs == 0)
            return;
        if (proto_now_s() > deadline)
            efarm_test_fail(__FILE__, __LINE__, "%llu send buffers still in use",
                            (unsigned long long)lv.tx_bufs);
    }
}

/*
 * b is gone and req (a's operation with b) waits: exchange messages a <-> c
 * until req completes, then check it ended with the device's error within
 * the bound, by a's probe, and that a and c still talk.
 */
static void expect_vanish_outcome(struct trio *t, const struct efarm_req *req, const char *what)
{
    const struct efarm_counters *ca = efarm_ep_counters(t->a);
    double start = proto_now_s(), took;
    unsigned before = t->exchanges;

    efarm_test_context("%s: waiting for it to end", what);
    while (!req->done) {
        if (proto_now_s() - start > WAIT_S)
            efarm_test_fail(__FILE__, __LINE__, "%s: still waiting after %.0f s", what, WAIT_S);
        exchange_ac(t, EXCH_SMALL); /* a's progress stays >= 0 throughout */
    }
    took = proto_now_s() - start;
    if (getenv("EFARM_TEST_VERBOSE"))
        fprintf(stderr, "%s: ended after %.3f s (bound %.3f s), %u exchanges with c meanwhile\n",
                what, took, BOUND_S, t->exchanges - before);
    efarm_test_context("%s: ended after %.3f s (bound %.3f s)", what, took, BOUND_S);
    EXPECT_RET(req->status, EFARM_E(DEV_TIMEOUT));
    EXPECT_TRUE(took <= BOUND_S);
    EXPECT_TRUE(took >= SIM_MS / 1000.0 * 0.9); /* the device's own timeout, after the probe */
    EXPECT_TRUE(t->exchanges - before >= 1);
    EXPECT_TRUE(ca->peer_probes >= 1);
    EXPECT_EQ(ca->peers_failed, 1);
    EXPECT_EQ(ca->lost_after_completion, 0);
    EXPECT_EQ(ca->tx_by_type[EFARM_PKT_HANDSHAKE], ca->handshakes_sent + ca->peer_probes);
    /* Unrelated traffic still flows, every subprotocol's way: eager, medium, long-CTS. */
    efarm_test_context("%s: a and c after the failure", what);
    exchange_ac(t, EXCH_SMALL);
    exchange_ac(t, 20000);
    exchange_ac(t, BIG);
    EXPECT_TRUE(efarm_ep_progress(t->a) >= 0);
    EXPECT_EQ(efarm_ep_counters(t->c)->send_errors, 0);
    EXPECT_EQ(efarm_ep_counters(t->c)->recv_errors, 0);
    EXPECT_EQ(efarm_ep_counters(t->c)->peers_failed, 0);
}

static void trio_close(struct trio *t)
{
    efarm_ep_close(t->a);
    efarm_ep_close(t->c);
}

/* a's send of len bytes (flags) to b, which holds it unexpected; then b vanishes. */
static void vanish_while_sending(uint64_t len, uint32_t flags, uint8_t proto, const char *what)
{
    uint8_t *src = malloc(len);
    struct efarm_req sreq = {0};
    struct trio t;

    trio_open(&t, PROBE_MS);
    proto_fill(src, len, RDV_SEED);
    EXPECT_RET(efarm_tsend(t.a, t.a_to_b, src, len, CTX, SRC_B, TAG, flags, 0, &sreq), 0);
    efarm_test_context("%s: b takes the REQ", what);
    {
        double deadline = proto_now_s() + WAIT_S;

        while (efarm_ep_counters(t.b)->unexpected < 1) {
            EXPECT_TRUE(proto_now_s() < deadline);
            EXPECT_TRUE(efarm_ep_progress(t.a) >= 0);
            EXPECT_TRUE(efarm_ep_progress(t.b) >= 0);
        }
    }
    settle(t.a);
    EXPECT_TRUE(!sreq.done);
    EXPECT_EQ(sreq.proto, proto);
    efarm_ep_close(t.b);
    expect_vanish_outcome(&t, &sreq, what);
    trio_close(&t);
    free(src);
}

EFARM_TEST(proto_vanish_longcts_sender_waiting_for_cts)
{
    vanish_while_sending(BIG, LONGCTS, EFARM_PROTO_LONGCTS, "long-CTS send waiting for its CTS");
}

EFARM_TEST(proto_vanish_longread_sender_waiting_for_eor)
{
    vanish_while_sending(BIG, EFARM_SEND_PROTO(EFARM_PROTO_LONGREAD), EFARM_PROTO_LONGREAD,
                         "long-read send waiting for its EOR");
}

EFARM_TEST(proto_vanish_dc_sender_waiting_for_receipt)
{
    vanish_while_sending(EXCH_SMALL, EFARM_SEND_DC, EFARM_PROTO_EAGER,
                         "DC eager send waiting for its RECEIPT");
}

/*
 * The receiver's side: b sends a long-CTS message, a's receive sends its
 * CTS (a grant of rx_window packets), and b vanishes before any CTSDATA.
 */
EFARM_TEST(proto_vanish_receiver_waiting_for_ctsdata)
{
    uint8_t *src = malloc(BIG), *dst = calloc(1, BIG);
    struct efarm_req sreq = {0}, rreq = {0};
    const struct efarm_counters *ca, *cb;
    double deadline;
    struct trio t;

    trio_open(&t, PROBE_MS);
    ca = efarm_ep_counters(t.a);
    cb = efarm_ep_counters(t.b);
    proto_fill(src, BIG, RDV_SEED);
    EXPECT_RET(efarm_trecv(t.a, dst, BIG, CTX, SRC_B, TAG, &rreq), 0);
    EXPECT_RET(efarm_tsend(t.b, t.b_to_a, src, BIG, CTX, SRC_B, TAG, LONGCTS, 0, &sreq), 0);
    /* b posts its REQ; a answers with the CTS and b's device acknowledges it. */
    settle(t.b);
    EXPECT_EQ(cb->tx_by_type[EFARM_PKT_LONGCTS_TAGRTM], 1);
    deadline = proto_now_s() + WAIT_S;
    while (ca->tx_by_type[EFARM_PKT_CTS] < 1) {
        EXPECT_TRUE(proto_now_s() < deadline);
        EXPECT_TRUE(efarm_ep_progress(t.a) >= 0);
    }
    settle(t.a);
    EXPECT_TRUE(!rreq.done);
    EXPECT_EQ(cb->tx_by_type[EFARM_PKT_CTSDATA], 0);
    efarm_ep_close(t.b); /* b never processed the CTS: no CTSDATA will come */
    expect_vanish_outcome(&t, &rreq, "receive waiting for CTSDATA after its CTS");
    trio_close(&t);
    free(src);
    free(dst);
}

/*
 * Without probes the same vanish leaves the long-CTS send waiting well past
 * the bound: nothing else would ever end it (and a still talks with c).
 */
EFARM_TEST(proto_vanish_without_probes_waits)
{
    uint8_t *src = malloc(BIG);
    struct efarm_req sreq = {0};
    double end;
    struct trio t;

    setenv("EFARM_PEER_PROBE_MS", "0", 1);
    trio_open(&t, 0);
    proto_fill(src, BIG, RDV_SEED);
    EXPECT_RET(efarm_tsend(t.a, t.a_to_b, src, BIG, CTX, SRC_B, TAG, LONGCTS, 0, &sreq), 0);
    end = proto_now_s() + WAIT_S;
    while (efarm_ep_counters(t.b)->unexpected < 1 && proto_now_s() < end) {
        EXPECT_TRUE(efarm_ep_progress(t.a) >= 0);
        EXPECT_TRUE(efarm_ep_progress(t.b) >= 0);
    }
    settle(t.a);
    efarm_ep_close(t.b);
    end = proto_now_s() + 2 * BOUND_S;
    while (proto_now_s() < end)
        exchange_ac(&t, EXCH_SMALL);
    EXPECT_TRUE(!sreq.done);
    EXPECT_EQ(efarm_ep_counters(t.a)->peer_probes, 0);
    EXPECT_EQ(efarm_ep_counters(t.a)->peers_failed, 0);
    /* Closing abandons the waiting send: its memory is the caller's again. */
    trio_close(&t);
    free(src);
}

/*
 * A slow peer, not a dead one: b holds a's long-CTS message unexpected and
 * does not progress for 8 probe periods (its device answers the probes; the
 * engine sees them later). a probes it every period and never fails it; once
 * b posts the receive the message arrives intact.
 */
EFARM_TEST(proto_vanish_slow_peer_not_failed)
{
    uint8_t *src = malloc(BIG), *dst = calloc(1, BIG);
    struct efarm_req sreq = {0}, rreq = {0};
    struct efarm_req *reqs[] = {&sreq, &rreq};
    const struct efarm_counters *ca, *cb;
    struct efarm_ep *ab[2];
    uint64_t hs_b;
    double end;
    struct trio t;

    trio_open(&t, PROBE_MS);
    ca = efarm_ep_counters(t.a);
    cb = efarm_ep_counters(t.b);
    proto_fill(src, BIG, RDV_SEED);
    EXPECT_RET(efarm_tsend(t.a, t.a_to_b, src, BIG, CTX, SRC_B, TAG, LONGCTS, 0, &sreq), 0);
    end = proto_now_s() + WAIT_S;
    while (cb->unexpected < 1) {
        EXPECT_TRUE(proto_now_s() < end);
        EXPECT_TRUE(efarm_ep_progress(t.a) >= 0);
        EXPECT_TRUE(efarm_ep_progress(t.b) >= 0);
    }
    hs_b = cb->handshakes_recv;
    /* b stalls: only a and c progress, for 8 periods (more than 5 efasim timeouts). */
    end = proto_now_s() + 8 * PROBE_MS / 1000.0;
    while (proto_now_s() < end)
        exchange_ac(&t, EXCH_SMALL);
    EXPECT_TRUE(!sreq.done);
    EXPECT_EQ(ca->peers_failed, 0);
    EXPECT_TRUE(ca->peer_probes >= 3);
    EXPECT_TRUE(ca->peer_probes <= 8); /* at most one a period */
    /* b resumes: it takes the probes (HANDSHAKEs of a known peer) and the message. */
    EXPECT_RET(efarm_trecv(t.b, dst, BIG, CTX, SRC_B, TAG, &rreq), 0);
    ab[0] = t.a;
    ab[1] = t.b;
    proto_wait(ab, 2, reqs, 2, WAIT_S);
    EXPECT_RET(sreq.status, 0);
    EXPECT_RET(rreq.status, 0);
    EXPECT_EQ(rreq.length, BIG);
    proto_expect_pattern(dst, BIG, RDV_SEED);
    end = proto_now_s() + 0.05;
    while (proto_now_s() < end) {
        EXPECT_TRUE(efarm_ep_progress(t.a) >= 0);
        EXPECT_TRUE(efarm_ep_progress(t.b) >= 0);
    }
    EXPECT_EQ(cb->handshakes_recv - hs_b, ca->peer_probes);
    EXPECT_EQ(ca->peers_failed, 0);
    EXPECT_EQ(cb->peers_failed, 0);
    EXPECT_EQ(ca->send_errors + ca->recv_errors + cb->send_errors + cb->recv_errors, 0);
    EXPECT_EQ(cb->decode_errors + cb->stale_ids + cb->connid_mismatch, 0);
    efarm_ep_close(t.b);
    trio_close(&t);
    free(src);
    free(dst);
}

/* ---- One-sided operations waiting for b's answer --------------------------------- */

#define RMA_LEN 4096

enum rma_case { RMA_READ, RMA_FETCH_ATOMIC, RMA_DC_WRITE, RMA_WRITE_BEFORE_HS };

/*
 * a starts one-sided operation `which` on b's exposed memory; b's device
 * takes a's packet (REQ or, before any contact, the HANDSHAKE trigger) but
 * b's process never handles it, and b vanishes. The operation ends by a's
 * probe like the two-sided ones; b's memory was never touched.
 */
static void vanish_while_rma(enum rma_case which, enum efarm_rma_proto want, uint64_t trigger_pkts,
                             const char *what)
{
    uint8_t *mem = malloc(RMA_LEN), *local = malloc(RMA_LEN);
    uint64_t operand = 5, result = 0;
    struct efarm_region *reg;
    struct efarm_req req = {0};
    struct efarm_riov riov;
    struct trio t;

    trio_open_ex(&t, PROBE_MS, which != RMA_WRITE_BEFORE_HS);
    EXPECT_TRUE(mem && local);
    memset(mem, 0x5a, RMA_LEN);
    proto_fill(local, RMA_LEN, RDV_SEED);
    EXPECT_RET(efarm_expose(t.b, mem, RMA_LEN, EFARM_EXPOSE_READ | EFARM_EXPOSE_WRITE, &reg), 0);
    riov = (struct efarm_riov){(uint64_t)(uintptr_t)mem, RMA_LEN, efarm_region_key(reg)};
    switch (which) {
    case RMA_READ:
        EXPECT_RET(efarm_read(t.a, t.a_to_b, local, RMA_LEN, &riov, 1, EFARM_RMA_NO_DIRECT, &req),
                   0);
        break;
    case RMA_FETCH_ATOMIC:
        riov.len = sizeof(uint64_t);
        EXPECT_RET(efarm_atomic(t.a, t.a_to_b, EFARM_AOP_SUM, EFARM_DT_UINT64, &operand, NULL,
                                &result, 1, &riov, 1, 0, &req),
                   0);
        break;
    case RMA_DC_WRITE:
    case RMA_WRITE_BEFORE_HS:
        EXPECT_RET(efarm_write(t.a, t.a_to_b, local, RMA_LEN, &riov, 1,
                               EFARM_RMA_NO_DIRECT | EFARM_RMA_DC, &req),
                   0);
        break;
    }
    efarm_test_context("%s: b's device takes a's packets", what);
    settle(t.a); /* b's device acknowledged all; b's process saw nothing */
    EXPECT_TRUE(!req.done);
    EXPECT_EQ(efarm_ep_counters(t.a)->handshake_triggers, trigger_pkts);
    if (which != RMA_WRITE_BEFORE_HS)
        EXPECT_EQ(req.proto, want);
    efarm_unexpose(t.b, reg);
    efarm_ep_close(t.b);
    expect_vanish_outcome(&t, &req, what);
    EXPECT_EQ(result, 0); /* nothing fetched */
    for (unsigned i = 0; i < RMA_LEN; i++)
        if (mem[i] != 0x5a)
            efarm_test_fail(__FILE__, __LINE__, "%s: b's byte %u written", what, i);
    trio_close(&t);
    free(mem);
    free(local);
}

EFARM_TEST(proto_vanish_rma_read_waiting_for_readrsp)
{
    vanish_while_rma(RMA_READ, EFARM_RMA_SHORT_RTR, 0, "emulated read waiting for its READRSP");
}

EFARM_TEST(proto_vanish_fetch_atomic_waiting_for_atomrsp)
{
    vanish_while_rma(RMA_FETCH_ATOMIC, EFARM_RMA_FETCH_RTA, 0,
                     "fetching atomic waiting for its ATOMRSP");
}

EFARM_TEST(proto_vanish_dc_write_waiting_for_receipt)
{
    vanish_while_rma(RMA_DC_WRITE, EFARM_RMA_EAGER_RTW, 0,
                     "emulated write (remote completion) waiting for its RECEIPT");
}

/* a and b never talked: the write waits for b's HANDSHAKE, which a's trigger asked for. */
EFARM_TEST(proto_vanish_write_waiting_for_handshake)
{
    vanish_while_rma(RMA_WRITE_BEFORE_HS, EFARM_RMA_EAGER_RTW, 1,
                     "write waiting for the peer's HANDSHAKE");
}
