/*
 * The wire suite, part 7: peers' one-sided requests on the wire, built
 * byte by byte by the fake protocol-v4 peer (wire_peer.h) and sent to the
 * engine's exposed memory. Well-formed EAGER_RTW, DC_EAGER_RTW, SHORT_RTR
 * and RTAs are applied and answered as the protocol says (RECEIPT, READRSP,
 * ATOMRSP with the right ids and lengths); RTAs in msg_id order whatever
 * order they arrive in. Every malformed or unauthorised one (unknown key,
 * out of bounds, a read-only region, lengths that do not add up, partial
 * elements, unknown datatype or operation, a reply too large for a packet)
 * is refused, counted, answered with the REFUSED flag where the protocol has
 * an answer, and leaves the memory exactly as it was. And the engine as
 * origin of the long subprotocols (LONGREAD_RTW, its READ_NACK fallback,
 * DC_LONGCTS_RTW, LONGCTS_RTR), byte by byte against the fake target.
 */
#include <stdlib.h>
#include <string.h>

#include "efarm_errno.h"
#include "efarm_proto.h"
#include "efarm_rma.h"
#include "efarm_test.h"
#include "proto_common.h"
#include "wire_peer.h"

enum { MLEN = 4096 };

static uint8_t g_mem[MLEN], g_ro[256], g_snap[MLEN];
static struct efarm_region *g_rw, *g_rdonly;

static void rma_open(struct wp *w)
{
    engine_open(NULL);
    wp_open(w);
    wp_connect(w, FEAT_ALL);
    memset(g_mem, 0x11, MLEN);
    memset(g_ro, 0x22, sizeof(g_ro));
    EXPECT_RET(efarm_expose(g_ep, g_mem, MLEN, EFARM_EXPOSE_READ | EFARM_EXPOSE_WRITE, &g_rw), 0);
    EXPECT_RET(efarm_expose(g_ep, g_ro, sizeof(g_ro), EFARM_EXPOSE_READ, &g_rdonly), 0);
}

static void rma_close(struct wp *w)
{
    efarm_unexpose(g_ep, g_rw);
    efarm_unexpose(g_ep, g_rdonly);
    wp_close(w);
    engine_close();
}

static struct efarm_rma_iov at(uint64_t off, uint64_t len)
{
    return (struct efarm_rma_iov){(uint64_t)(uintptr_t)(g_mem + off), len, efarm_region_key(g_rw)};
}

/* Start a one-sided REQ of `type` naming iovs (flags: RMA or ATOMIC instead of MSG). */
static void rma_req(struct wp *w, struct efarm_pkt *pkt, uint8_t *wire, uint8_t type,
                    const struct efarm_rma_iov *iov, uint32_t n, uint32_t msg_id)
{
    wp_req(w, pkt, type, msg_id, 0);
    pkt->flags = (uint16_t)((pkt->flags & ~EFARM_REQ_MSG) |
                            (type == EFARM_PKT_EAGER_RTW || type == EFARM_PKT_DC_EAGER_RTW ||
                                     type == EFARM_PKT_SHORT_RTR
                                 ? EFARM_REQ_RMA
                                 : EFARM_REQ_ATOMIC));
    for (uint32_t i = 0; i < n; i++)
        efarm_rma_iov_store(wire, i, &iov[i]);
    efarm_pkt_set(pkt, EFARM_PKT_F_RMA_IOV_COUNT, n);
    pkt->rma_iov = wire;
}

/* Send an EAGER_RTW (or DC, with send_id) writing data to iovs. */
static void send_rtw(struct wp *w, uint8_t type, const struct efarm_rma_iov *iov, uint32_t n,
                     const void *data, uint64_t len, uint32_t send_id)
{
    uint8_t wire[8 * 24];
    struct efarm_pkt pkt;

    rma_req(w, &pkt, wire, type, iov, n, 0);
    if (type == EFARM_PKT_DC_EAGER_RTW)
        efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, send_id);
    wp_send_settle(w, &pkt, NULL, 0, data, len);
}

/* The memory must be exactly as snapshotted; the refusal count must have grown by `more`. */
static void expect_untouched(uint64_t refused_before, uint64_t more)
{
    EXPECT_MEM_EQ(g_mem, g_snap, MLEN);
    EXPECT_EQ(cnt()->rma_refused, refused_before + more);
}

