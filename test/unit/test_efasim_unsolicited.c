/*
 * Unsolicited RDMA write receive (rdma-core 52 and later, newer EFA): on an
 * SRD QP created with EFADV_QP_FLAGS_UNSOLICITED_WRITE_RECV, a write with
 * immediate takes no receive WR. The target's receive CQ reports it with
 * wr_id 0, flagged unsolicited (efadv_cq's wc_is_unsolicited), with the
 * write's length, imm and sender; it never meets an RNR, and a receive posted
 * meanwhile is left for a later send. efasim offers it only with
 * EFASIM_UNSOLICITED_WRITE_RECV=1 and EFASIM_RDMA_WRITE=1; without them the
 * capability is absent and the QP flag and the CQ's wc flag are refused
 * (EOPNOTSUPP), as rdma-core refuses them where the device lacks them. A QP
 * created without the flag on the same device consumes receives and answers
 * RNR as before.
 *
 * The system's headers are rdma-core 44's, which know none of it: the
 * constants, the QP attributes' flags and efadv_cq's wc_is_unsolicited are
 * spelt out here, with inlens that 44's successors all accept. On the
 * kernel front end under an rdma-core older than 52 (Debian's 44) the tests
 * are skipped.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "efarm_errno.h"
#include "efasim_common.h"

/* ---- rdma-core 52's additions to efadv.h, as far as these tests use them -------- */

#define EFADV52_CAPS_UNSOLICITED_WRITE_RECV     (1u << 4)
#define EFADV52_QP_FLAGS_UNSOLICITED_WRITE_RECV (1u << 0)
#define EFADV52_WC_EX_WITH_IS_UNSOLICITED       (1ull << 1)

/* struct efadv_qp_init_attr up to its service level: 16 bytes in every release. */
struct efadv52_qp_init_attr {
    uint64_t comp_mask;
    uint32_t driver_qp_type;
    uint16_t flags;
    uint8_t sl;
    uint8_t reserved;
};

/* 44's struct efadv_cq, then what release 52 added to it. */
struct efadv52_cq {
    struct efadv_cq base;
    bool (*wc_is_unsolicited)(struct efadv_cq *cq);
};

_Static_assert(sizeof(struct efadv52_qp_init_attr) == 16, "");
_Static_assert(offsetof(struct efadv52_qp_init_attr, flags) == 12, "");
/* 44's struct efadv_cq_init_attr is all that releases before 56 take. */
_Static_assert(sizeof(struct efadv_cq_init_attr) == 16, "");
_Static_assert(offsetof(struct efadv52_cq, wc_is_unsolicited) == 16, "");

#define UNSOL_BUF_LEN (2u << 20)
#define UNSOL_GUARD_C 0xee

/* The writes' lengths: one byte to beyond 64 KiB (the CQE's length_hi) and many chunks. */
static const size_t g_unsol_sizes[] = {1, 4096, 70000, 1u << 20};

/* On the kernel front end, rdma-core's EFA provider knows the feature from release 52. */
static void unsol_require_provider(void)
{
    unsigned rel;

    if (!efasim_kernel_front_end())
        return;
    rel = efasim_rdma_core_release();
    if (rel < 52)
        efarm_test_skip("rdma-core %u's EFA provider has no unsolicited write receive (from 52)",
                        rel);
}

static struct ibv_cq_ex *unsol_cq_create(struct efasim_dev *dev, uint64_t efa_wc_flags)
{
    struct ibv_cq_init_attr_ex attr = {
        .cqe = 1024,
        .wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
                    IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID,
    };
    struct efadv_cq_init_attr efa = {.wc_flags = efa_wc_flags};

    errno = 0;
    return efadv_create_cq(dev->ctx, &attr, &efa, sizeof(efa));
}

