/*
 * The engine suite, part 17 (see proto_rig.h): the device's and the kernel's
 * limits, met the way a job at scale meets them.
 *
 * Address handles: a hub talks to more remote NICs (efasim devices, each its
 * own GID) than the device holds handles (EFASIM_MAX_AH), with messages to
 * and from every one of them in flight at once; the least recently used
 * handle with nothing posted is released and made again, and no message is
 * lost, with or without datagram loss and reordering below SRD.
 *
 * Pinned memory: RLIMIT_MEMLOCK as efasim counts it (EFASIM_MEMLOCK stands
 * in for `ulimit -l` without CAP_IPC_LOCK): too low to open an endpoint is
 * one error naming `ulimit -l` and the size needed; enough to open but not
 * to register a large buffer is one warning, and the message goes by a copy
 * path.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "efarm_device_limits.h"
#include "efarm_proto.h"
#include "efarm_rma.h"
#include "efarm_test.h"
#include "proto_common.h"
#include "proto_internal.h"
#include "proto_rig.h"

/* ---- 17. Address handles ------------------------------------------------------------ */

#define AH_LEAVES 4
#define AH_MAX    "2"

struct star {
    struct efarm_ep *hub, *leaf[AH_LEAVES];
    efarm_peer_t to_leaf[AH_LEAVES], to_hub[AH_LEAVES];
};

static void star_open(struct star *s)
{
    uint8_t raw_hub[EFARM_RAW_ADDR_LEN], raw[EFARM_RAW_ADDR_LEN];
    char name[AH_LEAVES][16];

    EXPECT_RET(efarm_ep_open(&(struct efarm_ep_attr){.device = "efasim_0"}, &s->hub), 0);
    efarm_ep_addr(s->hub, raw_hub);
    for (unsigned i = 0; i < AH_LEAVES; i++) {
        snprintf(name[i], sizeof(name[i]), "efasim_%u", i + 1);
        EXPECT_RET(efarm_ep_open(&(struct efarm_ep_attr){.device = name[i]}, &s->leaf[i]), 0);
        efarm_ep_addr(s->leaf[i], raw);
        /* More GIDs than the device holds handles: the insert still succeeds. */
        EXPECT_RET(efarm_av_insert(s->hub, raw, &s->to_leaf[i]), 0);
        EXPECT_RET(efarm_av_insert(s->leaf[i], raw_hub, &s->to_hub[i]), 0);
    }
}

static void star_close(struct star *s)
{
    for (unsigned i = 0; i < AH_LEAVES; i++)
        efarm_ep_close(s->leaf[i]);
    efarm_ep_close(s->hub);
}

/*
 * Rounds of messages both ways between the hub and every leaf, all posted
 * before any is waited for, at sizes that take eager, medium and a read
 * subprotocol: every handle is wanted while others have packets in flight.
 */
