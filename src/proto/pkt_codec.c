/*
 * Protocol v4 packet codec (see efarm_pkt.h).
 *
 * One table indexed by packet type gives each type's name, mandatory header
 * size, traits, fixed-field layout and handlers. Three decoders cover every
 * type: REQ packets (fixed fields, rma_iov[], REQ optional headers), other
 * packets (fixed fields, CTSDATA's optional connid) and HANDSHAKE. All
 * arithmetic on wire values is done in 64 bits after checking that the value
 * fits what remains of the packet, so nothing a peer sends can make us read
 * past `len`.
 */
#include "efarm_pkt.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "efarm_byteorder.h"
#include "efarm_errno.h"
#include "efarm_pkt_types.h"

/* A fixed field: its id, wire width taken from the layout struct, and offset. */
#define FIELD(id, s, m)                                                     \
    {                                                                       \
        EFARM_PKT_F_##id, sizeof(((struct s *)0)->m), offsetof(struct s, m) \
    }

static const struct efarm_pkt_field_desc g_cts_fields[] = {
    FIELD(CONNID, efarm_wire_cts_hdr, multiuse),
    FIELD(SEND_ID, efarm_wire_cts_hdr, send_id),
    FIELD(RECV_ID, efarm_wire_cts_hdr, recv_id),
    FIELD(RECV_LENGTH, efarm_wire_cts_hdr, recv_length),
};
static const struct efarm_pkt_field_desc g_ctsdata_fields[] = {
    FIELD(RECV_ID, efarm_wire_ctsdata_hdr, recv_id),
    FIELD(SEG_LENGTH, efarm_wire_ctsdata_hdr, seg_length),
    FIELD(SEG_OFFSET, efarm_wire_ctsdata_hdr, seg_offset),
};
static const struct efarm_pkt_field_desc g_readrsp_fields[] = {
    FIELD(CONNID, efarm_wire_readrsp_hdr, multiuse),
    FIELD(RECV_ID, efarm_wire_readrsp_hdr, recv_id),
    FIELD(SEND_ID, efarm_wire_readrsp_hdr, send_id),
    FIELD(SEG_LENGTH, efarm_wire_readrsp_hdr, seg_length),
};
static const struct efarm_pkt_field_desc g_eor_fields[] = {
    FIELD(SEND_ID, efarm_wire_eor_hdr, send_id),
    FIELD(RECV_ID, efarm_wire_eor_hdr, recv_id),
    FIELD(CONNID, efarm_wire_eor_hdr, multiuse),
};
static const struct efarm_pkt_field_desc g_atomrsp_fields[] = {
    FIELD(CONNID, efarm_wire_atomrsp_hdr, multiuse),
    FIELD(RECV_ID, efarm_wire_atomrsp_hdr, recv_id),
    FIELD(SEG_LENGTH, efarm_wire_atomrsp_hdr, seg_length),
};
static const struct efarm_pkt_field_desc g_handshake_fields[] = {
    FIELD(NEXTRA_P3, efarm_wire_handshake_hdr, nextra_p3),
};
static const struct efarm_pkt_field_desc g_receipt_fields[] = {
    FIELD(SEND_ID, efarm_wire_receipt_hdr, send_id),
    FIELD(MSG_ID, efarm_wire_receipt_hdr, msg_id),
    FIELD(CONNID, efarm_wire_receipt_hdr, multiuse),
};
static const struct efarm_pkt_field_desc g_read_nack_fields[] = {
    FIELD(SEND_ID, efarm_wire_read_nack_hdr, send_id),
    FIELD(RECV_ID, efarm_wire_read_nack_hdr, recv_id),
    FIELD(CONNID, efarm_wire_read_nack_hdr, multiuse),
};

