/*
 * bench-direct-path: the host instructions a direct data path would execute per
 * 8-byte round trip on EFA, writing EFA's queue entries and reading its completion
 * ring itself instead of through rdma-core's libibverbs and libefa.
 *
 * efarm has no direct path: Debian's rdma-core 44 does not hand out a QP's queues
 * (efadv_query_qp_wqs and efadv_query_cq came later). This program is the floor such
 * a path could reach, to set against what rdma-core costs per round trip
 * (bench/run-engine-instr.sh --rdma-core counts that): the work that stays whoever
 * does it. Per round trip and side, as efarm's device layer does through rdma-core:
 *   - one send: a 64-byte send queue entry (32-byte meta descriptor and the packet
 *     inline: header and payload, two pieces, as efarm posts a small packet),
 *     built in place, copied to the queue (EFA's LLQ: write-combined device memory),
 *     the producer index and phase advanced, the send doorbell written;
 *   - one receive buffer posted again: a 16-byte receive descriptor and the
 *     receive doorbell (efarm posts its receives in batches, so this is more than
 *     it would spend);
 *   - two completions read: the send's and the receive's, each checked by its
 *     phase bit, its fields read as efarm's device layer reads them (status, queue
 *     type, request id; for the receive length, source QP, AH number), the consumer
 *     index advanced and written to the CQ doorbell once per poll that found work.
 * Request ids are efarm's own indices (send slots, receive buffers), so no table
 * maps them back, and one QP per CQ needs no QP lookup: the choices a direct path
 * in efarm would make. No lock: a VCI's endpoint is polled by one thread at a time.
 *
 * The queues are ordinary memory here and a "device" function stands in for the
 * NIC (it writes the two completions a round trip produces); only the dp_
 * functions are the path. run-engine-instr.sh runs this under callgrind with
 * --toggle-collect='dp_*' at two round-trip counts and an empty-poll count and takes
 * differences: instructions per round trip and per empty poll. On EFA the stores
 * to the LLQ and the doorbells are the same instructions (they cost more cycles).
 *
 *   bench-direct-path TRIPS EMPTY-POLLS
 *
 * prints "trips N empty M check X" (X: a checksum of what was read, so the compiler
 * keeps every read).
 */
#include "efa_io.h" /* EFA's queue formats (src/efasim/kernel) */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SQ_DEPTH 256u /* powers of two, as EFA's queues */
#define RQ_DEPTH 256u
#define CQ_DEPTH 512u

struct dp_sq {
    struct efasim_io_tx_wqe *llq;
    volatile uint32_t *db;
    uint32_t pc, phase;
    uint16_t dest_qpn, ah;
    uint32_t qkey;
};

struct dp_rq {
    struct efasim_io_rx_desc *ring;
    volatile uint32_t *db;
    uint32_t pc;
    uint32_t lkey;
};

struct dp_cq {
    struct efasim_io_rx_cdesc *ring; /* 16-byte entries (no SGID: the AH is known) */
    volatile uint32_t *db;
    uint32_t cc, phase;
};

struct dp_cqe {
    uint16_t req_id;
    uint8_t status;
    uint8_t recv;
    uint32_t len;
    uint32_t src_qpn;
    uint16_t ahn;
};

struct piece {
    const void *addr;
    uint32_t len;
};

/* The fence before a doorbell: on x86 a compiler barrier (stores are ordered);
 * rdma-core's mmio_wc_start/mmio_flush_writes are the same there. */
#define dp_barrier() __asm__ __volatile__("" ::: "memory")

