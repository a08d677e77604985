/*
 * Two-sided messages, sender side (sections 3.2, 4.1, 4.2, 4.5, 4.7).
 *
 * A send takes an operation, picks its subprotocol (proto_select.c), takes
 * the peer's next msg_id and builds what it can at once with its row's
 * builder; whatever finds no send buffer waits on the work list and is built
 * from progress. What each subprotocol sends is in its file (msg_eager.c,
 * msg_longcts.c, msg_read.c); this file holds what they share: the REQ's
 * common fields, the send buffer, completion, and the replies a send waits
 * for (CTS, EOR, RECEIPT, READ_NACK).
 * DC sends use the DC REQ types and complete at RECEIPT (or EOR). A READ_NACK
 * turns a read send into long-CTS: a data-less LONGCTS REQ with the READ_NACK
 * flag and the same msg_id, then CTS rounds for what the receiver still lacks.
 *
 * A DC send needs the peer's HANDSHAKE (delivery complete is an extra
 * feature); it waits for it, and so does every later send to that peer, so
 * msg_ids keep the order the application sent in.
 */
#include <errno.h>

#include "efarm_byteorder.h"
#include "efarm_rma.h"
#include "msg_internal.h"
#include "proto_messages.h"
#include "proto_onesided.h"
#include "proto_ops.h"
#include "proto_peers.h"
#include "proto_select.h"
#include "proto_transmit.h"

static uint8_t req_type(enum efarm_proto_kind proto, bool tagged, bool dc)
{
    return g_efarm_msg_protos[proto]->type[dc][tagged];
}

/* The REQ type of op when it runs `proto`: a message's, or a one-sided write's. */
static uint8_t op_req_type(const struct efarm_op *op, enum efarm_proto_kind proto)
{
    bool dc = op->flags & EFARM_OPF_DC;

    if (efarm_op_role_ops(op)->rma)
        return g_efarm_msg_protos[proto]->rtw[dc];
    return req_type(proto, op->flags & EFARM_OPF_TAGGED, dc);
}

/*
 * The sender takes `proto` (at its start, or the fallback after a READ_NACK):
 * its REQ type, the REQ still to build, and the reply the send then waits
 * for: the EOR of a read, the RECEIPT of any other DC send.
 */
void efarm_tx_proto_set(struct efarm_op *op, enum efarm_proto_kind proto)
{
    efarm_msg_proto_set(op, proto);
    op->req_type = op_req_type(op, proto);
    op->owed |= EFARM_OWE_REQ;
    if (g_efarm_msg_protos[proto]->reads)
        op->awaits |= EFARM_AWAIT_EOR;
    else if (op->flags & EFARM_OPF_DC)
        op->awaits |= EFARM_AWAIT_RCPT;
}

uint64_t efarm_req_hdr_len(const struct efarm_peer_state *st, uint8_t type, bool cq_data)
{
    uint64_t n = efarm_pkt_type_info(type)->hdr_size;

    if (efarm_peer_needs_raw_addr(st))
        n += sizeof(struct efarm_wire_req_opt_raw_addr);
    else if (efarm_peer_wants_connid(st))
        n += EFARM_REQ_OPT_CONNID_LEN;
    if (cq_data)
        n += EFARM_REQ_OPT_CQ_DATA_LEN;
    return n;
}

/* The op's REQ header bytes; a one-sided write's include its rma_iov. */
uint64_t efarm_op_req_hdr_len(const struct efarm_peer_state *st, const struct efarm_op *op)
{
    uint64_t n = efarm_req_hdr_len(st, op->req_type, op->flags & EFARM_OPF_CQ_DATA);

    if (efarm_op_role_ops(op)->rma)
        n += (uint64_t)op->niov * sizeof(struct efarm_wire_rma_iov);
    return n;
}

/*
 * The fields and optional headers every RTM of this op carries; for a
 * one-sided write those of its RTW, whose rma_iov is encoded into `wire`.
 */
