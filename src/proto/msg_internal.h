/*
 * The message engine's parts shared by its files: the sender (msg_send.c),
 * the receiver (msg_recv.c), the subprotocols' files (msg_eager.c,
 * msg_longcts.c, msg_read.c) and the one-sided long operations that run on
 * the message engine (rma_long.c: a peer's long write is run as a message
 * receive into the exposed range, a peer's long read as a long-CTS send from
 * it, and this endpoint's long read as a long-CTS receive). Nothing outside
 * these files includes this header.
 */
#ifndef EFARM_MSG_INTERNAL_H
#define EFARM_MSG_INTERNAL_H

#include "efarm_rma.h"
#include "msg_proto.h"
#include "proto_internal.h"
#include "proto_ops.h"
#include "proto_receive.h"

/*
 * An op's two-sided subprotocol row (msg_proto.h). Code outside the rows
 * never compares an op's subprotocol: it reads its row
 * (efarm_msg_proto), and an op changes subprotocol only through
 * efarm_msg_proto_set (a READ_NACK, a refused registration, a long write's
 * fallback).
 */
static inline const struct efarm_msg_proto *efarm_msg_proto(const struct efarm_op *op)
{
    return g_efarm_msg_protos[op->proto];
}

/* The one place an op takes or changes its two-sided subprotocol. */
static inline void efarm_msg_proto_set(struct efarm_op *op, enum efarm_proto_kind proto)
{
    op->proto = (uint8_t)proto;
}

/* Receiver side (msg_recv.c). */

/* Application bytes one CTSDATA packet carries at most (assuming the connid option). */
uint64_t efarm_ctsdata_payload(const struct efarm_ep *ep);
/* Set up an op from the first REQ of its message. Returns 0 or a protocol error. */
int efarm_rx_op_init(struct efarm_ep *ep, struct efarm_op *op, efarm_peer_t peer,
                     const struct efarm_pkt *pkt, const struct efarm_pkt_row *k);
/* The op has its buffer: replay what arrived before, then start its protocol. */
void efarm_rx_op_matched(struct efarm_ep *ep, struct efarm_op *op, struct efarm_rxpkt *stored,
                         const struct efarm_pkt *pkt);
/* Complete the request when all data is in, owe the replies, release when all is sent. */
void efarm_rx_op_check(struct efarm_ep *ep, struct efarm_op *op);
/* Where a REQ's application data is (after any read_iov), and at which message offset. */
void efarm_rx_pkt_data(const struct efarm_pkt *pkt, const uint8_t **data_p, uint64_t *offset_p,
                       uint64_t *len_p);

/*
 * The receive op a later REQ of a message or a write belongs to, by its row:
 * a message receive by (peer, msg_id), a write we serve by (peer, send_id).
 * NULL: none waits for it.
 */
static inline struct efarm_op *efarm_rx_op_lookup(struct efarm_ep *ep, efarm_peer_t peer,
                                                  const struct efarm_pkt *pkt,
                                                  const struct efarm_pkt_row *k)
{
    if (k->rtw)
        return efarm_op_map_find(ep, EFARM_OP_WRITE_TARGET, peer,
                                 (uint32_t)pkt->value[EFARM_PKT_F_SEND_ID]);
    return efarm_op_map_find(ep, EFARM_OP_RX, peer, (uint32_t)pkt->value[EFARM_PKT_F_MSG_ID]);
}
/* Data of the current CTS grant: into the buffer, then the next CTS or the end. */
void efarm_rx_grant_data(struct efarm_ep *ep, struct efarm_op *op, uint64_t offset,
                         const uint8_t *data, uint64_t n);

/* The end of what the read protocols read: the message, clipped to the buffer. */
static inline uint64_t efarm_rx_read_end(const struct efarm_op *op)
{
    return op->msg.msg_length < op->len ? op->msg.msg_length : op->len;
}

/* Post RDMA reads of the sender's buffer while read slots last (msg_read.c): 0 or -EAGAIN. */
int efarm_rx_post_reads(struct efarm_ep *ep, struct efarm_op *op);

/* Sender side (msg_send.c). */

/* The sender takes `proto`: its REQ type, the REQ still to build, the reply it awaits. */
void efarm_tx_proto_set(struct efarm_op *op, enum efarm_proto_kind proto);

/* Room for the rma_iov of a one-sided write (one range: the long RTWs name one). */
typedef uint8_t efarm_rtw_wire_t[EFARM_RMA_MAX_IOV * sizeof(struct efarm_wire_rma_iov)];

/*
 * The fields and optional headers every RTM of this op carries; for a
 * one-sided write those of its RTW, whose rma_iov is encoded into `wire`.
 */
void efarm_req_init(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_op *op,
                    struct efarm_pkt *pkt, uint8_t type, uint8_t *wire);
/* The op's REQ header bytes; a one-sided write's include its rma_iov. */
uint64_t efarm_op_req_hdr_len(const struct efarm_peer_state *st, const struct efarm_op *op);
/* The data bytes one packet with hdr_len bytes of header carries, of `left`. */
static inline uint64_t efarm_tx_room(const struct efarm_ep *ep, uint64_t hdr_len, uint64_t left)
{
    uint64_t fit = ep->mtu - hdr_len;

    return left < fit ? left : fit;
}

/* One-sided long operations (rma_long.c). */

/* The LONGCTS_RTR of this endpoint's long read (owed as its REQ). */
int efarm_rtr_req_send(struct efarm_ep *ep, struct efarm_op *op);

#endif /* EFARM_MSG_INTERNAL_H */
