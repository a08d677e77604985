/*
 * The engine suite, part 16: one-sided operations end to end between two
 * endpoints on efasim (efarm_rma.h). Writes and reads of every size class
 * (empty, one byte, one packet, several packets, larger than a device WR
 * would hold in one packet) over one and several remote ranges, direct
 * (RDMA) and emulated (RTW/RTR), with and without remote completion; the
 * subprotocol each used is checked by its counter. Atomics: every operation
 * and datatype pair protocol v4 carries against an independent reference,
 * fetch and compare results, multi-packet atomics that keep msg_id order,
 * concurrent fetch-and-add from two origins with no lost update. Refusals:
 * unknown key, out of bounds and a read-only region, direct and emulated:
 * the operation fails, the target's memory is unchanged and (emulated) the
 * refusal is counted. Bad arguments are rejected at the call.
 */
#include <complex.h>
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

enum { TLEN = 1 << 20 };

struct rma_rig {
    struct proto_pair p;
    uint8_t *mem;   /* b's exposed memory, TLEN bytes */
    uint8_t *ro;    /* b's read-only region, 4096 bytes */
    uint8_t *local; /* a's buffer */
    struct efarm_region *rw, *rdonly;
};

static void rig_up(struct rma_rig *r, const struct efarm_ep_attr *attr)
{
    proto_use_efasim();
    setenv("EFASIM_RDMA_WRITE", "1", 1); /* a device generation with RDMA write */
    proto_pair_open(&r->p, attr, attr);
    r->mem = calloc(1, TLEN);
    r->ro = calloc(1, 4096);
    r->local = calloc(1, TLEN);
    EXPECT_TRUE(r->mem && r->ro && r->local);
    EXPECT_RET(efarm_expose(r->p.b, r->mem, TLEN, EFARM_EXPOSE_READ | EFARM_EXPOSE_WRITE, &r->rw),
               0);
    EXPECT_RET(efarm_expose(r->p.b, r->ro, 4096, EFARM_EXPOSE_READ, &r->rdonly), 0);
}

static void rig_down(struct rma_rig *r)
{
    efarm_unexpose(r->p.b, r->rw);
    efarm_unexpose(r->p.b, r->rdonly);
    proto_pair_close(&r->p);
    free(r->mem);
    free(r->ro);
    free(r->local);
}

static struct efarm_riov riov_at(const struct rma_rig *r, uint64_t off, uint64_t len)
{
    return (struct efarm_riov){(uint64_t)(uintptr_t)(r->mem + off), len, efarm_region_key(r->rw)};
}

static uint64_t counter(const struct efarm_ep *ep, size_t off)
{
    return *(const uint64_t *)((const char *)efarm_ep_counters(ep) + off);
}

#define CNT(ep, name) counter(ep, offsetof(struct efarm_counters, name))

static void wait1(struct rma_rig *r, struct efarm_req *req)
{
    struct efarm_req *reqs[] = {req};

    proto_pair_wait(&r->p, reqs, 1, 20);
}

/* Split [off, off + len) of b's memory into n ranges with gaps between them (n <= 4). */
static uint32_t ranges(const struct rma_rig *r, uint64_t off, uint64_t len, uint32_t n,
                       struct efarm_riov *out, uint64_t *offs)
{
    uint64_t left = len, at = off;

    for (uint32_t i = 0; i < n; i++) {
        uint64_t part = i + 1 == n ? left : left / (n - i);

        out[i] = riov_at(r, at, part);
        offs[i] = at;
        left -= part;
        at += part + 64; /* a gap the operation must not touch */
    }
    return n;
}

/* b's ranges hold a's local pattern in order; the gaps after them and the byte before are 0xee. */
static void expect_ranges(const struct rma_rig *r, const struct efarm_riov *iov,
                          const uint64_t *offs, uint32_t niov)
{
    uint64_t pos = 0;

    for (uint32_t i = 0; i < niov; i++) {
        EXPECT_MEM_EQ(r->mem + offs[i], r->local + pos, iov[i].len);
        EXPECT_EQ(r->mem[offs[i] + iov[i].len], 0xee);
        pos += iov[i].len;
    }
    EXPECT_EQ(r->mem[4095], 0xee);
}

static void write_read_case(struct rma_rig *r, uint64_t len, uint32_t niov, uint32_t flags,
                            enum efarm_rma_proto want_w, enum efarm_rma_proto want_r, uint64_t seed)
{
    struct efarm_riov iov[4];
    uint64_t offs[4];
    struct efarm_req w = {0}, rd = {0};
    uint8_t *back = malloc(len + 1);

    memset(r->mem, 0xee, TLEN);
    proto_fill(r->local, len, seed);
    ranges(r, 4096, len, niov, iov, offs);
    EXPECT_RET(efarm_write(r->p.a, r->p.a_to_b, r->local, len, iov, niov, flags, &w), 0);
    wait1(r, &w);
    EXPECT_RET(w.status, 0);
    EXPECT_EQ(w.length, len);
    if (len)
        EXPECT_EQ(w.proto, want_w);
    /*
     * Each range holds its part of the pattern; the gaps and the bytes around are
     * untouched. A direct or delivery-complete write has placed its data when it
     * completes; an emulated one without EFARM_RMA_DC completes when its packets
     * left, and the target may still hold the last one unprocessed (it did, once
     * in about 80 runs on a loaded machine), so its ranges are checked after the
     * read, which the target serves after the write's packets.
     */
    if (!len || (flags & EFARM_RMA_DC) || w.proto == EFARM_RMA_DIRECT_WRITE)
        expect_ranges(r, iov, offs, niov);
    memset(back, 0, len + 1);
    EXPECT_RET(efarm_read(r->p.a, r->p.a_to_b, back, len, iov, niov, flags, &rd), 0);
    wait1(r, &rd);
    EXPECT_RET(rd.status, 0);
    if (len)
        EXPECT_EQ(rd.proto, want_r);
    proto_expect_pattern(back, len, seed);
    EXPECT_EQ(back[len], 0);
    expect_ranges(r, iov, offs, niov);
    free(back);
}

