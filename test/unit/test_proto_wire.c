/*
 * Wire-level conformance of the protocol engine (protocol v4 chapters 2-4 and
 * ADDENDA.md).
 *
 * One real engine endpoint (efarm_ep_open) talks to a "wire peer": a fake
 * protocol-v4 endpoint made directly on the device layer. The wire peer
 * encodes packets with the codec and posts them, and polls, decodes and
 * inspects every packet the engine sends, so a test checks exactly what goes
 * on the wire and sends exactly what a libfabric peer (or a hostile one)
 * would. The test thread drives both: pump() progresses the engine once and
 * polls every open wire peer once. Everything runs on efasim.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "efarm_byteorder.h"
#include "efarm_device.h"
#include "efarm_errno.h"
#include "efarm_pkt.h"
#include "efarm_proto.h"
#include "efarm_test.h"
#include "proto_common.h"

#define WP_RX_BUFS   256
#define WP_TX_SLOTS  64
#define WP_QUEUE_MAX 4096
#define WP_MAX_PKT   9216
#define WP_MAX       4
#define WP_TIMEOUT_S 10.0
#define WP_QUIET_US  30000 /* how long "nothing more arrives" is watched */

#define RAW_ADDR_HDR_LEN ((uint32_t)sizeof(struct efarm_wire_req_opt_raw_addr))
#define CTSDATA_HDR_LEN  ((uint32_t)sizeof(struct efarm_wire_ctsdata_hdr))

/* Everything a peer can advertise that the engine uses. */
#define FEAT_ALL                                                             \
    (EFARM_EXTRA_FEATURE_RDMA_READ | EFARM_EXTRA_FEATURE_DELIVERY_COMPLETE | \
     EFARM_EXTRA_REQUEST_CONNID_HEADER | EFARM_EXTRA_FEATURE_RUNT_READ |     \
     EFARM_EXTRA_FEATURE_READ_NACK)
#define FEAT_NO_READ (EFARM_EXTRA_FEATURE_DELIVERY_COMPLETE | EFARM_EXTRA_REQUEST_CONNID_HEADER)

/* ---- The wire peer ------------------------------------------------------------------ */

struct wp_rx {
    uint8_t *data;
    uint32_t len;
};

/* One packet the engine sent, decoded in place. */
struct wp_pkt {
    struct efarm_pkt pkt;
    uint32_t len;
    uint8_t data[WP_MAX_PKT];
};

struct wp {
    struct efarm_dev_ep *dev;
    uint8_t raw[EFARM_RAW_ADDR_LEN];
    uint16_t qpn;
    uint32_t connid;
    uint32_t mtu;
    struct efarm_dev_ah *ah; /* to the engine */
    uint8_t *tx;             /* WP_TX_SLOTS send buffers of an MTU */
    struct efarm_dev_mr *tx_mr;
    bool slot_busy[WP_TX_SLOTS];
    unsigned tx_inflight;
    int tx_status; /* first send error, if any */
    unsigned reads_done;
    int read_status;
    struct wp_rx q[WP_QUEUE_MAX]; /* received, not yet taken, in arrival order */
    unsigned nq;
    /* What this peer puts on its own packets. */
    bool req_raw_addr; /* REQs carry our raw address (before the engine's HANDSHAKE) */
    bool send_connid;  /* packets carry our connid (the engine asked for it) */
    efarm_peer_t peer; /* this wire peer in the engine's address vector */
};

/* The engine under test, its address, and the wire peers that are open. */
static struct efarm_ep *g_ep;
static uint8_t g_eng_raw[EFARM_RAW_ADDR_LEN];
static uint16_t g_eng_qpn;
static uint32_t g_eng_connid;
static struct wp *g_wps[WP_MAX];

static const struct efarm_counters *cnt(void)
{
    return efarm_ep_counters(g_ep);
}

static void engine_open(const struct efarm_ep_attr *attr)
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
        case EFARM_DEV_OP_READ:
            w->reads_done++;
            if (c[i].status && !w->read_status)
                w->read_status = c[i].status;
            break;
        default:
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
static void pump(void)
{
    if (g_ep != NULL)
        EXPECT_TRUE(efarm_ep_progress(g_ep) >= 0);
    for (unsigned i = 0; i < WP_MAX; i++)
        if (g_wps[i])
            wp_poll(g_wps[i]);
}

