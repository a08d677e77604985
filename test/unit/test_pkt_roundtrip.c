/*
 * Randomized round trips: for every type with a wire format, random flags,
 * field values (edge values favoured), arrays and payloads are encoded,
 * decoded and compared field by field, then re-encoded to identical bytes.
 */
#include "efarm_errno.h"
#include "efarm_pkt.h"
#include "efarm_test.h"

#define RT_BUF 2048

/* Random value of `width` bytes, often an edge value (0, 1, max-1, max). */
static uint64_t rand_width(unsigned width)
{
    uint64_t max = width == 8 ? UINT64_MAX : UINT32_MAX;

    switch (efarm_test_rand() % 8) {
    case 0:
        return 0;
    case 1:
        return 1;
    case 2:
        return max - 1;
    case 3:
        return max;
    default:
        return efarm_test_rand() & max;
    }
}

static uint16_t rand_flags(const struct efarm_pkt_type_info *info, uint8_t type)
{
    uint16_t flags = (uint16_t)(efarm_test_rand() & (EFARM_REQ_MSG | EFARM_REQ_TAGGED |
                                                     EFARM_REQ_RMA | EFARM_REQ_ATOMIC));

    if (info->traits & EFARM_PKT_T_REQ) {
        flags |= (uint16_t)(efarm_test_rand() &
                            (EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_REQ_OPT_CQ_DATA_HDR));
        if (!(flags & EFARM_REQ_OPT_RAW_ADDR_HDR) && efarm_test_rand() % 2)
            flags |= EFARM_PKT_FLAG_CONNID_HDR;
        return flags;
    }
    flags = efarm_test_rand() % 2 ? EFARM_PKT_FLAG_CONNID_HDR : 0;
    if (type == EFARM_PKT_HANDSHAKE)
        flags |= (uint16_t)(efarm_test_rand() &
                            (EFARM_HANDSHAKE_HOST_ID_HDR | EFARM_HANDSHAKE_DEVICE_VERSION_HDR |
                             EFARM_HANDSHAKE_USER_RECV_QP_HDR));
    if (type == EFARM_PKT_CTS && efarm_test_rand() % 2)
        flags |= EFARM_CTS_FLAG_EMULATED_READ;
    return flags;
}

/* Make the lengths agree with each other as a sender would (see the codec's validators). */
static void make_consistent(struct efarm_pkt *pkt, size_t *payload_p)
{
    uint64_t *v = pkt->value;
    uint64_t data = *payload_p;
    const struct efarm_pkt_type_info *info = efarm_pkt_type_info(pkt->type);

    if (info->traits & EFARM_PKT_T_READ_IOV) {
        v[EFARM_PKT_F_READ_IOV_COUNT] %= 4;
        *payload_p += v[EFARM_PKT_F_READ_IOV_COUNT] * sizeof(struct efarm_wire_rma_iov);
    }
    if (pkt->present & EFARM_PKT_HAS(SEG_LENGTH)) {
        v[EFARM_PKT_F_SEG_LENGTH] = data;
        v[EFARM_PKT_F_SEG_OFFSET] &= UINT64_MAX >> 1;
    }
    if (pkt->type == EFARM_PKT_CTS && !v[EFARM_PKT_F_RECV_LENGTH])
        v[EFARM_PKT_F_RECV_LENGTH] = 1;
    if (pkt->present & EFARM_PKT_HAS(RUNT_LENGTH)) {
        v[EFARM_PKT_F_SEG_OFFSET] &= 0xffffffffff;
        v[EFARM_PKT_F_RUNT_LENGTH] = v[EFARM_PKT_F_SEG_OFFSET] + data + efarm_test_rand() % 100;
        v[EFARM_PKT_F_MSG_LENGTH] = v[EFARM_PKT_F_RUNT_LENGTH] + (efarm_test_rand() & 0xffffff);
    } else if ((pkt->present & EFARM_PKT_HAS(MSG_LENGTH)) &&
               (pkt->present & EFARM_PKT_HAS(SEG_OFFSET))) {
        v[EFARM_PKT_F_SEG_OFFSET] &= 0xffffffffff;
        v[EFARM_PKT_F_MSG_LENGTH] = v[EFARM_PKT_F_SEG_OFFSET] + data + efarm_test_rand() % 100;
    } else if ((info->traits & EFARM_PKT_T_LONGCTS) && v[EFARM_PKT_F_MSG_LENGTH] < data) {
        v[EFARM_PKT_F_MSG_LENGTH] = data;
    }
    if ((info->traits & EFARM_PKT_T_LONGCTS) && efarm_test_rand() % 4 == 0) {
        pkt->flags |= EFARM_REQ_READ_NACK;
        *payload_p = 0;
    }
}

