/*
 * efarm-pktdump: the protocol v4 dissector.
 *
 *   efarm-pktdump < packet.hex            readable form, one field per line
 *   efarm-pktdump --json < packet.hex     one JSON object on one line
 *   efarm-pktdump --encode < packet.json  the packet as hex on one line
 *   efarm-pktdump [--json] --pcap FILE     every packet of an EFARM_CAPTURE file
 *   efarm-pktdump [--json] --log < LOG     every packet of an EFARM_LOG_LEVEL=data log
 *
 * Hex input is one packet, whitespace ignored. JSON input is one object in the
 * --json format; every field the packet carries must be given, and nothing
 * else, so that decoding and encoding are exact inverses. Any malformed input
 * ends with exit status 1 and exactly one line on stderr; bad usage with 2.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "efarm_byteorder.h"
#include "efarm_errno.h"
#include "efarm_hex.h"
#include "efarm_pkt.h"
#include "json.h"
#include "pktdump_streams.h"

/*
 * Bytes read from stdin, and bytes in a packet either way. An EFA packet is at
 * most a few KiB; the packet limit keeps the JSON form of any packet we decode
 * well below the input limit, so every decoded packet can be encoded again.
 */
#define PKTDUMP_INPUT_MAX  (1u << 20)
#define PKTDUMP_PACKET_MAX (64u << 10)
#define PKTDUMP_IOV_MAX    (PKTDUMP_PACKET_MAX / sizeof(struct efarm_wire_rma_iov))

static char g_input[PKTDUMP_INPUT_MAX + 1];
static uint8_t g_wire[PKTDUMP_PACKET_MAX];
static uint8_t g_payload[PKTDUMP_PACKET_MAX];
static uint8_t g_rma_iov[PKTDUMP_IOV_MAX * sizeof(struct efarm_wire_rma_iov)];
static uint8_t g_extra_info[EFARM_HANDSHAKE_MAX_EXTRA_INFO * sizeof(uint64_t)];

/* Print "efarm-pktdump: <reason>" as the only line on stderr; returns -EINVAL to propagate. */
static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;

    fputs("efarm-pktdump: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return -EINVAL;
}

/* A codec error: its message and symbolic name. */
static int fail_code(int err)
{
    return fail("%s (%s)", efarm_strerror(err), efarm_strerror_name(err));
}

/* Text from the input made safe for a one-line message: printable ASCII, at most 40 bytes. */
static const char *printable(const char *s)
{
    static char buf[48];
    size_t n = 0;

    for (; *s && n < 40; s++)
        buf[n++] = *s >= 0x20 && *s < 0x7f ? *s : '?';
    strcpy(buf + n, *s ? "..." : "");
    return buf;
}

/* All of stdin into g_input; refuses more than PKTDUMP_INPUT_MAX bytes. */
static int read_input(size_t *len_p)
{
    size_t n = 0, got;

    do {
        got = fread(g_input + n, 1, sizeof(g_input) - n, stdin);
        n += got;
    } while (got && n < sizeof(g_input));
    if (ferror(stdin))
        return fail("cannot read stdin: %s", strerror(errno));
    if (n > PKTDUMP_INPUT_MAX)
        return fail("input is larger than %u bytes", PKTDUMP_INPUT_MAX);
    g_input[n] = '\0';
    *len_p = n;
    return 0;
}

/* ---- Decoding ------------------------------------------------------------- */

/* Hex digits with any whitespace between them, into g_wire. */
static int parse_hex_input(const char *text, size_t len, size_t *n_p)
{
    size_t n = 0;
    int high = -1;

    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        int d;

        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f')
            continue;
        d = efarm_hex_digit(c);
        if (d < 0)
            return fail("non-hex character at byte %zu of the input", i);
        if (high < 0) {
            high = d;
        } else {
            if (n == sizeof(g_wire))
                return fail("packet is larger than %u bytes", PKTDUMP_PACKET_MAX);
            g_wire[n++] = (uint8_t)(high << 4 | d);
            high = -1;
        }
    }
    if (high >= 0)
        return fail("odd number of hex digits in the input");
    if (n == 0)
        return fail("no hex digits in the input");
    *n_p = n;
    return 0;
}

