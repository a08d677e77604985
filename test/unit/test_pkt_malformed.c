/*
 * Hostile input: truncation at every byte of every golden vector, random
 * corruption, unknown/retired/reserved types, wrong versions, counts that
 * overflow, and inconsistent flags. Every decode reads an exactly sized heap
 * copy, so under ASan a read past the end fails the test.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "efarm_byteorder.h"
#include "efarm_errno.h"
#include "efarm_test.h"
#include "golden_vectors.h"

static int decode_exact(const uint8_t *bytes, size_t len, struct efarm_pkt *pkt)
{
    uint8_t *copy = malloc(len ? len : 1);
    int ret;

    EXPECT_TRUE(copy != NULL);
    memcpy(copy, bytes, len);
    ret = efarm_pkt_decode(copy, len, pkt);
    free(copy); /* pkt's pointers are dead from here: callers only look at scalars */
    return ret;
}

static int is_truncation_error(int err)
{
    return !strncmp(efarm_strerror_name(err), "PKT_TRUNCATED", 13);
}

static size_t vector_bytes(const struct golden_vector *v, uint8_t *buf)
{
    long n = golden_hex_parse(v->hex, buf, GOLDEN_MAX_BYTES);

    EXPECT_TRUE(n >= 0);
    return (size_t)n;
}

EFARM_TEST(malformed_truncation_every_offset)
{
    uint8_t buf[GOLDEN_MAX_BYTES];
    struct efarm_pkt full, cut;

    for (size_t i = 0; i < g_golden_vector_count; i++) {
        const struct golden_vector *v = &g_golden_vectors[i];
        size_t len = vector_bytes(v, buf);

        efarm_test_context("truncating vector %s", v->name);
        EXPECT_RET(decode_exact(buf, len, &full), 0);
        for (size_t n = 0; n < len; n++) {
            int ret = decode_exact(buf, n, &cut);

            if (n < v->hdr_length) {
                if (!is_truncation_error(ret))
                    efarm_test_fail(__FILE__, __LINE__, "%s cut at %zu of %zu: got %d (%s)",
                                    v->name, n, len, ret, efarm_strerror_name(ret));
                continue;
            }
            /* Headers intact: only a shorter payload, or a length field it now contradicts. */
            if (ret == 0) {
                EXPECT_EQ(cut.payload_length, n - v->hdr_length);
                EXPECT_EQ(cut.present, full.present);
                EXPECT_MEM_EQ(cut.value, full.value, sizeof(full.value));
            } else if (ret != EFARM_E(PKT_SEG_LENGTH) && ret != EFARM_E(PKT_TRUNCATED_READ_IOV)) {
                efarm_test_fail(__FILE__, __LINE__, "%s cut at %zu (payload): got %s", v->name, n,
                                efarm_strerror_name(ret));
            }
        }
    }
}

EFARM_TEST_TIMEOUT(malformed_random_corruption, 60)
{
    uint8_t buf[GOLDEN_MAX_BYTES], again[GOLDEN_MAX_BYTES];
    struct efarm_pkt pkt, pkt2;
    size_t hdr_length;

    for (size_t i = 0; i < g_golden_vector_count; i++) {
        const struct golden_vector *v = &g_golden_vectors[i];
        size_t len = vector_bytes(v, buf);

        efarm_test_context("corrupting vector %s", v->name);
        for (int round = 0; round < 5000; round++) {
            uint8_t m[GOLDEN_MAX_BYTES];
            int flips = 1 + (int)(efarm_test_rand() % 4);

            memcpy(m, buf, len);
            for (int f = 0; f < flips; f++)
                m[efarm_test_rand() % len] ^= (uint8_t)(1u << (efarm_test_rand() % 8));
            if (decode_exact(m, len, &pkt) != 0)
                continue;
            /* Whatever decodes must re-encode to something that decodes the same. */
            EXPECT_RET(efarm_pkt_decode(m, len, &pkt), 0);
            if (efarm_pkt_encode(&pkt, again, sizeof(again), &hdr_length) != 0)
                continue; /* e.g. a raw-address size we keep but never send */
            EXPECT_EQ(hdr_length, pkt.hdr_length);
            memcpy(again + hdr_length, pkt.payload, pkt.payload_length);
            EXPECT_RET(efarm_pkt_decode(again, hdr_length + pkt.payload_length, &pkt2), 0);
            EXPECT_EQ(pkt2.present, pkt.present);
            EXPECT_MEM_EQ(pkt2.value, pkt.value, sizeof(pkt.value));
        }
    }
}

