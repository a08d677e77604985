/*
 * Wire conformance, part 6 (see wire_peer.h): feature negotiation (sections
 * 2.1, 4.1, 4.2). A peer without RDMA read gets long-CTS; a DC send to a peer
 * without delivery complete fails and sends nothing; a DC send waits for the
 * peer's HANDSHAKE behind the EAGER_RTW trigger; DC medium and long-CTS end
 * at the RECEIPT, which the engine sends only after the last segment.
 */
#include <stdlib.h>

#include "efarm_byteorder.h"
#include "efarm_errno.h"
#include "efarm_pkt.h"
#include "efarm_proto.h"
#include "efarm_test.h"
#include "proto_common.h"
#include "wire_peer.h"

/* ---- 6. Feature negotiation (sections 2.1, 4.1, 4.2) --------------------------------- */

/* A peer without RDMA read gets long-CTS, however long the message. */
EFARM_TEST(wire_no_rdma_read_means_longcts)
{
    const uint64_t len = 4u << 20;
    uint8_t *src = malloc(len);
    struct efarm_req sreq = {0};
    uint32_t send_id;
    struct wp_pkt p;
    uint64_t off;
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    wp_connect(&w, FEAT_NO_READ | EFARM_EXTRA_FEATURE_RUNT_READ | EFARM_EXTRA_FEATURE_READ_NACK);
    proto_fill(src, len, 61);
    EXPECT_RET(efarm_tsend(g_ep, w.peer, src, len, 1, 2, 3, 0, 0, &sreq), 0);
    wp_expect(&w, EFARM_PKT_LONGCTS_TAGRTM, &p);
    send_id = (uint32_t)get(&p, EFARM_PKT_F_SEND_ID);
    off = p.pkt.payload_length;
    while (off < len) {
        uint64_t g = len - off < (1u << 20) ? len - off : 1u << 20;

        send_cts(&w, send_id, 0x600, 1u << 20);
        take_ctsdata(&w, 0x600, src, &off, g, true);
    }
    wait_req(&sreq);
    EXPECT_RET(sreq.status, 0);
    EXPECT_EQ(sreq.proto, EFARM_PROTO_LONGCTS);
    EXPECT_EQ(cnt()->proto_longread + cnt()->proto_runtread, 0);
    EXPECT_EQ(cnt()->tx_by_type[EFARM_PKT_LONGREAD_TAGRTM] +
                  cnt()->tx_by_type[EFARM_PKT_RUNTREAD_TAGRTM],
              0);
    wp_expect_none(&w, -1);
    wp_close(&w);
    engine_close();
    free(src);
}

/*
 * The HANDSHAKE's device version is the device's PCI id (vendor_part_id, 0xefa2 on
 * efasim), and RDMA read is used only with a peer on the same side of the first
 * platform's line (0xEFA0 only with 0xEFA0), as libfabric decides it: a 0xEFA0 peer
 * advertising RDMA read gets long-CTS, a 0xEFA1 one a read protocol.
 */
EFARM_TEST(wire_read_only_with_a_compatible_platform)
{
    static const uint32_t versions[] = {0xefa0, 0xefa1};
    const uint64_t len = 2u << 20;
    uint8_t *src = malloc(len);

    proto_fill(src, len, 63);
    for (unsigned i = 0; i < 2; i++) {
        struct efarm_req sreq = {0};
        struct efarm_counters c0;
        struct wp_pkt p;
        struct wp w;

        efarm_test_context("peer device version %#x", versions[i]);
        engine_open(NULL);
        EXPECT_EQ(efarm_ep_caps(g_ep)->device_version, 0xefa2); /* efasim's vendor_part_id */
        wp_open(&w);
        w.device_version = versions[i];
        c0 = *cnt();
        wp_connect(&w, engine_features(true, true));
        EXPECT_RET(efarm_tsend(g_ep, w.peer, src, len, 1, 2, 3, 0, 0, &sreq), 0);
        wp_expect(&w, -1, &p);
        if (versions[i] == 0xefa0) {
            EXPECT_EQ(p.pkt.type, EFARM_PKT_LONGCTS_TAGRTM);
            EXPECT_EQ(cnt()->read_platform_mismatch - c0.read_platform_mismatch, 1);
        } else {
            EXPECT_TRUE(p.pkt.type == EFARM_PKT_LONGREAD_TAGRTM ||
                        p.pkt.type == EFARM_PKT_RUNTREAD_TAGRTM);
            EXPECT_EQ(cnt()->read_platform_mismatch - c0.read_platform_mismatch, 0);
        }
        wp_close(&w);
        engine_close();
    }
    free(src);
}

