/*
 * Wire conformance, parts 4 and 8 (see wire_peer.h): what a hostile or
 * confused peer sends. CTS, CTSDATA, EOR, RECEIPT and READ_NACK with forged
 * or stale ids, data outside the message or the grant (nothing written
 * around the buffer), a long-CTS message clipped to a short receive; packets
 * too short, of unknown types or with impossible flags, lengths or read_iov.
 * Each is dropped and counted, and the endpoint still works.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "efarm_byteorder.h"
#include "efarm_errno.h"
#include "efarm_pkt.h"
#include "efarm_proto.h"
#include "efarm_test.h"
#include "proto_common.h"
#include "wire_peer.h"

/* ---- 4. Forged and stale ids -------------------------------------------------------- */

/* CTS, EOR, RECEIPT, READ_NACK naming no live send of that peer, in that state. */
EFARM_TEST(wire_stale_ids_to_sender)
{
    const uint64_t len = 100000;
    uint8_t *src = malloc(len);
    struct efarm_req a = {0}, b = {0};
    uint64_t off_a, off_b, stale = 0;
    uint32_t sa, sb;
    struct wp_pkt p;
    struct wp w, w2;

    engine_open(NULL);
    wp_open(&w);
    wp_open(&w2);
    wp_connect(&w, FEAT_NO_READ);
    wp_connect(&w2, FEAT_NO_READ);
    proto_fill(src, len, 21);

    EXPECT_RET(efarm_tsend(g_ep, w.peer, src, len, 1, 2, 3, 0, 0, &a), 0);
    wp_expect(&w, EFARM_PKT_LONGCTS_TAGRTM, &p);
    sa = (uint32_t)get(&p, EFARM_PKT_F_SEND_ID);
    off_a = p.pkt.payload_length;
    EXPECT_RET(efarm_tsend(g_ep, w2.peer, src, len, 1, 2, 3, 0, 0, &b), 0);
    wp_expect(&w2, EFARM_PKT_LONGCTS_TAGRTM, &p);
    sb = (uint32_t)get(&p, EFARM_PKT_F_SEND_ID);
    off_b = p.pkt.payload_length;
    EXPECT_TRUE(sa != sb);

    efarm_test_context("forged send_ids");
    send_cts(&w, sa ^ 0x10000u, 1, len); /* right slot, other generation */
    send_cts(&w, sa + 1, 1, len);        /* a free slot */
    send_cts(&w, 0xffffffffu, 1, len);   /* no slot at all */
    send_cts(&w, sb, 1, len);            /* another peer's send */
    stale += 4;
    EXPECT_EQ(cnt()->stale_ids, stale);
    efarm_test_context("replies a long-CTS send does not wait for");
    send_reply(&w, EFARM_PKT_EOR, sa, 1);
    send_reply(&w, EFARM_PKT_READ_NACK, sa, 1);
    send_reply(&w, EFARM_PKT_RECEIPT, sa, 0);
    stale += 3;
    EXPECT_EQ(cnt()->stale_ids, stale);
    wp_expect_none(&w, -1);
    wp_expect_none(&w2, -1);
    EXPECT_TRUE(!a.done && !b.done);

    /* The real grants still work. */
    send_cts(&w, sa, 5, len - off_a);
    take_ctsdata(&w, 5, src, &off_a, len - off_a, true);
    send_cts(&w2, sb, 6, len - off_b);
    take_ctsdata(&w2, 6, src, &off_b, len - off_b, true);
    wait_req(&a);
    wait_req(&b);
    EXPECT_RET(a.status, 0);
    EXPECT_RET(b.status, 0);

    efarm_test_context("ids of finished sends");
    send_cts(&w, sa, 1, len);
    send_reply(&w, EFARM_PKT_EOR, sa, 1);
    send_cts(&w2, sb, 1, len);
    stale += 3;
    EXPECT_EQ(cnt()->stale_ids, stale);
    wp_expect_none(&w, -1);
    wp_expect_none(&w2, -1);

    EXPECT_EQ(cnt()->connid_mismatch + cnt()->unknown_sender + cnt()->decode_errors, 0);
    wp_close(&w2);
    wp_close(&w);
    engine_close();
    free(src);
}

