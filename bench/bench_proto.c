/*
 * The protocol engine's cost: the two-process ping-pong of bench-device, but
 * through efarm_tsend/efarm_trecv (tag matching, subprotocols, ordering,
 * handshake) instead of the device layer, plus windowed streaming and the
 * small-message rate. bench/run-proto-bench.sh prints it next to bench-device
 * with the engine's overhead per small round trip.
 *
 *   pingpong  one-way latency (half the round trip), median and p99, of
 *             8 B .. 1 MiB; the echo's receive is posted before each send.
 *             Sizes up to 8 KiB also run on a device-layer endpoint of their
 *             own (bench-device's ping-pong), in blocks alternating with the
 *             engine's, so the engine's overhead per round trip is measured
 *             under the same load on the machine;
 *   stream    a window of WINDOW sends, then a 0-byte acknowledgement once the
 *             receiver has all of them (osu_bw's pattern); the receiver posts
 *             each window's receives before it acknowledges the previous one;
 *   msgrate   the same with 8-byte messages, in messages per second.
 *
 * Large sizes run fewer iterations (the same bytes as 8 KiB would move).
 *
 *   EFARM_DEVICE=sim EFARM_EFASIM_PATH=build/gcc/src/efasim/.libs bench/bench-proto [iterations]
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "efarm_errno.h"
#include "efarm_proto.h"

#define WINDOW    64
#define MAX_ITERS 200000
#define TAG_DATA  1
#define TAG_ACK   2
#define BUF_LEN   (4u << 20)
#define DEV_MAX   8192 /* largest device-layer ping-pong (one send) */
#define BLOCK     500  /* round trips per device or engine block */

static const uint32_t g_lat_sizes[] = {8, 512, 4096, 8192, 65536, 1048576};
static const uint32_t g_bw_sizes[] = {8192, 65536, 1048576, 4194304};

struct side {
    struct efarm_ep *ep;
    efarm_peer_t peer;
    uint8_t *sbuf, *rbuf;
    bool initiator;
    unsigned protos; /* subprotocols this side's sends used in the current test */
};

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static void die(const char *what, int err)
{
    fprintf(stderr, "bench-proto: %s failed: %s\n", what, efarm_strerror(err));
    exit(2);
}

static void wait_req(struct side *s, struct efarm_req *req)
{
    while (!req->done) {
        int ret = efarm_ep_progress(s->ep);

        if (ret < 0)
            die("efarm_ep_progress", ret);
    }
    if (req->status)
        die("a request", req->status);
}

static void post_recv(struct side *s, uint32_t len, int32_t tag, struct efarm_req *req)
{
    int ret;

    *req = (struct efarm_req){0};
    while ((ret = efarm_trecv(s->ep, s->rbuf, len, 0, 0, tag, req)) == -EAGAIN)
        efarm_ep_progress(s->ep);
    if (ret)
        die("efarm_trecv", ret);
}

static void post_send(struct side *s, uint32_t len, int32_t tag, struct efarm_req *req)
{
    int ret;

    *req = (struct efarm_req){0};
    while ((ret = efarm_tsend(s->ep, s->peer, s->sbuf, len, 0, 0, tag, 0, 0, req)) == -EAGAIN)
        efarm_ep_progress(s->ep);
    if (ret)
        die("efarm_tsend", ret);
}

/* Wait for a send; the initiator's sends are data, so it notes their subprotocol. */
static void send_done(struct side *s, struct efarm_req *req)
{
    wait_req(s, req);
    if (s->initiator)
        s->protos |= 1u << req->proto;
}

/* Iterations for a size: all of them up to 8 KiB, then the bytes 8 KiB would move. */
static int scaled(int iters, uint32_t len, int min)
{
    int n = len <= 8192 ? iters : (int)((uint64_t)iters * 8192 / len);

    return n < min ? min : n;
}

