/*
 * The fault injector under heavy use and SRD's loss recovery.
 *
 * Heavy faults with long runs: 10% loss, 10% duplication, 20% reordering and
 * datagrams held back longer than the retransmission timeout, while the
 * application polls only now and then, so efasim's service thread does most
 * of the retransmitting (and the fault injector's delay queue fills). Every
 * work request must complete successfully and every message arrive once,
 * intact. A peer that answers is never declared unresponsive, however often
 * one datagram is lost; one that stops answering (its process is gone) fails
 * the WRs to it after EFASIM_TIMEOUT_MS of silence with EFA's vendor error 13
 * ("unresponsive remote", it answered before: IBV_WC_RESP_TIMEOUT_ERR) or 15
 * ("unreachable remote", it never did: IBV_WC_GENERAL_ERR in rdma-core 44).
 * A peer that exits right after receiving leaves no sender waiting: its
 * answers outlive its QP.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "efasim_common.h"

#define READ_TAG (1ull << 40) /* wr_id of an RDMA read: this bit and its length */

static void heavy_faults(const char *delay, const char *delay_us)
{
    efasim_setenv("EFASIM_LOSS", "0.1");
    efasim_setenv("EFASIM_DUP", "0.1");
    efasim_setenv("EFASIM_REORDER", "0.2");
    efasim_setenv("EFASIM_DELAY", delay);
    efasim_setenv("EFASIM_DELAY_US", delay_us);
}

/*
 * Sends of every size up to the MTU and RDMA reads of up to 256 KiB between
 * two QPs, WINDOW of each in flight, through heavy faults; the application
 * sleeps between polls so the service thread retransmits and serves reads.
 */
static void stress(unsigned nmsg, unsigned sleep_every)
{
    enum { WINDOW = 32, RECVS = 64, READ_MAX = 256 << 10 };
    struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    struct efasim_buf sbuf, rbuf, region, local;
    unsigned sent = 0, nsend_done = 0, nrecv = 0, reads = 0, reads_done = 0, polls = 0;
    unsigned free_slots[WINDOW], nfree = WINDOW;
    uint8_t *seen = calloc(nmsg, 1);
    struct efasim_pair p;
    struct efasim_wc wc;
    double deadline;

    EXPECT_TRUE(seen != NULL);
    opts.max_send_wr = 2 * WINDOW;
    opts.max_recv_wr = RECVS;
    efasim_pair_open(&p, &opts, &opts);
    efasim_buf_alloc(&p.dev, (size_t)WINDOW * p.dev.mtu, EFASIM_ACCESS_ALL, &sbuf);
    efasim_buf_alloc(&p.dev, (size_t)RECVS * p.dev.mtu, EFASIM_ACCESS_ALL, &rbuf);
    efasim_buf_alloc(&p.dev, READ_MAX, EFASIM_ACCESS_ALL, &region);
    efasim_buf_alloc(&p.dev, READ_MAX, EFASIM_ACCESS_ALL, &local);
    efasim_fill(region.addr, READ_MAX, 0x5eed);
    for (unsigned i = 0; i < RECVS; i++)
        efasim_post_recv(&p.rx, i, &rbuf, (size_t)i * p.dev.mtu, p.dev.mtu);
    for (unsigned i = 0; i < WINDOW; i++)
        free_slots[i] = i;

    deadline = efasim_now() + 100;
    while (nrecv < nmsg || nsend_done < nmsg || reads_done < reads) {
        if (efasim_now() > deadline)
            efarm_test_fail(__FILE__, __LINE__,
                            "stuck: %u/%u received, %u/%u sends and %u/%u reads completed", nrecv,
                            nmsg, nsend_done, nmsg, reads_done, reads);
        while (sent < nmsg && nfree) {
            unsigned slot = free_slots[--nfree];
            uint32_t len = 8 + (uint32_t)(efarm_test_rand() % (p.dev.mtu - 7));
            uint8_t *msg = sbuf.addr + (size_t)slot * p.dev.mtu;

            memcpy(msg, &sent, 4);
            memcpy(msg + 4, &len, 4);
            efasim_fill(msg + 8, len - 8, sent);
            EXPECT_EQ(
                efasim_send(&p.tx, &p.to_rx, (uint64_t)slot, &sbuf, (size_t)slot * p.dev.mtu, len),
                0);
            sent++;
            /* Every 16th message also an RDMA read of the receiver's region, one at a time. */
            if (sent % 16 == 0 && reads == reads_done) {
                size_t rlen = 1 + efarm_test_rand() % READ_MAX;

                EXPECT_EQ(efasim_rdma_read(&p.tx, &p.to_rx, READ_TAG | rlen, &local, 0, rlen,
                                           region.mr->rkey, (uintptr_t)region.addr),
                          0);
                reads++;
            }
        }
        while (efasim_poll_one(p.tx.send_cq, &wc)) {
            EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
            if (wc.wr_id & READ_TAG) {
                size_t rlen = (size_t)(wc.wr_id & ~READ_TAG);

                EXPECT_EQ(efasim_check_fill(local.addr, rlen, 0x5eed), rlen);
                reads_done++;
            } else {
                free_slots[nfree++] = (unsigned)wc.wr_id;
                nsend_done++;
            }
        }
        while (efasim_poll_one(p.rx.recv_cq, &wc)) {
            const uint8_t *msg = rbuf.addr + wc.wr_id * p.dev.mtu;
            uint32_t seq, len;

            EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
            memcpy(&seq, msg, 4);
            memcpy(&len, msg + 4, 4);
            efarm_test_context("message %u (%u bytes)", seq, len);
            EXPECT_TRUE(seq < nmsg);
            EXPECT_EQ(seen[seq], 0);
            EXPECT_EQ(wc.byte_len, len);
            EXPECT_EQ(efasim_check_fill(msg + 8, len - 8, seq), len - 8);
            seen[seq] = 1;
            nrecv++;
            efasim_post_recv(&p.rx, wc.wr_id, &rbuf, wc.wr_id * p.dev.mtu, p.dev.mtu);
        }
        /* Leave the device to its service thread now and then. */
        if (sleep_every && ++polls % sleep_every == 0)
            efasim_sleep_ms(2);
    }
    efasim_expect_no_wc(p.rx.recv_cq, 100, "a message delivered twice");
    efasim_buf_free(&sbuf);
    efasim_buf_free(&rbuf);
    efasim_buf_free(&region);
    efasim_buf_free(&local);
    efasim_pair_close(&p);
    free(seen);
}

