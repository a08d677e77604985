/*
 * The receive path: decode, identify the sender, dispatch by packet type,
 * and put REQs that carry a msg_id back in send order.
 *
 * Ordering (section 3.2, msg_id). Every RTM and RTA a peer sends takes the
 * next msg_id; SRD delivers them in any order. Per peer, rx_msg_id is the next
 * one to process. A REQ with that id is processed at once, in its receive
 * buffer, and so are the waiting successors it unblocks. One ahead by less
 * than the window (EFARM_RECVWIN, a power of 2) waits in its window slot; one
 * further ahead waits on the peer's overflow list and moves into the window
 * when rx_msg_id reaches its multiple of the window size, which is before its
 * turn comes. All arithmetic is modulo 2^32 (serial-number comparison), so the
 * wrap from 2^32 - 1 to 0 is an ordinary step. Medium and runting-read
 * messages send several REQs with one msg_id: packets of a message that is
 * already being received go straight to its operation through the
 * (peer, msg_id) map; those of a message still waiting are chained in its
 * slot.
 *
 * Storage and back-pressure. A packet that must wait is copied into a buffer
 * sized to it (four size classes) as long as the copy budget
 * (EFARM_UNEXP_BYTES) lasts; after that the device's receive buffer itself is
 * held, not reposted, so the device runs short of posted buffers and answers
 * senders with RNR. The last EFARM_RX_RESERVE buffers are never held while
 * copies stay under EFARM_UNEXP_MAX_BYTES: the packet that fills a hole in
 * msg_id order, or a CTSDATA the application waits for, must find a buffer.
 * When the in-order message finds no room in the unexpected
 * queue (EFARM_MAX_UNEXPECTED, or no operation slot), it stays in its slot,
 * the peer is marked stalled and progress retries it once room appears. No
 * message is ever dropped and nothing grows beyond its bound.
 */
#include <errno.h>
#include <stdlib.h>

#include "proto_internal.h"

/* Copy classes: element sizes (struct efarm_rxpkt + data). The last one takes an MTU. */
static uint32_t class_size(const struct efarm_ep *ep, unsigned cls)
{
    static const uint32_t sizes[EFARM_RX_COPY_CLASSES - 1] = {256, 1024, 4096};

    if (cls < EFARM_RX_COPY_CLASSES - 1)
        return sizes[cls];
    return (uint32_t)(sizeof(struct efarm_rxpkt) + ep->mtu + EFARM_CACHE_LINE - 1) &
           ~(uint32_t)(EFARM_CACHE_LINE - 1);
}

int efarm_rx_init(struct efarm_ep *ep)
{
    int ret;

    ep->held = efarm_calloc(ep->p.rx_buffers, sizeof(*ep->held));
    if (ep->held == NULL)
        return -ENOMEM;
    for (unsigned c = 0; c < EFARM_RX_COPY_CLASSES; c++) {
        uint32_t size = class_size(ep, c);
        uint64_t max = ep->p.unexp_max_bytes / size;

        if (max == 0)
            max = 1;
        if (max > UINT32_MAX / 2)
            max = UINT32_MAX / 2;
        ret = efarm_pool_construct(&ep->copy_pool[c], size, 65536 / size ? 65536 / size : 1,
                                   (uint32_t)max, 0);
        if (ret) {
            while (c-- > 0)
                efarm_pool_destruct(&ep->copy_pool[c]);
            free(ep->held);
            return ret;
        }
    }
    return 0;
}

void efarm_rx_fini(struct efarm_ep *ep)
{
    for (unsigned c = 0; c < EFARM_RX_COPY_CLASSES; c++)
        efarm_pool_destruct(&ep->copy_pool[c]);
    free(ep->held);
}

