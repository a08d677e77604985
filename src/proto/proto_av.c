/*
 * The address vector, peer state and the handshake subprotocol (section 2).
 *
 * Peers live in one array sized at open; two chained hash tables over it find
 * a peer by (GID, QPN) when an address arrives and by (AH number, QPN) when a
 * packet does. Several entries may share (GID, QPN): a process that exited
 * and one that reused its QP number differ only by connid (section 4.4), so a
 * packet that carries a connid is matched on it, and a connid that names no
 * entry is a packet from a dead QP: counted and dropped.
 *
 * Handshake: the first packet from a peer makes us send our HANDSHAKE, whether
 * or not the application ever waits for anything from that peer. Until the
 * peer's HANDSHAKE arrives our REQs carry the raw-address header (the peer may
 * not know us); afterwards they carry the connid header if the peer asked for
 * it, or the raw address on every REQ if it asked for constant header length.
 * A send that needs an extra feature before any packet went to the peer (a DC
 * send) first sends a 0-byte EAGER_RTW, as the reference implementation does,
 * so the peer answers with its HANDSHAKE.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "efarm_byteorder.h"
#include "efarm_time.h"
#include "proto_internal.h"
#include "proto_messages.h"
#include "proto_ops.h"
#include "proto_peers.h"
#include "proto_transmit.h"

static uint32_t hash_addr(const struct efarm_ep *ep, const uint8_t gid[EFARM_GID_LEN], uint16_t qpn)
{
    uint64_t a = efarm_load_le64(gid), b = efarm_load_le64(gid + 8);
    uint64_t h = (a * 0x9e3779b97f4a7c15ull) ^ (b * 0xc2b2ae3d27d4eb4full) ^ qpn;

    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return (uint32_t)(h >> 32) & ep->hash_mask;
}

int efarm_av_init(struct efarm_ep *ep)
{
    uint32_t buckets = 16;
    int ret;

    /* At most one entry per bucket on average: 8 bytes a peer for both tables. */
    while (buckets < ep->p.av_size)
        buckets *= 2;
    ep->hash_mask = buckets - 1;
    ep->peers = efarm_aligned_calloc(ep->p.av_size, sizeof(*ep->peers));
    ep->addr_hash = efarm_calloc(buckets, sizeof(*ep->addr_hash));
    ep->ahn_hash = efarm_calloc(buckets, sizeof(*ep->ahn_hash));
    if (!ep->peers || !ep->addr_hash || !ep->ahn_hash) {
        ret = -ENOMEM;
        goto err_free;
    }
    memset(ep->addr_hash, 0xff, buckets * sizeof(*ep->addr_hash));
    memset(ep->ahn_hash, 0xff, buckets * sizeof(*ep->ahn_hash));
    ep->peer_state_size = sizeof(struct efarm_peer_state);
    ret = efarm_pool_construct(&ep->peer_states, ep->peer_state_size, 64, ep->p.av_size,
                               ep->p.av_size < 8 ? ep->p.av_size : 8);
    if (ret)
        goto err_free;
    /* At most one window per peer; they come and go with reordering. */
    ret = efarm_pool_construct(&ep->windows, ep->p.recvwin * sizeof(struct efarm_rxpkt *), 16,
                               ep->p.av_size, ep->p.av_size < 4 ? ep->p.av_size : 4);
    if (ret) {
        efarm_pool_destruct(&ep->peer_states);
        goto err_free;
    }
    return 0;

err_free:
    free(ep->ahn_hash);
    free(ep->addr_hash);
    free(ep->peers);
    return ret;
}

void efarm_av_fini(struct efarm_ep *ep)
{
    efarm_pool_destruct(&ep->windows);
    efarm_pool_destruct(&ep->peer_states);
    free(ep->ahn_hash);
    free(ep->addr_hash);
    free(ep->peers);
}

static efarm_peer_t av_find(const struct efarm_ep *ep, const uint8_t gid[EFARM_GID_LEN],
                            uint16_t qpn, uint32_t connid)
{
    for (uint32_t i = ep->addr_hash[hash_addr(ep, gid, qpn)]; i != EFARM_PEER_NONE;
         i = ep->peers[i].addr_next) {
        const struct efarm_peer *p = &ep->peers[i];

        if (p->qpn == qpn && p->connid == connid && !memcmp(efarm_peer_gid(p), gid, EFARM_GID_LEN))
            return i;
    }
    return EFARM_PEER_NONE;
}