/*
 * A peer without delivery complete: a DC send fails with PROTO_NO_DC and
 * sends nothing, whether the peer's HANDSHAKE was already in or the send had
 * to wait for it; a send queued behind it takes the msg_id it did not use.
 */
EFARM_TEST(wire_dc_refused_without_delivery_complete)
{
    struct efarm_req dc = {0}, later = {0};
    uint8_t data[100] = {1, 2, 3};
    struct wp_pkt p;
    uint64_t tx;
    struct wp w, w2;

    engine_open(NULL);
    wp_open(&w);
    wp_open(&w2);
    wp_connect(&w, EFARM_EXTRA_REQUEST_CONNID_HEADER);
    tx = cnt()->tx_pkts;
    EXPECT_RET(efarm_tsend(g_ep, w.peer, data, 100, 1, 2, 3, EFARM_SEND_DC, 0, &dc), 0);
    pump_for(WP_QUIET_US);
    EXPECT_TRUE(dc.done);
    EXPECT_RET(dc.status, EFARM_E(PROTO_NO_DC));
    EXPECT_EQ(cnt()->tx_pkts, tx);
    EXPECT_EQ(cnt()->send_errors, 1);
    wp_expect_none(&w, -1);

    /* Before the HANDSHAKE: a trigger, then the refusal when it comes. */
    EXPECT_RET(efarm_av_insert(g_ep, w2.raw, &w2.peer), 0);
    EXPECT_RET(efarm_tsend(g_ep, w2.peer, data, 100, 1, 2, 3, EFARM_SEND_DC, 0, &dc), 0);
    EXPECT_RET(efarm_tsend(g_ep, w2.peer, data, 50, 1, 2, 3, 0, 0, &later), 0);
    wp_expect(&w2, EFARM_PKT_EAGER_RTW, &p);
    wp_expect_none(&w2, EFARM_PKT_EAGER_TAGRTM);
    EXPECT_TRUE(!dc.done && !later.done);
    wp_send_handshake(&w2, EFARM_EXTRA_REQUEST_CONNID_HEADER);
    wp_expect(&w2, EFARM_PKT_HANDSHAKE, &p);
    EXPECT_TRUE(dc.done);
    EXPECT_RET(dc.status, EFARM_E(PROTO_NO_DC));
    wp_expect(&w2, EFARM_PKT_EAGER_TAGRTM, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), 0);
    EXPECT_EQ(p.pkt.payload_length, 50);
    wait_req(&later);
    EXPECT_RET(later.status, 0);
    wp_expect_none(&w2, -1);
    wp_close(&w2);
    wp_close(&w);
    engine_close();
}

/*
 * A DC send to a peer that never spoke: the 0-byte EAGER_RTW trigger (no
 * rma_iov, raw-address header), nothing else until the peer's HANDSHAKE; then
 * DC_EAGER with send_id, complete only at its RECEIPT; the sends queued
 * behind it keep their order.
 */