EFARM_TEST(malformed_short_and_version)
{
    static const uint8_t eager[] = {64, 4, 0, 0, 1, 0, 0, 0};
    struct efarm_pkt pkt;
    uint8_t m[sizeof(eager)];

    for (size_t n = 0; n < 4; n++)
        EXPECT_RET(decode_exact(eager, n, &pkt), EFARM_E(PKT_TRUNCATED_BASE));
    EXPECT_RET(decode_exact(eager, sizeof(eager), &pkt), 0);
    for (int version = 0; version < 256; version++) {
        memcpy(m, eager, sizeof(m));
        m[1] = (uint8_t)version;
        EXPECT_RET(decode_exact(m, sizeof(m), &pkt), version == 4 ? 0 : EFARM_E(PKT_BAD_VERSION));
    }
}

EFARM_TEST(malformed_every_type_id)
{
    uint8_t m[64] = {0};
    struct efarm_pkt pkt;
    size_t hdr_length;
    struct efarm_pkt enc;

    for (int t = 0; t < 256; t++) {
        const struct efarm_pkt_type_info *info = efarm_pkt_type_info((uint8_t)t);
        int ret;

        m[0] = (uint8_t)t;
        m[1] = 4;
        ret = decode_exact(m, sizeof(m), &pkt);
        efarm_pkt_init(&enc, (uint8_t)t);
        if (t == 1 || t == 2) {
            EXPECT_RET(ret, EFARM_E(PKT_RETIRED_TYPE));
        } else if (t == 6 || t == 131 || t == 132) {
            EXPECT_RET(ret, EFARM_E(PKT_RESERVED_TYPE));
        } else if (!(info->traits & EFARM_PKT_T_SUPPORTED)) {
            EXPECT_RET(ret, EFARM_E(PKT_UNKNOWN_TYPE));
        } else {
            /* Known types: an all-zero body is either fine or refused for a named reason. */
            EXPECT_TRUE(ret == 0 || ret == EFARM_E(PKT_CTS_ZERO) || ret == EFARM_E(PKT_NEXTRA_P3) ||
                        ret == EFARM_E(PKT_SEG_BEYOND_MSG) || ret == EFARM_E(PKT_RUNT_LENGTH));
            continue;
        }
        EXPECT_RET(efarm_pkt_encode(&enc, m + 0, sizeof(m), &hdr_length), EFARM_E(PKT_ENCODE_TYPE));
    }
}

/* Build a valid packet with the encoder, then let the test patch it. */
static size_t build(uint8_t type, uint16_t flags, uint8_t *buf, size_t payload)
{
    struct efarm_pkt pkt;
    size_t hdr_length;

    efarm_pkt_init(&pkt, type);
    pkt.flags = flags;
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, 1u << 20);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RUNT_LENGTH, 1u << 16);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_LENGTH, 4096);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEG_LENGTH, payload);
    efarm_pkt_set(&pkt, EFARM_PKT_F_NEXTRA_P3, 3);
    EXPECT_RET(efarm_pkt_encode(&pkt, buf, 512, &hdr_length), 0);
    memset(buf + hdr_length, 0xab, payload);
    return hdr_length + payload;
}

/* Offset of a fixed field of `type`, from the codec table. */
static size_t field_offset(uint8_t type, enum efarm_pkt_field id)
{
    const struct efarm_pkt_type_info *info = efarm_pkt_type_info(type);

    for (unsigned i = 0; i < info->nfields; i++)
        if (info->fields[i].id == id)
            return info->fields[i].offset;
    efarm_test_fail(__FILE__, __LINE__, "type %u has no field %s", type, efarm_pkt_field_name(id));
}