void efarm_req_init(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_op *op,
                    struct efarm_pkt *pkt, uint8_t type, uint8_t *wire)
{
    if (efarm_op_role_ops(op)->rma) {
        efarm_rma_req_init(ep, st, pkt, type, op->iov, op->niov, wire);
        if (op->flags & EFARM_OPF_CQ_DATA)
            efarm_req_set_cq_data(pkt, op->msg.cq_data);
        return;
    }
    efarm_pkt_init(pkt, type);
    pkt->flags = EFARM_REQ_MSG | (op->flags & EFARM_OPF_TAGGED ? EFARM_REQ_TAGGED : 0);
    if (efarm_peer_needs_raw_addr(st))
        efarm_pkt_set_raw_addr(ep, pkt);
    if (op->flags & EFARM_OPF_CQ_DATA) {
        pkt->flags |= EFARM_REQ_OPT_CQ_DATA_HDR;
        efarm_pkt_set(pkt, EFARM_PKT_F_CQ_DATA, op->msg.cq_data);
    }
    efarm_pkt_set_connid(ep, st, pkt);
    efarm_pkt_set(pkt, EFARM_PKT_F_MSG_ID, op->msg_id);
    if (op->flags & EFARM_OPF_TAGGED)
        efarm_pkt_set(pkt, EFARM_PKT_F_TAG, op->msg.wire_tag);
}

/*
 * Encode pkt into a fresh send buffer, append `n` bytes of `data` (after
 * `pre_len` bytes of `pre`, the read_iov), and send it for op. Returns 0,
 * -EAGAIN (no send buffer), or an encoding error.
 */
int efarm_op_pkt_send(struct efarm_ep *ep, struct efarm_op *op, const struct efarm_pkt *pkt,
                      const void *pre, uint32_t pre_len, const void *data, uint64_t n)
{
    struct efarm_txpkt *tx = efarm_txpkt_alloc(ep, false);
    size_t hdr_len;
    int ret;

    if (tx == NULL)
        return -EAGAIN;
    ret = efarm_txpkt_encode(ep, tx, pkt, &hdr_len);
    if (ret == 0 && hdr_len + pre_len + n > ep->mtu)
        ret = -EMSGSIZE;
    if (ret) {
        efarm_txpkt_release(ep, tx);
        return ret;
    }
    if (pre_len)
        memcpy(tx->buf + hdr_len, pre, pre_len);
    if (n)
        memcpy(tx->buf + hdr_len + pre_len, data, n);
    tx->len = (uint32_t)(hdr_len + pre_len + n);
    tx->peer = op->peer;
    tx->op = op;
    tx->data_len = n;
    op->pkts_inflight++;
    efarm_txpkt_send(ep, tx);
    return 0;
}

/* The rows by kind, generated from EFARM_PROTO_LIST (each row is in its subprotocol's file). */
const struct efarm_msg_proto *const g_efarm_msg_protos[EFARM_PROTO_COUNT] = {
#define EFARM_MSG_PROTO_ROW_(id, name, rank) [EFARM_PROTO_##id] = &efarm_msg_proto_##name,
    EFARM_PROTO_LIST(EFARM_MSG_PROTO_ROW_)
#undef EFARM_MSG_PROTO_ROW_
};

/* EFARM_PROTO_LIST's rank column, by kind. */
static const uint8_t g_rank[EFARM_PROTO_COUNT] = {
#define EFARM_MSG_PROTO_RANK_(id, name, rank) [EFARM_PROTO_##id] = rank,
    EFARM_PROTO_LIST(EFARM_MSG_PROTO_RANK_)
#undef EFARM_MSG_PROTO_RANK_
};

/* The kinds by rank, sorted once as the library loads (test_pkt_rows checks the ranks). */
uint8_t g_efarm_msg_proto_order[EFARM_PROTO_COUNT];

__attribute__((constructor)) static void msg_proto_order_init(void)
{
    for (unsigned k = 0; k < EFARM_PROTO_COUNT; k++) {
        unsigned i = k;

        while (i > 0 && g_rank[g_efarm_msg_proto_order[i - 1]] > g_rank[k]) {
            g_efarm_msg_proto_order[i] = g_efarm_msg_proto_order[i - 1];
            i--;
        }
        g_efarm_msg_proto_order[i] = (uint8_t)k;
    }
}