struct efarm_rxpkt *efarm_rxpkt_store(struct efarm_ep *ep, const uint8_t *data, uint32_t len,
                                      uint32_t rx_id, bool *held_p)
{
    struct efarm_rxpkt *pkt = NULL;
    unsigned cls;

    for (cls = 0; cls < EFARM_RX_COPY_CLASSES; cls++) {
        if (sizeof(*pkt) + len <= class_size(ep, cls))
            break;
    }
    /*
     * Copy within the budget. Past it, hold the device buffer while enough
     * stay posted: that is the back-pressure (senders see RNR). But never
     * hold the last rx_reserve buffers while the hard cap allows a copy: a
     * packet ahead of a missing one must not take the buffer the missing one
     * needs to land in, nor may waiting messages starve the CTSDATA of a
     * receive the application already waits for.
     */
    if (cls < EFARM_RX_COPY_CLASSES) {
        uint64_t after = ep->copy_bytes + class_size(ep, cls);

        if (after <= ep->p.unexp_bytes) {
            pkt = efarm_pool_alloc(&ep->copy_pool[cls]);
        } else if (ep->nheld + ep->p.rx_reserve >= ep->p.rx_buffers &&
                   after <= ep->p.unexp_max_bytes) {
            pkt = efarm_pool_alloc(&ep->copy_pool[cls]);
            ep->cnt.copy_overdraft += pkt != NULL;
        }
    }
    if (pkt == NULL && ep->nheld + 1 >= ep->p.rx_buffers)
        efarm_log_ratelimited(EFARM_LOG_WARN,
                              "every receive buffer holds a waiting packet and the copy cap "
                              "(EFARM_UNEXP_MAX_BYTES %llu) is reached: nothing more arrives until "
                              "receives are posted",
                              (unsigned long long)ep->p.unexp_max_bytes);
    if (pkt != NULL) {
        pkt->data = (uint8_t *)(pkt + 1);
        memcpy(pkt->data, data, len);
        pkt->cls = (uint8_t)cls;
        ep->copy_bytes += class_size(ep, cls);
        *held_p = false;
    } else {
        /* Budget spent: keep the device buffer, unposted (the device will RNR senders). */
        pkt = &ep->held[rx_id];
        pkt->data = (uint8_t *)data;
        pkt->cls = EFARM_RXPKT_HELD;
        pkt->rx_id = rx_id;
        ep->nheld++;
        ep->cnt.held_rx++;
        *held_p = true;
    }
    pkt->next = NULL;
    efarm_list_init(&pkt->link);
    pkt->len = len;
    return pkt;
}

void efarm_rxpkt_release(struct efarm_ep *ep, struct efarm_rxpkt *pkt)
{
    if (pkt->cls == EFARM_RXPKT_HELD) {
        ep->nheld--;
        efarm_dev_rx_release(ep->dev, pkt->rx_id);
        return;
    }
    ep->copy_bytes -= class_size(ep, pkt->cls);
    efarm_pool_release(&ep->copy_pool[pkt->cls], pkt);
}

/* Decode a stored packet again (it decoded when it arrived, so this cannot fail). */
static void rxpkt_decode(const struct efarm_rxpkt *stored, struct efarm_pkt *pkt)
{
    int ret = efarm_pkt_decode(stored->data, stored->len, pkt);

    (void)ret;
}

/* ---- Per-type handlers --------------------------------------------------------------- */

typedef int (*efarm_rx_fn)(struct efarm_ep *ep, struct efarm_peer_state *st,
                           const struct efarm_pkt *pkt, const struct efarm_dev_cqe *cqe);

static int rx_ordered(struct efarm_ep *ep, struct efarm_peer_state *st, const struct efarm_pkt *pkt,
                      const struct efarm_dev_cqe *cqe);

static int rx_handshake(struct efarm_ep *ep, struct efarm_peer_state *st,
                        const struct efarm_pkt *pkt, const struct efarm_dev_cqe *cqe)
{
    (void)cqe;
    efarm_handshake_recv(ep, st->peer, pkt);
    return 0;
}