EFARM_TEST(malformed_overflowing_counts)
{
    /* count * 24 wraps 32-bit arithmetic to 8 for 0x0aaaaaab; both must be refused. */
    static const uint32_t counts[] = {0xffffffffu, 0x0aaaaaabu, 0x80000000u, 2};
    uint8_t buf[512];
    struct efarm_pkt pkt;

    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        size_t len = build(EFARM_PKT_EAGER_RTW, 0, buf, 40);

        efarm_store_le32(buf + field_offset(EFARM_PKT_EAGER_RTW, EFARM_PKT_F_RMA_IOV_COUNT),
                         counts[i]);
        EXPECT_RET(decode_exact(buf, len, &pkt), EFARM_E(PKT_TRUNCATED_RMA_IOV));

        len = build(EFARM_PKT_LONGREAD_TAGRTM, 0, buf, 40);
        efarm_store_le32(buf + field_offset(EFARM_PKT_LONGREAD_TAGRTM, EFARM_PKT_F_READ_IOV_COUNT),
                         counts[i]);
        EXPECT_RET(decode_exact(buf, len, &pkt), EFARM_E(PKT_TRUNCATED_READ_IOV));
    }

    /* HANDSHAKE nextra_p3: below 3, beyond the cap, or beyond the packet. */
    {
        size_t len = build(EFARM_PKT_HANDSHAKE, 0, buf, 16);
        static const struct {
            uint32_t nextra_p3;
            int err;
        } cases[] = {{0, EFARM_E(PKT_NEXTRA_P3)},
                     {2, EFARM_E(PKT_NEXTRA_P3)},
                     {6, EFARM_E(PKT_TRUNCATED_EXTRA_INFO)},
                     {3 + EFARM_HANDSHAKE_MAX_EXTRA_INFO, EFARM_E(PKT_TRUNCATED_EXTRA_INFO)},
                     {4 + EFARM_HANDSHAKE_MAX_EXTRA_INFO, EFARM_E(PKT_EXTRA_INFO_COUNT)},
                     {0xffffffffu, EFARM_E(PKT_EXTRA_INFO_COUNT)},
                     {5, 0}};

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            efarm_store_le32(buf + 4, cases[i].nextra_p3);
            EXPECT_RET(decode_exact(buf, len, &pkt), cases[i].err);
        }
    }

    /* Raw-address header size: too small, too large, wrapping 4 + size. */
    {
        static const struct {
            uint32_t size;
            int err;
        } cases[] = {{0, EFARM_E(PKT_RAW_ADDR_SIZE)},
                     {31, EFARM_E(PKT_RAW_ADDR_SIZE)},
                     {37, EFARM_E(PKT_TRUNCATED_RAW_ADDR)},
                     {0xfffffffcu, EFARM_E(PKT_TRUNCATED_RAW_ADDR)},
                     {0xffffffffu, EFARM_E(PKT_TRUNCATED_RAW_ADDR)},
                     {32, 0},
                     {36, 0}};
        size_t base = EFARM_WIRE_SIZE_TAG(struct efarm_wire_eager_rtm_hdr);

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            size_t len = build(EFARM_PKT_EAGER_TAGRTM, EFARM_REQ_OPT_RAW_ADDR_HDR, buf, 0);

            efarm_store_le32(buf + base, cases[i].size);
            EXPECT_RET(decode_exact(buf, len, &pkt), cases[i].err);
        }
    }
}

EFARM_TEST(malformed_inconsistent_flags)
{
    uint8_t buf[512];
    struct efarm_pkt pkt;
    size_t len;

    /* Raw-address and connid headers are exclusive (addenda). */
    len = build(EFARM_PKT_EAGER_TAGRTM, EFARM_REQ_OPT_RAW_ADDR_HDR, buf, 8);
    efarm_store_le16(buf + 2, EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_PKT_FLAG_CONNID_HDR);
    EXPECT_RET(decode_exact(buf, len, &pkt), EFARM_E(PKT_OPT_CONFLICT));

    /* A flag announcing an optional header that is not there. */
    len = build(EFARM_PKT_EAGER_MSGRTM, 0, buf, 0);
    efarm_store_le16(buf + 2, EFARM_REQ_OPT_CQ_DATA_HDR);
    EXPECT_RET(decode_exact(buf, len, &pkt), EFARM_E(PKT_TRUNCATED_CQ_DATA));
    efarm_store_le16(buf + 2, EFARM_PKT_FLAG_CONNID_HDR);
    EXPECT_RET(decode_exact(buf, len, &pkt), EFARM_E(PKT_TRUNCATED_CONNID));
    len = build(EFARM_PKT_CTSDATA, 0, buf, 0);
    efarm_store_le16(buf + 2, EFARM_PKT_FLAG_CONNID_HDR);
    EXPECT_RET(decode_exact(buf, len, &pkt), EFARM_E(PKT_TRUNCATED_CONNID));
    len = build(EFARM_PKT_HANDSHAKE, 0, buf, 0);
    efarm_store_le16(buf + 2, EFARM_HANDSHAKE_HOST_ID_HDR);
    EXPECT_RET(decode_exact(buf, len, &pkt), EFARM_E(PKT_TRUNCATED_HANDSHAKE_OPT));

    /* READ_NACK only on data-less LONGCTS REQs. */
    len = build(EFARM_PKT_EAGER_TAGRTM, 0, buf, 8);
    efarm_store_le16(buf + 2, EFARM_REQ_READ_NACK);
    EXPECT_RET(decode_exact(buf, len, &pkt), EFARM_E(PKT_READ_NACK_FLAG));
    len = build(EFARM_PKT_LONGCTS_TAGRTM, EFARM_REQ_READ_NACK, buf, 0);
    EXPECT_RET(decode_exact(buf, len, &pkt), 0);
    len = build(EFARM_PKT_LONGCTS_TAGRTM, EFARM_REQ_READ_NACK, buf, 1);
    EXPECT_RET(decode_exact(buf, len, &pkt), EFARM_E(PKT_READ_NACK_FLAG));
    len = build(EFARM_PKT_LONGCTS_RTW, EFARM_REQ_READ_NACK, buf, 0);
    EXPECT_RET(decode_exact(buf, len, &pkt), 0);
}

