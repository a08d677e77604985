/*
 * One-sided operations, origin side (protocol v4 sections 3.3 and 4.x):
 * write, read and atomic on a peer's exposed memory.
 *
 * Every operation waits for the peer's HANDSHAKE (it says whether the peer
 * has RDMA read and write, and the ops that take msg_ids must keep the order
 * of those waiting before them), then picks its subprotocol by the rules of
 * the rows below. What each subprotocol sends and what completes it are the
 * other columns of its row in g_efarm_rma_protos (rma_proto.h):
 *   direct write/read  RDMA work requests of at most the device's
 *                      max_rdma_size, split where the remote ranges split;
 *                      done when the device completes them all;
 *   EAGER_RTW          one packet per MTU of data, each naming its own
 *                      slice of the remote ranges; done when the packets
 *                      complete, or with DC (DC_EAGER_RTW) at one RECEIPT each;
 *   SHORT_RTR          one request per READRSP's worth of data, one at a time
 *                      (a READRSP names no offset); done at the last READRSP;
 *   WRITE/FETCH/COMPARE_RTA  one packet per MTU of whole elements, each with
 *                      its msg_id (all reserved when the op begins, so the
 *                      target applies them in the order ops started); FETCH
 *                      and COMPARE one at a time, answered by ATOMRSP;
 *                      DC_WRITE_RTA answered by RECEIPT;
 *   LONGCTS_RTW, LONGREAD_RTW  (one remote range) run by the two-sided send
 *                      machinery (msg_send.c): the op becomes a send whose REQ
 *                      is the RTW, then CTSDATA per CTS (done when sent, or at
 *                      the RECEIPT of DC_LONGCTS_RTW), or the target's RDMA
 *                      read of our registered buffer (done at the EOR; a
 *                      READ_NACK turns it into LONGCTS_RTW);
 *   LONGCTS_RTR        (one remote range) run by the receive machinery
 *                      (msg_recv.c): a long-CTS receive whose REQ is the RTR
 *                      and whose first data comes in a READRSP.
 * A refusal at the target comes back as a READRSP, ATOMRSP, RECEIPT or EOR
 * with efarm's REFUSED flag (efarm targets only; protocol v4 has no error
 * reply) and completes the op with EFARM_E(PROTO_RMA_REFUSED). Segments of
 * an RTA op are still all sent after a refusal: their msg_ids are reserved
 * and the target waits for each.
 */
#include <errno.h>

#include "efarm_rma.h"
#include "proto_internal.h"
#include "proto_messages.h"
#include "proto_onesided.h"
#include "proto_ops.h"
#include "proto_peers.h"
#include "proto_transmit.h"
#include "rma_proto.h"

#define RMA_WR_MAX (256ull << 20) /* one RDMA WR at most; keeps its length in the wr_id */

/*
 * The one-sided subprotocols' rows (rma_proto.h): how each moves data, what
 * completes it, and its selection rule. Selection takes, for what the caller
 * asked (want), the row of lowest rank whose conditions hold: writes the
 * device's RDMA write; else the target reads a large buffer by RDMA
 * (LONGREAD_RTW, as long-read sends do from EFARM_READ_MIN); else CTS rounds
 * above the medium size (LONGCTS_RTW: the target paces the data); else
 * EAGER_RTW packets, all at once, like a medium send. Reads: RDMA read; else
 * one LONGCTS_RTR above one READRSP (a window of CTSDATA per round trip
 * instead of one READRSP); else SHORT_RTR. `facts` are the conditions that
 * hold even when EFARM_RMA_PROTO forces the subprotocol (the rest are
 * policy). Each want has one row without conditions, of the highest rank.
 * A write with CQ data goes by `cq_need` instead (forced or not): one
 * request, so one EAGER_RTW only when it all fits; for one remote range
 * (efarm_write_data takes no more) LONGCTS_RTW or EAGER_RTW always holds.
 */