/* Held back for longer than the RTO: retransmissions pass their originals in the delay queue. */
EFARM_TEST_TIMEOUT(efasim_faults_heavy_service_thread, 120)
{
    heavy_faults("0.2", "5000");
    stress(3000, 4);
}

#if EFASIM_ALLOC_WATCH
/*
 * The service thread never allocates, frees or maps memory (efasim_model.h, "Service
 * thread"): with every fault on and the application mostly asleep, it
 * retransmits, serves reads and releases held datagrams, and none of that may
 * call malloc, free, mmap, munmap, mremap or madvise. Not built under ASan or
 * TSan (efasim_alloc_watch.c).
 */
EFARM_TEST_TIMEOUT(efasim_service_thread_never_allocates, 120)
{
    const char *first;
    unsigned long n;

    heavy_faults("0.2", "5000");
    efasim_alloc_watch_begin();
    stress(1000, 2);
    n = efasim_alloc_watch_end(&first);
    if (n)
        efarm_test_fail(__FILE__, __LINE__,
                        "another thread (efasim's service thread) made %lu allocation or mapping "
                        "calls, the first to %s",
                        n, first);
}
#endif

/* The default delay, polled hard. */
EFARM_TEST_TIMEOUT(efasim_faults_heavy_polled, 120)
{
    heavy_faults("0.05", "1000");
    stress(3000, 0);
}

/*
 * A send buffer that goes away while its WR is still retransmitting: the
 * receiver has the message, its ACK was lost, and the application unmaps the
 * memory (after deregistering it, or not). efasim must not crash reading it
 * (the fault injector copies datagrams it holds back); the WR completes with
 * an error instead of success it cannot vouch for, or successfully when the
 * ACK of an earlier copy comes in first.
 */
