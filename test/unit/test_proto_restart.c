/*
 * A peer restarts with the same address but a new connid (section 4.4).
 *
 * Three engine endpoints in three processes on efasim: A lives throughout; B
 * talks with A (several messages each way, eager, medium, long-CTS and
 * runting read, tagged and untagged) and exits; B2 then starts with B's QP
 * number (EFASIM_QPN), so only its connid (the Q-Key) tells it from B. A must
 * take B2 for a new peer, learnt from the raw-address header of its first
 * REQ: a new address-vector entry with msg_ids from 0 and every message
 * intact and in order, never reported as B's (req.peer, and an untagged
 * receive posted for B's handle that B2's messages must not match). Packets
 * A still sends to B's old handle must fail with an error completion (efasim,
 * as EFA, rejects the old Q-Key) and never reach B2.
 *
 * The test's own process only coordinates: it forks A, B and B2 before any
 * of them touches verbs (so each starts efasim afresh and EFASIM_QPN counts
 * from the first QP) and passes raw addresses between them through pipes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "efarm_byteorder.h"
#include "efarm_errno.h"
#include "efarm_test.h"
#include "proto_common.h"
#include "test_procs.h"

#define RESTART_MSGS     8  /* each way, per incarnation */
#define RESTART_TAG_BASE 10 /* message i carries tag RESTART_TAG_BASE + i */
#define RESTART_TAG_FIN  99
#define RESTART_SRC_A    7
#define RESTART_UNTAGGED 100 /* bytes of the untagged message each incarnation sends */
#define RESTART_TIMEOUT  20.0

/* Sizes cycled through: eager, medium, long-CTS, runting read (efarm's defaults). */
static const uint64_t g_sizes[] = {8, 20000, 200000, 1536 * 1024};
#define RESTART_NSIZES (sizeof(g_sizes) / sizeof(g_sizes[0]))

enum ctl_cmd { CTL_ADDR = 1, CTL_PEER, CTL_DONE };

struct ctl {
    uint32_t cmd;
    uint8_t raw[EFARM_RAW_ADDR_LEN];
};

struct child {
    pid_t pid;
    int to_fd, from_fd; /* the parent's ends */
    const char *name;
};

static uint64_t msg_size(unsigned i)
{
    return g_sizes[i % RESTART_NSIZES];
}

/* Pattern of message i from the peer of incarnation gen (1: B, 2: B2) to A, or back. */
static uint64_t seed_to_a(unsigned gen, unsigned i)
{
    return gen * 1000 + i;
}

static uint64_t seed_from_a(unsigned gen, unsigned i)
{
    return gen * 1000 + 500 + i;
}

static void ctl_send(int fd, uint32_t cmd, const uint8_t *raw)
{
    struct ctl c = {.cmd = cmd};

    if (raw)
        memcpy(c.raw, raw, EFARM_RAW_ADDR_LEN);
    EXPECT_EQ(write(fd, &c, sizeof(c)), sizeof(c));
}

/* Read one control message; the writer's death (EOF) fails the reader. */
static void ctl_recv(int fd, uint32_t cmd, const char *from, uint8_t *raw)
{
    struct ctl c;
    ssize_t n;

    do
        n = read(fd, &c, sizeof(c));
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof(c))
        efarm_test_fail(__FILE__, __LINE__, "%s went away (read %zd bytes of a message)", from, n);
    EXPECT_EQ(c.cmd, cmd);
    if (raw)
        memcpy(raw, c.raw, EFARM_RAW_ADDR_LEN);
}

static void wait_all(struct efarm_ep *ep, struct efarm_req *const *reqs, unsigned n)
{
    proto_wait(&ep, 1, reqs, n, RESTART_TIMEOUT);
}

static void wait_one(struct efarm_ep *ep, struct efarm_req *req)
{
    wait_all(ep, &req, 1);
}

/* Progress for about `us` microseconds. */
static void spin(struct efarm_ep *ep, unsigned us)
{
    double end = proto_now_s() + us / 1e6;

    while (proto_now_s() < end)
        EXPECT_TRUE(efarm_ep_progress(ep) >= 0);
}

static uint16_t raw_qpn(const uint8_t *raw)
{
    return efarm_load_le16(raw + 16);
}