static int rx_cts(struct efarm_ep *ep, struct efarm_peer_state *st, const struct efarm_pkt *pkt,
                  const struct efarm_dev_cqe *cqe)
{
    (void)cqe;
    efarm_cts_recv(ep, st->peer, pkt);
    return 0;
}

static int rx_ctsdata(struct efarm_ep *ep, struct efarm_peer_state *st, const struct efarm_pkt *pkt,
                      const struct efarm_dev_cqe *cqe)
{
    (void)cqe;
    efarm_ctsdata_recv(ep, st->peer, pkt);
    return 0;
}

static int rx_eor(struct efarm_ep *ep, struct efarm_peer_state *st, const struct efarm_pkt *pkt,
                  const struct efarm_dev_cqe *cqe)
{
    (void)cqe;
    efarm_eor_recv(ep, st->peer, pkt);
    return 0;
}

static int rx_receipt(struct efarm_ep *ep, struct efarm_peer_state *st, const struct efarm_pkt *pkt,
                      const struct efarm_dev_cqe *cqe)
{
    (void)cqe;
    efarm_receipt_recv(ep, st->peer, pkt);
    return 0;
}

static int rx_read_nack(struct efarm_ep *ep, struct efarm_peer_state *st,
                        const struct efarm_pkt *pkt, const struct efarm_dev_cqe *cqe)
{
    (void)cqe;
    efarm_read_nack_recv(ep, st->peer, pkt);
    return 0;
}

/* LONGCTS RTM: ordered, except the one sent after a READ_NACK (its msg_id was processed). */
static int rx_longcts(struct efarm_ep *ep, struct efarm_peer_state *st, const struct efarm_pkt *pkt,
                      const struct efarm_dev_cqe *cqe)
{
    if (pkt->flags & EFARM_REQ_READ_NACK) {
        efarm_longcts_nack_recv(ep, st->peer, pkt);
        return 0;
    }
    return rx_ordered(ep, st, pkt, cqe);
}

/* EAGER_RTW: only the 0-byte trigger is served here (it exists to get our HANDSHAKE). */
static int rx_eager_rtw(struct efarm_ep *ep, struct efarm_peer_state *st,
                        const struct efarm_pkt *pkt, const struct efarm_dev_cqe *cqe)
{
    (void)st, (void)cqe;
    if (pkt->value[EFARM_PKT_F_RMA_IOV_COUNT] != 0)
        ep->cnt.unsupported++;
    return 0;
}

/* Anything else: count and drop (one-sided packets wait for their issue). */
static int rx_unsupported(struct efarm_ep *ep, struct efarm_peer_state *st,
                          const struct efarm_pkt *pkt, const struct efarm_dev_cqe *cqe)
{
    (void)st, (void)cqe;
    ep->cnt.unsupported++;
    efarm_log_ratelimited(EFARM_LOG_WARN, "%s from peer %u is not served by this engine; dropped",
                          efarm_pkt_type_info(pkt->type)->name, st->peer);
    return 0;
}