/* RTM layouts list the tag last: the MSG variant uses all but the last entry. */
static const struct efarm_pkt_field_desc g_eager_rtm_fields[] = {
    FIELD(MSG_ID, efarm_wire_eager_rtm_hdr, msg_id),
    FIELD(TAG, efarm_wire_eager_rtm_hdr, tag),
};
static const struct efarm_pkt_field_desc g_medium_rtm_fields[] = {
    FIELD(MSG_ID, efarm_wire_medium_rtm_hdr, msg_id),
    FIELD(MSG_LENGTH, efarm_wire_medium_rtm_hdr, msg_length),
    FIELD(SEG_OFFSET, efarm_wire_medium_rtm_hdr, seg_offset),
    FIELD(TAG, efarm_wire_medium_rtm_hdr, tag),
};
static const struct efarm_pkt_field_desc g_longcts_rtm_fields[] = {
    FIELD(MSG_ID, efarm_wire_longcts_rtm_hdr, msg_id),
    FIELD(MSG_LENGTH, efarm_wire_longcts_rtm_hdr, msg_length),
    FIELD(SEND_ID, efarm_wire_longcts_rtm_hdr, send_id),
    FIELD(CREDIT_REQUEST, efarm_wire_longcts_rtm_hdr, credit_request),
    FIELD(TAG, efarm_wire_longcts_rtm_hdr, tag),
};
static const struct efarm_pkt_field_desc g_longread_rtm_fields[] = {
    FIELD(MSG_ID, efarm_wire_longread_rtm_hdr, msg_id),
    FIELD(MSG_LENGTH, efarm_wire_longread_rtm_hdr, msg_length),
    FIELD(SEND_ID, efarm_wire_longread_rtm_hdr, send_id),
    FIELD(READ_IOV_COUNT, efarm_wire_longread_rtm_hdr, read_iov_count),
    FIELD(TAG, efarm_wire_longread_rtm_hdr, tag),
};
static const struct efarm_pkt_field_desc g_dc_eager_rtm_fields[] = {
    FIELD(MSG_ID, efarm_wire_dc_eager_rtm_hdr, msg_id),
    FIELD(SEND_ID, efarm_wire_dc_eager_rtm_hdr, send_id),
    FIELD(TAG, efarm_wire_dc_eager_rtm_hdr, tag),
};
static const struct efarm_pkt_field_desc g_dc_medium_rtm_fields[] = {
    FIELD(MSG_ID, efarm_wire_dc_medium_rtm_hdr, msg_id),
    FIELD(SEND_ID, efarm_wire_dc_medium_rtm_hdr, send_id),
    FIELD(MSG_LENGTH, efarm_wire_dc_medium_rtm_hdr, msg_length),
    FIELD(SEG_OFFSET, efarm_wire_dc_medium_rtm_hdr, seg_offset),
    FIELD(TAG, efarm_wire_dc_medium_rtm_hdr, tag),
};
static const struct efarm_pkt_field_desc g_runtcts_rtm_fields[] = {
    FIELD(MSG_ID, efarm_wire_runt_rtm_hdr, msg_id),
    FIELD(MSG_LENGTH, efarm_wire_runt_rtm_hdr, msg_length),
    FIELD(SEND_ID, efarm_wire_runt_rtm_hdr, send_id),
    FIELD(CREDIT_REQUEST, efarm_wire_runt_rtm_hdr, credit_request),
    FIELD(SEG_OFFSET, efarm_wire_runt_rtm_hdr, seg_offset),
    FIELD(RUNT_LENGTH, efarm_wire_runt_rtm_hdr, runt_length),
    FIELD(TAG, efarm_wire_runt_rtm_hdr, tag),
};
static const struct efarm_pkt_field_desc g_runtread_rtm_fields[] = {
    FIELD(MSG_ID, efarm_wire_runt_rtm_hdr, msg_id),
    FIELD(MSG_LENGTH, efarm_wire_runt_rtm_hdr, msg_length),
    FIELD(SEND_ID, efarm_wire_runt_rtm_hdr, send_id),
    FIELD(READ_IOV_COUNT, efarm_wire_runt_rtm_hdr, credit_request),
    FIELD(SEG_OFFSET, efarm_wire_runt_rtm_hdr, seg_offset),
    FIELD(RUNT_LENGTH, efarm_wire_runt_rtm_hdr, runt_length),
    FIELD(TAG, efarm_wire_runt_rtm_hdr, tag),
};

static const struct efarm_pkt_field_desc g_eager_rtw_fields[] = {
    FIELD(RMA_IOV_COUNT, efarm_wire_eager_rtw_hdr, rma_iov_count),
};
static const struct efarm_pkt_field_desc g_longcts_rtw_fields[] = {
    FIELD(RMA_IOV_COUNT, efarm_wire_longcts_rtw_hdr, rma_iov_count),
    FIELD(MSG_LENGTH, efarm_wire_longcts_rtw_hdr, msg_length),
    FIELD(SEND_ID, efarm_wire_longcts_rtw_hdr, send_id),
    FIELD(CREDIT_REQUEST, efarm_wire_longcts_rtw_hdr, credit_request),
};
static const struct efarm_pkt_field_desc g_longread_rtw_fields[] = {
    FIELD(RMA_IOV_COUNT, efarm_wire_longcts_rtw_hdr, rma_iov_count),
    FIELD(MSG_LENGTH, efarm_wire_longcts_rtw_hdr, msg_length),
    FIELD(SEND_ID, efarm_wire_longcts_rtw_hdr, send_id),
    FIELD(READ_IOV_COUNT, efarm_wire_longcts_rtw_hdr, credit_request),
};
/* SHORT_RTR has padding where LONGCTS_RTR has recv_length: it uses all but the last. */
static const struct efarm_pkt_field_desc g_rtr_fields[] = {
    FIELD(RMA_IOV_COUNT, efarm_wire_rtr_hdr, rma_iov_count),
    FIELD(MSG_LENGTH, efarm_wire_rtr_hdr, msg_length),
    FIELD(RECV_ID, efarm_wire_rtr_hdr, recv_id),
    FIELD(RECV_LENGTH, efarm_wire_rtr_hdr, recv_length),
};
static const struct efarm_pkt_field_desc g_write_rta_fields[] = {
    FIELD(MSG_ID, efarm_wire_rta_hdr, msg_id),
    FIELD(RMA_IOV_COUNT, efarm_wire_rta_hdr, rma_iov_count),
    FIELD(ATOMIC_DATATYPE, efarm_wire_rta_hdr, atomic_datatype),
    FIELD(ATOMIC_OP, efarm_wire_rta_hdr, atomic_op),
};
static const struct efarm_pkt_field_desc g_fetch_rta_fields[] = {
    FIELD(MSG_ID, efarm_wire_rta_hdr, msg_id),
    FIELD(RMA_IOV_COUNT, efarm_wire_rta_hdr, rma_iov_count),
    FIELD(ATOMIC_DATATYPE, efarm_wire_rta_hdr, atomic_datatype),
    FIELD(ATOMIC_OP, efarm_wire_rta_hdr, atomic_op),
    FIELD(RECV_ID, efarm_wire_rta_hdr, last),
};
static const struct efarm_pkt_field_desc g_dc_write_rta_fields[] = {
    FIELD(MSG_ID, efarm_wire_rta_hdr, msg_id),
    FIELD(RMA_IOV_COUNT, efarm_wire_rta_hdr, rma_iov_count),
    FIELD(ATOMIC_DATATYPE, efarm_wire_rta_hdr, atomic_datatype),
    FIELD(ATOMIC_OP, efarm_wire_rta_hdr, atomic_op),
    FIELD(SEND_ID, efarm_wire_rta_hdr, last),
};
static const struct efarm_pkt_field_desc g_dc_eager_rtw_fields[] = {
    FIELD(RMA_IOV_COUNT, efarm_wire_dc_eager_rtw_hdr, rma_iov_count),
    FIELD(SEND_ID, efarm_wire_dc_eager_rtw_hdr, send_id),
};
static const struct efarm_pkt_field_desc g_runtcts_rtw_fields[] = {
    FIELD(RMA_IOV_COUNT, efarm_wire_runt_rtw_hdr, rma_iov_count),
    FIELD(MSG_LENGTH, efarm_wire_runt_rtw_hdr, msg_length),
    FIELD(SEND_ID, efarm_wire_runt_rtw_hdr, send_id),
    FIELD(CREDIT_REQUEST, efarm_wire_runt_rtw_hdr, credit_request),
    FIELD(SEG_OFFSET, efarm_wire_runt_rtw_hdr, seg_offset),
    FIELD(RUNT_LENGTH, efarm_wire_runt_rtw_hdr, runt_length),
};
static const struct efarm_pkt_field_desc g_runtread_rtw_fields[] = {
    FIELD(RMA_IOV_COUNT, efarm_wire_runt_rtw_hdr, rma_iov_count),
    FIELD(MSG_LENGTH, efarm_wire_runt_rtw_hdr, msg_length),
    FIELD(SEND_ID, efarm_wire_runt_rtw_hdr, send_id),
    FIELD(READ_IOV_COUNT, efarm_wire_runt_rtw_hdr, credit_request),
    FIELD(SEG_OFFSET, efarm_wire_runt_rtw_hdr, seg_offset),
    FIELD(RUNT_LENGTH, efarm_wire_runt_rtw_hdr, runt_length),
};

