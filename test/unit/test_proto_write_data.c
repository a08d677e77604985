/*
 * The engine suite, part 16b: writes with remote CQ data (efarm_write_data)
 * between two endpoints on efasim. Every size class, direct and emulated,
 * with and without remote completion: the target's handler hears of each
 * write exactly once, with the data already in place, its CQ data (the low
 * 32 bits when it came by RDMA write with immediate, all 64 when emulated),
 * its length, address and writer; the write goes as one request (one
 * EAGER_RTW, one LONGCTS_RTW, one LONGREAD_RTW or one RDMA write), checked by
 * the counters. A write of nothing still notifies. Several ranges are refused
 * at the call; a refused write is not reported; with no handler the report
 * is counted as lost and the data still lands. The receive WR an RDMA write
 * with immediate consumes is never taken for a packet.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "efarm_errno.h"
#include "efarm_proto.h"
#include "efarm_proto_v4.h"
#include "efarm_rma.h"
#include "efarm_test.h"
#include "proto_common.h"

enum { WLEN = 3 << 20, OFF = 4096 };

struct wd_rig {
    struct proto_pair p;
    uint8_t *mem, *local;
    struct efarm_region *rw;
    /* What the handler saw. */
    unsigned events;
    struct efarm_write_data last;
    bool data_in_place; /* the written range held the pattern when the handler ran */
    uint64_t seed;
};

static void on_write_data(void *ctx, const struct efarm_write_data *w)
{
    struct wd_rig *r = ctx;
    uint64_t at = w->direct ? OFF : w->addr - (uint64_t)(uintptr_t)r->mem;

    r->events++;
    r->last = *w;
    r->data_in_place = at <= WLEN && w->len <= WLEN - at;
    for (uint64_t i = 0; r->data_in_place && i < w->len; i++)
        if (r->mem[at + i] != proto_pattern(r->seed, i))
            r->data_in_place = false;
}

static void rig_up(struct wd_rig *r, const struct efarm_ep_attr *attr, bool handler)
{
    memset(r, 0, sizeof(*r));
    proto_use_efasim();
    setenv("EFASIM_RDMA_WRITE", "1", 1); /* a device generation with RDMA write */
    proto_pair_open(&r->p, attr, attr);
    r->mem = calloc(1, WLEN);
    r->local = calloc(1, WLEN);
    EXPECT_TRUE(r->mem && r->local);
    EXPECT_RET(efarm_expose(r->p.b, r->mem, WLEN, EFARM_EXPOSE_READ | EFARM_EXPOSE_WRITE, &r->rw),
               0);
    if (handler)
        efarm_ep_on_write_data(r->p.b, on_write_data, r);
    /*
     * A plain write first, so that a has b's HANDSHAKE before the cases: the
     * trigger that asks for it is an empty EAGER_RTW, which the cases count.
     */
    {
        struct efarm_riov iov = {(uint64_t)(uintptr_t)r->mem, 1, efarm_region_key(r->rw)};
        struct efarm_req w = {0};
        struct efarm_req *reqs[] = {&w};

        EXPECT_RET(efarm_write(r->p.a, r->p.a_to_b, r->local, 1, &iov, 1, EFARM_RMA_DC, &w), 0);
        proto_pair_wait(&r->p, reqs, 1, 20);
        EXPECT_RET(w.status, 0);
    }
}

static void rig_down(struct wd_rig *r)
{
    efarm_unexpose(r->p.b, r->rw);
    proto_pair_close(&r->p);
    free(r->mem);
    free(r->local);
}

static uint64_t counter(const struct efarm_ep *ep, size_t off)
{
    return *(const uint64_t *)((const char *)efarm_ep_counters(ep) + off);
}

#define CNT(ep, name) counter(ep, offsetof(struct efarm_counters, name))

/* Progress both until the handler has heard of `want` writes (or 20 s passed). */
static void wait_events(struct wd_rig *r, unsigned want)
{
    for (unsigned i = 0; i < 200000 && r->events < want; i++)
        proto_pair_spin(&r->p, 100);
    EXPECT_EQ(r->events, want);
}