static void star_rounds(struct star *s, unsigned rounds)
{
    static const uint64_t sizes[] = {64, 40000, 2u << 20};
    struct efarm_ep *eps[AH_LEAVES + 1];

    eps[0] = s->hub;
    for (unsigned i = 0; i < AH_LEAVES; i++)
        eps[i + 1] = s->leaf[i];
    for (unsigned r = 0; r < rounds; r++) {
        uint64_t len = sizes[r % 3];
        uint8_t *out[2 * AH_LEAVES], *in[2 * AH_LEAVES];
        struct efarm_req req[4 * AH_LEAVES];
        struct efarm_req *reqs[4 * AH_LEAVES];

        memset(req, 0, sizeof(req));
        efarm_test_context("round %u, %llu bytes", r, (unsigned long long)len);
        for (unsigned i = 0; i < AH_LEAVES; i++) {
            unsigned seed = r * 100 + i;

            out[i] = malloc(len);
            in[i] = malloc(len);
            out[AH_LEAVES + i] = malloc(len);
            in[AH_LEAVES + i] = malloc(len);
            proto_fill(out[i], len, seed);
            proto_fill(out[AH_LEAVES + i], len, seed + 50);
            /* hub -> leaf i (tag i), leaf i -> hub (source i, tag 1000 + i) */
            EXPECT_RET(efarm_trecv(s->leaf[i], in[i], len, CTX, 0, (int32_t)i, &req[4 * i]), 0);
            EXPECT_RET(efarm_trecv(s->hub, in[AH_LEAVES + i], len, CTX, (int32_t)i,
                                   (int32_t)(1000 + i), &req[4 * i + 1]),
                       0);
            EXPECT_RET(efarm_tsend(s->hub, s->to_leaf[i], out[i], len, CTX, 0, (int32_t)i, 0, 0,
                                   &req[4 * i + 2]),
                       0);
            EXPECT_RET(efarm_tsend(s->leaf[i], s->to_hub[i], out[AH_LEAVES + i], len, CTX,
                                   (int32_t)i, (int32_t)(1000 + i), 0, 0, &req[4 * i + 3]),
                       0);
        }
        for (unsigned k = 0; k < 4 * AH_LEAVES; k++)
            reqs[k] = &req[k];
        proto_wait(eps, AH_LEAVES + 1, reqs, 4 * AH_LEAVES, 4 * WAIT_S);
        for (unsigned i = 0; i < AH_LEAVES; i++) {
            unsigned seed = r * 100 + i;

            for (unsigned k = 0; k < 4; k++)
                EXPECT_RET(req[4 * i + k].status, 0);
            EXPECT_EQ(req[4 * i].length, len);
            EXPECT_EQ(req[4 * i + 1].length, len);
            proto_expect_pattern(in[i], len, seed);
            proto_expect_pattern(in[AH_LEAVES + i], len, seed + 50);
            free(out[i]);
            free(in[i]);
            free(out[AH_LEAVES + i]);
            free(in[AH_LEAVES + i]);
        }
    }
}

static void ah_limit(bool faults)
{
    struct efarm_dev_ah_stats st;
    struct star s;

    proto_use_efasim();
    setenv("EFASIM_NDEV", "5", 1);
    setenv("EFASIM_MAX_AH", AH_MAX, 1);
    if (faults) {
        setenv("EFASIM_LOSS", "0.02", 1);
        setenv("EFASIM_REORDER", "0.05", 1);
        setenv("EFASIM_SEED", "17", 1);
    }
    star_open(&s);
    star_rounds(&s, 9);
    efarm_dev_ah_stats(s.hub->dev, &st);
    efarm_test_context("hub's handles: max %u, %u known, %u live, %llu made, %llu released", st.max,
                       st.entries, st.live, (unsigned long long)st.created,
                       (unsigned long long)st.released);
    EXPECT_EQ(st.max, 2);
    EXPECT_EQ(st.entries, AH_LEAVES);
    EXPECT_TRUE(st.live <= 2);
    EXPECT_TRUE(st.released > 0);
    /* At its share (the whole table: one endpoint on the NIC) before the device refuses. */
    EXPECT_EQ(st.share, 2);
    EXPECT_TRUE(st.capped + st.refused > 0);
    EXPECT_EQ(st.created, st.released + st.live);
    /* Packets from a leaf whose handle the hub released were found by GID. */
    EXPECT_EQ(efarm_ep_counters(s.hub)->unknown_sender, 0);
    star_close(&s);
}

EFARM_TEST_TIMEOUT(proto_ah_limit_lru, 120)
{
    ah_limit(false);
}

EFARM_TEST_TIMEOUT(proto_ah_limit_lru_faults, 180)
{
    ah_limit(true);
}

/*
 * Two endpoints of this process on one device (as two VCIs are) share its
 * table (max_ah 2): each holds at most its share, one handle, so the first,
 * talking to two NICs, releases and makes its handle again, and the second
 * still gets one at once. Without the share the first took both handles at
 * its inserts and the second's send failed after 10 s.
 */
