/*
 * Operations: the fixed op array, the ids peers echo back, the work list and
 * the (peer, id) map of receive operations whose later packets are still
 * coming (medium and runting-read segments, the long-CTS that follows a
 * READ_NACK): a message's under its msg_id, a peer's runt write under its
 * send_id (RTWs have no msg_id).
 *
 * An op's id is (generation << 16 | index). The generation changes every
 * time the slot is reused, so an id from the wire names a live op only if
 * both halves match, the op plays the role the packet expects and it belongs
 * to the peer that sent the packet; anything else is a stale or forged id,
 * counted and dropped by the caller.
 */
#include <errno.h>
#include <stdlib.h>

#include "proto_internal.h"
#include "proto_messages.h"
#include "proto_onesided.h"
#include "proto_ops.h"
#include "proto_receive.h"
#include "proto_transmit.h"

int efarm_ops_init(struct efarm_ep *ep)
{
    uint32_t n = ep->p.max_ops, buckets = 16;

    while (buckets < 2 * n)
        buckets *= 2;
    ep->ops = efarm_aligned_calloc(n, sizeof(*ep->ops));
    ep->op_free = efarm_calloc(n, sizeof(*ep->op_free));
    ep->map_buckets = efarm_calloc(buckets, sizeof(*ep->map_buckets));
    if (!ep->ops || !ep->op_free || !ep->map_buckets) {
        free(ep->map_buckets);
        free(ep->op_free);
        free(ep->ops);
        return -ENOMEM;
    }
    memset(ep->map_buckets, 0xff, buckets * sizeof(*ep->map_buckets));
    ep->map_mask = buckets - 1;
    for (uint32_t i = 0; i < n; i++) {
        ep->ops[i].id = 1u << 16 | i;
        efarm_list_init(&ep->ops[i].link);
        ep->op_free[n - 1 - i] = i;
    }
    ep->nop_free = n;
    return 0;
}

void efarm_ops_fini(struct efarm_ep *ep)
{
    if (ep->ops == NULL)
        return;
    for (uint32_t i = 0; i < ep->p.max_ops; i++) {
        struct efarm_op *op = &ep->ops[i];

        if (op->role != EFARM_OP_FREE && op->mr.entry != NULL)
            efarm_mr_cache_put(ep->mr_cache, &op->mr);
    }
    free(ep->map_buckets);
    free(ep->op_free);
    free(ep->ops);
    ep->ops = NULL;
}

struct efarm_op *efarm_op_alloc(struct efarm_ep *ep, enum efarm_op_role role)
{
    struct efarm_op *op;
    uint32_t id;

    if (ep->nop_free == 0)
        return NULL;
    op = &ep->ops[ep->op_free[--ep->nop_free]];
    id = op->id;
    _Static_assert(EFARM_OPS_RUNNING == 0, "an op starts running by the memset");
    memset(op, 0, offsetof(struct efarm_op, iov));
    op->mr.entry = NULL;
    op->id = id;
    op->role = (uint8_t)role;
    op->map_next = EFARM_OP_INDEX_NONE;
    efarm_list_init(&op->link);
    efarm_list_init(&op->peer_link);
    return op;
}

/*
 * Every live operation with this failed peer ends with its error, each by its
 * class. A class's handler may release other operations of the peer too, so
 * the list is moved aside first and each op is put back before its handler
 * runs: whatever the handler releases leaves whichever list it is on.
 */
void efarm_peer_ops_fail(struct efarm_ep *ep, struct efarm_peer_state *st)
{
    struct efarm_link pending, *link;

    efarm_list_init(&pending);
    efarm_list_splice_tail(&pending, &st->ops);
    while ((link = efarm_list_first(&pending)) != NULL) {
        struct efarm_op *op = efarm_container_of(link, struct efarm_op, peer_link);

        efarm_list_remove(link);
        efarm_list_append(&st->ops, link);
        efarm_op_role_ops(op)->peer_failed(ep, op, st->fail_status);
    }
}

/* Every caller has made first contact, so the peer's state exists. */
void efarm_op_set_peer(struct efarm_ep *ep, struct efarm_op *op, efarm_peer_t peer)
{
    struct efarm_peer_state *st = peer < ep->npeers ? ep->peers[peer].st : NULL;

    op->peer = peer;
    if (efarm_link_linked(&op->peer_link))
        efarm_list_remove(&op->peer_link);
    if (st != NULL)
        efarm_list_append(&st->ops, &op->peer_link);
}