/* What a write of len bytes with CQ data should go by, as efarm_rma.h documents it. */
static enum efarm_rma_proto expect_proto(const struct wd_rig *r, uint64_t len, bool direct, bool dc,
                                         bool no_rdma_read)
{
    const struct efarm_device_caps *caps = efarm_ep_caps(r->p.a);

    (void)dc;
    if (direct && caps->rdma_write && len > 0)
        return EFARM_RMA_DIRECT_WRITE;
    /*
     * An EAGER_RTW's header with CQ data and one range is 44 bytes (48 for DC)
     * and connid's 4 more: the sizes tried stay well clear of the edge.
     */
    if (len <= caps->max_msg_size - 128)
        return EFARM_RMA_EAGER_RTW;
    if (len >= 1048576 && caps->rdma_read && !no_rdma_read)
        return EFARM_RMA_LONGREAD_RTW;
    return EFARM_RMA_LONGCTS_RTW;
}

static void write_data_case(struct wd_rig *r, uint64_t len, uint32_t flags, uint64_t cq_data,
                            bool no_rdma_read)
{
    struct efarm_riov iov = {(uint64_t)(uintptr_t)(r->mem + OFF), len, efarm_region_key(r->rw)};
    struct efarm_req w = {0};
    struct efarm_req *reqs[] = {&w};
    unsigned before = r->events;
    uint64_t eager = efarm_ep_counters(r->p.b)->rx_by_type[EFARM_PKT_EAGER_RTW] +
                     efarm_ep_counters(r->p.b)->rx_by_type[EFARM_PKT_DC_EAGER_RTW];
    uint64_t decode_errors = CNT(r->p.b, decode_errors);
    enum efarm_rma_proto want =
        expect_proto(r, len, !(flags & EFARM_RMA_NO_DIRECT), flags & EFARM_RMA_DC, no_rdma_read);

    r->seed = len * 7 + flags;
    memset(r->mem, 0xee, OFF + len + 64);
    proto_fill(r->local, len, r->seed);
    EXPECT_RET(efarm_write_data(r->p.a, r->p.a_to_b, r->local, len, &iov, 1, flags, cq_data, &w),
               0);
    proto_pair_wait(&r->p, reqs, 1, 20);
    EXPECT_RET(w.status, 0);
    EXPECT_EQ(w.length, len);
    EXPECT_EQ(w.proto, want);
    wait_events(r, before + 1);
    EXPECT_TRUE(r->data_in_place);
    EXPECT_EQ(r->last.len, len);
    EXPECT_EQ(r->last.peer, r->p.b_to_a);
    if (want == EFARM_RMA_DIRECT_WRITE) {
        EXPECT_TRUE(r->last.direct);
        EXPECT_EQ(r->last.cq_data, cq_data & UINT32_MAX);
        EXPECT_EQ(r->last.addr, 0);
    } else {
        EXPECT_TRUE(!r->last.direct);
        EXPECT_EQ(r->last.cq_data, cq_data);
        EXPECT_EQ(r->last.addr, iov.addr);
    }
    /*
     * One request: a write that fits one packet is one EAGER_RTW, a longer one
     * none (counted where they arrive: a sender counts an RNR retry again).
     */
    EXPECT_EQ(efarm_ep_counters(r->p.b)->rx_by_type[EFARM_PKT_EAGER_RTW] +
                  efarm_ep_counters(r->p.b)->rx_by_type[EFARM_PKT_DC_EAGER_RTW] - eager,
              want == EFARM_RMA_EAGER_RTW ? 1u : 0u);
    EXPECT_EQ(r->mem[OFF - 1], 0xee);
    EXPECT_EQ(r->mem[OFF + len], 0xee);
    EXPECT_EQ(CNT(r->p.b, decode_errors), decode_errors);
    /* Nothing more is reported for it. */
    proto_pair_spin(&r->p, 2000);
    EXPECT_EQ(r->events, before + 1);
}

