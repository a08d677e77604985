/* The wire peer of the engine's wire-conformance tests (see wire_peer.h). */
#include "wire_peer.h"

#include <stdlib.h>
#include <string.h>

#include "efarm_byteorder.h"
#include "efarm_errno.h"

#define WP_RX_BUFS 256
#define WP_MAX     4 /* wire peers open at once */

/* The engine under test, its address, and the wire peers that are open. */
struct efarm_ep *g_ep;
uint8_t g_eng_raw[EFARM_RAW_ADDR_LEN];
uint16_t g_eng_qpn;
uint32_t g_eng_connid;
static struct wp *g_wps[WP_MAX];

void engine_open(const struct efarm_ep_attr *attr)
{
    proto_use_efasim();
    EXPECT_RET(efarm_ep_open(attr, &g_ep), 0);
    efarm_ep_addr(g_ep, g_eng_raw);
    g_eng_qpn = efarm_load_le16(g_eng_raw + offsetof(struct efarm_wire_raw_addr, qpn));
    g_eng_connid = efarm_load_le32(g_eng_raw + offsetof(struct efarm_wire_raw_addr, connid));
}

static void wp_poll(struct wp *w)
{
    struct efarm_dev_cqe c[32];
    int n = efarm_dev_poll(w->dev, c, 32);

    EXPECT_TRUE(n >= 0);
    for (int i = 0; i < n; i++) {
        switch (c[i].op) {
        case EFARM_DEV_OP_RECV:
            EXPECT_RET(c[i].status, 0);
            EXPECT_TRUE(w->nq < WP_QUEUE_MAX);
            w->q[w->nq].data = malloc(c[i].len ? c[i].len : 1);
            EXPECT_TRUE(w->q[w->nq].data != NULL);
            memcpy(w->q[w->nq].data, c[i].data, c[i].len);
            w->q[w->nq++].len = c[i].len;
            efarm_dev_rx_release(w->dev, c[i].rx_id);
            break;
        default:
            if (c[i].wr_id & WP_WR_READ) { /* routed by wr_id: EFA reports reads as sends */
                w->reads_done++;
                if (c[i].status && !w->read_status)
                    w->read_status = c[i].status;
                break;
            }
            EXPECT_TRUE(c[i].wr_id < WP_TX_SLOTS && w->slot_busy[c[i].wr_id]);
            w->slot_busy[c[i].wr_id] = false;
            w->tx_inflight--;
            if (c[i].status && !w->tx_status)
                w->tx_status = c[i].status;
            break;
        }
    }
}

/* Progress the engine once (if this process has it) and poll every wire peer once. */
void pump(void)
{
    if (g_ep != NULL)
        EXPECT_TRUE(efarm_ep_progress(g_ep) >= 0);
    for (unsigned i = 0; i < WP_MAX; i++)
        if (g_wps[i])
            wp_poll(g_wps[i]);
}

void pump_for(unsigned us)
{
    double end = proto_now_s() + us / 1e6;

    while (proto_now_s() < end)
        pump();
}

void wait_req(struct efarm_req *req)
{
    PUMP_UNTIL(req->done);
}

void wp_open(struct wp *w)
{
    struct efarm_dev_ep_attr attr = {.rx_buffers = WP_RX_BUFS, .rnr_retry = 7};
    unsigned i;

    memset(w, 0, sizeof(*w));
    EXPECT_RET(efarm_dev_ep_open(NULL, &attr, &w->dev), 0);
    efarm_dev_ep_raw_addr(w->dev, w->raw);
    w->qpn = efarm_load_le16(w->raw + offsetof(struct efarm_wire_raw_addr, qpn));
    w->connid = efarm_dev_ep_connid(w->dev);
    w->mtu = efarm_dev_ep_caps(w->dev)->max_msg_size;
    EXPECT_TRUE(w->mtu <= WP_MAX_PKT);
    EXPECT_RET(efarm_dev_ah_get(w->dev, g_eng_raw, &w->ah), 0);
    w->tx = calloc(WP_TX_SLOTS, w->mtu);
    EXPECT_TRUE(w->tx != NULL);
    EXPECT_RET(
        efarm_dev_mr_reg(w->dev, w->tx, (size_t)WP_TX_SLOTS * w->mtu, false, false, &w->tx_mr), 0);
    w->req_raw_addr = true;
    w->peer = EFARM_PEER_NONE;
    for (i = 0; i < WP_MAX && g_wps[i]; i++)
        ;
    EXPECT_TRUE(i < WP_MAX);
    g_wps[i] = w;
}

