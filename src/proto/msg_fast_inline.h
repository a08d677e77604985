/*
 * The eager fast path's receiving half, inline in the progress loop
 * (proto_ep.c), and the message helpers msg_recv.c shares with it.
 *
 * The fast path is efarm_rx_eager_fast (contract in proto_messages.h, its
 * format: efarm_rx_fast_init in proto_rx.c). It lives here rather than in
 * msg_recv.c so that efarm_ep_progress runs it without a call: on the
 * small-message path one call's register saves cost as much as the peer
 * lookup (bench/README.md, issue 14's rounds).
 */
#ifndef EFARM_MSG_FAST_INLINE_H
#define EFARM_MSG_FAST_INLINE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "efarm_byteorder.h"
#include "efarm_device_inline.h"
#include "efarm_tm_inline.h"
#include "proto_internal.h"
#include "proto_peers.h"
#include "proto_receive.h"

/* The matcher key of a message: the wire tag's fields, or (untagged) the sending peer. */
static inline void msg_key(uint64_t wire_tag, bool tagged, efarm_peer_t peer, uint32_t *context,
                           int32_t *source, int32_t *tag)
{
    if (!tagged) {
        *context = EFARM_CTX_MSG;
        *source = (int32_t)peer;
        *tag = 0;
        return;
    }
    *context = (uint32_t)(wire_tag >> (EFARM_TAG_SOURCE_BITS + EFARM_TAG_TAG_BITS));
    *source = (int32_t)((wire_tag >> EFARM_TAG_TAG_BITS) & EFARM_SOURCE_MAX);
    *tag = (int32_t)(wire_tag & EFARM_TAG_MAX);
}

/* Fill a request's message fields from what the packet or the op says. */
static inline void req_fill(struct efarm_req *req, efarm_peer_t peer, uint64_t wire_tag,
                            bool tagged, uint64_t msg_length, bool has_cq_data, uint64_t cq_data)
{
    msg_key(wire_tag, tagged, peer, &req->context, &req->source, &req->tag);
    req->peer = peer;
    req->msg_length = msg_length;
    req->length = msg_length < req->buf_len ? msg_length : req->buf_len;
    req->has_cq_data = has_cq_data;
    req->cq_data = cq_data;
}

/* Copy [offset, offset + n) of the message into the buffer, clipped to it. */
static inline void copy_clip(uint8_t *buf, uint64_t buf_len, uint64_t offset, const uint8_t *src,
                             uint64_t n)
{
    if (offset >= buf_len || n == 0)
        return;
    if (n > buf_len - offset)
        n = buf_len - offset;
    memcpy(buf + offset, src, n);
}

static inline __attribute__((always_inline)) bool
rtm_eager_fast(struct efarm_ep *ep, efarm_peer_t peer, uint64_t wire_tag, const uint8_t *payload,
               uint64_t len)
{
    struct efarm_req *req;
    uint32_t context;
    int32_t source, tag;
    void *user = NULL;
    int status = 0;

    msg_key(wire_tag, true, peer, &context, &source, &tag);
    if (efarm_tm_match_posted_inl(ep->tm, context, source, tag, &user) != EFARM_TM_MATCHED)
        return false;
    req = user;
    req_fill(req, peer, wire_tag, true, len, false, 0);
    copy_clip(req->buf, req->buf_len, 0, payload, len);
    if (len > req->buf_len) {
        status = -EMSGSIZE;
        ep->cnt.truncated++;
    }
    /* efarm_req_complete without an operation; -EMSGSIZE is not a receive error */
    req->status = status;
    req->done = true;
    if (req->cb)
        req->cb(req);
    return true;
}

/*
 * The receiving fast path (proto_internal.h; its format: efarm_rx_fast_init in
 * proto_rx.c), on the device's current completion, a successful receive into
 * buffer rx_id that the caller has taken.
 */
static inline __attribute__((always_inline)) bool
efarm_rx_eager_fast(struct efarm_ep *ep, struct efarm_dev_ep *dev, uint32_t rx_id)
{
    const struct efarm_rx_fast_fmt *f = &ep->rx_fast;
    const uint32_t not_now = EFARM_PS_FAILED | EFARM_PS_FAIL_PENDING | EFARM_PS_STALLED;
    const uint8_t *data = efarm_dev_rx_data(dev, rx_id);
    uint32_t len = efarm_dev_cur_len(dev), msg_id, word, hdr = f->hdr_size;
    struct efarm_peer_state *st;
    efarm_peer_t peer;
    uint16_t ahn;

    if (len < hdr || f->word == 0 || ep->observe)
        return false;
    word = efarm_load_le32(data);
    if (word == f->word_connid)
        hdr += EFARM_REQ_OPT_CONNID_LEN;
    else if (word != f->word)
        return false;
    if (len < hdr || (ahn = efarm_dev_cur_ahn(dev)) == EFARM_DEV_AHN_UNKNOWN)
        return false;
    peer = efarm_peer_by_ahn(ep, ahn, (uint16_t)efarm_dev_cur_src_qpn(dev));
    if (peer == EFARM_PEER_NONE || (st = ep->peers[peer].st) == NULL || (st->flags & not_now) ||
        !(st->flags & EFARM_PS_HS_SENT) ||
        (hdr != f->hdr_size && efarm_load_le32(data + f->hdr_size) != ep->peers[peer].connid))
        return false;
    msg_id = efarm_load_le32(data + f->off_msg_id);
    if (msg_id != st->rx_msg_id || (st->win != NULL && st->win[msg_id & (ep->p.recvwin - 1)]))
        return false;
    if (!rtm_eager_fast(ep, peer, efarm_load_le64(data + f->off_tag), data + hdr, len - hdr))
        return false; /* the general path counts it */
    ep->cnt.rx_pkts++;
    ep->cnt.rx_bytes += len;
    ep->cnt.rx_by_type[f->type]++;
    ep->cnt.eager_fast_rx++;
    /* window_advance's case with nothing waiting: only the message id moves */
    if (st->overflow_count == 0 &&
        (st->win == NULL || st->win[(msg_id + 1) & (ep->p.recvwin - 1)] == NULL))
        st->rx_msg_id = msg_id + 1;
    else
        efarm_rx_window_advance(ep, st);
    efarm_dev_rx_release_inl(dev, rx_id);
    return true;
}

#endif /* EFARM_MSG_FAST_INLINE_H */
