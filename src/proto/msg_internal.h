/*
 * The message engine's parts that one-sided long operations reuse
 * (rma_long.c): a peer's long write is run as a message receive into the
 * exposed range, a peer's long read as a long-CTS send from it, and this
 * endpoint's long read as a long-CTS receive. Defined in msg_recv.c and
 * msg_send.c; nothing outside these three files includes this header.
 */
#ifndef EFARM_MSG_INTERNAL_H
#define EFARM_MSG_INTERNAL_H

#include "proto_internal.h"

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
/* Data of the current CTS grant: into the buffer, then the next CTS or the end. */
void efarm_rx_grant_data(struct efarm_ep *ep, struct efarm_op *op, uint64_t offset,
                         const uint8_t *data, uint64_t n);

/* Sender side (msg_send.c). */

/* The sender takes `proto`: its REQ type, the REQ still to build, the reply it awaits. */
void efarm_tx_proto_set(struct efarm_op *op, enum efarm_proto_kind proto);

/* One-sided long operations (rma_long.c). */

/* The LONGCTS_RTR of this endpoint's long read (owed as its REQ). */
int efarm_rtr_req_send(struct efarm_ep *ep, struct efarm_op *op);

#endif /* EFARM_MSG_INTERNAL_H */