const struct efarm_rma_proto_row g_efarm_rma_protos[EFARM_RMA_PROTO_COUNT] = {
#define RMA_COUNTER(name) .counter = offsetof(struct efarm_counters, name)
    [EFARM_RMA_DIRECT_WRITE] = {.direct = true,
                                .to_target = true,
                                .reg = 0 + 1,
                                .role = EFARM_OP_RMA,
                                .rule = {.want = EFARM_RMA_WANT_WRITE,
                                         .rank = 10,
                                         .need = EFARM_RMA_NEED_RDMA_WRITE | EFARM_RMA_NEED_REG,
                                         .facts = EFARM_RMA_NEED_RDMA_WRITE | EFARM_RMA_NEED_REG,
                                         .cq_need = EFARM_RMA_NEED_RDMA_WRITE | EFARM_RMA_NEED_REG |
                                                    EFARM_RMA_NEED_ONE_RANGE |
                                                    EFARM_RMA_NEED_ONE_WR | EFARM_RMA_NEED_IMM_OK},
                                RMA_COUNTER(rma_direct_write)},
    [EFARM_RMA_EAGER_RTW] = {.type = EFARM_PKT_EAGER_RTW,
                             .dc_type = EFARM_PKT_DC_EAGER_RTW,
                             .to_target = true,
                             .role = EFARM_OP_RMA,
                             .rule = {.want = EFARM_RMA_WANT_WRITE,
                                      .rank = 90,
                                      .need = 0,
                                      .facts = 0,
                                      .cq_need = EFARM_RMA_NEED_ONE_PKT},
                             RMA_COUNTER(rma_eager_rtw)},
    [EFARM_RMA_DIRECT_READ] = {.direct = true,
                               .reg = EFARM_DEV_ACCESS_LOCAL_WRITE + 1,
                               .role = EFARM_OP_RMA,
                               .rule = {.want = EFARM_RMA_WANT_READ,
                                        .rank = 10,
                                        .need = EFARM_RMA_NEED_RDMA_READ | EFARM_RMA_NEED_REG,
                                        .facts = EFARM_RMA_NEED_RDMA_READ | EFARM_RMA_NEED_REG},
                               RMA_COUNTER(rma_direct_read)},
    [EFARM_RMA_SHORT_RTR] =
        {.type = EFARM_PKT_SHORT_RTR,
         .dc_type = EFARM_PKT_SHORT_RTR,
         .rsp_type = EFARM_PKT_READRSP,
         .role = EFARM_OP_RMA,
         .rule = {.want = EFARM_RMA_WANT_READ, .rank = 90, .need = 0, .facts = 0},
         RMA_COUNTER(rma_short_rtr)},
    [EFARM_RMA_LONGCTS_RTW] = {.type = EFARM_PKT_LONGCTS_RTW,
                               .dc_type = EFARM_PKT_DC_LONGCTS_RTW,
                               .to_target = true,
                               .role = EFARM_OP_WRITE_ORIGIN,
                               .msg_proto = EFARM_PROTO_LONGCTS,
                               .rule = {.want = EFARM_RMA_WANT_WRITE,
                                        .rank = 30,
                                        .need = EFARM_RMA_NEED_LONG | EFARM_RMA_NEED_ONE_RANGE,
                                        .facts =
                                            EFARM_RMA_NEED_MULTI_PKT | EFARM_RMA_NEED_ONE_RANGE,
                                        /* What one EAGER_RTW cannot hold, its larger
                                           header cannot hold either (MULTI_PKT's point). */
                                        .cq_need =
                                            EFARM_RMA_NEED_BEYOND_PKT | EFARM_RMA_NEED_ONE_RANGE},
                               RMA_COUNTER(rma_longcts_rtw)},
    /* The EOR that ends it already says the data is in place: no DC type. */
    [EFARM_RMA_LONGREAD_RTW] =
        {.type = EFARM_PKT_LONGREAD_RTW,
         .dc_type = EFARM_PKT_LONGREAD_RTW,
         .to_target = true,
         .reg = EFARM_DEV_ACCESS_REMOTE_READ + 1,
         .role = EFARM_OP_WRITE_ORIGIN,
         .msg_proto = EFARM_PROTO_LONGREAD,
         .rule = {.want = EFARM_RMA_WANT_WRITE,
                  .rank = 20,
                  .need = EFARM_RMA_NEED_PEER_READ | EFARM_RMA_NEED_READ_MIN |
                          EFARM_RMA_NEED_ONE_RANGE | EFARM_RMA_NEED_REG,
                  .facts = EFARM_RMA_NEED_PEER_READ | EFARM_RMA_NEED_ONE_RANGE | EFARM_RMA_NEED_REG,
                  .cq_need = EFARM_RMA_NEED_PEER_READ | EFARM_RMA_NEED_READ_MIN |
                             EFARM_RMA_NEED_ONE_RANGE | EFARM_RMA_NEED_REG},
         RMA_COUNTER(rma_longread_rtw)},
    [EFARM_RMA_LONGCTS_RTR] = {.type = EFARM_PKT_LONGCTS_RTR,
                               .dc_type = EFARM_PKT_LONGCTS_RTR,
                               .rsp_type = EFARM_PKT_READRSP,
                               .role = EFARM_OP_READ_ORIGIN,
                               .msg_proto = EFARM_PROTO_LONGCTS,
                               .rule = {.want = EFARM_RMA_WANT_READ,
                                        .rank = 20,
                                        .need = EFARM_RMA_NEED_LONG | EFARM_RMA_NEED_ONE_RANGE,
                                        .facts = EFARM_RMA_NEED_ONE_RANGE},
                               RMA_COUNTER(rma_longcts_rtr)},
    [EFARM_RMA_WRITE_RTA] =
        {.type = EFARM_PKT_WRITE_RTA,
         .dc_type = EFARM_PKT_DC_WRITE_RTA,
         .to_target = true,
         .elements = true,
         .role = EFARM_OP_RMA,
         .rule = {.want = EFARM_RMA_WANT_ATOMIC_WRITE, .rank = 90, .need = 0, .facts = 0},
         RMA_COUNTER(rma_write_rta)},
    [EFARM_RMA_FETCH_RTA] =
        {.type = EFARM_PKT_FETCH_RTA,
         .dc_type = EFARM_PKT_FETCH_RTA,
         .rsp_type = EFARM_PKT_ATOMRSP,
         .to_target = true,
         .elements = true,
         .role = EFARM_OP_RMA,
         .rule = {.want = EFARM_RMA_WANT_ATOMIC_FETCH, .rank = 90, .need = 0, .facts = 0},
         RMA_COUNTER(rma_fetch_rta)},
    [EFARM_RMA_COMPARE_RTA] =
        {.type = EFARM_PKT_COMPARE_RTA,
         .dc_type = EFARM_PKT_COMPARE_RTA,
         .rsp_type = EFARM_PKT_ATOMRSP,
         .to_target = true,
         .elements = true,
         .compare = true,
         .role = EFARM_OP_RMA,
         .rule = {.want = EFARM_RMA_WANT_ATOMIC_CMP, .rank = 90, .need = 0, .facts = 0},
         RMA_COUNTER(rma_compare_rta)},
#undef RMA_COUNTER
};

