/*
 * Two-sided messages, receiver side: posting receives, matching, and what
 * every subprotocol's receive shares (sections 3.2, 4.1, 4.2, 4.5, 4.7).
 *
 * An in-order RTM first tries the posted receives. An eager message that
 * matches is copied into the user buffer and completed on the spot, in the
 * device's receive buffer: no allocation, no copy but the one into the user
 * buffer. Anything longer gets an operation, and once matched its row's
 * receiver start runs what follows (msg_longcts.c: CTS rounds; msg_read.c:
 * RDMA reads, or READ_NACK); medium and runt segments land at seg_offset as
 * they come, in any order.
 * DC messages answer with RECEIPT once the data is in the user buffer.
 *
 * A message that matches no receive waits as an unexpected record holding
 * its packets (copies, or held receive buffers under pressure), with no
 * operation; later packets of the same message join it. A receive posted
 * later, or a matched probe, takes an operation then (a plain eager message
 * needs none: it is copied from its packet) and replays the packets through
 * the same code as live packets.
 *
 * Everything from the wire is checked before use: lengths against the
 * message and the buffer (writes are clipped to the buffer; a longer message
 * completes with -EMSGSIZE after the whole protocol ran, so the sender
 * finishes too), ids against live operations of the right peer and state,
 * read_iov against the announced length.
 */
#include <errno.h>

#include "efarm_byteorder.h"
#include "efarm_rma.h"
#include "efarm_tm_inline.h"
#include "msg_fast_inline.h"
#include "msg_internal.h"
#include "proto_messages.h"
#include "proto_onesided.h"
#include "proto_ops.h"
#include "proto_peers.h"
#include "proto_receive.h"
#include "proto_transmit.h"

/*
 * What a REQ that carries data into a receive operation is comes from its row
 * (efarm_pkt_types.h): its subprotocol, tagged or not, DC or not, where its
 * data lies (RX_*, read_iov), and whether it is a message (rtm: matched
 * against receives) or a long write into exposed memory (rtw: LONGCTS_RTW,
 * LONGREAD_RTW, no matching).
 */
/* The row of a message REQ; NULL for every other packet type. */
static inline const struct efarm_pkt_row *rtm_row(uint8_t type)
{
    const struct efarm_pkt_row *k = efarm_pkt_row(type);

    return k->rtm ? k : NULL;
}

/* Decode a stored packet again (it decoded when it arrived, so this cannot fail). */
static void rxpkt_first_decode(const struct efarm_rxpkt *stored, struct efarm_pkt *pkt)
{
    int ret = efarm_pkt_decode(stored->data, stored->len, pkt);

    (void)ret;
}

/* ---- Control packets a receive sends -------------------------------------------------- */

/* Build and send one control packet for an op (or for no op: an eager RECEIPT). */
static int ctrl_send(struct efarm_ep *ep, efarm_peer_t peer, struct efarm_op *op,
                     struct efarm_pkt *pkt)
{
    efarm_pkt_set_connid(ep, ep->peers[peer].st, pkt);
    return efarm_ctrl_send(ep, peer, op, pkt);
}

static int receipt_send(struct efarm_ep *ep, efarm_peer_t peer, struct efarm_op *op,
                        uint32_t send_id, uint32_t msg_id)
{
    struct efarm_pkt pkt;

    efarm_pkt_init(&pkt, EFARM_PKT_RECEIPT);
    if (op != NULL && (op->flags & EFARM_OPF_REFUSED))
        pkt.flags |= EFARM_RSP_FLAG_REFUSED;
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, send_id);
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_ID, msg_id);
    return ctrl_send(ep, peer, op, &pkt);
}

/* Application bytes one CTSDATA packet carries at most (assuming the connid option). */
uint64_t efarm_ctsdata_payload(const struct efarm_ep *ep)
{
    return ep->mtu - sizeof(struct efarm_wire_ctsdata_hdr) - EFARM_OPT_FIELD_LEN;
}

static int cts_send(struct efarm_ep *ep, struct efarm_op *op)
{
    uint64_t left = op->msg.msg_length - op->done_bytes;
    uint64_t pkts = op->msg.credit_request && op->msg.credit_request < ep->p.rx_window
                        ? op->msg.credit_request
                        : ep->p.rx_window;
    uint64_t grant = pkts * efarm_ctsdata_payload(ep);
    struct efarm_pkt pkt;
    int ret;

    if (grant > left)
        grant = left;
    efarm_pkt_init(&pkt, EFARM_PKT_CTS);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, op->peer_op_id);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_ID, op->id);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_LENGTH, grant);
    ret = ctrl_send(ep, op->peer, op, &pkt);
    if (ret == 0) {
        op->offset = op->done_bytes; /* where this round's grant starts */
        op->window_end = grant;      /* bytes still to come in this round */
    }
    return ret;
}

