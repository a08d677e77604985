/*
 * efarm's protocol engine: EFA RDM protocol v4 two-sided messaging on the
 * device layer, with no MPI dependency.
 *
 * An endpoint (struct efarm_ep) owns one device endpoint, an address vector
 * of peers, the tag matcher and every pool. The caller drives it: sends and
 * receives only start operations, and efarm_ep_progress() polls the device,
 * runs the protocol and completes requests. Nothing runs in another thread.
 *
 * Requests. Every operation takes a caller-owned struct efarm_req that must
 * stay put until the request completes: the engine fills the result fields,
 * sets `done` and calls `cb` (if set) from inside an engine call (progress,
 * or the receive post that matched an unexpected message). After the
 * callback the engine never touches the request again. A callback may start
 * operations. A call of efarm_ep_progress() on the endpoint that runs it
 * (progress handles completions inside the device's poll session) does
 * nothing and returns -EDEADLK; the caller takes it as "no progress now", as
 * MPICH makes such calls (a completion that frees a communicator probes it).
 * A callback must not wait: nothing it waits for can complete there.
 *
 * Matching. Tagged messages carry a 64-bit wire tag that packs (context,
 * source, tag) as EFARM_TAG_*_BITS say; receives match on the three with
 * EFARM_ANY_SOURCE / EFARM_ANY_TAG. `source` is whatever the sender calls
 * itself towards the receiver (the MPI rank in the communicator); the engine
 * does not check it against the sending peer. Untagged messages (MSGRTM)
 * match untagged receives in arrival order, optionally from one peer.
 *
 * Subprotocols. Each send picks eager, medium, long-CTS, long-read or
 * runting-read (efarm_proto_select, a table of rules whose thresholds are
 * tunables), with the delivery-complete (DC) variants when asked. Extra
 * features are used only after the peer's HANDSHAKE says it has them.
 *
 * Not thread safe: one thread at a time per endpoint.
 */
#ifndef EFARM_PROTO_H
#define EFARM_PROTO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "efarm_device.h"
#include "efarm_proto_names.h"
#include "efarm_tm.h"

struct efarm_ep;

/* A peer: an index into the endpoint's address vector. */
typedef uint32_t efarm_peer_t;
#define EFARM_PEER_NONE UINT32_MAX

/* Wire tag layout of tagged messages: context | source | tag, most significant first. */
#define EFARM_TAG_CONTEXT_BITS 16
#define EFARM_TAG_SOURCE_BITS  24
#define EFARM_TAG_TAG_BITS     24
#define EFARM_CONTEXT_MAX      ((1u << EFARM_TAG_CONTEXT_BITS) - 1)
#define EFARM_SOURCE_MAX       ((1 << EFARM_TAG_SOURCE_BITS) - 1)
#define EFARM_TAG_MAX          ((1 << EFARM_TAG_TAG_BITS) - 1)
#define EFARM_ANY_SOURCE       EFARM_TM_ANY_SOURCE
#define EFARM_ANY_TAG          EFARM_TM_ANY_TAG

static inline uint64_t efarm_tag_pack(uint32_t context, int32_t source, int32_t tag)
{
    return ((uint64_t)context << (EFARM_TAG_SOURCE_BITS + EFARM_TAG_TAG_BITS)) |
           ((uint64_t)(uint32_t)source << EFARM_TAG_TAG_BITS) | (uint32_t)tag;
}

/* The two-sided subprotocols (EFARM_PROTO_LIST in efarm_proto_names.h). */
enum efarm_proto_kind {
#define EFARM_PROTO_ENUM_(id, name, rank) EFARM_PROTO_##id,
    EFARM_PROTO_LIST(EFARM_PROTO_ENUM_)
#undef EFARM_PROTO_ENUM_
        EFARM_PROTO_COUNT
};

const char *efarm_proto_name(enum efarm_proto_kind proto);
/* A subprotocol's name (EFARM_PROTO) as -1 (auto, "" or NULL) or its kind; -EINVAL if unknown. */
int efarm_proto_parse(const char *name);

