/*
 * Long-CTS (section 4.2): the sender's REQ carries the first MTU of data and
 * a credit request; the receiver, once matched, grants the rest by CTS rounds
 * of at most EFARM_RX_WINDOW packets, each answered by CTSDATA. The fallback
 * of the read protocols (READ_NACK, a refused registration: section 4.7):
 * then the REQ carries no data. A peer's long emulated read (LONGCTS_RTR)
 * and this endpoint's long writes (LONGCTS_RTW) run on it too (rma_long.c).
 * Its row: packet types, traits, builder, receiver start, selection rule and
 * profile rule (msg_proto.h).
 */
#include "msg_internal.h"
#include "proto_messages.h"
#include "proto_ops.h"
#include "proto_transmit.h"

/* CTSDATA packets a sender asks for in the REQ (credit_request). */
static uint32_t credits(const struct efarm_ep *ep, uint64_t left)
{
    uint64_t per = ep->mtu - sizeof(struct efarm_wire_ctsdata_hdr) - EFARM_OPT_FIELD_LEN;
    uint64_t want = (left + per - 1) / per;

    if (want > ep->p.cts_credits)
        want = ep->p.cts_credits;
    return want ? (uint32_t)want : 1;
}

static int build_longcts_req(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_op *op)
{
    uint64_t n = 0;
    struct efarm_pkt pkt;
    efarm_rtw_wire_t wire;
    int ret;

    efarm_req_init(ep, st, op, &pkt, op->req_type, wire);
    /* After a READ_NACK the REQ carries no data (section 4.7). */
    if (op->state == EFARM_OPS_NACKED)
        pkt.flags |= EFARM_REQ_READ_NACK;
    else
        n = efarm_tx_room(ep, efarm_op_req_hdr_len(st, op), op->len);
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, op->len);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, op->id);
    efarm_pkt_set(&pkt, EFARM_PKT_F_CREDIT_REQUEST, credits(ep, op->len - op->offset - n));
    ret = efarm_op_pkt_send(ep, op, &pkt, NULL, 0, op->buf, n);
    if (ret == 0) {
        op->offset += n;
        op->window_end = op->offset; /* nothing more until a CTS */
    }
    return ret;
}

static int build_ctsdata(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_op *op)
{
    while (op->offset < op->window_end) {
        struct efarm_pkt pkt;
        uint64_t hdr, n;
        int ret;

        efarm_pkt_init(&pkt, EFARM_PKT_CTSDATA);
        efarm_pkt_set_connid(ep, st, &pkt);
        hdr = sizeof(struct efarm_wire_ctsdata_hdr) +
              (pkt.flags & EFARM_PKT_FLAG_CONNID_HDR ? EFARM_OPT_FIELD_LEN : 0);
        n = efarm_tx_room(ep, hdr, op->window_end - op->offset);
        efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_ID, op->peer_op_id);
        efarm_pkt_set(&pkt, EFARM_PKT_F_SEG_LENGTH, n);
        efarm_pkt_set(&pkt, EFARM_PKT_F_SEG_OFFSET, op->offset);
        ret = efarm_op_pkt_send(ep, op, &pkt, NULL, 0, op->buf + op->offset, n);
        if (ret)
            return ret;
        op->offset += n;
    }
    return 0;
}

/*
 * The first packet of a peer's long emulated read (LONGCTS_RTR): a READRSP
 * with our op's id (the peer's CTS rounds name it) and the first segment.
 */
static int build_readrsp(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_op *op)
{
    struct efarm_pkt pkt;
    uint64_t n;
    int ret;

    efarm_pkt_init(&pkt, EFARM_PKT_READRSP);
    efarm_pkt_set_connid(ep, st, &pkt);
    n = efarm_tx_room(ep, sizeof(struct efarm_wire_readrsp_hdr), op->window_end - op->offset);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_ID, op->peer_op_id);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, op->id);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEG_LENGTH, n);
    ret = efarm_op_pkt_send(ep, op, &pkt, NULL, 0, op->buf + op->offset, n);
    if (ret)
        return ret;
    op->offset += n;
    op->owed &= ~EFARM_OWE_REQ;
    return build_ctsdata(ep, st, op); /* the rest of the first grant */
}

/*
 * Long-CTS: the REQ with the first data (none after a READ_NACK), then
 * CTSDATA for each grant. A peer's long emulated read (LONGCTS_RTR) runs on
 * it too, its first packet a READRSP.
 */
static int build_longcts(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_op *op)
{
    if (!(op->owed & EFARM_OWE_REQ))
        return build_ctsdata(ep, st, op);
    if (efarm_op_role_ops(op)->target)
        return build_readrsp(ep, st, op);
    return build_longcts_req(ep, st, op);
}

/* Long-CTS, once matched: the first CTS, unless the REQ carried the whole message. */
static void rx_start_cts(struct efarm_ep *ep, struct efarm_op *op)
{
    if (op->done_bytes < op->msg.msg_length) {
        op->owed |= EFARM_OWE_CTS;
        efarm_rx_op_work(ep, op);
    }
}

const struct efarm_msg_proto efarm_msg_proto_longcts = {
    .type = {{EFARM_PKT_LONGCTS_MSGRTM, EFARM_PKT_LONGCTS_TAGRTM},
             {EFARM_PKT_DC_LONGCTS_MSGRTM, EFARM_PKT_DC_LONGCTS_TAGRTM}},
    .rtw = {EFARM_PKT_LONGCTS_RTW, EFARM_PKT_DC_LONGCTS_RTW},
    .counter = offsetof(struct efarm_counters, proto_longcts),
    .cts = true,
    .build = build_longcts,
    .rx_start = rx_start_cts,
    /* Whatever nothing before it took, if more than one packet (a REQ leaves data to grant). */
    .select = {.fit = EFARM_FIT_BEYOND_PKT},
    /* The rival of the others' races; no threshold of its own. */
    .profile = {.curve = true},
};
