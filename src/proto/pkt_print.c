/*
 * Packet printers: the readable one-field-per-line form (what the `data` log
 * level prints) and the one-line JSON form of efarm-pktdump --json. Both walk
 * the same table as the codec, so a field is named the same everywhere.
 */
#include "efarm_pkt.h"

#include <inttypes.h>
#include <stdbool.h>

struct flag_name {
    uint16_t bit;
    const char *name;
};

static const struct flag_name g_req_flag_names[] = {{EFARM_REQ_OPT_RAW_ADDR_HDR, "RAW_ADDR_HDR"},
                                                    {EFARM_REQ_OPT_CQ_DATA_HDR, "CQ_DATA_HDR"},
                                                    {EFARM_REQ_MSG, "MSG"},
                                                    {EFARM_REQ_TAGGED, "TAGGED"},
                                                    {EFARM_REQ_RMA, "RMA"},
                                                    {EFARM_REQ_ATOMIC, "ATOMIC"},
                                                    {EFARM_REQ_READ_NACK, "READ_NACK"},
                                                    {EFARM_PKT_FLAG_CONNID_HDR, "CONNID_HDR"},
                                                    {0, NULL}};

static const struct flag_name g_handshake_flag_names[] = {
    {EFARM_HANDSHAKE_HOST_ID_HDR, "HOST_ID_HDR"},
    {EFARM_HANDSHAKE_DEVICE_VERSION_HDR, "DEVICE_VERSION_HDR"},
    {EFARM_HANDSHAKE_USER_RECV_QP_HDR, "USER_RECV_QP_HDR"},
    {EFARM_PKT_FLAG_CONNID_HDR, "CONNID_HDR"},
    {0, NULL}};

static const struct flag_name g_cts_flag_names[] = {{EFARM_CTS_FLAG_EMULATED_READ, "EMULATED_READ"},
                                                    {EFARM_PKT_FLAG_CONNID_HDR, "CONNID_HDR"},
                                                    {0, NULL}};

static const struct flag_name g_other_flag_names[] = {{EFARM_PKT_FLAG_CONNID_HDR, "CONNID_HDR"},
                                                      {0, NULL}};

static const struct flag_name *flag_names_for(const struct efarm_pkt *pkt)
{
    const struct efarm_pkt_type_info *info = efarm_pkt_type_info(pkt->type);

    if (info->traits & EFARM_PKT_T_REQ)
        return g_req_flag_names;
    if (pkt->type == EFARM_PKT_HANDSHAKE)
        return g_handshake_flag_names;
    if (pkt->type == EFARM_PKT_CTS)
        return g_cts_flag_names;
    return g_other_flag_names;
}

static void print_flags(FILE *out, const struct efarm_pkt *pkt)
{
    uint16_t rest = pkt->flags;
    const char *sep = " ";

    fprintf(out, "flags: 0x%04x", pkt->flags);
    for (const struct flag_name *f = flag_names_for(pkt); f->name; f++) {
        if (pkt->flags & f->bit) {
            fprintf(out, "%s%s", sep, f->name);
            sep = "|";
            rest &= (uint16_t)~f->bit;
        }
    }
    if (rest)
        fprintf(out, "%s0x%04x", sep, rest);
    fputc('\n', out);
}

static void print_hex(FILE *out, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fprintf(out, "%02x", p[i]);
}

/*
 * The read_iov entries at the start of the payload. A packet described for
 * encoding has no payload yet (the sender appends the read_iov after the
 * headers): then there is nothing to print, whatever read_iov_count says.
 */
static size_t read_iov_count(const struct efarm_pkt *pkt)
{
    size_t n;

    if (!(efarm_pkt_type_info(pkt->type)->traits & EFARM_PKT_T_READ_IOV) || pkt->payload == NULL)
        return 0;
    n = (size_t)pkt->value[EFARM_PKT_F_READ_IOV_COUNT];
    if (n > pkt->payload_length / sizeof(struct efarm_wire_rma_iov))
        n = pkt->payload_length / sizeof(struct efarm_wire_rma_iov);
    return n;
}