static void one_round_trip(uint8_t type)
{
    const struct efarm_pkt_type_info *info = efarm_pkt_type_info(type);
    uint8_t rma[4 * 24], extra[4 * 8], payload[RT_BUF], buf[RT_BUF], again[RT_BUF];
    struct efarm_pkt in, out;
    size_t hdr_length, hdr_length2, npayload = efarm_test_rand() % 3 ? efarm_test_rand() % 96 : 0;

    efarm_pkt_init(&in, type);
    in.flags = rand_flags(info, type);
    for (unsigned i = 0; i < info->nfields; i++)
        efarm_pkt_set(&in, (enum efarm_pkt_field)info->fields[i].id,
                      rand_width(info->fields[i].width));
    if (!(in.flags & EFARM_PKT_FLAG_CONNID_HDR))
        in.present &= ~EFARM_PKT_HAS(CONNID), in.value[EFARM_PKT_F_CONNID] = 0;
    else if (!(in.present & EFARM_PKT_HAS(CONNID)))
        efarm_pkt_set(&in, EFARM_PKT_F_CONNID, rand_width(4));
    if (info->traits & EFARM_PKT_T_RMA_IOV) {
        in.value[EFARM_PKT_F_RMA_IOV_COUNT] %= 5;
        for (size_t i = 0; i < sizeof(rma); i++)
            rma[i] = (uint8_t)efarm_test_rand();
        in.rma_iov = rma;
    }
    if (type == EFARM_PKT_HANDSHAKE) {
        in.value[EFARM_PKT_F_NEXTRA_P3] = 3 + efarm_test_rand() % 5;
        for (size_t i = 0; i < sizeof(extra); i++)
            extra[i] = (uint8_t)efarm_test_rand();
        in.extra_info = extra;
        if (in.flags & EFARM_HANDSHAKE_HOST_ID_HDR)
            efarm_pkt_set(&in, EFARM_PKT_F_HOST_ID, rand_width(8));
        if (in.flags & EFARM_HANDSHAKE_DEVICE_VERSION_HDR)
            efarm_pkt_set(&in, EFARM_PKT_F_DEVICE_VERSION, rand_width(4));
        in.user_recv_qpn = (uint32_t)efarm_test_rand();
        in.user_recv_qkey = (uint32_t)efarm_test_rand();
    }
    if (in.flags & EFARM_REQ_OPT_CQ_DATA_HDR && (info->traits & EFARM_PKT_T_REQ))
        efarm_pkt_set(&in, EFARM_PKT_F_CQ_DATA, rand_width(8));
    if (in.flags & EFARM_REQ_OPT_RAW_ADDR_HDR && (info->traits & EFARM_PKT_T_REQ)) {
        for (int i = 0; i < EFARM_GID_LEN; i++)
            in.raw_addr.gid[i] = (uint8_t)efarm_test_rand();
        in.raw_addr.qpn = (uint16_t)efarm_test_rand();
        in.raw_addr.connid = (uint32_t)efarm_test_rand();
    }
    make_consistent(&in, &npayload);
    if (in.value[EFARM_PKT_F_NEXTRA_P3] == 0 && type == EFARM_PKT_HANDSHAKE)
        in.value[EFARM_PKT_F_NEXTRA_P3] = 3;
    for (size_t i = 0; i < npayload; i++)
        payload[i] = (uint8_t)efarm_test_rand();

    EXPECT_RET(efarm_pkt_encode(&in, buf, sizeof(buf), &hdr_length), 0);
    memcpy(buf + hdr_length, payload, npayload);
    efarm_test_context("type %s flags 0x%x payload %zu", info->name, in.flags, npayload);
    EXPECT_RET(efarm_pkt_decode(buf, hdr_length + npayload, &out), 0);
    EXPECT_EQ(out.type, type);
    EXPECT_EQ(out.flags, in.flags);
    EXPECT_EQ(out.hdr_length, hdr_length);
    EXPECT_EQ(out.payload_length, npayload);
    EXPECT_MEM_EQ(out.payload, payload, npayload);
    for (int f = 0; f < EFARM_PKT_F_COUNT; f++)
        if (out.present & (1u << f))
            EXPECT_EQ(out.value[f], in.value[f]);
    if (info->traits & EFARM_PKT_T_RMA_IOV)
        EXPECT_MEM_EQ(out.rma_iov, rma, in.value[EFARM_PKT_F_RMA_IOV_COUNT] * 24);
    if (type == EFARM_PKT_HANDSHAKE)
        EXPECT_MEM_EQ(out.extra_info, extra, (in.value[EFARM_PKT_F_NEXTRA_P3] - 3) * 8);
    if (out.present & EFARM_PKT_HAS_RAW_ADDR) {
        EXPECT_MEM_EQ(out.raw_addr.gid, in.raw_addr.gid, EFARM_GID_LEN);
        EXPECT_EQ(out.raw_addr.qpn, in.raw_addr.qpn);
        EXPECT_EQ(out.raw_addr.connid, in.raw_addr.connid);
    }
    if (out.present & EFARM_PKT_HAS_USER_RECV_QP) {
        EXPECT_EQ(out.user_recv_qpn, in.user_recv_qpn);
        EXPECT_EQ(out.user_recv_qkey, in.user_recv_qkey);
    }

    /* The decoded form re-encodes to the same bytes. */
    EXPECT_RET(efarm_pkt_encode(&out, again, sizeof(again), &hdr_length2), 0);
    EXPECT_EQ(hdr_length2, hdr_length);
    EXPECT_MEM_EQ(again, buf, hdr_length);
}

