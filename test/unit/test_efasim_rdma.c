/*
 * One-sided RDMA between two efasim devices of one process: reads and writes
 * of one byte to 16 MiB (many packets), write with immediate data, and
 * requests outside what the target registered (bad rkey, out of bounds, no
 * remote access), which must fail with EFA's status 7 (IBV_WC_GENERAL_ERR in
 * rdma-core 44) and leave the target's memory untouched. The target never
 * polls: efasim serves RDMA by itself.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "efasim_common.h"

#define RDMA_GUARD    4096
#define RDMA_MAX_LEN  (16u << 20)
#define RDMA_GUARD_C  0xee
#define RDMA_R_OFFSET 13 /* target offset past the guard: unaligned on purpose */
#define RDMA_L_OFFSET 5  /* same for the local buffer */

static const size_t g_rdma_sizes[] = {1, 4096, EFASIM_DEFAULT_MTU, 1u << 20, RDMA_MAX_LEN};

/* Requester on efasim_1, target on efasim_0, each with an SRD QP. */
struct rdma_fixture {
    struct efasim_dev dev[2];
    struct efasim_qp req, tgt;
    struct efasim_dest to_tgt;
};

static void rdma_open(struct rdma_fixture *f, bool write)
{
    struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;

    efasim_setenv("EFASIM_NDEV", "2");
    if (write) {
        efasim_setenv("EFASIM_RDMA_WRITE", "1");
        efasim_require_rdma_write();
    }
    efasim_dev_open(0, &f->dev[0]);
    efasim_dev_open(1, &f->dev[1]);
    EXPECT_TRUE(f->dev[1].efa.device_caps & EFADV_DEVICE_ATTR_CAPS_RDMA_READ);
    EXPECT_TRUE(f->dev[1].efa.max_rdma_size >= RDMA_MAX_LEN);
    if (write) {
        EXPECT_TRUE(f->dev[1].efa.device_caps & EFASIM_CAPS_RDMA_WRITE);
        opts.send_ops_flags |= EFASIM_SEND_OPS_RDMA_WRITE;
    }
    efasim_qp_open(&f->dev[1], &opts, &f->req);
    efasim_qp_open(&f->dev[0], &opts, &f->tgt);
    efasim_dest_to(&f->dev[1], &f->tgt, &f->to_tgt);
}

static void rdma_close(struct rdma_fixture *f)
{
    EXPECT_EQ(ibv_destroy_ah(f->to_tgt.ah), 0);
    efasim_qp_close(&f->req);
    efasim_qp_close(&f->tgt);
    efasim_dev_close(&f->dev[0]);
    efasim_dev_close(&f->dev[1]);
}

static void expect_guard(const uint8_t *p, size_t len, const char *what)
{
    size_t bad = efasim_check_byte(p, len, RDMA_GUARD_C);

    if (bad != len)
        efarm_test_fail(__FILE__, __LINE__, "%s overwritten at byte %zu", what, bad);
}

