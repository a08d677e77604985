/* efarm-pktdump --pcap and --log (see pktdump_streams.h). */
#include "pktdump_streams.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "efarm_capture.h"
#include "efarm_errno.h"
#include "efarm_hex.h"
#include "efarm_pkt.h"

#define STREAM_PKT_MAX (64u << 10)

static uint8_t g_rec[STREAM_PKT_MAX + EFARM_CAPTURE_HDR_LEN];

static int stream_fail(const char *fmt, const char *a, unsigned long long b)
{
    fputs("efarm-pktdump: ", stderr);
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    return 1;
}

/* The decoded packet: text, or its JSON object (without the newline) after `"packet":`. */
static void print_packet(const uint8_t *p, size_t len, bool json)
{
    struct efarm_pkt pkt;
    int ret = efarm_pkt_decode(p, len, &pkt);

    if (ret && json) {
        printf("\"packet\":null,\"error\":\"%s\"}\n", efarm_strerror_name(ret));
    } else if (ret) {
        printf("(does not decode: %s)\n", efarm_strerror(ret));
    } else if (json) {
        char *buf = NULL;
        size_t n = 0;
        FILE *mem = open_memstream(&buf, &n);

        if (!mem) {
            printf("\"packet\":null,\"error\":\"out of memory\"}\n");
            return;
        }
        efarm_pkt_print_json(mem, &pkt);
        fclose(mem);
        while (n && buf[n - 1] == '\n')
            n--;
        printf("\"packet\":%.*s}\n", (int)n, buf);
        free(buf);
    } else {
        efarm_pkt_print_text(stdout, &pkt);
    }
}

