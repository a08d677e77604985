/*
 * SRD semantics: RNR retry, the source address of a receive (AH number or
 * GID), unordered delivery, exactly-once delivery under injected loss,
 * duplication and reordering, many QPs on several devices, and each device's
 * traffic counters.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "efasim_common.h"

/* No receive posted and rnr_retry 1: RNR_RETRY_EXC_ERR, and the QP keeps working. */
EFARM_TEST(efasim_rnr_retry_exceeded)
{
    struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    struct efasim_pair p;
    struct efasim_wc wc;

    opts.rnr_retry = 1;
    efasim_pair_open(&p, &opts, NULL);
    EXPECT_EQ(efasim_send(&p.tx, &p.to_rx, 1, &p.sbuf, 0, 64), 0);
    efasim_wait_wc(p.tx.send_cq, &wc, "the send to a QP without receives");
    EXPECT_WC_STATUS(&wc, IBV_WC_RNR_RETRY_EXC_ERR);
    EXPECT_EQ(wc.wr_id, 1);
    EXPECT_EQ(wc.vendor_err, EFASIM_VENDOR_RNR);
    efasim_expect_no_wc(p.rx.recv_cq, 10, "the receiver without receives");

    efarm_test_context("send after the RNR error, with a receive posted");
    efasim_pair_roundtrip(&p, 64, EFASIM_API_WR);
    efasim_pair_close(&p);
}

/* rnr_retry 7 retries forever: the send completes once the receive is posted. */
EFARM_TEST(efasim_rnr_retry_infinite)
{
    struct efasim_pair p;
    struct efasim_wc wc;

    efasim_pair_open(&p, NULL, NULL);
    efasim_fill(p.sbuf.addr, 500, 3);
    EXPECT_EQ(efasim_send(&p.tx, &p.to_rx, 2, &p.sbuf, 0, 500), 0);
    efasim_expect_no_wc(p.tx.send_cq, 250, "the send before any receive is posted");
    efasim_post_recv(&p.rx, 3, &p.rbuf, 0, p.dev.mtu);
    efasim_wait_wc(p.rx.recv_cq, &wc, "the late receive");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.wr_id, 3);
    EXPECT_EQ(wc.byte_len, 500);
    EXPECT_EQ(efasim_check_fill(p.rbuf.addr, 500, 3), 500);
    efasim_wait_wc(p.tx.send_cq, &wc, "the send after the receive was posted");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.wr_id, 2);
    efasim_pair_close(&p);
}

static void send_and_receive(struct efasim_qp *tx, const struct efasim_dest *to,
                             struct efasim_qp *rx, struct efasim_buf *sbuf, struct efasim_buf *rbuf,
                             struct efasim_wc *wc)
{
    struct efasim_wc swc;

    efasim_post_recv(rx, 5, rbuf, 0, 4096);
    EXPECT_EQ(efasim_send(tx, to, 6, sbuf, 0, 32), 0);
    efasim_wait_wc(rx->recv_cq, wc, "the receive");
    EXPECT_WC_STATUS(wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc->src_qp, tx->qpn);
    efasim_wait_wc(tx->send_cq, &swc, "the send");
    EXPECT_WC_STATUS(&swc, IBV_WC_SUCCESS);
}

/* A sender QP on efasim_0 and a receiver QP on efasim_1 (of ndev devices), with buffers. */
struct two_devs {
    struct efasim_dev dev[2];
    struct efasim_qp tx, rx;
    struct efasim_buf sbuf, rbuf;
    struct efasim_dest to_rx;
};

static void two_devs_open(struct two_devs *t, const char *ndev)
{
    const struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;

    efasim_setenv("EFASIM_NDEV", ndev);
    efasim_dev_open(0, &t->dev[0]);
    efasim_dev_open(1, &t->dev[1]);
    efasim_qp_open(&t->dev[0], &opts, &t->tx);
    efasim_qp_open(&t->dev[1], &opts, &t->rx);
    efasim_buf_alloc(&t->dev[0], 4096, EFASIM_ACCESS_ALL, &t->sbuf);
    efasim_buf_alloc(&t->dev[1], 4096, EFASIM_ACCESS_ALL, &t->rbuf);
    efasim_dest_to(&t->dev[0], &t->rx, &t->to_rx);
}

