/*
 * Wire conformance, part 7 (see wire_peer.h): ordering by msg_id (section
 * 3.2). Out-of-order and duplicated msg_ids, wraparound at 2^32, the overflow
 * list beyond a small reorder window, and MEDIUM segments of several
 * messages interleaved, with the receives posted before or after.
 */
#include <stdlib.h>
#include <string.h>

#include "efarm_errno.h"
#include "efarm_pkt.h"
#include "efarm_proto.h"
#include "efarm_test.h"
#include "proto_internal.h"
#include "proto_common.h"
#include "wire_peer.h"

/* ---- 7. Ordering from the wire (section 3.2, msg_id) --------------------------------- */

/* Out of order and duplicated msg_ids: delivered once each, in msg_id order. */
EFARM_TEST(wire_ordering_out_of_order_and_duplicates)
{
    static const uint32_t order[] = {2, 0, 1, 5, 3, 4};
    static const unsigned delivered[] = {0, 1, 3, 3, 4, 6}; /* after each arrival */
    uint8_t buf[10][ORD_LEN];
    struct efarm_req req[10];
    unsigned done = 0;
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    wp_connect(&w, FEAT_ALL);
    memset(req, 0, sizeof(req));
    for (unsigned i = 0; i < 10; i++)
        EXPECT_RET(efarm_trecv(g_ep, buf[i], ORD_LEN, 1, 2, 7, &req[i]), 0);
    for (unsigned k = 0; k < 6; k++) {
        efarm_test_context("msg_id %u", order[k]);
        ord_send(&w, order[k]);
        /* Everything up to the first gap is delivered, in order, at once. */
        while (done < 10 && req[done].done)
            done++;
        EXPECT_EQ(done, delivered[k]);
    }
    for (unsigned i = 0; i < 6; i++)
        ord_expect(&req[i], buf[i], i);
    EXPECT_EQ(cnt()->out_of_order, 2);

    efarm_test_context("duplicates");
    ord_send(&w, 3); /* already delivered */
    ord_send(&w, 0);
    EXPECT_EQ(cnt()->stale_ids, 2);
    ord_send(&w, 8); /* ahead, twice */
    ord_send(&w, 8);
    ord_send(&w, 7);
    EXPECT_TRUE(!req[6].done);
    ord_send(&w, 6);
    for (unsigned i = 6; i < 9; i++)
        ord_expect(&req[i], buf[i], i);
    EXPECT_TRUE(!req[9].done); /* the second 8 went nowhere */
    EXPECT_EQ(cnt()->stale_ids, 3);
    ord_send(&w, 9);
    ord_expect(&req[9], buf[9], 9);
    wp_close(&w);
    engine_close();
}

/* msg_id wraps from 2^32 - 1 to 0 as an ordinary step, both ways. */
EFARM_TEST(wire_ordering_msg_id_wraparound)
{
    static const uint32_t order[] = {0xffffffffu, 0xfffffffeu, 1, 0};
    struct efarm_ep_attr attr = {.first_msg_id = 0xfffffffeu};
    uint8_t buf[4][ORD_LEN], data[8] = {0};
    struct efarm_req req[4], sreq = {0};
    struct wp_pkt p;
    struct wp w;

    engine_open(&attr);
    wp_open(&w);
    wp_connect(&w, FEAT_ALL);
    memset(req, 0, sizeof(req));
    for (unsigned i = 0; i < 4; i++)
        EXPECT_RET(efarm_trecv(g_ep, buf[i], ORD_LEN, 1, 2, 7, &req[i]), 0);
    ord_send(&w, order[0]);
    ord_send(&w, order[2]);
    EXPECT_TRUE(!req[0].done);
    ord_send(&w, order[1]);
    EXPECT_TRUE(req[0].done && req[1].done && !req[2].done);
    ord_send(&w, order[3]);
    ord_expect(&req[0], buf[0], 0xfffffffeu);
    ord_expect(&req[1], buf[1], 0xffffffffu);
    ord_expect(&req[2], buf[2], 0);
    ord_expect(&req[3], buf[3], 1);
    ord_send(&w, 0xffffffffu); /* behind, after the wrap */
    EXPECT_EQ(cnt()->stale_ids, 1);

    for (uint32_t k = 0; k < 3; k++) {
        EXPECT_RET(efarm_tsend(g_ep, w.peer, data, sizeof(data), 1, 2, 3, 0, 0, &sreq), 0);
        wp_expect(&w, EFARM_PKT_EAGER_TAGRTM, &p);
        EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), 0xfffffffeu + k);
        wait_req(&sreq);
    }
    wp_close(&w);
    engine_close();
}

