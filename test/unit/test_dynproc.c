/*
 * The netmod's dynamic-process core without MPICH (src/netmod_efarm/
 * efarm_dynproc_core.c): upids checked byte by byte, and the bootstrap
 * exchange in the reserved match space between two engines on efasim:
 * delivery, the match space kept apart from MPI's, timeouts that cancel the
 * receive and leave a send to finish from its own copy, truncation, errors of
 * the progress callback.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "efarm_dynproc.h"
#include "efarm_errno.h"
#include "efarm_test.h"
#include "proto_common.h"

/* ---- upids ------------------------------------------------------------------------------ */

static void sample_raw(uint8_t raw[EFARM_RAW_ADDR_LEN])
{
    memset(raw, 0, EFARM_RAW_ADDR_LEN);
    for (unsigned i = 0; i < 16; i++)
        raw[i] = (uint8_t)(0xfe - i); /* GID */
    raw[16] = 0x34;                   /* QPN 0x1234 */
    raw[17] = 0x12;
    raw[20] = 0xef; /* connid 0xdeadbeef */
    raw[21] = 0xbe;
    raw[22] = 0xad;
    raw[23] = 0xde;
}

EFARM_TEST(dynproc_upid_round_trip)
{
    uint8_t raw[EFARM_RAW_ADDR_LEN], back[EFARM_RAW_ADDR_LEN], upid[MPIDI_EFARM_UPID_LEN];
    const char *why = NULL;

    sample_raw(raw);
    MPIDI_EFARM_upid_encode(raw, upid);
    EXPECT_EQ(upid[0], 'E');
    EXPECT_EQ(upid[1], 'F');
    EXPECT_EQ(upid[2], 1);
    EXPECT_EQ(upid[3], 0);
    EXPECT_MEM_EQ(upid + 4, raw, EFARM_RAW_ADDR_LEN);
    EXPECT_RET(MPIDI_EFARM_upid_decode(upid, sizeof(upid), back, &why), 0);
    EXPECT_MEM_EQ(back, raw, EFARM_RAW_ADDR_LEN);
}

/* A refused upid: -EINVAL, a reason, and raw untouched. */
static void expect_refused(const void *upid, int64_t len, const char *reason_part)
{
    uint8_t raw[EFARM_RAW_ADDR_LEN], canary[EFARM_RAW_ADDR_LEN];
    const char *why = NULL;

    memset(raw, 0x5a, sizeof(raw));
    memcpy(canary, raw, sizeof(raw));
    efarm_test_context("length %lld, expecting \"%s\"", (long long)len, reason_part);
    EXPECT_RET(MPIDI_EFARM_upid_decode(upid, len, raw, &why), -EINVAL);
    EXPECT_TRUE(why != NULL && strstr(why, reason_part) != NULL);
    EXPECT_MEM_EQ(raw, canary, sizeof(raw));
}

