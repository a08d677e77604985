/*
 * The protocol engine's first check: one tagged message of every
 * subprotocol between two endpoints on efasim, receive posted first and
 * after, with data checked. The exhaustive suites are test_proto_*.c (engine
 * to engine) and test_wire_*.c (the wire, against a hand-driven peer).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "efarm_errno.h"
#include "efarm_test.h"
#include "proto_common.h"

EFARM_TEST_TIMEOUT(proto_smoke_every_subprotocol, 60)
{
    static const uint64_t sizes[] = {0, 100, 20000, 300000, 2u << 20};
    static const uint8_t protos[] = {EFARM_PROTO_EAGER, EFARM_PROTO_EAGER, EFARM_PROTO_MEDIUM,
                                     EFARM_PROTO_LONGCTS, EFARM_PROTO_RUNTREAD};
    struct proto_pair p;

    proto_use_efasim();
    proto_pair_open(&p, NULL, NULL);
    for (unsigned posted_first = 0; posted_first < 2; posted_first++) {
        for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            uint8_t *src = malloc(sizes[i] + 1), *dst = calloc(1, sizes[i] + 1);
            struct efarm_req sreq = {0}, rreq = {0};
            struct efarm_req *reqs[] = {&sreq, &rreq};

            efarm_test_context("size %llu, receive %s", (unsigned long long)sizes[i],
                               posted_first ? "posted first" : "posted after");
            proto_fill(src, sizes[i], i);
            if (posted_first)
                EXPECT_RET(efarm_trecv(p.b, dst, sizes[i], 1, 2, 3, &rreq), 0);
            EXPECT_RET(efarm_tsend(p.a, p.a_to_b, src, sizes[i], 1, 2, 3, 0, 0, &sreq), 0);
            if (!posted_first) {
                proto_pair_spin(&p, 2000);
                EXPECT_RET(efarm_trecv(p.b, dst, sizes[i], 1, 2, 3, &rreq), 0);
            }
            proto_pair_wait(&p, reqs, 2, 20);
            EXPECT_RET(sreq.status, 0);
            EXPECT_RET(rreq.status, 0);
            EXPECT_EQ(sreq.proto, protos[i]);
            EXPECT_EQ(rreq.length, sizes[i]);
            EXPECT_EQ(rreq.source, 2);
            EXPECT_EQ(rreq.tag, 3);
            EXPECT_EQ(rreq.peer, p.b_to_a);
            proto_expect_pattern(dst, sizes[i], i);
            free(src);
            free(dst);
        }
    }
    proto_pair_close(&p);
}

/*
 * An endpoint sends to its own address (MPI does, on a multi-rank
 * communicator): every subprotocol, through the device and back.
 */
EFARM_TEST_TIMEOUT(proto_smoke_send_to_self, 60)
{
    static const uint64_t sizes[] = {0, 100, 20000, 300000, 2u << 20};
    uint8_t raw[EFARM_RAW_ADDR_LEN];
    struct efarm_ep *ep;
    efarm_peer_t self;

    proto_use_efasim();
    EXPECT_RET(efarm_ep_open(NULL, &ep), 0);
    efarm_ep_addr(ep, raw);
    EXPECT_RET(efarm_av_insert(ep, raw, &self), 0);
    for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        uint8_t *src = malloc(sizes[i] + 1), *dst = calloc(1, sizes[i] + 1);
        struct efarm_req sreq = {0}, rreq = {0};
        struct efarm_req *reqs[] = {&sreq, &rreq};

        efarm_test_context("size %llu", (unsigned long long)sizes[i]);
        proto_fill(src, sizes[i], i + 10);
        EXPECT_RET(efarm_tsend(ep, self, src, sizes[i], 4, 0, 1, 0, 0, &sreq), 0);
        EXPECT_RET(efarm_trecv(ep, dst, sizes[i], 4, 0, 1, &rreq), 0);
        proto_wait(&ep, 1, reqs, 2, 20);
        EXPECT_RET(sreq.status, 0);
        EXPECT_RET(rreq.status, 0);
        EXPECT_EQ(rreq.peer, self);
        EXPECT_EQ(rreq.length, sizes[i]);
        proto_expect_pattern(dst, sizes[i], i + 10);
        free(src);
        free(dst);
    }
    EXPECT_EQ(efarm_ep_counters(ep)->implicit_peers, 0);
    efarm_ep_close(ep);
}