static uint32_t swap32(uint32_t v)
{
    return v >> 24 | (v >> 8 & 0xff00u) | (v << 8 & 0xff0000u) | v << 24;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int pktdump_pcap(FILE *in, const char *name, bool json)
{
    uint32_t gh[6], rh[4], magic;
    bool swap, nsec;
    unsigned long long n = 0;

    if (fread(&magic, 4, 1, in) != 1 || fread(gh, 4, 5, in) != 5)
        return stream_fail("%s: not a pcap file (shorter than its header)%.0llu", name, 0);
    swap = magic == swap32(EFARM_CAPTURE_PCAP_MAGIC_NS) || magic == swap32(0xa1b2c3d4u);
    if (swap)
        magic = swap32(magic);
    if (magic != EFARM_CAPTURE_PCAP_MAGIC_NS && magic != 0xa1b2c3d4u)
        return stream_fail("%s: not a pcap file (magic 0x%llx)", name, magic);
    nsec = magic == EFARM_CAPTURE_PCAP_MAGIC_NS;
    if ((swap ? swap32(gh[4]) : gh[4]) != EFARM_CAPTURE_LINKTYPE)
        return stream_fail("%s: link type %llu is not efarm's capture (147, USER0)", name,
                           swap ? swap32(gh[4]) : gh[4]);
    for (;;) {
        size_t got = fread(rh, 4, 4, in);
        uint32_t incl, orig, hlen;
        const uint8_t *h = g_rec;

        if (got == 0 && feof(in))
            break;
        if (got != 4)
            return stream_fail("%s: record %llu cut short in its header", name, n + 1);
        for (int i = 0; swap && i < 4; i++)
            rh[i] = swap32(rh[i]);
        incl = rh[2];
        orig = rh[3];
        if (incl > sizeof(g_rec) || incl < EFARM_CAPTURE_HDR_LEN || orig < incl)
            return stream_fail("%s: record %llu has an impossible length", name, n + 1);
        if (fread(g_rec, 1, incl, in) != incl)
            return stream_fail("%s: record %llu cut short", name, n + 1);
        n++;
        hlen = (uint32_t)h[2] << 8 | h[3];
        if (h[0] != EFARM_CAPTURE_VERSION || hlen < EFARM_CAPTURE_HDR_LEN || hlen > incl ||
            h[1] > EFARM_CAPTURE_RX)
            return stream_fail("%s: record %llu has no efarm capture header", name, n);
        if (json) {
            printf("{\"n\":%llu,\"time\":\"%u.%0*u\",\"dir\":\"%s\",\"ep_qpn\":%u,\"peer_qpn\":%u,",
                   n, rh[0], nsec ? 9 : 6, rh[1], h[1] ? "rx" : "tx", be32(h + 4), be32(h + 8));
            if (be32(h + 12) == EFARM_CAPTURE_PEER_UNKNOWN)
                printf("\"peer_index\":null,");
            else
                printf("\"peer_index\":%u,", be32(h + 12));
            printf("\"peer_gid\":\"");
            for (int i = 0; i < 16; i++)
                printf("%02x", h[16 + i]);
            printf("\",\"pid\":%u,\"rank\":%d,\"length\":%u,\"captured\":%u,", be32(h + 32),
                   (int)be32(h + 36), orig - hlen, incl - hlen);
        } else {
            printf("#%llu %u.%0*u %s ep QPN %u %s ", n, rh[0], nsec ? 9 : 6, rh[1],
                   h[1] ? "rx" : "tx", be32(h + 4), h[1] ? "from" : "to");
            if (be32(h + 12) == EFARM_CAPTURE_PEER_UNKNOWN)
                printf("an unknown sender");
            else
                printf("peer %u", be32(h + 12));
            printf(" (QPN %u, GID ", be32(h + 8));
            for (int i = 0; i < 16; i++)
                printf("%02x", h[16 + i]);
            printf("), pid %u", be32(h + 32));
            if ((int)be32(h + 36) >= 0)
                printf(" rank %d", (int)be32(h + 36));
            printf(", %u bytes%s\n", orig - hlen,
                   incl < orig ? " (cut at the snapshot length)" : "");
        }
        print_packet(g_rec + hlen, incl - hlen, json);
    }
    if (ferror(in))
        return stream_fail("%s: read error after record %llu", name, n);
    return 0;
}

/* JSON string body of text (without the newline): quotes, backslashes and controls escaped. */
static void json_text(const char *s)
{
    for (; *s && *s != '\n'; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
}

int pktdump_log(FILE *in, bool json)
{
    static char line[4 * STREAM_PKT_MAX];
    static char head[1024];
    unsigned long long lineno = 0, n = 0;

    head[0] = '\0';
    while (fgets(line, sizeof(line), in)) {
        const char *hex;
        size_t len = 0;
        int high = -1;

        lineno++;
        if (strncmp(line, "efarm[", 6))
            continue;
        if (strstr(line, "] data: ")) {
            size_t keep = strlen(line) < sizeof(head) - 2 ? strlen(line) : sizeof(head) - 2;

            memcpy(head, line, keep);
            if (head[keep - 1] != '\n')
                head[keep++] = '\n';
            head[keep] = '\0';
            continue;
        }
        hex = strstr(line, "] hex:");
        if (!hex)
            continue;
        if (!strchr(line, '\n') && !feof(in))
            return stream_fail("line %.0s%llu: hex line longer than a packet", "", lineno);
        for (const char *p = hex + 6; *p && *p != '\n'; p++) {
            int d = *p == ' ' ? -2 : efarm_hex_digit(*p);

            if (d == -2)
                continue;
            if (d < 0 || len == STREAM_PKT_MAX)
                return stream_fail("line %.0s%llu: not a packet's hex", "", lineno);
            if (high < 0) {
                high = d;
            } else {
                g_rec[len++] = (uint8_t)(high << 4 | d);
                high = -1;
            }
        }
        if (high >= 0 || len == 0)
            return stream_fail("line %.0s%llu: not a packet's hex", "", lineno);
        n++;
        if (json) {
            printf("{\"n\":%llu,\"log\":\"", n);
            json_text(head);
            printf("\",");
        } else {
            printf("#%llu %s", n, *head ? head : "(no header line)\n");
        }
        print_packet(g_rec, len, json);
        head[0] = '\0';
    }
    if (n == 0)
        return stream_fail(
            "no packet in the log (efarm logs them at EFARM_LOG_LEVEL=data)%.0s%.0llu", "", 0);
    return 0;
}
