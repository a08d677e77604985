/*
 * Operations (proto_ops.c): allocation, ids a peer echoes, the (peer,
 * msg_id) map, the work list, completion of requests.
 */
#ifndef EFARM_PROTO_OPS_H
#define EFARM_PROTO_OPS_H

#include "proto_internal.h"

/*
 * What an operation in one role does with the events that reach it, and the
 * facts of the role. Routing by role goes through this table; the one test
 * of a role itself is the (peer, id) map's: a later packet of a message finds
 * only a message receive, one of a write only a write we serve
 * (efarm_op_map_find).
 */
struct efarm_op_role_ops {
    const char *name;
    /* The machinery that runs it (EFARM_OP_TX, _RX or _RMA): which replies can name it. */
    uint8_t runs_as;
    /* The states it can be in: EFARM_OPS_BIT of each. */
    uint8_t states;
    /* Build and post what the op still has to send (from the work list). */
    void (*work)(struct efarm_ep *ep, struct efarm_op *op);
    /* One of its packets completed at the device (status 0 or an error). */
    void (*pkt_done)(struct efarm_ep *ep, struct efarm_op *op, struct efarm_txpkt *tx, int status);
    /* One of its RDMA reads/writes completed. */
    void (*rdma_done)(struct efarm_ep *ep, struct efarm_op *op, const struct efarm_dev_cqe *cqe);
    /* Its peer failed. */
    void (*peer_failed)(struct efarm_ep *ep, struct efarm_op *op, int status);
    /* The peer's HANDSHAKE arrived (ops waiting for it, in the order they started). */
    void (*begin)(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_op *op);
    /* A RECEIPT names it (NULL: RECEIPTs for this role are stale). */
    void (*receipt)(struct efarm_ep *ep, struct efarm_op *op, const struct efarm_pkt *pkt);
    /* A READRSP names it by recv_id (NULL: stale for this role). */
    void (*readrsp)(struct efarm_ep *ep, struct efarm_op *op, const struct efarm_pkt *pkt);
    bool origin; /* started by this endpoint: errors count as send errors */
    bool rma;    /* a one-sided operation of ours: its errors count as one-sided errors too; a
                    long one carries its remote range (op->iov) in its REQ */
    bool target; /* serves a peer's one-sided operation: no request of ours; a failure is
                    told to the peer (efarm's REFUSED flag) */
    bool keyed_by_send_id; /* in the (peer, id) map under the peer's send_id, not a msg_id: a
                              write has none (its runt packets, the LONGCTS_RTW after a
                              READ_NACK find it so) */
    /* What the loss of one of its packets costs the peer when nothing more precise applies
       (NULL: the machinery's own rule). */
    const char *lost;
};
extern const struct efarm_op_role_ops g_efarm_op_roles[EFARM_OP_ROLE_COUNT];
extern const char *const efarm_op_state_names[EFARM_OPS_COUNT];

static inline const struct efarm_op_role_ops *efarm_op_role_ops(const struct efarm_op *op)
{
    return &g_efarm_op_roles[op->role];
}

#ifndef NDEBUG
/* An op was to take a role or state its rows do not allow: logs it and aborts (an engine bug). */
void efarm_op_state_illegal(const struct efarm_op *op, enum efarm_op_role role,
                            enum efarm_op_state state);
#endif

/*
 * The one place an op's state changes. Without NDEBUG it checks the move
 * against the role's row; with NDEBUG it is a store.
 */
static inline void efarm_op_set_state(struct efarm_op *op, enum efarm_op_state state)
{
#ifndef NDEBUG
    if (state <= op->state || !(efarm_op_role_ops(op)->states & EFARM_OPS_BIT(state)))
        efarm_op_state_illegal(op, (enum efarm_op_role)op->role, state);
#endif
    op->state = (uint8_t)state;
}

/*
 * The one place an op's role changes after allocation (a one-sided op that
 * runs long): moving to another machinery clears the fields of the old one.
 * Its state carries over, and must be one the new role has.
 */
static inline void efarm_op_set_role(struct efarm_op *op, enum efarm_op_role role)
{
#ifndef NDEBUG
    if (!(g_efarm_op_roles[role].states & EFARM_OPS_BIT(op->state)))
        efarm_op_state_illegal(op, role, (enum efarm_op_state)op->state);
#endif
    if (g_efarm_op_roles[role].runs_as != efarm_op_role_ops(op)->runs_as)
        memset(&op->msg, 0, sizeof(op->msg) > sizeof(op->rma) ? sizeof(op->msg) : sizeof(op->rma));
    op->role = (uint8_t)role;
}

/* proto_ops.c */
int efarm_ops_init(struct efarm_ep *ep);
void efarm_ops_fini(struct efarm_ep *ep);
struct efarm_op *efarm_op_alloc(struct efarm_ep *ep, enum efarm_op_role role);
/* The op's peer, once: it joins that peer's list of operations (efarm_peer_state.ops). */
void efarm_op_set_peer(struct efarm_ep *ep, struct efarm_op *op, efarm_peer_t peer);
/* The peer failed: each of its live operations ends with st->fail_status (its role's way). */
void efarm_peer_ops_fail(struct efarm_ep *ep, struct efarm_peer_state *st);
void efarm_op_release(struct efarm_ep *ep, struct efarm_op *op);
struct efarm_op *efarm_op_find(struct efarm_ep *ep, uint32_t id, enum efarm_op_role runs_as,
                               efarm_peer_t peer);
/* Any live op with that id (RDMA completions, RECEIPT: the role table routes them). */
struct efarm_op *efarm_op_find_live(struct efarm_ep *ep, uint32_t id, efarm_peer_t peer);
void efarm_op_work(struct efarm_ep *ep, struct efarm_op *op);
/*
 * The (peer, id) map of receive operations whose later packets are still
 * coming: a message receive under its msg_id, a write we serve under the
 * peer's send_id (its role's keyed_by_send_id). A find names the role it
 * wants, so the two id spaces never meet.
 */
void efarm_op_map_insert(struct efarm_ep *ep, struct efarm_op *op);
void efarm_op_map_remove(struct efarm_ep *ep, struct efarm_op *op);
struct efarm_op *efarm_op_map_find(struct efarm_ep *ep, enum efarm_op_role role, efarm_peer_t peer,
                                   uint32_t id);
void efarm_req_complete(struct efarm_ep *ep, struct efarm_op *op, struct efarm_req *req,
                        int status);

#endif /* EFARM_PROTO_OPS_H */