/*
 * Far beyond a small reorder window (recvwin 4): everything lands on the
 * overflow list and still comes out in msg_id order, with receives posted
 * before and after the messages arrive.
 */
EFARM_TEST(wire_ordering_overflow_beyond_window)
{
    struct efarm_ep_attr attr = {.recvwin = 4};
    enum { N = 41 };
    uint8_t buf[N][ORD_LEN];
    struct efarm_req req[N];
    struct wp w;

    engine_open(&attr);
    wp_open(&w);
    wp_connect(&w, FEAT_ALL);
    for (unsigned round = 0; round < 2; round++) {
        uint32_t base = round * N;

        efarm_test_context("receives posted %s", round ? "after" : "before");
        memset(req, 0, sizeof(req));
        if (round == 0)
            for (unsigned i = 0; i < N; i++)
                EXPECT_RET(efarm_trecv(g_ep, buf[i], ORD_LEN, 1, 2, 7, &req[i]), 0);
        for (uint32_t id = N - 1; id >= 1; id--)
            ord_send(&w, base + id);
        EXPECT_EQ(cnt()->overflow, (round + 1) * (N - 4));
        EXPECT_TRUE(!req[0].done);
        EXPECT_EQ(g_ep->windows.in_use, 1); /* the peer's window, taken for the waiting packets */
        ord_send(&w, base);
        if (round == 1)
            for (unsigned i = 0; i < N; i++)
                EXPECT_RET(efarm_trecv(g_ep, buf[i], ORD_LEN, 1, 2, 7, &req[i]), 0);
        for (unsigned i = 0; i < N; i++)
            ord_expect(&req[i], buf[i], base + i);
    }
    EXPECT_EQ(cnt()->out_of_order, 2 * (N - 1));
    EXPECT_EQ(cnt()->stale_ids, 0);
    EXPECT_EQ(g_ep->windows.in_use, 0); /* nothing waits: the window was given back */
    wp_close(&w);
    engine_close();
}

/*
 * MEDIUM segments of messages out of order, interleaved with each other and
 * an eager one; with the receives posted first (matched as they come) or
 * after everything arrived (unexpected messages holding their segments).
 */
