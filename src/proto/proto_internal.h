/*
 * The protocol engine's private objects (efarm_proto.h is the interface).
 *
 * Objects and who owns them:
 * - struct efarm_peer: one per address-vector entry, fixed size, in one array
 *   allocated at open. Found by (GID, QPN[, connid]) when an address arrives
 *   and by (AH number, QPN) when a packet does.
 * - struct efarm_peer_state: created on first contact (a send to the peer, or
 *   a packet from it) from a bounded pool: handshake state, msg_id counters,
 *   RNR backoff and the reorder window.
 * - struct efarm_op: one send, one receive in progress (matched, with
 *   packets still to come or replies to send), one one-sided operation this
 *   endpoint started (write, read, atomic), or a peer's long write or read
 *   served here, from a fixed array; its index and a generation form the
 *   send_id/recv_id a peer echoes back, so a stale or forged id never reaches
 *   a live operation. What each role does with its packets, RDMA
 *   completions, replies and a failed peer is a row of the role table
 *   (g_efarm_op_roles), and what each subprotocol does a row of
 *   g_efarm_msg_protos or rma.c's g_efarm_rma_protos, not a switch.
 * - struct efarm_unexp: one unexpected message (arrived in order, matched no
 *   receive): a small record of what matching and later segments need, with
 *   its stored packets. No operation is taken until a receive matches it.
 *   Records come from a table that grows in chunks as messages wait (the
 *   byte budget bounds it, not the operation table).
 * - struct efarm_txpkt: a registered MTU-sized send buffer, from a fixed
 *   array; wr_id names it.
 * - struct efarm_rxpkt: a received packet kept for later (out of order,
 *   unexpected): a copy sized to the packet from a bounded byte budget, or,
 *   when the budget is spent, the device's receive buffer itself, held
 *   unposted (back-pressure).
 *
 * Stored packets, copies and unexpected records all count against one byte
 * budget (EFARM_UNEXP_BYTES, then EFARM_UNEXP_MAX_BYTES; proto_rx.c).
 *
 * This header holds the objects and the endpoint's own helpers. What each
 * module offers the others is in its own header, which a file includes when
 * it calls that module:
 *   proto_peers.h      peers, the HANDSHAKE, failed peers, probes (proto_av.c,
 *                      proto_probe.c);
 *   proto_transmit.h   send buffers, posting, RNR back-off (proto_tx.c);
 *   proto_receive.h    completions, ordering, stored packets, unexpected
 *                      records, the packet types' engine rows (proto_rx.c,
 *                      proto_pkt.c);
 *   proto_ops.h        operations: allocation, ids, maps (proto_ops.c);
 *   proto_select.h     selection and profiles (proto_select.c, proto_profile.c);
 *   proto_messages.h   two-sided messages (msg_send.c, msg_recv.c);
 *   proto_onesided.h   one-sided operations (rma.c, rma_target.c, rma_long.c);
 *   msg_proto.h, rma_proto.h  a subprotocol's row (two-sided, one-sided).
 */
#ifndef EFARM_PROTO_INTERNAL_H
#define EFARM_PROTO_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "efarm_byteorder.h"
#include "efarm_device_inline.h"
#include "efarm_errno.h"
#include "efarm_list.h"
#include "efarm_log.h"
#include "efarm_mr_cache.h"
#include "efarm_pkt.h"
#include "efarm_pool.h"
#include "efarm_proto.h"
#include "efarm_rma.h"
#include "efarm_time.h"
#include "efarm_tm.h"

/* Matcher context of untagged messages: above every 16-bit MPI context. */
#define EFARM_CTX_MSG EFARM_CTX_UNTAGGED

/* ---- Peers ----------------------------------------------------------------------- */

#define EFARM_PEER_USED     0x1u
#define EFARM_PEER_IMPLICIT 0x2u /* learnt from a raw-address header */
#define EFARM_PEER_DEPARTS  0x4u /* may exit without a barrier with us (efarm_av_set_departing) */

