/*
 * The engine suite, part 12 (see proto_rig.h): many unexpected messages.
 *
 * MPI puts no limit on messages that arrive before their receives, and
 * many-to-one patterns at scale produce thousands. The sender here sends far
 * more messages than the engine has operations (EFARM_MAX_OPS) before the
 * receiver posts anything, then one more on another tag, which the receiver
 * waits for first (an MPI_Barrier after the flood does exactly this): that
 * message is behind the whole flood in msg_id order, so it arrives only if
 * every message of the flood found room. Then the receiver receives the flood
 * and checks every byte and the order. And when the real budget, the bytes
 * of EFARM_UNEXP_MAX_BYTES, is too small for the flood, the receiver must
 * fail with an error naming that knob instead of waiting forever.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "efarm_errno.h"
#include "efarm_pool.h"
#include "efarm_proto.h"
#include "efarm_tm.h"
#include "efarm_test.h"
#include "proto_common.h"
#include "proto_rig.h"

#define FLOOD_TAG   21
#define BARRIER_TAG 22
#define FLOOD_WAIT  60.0 /* seconds for any one phase */

/* One flood: message i is len[i] bytes of pattern i from src[i]. */
struct flood {
    unsigned n;
    uint64_t *len, *buf_len;
    uint8_t **src, **dst;
    struct efarm_req *sreq, *rreq;
};

static void flood_init(struct flood *f, unsigned n, uint64_t (*size)(const struct rig *, unsigned),
                       const struct rig *r)
{
    f->n = n;
    f->len = calloc(n, sizeof(*f->len));
    f->buf_len = calloc(n, sizeof(*f->buf_len));
    f->src = calloc(n, sizeof(*f->src));
    f->dst = calloc(n, sizeof(*f->dst));
    f->sreq = calloc(n, sizeof(*f->sreq));
    f->rreq = calloc(n, sizeof(*f->rreq));
    EXPECT_TRUE(f->len && f->buf_len && f->src && f->dst && f->sreq && f->rreq);
    for (unsigned i = 0; i < n; i++) {
        f->len[i] = size(r, i);
        f->buf_len[i] = f->len[i] + 64; /* receive buffers longer than the message: guard */
        f->src[i] = malloc(f->len[i] + 1);
        f->dst[i] = malloc(f->buf_len[i] + GUARD);
        EXPECT_TRUE(f->src[i] != NULL && f->dst[i] != NULL);
        proto_fill(f->src[i], f->len[i], i);
        memset(f->dst[i], GUARD_BYTE, f->buf_len[i] + GUARD);
    }
}

static void flood_free(struct flood *f)
{
    for (unsigned i = 0; i < f->n; i++) {
        free(f->src[i]);
        free(f->dst[i]);
    }
    free(f->len);
    free(f->buf_len);
    free(f->src);
    free(f->dst);
    free(f->sreq);
    free(f->rreq);
}

/* Progress both endpoints once; the receiver's progress must not fail. */
static void pump2(struct proto_pair *p)
{
    EXPECT_TRUE(efarm_ep_progress(p->a) >= 0);
    EXPECT_TRUE(efarm_ep_progress(p->b) >= 0);
}

/* a sends the whole flood, as MPI_Send does (inject), retrying while it has no free slot. */
static void flood_send(struct rig *r, struct flood *f)
{
    double deadline = proto_now_s() + FLOOD_WAIT;

    for (unsigned i = 0; i < f->n; i++) {
        int ret;

        while ((ret = efarm_tsend(r->p.a, r->p.a_to_b, f->src[i], f->len[i], CTX, SRC, FLOOD_TAG,
                                  EFARM_SEND_INJECT, 0, &f->sreq[i])) == -EAGAIN) {
            if (proto_now_s() > deadline)
                efarm_test_fail(__FILE__, __LINE__,
                                "the sender could send only %u of %u messages in %.0f s", i, f->n,
                                FLOOD_WAIT);
            pump2(&r->p);
        }
        EXPECT_RET(ret, 0);
    }
}

