/*
 * The engine suite, parts 7-8 (see proto_rig.h): back-pressure from a
 * receiver that posts nothing or is not progressed (unexpected queue,
 * deferred messages, held buffers, copy budget, RNR and its back-off), and
 * resource limits: operations on either side, send buffers and the send
 * queue, posted receives.
 */
#include <errno.h>
#include <stdlib.h>

#include "efarm_errno.h"
#include "efarm_proto.h"
#include "efarm_test.h"
#include "proto_common.h"
#include "proto_rig.h"

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
 * A receiver with 4 operations holds 40 unexpected eager and medium
 * messages: waiting messages take no operation, so none is deferred. Once
 * receives are posted everything arrives, in order.
 */
EFARM_TEST(proto_receiver_max_ops)
{
    enum { N = 40 };
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
    SPIN_UNTIL(&r.p, cnt(r.p.b)->unexpected == N, WAIT_S);
    EXPECT_EQ(cnt(r.p.b)->deferred, 0);
    for (unsigned i = 0; i < N; i++)
        msg_post(&r, &m[i]);
    msgs_wait_check(&r, m, N);
    for (unsigned i = 0; i < N; i++)
        msg_free(&m[i]);
    rig_close(&r);
}

/*
 * Operations are still needed to receive anything longer than eager: a
 * receiver whose only operation is taken by its own long-CTS send (waiting
 * for a CTS) refuses a receive that would match a waiting medium message
 * (-EAGAIN), and defers an in-order medium message that meets its posted
 * receive, together with the message behind it, until the operation is
 * free again; nothing is lost and the order holds.
 */
EFARM_TEST(proto_receiver_no_free_op_defers)
{
    struct efarm_ep_attr attr_b = g_small;
    struct rig r;
    struct proto_pair *p = &r.p;
    struct msg m[3], back;
    struct efarm_req refused = {0};

    attr_b.max_ops = 1;
    rig_open(&r, &g_small, &attr_b);
    rig_handshake(&r);
    /* b's one operation: a long-CTS send to a, which a does not receive yet. */
    msg_init(&back, r.medium_max + 100, r.medium_max + 100, 0, true, EFARM_PROTO_LONGCTS, 300);
    EXPECT_RET(
        efarm_tsend(p->b, p->b_to_a, back.src, back.len, CTX, SRC, TAG + 1, 0, 0, &back.sreq), 0);
    for (unsigned i = 0; i < 3; i++)
        msg_init(&m[i], r.medium_max - i, r.medium_max - i, 0, true, EFARM_PROTO_MEDIUM, 301 + i);
    m[1].tag = TAG + 5;
    /* m[0] waits unexpected: no operation needed, but receiving it needs one. */
    msg_send(&r, &m[0]);
    SPIN_UNTIL(p, cnt(p->b)->unexpected == 1, WAIT_S);
    EXPECT_RET(efarm_trecv(p->b, m[0].dst, m[0].buf_len, CTX, SRC, TAG, &refused), -EAGAIN);
    EXPECT_TRUE(!refused.done);
    /* m[1] meets its posted receive without an operation: deferred, and m[2] behind it. */
    msg_post(&r, &m[1]);
    msg_send(&r, &m[1]);
    msg_send(&r, &m[2]);
    SPIN_UNTIL(p, cnt(p->b)->deferred > 0, WAIT_S);
    proto_pair_spin(p, 10000);
    EXPECT_EQ(cnt(p->b)->unexpected, 1);
    EXPECT_TRUE(!m[1].rreq.done);
    /* Free b's operation: a receives the long-CTS message. */
    EXPECT_RET(efarm_trecv(p->a, back.dst, back.buf_len, CTX, SRC, TAG + 1, &back.rreq), 0);
    proto_pair_wait(p, (struct efarm_req *[]){&back.sreq, &back.rreq}, 2, WAIT_S);
    proto_pair_wait(p, (struct efarm_req *[]){&m[1].sreq, &m[1].rreq}, 2, WAIT_S);
    SPIN_UNTIL(p, cnt(p->b)->unexpected == 2, WAIT_S);
    for (unsigned i = 0; i < 3; i += 2) {
        int ret;

        while ((ret = efarm_trecv(p->b, m[i].dst, m[i].buf_len, CTX, SRC, TAG, &m[i].rreq)) ==
               -EAGAIN)
            proto_pair_spin(p, 100);
        EXPECT_RET(ret, 0);
    }
    msgs_wait_check(&r, m, 3);
    for (unsigned i = 0; i < 3; i++)
        msg_free(&m[i]);
    msg_free(&back);
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