static int run_decode(bool json)
{
    struct efarm_pkt pkt;
    size_t len = 0, n = 0;
    int ret;

    ret = read_input(&len);
    if (ret)
        return ret;
    ret = parse_hex_input(g_input, len, &n);
    if (ret)
        return ret;
    ret = efarm_pkt_decode(g_wire, n, &pkt);
    if (ret)
        return fail_code(ret);
    if (json)
        efarm_pkt_print_json(stdout, &pkt);
    else
        efarm_pkt_print_text(stdout, &pkt);
    return 0;
}

/* ---- Encoding: JSON accessors ---------------------------------------------- */

/* `v`, called `name` in messages, as an unsigned integer of at most `bits` bits. */
static int json_uint(const struct efarm_json_value *v, const char *name, unsigned bits,
                     uint64_t *v_p)
{
    if (v->type != EFARM_JSON_NUMBER)
        return fail("\"%s\" must be a number, not %s", name, efarm_json_type_name(v->type));
    if (bits < 64 && v->number >> bits)
        return fail("\"%s\" does not fit in %u bits", name, bits);
    *v_p = v->number;
    return 0;
}

/* Member `key` of `obj`, which must be there; `where` prefixes the name in messages. */
static int require_uint(const struct efarm_json_value *obj, const char *where, const char *key,
                        unsigned bits, uint64_t *v_p)
{
    const struct efarm_json_value *v = efarm_json_get(obj, key);
    char name[64];

    snprintf(name, sizeof(name), "%s%s", where, key);
    if (!v)
        return fail("missing \"%s\"", name);
    return json_uint(v, name, bits, v_p);
}

/* `v` must be an object whose keys are all in the NULL-terminated list `keys`. */
static int check_object(const struct efarm_json_value *v, const char *name, const char *const *keys)
{
    if (v->type != EFARM_JSON_OBJECT)
        return fail("\"%s\" must be an object, not %s", name, efarm_json_type_name(v->type));
    for (const struct efarm_json_value *m = v->first; m; m = m->next) {
        const char *const *k = keys;

        while (*k && strcmp(*k, m->key))
            k++;
        if (!*k)
            return fail("unknown key \"%s\" in \"%s\"", printable(m->key), name);
    }
    return 0;
}

/* `n` bytes of hex digits, no whitespace, from string `v` into out[cap]. */
static int json_hex(const struct efarm_json_value *v, const char *name, uint8_t *out, size_t cap,
                    size_t *n_p)
{
    if (v->type != EFARM_JSON_STRING)
        return fail("\"%s\" must be a string, not %s", name, efarm_json_type_name(v->type));
    if (v->count % 2)
        return fail("\"%s\" has an odd number of hex digits", name);
    if (v->count / 2 > cap)
        return fail("\"%s\" is longer than %zu bytes", name, cap);
    for (size_t i = 0; i < v->count; i += 2) {
        int high = efarm_hex_digit(v->string[i]), low = efarm_hex_digit(v->string[i + 1]);

        if (high < 0 || low < 0)
            return fail("\"%s\" has a non-hex character at position %zu", name,
                        high < 0 ? i : i + 1);
        out[i / 2] = (uint8_t)(high << 4 | low);
    }
    *n_p = v->count / 2;
    return 0;
}

/* The member must be present exactly when `flag` is set in the packet's flags. */
static int check_flagged(const struct efarm_json_value *obj, const struct efarm_pkt *pkt,
                         const char *key, uint16_t flag, const char *flag_name)
{
    bool present = efarm_json_get(obj, key) != NULL;

    if (present && !(pkt->flags & flag))
        return fail("\"%s\" given but flag %s (0x%x) is not set", key, flag_name, flag);
    if (!present && (pkt->flags & flag))
        return fail("missing \"%s\": flag %s (0x%x) is set", key, flag_name, flag);
    return 0;
}