/* Whether the write fits one EAGER_RTW (or DC_EAGER_RTW) with its headers and ranges. */
static bool fits_one_pkt(const struct efarm_ep *ep, const struct efarm_peer_state *st,
                         const struct efarm_op *op)
{
    uint8_t type = op->rma.dc ? EFARM_PKT_DC_EAGER_RTW : EFARM_PKT_EAGER_RTW;
    uint64_t hdr = efarm_req_hdr_len(st, type, op->flags & EFARM_OPF_CQ_DATA) +
                   (uint64_t)op->niov * sizeof(struct efarm_wire_rma_iov);

    return hdr <= ep->mtu && op->len <= ep->mtu - hdr;
}

static bool rule_holds(const struct efarm_ep *ep, const struct efarm_peer_state *st,
                       const struct efarm_op *op, enum efarm_rma_want want, uint16_t need)
{
    bool direct = !(op->flags & (EFARM_OPF_NO_DIRECT | EFARM_OPF_NO_REG));
    bool rdma_read = (ep->extra_info & EFARM_EXTRA_FEATURE_RDMA_READ) &&
                     efarm_peer_has(st, EFARM_EXTRA_FEATURE_RDMA_READ);
    uint64_t one = want == EFARM_RMA_WANT_READ  ? ep->mtu - sizeof(struct efarm_wire_readrsp_hdr)
                   : ep->p.medium_max > ep->mtu ? ep->p.medium_max
                                                : ep->mtu;

    if ((need & EFARM_RMA_NEED_RDMA_WRITE) &&
        !(direct && (ep->extra_info & EFARM_EXTRA_FEATURE_RDMA_WRITE) &&
          efarm_peer_has(st, EFARM_EXTRA_FEATURE_RDMA_WRITE)))
        return false;
    if ((need & EFARM_RMA_NEED_RDMA_READ) && !(direct && rdma_read))
        return false;
    if ((need & EFARM_RMA_NEED_PEER_READ) && !rdma_read)
        return false;
    if ((need & EFARM_RMA_NEED_READ_MIN) && op->len < ep->p.read_min)
        return false;
    if ((need & EFARM_RMA_NEED_LONG) && op->len <= one)
        return false;
    if ((need & EFARM_RMA_NEED_ONE_RANGE) && op->niov != 1)
        return false;
    if ((need & EFARM_RMA_NEED_REG) && ((op->flags & EFARM_OPF_NO_REG) || ep->mr_cache == NULL))
        return false;
    if ((need & EFARM_RMA_NEED_MULTI_PKT) && op->len <= ep->mtu)
        return false;
    if ((need & (EFARM_RMA_NEED_ONE_PKT | EFARM_RMA_NEED_BEYOND_PKT)) &&
        fits_one_pkt(ep, st, op) != ((need & EFARM_RMA_NEED_ONE_PKT) != 0))
        return false;
    if ((need & EFARM_RMA_NEED_ONE_WR) &&
        (op->len == 0 || op->len > ep->caps.max_rdma_size || op->len > RMA_WR_MAX))
        return false;
    if ((need & EFARM_RMA_NEED_IMM_OK) &&
        efarm_peer_has(st, EFARM_EXTRA_FEATURE_UNSOLICITED_WRITE_RECV) !=
            ((ep->extra_info & EFARM_EXTRA_FEATURE_UNSOLICITED_WRITE_RECV) != 0))
        return false;
    return true;
}

static enum efarm_rma_proto rma_select(const struct efarm_ep *ep, const struct efarm_peer_state *st,
                                       const struct efarm_op *op, enum efarm_rma_want want)
{
    bool cq = op->flags & EFARM_OPF_CQ_DATA;
    int best = -1;

    /* EFARM_RMA_PROTO first: a forced subprotocol whose facts hold. */
    for (int k = 0; ep->p.rma_force && k < EFARM_RMA_PROTO_COUNT; k++) {
        const struct efarm_rma_rule *r = &g_efarm_rma_protos[k].rule;

        if (r->want == want && (ep->p.rma_force & 1u << k) && (!cq || r->cq_need) &&
            (best < 0 || r->rank < g_efarm_rma_protos[best].rule.rank) &&
            rule_holds(ep, st, op, want, cq ? r->cq_need : r->facts))
            best = k;
    }
    if (best >= 0)
        return (enum efarm_rma_proto)best;
    for (int k = 0; k < EFARM_RMA_PROTO_COUNT; k++) {
        const struct efarm_rma_rule *r = &g_efarm_rma_protos[k].rule;

        if (r->want == want && (!cq || r->cq_need) &&
            (best < 0 || r->rank < g_efarm_rma_protos[best].rule.rank) &&
            rule_holds(ep, st, op, want, cq ? r->cq_need : r->need))
            best = k;
    }
    /* Always found: every want has a row without conditions (test_pkt_rows checks it). */
    return best >= 0 ? (enum efarm_rma_proto)best : EFARM_RMA_EAGER_RTW;
}

