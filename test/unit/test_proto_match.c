/*
 * The engine suite, parts 4-5 (see proto_rig.h): MPI matching (wildcards,
 * the earliest-posted receive wins, contexts, tagged against untagged, and
 * non-overtaking across every subprotocol, with and without faults), probes,
 * matched probes with tmrecv, and cancelling receives.
 */
#include <errno.h>
#include <stdlib.h>

#include "efarm_errno.h"
#include "efarm_proto.h"
#include "efarm_test.h"
#include "proto_common.h"
#include "proto_rig.h"

/* ---- 4. MPI matching --------------------------------------------------------------------- */

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

/*
 * A probe reports the CQ data the sender attached (EFARM_SEND_CQ_DATA), for an
 * eager and a medium message, and none for one without.
 */
EFARM_TEST(proto_probe_reports_cq_data)
{
    static const uint64_t lens[] = {100, 30000, 200};
    static const uint64_t cq[] = {0x8000000012345678ull, 0x42, 0};
    struct proto_pair p;
    uint8_t *src = malloc(30000), *dst = malloc(30000);

    proto_use_efasim();
    proto_pair_open(&p, NULL, NULL);
    proto_fill(src, 30000, 9);
    for (unsigned i = 0; i < 3; i++) {
        struct efarm_req sreq = {0}, rreq = {0};
        struct efarm_req *reqs[] = {&sreq, &rreq};
        struct efarm_probe_info info;

        efarm_test_context("message %u", i);
        EXPECT_RET(efarm_tsend(p.a, p.a_to_b, src, lens[i], 1, 2, 3, cq[i] ? EFARM_SEND_CQ_DATA : 0,
                               cq[i], &sreq),
                   0);
        while (efarm_tprobe(p.b, 1, 2, 3, false, &info) == 0)
            proto_pair_spin(&p, 100);
        EXPECT_EQ(info.msg_length, lens[i]);
        EXPECT_EQ(info.has_cq_data, cq[i] != 0);
        EXPECT_EQ(info.cq_data, cq[i]);
        EXPECT_RET(efarm_trecv(p.b, dst, lens[i], 1, 2, 3, &rreq), 0);
        proto_pair_wait(&p, reqs, 2, 20);
        EXPECT_EQ(rreq.cq_data, cq[i]);
    }
    proto_pair_close(&p);
    free(src);
    free(dst);
}

/*
 * Arrival stamps (issue 39): each unexpected message takes the next value of
 * the endpoint's clock, its own or one the caller shares, in arrival order;
 * probes report it, and it does not change while the message waits.
 */
EFARM_TEST(proto_probe_reports_arrival)
{
    struct rig r;
    struct proto_pair *p = &r.p;
    struct efarm_probe_info info[3];
    uint64_t shared = 1000, unexp0, own;
    struct msg m[3];

    rig_open(&r, &g_small, &g_small);
    rig_handshake(&r);
    for (unsigned i = 0; i < 3; i++) {
        msg_init(&m[i], i == 1 ? r.medium_max : 64, r.medium_max, 0, true,
                 i == 1 ? EFARM_PROTO_MEDIUM : EFARM_PROTO_EAGER, 70 + i);
        m[i].tag = (int32_t)(10 + i);
    }
    /* Its own clock first: m[0] gets some stamp, the next message one more. */
    unexp0 = cnt(p->b)->unexpected;
    msg_send(&r, &m[0]);
    SPIN_UNTIL(p, cnt(p->b)->unexpected - unexp0 == 1, WAIT_S);
    EXPECT_EQ(efarm_tprobe(p->b, CTX, SRC, 10, false, &info[0]), 1);
    own = info[0].arrival;
    EXPECT_TRUE(own >= 1);
    /* A shared clock: the next two messages take 1001 and 1002, in arrival order. */
    efarm_ep_set_arrival_clock(p->b, &shared);
    msg_send(&r, &m[1]);
    msg_send(&r, &m[2]);
    SPIN_UNTIL(p, cnt(p->b)->unexpected - unexp0 == 3, WAIT_S);
    EXPECT_EQ(shared, 1002);
    EXPECT_EQ(efarm_tprobe(p->b, CTX, EFARM_ANY_SOURCE, 11, false, &info[1]), 1);
    EXPECT_EQ(efarm_tprobe(p->b, CTX, SRC, 12, true, &info[2]), 1);
    EXPECT_EQ(info[1].arrival, 1001);
    EXPECT_EQ(info[2].arrival, 1002);
    /* Waiting changes nothing; the earliest of all is still m[0]. */
    EXPECT_EQ(efarm_tprobe(p->b, CTX, EFARM_ANY_SOURCE, EFARM_ANY_TAG, false, &info[1]), 1);
    EXPECT_EQ(info[1].arrival, own);
    /* NULL: back to its own clock, which went on from where it was. */
    efarm_ep_set_arrival_clock(p->b, NULL);
    for (unsigned i = 0; i < 2; i++)
        msg_post(&r, &m[i]);
    EXPECT_RET(efarm_tmrecv(p->b, info[2].handle, m[2].dst, m[2].buf_len, &m[2].rreq), 0);
    msgs_wait_check(&r, m, 3);
    msg_send(&r, &m[0]);
    SPIN_UNTIL(p, cnt(p->b)->unexpected - unexp0 == 4, WAIT_S);
    EXPECT_EQ(efarm_tprobe(p->b, CTX, SRC, 10, false, &info[0]), 1);
    EXPECT_EQ(info[0].arrival, own + 1);
    msg_post(&r, &m[0]);
    proto_pair_wait(p, (struct efarm_req *[]){&m[0].rreq}, 1, WAIT_S);
    for (unsigned i = 0; i < 3; i++)
        msg_free(&m[i]);
    rig_close(&r);
}
