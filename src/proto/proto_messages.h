/*
 * Two-sided messages as the rest of the engine calls them: the handlers of
 * their packets, the hooks of their operations' roles (msg_recv.c,
 * msg_send.c). What the message files share among themselves is
 * msg_internal.h.
 */
#ifndef EFARM_PROTO_MESSAGES_H
#define EFARM_PROTO_MESSAGES_H

#include "proto_internal.h"

/* msg_recv.c */
/*
 * The eager fast path's receiving half, on the device's current completion
 * (a successful receive into buffer rx_id, taken by the caller inside its
 * poll session): an EAGER_TAGRTM without optional headers (or with only the
 * connid header naming the peer's connid), from a peer known by its address
 * handle, in its turn, that a posted receive matches, is delivered as
 * rx_ordered and efarm_rtm_recv() would, without a decoded packet or a
 * completion record, and its buffer released. Returns true then; false, with
 * nothing changed, for anything else, which efarm_rx_completion takes.
 * Inline: efarm_rx_eager_fast in msg_fast_inline.h.
 */
int efarm_rtm_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt,
                   struct efarm_rxpkt *stored, uint32_t rx_id);
int efarm_rtm_segment(struct efarm_ep *ep, struct efarm_op *op, const struct efarm_pkt *pkt,
                      struct efarm_rxpkt *stored, uint32_t rx_id);
int efarm_unexp_segment(struct efarm_ep *ep, struct efarm_unexp *ux, const struct efarm_pkt *pkt,
                        struct efarm_rxpkt *stored, uint32_t rx_id);
void efarm_rx_op_peer_failed(struct efarm_ep *ep, struct efarm_op *op, int status);
void efarm_ctsdata_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt);
void efarm_read_completion(struct efarm_ep *ep, struct efarm_op *op,
                           const struct efarm_dev_cqe *cqe);
void efarm_rx_op_work(struct efarm_ep *ep, struct efarm_op *op);
void efarm_rx_op_pkt_done(struct efarm_ep *ep, struct efarm_op *op);
bool efarm_longcts_nack_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt);

/* msg_send.c */
void efarm_tx_op_work(struct efarm_ep *ep, struct efarm_op *op);
void efarm_tx_op_pkt_done(struct efarm_ep *ep, struct efarm_op *op, struct efarm_txpkt *pkt,
                          int status);
void efarm_cts_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt);
void efarm_eor_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt);
void efarm_receipt_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt);
void efarm_read_nack_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt);
void efarm_hs_waiters_release(struct efarm_ep *ep, struct efarm_peer_state *st);
void efarm_hs_waiters_fail(struct efarm_ep *ep, struct efarm_peer_state *st, int status);
void efarm_tx_op_peer_failed(struct efarm_ep *ep, struct efarm_op *op, int status);
void efarm_send_begin(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_op *op);
void efarm_tx_receipt(struct efarm_ep *ep, struct efarm_op *op, const struct efarm_pkt *pkt);
/* Header bytes of a REQ of this type to this peer: mandatory plus optional headers. */
uint64_t efarm_req_hdr_len(const struct efarm_peer_state *st, uint8_t type, bool cq_data);
/* Send pkt with `pre` (read_iov) and `data` for op in a fresh send buffer: 0, -EAGAIN, error. */
int efarm_op_pkt_send(struct efarm_ep *ep, struct efarm_op *op, const struct efarm_pkt *pkt,
                      const void *pre, uint32_t pre_len, const void *data, uint64_t n);

#endif /* EFARM_PROTO_MESSAGES_H */