EFARM_TEST(dynproc_upid_refused)
{
    uint8_t raw[EFARM_RAW_ADDR_LEN], good[MPIDI_EFARM_UPID_LEN], bad[MPIDI_EFARM_UPID_LEN + 64];
    static const int64_t lengths[] = {0, 1, 3, 4, 35, 37, 68, 100};

    sample_raw(raw);
    MPIDI_EFARM_upid_encode(raw, good);
    memset(bad, 0, sizeof(bad));
    memcpy(bad, good, sizeof(good));

    expect_refused(NULL, 36, "shorter");
    expect_refused(good, -1, "shorter");
    expect_refused(good, INT64_MIN, "shorter");
    for (unsigned i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++)
        expect_refused(bad, lengths[i], lengths[i] < 4 ? "shorter" : "not 36 bytes");

    memcpy(bad, good, sizeof(good));
    bad[0] = 'U'; /* another netmod's bytes */
    expect_refused(bad, 36, "magic");
    memcpy(bad, good, sizeof(good));
    bad[1] = 0;
    expect_refused(bad, 36, "magic");
    memcpy(bad, good, sizeof(good));
    bad[2] = 2;
    expect_refused(bad, 36, "version");
    memcpy(bad, good, sizeof(good));
    bad[3] = 1;
    expect_refused(bad, 36, "reserved header");
    memcpy(bad, good, sizeof(good));
    memset(bad + 4, 0, 16);
    expect_refused(bad, 36, "zero GID");
    for (unsigned off = 18; off < 32; off++) {
        if (off >= 20 && off < 24)
            continue; /* the connid: any value */
        memcpy(bad, good, sizeof(good));
        bad[4 + off] = 1;
        expect_refused(bad, 36, "padding or reserved");
    }
    /* Every single-byte change of the address itself is a valid (other) address. */
    memcpy(bad, good, sizeof(good));
    bad[4 + 21] ^= 0xff;
    {
        uint8_t back[EFARM_RAW_ADDR_LEN];
        const char *why;

        EXPECT_RET(MPIDI_EFARM_upid_decode(bad, 36, back, &why), 0);
        EXPECT_MEM_EQ(back, bad + 4, EFARM_RAW_ADDR_LEN);
    }
}

/* Random bytes and lengths: refused or accepted, never a crash, raw written only on success. */
EFARM_TEST(dynproc_upid_random)
{
    uint8_t buf[80];

    for (unsigned n = 0; n < 20000; n++) {
        uint8_t raw[EFARM_RAW_ADDR_LEN];
        int64_t len = (int64_t)(efarm_test_rand() % 82) - 1;
        const char *why = NULL;
        int ret;

        for (unsigned i = 0; i < sizeof(buf); i++)
            buf[i] = (uint8_t)efarm_test_rand();
        if (n & 1) { /* half of them with a good header, so the later checks run */
            buf[0] = 'E', buf[1] = 'F', buf[2] = 1, buf[3] = 0;
            if (n & 2)
                memset(buf + 4 + 18, 0, 2), memset(buf + 4 + 24, 0, 8), len = 36;
        }
        memset(raw, 0xa5, sizeof(raw));
        ret = MPIDI_EFARM_upid_decode(buf, len, raw, &why);
        if (ret == 0)
            EXPECT_MEM_EQ(raw, buf + 4, EFARM_RAW_ADDR_LEN);
        else
            EXPECT_TRUE(ret == -EINVAL && why != NULL);
    }
}

/* ---- The exchange ----------------------------------------------------------------------- */

struct pair_progress {
    struct proto_pair *p;
    unsigned calls;
    unsigned fail_after; /* 0: never; else return -EIO from this call on */
};

static int pair_progress(void *arg)
{
    struct pair_progress *pp = arg;

    pp->calls++;
    if (pp->fail_after && pp->calls >= pp->fail_after)
        return -EIO;
    EXPECT_TRUE(efarm_ep_progress(pp->p->a) >= 0);
    EXPECT_TRUE(efarm_ep_progress(pp->p->b) >= 0);
    return 0;
}

static struct MPIDI_EFARM_dyn_wait pair_wait(struct pair_progress *pp, int timeout_s)
{
    struct MPIDI_EFARM_dyn_wait w = {.progress = pair_progress, .arg = pp, .timeout_s = timeout_s};

    return w;
}