struct efarm_peer_state;

/*
 * An address-vector entry, every peer (40 bytes): the GID is the address
 * handle's (efarm_peer_gid), shared by the peers of one node.
 */
struct efarm_peer {
    uint16_t qpn;
    uint16_t ahn;
    uint32_t connid;
    uint32_t addr_next; /* chain of the (GID, QPN) hash */
    uint32_t ahn_next;  /* chain of the (AHN, QPN) hash, while the handle is live */
    uint32_t flags;
    uint32_t ah_next; /* the next peer on the same address handle (its user_head) */
    struct efarm_dev_ah *ah;
    struct efarm_peer_state *st; /* NULL until first contact */
};

_Static_assert(sizeof(struct efarm_peer) <= 40, "a peer stays 40 bytes (doc/NETMOD.md)");

static inline const uint8_t *efarm_peer_gid(const struct efarm_peer *p)
{
    return p->ah->gid; /* efarm_device_inline.h */
}

/* efarm_peer_state.flags */
#define EFARM_PS_HS_SENT        0x01u   /* our HANDSHAKE is posted (or went out) */
#define EFARM_PS_HS_RECEIVED    0x02u   /* the peer's HANDSHAKE arrived: extra_info is valid */
#define EFARM_PS_HS_QUEUED      0x04u   /* on ep->hs_queue, waiting for a packet buffer */
#define EFARM_PS_REQ_SENT       0x08u   /* we sent a REQ: the peer will answer with a HANDSHAKE */
#define EFARM_PS_IN_BACKOFF     0x10u   /* on ep->backoff_peers */
#define EFARM_PS_STALLED        0x20u   /* on ep->stalled_peers: in-order REQ waits for room */
#define EFARM_PS_TRIGGER        0x40u   /* a trigger EAGER_RTW is out or queued */
#define EFARM_PS_HS_OWED        0x80u   /* a packet came from the peer: it gets our HANDSHAKE */
#define EFARM_PS_TRIGGER_WANTED 0x100u  /* a trigger found no send buffer: retry from progress */
#define EFARM_PS_RETRY          0x200u  /* progress is retrying the stalled message */
#define EFARM_PS_FAILED         0x400u  /* a packet to the peer failed: nothing more goes to it */
#define EFARM_PS_FAIL_PENDING   0x800u  /* on ep->failed_peers: its operations still to fail */
#define EFARM_PS_PROBING        0x1000u /* a liveness probe to it is in flight (proto_probe.c) */

struct efarm_rxpkt;

struct efarm_peer_state {
    uint32_t flags;
    efarm_peer_t peer;
    uint32_t tx_msg_id;  /* next msg_id to send */
    uint32_t rx_msg_id;  /* next msg_id to process */
    uint32_t rnr_streak; /* RNR completions since the last success */
    uint32_t overflow_count;
    uint64_t extra_info;       /* the peer's extra_info[0] */
    uint64_t backoff_until_ns; /* while EFARM_PS_IN_BACKOFF */
    uint64_t backoff_us;
    uint64_t runt_bytes_in_flight;
    int fail_status;                /* the device error that failed the peer */
    uint32_t sends_inflight;        /* sends to this peer begun and not released */
    struct efarm_link fail_link;    /* ep->failed_peers */
    struct efarm_link hs_link;      /* ep->hs_queue */
    struct efarm_link backoff_link; /* ep->backoff_peers */
    struct efarm_link stalled_link; /* ep->stalled_peers */
    struct efarm_link rnr_queue;    /* txpkts waiting for the backoff to end */
    struct efarm_link hs_waiters;   /* ops that need the peer's HANDSHAKE first */
    struct efarm_link ops;          /* its live operations (efarm_op.peer_link) */
    struct efarm_link overflow;     /* rxpkts beyond the reorder window */
    /*
     * The reorder window: recvwin slots indexed by msg_id % recvwin, taken
     * from ep->windows when a packet must wait and given back when no slot
     * holds one (win_count) and nothing overflows, so a peer whose messages
     * arrive in order costs no window.
     */
    struct efarm_rxpkt **win;
    uint32_t win_count;  /* slots that hold packets */
    uint32_t heard_tick; /* ep->probe_tick when a packet from it last took the general path */
};

