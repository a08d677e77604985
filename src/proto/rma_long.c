/*
 * One-sided operations longer than one packet, in both roles (sections 3.3,
 * 4.3). Each runs on the message engine's long subprotocols, with the exposed
 * range or the caller's buffer as the message's buffer (msg_internal.h):
 *   origin of a long write   a send of the one remote range: LONGCTS_RTW
 *                            (DC_LONGCTS_RTW) or LONGREAD_RTW (efarm_rtw_long_begin);
 *   target of a long write   a receive into the exposed range (efarm_rtw_long_recv);
 *   origin of a long read    a long-CTS receive whose REQ is the LONGCTS_RTR
 *                            (efarm_rtr_long_begin, efarm_rtr_long_readrsp);
 *   target of a long read    a long-CTS send of the exposed range that starts
 *                            with a READRSP (efarm_rtr_long_recv).
 * rma.c chooses these for the origin; the packet rows (efarm_pkt_types.h) and
 * the op roles (proto_ops.c) route the target's packets and replies here.
 */
#include <errno.h>

#include "efarm_rma.h"
#include "msg_internal.h"
#include "proto_messages.h"
#include "proto_onesided.h"
#include "proto_ops.h"
#include "proto_receive.h"
#include "proto_transmit.h"

/* ---- This endpoint's long writes ------------------------------------------------------------ */

/*
 * A one-sided write too long for EAGER_RTW packets (rma.c chose it) becomes a
 * send of the one remote range: LONGCTS_RTW (DC_LONGCTS_RTW for remote
 * completion), CTSDATA per CTS, done when sent or at the RECEIPT; or
 * LONGREAD_RTW with the registered buffer's read_iov, done at the EOR (a
 * READ_NACK turns it into a data-less LONGCTS_RTW, as for messages). It takes
 * no msg_id: RTWs are not ordered.
 */
void efarm_rtw_long_begin(struct efarm_ep *ep, struct efarm_op *op, enum efarm_proto_kind proto)
{
    bool dc = op->rma.dc;

    efarm_op_set_role(op, EFARM_OP_WRITE_ORIGIN);
    op->flags = dc ? EFARM_OPF_DC : 0;
    op->owed = 0;
    op->awaits = 0;
    op->msg_id = 0;
    efarm_tx_proto_set(op, proto);
    efarm_tx_op_work(ep, op);
}

/* ---- Peers' long reads of exposed memory --------------------------------------------------- */

/*
 * LONGCTS_RTR (section 3.3): a peer reads more than one READRSP holds from
 * memory this endpoint exposed. Once its one rma_iov entry passed the region
 * check (read access, the whole range), the read is a long-CTS send of that
 * range with no request: a READRSP carrying our op's id and the first data,
 * CTSDATA up to the peer's recv_length, then one CTS round after another as
 * the peer asks. A refused read is answered by a data-less READRSP with the
 * REFUSED flag, as a SHORT_RTR is. Returns 0, or -EAGAIN when no operation
 * slot or send buffer is free (the caller keeps the packet and retries).
 */
int efarm_rtr_long_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt,
                        struct efarm_rxpkt *stored, uint32_t rx_id)
{
    uint64_t len = pkt->value[EFARM_PKT_F_MSG_LENGTH], grant = pkt->value[EFARM_PKT_F_RECV_LENGTH];
    struct efarm_rma_iov iov;
    struct efarm_op *op;
    uint8_t *src = NULL;
    int ret;

    (void)stored, (void)rx_id;
    if (ep->ntx_free == 0 || ep->nop_free == 0)
        return -EAGAIN; /* checked first: a refusal is counted once */