/*
 * Untagged probes: peek from any peer and from one, claim, then receive the
 * claimed message (eager and medium) with efarm_tmrecv; a claimed message no
 * longer matches a posted receive.
 */
EFARM_TEST_TIMEOUT(proto_smoke_untagged_probe_claim, 30)
{
    static const uint64_t sizes[] = {64, 30000};
    struct efarm_probe_info info;
    struct proto_pair p;
    const uint64_t *arrivals;
    uint64_t seen;

    proto_use_efasim();
    proto_pair_open(&p, NULL, NULL);
    arrivals = efarm_ep_untagged_arrivals(p.b);
    for (unsigned i = 0; i < 2; i++) {
        uint8_t *src = malloc(sizes[i]), *dst = calloc(1, sizes[i]);
        struct efarm_req sreq = {0}, rreq = {0}, other = {0};
        struct efarm_req *reqs[] = {&sreq, &rreq};
        double deadline = proto_now_s() + 10;

        efarm_test_context("size %llu", (unsigned long long)sizes[i]);
        proto_fill(src, sizes[i], i + 20);
        EXPECT_RET(efarm_probe(p.b, EFARM_PEER_NONE, false, &info), 0);
        seen = *arrivals;
        EXPECT_RET(efarm_send(p.a, p.a_to_b, src, sizes[i], 0, 0, &sreq), 0);
        while (efarm_probe(p.b, EFARM_PEER_NONE, false, &info) == 0 && proto_now_s() < deadline)
            proto_pair_spin(&p, 100);
        /* The arrival counter said so: it grew by the one message. */
        EXPECT_EQ(*arrivals, seen + 1);
        EXPECT_EQ(info.peer, p.b_to_a);
        EXPECT_EQ(info.context, EFARM_CTX_UNTAGGED);
        EXPECT_EQ(info.msg_length, sizes[i]);
        EXPECT_RET(efarm_probe(p.b, p.b_to_a, true, &info), 1);
        EXPECT_TRUE(info.handle != 0);
        /* Claimed: a posted receive does not get it, and a second claim finds nothing. */
        EXPECT_RET(efarm_recv(p.b, dst, sizes[i], EFARM_PEER_NONE, &other), 0);
        EXPECT_RET(efarm_probe(p.b, EFARM_PEER_NONE, false, &info), 0);
        EXPECT_RET(efarm_tmrecv(p.b, info.handle, dst, sizes[i], &rreq), 0);
        proto_pair_wait(&p, reqs, 2, 10);
        EXPECT_RET(rreq.status, 0);
        EXPECT_EQ(rreq.length, sizes[i]);
        proto_expect_pattern(dst, sizes[i], i + 20);
        EXPECT_TRUE(!other.done);
        EXPECT_RET(efarm_cancel_recv(p.b, &other), 0);
        EXPECT_RET(efarm_tmrecv(p.b, info.handle, dst, sizes[i], &rreq), -ENOENT);
        free(src);
        free(dst);
    }
    /* A tagged message queued unexpected is no untagged arrival. */
    {
        struct efarm_req sreq = {0}, rreq = {0};
        struct efarm_req *reqs[] = {&sreq, &rreq};
        double deadline = proto_now_s() + 10;
        uint64_t word = 7, got = 0;

        seen = *arrivals;
        EXPECT_RET(efarm_tsend(p.a, p.a_to_b, &word, sizeof(word), 1, 2, 3, 0, 0, &sreq), 0);
        while (efarm_tprobe(p.b, 1, EFARM_ANY_SOURCE, 3, false, &info) == 0 &&
               proto_now_s() < deadline)
            proto_pair_spin(&p, 100);
        EXPECT_EQ(info.msg_length, sizeof(word));
        EXPECT_EQ(*arrivals, seen);
        EXPECT_RET(efarm_trecv(p.b, &got, sizeof(got), 1, EFARM_ANY_SOURCE, 3, &rreq), 0);
        proto_pair_wait(&p, reqs, 2, 10);
        EXPECT_EQ(got, word);
    }
    proto_pair_close(&p);
}