void wp_close(struct wp *w)
{
    for (unsigned i = 0; i < WP_MAX; i++)
        if (g_wps[i] == w)
            g_wps[i] = NULL;
    for (unsigned i = 0; i < w->nq; i++)
        free(w->q[i].data);
    efarm_dev_mr_dereg(w->tx_mr);
    efarm_dev_ep_close(w->dev);
    free(w->tx);
}

/* Post `len` bytes as one packet to the engine. */
void wp_send_bytes(struct wp *w, const void *bytes, uint32_t len)
{
    struct efarm_dev_send s = {.ah = w->ah, .qpn = g_eng_qpn, .qkey = g_eng_connid, .nseg = 1};
    unsigned slot = 0;

    EXPECT_TRUE(len <= w->mtu);
    PUMP_UNTIL(w->tx_inflight < WP_TX_SLOTS);
    while (w->slot_busy[slot])
        slot++;
    memcpy(w->tx + (size_t)slot * w->mtu, bytes, len);
    s.wr_id = slot;
    s.seg[0].addr = w->tx + (size_t)slot * w->mtu;
    s.seg[0].len = len;
    s.seg[0].lkey = efarm_dev_mr_lkey(w->tx_mr);
    w->slot_busy[slot] = true;
    w->tx_inflight++;
    EXPECT_EQ(efarm_dev_post_send(w->dev, &s, 1), 1);
}

/* Encode `pkt`, append `pre` (a read_iov) and `data`, and send it. */
static void wp_send(struct wp *w, const struct efarm_pkt *pkt, const void *pre, uint32_t pre_len,
                    const void *data, uint64_t n)
{
    static uint8_t buf[WP_MAX_PKT];
    size_t hdr;

    EXPECT_RET(efarm_pkt_encode(pkt, buf, sizeof(buf), &hdr), 0);
    EXPECT_TRUE(hdr + pre_len + n <= w->mtu);
    if (pre_len)
        memcpy(buf + hdr, pre, pre_len);
    if (n)
        memcpy(buf + hdr + pre_len, data, n);
    wp_send_bytes(w, buf, (uint32_t)(hdr + pre_len + n));
}

/*
 * Send, then pump until the engine has received (and handled) the packet. In a
 * process without the engine (a forked wire peer) just send.
 */
void wp_send_settle(struct wp *w, const struct efarm_pkt *pkt, const void *pre, uint32_t pre_len,
                    const void *data, uint64_t n)
{
    uint64_t before = g_ep ? cnt()->rx_pkts : 0;

    wp_send(w, pkt, pre, pre_len, data, n);
    if (g_ep != NULL)
        PUMP_UNTIL(cnt()->rx_pkts > before);
}

void wp_flush(struct wp *w)
{
    PUMP_UNTIL(w->tx_inflight == 0);
    EXPECT_RET(w->tx_status, 0);
}

static int wp_find(const struct wp *w, int type)
{
    for (unsigned i = 0; i < w->nq; i++)
        if (type < 0 || (w->q[i].len > 0 && w->q[i].data[0] == type))
            return (int)i;
    return -1;
}