/* An SRD QP with efadv flags, left in RESET: NULL and errno on failure. */
static struct ibv_qp *unsol_qp_create(struct efasim_dev *dev, struct ibv_cq_ex *scq,
                                      struct ibv_cq_ex *rcq, uint16_t flags)
{
    struct ibv_qp_init_attr_ex attr = {
        .qp_type = IBV_QPT_DRIVER,
        .send_cq = ibv_cq_ex_to_cq(scq),
        .recv_cq = ibv_cq_ex_to_cq(rcq),
        .cap =
            {
                .max_send_wr = 256,
                .max_recv_wr = 256,
                .max_send_sge = dev->efa.max_sq_sge,
                .max_recv_sge = 1,
                .max_inline_data = dev->efa.inline_buf_size,
            },
        .pd = dev->pd,
        .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
        .send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM,
    };
    struct efadv52_qp_init_attr efa = {.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD, .flags = flags};

    errno = 0;
    return efadv_create_qp_ex(dev->ctx, &attr, (struct efadv_qp_init_attr *)&efa, sizeof(efa));
}

/*
 * The unsolicited QP as an efasim_qp in RTS (closed by efasim_qp_close): its
 * receive CQ made with EFADV_WC_EX_WITH_IS_UNSOLICITED.
 */
static void unsol_qp_open(struct efasim_dev *dev, struct efasim_qp *qp)
{
    memset(qp, 0, sizeof(*qp));
    qp->dev = dev;
    qp->qkey = EFASIM_TEST_QKEY;
    qp->send_cq = efasim_cq_create(dev, 1024);
    qp->recv_cq = unsol_cq_create(dev, EFADV_WC_EX_WITH_SGID | EFADV52_WC_EX_WITH_IS_UNSOLICITED);
    if (!qp->recv_cq)
        efarm_test_fail(__FILE__, __LINE__, "efadv_create_cq(IS_UNSOLICITED): %s", strerror(errno));
    qp->qp =
        unsol_qp_create(dev, qp->send_cq, qp->recv_cq, EFADV52_QP_FLAGS_UNSOLICITED_WRITE_RECV);
    if (!qp->qp)
        efarm_test_fail(__FILE__, __LINE__, "efadv_create_qp_ex(UNSOLICITED_WRITE_RECV): %s",
                        strerror(errno));
    qp->qpx = ibv_qp_to_qp_ex(qp->qp);
    EXPECT_TRUE(qp->qpx != NULL);
    qp->qpn = qp->qp->qp_num;
    efasim_qp_to_rts(qp->qp, qp->qkey, EFASIM_RNR_RETRY_INFINITE);
}

/* One receive completion, read inside its poll section with the unsolicited mark. */
struct unsol_wc {
    struct efasim_wc wc;
    bool unsolicited;
};

static void unsol_wait_wc(struct ibv_cq_ex *cq, struct unsol_wc *u, const char *what)
{
    struct efadv52_cq *dv = (struct efadv52_cq *)efadv_cq_from_ibv_cq_ex(cq);
    struct ibv_poll_cq_attr attr = {.comp_mask = 0};
    double deadline = efasim_now() + EFASIM_WAIT_S;
    int rc;

    EXPECT_TRUE(dv != NULL && dv->wc_is_unsolicited != NULL);
    while ((rc = ibv_start_poll(cq, &attr)) == ENOENT) {
        if (efasim_now() > deadline)
            efarm_test_fail(__FILE__, __LINE__, "no completion for %s within %.1f s", what,
                            EFASIM_WAIT_S);
        efasim_sleep_ms(0);
    }
    EXPECT_EQ(rc, 0);
    memset(u, 0, sizeof(*u));
    u->wc.wr_id = cq->wr_id;
    u->wc.status = cq->status;
    u->wc.vendor_err = ibv_wc_read_vendor_err(cq);
    if (u->wc.status == IBV_WC_SUCCESS) {
        u->wc.opcode = ibv_wc_read_opcode(cq);
        u->wc.wc_flags = ibv_wc_read_wc_flags(cq);
        u->wc.byte_len = ibv_wc_read_byte_len(cq);
        if (u->wc.wc_flags & IBV_WC_WITH_IMM)
            u->wc.imm = be32toh(ibv_wc_read_imm_data(cq));
        u->wc.qp_num = ibv_wc_read_qp_num(cq);
        u->wc.src_qp = ibv_wc_read_src_qp(cq);
    }
    u->unsolicited = dv->wc_is_unsolicited(&dv->base);
    ibv_end_poll(cq);
}