EFARM_TEST(malformed_lengths)
{
    uint8_t buf[512];
    struct efarm_pkt pkt;
    size_t len;

    /* CTS must grant bytes. */
    len = build(EFARM_PKT_CTS, 0, buf, 0);
    efarm_store_le64(buf + field_offset(EFARM_PKT_CTS, EFARM_PKT_F_RECV_LENGTH), 0);
    EXPECT_RET(decode_exact(buf, len, &pkt), EFARM_E(PKT_CTS_ZERO));

    /* seg_length beyond the data, and seg_offset + seg_length wrapping. */
    len = build(EFARM_PKT_CTSDATA, 0, buf, 16);
    efarm_store_le64(buf + field_offset(EFARM_PKT_CTSDATA, EFARM_PKT_F_SEG_LENGTH), 17);
    EXPECT_RET(decode_exact(buf, len, &pkt), EFARM_E(PKT_SEG_LENGTH));
    efarm_store_le64(buf + field_offset(EFARM_PKT_CTSDATA, EFARM_PKT_F_SEG_LENGTH), 16);
    efarm_store_le64(buf + field_offset(EFARM_PKT_CTSDATA, EFARM_PKT_F_SEG_OFFSET), UINT64_MAX - 8);
    EXPECT_RET(decode_exact(buf, len, &pkt), EFARM_E(PKT_SEG_OVERFLOW));
    len = build(EFARM_PKT_READRSP, 0, buf, 4);
    efarm_store_le64(buf + field_offset(EFARM_PKT_READRSP, EFARM_PKT_F_SEG_LENGTH), 1ull << 40);
    EXPECT_RET(decode_exact(buf, len, &pkt), EFARM_E(PKT_SEG_LENGTH));

    /* MEDIUM segment past msg_length, and seg_offset wrapping. */
    len = build(EFARM_PKT_MEDIUM_TAGRTM, 0, buf, 100);
    efarm_store_le64(buf + field_offset(EFARM_PKT_MEDIUM_TAGRTM, EFARM_PKT_F_MSG_LENGTH), 99);
    EXPECT_RET(decode_exact(buf, len, &pkt), EFARM_E(PKT_SEG_BEYOND_MSG));
    efarm_store_le64(buf + field_offset(EFARM_PKT_MEDIUM_TAGRTM, EFARM_PKT_F_MSG_LENGTH), 100);
    EXPECT_RET(decode_exact(buf, len, &pkt), 0);
    efarm_store_le64(buf + field_offset(EFARM_PKT_MEDIUM_TAGRTM, EFARM_PKT_F_SEG_OFFSET),
                     UINT64_MAX);
    EXPECT_RET(decode_exact(buf, len, &pkt), EFARM_E(PKT_SEG_OVERFLOW));

    /* RUNT: runt_length within msg_length, segment within runt_length. */
    len = build(EFARM_PKT_RUNTCTS_MSGRTM, 0, buf, 64);
    efarm_store_le64(buf + field_offset(EFARM_PKT_RUNTCTS_MSGRTM, EFARM_PKT_F_RUNT_LENGTH),
                     (1u << 20) + 1);
    EXPECT_RET(decode_exact(buf, len, &pkt), EFARM_E(PKT_RUNT_LENGTH));
    efarm_store_le64(buf + field_offset(EFARM_PKT_RUNTCTS_MSGRTM, EFARM_PKT_F_RUNT_LENGTH), 64);
    EXPECT_RET(decode_exact(buf, len, &pkt), 0);
    efarm_store_le64(buf + field_offset(EFARM_PKT_RUNTCTS_MSGRTM, EFARM_PKT_F_SEG_OFFSET), 1);
    EXPECT_RET(decode_exact(buf, len, &pkt), EFARM_E(PKT_RUNT_LENGTH));

    /* LONGCTS carries at most msg_length bytes. */
    len = build(EFARM_PKT_LONGCTS_MSGRTM, 0, buf, 32);
    efarm_store_le64(buf + field_offset(EFARM_PKT_LONGCTS_MSGRTM, EFARM_PKT_F_MSG_LENGTH), 31);
    EXPECT_RET(decode_exact(buf, len, &pkt), EFARM_E(PKT_SEG_BEYOND_MSG));
}

