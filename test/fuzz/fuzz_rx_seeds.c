/*
 * fuzz-rx-seeds DIR [CAPTURE.pcap...]: write the receive-path fuzzer's seed
 * inputs (fuzz_rx.h's language) into DIR.
 *
 * From every golden vector: the packet from connected wire peer 0 with every
 * rewrite on, after receives are posted and, for a packet that answers
 * something (CTS, CTSDATA, EOR, RECEIPT, READ_NACK, read and atomic
 * responses), after the engine started what it answers; the same packet as
 * it is from the unknown sender; and from peer 1 (no RDMA read).
 *
 * From every capture of a real run (EFARM_CAPTURE's pcap): the packets the
 * captured endpoint received, in order, in inputs of up to 16, after
 * receives are posted, sent by peer 0 with their addresses and msg_ids
 * rewritten to the wire peer's own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "efarm_byteorder.h"
#include "efarm_capture.h"
#include "efarm_pkt.h"
#include "efarm_proto.h"
#include "fuzz_rx.h"
#include "golden_vectors.h"

#define SEED_MAX   65536
#define CAP_WINDOW 16

struct seed {
    uint8_t b[SEED_MAX];
    size_t n;
};

static unsigned g_written;

static void put(struct seed *s, const void *bytes, size_t n)
{
    if (s->n + n <= sizeof(s->b)) {
        memcpy(s->b + s->n, bytes, n);
        s->n += n;
    }
}

static void put_u8(struct seed *s, uint8_t v)
{
    put(s, &v, 1);
}

static void put_u16(struct seed *s, uint16_t v)
{
    uint8_t b[2];

    efarm_store_le16(b, v);
    put(s, b, 2);
}

/* Post receives every arriving message can match: tagged with any source and tag, untagged. */
static void put_recvs(struct seed *s)
{
    for (unsigned ctx = 0; ctx < 2; ctx++) {
        put_u8(s, FZ_RECV);
        put_u8(s, (uint8_t)(2 | (ctx << 2)));
        put_u16(s, 8192); /* 64 KiB */
    }
    put_u8(s, FZ_RECV);
    put_u8(s, 3);
    put_u16(s, 8192);
}

static void put_pkt(struct seed *s, uint8_t peer, uint8_t flags, const uint8_t *pkt, uint16_t len)
{
    put_u8(s, FZ_PKT);
    put_u8(s, peer);
    put_u8(s, flags);
    put_u16(s, len);
    put(s, pkt, len);
}