EFARM_TEST_TIMEOUT(proto_ah_limit_shared_endpoints, 90)
{
    struct efarm_ep *hub0, *hub1, *leaf[3];
    efarm_peer_t p0[2], p1, back[3];
    uint8_t raw_h0[EFARM_RAW_ADDR_LEN], raw_h1[EFARM_RAW_ADDR_LEN], raw[EFARM_RAW_ADDR_LEN];
    uint8_t data[64] = {1};
    struct efarm_req s0[2], r0[2], s1 = {0}, r1 = {0};
    struct efarm_dev_ah_stats st;
    char name[16];

    proto_use_efasim();
    setenv("EFASIM_NDEV", "4", 1);
    setenv("EFASIM_MAX_AH", "2", 1);
    memset(s0, 0, sizeof(s0));
    memset(r0, 0, sizeof(r0));
    EXPECT_RET(efarm_ep_open(&(struct efarm_ep_attr){.device = "efasim_0"}, &hub0), 0);
    EXPECT_RET(efarm_ep_open(&(struct efarm_ep_attr){.device = "efasim_0"}, &hub1), 0);
    efarm_ep_addr(hub0, raw_h0);
    efarm_ep_addr(hub1, raw_h1);
    for (unsigned i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "efasim_%u", i + 1);
        EXPECT_RET(efarm_ep_open(&(struct efarm_ep_attr){.device = name}, &leaf[i]), 0);
        efarm_ep_addr(leaf[i], raw);
        if (i < 2)
            EXPECT_RET(efarm_av_insert(hub0, raw, &p0[i]), 0);
        else
            EXPECT_RET(efarm_av_insert(hub1, raw, &p1), 0);
        EXPECT_RET(efarm_av_insert(leaf[i], i < 2 ? raw_h0 : raw_h1, &back[i]), 0);
    }
    for (unsigned i = 0; i < 2; i++) {
        EXPECT_RET(efarm_trecv(leaf[i], data + 32, 8, CTX, 0, 1, &r0[i]), 0);
        EXPECT_RET(efarm_tsend(hub0, p0[i], data, 8, CTX, 0, 1, 0, 0, &s0[i]), 0);
    }
    EXPECT_RET(efarm_trecv(leaf[2], data + 48, 8, CTX, 0, 2, &r1), 0);
    EXPECT_RET(efarm_tsend(hub1, p1, data, 8, CTX, 0, 2, 0, 0, &s1), 0);
    {
        struct efarm_ep *eps[] = {hub0, hub1, leaf[0], leaf[1], leaf[2]};
        struct efarm_req *reqs[] = {&s0[0], &s0[1], &r0[0], &r0[1], &s1, &r1};

        proto_wait(eps, 5, reqs, 6, WAIT_S);
    }
    for (unsigned i = 0; i < 2; i++)
        EXPECT_RET(s0[i].status, 0);
    EXPECT_RET(s1.status, 0);
    efarm_dev_ah_stats(hub0->dev, &st);
    EXPECT_EQ(st.max, 2);
    EXPECT_EQ(st.share, 1);
    EXPECT_TRUE(st.live <= 1);
    EXPECT_TRUE(st.capped >= 1);
    EXPECT_TRUE(st.released >= 1);
    for (unsigned i = 0; i < 3; i++)
        efarm_ep_close(leaf[i]);
    efarm_ep_close(hub1);
    efarm_ep_close(hub0);
}

/*
 * The device's table full with another process's handles (max_ah 2: a child
 * holds both, idle): the endpoint that holds none cannot release one, so its
 * send waits (EFARM_AH_STARVE_NS, 10 s) for room and then fails the peer with
 * one error naming max_ah, never hangs.
 */