/* ---- Encoding: the packet's parts ------------------------------------------ */

/* Packet type from "type" and/or "type_name"; the type must have a wire format. */
static int encode_type(const struct efarm_json_value *obj, uint8_t *type_p)
{
    const struct efarm_json_value *name = efarm_json_get(obj, "type_name");
    uint64_t type = 0;
    int ret;

    if (!name && !efarm_json_get(obj, "type"))
        return fail("missing \"type\" or \"type_name\"");
    if (efarm_json_get(obj, "type")) {
        ret = require_uint(obj, "", "type", 8, &type);
        if (ret)
            return ret;
    }
    if (name) {
        int t;

        if (name->type != EFARM_JSON_STRING)
            return fail("\"type_name\" must be a string, not %s", efarm_json_type_name(name->type));
        t = efarm_pkt_type_lookup(name->string);
        if (t < 0)
            return fail("unknown \"type_name\" \"%s\"", printable(name->string));
        if (efarm_json_get(obj, "type") && (uint64_t)t != type)
            return fail("\"type\" %u and \"type_name\" \"%s\" disagree", (unsigned)type,
                        printable(name->string));
        type = (uint64_t)t;
    }
    if (!(efarm_pkt_type_info((uint8_t)type)->traits & EFARM_PKT_T_SUPPORTED))
        return fail_code(EFARM_E(PKT_ENCODE_TYPE));
    *type_p = (uint8_t)type;
    return 0;
}

/* Whether `key` may appear at the top level of a packet of this type. */
static bool key_allowed(const struct efarm_pkt_type_info *info, uint8_t type, const char *key)
{
    static const char *const common[] = {"type",   "type_name",      "version",     "flags",
                                         "connid", "payload_length", "payload_hex", NULL};
    static const char *const req[] = {"cq_data", "raw_addr", NULL};
    static const char *const handshake[] = {"host_id", "device_version", "user_recv_qp",
                                            "extra_info", NULL};
    const char *const *lists[] = {common, (info->traits & EFARM_PKT_T_REQ) ? req : NULL,
                                  type == EFARM_PKT_HANDSHAKE ? handshake : NULL};

    for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++)
        for (const char *const *k = lists[l]; k && *k; k++)
            if (!strcmp(*k, key))
                return true;
    if ((info->traits & EFARM_PKT_T_RMA_IOV) && !strcmp(key, "rma_iov"))
        return true;
    for (unsigned i = 0; i < info->nfields; i++)
        if (!strcmp(efarm_pkt_field_name((enum efarm_pkt_field)info->fields[i].id), key))
            return true;
    return false;
}

/* Type, version, flags and every fixed field; rejects keys the type does not have. */
static int encode_header(const struct efarm_json_value *obj, struct efarm_pkt *pkt)
{
    const struct efarm_pkt_type_info *info;
    uint64_t v = 0;
    uint8_t type = 0;
    int ret;

    ret = encode_type(obj, &type);
    if (ret)
        return ret;
    info = efarm_pkt_type_info(type);
    efarm_pkt_init(pkt, type);
    for (const struct efarm_json_value *m = obj->first; m; m = m->next)
        if (!key_allowed(info, type, m->key))
            return fail("unknown key \"%s\" for %s", printable(m->key), info->name);
    if (efarm_json_get(obj, "version")) {
        ret = require_uint(obj, "", "version", 8, &v);
        if (ret)
            return ret;
        if (v != EFARM_PROTO_VERSION)
            return fail_code(EFARM_E(PKT_BAD_VERSION));
    }
    if (efarm_json_get(obj, "flags")) {
        ret = require_uint(obj, "", "flags", 16, &v);
        if (ret)
            return ret;
        pkt->flags = (uint16_t)v;
    }
    for (unsigned i = 0; i < info->nfields; i++) {
        enum efarm_pkt_field id = (enum efarm_pkt_field)info->fields[i].id;

        if (id == EFARM_PKT_F_CONNID)
            continue; /* the multiuse word: connid only under CONNID_HDR, below */
        ret = require_uint(obj, "", efarm_pkt_field_name(id), 8u * info->fields[i].width, &v);
        if (ret)
            return ret;
        efarm_pkt_set(pkt, id, v);
    }
    return 0;
}

