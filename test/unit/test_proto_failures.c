/*
 * The engine suite, part 14 (see proto_rig.h): device errors never become
 * silent hangs.
 *
 * A packet that the device fails (its own retries spent: the peer is
 * unreachable, unresponsive or gone) cannot be recovered: SRD already
 * retried it, and protocol v4 has no retransmission of its own. The peer is
 * failed: every operation with it that still waits (for a CTS, an EOR, a
 * RECEIPT, the peer's HANDSHAKE) completes with the device's error, and so
 * does every later send to it. When the loss is one no request can report,
 * the data of an injected send that had already completed, the endpoint
 * fails and efarm_ep_progress returns EFARM_E(PROTO_PEER_FAILED), with a log
 * line naming the peer and the device error: a job must end with a clear
 * error, not wait forever for a message that will never come.
 *
 * Here the peer disappears: b closes its endpoint, and with EFASIM_TIMEOUT_MS
 * at 300 efasim reports a's packets to it as unanswered after 0.3 s.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "efarm_errno.h"
#include "efarm_log.h"
#include "efarm_proto.h"
#include "efarm_test.h"
#include "proto_common.h"
#include "proto_rig.h"

#define FAIL_WAIT 10.0 /* seconds: far beyond efasim's 0.3 s timeout */

/* Make efasim give up on a silent peer after 0.3 s (before the first endpoint opens). */
static void quick_timeout(void)
{
    setenv("EFASIM_TIMEOUT_MS", "300", 1);
}

/* Progress a alone until req is done or the deadline; a's progress must stay >= 0. */
static void wait_a(struct efarm_ep *a, const struct efarm_req *req, const char *what)
{
    double deadline = proto_now_s() + FAIL_WAIT;

    while (!req->done) {
        if (proto_now_s() > deadline)
            efarm_test_fail(__FILE__, __LINE__, "%s: still waiting after %.0f s", what, FAIL_WAIT);
        EXPECT_TRUE(efarm_ep_progress(a) >= 0);
    }
}

/*
 * An injected send completes at post; then its packet finds no peer. The
 * data is lost and nothing can report it: a's endpoint must fail, with the
 * peer and the device error in the log, and a later send to the failed peer
 * ends at once with that error.
 */
EFARM_TEST(proto_failure_injected_send_lost)
{
    char path[256];
    uint8_t data[100] = {7};
    struct efarm_req s = {0}, later = {0};
    double deadline;
    struct rig r;
    int saved, ret = 0;

    quick_timeout();
    proto_tmp_path(path, sizeof(path), "lost");
    rig_open(&r, NULL, NULL);
    rig_handshake(&r);
    efarm_ep_close(r.p.b);
    saved = proto_stderr_capture(path);
    EXPECT_RET(
        efarm_tsend(r.p.a, r.p.a_to_b, data, sizeof(data), CTX, SRC, TAG, EFARM_SEND_INJECT, 0, &s),
        0);
    EXPECT_TRUE(s.done); /* injected: complete at post */
    EXPECT_RET(s.status, 0);
    deadline = proto_now_s() + FAIL_WAIT;
    while ((ret = efarm_ep_progress(r.p.a)) >= 0 && proto_now_s() < deadline)
        ;
    proto_stderr_restore(saved);
    EXPECT_RET(ret, EFARM_E(PROTO_PEER_FAILED));
    EXPECT_RET(efarm_ep_progress(r.p.a), EFARM_E(PROTO_PEER_FAILED)); /* and from then on */
    EXPECT_EQ(cnt(r.p.a)->lost_after_completion, 1);
    EXPECT_EQ(cnt(r.p.a)->peers_failed, 1);
    EXPECT_EQ(proto_file_count(path, "peer 0 (QPN"), 2);
    EXPECT_EQ(
        proto_file_count(path, "lost the data of an injected send that had already completed"), 1);
    EXPECT_EQ(proto_file_count(path, "remote unresponsive or unreachable"), 3);
    /* Nothing more goes to the failed peer: a new send ends with its error at once. */
    EXPECT_RET(efarm_tsend(r.p.a, r.p.a_to_b, data, 8, CTX, SRC, TAG, 0, 0, &later), 0);
    EXPECT_TRUE(later.done);
    EXPECT_RET(later.status, EFARM_E(DEV_TIMEOUT));
    unlink(path);
    efarm_ep_close(r.p.a);
}