/* One message on BARRIER_TAG after the flood; the receiver waits for it before receiving any. */
static void flood_barrier(struct rig *r, const struct flood *f)
{
    uint8_t out = 0x5a, in = 0;
    struct efarm_req s = {0}, rr = {0};
    double deadline = proto_now_s() + FLOOD_WAIT;

    EXPECT_RET(efarm_trecv(r->p.b, &in, 1, CTX, SRC, BARRIER_TAG, &rr), 0);
    while (efarm_tsend(r->p.a, r->p.a_to_b, &out, 1, CTX, SRC, BARRIER_TAG, EFARM_SEND_INJECT, 0,
                       &s) == -EAGAIN)
        pump2(&r->p);
    while (!rr.done || !s.done) {
        if (proto_now_s() > deadline)
            efarm_test_fail(__FILE__, __LINE__,
                            "the message sent after %u unexpected ones did not arrive in %.0f s "
                            "(%llu unexpected, %llu deferred, %llu held receive buffers)",
                            f->n, FLOOD_WAIT, (unsigned long long)cnt(r->p.b)->unexpected,
                            (unsigned long long)cnt(r->p.b)->deferred,
                            (unsigned long long)cnt(r->p.b)->held_rx);
        pump2(&r->p);
    }
    EXPECT_RET(rr.status, 0);
    EXPECT_EQ(in, 0x5a);
}

/* b receives the flood in order (a receive may wait for a free slot) and checks every byte. */
static void flood_receive_check(struct rig *r, struct flood *f)
{
    double deadline = proto_now_s() + FLOOD_WAIT;
    unsigned done = 0;

    for (unsigned i = 0; i < f->n; i++) {
        int ret;

        while ((ret = efarm_trecv(r->p.b, f->dst[i], f->buf_len[i], CTX, SRC, FLOOD_TAG,
                                  &f->rreq[i])) == -EAGAIN) {
            if (proto_now_s() > deadline)
                efarm_test_fail(__FILE__, __LINE__, "receive %u of %u found no slot", i, f->n);
            pump2(&r->p);
        }
        EXPECT_RET(ret, 0);
    }
    while (done < f->n) {
        if (proto_now_s() > deadline)
            efarm_test_fail(__FILE__, __LINE__, "%u of %u receives done", done, f->n);
        pump2(&r->p);
        for (done = 0; done < f->n && f->rreq[done].done && f->sreq[done].done; done++)
            ;
    }
    for (unsigned i = 0; i < f->n; i++) {
        efarm_test_context("flood message %u of %u, %llu bytes", i, f->n,
                           (unsigned long long)f->len[i]);
        EXPECT_RET(f->sreq[i].status, 0);
        EXPECT_RET(f->rreq[i].status, 0);
        EXPECT_EQ(f->rreq[i].length, f->len[i]); /* receives take messages in send order */
        EXPECT_EQ(f->rreq[i].msg_length, f->len[i]);
        EXPECT_EQ(f->rreq[i].tag, FLOOD_TAG);
        proto_expect_pattern(f->dst[i], f->len[i], i);
        expect_guard(f->dst[i], f->len[i], f->buf_len[i] + GUARD);
    }
    efarm_test_context("after the flood");
}

/* 1 to 64 bytes, changing with every message. */
static uint64_t size_small(const struct rig *r, unsigned i)
{
    (void)r;
    return 1 + (i * 37u) % 64;
}

/* Small ones, with medium, long-CTS and read-sized messages among them (g_small thresholds). */
static uint64_t size_mixed(const struct rig *r, unsigned i)
{
    uint64_t e = eager_fit(r, true, false, false, false);

    switch (i % 100) {
    case 99: /* runting read or long-read */
        return r->read_min + (i * 131u) % 40000;
    case 49: /* long-CTS */
        return r->medium_max + 1 + (i * 17u) % (r->read_min - r->medium_max - 2);
    case 5:
    case 15:
    case 25:
    case 35:
    case 45:
    case 55:
    case 65:
    case 75:
    case 85:
    case 95: /* medium */
        return e + 1 + (i * 7u) % (r->medium_max - e - 1);
    default:
        return 1 + (i * 13u) % 200;
    }
}

static void flood_run(const struct efarm_ep_attr *attr, unsigned n,
                      uint64_t (*size)(const struct rig *, unsigned), unsigned max_ops)
{
    struct efarm_ep_attr a = attr ? *attr : (struct efarm_ep_attr){0};
    struct rig r;
    struct flood f;

    rig_open(&r, &a, &a);
    rig_handshake(&r);
    EXPECT_TRUE(n > 10 * max_ops);
    flood_init(&f, n, size, &r);
    flood_send(&r, &f);
    flood_barrier(&r, &f);
    EXPECT_EQ(cnt(r.p.b)->unexpected, n);
    flood_receive_check(&r, &f);
    EXPECT_EQ(cnt(r.p.b)->unexpected, n);
    flood_free(&f);
    rig_close(&r);
}

