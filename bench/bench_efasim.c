/*
 * efasim against the kernel: the same ping-pong and windowed stream, between
 * two processes, once over efasim SRD QPs (verbs API) and once over raw UDP
 * sockets, printing latency (median, p99) and bandwidth per size and the ratio
 * of efasim's cost to the kernel's. Both sides busy-poll without blocking, as
 * efarm's progress does. Run with efasim's libraries first on the loader path:
 *
 *   LD_LIBRARY_PATH=build/gcc/src/efasim/.libs bench/bench-efasim [iterations]
 *
 * With --rdma, one-sided transfers instead: the initiator RDMA-reads and
 * RDMA-writes the other process's registered memory, 64 KiB to 16 MiB, while
 * the target only polls its CQ (as an MPI rank's progress does), and prints
 * the latency of one transfer (median, p99) and the bandwidth with
 * RDMA_WINDOW transfers in flight. EFASIM_FASTPATH=0 compares the datagram
 * path with the direct-copy one:
 *
 *   LD_LIBRARY_PATH=... bench/bench-efasim --rdma [iterations]
 *
 * With --reg, the cost of a registration: ibv_reg_mr + ibv_dereg_mr of 4 KiB
 * to 16 MiB on one context (median and p99 of a pair, in us), where efasim
 * counts the pages against RLIMIT_MEMLOCK, asks the kernel the buffer's page
 * size and charges the device's table that every process on it shares; the
 * same loop of mlock + munlock beside it, the kernel's cost of pinning alone:
 *
 *   LD_LIBRARY_PATH=... bench/bench-efasim --reg [iterations]
 */
#include <arpa/inet.h>
#include <infiniband/efadv.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define QKEY      0x5eed
#define WINDOW    64 /* messages in flight in the stream test */
#define CREDIT    16 /* the receiver returns credit every CREDIT messages */
#define NRECV     256
#define MAX_MSG   8928
#define MAX_ITERS 200000

static const size_t g_sizes[] = {8, 64, 512, 4096, 8192};
#define NSIZES (sizeof(g_sizes) / sizeof(g_sizes[0]))

#define RDMA_MAX    (16u << 20)
#define RDMA_WINDOW 8 /* transfers in flight in the bandwidth test */
static const size_t g_rdma_sizes[] = {64u << 10, 256u << 10, 1u << 20, 4u << 20, 16u << 20};
#define NRDMA (sizeof(g_rdma_sizes) / sizeof(g_rdma_sizes[0]))
static bool g_rdma_ops; /* QPs offer RDMA read and write (--rdma) */

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void die(const char *what)
{
    perror(what);
    exit(2);
}

/* ---- Transports: one interface over efasim verbs and over raw UDP ------------ */

struct transport {
    /* efasim */
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq_ex *cq;
    struct ibv_qp *qp;
    struct ibv_qp_ex *qpx;
    struct ibv_ah *ah;
    struct ibv_mr *mr;
    uint32_t peer_qpn;
    unsigned posted;
    /* UDP */
    int fd;
    struct sockaddr_in peer;
    bool udp;
    uint8_t *buf; /* NRECV receive slots then one send slot, MAX_MSG each */
};

static void verbs_post_recv(struct transport *t, uint64_t slot)
{
    struct ibv_sge sge = {(uintptr_t)(t->buf + slot * MAX_MSG), MAX_MSG, t->mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1}, *bad;

    if (ibv_post_recv(t->qp, &wr, &bad))
        die("ibv_post_recv");
}

