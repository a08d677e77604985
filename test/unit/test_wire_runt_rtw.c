/*
 * The wire suite, part 8: peers' runt writes (RUNTCTS_RTW, RUNTREAD_RTW:
 * the addenda's layouts of types 144 and 147), built byte by byte by the
 * fake protocol-v4 peer (wire_peer.h) since no libfabric release sends them.
 * A runt write brings its first runt_length bytes in runt packets, each a
 * slice at seg_offset naming the same send_id, lengths and rma_iov (and
 * read_iov), in any order; the rest comes by CTS rounds (RUNTCTS_RTW, as
 * LONGCTS_RTW) or by the target's RDMA reads and an EOR (RUNTREAD_RTW, as
 * LONGREAD_RTW). The engine joins the slices by (peer, send_id), writes
 * nothing before the runt is whole, drops copies and late packets (stale),
 * answers a read the sender's NIC refuses with READ_NACK and takes the rest
 * by the data-less LONGCTS_RTW that follows, and refuses (touching nothing,
 * still running the protocol to its end) a write naming memory it may not
 * write or whose runt packets disagree. Each write is counted once, served or
 * refused; none is `unsupported`.
 */
#include <stdlib.h>
#include <string.h>

#include "efarm_device.h"
#include "efarm_errno.h"
#include "efarm_proto.h"
#include "efarm_rma.h"
#include "efarm_test.h"
#include "proto_common.h"
#include "wire_peer.h"

enum {
    LEN = 100000,       /* the write */
    SEG = 8000,         /* a runt slice */
    RUNT = 3 * SEG,     /* the runt */
    AT = 1000,          /* where it lands in the region */
    SIZE = 256 * 1024,  /* the exposed region */
    RO_SIZE = 64 * 1024 /* a read-only region */
};

#define REFUSED_FLAG 0x0100u /* efarm's flag on a reply to a refused request */

/* One runt write as the fake origin sends it. */
struct runt_write {
    uint8_t type;                /* EFARM_PKT_RUNTCTS_RTW or EFARM_PKT_RUNTREAD_RTW */
    uint32_t send_id;            /* the origin's operation */
    uint64_t len, runt;          /* msg_length, runt_length */
    struct efarm_rma_iov dst[2]; /* where it writes (rma_iov) */
    uint32_t ndst;               /* rma_iov entries */
    struct efarm_rma_iov rd;     /* RUNTREAD_RTW: the origin's buffer (read_iov) */
    const uint8_t *src;          /* the data */
};

/* The engine, one peer, the region and what its bytes were. */
struct rig {
    struct wp w;
    uint8_t *mem, *snap, *ro, *src;
    struct efarm_region *reg, *rdonly;
};

static void rig_open(struct rig *r, const struct efarm_ep_attr *attr)
{
    engine_open(attr);
    wp_open(&r->w);
    wp_connect(&r->w, FEAT_ALL);
    r->mem = calloc(1, SIZE);
    r->snap = malloc(SIZE);
    r->ro = calloc(1, RO_SIZE);
    r->src = malloc(LEN);
    EXPECT_TRUE(r->mem && r->snap && r->ro && r->src);
    EXPECT_RET(efarm_expose(g_ep, r->mem, SIZE, EFARM_EXPOSE_READ | EFARM_EXPOSE_WRITE, &r->reg),
               0);
    EXPECT_RET(efarm_expose(g_ep, r->ro, RO_SIZE, EFARM_EXPOSE_READ, &r->rdonly), 0);
}

static void rig_close(struct rig *r)
{
    efarm_unexpose(g_ep, r->reg);
    efarm_unexpose(g_ep, r->rdonly);
    wp_close(&r->w);
    engine_close();
    free(r->mem);
    free(r->snap);
    free(r->ro);
    free(r->src);
}

/* A write of LEN bytes of src at mem + AT; `rd` is the origin's registered buffer (RUNTREAD). */
static struct runt_write runt_write(const struct rig *r, uint8_t type, uint32_t send_id,
                                    const struct efarm_rma_iov *rd)
{
    struct runt_write x = {.type = type, .send_id = send_id, .len = LEN, .runt = RUNT, .ndst = 1};

    x.dst[0] =
        (struct efarm_rma_iov){(uint64_t)(uintptr_t)r->mem + AT, LEN, efarm_region_key(r->reg)};
    if (rd != NULL)
        x.rd = *rd;
    x.src = r->src;
    return x;
}