    if (pkt->value[EFARM_PKT_F_RMA_IOV_COUNT] != 1 || grant == 0) {
        ep->cnt.rma_refused++;
        ret = EFARM_E(PROTO_RMA_BOUNDS);
    } else {
        efarm_rma_iov_load(pkt->rma_iov, 0, &iov);
        if (iov.len != len || len == 0) {
            ep->cnt.rma_refused++;
            ret = EFARM_E(PROTO_RMA_BOUNDS);
        } else {
            ret = efarm_region_check(ep, iov.addr, iov.len, iov.key, EFARM_EXPOSE_READ, &src);
        }
    }
    if (ret) {
        struct efarm_pkt rsp;

        efarm_log_ratelimited(EFARM_LOG_WARN, "LONGCTS_RTR from peer %u refused: %s", peer,
                              efarm_strerror(ret));
        efarm_pkt_init(&rsp, EFARM_PKT_READRSP);
        rsp.flags |= EFARM_RSP_FLAG_REFUSED;
        efarm_pkt_set_connid(ep, ep->peers[peer].st, &rsp);
        efarm_pkt_set(&rsp, EFARM_PKT_F_RECV_ID, pkt->value[EFARM_PKT_F_RECV_ID]);
        efarm_pkt_set(&rsp, EFARM_PKT_F_SEND_ID, 0);
        efarm_pkt_set(&rsp, EFARM_PKT_F_SEG_LENGTH, 0);
        efarm_ctrl_send(ep, peer, NULL, &rsp);
        return 0;
    }
    op = efarm_op_alloc(ep, EFARM_OP_READ_TARGET);
    if (op == NULL)
        return -EAGAIN;
    efarm_op_set_peer(ep, op, peer);
    op->buf = src;
    op->len = len;
    efarm_msg_proto_set(op, EFARM_PROTO_LONGCTS);
    op->req_type = EFARM_PKT_LONGCTS_RTR;
    op->peer_op_id = (uint32_t)pkt->value[EFARM_PKT_F_RECV_ID];
    op->window_end = grant < len ? grant : len;
    op->owed = EFARM_OWE_REQ;
    ep->cnt.rma_served++;
    efarm_tx_op_work(ep, op);
    return 0;
}

/* ---- Peers' long writes into exposed memory --------------------------------------------- */

/*
 * LONGCTS_RTW, DC_LONGCTS_RTW and LONGREAD_RTW (sections 3.3, 4.3): a peer
 * writes more than one packet into memory this endpoint exposed. Once its one
 * rma_iov entry passed the region check (write access, the whole range), the
 * write is a receive operation whose buffer is that range, run as a message's
 * would be: CTS rounds and CTSDATA, or RDMA reads of the peer's read_iov and
 * EOR; RECEIPT for the DC type. Its role (EFARM_OP_WRITE_TARGET) matches
 * nothing and has no request: it ends when its data is in and its replies
 * are sent.
 *
 * A refused write (unknown key, out of bounds, not writable, a bad read_iov)
 * touches nothing, but its protocol still runs so that the origin finishes
 * rather than wait forever: CTS rounds whose data is dropped, no reads; its
 * EOR or RECEIPT carries efarm's REFUSED flag (an efarm origin fails the
 * operation; a plain LONGCTS_RTW, like a plain EAGER_RTW, has no answer in
 * protocol v4 and its refusal is only counted here). Returns 0, or -EAGAIN
 * when no operation slot is free (the caller keeps the packet and retries).
 */
int efarm_rtw_long_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt,
                        struct efarm_rxpkt *stored, uint32_t rx_id)
{
    const struct efarm_pkt_row *k = efarm_pkt_row(pkt->type);
    struct efarm_rma_iov iov;
    struct efarm_op *op;
    uint8_t *dst = NULL;
    int ret;

    (void)stored, (void)rx_id;
    if (ep->nop_free == 0)
        return -EAGAIN; /* checked first: a refusal is counted once */
    if (pkt->value[EFARM_PKT_F_RMA_IOV_COUNT] != 1) {
        ep->cnt.rma_refused++;
        ret = EFARM_E(PROTO_RMA_BOUNDS); /* one range served */
    } else {
        efarm_rma_iov_load(pkt->rma_iov, 0, &iov);
        if (iov.len != pkt->value[EFARM_PKT_F_MSG_LENGTH]) {
            ep->cnt.rma_refused++;
            ret = EFARM_E(PROTO_RMA_BOUNDS);
        } else {
            ret = efarm_region_check(ep, iov.addr, iov.len, iov.key, EFARM_EXPOSE_WRITE, &dst);
        }
    }
    op = efarm_op_alloc(ep, EFARM_OP_WRITE_TARGET);
    if (ret == 0) {
        ret = efarm_rx_op_init(ep, op, peer, pkt, k);
        if (ret)
            ep->cnt.rma_refused++;
    } else {
        efarm_rx_op_init(ep, op, peer, pkt,
                         k); /* what the replies need; its result no longer matters */
    }
    op->msg_id = 0; /* an RTW has none; its RECEIPT says 0 */
    if (ret) {
        efarm_log_ratelimited(EFARM_LOG_WARN, "%s from peer %u refused: %s",
                              efarm_pkt_type_info(pkt->type)->name, peer, efarm_strerror(ret));
        op->flags |= EFARM_OPF_REFUSED; /* no buffer: data dropped, replies say REFUSED */
    } else {
        op->buf = dst; /* the exposed range is its buffer */
        op->len = iov.len;
        ep->cnt.rma_served++;
    }
    efarm_rx_op_matched(ep, op, NULL, pkt);
    return 0;
}