/* ---- Stored received packets ---------------------------------------------------- */

#define EFARM_RX_COPY_CLASSES 4
#define EFARM_RXPKT_HELD      0xffu /* cls of a held device buffer */

struct efarm_rxpkt {
    struct efarm_rxpkt *next; /* same msg_id in a window slot; an op's stored packets */
    struct efarm_link link;   /* a peer's overflow list */
    efarm_peer_t peer;
    uint32_t len;
    uint32_t rx_id; /* device buffer (held only) */
    uint32_t msg_id;
    uint8_t cls; /* copy pool class, or EFARM_RXPKT_HELD */
    uint8_t *data;
};

/* ---- Send buffers ------------------------------------------------------------------ */

/*
 * wr_id low bits: what a send-side completion belongs to. EFARM_WR_RDMA: an
 * RDMA read or write of an operation, wr_id = op id << 32 | bytes << 2 | 1.
 */
#define EFARM_WR_TXPKT 0u
#define EFARM_WR_RDMA  1u
#define EFARM_WR_KIND  3u

struct efarm_op;

struct efarm_txpkt {
    struct efarm_link link; /* ep->tx_queue or a peer's rnr_queue while waiting */
    struct efarm_op *op;    /* NULL for HANDSHAKE and handshake triggers */
    efarm_peer_t peer;
    uint32_t len;
    uint32_t index;
    uint8_t type;
    uint8_t queued;    /* on a list (not posted) */
    uint8_t injected;  /* an eager tagged send of the fast path: no op, its request done */
    uint8_t probe;     /* a liveness probe (proto_probe.c); reset when it completes */
    uint64_t data_len; /* application bytes it carries */
    uint8_t *buf;      /* registered, mtu bytes */
};

/* ---- Operations ------------------------------------------------------------------- */

/*
 * The role an operation plays: a row of g_efarm_op_roles each. Three are
 * run by their own machinery (a message send, a message receive, a one-sided
 * operation run in rma.c); the long one-sided operations run on the
 * two-sided machinery in one role at each end. An op takes its role when
 * allocated and changes it only through efarm_op_set_role (a one-sided
 * operation that turns out long).
 */
enum efarm_op_role {
    EFARM_OP_FREE,
    EFARM_OP_TX,           /* a message send (msg_send.c) */
    EFARM_OP_RX,           /* a message receive (msg_recv.c) */
    EFARM_OP_RMA,          /* a one-sided operation of ours run by rma.c */
    EFARM_OP_WRITE_ORIGIN, /* our long write, run as a send: LONGCTS_RTW, LONGREAD_RTW */
    EFARM_OP_READ_ORIGIN,  /* our long read, run as a receive: LONGCTS_RTR */
    EFARM_OP_WRITE_TARGET, /* a peer's long write into memory we expose, run as a receive */
    EFARM_OP_READ_TARGET,  /* a peer's long read of memory we expose, run as a send */
    EFARM_OP_ROLE_COUNT
};

/*
 * How far an operation got (efarm_op.state). It only moves forward, to a
 * state its role's row lists (efarm_op_role_ops.states), and only through
 * efarm_op_set_state. A receive op has no earlier state to be in: a posted
 * receive is the matcher's and a message that matched none is an unexpected
 * record, so an op is given to a receive once it matched, with its buffer
 * (a long write we serve has its exposed range or its refusal, our long read
 * its caller's buffer). What an op owes its peer or waits for is not its
 * state but its owed and awaits words: a receive that sent READ_NACK awaits
 * the long-CTS REQ that answers it. A refused long write is an outcome, not
 * a state (EFARM_OPF_REFUSED): it runs its protocol to the end all the same.
 */