static uint64_t proto_count(const struct efarm_ep *ep, enum efarm_rma_proto proto)
{
    static const size_t offs[EFARM_RMA_PROTO_COUNT] = {
        [EFARM_RMA_DIRECT_WRITE] = offsetof(struct efarm_counters, rma_direct_write),
        [EFARM_RMA_EAGER_RTW] = offsetof(struct efarm_counters, rma_eager_rtw),
        [EFARM_RMA_DIRECT_READ] = offsetof(struct efarm_counters, rma_direct_read),
        [EFARM_RMA_SHORT_RTR] = offsetof(struct efarm_counters, rma_short_rtr),
        [EFARM_RMA_LONGCTS_RTW] = offsetof(struct efarm_counters, rma_longcts_rtw),
        [EFARM_RMA_LONGREAD_RTW] = offsetof(struct efarm_counters, rma_longread_rtw),
        [EFARM_RMA_LONGCTS_RTR] = offsetof(struct efarm_counters, rma_longcts_rtr),
        [EFARM_RMA_WRITE_RTA] = offsetof(struct efarm_counters, rma_write_rta),
        [EFARM_RMA_FETCH_RTA] = offsetof(struct efarm_counters, rma_fetch_rta),
        [EFARM_RMA_COMPARE_RTA] = offsetof(struct efarm_counters, rma_compare_rta),
    };

    return counter(ep, offs[proto]);
}

/*
 * What each size should use, as efarm_rma.h documents the choice: direct
 * RDMA when allowed; else for one remote range LONGREAD_RTW from read_min
 * (the target reads), LONGCTS_RTW above the medium size and one packet,
 * LONGCTS_RTR above one READRSP; else EAGER_RTW packets and SHORT_RTR.
 */
struct expect_cfg {
    bool direct_w, direct_r;
    uint64_t medium_max, read_min; /* what the endpoints were opened with */
};

static enum efarm_rma_proto expect_w(const struct expect_cfg *c, uint64_t mtu, uint64_t len,
                                     uint32_t niov)
{
    uint64_t one = c->medium_max > mtu ? c->medium_max : mtu;

    if (c->direct_w)
        return EFARM_RMA_DIRECT_WRITE;
    if (niov == 1 && len >= c->read_min)
        return EFARM_RMA_LONGREAD_RTW;
    return niov == 1 && len > one ? EFARM_RMA_LONGCTS_RTW : EFARM_RMA_EAGER_RTW;
}

static enum efarm_rma_proto expect_r(const struct expect_cfg *c, uint64_t mtu, uint64_t len,
                                     uint32_t niov)
{
    if (c->direct_r)
        return EFARM_RMA_DIRECT_READ;
    return niov == 1 && len > mtu - sizeof(struct efarm_wire_readrsp_hdr) ? EFARM_RMA_LONGCTS_RTR
                                                                          : EFARM_RMA_SHORT_RTR;
}

/*
 * What the device and the endpoints' attributes allow: a device without RDMA
 * write (EFA through rdma-core 44, which cannot ask for it) emulates writes, and
 * without RDMA read no target reads (no LONGREAD_RTW).
 */
static struct expect_cfg device_allows(const struct rma_rig *r, const struct efarm_ep_attr *attr,
                                       const struct expect_cfg *c)
{
    const struct efarm_device_caps *caps = efarm_ep_caps(r->p.a);
    struct expect_cfg out = *c;

    if (!caps->rdma_write)
        out.direct_w = false;
    if (!caps->rdma_read || (attr && attr->no_rdma_read)) {
        out.direct_r = false;
        out.read_min = UINT64_MAX;
    }
    return out;
}

static void write_read_sizes(const struct efarm_ep_attr *attr, uint32_t flags,
                             const struct expect_cfg *want_cfg)
{
    struct rma_rig r;
    struct expect_cfg cfg;
    const struct expect_cfg *c = &cfg;
    const uint64_t sizes[] = {1, 100, 4000, 8200, 3 * 9000 + 7, 256 * 1024, 600000};
    uint64_t before[EFARM_RMA_PROTO_COUNT], want[EFARM_RMA_PROTO_COUNT] = {0};
    uint64_t refused, served, mtu;

    rig_up(&r, attr);
    cfg = device_allows(&r, attr, want_cfg);
    mtu = efarm_ep_caps(r.p.a)->max_msg_size;
    for (unsigned p = 0; p < EFARM_RMA_PROTO_COUNT; p++)
        before[p] = proto_count(r.p.a, p);
    refused = CNT(r.p.b, rma_refused);
    served = CNT(r.p.b, rma_served);
    for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        for (uint32_t niov = 1; niov <= 4; niov += 3)
            if (sizes[i] >= niov) {
                enum efarm_rma_proto w = expect_w(c, mtu, sizes[i], niov),
                                     rd = expect_r(c, mtu, sizes[i], niov);

                efarm_test_context("%llu bytes over %u ranges: %s then %s",
                                   (unsigned long long)sizes[i], niov, efarm_rma_proto_name(w),
                                   efarm_rma_proto_name(rd));
                write_read_case(&r, sizes[i], niov, flags, w, rd, i * 10 + niov);
                want[w]++;
                want[rd]++;
            }
    /* Every case used the subprotocol expected (its counter too), and nothing was refused. */
    for (unsigned p = 0; p < EFARM_RMA_PROTO_COUNT; p++)
        EXPECT_EQ(proto_count(r.p.a, p) - before[p], want[p]);
    EXPECT_EQ(CNT(r.p.b, rma_refused), refused);
    if (c->direct_w && c->direct_r)
        EXPECT_EQ(CNT(r.p.b, rma_served), served); /* RDMA: the target's CPU never saw them */
    else
        EXPECT_TRUE(CNT(r.p.b, rma_served) > served);
    rig_down(&r);
}