static int eor_send(struct efarm_ep *ep, struct efarm_op *op)
{
    struct efarm_pkt pkt;

    efarm_pkt_init(&pkt, EFARM_PKT_EOR);
    if (op->flags & EFARM_OPF_REFUSED)
        pkt.flags |= EFARM_RSP_FLAG_REFUSED;
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, op->peer_op_id);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_ID, op->id);
    return ctrl_send(ep, op->peer, op, &pkt);
}

static int nack_send(struct efarm_ep *ep, struct efarm_op *op)
{
    struct efarm_pkt pkt;
    int ret;

    efarm_pkt_init(&pkt, EFARM_PKT_READ_NACK);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, op->peer_op_id);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_ID, op->id);
    ret = ctrl_send(ep, op->peer, op, &pkt);
    if (ret == 0)
        ep->cnt.read_nacks_sent++;
    return ret;
}

/* ---- Receive operations ----------------------------------------------------------------- */

/* Set up an op from the first REQ of its message. Returns 0 or a protocol error. */
int efarm_rx_op_init(struct efarm_ep *ep, struct efarm_op *op, efarm_peer_t peer,
                     const struct efarm_pkt *pkt, const struct efarm_pkt_row *k)
{
    const struct efarm_msg_proto *mp = g_efarm_msg_protos[k->proto];

    efarm_msg_proto_set(op, k->proto);
    op->req_type = pkt->type;
    efarm_op_set_peer(ep, op, peer);
    op->msg_id = (uint32_t)pkt->value[EFARM_PKT_F_MSG_ID];
    op->flags |= (k->tagged ? EFARM_OPF_TAGGED : 0) | (k->dc ? EFARM_OPF_DC : 0);
    op->msg.wire_tag = k->tagged ? pkt->value[EFARM_PKT_F_TAG] : 0;
    if (pkt->present & EFARM_PKT_HAS(CQ_DATA)) {
        op->flags |= EFARM_OPF_CQ_DATA;
        op->msg.cq_data = pkt->value[EFARM_PKT_F_CQ_DATA];
    }
    op->msg.msg_length = mp->whole ? pkt->payload_length : pkt->value[EFARM_PKT_F_MSG_LENGTH];
    op->peer_op_id = (uint32_t)pkt->value[EFARM_PKT_F_SEND_ID];
    op->msg.credit_request = (uint32_t)pkt->value[EFARM_PKT_F_CREDIT_REQUEST];
    op->msg.runt_length = pkt->value[EFARM_PKT_F_RUNT_LENGTH];
    if (mp->reads) {
        uint64_t n = pkt->value[EFARM_PKT_F_READ_IOV_COUNT], total = 0;

        if (n == 0 || n > EFARM_MAX_READ_IOV)
            return EFARM_E(PROTO_BAD_READ_IOV);
        op->niov = (uint8_t)n;
        for (uint32_t i = 0; i < n; i++) {
            struct efarm_rma_iov *iov = &op->iov[i];

            efarm_rma_iov_load(pkt->payload, i, iov); /* bounded by the decoder */
            if (iov->key > UINT32_MAX || iov->addr > UINT64_MAX - iov->len ||
                total > UINT64_MAX - iov->len)
                return EFARM_E(PROTO_BAD_READ_IOV);
            total += iov->len;
        }
        if (total < op->msg.msg_length)
            return EFARM_E(PROTO_BAD_READ_IOV);
    }
    return 0;
}

/* Where a packet's application data is, and at which message offset. */
void efarm_rx_pkt_data(const struct efarm_pkt *pkt, const uint8_t **data_p, uint64_t *offset_p,
                       uint64_t *len_p)
{
    const struct efarm_pkt_row *k = efarm_pkt_row(pkt->type);
    const uint8_t where = k->data;
    const uint8_t *data = pkt->payload;
    uint64_t len = pkt->payload_length, offset = 0;

    if (where & RX_ONLY_IOV) {
        len = 0;
    } else if (k->read_iov) {
        uint64_t iov_bytes =
            pkt->value[EFARM_PKT_F_READ_IOV_COUNT] * sizeof(struct efarm_wire_rma_iov);

        data += iov_bytes; /* bounded by the decoder */
        len -= iov_bytes;
    }
    if (where & RX_SEG_OFFSET)
        offset = pkt->value[EFARM_PKT_F_SEG_OFFSET];
    *data_p = data;
    *offset_p = offset;
    *len_p = len;
}

/* A packet's data into a matched op's buffer. */
static void rx_op_data(struct efarm_op *op, const struct efarm_pkt *pkt)
{
    const uint8_t *data;
    uint64_t offset, len;

    efarm_rx_pkt_data(pkt, &data, &offset, &len);
    copy_clip(op->buf, op->len, offset, data, len);
    op->done_bytes += len;
}

/*
 * Whether a later packet belongs to the message whose first REQ said `proto`,
 * msg_length and runt_length (an op's or an unexpected record's): a peer
 * could lie.
 */
