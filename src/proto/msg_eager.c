/*
 * The subprotocols whose data rides in the REQs (sections 3.2, 4.1, 4.2):
 *   eager   one REQ holds the whole message; the sender is done at its
 *           completion (DC: at the RECEIPT); the receiver copies it out of
 *           the packet, with no operation unless DC;
 *   medium  REQs of up to an MTU each at seg_offset, all sent at once (a full
 *           send queue leaves the rest for progress); the receiver places
 *           segments as they come, in any order.
 * Their rows: packet types, traits, builders, selection rules and profile
 * rules (msg_proto.h). Neither has a receiver start: the data is all in the
 * REQs, so the receive ends when the bytes are in.
 */
#include "msg_internal.h"
#include "proto_messages.h"
#include "proto_select.h"

static int build_eager(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_op *op)
{
    struct efarm_pkt pkt;
    int ret;

    efarm_req_init(ep, st, op, &pkt, op->req_type, NULL);
    if (op->flags & EFARM_OPF_DC)
        efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, op->id);
    ret = efarm_op_pkt_send(ep, op, &pkt, NULL, 0, op->buf, op->len);
    if (ret == 0)
        op->offset = op->len;
    return ret;
}

static int build_medium(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_op *op)
{
    uint64_t hdr = efarm_op_req_hdr_len(st, op);

    while (op->offset < op->len) {
        uint64_t n = efarm_tx_room(ep, hdr, op->len - op->offset);
        struct efarm_pkt pkt;
        int ret;

        efarm_req_init(ep, st, op, &pkt, op->req_type, NULL);
        efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, op->len);
        efarm_pkt_set(&pkt, EFARM_PKT_F_SEG_OFFSET, op->offset);
        if (op->flags & EFARM_OPF_DC)
            efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, op->id);
        ret = efarm_op_pkt_send(ep, op, &pkt, NULL, 0, op->buf + op->offset, n);
        if (ret)
            return ret;
        op->offset += n;
    }
    return 0;
}

const struct efarm_msg_proto efarm_msg_proto_eager = {
    .type = {{EFARM_PKT_EAGER_MSGRTM, EFARM_PKT_EAGER_TAGRTM},
             {EFARM_PKT_DC_EAGER_MSGRTM, EFARM_PKT_DC_EAGER_TAGRTM}},
    .counter = offsetof(struct efarm_counters, proto_eager),
    .whole = true,
    .build = build_eager,
    /* What one packet holds, whatever EFARM_EAGER_MAX says when forced. */
    .select = {.max_len = EFARM_SEL_EAGER_FIT, .fit = EFARM_FIT_ONE_PKT},
};

/*
 * The margin by which medium must beat long-CTS to be chosen: a medium
 * message lands whole in the receiver's buffers, posted or not, where
 * long-CTS lets the receiver pace it, so within a profile's noise the
 * receiver's memory decides.
 */
#define EFARM_MEDIUM_HANDICAP 0.05

const struct efarm_msg_proto efarm_msg_proto_medium = {
    .type = {{EFARM_PKT_MEDIUM_MSGRTM, EFARM_PKT_MEDIUM_TAGRTM},
             {EFARM_PKT_DC_MEDIUM_MSGRTM, EFARM_PKT_DC_MEDIUM_TAGRTM}},
    .counter = offsetof(struct efarm_counters, proto_medium),
    .segmented = true,
    .build = build_medium,
    /* Up to medium max, while len x fan-in fits the receiver's buffering; a byte at least. */
    .select = {.max_len = EFARM_SEL_MEDIUM_MAX, .need = EFARM_SEL_FANIN, .fit = EFARM_FIT_NONEMPTY},
    /* medium_max: where it stops beating long-CTS by EFARM_MEDIUM_HANDICAP. */
    .profile = {.curve = true,
                .race = EFARM_RACE_UNTIL,
                .rivals = 1u << EFARM_PROTO_LONGCTS,
                .handicap = EFARM_MEDIUM_HANDICAP,
                .thr = {{EFARM_THR(medium_max)}, {EFARM_THR(medium_max_stream)}}},
};