static uint32_t raw_connid(const uint8_t *raw)
{
    return efarm_load_le32(raw + 20);
}

/* ---- B and B2 ----------------------------------------------------------------------- */

/*
 * One incarnation of the restarting peer: send RESTART_MSGS tagged messages
 * and one untagged to A, receive RESTART_MSGS from A in order, then A's FIN,
 * after which nothing else may be waiting: no packet A sent to the previous
 * incarnation reached this one.
 */
static void peer_main(unsigned gen, int rfd, int wfd)
{
    struct efarm_req sreq[RESTART_MSGS + 1] = {{0}}, rreq[RESTART_MSGS] = {{0}}, fin = {0};
    struct efarm_req *reqs[2 * RESTART_MSGS + 1];
    uint8_t *sbuf[RESTART_MSGS], *rbuf[RESTART_MSGS], untagged[RESTART_UNTAGGED];
    uint8_t raw[EFARM_RAW_ADDR_LEN];
    struct efarm_probe_info info;
    struct efarm_ep *ep;
    efarm_peer_t a;

    efarm_test_context("incarnation %u of the restarting peer", gen);
    EXPECT_RET(efarm_ep_open(NULL, &ep), 0);
    efarm_ep_addr(ep, raw);
    ctl_send(wfd, CTL_ADDR, raw);
    ctl_recv(rfd, CTL_PEER, "the test", raw);
    EXPECT_RET(efarm_av_insert(ep, raw, &a), 0);

    for (unsigned i = 0; i < RESTART_MSGS; i++) {
        sbuf[i] = malloc(msg_size(i));
        rbuf[i] = calloc(1, msg_size(i));
        EXPECT_TRUE(sbuf[i] && rbuf[i]);
        proto_fill(sbuf[i], msg_size(i), seed_to_a(gen, i));
        EXPECT_RET(efarm_trecv(ep, rbuf[i], msg_size(i), 0, RESTART_SRC_A, EFARM_ANY_TAG, &rreq[i]),
                   0);
    }
    for (unsigned i = 0; i < RESTART_MSGS; i++)
        EXPECT_RET(efarm_tsend(ep, a, sbuf[i], msg_size(i), 0, (int32_t)gen,
                               RESTART_TAG_BASE + (int32_t)i, 0, 0, &sreq[i]),
                   0);
    proto_fill(untagged, sizeof(untagged), seed_to_a(gen, RESTART_MSGS));
    EXPECT_RET(efarm_send(ep, a, untagged, sizeof(untagged), 0, 0, &sreq[RESTART_MSGS]), 0);
    for (unsigned i = 0; i < RESTART_MSGS; i++) {
        reqs[i] = &sreq[i];
        reqs[RESTART_MSGS + i] = &rreq[i];
    }
    reqs[2 * RESTART_MSGS] = &sreq[RESTART_MSGS];
    wait_all(ep, reqs, 2 * RESTART_MSGS + 1);
    for (unsigned i = 0; i < RESTART_MSGS; i++) {
        efarm_test_context("incarnation %u, message %u of %llu bytes", gen, i,
                           (unsigned long long)msg_size(i));
        EXPECT_RET(sreq[i].status, 0);
        EXPECT_RET(rreq[i].status, 0);
        EXPECT_EQ(rreq[i].peer, a);
        EXPECT_EQ(rreq[i].tag, RESTART_TAG_BASE + i); /* in order */
        EXPECT_EQ(rreq[i].length, msg_size(i));
        proto_expect_pattern(rbuf[i], msg_size(i), seed_from_a(gen, i));
    }
    EXPECT_RET(sreq[RESTART_MSGS].status, 0);

    efarm_test_context("incarnation %u: A's FIN", gen);
    EXPECT_RET(efarm_trecv(ep, NULL, 0, 0, RESTART_SRC_A, RESTART_TAG_FIN, &fin), 0);
    wait_one(ep, &fin);
    EXPECT_RET(fin.status, 0);
    /* A sends FIN after its sends to the dead incarnation failed: none of them got here. */
    spin(ep, 2000);
    EXPECT_RET(efarm_tprobe(ep, 0, EFARM_ANY_SOURCE, EFARM_ANY_TAG, false, &info), 0);
    EXPECT_EQ(efarm_ep_counters(ep)->connid_mismatch, 0);

    for (unsigned i = 0; i < RESTART_MSGS; i++) {
        free(sbuf[i]);
        free(rbuf[i]);
    }
    efarm_ep_close(ep);
    ctl_send(wfd, CTL_DONE, NULL);
}