static bool same_message(const struct efarm_pkt *pkt, uint8_t proto, uint64_t msg_length,
                         uint64_t runt_length)
{
    const struct efarm_pkt_row *k = rtm_row(pkt->type);

    return k != NULL && k->proto == proto && pkt->value[EFARM_PKT_F_MSG_LENGTH] == msg_length &&
           (!g_efarm_msg_protos[proto]->runt || pkt->value[EFARM_PKT_F_RUNT_LENGTH] == runt_length);
}

/*
 * Whether a receive op of this message joins the (peer, msg_id) map: its
 * later segments come, or the long-CTS REQ that answers a READ_NACK.
 */
static bool rx_op_mapped(const struct efarm_pkt_row *k)
{
    return g_efarm_msg_protos[k->proto]->segmented || g_efarm_msg_protos[k->proto]->reads;
}

/* A message receive takes the request that matched it, and its buffer. */
static void rx_op_take_req(struct efarm_op *op, struct efarm_req *req)
{
    op->req = req;
    op->buf = req->buf;
    op->len = req->buf_len;
}

/*
 * The op has its buffer (a matched receive's, or the exposed range of a
 * peer's long write): replay the packets that arrived before (`stored`, an
 * unexpected message's, released here) and `pkt`, the packet that matched,
 * if any; then start the protocol.
 */
void efarm_rx_op_matched(struct efarm_ep *ep, struct efarm_op *op, struct efarm_rxpkt *stored,
                         const struct efarm_pkt *pkt)
{
    struct efarm_peer_state *st = ep->peers[op->peer].st;

    while (stored != NULL) {
        struct efarm_rxpkt *next = stored->next;
        struct efarm_pkt spkt;

        if (efarm_pkt_decode(stored->data, stored->len, &spkt) == 0)
            rx_op_data(op, &spkt);
        efarm_rxpkt_release(ep, stored);
        stored = next;
    }
    if (pkt != NULL)
        rx_op_data(op, pkt);
    if (op->status == 0 && efarm_peer_failed(st) && op->done_bytes < op->msg.msg_length) {
        /* The rest would have to come from (or be asked of) a peer that failed. */
        efarm_rx_op_peer_failed(ep, op, st->fail_status);
        return;
    }
    if (op->status == 0) {
        if (efarm_msg_proto(op)->rx_start != NULL)
            efarm_msg_proto(op)->rx_start(ep, op);
    } else {
        /* A bad read_iov: nothing to read; complete with the error and release the sender. */
        op->done_bytes = op->msg.msg_length;
        if (efarm_msg_proto(op)->reads)
            op->owed |= EFARM_OWE_EOR;
    }
    efarm_rx_op_check(ep, op);
}

/* Complete the request when all data is in, owe the replies, release when all is sent. */
void efarm_rx_op_check(struct efarm_ep *ep, struct efarm_op *op)
{
    const uint8_t owed = EFARM_OWE_REPLIES | EFARM_OWE_READ;

    if (op->state != EFARM_OPS_COMPLETED && op->done_bytes >= op->msg.msg_length &&
        op->reads_inflight == 0 && !(op->owed & (EFARM_OWE_READ | EFARM_OWE_NACK))) {
        const struct efarm_op_role_ops *c = efarm_op_role_ops(op);
        int status = op->status;

        /* A long write we serve that failed says so in its EOR or RECEIPT (efarm's flag). */
        if (status && c->target)
            op->flags |= EFARM_OPF_REFUSED;
        if (op->flags & EFARM_OPF_REFUSED) {
            if (status == 0)
                status = EFARM_E(PROTO_RMA_REFUSED);
        } else if (status == 0 && op->msg.msg_length > op->len) {
            status = -EMSGSIZE;
            ep->cnt.truncated++;
        }
        if (efarm_msg_proto(op)->reads)
            op->owed |= EFARM_OWE_EOR; /* a read delivers: EOR is the receipt */
        else if (op->flags & EFARM_OPF_DC)
            op->owed |= EFARM_OWE_RCPT;
        if (op->flags & EFARM_OPF_MAPPED)
            efarm_op_map_remove(ep, op);
        if (c->target) {
            /* No request to tell: its refusal was counted (rma_refused). */
            efarm_op_set_state(op, EFARM_OPS_COMPLETED);
            if (status == 0 && (op->flags & EFARM_OPF_CQ_DATA))
                efarm_write_data_report(ep, op->peer, op->msg.cq_data, (uintptr_t)op->buf, op->len,
                                        false);
        } else {
            struct efarm_req *req = op->req;

            op->req = NULL;
            req_fill(req, op->peer, op->msg.wire_tag, op->flags & EFARM_OPF_TAGGED,
                     op->msg.msg_length, op->flags & EFARM_OPF_CQ_DATA, op->msg.cq_data);
            if (c->rma)
                req->length = status ? 0 : op->len; /* our long read (LONGCTS_RTR) */
            efarm_req_complete(ep, op, req, status);
        }
        if (op->owed & owed) {
            efarm_rx_op_work(ep, op);
            return; /* efarm_rx_op_work ends in another check */
        }
    }
    if (op->state == EFARM_OPS_COMPLETED && !(op->owed & owed) && op->pkts_inflight == 0 &&
        op->reads_inflight == 0)
        efarm_op_release(ep, op);
}