void efarm_op_release(struct efarm_ep *ep, struct efarm_op *op)
{
    uint32_t index = op->id & 0xffff, gen = (op->id >> 16) + 1;

    if (op->flags & EFARM_OPF_MAPPED)
        efarm_op_map_remove(ep, op);
    if (efarm_link_linked(&op->link))
        efarm_list_remove(&op->link);
    if (efarm_link_linked(&op->peer_link))
        efarm_list_remove(&op->peer_link);
    if (op->mr.entry != NULL)
        efarm_mr_cache_put(ep->mr_cache, &op->mr);
    /* A runt write that ended before its runt was whole (its peer failed): its packets. */
    while ((op->flags & EFARM_OPF_RUNT) && op->msg.runt_pkts != NULL) {
        struct efarm_rxpkt *rp = op->msg.runt_pkts;

        op->msg.runt_pkts = rp->next;
        efarm_rxpkt_release(ep, rp);
    }
    if ((op->flags & EFARM_OPF_COUNTED) && op->peer < ep->npeers && ep->peers[op->peer].st &&
        ep->peers[op->peer].st->sends_inflight)
        ep->peers[op->peer].st->sends_inflight--;
    op->role = EFARM_OP_FREE;
    op->req = NULL;
    op->id = (gen & 0xffff ? gen : 1) << 16 | index;
    ep->op_free[ep->nop_free++] = index;
}

struct efarm_op *efarm_op_find_live(struct efarm_ep *ep, uint32_t id, efarm_peer_t peer)
{
    uint32_t index = id & 0xffff;
    struct efarm_op *op;

    if (index >= ep->p.max_ops)
        return NULL;
    op = &ep->ops[index];
    if (op->id != id || op->role == EFARM_OP_FREE || (peer != EFARM_PEER_NONE && op->peer != peer))
        return NULL;
    return op;
}

struct efarm_op *efarm_op_find(struct efarm_ep *ep, uint32_t id, enum efarm_op_role runs_as,
                               efarm_peer_t peer)
{
    uint32_t index = id & 0xffff;
    struct efarm_op *op;

    if (index >= ep->p.max_ops)
        return NULL;
    op = &ep->ops[index];
    if (op->id != id || op->role == EFARM_OP_FREE || efarm_op_role_ops(op)->runs_as != runs_as ||
        (peer != EFARM_PEER_NONE && op->peer != peer))
        return NULL;
    return op;
}

void efarm_op_work(struct efarm_ep *ep, struct efarm_op *op)
{
    if (op->flags & EFARM_OPF_IN_WORK)
        return;
    op->flags |= EFARM_OPF_IN_WORK;
    efarm_list_append(&ep->work, &op->link);
    efarm_ep_pending(ep);
}

static uint32_t map_bucket(const struct efarm_ep *ep, efarm_peer_t peer, uint32_t id)
{
    return efarm_peer_msg_bucket(peer, id, ep->map_mask);
}

/* The id an op is filed under: the peer's send_id for a write, else its msg_id. */
static uint32_t map_id(const struct efarm_op *op)
{
    return efarm_op_role_ops(op)->keyed_by_send_id ? op->peer_op_id : op->msg_id;
}

void efarm_op_map_insert(struct efarm_ep *ep, struct efarm_op *op)
{
    uint32_t b = map_bucket(ep, op->peer, map_id(op));

    op->map_next = ep->map_buckets[b];
    ep->map_buckets[b] = (uint16_t)(op->id & 0xffff);
    op->flags |= EFARM_OPF_MAPPED;
}

void efarm_op_map_remove(struct efarm_ep *ep, struct efarm_op *op)
{
    uint16_t *slot = &ep->map_buckets[map_bucket(ep, op->peer, map_id(op))];
    uint16_t index = (uint16_t)(op->id & 0xffff);

    while (*slot != EFARM_OP_INDEX_NONE) {
        if (*slot == index) {
            *slot = op->map_next;
            break;
        }
        slot = &ep->ops[*slot].map_next;
    }
    op->map_next = EFARM_OP_INDEX_NONE;
    op->flags &= ~EFARM_OPF_MAPPED;
}

struct efarm_op *efarm_op_map_find(struct efarm_ep *ep, enum efarm_op_role role, efarm_peer_t peer,
                                   uint32_t id)
{
    for (uint32_t i = ep->map_buckets[map_bucket(ep, peer, id)]; i != EFARM_OP_INDEX_NONE;
         i = ep->ops[i].map_next) {
        struct efarm_op *op = &ep->ops[i];

        if (op->role == role && op->peer == peer && map_id(op) == id)
            return op;
    }
    return NULL;
}

void efarm_req_complete(struct efarm_ep *ep, struct efarm_op *op, struct efarm_req *req, int status)
{
    if (op != NULL)
        efarm_op_set_state(op, EFARM_OPS_COMPLETED);
    req->status = status;
    req->done = true;
    if (status) {
        bool rma = op != NULL && efarm_op_role_ops(op)->rma;

        if (op != NULL && efarm_op_role_ops(op)->origin) {
            ep->cnt.send_errors++;
            ep->cnt.rma_errors += rma;
        } else if (status != -ECANCELED && status != -EMSGSIZE) {
            ep->cnt.recv_errors++;
        }
    }
    if (req->cb)
        req->cb(req);
}