/* `n` engine round trips; the initiator's one-way times go to lat (NULL: warm-up). */
static void pingpong_block(struct side *s, uint32_t len, int n, double *lat)
{
    struct efarm_req rreq, sreq = {.done = true};

    if (!s->initiator)
        post_recv(s, len, TAG_DATA, &rreq);
    for (int i = 0; i < n; i++) {
        double t = now_us();

        /* As osu_latency: each side posts its next receive after its send. */
        if (s->initiator) {
            post_send(s, len, TAG_DATA, &sreq);
            post_recv(s, len, TAG_DATA, &rreq);
            wait_req(s, &rreq);
            send_done(s, &sreq);
            if (lat)
                lat[i] = (now_us() - t) / 2;
        } else {
            wait_req(s, &rreq);
            send_done(s, &sreq);
            post_send(s, len, TAG_DATA, &sreq);
            if (i + 1 < n)
                post_recv(s, len, TAG_DATA, &rreq);
        }
    }
    send_done(s, &sreq);
}

/* ---- The device layer alone, interleaved with the engine (bench-device's ping-pong) ---- */

struct dev_side {
    struct efarm_dev_ep *ep;
    struct efarm_dev_ah *ah;
    struct efarm_dev_mr *mr;
    uint8_t *buf;
    uint32_t qpn, qkey;
};

static void dev_open(struct dev_side *d, uint8_t raw[EFARM_RAW_ADDR_LEN])
{
    struct efarm_dev_ep_attr attr = {.sq_depth = 256, .rx_buffers = 256, .rnr_retry = 7};
    int ret = efarm_dev_ep_open(NULL, &attr, &d->ep);

    if (ret)
        die("efarm_dev_ep_open", ret);
    d->buf = calloc(1, DEV_MAX);
    if (d->buf == NULL)
        die("calloc", -ENOMEM);
    ret = efarm_dev_mr_reg(d->ep, d->buf, DEV_MAX, false, false, &d->mr);
    if (ret)
        die("efarm_dev_mr_reg", ret);
    efarm_dev_ep_raw_addr(d->ep, raw);
}

static void dev_connect(struct dev_side *d, const uint8_t peer[EFARM_RAW_ADDR_LEN])
{
    int ret = efarm_dev_ah_get(d->ep, peer, &d->ah);

    if (ret)
        die("efarm_dev_ah_get", ret);
    d->qpn = peer[16] | (uint32_t)peer[17] << 8;
    d->qkey =
        peer[20] | (uint32_t)peer[21] << 8 | (uint32_t)peer[22] << 16 | (uint32_t)peer[23] << 24;
}

static void dev_close(struct dev_side *d)
{
    efarm_dev_mr_dereg(d->mr);
    efarm_dev_ep_close(d->ep);
    free(d->buf);
}

/* Poll until one receive arrived; send completions are consumed on the way. */
static void dev_wait_recv(struct dev_side *d)
{
    for (;;) {
        struct efarm_dev_cqe c[16];
        int n = efarm_dev_poll(d->ep, c, 16), got = 0;

        if (n < 0)
            die("efarm_dev_poll", n);
        for (int i = 0; i < n; i++) {
            if (c[i].status)
                die("a device completion", c[i].status);
            if (c[i].op == EFARM_DEV_OP_RECV) {
                efarm_dev_rx_release(d->ep, c[i].rx_id);
                got++;
            }
        }
        if (got)
            return;
    }
}

static void dev_send(struct dev_side *d, uint32_t len)
{
    struct efarm_dev_send snd = {.ah = d->ah, .qpn = d->qpn, .qkey = d->qkey, .nseg = 1};
    int ret;

    snd.seg[0].addr = d->buf;
    snd.seg[0].len = len;
    snd.seg[0].lkey = efarm_dev_mr_lkey(d->mr);
    while ((ret = efarm_dev_post_send(d->ep, &snd, 1)) == -EAGAIN) {
        struct efarm_dev_cqe c[16];

        efarm_dev_poll(d->ep, c, 16); /* ping-pong: only send completions can wait here */
    }
    if (ret != 1)
        die("efarm_dev_post_send", ret);
}