/* Send flags. */
#define EFARM_SEND_DC      0x1u /* complete only once delivered (DC variants, RECEIPT/EOR) */
#define EFARM_SEND_CQ_DATA 0x2u /* carry cq_data in the REQ CQ-data header */
/*
 * Complete a send as soon as all its data is copied into send packets (the
 * buffer is free again), before the peer acknowledges it, like libfabric's
 * inject: eager and medium sends at once when the send queue has room. A
 * failure after that is counted (send_errors) and logged, not reported.
 * Ignored with EFARM_SEND_DC; read protocols still complete at EOR.
 */
#define EFARM_SEND_INJECT 0x4u
/*
 * A hint for subprotocol selection: the buffer is a temporary (a packed copy
 * of noncontiguous data) that goes away when the send completes, so a read
 * protocol would register it for this send alone (the unregistered-buffer
 * threshold applies without asking the registration cache).
 */
#define EFARM_SEND_TEMP_BUF 0x8u
/*
 * Hints from the caller's communicator (the MPI netmod: its size, the info
 * keys efarm_fanin and efarm_protocol). EFARM_SEND_FANIN(n): up to n peers may
 * send to the receiver at once (medium's fan-in is then the larger of n and
 * the peers this endpoint has talked to); with EFARM_SEND_FANIN_SET, n is the
 * user's own statement and is taken as it is. EFARM_SEND_PROTO(k): send by
 * subprotocol k (enum efarm_proto_kind) when it may carry the message, like
 * EFARM_PROTO for one message.
 */
#define EFARM_SEND_FANIN_SET   0x10u
#define EFARM_SEND_PROTO_SHIFT 8
#define EFARM_SEND_PROTO_MASK  (0xfu << EFARM_SEND_PROTO_SHIFT)
#define EFARM_SEND_PROTO(k)    (((uint32_t)(k) + 1u) << EFARM_SEND_PROTO_SHIFT)
#define EFARM_SEND_FANIN_SHIFT 16
#define EFARM_SEND_FANIN_MAX   0xffffu
#define EFARM_SEND_FANIN(n)                                                                  \
    ((uint32_t)((uint64_t)(n) > EFARM_SEND_FANIN_MAX ? EFARM_SEND_FANIN_MAX : (uint64_t)(n)) \
     << EFARM_SEND_FANIN_SHIFT)
#define EFARM_SEND_HINTS                            \
    (EFARM_SEND_FANIN_SET | EFARM_SEND_PROTO_MASK | \
     (EFARM_SEND_FANIN_MAX << EFARM_SEND_FANIN_SHIFT))

struct efarm_req;
typedef void (*efarm_req_cb_fn)(struct efarm_req *req);

struct efarm_req {
    /* Set by the caller before starting the operation. */
    efarm_req_cb_fn cb; /* may be NULL: poll `done` */
    void *ctx;          /* the caller's */
    /* Filled by the engine when the request completes. */
    bool done;
    int status;          /* 0, -ECANCELED, -EMSGSIZE (truncated) or an error */
    uint64_t length;     /* bytes delivered into the buffer (receives) or sent */
    uint64_t msg_length; /* receives: the length the sender sent */
    efarm_peer_t peer;   /* receives: who sent it */
    uint32_t context;    /* receives: matched key (tagged) */
    int32_t source;
    int32_t tag;
    bool has_cq_data;
    uint64_t cq_data;
    uint8_t proto; /* sends: enum efarm_proto_kind used */
    /* Set when the receive is posted: its buffer (the caller may read them). */
    void *buf;
    uint64_t buf_len;
    /* Engine private. */
    efarm_tm_handle_t tm_handle;
};

/* What efarm_tprobe() reports about a message waiting to be received. */
struct efarm_probe_info {
    efarm_peer_t peer;
    uint32_t context;
    int32_t source;
    int32_t tag;
    uint64_t msg_length;
    bool has_cq_data; /* the sender's CQ data (EFARM_SEND_CQ_DATA) */
    uint64_t cq_data;
    uint64_t arrival;         /* its arrival stamp (efarm_ep_set_arrival_clock) */
    efarm_tm_handle_t handle; /* for efarm_tmrecv after a claiming probe */
};

