/*
 * efasim under threads (issue 42): QPs of one device context used by several
 * threads at once, as an MPI library with one endpoint per VCI uses them.
 * Independent QPs never wait for each other: a thread inside another QP's
 * posting section, or holding another CQ's poll section, does not stop a
 * round trip on its own pair. Several threads each drive their own pair,
 * and two QPs fill one small receive CQ at once, with every byte checked.
 * Under TSan (CI's efasim-tsan suite) these are the multithreaded runs.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "efasim_common.h"

/* One thread's pair on the shared device context, and what went wrong in it. */
struct mt_pair {
    struct efasim_dev *dev;
    struct efasim_qp tx, rx;
    struct efasim_dest to_rx;
    struct efasim_buf sbuf, rbuf;
    unsigned id, msgs;
    atomic_bool done;
    char err[160];
};

#define MT_DEPTH 16   /* sends and receives in flight per pair */
#define MT_SLOT  2048 /* bytes per in-flight slot */

static void mt_pair_open(struct efasim_dev *dev, struct mt_pair *p, unsigned id,
                         const struct efasim_qp_opts *rx_opts)
{
    const struct efasim_qp_opts def = EFASIM_QP_OPTS_DEFAULT;

    memset(p, 0, sizeof(*p));
    p->dev = dev;
    p->id = id;
    efasim_qp_open(dev, &def, &p->tx);
    efasim_qp_open(dev, rx_opts ? rx_opts : &def, &p->rx);
    efasim_dest_to(dev, &p->rx, &p->to_rx);
    efasim_buf_alloc(dev, (size_t)MT_DEPTH * MT_SLOT, EFASIM_ACCESS_ALL, &p->sbuf);
    efasim_buf_alloc(dev, (size_t)MT_DEPTH * MT_SLOT, EFASIM_ACCESS_ALL, &p->rbuf);
}

static void mt_pair_close(struct mt_pair *p)
{
    efasim_buf_free(&p->sbuf);
    efasim_buf_free(&p->rbuf);
    EXPECT_EQ(ibv_destroy_ah(p->to_rx.ah), 0);
    efasim_qp_close(&p->tx);
    efasim_qp_close(&p->rx);
}

/* Takes one completion without failing the test from a worker thread; false after timeout_s. */
static bool mt_wait(struct ibv_cq_ex *cq, struct efasim_wc *wc, double timeout_s)
{
    double end = efasim_now() + timeout_s;

    while (!efasim_poll_one(cq, wc))
        if (efasim_now() > end)
            return false;
    return true;
}

static size_t mt_len(unsigned id, unsigned seq)
{
    return (size_t)((seq * 131u + id * 17u) % (MT_SLOT - 8)) + 8;
}

/*
 * Sends p->msgs messages tx -> rx, MT_DEPTH at a time, each of its own length
 * and content, and checks every completion and byte. Runs in its own thread.
 */
static void *mt_pair_run(void *arg)
{
    struct mt_pair *p = arg;
    unsigned sent = 0, recvd = 0;

    for (unsigned i = 0; i < MT_DEPTH && i < p->msgs; i++)
        efasim_post_recv(&p->rx, i, &p->rbuf, (size_t)i * MT_SLOT, MT_SLOT);
    while (recvd < p->msgs) {
        unsigned burst = sent - recvd < MT_DEPTH ? MT_DEPTH - (sent - recvd) : 0;
        struct efasim_wc wc;

        for (; burst && sent < p->msgs; burst--, sent++) {
            size_t slot = (size_t)(sent % MT_DEPTH) * MT_SLOT;
            size_t len = mt_len(p->id, sent);

            efasim_fill(p->sbuf.addr + slot, len, (uint64_t)p->id << 32 | sent);
            if (efasim_send(&p->tx, &p->to_rx, sent, &p->sbuf, slot, len)) {
                snprintf(p->err, sizeof(p->err), "pair %u: send %u refused", p->id, sent);
                goto out;
            }
            if (!mt_wait(p->tx.send_cq, &wc, EFASIM_WAIT_S) || wc.status != IBV_WC_SUCCESS ||
                wc.wr_id != sent) {
                snprintf(p->err, sizeof(p->err), "pair %u: send %u did not complete well", p->id,
                         sent);
                goto out;
            }
        }
        if (!mt_wait(p->rx.recv_cq, &wc, EFASIM_WAIT_S)) {
            snprintf(p->err, sizeof(p->err), "pair %u: message %u never arrived", p->id, recvd);
            goto out;
        }
        if (wc.status != IBV_WC_SUCCESS || wc.wr_id != recvd % MT_DEPTH ||
            wc.byte_len != mt_len(p->id, recvd) ||
            efasim_check_fill(p->rbuf.addr + (size_t)(recvd % MT_DEPTH) * MT_SLOT, wc.byte_len,
                              (uint64_t)p->id << 32 | recvd) != wc.byte_len) {
            snprintf(p->err, sizeof(p->err),
                     "pair %u: message %u: status %d, wr_id %lu, %u bytes, or its data, wrong",
                     p->id, recvd, (int)wc.status, (unsigned long)wc.wr_id, wc.byte_len);
            goto out;
        }
        if (recvd + MT_DEPTH < p->msgs)
            efasim_post_recv(&p->rx, recvd % MT_DEPTH, &p->rbuf,
                             (size_t)(recvd % MT_DEPTH) * MT_SLOT, MT_SLOT);
        recvd++;
    }
out:
    atomic_store(&p->done, true);
    return NULL;
}

