/*
 * The small-message path's device calls, as inline functions for code inside
 * libefarm (the protocol engine): posting one packet, polling the CQ (as a
 * batch of records, or as a poll session whose completions are read in
 * place) and giving a receive buffer back. Their exported forms in
 * efarm_device.h (efarm_dev_post_send1, efarm_dev_poll, efarm_dev_rx_release)
 * are these same bodies; the engine calls these to save a call and the
 * argument shuffle per packet. Everything here goes through the verbs objects' own function
 * pointers (ibv_wr_*, ibv_start_poll, ibv_post_recv), never through an
 * exported verbs symbol, so the run-time loader is not involved.
 *
 * Also the endpoint's state, which these need; outside src/device only the
 * engine includes this header, and it reads no field of it.
 */
#ifndef EFARM_DEVICE_INLINE_H
#define EFARM_DEVICE_INLINE_H

#include <errno.h>
#include <infiniband/efadv.h>
#include <infiniband/verbs.h>

#include "efarm_device.h"

#define EFARM_DEV_AH_BUCKETS 256 /* AH cache buckets (chained), per endpoint */

/*
 * One remote GID's address handle, kept for the endpoint's life. The device's
 * handle behind it (ibv) may be absent: refused when the device held no more,
 * or released to make room (efarm_device_limits.h); ahn is then
 * EFARM_DEV_AHN_UNKNOWN, as the device reports for the GID's packets.
 */
struct efarm_dev_ah {
    struct ibv_ah *ibv;
    uint8_t gid[16];
    uint16_t ahn;
    uint32_t user_head;        /* the engine's: its first peer on this handle (UINT32_MAX: none) */
    uint32_t user_mark;        /* the engine's: eviction pass that found it busy */
    uint64_t user_stamp;       /* the engine's: when it last posted with it (LRU) */
    struct efarm_dev_ah *next; /* bucket chain */
};

struct efarm_dev_ep {
    struct efarm_device_caps caps;
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq_ex *cq;
    struct efadv_cq *efadv_cq; /* NULL when the CQ is not libefa's extended one */
    bool cq_sgid;              /* the CQ reports unknown senders' GIDs (efadv_wc_read_sgid) */
    /* With the QP created for unsolicited write receive (efarm_dev_ep_unsolicited): the
       CQ's efadv accessor of the unsolicited mark, from rdma-core 50's struct efadv_cq. */
    bool (*wc_is_unsolicited)(struct efadv_cq *efadv_cq);
    struct ibv_qp *qp;
    struct ibv_qp_ex *qpx;
    union ibv_gid gid;
    uint32_t connid;
    uint32_t sq_depth, sq_used;
    /* Receive pool: rx_count buffers of caps.max_msg_size in one registration. */
    uint8_t *rx_mem;
    struct ibv_mr *rx_mr;
    uint32_t rx_count, rx_refill, rx_posted;
    uint32_t *rx_free; /* released buffers waiting to be reposted */
    uint32_t rx_nfree;
    bool polling; /* inside a poll session: released buffers wait for efarm_dev_poll_end */
    struct ibv_recv_wr *rx_wrs;
    struct ibv_sge *rx_sges;
    struct efarm_dev_ah *ah_bucket[EFARM_DEV_AH_BUCKETS];
    uint32_t ah_max, ah_entries, ah_live; /* efarm_device_limits.h */
    uint64_t ah_created, ah_released, ah_refused, ah_capped;
    int dev_slot; /* its device's entry among the process's (ep.c), or -1 */
};

/* ep.c: map a failed work completion's status; repost released receive buffers. */
/*
 * A completion's status as efarm's error: by the verbs status, and where that
 * says only "general error", by EFA's own status (vendor_err), whose meaning
 * older rdma-core leaves out (ep.c).
 */
int efarm_dev_status(enum ibv_wc_status status, uint32_t vendor_err);
void efarm_dev_rx_refill(struct efarm_dev_ep *ep, bool all);

/* A signaled send WR to (ah, qpn, qkey): everything but its data. */
static inline void efarm_dev_wr_send_head(struct ibv_qp_ex *qpx, const struct efarm_dev_ah *ah,
                                          uint32_t qpn, uint32_t qkey, uint64_t wr_id)
{
    qpx->wr_id = wr_id;
    qpx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_send(qpx);
    ibv_wr_set_ud_addr(qpx, ah->ibv, qpn, qkey);
}

/* Ends a posting session of n WRs: 0 or more posted, -EAGAIN on a full queue. */
static inline int efarm_dev_wr_finish(struct efarm_dev_ep *ep, unsigned n)
{
    int ret = ibv_wr_complete(ep->qpx);

    if (ret)
        return ret == ENOMEM ? -EAGAIN : -ret;
    ep->sq_used += n;
    return (int)n;
}