/*
 * Endpoint attributes; zero fields take the EFARM_* tunable (efarm-info
 * lists them). Thresholds live here so a caller (and the tests) can set a
 * policy per endpoint.
 */
struct efarm_ep_attr {
    const char *device; /* NULL: the first device */
    uint32_t av_size;
    uint32_t sq_depth, rx_buffers, tx_pkts, max_ops;
    uint32_t max_posted;
    uint64_t unexp_bytes, unexp_max_bytes;
    uint32_t rx_full_timeout_ms;
    uint32_t peer_probe_ms; /* EFARM_PEER_PROBE_MS (0: the tunable) */
    uint32_t rx_reserve, recvwin;
    uint64_t eager_max, medium_max, read_min, runt_size;
    uint64_t read_min_unreg, runt_min; /* 0: the tunable, then the profile */
    uint64_t medium_max_stream; /* 0: the tunable (EFARM_MEDIUM_MAX_STREAM), then the profile */
    uint64_t read_min_stream;   /* 0: the tunable (EFARM_READ_MIN_STREAM), then the profile */
    const char *profile;        /* EFARM_PROFILE's values; NULL: the tunable */
    uint32_t max_reads, cts_credits, rx_window;
    uint32_t rnr_retry, rnr_backoff_us, rnr_backoff_max_us;
    bool no_rdma_read;       /* advertise and use no RDMA read whatever the tunable says */
    bool no_rdma_write;      /* advertise and use no RDMA write whatever the tunable says */
    bool no_connid_header;   /* do not ask peers for the connid header */
    bool no_dc;              /* do not advertise delivery complete (tests of the refusal) */
    const char *proto;       /* EFARM_PROTO's values; NULL: the tunable */
    const char *rma_proto;   /* EFARM_RMA_PROTO's values; NULL: the tunable */
    uint32_t first_msg_id;   /* tests only: where msg_ids start (both sides must agree; 0 on the
                                wire of every other implementation) */
    uint32_t max_unexpected; /* tests only: unexpected messages held at most (0: as many as the
                                byte budget holds); beyond it in-order messages are deferred */
};

/*
 * Open an endpoint. The caller owns it and closes it with efarm_ep_close().
 * Returns 0 or a negative error; *ep_p is set only on success.
 */
int efarm_ep_open(const struct efarm_ep_attr *attr, struct efarm_ep **ep_p);

/*
 * Close: every request still pending is dropped without completion (its
 * memory is the caller's again); packets in flight are abandoned. Call
 * efarm_ep_flush() first so that the last sends arrive.
 */
void efarm_ep_close(struct efarm_ep *ep);

/*
 * Progress until nothing this endpoint sends is queued or in flight: every
 * packet of sends that completed at post (EFARM_SEND_INJECT) and every reply
 * owed has been acknowledged by the device, or has failed. An injected send
 * completes before its data arrived; closing without a flush abandons it, and
 * its receiver waits forever. Returns 0, the endpoint's failure (a negative
 * error, as efarm_ep_progress), or -ETIMEDOUT after timeout_ms (0: no limit).
 */
int efarm_ep_flush(struct efarm_ep *ep, uint64_t timeout_ms);

/* This endpoint's 32-byte raw address (protocol v4 section 1.4). */
void efarm_ep_addr(const struct efarm_ep *ep, uint8_t raw[EFARM_RAW_ADDR_LEN]);

/* The device capabilities in use (owned by the endpoint). */
const struct efarm_device_caps *efarm_ep_caps(const struct efarm_ep *ep);

/* The two-sided selection thresholds in force on an endpoint, and where they came from. */
struct efarm_ep_policy {
    char profile[64];        /* EFARM_PROFILE's profile: reference, efasim or a file's name */
    uint64_t medium_max;     /* largest medium message */
    uint64_t read_min;       /* smallest read-protocol message (registered buffer) */
    uint64_t read_min_unreg; /* the same for a buffer to be registered first */
    uint64_t runt_min;       /* smallest runting read; UINT64_MAX: never */
    /* While other sends to the peer are in flight (a stream): */
    uint64_t medium_max_stream;     /* medium's own bound then (UINT64_MAX: none) */
    uint64_t read_min_stream;       /* the read threshold then (registered buffer) */
    uint64_t read_min_stream_unreg; /* ... and for a buffer to be registered first */
};
void efarm_ep_policy(const struct efarm_ep *ep, struct efarm_ep_policy *policy_p);

