/*
 * Golden packets for protocol v4, written from the spec tables, not from the
 * codec: efa_rdm_protocol_v4.md (table 1.2 types, 1.3 base header, 1.5 raw
 * address, 2.2/2.3 HANDSHAKE, 3.x and 4.x headers) as corrected by the wire of
 * libfabric's provider (doc/PROTOCOL-V4.md), which wins where the two differ (MEDIUM msg_length,
 * READRSP recv_id/send_id order, RECEIPT and READ_NACK layouts, DC and RUNT* headers, REQ optional
 * header sizes and order, HANDSHAKE optional fields).
 *
 * Every integer is little-endian; each line of .hex is one wire field, with a
 * comment naming it. Pad and reserved bytes are zero. REQ packets are laid
 * out as: mandatory header, rma_iov[] (types that carry it), raw-address
 * header (size 36, 32-byte address, 4 pad), CQ data (8), connid (4), then
 * application data. The read_iov[] of LONGREAD and RUNTREAD packets is
 * application data: it counts in the payload, not in hdr_length, and is not
 * listed in .rma_iov.
 *
 * Flags are the ones libfabric's EFA provider sets: REQ_MSG (plus REQ_TAGGED)
 * on RTMs, REQ_RMA on RTW/RTR, REQ_ATOMIC on RTA. Values are chosen with
 * distinct bytes so that a swapped byte order or a shifted offset shows.
 */
#include <ctype.h>
#include <stddef.h>
#include <stdint.h>

#include "efarm_hex.h"
#include "efarm_pkt.h"
#include "efarm_proto_v4.h"
#include "golden_vectors.h"

long golden_hex_parse(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = 0;
    int hi = -1;

    if (!hex)
        return -1;
    for (; *hex; hex++) {
        int d;

        if (isspace((unsigned char)*hex))
            continue;
        d = efarm_hex_digit((unsigned char)*hex);
        if (d < 0)
            return -1;
        if (hi < 0) {
            hi = d;
            continue;
        }
        if (n >= cap || !out)
            return -1;
        out[n++] = (uint8_t)(hi << 4 | d);
        hi = -1;
    }
    if (hi >= 0)
        return -1;
    return (long)n;
}

/*
 * The two raw addresses used below (section 1.4 table 1.5):
 *   gid fe80::41d:2c3b:4a59:6877, qpn 0xabcd, connid 0xc0de1234
 *   gid 2001:db8:85a3:1122:3344:8a2e:370:7334, qpn 0x1f2e, connid 0x7a6b5c4d
 * The raw-address header's connid is part of the address, not a CONNID field.
 */