enum efarm_op_state {
    EFARM_OPS_RUNNING,   /* started (what efarm_op_alloc leaves) */
    EFARM_OPS_NACKED,    /* a read send its receiver answered with READ_NACK: it runs on as
                            long-CTS, and its REQ carries no data and the READ_NACK flag */
    EFARM_OPS_COMPLETED, /* its request completed (a write target: all its data is in); it may
                            still owe replies and have packets in flight */
    EFARM_OPS_COUNT
};
#define EFARM_OPS_BIT(state) (1u << (state))

/*
 * An operation's state is four small words: efarm_op.state (how far it got),
 * efarm_op.flags (what it is and where it is: its traits and the lists it
 * is on), efarm_op.owed (what it still owes its peer) and efarm_op.awaits
 * (what it waits for from its peer). It ends when it owes and awaits nothing
 * and nothing of it is in flight.
 */
/* efarm_op.flags: traits, set as the op learns them and cleared only by a role change */
#define EFARM_OPF_TAGGED    0x0001u
#define EFARM_OPF_DC        0x0002u
#define EFARM_OPF_CQ_DATA   0x0004u
#define EFARM_OPF_INJECT    0x0008u /* tx: complete once the data is in packets */
#define EFARM_OPF_TEMP_BUF  0x0010u /* tx: EFARM_SEND_TEMP_BUF */
#define EFARM_OPF_NO_DIRECT 0x0020u /* rma: EFARM_RMA_NO_DIRECT */
#define EFARM_OPF_NO_REG    0x0040u /* rma: the buffer would not register: nothing RDMA */
#define EFARM_OPF_REFUSED                                                                \
    0x0080u /* a peer's long write refused at its start (its data is dropped) or failed: \
               its EOR or RECEIPT says REFUSED */
/* efarm_op.flags: where it is (the lists and counts it is in, the liveness scan's mark) */
#define EFARM_OPF_IN_WORK 0x0100u /* on ep->work */
#define EFARM_OPF_MAPPED  0x0200u /* rx: in the (peer, msg_id) map; a write, (peer, send_id) */
#define EFARM_OPF_COUNTED 0x0400u /* tx: in its peer's sends_inflight */
#define EFARM_OPF_PROBE_AGED \
    0x0800u /* waited on its peer at the last liveness scan (proto_probe.c) */
#define EFARM_OPF_READ_NACK                                                                      \
    0x1000u /* rx: the peer refused an RDMA read of its buffer: READ_NACK once none is in flight \
             */
#define EFARM_OPF_RUNT                                                            \
    0x2000u /* rx: a peer's runt write still taking its runt: its packets wait on \
               msg.runt_pkts, untouched, until the runt is whole (rma_long.c) */

/* efarm_op.owed: what it still has to send its peer or do (replies, its REQ, reads) */
#define EFARM_OWE_REQ  0x01u /* its REQ packet(s), not built yet (a send, our long read) */
#define EFARM_OWE_CTS  0x02u /* a receive: the next CTS */
#define EFARM_OWE_EOR  0x04u /* a read done: the EOR */
#define EFARM_OWE_RCPT 0x08u /* a DC receive done: the RECEIPT */
#define EFARM_OWE_NACK 0x10u /* a read that cannot register: the READ_NACK */
#define EFARM_OWE_READ 0x20u /* RDMA reads still to post */
/* The replies among them: what a receive owes its sender once it completed. */
#define EFARM_OWE_REPLIES (EFARM_OWE_CTS | EFARM_OWE_EOR | EFARM_OWE_RCPT | EFARM_OWE_NACK)

/* efarm_op.awaits: what it waits for from its peer */
#define EFARM_AWAIT_HS   0x01u /* the peer's HANDSHAKE (on its hs_waiters) */
#define EFARM_AWAIT_EOR  0x02u /* a read send: the receiver's EOR */
#define EFARM_AWAIT_RCPT 0x04u /* a DC send: the RECEIPT */
#define EFARM_AWAIT_RSP                                                         \
    0x08u /* a one-sided op: the READRSP or ATOMRSP answering its last segment; \
             our long read: the first READRSP */