/* Waits up to timeout_s for the flag; false if it never rose. */
static bool mt_wait_flag(atomic_bool *flag, double timeout_s)
{
    double end = efasim_now() + timeout_s;

    while (!atomic_load(flag))
        if (efasim_now() > end)
            return false;
    return true;
}

/*
 * A thread inside QP A's posting section (between ibv_wr_start and
 * ibv_wr_complete, where EFA holds A's send-queue lock) does not stop another
 * thread's round trips on pair B of the same context. With one lock per
 * context the second thread blocked in its first ibv_wr_start.
 */
EFARM_TEST(efasim_threads_post_section_blocks_only_its_qp)
{
    struct efasim_dev dev;
    struct mt_pair a, b;
    pthread_t t;
    bool finished;

    efasim_dev_open(0, &dev);
    mt_pair_open(&dev, &a, 0, NULL);
    mt_pair_open(&dev, &b, 1, NULL);
    b.msgs = 200;
    ibv_wr_start(a.tx.qpx);
    EXPECT_EQ(pthread_create(&t, NULL, mt_pair_run, &b), 0);
    finished = mt_wait_flag(&b.done, 5.0);
    ibv_wr_abort(a.tx.qpx);
    pthread_join(t, NULL);
    if (!finished)
        efarm_test_fail(__FILE__, __LINE__,
                        "pair B's 200 round trips did not finish in 5 s while another thread "
                        "was inside QP A's posting section");
    if (b.err[0])
        efarm_test_fail(__FILE__, __LINE__, "%s", b.err);
    mt_pair_close(&a);
    mt_pair_close(&b);
    efasim_dev_close(&dev);
}

/*
 * The same with a poll section held open on pair A's receive CQ (a completion
 * taken by ibv_start_poll and not yet ended): pair B's traffic goes on, and A's
 * completion is still there, unchanged, when the section ends.
 */
EFARM_TEST(efasim_threads_poll_section_blocks_only_its_cq)
{
    struct efasim_dev dev;
    struct mt_pair a, b;
    struct ibv_poll_cq_attr attr = {0};
    struct efasim_wc wc;
    pthread_t t;
    bool finished;

    efasim_dev_open(0, &dev);
    mt_pair_open(&dev, &a, 0, NULL);
    mt_pair_open(&dev, &b, 1, NULL);
    efasim_post_recv(&a.rx, 77, &a.rbuf, 0, MT_SLOT);
    efasim_fill(a.sbuf.addr, 100, 77);
    EXPECT_EQ(efasim_send(&a.tx, &a.to_rx, 1, &a.sbuf, 0, 100), 0);
    efasim_wait_wc(a.tx.send_cq, &wc, "pair A's send");
    {
        double end = efasim_now() + EFASIM_WAIT_S;
        int rc;

        while ((rc = ibv_start_poll(a.rx.recv_cq, &attr)) == ENOENT && efasim_now() < end)
            ;
        EXPECT_EQ(rc, 0);
    }
    b.msgs = 200;
    EXPECT_EQ(pthread_create(&t, NULL, mt_pair_run, &b), 0);
    finished = mt_wait_flag(&b.done, 5.0);
    EXPECT_EQ(a.rx.recv_cq->wr_id, 77);
    ibv_end_poll(a.rx.recv_cq);
    pthread_join(t, NULL);
    if (!finished)
        efarm_test_fail(__FILE__, __LINE__,
                        "pair B's 200 round trips did not finish in 5 s while another thread "
                        "held pair A's receive CQ in a poll section");
    if (b.err[0])
        efarm_test_fail(__FILE__, __LINE__, "%s", b.err);
    EXPECT_EQ(efasim_check_fill(a.rbuf.addr, 100, 77), 100);
    mt_pair_close(&a);
    mt_pair_close(&b);
    efasim_dev_close(&dev);
}