/*
 * The same loss to a peer that may depart (efarm_av_set_departing: MPI's
 * dynamic processes, which exit after MPI_Comm_disconnect without a barrier
 * with us): the peer fails and the loss is counted and logged at info level
 * (no warning: MPICH's tests fail on any stray output, and a departed peer is
 * no fault), but a's endpoint goes on working.
 */
EFARM_TEST(proto_failure_departing_peer_lost)
{
    char path[256];
    uint8_t data[100] = {7};
    struct efarm_req s = {0}, later = {0};
    double deadline;
    struct rig r;
    int saved;

    quick_timeout();
    proto_tmp_path(path, sizeof(path), "departed");
    rig_open(&r, NULL, NULL);
    rig_handshake(&r);
    EXPECT_RET(efarm_av_set_departing(r.p.a, r.p.a_to_b), 0);
    EXPECT_RET(efarm_av_set_departing(r.p.a, 12345), -EINVAL);
    efarm_ep_close(r.p.b);
    g_efarm_log_level = EFARM_LOG_INFO;
    saved = proto_stderr_capture(path);
    EXPECT_RET(
        efarm_tsend(r.p.a, r.p.a_to_b, data, sizeof(data), CTX, SRC, TAG, EFARM_SEND_INJECT, 0, &s),
        0);
    EXPECT_TRUE(s.done);
    deadline = proto_now_s() + FAIL_WAIT;
    while (cnt(r.p.a)->peers_failed == 0 && proto_now_s() < deadline)
        EXPECT_TRUE(efarm_ep_progress(r.p.a) >= 0);
    for (int i = 0; i < 1000; i++)
        EXPECT_TRUE(efarm_ep_progress(r.p.a) >= 0); /* and it stays so */
    proto_stderr_restore(saved);
    EXPECT_EQ(cnt(r.p.a)->lost_after_completion, 1);
    EXPECT_EQ(cnt(r.p.a)->peers_failed, 1);
    EXPECT_EQ(proto_file_count(path, "so only the peer fails"), 1);
    EXPECT_EQ(proto_file_count(path, "the endpoint fails"), 0);
    EXPECT_EQ(proto_file_count(path, "] warn "), 0);
    EXPECT_EQ(proto_file_count(path, "] error "), 0);
    EXPECT_EQ(proto_file_count(path, "] info "), 3); /* the packet, the peer, the loss */
    EXPECT_RET(efarm_tsend(r.p.a, r.p.a_to_b, data, 8, CTX, SRC, TAG, 0, 0, &later), 0);
    EXPECT_TRUE(later.done);
    EXPECT_RET(later.status, EFARM_E(DEV_TIMEOUT));
    unlink(path);
    efarm_ep_close(r.p.a);
}

/*
 * Sends that wait on the peer: a long-CTS send for its CTS and a long-read
 * send for its EOR (b got both REQs, then went away). Nothing of theirs
 * fails by itself; when a later send to b fails, the peer is failed and both
 * complete with the device's error instead of waiting forever. The failed
 * send was the last one and its own request reports it: nothing was lost
 * that no request reports, so a's endpoint keeps working.
 */
EFARM_TEST(proto_failure_waiting_sends_end)
{
    struct rig r;
    struct proto_pair *p = &r.p;
    struct msg cts, read;
    struct efarm_req last = {0};
    uint8_t byte = 1;

    quick_timeout();
    rig_open(&r, &g_small, &g_small);
    rig_handshake(&r);
    msg_init(&cts, r.medium_max + 10, r.medium_max + 10, 0, true, EFARM_PROTO_LONGCTS, 500);
    msg_init(&read, r.read_min + 10, r.read_min + 10, EFARM_SEND_DC, true, EFARM_PROTO_LONGREAD,
             501);
    msg_send(&r, &cts);
    msg_send(&r, &read);
    SPIN_UNTIL(p, cnt(p->b)->unexpected == 2, WAIT_S);
    proto_pair_spin(p, 10000);
    EXPECT_TRUE(!cts.sreq.done && !read.sreq.done);
    efarm_ep_close(p->b);
    EXPECT_RET(efarm_tsend(p->a, p->a_to_b, &byte, 1, CTX, SRC, TAG, 0, 0, &last), 0);
    wait_a(p->a, &last, "the send to the vanished peer");
    EXPECT_RET(last.status, EFARM_E(DEV_TIMEOUT));
    wait_a(p->a, &cts.sreq, "the long-CTS send waiting for its CTS");
    wait_a(p->a, &read.sreq, "the long-read send waiting for its EOR");
    EXPECT_RET(cts.sreq.status, EFARM_E(DEV_TIMEOUT));
    EXPECT_RET(read.sreq.status, EFARM_E(DEV_TIMEOUT));
    EXPECT_EQ(cnt(p->a)->peers_failed, 1);
    EXPECT_EQ(cnt(p->a)->lost_after_completion, 0);
    proto_pair_spin(&(struct proto_pair){.a = p->a, .b = p->a}, 1000);
    msg_free(&cts);
    msg_free(&read);
    efarm_ep_close(p->a);
}