#define PUMP_UNTIL(cond)                                                                \
    do {                                                                                \
        double deadline_ = proto_now_s() + WP_TIMEOUT_S;                                \
        while (!(cond)) {                                                               \
            if (proto_now_s() > deadline_)                                              \
                efarm_test_fail(__FILE__, __LINE__, "timed out waiting for %s", #cond); \
            pump();                                                                     \
        }                                                                               \
    } while (0)

static void pump_for(unsigned us)
{
    double end = proto_now_s() + us / 1e6;

    while (proto_now_s() < end)
        pump();
}

static void wait_req(struct efarm_req *req)
{
    PUMP_UNTIL(req->done);
}

static void wp_open(struct wp *w)
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

static void wp_close(struct wp *w)
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
static void wp_send_bytes(struct wp *w, const void *bytes, uint32_t len)
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
static void wp_send_settle(struct wp *w, const struct efarm_pkt *pkt, const void *pre,
                           uint32_t pre_len, const void *data, uint64_t n)
{
    uint64_t before = g_ep ? cnt()->rx_pkts : 0;

    wp_send(w, pkt, pre, pre_len, data, n);
    if (g_ep != NULL)
        PUMP_UNTIL(cnt()->rx_pkts > before);
}

static void wp_flush(struct wp *w)
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
static void wp_expect(struct wp *w, int type, struct wp_pkt *out)
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
static void wp_expect_none(struct wp *w, int type)
{
    int i;

    pump_for(WP_QUIET_US);
    i = wp_find(w, type);
    if (i >= 0)
        efarm_test_fail(__FILE__, __LINE__, "unexpected packet of type %u (%s), %u bytes",
                        w->q[i].data[0], efarm_pkt_type_info(w->q[i].data[0])->name, w->q[i].len);
}

static uint64_t get(const struct wp_pkt *p, enum efarm_pkt_field f)
{
    EXPECT_TRUE(p->pkt.present & (1u << f));
    return efarm_pkt_get(&p->pkt, f);
}

/* ---- Packets the wire peer builds ---------------------------------------------------- */

static bool type_tagged(uint8_t type)
{
    return efarm_pkt_type_info(type)->traits & EFARM_PKT_T_TAGGED;
}

/* A REQ header with our optional headers: raw address before the handshake, else connid. */
static void wp_req(struct wp *w, struct efarm_pkt *pkt, uint8_t type, uint32_t msg_id, uint64_t tag)
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
static void wp_ctrl(struct wp *w, struct efarm_pkt *pkt, uint8_t type)
{
    efarm_pkt_init(pkt, type);
    if (w->send_connid) {
        pkt->flags |= EFARM_PKT_FLAG_CONNID_HDR;
        efarm_pkt_set(pkt, EFARM_PKT_F_CONNID, w->connid);
    }
}

/* A HANDSHAKE as libfabric sends it: connid and host_id, `n` extra_info words. */
static void wp_send_handshake_words(struct wp *w, const uint64_t *words, uint32_t n)
{
    uint8_t extra[8 * 8];
    struct efarm_pkt pkt;

    EXPECT_TRUE(n <= 8);
    for (uint32_t i = 0; i < n; i++)
        efarm_store_le64(extra + 8 * i, words[i]);
    efarm_pkt_init(&pkt, EFARM_PKT_HANDSHAKE);
    pkt.flags = EFARM_PKT_FLAG_CONNID_HDR | EFARM_HANDSHAKE_HOST_ID_HDR;
    efarm_pkt_set(&pkt, EFARM_PKT_F_NEXTRA_P3, n + 3);
    pkt.extra_info = extra;
    efarm_pkt_set(&pkt, EFARM_PKT_F_CONNID, w->connid);
    efarm_pkt_set(&pkt, EFARM_PKT_F_HOST_ID, 0x1234567890abcdefull);
    wp_send(w, &pkt, NULL, 0, NULL, 0);
}

static void wp_send_handshake(struct wp *w, uint64_t extra_info)
{
    wp_send_handshake_words(w, &extra_info, 1);
}

static void send_cts(struct wp *w, uint32_t send_id, uint32_t recv_id, uint64_t recv_length)
{
    struct efarm_pkt pkt;

    wp_ctrl(w, &pkt, EFARM_PKT_CTS);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, send_id);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_ID, recv_id);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_LENGTH, recv_length);
    wp_send_settle(w, &pkt, NULL, 0, NULL, 0);
}

static void send_ctsdata(struct wp *w, uint32_t recv_id, uint64_t offset, const void *data,
                         uint64_t n)
{
    struct efarm_pkt pkt;

    wp_ctrl(w, &pkt, EFARM_PKT_CTSDATA);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_ID, recv_id);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEG_LENGTH, n);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEG_OFFSET, offset);
    wp_send_settle(w, &pkt, NULL, 0, data, n);
}

/* EOR, RECEIPT and READ_NACK: send_id plus recv_id or msg_id. */
static void send_reply(struct wp *w, uint8_t type, uint32_t send_id, uint32_t second)
{
    struct efarm_pkt pkt;

    wp_ctrl(w, &pkt, type);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, send_id);
    efarm_pkt_set(&pkt, type == EFARM_PKT_RECEIPT ? EFARM_PKT_F_MSG_ID : EFARM_PKT_F_RECV_ID,
                  second);
    wp_send_settle(w, &pkt, NULL, 0, NULL, 0);
}

static void send_eager(struct wp *w, uint8_t type, uint32_t msg_id, uint64_t tag, const void *data,
                       uint64_t n)
{
    struct efarm_pkt pkt;

    wp_req(w, &pkt, type, msg_id, tag);
    wp_send_settle(w, &pkt, NULL, 0, data, n);
}

/* ---- What the engine must send --------------------------------------------------------- */