uint8_t efarm_msg_proto_rank(enum efarm_proto_kind kind)
{
    return g_rank[kind];
}

/* Give back the peer's runting-read budget (once). */
static void runt_release(struct efarm_ep *ep, struct efarm_op *op)
{
    struct efarm_peer_state *st = ep->peers[op->peer].st;

    st->runt_bytes_in_flight -= op->msg.runt_length;
    op->msg.runt_length = 0;
}

/* Complete the send when everything is sent and acknowledged, then free the op. */
static void tx_op_check(struct efarm_ep *ep, struct efarm_op *op)
{
    /* Its REQ still to build, or a reply still to come. */
    const bool waits =
        (op->owed & EFARM_OWE_REQ) || (op->awaits & (EFARM_AWAIT_EOR | EFARM_AWAIT_RCPT));
    const struct efarm_msg_proto *mp = efarm_msg_proto(op);
    bool sent;

    /* Inject: the data is in packets, so the caller's buffer is free. */
    if ((op->flags & EFARM_OPF_INJECT) && op->state != EFARM_OPS_COMPLETED && op->status == 0 &&
        !waits && op->offset >= op->len) {
        efarm_req_complete(ep, op, op->req, 0);
        op->req = NULL;
    }
    if (op->pkts_inflight != 0)
        return;
    /* A read subprotocol sends its runt (if any); the receiver reads the rest. */
    sent = op->offset >= (mp->reads ? op->msg.runt_length : op->len);
    /* An error ends the send at once: nothing it still waits for can make it succeed. */
    if (op->status == 0 && (!sent || waits))
        return;
    if (mp->runt)
        runt_release(ep, op);
    if (efarm_op_role_ops(op)->target || op->state == EFARM_OPS_COMPLETED) {
        /* No request to tell: a read we serve, or an injected send (its loss failed the
           peer and the endpoint). */
        if (op->status)
            ep->cnt.send_errors++;
    } else {
        if (efarm_op_role_ops(op)->rma)
            op->req->length = op->status ? 0 : op->len;
        efarm_req_complete(ep, op, op->req, op->status);
    }
    efarm_op_release(ep, op);
}

void efarm_tx_op_work(struct efarm_ep *ep, struct efarm_op *op)
{
    struct efarm_peer_state *st = ep->peers[op->peer].st;
    bool first = op->owed & EFARM_OWE_REQ;
    int ret;

    if (st->flags & EFARM_PS_IN_BACKOFF) {
        efarm_op_work(ep, op); /* build nothing for a peer that is backing off */
        return;
    }
    ret = efarm_msg_proto(op)->build(ep, st, op);
    /* The REQ is out once its first packet is: the rest (partial sends) follow from progress. */
    if (first && (ret == 0 || op->offset > 0 || op->pkts_inflight > 0))
        op->owed &= ~EFARM_OWE_REQ;
    if (ret == -EAGAIN) {
        efarm_op_work(ep, op);
        return;
    }
    if (ret) {
        efarm_log(EFARM_LOG_ERROR, "cannot build %s: %s", efarm_pkt_type_info(op->req_type)->name,
                  efarm_strerror(ret));
        op->status = ret;
        op->owed &= ~EFARM_OWE_REQ;
    }
    tx_op_check(ep, op);
}

/*
 * The peer failed: a send still waiting (to be built, for a CTS, EOR or
 * RECEIPT) completes with the peer's error once its packets are back. An
 * injected send that already completed is left to its packets: if one of
 * them fails, the endpoint fails.
 */
void efarm_tx_op_peer_failed(struct efarm_ep *ep, struct efarm_op *op, int status)
{
    if ((op->flags & EFARM_OPF_INJECT) && op->state == EFARM_OPS_COMPLETED)
        return;
    if (op->flags & EFARM_OPF_IN_WORK) {
        efarm_list_remove(&op->link);
        op->flags &= ~EFARM_OPF_IN_WORK;
    }
    if (op->status == 0)
        op->status = status;
    op->owed &= ~EFARM_OWE_REQ;
    op->awaits &= ~(EFARM_AWAIT_EOR | EFARM_AWAIT_RCPT);
    tx_op_check(ep, op);
}