/* Take the first received packet of `type` (-1: any), waiting for it; it must decode. */
void wp_expect(struct wp *w, int type, struct wp_pkt *out)
{
    int i;

    PUMP_UNTIL((i = wp_find(w, type)) >= 0);
    EXPECT_TRUE(w->q[i].len <= WP_MAX_PKT);
    out->len = w->q[i].len;
    memcpy(out->data, w->q[i].data, out->len);
    free(w->q[i].data);
    memmove(&w->q[i], &w->q[i + 1], (w->nq - (unsigned)i - 1) * sizeof(w->q[0]));
    w->nq--;
    EXPECT_RET(efarm_pkt_decode(out->data, out->len, &out->pkt), 0);
    EXPECT_EQ(out->pkt.version, EFARM_PROTO_VERSION);
}

/* Pump a while; nothing of `type` (-1: anything) may have arrived. */
void wp_expect_none(struct wp *w, int type)
{
    int i;

    pump_for(WP_QUIET_US);
    i = wp_find(w, type);
    if (i >= 0)
        efarm_test_fail(__FILE__, __LINE__, "unexpected packet of type %u (%s), %u bytes",
                        w->q[i].data[0], efarm_pkt_type_info(w->q[i].data[0])->name, w->q[i].len);
}

/* ---- Packets the wire peer builds ---------------------------------------------------- */

static bool type_tagged(uint8_t type)
{
    return efarm_pkt_type_info(type)->traits & EFARM_PKT_T_TAGGED;
}

/* A REQ header with our optional headers: raw address before the handshake, else connid. */
void wp_req(struct wp *w, struct efarm_pkt *pkt, uint8_t type, uint32_t msg_id, uint64_t tag)
{
    efarm_pkt_init(pkt, type);
    pkt->flags = EFARM_REQ_MSG | (type_tagged(type) ? EFARM_REQ_TAGGED : 0);
    efarm_pkt_set(pkt, EFARM_PKT_F_MSG_ID, msg_id);
    if (type_tagged(type))
        efarm_pkt_set(pkt, EFARM_PKT_F_TAG, tag);
    if (w->req_raw_addr) {
        pkt->flags |= EFARM_REQ_OPT_RAW_ADDR_HDR;
        memcpy(pkt->raw_addr.gid, w->raw, EFARM_GID_LEN);
        pkt->raw_addr.qpn = w->qpn;
        pkt->raw_addr.connid = w->connid;
        pkt->raw_addr_size = EFARM_REQ_OPT_RAW_ADDR_SIZE_FIELD;
    } else if (w->send_connid) {
        pkt->flags |= EFARM_PKT_FLAG_CONNID_HDR;
        efarm_pkt_set(pkt, EFARM_PKT_F_CONNID, w->connid);
    }
}

/* A non-REQ packet with our connid when the engine asked for it. */
void wp_ctrl(struct wp *w, struct efarm_pkt *pkt, uint8_t type)
{
    efarm_pkt_init(pkt, type);
    if (w->send_connid) {
        pkt->flags |= EFARM_PKT_FLAG_CONNID_HDR;
        efarm_pkt_set(pkt, EFARM_PKT_F_CONNID, w->connid);
    }
}

/* A HANDSHAKE as libfabric sends it: connid and host_id, `n` extra_info words. */
void wp_send_handshake_words(struct wp *w, const uint64_t *words, uint32_t n)
{
    uint8_t extra[8 * 8];
    struct efarm_pkt pkt;

    EXPECT_TRUE(n <= 8);
    for (uint32_t i = 0; i < n; i++)
        efarm_store_le64(extra + 8 * i, words[i]);
    efarm_pkt_init(&pkt, EFARM_PKT_HANDSHAKE);
    pkt.flags = EFARM_PKT_FLAG_CONNID_HDR | EFARM_HANDSHAKE_HOST_ID_HDR;
    if (w->device_version) {
        pkt.flags |= EFARM_HANDSHAKE_DEVICE_VERSION_HDR;
        efarm_pkt_set(&pkt, EFARM_PKT_F_DEVICE_VERSION, w->device_version);
    }
    efarm_pkt_set(&pkt, EFARM_PKT_F_NEXTRA_P3, n + 3);
    pkt.extra_info = extra;
    efarm_pkt_set(&pkt, EFARM_PKT_F_CONNID, w->connid);
    efarm_pkt_set(&pkt, EFARM_PKT_F_HOST_ID, 0x1234567890abcdefull);
    wp_send(w, &pkt, NULL, 0, NULL, 0);
}