static void two_devs_close(struct two_devs *t)
{
    EXPECT_EQ(ibv_destroy_ah(t->to_rx.ah), 0);
    efasim_buf_free(&t->sbuf);
    efasim_buf_free(&t->rbuf);
    efasim_qp_close(&t->tx);
    efasim_qp_close(&t->rx);
    efasim_dev_close(&t->dev[0]);
    efasim_dev_close(&t->dev[1]);
}

/* A receiver without an AH for the sender sees slid 0xFFFF and the sender's GID; with one, its ahn.
 */
EFARM_TEST(efasim_recv_ahn_and_sgid)
{
    struct two_devs t;
    struct efasim_wc wc;
    struct ibv_ah *back;
    uint16_t ahn;
    char g1[64], g2[64];

    two_devs_open(&t, "2");
    EXPECT_TRUE(memcmp(t.dev[0].gid.raw, t.dev[1].gid.raw, 16) != 0);

    efarm_test_context("receiver without an AH for the sender");
    send_and_receive(&t.tx, &t.to_rx, &t.rx, &t.sbuf, &t.rbuf, &wc);
    EXPECT_EQ(wc.slid, EFASIM_AHN_NONE);
    EXPECT_EQ(wc.sgid_ret, 0);
    if (memcmp(wc.sgid.raw, t.dev[0].gid.raw, 16))
        efarm_test_fail(__FILE__, __LINE__, "sgid %s, expected the sender's %s",
                        efasim_gid_str(&wc.sgid, g1), efasim_gid_str(&t.dev[0].gid, g2));

    efarm_test_context("receiver with an AH for the sender");
    back = efasim_ah_create(&t.dev[1], &t.dev[0].gid);
    ahn = efasim_ahn(back);
    EXPECT_TRUE(ahn != EFASIM_AHN_NONE);
    send_and_receive(&t.tx, &t.to_rx, &t.rx, &t.sbuf, &t.rbuf, &wc);
    EXPECT_EQ(wc.slid, ahn);
    EXPECT_EQ(wc.sgid_ret, -ENOENT);

    EXPECT_EQ(ibv_destroy_ah(back), 0);
    two_devs_close(&t);
}

/* efasim's per-device traffic counters (efasim-info --counters), found at run time. */
struct hw_counters {
    uint64_t tx_pkts, tx_bytes, rx_pkts, rx_bytes, fast_ops, fast_bytes;
};

static void hw_counters_read(const char *name, struct hw_counters *c)
{
    int (*read_fn)(const char *, struct hw_counters *) =
        (int (*)(const char *, struct hw_counters *))dlsym(RTLD_DEFAULT, "efasim_hw_counters_read");

    memset(c, 0, sizeof(*c));
    EXPECT_TRUE(read_fn != NULL);
    if (read_fn)
        EXPECT_EQ(read_fn(name, c), 0);
}

/*
 * Each device counts the datagrams it sends and receives, whoever opened it:
 * 20 sends of 32 bytes from efasim_0 to efasim_1 show as at least 20
 * datagrams and 640 payload bytes out of the one and into the other (ACKs add
 * some), and nothing on efasim_2, which no QP uses.
 */
EFARM_TEST(efasim_hw_counters_per_device)
{
    struct hw_counters before[3], after[3];
    static const char *const names[3] = {"efasim_0", "efasim_1", "efasim_2"};
    struct two_devs t;
    struct efasim_wc wc;

    efasim_private_sysfs(); /* other efasim users on the host add to the shared counters */
    two_devs_open(&t, "3");
    for (int d = 0; d < 3; d++)
        hw_counters_read(names[d], &before[d]);
    for (int i = 0; i < 20; i++)
        send_and_receive(&t.tx, &t.to_rx, &t.rx, &t.sbuf, &t.rbuf, &wc);
    for (int d = 0; d < 3; d++)
        hw_counters_read(names[d], &after[d]);
    EXPECT_TRUE(after[0].tx_pkts - before[0].tx_pkts >= 20);
    EXPECT_TRUE(after[0].tx_bytes - before[0].tx_bytes >= 20 * 32);
    EXPECT_TRUE(after[1].rx_pkts - before[1].rx_pkts >= 20);
    EXPECT_TRUE(after[1].rx_bytes - before[1].rx_bytes >= 20 * 32);
    /* What efasim_1 sent (ACKs) efasim_0 received, byte for byte: no loss on loopback. */
    EXPECT_EQ(after[1].tx_pkts - before[1].tx_pkts, after[0].rx_pkts - before[0].rx_pkts);
    EXPECT_EQ(after[2].tx_pkts, before[2].tx_pkts);
    EXPECT_EQ(after[2].rx_pkts, before[2].rx_pkts);
    two_devs_close(&t);
}

