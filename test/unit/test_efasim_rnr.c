/*
 * RNR outcomes agree with delivery, as on EFA: a send that completes with
 * IBV_WC_RNR_RETRY_EXC_ERR was never delivered, a send that completes
 * successfully was delivered exactly once, and nothing is delivered twice.
 * The protocol engine resends what completed with an RNR error, so a message
 * that failed but arrived would arrive twice.
 *
 * The race this guards against: a retransmitted, duplicated or reordered copy
 * of a send's last attempt is still on its way when the receiver refuses
 * another copy for want of a receive; a receive is posted in between, and the
 * late copy must not be taken. Small timeouts and backoffs, injected loss,
 * duplication and reordering, and a receiver that posts one of a few receives
 * at random moments make such copies common.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "efasim_common.h"

#define RNR_MSG      32   /* bytes per message: its id, then a fill named by the id */
#define RNR_WINDOW   8    /* sends in flight */
#define RNR_RECVS    4    /* receive buffers, posted one at a time at random moments */
#define RNR_GAP_US   40   /* most receives are posted within this of the one before, */
#define RNR_PAUSE_US 1500 /* one in 16 within this, outlasting every retry of a send */
#define RNR_DRAIN_S  0.2  /* how long every receive stays posted at the end */

enum rnr_outcome { RNR_PENDING, RNR_SENT, RNR_REFUSED };

static char g_rnr_seed[32]; /* EFASIM_SEED, named in failures to reproduce them */

struct rnr_run {
    struct efasim_pair p;
    struct efasim_buf sbuf, rbuf, target;
    unsigned n;
    uint8_t *outcome;  /* per message: enum rnr_outcome of its send */
    uint8_t *received; /* per message: how many times a receive took it */
    unsigned free_recv[RNR_RECVS], nfree_recv;
    unsigned free_send[RNR_WINDOW], nfree_send;
    unsigned sent, refused;
};

static void set_stress_env(void)
{
    snprintf(g_rnr_seed, sizeof(g_rnr_seed), "%" PRIu64, efarm_test_rand() % 1000000);
    efasim_setenv("EFASIM_SEED", g_rnr_seed);
    efasim_setenv("EFASIM_RTO_US", "100");
    efasim_setenv("EFASIM_RTO_MAX_US", "2000");
    efasim_setenv("EFASIM_RNR_BACKOFF_US", "20");
    efasim_setenv("EFASIM_LOSS", "0.05");
    efasim_setenv("EFASIM_DUP", "0.1");
    efasim_setenv("EFASIM_REORDER", "0.2");
    efasim_setenv("EFASIM_DELAY", "0.02");
    efasim_setenv("EFASIM_DELAY_US", "200");
    efasim_setenv("EFASIM_RDMA_WRITE", "1");
    efasim_require_rdma_write(); /* refused writes with immediate show in their slots */
}

static void rnr_open(struct rnr_run *r, uint8_t rnr_retry, unsigned n)
{
    struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;

    memset(r, 0, sizeof(*r));
    opts.rnr_retry = rnr_retry;
    opts.send_ops_flags |= EFASIM_SEND_OPS_RDMA_WRITE;
    efasim_pair_open(&r->p, &opts, &opts);
    efasim_buf_alloc(&r->p.dev, (size_t)RNR_WINDOW * RNR_MSG, EFASIM_ACCESS_ALL, &r->sbuf);
    efasim_buf_alloc(&r->p.dev, (size_t)RNR_RECVS * RNR_MSG, EFASIM_ACCESS_ALL, &r->rbuf);
    /* Every RDMA write with immediate lands in its own slot, so a refused one can be seen. */
    efasim_buf_alloc(&r->p.dev, (size_t)n * RNR_MSG, EFASIM_ACCESS_ALL, &r->target);
    memset(r->target.addr, 0, r->target.len);
    r->n = n;
    r->outcome = calloc(n, 1);
    r->received = calloc(n, 1);
    EXPECT_TRUE(r->outcome && r->received);
    for (unsigned i = 0; i < RNR_RECVS; i++)
        r->free_recv[r->nfree_recv++] = i;
    for (unsigned i = 0; i < RNR_WINDOW; i++)
        r->free_send[r->nfree_send++] = i;
}

