/*
 * efasim SRD QPs against rdma-core 44's EFA provider (providers/efa/verbs.c)
 * and EFA's kernel driver: creation checks and the capabilities handed back,
 * sq_sig_all, unsignaled work requests refused with EINVAL on both posting
 * paths (the ibv_wr_* session rolled back whole), what the legacy
 * ibv_post_send accepts, and the ibv_wr_* operations that exist.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "efasim_common.h"

/* An SRD QP on dev with its own CQs, in RTS; caller's attributes, sq_sig_all as given. */
struct raw_qp {
    struct ibv_cq_ex *scq, *rcq;
    struct ibv_qp *qp;
    struct ibv_qp_ex *qpx;
    struct ibv_qp_cap cap; /* as creation returned it */
};

static struct ibv_qp *raw_create(struct efasim_dev *dev, struct raw_qp *r,
                                 const struct ibv_qp_cap *cap, int sq_sig_all, uint64_t ops,
                                 uint32_t comp_mask, struct efadv_qp_init_attr *efa)
{
    struct efadv_qp_init_attr srd = {.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD};
    struct ibv_qp_init_attr_ex attr = {
        .qp_type = IBV_QPT_DRIVER,
        .send_cq = ibv_cq_ex_to_cq(r->scq),
        .recv_cq = ibv_cq_ex_to_cq(r->rcq),
        .cap = *cap,
        .sq_sig_all = sq_sig_all,
        .pd = dev->pd,
        .comp_mask = comp_mask,
        .send_ops_flags = ops,
    };

    r->qp = efadv_create_qp_ex(dev->ctx, &attr, efa ? efa : &srd, sizeof(srd));
    r->cap = attr.cap;
    return r->qp;
}

static void raw_open(struct efasim_dev *dev, struct raw_qp *r, const struct ibv_qp_cap *cap,
                     int sq_sig_all, uint64_t ops)
{
    memset(r, 0, sizeof(*r));
    r->scq = efasim_cq_create(dev, 256);
    r->rcq = efasim_cq_create(dev, 256);
    if (!raw_create(dev, r, cap, sq_sig_all, ops,
                    IBV_QP_INIT_ATTR_PD | (ops ? IBV_QP_INIT_ATTR_SEND_OPS_FLAGS : 0), NULL))
        efarm_test_fail(__FILE__, __LINE__, "efadv_create_qp_ex: %s", strerror(errno));
    r->qpx = ibv_qp_to_qp_ex(r->qp);
    efasim_qp_to_rts(r->qp, EFASIM_TEST_QKEY, EFASIM_RNR_RETRY_INFINITE);
}

static void raw_close(struct raw_qp *r)
{
    EXPECT_EQ(ibv_destroy_qp(r->qp), 0);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(r->scq)), 0);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(r->rcq)), 0);
}

static const struct ibv_qp_cap g_cap = {.max_send_wr = 64,
                                        .max_recv_wr = 64,
                                        .max_send_sge = 1,
                                        .max_recv_sge = 1,
                                        .max_inline_data = 32};

/* A legacy send WR of len bytes of buf to dest, with the given flags. */
static struct ibv_send_wr legacy_wr(struct ibv_sge *sge, const struct efasim_buf *buf, size_t len,
                                    const struct efasim_dest *to, uint64_t wr_id, unsigned flags)
{
    *sge = (struct ibv_sge){
        .addr = (uintptr_t)buf->addr, .length = (uint32_t)len, .lkey = buf->mr->lkey};
    return (struct ibv_send_wr){
        .wr_id = wr_id,
        .sg_list = sge,
        .num_sge = 1,
        .opcode = IBV_WR_SEND,
        .send_flags = flags,
        .wr.ud = {.ah = to->ah, .remote_qpn = to->qpn, .remote_qkey = to->qkey}};
}