static void set_fault_seed(void)
{
    char seed[32];

    snprintf(seed, sizeof(seed), "%" PRIu64, efarm_test_rand() % 1000000);
    efasim_setenv("EFASIM_SEED", seed);
    efarm_test_context("EFASIM_SEED=%s", seed);
}

/* EFASIM_REORDER makes SRD's unordered delivery visible; nothing is lost or repeated. */
EFARM_TEST(efasim_reorder_observed)
{
    enum { N = 200 };
    struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    uint32_t order[N];
    uint8_t seen[N] = {0};
    unsigned nrx = 0, ntx = 0, inversions = 0;
    struct efasim_pair p;
    struct efasim_wc wc;
    double deadline;

    set_fault_seed();
    efasim_setenv("EFASIM_REORDER", "0.3");
    opts.max_send_wr = opts.max_recv_wr = N;
    efasim_pair_open(&p, &opts, &opts);
    for (uint32_t i = 0; i < N; i++)
        efasim_post_recv(&p.rx, i, &p.rbuf, (size_t)i * 16, 16);
    for (uint32_t i = 0; i < N; i++) {
        memcpy(p.sbuf.addr + (size_t)i * 8, &i, 4);
        memset(p.sbuf.addr + (size_t)i * 8 + 4, (int)(i & 0xff), 4);
        EXPECT_EQ(efasim_send(&p.tx, &p.to_rx, i, &p.sbuf, (size_t)i * 8, 8), 0);
    }
    deadline = efasim_now() + 15;
    while (nrx < N || ntx < N) {
        if (efasim_now() > deadline)
            efarm_test_fail(__FILE__, __LINE__, "%u of %d receives, %u of %d sends completed", nrx,
                            N, ntx, N);
        if (efasim_poll_one(p.tx.send_cq, &wc)) {
            EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
            ntx++;
        }
        if (efasim_poll_one(p.rx.recv_cq, &wc)) {
            uint32_t seq;
            const uint8_t *msg = p.rbuf.addr + wc.wr_id * 16;

            EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
            EXPECT_EQ(wc.byte_len, 8);
            memcpy(&seq, msg, 4);
            EXPECT_TRUE(seq < N);
            EXPECT_EQ(efasim_check_byte(msg + 4, 4, (uint8_t)(seq & 0xff)), 4);
            EXPECT_EQ(seen[seq], 0);
            seen[seq] = 1;
            order[nrx++] = seq;
        }
    }
    for (unsigned i = 1; i < N; i++)
        inversions += order[i] < order[i - 1];
    if (!inversions)
        efarm_test_fail(__FILE__, __LINE__, "%d messages arrived in order with EFASIM_REORDER=0.3",
                        N);
    efasim_expect_no_wc(p.rx.recv_cq, 100, "a message received twice");
    efasim_pair_close(&p);
}