static const struct expect_cfg g_defaults = {.medium_max = 65536, .read_min = 1048576};

EFARM_TEST(proto_rma_write_read_direct)
{
    struct expect_cfg c = g_defaults;

    c.direct_w = c.direct_r = true;
    write_read_sizes(NULL, 0, &c);
}

EFARM_TEST(proto_rma_write_read_emulated)
{
    write_read_sizes(NULL, EFARM_RMA_NO_DIRECT, &g_defaults);
}

/*
 * The long subprotocols in every corner: LONGREAD_RTW from 64 KiB (the
 * target reads by RDMA), LONGCTS_RTW and LONGCTS_RTR with grants of 3
 * packets, so a write or read of 600000 bytes takes dozens of CTS rounds.
 */
EFARM_TEST(proto_rma_write_read_long)
{
    struct efarm_ep_attr attr = {
        .medium_max = 1, .read_min = 65536, .rx_window = 3, .cts_credits = 3};
    struct expect_cfg c = {.medium_max = 1, .read_min = 65536};

    write_read_sizes(&attr, EFARM_RMA_NO_DIRECT, &c);
    attr.read_min = UINT64_MAX; /* LONGCTS_RTW for every multi-packet write */
    c.read_min = UINT64_MAX;
    write_read_sizes(&attr, EFARM_RMA_NO_DIRECT, &c);
}

EFARM_TEST(proto_rma_write_read_emulated_dc)
{
    struct rma_rig r;
    uint64_t dc;

    rig_up(&r, NULL);
    dc = CNT(r.p.a, rma_dc);
    write_read_case(&r, 20000, 2, EFARM_RMA_NO_DIRECT | EFARM_RMA_DC, EFARM_RMA_EAGER_RTW,
                    EFARM_RMA_SHORT_RTR, 7);
    EXPECT_TRUE(CNT(r.p.a, rma_dc) >= dc + 1);
    EXPECT_TRUE(efarm_ep_counters(r.p.b)->tx_by_type[EFARM_PKT_RECEIPT] >= 3);
    EXPECT_TRUE(efarm_ep_counters(r.p.a)->tx_by_type[EFARM_PKT_DC_EAGER_RTW] >= 3);
    /* A long DC write: DC_LONGCTS_RTW, done at its RECEIPT. */
    write_read_case(&r, 200000, 1, EFARM_RMA_NO_DIRECT | EFARM_RMA_DC, EFARM_RMA_LONGCTS_RTW,
                    EFARM_RMA_LONGCTS_RTR, 8);
    EXPECT_EQ(efarm_ep_counters(r.p.a)->tx_by_type[EFARM_PKT_DC_LONGCTS_RTW], 1);
    EXPECT_EQ(efarm_ep_counters(r.p.a)->tx_by_type[EFARM_PKT_LONGCTS_RTW], 0);
    rig_down(&r);
}

/* Endpoints without RDMA write (attribute or tunable) emulate writes and still read directly. */
EFARM_TEST(proto_rma_no_rdma_write_negotiated)
{
    struct efarm_ep_attr attr = {.no_rdma_write = true};
    struct expect_cfg c = g_defaults;

    c.direct_r = true;
    write_read_sizes(&attr, 0, &c);
}

/* Without RDMA read on one side, reads are emulated and writes still direct; no LONGREAD_RTW. */
EFARM_TEST(proto_rma_no_rdma_read_negotiated)
{
    struct efarm_ep_attr attr = {.no_rdma_read = true, .read_min = 65536};
    struct expect_cfg c = g_defaults;

    c.direct_w = true;
    write_read_sizes(&attr, 0, &c);
    attr.no_rdma_write = true;
    c.direct_w = false;
    c.read_min = UINT64_MAX; /* the target cannot read: LONGCTS_RTW instead */
    write_read_sizes(&attr, 0, &c);
}

/*
 * EFARM_RMA_PROTO (efarm_ep_attr.rma_proto here) forces subprotocols where
 * their facts hold: LONGCTS_RTR even for 100 bytes, SHORT_RTR and EAGER_RTW
 * packets for 600000, LONGREAD_RTW from 20000 bytes; not LONGCTS_RTW for one
 * packet (its REQ must leave data for CTSDATA), nor a long one on 4 ranges,
 * nor RDMA with EFARM_RMA_NO_DIRECT: those go as without it. The rma_forced
 * counter counts what the forced ones carried; an unknown name refuses the
 * endpoint.
 */