static void buffer_vanishes(bool dereg)
{
    enum { N = 200, LEN = 4000 };
    struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    struct efasim_pair p;
    struct efasim_wc wc;
    unsigned ok = 0, prot = 0;

    /* Every datagram is duplicated through the delay queue; half of them, ACKs too, are lost. */
    efasim_setenv("EFASIM_LOSS", "0.5");
    efasim_setenv("EFASIM_DUP", "1");
    efasim_setenv("EFASIM_RTO_US", "500");
    opts.rnr_retry = EFASIM_RNR_RETRY_INFINITE;
    efasim_pair_open(&p, &opts, &opts);
    for (unsigned i = 0; i < N; i++) {
        struct efasim_buf b;

        efarm_test_context("message %u", i);
        efasim_buf_alloc(&p.dev, LEN, IBV_ACCESS_LOCAL_WRITE, &b);
        efasim_fill(b.addr, LEN, i);
        efasim_post_recv(&p.rx, i, &p.rbuf, 0, p.dev.mtu);
        EXPECT_EQ(efasim_send(&p.tx, &p.to_rx, i, &b, 0, LEN), 0);
        efasim_wait_wc(p.rx.recv_cq, &wc, "the receive");
        EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
        EXPECT_EQ(efasim_check_fill(p.rbuf.addr, LEN, i), LEN);
        /* Delivered; the sender's WR may still wait for its ACK. The memory goes. */
        if (dereg)
            EXPECT_EQ(ibv_dereg_mr(b.mr), 0);
        munmap(b.addr, LEN);
        efasim_wait_wc(p.tx.send_cq, &wc, "the send whose buffer went away");
        EXPECT_EQ(wc.wr_id, i);
        if (wc.status == IBV_WC_SUCCESS)
            ok++;
        else if (wc.status == IBV_WC_LOC_PROT_ERR)
            prot++;
        else
            EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
        if (!dereg)
            EXPECT_EQ(ibv_dereg_mr(b.mr), 0);
    }
    fprintf(stderr, "  note: %u sends completed, %u failed with a local protection error\n", ok,
            prot);
    efasim_pair_close(&p);
}

EFARM_TEST_TIMEOUT(efasim_faults_buffer_unmapped_in_flight, 60)
{
    buffer_vanishes(false);
}

EFARM_TEST_TIMEOUT(efasim_faults_buffer_deregistered_in_flight, 60)
{
    buffer_vanishes(true);
}

/*
 * Both QPs stream to each other at 30% loss with a 400 ms timeout: every WR
 * completes. (With the retransmission backoff capped at a 32nd of the
 * timeout, a peer is found silent only after 32 unanswered copies.)
 */
EFARM_TEST_TIMEOUT(efasim_faults_live_peer_never_unresponsive, 120)
{
    enum { N = 2000, WINDOW = 32, RECVS = 64 };
    struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    struct efasim_buf sbuf[2], rbuf[2];
    unsigned sent[2] = {0}, done[2] = {0}, got[2] = {0};
    struct efasim_qp *qp[2];
    struct efasim_dest to[2];
    struct efasim_pair p;
    struct efasim_wc wc;
    double deadline;

    efasim_setenv("EFASIM_LOSS", "0.3");
    efasim_setenv("EFASIM_TIMEOUT_MS", "400");
    opts.max_send_wr = WINDOW;
    opts.max_recv_wr = RECVS;
    efasim_pair_open(&p, &opts, &opts);
    qp[0] = &p.tx;
    qp[1] = &p.rx;
    to[0] = p.to_rx;
    efasim_dest_to(&p.dev, &p.tx, &to[1]);
    for (int s = 0; s < 2; s++) {
        efasim_buf_alloc(&p.dev, 256, EFASIM_ACCESS_ALL, &sbuf[s]);
        efasim_buf_alloc(&p.dev, (size_t)RECVS * 256, EFASIM_ACCESS_ALL, &rbuf[s]);
        for (unsigned i = 0; i < RECVS; i++)
            efasim_post_recv(qp[s], i, &rbuf[s], (size_t)i * 256, 256);
    }
    deadline = efasim_now() + 100;
    while (done[0] < N || done[1] < N || got[0] < N || got[1] < N) {
        if (efasim_now() > deadline)
            efarm_test_fail(__FILE__, __LINE__, "stuck: sends %u/%u, receives %u/%u", done[0],
                            done[1], got[0], got[1]);
        for (int s = 0; s < 2; s++) {
            while (sent[s] < N && sent[s] - done[s] < WINDOW) {
                EXPECT_EQ(efasim_send(qp[s], &to[s], sent[s], &sbuf[s], 0, 64), 0);
                sent[s]++;
            }
            while (efasim_poll_one(qp[s]->send_cq, &wc)) {
                efarm_test_context("side %d, send %" PRIu64, s, wc.wr_id);
                EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
                done[s]++;
            }
            while (efasim_poll_one(qp[s]->recv_cq, &wc)) {
                EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
                got[s]++;
                efasim_post_recv(qp[s], wc.wr_id, &rbuf[s], wc.wr_id * 256, 256);
            }
        }
    }
    for (int s = 0; s < 2; s++) {
        efasim_buf_free(&sbuf[s]);
        efasim_buf_free(&rbuf[s]);
    }
    EXPECT_EQ(ibv_destroy_ah(to[1].ah), 0);
    efasim_pair_close(&p);
}

