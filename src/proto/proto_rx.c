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
 * sized to it (four size classes) as long as the byte budget
 * (EFARM_UNEXP_BYTES) lasts; after that the device's receive buffer itself is
 * held, not reposted, so the device runs short of posted buffers and answers
 * senders with RNR. The last EFARM_RX_RESERVE buffers are never held while
 * the bytes stay under EFARM_UNEXP_MAX_BYTES: the packet that fills a hole in
 * msg_id order, or a CTSDATA the application waits for, must find a buffer.
 *
 * Unexpected messages. An in-order message that matches no receive gets a
 * record (struct efarm_unexp: what matching, probes and its later segments
 * need) and keeps its packets; it takes no operation. Records come from a
 * table of chunks created as messages wait (a chunk allocation every
 * EFARM_UNEXP_CHUNK records, never on the path of a message that matches) and
 * are reused; each costs the byte budget its size and its matcher entry's, so
 * bytes, not a count, bound what waits. When the in-order message finds no
 * record or no operation slot it needs, it stays in its slot, the peer is
 * marked stalled and progress retries it once room appears. No message is
 * ever dropped and nothing grows beyond its bound.
 *
 * When every receive buffer holds a waiting packet (the copies reached
 * EFARM_UNEXP_MAX_BYTES), nothing more can arrive until the application
 * receives waiting messages: one warning says so and names the knob. If
 * that lasts EFARM_RX_FULL_TIMEOUT_MS while the application keeps calling
 * progress, the endpoint fails with EFARM_E(PROTO_RX_FULL) rather than hang.
 */
#include <errno.h>
#include <stdlib.h>

#include "efarm_byteorder.h"
#include "proto_internal.h"
#include "proto_messages.h"
#include "proto_onesided.h"
#include "proto_ops.h"
#include "proto_peers.h"
#include "proto_receive.h"
#include "proto_transmit.h"

/* Copy classes: element sizes (struct efarm_rxpkt + data). The last one takes an MTU. */
static uint32_t class_size(const struct efarm_ep *ep, unsigned cls)
{
    static const uint32_t sizes[EFARM_RX_COPY_CLASSES - 1] = {256, 1024, 4096};

    if (cls < EFARM_RX_COPY_CLASSES - 1)
        return sizes[cls];
    return (uint32_t)(sizeof(struct efarm_rxpkt) + ep->mtu + EFARM_CACHE_LINE - 1) &
           ~(uint32_t)(EFARM_CACHE_LINE - 1);
}

/*
 * Records the byte budget can ever need: one per receive buffer held, and as
 * many as the smallest copies (with their records) fit in the cap; at most
 * what the matcher can hold.
 */
static uint32_t unexp_max(const struct efarm_ep *ep)
{
    uint64_t n = ep->p.rx_buffers + ep->p.unexp_max_bytes / (class_size(ep, 0) + ep->unexp_cost);

    if (ep->p.max_unexpected && n > ep->p.max_unexpected)
        n = ep->p.max_unexpected;
    return n > (1u << 24) ? 1u << 24 : (uint32_t)n;
}

static int unexp_init(struct efarm_ep *ep)
{
    uint32_t buckets = 16;

    ep->unexp_cost = (uint32_t)(sizeof(struct efarm_unexp) + efarm_tm_unexpected_entry_size());
    ep->unexp_max = unexp_max(ep);
    while (buckets < 2 * ep->p.max_ops)
        buckets *= 2;
    ep->unexp_chunks = efarm_calloc((ep->unexp_max + EFARM_UNEXP_CHUNK - 1) / EFARM_UNEXP_CHUNK,
                                    sizeof(*ep->unexp_chunks));
    ep->unexp_map = efarm_calloc(buckets, sizeof(*ep->unexp_map));
    if (ep->unexp_chunks == NULL || ep->unexp_map == NULL) {
        free(ep->unexp_map);
        free(ep->unexp_chunks);
        return -ENOMEM;
    }
    ep->unexp_map_mask = buckets - 1;
    return 0;
}

static void unexp_fini(struct efarm_ep *ep)
{
    for (uint32_t i = 0; i * EFARM_UNEXP_CHUNK < ep->unexp_nalloc; i++)
        free(ep->unexp_chunks[i]);
    free(ep->unexp_chunks);
    free(ep->unexp_map);
}

