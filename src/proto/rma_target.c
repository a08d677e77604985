/*
 * One-sided operations, target side: peers' emulated writes (EAGER_RTW,
 * DC_EAGER_RTW), reads (SHORT_RTR) and atomics (WRITE/FETCH/COMPARE_RTA,
 * DC_WRITE_RTA) applied to memory this endpoint exposed (proto_expose.c).
 *
 * Trust. Every rma_iov entry is checked against the region table (key, range,
 * access) and the request's shape (lengths adding up to the data carried or
 * asked for, whole atomic elements, a known datatype/operation pair, a reply
 * that fits one packet) before a byte is read or written; one bad entry
 * refuses the whole request, so a refused request changes nothing. Refusals
 * are counted (rma_refused) and answered where the protocol has an answer:
 * READRSP, ATOMRSP or RECEIPT with efarm's REFUSED flag, so the origin's
 * operation fails; a plain EAGER_RTW or WRITE_RTA has no answer in
 * protocol v4, and its refusal is only counted and logged here.
 *
 * Long writes (LONGCTS_RTW, DC_LONGCTS_RTW, LONGREAD_RTW, and the runt
 * writes RUNTCTS_RTW and RUNTREAD_RTW) run as receive operations, long reads
 * (LONGCTS_RTR) as long-CTS sends (rma_long.c).
 *
 * Replies need a send buffer. RTAs are in msg_id order: one whose reply
 * finds none waits in its slot (the ordered path retries it). RTW and RTR
 * have no order: one that finds no buffer (or, for a long write, no
 * operation) is kept on ep->rma_pending and retried from progress in arrival
 * order; a runt write's packet may then be taken by its operation.
 */
#include <errno.h>

#include "efarm_rma.h"
#include "proto_internal.h"
#include "proto_onesided.h"
#include "proto_peers.h"
#include "proto_receive.h"
#include "proto_transmit.h"

/* Largest number of rma_iov entries a request may name (a packet holds fewer anyway). */
#define TARGET_MAX_IOV 256

/*
 * Check every rma_iov entry of pkt for `access`, each a whole number of
 * `elem`-byte elements, adding up to `total`. Returns 0 or the first
 * refusal (counted).
 */
static int iovs_check(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt,
                      unsigned access, uint64_t total, uint32_t elem)
{
    uint64_t count = pkt->value[EFARM_PKT_F_RMA_IOV_COUNT], sum = 0;

    if (count == 0 || count > TARGET_MAX_IOV) {
        ep->cnt.rma_refused++;
        return EFARM_E(PROTO_RMA_BOUNDS);
    }
    for (uint32_t i = 0; i < count; i++) {
        struct efarm_rma_iov iov;
        uint8_t *p;
        int ret;

        efarm_rma_iov_load(pkt->rma_iov, i, &iov);
        if (iov.len > total - sum || (elem > 1 && iov.len % elem)) {
            ep->cnt.rma_refused++;
            return EFARM_E(PROTO_RMA_BOUNDS);
        }
        ret = efarm_region_check(ep, iov.addr, iov.len, iov.key, access, &p);
        if (ret) {
            efarm_log_ratelimited(
                EFARM_LOG_WARN, "%s from peer %u refused: [%#llx, +%llu) key %#llx: %s",
                efarm_pkt_type_info(pkt->type)->name, peer, (unsigned long long)iov.addr,
                (unsigned long long)iov.len, (unsigned long long)iov.key, efarm_strerror(ret));
            return ret;
        }
        sum += iov.len;
    }
    if (sum != total) {
        ep->cnt.rma_refused++;
        return EFARM_E(PROTO_RMA_BOUNDS);
    }
    return 0;
}

/* The i-th entry's memory (checked before by iovs_check). */
static uint8_t *iov_mem(const struct efarm_pkt *pkt, uint32_t i, uint64_t *len_p)
{
    struct efarm_rma_iov iov;

    efarm_rma_iov_load(pkt->rma_iov, i, &iov);
    *len_p = iov.len;
    return (uint8_t *)(uintptr_t)iov.addr;
}

static void refused_log(efarm_peer_t peer, const struct efarm_pkt *pkt, const char *why)
{
    efarm_log_ratelimited(EFARM_LOG_WARN, "%s from peer %u refused: %s",
                          efarm_pkt_type_info(pkt->type)->name, peer, why);
}