/* What the child of a two-process test tells its parent. */
struct peer_addr {
    uint8_t gid[16];
    uint32_t qpn;
};

/*
 * The child: one QP with receives posted, its address to the parent, then it
 * takes what comes until the parent kills it (SIGKILL: no destroy, no
 * goodbye), or, with `exit_after`, destroys its QP and exits once it has that
 * many messages.
 */
static _Noreturn void child_receiver(int wfd, pid_t parent, unsigned exit_after)
{
    struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    struct peer_addr me;
    struct efasim_dev dev;
    struct efasim_qp qp;
    struct efasim_buf rbuf;
    struct efasim_wc wc;
    unsigned got = 0;

    if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
        _exit(3);
    efasim_dev_open(0, &dev);
    efasim_qp_open(&dev, &opts, &qp);
    efasim_buf_alloc(&dev, 64 * 256, IBV_ACCESS_LOCAL_WRITE, &rbuf);
    for (unsigned i = 0; i < 64; i++)
        efasim_post_recv(&qp, i, &rbuf, (size_t)i * 256, 256);
    memset(&me, 0, sizeof(me));
    memcpy(me.gid, dev.gid.raw, 16);
    me.qpn = qp.qpn;
    efarm_test_pipe_write(wfd, &me, sizeof(me));
    for (;;) {
        efasim_wait_wc_for(qp.recv_cq, &wc, 1e6, "a message from the parent");
        efasim_post_recv(&qp, wc.wr_id, &rbuf, wc.wr_id * 256, 256);
        if (exit_after && ++got == exit_after) {
            efasim_qp_close(&qp); /* destroy at once: the answers must outlive the QP */
            _exit(0);
        }
    }
}

/*
 * Forks the receiver before this process touches verbs (a forked child must
 * not inherit efasim's threads), then opens dev and the QP, and makes `to`
 * address the child.
 */
static pid_t fork_receiver(struct efasim_dest *to, struct efasim_dev *dev, struct efasim_qp *qp,
                           unsigned exit_after)
{
    struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    pid_t parent = getpid(), child;
    struct peer_addr peer;
    union ibv_gid gid;
    int fds[2];

    EXPECT_EQ(pipe(fds), 0);
    fflush(NULL);
    child = fork();
    EXPECT_TRUE(child >= 0);
    if (!child) {
        close(fds[0]);
        child_receiver(fds[1], parent, exit_after);
    }
    close(fds[1]);
    efarm_test_pipe_read(fds[0], &peer, sizeof(peer), "the child's address");
    close(fds[0]);
    efasim_dev_open(0, dev);
    efasim_qp_open(dev, &opts, qp);
    memcpy(gid.raw, peer.gid, 16);
    to->ah = efasim_ah_create(dev, &gid);
    to->qpn = peer.qpn;
    to->qkey = EFASIM_TEST_QKEY;
    return child;
}

/*
 * A killed peer: after EFASIM_TIMEOUT_MS of silence the WRs to it fail with
 * IBV_WC_RESP_TIMEOUT_ERR, vendor error 13 (it answered before), not earlier.
 */