int efarm_rx_init(struct efarm_ep *ep)
{
    int ret;

    ret = unexp_init(ep);
    if (ret)
        return ret;
    ep->held = efarm_calloc(ep->p.rx_buffers, sizeof(*ep->held));
    if (ep->held == NULL) {
        unexp_fini(ep);
        return -ENOMEM;
    }
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
            unexp_fini(ep);
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
    unexp_fini(ep);
}

/* ---- Unexpected records ------------------------------------------------------------------ */

/* Create the next chunk of records (cold: once per EFARM_UNEXP_CHUNK records ever waiting). */
static int unexp_grow(struct efarm_ep *ep)
{
    uint32_t n = ep->unexp_max - ep->unexp_nalloc;
    struct efarm_unexp *chunk;

    if (n == 0)
        return -ENOSPC;
    if (n > EFARM_UNEXP_CHUNK)
        n = EFARM_UNEXP_CHUNK;
    chunk = efarm_aligned_calloc(n, sizeof(*chunk));
    if (chunk == NULL) {
        efarm_log_ratelimited(EFARM_LOG_WARN,
                              "cannot allocate records for %u more unexpected messages; their "
                              "senders wait",
                              n);
        return -ENOMEM;
    }
    ep->unexp_chunks[ep->unexp_nalloc / EFARM_UNEXP_CHUNK] = chunk;
    for (uint32_t i = n; i-- > 0;) {
        chunk[i].index = ep->unexp_nalloc + i;
        chunk[i].gen = 1;
        chunk[i].map_next = ep->unexp_free;
        ep->unexp_free = &chunk[i];
    }
    ep->unexp_nalloc += n;
    return 0;
}

struct efarm_unexp *efarm_unexp_alloc(struct efarm_ep *ep)
{
    struct efarm_unexp *ux = ep->unexp_free;

    if (ux == NULL) {
        if (unexp_grow(ep))
            return NULL;
        ux = ep->unexp_free;
    }
    ep->unexp_free = ux->map_next;
    ux->map_next = NULL;
    ux->pkts = ux->last = NULL;
    ux->flags = EFARM_UXF_LIVE;
    ux->seg_bytes = 0;
    ux->runt_length = 0;
    ep->unexp_live++;
    ep->stored_bytes += ep->unexp_cost;
    return ux;
}

void efarm_unexp_release(struct efarm_ep *ep, struct efarm_unexp *ux)
{
    struct efarm_rxpkt *rp = ux->pkts;

    while (rp != NULL) {
        struct efarm_rxpkt *next = rp->next;

        efarm_rxpkt_release(ep, rp);
        rp = next;
    }
    if (ux->flags & EFARM_UXF_MAPPED)
        efarm_unexp_map_remove(ep, ux);
    ux->pkts = ux->last = NULL;
    ux->flags = 0;
    ux->gen = ux->gen + 1 ? ux->gen + 1 : 1;
    ux->map_next = ep->unexp_free;
    ep->unexp_free = ux;
    ep->unexp_live--;
    ep->stored_bytes -= ep->unexp_cost;
}

static uint32_t unexp_bucket(const struct efarm_ep *ep, efarm_peer_t peer, uint32_t msg_id)
{
    return efarm_peer_msg_bucket(peer, msg_id, ep->unexp_map_mask);
}

void efarm_unexp_map_insert(struct efarm_ep *ep, struct efarm_unexp *ux)
{
    uint32_t b = unexp_bucket(ep, ux->peer, ux->msg_id);

    ux->map_next = ep->unexp_map[b];
    ep->unexp_map[b] = ux;
    ux->flags |= EFARM_UXF_MAPPED;
}

void efarm_unexp_map_remove(struct efarm_ep *ep, struct efarm_unexp *ux)
{
    struct efarm_unexp **slot = &ep->unexp_map[unexp_bucket(ep, ux->peer, ux->msg_id)];

    while (*slot != NULL) {
        if (*slot == ux) {
            *slot = ux->map_next;
            break;
        }
        slot = &(*slot)->map_next;
    }
    ux->map_next = NULL;
    ux->flags &= (uint8_t)~EFARM_UXF_MAPPED;
}