/* A DC send ends at the RECEIPT naming its send_id and msg_id, from its peer, once. */
EFARM_TEST(wire_stale_ids_to_dc_sender)
{
    uint8_t src[100] = {9};
    struct efarm_req dc = {0};
    uint64_t stale = 0;
    uint32_t sdc, mdc;
    struct wp_pkt p;
    struct wp w, w2;

    engine_open(NULL);
    wp_open(&w);
    wp_open(&w2);
    wp_connect(&w, FEAT_NO_READ);
    wp_connect(&w2, FEAT_NO_READ);
    EXPECT_RET(efarm_tsend(g_ep, w.peer, src, 100, 1, 2, 3, EFARM_SEND_DC, 0, &dc), 0);
    wp_expect(&w, EFARM_PKT_DC_EAGER_TAGRTM, &p);
    sdc = (uint32_t)get(&p, EFARM_PKT_F_SEND_ID);
    mdc = (uint32_t)get(&p, EFARM_PKT_F_MSG_ID);
    send_cts(&w, sdc, 1, 1000);
    send_reply(&w, EFARM_PKT_RECEIPT, sdc, mdc + 1);
    send_reply(&w, EFARM_PKT_EOR, sdc, 1);
    send_reply(&w, EFARM_PKT_READ_NACK, sdc, 1);
    send_reply(&w2, EFARM_PKT_RECEIPT, sdc, mdc); /* right ids, wrong peer */
    stale += 5;
    EXPECT_EQ(cnt()->stale_ids, stale);
    pump_for(WP_QUIET_US);
    EXPECT_TRUE(!dc.done);
    send_reply(&w, EFARM_PKT_RECEIPT, sdc, mdc);
    EXPECT_TRUE(dc.done);
    EXPECT_RET(dc.status, 0);
    send_reply(&w, EFARM_PKT_RECEIPT, sdc, mdc); /* again: the send is gone */
    stale++;
    EXPECT_EQ(cnt()->stale_ids, stale);
    EXPECT_EQ(cnt()->connid_mismatch + cnt()->unknown_sender + cnt()->decode_errors, 0);
    wp_close(&w2);
    wp_close(&w);
    engine_close();
}

#define GUARD 4096

static void expect_guards(const uint8_t *mem, uint64_t len)
{
    for (uint64_t i = 0; i < GUARD; i++) {
        if (mem[i] != 0xa5 || mem[GUARD + len + i] != 0xa5)
            efarm_test_fail(__FILE__, __LINE__, "guard byte %s the buffer at distance %llu changed",
                            mem[i] != 0xa5 ? "before" : "after",
                            (unsigned long long)(mem[i] != 0xa5 ? GUARD - i : i + 1));
    }
}

/*
 * CTSDATA naming no live receive, or data outside the message or the current
 * grant: dropped and counted, nothing written inside the buffer or around it.
 */