/* ---- A ------------------------------------------------------------------------------ */

struct a_phase {
    struct efarm_req rreq[RESTART_MSGS], sreq[RESTART_MSGS], urecv;
    uint8_t *rbuf[RESTART_MSGS], *sbuf[RESTART_MSGS], ubuf[RESTART_UNTAGGED];
};

/*
 * Receive one incarnation's messages (tagged ones from any source, the
 * untagged one from `from`, EFARM_PEER_NONE when A does not know the sender
 * yet), check them, and return who sent them.
 */
static efarm_peer_t a_receive(struct efarm_ep *ep, unsigned gen, efarm_peer_t from,
                              struct a_phase *ph)
{
    struct efarm_req *reqs[RESTART_MSGS + 1];
    efarm_peer_t peer;

    for (unsigned i = 0; i < RESTART_MSGS; i++) {
        ph->rbuf[i] = calloc(1, msg_size(i));
        ph->sbuf[i] = malloc(msg_size(i));
        EXPECT_TRUE(ph->rbuf[i] && ph->sbuf[i]);
        proto_fill(ph->sbuf[i], msg_size(i), seed_from_a(gen, i));
        EXPECT_RET(efarm_trecv(ep, ph->rbuf[i], msg_size(i), 0, EFARM_ANY_SOURCE, EFARM_ANY_TAG,
                               &ph->rreq[i]),
                   0);
        reqs[i] = &ph->rreq[i];
    }
    EXPECT_RET(efarm_recv(ep, ph->ubuf, sizeof(ph->ubuf), from, &ph->urecv), 0);
    reqs[RESTART_MSGS] = &ph->urecv;
    wait_all(ep, reqs, RESTART_MSGS + 1);
    peer = ph->rreq[0].peer;
    for (unsigned i = 0; i < RESTART_MSGS; i++) {
        efarm_test_context("A: incarnation %u, message %u of %llu bytes", gen, i,
                           (unsigned long long)msg_size(i));
        EXPECT_RET(ph->rreq[i].status, 0);
        EXPECT_EQ(ph->rreq[i].peer, peer);
        EXPECT_EQ(ph->rreq[i].source, gen);
        EXPECT_EQ(ph->rreq[i].tag, RESTART_TAG_BASE + i); /* in order */
        EXPECT_EQ(ph->rreq[i].length, msg_size(i));
        proto_expect_pattern(ph->rbuf[i], msg_size(i), seed_to_a(gen, i));
    }
    efarm_test_context("A: incarnation %u, the untagged message", gen);
    EXPECT_RET(ph->urecv.status, 0);
    EXPECT_EQ(ph->urecv.peer, peer);
    EXPECT_EQ(ph->urecv.length, RESTART_UNTAGGED);
    proto_expect_pattern(ph->ubuf, RESTART_UNTAGGED, seed_to_a(gen, RESTART_MSGS));
    return peer;
}

/* Answer with RESTART_MSGS messages; free the phase's buffers. */
static void a_reply(struct efarm_ep *ep, unsigned gen, efarm_peer_t to, struct a_phase *ph)
{
    struct efarm_req *reqs[RESTART_MSGS];

    for (unsigned i = 0; i < RESTART_MSGS; i++) {
        EXPECT_RET(efarm_tsend(ep, to, ph->sbuf[i], msg_size(i), 0, RESTART_SRC_A,
                               RESTART_TAG_BASE + (int32_t)i, 0, 0, &ph->sreq[i]),
                   0);
        reqs[i] = &ph->sreq[i];
    }
    wait_all(ep, reqs, RESTART_MSGS);
    for (unsigned i = 0; i < RESTART_MSGS; i++) {
        efarm_test_context("A: reply %u to incarnation %u", i, gen);
        EXPECT_RET(ph->sreq[i].status, 0);
        free(ph->rbuf[i]);
        free(ph->sbuf[i]);
    }
}