EFARM_TEST(wire_dc_send_waits_for_handshake)
{
    struct efarm_req dc = {0}, s1 = {0}, s2 = {0};
    uint8_t data[300];
    unsigned seen = 0;
    uint32_t send_id;
    struct wp_pkt p;
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    proto_fill(data, sizeof(data), 62);
    EXPECT_RET(efarm_av_insert(g_ep, w.raw, &w.peer), 0);
    EXPECT_RET(efarm_tsend(g_ep, w.peer, data, 100, 1, 2, 3, EFARM_SEND_DC, 0, &dc), 0);
    EXPECT_RET(efarm_tsend(g_ep, w.peer, data + 1, 200, 1, 2, 3, 0, 0, &s1), 0);
    EXPECT_RET(efarm_tsend(g_ep, w.peer, data + 2, 250, 1, 2, 3, 0, 0, &s2), 0);
    wp_expect(&w, EFARM_PKT_EAGER_RTW, &p);
    EXPECT_EQ(p.pkt.flags, EFARM_REQ_RMA | EFARM_REQ_OPT_RAW_ADDR_HDR);
    EXPECT_EQ(get(&p, EFARM_PKT_F_RMA_IOV_COUNT), 0);
    expect_req_opts(&p, true, false);
    EXPECT_EQ(p.len, 8 + 40);
    EXPECT_EQ(cnt()->handshake_triggers, 1);
    wp_expect_none(&w, -1);
    EXPECT_TRUE(!dc.done && !s1.done && !s2.done);

    wp_send_handshake(&w, FEAT_ALL);
    wp_expect(&w, EFARM_PKT_HANDSHAKE, &p);
    wp_expect(&w, EFARM_PKT_DC_EAGER_TAGRTM, &p);
    EXPECT_EQ(p.pkt.flags, EFARM_REQ_MSG | EFARM_REQ_TAGGED | EFARM_PKT_FLAG_CONNID_HDR);
    expect_req_opts(&p, false, true);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), 0);
    EXPECT_EQ(get(&p, EFARM_PKT_F_TAG), efarm_tag_pack(1, 2, 3));
    EXPECT_EQ(p.pkt.payload_length, 100);
    EXPECT_MEM_EQ(p.pkt.payload, data, 100);
    EXPECT_EQ(p.pkt.hdr_length, 24 + 4);
    EXPECT_EQ(efarm_load_le32(p.data + 12), 0); /* padding */
    send_id = (uint32_t)get(&p, EFARM_PKT_F_SEND_ID);
    for (unsigned k = 0; k < 2; k++) { /* msg_ids 1 and 2, whatever order SRD gives */
        uint64_t id;

        wp_expect(&w, EFARM_PKT_EAGER_TAGRTM, &p);
        id = get(&p, EFARM_PKT_F_MSG_ID);
        EXPECT_TRUE((id == 1 || id == 2) && !(seen & (1u << id)));
        seen |= 1u << id;
        EXPECT_EQ(p.pkt.payload_length, id == 1 ? 200 : 250);
        EXPECT_MEM_EQ(p.pkt.payload, data + id, p.pkt.payload_length);
    }
    wait_req(&s1);
    wait_req(&s2);
    pump_for(WP_QUIET_US);
    EXPECT_TRUE(!dc.done);
    send_reply(&w, EFARM_PKT_RECEIPT, send_id, 0);
    EXPECT_TRUE(dc.done);
    EXPECT_RET(dc.status, 0);
    EXPECT_EQ(cnt()->proto_dc, 1);
    EXPECT_EQ(cnt()->handshake_triggers, 1);
    wp_expect_none(&w, -1);
    wp_close(&w);
    engine_close();
}