EFARM_TEST_TIMEOUT(proto_ah_limit_held_elsewhere, 90)
{
    struct efarm_ep *hub, *leaf;
    efarm_peer_t p, back;
    uint8_t raw_h[EFARM_RAW_ADDR_LEN], raw[EFARM_RAW_ADDR_LEN];
    uint8_t data[64] = {1};
    struct efarm_req s = {0};
    char path[256], b = 0;
    int up[2], down[2], saved, status;
    double t0;
    pid_t child;

    if (TEST_TSAN)
        efarm_test_skip("a child of a multithreaded process opens a device, whose service "
                        "thread TSan does not allow there; the gcc and ASan runs have it");
    proto_use_efasim();
    setenv("EFASIM_NDEV", "4", 1);
    setenv("EFASIM_MAX_AH", "2", 1);
    EXPECT_EQ(pipe(up), 0);
    EXPECT_EQ(pipe(down), 0);
    fflush(NULL);
    child = fork();
    EXPECT_TRUE(child >= 0);
    if (child == 0) {
        /* The other process: its endpoint takes the device's two handles, and keeps them. */
        struct efarm_ep *h, *l[2];
        efarm_peer_t to[2], from[2];
        struct efarm_req cs[2], cr[2];

        memset(cs, 0, sizeof(cs));
        memset(cr, 0, sizeof(cr));
        EXPECT_RET(efarm_ep_open(&(struct efarm_ep_attr){.device = "efasim_0"}, &h), 0);
        efarm_ep_addr(h, raw_h);
        for (unsigned i = 0; i < 2; i++) {
            char name[16];

            snprintf(name, sizeof(name), "efasim_%u", i + 1);
            EXPECT_RET(efarm_ep_open(&(struct efarm_ep_attr){.device = name}, &l[i]), 0);
            efarm_ep_addr(l[i], raw);
            EXPECT_RET(efarm_av_insert(h, raw, &to[i]), 0);
            EXPECT_RET(efarm_av_insert(l[i], raw_h, &from[i]), 0);
            EXPECT_RET(efarm_trecv(l[i], data + 32, 8, CTX, 0, 1, &cr[i]), 0);
            EXPECT_RET(efarm_tsend(h, to[i], data, 8, CTX, 0, 1, 0, 0, &cs[i]), 0);
        }
        {
            struct efarm_ep *eps[] = {h, l[0], l[1]};
            struct efarm_req *reqs[] = {&cs[0], &cs[1], &cr[0], &cr[1]};

            proto_wait(eps, 3, reqs, 4, WAIT_S);
        }
        if (write(up[1], &b, 1) != 1 || read(down[0], &b, 1) != 1)
            _exit(3);
        _exit(0);
    }
    EXPECT_EQ(read(up[0], &b, 1), 1);
    EXPECT_RET(efarm_ep_open(&(struct efarm_ep_attr){.device = "efasim_0"}, &hub), 0);
    EXPECT_RET(efarm_ep_open(&(struct efarm_ep_attr){.device = "efasim_3"}, &leaf), 0);
    efarm_ep_addr(hub, raw_h);
    efarm_ep_addr(leaf, raw);
    proto_tmp_path(path, sizeof(path), "ah-elsewhere");
    saved = proto_stderr_capture(path);
    EXPECT_RET(efarm_av_insert(hub, raw, &p), 0);
    EXPECT_RET(efarm_av_insert(leaf, raw_h, &back), 0);
    t0 = proto_now_s();
    EXPECT_RET(efarm_tsend(hub, p, data, 8, CTX, 0, 2, 0, 0, &s), 0);
    while (!s.done && proto_now_s() - t0 < 60) {
        EXPECT_TRUE(efarm_ep_progress(hub) >= 0);
        EXPECT_TRUE(efarm_ep_progress(leaf) >= 0);
    }
    proto_stderr_restore(saved);
    EXPECT_EQ(write(down[1], &b, 1), 1);
    EXPECT_EQ(waitpid(child, &status, 0), child);
    efarm_test_context("after %.1f s; the child's status 0x%x", proto_now_s() - t0, status);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    EXPECT_TRUE(s.done);
    EXPECT_TRUE(s.status < 0);
    EXPECT_TRUE(proto_now_s() - t0 >= 9.5);
    EXPECT_EQ(proto_file_count(path, "holds none to release"), 1);
    EXPECT_EQ(proto_file_count(path, "(max_ah 2 for the NIC"), 1); /* the note came at the insert */
    unlink(path);
    efarm_ep_close(leaf);
    efarm_ep_close(hub);
}