/* ---- Fixed fields -------------------------------------------------------- */

static void decode_fields(const struct efarm_pkt_type_info *info, const uint8_t *buf,
                          struct efarm_pkt *pkt)
{
    for (unsigned i = 0; i < info->nfields; i++) {
        const struct efarm_pkt_field_desc *d = &info->fields[i];
        const uint8_t *p = buf + d->offset;

        /* A multiuse word is connid only under CONNID_HDR; otherwise it is padding. */
        if (d->id == EFARM_PKT_F_CONNID && !(pkt->flags & EFARM_PKT_FLAG_CONNID_HDR))
            continue;
        pkt->value[d->id] = d->width == 8 ? efarm_load_le64(p) : efarm_load_le32(p);
        pkt->present |= 1u << d->id;
    }
}

static int encode_fields(const struct efarm_pkt_type_info *info, const struct efarm_pkt *pkt,
                         uint8_t *buf)
{
    for (unsigned i = 0; i < info->nfields; i++) {
        const struct efarm_pkt_field_desc *d = &info->fields[i];
        uint64_t v = pkt->value[d->id];

        if (d->id == EFARM_PKT_F_CONNID && !(pkt->flags & EFARM_PKT_FLAG_CONNID_HDR))
            continue;
        if (d->width == 8) {
            efarm_store_le64(buf + d->offset, v);
        } else {
            if (v > UINT32_MAX)
                return EFARM_E(PKT_FIELD_RANGE);
            efarm_store_le32(buf + d->offset, (uint32_t)v);
        }
    }
    return 0;
}

/* Common start of every decoder: the type's entry and its mandatory header. */
static int decode_begin(const struct efarm_pkt_type_info *info, const uint8_t *buf, size_t len,
                        struct efarm_pkt *pkt)
{
    if (len < info->hdr_size)
        return EFARM_E(PKT_TRUNCATED_HEADER);
    decode_fields(info, buf, pkt);
    return 0;
}

static void decode_finish(const uint8_t *buf, size_t len, size_t off, struct efarm_pkt *pkt)
{
    pkt->hdr_length = off;
    pkt->payload = buf + off;
    pkt->payload_length = len - off;
}

/* ---- REQ packets (section 3.1, addenda "REQ optional headers") ----------- */

static uint64_t iov_bytes(uint64_t count)
{
    return count * sizeof(struct efarm_wire_rma_iov); /* count < 2^32: cannot overflow */
}

static int req_flags_check(const struct efarm_pkt_type_info *info, uint16_t flags)
{
    if ((flags & EFARM_REQ_OPT_RAW_ADDR_HDR) && (flags & EFARM_PKT_FLAG_CONNID_HDR))
        return EFARM_E(PKT_OPT_CONFLICT);
    if ((flags & EFARM_REQ_READ_NACK) && !(info->traits & EFARM_PKT_T_LONGCTS))
        return EFARM_E(PKT_READ_NACK_FLAG);
    return 0;
}

static int decode_raw_addr(const uint8_t *p, size_t avail, struct efarm_pkt *pkt, size_t *used_p)
{
    uint32_t size;

    if (avail < sizeof(uint32_t))
        return EFARM_E(PKT_TRUNCATED_RAW_ADDR);
    size = efarm_load_le32(p);
    if (size < sizeof(struct efarm_wire_raw_addr))
        return EFARM_E(PKT_RAW_ADDR_SIZE);
    if (size > avail - sizeof(uint32_t))
        return EFARM_E(PKT_TRUNCATED_RAW_ADDR);
    p += offsetof(struct efarm_wire_req_opt_raw_addr, addr);
    memcpy(pkt->raw_addr.gid, p + offsetof(struct efarm_wire_raw_addr, gid), EFARM_GID_LEN);
    pkt->raw_addr.qpn = efarm_load_le16(p + offsetof(struct efarm_wire_raw_addr, qpn));
    pkt->raw_addr.connid = efarm_load_le32(p + offsetof(struct efarm_wire_raw_addr, connid));
    pkt->raw_addr_size = size;
    pkt->present |= EFARM_PKT_HAS_RAW_ADDR;
    *used_p = sizeof(uint32_t) + size;
    return 0;
}