/*
 * The (AHN, QPN) chains hold peers whose handle is live, newest (highest
 * index) first: a packet without connid goes to the latest incarnation.
 */
static void ahn_link(struct efarm_ep *ep, efarm_peer_t idx)
{
    struct efarm_peer *p = &ep->peers[idx];
    uint32_t *link = &ep->ahn_hash[efarm_hash_ahn(ep, p->ahn, p->qpn)];

    while (*link != EFARM_PEER_NONE && *link > idx)
        link = &ep->peers[*link].ahn_next;
    p->ahn_next = *link;
    *link = idx;
}

static void ahn_unlink(struct efarm_ep *ep, efarm_peer_t idx)
{
    struct efarm_peer *p = &ep->peers[idx];
    uint32_t *link = &ep->ahn_hash[efarm_hash_ahn(ep, p->ahn, p->qpn)];

    while (*link != EFARM_PEER_NONE && *link != idx)
        link = &ep->peers[*link].ahn_next;
    if (*link == idx)
        *link = p->ahn_next;
    p->ahn_next = EFARM_PEER_NONE;
    p->ahn = EFARM_DEV_AHN_UNKNOWN;
}

/* ---- Address handles at the device's limit ---------------------------------------- */

/*
 * EFA holds a bounded number of address handles (max_ah): a job that talks
 * to more remote NICs than that releases the least recently used handle with
 * nothing posted on it, as libfabric's EFA provider does, and creates it
 * again at the next post to one of its peers (efarm_peer_ah_ready). A
 * released handle's peers stay known by GID: their packets then arrive with
 * no AH number, and efarm_peer_identify finds them by the GID the CQ gives.
 * Without that (a device without CQ_WITH_SGID) only handles whose peers all
 * came with a raw address (implicit) are released, as libfabric does: their
 * REQs carry the address until the handshake.
 */
static bool ah_evictable(struct efarm_ep *ep, struct efarm_dev_ah *ah)
{
    if (ah->user_mark == ep->ah_pass)
        return false; /* a packet is posted with it and not yet completed */
    for (uint32_t i = ah->user_head; i != EFARM_PEER_NONE; i = ep->peers[i].ah_next) {
        const struct efarm_peer *p = &ep->peers[i];
        struct efarm_link *link;

        if (!ep->caps.cq_with_sgid && !(p->flags & EFARM_PEER_IMPLICIT))
            return false;
        if (p->st == NULL)
            continue;
        for (link = p->st->ops.next; link != &p->st->ops; link = link->next)
            if (efarm_container_of(link, struct efarm_op, peer_link)->reads_inflight)
                return false; /* RDMA posted with it */
    }
    return true;
}

/* Release the least recently used handle other than keep that nothing is posted with. */
static bool ah_evict_one(struct efarm_ep *ep, const struct efarm_dev_ah *keep)
{
    struct efarm_dev_ah *victim = NULL, *ah;

    ep->ah_pass++;
    for (uint32_t i = 0; i < ep->p.tx_pkts; i++) {
        const struct efarm_txpkt *tx = &ep->txpkts[i];

        if (tx->peer != EFARM_PEER_NONE && !tx->queued) /* posted, not waiting on a list */
            ep->peers[tx->peer].ah->user_mark = ep->ah_pass;
    }
    for (ah = efarm_dev_ah_next(ep->dev, NULL); ah; ah = efarm_dev_ah_next(ep->dev, ah)) {
        if (ah == keep || !efarm_dev_ah_live(ah) ||
            (victim && ah->user_stamp >= victim->user_stamp))
            continue;
        if (ah_evictable(ep, ah))
            victim = ah;
        else
            ah->user_mark = ep->ah_pass;
    }
    if (victim == NULL)
        return false;
    for (uint32_t i = victim->user_head; i != EFARM_PEER_NONE; i = ep->peers[i].ah_next)
        ahn_unlink(ep, i);
    efarm_dev_ah_release(ep->dev, victim);
    return true;
}