EFARM_TEST(proto_rma_forced_subprotocols)
{
    static const struct {
        const char *force;
        uint64_t len;
        uint32_t niov, flags;
        enum efarm_rma_proto w, r;
        unsigned forced;
    } cases[] = {
        {"longcts_rtw,longcts_rtr", 100, 1, EFARM_RMA_NO_DIRECT, EFARM_RMA_EAGER_RTW,
         EFARM_RMA_LONGCTS_RTR, 1},
        {"longcts_rtw,longcts_rtr", 20000, 1, EFARM_RMA_NO_DIRECT, EFARM_RMA_LONGCTS_RTW,
         EFARM_RMA_LONGCTS_RTR, 2},
        {"longcts_rtw,longcts_rtr", 20000, 4, EFARM_RMA_NO_DIRECT, EFARM_RMA_EAGER_RTW,
         EFARM_RMA_SHORT_RTR, 0},
        {"eager_rtw,short_rtr", 600000, 1, EFARM_RMA_NO_DIRECT, EFARM_RMA_EAGER_RTW,
         EFARM_RMA_SHORT_RTR, 2},
        {"longread_rtw", 20000, 1, EFARM_RMA_NO_DIRECT, EFARM_RMA_LONGREAD_RTW,
         EFARM_RMA_LONGCTS_RTR, 1},
        {"direct_write,direct_read", 20000, 1, EFARM_RMA_NO_DIRECT, EFARM_RMA_EAGER_RTW,
         EFARM_RMA_LONGCTS_RTR, 0},
        {"direct_write,direct_read", 20000, 1, 0, EFARM_RMA_DIRECT_WRITE, EFARM_RMA_DIRECT_READ, 2},
    };
    struct efarm_ep_attr attr = {.rma_proto = "bulk"};
    struct efarm_ep *ep = NULL;

    proto_use_efasim();
    EXPECT_RET(efarm_ep_open(&attr, &ep), -EINVAL);
    for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct rma_rig r;
        enum efarm_rma_proto w = cases[i].w;
        unsigned forced = cases[i].forced;

        efarm_test_context("EFARM_RMA_PROTO=%s, %llu bytes over %u ranges", cases[i].force,
                           (unsigned long long)cases[i].len, cases[i].niov);
        attr.rma_proto = cases[i].force;
        rig_up(&r, &attr);
        if (w == EFARM_RMA_DIRECT_WRITE && !efarm_ep_caps(r.p.a)->rdma_write) {
            /* No RDMA write on this device: the write goes as without the force. */
            struct expect_cfg emulated = {.medium_max = 65536, .read_min = 1048576};

            w = expect_w(&emulated, efarm_ep_caps(r.p.a)->max_msg_size, cases[i].len,
                         cases[i].niov);
            forced--;
        }
        write_read_case(&r, cases[i].len, cases[i].niov, cases[i].flags, w, cases[i].r, 40 + i);
        EXPECT_EQ(CNT(r.p.a, rma_forced), forced);
        rig_down(&r);
    }
}

/* A zero-length operation completes at once and sends nothing. */
EFARM_TEST(proto_rma_zero_length)
{
    struct rma_rig r;
    struct efarm_req req = {0};
    struct efarm_riov iov;
    uint64_t pkts;

    rig_up(&r, NULL);
    iov = riov_at(&r, 0, 0);
    pkts = efarm_ep_counters(r.p.a)->tx_pkts;
    EXPECT_RET(efarm_write(r.p.a, r.p.a_to_b, r.local, 0, &iov, 1, EFARM_RMA_DC, &req), 0);
    EXPECT_TRUE(req.done);
    EXPECT_RET(req.status, 0);
    EXPECT_EQ(efarm_ep_counters(r.p.a)->tx_pkts, pkts);
    rig_down(&r);
}

/* ---- Atomics --------------------------------------------------------------------------- */

/* Independent reference of one element's new value, per operation, on int64/double/etc. */
static int64_t ref_i64(uint32_t op, int64_t d, int64_t s, int64_t c)
{
    switch (op) {
    case EFARM_AOP_MIN:
        return s < d ? s : d;
    case EFARM_AOP_MAX:
        return s > d ? s : d;
    case EFARM_AOP_SUM:
        return (int64_t)((uint64_t)d + (uint64_t)s);
    case EFARM_AOP_PROD:
        return (int64_t)((uint64_t)d * (uint64_t)s);
    case EFARM_AOP_LOR:
        return d || s;
    case EFARM_AOP_LAND:
        return d && s;
    case EFARM_AOP_BOR:
        return d | s;
    case EFARM_AOP_BAND:
        return d & s;
    case EFARM_AOP_LXOR:
        return !d != !s;
    case EFARM_AOP_BXOR:
        return d ^ s;
    case EFARM_AOP_READ:
        return d;
    case EFARM_AOP_WRITE:
        return s;
    case EFARM_AOP_CSWAP:
        return d == c ? s : d;
    case EFARM_AOP_CSWAP_NE:
        return d != c ? s : d;
    case EFARM_AOP_CSWAP_LE:
        return c <= d ? s : d;
    case EFARM_AOP_CSWAP_LT:
        return c < d ? s : d;
    case EFARM_AOP_CSWAP_GE:
        return c >= d ? s : d;
    case EFARM_AOP_CSWAP_GT:
        return c > d ? s : d;
    default: /* MSWAP */
        return (s & c) | (d & ~c);
    }
}

static enum efarm_atomic_kind op_kind(uint32_t op)
{
    return op >= EFARM_AOP_CSWAP  ? EFARM_ATOMIC_COMPARE
           : op == EFARM_AOP_READ ? EFARM_ATOMIC_FETCH
                                  : EFARM_ATOMIC_WRITE;
}

/* Every valid operation on int64 elements, as write and as fetch, against the reference. */
EFARM_TEST(proto_rma_atomic_int64_all_ops)
{
    enum { N = 37 };
    struct rma_rig r;
    int64_t d0[N], s[N], c[N], res[N];
    struct efarm_riov iov;
    unsigned done = 0;

    rig_up(&r, NULL);
    iov = riov_at(&r, 64, sizeof(d0));
    for (uint32_t op = 0; op < EFARM_AOP_COUNT; op++) {
        for (int fetch = 0; fetch < 2; fetch++) {
            enum efarm_atomic_kind kind = op_kind(op);
            struct efarm_req req = {0};
            int64_t got[N];

            if (fetch && kind != EFARM_ATOMIC_WRITE)
                continue; /* READ and the compares ran once already */
            if (fetch)
                kind = EFARM_ATOMIC_FETCH;
            if (!efarm_atomic_valid(kind, op, EFARM_DT_INT64))
                continue;
            for (int i = 0; i < N; i++) {
                d0[i] = (int64_t)(i * 7919 % 13) - 6;
                s[i] = (int64_t)(i * 104729 % 11) - 5;
                c[i] = i % 3 ? d0[i] : d0[i] + 1;
                if (op == EFARM_AOP_MSWAP)
                    c[i] = (int64_t)(0x5555aaaa0f0f00ffull * (uint64_t)(i + 1));
            }
            memcpy(r.mem + 64, d0, sizeof(d0));
            memset(res, 0x5a, sizeof(res));
            EXPECT_RET(efarm_atomic(r.p.a, r.p.a_to_b, op, EFARM_DT_INT64, s,
                                    kind == EFARM_ATOMIC_COMPARE ? c : NULL,
                                    kind == EFARM_ATOMIC_WRITE ? NULL : res, N, &iov, 1, 0, &req),
                       0);
            wait1(&r, &req);
            EXPECT_RET(req.status, 0);
            memcpy(got, r.mem + 64, sizeof(got));
            for (int i = 0; i < N; i++) {
                EXPECT_EQ(got[i], ref_i64(op, d0[i], s[i], c[i]));
                if (kind != EFARM_ATOMIC_WRITE)
                    EXPECT_EQ(res[i], d0[i]);
            }
            done++;
        }
    }
    EXPECT_EQ(done, 11 + 12 + 7); /* write ops, fetch ops (with READ and WRITE), compare ops */
    rig_down(&r);
}

