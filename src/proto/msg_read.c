/*
 * The read subprotocols (sections 4.5, 4.7): the receiver RDMA-reads the
 * sender's registered buffer (the read_iov in the REQ) and answers with EOR.
 *   long-read     one REQ with the read_iov; the receiver reads it all;
 *   runting read  REQs carrying the first EFARM_RUNT_SIZE bytes (the runt,
 *                 placed like medium segments) and the read_iov; the
 *                 receiver reads the rest.
 * A receiver that cannot register its buffer answers READ_NACK (after the
 * runt) and the sender falls back to long-CTS (the row's fallback); a read
 * send has no DC types: the EOR that ends it already says the data was
 * delivered. Their rows: packet types, traits, builders, the receiver's start
 * and its reads, selection rules and profile rules (msg_proto.h). A peer's
 * LONGREAD_RTW and RUNTREAD_RTW run on them at the target (rma_long.c).
 */
#include <errno.h>

#include "efarm_rma.h"
#include "msg_internal.h"
#include "proto_messages.h"
#include "proto_ops.h"
#include "proto_peers.h"
#include "proto_select.h"

#define EFARM_READ_CHUNK_MAX (256ull << 20) /* one read WR; keeps the length in its wr_id */

/* The read_iov of a read send: the whole registered user buffer. */
static void read_iov(const struct efarm_op *op, uint8_t out[sizeof(struct efarm_wire_rma_iov)])
{
    struct efarm_rma_iov iov = {
        .addr = (uint64_t)(uintptr_t)op->buf, .len = op->len, .key = op->mr.rkey};

    efarm_rma_iov_store(out, 0, &iov);
}

static int build_longread(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_op *op)
{
    uint8_t iov[sizeof(struct efarm_wire_rma_iov)];
    struct efarm_pkt pkt;
    efarm_rtw_wire_t wire;

    read_iov(op, iov);
    efarm_req_init(ep, st, op, &pkt, op->req_type, wire);
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, op->len);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, op->id);
    efarm_pkt_set(&pkt, EFARM_PKT_F_READ_IOV_COUNT, 1);
    return efarm_op_pkt_send(ep, op, &pkt, iov, sizeof(iov), NULL, 0);
}

static int build_runtread(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_op *op)
{
    uint64_t hdr = efarm_op_req_hdr_len(st, op) + sizeof(struct efarm_wire_rma_iov);
    uint8_t iov[sizeof(struct efarm_wire_rma_iov)];

    read_iov(op, iov);
    while (op->offset < op->msg.runt_length) {
        uint64_t n = efarm_tx_room(ep, hdr, op->msg.runt_length - op->offset);
        struct efarm_pkt pkt;
        int ret;

        efarm_req_init(ep, st, op, &pkt, op->req_type, NULL);
        efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, op->len);
        efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, op->id);
        efarm_pkt_set(&pkt, EFARM_PKT_F_READ_IOV_COUNT, 1);
        efarm_pkt_set(&pkt, EFARM_PKT_F_SEG_OFFSET, op->offset);
        efarm_pkt_set(&pkt, EFARM_PKT_F_RUNT_LENGTH, op->msg.runt_length);
        ret = efarm_op_pkt_send(ep, op, &pkt, iov, sizeof(iov), op->buf + op->offset, n);
        if (ret)
            return ret;
        op->offset += n;
    }
    return 0;
}

/*
 * The read protocols, once matched: register the buffer past the runt and
 * read, or prepare the READ_NACK.
 */
static void rx_start_read(struct efarm_ep *ep, struct efarm_op *op)
{
    uint64_t start = efarm_msg_proto(op)->runt ? op->msg.runt_length : 0;
    uint64_t end = efarm_rx_read_end(op) > start ? efarm_rx_read_end(op) : start;
    int ret = -ENOTSUP;

    op->offset = start;
    if (end > start && ep->mr_cache != NULL)
        ret = efarm_mr_cache_get(ep->mr_cache, op->buf + start, end - start,
                                 EFARM_DEV_ACCESS_LOCAL_WRITE, &op->mr);
    if (end > start && ret) {
        if (efarm_peer_has(ep->peers[op->peer].st, EFARM_EXTRA_FEATURE_READ_NACK)) {
            /* Section 4.7: tell the sender to send it by long-CTS instead. */
            efarm_dev_reg_refused(ep->dev, end - start, ret, "an RDMA read into a receive buffer",
                                  "The receiver answers READ_NACK and the sender sends by "
                                  "long-CTS, through efarm's packet buffers");
            op->owed |= EFARM_OWE_NACK;
            efarm_op_work(ep, op);
            return;
        }
        /* No fallback the peer understands: fail the receive, but let the sender finish. */
        op->status = EFARM_E(PROTO_READ_FAILED);
        op->done_bytes += op->msg.msg_length - start;
        op->offset = end;
        return;
    }
    /* Bytes past the buffer are not read; they count as done. */
    op->done_bytes += op->msg.msg_length - end;
    if (end > start) {
        op->owed |= EFARM_OWE_READ;
        efarm_rx_op_work(ep, op);
    }
}