EFARM_TEST_TIMEOUT(roundtrip_random_every_type, 60)
{
    unsigned types = 0;

    for (int t = 0; t < EFARM_PKT_TYPE_COUNT; t++) {
        if (!(efarm_pkt_type_info((uint8_t)t)->traits & EFARM_PKT_T_SUPPORTED))
            continue;
        types++;
        for (int i = 0; i < 20000; i++)
            one_round_trip((uint8_t)t);
    }
    EXPECT_EQ(types, 39); /* table 1.2 and the addenda, less 1, 2, 6, 131, 132 */
}

EFARM_TEST(type_table_names)
{
    /* Every supported type is found by its nickname, and the spec's typo is an alias. */
    for (int t = 0; t < EFARM_PKT_TYPE_COUNT; t++) {
        const struct efarm_pkt_type_info *info = efarm_pkt_type_info((uint8_t)t);

        if (info->traits & EFARM_PKT_T_SUPPORTED)
            EXPECT_EQ(efarm_pkt_type_lookup(info->name), t);
    }
    EXPECT_EQ(efarm_pkt_type_lookup("DC_LONTCTS_TAGRTM"), EFARM_PKT_DC_LONGCTS_TAGRTM);
    EXPECT_EQ(efarm_pkt_type_lookup("RUNTREAD_RTW"), 147);
    EXPECT_EQ((uint32_t)efarm_pkt_type_lookup("NOPE"), (uint32_t)-1);
    EXPECT_TRUE(strcmp(efarm_pkt_type_info(200)->name, "UNKNOWN") == 0);
}

/*
 * A message over 4 GiB: every 64-bit length and offset the engine puts in a
 * header (msg_length, seg_offset, runt_length, recv_length) must cross the
 * wire whole, at its table offset, little-endian, with the high word intact.
 */