/* The last message to an incarnation: after it, it checks that nothing else came. */
static void a_fin(struct efarm_ep *ep, efarm_peer_t to)
{
    struct efarm_req fin = {0};

    EXPECT_RET(efarm_tsend(ep, to, NULL, 0, 0, RESTART_SRC_A, RESTART_TAG_FIN, 0, 0, &fin), 0);
    wait_one(ep, &fin);
    EXPECT_RET(fin.status, 0);
}

/* Sends to the dead incarnation's handle: each must fail, none may reach B2. */
static void a_send_to_dead(struct efarm_ep *ep, efarm_peer_t dead)
{
    static uint8_t buf[20000];
    struct efarm_req sreq[3] = {{0}};
    struct efarm_req *reqs[] = {&sreq[0], &sreq[1], &sreq[2]};
    uint64_t errors = efarm_ep_counters(ep)->send_errors;

    EXPECT_RET(efarm_tsend(ep, dead, buf, 8, 0, RESTART_SRC_A, RESTART_TAG_BASE, 0, 0, &sreq[0]),
               0);
    EXPECT_RET(
        efarm_tsend(ep, dead, buf, sizeof(buf), 0, RESTART_SRC_A, RESTART_TAG_BASE, 0, 0, &sreq[1]),
        0);
    EXPECT_RET(efarm_send(ep, dead, buf, 8, 0, 0, &sreq[2]), 0);
    wait_all(ep, reqs, 3);
    for (unsigned i = 0; i < 3; i++) {
        efarm_test_context("A: send %u to the dead incarnation", i);
        EXPECT_RET(sreq[i].status, EFARM_E(DEV_REMOTE_QP));
    }
    EXPECT_EQ(efarm_ep_counters(ep)->send_errors, errors + 3);
}

static void a_main(int rfd, int wfd)
{
    static struct a_phase ph1, ph2;
    uint8_t raw[EFARM_RAW_ADDR_LEN], raw_b2[EFARM_RAW_ADDR_LEN], got[EFARM_RAW_ADDR_LEN];
    uint8_t stale_buf[RESTART_UNTAGGED];
    const struct efarm_counters *cnt;
    struct efarm_req stale = {0};
    efarm_peer_t b, b2;
    struct efarm_ep *ep;

    efarm_test_context("A: opening");
    EXPECT_RET(efarm_ep_open(NULL, &ep), 0);
    cnt = efarm_ep_counters(ep);
    efarm_ep_addr(ep, raw);
    ctl_send(wfd, CTL_ADDR, raw);

    /* Phase 1: B, whose address A inserts itself. */
    ctl_recv(rfd, CTL_PEER, "the test", raw);
    EXPECT_RET(efarm_av_insert(ep, raw, &b), 0);
    EXPECT_EQ(a_receive(ep, 1, b, &ph1), b);
    a_reply(ep, 1, b, &ph1);
    a_fin(ep, b);
    EXPECT_EQ(cnt->implicit_peers, 0);
    ctl_send(wfd, CTL_DONE, NULL);

    /*
     * Phase 2: B has exited; B2 holds its QP number. A learns B2 only from
     * its packets; raw_b2 is for checking what A learnt.
     */
    ctl_recv(rfd, CTL_PEER, "the test", raw_b2);
    efarm_test_context("A: a receive for the dead incarnation");
    EXPECT_RET(efarm_recv(ep, stale_buf, sizeof(stale_buf), b, &stale), 0);
    b2 = a_receive(ep, 2, EFARM_PEER_NONE, &ph2);
    efarm_test_context("A: the new incarnation");
    EXPECT_TRUE(b2 != b);
    EXPECT_EQ(cnt->implicit_peers, 1);
    EXPECT_RET(efarm_av_lookup(ep, b2, got), 0);
    EXPECT_MEM_EQ(got, raw_b2, EFARM_RAW_ADDR_LEN);
    EXPECT_RET(efarm_av_lookup(ep, b, got), 0);
    EXPECT_MEM_EQ(got, raw, EFARM_RAW_ADDR_LEN); /* B's entry is untouched */
    EXPECT_TRUE(!stale.done);                    /* B2's untagged message was not B's */
    a_reply(ep, 2, b2, &ph2);
    a_send_to_dead(ep, b);
    a_fin(ep, b2);

    efarm_test_context("A: the end");
    EXPECT_TRUE(!stale.done);
    EXPECT_RET(efarm_cancel_recv(ep, &stale), 0);
    EXPECT_TRUE(stale.done);
    EXPECT_RET(stale.status, -ECANCELED);
    EXPECT_EQ(cnt->stale_ids, 0);
    EXPECT_EQ(cnt->decode_errors, 0);
    EXPECT_EQ(cnt->handshakes_recv, 2);
    EXPECT_EQ(cnt->recv_errors, 0);
    efarm_ep_close(ep);
    ctl_send(wfd, CTL_DONE, NULL);
}

