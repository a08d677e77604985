/*
 * Two processes on one host: the test forks before touching verbs, the two
 * exchange their addresses through pipes, play 1000 rounds of ping-pong with
 * data checks, and then the child reads the parent's registered memory while
 * the parent sits blocked in read(2): efasim's service thread, not the
 * parent's polling, must answer the RDMA read.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "efasim_common.h"

#define PROCS_ROUNDS      1000
#define PROCS_RECVS       4
#define PROCS_REGION_LEN  (1u << 20)
#define PROCS_REGION_SEED 0x7777u

/* What one process tells the other; both run the same binary on the same host. */
struct peer_info {
    uint8_t gid[16];
    uint32_t qpn;
    uint32_t qkey;
    uint32_t rkey;
    uint32_t pad;
    uint64_t addr;
    uint64_t len;
};

struct side {
    const char *name;
    int rfd, wfd;
    struct efasim_dev dev;
    struct efasim_qp qp;
    struct efasim_buf msg;    /* PROCS_RECVS receive slots, then one send slot */
    struct efasim_buf region; /* what the child reads from the parent */
    struct peer_info peer;
    struct efasim_dest to_peer;
};

static void side_open(struct side *s)
{
    const struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    struct peer_info me;
    union ibv_gid gid;
    char ready = 0;

    efasim_dev_open(0, &s->dev);
    efasim_qp_open(&s->dev, &opts, &s->qp);
    efasim_buf_alloc(&s->dev, (size_t)(PROCS_RECVS + 1) * s->dev.mtu, IBV_ACCESS_LOCAL_WRITE,
                     &s->msg);
    efasim_buf_alloc(&s->dev, PROCS_REGION_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
                     &s->region);
    efasim_fill(s->region.addr, PROCS_REGION_LEN, PROCS_REGION_SEED);
    for (unsigned i = 0; i < PROCS_RECVS; i++)
        efasim_post_recv(&s->qp, i, &s->msg, (size_t)i * s->dev.mtu, s->dev.mtu);

    memset(&me, 0, sizeof(me));
    memcpy(me.gid, s->dev.gid.raw, 16);
    me.qpn = s->qp.qpn;
    me.qkey = s->qp.qkey;
    me.rkey = s->region.mr->rkey;
    me.addr = (uintptr_t)s->region.addr;
    me.len = PROCS_REGION_LEN;
    efarm_test_pipe_write(s->wfd, &me, sizeof(me));
    efarm_test_pipe_read(s->rfd, &s->peer, sizeof(s->peer), "its address");
    memcpy(gid.raw, s->peer.gid, 16);
    s->to_peer.ah = efasim_ah_create(&s->dev, &gid);
    s->to_peer.qpn = s->peer.qpn;
    s->to_peer.qkey = s->peer.qkey;

    /* Nothing is sent before both have their AH: a receive's slid depends on it. */
    efarm_test_pipe_write(s->wfd, "A", 1);
    efarm_test_pipe_read(s->rfd, &ready, 1, "its AH-ready byte");
    EXPECT_EQ(ready, 'A');
}

static void side_close(struct side *s)
{
    EXPECT_EQ(ibv_destroy_ah(s->to_peer.ah), 0);
    efasim_buf_free(&s->msg);
    efasim_buf_free(&s->region);
    efasim_qp_close(&s->qp);
    efasim_dev_close(&s->dev);
}

static size_t ping_len(unsigned i, uint32_t mtu)
{
    return (size_t)i * 131 % (mtu + 1);
}

static size_t pong_len(unsigned i, uint32_t mtu)
{
    return ((size_t)i * 71 + 5) % (mtu + 1);
}