EFARM_TEST(wire_rma_rtw_applied_and_refused)
{
    struct wp w;
    struct wp_pkt p;
    struct efarm_rma_iov iov[2], bad;
    uint8_t data[300];
    uint64_t refused;

    rma_open(&w);
    proto_fill(data, sizeof(data), 5);
    /* Two ranges, 100 + 200 bytes: both written, nothing around them. */
    iov[0] = at(10, 100);
    iov[1] = at(1000, 200);
    send_rtw(&w, EFARM_PKT_EAGER_RTW, iov, 2, data, 300, 0);
    EXPECT_MEM_EQ(g_mem + 10, data, 100);
    EXPECT_MEM_EQ(g_mem + 1000, data + 100, 200);
    EXPECT_EQ(g_mem[9], 0x11);
    EXPECT_EQ(g_mem[110], 0x11);
    EXPECT_EQ(g_mem[1200], 0x11);
    EXPECT_EQ(cnt()->rma_served, 1);
    wp_expect_none(&w, -1); /* a plain write has no answer */

    memcpy(g_snap, g_mem, MLEN);
    refused = cnt()->rma_refused;
    bad = at(0, 300);
    bad.key ^= 0x5a5a;
    send_rtw(&w, EFARM_PKT_EAGER_RTW, &bad, 1, data, 300, 0); /* unknown key */
    bad = at(MLEN - 100, 300);
    send_rtw(&w, EFARM_PKT_EAGER_RTW, &bad, 1, data, 300, 0); /* past the end */
    bad = at(0, 300);
    bad.addr -= 1;
    send_rtw(&w, EFARM_PKT_EAGER_RTW, &bad, 1, data, 300, 0); /* before the start */
    bad = (struct efarm_rma_iov){(uint64_t)(uintptr_t)g_ro, 100, efarm_region_key(g_rdonly)};
    send_rtw(&w, EFARM_PKT_EAGER_RTW, &bad, 1, data, 100, 0); /* read-only */
    iov[0] = at(0, 100);
    iov[1] = at(200, 100);
    send_rtw(&w, EFARM_PKT_EAGER_RTW, iov, 2, data, 300, 0); /* ranges shorter than the data */
    send_rtw(&w, EFARM_PKT_EAGER_RTW, iov, 2, data, 150, 0); /* ranges longer than the data */
    bad = at(0, 100);
    bad.len = UINT64_MAX - 50; /* a length that wraps */
    send_rtw(&w, EFARM_PKT_EAGER_RTW, &bad, 1, data, 100, 0);
    send_rtw(&w, EFARM_PKT_EAGER_RTW, iov, 0, data, 100, 0); /* data, no range */
    expect_untouched(refused, 8);
    EXPECT_MEM_EQ(g_ro, (uint8_t[256]){[0 ... 255] = 0x22}, sizeof(g_ro));

    /* DC: a RECEIPT echoing send_id, with the REFUSED flag when refused. */
    bad = at(0, 300);
    bad.key ^= 1;
    send_rtw(&w, EFARM_PKT_DC_EAGER_RTW, &bad, 1, data, 300, 0x777);
    wp_expect(&w, EFARM_PKT_RECEIPT, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x777);
    EXPECT_TRUE(p.pkt.flags & 0x0100u);
    expect_untouched(refused, 9);
    iov[0] = at(64, 300);
    send_rtw(&w, EFARM_PKT_DC_EAGER_RTW, iov, 1, data, 300, 0x778);
    wp_expect(&w, EFARM_PKT_RECEIPT, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x778);
    EXPECT_TRUE(!(p.pkt.flags & 0x0100u));
    EXPECT_MEM_EQ(g_mem + 64, data, 300);
    EXPECT_EQ(cnt()->unsupported, 0);
    rma_close(&w);
}

static void send_rtr(struct wp *w, const struct efarm_rma_iov *iov, uint32_t n, uint64_t len,
                     uint32_t recv_id)
{
    uint8_t wire[8 * 24];
    struct efarm_pkt pkt;

    rma_req(w, &pkt, wire, EFARM_PKT_SHORT_RTR, iov, n, 0);
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, len);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_ID, recv_id);
    wp_send_settle(w, &pkt, NULL, 0, NULL, 0);
}

EFARM_TEST(wire_rma_rtr_answered_and_refused)
{
    struct wp w;
    struct wp_pkt p;
    struct efarm_rma_iov iov[2], bad;
    uint64_t refused;

    rma_open(&w);
    proto_fill(g_mem, MLEN, 9);
    memcpy(g_snap, g_mem, MLEN);
    iov[0] = at(5, 50);
    iov[1] = at(3000, 70);
    send_rtr(&w, iov, 2, 120, 0xabc);
    wp_expect(&w, EFARM_PKT_READRSP, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_RECV_ID), 0xabc);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEG_LENGTH), 120);
    EXPECT_EQ(p.pkt.payload_length, 120);
    EXPECT_MEM_EQ(p.pkt.payload, g_mem + 5, 50);
    EXPECT_MEM_EQ(p.pkt.payload + 50, g_mem + 3000, 70);

    refused = cnt()->rma_refused;
    bad = at(0, 64);
    bad.key += 3;
    send_rtr(&w, &bad, 1, 64, 1); /* unknown key */
    send_rtr(&w, iov, 2, 119, 2); /* msg_length not the ranges' sum */
    bad = at(MLEN - 10, 20);
    send_rtr(&w, &bad, 1, 20, 3); /* past the end */
    bad = at(0, MLEN);
    send_rtr(&w, &bad, 1, MLEN, 4); /* more than one READRSP holds? */
    for (uint32_t id = 1; id <= 3; id++) {
        wp_expect(&w, EFARM_PKT_READRSP, &p);
        EXPECT_TRUE(p.pkt.flags & 0x0100u);
        EXPECT_EQ(get(&p, EFARM_PKT_F_SEG_LENGTH), 0);
        EXPECT_EQ(p.pkt.payload_length, 0);
    }
    /* The whole region fits one READRSP only if the MTU allows it. */
    wp_expect(&w, EFARM_PKT_READRSP, &p);
    if (MLEN + sizeof(struct efarm_wire_readrsp_hdr) > w.mtu) {
        EXPECT_TRUE(p.pkt.flags & 0x0100u);
        refused++;
    } else {
        EXPECT_EQ(get(&p, EFARM_PKT_F_SEG_LENGTH), MLEN);
    }
    expect_untouched(refused, 3);
    rma_close(&w);
}

/* An RTA of `type` with msg_id, datatype, op; data = operand (and compare) bytes. */
static void send_rta(struct wp *w, uint8_t type, uint32_t msg_id, const struct efarm_rma_iov *iov,
                     uint32_t n, uint32_t dt, uint32_t op, uint32_t last, const void *data,
                     uint64_t len)
{
    uint8_t wire[8 * 24];
    struct efarm_pkt pkt;

    rma_req(w, &pkt, wire, type, iov, n, msg_id);
    efarm_pkt_set(&pkt, EFARM_PKT_F_ATOMIC_DATATYPE, dt);
    efarm_pkt_set(&pkt, EFARM_PKT_F_ATOMIC_OP, op);
    if (type == EFARM_PKT_FETCH_RTA || type == EFARM_PKT_COMPARE_RTA)
        efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_ID, last);
    else if (type == EFARM_PKT_DC_WRITE_RTA)
        efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, last);
    wp_send_settle(w, &pkt, NULL, 0, data, len);
}