EFARM_TEST(wire_stale_ids_to_receiver)
{
    const uint64_t len = 100000;
    uint8_t *src = malloc(len), *mem = malloc(GUARD + len + GUARD), junk[WP_MAX_PKT];
    uint8_t *dst = mem + GUARD;
    struct efarm_req rreq = {0}, sreq = {0};
    uint64_t start, grant, room, stale = 0;
    uint32_t recv_id, tx_id;
    struct wp_pkt p;
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    wp_connect(&w, FEAT_NO_READ);
    proto_fill(src, len, 22);
    memset(junk, 0xee, sizeof(junk));
    memset(mem, 0xa5, GUARD + len + GUARD);
    memset(dst, 0, len);
    room = wp_ctsdata_room(&w);

    /* A send of the engine's own, for its (TX) id. */
    EXPECT_RET(efarm_tsend(g_ep, w.peer, src, len, 1, 2, 3, 0, 0, &sreq), 0);
    wp_expect(&w, EFARM_PKT_LONGCTS_TAGRTM, &p);
    tx_id = (uint32_t)get(&p, EFARM_PKT_F_SEND_ID);

    efarm_test_context("the first CTS");
    EXPECT_RET(efarm_trecv(g_ep, dst, len, 1, 2, 1, &rreq), 0);
    start = send_longcts(&w, EFARM_PKT_LONGCTS_TAGRTM, 0, tag_of(1), 0x77, src, len, 1, 0);
    wp_expect(&w, EFARM_PKT_CTS, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x77);
    recv_id = (uint32_t)get(&p, EFARM_PKT_F_RECV_ID);
    grant = get(&p, EFARM_PKT_F_RECV_LENGTH);
    EXPECT_EQ(grant, efarm_ep_caps(g_ep)->max_msg_size - CTSDATA_HDR_LEN - EFARM_OPT_FIELD_LEN);
    EXPECT_TRUE(grant <= room && grant > 200);

    efarm_test_context("recv_ids of nothing");
    send_ctsdata(&w, recv_id ^ 0x10000u, start, junk, 100);
    send_ctsdata(&w, recv_id + 1, start, junk, 100);
    send_ctsdata(&w, 0xffffffffu, start, junk, 100);
    send_ctsdata(&w, tx_id, start, junk, 100); /* a send's id */
    stale += 4;
    EXPECT_EQ(cnt()->stale_ids, stale);
    efarm_test_context("segments outside the message");
    send_ctsdata(&w, recv_id, len, junk, 10);
    send_ctsdata(&w, recv_id, len - 5, junk, 10);
    send_ctsdata(&w, recv_id, 1ull << 63, junk, 10);
    stale += 3;
    EXPECT_EQ(cnt()->stale_ids, stale);

    /* Most of the grant, legitimately: 100 bytes of it are left. */
    send_ctsdata(&w, recv_id, start, src + start, grant - 100);
    efarm_test_context("segments outside what is left of the grant");
    send_ctsdata(&w, recv_id, start + grant - 100, junk, 200); /* longer than the grant */
    send_ctsdata(&w, recv_id, start + grant, junk, 50);        /* past its end */
    send_ctsdata(&w, recv_id, 0, junk, 50);                    /* before its start */
    stale += 3;
    EXPECT_EQ(cnt()->stale_ids, stale);
    efarm_test_context("the rest");
    send_ctsdata(&w, recv_id, start + grant - 100, src + start + grant - 100, 100);
    feed_ctsdata(&w, 0x77, src, start + grant, len, true);
    wait_req(&rreq);
    EXPECT_RET(rreq.status, 0);
    EXPECT_EQ(rreq.length, len);
    EXPECT_MEM_EQ(dst, src, len);
    expect_guards(mem, len);
    send_ctsdata(&w, recv_id, start, junk, 100); /* the receive is over */
    stale++;
    EXPECT_EQ(cnt()->stale_ids, stale);

    /* The endpoint still works. */
    EXPECT_RET(efarm_trecv(g_ep, dst, len, 1, 2, 1, &rreq), 0);
    send_eager(&w, EFARM_PKT_EAGER_TAGRTM, 1, tag_of(1), src, 500);
    EXPECT_TRUE(rreq.done);
    EXPECT_MEM_EQ(dst, src, 500);
    wp_close(&w);
    engine_close();
    free(src);
    free(mem);
}

/* A long-CTS message longer than the receive buffer: clipped to it, nothing written around it. */
EFARM_TEST(wire_longcts_receive_clipped_to_buffer)
{
    const uint64_t len = 100000, short_len = 10000;
    uint8_t *src = malloc(len), *mem = malloc(GUARD + len + GUARD);
    uint8_t *dst = mem + GUARD;
    struct efarm_req rreq = {0};
    uint64_t start;
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    wp_connect(&w, FEAT_NO_READ);
    proto_fill(src, len, 23);
    memset(mem, 0xa5, GUARD + len + GUARD);
    memset(dst, 0, short_len);
    EXPECT_RET(efarm_trecv(g_ep, dst, short_len, 1, 2, 1, &rreq), 0);
    start = send_longcts(&w, EFARM_PKT_LONGCTS_TAGRTM, 0, tag_of(1), 0x78, src, len, 64, 0);
    feed_ctsdata(&w, 0x78, src, start, len, true);
    wait_req(&rreq);
    EXPECT_RET(rreq.status, -EMSGSIZE);
    EXPECT_EQ(rreq.length, short_len);
    EXPECT_EQ(rreq.msg_length, len);
    EXPECT_MEM_EQ(dst, src, short_len);
    for (uint64_t i = short_len; i < len; i++)
        EXPECT_EQ(dst[i], 0xa5);
    expect_guards(mem, len);
    EXPECT_EQ(cnt()->stale_ids, 0);
    EXPECT_EQ(cnt()->truncated, 1);
    wp_close(&w);
    engine_close();
    free(src);
    free(mem);
}

/* ---- 8. Malformed input ---------------------------------------------------------------- */

/* Encode pkt with n bytes of data into buf; returns the packet's length. */
static uint32_t encode_into(const struct efarm_pkt *pkt, const void *data, uint64_t n, uint8_t *buf)
{
    size_t hdr;

    EXPECT_RET(efarm_pkt_encode(pkt, buf, WP_MAX_PKT, &hdr), 0);
    if (n)
        memcpy(buf + hdr, data, n);
    return (uint32_t)(hdr + n);
}

