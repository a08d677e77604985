/*
 * Sending packets (proto_tx.c): send buffers, posting in order, RNR
 * back-off, send completions, control packets.
 */
#ifndef EFARM_PROTO_TRANSMIT_H
#define EFARM_PROTO_TRANSMIT_H

#include "proto_internal.h"
#include "proto_peers.h"

/* proto_tx.c */
int efarm_tx_init(struct efarm_ep *ep);
void efarm_tx_fini(struct efarm_ep *ep);
/* Something waits on one of the lists efarm_ep_progress serves (struct efarm_ep, pending). */
static inline void efarm_ep_pending(struct efarm_ep *ep)
{
    ep->pending = true;
}

/* A send buffer, or NULL: the last tx_reserve are for control packets. */
static inline struct efarm_txpkt *efarm_txpkt_alloc(struct efarm_ep *ep, bool control)
{
    struct efarm_txpkt *tx;

    if (ep->ntx_free == 0 || (!control && ep->ntx_free <= ep->tx_reserve))
        return NULL;
    tx = &ep->txpkts[ep->tx_free[--ep->ntx_free]];
    tx->op = NULL;
    tx->data_len = 0;
    tx->queued = 0;
    tx->injected = 0;
    return tx;
}

static inline void efarm_txpkt_release(struct efarm_ep *ep, struct efarm_txpkt *tx)
{
    tx->op = NULL;
    tx->peer = EFARM_PEER_NONE; /* nothing posted with its peer's address handle */
    ep->tx_free[ep->ntx_free++] = tx->index;
}

/* A packet efarm_txpkt_post did not post (ret): queued on -EAGAIN, else failed. */
void efarm_txpkt_unposted(struct efarm_ep *ep, struct efarm_txpkt *tx, int ret);

/*
 * Post a built packet to its peer now: 0, or the device's -EAGAIN (queue
 * full) or error, with nothing done. Callers keep the posting order (nothing
 * on tx_queue) and the peer's back-off; efarm_txpkt_send does both.
 */
static inline __attribute__((always_inline)) int efarm_txpkt_post(struct efarm_ep *ep,
                                                                  struct efarm_txpkt *tx)
{
    const struct efarm_peer *p = &ep->peers[tx->peer];
    int ret = efarm_peer_ah_ready(ep, tx->peer);

    if (ret < 0)
        return ret;
    ret = efarm_dev_post_send1_inl(ep->dev, p->ah, p->qpn, p->connid,
                                   (uint64_t)tx->index << 2 | EFARM_WR_TXPKT, tx->buf, tx->len,
                                   ep->tx_lkey);
    if (ret < 0)
        return ret;
    ep->cnt.tx_pkts++;
    ep->cnt.tx_by_type[tx->type]++;
    if (ep->observe)
        efarm_observe_tx(ep, tx);
    return 0;
}

/*
 * Send a built packet: held while its peer is in RNR back-off, queued behind
 * packets already waiting (a full queue does not reorder posting), else
 * posted now. Inline: the eager fast path's send is this call.
 */
static inline __attribute__((always_inline)) void efarm_txpkt_send(struct efarm_ep *ep,
                                                                   struct efarm_txpkt *tx)
{
    struct efarm_peer_state *st = ep->peers[tx->peer].st;
    int ret;

    if (st->flags & EFARM_PS_IN_BACKOFF) {
        tx->queued = 1;
        efarm_list_append(&st->rnr_queue, &tx->link);
        return;
    }
    if (tx->type >= EFARM_PKT_REQ_BEGIN)
        st->flags |= EFARM_PS_REQ_SENT;
    ret = efarm_list_empty(&ep->tx_queue) ? efarm_txpkt_post(ep, tx) : -EAGAIN;
    if (ret != 0)
        efarm_txpkt_unposted(ep, tx, ret);
}
void efarm_tx_completion_general(struct efarm_ep *ep, const struct efarm_dev_cqe *cqe);

/*
 * The successful send-queue completion wr_id, when it is an injected send's
 * packet: its buffer goes back (txpkt_done's case) without a call, and true.
 * Anything else (false) is efarm_tx_completion_general's.
 */
static inline __attribute__((always_inline)) bool efarm_tx_done_fast(struct efarm_ep *ep,
                                                                     uint64_t wr_id)
{
    struct efarm_txpkt *tx;
    struct efarm_peer_state *st;

    if ((wr_id & EFARM_WR_KIND) != EFARM_WR_TXPKT || (wr_id >> 2) >= ep->p.tx_pkts)
        return false;
    tx = &ep->txpkts[wr_id >> 2];
    if (!tx->injected)
        return false;
    st = ep->peers[tx->peer].st;
    st->rnr_streak = 0;
    if (st->sends_inflight)
        st->sends_inflight--;
    efarm_txpkt_release(ep, tx);
    return true;
}
void efarm_tx_progress(struct efarm_ep *ep);
void efarm_tx_drop_peer(struct efarm_ep *ep, struct efarm_peer_state *st);
void efarm_pkt_set_connid(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_pkt *pkt);
void efarm_pkt_set_raw_addr(const struct efarm_ep *ep, struct efarm_pkt *pkt);
/*
 * Encode a control packet (HANDSHAKE, CTS, EOR, ...) into a send buffer and
 * send it; -EAGAIN when no buffer is free. A non-NULL op counts it among its
 * packets in flight.
 */
int efarm_ctrl_send(struct efarm_ep *ep, efarm_peer_t peer, struct efarm_op *op,
                    const struct efarm_pkt *pkt);
/* The same for a liveness probe: its send buffer is marked (efarm_txpkt.probe). */
int efarm_probe_send(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt);
int efarm_txpkt_encode(struct efarm_ep *ep, struct efarm_txpkt *tx, const struct efarm_pkt *pkt,
                       size_t *hdr_len_p);

#endif /* EFARM_PROTO_TRANSMIT_H */
