/*
 * The protocol engine's cost: the two-process ping-pong of bench-device, but
 * through efarm_tsend/efarm_trecv (tag matching, subprotocols, ordering,
 * handshake) instead of the device layer, plus windowed streaming and the
 * small-message rate. bench/run-proto-bench.sh prints it next to bench-device
 * with the engine's overhead per small round trip.
 *
 *   pingpong  one-way latency (half the round trip), median and p99, of
 *             8 B .. 1 MiB; the echo's receive is posted before each send;
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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static void pingpong(struct side *s, uint32_t len, int iters, double *med, double *p99)
{
    static double lat[MAX_ITERS];
    struct efarm_req rreq, sreq = {.done = true};
    int warmup = iters / 10 < 100 ? iters / 10 : 100;

    if (!s->initiator)
        post_recv(s, len, TAG_DATA, &rreq);
    for (int i = -warmup; i < iters; i++) {
        double t = now_us();

        if (s->initiator) {
            post_recv(s, len, TAG_DATA, &rreq);
            post_send(s, len, TAG_DATA, &sreq);
            wait_req(s, &rreq);
            send_done(s, &sreq);
            if (i >= 0)
                lat[i] = (now_us() - t) / 2;
        } else {
            wait_req(s, &rreq);
            send_done(s, &sreq);
            if (i + 1 < iters)
                post_recv(s, len, TAG_DATA, &rreq);
            post_send(s, len, TAG_DATA, &sreq);
        }
    }
    send_done(s, &sreq);
    if (s->initiator) {
        qsort(lat, (size_t)iters, sizeof(lat[0]), cmp_double);
        *med = lat[iters / 2];
        *p99 = lat[iters * 99 / 100];
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
    uint8_t mine[EFARM_RAW_ADDR_LEN], peer[EFARM_RAW_ADDR_LEN];
    struct side s = {.initiator = initiator};
    const struct efarm_counters *c;
    char names[64];
    int ret;

    ret = efarm_ep_open(NULL, &s.ep);
    if (ret)
        die("efarm_ep_open", ret);
    s.sbuf = calloc(1, BUF_LEN);
    s.rbuf = calloc(1, BUF_LEN);
    if (!s.sbuf || !s.rbuf)
        die("calloc", -ENOMEM);
    efarm_ep_addr(s.ep, mine);
    if (write(wfd, mine, sizeof(mine)) != sizeof(mine) ||
        read(rfd, peer, sizeof(peer)) != sizeof(peer))
        die("address exchange", -EIO);
    ret = efarm_av_insert(s.ep, peer, &s.peer);
    if (ret)
        die("efarm_av_insert", ret);
    if (initiator)
        printf("bench-proto: 2 processes through the protocol engine, %d ping-pongs per size up "
               "to 8 KiB (the same bytes above), window %d\n"
               "%-8s | %8s | %-17s | %21s\n",
               iters, WINDOW, "test", "bytes", "proto", "engine lat med/p99 us");
    for (size_t i = 0; i < sizeof(g_lat_sizes) / sizeof(g_lat_sizes[0]); i++) {
        uint32_t len = g_lat_sizes[i];
        double med = 0, p99 = 0;

        s.protos = 0;
        pingpong(&s, len, scaled(iters, len, 100), &med, &p99);
        protos_format(s.protos, names, sizeof(names));
        if (initiator)
            printf("%-8s | %8u | %-17s | %10.2f %10.2f\n", "pingpong", len, names, med, p99);
    }
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