void efarm_rx_op_pkt_done(struct efarm_ep *ep, struct efarm_op *op)
{
    /*
     * A CTS that failed leaves the sender without a grant: nothing more will
     * come, so complete now with the error rather than wait forever.
     */
    if (op->status && op->state != EFARM_OPS_COMPLETED && efarm_msg_proto(op)->cts &&
        op->pkts_inflight == 0)
        op->done_bytes = op->msg.msg_length;
    efarm_rx_op_check(ep, op);
}

/*
 * The peer failed: nothing more comes from it and nothing goes to it. A
 * receive still waiting for data completes with the peer's error once its
 * reads are back; replies it still owes are dropped, and if the receive had
 * completed well the peer's send may be waiting for them: that is a loss no
 * request reports, and the endpoint fails (unless the peer's QP is gone).
 */
void efarm_rx_op_peer_failed(struct efarm_ep *ep, struct efarm_op *op, int status)
{
    const uint8_t sends = EFARM_OWE_REPLIES;

    if (op->flags & EFARM_OPF_IN_WORK) {
        efarm_list_remove(&op->link);
        op->flags &= ~EFARM_OPF_IN_WORK;
    }
    if (op->state != EFARM_OPS_COMPLETED) {
        if (op->status == 0)
            op->status = status;
        op->owed &= ~(sends | EFARM_OWE_READ);
        op->awaits &= ~EFARM_AWAIT_REQ;
        if (op->done_bytes < op->msg.msg_length)
            op->done_bytes = op->msg.msg_length;
    } else if (op->owed & sends) {
        op->owed &= ~sends;
        if (op->status == 0 && status != EFARM_E(DEV_REMOTE_QP))
            efarm_peer_fail(ep, op->peer, status, EFARM_PKT_EOR,
                            "a reply (EOR or RECEIPT) its send waits for");
    }
    efarm_rx_op_check(ep, op);
}

void efarm_rx_op_work(struct efarm_ep *ep, struct efarm_op *op)
{
    const struct efarm_peer_state *st = ep->peers[op->peer].st;
    bool blocked = false;

    if (efarm_peer_failed(st)) {
        efarm_rx_op_peer_failed(ep, op, st->fail_status);
        return;
    }
    if (op->owed & EFARM_OWE_REQ) {
        int ret = efarm_rtr_req_send(ep, op);

        if (ret == 0) {
            op->owed &= ~EFARM_OWE_REQ;
        } else if (ret == -EAGAIN) {
            blocked = true;
        } else {
            efarm_log(EFARM_LOG_ERROR, "cannot build LONGCTS_RTR for peer %u: %s", op->peer,
                      efarm_strerror(ret));
            op->status = ret;
            op->done_bytes = op->msg.msg_length;
            op->owed &= ~EFARM_OWE_REQ;
            op->awaits &= ~EFARM_AWAIT_RSP;
        }
    }
    if ((op->owed & EFARM_OWE_READ) && efarm_rx_post_reads(ep, op) == -EAGAIN)
        blocked = true;
    if (op->owed & EFARM_OWE_CTS) {
        if (cts_send(ep, op) == 0)
            op->owed &= ~EFARM_OWE_CTS;
        else
            blocked = true;
    }
    /* The runt must all be in before a READ_NACK (section 4.7). */
    if ((op->owed & EFARM_OWE_NACK) &&
        (!efarm_msg_proto(op)->runt || op->done_bytes >= op->msg.runt_length)) {
        if (nack_send(ep, op) == 0) {
            op->owed &= ~EFARM_OWE_NACK;
            if (efarm_op_role_ops(op)->target && !efarm_msg_proto(op)->runt) {
                /*
                 * A long-read write we serve holds nothing yet: the LONGCTS_RTW
                 * that answers it (with the READ_NACK flag or not) is a new
                 * write. This one is done, no EOR.
                 */
                efarm_msg_proto_set(op, efarm_msg_proto(op)->fallback);
                op->done_bytes = op->msg.msg_length;
                op->flags &= ~EFARM_OPF_CQ_DATA; /* reported by the new write, once */
            } else {
                /* The rest comes by the LONGCTS REQ that finds it in the map (msg_id, send_id). */
                op->awaits |= EFARM_AWAIT_REQ;
            }
        } else {
            blocked = true;
        }
    }
    if (op->owed & EFARM_OWE_EOR) {
        if (eor_send(ep, op) == 0)
            op->owed &= ~EFARM_OWE_EOR;
        else
            blocked = true;
    }
    if (op->owed & EFARM_OWE_RCPT) {
        if (receipt_send(ep, op->peer, op, op->peer_op_id, op->msg_id) == 0)
            op->owed &= ~EFARM_OWE_RCPT;
        else
            blocked = true;
    }
    if (blocked)
        efarm_op_work(ep, op);
    efarm_rx_op_check(ep, op);
}