static int seed_write(const char *dir, const char *name, const struct seed *s)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (f == NULL || fwrite(s->b, 1, s->n, f) != s->n || fclose(f) != 0) {
        fprintf(stderr, "fuzz-rx-seeds: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    g_written++;
    return 0;
}

/* What the engine must have started for packet `type` to answer something live. */
static void put_prelude(struct seed *s, uint8_t type)
{
    switch (type) {
    case EFARM_PKT_CTS:
    case EFARM_PKT_READ_NACK:
        put_u8(s, FZ_SEND); /* a 128 KiB long-CTS or long-read send to peer 0 */
        put_u8(s, 0);
        put_u8(s, 17);
        put_u8(s, 0);
        break;
    case EFARM_PKT_EOR:
    case EFARM_PKT_RECEIPT:
        put_u8(s, FZ_SEND); /* a delivery-complete send */
        put_u8(s, 0);
        put_u8(s, 10);
        put_u8(s, EFARM_SEND_DC);
        break;
    case EFARM_PKT_READRSP:
    case EFARM_PKT_ATOMRSP:
    case EFARM_PKT_CTSDATA:
        put_u8(s, FZ_RMA); /* an emulated read (kind 0) or atomic (kind 2) of 64 bytes */
        put_u8(s, 0);
        put_u8(s, type == EFARM_PKT_ATOMRSP ? 2 : 0);
        put_u16(s, 0);
        put_u16(s, 64);
        break;
    default:
        break;
    }
    put_u8(s, FZ_PROGRESS);
    put_u8(s, 4);
}

static int golden_seeds(const char *dir)
{
    static const uint8_t all = FZ_FIX_ADDR | FZ_FIX_MSGID | FZ_FIX_IDS | FZ_FIX_RMA;
    uint8_t pkt[GOLDEN_MAX_BYTES];
    char name[256];

    for (size_t i = 0; i < g_golden_vector_count; i++) {
        const struct golden_vector *v = &g_golden_vectors[i];
        long n = golden_hex_parse(v->hex, pkt, sizeof(pkt));
        struct seed s = {.n = 0};

        if (n < 0)
            return -1;
        put_recvs(&s);
        put_prelude(&s, v->type);
        put_pkt(&s, 0, all, pkt, (uint16_t)n);
        snprintf(name, sizeof(name), "golden-%s", v->name);
        if (seed_write(dir, name, &s))
            return -1;
        s.n = 0;
        put_recvs(&s);
        put_pkt(&s, 2, FZ_FIX_ADDR, pkt, (uint16_t)n);
        snprintf(name, sizeof(name), "golden-%s-unknown", v->name);
        if (seed_write(dir, name, &s))
            return -1;
        s.n = 0;
        put_prelude(&s, v->type);
        put_pkt(&s, 1, all, pkt, (uint16_t)n);
        snprintf(name, sizeof(name), "golden-%s-peer1", v->name);
        if (seed_write(dir, name, &s))
            return -1;
    }
    return 0;
}

/* The received packets of one capture, CAP_WINDOW per seed. */
/* A pcap u32: written in the capturing host's order, this host's. */
static uint32_t host_u32(const uint8_t *p)
{
    uint32_t v;

    memcpy(&v, p, sizeof(v));
    return v;
}

static int capture_seeds(const char *dir, const char *path, unsigned index)
{
    uint8_t ghdr[24], rhdr[16], *rec = malloc(EFARM_CAPTURE_SNAPLEN);
    struct seed *s = malloc(sizeof(*s));
    unsigned in_seed = 0, seeds = 0;
    FILE *f = fopen(path, "rb");
    char name[256];
    int ret = 0;

    if (f == NULL || rec == NULL || s == NULL || fread(ghdr, 1, sizeof(ghdr), f) != sizeof(ghdr) ||
        host_u32(ghdr) != EFARM_CAPTURE_PCAP_MAGIC_NS) {
        fprintf(stderr, "fuzz-rx-seeds: %s: not an efarm capture (pcap, this host's order)\n",
                path);
        ret = -1;
        goto out;
    }
    s->n = 0;
    while (fread(rhdr, 1, sizeof(rhdr), f) == sizeof(rhdr)) {
        uint32_t caplen = host_u32(rhdr + 8);

        if (caplen > EFARM_CAPTURE_SNAPLEN || fread(rec, 1, caplen, f) != caplen) {
            /* A process that died mid-write leaves a partial last record: use the rest. */
            fprintf(stderr, "fuzz-rx-seeds: %s: truncated record, the rest is used\n", path);
            break;
        }
        if (caplen <= EFARM_CAPTURE_HDR_LEN || rec[1] != EFARM_CAPTURE_RX)
            continue;
        if (in_seed == 0) {
            s->n = 0;
            put_recvs(s);
        }
        put_pkt(s, 0, FZ_FIX_ADDR | FZ_FIX_MSGID, rec + EFARM_CAPTURE_HDR_LEN,
                (uint16_t)(caplen - EFARM_CAPTURE_HDR_LEN));
        if (++in_seed == CAP_WINDOW) {
            snprintf(name, sizeof(name), "capture%u-%u", index, seeds++);
            if (seed_write(dir, name, s)) {
                ret = -1;
                goto out;
            }
            in_seed = 0;
        }
    }
    if (in_seed) {
        snprintf(name, sizeof(name), "capture%u-%u", index, seeds++);
        ret = seed_write(dir, name, s);
    }
out:
    if (f)
        fclose(f);
    free(rec);
    free(s);
    return ret;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: fuzz-rx-seeds DIR [CAPTURE.pcap...]\n");
        return 2;
    }
    if (golden_seeds(argv[1]))
        return 1;
    for (int i = 2; i < argc; i++)
        if (capture_seeds(argv[1], argv[i], (unsigned)i - 1))
            return 1;
    printf("fuzz-rx-seeds: %u seeds in %s\n", g_written, argv[1]);
    return 0;
}
