/*
 * Wire conformance, part 1 (see wire_peer.h): the HANDSHAKE (section 2) the
 * engine sends on first contact and the features it advertises; the raw
 * address on REQs until the peer's HANDSHAKE arrives; the connid header and
 * connid words on every packet iff the peer asked for them (or the raw
 * address with constant header length); the order of the CQ-data header.
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "efarm_byteorder.h"
#include "efarm_device.h"
#include "efarm_errno.h"
#include "efarm_pkt.h"
#include "efarm_proto.h"
#include "efarm_test.h"
#include "proto_common.h"
#include "wire_peer.h"

/* ---- 1. Handshake (section 2) -------------------------------------------------------- */

EFARM_TEST(wire_handshake_first_contact)
{
    struct efarm_req sreq = {0};
    uint8_t data[100];
    struct wp_pkt p;
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    EXPECT_RET(efarm_av_insert(g_ep, w.raw, &w.peer), 0);
    proto_fill(data, sizeof(data), 1);

    /* The first REQ to a new peer: raw-address header (40 bytes, size 36), no connid. */
    EXPECT_RET(efarm_tsend(g_ep, w.peer, data, 100, 1, 2, 3, 0, 0, &sreq), 0);
    wp_expect(&w, EFARM_PKT_EAGER_TAGRTM, &p);
    EXPECT_EQ(p.pkt.flags, EFARM_REQ_MSG | EFARM_REQ_TAGGED | EFARM_REQ_OPT_RAW_ADDR_HDR);
    expect_req_opts(&p, true, false);
    EXPECT_EQ(p.pkt.hdr_length, 16 + 40);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), 0);
    EXPECT_EQ(get(&p, EFARM_PKT_F_TAG), efarm_tag_pack(1, 2, 3));
    EXPECT_EQ(p.pkt.payload_length, 100);
    EXPECT_MEM_EQ(p.pkt.payload, data, 100);
    wait_req(&sreq);
    EXPECT_RET(sreq.status, 0);
    EXPECT_EQ(sreq.proto, EFARM_PROTO_EAGER);

    /* Nothing came from the wire peer yet: no HANDSHAKE. */
    wp_expect_none(&w, EFARM_PKT_HANDSHAKE);
    EXPECT_EQ(cnt()->handshakes_sent, 0);

    /* Its first packet, a REQ no receive waits for: progress alone answers it. */
    send_eager(&w, EFARM_PKT_EAGER_TAGRTM, 0, tag_of(5), data, 10);
    wp_expect(&w, EFARM_PKT_HANDSHAKE, &p);
    expect_engine_handshake(&p, engine_features(efarm_ep_caps(g_ep)->rdma_read, true));
    EXPECT_EQ(cnt()->handshakes_sent, 1);
    EXPECT_EQ(cnt()->unexpected, 1);

    /* One HANDSHAKE per peer, however many packets follow. */
    send_eager(&w, EFARM_PKT_EAGER_TAGRTM, 1, tag_of(5), data, 10);
    wp_expect_none(&w, EFARM_PKT_HANDSHAKE);
    EXPECT_EQ(cnt()->handshakes_sent, 1);

    /* Until the wire peer's HANDSHAKE arrives, REQs keep the raw address. */
    EXPECT_RET(efarm_tsend(g_ep, w.peer, data, 50, 1, 2, 3, 0, 0, &sreq), 0);
    wp_expect(&w, EFARM_PKT_EAGER_TAGRTM, &p);
    expect_req_opts(&p, true, false);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), 1);
    wait_req(&sreq);

    /* Afterwards: no raw address; the connid header, which the wire peer asks for. */
    wp_send_handshake(&w, FEAT_ALL);
    PUMP_UNTIL(cnt()->handshakes_recv == 1);
    EXPECT_RET(efarm_tsend(g_ep, w.peer, data, 60, 1, 2, 3, 0, 0, &sreq), 0);
    wp_expect(&w, EFARM_PKT_EAGER_TAGRTM, &p);
    EXPECT_EQ(p.pkt.flags, EFARM_REQ_MSG | EFARM_REQ_TAGGED | EFARM_PKT_FLAG_CONNID_HDR);
    expect_req_opts(&p, false, true);
    EXPECT_EQ(p.pkt.hdr_length, 16 + 4);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), 2);
    EXPECT_MEM_EQ(p.pkt.payload, data, 60);
    wait_req(&sreq);
    EXPECT_RET(efarm_send(g_ep, w.peer, data, 70, 0, 0, &sreq), 0);
    wp_expect(&w, EFARM_PKT_EAGER_MSGRTM, &p);
    EXPECT_EQ(p.pkt.flags, EFARM_REQ_MSG | EFARM_PKT_FLAG_CONNID_HDR);
    EXPECT_EQ(p.pkt.hdr_length, 8 + 4);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), 3);
    wait_req(&sreq);
    EXPECT_EQ(cnt()->handshakes_sent, 1);
    wp_close(&w);
    engine_close();
}