struct efarm_unexp *efarm_unexp_map_find(struct efarm_ep *ep, efarm_peer_t peer, uint32_t msg_id)
{
    for (struct efarm_unexp *ux = ep->unexp_map[unexp_bucket(ep, peer, msg_id)]; ux != NULL;
         ux = ux->map_next) {
        if (ux->peer == peer && ux->msg_id == msg_id)
            return ux;
    }
    return NULL;
}

uint64_t efarm_unexp_handle(const struct efarm_unexp *ux)
{
    return (uint64_t)ux->gen << 32 | ux->index;
}

struct efarm_unexp *efarm_unexp_find(struct efarm_ep *ep, uint64_t handle)
{
    uint32_t index = (uint32_t)handle;
    struct efarm_unexp *ux;

    if (index >= ep->unexp_nalloc)
        return NULL;
    ux = &ep->unexp_chunks[index / EFARM_UNEXP_CHUNK][index % EFARM_UNEXP_CHUNK];
    if (!(ux->flags & EFARM_UXF_LIVE) || ux->gen != (uint32_t)(handle >> 32))
        return NULL;
    return ux;
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
        uint64_t after = ep->stored_bytes + class_size(ep, cls);

        if (after <= ep->p.unexp_bytes) {
            pkt = efarm_pool_alloc(&ep->copy_pool[cls]);
        } else if (ep->nheld + ep->p.rx_reserve >= ep->p.rx_buffers &&
                   after <= ep->p.unexp_max_bytes) {
            pkt = efarm_pool_alloc(&ep->copy_pool[cls]);
            ep->cnt.copy_overdraft += pkt != NULL;
        }
    }
    if (pkt != NULL) {
        pkt->data = (uint8_t *)(pkt + 1);
        memcpy(pkt->data, data, len);
        pkt->cls = (uint8_t)cls;
        ep->stored_bytes += class_size(ep, cls);
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
        if (efarm_rx_full(ep))
            efarm_rx_full_check(ep);
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
        ep->full_since_ns = 0;
        efarm_dev_rx_release_inl(ep->dev, pkt->rx_id);
        return;
    }
    ep->stored_bytes -= class_size(ep, pkt->cls);
    efarm_pool_release(&ep->copy_pool[pkt->cls], pkt);
}

/*
 * Called when every receive buffer holds a waiting packet, and from progress
 * while that lasts: warn once, and fail the endpoint when the application has
 * been calling progress for EFARM_RX_FULL_TIMEOUT_MS without receiving any of
 * the waiting messages (a pause of a second or more between calls restarts
 * the clock: the application was busy elsewhere, not waiting).
 */
void efarm_rx_full_check(struct efarm_ep *ep)
{
    uint64_t now = efarm_now_ns();

    if (ep->full_since_ns == 0) {
        ep->cnt.rx_full++;
        if (!ep->full_warned)
            efarm_log(EFARM_LOG_WARN,
                      "nothing more can be received: all %u receive buffers hold packets waiting "
                      "(%u unexpected messages wait for receives, %llu bytes stored) and the "
                      "copies reached EFARM_UNEXP_MAX_BYTES=%llu; raise EFARM_UNEXP_MAX_BYTES. The "
                      "endpoint fails if the application receives none of them for "
                      "EFARM_RX_FULL_TIMEOUT_MS=%llu ms",
                      ep->p.rx_buffers, ep->unexp_live, (unsigned long long)ep->stored_bytes,
                      (unsigned long long)ep->p.unexp_max_bytes,
                      (unsigned long long)ep->p.rx_full_timeout_ms);
        ep->full_warned = true;
        ep->full_since_ns = ep->full_last_ns = now;
        return;
    }
    if (now - ep->full_last_ns > 1000000000ull)
        ep->full_since_ns = now;
    ep->full_last_ns = now;
    if (ep->p.rx_full_timeout_ms &&
        now - ep->full_since_ns >= ep->p.rx_full_timeout_ms * 1000000ull && ep->fatal == 0) {
        efarm_log(EFARM_LOG_ERROR,
                  "nothing could be received for %llu ms (EFARM_RX_FULL_TIMEOUT_MS): every receive "
                  "buffer holds a packet waiting and %u unexpected messages (%llu bytes) fill "
                  "EFARM_UNEXP_MAX_BYTES=%llu; the endpoint fails. Raise EFARM_UNEXP_MAX_BYTES",
                  (unsigned long long)((now - ep->full_since_ns) / 1000000), ep->unexp_live,
                  (unsigned long long)ep->stored_bytes, (unsigned long long)ep->p.unexp_max_bytes);
        efarm_ep_fail(ep, EFARM_E(PROTO_RX_FULL));
    }
}

