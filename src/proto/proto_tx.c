/*
 * Send buffers, posting, the send-queue-full queue and RNR backoff.
 *
 * Every packet is built in a registered MTU-sized buffer from a fixed array;
 * a few of them are kept for control packets (HANDSHAKE, CTS, EOR, RECEIPT,
 * READ_NACK) so replies are never starved by bulk data. A built packet is
 * posted at once, or, when the send queue is full or its peer is backing off,
 * queued and posted from progress. It stays ours until its completion.
 *
 * RNR (the peer had no receive buffer; the device already retried
 * EFARM_RNR_RETRY times): the first RNR from a peer requeues the packet for
 * the next progress call; further RNRs before any success put the peer in
 * exponential backoff, starting at a random time in [EFARM_RNR_BACKOFF_US,
 * 2 * EFARM_RNR_BACKOFF_US) and doubling up to EFARM_RNR_BACKOFF_MAX_US. While
 * a peer backs off, its packets wait on its own queue and no new data is
 * built for it; when the time is up they are resent in order.
 */
#include <errno.h>
#include <stdlib.h>

#include "efarm_byteorder.h"
#include "proto_internal.h"
#include "proto_messages.h"
#include "proto_ops.h"
#include "proto_peers.h"
#include "proto_receive.h"
#include "proto_transmit.h"

int efarm_tx_init(struct efarm_ep *ep)
{
    uint32_t n = ep->p.tx_pkts;
    int ret;

    ep->txpkts = efarm_aligned_calloc(n, sizeof(*ep->txpkts));
    ep->tx_free = efarm_calloc(n, sizeof(*ep->tx_free));
    ep->tx_mem = efarm_aligned_calloc(n, ep->mtu);
    if (!ep->txpkts || !ep->tx_free || !ep->tx_mem) {
        ret = -ENOMEM;
        goto err_free;
    }
    ret = efarm_dev_mr_reg(ep->dev, ep->tx_mem, (size_t)n * ep->mtu, false, false, &ep->tx_mr);
    if (ret) {
        efarm_dev_reg_refused(ep->dev, (uint64_t)n * ep->mtu, ret,
                              "its send pool (EFARM_TX_PKTS x MTU)", NULL);
        goto err_free;
    }
    ep->tx_lkey = efarm_dev_mr_lkey(ep->tx_mr);
    for (uint32_t i = 0; i < n; i++) {
        struct efarm_txpkt *tx = &ep->txpkts[i];

        tx->index = i;
        tx->peer = EFARM_PEER_NONE;
        tx->buf = ep->tx_mem + (size_t)i * ep->mtu;
        efarm_list_init(&tx->link);
        ep->tx_free[n - 1 - i] = i;
    }
    ep->ntx_free = n;
    ep->tx_reserve = n / 8 < 32 ? n / 8 : 32;
    if (ep->tx_reserve < 2)
        ep->tx_reserve = 2;
    return 0;

err_free:
    free(ep->tx_mem);
    free(ep->tx_free);
    free(ep->txpkts);
    return ret;
}

void efarm_tx_fini(struct efarm_ep *ep)
{
    efarm_dev_mr_dereg(ep->tx_mr);
    free(ep->tx_mem);
    free(ep->tx_free);
    free(ep->txpkts);
}

int efarm_txpkt_encode(struct efarm_ep *ep, struct efarm_txpkt *tx, const struct efarm_pkt *pkt,
                       size_t *hdr_len_p)
{
    int ret = efarm_pkt_encode(pkt, tx->buf, ep->mtu, hdr_len_p);

    if (ret) {
        efarm_log(EFARM_LOG_ERROR, "cannot encode %s: %s", efarm_pkt_type_info(pkt->type)->name,
                  efarm_strerror(ret));
        return ret;
    }
    tx->type = pkt->type;
    return 0;
}