/* Once per process: the device's handle limit is reached (a normal event at scale). */
static void ah_limit_note(const struct efarm_ep *ep)
{
    static atomic_flag noted = ATOMIC_FLAG_INIT;
    struct efarm_dev_ah_stats st;

    if (atomic_flag_test_and_set(&noted))
        return;
    efarm_dev_ah_stats(ep->dev, &st);
    efarm_log(EFARM_LOG_WARN,
              "%s holds no more address handles for this endpoint (max_ah %u for the NIC, "
              "one per remote NIC talked to; this endpoint's share %u, with %u rank%s of the "
              "node on the NIC): efarm releases the least recently used one with nothing in "
              "flight and creates it again when needed, a device command each time%s",
              ep->caps.name, st.max, st.share, st.sharers, st.sharers == 1 ? "" : "s",
              efarm_device_kind() == EFARM_DEVICE_SIM ? " (efasim: EFASIM_MAX_AH)" : "");
}

static int ah_revive(struct efarm_ep *ep, struct efarm_dev_ah *ah)
{
    int ret = efarm_dev_ah_revive(ep->dev, ah);

    if (ret == -ENOMEM) {
        ah_limit_note(ep);
        if (ah_evict_one(ep, ah))
            ret = efarm_dev_ah_revive(ep->dev, ah);
    }
    if (ret)
        return ret;
    for (uint32_t i = ah->user_head; i != EFARM_PEER_NONE; i = ep->peers[i].ah_next) {
        ep->peers[i].ahn = ah->ahn;
        ahn_link(ep, i);
    }
    return 0;
}

/*
 * How long a packet waits for an address handle when this endpoint holds none
 * to release: the device's table is full with other endpoints' or processes'
 * handles, which they may release. Then the peer fails, with one error.
 */
#define EFARM_AH_STARVE_NS (10ull * 1000000000ull)

int efarm_av_ah_revive(struct efarm_ep *ep, efarm_peer_t peer)
{
    int ret = ah_revive(ep, ep->peers[peer].ah);
    struct efarm_dev_ah_stats st;
    uint64_t now;

    if (ret != -ENOMEM) {
        if (ret == 0)
            ep->ah_starved_ns = 0;
        return ret;
    }
    efarm_dev_ah_stats(ep->dev, &st);
    now = efarm_now_ns();
    if (st.live > 0) {
        /* Every other handle of ours has work posted: it completes, and progress posts again. */
        ep->ah_starved_ns = 0;
        efarm_log_ratelimited(EFARM_LOG_DEBUG,
                              "no address handle free for peer %u: its packet waits", peer);
        efarm_ep_pending(ep);
        return -EAGAIN;
    }
    if (ep->ah_starved_ns == 0)
        ep->ah_starved_ns = now;
    if (now - ep->ah_starved_ns < EFARM_AH_STARVE_NS) {
        efarm_ep_pending(ep);
        return -EAGAIN;
    }
    efarm_log_ratelimited(EFARM_LOG_ERROR,
                          "%s has refused address handles for %llu s and this endpoint holds "
                          "none to release: the device's table (max_ah %u) is full with other "
                          "endpoints' or processes' handles; peer %u fails",
                          ep->caps.name, EFARM_AH_STARVE_NS / 1000000000ull, st.max, peer);
    return -ENOMEM;
}

/*
 * Add a peer; creates (or reuses) the address handle for its GID. When the
 * device holds no more, the peer has none until its first post
 * (efarm_peer_ah_ready), which releases another: an insert evicts nothing.
 */
static int av_add(struct efarm_ep *ep, const uint8_t gid[EFARM_GID_LEN], uint16_t qpn,
                  uint32_t connid, uint32_t flags, efarm_peer_t *peer_p)
{
    struct efarm_dev_ah *ah = NULL;
    struct efarm_peer *p;
    uint32_t idx, b;
    int ret;

    if (ep->npeers == ep->p.av_size)
        return -ENOSPC;
    ret = efarm_dev_ah_get(ep->dev, gid, &ah);
    if (ret == -ENOMEM && ah != NULL)
        ah_limit_note(ep); /* the first post to one of its peers makes room */
    else if (ret)
        return ret;
    idx = ep->npeers++;
    p = &ep->peers[idx];
    p->qpn = qpn;
    p->connid = connid;
    p->ah = ah;
    p->ahn = efarm_dev_ah_number(ah);
    p->flags = EFARM_PEER_USED | flags;
    p->st = NULL;
    p->ah_next = ah->user_head;
    ah->user_head = idx;
    /* Newest first: a packet without connid goes to the latest incarnation. */
    b = hash_addr(ep, gid, qpn);
    p->addr_next = ep->addr_hash[b];
    ep->addr_hash[b] = idx;
    p->ahn_next = EFARM_PEER_NONE;
    if (efarm_dev_ah_live(ah))
        ahn_link(ep, idx);
    *peer_p = idx;
    return 0;
}