EFARM_TEST(pkt_headers_of_a_message_over_4gib)
{
    static const struct {
        uint8_t type;
        enum efarm_pkt_field field;
        size_t offset; /* of the field in the mandatory header */
    } cases[] = {
        {EFARM_PKT_LONGCTS_TAGRTM, EFARM_PKT_F_MSG_LENGTH, 8},
        {EFARM_PKT_DC_LONGCTS_TAGRTM, EFARM_PKT_F_MSG_LENGTH, 8},
        {EFARM_PKT_LONGREAD_TAGRTM, EFARM_PKT_F_MSG_LENGTH, 8},
        {EFARM_PKT_MEDIUM_TAGRTM, EFARM_PKT_F_MSG_LENGTH, 8},
        {EFARM_PKT_MEDIUM_TAGRTM, EFARM_PKT_F_SEG_OFFSET, 16},
        {EFARM_PKT_DC_MEDIUM_TAGRTM, EFARM_PKT_F_SEG_OFFSET, 24},
        {EFARM_PKT_RUNTREAD_TAGRTM, EFARM_PKT_F_MSG_LENGTH, 8},
        {EFARM_PKT_RUNTREAD_TAGRTM, EFARM_PKT_F_SEG_OFFSET, 24},
        {EFARM_PKT_RUNTREAD_TAGRTM, EFARM_PKT_F_RUNT_LENGTH, 32},
        {EFARM_PKT_CTSDATA, EFARM_PKT_F_SEG_OFFSET, 16},
        {EFARM_PKT_CTS, EFARM_PKT_F_RECV_LENGTH, 16},
    };
    const uint64_t big = (5ull << 30) + 7; /* 5 GiB + 7 */
    uint8_t buf[RT_BUF], iov[24] = {0};

    for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const uint8_t type = cases[i].type;
        struct efarm_pkt pkt, back;
        size_t hdr_len, len;
        uint64_t v = big, seen = 0;

        efarm_test_context("%s field %s", efarm_pkt_type_info(type)->name,
                           efarm_pkt_field_name(cases[i].field));
        efarm_pkt_init(&pkt, type);
        if (efarm_pkt_type_info(type)->traits & EFARM_PKT_T_REQ)
            pkt.flags = EFARM_REQ_MSG | EFARM_REQ_TAGGED;
        /* A coherent message: total 5 GiB + 7; segments near its end, runt inside it. */
        efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, big);
        efarm_pkt_set(&pkt, EFARM_PKT_F_SEG_OFFSET, big - 16);
        efarm_pkt_set(&pkt, EFARM_PKT_F_RUNT_LENGTH, big);
        efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_LENGTH, big);
        efarm_pkt_set(&pkt, EFARM_PKT_F_SEG_LENGTH, 16);
        efarm_pkt_set(&pkt, EFARM_PKT_F_READ_IOV_COUNT, 1);
        if (cases[i].field == EFARM_PKT_F_SEG_OFFSET)
            v = big - 16;
        EXPECT_RET(efarm_pkt_encode(&pkt, buf, sizeof(buf), &hdr_len), 0);
        len = hdr_len;
        if (efarm_pkt_type_info(type)->traits & EFARM_PKT_T_READ_IOV) {
            memcpy(buf + len, iov, sizeof(iov));
            len += sizeof(iov);
        }
        /* 16 bytes of data: the segment that ends the message. */
        if (type != EFARM_PKT_CTS && type != EFARM_PKT_LONGREAD_TAGRTM &&
            type != EFARM_PKT_LONGCTS_TAGRTM && type != EFARM_PKT_DC_LONGCTS_TAGRTM) {
            memset(buf + len, 0xab, 16);
            len += 16;
        }
        for (unsigned b = 0; b < 8; b++)
            seen |= (uint64_t)buf[cases[i].offset + b] << (8 * b);
        EXPECT_EQ(seen, v);
        EXPECT_RET(efarm_pkt_decode(buf, len, &back), 0);
        EXPECT_EQ(efarm_pkt_get(&back, cases[i].field), v);
    }
}
