/*
 * Peers: the address vector, identification of a packet's sender, the
 * HANDSHAKE and what it negotiated (proto_av.c), a failed peer, and liveness
 * probes (proto_probe.c).
 */
#ifndef EFARM_PROTO_PEERS_H
#define EFARM_PROTO_PEERS_H

#include "efarm_device_limits.h"
#include "proto_internal.h"

static inline struct efarm_peer *efarm_peer_get(struct efarm_ep *ep, efarm_peer_t peer)
{
    return &ep->peers[peer];
}

/* proto_av.c */
int efarm_av_init(struct efarm_ep *ep);
void efarm_av_fini(struct efarm_ep *ep);
struct efarm_peer_state *efarm_peer_state_get(struct efarm_ep *ep, efarm_peer_t peer);
/* The bucket of the (AHN, QPN) hash. */
static inline uint32_t efarm_hash_ahn(const struct efarm_ep *ep, uint16_t ahn, uint16_t qpn)
{
    uint32_t h = ((uint32_t)ahn << 16 | qpn) * 2654435761u;

    return (h ^ (h >> 15)) & ep->hash_mask;
}
/* The peer of an address handle and QPN (no connid to compare), or EFARM_PEER_NONE. */
static inline efarm_peer_t efarm_peer_by_ahn(const struct efarm_ep *ep, uint16_t ahn, uint16_t qpn)
{
    for (uint32_t i = ep->ahn_hash[efarm_hash_ahn(ep, ahn, qpn)]; i != EFARM_PEER_NONE;
         i = ep->peers[i].ahn_next)
        if (ep->peers[i].ahn == ahn && ep->peers[i].qpn == qpn)
            return i;
    return EFARM_PEER_NONE;
}
/*
 * Give the peer's address handle a device handle again (proto_av.c): 0;
 * -EAGAIN when the device holds no more and every other handle has work
 * posted (retry from progress); or the device's error.
 */
int efarm_av_ah_revive(struct efarm_ep *ep, efarm_peer_t peer);

/* Before posting to a peer: its handle live, stamped as the most recently used. */
static inline __attribute__((always_inline)) int efarm_peer_ah_ready(struct efarm_ep *ep,
                                                                     efarm_peer_t peer)
{
    struct efarm_dev_ah *ah = ep->peers[peer].ah;

    if (__builtin_expect(!efarm_dev_ah_live(ah), 0)) {
        int ret = efarm_av_ah_revive(ep, peer);

        if (ret)
            return ret;
    }
    ah->user_stamp = ++ep->ah_clock;
    return 0;
}

efarm_peer_t efarm_peer_identify(struct efarm_ep *ep, const struct efarm_dev_cqe *cqe,
                                 const struct efarm_pkt *pkt);
void efarm_handshake_owe(struct efarm_ep *ep, struct efarm_peer_state *st);
void efarm_handshake_progress(struct efarm_ep *ep);
void efarm_handshake_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt);
int efarm_handshake_trigger(struct efarm_ep *ep, struct efarm_peer_state *st);
void efarm_handshake_trigger_later(struct efarm_ep *ep, struct efarm_peer_state *st);

/* Whether REQs to this peer carry our raw address (before its HANDSHAKE, or if it asks). */
static inline bool efarm_peer_needs_raw_addr(const struct efarm_peer_state *st)
{
    return !(st->flags & EFARM_PS_HS_RECEIVED) ||
           (st->extra_info & EFARM_EXTRA_REQUEST_CONSTANT_HEADER_LENGTH);
}

/* Whether packets to this peer carry our connid (it asked, in its HANDSHAKE). */
static inline bool efarm_peer_wants_connid(const struct efarm_peer_state *st)
{
    return (st->flags & EFARM_PS_HS_RECEIVED) &&
           (st->extra_info & EFARM_EXTRA_REQUEST_CONNID_HEADER);
}

/*
 * Whether two EFA devices can RDMA-read each other's memory, by their device
 * versions (PCI device ids): the first platform, 0xEFA0, only with itself, later
 * ones only with later ones (libfabric's efa_rdm_interop_rdma_read).
 */
#define EFARM_EFA_DEVICE_GEN1 0xefa0u
static inline bool efarm_proto_read_interop(uint32_t mine, uint32_t peer)
{
    return (mine == EFARM_EFA_DEVICE_GEN1) == (peer == EFARM_EFA_DEVICE_GEN1);
}

static inline bool efarm_peer_has(const struct efarm_peer_state *st, uint64_t feature)
{
    return (st->flags & EFARM_PS_HS_RECEIVED) && (st->extra_info & feature);
}

/*
 * A packet to `peer` failed at the device (status, any but RNR): mark the
 * peer failed, fail what waits on it (from progress), and fail the endpoint
 * when something no request reports was lost (`lost`, says what).
 */
void efarm_peer_fail(struct efarm_ep *ep, efarm_peer_t peer, int status, uint8_t pkt_type,
                     const char *lost);
void efarm_failed_peers_progress(struct efarm_ep *ep);

/*
 * proto_probe.c: liveness probes. efarm_probe_check runs from progress while
 * an operation is in use (ep->probe_ops); efarm_probe_done ends a probe
 * (status 0: the peer's QP is alive) from its packet's completion.
 */
void efarm_probe_check(struct efarm_ep *ep);
void efarm_probe_done(struct efarm_ep *ep, struct efarm_txpkt *tx, int status);
/* proto_av.c: a HANDSHAKE of ours in pkt (extra: 8 bytes that must outlive pkt's encoding). */
void efarm_handshake_build(const struct efarm_ep *ep, struct efarm_pkt *pkt, uint8_t extra[8]);
static inline bool efarm_peer_failed(const struct efarm_peer_state *st)
{
    return st != NULL && (st->flags & EFARM_PS_FAILED);
}

#endif /* EFARM_PROTO_PEERS_H */