static void dev_pingpong_block(struct dev_side *d, bool initiator, uint32_t len, int n, double *lat)
{
    for (int i = 0; i < n; i++) {
        double t = now_us();

        if (initiator) {
            dev_send(d, len);
            dev_wait_recv(d);
            if (lat)
                lat[i] = (now_us() - t) / 2;
        } else {
            dev_wait_recv(d);
            dev_send(d, len);
        }
    }
}

struct lat_figures {
    double med, p99, dev_med; /* dev_med: 0 when the size was not measured on the device */
};

static double percentile(double *lat, int n, int pct)
{
    qsort(lat, (size_t)n, sizeof(lat[0]), cmp_double);
    return lat[(int64_t)n * pct / 100];
}

/*
 * Ping-pong `iters` round trips through the engine. Sizes one device send can
 * carry also run on the device layer alone, in alternating blocks of BLOCK
 * round trips, so both see the same load on the machine.
 */
static void pingpong(struct side *s, struct dev_side *d, uint32_t len, int iters,
                     struct lat_figures *f)
{
    static double lat[MAX_ITERS], dev_lat[MAX_ITERS];
    int warmup = iters / 10 < 100 ? iters / 10 : 100;

    pingpong_block(s, len, warmup, NULL);
    if (len > DEV_MAX) {
        pingpong_block(s, len, iters, s->initiator ? lat : NULL);
    } else {
        dev_pingpong_block(d, s->initiator, len, warmup, NULL);
        for (int done = 0; done < iters; done += BLOCK) {
            int n = iters - done < BLOCK ? iters - done : BLOCK;

            dev_pingpong_block(d, s->initiator, len, n, s->initiator ? dev_lat + done : NULL);
            pingpong_block(s, len, n, s->initiator ? lat + done : NULL);
        }
    }
    if (s->initiator) {
        f->med = percentile(lat, iters, 50);
        f->p99 = percentile(lat, iters, 99);
        f->dev_med = len > DEV_MAX ? 0 : percentile(dev_lat, iters, 50);
    }
}

/* `windows` windows of WINDOW messages; returns the initiator's elapsed time in us. */
static double stream(struct side *s, uint32_t len, int windows)
{
    static struct efarm_req reqs[2][WINDOW];
    struct efarm_req ack, ack_send = {.done = true};
    double t0;

    if (!s->initiator)
        for (int j = 0; j < WINDOW; j++)
            post_recv(s, len, TAG_DATA, &reqs[0][j]);
    t0 = now_us();
    for (int w = 0; w < windows; w++) {
        struct efarm_req *cur = reqs[w & 1], *next = reqs[(w + 1) & 1];

        if (s->initiator) {
            post_recv(s, 0, TAG_ACK, &ack);
            for (int j = 0; j < WINDOW; j++)
                post_send(s, len, TAG_DATA, &cur[j]);
            for (int j = 0; j < WINDOW; j++)
                send_done(s, &cur[j]);
            wait_req(s, &ack);
        } else {
            for (int j = 0; j < WINDOW; j++)
                wait_req(s, &cur[j]);
            if (w + 1 < windows)
                for (int j = 0; j < WINDOW; j++)
                    post_recv(s, len, TAG_DATA, &next[j]);
            send_done(s, &ack_send);
            post_send(s, 0, TAG_ACK, &ack_send);
        }
    }
    if (!s->initiator)
        send_done(s, &ack_send);
    return now_us() - t0;
}

static void protos_format(unsigned protos, char *out, size_t len)
{
    size_t n = 0;

    out[0] = '\0';
    for (unsigned p = 0; p < EFARM_PROTO_COUNT && n < len; p++)
        if (protos & 1u << p)
            n += (size_t)snprintf(out + n, len - n, "%s%s", n ? "+" : "",
                                  efarm_proto_name((enum efarm_proto_kind)p));
}