void wp_send_handshake(struct wp *w, uint64_t extra_info)
{
    wp_send_handshake_words(w, &extra_info, 1);
}

void send_cts(struct wp *w, uint32_t send_id, uint32_t recv_id, uint64_t recv_length)
{
    struct efarm_pkt pkt;

    wp_ctrl(w, &pkt, EFARM_PKT_CTS);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, send_id);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_ID, recv_id);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_LENGTH, recv_length);
    wp_send_settle(w, &pkt, NULL, 0, NULL, 0);
}

void send_ctsdata(struct wp *w, uint32_t recv_id, uint64_t offset, const void *data, uint64_t n)
{
    struct efarm_pkt pkt;

    wp_ctrl(w, &pkt, EFARM_PKT_CTSDATA);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_ID, recv_id);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEG_LENGTH, n);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEG_OFFSET, offset);
    wp_send_settle(w, &pkt, NULL, 0, data, n);
}

/* EOR, RECEIPT and READ_NACK: send_id plus recv_id or msg_id. */
void send_reply(struct wp *w, uint8_t type, uint32_t send_id, uint32_t second)
{
    struct efarm_pkt pkt;

    wp_ctrl(w, &pkt, type);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, send_id);
    efarm_pkt_set(&pkt, type == EFARM_PKT_RECEIPT ? EFARM_PKT_F_MSG_ID : EFARM_PKT_F_RECV_ID,
                  second);
    wp_send_settle(w, &pkt, NULL, 0, NULL, 0);
}

void send_eager(struct wp *w, uint8_t type, uint32_t msg_id, uint64_t tag, const void *data,
                uint64_t n)
{
    struct efarm_pkt pkt;

    wp_req(w, &pkt, type, msg_id, tag);
    wp_send_settle(w, &pkt, NULL, 0, data, n);
}

void send_medium(struct wp *w, uint32_t msg_id, const uint8_t *src, uint64_t len, uint64_t off,
                 uint64_t n)
{
    struct efarm_pkt pkt;

    wp_req(w, &pkt, EFARM_PKT_MEDIUM_TAGRTM, msg_id, tag_of(7));
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, len);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEG_OFFSET, off);
    wp_send_settle(w, &pkt, NULL, 0, src + off, n);
}

/* ---- What the engine must send --------------------------------------------------------- */

uint64_t engine_features(bool rdma_read, bool connid)
{
    uint64_t f = EFARM_EXTRA_FEATURE_DELIVERY_COMPLETE;

    if (rdma_read)
        f |= EFARM_EXTRA_FEATURE_RDMA_READ | EFARM_EXTRA_FEATURE_RUNT_READ |
             EFARM_EXTRA_FEATURE_READ_NACK;
    if (connid)
        f |= EFARM_EXTRA_REQUEST_CONNID_HEADER;
    return f;
}

/* Section 2.1 and addenda: the engine's HANDSHAKE, field by field. */
void expect_engine_handshake(const struct wp_pkt *p, uint64_t extra_info)
{
    EXPECT_EQ(p->pkt.type, EFARM_PKT_HANDSHAKE);
    EXPECT_EQ(p->pkt.flags, EFARM_PKT_FLAG_CONNID_HDR | EFARM_HANDSHAKE_DEVICE_VERSION_HDR);
    EXPECT_EQ(get(p, EFARM_PKT_F_NEXTRA_P3), 4);
    EXPECT_EQ(efarm_pkt_extra_info(&p->pkt, 0), extra_info);
    EXPECT_EQ(get(p, EFARM_PKT_F_CONNID), g_eng_connid);
    EXPECT_EQ(get(p, EFARM_PKT_F_DEVICE_VERSION), efarm_ep_caps(g_ep)->device_version);
    /* base 4, nextra_p3 4, one extra_info word, connid + pad, device_version + reserved */
    EXPECT_EQ(p->len, 32);
    EXPECT_EQ(efarm_load_le32(p->data + 20) | efarm_load_le32(p->data + 28), 0);
}

