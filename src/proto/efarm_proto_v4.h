/*
 * EFA RDM protocol v4: every constant and wire layout efarm speaks.
 *
 * Sections refer to the EFA RDM protocol v4 document (libfabric's
 * prov/efa/docs/efa_rdm_protocol_v4.md); "addenda" mark where libfabric's EFA
 * provider (the reference speaker of v4) puts something else on the wire than
 * the document says. Where they differ, this file follows the provider.
 *
 * The structs below describe the layouts and exist to be measured: their sizes
 * and key offsets are pinned with _Static_assert and the codec takes field
 * offsets from them with offsetof(). No code ever casts a packet buffer to one
 * of them; packets are read and written with explicit little-endian loads and
 * stores (efarm_byteorder.h). Only fixed-width members, naturally aligned, with
 * every pad spelled out, so the C layout is the wire layout on every ABI.
 */
#ifndef EFARM_PROTO_V4_H
#define EFARM_PROTO_V4_H

#include <stddef.h>
#include <stdint.h>

/* Section 1.3, table 1.3: the version byte of every packet. */
#define EFARM_PROTO_VERSION 4

/* Section 1.2 table 1.2, plus addenda "Packet type IDs missing from table 1.2". */
#define EFARM_PKT_RETIRED_RTS       1 /* deprecated: never sent in v4 */
#define EFARM_PKT_RETIRED_CONNACK   2 /* deprecated: never sent in v4 */
#define EFARM_PKT_CTS               3
#define EFARM_PKT_CTSDATA           4
#define EFARM_PKT_READRSP           5
#define EFARM_PKT_RESERVED_6        6 /* libfabric's RMA context, never on the wire */
#define EFARM_PKT_EOR               7
#define EFARM_PKT_ATOMRSP           8
#define EFARM_PKT_HANDSHAKE         9
#define EFARM_PKT_RECEIPT           10
#define EFARM_PKT_READ_NACK         11 /* addenda, section 4.7 */
#define EFARM_PKT_REQ_BEGIN         64 /* every type >= 64 is a REQ (section 3.1) */
#define EFARM_PKT_EAGER_MSGRTM      64
#define EFARM_PKT_EAGER_TAGRTM      65
#define EFARM_PKT_MEDIUM_MSGRTM     66
#define EFARM_PKT_MEDIUM_TAGRTM     67
#define EFARM_PKT_LONGCTS_MSGRTM    68
#define EFARM_PKT_LONGCTS_TAGRTM    69
#define EFARM_PKT_EAGER_RTW         70
#define EFARM_PKT_LONGCTS_RTW       71
#define EFARM_PKT_SHORT_RTR         72
#define EFARM_PKT_LONGCTS_RTR       73
#define EFARM_PKT_WRITE_RTA         74
#define EFARM_PKT_FETCH_RTA         75
#define EFARM_PKT_COMPARE_RTA       76
#define EFARM_PKT_LONGREAD_MSGRTM   128
#define EFARM_PKT_LONGREAD_TAGRTM   129
#define EFARM_PKT_LONGREAD_RTW      130
#define EFARM_PKT_RESERVED_READ_RTR 131 /* addenda: reserved, direct read sends no REQ */
#define EFARM_PKT_RESERVED_132      132
#define EFARM_PKT_DC_EAGER_MSGRTM   133
#define EFARM_PKT_DC_EAGER_TAGRTM   134
#define EFARM_PKT_DC_MEDIUM_MSGRTM  135
#define EFARM_PKT_DC_MEDIUM_TAGRTM  136
#define EFARM_PKT_DC_LONGCTS_MSGRTM 137
#define EFARM_PKT_DC_LONGCTS_TAGRTM 138
#define EFARM_PKT_DC_EAGER_RTW      139
#define EFARM_PKT_DC_LONGCTS_RTW    140
#define EFARM_PKT_DC_WRITE_RTA      141
#define EFARM_PKT_RUNTCTS_MSGRTM    142 /* addenda */
#define EFARM_PKT_RUNTCTS_TAGRTM    143
#define EFARM_PKT_RUNTCTS_RTW       144
#define EFARM_PKT_RUNTREAD_MSGRTM   145 /* addenda, section 4.5 */
#define EFARM_PKT_RUNTREAD_TAGRTM   146
#define EFARM_PKT_RUNTREAD_RTW      147
#define EFARM_PKT_TYPE_COUNT        256