#define EFARM_AWAIT_REQ 0x10u /* a receive that sent READ_NACK: the long-CTS REQ answering it */

#define EFARM_MAX_READ_IOV 4 /* read_iov entries kept (the reference sends at most 4) */

/* No op: an op's index (its id's low half) is below max_ops, which is at most 0xffff. */
#define EFARM_OP_INDEX_NONE 0xffffu

struct efarm_op {
    struct efarm_link link; /* ep->work, or a peer's hs_waiters */
    struct efarm_req *req;  /* NULL once completed */
    uint8_t role;           /* enum efarm_op_role: g_efarm_op_roles[role] */
    uint8_t state;          /* enum efarm_op_state */
    uint8_t proto;          /* enum efarm_proto_kind */
    uint8_t req_type;       /* tx: the REQ packet type; rx: the first REQ's type */
    uint16_t flags;         /* EFARM_OPF_* */
    uint8_t owed;           /* EFARM_OWE_* */
    uint8_t awaits;         /* EFARM_AWAIT_* */
    uint32_t id;            /* generation << 16 | index */
    efarm_peer_t peer;
    uint32_t msg_id;
    uint32_t peer_op_id;    /* tx: the peer's recv_id (CTS); rx: the peer's send_id */
    uint32_t pkts_inflight; /* txpkts referencing this op, posted or queued */
    uint32_t reads_inflight;
    uint16_t map_next; /* (peer, msg_id) map chain: the next op's index */
    uint8_t niov;
    int status;
    uint8_t *buf;        /* user buffer */
    uint64_t len;        /* tx: message length; rx: buffer length */
    uint64_t offset;     /* tx: next byte to put in a packet; rx: next byte to read, or
                            where the current CTS grant starts (long-CTS) */
    uint64_t window_end; /* tx: bytes granted by CTS (or allowed); rx: end of the CTS grant */
    uint64_t done_bytes; /* tx: bytes whose packets completed; rx: bytes received */
    /* What only one machinery's roles use (efarm_op_role_ops.runs_as): cleared when it changes. */
    union {
        struct { /* the send and receive machinery (msg_send.c, msg_recv.c) */
            union {
                uint64_t wire_tag;             /* a message's */
                struct efarm_rxpkt *runt_pkts; /* a runt write's (never tagged), while
                                                  EFARM_OPF_RUNT: the first one first */
            };
            uint64_t cq_data;
            uint64_t msg_length; /* rx: the sender's length */
            uint64_t runt_length;
            uint32_t credit_request; /* rx: the CTSDATA packets the sender asked for */
            uint32_t send_hints;     /* tx: the EFARM_SEND_HINTS bits of the send */
        } msg;
        struct {                    /* a one-sided operation run by rma.c */
            uint8_t *result;        /* where fetched values go (atomics) */
            const uint8_t *compare; /* compare operands (COMPARE_RTA) */
            uint32_t replies_owed;  /* RECEIPTs still to come */
            uint64_t cq_data;       /* a write's, with EFARM_OPF_CQ_DATA */
            uint32_t seg_bytes;     /* bytes of data per packet (emulated) */
            uint8_t atomic_op, atomic_dt, dc;
            bool empty_sent; /* a write of 0 bytes with CQ data: its one REQ went */
        } rma;
    };
    struct efarm_link peer_link; /* its peer's ops (efarm_peer_state.ops), once it has one */
    struct efarm_rma_iov iov[EFARM_MAX_READ_IOV]; /* rx: the sender's read_iov; rma: remote */
    struct efarm_mr_ref mr;                       /* the user buffer's registration */
};

/* ---- Unexpected messages ------------------------------------------------------------- */