static __attribute__((noinline)) int dp_post_send(struct dp_sq *sq, uint16_t req_id,
                                                  const struct piece *p, unsigned n)
{
    struct efasim_io_tx_wqe w;
    uint32_t len = 0;

    memset(&w, 0, sizeof w);
    w.meta.req_id = req_id;
    w.meta.ctrl1 = (uint8_t)EFASIM_IO_SET(
        EFASIM_IO_SET(0u, EFASIM_IO_TX_OP_TYPE, EFASIM_IO_OP_SEND), EFASIM_IO_TX_INLINE, 1u);
    w.meta.ctrl1 = (uint8_t)EFASIM_IO_SET(w.meta.ctrl1, EFASIM_IO_TX_META, 1u);
    w.meta.ctrl2 = (uint8_t)EFASIM_IO_SET(
        EFASIM_IO_SET(
            EFASIM_IO_SET(EFASIM_IO_SET(0u, EFASIM_IO_TX_PHASE, sq->phase), EFASIM_IO_TX_FIRST, 1u),
            EFASIM_IO_TX_LAST, 1u),
        EFASIM_IO_TX_COMP_REQ, 1u);
    w.meta.dest_qp_num = sq->dest_qpn;
    w.meta.ah = sq->ah;
    w.meta.qkey = sq->qkey;
    for (unsigned i = 0; i < n; i++) {
        if (len + p[i].len > sizeof w.data.inline_data)
            return -1; /* not inline: the caller posts buffer descriptors */
        memcpy(w.data.inline_data + len, p[i].addr, p[i].len);
        len += p[i].len;
    }
    w.meta.length = (uint16_t)len;
    memcpy(&sq->llq[sq->pc & (SQ_DEPTH - 1)], &w, sizeof w); /* 64 bytes to the LLQ */
    sq->pc++;
    if ((sq->pc & (SQ_DEPTH - 1)) == 0)
        sq->phase ^= 1;
    dp_barrier();
    *sq->db = sq->pc & 0xffff;
    return 0;
}

static __attribute__((noinline)) void dp_post_recv(struct dp_rq *rq, uint16_t req_id,
                                                   const void *buf, uint16_t len)
{
    struct efasim_io_rx_desc *d = &rq->ring[rq->pc & (RQ_DEPTH - 1)];
    uintptr_t a = (uintptr_t)buf;

    d->addr_lo = (uint32_t)a;
    d->addr_hi = (uint32_t)((uint64_t)a >> 32);
    d->req_id = req_id;
    d->length = len;
    d->lkey_ctrl = (rq->lkey & EFASIM_IO_LKEY_MASK) | EFASIM_IO_RX_FIRST | EFASIM_IO_RX_LAST;
    rq->pc++;
    dp_barrier();
    *rq->db = rq->pc & 0xffff;
}

/* Up to max completions; 0 when the ring holds none (an empty poll). */
static __attribute__((noinline)) unsigned dp_poll(struct dp_cq *cq, struct dp_cqe *out,
                                                  unsigned max)
{
    unsigned n = 0;

    while (n < max) {
        const volatile struct efasim_io_rx_cdesc *e = &cq->ring[cq->cc & (CQ_DEPTH - 1)];
        uint8_t flags = e->common.flags;

        if (EFASIM_IO_GET(flags, EFASIM_IO_CQE_PHASE) != cq->phase)
            break;
        dp_barrier(); /* the entry's other fields after its phase */
        struct dp_cqe *c = &out[n++];
        c->req_id = e->common.req_id;
        c->status = e->common.status;
        c->recv = EFASIM_IO_GET(flags, EFASIM_IO_CQE_Q_TYPE) == EFASIM_IO_RECV_QUEUE;
        if (c->recv) {
            c->len = e->common.length;
            c->src_qpn = e->src_qp_num;
            c->ahn = e->ah;
        }
        cq->cc++;
        if ((cq->cc & (CQ_DEPTH - 1)) == 0)
            cq->phase ^= 1;
    }
    if (n)
        *cq->db = EFASIM_IO_SET(0u, EFASIM_IO_CQ_DB_CONSUMER, cq->cc);
    return n;
}