/* One handler per packet type; a type left out gets rx_unsupported. */
static const efarm_rx_fn g_rx_handlers[EFARM_PKT_TYPE_COUNT] = {
    [EFARM_PKT_HANDSHAKE] = rx_handshake,
    [EFARM_PKT_CTS] = rx_cts,
    [EFARM_PKT_CTSDATA] = rx_ctsdata,
    [EFARM_PKT_EOR] = rx_eor,
    [EFARM_PKT_RECEIPT] = rx_receipt,
    [EFARM_PKT_READ_NACK] = rx_read_nack,
    [EFARM_PKT_EAGER_MSGRTM] = rx_ordered,
    [EFARM_PKT_EAGER_TAGRTM] = rx_ordered,
    [EFARM_PKT_MEDIUM_MSGRTM] = rx_ordered,
    [EFARM_PKT_MEDIUM_TAGRTM] = rx_ordered,
    [EFARM_PKT_LONGCTS_MSGRTM] = rx_longcts,
    [EFARM_PKT_LONGCTS_TAGRTM] = rx_longcts,
    [EFARM_PKT_LONGREAD_MSGRTM] = rx_ordered,
    [EFARM_PKT_LONGREAD_TAGRTM] = rx_ordered,
    [EFARM_PKT_RUNTREAD_MSGRTM] = rx_ordered,
    [EFARM_PKT_RUNTREAD_TAGRTM] = rx_ordered,
    [EFARM_PKT_DC_EAGER_MSGRTM] = rx_ordered,
    [EFARM_PKT_DC_EAGER_TAGRTM] = rx_ordered,
    [EFARM_PKT_DC_MEDIUM_MSGRTM] = rx_ordered,
    [EFARM_PKT_DC_MEDIUM_TAGRTM] = rx_ordered,
    [EFARM_PKT_DC_LONGCTS_MSGRTM] = rx_longcts,
    [EFARM_PKT_DC_LONGCTS_TAGRTM] = rx_longcts,
    /* RTA packets take msg_ids from the same sequence: ordered, then refused. */
    [EFARM_PKT_WRITE_RTA] = rx_ordered,
    [EFARM_PKT_FETCH_RTA] = rx_ordered,
    [EFARM_PKT_COMPARE_RTA] = rx_ordered,
    [EFARM_PKT_DC_WRITE_RTA] = rx_ordered,
    [EFARM_PKT_RUNTCTS_MSGRTM] = rx_ordered,
    [EFARM_PKT_RUNTCTS_TAGRTM] = rx_ordered,
    [EFARM_PKT_EAGER_RTW] = rx_eager_rtw,
};

static bool is_mulreq(uint8_t type)
{
    switch (type) {
    case EFARM_PKT_MEDIUM_MSGRTM:
    case EFARM_PKT_MEDIUM_TAGRTM:
    case EFARM_PKT_DC_MEDIUM_MSGRTM:
    case EFARM_PKT_DC_MEDIUM_TAGRTM:
    case EFARM_PKT_RUNTREAD_MSGRTM:
    case EFARM_PKT_RUNTREAD_TAGRTM:
    case EFARM_PKT_RUNTCTS_MSGRTM:
    case EFARM_PKT_RUNTCTS_TAGRTM:
        return true;
    default:
        return false;
    }
}

/*
 * Process the in-order REQ. RTMs go to the message layer; the other REQs that
 * take msg_ids (RTA, RUNTCTS) are refused but still use up their id.
 */
static int req_process(struct efarm_ep *ep, struct efarm_peer_state *st,
                       const struct efarm_pkt *pkt, struct efarm_rxpkt *stored, uint32_t rx_id)
{
    switch (pkt->type) {
    case EFARM_PKT_WRITE_RTA:
    case EFARM_PKT_FETCH_RTA:
    case EFARM_PKT_COMPARE_RTA:
    case EFARM_PKT_DC_WRITE_RTA:
    case EFARM_PKT_RUNTCTS_MSGRTM:
    case EFARM_PKT_RUNTCTS_TAGRTM:
        return rx_unsupported(ep, st, pkt, NULL);
    default:
        return efarm_rtm_recv(ep, st->peer, pkt, stored, rx_id);
    }
}

/* A packet of a message already being received, or one past its turn. */
static int segment_or_stale(struct efarm_ep *ep, struct efarm_peer_state *st,
                            const struct efarm_pkt *pkt, struct efarm_rxpkt *stored, uint32_t rx_id)
{
    struct efarm_op *op = NULL;

    if (is_mulreq(pkt->type))
        op = efarm_op_map_find(ep, st->peer, (uint32_t)pkt->value[EFARM_PKT_F_MSG_ID]);
    if (op == NULL) {
        ep->cnt.stale_ids++;
        efarm_log_ratelimited(EFARM_LOG_INFO, "%s msg_id %u from peer %u is behind %u, dropped",
                              efarm_pkt_type_info(pkt->type)->name,
                              (uint32_t)pkt->value[EFARM_PKT_F_MSG_ID], st->peer, st->rx_msg_id);
        return 0;
    }
    return efarm_rtm_segment(ep, op, pkt, stored, rx_id);
}