/* efarm_unexp.flags */
#define EFARM_UXF_TAGGED  0x01u
#define EFARM_UXF_DC      0x02u
#define EFARM_UXF_CLAIMED 0x04u /* claimed by a matched probe: waits for efarm_tmrecv */
#define EFARM_UXF_MAPPED  0x08u /* in the (peer, msg_id) map: segments still to come */
#define EFARM_UXF_LIVE    0x10u
#define EFARM_UXF_CQ_DATA 0x20u /* its REQ carried CQ data (cq_data) */

#define EFARM_UNEXP_CHUNK 512u /* records created at a time */

struct efarm_unexp {
    struct efarm_rxpkt *pkts;     /* the first REQ first, then later segments as they came */
    struct efarm_rxpkt *last;     /* the last of them */
    struct efarm_unexp *map_next; /* (peer, msg_id) map chain, or the free list */
    efarm_peer_t peer;
    uint32_t msg_id;
    uint32_t index; /* in the record table; with gen, the handle of a claimed message */
    uint32_t gen;
    uint8_t proto; /* enum efarm_proto_kind */
    uint8_t flags;
    uint64_t wire_tag;
    uint64_t msg_length;
    uint64_t runt_length;
    uint64_t seg_bytes; /* data of the segments stored (medium, runt) */
    uint64_t cq_data;   /* with EFARM_UXF_CQ_DATA (probes report it) */
    uint64_t arrival;   /* its stamp from ep->arrival_clock when it was queued */
};

/* ---- The endpoint -------------------------------------------------------------------- */

/* Resolved parameters (attribute, else tunable). */
struct efarm_ep_params {
    uint32_t av_size, sq_depth, rx_buffers, tx_pkts, max_ops, max_posted, max_unexpected;
    uint64_t unexp_bytes, unexp_max_bytes, rx_full_timeout_ms;
    uint64_t peer_probe_ms; /* 0: no liveness probes */
    uint32_t rx_reserve, recvwin, first_msg_id;
    uint64_t eager_max, medium_max, read_min, runt_size;
    uint64_t read_min_cold, runt_min; /* resolved with the profile at endpoint open */
    uint64_t medium_max_stream;       /* medium's bound while the peer has sends in flight */
    uint64_t read_min_stream, read_min_stream_cold; /* read thresholds then */
    char profile[64]; /* the profile's name, for efarm-info and logs */
    uint32_t max_reads, cts_credits, rx_window;
    uint32_t rnr_retry, rnr_backoff_us, rnr_backoff_max_us;
    bool rdma_read, rdma_write, connid_header, dc;
    int8_t force;       /* EFARM_PROTO: enum efarm_proto_kind, or -1 (auto) */
    uint32_t rma_force; /* EFARM_RMA_PROTO: a bit per enum efarm_rma_proto forced (0: auto) */
};

#define EFARM_POLL_BATCH 32
/* Refused nested progress calls in a row after which one error says a callback spins (a wait). */
#define EFARM_NESTED_SPIN_CALLS (1u << 20)

/*
 * An EAGER_TAGRTM header as encoded for one combination of optional headers
 * (raw address, connid), msg_id and tag left to fill in: the eager fast path's
 * template (msg_send.c). len 0: not built yet.
 */
#define EFARM_EAGER_TMPL_MAX 96
/* Templates up to this length are copied whole (fixed moves); send buffers are at least this. */
#define EFARM_EAGER_TMPL_SHORT 32
_Static_assert(EFARM_EAGER_TMPL_SHORT <= EFARM_EAGER_TMPL_MAX,
               "the short copy stays in the template");
struct efarm_eager_tmpl {
    uint16_t len;
    uint16_t off_msg_id, off_tag;
    uint8_t hdr[EFARM_EAGER_TMPL_MAX];
};

/*
 * What the receiving fast path recognises (proto_rx.c): the first word of an
 * EAGER_TAGRTM without optional headers or with the connid header alone, and
 * its fixed fields' offsets, from the codec's tables at open.
 */
