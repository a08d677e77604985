/*
 * One-sided operations longer than one packet, in both roles (sections 3.3,
 * 4.3). Each runs on the message engine's long subprotocols, with the exposed
 * range or the caller's buffer as the message's buffer (msg_internal.h):
 *   origin of a long write   a send of the one remote range: LONGCTS_RTW
 *                            (DC_LONGCTS_RTW) or LONGREAD_RTW (efarm_rtw_long_begin);
 *   target of a long write   a receive into the exposed range (efarm_rtw_long_recv):
 *                            LONGCTS_RTW, DC_LONGCTS_RTW, LONGREAD_RTW, and the runt
 *                            writes RUNTCTS_RTW, RUNTREAD_RTW (their runt packets
 *                            joined by the peer's send_id, kept until the runt is
 *                            whole, then replayed as a matched message's are);
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
#include "proto_peers.h"
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
    uint32_t cq = op->flags & EFARM_OPF_CQ_DATA;
    uint64_t cq_data = op->rma.cq_data;

    efarm_op_set_role(op, EFARM_OP_WRITE_ORIGIN);
    op->flags = (dc ? EFARM_OPF_DC : 0) | cq;
    op->msg.cq_data = cq_data; /* its REQ carries it (efarm_req_init) */
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

/* The slice of the runt a runt packet carries: [*off_p, *off_p + *len_p). */
static void runt_slice(const struct efarm_pkt *pkt, uint64_t *off_p, uint64_t *len_p)
{
    const uint8_t *data;

    efarm_rx_pkt_data(pkt, &data, off_p, len_p);
}

/* Whether two runt packets name one write: type, lengths, remote range, read_iov. */
static bool runt_same_write(const struct efarm_pkt *a, const struct efarm_pkt *b)
{
    uint64_t n = a->value[EFARM_PKT_F_RMA_IOV_COUNT];

    if (a->type != b->type ||
        a->value[EFARM_PKT_F_MSG_LENGTH] != b->value[EFARM_PKT_F_MSG_LENGTH] ||
        a->value[EFARM_PKT_F_RUNT_LENGTH] != b->value[EFARM_PKT_F_RUNT_LENGTH] ||
        n != b->value[EFARM_PKT_F_RMA_IOV_COUNT] ||
        memcmp(a->rma_iov, b->rma_iov, n * sizeof(struct efarm_wire_rma_iov)) != 0)
        return false; /* the decoder bounded both arrays by their packets */
    if (!efarm_pkt_row(a->type)->read_iov)
        return true;
    n = a->value[EFARM_PKT_F_READ_IOV_COUNT];
    return n == b->value[EFARM_PKT_F_READ_IOV_COUNT] &&
           memcmp(a->payload, b->payload, n * sizeof(struct efarm_wire_rma_iov)) == 0;
}

/*
 * A runt write refused after it began (a packet that disagrees with its
 * first): nothing of it will be written, its protocol runs on; counted once.
 */
static void runt_refuse(struct efarm_ep *ep, struct efarm_op *op, const struct efarm_pkt *pkt)
{
    if (!(op->flags & EFARM_OPF_REFUSED)) {
        ep->cnt.rma_refused++;
        efarm_log_ratelimited(EFARM_LOG_WARN,
                              "%s from peer %u (send_id %#x) refused: a runt packet of the write "
                              "disagrees with its first (type, lengths, remote range, read_iov) "
                              "or overlaps another of its runt",
                              efarm_pkt_type_info(pkt->type)->name, op->peer, op->peer_op_id);
    }
    op->flags |= EFARM_OPF_REFUSED;
    op->buf = NULL;
    op->len = 0;
}

/*
 * The runt is whole: its stored packets and `last` (the one that completed
 * it, or NULL) land in the range as a matched message's replayed packets do,
 * then the rest runs as the row's subprotocol says (CTS from runt_length, or
 * reads of the rest). A refused write writes none of it, and runs on as if
 * the runt were in.
 */
static void runt_whole(struct efarm_ep *ep, struct efarm_op *op, const struct efarm_pkt *last)
{
    struct efarm_rxpkt *stored = op->msg.runt_pkts;

    op->flags &= ~EFARM_OPF_RUNT;
    op->msg.runt_pkts = NULL;
    if (op->flags & EFARM_OPF_REFUSED) {
        while (stored != NULL) {
            struct efarm_rxpkt *next = stored->next;

            efarm_rxpkt_release(ep, stored);
            stored = next;
        }
        op->done_bytes = op->msg.runt_length;
        efarm_rx_op_matched(ep, op, NULL, NULL);
        return;
    }
    op->done_bytes = 0; /* counted again as the slices land */
    ep->cnt.rma_served++;
    efarm_rx_op_matched(ep, op, stored, last);
}

/*
 * A runt packet of the write op (its first one too): checked against the
 * write's first packet and the slices it holds, then kept with the op (a copy
 * or the held receive buffer, as an unexpected message's are) until the runt
 * is whole. A repeated slice, or one once the runt is whole, is stale; one
 * that disagrees with the first or overlaps another slice refuses the write,
 * and its bytes count towards the runt so that the write still ends. Returns
 * 0 or EFARM_RX_KEEP (the op took the packet).
 */