/* Send the runt packet of x carrying [off, off + n) of its data (flags: RMA, plus `flags`). */
static void send_slice(struct wp *w, const struct runt_write *x, uint64_t off, uint64_t n)
{
    uint8_t wire[2 * sizeof(struct efarm_wire_rma_iov)], rio[sizeof(struct efarm_wire_rma_iov)];
    const bool reads = x->type == EFARM_PKT_RUNTREAD_RTW;
    struct efarm_pkt pkt;

    wp_req(w, &pkt, x->type, 0, 0);
    pkt.flags = (uint16_t)((pkt.flags & ~EFARM_REQ_MSG) | EFARM_REQ_RMA);
    for (uint32_t i = 0; i < x->ndst; i++)
        efarm_rma_iov_store(wire, i, &x->dst[i]);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RMA_IOV_COUNT, x->ndst);
    pkt.rma_iov = wire;
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, x->len);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, x->send_id);
    if (reads) {
        efarm_rma_iov_store(rio, 0, &x->rd);
        efarm_pkt_set(&pkt, EFARM_PKT_F_READ_IOV_COUNT, 1);
    } else {
        efarm_pkt_set(&pkt, EFARM_PKT_F_CREDIT_REQUEST, 4);
    }
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEG_OFFSET, off);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RUNT_LENGTH, x->runt);
    wp_send_settle(w, &pkt, rio, reads ? (uint32_t)sizeof(rio) : 0, x->src + off, n);
}

/* Slice i (of SEG bytes) of x's runt. */
static void send_seg(struct wp *w, const struct runt_write *x, unsigned i)
{
    send_slice(w, x, (uint64_t)i * SEG, SEG);
}

/*
 * As the origin after its runt: answer each CTS of the engine (naming
 * send_id) with CTSDATA of x's data from `off` until the write's end; every
 * grant must lie inside what is left. Returns the rounds.
 */
static unsigned feed_rest(struct wp *w, const struct runt_write *x, uint64_t off)
{
    unsigned rounds = 0;

    while (off < x->len) {
        struct wp_pkt p;
        uint64_t end;
        uint32_t recv_id;

        wp_expect(w, EFARM_PKT_CTS, &p);
        EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), x->send_id);
        recv_id = (uint32_t)get(&p, EFARM_PKT_F_RECV_ID);
        end = off + get(&p, EFARM_PKT_F_RECV_LENGTH);
        EXPECT_TRUE(end > off && end <= x->len);
        while (off < end) {
            uint64_t n = end - off < wp_ctsdata_room(w) ? end - off : wp_ctsdata_room(w);

            send_ctsdata(w, recv_id, off, x->src + off, n);
            off += n;
        }
        rounds++;
    }
    return rounds;
}

/* The data-less LONGCTS_RTW (or DC_) with the READ_NACK flag that answers a READ_NACK for x. */
static void send_nack_answer(struct wp *w, const struct runt_write *x, uint8_t type)
{
    uint8_t wire[2 * sizeof(struct efarm_wire_rma_iov)];
    struct efarm_pkt pkt;

    wp_req(w, &pkt, type, 0, 0);
    pkt.flags = (uint16_t)((pkt.flags & ~EFARM_REQ_MSG) | EFARM_REQ_RMA | EFARM_REQ_READ_NACK);
    for (uint32_t i = 0; i < x->ndst; i++)
        efarm_rma_iov_store(wire, i, &x->dst[i]);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RMA_IOV_COUNT, x->ndst);
    pkt.rma_iov = wire;
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, x->len);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, x->send_id);
    efarm_pkt_set(&pkt, EFARM_PKT_F_CREDIT_REQUEST, 4);
    wp_send_settle(w, &pkt, NULL, 0, NULL, 0);
}

/* The write landed at mem + AT, exactly, and nothing around it moved. */
static void expect_landed(const struct rig *r, const struct runt_write *x)
{
    EXPECT_MEM_EQ(r->mem + AT, x->src, x->len);
    EXPECT_EQ(r->mem[AT - 1], 0);
    EXPECT_EQ(r->mem[AT + x->len], 0);
}

/* Nothing of the region moved since the snapshot. */
static void expect_untouched(const struct rig *r)
{
    EXPECT_MEM_EQ(r->mem, r->snap, SIZE);
}