static void write_data_sizes(const struct efarm_ep_attr *attr, uint32_t flags)
{
    const uint64_t sizes[] = {0, 1, 4000, 8800, 8900, 20000, 100000, 600000, 2 << 20};
    struct wd_rig r;

    rig_up(&r, attr, true);
    for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        efarm_test_context("%llu bytes, flags %#x", (unsigned long long)sizes[i], flags);
        write_data_case(&r, sizes[i], flags, 0x8badf00d00000000ull + i * 0x10001ull, false);
    }
    EXPECT_EQ(CNT(r.p.b, rma_write_data), sizeof(sizes) / sizeof(sizes[0]));
    EXPECT_EQ(CNT(r.p.b, rma_write_data_lost), 0);
    rig_down(&r);
}

EFARM_TEST(proto_write_data_direct)
{
    write_data_sizes(NULL, 0);
}

EFARM_TEST(proto_write_data_direct_dc)
{
    write_data_sizes(NULL, EFARM_RMA_DC);
}

EFARM_TEST(proto_write_data_emulated)
{
    write_data_sizes(NULL, EFARM_RMA_NO_DIRECT);
}

EFARM_TEST(proto_write_data_emulated_dc)
{
    write_data_sizes(NULL, EFARM_RMA_NO_DIRECT | EFARM_RMA_DC);
}

/* Without RDMA read on the target, a long write with CQ data is LONGCTS_RTW in CTS rounds. */
EFARM_TEST(proto_write_data_longcts)
{
    struct efarm_ep_attr attr = {.no_rdma_read = true, .rx_window = 3, .cts_credits = 3};
    struct wd_rig r;

    rig_up(&r, &attr, true);
    write_data_case(&r, 2 << 20, EFARM_RMA_NO_DIRECT, 42, true);
    EXPECT_EQ(efarm_ep_counters(r.p.b)->rx_by_type[EFARM_PKT_LONGCTS_RTW], 1);
    rig_down(&r);
}

/* Plain writes are not reported; several ranges are refused at the call. */
EFARM_TEST(proto_write_data_only_with_data)
{
    struct wd_rig r;
    struct efarm_req w = {0};
    struct efarm_req *reqs[] = {&w};
    struct efarm_riov iov[2];

    rig_up(&r, NULL, true);
    iov[0] = (struct efarm_riov){(uint64_t)(uintptr_t)r.mem, 100, efarm_region_key(r.rw)};
    iov[1] = (struct efarm_riov){(uint64_t)(uintptr_t)r.mem + 200, 100, efarm_region_key(r.rw)};
    EXPECT_RET(efarm_write_data(r.p.a, r.p.a_to_b, r.local, 200, iov, 2, 0, 1, &w), -EINVAL);
    EXPECT_RET(efarm_write_data(r.p.a, r.p.a_to_b, r.local, 200, iov, 0, 0, 1, &w), -EINVAL);
    EXPECT_RET(efarm_write(r.p.a, r.p.a_to_b, r.local, 200, iov, 2, EFARM_RMA_DC, &w), 0);
    proto_pair_wait(&r.p, reqs, 1, 20);
    EXPECT_RET(w.status, 0);
    EXPECT_RET(efarm_write(r.p.a, r.p.a_to_b, r.local, 20000, iov, 1, EFARM_RMA_NO_DIRECT, &w),
               -EINVAL); /* 20000 bytes do not fit a 100-byte range */
    iov[0].len = 20000;
    EXPECT_RET(efarm_write(r.p.a, r.p.a_to_b, r.local, 20000, iov, 1, EFARM_RMA_DC, &w), 0);
    proto_pair_wait(&r.p, reqs, 1, 20);
    EXPECT_RET(w.status, 0);
    proto_pair_spin(&r.p, 2000);
    EXPECT_EQ(r.events, 0);
    EXPECT_EQ(CNT(r.p.b, rma_write_data), 0);
    rig_down(&r);
}