/* Four threads, a pair each on one context, 2000 messages each of varying length. */
EFARM_TEST(efasim_threads_pairs_in_parallel)
{
    enum { N = 4 };
    struct efasim_dev dev;
    static struct mt_pair p[N];
    pthread_t t[N];

    efasim_dev_open(0, &dev);
    for (unsigned i = 0; i < N; i++) {
        mt_pair_open(&dev, &p[i], i, NULL);
        p[i].msgs = 2000;
    }
    for (unsigned i = 0; i < N; i++)
        EXPECT_EQ(pthread_create(&t[i], NULL, mt_pair_run, &p[i]), 0);
    for (unsigned i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    for (unsigned i = 0; i < N; i++)
        if (p[i].err[0])
            efarm_test_fail(__FILE__, __LINE__, "%s", p[i].err);
    for (unsigned i = 0; i < N; i++)
        mt_pair_close(&p[i]);
    efasim_dev_close(&dev);
}

/* A sender thread for the shared-CQ test: its QP, the destination, its messages. */
struct mt_sender {
    struct efasim_qp *qp;
    struct efasim_dest *to;
    struct efasim_buf *buf;
    unsigned id, msgs;
    char err[120];
};

static void *mt_sender_run(void *arg)
{
    struct mt_sender *s = arg;

    for (unsigned i = 0; i < s->msgs; i++) {
        size_t slot = (size_t)(i % MT_DEPTH) * MT_SLOT;
        struct efasim_wc wc;

        efasim_fill(s->buf->addr + slot, 64, (uint64_t)s->id << 32 | i);
        if (efasim_send(s->qp, s->to, i, s->buf, slot, 64) ||
            !mt_wait(s->qp->send_cq, &wc, EFASIM_WAIT_S) || wc.status != IBV_WC_SUCCESS) {
            snprintf(s->err, sizeof(s->err), "sender %u: send %u failed", s->id, i);
            break;
        }
    }
    return NULL;
}

/*
 * Two receive QPs share one receive CQ of 8 entries, each fed by its own
 * sender thread while the main thread polls the CQ slowly: the CQ is full again
 * and again while both QPs take datagrams. No completion may be lost or
 * doubled (a receive that took its WR must find its place in the CQ), and each
 * QP's messages arrive in order with their data.
 */
EFARM_TEST(efasim_threads_two_qps_fill_one_small_cq)
{
    enum { MSGS = 600 };
    const struct efasim_qp_opts def = EFASIM_QP_OPTS_DEFAULT;
    struct efasim_dev dev;
    struct efasim_qp tx[2], rx[2];
    struct efasim_dest to[2];
    struct efasim_buf sbuf[2], rbuf;
    struct mt_sender s[2];
    struct ibv_cq_ex *shared;
    unsigned next[2] = {0, 0};
    pthread_t t[2];

    efasim_drop_in_only(CQ_ROOM_DROP_IN_ONLY);
    efasim_dev_open(0, &dev);
    shared = efasim_cq_create(&dev, 8);
    efasim_buf_alloc(&dev, 2 * (size_t)MT_DEPTH * MT_SLOT, EFASIM_ACCESS_ALL, &rbuf);
    for (unsigned q = 0; q < 2; q++) {
        struct ibv_qp_init_attr_ex attr = {
            .qp_type = IBV_QPT_DRIVER,
            .send_cq = ibv_cq_ex_to_cq(shared),
            .recv_cq = ibv_cq_ex_to_cq(shared),
            .cap = {.max_send_wr = 16,
                    .max_recv_wr = MT_DEPTH,
                    .max_send_sge = 1,
                    .max_recv_sge = 1},
            .pd = dev.pd,
            .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
            .send_ops_flags = IBV_QP_EX_WITH_SEND,
        };
        struct efadv_qp_init_attr efa_attr = {.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD};

        efasim_qp_open(&dev, &def, &tx[q]);
        memset(&rx[q], 0, sizeof(rx[q]));
        rx[q].dev = &dev;
        rx[q].qkey = def.qkey;
        rx[q].qp = efadv_create_qp_ex(dev.ctx, &attr, &efa_attr, sizeof(efa_attr));
        EXPECT_TRUE(rx[q].qp != NULL);
        rx[q].qpn = rx[q].qp->qp_num;
        efasim_qp_to_rts(rx[q].qp, def.qkey, def.rnr_retry);
        efasim_dest_to(&dev, &rx[q], &to[q]);
        efasim_buf_alloc(&dev, (size_t)MT_DEPTH * MT_SLOT, EFASIM_ACCESS_ALL, &sbuf[q]);
        for (unsigned i = 0; i < MT_DEPTH; i++)
            efasim_post_recv(&rx[q], i, &rbuf, ((size_t)q * MT_DEPTH + i) * MT_SLOT, MT_SLOT);
        s[q] =
            (struct mt_sender){.qp = &tx[q], .to = &to[q], .buf = &sbuf[q], .id = q, .msgs = MSGS};
    }
    for (unsigned q = 0; q < 2; q++)
        EXPECT_EQ(pthread_create(&t[q], NULL, mt_sender_run, &s[q]), 0);
    while (next[0] < MSGS || next[1] < MSGS) {
        struct efasim_wc wc;
        unsigned q, i;

        if (!mt_wait(shared, &wc, EFASIM_WAIT_S))
            break;
        q = wc.qp_num == rx[1].qpn;
        EXPECT_TRUE(wc.qp_num == rx[q].qpn);
        efarm_test_context("QP %u, message %u", q, next[q]);
        EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
        EXPECT_EQ(wc.opcode, IBV_WC_RECV);
        i = next[q]++;
        EXPECT_EQ(wc.wr_id, i % MT_DEPTH);
        EXPECT_EQ(wc.byte_len, 64);
        EXPECT_EQ(efasim_check_fill(rbuf.addr + ((size_t)q * MT_DEPTH + i % MT_DEPTH) * MT_SLOT, 64,
                                    (uint64_t)q << 32 | i),
                  64);
        if (i + MT_DEPTH < MSGS)
            efasim_post_recv(&rx[q], i % MT_DEPTH, &rbuf,
                             ((size_t)q * MT_DEPTH + i % MT_DEPTH) * MT_SLOT, MT_SLOT);
        if (i % 64 == 0)
            efasim_sleep_ms(1); /* a slow consumer: the CQ fills up behind it */
    }
    for (unsigned q = 0; q < 2; q++)
        pthread_join(t[q], NULL);
    efarm_test_context("after the traffic");
    for (unsigned q = 0; q < 2; q++) {
        if (s[q].err[0])
            efarm_test_fail(__FILE__, __LINE__, "%s", s[q].err);
        EXPECT_EQ(next[q], MSGS);
    }
    efasim_expect_no_wc(shared, 100, "a completion beyond the messages sent");
    for (unsigned q = 0; q < 2; q++) {
        EXPECT_EQ(ibv_destroy_ah(to[q].ah), 0);
        efasim_buf_free(&sbuf[q]);
        efasim_qp_close(&tx[q]);
        EXPECT_EQ(ibv_destroy_qp(rx[q].qp), 0);
    }
    efasim_buf_free(&rbuf);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(shared)), 0);
    efasim_dev_close(&dev);
}

