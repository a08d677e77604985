/*
 * One-sided operations as the rest of the engine calls them: the origin
 * (rma.c), the target of emulated requests (rma_target.c) and the long
 * operations run on the message engine (rma_long.c).
 */
#ifndef EFARM_PROTO_ONESIDED_H
#define EFARM_PROTO_ONESIDED_H

#include "proto_internal.h"

/* rma.c: one-sided operations, origin side */
void efarm_rma_op_work(struct efarm_ep *ep, struct efarm_op *op);
void efarm_rma_op_pkt_done(struct efarm_ep *ep, struct efarm_op *op, struct efarm_txpkt *tx,
                           int status);
void efarm_rma_op_rdma_done(struct efarm_ep *ep, struct efarm_op *op,
                            const struct efarm_dev_cqe *cqe);
void efarm_rma_op_peer_failed(struct efarm_ep *ep, struct efarm_op *op, int status);
void efarm_rma_op_begin(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_op *op);
void efarm_rma_op_receipt(struct efarm_ep *ep, struct efarm_op *op, const struct efarm_pkt *pkt);
void efarm_rma_op_readrsp(struct efarm_ep *ep, struct efarm_op *op, const struct efarm_pkt *pkt);
/*
 * Start a one-sided REQ of `type` for op: base fields, optional headers and
 * the remote ranges iov[0..n) encoded into `wire` (which must outlive the
 * encoding).
 */
void efarm_rma_req_init(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_pkt *pkt,
                        uint8_t type, const struct efarm_rma_iov *iov, uint32_t n, uint8_t *wire);
/* The REQ carries remote CQ data (its optional header). */
void efarm_req_set_cq_data(struct efarm_pkt *pkt, uint64_t cq_data);
void efarm_readrsp_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt);
void efarm_atomrsp_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt);

/* Response flag (efarm's, in the base header of READRSP, ATOMRSP, RECEIPT): refused. */
#define EFARM_RSP_FLAG_REFUSED 0x0100u

/* rma_target.c: peers' emulated one-sided requests */
/* Each an efarm_serve_fn: the `serve` of its rows in efarm_pkt_types.h. */
int efarm_rtw_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt,
                   struct efarm_rxpkt *stored, uint32_t rx_id);
int efarm_rtr_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt,
                   struct efarm_rxpkt *stored, uint32_t rx_id);
int efarm_rta_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt,
                   struct efarm_rxpkt *stored, uint32_t rx_id);
/* Keep an unordered request whose reply found no buffer; progress retries it in order. */
int efarm_rma_pending_keep(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_dev_cqe *cqe);
void efarm_rma_pending_progress(struct efarm_ep *ep);
void efarm_rma_pending_fini(struct efarm_ep *ep);
/* A peer's write with CQ data landed: tell the handler (efarm_ep_on_write_data). */
void efarm_write_data_report(struct efarm_ep *ep, efarm_peer_t peer, uint64_t cq_data,
                             uint64_t addr, uint64_t len, bool direct);
/* A receive WR a peer's RDMA write with immediate consumed (EFARM_DEV_OP_RECV_WRITE_IMM). */
void efarm_write_imm_recv(struct efarm_ep *ep, const struct efarm_dev_cqe *cqe);

/* rma_long.c: one-sided operations longer than one packet, on the message engine */
/* This endpoint's long write runs as a send: LONGCTS_RTW or LONGREAD_RTW. */
void efarm_rtw_long_begin(struct efarm_ep *ep, struct efarm_op *op, enum efarm_proto_kind proto);
/* This endpoint's long read (LONGCTS_RTR) runs as a long-CTS receive. */
void efarm_rtr_long_begin(struct efarm_ep *ep, struct efarm_op *op);
void efarm_rtr_long_readrsp(struct efarm_ep *ep, struct efarm_op *op, const struct efarm_pkt *pkt);
/* A peer's LONGCTS_RTW, DC_LONGCTS_RTW, LONGREAD_RTW run as receive operations. */
int efarm_rtw_long_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt,
                        struct efarm_rxpkt *stored, uint32_t rx_id);
/* A peer's LONGCTS_RTR runs as a long-CTS send of the exposed range. */
int efarm_rtr_long_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt,
                        struct efarm_rxpkt *stored, uint32_t rx_id);

#endif /* EFARM_PROTO_ONESIDED_H */