EFARM_TEST_TIMEOUT(dynproc_exchange_delivers, 60)
{
    static const uint64_t sizes[] = {0, 1, 300, 9000, 200000, 3u << 20};
    struct proto_pair p;
    struct pair_progress pp = {.p = &p};
    struct MPIDI_EFARM_dyn_wait w = pair_wait(&pp, 20);

    proto_use_efasim();
    proto_pair_open(&p, NULL, NULL);
    for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        uint8_t *src = malloc(sizes[i] + 1), *dst = calloc(1, sizes[i] + 1);
        struct MPIDI_EFARM_dyn_result res;
        struct efarm_probe_info info;

        efarm_test_context("size %llu", (unsigned long long)sizes[i]);
        proto_fill(src, sizes[i], i + 7);
        /* A small message goes without a receiver (eager/medium); a large one waits for it. */
        if (sizes[i] <= 9000) {
            EXPECT_RET(
                MPIDI_EFARM_dyn_exchange(p.a, p.a_to_b, 42, src, sizes[i], NULL, 0, &w, &res), 0);
            EXPECT_RET(res.send_status, 0);
            proto_pair_spin(&p, 2000);
            /* It sits in the reserved space: MPI's wildcard receives see nothing. */
            EXPECT_RET(efarm_tprobe(p.b, 0, EFARM_ANY_SOURCE, EFARM_ANY_TAG, false, &info), 0);
            EXPECT_RET(efarm_tprobe(p.b, MPIDI_EFARM_DYN_CONTEXT, EFARM_ANY_SOURCE, EFARM_ANY_TAG,
                                    false, &info),
                       1);
            EXPECT_EQ(info.source, MPIDI_EFARM_DYN_SOURCE);
            EXPECT_EQ(info.tag, 42);
            memset(src, 0, sizes[i]); /* the send went from a copy */
            proto_fill(src, sizes[i], i + 7);
            EXPECT_RET(MPIDI_EFARM_dyn_exchange(p.b, EFARM_PEER_NONE, 42, NULL, 0, dst,
                                                sizes[i] + 1, &w, &res),
                       0);
        } else {
            /* b answers while a's large send waits: a sendrecv on a, b's send went first. */
            uint8_t small[16] = "hello from b";
            uint8_t got[16] = {0};

            EXPECT_RET(MPIDI_EFARM_dyn_exchange(p.b, p.b_to_a, 42, small, sizeof(small), NULL, 0,
                                                &w, NULL),
                       0);
            /* a: send the large one and receive b's; the large send needs b's receive, so 1 s. */
            w.timeout_s = 1;
            EXPECT_RET(MPIDI_EFARM_dyn_exchange(p.a, p.a_to_b, 42, src, sizes[i], got, sizeof(got),
                                                &w, &res),
                       -ETIMEDOUT);
            EXPECT_RET(res.recv_status, 0);
            EXPECT_MEM_EQ(got, small, sizeof(small));
            EXPECT_EQ(res.sender, p.a_to_b);
            EXPECT_RET(res.send_status, -ETIMEDOUT);
            EXPECT_EQ(MPIDI_EFARM_dyn_abandoned(), 1);
            memset(src, 0xee, sizes[i]); /* the abandoned send must not see this */
            w.timeout_s = 20;
            EXPECT_RET(MPIDI_EFARM_dyn_exchange(p.b, EFARM_PEER_NONE, 42, NULL, 0, dst,
                                                sizes[i] + 1, &w, &res),
                       0);
            /* The abandoned send completes in progress: within 20 s on a loaded machine. */
            for (double end = proto_now_s() + 20;
                 MPIDI_EFARM_dyn_abandoned() && proto_now_s() < end;)
                proto_pair_spin(&p, 20000);
            EXPECT_EQ(MPIDI_EFARM_dyn_abandoned(), 0); /* completed and freed */
            proto_fill(src, sizes[i], i + 7);
        }
        EXPECT_EQ(res.recv_len, sizes[i]);
        EXPECT_EQ(res.sender, p.b_to_a);
        proto_expect_pattern(dst, sizes[i], i + 7);
        free(src);
        free(dst);
    }
    proto_pair_close(&p);
    MPIDI_EFARM_dyn_release();
}