static int decode_req(const uint8_t *buf, size_t len, struct efarm_pkt *pkt)
{
    const struct efarm_pkt_type_info *info = efarm_pkt_type_info(pkt->type);
    size_t off = info->hdr_size;
    int ret;

    ret = decode_begin(info, buf, len, pkt);
    if (ret)
        return ret;
    ret = req_flags_check(info, pkt->flags);
    if (ret)
        return ret;

    if (info->traits & EFARM_PKT_T_RMA_IOV) {
        uint64_t bytes = iov_bytes(pkt->value[EFARM_PKT_F_RMA_IOV_COUNT]);

        if (bytes > len - off)
            return EFARM_E(PKT_TRUNCATED_RMA_IOV);
        pkt->rma_iov = buf + off;
        pkt->present |= EFARM_PKT_HAS_RMA_IOV;
        off += bytes;
    }
    if (pkt->flags & EFARM_REQ_OPT_RAW_ADDR_HDR) {
        size_t used;

        ret = decode_raw_addr(buf + off, len - off, pkt, &used);
        if (ret)
            return ret;
        off += used;
    }
    if (pkt->flags & EFARM_REQ_OPT_CQ_DATA_HDR) {
        if (len - off < EFARM_REQ_OPT_CQ_DATA_LEN)
            return EFARM_E(PKT_TRUNCATED_CQ_DATA);
        efarm_pkt_set(pkt, EFARM_PKT_F_CQ_DATA, efarm_load_le64(buf + off));
        off += EFARM_REQ_OPT_CQ_DATA_LEN;
    }
    if (pkt->flags & EFARM_PKT_FLAG_CONNID_HDR) {
        if (len - off < EFARM_REQ_OPT_CONNID_LEN)
            return EFARM_E(PKT_TRUNCATED_CONNID);
        efarm_pkt_set(pkt, EFARM_PKT_F_CONNID, efarm_load_le32(buf + off));
        off += EFARM_REQ_OPT_CONNID_LEN;
    }
    decode_finish(buf, len, off, pkt);

    /* read_iov[] is application data, but the receiver dereferences it: bound it here. */
    if ((info->traits & EFARM_PKT_T_READ_IOV) &&
        iov_bytes(pkt->value[EFARM_PKT_F_READ_IOV_COUNT]) > pkt->payload_length)
        return EFARM_E(PKT_TRUNCATED_READ_IOV);
    return 0;
}

static size_t req_hdr_length(const struct efarm_pkt_type_info *info, const struct efarm_pkt *pkt)
{
    size_t n = info->hdr_size;

    if (info->traits & EFARM_PKT_T_RMA_IOV)
        n += iov_bytes(pkt->value[EFARM_PKT_F_RMA_IOV_COUNT]);
    if (pkt->flags & EFARM_REQ_OPT_RAW_ADDR_HDR)
        n += sizeof(uint32_t) +
             (pkt->raw_addr_size ? pkt->raw_addr_size : EFARM_REQ_OPT_RAW_ADDR_SIZE_FIELD);
    if (pkt->flags & EFARM_REQ_OPT_CQ_DATA_HDR)
        n += EFARM_REQ_OPT_CQ_DATA_LEN;
    if (pkt->flags & EFARM_PKT_FLAG_CONNID_HDR)
        n += EFARM_REQ_OPT_CONNID_LEN;
    return n;
}

static size_t encode_raw_addr(const struct efarm_pkt *pkt, uint8_t *p)
{
    uint32_t size = pkt->raw_addr_size ? pkt->raw_addr_size : EFARM_REQ_OPT_RAW_ADDR_SIZE_FIELD;

    efarm_store_le32(p, size);
    p += offsetof(struct efarm_wire_req_opt_raw_addr, addr);
    memcpy(p + offsetof(struct efarm_wire_raw_addr, gid), pkt->raw_addr.gid, EFARM_GID_LEN);
    efarm_store_le16(p + offsetof(struct efarm_wire_raw_addr, qpn), pkt->raw_addr.qpn);
    efarm_store_le32(p + offsetof(struct efarm_wire_raw_addr, connid), pkt->raw_addr.connid);
    return sizeof(uint32_t) + size;
}