/* A HANDSHAKE as the first packet is answered too, and features follow the device. */
EFARM_TEST(wire_handshake_without_device_rdma_read)
{
    struct wp_pkt p;
    struct wp w;

    setenv("EFASIM_RDMA_READ", "0", 1);
    engine_open(NULL);
    EXPECT_TRUE(!efarm_ep_caps(g_ep)->rdma_read);
    wp_open(&w);
    EXPECT_RET(efarm_av_insert(g_ep, w.raw, &w.peer), 0);
    wp_send_handshake(&w, FEAT_ALL);
    wp_expect(&w, EFARM_PKT_HANDSHAKE, &p);
    expect_engine_handshake(&p, EFARM_EXTRA_FEATURE_DELIVERY_COMPLETE |
                                    EFARM_EXTRA_REQUEST_CONNID_HEADER);
    wp_close(&w);
    engine_close();
}

EFARM_TEST(wire_handshake_attributes_narrow_features)
{
    struct efarm_ep_attr attr = {.no_rdma_read = true, .no_connid_header = true};
    struct wp_pkt p;
    struct wp w;

    engine_open(&attr);
    EXPECT_TRUE(efarm_ep_caps(g_ep)->rdma_read);
    wp_open(&w);
    EXPECT_RET(efarm_av_insert(g_ep, w.raw, &w.peer), 0);
    wp_send_handshake(&w, FEAT_ALL);
    wp_expect(&w, EFARM_PKT_HANDSHAKE, &p);
    expect_engine_handshake(&p, EFARM_EXTRA_FEATURE_DELIVERY_COMPLETE);
    wp_close(&w);
    engine_close();

    attr.no_dc = true;
    engine_open(&attr);
    wp_open(&w);
    EXPECT_RET(efarm_av_insert(g_ep, w.raw, &w.peer), 0);
    wp_send_handshake(&w, FEAT_ALL);
    wp_expect(&w, EFARM_PKT_HANDSHAKE, &p);
    expect_engine_handshake(&p, 0);
    wp_close(&w);
    engine_close();
}

/*
 * extra_info has nextra_p3 - 3 words: none means no feature at all (the raw
 * address still goes, the handshake being done; no connid header, no DC);
 * words beyond the first name features the engine does not know.
 */
EFARM_TEST(wire_handshake_extra_info_words)
{
    static const uint64_t many[3] = {FEAT_ALL, ~0ull, 0x5555};
    struct efarm_req req = {0};
    uint8_t data[64] = {0};
    struct wp_pkt p;
    struct wp w, w2;

    engine_open(NULL);
    wp_open(&w);
    wp_open(&w2);
    EXPECT_RET(efarm_av_insert(g_ep, w.raw, &w.peer), 0);
    EXPECT_RET(efarm_av_insert(g_ep, w2.raw, &w2.peer), 0);
    wp_send_handshake_words(&w, NULL, 0);
    wp_send_handshake_words(&w2, many, 3);
    wp_expect(&w, EFARM_PKT_HANDSHAKE, &p);
    wp_expect(&w2, EFARM_PKT_HANDSHAKE, &p);
    PUMP_UNTIL(cnt()->handshakes_recv == 2);

    EXPECT_RET(efarm_tsend(g_ep, w.peer, data, 64, 1, 2, 3, 0, 0, &req), 0);
    wp_expect(&w, EFARM_PKT_EAGER_TAGRTM, &p);
    expect_req_opts(&p, false, false);
    wait_req(&req);
    EXPECT_RET(efarm_tsend(g_ep, w.peer, data, 64, 1, 2, 3, EFARM_SEND_DC, 0, &req), 0);
    EXPECT_TRUE(req.done);
    EXPECT_RET(req.status, EFARM_E(PROTO_NO_DC));

    EXPECT_RET(efarm_tsend(g_ep, w2.peer, data, 64, 1, 2, 3, EFARM_SEND_DC, 0, &req), 0);
    wp_expect(&w2, EFARM_PKT_DC_EAGER_TAGRTM, &p);
    expect_req_opts(&p, false, true);
    send_reply(&w2, EFARM_PKT_RECEIPT, (uint32_t)get(&p, EFARM_PKT_F_SEND_ID), 0);
    EXPECT_TRUE(req.done);
    EXPECT_RET(req.status, 0);
    wp_expect_none(&w, -1);
    wp_expect_none(&w2, -1);
    wp_close(&w2);
    wp_close(&w);
    engine_close();
}