static void rnr_close(struct rnr_run *r)
{
    efasim_buf_free(&r->sbuf);
    efasim_buf_free(&r->rbuf);
    efasim_buf_free(&r->target);
    efasim_pair_close(&r->p);
    free(r->outcome);
    free(r->received);
}

/* Message id goes as a send or, one in four, as an RDMA write with immediate data id. */
static void rnr_post(struct rnr_run *r, unsigned id)
{
    unsigned slot = r->free_send[--r->nfree_send];
    uint8_t *msg = r->sbuf.addr + (size_t)slot * RNR_MSG;
    uint64_t wr_id = (uint64_t)id << 8 | slot;

    memcpy(msg, &id, 4);
    efasim_fill(msg + 4, RNR_MSG - 4, id);
    if (id % 4 == 3)
        EXPECT_EQ(efasim_rdma_write_imm(&r->p.tx, &r->p.to_rx, wr_id, &r->sbuf,
                                        (size_t)slot * RNR_MSG, RNR_MSG, r->target.mr->rkey,
                                        (uintptr_t)(r->target.addr + (size_t)id * RNR_MSG), id),
                  0);
    else
        EXPECT_EQ(
            efasim_send(&r->p.tx, &r->p.to_rx, wr_id, &r->sbuf, (size_t)slot * RNR_MSG, RNR_MSG),
            0);
}

static bool rnr_poll_send(struct rnr_run *r)
{
    struct efasim_wc wc;
    unsigned id;

    if (!efasim_poll_one(r->p.tx.send_cq, &wc))
        return false;
    id = (unsigned)(wc.wr_id >> 8);
    efarm_test_context("EFASIM_SEED=%s, message %u", g_rnr_seed, id);
    EXPECT_TRUE(id < r->n);
    EXPECT_EQ(r->outcome[id], RNR_PENDING);
    if (wc.status == IBV_WC_RNR_RETRY_EXC_ERR) {
        EXPECT_EQ(wc.vendor_err, EFASIM_VENDOR_RNR);
        r->outcome[id] = RNR_REFUSED;
        r->refused++;
    } else {
        EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
        r->outcome[id] = RNR_SENT;
        r->sent++;
    }
    r->free_send[r->nfree_send++] = wc.wr_id & 0xff;
    return true;
}

static void rnr_poll_recv(struct rnr_run *r)
{
    struct efasim_wc wc;
    const uint8_t *msg;
    unsigned id;

    if (!efasim_poll_one(r->p.rx.recv_cq, &wc))
        return;
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_TRUE(wc.wr_id < RNR_RECVS);
    if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
        id = wc.imm;
        efarm_test_context("EFASIM_SEED=%s, message %u, an RDMA write with immediate", g_rnr_seed,
                           id);
        EXPECT_TRUE(id < r->n);
        msg = r->target.addr + (size_t)id * RNR_MSG;
    } else {
        EXPECT_EQ(wc.opcode, IBV_WC_RECV);
        msg = r->rbuf.addr + wc.wr_id * RNR_MSG;
        memcpy(&id, msg, 4);
        efarm_test_context("EFASIM_SEED=%s, message %u, a send", g_rnr_seed, id);
        EXPECT_TRUE(id < r->n);
        EXPECT_EQ(wc.byte_len, RNR_MSG);
    }
    EXPECT_EQ(efasim_check_fill(msg + 4, RNR_MSG - 4, id), RNR_MSG - 4);
    if (r->received[id] < UINT8_MAX)
        r->received[id]++;
    r->free_recv[r->nfree_recv++] = (unsigned)wc.wr_id;
}

static void rnr_post_recv(struct rnr_run *r)
{
    unsigned slot = r->free_recv[--r->nfree_recv];

    efasim_post_recv(&r->p.rx, slot, &r->rbuf, (size_t)slot * RNR_MSG, RNR_MSG);
}