void efarm_tx_op_pkt_done(struct efarm_ep *ep, struct efarm_op *op, struct efarm_txpkt *tx,
                          int status)
{
    op->pkts_inflight--;
    op->done_bytes += tx->data_len;
    if (status && op->status == 0)
        op->status = status;
    if ((op->flags & EFARM_OPF_IN_WORK) && op->status) {
        efarm_list_remove(&op->link); /* a failed send builds nothing more */
        op->flags &= ~EFARM_OPF_IN_WORK;
    }
    tx_op_check(ep, op);
}

/* ---- Starting a send -------------------------------------------------------------------- */

/* Medium's fan-in for a send: the caller's statement, or at least the peers talked to. */
static uint32_t send_fanin(const struct efarm_ep *ep, uint32_t hints)
{
    uint32_t n = hints >> EFARM_SEND_FANIN_SHIFT;

    if (hints & EFARM_SEND_FANIN_SET)
        return n;
    return n > ep->npeer_states ? n : ep->npeer_states;
}

void efarm_send_begin(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_op *op)
{
    bool tagged = op->flags & EFARM_OPF_TAGGED, dc = op->flags & EFARM_OPF_DC;
    struct efarm_select_in in = {
        .len = op->len,
        .eager_fit = 0,
        .flags = dc ? EFARM_SEND_DC : 0,
        .peer_rdma_read = (ep->extra_info & EFARM_EXTRA_FEATURE_RDMA_READ) &&
                          efarm_peer_has(st, EFARM_EXTRA_FEATURE_RDMA_READ),
        .peer_runt_read = (ep->extra_info & EFARM_EXTRA_FEATURE_RUNT_READ) &&
                          efarm_peer_has(st, EFARM_EXTRA_FEATURE_RUNT_READ),
        .npeers = send_fanin(ep, op->msg.send_hints),
        .force_proto =
            (uint8_t)((op->msg.send_hints & EFARM_SEND_PROTO_MASK) >> EFARM_SEND_PROTO_SHIFT),
        .peer_sends = st->sends_inflight,
        .reads_inflight = ep->reads_inflight,
        .runt_bytes_in_flight = st->runt_bytes_in_flight,
    };
    uint8_t eager_type = req_type(EFARM_PROTO_EAGER, tagged, dc);

    /* Registered already? Only asked where the answer changes the choice. */
    uint64_t warm = in.peer_sends ? ep->p.read_min_stream : ep->p.read_min,
             cold = in.peer_sends ? ep->p.read_min_stream_cold : ep->p.read_min_cold;
    if (in.peer_rdma_read && warm != cold && op->len >= (warm < cold ? warm : cold))
        in.buf_cold =
            (op->flags & EFARM_OPF_TEMP_BUF) ||
            !efarm_mr_cache_covers(ep->mr_cache, op->buf, op->len, EFARM_DEV_ACCESS_REMOTE_READ);
    enum efarm_proto_kind proto;

    if (dc && !efarm_peer_has(st, EFARM_EXTRA_FEATURE_DELIVERY_COMPLETE)) {
        efarm_log(EFARM_LOG_WARN, "peer %u cannot do delivery complete: DC send refused", op->peer);
        efarm_req_complete(ep, op, op->req, EFARM_E(PROTO_NO_DC));
        efarm_op_release(ep, op);
        return;
    }
    in.eager_fit = ep->mtu - efarm_req_hdr_len(st, eager_type, op->flags & EFARM_OPF_CQ_DATA);
    proto = efarm_proto_select(&ep->p, &in);
    if (in.force_proto ? proto == (enum efarm_proto_kind)(in.force_proto - 1)
                       : ep->p.force >= 0 && proto == (enum efarm_proto_kind)ep->p.force)
        ep->cnt.proto_forced++;
    if (g_efarm_msg_protos[proto]->reads) {
        int ret = efarm_mr_cache_get(ep->mr_cache, op->buf, op->len, EFARM_DEV_ACCESS_REMOTE_READ,
                                     &op->mr);

        if (ret) {
            /* Registration is a limited resource: the fallback (long-CTS) needs none. */
            efarm_dev_reg_refused(ep->dev, op->len, ret, "a send the receiver would RDMA-read",
                                  "Such sends go by long-CTS, through efarm's packet buffers");
            ep->cnt.reg_fallbacks++;
            op->mr.entry = NULL;
            proto = g_efarm_msg_protos[proto]->fallback;
        }
    }
    if (g_efarm_msg_protos[proto]->runt) {
        uint64_t runt = ep->p.runt_size - st->runt_bytes_in_flight;

        op->msg.runt_length = runt < op->len ? runt : op->len;
        st->runt_bytes_in_flight += op->msg.runt_length;
    }
    op->req->proto = (uint8_t)proto;
    st->sends_inflight++;
    op->flags |= EFARM_OPF_COUNTED;
    op->msg_id = st->tx_msg_id++;
    efarm_tx_proto_set(op, proto);
    (*(uint64_t *)((char *)&ep->cnt + g_efarm_msg_protos[proto]->counter))++;
    if (dc)
        ep->cnt.proto_dc++;
    efarm_tx_op_work(ep, op);
}