/*
 * EFARM_SEND_INJECT: eager and medium sends complete inside efarm_tsend,
 * before the peer has run at all, and the data still arrives whole; the same
 * send with delivery complete waits for the RECEIPT as always.
 */
EFARM_TEST_TIMEOUT(proto_smoke_inject_completes_at_post, 30)
{
    static const uint64_t sizes[] = {0, 100, 20000};
    struct proto_pair p;

    proto_use_efasim();
    proto_pair_open(&p, NULL, NULL);
    for (unsigned dc = 0; dc < 2; dc++) {
        for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            uint8_t *src = malloc(sizes[i] + 1), *dst = calloc(1, sizes[i] + 1);
            struct efarm_req sreq = {0}, rreq = {0};
            struct efarm_req *reqs[] = {&sreq, &rreq};
            uint32_t flags = EFARM_SEND_INJECT | (dc ? EFARM_SEND_DC : 0);

            efarm_test_context("size %llu%s", (unsigned long long)sizes[i], dc ? ", DC" : "");
            proto_fill(src, sizes[i], i + 20);
            EXPECT_RET(efarm_tsend(p.a, p.a_to_b, src, sizes[i], 1, 2, 3, flags, 0, &sreq), 0);
            EXPECT_EQ(sreq.done, !dc);
            if (!dc) {
                EXPECT_RET(sreq.status, 0);
                /* The buffer is the caller's again: scribbling on it changes nothing sent. */
                memset(src, 0xa5, sizes[i] + 1);
            }
            EXPECT_RET(efarm_trecv(p.b, dst, sizes[i], 1, 2, 3, &rreq), 0);
            proto_pair_wait(&p, reqs, 2, 20);
            EXPECT_RET(sreq.status, 0);
            EXPECT_RET(rreq.status, 0);
            EXPECT_EQ(rreq.length, sizes[i]);
            proto_expect_pattern(dst, sizes[i], i + 20);
            free(src);
            free(dst);
        }
    }
    /* Every packet is acknowledged in the end: nothing was left failing behind a done send. */
    proto_pair_spin(&p, 2000);
    EXPECT_EQ(efarm_ep_counters(p.a)->send_errors, 0);
    proto_pair_close(&p);
}

/*
 * The eager fast path (injected tagged sends that fit one packet take a
 * header template and no operation) interleaved with sends that take the
 * general path to the same peer and tag: zero-length, small, nearly a packet,
 * medium, not injected, with CQ data. From the first send on (the raw-address
 * header before the peer's HANDSHAKE, none after): every message arrives
 * whole and in send order, half matched by receives posted first, half
 * unexpected; the fast path carried exactly the injected eager ones, and the
 * receiving fast path some of the posted-for eager ones.
 */