void efarm_pkt_set_raw_addr(const struct efarm_ep *ep, struct efarm_pkt *pkt)
{
    pkt->flags |= EFARM_REQ_OPT_RAW_ADDR_HDR;
    memcpy(pkt->raw_addr.gid, ep->raw_addr, EFARM_GID_LEN);
    pkt->raw_addr.qpn = efarm_load_le16(ep->raw_addr + offsetof(struct efarm_wire_raw_addr, qpn));
    pkt->raw_addr.connid = ep->connid;
    pkt->raw_addr_size = EFARM_REQ_OPT_RAW_ADDR_SIZE_FIELD;
}

static int ctrl_send(struct efarm_ep *ep, efarm_peer_t peer, struct efarm_op *op,
                     const struct efarm_pkt *pkt, bool probe)
{
    struct efarm_txpkt *tx = efarm_txpkt_alloc(ep, true);
    size_t hdr_len;
    int ret;

    if (tx == NULL)
        return -EAGAIN;
    ret = efarm_txpkt_encode(ep, tx, pkt, &hdr_len);
    if (ret) {
        efarm_txpkt_release(ep, tx);
        return ret;
    }
    tx->len = (uint32_t)hdr_len;
    tx->peer = peer;
    tx->op = op;
    tx->probe = probe;
    if (op != NULL)
        op->pkts_inflight++;
    efarm_txpkt_send(ep, tx);
    return 0;
}

int efarm_ctrl_send(struct efarm_ep *ep, efarm_peer_t peer, struct efarm_op *op,
                    const struct efarm_pkt *pkt)
{
    return ctrl_send(ep, peer, op, pkt, false);
}

int efarm_probe_send(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt)
{
    return ctrl_send(ep, peer, NULL, pkt, true);
}

void efarm_pkt_set_connid(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_pkt *pkt)
{
    if (!efarm_peer_wants_connid(st) ||
        (pkt->flags & EFARM_REQ_OPT_RAW_ADDR_HDR && pkt->type >= EFARM_PKT_REQ_BEGIN))
        return;
    pkt->flags |= EFARM_PKT_FLAG_CONNID_HDR;
    efarm_pkt_set(pkt, EFARM_PKT_F_CONNID, ep->connid);
}

/*
 * A packet failed at the device (or could not be posted), for any reason but
 * RNR: the packet did not reach the peer, after the device's own retries.
 * The peer is failed; what the loss costs decides whether the endpoint fails
 * too (efarm_peer_fail): anything no request of ours reports.
 */
static void txpkt_failed(struct efarm_ep *ep, struct efarm_txpkt *tx, int status)
{
    const struct efarm_peer_state *st = ep->peers[tx->peer].st;
    /* A lost REQ that took a msg_id holds back everything sent after it. */
    const bool req_pkt = tx->type >= EFARM_PKT_REQ_BEGIN && efarm_pkt_type_has_msg_id(tx->type);
    const bool gone = status == EFARM_E(DEV_REMOTE_QP); /* the peer's QP no longer exists */
    struct efarm_op *op = tx->op;
    const char *lost = NULL;

    if (op == NULL && tx->injected) {
        lost = "the data of an injected send that had already completed";
        ep->cnt.lost_after_completion++;
    } else if (op == NULL) {
        /*
         * HANDSHAKE, a RECEIPT, READRSP or ATOMRSP of a target, or a HANDSHAKE
         * trigger: what its loss costs is its row's LOSS column. The peer may
         * wait for it, unless it is gone (spec 2.3). Two HANDSHAKEs fail the
         * peer alone: a liveness probe (the peer had our HANDSHAKE before; its
         * loss says only that the peer is gone), and one to a peer learnt only
         * from a raw-address header (never inserted here: an address that is
         * not its sender's, or gone; nothing the application addressed waits
         * on it, and one forged header must not fail the endpoint).
         */
        const bool implicit = ep->peers[tx->peer].flags & EFARM_PEER_IMPLICIT;
        const struct efarm_pkt_row *row = efarm_pkt_row(tx->type);

        if (!gone && !tx->probe && !(implicit && row->lost_to_implicit_ok))
            lost = row->lost_alone; /* its row's LOSS column (efarm_pkt_types.h) */
    } else if (efarm_op_role_ops(op)->lost != NULL && op->status == 0) {
        lost = efarm_op_role_ops(op)->lost; /* its role says (a long read we serve) */
    } else if (efarm_op_role_ops(op)->origin) {
        if ((op->flags & EFARM_OPF_INJECT) && op->state == EFARM_OPS_COMPLETED && op->status == 0) {
            lost = "the data of an injected send that had already completed";
            ep->cnt.lost_after_completion++;
        } else if (req_pkt && !gone && st->tx_msg_id != op->msg_id + 1) {
            lost = "the messages sent to it after this one (they wait behind it)";
        }
    } else if (op->state == EFARM_OPS_COMPLETED && op->status == 0 && !gone) {
        lost = "a reply (EOR or RECEIPT) its send waits for";
    }
    efarm_peer_fail(ep, tx->peer, status, tx->type, lost);
}