/* ---- 17. Pinned memory ------------------------------------------------------------------ */

/*
 * Small pools (64 receive buffers, 64 send buffers: about 141 pages each),
 * so that two endpoints fit in EFASIM_MEMLOCK = 3 MiB with some 200 pages
 * to spare, and a 2 MiB buffer does not.
 */
static const struct efarm_ep_attr g_pinned_small = {
    .rx_buffers = 64,
    .tx_pkts = 64,
    .medium_max = 32768,
    .read_min = 65536,
    .runt_size = 17704,
};

/* `ulimit -l` of 1 MiB: no endpoint opens, and the one error says what it needs. */
EFARM_TEST(proto_memlock_too_low_to_open)
{
    char path[256];
    struct efarm_ep *ep = NULL;
    int saved;

    proto_use_efasim();
    setenv("EFASIM_MEMLOCK", "1048576", 1);
    proto_tmp_path(path, sizeof(path), "memlock-open");
    saved = proto_stderr_capture(path);
    EXPECT_TRUE(efarm_ep_open(NULL, &ep) < 0);
    proto_stderr_restore(saved);
    EXPECT_EQ(proto_file_count(path, "`ulimit -l`, 1024 KiB here"), 1);
    EXPECT_EQ(proto_file_count(path, "efarm needs at least"), 1);
    EXPECT_EQ(proto_file_count(path, "EFASIM_MEMLOCK"), 1);
    unlink(path);
}

/*
 * Enough to open, not to register a 2 MiB send buffer: such sends go by
 * long-CTS (no registration), with one warning naming `ulimit -l` for all of
 * them; a 256 KiB send still fits and goes by RDMA read.
 */
EFARM_TEST_TIMEOUT(proto_memlock_read_falls_back, 60)
{
    const struct efarm_counters *ca;
    char path[256];
    struct rig r;
    int saved;

    proto_use_efasim();
    setenv("EFASIM_MEMLOCK", "3145728", 1);
    proto_tmp_path(path, sizeof(path), "memlock-read");
    saved = proto_stderr_capture(path);
    rig_open(&r, &g_pinned_small, &g_pinned_small);
    rig_handshake(&r);
    ca = efarm_ep_counters(r.p.a);
    for (unsigned i = 0; i < 3; i++) {
        struct msg m;

        efarm_test_context("2 MiB send %u", i);
        msg_init(&m, 2u << 20, 2u << 20, 0, true, EFARM_PROTO_LONGCTS, 300 + i);
        m.reg_fallback = true;
        xfer(&r, &m, i % 2);
        msg_free(&m);
    }
    EXPECT_EQ(ca->reg_fallbacks, 3);
    {
        /* Both ends are in this process: 2 x 256 KiB of the about 830 KiB left. */
        struct msg m;
        uint64_t reads = efarm_ep_counters(r.p.b)->reads_posted;

        efarm_test_context("256 KiB send, room left for it");
        msg_init(&m, 256u << 10, 256u << 10, 0, true, EFARM_PROTO_RUNTREAD, 310);
        xfer(&r, &m, true);
        msg_free(&m);
        EXPECT_TRUE(efarm_ep_counters(r.p.b)->reads_posted > reads);
        EXPECT_EQ(ca->reg_fallbacks, 3);
    }
    rig_close(&r);
    proto_stderr_restore(saved);
    EXPECT_EQ(proto_file_count(path, "raise `ulimit -l`"), 1);
    EXPECT_EQ(proto_file_count(path, "Such sends go by long-CTS"), 1);
    unlink(path);
}

