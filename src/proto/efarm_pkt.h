/*
 * Protocol v4 packet codec: decode, encode, describe.
 *
 * efarm_pkt_decode() is the trust boundary for everything a peer sends: it
 * checks every length, count and offset against the packet size before it
 * uses it, and returns a negative efarm error code (efarm_errno.h) that names
 * the defect. Neither direction allocates, and a decoded struct efarm_pkt
 * points into the caller's buffer, which must outlive it.
 */
#ifndef EFARM_PKT_H
#define EFARM_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "efarm_proto_v4.h"

/*
 * Header fields by name, in no particular order: X(ID, json name). The JSON
 * names are the spec's and the addenda's field names.
 */
#define EFARM_PKT_FIELD_LIST(X)         \
    X(MSG_ID, msg_id)                   \
    X(TAG, tag)                         \
    X(MSG_LENGTH, msg_length)           \
    X(SEG_OFFSET, seg_offset)           \
    X(SEG_LENGTH, seg_length)           \
    X(SEND_ID, send_id)                 \
    X(RECV_ID, recv_id)                 \
    X(CREDIT_REQUEST, credit_request)   \
    X(RECV_LENGTH, recv_length)         \
    X(RMA_IOV_COUNT, rma_iov_count)     \
    X(ATOMIC_DATATYPE, atomic_datatype) \
    X(ATOMIC_OP, atomic_op)             \
    X(READ_IOV_COUNT, read_iov_count)   \
    X(RUNT_LENGTH, runt_length)         \
    X(NEXTRA_P3, nextra_p3)             \
    X(CONNID, connid)                   \
    X(HOST_ID, host_id)                 \
    X(DEVICE_VERSION, device_version)   \
    X(CQ_DATA, cq_data)

enum efarm_pkt_field {
#define EFARM_PKT_FIELD_ENUM_(id, name) EFARM_PKT_F_##id,
    EFARM_PKT_FIELD_LIST(EFARM_PKT_FIELD_ENUM_)
#undef EFARM_PKT_FIELD_ENUM_
        EFARM_PKT_F_COUNT
};

/* Bits of efarm_pkt.present that are not scalar fields. */
#define EFARM_PKT_HAS(id)          (1u << EFARM_PKT_F_##id)
#define EFARM_PKT_HAS_RAW_ADDR     (1u << (EFARM_PKT_F_COUNT + 0))
#define EFARM_PKT_HAS_RMA_IOV      (1u << (EFARM_PKT_F_COUNT + 1))
#define EFARM_PKT_HAS_EXTRA_INFO   (1u << (EFARM_PKT_F_COUNT + 2))
#define EFARM_PKT_HAS_USER_RECV_QP (1u << (EFARM_PKT_F_COUNT + 3))
_Static_assert(EFARM_PKT_F_COUNT + 4 <= 32, "presence bits fit in 32 bits");

/* Section 1.4: the parts of a raw address that mean something. */
struct efarm_raw_addr {
    uint8_t gid[EFARM_GID_LEN];
    uint16_t qpn;
    uint32_t connid;
};

/* One efa_rma_iov (addenda: addr, len, key, 8 bytes each). */
struct efarm_rma_iov {
    uint64_t addr;
    uint64_t len;
    uint64_t key;
};

/*
 * A decoded packet, or the description of one to encode. Scalar fields are
 * held as uint64_t whatever their wire width; `present` says which ones the
 * packet carries (EFARM_PKT_HAS()). Arrays stay in wire format inside the
 * packet buffer and are read with the accessors below.
 */
struct efarm_pkt {
    uint8_t type;
    uint8_t version;
    uint16_t flags;
    uint32_t present;
    uint64_t value[EFARM_PKT_F_COUNT]; /* indexed by enum efarm_pkt_field */
    struct efarm_raw_addr raw_addr;    /* REQ raw-address header */
    uint32_t raw_addr_size;            /* its `size` field; 36 from every known sender */
    uint32_t user_recv_qpn;            /* HANDSHAKE USER_RECV_QP field */
    uint32_t user_recv_qkey;
    const uint8_t *rma_iov;    /* rma_iov_count wire entries of 24 bytes */
    const uint8_t *extra_info; /* nextra_p3 - 3 little-endian u64 words */
    const uint8_t *payload;    /* everything after the headers */
    size_t payload_length;
    size_t hdr_length; /* mandatory + rma_iov + optional headers */
};

/* Field value by id, e.g. efarm_pkt_get(&pkt, EFARM_PKT_F_MSG_ID). */
static inline uint64_t efarm_pkt_get(const struct efarm_pkt *pkt, enum efarm_pkt_field id)
{
    return pkt->value[id];
}

/* Set a field and mark it present. */
static inline void efarm_pkt_set(struct efarm_pkt *pkt, enum efarm_pkt_field id, uint64_t v)
{
    pkt->value[id] = v;
    pkt->present |= 1u << id;
}

