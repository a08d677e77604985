/*
 * The protocol engine's functional suite: two endpoints in one process on
 * efasim, driven by the test thread. This header holds what the suite's
 * files share: a pair of endpoints with the sender's thresholds (struct rig),
 * one message a -> b (struct msg), its expected wire traffic, and xfer(),
 * which sends one message and checks it.
 *
 * Every transfer checks the bytes (patterns that name their offset, guard
 * bytes past the receive buffer) AND the counters: the subprotocol the
 * sender chose, the exact number of REQ, CTSDATA, CTS, EOR and RECEIPT
 * packets each side sent and received, the RDMA reads posted. So a message
 * that arrives intact but was carried by the wrong subprotocol still fails.
 * Expected packet counts are computed here from the MTU and the header sizes
 * of the codec table, independently of the engine's own arithmetic.
 *
 * Parts, by file:
 *   test_proto_matrix.c     1-3: the subprotocol matrix at every size boundary
 *                           (tagged, untagged, receive posted before and after
 *                           arrival, DC, at defaults, with small thresholds,
 *                           and under efasim's loss/duplication/reordering/
 *                           delay); truncation; CQ data
 *   test_proto_match.c      4-5: MPI matching; probes and cancel
 *   test_proto_order.c      6: msg_id wraparound and the overflow list
 *   test_proto_resources.c  7-8: back-pressure and RNR; resource exhaustion
 *   test_proto_memory.c     9-11: registration failures; pinned structure
 *                           sizes; allocation-failure walks over efarm_ep_open
 *   test_proto_unexpected.c 12: floods of unexpected messages; the byte budget
 *   test_proto_datalog.c    13: the `data` log level prints every packet
 *   test_proto_failures.c   14: device errors fail peers, operations, endpoint
 *   test_proto_vanish.c     15: a peer that vanishes mid-rendezvous is found by
 *                           liveness probes; a slow one is not failed
 *   test_proto_threads.c    16: two pairs, each driven by its own thread, run the
 *                           matrix at once (under TSan in CI: proto-tsan)
 */
#ifndef EFARM_TEST_PROTO_RIG_H
#define EFARM_TEST_PROTO_RIG_H

#include <stdbool.h>
#include <stdint.h>

#include "efarm_proto.h"
#include "efarm_test.h"
#include "proto_common.h"

#define GUARD      64 /* bytes past every receive buffer that must stay untouched */
#define GUARD_BYTE 0xa5
#define WAIT_S     20.0

/* Matching key of most tests, and the one of the handshake warm-up (never reused). */
#define CTX    7
#define SRC    11
#define TAG    0x1234
#define HS_CTX EFARM_CONTEXT_MAX

