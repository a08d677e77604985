/*
 * Wire-level conformance of the protocol engine (protocol v4 chapters 2-4 and
 * doc/PROTOCOL-V4.md).
 *
 * One real engine endpoint (efarm_ep_open) talks to a "wire peer": a fake
 * protocol-v4 endpoint made directly on the device layer. The wire peer
 * encodes packets with the codec and posts them, and polls, decodes and
 * inspects every packet the engine sends, so a test checks exactly what goes
 * on the wire and sends exactly what a libfabric peer (or a hostile one)
 * would. The test thread drives both: pump() progresses the engine once and
 * polls every open wire peer once. Everything runs on efasim.
 *
 * This header is the wire peer, the packets it builds, and what the engine
 * must send. The tests, by file:
 *   test_wire_handshake.c    1: handshake, features, connid and CQ-data headers
 *   test_wire_peers.c        2-3: unknown senders; connid checks, restarted peers
 *   test_wire_flows.c        5: long-CTS, long-read, runting read, READ_NACK
 *   test_wire_negotiation.c  6: what the peer's features allow (reads, DC)
 *   test_wire_order.c        7: msg_id ordering, wraparound, overflow, segments
 *   test_wire_malformed.c    4, 8: forged and stale ids; malformed packets
 */
#ifndef EFARM_TEST_WIRE_PEER_H
#define EFARM_TEST_WIRE_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include "efarm_device.h"
#include "efarm_pkt.h"
#include "efarm_proto.h"
#include "efarm_test.h"
#include "proto_common.h"

#define WP_TX_SLOTS  64
#define WP_WR_READ   (1ull << 63) /* wr_id bit of the RDMA reads a wire peer posts */
#define WP_QUEUE_MAX 4096
#define WP_MAX_PKT   9216
#define WP_TIMEOUT_S 10.0
#define WP_QUIET_US  30000 /* how long "nothing more arrives" is watched */

#define RAW_ADDR_HDR_LEN ((uint32_t)sizeof(struct efarm_wire_req_opt_raw_addr))
#define CTSDATA_HDR_LEN  ((uint32_t)sizeof(struct efarm_wire_ctsdata_hdr))

/* Everything a peer can advertise that the engine uses. */
#define FEAT_ALL                                                             \
    (EFARM_EXTRA_FEATURE_RDMA_READ | EFARM_EXTRA_FEATURE_DELIVERY_COMPLETE | \
     EFARM_EXTRA_REQUEST_CONNID_HEADER | EFARM_EXTRA_FEATURE_RUNT_READ |     \
     EFARM_EXTRA_FEATURE_READ_NACK)
#define FEAT_NO_READ (EFARM_EXTRA_FEATURE_DELIVERY_COMPLETE | EFARM_EXTRA_REQUEST_CONNID_HEADER)

/* ---- The wire peer ------------------------------------------------------------------ */

struct wp_rx {
    uint8_t *data;
    uint32_t len;
};

/* One packet the engine sent, decoded in place. */
struct wp_pkt {
    struct efarm_pkt pkt;
    uint32_t len;
    uint8_t data[WP_MAX_PKT];
};

struct wp {
    struct efarm_dev_ep *dev;
    uint8_t raw[EFARM_RAW_ADDR_LEN];
    uint16_t qpn;
    uint32_t connid;
    uint32_t mtu;
    struct efarm_dev_ah *ah; /* to the engine */
    uint8_t *tx;             /* WP_TX_SLOTS send buffers of an MTU */
    struct efarm_dev_mr *tx_mr;
    bool slot_busy[WP_TX_SLOTS];
    unsigned tx_inflight;
    int tx_status; /* first send error, if any */
    unsigned reads_done;
    int read_status;
    struct wp_rx q[WP_QUEUE_MAX]; /* received, not yet taken, in arrival order */
    unsigned nq;
    /* What this peer puts on its own packets. */
    bool req_raw_addr;       /* REQs carry our raw address (before the engine's HANDSHAKE) */
    bool send_connid;        /* packets carry our connid (the engine asked for it) */
    uint32_t device_version; /* nonzero: our HANDSHAKE carries it (DEVICE_VERSION_HDR) */
    efarm_peer_t peer;       /* this wire peer in the engine's address vector */
};