/*
 * The eager fast path: an injected tagged send that fits one packet, to a peer
 * with nothing queued before it, when nothing forces a subprotocol. It takes
 * no operation: the header comes from the endpoint's template for the peer's
 * optional headers (built by the codec, msg_id and tag patched in at the
 * offsets the codec's field table gives), the request completes at once, and
 * the packet's completion only returns its buffer (txpkt_done; a loss fails
 * the peer and the endpoint, as for any injected send). What it sends is what
 * efarm_send_begin() would: the policy always picks eager for a message that
 * fits one packet and EFARM_EAGER_MAX unless forced (proto_select.c's first
 * rule, whose bound is efarm_select_eager_max()).
 * Returns 0 when sent, 1 when the send must take the general path. Without a
 * request (efarm_tsend_now) a send that failed at its post returns the
 * peer's device error instead of completing a request with it.
 */
static int eager_tmpl_build(struct efarm_ep *ep, struct efarm_peer_state *st,
                            struct efarm_eager_tmpl *t)
{
    const uint8_t type = req_type(EFARM_PROTO_EAGER, true, false);
    unsigned w_id = 0, w_tag = 0;
    int off_id = efarm_pkt_field_offset(type, EFARM_PKT_F_MSG_ID, &w_id),
        off_tag = efarm_pkt_field_offset(type, EFARM_PKT_F_TAG, &w_tag);
    struct efarm_pkt pkt;
    size_t len;

    if (off_id < 0 || off_tag < 0 || w_id != 4 || w_tag != 8)
        return -1;
    efarm_pkt_init(&pkt, type);
    pkt.flags = EFARM_REQ_MSG | EFARM_REQ_TAGGED;
    if (efarm_peer_needs_raw_addr(st))
        efarm_pkt_set_raw_addr(ep, &pkt);
    efarm_pkt_set_connid(ep, st, &pkt);
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_ID, 0);
    efarm_pkt_set(&pkt, EFARM_PKT_F_TAG, 0);
    if (efarm_pkt_encode(&pkt, t->hdr, sizeof(t->hdr), &len) != 0 || len > ep->mtu)
        return -1;
    t->off_msg_id = (uint16_t)off_id;
    t->off_tag = (uint16_t)off_tag;
    t->len = (uint16_t)len;
    return 0;
}