EFARM_TEST_TIMEOUT(proto_smoke_eager_fast_path_order, 60)
{
    enum { N = 48 };
    static const uint64_t sizes[] = {8, 0, 8000, 20000, 8, 8, 1};
    struct proto_pair p;
    struct efarm_req sreq[N], rreq[N];
    struct efarm_req *reqs[2 * N];
    uint8_t *src[N], *dst[N];
    uint64_t fast = 0, eager = 0, len[N];

    proto_use_efasim();
    proto_pair_open(&p, NULL, NULL);
    memset(sreq, 0, sizeof(sreq));
    memset(rreq, 0, sizeof(rreq));
    for (unsigned i = 0; i < N; i++) {
        len[i] = sizes[i % (sizeof(sizes) / sizeof(sizes[0]))];
        src[i] = malloc(len[i] + 1);
        dst[i] = calloc(1, len[i] + 1);
        proto_fill(src[i], len[i], i + 1);
        reqs[i] = &sreq[i];
        reqs[N + i] = &rreq[i];
    }
    for (unsigned i = 0; i < N / 2; i++)
        EXPECT_RET(efarm_trecv(p.b, dst[i], len[i], 1, 2, 3, &rreq[i]), 0);
    for (unsigned i = 0; i < N; i++) {
        unsigned kind = i % (sizeof(sizes) / sizeof(sizes[0]));
        uint32_t flags = kind == 4 ? 0 : EFARM_SEND_INJECT;

        if (kind == 5)
            flags |= EFARM_SEND_CQ_DATA;
        efarm_test_context("message %u, %llu bytes", i, (unsigned long long)len[i]);
        EXPECT_RET(efarm_tsend(p.a, p.a_to_b, src[i], len[i], 1, 2, 3, flags, 42, &sreq[i]), 0);
        if (len[i] <= 8000 && flags == EFARM_SEND_INJECT)
            fast++;
        eager += len[i] <= 8000;
        if (i == N / 4) {
            /*
             * The HANDSHAKE arrives (later sends drop the raw-address header) and
             * every receive so far completes, so the posted-for messages after this
             * one reach the peer in their turn: the receiving fast path's case.
             */
            double deadline = proto_now_s() + 20;
            bool done = false;

            while (!done && proto_now_s() < deadline) {
                proto_pair_spin(&p, 100);
                done = efarm_ep_counters(p.a)->handshakes_recv > 0;
                for (unsigned j = 0; j <= i; j++)
                    done = done && rreq[j].done;
            }
            EXPECT_TRUE(done);
        }
    }
    for (unsigned i = N / 2; i < N; i++)
        EXPECT_RET(efarm_trecv(p.b, dst[i], len[i], 1, 2, 3, &rreq[i]), 0);
    proto_pair_wait(&p, reqs, 2 * N, 30);
    for (unsigned i = 0; i < N; i++) {
        efarm_test_context("message %u", i);
        EXPECT_RET(sreq[i].status, 0);
        EXPECT_RET(rreq[i].status, 0);
        EXPECT_EQ(rreq[i].length, len[i]);
        proto_expect_pattern(dst[i], len[i], i + 1);
        free(src[i]);
        free(dst[i]);
    }
    EXPECT_EQ(efarm_ep_counters(p.a)->eager_fast, fast);
    EXPECT_EQ(efarm_ep_counters(p.a)->proto_eager, eager);
    /* Received by the fast path: only eager ones, and some of those posted for (after the
     * HANDSHAKE dropped the raw-address header). */
    EXPECT_TRUE(efarm_ep_counters(p.b)->eager_fast_rx >= 1);
    EXPECT_TRUE(efarm_ep_counters(p.b)->eager_fast_rx <= eager);
    proto_pair_spin(&p, 500);
    EXPECT_EQ(efarm_ep_counters(p.a)->send_errors, 0);
    proto_pair_close(&p);
}

/*
 * efarm_tsend_now: small injected messages go at once without a request, the
 * rest answer 1 and nothing is sent (then efarm_tsend sends them); bad
 * arguments are -EINVAL. Interleaved with efarm_tsend on one tag, every
 * message arrives whole and in send order, and the eager fast path carried
 * exactly the ones tsend_now took.
 */