/* Which pairs are valid: the reference's table, spot-checked, and unknown values refused. */
EFARM_TEST(proto_rma_atomic_valid_pairs)
{
    EXPECT_TRUE(efarm_atomic_valid(EFARM_ATOMIC_WRITE, EFARM_AOP_SUM, EFARM_DT_FLOAT_COMPLEX));
    EXPECT_TRUE(!efarm_atomic_valid(EFARM_ATOMIC_WRITE, EFARM_AOP_MIN, EFARM_DT_FLOAT_COMPLEX));
    EXPECT_TRUE(!efarm_atomic_valid(EFARM_ATOMIC_WRITE, EFARM_AOP_BOR, EFARM_DT_DOUBLE));
    EXPECT_TRUE(efarm_atomic_valid(EFARM_ATOMIC_WRITE, EFARM_AOP_LXOR, EFARM_DT_DOUBLE));
    EXPECT_TRUE(!efarm_atomic_valid(EFARM_ATOMIC_WRITE, EFARM_AOP_READ, EFARM_DT_INT32));
    EXPECT_TRUE(efarm_atomic_valid(EFARM_ATOMIC_FETCH, EFARM_AOP_READ, EFARM_DT_INT32));
    EXPECT_TRUE(!efarm_atomic_valid(EFARM_ATOMIC_FETCH, EFARM_AOP_CSWAP, EFARM_DT_INT32));
    EXPECT_TRUE(efarm_atomic_valid(EFARM_ATOMIC_COMPARE, EFARM_AOP_CSWAP, EFARM_DT_FLOAT_COMPLEX));
    EXPECT_TRUE(
        !efarm_atomic_valid(EFARM_ATOMIC_COMPARE, EFARM_AOP_CSWAP_LT, EFARM_DT_FLOAT_COMPLEX));
    EXPECT_TRUE(!efarm_atomic_valid(EFARM_ATOMIC_COMPARE, EFARM_AOP_MSWAP, EFARM_DT_FLOAT));
    EXPECT_TRUE(!efarm_atomic_valid(EFARM_ATOMIC_WRITE, EFARM_AOP_SUM, 11)); /* double complex */
    EXPECT_TRUE(!efarm_atomic_valid(EFARM_ATOMIC_WRITE, 19, EFARM_DT_INT8));
    EXPECT_EQ(efarm_atomic_dt_size(EFARM_DT_FLOAT_COMPLEX), 8);
    EXPECT_EQ(efarm_atomic_dt_size(EFARM_DT_INT16), 2);
    EXPECT_EQ(efarm_atomic_dt_size(13), 0);
}

/* Small types and reals through the engine: uint8 MSWAP wraps nothing, double MIN, complex PROD. */
EFARM_TEST(proto_rma_atomic_types)
{
    struct rma_rig r;
    struct efarm_req req = {0};
    struct efarm_riov iov;
    uint8_t u8[5] = {0xff, 0x00, 0xf0, 0x0f, 0xaa}, s8[5] = {1, 2, 3, 4, 5},
            m8[5] = {0xff, 0x0f, 0xf0, 0x00, 0x55}, old8[5];
    double dd[3] = {1.5, -2.0, 7.25}, ds[3] = {2.0, -3.0, 7.0}, got[3];
    float _Complex cd[2] = {1.0f + 2.0f * I, -1.0f}, cs[2] = {3.0f - 1.0f * I, 2.0f * I}, cg[2];

    rig_up(&r, NULL);
    memcpy(r.mem + 1, u8, 5); /* unaligned on purpose */
    iov = riov_at(&r, 1, 5);
    EXPECT_RET(efarm_atomic(r.p.a, r.p.a_to_b, EFARM_AOP_MSWAP, EFARM_DT_UINT8, s8, m8, old8, 5,
                            &iov, 1, 0, &req),
               0);
    wait1(&r, &req);
    EXPECT_RET(req.status, 0);
    EXPECT_MEM_EQ(old8, u8, 5);
    for (int i = 0; i < 5; i++)
        EXPECT_EQ(r.mem[1 + i], (uint8_t)((s8[i] & m8[i]) | (u8[i] & ~m8[i])));

    memcpy(r.mem + 100, dd, sizeof(dd));
    iov = riov_at(&r, 100, sizeof(dd));
    EXPECT_RET(efarm_atomic(r.p.a, r.p.a_to_b, EFARM_AOP_MIN, EFARM_DT_DOUBLE, ds, NULL, NULL, 3,
                            &iov, 1, EFARM_RMA_DC, &req),
               0);
    wait1(&r, &req);
    EXPECT_RET(req.status, 0);
    memcpy(got, r.mem + 100, sizeof(got));
    EXPECT_TRUE(got[0] == 1.5 && got[1] == -3.0 && got[2] == 7.0);

    memcpy(r.mem + 200, cd, sizeof(cd));
    iov = riov_at(&r, 200, sizeof(cd));
    EXPECT_RET(efarm_atomic(r.p.a, r.p.a_to_b, EFARM_AOP_PROD, EFARM_DT_FLOAT_COMPLEX, cs, NULL,
                            NULL, 2, &iov, 1, EFARM_RMA_DC, &req),
               0);
    wait1(&r, &req);
    EXPECT_RET(req.status, 0);
    memcpy(cg, r.mem + 200, sizeof(cg));
    EXPECT_TRUE(cg[0] == cd[0] * cs[0] && cg[1] == cd[1] * cs[1]);
    rig_down(&r);
}

