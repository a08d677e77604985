/*
 * Wire conformance, part 5 (see wire_peer.h): the subprotocol flows driven
 * from the wire (sections 3.2, 4.1, 4.5, 4.7), the engine on either side:
 * long-CTS grants and CTSDATA, long-read and runting read with their RDMA
 * reads and EOR, and READ_NACK turning a read into long-CTS, with and
 * without delivery complete.
 */
#include <stdlib.h>
#include <string.h>

#include "efarm_device.h"
#include "efarm_errno.h"
#include "efarm_pkt.h"
#include "efarm_proto.h"
#include "efarm_test.h"
#include "proto_common.h"
#include "wire_peer.h"

/* ---- 5. Subprotocol flows driven from the wire (sections 3.2, 4.1, 4.5, 4.7) ---------- */

/* RDMA-read [raddr, raddr + len) of the engine's memory into dst (registered for it). */
static void wp_read(struct wp *w, void *dst, struct efarm_dev_mr *mr, uint64_t len, uint64_t raddr,
                    uint64_t rkey)
{
    unsigned before = w->reads_done;

    EXPECT_TRUE(rkey <= UINT32_MAX);
    EXPECT_RET(efarm_dev_post_read(w->dev, w->ah, g_eng_qpn, g_eng_connid, dst, (uint32_t)len,
                                   efarm_dev_mr_lkey(mr), raddr, (uint32_t)rkey,
                                   WP_WR_READ | before),
               0);
    PUMP_UNTIL(w->reads_done > before);
    EXPECT_RET(w->read_status, 0);
}

/* The engine's read_iov (one entry, the whole send buffer) in a LONGREAD or RUNTREAD. */
static void expect_read_iov(const struct wp_pkt *p, const uint8_t *src, uint64_t len,
                            struct efarm_rma_iov *iov)
{
    EXPECT_EQ(get(p, EFARM_PKT_F_READ_IOV_COUNT), 1);
    EXPECT_TRUE(p->pkt.payload_length >= sizeof(struct efarm_wire_rma_iov));
    efarm_rma_iov_load(p->pkt.payload, 0, iov);
    EXPECT_EQ(iov->addr, (uintptr_t)src);
    EXPECT_EQ(iov->len, len);
    EXPECT_TRUE(iov->key <= UINT32_MAX);
}

/* The engine as long-CTS sender: CTSDATA exactly within each grant, whatever its size. */
EFARM_TEST(wire_longcts_sender_follows_grants)
{
    const uint64_t len = 200000;
    uint8_t *src = malloc(len);
    struct efarm_req sreq = {0};
    uint64_t per, off, grants[] = {0, 1000, 1, 0, 1ull << 40};
    uint32_t send_id, mtu;
    struct wp_pkt p;
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    wp_connect(&w, FEAT_NO_READ);
    mtu = efarm_ep_caps(g_ep)->max_msg_size;
    per = mtu - CTSDATA_HDR_LEN - EFARM_OPT_FIELD_LEN;
    grants[0] = per;     /* exactly one packet */
    grants[3] = 3 * per; /* three */
    proto_fill(src, len, 51);

    EXPECT_RET(efarm_tsend(g_ep, w.peer, src, len, 1, 2, 3, 0, 0, &sreq), 0);
    wp_expect(&w, EFARM_PKT_LONGCTS_TAGRTM, &p);
    EXPECT_EQ(p.pkt.flags, EFARM_REQ_MSG | EFARM_REQ_TAGGED | EFARM_PKT_FLAG_CONNID_HDR);
    expect_req_opts(&p, false, true);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), 0);
    EXPECT_EQ(get(&p, EFARM_PKT_F_TAG), efarm_tag_pack(1, 2, 3));
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_LENGTH), len);
    send_id = (uint32_t)get(&p, EFARM_PKT_F_SEND_ID);
    off = p.pkt.payload_length;
    EXPECT_EQ(off, mtu - p.pkt.hdr_length);
    EXPECT_MEM_EQ(p.pkt.payload, src, off);
    EXPECT_EQ(get(&p, EFARM_PKT_F_CREDIT_REQUEST), (len - off + per - 1) / per);
    wp_expect_none(&w, EFARM_PKT_CTSDATA); /* nothing before a CTS */

    for (unsigned k = 0; k < sizeof(grants) / sizeof(grants[0]); k++) {
        uint64_t g = grants[k] < len - off ? grants[k] : len - off;

        efarm_test_context("grant %u of %llu bytes at %llu", k, (unsigned long long)grants[k],
                           (unsigned long long)off);
        send_cts(&w, send_id, 0x300 + k, grants[k]);
        take_ctsdata(&w, 0x300 + k, src, &off, g, true);
        if (off == len)
            break;
        wp_expect_none(&w, EFARM_PKT_CTSDATA); /* not a byte beyond the grant */
        EXPECT_TRUE(!sreq.done);
    }
    EXPECT_EQ(off, len);
    wait_req(&sreq);
    EXPECT_RET(sreq.status, 0);
    EXPECT_EQ(sreq.proto, EFARM_PROTO_LONGCTS);
    EXPECT_EQ(cnt()->proto_longcts, 1);
    EXPECT_EQ(cnt()->stale_ids, 0);
    wp_expect_none(&w, -1);
    wp_close(&w);
    engine_close();
    free(src);
}