/*
 * Print the selection policy an endpoint on device_name (MTU mtu) would have
 * with the tunables in force: its profile and thresholds, then per message
 * size (powers of two to 64 MiB and each threshold +-1) the subprotocol a
 * tagged send picks and why, for a peer with RDMA and runting read, no read
 * in flight and a registered buffer, and the columns where one fact differs:
 * an unregistered buffer, an ssend (delivery complete), 1024 peers, no RDMA
 * read, another send to the peer in flight (a stream). For efarm-info. Returns 0, or the profile's
 * error (-EINVAL, logged).
 */
int efarm_policy_print(FILE *out, const char *device_name, uint32_t mtu);

/*
 * Insert a raw address; returns 0 and the peer in *peer_p. Inserting an
 * address already present (same GID, QPN and connid), also one learnt from an
 * unknown sender's raw-address header, returns the same peer. -ENOSPC when
 * the address vector is full; an address handle is created here (a syscall).
 */
int efarm_av_insert(struct efarm_ep *ep, const uint8_t raw[EFARM_RAW_ADDR_LEN],
                    efarm_peer_t *peer_p);

/*
 * Say that peer may exit at any time without synchronising with this
 * endpoint (MPI: a process of another job, met through spawn, connect or
 * join, which leaves after MPI_Comm_disconnect). A packet to it that fails at
 * the device (unresponsive, or its QP gone) then fails the peer alone, even
 * when it held something no request reports (an injected send's data, our
 * HANDSHAKE, a reply): such a packet was delivered before its process left
 * and only the acknowledgement went missing, or MPI would not have let the
 * process go. The endpoint goes on; the log says so. Without it such a loss
 * fails the endpoint (efarm_ep_progress). Returns 0 or -EINVAL.
 */
int efarm_av_set_departing(struct efarm_ep *ep, efarm_peer_t peer);

/* The raw address of a peer. Returns 0 or -EINVAL. */
int efarm_av_lookup(const struct efarm_ep *ep, efarm_peer_t peer, uint8_t raw[EFARM_RAW_ADDR_LEN]);

/*
 * Make progress: poll one batch of completions, run the protocol, retry
 * queued work. Returns the number of completions handled (>= 0); -EDEADLK,
 * doing nothing, when called from a request's callback that this endpoint's
 * progress runs (counted: progress_nested), and from the 2^20th such call in
 * a row on EFARM_E(PROTO_NESTED_WAIT) instead (a callback that waits would
 * spin forever); or a negative error when the device itself failed or the
 * endpoint failed, and then on every later call:
 *   EFARM_E(PROTO_PEER_FAILED): a packet to a peer failed at the device and
 *     what was lost cannot be reported through any request (the data of an
 *     injected send that had completed, later messages behind a lost one, a
 *     reply the peer waits for); the log names the peer and the device error;
 *   EFARM_E(PROTO_RX_FULL): nothing could be received for
 *     EFARM_RX_FULL_TIMEOUT_MS while progress was called (every receive
 *     buffer holds a message waiting for a receive and the copies reached
 *     EFARM_UNEXP_MAX_BYTES).
 * MPI has no recovery for a lost message: the caller should end the job.
 */
int efarm_ep_progress(struct efarm_ep *ep);

/*
 * Send `len` bytes at buf to peer, untagged (efarm_send) or tagged
 * (efarm_tsend; context/source/tag within EFARM_*_MAX). The buffer must stay
 * unchanged until the request completes. Returns 0 (request started),
 * -EAGAIN (no operation slot: progress and retry), -EINVAL, or, for
 * EFARM_SEND_DC to a peer without delivery complete, EFARM_E(PROTO_NO_DC)
 * through the request once the peer's handshake says so. To a peer that
 * failed (a packet to it failed at the device) the request completes at
 * once with that device error; so does every operation with the peer that
 * was still waiting when it failed.
 */