/* Remote ranges covering [off, off + n) of the op's remote space (at most max); how many. */
static uint32_t riov_slice(const struct efarm_op *op, uint64_t off, uint64_t n,
                           struct efarm_rma_iov *out, uint32_t max)
{
    uint32_t k = 0;

    if (op->len == 0 && max > 0) {
        /* A write of nothing (a notification with CQ data) names its one range. */
        out[0] = (struct efarm_rma_iov){.addr = op->iov[0].addr, .len = 0, .key = op->iov[0].key};
        return 1;
    }
    for (uint32_t i = 0; i < op->niov && n > 0 && k < max; i++) {
        uint64_t len = op->iov[i].len, take;

        if (off >= len) {
            off -= len;
            continue;
        }
        take = len - off < n ? len - off : n;
        out[k].addr = op->iov[i].addr + off;
        out[k].len = take;
        out[k].key = op->iov[i].key;
        k++;
        n -= take;
        off = 0;
    }
    return k;
}

/* ---- Completion -------------------------------------------------------------------------- */

static void rma_op_check(struct efarm_ep *ep, struct efarm_op *op)
{
    struct efarm_req *req = op->req;

    if (op->offset < op->len || op->pkts_inflight || op->reads_inflight || op->rma.replies_owed ||
        (op->awaits & EFARM_AWAIT_RSP) || (op->flags & EFARM_OPF_IN_WORK))
        return;
    req->length = op->status ? 0 : op->len;
    req->proto = op->proto;
    efarm_req_complete(ep, op, req, op->status);
    efarm_op_release(ep, op);
}

/* An error ends the op once what is in flight is back; RTA segments still go (msg_ids). */
static void rma_op_error(struct efarm_op *op, int status)
{
    if (op->status == 0)
        op->status = status;
    op->rma.empty_sent = true; /* a notification that failed is not sent again */
    if (!g_efarm_rma_protos[op->proto].elements)
        op->offset = op->len; /* nothing that waits on msg_ids: stop issuing */
}

/* ---- Sending ----------------------------------------------------------------------------- */

static int post_rdma(struct efarm_ep *ep, struct efarm_op *op)
{
    const struct efarm_peer *p = &ep->peers[op->peer];
    struct efarm_rma_iov sl;
    uint64_t n = op->len - op->offset;
    int ret;

    if (n > ep->caps.max_rdma_size)
        n = ep->caps.max_rdma_size;
    if (n > RMA_WR_MAX)
        n = RMA_WR_MAX;
    riov_slice(op, op->offset, n, &sl, 1); /* the first slice: up to where a range ends */
    n = sl.len;
    if (sl.key > UINT32_MAX) {
        /* No device key is that large: an emulated target would refuse it too. */
        rma_op_error(op, EFARM_E(PROTO_RMA_KEY));
        return 0;
    }
    ret = efarm_peer_ah_ready(ep, op->peer);
    if (ret == 0 && g_efarm_rma_protos[op->proto].to_target && (op->flags & EFARM_OPF_CQ_DATA))
        ret = efarm_dev_post_write_imm(ep->dev, p->ah, p->qpn, p->connid, op->buf + op->offset,
                                       (uint32_t)n, op->mr.lkey, sl.addr, (uint32_t)sl.key,
                                       (uint32_t)op->rma.cq_data,
                                       (uint64_t)op->id << 32 | n << 2 | EFARM_WR_RDMA);
    else if (ret == 0 && g_efarm_rma_protos[op->proto].to_target)
        ret = efarm_dev_post_write(ep->dev, p->ah, p->qpn, p->connid, op->buf + op->offset,
                                   (uint32_t)n, op->mr.lkey, sl.addr, (uint32_t)sl.key,
                                   (uint64_t)op->id << 32 | n << 2 | EFARM_WR_RDMA);
    else if (ret == 0)
        ret = efarm_dev_post_read(ep->dev, p->ah, p->qpn, p->connid, op->buf + op->offset,
                                  (uint32_t)n, op->mr.lkey, sl.addr, (uint32_t)sl.key,
                                  (uint64_t)op->id << 32 | n << 2 | EFARM_WR_RDMA);
    if (ret == -EAGAIN)
        return -EAGAIN;
    if (ret) {
        efarm_log_ratelimited(EFARM_LOG_WARN, "cannot post RDMA %s to peer %u: %s",
                              g_efarm_rma_protos[op->proto].to_target ? "write" : "read", op->peer,
                              efarm_strerror(ret));
        rma_op_error(op, ret);
        return 0;
    }
    op->offset += n;
    op->reads_inflight++;
    ep->cnt.rma_wrs_posted++;
    return 0;
}

void efarm_rma_req_init(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_pkt *pkt,
                        uint8_t type, const struct efarm_rma_iov *iov, uint32_t n, uint8_t *wire)
{
    for (uint32_t i = 0; i < n; i++)
        efarm_rma_iov_store(wire, i, &iov[i]);
    efarm_pkt_init(pkt, type);
    pkt->flags = EFARM_REQ_RMA;
    if (efarm_peer_needs_raw_addr(st))
        efarm_pkt_set_raw_addr(ep, pkt);
    efarm_pkt_set_connid(ep, st, pkt);
    efarm_pkt_set(pkt, EFARM_PKT_F_RMA_IOV_COUNT, n);
    pkt->rma_iov = wire;
}