EFARM_TEST(encode_refuses_bad_descriptions)
{
    uint8_t buf[512];
    struct efarm_pkt pkt;
    size_t hdr_length;

    efarm_pkt_init(&pkt, EFARM_PKT_EAGER_TAGRTM);
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_ID, 1ull << 32);
    EXPECT_RET(efarm_pkt_encode(&pkt, buf, sizeof(buf), &hdr_length), EFARM_E(PKT_FIELD_RANGE));

    efarm_pkt_init(&pkt, EFARM_PKT_EAGER_RTW);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RMA_IOV_COUNT, 1);
    EXPECT_RET(efarm_pkt_encode(&pkt, buf, sizeof(buf), &hdr_length), EFARM_E(PKT_MISSING_ARRAY));

    efarm_pkt_init(&pkt, EFARM_PKT_EAGER_MSGRTM);
    pkt.flags = EFARM_REQ_OPT_RAW_ADDR_HDR | EFARM_PKT_FLAG_CONNID_HDR;
    EXPECT_RET(efarm_pkt_encode(&pkt, buf, sizeof(buf), &hdr_length), EFARM_E(PKT_OPT_CONFLICT));

    efarm_pkt_init(&pkt, EFARM_PKT_EAGER_MSGRTM);
    pkt.version = 3;
    EXPECT_RET(efarm_pkt_encode(&pkt, buf, sizeof(buf), &hdr_length), EFARM_E(PKT_BAD_VERSION));

    efarm_pkt_init(&pkt, EFARM_PKT_HANDSHAKE);
    efarm_pkt_set(&pkt, EFARM_PKT_F_NEXTRA_P3, 2);
    EXPECT_RET(efarm_pkt_encode(&pkt, buf, sizeof(buf), &hdr_length), EFARM_E(PKT_NEXTRA_P3));
    efarm_pkt_set(&pkt, EFARM_PKT_F_NEXTRA_P3, 4);
    EXPECT_RET(efarm_pkt_encode(&pkt, buf, sizeof(buf), &hdr_length), EFARM_E(PKT_MISSING_ARRAY));

    efarm_pkt_init(&pkt, EFARM_PKT_CTS);
    pkt.flags = EFARM_PKT_FLAG_CONNID_HDR;
    efarm_pkt_set(&pkt, EFARM_PKT_F_CONNID, 1ull << 32);
    EXPECT_RET(efarm_pkt_encode(&pkt, buf, sizeof(buf), &hdr_length), EFARM_E(PKT_FIELD_RANGE));

    for (size_t cap = 0; cap < 16; cap++) {
        efarm_pkt_init(&pkt, EFARM_PKT_EAGER_TAGRTM);
        EXPECT_RET(efarm_pkt_encode(&pkt, buf, cap, &hdr_length), -ENOSPC);
    }
}

EFARM_TEST(error_strings_distinct)
{
    for (int code = EFARM_ERR_BASE_ + 1; code < EFARM_ERR_END_; code++) {
        const char *name = efarm_strerror_name(-code);

        /* Every code names the layer that detects it. */
        EXPECT_TRUE(strncmp(name, "PKT_", 4) == 0 || strncmp(name, "DEV_", 4) == 0 ||
                    strncmp(name, "PROTO_", 6) == 0);
        EXPECT_TRUE(strlen(efarm_strerror(-code)) > 10);
        for (int other = code + 1; other < EFARM_ERR_END_; other++)
            EXPECT_TRUE(strcmp(efarm_strerror(-code), efarm_strerror(-other)) != 0);
    }
    EXPECT_TRUE(strcmp(efarm_strerror_name(-ENOSPC), "ENOSPC") == 0);
    EXPECT_TRUE(strcmp(efarm_strerror(0), "success") == 0);
}