/* A RECEIPT for a DC request (the caller checked a send buffer is free). */
static void receipt_reply(struct efarm_ep *ep, efarm_peer_t peer, uint32_t send_id, uint32_t msg_id,
                          int status)
{
    struct efarm_pkt rsp;

    efarm_pkt_init(&rsp, EFARM_PKT_RECEIPT);
    if (status)
        rsp.flags |= EFARM_RSP_FLAG_REFUSED;
    efarm_pkt_set(&rsp, EFARM_PKT_F_SEND_ID, send_id);
    efarm_pkt_set(&rsp, EFARM_PKT_F_MSG_ID, msg_id);
    efarm_pkt_set_connid(ep, ep->peers[peer].st, &rsp);
    efarm_ctrl_send(ep, peer, NULL, &rsp);
}

int efarm_rtw_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt,
                   struct efarm_rxpkt *stored, uint32_t rx_id)
{
    bool dc = efarm_pkt_row(pkt->type)->dc;
    int status;

    (void)stored, (void)rx_id;
    if (dc && ep->ntx_free == 0)
        return -EAGAIN;
    status = iovs_check(ep, peer, pkt, EFARM_EXPOSE_WRITE, pkt->payload_length, 1);
    if (status == 0) {
        const uint8_t *src = pkt->payload;

        for (uint32_t i = 0; i < pkt->value[EFARM_PKT_F_RMA_IOV_COUNT]; i++) {
            uint64_t len;
            uint8_t *dst = iov_mem(pkt, i, &len);

            memcpy(dst, src, len);
            src += len;
        }
        ep->cnt.rma_served++;
        if (pkt->present & EFARM_PKT_HAS(CQ_DATA)) {
            struct efarm_rma_iov first;

            efarm_rma_iov_load(pkt->rma_iov, 0, &first);
            efarm_write_data_report(ep, peer, pkt->value[EFARM_PKT_F_CQ_DATA], first.addr,
                                    pkt->payload_length, false);
        }
    }
    if (dc && !efarm_peer_failed(ep->peers[peer].st))
        receipt_reply(ep, peer, (uint32_t)pkt->value[EFARM_PKT_F_SEND_ID], 0, status);
    return 0;
}

/* ---- Remote CQ data ---------------------------------------------------------------------- */

void efarm_ep_on_write_data(struct efarm_ep *ep, efarm_write_data_fn fn, void *ctx)
{
    ep->write_data_fn = fn;
    ep->write_data_ctx = ctx;
}

void efarm_write_data_report(struct efarm_ep *ep, efarm_peer_t peer, uint64_t cq_data,
                             uint64_t addr, uint64_t len, bool direct)
{
    struct efarm_write_data w = {
        .peer = peer, .cq_data = cq_data, .addr = addr, .len = len, .direct = direct};

    if (ep->write_data_fn == NULL) {
        if (ep->cnt.rma_write_data_lost++ == 0)
            efarm_log(EFARM_LOG_WARN,
                      "a peer's write with remote CQ data landed, but nothing here asked to "
                      "hear of them (efarm_ep_on_write_data): its report is dropped "
                      "(counted in rma_write_data_lost)");
        return;
    }
    ep->cnt.rma_write_data++;
    ep->write_data_fn(ep->write_data_ctx, &w);
}

/*
 * EFA completes an RDMA write with immediate at the target on a receive WR,
 * whose buffer it leaves as it was. The sender is known by its address handle
 * and QPN (or GID) only: no packet names it.
 */
void efarm_write_imm_recv(struct efarm_ep *ep, const struct efarm_dev_cqe *cqe)
{
    struct efarm_pkt none = {.present = 0};
    efarm_peer_t peer = efarm_peer_identify(ep, cqe, &none);

    efarm_write_data_report(ep, peer, cqe->imm, 0, cqe->len, true);
}

/*
 * A response carrying data: header pkt, then `n` bytes produced by fill(ctx,
 * buffer). Takes a control send buffer (the caller checked one is free).
 */