static void send_raw_settle(struct wp *w, const uint8_t *bytes, uint32_t len)
{
    uint64_t before = cnt()->rx_pkts;

    wp_send_bytes(w, bytes, len);
    PUMP_UNTIL(cnt()->rx_pkts > before);
}

/* An engine with a receive posted for message 0, and a connected wire peer. */
static void malformed_begin(struct wp *w, struct efarm_req *rreq, uint8_t *rbuf)
{
    engine_open(NULL);
    wp_open(w);
    wp_connect(w, FEAT_ALL);
    memset(rreq, 0, sizeof(*rreq));
    EXPECT_RET(efarm_trecv(g_ep, rbuf, ORD_LEN, 1, 2, 7, rreq), 0);
}

/* Each of `bad` packets was counted and dropped; nothing moved; message 0 still arrives. */
static void malformed_end(struct wp *w, struct efarm_req *rreq, const uint8_t *rbuf, uint64_t bad)
{
    EXPECT_EQ(cnt()->decode_errors, bad);
    EXPECT_EQ(cnt()->stale_ids + cnt()->connid_mismatch + cnt()->unknown_sender, 0);
    EXPECT_TRUE(!rreq->done);
    wp_expect_none(w, -1);
    efarm_test_context("the endpoint still works");
    ord_send(w, 0);
    ord_expect(rreq, rbuf, 0);
    wp_flush(w);
    wp_close(w);
    engine_close();
}

/* Packets too short, of another version, of no known type, with impossible flags. */
EFARM_TEST(wire_malformed_headers_dropped)
{
    static const uint8_t types[] = {200, EFARM_PKT_RETIRED_RTS, EFARM_PKT_RESERVED_6,
                                    EFARM_PKT_RESERVED_132};
    uint8_t buf[WP_MAX_PKT], data[ORD_LEN], rbuf[ORD_LEN];
    struct efarm_req rreq;
    struct efarm_pkt pkt;
    uint32_t n;
    struct wp w;

    malformed_begin(&w, &rreq, rbuf);
    ord_payload(data, 0);
    efarm_test_context("empty and 2-byte packets");
    send_raw_settle(&w, buf, 0);
    buf[0] = EFARM_PKT_EAGER_TAGRTM;
    buf[1] = 4;
    send_raw_settle(&w, buf, 2);
    efarm_test_context("bad version, unknown, retired and reserved types");
    wp_req(&w, &pkt, EFARM_PKT_EAGER_TAGRTM, 0, tag_of(7));
    n = encode_into(&pkt, data, ORD_LEN, buf);
    buf[1] = 3;
    send_raw_settle(&w, buf, n);
    buf[1] = 4;
    for (unsigned t = 0; t < sizeof(types); t++) {
        buf[0] = types[t];
        send_raw_settle(&w, buf, n);
    }
    buf[0] = EFARM_PKT_EAGER_TAGRTM;
    send_raw_settle(&w, buf, 10); /* shorter than its mandatory header */
    efarm_test_context("bad flags");
    efarm_store_le16(buf + 2, EFARM_REQ_MSG | EFARM_REQ_TAGGED | EFARM_REQ_READ_NACK |
                                  EFARM_PKT_FLAG_CONNID_HDR);
    send_raw_settle(&w, buf, n); /* READ_NACK on an eager REQ */
    w.req_raw_addr = true;
    wp_req(&w, &pkt, EFARM_PKT_EAGER_TAGRTM, 0, tag_of(7));
    w.req_raw_addr = false;
    n = encode_into(&pkt, data, ORD_LEN, buf);
    efarm_store_le16(buf + 2, pkt.flags | EFARM_PKT_FLAG_CONNID_HDR);
    send_raw_settle(&w, buf, n); /* raw address and connid header at once */
    efarm_store_le16(buf + 2, pkt.flags);
    efarm_store_le32(buf + 16, 20);
    send_raw_settle(&w, buf, n); /* raw address shorter than 32 bytes */
    malformed_end(&w, &rreq, rbuf, 11);
}