EFARM_TEST_TIMEOUT(efasim_faults_killed_peer_unresponsive, 60)
{
    const unsigned timeout_ms = 700;
    struct efasim_dev dev;
    struct efasim_qp qp;
    struct efasim_buf sbuf;
    struct efasim_dest to;
    struct efasim_wc wc;
    double t0, waited;
    pid_t child;
    int status;

    efasim_setenv("EFASIM_TIMEOUT_MS", "700");
    child = fork_receiver(&to, &dev, &qp, 0);
    efasim_buf_alloc(&dev, 256, IBV_ACCESS_LOCAL_WRITE, &sbuf);
    for (unsigned i = 0; i < 10; i++) {
        EXPECT_EQ(efasim_send(&qp, &to, i, &sbuf, 0, 64), 0);
        efasim_wait_wc(qp.send_cq, &wc, "a send to the live child");
        EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    }
    EXPECT_EQ(kill(child, SIGKILL), 0);
    EXPECT_EQ(waitpid(child, &status, 0), child);
    t0 = efasim_now();
    EXPECT_EQ(efasim_send(&qp, &to, 100, &sbuf, 0, 64), 0);
    efasim_wait_wc_for(qp.send_cq, &wc, 10.0, "the send to the killed child");
    waited = efasim_now() - t0;
    EXPECT_WC_STATUS(&wc, IBV_WC_RESP_TIMEOUT_ERR);
    EXPECT_EQ(wc.vendor_err, 13); /* EFA_IO_COMP_STATUS_LOCAL_ERROR_UNRESP_REMOTE */
    fprintf(stderr, "  note: the killed peer's WR failed after %.0f ms (EFASIM_TIMEOUT_MS %u)\n",
            waited * 1e3, timeout_ms);
    if (waited < timeout_ms * 0.9e-3 || waited > timeout_ms * 1e-3 + 1.0)
        efarm_test_fail(__FILE__, __LINE__, "failed after %.3f s, expected about %.3f s", waited,
                        timeout_ms * 1e-3);
    EXPECT_EQ(ibv_destroy_ah(to.ah), 0);
    efasim_buf_free(&sbuf);
    efasim_qp_close(&qp);
    efasim_dev_close(&dev);
}

/*
 * Nobody ever answered: vendor error 15 (unreachable remote), after the same
 * silence, which rdma-core 44 reports as IBV_WC_GENERAL_ERR (v55 and later:
 * IBV_WC_RESP_TIMEOUT_ERR).
 */
EFARM_TEST(efasim_faults_never_heard_unreachable)
{
    struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    struct efasim_dest to;
    struct efasim_dev dev;
    struct efasim_qp qp;
    struct efasim_buf sbuf;
    struct efasim_wc wc;
    uint32_t qpn;
    double t0;
    int fd;

    efasim_setenv("EFASIM_TIMEOUT_MS", "300");
    qpn = efarm_test_free_qpns(1);
    fd = efarm_test_udp_bind(efarm_test_qpn_port(qpn), NULL); /* a QP number nobody answers on */
    EXPECT_TRUE(fd >= 0);
    efasim_dev_open(0, &dev);
    efasim_qp_open(&dev, &opts, &qp);
    efasim_buf_alloc(&dev, 256, IBV_ACCESS_LOCAL_WRITE, &sbuf);
    to.ah = efasim_ah_create(&dev, &dev.gid);
    to.qpn = qpn;
    to.qkey = EFASIM_TEST_QKEY;
    t0 = efasim_now();
    EXPECT_EQ(efasim_send(&qp, &to, 1, &sbuf, 0, 64), 0);
    efasim_wait_wc_for(qp.send_cq, &wc, 10.0, "the send nobody answers");
    EXPECT_WC_STATUS(&wc, EFASIM_WC_UNREACHABLE);
    /* EFA_IO_COMP_STATUS_LOCAL_ERROR_UNREACH_REMOTE */
    EXPECT_EQ(wc.vendor_err, EFASIM_VENDOR_UNREACHABLE);
    EXPECT_TRUE(efasim_now() - t0 >= 0.27);
    close(fd);
    EXPECT_EQ(ibv_destroy_ah(to.ah), 0);
    efasim_buf_free(&sbuf);
    efasim_qp_close(&qp);
    efasim_dev_close(&dev);
}

/*
 * A receiver that exits the moment it has its last message, under heavy
 * loss: the sender's WRs all complete successfully, because the departing QP
 * answered everything it had (on EFA the NIC would keep acknowledging).
 */