/* Put a stored packet in its window slot, after packets of the same message. */
static void window_put(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_rxpkt *rp)
{
    struct efarm_rxpkt **slot = &st->win[rp->msg_id & (ep->p.recvwin - 1)];

    while (*slot != NULL)
        slot = &(*slot)->next;
    rp->next = NULL;
    *slot = rp;
}

/* At a multiple of the window size, pull the overflow packets that now fit. */
static void overflow_refill(struct efarm_ep *ep, struct efarm_peer_state *st)
{
    struct efarm_link *link, *tmp;

    efarm_list_foreach_safe(link, tmp, &st->overflow)
    {
        struct efarm_rxpkt *rp = efarm_container_of(link, struct efarm_rxpkt, link);

        if (rp->msg_id - st->rx_msg_id >= ep->p.recvwin)
            continue;
        efarm_list_remove(link);
        st->overflow_count--;
        window_put(ep, st, rp);
    }
}

/* The peer's in-order message waits for room; progress retries it. */
static void stall(struct efarm_ep *ep, struct efarm_peer_state *st)
{
    if (st->flags & EFARM_PS_STALLED)
        return;
    st->flags |= EFARM_PS_STALLED;
    efarm_list_append(&ep->stalled_peers, &st->stalled_link);
}

/* The in-order message was processed: move on and run the successors that wait. */
static void window_advance(struct efarm_ep *ep, struct efarm_peer_state *st)
{
    for (;;) {
        struct efarm_rxpkt **slot, *head, *rest;
        struct efarm_pkt pkt;
        int ret;

        st->rx_msg_id++;
        if (st->overflow_count && (st->rx_msg_id & (ep->p.recvwin - 1)) == 0)
            overflow_refill(ep, st);
        slot = &st->win[st->rx_msg_id & (ep->p.recvwin - 1)];
        head = *slot;
        if (head == NULL)
            return;
        /* Read the chain first: a handler that takes head links it into its op's list. */
        rest = head->next;
        rxpkt_decode(head, &pkt);
        ret = req_process(ep, st, &pkt, head, head->rx_id);
        if (ret == -EAGAIN) {
            if (!(st->flags & EFARM_PS_RETRY))
                ep->cnt.deferred++;
            stall(ep, st); /* rx_msg_id stays: it is still this message's turn */
            return;
        }
        *slot = NULL;
        if (ret == 0)
            efarm_rxpkt_release(ep, head);
        /* Further packets of the same message (medium, runting read) follow it. */
        while (rest != NULL) {
            struct efarm_rxpkt *rp = rest;

            rest = rp->next;
            rp->next = NULL;
            rxpkt_decode(rp, &pkt);
            if (segment_or_stale(ep, st, &pkt, rp, rp->rx_id) == 0)
                efarm_rxpkt_release(ep, rp);
        }
    }
}

/* Keep a packet that cannot be processed yet; returns EFARM_RX_KEEP if its buffer is held. */
static int keep(struct efarm_ep *ep, struct efarm_peer_state *st, const struct efarm_pkt *pkt,
                const struct efarm_dev_cqe *cqe, bool overflow)
{
    bool held;
    struct efarm_rxpkt *rp = efarm_rxpkt_store(ep, cqe->data, cqe->len, cqe->rx_id, &held);

    rp->peer = st->peer;
    rp->msg_id = (uint32_t)pkt->value[EFARM_PKT_F_MSG_ID];
    if (overflow) {
        efarm_list_append(&st->overflow, &rp->link);
        st->overflow_count++;
        ep->cnt.overflow++;
    } else {
        window_put(ep, st, rp);
    }
    return held ? EFARM_RX_KEEP : 0;
}