/* An MPI message on context 0xffff (impossible from MPICH 4.x, but) from rank 3 matches nothing. */
EFARM_TEST(dynproc_exchange_ignores_other_sources)
{
    struct proto_pair p;
    struct pair_progress pp = {.p = &p};
    struct MPIDI_EFARM_dyn_wait w = pair_wait(&pp, 1);
    struct efarm_req sreq = {0};
    uint8_t msg[8] = "mpi", got[8];
    struct efarm_req *reqs[] = {&sreq};

    proto_use_efasim();
    proto_pair_open(&p, NULL, NULL);
    EXPECT_RET(
        efarm_tsend(p.a, p.a_to_b, msg, sizeof(msg), MPIDI_EFARM_DYN_CONTEXT, 3, 5, 0, 0, &sreq),
        0);
    proto_pair_wait(&p, reqs, 1, 10);
    EXPECT_RET(
        MPIDI_EFARM_dyn_exchange(p.b, EFARM_PEER_NONE, 5, NULL, 0, got, sizeof(got), &w, NULL),
        -ETIMEDOUT);
    proto_pair_close(&p);
}

/*
 * A receive nobody answers times out near its timeout and is cancelled: a
 * later message goes to the next receive, not to the dead one.
 */
EFARM_TEST(dynproc_exchange_recv_timeout)
{
    struct proto_pair p;
    struct pair_progress pp = {.p = &p};
    struct MPIDI_EFARM_dyn_wait w = pair_wait(&pp, 1);
    struct MPIDI_EFARM_dyn_result res;
    uint8_t got[64], msg[5] = "late";
    double t0;

    proto_use_efasim();
    proto_pair_open(&p, NULL, NULL);
    t0 = proto_now_s();
    memset(got, 0, sizeof(got));
    EXPECT_RET(
        MPIDI_EFARM_dyn_exchange(p.b, EFARM_PEER_NONE, 7, NULL, 0, got, sizeof(got), &w, &res),
        -ETIMEDOUT);
    EXPECT_TRUE(proto_now_s() - t0 >= 0.99 && proto_now_s() - t0 < 5);
    EXPECT_RET(res.recv_status, -ETIMEDOUT);
    EXPECT_EQ(MPIDI_EFARM_dyn_abandoned(), 0);

    w.timeout_s = 10;
    EXPECT_RET(MPIDI_EFARM_dyn_exchange(p.a, p.a_to_b, 7, msg, sizeof(msg), NULL, 0, &w, NULL), 0);
    EXPECT_RET(
        MPIDI_EFARM_dyn_exchange(p.b, EFARM_PEER_NONE, 7, NULL, 0, got, sizeof(got), &w, &res), 0);
    EXPECT_EQ(res.recv_len, sizeof(msg));
    EXPECT_MEM_EQ(got, msg, sizeof(msg));
    proto_pair_close(&p);
}

EFARM_TEST(dynproc_exchange_truncated)
{
    struct proto_pair p;
    struct pair_progress pp = {.p = &p};
    struct MPIDI_EFARM_dyn_wait w = pair_wait(&pp, 10);
    struct MPIDI_EFARM_dyn_result res;
    uint8_t msg[100], got[40];

    proto_use_efasim();
    proto_pair_open(&p, NULL, NULL);
    proto_fill(msg, sizeof(msg), 3);
    EXPECT_RET(MPIDI_EFARM_dyn_exchange(p.a, p.a_to_b, 9, msg, sizeof(msg), NULL, 0, &w, NULL), 0);
    EXPECT_RET(
        MPIDI_EFARM_dyn_exchange(p.b, EFARM_PEER_NONE, 9, NULL, 0, got, sizeof(got), &w, &res),
        -EMSGSIZE);
    EXPECT_EQ(res.recv_len, sizeof(msg));
    proto_expect_pattern(got, sizeof(got), 3);
    proto_pair_close(&p);
}