/* A refused write (unknown key, out of bounds) fails at the origin and is not reported. */
EFARM_TEST(proto_write_data_refused)
{
    struct wd_rig r;
    uint32_t flags[] = {EFARM_RMA_NO_DIRECT | EFARM_RMA_DC, EFARM_RMA_DC};

    rig_up(&r, NULL, true);
    for (unsigned f = 0; f < 2; f++)
        for (uint64_t len = 100; len <= 200000; len *= 2000) {
            struct efarm_riov bad[2] = {
                {(uint64_t)(uintptr_t)r.mem, len, efarm_region_key(r.rw) + 7777},
                {(uint64_t)(uintptr_t)r.mem + WLEN - 10, len, efarm_region_key(r.rw)}};

            for (unsigned b = 0; b < 2; b++) {
                struct efarm_req w = {0};
                struct efarm_req *reqs[] = {&w};

                efarm_test_context("%s, %llu bytes, flags %#x", b ? "out of bounds" : "bad key",
                                   (unsigned long long)len, flags[f]);
                EXPECT_RET(
                    efarm_write_data(r.p.a, r.p.a_to_b, r.local, len, &bad[b], 1, flags[f], 5, &w),
                    0);
                proto_pair_wait(&r.p, reqs, 1, 20);
                EXPECT_TRUE(w.status != 0);
            }
        }
    proto_pair_spin(&r.p, 2000);
    EXPECT_EQ(r.events, 0);
    rig_down(&r);
}

/* With no handler the write still lands; its report is counted as lost. */
EFARM_TEST(proto_write_data_no_handler)
{
    struct wd_rig r;
    uint32_t flags[] = {EFARM_RMA_NO_DIRECT | EFARM_RMA_DC, EFARM_RMA_DC};

    rig_up(&r, NULL, false);
    for (unsigned f = 0; f < 2; f++) {
        struct efarm_riov iov = {(uint64_t)(uintptr_t)r.mem, 5000, efarm_region_key(r.rw)};
        struct efarm_req w = {0};
        struct efarm_req *reqs[] = {&w};

        proto_fill(r.local, 5000, 9 + f);
        EXPECT_RET(efarm_write_data(r.p.a, r.p.a_to_b, r.local, 5000, &iov, 1, flags[f], 5, &w), 0);
        proto_pair_wait(&r.p, reqs, 1, 20);
        EXPECT_RET(w.status, 0);
        for (unsigned i = 0; i < 20000 && CNT(r.p.b, rma_write_data_lost) < f + 1u; i++)
            proto_pair_spin(&r.p, 100);
        proto_expect_pattern(r.mem, 5000, 9 + f);
    }
    EXPECT_EQ(CNT(r.p.b, rma_write_data_lost), 2);
    EXPECT_EQ(CNT(r.p.b, rma_write_data), 0);
    rig_down(&r);
}

/*
 * On a device with unsolicited write receive (EFASIM_UNSOLICITED_WRITE_RECV=1)
 * both endpoints create their QP so and advertise it (extra feature 8): writes
 * with CQ data still go by RDMA write with immediate, now taking no receive WR
 * at the target, and are reported as before; the target's receive buffers all
 * stay posted for packets (sends after them still arrive).
 */
EFARM_TEST(proto_write_data_unsolicited)
{
    struct wd_rig r;

    setenv("EFASIM_UNSOLICITED_WRITE_RECV", "1", 1);
    rig_up(&r, NULL, true);
    if (!efarm_ep_caps(r.p.a)->rdma_write || !efarm_ep_caps(r.p.a)->unsolicited_write_recv) {
        rig_down(&r);
        efarm_test_skip("the device offers no RDMA write or no unsolicited write receive");
    }
    for (unsigned i = 0; i < 600; i++) {
        efarm_test_context("write %u of 600 (more than the 512 receive buffers)", i);
        write_data_case(&r, 100 + i, EFARM_RMA_DC, 0x7000 + i, false);
        EXPECT_TRUE(r.last.direct);
    }
    EXPECT_EQ(CNT(r.p.b, rma_write_data), 600u);
    /* The target's send queue is whole: it answers an emulated DC write's RECEIPT. */
    write_data_case(&r, 5000, EFARM_RMA_DC | EFARM_RMA_NO_DIRECT, 0x8000, false);
    EXPECT_TRUE(!r.last.direct);
    rig_down(&r);
}