int efarm_av_insert(struct efarm_ep *ep, const uint8_t raw[EFARM_RAW_ADDR_LEN],
                    efarm_peer_t *peer_p)
{
    uint16_t qpn = efarm_load_le16(raw + offsetof(struct efarm_wire_raw_addr, qpn));
    uint32_t connid = efarm_load_le32(raw + offsetof(struct efarm_wire_raw_addr, connid));
    efarm_peer_t peer = av_find(ep, raw, qpn, connid);

    if (peer != EFARM_PEER_NONE) {
        ep->peers[peer].flags &= ~EFARM_PEER_IMPLICIT;
        *peer_p = peer;
        return 0;
    }
    return av_add(ep, raw, qpn, connid, 0, peer_p);
}

int efarm_av_set_departing(struct efarm_ep *ep, efarm_peer_t peer)
{
    if (peer >= ep->npeers)
        return -EINVAL;
    ep->peers[peer].flags |= EFARM_PEER_DEPARTS;
    return 0;
}

int efarm_av_lookup(const struct efarm_ep *ep, efarm_peer_t peer, uint8_t raw[EFARM_RAW_ADDR_LEN])
{
    const struct efarm_peer *p;

    if (peer >= ep->npeers)
        return -EINVAL;
    p = &ep->peers[peer];
    memset(raw, 0, EFARM_RAW_ADDR_LEN);
    memcpy(raw, efarm_peer_gid(p), EFARM_GID_LEN);
    efarm_store_le16(raw + offsetof(struct efarm_wire_raw_addr, qpn), p->qpn);
    efarm_store_le32(raw + offsetof(struct efarm_wire_raw_addr, connid), p->connid);
    return 0;
}

struct efarm_peer_state *efarm_peer_state_get(struct efarm_ep *ep, efarm_peer_t peer)
{
    struct efarm_peer *p = &ep->peers[peer];
    struct efarm_peer_state *st = p->st;

    if (st != NULL)
        return st;
    /* First contact: the one allocation a peer ever causes (the pool is bounded by av_size). */
    st = efarm_pool_alloc(&ep->peer_states);
    if (st == NULL)
        return NULL;
    memset(st, 0, ep->peer_state_size);
    st->peer = peer;
    st->tx_msg_id = ep->p.first_msg_id;
    st->rx_msg_id = ep->p.first_msg_id;
    efarm_list_init(&st->hs_link);
    efarm_list_init(&st->backoff_link);
    efarm_list_init(&st->stalled_link);
    efarm_list_init(&st->rnr_queue);
    efarm_list_init(&st->hs_waiters);
    efarm_list_init(&st->ops);
    efarm_list_init(&st->overflow);
    p->st = st;
    ep->npeer_states++;
    return st;
}