static int rx_ordered(struct efarm_ep *ep, struct efarm_peer_state *st, const struct efarm_pkt *pkt,
                      const struct efarm_dev_cqe *cqe)
{
    uint32_t msg_id = (uint32_t)pkt->value[EFARM_PKT_F_MSG_ID];
    int32_t ahead = (int32_t)(msg_id - st->rx_msg_id);
    int ret;

    if (ahead < 0)
        return segment_or_stale(ep, st, pkt, NULL, cqe->rx_id);
    if (ahead == 0) {
        if (st->win[msg_id & (ep->p.recvwin - 1)] != NULL)
            return keep(ep, st, pkt, cqe, false); /* its message waits for room: join it */
        ret = req_process(ep, st, pkt, NULL, cqe->rx_id);
        if (ret == -EAGAIN) {
            ep->cnt.deferred++;
            ret = keep(ep, st, pkt, cqe, false);
            stall(ep, st);
            return ret;
        }
        window_advance(ep, st);
        return ret;
    }
    ep->cnt.out_of_order++;
    return keep(ep, st, pkt, cqe, (uint32_t)ahead >= ep->p.recvwin);
}

void efarm_rx_completion(struct efarm_ep *ep, const struct efarm_dev_cqe *cqe)
{
    struct efarm_peer_state *st;
    struct efarm_pkt pkt;
    efarm_rx_fn handler;
    efarm_peer_t peer;
    int ret;

    if (cqe->status) {
        efarm_log_ratelimited(EFARM_LOG_WARN, "receive completion error: %s",
                              efarm_strerror(cqe->status));
        efarm_dev_rx_release(ep->dev, cqe->rx_id);
        return;
    }
    ep->cnt.rx_pkts++;
    ep->cnt.rx_bytes += cqe->len;
    ret = efarm_pkt_decode(cqe->data, cqe->len, &pkt);
    if (ret) {
        ep->cnt.decode_errors++;
        efarm_log_ratelimited(EFARM_LOG_WARN, "undecodable packet of %u bytes from QPN %u: %s",
                              cqe->len, cqe->src_qpn, efarm_strerror(ret));
        efarm_dev_rx_release(ep->dev, cqe->rx_id);
        return;
    }
    ep->cnt.rx_by_type[pkt.type]++;
    if (efarm_log_level() >= EFARM_LOG_DATA) {
        fprintf(stderr, "efarm: rx %s from QPN %u\n", efarm_pkt_type_info(pkt.type)->name,
                cqe->src_qpn);
        efarm_pkt_print_text(stderr, &pkt);
    }
    peer = efarm_peer_identify(ep, cqe, &pkt);
    st = peer == EFARM_PEER_NONE ? NULL : efarm_peer_state_get(ep, peer);
    if (st == NULL) {
        efarm_dev_rx_release(ep->dev, cqe->rx_id);
        return;
    }
    /* The first packet from a peer, whatever it is, gets our HANDSHAKE (section 2.1). */
    if (!(st->flags & EFARM_PS_HS_SENT))
        efarm_handshake_owe(ep, st);
    handler = g_rx_handlers[pkt.type] ? g_rx_handlers[pkt.type] : rx_unsupported;
    if (handler(ep, st, &pkt, cqe) != EFARM_RX_KEEP)
        efarm_dev_rx_release(ep->dev, cqe->rx_id);
}

void efarm_rx_progress(struct efarm_ep *ep)
{
    struct efarm_link *link, *tmp;

    efarm_list_foreach_safe(link, tmp, &ep->stalled_peers)
    {
        struct efarm_peer_state *st =
            efarm_container_of(link, struct efarm_peer_state, stalled_link);

        efarm_list_remove(link);
        st->flags = (st->flags & ~EFARM_PS_STALLED) | EFARM_PS_RETRY;
        st->rx_msg_id--; /* window_advance steps back onto the stalled id first */
        window_advance(ep, st);
        st->flags &= ~EFARM_PS_RETRY;
    }
}
