/*
 * QP numbers are reused, as on EFA. EFASIM_QPN pins the number (UDP port) of
 * a process's first QP, so a process that replaces an exited one can hold the
 * same number with a new Q-Key. The peer that talked to the old QP must treat
 * the new one as a stranger: each of its messages delivered exactly once, its
 * own messages to it (with the new Q-Key) delivered, and WRs meant for the old
 * QP (in flight when it went, or posted later with its Q-Key) failed with the
 * status EFA gives a QP that is no longer there, never delivered.
 *
 * The old and the new QP live in two child processes forked before anything
 * touches verbs, so each reads its own EFASIM_QPN; the parent plays the peer.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "efasim_common.h"

#define REUSE_RECVS    64  /* receive slots per side */
#define REUSE_MSG_LEN  256 /* bytes per message */
#define REUSE_MAX_MSGS 1024
#define REUSE_MANY     600 /* more than one duplicate window (512) of sequence numbers */
#define REUSE_FEW      20
#define REUSE_QKEY_A   0x0a0a0001u
#define REUSE_QKEY_B   0x0b0b0001u
#define REUSE_QKEY_B2  0x0b0b0002u

/* ---- Ports ---------------------------------------------------------------------- */

static unsigned open_fd_count(void)
{
    DIR *d = opendir("/proc/self/fd");
    unsigned n = 0;

    EXPECT_TRUE(d != NULL);
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* EFASIM_QPN: consecutive numbers from the knob; a number held elsewhere fails cleanly. */
EFARM_TEST(efasim_qpn_pins_first_qp)
{
    const struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    uint32_t base = efarm_test_free_qpns(3);
    struct efasim_dest to;
    struct efasim_dev dev;
    struct efasim_buf buf;
    struct efasim_qp a, b;
    struct efasim_wc wc;
    struct ibv_cq_ex *cq;
    struct ibv_qp *raw;
    unsigned fds;
    char value[16];
    int blocker;

    snprintf(value, sizeof(value), "%u", base);
    efasim_setenv("EFASIM_QPN", value);
    efasim_dev_open(0, &dev);
    efasim_qp_open(&dev, &opts, &a);
    EXPECT_EQ(a.qpn, base);
    efasim_qp_open(&dev, &opts, &b);
    EXPECT_EQ(b.qpn, base + 1);

    /* Pinned numbers are ordinary QPs. */
    efasim_buf_alloc(&dev, 4096, IBV_ACCESS_LOCAL_WRITE, &buf);
    efasim_dest_to(&dev, &b, &to);
    efasim_fill(buf.addr, 100, 1);
    efasim_post_recv(&b, 1, &buf, 2048, 2048);
    EXPECT_EQ(efasim_send(&a, &to, 2, &buf, 0, 100), 0);
    efasim_wait_wc(b.recv_cq, &wc, "the receive on the pinned QP");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.src_qp, base);
    EXPECT_EQ(efasim_check_fill(buf.addr + 2048, 100, 1), 100);
    efasim_wait_wc(a.send_cq, &wc, "the send from the pinned QP");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);

    /* The next number is held by another socket: EADDRINUSE, and nothing leaks. */
    efarm_test_context("QP creation on a taken number");
    blocker = efarm_test_udp_bind(efarm_test_qpn_port(base + 2), NULL);
    EXPECT_TRUE(blocker >= 0);
    cq = efasim_cq_create(&dev, 64);
    fds = open_fd_count();
    errno = 0;
    raw = efasim_qp_create_raw(&dev, cq);
    EXPECT_TRUE(raw == NULL);
    EXPECT_EQ(errno, EADDRINUSE);
    EXPECT_EQ(open_fd_count(), fds);

    /* The number was not used up: once it is free, the next QP takes it. */
    efarm_test_context("QP creation once the number is free");
    close(blocker);
    raw = efasim_qp_create_raw(&dev, cq);
    EXPECT_TRUE(raw != NULL);
    EXPECT_EQ(raw->qp_num, base + 2);
    EXPECT_EQ(ibv_destroy_qp(raw), 0);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);

    EXPECT_EQ(ibv_destroy_ah(to.ah), 0);
    efasim_buf_free(&buf);
    efasim_qp_close(&a);
    efasim_qp_close(&b);
    efasim_dev_close(&dev);
}