/* Threads of this process now (entries of /proc/self/task); -1 if unreadable. */
static int task_count(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

#define SVC_CTXS 4

/*
 * One emulated NIC per process: contexts opened on the same device (an MPI
 * library opens one per VCI) add one service thread between them, not one
 * each, and the thread serves every one of them: an RDMA read whose target
 * context is the last one opened, and is never polled, completes (only the
 * service thread runs that context's QPs). The thread ends with the last
 * context.
 */
EFARM_TEST_TIMEOUT(efasim_threads_one_service_thread_per_process, 60)
{
    const struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    struct efasim_dev dev[SVC_CTXS];
    struct efasim_qp req, tgt;
    struct efasim_dest to_tgt;
    struct efasim_buf local, remote;
    struct efasim_wc wc;
    int base = task_count(), one;

    EXPECT_TRUE(base >= 1);
    /* Measured after the first context: TSan's runtime starts a thread of its own with the first.
     */
    efasim_dev_open(0, &dev[0]);
    one = task_count();
    efarm_test_context("threads with one context open, %d before", base);
    EXPECT_TRUE(one >= base + 1);
    for (int i = 1; i < SVC_CTXS; i++)
        efasim_dev_open(0, &dev[i]);
    efarm_test_context("threads with %d contexts open, %d with one", SVC_CTXS, one);
    EXPECT_EQ(task_count(), one);

    efasim_qp_open(&dev[0], &opts, &req);
    efasim_qp_open(&dev[SVC_CTXS - 1], &opts, &tgt);
    efasim_dest_to(&dev[0], &tgt, &to_tgt);
    efasim_buf_alloc(&dev[0], 4096, IBV_ACCESS_LOCAL_WRITE, &local);
    efasim_buf_alloc(&dev[SVC_CTXS - 1], 4096, IBV_ACCESS_REMOTE_READ, &remote);
    for (size_t i = 0; i < remote.len; i++)
        remote.addr[i] = (uint8_t)(i * 7 + 3);
    memset(local.addr, 0, local.len);
    efarm_test_context("an RDMA read from a context nobody polls");
    EXPECT_EQ(efasim_rdma_read(&req, &to_tgt, 1, &local, 0, 4096, remote.mr->rkey,
                               (uintptr_t)remote.addr),
              0);
    efasim_wait_wc_for(req.send_cq, &wc, 20, "the RDMA read served by the service thread");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_MEM_EQ(local.addr, remote.addr, 4096);

    efasim_buf_free(&local);
    efasim_buf_free(&remote);
    EXPECT_EQ(ibv_destroy_ah(to_tgt.ah), 0);
    efasim_qp_close(&req);
    efasim_qp_close(&tgt);
    for (int i = 0; i < SVC_CTXS - 1; i++)
        efasim_dev_close(&dev[i]);
    efarm_test_context("threads with one context left");
    EXPECT_EQ(task_count(), one);
    efasim_dev_close(&dev[SVC_CTXS - 1]);
    efarm_test_context("threads after the last context closed");
    EXPECT_EQ(task_count(), one - 1);
}

/*
 * A child forked while the parent's service thread runs has no such thread:
 * the first context it opens starts its own (else the child's contexts would
 * never be served), and closing the parent's contexts in the child, which it
 * cannot use, waits for nothing.
 */
EFARM_TEST_TIMEOUT(efasim_threads_service_thread_after_fork, 60)
{
    struct efasim_dev parent;
    int status = 0;
    pid_t pid;

#if TEST_TSAN
    /* TSan's runtime cannot start threads in a child of a multithreaded process. */
    printf("  efasim_threads_service_thread_after_fork: not run under TSan (no threads after a "
           "multithreaded fork); the gcc, clang and ASan suites run it\n");
    return;
#endif

    efasim_dev_open(0, &parent);
    EXPECT_TRUE(task_count() >= 2);
    fflush(NULL);
    pid = fork();
    EXPECT_TRUE(pid >= 0);
    if (pid == 0) {
        struct efasim_dev child;
        int base = task_count(), code = 0;

        efasim_dev_open(0, &child);
        if (task_count() != base + 1)
            code |= 1;
        efasim_dev_close(&child);
        if (task_count() != base)
            code |= 2;
        _exit(code);
    }
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    efarm_test_context("the child's exit status (1: no service thread started, 2: not ended)");
    EXPECT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
    efasim_dev_close(&parent);
}