/* Waits for message `seed` of len bytes, checks it and posts its receive again. */
static void side_expect(struct side *s, size_t len, uint64_t seed)
{
    struct efasim_wc wc;
    const uint8_t *data;
    size_t bad;

    efasim_wait_wc(s->qp.recv_cq, &wc, "a message from the other process");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_TRUE(wc.wr_id < PROCS_RECVS);
    EXPECT_EQ(wc.byte_len, len);
    EXPECT_EQ(wc.src_qp, s->peer.qpn);
    EXPECT_EQ(wc.slid, efasim_ahn(s->to_peer.ah));
    data = s->msg.addr + wc.wr_id * s->dev.mtu;
    bad = efasim_check_fill(data, len, seed);
    if (bad != len)
        efarm_test_fail(__FILE__, __LINE__, "%s: message differs at byte %zu of %zu", s->name, bad,
                        len);
    efasim_post_recv(&s->qp, wc.wr_id, &s->msg, wc.wr_id * s->dev.mtu, s->dev.mtu);
}

static void side_send(struct side *s, size_t len, uint64_t seed)
{
    size_t off = (size_t)PROCS_RECVS * s->dev.mtu;
    struct efasim_wc wc;

    efasim_fill(s->msg.addr + off, len, seed);
    EXPECT_EQ(efasim_send(&s->qp, &s->to_peer, seed, &s->msg, off, len), 0);
    efasim_wait_wc(s->qp.send_cq, &wc, "the send to the other process");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.wr_id, seed);
}

static _Noreturn void run_child(int rfd, int wfd, pid_t parent, void *arg)
{
    struct side s = {.name = "child", .rfd = rfd, .wfd = wfd};
    struct efasim_buf local;
    struct efasim_wc wc;
    char done = 'K';
    size_t bad;

    (void)arg;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
        _exit(3);
    side_open(&s);
    for (unsigned i = 0; i < PROCS_ROUNDS; i++) {
        efarm_test_context("child, round %u", i);
        side_send(&s, ping_len(i, s.dev.mtu), i);
        side_expect(&s, pong_len(i, s.dev.mtu), 1000000 + i);
    }

    /* The parent is now blocked in read(2) on the pipe. */
    efarm_test_context("child, RDMA read of the parent's region");
    efasim_buf_alloc(&s.dev, PROCS_REGION_LEN, IBV_ACCESS_LOCAL_WRITE, &local);
    EXPECT_EQ(s.peer.len, PROCS_REGION_LEN);
    EXPECT_EQ(efasim_rdma_read(&s.qp, &s.to_peer, 7, &local, 0, PROCS_REGION_LEN, s.peer.rkey,
                               s.peer.addr),
              0);
    efasim_wait_wc(s.qp.send_cq, &wc, "the RDMA read of the blocked parent's memory");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IBV_WC_SEND); /* EFA reports reads as sends */
    bad = efasim_check_fill(local.addr, PROCS_REGION_LEN, PROCS_REGION_SEED);
    if (bad != PROCS_REGION_LEN)
        efarm_test_fail(__FILE__, __LINE__, "RDMA read data differs at byte %zu", bad);
    efasim_buf_free(&local);

    efarm_test_pipe_write(wfd, &done, 1);
    side_close(&s);
    fflush(NULL);
    _exit(0);
}

EFARM_TEST_TIMEOUT(efasim_two_processes, 90)
{
    struct side s = {.name = "parent"};
    struct efarm_test_child child;
    char done = 0;

    efarm_test_fork_child(&child, run_child, NULL);
    s.rfd = child.rfd;
    s.wfd = child.wfd;

    side_open(&s);
    for (unsigned i = 0; i < PROCS_ROUNDS; i++) {
        efarm_test_context("parent, round %u", i);
        side_expect(&s, ping_len(i, s.dev.mtu), i);
        side_send(&s, pong_len(i, s.dev.mtu), 1000000 + i);
    }

    /* Block without polling while the child reads s.region. */
    efarm_test_context("parent, waiting for the child's RDMA read");
    efarm_test_pipe_read(s.rfd, &done, 1, "the result of its RDMA read");
    EXPECT_EQ(done, 'K');
    efarm_test_child_reap(&child, "child");
    EXPECT_EQ(efasim_check_fill(s.region.addr, PROCS_REGION_LEN, PROCS_REGION_SEED),
              PROCS_REGION_LEN);
    side_close(&s);
    close(s.rfd);
    close(s.wfd);
}