static void run(bool initiator, int wfd, int rfd, int iters)
{
    uint8_t mine[2][EFARM_RAW_ADDR_LEN], peer[2][EFARM_RAW_ADDR_LEN];
    struct side s = {.initiator = initiator};
    const struct efarm_counters *c;
    struct dev_side d = {0};
    char names[64];
    int ret;

    ret = efarm_ep_open(NULL, &s.ep);
    if (ret)
        die("efarm_ep_open", ret);
    s.sbuf = calloc(1, BUF_LEN);
    s.rbuf = calloc(1, BUF_LEN);
    if (!s.sbuf || !s.rbuf)
        die("calloc", -ENOMEM);
    efarm_ep_addr(s.ep, mine[0]);
    dev_open(&d, mine[1]);
    if (write(wfd, mine, sizeof(mine)) != sizeof(mine) ||
        read(rfd, peer, sizeof(peer)) != sizeof(peer))
        die("address exchange", -EIO);
    ret = efarm_av_insert(s.ep, peer[0], &s.peer);
    if (ret)
        die("efarm_av_insert", ret);
    dev_connect(&d, peer[1]);
    if (initiator)
        printf("bench-proto: 2 processes through the protocol engine, %d ping-pongs per size up "
               "to 8 KiB (the same bytes above), window %d; the device layer alone in blocks of "
               "%d round trips alternating with the engine's\n"
               "%-8s | %8s | %-17s | %21s | %10s %10s\n",
               iters, WINDOW, BLOCK, "test", "bytes", "proto", "engine lat med/p99 us",
               "device med", "+us/RTT");
    for (size_t i = 0; i < sizeof(g_lat_sizes) / sizeof(g_lat_sizes[0]); i++) {
        uint32_t len = g_lat_sizes[i];
        struct lat_figures f = {0};

        s.protos = 0;
        pingpong(&s, &d, len, scaled(iters, len, 100), &f);
        protos_format(s.protos, names, sizeof(names));
        if (initiator && f.dev_med > 0)
            printf("%-8s | %8u | %-17s | %10.2f %10.2f | %10.2f %10.2f\n", "pingpong", len, names,
                   f.med, f.p99, f.dev_med, 2 * (f.med - f.dev_med));
        else if (initiator)
            printf("%-8s | %8u | %-17s | %10.2f %10.2f | %10s %10s\n", "pingpong", len, names,
                   f.med, f.p99, "-", "-");
    }
    dev_close(&d);
    if (initiator)
        printf("%-8s | %8s | %-17s | %21s\n", "test", "bytes", "proto", "MB/s");
    for (size_t i = 0; i < sizeof(g_bw_sizes) / sizeof(g_bw_sizes[0]); i++) {
        uint32_t len = g_bw_sizes[i];
        int windows = (scaled(iters * 4, len, 1) + WINDOW - 1) / WINDOW;
        double us;

        s.protos = 0;
        us = stream(&s, len, windows);
        protos_format(s.protos, names, sizeof(names));
        if (initiator)
            printf("%-8s | %8u | %-17s | %21.1f\n", "stream", len, names,
                   (double)len * windows * WINDOW / us);
    }
    {
        int windows = iters * 4 / WINDOW;
        double us;

        s.protos = 0;
        us = stream(&s, 8, windows);
        protos_format(s.protos, names, sizeof(names));
        if (initiator)
            printf("%-8s | %8u | %-17s | %21.0f msgs/s\n", "msgrate", 8u, names,
                   (double)windows * WINDOW / us * 1e6);
    }
    c = efarm_ep_counters(s.ep);
    if (initiator)
        printf("initiator: %llu unexpected, %llu out of order, %llu RNR, %llu sends queued\n",
               (unsigned long long)c->unexpected, (unsigned long long)c->out_of_order,
               (unsigned long long)c->rnr, (unsigned long long)c->tx_queued);
    efarm_ep_close(s.ep);
    free(s.sbuf);
    free(s.rbuf);
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 20000;
    int p2c[2], c2p[2], status;
    pid_t child;

    if (iters < 100 || iters > MAX_ITERS) {
        fprintf(stderr, "usage: bench-proto [iterations, 100..%d]\n", MAX_ITERS);
        return 2;
    }
    if (pipe(p2c) || pipe(c2p))
        die("pipe", -errno);
    fflush(stdout);
    child = fork();
    if (child == 0) {
        run(false, c2p[1], p2c[0], iters);
        _exit(0);
    }
    run(true, p2c[1], c2p[0], iters);
    waitpid(child, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