/* ---- One side of a conversation: a QP, receive slots and a send slot ------------ */

struct reuse_addr {
    uint8_t gid[16];
    uint32_t qpn;
    uint32_t qkey;
};

struct side {
    struct efasim_dev dev;
    struct efasim_qp qp;
    struct efasim_buf buf; /* REUSE_RECVS receive slots, then one send slot */
    struct efasim_dest to;
    uint32_t free_slots[REUSE_RECVS];
    uint32_t nfree;
};

static void side_post(struct side *s)
{
    uint32_t slot = s->free_slots[--s->nfree];

    efasim_post_recv(&s->qp, slot, &s->buf, (size_t)slot * REUSE_MSG_LEN, REUSE_MSG_LEN);
}

/* Opens device 0 and a QP with `qkey`, with `prepost` receives posted. */
static void side_open(struct side *s, uint32_t qkey, uint32_t prepost)
{
    struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;

    memset(s, 0, sizeof(*s));
    opts.qkey = qkey;
    efasim_dev_open(0, &s->dev);
    efasim_qp_open(&s->dev, &opts, &s->qp);
    efasim_buf_alloc(&s->dev, (REUSE_RECVS + 1) * REUSE_MSG_LEN, IBV_ACCESS_LOCAL_WRITE, &s->buf);
    for (uint32_t i = 0; i < REUSE_RECVS; i++)
        s->free_slots[s->nfree++] = REUSE_RECVS - 1 - i;
    for (uint32_t i = 0; i < prepost && s->nfree; i++)
        side_post(s);
}

static void side_address(const struct side *s, struct reuse_addr *addr_p)
{
    memset(addr_p, 0, sizeof(*addr_p));
    memcpy(addr_p->gid, s->dev.gid.raw, 16);
    addr_p->qpn = s->qp.qpn;
    addr_p->qkey = s->qp.qkey;
}

/* Sends go to `peer`: an AH for its GID, its QPN and the Q-Key given. */
static void side_connect(struct side *s, const struct reuse_addr *peer)
{
    union ibv_gid gid;

    if (s->to.ah)
        EXPECT_EQ(ibv_destroy_ah(s->to.ah), 0);
    memcpy(gid.raw, peer->gid, 16);
    s->to.ah = efasim_ah_create(&s->dev, &gid);
    s->to.qpn = peer->qpn;
    s->to.qkey = peer->qkey;
}

static void side_close(struct side *s)
{
    if (s->to.ah)
        EXPECT_EQ(ibv_destroy_ah(s->to.ah), 0);
    efasim_buf_free(&s->buf);
    efasim_qp_close(&s->qp);
    efasim_dev_close(&s->dev);
}

/*
 * Receives n messages from QP `from`: message k carries immediate data k and
 * efasim_fill(seed + k). Each must arrive exactly once and intact; receives
 * are posted as needed, so none is left over from this call's own posting.
 */