/*
 * RUNTCTS_RTW: the runt's slices out of order land nowhere until the runt is
 * whole, and no CTS goes before; then CTS rounds from runt_length bring the
 * rest, which lands exactly. In order, and with a runt in one packet; a runt
 * that is the whole write needs no CTS. A plain write has no answer.
 */
EFARM_TEST(wire_runt_rtw_cts_served)
{
    struct runt_write x;
    struct rig r;

    rig_open(&r, NULL);
    proto_fill(r.src, LEN, 81);
    x = runt_write(&r, EFARM_PKT_RUNTCTS_RTW, 0x81, NULL);

    efarm_test_context("out of order");
    send_seg(&r.w, &x, 2);
    send_seg(&r.w, &x, 0);
    wp_expect_none(&r.w, EFARM_PKT_CTS);
    memset(r.snap, 0, SIZE);
    expect_untouched(&r); /* nothing is written before the runt is whole */
    send_seg(&r.w, &x, 1);
    EXPECT_MEM_EQ(r.mem + AT, r.src, RUNT);
    EXPECT_TRUE(feed_rest(&r.w, &x, RUNT) >= 2);
    PUMP_UNTIL(memcmp(r.mem + AT, r.src, LEN) == 0);
    expect_landed(&r, &x);
    wp_expect_none(&r.w, -1);
    EXPECT_EQ(cnt()->rma_served, 1);

    efarm_test_context("in order");
    proto_fill(r.src, LEN, 82);
    x.send_id = 0x82;
    for (unsigned i = 0; i < 3; i++)
        send_seg(&r.w, &x, i);
    feed_rest(&r.w, &x, RUNT);
    PUMP_UNTIL(memcmp(r.mem + AT, r.src, LEN) == 0);
    expect_landed(&r, &x);

    efarm_test_context("a runt of one packet");
    proto_fill(r.src, LEN, 83);
    x.send_id = 0x83;
    x.runt = 5000;
    send_slice(&r.w, &x, 0, 5000);
    feed_rest(&r.w, &x, 5000);
    PUMP_UNTIL(memcmp(r.mem + AT, r.src, LEN) == 0);
    expect_landed(&r, &x);

    efarm_test_context("a runt that is the whole write");
    proto_fill(r.src, LEN, 84);
    x.send_id = 0x84;
    x.len = x.runt = 2 * SEG;
    x.dst[0].len = x.len;
    send_seg(&r.w, &x, 1);
    send_seg(&r.w, &x, 0);
    EXPECT_MEM_EQ(r.mem + AT, r.src, x.len);
    wp_expect_none(&r.w, -1);

    EXPECT_EQ(cnt()->rma_served, 4);
    EXPECT_EQ(cnt()->rma_refused, 0);
    EXPECT_EQ(cnt()->stale_ids, 0);
    EXPECT_EQ(cnt()->unsupported, 0);
    EXPECT_EQ(cnt()->rx_by_type[EFARM_PKT_RUNTCTS_RTW], 3 + 3 + 1 + 2);
    rig_close(&r);
}

/*
 * RUNTREAD_RTW: the slices in any order, then the engine reads the rest of
 * the origin's buffer (read_iov from its start: the read begins at
 * runt_length) and answers EOR with the origin's send_id once it is all in.
 */
EFARM_TEST(wire_runt_rtw_read_served)
{
    struct efarm_rma_iov rd;
    struct efarm_dev_mr *mr;
    struct runt_write x;
    uint64_t reads;
    struct wp_pkt p;
    struct rig r;

    rig_open(&r, NULL);
    proto_fill(r.src, LEN, 91);
    EXPECT_RET(efarm_dev_mr_reg(r.w.dev, r.src, LEN, true, false, &mr), 0);
    rd = (struct efarm_rma_iov){(uint64_t)(uintptr_t)r.src, LEN, efarm_dev_mr_rkey(mr)};
    x = runt_write(&r, EFARM_PKT_RUNTREAD_RTW, 0x91, &rd);
    reads = cnt()->reads_posted;

    efarm_test_context("out of order");
    send_seg(&r.w, &x, 1);
    send_seg(&r.w, &x, 2);
    wp_expect_none(&r.w, EFARM_PKT_EOR);
    memset(r.snap, 0, SIZE);
    expect_untouched(&r);
    EXPECT_EQ(cnt()->reads_posted, reads); /* no read before the runt is whole */
    send_seg(&r.w, &x, 0);
    wp_expect(&r.w, EFARM_PKT_EOR, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x91);
    EXPECT_EQ(p.pkt.flags & REFUSED_FLAG, 0);
    expect_ctrl_connid(&p, true);
    expect_landed(&r, &x); /* EOR goes once it is all in */
    EXPECT_TRUE(cnt()->reads_posted > reads);

    efarm_test_context("in order, a short last slice");
    proto_fill(r.src, LEN, 92);
    x.send_id = 0x92;
    x.runt = 2 * SEG + 100;
    send_seg(&r.w, &x, 0);
    send_seg(&r.w, &x, 1);
    send_slice(&r.w, &x, 2 * SEG, 100);
    wp_expect(&r.w, EFARM_PKT_EOR, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x92);
    expect_landed(&r, &x);
    wp_expect_none(&r.w, -1);

    EXPECT_EQ(cnt()->rma_served, 2);
    EXPECT_EQ(cnt()->rma_refused, 0);
    EXPECT_EQ(cnt()->read_nacks_sent, 0);
    EXPECT_EQ(cnt()->stale_ids, 0);
    EXPECT_EQ(cnt()->unsupported, 0);
    efarm_dev_mr_dereg(mr);
    rig_close(&r);
}

