/*
 * efarm's one-sided interface: memory an endpoint exposes to its peers (the
 * target side) and the write, read and atomic operations on a peer's exposed
 * memory (the origin side).
 *
 * A peer may read or write only memory exposed here. Each region is
 * registered with the device (so RDMA by the NIC checks the same key and
 * bounds) and entered in the endpoint's region table, which the engine
 * consults before it reads or writes a byte for an emulated operation
 * (RTW/RTR/RTA packets): the key must name a live region, the range
 * [addr, addr + len) must lie inside it without overflow, and the region must
 * grant the access. Addresses are the target's virtual addresses, as EFA's
 * RMA uses them.
 *
 * Keys. A region's key is its device registration's rkey (below 2^32); a
 * region of zero bytes has no registration and gets a key from 2^32 up, which
 * no rkey can be. Keys are not reused while the endpoint lives, except where
 * the device reuses an rkey of a region already unexposed.
 */
#ifndef EFARM_RMA_H
#define EFARM_RMA_H

#include <stdbool.h>
#include <stdint.h>

struct efarm_ep;
struct efarm_region;

/* Access a region grants to peers. Atomics need both (they read and write). */
#define EFARM_EXPOSE_READ  (1u << 0)
#define EFARM_EXPOSE_WRITE (1u << 1)

/*
 * Expose [addr, addr + len) with `access` (a nonzero mask of EFARM_EXPOSE_*).
 * The memory must stay valid until efarm_unexpose. Returns 0 and *region_p,
 * -EINVAL (no access, unknown bits, addr NULL with len > 0, or a range that
 * wraps), -ENOMEM, or the device's registration error (for example the
 * device's registration limit).
 */
int efarm_expose(struct efarm_ep *ep, void *addr, uint64_t len, unsigned access,
                 struct efarm_region **region_p);

/* The key peers name the region by (in rma_iov entries and RDMA). */
uint64_t efarm_region_key(const struct efarm_region *region);

/*
 * Withdraw a region: from the return on, peers' operations that name its key
 * are refused. The caller ensures none is in progress (MPI: the window's
 * synchronisation). NULL is ignored.
 */
void efarm_unexpose(struct efarm_ep *ep, struct efarm_region *region);

/*
 * Check one remote access as the engine does before touching memory for a
 * peer: returns 0 and *ptr_p (the first byte), or EFARM_E(PROTO_RMA_KEY) (no
 * live region has the key), EFARM_E(PROTO_RMA_BOUNDS) (the range leaves the
 * region or wraps), EFARM_E(PROTO_RMA_ACCESS) (the region does not grant
 * `access`). A zero-length access must still name a live region and lie
 * within [base, base + len]. Each refusal is counted (rma_refused).
 */
int efarm_region_check(struct efarm_ep *ep, uint64_t addr, uint64_t len, uint64_t key,
                       unsigned access, uint8_t **ptr_p);

/* Regions exposed now (for tests and efarm-info). */
uint32_t efarm_region_count(const struct efarm_ep *ep);

/* ---- Origin side ------------------------------------------------------------------------ */

#include "efarm_proto.h"

/* One-sided subprotocols (EFARM_RMA_PROTO_LIST in efarm_proto_names.h). */
enum efarm_rma_proto {
#define EFARM_RMA_PROTO_ENUM_(id, name, force, doc) EFARM_RMA_##id,
    EFARM_RMA_PROTO_LIST(EFARM_RMA_PROTO_ENUM_)
#undef EFARM_RMA_PROTO_ENUM_
        EFARM_RMA_PROTO_COUNT
};

const char *efarm_rma_proto_name(enum efarm_rma_proto proto);
/* EFARM_RMA_PROTO's comma list as a mask of enum efarm_rma_proto: 0 or -EINVAL. */
int efarm_rma_proto_parse(const char *list, uint32_t *mask_p);

/* One remote range: the target's virtual address, its length, the region's key. */
struct efarm_riov {
    uint64_t addr;
    uint64_t len;
    uint64_t key;
};

/* Remote ranges one operation may name (the local buffer is one contiguous range). */
#define EFARM_RMA_MAX_IOV 4

/* Flags of one-sided operations. */
/*
 * Complete only once the target has applied the operation (remote
 * completion, what MPI_Win_flush needs): the DC packet types, answered by
 * RECEIPT, for emulated writes and atomics; a direct RDMA write completes
 * when the device reports it, which is after the target's NIC placed it.
 * Without it an emulated write completes when its packets left (local
 * completion) and a refusal at the target is counted there only.
 */