/* The engine under test (NULL when closed, or in a forked wire peer), and its address. */
extern struct efarm_ep *g_ep;
extern uint8_t g_eng_raw[EFARM_RAW_ADDR_LEN];
extern uint16_t g_eng_qpn;
extern uint32_t g_eng_connid;

/* The engine's counters: owned by the engine, and they move as it progresses. */
static inline const struct efarm_counters *cnt(void)
{
    return efarm_ep_counters(g_ep);
}

/* Open the engine under test on efasim (NULL: defaults) as g_ep; record its address. */
void engine_open(const struct efarm_ep_attr *attr);

/* Close g_ep and set it to NULL. */
void engine_close(void);

/* Progress the engine once (if this process has it) and poll every wire peer once. */
void pump(void);

/* Pump until cond holds; fail the test after WP_TIMEOUT_S. */
#define PUMP_UNTIL(cond)                                                                \
    do {                                                                                \
        double deadline_ = proto_now_s() + WP_TIMEOUT_S;                                \
        while (!(cond)) {                                                               \
            if (proto_now_s() > deadline_)                                              \
                efarm_test_fail(__FILE__, __LINE__, "timed out waiting for %s", #cond); \
            pump();                                                                     \
        }                                                                               \
    } while (0)

/* Pump for about `us` microseconds. */
void pump_for(unsigned us);

/* Pump until req is done. */
void wait_req(struct efarm_req *req);

/* Open wire peer w (the caller's memory, used until wp_close) with an address handle to g_ep. */
void wp_open(struct wp *w);

/* Close w and free the packets it received and did not take. */
void wp_close(struct wp *w);

/* Post `len` bytes (copied) as one packet to the engine. */
void wp_send_bytes(struct wp *w, const void *bytes, uint32_t len);

/* Encode pkt, append pre and data, send, and pump until the engine got it (if we have one). */
void wp_send_settle(struct wp *w, const struct efarm_pkt *pkt, const void *pre, uint32_t pre_len,
                    const void *data, uint64_t n);

/* Pump until w's sends completed; none may have failed. */
void wp_flush(struct wp *w);

/* Take the first packet of `type` (-1: any) w received into the caller's *out; it must decode. */
void wp_expect(struct wp *w, int type, struct wp_pkt *out);

/* Pump a while; nothing of `type` (-1: anything) may have arrived at w. */
void wp_expect_none(struct wp *w, int type);

/* Returns field f of a decoded packet; the packet must have it. */
static inline uint64_t get(const struct wp_pkt *p, enum efarm_pkt_field f)
{
    EXPECT_TRUE(p->pkt.present & (1u << f));
    return efarm_pkt_get(&p->pkt, f);
}

/* ---- Packets the wire peer builds ---------------------------------------------------- */

/* Start the caller's *pkt as a REQ from w: raw address before the handshake, else its connid. */
void wp_req(struct wp *w, struct efarm_pkt *pkt, uint8_t type, uint32_t msg_id, uint64_t tag);

/* Start the caller's *pkt as a non-REQ packet from w, with its connid if the engine asked. */
void wp_ctrl(struct wp *w, struct efarm_pkt *pkt, uint8_t type);

/* Send a HANDSHAKE as libfabric does: connid, host_id, and n (at most 8) extra_info words. */
void wp_send_handshake_words(struct wp *w, const uint64_t *words, uint32_t n);

/* Send a HANDSHAKE with one extra_info word. */
void wp_send_handshake(struct wp *w, uint64_t extra_info);

/* Send a CTS (send_id, recv_id, recv_length) and let the engine handle it. */
void send_cts(struct wp *w, uint32_t send_id, uint32_t recv_id, uint64_t recv_length);

/* Send a CTSDATA of n bytes at offset for recv_id and let the engine handle it. */
void send_ctsdata(struct wp *w, uint32_t recv_id, uint64_t offset, const void *data, uint64_t n);

/* Send EOR, RECEIPT or READ_NACK: send_id plus recv_id (msg_id for RECEIPT) as `second`. */
void send_reply(struct wp *w, uint8_t type, uint32_t send_id, uint32_t second);

/* Send an eager REQ of `type` with n bytes of data and let the engine handle it. */
void send_eager(struct wp *w, uint8_t type, uint32_t msg_id, uint64_t tag, const void *data,
                uint64_t n);

/* Send one MEDIUM_TAGRTM segment with tag 7: [off, off + n) of src, a len-byte message. */
void send_medium(struct wp *w, uint32_t msg_id, const uint8_t *src, uint64_t len, uint64_t off,
                 uint64_t n);

/* ---- What the engine must send --------------------------------------------------------- */

/* Returns the extra_info features the engine advertises, with or without RDMA read and connid. */
uint64_t engine_features(bool rdma_read, bool connid);

/* Section 2.1 and addenda: expect p to be the engine's HANDSHAKE, field by field. */
void expect_engine_handshake(const struct wp_pkt *p, uint64_t extra_info);

/* Expect REQ p to carry the raw-address header (40 bytes, size 36) and the connid one, or not. */
void expect_req_opts(const struct wp_pkt *p, bool raw_addr, bool connid);

/* Expect non-REQ p to carry connid in its multiuse word (or CTSDATA's option) iff `connid`. */
void expect_ctrl_connid(const struct wp_pkt *p, bool connid);

/* Insert w into the engine and exchange HANDSHAKEs; w then sends its connid, not its address. */
void wp_connect(struct wp *w, uint64_t extra_info);

/* Returns the wire tag of context 1, source 2 and `tag`. */
uint64_t tag_of(int32_t tag);

/* Returns the bytes of application data one CTSDATA carries from w. */
uint64_t wp_ctsdata_room(const struct wp *w);

/* Take the engine's CTSDATA for one grant [*off, *off + grant) and check it; advance *off. */
void take_ctsdata(struct wp *w, uint32_t recv_id, const uint8_t *src, uint64_t *off, uint64_t grant,
                  bool connid);

/* As a long-CTS sender, answer each CTS with its grant from src[off, len); returns the rounds. */
unsigned feed_ctsdata(struct wp *w, uint32_t send_id, const uint8_t *src, uint64_t off,
                      uint64_t len, bool connid);

/* Send a LONGCTS REQ with as much data as fits (none with READ_NACK); returns the data bytes. */
uint64_t send_longcts(struct wp *w, uint8_t type, uint32_t msg_id, uint64_t tag, uint32_t send_id,
                      const uint8_t *src, uint64_t len, uint32_t credits, uint16_t extra_flags);

/* Send a LONGREAD (or RUNTREAD) REQ whose payload is the niov (at most 8) entries of iov. */
void send_longread(struct wp *w, uint8_t type, uint32_t msg_id, uint64_t tag, uint32_t send_id,
                   uint64_t len, const struct efarm_rma_iov *iov, uint32_t niov);

/* Send one RUNTREAD_TAGRTM segment: read_iov (none if iov is NULL), then src[off, off + n). */
void send_runtread(struct wp *w, uint32_t msg_id, uint64_t tag, uint32_t send_id, uint64_t len,
                   const struct efarm_rma_iov *iov, uint64_t runt, uint64_t off, const uint8_t *src,
                   uint64_t n);

/* ---- Ordering: ORD_LEN-byte eager messages on tag 7 whose payload names their msg_id ---- */

#define ORD_LEN 40

/* Fill buf (ORD_LEN bytes) with the payload of message `id`. */
void ord_payload(uint8_t *buf, uint32_t id);

/* Send message `id` from w and let the engine handle it. */
void ord_send(struct wp *w, uint32_t id);

/* Expect req to have completed with message `id` in buf. */
void ord_expect(const struct efarm_req *req, const uint8_t *buf, uint32_t id);

#endif /* EFARM_TEST_WIRE_PEER_H */