EFARM_TEST_TIMEOUT(efasim_rdma_read_sizes, 60)
{
    const size_t buf_len = RDMA_MAX_LEN + 2 * RDMA_GUARD + 64;
    struct efasim_buf local, remote;
    struct rdma_fixture f;
    struct efasim_wc wc;

    rdma_open(&f, false);
    efasim_buf_alloc(&f.dev[1], buf_len, IBV_ACCESS_LOCAL_WRITE, &local);
    efasim_buf_alloc(&f.dev[0], buf_len, EFASIM_ACCESS_ALL, &remote);
    efasim_fill(remote.addr, buf_len, 0x5151);
    for (size_t i = 0; i < sizeof(g_rdma_sizes) / sizeof(g_rdma_sizes[0]); i++) {
        size_t len = g_rdma_sizes[i], loff = RDMA_GUARD + RDMA_L_OFFSET;
        size_t roff = RDMA_GUARD + RDMA_R_OFFSET;

        efarm_test_context("RDMA read of %zu bytes", len);
        memset(local.addr, RDMA_GUARD_C, loff + len + RDMA_GUARD);
        EXPECT_EQ(efasim_rdma_read(&f.req, &f.to_tgt, i, &local, loff, len, remote.mr->rkey,
                                   (uintptr_t)(remote.addr + roff)),
                  0);
        efasim_wait_wc_for(f.req.send_cq, &wc, 30, "the RDMA read");
        EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
        EXPECT_EQ(wc.wr_id, i);
        EXPECT_EQ(wc.opcode, IBV_WC_SEND); /* EFA reports reads as sends */
        EXPECT_MEM_EQ(local.addr + loff, remote.addr + roff, len);
        expect_guard(local.addr, loff, "the guard before the read's destination");
        expect_guard(local.addr + loff + len, RDMA_GUARD, "the guard after the read's destination");
    }
    efasim_expect_no_wc(f.tgt.recv_cq, 10, "the target of the reads");
    efasim_buf_free(&local);
    efasim_buf_free(&remote);
    rdma_close(&f);
}

EFARM_TEST_TIMEOUT(efasim_rdma_write_sizes, 60)
{
    const size_t buf_len = RDMA_MAX_LEN + 2 * RDMA_GUARD + 64;
    struct efasim_buf local, remote;
    struct rdma_fixture f;
    struct efasim_wc wc;

    rdma_open(&f, true);
    efasim_buf_alloc(&f.dev[1], buf_len, IBV_ACCESS_LOCAL_WRITE, &local);
    efasim_buf_alloc(&f.dev[0], buf_len, EFASIM_ACCESS_ALL, &remote);
    efasim_fill(local.addr, buf_len, 0x7700);
    for (size_t i = 0; i < sizeof(g_rdma_sizes) / sizeof(g_rdma_sizes[0]); i++) {
        size_t len = g_rdma_sizes[i], loff = RDMA_GUARD + RDMA_L_OFFSET;
        size_t roff = RDMA_GUARD + RDMA_R_OFFSET;

        efarm_test_context("RDMA write of %zu bytes", len);
        memset(remote.addr, RDMA_GUARD_C, roff + len + RDMA_GUARD);
        EXPECT_EQ(efasim_rdma_write(&f.req, &f.to_tgt, i, &local, loff, len, remote.mr->rkey,
                                    (uintptr_t)(remote.addr + roff)),
                  0);
        efasim_wait_wc_for(f.req.send_cq, &wc, 30, "the RDMA write");
        EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
        EXPECT_EQ(wc.wr_id, i);
        EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
        EXPECT_MEM_EQ(remote.addr + roff, local.addr + loff, len);
        expect_guard(remote.addr, roff, "the guard before the write's target");
        expect_guard(remote.addr + roff + len, RDMA_GUARD, "the guard after the write's target");
    }
    efasim_expect_no_wc(f.tgt.recv_cq, 10, "the target of the writes (no immediate data)");
    efasim_buf_free(&local);
    efasim_buf_free(&remote);
    rdma_close(&f);
}

/*
 * Write with immediate data consumes a receive on the target and delivers imm
 * and the write's length: above 64 KiB too, which EFA's receive completion
 * carries in two parts (length and, for an RDMA write, length_hi; rdma-core
 * from 45 joins them).
 */