/* Section 1.3 table 1.4: universal flag, bit 15. */
#define EFARM_PKT_FLAG_CONNID_HDR 0x8000u

/* Section 3.1 table 3.1: flags shared by all REQ packets. */
#define EFARM_REQ_OPT_RAW_ADDR_HDR 0x0001u
#define EFARM_REQ_OPT_CQ_DATA_HDR  0x0002u
#define EFARM_REQ_MSG              0x0004u
#define EFARM_REQ_TAGGED           0x0008u
#define EFARM_REQ_RMA              0x0010u
#define EFARM_REQ_ATOMIC           0x0020u
#define EFARM_REQ_READ_NACK        0x2000u /* addenda: LONGCTS_RTM sent after a READ_NACK */

/* Section 3.2 and addenda: CTS flag for a CTS that answers an RTR (emulated read). */
#define EFARM_CTS_FLAG_EMULATED_READ 0x0080u

/* Section 2.1.1 table 2.3 and addenda: HANDSHAKE optional fields. */
#define EFARM_HANDSHAKE_HOST_ID_HDR        0x0001u
#define EFARM_HANDSHAKE_DEVICE_VERSION_HDR 0x0002u
#define EFARM_HANDSHAKE_USER_RECV_QP_HDR   0x0004u

/* Section 2.1 table 2.1 and addenda: extra feature/request bits of extra_info[0]. */
#define EFARM_EXTRA_FEATURE_RDMA_READ              (1ull << 0)
#define EFARM_EXTRA_FEATURE_DELIVERY_COMPLETE      (1ull << 1)
#define EFARM_EXTRA_REQUEST_CONSTANT_HEADER_LENGTH (1ull << 2)
#define EFARM_EXTRA_REQUEST_CONNID_HEADER          (1ull << 3)
#define EFARM_EXTRA_FEATURE_RUNT_READ              (1ull << 4)
#define EFARM_EXTRA_FEATURE_RDMA_WRITE             (1ull << 5)
#define EFARM_EXTRA_FEATURE_READ_NACK              (1ull << 6)
/*
 * Bits the reference implementation defines beyond the addenda (its
 * efa_rdm_protocol.h): a request for the peer to send to a user receive QP
 * (paired with the HANDSHAKE USER_RECV_QP field) and unsolicited RDMA write
 * receive. efarm does not use them; they are named so logs can.
 */
#define EFARM_EXTRA_REQUEST_USER_RECV_QP           (1ull << 7)
#define EFARM_EXTRA_FEATURE_UNSOLICITED_WRITE_RECV (1ull << 8)
#define EFARM_EXTRA_FEATURE_COUNT                  9

/*
 * nextra_p3 is the number of extra_info words plus 3 (section 2.1). The
 * reference implementation never sends more than 256 words; we accept up to
 * that many so a peer cannot make us walk an arbitrarily long array.
 */
#define EFARM_HANDSHAKE_MAX_EXTRA_INFO 256

/* ---- Shared pieces ------------------------------------------------------ */

/* Section 1.3 table 1.3. */
struct efarm_wire_base_hdr {
    uint8_t type;
    uint8_t version;
    uint16_t flags;
};

/* Section 1.4 table 1.5. */
#define EFARM_GID_LEN 16
struct efarm_wire_raw_addr {
    uint8_t gid[EFARM_GID_LEN];
    uint16_t qpn;
    uint16_t pad;
    uint32_t connid;
    uint32_t reserved[2]; /* 8 bytes; two words keep the struct 4-aligned inside the REQ header */
};

/* Section 3.3 and addenda: 24 bytes. */
struct efarm_wire_rma_iov {
    uint64_t addr;
    uint64_t len;
    uint64_t key;
};

/*
 * Addenda "REQ optional headers": size (= 36: the address plus the padding that
 * follows it), the 32-byte raw address, 4 bytes of padding. 40 bytes.
 */
struct efarm_wire_req_opt_raw_addr {
    uint32_t size;
    struct efarm_wire_raw_addr addr;
    uint32_t padding;
};
#define EFARM_REQ_OPT_RAW_ADDR_SIZE_FIELD 36u
#define EFARM_REQ_OPT_CQ_DATA_LEN         8u
#define EFARM_REQ_OPT_CONNID_LEN          4u