EFARM_TEST(wire_rma_rta_ordered_and_refused)
{
    struct wp w;
    struct wp_pkt p;
    struct efarm_rma_iov iov, bad;
    int64_t two[2] = {2, 2}, mul[2] = {10, 10}, v[2], old[2], odd[3] = {0, 0, 0};
    uint64_t refused;
    uint32_t id = 0;

    rma_open(&w);
    iov = at(0, 16);
    memset(g_mem, 0, 16);
    /* msg_id 1 (multiply by 10) arrives before msg_id 0 (add 2): applied 0 then 1. */
    send_rta(&w, EFARM_PKT_WRITE_RTA, 1, &iov, 1, EFARM_DT_INT64, EFARM_AOP_PROD, 0, mul, 16);
    memcpy(v, g_mem, 16);
    EXPECT_EQ(v[0], 0); /* waits for msg_id 0 */
    send_rta(&w, EFARM_PKT_WRITE_RTA, 0, &iov, 1, EFARM_DT_INT64, EFARM_AOP_SUM, 0, two, 16);
    memcpy(v, g_mem, 16);
    EXPECT_EQ(v[0], 20);
    EXPECT_EQ(v[1], 20);
    id = 2;
    /* FETCH: the old values come back in an ATOMRSP for recv_id. */
    send_rta(&w, EFARM_PKT_FETCH_RTA, id++, &iov, 1, EFARM_DT_INT64, EFARM_AOP_SUM, 0x99, two, 16);
    wp_expect(&w, EFARM_PKT_ATOMRSP, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_RECV_ID), 0x99);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEG_LENGTH), 16);
    memcpy(old, p.pkt.payload, 16);
    EXPECT_EQ(old[0], 20);
    memcpy(v, g_mem, 16);
    EXPECT_EQ(v[0], 22);
    /* DC_WRITE_RTA: RECEIPT with send_id and the msg_id. */
    send_rta(&w, EFARM_PKT_DC_WRITE_RTA, id, &iov, 1, EFARM_DT_INT64, EFARM_AOP_SUM, 0x55, two, 16);
    wp_expect(&w, EFARM_PKT_RECEIPT, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x55);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), id);
    id++;

    memcpy(g_snap, g_mem, MLEN);
    refused = cnt()->rma_refused;
    send_rta(&w, EFARM_PKT_WRITE_RTA, id++, &iov, 1, 13, EFARM_AOP_SUM, 0, two, 16);  /* dt 13 */
    send_rta(&w, EFARM_PKT_WRITE_RTA, id++, &iov, 1, EFARM_DT_INT64, 25, 0, two, 16); /* op 25 */
    send_rta(&w, EFARM_PKT_WRITE_RTA, id++, &iov, 1, EFARM_DT_DOUBLE, EFARM_AOP_BOR, 0, two, 16);
    send_rta(&w, EFARM_PKT_WRITE_RTA, id++, &iov, 1, EFARM_DT_INT64, EFARM_AOP_READ, 0, two, 16);
    bad = at(0, 12); /* not whole elements */
    send_rta(&w, EFARM_PKT_WRITE_RTA, id++, &bad, 1, EFARM_DT_INT64, EFARM_AOP_SUM, 0, two, 12);
    send_rta(&w, EFARM_PKT_WRITE_RTA, id++, &iov, 1, EFARM_DT_INT64, EFARM_AOP_SUM, 0, two, 8);
    bad = at(0, 16);
    bad.key ^= 7;
    send_rta(&w, EFARM_PKT_WRITE_RTA, id++, &bad, 1, EFARM_DT_INT64, EFARM_AOP_SUM, 0, two, 16);
    bad = (struct efarm_rma_iov){(uint64_t)(uintptr_t)g_ro, 16, efarm_region_key(g_rdonly)};
    send_rta(&w, EFARM_PKT_WRITE_RTA, id++, &bad, 1, EFARM_DT_INT64, EFARM_AOP_SUM, 0, two, 16);
    expect_untouched(refused, 8);
    /* A refused FETCH is answered with the flag and no data; so is a COMPARE whose data (12 + 12
     * bytes) does not match its 16-byte range. */
    bad = at(0, 16);
    bad.key ^= 7;
    send_rta(&w, EFARM_PKT_FETCH_RTA, id++, &bad, 1, EFARM_DT_INT64, EFARM_AOP_SUM, 0x42, two, 16);
    wp_expect(&w, EFARM_PKT_ATOMRSP, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_RECV_ID), 0x42);
    EXPECT_TRUE(p.pkt.flags & 0x0100u);
    EXPECT_EQ(p.pkt.payload_length, 0);
    send_rta(&w, EFARM_PKT_COMPARE_RTA, id++, &iov, 1, EFARM_DT_INT64, EFARM_AOP_CSWAP, 0x43, odd,
             24);
    wp_expect(&w, EFARM_PKT_ATOMRSP, &p);
    EXPECT_TRUE(p.pkt.flags & 0x0100u);
    expect_untouched(refused, 10);
    /* Every refused RTA still used up its msg_id: the next one is applied at once. */
    send_rta(&w, EFARM_PKT_WRITE_RTA, id++, &iov, 1, EFARM_DT_INT64, EFARM_AOP_SUM, 0, two, 16);
    memcpy(v, g_mem, 16);
    EXPECT_EQ(v[0], 26);
    rma_close(&w);
}