static void data_reply(struct efarm_ep *ep, efarm_peer_t peer, struct efarm_pkt *rsp, uint64_t n,
                       void (*fill)(const struct efarm_pkt *req, uint8_t *out, void *ctx),
                       const struct efarm_pkt *req, void *ctx)
{
    struct efarm_txpkt *tx = efarm_txpkt_alloc(ep, true);
    size_t hdr_len;

    if (tx == NULL)
        return; /* cannot happen: checked before */
    efarm_pkt_set_connid(ep, ep->peers[peer].st, rsp);
    if (efarm_txpkt_encode(ep, tx, rsp, &hdr_len) || hdr_len + n > ep->mtu) {
        efarm_txpkt_release(ep, tx);
        return;
    }
    if (n)
        fill(req, tx->buf + hdr_len, ctx);
    tx->len = (uint32_t)(hdr_len + n);
    tx->peer = peer;
    tx->op = NULL;
    efarm_txpkt_send(ep, tx);
}

/* READRSP data: the requested ranges, in order. */
static void read_fill(const struct efarm_pkt *req, uint8_t *out, void *ctx)
{
    (void)ctx;
    for (uint32_t i = 0; i < req->value[EFARM_PKT_F_RMA_IOV_COUNT]; i++) {
        uint64_t len;
        const uint8_t *src = iov_mem(req, i, &len);

        memcpy(out, src, len);
        out += len;
    }
}

int efarm_rtr_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt,
                   struct efarm_rxpkt *stored, uint32_t rx_id)
{
    uint64_t n = pkt->value[EFARM_PKT_F_MSG_LENGTH];
    struct efarm_pkt rsp;
    int status = 0;

    (void)stored, (void)rx_id;
    if (ep->ntx_free == 0)
        return -EAGAIN;
    if (n > ep->mtu - sizeof(struct efarm_wire_readrsp_hdr)) {
        ep->cnt.rma_refused++;
        refused_log(peer, pkt, "asks for more than one READRSP holds");
        status = EFARM_E(PROTO_RMA_BOUNDS);
    } else {
        status = iovs_check(ep, peer, pkt, EFARM_EXPOSE_READ, n, 1);
    }
    if (efarm_peer_failed(ep->peers[peer].st))
        return 0;
    efarm_pkt_init(&rsp, EFARM_PKT_READRSP);
    efarm_pkt_set(&rsp, EFARM_PKT_F_RECV_ID, pkt->value[EFARM_PKT_F_RECV_ID]);
    efarm_pkt_set(&rsp, EFARM_PKT_F_SEND_ID, 0);
    efarm_pkt_set(&rsp, EFARM_PKT_F_SEG_LENGTH, status ? 0 : n);
    if (status)
        rsp.flags |= EFARM_RSP_FLAG_REFUSED;
    else
        ep->cnt.rma_served++;
    data_reply(ep, peer, &rsp, status ? 0 : n, read_fill, pkt, NULL);
    return 0;
}

/* Apply an RTA's atomics range by range; old values to res when it fetches. */
struct rta_apply {
    uint32_t op, dt, size;
    bool compare;
};

static void rta_fill(const struct efarm_pkt *req, uint8_t *res, void *ctx)
{
    const struct rta_apply *a = ctx;
    uint64_t total = a->compare ? req->payload_length / 2 : req->payload_length, off = 0;

    for (uint32_t i = 0; i < req->value[EFARM_PKT_F_RMA_IOV_COUNT]; i++) {
        uint64_t len;
        uint8_t *dst = iov_mem(req, i, &len);

        efarm_atomic_apply(a->op, a->dt, dst, req->payload + off,
                           a->compare ? req->payload + total + off : NULL,
                           res != NULL ? res + off : NULL, len / a->size);
        off += len;
    }
}

int efarm_rta_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt,
                   struct efarm_rxpkt *stored, uint32_t rx_id)
{
    const struct efarm_pkt_row *row = efarm_pkt_row(pkt->type);
    enum efarm_atomic_kind kind = (enum efarm_atomic_kind)row->atomic;
    bool dc = row->dc, fetch = kind != EFARM_ATOMIC_WRITE;
    struct rta_apply a = {
        .op = (uint32_t)pkt->value[EFARM_PKT_F_ATOMIC_OP],
        .dt = (uint32_t)pkt->value[EFARM_PKT_F_ATOMIC_DATATYPE],
        .compare = kind == EFARM_ATOMIC_COMPARE,
    };
    uint64_t total = pkt->payload_length;
    int status = 0;