/*
 * A reader that took every completion there was and posts nothing while it
 * waits for the next message. On the kernel front end its ring no longer
 * traps its reads then (src/efasim/kernel/efa.c, "Completion rings"): its
 * polls cannot run the device, and only the service thread can. With a
 * service period of 2 s, the message must still be seen well within it, as
 * a datagram that reaches a watched QP wakes the thread at once (service.c).
 * On the drop-in every poll runs the device; the test holds there as well.
 */
#define CAUGHT_UP_SERVICE_US "2000000"
#define CAUGHT_UP_WAIT_S     1.0
#define CAUGHT_UP_LEN        64

static _Noreturn void caught_up_child(int rfd, int wfd, pid_t parent, void *arg)
{
    struct side s = {.name = "child", .rfd = rfd, .wfd = wfd};
    size_t off;
    char word = 0;

    (void)arg;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
        _exit(3);
    side_open(&s);
    off = (size_t)PROCS_RECVS * s.dev.mtu;
    efarm_test_context("child, first message");
    efasim_fill(s.msg.addr + off, CAUGHT_UP_LEN, 1);
    EXPECT_EQ(efasim_send(&s.qp, &s.to_peer, 1, &s.msg, off, CAUGHT_UP_LEN), 0);
    efarm_test_pipe_read(rfd, &word, 1, "the parent's word that it caught up");
    EXPECT_EQ(word, 'G');
    efarm_test_context("child, second message");
    efasim_fill(s.msg.addr + off + CAUGHT_UP_LEN, CAUGHT_UP_LEN, 2);
    EXPECT_EQ(efasim_send(&s.qp, &s.to_peer, 2, &s.msg, off + CAUGHT_UP_LEN, CAUGHT_UP_LEN), 0);
    efarm_test_pipe_read(rfd, &word, 1, "the parent's word that it got the second message");
    EXPECT_EQ(word, 'D');
    side_close(&s);
    fflush(NULL);
    _exit(0);
}

EFARM_TEST_TIMEOUT(efasim_caught_up_reader_sees_next_message, 60)
{
    struct side s = {.name = "parent"};
    struct efarm_test_child child;
    struct efasim_wc wc;
    double t0;

    efasim_setenv("EFASIM_SERVICE_US", CAUGHT_UP_SERVICE_US); /* both processes */
    efarm_test_fork_child(&child, caught_up_child, NULL);
    s.rfd = child.rfd;
    s.wfd = child.wfd;
    side_open(&s);

    efarm_test_context("parent, first message");
    efasim_wait_wc(s.qp.recv_cq, &wc, "the first message");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.byte_len, CAUGHT_UP_LEN);
    EXPECT_EQ(efasim_check_fill(s.msg.addr + wc.wr_id * s.dev.mtu, CAUGHT_UP_LEN, 1),
              CAUGHT_UP_LEN);
    /* Caught up: nothing more to read, and no receive is posted again (no doorbell). */
    EXPECT_TRUE(!efasim_poll_one(s.qp.recv_cq, &wc));

    efarm_test_context("parent, second message");
    t0 = efasim_now();
    efarm_test_pipe_write(s.wfd, "G", 1);
    efasim_wait_wc_for(s.qp.recv_cq, &wc, CAUGHT_UP_WAIT_S,
                       "the second message, well within the 2 s service period");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.byte_len, CAUGHT_UP_LEN);
    EXPECT_EQ(efasim_check_fill(s.msg.addr + wc.wr_id * s.dev.mtu, CAUGHT_UP_LEN, 2),
              CAUGHT_UP_LEN);
    if (efasim_now() - t0 > CAUGHT_UP_WAIT_S) /* a completion that came only with the pass */
        efarm_test_fail(__FILE__, __LINE__, "second message seen %.3f s after the word",
                        efasim_now() - t0);
    efarm_test_pipe_write(s.wfd, "D", 1);
    efarm_test_child_reap(&child, "child");
    side_close(&s);
    close(s.rfd);
    close(s.wfd);
}