EFARM_TEST(dynproc_exchange_bad_arguments)
{
    struct proto_pair p;
    struct pair_progress pp = {.p = &p};
    struct MPIDI_EFARM_dyn_wait w = pair_wait(&pp, 1);
    struct MPIDI_EFARM_dyn_result res;
    uint8_t buf[4] = {0};

    proto_use_efasim();
    proto_pair_open(&p, NULL, NULL);
    EXPECT_RET(MPIDI_EFARM_dyn_exchange(p.a, p.a_to_b, -1, buf, 4, NULL, 0, &w, &res), -EINVAL);
    EXPECT_RET(res.send_status, -EINVAL);
    EXPECT_RET(
        MPIDI_EFARM_dyn_exchange(p.a, p.a_to_b, EFARM_TAG_MAX + 1, buf, 4, NULL, 0, &w, NULL),
        -EINVAL);
    EXPECT_RET(MPIDI_EFARM_dyn_exchange(p.a, p.a_to_b, 1, NULL, 0, NULL, 0, &w, NULL), -EINVAL);
    EXPECT_RET(
        MPIDI_EFARM_dyn_exchange(p.a, p.a_to_b, 1, buf, (uint64_t)INT32_MAX + 1, NULL, 0, &w, NULL),
        -EINVAL);
    /* A peer the address vector does not have: the engine refuses, nothing is left behind. */
    EXPECT_RET(MPIDI_EFARM_dyn_exchange(p.a, 1000, 1, buf, 4, buf, 4, &w, &res), -EINVAL);
    EXPECT_RET(res.send_status, -EINVAL);
    EXPECT_EQ(MPIDI_EFARM_dyn_abandoned(), 0);
    proto_pair_close(&p);
}

/* The progress callback fails: the wait stops with its error and the receive is cancelled. */
EFARM_TEST(dynproc_exchange_progress_error)
{
    struct proto_pair p;
    struct pair_progress pp = {.p = &p, .fail_after = 50};
    struct MPIDI_EFARM_dyn_wait w = pair_wait(&pp, 0);
    struct MPIDI_EFARM_dyn_result res;
    uint8_t got[8], msg[3] = "ok";

    proto_use_efasim();
    proto_pair_open(&p, NULL, NULL);
    EXPECT_RET(
        MPIDI_EFARM_dyn_exchange(p.b, EFARM_PEER_NONE, 1, NULL, 0, got, sizeof(got), &w, &res),
        -EIO);
    EXPECT_RET(res.recv_status, -EIO);
    EXPECT_EQ(pp.calls, 50);
    EXPECT_EQ(MPIDI_EFARM_dyn_abandoned(), 0);
    pp.fail_after = 0;
    w.timeout_s = 10;
    EXPECT_RET(MPIDI_EFARM_dyn_exchange(p.a, p.a_to_b, 1, msg, sizeof(msg), NULL, 0, &w, NULL), 0);
    EXPECT_RET(
        MPIDI_EFARM_dyn_exchange(p.b, EFARM_PEER_NONE, 1, NULL, 0, got, sizeof(got), &w, &res), 0);
    EXPECT_MEM_EQ(got, msg, sizeof(msg));
    proto_pair_close(&p);
}

/* Insert-or-reuse: one process, one peer, however often its address comes. */
EFARM_TEST(dynproc_peer_reused)
{
    struct proto_pair p;
    uint8_t raw[EFARM_RAW_ADDR_LEN], upid[MPIDI_EFARM_UPID_LEN], back[EFARM_RAW_ADDR_LEN];
    efarm_peer_t peer1, peer2;
    const char *why;

    proto_use_efasim();
    proto_pair_open(&p, NULL, NULL);
    efarm_ep_addr(p.b, raw);
    MPIDI_EFARM_upid_encode(raw, upid);
    EXPECT_RET(MPIDI_EFARM_upid_decode(upid, sizeof(upid), back, &why), 0);
    EXPECT_RET(MPIDI_EFARM_dyn_peer(p.a, back, &peer1), 0);
    EXPECT_EQ(peer1, p.a_to_b);
    EXPECT_RET(MPIDI_EFARM_dyn_peer(p.a, back, &peer2), 0);
    EXPECT_EQ(peer2, peer1);
    /* efarm_av_lookup gives back the address the upid carried (what get_local_upids sends). */
    EXPECT_RET(efarm_av_lookup(p.a, peer1, back), 0);
    EXPECT_MEM_EQ(back, raw, EFARM_RAW_ADDR_LEN);
    proto_pair_close(&p);
}