EFARM_TEST(efasim_rdma_write_with_imm)
{
    static const size_t lens[] = {20000, 200000};
    struct efasim_buf local, remote, rbuf;
    struct rdma_fixture f;
    struct efasim_wc wc;

    rdma_open(&f, true);
    efasim_buf_alloc(&f.dev[1], 262144, IBV_ACCESS_LOCAL_WRITE, &local);
    efasim_buf_alloc(&f.dev[0], 262144, EFASIM_ACCESS_ALL, &remote);
    efasim_buf_alloc(&f.dev[0], 4096, EFASIM_ACCESS_ALL, &rbuf);
    efasim_fill(local.addr, local.len, 0x1234);
    for (unsigned i = 0; i < 2; i++) {
        size_t len = lens[i];

        efarm_test_context("RDMA write with imm of %zu bytes", len);
        memset(remote.addr, RDMA_GUARD_C, remote.len);
        efasim_post_recv(&f.tgt, 71 + 10 * i, &rbuf, 0, rbuf.len);
        EXPECT_EQ(efasim_rdma_write_imm(&f.req, &f.to_tgt, 72 + 10 * i, &local, 0, len,
                                        remote.mr->rkey, (uintptr_t)(remote.addr + 100),
                                        0xfeedf00du + i),
                  0);
        efasim_wait_wc(f.tgt.recv_cq, &wc, "the target's receive for the write with imm");
        EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
        EXPECT_EQ(wc.wr_id, 71 + 10 * i);
        EXPECT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
        EXPECT_EQ(wc.wc_flags & IBV_WC_WITH_IMM, IBV_WC_WITH_IMM);
        EXPECT_EQ(wc.imm, 0xfeedf00du + i);
        EXPECT_EQ(wc.byte_len, len);
        EXPECT_EQ(wc.src_qp, f.req.qpn);
        EXPECT_MEM_EQ(remote.addr + 100, local.addr, len);
        expect_guard(remote.addr, 100, "the guard before the write's target");
        expect_guard(remote.addr + 100 + len, remote.len - 100 - len,
                     "the guard after the write's target");
        efasim_wait_wc(f.req.send_cq, &wc, "the write with imm");
        EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
        EXPECT_EQ(wc.wr_id, 72 + 10 * i);
        EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
    }
    efasim_buf_free(&local);
    efasim_buf_free(&remote);
    efasim_buf_free(&rbuf);
    rdma_close(&f);
}

/*
 * Target memory: [guard][region: registered][guard], and a second region
 * registered without the remote access the operation needs.
 */
#define REGION_LEN 65536u

struct bounds_target {
    uint8_t *mem; /* 2 guards around two regions */
    size_t mem_len;
    struct ibv_mr *mr;      /* mem + RDMA_GUARD, REGION_LEN, all access */
    struct ibv_mr *mr_nope; /* the second region, without the remote access */
    uint8_t *snapshot;
};