static int encode_req(const struct efarm_pkt *pkt, uint8_t *buf, size_t cap, size_t *hdr_length_p)
{
    const struct efarm_pkt_type_info *info = efarm_pkt_type_info(pkt->type);
    size_t total, off = info->hdr_size;
    int ret;

    ret = req_flags_check(info, pkt->flags);
    if (ret)
        return ret;
    if ((pkt->flags & EFARM_REQ_OPT_RAW_ADDR_HDR) && pkt->raw_addr_size &&
        pkt->raw_addr_size < sizeof(struct efarm_wire_raw_addr))
        return EFARM_E(PKT_RAW_ADDR_SIZE);
    if ((info->traits & EFARM_PKT_T_RMA_IOV) && pkt->value[EFARM_PKT_F_RMA_IOV_COUNT] &&
        !pkt->rma_iov)
        return EFARM_E(PKT_MISSING_ARRAY);
    total = req_hdr_length(info, pkt);
    if (total > cap)
        return -ENOSPC;

    memset(buf, 0, total);
    ret = encode_fields(info, pkt, buf);
    if (ret)
        return ret;
    if (info->traits & EFARM_PKT_T_RMA_IOV) {
        uint64_t bytes = iov_bytes(pkt->value[EFARM_PKT_F_RMA_IOV_COUNT]);

        if (bytes)
            memcpy(buf + off, pkt->rma_iov, bytes);
        off += bytes;
    }
    if (pkt->flags & EFARM_REQ_OPT_RAW_ADDR_HDR)
        off += encode_raw_addr(pkt, buf + off);
    if (pkt->flags & EFARM_REQ_OPT_CQ_DATA_HDR) {
        efarm_store_le64(buf + off, pkt->value[EFARM_PKT_F_CQ_DATA]);
        off += EFARM_REQ_OPT_CQ_DATA_LEN;
    }
    if (pkt->flags & EFARM_PKT_FLAG_CONNID_HDR) {
        if (pkt->value[EFARM_PKT_F_CONNID] > UINT32_MAX)
            return EFARM_E(PKT_FIELD_RANGE);
        efarm_store_le32(buf + off, (uint32_t)pkt->value[EFARM_PKT_F_CONNID]);
        off += EFARM_REQ_OPT_CONNID_LEN;
    }
    *hdr_length_p = off;
    return 0;
}

/* ---- Other packets: fixed fields, and CTSDATA's optional connid ---------- */

static int decode_plain(const uint8_t *buf, size_t len, struct efarm_pkt *pkt)
{
    const struct efarm_pkt_type_info *info = efarm_pkt_type_info(pkt->type);
    size_t off = info->hdr_size;
    int ret;

    ret = decode_begin(info, buf, len, pkt);
    if (ret)
        return ret;
    if ((info->traits & EFARM_PKT_T_OPT_8) && (pkt->flags & EFARM_PKT_FLAG_CONNID_HDR)) {
        if (len - off < EFARM_OPT_FIELD_LEN)
            return EFARM_E(PKT_TRUNCATED_CONNID);
        efarm_pkt_set(pkt, EFARM_PKT_F_CONNID, efarm_load_le32(buf + off));
        off += EFARM_OPT_FIELD_LEN;
    }
    decode_finish(buf, len, off, pkt);
    return 0;
}

static int encode_plain(const struct efarm_pkt *pkt, uint8_t *buf, size_t cap, size_t *hdr_length_p)
{
    const struct efarm_pkt_type_info *info = efarm_pkt_type_info(pkt->type);
    bool opt = (info->traits & EFARM_PKT_T_OPT_8) && (pkt->flags & EFARM_PKT_FLAG_CONNID_HDR);
    size_t total = info->hdr_size + (opt ? EFARM_OPT_FIELD_LEN : 0);
    int ret;

    if (total > cap)
        return -ENOSPC;
    memset(buf, 0, total);
    ret = encode_fields(info, pkt, buf);
    if (ret)
        return ret;
    if (opt) {
        if (pkt->value[EFARM_PKT_F_CONNID] > UINT32_MAX)
            return EFARM_E(PKT_FIELD_RANGE);
        efarm_store_le32(buf + info->hdr_size, (uint32_t)pkt->value[EFARM_PKT_F_CONNID]);
    }
    *hdr_length_p = total;
    return 0;
}

/* ---- HANDSHAKE (section 2.1, addenda "HANDSHAKE optional fields") -------- */

/* Optional fields in wire order: connid, host_id, device_version, user_recv_qp. */
static const uint16_t g_handshake_opt_order[] = {
    EFARM_PKT_FLAG_CONNID_HDR,
    EFARM_HANDSHAKE_HOST_ID_HDR,
    EFARM_HANDSHAKE_DEVICE_VERSION_HDR,
    EFARM_HANDSHAKE_USER_RECV_QP_HDR,
};

static void handshake_opt_load(uint16_t flag, const uint8_t *p, struct efarm_pkt *pkt)
{
    switch (flag) {
    case EFARM_PKT_FLAG_CONNID_HDR:
        efarm_pkt_set(pkt, EFARM_PKT_F_CONNID, efarm_load_le32(p));
        break;
    case EFARM_HANDSHAKE_HOST_ID_HDR:
        efarm_pkt_set(pkt, EFARM_PKT_F_HOST_ID, efarm_load_le64(p));
        break;
    case EFARM_HANDSHAKE_DEVICE_VERSION_HDR:
        efarm_pkt_set(pkt, EFARM_PKT_F_DEVICE_VERSION, efarm_load_le32(p));
        break;
    default: /* EFARM_HANDSHAKE_USER_RECV_QP_HDR */
        pkt->user_recv_qpn = efarm_load_le32(p);
        pkt->user_recv_qkey = efarm_load_le32(p + 4);
        pkt->present |= EFARM_PKT_HAS_USER_RECV_QP;
        break;
    }
}

static int handshake_opt_store(uint16_t flag, const struct efarm_pkt *pkt, uint8_t *p)
{
    uint64_t v = 0;

    switch (flag) {
    case EFARM_PKT_FLAG_CONNID_HDR:
        v = pkt->value[EFARM_PKT_F_CONNID];
        break;
    case EFARM_HANDSHAKE_HOST_ID_HDR:
        efarm_store_le64(p, pkt->value[EFARM_PKT_F_HOST_ID]);
        return 0;
    case EFARM_HANDSHAKE_DEVICE_VERSION_HDR:
        v = pkt->value[EFARM_PKT_F_DEVICE_VERSION];
        break;
    default: /* EFARM_HANDSHAKE_USER_RECV_QP_HDR */
        efarm_store_le32(p, pkt->user_recv_qpn);
        efarm_store_le32(p + 4, pkt->user_recv_qkey);
        return 0;
    }
    if (v > UINT32_MAX)
        return EFARM_E(PKT_FIELD_RANGE);
    efarm_store_le32(p, (uint32_t)v);
    return 0;
}