/*
 * An atomic of many packets, then a fetch of the same elements started right
 * after: msg_id order means the fetch sees every element already added.
 */
EFARM_TEST(proto_rma_atomic_multi_packet_order)
{
    enum { N = 5000 };
    struct rma_rig r;
    int64_t *ones = malloc(N * sizeof(int64_t)), *res = malloc(N * sizeof(int64_t));
    struct efarm_req add = {0}, fetch = {0};
    struct efarm_req *reqs[] = {&add, &fetch};
    struct efarm_riov iov[2];
    uint64_t before;

    rig_up(&r, NULL);
    for (int i = 0; i < N; i++) {
        int64_t v = i;

        ones[i] = 1;
        memcpy(r.mem + 8 * i, &v, 8);
    }
    iov[0] = riov_at(&r, 0, 8 * 1000);
    iov[1] = riov_at(&r, 8 * 1000, 8 * (N - 1000));
    before = efarm_ep_counters(r.p.a)->tx_by_type[EFARM_PKT_WRITE_RTA];
    EXPECT_RET(efarm_atomic(r.p.a, r.p.a_to_b, EFARM_AOP_SUM, EFARM_DT_INT64, ones, NULL, NULL, N,
                            iov, 2, 0, &add),
               0);
    EXPECT_RET(efarm_atomic(r.p.a, r.p.a_to_b, EFARM_AOP_READ, EFARM_DT_INT64, NULL, NULL, res, N,
                            iov, 2, 0, &fetch),
               0);
    proto_pair_wait(&r.p, reqs, 2, 20);
    EXPECT_RET(add.status, 0);
    EXPECT_RET(fetch.status, 0);
    EXPECT_TRUE(efarm_ep_counters(r.p.a)->tx_by_type[EFARM_PKT_WRITE_RTA] - before >= 4);
    for (int i = 0; i < N; i++)
        EXPECT_EQ(res[i], i + 1);
    free(ones);
    free(res);
    rig_down(&r);
}

/* Two origins add to one counter concurrently: no update is lost. */
EFARM_TEST(proto_rma_atomic_two_origins)
{
    enum { OPS = 300 };
    struct rma_rig r;
    struct efarm_ep *c;
    uint8_t raw[EFARM_RAW_ADDR_LEN];
    efarm_peer_t c_to_b;
    struct efarm_riov iov;
    int64_t one = 1, tw = 2, old_a[OPS], old_c[OPS], final;
    struct efarm_req ra[OPS], rc[OPS];
    unsigned next_a = 0, next_c = 0, done = 0;
    double deadline;

    rig_up(&r, NULL);
    EXPECT_RET(efarm_ep_open(NULL, &c), 0);
    efarm_ep_addr(r.p.b, raw);
    EXPECT_RET(efarm_av_insert(c, raw, &c_to_b), 0);
    memset(r.mem, 0, 8);
    iov = riov_at(&r, 0, 8);
    memset(ra, 0, sizeof(ra));
    memset(rc, 0, sizeof(rc));
    deadline = proto_now_s() + 20;
    while (done < 2 * OPS && proto_now_s() < deadline) {
        if (next_a < OPS && efarm_atomic(r.p.a, r.p.a_to_b, EFARM_AOP_SUM, EFARM_DT_INT64, &one,
                                         NULL, &old_a[next_a], 1, &iov, 1, 0, &ra[next_a]) == 0)
            next_a++;
        if (next_c < OPS && efarm_atomic(c, c_to_b, EFARM_AOP_SUM, EFARM_DT_INT64, &tw, NULL,
                                         &old_c[next_c], 1, &iov, 1, 0, &rc[next_c]) == 0)
            next_c++;
        efarm_ep_progress(r.p.a);
        efarm_ep_progress(r.p.b);
        efarm_ep_progress(c);
        done = 0;
        for (unsigned i = 0; i < OPS; i++)
            done += ra[i].done + rc[i].done;
    }
    EXPECT_EQ(done, 2 * OPS);
    memcpy(&final, r.mem, 8);
    EXPECT_EQ(final, 3 * OPS);
    /* Every old value is distinct: each add saw all earlier ones. */
    for (unsigned i = 1; i < OPS; i++) {
        EXPECT_TRUE(old_a[i] > old_a[i - 1]);
        EXPECT_TRUE(old_c[i] > old_c[i - 1]);
    }
    efarm_ep_close(c);
    rig_down(&r);
}

/* ---- Refusals and bad arguments ------------------------------------------------------------ */