static uint64_t engine_features(bool rdma_read, bool connid)
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
static void expect_engine_handshake(const struct wp_pkt *p, uint64_t extra_info)
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
static void expect_req_opts(const struct wp_pkt *p, bool raw_addr, bool connid)
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
static void expect_ctrl_connid(const struct wp_pkt *p, bool connid)
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
static void wp_connect(struct wp *w, uint64_t extra_info)
{
    struct wp_pkt hs;

    EXPECT_RET(efarm_av_insert(g_ep, w->raw, &w->peer), 0);
    wp_send_handshake(w, extra_info);
    wp_expect(w, EFARM_PKT_HANDSHAKE, &hs);
    expect_engine_handshake(&hs, engine_features(efarm_ep_caps(g_ep)->rdma_read, true));
    w->req_raw_addr = false;
    w->send_connid = true;
}

static void engine_close(void)
{
    efarm_ep_close(g_ep);
    g_ep = NULL;
}

static uint64_t tag_of(int32_t tag)
{
    return efarm_tag_pack(1, 2, tag);
}

/* Bytes of application data one CTSDATA carries from the wire peer. */
static uint64_t wp_ctsdata_room(const struct wp *w)
{
    return w->mtu - CTSDATA_HDR_LEN - (w->send_connid ? EFARM_OPT_FIELD_LEN : 0);
}

/*
 * The engine's CTSDATA for one grant [*off, *off + grant): recv_id echoed,
 * every packet as full as the MTU allows but the grant's last, together
 * covering the grant exactly once (in any order: SRD does not order), data
 * checked. Nothing beyond the grant.
 */
static void take_ctsdata(struct wp *w, uint32_t recv_id, const uint8_t *src, uint64_t *off,
                         uint64_t grant, bool connid)
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
static unsigned feed_ctsdata(struct wp *w, uint32_t send_id, const uint8_t *src, uint64_t off,
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
static uint64_t send_longcts(struct wp *w, uint8_t type, uint32_t msg_id, uint64_t tag,
                             uint32_t send_id, const uint8_t *src, uint64_t len, uint32_t credits,
                             uint16_t extra_flags)
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
static void send_longread(struct wp *w, uint8_t type, uint32_t msg_id, uint64_t tag,
                          uint32_t send_id, uint64_t len, const struct efarm_rma_iov *iov,
                          uint32_t niov)
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

/* ---- 2. Unknown senders (section 2.2) ------------------------------------------------ */

/* A REQ with the raw-address header from an address never inserted: the peer is learnt. */
EFARM_TEST(wire_unknown_sender_learnt_from_raw_address)
{
    struct efarm_req ureq = {0}, treq = {0}, sreq = {0};
    uint8_t data[300], ubuf[300], tbuf[300];
    efarm_peer_t again;
    struct wp_pkt p;
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    proto_fill(data, sizeof(data), 3);
    EXPECT_RET(efarm_recv(g_ep, ubuf, sizeof(ubuf), EFARM_PEER_NONE, &ureq), 0);
    EXPECT_RET(efarm_trecv(g_ep, tbuf, sizeof(tbuf), 1, 2, 9, &treq), 0);

    send_eager(&w, EFARM_PKT_EAGER_MSGRTM, 0, 0, data, 200);
    EXPECT_TRUE(ureq.done);
    EXPECT_RET(ureq.status, 0);
    EXPECT_EQ(ureq.length, 200);
    EXPECT_MEM_EQ(ubuf, data, 200);
    EXPECT_TRUE(ureq.peer != EFARM_PEER_NONE);
    EXPECT_EQ(cnt()->implicit_peers, 1);
    wp_expect(&w, EFARM_PKT_HANDSHAKE, &p);
    expect_engine_handshake(&p, engine_features(efarm_ep_caps(g_ep)->rdma_read, true));

    /* The same sender again, tagged: the same peer, no second learning. */
    send_eager(&w, EFARM_PKT_EAGER_TAGRTM, 1, tag_of(9), data + 1, 250);
    EXPECT_TRUE(treq.done);
    EXPECT_EQ(treq.peer, ureq.peer);
    EXPECT_EQ(treq.tag, 9);
    EXPECT_MEM_EQ(tbuf, data + 1, 250);
    EXPECT_EQ(cnt()->implicit_peers, 1);
    EXPECT_EQ(cnt()->unknown_sender, 0);

    /* Inserting that address now names the same peer. */
    EXPECT_RET(efarm_av_insert(g_ep, w.raw, &again), 0);
    EXPECT_EQ(again, ureq.peer);

    /* The application answers the learnt peer; the engine has no HANDSHAKE from it yet. */
    EXPECT_RET(efarm_send(g_ep, ureq.peer, data, 120, 0, 0, &sreq), 0);
    wp_expect(&w, EFARM_PKT_EAGER_MSGRTM, &p);
    expect_req_opts(&p, true, false);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), 0);
    EXPECT_MEM_EQ(p.pkt.payload, data, 120);
    wait_req(&sreq);
    EXPECT_RET(sreq.status, 0);
    EXPECT_EQ(cnt()->handshakes_sent, 1);
    wp_close(&w);
    engine_close();
}

/*
 * The raw-address header's size may grow (section 3.1): a 44-byte address
 * from an unknown sender is learnt the same, and its data found after it.
 * Zero-byte messages cross both ways.
 */