/* ---- In-order REQs and their later packets ------------------------------------------ */

/* Keep a packet of an unexpected message with its record; returns what the caller must do. */
static int unexp_store(struct efarm_ep *ep, struct efarm_unexp *ux, const struct efarm_pkt *pkt,
                       struct efarm_rxpkt *stored, uint32_t rx_id)
{
    bool held = false;

    if (stored == NULL) {
        const uint8_t *data = pkt->payload - pkt->hdr_length;

        stored = efarm_rxpkt_store(ep, data, (uint32_t)(pkt->hdr_length + pkt->payload_length),
                                   rx_id, &held);
    } else {
        held = true; /* the caller must not release it: it is the record's now */
    }
    stored->next = NULL;
    if (ux->last != NULL)
        ux->last->next = stored;
    else
        ux->pkts = stored;
    ux->last = stored;
    return held ? EFARM_RX_KEEP : 0;
}

/* Count a stored segment's data; a message with nothing more to come leaves the map. */
static void unexp_seg_count(struct efarm_ep *ep, struct efarm_unexp *ux,
                            const struct efarm_pkt *pkt)
{
    const uint8_t *data;
    uint64_t offset, len, want;

    if (!g_efarm_msg_protos[ux->proto]->segmented)
        return;
    efarm_rx_pkt_data(pkt, &data, &offset, &len);
    ux->seg_bytes += len;
    want = g_efarm_msg_protos[ux->proto]->runt ? ux->runt_length : ux->msg_length;
    if (ux->seg_bytes >= want && (ux->flags & EFARM_UXF_MAPPED))
        efarm_unexp_map_remove(ep, ux);
}

static void eager_deliver(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt,
                          const struct efarm_pkt_row *k, struct efarm_req *req)
{
    int status = 0;

    req_fill(req, peer, k->tagged ? pkt->value[EFARM_PKT_F_TAG] : 0, k->tagged, pkt->payload_length,
             pkt->present & EFARM_PKT_HAS(CQ_DATA), pkt->value[EFARM_PKT_F_CQ_DATA]);
    copy_clip(req->buf, req->buf_len, 0, pkt->payload, pkt->payload_length);
    if (pkt->payload_length > req->buf_len) {
        status = -EMSGSIZE;
        ep->cnt.truncated++;
    }
    /* A control buffer was checked free before matching: the RECEIPT cannot be refused. */
    if (k->dc && !efarm_peer_failed(ep->peers[peer].st))
        receipt_send(ep, peer, NULL, (uint32_t)pkt->value[EFARM_PKT_F_SEND_ID],
                     (uint32_t)pkt->value[EFARM_PKT_F_MSG_ID]);
    efarm_req_complete(ep, NULL, req, status);
}

/* Whether receiving an unexpected message takes an operation (all but plain eager do). */
static bool unexp_needs_op(const struct efarm_unexp *ux)
{
    return !g_efarm_msg_protos[ux->proto]->whole || (ux->flags & EFARM_UXF_DC);
}

/*
 * A receive matched (or claimed and received) an unexpected message: deliver
 * a plain eager one from its stored packet, or give the message an operation
 * (the caller made sure one is free) and replay what is stored. The record
 * is released.
 */
static void unexp_receive(struct efarm_ep *ep, struct efarm_unexp *ux, struct efarm_req *req)
{
    struct efarm_rxpkt *stored = ux->pkts;
    struct efarm_pkt first;
    const struct efarm_pkt_row *k;
    struct efarm_op *op;

    rxpkt_first_decode(stored, &first);
    k = efarm_pkt_row(first.type);
    if (!unexp_needs_op(ux)) {
        eager_deliver(ep, ux->peer, &first, k, req);
        efarm_unexp_release(ep, ux);
        return;
    }
    op = efarm_op_alloc(ep, EFARM_OP_RX);
    op->status = efarm_rx_op_init(ep, op, ux->peer, &first, k);
    if (op->status)
        efarm_log_ratelimited(EFARM_LOG_WARN, "%s from peer %u: %s",
                              efarm_pkt_type_info(first.type)->name, ux->peer,
                              efarm_strerror(op->status));
    if (ux->flags & EFARM_UXF_MAPPED)
        efarm_unexp_map_remove(ep, ux);
    if (rx_op_mapped(k))
        efarm_op_map_insert(ep, op); /* later segments, or the long-CTS after a NACK */
    ux->pkts = ux->last = NULL;
    efarm_unexp_release(ep, ux);
    rx_op_take_req(op, req);
    efarm_rx_op_matched(ep, op, stored, NULL);
}