/* ---- The coordinator ------------------------------------------------------------------ */

static void child_start(struct child *c, const char *name, unsigned qpn,
                        void (*fn)(unsigned gen, int rfd, int wfd), unsigned gen)
{
    int down[2], up[2];
    pid_t parent = getpid();

    EXPECT_RET(pipe(down), 0);
    EXPECT_RET(pipe(up), 0);
    c->name = name;
    c->pid = fork();
    EXPECT_TRUE(c->pid >= 0);
    if (c->pid == 0) {
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
            _exit(3);
        close(down[1]);
        close(up[0]);
        if (qpn) {
            char text[16];

            snprintf(text, sizeof(text), "%u", qpn);
            setenv("EFASIM_QPN", text, 1);
        }
        fn(gen, down[0], up[1]);
        _exit(0);
    }
    close(down[0]);
    close(up[1]);
    c->to_fd = down[1];
    c->from_fd = up[0];
}

static void child_reap(struct child *c)
{
    int status;

    while (waitpid(c->pid, &status, 0) < 0)
        EXPECT_EQ(errno, EINTR);
    close(c->to_fd);
    close(c->from_fd);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        efarm_test_fail(__FILE__, __LINE__, "%s ended with status %#x", c->name, status);
}

static void a_entry(unsigned gen, int rfd, int wfd)
{
    (void)gen;
    a_main(rfd, wfd);
}

EFARM_TEST_TIMEOUT(proto_restart_same_qpn_new_connid, 90)
{
    uint8_t raw_a[EFARM_RAW_ADDR_LEN], raw_b[EFARM_RAW_ADDR_LEN], raw_b2[EFARM_RAW_ADDR_LEN];
    struct child a, b, b2;
    uint16_t qpn;

    proto_use_efasim();
    unsetenv("EFASIM_QPN");
    child_start(&a, "A", 0, a_entry, 0);
    ctl_recv(a.from_fd, CTL_ADDR, "A", raw_a);

    qpn = (uint16_t)efarm_test_free_qpns(1);
    efarm_test_context("B on QP number %u", qpn);
    child_start(&b, "B", qpn, peer_main, 1);
    ctl_recv(b.from_fd, CTL_ADDR, "B", raw_b);
    EXPECT_EQ(raw_qpn(raw_b), qpn);
    ctl_send(a.to_fd, CTL_PEER, raw_b);
    ctl_send(b.to_fd, CTL_PEER, raw_a);
    ctl_recv(b.from_fd, CTL_DONE, "B", NULL);
    child_reap(&b);
    ctl_recv(a.from_fd, CTL_DONE, "A", NULL);

    efarm_test_context("B2 on B's QP number %u", qpn);
    child_start(&b2, "B2", qpn, peer_main, 2);
    ctl_recv(b2.from_fd, CTL_ADDR, "B2", raw_b2);
    /* Same GID and QP number, another connid: only the Q-Key tells B2 from B. */
    EXPECT_MEM_EQ(raw_b2, raw_b, 18);
    EXPECT_TRUE(raw_connid(raw_b2) != raw_connid(raw_b));
    ctl_send(a.to_fd, CTL_PEER, raw_b2);
    ctl_send(b2.to_fd, CTL_PEER, raw_a);
    ctl_recv(b2.from_fd, CTL_DONE, "B2", NULL);
    ctl_recv(a.from_fd, CTL_DONE, "A", NULL);
    child_reap(&b2);
    child_reap(&a);
}