EFARM_TEST(wire_unknown_sender_longer_raw_address_and_empty_messages)
{
    uint8_t data[16] = {5, 6, 7}, buf[16];
    struct efarm_req rreq = {0}, sreq = {0};
    efarm_peer_t learnt;
    struct efarm_pkt pkt;
    struct wp_pkt p;
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    EXPECT_RET(efarm_trecv(g_ep, buf, sizeof(buf), 1, 2, 3, &rreq), 0);
    wp_req(&w, &pkt, EFARM_PKT_EAGER_TAGRTM, 0, tag_of(3));
    pkt.raw_addr_size = 44;
    wp_send_settle(&w, &pkt, NULL, 0, data, 16);
    EXPECT_TRUE(rreq.done);
    EXPECT_EQ(rreq.length, 16);
    EXPECT_MEM_EQ(buf, data, 16);
    EXPECT_EQ(cnt()->implicit_peers, 1);
    learnt = rreq.peer;
    wp_expect(&w, EFARM_PKT_HANDSHAKE, &p);

    EXPECT_RET(efarm_trecv(g_ep, buf, sizeof(buf), 1, 2, 3, &rreq), 0);
    send_eager(&w, EFARM_PKT_EAGER_TAGRTM, 1, tag_of(3), NULL, 0);
    EXPECT_TRUE(rreq.done);
    EXPECT_RET(rreq.status, 0);
    EXPECT_EQ(rreq.length, 0);
    EXPECT_EQ(rreq.peer, learnt);
    EXPECT_RET(efarm_tsend(g_ep, rreq.peer, NULL, 0, 1, 2, 3, 0, 0, &sreq), 0);
    wp_expect(&w, EFARM_PKT_EAGER_TAGRTM, &p);
    expect_req_opts(&p, true, false);
    EXPECT_EQ(p.pkt.payload_length, 0);
    wait_req(&sreq);
    EXPECT_RET(sreq.status, 0);
    wp_close(&w);
    engine_close();
}

/*
 * libfabric's own handshake trigger (a 0-byte EAGER_RTW with its raw
 * address, before a DC send) from an unknown sender: learnt, answered with
 * the HANDSHAKE, nothing written; an EAGER_RTW that would write is refused.
 */
EFARM_TEST(wire_handshake_trigger_from_peer_answered)
{
    uint8_t iov[sizeof(struct efarm_wire_rma_iov)] = {0};
    struct efarm_pkt pkt;
    struct wp_pkt p;
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    efarm_pkt_init(&pkt, EFARM_PKT_EAGER_RTW);
    pkt.flags = EFARM_REQ_RMA | EFARM_REQ_OPT_RAW_ADDR_HDR;
    efarm_pkt_set(&pkt, EFARM_PKT_F_RMA_IOV_COUNT, 0);
    memcpy(pkt.raw_addr.gid, w.raw, EFARM_GID_LEN);
    pkt.raw_addr.qpn = w.qpn;
    pkt.raw_addr.connid = w.connid;
    wp_send_settle(&w, &pkt, NULL, 0, NULL, 0);
    wp_expect(&w, EFARM_PKT_HANDSHAKE, &p);
    expect_engine_handshake(&p, engine_features(efarm_ep_caps(g_ep)->rdma_read, true));
    EXPECT_EQ(cnt()->implicit_peers, 1);
    EXPECT_EQ(cnt()->unsupported, 0);

    efarm_pkt_set(&pkt, EFARM_PKT_F_RMA_IOV_COUNT, 1);
    pkt.rma_iov = iov;
    wp_send_settle(&w, &pkt, NULL, 0, "xyz", 3);
    EXPECT_EQ(cnt()->unsupported, 1);
    wp_expect_none(&w, -1);
    wp_close(&w);
    engine_close();
}

/*
 * From an unknown sender, anything but a REQ with the raw-address header is
 * dropped and counted: first while the engine has no address handle for the
 * sender's GID at all, then while it has one (another peer on that host).
 */
