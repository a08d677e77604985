/*
 * Liveness probes: a peer that vanishes in the middle of a rendezvous.
 *
 * A peer fails when a packet to it fails at the device (proto_av.c,
 * efarm_peer_fail). But during a rendezvous one side may wait with nothing
 * to send: a long-CTS sender for its CTS, a receiver that sent its last CTS
 * for the CTSDATA, a long-read sender for the EOR, a DC sender for its
 * RECEIPT, a one-sided operation for its response, a send for the peer's
 * HANDSHAKE. If the peer's process is gone (its QP destroyed), nothing of
 * ours fails and the operation would wait forever.
 *
 * So once per EFARM_PEER_PROBE_MS, progress scans each peer's operations. An
 * operation waits on its peer when nothing of its own is queued or in flight
 * (no packet, no RDMA read) and it is not on the work list: only a packet
 * from the peer can move it on. One that waited so at two scans in a row,
 * on a peer from which no packet took the general receive path since the
 * last scan, makes us send that peer a HANDSHAKE, once: the device either
 * delivers it (the peer's QP is alive, however slow its process: the wait
 * goes on, and the next probe may come a period later) or fails it
 * (remote QP gone, unreachable, unresponsive), which fails the peer through
 * the usual path, and every operation with it ends with the device's error.
 * A probe is sent between one and two periods after an operation began to
 * wait; its failure comes within the device's own timeout.
 *
 * Why a HANDSHAKE: it is the one packet every v4 implementation takes at
 * any time from a known peer and that changes nothing there. efarm takes a
 * repeated one as the same state (efarm_handshake_recv). libfabric's EFA
 * provider copies its feature words again and sets the flag it already set:
 * in 1.17 (rxr_pkt_handle_handshake_recv) and 1.18 an assert(!(peer->flags &
 * ..._HANDSHAKE_RECEIVED)) stands before that, live only in builds configured
 * with --enable-debug (release builds define NDEBUG), removed in 1.19 by
 * commit 4d8e286de ("remove assertion on duplicate handshake": av_xfer
 * fabtests send repeated HANDSHAKEs); 2.x (efa_rdm_pke_handle_handshake_recv)
 * also stores the host id and device version again, the same values. A
 * HANDSHAKE from an address it does not know is dropped with a warning, by
 * both (the device acknowledged it all the same: liveness is the device's
 * answer, not the peer's). A probe goes only to a peer that has our REQ or
 * knows us already, since the operation's own packets completed first.
 *
 * Cost: no clock read while no operation is in use (the fast paths take
 * none); with one in use, one clock read every EFARM_PROBE_POLLS progress
 * calls; the scan (each known peer's list of operations) once per period.
 * "Heard from" is a store of the scan count into the peer's state on the
 * general receive path
 * (the receiving fast path does not stamp it: a peer heard only through it
 * may be probed, which is harmless). A peer's state grows by that word (in
 * what was padding) and a flag.
 */
#include "proto_internal.h"
#include "proto_peers.h"
#include "proto_transmit.h"

#define EFARM_PROBE_POLLS 16u /* progress calls between clock reads while ops are in use */

/* Whether op can move on only by a packet from its peer: nothing of its own pending. */
static bool op_waits_on_peer(const struct efarm_op *op)
{
    return op->pkts_inflight == 0 && op->reads_inflight == 0 && !(op->flags & EFARM_OPF_IN_WORK);
}

static void probe_post(struct efarm_ep *ep, struct efarm_peer_state *st)
{
    uint8_t extra[8];
    struct efarm_pkt pkt;

    efarm_handshake_build(ep, &pkt, extra);
    /* No buffer free (-EAGAIN): the next scan tries again. */
    if (efarm_probe_send(ep, st->peer, &pkt) != 0)
        return;
    st->flags |= EFARM_PS_PROBING;
    ep->cnt.peer_probes++;
    efarm_log(EFARM_LOG_INFO,
              "peer %u: an operation waited on it for %llu ms or more and it sent nothing; "
              "probing it with a HANDSHAKE (EFARM_PEER_PROBE_MS)",
              st->peer, (unsigned long long)ep->p.peer_probe_ms);
}

static void probe_scan(struct efarm_ep *ep)
{
    /* Peers stamped with this tick were heard from since the last scan. */
    uint32_t tick = ep->probe_tick++;

    for (efarm_peer_t p = 0; p < ep->npeers; p++) {
        struct efarm_peer_state *st = ep->peers[p].st;
        struct efarm_link *link, *tmp;
        bool probe = false;

        if (st == NULL)
            continue;
        efarm_list_foreach_safe(link, tmp, &st->ops)
        {
            struct efarm_op *op = efarm_container_of(link, struct efarm_op, peer_link);

            if (efarm_peer_failed(st) || !op_waits_on_peer(op)) {
                op->flags &= ~EFARM_OPF_PROBE_AGED;
            } else if (!(op->flags & EFARM_OPF_PROBE_AGED)) {
                op->flags |= EFARM_OPF_PROBE_AGED; /* waiting now: probe at the next scan */
            } else if (st->heard_tick != tick && !(st->flags & EFARM_PS_PROBING)) {
                probe = true;
            }
        }
        if (probe)
            probe_post(ep, st);
    }
}

void efarm_probe_check(struct efarm_ep *ep)
{
    uint64_t now;

    if (++ep->probe_polls % EFARM_PROBE_POLLS)
        return;
    now = efarm_now_ns();
    if (now < ep->probe_next_ns)
        return;
    ep->probe_next_ns = now + ep->p.peer_probe_ms * 1000000ull;
    probe_scan(ep);
}

void efarm_probe_done(struct efarm_ep *ep, struct efarm_txpkt *tx, int status)
{
    struct efarm_peer_state *st = ep->peers[tx->peer].st;

    tx->probe = 0;
    st->flags &= ~EFARM_PS_PROBING;
    /* A failed probe already failed the peer (txpkt_failed); a delivered one proves its QP. */
    if (status == 0)
        efarm_log(EFARM_LOG_DEBUG, "peer %u answered a liveness probe: still waiting on it",
                  tx->peer);
}