/* A packet ends: tell its operation, then give the buffer back. */
static void txpkt_done(struct efarm_ep *ep, struct efarm_txpkt *tx, int status)
{
    struct efarm_op *op = tx->op;

    if (status)
        txpkt_failed(ep, tx, status);
    if (tx->injected) {
        struct efarm_peer_state *st = ep->peers[tx->peer].st;

        if (st->sends_inflight)
            st->sends_inflight--;
        if (status)
            ep->cnt.send_errors++; /* its loss failed the peer and the endpoint */
    } else if (op == NULL) {
        if (tx->probe)
            efarm_probe_done(ep, tx, status);
        /* Sends waiting for the HANDSHAKE a failed trigger asked for cannot go. */
        if (status && efarm_pkt_row(tx->type)->trigger)
            efarm_hs_waiters_fail(ep, ep->peers[tx->peer].st, status);
    } else {
        efarm_op_role_ops(op)->pkt_done(ep, op, tx, status);
    }
    efarm_txpkt_release(ep, tx);
}

/* The peer failed: its packets still waiting are dropped, as failed with its error. */
void efarm_tx_drop_peer(struct efarm_ep *ep, struct efarm_peer_state *st)
{
    struct efarm_link drop, *link, *tmp;

    efarm_list_init(&drop);
    if (st->flags & EFARM_PS_IN_BACKOFF) {
        efarm_list_remove(&st->backoff_link);
        st->flags &= ~EFARM_PS_IN_BACKOFF;
    }
    efarm_list_splice_tail(&drop, &st->rnr_queue);
    efarm_list_foreach_safe(link, tmp, &ep->tx_queue)
    {
        if (efarm_container_of(link, struct efarm_txpkt, link)->peer != st->peer)
            continue;
        efarm_list_remove(link);
        efarm_list_append(&drop, link);
    }
    /* Completing them may start other work: the lists are no longer walked. */
    while ((link = efarm_list_first(&drop)) != NULL) {
        struct efarm_txpkt *tx = efarm_container_of(link, struct efarm_txpkt, link);

        efarm_list_remove(link);
        tx->queued = 0;
        txpkt_done(ep, tx, st->fail_status);
    }
}

void efarm_txpkt_unposted(struct efarm_ep *ep, struct efarm_txpkt *tx, int ret)
{
    if (ret != -EAGAIN) {
        txpkt_done(ep, tx, ret);
        return;
    }
    ep->cnt.tx_queued++;
    tx->queued = 1;
    efarm_list_append(&ep->tx_queue, &tx->link);
    efarm_ep_pending(ep);
}