EFARM_TEST(efasim_qp_unsignaled_refused)
{
    struct raw_qp tx;
    struct efasim_pair p;
    struct ibv_send_wr wr, *bad = NULL;
    struct ibv_sge sge;
    struct efasim_wc wc;

    efasim_pair_open(&p, NULL, NULL);
    raw_open(&p.dev, &tx, &g_cap, 0, IBV_QP_EX_WITH_SEND);
    efasim_post_recv(&p.rx, 1, &p.rbuf, 0, p.dev.mtu);

    /* Legacy: EINVAL, *bad is the WR, nothing is sent. */
    wr = legacy_wr(&sge, &p.sbuf, 10, &p.to_rx, 7, 0);
    EXPECT_EQ(ibv_post_send(tx.qp, &wr, &bad), EINVAL);
    EXPECT_TRUE(bad == &wr);

    /* ibv_wr_*: the session fails with EINVAL and is rolled back whole, the signaled WR
     * before the unsignaled one included. */
    ibv_wr_start(tx.qpx);
    tx.qpx->wr_id = 8;
    tx.qpx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_send(tx.qpx);
    ibv_wr_set_ud_addr(tx.qpx, p.to_rx.ah, p.to_rx.qpn, p.to_rx.qkey);
    ibv_wr_set_sge(tx.qpx, p.sbuf.mr->lkey, (uintptr_t)p.sbuf.addr, 10);
    tx.qpx->wr_id = 9;
    tx.qpx->wr_flags = 0;
    ibv_wr_send(tx.qpx);
    ibv_wr_set_ud_addr(tx.qpx, p.to_rx.ah, p.to_rx.qpn, p.to_rx.qkey);
    ibv_wr_set_sge(tx.qpx, p.sbuf.mr->lkey, (uintptr_t)p.sbuf.addr, 10);
    EXPECT_EQ(ibv_wr_complete(tx.qpx), EINVAL);

    efasim_expect_no_wc(tx.scq, 100, "a refused WR");
    efasim_expect_no_wc(p.rx.recv_cq, 100, "a receive of a refused WR");

    /* The QP is fine afterwards. */
    wr = legacy_wr(&sge, &p.sbuf, 10, &p.to_rx, 10, IBV_SEND_SIGNALED);
    EXPECT_EQ(ibv_post_send(tx.qp, &wr, &bad), 0);
    efasim_wait_wc(tx.scq, &wc, "a signaled send");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.wr_id, 10);
    efasim_wait_wc(p.rx.recv_cq, &wc, "its receive");
    raw_close(&tx);
    efasim_pair_close(&p);
}

EFARM_TEST(efasim_qp_sq_sig_all)
{
    struct raw_qp tx;
    struct efasim_pair p;
    struct ibv_send_wr wr, *bad = NULL;
    struct ibv_sge sge;
    struct efasim_wc wc;

    efasim_pair_open(&p, NULL, NULL);
    raw_open(&p.dev, &tx, &g_cap, 1, IBV_QP_EX_WITH_SEND);
    for (int i = 0; i < 4; i++)
        efasim_post_recv(&p.rx, (uint64_t)i, &p.rbuf, 0, p.dev.mtu);

    /* With sq_sig_all every WR completes, flagged or not (libfabric sets it). */
    wr = legacy_wr(&sge, &p.sbuf, 10, &p.to_rx, 1, 0);
    EXPECT_EQ(ibv_post_send(tx.qp, &wr, &bad), 0);
    ibv_wr_start(tx.qpx);
    tx.qpx->wr_id = 2;
    tx.qpx->wr_flags = 0;
    ibv_wr_send(tx.qpx);
    ibv_wr_set_ud_addr(tx.qpx, p.to_rx.ah, p.to_rx.qpn, p.to_rx.qkey);
    ibv_wr_set_sge(tx.qpx, p.sbuf.mr->lkey, (uintptr_t)p.sbuf.addr, 10);
    EXPECT_EQ(ibv_wr_complete(tx.qpx), 0);
    for (uint64_t want = 1; want <= 2; want++) {
        efasim_wait_wc(tx.scq, &wc, "a send completion under sq_sig_all");
        EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
        EXPECT_EQ(wc.wr_id, want);
    }
    for (int i = 0; i < 2; i++)
        efasim_wait_wc(p.rx.recv_cq, &wc, "a receive");
    raw_close(&tx);
    efasim_pair_close(&p);
}