    (void)stored, (void)rx_id;
    if ((dc || fetch) && ep->ntx_free == 0)
        return -EAGAIN; /* its reply needs a buffer: wait in order */
    a.size = efarm_atomic_dt_size(a.dt);
    if (a.compare)
        total /= 2;
    if (!efarm_atomic_valid(kind, a.op, a.dt)) {
        ep->cnt.rma_refused++;
        refused_log(peer, pkt, "an atomic operation/datatype pair this engine does not apply");
        status = EFARM_E(PROTO_RMA_REFUSED);
    } else if ((a.compare && pkt->payload_length % 2) ||
               (fetch && total > ep->mtu - sizeof(struct efarm_wire_atomrsp_hdr))) {
        ep->cnt.rma_refused++;
        refused_log(peer, pkt, "data does not match its ranges or the reply would not fit");
        status = EFARM_E(PROTO_RMA_BOUNDS);
    } else {
        status = iovs_check(ep, peer, pkt, EFARM_EXPOSE_READ | EFARM_EXPOSE_WRITE, total, a.size);
    }
    if (status == 0)
        ep->cnt.rma_served++;
    if (efarm_peer_failed(ep->peers[peer].st)) {
        if (status == 0)
            rta_fill(pkt, NULL, &a);
        return 0;
    }
    if (fetch) {
        struct efarm_pkt rsp;

        efarm_pkt_init(&rsp, EFARM_PKT_ATOMRSP);
        efarm_pkt_set(&rsp, EFARM_PKT_F_RECV_ID, pkt->value[EFARM_PKT_F_RECV_ID]);
        efarm_pkt_set(&rsp, EFARM_PKT_F_SEG_LENGTH, status ? 0 : total);
        if (status)
            rsp.flags |= EFARM_RSP_FLAG_REFUSED;
        data_reply(ep, peer, &rsp, status ? 0 : total, rta_fill, pkt, &a);
        return 0;
    }
    if (status == 0)
        rta_fill(pkt, NULL, &a);
    if (dc)
        receipt_reply(ep, peer, (uint32_t)pkt->value[EFARM_PKT_F_SEND_ID],
                      (uint32_t)pkt->value[EFARM_PKT_F_MSG_ID], status);
    return 0;
}

/* ---- Requests waiting for a reply buffer --------------------------------------------------- */

int efarm_rma_pending_keep(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_dev_cqe *cqe)
{
    bool held;
    struct efarm_rxpkt *rp = efarm_rxpkt_store(ep, cqe->data, cqe->len, cqe->rx_id, &held);

    rp->peer = peer;
    rp->next = NULL;
    if (ep->rma_pending == NULL)
        ep->rma_pending = rp;
    else
        ep->rma_pending_last->next = rp;
    ep->rma_pending_last = rp;
    efarm_ep_pending(ep);
    ep->cnt.rma_pending++;
    return held ? EFARM_RX_KEEP : 0;
}

void efarm_rma_pending_progress(struct efarm_ep *ep)
{
    struct efarm_rxpkt *rp;

    while ((rp = ep->rma_pending) != NULL) {
        struct efarm_rxpkt *next = rp->next; /* a runt write that keeps rp chains it anew */
        struct efarm_pkt pkt;
        int ret = 0;

        if (efarm_pkt_decode(rp->data, rp->len, &pkt) == 0 &&
            !efarm_peer_failed(ep->peers[rp->peer].st))
            ret = efarm_pkt_row(pkt.type)->serve(ep, rp->peer, &pkt, rp, rp->rx_id);
        if (ret == -EAGAIN)
            return;
        ep->rma_pending = next;
        if (ret != EFARM_RX_KEEP)
            efarm_rxpkt_release(ep, rp);
    }
}

void efarm_rma_pending_fini(struct efarm_ep *ep)
{
    struct efarm_rxpkt *rp;

    while ((rp = ep->rma_pending) != NULL) {
        ep->rma_pending = rp->next;
        efarm_rxpkt_release(ep, rp);
    }
}