/* The engine as long-CTS receiver: CTS echoes send_id, grants > 0, honours credit_request. */
EFARM_TEST(wire_longcts_receiver_grants)
{
    const uint64_t len = 300000;
    uint8_t *src = malloc(len), *dst = calloc(1, len);
    struct efarm_req rreq = {0};
    uint64_t per, n0, grant, end, off;
    struct wp_pkt p;
    uint32_t recv_id;
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    wp_connect(&w, FEAT_ALL);
    per = efarm_ep_caps(g_ep)->max_msg_size - CTSDATA_HDR_LEN - EFARM_OPT_FIELD_LEN;
    proto_fill(src, len, 52);

    EXPECT_RET(efarm_trecv(g_ep, dst, len, 1, 2, 3, &rreq), 0);
    n0 = send_longcts(&w, EFARM_PKT_LONGCTS_TAGRTM, 0, tag_of(3), 0x1234, src, len, 4, 0);
    wp_expect(&w, EFARM_PKT_CTS, &p);
    expect_ctrl_connid(&p, true);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x1234);
    grant = get(&p, EFARM_PKT_F_RECV_LENGTH);
    EXPECT_EQ(grant, 4 * per); /* the sender asked for 4 packets */
    recv_id = (uint32_t)get(&p, EFARM_PKT_F_RECV_ID);
    for (off = n0, end = n0 + grant; off < end; off += wp_ctsdata_room(&w))
        send_ctsdata(&w, recv_id, off, src + off,
                     end - off < wp_ctsdata_room(&w) ? end - off : wp_ctsdata_room(&w));
    EXPECT_TRUE(feed_ctsdata(&w, 0x1234, src, end, len, true) >= 2);
    wait_req(&rreq);
    EXPECT_RET(rreq.status, 0);
    EXPECT_EQ(rreq.length, len);
    EXPECT_MEM_EQ(dst, src, len);

    /* DC, credit_request 0: the engine's own window; a RECEIPT once delivered. */
    memset(dst, 0, len);
    EXPECT_RET(efarm_trecv(g_ep, dst, len, 1, 2, 3, &rreq), 0);
    n0 = send_longcts(&w, EFARM_PKT_DC_LONGCTS_TAGRTM, 1, tag_of(3), 0x1235, src, len, 0, 0);
    wp_expect(&w, EFARM_PKT_CTS, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x1235);
    grant = get(&p, EFARM_PKT_F_RECV_LENGTH);
    EXPECT_TRUE(grant > 0 && grant <= len - n0);
    recv_id = (uint32_t)get(&p, EFARM_PKT_F_RECV_ID);
    for (off = n0, end = n0 + grant; off < end; off += wp_ctsdata_room(&w))
        send_ctsdata(&w, recv_id, off, src + off,
                     end - off < wp_ctsdata_room(&w) ? end - off : wp_ctsdata_room(&w));
    feed_ctsdata(&w, 0x1235, src, end, len, true);
    wait_req(&rreq);
    EXPECT_RET(rreq.status, 0);
    EXPECT_MEM_EQ(dst, src, len);
    wp_expect(&w, EFARM_PKT_RECEIPT, &p);
    expect_ctrl_connid(&p, true);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x1235);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), 1);
    wp_expect_none(&w, -1);
    wp_close(&w);
    engine_close();
    free(src);
    free(dst);
}