/* A REQ's optional headers: the raw-address header (40 bytes, size 36) or the connid header. */
void expect_req_opts(const struct wp_pkt *p, bool raw_addr, bool connid)
{
    const struct efarm_pkt_type_info *info = efarm_pkt_type_info(p->pkt.type);
    size_t off = info->hdr_size, opt = 0;

    EXPECT_TRUE(info->traits & EFARM_PKT_T_REQ);
    if (info->traits & EFARM_PKT_T_RMA_IOV)
        off += get(p, EFARM_PKT_F_RMA_IOV_COUNT) * sizeof(struct efarm_wire_rma_iov);
    EXPECT_EQ(!!(p->pkt.flags & EFARM_REQ_OPT_RAW_ADDR_HDR), raw_addr);
    EXPECT_EQ(!!(p->pkt.flags & EFARM_PKT_FLAG_CONNID_HDR), connid);
    if (raw_addr) {
        EXPECT_EQ(p->pkt.raw_addr_size, 36);
        EXPECT_EQ(efarm_load_le32(p->data + off), 36);
        EXPECT_MEM_EQ(p->data + off + 4, g_eng_raw, EFARM_RAW_ADDR_LEN);
        EXPECT_EQ(efarm_load_le32(p->data + off + 36), 0); /* padding to 8 bytes */
        EXPECT_EQ(p->pkt.raw_addr.qpn, g_eng_qpn);
        EXPECT_EQ(p->pkt.raw_addr.connid, g_eng_connid);
        opt += RAW_ADDR_HDR_LEN;
    }
    if (p->pkt.flags & EFARM_REQ_OPT_CQ_DATA_HDR)
        opt += EFARM_REQ_OPT_CQ_DATA_LEN;
    if (connid) {
        EXPECT_EQ(get(p, EFARM_PKT_F_CONNID), g_eng_connid);
        EXPECT_EQ(efarm_load_le32(p->data + off + opt), g_eng_connid);
        opt += EFARM_REQ_OPT_CONNID_LEN;
    }
    EXPECT_EQ(p->pkt.hdr_length, off + opt);
}

/* A non-REQ packet: connid in its multiuse word (or CTSDATA's option) iff requested. */
void expect_ctrl_connid(const struct wp_pkt *p, bool connid)
{
    size_t multiuse;

    EXPECT_EQ(!!(p->pkt.flags & EFARM_PKT_FLAG_CONNID_HDR), connid);
    if (connid)
        EXPECT_EQ(get(p, EFARM_PKT_F_CONNID), g_eng_connid);
    switch (p->pkt.type) {
    case EFARM_PKT_CTS:
        multiuse = offsetof(struct efarm_wire_cts_hdr, multiuse);
        break;
    case EFARM_PKT_CTSDATA:
        EXPECT_EQ(p->pkt.hdr_length, CTSDATA_HDR_LEN + (connid ? EFARM_OPT_FIELD_LEN : 0));
        if (connid)
            EXPECT_EQ(efarm_load_le32(p->data + CTSDATA_HDR_LEN + 4), 0); /* its padding */
        return;
    default: /* EOR, RECEIPT, READ_NACK: the multiuse word is last */
        multiuse = offsetof(struct efarm_wire_eor_hdr, multiuse);
        break;
    }
    EXPECT_EQ(efarm_load_le32(p->data + multiuse), connid ? g_eng_connid : 0);
    EXPECT_EQ(p->pkt.payload_length, 0);
}

/*
 * Make the engine and the wire peer know each other: the engine inserts the
 * wire peer's address, the wire peer sends its HANDSHAKE, and the engine
 * answers with its own (the wire peer's first packet). From then on the wire
 * peer leaves out its raw address and adds its connid, as the engine asked.
 */