static inline __attribute__((always_inline)) int
tsend_eager_fast(struct efarm_ep *ep, efarm_peer_t peer, const void *buf, uint64_t len,
                 uint64_t wire_tag, uint32_t flags, struct efarm_req *req)
{
    struct efarm_peer_state *st = ep->peers[peer].st;
    struct efarm_eager_tmpl *t;
    struct efarm_txpkt *tx;
    int status;

    if ((flags & ~EFARM_SEND_HINTS) != EFARM_SEND_INJECT || (flags & EFARM_SEND_PROTO_MASK) ||
        ep->p.force >= 0)
        return 1;
    if (st == NULL && (st = efarm_peer_state_get(ep, peer)) == NULL)
        return 1; /* first contact: the general path reports -ENOMEM */
    if ((st->flags & (EFARM_PS_FAILED | EFARM_PS_IN_BACKOFF)) || !efarm_list_empty(&st->hs_waiters))
        return 1;
    t = &ep->eager_tmpl[efarm_peer_needs_raw_addr(st) | efarm_peer_wants_connid(st) << 1];
    if (t->len == 0 && eager_tmpl_build(ep, st, t) != 0)
        return 1;
    if (len > efarm_select_eager_max(&ep->p, ep->mtu - t->len) ||
        (tx = efarm_txpkt_alloc(ep, false)) == NULL)
        return 1;
    /* The usual header (no raw address) in fixed moves: the template and the buffer hold 32 */
    if (t->len <= EFARM_EAGER_TMPL_SHORT)
        memcpy(tx->buf, t->hdr, EFARM_EAGER_TMPL_SHORT);
    else
        memcpy(tx->buf, t->hdr, t->len);
    efarm_store_le32(tx->buf + t->off_msg_id, st->tx_msg_id++);
    efarm_store_le64(tx->buf + t->off_tag, wire_tag);
    if (len)
        memcpy(tx->buf + t->len, buf, len);
    tx->len = (uint32_t)(t->len + len);
    tx->type = efarm_msg_proto_eager.type[0][1]; /* its row itself: one load, as a table's */
    tx->peer = peer;
    tx->data_len = len;
    tx->injected = 1;
    st->sends_inflight++;
    (*(uint64_t *)((char *)&ep->cnt + efarm_msg_proto_eager.counter))++;
    ep->cnt.eager_fast++;
    efarm_txpkt_send(ep, tx); /* inline */
    /* Done once posted; a post that failed at once failed the peer (and was counted). */
    status = efarm_peer_failed(st) ? st->fail_status : 0;
    if (req == NULL)
        return status;
    req->proto = EFARM_PROTO_EAGER;
    req->length = len;
    req->peer = peer;
    req->status = status;
    req->done = true;
    if (req->cb)
        req->cb(req);
    return 0;
}

static int send_start(struct efarm_ep *ep, efarm_peer_t peer, const void *buf, uint64_t len,
                      bool tagged, uint64_t wire_tag, uint32_t flags, uint64_t cq_data,
                      struct efarm_req *req)
{
    struct efarm_peer_state *st;
    struct efarm_op *op;

    if (req == NULL || peer >= ep->npeers || (len && buf == NULL) ||
        (flags & ~(EFARM_SEND_DC | EFARM_SEND_CQ_DATA | EFARM_SEND_INJECT | EFARM_SEND_TEMP_BUF |
                   EFARM_SEND_HINTS)) ||
        (flags & EFARM_SEND_PROTO_MASK) > EFARM_SEND_PROTO(EFARM_PROTO_COUNT - 1))
        return -EINVAL;
    st = efarm_peer_state_get(ep, peer);
    if (st == NULL)
        return -ENOMEM;
    if (efarm_peer_failed(st)) {
        /* Nothing more goes to a failed peer: the send ends with its error. */
        req->length = len;
        req->peer = peer;
        req->status = st->fail_status;
        req->done = true;
        ep->cnt.send_errors++;
        if (req->cb)
            req->cb(req);
        return 0;
    }
    op = efarm_op_alloc(ep, EFARM_OP_TX);
    if (op == NULL)
        return -EAGAIN;
    req->done = false;
    req->status = 0;
    req->length = len;
    req->peer = peer;
    op->req = req;
    efarm_op_set_peer(ep, op, peer);
    op->buf = (uint8_t *)(uintptr_t)buf;
    op->len = len;
    op->msg.wire_tag = wire_tag;
    op->msg.cq_data = cq_data;
    op->flags =
        (tagged ? EFARM_OPF_TAGGED : 0) | (flags & EFARM_SEND_DC ? EFARM_OPF_DC : 0) |
        (flags & EFARM_SEND_CQ_DATA ? EFARM_OPF_CQ_DATA : 0) |
        ((flags & (EFARM_SEND_INJECT | EFARM_SEND_DC)) == EFARM_SEND_INJECT ? EFARM_OPF_INJECT
                                                                            : 0) |
        (flags & EFARM_SEND_TEMP_BUF ? EFARM_OPF_TEMP_BUF : 0);
    op->msg.send_hints = flags & EFARM_SEND_HINTS;
    /* Behind a send that waits for the HANDSHAKE, or itself waiting for it (DC). */
    if (!efarm_list_empty(&st->hs_waiters) ||
        ((flags & EFARM_SEND_DC) && !(st->flags & EFARM_PS_HS_RECEIVED))) {
        op->awaits |= EFARM_AWAIT_HS;
        efarm_list_append(&st->hs_waiters, &op->link);
        efarm_handshake_trigger_later(ep, st);
        return 0;
    }
    efarm_send_begin(ep, st, op);
    return 0;
}