/* The engine as long-read and runting-read receiver: RDMA reads of the read_iov, then EOR. */
EFARM_TEST(wire_read_receiver)
{
    const uint64_t len = (2u << 20) + 123, first = (1u << 20) + 100, rlen = 1u << 20,
                   runt = 3 * 8000;
    uint8_t *src = malloc(len), *src2 = malloc(len - first), *dst = calloc(1, len);
    struct efarm_dev_mr *mr, *mr2;
    struct efarm_rma_iov iov[2];
    struct efarm_req rreq = {0};
    struct wp_pkt p;
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    wp_connect(&w, FEAT_ALL);
    proto_fill(src, len, 53);
    memcpy(src2, src + first, len - first);
    EXPECT_RET(efarm_dev_mr_reg(w.dev, src, first, true, false, &mr), 0);
    EXPECT_RET(efarm_dev_mr_reg(w.dev, src2, len - first, true, false, &mr2), 0);
    /* Two entries from two registrations: the engine walks the iov. */
    iov[0] = (struct efarm_rma_iov){(uintptr_t)src, first, efarm_dev_mr_rkey(mr)};
    iov[1] = (struct efarm_rma_iov){(uintptr_t)src2, len - first, efarm_dev_mr_rkey(mr2)};

    EXPECT_RET(efarm_trecv(g_ep, dst, len, 1, 2, 3, &rreq), 0);
    send_longread(&w, EFARM_PKT_LONGREAD_TAGRTM, 0, tag_of(3), 0x700, len, iov, 2);
    wp_expect(&w, EFARM_PKT_EOR, &p);
    expect_ctrl_connid(&p, true);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x700);
    EXPECT_TRUE(rreq.done); /* EOR goes once the data is in the buffer */
    EXPECT_RET(rreq.status, 0);
    EXPECT_EQ(rreq.length, len);
    EXPECT_MEM_EQ(dst, src, len);
    EXPECT_TRUE(cnt()->reads_posted >= 2);

    /* Runting read: the runt segments in any order, the rest read. */
    memset(dst, 0, len);
    iov[0].len = rlen;
    EXPECT_RET(efarm_trecv(g_ep, dst, len, 1, 2, 3, &rreq), 0);
    send_runtread(&w, 1, tag_of(3), 0x701, rlen, &iov[0], runt, 8000, src, 8000);
    send_runtread(&w, 1, tag_of(3), 0x701, rlen, &iov[0], runt, 16000, src, 8000);
    wp_expect_none(&w, EFARM_PKT_EOR);
    send_runtread(&w, 1, tag_of(3), 0x701, rlen, &iov[0], runt, 0, src, 8000);
    wp_expect(&w, EFARM_PKT_EOR, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x701);
    EXPECT_TRUE(rreq.done);
    EXPECT_RET(rreq.status, 0);
    EXPECT_EQ(rreq.length, rlen);
    EXPECT_MEM_EQ(dst, src, rlen);
    EXPECT_EQ(cnt()->stale_ids, 0);
    wp_expect_none(&w, -1);
    efarm_dev_mr_dereg(mr);
    efarm_dev_mr_dereg(mr2);
    wp_close(&w);
    engine_close();
    free(src);
    free(src2);
    free(dst);
}

/* The engine as long-read sender: a read_iov the peer can read with; done at EOR only. */
EFARM_TEST(wire_longread_sender)
{
    const uint64_t len = 2u << 20;
    uint8_t *src = malloc(len), *dst = calloc(1, len);
    struct efarm_req sreq = {0};
    struct efarm_rma_iov iov;
    struct efarm_dev_mr *mr;
    struct wp_pkt p;
    uint32_t send_id;
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    wp_connect(&w, EFARM_EXTRA_FEATURE_RDMA_READ | FEAT_NO_READ);
    proto_fill(src, len, 54);
    EXPECT_RET(efarm_dev_mr_reg(w.dev, dst, len, false, false, &mr), 0);

    EXPECT_RET(efarm_tsend(g_ep, w.peer, src, len, 1, 2, 3, 0, 0, &sreq), 0);
    wp_expect(&w, EFARM_PKT_LONGREAD_TAGRTM, &p);
    EXPECT_EQ(p.pkt.flags, EFARM_REQ_MSG | EFARM_REQ_TAGGED | EFARM_PKT_FLAG_CONNID_HDR);
    expect_req_opts(&p, false, true);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), 0);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_LENGTH), len);
    send_id = (uint32_t)get(&p, EFARM_PKT_F_SEND_ID);
    EXPECT_EQ(p.pkt.payload_length, sizeof(struct efarm_wire_rma_iov));
    expect_read_iov(&p, src, len, &iov);
    wp_read(&w, dst, mr, len, iov.addr, iov.key);
    EXPECT_MEM_EQ(dst, src, len);
    pump_for(WP_QUIET_US);
    EXPECT_TRUE(!sreq.done);
    send_reply(&w, EFARM_PKT_EOR, send_id, 0x99);
    EXPECT_TRUE(sreq.done);
    EXPECT_RET(sreq.status, 0);
    EXPECT_EQ(sreq.proto, EFARM_PROTO_LONGREAD);
    EXPECT_EQ(cnt()->proto_longread, 1);
    wp_expect_none(&w, -1);
    efarm_dev_mr_dereg(mr);
    wp_close(&w);
    engine_close();
    free(src);
    free(dst);
}