/* Decode a stored packet again (it decoded when it arrived, so this cannot fail). */
static void rxpkt_decode(const struct efarm_rxpkt *stored, struct efarm_pkt *pkt)
{
    int ret = efarm_pkt_decode(stored->data, stored->len, pkt);

    (void)ret;
}

/* ---- Per-type handling: the rows of efarm_pkt_types.h -------------------------------- */

/* A type no row serves (none that decodes today): count and drop. */
static void rx_unsupported(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt)
{
    ep->cnt.unsupported++;
    efarm_log_ratelimited(EFARM_LOG_WARN, "%s from peer %u is not served by this engine; dropped",
                          efarm_pkt_type_info(pkt->type)->name, peer);
}

int efarm_req_refuse(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt,
                     struct efarm_rxpkt *stored, uint32_t rx_id)
{
    (void)stored, (void)rx_id;
    rx_unsupported(ep, peer, pkt);
    return 0;
}

/* Process the in-order REQ with its row's handler. */
static inline int req_process(struct efarm_ep *ep, struct efarm_peer_state *st,
                              const struct efarm_pkt *pkt, struct efarm_rxpkt *stored,
                              uint32_t rx_id)
{
    return efarm_pkt_row(pkt->type)->serve(ep, st->peer, pkt, stored, rx_id);
}

/* A packet of a message already being received (or waiting unexpected), or one past its turn. */
static int segment_or_stale(struct efarm_ep *ep, struct efarm_peer_state *st,
                            const struct efarm_pkt *pkt, struct efarm_rxpkt *stored, uint32_t rx_id)
{
    uint32_t msg_id = (uint32_t)pkt->value[EFARM_PKT_F_MSG_ID];
    struct efarm_op *op = NULL;

    if (efarm_pkt_row(pkt->type)->data & RX_SEG_OFFSET) {
        op = efarm_op_map_find(ep, EFARM_OP_RX, st->peer, msg_id);
        if (op == NULL) {
            struct efarm_unexp *ux = efarm_unexp_map_find(ep, st->peer, msg_id);

            if (ux != NULL)
                return efarm_unexp_segment(ep, ux, pkt, stored, rx_id);
        }
    }
    if (op == NULL) {
        ep->cnt.stale_ids++;
        efarm_log_ratelimited(EFARM_LOG_INFO, "%s msg_id %u from peer %u is behind %u, dropped",
                              efarm_pkt_type_info(pkt->type)->name,
                              (uint32_t)pkt->value[EFARM_PKT_F_MSG_ID], st->peer, st->rx_msg_id);
        return 0;
    }
    return efarm_rtm_segment(ep, op, pkt, stored, rx_id);
}

/*
 * Put a stored packet in its window slot, after packets of the same message,
 * taking a window for the peer first if it has none. -ENOMEM when no window
 * could be had (the pool holds one per peer: only an allocation failure).
 */
static int window_put(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_rxpkt *rp)
{
    struct efarm_rxpkt **slot;

    if (st->win == NULL) {
        st->win = efarm_pool_alloc(&ep->windows);
        if (st->win == NULL)
            return -ENOMEM;
        memset(st->win, 0, ep->p.recvwin * sizeof(*st->win));
    }
    slot = &st->win[rp->msg_id & (ep->p.recvwin - 1)];
    if (*slot == NULL)
        st->win_count++;
    while (*slot != NULL)
        slot = &(*slot)->next;
    rp->next = NULL;
    *slot = rp;
    return 0;
}

/* No packet waits in the window and none overflows: give the window back. */
static void window_maybe_release(struct efarm_ep *ep, struct efarm_peer_state *st)
{
    if (st->win != NULL && st->win_count == 0 && st->overflow_count == 0) {
        efarm_pool_release(&ep->windows, st->win);
        st->win = NULL;
    }
}