/* One optional scalar, present exactly when `flag` is set. */
static int encode_flagged_uint(const struct efarm_json_value *obj, struct efarm_pkt *pkt,
                               enum efarm_pkt_field id, unsigned bits, uint16_t flag,
                               const char *flag_name)
{
    const char *key = efarm_pkt_field_name(id);
    uint64_t v = 0;
    int ret;

    ret = check_flagged(obj, pkt, key, flag, flag_name);
    if (ret || !(pkt->flags & flag))
        return ret;
    ret = require_uint(obj, "", key, bits, &v);
    if (ret)
        return ret;
    efarm_pkt_set(pkt, id, v);
    return 0;
}

/* REQ raw-address optional header: {gid, qpn, connid[, size]}. */
static int encode_raw_addr(const struct efarm_json_value *obj, struct efarm_pkt *pkt)
{
    static const char *const keys[] = {"gid", "qpn", "connid", "size", NULL};
    const struct efarm_json_value *ra, *gid;
    uint64_t qpn = 0, connid = 0, size = EFARM_REQ_OPT_RAW_ADDR_SIZE_FIELD;
    size_t n = 0;
    int ret;

    ret = check_flagged(obj, pkt, "raw_addr", EFARM_REQ_OPT_RAW_ADDR_HDR, "RAW_ADDR_HDR");
    if (ret || !(pkt->flags & EFARM_REQ_OPT_RAW_ADDR_HDR))
        return ret;
    ra = efarm_json_get(obj, "raw_addr");
    ret = check_object(ra, "raw_addr", keys);
    if (ret)
        return ret;
    gid = efarm_json_get(ra, "gid");
    if (!gid)
        return fail("missing \"raw_addr.gid\"");
    ret = json_hex(gid, "raw_addr.gid", pkt->raw_addr.gid, EFARM_GID_LEN, &n);
    if (!ret && n != EFARM_GID_LEN)
        ret = fail("\"raw_addr.gid\" must be %d bytes (%d hex digits)", EFARM_GID_LEN,
                   2 * EFARM_GID_LEN);
    if (!ret)
        ret = require_uint(ra, "raw_addr.", "qpn", 16, &qpn);
    if (!ret)
        ret = require_uint(ra, "raw_addr.", "connid", 32, &connid);
    if (!ret && efarm_json_get(ra, "size"))
        ret = require_uint(ra, "raw_addr.", "size", 32, &size);
    if (ret)
        return ret;
    /* The codec reads size 0 as "the default", so reject it here like any size below 32. */
    if (size < sizeof(struct efarm_wire_raw_addr))
        return fail_code(EFARM_E(PKT_RAW_ADDR_SIZE));
    pkt->raw_addr.qpn = (uint16_t)qpn;
    pkt->raw_addr.connid = (uint32_t)connid;
    pkt->raw_addr_size = (uint32_t)size;
    pkt->present |= EFARM_PKT_HAS_RAW_ADDR;
    return 0;
}