/*
 * Collect the engine's RUNTREAD packets of one message (any order); returns
 * runt_length and the read_iov, checks every field and the runt data.
 */
static uint64_t take_runt(struct wp *w, const uint8_t *src, uint64_t len, uint32_t *send_id_p,
                          uint32_t *msg_id_p, struct efarm_rma_iov *iov)
{
    uint64_t runt = 0, got = 0;
    unsigned n = 0;

    do {
        struct wp_pkt p;
        const uint8_t *data;
        uint64_t off, dlen;

        wp_expect(w, EFARM_PKT_RUNTREAD_TAGRTM, &p);
        expect_req_opts(&p, false, true);
        expect_read_iov(&p, src, len, iov);
        EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_LENGTH), len);
        if (n++ == 0) {
            *send_id_p = (uint32_t)get(&p, EFARM_PKT_F_SEND_ID);
            *msg_id_p = (uint32_t)get(&p, EFARM_PKT_F_MSG_ID);
            runt = get(&p, EFARM_PKT_F_RUNT_LENGTH);
            EXPECT_TRUE(runt > 0 && runt < len);
        }
        EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), *send_id_p);
        EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), *msg_id_p);
        EXPECT_EQ(get(&p, EFARM_PKT_F_RUNT_LENGTH), runt);
        off = get(&p, EFARM_PKT_F_SEG_OFFSET);
        data = p.pkt.payload + sizeof(struct efarm_wire_rma_iov);
        dlen = p.pkt.payload_length - sizeof(struct efarm_wire_rma_iov);
        EXPECT_TRUE(dlen > 0 && off + dlen <= runt);
        EXPECT_MEM_EQ(data, src + off, dlen);
        got += dlen;
    } while (got < runt);
    EXPECT_EQ(got, runt);
    return runt;
}

/* The engine as runting-read sender: runt packets, then the peer reads the rest; EOR. */
EFARM_TEST(wire_runtread_sender)
{
    const uint64_t len = 2u << 20;
    uint8_t *src = malloc(len), *dst = calloc(1, len);
    struct efarm_req sreq = {0};
    struct efarm_rma_iov iov;
    struct efarm_dev_mr *mr;
    uint32_t send_id, msg_id;
    uint64_t runt;
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    wp_connect(&w, FEAT_ALL);
    proto_fill(src, len, 55);
    EXPECT_RET(efarm_dev_mr_reg(w.dev, dst, len, false, false, &mr), 0);
    EXPECT_RET(efarm_tsend(g_ep, w.peer, src, len, 1, 2, 3, 0, 0, &sreq), 0);
    runt = take_runt(&w, src, len, &send_id, &msg_id, &iov);
    EXPECT_EQ(runt, 307200); /* EFARM_RUNT_SIZE, nothing else in flight to this peer */
    EXPECT_EQ(msg_id, 0);
    wp_read(&w, dst + runt, mr, len - runt, iov.addr + runt, iov.key);
    EXPECT_MEM_EQ(dst + runt, src + runt, len - runt);
    pump_for(WP_QUIET_US);
    EXPECT_TRUE(!sreq.done);
    send_reply(&w, EFARM_PKT_EOR, send_id, 0x98);
    EXPECT_TRUE(sreq.done);
    EXPECT_RET(sreq.status, 0);
    EXPECT_EQ(sreq.proto, EFARM_PROTO_RUNTREAD);
    wp_expect_none(&w, -1);
    efarm_dev_mr_dereg(mr);
    wp_close(&w);
    engine_close();
    free(src);
    free(dst);
}

/* The data-less LONGCTS REQ (flag 0x2000) the engine sends after a READ_NACK. */
static void expect_nack_longcts(struct wp *w, uint32_t msg_id, uint32_t send_id, uint64_t len)
{
    struct wp_pkt p;

    wp_expect(w, EFARM_PKT_LONGCTS_TAGRTM, &p);
    EXPECT_EQ(p.pkt.flags,
              EFARM_REQ_MSG | EFARM_REQ_TAGGED | EFARM_PKT_FLAG_CONNID_HDR | EFARM_REQ_READ_NACK);
    expect_req_opts(&p, false, true);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), msg_id);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), send_id);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_LENGTH), len);
    EXPECT_TRUE(get(&p, EFARM_PKT_F_CREDIT_REQUEST) > 0);
    EXPECT_EQ(p.pkt.payload_length, 0);
}