void efarm_req_set_cq_data(struct efarm_pkt *pkt, uint64_t cq_data)
{
    pkt->flags |= EFARM_REQ_OPT_CQ_DATA_HDR;
    efarm_pkt_set(pkt, EFARM_PKT_F_CQ_DATA, cq_data);
}

/* One emulated segment: a REQ with its slice of the remote ranges and its data. */
static int send_segment(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_op *op)
{
    const struct efarm_rma_proto_row *info = &g_efarm_rma_protos[op->proto];
    uint64_t n =
        op->len - op->offset < op->rma.seg_bytes ? op->len - op->offset : op->rma.seg_bytes;
    struct efarm_rma_iov sl[EFARM_MAX_READ_IOV];
    uint8_t wire[EFARM_MAX_READ_IOV * sizeof(struct efarm_wire_rma_iov)];
    uint32_t k = riov_slice(op, op->offset, n, sl, EFARM_MAX_READ_IOV);
    uint64_t data = info->to_target ? n : 0;
    uint64_t nsegs_before = op->offset / op->rma.seg_bytes;
    struct efarm_txpkt *tx;
    struct efarm_pkt pkt;
    size_t hdr_len;
    int ret;

    if (info->compare)
        data = 2 * n;
    efarm_rma_req_init(ep, st, &pkt, op->req_type, sl, k, wire);
    if (op->flags & EFARM_OPF_CQ_DATA)
        efarm_req_set_cq_data(&pkt, op->rma.cq_data);
    if (info->elements)
        pkt.flags = (uint16_t)((pkt.flags & ~EFARM_REQ_RMA) | EFARM_REQ_ATOMIC);
    /* What its layout has (the codec's row): the reply's address, the read's length. */
    if (efarm_pkt_field_offset(op->req_type, EFARM_PKT_F_SEND_ID, NULL) >= 0)
        efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, op->id); /* DC: the RECEIPT names the op */
    if (efarm_pkt_field_offset(op->req_type, EFARM_PKT_F_RECV_ID, NULL) >= 0)
        efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_ID, op->id); /* READRSP, ATOMRSP name the op */
    if (efarm_pkt_field_offset(op->req_type, EFARM_PKT_F_MSG_LENGTH, NULL) >= 0)
        efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, n); /* SHORT_RTR: the bytes to read */
    if (info->elements) {
        efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_ID, op->msg_id + (uint32_t)nsegs_before);
        efarm_pkt_set(&pkt, EFARM_PKT_F_ATOMIC_DATATYPE, op->rma.atomic_dt);
        efarm_pkt_set(&pkt, EFARM_PKT_F_ATOMIC_OP, op->rma.atomic_op);
    }
    tx = efarm_txpkt_alloc(ep, false);
    if (tx == NULL)
        return -EAGAIN;
    ret = efarm_txpkt_encode(ep, tx, &pkt, &hdr_len);
    if (ret == 0 && hdr_len + data > ep->mtu)
        ret = -EMSGSIZE;
    if (ret) {
        efarm_txpkt_release(ep, tx);
        return ret;
    }
    if (info->to_target) {
        if (op->buf != NULL)
            memcpy(tx->buf + hdr_len, op->buf + op->offset, n);
        else
            memset(tx->buf + hdr_len, 0, n); /* ATOMIC_READ carries no operand */
        if (info->compare)
            memcpy(tx->buf + hdr_len + n, op->rma.compare + op->offset, n);
    }
    tx->len = (uint32_t)(hdr_len + data);
    tx->peer = op->peer;
    tx->op = op;
    tx->data_len = data;
    op->pkts_inflight++;
    if (info->rsp_type) {
        op->awaits |= EFARM_AWAIT_RSP;
        op->window_end = op->offset; /* the segment the response answers starts here */
    } else if (op->rma.dc) {
        op->rma.replies_owed++;
    }
    op->offset += n;
    op->rma.empty_sent = true;
    efarm_txpkt_send(ep, tx);
    return 0;
}

void efarm_rma_op_work(struct efarm_ep *ep, struct efarm_op *op)
{
    const struct efarm_peer_state *st = ep->peers[op->peer].st;
    const struct efarm_rma_proto_row *info = &g_efarm_rma_protos[op->proto];
    int ret = 0;

    if (efarm_peer_failed(st)) {
        efarm_rma_op_peer_failed(ep, op, st->fail_status);
        return;
    }
    while ((op->offset < op->len || (op->len == 0 && !op->rma.empty_sent)) && ret == 0) {
        if (info->direct)
            ret = post_rdma(ep, op);
        else if (op->awaits & EFARM_AWAIT_RSP)
            break;
        else
            ret = send_segment(ep, ep->peers[op->peer].st, op);
    }
    if (ret == -EAGAIN) {
        efarm_op_work(ep, op);
        return;
    }
    if (ret) {
        efarm_log(EFARM_LOG_ERROR, "cannot build a %s packet for peer %u: %s",
                  efarm_rma_proto_name(op->proto), op->peer, efarm_strerror(ret));
        if (op->status == 0)
            op->status = ret;
        op->offset = op->len;
        op->rma.empty_sent = true;
    }
    rma_op_check(ep, op);
}

/* ---- Starting -------------------------------------------------------------------------- */