static void side_expect(struct side *s, uint32_t n, uint64_t seed, uint32_t from)
{
    uint8_t seen[REUSE_MAX_MSGS] = {0};
    uint32_t posted = REUSE_RECVS - s->nfree;

    EXPECT_TRUE(n <= REUSE_MAX_MSGS);
    for (uint32_t got = 0; got < n; got++) {
        struct efasim_wc wc;
        const uint8_t *data;

        while (posted < n - got && s->nfree) {
            side_post(s);
            posted++;
        }
        efarm_test_context("message %u of %u (seed %" PRIu64 ")", got, n, seed);
        efasim_wait_wc(s->qp.recv_cq, &wc, "a message from the other QP");
        EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
        EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
        EXPECT_TRUE(wc.imm < n);
        if (seen[wc.imm]++)
            efarm_test_fail(__FILE__, __LINE__, "message %u delivered twice", wc.imm);
        EXPECT_EQ(wc.byte_len, REUSE_MSG_LEN);
        EXPECT_EQ(wc.src_qp, from);
        data = s->buf.addr + wc.wr_id * REUSE_MSG_LEN;
        EXPECT_EQ(efasim_check_fill(data, REUSE_MSG_LEN, seed + wc.imm), REUSE_MSG_LEN);
        s->free_slots[s->nfree++] = (uint32_t)wc.wr_id;
        posted--;
    }
}

/* Sends n messages (see side_expect) one at a time, each completing successfully. */
static void side_send(struct side *s, uint32_t n, uint64_t seed)
{
    size_t off = (size_t)REUSE_RECVS * REUSE_MSG_LEN;

    for (uint32_t k = 0; k < n; k++) {
        struct efasim_wc wc;

        efarm_test_context("send %u of %u (seed %" PRIu64 ")", k, n, seed);
        efasim_fill(s->buf.addr + off, REUSE_MSG_LEN, seed + k);
        EXPECT_EQ(efasim_send_imm(&s->qp, &s->to, k, &s->buf, off, REUSE_MSG_LEN, k), 0);
        efasim_wait_wc(s->qp.send_cq, &wc, "a send to the other QP");
        EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
        EXPECT_EQ(wc.wr_id, k);
    }
}

/* One send that must fail as a send to a QP that is gone does on EFA. */
static void expect_unknown_dest(struct side *s, uint64_t wr_id, const char *what)
{
    struct efasim_wc wc;

    efasim_wait_wc(s->qp.send_cq, &wc, what);
    EXPECT_EQ(wc.wr_id, wr_id);
    EXPECT_WC_STATUS(&wc, IBV_WC_REM_INV_RD_REQ_ERR);
    EXPECT_EQ(wc.vendor_err, EFASIM_VENDOR_UNKNOWN_DEST);
}

/* ---- The child processes that hold the reused number ----------------------------- */

enum reuse_op {
    REUSE_OPEN = 1, /* set EFASIM_QPN, open a QP with qkey, prepost n receives */
    REUSE_RECV,     /* side_expect(n, seed) from the parent */
    REUSE_SEND,     /* side_send(n, seed) to the parent */
    REUSE_QUIET,    /* no receive completes for n ms */
    REUSE_QUIT,     /* destroy everything and exit */
};

struct reuse_cmd {
    uint32_t op;
    uint32_t n;
    uint64_t seed;
    uint32_t qpn;
    uint32_t qkey;
    struct reuse_addr peer; /* REUSE_OPEN: the parent's QP */
};

static _Noreturn void child_run(int rfd, int wfd, pid_t parent, void *arg)
{
    struct reuse_addr reply, peer = {0};
    struct reuse_cmd cmd;
    struct side s;
    char value[16];

    (void)arg;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
        _exit(3);
    for (;;) {
        efarm_test_pipe_read(rfd, &cmd, sizeof(cmd), "a command");
        memset(&reply, 0, sizeof(reply));
        switch (cmd.op) {
        case REUSE_OPEN:
            snprintf(value, sizeof(value), "%u", cmd.qpn);
            efasim_setenv("EFASIM_QPN", value);
            side_open(&s, cmd.qkey, cmd.n);
            side_connect(&s, &cmd.peer);
            peer = cmd.peer;
            side_address(&s, &reply);
            break;
        case REUSE_RECV:
            side_expect(&s, cmd.n, cmd.seed, peer.qpn);
            break;
        case REUSE_SEND:
            side_send(&s, cmd.n, cmd.seed);
            break;
        case REUSE_QUIET:
            efasim_expect_no_wc(s.qp.recv_cq, cmd.n, "a receive on the new QP");
            break;
        case REUSE_QUIT:
            side_close(&s);
            efarm_test_pipe_write(wfd, &reply, sizeof(reply));
            fflush(NULL);
            _exit(0);
        default:
            _exit(4);
        }
        efarm_test_pipe_write(wfd, &reply, sizeof(reply));
    }
}