/*
 * Copies: a slice the write holds already, and any runt packet once its runt
 * is whole (during its CTS rounds), is stale: counted and dropped, nothing
 * written twice. A copy that comes after the write ended names no write: it
 * starts one, which writes nothing before its runt is whole again.
 */
EFARM_TEST(wire_runt_rtw_duplicates_and_stale)
{
    struct efarm_rma_iov rd;
    struct efarm_dev_mr *mr;
    struct runt_write x;
    struct wp_pkt p;
    struct rig r;

    rig_open(&r, NULL);
    proto_fill(r.src, LEN, 101);
    x = runt_write(&r, EFARM_PKT_RUNTCTS_RTW, 0xa1, NULL);

    efarm_test_context("RUNTCTS_RTW");
    send_seg(&r.w, &x, 1);
    send_seg(&r.w, &x, 1); /* the write's first packet, again */
    EXPECT_EQ(cnt()->stale_ids, 1);
    send_seg(&r.w, &x, 0);
    send_seg(&r.w, &x, 0);
    EXPECT_EQ(cnt()->stale_ids, 2);
    wp_expect_none(&r.w, EFARM_PKT_CTS); /* two copies did not make the runt whole */
    send_seg(&r.w, &x, 2);
    send_seg(&r.w, &x, 0); /* the runt is whole (its CTS is out): stale */
    EXPECT_EQ(cnt()->stale_ids, 3);
    feed_rest(&r.w, &x, RUNT);
    PUMP_UNTIL(memcmp(r.mem + AT, r.src, LEN) == 0);
    expect_landed(&r, &x);
    EXPECT_EQ(cnt()->rma_served, 1);

    efarm_test_context("RUNTREAD_RTW");
    proto_fill(r.src, LEN, 102);
    EXPECT_RET(efarm_dev_mr_reg(r.w.dev, r.src, LEN, true, false, &mr), 0);
    rd = (struct efarm_rma_iov){(uint64_t)(uintptr_t)r.src, LEN, efarm_dev_mr_rkey(mr)};
    x = runt_write(&r, EFARM_PKT_RUNTREAD_RTW, 0xa2, &rd);
    send_seg(&r.w, &x, 2);
    send_seg(&r.w, &x, 0);
    send_seg(&r.w, &x, 2);
    EXPECT_EQ(cnt()->stale_ids, 4);
    wp_expect_none(&r.w, EFARM_PKT_EOR);
    send_seg(&r.w, &x, 1);
    wp_expect(&r.w, EFARM_PKT_EOR, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0xa2);
    expect_landed(&r, &x);
    wp_expect_none(&r.w, EFARM_PKT_EOR); /* one EOR */

    efarm_test_context("a copy after the write ended");
    memset(r.mem + AT, 0x5a, LEN);
    memcpy(r.snap, r.mem, SIZE);
    send_seg(&r.w, &x, 1);
    wp_expect_none(&r.w, -1);
    expect_untouched(&r);
    EXPECT_EQ(cnt()->rma_served, 2);
    EXPECT_EQ(cnt()->rma_refused, 0);
    EXPECT_EQ(cnt()->unsupported, 0);
    efarm_dev_mr_dereg(mr);
    rig_close(&r);
}

