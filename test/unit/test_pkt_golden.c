/*
 * Golden vectors in both directions: the hand-built bytes decode to exactly
 * the listed values (and nothing else), and encoding those values reproduces
 * the bytes exactly.
 */
#include <errno.h>
#include <stdlib.h>

#include "efarm_errno.h"
#include "efarm_test.h"
#include "golden_vectors.h"

static void load(const struct golden_vector *v, uint8_t *buf, size_t *len_p)
{
    long n = golden_hex_parse(v->hex, buf, GOLDEN_MAX_BYTES);

    if (n < 0)
        efarm_test_fail(__FILE__, __LINE__, "vector %s: bad hex", v->name);
    *len_p = (size_t)n;
}

static uint32_t expected_present(const struct golden_vector *v)
{
    uint32_t present = 0;

    for (unsigned i = 0; i < v->nfields; i++)
        present |= 1u << v->fields[i].id;
    if (v->nrma_iov || (efarm_pkt_type_info(v->type)->traits & EFARM_PKT_T_RMA_IOV))
        present |= EFARM_PKT_HAS_RMA_IOV;
    if (v->type == EFARM_PKT_HANDSHAKE)
        present |= EFARM_PKT_HAS_EXTRA_INFO;
    if (v->has_raw_addr)
        present |= EFARM_PKT_HAS_RAW_ADDR;
    if (v->has_user_recv_qp)
        present |= EFARM_PKT_HAS_USER_RECV_QP;
    return present;
}

static void check_decode(const struct golden_vector *v)
{
    uint8_t bytes[GOLDEN_MAX_BYTES];
    struct efarm_pkt pkt;
    size_t len;
    uint8_t *exact;

    load(v, bytes, &len);
    /* Decode from an exactly sized heap copy so ASan sees any read past the end. */
    exact = malloc(len ? len : 1);
    EXPECT_TRUE(exact != NULL);
    memcpy(exact, bytes, len);
    efarm_test_context("decoding vector %s", v->name);
    EXPECT_RET(efarm_pkt_decode(exact, len, &pkt), 0);
    EXPECT_EQ(pkt.type, v->type);
    EXPECT_EQ(pkt.version, 4);
    EXPECT_EQ(pkt.flags, v->flags);
    EXPECT_EQ(pkt.hdr_length, v->hdr_length);
    EXPECT_EQ(pkt.payload_length, len - v->hdr_length);
    EXPECT_EQ(pkt.present, expected_present(v));
    for (unsigned i = 0; i < v->nfields; i++) {
        efarm_test_context("decoding vector %s, field %s", v->name,
                           efarm_pkt_field_name(v->fields[i].id));
        EXPECT_EQ(efarm_pkt_get(&pkt, v->fields[i].id), v->fields[i].value);
    }
    for (unsigned i = 0; i < v->nrma_iov; i++) {
        struct efarm_rma_iov iov;

        efarm_rma_iov_load(pkt.rma_iov, i, &iov);
        EXPECT_EQ(iov.addr, v->rma_iov[i].addr);
        EXPECT_EQ(iov.len, v->rma_iov[i].len);
        EXPECT_EQ(iov.key, v->rma_iov[i].key);
    }
    for (unsigned i = 0; i < v->nextra_info; i++)
        EXPECT_EQ(efarm_pkt_extra_info(&pkt, i), v->extra_info[i]);
    if (v->has_raw_addr) {
        EXPECT_MEM_EQ(pkt.raw_addr.gid, v->raw_addr.gid, EFARM_GID_LEN);
        EXPECT_EQ(pkt.raw_addr.qpn, v->raw_addr.qpn);
        EXPECT_EQ(pkt.raw_addr.connid, v->raw_addr.connid);
    }
    if (v->has_user_recv_qp) {
        EXPECT_EQ(pkt.user_recv_qpn, v->user_recv_qpn);
        EXPECT_EQ(pkt.user_recv_qkey, v->user_recv_qkey);
    }
    free(exact);
}

static void check_encode(const struct golden_vector *v)
{
    uint8_t bytes[GOLDEN_MAX_BYTES], out[GOLDEN_MAX_BYTES];
    uint8_t rma[GOLDEN_MAX_IOV * sizeof(struct efarm_wire_rma_iov)];
    uint8_t extra[GOLDEN_MAX_EXTRA * 8];
    struct efarm_pkt pkt;
    size_t len, hdr_length;

    load(v, bytes, &len);
    efarm_test_context("encoding vector %s", v->name);
    efarm_pkt_init(&pkt, v->type);
    pkt.flags = v->flags;
    for (unsigned i = 0; i < v->nfields; i++)
        efarm_pkt_set(&pkt, v->fields[i].id, v->fields[i].value);
    for (unsigned i = 0; i < v->nrma_iov; i++)
        efarm_rma_iov_store(rma, i, &v->rma_iov[i]);
    pkt.rma_iov = rma;
    for (unsigned i = 0; i < v->nextra_info; i++)
        for (unsigned b = 0; b < 8; b++)
            extra[i * 8 + b] = (uint8_t)(v->extra_info[i] >> (8 * b));
    pkt.extra_info = extra;
    pkt.raw_addr = v->raw_addr;
    pkt.user_recv_qpn = v->user_recv_qpn;
    pkt.user_recv_qkey = v->user_recv_qkey;

    EXPECT_RET(efarm_pkt_encode(&pkt, out, sizeof(out), &hdr_length), 0);
    EXPECT_EQ(hdr_length, v->hdr_length);
    EXPECT_MEM_EQ(out, bytes, hdr_length);
    /* One byte too small a buffer must be refused, not overrun. */
    EXPECT_RET(efarm_pkt_encode(&pkt, out, hdr_length - 1, &hdr_length), -ENOSPC);
}

EFARM_TEST(golden_vectors_present)
{
    /* Every type with a wire format has at least one vector. */
    for (int t = 0; t < EFARM_PKT_TYPE_COUNT; t++) {
        const struct efarm_pkt_type_info *info = efarm_pkt_type_info((uint8_t)t);
        size_t n = 0;

        if (!(info->traits & EFARM_PKT_T_SUPPORTED))
            continue;
        for (size_t i = 0; i < g_golden_vector_count; i++)
            n += g_golden_vectors[i].type == t;
        if (!n)
            efarm_test_fail(__FILE__, __LINE__, "no golden vector for type %d %s", t, info->name);
    }
    EXPECT_TRUE(g_golden_vector_count >= 45);
}

EFARM_TEST(golden_vectors_decode)
{
    for (size_t i = 0; i < g_golden_vector_count; i++)
        check_decode(&g_golden_vectors[i]);
}

EFARM_TEST(golden_vectors_encode)
{
    for (size_t i = 0; i < g_golden_vector_count; i++)
        check_encode(&g_golden_vectors[i]);
}

EFARM_TEST(golden_vectors_names_unique)
{
    for (size_t i = 0; i < g_golden_vector_count; i++)
        for (size_t j = i + 1; j < g_golden_vector_count; j++)
            if (!strcmp(g_golden_vectors[i].name, g_golden_vectors[j].name))
                efarm_test_fail(__FILE__, __LINE__, "duplicate vector name %s",
                                g_golden_vectors[i].name);
}