/*
 * Receives come one at a time, mostly within RNR_GAP_US of each other, now
 * and then after a pause long enough to outlast every retry of a send.
 */
static double rnr_next_gap(void)
{
    uint64_t x = efarm_test_rand();

    if (x % 16 == 0)
        return (double)(x / 16 % RNR_PAUSE_US) * 1e-6;
    return (double)(x / 16 % RNR_GAP_US) * 1e-6;
}

/*
 * Every message's outcome against what arrived: counts each kind of
 * disagreement and fails naming the first message of each.
 */
static void rnr_check(const struct rnr_run *r, uint8_t rnr_retry)
{
    unsigned lost = 0, twice = 0, refused_got = 0, first_lost = 0, first_twice = 0,
             first_refused_got = 0;

    for (unsigned id = r->n; id-- > 0;) {
        if (r->received[id] > 1) {
            twice++;
            first_twice = id;
        }
        if (r->outcome[id] == RNR_SENT && !r->received[id]) {
            lost++;
            first_lost = id;
        }
        /* A refused RDMA write with immediate wrote nothing either. */
        if (r->outcome[id] != RNR_SENT &&
            (r->received[id] ||
             (id % 4 == 3 &&
              efasim_check_byte(r->target.addr + (size_t)id * RNR_MSG, RNR_MSG, 0) != RNR_MSG))) {
            refused_got++;
            first_refused_got = id;
        }
    }
    if (lost || twice || refused_got)
        efarm_test_fail(__FILE__, __LINE__,
                        "EFASIM_SEED=%s, rnr_retry %u, %u sent and %u refused of %u: "
                        "%u refused but delivered (first %u), "
                        "%u sent but never received (first %u), "
                        "%u received twice (first %u)",
                        g_rnr_seed, rnr_retry, r->sent, r->refused, r->n, refused_got,
                        first_refused_got, lost, first_lost, twice, first_twice);
}

/*
 * n messages with rnr_retry as given; then every receive stays posted for a
 * while, so a refused message that still arrives is seen, and the outcomes
 * are checked against what arrived.
 */
static void rnr_stress(uint8_t rnr_retry, unsigned n, struct rnr_run *r)
{
    unsigned next = 0, done = 0;
    double deadline, post_at, drain_end;

    efarm_test_context("EFASIM_SEED=%s, rnr_retry %u", g_rnr_seed, rnr_retry);
    rnr_open(r, rnr_retry, n);
    deadline = efasim_now() + 20;
    post_at = efasim_now() + rnr_next_gap();
    while (done < n) {
        double now = efasim_now();

        if (now > deadline)
            efarm_test_fail(__FILE__, __LINE__,
                            "EFASIM_SEED=%s, rnr_retry %u: %u of %u sends completed", g_rnr_seed,
                            rnr_retry, done, n);
        if (next < n && r->nfree_send)
            rnr_post(r, next++);
        while (rnr_poll_send(r))
            done++;
        rnr_poll_recv(r);
        if (r->nfree_recv && now >= post_at) {
            rnr_post_recv(r);
            post_at = now + rnr_next_gap();
        }
    }
    drain_end = efasim_now() + RNR_DRAIN_S;
    while (efasim_now() < drain_end) {
        while (r->nfree_recv)
            rnr_post_recv(r);
        rnr_poll_recv(r);
    }
    rnr_check(r, rnr_retry);
}

/* rnr_retry 0, 1 and 2: both outcomes occur, and each agrees with what the receiver got. */
EFARM_TEST_TIMEOUT(efasim_rnr_outcome_matches_delivery, 60)
{
    set_stress_env();
    for (uint8_t retry = 0; retry <= 2; retry++) {
        struct rnr_run r;

        rnr_stress(retry, 3000, &r);
        efarm_test_context("EFASIM_SEED=%s, rnr_retry %u: %u sent, %u refused", g_rnr_seed, retry,
                           r.sent, r.refused);
        EXPECT_TRUE(r.sent > 0);
        EXPECT_TRUE(r.refused > 0);
        rnr_close(&r);
    }
}

