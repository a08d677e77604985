/*
 * Wire conformance: a peer that follows libfabric 2.6's baseline promotion
 * (its efa_rdm_protocol_v4.md, "Baseline promotion of extra features and
 * requests"). Such a peer no longer waits for our HANDSHAKE before it sends
 * delivery-complete REQs, puts the connid header on every packet once it has
 * our HANDSHAKE whatever we asked for, and may send READ_NACK without
 * checking our features; it still sends its own HANDSHAKE only in answer to
 * our first packet, so the engine may see all of this before it has that
 * peer's HANDSHAKE. The engine serves all of it and answers each as it would
 * a peer it knows.
 */
#include <stdlib.h>
#include <string.h>

#include "efarm_errno.h"
#include "efarm_pkt.h"
#include "efarm_proto.h"
#include "efarm_rma.h"
#include "efarm_test.h"
#include "proto_common.h"
#include "wire_peer.h"

/* One DC_EAGER_RTW of n bytes of data into iov, with send_id. */
static void send_dc_rtw(struct wp *w, const struct efarm_rma_iov *iov, uint32_t send_id,
                        const uint8_t *data, uint64_t n)
{
    uint8_t wire[sizeof(struct efarm_wire_rma_iov)];
    struct efarm_pkt pkt;

    wp_req(w, &pkt, EFARM_PKT_DC_EAGER_RTW, 0, 0);
    efarm_rma_iov_store(wire, 0, iov);
    pkt.rma_iov = wire;
    efarm_pkt_set(&pkt, EFARM_PKT_F_RMA_IOV_COUNT, 1);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, send_id);
    wp_send_settle(w, &pkt, NULL, 0, data, n);
}

/*
 * DC requests from a sender the engine never heard of (raw-address header):
 * served and answered by RECEIPT, with our HANDSHAKE. Then, holding our
 * HANDSHAKE but never sending its own, connid headers on DC writes and a DC
 * atomic, and a READ_NACK naming no send of ours (counted stale, nothing
 * else). The engine with and without asking for the connid header.
 */
static void baseline_peer(bool engine_asks_connid)
{
    struct efarm_ep_attr attr = {.no_connid_header = !engine_asks_connid};
    uint8_t data[512], buf[512], *mem = calloc(1, 4096);
    struct efarm_req treq = {0};
    struct efarm_region *reg;
    struct efarm_rma_iov iov;
    struct efarm_pkt pkt;
    struct wp_pkt p;
    uint64_t stale;
    int64_t one = 1;
    struct wp w;

    engine_open(&attr);
    wp_open(&w);
    EXPECT_RET(efarm_expose(g_ep, mem, 4096, EFARM_EXPOSE_READ | EFARM_EXPOSE_WRITE, &reg), 0);
    proto_fill(data, sizeof(data), 71);

    efarm_test_context("a DC message before any HANDSHAKE");
    EXPECT_RET(efarm_trecv(g_ep, buf, sizeof(buf), 1, 2, 5, &treq), 0);
    wp_req(&w, &pkt, EFARM_PKT_DC_EAGER_TAGRTM, 0, tag_of(5));
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, 0x21);
    wp_send_settle(&w, &pkt, NULL, 0, data, 300);
    wait_req(&treq);
    EXPECT_RET(treq.status, 0);
    EXPECT_EQ(treq.length, 300);
    EXPECT_MEM_EQ(buf, data, 300);
    wp_expect(&w, EFARM_PKT_HANDSHAKE, &p);
    wp_expect(&w, EFARM_PKT_RECEIPT, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x21);
    expect_ctrl_connid(&p, false); /* its HANDSHAKE has not said it wants one */

    efarm_test_context("a DC write before any HANDSHAKE");
    iov = (struct efarm_rma_iov){(uint64_t)(uintptr_t)mem + 100, 200, efarm_region_key(reg)};
    send_dc_rtw(&w, &iov, 0x22, data, 200);
    wp_expect(&w, EFARM_PKT_RECEIPT, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x22);
    EXPECT_MEM_EQ(mem + 100, data, 200);

    efarm_test_context("connid headers, holding our HANDSHAKE, never sending its own");
    w.req_raw_addr = false;
    w.send_connid = true;
    iov.addr += 1000;
    send_dc_rtw(&w, &iov, 0x23, data + 1, 200);
    wp_expect(&w, EFARM_PKT_RECEIPT, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x23);
    EXPECT_MEM_EQ(mem + 1100, data + 1, 200);
    {
        uint8_t wire[sizeof(struct efarm_wire_rma_iov)];
        struct efarm_rma_iov aiov = {(uint64_t)(uintptr_t)mem + 2048, 8, efarm_region_key(reg)};

        memset(mem + 2048, 0, 8);
        wp_req(&w, &pkt, EFARM_PKT_DC_WRITE_RTA, 1, 0);
        efarm_rma_iov_store(wire, 0, &aiov);
        pkt.rma_iov = wire;
        efarm_pkt_set(&pkt, EFARM_PKT_F_RMA_IOV_COUNT, 1);
        efarm_pkt_set(&pkt, EFARM_PKT_F_ATOMIC_DATATYPE, EFARM_DT_INT64);
        efarm_pkt_set(&pkt, EFARM_PKT_F_ATOMIC_OP, EFARM_AOP_SUM);
        efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, 0x24);
        wp_send_settle(&w, &pkt, NULL, 0, &one, sizeof(one));
        wp_expect(&w, EFARM_PKT_RECEIPT, &p);
        EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x24);
        EXPECT_EQ(*(int64_t *)(mem + 2048), 1);
    }

    efarm_test_context("a READ_NACK naming no send of ours");
    stale = cnt()->stale_ids;
    wp_ctrl(&w, &pkt, EFARM_PKT_READ_NACK);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, 0x999);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_ID, 7);
    wp_send_settle(&w, &pkt, NULL, 0, NULL, 0);
    pump_for(20000);
    EXPECT_EQ(cnt()->stale_ids, stale + 1);

    EXPECT_EQ(cnt()->handshakes_recv, 0);
    EXPECT_EQ(cnt()->handshakes_sent, 1);
    EXPECT_EQ(cnt()->rma_refused, 0);
    EXPECT_EQ(cnt()->unknown_sender, 0);
    EXPECT_EQ(cnt()->decode_errors, 0);
    wp_expect_none(&w, -1);
    efarm_unexpose(g_ep, reg);
    wp_close(&w);
    engine_close();
    free(mem);
}

EFARM_TEST(wire_baseline_peer_before_its_handshake)
{
    baseline_peer(true);
}

EFARM_TEST(wire_baseline_peer_connid_not_asked_for)
{
    baseline_peer(false);
}