int efarm_send(struct efarm_ep *ep, efarm_peer_t peer, const void *buf, uint64_t len,
               uint32_t flags, uint64_t cq_data, struct efarm_req *req);
int efarm_tsend(struct efarm_ep *ep, efarm_peer_t peer, const void *buf, uint64_t len,
                uint32_t context, int32_t source, int32_t tag, uint32_t flags, uint64_t cq_data,
                struct efarm_req *req);

/*
 * efarm_tsend of an EFARM_SEND_INJECT message without a request, when it can
 * go at once as one eager packet (it fits EFARM_EAGER_MAX and one packet, no
 * subprotocol is forced, no CQ data, nothing is queued to the peer): returns 0
 * once sent (the buffer is free again and nothing completes later), 1 when it
 * cannot go this way (nothing was done: send it with efarm_tsend), -EINVAL,
 * or the peer's device error when it failed (as efarm_tsend's request would).
 * What MPI's standard send of a small message needs, without a request.
 */
int efarm_tsend_now(struct efarm_ep *ep, efarm_peer_t peer, const void *buf, uint64_t len,
                    uint32_t context, int32_t source, int32_t tag, uint32_t flags);

/*
 * Post a receive of at most len bytes: untagged from peer (EFARM_PEER_NONE:
 * any), or tagged on (context, source, tag) with wildcards. May complete the
 * request before returning when an unexpected eager message matches. Returns
 * 0, -EAGAIN (posted-receive or operation slots exhausted), -EINVAL.
 */
int efarm_recv(struct efarm_ep *ep, void *buf, uint64_t len, efarm_peer_t peer,
               struct efarm_req *req);
int efarm_trecv(struct efarm_ep *ep, void *buf, uint64_t len, uint32_t context, int32_t source,
                int32_t tag, struct efarm_req *req);

/*
 * Probe for a tagged message that has arrived but matched no receive. Returns
 * 1 and fills *info, 0 when there is none, -EINVAL. With `claim`, the message
 * is removed from matching (MPI_Mprobe) and must be received with
 * efarm_tmrecv(info->handle).
 */
int efarm_tprobe(struct efarm_ep *ep, uint32_t context, int32_t source, int32_t tag, bool claim,
                 struct efarm_probe_info *info);

/*
 * The same for untagged messages, from one peer or any (EFARM_PEER_NONE);
 * info->context is EFARM_CTX_UNTAGGED, info->source the peer, info->tag 0.
 * A claimed one is received with efarm_tmrecv() too.
 */
#define EFARM_CTX_UNTAGGED 0xffffffffu
int efarm_probe(struct efarm_ep *ep, efarm_peer_t peer, bool claim, struct efarm_probe_info *info);

/*
 * A counter that grows each time an untagged message is queued unexpected:
 * while it has not changed since efarm_probe() found nothing, probing again
 * would find nothing either, so a caller that polls for untagged messages
 * (MPI's active messages, every progress call) reads one word instead. The
 * pointer stays valid until the endpoint closes.
 */
const uint64_t *efarm_ep_untagged_arrivals(const struct efarm_ep *ep);

/*
 * The counter that stamps unexpected messages: each one queued takes
 * ++*clock as its arrival stamp, which efarm_tprobe() and efarm_probe()
 * report (info->arrival). By default every endpoint counts for itself; a
 * caller that keeps other receive queues besides the engine's (the netmod:
 * MPICH's shared-memory messages) passes one counter shared with them, so
 * that stamps tell which of two messages in different queues arrived first.
 * NULL goes back to the endpoint's own. Same thread as the endpoint's calls.
 */
void efarm_ep_set_arrival_clock(struct efarm_ep *ep, uint64_t *clock);

/*
 * Receive a message claimed by efarm_tprobe() or efarm_probe(). Returns 0,
 * -ENOENT (a stale handle), -EAGAIN (no operation slot for a message that
 * needs one: progress and retry).
 */
int efarm_tmrecv(struct efarm_ep *ep, efarm_tm_handle_t handle, void *buf, uint64_t len,
                 struct efarm_req *req);

/*
 * Cancel a posted receive that has not matched. Returns 0 and completes the
 * request with -ECANCELED, or -ENOENT when it already matched (it will
 * complete normally).
 */