static int handshake_nextra(uint64_t nextra_p3, uint64_t *nextra_p)
{
    if (nextra_p3 < 3)
        return EFARM_E(PKT_NEXTRA_P3);
    if (nextra_p3 - 3 > EFARM_HANDSHAKE_MAX_EXTRA_INFO)
        return EFARM_E(PKT_EXTRA_INFO_COUNT);
    *nextra_p = nextra_p3 - 3;
    return 0;
}

static int decode_handshake(const uint8_t *buf, size_t len, struct efarm_pkt *pkt)
{
    const struct efarm_pkt_type_info *info = efarm_pkt_type_info(pkt->type);
    size_t off = info->hdr_size;
    uint64_t nextra;
    int ret;

    ret = decode_begin(info, buf, len, pkt);
    if (ret)
        return ret;
    ret = handshake_nextra(pkt->value[EFARM_PKT_F_NEXTRA_P3], &nextra);
    if (ret)
        return ret;
    if (nextra * sizeof(uint64_t) > len - off)
        return EFARM_E(PKT_TRUNCATED_EXTRA_INFO);
    pkt->extra_info = buf + off;
    pkt->present |= EFARM_PKT_HAS_EXTRA_INFO;
    off += nextra * sizeof(uint64_t);

    for (size_t i = 0; i < sizeof(g_handshake_opt_order) / sizeof(g_handshake_opt_order[0]); i++) {
        uint16_t flag = g_handshake_opt_order[i];

        if (!(pkt->flags & flag))
            continue;
        if (len - off < EFARM_OPT_FIELD_LEN)
            return EFARM_E(PKT_TRUNCATED_HANDSHAKE_OPT);
        handshake_opt_load(flag, buf + off, pkt);
        off += EFARM_OPT_FIELD_LEN;
    }
    decode_finish(buf, len, off, pkt);
    return 0;
}

static int encode_handshake(const struct efarm_pkt *pkt, uint8_t *buf, size_t cap,
                            size_t *hdr_length_p)
{
    const struct efarm_pkt_type_info *info = efarm_pkt_type_info(pkt->type);
    size_t nopt = 0, off = info->hdr_size, total;
    uint64_t nextra;
    int ret;

    ret = handshake_nextra(pkt->value[EFARM_PKT_F_NEXTRA_P3], &nextra);
    if (ret)
        return ret;
    if (nextra && !pkt->extra_info)
        return EFARM_E(PKT_MISSING_ARRAY);
    for (size_t i = 0; i < sizeof(g_handshake_opt_order) / sizeof(g_handshake_opt_order[0]); i++)
        nopt += (pkt->flags & g_handshake_opt_order[i]) != 0;
    total = off + nextra * sizeof(uint64_t) + nopt * EFARM_OPT_FIELD_LEN;
    if (total > cap)
        return -ENOSPC;

    memset(buf, 0, total);
    ret = encode_fields(info, pkt, buf);
    if (ret)
        return ret;
    if (nextra)
        memcpy(buf + off, pkt->extra_info, nextra * sizeof(uint64_t));
    off += nextra * sizeof(uint64_t);
    for (size_t i = 0; i < sizeof(g_handshake_opt_order) / sizeof(g_handshake_opt_order[0]); i++) {
        uint16_t flag = g_handshake_opt_order[i];

        if (!(pkt->flags & flag))
            continue;
        ret = handshake_opt_store(flag, pkt, buf + off);
        if (ret)
            return ret;
        off += EFARM_OPT_FIELD_LEN;
    }
    *hdr_length_p = off;
    return 0;
}

/* ---- Types with no wire format ------------------------------------------ */

static int decode_unknown(const uint8_t *buf, size_t len, struct efarm_pkt *pkt)
{
    (void)buf, (void)len, (void)pkt;
    return EFARM_E(PKT_UNKNOWN_TYPE);
}

static int decode_retired(const uint8_t *buf, size_t len, struct efarm_pkt *pkt)
{
    (void)buf, (void)len, (void)pkt;
    return EFARM_E(PKT_RETIRED_TYPE);
}

static int decode_reserved(const uint8_t *buf, size_t len, struct efarm_pkt *pkt)
{
    (void)buf, (void)len, (void)pkt;
    return EFARM_E(PKT_RESERVED_TYPE);
}

static int encode_unsupported(const struct efarm_pkt *pkt, uint8_t *buf, size_t cap,
                              size_t *hdr_length_p)
{
    (void)pkt, (void)buf, (void)cap, (void)hdr_length_p;
    return EFARM_E(PKT_ENCODE_TYPE);
}

/* ---- Checks beyond the layout -------------------------------------------- */

static int validate_none(const struct efarm_pkt *pkt)
{
    (void)pkt;
    return 0;
}

/* CTS must grant something, or the long-CTS exchange never moves (section 3.2). */
static int validate_cts(const struct efarm_pkt *pkt)
{
    return pkt->value[EFARM_PKT_F_RECV_LENGTH] ? 0 : EFARM_E(PKT_CTS_ZERO);
}