EFARM_TEST_TIMEOUT(efasim_faults_peer_exits_after_delivery, 60)
{
    enum { N = 300 };
    struct efasim_dev dev;
    struct efasim_qp qp;
    struct efasim_buf sbuf;
    struct efasim_dest to;
    struct efasim_wc wc;
    unsigned sent = 0, done = 0;
    pid_t child;
    int status;

    efasim_setenv("EFASIM_LOSS", "0.4");
    efasim_setenv("EFASIM_DUP", "0.1");
    efasim_setenv("EFASIM_REORDER", "0.2");
    efasim_setenv("EFASIM_TIMEOUT_MS", "1000");
    child = fork_receiver(&to, &dev, &qp, N);
    efasim_buf_alloc(&dev, 256, IBV_ACCESS_LOCAL_WRITE, &sbuf);
    while (done < N) {
        while (sent < N && sent - done < 32) {
            EXPECT_EQ(efasim_send(&qp, &to, sent, &sbuf, 0, 64), 0);
            sent++;
        }
        efasim_wait_wc_for(qp.send_cq, &wc, 30.0, "a send to the receiver that exits");
        efarm_test_context("send %" PRIu64 " of %d", wc.wr_id, N);
        EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
        done++;
    }
    EXPECT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    EXPECT_EQ(ibv_destroy_ah(to.ah), 0);
    efasim_buf_free(&sbuf);
    efasim_qp_close(&qp);
    efasim_dev_close(&dev);
}

/*
 * The process (so the emulated NIC) is stopped for longer than the timeout
 * with WRs in flight: nobody could answer or listen meanwhile, and no WR may
 * fail for that silence once it runs again.
 */
EFARM_TEST_TIMEOUT(efasim_faults_stopped_process_not_unresponsive, 60)
{
    enum { N = 64 };
    struct efasim_pair p;
    struct efasim_wc wc;
    pid_t self = getpid(), waker;
    int status;

    efasim_setenv("EFASIM_TIMEOUT_MS", "300");
    fflush(NULL);
    waker = fork(); /* before any verbs call: it only wakes this process up */
    EXPECT_TRUE(waker >= 0);
    if (!waker) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (;;) {
            efasim_sleep_ms(1000);
            kill(self, SIGCONT);
        }
    }
    efasim_pair_open(&p, NULL, NULL);
    for (unsigned i = 0; i < N; i++)
        efasim_post_recv(&p.rx, i, &p.rbuf, 0, p.dev.mtu);
    for (unsigned i = 0; i < N; i++)
        EXPECT_EQ(efasim_send(&p.tx, &p.to_rx, i, &p.sbuf, 0, 64), 0);
    kill(self, SIGSTOP); /* until the waker's next SIGCONT, up to a second */
    for (unsigned i = 0; i < N; i++) {
        efasim_wait_wc(p.tx.send_cq, &wc, "a send in flight while the process was stopped");
        EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    }
    kill(waker, SIGKILL);
    EXPECT_EQ(waitpid(waker, &status, 0), waker);
    efasim_pair_close(&p);
}

/*
 * A live peer that does not take one datagram for longer than the timeout
 * (its receive CQ is full and nobody polls it) while it keeps sending: the WR
 * waits and completes once the receiver makes room. Timing each datagram out
 * on its own age failed it after EFASIM_TIMEOUT_MS with vendor error 13.
 */
EFARM_TEST_TIMEOUT(efasim_faults_live_peer_one_datagram_waits, 60)
{
    struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    struct efasim_pair p;
    struct efasim_dest to_tx;
    struct efasim_wc wc;
    unsigned got = 0, done = 0;
    double until;

    efasim_drop_in_only(CQ_ROOM_DROP_IN_ONLY);
    efasim_setenv("EFASIM_TIMEOUT_MS", "300");
    opts.cqe = 4; /* the receiver's CQ holds 4 completions */
    efasim_pair_open(&p, NULL, &opts);
    efasim_dest_to(&p.dev, &p.tx, &to_tx);
    for (unsigned i = 0; i < 8; i++) {
        efasim_post_recv(&p.rx, i, &p.rbuf, 0, p.dev.mtu);
        efasim_post_recv(&p.tx, 100 + i, &p.rbuf, p.dev.mtu, p.dev.mtu);
    }
    for (unsigned i = 0; i < 6; i++) /* the 5th and 6th find the receiver's CQ full */
        EXPECT_EQ(efasim_send(&p.tx, &p.to_rx, i, &p.sbuf, 0, 16), 0);
    /* For a second the receiver polls nothing but keeps sending to the sender. */
    until = efasim_now() + 1.0;
    while (efasim_now() < until) {
        EXPECT_EQ(efasim_send(&p.rx, &to_tx, 1000 + got, &p.sbuf, 0, 8), 0);
        efasim_wait_wc(p.rx.send_cq, &wc, "the receiver's own send");
        EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
        efasim_wait_wc(p.tx.recv_cq, &wc, "the receiver's message at the sender");
        efasim_post_recv(&p.tx, wc.wr_id, &p.rbuf, p.dev.mtu, p.dev.mtu);
        got++;
        while (efasim_poll_one(p.tx.send_cq, &wc)) {
            EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
            done++;
        }
        efasim_sleep_ms(20);
    }
    EXPECT_EQ(done, 4); /* two are still waiting for room */
    for (unsigned n = 0; n < 6; n++) {
        efasim_wait_wc(p.rx.recv_cq, &wc, "a message at the receiver");
        EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    }
    while (done < 6) {
        efasim_wait_wc(p.tx.send_cq, &wc, "a send that waited for room");
        efarm_test_context("send %" PRIu64, wc.wr_id);
        EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
        done++;
    }
    EXPECT_EQ(ibv_destroy_ah(to_tx.ah), 0);
    efasim_pair_close(&p);
}