/* extra_info words to print: a decoded HANDSHAKE's, or those a packet to encode points at. */
static uint64_t extra_info_count(const struct efarm_pkt *pkt)
{
    if (pkt->type != EFARM_PKT_HANDSHAKE || pkt->extra_info == NULL ||
        !(pkt->present & EFARM_PKT_HAS(NEXTRA_P3)) || pkt->value[EFARM_PKT_F_NEXTRA_P3] < 3)
        return 0;
    return pkt->value[EFARM_PKT_F_NEXTRA_P3] - 3;
}

/* Whether the raw-address header is there: decoded, or asked for by a REQ's flags. */
static bool has_raw_addr(const struct efarm_pkt *pkt)
{
    return (pkt->present & EFARM_PKT_HAS_RAW_ADDR) ||
           ((efarm_pkt_type_info(pkt->type)->traits & EFARM_PKT_T_REQ) &&
            (pkt->flags & EFARM_REQ_OPT_RAW_ADDR_HDR));
}

/* rma_iov entries: the count, if the array is there. */
static size_t rma_iov_count(const struct efarm_pkt *pkt)
{
    if (pkt->rma_iov == NULL || !(pkt->present & EFARM_PKT_HAS(RMA_IOV_COUNT)))
        return 0;
    return (size_t)pkt->value[EFARM_PKT_F_RMA_IOV_COUNT];
}

/* Scalar fields in wire order: the fixed header first, then optional fields. */
static void for_each_scalar(const struct efarm_pkt *pkt,
                            void (*fn)(FILE *, enum efarm_pkt_field, uint64_t), FILE *out)
{
    static const enum efarm_pkt_field optional[] = {EFARM_PKT_F_HOST_ID, EFARM_PKT_F_DEVICE_VERSION,
                                                    EFARM_PKT_F_CQ_DATA};
    const struct efarm_pkt_type_info *info = efarm_pkt_type_info(pkt->type);
    uint32_t done = 0;

    for (unsigned i = 0; i < info->nfields; i++) {
        enum efarm_pkt_field id = (enum efarm_pkt_field)info->fields[i].id;

        if (pkt->present & (1u << id)) {
            fn(out, id, pkt->value[id]);
            done |= 1u << id;
        }
    }
    /* connid outside the fixed header: CTSDATA, REQ and HANDSHAKE optional fields. */
    if ((pkt->present & EFARM_PKT_HAS(CONNID)) && !(done & EFARM_PKT_HAS(CONNID)))
        fn(out, EFARM_PKT_F_CONNID, pkt->value[EFARM_PKT_F_CONNID]);
    for (size_t i = 0; i < sizeof(optional) / sizeof(optional[0]); i++)
        if (pkt->present & (1u << optional[i]))
            fn(out, optional[i], pkt->value[optional[i]]);
}

/* ---- Text ---------------------------------------------------------------- */

static void text_scalar(FILE *out, enum efarm_pkt_field id, uint64_t v)
{
    if (id == EFARM_PKT_F_TAG || id == EFARM_PKT_F_CQ_DATA || id == EFARM_PKT_F_HOST_ID)
        fprintf(out, "%s: %" PRIu64 " (0x%" PRIx64 ")\n", efarm_pkt_field_name(id), v, v);
    else
        fprintf(out, "%s: %" PRIu64 "\n", efarm_pkt_field_name(id), v);
}

static void text_iovs(FILE *out, const char *name, const uint8_t *array, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct efarm_rma_iov iov;

        efarm_rma_iov_load(array, (uint32_t)i, &iov);
        fprintf(out, "%s[%zu]: addr=0x%" PRIx64 " len=%" PRIu64 " key=0x%" PRIx64 "\n", name, i,
                iov.addr, iov.len, iov.key);
    }
}

#define TEXT_PAYLOAD_MAX 256 /* bytes of payload shown in the readable form */