/* Bytes of data one segment carries: what fits the request and its response, whole elements. */
static uint64_t seg_bytes(const struct efarm_ep *ep, const struct efarm_peer_state *st,
                          const struct efarm_op *op)
{
    const struct efarm_rma_proto_row *info = &g_efarm_rma_protos[op->proto];
    uint64_t hdr = efarm_req_hdr_len(st, op->req_type, op->flags & EFARM_OPF_CQ_DATA) +
                   (uint64_t)op->niov * sizeof(struct efarm_wire_rma_iov);
    uint64_t fit = ep->mtu > hdr ? ep->mtu - hdr : 0;

    if (info->compare)
        fit /= 2;
    if (!info->to_target)
        fit = ep->mtu - sizeof(struct efarm_wire_readrsp_hdr);
    if (info->rsp_type == EFARM_PKT_ATOMRSP &&
        fit > ep->mtu - sizeof(struct efarm_wire_atomrsp_hdr))
        fit = ep->mtu - sizeof(struct efarm_wire_atomrsp_hdr);
    if (info->elements)
        fit -= fit % efarm_atomic_dt_size(op->rma.atomic_dt);
    return fit;
}

void efarm_rma_op_begin(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_op *op)
{
    enum efarm_rma_want want = (enum efarm_rma_want)op->req_type; /* held there until now */
    const struct efarm_rma_proto_row *info;
    enum efarm_rma_proto proto;

    for (;;) {
        int ret;

        proto = rma_select(ep, st, op, want);
        info = &g_efarm_rma_protos[proto];
        if (info->reg == 0)
            break;
        ret = efarm_mr_cache_get(ep->mr_cache, op->buf, op->len, info->reg - 1u, &op->mr);
        if (ret == 0)
            break;
        /* Registration is a limited resource: the emulated protocols need none. */
        efarm_dev_reg_refused(ep->dev, op->len, ret, efarm_rma_proto_name(proto),
                              "RMA operations go by the emulated protocols (packets)");
        ep->cnt.reg_fallbacks++;
        op->mr.entry = NULL;
        op->flags |= EFARM_OPF_NO_REG; /* no rule that registers holds now */
    }
    op->proto = (uint8_t)proto;
    op->req->proto = (uint8_t)proto;
    op->req_type = op->rma.dc ? info->dc_type : info->type;
    ep->cnt.rma_forced += (ep->p.rma_force >> proto) & 1u;
    (*(uint64_t *)((char *)&ep->cnt + info->counter))++;
    if (op->rma.dc && !info->direct)
        ep->cnt.rma_dc++;
    if (info->role == EFARM_OP_WRITE_ORIGIN) {
        efarm_rtw_long_begin(ep, op, (enum efarm_proto_kind)info->msg_proto);
        return;
    }
    if (info->role == EFARM_OP_READ_ORIGIN) {
        efarm_rtr_long_begin(ep, op);
        return;
    }
    if (!info->direct) {
        op->rma.seg_bytes = (uint32_t)seg_bytes(ep, st, op);
        if (op->rma.seg_bytes == 0) {
            efarm_log(EFARM_LOG_ERROR,
                      "%u remote ranges leave no room for data in one %u-byte packet to peer %u",
                      op->niov, ep->mtu, op->peer);
            op->status = -EINVAL;
            op->offset = op->len;
        } else if (info->elements) {
            uint64_t nsegs = (op->len + op->rma.seg_bytes - 1) / op->rma.seg_bytes;

            op->msg_id = st->tx_msg_id;
            st->tx_msg_id += (uint32_t)nsegs;
        }
    }
    efarm_rma_op_work(ep, op);
}

/* Validate the remote ranges against len and copy them into the op. */
static int riov_take(struct efarm_op *op, const struct efarm_riov *riov, uint32_t nriov,
                     uint64_t len, uint32_t elem)
{
    uint64_t sum = 0;

    if (nriov == 0 || nriov > EFARM_RMA_MAX_IOV || riov == NULL)
        return -EINVAL;
    for (uint32_t i = 0; i < nriov; i++) {
        if (riov[i].len > UINT64_MAX - sum || riov[i].addr > UINT64_MAX - riov[i].len ||
            (elem > 1 && riov[i].len % elem))
            return -EINVAL;
        sum += riov[i].len;
        op->iov[i].addr = riov[i].addr;
        op->iov[i].len = riov[i].len;
        op->iov[i].key = riov[i].key;
    }
    op->niov = (uint8_t)nriov;
    return sum == len ? 0 : -EINVAL;
}

static int rma_start(struct efarm_ep *ep, efarm_peer_t peer, enum efarm_rma_want want, uint8_t *buf,
                     uint64_t len, const struct efarm_riov *riov, uint32_t nriov, uint32_t flags,
                     struct efarm_req *req, uint32_t elem, struct efarm_op **op_p)
{
    struct efarm_peer_state *st;
    struct efarm_op *op;
    int ret;

    *op_p = NULL;
    if (req == NULL || peer >= ep->npeers || (flags & ~(EFARM_RMA_DC | EFARM_RMA_NO_DIRECT)) ||
        (len && buf == NULL && want != EFARM_RMA_WANT_ATOMIC_FETCH))
        return -EINVAL;
    st = efarm_peer_state_get(ep, peer);
    if (st == NULL)
        return -ENOMEM;
    op = efarm_op_alloc(ep, EFARM_OP_RMA);
    if (op == NULL)
        return -EAGAIN;
    ret = riov_take(op, riov, nriov, len, elem);
    if (ret) {
        efarm_op_release(ep, op);
        return ret;
    }
    req->done = false;
    req->status = 0;
    req->length = 0;
    req->peer = peer;
    op->req = req;
    efarm_op_set_peer(ep, op, peer);
    op->buf = buf;
    op->len = len;
    op->rma.dc = (flags & EFARM_RMA_DC) != 0;
    op->req_type = (uint8_t)want; /* until begin picks the subprotocol */
    if (flags & EFARM_RMA_NO_DIRECT)
        op->flags |= EFARM_OPF_NO_DIRECT;
    *op_p = op;
    return 0;
}