/* Counts, lengths and offsets that do not fit the packet or the message. */
EFARM_TEST(wire_malformed_lengths_dropped)
{
    static const uint8_t short_hs[] = {EFARM_PKT_HANDSHAKE, 4, 0, 0, 2, 0, 0, 0};
    uint8_t buf[WP_MAX_PKT], data[ORD_LEN], rbuf[ORD_LEN];
    struct efarm_req rreq;
    struct efarm_pkt pkt;
    struct wp w;

    malformed_begin(&w, &rreq, rbuf);
    ord_payload(data, 0);
    send_raw_settle(&w, short_hs, sizeof(short_hs)); /* nextra_p3 below 3 */
    wp_ctrl(&w, &pkt, EFARM_PKT_CTS);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, 1);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_ID, 1);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_LENGTH, 0);
    send_raw_settle(&w, buf, encode_into(&pkt, NULL, 0, buf)); /* a CTS granting nothing */
    wp_req(&w, &pkt, EFARM_PKT_MEDIUM_TAGRTM, 0, tag_of(7));
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, 30);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEG_OFFSET, 20);
    send_raw_settle(&w, buf, encode_into(&pkt, data, 20, buf)); /* past msg_length */
    wp_req(&w, &pkt, EFARM_PKT_LONGREAD_TAGRTM, 0, tag_of(7));
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, 1000);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, 1);
    efarm_pkt_set(&pkt, EFARM_PKT_F_READ_IOV_COUNT, 3);
    send_raw_settle(&w, buf, encode_into(&pkt, data, 24, buf)); /* 3 iovs, room for 1 */
    wp_ctrl(&w, &pkt, EFARM_PKT_CTSDATA);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_ID, 1);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEG_LENGTH, 100);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEG_OFFSET, 0);
    send_raw_settle(&w, buf, encode_into(&pkt, data, 10, buf)); /* seg_length past the data */
    malformed_end(&w, &rreq, rbuf, 5);
}

/*
 * A LONGREAD or RUNTREAD whose read_iov cannot describe the message: the
 * matching receive completes with PROTO_BAD_READ_IOV, and EOR still goes so
 * the sender is not left waiting; posted before or after it arrives.
 */
EFARM_TEST(wire_bad_read_iov)
{
    const uint64_t len = 100000;
    uint8_t *src = malloc(len), *dst = calloc(1, len);
    struct efarm_rma_iov iov[4];
    struct efarm_req rreq = {0};
    struct wp_pkt p;
    uint32_t id = 0;
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    wp_connect(&w, FEAT_ALL);
    proto_fill(src, len, 81);
    for (unsigned i = 0; i < 4; i++)
        iov[i] = (struct efarm_rma_iov){(uintptr_t)src + i * (len / 4), len / 4, 0x42};
    for (unsigned k = 0; k < 8; k++) {
        bool after = k & 1;
        uint32_t send_id = 0x900 + k;
        struct efarm_rma_iov wrap = {UINT64_MAX - 10, len, 0x42};

        efarm_test_context("case %u, receive posted %s", k / 2, after ? "after" : "before");
        memset(&rreq, 0, sizeof(rreq));
        if (!after)
            EXPECT_RET(efarm_trecv(g_ep, dst, len, 1, 2, 3, &rreq), 0);
        switch (k / 2) {
        case 0: /* no read_iov at all */
            send_longread(&w, EFARM_PKT_LONGREAD_TAGRTM, id, tag_of(3), send_id, len, iov, 0);
            break;
        case 1: /* covers one byte less than the message */
            iov[3].len--;
            send_longread(&w, EFARM_PKT_LONGREAD_TAGRTM, id, tag_of(3), send_id, len, iov, 4);
            iov[3].len++;
            break;
        case 2: /* an address range that wraps around */
            send_longread(&w, EFARM_PKT_LONGREAD_TAGRTM, id, tag_of(3), send_id, len, &wrap, 1);
            break;
        default: /* a runting read without read_iov */
            send_runtread(&w, id, tag_of(3), send_id, len, NULL, 500, 0, src, 500);
            break;
        }
        id++;
        if (after) {
            pump_for(WP_QUIET_US);
            EXPECT_TRUE(!rreq.done);
            EXPECT_RET(efarm_trecv(g_ep, dst, len, 1, 2, 3, &rreq), 0);
        }
        wp_expect(&w, EFARM_PKT_EOR, &p);
        EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), send_id);
        EXPECT_TRUE(rreq.done);
        EXPECT_RET(rreq.status, EFARM_E(PROTO_BAD_READ_IOV));
        EXPECT_EQ(cnt()->reads_posted, 0);
    }
    EXPECT_EQ(cnt()->recv_errors, 8);
    wp_expect_none(&w, -1);
    EXPECT_RET(efarm_trecv(g_ep, dst, len, 1, 2, 3, &rreq), 0);
    send_eager(&w, EFARM_PKT_EAGER_TAGRTM, id, tag_of(3), src, 100);
    EXPECT_TRUE(rreq.done);
    EXPECT_RET(rreq.status, 0);
    wp_close(&w);
    engine_close();
    free(src);
    free(dst);
}