/*
 * EFASIM_JITTER: a delayed datagram is held a random time up to
 * EFASIM_DELAY_US instead of exactly that. Every datagram is delayed by up to
 * 30 ms and retransmission waits longer than that, one send at a time: a send
 * completes after its datagram's and its ACK's holds. Without jitter none can
 * complete in under 30 ms; with it about half do (two holds summing under
 * 30 ms), so at least one of 30 must (missing that by chance: 2^-30).
 */
static void jitter_run(unsigned *fast, unsigned *n)
{
    struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    struct efasim_buf sbuf, rbuf;
    struct efasim_pair p;
    struct efasim_wc wc;

    efasim_setenv("EFASIM_DELAY", "1");
    efasim_setenv("EFASIM_DELAY_US", "30000");
    efasim_setenv("EFASIM_TIMEOUT_MS", "20000");
    efasim_setenv("EFASIM_RTO_US", "300000");
    efasim_setenv("EFASIM_RTO_MAX_US", "600000");
    efasim_pair_open(&p, &opts, &opts);
    efasim_buf_alloc(&p.dev, 64, EFASIM_ACCESS_ALL, &sbuf);
    efasim_buf_alloc(&p.dev, 64, EFASIM_ACCESS_ALL, &rbuf);
    *fast = 0;
    *n = 30;
    for (unsigned i = 0; i < *n; i++) {
        double t0, deadline;
        bool sent = false, got = false;

        efasim_post_recv(&p.rx, i, &rbuf, 0, 64);
        t0 = efasim_now();
        deadline = t0 + 5;
        EXPECT_EQ(efasim_send(&p.tx, &p.to_rx, i, &sbuf, 0, 64), 0);
        while (!sent || !got) {
            EXPECT_TRUE(efasim_now() < deadline);
            if (efasim_poll_one(p.tx.send_cq, &wc)) {
                EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
                if (efasim_now() - t0 < 0.030)
                    (*fast)++;
                sent = true;
            }
            if (efasim_poll_one(p.rx.recv_cq, &wc)) {
                EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
                got = true;
            }
        }
    }
    efasim_buf_free(&sbuf);
    efasim_buf_free(&rbuf);
    efasim_pair_close(&p);
}

EFARM_TEST_TIMEOUT(efasim_faults_jitter_varies_hold, 60)
{
    unsigned fast, n;

    efasim_setenv("EFASIM_JITTER", "1");
    jitter_run(&fast, &n);
    efarm_test_context("%u of %u sends completed in under 30 ms", fast, n);
    EXPECT_TRUE(fast > 0);
}

EFARM_TEST_TIMEOUT(efasim_faults_fixed_delay_holds_all, 60)
{
    unsigned fast, n;

    jitter_run(&fast, &n);
    efarm_test_context("%u of %u sends completed in under 30 ms", fast, n);
    EXPECT_EQ(fast, 0);
}

/* Heavy faults with jittered delays: every message arrives once, intact. */
EFARM_TEST_TIMEOUT(efasim_faults_heavy_jitter, 120)
{
    heavy_faults("0.3", "3000");
    efasim_setenv("EFASIM_JITTER", "1");
    stress(3000, 4);
}