efarm_peer_t efarm_peer_identify(struct efarm_ep *ep, const struct efarm_dev_cqe *cqe,
                                 const struct efarm_pkt *pkt)
{
    bool has_connid = pkt->present & EFARM_PKT_HAS(CONNID);
    uint32_t connid = (uint32_t)pkt->value[EFARM_PKT_F_CONNID];
    uint16_t qpn = (uint16_t)cqe->src_qpn;
    bool seen = false;
    efarm_peer_t peer;

    if (pkt->present & EFARM_PKT_HAS_RAW_ADDR) {
        /* A REQ from a peer that has not heard our HANDSHAKE: its address is in the packet. */
        const struct efarm_raw_addr *ra = &pkt->raw_addr;

        peer = av_find(ep, ra->gid, ra->qpn, ra->connid);
        if (peer != EFARM_PEER_NONE)
            return peer;
        if (av_add(ep, ra->gid, ra->qpn, ra->connid, EFARM_PEER_IMPLICIT, &peer)) {
            efarm_log_ratelimited(EFARM_LOG_WARN,
                                  "address vector full (%u peers): packet from "
                                  "an unknown sender dropped",
                                  ep->npeers);
            ep->cnt.unknown_sender++;
            return EFARM_PEER_NONE;
        }
        ep->cnt.implicit_peers++;
        return peer;
    }
    if (cqe->ahn != EFARM_DEV_AHN_UNKNOWN) {
        for (uint32_t i = ep->ahn_hash[efarm_hash_ahn(ep, cqe->ahn, qpn)]; i != EFARM_PEER_NONE;
             i = ep->peers[i].ahn_next) {
            const struct efarm_peer *p = &ep->peers[i];

            if (p->ahn != cqe->ahn || p->qpn != qpn)
                continue;
            if (!has_connid || p->connid == connid)
                return i;
            seen = true;
        }
    } else if (cqe->has_sgid) {
        for (uint32_t i = ep->addr_hash[hash_addr(ep, cqe->sgid, qpn)]; i != EFARM_PEER_NONE;
             i = ep->peers[i].addr_next) {
            const struct efarm_peer *p = &ep->peers[i];

            if (p->qpn != qpn || memcmp(efarm_peer_gid(p), cqe->sgid, EFARM_GID_LEN))
                continue;
            if (!has_connid || p->connid == connid)
                return i;
            seen = true;
        }
    }
    if (has_connid && cqe->ahn != EFARM_DEV_AHN_UNKNOWN && efarm_dev_ah_released(ep->dev)) {
        /*
         * A completion polled after its sender's handle was released carries
         * the number the handle had, which the device may since have given
         * another GID: the connid finds the sender (rare: a scan).
         */
        for (peer = 0; peer < ep->npeers; peer++)
            if (ep->peers[peer].qpn == qpn && ep->peers[peer].connid == connid)
                return peer;
    }
    if (seen) {
        ep->cnt.connid_mismatch++;
        efarm_log_ratelimited(EFARM_LOG_INFO,
                              "%s with connid %#x from QPN %u: no live peer "
                              "(a dead QP's number reused?), dropped",
                              efarm_pkt_type_info(pkt->type)->name, connid, qpn);
    } else {
        ep->cnt.unknown_sender++;
        efarm_log_ratelimited(EFARM_LOG_INFO,
                              "%s from unknown QPN %u without raw address, "
                              "dropped",
                              efarm_pkt_type_info(pkt->type)->name, qpn);
    }
    return EFARM_PEER_NONE;
}

/* ---- Handshake -------------------------------------------------------------------- */

void efarm_handshake_build(const struct efarm_ep *ep, struct efarm_pkt *pkt, uint8_t extra[8])
{
    efarm_store_le64(extra, ep->extra_info);
    efarm_pkt_init(pkt, EFARM_PKT_HANDSHAKE);
    /* Like the reference: always our connid, and the device version. */
    pkt->flags = EFARM_PKT_FLAG_CONNID_HDR | EFARM_HANDSHAKE_DEVICE_VERSION_HDR;
    efarm_pkt_set(pkt, EFARM_PKT_F_NEXTRA_P3, 4);
    pkt->extra_info = extra;
    efarm_pkt_set(pkt, EFARM_PKT_F_CONNID, ep->connid);
    efarm_pkt_set(pkt, EFARM_PKT_F_DEVICE_VERSION, ep->caps.device_version);
}

static int handshake_post(struct efarm_ep *ep, struct efarm_peer_state *st)
{
    uint8_t extra[8];
    struct efarm_pkt pkt;
    int ret;

    if (efarm_peer_failed(st))
        return 0; /* nothing goes to a failed peer */
    efarm_handshake_build(ep, &pkt, extra);
    ret = efarm_ctrl_send(ep, st->peer, NULL, &pkt);
    if (ret == 0) {
        st->flags |= EFARM_PS_HS_SENT;
        ep->cnt.handshakes_sent++;
    }
    return ret;
}

static void hs_queue(struct efarm_ep *ep, struct efarm_peer_state *st)
{
    if (st->flags & EFARM_PS_HS_QUEUED)
        return;
    st->flags |= EFARM_PS_HS_QUEUED;
    efarm_list_append(&ep->hs_queue, &st->hs_link);
    efarm_ep_pending(ep);
}