/* After the op is filled: complete at once (failed peer, nothing to do) or begin. */
static void rma_go(struct efarm_ep *ep, struct efarm_op *op)
{
    struct efarm_peer_state *st = ep->peers[op->peer].st;

    if (efarm_peer_failed(st)) {
        efarm_req_complete(ep, op, op->req, st->fail_status);
        efarm_op_release(ep, op);
        return;
    }
    if (op->len == 0 && !(op->flags & EFARM_OPF_CQ_DATA)) {
        op->req->proto = EFARM_RMA_DIRECT_WRITE;
        efarm_req_complete(ep, op, op->req, 0);
        efarm_op_release(ep, op);
        return;
    }
    /* The HANDSHAKE says what RDMA the peer has; and ops waiting for it keep their order. */
    if (!(st->flags & EFARM_PS_HS_RECEIVED) || !efarm_list_empty(&st->hs_waiters)) {
        op->awaits |= EFARM_AWAIT_HS;
        efarm_list_append(&st->hs_waiters, &op->link);
        efarm_handshake_trigger_later(ep, st);
        return;
    }
    efarm_rma_op_begin(ep, st, op);
}

int efarm_write(struct efarm_ep *ep, efarm_peer_t peer, const void *buf, uint64_t len,
                const struct efarm_riov *riov, uint32_t nriov, uint32_t flags,
                struct efarm_req *req)
{
    struct efarm_op *op;
    int ret = rma_start(ep, peer, EFARM_RMA_WANT_WRITE, (uint8_t *)(uintptr_t)buf, len, riov, nriov,
                        flags, req, 1, &op);

    if (ret == 0)
        rma_go(ep, op);
    return ret;
}

int efarm_write_data(struct efarm_ep *ep, efarm_peer_t peer, const void *buf, uint64_t len,
                     const struct efarm_riov *riov, uint32_t nriov, uint32_t flags,
                     uint64_t cq_data, struct efarm_req *req)
{
    struct efarm_op *op;
    int ret;

    if (nriov != 1)
        return -EINVAL; /* one request, one range: as the long subprotocols carry */
    ret = rma_start(ep, peer, EFARM_RMA_WANT_WRITE, (uint8_t *)(uintptr_t)buf, len, riov, nriov,
                    flags, req, 1, &op);
    if (ret == 0) {
        op->flags |= EFARM_OPF_CQ_DATA;
        op->rma.cq_data = cq_data;
        rma_go(ep, op);
    }
    return ret;
}

int efarm_read(struct efarm_ep *ep, efarm_peer_t peer, void *buf, uint64_t len,
               const struct efarm_riov *riov, uint32_t nriov, uint32_t flags, struct efarm_req *req)
{
    struct efarm_op *op;
    int ret = rma_start(ep, peer, EFARM_RMA_WANT_READ, buf, len, riov, nriov, flags, req, 1, &op);

    if (ret == 0)
        rma_go(ep, op);
    return ret;
}

int efarm_atomic(struct efarm_ep *ep, efarm_peer_t peer, uint32_t op_id, uint32_t dt,
                 const void *operand, const void *compare, void *result, uint64_t count,
                 const struct efarm_riov *riov, uint32_t nriov, uint32_t flags,
                 struct efarm_req *req)
{
    enum efarm_atomic_kind kind = result == NULL    ? EFARM_ATOMIC_WRITE
                                  : compare != NULL ? EFARM_ATOMIC_COMPARE
                                                    : EFARM_ATOMIC_FETCH;
    static const enum efarm_rma_want wants[] = {
        EFARM_RMA_WANT_ATOMIC_WRITE, EFARM_RMA_WANT_ATOMIC_FETCH, EFARM_RMA_WANT_ATOMIC_CMP};
    uint32_t size = efarm_atomic_dt_size(dt);
    struct efarm_op *op;
    int ret;

    if (size == 0 || op_id >= EFARM_AOP_COUNT || (compare != NULL && result == NULL))
        return -EINVAL;
    if (!efarm_atomic_valid(kind, op_id, dt))
        return -EOPNOTSUPP;
    if (count > UINT64_MAX / size || (operand == NULL && op_id != EFARM_AOP_READ))
        return -EINVAL;
    ret = rma_start(ep, peer, wants[kind], (uint8_t *)(uintptr_t)operand, count * size, riov, nriov,
                    flags & ~EFARM_RMA_NO_DIRECT, req, size, &op);
    if (ret)
        return ret;
    op->rma.result = result;
    op->rma.compare = compare;
    op->rma.atomic_op = (uint8_t)op_id;
    op->rma.atomic_dt = (uint8_t)dt;
    rma_go(ep, op);
    return 0;
}

/* ---- Events -------------------------------------------------------------------------------- */