#define EFARM_RMA_DC        0x1u
#define EFARM_RMA_NO_DIRECT 0x2u /* emulate even when RDMA is negotiated (tests, comparisons) */

/*
 * Write len bytes at buf into the peer's memory described by riov[0..nriov)
 * (their lengths add up to len), or read them into buf. Both wait for the
 * peer's HANDSHAKE (it says which RDMA the peer has) and then pick the
 * subprotocol: direct RDMA when both sides have it, EFARM_RMA_NO_DIRECT is
 * not set and buf registers; else, for one remote range, a write from
 * EFARM_READ_MIN is LONGREAD_RTW when both sides have RDMA read (the target
 * reads buf), a write above EFARM_MEDIUM_MAX and one packet LONGCTS_RTW
 * (the target paces it with CTS), a read above one READRSP LONGCTS_RTR;
 * anything else EAGER_RTW or SHORT_RTR packets, one per MTU of data. The
 * buffer must stay put until the request completes; req->proto holds the
 * enum efarm_rma_proto used. Returns 0 (started), -EAGAIN (no operation slot:
 * progress and retry), -EINVAL. The request completes with 0, the device's
 * error for a direct access the target's NIC refused, or
 * EFARM_E(PROTO_RMA_REFUSED) when the target refused an emulated one
 * (unknown key, out of bounds, not granted: it touched nothing).
 */
int efarm_write(struct efarm_ep *ep, efarm_peer_t peer, const void *buf, uint64_t len,
                const struct efarm_riov *riov, uint32_t nriov, uint32_t flags,
                struct efarm_req *req);
int efarm_read(struct efarm_ep *ep, efarm_peer_t peer, void *buf, uint64_t len,
               const struct efarm_riov *riov, uint32_t nriov, uint32_t flags,
               struct efarm_req *req);

/*
 * A write that carries remote CQ data (libfabric's fi_writedata): as
 * efarm_write, and once all of it is in place the target reports cq_data
 * with it (efarm_ep_on_write_data). It names one remote range (-EINVAL
 * otherwise) and goes as one request, never split into independent ones, so
 * the report comes once and after the last byte: one EAGER_RTW when it fits
 * one packet with the CQ-data header, else LONGCTS_RTW or LONGREAD_RTW; or one
 * RDMA write with immediate when both sides write by RDMA, it fits one work
 * request, and the peer agrees with this endpoint on unsolicited write receive
 * (protocol v4's extra feature 8: efarm offers it where its QP could be created
 * so, efarm_dev_ep_unsolicited). The immediate holds 32 bits, so a direct write
 * reports only the low
 * 32 bits of cq_data; an emulated one reports all 64. len may be 0 (a
 * notification: one EAGER_RTW without data).
 */
int efarm_write_data(struct efarm_ep *ep, efarm_peer_t peer, const void *buf, uint64_t len,
                     const struct efarm_riov *riov, uint32_t nriov, uint32_t flags,
                     uint64_t cq_data, struct efarm_req *req);

/* ---- Remote CQ data, target side -------------------------------------------------------- */

/* A peer's write with CQ data has landed in memory this endpoint exposed. */
struct efarm_write_data {
    efarm_peer_t peer; /* EFARM_PEER_NONE: an RDMA write from a sender not in the address vector */
    uint64_t cq_data;  /* emulated: the 64 bits sent; by RDMA write: the immediate's 32 bits */
    uint64_t addr;     /* where it wrote (the target's address); 0 for an RDMA write: EFA's
                          completion does not say */
    uint64_t len;      /* bytes it wrote */
    bool direct;       /* it came by RDMA write with immediate */
};

typedef void (*efarm_write_data_fn)(void *ctx, const struct efarm_write_data *w);

/*
 * Who hears of peers' writes with CQ data: fn(ctx, w) from inside progress,
 * once per write, after its data is in place and before any answer to the
 * writer (RECEIPT, EOR) goes. Like a request's callback it may start
 * operations and must not wait. With no handler (fn NULL, the default) such a
 * write still lands; its report is dropped and counted (rma_write_data_lost).
 * A refused write is not reported.
 */
void efarm_ep_on_write_data(struct efarm_ep *ep, efarm_write_data_fn fn, void *ctx);