void wp_connect(struct wp *w, uint64_t extra_info)
{
    struct wp_pkt hs;

    EXPECT_RET(efarm_av_insert(g_ep, w->raw, &w->peer), 0);
    wp_send_handshake(w, extra_info);
    wp_expect(w, EFARM_PKT_HANDSHAKE, &hs);
    expect_engine_handshake(&hs, engine_features(efarm_ep_caps(g_ep)->rdma_read, true));
    w->req_raw_addr = false;
    w->send_connid = true;
}

void engine_close(void)
{
    efarm_ep_close(g_ep);
    g_ep = NULL;
}

uint64_t tag_of(int32_t tag)
{
    return efarm_tag_pack(1, 2, tag);
}

/* Bytes of application data one CTSDATA carries from the wire peer. */
uint64_t wp_ctsdata_room(const struct wp *w)
{
    return w->mtu - CTSDATA_HDR_LEN - (w->send_connid ? EFARM_OPT_FIELD_LEN : 0);
}

/*
 * The engine's CTSDATA for one grant [*off, *off + grant): recv_id echoed,
 * every packet as full as the MTU allows but the grant's last, together
 * covering the grant exactly once (in any order: SRD does not order), data
 * checked. Nothing beyond the grant.
 */
void take_ctsdata(struct wp *w, uint32_t recv_id, const uint8_t *src, uint64_t *off, uint64_t grant,
                  bool connid)
{
    uint64_t start = *off, end = *off + grant, room = 0, got = 0;
    bool *seen = calloc(grant / 1024 + 2, sizeof(bool));

    EXPECT_TRUE(seen != NULL);
    while (got < grant) {
        struct wp_pkt p;
        uint64_t o, n;

        wp_expect(w, EFARM_PKT_CTSDATA, &p);
        expect_ctrl_connid(&p, connid);
        EXPECT_EQ(get(&p, EFARM_PKT_F_RECV_ID), recv_id);
        o = get(&p, EFARM_PKT_F_SEG_OFFSET);
        n = get(&p, EFARM_PKT_F_SEG_LENGTH);
        room = w->mtu - p.pkt.hdr_length;
        EXPECT_EQ(n, p.pkt.payload_length);
        EXPECT_TRUE(n > 0 && o >= start && o <= end && n <= end - o);
        EXPECT_TRUE((o - start) % room == 0 && (n == room || o + n == end));
        EXPECT_TRUE(!seen[(o - start) / room]);
        seen[(o - start) / room] = true;
        EXPECT_MEM_EQ(p.pkt.payload, src + o, n);
        got += n;
    }
    EXPECT_EQ(got, grant);
    *off = end;
    free(seen);
}

/*
 * The wire peer as a long-CTS sender: answer each CTS of the engine with
 * CTSDATA filling exactly its grant, until `len` bytes went (from `off`).
 * Returns the number of CTS rounds.
 */
unsigned feed_ctsdata(struct wp *w, uint32_t send_id, const uint8_t *src, uint64_t off,
                      uint64_t len, bool connid)
{
    unsigned rounds = 0;

    while (off < len) {
        struct wp_pkt p;
        uint64_t grant, end;
        uint32_t recv_id;

        wp_expect(w, EFARM_PKT_CTS, &p);
        expect_ctrl_connid(&p, connid);
        EXPECT_EQ(p.pkt.flags & ~EFARM_PKT_FLAG_CONNID_HDR, 0);
        EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), send_id);
        grant = get(&p, EFARM_PKT_F_RECV_LENGTH);
        EXPECT_TRUE(grant > 0 && grant <= len - off);
        recv_id = (uint32_t)get(&p, EFARM_PKT_F_RECV_ID);
        end = off + grant;
        while (off < end) {
            uint64_t n = end - off < wp_ctsdata_room(w) ? end - off : wp_ctsdata_room(w);

            send_ctsdata(w, recv_id, off, src + off, n);
            off += n;
        }
        rounds++;
    }
    return rounds;
}