static int runt_take(struct efarm_ep *ep, struct efarm_op *op, const struct efarm_pkt *pkt,
                     struct efarm_rxpkt *stored, uint32_t rx_id)
{
    const struct efarm_peer_state *st = ep->peers[op->peer].st;
    uint64_t off, len, want = op->msg.runt_length;
    struct efarm_rxpkt **tail = &op->msg.runt_pkts;
    bool bad = false, held = true;

    if (!(op->flags & EFARM_OPF_RUNT)) {
        ep->cnt.stale_ids++; /* its runt is whole: a copy, or a packet past its time */
        return 0;
    }
    if (efarm_peer_failed(st)) {
        efarm_rx_op_peer_failed(ep, op, st->fail_status); /* the rest cannot come */
        return 0;
    }
    runt_slice(pkt, &off, &len);
    for (; *tail != NULL; tail = &(*tail)->next) {
        uint64_t s_off, s_len;
        struct efarm_pkt s;

        if (efarm_pkt_decode((*tail)->data, (*tail)->len, &s) != 0)
            continue; /* it decoded when it arrived */
        if (tail == &op->msg.runt_pkts && !runt_same_write(&s, pkt))
            bad = true;
        runt_slice(&s, &s_off, &s_len);
        if (!bad && s_off == off && s_len == len) {
            ep->cnt.stale_ids++; /* a slice it holds */
            return 0;
        }
        if (off < s_off + s_len && s_off < off + len)
            bad = true;
    }
    if (bad) {
        runt_refuse(ep, op, pkt);
        op->done_bytes += len < want - op->done_bytes ? len : want - op->done_bytes;
        if (op->done_bytes >= want)
            runt_whole(ep, op, NULL);
        return 0;
    }
    op->done_bytes += len; /* slices lie inside the runt (the codec) and do not overlap */
    if (op->done_bytes >= want) {
        runt_whole(ep, op, pkt);
        return 0;
    }
    if (stored == NULL)
        stored = efarm_rxpkt_store(ep, pkt->payload - pkt->hdr_length,
                                   (uint32_t)(pkt->hdr_length + pkt->payload_length), rx_id, &held);
    stored->next = NULL;
    *tail = stored;
    return held ? EFARM_RX_KEEP : 0;
}

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
 * RUNTCTS_RTW and RUNTREAD_RTW (addenda; rows with their data at seg_offset)
 * are the same writes whose first runt_length bytes come in runt packets,
 * each a slice at seg_offset naming the same send_id, lengths, rma_iov (and
 * read_iov), in any order; then CTS rounds from runt_length (as LONGCTS_RTW)
 * or reads of the rest and EOR (as LONGREAD_RTW; READ_NACK to a peer that
 * takes it, and the data-less LONGCTS_RTW with the READ_NACK flag and the
 * same send_id that answers joins the write: efarm_longcts_nack_recv). The
 * first packet to arrive makes the op, checked as any long write, filed under
 * (peer, send_id) until the write ends; every later one is checked against
 * it (runt_take), and none is written before the runt is whole and agrees.
 * SRD delivers a packet once: a copy that comes after the write ended cannot
 * be told from a new write reusing its send_id (libfabric's are pool
 * indexes), and is taken as one.
 *
 * A refused write (unknown key, out of bounds, not writable, a bad read_iov,
 * runt packets that disagree) touches nothing, but its protocol still runs so
 * that the origin finishes rather than wait forever: CTS rounds whose data is
 * dropped, no reads; its EOR or RECEIPT carries efarm's REFUSED flag (an
 * efarm origin fails the operation; a plain LONGCTS_RTW or RUNTCTS_RTW, like
 * a plain EAGER_RTW, has no answer in protocol v4 and its refusal is only
 * counted here). A write is counted once, served or refused. Returns 0,
 * EFARM_RX_KEEP (a runt write kept the packet), or -EAGAIN when no operation
 * slot is free (the caller keeps the packet and retries).
 */
int efarm_rtw_long_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt,
                        struct efarm_rxpkt *stored, uint32_t rx_id)
{
    const struct efarm_pkt_row *k = efarm_pkt_row(pkt->type);
    const bool runt = k->data & RX_SEG_OFFSET;
    struct efarm_rma_iov iov;
    struct efarm_op *op;
    uint8_t *dst = NULL;
    int ret;

    if (runt && (op = efarm_rx_op_lookup(ep, peer, pkt, k)) != NULL)
        return runt_take(ep, op, pkt, stored, rx_id);
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
        ep->cnt.rma_served += !runt; /* a runt write's once its runt is whole */
    }
    if (runt) {
        op->flags |= EFARM_OPF_RUNT;
        efarm_op_map_insert(ep, op); /* under (peer, send_id) */
        return runt_take(ep, op, pkt, stored, rx_id);
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