void efarm_pkt_print_text(FILE *out, const struct efarm_pkt *pkt)
{
    size_t nread = read_iov_count(pkt);

    fprintf(out, "type: %u %s\n", pkt->type, efarm_pkt_type_info(pkt->type)->name);
    fprintf(out, "version: %u\n", pkt->version);
    print_flags(out, pkt);
    for_each_scalar(pkt, text_scalar, out);
    text_iovs(out, "rma_iov", pkt->rma_iov, rma_iov_count(pkt));
    for (uint64_t i = 0; i < extra_info_count(pkt); i++)
        fprintf(out, "extra_info[%" PRIu64 "]: 0x%016" PRIx64 "\n", i,
                efarm_pkt_extra_info(pkt, (uint32_t)i));
    if (pkt->present & EFARM_PKT_HAS_USER_RECV_QP)
        fprintf(out, "user_recv_qp: qpn=%u qkey=0x%08x\n", pkt->user_recv_qpn, pkt->user_recv_qkey);
    if (has_raw_addr(pkt)) {
        fputs("raw_addr.gid: ", out);
        print_hex(out, pkt->raw_addr.gid, EFARM_GID_LEN);
        fprintf(out, "\nraw_addr.qpn: %u\nraw_addr.connid: %u\n", pkt->raw_addr.qpn,
                pkt->raw_addr.connid);
    }
    text_iovs(out, "read_iov", pkt->payload, nread);
    fprintf(out, "payload_length: %zu\n", pkt->payload_length);
    if (pkt->payload_length && pkt->payload != NULL) {
        size_t n = pkt->payload_length < TEXT_PAYLOAD_MAX ? pkt->payload_length : TEXT_PAYLOAD_MAX;

        fputs("payload: ", out);
        print_hex(out, pkt->payload, n);
        if (n < pkt->payload_length)
            fprintf(out, "... (%zu more bytes)", pkt->payload_length - n);
        fputc('\n', out);
    }
}

/* ---- JSON ---------------------------------------------------------------- */

static void json_scalar(FILE *out, enum efarm_pkt_field id, uint64_t v)
{
    fprintf(out, ",\"%s\":%" PRIu64, efarm_pkt_field_name(id), v);
}

static void json_iovs(FILE *out, const char *name, const uint8_t *array, size_t n)
{
    fprintf(out, ",\"%s\":[", name);
    for (size_t i = 0; i < n; i++) {
        struct efarm_rma_iov iov;

        efarm_rma_iov_load(array, (uint32_t)i, &iov);
        fprintf(out, "%s{\"addr\":%" PRIu64 ",\"len\":%" PRIu64 ",\"key\":%" PRIu64 "}",
                i ? "," : "", iov.addr, iov.len, iov.key);
    }
    fputc(']', out);
}

void efarm_pkt_print_json(FILE *out, const struct efarm_pkt *pkt)
{
    fprintf(out, "{\"type\":%u,\"type_name\":\"%s\",\"version\":%u,\"flags\":%u", pkt->type,
            efarm_pkt_type_info(pkt->type)->name, pkt->version, pkt->flags);
    for_each_scalar(pkt, json_scalar, out);
    if (pkt->present & EFARM_PKT_HAS_RMA_IOV)
        json_iovs(out, "rma_iov", pkt->rma_iov, rma_iov_count(pkt));
    if ((pkt->present & EFARM_PKT_HAS_EXTRA_INFO) || extra_info_count(pkt)) {
        fputs(",\"extra_info\":[", out);
        for (uint64_t i = 0; i < extra_info_count(pkt); i++)
            fprintf(out, "%s%" PRIu64, i ? "," : "", efarm_pkt_extra_info(pkt, (uint32_t)i));
        fputc(']', out);
    }
    if (pkt->present & EFARM_PKT_HAS_USER_RECV_QP)
        fprintf(out, ",\"user_recv_qp\":{\"qpn\":%u,\"qkey\":%u}", pkt->user_recv_qpn,
                pkt->user_recv_qkey);
    if (has_raw_addr(pkt)) {
        fputs(",\"raw_addr\":{\"gid\":\"", out);
        print_hex(out, pkt->raw_addr.gid, EFARM_GID_LEN);
        fprintf(out, "\",\"qpn\":%u,\"connid\":%u", pkt->raw_addr.qpn, pkt->raw_addr.connid);
        /* Only a sender that extended the raw address uses another size; keep it exact. */
        if (pkt->raw_addr_size != EFARM_REQ_OPT_RAW_ADDR_SIZE_FIELD)
            fprintf(out, ",\"size\":%u", pkt->raw_addr_size);
        fputc('}', out);
    }
    fprintf(out, ",\"payload_length\":%zu,\"payload_hex\":\"", pkt->payload_length);
    if (pkt->payload != NULL)
        print_hex(out, pkt->payload, pkt->payload_length);
    fputs("\"}\n", out);
}