/* rma_iov[]: exactly rma_iov_count {addr, len, key} objects, stored in wire format. */
static int encode_rma_iov(const struct efarm_json_value *obj, struct efarm_pkt *pkt)
{
    static const char *const keys[] = {"addr", "len", "key", NULL};
    const struct efarm_json_value *arr = efarm_json_get(obj, "rma_iov");
    uint64_t count = efarm_pkt_get(pkt, EFARM_PKT_F_RMA_IOV_COUNT);
    uint32_t i = 0;

    if (!arr)
        return fail("missing \"rma_iov\"");
    if (arr->type != EFARM_JSON_ARRAY)
        return fail("\"rma_iov\" must be an array, not %s", efarm_json_type_name(arr->type));
    if (arr->count != count)
        return fail("\"rma_iov\" has length %zu but rma_iov_count is %llu", arr->count,
                    (unsigned long long)count);
    if (count > PKTDUMP_IOV_MAX)
        return fail("packet is larger than %u bytes", PKTDUMP_PACKET_MAX);
    for (const struct efarm_json_value *m = arr->first; m; m = m->next, i++) {
        struct efarm_rma_iov iov = {0, 0, 0};
        char where[32];
        int ret;

        snprintf(where, sizeof(where), "rma_iov[%u]", (unsigned)i);
        ret = check_object(m, where, keys);
        if (ret)
            return ret;
        strcat(where, ".");
        ret = require_uint(m, where, "addr", 64, &iov.addr);
        if (!ret)
            ret = require_uint(m, where, "len", 64, &iov.len);
        if (!ret)
            ret = require_uint(m, where, "key", 64, &iov.key);
        if (ret)
            return ret;
        efarm_rma_iov_store(g_rma_iov, i, &iov);
    }
    pkt->rma_iov = g_rma_iov;
    pkt->present |= EFARM_PKT_HAS_RMA_IOV;
    return 0;
}

/* HANDSHAKE: extra_info[] (always) and the optional fields its flags select. */
static int encode_handshake(const struct efarm_json_value *obj, struct efarm_pkt *pkt)
{
    static const char *const qp_keys[] = {"qpn", "qkey", NULL};
    const struct efarm_json_value *arr = efarm_json_get(obj, "extra_info"), *qp;
    uint64_t nextra_p3 = efarm_pkt_get(pkt, EFARM_PKT_F_NEXTRA_P3), qpn = 0, qkey = 0;
    uint32_t i = 0;
    int ret;

    ret = encode_flagged_uint(obj, pkt, EFARM_PKT_F_HOST_ID, 64, EFARM_HANDSHAKE_HOST_ID_HDR,
                              "HOST_ID_HDR");
    if (!ret)
        ret = encode_flagged_uint(obj, pkt, EFARM_PKT_F_DEVICE_VERSION, 32,
                                  EFARM_HANDSHAKE_DEVICE_VERSION_HDR, "DEVICE_VERSION_HDR");
    if (!ret)
        ret = check_flagged(obj, pkt, "user_recv_qp", EFARM_HANDSHAKE_USER_RECV_QP_HDR,
                            "USER_RECV_QP_HDR");
    if (ret)
        return ret;
    if (pkt->flags & EFARM_HANDSHAKE_USER_RECV_QP_HDR) {
        qp = efarm_json_get(obj, "user_recv_qp");
        ret = check_object(qp, "user_recv_qp", qp_keys);
        if (!ret)
            ret = require_uint(qp, "user_recv_qp.", "qpn", 32, &qpn);
        if (!ret)
            ret = require_uint(qp, "user_recv_qp.", "qkey", 32, &qkey);
        if (ret)
            return ret;
        pkt->user_recv_qpn = (uint32_t)qpn;
        pkt->user_recv_qkey = (uint32_t)qkey;
        pkt->present |= EFARM_PKT_HAS_USER_RECV_QP;
    }

    if (nextra_p3 < 3)
        return fail_code(EFARM_E(PKT_NEXTRA_P3));
    if (nextra_p3 - 3 > EFARM_HANDSHAKE_MAX_EXTRA_INFO)
        return fail_code(EFARM_E(PKT_EXTRA_INFO_COUNT));
    if (!arr)
        return fail("missing \"extra_info\"");
    if (arr->type != EFARM_JSON_ARRAY)
        return fail("\"extra_info\" must be an array, not %s", efarm_json_type_name(arr->type));
    if (arr->count != nextra_p3 - 3)
        return fail("\"extra_info\" has length %zu but nextra_p3 - 3 is %llu", arr->count,
                    (unsigned long long)(nextra_p3 - 3));
    for (const struct efarm_json_value *m = arr->first; m; m = m->next, i++) {
        char name[32];
        uint64_t v = 0;

        snprintf(name, sizeof(name), "extra_info[%u]", (unsigned)i);
        ret = json_uint(m, name, 64, &v);
        if (ret)
            return ret;
        efarm_store_le64(g_extra_info + (size_t)i * sizeof(uint64_t), v);
    }
    pkt->extra_info = g_extra_info;
    pkt->present |= EFARM_PKT_HAS_EXTRA_INFO;
    return 0;
}