static void bounds_open(struct bounds_target *t, struct efasim_dev *dev, int nope_access)
{
    t->mem_len = 3 * RDMA_GUARD + 2 * REGION_LEN;
    t->mem = mmap(NULL, t->mem_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_TRUE(t->mem != MAP_FAILED);
    efasim_fill(t->mem, t->mem_len, 0xb0b0);
    t->mr = ibv_reg_mr(dev->pd, t->mem + RDMA_GUARD, REGION_LEN,
                       efasim_access_offered(dev, EFASIM_ACCESS_ALL));
    t->mr_nope = ibv_reg_mr(dev->pd, t->mem + 2 * RDMA_GUARD + REGION_LEN, REGION_LEN, nope_access);
    EXPECT_TRUE(t->mr && t->mr_nope);
    t->snapshot = malloc(t->mem_len);
    EXPECT_TRUE(t->snapshot != NULL);
    memcpy(t->snapshot, t->mem, t->mem_len);
}

static void bounds_close(struct bounds_target *t)
{
    EXPECT_EQ(ibv_dereg_mr(t->mr), 0);
    EXPECT_EQ(ibv_dereg_mr(t->mr_nope), 0);
    munmap(t->mem, t->mem_len);
    free(t->snapshot);
}

struct bounds_case {
    const char *name;
    uint32_t rkey;
    uint8_t *raddr;
    size_t len;
};

static unsigned bounds_cases(const struct bounds_target *t, struct bounds_case *c)
{
    uint8_t *start = t->mem + RDMA_GUARD, *end = start + REGION_LEN;
    uint32_t bad_rkey = t->mr->rkey ^ 0x5a5a5a5au;
    unsigned n = 0;

    if (bad_rkey == t->mr_nope->rkey)
        bad_rkey ^= 0x01000000u;
    c[n++] = (struct bounds_case){"bad rkey", bad_rkey, start, 64};
    c[n++] = (struct bounds_case){"offset past the end", t->mr->rkey, end + 64, 64};
    c[n++] = (struct bounds_case){"offset at the end", t->mr->rkey, end, 1};
    c[n++] = (struct bounds_case){"length crossing the end", t->mr->rkey, end - 32, 64};
    c[n++] = (struct bounds_case){"start before the region", t->mr->rkey, start - 32, 64};
    c[n++] = (struct bounds_case){"whole region plus one", t->mr->rkey, start, REGION_LEN + 1};
    c[n++] = (struct bounds_case){"address wrapping around", t->mr->rkey,
                                  (uint8_t *)UINTPTR_MAX - 15, 64};
    c[n++] = (struct bounds_case){"region without remote access", t->mr_nope->rkey,
                                  (uint8_t *)t->mr_nope->addr, 64};
    return n;
}

static void rdma_bounds(bool write)
{
    struct bounds_case cases[16];
    struct bounds_target t;
    struct efasim_buf local;
    struct rdma_fixture f;
    struct efasim_wc wc;
    unsigned n;
    int rc;

    rdma_open(&f, write);
    efasim_buf_alloc(&f.dev[1], 2 * REGION_LEN, IBV_ACCESS_LOCAL_WRITE, &local);
    efasim_fill(local.addr, local.len, 0x10ca1);
    bounds_open(&t, &f.dev[0],
                write ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ : IBV_ACCESS_LOCAL_WRITE);
    n = bounds_cases(&t, cases);
    for (unsigned i = 0; i < n; i++) {
        efarm_test_context("RDMA %s: %s", write ? "write" : "read", cases[i].name);
        if (write)
            rc = efasim_rdma_write(&f.req, &f.to_tgt, i, &local, 0, cases[i].len, cases[i].rkey,
                                   (uintptr_t)cases[i].raddr);
        else
            rc = efasim_rdma_read(&f.req, &f.to_tgt, i, &local, 0, cases[i].len, cases[i].rkey,
                                  (uintptr_t)cases[i].raddr);
        EXPECT_EQ(rc, 0);
        efasim_wait_wc(f.req.send_cq, &wc, cases[i].name);
        EXPECT_WC_STATUS(&wc, EFASIM_WC_REMOTE_ACCESS);
        EXPECT_EQ(wc.wr_id, i);
        EXPECT_EQ(wc.vendor_err, EFASIM_VENDOR_REMOTE_ACCESS);
        EXPECT_MEM_EQ(t.mem, t.snapshot, t.mem_len);
    }

    /* The same QP still reaches the region: the whole of it, exactly. */
    efarm_test_context("RDMA %s of the whole region after the errors", write ? "write" : "read");
    if (write)
        rc = efasim_rdma_write(&f.req, &f.to_tgt, 100, &local, 0, REGION_LEN, t.mr->rkey,
                               (uintptr_t)t.mr->addr);
    else
        rc = efasim_rdma_read(&f.req, &f.to_tgt, 100, &local, 0, REGION_LEN, t.mr->rkey,
                              (uintptr_t)t.mr->addr);
    EXPECT_EQ(rc, 0);
    efasim_wait_wc(f.req.send_cq, &wc, "the valid request");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_MEM_EQ(local.addr, t.mem + RDMA_GUARD, REGION_LEN);
    if (write)
        memcpy(t.snapshot + RDMA_GUARD, local.addr, REGION_LEN);
    EXPECT_MEM_EQ(t.mem, t.snapshot, t.mem_len);

    efasim_expect_no_wc(f.tgt.recv_cq, 10, "the target");
    bounds_close(&t);
    efasim_buf_free(&local);
    rdma_close(&f);
}

EFARM_TEST(efasim_rdma_read_access_errors)
{
    rdma_bounds(false);
}

EFARM_TEST(efasim_rdma_write_access_errors)
{
    rdma_bounds(true);
}

/*
 * RDMA reads take sequence numbers from the same space as sends but are never
 * recorded by the target's duplicate window: the requester's low-water mark
 * must carry the target's window past them, or sends stall once they are a
 * window (512) beyond the read.
 */
EFARM_TEST(efasim_rdma_read_then_many_sends)
{
    const unsigned nsend = 600;
    struct efasim_buf local, remote, rbuf;
    struct rdma_fixture f;
    struct efasim_wc wc;

    rdma_open(&f, false);
    efasim_buf_alloc(&f.dev[1], 4096, IBV_ACCESS_LOCAL_WRITE, &local);
    efasim_buf_alloc(&f.dev[0], 4096, EFASIM_ACCESS_ALL, &remote);
    efasim_buf_alloc(&f.dev[0], 64, IBV_ACCESS_LOCAL_WRITE, &rbuf);
    EXPECT_EQ(efasim_rdma_read(&f.req, &f.to_tgt, 1, &local, 0, 64, remote.mr->rkey,
                               (uintptr_t)remote.addr),
              0);
    efasim_wait_wc(f.req.send_cq, &wc, "the RDMA read");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    for (unsigned i = 0; i < nsend; i++) {
        efarm_test_context("send %u after the read", i);
        efasim_post_recv(&f.tgt, i, &rbuf, 0, 64);
        EXPECT_EQ(efasim_send(&f.req, &f.to_tgt, i, &local, 0, 8), 0);
        efasim_wait_wc(f.req.send_cq, &wc, "a send after the read");
        EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
        efasim_wait_wc(f.tgt.recv_cq, &wc, "a receive after the read");
        EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
        EXPECT_EQ(wc.wr_id, i);
    }
    efasim_buf_free(&local);
    efasim_buf_free(&remote);
    efasim_buf_free(&rbuf);
    rdma_close(&f);
}

/*
 * ibv_poll_cq reports the same status as the extended API: rdma-core 44's
 * provider maps the device's status in one place for both (to_ibv_status),
 * so a bad rkey is IBV_WC_GENERAL_ERR there too, with vendor error 7.
 */
EFARM_TEST(efasim_rdma_bad_rkey_status_legacy_poll)
{
    struct efasim_buf local, remote;
    struct rdma_fixture f;
    struct ibv_wc wc;
    double deadline;
    int n;

    rdma_open(&f, false);
    efasim_buf_alloc(&f.dev[1], 4096, IBV_ACCESS_LOCAL_WRITE, &local);
    efasim_buf_alloc(&f.dev[0], 4096, EFASIM_ACCESS_ALL, &remote);
    EXPECT_EQ(efasim_rdma_read(&f.req, &f.to_tgt, 7, &local, 0, 64, remote.mr->rkey ^ 0x100,
                               (uintptr_t)remote.addr),
              0);
    deadline = efasim_now() + EFASIM_WAIT_S;
    while ((n = ibv_poll_cq(ibv_cq_ex_to_cq(f.req.send_cq), 1, &wc)) == 0) {
        if (efasim_now() > deadline)
            efarm_test_fail(__FILE__, __LINE__, "no completion for the read with a bad rkey");
        efasim_sleep_ms(0);
    }
    EXPECT_EQ(n, 1);
    EXPECT_EQ(wc.wr_id, 7);
    EXPECT_EQ(wc.status, EFASIM_WC_REMOTE_ACCESS);
    EXPECT_EQ(wc.vendor_err, EFASIM_VENDOR_REMOTE_ACCESS);
    EXPECT_EQ(wc.opcode, IBV_WC_SEND);
    efasim_buf_free(&local);
    efasim_buf_free(&remote);
    rdma_close(&f);
}