/* Every optional field of HANDSHAKE and CTSDATA is 8 bytes with its padding. */
#define EFARM_OPT_FIELD_LEN 8u

/* ---- Non-REQ packets ---------------------------------------------------- */

/* CTS, section 3.2 table 3.6. */
struct efarm_wire_cts_hdr {
    struct efarm_wire_base_hdr base;
    uint32_t multiuse; /* connid with CONNID_HDR, else padding */
    uint32_t send_id;
    uint32_t recv_id;
    uint64_t recv_length;
};

/* CTSDATA, section 3.2 table 3.7; with CONNID_HDR followed by connid u32 + pad u32. */
struct efarm_wire_ctsdata_hdr {
    struct efarm_wire_base_hdr base;
    uint32_t recv_id;
    uint64_t seg_length;
    uint64_t seg_offset;
};

/* READRSP, addenda "Field corrections": recv_id precedes send_id. */
struct efarm_wire_readrsp_hdr {
    struct efarm_wire_base_hdr base;
    uint32_t multiuse;
    uint32_t recv_id;
    uint32_t send_id;
    uint64_t seg_length;
};

/* EOR, section 4.1 table 4.2. */
struct efarm_wire_eor_hdr {
    struct efarm_wire_base_hdr base;
    uint32_t send_id;
    uint32_t recv_id;
    uint32_t multiuse;
};

/* ATOMRSP, section 3.3 table 3.15. */
struct efarm_wire_atomrsp_hdr {
    struct efarm_wire_base_hdr base;
    uint32_t multiuse;
    uint32_t reserved;
    uint32_t recv_id;
    uint64_t seg_length;
};

/* HANDSHAKE, section 2.1 table 2.2: followed by extra_info[nextra_p3 - 3]. */
struct efarm_wire_handshake_hdr {
    struct efarm_wire_base_hdr base;
    uint32_t nextra_p3;
};

/* RECEIPT, addenda: send_id, msg_id, multiuse. */
struct efarm_wire_receipt_hdr {
    struct efarm_wire_base_hdr base;
    uint32_t send_id;
    uint32_t msg_id;
    uint32_t multiuse;
};

/* READ_NACK, section 4.7 and addenda. */
struct efarm_wire_read_nack_hdr {
    struct efarm_wire_base_hdr base;
    uint32_t send_id;
    uint32_t recv_id;
    uint32_t multiuse;
};

/* ---- REQ packets: RTM (two-sided) --------------------------------------- */

/* EAGER_MSGRTM / EAGER_TAGRTM, section 3.2 table 3.3. */
struct efarm_wire_eager_rtm_hdr {
    struct efarm_wire_base_hdr base;
    uint32_t msg_id;
    uint64_t tag; /* TAGRTM only */
};

/* MEDIUM_*RTM, addenda: msg_length (total), seg_offset, tag. */
struct efarm_wire_medium_rtm_hdr {
    struct efarm_wire_base_hdr base;
    uint32_t msg_id;
    uint64_t msg_length;
    uint64_t seg_offset;
    uint64_t tag; /* TAGRTM only */
};

/* LONGCTS_*RTM (and DC_LONGCTS_*RTM), section 3.2 table 3.5. */
struct efarm_wire_longcts_rtm_hdr {
    struct efarm_wire_base_hdr base;
    uint32_t msg_id;
    uint64_t msg_length;
    uint32_t send_id;
    uint32_t credit_request;
    uint64_t tag; /* TAGRTM only */
};

/* LONGREAD_*RTM, section 4.1 table 4.1; followed by REQ opt headers then read_iov[]. */
struct efarm_wire_longread_rtm_hdr {
    struct efarm_wire_base_hdr base;
    uint32_t msg_id;
    uint64_t msg_length;
    uint32_t send_id;
    uint32_t read_iov_count;
    uint64_t tag; /* TAGRTM only */
};

/* DC_EAGER_*RTM, addenda. */
struct efarm_wire_dc_eager_rtm_hdr {
    struct efarm_wire_base_hdr base;
    uint32_t msg_id;
    uint32_t send_id;
    uint32_t padding;
    uint64_t tag; /* TAGRTM only */
};