EFARM_TEST(wire_unknown_sender_without_raw_address_dropped)
{
    struct efarm_req rreq = {0};
    uint8_t data[64], buf[64];
    struct wp w, other;
    efarm_peer_t op;
    struct wp_pkt p;
    uint64_t drops = 0;

    engine_open(NULL);
    wp_open(&w);
    w.req_raw_addr = false;
    proto_fill(data, sizeof(data), 4);
    EXPECT_RET(efarm_trecv(g_ep, buf, sizeof(buf), 1, 2, EFARM_ANY_TAG, &rreq), 0);
    for (unsigned round = 0; round < 2; round++) {
        efarm_test_context("round %u (%s)", round, round ? "GID known" : "GID unknown");
        w.send_connid = false;
        send_eager(&w, EFARM_PKT_EAGER_TAGRTM, 0, tag_of(1), data, 10);
        w.send_connid = true; /* a REQ with the connid header only */
        send_eager(&w, EFARM_PKT_EAGER_TAGRTM, 0, tag_of(1), data, 10);
        send_cts(&w, 0x10001, 1, 100);
        send_reply(&w, EFARM_PKT_EOR, 0x10001, 1);
        wp_send_handshake(&w, FEAT_ALL);
        PUMP_UNTIL(cnt()->unknown_sender == drops + 5);
        drops += 5;
        wp_flush(&w); /* the device delivered them all */
        EXPECT_TRUE(!rreq.done);
        EXPECT_EQ(cnt()->implicit_peers, 0);
        EXPECT_EQ(cnt()->handshakes_sent, 0);
        EXPECT_EQ(cnt()->stale_ids, 0);
        wp_expect_none(&w, -1);
        /* The second round: the engine knows another QP on the same GID. */
        if (round == 0) {
            wp_open(&other);
            EXPECT_RET(efarm_av_insert(g_ep, other.raw, &op), 0);
        }
    }
    /* None of it took a msg_id: the learnt peer's msg_id 0 is delivered. */
    w.req_raw_addr = true;
    send_eager(&w, EFARM_PKT_EAGER_TAGRTM, 0, tag_of(1), data, 33);
    EXPECT_TRUE(rreq.done);
    EXPECT_EQ(rreq.length, 33);
    EXPECT_MEM_EQ(buf, data, 33);
    EXPECT_EQ(cnt()->implicit_peers, 1);
    wp_expect(&w, EFARM_PKT_HANDSHAKE, &p);
    wp_close(&other);
    wp_close(&w);
    engine_close();
}

/* ---- 3. connid (section 4.4) --------------------------------------------------------- */

/* Packets whose connid names no peer at their (GID, QPN) are dropped, never acted on. */
EFARM_TEST(wire_connid_mismatch_dropped)
{
    const uint64_t lcts = 100000, rlen = 30000;
    uint8_t *src = malloc(lcts), *dst = calloc(1, rlen), zero[WP_MAX_PKT] = {0};
    struct efarm_req sreq = {0}, rreq = {0};
    uint64_t off, grant, end, n, room;
    uint32_t send_id, recv_id, good;
    struct wp_pkt p;
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    wp_connect(&w, FEAT_NO_READ);
    good = w.connid;
    proto_fill(src, lcts, 11);

    /* An EAGER with a wrong connid: dropped before ordering, so msg_id 0 is still free. */
    EXPECT_RET(efarm_trecv(g_ep, dst, rlen, 1, 2, 1, &rreq), 0);
    w.connid = good ^ 0x00010000u;
    send_eager(&w, EFARM_PKT_EAGER_TAGRTM, 0, tag_of(1), src + 1, 100);
    EXPECT_EQ(cnt()->connid_mismatch, 1);
    pump_for(WP_QUIET_US);
    EXPECT_TRUE(!rreq.done);
    w.connid = good;
    send_eager(&w, EFARM_PKT_EAGER_TAGRTM, 0, tag_of(1), src, 100);
    EXPECT_TRUE(rreq.done);
    EXPECT_MEM_EQ(dst, src, 100);

    /* A CTS with a wrong connid grants nothing. */
    EXPECT_RET(efarm_tsend(g_ep, w.peer, src, lcts, 1, 2, 3, 0, 0, &sreq), 0);
    wp_expect(&w, EFARM_PKT_LONGCTS_TAGRTM, &p);
    off = p.pkt.payload_length;
    send_id = (uint32_t)get(&p, EFARM_PKT_F_SEND_ID);
    w.connid = 0;
    send_cts(&w, send_id, 9, lcts - off);
    EXPECT_EQ(cnt()->connid_mismatch, 2);
    wp_expect_none(&w, EFARM_PKT_CTSDATA);
    w.connid = good;
    send_cts(&w, send_id, 9, lcts - off);
    take_ctsdata(&w, 9, src, &off, lcts - off, true);
    wait_req(&sreq);
    EXPECT_RET(sreq.status, 0);

    /* A CTSDATA with a wrong connid writes nothing. */
    memset(dst, 0, rlen);
    EXPECT_RET(efarm_trecv(g_ep, dst, rlen, 1, 2, 2, &rreq), 0);
    off = send_longcts(&w, EFARM_PKT_LONGCTS_TAGRTM, 1, tag_of(2), 0x99, src, rlen, 8, 0);
    wp_expect(&w, EFARM_PKT_CTS, &p);
    grant = get(&p, EFARM_PKT_F_RECV_LENGTH);
    recv_id = (uint32_t)get(&p, EFARM_PKT_F_RECV_ID);
    room = wp_ctsdata_room(&w);
    n = grant < room ? grant : room;
    w.connid = good + 1;
    send_ctsdata(&w, recv_id, off, src + off, n);
    EXPECT_EQ(cnt()->connid_mismatch, 3);
    EXPECT_MEM_EQ(dst + off, zero, n);
    w.connid = good;
    for (end = off + grant; off < end; off += n) {
        n = end - off < room ? end - off : room;
        send_ctsdata(&w, recv_id, off, src + off, n);
    }
    feed_ctsdata(&w, 0x99, src, off, rlen, true);
    wait_req(&rreq);
    EXPECT_RET(rreq.status, 0);
    EXPECT_MEM_EQ(dst, src, rlen);
    EXPECT_EQ(cnt()->connid_mismatch, 3);
    EXPECT_EQ(cnt()->stale_ids, 0);
    wp_close(&w);
    engine_close();
    free(src);
    free(dst);
}