/* Atomic datatypes and operations: protocol v4 carries libfabric's numbering. */
#define EFARM_ATOMIC_DT_LIST(X) \
    X(INT8, int8, int8_t)       \
    X(UINT8, uint8, uint8_t)    \
    X(INT16, int16, int16_t)    \
    X(UINT16, uint16, uint16_t) \
    X(INT32, int32, int32_t)    \
    X(UINT32, uint32, uint32_t) \
    X(INT64, int64, int64_t)    \
    X(UINT64, uint64, uint64_t) \
    X(FLOAT, float, float)      \
    X(DOUBLE, double, double)   \
    X(FLOAT_COMPLEX, float_complex, float _Complex)

enum efarm_atomic_dt {
#define EFARM_ATOMIC_DT_ENUM_(id, name, ctype) EFARM_DT_##id,
    EFARM_ATOMIC_DT_LIST(EFARM_ATOMIC_DT_ENUM_)
#undef EFARM_ATOMIC_DT_ENUM_
        EFARM_DT_COUNT /* 11; the wire's 11-13 (double and long double complex, long double)
                          are refused, as the reference refuses them */
};

#define EFARM_ATOMIC_OP_LIST(X) \
    X(MIN, min)                 \
    X(MAX, max)                 \
    X(SUM, sum)                 \
    X(PROD, prod)               \
    X(LOR, lor)                 \
    X(LAND, land)               \
    X(BOR, bor)                 \
    X(BAND, band)               \
    X(LXOR, lxor)               \
    X(BXOR, bxor)               \
    X(READ, read)               \
    X(WRITE, write)             \
    X(CSWAP, cswap)             \
    X(CSWAP_NE, cswap_ne)       \
    X(CSWAP_LE, cswap_le)       \
    X(CSWAP_LT, cswap_lt)       \
    X(CSWAP_GE, cswap_ge)       \
    X(CSWAP_GT, cswap_gt)       \
    X(MSWAP, mswap)

enum efarm_atomic_op {
#define EFARM_ATOMIC_OP_ENUM_(id, name) EFARM_AOP_##id,
    EFARM_ATOMIC_OP_LIST(EFARM_ATOMIC_OP_ENUM_)
#undef EFARM_ATOMIC_OP_ENUM_
        EFARM_AOP_COUNT
};

/* What an atomic returns: nothing (WRITE_RTA), the old values (FETCH), or compares (COMPARE). */
enum efarm_atomic_kind { EFARM_ATOMIC_WRITE, EFARM_ATOMIC_FETCH, EFARM_ATOMIC_COMPARE };

/* Bytes of one element (0: no such datatype). */
uint32_t efarm_atomic_dt_size(uint32_t dt);

/* Whether (kind, op, dt) is an atomic protocol v4 carries and both ends apply. */
bool efarm_atomic_valid(enum efarm_atomic_kind kind, uint32_t op, uint32_t dt);

/*
 * Apply an atomic to `count` elements at dst (any alignment): operand src,
 * compare values cmp (COMPARE), old values to res (FETCH, COMPARE; else
 * NULL). The caller checked efarm_atomic_valid. The engine applies peers'
 * atomics with it; an MPI layer uses it for its own process's accesses so
 * that both agree element by element.
 */
void efarm_atomic_apply(uint32_t op, uint32_t dt, uint8_t *dst, const uint8_t *src,
                        const uint8_t *cmp, uint8_t *res, uint64_t count);

/*
 * An atomic on `count` elements of dt at the peer's riov (lengths adding up
 * to count elements): operand holds count elements; compare (COMPARE kind
 * only) count more; result receives the old values (FETCH and COMPARE). The
 * kind follows from the arguments: result NULL is a write atomic, compare
 * non-NULL a compare atomic, else a fetch. Elements are applied at the
 * target atomically with respect to every other peer's atomics and in the
 * order this endpoint started them (msg_id order). An operation larger than
 * one packet is split into several RTA packets at element boundaries (each
 * element still atomic). Returns 0, -EAGAIN, -EINVAL, -EOPNOTSUPP (an
 * operation/datatype pair protocol v4 peers do not apply).
 */
int efarm_atomic(struct efarm_ep *ep, efarm_peer_t peer, uint32_t op, uint32_t dt,
                 const void *operand, const void *compare, void *result, uint64_t count,
                 const struct efarm_riov *riov, uint32_t nriov, uint32_t flags,
                 struct efarm_req *req);

#endif /* EFARM_RMA_H */