/* Section 4.7, sender side: READ_NACK turns long-read and runting read into long-CTS. */
EFARM_TEST(wire_read_nack_to_sender)
{
    const uint64_t len = 2u << 20;
    uint8_t *src = malloc(len);
    struct efarm_req sreq = {0};
    struct efarm_rma_iov iov;
    uint32_t send_id, msg_id;
    uint64_t off, runt;
    struct wp_pkt p;
    struct wp w, w2;

    engine_open(NULL);
    wp_open(&w);
    wp_open(&w2);
    wp_connect(&w, EFARM_EXTRA_FEATURE_RDMA_READ | EFARM_EXTRA_FEATURE_READ_NACK | FEAT_NO_READ);
    wp_connect(&w2, FEAT_ALL);
    proto_fill(src, len, 56);

    efarm_test_context("long-read");
    EXPECT_RET(efarm_tsend(g_ep, w.peer, src, 100, 1, 2, 3, 0, 0, &sreq), 0); /* msg_id 0 */
    wait_req(&sreq);
    wp_expect(&w, EFARM_PKT_EAGER_TAGRTM, &p);
    EXPECT_RET(efarm_tsend(g_ep, w.peer, src, len, 1, 2, 3, 0, 0, &sreq), 0);
    wp_expect(&w, EFARM_PKT_LONGREAD_TAGRTM, &p);
    send_id = (uint32_t)get(&p, EFARM_PKT_F_SEND_ID);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), 1);
    send_reply(&w, EFARM_PKT_READ_NACK, send_id, 0x31);
    EXPECT_EQ(cnt()->read_nacks_recv, 1);
    expect_nack_longcts(&w, 1, send_id, len);
    send_reply(&w, EFARM_PKT_READ_NACK, send_id, 0x31); /* a repeat: already long-CTS */
    EXPECT_EQ(cnt()->stale_ids, 1);
    EXPECT_EQ(cnt()->read_nacks_recv, 1);
    wp_expect_none(&w, -1);
    off = 0; /* long-CTS from the first byte */
    send_cts(&w, send_id, 0x32, 100000);
    take_ctsdata(&w, 0x32, src, &off, 100000, true);
    send_cts(&w, send_id, 0x32, len);
    take_ctsdata(&w, 0x32, src, &off, len - 100000, true);
    wait_req(&sreq);
    EXPECT_RET(sreq.status, 0);
    send_reply(&w, EFARM_PKT_READ_NACK, send_id, 0x31); /* the send is over */
    EXPECT_EQ(cnt()->stale_ids, 2);

    efarm_test_context("runting read");
    EXPECT_RET(efarm_tsend(g_ep, w2.peer, src, len, 1, 2, 3, 0, 0, &sreq), 0);
    runt = take_runt(&w2, src, len, &send_id, &msg_id, &iov);
    send_reply(&w2, EFARM_PKT_READ_NACK, send_id, 0x41);
    EXPECT_EQ(cnt()->read_nacks_recv, 2);
    expect_nack_longcts(&w2, msg_id, send_id, len);
    off = runt; /* the CTSDATA stream resumes where the runt stopped */
    send_cts(&w2, send_id, 0x42, len);
    take_ctsdata(&w2, 0x42, src, &off, len - runt, true);
    wait_req(&sreq);
    EXPECT_RET(sreq.status, 0);
    wp_expect_none(&w, -1);
    wp_expect_none(&w2, -1);
    wp_close(&w2);
    wp_close(&w);
    engine_close();
    free(src);
}

/*
 * A long-read REQ from a peer with READ_NACK, to an engine that cannot
 * register the receive buffer: READ_NACK and no read; the data-less LONGCTS
 * REQ that follows gets CTS, and the message arrives by CTSDATA, no EOR.
 */
static void read_nack_longread(struct wp *w, const uint8_t *src, uint8_t *dst, uint64_t len,
                               const struct efarm_rma_iov *iov, struct efarm_req *rreq)
{
    struct wp_pkt p;

    efarm_test_context("long-read");
    EXPECT_RET(efarm_trecv(g_ep, dst, len, 1, 2, 3, rreq), 0);
    send_longread(w, EFARM_PKT_LONGREAD_TAGRTM, 0, tag_of(3), 0x55, len, iov, 1);
    wp_expect(w, EFARM_PKT_READ_NACK, &p);
    expect_ctrl_connid(&p, true);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x55);
    EXPECT_EQ(cnt()->read_nacks_sent, 1);
    EXPECT_EQ(cnt()->reads_posted, 0);
    wp_expect_none(w, EFARM_PKT_EOR);
    EXPECT_TRUE(!rreq->done);
    send_longcts(w, EFARM_PKT_LONGCTS_TAGRTM, 0, tag_of(3), 0x55, src, len, 64,
                 EFARM_REQ_READ_NACK);
    EXPECT_TRUE(feed_ctsdata(w, 0x55, src, 0, len, true) >= 2);
    wait_req(rreq);
    EXPECT_RET(rreq->status, 0);
    EXPECT_EQ(rreq->length, len);
    EXPECT_MEM_EQ(dst, src, len);
    wp_expect_none(w, EFARM_PKT_EOR);
}