/* DC_MEDIUM_*RTM, addenda. */
struct efarm_wire_dc_medium_rtm_hdr {
    struct efarm_wire_base_hdr base;
    uint32_t msg_id;
    uint32_t send_id;
    uint32_t padding;
    uint64_t msg_length;
    uint64_t seg_offset;
    uint64_t tag; /* TAGRTM only */
};

/* RUNTCTS_*RTM (addenda) and RUNTREAD_*RTM (section 4.5 table 4.4). */
struct efarm_wire_runt_rtm_hdr {
    struct efarm_wire_base_hdr base;
    uint32_t msg_id;
    uint64_t msg_length;
    uint32_t send_id;
    uint32_t credit_request; /* read_iov_count in RUNTREAD */
    uint64_t seg_offset;
    uint64_t runt_length;
    uint64_t tag; /* TAGRTM only */
};

/* ---- REQ packets: RTW, RTR, RTA (one-sided); each followed by rma_iov[] -- */

/* EAGER_RTW, section 3.3 table 3.8. */
struct efarm_wire_eager_rtw_hdr {
    struct efarm_wire_base_hdr base;
    uint32_t rma_iov_count;
};

/* LONGCTS_RTW and DC_LONGCTS_RTW (table 3.9); LONGREAD_RTW (table 4.3) same shape. */
struct efarm_wire_longcts_rtw_hdr {
    struct efarm_wire_base_hdr base;
    uint32_t rma_iov_count;
    uint64_t msg_length;
    uint32_t send_id;
    uint32_t credit_request; /* read_iov_count in LONGREAD_RTW */
};

/* SHORT_RTR and LONGCTS_RTR, section 3.3 tables 3.10 and 3.12. */
struct efarm_wire_rtr_hdr {
    struct efarm_wire_base_hdr base;
    uint32_t rma_iov_count;
    uint64_t msg_length;
    uint32_t recv_id;
    uint32_t recv_length; /* padding in SHORT_RTR */
};

/* WRITE/FETCH/COMPARE_RTA (tables 3.13, 3.14) and DC_WRITE_RTA (addenda). */
struct efarm_wire_rta_hdr {
    struct efarm_wire_base_hdr base;
    uint32_t msg_id;
    uint32_t rma_iov_count;
    uint32_t atomic_datatype;
    uint32_t atomic_op;
    uint32_t last; /* WRITE_RTA padding, FETCH/COMPARE recv_id, DC_WRITE send_id */
};

/* DC_EAGER_RTW, addenda. */
struct efarm_wire_dc_eager_rtw_hdr {
    struct efarm_wire_base_hdr base;
    uint32_t rma_iov_count;
    uint32_t send_id;
    uint32_t padding;
};

/* RUNTCTS_RTW and RUNTREAD_RTW, addenda. */
struct efarm_wire_runt_rtw_hdr {
    struct efarm_wire_base_hdr base;
    uint32_t rma_iov_count;
    uint64_t msg_length;
    uint32_t send_id;
    uint32_t credit_request; /* read_iov_count in RUNTREAD_RTW */
    uint64_t seg_offset;
    uint64_t runt_length;
};

/* Mandatory header lengths: the MSG variant of an RTM is its TAG variant less the tag. */
#define EFARM_WIRE_SIZE_MSG(s) (offsetof(s, tag))
#define EFARM_WIRE_SIZE_TAG(s) (sizeof(s))