/* A packet of a receive operation (CTS, EOR, RECEIPT, READ_NACK) completed. */
static void rx_op_tx_done(struct efarm_ep *ep, struct efarm_op *op, struct efarm_txpkt *tx,
                          int status)
{
    (void)tx;
    op->pkts_inflight--;
    if (status && op->status == 0)
        op->status = status;
    efarm_rx_op_pkt_done(ep, op);
}

const char *const efarm_op_state_names[EFARM_OPS_COUNT] = {
    [EFARM_OPS_RUNNING] = "running",
    [EFARM_OPS_NACKED] = "NACKed",
    [EFARM_OPS_COMPLETED] = "completed",
};

#ifndef NDEBUG
void efarm_op_state_illegal(const struct efarm_op *op, enum efarm_op_role role,
                            enum efarm_op_state state)
{
    efarm_log(EFARM_LOG_ERROR, "op %#x, a %s op %s, cannot be a %s op %s", op->id,
              efarm_op_role_ops(op)->name, efarm_op_state_names[op->state],
              g_efarm_op_roles[role].name, efarm_op_state_names[state]);
    abort();
}
#endif

/* The send and receive machinery's hooks, shared by the roles each runs. */
#define SEND_MACHINERY                                                                  \
    .runs_as = EFARM_OP_TX, .work = efarm_tx_op_work, .pkt_done = efarm_tx_op_pkt_done, \
    .peer_failed = efarm_tx_op_peer_failed
#define RECV_MACHINERY                                                           \
    .runs_as = EFARM_OP_RX, .work = efarm_rx_op_work, .pkt_done = rx_op_tx_done, \
    .rdma_done = efarm_read_completion, .peer_failed = efarm_rx_op_peer_failed

/* The states a role's ops can be in. */
#define RUNNING   EFARM_OPS_BIT(EFARM_OPS_RUNNING)
#define NACKED    EFARM_OPS_BIT(EFARM_OPS_NACKED)
#define COMPLETED EFARM_OPS_BIT(EFARM_OPS_COMPLETED)

const struct efarm_op_role_ops g_efarm_op_roles[EFARM_OP_ROLE_COUNT] = {
    [EFARM_OP_FREE] = {.name = "free"},
    [EFARM_OP_TX] = {.name = "send",
                     SEND_MACHINERY,
                     .states = RUNNING | NACKED | COMPLETED,
                     .begin = efarm_send_begin,
                     .receipt = efarm_tx_receipt,
                     .origin = true},
    [EFARM_OP_RX] = {.name = "receive", RECV_MACHINERY, .states = RUNNING | COMPLETED},
    [EFARM_OP_RMA] = {.name = "one-sided",
                      .runs_as = EFARM_OP_RMA,
                      .states = RUNNING | COMPLETED,
                      .work = efarm_rma_op_work,
                      .pkt_done = efarm_rma_op_pkt_done,
                      .rdma_done = efarm_rma_op_rdma_done,
                      .peer_failed = efarm_rma_op_peer_failed,
                      .begin = efarm_rma_op_begin,
                      .receipt = efarm_rma_op_receipt,
                      .readrsp = efarm_rma_op_readrsp,
                      .origin = true,
                      .rma = true},
    /* A DC_LONGCTS_RTW ends at the RECEIPT, as a DC send does. */
    [EFARM_OP_WRITE_ORIGIN] = {.name = "long write",
                               SEND_MACHINERY,
                               .states = RUNNING | NACKED | COMPLETED,
                               .receipt = efarm_tx_receipt,
                               .origin = true,
                               .rma = true},
    /* The target's READRSP brings the first data and its op's id. */
    [EFARM_OP_READ_ORIGIN] = {.name = "long read",
                              RECV_MACHINERY,
                              .states = RUNNING | COMPLETED,
                              .readrsp = efarm_rtr_long_readrsp,
                              .origin = true,
                              .rma = true},
    /*
     * It completes when its data is in, and then sends its EOR or RECEIPT; a
     * runt write's packets and the LONGCTS_RTW after its READ_NACK find it by
     * the peer's send_id.
     */
    [EFARM_OP_WRITE_TARGET] = {.name = "long write target",
                               RECV_MACHINERY,
                               .states = RUNNING | COMPLETED,
                               .target = true,
                               .keyed_by_send_id = true},
    /* It has no request and ends when its data is sent: it never completes. */
    [EFARM_OP_READ_TARGET] = {.name = "long read target",
                              SEND_MACHINERY,
                              .states = RUNNING,
                              .target = true,
                              .lost = "data of a long read it asked for (LONGCTS_RTR)"},
};
#undef SEND_MACHINERY
#undef RECV_MACHINERY
#undef RUNNING
#undef NACKED
#undef COMPLETED