/*
 * 100000 small messages before any receive, 24 times the operation table
 * (EFARM_MAX_OPS, 4096): each waits with a record and its packet, no
 * operation; all of them and the message after them arrive.
 */
EFARM_TEST_TIMEOUT(proto_unexpected_flood_100k, 300)
{
    flood_run(NULL, 100000, size_small, 4096);
}

/*
 * 20000 messages of every subprotocol (small, 1 in 10 medium, 1 in 100
 * long-CTS, 1 in 100 runting read or long-read) before any receive, with a
 * table of 1024 operations: the long ones' senders wait for CTS or EOR, the
 * rest only needs room; then every one is received intact and in order.
 */
EFARM_TEST_TIMEOUT(proto_unexpected_flood_mixed, 300)
{
    struct efarm_ep_attr attr = g_small;

    attr.max_ops = 1024;
    flood_run(&attr, 20000, size_mixed, 1024);
}

/* ---- The budget ------------------------------------------------------------------------- */

/*
 * A receiver whose budget is far too small for the flood: 16 receive
 * buffers, copies capped at 64 KiB. The flood fills it, every receive
 * buffer ends up holding a waiting packet and nothing more can arrive,
 * including the message the receiver waits for. The receiver must say so
 * once, naming EFARM_UNEXP_MAX_BYTES, and after EFARM_RX_FULL_TIMEOUT_MS of
 * waiting fail (progress returns EFARM_E(PROTO_RX_FULL)), not wait forever.
 */
EFARM_TEST_TIMEOUT(proto_unexpected_budget_exhausted, 60)
{
    enum { N = 400 };
    char log_path[256];
    struct efarm_ep_attr attr_b = {
        .rx_buffers = 16, .unexp_bytes = 16384, .unexp_max_bytes = 65536};
    uint8_t *buf = calloc(N, 2000);
    struct efarm_req *sreq = calloc(N + 1, sizeof(*sreq));
    struct efarm_req rr = {0};
    uint8_t in = 0, out = 1;
    double deadline;
    struct rig r;
    int saved, ret = 0;

    proto_tmp_path(log_path, sizeof(log_path), "rxfull");
    setenv("EFARM_RX_FULL_TIMEOUT_MS", "300", 1);
    rig_open(&r, NULL, &attr_b);
    rig_handshake(&r);
    saved = proto_stderr_capture(log_path);
    EXPECT_RET(efarm_trecv(r.p.b, &in, 1, CTX, SRC, BARRIER_TAG, &rr), 0);
    deadline = proto_now_s() + 20;
    for (unsigned i = 0; i <= N && ret >= 0; i++) {
        int s;

        while ((s = efarm_tsend(r.p.a, r.p.a_to_b, i < N ? buf + 2000 * i : &out, i < N ? 2000 : 1,
                                CTX, SRC, i < N ? FLOOD_TAG : BARRIER_TAG, EFARM_SEND_INJECT, 0,
                                &sreq[i])) == -EAGAIN &&
               (ret = efarm_ep_progress(r.p.b)) >= 0 && proto_now_s() < deadline)
            EXPECT_TRUE(efarm_ep_progress(r.p.a) >= 0);
        EXPECT_TRUE(s == 0 || ret < 0);
    }
    while (ret >= 0 && !rr.done && proto_now_s() < deadline) {
        EXPECT_TRUE(efarm_ep_progress(r.p.a) >= 0);
        ret = efarm_ep_progress(r.p.b);
    }
    EXPECT_TRUE(!rr.done);
    EXPECT_RET(ret, EFARM_E(PROTO_RX_FULL));
    EXPECT_RET(efarm_ep_progress(r.p.b), EFARM_E(PROTO_RX_FULL)); /* and from then on */
    EXPECT_TRUE(cnt(r.p.b)->rx_full >= 1);
    proto_stderr_restore(saved);
    EXPECT_EQ(proto_file_count(log_path, "nothing more can be received"), 1);
    EXPECT_EQ(proto_file_count(log_path, "the endpoint fails. Raise EFARM_UNEXP_MAX_BYTES"), 1);
    EXPECT_TRUE(proto_file_count(log_path, "EFARM_UNEXP_MAX_BYTES=65536") >= 2);
    unlink(log_path);
    proto_pair_close(&r.p);
    free(sreq);
    free(buf);
}

/* ---- The matcher's unexpected entries ----------------------------------------------------- */