void efarm_rma_op_pkt_done(struct efarm_ep *ep, struct efarm_op *op, struct efarm_txpkt *tx,
                           int status)
{
    op->pkts_inflight--;
    if (status) {
        rma_op_error(op, status);
        /* A lost request gets no answer: stop waiting for it. */
        if (g_efarm_rma_protos[op->proto].rsp_type) {
            op->awaits &= ~EFARM_AWAIT_RSP;
        } else if (op->rma.dc && op->rma.replies_owed) {
            op->rma.replies_owed--;
        }
    } else if (!op->rma.dc && !g_efarm_rma_protos[op->proto].rsp_type) {
        op->done_bytes += tx->data_len;
    }
    rma_op_check(ep, op);
}

void efarm_rma_op_rdma_done(struct efarm_ep *ep, struct efarm_op *op,
                            const struct efarm_dev_cqe *cqe)
{
    if (op->reads_inflight == 0) {
        efarm_log(EFARM_LOG_ERROR, "RDMA completion the one-sided op did not post (wr_id %#llx)",
                  (unsigned long long)cqe->wr_id);
        return;
    }
    op->reads_inflight--;
    if (cqe->status) {
        efarm_log_ratelimited(EFARM_LOG_WARN, "RDMA %s at peer %u failed: %s (vendor error %u)",
                              g_efarm_rma_protos[op->proto].to_target ? "write" : "read", op->peer,
                              efarm_strerror(cqe->status), cqe->vendor_err);
        rma_op_error(op, cqe->status);
    } else {
        op->done_bytes += (cqe->wr_id & 0xffffffffu) >> 2;
    }
    rma_op_check(ep, op);
}

void efarm_rma_op_peer_failed(struct efarm_ep *ep, struct efarm_op *op, int status)
{
    if (op->flags & EFARM_OPF_IN_WORK) {
        efarm_list_remove(&op->link);
        op->flags &= ~EFARM_OPF_IN_WORK;
    }
    if (op->status == 0)
        op->status = status;
    /* Nothing more comes from the peer: no reply, no more packets to build. */
    op->offset = op->len;
    op->rma.replies_owed = 0;
    op->awaits &= ~EFARM_AWAIT_RSP;
    rma_op_check(ep, op);
}

void efarm_rma_op_receipt(struct efarm_ep *ep, struct efarm_op *op, const struct efarm_pkt *pkt)
{
    if (!op->rma.dc || op->rma.replies_owed == 0) {
        ep->cnt.stale_ids++;
        return;
    }
    op->rma.replies_owed--;
    if (pkt->flags & EFARM_RSP_FLAG_REFUSED)
        rma_op_error(op, EFARM_E(PROTO_RMA_REFUSED));
    rma_op_check(ep, op);
}

/* The READRSP or ATOMRSP of the op's outstanding segment: its data, or the refusal. */
static void rsp_recv(struct efarm_ep *ep, struct efarm_op *op, const struct efarm_pkt *pkt,
                     uint8_t type)
{
    efarm_peer_t peer = op->peer;
    uint64_t n;

    if (g_efarm_rma_protos[op->proto].rsp_type != type || !(op->awaits & EFARM_AWAIT_RSP)) {
        ep->cnt.stale_ids++;
        return;
    }
    n = op->offset - op->window_end;
    op->awaits &= ~EFARM_AWAIT_RSP;
    if (pkt->flags & EFARM_RSP_FLAG_REFUSED) {
        rma_op_error(op, EFARM_E(PROTO_RMA_REFUSED));
    } else if (pkt->value[EFARM_PKT_F_SEG_LENGTH] != n) {
        efarm_log_ratelimited(EFARM_LOG_WARN, "%s from peer %u carries %llu bytes, not %llu",
                              efarm_pkt_type_info(type)->name, peer,
                              (unsigned long long)pkt->value[EFARM_PKT_F_SEG_LENGTH],
                              (unsigned long long)n);
        rma_op_error(op, EFARM_E(PROTO_RMA_REFUSED));
    } else {
        uint8_t *dst = type == EFARM_PKT_READRSP ? op->buf : op->rma.result;

        memcpy(dst + op->window_end, pkt->payload, n);
        op->done_bytes += n;
    }
    if (op->offset < op->len)
        efarm_rma_op_work(ep, op);
    else
        rma_op_check(ep, op);
}

void efarm_rma_op_readrsp(struct efarm_ep *ep, struct efarm_op *op, const struct efarm_pkt *pkt)
{
    rsp_recv(ep, op, pkt, EFARM_PKT_READRSP);
}

/* A READRSP answers a SHORT_RTR segment (one-sided op) or starts a LONGCTS_RTR (receive op). */
void efarm_readrsp_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt)
{
    struct efarm_op *op = efarm_op_find_live(ep, (uint32_t)pkt->value[EFARM_PKT_F_RECV_ID], peer);

    if (op == NULL || efarm_op_role_ops(op)->readrsp == NULL) {
        ep->cnt.stale_ids++;
        return;
    }
    efarm_op_role_ops(op)->readrsp(ep, op, pkt);
}

void efarm_atomrsp_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt)
{
    struct efarm_op *op =
        efarm_op_find(ep, (uint32_t)pkt->value[EFARM_PKT_F_RECV_ID], EFARM_OP_RMA, peer);

    if (op == NULL) {
        ep->cnt.stale_ids++;
        return;
    }
    rsp_recv(ep, op, pkt, EFARM_PKT_ATOMRSP);
}