static void refusal_case(struct rma_rig *r, uint32_t flags, bool emulated)
{
    struct efarm_riov bad_key = riov_at(r, 0, 64), past_end = riov_at(r, TLEN - 32, 64),
                      ro = {(uint64_t)(uintptr_t)r->ro, 64, efarm_region_key(r->rdonly)};
    const struct efarm_riov *cases[] = {&bad_key, &past_end, &ro};
    uint8_t before[4096];
    uint64_t refused = CNT(r->p.b, rma_refused);

    bad_key.key += 99991;
    memset(r->ro, 0x3c, 4096);
    memset(r->mem, 0x3c, TLEN);
    memcpy(before, r->ro, 4096);
    memset(r->local, 0x77, 64);
    for (unsigned i = 0; i < 3; i++) {
        struct efarm_req req = {0};

        EXPECT_RET(efarm_write(r->p.a, r->p.a_to_b, r->local, 64, cases[i], 1, flags, &req), 0);
        wait1(r, &req);
        EXPECT_TRUE(req.status != 0);
        if (emulated)
            EXPECT_RET(req.status, EFARM_E(PROTO_RMA_REFUSED));
    }
    /* A read of a range beyond the region fails too; a read-only region reads fine. */
    {
        struct efarm_req req = {0};

        EXPECT_RET(efarm_read(r->p.a, r->p.a_to_b, r->local, 64, &past_end, 1, flags, &req), 0);
        wait1(r, &req);
        EXPECT_TRUE(req.status != 0);
        EXPECT_RET(efarm_read(r->p.a, r->p.a_to_b, r->local, 64, &ro, 1, flags, &req), 0);
        wait1(r, &req);
        EXPECT_RET(req.status, 0);
        EXPECT_EQ(r->local[0], 0x3c);
    }
    /* An atomic on the read-only region is refused too (atomics need write access). */
    {
        struct efarm_req req = {0};
        struct efarm_riov ro8 = ro;
        int64_t one = 1, old = 0;

        ro8.len = 8;
        EXPECT_RET(efarm_atomic(r->p.a, r->p.a_to_b, EFARM_AOP_SUM, EFARM_DT_INT64, &one, NULL,
                                &old, 1, &ro8, 1, 0, &req),
                   0);
        wait1(r, &req);
        EXPECT_RET(req.status, EFARM_E(PROTO_RMA_REFUSED));
    }
    EXPECT_MEM_EQ(r->ro, before, 4096);
    EXPECT_EQ(r->mem[TLEN - 1], 0x3c);
    EXPECT_EQ(r->mem[0], 0x3c);
    if (emulated)
        EXPECT_TRUE(CNT(r->p.b, rma_refused) >= refused + 5);
    else
        EXPECT_TRUE(CNT(r->p.b, rma_refused) >= refused + 1); /* the atomic */
    EXPECT_TRUE(CNT(r->p.a, rma_errors) >= 5);
}

EFARM_TEST(proto_rma_refused_emulated)
{
    struct rma_rig r;

    rig_up(&r, NULL);
    refusal_case(&r, EFARM_RMA_NO_DIRECT | EFARM_RMA_DC, true);
    rig_down(&r);
}

EFARM_TEST(proto_rma_refused_direct)
{
    struct rma_rig r;

    rig_up(&r, NULL);
    if (!efarm_ep_caps(r.p.a)->rdma_write)
        efarm_test_skip("the device has no RDMA write (EFA through rdma-core 44): writes are "
                        "emulated, and proto_rma_refused_emulated covers their refusals");
    refusal_case(&r, 0, false);
    /* The endpoint still works after the device refused accesses. */
    write_read_case(&r, 5000, 1, 0, EFARM_RMA_DIRECT_WRITE, EFARM_RMA_DIRECT_READ, 3);
    rig_down(&r);
}

/*
 * Long emulated operations refused at the target touch nothing and still
 * end: DC_LONGCTS_RTW at its RECEIPT, LONGREAD_RTW at its EOR (no read
 * posted), LONGCTS_RTR at its READRSP, each with the REFUSED flag, so the
 * origin's operation fails. A plain LONGCTS_RTW completes when its data is
 * out, as a plain EAGER_RTW does: protocol v4 gives it no answer, and the
 * refusal is counted at the target.
 */
EFARM_TEST(proto_rma_refused_long)
{
    struct efarm_ep_attr attr = {.medium_max = 1, .read_min = 65536};
    const uint64_t len = 100000;
    struct rma_rig r;
    struct efarm_riov bad;
    struct {
        bool write;
        uint32_t flags;
        enum efarm_rma_proto proto;
        int status;
    } cases[] = {
        {true, EFARM_RMA_NO_DIRECT, EFARM_RMA_LONGREAD_RTW, EFARM_E(PROTO_RMA_REFUSED)},
        {false, EFARM_RMA_NO_DIRECT, EFARM_RMA_LONGCTS_RTR, EFARM_E(PROTO_RMA_REFUSED)},
    };
    uint64_t refused, reads;

    rig_up(&r, &attr);
    bad = riov_at(&r, 0, len);
    bad.key += 99991;
    memset(r.mem, 0x3c, TLEN);
    memset(r.local, 0x77, len);
    refused = CNT(r.p.b, rma_refused);
    reads = CNT(r.p.b, reads_posted);
    for (unsigned i = 0; i < 2; i++) {
        struct efarm_req req = {0};

        efarm_test_context("case %u", i);
        if (cases[i].write)
            EXPECT_RET(efarm_write(r.p.a, r.p.a_to_b, r.local, len, &bad, 1, cases[i].flags, &req),
                       0);
        else
            EXPECT_RET(efarm_read(r.p.a, r.p.a_to_b, r.local, len, &bad, 1, cases[i].flags, &req),
                       0);
        wait1(&r, &req);
        EXPECT_EQ(req.proto, cases[i].proto);
        EXPECT_RET(req.status, cases[i].status);
        EXPECT_EQ(req.length, 0);
    }
    EXPECT_EQ(CNT(r.p.b, reads_posted), reads);
    EXPECT_TRUE(CNT(r.p.b, rma_refused) >= refused + 2);
    EXPECT_EQ(r.local[0], 0x77); /* the refused read wrote nothing */
    rig_down(&r);

    attr.read_min = UINT64_MAX;
    rig_up(&r, &attr);
    bad = riov_at(&r, 4096, len);
    bad.key += 99991;
    memset(r.mem, 0x3c, TLEN);
    refused = CNT(r.p.b, rma_refused);
    for (unsigned dc = 0; dc < 2; dc++) {
        struct efarm_req req = {0};

        efarm_test_context("LONGCTS_RTW, DC %u", dc);
        EXPECT_RET(efarm_write(r.p.a, r.p.a_to_b, r.local, len, &bad, 1,
                               EFARM_RMA_NO_DIRECT | (dc ? EFARM_RMA_DC : 0), &req),
                   0);
        wait1(&r, &req);
        EXPECT_EQ(req.proto, EFARM_RMA_LONGCTS_RTW);
        EXPECT_RET(req.status, dc ? EFARM_E(PROTO_RMA_REFUSED) : 0);
    }
    /* Both were refused and counted at the target, and their data dropped. */
    for (int i = 0; i < 100 && CNT(r.p.b, rma_refused) < refused + 2; i++)
        proto_pair_spin(&r.p, 1000);
    EXPECT_EQ(CNT(r.p.b, rma_refused), refused + 2);
    for (uint64_t i = 0; i < TLEN; i += 4093)
        EXPECT_EQ(r.mem[i], 0x3c);
    /* The endpoints still work: the same write to the right key lands. */
    write_read_case(&r, len, 1, EFARM_RMA_NO_DIRECT | EFARM_RMA_DC, EFARM_RMA_LONGCTS_RTW,
                    EFARM_RMA_LONGCTS_RTR, 9);
    rig_down(&r);
}