int efarm_send(struct efarm_ep *ep, efarm_peer_t peer, const void *buf, uint64_t len,
               uint32_t flags, uint64_t cq_data, struct efarm_req *req)
{
    return send_start(ep, peer, buf, len, false, 0, flags, cq_data, req);
}

int efarm_tsend_now(struct efarm_ep *ep, efarm_peer_t peer, const void *buf, uint64_t len,
                    uint32_t context, int32_t source, int32_t tag, uint32_t flags)
{
    if (context > EFARM_CONTEXT_MAX || source < 0 || source > EFARM_SOURCE_MAX || tag < 0 ||
        tag > EFARM_TAG_MAX || peer >= ep->npeers || (len && buf == NULL))
        return -EINVAL;
    return tsend_eager_fast(ep, peer, buf, len, efarm_tag_pack(context, source, tag), flags, NULL);
}

int efarm_tsend(struct efarm_ep *ep, efarm_peer_t peer, const void *buf, uint64_t len,
                uint32_t context, int32_t source, int32_t tag, uint32_t flags, uint64_t cq_data,
                struct efarm_req *req)
{
    if (context > EFARM_CONTEXT_MAX || source < 0 || source > EFARM_SOURCE_MAX || tag < 0 ||
        tag > EFARM_TAG_MAX)
        return -EINVAL;
    if (req != NULL && peer < ep->npeers && (len == 0 || buf != NULL) &&
        tsend_eager_fast(ep, peer, buf, len, efarm_tag_pack(context, source, tag), flags, req) == 0)
        return 0;
    return send_start(ep, peer, buf, len, true, efarm_tag_pack(context, source, tag), flags,
                      cq_data, req);
}

void efarm_hs_waiters_release(struct efarm_ep *ep, struct efarm_peer_state *st)
{
    struct efarm_link *link;

    while ((link = efarm_list_first(&st->hs_waiters)) != NULL) {
        struct efarm_op *op = efarm_container_of(link, struct efarm_op, link);

        efarm_list_remove(link);
        op->awaits &= ~EFARM_AWAIT_HS;
        efarm_op_role_ops(op)->begin(ep, st, op);
    }
}

/* The trigger could not reach the peer: nothing waiting for its HANDSHAKE can go. */
void efarm_hs_waiters_fail(struct efarm_ep *ep, struct efarm_peer_state *st, int status)
{
    struct efarm_link *link;

    while ((link = efarm_list_first(&st->hs_waiters)) != NULL) {
        struct efarm_op *op = efarm_container_of(link, struct efarm_op, link);

        efarm_list_remove(link);
        efarm_req_complete(ep, op, op->req, status);
        efarm_op_release(ep, op);
    }
}

/* ---- Replies from the receiver ---------------------------------------------------------- */

static struct efarm_op *tx_op_for(struct efarm_ep *ep, efarm_peer_t peer,
                                  const struct efarm_pkt *pkt)
{
    struct efarm_op *op =
        efarm_op_find(ep, (uint32_t)pkt->value[EFARM_PKT_F_SEND_ID], EFARM_OP_TX, peer);

    if (op == NULL || (op->owed & EFARM_OWE_REQ) || (op->awaits & EFARM_AWAIT_HS)) {
        ep->cnt.stale_ids++;
        return NULL;
    }
    return op;
}