/* Optional payload_hex (default empty) and payload_length, which must agree. */
static int encode_payload(const struct efarm_json_value *obj, struct efarm_pkt *pkt)
{
    const struct efarm_json_value *hex = efarm_json_get(obj, "payload_hex");
    const struct efarm_json_value *length = efarm_json_get(obj, "payload_length");
    uint64_t want = 0;
    size_t n = 0;
    int ret;

    if (hex) {
        ret = json_hex(hex, "payload_hex", g_payload, sizeof(g_payload), &n);
        if (ret)
            return ret;
    }
    if (length) {
        ret = json_uint(length, "payload_length", 64, &want);
        if (ret)
            return ret;
        if (want != n)
            return fail("\"payload_length\" is %llu but \"payload_hex\" holds %zu bytes",
                        (unsigned long long)want, n);
    }
    pkt->payload = g_payload;
    pkt->payload_length = n;
    return 0;
}

/* The packet `root` describes, into g_wire; it is checked by decoding it again. */
static int encode_json(const struct efarm_json_value *root, size_t *len_p)
{
    const struct efarm_pkt_type_info *info;
    struct efarm_pkt pkt, check;
    size_t hdr_length = 0;
    int ret;

    if (root->type != EFARM_JSON_OBJECT)
        return fail("expected a JSON object, not %s", efarm_json_type_name(root->type));
    ret = encode_header(root, &pkt);
    if (ret)
        return ret;
    info = efarm_pkt_type_info(pkt.type);
    if ((info->traits & (EFARM_PKT_T_MULTIUSE | EFARM_PKT_T_OPT_8 | EFARM_PKT_T_REQ)) ||
        pkt.type == EFARM_PKT_HANDSHAKE)
        ret = encode_flagged_uint(root, &pkt, EFARM_PKT_F_CONNID, 32, EFARM_PKT_FLAG_CONNID_HDR,
                                  "CONNID_HDR");
    else if (efarm_json_get(root, "connid"))
        ret = fail("%s carries no connid", info->name);
    if (!ret && (info->traits & EFARM_PKT_T_REQ)) {
        ret = encode_flagged_uint(root, &pkt, EFARM_PKT_F_CQ_DATA, 64, EFARM_REQ_OPT_CQ_DATA_HDR,
                                  "CQ_DATA_HDR");
        if (!ret)
            ret = encode_raw_addr(root, &pkt);
    }
    if (!ret && pkt.type == EFARM_PKT_HANDSHAKE)
        ret = encode_handshake(root, &pkt);
    if (!ret && (info->traits & EFARM_PKT_T_RMA_IOV))
        ret = encode_rma_iov(root, &pkt);
    if (!ret)
        ret = encode_payload(root, &pkt);
    if (ret)
        return ret;

    ret = efarm_pkt_encode(&pkt, g_wire, sizeof(g_wire) - pkt.payload_length, &hdr_length);
    if (ret == -ENOSPC)
        return fail("packet is larger than %u bytes", PKTDUMP_PACKET_MAX);
    if (ret)
        return fail_code(ret);
    memcpy(g_wire + hdr_length, pkt.payload, pkt.payload_length);
    /* Never print a packet that efarm itself would reject. */
    ret = efarm_pkt_decode(g_wire, hdr_length + pkt.payload_length, &check);
    if (ret)
        return fail_code(ret);
    *len_p = hdr_length + pkt.payload_length;
    return 0;
}