/* Layout of one fixed header field of a packet type. */
struct efarm_pkt_field_desc {
    uint8_t id;      /* enum efarm_pkt_field */
    uint8_t width;   /* 4 or 8 bytes on the wire */
    uint16_t offset; /* from the start of the packet */
};

/* Traits of a packet type (efarm_pkt_type_info.traits). */
#define EFARM_PKT_T_REQ       0x01u /* REQ packet: REQ optional headers follow */
#define EFARM_PKT_T_RMA_IOV   0x02u /* rma_iov[] follows the mandatory header */
#define EFARM_PKT_T_READ_IOV  0x04u /* payload starts with read_iov[] */
#define EFARM_PKT_T_MULTIUSE  0x08u /* a u32 holds connid when CONNID_HDR is set */
#define EFARM_PKT_T_OPT_8     0x10u /* CONNID_HDR appends connid + pad (CTSDATA) */
#define EFARM_PKT_T_LONGCTS   0x20u /* may carry the READ_NACK REQ flag */
#define EFARM_PKT_T_TAGGED    0x40u /* carries an MPI/libfabric tag */
#define EFARM_PKT_T_SUPPORTED 0x80u /* has a wire format (not retired/reserved/unknown) */

typedef int (*efarm_pkt_decode_fn)(const uint8_t *buf, size_t len, struct efarm_pkt *pkt);
typedef int (*efarm_pkt_encode_fn)(const struct efarm_pkt *pkt, uint8_t *buf, size_t cap,
                                   size_t *hdr_length_p);
typedef int (*efarm_pkt_validate_fn)(const struct efarm_pkt *pkt);

/* One entry of the table indexed by packet type. */
struct efarm_pkt_type_info {
    const char *name;  /* the spec's nickname, "EAGER_TAGRTM" */
    uint16_t hdr_size; /* mandatory header bytes */
    uint16_t traits;   /* EFARM_PKT_T_* */
    uint8_t nfields;
    const struct efarm_pkt_field_desc *fields; /* in wire order */
    efarm_pkt_decode_fn decode;
    efarm_pkt_encode_fn encode;
    efarm_pkt_validate_fn validate; /* checks beyond the layout, after decode */
};

/*
 * The table entry for `type`. Never NULL: types with no wire format get an
 * entry whose handlers return the matching error.
 */
const struct efarm_pkt_type_info *efarm_pkt_type_info(uint8_t type);

/* Whether packets of this type carry a msg_id (they take one from the peer's sequence). */
bool efarm_pkt_type_has_msg_id(uint8_t type);

/*
 * Where a fixed field of `type` lies: its offset from the packet's start (its
 * width in *width_p when not NULL), or -1 when the type has no such field.
 */
int efarm_pkt_field_offset(uint8_t type, enum efarm_pkt_field id, unsigned *width_p);

/* Packet type by nickname; -1 when there is none. */
int efarm_pkt_type_lookup(const char *name);

/* JSON name of a field ("msg_id"); never NULL. */
const char *efarm_pkt_field_name(enum efarm_pkt_field id);

/*
 * Decode the packet of `len` bytes at `buf` into *pkt_p. Returns 0, or a
 * negative EFARM_ERR_PKT_* code naming the first defect found; *pkt_p is
 * unspecified on error. The result points into `buf`.
 */
int efarm_pkt_decode(const uint8_t *buf, size_t len, struct efarm_pkt *pkt_p);

/*
 * Prepare *pkt to describe a packet of `type`: version 4, no flags, no fields.
 */
void efarm_pkt_init(struct efarm_pkt *pkt, uint8_t type);

/*
 * Write every header of *pkt (mandatory header, rma_iov[], REQ optional
 * headers, CTSDATA/HANDSHAKE optional fields) to `buf`, at most `cap` bytes,
 * and return its length in *hdr_length_p. Application data, including the
 * read_iov[] of long/runt-read packets, is the caller's to append. Flags
 * decide which optional parts are written. Pad and reserved bytes are zero.
 * Returns 0, -ENOSPC when cap is too small, or an EFARM_ERR_PKT_* code.
 */
int efarm_pkt_encode(const struct efarm_pkt *pkt, uint8_t *buf, size_t cap, size_t *hdr_length_p);

/* Entry `i` of a wire-format efa_rma_iov array (rma_iov or read_iov). */
void efarm_rma_iov_load(const uint8_t *array, uint32_t i, struct efarm_rma_iov *iov_p);
void efarm_rma_iov_store(uint8_t *array, uint32_t i, const struct efarm_rma_iov *iov);

/* HANDSHAKE extra_info word `i`; the caller checks i < nextra_p3 - 3. */
uint64_t efarm_pkt_extra_info(const struct efarm_pkt *pkt, uint32_t i);

/* Readable form, one field per line, as the `data` log level prints packets. */
void efarm_pkt_print_text(FILE *out, const struct efarm_pkt *pkt);

/* One JSON object on one line (the efarm-pktdump --json format). */
void efarm_pkt_print_json(FILE *out, const struct efarm_pkt *pkt);

#endif /* EFARM_PKT_H */