/*
 * READ_NACK for a write (section 4.7): the target cannot register the range
 * for its RDMA read of a LONGREAD_RTW, answers READ_NACK, and the origin
 * sends the write again as a data-less LONGCTS_RTW with the READ_NACK flag,
 * then CTSDATA. EFASIM_MAX_MR = 4 leaves the target its two regions and no
 * more; the origin keeps one registration for its buffer.
 */
EFARM_TEST(proto_rma_longread_rtw_nack)
{
    struct efarm_ep_attr attr = {.read_min = 65536};
    struct rma_rig r;

    setenv("EFASIM_MAX_MR", "4", 1);
    rig_up(&r, &attr);
    for (unsigned dc = 0; dc < 2; dc++) {
        uint64_t nacks = CNT(r.p.b, read_nacks_sent), got = CNT(r.p.a, read_nacks_recv);
        uint64_t served = CNT(r.p.b, rma_served);

        efarm_test_context("DC %u", dc);
        write_read_case(&r, 100000, 1, EFARM_RMA_NO_DIRECT | (dc ? EFARM_RMA_DC : 0),
                        EFARM_RMA_LONGREAD_RTW, EFARM_RMA_LONGCTS_RTR, 20 + dc);
        EXPECT_EQ(CNT(r.p.b, read_nacks_sent), nacks + 1);
        EXPECT_EQ(CNT(r.p.a, read_nacks_recv), got + 1);
        EXPECT_EQ(CNT(r.p.b, rma_served), served + 3); /* the LONGREAD, its LONGCTS, the read */
    }
    EXPECT_EQ(efarm_ep_counters(r.p.a)->tx_by_type[EFARM_PKT_DC_LONGCTS_RTW], 1);
    EXPECT_EQ(efarm_ep_counters(r.p.a)->tx_by_type[EFARM_PKT_LONGCTS_RTW], 1);
    rig_down(&r);
    unsetenv("EFASIM_MAX_MR");
}

EFARM_TEST(proto_rma_bad_arguments)
{
    struct rma_rig r;
    struct efarm_req req = {0};
    struct efarm_riov iov, five[5];
    int64_t v = 0;

    rig_up(&r, NULL);
    iov = riov_at(&r, 0, 16);
    for (int i = 0; i < 5; i++)
        five[i] = riov_at(&r, i * 16, 16);
    EXPECT_RET(efarm_write(r.p.a, r.p.a_to_b, r.local, 8, &iov, 1, 0, &req), -EINVAL); /* != 16 */
    EXPECT_RET(efarm_write(r.p.a, r.p.a_to_b, r.local, 80, five, 5, 0, &req), -EINVAL);
    EXPECT_RET(efarm_write(r.p.a, r.p.a_to_b, r.local, 16, &iov, 0, 0, &req), -EINVAL);
    EXPECT_RET(efarm_write(r.p.a, r.p.a_to_b, r.local, 16, &iov, 1, 0x80, &req), -EINVAL);
    EXPECT_RET(efarm_read(r.p.a, 12345, r.local, 16, &iov, 1, 0, &req), -EINVAL);
    EXPECT_RET(efarm_read(r.p.a, r.p.a_to_b, NULL, 16, &iov, 1, 0, &req), -EINVAL);
    EXPECT_RET(
        efarm_atomic(r.p.a, r.p.a_to_b, EFARM_AOP_SUM, 11, &v, NULL, NULL, 2, &iov, 1, 0, &req),
        -EINVAL); /* double complex: no such datatype here */
    EXPECT_RET(efarm_atomic(r.p.a, r.p.a_to_b, EFARM_AOP_BOR, EFARM_DT_DOUBLE, &v, NULL, NULL, 2,
                            &iov, 1, 0, &req),
               -EOPNOTSUPP);
    iov.len = 12; /* not whole int64 elements */
    EXPECT_RET(efarm_atomic(r.p.a, r.p.a_to_b, EFARM_AOP_SUM, EFARM_DT_INT64, &v, NULL, NULL, 1,
                            &iov, 1, 0, &req),
               -EINVAL);
    EXPECT_RET(efarm_atomic(r.p.a, r.p.a_to_b, EFARM_AOP_SUM, EFARM_DT_INT64, NULL, NULL, NULL, 1,
                            &iov, 1, 0, &req),
               -EINVAL);
    rig_down(&r);
}

/* PROD of 16-bit integers wraps: 0xffff * 0xffff must not overflow a promoted int (UBSan). */
EFARM_TEST(rma_atomic_prod_int16_wraps)
{
    int16_t d = -1, s = -1;
    uint16_t ud = 0xffff, us = 0xffff;

    efarm_atomic_apply(EFARM_AOP_PROD, EFARM_DT_INT16, (uint8_t *)&d, (const uint8_t *)&s, NULL,
                       NULL, 1);
    EXPECT_EQ(d, 1);
    efarm_atomic_apply(EFARM_AOP_PROD, EFARM_DT_UINT16, (uint8_t *)&ud, (const uint8_t *)&us, NULL,
                       NULL, 1);
    EXPECT_EQ(ud, 1);
}