/*
 * Without the device's capability: none reported, the QP flag and the CQ's wc
 * flag EOPNOTSUPP. knob_value is EFASIM_UNSOLICITED_WRITE_RECV's (NULL: unset),
 * rdma_write EFASIM_RDMA_WRITE's.
 */
static void unsol_expect_refused(const char *knob_value, const char *rdma_write)
{
    struct efasim_dev dev;
    struct ibv_cq_ex *cq;

    if (knob_value)
        efasim_setenv("EFASIM_UNSOLICITED_WRITE_RECV", knob_value);
    efasim_setenv("EFASIM_RDMA_WRITE", rdma_write);
    unsol_require_provider();
    efasim_dev_open(0, &dev);
    EXPECT_EQ(dev.efa.device_caps & EFADV52_CAPS_UNSOLICITED_WRITE_RECV, 0);

    cq = efasim_cq_create(&dev, 64);
    EXPECT_TRUE(unsol_qp_create(&dev, cq, cq, EFADV52_QP_FLAGS_UNSOLICITED_WRITE_RECV) == NULL);
    EXPECT_RET(errno, EOPNOTSUPP);
    EXPECT_TRUE(unsol_cq_create(&dev, EFADV52_WC_EX_WITH_IS_UNSOLICITED) == NULL);
    EXPECT_RET(errno, EOPNOTSUPP);
    /* Nothing else was wrong with them. */
    {
        struct ibv_qp *qp = unsol_qp_create(&dev, cq, cq, 0);
        struct ibv_cq_ex *cq2 = unsol_cq_create(&dev, EFADV_WC_EX_WITH_SGID);
        struct efadv52_cq *dv;

        EXPECT_TRUE(qp != NULL);
        EXPECT_TRUE(cq2 != NULL);
        dv = (struct efadv52_cq *)efadv_cq_from_ibv_cq_ex(cq2);
        EXPECT_TRUE(dv->wc_is_unsolicited == NULL);
        EXPECT_EQ(ibv_destroy_qp(qp), 0);
        EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq2)), 0);
    }
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
    efasim_dev_close(&dev);
}

/* The default: RDMA write alone does not bring unsolicited write receive. */
EFARM_TEST(efasim_unsolicited_off_by_default)
{
    unsol_expect_refused(NULL, "1");
}

EFARM_TEST(efasim_unsolicited_knob_off)
{
    unsol_expect_refused("0", "1");
}

/* The knob without RDMA write: nothing to receive unsolicited. */
EFARM_TEST(efasim_unsolicited_needs_rdma_write)
{
    unsol_expect_refused("1", "0");
}

/*
 * Requester on efasim_1 (RDMA write, RNR retry 0: an RNR fails its WR at
 * once), and on efasim_0 the unsolicited QP (u) and one created without the
 * flag (n), with the knob on.
 */
struct unsol_fixture {
    struct efasim_dev dev[2];
    struct efasim_qp req, u, n;
    struct efasim_dest to_u, to_n;
    struct efasim_buf local, remote, rbuf;
};

static void unsol_open(struct unsol_fixture *f, const char *fastpath)
{
    struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;

    efasim_setenv("EFASIM_NDEV", "2");
    efasim_setenv("EFASIM_RDMA_WRITE", "1");
    efasim_setenv("EFASIM_UNSOLICITED_WRITE_RECV", "1");
    efasim_setenv("EFASIM_FASTPATH", fastpath);
    unsol_require_provider();
    efasim_require_rdma_write();
    efasim_dev_open(0, &f->dev[0]);
    efasim_dev_open(1, &f->dev[1]);
    EXPECT_TRUE(f->dev[0].efa.device_caps & EFADV52_CAPS_UNSOLICITED_WRITE_RECV);
    EXPECT_TRUE(f->dev[1].efa.device_caps & EFADV52_CAPS_UNSOLICITED_WRITE_RECV);
    EXPECT_TRUE(f->dev[1].efa.device_caps & EFASIM_CAPS_RDMA_WRITE);
    opts.send_ops_flags |= EFASIM_SEND_OPS_RDMA_WRITE;
    opts.rnr_retry = 0;
    efasim_qp_open(&f->dev[1], &opts, &f->req);
    unsol_qp_open(&f->dev[0], &f->u);
    efasim_qp_open(&f->dev[0], &opts, &f->n);
    efasim_dest_to(&f->dev[1], &f->u, &f->to_u);
    efasim_dest_to(&f->dev[1], &f->n, &f->to_n);
    efasim_buf_alloc(&f->dev[1], UNSOL_BUF_LEN, IBV_ACCESS_LOCAL_WRITE, &f->local);
    efasim_buf_alloc(&f->dev[0], UNSOL_BUF_LEN, EFASIM_ACCESS_ALL, &f->remote);
    efasim_buf_alloc(&f->dev[0], 8192, IBV_ACCESS_LOCAL_WRITE, &f->rbuf);
    efasim_fill(f->local.addr, f->local.len, 0x5011);
}