/* efarm_dev_post_send1 (efarm_device.h): one send of one segment, inline when it fits. */
static inline __attribute__((always_inline)) int
efarm_dev_post_send1_inl(struct efarm_dev_ep *ep, const struct efarm_dev_ah *ah, uint32_t qpn,
                         uint32_t qkey, uint64_t wr_id, const void *addr, uint32_t len,
                         uint32_t lkey)
{
    struct ibv_qp_ex *qpx = ep->qpx;

    if (ep->sq_used >= ep->sq_depth)
        return -EAGAIN;
    ibv_wr_start(qpx);
    efarm_dev_wr_send_head(qpx, ah, qpn, qkey, wr_id);
    if (len <= ep->caps.inline_size)
        ibv_wr_set_inline_data(qpx, (void *)addr, len);
    else
        ibv_wr_set_sge(qpx, lkey, (uintptr_t)addr, len);
    return efarm_dev_wr_finish(ep, 1);
}

/* Whether released buffers are due to be posted (see efarm_dev_rx_release_inl). */
static inline __attribute__((always_inline)) bool efarm_dev_rx_due(const struct efarm_dev_ep *ep)
{
    return ep->rx_nfree != 0 && (ep->rx_posted < ep->rx_refill || ep->rx_nfree >= ep->rx_refill);
}

/*
 * efarm_dev_rx_release: reposted in batches, except when fewer than a batch
 * are posted: then at once, so buffers the caller gives back while it holds
 * most of the others (back-pressure) never sit unposted while the device has
 * none. Inside a poll session they wait for its end: the device frees a
 * receive queue slot only when its completion stops being current, so a
 * post in the session could find the queue full.
 */
static inline __attribute__((always_inline)) void efarm_dev_rx_release_inl(struct efarm_dev_ep *ep,
                                                                           uint32_t rx_id)
{
    ep->rx_free[ep->rx_nfree++] = rx_id;
    if (!ep->polling && efarm_dev_rx_due(ep))
        efarm_dev_rx_refill(ep, ep->rx_posted < ep->rx_refill);
}

/*
 * A poll session, for the engine's progress loop: efarm_dev_poll_start()
 * returns true when a completion is current (the session is then open until
 * efarm_dev_poll_end()), efarm_dev_poll_next() when the next one is. The
 * current completion is read with the efarm_dev_cur_* functions, or into a
 * record with efarm_dev_cqe_read(), and taken exactly once with
 * efarm_dev_cur_take() before anything posts. Completions may be handled
 * inside the session, sends posted included: rdma-core's EFA provider holds
 * only the CQ's lock across it, which posting does not take (libfabric's EFA
 * provider handles its completions the same way); a queue slot is freed only
 * when its completion stops being current, so a post may find the queue full
 * (-EAGAIN). Receive buffers released in the session are posted at its end.
 * Nothing may poll this CQ again before efarm_dev_poll_end().
 */
static inline __attribute__((always_inline)) bool efarm_dev_poll_start(struct efarm_dev_ep *ep)
{
    struct ibv_poll_cq_attr attr = {.comp_mask = 0}; /* EFA reads it: never NULL */

    if (ibv_start_poll(ep->cq, &attr))
        return false;
    ep->polling = true;
    return true;
}

static inline __attribute__((always_inline)) bool efarm_dev_poll_next(struct efarm_dev_ep *ep)
{
    return ibv_next_poll(ep->cq) == 0;
}

/* Whether a poll session of this endpoint is open (between start and end). */
static inline __attribute__((always_inline)) bool efarm_dev_in_poll(const struct efarm_dev_ep *ep)
{
    return ep->polling;
}

/* Ends the session, then posts the receive buffers released in it if they are due. */
static inline __attribute__((always_inline)) void efarm_dev_poll_end(struct efarm_dev_ep *ep)
{
    ibv_end_poll(ep->cq);
    ep->polling = false;
    if (efarm_dev_rx_due(ep))
        efarm_dev_rx_refill(ep, ep->rx_posted < ep->rx_refill);
}

/* What the current completion is (EFARM_DEV_OP_*): one read of the opcode. */
static inline __attribute__((always_inline)) enum efarm_dev_op
efarm_dev_cur_op(struct efarm_dev_ep *ep)
{
    enum ibv_wc_opcode op = ibv_wc_read_opcode(ep->cq);

    return op == IBV_WC_RECV                 ? EFARM_DEV_OP_RECV
           : op == IBV_WC_RECV_RDMA_WITH_IMM ? EFARM_DEV_OP_RECV_WRITE_IMM
                                             : EFARM_DEV_OP_SEND;
}

/* Whether the current completion took a receive WR (else a send, RDMA read or RDMA write). */
static inline __attribute__((always_inline)) bool efarm_dev_cur_is_recv(struct efarm_dev_ep *ep)
{
    return efarm_dev_cur_op(ep) != EFARM_DEV_OP_SEND;
}