/* Every message exactly once and intact through 10% loss, 10% duplication, 20% reordering. */
EFARM_TEST_TIMEOUT(efasim_faults_exactly_once, 60)
{
    enum { N = 2000, WINDOW = 64, RECVS = 128 };
    struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    struct efasim_buf sbuf, rbuf;
    struct efasim_pair p;
    struct efasim_wc wc;
    uint32_t *lens = calloc(N, sizeof(*lens));
    uint8_t *seen = calloc(N, 1);
    unsigned free_slots[WINDOW], nfree = WINDOW;
    unsigned next = 0, nrx = 0, ntx = 0;
    double deadline;

    EXPECT_TRUE(lens && seen);
    set_fault_seed();
    efasim_setenv("EFASIM_LOSS", "0.1");
    efasim_setenv("EFASIM_DUP", "0.1");
    efasim_setenv("EFASIM_REORDER", "0.2");
    efasim_setenv("EFASIM_DELAY", "0.05"); /* and some held back for EFASIM_DELAY_US */
    efasim_setenv("EFASIM_DELAY_US", "300");
    efasim_pair_open(&p, &opts, &opts);
    efasim_buf_alloc(&p.dev, (size_t)WINDOW * p.dev.mtu, EFASIM_ACCESS_ALL, &sbuf);
    efasim_buf_alloc(&p.dev, (size_t)RECVS * p.dev.mtu, EFASIM_ACCESS_ALL, &rbuf);
    for (unsigned i = 0; i < RECVS; i++)
        efasim_post_recv(&p.rx, i, &rbuf, (size_t)i * p.dev.mtu, p.dev.mtu);
    for (unsigned i = 0; i < WINDOW; i++)
        free_slots[i] = i;
    for (unsigned i = 0; i < N; i++)
        lens[i] = 8 + (uint32_t)(efarm_test_rand() % (p.dev.mtu - 7));

    deadline = efasim_now() + 50;
    while (nrx < N || ntx < N) {
        if (efasim_now() > deadline)
            efarm_test_fail(__FILE__, __LINE__, "%u of %d receives, %u of %d sends completed", nrx,
                            N, ntx, N);
        while (next < N && nfree) {
            unsigned slot = free_slots[--nfree];
            uint8_t *msg = sbuf.addr + (size_t)slot * p.dev.mtu;

            memcpy(msg, &next, 4);
            memcpy(msg + 4, &lens[next], 4);
            efasim_fill(msg + 8, lens[next] - 8, next);
            EXPECT_EQ(efasim_send(&p.tx, &p.to_rx, (uint64_t)next << 8 | slot, &sbuf,
                                  (size_t)slot * p.dev.mtu, lens[next]),
                      0);
            next++;
        }
        if (efasim_poll_one(p.tx.send_cq, &wc)) {
            EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
            free_slots[nfree++] = wc.wr_id & 0xff;
            ntx++;
        }
        if (efasim_poll_one(p.rx.recv_cq, &wc)) {
            const uint8_t *msg = rbuf.addr + wc.wr_id * p.dev.mtu;
            uint32_t seq, len;
            size_t bad;

            EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
            memcpy(&seq, msg, 4);
            memcpy(&len, msg + 4, 4);
            efarm_test_context("message %u (%u bytes)", seq, len);
            EXPECT_TRUE(seq < N);
            EXPECT_EQ(seen[seq], 0);
            EXPECT_EQ(len, lens[seq]);
            EXPECT_EQ(wc.byte_len, len);
            bad = efasim_check_fill(msg + 8, len - 8, seq);
            if (bad != len - 8)
                efarm_test_fail(__FILE__, __LINE__, "message %u corrupt at byte %zu", seq, bad + 8);
            seen[seq] = 1;
            nrx++;
            efasim_post_recv(&p.rx, wc.wr_id, &rbuf, wc.wr_id * p.dev.mtu, p.dev.mtu);
        }
    }
    efasim_expect_no_wc(p.rx.recv_cq, 200, "a message delivered twice");
    efasim_buf_free(&sbuf);
    efasim_buf_free(&rbuf);
    efasim_pair_close(&p);
    free(lens);
    free(seen);
}