int efarm_cancel_recv(struct efarm_ep *ep, struct efarm_req *req);

/* ---- Counters ---------------------------------------------------------------- */

/* X(name, doc): one counter each, plus per-type packet counts below. */
#define EFARM_COUNTER_LIST(X)                                                                \
    X(tx_pkts, "packets posted")                                                             \
    X(rx_pkts, "packets received")                                                           \
    X(rx_bytes, "bytes received in packets")                                                 \
    X(tx_queued, "packets queued because the send queue was full")                           \
    X(rnr, "RNR completions (receiver had no buffer)")                                       \
    X(rnr_backoff, "times a peer entered RNR backoff")                                       \
    X(retransmits, "packets resent after RNR")                                               \
    X(unexpected, "messages that arrived before their receive")                              \
    X(out_of_order, "REQ packets that arrived ahead of their msg_id")                        \
    X(overflow, "REQ packets beyond the reorder window (overflow list)")                     \
    X(held_rx, "receive buffers held unposted for back-pressure")                            \
    X(copy_overdraft, "packets copied past EFARM_UNEXP_BYTES to keep RX_RESERVE posted")     \
    X(deferred, "in-order messages deferred: no operation slot or no record for them")       \
    X(rx_full, "times every receive buffer came to hold a waiting packet (none could land)") \
    X(decode_errors, "packets that failed to decode (dropped)")                              \
    X(unknown_sender, "packets from an unknown sender without raw address (dropped)")        \
    X(connid_mismatch, "packets whose connid names no live peer (dead QP, dropped)")         \
    X(stale_ids, "packets naming no live operation or a past msg_id (dropped)")              \
    X(unsupported, "REQ packets of features this engine does not serve (dropped)")           \
    X(implicit_peers, "peers learnt from a raw-address header")                              \
    X(handshakes_sent, "HANDSHAKE packets sent")                                             \
    X(handshakes_recv, "HANDSHAKE packets received")                                         \
    X(handshake_triggers, "0-byte EAGER_RTW sent to make a peer answer with a HANDSHAKE")    \
    X(proto_eager, "messages sent eager")                                                    \
    X(eager_fast, "eager tagged injected sends by the fast path (header template, no op)")   \
    X(eager_fast_rx, "eager tagged messages received by the fast path (matched, in turn)")   \
    X(proto_medium, "messages sent medium")                                                  \
    X(proto_longcts, "messages sent long-CTS")                                               \
    X(proto_longread, "messages sent long-read")                                             \
    X(proto_runtread, "messages sent runting-read")                                          \
    X(proto_dc, "messages sent with delivery complete")                                      \
    X(proto_forced, "messages sent with the subprotocol EFARM_PROTO or a hint forces")       \
    X(reg_fallbacks, "long/runt-read sends that fell back to long-CTS (registration)")       \
    X(read_nacks_sent, "READ_NACK sent (receiver could not register)")                       \
    X(read_nacks_recv, "READ_NACK received (fell back to long-CTS)")                         \
    X(reads_posted, "RDMA reads posted")                                                     \
    X(truncated, "receives shorter than the message")                                        \
    X(send_errors, "send operations completed with an error")                                \
    X(recv_errors, "receive operations completed with an error")                             \
    X(peers_failed, "peers marked failed after a packet to them failed at the device")       \
    X(peer_probes, "HANDSHAKEs sent as liveness probes to silent peers operations wait on")  \
    X(lost_after_completion, "injected sends whose data was lost after they completed")      \
    X(read_platform_mismatch, "peers on an EFA platform this one cannot RDMA-read with")     \
    X(rma_refused, "remote accesses refused: unknown key, out of bounds or not granted")     \
    X(rma_direct_write, "one-sided writes by RDMA write")                                    \
    X(rma_eager_rtw, "one-sided writes emulated with EAGER_RTW packets")                     \
    X(rma_direct_read, "one-sided reads by RDMA read")                                       \
    X(rma_short_rtr, "one-sided reads emulated with SHORT_RTR/READRSP")                      \
    X(rma_write_rta, "atomics without result (WRITE_RTA)")                                   \
    X(rma_fetch_rta, "fetching atomics (FETCH_RTA)")                                         \
    X(rma_compare_rta, "compare atomics (COMPARE_RTA)")                                      \
    X(rma_longcts_rtw, "one-sided writes emulated with LONGCTS_RTW (CTS rounds)")            \
    X(rma_longread_rtw, "one-sided writes the target read by RDMA (LONGREAD_RTW)")           \
    X(rma_longcts_rtr, "one-sided reads emulated with LONGCTS_RTR (CTS rounds)")             \
    X(rma_dc, "one-sided operations that waited for remote completion (DC)")                 \
    X(rma_forced, "one-sided operations carried by a subprotocol EFARM_RMA_PROTO forces")    \
    X(rma_errors, "one-sided operations completed with an error")                            \
    X(rma_wrs_posted, "RDMA write and read work requests posted for one-sided operations")   \
    X(rma_served, "peers' emulated one-sided requests applied here (RTW, RTR, RTA)")         \
    X(rma_write_data, "peers' writes with remote CQ data reported here")                     \
    X(rma_write_data_lost, "peers' writes with remote CQ data landed with no handler set")   \
    X(rma_pending, "peers' one-sided requests kept until a reply buffer was free")           \
    X(progress_nested, "progress calls refused: made from a callback that progress ran")