/*
 * A DC send waits for the peer's HANDSHAKE behind an earlier send (which
 * will make the peer answer, so no trigger goes). The peer is gone before
 * anything arrived: the earlier send fails, and the DC send must end with
 * the same error rather than wait for a HANDSHAKE that cannot come.
 */
EFARM_TEST(proto_failure_handshake_waiter_ends)
{
    struct proto_pair p;
    struct efarm_req first = {0}, dc = {0};
    uint8_t byte = 1;

    quick_timeout();
    proto_use_efasim();
    proto_pair_open(&p, NULL, NULL);
    efarm_ep_close(p.b);
    EXPECT_RET(efarm_tsend(p.a, p.a_to_b, &byte, 1, CTX, SRC, TAG, 0, 0, &first), 0);
    EXPECT_RET(efarm_tsend(p.a, p.a_to_b, &byte, 1, CTX, SRC, TAG, EFARM_SEND_DC, 0, &dc), 0);
    EXPECT_EQ(cnt(p.a)->handshake_triggers, 0);
    wait_a(p.a, &first, "the first send to the vanished peer");
    EXPECT_RET(first.status, EFARM_E(DEV_TIMEOUT));
    wait_a(p.a, &dc, "the DC send waiting for the HANDSHAKE");
    EXPECT_RET(dc.status, EFARM_E(DEV_TIMEOUT));
    efarm_ep_close(p.a);
}

/*
 * Injected sends complete at post, before their data arrived. An endpoint
 * closed right after them abandons packets the device still had to resend
 * (efasim drops 30% of datagrams here), and their receiver waits forever:
 * efarm_ep_flush must first wait until every packet was acknowledged. Then b
 * receives all 300 messages although a is gone.
 */
EFARM_TEST(proto_flush_delivers_injected_sends)
{
    enum { N = 300 };
    struct rig r;
    struct proto_pair *p = &r.p;
    static uint8_t src[N][100], dst[N][100];
    struct efarm_req *s = calloc(N, sizeof(*s)), *rr = calloc(N, sizeof(*rr));
    double deadline;
    unsigned done = 0;

    setenv("EFASIM_LOSS", "0.3", 1);
    setenv("EFASIM_SEED", "11", 1);
    rig_open(&r, NULL, NULL);
    rig_handshake(&r);
    for (unsigned i = 0; i < N; i++) {
        proto_fill(src[i], sizeof(src[i]), 900 + i);
        EXPECT_RET(efarm_trecv(p->b, dst[i], sizeof(dst[i]), CTX, SRC, TAG, &rr[i]), 0);
    }
    for (unsigned i = 0; i < N; i++) {
        int ret;

        while ((ret = efarm_tsend(p->a, p->a_to_b, src[i], sizeof(src[i]), CTX, SRC, TAG,
                                  EFARM_SEND_INJECT, 0, &s[i])) == -EAGAIN)
            EXPECT_TRUE(efarm_ep_progress(p->a) >= 0);
        EXPECT_RET(ret, 0);
    }
    EXPECT_RET(efarm_ep_flush(p->a, 20000), 0);
    for (unsigned i = 0; i < N; i++)
        EXPECT_TRUE(s[i].done);
    efarm_ep_close(p->a);
    deadline = proto_now_s() + 10;
    while (done < N && proto_now_s() < deadline) {
        EXPECT_TRUE(efarm_ep_progress(p->b) >= 0);
        for (done = 0; done < N && rr[done].done; done++)
            ;
    }
    EXPECT_EQ(done, N);
    for (unsigned i = 0; i < N; i++) {
        EXPECT_RET(rr[i].status, 0);
        proto_expect_pattern(dst[i], sizeof(dst[i]), 900 + i);
    }
    efarm_ep_close(p->b);
    free(s);
    free(rr);
}