static void verbs_open(struct transport *t, uint32_t *qpn_p, union ibv_gid *gid_p)
{
    struct ibv_device **list = ibv_get_device_list(NULL);
    struct ibv_cq_init_attr_ex cq_attr = {.cqe = 4096, .wc_flags = IBV_WC_EX_WITH_BYTE_LEN};
    struct efadv_qp_init_attr efa_attr = {.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD};
    struct ibv_qp_init_attr_ex qp_attr = {
        .qp_type = IBV_QPT_DRIVER,
        .cap = {.max_send_wr = 512, .max_recv_wr = NRECV, .max_send_sge = 1, .max_recv_sge = 1},
        .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
        .send_ops_flags = IBV_QP_EX_WITH_SEND};
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY};

    if (g_rdma_ops)
        qp_attr.send_ops_flags |= IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_RDMA_WRITE;
    if (!list || !list[0] || !(t->ctx = ibv_open_device(list[0])))
        die("ibv_open_device (is efasim on LD_LIBRARY_PATH?)");
    ibv_free_device_list(list);
    t->pd = ibv_alloc_pd(t->ctx);
    t->cq = ibv_create_cq_ex(t->ctx, &cq_attr);
    if (!t->pd || !t->cq)
        die("pd/cq");
    qp_attr.pd = t->pd;
    qp_attr.send_cq = qp_attr.recv_cq = ibv_cq_ex_to_cq(t->cq);
    t->qp = efadv_create_qp_ex(t->ctx, &qp_attr, &efa_attr, sizeof(efa_attr));
    if (!t->qp)
        die("efadv_create_qp_ex");
    if (ibv_modify_qp(t->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
        die("INIT");
    a.qp_state = IBV_QPS_RTR;
    if (ibv_modify_qp(t->qp, &a, IBV_QP_STATE))
        die("RTR");
    a.qp_state = IBV_QPS_RTS;
    a.rnr_retry = 7;
    if (ibv_modify_qp(t->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RNR_RETRY))
        die("RTS");
    t->qpx = ibv_qp_to_qp_ex(t->qp);
    t->mr = ibv_reg_mr(t->pd, t->buf, (NRECV + 1) * (size_t)MAX_MSG, IBV_ACCESS_LOCAL_WRITE);
    if (!t->mr)
        die("ibv_reg_mr");
    for (uint64_t i = 0; i < NRECV; i++)
        verbs_post_recv(t, i);
    *qpn_p = t->qp->qp_num;
    if (ibv_query_gid(t->ctx, 1, 0, gid_p))
        die("ibv_query_gid");
}

static void verbs_connect(struct transport *t, uint32_t qpn, const union ibv_gid *gid)
{
    struct ibv_ah_attr attr = {.is_global = 1, .port_num = 1};

    attr.grh.dgid = *gid;
    t->ah = ibv_create_ah(t->pd, &attr);
    if (!t->ah)
        die("ibv_create_ah");
    t->peer_qpn = qpn;
}

static void udp_open(struct transport *t, uint32_t *port_p)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sin);
    int buf = 4 << 20;

    t->udp = true;
    t->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    if (t->fd < 0 || bind(t->fd, (struct sockaddr *)&sin, sizeof(sin)) ||
        getsockname(t->fd, (struct sockaddr *)&sin, &len))
        die("udp socket");
    setsockopt(t->fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
    setsockopt(t->fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
    *port_p = ntohs(sin.sin_port);
}

/* Send `len` bytes; returns after posting (verbs) or sendto (UDP). */
static void t_send(struct transport *t, size_t len)
{
    uint8_t *src = t->buf + (size_t)NRECV * MAX_MSG;

    if (t->udp) {
        while (sendto(t->fd, src, len, 0, (struct sockaddr *)&t->peer, sizeof(t->peer)) < 0)
            ;
        return;
    }
    ibv_wr_start(t->qpx);
    t->qpx->wr_id = 1;
    t->qpx->wr_flags = IBV_SEND_SIGNALED; /* EFA refuses unsignaled WRs; t_recv drains them */
    ibv_wr_send(t->qpx);
    ibv_wr_set_ud_addr(t->qpx, t->ah, t->peer_qpn, QKEY);
    ibv_wr_set_sge(t->qpx, t->mr->lkey, (uintptr_t)src, (uint32_t)len);
    if (ibv_wr_complete(t->qpx))
        die("ibv_wr_complete");
}

/* Busy-poll until one message arrives; returns its length. */
static size_t t_recv(struct transport *t)
{
    if (t->udp) {
        for (;;) {
            ssize_t n = recv(t->fd, t->buf, MAX_MSG, 0);

            if (n >= 0)
                return (size_t)n;
        }
    }
    for (;;) {
        struct ibv_poll_cq_attr attr = {.comp_mask = 0}; /* EFA reads it: never NULL */

        if (ibv_start_poll(t->cq, &attr))
            continue;
        do {
            if (t->cq->status != IBV_WC_SUCCESS) {
                fprintf(stderr, "bench: completion error %s\n", ibv_wc_status_str(t->cq->status));
                exit(2);
            }
            if (ibv_wc_read_opcode(t->cq) == IBV_WC_RECV) {
                size_t n = ibv_wc_read_byte_len(t->cq);
                uint64_t slot = t->cq->wr_id;

                ibv_end_poll(t->cq);
                verbs_post_recv(t, slot);
                return n;
            }
        } while (!ibv_next_poll(t->cq));
        ibv_end_poll(t->cq);
    }
}

/* ---- Measurements ------------------------------------------------------------ */

struct result {
    double median_us, p99_us, mbps;
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static void measure(struct transport *t, bool initiator, size_t len, int iters, struct result *r)
{
    static double lat[MAX_ITERS];
    double t0;
    int sent, acked;

    /* Ping-pong: half the round trip is the one-way latency. */
    for (int i = -100; i < iters; i++) {
        double s = now_us();

        if (initiator) {
            t_send(t, len);
            t_recv(t);
            if (i >= 0)
                lat[i] = (now_us() - s) / 2;
        } else {
            t_recv(t);
            t_send(t, len);
        }
    }
    /* Stream with credits: WINDOW in flight, credit returned every CREDIT messages. */
    t0 = now_us();
    sent = acked = 0;
    if (initiator) {
        while (sent < iters * 4) {
            while (sent - acked < WINDOW && sent < iters * 4) {
                t_send(t, len);
                sent++;
            }
            t_recv(t);
            acked += CREDIT;
        }
        while (acked < sent) {
            t_recv(t);
            acked += CREDIT;
        }
    } else {
        for (int got = 1; got <= iters * 4; got++) {
            t_recv(t);
            if (got % CREDIT == 0)
                t_send(t, 8);
        }
    }
    if (!initiator)
        return;
    qsort(lat, (size_t)iters, sizeof(lat[0]), cmp_double);
    r->median_us = lat[iters / 2];
    r->p99_us = lat[iters * 99 / 100];
    r->mbps = (double)len * iters * 4 / (now_us() - t0); /* bytes per us = MB/s */
}

/* ---- Two processes ----------------------------------------------------------- */

struct hello {
    uint32_t qpn;
    union ibv_gid gid;
    uint32_t udp_port;
};

static void xfer(int wfd, int rfd, const struct hello *out, struct hello *in)
{
    if (write(wfd, out, sizeof(*out)) != sizeof(*out) || read(rfd, in, sizeof(*in)) != sizeof(*in))
        die("pipe");
}

static void run_side(bool initiator, int wfd, int rfd, int iters, struct result *rv,
                     struct result *ru)
{
    struct transport v = {0}, u = {0};
    struct hello me = {0}, peer;

    v.buf = aligned_alloc(4096, (NRECV + 1) * (size_t)MAX_MSG);
    u.buf = v.buf;
    if (!v.buf)
        die("alloc");
    memset(v.buf, 0x5a, (NRECV + 1) * (size_t)MAX_MSG);
    verbs_open(&v, &me.qpn, &me.gid);
    udp_open(&u, &me.udp_port);
    xfer(wfd, rfd, &me, &peer);
    verbs_connect(&v, peer.qpn, &peer.gid);
    u.peer = (struct sockaddr_in){.sin_family = AF_INET,
                                  .sin_port = htons((uint16_t)peer.udp_port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    for (size_t s = 0; s < NSIZES; s++) {
        measure(&v, initiator, g_sizes[s], iters, &rv[s]);
        measure(&u, initiator, g_sizes[s], iters, &ru[s]);
    }
}

/* ---- One-sided: RDMA read and write ------------------------------------------ */

struct rdma_hello {
    uint32_t qpn;
    union ibv_gid gid;
    uint32_t rkey;
    uint64_t addr;
};

/* The initiator's completions: returns how many WRs completed, dies on an error. */
static int rdma_poll(struct transport *t)
{
    struct ibv_poll_cq_attr attr = {.comp_mask = 0};
    int n = 0;

    if (ibv_start_poll(t->cq, &attr))
        return 0;
    do {
        if (t->cq->status != IBV_WC_SUCCESS) {
            fprintf(stderr, "bench: RDMA completion error %s\n", ibv_wc_status_str(t->cq->status));
            exit(2);
        }
        n++;
    } while (!ibv_next_poll(t->cq));
    ibv_end_poll(t->cq);
    return n;
}

static void rdma_post(struct transport *t, bool write, const struct ibv_mr *mr, size_t len,
                      const struct rdma_hello *peer)
{
    ibv_wr_start(t->qpx);
    t->qpx->wr_id = 2;
    t->qpx->wr_flags = IBV_SEND_SIGNALED;
    if (write)
        ibv_wr_rdma_write(t->qpx, peer->rkey, peer->addr);
    else
        ibv_wr_rdma_read(t->qpx, peer->rkey, peer->addr);
    ibv_wr_set_ud_addr(t->qpx, t->ah, t->peer_qpn, QKEY);
    ibv_wr_set_sge(t->qpx, mr->lkey, (uintptr_t)mr->addr, (uint32_t)len);
    if (ibv_wr_complete(t->qpx))
        die("ibv_wr_complete (RDMA)");
}

/* Latency of one transfer, then bandwidth with RDMA_WINDOW in flight. */
static void rdma_measure(struct transport *t, bool write, const struct ibv_mr *mr, size_t len,
                         int iters, const struct rdma_hello *peer, struct result *r)
{
    static double lat[MAX_ITERS];
    int sent = 0, done = 0;
    double t0;

    for (int i = -5; i < iters; i++) {
        double s = now_us();

        rdma_post(t, write, mr, len, peer);
        while (!rdma_poll(t))
            ;
        if (i >= 0)
            lat[i] = now_us() - s;
    }
    t0 = now_us();
    while (done < iters) {
        while (sent - done < RDMA_WINDOW && sent < iters) {
            rdma_post(t, write, mr, len, peer);
            sent++;
        }
        done += rdma_poll(t);
    }
    qsort(lat, (size_t)iters, sizeof(lat[0]), cmp_double);
    r->median_us = lat[iters / 2];
    r->p99_us = lat[iters * 99 / 100];
    r->mbps = (double)len * iters / (now_us() - t0);
}

static int rdma_main(int iters)
{
    struct transport t = {0};
    struct rdma_hello me = {0}, peer;
    struct result rr[NRDMA], rw[NRDMA];
    int p2c[2], c2p[2], status;
    volatile int *stop;
    struct ibv_mr *mr;
    pid_t child;

    setenv("EFASIM_RDMA_WRITE", "1", 0);
    g_rdma_ops = true;
    stop = mmap(NULL, sizeof(*stop), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (stop == MAP_FAILED || pipe(p2c) || pipe(c2p))
        die("setup");
    *stop = 0;
    child = fork();
    if (child < 0)
        die("fork");
    t.buf = aligned_alloc(4096, (NRECV + 1) * (size_t)MAX_MSG);
    if (!t.buf)
        die("alloc");
    verbs_open(&t, &me.qpn, &me.gid);
    mr = ibv_reg_mr(t.pd, aligned_alloc(4096, RDMA_MAX), RDMA_MAX,
                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
    if (!mr)
        die("ibv_reg_mr (is EFASIM_RDMA_WRITE=1?)");
    memset(mr->addr, 0x3c, RDMA_MAX);
    me.rkey = mr->rkey;
    me.addr = (uintptr_t)mr->addr;
    if (child == 0) { /* the target: its progress is polling, as an MPI rank's */
        struct rdma_hello ignored;

        if (write(c2p[1], &me, sizeof(me)) != sizeof(me) ||
            read(p2c[0], &ignored, sizeof(ignored)) != sizeof(ignored))
            die("pipe");
        while (!*stop)
            rdma_poll(&t);
        _exit(0);
    }
    if (read(c2p[0], &peer, sizeof(peer)) != sizeof(peer) ||
        write(p2c[1], &me, sizeof(me)) != sizeof(me))
        die("pipe");
    verbs_connect(&t, peer.qpn, &peer.gid);
    for (size_t s = 0; s < NRDMA; s++) {
        int n = iters * (int)(RDMA_MAX / g_rdma_sizes[s]) / 16;

        n = n < 20 ? 20 : n > MAX_ITERS ? MAX_ITERS : n;
        rdma_measure(&t, false, mr, g_rdma_sizes[s], n, &peer, &rr[s]);
        rdma_measure(&t, true, mr, g_rdma_sizes[s], n, &peer, &rw[s]);
    }
    *stop = 1;
    waitpid(child, &status, 0);
    printf("bench-efasim --rdma: 2 processes, target polling, %d in flight for bandwidth, "
           "EFASIM_FASTPATH=%s\n",
           RDMA_WINDOW, getenv("EFASIM_FASTPATH") ? getenv("EFASIM_FASTPATH") : "(default)");
    printf("%9s | %22s | %22s | %18s\n", "bytes", "read lat med/p99 us", "write lat med/p99 us",
           "MB/s read / write");
    for (size_t s = 0; s < NRDMA; s++)
        printf("%9zu | %10.1f %10.1f | %10.1f %10.1f | %8.0f %8.0f\n", g_rdma_sizes[s],
               rr[s].median_us, rr[s].p99_us, rw[s].median_us, rw[s].p99_us, rr[s].mbps,
               rw[s].mbps);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

static const size_t g_reg_sizes[] = {4096, 65536, 1u << 20, 16u << 20};
#define NREG (sizeof(g_reg_sizes) / sizeof(g_reg_sizes[0]))

static int reg_main(int iters)
{
    struct ibv_device **list = ibv_get_device_list(NULL);
    struct ibv_context *ctx = list && list[0] ? ibv_open_device(list[0]) : NULL;
    struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
    double *a = malloc(sizeof(double) * (size_t)iters), *b = malloc(sizeof(double) * (size_t)iters);
    uint8_t *buf = aligned_alloc(4096, 16u << 20);

    if (!a || !b || !buf)
        die("malloc");
    memset(buf, 1, 16u << 20); /* mapped, as an application's buffer is */
    if (!pd)
        die("ibv_open_device (is efasim on LD_LIBRARY_PATH?)");
    ibv_free_device_list(list);
    printf("bench-efasim --reg: %d registrations per size, one context\n", iters);
    printf("%9s | %22s | %22s | %s\n", "bytes", "reg+dereg med/p99 us", "mlock+munlock med/p99",
           "ratio");
    for (size_t s = 0; s < NREG; s++) {
        for (int i = 0; i < iters; i++) {
            double t0 = now_us();
            struct ibv_mr *mr = ibv_reg_mr(pd, buf, g_reg_sizes[s], IBV_ACCESS_LOCAL_WRITE);

            if (!mr || ibv_dereg_mr(mr))
                die("ibv_reg_mr");
            a[i] = now_us() - t0;
            t0 = now_us();
            if (mlock(buf, g_reg_sizes[s]) || munlock(buf, g_reg_sizes[s]))
                die("mlock (ulimit -l?)");
            b[i] = now_us() - t0;
        }
        qsort(a, (size_t)iters, sizeof(double), cmp_double);
        qsort(b, (size_t)iters, sizeof(double), cmp_double);
        printf("%9zu | %10.2f %10.2f | %10.2f %10.2f | %5.2fx\n", g_reg_sizes[s], a[iters / 2],
               a[iters * 99 / 100], b[iters / 2], b[iters * 99 / 100], a[iters / 2] / b[iters / 2]);
    }
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    free(a);
    free(b);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    bool rdma = argc > 1 && !strcmp(argv[1], "--rdma");
    bool reg = argc > 1 && !strcmp(argv[1], "--reg");
    struct result rv[NSIZES], ru[NSIZES];
    int p2c[2], c2p[2], status;
    pid_t child;
    int iters;

    if (rdma || reg) {
        argc--;
        argv++;
    }
    iters = argc > 1 ? atoi(argv[1]) : rdma ? 200 : 20000;

    if (iters < (rdma ? 20 : 100) || iters > MAX_ITERS) {
        fprintf(stderr,
                "usage: bench-efasim [--rdma | --reg] [iterations, 100..%d; 20.. with --rdma]\n",
                MAX_ITERS);
        return 2;
    }
    if (rdma)
        return rdma_main(iters);
    if (reg)
        return reg_main(iters);
    if (pipe(p2c) || pipe(c2p))
        die("pipe");
    child = fork();
    if (child < 0)
        die("fork");
    if (child == 0) {
        run_side(false, c2p[1], p2c[0], iters, rv, ru);
        _exit(0);
    }
    run_side(true, p2c[1], c2p[0], iters, rv, ru);
    waitpid(child, &status, 0);

    printf("bench-efasim: 2 processes, %d ping-pongs and %d streamed messages per size\n", iters,
           iters * 4);
    printf("%6s | %22s | %22s | %18s | %s\n", "bytes", "efasim lat med/p99 us",
           "udp lat med/p99 us", "MB/s efasim / udp", "ratio lat  bw");
    for (size_t s = 0; s < NSIZES; s++)
        printf("%6zu | %10.2f %10.2f | %10.2f %10.2f | %8.1f %8.1f | %8.2fx %5.2fx\n", g_sizes[s],
               rv[s].median_us, rv[s].p99_us, ru[s].median_us, ru[s].p99_us, rv[s].mbps, ru[s].mbps,
               rv[s].median_us / ru[s].median_us, rv[s].mbps / ru[s].mbps);
    printf("targets: small-message latency ratio <= 1.5x, large-message bandwidth ratio >= 0.8x\n");
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