/*
 * The same for a runting read of the first 1 MiB of src (iov's length
 * becomes that): READ_NACK only once the whole runt is in, and the CTSDATA
 * stream resumes at the end of the runt.
 */
static void read_nack_runtread(struct wp *w, const uint8_t *src, uint8_t *dst, uint64_t len,
                               struct efarm_rma_iov *iov, struct efarm_req *rreq)
{
    const uint64_t rlen = 1u << 20, seg = 8000, runt = 3 * seg;
    struct wp_pkt p;

    efarm_test_context("runting read: READ_NACK only after the whole runt");
    memset(dst, 0, len);
    iov->len = rlen;
    EXPECT_RET(efarm_trecv(g_ep, dst, len, 1, 2, 3, rreq), 0);
    send_runtread(w, 1, tag_of(3), 0x66, rlen, iov, runt, 0, src, seg);
    send_runtread(w, 1, tag_of(3), 0x66, rlen, iov, runt, 2 * seg, src, seg);
    wp_expect_none(w, EFARM_PKT_READ_NACK);
    send_runtread(w, 1, tag_of(3), 0x66, rlen, iov, runt, seg, src, seg);
    wp_expect(w, EFARM_PKT_READ_NACK, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x66);
    EXPECT_EQ(cnt()->read_nacks_sent, 2);
    send_longcts(w, EFARM_PKT_LONGCTS_TAGRTM, 1, tag_of(3), 0x66, src, rlen, 64,
                 EFARM_REQ_READ_NACK);
    feed_ctsdata(w, 0x66, src, runt, rlen, true); /* the rest, from the end of the runt */
    wait_req(rreq);
    EXPECT_RET(rreq->status, 0);
    EXPECT_EQ(rreq->length, rlen);
    EXPECT_MEM_EQ(dst, src, rlen);
}

/*
 * Section 4.7, receiver side. EFASIM_MAX_MR=2 lets the engine register its
 * two pools (send and receive buffers) and nothing more, so registering a
 * receive buffer for an RDMA read fails (the limit is per device context;
 * each wire peer has its own, and needs two as well). To a peer with
 * READ_NACK the engine answers READ_NACK (after the whole runt), then takes
 * the data-less LONGCTS REQ and grants CTS; to a peer without it, the receive
 * fails and EOR still releases the sender.
 */
EFARM_TEST(wire_read_nack_from_receiver)
{
    const uint64_t len = 2u << 20;
    uint8_t *src = malloc(len), *dst = calloc(1, len);
    struct efarm_rma_iov iov = {0, len, 0x1234};
    struct efarm_req rreq = {0};
    struct wp_pkt p;
    struct wp w, w2, w3;

    setenv("EFASIM_MAX_MR", "2", 1);
    engine_open(NULL);
    wp_open(&w);
    wp_open(&w2);
    wp_connect(&w, FEAT_ALL);
    wp_connect(&w2, FEAT_ALL & ~EFARM_EXTRA_FEATURE_READ_NACK);
    proto_fill(src, len, 57);
    iov.addr = (uintptr_t)src;
    read_nack_longread(&w, src, dst, len, &iov, &rreq);
    read_nack_runtread(&w, src, dst, len, &iov, &rreq);

    efarm_test_context("a peer without READ_NACK");
    EXPECT_RET(efarm_trecv(g_ep, dst, len, 1, 2, 3, &rreq), 0);
    iov.len = len;
    send_longread(&w2, EFARM_PKT_LONGREAD_TAGRTM, 0, tag_of(3), 0x77, len, &iov, 1);
    wp_expect(&w2, EFARM_PKT_EOR, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x77);
    EXPECT_TRUE(rreq.done);
    EXPECT_RET(rreq.status, EFARM_E(PROTO_READ_FAILED));
    EXPECT_EQ(cnt()->read_nacks_sent, 2);

    efarm_test_context("a peer that did not ask for connid");
    wp_open(&w3);
    wp_connect(&w3, FEAT_ALL & ~EFARM_EXTRA_REQUEST_CONNID_HEADER);
    EXPECT_RET(efarm_trecv(g_ep, dst, len, 1, 2, 3, &rreq), 0);
    send_longread(&w3, EFARM_PKT_LONGREAD_TAGRTM, 0, tag_of(3), 0x88, len, &iov, 1);
    wp_expect(&w3, EFARM_PKT_READ_NACK, &p);
    expect_ctrl_connid(&p, false);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x88);
    EXPECT_EQ(cnt()->stale_ids, 0);
    wp_expect_none(&w, -1);
    wp_expect_none(&w2, -1);
    wp_close(&w3);
    wp_close(&w2);
    wp_close(&w);
    engine_close();
    free(src);
    free(dst);
}