static int run_encode(void)
{
    static const char digits[] = "0123456789abcdef";
    struct efarm_json_doc doc;
    struct efarm_json_error err;
    size_t len = 0, n = 0;
    int ret;

    ret = read_input(&len);
    if (ret)
        return ret;
    ret = efarm_json_open(g_input, len, &doc, &err);
    if (ret == -ENOMEM)
        return fail("cannot read the JSON input: %s", err.what);
    if (ret)
        return fail("invalid JSON at byte %zu: %s", err.offset, err.what);
    ret = encode_json(doc.root, &n);
    efarm_json_close(&doc);
    if (ret)
        return ret;
    for (size_t i = 0; i < n; i++) {
        putchar(digits[g_wire[i] >> 4]);
        putchar(digits[g_wire[i] & 0xf]);
    }
    putchar('\n');
    return 0;
}

/* ---- Command line ----------------------------------------------------------- */

static void usage(FILE *out)
{
    fputs("usage: efarm-pktdump [--json | --encode | --help] < input\n"
          "       efarm-pktdump [--json] --pcap FILE\n"
          "       efarm-pktdump [--json] --log < LOG\n"
          "Reads one EFA RDM protocol v4 packet on stdin, or every packet of a capture\n"
          "(EFARM_CAPTURE) or of a data-level log (EFARM_LOG_LEVEL=data).\n"
          "  (no option)  hex in (whitespace ignored), readable text out\n"
          "  --json       hex in, one JSON object out (with --pcap/--log: one per packet)\n"
          "  --encode     one JSON object in (the --json format), hex out\n"
          "  --pcap FILE  every record of a capture: time, direction, endpoint, peer, packet\n"
          "  --log        every packet of a log: its header line, then the packet\n"
          "Malformed input: exit status 1 and one line on stderr.\n",
          out);
}

int main(int argc, char **argv)
{
    bool json = false, log = false;
    const char *pcap = NULL, *mode = "";
    int ret;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && !json) {
            json = true;
        } else if (!strcmp(argv[i], "--pcap") && i + 1 < argc && !pcap && !log && !*mode) {
            pcap = argv[++i];
        } else if (!strcmp(argv[i], "--log") && !pcap && !log && !*mode) {
            log = true;
        } else if ((!strcmp(argv[i], "--encode") || !strcmp(argv[i], "--help")) && !*mode &&
                   !pcap && !log && !json && argc == 2) {
            mode = argv[i];
        } else {
            fprintf(stderr, "efarm-pktdump: unknown option or extra argument\n");
            usage(stderr);
            return 2;
        }
    }
    if (!strcmp(mode, "--help")) {
        usage(stdout);
        return 0;
    }
    if (pcap) {
        FILE *in = fopen(pcap, "rb");

        if (!in) {
            fail("cannot open %s: %s", pcap, strerror(errno));
            return 1;
        }
        ret = pktdump_pcap(in, pcap, json);
        fclose(in);
    } else if (log) {
        ret = pktdump_log(stdin, json);
    } else if (!strcmp(mode, "--encode")) {
        ret = run_encode();
    } else {
        ret = run_decode(json);
    }
    if (ret)
        return 1;
    if (fflush(stdout) || ferror(stdout)) {
        fail("cannot write stdout: %s", strerror(errno));
        return 1;
    }
    return 0;
}