/* Grant after grant: answer each CTS with CTSDATA of src until `len` bytes are out. */
static void feed_cts(struct wp *w, uint32_t send_id, const uint8_t *src, uint64_t off, uint64_t len)
{
    struct wp_pkt p;

    while (off < len) {
        uint64_t end;
        uint32_t recv_id;

        wp_expect(w, EFARM_PKT_CTS, &p);
        EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), send_id);
        recv_id = (uint32_t)get(&p, EFARM_PKT_F_RECV_ID);
        end = off + get(&p, EFARM_PKT_F_RECV_LENGTH);
        EXPECT_TRUE(end > off && end <= len);
        for (; off < end; off += wp_ctsdata_room(w))
            send_ctsdata(w, recv_id, off, src + off,
                         end - off < wp_ctsdata_room(w) ? end - off : wp_ctsdata_room(w));
    }
}

/* A LONGCTS_RTW (or DC_) of len bytes of src into iov: returns the bytes its REQ carried. */
static uint64_t send_longcts_rtw(struct wp *w, uint8_t type, const struct efarm_rma_iov *iov,
                                 uint32_t n, uint32_t send_id, const uint8_t *src, uint64_t len)
{
    uint8_t wire[8 * 24], hdr[WP_MAX_PKT];
    struct efarm_pkt pkt;
    size_t hdr_len;
    uint64_t first;

    rma_req(w, &pkt, wire, type, iov, n, 0);
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, len);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, send_id);
    efarm_pkt_set(&pkt, EFARM_PKT_F_CREDIT_REQUEST, 8);
    EXPECT_RET(efarm_pkt_encode(&pkt, hdr, sizeof(hdr), &hdr_len), 0);
    first = len < w->mtu - hdr_len ? len : w->mtu - hdr_len;
    wp_send_settle(w, &pkt, NULL, 0, src, first);
    return first;
}

/*
 * Long writes: LONGCTS_RTW and DC_LONGCTS_RTW run CTS rounds into the
 * exposed range (RECEIPT for DC), LONGREAD_RTW reads the peer's buffer and
 * answers EOR. One naming no region, past its region or two ranges is
 * refused and touches nothing, but its protocol still runs so that the
 * origin finishes: CTS rounds whose data is dropped, a RECEIPT (DC) or EOR
 * (long read, no read posted) carrying efarm's REFUSED flag.
 */
EFARM_TEST(wire_rma_long_rtw_served)
{
    const uint64_t len = 100000, size = 256 * 1024;
    uint8_t *big = calloc(1, size), *src = malloc(len), *snap = malloc(size);
    struct efarm_region *reg;
    struct efarm_rma_iov iov, two[2], rd;
    struct efarm_dev_mr *mr;
    uint8_t arr[sizeof(struct efarm_wire_rma_iov)], wire[24];
    struct efarm_pkt pkt;
    struct wp_pkt p;
    uint64_t n0, refused, reads;
    struct wp w;

    rma_open(&w);
    EXPECT_RET(efarm_expose(g_ep, big, size, EFARM_EXPOSE_READ | EFARM_EXPOSE_WRITE, &reg), 0);
    iov = (struct efarm_rma_iov){(uint64_t)(uintptr_t)big + 1000, len, efarm_region_key(reg)};
    proto_fill(src, len, 31);
    n0 = send_longcts_rtw(&w, EFARM_PKT_LONGCTS_RTW, &iov, 1, 0x31, src, len);
    feed_cts(&w, 0x31, src, n0, len);
    PUMP_UNTIL(memcmp(big + 1000, src, len) == 0);
    EXPECT_EQ(big[999], 0);
    EXPECT_EQ(big[1000 + len], 0);
    wp_expect_none(&w, EFARM_PKT_RECEIPT);

    proto_fill(src, len, 32);
    n0 = send_longcts_rtw(&w, EFARM_PKT_DC_LONGCTS_RTW, &iov, 1, 0x32, src, len);
    feed_cts(&w, 0x32, src, n0, len);
    wp_expect(&w, EFARM_PKT_RECEIPT, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x32);
    EXPECT_MEM_EQ(big + 1000, src, len); /* the RECEIPT comes once it is all in */

    /* LONGREAD_RTW: the engine reads the peer's registered buffer, then EOR. */
    proto_fill(src, len, 33);
    EXPECT_RET(efarm_dev_mr_reg(w.dev, src, len, true, false, &mr), 0);
    rd = (struct efarm_rma_iov){(uint64_t)(uintptr_t)src, len, efarm_dev_mr_rkey(mr)};
    efarm_rma_iov_store(arr, 0, &rd);
    rma_req(&w, &pkt, wire, EFARM_PKT_LONGREAD_RTW, &iov, 1, 0);
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, len);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, 0x33);
    efarm_pkt_set(&pkt, EFARM_PKT_F_READ_IOV_COUNT, 1);
    wp_send_settle(&w, &pkt, arr, sizeof(arr), NULL, 0);
    wp_expect(&w, EFARM_PKT_EOR, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x33);
    EXPECT_MEM_EQ(big + 1000, src, len);
    EXPECT_EQ(cnt()->rma_served, 3);

    /* Refused: an unknown key, a range past the region, two ranges, a long read's bad key. */
    memcpy(snap, big, size);
    refused = cnt()->rma_refused;
    reads = cnt()->reads_posted;
    iov.key ^= 0x40;
    n0 = send_longcts_rtw(&w, EFARM_PKT_LONGCTS_RTW, &iov, 1, 0x34, src, len);
    feed_cts(&w, 0x34, src, n0, len); /* dropped; a plain LONGCTS_RTW has no answer */
    wp_expect_none(&w, EFARM_PKT_RECEIPT);
    iov.key ^= 0x40;
    iov.addr = (uint64_t)(uintptr_t)big + size - len / 2;
    n0 = send_longcts_rtw(&w, EFARM_PKT_DC_LONGCTS_RTW, &iov, 1, 0x35, src, len);
    feed_cts(&w, 0x35, src, n0, len);
    wp_expect(&w, EFARM_PKT_RECEIPT, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x35);
    EXPECT_TRUE(p.pkt.flags & 0x0100u); /* REFUSED */
    two[0] = (struct efarm_rma_iov){(uint64_t)(uintptr_t)big, len / 2, efarm_region_key(reg)};
    two[1] = (struct efarm_rma_iov){(uint64_t)(uintptr_t)big + len, len / 2, efarm_region_key(reg)};
    n0 = send_longcts_rtw(&w, EFARM_PKT_DC_LONGCTS_RTW, two, 2, 0x36, src, len);
    feed_cts(&w, 0x36, src, n0, len);
    wp_expect(&w, EFARM_PKT_RECEIPT, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x36);
    EXPECT_TRUE(p.pkt.flags & 0x0100u);
    iov.addr = (uint64_t)(uintptr_t)big + 1000;
    iov.key ^= 0x40;
    rma_req(&w, &pkt, wire, EFARM_PKT_LONGREAD_RTW, &iov, 1, 0);
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, len);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, 0x37);
    efarm_pkt_set(&pkt, EFARM_PKT_F_READ_IOV_COUNT, 1);
    wp_send_settle(&w, &pkt, arr, sizeof(arr), NULL, 0);
    wp_expect(&w, EFARM_PKT_EOR, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x37);
    EXPECT_TRUE(p.pkt.flags & 0x0100u);
    wp_expect_none(&w, -1);
    EXPECT_EQ(cnt()->rma_refused, refused + 4);
    EXPECT_EQ(cnt()->reads_posted, reads);
    EXPECT_EQ(cnt()->rma_served, 3);
    EXPECT_MEM_EQ(big, snap, size);
    efarm_dev_mr_dereg(mr);
    efarm_unexpose(g_ep, reg);
    rma_close(&w);
    free(big);
    free(src);
    free(snap);
}