void efarm_handshake_owe(struct efarm_ep *ep, struct efarm_peer_state *st)
{
    if (st->flags & (EFARM_PS_HS_SENT | EFARM_PS_HS_OWED))
        return;
    st->flags |= EFARM_PS_HS_OWED;
    if (handshake_post(ep, st) == -EAGAIN)
        hs_queue(ep, st);
}

/* Send the HANDSHAKEs and triggers that found no send buffer, oldest first. */
void efarm_handshake_progress(struct efarm_ep *ep)
{
    struct efarm_link *link;

    while ((link = efarm_list_first(&ep->hs_queue)) != NULL) {
        struct efarm_peer_state *st = efarm_container_of(link, struct efarm_peer_state, hs_link);

        if ((st->flags & EFARM_PS_HS_OWED) && !(st->flags & EFARM_PS_HS_SENT) &&
            handshake_post(ep, st) == -EAGAIN)
            return;
        if (st->flags & EFARM_PS_TRIGGER_WANTED) {
            if (efarm_handshake_trigger(ep, st) == -EAGAIN)
                return;
            st->flags &= ~EFARM_PS_TRIGGER_WANTED;
        }
        efarm_list_remove(link);
        st->flags &= ~EFARM_PS_HS_QUEUED;
    }
}

void efarm_handshake_trigger_later(struct efarm_ep *ep, struct efarm_peer_state *st)
{
    if (efarm_handshake_trigger(ep, st) != -EAGAIN)
        return;
    st->flags |= EFARM_PS_TRIGGER_WANTED;
    hs_queue(ep, st);
}

void efarm_handshake_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt)
{
    struct efarm_peer_state *st = ep->peers[peer].st;
    uint64_t nextra = pkt->value[EFARM_PKT_F_NEXTRA_P3] - 3;
    bool first;

    ep->cnt.handshakes_recv++;
    /*
     * A peer may send its HANDSHAKE again (efarm's liveness probe, proto_probe.c):
     * the same words give the same state; only the log and counter below are
     * the first one's.
     */
    first = !(st->flags & EFARM_PS_HS_RECEIVED);
    /* Words beyond the first name features this engine does not know: ignore them. */
    st->extra_info = nextra ? efarm_pkt_extra_info(pkt, 0) : 0;
    /*
     * RDMA read does not work between the first EFA platform (device 0xEFA0) and
     * later ones: with a peer on the other side of that line, use no read
     * protocol, as libfabric does (efa_rdm_interop_rdma_read).
     */
    if ((pkt->present & EFARM_PKT_HAS(DEVICE_VERSION)) &&
        !efarm_proto_read_interop(ep->caps.device_version,
                                  (uint32_t)pkt->value[EFARM_PKT_F_DEVICE_VERSION]) &&
        (st->extra_info & EFARM_EXTRA_FEATURE_RDMA_READ)) {
        st->extra_info &= ~(EFARM_EXTRA_FEATURE_RDMA_READ | EFARM_EXTRA_FEATURE_RUNT_READ);
        if (first) {
            ep->cnt.read_platform_mismatch++;
            efarm_log(EFARM_LOG_INFO,
                      "peer %u: EFA device %#x cannot RDMA-read with our %#x: no read protocols",
                      peer, (unsigned)pkt->value[EFARM_PKT_F_DEVICE_VERSION],
                      ep->caps.device_version);
        }
    }
    st->flags |= EFARM_PS_HS_RECEIVED;
    efarm_log(EFARM_LOG_DEBUG, "peer %u HANDSHAKE: extra_info %#llx", peer,
              (unsigned long long)st->extra_info);
    efarm_hs_waiters_release(ep, st);
}

int efarm_handshake_trigger(struct efarm_ep *ep, struct efarm_peer_state *st)
{
    struct efarm_pkt pkt;
    int ret;

    if (st->flags & (EFARM_PS_HS_RECEIVED | EFARM_PS_REQ_SENT | EFARM_PS_TRIGGER | EFARM_PS_FAILED))
        return 0;
    /* A 0-byte emulated write with no rma_iov: the peer writes nothing and answers. */
    efarm_pkt_init(&pkt, EFARM_PKT_EAGER_RTW);
    pkt.flags = EFARM_REQ_RMA;
    efarm_pkt_set(&pkt, EFARM_PKT_F_RMA_IOV_COUNT, 0);
    efarm_pkt_set_raw_addr(ep, &pkt);
    ret = efarm_ctrl_send(ep, st->peer, NULL, &pkt);
    if (ret == 0) {
        st->flags |= EFARM_PS_TRIGGER;
        ep->cnt.handshake_triggers++;
    }
    return ret;
}

