/*
 * The engine suite, parts 1-3 (see proto_rig.h): every subprotocol at every
 * size boundary and at the packet boundaries inside it, tagged and untagged,
 * the receive posted before and after arrival, DC, at the defaults, with
 * small thresholds and under efasim's faults; the eager boundary before the
 * HANDSHAKE, with eager_max and with CQ data; long-read while a read is in
 * flight; truncation and CQ data for every subprotocol.
 */
#include <stdlib.h>

#include "efarm_errno.h"
#include "efarm_pkt.h"
#include "efarm_proto.h"
#include "efarm_proto_v4.h"
#include "efarm_test.h"
#include "proto_common.h"
#include "proto_rig.h"

/* ---- 1. The matrix ------------------------------------------------------------------------- */

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

/*
 * Every subprotocol at its boundaries, receive posted before and after
 * arrival: 0, 1, eager max and +1 (plain and DC), medium max and +1, read
 * min -1 and read min, runting read and long-read (busy runt budget, DC),
 * DC variants of eager, medium and long-CTS; and at packet boundaries, where
 * a byte more takes one packet more: medium of exactly two full packets,
 * long-CTS of exactly the REQ's data and k full CTSDATA.
 */
void matrix_run(struct rig *rig, bool tagged)
{
    struct rig r = *rig;
    uint64_t e, edc, mmax, rmin, med2, med2dc, cts0, ctsk;
    uint64_t extra = tagged ? 0 : 100; /* untagged: receive buffers longer than the message */

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
}

static void matrix(const struct efarm_ep_attr *attr, bool tagged)
{
    struct rig r;

    rig_open(&r, attr, attr);
    rig_handshake(&r);
    matrix_run(&r, tagged);
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
 * message before it has polled that read's completion. The read can complete
 * inside the progress call that posts it (its completion arrives while that
 * call still polls; seen under load on the kernel front end), and then no
 * read is in flight: that try is finished and another made, up to
 * LONGREAD_TRIES.
 */
#define LONGREAD_TRIES 50
EFARM_TEST(proto_longread_while_reading)
{
    struct rig r;
    struct proto_pair *p = &r.p;
    uint64_t len = g_small.read_min;
    uint8_t *bsrc = malloc(len), *adst = malloc(len);
    struct efarm_req bs, ar;
    struct efarm_req *reqs[] = {&bs, &ar};
    struct msg m;
    uint64_t reads0;
    unsigned try;

    rig_open(&r, &g_small, &g_small);
    rig_handshake(&r);
    for (try = 0; try < LONGREAD_TRIES; try++) {
        memset(&bs, 0, sizeof(bs));
        memset(&ar, 0, sizeof(ar));
        memset(adst, 0, len);
        proto_fill(bsrc, len, 5 + try);
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
        if (!ar.done)
            break;
        /* The read completed in the call that posted it: finish this try, make another. */
        proto_pair_wait(p, reqs, 2, WAIT_S);
        EXPECT_RET(ar.status, 0);
        proto_expect_pattern(adst, len, 5 + try);
    }
    EXPECT_TRUE(try < LONGREAD_TRIES);
    if (try > 0)
        fprintf(stderr, "  the read completed in the call that posted it %u times\n", try);
    msg_init(&m, len, len, 0, true, EFARM_PROTO_LONGREAD, 6);
    xfer(&r, &m, true);
    msg_free(&m);
    proto_pair_wait(p, reqs, 2, WAIT_S);
    EXPECT_RET(ar.status, 0);
    proto_expect_pattern(adst, len, 5 + try);
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