/* An in-order message that matched no receive: keep it with a record, no operation. */
static int unexp_arrive(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt,
                        const struct efarm_pkt_row *k, uint32_t context, int32_t source,
                        int32_t tag, struct efarm_rxpkt *stored, uint32_t rx_id)
{
    const struct efarm_msg_proto *mp = g_efarm_msg_protos[k->proto];
    struct efarm_unexp *ux;
    void *user = NULL;
    int ret;

    if (ep->p.max_unexpected && ep->unexp_live >= ep->p.max_unexpected)
        return -EAGAIN;
    ux = efarm_unexp_alloc(ep);
    if (ux == NULL)
        return -EAGAIN;
    ux->peer = peer;
    ux->msg_id = (uint32_t)pkt->value[EFARM_PKT_F_MSG_ID];
    ux->proto = k->proto;
    ux->flags |= (k->tagged ? EFARM_UXF_TAGGED : 0) | (k->dc ? EFARM_UXF_DC : 0);
    ux->wire_tag = k->tagged ? pkt->value[EFARM_PKT_F_TAG] : 0;
    ux->msg_length = mp->whole ? pkt->payload_length : pkt->value[EFARM_PKT_F_MSG_LENGTH];
    ux->runt_length = mp->runt ? pkt->value[EFARM_PKT_F_RUNT_LENGTH] : 0;
    ux->cq_data = 0;
    if (pkt->present & EFARM_PKT_HAS(CQ_DATA)) {
        ux->flags |= EFARM_UXF_CQ_DATA;
        ux->cq_data = pkt->value[EFARM_PKT_F_CQ_DATA];
    }
    ret = efarm_tm_arrive(ep->tm, context, source, tag, ux, &user);
    if (ret != EFARM_TM_QUEUED) {
        /* The caller saw no posted receive match: only a full matcher ends here. */
        efarm_unexp_release(ep, ux);
        return -EAGAIN;
    }
    ep->cnt.unexpected++;
    ux->arrival = ++*ep->arrival_clock;
    if (!k->tagged)
        ep->untagged_arrivals++;
    if (mp->segmented)
        efarm_unexp_map_insert(ep, ux); /* its other segments join it */
    ret = unexp_store(ep, ux, pkt, stored, rx_id);
    unexp_seg_count(ep, ux, pkt);
    return ret;
}

int efarm_rtm_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt,
                   struct efarm_rxpkt *stored, uint32_t rx_id)
{
    const struct efarm_pkt_row *k = rtm_row(pkt->type);
    uint32_t context;
    int32_t source, tag;
    struct efarm_op *op;
    void *user = NULL;
    int ret;

    if (k == NULL)
        return 0;
    msg_key(k->tagged ? pkt->value[EFARM_PKT_F_TAG] : 0, k->tagged, peer, &context, &source, &tag);
    /*
     * Everything matching may need must be there first: matching cannot be
     * undone. An eager DC message needs a control buffer for its RECEIPT,
     * anything longer that matches needs an operation; a message that
     * matches nothing needs neither.
     */
    if (g_efarm_msg_protos[k->proto]->whole) {
        if (k->dc && ep->ntx_free == 0)
            return -EAGAIN;
    } else if (ep->nop_free == 0) {
        if (efarm_tm_would_match(ep->tm, context, source, tag) > 0)
            return -EAGAIN;
        return unexp_arrive(ep, peer, pkt, k, context, source, tag, stored, rx_id);
    }
    ret = efarm_tm_match_posted(ep->tm, context, source, tag, &user);
    if (ret != EFARM_TM_MATCHED)
        return unexp_arrive(ep, peer, pkt, k, context, source, tag, stored, rx_id);
    if (g_efarm_msg_protos[k->proto]->whole) {
        eager_deliver(ep, peer, pkt, k, user);
        return 0;
    }
    op = efarm_op_alloc(ep, EFARM_OP_RX);
    op->status = efarm_rx_op_init(ep, op, peer, pkt, k);
    if (op->status)
        efarm_log_ratelimited(EFARM_LOG_WARN, "%s from peer %u: %s",
                              efarm_pkt_type_info(pkt->type)->name, peer,
                              efarm_strerror(op->status));
    if (rx_op_mapped(k))
        efarm_op_map_insert(ep, op); /* later segments, or the long-CTS after a NACK */
    rx_op_take_req(op, user);
    efarm_rx_op_matched(ep, op, NULL, pkt);
    return 0;
}

int efarm_rtm_segment(struct efarm_ep *ep, struct efarm_op *op, const struct efarm_pkt *pkt,
                      struct efarm_rxpkt *stored, uint32_t rx_id)
{
    (void)stored, (void)rx_id;
    if (op->state == EFARM_OPS_COMPLETED ||
        !same_message(pkt, op->proto, op->msg.msg_length, op->msg.runt_length)) {
        ep->cnt.stale_ids++;
        return 0;
    }
    rx_op_data(op, pkt);
    if (op->owed & EFARM_OWE_NACK)
        efarm_rx_op_work(ep, op); /* the runt may be complete now: the READ_NACK can go */
    else
        efarm_rx_op_check(ep, op);
    return 0;
}