/*
 * A RUNTREAD_RTW whose buffer the origin registered without remote read:
 * the engine's reads are refused by the origin's NIC, and once the runt is in
 * and no read is in flight it answers READ_NACK (no EOR). The data-less
 * LONGCTS_RTW with the READ_NACK flag and the write's send_id then joins the
 * write, which grants the rest by CTS from runt_length (the runt stays where
 * it landed); with DC_LONGCTS_RTW the write ends with a RECEIPT. To an origin
 * without READ_NACK the engine can only answer EOR with efarm's REFUSED flag:
 * the runt landed, nothing else did.
 */
EFARM_TEST(wire_runt_rtw_read_refused_by_sender_nic)
{
    struct efarm_rma_iov rd;
    struct efarm_dev_mr *mr, *mr2;
    struct runt_write x;
    uint64_t reads;
    struct wp_pkt p;
    struct wp w2;
    struct rig r;

    rig_open(&r, NULL);
    proto_fill(r.src, LEN, 111);
    EXPECT_RET(efarm_dev_mr_reg(r.w.dev, r.src, LEN, false, false, &mr), 0);
    rd = (struct efarm_rma_iov){(uint64_t)(uintptr_t)r.src, LEN, efarm_dev_mr_rkey(mr)};
    reads = cnt()->reads_posted;

    for (unsigned dc = 0; dc < 2; dc++) {
        efarm_test_context("READ_NACK, then %s", dc ? "DC_LONGCTS_RTW" : "LONGCTS_RTW");
        proto_fill(r.src, LEN, 112 + dc);
        x = runt_write(&r, EFARM_PKT_RUNTREAD_RTW, 0xb1 + dc, &rd);
        send_seg(&r.w, &x, 0);
        send_seg(&r.w, &x, 2);
        send_seg(&r.w, &x, 1);
        wp_expect(&r.w, EFARM_PKT_READ_NACK, &p);
        EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), x.send_id);
        EXPECT_EQ(cnt()->read_nacks_sent, dc + 1);
        EXPECT_TRUE(cnt()->reads_posted > reads);
        wp_expect_none(&r.w, EFARM_PKT_EOR);
        EXPECT_MEM_EQ(r.mem + AT, r.src, RUNT);
        send_seg(&r.w, &x, 1); /* the write waits for its LONGCTS_RTW: a copy is stale */
        EXPECT_EQ(cnt()->stale_ids, 1 + dc);
        send_nack_answer(&r.w, &x, dc ? EFARM_PKT_DC_LONGCTS_RTW : EFARM_PKT_LONGCTS_RTW);
        EXPECT_TRUE(feed_rest(&r.w, &x, RUNT) >= 2);
        PUMP_UNTIL(memcmp(r.mem + AT, r.src, LEN) == 0);
        expect_landed(&r, &x);
        if (dc) {
            wp_expect(&r.w, EFARM_PKT_RECEIPT, &p);
            EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), x.send_id);
            EXPECT_EQ(p.pkt.flags & REFUSED_FLAG, 0);
        }
        wp_expect_none(&r.w, -1);
    }
    EXPECT_EQ(cnt()->rma_served, 2);
    EXPECT_EQ(cnt()->rma_refused, 0);

    efarm_test_context("an origin without READ_NACK");
    wp_open(&w2);
    wp_connect(&w2, FEAT_ALL & ~EFARM_EXTRA_FEATURE_READ_NACK);
    EXPECT_RET(efarm_dev_mr_reg(w2.dev, r.src, LEN, false, false, &mr2), 0);
    rd.key = efarm_dev_mr_rkey(mr2);
    proto_fill(r.src, LEN, 115);
    x = runt_write(&r, EFARM_PKT_RUNTREAD_RTW, 0xb5, &rd);
    memset(r.mem, 0, SIZE);
    for (unsigned i = 0; i < 3; i++)
        send_seg(&w2, &x, i);
    wp_expect(&w2, EFARM_PKT_EOR, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0xb5);
    EXPECT_TRUE(p.pkt.flags & REFUSED_FLAG);
    EXPECT_EQ(cnt()->read_nacks_sent, 2);
    EXPECT_MEM_EQ(r.mem + AT, r.src, RUNT);
    memset(r.snap, 0, SIZE);
    memcpy(r.snap + AT, r.src, RUNT);
    expect_untouched(&r);
    wp_expect_none(&w2, -1);
    EXPECT_EQ(cnt()->unsupported, 0);
    efarm_dev_mr_dereg(mr2);
    efarm_dev_mr_dereg(mr);
    wp_close(&w2);
    rig_close(&r);
}