/* One wire field per line, each with its comment: keep clang-format away. */
/* clang-format off */
const struct golden_vector g_golden_vectors[] = {
    {
        .name = "CTS_basic",
        .hex = "03"                 /* type 3 CTS */
               "04"                 /* version 4 */
               "0000"               /* flags 0x0000 none */
               "00000000"           /* multiuse: padding 0 */
               "8d7c6b5a"           /* send_id 0x5a6b7c8d */
               "87654321"           /* recv_id 0x21436587 */
               "0040000003000000",  /* recv_length 0x300004000 */
        .type = EFARM_PKT_CTS,
        .flags = 0,
        .hdr_length = 24,
        .nfields = 3,
        .fields = {
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c8d},
            {EFARM_PKT_F_RECV_ID, 0x21436587},
            {EFARM_PKT_F_RECV_LENGTH, 0x300004000},
        },
    },
    {
        .name = "CTS_connid",
        .hex = "03"                 /* type 3 CTS */
               "04"                 /* version 4 */
               "0080"               /* flags 0x8000 CONNID_HDR */
               "d4c3b2a1"           /* multiuse: connid 0xa1b2c3d4 */
               "8d7c6b5a"           /* send_id 0x5a6b7c8d */
               "87654321"           /* recv_id 0x21436587 */
               "0040000003000000",  /* recv_length 0x300004000 */
        .type = EFARM_PKT_CTS,
        .flags = EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 24,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_CONNID, 0xa1b2c3d4},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c8d},
            {EFARM_PKT_F_RECV_ID, 0x21436587},
            {EFARM_PKT_F_RECV_LENGTH, 0x300004000},
        },
    },
    {
        .name = "CTS_emulated_read",
        .hex = "03"                 /* type 3 CTS */
               "04"                 /* version 4 */
               "8000"               /* flags 0x0080 EMULATED_READ */
               "00000000"           /* multiuse: padding 0 */
               "eeffc000"           /* send_id 0xc0ffee */
               "0100007f"           /* recv_id 0x7f000001 */
               "0010000000000000",  /* recv_length 0x1000 */
        .type = EFARM_PKT_CTS,
        .flags = EFARM_CTS_FLAG_EMULATED_READ,
        .hdr_length = 24,
        .nfields = 3,
        .fields = {
            {EFARM_PKT_F_SEND_ID, 0xc0ffee},
            {EFARM_PKT_F_RECV_ID, 0x7f000001},
            {EFARM_PKT_F_RECV_LENGTH, 0x1000},
        },
    },
    {
        .name = "CTS_emulated_read_connid",
        .hex = "03"                 /* type 3 CTS */
               "04"                 /* version 4 */
               "8080"               /* flags 0x8080 EMULATED_READ|CONNID_HDR */
               "81706f5e"           /* multiuse: connid 0x5e6f7081 */
               "8d7c6b5a"           /* send_id 0x5a6b7c8d */
               "87654321"           /* recv_id 0x21436587 */
               "00ffffff01000000",  /* recv_length 0x1ffffff00 */
        .type = EFARM_PKT_CTS,
        .flags = EFARM_CTS_FLAG_EMULATED_READ | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 24,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_CONNID, 0x5e6f7081},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c8d},
            {EFARM_PKT_F_RECV_ID, 0x21436587},
            {EFARM_PKT_F_RECV_LENGTH, 0x1ffffff00},
        },
    },
    {
        .name = "CTSDATA_data",
        .hex = "04"                 /* type 4 CTSDATA */
               "04"                 /* version 4 */
               "0000"               /* flags 0x0000 none */
               "87654321"           /* recv_id 0x21436587 */
               "0500000000000000"   /* seg_length 5 */
               "0020000001000000"   /* seg_offset 0x100002000 */
               "d0d1d2d3d4",        /* application data, 5 bytes */
        .type = EFARM_PKT_CTSDATA,
        .flags = 0,
        .hdr_length = 24,
        .nfields = 3,
        .fields = {
            {EFARM_PKT_F_RECV_ID, 0x21436587},
            {EFARM_PKT_F_SEG_LENGTH, 0x5},
            {EFARM_PKT_F_SEG_OFFSET, 0x100002000},
        },
    },
    {
        .name = "CTSDATA_connid_data",
        .hex = "04"                 /* type 4 CTSDATA */
               "04"                 /* version 4 */
               "0080"               /* flags 0x8000 CONNID_HDR */
               "87654321"           /* recv_id 0x21436587 */
               "0700000000000000"   /* seg_length 7 */
               "0020000001000000"   /* seg_offset 0x100002000 */
               "d4c3b2a1"           /* connid 0xa1b2c3d4 */
               "00000000"           /* padding 0 */
               "d0d1d2d3d4d5d6",    /* application data, 7 bytes */
        .type = EFARM_PKT_CTSDATA,
        .flags = EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 32,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_RECV_ID, 0x21436587},
            {EFARM_PKT_F_SEG_LENGTH, 0x7},
            {EFARM_PKT_F_SEG_OFFSET, 0x100002000},
            {EFARM_PKT_F_CONNID, 0xa1b2c3d4},
        },
    },
    {
        .name = "CTSDATA_connid_1byte",
        .hex = "04"                 /* type 4 CTSDATA */
               "04"                 /* version 4 */
               "0080"               /* flags 0x8000 CONNID_HDR */
               "ccbbaa99"           /* recv_id 0x99aabbcc */
               "0100000000000000"   /* seg_length 1 */
               "feffffff00000000"   /* seg_offset 0xfffffffe */
               "81706f5e"           /* connid 0x5e6f7081 */
               "00000000"           /* padding 0 */
               "d0",                /* application data, 1 byte */
        .type = EFARM_PKT_CTSDATA,
        .flags = EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 32,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_RECV_ID, 0x99aabbcc},
            {EFARM_PKT_F_SEG_LENGTH, 0x1},
            {EFARM_PKT_F_SEG_OFFSET, 0xfffffffe},
            {EFARM_PKT_F_CONNID, 0x5e6f7081},
        },
    },
    {
        .name = "READRSP_data",
        .hex = "05"                 /* type 5 READRSP */
               "04"                 /* version 4 */
               "0000"               /* flags 0x0000 none */
               "00000000"           /* multiuse: padding 0 */
               "88654321"           /* recv_id 0x21436588 */
               "8e7c6b5a"           /* send_id 0x5a6b7c8e */
               "0600000000000000"   /* seg_length 6 */
               "303132333435",      /* read data, 6 bytes */
        .type = EFARM_PKT_READRSP,
        .flags = 0,
        .hdr_length = 24,
        .nfields = 3,
        .fields = {
            {EFARM_PKT_F_RECV_ID, 0x21436588},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c8e},
            {EFARM_PKT_F_SEG_LENGTH, 0x6},
        },
    },
    {
        .name = "READRSP_connid_data",
        .hex = "05"                 /* type 5 READRSP */
               "04"                 /* version 4 */
               "0080"               /* flags 0x8000 CONNID_HDR */
               "d4c3b2a1"           /* multiuse: connid 0xa1b2c3d4 */
               "88654321"           /* recv_id 0x21436588 */
               "8e7c6b5a"           /* send_id 0x5a6b7c8e */
               "0300000000000000"   /* seg_length 3 */
               "303132",            /* read data, 3 bytes */
        .type = EFARM_PKT_READRSP,
        .flags = EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 24,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_CONNID, 0xa1b2c3d4},
            {EFARM_PKT_F_RECV_ID, 0x21436588},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c8e},
            {EFARM_PKT_F_SEG_LENGTH, 0x3},
        },
    },
    {
        .name = "EOR_basic",
        .hex = "07"         /* type 7 EOR */
               "04"         /* version 4 */
               "0000"       /* flags 0x0000 none */
               "997c6b5a"   /* send_id 0x5a6b7c99 */
               "8c654321"   /* recv_id 0x2143658c */
               "00000000",  /* multiuse: padding 0 */
        .type = EFARM_PKT_EOR,
        .flags = 0,
        .hdr_length = 16,
        .nfields = 2,
        .fields = {
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c99},
            {EFARM_PKT_F_RECV_ID, 0x2143658c},
        },
    },
    {
        .name = "EOR_connid",
        .hex = "07"         /* type 7 EOR */
               "04"         /* version 4 */
               "0080"       /* flags 0x8000 CONNID_HDR */
               "40302010"   /* send_id 0x10203040 */
               "80706050"   /* recv_id 0x50607080 */
               "d4c3b2a1",  /* multiuse: connid 0xa1b2c3d4 */
        .type = EFARM_PKT_EOR,
        .flags = EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 16,
        .nfields = 3,
        .fields = {
            {EFARM_PKT_F_SEND_ID, 0x10203040},
            {EFARM_PKT_F_RECV_ID, 0x50607080},
            {EFARM_PKT_F_CONNID, 0xa1b2c3d4},
        },
    },
    {
        .name = "ATOMRSP_data",
        .hex = "08"                 /* type 8 ATOMRSP */
               "04"                 /* version 4 */
               "0000"               /* flags 0x0000 none */
               "00000000"           /* multiuse: padding 0 */
               "00000000"           /* reserved 0 */
               "89654321"           /* recv_id 0x21436589 */
               "0800000000000000"   /* seg_length 8 */
               "6061626364656667",  /* atomic response data, 8 bytes */
        .type = EFARM_PKT_ATOMRSP,
        .flags = 0,
        .hdr_length = 24,
        .nfields = 2,
        .fields = {
            {EFARM_PKT_F_RECV_ID, 0x21436589},
            {EFARM_PKT_F_SEG_LENGTH, 0x8},
        },
    },
    {
        .name = "ATOMRSP_connid_data",
        .hex = "08"                 /* type 8 ATOMRSP */
               "04"                 /* version 4 */
               "0080"               /* flags 0x8000 CONNID_HDR */
               "81706f5e"           /* multiuse: connid 0x5e6f7081 */
               "00000000"           /* reserved 0 */
               "89654321"           /* recv_id 0x21436589 */
               "0400000000000000"   /* seg_length 4 */
               "60616263",          /* atomic response data, 4 bytes */
        .type = EFARM_PKT_ATOMRSP,
        .flags = EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 24,
        .nfields = 3,
        .fields = {
            {EFARM_PKT_F_CONNID, 0x5e6f7081},
            {EFARM_PKT_F_RECV_ID, 0x21436589},
            {EFARM_PKT_F_SEG_LENGTH, 0x4},
        },
    },
    {
        .name = "HANDSHAKE_p3",
        .hex = "09"         /* type 9 HANDSHAKE */
               "04"         /* version 4 */
               "0000"       /* flags 0x0000 none */
               "03000000",  /* nextra_p3 3 */
        .type = EFARM_PKT_HANDSHAKE,
        .flags = 0,
        .hdr_length = 8,
        .nfields = 1,
        .fields = {
            {EFARM_PKT_F_NEXTRA_P3, 0x3},
        },
    },
    {
        .name = "HANDSHAKE_p4_features",
        .hex = "09"                 /* type 9 HANDSHAKE */
               "04"                 /* version 4 */
               "0000"               /* flags 0x0000 none */
               "04000000"           /* nextra_p3 4 */
               "7f00000000000000",  /* extra_info[0] 0x7f */
        .type = EFARM_PKT_HANDSHAKE,
        .flags = 0,
        .hdr_length = 16,
        .nfields = 1,
        .fields = {
            {EFARM_PKT_F_NEXTRA_P3, 0x4},
        },
        .nextra_info = 1,
        .extra_info = {0x7f},
    },
    {
        .name = "HANDSHAKE_p5",
        .hex = "09"                 /* type 9 HANDSHAKE */
               "04"                 /* version 4 */
               "0000"               /* flags 0x0000 none */
               "05000000"           /* nextra_p3 5 */
               "5b00000000000000"   /* extra_info[0] 0x5b */
               "0100000000000080",  /* extra_info[1] 0x8000000000000001 */
        .type = EFARM_PKT_HANDSHAKE,
        .flags = 0,
        .hdr_length = 24,
        .nfields = 1,
        .fields = {
            {EFARM_PKT_F_NEXTRA_P3, 0x5},
        },
        .nextra_info = 2,
        .extra_info = {0x5b, 0x8000000000000001},
    },
    {
        .name = "HANDSHAKE_p4_connid",
        .hex = "09"                 /* type 9 HANDSHAKE */
               "04"                 /* version 4 */
               "0080"               /* flags 0x8000 CONNID */
               "04000000"           /* nextra_p3 4 */
               "4b00000000000000"   /* extra_info[0] 0x4b */
               "d4c3b2a1"           /* connid 0xa1b2c3d4 */
               "00000000",          /* padding 0 */
        .type = EFARM_PKT_HANDSHAKE,
        .flags = EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 24,
        .nfields = 2,
        .fields = {
            {EFARM_PKT_F_NEXTRA_P3, 0x4},
            {EFARM_PKT_F_CONNID, 0xa1b2c3d4},
        },
        .nextra_info = 1,
        .extra_info = {0x4b},
    },
    {
        .name = "HANDSHAKE_p4_host_id",
        .hex = "09"                 /* type 9 HANDSHAKE */
               "04"                 /* version 4 */
               "0100"               /* flags 0x0001 HOST_ID */
               "04000000"           /* nextra_p3 4 */
               "1300000000000000"   /* extra_info[0] 0x13 */
               "78563412f0debc0a",  /* host_id 0xabcdef012345678 */
        .type = EFARM_PKT_HANDSHAKE,
        .flags = EFARM_HANDSHAKE_HOST_ID_HDR,
        .hdr_length = 24,
        .nfields = 2,
        .fields = {
            {EFARM_PKT_F_NEXTRA_P3, 0x4},
            {EFARM_PKT_F_HOST_ID, 0xabcdef012345678},
        },
        .nextra_info = 1,
        .extra_info = {0x13},
    },
    {
        .name = "HANDSHAKE_p4_device_version",
        .hex = "09"                 /* type 9 HANDSHAKE */
               "04"                 /* version 4 */
               "0200"               /* flags 0x0002 DEVICE_VERSION */
               "04000000"           /* nextra_p3 4 */
               "3300000000000000"   /* extra_info[0] 0x33 */
               "0300a2ef"           /* device_version 0xefa20003 */
               "00000000",          /* reserved 0 */
        .type = EFARM_PKT_HANDSHAKE,
        .flags = EFARM_HANDSHAKE_DEVICE_VERSION_HDR,
        .hdr_length = 24,
        .nfields = 2,
        .fields = {
            {EFARM_PKT_F_NEXTRA_P3, 0x4},
            {EFARM_PKT_F_DEVICE_VERSION, 0xefa20003},
        },
        .nextra_info = 1,
        .extra_info = {0x33},
    },
    {
        .name = "HANDSHAKE_p4_user_recv_qp",
        .hex = "09"                 /* type 9 HANDSHAKE */
               "04"                 /* version 4 */
               "0400"               /* flags 0x0004 USER_RECV_QP */
               "04000000"           /* nextra_p3 4 */
               "0b00000000000000"   /* extra_info[0] 0xb */
               "45230100"           /* user_recv_qp qpn 0x12345 */
               "11eeffc0",          /* user_recv_qp qkey 0xc0ffee11 */
        .type = EFARM_PKT_HANDSHAKE,
        .flags = EFARM_HANDSHAKE_USER_RECV_QP_HDR,
        .hdr_length = 24,
        .nfields = 1,
        .fields = {
            {EFARM_PKT_F_NEXTRA_P3, 0x4},
        },
        .nextra_info = 1,
        .extra_info = {0xb},
        .has_user_recv_qp = 1,
        .user_recv_qpn = 0x12345,
        .user_recv_qkey = 0xc0ffee11,
    },
    {
        .name = "HANDSHAKE_p4_host_id_device_version",
        .hex = "09"                 /* type 9 HANDSHAKE */
               "04"                 /* version 4 */
               "0300"               /* flags 0x0003 HOST_ID|DEVICE_VERSION */
               "04000000"           /* nextra_p3 4 */
               "7f00000000000000"   /* extra_info[0] 0x7f */
               "8090a0b0c0d0e0f0"   /* host_id 0xf0e0d0c0b0a09080 */
               "02000100"           /* device_version 0x10002 */
               "00000000",          /* reserved 0 */
        .type = EFARM_PKT_HANDSHAKE,
        .flags = EFARM_HANDSHAKE_HOST_ID_HDR | EFARM_HANDSHAKE_DEVICE_VERSION_HDR,
        .hdr_length = 32,
        .nfields = 3,
        .fields = {
            {EFARM_PKT_F_NEXTRA_P3, 0x4},
            {EFARM_PKT_F_HOST_ID, 0xf0e0d0c0b0a09080},
            {EFARM_PKT_F_DEVICE_VERSION, 0x10002},
        },
        .nextra_info = 1,
        .extra_info = {0x7f},
    },
    {
        .name = "HANDSHAKE_p3_connid_user_recv_qp",
        .hex = "09"         /* type 9 HANDSHAKE */
               "04"         /* version 4 */
               "0480"       /* flags 0x8004 USER_RECV_QP|CONNID */
               "03000000"   /* nextra_p3 3 */
               "81706f5e"   /* connid 0x5e6f7081 */
               "00000000"   /* padding 0 */
               "efcdab00"   /* user_recv_qp qpn 0xabcdef */
               "44332211",  /* user_recv_qp qkey 0x11223344 */
        .type = EFARM_PKT_HANDSHAKE,
        .flags = EFARM_HANDSHAKE_USER_RECV_QP_HDR | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 24,
        .nfields = 2,
        .fields = {
            {EFARM_PKT_F_NEXTRA_P3, 0x3},
            {EFARM_PKT_F_CONNID, 0x5e6f7081},
        },
        .has_user_recv_qp = 1,
        .user_recv_qpn = 0xabcdef,
        .user_recv_qkey = 0x11223344,
    },
    {
        .name = "HANDSHAKE_p4_all",
        .hex = "09"                 /* type 9 HANDSHAKE */
               "04"                 /* version 4 */
               "0780"               /* flags 0x8007 HOST_ID|DEVICE_VERSION|USER_RECV_QP|CONNID */
               "04000000"           /* nextra_p3 4 */
               "7b00000000000000"   /* extra_info[0] 0x7b */
               "d4c3b2a1"           /* connid 0xa1b2c3d4 */
               "00000000"           /* padding 0 */
               "78563412f0debc0a"   /* host_id 0xabcdef012345678 */
               "0300a2ef"           /* device_version 0xefa20003 */
               "00000000"           /* reserved 0 */
               "45230100"           /* user_recv_qp qpn 0x12345 */
               "11eeffc0",          /* user_recv_qp qkey 0xc0ffee11 */
        .type = EFARM_PKT_HANDSHAKE,
        .flags = EFARM_HANDSHAKE_HOST_ID_HDR | EFARM_HANDSHAKE_DEVICE_VERSION_HDR |
                 EFARM_HANDSHAKE_USER_RECV_QP_HDR | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 48,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_NEXTRA_P3, 0x4},
            {EFARM_PKT_F_CONNID, 0xa1b2c3d4},
            {EFARM_PKT_F_HOST_ID, 0xabcdef012345678},
            {EFARM_PKT_F_DEVICE_VERSION, 0xefa20003},
        },
        .nextra_info = 1,
        .extra_info = {0x7b},
        .has_user_recv_qp = 1,
        .user_recv_qpn = 0x12345,
        .user_recv_qkey = 0xc0ffee11,
    },
    {
        .name = "HANDSHAKE_p5_all",
        .hex = "09"                 /* type 9 HANDSHAKE */
               "04"                 /* version 4 */
               "0780"               /* flags 0x8007 HOST_ID|DEVICE_VERSION|USER_RECV_QP|CONNID */
               "05000000"           /* nextra_p3 5 */
               "7f00000000000000"   /* extra_info[0] 0x7f */
               "0001000000000000"   /* extra_info[1] 0x100 */
               "98badcfe"           /* connid 0xfedcba98 */
               "00000000"           /* padding 0 */
               "8877665544332211"   /* host_id 0x1122334455667788 */
               "a1ef0000"           /* device_version 0xefa1 */
               "00000000"           /* reserved 0 */
               "badcfe00"           /* user_recv_qp qpn 0xfedcba */
               "efcdab89",          /* user_recv_qp qkey 0x89abcdef */
        .type = EFARM_PKT_HANDSHAKE,
        .flags = EFARM_HANDSHAKE_HOST_ID_HDR | EFARM_HANDSHAKE_DEVICE_VERSION_HDR |
                 EFARM_HANDSHAKE_USER_RECV_QP_HDR | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 56,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_NEXTRA_P3, 0x5},
            {EFARM_PKT_F_CONNID, 0xfedcba98},
            {EFARM_PKT_F_HOST_ID, 0x1122334455667788},
            {EFARM_PKT_F_DEVICE_VERSION, 0xefa1},
        },
        .nextra_info = 2,
        .extra_info = {0x7f, 0x100},
        .has_user_recv_qp = 1,
        .user_recv_qpn = 0xfedcba,
        .user_recv_qkey = 0x89abcdef,
    },
    {
        .name = "RECEIPT_basic",
        .hex = "0a"         /* type 10 RECEIPT */
               "04"         /* version 4 */
               "0000"       /* flags 0x0000 none */
               "9a7c6b5a"   /* send_id 0x5a6b7c9a */
               "64030201"   /* msg_id 0x1020364 */
               "00000000",  /* multiuse: padding 0 */
        .type = EFARM_PKT_RECEIPT,
        .flags = 0,
        .hdr_length = 16,
        .nfields = 2,
        .fields = {
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c9a},
            {EFARM_PKT_F_MSG_ID, 0x1020364},
        },
    },
    {
        .name = "RECEIPT_connid",
        .hex = "0a"         /* type 10 RECEIPT */
               "04"         /* version 4 */
               "0080"       /* flags 0x8000 CONNID_HDR */
               "0df0ad0b"   /* send_id 0xbadf00d */
               "feffffff"   /* msg_id 0xfffffffe */
               "d4c3b2a1",  /* multiuse: connid 0xa1b2c3d4 */
        .type = EFARM_PKT_RECEIPT,
        .flags = EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 16,
        .nfields = 3,
        .fields = {
            {EFARM_PKT_F_SEND_ID, 0xbadf00d},
            {EFARM_PKT_F_MSG_ID, 0xfffffffe},
            {EFARM_PKT_F_CONNID, 0xa1b2c3d4},
        },
    },
    {
        .name = "READ_NACK_basic",
        .hex = "0b"         /* type 11 READ_NACK */
               "04"         /* version 4 */
               "0000"       /* flags 0x0000 none */
               "9b7c6b5a"   /* send_id 0x5a6b7c9b */
               "8d654321"   /* recv_id 0x2143658d */
               "00000000",  /* multiuse: padding 0 */
        .type = EFARM_PKT_READ_NACK,
        .flags = 0,
        .hdr_length = 16,
        .nfields = 2,
        .fields = {
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c9b},
            {EFARM_PKT_F_RECV_ID, 0x2143658d},
        },
    },
    {
        .name = "READ_NACK_connid",
        .hex = "0b"         /* type 11 READ_NACK */
               "04"         /* version 4 */
               "0080"       /* flags 0x8000 CONNID_HDR */
               "26594131"   /* send_id 0x31415926 */
               "18281827"   /* recv_id 0x27182818 */
               "81706f5e",  /* multiuse: connid 0x5e6f7081 */
        .type = EFARM_PKT_READ_NACK,
        .flags = EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 16,
        .nfields = 3,
        .fields = {
            {EFARM_PKT_F_SEND_ID, 0x31415926},
            {EFARM_PKT_F_RECV_ID, 0x27182818},
            {EFARM_PKT_F_CONNID, 0x5e6f7081},
        },
    },
    {
        .name = "EAGER_MSGRTM_data",
        .hex = "40"           /* type 64 EAGER_MSGRTM */
               "04"           /* version 4 */
               "0400"         /* flags 0x0004 MSG */
               "04030201"     /* msg_id 0x1020304 */
               "a0a1a2a3a4",  /* application data, 5 bytes */
        .type = EFARM_PKT_EAGER_MSGRTM,
        .flags = EFARM_REQ_MSG,
        .hdr_length = 8,
        .nfields = 1,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020304},
        },
    },
    {
        .name = "EAGER_MSGRTM_nodata",
        .hex = "40"         /* type 64 EAGER_MSGRTM */
               "04"         /* version 4 */
               "0400"       /* flags 0x0004 MSG */
               "ffffffff",  /* msg_id 0xffffffff */
        .type = EFARM_PKT_EAGER_MSGRTM,
        .flags = EFARM_REQ_MSG,
        .hdr_length = 8,
        .nfields = 1,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0xffffffff},
        },
    },
    {
        .name = "EAGER_MSGRTM_raw_addr",
        .hex = "40"                                 /* type 64 EAGER_MSGRTM */
               "04"                                 /* version 4 */
               "0500"                               /* flags 0x0005 RAW_ADDR_HDR|MSG */
               "04030201"                           /* msg_id 0x1020304 */
               "24000000"                           /* raw addr hdr: size 36 */
               "fe80000000000000041d2c3b4a596877"   /* gid fe80::41d:2c3b:4a59:6877 */
               "cdab"                               /* raw addr qpn 0xabcd */
               "0000"                               /* raw addr pad 0 */
               "3412dec0"                           /* raw addr connid 0xc0de1234 */
               "0000000000000000"                   /* raw addr reserved 0 */
               "00000000"                           /* raw addr hdr padding 0 */
               "a0a1a2a3",                          /* application data, 4 bytes */
        .type = EFARM_PKT_EAGER_MSGRTM,
        .flags = EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_REQ_MSG,
        .hdr_length = 48,
        .nfields = 1,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020304},
        },
        .has_raw_addr = 1,
        .raw_addr = {.gid = {0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                             0x04, 0x1d, 0x2c, 0x3b, 0x4a, 0x59, 0x68, 0x77},
                     .qpn = 0xabcd,
                     .connid = 0xc0de1234},
    },
    {
        .name = "EAGER_MSGRTM_raw_addr_cq_data",
        .hex = "40"                                 /* type 64 EAGER_MSGRTM */
               "04"                                 /* version 4 */
               "0700"                               /* flags 0x0007 RAW_ADDR_HDR|CQ_DATA_HDR|MSG */
               "04030201"                           /* msg_id 0x1020304 */
               "24000000"                           /* raw addr hdr: size 36 */
               "20010db885a3112233448a2e03707334"   /* gid 2001:db8:85a3:1122:3344:8a2e:370:7334 */
               "2e1f"                               /* raw addr qpn 0x1f2e */
               "0000"                               /* raw addr pad 0 */
               "4d5c6b7a"                           /* raw addr connid 0x7a6b5c4d */
               "0000000000000000"                   /* raw addr reserved 0 */
               "00000000"                           /* raw addr hdr padding 0 */
               "78695a4b3c2d1e0f"                   /* cq_data 0xf1e2d3c4b5a6978 */
               "a0a1a2",                            /* application data, 3 bytes */
        .type = EFARM_PKT_EAGER_MSGRTM,
        .flags = EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_REQ_OPT_CQ_DATA_HDR | EFARM_REQ_MSG,
        .hdr_length = 56,
        .nfields = 2,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020304},
            {EFARM_PKT_F_CQ_DATA, 0xf1e2d3c4b5a6978},
        },
        .has_raw_addr = 1,
        .raw_addr = {.gid = {0x20, 0x01, 0x0d, 0xb8, 0x85, 0xa3, 0x11, 0x22,
                             0x33, 0x44, 0x8a, 0x2e, 0x03, 0x70, 0x73, 0x34},
                     .qpn = 0x1f2e,
                     .connid = 0x7a6b5c4d},
    },
    {
        .name = "EAGER_MSGRTM_cq_data_connid",
        .hex = "40"                 /* type 64 EAGER_MSGRTM */
               "04"                 /* version 4 */
               "0680"               /* flags 0x8006 CQ_DATA_HDR|MSG|CONNID_HDR */
               "04030201"           /* msg_id 0x1020304 */
               "0df0fecaefbeadde"   /* cq_data 0xdeadbeefcafef00d */
               "d4c3b2a1"           /* connid 0xa1b2c3d4 */
               "a0a1",              /* application data, 2 bytes */
        .type = EFARM_PKT_EAGER_MSGRTM,
        .flags = EFARM_REQ_OPT_CQ_DATA_HDR | EFARM_REQ_MSG | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 20,
        .nfields = 3,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020304},
            {EFARM_PKT_F_CQ_DATA, 0xdeadbeefcafef00d},
            {EFARM_PKT_F_CONNID, 0xa1b2c3d4},
        },
    },
    {
        .name = "EAGER_MSGRTM_connid",
        .hex = "40"             /* type 64 EAGER_MSGRTM */
               "04"             /* version 4 */
               "0480"           /* flags 0x8004 MSG|CONNID_HDR */
               "04030201"       /* msg_id 0x1020304 */
               "81706f5e"       /* connid 0x5e6f7081 */
               "a0a1a2a3a4a5",  /* application data, 6 bytes */
        .type = EFARM_PKT_EAGER_MSGRTM,
        .flags = EFARM_REQ_MSG | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 12,
        .nfields = 2,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020304},
            {EFARM_PKT_F_CONNID, 0x5e6f7081},
        },
    },
    {
        .name = "EAGER_TAGRTM_data",
        .hex = "41"                 /* type 65 EAGER_TAGRTM */
               "04"                 /* version 4 */
               "0c00"               /* flags 0x000c MSG|TAGGED */
               "04030201"           /* msg_id 0x1020304 */
               "8877665544332211"   /* tag 0x1122334455667788 */
               "a0a1a2",            /* application data, 3 bytes */
        .type = EFARM_PKT_EAGER_TAGRTM,
        .flags = EFARM_REQ_MSG | EFARM_REQ_TAGGED,
        .hdr_length = 16,
        .nfields = 2,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020304},
            {EFARM_PKT_F_TAG, 0x1122334455667788},
        },
    },
    {
        .name = "EAGER_TAGRTM_raw_addr",
        .hex = "41"                                 /* type 65 EAGER_TAGRTM */
               "04"                                 /* version 4 */
               "0d00"                               /* flags 0x000d RAW_ADDR_HDR|MSG|TAGGED */
               "04030201"                           /* msg_id 0x1020304 */
               "8877665544332211"                   /* tag 0x1122334455667788 */
               "24000000"                           /* raw addr hdr: size 36 */
               "fe80000000000000041d2c3b4a596877"   /* gid fe80::41d:2c3b:4a59:6877 */
               "cdab"                               /* raw addr qpn 0xabcd */
               "0000"                               /* raw addr pad 0 */
               "3412dec0"                           /* raw addr connid 0xc0de1234 */
               "0000000000000000"                   /* raw addr reserved 0 */
               "00000000"                           /* raw addr hdr padding 0 */
               "a0a1a2a3a4a5a6",                    /* application data, 7 bytes */
        .type = EFARM_PKT_EAGER_TAGRTM,
        .flags = EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_REQ_MSG | EFARM_REQ_TAGGED,
        .hdr_length = 56,
        .nfields = 2,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020304},
            {EFARM_PKT_F_TAG, 0x1122334455667788},
        },
        .has_raw_addr = 1,
        .raw_addr = {.gid = {0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                             0x04, 0x1d, 0x2c, 0x3b, 0x4a, 0x59, 0x68, 0x77},
                     .qpn = 0xabcd,
                     .connid = 0xc0de1234},
    },
    {
        .name = "EAGER_TAGRTM_cq_data",
        .hex = "41"                 /* type 65 EAGER_TAGRTM */
               "04"                 /* version 4 */
               "0e00"               /* flags 0x000e CQ_DATA_HDR|MSG|TAGGED */
               "04030201"           /* msg_id 0x1020304 */
               "1122334455667788"   /* tag 0x8877665544332211 */
               "78695a4b3c2d1e0f",  /* cq_data 0xf1e2d3c4b5a6978 */
        .type = EFARM_PKT_EAGER_TAGRTM,
        .flags = EFARM_REQ_OPT_CQ_DATA_HDR | EFARM_REQ_MSG | EFARM_REQ_TAGGED,
        .hdr_length = 24,
        .nfields = 3,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020304},
            {EFARM_PKT_F_TAG, 0x8877665544332211},
            {EFARM_PKT_F_CQ_DATA, 0xf1e2d3c4b5a6978},
        },
    },
    {
        .name = "EAGER_TAGRTM_connid",
        .hex = "41"                 /* type 65 EAGER_TAGRTM */
               "04"                 /* version 4 */
               "0c80"               /* flags 0x800c MSG|TAGGED|CONNID_HDR */
               "04030201"           /* msg_id 0x1020304 */
               "8877665544332211"   /* tag 0x1122334455667788 */
               "d4c3b2a1"           /* connid 0xa1b2c3d4 */
               "a0",                /* application data, 1 byte */
        .type = EFARM_PKT_EAGER_TAGRTM,
        .flags = EFARM_REQ_MSG | EFARM_REQ_TAGGED | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 20,
        .nfields = 3,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020304},
            {EFARM_PKT_F_TAG, 0x1122334455667788},
            {EFARM_PKT_F_CONNID, 0xa1b2c3d4},
        },
    },
    {
        .name = "EAGER_TAGRTM_cq_data_connid",
        .hex = "41"                 /* type 65 EAGER_TAGRTM */
               "04"                 /* version 4 */
               "0e80"               /* flags 0x800e CQ_DATA_HDR|MSG|TAGGED|CONNID_HDR */
               "04030201"           /* msg_id 0x1020304 */
               "8877665544332211"   /* tag 0x1122334455667788 */
               "78695a4b3c2d1e0f"   /* cq_data 0xf1e2d3c4b5a6978 */
               "81706f5e"           /* connid 0x5e6f7081 */
               "a0a1a2a3",          /* application data, 4 bytes */
        .type = EFARM_PKT_EAGER_TAGRTM,
        .flags = EFARM_REQ_OPT_CQ_DATA_HDR | EFARM_REQ_MSG |
                 EFARM_REQ_TAGGED | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 28,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020304},
            {EFARM_PKT_F_TAG, 0x1122334455667788},
            {EFARM_PKT_F_CQ_DATA, 0xf1e2d3c4b5a6978},
            {EFARM_PKT_F_CONNID, 0x5e6f7081},
        },
    },
    {
        .name = "MEDIUM_MSGRTM_data",
        .hex = "42"                 /* type 66 MEDIUM_MSGRTM */
               "04"                 /* version 4 */
               "0400"               /* flags 0x0004 MSG */
               "14030201"           /* msg_id 0x1020314 */
               "7856341200000000"   /* msg_length (total, addenda) 0x12345678 */
               "efcdab0000000000"   /* seg_offset 0xabcdef */
               "1011121314",        /* segment data, 5 bytes */
        .type = EFARM_PKT_MEDIUM_MSGRTM,
        .flags = EFARM_REQ_MSG,
        .hdr_length = 24,
        .nfields = 3,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020314},
            {EFARM_PKT_F_MSG_LENGTH, 0x12345678},
            {EFARM_PKT_F_SEG_OFFSET, 0xabcdef},
        },
    },
    {
        .name = "MEDIUM_MSGRTM_raw_addr",
        .hex = "42"                                 /* type 66 MEDIUM_MSGRTM */
               "04"                                 /* version 4 */
               "0500"                               /* flags 0x0005 RAW_ADDR_HDR|MSG */
               "14030201"                           /* msg_id 0x1020314 */
               "7856341200000000"                   /* msg_length (total, addenda) 0x12345678 */
               "0000000000000000"                   /* seg_offset 0 */
               "24000000"                           /* raw addr hdr: size 36 */
               "20010db885a3112233448a2e03707334"   /* gid 2001:db8:85a3:1122:3344:8a2e:370:7334 */
               "2e1f"                               /* raw addr qpn 0x1f2e */
               "0000"                               /* raw addr pad 0 */
               "4d5c6b7a"                           /* raw addr connid 0x7a6b5c4d */
               "0000000000000000"                   /* raw addr reserved 0 */
               "00000000"                           /* raw addr hdr padding 0 */
               "10111213",                          /* segment data, 4 bytes */
        .type = EFARM_PKT_MEDIUM_MSGRTM,
        .flags = EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_REQ_MSG,
        .hdr_length = 64,
        .nfields = 3,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020314},
            {EFARM_PKT_F_MSG_LENGTH, 0x12345678},
            {EFARM_PKT_F_SEG_OFFSET, 0x0},
        },
        .has_raw_addr = 1,
        .raw_addr = {.gid = {0x20, 0x01, 0x0d, 0xb8, 0x85, 0xa3, 0x11, 0x22,
                             0x33, 0x44, 0x8a, 0x2e, 0x03, 0x70, 0x73, 0x34},
                     .qpn = 0x1f2e,
                     .connid = 0x7a6b5c4d},
    },
    {
        .name = "MEDIUM_MSGRTM_connid",
        .hex = "42"                 /* type 66 MEDIUM_MSGRTM */
               "04"                 /* version 4 */
               "0480"               /* flags 0x8004 MSG|CONNID_HDR */
               "14030201"           /* msg_id 0x1020314 */
               "0620010000000000"   /* msg_length (total, addenda) 0x12006 */
               "0020010000000000"   /* seg_offset 0x12000 */
               "d4c3b2a1"           /* connid 0xa1b2c3d4 */
               "101112131415",      /* segment data, 6 bytes */
        .type = EFARM_PKT_MEDIUM_MSGRTM,
        .flags = EFARM_REQ_MSG | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 28,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020314},
            {EFARM_PKT_F_MSG_LENGTH, 0x12006},
            {EFARM_PKT_F_SEG_OFFSET, 0x12000},
            {EFARM_PKT_F_CONNID, 0xa1b2c3d4},
        },
    },
    {
        .name = "MEDIUM_TAGRTM_data",
        .hex = "43"                 /* type 67 MEDIUM_TAGRTM */
               "04"                 /* version 4 */
               "0c00"               /* flags 0x000c MSG|TAGGED */
               "14030201"           /* msg_id 0x1020314 */
               "7856341200000000"   /* msg_length (total, addenda) 0x12345678 */
               "efcdab0000000000"   /* seg_offset 0xabcdef */
               "1122334455667788"   /* tag 0x8877665544332211 */
               "101112",            /* segment data, 3 bytes */
        .type = EFARM_PKT_MEDIUM_TAGRTM,
        .flags = EFARM_REQ_MSG | EFARM_REQ_TAGGED,
        .hdr_length = 32,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020314},
            {EFARM_PKT_F_MSG_LENGTH, 0x12345678},
            {EFARM_PKT_F_SEG_OFFSET, 0xabcdef},
            {EFARM_PKT_F_TAG, 0x8877665544332211},
        },
    },
    {
        .name = "MEDIUM_TAGRTM_cq_data_connid",
        .hex = "43"                 /* type 67 MEDIUM_TAGRTM */
               "04"                 /* version 4 */
               "0e80"               /* flags 0x800e CQ_DATA_HDR|MSG|TAGGED|CONNID_HDR */
               "14030201"           /* msg_id 0x1020314 */
               "7856341200000000"   /* msg_length (total, addenda) 0x12345678 */
               "efcdab0000000000"   /* seg_offset 0xabcdef */
               "1122334455667788"   /* tag 0x8877665544332211 */
               "78695a4b3c2d1e0f"   /* cq_data 0xf1e2d3c4b5a6978 */
               "81706f5e"           /* connid 0x5e6f7081 */
               "1011",              /* segment data, 2 bytes */
        .type = EFARM_PKT_MEDIUM_TAGRTM,
        .flags = EFARM_REQ_OPT_CQ_DATA_HDR | EFARM_REQ_MSG |
                 EFARM_REQ_TAGGED | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 44,
        .nfields = 6,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020314},
            {EFARM_PKT_F_MSG_LENGTH, 0x12345678},
            {EFARM_PKT_F_SEG_OFFSET, 0xabcdef},
            {EFARM_PKT_F_TAG, 0x8877665544332211},
            {EFARM_PKT_F_CQ_DATA, 0xf1e2d3c4b5a6978},
            {EFARM_PKT_F_CONNID, 0x5e6f7081},
        },
    },
    {
        .name = "MEDIUM_TAGRTM_raw_addr_cq_data",
        .hex = "43"                                 /* type 67 MEDIUM_TAGRTM */
               "04"                                 /* version 4 */
               "0f00" /* flags 0x000f RAW_ADDR_HDR|CQ_DATA_HDR|MSG|TAGGED */
               "14030201"                           /* msg_id 0x1020314 */
               "7856341200000000"                   /* msg_length (total, addenda) 0x12345678 */
               "efcdab0000000000"                   /* seg_offset 0xabcdef */
               "1122334455667788"                   /* tag 0x8877665544332211 */
               "24000000"                           /* raw addr hdr: size 36 */
               "fe80000000000000041d2c3b4a596877"   /* gid fe80::41d:2c3b:4a59:6877 */
               "cdab"                               /* raw addr qpn 0xabcd */
               "0000"                               /* raw addr pad 0 */
               "3412dec0"                           /* raw addr connid 0xc0de1234 */
               "0000000000000000"                   /* raw addr reserved 0 */
               "00000000"                           /* raw addr hdr padding 0 */
               "0df0fecaefbeadde"                   /* cq_data 0xdeadbeefcafef00d */
               "1011121314151617",                  /* segment data, 8 bytes */
        .type = EFARM_PKT_MEDIUM_TAGRTM,
        .flags = EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_REQ_OPT_CQ_DATA_HDR |
                 EFARM_REQ_MSG | EFARM_REQ_TAGGED,
        .hdr_length = 80,
        .nfields = 5,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020314},
            {EFARM_PKT_F_MSG_LENGTH, 0x12345678},
            {EFARM_PKT_F_SEG_OFFSET, 0xabcdef},
            {EFARM_PKT_F_TAG, 0x8877665544332211},
            {EFARM_PKT_F_CQ_DATA, 0xdeadbeefcafef00d},
        },
        .has_raw_addr = 1,
        .raw_addr = {.gid = {0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                             0x04, 0x1d, 0x2c, 0x3b, 0x4a, 0x59, 0x68, 0x77},
                     .qpn = 0xabcd,
                     .connid = 0xc0de1234},
    },
    {
        .name = "LONGCTS_MSGRTM_data",
        .hex = "44"                 /* type 68 LONGCTS_MSGRTM */
               "04"                 /* version 4 */
               "0400"               /* flags 0x0004 MSG */
               "24030201"           /* msg_id 0x1020324 */
               "0010008002000000"   /* msg_length 0x280001000 */
               "927c6b5a"           /* send_id 0x5a6b7c92 */
               "20004000"           /* credit_request 0x400020 */
               "404142434445",      /* first data, 6 bytes */
        .type = EFARM_PKT_LONGCTS_MSGRTM,
        .flags = EFARM_REQ_MSG,
        .hdr_length = 24,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020324},
            {EFARM_PKT_F_MSG_LENGTH, 0x280001000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c92},
            {EFARM_PKT_F_CREDIT_REQUEST, 0x400020},
        },
    },
    {
        .name = "LONGCTS_MSGRTM_raw_addr",
        .hex = "44"                                 /* type 68 LONGCTS_MSGRTM */
               "04"                                 /* version 4 */
               "0500"                               /* flags 0x0005 RAW_ADDR_HDR|MSG */
               "24030201"                           /* msg_id 0x1020324 */
               "0010008002000000"                   /* msg_length 0x280001000 */
               "927c6b5a"                           /* send_id 0x5a6b7c92 */
               "20004000"                           /* credit_request 0x400020 */
               "24000000"                           /* raw addr hdr: size 36 */
               "fe80000000000000041d2c3b4a596877"   /* gid fe80::41d:2c3b:4a59:6877 */
               "cdab"                               /* raw addr qpn 0xabcd */
               "0000"                               /* raw addr pad 0 */
               "3412dec0"                           /* raw addr connid 0xc0de1234 */
               "0000000000000000"                   /* raw addr reserved 0 */
               "00000000"                           /* raw addr hdr padding 0 */
               "40414243",                          /* first data, 4 bytes */
        .type = EFARM_PKT_LONGCTS_MSGRTM,
        .flags = EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_REQ_MSG,
        .hdr_length = 64,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020324},
            {EFARM_PKT_F_MSG_LENGTH, 0x280001000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c92},
            {EFARM_PKT_F_CREDIT_REQUEST, 0x400020},
        },
        .has_raw_addr = 1,
        .raw_addr = {.gid = {0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                             0x04, 0x1d, 0x2c, 0x3b, 0x4a, 0x59, 0x68, 0x77},
                     .qpn = 0xabcd,
                     .connid = 0xc0de1234},
    },
    {
        .name = "LONGCTS_MSGRTM_read_nack",
        .hex = "44"                 /* type 68 LONGCTS_MSGRTM */
               "04"                 /* version 4 */
               "0420"               /* flags 0x2004 MSG|READ_NACK */
               "24030201"           /* msg_id 0x1020324 */
               "0010008002000000"   /* msg_length 0x280001000 */
               "927c6b5a"           /* send_id 0x5a6b7c92 */
               "20004000",          /* credit_request 0x400020 */
        .type = EFARM_PKT_LONGCTS_MSGRTM,
        .flags = EFARM_REQ_MSG | EFARM_REQ_READ_NACK,
        .hdr_length = 24,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020324},
            {EFARM_PKT_F_MSG_LENGTH, 0x280001000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c92},
            {EFARM_PKT_F_CREDIT_REQUEST, 0x400020},
        },
    },
    {
        .name = "LONGCTS_MSGRTM_read_nack_connid",
        .hex = "44"                 /* type 68 LONGCTS_MSGRTM */
               "04"                 /* version 4 */
               "04a0"               /* flags 0xa004 MSG|READ_NACK|CONNID_HDR */
               "24030201"           /* msg_id 0x1020324 */
               "0010008002000000"   /* msg_length 0x280001000 */
               "927c6b5a"           /* send_id 0x5a6b7c92 */
               "20004000"           /* credit_request 0x400020 */
               "d4c3b2a1",          /* connid 0xa1b2c3d4 */
        .type = EFARM_PKT_LONGCTS_MSGRTM,
        .flags = EFARM_REQ_MSG | EFARM_REQ_READ_NACK | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 28,
        .nfields = 5,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020324},
            {EFARM_PKT_F_MSG_LENGTH, 0x280001000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c92},
            {EFARM_PKT_F_CREDIT_REQUEST, 0x400020},
            {EFARM_PKT_F_CONNID, 0xa1b2c3d4},
        },
    },
    {
        .name = "LONGCTS_TAGRTM_data",
        .hex = "45"                 /* type 69 LONGCTS_TAGRTM */
               "04"                 /* version 4 */
               "0c00"               /* flags 0x000c MSG|TAGGED */
               "24030201"           /* msg_id 0x1020324 */
               "0010008002000000"   /* msg_length 0x280001000 */
               "927c6b5a"           /* send_id 0x5a6b7c92 */
               "20004000"           /* credit_request 0x400020 */
               "8877665544332211"   /* tag 0x1122334455667788 */
               "4041424344",        /* first data, 5 bytes */
        .type = EFARM_PKT_LONGCTS_TAGRTM,
        .flags = EFARM_REQ_MSG | EFARM_REQ_TAGGED,
        .hdr_length = 32,
        .nfields = 5,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020324},
            {EFARM_PKT_F_MSG_LENGTH, 0x280001000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c92},
            {EFARM_PKT_F_CREDIT_REQUEST, 0x400020},
            {EFARM_PKT_F_TAG, 0x1122334455667788},
        },
    },
    {
        .name = "LONGCTS_TAGRTM_cq_data",
        .hex = "45"                 /* type 69 LONGCTS_TAGRTM */
               "04"                 /* version 4 */
               "0e00"               /* flags 0x000e CQ_DATA_HDR|MSG|TAGGED */
               "24030201"           /* msg_id 0x1020324 */
               "0010008002000000"   /* msg_length 0x280001000 */
               "927c6b5a"           /* send_id 0x5a6b7c92 */
               "20004000"           /* credit_request 0x400020 */
               "8877665544332211"   /* tag 0x1122334455667788 */
               "78695a4b3c2d1e0f"   /* cq_data 0xf1e2d3c4b5a6978 */
               "404142",            /* first data, 3 bytes */
        .type = EFARM_PKT_LONGCTS_TAGRTM,
        .flags = EFARM_REQ_OPT_CQ_DATA_HDR | EFARM_REQ_MSG | EFARM_REQ_TAGGED,
        .hdr_length = 40,
        .nfields = 6,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020324},
            {EFARM_PKT_F_MSG_LENGTH, 0x280001000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c92},
            {EFARM_PKT_F_CREDIT_REQUEST, 0x400020},
            {EFARM_PKT_F_TAG, 0x1122334455667788},
            {EFARM_PKT_F_CQ_DATA, 0xf1e2d3c4b5a6978},
        },
    },
    {
        .name = "LONGCTS_TAGRTM_read_nack_connid",
        .hex = "45"                 /* type 69 LONGCTS_TAGRTM */
               "04"                 /* version 4 */
               "0ca0"               /* flags 0xa00c MSG|TAGGED|READ_NACK|CONNID_HDR */
               "24030201"           /* msg_id 0x1020324 */
               "0010008002000000"   /* msg_length 0x280001000 */
               "927c6b5a"           /* send_id 0x5a6b7c92 */
               "20004000"           /* credit_request 0x400020 */
               "8877665544332211"   /* tag 0x1122334455667788 */
               "81706f5e",          /* connid 0x5e6f7081 */
        .type = EFARM_PKT_LONGCTS_TAGRTM,
        .flags = EFARM_REQ_MSG | EFARM_REQ_TAGGED | EFARM_REQ_READ_NACK | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 36,
        .nfields = 6,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020324},
            {EFARM_PKT_F_MSG_LENGTH, 0x280001000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c92},
            {EFARM_PKT_F_CREDIT_REQUEST, 0x400020},
            {EFARM_PKT_F_TAG, 0x1122334455667788},
            {EFARM_PKT_F_CONNID, 0x5e6f7081},
        },
    },
    {
        .name = "EAGER_RTW_iov0",
        .hex = "46"         /* type 70 EAGER_RTW */
               "04"         /* version 4 */
               "1000"       /* flags 0x0010 RMA */
               "00000000",  /* rma_iov_count 0 */
        .type = EFARM_PKT_EAGER_RTW,
        .flags = EFARM_REQ_RMA,
        .hdr_length = 8,
        .nfields = 1,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x0},
        },
    },
    {
        .name = "EAGER_RTW_iov1_data",
        .hex = "46"                 /* type 70 EAGER_RTW */
               "04"                 /* version 4 */
               "1000"               /* flags 0x0010 RMA */
               "01000000"           /* rma_iov_count 1 */
               "40332211007f0000"   /* rma_iov[0].addr 0x7f0011223340 */
               "0500000000000000"   /* rma_iov[0].len 0x5 */
               "0100feca00000000"   /* rma_iov[0].key 0xcafe0001 */
               "5051525354",        /* write data, 5 bytes */
        .type = EFARM_PKT_EAGER_RTW,
        .flags = EFARM_REQ_RMA,
        .hdr_length = 32,
        .nfields = 1,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x1},
        },
        .nrma_iov = 1,
        .rma_iov = {
            {.addr = 0x00007f0011223340, .len = 0x5, .key = 0x00000000cafe0001},
        },
    },
    {
        .name = "EAGER_RTW_iov2_raw_addr_cq_data",
        .hex = "46"                                 /* type 70 EAGER_RTW */
               "04"                                 /* version 4 */
               "1300"                               /* flags 0x0013 RAW_ADDR_HDR|CQ_DATA_HDR|RMA */
               "02000000"                           /* rma_iov_count 2 */
               "40332211007f0000"                   /* rma_iov[0].addr 0x7f0011223340 */
               "0300000000000000"                   /* rma_iov[0].len 0x3 */
               "0100feca00000000"                   /* rma_iov[0].key 0xcafe0001 */
               "70665544007f0000"                   /* rma_iov[1].addr 0x7f0044556670 */
               "0400000000000000"                   /* rma_iov[1].len 0x4 */
               "0200feca00000000"                   /* rma_iov[1].key 0xcafe0002 */
               "24000000"                           /* raw addr hdr: size 36 */
               "fe80000000000000041d2c3b4a596877"   /* gid fe80::41d:2c3b:4a59:6877 */
               "cdab"                               /* raw addr qpn 0xabcd */
               "0000"                               /* raw addr pad 0 */
               "3412dec0"                           /* raw addr connid 0xc0de1234 */
               "0000000000000000"                   /* raw addr reserved 0 */
               "00000000"                           /* raw addr hdr padding 0 */
               "78695a4b3c2d1e0f"                   /* cq_data 0xf1e2d3c4b5a6978 */
               "50515253545556",                    /* write data, 7 bytes */
        .type = EFARM_PKT_EAGER_RTW,
        .flags = EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_REQ_OPT_CQ_DATA_HDR | EFARM_REQ_RMA,
        .hdr_length = 104,
        .nfields = 2,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x2},
            {EFARM_PKT_F_CQ_DATA, 0xf1e2d3c4b5a6978},
        },
        .nrma_iov = 2,
        .rma_iov = {
            {.addr = 0x00007f0011223340, .len = 0x3, .key = 0x00000000cafe0001},
            {.addr = 0x00007f0044556670, .len = 0x4, .key = 0x00000000cafe0002},
        },
        .has_raw_addr = 1,
        .raw_addr = {.gid = {0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                             0x04, 0x1d, 0x2c, 0x3b, 0x4a, 0x59, 0x68, 0x77},
                     .qpn = 0xabcd,
                     .connid = 0xc0de1234},
    },
    {
        .name = "EAGER_RTW_iov1_raw_addr",
        .hex = "46"                                 /* type 70 EAGER_RTW */
               "04"                                 /* version 4 */
               "1100"                               /* flags 0x0011 RAW_ADDR_HDR|RMA */
               "01000000"                           /* rma_iov_count 1 */
               "0050341200000000"                   /* rma_iov[0].addr 0x12345000 */
               "0400000000000000"                   /* rma_iov[0].len 0x4 */
               "4444333322221111"                   /* rma_iov[0].key 0x1111222233334444 */
               "24000000"                           /* raw addr hdr: size 36 */
               "20010db885a3112233448a2e03707334"   /* gid 2001:db8:85a3:1122:3344:8a2e:370:7334 */
               "2e1f"                               /* raw addr qpn 0x1f2e */
               "0000"                               /* raw addr pad 0 */
               "4d5c6b7a"                           /* raw addr connid 0x7a6b5c4d */
               "0000000000000000"                   /* raw addr reserved 0 */
               "00000000"                           /* raw addr hdr padding 0 */
               "50515253",                          /* write data, 4 bytes */
        .type = EFARM_PKT_EAGER_RTW,
        .flags = EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_REQ_RMA,
        .hdr_length = 72,
        .nfields = 1,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x1},
        },
        .nrma_iov = 1,
        .rma_iov = {
            {.addr = 0x0000000012345000, .len = 0x4, .key = 0x1111222233334444},
        },
        .has_raw_addr = 1,
        .raw_addr = {.gid = {0x20, 0x01, 0x0d, 0xb8, 0x85, 0xa3, 0x11, 0x22,
                             0x33, 0x44, 0x8a, 0x2e, 0x03, 0x70, 0x73, 0x34},
                     .qpn = 0x1f2e,
                     .connid = 0x7a6b5c4d},
    },
    {
        .name = "EAGER_RTW_iov1_connid",
        .hex = "46"                 /* type 70 EAGER_RTW */
               "04"                 /* version 4 */
               "1080"               /* flags 0x8010 RMA|CONNID_HDR */
               "01000000"           /* rma_iov_count 1 */
               "00100000ff7f0000"   /* rma_iov[0].addr 0x7fff00001000 */
               "0200000000000000"   /* rma_iov[0].len 0x2 */
               "0300efbe00000000"   /* rma_iov[0].key 0xbeef0003 */
               "d4c3b2a1"           /* connid 0xa1b2c3d4 */
               "5051",              /* write data, 2 bytes */
        .type = EFARM_PKT_EAGER_RTW,
        .flags = EFARM_REQ_RMA | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 36,
        .nfields = 2,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x1},
            {EFARM_PKT_F_CONNID, 0xa1b2c3d4},
        },
        .nrma_iov = 1,
        .rma_iov = {
            {.addr = 0x00007fff00001000, .len = 0x2, .key = 0x00000000beef0003},
        },
    },
    {
        .name = "EAGER_RTW_iov2_cq_data_connid",
        .hex = "46"                 /* type 70 EAGER_RTW */
               "04"                 /* version 4 */
               "1280"               /* flags 0x8012 CQ_DATA_HDR|RMA|CONNID_HDR */
               "02000000"           /* rma_iov_count 2 */
               "00705634127f0000"   /* rma_iov[0].addr 0x7f1234567000 */
               "4000000010000000"   /* rma_iov[0].len 0x1000000040 */
               "1122334455667788"   /* rma_iov[0].key 0x8877665544332211 */
               "e0ffc000ab7f0000"   /* rma_iov[1].addr 0x7fab00c0ffe0 */
               "0001000002000000"   /* rma_iov[1].len 0x200000100 */
               "0807060504030201"   /* rma_iov[1].key 0x102030405060708 */
               "0df0fecaefbeadde"   /* cq_data 0xdeadbeefcafef00d */
               "81706f5e"           /* connid 0x5e6f7081 */
               "505152",            /* write data, 3 bytes */
        .type = EFARM_PKT_EAGER_RTW,
        .flags = EFARM_REQ_OPT_CQ_DATA_HDR | EFARM_REQ_RMA | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 68,
        .nfields = 3,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x2},
            {EFARM_PKT_F_CQ_DATA, 0xdeadbeefcafef00d},
            {EFARM_PKT_F_CONNID, 0x5e6f7081},
        },
        .nrma_iov = 2,
        .rma_iov = {
            {.addr = 0x00007f1234567000, .len = 0x1000000040, .key = 0x8877665544332211},
            {.addr = 0x00007fab00c0ffe0, .len = 0x200000100, .key = 0x0102030405060708},
        },
    },
    {
        .name = "LONGCTS_RTW_iov1",
        .hex = "47"                 /* type 71 LONGCTS_RTW */
               "04"                 /* version 4 */
               "1000"               /* flags 0x0010 RMA */
               "01000000"           /* rma_iov_count 1 */
               "0000000003000000"   /* msg_length 0x300000000 */
               "967c6b5a"           /* send_id 0x5a6b7c96 */
               "22004000"           /* credit_request 0x400022 */
               "00705634127f0000"   /* rma_iov[0].addr 0x7f1234567000 */
               "4000000010000000"   /* rma_iov[0].len 0x1000000040 */
               "1122334455667788"   /* rma_iov[0].key 0x8877665544332211 */
               "58595a5b",          /* first data, 4 bytes */
        .type = EFARM_PKT_LONGCTS_RTW,
        .flags = EFARM_REQ_RMA,
        .hdr_length = 48,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x1},
            {EFARM_PKT_F_MSG_LENGTH, 0x300000000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c96},
            {EFARM_PKT_F_CREDIT_REQUEST, 0x400022},
        },
        .nrma_iov = 1,
        .rma_iov = {
            {.addr = 0x00007f1234567000, .len = 0x1000000040, .key = 0x8877665544332211},
        },
    },
    {
        .name = "LONGCTS_RTW_iov2_connid",
        .hex = "47"                 /* type 71 LONGCTS_RTW */
               "04"                 /* version 4 */
               "1080"               /* flags 0x8010 RMA|CONNID_HDR */
               "02000000"           /* rma_iov_count 2 */
               "0000000003000000"   /* msg_length 0x300000000 */
               "967c6b5a"           /* send_id 0x5a6b7c96 */
               "22004000"           /* credit_request 0x400022 */
               "00705634127f0000"   /* rma_iov[0].addr 0x7f1234567000 */
               "4000000010000000"   /* rma_iov[0].len 0x1000000040 */
               "1122334455667788"   /* rma_iov[0].key 0x8877665544332211 */
               "e0ffc000ab7f0000"   /* rma_iov[1].addr 0x7fab00c0ffe0 */
               "0001000002000000"   /* rma_iov[1].len 0x200000100 */
               "0807060504030201"   /* rma_iov[1].key 0x102030405060708 */
               "d4c3b2a1",          /* connid 0xa1b2c3d4 */
        .type = EFARM_PKT_LONGCTS_RTW,
        .flags = EFARM_REQ_RMA | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 76,
        .nfields = 5,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x2},
            {EFARM_PKT_F_MSG_LENGTH, 0x300000000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c96},
            {EFARM_PKT_F_CREDIT_REQUEST, 0x400022},
            {EFARM_PKT_F_CONNID, 0xa1b2c3d4},
        },
        .nrma_iov = 2,
        .rma_iov = {
            {.addr = 0x00007f1234567000, .len = 0x1000000040, .key = 0x8877665544332211},
            {.addr = 0x00007fab00c0ffe0, .len = 0x200000100, .key = 0x0102030405060708},
        },
    },
    {
        .name = "LONGCTS_RTW_iov0_raw_addr",
        .hex = "47"                                 /* type 71 LONGCTS_RTW */
               "04"                                 /* version 4 */
               "1100"                               /* flags 0x0011 RAW_ADDR_HDR|RMA */
               "00000000"                           /* rma_iov_count 0 */
               "0000000003000000"                   /* msg_length 0x300000000 */
               "967c6b5a"                           /* send_id 0x5a6b7c96 */
               "22004000"                           /* credit_request 0x400022 */
               "24000000"                           /* raw addr hdr: size 36 */
               "fe80000000000000041d2c3b4a596877"   /* gid fe80::41d:2c3b:4a59:6877 */
               "cdab"                               /* raw addr qpn 0xabcd */
               "0000"                               /* raw addr pad 0 */
               "3412dec0"                           /* raw addr connid 0xc0de1234 */
               "0000000000000000"                   /* raw addr reserved 0 */
               "00000000"                           /* raw addr hdr padding 0 */
               "5859",                              /* first data, 2 bytes */
        .type = EFARM_PKT_LONGCTS_RTW,
        .flags = EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_REQ_RMA,
        .hdr_length = 64,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x0},
            {EFARM_PKT_F_MSG_LENGTH, 0x300000000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c96},
            {EFARM_PKT_F_CREDIT_REQUEST, 0x400022},
        },
        .has_raw_addr = 1,
        .raw_addr = {.gid = {0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                             0x04, 0x1d, 0x2c, 0x3b, 0x4a, 0x59, 0x68, 0x77},
                     .qpn = 0xabcd,
                     .connid = 0xc0de1234},
    },
    {
        .name = "SHORT_RTR_iov1",
        .hex = "48"                 /* type 72 SHORT_RTR */
               "04"                 /* version 4 */
               "1000"               /* flags 0x0010 RMA */
               "01000000"           /* rma_iov_count 1 */
               "3412000000000000"   /* msg_length 0x1234 */
               "8a654321"           /* recv_id 0x2143658a */
               "00000000"           /* padding 0 */
               "50667788997f0000"   /* rma_iov[0].addr 0x7f9988776650 */
               "3412000000000000"   /* rma_iov[0].len 0x1234 */
               "01ef0000cdab0000",  /* rma_iov[0].key 0xabcd0000ef01 */
        .type = EFARM_PKT_SHORT_RTR,
        .flags = EFARM_REQ_RMA,
        .hdr_length = 48,
        .nfields = 3,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x1},
            {EFARM_PKT_F_MSG_LENGTH, 0x1234},
            {EFARM_PKT_F_RECV_ID, 0x2143658a},
        },
        .nrma_iov = 1,
        .rma_iov = {
            {.addr = 0x00007f9988776650, .len = 0x1234, .key = 0x0000abcd0000ef01},
        },
    },
    {
        .name = "SHORT_RTR_iov2_raw_addr",
        .hex = "48"                                 /* type 72 SHORT_RTR */
               "04"                                 /* version 4 */
               "1100"                               /* flags 0x0011 RAW_ADDR_HDR|RMA */
               "02000000"                           /* rma_iov_count 2 */
               "3412000000000000"                   /* msg_length 0x1234 */
               "8a654321"                           /* recv_id 0x2143658a */
               "00000000"                           /* padding 0 */
               "e0ffc000ab7f0000"                   /* rma_iov[0].addr 0x7fab00c0ffe0 */
               "0001000002000000"                   /* rma_iov[0].len 0x200000100 */
               "0807060504030201"                   /* rma_iov[0].key 0x102030405060708 */
               "7077666655550000"                   /* rma_iov[1].addr 0x555566667770 */
               "0030000000000000"                   /* rma_iov[1].len 0x3000 */
               "5a5a5a5aa5a5a5a5"                   /* rma_iov[1].key 0xa5a5a5a55a5a5a5a */
               "24000000"                           /* raw addr hdr: size 36 */
               "20010db885a3112233448a2e03707334"   /* gid 2001:db8:85a3:1122:3344:8a2e:370:7334 */
               "2e1f"                               /* raw addr qpn 0x1f2e */
               "0000"                               /* raw addr pad 0 */
               "4d5c6b7a"                           /* raw addr connid 0x7a6b5c4d */
               "0000000000000000"                   /* raw addr reserved 0 */
               "00000000",                          /* raw addr hdr padding 0 */
        .type = EFARM_PKT_SHORT_RTR,
        .flags = EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_REQ_RMA,
        .hdr_length = 112,
        .nfields = 3,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x2},
            {EFARM_PKT_F_MSG_LENGTH, 0x1234},
            {EFARM_PKT_F_RECV_ID, 0x2143658a},
        },
        .nrma_iov = 2,
        .rma_iov = {
            {.addr = 0x00007fab00c0ffe0, .len = 0x200000100, .key = 0x0102030405060708},
            {.addr = 0x0000555566667770, .len = 0x3000, .key = 0xa5a5a5a55a5a5a5a},
        },
        .has_raw_addr = 1,
        .raw_addr = {.gid = {0x20, 0x01, 0x0d, 0xb8, 0x85, 0xa3, 0x11, 0x22,
                             0x33, 0x44, 0x8a, 0x2e, 0x03, 0x70, 0x73, 0x34},
                     .qpn = 0x1f2e,
                     .connid = 0x7a6b5c4d},
    },
    {
        .name = "SHORT_RTR_iov0_connid",
        .hex = "48"                 /* type 72 SHORT_RTR */
               "04"                 /* version 4 */
               "1080"               /* flags 0x8010 RMA|CONNID_HDR */
               "00000000"           /* rma_iov_count 0 */
               "3412000000000000"   /* msg_length 0x1234 */
               "8a654321"           /* recv_id 0x2143658a */
               "00000000"           /* padding 0 */
               "d4c3b2a1",          /* connid 0xa1b2c3d4 */
        .type = EFARM_PKT_SHORT_RTR,
        .flags = EFARM_REQ_RMA | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 28,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x0},
            {EFARM_PKT_F_MSG_LENGTH, 0x1234},
            {EFARM_PKT_F_RECV_ID, 0x2143658a},
            {EFARM_PKT_F_CONNID, 0xa1b2c3d4},
        },
    },
    {
        .name = "LONGCTS_RTR_iov1",
        .hex = "49"                 /* type 73 LONGCTS_RTR */
               "04"                 /* version 4 */
               "1000"               /* flags 0x0010 RMA */
               "01000000"           /* rma_iov_count 1 */
               "0000000005000000"   /* msg_length 0x500000000 */
               "8a654321"           /* recv_id 0x2143658a */
               "00002000"           /* recv_length 0x200000 */
               "00705634127f0000"   /* rma_iov[0].addr 0x7f1234567000 */
               "4000000010000000"   /* rma_iov[0].len 0x1000000040 */
               "1122334455667788",  /* rma_iov[0].key 0x8877665544332211 */
        .type = EFARM_PKT_LONGCTS_RTR,
        .flags = EFARM_REQ_RMA,
        .hdr_length = 48,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x1},
            {EFARM_PKT_F_MSG_LENGTH, 0x500000000},
            {EFARM_PKT_F_RECV_ID, 0x2143658a},
            {EFARM_PKT_F_RECV_LENGTH, 0x200000},
        },
        .nrma_iov = 1,
        .rma_iov = {
            {.addr = 0x00007f1234567000, .len = 0x1000000040, .key = 0x8877665544332211},
        },
    },
    {
        .name = "LONGCTS_RTR_iov2_connid",
        .hex = "49"                 /* type 73 LONGCTS_RTR */
               "04"                 /* version 4 */
               "1080"               /* flags 0x8010 RMA|CONNID_HDR */
               "02000000"           /* rma_iov_count 2 */
               "0000000005000000"   /* msg_length 0x500000000 */
               "8a654321"           /* recv_id 0x2143658a */
               "00002000"           /* recv_length 0x200000 */
               "00705634127f0000"   /* rma_iov[0].addr 0x7f1234567000 */
               "4000000010000000"   /* rma_iov[0].len 0x1000000040 */
               "1122334455667788"   /* rma_iov[0].key 0x8877665544332211 */
               "7077666655550000"   /* rma_iov[1].addr 0x555566667770 */
               "0030000000000000"   /* rma_iov[1].len 0x3000 */
               "5a5a5a5aa5a5a5a5"   /* rma_iov[1].key 0xa5a5a5a55a5a5a5a */
               "81706f5e",          /* connid 0x5e6f7081 */
        .type = EFARM_PKT_LONGCTS_RTR,
        .flags = EFARM_REQ_RMA | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 76,
        .nfields = 5,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x2},
            {EFARM_PKT_F_MSG_LENGTH, 0x500000000},
            {EFARM_PKT_F_RECV_ID, 0x2143658a},
            {EFARM_PKT_F_RECV_LENGTH, 0x200000},
            {EFARM_PKT_F_CONNID, 0x5e6f7081},
        },
        .nrma_iov = 2,
        .rma_iov = {
            {.addr = 0x00007f1234567000, .len = 0x1000000040, .key = 0x8877665544332211},
            {.addr = 0x0000555566667770, .len = 0x3000, .key = 0xa5a5a5a55a5a5a5a},
        },
    },
    {
        .name = "LONGCTS_RTR_iov0",
        .hex = "49"                 /* type 73 LONGCTS_RTR */
               "04"                 /* version 4 */
               "1000"               /* flags 0x0010 RMA */
               "00000000"           /* rma_iov_count 0 */
               "0000000005000000"   /* msg_length 0x500000000 */
               "8a654321"           /* recv_id 0x2143658a */
               "00002000",          /* recv_length 0x200000 */
        .type = EFARM_PKT_LONGCTS_RTR,
        .flags = EFARM_REQ_RMA,
        .hdr_length = 24,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x0},
            {EFARM_PKT_F_MSG_LENGTH, 0x500000000},
            {EFARM_PKT_F_RECV_ID, 0x2143658a},
            {EFARM_PKT_F_RECV_LENGTH, 0x200000},
        },
    },
    {
        .name = "WRITE_RTA_iov1_data",
        .hex = "4a"                 /* type 74 WRITE_RTA */
               "04"                 /* version 4 */
               "2000"               /* flags 0x0020 ATOMIC */
               "54030201"           /* msg_id 0x1020354 */
               "01000000"           /* rma_iov_count 1 */
               "07000000"           /* atomic_datatype 7 */
               "02000000"           /* atomic_op 2 */
               "00000000"           /* padding 0 */
               "00705634127f0000"   /* rma_iov[0].addr 0x7f1234567000 */
               "4000000010000000"   /* rma_iov[0].len 0x1000000040 */
               "1122334455667788"   /* rma_iov[0].key 0x8877665544332211 */
               "9091929394959697",  /* atomic operand(s), 8 bytes */
        .type = EFARM_PKT_WRITE_RTA,
        .flags = EFARM_REQ_ATOMIC,
        .hdr_length = 48,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020354},
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x1},
            {EFARM_PKT_F_ATOMIC_DATATYPE, 0x7},
            {EFARM_PKT_F_ATOMIC_OP, 0x2},
        },
        .nrma_iov = 1,
        .rma_iov = {
            {.addr = 0x00007f1234567000, .len = 0x1000000040, .key = 0x8877665544332211},
        },
    },
    {
        .name = "WRITE_RTA_iov2_raw_addr",
        .hex = "4a"                                 /* type 74 WRITE_RTA */
               "04"                                 /* version 4 */
               "2100"                               /* flags 0x0021 RAW_ADDR_HDR|ATOMIC */
               "54030201"                           /* msg_id 0x1020354 */
               "02000000"                           /* rma_iov_count 2 */
               "05000000"                           /* atomic_datatype 5 */
               "07000000"                           /* atomic_op 7 */
               "00000000"                           /* padding 0 */
               "00705634127f0000"                   /* rma_iov[0].addr 0x7f1234567000 */
               "4000000010000000"                   /* rma_iov[0].len 0x1000000040 */
               "1122334455667788"                   /* rma_iov[0].key 0x8877665544332211 */
               "e0ffc000ab7f0000"                   /* rma_iov[1].addr 0x7fab00c0ffe0 */
               "0001000002000000"                   /* rma_iov[1].len 0x200000100 */
               "0807060504030201"                   /* rma_iov[1].key 0x102030405060708 */
               "24000000"                           /* raw addr hdr: size 36 */
               "fe80000000000000041d2c3b4a596877"   /* gid fe80::41d:2c3b:4a59:6877 */
               "cdab"                               /* raw addr qpn 0xabcd */
               "0000"                               /* raw addr pad 0 */
               "3412dec0"                           /* raw addr connid 0xc0de1234 */
               "0000000000000000"                   /* raw addr reserved 0 */
               "00000000"                           /* raw addr hdr padding 0 */
               "9091929394959697",                  /* atomic operand(s), 8 bytes */
        .type = EFARM_PKT_WRITE_RTA,
        .flags = EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_REQ_ATOMIC,
        .hdr_length = 112,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020354},
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x2},
            {EFARM_PKT_F_ATOMIC_DATATYPE, 0x5},
            {EFARM_PKT_F_ATOMIC_OP, 0x7},
        },
        .nrma_iov = 2,
        .rma_iov = {
            {.addr = 0x00007f1234567000, .len = 0x1000000040, .key = 0x8877665544332211},
            {.addr = 0x00007fab00c0ffe0, .len = 0x200000100, .key = 0x0102030405060708},
        },
        .has_raw_addr = 1,
        .raw_addr = {.gid = {0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                             0x04, 0x1d, 0x2c, 0x3b, 0x4a, 0x59, 0x68, 0x77},
                     .qpn = 0xabcd,
                     .connid = 0xc0de1234},
    },
    {
        .name = "WRITE_RTA_iov0_connid",
        .hex = "4a"         /* type 74 WRITE_RTA */
               "04"         /* version 4 */
               "2080"       /* flags 0x8020 ATOMIC|CONNID_HDR */
               "54030201"   /* msg_id 0x1020354 */
               "00000000"   /* rma_iov_count 0 */
               "07000000"   /* atomic_datatype 7 */
               "02000000"   /* atomic_op 2 */
               "00000000"   /* padding 0 */
               "d4c3b2a1",  /* connid 0xa1b2c3d4 */
        .type = EFARM_PKT_WRITE_RTA,
        .flags = EFARM_REQ_ATOMIC | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 28,
        .nfields = 5,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020354},
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x0},
            {EFARM_PKT_F_ATOMIC_DATATYPE, 0x7},
            {EFARM_PKT_F_ATOMIC_OP, 0x2},
            {EFARM_PKT_F_CONNID, 0xa1b2c3d4},
        },
    },
    {
        .name = "FETCH_RTA_iov1_data",
        .hex = "4b"                 /* type 75 FETCH_RTA */
               "04"                 /* version 4 */
               "2000"               /* flags 0x0020 ATOMIC */
               "54030201"           /* msg_id 0x1020354 */
               "01000000"           /* rma_iov_count 1 */
               "07000000"           /* atomic_datatype 7 */
               "0a000000"           /* atomic_op 0xa */
               "8b654321"           /* recv_id 0x2143658b */
               "7077666655550000"   /* rma_iov[0].addr 0x555566667770 */
               "0030000000000000"   /* rma_iov[0].len 0x3000 */
               "5a5a5a5aa5a5a5a5"   /* rma_iov[0].key 0xa5a5a5a55a5a5a5a */
               "9091929394959697",  /* atomic operand(s), 8 bytes */
        .type = EFARM_PKT_FETCH_RTA,
        .flags = EFARM_REQ_ATOMIC,
        .hdr_length = 48,
        .nfields = 5,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020354},
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x1},
            {EFARM_PKT_F_ATOMIC_DATATYPE, 0x7},
            {EFARM_PKT_F_ATOMIC_OP, 0xa},
            {EFARM_PKT_F_RECV_ID, 0x2143658b},
        },
        .nrma_iov = 1,
        .rma_iov = {
            {.addr = 0x0000555566667770, .len = 0x3000, .key = 0xa5a5a5a55a5a5a5a},
        },
    },
    {
        .name = "FETCH_RTA_iov1_connid",
        .hex = "4b"                 /* type 75 FETCH_RTA */
               "04"                 /* version 4 */
               "2080"               /* flags 0x8020 ATOMIC|CONNID_HDR */
               "54030201"           /* msg_id 0x1020354 */
               "01000000"           /* rma_iov_count 1 */
               "06000000"           /* atomic_datatype 6 */
               "02000000"           /* atomic_op 2 */
               "8b654321"           /* recv_id 0x2143658b */
               "e0ffc000ab7f0000"   /* rma_iov[0].addr 0x7fab00c0ffe0 */
               "0001000002000000"   /* rma_iov[0].len 0x200000100 */
               "0807060504030201"   /* rma_iov[0].key 0x102030405060708 */
               "81706f5e"           /* connid 0x5e6f7081 */
               "9091929394959697",  /* atomic operand(s), 8 bytes */
        .type = EFARM_PKT_FETCH_RTA,
        .flags = EFARM_REQ_ATOMIC | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 52,
        .nfields = 6,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020354},
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x1},
            {EFARM_PKT_F_ATOMIC_DATATYPE, 0x6},
            {EFARM_PKT_F_ATOMIC_OP, 0x2},
            {EFARM_PKT_F_RECV_ID, 0x2143658b},
            {EFARM_PKT_F_CONNID, 0x5e6f7081},
        },
        .nrma_iov = 1,
        .rma_iov = {
            {.addr = 0x00007fab00c0ffe0, .len = 0x200000100, .key = 0x0102030405060708},
        },
    },
    {
        .name = "FETCH_RTA_iov2_cq_data",
        .hex = "4b"                 /* type 75 FETCH_RTA */
               "04"                 /* version 4 */
               "2200"               /* flags 0x0022 CQ_DATA_HDR|ATOMIC */
               "54030201"           /* msg_id 0x1020354 */
               "02000000"           /* rma_iov_count 2 */
               "09000000"           /* atomic_datatype 9 */
               "00000000"           /* atomic_op 0 */
               "8b654321"           /* recv_id 0x2143658b */
               "00705634127f0000"   /* rma_iov[0].addr 0x7f1234567000 */
               "4000000010000000"   /* rma_iov[0].len 0x1000000040 */
               "1122334455667788"   /* rma_iov[0].key 0x8877665544332211 */
               "7077666655550000"   /* rma_iov[1].addr 0x555566667770 */
               "0030000000000000"   /* rma_iov[1].len 0x3000 */
               "5a5a5a5aa5a5a5a5"   /* rma_iov[1].key 0xa5a5a5a55a5a5a5a */
               "78695a4b3c2d1e0f",  /* cq_data 0xf1e2d3c4b5a6978 */
        .type = EFARM_PKT_FETCH_RTA,
        .flags = EFARM_REQ_OPT_CQ_DATA_HDR | EFARM_REQ_ATOMIC,
        .hdr_length = 80,
        .nfields = 6,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020354},
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x2},
            {EFARM_PKT_F_ATOMIC_DATATYPE, 0x9},
            {EFARM_PKT_F_ATOMIC_OP, 0x0},
            {EFARM_PKT_F_RECV_ID, 0x2143658b},
            {EFARM_PKT_F_CQ_DATA, 0xf1e2d3c4b5a6978},
        },
        .nrma_iov = 2,
        .rma_iov = {
            {.addr = 0x00007f1234567000, .len = 0x1000000040, .key = 0x8877665544332211},
            {.addr = 0x0000555566667770, .len = 0x3000, .key = 0xa5a5a5a55a5a5a5a},
        },
    },
    {
        .name = "COMPARE_RTA_iov1_data",
        .hex = "4c"                                 /* type 76 COMPARE_RTA */
               "04"                                 /* version 4 */
               "2000"                               /* flags 0x0020 ATOMIC */
               "54030201"                           /* msg_id 0x1020354 */
               "01000000"                           /* rma_iov_count 1 */
               "07000000"                           /* atomic_datatype 7 */
               "0c000000"                           /* atomic_op 0xc */
               "8b654321"                           /* recv_id 0x2143658b */
               "00705634127f0000"                   /* rma_iov[0].addr 0x7f1234567000 */
               "4000000010000000"                   /* rma_iov[0].len 0x1000000040 */
               "1122334455667788"                   /* rma_iov[0].key 0x8877665544332211 */
               "909192939495969798999a9b9c9d9e9f",  /* atomic operand(s), 16 bytes */
        .type = EFARM_PKT_COMPARE_RTA,
        .flags = EFARM_REQ_ATOMIC,
        .hdr_length = 48,
        .nfields = 5,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020354},
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x1},
            {EFARM_PKT_F_ATOMIC_DATATYPE, 0x7},
            {EFARM_PKT_F_ATOMIC_OP, 0xc},
            {EFARM_PKT_F_RECV_ID, 0x2143658b},
        },
        .nrma_iov = 1,
        .rma_iov = {
            {.addr = 0x00007f1234567000, .len = 0x1000000040, .key = 0x8877665544332211},
        },
    },
    {
        .name = "COMPARE_RTA_iov1_raw_addr",
        .hex = "4c"                                 /* type 76 COMPARE_RTA */
               "04"                                 /* version 4 */
               "2100"                               /* flags 0x0021 RAW_ADDR_HDR|ATOMIC */
               "54030201"                           /* msg_id 0x1020354 */
               "01000000"                           /* rma_iov_count 1 */
               "05000000"                           /* atomic_datatype 5 */
               "0c000000"                           /* atomic_op 0xc */
               "8b654321"                           /* recv_id 0x2143658b */
               "e0ffc000ab7f0000"                   /* rma_iov[0].addr 0x7fab00c0ffe0 */
               "0001000002000000"                   /* rma_iov[0].len 0x200000100 */
               "0807060504030201"                   /* rma_iov[0].key 0x102030405060708 */
               "24000000"                           /* raw addr hdr: size 36 */
               "20010db885a3112233448a2e03707334"   /* gid 2001:db8:85a3:1122:3344:8a2e:370:7334 */
               "2e1f"                               /* raw addr qpn 0x1f2e */
               "0000"                               /* raw addr pad 0 */
               "4d5c6b7a"                           /* raw addr connid 0x7a6b5c4d */
               "0000000000000000"                   /* raw addr reserved 0 */
               "00000000"                           /* raw addr hdr padding 0 */
               "9091929394959697",                  /* atomic operand(s), 8 bytes */
        .type = EFARM_PKT_COMPARE_RTA,
        .flags = EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_REQ_ATOMIC,
        .hdr_length = 88,
        .nfields = 5,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020354},
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x1},
            {EFARM_PKT_F_ATOMIC_DATATYPE, 0x5},
            {EFARM_PKT_F_ATOMIC_OP, 0xc},
            {EFARM_PKT_F_RECV_ID, 0x2143658b},
        },
        .nrma_iov = 1,
        .rma_iov = {
            {.addr = 0x00007fab00c0ffe0, .len = 0x200000100, .key = 0x0102030405060708},
        },
        .has_raw_addr = 1,
        .raw_addr = {.gid = {0x20, 0x01, 0x0d, 0xb8, 0x85, 0xa3, 0x11, 0x22,
                             0x33, 0x44, 0x8a, 0x2e, 0x03, 0x70, 0x73, 0x34},
                     .qpn = 0x1f2e,
                     .connid = 0x7a6b5c4d},
    },
    {
        .name = "LONGREAD_MSGRTM_read1",
        .hex = "80"                 /* type 128 LONGREAD_MSGRTM */
               "04"                 /* version 4 */
               "0400"               /* flags 0x0004 MSG */
               "34030201"           /* msg_id 0x1020334 */
               "4000000010000000"   /* msg_length 0x1000000040 */
               "937c6b5a"           /* send_id 0x5a6b7c93 */
               "01000000"           /* read_iov_count 1 */
               "00705634127f0000"   /* read_iov[0].addr 0x7f1234567000 (payload) */
               "4000000010000000"   /* read_iov[0].len 0x1000000040 */
               "1122334455667788",  /* read_iov[0].key 0x8877665544332211 */
        .type = EFARM_PKT_LONGREAD_MSGRTM,
        .flags = EFARM_REQ_MSG,
        .hdr_length = 24,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020334},
            {EFARM_PKT_F_MSG_LENGTH, 0x1000000040},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c93},
            {EFARM_PKT_F_READ_IOV_COUNT, 0x1},
        },
    },
    {
        .name = "LONGREAD_MSGRTM_read2_raw_addr",
        .hex = "80"                                 /* type 128 LONGREAD_MSGRTM */
               "04"                                 /* version 4 */
               "0500"                               /* flags 0x0005 RAW_ADDR_HDR|MSG */
               "34030201"                           /* msg_id 0x1020334 */
               "4001000012000000"                   /* msg_length 0x1200000140 */
               "937c6b5a"                           /* send_id 0x5a6b7c93 */
               "02000000"                           /* read_iov_count 2 */
               "24000000"                           /* raw addr hdr: size 36 */
               "fe80000000000000041d2c3b4a596877"   /* gid fe80::41d:2c3b:4a59:6877 */
               "cdab"                               /* raw addr qpn 0xabcd */
               "0000"                               /* raw addr pad 0 */
               "3412dec0"                           /* raw addr connid 0xc0de1234 */
               "0000000000000000"                   /* raw addr reserved 0 */
               "00000000"                           /* raw addr hdr padding 0 */
               "00705634127f0000"                   /* read_iov[0].addr 0x7f1234567000 (payload) */
               "4000000010000000"                   /* read_iov[0].len 0x1000000040 */
               "1122334455667788"                   /* read_iov[0].key 0x8877665544332211 */
               "e0ffc000ab7f0000"                   /* read_iov[1].addr 0x7fab00c0ffe0 (payload) */
               "0001000002000000"                   /* read_iov[1].len 0x200000100 */
               "0807060504030201",                  /* read_iov[1].key 0x102030405060708 */
        .type = EFARM_PKT_LONGREAD_MSGRTM,
        .flags = EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_REQ_MSG,
        .hdr_length = 64,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020334},
            {EFARM_PKT_F_MSG_LENGTH, 0x1200000140},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c93},
            {EFARM_PKT_F_READ_IOV_COUNT, 0x2},
        },
        .has_raw_addr = 1,
        .raw_addr = {.gid = {0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                             0x04, 0x1d, 0x2c, 0x3b, 0x4a, 0x59, 0x68, 0x77},
                     .qpn = 0xabcd,
                     .connid = 0xc0de1234},
    },
    {
        .name = "LONGREAD_MSGRTM_read1_connid",
        .hex = "80"                 /* type 128 LONGREAD_MSGRTM */
               "04"                 /* version 4 */
               "0480"               /* flags 0x8004 MSG|CONNID_HDR */
               "34030201"           /* msg_id 0x1020334 */
               "0030000000000000"   /* msg_length 0x3000 */
               "937c6b5a"           /* send_id 0x5a6b7c93 */
               "01000000"           /* read_iov_count 1 */
               "d4c3b2a1"           /* connid 0xa1b2c3d4 */
               "7077666655550000"   /* read_iov[0].addr 0x555566667770 (payload) */
               "0030000000000000"   /* read_iov[0].len 0x3000 */
               "5a5a5a5aa5a5a5a5",  /* read_iov[0].key 0xa5a5a5a55a5a5a5a */
        .type = EFARM_PKT_LONGREAD_MSGRTM,
        .flags = EFARM_REQ_MSG | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 28,
        .nfields = 5,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020334},
            {EFARM_PKT_F_MSG_LENGTH, 0x3000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c93},
            {EFARM_PKT_F_READ_IOV_COUNT, 0x1},
            {EFARM_PKT_F_CONNID, 0xa1b2c3d4},
        },
    },
    {
        .name = "LONGREAD_TAGRTM_read1",
        .hex = "81"                 /* type 129 LONGREAD_TAGRTM */
               "04"                 /* version 4 */
               "0c00"               /* flags 0x000c MSG|TAGGED */
               "34030201"           /* msg_id 0x1020334 */
               "0001000002000000"   /* msg_length 0x200000100 */
               "937c6b5a"           /* send_id 0x5a6b7c93 */
               "01000000"           /* read_iov_count 1 */
               "1122334455667788"   /* tag 0x8877665544332211 */
               "e0ffc000ab7f0000"   /* read_iov[0].addr 0x7fab00c0ffe0 (payload) */
               "0001000002000000"   /* read_iov[0].len 0x200000100 */
               "0807060504030201",  /* read_iov[0].key 0x102030405060708 */
        .type = EFARM_PKT_LONGREAD_TAGRTM,
        .flags = EFARM_REQ_MSG | EFARM_REQ_TAGGED,
        .hdr_length = 32,
        .nfields = 5,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020334},
            {EFARM_PKT_F_MSG_LENGTH, 0x200000100},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c93},
            {EFARM_PKT_F_READ_IOV_COUNT, 0x1},
            {EFARM_PKT_F_TAG, 0x8877665544332211},
        },
    },
    {
        .name = "LONGREAD_TAGRTM_read2_cq_data_connid",
        .hex = "81"                 /* type 129 LONGREAD_TAGRTM */
               "04"                 /* version 4 */
               "0e80"               /* flags 0x800e CQ_DATA_HDR|MSG|TAGGED|CONNID_HDR */
               "34030201"           /* msg_id 0x1020334 */
               "4030000010000000"   /* msg_length 0x1000003040 */
               "937c6b5a"           /* send_id 0x5a6b7c93 */
               "02000000"           /* read_iov_count 2 */
               "1122334455667788"   /* tag 0x8877665544332211 */
               "78695a4b3c2d1e0f"   /* cq_data 0xf1e2d3c4b5a6978 */
               "81706f5e"           /* connid 0x5e6f7081 */
               "7077666655550000"   /* read_iov[0].addr 0x555566667770 (payload) */
               "0030000000000000"   /* read_iov[0].len 0x3000 */
               "5a5a5a5aa5a5a5a5"   /* read_iov[0].key 0xa5a5a5a55a5a5a5a */
               "00705634127f0000"   /* read_iov[1].addr 0x7f1234567000 (payload) */
               "4000000010000000"   /* read_iov[1].len 0x1000000040 */
               "1122334455667788",  /* read_iov[1].key 0x8877665544332211 */
        .type = EFARM_PKT_LONGREAD_TAGRTM,
        .flags = EFARM_REQ_OPT_CQ_DATA_HDR | EFARM_REQ_MSG |
                 EFARM_REQ_TAGGED | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 44,
        .nfields = 7,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020334},
            {EFARM_PKT_F_MSG_LENGTH, 0x1000003040},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c93},
            {EFARM_PKT_F_READ_IOV_COUNT, 0x2},
            {EFARM_PKT_F_TAG, 0x8877665544332211},
            {EFARM_PKT_F_CQ_DATA, 0xf1e2d3c4b5a6978},
            {EFARM_PKT_F_CONNID, 0x5e6f7081},
        },
    },
    {
        .name = "LONGREAD_RTW_iov1_read1",
        .hex = "82"                 /* type 130 LONGREAD_RTW */
               "04"                 /* version 4 */
               "1000"               /* flags 0x0010 RMA */
               "01000000"           /* rma_iov_count 1 */
               "4000000010000000"   /* msg_length 0x1000000040 */
               "967c6b5a"           /* send_id 0x5a6b7c96 */
               "01000000"           /* read_iov_count 1 */
               "e0ffc000ab7f0000"   /* rma_iov[0].addr 0x7fab00c0ffe0 */
               "0001000002000000"   /* rma_iov[0].len 0x200000100 */
               "0807060504030201"   /* rma_iov[0].key 0x102030405060708 */
               "00705634127f0000"   /* read_iov[0].addr 0x7f1234567000 (payload) */
               "4000000010000000"   /* read_iov[0].len 0x1000000040 */
               "1122334455667788",  /* read_iov[0].key 0x8877665544332211 */
        .type = EFARM_PKT_LONGREAD_RTW,
        .flags = EFARM_REQ_RMA,
        .hdr_length = 48,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x1},
            {EFARM_PKT_F_MSG_LENGTH, 0x1000000040},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c96},
            {EFARM_PKT_F_READ_IOV_COUNT, 0x1},
        },
        .nrma_iov = 1,
        .rma_iov = {
            {.addr = 0x00007fab00c0ffe0, .len = 0x200000100, .key = 0x0102030405060708},
        },
    },
    {
        .name = "LONGREAD_RTW_iov2_read2_connid",
        .hex = "82"                 /* type 130 LONGREAD_RTW */
               "04"                 /* version 4 */
               "1080"               /* flags 0x8010 RMA|CONNID_HDR */
               "02000000"           /* rma_iov_count 2 */
               "0031000002000000"   /* msg_length 0x200003100 */
               "967c6b5a"           /* send_id 0x5a6b7c96 */
               "02000000"           /* read_iov_count 2 */
               "00705634127f0000"   /* rma_iov[0].addr 0x7f1234567000 */
               "4000000010000000"   /* rma_iov[0].len 0x1000000040 */
               "1122334455667788"   /* rma_iov[0].key 0x8877665544332211 */
               "e0ffc000ab7f0000"   /* rma_iov[1].addr 0x7fab00c0ffe0 */
               "0001000002000000"   /* rma_iov[1].len 0x200000100 */
               "0807060504030201"   /* rma_iov[1].key 0x102030405060708 */
               "d4c3b2a1"           /* connid 0xa1b2c3d4 */
               "7077666655550000"   /* read_iov[0].addr 0x555566667770 (payload) */
               "0030000000000000"   /* read_iov[0].len 0x3000 */
               "5a5a5a5aa5a5a5a5"   /* read_iov[0].key 0xa5a5a5a55a5a5a5a */
               "e0ffc000ab7f0000"   /* read_iov[1].addr 0x7fab00c0ffe0 (payload) */
               "0001000002000000"   /* read_iov[1].len 0x200000100 */
               "0807060504030201",  /* read_iov[1].key 0x102030405060708 */
        .type = EFARM_PKT_LONGREAD_RTW,
        .flags = EFARM_REQ_RMA | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 76,
        .nfields = 5,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x2},
            {EFARM_PKT_F_MSG_LENGTH, 0x200003100},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c96},
            {EFARM_PKT_F_READ_IOV_COUNT, 0x2},
            {EFARM_PKT_F_CONNID, 0xa1b2c3d4},
        },
        .nrma_iov = 2,
        .rma_iov = {
            {.addr = 0x00007f1234567000, .len = 0x1000000040, .key = 0x8877665544332211},
            {.addr = 0x00007fab00c0ffe0, .len = 0x200000100, .key = 0x0102030405060708},
        },
    },
    {
        .name = "LONGREAD_RTW_iov1_read1_raw_addr_cq_data",
        .hex = "82"                                 /* type 130 LONGREAD_RTW */
               "04"                                 /* version 4 */
               "1300"                               /* flags 0x0013 RAW_ADDR_HDR|CQ_DATA_HDR|RMA */
               "01000000"                           /* rma_iov_count 1 */
               "4000000010000000"                   /* msg_length 0x1000000040 */
               "967c6b5a"                           /* send_id 0x5a6b7c96 */
               "01000000"                           /* read_iov_count 1 */
               "7077666655550000"                   /* rma_iov[0].addr 0x555566667770 */
               "0030000000000000"                   /* rma_iov[0].len 0x3000 */
               "5a5a5a5aa5a5a5a5"                   /* rma_iov[0].key 0xa5a5a5a55a5a5a5a */
               "24000000"                           /* raw addr hdr: size 36 */
               "20010db885a3112233448a2e03707334"   /* gid 2001:db8:85a3:1122:3344:8a2e:370:7334 */
               "2e1f"                               /* raw addr qpn 0x1f2e */
               "0000"                               /* raw addr pad 0 */
               "4d5c6b7a"                           /* raw addr connid 0x7a6b5c4d */
               "0000000000000000"                   /* raw addr reserved 0 */
               "00000000"                           /* raw addr hdr padding 0 */
               "0df0fecaefbeadde"                   /* cq_data 0xdeadbeefcafef00d */
               "00705634127f0000"                   /* read_iov[0].addr 0x7f1234567000 (payload) */
               "4000000010000000"                   /* read_iov[0].len 0x1000000040 */
               "1122334455667788",                  /* read_iov[0].key 0x8877665544332211 */
        .type = EFARM_PKT_LONGREAD_RTW,
        .flags = EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_REQ_OPT_CQ_DATA_HDR | EFARM_REQ_RMA,
        .hdr_length = 96,
        .nfields = 5,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x1},
            {EFARM_PKT_F_MSG_LENGTH, 0x1000000040},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c96},
            {EFARM_PKT_F_READ_IOV_COUNT, 0x1},
            {EFARM_PKT_F_CQ_DATA, 0xdeadbeefcafef00d},
        },
        .nrma_iov = 1,
        .rma_iov = {
            {.addr = 0x0000555566667770, .len = 0x3000, .key = 0xa5a5a5a55a5a5a5a},
        },
        .has_raw_addr = 1,
        .raw_addr = {.gid = {0x20, 0x01, 0x0d, 0xb8, 0x85, 0xa3, 0x11, 0x22,
                             0x33, 0x44, 0x8a, 0x2e, 0x03, 0x70, 0x73, 0x34},
                     .qpn = 0x1f2e,
                     .connid = 0x7a6b5c4d},
    },
    {
        .name = "DC_EAGER_MSGRTM_data",
        .hex = "85"         /* type 133 DC_EAGER_MSGRTM */
               "04"         /* version 4 */
               "0400"       /* flags 0x0004 MSG */
               "04030201"   /* msg_id 0x1020304 */
               "907c6b5a"   /* send_id 0x5a6b7c90 */
               "00000000"   /* padding 0 */
               "a0a1a2a3",  /* application data, 4 bytes */
        .type = EFARM_PKT_DC_EAGER_MSGRTM,
        .flags = EFARM_REQ_MSG,
        .hdr_length = 16,
        .nfields = 2,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020304},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c90},
        },
    },
    {
        .name = "DC_EAGER_MSGRTM_raw_addr",
        .hex = "85"                                 /* type 133 DC_EAGER_MSGRTM */
               "04"                                 /* version 4 */
               "0500"                               /* flags 0x0005 RAW_ADDR_HDR|MSG */
               "04030201"                           /* msg_id 0x1020304 */
               "907c6b5a"                           /* send_id 0x5a6b7c90 */
               "00000000"                           /* padding 0 */
               "24000000"                           /* raw addr hdr: size 36 */
               "fe80000000000000041d2c3b4a596877"   /* gid fe80::41d:2c3b:4a59:6877 */
               "cdab"                               /* raw addr qpn 0xabcd */
               "0000"                               /* raw addr pad 0 */
               "3412dec0"                           /* raw addr connid 0xc0de1234 */
               "0000000000000000"                   /* raw addr reserved 0 */
               "00000000",                          /* raw addr hdr padding 0 */
        .type = EFARM_PKT_DC_EAGER_MSGRTM,
        .flags = EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_REQ_MSG,
        .hdr_length = 56,
        .nfields = 2,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020304},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c90},
        },
        .has_raw_addr = 1,
        .raw_addr = {.gid = {0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                             0x04, 0x1d, 0x2c, 0x3b, 0x4a, 0x59, 0x68, 0x77},
                     .qpn = 0xabcd,
                     .connid = 0xc0de1234},
    },
    {
        .name = "DC_EAGER_TAGRTM_data",
        .hex = "86"                 /* type 134 DC_EAGER_TAGRTM */
               "04"                 /* version 4 */
               "0c00"               /* flags 0x000c MSG|TAGGED */
               "04030201"           /* msg_id 0x1020304 */
               "907c6b5a"           /* send_id 0x5a6b7c90 */
               "00000000"           /* padding 0 */
               "8877665544332211"   /* tag 0x1122334455667788 */
               "a0a1a2a3a4a5",      /* application data, 6 bytes */
        .type = EFARM_PKT_DC_EAGER_TAGRTM,
        .flags = EFARM_REQ_MSG | EFARM_REQ_TAGGED,
        .hdr_length = 24,
        .nfields = 3,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020304},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c90},
            {EFARM_PKT_F_TAG, 0x1122334455667788},
        },
    },
    {
        .name = "DC_EAGER_TAGRTM_cq_data_connid",
        .hex = "86"                 /* type 134 DC_EAGER_TAGRTM */
               "04"                 /* version 4 */
               "0e80"               /* flags 0x800e CQ_DATA_HDR|MSG|TAGGED|CONNID_HDR */
               "04030201"           /* msg_id 0x1020304 */
               "907c6b5a"           /* send_id 0x5a6b7c90 */
               "00000000"           /* padding 0 */
               "8877665544332211"   /* tag 0x1122334455667788 */
               "78695a4b3c2d1e0f"   /* cq_data 0xf1e2d3c4b5a6978 */
               "d4c3b2a1"           /* connid 0xa1b2c3d4 */
               "a0a1",              /* application data, 2 bytes */
        .type = EFARM_PKT_DC_EAGER_TAGRTM,
        .flags = EFARM_REQ_OPT_CQ_DATA_HDR | EFARM_REQ_MSG |
                 EFARM_REQ_TAGGED | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 36,
        .nfields = 5,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020304},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c90},
            {EFARM_PKT_F_TAG, 0x1122334455667788},
            {EFARM_PKT_F_CQ_DATA, 0xf1e2d3c4b5a6978},
            {EFARM_PKT_F_CONNID, 0xa1b2c3d4},
        },
    },
    {
        .name = "DC_MEDIUM_MSGRTM_data",
        .hex = "87"                 /* type 135 DC_MEDIUM_MSGRTM */
               "04"                 /* version 4 */
               "0400"               /* flags 0x0004 MSG */
               "14030201"           /* msg_id 0x1020314 */
               "917c6b5a"           /* send_id 0x5a6b7c91 */
               "00000000"           /* padding 0 */
               "7856341200000000"   /* msg_length (total, addenda) 0x12345678 */
               "efcdab0000000000"   /* seg_offset 0xabcdef */
               "1011121314",        /* segment data, 5 bytes */
        .type = EFARM_PKT_DC_MEDIUM_MSGRTM,
        .flags = EFARM_REQ_MSG,
        .hdr_length = 32,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020314},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c91},
            {EFARM_PKT_F_MSG_LENGTH, 0x12345678},
            {EFARM_PKT_F_SEG_OFFSET, 0xabcdef},
        },
    },
    {
        .name = "DC_MEDIUM_MSGRTM_connid",
        .hex = "87"                 /* type 135 DC_MEDIUM_MSGRTM */
               "04"                 /* version 4 */
               "0480"               /* flags 0x8004 MSG|CONNID_HDR */
               "14030201"           /* msg_id 0x1020314 */
               "917c6b5a"           /* send_id 0x5a6b7c91 */
               "00000000"           /* padding 0 */
               "7856341200000000"   /* msg_length (total, addenda) 0x12345678 */
               "7556341200000000"   /* seg_offset 0x12345675 */
               "81706f5e"           /* connid 0x5e6f7081 */
               "101112",            /* segment data, 3 bytes */
        .type = EFARM_PKT_DC_MEDIUM_MSGRTM,
        .flags = EFARM_REQ_MSG | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 36,
        .nfields = 5,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020314},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c91},
            {EFARM_PKT_F_MSG_LENGTH, 0x12345678},
            {EFARM_PKT_F_SEG_OFFSET, 0x12345675},
            {EFARM_PKT_F_CONNID, 0x5e6f7081},
        },
    },
    {
        .name = "DC_MEDIUM_TAGRTM_data",
        .hex = "88"                 /* type 136 DC_MEDIUM_TAGRTM */
               "04"                 /* version 4 */
               "0c00"               /* flags 0x000c MSG|TAGGED */
               "14030201"           /* msg_id 0x1020314 */
               "917c6b5a"           /* send_id 0x5a6b7c91 */
               "00000000"           /* padding 0 */
               "7856341200000000"   /* msg_length (total, addenda) 0x12345678 */
               "efcdab0000000000"   /* seg_offset 0xabcdef */
               "1122334455667788"   /* tag 0x8877665544332211 */
               "10111213141516",    /* segment data, 7 bytes */
        .type = EFARM_PKT_DC_MEDIUM_TAGRTM,
        .flags = EFARM_REQ_MSG | EFARM_REQ_TAGGED,
        .hdr_length = 40,
        .nfields = 5,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020314},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c91},
            {EFARM_PKT_F_MSG_LENGTH, 0x12345678},
            {EFARM_PKT_F_SEG_OFFSET, 0xabcdef},
            {EFARM_PKT_F_TAG, 0x8877665544332211},
        },
    },
    {
        .name = "DC_MEDIUM_TAGRTM_raw_addr",
        .hex = "88"                                 /* type 136 DC_MEDIUM_TAGRTM */
               "04"                                 /* version 4 */
               "0d00"                               /* flags 0x000d RAW_ADDR_HDR|MSG|TAGGED */
               "14030201"                           /* msg_id 0x1020314 */
               "917c6b5a"                           /* send_id 0x5a6b7c91 */
               "00000000"                           /* padding 0 */
               "7856341200000000"                   /* msg_length (total, addenda) 0x12345678 */
               "efcdab0000000000"                   /* seg_offset 0xabcdef */
               "1122334455667788"                   /* tag 0x8877665544332211 */
               "24000000"                           /* raw addr hdr: size 36 */
               "20010db885a3112233448a2e03707334"   /* gid 2001:db8:85a3:1122:3344:8a2e:370:7334 */
               "2e1f"                               /* raw addr qpn 0x1f2e */
               "0000"                               /* raw addr pad 0 */
               "4d5c6b7a"                           /* raw addr connid 0x7a6b5c4d */
               "0000000000000000"                   /* raw addr reserved 0 */
               "00000000"                           /* raw addr hdr padding 0 */
               "10111213",                          /* segment data, 4 bytes */
        .type = EFARM_PKT_DC_MEDIUM_TAGRTM,
        .flags = EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_REQ_MSG | EFARM_REQ_TAGGED,
        .hdr_length = 80,
        .nfields = 5,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020314},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c91},
            {EFARM_PKT_F_MSG_LENGTH, 0x12345678},
            {EFARM_PKT_F_SEG_OFFSET, 0xabcdef},
            {EFARM_PKT_F_TAG, 0x8877665544332211},
        },
        .has_raw_addr = 1,
        .raw_addr = {.gid = {0x20, 0x01, 0x0d, 0xb8, 0x85, 0xa3, 0x11, 0x22,
                             0x33, 0x44, 0x8a, 0x2e, 0x03, 0x70, 0x73, 0x34},
                     .qpn = 0x1f2e,
                     .connid = 0x7a6b5c4d},
    },
    {
        .name = "DC_LONGCTS_MSGRTM_data",
        .hex = "89"                 /* type 137 DC_LONGCTS_MSGRTM */
               "04"                 /* version 4 */
               "0400"               /* flags 0x0004 MSG */
               "24030201"           /* msg_id 0x1020324 */
               "0010008002000000"   /* msg_length 0x280001000 */
               "927c6b5a"           /* send_id 0x5a6b7c92 */
               "20004000"           /* credit_request 0x400020 */
               "404142",            /* first data, 3 bytes */
        .type = EFARM_PKT_DC_LONGCTS_MSGRTM,
        .flags = EFARM_REQ_MSG,
        .hdr_length = 24,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020324},
            {EFARM_PKT_F_MSG_LENGTH, 0x280001000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c92},
            {EFARM_PKT_F_CREDIT_REQUEST, 0x400020},
        },
    },
    {
        .name = "DC_LONGCTS_MSGRTM_connid",
        .hex = "89"                 /* type 137 DC_LONGCTS_MSGRTM */
               "04"                 /* version 4 */
               "0480"               /* flags 0x8004 MSG|CONNID_HDR */
               "24030201"           /* msg_id 0x1020324 */
               "0010008002000000"   /* msg_length 0x280001000 */
               "927c6b5a"           /* send_id 0x5a6b7c92 */
               "20004000"           /* credit_request 0x400020 */
               "d4c3b2a1",          /* connid 0xa1b2c3d4 */
        .type = EFARM_PKT_DC_LONGCTS_MSGRTM,
        .flags = EFARM_REQ_MSG | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 28,
        .nfields = 5,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020324},
            {EFARM_PKT_F_MSG_LENGTH, 0x280001000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c92},
            {EFARM_PKT_F_CREDIT_REQUEST, 0x400020},
            {EFARM_PKT_F_CONNID, 0xa1b2c3d4},
        },
    },
    {
        .name = "DC_LONGCTS_TAGRTM_data",
        .hex = "8a"                 /* type 138 DC_LONGCTS_TAGRTM */
               "04"                 /* version 4 */
               "0c00"               /* flags 0x000c MSG|TAGGED */
               "24030201"           /* msg_id 0x1020324 */
               "0010008002000000"   /* msg_length 0x280001000 */
               "927c6b5a"           /* send_id 0x5a6b7c92 */
               "20004000"           /* credit_request 0x400020 */
               "8877665544332211"   /* tag 0x1122334455667788 */
               "4041",              /* first data, 2 bytes */
        .type = EFARM_PKT_DC_LONGCTS_TAGRTM,
        .flags = EFARM_REQ_MSG | EFARM_REQ_TAGGED,
        .hdr_length = 32,
        .nfields = 5,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020324},
            {EFARM_PKT_F_MSG_LENGTH, 0x280001000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c92},
            {EFARM_PKT_F_CREDIT_REQUEST, 0x400020},
            {EFARM_PKT_F_TAG, 0x1122334455667788},
        },
    },
    {
        .name = "DC_LONGCTS_TAGRTM_raw_addr_cq_data",
        .hex = "8a"                                 /* type 138 DC_LONGCTS_TAGRTM */
               "04"                                 /* version 4 */
               "0f00" /* flags 0x000f RAW_ADDR_HDR|CQ_DATA_HDR|MSG|TAGGED */
               "24030201"                           /* msg_id 0x1020324 */
               "0010008002000000"                   /* msg_length 0x280001000 */
               "927c6b5a"                           /* send_id 0x5a6b7c92 */
               "20004000"                           /* credit_request 0x400020 */
               "8877665544332211"                   /* tag 0x1122334455667788 */
               "24000000"                           /* raw addr hdr: size 36 */
               "fe80000000000000041d2c3b4a596877"   /* gid fe80::41d:2c3b:4a59:6877 */
               "cdab"                               /* raw addr qpn 0xabcd */
               "0000"                               /* raw addr pad 0 */
               "3412dec0"                           /* raw addr connid 0xc0de1234 */
               "0000000000000000"                   /* raw addr reserved 0 */
               "00000000"                           /* raw addr hdr padding 0 */
               "0df0fecaefbeadde"                   /* cq_data 0xdeadbeefcafef00d */
               "4041424344",                        /* first data, 5 bytes */
        .type = EFARM_PKT_DC_LONGCTS_TAGRTM,
        .flags = EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_REQ_OPT_CQ_DATA_HDR |
                 EFARM_REQ_MSG | EFARM_REQ_TAGGED,
        .hdr_length = 80,
        .nfields = 6,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020324},
            {EFARM_PKT_F_MSG_LENGTH, 0x280001000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c92},
            {EFARM_PKT_F_CREDIT_REQUEST, 0x400020},
            {EFARM_PKT_F_TAG, 0x1122334455667788},
            {EFARM_PKT_F_CQ_DATA, 0xdeadbeefcafef00d},
        },
        .has_raw_addr = 1,
        .raw_addr = {.gid = {0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                             0x04, 0x1d, 0x2c, 0x3b, 0x4a, 0x59, 0x68, 0x77},
                     .qpn = 0xabcd,
                     .connid = 0xc0de1234},
    },
    {
        .name = "DC_EAGER_RTW_iov1_data",
        .hex = "8b"                 /* type 139 DC_EAGER_RTW */
               "04"                 /* version 4 */
               "1000"               /* flags 0x0010 RMA */
               "01000000"           /* rma_iov_count 1 */
               "957c6b5a"           /* send_id 0x5a6b7c95 */
               "00000000"           /* padding 0 */
               "40332211007f0000"   /* rma_iov[0].addr 0x7f0011223340 */
               "0600000000000000"   /* rma_iov[0].len 0x6 */
               "0100feca00000000"   /* rma_iov[0].key 0xcafe0001 */
               "505152535455",      /* write data, 6 bytes */
        .type = EFARM_PKT_DC_EAGER_RTW,
        .flags = EFARM_REQ_RMA,
        .hdr_length = 40,
        .nfields = 2,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x1},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c95},
        },
        .nrma_iov = 1,
        .rma_iov = {
            {.addr = 0x00007f0011223340, .len = 0x6, .key = 0x00000000cafe0001},
        },
    },
    {
        .name = "DC_EAGER_RTW_iov2_connid",
        .hex = "8b"                 /* type 139 DC_EAGER_RTW */
               "04"                 /* version 4 */
               "1080"               /* flags 0x8010 RMA|CONNID_HDR */
               "02000000"           /* rma_iov_count 2 */
               "957c6b5a"           /* send_id 0x5a6b7c95 */
               "00000000"           /* padding 0 */
               "00705634127f0000"   /* rma_iov[0].addr 0x7f1234567000 */
               "4000000010000000"   /* rma_iov[0].len 0x1000000040 */
               "1122334455667788"   /* rma_iov[0].key 0x8877665544332211 */
               "e0ffc000ab7f0000"   /* rma_iov[1].addr 0x7fab00c0ffe0 */
               "0001000002000000"   /* rma_iov[1].len 0x200000100 */
               "0807060504030201"   /* rma_iov[1].key 0x102030405060708 */
               "81706f5e"           /* connid 0x5e6f7081 */
               "505152",            /* write data, 3 bytes */
        .type = EFARM_PKT_DC_EAGER_RTW,
        .flags = EFARM_REQ_RMA | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 68,
        .nfields = 3,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x2},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c95},
            {EFARM_PKT_F_CONNID, 0x5e6f7081},
        },
        .nrma_iov = 2,
        .rma_iov = {
            {.addr = 0x00007f1234567000, .len = 0x1000000040, .key = 0x8877665544332211},
            {.addr = 0x00007fab00c0ffe0, .len = 0x200000100, .key = 0x0102030405060708},
        },
    },
    {
        .name = "DC_EAGER_RTW_iov0",
        .hex = "8b"         /* type 139 DC_EAGER_RTW */
               "04"         /* version 4 */
               "1000"       /* flags 0x0010 RMA */
               "00000000"   /* rma_iov_count 0 */
               "957c6b5a"   /* send_id 0x5a6b7c95 */
               "00000000",  /* padding 0 */
        .type = EFARM_PKT_DC_EAGER_RTW,
        .flags = EFARM_REQ_RMA,
        .hdr_length = 16,
        .nfields = 2,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x0},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c95},
        },
    },
    {
        .name = "DC_LONGCTS_RTW_iov1",
        .hex = "8c"                 /* type 140 DC_LONGCTS_RTW */
               "04"                 /* version 4 */
               "1000"               /* flags 0x0010 RMA */
               "01000000"           /* rma_iov_count 1 */
               "0000000003000000"   /* msg_length 0x300000000 */
               "967c6b5a"           /* send_id 0x5a6b7c96 */
               "22004000"           /* credit_request 0x400022 */
               "00705634127f0000"   /* rma_iov[0].addr 0x7f1234567000 */
               "4000000010000000"   /* rma_iov[0].len 0x1000000040 */
               "1122334455667788"   /* rma_iov[0].key 0x8877665544332211 */
               "58595a",            /* first data, 3 bytes */
        .type = EFARM_PKT_DC_LONGCTS_RTW,
        .flags = EFARM_REQ_RMA,
        .hdr_length = 48,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x1},
            {EFARM_PKT_F_MSG_LENGTH, 0x300000000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c96},
            {EFARM_PKT_F_CREDIT_REQUEST, 0x400022},
        },
        .nrma_iov = 1,
        .rma_iov = {
            {.addr = 0x00007f1234567000, .len = 0x1000000040, .key = 0x8877665544332211},
        },
    },
    {
        .name = "DC_LONGCTS_RTW_iov0_raw_addr",
        .hex = "8c"                                 /* type 140 DC_LONGCTS_RTW */
               "04"                                 /* version 4 */
               "1100"                               /* flags 0x0011 RAW_ADDR_HDR|RMA */
               "00000000"                           /* rma_iov_count 0 */
               "0000000003000000"                   /* msg_length 0x300000000 */
               "967c6b5a"                           /* send_id 0x5a6b7c96 */
               "22004000"                           /* credit_request 0x400022 */
               "24000000"                           /* raw addr hdr: size 36 */
               "20010db885a3112233448a2e03707334"   /* gid 2001:db8:85a3:1122:3344:8a2e:370:7334 */
               "2e1f"                               /* raw addr qpn 0x1f2e */
               "0000"                               /* raw addr pad 0 */
               "4d5c6b7a"                           /* raw addr connid 0x7a6b5c4d */
               "0000000000000000"                   /* raw addr reserved 0 */
               "00000000",                          /* raw addr hdr padding 0 */
        .type = EFARM_PKT_DC_LONGCTS_RTW,
        .flags = EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_REQ_RMA,
        .hdr_length = 64,
        .nfields = 4,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x0},
            {EFARM_PKT_F_MSG_LENGTH, 0x300000000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c96},
            {EFARM_PKT_F_CREDIT_REQUEST, 0x400022},
        },
        .has_raw_addr = 1,
        .raw_addr = {.gid = {0x20, 0x01, 0x0d, 0xb8, 0x85, 0xa3, 0x11, 0x22,
                             0x33, 0x44, 0x8a, 0x2e, 0x03, 0x70, 0x73, 0x34},
                     .qpn = 0x1f2e,
                     .connid = 0x7a6b5c4d},
    },
    {
        .name = "DC_LONGCTS_RTW_iov2_cq_data_connid",
        .hex = "8c"                 /* type 140 DC_LONGCTS_RTW */
               "04"                 /* version 4 */
               "1280"               /* flags 0x8012 CQ_DATA_HDR|RMA|CONNID_HDR */
               "02000000"           /* rma_iov_count 2 */
               "0000000003000000"   /* msg_length 0x300000000 */
               "967c6b5a"           /* send_id 0x5a6b7c96 */
               "22004000"           /* credit_request 0x400022 */
               "e0ffc000ab7f0000"   /* rma_iov[0].addr 0x7fab00c0ffe0 */
               "0001000002000000"   /* rma_iov[0].len 0x200000100 */
               "0807060504030201"   /* rma_iov[0].key 0x102030405060708 */
               "7077666655550000"   /* rma_iov[1].addr 0x555566667770 */
               "0030000000000000"   /* rma_iov[1].len 0x3000 */
               "5a5a5a5aa5a5a5a5"   /* rma_iov[1].key 0xa5a5a5a55a5a5a5a */
               "78695a4b3c2d1e0f"   /* cq_data 0xf1e2d3c4b5a6978 */
               "d4c3b2a1"           /* connid 0xa1b2c3d4 */
               "58595a5b",          /* first data, 4 bytes */
        .type = EFARM_PKT_DC_LONGCTS_RTW,
        .flags = EFARM_REQ_OPT_CQ_DATA_HDR | EFARM_REQ_RMA | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 84,
        .nfields = 6,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x2},
            {EFARM_PKT_F_MSG_LENGTH, 0x300000000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c96},
            {EFARM_PKT_F_CREDIT_REQUEST, 0x400022},
            {EFARM_PKT_F_CQ_DATA, 0xf1e2d3c4b5a6978},
            {EFARM_PKT_F_CONNID, 0xa1b2c3d4},
        },
        .nrma_iov = 2,
        .rma_iov = {
            {.addr = 0x00007fab00c0ffe0, .len = 0x200000100, .key = 0x0102030405060708},
            {.addr = 0x0000555566667770, .len = 0x3000, .key = 0xa5a5a5a55a5a5a5a},
        },
    },
    {
        .name = "DC_WRITE_RTA_iov1_data",
        .hex = "8d"                 /* type 141 DC_WRITE_RTA */
               "04"                 /* version 4 */
               "2000"               /* flags 0x0020 ATOMIC */
               "54030201"           /* msg_id 0x1020354 */
               "01000000"           /* rma_iov_count 1 */
               "07000000"           /* atomic_datatype 7 */
               "02000000"           /* atomic_op 2 */
               "987c6b5a"           /* send_id (addenda) 0x5a6b7c98 */
               "00705634127f0000"   /* rma_iov[0].addr 0x7f1234567000 */
               "4000000010000000"   /* rma_iov[0].len 0x1000000040 */
               "1122334455667788"   /* rma_iov[0].key 0x8877665544332211 */
               "9091929394959697",  /* atomic operand(s), 8 bytes */
        .type = EFARM_PKT_DC_WRITE_RTA,
        .flags = EFARM_REQ_ATOMIC,
        .hdr_length = 48,
        .nfields = 5,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020354},
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x1},
            {EFARM_PKT_F_ATOMIC_DATATYPE, 0x7},
            {EFARM_PKT_F_ATOMIC_OP, 0x2},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c98},
        },
        .nrma_iov = 1,
        .rma_iov = {
            {.addr = 0x00007f1234567000, .len = 0x1000000040, .key = 0x8877665544332211},
        },
    },
    {
        .name = "DC_WRITE_RTA_iov2_connid",
        .hex = "8d"                 /* type 141 DC_WRITE_RTA */
               "04"                 /* version 4 */
               "2080"               /* flags 0x8020 ATOMIC|CONNID_HDR */
               "54030201"           /* msg_id 0x1020354 */
               "02000000"           /* rma_iov_count 2 */
               "04000000"           /* atomic_datatype 4 */
               "06000000"           /* atomic_op 6 */
               "987c6b5a"           /* send_id (addenda) 0x5a6b7c98 */
               "e0ffc000ab7f0000"   /* rma_iov[0].addr 0x7fab00c0ffe0 */
               "0001000002000000"   /* rma_iov[0].len 0x200000100 */
               "0807060504030201"   /* rma_iov[0].key 0x102030405060708 */
               "7077666655550000"   /* rma_iov[1].addr 0x555566667770 */
               "0030000000000000"   /* rma_iov[1].len 0x3000 */
               "5a5a5a5aa5a5a5a5"   /* rma_iov[1].key 0xa5a5a5a55a5a5a5a */
               "d4c3b2a1"           /* connid 0xa1b2c3d4 */
               "9091929394959697",  /* atomic operand(s), 8 bytes */
        .type = EFARM_PKT_DC_WRITE_RTA,
        .flags = EFARM_REQ_ATOMIC | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 76,
        .nfields = 6,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020354},
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x2},
            {EFARM_PKT_F_ATOMIC_DATATYPE, 0x4},
            {EFARM_PKT_F_ATOMIC_OP, 0x6},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c98},
            {EFARM_PKT_F_CONNID, 0xa1b2c3d4},
        },
        .nrma_iov = 2,
        .rma_iov = {
            {.addr = 0x00007fab00c0ffe0, .len = 0x200000100, .key = 0x0102030405060708},
            {.addr = 0x0000555566667770, .len = 0x3000, .key = 0xa5a5a5a55a5a5a5a},
        },
    },
    {
        .name = "RUNTCTS_MSGRTM_data",
        .hex = "8e"                 /* type 142 RUNTCTS_MSGRTM */
               "04"                 /* version 4 */
               "0400"               /* flags 0x0004 MSG */
               "44030201"           /* msg_id 0x1020344 */
               "0000000001000000"   /* msg_length 0x100000000 */
               "947c6b5a"           /* send_id 0x5a6b7c94 */
               "21004000"           /* credit_request 0x400021 */
               "f81f010000000000"   /* seg_offset 0x11ff8 */
               "0020010000000000"   /* runt_length 0x12000 */
               "7071727374757677",  /* runt data, 8 bytes */
        .type = EFARM_PKT_RUNTCTS_MSGRTM,
        .flags = EFARM_REQ_MSG,
        .hdr_length = 40,
        .nfields = 6,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020344},
            {EFARM_PKT_F_MSG_LENGTH, 0x100000000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c94},
            {EFARM_PKT_F_CREDIT_REQUEST, 0x400021},
            {EFARM_PKT_F_SEG_OFFSET, 0x11ff8},
            {EFARM_PKT_F_RUNT_LENGTH, 0x12000},
        },
    },
    {
        .name = "RUNTCTS_MSGRTM_raw_addr",
        .hex = "8e"                                 /* type 142 RUNTCTS_MSGRTM */
               "04"                                 /* version 4 */
               "0500"                               /* flags 0x0005 RAW_ADDR_HDR|MSG */
               "44030201"                           /* msg_id 0x1020344 */
               "0000000001000000"                   /* msg_length 0x100000000 */
               "947c6b5a"                           /* send_id 0x5a6b7c94 */
               "21004000"                           /* credit_request 0x400021 */
               "0000000000000000"                   /* seg_offset 0 */
               "0010000000000000"                   /* runt_length 0x1000 */
               "24000000"                           /* raw addr hdr: size 36 */
               "fe80000000000000041d2c3b4a596877"   /* gid fe80::41d:2c3b:4a59:6877 */
               "cdab"                               /* raw addr qpn 0xabcd */
               "0000"                               /* raw addr pad 0 */
               "3412dec0"                           /* raw addr connid 0xc0de1234 */
               "0000000000000000"                   /* raw addr reserved 0 */
               "00000000"                           /* raw addr hdr padding 0 */
               "7071727374",                        /* runt data, 5 bytes */
        .type = EFARM_PKT_RUNTCTS_MSGRTM,
        .flags = EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_REQ_MSG,
        .hdr_length = 80,
        .nfields = 6,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020344},
            {EFARM_PKT_F_MSG_LENGTH, 0x100000000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c94},
            {EFARM_PKT_F_CREDIT_REQUEST, 0x400021},
            {EFARM_PKT_F_SEG_OFFSET, 0x0},
            {EFARM_PKT_F_RUNT_LENGTH, 0x1000},
        },
        .has_raw_addr = 1,
        .raw_addr = {.gid = {0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                             0x04, 0x1d, 0x2c, 0x3b, 0x4a, 0x59, 0x68, 0x77},
                     .qpn = 0xabcd,
                     .connid = 0xc0de1234},
    },
    {
        .name = "RUNTCTS_TAGRTM_data",
        .hex = "8f"                 /* type 143 RUNTCTS_TAGRTM */
               "04"                 /* version 4 */
               "0c00"               /* flags 0x000c MSG|TAGGED */
               "44030201"           /* msg_id 0x1020344 */
               "0000000001000000"   /* msg_length 0x100000000 */
               "947c6b5a"           /* send_id 0x5a6b7c94 */
               "21004000"           /* credit_request 0x400021 */
               "f81f010000000000"   /* seg_offset 0x11ff8 */
               "0020010000000000"   /* runt_length 0x12000 */
               "8877665544332211"   /* tag 0x1122334455667788 */
               "707172",            /* runt data, 3 bytes */
        .type = EFARM_PKT_RUNTCTS_TAGRTM,
        .flags = EFARM_REQ_MSG | EFARM_REQ_TAGGED,
        .hdr_length = 48,
        .nfields = 7,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020344},
            {EFARM_PKT_F_MSG_LENGTH, 0x100000000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c94},
            {EFARM_PKT_F_CREDIT_REQUEST, 0x400021},
            {EFARM_PKT_F_SEG_OFFSET, 0x11ff8},
            {EFARM_PKT_F_RUNT_LENGTH, 0x12000},
            {EFARM_PKT_F_TAG, 0x1122334455667788},
        },
    },
    {
        .name = "RUNTCTS_TAGRTM_connid",
        .hex = "8f"                 /* type 143 RUNTCTS_TAGRTM */
               "04"                 /* version 4 */
               "0c80"               /* flags 0x800c MSG|TAGGED|CONNID_HDR */
               "44030201"           /* msg_id 0x1020344 */
               "0000020000000000"   /* msg_length 0x20000 */
               "947c6b5a"           /* send_id 0x5a6b7c94 */
               "21004000"           /* credit_request 0x400021 */
               "fcff010000000000"   /* seg_offset 0x1fffc */
               "0000020000000000"   /* runt_length 0x20000 */
               "8877665544332211"   /* tag 0x1122334455667788 */
               "81706f5e"           /* connid 0x5e6f7081 */
               "70717273",          /* runt data, 4 bytes */
        .type = EFARM_PKT_RUNTCTS_TAGRTM,
        .flags = EFARM_REQ_MSG | EFARM_REQ_TAGGED | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 52,
        .nfields = 8,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020344},
            {EFARM_PKT_F_MSG_LENGTH, 0x20000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c94},
            {EFARM_PKT_F_CREDIT_REQUEST, 0x400021},
            {EFARM_PKT_F_SEG_OFFSET, 0x1fffc},
            {EFARM_PKT_F_RUNT_LENGTH, 0x20000},
            {EFARM_PKT_F_TAG, 0x1122334455667788},
            {EFARM_PKT_F_CONNID, 0x5e6f7081},
        },
    },
    {
        .name = "RUNTCTS_RTW_iov1",
        .hex = "90"                 /* type 144 RUNTCTS_RTW */
               "04"                 /* version 4 */
               "1000"               /* flags 0x0010 RMA */
               "01000000"           /* rma_iov_count 1 */
               "0000008000000000"   /* msg_length 0x80000000 */
               "977c6b5a"           /* send_id 0x5a6b7c97 */
               "23004000"           /* credit_request 0x400023 */
               "f03f000000000000"   /* seg_offset 0x3ff0 */
               "0040000000000000"   /* runt_length 0x4000 */
               "00705634127f0000"   /* rma_iov[0].addr 0x7f1234567000 */
               "4000000010000000"   /* rma_iov[0].len 0x1000000040 */
               "1122334455667788"   /* rma_iov[0].key 0x8877665544332211 */
               "78797a7b7c7d7e7f",  /* runt data, 8 bytes */
        .type = EFARM_PKT_RUNTCTS_RTW,
        .flags = EFARM_REQ_RMA,
        .hdr_length = 64,
        .nfields = 6,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x1},
            {EFARM_PKT_F_MSG_LENGTH, 0x80000000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c97},
            {EFARM_PKT_F_CREDIT_REQUEST, 0x400023},
            {EFARM_PKT_F_SEG_OFFSET, 0x3ff0},
            {EFARM_PKT_F_RUNT_LENGTH, 0x4000},
        },
        .nrma_iov = 1,
        .rma_iov = {
            {.addr = 0x00007f1234567000, .len = 0x1000000040, .key = 0x8877665544332211},
        },
    },
    {
        .name = "RUNTCTS_RTW_iov2_cq_data_connid",
        .hex = "90"                 /* type 144 RUNTCTS_RTW */
               "04"                 /* version 4 */
               "1280"               /* flags 0x8012 CQ_DATA_HDR|RMA|CONNID_HDR */
               "02000000"           /* rma_iov_count 2 */
               "0000008000000000"   /* msg_length 0x80000000 */
               "977c6b5a"           /* send_id 0x5a6b7c97 */
               "23004000"           /* credit_request 0x400023 */
               "f03f000000000000"   /* seg_offset 0x3ff0 */
               "0040000000000000"   /* runt_length 0x4000 */
               "00705634127f0000"   /* rma_iov[0].addr 0x7f1234567000 */
               "4000000010000000"   /* rma_iov[0].len 0x1000000040 */
               "1122334455667788"   /* rma_iov[0].key 0x8877665544332211 */
               "e0ffc000ab7f0000"   /* rma_iov[1].addr 0x7fab00c0ffe0 */
               "0001000002000000"   /* rma_iov[1].len 0x200000100 */
               "0807060504030201"   /* rma_iov[1].key 0x102030405060708 */
               "0df0fecaefbeadde"   /* cq_data 0xdeadbeefcafef00d */
               "d4c3b2a1"           /* connid 0xa1b2c3d4 */
               "78797a7b7c7d",      /* runt data, 6 bytes */
        .type = EFARM_PKT_RUNTCTS_RTW,
        .flags = EFARM_REQ_OPT_CQ_DATA_HDR | EFARM_REQ_RMA | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 100,
        .nfields = 8,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x2},
            {EFARM_PKT_F_MSG_LENGTH, 0x80000000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c97},
            {EFARM_PKT_F_CREDIT_REQUEST, 0x400023},
            {EFARM_PKT_F_SEG_OFFSET, 0x3ff0},
            {EFARM_PKT_F_RUNT_LENGTH, 0x4000},
            {EFARM_PKT_F_CQ_DATA, 0xdeadbeefcafef00d},
            {EFARM_PKT_F_CONNID, 0xa1b2c3d4},
        },
        .nrma_iov = 2,
        .rma_iov = {
            {.addr = 0x00007f1234567000, .len = 0x1000000040, .key = 0x8877665544332211},
            {.addr = 0x00007fab00c0ffe0, .len = 0x200000100, .key = 0x0102030405060708},
        },
    },
    {
        .name = "RUNTCTS_RTW_iov0_raw_addr",
        .hex = "90"                                 /* type 144 RUNTCTS_RTW */
               "04"                                 /* version 4 */
               "1100"                               /* flags 0x0011 RAW_ADDR_HDR|RMA */
               "00000000"                           /* rma_iov_count 0 */
               "0000008000000000"                   /* msg_length 0x80000000 */
               "977c6b5a"                           /* send_id 0x5a6b7c97 */
               "23004000"                           /* credit_request 0x400023 */
               "1000000000000000"                   /* seg_offset 0x10 */
               "0040000000000000"                   /* runt_length 0x4000 */
               "24000000"                           /* raw addr hdr: size 36 */
               "20010db885a3112233448a2e03707334"   /* gid 2001:db8:85a3:1122:3344:8a2e:370:7334 */
               "2e1f"                               /* raw addr qpn 0x1f2e */
               "0000"                               /* raw addr pad 0 */
               "4d5c6b7a"                           /* raw addr connid 0x7a6b5c4d */
               "0000000000000000"                   /* raw addr reserved 0 */
               "00000000"                           /* raw addr hdr padding 0 */
               "7879",                              /* runt data, 2 bytes */
        .type = EFARM_PKT_RUNTCTS_RTW,
        .flags = EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_REQ_RMA,
        .hdr_length = 80,
        .nfields = 6,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x0},
            {EFARM_PKT_F_MSG_LENGTH, 0x80000000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c97},
            {EFARM_PKT_F_CREDIT_REQUEST, 0x400023},
            {EFARM_PKT_F_SEG_OFFSET, 0x10},
            {EFARM_PKT_F_RUNT_LENGTH, 0x4000},
        },
        .has_raw_addr = 1,
        .raw_addr = {.gid = {0x20, 0x01, 0x0d, 0xb8, 0x85, 0xa3, 0x11, 0x22,
                             0x33, 0x44, 0x8a, 0x2e, 0x03, 0x70, 0x73, 0x34},
                     .qpn = 0x1f2e,
                     .connid = 0x7a6b5c4d},
    },
    {
        .name = "RUNTREAD_MSGRTM_read1",
        .hex = "91"                 /* type 145 RUNTREAD_MSGRTM */
               "04"                 /* version 4 */
               "0400"               /* flags 0x0004 MSG */
               "44030201"           /* msg_id 0x1020344 */
               "0000000001000000"   /* msg_length 0x100000000 */
               "947c6b5a"           /* send_id 0x5a6b7c94 */
               "01000000"           /* read_iov_count 1 */
               "f81f010000000000"   /* seg_offset 0x11ff8 */
               "0020010000000000"   /* runt_length 0x12000 */
               "00705634127f0000"   /* read_iov[0].addr 0x7f1234567000 (payload) */
               "4000000010000000"   /* read_iov[0].len 0x1000000040 */
               "1122334455667788"   /* read_iov[0].key 0x8877665544332211 */
               "7071727374757677",  /* runt data, 8 bytes */
        .type = EFARM_PKT_RUNTREAD_MSGRTM,
        .flags = EFARM_REQ_MSG,
        .hdr_length = 40,
        .nfields = 6,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020344},
            {EFARM_PKT_F_MSG_LENGTH, 0x100000000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c94},
            {EFARM_PKT_F_READ_IOV_COUNT, 0x1},
            {EFARM_PKT_F_SEG_OFFSET, 0x11ff8},
            {EFARM_PKT_F_RUNT_LENGTH, 0x12000},
        },
    },
    {
        .name = "RUNTREAD_MSGRTM_read2_raw_addr",
        .hex = "91"                                 /* type 145 RUNTREAD_MSGRTM */
               "04"                                 /* version 4 */
               "0500"                               /* flags 0x0005 RAW_ADDR_HDR|MSG */
               "44030201"                           /* msg_id 0x1020344 */
               "0000000001000000"                   /* msg_length 0x100000000 */
               "947c6b5a"                           /* send_id 0x5a6b7c94 */
               "02000000"                           /* read_iov_count 2 */
               "0080000000000000"                   /* seg_offset 0x8000 */
               "0480000000000000"                   /* runt_length 0x8004 */
               "24000000"                           /* raw addr hdr: size 36 */
               "fe80000000000000041d2c3b4a596877"   /* gid fe80::41d:2c3b:4a59:6877 */
               "cdab"                               /* raw addr qpn 0xabcd */
               "0000"                               /* raw addr pad 0 */
               "3412dec0"                           /* raw addr connid 0xc0de1234 */
               "0000000000000000"                   /* raw addr reserved 0 */
               "00000000"                           /* raw addr hdr padding 0 */
               "00705634127f0000"                   /* read_iov[0].addr 0x7f1234567000 (payload) */
               "4000000010000000"                   /* read_iov[0].len 0x1000000040 */
               "1122334455667788"                   /* read_iov[0].key 0x8877665544332211 */
               "e0ffc000ab7f0000"                   /* read_iov[1].addr 0x7fab00c0ffe0 (payload) */
               "0001000002000000"                   /* read_iov[1].len 0x200000100 */
               "0807060504030201"                   /* read_iov[1].key 0x102030405060708 */
               "70717273",                          /* runt data, 4 bytes */
        .type = EFARM_PKT_RUNTREAD_MSGRTM,
        .flags = EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_REQ_MSG,
        .hdr_length = 80,
        .nfields = 6,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020344},
            {EFARM_PKT_F_MSG_LENGTH, 0x100000000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c94},
            {EFARM_PKT_F_READ_IOV_COUNT, 0x2},
            {EFARM_PKT_F_SEG_OFFSET, 0x8000},
            {EFARM_PKT_F_RUNT_LENGTH, 0x8004},
        },
        .has_raw_addr = 1,
        .raw_addr = {.gid = {0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                             0x04, 0x1d, 0x2c, 0x3b, 0x4a, 0x59, 0x68, 0x77},
                     .qpn = 0xabcd,
                     .connid = 0xc0de1234},
    },
    {
        .name = "RUNTREAD_TAGRTM_read1",
        .hex = "92"                 /* type 146 RUNTREAD_TAGRTM */
               "04"                 /* version 4 */
               "0c00"               /* flags 0x000c MSG|TAGGED */
               "44030201"           /* msg_id 0x1020344 */
               "0000000001000000"   /* msg_length 0x100000000 */
               "947c6b5a"           /* send_id 0x5a6b7c94 */
               "01000000"           /* read_iov_count 1 */
               "f81f010000000000"   /* seg_offset 0x11ff8 */
               "0020010000000000"   /* runt_length 0x12000 */
               "8877665544332211"   /* tag 0x1122334455667788 */
               "7077666655550000"   /* read_iov[0].addr 0x555566667770 (payload) */
               "0030000000000000"   /* read_iov[0].len 0x3000 */
               "5a5a5a5aa5a5a5a5"   /* read_iov[0].key 0xa5a5a5a55a5a5a5a */
               "7071727374",        /* runt data, 5 bytes */
        .type = EFARM_PKT_RUNTREAD_TAGRTM,
        .flags = EFARM_REQ_MSG | EFARM_REQ_TAGGED,
        .hdr_length = 48,
        .nfields = 7,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020344},
            {EFARM_PKT_F_MSG_LENGTH, 0x100000000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c94},
            {EFARM_PKT_F_READ_IOV_COUNT, 0x1},
            {EFARM_PKT_F_SEG_OFFSET, 0x11ff8},
            {EFARM_PKT_F_RUNT_LENGTH, 0x12000},
            {EFARM_PKT_F_TAG, 0x1122334455667788},
        },
    },
    {
        .name = "RUNTREAD_TAGRTM_read2_connid",
        .hex = "92"                 /* type 146 RUNTREAD_TAGRTM */
               "04"                 /* version 4 */
               "0c80"               /* flags 0x800c MSG|TAGGED|CONNID_HDR */
               "44030201"           /* msg_id 0x1020344 */
               "0000000001000000"   /* msg_length 0x100000000 */
               "947c6b5a"           /* send_id 0x5a6b7c94 */
               "02000000"           /* read_iov_count 2 */
               "f81f010000000000"   /* seg_offset 0x11ff8 */
               "0020010000000000"   /* runt_length 0x12000 */
               "8877665544332211"   /* tag 0x1122334455667788 */
               "d4c3b2a1"           /* connid 0xa1b2c3d4 */
               "e0ffc000ab7f0000"   /* read_iov[0].addr 0x7fab00c0ffe0 (payload) */
               "0001000002000000"   /* read_iov[0].len 0x200000100 */
               "0807060504030201"   /* read_iov[0].key 0x102030405060708 */
               "7077666655550000"   /* read_iov[1].addr 0x555566667770 (payload) */
               "0030000000000000"   /* read_iov[1].len 0x3000 */
               "5a5a5a5aa5a5a5a5"   /* read_iov[1].key 0xa5a5a5a55a5a5a5a */
               "707172",            /* runt data, 3 bytes */
        .type = EFARM_PKT_RUNTREAD_TAGRTM,
        .flags = EFARM_REQ_MSG | EFARM_REQ_TAGGED | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 52,
        .nfields = 8,
        .fields = {
            {EFARM_PKT_F_MSG_ID, 0x1020344},
            {EFARM_PKT_F_MSG_LENGTH, 0x100000000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c94},
            {EFARM_PKT_F_READ_IOV_COUNT, 0x2},
            {EFARM_PKT_F_SEG_OFFSET, 0x11ff8},
            {EFARM_PKT_F_RUNT_LENGTH, 0x12000},
            {EFARM_PKT_F_TAG, 0x1122334455667788},
            {EFARM_PKT_F_CONNID, 0xa1b2c3d4},
        },
    },
    {
        .name = "RUNTREAD_RTW_iov1_read1",
        .hex = "93"                 /* type 147 RUNTREAD_RTW */
               "04"                 /* version 4 */
               "1000"               /* flags 0x0010 RMA */
               "01000000"           /* rma_iov_count 1 */
               "0000008000000000"   /* msg_length 0x80000000 */
               "977c6b5a"           /* send_id 0x5a6b7c97 */
               "01000000"           /* read_iov_count 1 */
               "f03f000000000000"   /* seg_offset 0x3ff0 */
               "0040000000000000"   /* runt_length 0x4000 */
               "e0ffc000ab7f0000"   /* rma_iov[0].addr 0x7fab00c0ffe0 */
               "0001000002000000"   /* rma_iov[0].len 0x200000100 */
               "0807060504030201"   /* rma_iov[0].key 0x102030405060708 */
               "00705634127f0000"   /* read_iov[0].addr 0x7f1234567000 (payload) */
               "4000000010000000"   /* read_iov[0].len 0x1000000040 */
               "1122334455667788"   /* read_iov[0].key 0x8877665544332211 */
               "78797a7b7c7d7e7f",  /* runt data, 8 bytes */
        .type = EFARM_PKT_RUNTREAD_RTW,
        .flags = EFARM_REQ_RMA,
        .hdr_length = 64,
        .nfields = 6,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x1},
            {EFARM_PKT_F_MSG_LENGTH, 0x80000000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c97},
            {EFARM_PKT_F_READ_IOV_COUNT, 0x1},
            {EFARM_PKT_F_SEG_OFFSET, 0x3ff0},
            {EFARM_PKT_F_RUNT_LENGTH, 0x4000},
        },
        .nrma_iov = 1,
        .rma_iov = {
            {.addr = 0x00007fab00c0ffe0, .len = 0x200000100, .key = 0x0102030405060708},
        },
    },
    {
        .name = "RUNTREAD_RTW_iov2_read2_connid",
        .hex = "93"                 /* type 147 RUNTREAD_RTW */
               "04"                 /* version 4 */
               "1080"               /* flags 0x8010 RMA|CONNID_HDR */
               "02000000"           /* rma_iov_count 2 */
               "0000008000000000"   /* msg_length 0x80000000 */
               "977c6b5a"           /* send_id 0x5a6b7c97 */
               "02000000"           /* read_iov_count 2 */
               "f03f000000000000"   /* seg_offset 0x3ff0 */
               "0040000000000000"   /* runt_length 0x4000 */
               "00705634127f0000"   /* rma_iov[0].addr 0x7f1234567000 */
               "4000000010000000"   /* rma_iov[0].len 0x1000000040 */
               "1122334455667788"   /* rma_iov[0].key 0x8877665544332211 */
               "7077666655550000"   /* rma_iov[1].addr 0x555566667770 */
               "0030000000000000"   /* rma_iov[1].len 0x3000 */
               "5a5a5a5aa5a5a5a5"   /* rma_iov[1].key 0xa5a5a5a55a5a5a5a */
               "81706f5e"           /* connid 0x5e6f7081 */
               "e0ffc000ab7f0000"   /* read_iov[0].addr 0x7fab00c0ffe0 (payload) */
               "0001000002000000"   /* read_iov[0].len 0x200000100 */
               "0807060504030201"   /* read_iov[0].key 0x102030405060708 */
               "7077666655550000"   /* read_iov[1].addr 0x555566667770 (payload) */
               "0030000000000000"   /* read_iov[1].len 0x3000 */
               "5a5a5a5aa5a5a5a5"   /* read_iov[1].key 0xa5a5a5a55a5a5a5a */
               "78797a7b",          /* runt data, 4 bytes */
        .type = EFARM_PKT_RUNTREAD_RTW,
        .flags = EFARM_REQ_RMA | EFARM_PKT_FLAG_CONNID_HDR,
        .hdr_length = 92,
        .nfields = 7,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x2},
            {EFARM_PKT_F_MSG_LENGTH, 0x80000000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c97},
            {EFARM_PKT_F_READ_IOV_COUNT, 0x2},
            {EFARM_PKT_F_SEG_OFFSET, 0x3ff0},
            {EFARM_PKT_F_RUNT_LENGTH, 0x4000},
            {EFARM_PKT_F_CONNID, 0x5e6f7081},
        },
        .nrma_iov = 2,
        .rma_iov = {
            {.addr = 0x00007f1234567000, .len = 0x1000000040, .key = 0x8877665544332211},
            {.addr = 0x0000555566667770, .len = 0x3000, .key = 0xa5a5a5a55a5a5a5a},
        },
    },
    {
        .name = "RUNTREAD_RTW_iov1_read2_raw_addr_cq_data",
        .hex = "93"                                 /* type 147 RUNTREAD_RTW */
               "04"                                 /* version 4 */
               "1300"                               /* flags 0x0013 RAW_ADDR_HDR|CQ_DATA_HDR|RMA */
               "01000000"                           /* rma_iov_count 1 */
               "0000008000000000"                   /* msg_length 0x80000000 */
               "977c6b5a"                           /* send_id 0x5a6b7c97 */
               "02000000"                           /* read_iov_count 2 */
               "f03f000000000000"                   /* seg_offset 0x3ff0 */
               "0040000000000000"                   /* runt_length 0x4000 */
               "7077666655550000"                   /* rma_iov[0].addr 0x555566667770 */
               "0030000000000000"                   /* rma_iov[0].len 0x3000 */
               "5a5a5a5aa5a5a5a5"                   /* rma_iov[0].key 0xa5a5a5a55a5a5a5a */
               "24000000"                           /* raw addr hdr: size 36 */
               "fe80000000000000041d2c3b4a596877"   /* gid fe80::41d:2c3b:4a59:6877 */
               "cdab"                               /* raw addr qpn 0xabcd */
               "0000"                               /* raw addr pad 0 */
               "3412dec0"                           /* raw addr connid 0xc0de1234 */
               "0000000000000000"                   /* raw addr reserved 0 */
               "00000000"                           /* raw addr hdr padding 0 */
               "78695a4b3c2d1e0f"                   /* cq_data 0xf1e2d3c4b5a6978 */
               "00705634127f0000"                   /* read_iov[0].addr 0x7f1234567000 (payload) */
               "4000000010000000"                   /* read_iov[0].len 0x1000000040 */
               "1122334455667788"                   /* read_iov[0].key 0x8877665544332211 */
               "e0ffc000ab7f0000"                   /* read_iov[1].addr 0x7fab00c0ffe0 (payload) */
               "0001000002000000"                   /* read_iov[1].len 0x200000100 */
               "0807060504030201"                   /* read_iov[1].key 0x102030405060708 */
               "78",                                /* runt data, 1 byte */
        .type = EFARM_PKT_RUNTREAD_RTW,
        .flags = EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_REQ_OPT_CQ_DATA_HDR | EFARM_REQ_RMA,
        .hdr_length = 112,
        .nfields = 7,
        .fields = {
            {EFARM_PKT_F_RMA_IOV_COUNT, 0x1},
            {EFARM_PKT_F_MSG_LENGTH, 0x80000000},
            {EFARM_PKT_F_SEND_ID, 0x5a6b7c97},
            {EFARM_PKT_F_READ_IOV_COUNT, 0x2},
            {EFARM_PKT_F_SEG_OFFSET, 0x3ff0},
            {EFARM_PKT_F_RUNT_LENGTH, 0x4000},
            {EFARM_PKT_F_CQ_DATA, 0xf1e2d3c4b5a6978},
        },
        .nrma_iov = 1,
        .rma_iov = {
            {.addr = 0x0000555566667770, .len = 0x3000, .key = 0xa5a5a5a55a5a5a5a},
        },
        .has_raw_addr = 1,
        .raw_addr = {.gid = {0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                             0x04, 0x1d, 0x2c, 0x3b, 0x4a, 0x59, 0x68, 0x77},
                     .qpn = 0xabcd,
                     .connid = 0xc0de1234},
    },
};
/* clang-format on */

const size_t g_golden_vector_count = sizeof(g_golden_vectors) / sizeof(g_golden_vectors[0]);