/* rnr_retry 7 never gives up: under the same faults every message arrives exactly once. */
EFARM_TEST_TIMEOUT(efasim_rnr_infinite_under_faults, 60)
{
    struct rnr_run r;

    set_stress_env();
    rnr_stress(EFASIM_RNR_RETRY_INFINITE, 2000, &r);
    EXPECT_EQ(r.refused, 0);
    EXPECT_EQ(r.sent, 2000);
    rnr_close(&r);
}

/*
 * RNR storms (EFASIM_RNR_STALL_US): one send at a time to a receiver that
 * always has every receive posted, so only a stall can refuse one. With
 * rnr_retry 0 some are refused; each outcome still agrees with delivery.
 */
static void storm_run(uint8_t rnr_retry, unsigned n, struct rnr_run *r)
{
    unsigned next = 0, done = 0;
    double deadline, drain_end;

    efarm_test_context("EFASIM_SEED=%s, rnr_retry %u, RNR storms", g_rnr_seed, rnr_retry);
    rnr_open(r, rnr_retry, n);
    while (r->nfree_recv)
        rnr_post_recv(r);
    deadline = efasim_now() + 20;
    while (done < n) {
        if (efasim_now() > deadline)
            efarm_test_fail(__FILE__, __LINE__,
                            "EFASIM_SEED=%s, rnr_retry %u: %u of %u sends completed", g_rnr_seed,
                            rnr_retry, done, n);
        if (next == done && next < n)
            rnr_post(r, next++);
        while (rnr_poll_send(r))
            done++;
        rnr_poll_recv(r);
        while (r->nfree_recv)
            rnr_post_recv(r);
    }
    drain_end = efasim_now() + RNR_DRAIN_S;
    while (efasim_now() < drain_end) {
        rnr_poll_recv(r);
        while (r->nfree_recv)
            rnr_post_recv(r);
    }
    rnr_check(r, rnr_retry);
}

static void set_storm_env(const char *stall_us)
{
    snprintf(g_rnr_seed, sizeof(g_rnr_seed), "%" PRIu64, efarm_test_rand() % 1000000);
    efasim_setenv("EFASIM_SEED", g_rnr_seed);
    efasim_setenv("EFASIM_RNR_BACKOFF_US", "50");
    efasim_setenv("EFASIM_RNR_STALL_US", stall_us);
    efasim_setenv("EFASIM_RNR_STALL_PERIOD_US", "4000");
    efasim_setenv("EFASIM_RDMA_WRITE", "1");
    efasim_require_rdma_write();
}

EFARM_TEST_TIMEOUT(efasim_rnr_storm_refuses_posted_receiver, 60)
{
    struct rnr_run r;

    set_storm_env("2000");
    storm_run(0, 400, &r);
    efarm_test_context("EFASIM_SEED=%s: %u sent, %u refused", g_rnr_seed, r.sent, r.refused);
    EXPECT_TRUE(r.refused > 0);
    EXPECT_TRUE(r.sent > 0);
    rnr_close(&r);
}

/* The same without storms: nothing is refused, so the refusals above are the storms'. */
EFARM_TEST_TIMEOUT(efasim_rnr_no_storm_refuses_nothing, 60)
{
    struct rnr_run r;

    set_storm_env("0");
    storm_run(0, 400, &r);
    EXPECT_EQ(r.refused, 0);
    EXPECT_EQ(r.sent, 400);
    rnr_close(&r);
}

/* rnr_retry 7 rides out every storm: all arrive, once. */
EFARM_TEST_TIMEOUT(efasim_rnr_storm_infinite_delivers_all, 60)
{
    struct rnr_run r;

    set_storm_env("2000");
    storm_run(EFASIM_RNR_RETRY_INFINITE, 400, &r);
    EXPECT_EQ(r.refused, 0);
    EXPECT_EQ(r.sent, 400);
    rnr_close(&r);
}