/* No memory for a window: the endpoint cannot keep the packet, so it fails, saying why. */
static void window_oom(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_rxpkt *rp)
{
    efarm_log(EFARM_LOG_ERROR,
              "no memory for a reorder window of peer %u (%u windows in use, %zu bytes each): "
              "the endpoint fails",
              st->peer, ep->windows.in_use, (size_t)ep->p.recvwin * sizeof(*st->win));
    efarm_rxpkt_release(ep, rp);
    efarm_ep_fail(ep, -ENOMEM);
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
        if (window_put(ep, st, rp))
            window_oom(ep, st, rp);
    }
}

/* The peer's in-order message waits for room; progress retries it. */
static void stall(struct efarm_ep *ep, struct efarm_peer_state *st)
{
    if (st->flags & EFARM_PS_STALLED)
        return;
    st->flags |= EFARM_PS_STALLED;
    efarm_list_append(&ep->stalled_peers, &st->stalled_link);
    efarm_ep_pending(ep);
}

/* The in-order message was processed: move on and run the successors that wait. */
void efarm_rx_window_advance(struct efarm_ep *ep, struct efarm_peer_state *st)
{
    for (;;) {
        struct efarm_rxpkt **slot, *head, *rest;
        struct efarm_pkt pkt;
        int ret;

        st->rx_msg_id++;
        if (st->overflow_count && (st->rx_msg_id & (ep->p.recvwin - 1)) == 0)
            overflow_refill(ep, st);
        if (st->win == NULL)
            return;
        slot = &st->win[st->rx_msg_id & (ep->p.recvwin - 1)];
        head = *slot;
        if (head == NULL) {
            window_maybe_release(ep, st);
            return;
        }
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
        st->win_count--;
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
    } else if (window_put(ep, st, rp)) {
        window_oom(ep, st, rp);
        return 0;
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
        if (st->win != NULL && st->win[msg_id & (ep->p.recvwin - 1)] != NULL)
            return keep(ep, st, pkt, cqe, false); /* its message waits for room: join it */
        ret = req_process(ep, st, pkt, NULL, cqe->rx_id);
        if (ret == -EAGAIN) {
            ep->cnt.deferred++;
            ret = keep(ep, st, pkt, cqe, false);
            stall(ep, st);
            return ret;
        }
        efarm_rx_window_advance(ep, st);
        return ret;
    }
    ep->cnt.out_of_order++;
    return keep(ep, st, pkt, cqe, (uint32_t)ahead >= ep->p.recvwin);
}

/*
 * A packet by its row: a control packet, a REQ sent again after a READ_NACK,
 * a REQ in msg_id order, or one served at once (kept while its reply finds no
 * buffer or no operation is free, retried from progress:
 * efarm_rma_pending_progress; a runt write's packet may be kept by its
 * operation, EFARM_RX_KEEP).
 */
static int rx_dispatch(struct efarm_ep *ep, struct efarm_peer_state *st,
                       const struct efarm_pkt *pkt, const struct efarm_dev_cqe *cqe)
{
    const struct efarm_pkt_row *row = efarm_pkt_row(pkt->type);
    int ret;

    if (row->ctrl != NULL) {
        row->ctrl(ep, st->peer, pkt);
        return 0;
    }
    if (row->on_nack != NULL && (pkt->flags & EFARM_REQ_READ_NACK) &&
        row->on_nack(ep, st->peer, pkt))
        return 0;
    if (row->ordered)
        return rx_ordered(ep, st, pkt, cqe);
    if (row->serve == NULL) {
        rx_unsupported(ep, st->peer, pkt);
        return 0;
    }
    /* The 0-byte trigger with no rma_iov exists to get our HANDSHAKE, sent already. */
    if (row->trigger && pkt->value[EFARM_PKT_F_RMA_IOV_COUNT] == 0 && pkt->payload_length == 0)
        return 0;
    ret = row->serve(ep, st->peer, pkt, NULL, cqe->rx_id);
    if (ret == -EAGAIN)
        return efarm_rma_pending_keep(ep, st->peer, cqe);
    return ret;
}