/* The engine's REQs of every kind it sends: eager, medium segments, long-CTS and its CTSDATA. */
static void connid_on_sender_packets(struct wp *w, const uint8_t *src, bool raw, bool want)
{
    const uint64_t med = 20000, lcts = 100000;
    struct efarm_req sreq = {0};
    uint64_t off = 0;
    struct wp_pkt p;
    uint32_t send_id;

    EXPECT_RET(efarm_tsend(g_ep, w->peer, src, 100, 1, 2, 3, 0, 0, &sreq), 0);
    wp_expect(w, EFARM_PKT_EAGER_TAGRTM, &p);
    expect_req_opts(&p, raw, want && !raw);
    wait_req(&sreq);

    /* Medium: segments as full as the MTU allows, at their offsets (in any order). */
    EXPECT_RET(efarm_tsend(g_ep, w->peer, src, med, 1, 2, 3, 0, 0, &sreq), 0);
    while (off < med) {
        uint64_t o, room;

        wp_expect(w, EFARM_PKT_MEDIUM_TAGRTM, &p);
        expect_req_opts(&p, raw, want && !raw);
        EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), 1);
        EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_LENGTH), med);
        o = get(&p, EFARM_PKT_F_SEG_OFFSET);
        room = w->mtu - p.pkt.hdr_length;
        EXPECT_TRUE(o % room == 0 && o + p.pkt.payload_length <= med);
        EXPECT_TRUE(p.pkt.payload_length == room || o + p.pkt.payload_length == med);
        EXPECT_MEM_EQ(p.pkt.payload, src + o, p.pkt.payload_length);
        off += p.pkt.payload_length;
    }
    EXPECT_EQ(off, med);
    wait_req(&sreq);

    EXPECT_RET(efarm_tsend(g_ep, w->peer, src, lcts, 1, 2, 3, 0, 0, &sreq), 0);
    wp_expect(w, EFARM_PKT_LONGCTS_TAGRTM, &p);
    expect_req_opts(&p, raw, want && !raw);
    off = p.pkt.payload_length;
    send_id = (uint32_t)get(&p, EFARM_PKT_F_SEND_ID);
    send_cts(w, send_id, 77, lcts - off);
    take_ctsdata(w, 77, src, &off, lcts - off, want);
    wait_req(&sreq);
    EXPECT_RET(sreq.status, 0);
}

/* The engine's replies as a receiver: CTS (long-CTS), RECEIPT (DC), EOR (long-read). */
static void connid_on_receiver_replies(struct wp *w, const uint8_t *src, uint8_t *dst, bool want)
{
    const uint64_t rlen = 30000, rdlen = 50000;
    struct efarm_req rreq = {0};
    struct efarm_dev_mr *mr;
    struct efarm_rma_iov iov;
    struct efarm_pkt pkt;
    struct wp_pkt p;
    uint64_t n;

    EXPECT_RET(efarm_trecv(g_ep, dst, rdlen, 1, 2, 3, &rreq), 0);
    n = send_longcts(w, EFARM_PKT_LONGCTS_TAGRTM, 0, tag_of(3), 0x4242, src, rlen, 64, 0);
    feed_ctsdata(w, 0x4242, src, n, rlen, want);
    wait_req(&rreq);
    EXPECT_RET(rreq.status, 0);
    EXPECT_MEM_EQ(dst, src, rlen);

    EXPECT_RET(efarm_trecv(g_ep, dst, rdlen, 1, 2, 3, &rreq), 0);
    wp_req(w, &pkt, EFARM_PKT_DC_EAGER_TAGRTM, 1, tag_of(3));
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, 0x5151);
    wp_send_settle(w, &pkt, NULL, 0, src, 500);
    wait_req(&rreq);
    wp_expect(w, EFARM_PKT_RECEIPT, &p);
    expect_ctrl_connid(&p, want);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x5151);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), 1);

    EXPECT_RET(efarm_dev_mr_reg(w->dev, (void *)src, rdlen, true, false, &mr), 0);
    iov = (struct efarm_rma_iov){(uintptr_t)src, rdlen, efarm_dev_mr_rkey(mr)};
    EXPECT_RET(efarm_trecv(g_ep, dst, rdlen, 1, 2, 3, &rreq), 0);
    send_longread(w, EFARM_PKT_LONGREAD_TAGRTM, 2, tag_of(3), 0x6161, rdlen, &iov, 1);
    wp_expect(w, EFARM_PKT_EOR, &p);
    expect_ctrl_connid(&p, want);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x6161);
    wait_req(&rreq);
    EXPECT_RET(rreq.status, 0);
    EXPECT_MEM_EQ(dst, src, rdlen);
    efarm_dev_mr_dereg(mr);
}