/* Post RDMA reads of the sender's buffer while read slots last. */
int efarm_rx_post_reads(struct efarm_ep *ep, struct efarm_op *op)
{
    const struct efarm_peer *p = &ep->peers[op->peer];
    uint64_t end = efarm_rx_read_end(op);

    while (op->offset < end && ep->reads_inflight < ep->p.max_reads) {
        uint64_t base = 0, n;
        uint32_t i = 0;
        int ret;

        while (i < op->niov && op->offset >= base + op->iov[i].len)
            base += op->iov[i++].len;
        n = base + op->iov[i].len - op->offset; /* i < niov: the iov covers msg_length */
        if (n > end - op->offset)
            n = end - op->offset;
        if (n > ep->caps.max_rdma_size)
            n = ep->caps.max_rdma_size;
        if (n > EFARM_READ_CHUNK_MAX)
            n = EFARM_READ_CHUNK_MAX;
        ret = efarm_peer_ah_ready(ep, op->peer);
        if (ret == 0)
            ret = efarm_dev_post_read(
                ep->dev, p->ah, p->qpn, p->connid, op->buf + op->offset, (uint32_t)n, op->mr.lkey,
                op->iov[i].addr + (op->offset - base), (uint32_t)op->iov[i].key,
                (uint64_t)op->id << 32 | n << 2 | EFARM_WR_RDMA);
        if (ret == -EAGAIN)
            return -EAGAIN;
        if (ret) {
            op->status = ret;
            op->done_bytes += end - op->offset;
            op->offset = end;
            break;
        }
        op->offset += n;
        op->reads_inflight++;
        ep->reads_inflight++;
        ep->cnt.reads_posted++;
    }
    if (op->offset < end)
        return -EAGAIN;
    op->owed &= ~EFARM_OWE_READ;
    return 0;
}

void efarm_read_completion(struct efarm_ep *ep, struct efarm_op *op,
                           const struct efarm_dev_cqe *cqe)
{
    uint64_t n = (cqe->wr_id & 0xffffffffu) >> 2;

    ep->reads_inflight--;
    if (op->reads_inflight == 0) {
        efarm_log(EFARM_LOG_ERROR, "read completion for no live operation (wr_id %#llx)",
                  (unsigned long long)cqe->wr_id);
        return;
    }
    op->reads_inflight--;
    op->done_bytes += n;
    if (cqe->status) {
        /*
         * The sender's NIC refused the read (its key does not grant remote
         * read: libfabric from 2.5 registers a buffer given for FI_WRITE only
         * without it when its device has RDMA write, and still sends it by
         * LONGREAD_RTW to a peer without): a peer that takes READ_NACK sends
         * the data again by long-CTS, so nothing is lost. Otherwise the op
         * ends with the error.
         */
        bool nack = cqe->status == EFARM_E(DEV_REMOTE_ACCESS) && op->status == 0 &&
                    efarm_peer_has(ep->peers[op->peer].st, EFARM_EXTRA_FEATURE_READ_NACK);

        efarm_log_ratelimited(EFARM_LOG_WARN, "RDMA read from peer %u failed: %s%s", op->peer,
                              efarm_strerror(cqe->status),
                              nack ? "; READ_NACK: the peer sends it by long-CTS instead" : "");
        if (nack)
            op->flags |= EFARM_OPF_READ_NACK;
        else if (op->status == 0)
            op->status = cqe->status;
        /* Post no more; what was not read counts as done so the op can end (with the error). */
        if (op->owed & EFARM_OWE_READ) {
            op->done_bytes += efarm_rx_read_end(op) - op->offset;
            op->offset = efarm_rx_read_end(op);
            op->owed &= ~EFARM_OWE_READ;
        }
    }
    if ((op->flags & EFARM_OPF_READ_NACK) && op->reads_inflight == 0) {
        /* Undo what the reads counted (all of the read part) and answer as rx_start_read would. */
        uint64_t start = efarm_msg_proto(op)->runt ? op->msg.runt_length : 0;

        op->flags &= ~EFARM_OPF_READ_NACK;
        op->done_bytes -= op->msg.msg_length - start;
        op->offset = start;
        op->owed |= EFARM_OWE_NACK;
        efarm_op_work(ep, op);
        return;
    }
    efarm_rx_op_check(ep, op);
}