/*
 * A LONGREAD_RTW whose buffer the peer registered without remote read (as
 * libfabric from 2.5 does for a buffer given for FI_WRITE only, on a device
 * with RDMA write): the engine's read is refused by the peer's NIC. To a peer
 * that takes READ_NACK the engine answers READ_NACK and no EOR, and the write
 * the peer then sends by LONGCTS_RTW lands; to a peer without READ_NACK it
 * answers EOR with efarm's REFUSED flag (nothing else it could say) and the
 * range keeps what it held.
 */
EFARM_TEST(wire_rma_longread_rtw_unreadable)
{
    const uint64_t len = 100000, size = 256 * 1024;
    uint8_t *big = calloc(1, size), *src = malloc(len), *snap = malloc(size);
    uint8_t arr[sizeof(struct efarm_wire_rma_iov)], wire[24];
    struct efarm_region *reg;
    struct efarm_rma_iov iov, rd;
    struct efarm_dev_mr *mr;
    struct efarm_pkt pkt;
    struct wp_pkt p;
    uint64_t n0, nacks, reads;
    struct wp w, w2;

    rma_open(&w);
    EXPECT_RET(efarm_expose(g_ep, big, size, EFARM_EXPOSE_READ | EFARM_EXPOSE_WRITE, &reg), 0);
    iov = (struct efarm_rma_iov){(uint64_t)(uintptr_t)big + 1000, len, efarm_region_key(reg)};
    proto_fill(src, len, 41);
    EXPECT_RET(efarm_dev_mr_reg(w.dev, src, len, false, false, &mr), 0);
    rd = (struct efarm_rma_iov){(uint64_t)(uintptr_t)src, len, efarm_dev_mr_rkey(mr)};
    efarm_rma_iov_store(arr, 0, &rd);
    nacks = cnt()->read_nacks_sent;
    reads = cnt()->reads_posted;

    efarm_test_context("a peer with READ_NACK");
    rma_req(&w, &pkt, wire, EFARM_PKT_LONGREAD_RTW, &iov, 1, 0);
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, len);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, 0x41);
    efarm_pkt_set(&pkt, EFARM_PKT_F_READ_IOV_COUNT, 1);
    wp_send_settle(&w, &pkt, arr, sizeof(arr), NULL, 0);
    wp_expect(&w, EFARM_PKT_READ_NACK, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x41);
    EXPECT_EQ(cnt()->read_nacks_sent, nacks + 1);
    EXPECT_TRUE(cnt()->reads_posted > reads);
    wp_expect_none(&w, EFARM_PKT_EOR);
    n0 = send_longcts_rtw(&w, EFARM_PKT_LONGCTS_RTW, &iov, 1, 0x41, src, len);
    feed_cts(&w, 0x41, src, n0, len);
    PUMP_UNTIL(memcmp(big + 1000, src, len) == 0);
    EXPECT_EQ(big[999], 0);
    EXPECT_EQ(big[1000 + len], 0);
    wp_expect_none(&w, -1);
    EXPECT_EQ(cnt()->rma_refused, 0);

    efarm_test_context("a peer without READ_NACK");
    wp_open(&w2);
    wp_connect(&w2, FEAT_ALL & ~EFARM_EXTRA_FEATURE_READ_NACK);
    efarm_dev_mr_dereg(mr);
    EXPECT_RET(efarm_dev_mr_reg(w2.dev, src, len, false, false, &mr), 0);
    rd.key = efarm_dev_mr_rkey(mr);
    efarm_rma_iov_store(arr, 0, &rd);
    memcpy(snap, big, size);
    proto_fill(src, len, 42);
    rma_req(&w2, &pkt, wire, EFARM_PKT_LONGREAD_RTW, &iov, 1, 0);
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, len);
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, 0x42);
    efarm_pkt_set(&pkt, EFARM_PKT_F_READ_IOV_COUNT, 1);
    wp_send_settle(&w2, &pkt, arr, sizeof(arr), NULL, 0);
    wp_expect(&w2, EFARM_PKT_EOR, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x42);
    EXPECT_TRUE(p.pkt.flags & 0x0100u); /* REFUSED */
    EXPECT_EQ(cnt()->read_nacks_sent, nacks + 1);
    EXPECT_MEM_EQ(big, snap, size);
    wp_expect_none(&w2, -1);
    efarm_dev_mr_dereg(mr);
    wp_close(&w2);
    efarm_unexpose(g_ep, reg);
    rma_close(&w);
    free(big);
    free(src);
    free(snap);
}