static void medium_interleaved(bool posted_first)
{
    const uint64_t l0 = 15000, l1 = 20000, l3 = 18000, seg = 8000;
    uint8_t *m0 = malloc(l0), *m1 = malloc(l1), *m3 = malloc(l3), e2[ORD_LEN];
    uint8_t *d[4];
    struct efarm_req req[4];
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    wp_connect(&w, FEAT_ALL);
    proto_fill(m0, l0, 70);
    proto_fill(m1, l1, 71);
    proto_fill(m3, l3, 73);
    ord_payload(e2, 2);
    memset(req, 0, sizeof(req));
    for (unsigned i = 0; i < 4; i++) {
        d[i] = calloc(1, l1);
        if (posted_first)
            EXPECT_RET(efarm_trecv(g_ep, d[i], l1, 1, 2, 7, &req[i]), 0);
    }
    /* Message 1's segments and message 2 wait for message 0 in the reorder window. */
    send_medium(&w, 1, m1, l1, 2 * seg, l1 - 2 * seg);
    send_medium(&w, 1, m1, l1, 0, seg);
    send_eager(&w, EFARM_PKT_EAGER_TAGRTM, 2, tag_of(7), e2, ORD_LEN);
    EXPECT_TRUE(!req[0].done && !req[1].done && !req[2].done);
    /* Message 0's last segment first: all three match, in msg_id order; 2 is complete. */
    send_medium(&w, 0, m0, l0, seg, l0 - seg);
    EXPECT_TRUE(!req[0].done && !req[1].done && req[2].done == posted_first);
    send_medium(&w, 1, m1, l1, seg, seg);
    EXPECT_TRUE(!req[0].done && req[1].done == posted_first);
    send_medium(&w, 0, m0, l0, 0, seg);
    EXPECT_TRUE(req[0].done == posted_first);
    /* A message in progress: later segments go straight to its operation. */
    send_medium(&w, 3, m3, l3, 0, seg);
    EXPECT_TRUE(!req[3].done);
    send_medium(&w, 3, m3, l3, 2 * seg, l3 - 2 * seg);
    send_medium(&w, 3, m3, l3, seg, seg);
    EXPECT_TRUE(req[3].done == posted_first);
    if (!posted_first) {
        EXPECT_EQ(cnt()->unexpected, 4);
        for (unsigned i = 0; i < 4; i++)
            EXPECT_RET(efarm_trecv(g_ep, d[i], l1, 1, 2, 7, &req[i]), 0);
    }
    for (unsigned i = 0; i < 4; i++)
        EXPECT_TRUE(req[i].done);
    EXPECT_EQ(req[0].length, l0);
    EXPECT_MEM_EQ(d[0], m0, l0);
    EXPECT_EQ(req[1].length, l1);
    EXPECT_MEM_EQ(d[1], m1, l1);
    ord_expect(&req[2], d[2], 2);
    EXPECT_EQ(req[3].length, l3);
    EXPECT_MEM_EQ(d[3], m3, l3);
    EXPECT_EQ(cnt()->stale_ids, 0);
    wp_close(&w);
    engine_close();
    for (unsigned i = 0; i < 4; i++)
        free(d[i]);
    free(m0);
    free(m1);
    free(m3);
}

EFARM_TEST(wire_ordering_medium_segments_interleaved)
{
    medium_interleaved(true);
}

EFARM_TEST(wire_ordering_medium_segments_interleaved_unexpected)
{
    medium_interleaved(false);
}

/*
 * Only overflow packets waiting (one beyond a reorder window of 4, so the
 * peer holds no window), then the messages before it arriving in order,
 * receives posted, so the receive fast path takes them: moving past a
 * multiple of the window must still pull the overflow packet in. (The fast
 * path once stepped over it when the peer had no window: a hang.)
 */
EFARM_TEST(wire_ordering_overflow_only_fast_path)
{
    struct efarm_ep_attr attr = {.recvwin = 4};
    enum { N = 7 };
    uint8_t buf[N][ORD_LEN];
    struct efarm_req req[N];
    struct wp w;

    engine_open(&attr);
    wp_open(&w);
    wp_connect(&w, FEAT_ALL);
    memset(req, 0, sizeof(req));
    for (unsigned i = 0; i < N; i++)
        EXPECT_RET(efarm_trecv(g_ep, buf[i], ORD_LEN, 1, 2, 7, &req[i]), 0);
    ord_send(&w, 5);
    EXPECT_EQ(cnt()->overflow, 1);
    EXPECT_EQ(g_ep->windows.in_use, 0);
    for (uint32_t id = 0; id < 5; id++)
        ord_send(&w, id);
    ord_send(&w, 6);
    EXPECT_TRUE(cnt()->eager_fast_rx > 0);
    for (unsigned i = 0; i < N; i++) {
        efarm_test_context("message %u", i);
        ord_expect(&req[i], buf[i], i);
    }
    EXPECT_EQ(g_ep->windows.in_use, 0);
    wp_close(&w);
    engine_close();
}