/* The NIC: the send's completion and the peer's message arriving in the receive. */
static void device_round_trip(struct dp_cq *cq, uint32_t *dev_pc, uint32_t *dev_phase,
                              uint16_t send_id, uint16_t recv_id)
{
    for (int k = 0; k < 2; k++) {
        struct efasim_io_rx_cdesc *e = &cq->ring[*dev_pc & (CQ_DEPTH - 1)];

        memset(e, 0, sizeof *e);
        e->common.req_id = k ? recv_id : send_id;
        e->common.qp_num = 7;
        e->common.length = k ? 40 : 0;
        e->ah = 3;
        e->src_qp_num = 9;
        __atomic_thread_fence(__ATOMIC_RELEASE);
        e->common.flags = (uint8_t)EFASIM_IO_SET(
            EFASIM_IO_SET(0u, EFASIM_IO_CQE_PHASE, *dev_phase), EFASIM_IO_CQE_Q_TYPE,
            k ? (unsigned)EFASIM_IO_RECV_QUEUE : (unsigned)EFASIM_IO_SEND_QUEUE);
        if ((++*dev_pc & (CQ_DEPTH - 1)) == 0)
            *dev_phase ^= 1;
    }
}

static unsigned long count_arg(const char *s)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);

    if (*s == '\0' || *end != '\0' || v > 100000000ul) {
        fprintf(stderr, "bench-direct-path: '%s' is not a count (0 to 100000000)\n", s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: bench-direct-path TRIPS EMPTY-POLLS\n");
        return 2;
    }
    unsigned long trips = count_arg(argv[1]), empty = count_arg(argv[2]);
    static struct efasim_io_tx_wqe llq[SQ_DEPTH];
    static struct efasim_io_rx_desc rq_ring[RQ_DEPTH];
    static struct efasim_io_rx_cdesc cq_ring[CQ_DEPTH];
    static uint8_t rx_bufs[RQ_DEPTH][64];
    static volatile uint32_t doorbells[3];
    struct dp_sq sq = {
        .llq = llq, .db = &doorbells[0], .phase = 1, .dest_qpn = 9, .ah = 3, .qkey = 0x1234};
    struct dp_rq rq = {.ring = rq_ring, .db = &doorbells[1], .lkey = 0x55};
    struct dp_cq cq = {.ring = cq_ring, .db = &doorbells[2], .phase = 1};
    uint32_t dev_pc = 0, dev_phase = 1;
    uint64_t check = 0;
    uint8_t hdr[32] = {0x40}, payload[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const struct piece pieces[2] = {{hdr, 24}, {payload, sizeof payload}};
    struct dp_cqe cqes[4];

    for (unsigned i = 0; i < RQ_DEPTH; i++)
        dp_post_recv(&rq, (uint16_t)i, rx_bufs[i], sizeof rx_bufs[i]);
    for (unsigned long t = 0; t < trips; t++) {
        uint16_t send_id = (uint16_t)(t & (SQ_DEPTH - 1)), recv_id = (uint16_t)(t & (RQ_DEPTH - 1));

        if (dp_post_send(&sq, send_id, pieces, 2) != 0)
            return 1;
        device_round_trip(&cq, &dev_pc, &dev_phase, send_id, recv_id);
        unsigned got = 0;
        while (got < 2) {
            unsigned n = dp_poll(&cq, cqes, 4);
            for (unsigned k = 0; k < n; k++) {
                check += cqes[k].req_id + cqes[k].status + cqes[k].recv;
                if (cqes[k].recv) {
                    check += cqes[k].len + cqes[k].src_qpn + cqes[k].ahn;
                    dp_post_recv(&rq, cqes[k].req_id, rx_bufs[cqes[k].req_id], sizeof rx_bufs[0]);
                }
            }
            got += n;
            if (n == 0)
                return 1; /* the device wrote both: an empty poll here is a bug */
        }
    }
    for (unsigned long e = 0; e < empty; e++)
        check += dp_poll(&cq, cqes, 4); /* nothing there: 0 */
    printf("trips %lu empty %lu check %llu\n", trips, empty, (unsigned long long)check);
    return 0;
}