const struct efarm_msg_proto efarm_msg_proto_longread = {
    .type = {{EFARM_PKT_LONGREAD_MSGRTM, EFARM_PKT_LONGREAD_TAGRTM},
             {EFARM_PKT_LONGREAD_MSGRTM, EFARM_PKT_LONGREAD_TAGRTM}},
    .rtw = {EFARM_PKT_LONGREAD_RTW, EFARM_PKT_LONGREAD_RTW},
    .counter = offsetof(struct efarm_counters, proto_longread),
    .reads = true,
    .fallback = EFARM_PROTO_LONGCTS,
    .build = build_longread,
    .rx_start = rx_start_read,
    /* From read min, when both sides read and a read slot is free. */
    .select = {.min_len = EFARM_SEL_READ_MIN,
               .need = EFARM_SEL_NEED_READ | EFARM_SEL_READ_SLOT,
               .fit = EFARM_FIT_BEYOND_PKT,
               .need_forced = EFARM_SEL_NEED_READ | EFARM_SEL_READ_SLOT},
    /* read_min (and for a buffer to register, paying it): where it beats medium and long-CTS. */
    .profile = {.curve = true,
                .race = EFARM_RACE_FROM,
                .rivals = 1u << EFARM_PROTO_MEDIUM | 1u << EFARM_PROTO_LONGCTS,
                .thr = {{EFARM_THR(read_min), EFARM_THR(read_min_cold)},
                        {EFARM_THR(read_min_stream), EFARM_THR(read_min_stream_cold)}}},
};

const struct efarm_msg_proto efarm_msg_proto_runtread = {
    .type = {{EFARM_PKT_RUNTREAD_MSGRTM, EFARM_PKT_RUNTREAD_TAGRTM},
             {EFARM_PKT_RUNTREAD_MSGRTM, EFARM_PKT_RUNTREAD_TAGRTM}},
    /* A peer's runting-read write runs on it at the target (efarm sends none). */
    .rtw = {EFARM_PKT_RUNTREAD_RTW, EFARM_PKT_RUNTREAD_RTW},
    .counter = offsetof(struct efarm_counters, proto_runtread),
    .segmented = true,
    .reads = true,
    .runt = true,
    .fallback = EFARM_PROTO_LONGCTS,
    .build = build_runtread,
    .rx_start = rx_start_read,
    /*
     * From runt min, when no read is in flight on the endpoint (it pays off
     * with few messages in flight, section 4.5) and the peer's runt budget
     * has room; never for DC.
     */
    .select = {.min_len = EFARM_SEL_RUNT_MIN,
               .need = EFARM_SEL_RUNT_NEED,
               .fit = EFARM_FIT_BEYOND_PKT,
               .need_forced = EFARM_SEL_NEED_READ | EFARM_SEL_NEED_RUNT | EFARM_SEL_NO_DC |
                              EFARM_SEL_RUNT_BUDGET},
    /*
     * runt_min: from where it beats long-read, medium and long-CTS at every
     * larger measured size; without its own curve, long-read's threshold. No
     * stream threshold: in a stream it carries only a window's first message.
     */
    .profile = {.curve = true,
                .race = EFARM_RACE_FROM,
                .rivals = 1u << EFARM_PROTO_LONGREAD | 1u << EFARM_PROTO_MEDIUM |
                          1u << EFARM_PROTO_LONGCTS,
                .needs = 1u << EFARM_PROTO_LONGREAD,
                .fallback_from = EFARM_PROTO_LONGREAD + 1,
                .thr = {{EFARM_THR(runt_min)}}},
};