/*
 * Memory to expose (an RMA window) that the limit refuses: the cache's unused
 * registrations go first; still refused, the caller gets the error, and the
 * one warning says the memory is served without registration.
 */
EFARM_TEST(proto_memlock_expose_refused)
{
    struct efarm_region *region = NULL;
    char path[256];
    struct rig r;
    void *mem = malloc(4u << 20);
    int saved;

    proto_use_efasim();
    setenv("EFASIM_MEMLOCK", "3145728", 1);
    proto_tmp_path(path, sizeof(path), "memlock-expose");
    saved = proto_stderr_capture(path);
    rig_open(&r, &g_pinned_small, &g_pinned_small);
    EXPECT_TRUE(
        efarm_expose(r.p.a, mem, 4u << 20, EFARM_EXPOSE_READ | EFARM_EXPOSE_WRITE, &region) < 0);
    EXPECT_RET(efarm_expose(r.p.a, mem, 64u << 10, EFARM_EXPOSE_READ, &region), 0);
    efarm_unexpose(r.p.a, region);
    rig_close(&r);
    proto_stderr_restore(saved);
    EXPECT_EQ(proto_file_count(path, "served without registration"), 1);
    EXPECT_EQ(proto_file_count(path, "raise `ulimit -l`"), 1);
    free(mem);
    unlink(path);
}

/*
 * Memory to expose beyond what EFA holds in one region open to RDMA write
 * (2^20 pages; EFASIM_MAX_RW_MR_PAGES=16 here): the caller gets the error, and
 * the one warning names that bound, not `ulimit -l`. The same memory exposed
 * for reads, and a window within the bound, register.
 */
EFARM_TEST(proto_rw_expose_too_big)
{
    struct efarm_region *region = NULL;
    char path[256];
    struct rig r;
    uint8_t *mem = aligned_alloc(4096, 17u * 4096);
    int saved;

    EXPECT_TRUE(mem != NULL);
    proto_use_efasim();
    setenv("EFASIM_RDMA_WRITE", "1", 1);
    setenv("EFASIM_MAX_RW_MR_PAGES", "16", 1);
    proto_tmp_path(path, sizeof(path), "rw-expose");
    saved = proto_stderr_capture(path);
    rig_open(&r, &g_pinned_small, &g_pinned_small);
    if (!efarm_ep_caps(r.p.a)->rdma_write)
        efarm_test_skip("the device has no RDMA write (EFA through rdma-core 44): no memory is "
                        "registered for it; the drop-in's run has it");
    for (unsigned i = 0; i < 2; i++)
        EXPECT_RET(
            efarm_expose(r.p.a, mem, 17u * 4096, EFARM_EXPOSE_READ | EFARM_EXPOSE_WRITE, &region),
            -ENOMEM);
    EXPECT_RET(efarm_expose(r.p.a, mem, 17u * 4096, EFARM_EXPOSE_READ, &region), 0);
    efarm_unexpose(r.p.a, region);
    EXPECT_RET(
        efarm_expose(r.p.a, mem, 16u * 4096, EFARM_EXPOSE_READ | EFARM_EXPOSE_WRITE, &region), 0);
    efarm_unexpose(r.p.a, region);
    rig_close(&r);
    proto_stderr_restore(saved);
    EXPECT_EQ(proto_file_count(path, "open to RDMA write, and takes them without"), 1);
    EXPECT_EQ(proto_file_count(path, "served without registration"), 1);
    EXPECT_EQ(proto_file_count(path, "`ulimit -l`"), 0);
    free(mem);
    unlink(path);
}