static void rnr_handle(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_txpkt *tx)
{
    ep->cnt.rnr++;
    st->rnr_streak++;
    tx->queued = 1;
    if (st->flags & EFARM_PS_IN_BACKOFF) {
        efarm_list_append(&st->rnr_queue, &tx->link);
        return;
    }
    if (st->rnr_streak < 2) {
        /* One RNR: the peer may just be between reposts; resend from the next progress. */
        ep->cnt.retransmits++;
        efarm_list_append(&ep->tx_queue, &tx->link);
        efarm_ep_pending(ep);
        return;
    }
    if (st->rnr_streak == 2)
        st->backoff_us = ep->p.rnr_backoff_us + efarm_ep_rand(ep) % ep->p.rnr_backoff_us;
    else if (st->backoff_us < ep->p.rnr_backoff_max_us)
        st->backoff_us *= 2;
    if (st->backoff_us > ep->p.rnr_backoff_max_us)
        st->backoff_us = ep->p.rnr_backoff_max_us;
    st->backoff_until_ns = efarm_now_ns() + st->backoff_us * 1000;
    st->flags |= EFARM_PS_IN_BACKOFF;
    efarm_list_append(&ep->backoff_peers, &st->backoff_link);
    efarm_ep_pending(ep);
    efarm_list_append(&st->rnr_queue, &tx->link);
    ep->cnt.rnr_backoff++;
    efarm_log(EFARM_LOG_DEBUG, "peer %u: RNR #%u, backing off %llu us", st->peer, st->rnr_streak,
              (unsigned long long)st->backoff_us);
}

void efarm_tx_completion_general(struct efarm_ep *ep, const struct efarm_dev_cqe *cqe)
{
    struct efarm_txpkt *tx;
    struct efarm_peer_state *st;

    if ((cqe->wr_id & EFARM_WR_KIND) != EFARM_WR_TXPKT || (cqe->wr_id >> 2) >= ep->p.tx_pkts) {
        efarm_log(EFARM_LOG_ERROR, "completion with foreign wr_id %#llx ignored",
                  (unsigned long long)cqe->wr_id);
        return;
    }
    tx = &ep->txpkts[cqe->wr_id >> 2];
    st = ep->peers[tx->peer].st;
    if (cqe->status == EFARM_E(DEV_RNR)) {
        rnr_handle(ep, st, tx);
        return;
    }
    if (cqe->status == 0)
        st->rnr_streak = 0;
    else /* expected of a peer that may depart (efarm_av_set_departing): info only */
        efarm_log_ratelimited(
            ep->peers[tx->peer].flags & EFARM_PEER_DEPARTS ? EFARM_LOG_INFO : EFARM_LOG_WARN,
            "%s to peer %u failed: %s (vendor error %u)", efarm_pkt_type_info(tx->type)->name,
            tx->peer, efarm_strerror(cqe->status), cqe->vendor_err);
    txpkt_done(ep, tx, cqe->status);
}

void efarm_tx_progress(struct efarm_ep *ep)
{
    struct efarm_link *link, *tmp;

    if (!efarm_list_empty(&ep->backoff_peers)) {
        uint64_t now = efarm_now_ns();

        efarm_list_foreach_safe(link, tmp, &ep->backoff_peers)
        {
            struct efarm_peer_state *st =
                efarm_container_of(link, struct efarm_peer_state, backoff_link);
            struct efarm_link *q;

            if (now < st->backoff_until_ns)
                continue;
            efarm_list_remove(link);
            st->flags &= ~EFARM_PS_IN_BACKOFF;
            while ((q = efarm_list_first(&st->rnr_queue)) != NULL) {
                efarm_list_remove(q);
                efarm_list_append(&ep->tx_queue, q);
                efarm_ep_pending(ep);
                ep->cnt.retransmits++;
            }
        }
    }
    while ((link = efarm_list_first(&ep->tx_queue)) != NULL) {
        struct efarm_txpkt *tx = efarm_container_of(link, struct efarm_txpkt, link);
        struct efarm_peer_state *st = ep->peers[tx->peer].st;
        int ret;

        if (st->flags & EFARM_PS_IN_BACKOFF) {
            efarm_list_remove(link);
            efarm_list_append(&st->rnr_queue, link);
            continue;
        }
        ret = efarm_txpkt_post(ep, tx);
        if (ret == -EAGAIN)
            return;
        efarm_list_remove(link);
        tx->queued = 0;
        if (ret)
            txpkt_done(ep, tx, ret);
    }
}