static void unsol_close(struct unsol_fixture *f)
{
    efasim_buf_free(&f->local);
    efasim_buf_free(&f->remote);
    efasim_buf_free(&f->rbuf);
    EXPECT_EQ(ibv_destroy_ah(f->to_u.ah), 0);
    EXPECT_EQ(ibv_destroy_ah(f->to_n.ah), 0);
    efasim_qp_close(&f->req);
    efasim_qp_close(&f->u);
    efasim_qp_close(&f->n);
    efasim_dev_close(&f->dev[0]);
    efasim_dev_close(&f->dev[1]);
}

/* A write with imm of len bytes to u at offset 64 of remote: both sides' completions, the data. */
static void unsol_write_imm(struct unsol_fixture *f, uint64_t wr_id, size_t len, uint32_t imm)
{
    struct unsol_wc u;
    struct efasim_wc wc;

    efarm_test_context("unsolicited write with imm of %zu bytes", len);
    memset(f->remote.addr, UNSOL_GUARD_C, f->remote.len);
    EXPECT_EQ(efasim_rdma_write_imm(&f->req, &f->to_u, wr_id, &f->local, 0, len, f->remote.mr->rkey,
                                    (uintptr_t)(f->remote.addr + 64), imm),
              0);
    efasim_wait_wc_for(f->req.send_cq, &wc, 30, "the write with imm");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.wr_id, wr_id);
    EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
    unsol_wait_wc(f->u.recv_cq, &u, "the target's unsolicited completion");
    EXPECT_WC_STATUS(&u.wc, IBV_WC_SUCCESS);
    EXPECT_TRUE(u.unsolicited);
    EXPECT_EQ(u.wc.wr_id, 0);
    EXPECT_EQ(u.wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    EXPECT_EQ(u.wc.wc_flags & IBV_WC_WITH_IMM, IBV_WC_WITH_IMM);
    EXPECT_EQ(u.wc.imm, imm);
    EXPECT_EQ(u.wc.byte_len, len);
    EXPECT_EQ(u.wc.qp_num, f->u.qpn);
    EXPECT_EQ(u.wc.src_qp, f->req.qpn);
    EXPECT_MEM_EQ(f->remote.addr + 64, f->local.addr, len);
    EXPECT_EQ(efasim_check_byte(f->remote.addr, 64, UNSOL_GUARD_C), 64);
    EXPECT_EQ(efasim_check_byte(f->remote.addr + 64 + len, f->remote.len - 64 - len, UNSOL_GUARD_C),
              f->remote.len - 64 - len);
}

/*
 * The unsolicited QP takes writes with immediate with no receive posted (an
 * RNR would fail the requester's WR: its RNR retry is 0), then with one
 * posted, which they leave alone: its buffer untouched, and a later send
 * lands in it. A write without immediate completes nothing at the target.
 */