/* Whether the current completion, an RDMA write with immediate, took no receive WR. */
static inline __attribute__((always_inline)) bool efarm_dev_cur_unsolicited(struct efarm_dev_ep *ep)
{
    return ep->wc_is_unsolicited != NULL && ep->wc_is_unsolicited(ep->efadv_cq);
}

/* Account for the current completion: its receive buffer or send-queue slot is the caller's. */
static inline __attribute__((always_inline)) void efarm_dev_cur_take(struct efarm_dev_ep *ep,
                                                                     bool recv)
{
    if (recv)
        ep->rx_posted--;
    else
        ep->sq_used--;
}

static inline __attribute__((always_inline)) bool efarm_dev_cur_ok(const struct efarm_dev_ep *ep)
{
    return ep->cq->status == IBV_WC_SUCCESS;
}

static inline __attribute__((always_inline)) uint64_t
efarm_dev_cur_wr_id(const struct efarm_dev_ep *ep)
{
    return ep->cq->wr_id;
}

/* A successful receive's length, sender's AH number (EFARM_DEV_AHN_UNKNOWN) and QPN. */
static inline __attribute__((always_inline)) uint32_t efarm_dev_cur_len(struct efarm_dev_ep *ep)
{
    return ibv_wc_read_byte_len(ep->cq);
}

static inline __attribute__((always_inline)) uint16_t efarm_dev_cur_ahn(struct efarm_dev_ep *ep)
{
    return (uint16_t)ibv_wc_read_slid(ep->cq);
}

static inline __attribute__((always_inline)) uint32_t efarm_dev_cur_src_qpn(struct efarm_dev_ep *ep)
{
    return ibv_wc_read_src_qp(ep->cq);
}

/* The data of receive buffer rx_id (a receive's wr_id). */
static inline __attribute__((always_inline)) uint8_t *
efarm_dev_rx_data(const struct efarm_dev_ep *ep, uint32_t rx_id)
{
    return ep->rx_mem + (size_t)rx_id * ep->caps.max_msg_size;
}

/*
 * The current completion into *c, without taking it. Only the fields of its
 * kind are written (see struct efarm_dev_cqe); success needs no status
 * mapping. Returns whether it is a receive.
 */
static inline __attribute__((always_inline)) bool efarm_dev_cqe_read(struct efarm_dev_ep *ep,
                                                                     struct efarm_dev_cqe *c)
{
    struct ibv_cq_ex *cq = ep->cq;

    if (cq->status == IBV_WC_SUCCESS) {
        c->status = 0;
        c->vendor_err = 0;
    } else {
        c->vendor_err = ibv_wc_read_vendor_err(cq);
        c->status = efarm_dev_status(cq->status, c->vendor_err);
    }
    c->wr_id = cq->wr_id;
    /* Send, RDMA read or write: EFA reports reads as IBV_WC_SEND, so only wr_id tells. */
    c->op = efarm_dev_cur_op(ep);
    c->unsolicited = false;
    if (c->op == EFARM_DEV_OP_SEND)
        return false;
    c->imm = c->op == EFARM_DEV_OP_RECV_WRITE_IMM && !c->status ? ibv_wc_read_imm_data(cq) : 0;
    c->unsolicited = c->op == EFARM_DEV_OP_RECV_WRITE_IMM && efarm_dev_cur_unsolicited(ep);
    c->rx_id = (uint32_t)cq->wr_id;
    c->data = efarm_dev_rx_data(ep, c->rx_id);
    c->len = c->status ? 0 : ibv_wc_read_byte_len(cq);
    c->src_qpn = ibv_wc_read_src_qp(cq);
    c->ahn = (uint16_t)ibv_wc_read_slid(cq);
    c->has_sgid = c->ahn == EFARM_DEV_AHN_UNKNOWN && ep->cq_sgid &&
                  !efadv_wc_read_sgid(ep->efadv_cq, (union ibv_gid *)c->sgid);
    return true;
}

/* efarm_dev_poll (efarm_device.h): up to max completions (max >= 1), taken. */
static inline __attribute__((always_inline)) int
efarm_dev_poll_inl(struct efarm_dev_ep *ep, struct efarm_dev_cqe *cqes, unsigned max)
{
    unsigned n = 0;

    if (!efarm_dev_poll_start(ep))
        return 0;
    do {
        struct efarm_dev_cqe *c = &cqes[n++];
        bool recv = efarm_dev_cqe_read(ep, c);

        if (!c->unsolicited) /* it took no receive WR, and no send slot either */
            efarm_dev_cur_take(ep, recv);
    } while (n < max && efarm_dev_poll_next(ep));
    efarm_dev_poll_end(ep);
    return (int)n;
}

#endif /* EFARM_DEVICE_INLINE_H */