static void child_start(struct efarm_test_child *c)
{
    efarm_test_fork_child(c, child_run, NULL);
}

static void child_tell(struct efarm_test_child *c, uint32_t op, uint32_t n, uint64_t seed)
{
    struct reuse_cmd cmd = {.op = op, .n = n, .seed = seed};

    efarm_test_pipe_write(c->wfd, &cmd, sizeof(cmd));
}

static void child_done(struct efarm_test_child *c, const char *what)
{
    struct reuse_addr reply;

    efarm_test_pipe_read(c->rfd, &reply, sizeof(reply), what);
}

/* The child opens its QP on number qpn with qkey; returns its address. */
static void child_open(struct efarm_test_child *c, const struct side *parent, uint16_t qpn,
                       uint32_t qkey, uint32_t prepost, struct reuse_addr *addr_p)
{
    struct reuse_cmd cmd = {.op = REUSE_OPEN, .n = prepost, .qpn = qpn, .qkey = qkey};

    side_address(parent, &cmd.peer);
    efarm_test_pipe_write(c->wfd, &cmd, sizeof(cmd));
    efarm_test_pipe_read(c->rfd, addr_p, sizeof(*addr_p), "its QP address");
    EXPECT_EQ(addr_p->qpn, qpn);
    EXPECT_EQ(addr_p->qkey, qkey);
}

/* The child destroys its QP and exits; returns once it is gone. */
static void child_quit(struct efarm_test_child *c)
{
    child_tell(c, REUSE_QUIT, 0, 0);
    child_done(c, "the word that it closed its QP");
    efarm_test_child_reap(c, "child");
    close(c->rfd);
    close(c->wfd);
}

/*
 * B talks to A both ways, exits; B2 takes B's number with another Q-Key. B2's
 * sequence numbers start over below what A recorded for B, and A's go on above
 * a window past what B2 has seen: without incarnations A would take B2's
 * messages for duplicates (ACK them, never deliver them) and B2 would drop A's.
 */
static void reuse_new_incarnation(void)
{
    struct reuse_addr b, b2;
    struct efarm_test_child cb, cb2;
    struct side a;
    uint16_t qpn;

    child_start(&cb);
    child_start(&cb2);
    side_open(&a, REUSE_QKEY_A, REUSE_RECVS);
    qpn = (uint16_t)efarm_test_free_qpns(1);

    efarm_test_context("B opens on QPN %u", qpn);
    child_open(&cb, &a, qpn, REUSE_QKEY_B, 0, &b);
    side_connect(&a, &b);
    child_tell(&cb, REUSE_RECV, REUSE_MANY, 1000);
    side_send(&a, REUSE_MANY, 1000);
    child_done(&cb, "B's check of A's messages");
    child_tell(&cb, REUSE_SEND, REUSE_FEW, 2000);
    side_expect(&a, REUSE_FEW, 2000, qpn);
    child_done(&cb, "B's sends");
    child_quit(&cb);

    efarm_test_context("B2 opens on QPN %u", qpn);
    child_open(&cb2, &a, qpn, REUSE_QKEY_B2, 0, &b2);
    child_tell(&cb2, REUSE_SEND, REUSE_FEW, 3000);
    side_expect(&a, REUSE_FEW, 3000, qpn);
    child_done(&cb2, "B2's sends");
    efasim_expect_no_wc(a.qp.recv_cq, 200, "A's receives after B2's messages");

    side_connect(&a, &b2);
    child_tell(&cb2, REUSE_RECV, REUSE_FEW, 4000);
    side_send(&a, REUSE_FEW, 4000);
    child_done(&cb2, "B2's check of A's messages");
    child_quit(&cb2);
    side_close(&a);
}