/* Send x's whole runt (three slices, the last first) and run its protocol to the end. */
static void refused_runs_out(struct rig *r, const struct runt_write *x)
{
    struct wp_pkt p;

    send_seg(&r->w, x, 2);
    send_seg(&r->w, x, 0);
    send_seg(&r->w, x, 1);
    if (x->type == EFARM_PKT_RUNTREAD_RTW) {
        wp_expect(&r->w, EFARM_PKT_EOR, &p);
        EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), x->send_id);
        EXPECT_TRUE(p.pkt.flags & REFUSED_FLAG);
    } else {
        feed_rest(&r->w, x, x->runt); /* a plain write has no answer: CTS rounds into nothing */
    }
    wp_expect_none(&r->w, -1);
}

/*
 * Refused runt writes: an unknown key, a range past the region or before it,
 * a read-only region, two ranges, a range that is not the write's length;
 * and runt packets that disagree with the write's first one (another range,
 * another length, another read_iov, another type, a slice overlapping
 * another). None touches a byte, each still runs its protocol so the origin
 * finishes (CTS rounds whose data is dropped; EOR with efarm's REFUSED flag,
 * no read posted), and each is counted once in rma_refused. A runt_length
 * beyond msg_length does not decode: dropped as any malformed packet.
 */
EFARM_TEST(wire_runt_rtw_refused)
{
    struct efarm_rma_iov rd;
    struct efarm_dev_mr *mr;
    struct runt_write x, y;
    uint64_t reads, refused = 0, decode_errors;
    uint8_t *zeros = calloc(1, RO_SIZE);
    struct wp_pkt p;
    struct rig r;

    rig_open(&r, NULL);
    proto_fill(r.src, LEN, 121);
    EXPECT_RET(efarm_dev_mr_reg(r.w.dev, r.src, LEN, true, false, &mr), 0);
    rd = (struct efarm_rma_iov){(uint64_t)(uintptr_t)r.src, LEN, efarm_dev_mr_rkey(mr)};
    memset(r.mem, 0x33, SIZE);
    memcpy(r.snap, r.mem, SIZE);
    reads = cnt()->reads_posted;

    for (unsigned t = 0; t < 2; t++) {
        const uint8_t type = t ? EFARM_PKT_RUNTREAD_RTW : EFARM_PKT_RUNTCTS_RTW;
        const uint32_t id = 0xc00 + 0x10 * t;

        efarm_test_context("%s: unknown key", t ? "RUNTREAD_RTW" : "RUNTCTS_RTW");
        x = runt_write(&r, type, id, &rd);
        x.dst[0].key ^= 0x40;
        refused_runs_out(&r, &x);
        EXPECT_EQ(cnt()->rma_refused, ++refused);

        efarm_test_context("%s: past the region", t ? "RUNTREAD_RTW" : "RUNTCTS_RTW");
        x = runt_write(&r, type, id + 1, &rd);
        x.dst[0].addr = (uint64_t)(uintptr_t)r.mem + SIZE - LEN / 2;
        refused_runs_out(&r, &x);
        EXPECT_EQ(cnt()->rma_refused, ++refused);

        efarm_test_context("%s: before the region", t ? "RUNTREAD_RTW" : "RUNTCTS_RTW");
        x = runt_write(&r, type, id + 2, &rd);
        x.dst[0].addr = (uint64_t)(uintptr_t)r.mem - 1;
        refused_runs_out(&r, &x);
        EXPECT_EQ(cnt()->rma_refused, ++refused);

        efarm_test_context("%s: read-only", t ? "RUNTREAD_RTW" : "RUNTCTS_RTW");
        x = runt_write(&r, type, id + 3, &rd);
        x.dst[0] =
            (struct efarm_rma_iov){(uint64_t)(uintptr_t)r.ro, LEN, efarm_region_key(r.rdonly)};
        x.len = x.dst[0].len = RO_SIZE;
        refused_runs_out(&r, &x);
        EXPECT_EQ(cnt()->rma_refused, ++refused);
        EXPECT_MEM_EQ(r.ro, zeros, RO_SIZE);

        efarm_test_context("%s: two ranges", t ? "RUNTREAD_RTW" : "RUNTCTS_RTW");
        x = runt_write(&r, type, id + 4, &rd);
        x.dst[0].len = LEN / 2;
        x.dst[1] = x.dst[0];
        x.dst[1].addr += LEN / 2;
        x.ndst = 2;
        refused_runs_out(&r, &x);
        EXPECT_EQ(cnt()->rma_refused, ++refused);

        efarm_test_context("%s: a range shorter than the write",
                           t ? "RUNTREAD_RTW" : "RUNTCTS_RTW");
        x = runt_write(&r, type, id + 5, &rd);
        x.dst[0].len = LEN - 1;
        refused_runs_out(&r, &x);
        EXPECT_EQ(cnt()->rma_refused, ++refused);
        expect_untouched(&r);
    }

    /* Runt packets that disagree with the write's first: the whole write is refused. */
    efarm_test_context("another range in the second packet");
    x = runt_write(&r, EFARM_PKT_RUNTREAD_RTW, 0xd1, &rd);
    y = x;
    y.dst[0].addr += 8;
    send_seg(&r.w, &x, 0);
    send_seg(&r.w, &y, 1);
    send_seg(&r.w, &x, 2);
    wp_expect(&r.w, EFARM_PKT_EOR, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0xd1);
    EXPECT_TRUE(p.pkt.flags & REFUSED_FLAG);
    EXPECT_EQ(cnt()->rma_refused, ++refused);

    efarm_test_context("another length, another read_iov, another type");
    x = runt_write(&r, EFARM_PKT_RUNTREAD_RTW, 0xd2, &rd);
    y = x;
    y.len -= 1;
    y.dst[0].len -= 1;
    send_seg(&r.w, &x, 2);
    send_seg(&r.w, &y, 0);
    y = x;
    y.rd.addr += 64;
    send_seg(&r.w, &y, 1);
    wp_expect(&r.w, EFARM_PKT_EOR, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0xd2);
    EXPECT_TRUE(p.pkt.flags & REFUSED_FLAG);
    EXPECT_EQ(cnt()->rma_refused, ++refused); /* once per write */
    x = runt_write(&r, EFARM_PKT_RUNTCTS_RTW, 0xd3, &rd);
    y = runt_write(&r, EFARM_PKT_RUNTREAD_RTW, 0xd3, &rd);
    send_seg(&r.w, &x, 0);
    send_seg(&r.w, &y, 1);
    send_seg(&r.w, &x, 2);
    feed_rest(&r.w, &x, RUNT);
    wp_expect_none(&r.w, -1);
    EXPECT_EQ(cnt()->rma_refused, ++refused);

    efarm_test_context("a slice overlapping another");
    x = runt_write(&r, EFARM_PKT_RUNTCTS_RTW, 0xd4, &rd);
    send_seg(&r.w, &x, 0);
    send_slice(&r.w, &x, SEG / 2, SEG);
    send_seg(&r.w, &x, 2);
    feed_rest(&r.w, &x, RUNT); /* the overlap counted: the write ran on to its end */
    wp_expect_none(&r.w, -1);
    EXPECT_EQ(cnt()->rma_refused, ++refused);
    expect_untouched(&r);
    EXPECT_EQ(cnt()->reads_posted, reads);

    efarm_test_context("runt_length beyond msg_length");
    decode_errors = cnt()->decode_errors;
    x = runt_write(&r, EFARM_PKT_RUNTREAD_RTW, 0xd5, &rd);
    x.len = x.dst[0].len = SEG;
    x.runt = 2 * SEG;
    send_seg(&r.w, &x, 0);
    EXPECT_EQ(cnt()->decode_errors, decode_errors + 1);
    wp_expect_none(&r.w, -1);
    expect_untouched(&r);

    EXPECT_EQ(cnt()->rma_refused, refused);
    EXPECT_EQ(cnt()->rma_served, 0);
    EXPECT_EQ(cnt()->stale_ids, 0);
    EXPECT_EQ(cnt()->unsupported, 0);
    efarm_dev_mr_dereg(mr);
    rig_close(&r);
    free(zeros);
}