EFARM_TEST_TIMEOUT(proto_smoke_tsend_now, 60)
{
    enum { N = 36 };
    static const uint64_t sizes[] = {8, 0, 8000, 20000, 8, 1};
    struct proto_pair p;
    struct efarm_req sreq[N], rreq[N];
    struct efarm_req *reqs[2 * N];
    uint8_t *src[N], *dst[N];
    uint64_t now = 0, len[N];
    unsigned nreqs = 0;

    proto_use_efasim();
    proto_pair_open(&p, NULL, NULL);
    memset(sreq, 0, sizeof(sreq));
    memset(rreq, 0, sizeof(rreq));
    EXPECT_RET(efarm_tsend_now(p.a, p.a_to_b, NULL, 8, 1, 2, 3, EFARM_SEND_INJECT), -EINVAL);
    EXPECT_RET(efarm_tsend_now(p.a, 1000000, "x", 1, 1, 2, 3, EFARM_SEND_INJECT), -EINVAL);
    EXPECT_RET(efarm_tsend_now(p.a, p.a_to_b, "x", 1, 1, 2, -1, EFARM_SEND_INJECT), -EINVAL);
    for (unsigned i = 0; i < N; i++) {
        len[i] = sizes[i % (sizeof(sizes) / sizeof(sizes[0]))];
        src[i] = malloc(len[i] + 1);
        dst[i] = calloc(1, len[i] + 1);
        proto_fill(src[i], len[i], i + 7);
        EXPECT_RET(efarm_trecv(p.b, dst[i], len[i], 1, 2, 3, &rreq[i]), 0);
        reqs[nreqs++] = &rreq[i];
    }
    for (unsigned i = 0; i < N; i++) {
        unsigned kind = i % (sizeof(sizes) / sizeof(sizes[0]));
        /* kind 4: CQ data is not for tsend_now; kind 5: neither is a send that is not injected */
        uint32_t flags = kind == 4   ? EFARM_SEND_INJECT | EFARM_SEND_CQ_DATA
                         : kind == 5 ? 0
                                     : EFARM_SEND_INJECT;
        int ret = efarm_tsend_now(p.a, p.a_to_b, src[i], len[i], 1, 2, 3, flags);

        efarm_test_context("message %u, %llu bytes", i, (unsigned long long)len[i]);
        if (len[i] <= 8000 && flags == EFARM_SEND_INJECT) {
            EXPECT_RET(ret, 0);
            now++;
            continue;
        }
        EXPECT_RET(ret, 1);
        EXPECT_RET(efarm_tsend(p.a, p.a_to_b, src[i], len[i], 1, 2, 3, flags, 42, &sreq[i]), 0);
        reqs[nreqs++] = &sreq[i];
    }
    proto_pair_wait(&p, reqs, nreqs, 30);
    for (unsigned i = 0; i < N; i++) {
        efarm_test_context("message %u", i);
        EXPECT_RET(rreq[i].status, 0);
        EXPECT_EQ(rreq[i].length, len[i]);
        proto_expect_pattern(dst[i], len[i], i + 7);
        free(src[i]);
        free(dst[i]);
    }
    EXPECT_EQ(now, N / 2); /* kinds 0, 1 and 2 of six */
    EXPECT_EQ(efarm_ep_counters(p.a)->eager_fast, now);
    proto_pair_spin(&p, 500);
    EXPECT_EQ(efarm_ep_counters(p.a)->send_errors, 0);
    proto_pair_close(&p);
}

/*
 * Completions are handled inside the device's poll session, so a request's
 * callback cannot progress its endpoint again: such a call does nothing and
 * returns -EDEADLK (never a hang on the CQ's lock), counted in
 * progress_nested, and the outer progress goes on; the messages behind it
 * still arrive. MPICH makes such calls (a completion that frees a
 * communicator probes it). The callback may start new operations (here: the
 * next receive), as MPI's completion hooks do.
 */
struct reenter {
    struct efarm_ep *ep;
    int ret;
    unsigned calls;
};

static void reenter_cb(struct efarm_req *req)
{
    struct reenter *r = req->ctx;

    r->calls++;
    r->ret = efarm_ep_progress(r->ep);
}

EFARM_TEST_TIMEOUT(proto_smoke_progress_from_callback_refused, 60)
{
    enum { N = 8 };
    struct proto_pair p;
    struct efarm_req sreq[N], rreq[N];
    struct efarm_req *reqs[2 * N];
    struct reenter r = {0};
    uint8_t dst[N][16];

    proto_use_efasim();
    proto_pair_open(&p, NULL, NULL);
    memset(sreq, 0, sizeof(sreq));
    memset(rreq, 0, sizeof(rreq));
    r.ep = p.b;
    for (unsigned i = 0; i < N; i++) {
        rreq[i].cb = reenter_cb;
        rreq[i].ctx = &r;
        EXPECT_RET(efarm_trecv(p.b, dst[i], sizeof(dst[i]), 1, 2, 3, &rreq[i]), 0);
        reqs[i] = &rreq[i];
        reqs[N + i] = &sreq[i];
    }
    for (unsigned i = 0; i < N; i++) {
        uint8_t msg[8];

        proto_fill(msg, sizeof(msg), i);
        EXPECT_RET(
            efarm_tsend(p.a, p.a_to_b, msg, sizeof(msg), 1, 2, 3, EFARM_SEND_INJECT, 0, &sreq[i]),
            0);
    }
    proto_pair_wait(&p, reqs, 2 * N, 20);
    EXPECT_EQ(r.calls, N);
    EXPECT_RET(r.ret, -EDEADLK);
    EXPECT_EQ(efarm_ep_counters(p.b)->progress_nested, N);
    for (unsigned i = 0; i < N; i++) {
        EXPECT_RET(rreq[i].status, 0);
        EXPECT_EQ(rreq[i].length, 8);
        proto_expect_pattern(dst[i], 8, i);
    }
    /* Outside a callback progress works as before. */
    EXPECT_TRUE(efarm_ep_progress(p.b) >= 0);
    proto_pair_close(&p);
}