/*
 * The receiving fast path: an EAGER_TAGRTM without optional headers, or with
 * only the connid header (efarm asks its peers for it) naming the peer's
 * connid, from a peer known by its address handle, in its turn (nothing waits
 * in the peer's window), that a posted receive matches. It reads the first
 * word and the fields at the codec's offsets instead of decoding, then does
 * what rx_ordered and efarm_rtm_recv do for it (efarm_rx_eager_fast, in
 * msg_recv.c next to the matching it inlines). Anything else, also a message
 * no receive matches, is left untouched to the general path (returns false).
 * This sets up the format it checks, from the codec's tables.
 */
void efarm_rx_fast_init(struct efarm_ep *ep)
{
    const uint8_t type = EFARM_PKT_EAGER_TAGRTM;
    const struct efarm_pkt_type_info *info = efarm_pkt_type_info(type);
    unsigned w_id = 0, w_tag = 0;
    int off_id = efarm_pkt_field_offset(type, EFARM_PKT_F_MSG_ID, &w_id),
        off_tag = efarm_pkt_field_offset(type, EFARM_PKT_F_TAG, &w_tag);
    uint8_t first[4] = {type, EFARM_PROTO_VERSION};

    memset(&ep->rx_fast, 0, sizeof(ep->rx_fast));
    if (off_id < 0 || off_tag < 0 || w_id != 4 || w_tag != 8 ||
        !(info->traits & EFARM_PKT_T_TAGGED))
        return;
    efarm_store_le16(first + 2, EFARM_REQ_MSG | EFARM_REQ_TAGGED);
    ep->rx_fast.word = efarm_load_le32(first);
    efarm_store_le16(first + 2, EFARM_REQ_MSG | EFARM_REQ_TAGGED | EFARM_PKT_FLAG_CONNID_HDR);
    ep->rx_fast.word_connid = efarm_load_le32(first);
    ep->rx_fast.hdr_size = info->hdr_size;
    ep->rx_fast.off_msg_id = (uint16_t)off_id;
    ep->rx_fast.off_tag = (uint16_t)off_tag;
    ep->rx_fast.type = type;
}

void efarm_rx_completion(struct efarm_ep *ep, const struct efarm_dev_cqe *cqe)
{
    struct efarm_peer_state *st;
    struct efarm_pkt pkt;
    efarm_peer_t peer;
    int ret;

    if (cqe->status) {
        efarm_log_ratelimited(EFARM_LOG_WARN, "receive completion error: %s",
                              efarm_strerror(cqe->status));
        if (!cqe->unsolicited)
            efarm_dev_rx_release_inl(ep->dev, cqe->rx_id);
        return;
    }
    if (cqe->op == EFARM_DEV_OP_RECV_WRITE_IMM) {
        efarm_write_imm_recv(ep, cqe); /* no packet: the write placed its data */
        if (!cqe->unsolicited)
            efarm_dev_rx_release_inl(ep->dev, cqe->rx_id);
        return;
    }
    ep->cnt.rx_pkts++;
    ep->cnt.rx_bytes += cqe->len;
    if (ep->observe)
        efarm_observe_rx(ep, cqe);
    ret = efarm_pkt_decode(cqe->data, cqe->len, &pkt);
    if (ret) {
        ep->cnt.decode_errors++;
        efarm_log_ratelimited(EFARM_LOG_WARN, "undecodable packet of %u bytes from QPN %u: %s",
                              cqe->len, cqe->src_qpn, efarm_strerror(ret));
        efarm_dev_rx_release_inl(ep->dev, cqe->rx_id);
        return;
    }
    ep->cnt.rx_by_type[pkt.type]++;
    peer = efarm_peer_identify(ep, cqe, &pkt);
    st = peer == EFARM_PEER_NONE ? NULL : efarm_peer_state_get(ep, peer);
    if (st == NULL) {
        efarm_dev_rx_release_inl(ep->dev, cqe->rx_id);
        return;
    }
    /* Heard from: no liveness probe for this period (proto_probe.c). */
    st->heard_tick = ep->probe_tick;
    /* The first packet from a peer, whatever it is, gets our HANDSHAKE (section 2.1). */
    if (!(st->flags & EFARM_PS_HS_SENT))
        efarm_handshake_owe(ep, st);
    if (rx_dispatch(ep, st, &pkt, cqe) != EFARM_RX_KEEP)
        efarm_dev_rx_release_inl(ep->dev, cqe->rx_id);
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
        efarm_rx_window_advance(ep, st);
        st->flags &= ~EFARM_PS_RETRY;
    }
}