/*
 * With one operation slot, a second runt write's packets find none: they are
 * kept and retried from progress once the first write ends, then join the
 * operation the first of them made (the kept packets become the write's own).
 */
EFARM_TEST(wire_runt_rtw_waits_for_an_operation)
{
    const struct efarm_ep_attr attr = {.max_ops = 1};
    struct runt_write x, y;
    uint8_t *src2 = malloc(LEN);
    uint64_t pending;
    struct rig r;

    rig_open(&r, &attr);
    proto_fill(r.src, LEN, 131);
    proto_fill(src2, LEN, 132);
    x = runt_write(&r, EFARM_PKT_RUNTCTS_RTW, 0xe1, NULL);
    y = x;
    y.send_id = 0xe2;
    y.dst[0].addr += LEN + 100;
    y.src = src2;
    pending = cnt()->rma_pending;
    send_seg(&r.w, &x, 0);
    send_seg(&r.w, &y, 1);
    send_seg(&r.w, &y, 0);
    send_seg(&r.w, &x, 1);
    EXPECT_EQ(cnt()->rma_pending, pending + 2);
    send_seg(&r.w, &y, 2);
    send_seg(&r.w, &x, 2);
    feed_rest(&r.w, &x, RUNT);
    feed_rest(&r.w, &y, RUNT);
    PUMP_UNTIL(memcmp(r.mem + AT + LEN + 100, src2, LEN) == 0);
    EXPECT_MEM_EQ(r.mem + AT, r.src, LEN);
    EXPECT_EQ(r.mem[AT + LEN], 0);
    EXPECT_EQ(r.mem[AT + 2 * LEN + 100], 0);
    wp_expect_none(&r.w, -1);
    EXPECT_EQ(cnt()->rma_served, 2);
    EXPECT_EQ(cnt()->stale_ids, 0);
    EXPECT_EQ(cnt()->unsupported, 0);
    rig_close(&r);
    free(src2);
}