/* 32 QPs on 4 devices, each sending one message to each of the others. */
EFARM_TEST(efasim_many_qps_all_to_all)
{
    enum { NDEV = 4, PER_DEV = 8, NQP = NDEV * PER_DEV, MSG = 64 };
    struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    struct efasim_dev dev[NDEV];
    struct efasim_buf buf[NDEV];
    struct efasim_qp qp[NQP];
    struct ibv_ah *ah[NDEV][NDEV];
    uint16_t ahn[NDEV][NDEV];
    uint8_t seen[NQP][NQP];
    unsigned nrx = 0, ntx = 0, total = NQP * (NQP - 1);
    double deadline;

    efasim_setenv("EFASIM_NDEV", "4");
    opts.max_send_wr = opts.max_recv_wr = 64;
    opts.cqe = 64;
    memset(seen, 0, sizeof(seen));
    for (int d = 0; d < NDEV; d++) {
        efasim_dev_open(d, &dev[d]);
        /* Per QP: NQP send slots, then NQP receive slots. */
        efasim_buf_alloc(&dev[d], (size_t)PER_DEV * NQP * MSG * 2, EFASIM_ACCESS_ALL, &buf[d]);
    }
    for (int d = 0; d < NDEV; d++) {
        for (int e = 0; e < NDEV; e++) {
            ah[d][e] = efasim_ah_create(&dev[d], &dev[e].gid);
            ahn[d][e] = efasim_ahn(ah[d][e]);
        }
    }
    for (int i = 0; i < NQP; i++) {
        efasim_qp_open(&dev[i / PER_DEV], &opts, &qp[i]);
        EXPECT_TRUE(qp[i].qpn <= 0xffff);
        for (int j = 0; j < i; j++)
            EXPECT_TRUE(i / PER_DEV != j / PER_DEV || qp[i].qpn != qp[j].qpn);
    }
    for (int i = 0; i < NQP; i++) {
        size_t base = (size_t)(i % PER_DEV) * NQP * MSG * 2;

        for (int s = 0; s < NQP - 1; s++)
            efasim_post_recv(&qp[i], (uint64_t)s, &buf[i / PER_DEV], base + (size_t)(NQP + s) * MSG,
                             MSG);
    }
    for (int i = 0; i < NQP; i++) {
        size_t base = (size_t)(i % PER_DEV) * NQP * MSG * 2;

        for (int j = 0; j < NQP; j++) {
            struct efasim_dest to = {ah[i / PER_DEV][j / PER_DEV], qp[j].qpn, qp[j].qkey};
            uint8_t *msg = buf[i / PER_DEV].addr + base + (size_t)j * MSG;

            if (j == i)
                continue;
            msg[0] = (uint8_t)i;
            msg[1] = (uint8_t)j;
            efasim_fill(msg + 2, MSG - 2, (uint64_t)i * NQP + j);
            EXPECT_EQ(efasim_send(&qp[i], &to, (uint64_t)j, &buf[i / PER_DEV],
                                  base + (size_t)j * MSG, MSG),
                      0);
        }
    }
    deadline = efasim_now() + 20;
    while (nrx < total || ntx < total) {
        if (efasim_now() > deadline)
            efarm_test_fail(__FILE__, __LINE__, "%u of %u receives, %u of %u sends completed", nrx,
                            total, ntx, total);
        for (int i = 0; i < NQP; i++) {
            struct efasim_wc wc;

            if (efasim_poll_one(qp[i].send_cq, &wc)) {
                EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
                ntx++;
            }
            if (efasim_poll_one(qp[i].recv_cq, &wc)) {
                size_t base = (size_t)(i % PER_DEV) * NQP * MSG * 2;
                const uint8_t *msg = buf[i / PER_DEV].addr + base + (NQP + wc.wr_id) * MSG;
                int src = msg[0];

                efarm_test_context("QP %d receiving", i);
                EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
                EXPECT_EQ(wc.byte_len, MSG);
                EXPECT_TRUE(src < NQP);
                EXPECT_EQ(msg[1], i);
                EXPECT_EQ(seen[i][src], 0);
                EXPECT_EQ(wc.src_qp, qp[src].qpn);
                EXPECT_EQ(wc.slid, ahn[i / PER_DEV][src / PER_DEV]);
                EXPECT_EQ(efasim_check_fill(msg + 2, MSG - 2, (uint64_t)src * NQP + i), MSG - 2);
                seen[i][src] = 1;
                nrx++;
            }
        }
    }
    for (int i = 0; i < NQP; i++)
        efasim_qp_close(&qp[i]);
    for (int d = 0; d < NDEV; d++) {
        for (int e = 0; e < NDEV; e++)
            EXPECT_EQ(ibv_destroy_ah(ah[d][e]), 0);
        efasim_buf_free(&buf[d]);
        efasim_dev_close(&dev[d]);
    }
}

/*
 * A receiver that takes a message and destroys its QP at once still
 * acknowledges it (a NIC has, before the host tears the QP down): the send
 * completes with success, not with a timeout. ACKs are made to wait far
 * longer than the sender's timeout, so only the destroy can send this one.
 */
EFARM_TEST(efasim_destroy_acknowledges_what_arrived)
{
    struct efasim_pair p;
    struct efasim_wc wc;

    efasim_setenv("EFASIM_ACK_DELAY_US", "10000000");
    efasim_setenv("EFASIM_TIMEOUT_MS", "1500");
    efasim_pair_open(&p, NULL, NULL);
    efasim_post_recv(&p.rx, 1, &p.rbuf, 0, 4096);
    EXPECT_EQ(efasim_send(&p.tx, &p.to_rx, 2, &p.sbuf, 0, 64), 0);
    efasim_wait_wc(p.rx.recv_cq, &wc, "the receive");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    efasim_qp_close(&p.rx);
    efasim_wait_wc_for(p.tx.send_cq, &wc, 1.0, "the send, acknowledged by the destroy");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    efasim_buf_free(&p.sbuf);
    efasim_buf_free(&p.rbuf);
    EXPECT_EQ(ibv_destroy_ah(p.to_rx.ah), 0);
    efasim_qp_close(&p.tx);
    efasim_dev_close(&p.dev);
}