/*
 * A read the sender's NIC refuses (its buffer registered without remote
 * read): the receiver's reads fail with a remote access error, and to a
 * sender with READ_NACK it answers READ_NACK once no read is in flight (for
 * a runting read, once the runt is in), not EOR; the sender's long-CTS then
 * delivers it all. To a sender without READ_NACK the receive fails with the
 * device's error and the sender still gets its EOR.
 */
EFARM_TEST(wire_read_refused_by_sender_nic)
{
    const uint64_t len = 2u << 20, rlen = 1u << 20, seg = 8000, runt = 3 * seg;
    uint8_t *src = malloc(len), *dst = calloc(1, len);
    struct efarm_rma_iov iov;
    struct efarm_dev_mr *mr, *mr2;
    struct efarm_req rreq = {0};
    struct wp_pkt p;
    struct wp w, w2;

    engine_open(NULL);
    wp_open(&w);
    wp_open(&w2);
    wp_connect(&w, FEAT_ALL);
    wp_connect(&w2, FEAT_ALL & ~EFARM_EXTRA_FEATURE_READ_NACK);
    proto_fill(src, len, 61);
    EXPECT_RET(efarm_dev_mr_reg(w.dev, src, len, false, false, &mr), 0);
    iov = (struct efarm_rma_iov){(uintptr_t)src, len, efarm_dev_mr_rkey(mr)};

    efarm_test_context("long-read");
    EXPECT_RET(efarm_trecv(g_ep, dst, len, 1, 2, 3, &rreq), 0);
    send_longread(&w, EFARM_PKT_LONGREAD_TAGRTM, 0, tag_of(3), 0x91, len, &iov, 1);
    wp_expect(&w, EFARM_PKT_READ_NACK, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x91);
    EXPECT_TRUE(cnt()->reads_posted >= 1);
    EXPECT_EQ(cnt()->read_nacks_sent, 1);
    EXPECT_TRUE(!rreq.done);
    send_longcts(&w, EFARM_PKT_LONGCTS_TAGRTM, 0, tag_of(3), 0x91, src, len, 64,
                 EFARM_REQ_READ_NACK);
    EXPECT_TRUE(feed_ctsdata(&w, 0x91, src, 0, len, true) >= 2);
    wait_req(&rreq);
    EXPECT_RET(rreq.status, 0);
    EXPECT_EQ(rreq.length, len);
    EXPECT_MEM_EQ(dst, src, len);
    wp_expect_none(&w, EFARM_PKT_EOR);

    efarm_test_context("runting read: READ_NACK once the runt is in");
    memset(dst, 0, len);
    iov.len = rlen;
    EXPECT_RET(efarm_trecv(g_ep, dst, len, 1, 2, 3, &rreq), 0);
    send_runtread(&w, 1, tag_of(3), 0x92, rlen, &iov, runt, 0, src, seg);
    send_runtread(&w, 1, tag_of(3), 0x92, rlen, &iov, runt, seg, src, seg);
    wp_expect_none(&w, EFARM_PKT_READ_NACK);
    send_runtread(&w, 1, tag_of(3), 0x92, rlen, &iov, runt, 2 * seg, src, seg);
    wp_expect(&w, EFARM_PKT_READ_NACK, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x92);
    EXPECT_EQ(cnt()->read_nacks_sent, 2);
    send_longcts(&w, EFARM_PKT_LONGCTS_TAGRTM, 1, tag_of(3), 0x92, src, rlen, 64,
                 EFARM_REQ_READ_NACK);
    feed_ctsdata(&w, 0x92, src, runt, rlen, true);
    wait_req(&rreq);
    EXPECT_RET(rreq.status, 0);
    EXPECT_EQ(rreq.length, rlen);
    EXPECT_MEM_EQ(dst, src, rlen);

    efarm_test_context("a sender without READ_NACK");
    EXPECT_RET(efarm_dev_mr_reg(w2.dev, src, len, false, false, &mr2), 0);
    iov = (struct efarm_rma_iov){(uintptr_t)src, len, efarm_dev_mr_rkey(mr2)};
    EXPECT_RET(efarm_trecv(g_ep, dst, len, 1, 2, 3, &rreq), 0);
    send_longread(&w2, EFARM_PKT_LONGREAD_TAGRTM, 0, tag_of(3), 0x93, len, &iov, 1);
    wp_expect(&w2, EFARM_PKT_EOR, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x93);
    wait_req(&rreq);
    EXPECT_RET(rreq.status, EFARM_E(DEV_REMOTE_ACCESS));
    EXPECT_EQ(cnt()->read_nacks_sent, 2);
    EXPECT_EQ(cnt()->stale_ids, 0);
    wp_expect_none(&w, -1);
    wp_expect_none(&w2, -1);
    efarm_dev_mr_dereg(mr);
    efarm_dev_mr_dereg(mr2);
    wp_close(&w2);
    wp_close(&w);
    engine_close();
    free(src);
    free(dst);
}