struct efarm_rx_fast_fmt {
    uint32_t word, word_connid; /* type, version, flags as on the wire; 0: fast path off */
    uint16_t hdr_size, off_msg_id, off_tag;
    uint8_t type;
};

struct efarm_ep {
    struct efarm_dev_ep *dev;
    struct efarm_device_caps caps;
    struct efarm_ep_params p;
    uint8_t raw_addr[EFARM_RAW_ADDR_LEN];
    uint32_t connid;
    uint32_t mtu;
    uint64_t extra_info; /* what our HANDSHAKE advertises */
    bool observe;        /* every packet goes by efarm_observe_*: data log or capture */

    /* Address vector. */
    struct efarm_peer *peers;
    uint32_t npeers;
    uint32_t hash_mask;
    uint32_t *addr_hash;    /* (GID, QPN) -> first peer, EFARM_PEER_NONE-terminated chains */
    uint32_t *ahn_hash;     /* (AHN, QPN) -> first peer */
    uint32_t ah_pass;       /* eviction passes (efarm_dev_ah.user_mark) */
    uint64_t ah_starved_ns; /* since when a post waits for a handle and none of ours is live */
    uint64_t ah_clock;      /* posts to peers: efarm_dev_ah.user_stamp, for LRU eviction */
    struct efarm_pool peer_states;
    uint32_t npeer_states; /* peers talked to (never freed before the endpoint closes) */
    size_t peer_state_size;
    struct efarm_pool windows; /* reorder windows of peers with packets waiting */

    struct efarm_tm *tm;

    /* Operations. */
    struct efarm_op *ops;
    uint32_t *op_free;
    uint32_t nop_free;
    uint32_t probe_ops;    /* max_ops with liveness probes on, else 0 (proto_probe.c) */
    uint16_t *map_buckets; /* (peer, msg_id) -> rx op index, chained through map_next */
    uint32_t map_mask;

    /* Send buffers. */
    struct efarm_eager_tmpl eager_tmpl[4]; /* by raw address header (1) and connid header (2) */
    struct efarm_rx_fast_fmt rx_fast;
    struct efarm_txpkt *txpkts;
    uint8_t *tx_mem;
    struct efarm_dev_mr *tx_mr;
    uint32_t tx_lkey; /* tx_mr's, read once */
    uint32_t *tx_free;
    uint32_t ntx_free;
    uint32_t tx_reserve;        /* buffers only control packets may take */
    struct efarm_link tx_queue; /* built packets waiting for send-queue room */
    uint32_t sq_inflight;

    /* Stored received packets. */
    struct efarm_rxpkt *held; /* one per device receive buffer, by rx_id */
    uint32_t nheld;
    struct efarm_pool copy_pool[EFARM_RX_COPY_CLASSES];
    uint64_t stored_bytes; /* copies and unexpected records, against the byte budget */

    /* Unexpected messages (proto_rx.c). */
    struct efarm_unexp **unexp_chunks; /* unexp_max / EFARM_UNEXP_CHUNK, rounded up */
    uint32_t unexp_max;                /* records the budget can ever need */
    uint32_t unexp_nalloc;             /* records created */
    uint32_t unexp_live;
    uint64_t untagged_arrivals; /* untagged messages queued unexpected (efarm_probe's news) */
    uint64_t *arrival_clock;    /* stamps unexpected messages: own_clock or the caller's */
    uint64_t own_clock;
    struct efarm_unexp *unexp_free;
    struct efarm_unexp **unexp_map; /* (peer, msg_id) -> record with segments to come */
    uint32_t unexp_map_mask;
    uint32_t unexp_cost; /* bytes one record costs the budget, matcher entry included */

    /* Receiving impossible: every receive buffer holds a waiting packet (proto_rx.c). */
    uint64_t full_since_ns, full_last_ns;
    bool full_warned;

    /* Failure. */
    struct efarm_link failed_peers; /* peers whose operations are still to fail */
    int fatal;                      /* nonzero: the endpoint failed; progress returns it */
    uint32_t nested_in_row; /* progress calls refused inside a callback since the last one run */

