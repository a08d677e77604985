/*
 * A one-sided subprotocol is one row of g_efarm_rma_protos (rma.c): its
 * packet types, how it moves data, what completes it, its counter and its
 * selection rule. The code of rma.c, rma_target.c, rma_atomic.c and
 * rma_long.c reads the columns; nothing switches on a subprotocol.
 *
 * A new one-sided subprotocol: its line in EFARM_RMA_PROTO_LIST
 * (src/util/efarm_proto_names.h), its row here, its counter in
 * EFARM_COUNTER_LIST, its packet rows in efarm_pkt_types.h, and how the
 * target serves them (rma_target.c, or rma_long.c when it runs on the message
 * engine).
 */
#ifndef EFARM_RMA_PROTO_H
#define EFARM_RMA_PROTO_H

#include <stdbool.h>
#include <stdint.h>

#include "efarm_rma.h"

/* What the caller asked for; selection maps it to a subprotocol. */
enum efarm_rma_want {
    EFARM_RMA_WANT_WRITE,
    EFARM_RMA_WANT_READ,
    EFARM_RMA_WANT_ATOMIC_WRITE,
    EFARM_RMA_WANT_ATOMIC_FETCH,
    EFARM_RMA_WANT_ATOMIC_CMP,
};

/*
 * Conditions of a rule; all those named must hold:
 *   RDMA_WRITE, RDMA_READ  both sides negotiated it, and direct is allowed;
 *   PEER_READ   both sides negotiated RDMA read: the target may read from us;
 *   READ_MIN    at least EFARM_READ_MIN bytes;
 *   LONG        a write above EFARM_MEDIUM_MAX and one packet, a read above
 *               what one READRSP carries;
 *   ONE_RANGE   one remote range (what the long subprotocols name);
 *   REG         the local buffer may still register (none failed);
 *   MULTI_PKT   more than one packet of data (a long RTW's REQ must not hold
 *               it all: the reference refuses one that does);
 *   ONE_PKT     the whole write fits one EAGER_RTW (DC_EAGER_RTW) with its
 *               optional headers and ranges;
 *   BEYOND_PKT  it does not (ONE_PKT's opposite);
 *   ONE_WR      more than 0 bytes, and no more than one RDMA work request
 *               carries;
 *   IMM_OK      the peer takes an RDMA write with immediate as we do: its
 *               unsolicited write receive (extra feature 8) is as ours.
 * A write with remote CQ data (efarm_write_data) goes by the rows whose
 * cq_need holds (forced or not): one request, reported once at the target.
 */
#define EFARM_RMA_NEED_RDMA_WRITE 0x01u
#define EFARM_RMA_NEED_RDMA_READ  0x02u
#define EFARM_RMA_NEED_PEER_READ  0x04u
#define EFARM_RMA_NEED_READ_MIN   0x08u
#define EFARM_RMA_NEED_LONG       0x10u
#define EFARM_RMA_NEED_ONE_RANGE  0x20u
#define EFARM_RMA_NEED_REG        0x40u
#define EFARM_RMA_NEED_MULTI_PKT  0x80u
#define EFARM_RMA_NEED_ONE_PKT    0x100u
#define EFARM_RMA_NEED_BEYOND_PKT 0x200u
#define EFARM_RMA_NEED_ONE_WR     0x400u
#define EFARM_RMA_NEED_IMM_OK     0x800u

struct efarm_rma_rule {
    uint8_t want;     /* enum efarm_rma_want it serves */
    uint8_t rank;     /* tried lowest first among the want's rows */
    uint16_t need;    /* EFARM_RMA_NEED_*: all must hold */
    uint16_t facts;   /* the conditions that still hold when EFARM_RMA_PROTO forces it */
    uint16_t cq_need; /* a write with CQ data: these instead (0: the row carries none) */
};

/* How a subprotocol moves data and what completes it. */
struct efarm_rma_proto_row {
    uint8_t type, dc_type; /* REQ packet types (0: direct RDMA) */
    uint8_t rsp_type;      /* READRSP/ATOMRSP answering each segment (0: none) */
    bool direct;           /* device RDMA by this endpoint */
    bool to_target;        /* data flows to the target (write, atomics) */
    bool elements;         /* segments hold whole atomic elements */
    bool compare;          /* each segment carries the compare values after the operands */
    uint8_t reg;           /* the local buffer is registered with these EFARM_DEV_ACCESS_* + 1
                              (0: no registration) */
    uint8_t role;          /* EFARM_OP_RMA: run here; EFARM_OP_WRITE_ORIGIN or _READ_ORIGIN: a
                              long subprotocol the two-sided machinery runs (msg_proto) */
    uint8_t msg_proto;     /* enum efarm_proto_kind when role is not EFARM_OP_RMA */
    uint16_t counter;      /* offset in struct efarm_counters */
    struct efarm_rma_rule rule;
};

extern const struct efarm_rma_proto_row g_efarm_rma_protos[EFARM_RMA_PROTO_COUNT];

#endif /* EFARM_RMA_PROTO_H */