/* ---- Failed peers ------------------------------------------------------------------ */

/* "peer 3 (QPN 1234, connid 0x5678, GID ...)" for logs. */
static void peer_describe(const struct efarm_ep *ep, efarm_peer_t peer, char *out, size_t n)
{
    const struct efarm_peer *p = &ep->peers[peer];
    int len = snprintf(out, n, "peer %u (QPN %u, connid %#x, GID ", peer, p->qpn, p->connid);

    for (unsigned i = 0; i < EFARM_GID_LEN && len > 0 && (size_t)len + 3 < n; i++)
        len += snprintf(out + len, n - (size_t)len, "%02x", efarm_peer_gid(p)[i]);
    if (len > 0 && (size_t)len + 2 < n)
        snprintf(out + len, n - (size_t)len, ")");
}

void efarm_peer_fail(struct efarm_ep *ep, efarm_peer_t peer, int status, uint8_t pkt_type,
                     const char *lost)
{
    struct efarm_peer_state *st = ep->peers[peer].st;
    /* A peer that may depart (efarm_av_set_departing) ends so: said at info level. */
    const bool departs = ep->peers[peer].flags & EFARM_PEER_DEPARTS;
    char who[96];

    peer_describe(ep, peer, who, sizeof(who));
    if (!(st->flags & EFARM_PS_FAILED)) {
        st->flags |= EFARM_PS_FAILED | EFARM_PS_FAIL_PENDING;
        st->fail_status = status;
        efarm_list_append(&ep->failed_peers, &st->fail_link);
        efarm_ep_pending(ep);
        ep->cnt.peers_failed++;
        efarm_log(
            departs ? EFARM_LOG_INFO : EFARM_LOG_WARN,
            "%s failed: a packet to it (%s) failed at the device: %s; every operation with it ends "
            "with this error",
            who, efarm_pkt_type_info(pkt_type)->name, efarm_strerror(status));
    }
    if (ep->fatal)
        return;
    if (status == EFARM_E(DEV_FLUSHED)) {
        efarm_log(EFARM_LOG_ERROR,
                  "the device flushed a %s to %s: our QP is in the error state, "
                  "nothing can be sent or received; the endpoint fails",
                  efarm_pkt_type_info(pkt_type)->name, who);
        efarm_ep_fail(ep, status);
        return;
    }
    if (lost == NULL)
        return;
    if (departs) {
        /* It may have left (efarm_av_set_departing): what it held reached it first. */
        efarm_log(EFARM_LOG_INFO,
                  "%s: lost %s (%s: %s); it may exit without telling us (another job's "
                  "process), so only the peer fails",
                  who, lost, efarm_pkt_type_info(pkt_type)->name, efarm_strerror(status));
        return;
    }
    efarm_log(EFARM_LOG_ERROR,
              "%s: lost %s (%s: %s); a lost message cannot be recovered: the endpoint fails", who,
              lost, efarm_pkt_type_info(pkt_type)->name, efarm_strerror(status));
    efarm_ep_fail(ep, EFARM_E(PROTO_PEER_FAILED));
}

/* Fail what waits on each newly failed peer (from progress, outside any handler). */
void efarm_failed_peers_progress(struct efarm_ep *ep)
{
    struct efarm_link *link;

    while ((link = efarm_list_first(&ep->failed_peers)) != NULL) {
        struct efarm_peer_state *st = efarm_container_of(link, struct efarm_peer_state, fail_link);

        efarm_list_remove(link);
        st->flags &= ~(EFARM_PS_FAIL_PENDING | EFARM_PS_TRIGGER_WANTED);
        efarm_tx_drop_peer(ep, st);
        efarm_hs_waiters_fail(ep, st, st->fail_status);
        efarm_peer_ops_fail(ep, st);
    }
}
