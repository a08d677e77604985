/*
 * The engine suite, parts 9-11 (see proto_rig.h): the endpoint's memory.
 * Registration failures (the sender falls back to long-CTS, the receiver
 * answers READ_NACK), the pinned sizes of the hot structures, and
 * allocation-failure walks over efarm_ep_open.
 */
#include <errno.h>
#include <stdlib.h>

#include "efarm_device.h"
#include "efarm_errno.h"
#include "efarm_mr_cache.h"
#include "efarm_pool.h"
#include "efarm_proto.h"
#include "efarm_proto_v4.h"
#include "efarm_test.h"
#include "proto_common.h"
#include "proto_rig.h"

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
 * contact (208 bytes, its list of operations included), the reorder window a peer holds while
 * packets wait (a pointer per slot), an operation, the send and stored-packet descriptors, and what
 * one unexpected message costs besides its packets (its record, 88 bytes with the CQ data a probe
 * reports, and its matcher entry with the queues it may need, 312).
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
        EXPECT_EQ(s.peer, 40);
        EXPECT_EQ(s.peer_state, 208);
        EXPECT_EQ(s.window, 8 * recvwins[i]);
        EXPECT_EQ(s.op, 296); /* the two machineries' fields share a union (issue 41) */
        EXPECT_EQ(s.tx_pkt, 56);
        EXPECT_EQ(s.rx_pkt, 56);
        EXPECT_EQ(s.unexp, 408); /* its arrival stamp (issue 39) */
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