struct efarm_counters {
#define EFARM_COUNTER_MEMBER_(name, doc) uint64_t name;
    EFARM_COUNTER_LIST(EFARM_COUNTER_MEMBER_)
#undef EFARM_COUNTER_MEMBER_
    uint64_t tx_by_type[256]; /* packets posted, by packet type */
    uint64_t rx_by_type[256]; /* packets received and decoded, by packet type */
};

/* The endpoint's counters (live; owned by the endpoint). */
const struct efarm_counters *efarm_ep_counters(const struct efarm_ep *ep);

/*
 * What the endpoint holds now (levels, not counters): X(name, doc). A soak
 * reads them to see that nothing grows without bound.
 */
#define EFARM_LEVEL_LIST(X)                                                                \
    X(ops, "operations in use (of EFARM_MAX_OPS)")                                         \
    X(tx_bufs, "send buffers in use (of EFARM_TX_PKTS)")                                   \
    X(rx_held, "device receive buffers holding a packet that waits (of EFARM_RX_BUFFERS)") \
    X(rx_copies, "received packets kept as copies")                                        \
    X(stored_bytes, "bytes of copies and unexpected records (against EFARM_UNEXP_*)")      \
    X(unexpected, "unexpected messages waiting for their receive")                         \
    X(windows, "reorder windows in use (peers with packets waiting for earlier ones)")     \
    X(peers, "peers in the address vector")                                                \
    X(peer_states, "peers talked to (state created on first contact)")

struct efarm_levels {
#define EFARM_LEVEL_MEMBER_(name, doc) uint64_t name;
    EFARM_LEVEL_LIST(EFARM_LEVEL_MEMBER_)
#undef EFARM_LEVEL_MEMBER_
};

/* The endpoint's levels now. */
void efarm_ep_levels(const struct efarm_ep *ep, struct efarm_levels *out);

/* Print the nonzero counters, one per line. */
void efarm_counters_print(FILE *out, const struct efarm_counters *counters);

/* Print every counter's name and meaning (efarm-info). */
void efarm_counters_describe(FILE *out);

/*
 * Sizes of the hot structures, pinned by tests and printed by efarm-info.
 * With ep NULL the reorder window is sized for the EFARM_RECVWIN tunable.
 */
struct efarm_proto_sizes {
    uint32_t peer;       /* address-vector entry, every peer */
    uint32_t peer_state; /* created on first contact */
    uint32_t window;     /* a peer's reorder window, while packets of it wait (EFARM_RECVWIN) */
    uint32_t op;
    uint32_t tx_pkt;
    uint32_t rx_pkt;
    uint32_t unexp; /* record of one unexpected message, its matcher entry included */
};
void efarm_proto_sizes(const struct efarm_ep *ep, struct efarm_proto_sizes *sizes_p);

#endif /* EFARM_PROTO_H */