/* DC medium and DC long-CTS from the engine: send_id in every REQ, done only at RECEIPT. */
EFARM_TEST(wire_dc_medium_and_longcts_sender)
{
    const uint64_t med = 20000, len = 100000;
    uint8_t *src = malloc(len);
    struct efarm_req sreq = {0};
    uint64_t off = 0;
    uint32_t send_id;
    struct wp_pkt p;
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    wp_connect(&w, FEAT_ALL);
    proto_fill(src, len, 63);
    EXPECT_RET(efarm_tsend(g_ep, w.peer, src, med, 1, 2, 3, EFARM_SEND_DC, 0, &sreq), 0);
    wp_expect(&w, EFARM_PKT_DC_MEDIUM_TAGRTM, &p);
    send_id = (uint32_t)get(&p, EFARM_PKT_F_SEND_ID);
    do {
        expect_req_opts(&p, false, true);
        EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), send_id);
        EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), 0);
        EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_LENGTH), med);
        EXPECT_EQ(efarm_load_le32(p.data + 12), 0); /* padding */
        EXPECT_MEM_EQ(p.pkt.payload, src + get(&p, EFARM_PKT_F_SEG_OFFSET), p.pkt.payload_length);
        off += p.pkt.payload_length;
        if (off < med)
            wp_expect(&w, EFARM_PKT_DC_MEDIUM_TAGRTM, &p);
    } while (off < med);
    EXPECT_EQ(off, med);
    pump_for(WP_QUIET_US);
    EXPECT_TRUE(!sreq.done);
    send_reply(&w, EFARM_PKT_RECEIPT, send_id, 0);
    EXPECT_TRUE(sreq.done);
    EXPECT_RET(sreq.status, 0);

    EXPECT_RET(efarm_tsend(g_ep, w.peer, src, len, 1, 2, 3, EFARM_SEND_DC, 0, &sreq), 0);
    wp_expect(&w, EFARM_PKT_DC_LONGCTS_TAGRTM, &p);
    expect_req_opts(&p, false, true);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), 1);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_LENGTH), len);
    send_id = (uint32_t)get(&p, EFARM_PKT_F_SEND_ID);
    off = p.pkt.payload_length;
    EXPECT_MEM_EQ(p.pkt.payload, src, off);
    send_cts(&w, send_id, 0x71, len);
    take_ctsdata(&w, 0x71, src, &off, len - off, true);
    pump_for(WP_QUIET_US);
    EXPECT_TRUE(!sreq.done);
    send_reply(&w, EFARM_PKT_RECEIPT, send_id, 1);
    EXPECT_TRUE(sreq.done);
    EXPECT_RET(sreq.status, 0);
    EXPECT_EQ(cnt()->proto_dc, 2);
    wp_expect_none(&w, -1);
    wp_close(&w);
    engine_close();
    free(src);
}

/* A DC medium message from the wire peer: the RECEIPT only once every segment is in. */
EFARM_TEST(wire_dc_medium_receiver_receipt_after_last_segment)
{
    const uint64_t len = 20000, seg = 8000;
    uint8_t *src = malloc(len), *dst = calloc(1, len);
    struct efarm_req rreq = {0};
    struct efarm_pkt pkt;
    struct wp_pkt p;
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    wp_connect(&w, FEAT_ALL);
    proto_fill(src, len, 64);
    EXPECT_RET(efarm_trecv(g_ep, dst, len, 1, 2, 3, &rreq), 0);
    for (uint64_t off = len; off > 0;) { /* last segment first */
        uint64_t start = off > seg ? off - (off % seg ? off % seg : seg) : 0;

        wp_req(&w, &pkt, EFARM_PKT_DC_MEDIUM_TAGRTM, 0, tag_of(3));
        efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, 0xdc);
        efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, len);
        efarm_pkt_set(&pkt, EFARM_PKT_F_SEG_OFFSET, start);
        wp_send_settle(&w, &pkt, NULL, 0, src + start, off - start);
        off = start;
        if (off > 0) {
            wp_expect_none(&w, EFARM_PKT_RECEIPT);
            EXPECT_TRUE(!rreq.done);
        }
    }
    wp_expect(&w, EFARM_PKT_RECEIPT, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0xdc);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), 0);
    EXPECT_TRUE(rreq.done);
    EXPECT_RET(rreq.status, 0);
    EXPECT_MEM_EQ(dst, src, len);
    wp_expect_none(&w, -1);
    wp_close(&w);
    engine_close();
    free(src);
    free(dst);
}
