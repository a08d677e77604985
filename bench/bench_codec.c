/*
 * Codec benchmark: ns per encode and per decode of an EAGER_TAGRTM packet
 * (the small-message path), with and without the raw-address header that
 * precedes the handshake, plus a HANDSHAKE decode.
 *
 *   bench-codec [iterations]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "efarm_pkt.h"

static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Keeps the compiler from discarding work whose result is otherwise unused. */
static volatile uint64_t g_sink;

static void bench_packet(const char *label, struct efarm_pkt *pkt, size_t payload, long iters)
{
    uint8_t buf[256];
    struct efarm_pkt out;
    size_t hdr_length = 0;
    double t0, t_enc, t_dec;
    uint64_t acc = 0;

    /* Best of 5 runs: the figure is the codec's cost, not the scheduler's. */
    t_enc = t_dec = 1e30;
    for (int run = 0; run < 5; run++) {
        t0 = now_ns();
        for (long i = 0; i < iters; i++) {
            pkt->value[EFARM_PKT_F_MSG_ID] = (uint64_t)i & 0xffffffff;
            if (efarm_pkt_encode(pkt, buf, sizeof(buf), &hdr_length))
                abort();
            acc += buf[5];
        }
        double e = (now_ns() - t0) / (double)iters;
        memset(buf + hdr_length, 0x5a, payload);

        t0 = now_ns();
        for (long i = 0; i < iters; i++) {
            if (efarm_pkt_decode(buf, hdr_length + payload, &out))
                abort();
            acc += out.value[EFARM_PKT_F_TAG] + out.payload_length;
        }
        double d = (now_ns() - t0) / (double)iters;
        t_enc = e < t_enc ? e : t_enc;
        t_dec = d < t_dec ? d : t_dec;
    }
    g_sink = acc;
    printf("%-34s hdr %3zu B  encode %6.1f ns  decode %6.1f ns\n", label, hdr_length, t_enc, t_dec);
}

int main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 2000000;
    struct efarm_pkt pkt;
    uint8_t extra[8] = {0x5f};

    printf("bench-codec: %ld iterations per measurement, best of 5\n", iters);

    efarm_pkt_init(&pkt, EFARM_PKT_EAGER_TAGRTM);
    pkt.flags = EFARM_REQ_MSG | EFARM_REQ_TAGGED;
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_ID, 1);
    efarm_pkt_set(&pkt, EFARM_PKT_F_TAG, 0x123456789abcdef0ull);
    bench_packet("EAGER_TAGRTM, 8 B payload", &pkt, 8, iters);

    pkt.flags |= EFARM_PKT_FLAG_CONNID_HDR;
    efarm_pkt_set(&pkt, EFARM_PKT_F_CONNID, 0xfeedbeef);
    bench_packet("EAGER_TAGRTM + connid, 8 B", &pkt, 8, iters);

    pkt.flags = EFARM_REQ_MSG | EFARM_REQ_TAGGED | EFARM_REQ_OPT_RAW_ADDR_HDR;
    pkt.raw_addr.qpn = 7;
    pkt.raw_addr.connid = 0xfeedbeef;
    bench_packet("EAGER_TAGRTM + raw addr, 8 B", &pkt, 8, iters);

    efarm_pkt_init(&pkt, EFARM_PKT_HANDSHAKE);
    pkt.flags = EFARM_PKT_FLAG_CONNID_HDR | EFARM_HANDSHAKE_HOST_ID_HDR;
    efarm_pkt_set(&pkt, EFARM_PKT_F_NEXTRA_P3, 4);
    pkt.extra_info = extra;
    bench_packet("HANDSHAKE, 1 extra word", &pkt, 0, iters);
    return 0;
}
