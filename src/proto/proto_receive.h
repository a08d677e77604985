/*
 * Receiving packets (proto_rx.c): completions, ordering, stored packets,
 * unexpected records, and the engine's row of each packet type
 * (proto_pkt.c) that says which handler takes it.
 */
#ifndef EFARM_PROTO_RECEIVE_H
#define EFARM_PROTO_RECEIVE_H

#include "proto_internal.h"

/* proto_rx.c */
int efarm_rx_init(struct efarm_ep *ep);
void efarm_rx_fini(struct efarm_ep *ep);
void efarm_rx_completion(struct efarm_ep *ep, const struct efarm_dev_cqe *cqe);
void efarm_rx_progress(struct efarm_ep *ep);
struct efarm_rxpkt *efarm_rxpkt_store(struct efarm_ep *ep, const uint8_t *data, uint32_t len,
                                      uint32_t rx_id, bool *held_p);
void efarm_rxpkt_release(struct efarm_ep *ep, struct efarm_rxpkt *pkt);
/* Whether every receive buffer holds a waiting packet: nothing more can arrive. */
static inline bool efarm_rx_full(const struct efarm_ep *ep)
{
    return ep->nheld >= ep->p.rx_buffers;
}
void efarm_rx_full_check(struct efarm_ep *ep);
/* The receiving fast path's packet format, from the codec (endpoint open). */
void efarm_rx_fast_init(struct efarm_ep *ep);
/* The in-order message of st was processed: move on and run the successors that wait. */
void efarm_rx_window_advance(struct efarm_ep *ep, struct efarm_peer_state *st);

/* Unexpected records: NULL when none can be created (the caller defers the message). */
struct efarm_unexp *efarm_unexp_alloc(struct efarm_ep *ep);
/* Release a record and its stored packets. */
void efarm_unexp_release(struct efarm_ep *ep, struct efarm_unexp *ux);
void efarm_unexp_map_insert(struct efarm_ep *ep, struct efarm_unexp *ux);
void efarm_unexp_map_remove(struct efarm_ep *ep, struct efarm_unexp *ux);
struct efarm_unexp *efarm_unexp_map_find(struct efarm_ep *ep, efarm_peer_t peer, uint32_t msg_id);
/* The handle of a claimed message, and the live record it names (NULL: stale). */
uint64_t efarm_unexp_handle(const struct efarm_unexp *ux);
struct efarm_unexp *efarm_unexp_find(struct efarm_ep *ep, uint64_t handle);

/*
 * Handlers of in-order REQs and of the packets that follow them. Each gets a
 * decoded packet and the peer, and either `stored` (the packet was kept
 * earlier; pkt points into it) or, with stored NULL, `rx_id`, the device
 * buffer the packet lies in. Returns 0 when the packet is consumed (the
 * caller releases the stored packet or reposts the buffer), -EAGAIN when it
 * must wait for room (the caller keeps it and retries), or EFARM_RX_KEEP when
 * the handler took the stored packet or holds the device buffer.
 */
#define EFARM_RX_KEEP 1

/*
 * The engine's row of a packet type (proto_pkt.c), generated with the
 * codec's from the one list of efarm_pkt_types.h. A packet is received by the
 * first that applies: `ctrl` (a control packet), `on_nack` when it carries
 * the READ_NACK REQ flag and answers a READ_NACK of ours, `serve` in msg_id
 * order (`ordered`) or at once (kept and retried from progress while it
 * returns -EAGAIN); no handler: counted and dropped.
 */
typedef void (*efarm_ctrl_fn)(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt);
/*
 * A LONGCTS REQ with the READ_NACK flag: true when taken (it joined the
 * receive that sent the READ_NACK, or was counted stale); false when no
 * write of ours waits for it, so that `serve` takes it as a new write.
 */
typedef bool (*efarm_nack_fn)(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt);
typedef int (*efarm_serve_fn)(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt,
                              struct efarm_rxpkt *stored, uint32_t rx_id);

/* Where the data of a REQ that carries data into a receive operation lies. */
#define RX_SEG_OFFSET                                                                        \
    0x1u /* at seg_offset in the message; later packets follow (medium, runt; a write's runt \
            packets are joined by the peer's send_id) */
#define RX_ONLY_IOV 0x2u /* the payload is the read_iov[] alone (long read) */

struct efarm_pkt_row {
    efarm_ctrl_fn ctrl;
    efarm_nack_fn on_nack;
    efarm_serve_fn serve;
    const char *lost_alone;   /* sent with no operation: what its loss costs the peer, or NULL */
    bool ordered;             /* takes the peer's msg_id sequence: served in that order */
    bool rtm;                 /* a message: matched against receives (msg_recv.c) */
    bool rtw;                 /* a long write run as a receive operation (msg_recv.c) */
    bool tagged;              /* carries a tag (the codec's trait) */
    bool dc;                  /* delivery-complete: the receiver answers with a RECEIPT */
    bool read_iov;            /* the payload starts with read_iov[] (the codec's trait) */
    bool trigger;             /* a HANDSHAKE trigger (L_TRIGGER): its empty form asks only that */
    bool lost_to_implicit_ok; /* its loss to a peer learnt from a raw address costs nothing */
    uint8_t proto;            /* enum efarm_proto_kind of its data (rtm, rtw) */
    uint8_t data;             /* RX_* (rtm, rtw, refused) */
    uint8_t atomic;           /* enum efarm_atomic_kind (RTA) */
};

extern const struct efarm_pkt_row g_efarm_pkt_rows[EFARM_PKT_TYPE_COUNT];

static inline const struct efarm_pkt_row *efarm_pkt_row(uint8_t type)
{
    return &g_efarm_pkt_rows[type];
}

/* proto_rx.c: a REQ in its turn that efarm refuses (runting CTS): counted, its id used up. */
int efarm_req_refuse(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt,
                     struct efarm_rxpkt *stored, uint32_t rx_id);

#endif /* EFARM_PROTO_RECEIVE_H */