EFARM_TEST(efasim_qp_legacy_post_send_as_efa)
{
    struct raw_qp tx;
    struct efasim_pair p;
    struct ibv_send_wr wr[2], *bad = NULL;
    struct ibv_sge sge[2];
    struct efasim_wc wc;

    efasim_pair_open(&p, NULL, NULL);
    raw_open(&p.dev, &tx, &g_cap, 0, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_READ);
    efasim_post_recv(&p.rx, 1, &p.rbuf, 0, p.dev.mtu);

    /* RDMA through the legacy call: EINVAL (EFA takes only sends there). */
    wr[0] = legacy_wr(&sge[0], &p.sbuf, 10, &p.to_rx, 1, IBV_SEND_SIGNALED);
    wr[0].opcode = IBV_WR_RDMA_READ;
    EXPECT_EQ(ibv_post_send(tx.qp, &wr[0], &bad), EINVAL);
    /* A flag other than SIGNALED and INLINE: EINVAL. */
    wr[0] = legacy_wr(&sge[0], &p.sbuf, 10, &p.to_rx, 1, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED);
    EXPECT_EQ(ibv_post_send(tx.qp, &wr[0], &bad), EINVAL);
    /* Inline beyond this QP's max_inline_data: EINVAL. */
    wr[0] = legacy_wr(&sge[0], &p.sbuf, 33, &p.to_rx, 1, IBV_SEND_SIGNALED | IBV_SEND_INLINE);
    EXPECT_EQ(ibv_post_send(tx.qp, &wr[0], &bad), EINVAL);

    /* A chain stops at its first bad WR, and the WRs before it are posted. */
    wr[0] = legacy_wr(&sge[0], &p.sbuf, 10, &p.to_rx, 11, IBV_SEND_SIGNALED);
    wr[1] = legacy_wr(&sge[1], &p.sbuf, 10, &p.to_rx, 12, 0);
    wr[0].next = &wr[1];
    EXPECT_EQ(ibv_post_send(tx.qp, &wr[0], &bad), EINVAL);
    EXPECT_TRUE(bad == &wr[1]);
    efasim_wait_wc(tx.scq, &wc, "the good WR of the chain");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.wr_id, 11);
    efasim_expect_no_wc(tx.scq, 50, "the refused WR of the chain");
    efasim_wait_wc(p.rx.recv_cq, &wc, "the receive");
    raw_close(&tx);
    efasim_pair_close(&p);
}