/*
 * After the handshake: REQs (eager, medium, long-CTS) carry the connid header
 * iff the peer requested it (or, with constant header length, the raw
 * address and no connid header), and CTS, CTSDATA, EOR and RECEIPT carry
 * connid in their multiuse word / option iff requested.
 */
static void connid_everywhere(uint64_t peer_features)
{
    bool want = peer_features & EFARM_EXTRA_REQUEST_CONNID_HEADER;
    bool raw = peer_features & EFARM_EXTRA_REQUEST_CONSTANT_HEADER_LENGTH;
    uint8_t *src = malloc(100000), *dst = calloc(1, 100000);
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    wp_connect(&w, peer_features);
    proto_fill(src, 100000, 7);
    connid_on_sender_packets(&w, src, raw, want);
    connid_on_receiver_replies(&w, src, dst, want);
    wp_expect_none(&w, -1);
    wp_close(&w);
    engine_close();
    free(src);
    free(dst);
}

EFARM_TEST(wire_connid_on_every_packet_when_requested)
{
    connid_everywhere(FEAT_ALL);
}

EFARM_TEST(wire_no_connid_when_not_requested)
{
    connid_everywhere(FEAT_ALL & ~EFARM_EXTRA_REQUEST_CONNID_HEADER);
}

/* Section 4.3: a peer that asks for constant header length gets the raw address on every REQ. */
EFARM_TEST(wire_constant_header_length_keeps_raw_address)
{
    connid_everywhere(FEAT_ALL | EFARM_EXTRA_REQUEST_CONSTANT_HEADER_LENGTH);
}

/*
 * Section 3.1 and addenda: the CQ-data header follows the raw-address header
 * and precedes the connid header; the engine writes it that way and reads it
 * from the wire peer's REQs.
 */