int efarm_unexp_segment(struct efarm_ep *ep, struct efarm_unexp *ux, const struct efarm_pkt *pkt,
                        struct efarm_rxpkt *stored, uint32_t rx_id)
{
    int ret;

    if (!same_message(pkt, ux->proto, ux->msg_length, ux->runt_length)) {
        ep->cnt.stale_ids++;
        return 0;
    }
    ret = unexp_store(ep, ux, pkt, stored, rx_id);
    unexp_seg_count(ep, ux, pkt);
    return ret;
}

/*
 * Data of the current CTS grant (checked by the caller to lie inside it):
 * into the buffer, and once the grant is used up, the next CTS or the end.
 */
void efarm_rx_grant_data(struct efarm_ep *ep, struct efarm_op *op, uint64_t offset,
                         const uint8_t *data, uint64_t n)
{
    copy_clip(op->buf, op->len, offset, data, n);
    op->done_bytes += n;
    op->window_end -= n;
    if (op->window_end == 0 && op->done_bytes < op->msg.msg_length) {
        op->owed |= EFARM_OWE_CTS;
        efarm_rx_op_work(ep, op);
        return;
    }
    efarm_rx_op_check(ep, op);
}

void efarm_ctsdata_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt)
{
    struct efarm_op *op =
        efarm_op_find(ep, (uint32_t)pkt->value[EFARM_PKT_F_RECV_ID], EFARM_OP_RX, peer);
    uint64_t offset = pkt->value[EFARM_PKT_F_SEG_OFFSET], n = pkt->value[EFARM_PKT_F_SEG_LENGTH];

    /*
     * The data must lie inside the message and inside the current grant,
     * which runs from op->offset to done_bytes + window_end.
     */
    if (op == NULL || !efarm_msg_proto(op)->cts || op->state == EFARM_OPS_COMPLETED ||
        (op->owed & EFARM_OWE_CTS) || offset > op->msg.msg_length ||
        n > op->msg.msg_length - offset || n > op->window_end || offset < op->offset ||
        offset + n > op->done_bytes + op->window_end) {
        ep->cnt.stale_ids++;
        return;
    }
    efarm_rx_grant_data(ep, op, offset, pkt->payload, n);
}

/*
 * The data-less LONGCTS REQ (message or write) that answers our READ_NACK
 * (section 4.7): it joins the receive that sent the READ_NACK, found like its
 * segments (a message by msg_id, a write by send_id), which then grants the
 * rest by CTS from what it holds (the runt, or nothing). A message REQ that
 * finds none is stale; a write that finds none is a new write (the answer to
 * a long-read write's READ_NACK, which keeps nothing: false, `serve` takes it).
 */
bool efarm_longcts_nack_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt)
{
    const struct efarm_pkt_row *k = efarm_pkt_row(pkt->type);
    struct efarm_op *op = efarm_rx_op_lookup(ep, peer, pkt, k);

    if (op == NULL && k->rtw)
        return false;
    if (op == NULL || !(op->awaits & EFARM_AWAIT_REQ) ||
        pkt->value[EFARM_PKT_F_MSG_LENGTH] != op->msg.msg_length) {
        ep->cnt.stale_ids++;
        return true;
    }
    op->awaits &= ~EFARM_AWAIT_REQ;
    efarm_msg_proto_set(op, efarm_msg_proto(op)->fallback);
    op->peer_op_id = (uint32_t)pkt->value[EFARM_PKT_F_SEND_ID]; /* a write's: the same */
    op->msg.credit_request = (uint32_t)pkt->value[EFARM_PKT_F_CREDIT_REQUEST];
    if (k->dc)
        op->flags |= EFARM_OPF_DC;
    op->owed |= EFARM_OWE_CTS;
    efarm_rx_op_work(ep, op);
    return true;
}

/* ---- Posting receives, probes, cancel ------------------------------------------------- */

static void req_start(struct efarm_req *req, void *buf, uint64_t len)
{
    req->done = false;
    req->status = 0;
    req->length = 0;
    req->msg_length = 0;
    req->peer = EFARM_PEER_NONE;
    req->has_cq_data = false;
    req->buf = buf;
    req->buf_len = len;
    req->tm_handle = 0;
}

/* Post a receive; the request is written only once the receive is taken. */
static inline __attribute__((always_inline)) int recv_post(struct efarm_ep *ep, uint32_t context,
                                                           int32_t source, int32_t tag,
                                                           struct efarm_req *req, void *buf,
                                                           uint64_t len)
{
    efarm_tm_handle_t handle = 0;
    void *user = NULL;
    int ret;

    /* Matching cannot be undone: a waiting message that needs an operation needs a free one. */
    if (ep->nop_free == 0 && efarm_tm_probe(ep->tm, context, source, tag, &handle, &user) == 1 &&
        unexp_needs_op(user))
        return -EAGAIN;
    ret = efarm_tm_post_inl(ep->tm, context, source, tag, req, &handle, &user);
    if (ret == -ENOMEM)
        return -EAGAIN;
    if (ret < 0)
        return ret;
    req_start(req, buf, len);
    if (ret == EFARM_TM_QUEUED) {
        req->tm_handle = handle;
        return 0;
    }
    unexp_receive(ep, user, req);
    return 0;
}