/*
 * A callback that waits (calls progress until something completes) would spin
 * forever: from the 2^20th nested call in a row on, progress fails with
 * PROTO_NESTED_WAIT instead of -EDEADLK, so the wait ends in an error. A
 * progress call outside a callback starts the count again.
 */
struct spin {
    struct efarm_ep *ep;
    unsigned long calls_to_fail; /* the nested call that failed first (1-based); 0: none */
    int fail_ret;
    int calls;
};

static void spin_cb(struct efarm_req *req)
{
    struct spin *sp = req->ctx;
    unsigned long n;

    sp->calls++;
    for (n = 1; n <= (1ul << 20) + 4; n++) {
        int ret = efarm_ep_progress(sp->ep);

        if (ret != -EDEADLK) {
            sp->calls_to_fail = n;
            sp->fail_ret = ret;
            break;
        }
    }
}

EFARM_TEST_TIMEOUT(proto_smoke_wait_in_callback_fails, 60)
{
    struct proto_pair p;
    struct efarm_req sreq[2], rreq[2];
    struct efarm_req *reqs[4] = {&rreq[0], &rreq[1], &sreq[0], &sreq[1]};
    struct spin sp = {0};
    uint8_t dst[2][8], msg[8] = {1, 2, 3, 4, 5, 6, 7, 8};

    proto_use_efasim();
    proto_pair_open(&p, NULL, NULL);
    memset(sreq, 0, sizeof(sreq));
    memset(rreq, 0, sizeof(rreq));
    sp.ep = p.b;
    for (unsigned i = 0; i < 2; i++) {
        rreq[i].cb = spin_cb;
        rreq[i].ctx = &sp;
        EXPECT_RET(efarm_trecv(p.b, dst[i], sizeof(dst[i]), 1, 2, 3, &rreq[i]), 0);
    }
    EXPECT_RET(
        efarm_tsend(p.a, p.a_to_b, msg, sizeof(msg), 1, 2, 3, EFARM_SEND_INJECT, 0, &sreq[0]), 0);
    proto_pair_wait(&p, reqs, 1, 20);
    EXPECT_EQ(sp.calls, 1);
    EXPECT_EQ(sp.calls_to_fail, 1ul << 20);
    EXPECT_RET(sp.fail_ret, EFARM_E(PROTO_NESTED_WAIT));
    EXPECT_EQ(efarm_ep_counters(p.b)->progress_nested, 1ul << 20);
    EXPECT_RET(rreq[0].status, 0);
    /* A progress call outside the callback starts the count again. */
    EXPECT_TRUE(efarm_ep_progress(p.b) >= 0);
    sp.calls_to_fail = 0;
    EXPECT_RET(
        efarm_tsend(p.a, p.a_to_b, msg, sizeof(msg), 1, 2, 3, EFARM_SEND_INJECT, 0, &sreq[1]), 0);
    proto_pair_wait(&p, reqs + 1, 1, 20);
    EXPECT_EQ(sp.calls, 2);
    EXPECT_EQ(sp.calls_to_fail, 1ul << 20);
    proto_pair_wait(&p, reqs + 2, 2, 20);
    proto_pair_close(&p);
}