/* Progress both endpoints (or only the receiver b) until cond holds; fail after timeout_s. */
#define SPIN_UNTIL_(p, both, cond, timeout_s)                                           \
    do {                                                                                \
        double deadline_ = proto_now_s() + (timeout_s);                                 \
        while (!(cond)) {                                                               \
            if (proto_now_s() > deadline_)                                              \
                efarm_test_fail(__FILE__, __LINE__, "timed out waiting for %s", #cond); \
            if (both)                                                                   \
                EXPECT_TRUE(efarm_ep_progress((p)->a) >= 0);                            \
            EXPECT_TRUE(efarm_ep_progress((p)->b) >= 0);                                \
        }                                                                               \
    } while (0)
#define SPIN_UNTIL(p, cond, timeout_s)   SPIN_UNTIL_(p, true, cond, timeout_s)
#define SPIN_B_UNTIL(p, cond, timeout_s) SPIN_UNTIL_(p, false, cond, timeout_s)

/* Counter delta since a snapshot. */
#define D(now, then, field) ((now)->field - (then)->field)

/* The endpoint's counters: owned by the endpoint, and they move as it progresses. */
static inline const struct efarm_counters *cnt(const struct efarm_ep *ep)
{
    return efarm_ep_counters(ep);
}

/*
 * Small thresholds: every subprotocol with few packets, several CTS rounds,
 * and a runt of exactly two full packets at efasim's default MTU.
 */
extern const struct efarm_ep_attr g_small;

/* efasim's fault injector (read once per process: call before the first endpoint opens). */
void use_faults(void);

/* ---- A pair of endpoints with the sender's thresholds ----------------------------------- */

struct rig {
    struct proto_pair p;
    uint32_t mtu;
    /* a's (the sender's) selection thresholds and credits, b's (the receiver's) window. */
    uint64_t medium_max, read_min, runt_size;
    uint32_t cts_credits, rx_window;
};

/* Open r's pair on efasim (NULL attributes: defaults); record a's thresholds and b's window. */
void rig_open(struct rig *r, const struct efarm_ep_attr *attr_a,
              const struct efarm_ep_attr *attr_b);

/* One message each way, then wait until both sides have the other's HANDSHAKE. */
void rig_handshake(struct rig *r);

/* Expect that no error counter moved on either side, then close both endpoints. */
void rig_close(struct rig *r);

/* ---- Expected wire traffic (from the spec's header sizes, not the engine's) -------------- */

/* Returns the REQ packet type subprotocol `proto` sends, tagged or not, DC or not. */
uint8_t rtm_type(uint8_t proto, bool tagged, bool dc);

/* Returns a REQ's header bytes: mandatory, raw address (first contact) or connid, CQ data. */
uint64_t req_hdr(uint8_t type, bool raw_addr, bool cq_data);

/* Returns the largest eager message to a peer whose HANDSHAKE arrived (raw_addr false) or not. */
uint64_t eager_fit(const struct rig *r, bool tagged, bool dc, bool cq, bool raw_addr);

/* Returns the application bytes of one CTSDATA (connid option on between efarm endpoints). */
uint64_t ctsdata_room(const struct rig *r);

/* ---- One message a -> b ----------------------------------------------------------------- */

struct msg {
    uint64_t len, buf_len;
    uint32_t flags; /* EFARM_SEND_* */
    bool tagged;
    uint8_t proto;     /* the subprotocol it must take */
    bool reg_fallback; /* the sender must fall back from a read protocol to long-CTS */
    uint32_t context;
    int32_t source, tag;
    uint64_t seed;
    uint8_t *src, *dst;
    struct efarm_req sreq, rreq;
};

/* Set up m with the default key; m owns src (pattern seed) and dst (guard bytes) until msg_free. */
void msg_init(struct msg *m, uint64_t len, uint64_t buf_len, uint32_t flags, bool tagged,
              uint8_t proto, uint64_t seed);

/* Free m's buffers (not m itself). */
void msg_free(struct msg *m);

/* Post m's send a -> b with m's key, flags and CQ data; it must be accepted. */
void msg_send(struct rig *r, struct msg *m);

/* Post m's receive on b with m's key (untagged: from a); it must be accepted. */
void msg_post(struct rig *r, struct msg *m);

/* Fail the test unless bytes [from, to) of buf still hold GUARD_BYTE. */
void expect_guard(const uint8_t *buf, uint64_t from, uint64_t to);

/* Both of m's requests completed as m says: statuses, lengths, key, CQ data, bytes, guard. */
void msg_check(const struct rig *r, const struct msg *m);

/* Returns m's REQ packets to a peer whose HANDSHAKE arrived (runt: a runting read's runt). */
uint64_t msg_req_pkts(const struct rig *r, const struct msg *m, uint64_t runt);

/* Packets every other type of the message's exchange takes. */
struct traffic {
    uint64_t req, ctsdata, cts, eor, receipt, reads, truncated, reg_fallbacks;
};

/* Fill the caller's *t with the packets of each type m's exchange takes (runt: as above). */
void msg_traffic(const struct rig *r, const struct msg *m, uint64_t runt, struct traffic *t);

/* ---- Transfers --------------------------------------------------------------------------- */

/* Send m a -> b, receive posted first or after arrival; check data, results and counters. */
void xfer(struct rig *r, struct msg *m, bool posted_first);

/* One message of len bytes into buf_len (a random seed), both ways of posting the receive. */
void xfer_both(struct rig *r, uint64_t len, uint64_t buf_len, uint32_t flags, bool tagged,
               uint8_t proto);

/* Wait for every request of n messages (both sides) and msg_check each. */
void msgs_wait_check(struct rig *r, struct msg *m, unsigned n);

/* The matrix of part 1 on an open, handshaken rig (test_proto_matrix.c). */
void matrix_run(struct rig *r, bool tagged);

#endif /* EFARM_TEST_PROTO_RIG_H */