/* CTSDATA, READRSP, ATOMRSP: seg_length bytes of data follow the header. */
static int validate_seg_length(const struct efarm_pkt *pkt)
{
    uint64_t seg_length = pkt->value[EFARM_PKT_F_SEG_LENGTH];

    if (seg_length > pkt->payload_length)
        return EFARM_E(PKT_SEG_LENGTH);
    if ((pkt->present & EFARM_PKT_HAS(SEG_OFFSET)) &&
        pkt->value[EFARM_PKT_F_SEG_OFFSET] > UINT64_MAX - seg_length)
        return EFARM_E(PKT_SEG_OVERFLOW);
    return 0;
}

/* Data at [offset, offset + n) must lie inside [0, limit). */
static int segment_check(uint64_t offset, uint64_t n, uint64_t limit, int beyond_err)
{
    if (offset > UINT64_MAX - n)
        return EFARM_E(PKT_SEG_OVERFLOW);
    return offset + n > limit ? beyond_err : 0;
}

/* MEDIUM: the payload is the segment at seg_offset of a msg_length message (addenda). */
static int validate_medium(const struct efarm_pkt *pkt)
{
    return segment_check(pkt->value[EFARM_PKT_F_SEG_OFFSET], pkt->payload_length,
                         pkt->value[EFARM_PKT_F_MSG_LENGTH], EFARM_E(PKT_SEG_BEYOND_MSG));
}

/* RUNTCTS/RUNTREAD: the runt is the head of the message; this packet's data lies inside it. */
static int validate_runt(const struct efarm_pkt *pkt)
{
    uint64_t data = pkt->payload_length;
    const struct efarm_pkt_type_info *info = efarm_pkt_type_info(pkt->type);

    if (info->traits & EFARM_PKT_T_READ_IOV)
        data -= iov_bytes(pkt->value[EFARM_PKT_F_READ_IOV_COUNT]); /* bounded by decode_req */
    if (pkt->value[EFARM_PKT_F_RUNT_LENGTH] > pkt->value[EFARM_PKT_F_MSG_LENGTH])
        return EFARM_E(PKT_RUNT_LENGTH);
    return segment_check(pkt->value[EFARM_PKT_F_SEG_OFFSET], data,
                         pkt->value[EFARM_PKT_F_RUNT_LENGTH], EFARM_E(PKT_RUNT_LENGTH));
}

/*
 * LONGCTS RTM/RTW: the data carried is the head of the message; the one sent
 * after a READ_NACK carries none (section 4.7).
 */
static int validate_longcts(const struct efarm_pkt *pkt)
{
    if ((pkt->flags & EFARM_REQ_READ_NACK) && pkt->payload_length)
        return EFARM_E(PKT_READ_NACK_FLAG);
    return segment_check(0, pkt->payload_length, pkt->value[EFARM_PKT_F_MSG_LENGTH],
                         EFARM_E(PKT_SEG_BEYOND_MSG));
}

/* ---- The table ----------------------------------------------------------- */

#define NFIELDS(a) (uint8_t)(sizeof(a) / sizeof((a)[0]))

#define T_SUP EFARM_PKT_T_SUPPORTED
#define T_REQ (EFARM_PKT_T_SUPPORTED | EFARM_PKT_T_REQ)

/* One table entry, by designated initializers. */
#define ENTRY(nick, size, traits_, f, n, dec, enc, check)                                         \
    {                                                                                             \
        .name = nick, .hdr_size = (uint16_t)(size), .traits = (traits_), .nfields = (uint8_t)(n), \
        .fields = f, .decode = dec, .encode = enc, .validate = check                              \
    }

/* The codec's columns of each CODEC kind of efarm_pkt_types.h. */
#define CODEC_RETIRED(nick, s, f, tr, check) \
    ENTRY(nick, 0, 0, NULL, 0, decode_retired, encode_unsupported, validate_none)
#define CODEC_RESERVED(nick, s, f, tr, check) \
    ENTRY(nick, 0, 0, NULL, 0, decode_reserved, encode_unsupported, validate_none)
#define CODEC_PLAIN(nick, s, f, tr, check) \
    ENTRY(nick, sizeof(struct s), T_SUP | (tr), f, NFIELDS(f), decode_plain, encode_plain, check)
#define CODEC_HANDSHAKE(nick, s, f, tr, check)                                                     \
    ENTRY(nick, sizeof(struct s), T_SUP | (tr), f, NFIELDS(f), decode_handshake, encode_handshake, \
          check)
#define CODEC_REQ(nick, s, f, tr, check) \
    ENTRY(nick, sizeof(struct s), T_REQ | (tr), f, NFIELDS(f), decode_req, encode_req, check)
#define CODEC_REQ_SHORT(nick, s, f, tr, check) \
    ENTRY(nick, sizeof(struct s), T_REQ | (tr), f, NFIELDS(f) - 1, decode_req, encode_req, check)
#define CODEC_MSG(nick, s, f, tr, check)                                                    \
    ENTRY(nick, EFARM_WIRE_SIZE_MSG(struct s), T_REQ | (tr), f, NFIELDS(f) - 1, decode_req, \
          encode_req, check)
#define CODEC_TAG(nick, s, f, tr, check)                                                \
    ENTRY(nick, EFARM_WIRE_SIZE_TAG(struct s), T_REQ | (tr), f, NFIELDS(f), decode_req, \
          encode_req, check)