int efarm_trecv(struct efarm_ep *ep, void *buf, uint64_t len, uint32_t context, int32_t source,
                int32_t tag, struct efarm_req *req)
{
    if (req == NULL || (len && buf == NULL) || context > EFARM_CONTEXT_MAX ||
        source < EFARM_ANY_SOURCE || source > EFARM_SOURCE_MAX || tag < EFARM_ANY_TAG ||
        tag > EFARM_TAG_MAX)
        return -EINVAL;
    return recv_post(ep, context, source, tag, req, buf, len);
}

int efarm_recv(struct efarm_ep *ep, void *buf, uint64_t len, efarm_peer_t peer,
               struct efarm_req *req)
{
    if (req == NULL || (len && buf == NULL) || (peer != EFARM_PEER_NONE && peer >= ep->npeers))
        return -EINVAL;
    return recv_post(ep, EFARM_CTX_MSG, peer == EFARM_PEER_NONE ? EFARM_ANY_SOURCE : (int32_t)peer,
                     0, req, buf, len);
}

/* Probe the matcher; fill *info from the waiting message and claim it if asked. */
static int probe(struct efarm_ep *ep, uint32_t context, int32_t source, int32_t tag, bool claim,
                 struct efarm_probe_info *info)
{
    efarm_tm_handle_t handle;
    struct efarm_unexp *ux;
    void *user;
    int ret = efarm_tm_probe(ep->tm, context, source, tag, &handle, &user);

    if (ret <= 0)
        return ret;
    ux = user;
    info->peer = ux->peer;
    msg_key(ux->wire_tag, ux->flags & EFARM_UXF_TAGGED, ux->peer, &info->context, &info->source,
            &info->tag);
    info->msg_length = ux->msg_length;
    info->has_cq_data = ux->flags & EFARM_UXF_CQ_DATA;
    info->cq_data = ux->cq_data;
    info->arrival = ux->arrival;
    info->handle = 0;
    if (claim) {
        efarm_tm_claim(ep->tm, handle, &user);
        ux->flags |= EFARM_UXF_CLAIMED;
        info->handle = efarm_unexp_handle(ux);
    }
    return 1;
}

int efarm_tprobe(struct efarm_ep *ep, uint32_t context, int32_t source, int32_t tag, bool claim,
                 struct efarm_probe_info *info)
{
    if (info == NULL || context > EFARM_CONTEXT_MAX || source < EFARM_ANY_SOURCE ||
        source > EFARM_SOURCE_MAX || tag < EFARM_ANY_TAG || tag > EFARM_TAG_MAX)
        return -EINVAL;
    return probe(ep, context, source, tag, claim, info);
}

int efarm_probe(struct efarm_ep *ep, efarm_peer_t peer, bool claim, struct efarm_probe_info *info)
{
    if (info == NULL || (peer != EFARM_PEER_NONE && peer >= ep->npeers))
        return -EINVAL;
    return probe(ep, EFARM_CTX_MSG, peer == EFARM_PEER_NONE ? EFARM_ANY_SOURCE : (int32_t)peer, 0,
                 claim, info);
}

const uint64_t *efarm_ep_untagged_arrivals(const struct efarm_ep *ep)
{
    return &ep->untagged_arrivals;
}

void efarm_ep_set_arrival_clock(struct efarm_ep *ep, uint64_t *clock)
{
    ep->arrival_clock = clock != NULL ? clock : &ep->own_clock;
}

int efarm_tmrecv(struct efarm_ep *ep, efarm_tm_handle_t handle, void *buf, uint64_t len,
                 struct efarm_req *req)
{
    struct efarm_unexp *ux;

    if (req == NULL || (len && buf == NULL))
        return -EINVAL;
    ux = efarm_unexp_find(ep, handle);
    if (ux == NULL || !(ux->flags & EFARM_UXF_CLAIMED))
        return -ENOENT;
    if (ep->nop_free == 0 && unexp_needs_op(ux))
        return -EAGAIN;
    req_start(req, buf, len);
    unexp_receive(ep, ux, req);
    return 0;
}

int efarm_cancel_recv(struct efarm_ep *ep, struct efarm_req *req)
{
    void *user;

    if (req == NULL || req->done || req->tm_handle == 0 ||
        efarm_tm_cancel(ep->tm, req->tm_handle, &user) != 0)
        return -ENOENT;
    req->tm_handle = 0;
    efarm_req_complete(ep, NULL, req, -ECANCELED);
    return 0;
}