/* A LONGCTS RTM from the wire peer with as much data as fits (none with READ_NACK). */
uint64_t send_longcts(struct wp *w, uint8_t type, uint32_t msg_id, uint64_t tag, uint32_t send_id,
                      const uint8_t *src, uint64_t len, uint32_t credits, uint16_t extra_flags)
{
    struct efarm_pkt pkt;
    uint8_t hdr[WP_MAX_PKT];
    size_t hdr_len;
    uint64_t n = 0;

    wp_req(w, &pkt, type, msg_id, tag);
    pkt.flags |= extra_flags;
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, len);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, send_id);
    efarm_pkt_set(&pkt, EFARM_PKT_F_CREDIT_REQUEST, credits);
    EXPECT_RET(efarm_pkt_encode(&pkt, hdr, sizeof(hdr), &hdr_len), 0);
    if (!(extra_flags & EFARM_REQ_READ_NACK))
        n = len < w->mtu - hdr_len ? len : w->mtu - hdr_len;
    wp_send_settle(w, &pkt, NULL, 0, src, n);
    return n;
}

/* A LONGREAD (or, with runt, RUNTREAD) RTM: read_iov[] is its payload's first part. */
void send_longread(struct wp *w, uint8_t type, uint32_t msg_id, uint64_t tag, uint32_t send_id,
                   uint64_t len, const struct efarm_rma_iov *iov, uint32_t niov)
{
    uint8_t arr[8 * sizeof(struct efarm_wire_rma_iov)];
    struct efarm_pkt pkt;

    EXPECT_TRUE(niov <= 8);
    for (uint32_t i = 0; i < niov; i++)
        efarm_rma_iov_store(arr, i, &iov[i]);
    wp_req(w, &pkt, type, msg_id, tag);
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, len);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, send_id);
    efarm_pkt_set(&pkt, EFARM_PKT_F_READ_IOV_COUNT, niov);
    wp_send_settle(w, &pkt, arr, niov * (uint32_t)sizeof(struct efarm_wire_rma_iov), NULL, 0);
}

/* One RUNTREAD_TAGRTM segment: read_iov (one entry, none if iov is NULL), then [off, off + n). */
void send_runtread(struct wp *w, uint32_t msg_id, uint64_t tag, uint32_t send_id, uint64_t len,
                   const struct efarm_rma_iov *iov, uint64_t runt, uint64_t off, const uint8_t *src,
                   uint64_t n)
{
    uint8_t arr[sizeof(struct efarm_wire_rma_iov)];
    uint32_t niov = iov != NULL;
    struct efarm_pkt pkt;

    if (niov)
        efarm_rma_iov_store(arr, 0, iov);
    wp_req(w, &pkt, EFARM_PKT_RUNTREAD_TAGRTM, msg_id, tag);
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, len);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, send_id);
    efarm_pkt_set(&pkt, EFARM_PKT_F_READ_IOV_COUNT, niov);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEG_OFFSET, off);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RUNT_LENGTH, runt);
    wp_send_settle(w, &pkt, arr, niov * (uint32_t)sizeof(arr), src + off, n);
}

/* ---- Ordering: ORD_LEN-byte eager messages on tag 7 whose payload names their msg_id ---- */

/* Payload of message `id` in the ordering tests: names its msg_id. */
void ord_payload(uint8_t *buf, uint32_t id)
{
    for (unsigned i = 0; i < ORD_LEN; i++)
        buf[i] = (uint8_t)(id * 7 + i);
}

void ord_send(struct wp *w, uint32_t id)
{
    uint8_t data[ORD_LEN];

    ord_payload(data, id);
    send_eager(w, EFARM_PKT_EAGER_TAGRTM, id, tag_of(7), data, ORD_LEN);
}

void ord_expect(const struct efarm_req *req, const uint8_t *buf, uint32_t id)
{
    uint8_t want[ORD_LEN];

    ord_payload(want, id);
    EXPECT_TRUE(req->done);
    EXPECT_RET(req->status, 0);
    EXPECT_EQ(req->length, ORD_LEN);
    EXPECT_MEM_EQ(buf, want, ORD_LEN);
}