/*
 * READ_NACK of a delivery-complete send: the engine's long-read send falls
 * back to DC_LONGCTS (flag 0x2000) and ends at the RECEIPT, as libfabric's
 * does; as a receiver, a DC_LONGCTS REQ after its READ_NACK earns a RECEIPT.
 */
EFARM_TEST(wire_read_nack_with_delivery_complete_sender)
{
    const uint64_t len = 2u << 20;
    uint8_t *src = malloc(len);
    struct efarm_req sreq = {0};
    uint32_t send_id;
    uint64_t off = 0;
    struct wp_pkt p;
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    wp_connect(&w, FEAT_ALL & ~EFARM_EXTRA_FEATURE_RUNT_READ);
    proto_fill(src, len, 58);
    EXPECT_RET(efarm_tsend(g_ep, w.peer, src, len, 1, 2, 3, EFARM_SEND_DC, 0, &sreq), 0);
    wp_expect(&w, EFARM_PKT_LONGREAD_TAGRTM, &p); /* a read delivers: no DC type needed */
    send_id = (uint32_t)get(&p, EFARM_PKT_F_SEND_ID);
    send_reply(&w, EFARM_PKT_READ_NACK, send_id, 0x51);
    wp_expect(&w, EFARM_PKT_DC_LONGCTS_TAGRTM, &p);
    EXPECT_EQ(p.pkt.flags,
              EFARM_REQ_MSG | EFARM_REQ_TAGGED | EFARM_PKT_FLAG_CONNID_HDR | EFARM_REQ_READ_NACK);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), 0);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), send_id);
    EXPECT_EQ(p.pkt.payload_length, 0);
    send_cts(&w, send_id, 0x52, len);
    take_ctsdata(&w, 0x52, src, &off, len, true);
    pump_for(WP_QUIET_US);
    EXPECT_TRUE(!sreq.done);
    send_reply(&w, EFARM_PKT_RECEIPT, send_id, 0);
    EXPECT_TRUE(sreq.done);
    EXPECT_RET(sreq.status, 0);
    wp_expect_none(&w, -1);
    wp_close(&w);
    engine_close();
    free(src);
}

EFARM_TEST(wire_read_nack_with_delivery_complete_receiver)
{
    const uint64_t len = 1u << 20;
    uint8_t *src = malloc(len), *dst = calloc(1, len);
    struct efarm_rma_iov iov = {0, len, 0x1234};
    struct efarm_req rreq = {0};
    struct wp_pkt p;
    struct wp w;

    setenv("EFASIM_MAX_MR", "2", 1); /* see wire_read_nack_from_receiver */
    engine_open(NULL);
    wp_open(&w);
    wp_connect(&w, FEAT_ALL);
    proto_fill(src, len, 59);
    iov.addr = (uintptr_t)src;
    EXPECT_RET(efarm_trecv(g_ep, dst, len, 1, 2, 3, &rreq), 0);
    send_longread(&w, EFARM_PKT_LONGREAD_TAGRTM, 0, tag_of(3), 0x57, len, &iov, 1);
    wp_expect(&w, EFARM_PKT_READ_NACK, &p);
    send_longcts(&w, EFARM_PKT_DC_LONGCTS_TAGRTM, 0, tag_of(3), 0x57, src, len, 64,
                 EFARM_REQ_READ_NACK);
    feed_ctsdata(&w, 0x57, src, 0, len, true);
    wait_req(&rreq);
    EXPECT_RET(rreq.status, 0);
    EXPECT_MEM_EQ(dst, src, len);
    wp_expect(&w, EFARM_PKT_RECEIPT, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x57);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), 0);
    wp_expect_none(&w, -1);
    wp_close(&w);
    engine_close();
    free(src);
    free(dst);
}