/*
 * A peer's long emulated read (LONGCTS_RTR): a READRSP naming the engine's
 * send_id with the first data, CTSDATA up to the peer's recv_length, then a
 * CTS round per grant until the range is out; a refused one is answered by a
 * data-less READRSP with efarm's REFUSED flag.
 */
EFARM_TEST(wire_rma_longcts_rtr_served)
{
    const uint64_t len = 60000;
    uint8_t *big = malloc(len + 100), *got = calloc(1, len), wire[24];
    struct efarm_region *reg;
    struct efarm_rma_iov iov;
    struct efarm_pkt pkt;
    struct wp_pkt p;
    uint64_t have = 0, grant, refused;
    uint32_t send_id;
    struct wp w;

    rma_open(&w);
    proto_fill(big, len + 100, 41);
    EXPECT_RET(efarm_expose(g_ep, big, len + 100, EFARM_EXPOSE_READ, &reg), 0);
    iov = (struct efarm_rma_iov){(uint64_t)(uintptr_t)big + 100, len, efarm_region_key(reg)};
    grant = 2 * wp_ctsdata_room(&w);
    rma_req(&w, &pkt, wire, EFARM_PKT_LONGCTS_RTR, &iov, 1, 0);
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, len);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_ID, 0x77);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_LENGTH, grant);
    wp_send_settle(&w, &pkt, NULL, 0, NULL, 0);
    wp_expect(&w, EFARM_PKT_READRSP, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_RECV_ID), 0x77);
    send_id = (uint32_t)get(&p, EFARM_PKT_F_SEND_ID);
    EXPECT_TRUE(get(&p, EFARM_PKT_F_SEG_LENGTH) > 0);
    memcpy(got, p.pkt.payload, get(&p, EFARM_PKT_F_SEG_LENGTH));
    have = get(&p, EFARM_PKT_F_SEG_LENGTH);
    while (have < len) {
        /* CTSDATA until the grant is used up, then ask for more. */
        while (have < grant && have < len) {
            wp_expect(&w, EFARM_PKT_CTSDATA, &p);
            EXPECT_EQ(get(&p, EFARM_PKT_F_RECV_ID), 0x77);
            EXPECT_EQ(get(&p, EFARM_PKT_F_SEG_OFFSET), have);
            memcpy(got + have, p.pkt.payload, get(&p, EFARM_PKT_F_SEG_LENGTH));
            have += get(&p, EFARM_PKT_F_SEG_LENGTH);
        }
        if (have < len) {
            wp_expect_none(&w, EFARM_PKT_CTSDATA); /* nothing beyond the grant */
            send_cts(&w, send_id, 0x77, 3 * wp_ctsdata_room(&w));
            grant = have + 3 * wp_ctsdata_room(&w);
        }
    }
    EXPECT_EQ(have, len);
    EXPECT_MEM_EQ(got, big + 100, len);
    EXPECT_EQ(cnt()->rma_served, 1);

    /* Refused: past the region, a zero grant. A READRSP says so, with no data. */
    refused = cnt()->rma_refused;
    iov.addr += 200;
    rma_req(&w, &pkt, wire, EFARM_PKT_LONGCTS_RTR, &iov, 1, 0);
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, len);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_ID, 0x78);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_LENGTH, grant);
    wp_send_settle(&w, &pkt, NULL, 0, NULL, 0);
    iov.addr -= 200;
    rma_req(&w, &pkt, wire, EFARM_PKT_LONGCTS_RTR, &iov, 1, 0);
    efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_LENGTH, len);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_ID, 0x79);
    efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_LENGTH, 0);
    wp_send_settle(&w, &pkt, NULL, 0, NULL, 0);
    for (unsigned i = 0, seen = 0; i < 2; i++) {
        uint64_t id;

        wp_expect(&w, EFARM_PKT_READRSP, &p);
        id = get(&p, EFARM_PKT_F_RECV_ID);
        EXPECT_TRUE((id == 0x78 || id == 0x79) && !(seen & (1u << (id - 0x78))));
        seen |= 1u << (id - 0x78);
        EXPECT_EQ(get(&p, EFARM_PKT_F_SEG_LENGTH), 0);
        EXPECT_TRUE(p.pkt.flags & 0x0100u); /* REFUSED */
    }
    wp_expect_none(&w, -1);
    EXPECT_EQ(cnt()->rma_refused, refused + 2);
    efarm_unexpose(g_ep, reg);
    rma_close(&w);
    free(big);
    free(got);
}

/* ---- The engine as origin of the long one-sided subprotocols ---------------------------- */

/* The engine's next packet: `type`, its one rma_iov the range asked for, its msg_length. */
static void expect_long_req(struct wp *w, uint8_t type, const struct efarm_riov *r,
                            struct wp_pkt *p)
{
    struct efarm_rma_iov got;