/*
 * A write's send_id and a message's msg_id of the same peer are two id
 * spaces: a runt write with send_id 0 beside the medium message with msg_id
 * 0, and send_id 1 beside msg_id 1, their packets interleaved, each receive
 * operation filed first once. Every segment and slice finds its own.
 */
EFARM_TEST(wire_runt_rtw_beside_messages)
{
    const uint64_t mlen = 2 * SEG + 4000;
    uint8_t *msg = malloc(mlen), *got[2] = {calloc(1, mlen), calloc(1, mlen)};
    struct efarm_req req[2] = {{0}};
    struct runt_write x[2];
    struct rig r;

    rig_open(&r, NULL);
    proto_fill(r.src, LEN, 141);
    proto_fill(msg, mlen, 142);
    for (unsigned i = 0; i < 2; i++) {
        EXPECT_RET(efarm_trecv(g_ep, got[i], mlen, 1, 2, 7, &req[i]), 0);
        x[i] = runt_write(&r, EFARM_PKT_RUNTCTS_RTW, i, NULL);
        x[i].dst[0].addr += i * (LEN + 100);
    }

    efarm_test_context("the message's receive first");
    send_medium(&r.w, 0, msg, mlen, 0, SEG);
    send_seg(&r.w, &x[0], 0);
    send_medium(&r.w, 0, msg, mlen, SEG, SEG);
    send_seg(&r.w, &x[0], 1);
    send_medium(&r.w, 0, msg, mlen, 2 * SEG, mlen - 2 * SEG);
    EXPECT_TRUE(req[0].done);
    send_seg(&r.w, &x[0], 2);
    feed_rest(&r.w, &x[0], RUNT);

    efarm_test_context("the write first");
    send_seg(&r.w, &x[1], 0);
    send_medium(&r.w, 1, msg, mlen, 0, SEG);
    send_seg(&r.w, &x[1], 1);
    send_medium(&r.w, 1, msg, mlen, SEG, SEG);
    send_seg(&r.w, &x[1], 2);
    send_medium(&r.w, 1, msg, mlen, 2 * SEG, mlen - 2 * SEG);
    feed_rest(&r.w, &x[1], RUNT);
    wait_req(&req[1]);

    for (unsigned i = 0; i < 2; i++) {
        EXPECT_RET(req[i].status, 0);
        EXPECT_EQ(req[i].length, mlen);
        EXPECT_MEM_EQ(got[i], msg, mlen);
    }
    PUMP_UNTIL(memcmp(r.mem + AT + LEN + 100, r.src, LEN) == 0);
    EXPECT_MEM_EQ(r.mem + AT, r.src, LEN);
    wp_expect_none(&r.w, -1);
    EXPECT_EQ(cnt()->rma_served, 2);
    EXPECT_EQ(cnt()->stale_ids, 0);
    EXPECT_EQ(cnt()->unsupported, 0);
    rig_close(&r);
    free(msg);
    free(got[0]);
    free(got[1]);
}