void efarm_cts_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt)
{
    struct efarm_op *op = tx_op_for(ep, peer, pkt);
    uint64_t grant = pkt->value[EFARM_PKT_F_RECV_LENGTH];

    if (op == NULL)
        return;
    if (!efarm_msg_proto(op)->cts || op->offset < op->window_end) {
        ep->cnt.stale_ids++; /* no CTS rounds, or a grant while the last one is unfinished */
        return;
    }
    op->peer_op_id = (uint32_t)pkt->value[EFARM_PKT_F_RECV_ID];
    op->window_end = grant < op->len - op->offset ? op->offset + grant : op->len;
    efarm_tx_op_work(ep, op);
}

void efarm_eor_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt)
{
    struct efarm_op *op = tx_op_for(ep, peer, pkt);

    if (op == NULL)
        return;
    if (!(op->awaits & EFARM_AWAIT_EOR)) {
        ep->cnt.stale_ids++;
        return;
    }
    op->awaits &= ~EFARM_AWAIT_EOR;
    /* An efarm target that refused a long write (or failed to read it) says so here. */
    if (efarm_op_role_ops(op)->rma && (pkt->flags & EFARM_RSP_FLAG_REFUSED) && op->status == 0)
        op->status = EFARM_E(PROTO_RMA_REFUSED);
    if (op->mr.entry != NULL)
        efarm_mr_cache_put(ep->mr_cache, &op->mr);
    tx_op_check(ep, op);
}

/* A RECEIPT names a send or a one-sided operation: its role takes it. */
void efarm_receipt_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt)
{
    struct efarm_op *op = efarm_op_find_live(ep, (uint32_t)pkt->value[EFARM_PKT_F_SEND_ID], peer);

    if (op == NULL || efarm_op_role_ops(op)->receipt == NULL || (op->owed & EFARM_OWE_REQ) ||
        (op->awaits & EFARM_AWAIT_HS)) {
        ep->cnt.stale_ids++;
        return;
    }
    efarm_op_role_ops(op)->receipt(ep, op, pkt);
}

void efarm_tx_receipt(struct efarm_ep *ep, struct efarm_op *op, const struct efarm_pkt *pkt)
{
    bool rma = efarm_op_role_ops(op)->rma;

    /* An RTW has no msg_id: what its RECEIPT says there is not checked. */
    if (!(op->awaits & EFARM_AWAIT_RCPT) ||
        (!rma && (uint32_t)pkt->value[EFARM_PKT_F_MSG_ID] != op->msg_id)) {
        ep->cnt.stale_ids++;
        return;
    }
    op->awaits &= ~EFARM_AWAIT_RCPT;
    if (rma && (pkt->flags & EFARM_RSP_FLAG_REFUSED) && op->status == 0)
        op->status = EFARM_E(PROTO_RMA_REFUSED);
    tx_op_check(ep, op);
}

void efarm_read_nack_recv(struct efarm_ep *ep, efarm_peer_t peer, const struct efarm_pkt *pkt)
{
    struct efarm_op *op = tx_op_for(ep, peer, pkt);

    if (op == NULL)
        return;
    /* Only a read send still running can fall back: a late or repeated READ_NACK is stale. */
    if (op->state != EFARM_OPS_RUNNING || !(op->awaits & EFARM_AWAIT_EOR) ||
        op->offset < op->msg.runt_length) {
        ep->cnt.stale_ids++;
        return;
    }
    ep->cnt.read_nacks_recv++;
    op->awaits &= ~EFARM_AWAIT_EOR;
    if (op->mr.entry != NULL)
        efarm_mr_cache_put(ep->mr_cache, &op->mr);
    /* What was sent stays sent: the runt (whose budget returns), or nothing. */
    if (efarm_msg_proto(op)->runt)
        runt_release(ep, op);
    /* Same msg_id; the receiver finds its operation by it and answers with CTS. */
    efarm_op_set_state(op, EFARM_OPS_NACKED);
    efarm_tx_proto_set(op, efarm_msg_proto(op)->fallback);
    efarm_tx_op_work(ep, op);
}

/* ---- Peers' long emulated reads ---------------------------------------------------------- */