    wp_expect(w, type, p);
    EXPECT_TRUE(p->pkt.flags & EFARM_REQ_RMA);
    EXPECT_EQ(get(p, EFARM_PKT_F_RMA_IOV_COUNT), 1);
    efarm_rma_iov_load(p->pkt.rma_iov, 0, &got);
    EXPECT_EQ(got.addr, r->addr);
    EXPECT_EQ(got.len, r->len);
    EXPECT_EQ(got.key, r->key);
    EXPECT_EQ(get(p, EFARM_PKT_F_MSG_LENGTH), r->len);
}

/* Take the engine's CTSDATA for [*off, end) into dst, checking recv_id and offsets. */
static void take_data(struct wp *w, uint32_t recv_id, uint8_t *dst, uint64_t *off, uint64_t end)
{
    struct wp_pkt p;

    while (*off < end) {
        uint64_t n;

        wp_expect(w, EFARM_PKT_CTSDATA, &p);
        EXPECT_EQ(get(&p, EFARM_PKT_F_RECV_ID), recv_id);
        EXPECT_EQ(get(&p, EFARM_PKT_F_SEG_OFFSET), *off);
        n = get(&p, EFARM_PKT_F_SEG_LENGTH);
        EXPECT_TRUE(n > 0 && n <= end - *off);
        memcpy(dst + *off, p.pkt.payload, n);
        *off += n;
    }
}

/* A READRSP, EOR or RECEIPT from the fake target, with efarm's REFUSED flag if asked. */
static void send_answer(struct wp *w, uint8_t type, uint32_t send_id, uint32_t recv_id,
                        const void *data, uint64_t n, bool refused)
{
    struct efarm_pkt pkt;

    wp_ctrl(w, &pkt, type);
    if (refused)
        pkt.flags |= 0x0100u;
    efarm_pkt_set(&pkt, EFARM_PKT_F_SEND_ID, send_id);
    if (type == EFARM_PKT_RECEIPT) {
        efarm_pkt_set(&pkt, EFARM_PKT_F_MSG_ID, recv_id);
    } else {
        efarm_pkt_set(&pkt, EFARM_PKT_F_RECV_ID, recv_id);
        if (type == EFARM_PKT_READRSP)
            efarm_pkt_set(&pkt, EFARM_PKT_F_SEG_LENGTH, n);
    }
    wp_send_settle(w, &pkt, NULL, 0, data, n);
}

/*
 * efarm's long one-sided operations on the wire, to a fake target: a write
 * from EFARM_READ_MIN is one LONGREAD_RTW whose read_iov is the registered
 * buffer, done at the EOR (with REFUSED: failed); a READ_NACK turns it into a
 * data-less LONGCTS_RTW with the READ_NACK flag, then CTSDATA per CTS. A
 * longer DC write is one DC_LONGCTS_RTW carrying the first data, done only at
 * the RECEIPT (whatever msg_id it names; with REFUSED: failed). A read of more
 * than one READRSP is one LONGCTS_RTR granting a window; the READRSP may come
 * after the window's CTSDATA, and the next window is asked for by a CTS to the
 * READRSP's send_id; a refusing READRSP fails it.
 */