/* ---- This endpoint's long reads ------------------------------------------------------------- */

/*
 * A one-sided read too long for one READRSP (rma.c chose LONGCTS_RTR) is a
 * long-CTS receive into the caller's buffer with the roles of section 3.3:
 * the LONGCTS_RTR names the one remote range and grants the first window
 * (recv_length, as the first CTS would); the target answers with a READRSP
 * carrying its send op's id and the first data, then CTSDATA; each later
 * window is a CTS, as for a message. The op is already matched (its request
 * is the caller's), so no packet of it is ever unexpected.
 */
void efarm_rtr_long_begin(struct efarm_ep *ep, struct efarm_op *op)
{
    uint64_t grant = (uint64_t)ep->p.rx_window * efarm_ctsdata_payload(ep);

    efarm_op_set_role(op, EFARM_OP_READ_ORIGIN);
    efarm_msg_proto_set(op, EFARM_PROTO_LONGCTS);
    op->req_type = EFARM_PKT_LONGCTS_RTR;
    op->flags = 0; /* the one-sided traits are rma.c's */
    op->owed = EFARM_OWE_REQ;
    op->awaits = EFARM_AWAIT_RSP;
    op->msg.msg_length = op->len;
    op->done_bytes = 0;
    op->offset = 0;
    op->window_end = grant < op->len ? grant : op->len;
    efarm_rx_op_work(ep, op);
}

int efarm_rtr_req_send(struct efarm_ep *ep, struct efarm_op *op)
{
    uint8_t wire[EFARM_RMA_MAX_IOV * sizeof(struct efarm_wire_rma_iov)];
    struct efarm_pkt pkt;

    efarm_rma_req_init(ep, ep->peers[op->peer].st, &pkt, EFARM_PKT_LONGCTS_RTR, op->iov, op->niov,
                       wire);
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, op->msg.msg_length);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_ID, op->id);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_LENGTH, op->window_end);
    return efarm_op_pkt_send(ep, op, &pkt, NULL, 0, NULL, 0);
}

/*
 * The target's READRSP: the first data of the first window (at offset 0) and
 * the id its CTSDATA and our CTS name; or, from an efarm target, the refusal.
 * CTSDATA of the same window may have come first (the device reorders).
 */
void efarm_rtr_long_readrsp(struct efarm_ep *ep, struct efarm_op *op, const struct efarm_pkt *pkt)
{
    uint64_t n = pkt->value[EFARM_PKT_F_SEG_LENGTH];

    if (!(op->awaits & EFARM_AWAIT_RSP) || op->state == EFARM_OPS_COMPLETED ||
        (op->owed & EFARM_OWE_REQ)) {
        ep->cnt.stale_ids++;
        return;
    }
    op->awaits &= ~EFARM_AWAIT_RSP;
    if ((pkt->flags & EFARM_RSP_FLAG_REFUSED) || n == 0 || n > op->window_end ||
        n > op->msg.msg_length) {
        if (!(pkt->flags & EFARM_RSP_FLAG_REFUSED))
            efarm_log_ratelimited(
                EFARM_LOG_WARN, "READRSP from peer %u carries %llu bytes of a %llu-byte window",
                op->peer, (unsigned long long)n, (unsigned long long)op->window_end);
        /* Nothing more of this read will be asked for; CTSDATA still coming is dropped. */
        op->status = EFARM_E(PROTO_RMA_REFUSED);
        op->done_bytes = op->msg.msg_length;
        op->window_end = 0;
        efarm_rx_op_check(ep, op);
        return;
    }
    op->peer_op_id = (uint32_t)pkt->value[EFARM_PKT_F_SEND_ID];
    efarm_rx_grant_data(ep, op, 0, pkt->payload, n);
}