EFARM_TEST(efasim_qp_creation_as_efa)
{
    struct ibv_qp_cap cap = {
        .max_send_wr = 100, .max_recv_wr = 1000, .max_send_sge = 1, .max_inline_data = 16};
    struct efadv_qp_init_attr efa = {.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD};
    struct efasim_dev dev;
    struct raw_qp r;
    uint32_t rq_desc = 1;
    char big[64];

    efasim_dev_open(0, &dev);
    memset(&r, 0, sizeof(r));
    r.scq = efasim_cq_create(&dev, 64);
    r.rcq = efasim_cq_create(&dev, 64);

    /* Capabilities as rdma-core's efa_setup_qp hands them back. */
    cap.max_recv_sge = dev.efa.max_rq_sge;
    while (rq_desc < cap.max_recv_sge * cap.max_recv_wr)
        rq_desc *= 2;
    EXPECT_TRUE(raw_create(&dev, &r, &cap, 0, IBV_QP_EX_WITH_SEND,
                           IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, NULL) != NULL);
    EXPECT_EQ(r.cap.max_send_wr, 128);                        /* rounded up to a power of two */
    EXPECT_EQ(r.cap.max_recv_wr, rq_desc / cap.max_recv_sge); /* sge * wr descriptors, 2^n */
    EXPECT_EQ(r.cap.max_inline_data, 16);                     /* as asked: the QP's inline limit */
    r.qpx = ibv_qp_to_qp_ex(r.qp);
    EXPECT_TRUE(r.qpx != NULL);
    /* Only the operations asked for exist. */
    EXPECT_TRUE(r.qpx->wr_send != NULL);
    EXPECT_TRUE(r.qpx->wr_send_imm == NULL && r.qpx->wr_rdma_read == NULL &&
                r.qpx->wr_rdma_write == NULL && r.qpx->wr_atomic_fetch_add == NULL);
    /* Inline beyond the QP's 16 bytes: EINVAL from the session. */
    efasim_qp_to_rts(r.qp, EFASIM_TEST_QKEY, 0);
    memset(big, 1, sizeof(big));
    ibv_wr_start(r.qpx);
    r.qpx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_send(r.qpx);
    ibv_wr_set_inline_data(r.qpx, big, 17);
    EXPECT_EQ(ibv_wr_complete(r.qpx), EINVAL);
    EXPECT_EQ(ibv_destroy_qp(r.qp), 0);

    /* Without send_ops_flags there is no ibv_qp_ex. */
    EXPECT_TRUE(raw_create(&dev, &r, &g_cap, 0, 0, IBV_QP_INIT_ATTR_PD, NULL) != NULL);
    EXPECT_TRUE(ibv_qp_to_qp_ex(r.qp) == NULL);
    EXPECT_EQ(ibv_destroy_qp(r.qp), 0);

    /* Errors, with rdma-core 44's errno. */
    errno = 0;
    EXPECT_TRUE(raw_create(&dev, &r, &g_cap, 0, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
                           IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, NULL) == NULL);
    EXPECT_EQ(errno, EOPNOTSUPP);
    errno = 0;
    EXPECT_TRUE(raw_create(&dev, &r, &g_cap, 0, 0,
                           IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS, NULL) == NULL);
    EXPECT_EQ(errno, EOPNOTSUPP);
    errno = 0;
    EXPECT_TRUE(raw_create(&dev, &r, &g_cap, 0, 0, 0, NULL) == NULL); /* no PD */
    EXPECT_EQ(errno, EINVAL);
    efa.comp_mask = 1;
    errno = 0;
    EXPECT_TRUE(raw_create(&dev, &r, &g_cap, 0, 0, IBV_QP_INIT_ATTR_PD, &efa) == NULL);
    EXPECT_EQ(errno, EINVAL);
    efa.comp_mask = 0;
    efa.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD + 1;
    errno = 0;
    EXPECT_TRUE(raw_create(&dev, &r, &g_cap, 0, 0, IBV_QP_INIT_ATTR_PD, &efa) == NULL);
    EXPECT_EQ(errno, EOPNOTSUPP);
    cap = g_cap;
    cap.max_inline_data = dev.efa.inline_buf_size + 1;
    errno = 0;
    EXPECT_TRUE(raw_create(&dev, &r, &cap, 0, 0, IBV_QP_INIT_ATTR_PD, NULL) == NULL);
    EXPECT_EQ(errno, EINVAL);
    cap = g_cap; /* more receive descriptors (sge * wr) than the device's max_rq_wr */
    cap.max_recv_sge = dev.efa.max_rq_sge;
    cap.max_recv_wr = dev.efa.max_rq_wr / dev.efa.max_rq_sge + 1;
    errno = 0;
    EXPECT_TRUE(raw_create(&dev, &r, &cap, 0, 0, IBV_QP_INIT_ATTR_PD, NULL) == NULL);
    EXPECT_EQ(errno, EINVAL);
    cap = g_cap;
    cap.max_send_wr = dev.efa.max_sq_wr + 1;
    errno = 0;
    EXPECT_TRUE(raw_create(&dev, &r, &cap, 0, 0, IBV_QP_INIT_ATTR_PD, NULL) == NULL);
    EXPECT_EQ(errno, EINVAL);

    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(r.scq)), 0);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(r.rcq)), 0);
    efasim_dev_close(&dev);
}

