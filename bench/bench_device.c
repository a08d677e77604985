/*
 * The device layer's own cost: the same two-process ping-pong and
 * credit-windowed stream as bench-efasim, but through efarm_dev_* (endpoint,
 * receive pool, batched polling) instead of raw verbs. bench/run-device-bench.sh
 * prints the two side by side with the ratio.
 *
 *   EFARM_DEVICE=sim EFARM_EFASIM_PATH=build/gcc/src/efasim/.libs bench/bench-device [iterations]
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <errno.h>

#include "efarm_device.h"

#define WINDOW    64
#define CREDIT    16
#define MAX_ITERS 200000

static const uint32_t g_sizes[] = {8, 64, 512, 4096, 8192};
#define NSIZES (sizeof(g_sizes) / sizeof(g_sizes[0]))

struct side {
    struct efarm_dev_ep *ep;
    struct efarm_dev_ah *ah;
    struct efarm_dev_mr *mr;
    uint8_t *buf;
    uint32_t qpn, qkey;
    unsigned tx_inflight;
};

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void die(const char *what, int err)
{
    fprintf(stderr, "bench-device: %s failed (%d)\n", what, err);
    exit(2);
}

/* Poll until at least one receive arrived; returns how many. Sends complete on the way. */
static int wait_recv(struct side *s)
{
    for (;;) {
        struct efarm_dev_cqe c[16];
        int n = efarm_dev_poll(s->ep, c, 16), got = 0;

        for (int i = 0; i < n; i++) {
            if (c[i].status)
                die("completion", c[i].status);
            if (c[i].op == EFARM_DEV_OP_RECV) {
                efarm_dev_rx_release(s->ep, c[i].rx_id);
                got++;
            } else {
                s->tx_inflight--;
            }
        }
        if (got)
            return got;
    }
}

static void send_len(struct side *s, uint32_t len)
{
    struct efarm_dev_send snd = {.ah = s->ah, .qpn = s->qpn, .qkey = s->qkey, .nseg = 1};
    int ret;

    snd.seg[0].addr = s->buf;
    snd.seg[0].len = len;
    snd.seg[0].lkey = efarm_dev_mr_lkey(s->mr);
    while ((ret = efarm_dev_post_send(s->ep, &snd, 1)) == -EAGAIN) {
        struct efarm_dev_cqe c[16];
        int n = efarm_dev_poll(s->ep, c, 16);

        for (int i = 0; i < n; i++)
            if (c[i].op != EFARM_DEV_OP_RECV)
                s->tx_inflight--;
    }
    if (ret != 1)
        die("efarm_dev_post_send", ret);
    s->tx_inflight++;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static void measure(struct side *s, bool initiator, uint32_t len, int iters, double *med,
                    double *p99, double *mbps)
{
    static double lat[MAX_ITERS];
    int sent = 0, acked = 0;
    double t0;

    for (int i = -100; i < iters; i++) {
        double t = now_us();

        if (initiator) {
            send_len(s, len);
            wait_recv(s);
            if (i >= 0)
                lat[i] = (now_us() - t) / 2;
        } else {
            wait_recv(s);
            send_len(s, len);
        }
    }
    t0 = now_us();
    if (initiator) {
        while (sent < iters * 4) {
            while (sent - acked < WINDOW && sent < iters * 4) {
                send_len(s, len);
                sent++;
            }
            acked += CREDIT * wait_recv(s);
        }
        while (acked < sent)
            acked += CREDIT * wait_recv(s);
        qsort(lat, (size_t)iters, sizeof(lat[0]), cmp_double);
        *med = lat[iters / 2];
        *p99 = lat[iters * 99 / 100];
        *mbps = (double)len * iters * 4 / (now_us() - t0);
    } else {
        for (int got = 0, credited = 0; got < iters * 4;) {
            got += wait_recv(s);
            for (; credited + CREDIT <= got; credited += CREDIT)
                send_len(s, 8);
        }
    }
}

static void run(bool initiator, int wfd, int rfd, int iters)
{
    struct efarm_dev_ep_attr attr = {.sq_depth = 256, .rx_buffers = 256, .rnr_retry = 7};
    uint8_t mine[EFARM_RAW_ADDR_LEN], peer[EFARM_RAW_ADDR_LEN];
    struct side s = {0};
    int ret;

    ret = efarm_dev_ep_open(NULL, &attr, &s.ep);
    if (ret)
        die("efarm_dev_ep_open", ret);
    s.buf = calloc(1, 8192);
    ret = efarm_dev_mr_reg(s.ep, s.buf, 8192, false, false, &s.mr);
    if (ret)
        die("efarm_dev_mr_reg", ret);
    efarm_dev_ep_raw_addr(s.ep, mine);
    if (write(wfd, mine, sizeof(mine)) != sizeof(mine) ||
        read(rfd, peer, sizeof(peer)) != sizeof(peer))
        die("address exchange", -1);
    s.qpn = peer[16] | (uint32_t)peer[17] << 8;
    s.qkey =
        peer[20] | (uint32_t)peer[21] << 8 | (uint32_t)peer[22] << 16 | (uint32_t)peer[23] << 24;
    ret = efarm_dev_ah_get(s.ep, peer, &s.ah);
    if (ret)
        die("efarm_dev_ah_get", ret);
    if (initiator)
        printf("bench-device: 2 processes, %d ping-pongs and %d streamed messages per size\n"
               "%6s | %22s | %9s\n",
               iters, iters * 4, "bytes", "device lat med/p99 us", "MB/s");
    for (size_t i = 0; i < NSIZES; i++) {
        double med = 0, p99 = 0, mbps = 0;

        measure(&s, initiator, g_sizes[i], iters, &med, &p99, &mbps);
        if (initiator)
            printf("%6u | %10.2f %10.2f | %9.1f\n", g_sizes[i], med, p99, mbps);
    }
    efarm_dev_mr_dereg(s.mr);
    efarm_dev_ep_close(s.ep);
    free(s.buf);
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 20000;
    int p2c[2], c2p[2], status;
    pid_t child;

    if (iters < 100 || iters > MAX_ITERS) {
        fprintf(stderr, "usage: bench-device [iterations, 100..%d]\n", MAX_ITERS);
        return 2;
    }
    if (pipe(p2c) || pipe(c2p))
        die("pipe", -1);
    child = fork();
    if (child == 0) {
        run(false, c2p[1], p2c[0], iters);
        _exit(0);
    }
    run(true, p2c[1], c2p[0], iters);
    waitpid(child, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