#define EFARM_WIRE_ASSERT_SIZE(s, n) _Static_assert(sizeof(struct s) == (n), #s " is " #n " bytes")
#define EFARM_WIRE_ASSERT_OFFSET(s, f, n) \
    _Static_assert(offsetof(struct s, f) == (n), #s "." #f " is at byte " #n)

EFARM_WIRE_ASSERT_SIZE(efarm_wire_base_hdr, 4);
EFARM_WIRE_ASSERT_SIZE(efarm_wire_raw_addr, 32);
EFARM_WIRE_ASSERT_OFFSET(efarm_wire_raw_addr, connid, 20);
EFARM_WIRE_ASSERT_SIZE(efarm_wire_rma_iov, 24);
EFARM_WIRE_ASSERT_SIZE(efarm_wire_req_opt_raw_addr, 40);
EFARM_WIRE_ASSERT_OFFSET(efarm_wire_req_opt_raw_addr, addr, 4);
EFARM_WIRE_ASSERT_SIZE(efarm_wire_cts_hdr, 24);
EFARM_WIRE_ASSERT_OFFSET(efarm_wire_cts_hdr, recv_length, 16);
EFARM_WIRE_ASSERT_SIZE(efarm_wire_ctsdata_hdr, 24);
EFARM_WIRE_ASSERT_SIZE(efarm_wire_readrsp_hdr, 24);
EFARM_WIRE_ASSERT_OFFSET(efarm_wire_readrsp_hdr, recv_id, 8);
EFARM_WIRE_ASSERT_SIZE(efarm_wire_eor_hdr, 16);
EFARM_WIRE_ASSERT_SIZE(efarm_wire_atomrsp_hdr, 24);
EFARM_WIRE_ASSERT_SIZE(efarm_wire_handshake_hdr, 8);
EFARM_WIRE_ASSERT_SIZE(efarm_wire_receipt_hdr, 16);
EFARM_WIRE_ASSERT_SIZE(efarm_wire_read_nack_hdr, 16);
EFARM_WIRE_ASSERT_SIZE(efarm_wire_eager_rtm_hdr, 16);
EFARM_WIRE_ASSERT_OFFSET(efarm_wire_eager_rtm_hdr, tag, 8);
EFARM_WIRE_ASSERT_SIZE(efarm_wire_medium_rtm_hdr, 32);
EFARM_WIRE_ASSERT_OFFSET(efarm_wire_medium_rtm_hdr, tag, 24);
EFARM_WIRE_ASSERT_SIZE(efarm_wire_longcts_rtm_hdr, 32);
EFARM_WIRE_ASSERT_OFFSET(efarm_wire_longcts_rtm_hdr, credit_request, 20);
EFARM_WIRE_ASSERT_SIZE(efarm_wire_longread_rtm_hdr, 32);
EFARM_WIRE_ASSERT_SIZE(efarm_wire_dc_eager_rtm_hdr, 24);
EFARM_WIRE_ASSERT_OFFSET(efarm_wire_dc_eager_rtm_hdr, tag, 16);
EFARM_WIRE_ASSERT_SIZE(efarm_wire_dc_medium_rtm_hdr, 40);
EFARM_WIRE_ASSERT_OFFSET(efarm_wire_dc_medium_rtm_hdr, msg_length, 16);
EFARM_WIRE_ASSERT_SIZE(efarm_wire_runt_rtm_hdr, 48);
EFARM_WIRE_ASSERT_OFFSET(efarm_wire_runt_rtm_hdr, runt_length, 32);
EFARM_WIRE_ASSERT_SIZE(efarm_wire_eager_rtw_hdr, 8);
EFARM_WIRE_ASSERT_SIZE(efarm_wire_longcts_rtw_hdr, 24);
EFARM_WIRE_ASSERT_SIZE(efarm_wire_rtr_hdr, 24);
EFARM_WIRE_ASSERT_SIZE(efarm_wire_rta_hdr, 24);
EFARM_WIRE_ASSERT_OFFSET(efarm_wire_rta_hdr, last, 20);
EFARM_WIRE_ASSERT_SIZE(efarm_wire_dc_eager_rtw_hdr, 16);
EFARM_WIRE_ASSERT_SIZE(efarm_wire_runt_rtw_hdr, 40);
_Static_assert(EFARM_WIRE_SIZE_MSG(struct efarm_wire_eager_rtm_hdr) == 8, "EAGER_MSGRTM is 8");
_Static_assert(EFARM_WIRE_SIZE_MSG(struct efarm_wire_medium_rtm_hdr) == 24, "MEDIUM_MSGRTM is 24");
_Static_assert(EFARM_WIRE_SIZE_MSG(struct efarm_wire_longcts_rtm_hdr) == 24, "LONGCTS_MSGRTM 24");
_Static_assert(EFARM_WIRE_SIZE_MSG(struct efarm_wire_dc_eager_rtm_hdr) == 16, "DC_EAGER_MSGRTM 16");
_Static_assert(EFARM_WIRE_SIZE_MSG(struct efarm_wire_dc_medium_rtm_hdr) == 32, "DC_MEDIUM_MSG 32");
_Static_assert(EFARM_WIRE_SIZE_MSG(struct efarm_wire_runt_rtm_hdr) == 40, "RUNT*_MSGRTM is 40");

#endif /* EFARM_PROTO_V4_H */