EFARM_TEST(wire_rma_long_origin)
{
    const uint64_t len = 100000;
    struct efarm_ep_attr attr = {.read_min = 65536, .rx_window = 2};
    uint8_t *src = malloc(len), *got = calloc(1, len);
    struct efarm_riov r = {0x10000, len, 0x4242};
    struct efarm_rma_iov rd;
    struct efarm_req req = {0};
    uint32_t send_id, recv_id;
    uint64_t off, n0, grant;
    struct wp_pkt p;
    struct wp w;

    engine_open(&attr);
    wp_open(&w);
    wp_connect(&w, FEAT_ALL);
    proto_fill(src, len, 71);

    efarm_test_context("LONGREAD_RTW, EOR");
    EXPECT_RET(efarm_write(g_ep, w.peer, src, len, &r, 1, EFARM_RMA_NO_DIRECT, &req), 0);
    expect_long_req(&w, EFARM_PKT_LONGREAD_RTW, &r, &p);
    send_id = (uint32_t)get(&p, EFARM_PKT_F_SEND_ID);
    EXPECT_EQ(get(&p, EFARM_PKT_F_READ_IOV_COUNT), 1);
    efarm_rma_iov_load(p.pkt.payload, 0, &rd);
    EXPECT_EQ(rd.addr, (uint64_t)(uintptr_t)src);
    EXPECT_EQ(rd.len, len);
    pump_for(2000);
    EXPECT_TRUE(!req.done); /* not before the EOR */
    send_answer(&w, EFARM_PKT_EOR, send_id, 0x50, NULL, 0, false);
    wait_req(&req);
    EXPECT_RET(req.status, 0);
    EXPECT_EQ(req.proto, EFARM_RMA_LONGREAD_RTW);
    EXPECT_EQ(req.length, len);

    efarm_test_context("LONGREAD_RTW, refused");
    EXPECT_RET(efarm_write(g_ep, w.peer, src, len, &r, 1, 0, &req), 0);
    expect_long_req(&w, EFARM_PKT_LONGREAD_RTW, &r, &p);
    send_answer(&w, EFARM_PKT_EOR, (uint32_t)get(&p, EFARM_PKT_F_SEND_ID), 0x51, NULL, 0, true);
    wait_req(&req);
    EXPECT_RET(req.status, EFARM_E(PROTO_RMA_REFUSED));
    EXPECT_EQ(req.length, 0);

    efarm_test_context("LONGREAD_RTW, READ_NACK");
    EXPECT_RET(efarm_write(g_ep, w.peer, src, len, &r, 1, 0, &req), 0);
    expect_long_req(&w, EFARM_PKT_LONGREAD_RTW, &r, &p);
    send_id = (uint32_t)get(&p, EFARM_PKT_F_SEND_ID);
    send_answer(&w, EFARM_PKT_READ_NACK, send_id, 0x52, NULL, 0, false);
    expect_long_req(&w, EFARM_PKT_LONGCTS_RTW, &r, &p);
    EXPECT_TRUE(p.pkt.flags & EFARM_REQ_READ_NACK);
    EXPECT_EQ(p.pkt.payload_length, 0);
    EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), send_id);
    EXPECT_TRUE(get(&p, EFARM_PKT_F_CREDIT_REQUEST) >= 1);
    wp_expect_none(&w, EFARM_PKT_CTSDATA);
    off = 0;
    memset(got, 0, len);
    send_cts(&w, send_id, 0x53, 30000);
    take_data(&w, 0x53, got, &off, 30000);
    wp_expect_none(&w, EFARM_PKT_CTSDATA); /* nothing beyond the grant */
    send_cts(&w, send_id, 0x53, len);
    take_data(&w, 0x53, got, &off, len);
    wait_req(&req);
    EXPECT_RET(req.status, 0);
    EXPECT_MEM_EQ(got, src, len);

    engine_close();
    wp_close(&w);
    attr.read_min = UINT64_MAX; /* LONGCTS_RTW above EFARM_MEDIUM_MAX */
    engine_open(&attr);
    wp_open(&w);
    wp_connect(&w, FEAT_ALL);
    for (unsigned refused = 0; refused < 2; refused++) {
        efarm_test_context("DC_LONGCTS_RTW, %s RECEIPT", refused ? "refusing" : "plain");
        EXPECT_RET(efarm_write(g_ep, w.peer, src, len, &r, 1, EFARM_RMA_DC, &req), 0);
        expect_long_req(&w, EFARM_PKT_DC_LONGCTS_RTW, &r, &p);
        send_id = (uint32_t)get(&p, EFARM_PKT_F_SEND_ID);
        n0 = p.pkt.payload_length;
        EXPECT_TRUE(n0 > 0 && n0 < len); /* the first data, never all of it */
        memset(got, 0, len);
        memcpy(got, p.pkt.payload, n0);
        off = n0;
        send_cts(&w, send_id, 0x60, len);
        take_data(&w, 0x60, got, &off, len);
        EXPECT_MEM_EQ(got, src, len);
        pump_for(2000);
        EXPECT_TRUE(!req.done); /* remote completion: the RECEIPT */
        send_answer(&w, EFARM_PKT_RECEIPT, send_id, 0xdead, NULL, 0, refused);
        wait_req(&req);
        EXPECT_RET(req.status, refused ? EFARM_E(PROTO_RMA_REFUSED) : 0);
        EXPECT_EQ(req.proto, EFARM_RMA_LONGCTS_RTW);
    }

    efarm_test_context("LONGCTS_RTR, READRSP after the window's CTSDATA");
    memset(got, 0, len);
    EXPECT_RET(efarm_read(g_ep, w.peer, got, len, &r, 1, EFARM_RMA_NO_DIRECT, &req), 0);
    expect_long_req(&w, EFARM_PKT_LONGCTS_RTR, &r, &p);
    recv_id = (uint32_t)get(&p, EFARM_PKT_F_RECV_ID);
    grant = get(&p, EFARM_PKT_F_RECV_LENGTH);
    EXPECT_EQ(grant, 2 * wp_ctsdata_room(&w)); /* EFARM_RX_WINDOW packets */
    n0 = 1000;
    off = n0;
    for (uint64_t k; off < grant; off += k) {
        k = grant - off < wp_ctsdata_room(&w) ? grant - off : wp_ctsdata_room(&w);
        send_ctsdata(&w, recv_id, off, src + off, k);
    }
    wp_expect_none(&w, EFARM_PKT_CTS); /* the READRSP's bytes are still missing */
    send_answer(&w, EFARM_PKT_READRSP, 0x71, recv_id, src, n0, false);
    while (off < len) {
        uint64_t more;

        wp_expect(&w, EFARM_PKT_CTS, &p);
        EXPECT_EQ(get(&p, EFARM_PKT_F_SEND_ID), 0x71);
        EXPECT_EQ(get(&p, EFARM_PKT_F_RECV_ID), recv_id);
        more = get(&p, EFARM_PKT_F_RECV_LENGTH);
        EXPECT_TRUE(more > 0 && more <= len - off);
        for (uint64_t end = off + more, k; off < end; off += k) {
            k = end - off < wp_ctsdata_room(&w) ? end - off : wp_ctsdata_room(&w);
            send_ctsdata(&w, recv_id, off, src + off, k);
        }
    }
    wait_req(&req);
    EXPECT_RET(req.status, 0);
    EXPECT_EQ(req.proto, EFARM_RMA_LONGCTS_RTR);
    EXPECT_MEM_EQ(got, src, len);

    efarm_test_context("LONGCTS_RTR, refused");
    EXPECT_RET(efarm_read(g_ep, w.peer, got, len, &r, 1, EFARM_RMA_NO_DIRECT, &req), 0);
    expect_long_req(&w, EFARM_PKT_LONGCTS_RTR, &r, &p);
    recv_id = (uint32_t)get(&p, EFARM_PKT_F_RECV_ID);
    send_answer(&w, EFARM_PKT_READRSP, 0, recv_id, NULL, 0, true);
    wait_req(&req);
    EXPECT_RET(req.status, EFARM_E(PROTO_RMA_REFUSED));
    EXPECT_EQ(req.length, 0);
    send_ctsdata(&w, recv_id, 0, src, 100); /* the read is over: stale, dropped */
    EXPECT_TRUE(cnt()->stale_ids >= 1);
    wp_expect_none(&w, -1);
    wp_close(&w);
    engine_close();
    free(src);
    free(got);
}