/* A UDP socket bound to 127.0.0.1:port (0: any; its port in *port_p), or -1 if taken. */
static int udp_bind(uint16_t port, uint16_t *port_p)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
    socklen_t len = sizeof(sin);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    EXPECT_TRUE(fd >= 0);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sin, sizeof(sin))) {
        close(fd);
        return -1;
    }
    if (port_p) {
        EXPECT_EQ(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
        *port_p = ntohs(sin.sin_port);
    }
    return fd;
}

/* Two consecutive free UDP ports on 127.0.0.1, for EFASIM_QPN. */
static uint16_t two_free_ports(void)
{
    for (unsigned attempt = 0; attempt < 100; attempt++) {
        uint16_t base;
        int a = udp_bind(0, &base), b = base < 0xffff ? udp_bind((uint16_t)(base + 1), NULL) : -1;

        close(a);
        if (b >= 0) {
            close(b);
            return base;
        }
    }
    efarm_test_fail(__FILE__, __LINE__, "no two consecutive free UDP ports");
}

static void pipe_write(int fd, const void *buf, size_t n)
{
    EXPECT_EQ(write(fd, buf, n), n);
}

static void pipe_read(int fd, void *buf, size_t n)
{
    EXPECT_EQ(read(fd, buf, n), n);
}

#define RESTART_TAG 4

/*
 * The first incarnation of the wire peer, in a child process holding QP number
 * `qpn`: three messages in order and one ahead of its turn (msg_id 4, left in
 * the engine's reorder window), then it takes the engine's HANDSHAKE and one
 * message from the engine, and exits.
 */
static void restart_first_incarnation(uint16_t qpn, int in, int out)
{
    char value[16];
    uint8_t data[64];
    struct wp_pkt p;
    struct wp w;

    proto_use_efasim();
    snprintf(value, sizeof(value), "%u", qpn);
    setenv("EFASIM_QPN", value, 1);
    pipe_read(in, g_eng_raw, sizeof(g_eng_raw));
    g_eng_qpn = efarm_load_le16(g_eng_raw + offsetof(struct efarm_wire_raw_addr, qpn));
    g_eng_connid = efarm_load_le32(g_eng_raw + offsetof(struct efarm_wire_raw_addr, connid));
    wp_open(&w);
    EXPECT_EQ(w.qpn, qpn);
    pipe_write(out, w.raw, sizeof(w.raw));
    for (uint32_t id = 0; id < 5; id++) {
        if (id == 3)
            continue;
        memset(data, 0x10 + id, sizeof(data));
        send_eager(&w, EFARM_PKT_EAGER_TAGRTM, id, tag_of(RESTART_TAG), data, sizeof(data));
    }
    wp_expect(&w, EFARM_PKT_HANDSHAKE, &p);
    wp_expect(&w, EFARM_PKT_EAGER_TAGRTM, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), 0);
    wp_flush(&w);
    /* Linger: efasim sends the ACKs a QP owes only while it lives (not at destroy). */
    pump_for(100000);
    wp_close(&w);
    pipe_write(out, "k", 1);
}

/*
 * The second incarnation, in this process, at the first one's GID and QPN
 * with a new connid: a new peer with msg_ids from 0 both ways, untouched by
 * what the old one left (its msg_id counters, msg_id 4 in its window).
 */
static void restart_second_incarnation(uint16_t qpn, const uint8_t *old_raw, efarm_peer_t old_peer)
{
    uint32_t old_connid = efarm_load_le32(old_raw + offsetof(struct efarm_wire_raw_addr, connid));
    struct efarm_req rreq[5], sreq = {0};
    uint8_t buf[5][64], data[64];
    struct wp_pkt p;
    struct wp w;

    wp_open(&w);
    EXPECT_EQ(w.qpn, qpn);
    EXPECT_MEM_EQ(w.raw, old_raw, 18);
    EXPECT_TRUE(w.connid != old_connid);
    memset(rreq, 0, sizeof(rreq));
    for (unsigned i = 0; i < 5; i++)
        EXPECT_RET(efarm_trecv(g_ep, buf[i], 64, 1, 2, RESTART_TAG, &rreq[i]), 0);
    for (uint32_t id = 0; id < 5; id++) {
        memset(data, 0x40 + id, sizeof(data));
        send_eager(&w, EFARM_PKT_EAGER_TAGRTM, id, tag_of(RESTART_TAG), data, 32);
        EXPECT_TRUE(rreq[id].done);
        EXPECT_TRUE(rreq[id].peer != old_peer);
        EXPECT_EQ(rreq[id].peer, rreq[0].peer);
        EXPECT_EQ(rreq[id].length, 32);
        EXPECT_EQ(buf[id][0], 0x40 + id);
        if (id == 0)
            EXPECT_EQ(cnt()->implicit_peers, 2);
    }
    wp_expect(&w, EFARM_PKT_HANDSHAKE, &p);
    EXPECT_EQ(cnt()->handshakes_sent, 2);

    /* The engine's msg_ids towards the new peer start at 0 too. */
    EXPECT_RET(efarm_tsend(g_ep, rreq[0].peer, data, 20, 1, 2, 3, 0, 0, &sreq), 0);
    wp_expect(&w, EFARM_PKT_EAGER_TAGRTM, &p);
    expect_req_opts(&p, true, false);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), 0);
    wait_req(&sreq);

    /* A send to the old incarnation fails at the device; nothing reaches the new one. */
    EXPECT_RET(efarm_tsend(g_ep, old_peer, data, 20, 1, 2, 3, 0, 0, &sreq), 0);
    wait_req(&sreq);
    EXPECT_RET(sreq.status, EFARM_E(DEV_REMOTE_QP));
    wp_expect_none(&w, -1);
    wp_close(&w);
}