/* An RDMA read moves one local buffer (max_sge_rd is 1): two SGEs fail the session. */
EFARM_TEST(efasim_qp_rdma_read_one_sge)
{
    struct efasim_pair p;
    struct ibv_sge sge[2];

    efasim_pair_open(&p, NULL, NULL);
    for (int i = 0; i < 2; i++)
        sge[i] = (struct ibv_sge){.addr = (uintptr_t)p.rbuf.addr + (uint64_t)i * 64,
                                  .length = 64,
                                  .lkey = p.rbuf.mr->lkey};
    ibv_wr_start(p.tx.qpx);
    p.tx.qpx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_rdma_read(p.tx.qpx, p.sbuf.mr->rkey, (uintptr_t)p.sbuf.addr);
    ibv_wr_set_ud_addr(p.tx.qpx, p.to_rx.ah, p.to_rx.qpn, p.to_rx.qkey);
    ibv_wr_set_sge_list(p.tx.qpx, 2, sge);
    EXPECT_EQ(ibv_wr_complete(p.tx.qpx), EINVAL);
    efasim_pair_close(&p);
}

/*
 * ibv_modify_qp as EFA's driver takes it: the UD transition table, RNR retry
 * only from RTR to RTS (srd_qp_state_table).
 */
EFARM_TEST(efasim_qp_modify_as_efa)
{
    struct efasim_dev dev;
    struct ibv_qp_attr a;
    struct raw_qp r;

    efasim_dev_open(0, &dev);
    memset(&r, 0, sizeof(r));
    r.scq = efasim_cq_create(&dev, 64);
    r.rcq = efasim_cq_create(&dev, 64);
    EXPECT_TRUE(raw_create(&dev, &r, &g_cap, 0, IBV_QP_EX_WITH_SEND,
                           IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, NULL) != NULL);

    /* RESET goes to INIT (or stays), not to ERR. */
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_ERR;
    EXPECT_EQ(ibv_modify_qp(r.qp, &a, IBV_QP_STATE), EINVAL);
    /* RESET -> INIT needs PKEY_INDEX, PORT and QKEY; port 1, pkey index 0 only. */
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qkey = 0x1234;
    EXPECT_EQ(ibv_modify_qp(r.qp, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_QKEY), EINVAL);
    a.port_num = 2;
    EXPECT_EQ(ibv_modify_qp(r.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY),
              EINVAL);
    a.port_num = 1;
    a.pkey_index = 1;
    EXPECT_EQ(ibv_modify_qp(r.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY),
              EINVAL);
    a.pkey_index = 0;
    /* An attribute EFA does not take at all. */
    a.timeout = 14;
    EXPECT_EQ(ibv_modify_qp(r.qp, &a,
                            IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY |
                                IBV_QP_TIMEOUT),
              EOPNOTSUPP);
    EXPECT_EQ(r.qp->state, IBV_QPS_RESET);
    EXPECT_EQ(ibv_modify_qp(r.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY),
              0);

    /* INIT -> RTS skips RTR; RNR retry belongs to the move to RTS. */
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    EXPECT_EQ(ibv_modify_qp(r.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), EINVAL);
    a.qp_state = IBV_QPS_RTR;
    a.rnr_retry = 3;
    EXPECT_EQ(ibv_modify_qp(r.qp, &a, IBV_QP_STATE | IBV_QP_RNR_RETRY), EINVAL);
    EXPECT_EQ(ibv_modify_qp(r.qp, &a, IBV_QP_STATE), 0);
    /* RTR -> RTS needs SQ_PSN. */
    a.qp_state = IBV_QPS_RTS;
    EXPECT_EQ(ibv_modify_qp(r.qp, &a, IBV_QP_STATE | IBV_QP_RNR_RETRY), EINVAL);
    EXPECT_EQ(r.qp->state, IBV_QPS_RTR);
    a.sq_psn = 0x45;
    EXPECT_EQ(ibv_modify_qp(r.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RNR_RETRY), 0);
    EXPECT_EQ(r.qp->state, IBV_QPS_RTS);
    /* The device keeps what it was given: a query reports the SQ PSN and RNR retry. */
    {
        struct ibv_qp_init_attr init;
        struct ibv_qp_attr q;

        memset(&q, 0, sizeof(q));
        EXPECT_EQ(ibv_query_qp(r.qp, &q, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RNR_RETRY, &init),
                  0);
        EXPECT_EQ(q.qp_state, IBV_QPS_RTS);
        EXPECT_EQ(q.sq_psn, 0x45);
        EXPECT_EQ(q.rnr_retry, 3);
    }
    /* In RTS the Q-Key may change, RNR retry no more; the transition to ERR takes nothing. */
    a.qkey = 0x5678;
    EXPECT_EQ(ibv_modify_qp(r.qp, &a, IBV_QP_QKEY), 0);
    EXPECT_EQ(ibv_modify_qp(r.qp, &a, IBV_QP_RNR_RETRY), EINVAL);
    a.qp_state = IBV_QPS_ERR;
    EXPECT_EQ(ibv_modify_qp(r.qp, &a, IBV_QP_STATE | IBV_QP_QKEY), EINVAL);
    EXPECT_EQ(ibv_modify_qp(r.qp, &a, IBV_QP_STATE), 0);
    EXPECT_EQ(r.qp->state, IBV_QPS_ERR);

    EXPECT_EQ(ibv_destroy_qp(r.qp), 0);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(r.scq)), 0);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(r.rcq)), 0);
    efasim_dev_close(&dev);
}