#define TM_USER(i) ((void *)(uintptr_t)(0x1000 + (i)))

/*
 * The matcher creates unexpected entries 1024 at a time as messages wait, up
 * to its maximum: 5000 messages with distinct keys all queue, the next is
 * refused (-EAGAIN), probes and claims find entries of every chunk by
 * handle, receives posted in reverse take each its own message, and the
 * entries are reused afterwards. A chunk that cannot be allocated refuses the
 * message (-ENOMEM) and changes nothing.
 */
EFARM_TEST(proto_unexpected_matcher_grows)
{
    enum { N = 5000 };
    static const unsigned claimed[] = {0, 1023, 1024, 2500, N - 1};
    struct efarm_tm *tm;
    efarm_tm_handle_t h;
    void *got = NULL;

    EXPECT_RET(efarm_tm_open(4, N, &tm), 0);
    EXPECT_TRUE(efarm_tm_unexpected_entry_size() > 0);
    for (unsigned round = 0; round < 2; round++) {
        for (unsigned i = 0; i < N; i++)
            EXPECT_RET(efarm_tm_arrive(tm, 1, (int32_t)(i % 7), (int32_t)i, TM_USER(i), &got),
                       EFARM_TM_QUEUED);
        EXPECT_RET(efarm_tm_arrive(tm, 1, 0, N, TM_USER(N), &got), -EAGAIN);
        EXPECT_EQ(efarm_tm_unexpected_count(tm), N);
        EXPECT_RET(efarm_tm_would_match(tm, 1, 0, 0), 0);
        for (unsigned k = 0; k < sizeof(claimed) / sizeof(claimed[0]); k++) {
            unsigned i = claimed[k];

            EXPECT_RET(efarm_tm_probe(tm, 1, EFARM_TM_ANY_SOURCE, (int32_t)i, &h, &got), 1);
            EXPECT_EQ((uintptr_t)got, (uintptr_t)TM_USER(i));
            EXPECT_RET(efarm_tm_claim(tm, h, &got), 0);
            EXPECT_EQ((uintptr_t)got, (uintptr_t)TM_USER(i));
            EXPECT_RET(efarm_tm_claim(tm, h, &got), -ENOENT);
        }
        for (unsigned i = N; i-- > 0;) {
            bool was_claimed = false;

            for (unsigned k = 0; k < sizeof(claimed) / sizeof(claimed[0]); k++)
                was_claimed |= claimed[k] == i;
            if (was_claimed)
                continue;
            got = NULL;
            EXPECT_RET(
                efarm_tm_post(tm, 1, (int32_t)(i % 7), (int32_t)i, TM_USER(100000), &h, &got),
                EFARM_TM_MATCHED);
            EXPECT_EQ((uintptr_t)got, (uintptr_t)TM_USER(i));
        }
        EXPECT_EQ(efarm_tm_unexpected_count(tm), 0);
    }
    /* A posted receive is seen by would_match, which changes nothing. */
    EXPECT_RET(efarm_tm_post(tm, 1, 3, 77, TM_USER(1), &h, &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_would_match(tm, 1, 3, 77), 1);
    EXPECT_RET(efarm_tm_would_match(tm, 1, 3, 78), 0);
    EXPECT_EQ(efarm_tm_posted_count(tm), 1);
    efarm_tm_close(tm);

    /* Growth that fails: the first and the second allocation of a chunk. */
    EXPECT_RET(efarm_tm_open(4, 3000, &tm), 0);
    for (unsigned i = 0; i < 1024; i++)
        EXPECT_RET(efarm_tm_arrive(tm, 2, 1, (int32_t)i, TM_USER(i), &got), EFARM_TM_QUEUED);
    for (unsigned fail = 1; fail <= 2; fail++) {
        efarm_alloc_fail_at(fail);
        EXPECT_RET(efarm_tm_arrive(tm, 2, 1, 5000, TM_USER(5000), &got), -ENOMEM);
        efarm_alloc_fail_at(0);
        EXPECT_EQ(efarm_tm_unexpected_count(tm), 1024);
        EXPECT_RET(efarm_tm_probe(tm, 2, 1, 5000, &h, &got), 0);
    }
    EXPECT_RET(efarm_tm_arrive(tm, 2, 1, 5000, TM_USER(5000), &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_probe(tm, 2, EFARM_TM_ANY_SOURCE, EFARM_TM_ANY_TAG, &h, &got), 1);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)TM_USER(0)); /* still the earliest first */
    efarm_tm_close(tm);
}