/*
 * Section 4.4: a process that restarts at the same GID and QPN has a new
 * connid. Its REQ with the raw-address header makes a new peer whose msg_ids
 * start afresh, both ways; what the old incarnation left behind (a message
 * waiting in its reorder window, its msg_id counters) touches nothing of the
 * new one, and the engine's packets for the old one never reach the new one.
 * EFASIM_QPN gives the engine QPN base and both incarnations base + 1.
 */
EFARM_TEST_TIMEOUT(wire_restarted_peer_is_a_new_peer, 60)
{
    uint16_t base = two_free_ports();
    int to_child[2], to_parent[2], status;
    uint8_t buf[3][64], data[64] = {0}, old_raw[EFARM_RAW_ADDR_LEN], ok;
    struct efarm_req rreq[3], sreq = {0};
    efarm_peer_t old_peer;
    char value[16];
    pid_t pid;

    EXPECT_EQ(pipe(to_child), 0);
    EXPECT_EQ(pipe(to_parent), 0);
    pid = fork(); /* before anything touches verbs: each process counts its own QP numbers */
    EXPECT_TRUE(pid >= 0);
    if (pid == 0) {
        restart_first_incarnation((uint16_t)(base + 1), to_child[0], to_parent[1]);
        _exit(0);
    }
    snprintf(value, sizeof(value), "%u", base);
    setenv("EFASIM_QPN", value, 1);
    engine_open(NULL);
    EXPECT_EQ(g_eng_qpn, base);
    pipe_write(to_child[1], g_eng_raw, sizeof(g_eng_raw));
    pipe_read(to_parent[0], old_raw, sizeof(old_raw));

    memset(rreq, 0, sizeof(rreq));
    for (unsigned i = 0; i < 3; i++)
        EXPECT_RET(efarm_trecv(g_ep, buf[i], 64, 1, 2, RESTART_TAG, &rreq[i]), 0);
    PUMP_UNTIL(rreq[0].done && rreq[1].done && rreq[2].done && cnt()->rx_pkts == 4);
    old_peer = rreq[0].peer;
    for (unsigned i = 0; i < 3; i++) {
        EXPECT_EQ(rreq[i].peer, old_peer);
        EXPECT_EQ(buf[i][0], 0x10 + i);
    }
    EXPECT_EQ(cnt()->implicit_peers, 1);
    EXPECT_TRUE(cnt()->out_of_order >= 1); /* msg_id 4 at least (SRD may reorder the rest) */
    EXPECT_RET(efarm_tsend(g_ep, old_peer, data, 10, 1, 2, 3, 0, 0, &sreq), 0);
    wait_req(&sreq);
    EXPECT_RET(sreq.status, 0);
    EXPECT_EQ(read(to_parent[0], &ok, 1), 1); /* the old incarnation is gone */
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    restart_second_incarnation((uint16_t)(base + 1), old_raw, old_peer);
    engine_close();
}

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

/* ---- 5. Subprotocol flows driven from the wire (sections 3.2, 4.1, 4.5, 4.7) ---------- */

/* RDMA-read [raddr, raddr + len) of the engine's memory into dst (registered for it). */
static void wp_read(struct wp *w, void *dst, struct efarm_dev_mr *mr, uint64_t len, uint64_t raddr,
                    uint64_t rkey)
{
    unsigned before = w->reads_done;

    EXPECT_TRUE(rkey <= UINT32_MAX);
    EXPECT_RET(efarm_dev_post_read(w->dev, w->ah, g_eng_qpn, g_eng_connid, dst, (uint32_t)len,
                                   efarm_dev_mr_lkey(mr), raddr, (uint32_t)rkey, 1000 + before),
               0);
    PUMP_UNTIL(w->reads_done > before);
    EXPECT_RET(w->read_status, 0);
}