static void unsol_writes(const char *fastpath)
{
    struct unsol_fixture f;
    struct unsol_wc u;
    struct efasim_wc wc;

    unsol_open(&f, fastpath);
    for (unsigned i = 0; i < sizeof(g_unsol_sizes) / sizeof(g_unsol_sizes[0]); i++)
        unsol_write_imm(&f, 100 + i, g_unsol_sizes[i], 0xa0b0c000u + i);

    memset(f.rbuf.addr, UNSOL_GUARD_C, f.rbuf.len);
    efasim_post_recv(&f.u, 0x77, &f.rbuf, 0, f.rbuf.len);
    for (unsigned i = 0; i < sizeof(g_unsol_sizes) / sizeof(g_unsol_sizes[0]); i++)
        unsol_write_imm(&f, 200 + i, g_unsol_sizes[i], 0xc0d0e000u + i);
    efarm_test_context("a receive posted while the writes came");
    EXPECT_EQ(efasim_check_byte(f.rbuf.addr, f.rbuf.len, UNSOL_GUARD_C), f.rbuf.len);

    EXPECT_EQ(efasim_rdma_write(&f.req, &f.to_u, 300, &f.local, 0, 4096, f.remote.mr->rkey,
                                (uintptr_t)f.remote.addr),
              0);
    efasim_wait_wc(f.req.send_cq, &wc, "the write without imm");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    efasim_expect_no_wc(f.u.recv_cq, 50, "the unsolicited QP after a write without imm");

    EXPECT_EQ(efasim_send_imm(&f.req, &f.to_u, 301, &f.local, 0, 1000, 0x5e5e), 0);
    efasim_wait_wc(f.req.send_cq, &wc, "the send");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    unsol_wait_wc(f.u.recv_cq, &u, "the send's receive");
    EXPECT_WC_STATUS(&u.wc, IBV_WC_SUCCESS);
    EXPECT_TRUE(!u.unsolicited);
    EXPECT_EQ(u.wc.wr_id, 0x77);
    EXPECT_EQ(u.wc.opcode, IBV_WC_RECV);
    EXPECT_EQ(u.wc.byte_len, 1000);
    EXPECT_EQ(u.wc.imm, 0x5e5e);
    EXPECT_MEM_EQ(f.rbuf.addr, f.local.addr, 1000);
    efasim_expect_no_wc(f.u.recv_cq, 20, "the unsolicited QP after the send");
    unsol_close(&f);
}

EFARM_TEST_TIMEOUT(efasim_unsolicited_write_imm, 60)
{
    unsol_writes("1");
}

/* The same by datagrams (EFASIM_RDMA_CHUNK bytes each), not by the direct copy. */
EFARM_TEST_TIMEOUT(efasim_unsolicited_write_imm_datagrams, 60)
{
    unsol_writes("0");
}

/*
 * On the same device, a QP created without the flag: a write with immediate
 * consumes its posted receive; with none posted the requester gets RNR (its
 * retry count is 0) and nothing completes at the target.
 */
EFARM_TEST(efasim_unsolicited_other_qp_unchanged)
{
    struct unsol_fixture f;
    struct efasim_wc wc;

    unsol_open(&f, "1");
    efasim_post_recv(&f.n, 0x99, &f.rbuf, 0, f.rbuf.len);
    EXPECT_EQ(efasim_rdma_write_imm(&f.req, &f.to_n, 400, &f.local, 0, 70000, f.remote.mr->rkey,
                                    (uintptr_t)f.remote.addr, 0x1111),
              0);
    efasim_wait_wc(f.req.send_cq, &wc, "the write with imm to the plain QP");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    efasim_wait_wc(f.n.recv_cq, &wc, "the plain QP's receive");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.wr_id, 0x99);
    EXPECT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    EXPECT_EQ(wc.imm, 0x1111);
    EXPECT_EQ(wc.byte_len, 70000);
    EXPECT_MEM_EQ(f.remote.addr, f.local.addr, 70000);

    EXPECT_EQ(efasim_rdma_write_imm(&f.req, &f.to_n, 401, &f.local, 0, 4096, f.remote.mr->rkey,
                                    (uintptr_t)f.remote.addr, 0x2222),
              0);
    efasim_wait_wc(f.req.send_cq, &wc, "the write with imm to the plain QP, no receive");
    EXPECT_WC_STATUS(&wc, IBV_WC_RNR_RETRY_EXC_ERR);
    EXPECT_EQ(wc.vendor_err, EFASIM_VENDOR_RNR);
    EXPECT_EQ(wc.wr_id, 401);
    efasim_expect_no_wc(f.n.recv_cq, 20, "the plain QP without a receive");
    efasim_expect_no_wc(f.u.recv_cq, 20, "the unsolicited QP, not written to");
    unsol_close(&f);
}