/*
 * A WR's queue slot is free again only when its completion is polled, as on
 * EFA (rdma-core returns the slot in next_poll/end_poll): a full send or
 * receive queue whose completions sit unpolled refuses new WRs with ENOMEM.
 */
EFARM_TEST(efasim_qp_slots_free_when_polled)
{
    struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    struct ibv_recv_wr rwr, *rbad;
    struct ibv_sge sge;
    struct efasim_pair p;
    struct efasim_wc wc;
    uint32_t sq, rq;

    opts.max_send_wr = 4;
    opts.max_recv_wr = 4;
    efasim_pair_open(&p, &opts, &opts);
    sq = 4; /* powers of two, with one SGE per receive: the depths as asked */
    rq = 4;
    for (uint32_t i = 0; i < rq; i++)
        efasim_post_recv(&p.rx, i, &p.rbuf, 0, p.dev.mtu);
    for (uint32_t i = 0; i < sq; i++)
        EXPECT_EQ(efasim_send(&p.tx, &p.to_rx, i, &p.sbuf, 0, 16), 0);
    /* Let everything arrive and be acknowledged (efasim's service thread), polling no CQ. */
    efasim_sleep_ms(500);
    EXPECT_EQ(efasim_send(&p.tx, &p.to_rx, 99, &p.sbuf, 0, 16), ENOMEM);
    sge = (struct ibv_sge){.addr = (uintptr_t)p.rbuf.addr, .length = 64, .lkey = p.rbuf.mr->lkey};
    rwr = (struct ibv_recv_wr){.wr_id = 99, .sg_list = &sge, .num_sge = 1};
    EXPECT_EQ(ibv_post_recv(p.rx.qp, &rwr, &rbad), ENOMEM);

    /* Polling one completion frees one slot on each side. */
    efasim_wait_wc(p.tx.send_cq, &wc, "a send completion");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    efasim_wait_wc(p.rx.recv_cq, &wc, "a receive completion");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(ibv_post_recv(p.rx.qp, &rwr, &rbad), 0);
    EXPECT_EQ(efasim_send(&p.tx, &p.to_rx, 100, &p.sbuf, 0, 16), 0);
    for (int i = 0; i < 4; i++)
        efasim_wait_wc(p.tx.send_cq, &wc, "the remaining send completions");
    efasim_pair_close(&p);
}