    /*
     * Liveness probes (proto_probe.c): progress looks at the clock only while
     * nop_free < probe_ops (above), every EFARM_PROBE_POLLS calls, and scans
     * the operations once per period from probe_next_ns. probe_tick counts
     * the scans; a packet from a peer stamps it into the peer's heard_tick.
     */
    uint32_t probe_tick;
    uint32_t probe_polls;
    uint64_t probe_next_ns;

    /* Work waiting for resources or time. */
    struct efarm_link work;          /* ops with packets to build or reads to post */
    struct efarm_link hs_queue;      /* peers owing a HANDSHAKE */
    struct efarm_link backoff_peers; /* peers in RNR backoff */
    struct efarm_link stalled_peers; /* peers whose in-order REQ waits for room */
    uint32_t reads_inflight;

    struct efarm_mr_cache *mr_cache;

    /* Peers' unordered one-sided requests waiting for a reply buffer (rma_target.c). */
    struct efarm_rxpkt *rma_pending, *rma_pending_last;
    /* Who hears of peers' writes with CQ data (efarm_ep_on_write_data). */
    efarm_write_data_fn write_data_fn;
    void *write_data_ctx;
    /*
     * Set (efarm_ep_pending) whenever something is put on a list that
     * efarm_ep_progress serves besides the CQ (tx_queue, backoff_peers,
     * hs_queue, work, stalled_peers, failed_peers, rma_pending); progress
     * checks those lists only while it is set and clears it once they are
     * all empty. One word instead of seven checks on every call.
     */
    bool pending;

    /* Exposed memory (proto_expose.c): key -> region, chained. */
    struct efarm_region **regions;
    uint32_t region_mask; /* buckets - 1; 0 before the first region */
    uint32_t nregions;
    uint64_t next_soft_key; /* keys of zero-length regions, from 2^32 */

    uint64_t rng;
    struct efarm_counters cnt;
};

/* ---- Endpoint helpers ------------------------------------------------------------------ */

/* Bucket of (peer, msg_id) in a power-of-two table (mask = buckets - 1). */
static inline uint32_t efarm_peer_msg_bucket(efarm_peer_t peer, uint32_t msg_id, uint32_t mask)
{
    uint64_t h = ((uint64_t)peer << 32 | msg_id) * 0x9e3779b97f4a7c15ull;

    return (uint32_t)(h >> 40) & mask;
}

/* The endpoint's xorshift64* stream (back-off jitter, probe spread): not for secrets. */
static inline uint64_t efarm_ep_rand(struct efarm_ep *ep)
{
    uint64_t x = ep->rng;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    ep->rng = x;
    return x * 0x2545f4914f6cdd1dull;
}
/* Our QPN, as logs name the endpoint. */
static inline uint16_t efarm_ep_qpn(const struct efarm_ep *ep)
{
    return efarm_load_le16(ep->raw_addr + offsetof(struct efarm_wire_raw_addr, qpn));
}

/*
 * EFARM_LOG_LEVEL=data and EFARM_CAPTURE (ep->observe): a packet sent (once
 * posted) or received (before decoding: undecodable ones are captured too) is
 * logged as one line ending in its hex, then decoded, and written to the
 * capture file.
 */
void efarm_observe_tx(const struct efarm_ep *ep, const struct efarm_txpkt *tx);
void efarm_observe_rx(const struct efarm_ep *ep, const struct efarm_dev_cqe *cqe);

/* proto_expose.c: deregister and free every region still exposed (endpoint close). */
void efarm_regions_fini(struct efarm_ep *ep);

/* Fail the endpoint: efarm_ep_progress returns status from now on (the first failure stays). */
static inline void efarm_ep_fail(struct efarm_ep *ep, int status)
{
    if (ep->fatal == 0)
        ep->fatal = status;
}

#endif /* EFARM_PROTO_INTERNAL_H */