/* One RUNTREAD_TAGRTM segment: read_iov (one entry, none if iov is NULL), then [off, off + n). */
static void send_runtread(struct wp *w, uint32_t msg_id, uint64_t tag, uint32_t send_id,
                          uint64_t len, const struct efarm_rma_iov *iov, uint64_t runt,
                          uint64_t off, const uint8_t *src, uint64_t n)
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
    wp_expect_none(&w, EFARM_PKT_CTSDATA);
    off = 0; /* long-CTS from the first byte */
    send_cts(&w, send_id, 0x32, 100000);
    take_ctsdata(&w, 0x32, src, &off, 100000, true);
    send_cts(&w, send_id, 0x32, len);
    take_ctsdata(&w, 0x32, src, &off, len - 100000, true);
    wait_req(&sreq);
    EXPECT_RET(sreq.status, 0);
    send_reply(&w, EFARM_PKT_READ_NACK, send_id, 0x31); /* the send is over */
    EXPECT_EQ(cnt()->stale_ids, 1);

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
    const uint64_t len = 2u << 20, rlen = 1u << 20, seg = 8000, runt = 3 * seg;
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

    efarm_test_context("long-read");
    EXPECT_RET(efarm_trecv(g_ep, dst, len, 1, 2, 3, &rreq), 0);
    send_longread(&w, EFARM_PKT_LONGREAD_TAGRTM, 0, tag_of(3), 0x55, len, &iov, 1);
    wp_expect(&w, EFARM_PKT_READ_NACK, &p);
    expect_ctrl_connid(&p, true);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x55);
    EXPECT_EQ(cnt()->read_nacks_sent, 1);
    EXPECT_EQ(cnt()->reads_posted, 0);
    wp_expect_none(&w, EFARM_PKT_EOR);
    EXPECT_TRUE(!rreq.done);
    send_longcts(&w, EFARM_PKT_LONGCTS_TAGRTM, 0, tag_of(3), 0x55, src, len, 64,
                 EFARM_REQ_READ_NACK);
    EXPECT_TRUE(feed_ctsdata(&w, 0x55, src, 0, len, true) >= 2);
    wait_req(&rreq);
    EXPECT_RET(rreq.status, 0);
    EXPECT_EQ(rreq.length, len);
    EXPECT_MEM_EQ(dst, src, len);
    wp_expect_none(&w, EFARM_PKT_EOR);

    efarm_test_context("runting read: READ_NACK only after the whole runt");
    memset(dst, 0, len);
    iov.len = rlen;
    EXPECT_RET(efarm_trecv(g_ep, dst, len, 1, 2, 3, &rreq), 0);
    send_runtread(&w, 1, tag_of(3), 0x66, rlen, &iov, runt, 0, src, seg);
    send_runtread(&w, 1, tag_of(3), 0x66, rlen, &iov, runt, 2 * seg, src, seg);
    wp_expect_none(&w, EFARM_PKT_READ_NACK);
    send_runtread(&w, 1, tag_of(3), 0x66, rlen, &iov, runt, seg, src, seg);
    wp_expect(&w, EFARM_PKT_READ_NACK, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x66);
    EXPECT_EQ(cnt()->read_nacks_sent, 2);
    send_longcts(&w, EFARM_PKT_LONGCTS_TAGRTM, 1, tag_of(3), 0x66, src, rlen, 64,
                 EFARM_REQ_READ_NACK);
    feed_ctsdata(&w, 0x66, src, runt, rlen, true); /* the rest, from the end of the runt */
    wait_req(&rreq);
    EXPECT_RET(rreq.status, 0);
    EXPECT_EQ(rreq.length, rlen);
    EXPECT_MEM_EQ(dst, src, rlen);

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

/* ---- 7. Ordering from the wire (section 3.2, msg_id) --------------------------------- */

#define ORD_LEN 40

/* Payload of message `id` in the ordering tests: names its msg_id. */
static void ord_payload(uint8_t *buf, uint32_t id)
{
    for (unsigned i = 0; i < ORD_LEN; i++)
        buf[i] = (uint8_t)(id * 7 + i);
}

static void ord_send(struct wp *w, uint32_t id)
{
    uint8_t data[ORD_LEN];

    ord_payload(data, id);
    send_eager(w, EFARM_PKT_EAGER_TAGRTM, id, tag_of(7), data, ORD_LEN);
}

static void ord_expect(const struct efarm_req *req, const uint8_t *buf, uint32_t id)
{
    uint8_t want[ORD_LEN];

    ord_payload(want, id);
    EXPECT_TRUE(req->done);
    EXPECT_RET(req->status, 0);
    EXPECT_EQ(req->length, ORD_LEN);
    EXPECT_MEM_EQ(buf, want, ORD_LEN);
}

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
        ord_send(&w, base);
        if (round == 1)
            for (unsigned i = 0; i < N; i++)
                EXPECT_RET(efarm_trecv(g_ep, buf[i], ORD_LEN, 1, 2, 7, &req[i]), 0);
        for (unsigned i = 0; i < N; i++)
            ord_expect(&req[i], buf[i], base + i);
    }
    EXPECT_EQ(cnt()->out_of_order, 2 * (N - 1));
    EXPECT_EQ(cnt()->stale_ids, 0);
    wp_close(&w);
    engine_close();
}

/* One MEDIUM segment from the wire peer: [off, off + n) of a len-byte message. */
static void send_medium(struct wp *w, uint32_t msg_id, const uint8_t *src, uint64_t len,
                        uint64_t off, uint64_t n)
{
    struct efarm_pkt pkt;

    wp_req(w, &pkt, EFARM_PKT_MEDIUM_TAGRTM, msg_id, tag_of(7));
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, len);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEG_OFFSET, off);
    wp_send_settle(w, &pkt, NULL, 0, src + off, n);
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