EFARM_TEST(wire_cq_data_header_order)
{
    const uint64_t cq = 0x1122334455667788ull, len = 100000;
    uint8_t *src = malloc(len), *dst = calloc(1, len);
    struct efarm_req sreq = {0}, rreq = {0};
    struct efarm_pkt pkt;
    struct wp_pkt p;
    uint64_t n;
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    proto_fill(src, len, 12);
    EXPECT_RET(efarm_av_insert(g_ep, w.raw, &w.peer), 0);
    EXPECT_RET(efarm_tsend(g_ep, w.peer, src, 64, 1, 2, 3, EFARM_SEND_CQ_DATA, cq, &sreq), 0);
    wp_expect(&w, EFARM_PKT_EAGER_TAGRTM, &p);
    expect_req_opts(&p, true, false);
    EXPECT_TRUE(p.pkt.flags & EFARM_REQ_OPT_CQ_DATA_HDR);
    EXPECT_EQ(get(&p, EFARM_PKT_F_CQ_DATA), cq);
    EXPECT_EQ(efarm_load_le64(p.data + 16 + RAW_ADDR_HDR_LEN), cq);
    EXPECT_EQ(p.pkt.hdr_length, 16 + RAW_ADDR_HDR_LEN + 8);
    wait_req(&sreq);

    w.req_raw_addr = false;
    wp_send_handshake(&w, FEAT_ALL);
    wp_expect(&w, EFARM_PKT_HANDSHAKE, &p);
    w.send_connid = true;
    EXPECT_RET(efarm_send(g_ep, w.peer, src, 64, EFARM_SEND_CQ_DATA, cq, &sreq), 0);
    wp_expect(&w, EFARM_PKT_EAGER_MSGRTM, &p);
    expect_req_opts(&p, false, true);
    EXPECT_EQ(efarm_load_le64(p.data + 8), cq);
    EXPECT_EQ(efarm_load_le32(p.data + 16), g_eng_connid);
    EXPECT_EQ(p.pkt.hdr_length, 8 + 8 + 4);
    wait_req(&sreq);

    /* From the wire peer: eager and long-CTS with CQ data. */
    EXPECT_RET(efarm_trecv(g_ep, dst, len, 1, 2, 3, &rreq), 0);
    wp_req(&w, &pkt, EFARM_PKT_EAGER_TAGRTM, 0, tag_of(3));
    pkt.flags |= EFARM_REQ_OPT_CQ_DATA_HDR;
    efarm_pkt_set(&pkt, EFARM_PKT_F_CQ_DATA, cq + 1);
    wp_send_settle(&w, &pkt, NULL, 0, src, 77);
    EXPECT_TRUE(rreq.done && rreq.has_cq_data);
    EXPECT_EQ(rreq.cq_data, cq + 1);
    EXPECT_EQ(rreq.length, 77);
    EXPECT_RET(efarm_trecv(g_ep, dst, len, 1, 2, 3, &rreq), 0);
    wp_req(&w, &pkt, EFARM_PKT_LONGCTS_TAGRTM, 1, tag_of(3));
    pkt.flags |= EFARM_REQ_OPT_CQ_DATA_HDR;
    efarm_pkt_set(&pkt, EFARM_PKT_F_CQ_DATA, cq + 2);
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, len);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, 0x33);
    efarm_pkt_set(&pkt, EFARM_PKT_F_CREDIT_REQUEST, 16);
    n = w.mtu - (32 + 8 + 4);
    wp_send_settle(&w, &pkt, NULL, 0, src, n);
    feed_ctsdata(&w, 0x33, src, n, len, true);
    wait_req(&rreq);
    EXPECT_TRUE(rreq.has_cq_data);
    EXPECT_EQ(rreq.cq_data, cq + 2);
    EXPECT_MEM_EQ(dst, src, len);
    wp_expect_none(&w, -1);
    wp_close(&w);
    engine_close();
    free(src);
    free(dst);
}

/*
 * Extra feature 8 follows the QP: on a device with RDMA write and unsolicited
 * write receive efarm creates its QP so and advertises the bit; with RDMA write
 * alone it does not.
 */
EFARM_TEST(wire_handshake_unsolicited_write_recv)
{
    const uint64_t rdma = EFARM_EXTRA_FEATURE_DELIVERY_COMPLETE | EFARM_EXTRA_FEATURE_RDMA_READ |
                          EFARM_EXTRA_FEATURE_RUNT_READ | EFARM_EXTRA_FEATURE_READ_NACK |
                          EFARM_EXTRA_REQUEST_CONNID_HEADER | EFARM_EXTRA_FEATURE_RDMA_WRITE;

    for (int unsolicited = 0; unsolicited < 2; unsolicited++) {
        struct wp_pkt p;
        struct wp w;
        pid_t pid;
        int status;

        /* efasim reads its knobs once per process: each setting in a child of its own. */
        pid = fork();
        EXPECT_TRUE(pid >= 0);
        if (pid == 0) {
            setenv("EFASIM_RDMA_WRITE", "1", 1);
            setenv("EFASIM_UNSOLICITED_WRITE_RECV", unsolicited ? "1" : "0", 1);
            engine_open(NULL);
            if (!efarm_ep_caps(g_ep)->rdma_write)
                _exit(77); /* no RDMA write through this rdma-core: nothing to see */
            EXPECT_EQ(efarm_ep_caps(g_ep)->unsolicited_write_recv, unsolicited);
            wp_open(&w);
            EXPECT_RET(efarm_av_insert(g_ep, w.raw, &w.peer), 0);
            wp_send_handshake(&w, FEAT_ALL);
            wp_expect(&w, EFARM_PKT_HANDSHAKE, &p);
            expect_engine_handshake(
                &p, rdma | (unsolicited ? EFARM_EXTRA_FEATURE_UNSOLICITED_WRITE_RECV : 0));
            wp_close(&w);
            engine_close();
            _exit(0);
        }
        EXPECT_EQ(waitpid(pid, &status, 0), pid);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
            efarm_test_skip("the device offers no RDMA write here");
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
}