EFARM_TEST_TIMEOUT(efasim_qpn_reuse_new_incarnation, 60)
{
    reuse_new_incarnation();
}

/* The same through loss, duplicates and reordering, in all three processes. */
EFARM_TEST_TIMEOUT(efasim_qpn_reuse_with_faults, 60)
{
    efasim_setenv("EFASIM_LOSS", "0.05");
    efasim_setenv("EFASIM_DUP", "0.05");
    efasim_setenv("EFASIM_REORDER", "0.1");
    reuse_new_incarnation();
}

/*
 * WRs meant for B after B2 took its number: one in flight when B exited (B had
 * no receive posted, so it kept coming back RNR) and one posted later with B's
 * Q-Key. B2, receives posted, must reject both, A must see both fail as sends
 * to a QP that is gone, and the two must then talk normally, A first.
 */
EFARM_TEST_TIMEOUT(efasim_qpn_reuse_stale_wr_fails, 60)
{
    size_t off = (size_t)REUSE_RECVS * REUSE_MSG_LEN;
    struct reuse_addr b, b2;
    struct efarm_test_child cb, cb2;
    struct side a;
    uint16_t qpn;

    child_start(&cb);
    child_start(&cb2);
    side_open(&a, REUSE_QKEY_A, REUSE_RECVS);
    qpn = (uint16_t)efarm_test_free_qpns(1);

    efarm_test_context("B opens on QPN %u", qpn);
    child_open(&cb, &a, qpn, REUSE_QKEY_B, 0, &b);
    side_connect(&a, &b);
    child_tell(&cb, REUSE_RECV, REUSE_FEW, 1000);
    side_send(&a, REUSE_FEW, 1000);
    child_done(&cb, "B's check of A's messages");
    child_tell(&cb, REUSE_SEND, REUSE_FEW, 2000);
    side_expect(&a, REUSE_FEW, 2000, qpn);
    child_done(&cb, "B's sends");

    efarm_test_context("a send to B left in flight");
    efasim_fill(a.buf.addr + off, REUSE_MSG_LEN, 0xdead);
    EXPECT_EQ(efasim_send_imm(&a.qp, &a.to, 0xdead, &a.buf, off, REUSE_MSG_LEN, 0), 0);
    efasim_expect_no_wc(a.qp.send_cq, 50, "the send to B, which has no receive posted");
    child_quit(&cb);

    efarm_test_context("B2 opens on QPN %u", qpn);
    child_open(&cb2, &a, qpn, REUSE_QKEY_B2, REUSE_RECVS, &b2);
    expect_unknown_dest(&a, 0xdead, "the send that was in flight to B");
    EXPECT_EQ(efasim_send_imm(&a.qp, &a.to, 0xbeef, &a.buf, off, REUSE_MSG_LEN, 0), 0);
    expect_unknown_dest(&a, 0xbeef, "a send with B's Q-Key after B2 took the number");
    child_tell(&cb2, REUSE_QUIET, 200, 0);
    child_done(&cb2, "B2's check that nothing arrived");

    efarm_test_context("A and B2, A first");
    side_connect(&a, &b2);
    child_tell(&cb2, REUSE_RECV, REUSE_FEW, 3000);
    side_send(&a, REUSE_FEW, 3000);
    child_done(&cb2, "B2's check of A's messages");
    child_tell(&cb2, REUSE_SEND, REUSE_FEW, 4000);
    side_expect(&a, REUSE_FEW, 4000, qpn);
    child_done(&cb2, "B2's sends");
    efasim_expect_no_wc(a.qp.recv_cq, 100, "A's receives after B2's messages");
    child_quit(&cb2);
    side_close(&a);
}