#define CODEC_ROW(type, nick, codec, s, f, tr, check, engine, loss) \
    [EFARM_PKT_##type] = CODEC_##codec(nick, s, f, tr, check),

static const struct efarm_pkt_type_info g_efarm_pkt_types[EFARM_PKT_TYPE_COUNT] = {
    EFARM_PKT_TYPE_LIST(CODEC_ROW)};

static const struct efarm_pkt_type_info g_efarm_pkt_unknown =
    ENTRY("UNKNOWN", 0, 0, NULL, 0, decode_unknown, encode_unsupported, validate_none);

int efarm_pkt_field_offset(uint8_t type, enum efarm_pkt_field id, unsigned *width_p)
{
    const struct efarm_pkt_type_info *info = efarm_pkt_type_info(type);

    for (uint8_t i = 0; i < info->nfields; i++) {
        if (info->fields[i].id != id)
            continue;
        if (width_p)
            *width_p = info->fields[i].width;
        return info->fields[i].offset;
    }
    return -1;
}

bool efarm_pkt_type_has_msg_id(uint8_t type)
{
    return efarm_pkt_field_offset(type, EFARM_PKT_F_MSG_ID, NULL) >= 0;
}

const struct efarm_pkt_type_info *efarm_pkt_type_info(uint8_t type)
{
    const struct efarm_pkt_type_info *info = &g_efarm_pkt_types[type];

    return info->name ? info : &g_efarm_pkt_unknown;
}

int efarm_pkt_type_lookup(const char *name)
{
    /* Table 1.2 spells type 138 "DC_LONTCTS_TAGRTM"; accept the typo as an alias. */
    if (!strcmp(name, "DC_LONTCTS_TAGRTM"))
        return EFARM_PKT_DC_LONGCTS_TAGRTM;
    for (int t = 0; t < EFARM_PKT_TYPE_COUNT; t++)
        if (g_efarm_pkt_types[t].name && !strcmp(g_efarm_pkt_types[t].name, name))
            return t;
    return -1;
}

const char *efarm_pkt_field_name(enum efarm_pkt_field id)
{
    static const char *const names[] = {
#define EFARM_PKT_FIELD_NAME_(id_, name_) [EFARM_PKT_F_##id_] = #name_,
        EFARM_PKT_FIELD_LIST(EFARM_PKT_FIELD_NAME_)
#undef EFARM_PKT_FIELD_NAME_
    };

    return (unsigned)id < EFARM_PKT_F_COUNT ? names[id] : "?";
}

/* ---- Entry points -------------------------------------------------------- */

int efarm_pkt_decode(const uint8_t *buf, size_t len, struct efarm_pkt *pkt_p)
{
    const struct efarm_pkt_type_info *info;
    int ret;

    if (len < sizeof(struct efarm_wire_base_hdr))
        return EFARM_E(PKT_TRUNCATED_BASE);
    pkt_p->type = buf[offsetof(struct efarm_wire_base_hdr, type)];
    pkt_p->version = buf[offsetof(struct efarm_wire_base_hdr, version)];
    pkt_p->flags = efarm_load_le16(buf + offsetof(struct efarm_wire_base_hdr, flags));
    if (pkt_p->version != EFARM_PROTO_VERSION)
        return EFARM_E(PKT_BAD_VERSION);
    pkt_p->present = 0;
    memset(pkt_p->value, 0, sizeof(pkt_p->value));
    pkt_p->rma_iov = NULL;
    pkt_p->extra_info = NULL;
    pkt_p->raw_addr_size = 0;

    info = efarm_pkt_type_info(pkt_p->type);
    ret = info->decode(buf, len, pkt_p);
    if (ret)
        return ret;
    return info->validate(pkt_p);
}

void efarm_pkt_init(struct efarm_pkt *pkt, uint8_t type)
{
    memset(pkt, 0, sizeof(*pkt));
    pkt->type = type;
    pkt->version = EFARM_PROTO_VERSION;
}

int efarm_pkt_encode(const struct efarm_pkt *pkt, uint8_t *buf, size_t cap, size_t *hdr_length_p)
{
    const struct efarm_pkt_type_info *info = efarm_pkt_type_info(pkt->type);
    int ret;

    if (pkt->version != EFARM_PROTO_VERSION)
        return EFARM_E(PKT_BAD_VERSION);
    if (cap < sizeof(struct efarm_wire_base_hdr))
        return -ENOSPC;
    ret = info->encode(pkt, buf, cap, hdr_length_p);
    if (ret)
        return ret;
    buf[offsetof(struct efarm_wire_base_hdr, type)] = pkt->type;
    buf[offsetof(struct efarm_wire_base_hdr, version)] = EFARM_PROTO_VERSION;
    efarm_store_le16(buf + offsetof(struct efarm_wire_base_hdr, flags), pkt->flags);
    return 0;
}

void efarm_rma_iov_load(const uint8_t *array, uint32_t i, struct efarm_rma_iov *iov_p)
{
    const uint8_t *p = array + (size_t)i * sizeof(struct efarm_wire_rma_iov);

    iov_p->addr = efarm_load_le64(p + offsetof(struct efarm_wire_rma_iov, addr));
    iov_p->len = efarm_load_le64(p + offsetof(struct efarm_wire_rma_iov, len));
    iov_p->key = efarm_load_le64(p + offsetof(struct efarm_wire_rma_iov, key));
}

void efarm_rma_iov_store(uint8_t *array, uint32_t i, const struct efarm_rma_iov *iov)
{
    uint8_t *p = array + (size_t)i * sizeof(struct efarm_wire_rma_iov);

    efarm_store_le64(p + offsetof(struct efarm_wire_rma_iov, addr), iov->addr);
    efarm_store_le64(p + offsetof(struct efarm_wire_rma_iov, len), iov->len);
    efarm_store_le64(p + offsetof(struct efarm_wire_rma_iov, key), iov->key);
}

uint64_t efarm_pkt_extra_info(const struct efarm_pkt *pkt, uint32_t i)
{
    return efarm_load_le64(pkt->extra_info + (size_t)i * sizeof(uint64_t));
}
