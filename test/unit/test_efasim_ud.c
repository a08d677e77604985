/*
 * UD QPs as EFA offers them through rdma-core 44: ibv_create_qp and
 * ibv_create_qp_ex make them (and nothing else), they take sends and sends
 * with immediate only, and move through the kernel's UD transition table,
 * which has no RNR retry. Datagrams are unreliable: a send completes once it
 * left; a receiver that is not ready, has another Q-Key or has no receive
 * posted drops the datagram without a word; loss, duplication and reordering
 * stay as they happened. A receive's payload lands 40 bytes into its buffer
 * (a GRH's room, as libfabric's DGRAM endpoint and ibv_ud_pingpong lay their
 * buffers out) and byte_len counts those 40. UD and SRD QPs drop each other's
 * datagrams.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "efasim_common.h"

#define UD_GRH    40
#define UD_GUARD  64
#define UD_POISON 0xee

/* Two UD QPs on one device: tx sends to rx. */
struct ud_pair {
    struct efasim_dev dev;
    struct efasim_qp tx, rx;
    struct efasim_dest to_rx;
    struct efasim_buf sbuf, rbuf;
};

static void ud_pair_open(struct ud_pair *p, const struct efasim_qp_opts *opts)
{
    const struct efasim_qp_opts def = EFASIM_QP_OPTS_DEFAULT;
    size_t len;

    memset(p, 0, sizeof(*p));
    efasim_dev_open(0, &p->dev);
    efasim_ud_open(&p->dev, opts ? opts : &def, &p->tx);
    efasim_ud_open(&p->dev, opts ? opts : &def, &p->rx);
    efasim_dest_to(&p->dev, &p->rx, &p->to_rx);
    len = 2 * (size_t)p->dev.mtu + 4096;
    efasim_buf_alloc(&p->dev, len, IBV_ACCESS_LOCAL_WRITE, &p->sbuf);
    efasim_buf_alloc(&p->dev, len, IBV_ACCESS_LOCAL_WRITE, &p->rbuf);
}

static void ud_pair_close(struct ud_pair *p)
{
    efasim_buf_free(&p->sbuf);
    efasim_buf_free(&p->rbuf);
    EXPECT_EQ(ibv_destroy_ah(p->to_rx.ah), 0);
    efasim_qp_close(&p->tx);
    efasim_qp_close(&p->rx);
    efasim_dev_close(&p->dev);
}

/* The ways a test posts one UD send. */
enum ud_way { UD_WR, UD_WR_IMM, UD_LEGACY, UD_INLINE };

static int ud_post(struct ud_pair *p, enum ud_way way, uint64_t wr_id, size_t len, uint32_t imm)
{
    switch (way) {
    case UD_WR:
        return efasim_send(&p->tx, &p->to_rx, wr_id, &p->sbuf, 0, len);
    case UD_WR_IMM:
        return efasim_send_imm(&p->tx, &p->to_rx, wr_id, &p->sbuf, 0, len, imm);
    case UD_LEGACY:
        return efasim_send_legacy(&p->tx, &p->to_rx, wr_id, &p->sbuf, 0, len);
    case UD_INLINE:
        return efasim_send_inline(&p->tx, &p->to_rx, wr_id, p->sbuf.addr, len);
    }
    return EINVAL;
}

/*
 * One message of len bytes tx -> rx, into a receive buffer that holds exactly
 * the GRH room and the payload: the payload lands after the 40 bytes, which
 * stay as they were, and nothing past the message is written.
 */
static void ud_roundtrip(struct ud_pair *p, enum ud_way way, size_t len)
{
    uint64_t seed = len * 31 + (uint64_t)way, wr_id = 0x500 + len;
    struct efasim_wc wc;
    size_t bad;

    efarm_test_context("UD send of %zu bytes, way %d", len, (int)way);
    memset(p->rbuf.addr, UD_POISON, UD_GRH + len + UD_GUARD);
    efasim_fill(p->sbuf.addr, len, seed);
    efasim_post_recv(&p->rx, wr_id, &p->rbuf, 0, UD_GRH + len);
    EXPECT_EQ(ud_post(p, way, wr_id, len, 0xab00 + (uint32_t)len), 0);

    efasim_wait_wc(p->tx.send_cq, &wc, "the UD send");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.wr_id, wr_id);
    EXPECT_EQ(wc.opcode, IBV_WC_SEND);

    efasim_wait_wc(p->rx.recv_cq, &wc, "the UD receive");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.wr_id, wr_id);
    EXPECT_EQ(wc.opcode, IBV_WC_RECV);
    EXPECT_EQ(wc.byte_len, UD_GRH + len);
    EXPECT_EQ(wc.qp_num, p->rx.qpn);
    EXPECT_EQ(wc.src_qp, p->tx.qpn);
    EXPECT_EQ(wc.slid, efasim_ahn(p->to_rx.ah));
    if (way == UD_WR_IMM) {
        EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
        EXPECT_EQ(wc.imm, 0xab00 + len);
    } else {
        EXPECT_EQ(wc.wc_flags & IBV_WC_WITH_IMM, 0);
    }
    bad = efasim_check_byte(p->rbuf.addr, UD_GRH, UD_POISON);
    if (bad != UD_GRH)
        efarm_test_fail(__FILE__, __LINE__, "byte %zu of the GRH room was written", bad);
    bad = efasim_check_fill(p->rbuf.addr + UD_GRH, len, seed);
    if (bad != len)
        efarm_test_fail(__FILE__, __LINE__, "received data differs at byte %zu of %zu", bad, len);
    bad = efasim_check_byte(p->rbuf.addr + UD_GRH + len, UD_GUARD, UD_POISON);
    if (bad != UD_GUARD)
        efarm_test_fail(__FILE__, __LINE__, "byte %zu past a %zu-byte message was written", bad,
                        len);
}

EFARM_TEST(efasim_ud_send_and_receive)
{
    struct ud_pair p;

    ud_pair_open(&p, NULL);
    ud_roundtrip(&p, UD_WR, 0);
    ud_roundtrip(&p, UD_WR, 1);
    ud_roundtrip(&p, UD_WR, 1000);
    ud_roundtrip(&p, UD_WR, p.dev.mtu);
    ud_roundtrip(&p, UD_WR_IMM, 0);
    ud_roundtrip(&p, UD_WR_IMM, 4096);
    ud_roundtrip(&p, UD_LEGACY, 2048);
    ud_roundtrip(&p, UD_LEGACY, p.dev.mtu);
    ud_roundtrip(&p, UD_INLINE, p.dev.efa.inline_buf_size);
    ud_pair_close(&p);
}

/*
 * The rdma-core flow of ibv_ud_pingpong: ibv_create_cq, ibv_create_qp (UD),
 * ibv_post_send, ibv_poll_cq, one CQ for both queues, the caps handed back.
 */
EFARM_TEST(efasim_ud_legacy_path)
{
    struct ibv_qp_init_attr init;
    struct ibv_qp_attr qattr;
    struct ibv_qp *qp[2];
    struct ibv_cq *cq[2];
    struct efasim_buf buf;
    struct efasim_dev dev;
    struct ibv_ah *ah;
    struct ibv_wc wc;
    double deadline;
    unsigned got = 0;

    efasim_dev_open(0, &dev);
    efasim_buf_alloc(&dev, 2 * (2048 + UD_GRH), IBV_ACCESS_LOCAL_WRITE, &buf);
    for (int i = 0; i < 2; i++) {
        cq[i] = ibv_create_cq(dev.ctx, 501, NULL, NULL, 0);
        EXPECT_TRUE(cq[i] != NULL);
        memset(&init, 0, sizeof(init));
        init.send_cq = cq[i];
        init.recv_cq = cq[i];
        init.cap.max_send_wr = 1;
        init.cap.max_recv_wr = 500;
        init.cap.max_send_sge = 1;
        init.cap.max_recv_sge = 1;
        init.qp_type = IBV_QPT_UD;
        qp[i] = ibv_create_qp(dev.pd, &init);
        if (!qp[i])
            efarm_test_fail(__FILE__, __LINE__, "ibv_create_qp(UD): %s", strerror(errno));
        EXPECT_EQ(qp[i]->qp_type, IBV_QPT_UD);
        EXPECT_TRUE(init.cap.max_send_wr >= 1);
        EXPECT_EQ(init.cap.max_recv_wr, 512);        /* 500 descriptors of one SGE, rounded */
        EXPECT_TRUE(ibv_qp_to_qp_ex(qp[i]) == NULL); /* no send_ops_flags: no ibv_wr_* */
        memset(&qattr, 0, sizeof(qattr));
        EXPECT_EQ(ibv_query_qp(qp[i], &qattr, IBV_QP_CAP, &init), 0);
        EXPECT_EQ(init.qp_type, IBV_QPT_UD);
        efasim_ud_to_rts(qp[i], 0x11111111);
    }
    ah = efasim_ah_create(&dev, &dev.gid);
    {
        struct ibv_sge rsge = {.addr = (uintptr_t)buf.addr + 2048 + UD_GRH,
                               .length = 2048 + UD_GRH,
                               .lkey = buf.mr->lkey};
        struct ibv_recv_wr rwr = {.wr_id = 2, .sg_list = &rsge, .num_sge = 1}, *rbad;
        struct ibv_sge ssge = {
            .addr = (uintptr_t)buf.addr + UD_GRH, .length = 2048, .lkey = buf.mr->lkey};
        struct ibv_send_wr swr = {.wr_id = 1,
                                  .sg_list = &ssge,
                                  .num_sge = 1,
                                  .opcode = IBV_WR_SEND,
                                  .send_flags = IBV_SEND_SIGNALED,
                                  .wr.ud = {.ah = ah,
                                            .remote_qpn = qp[1]->qp_num,
                                            .remote_qkey = 0x11111111}},
                           *sbad;

        efasim_fill(buf.addr + UD_GRH, 2048, 77);
        EXPECT_EQ(ibv_post_recv(qp[1], &rwr, &rbad), 0);
        /* RDMA is not UD's: the legacy path refuses it before the device sees it. */
        swr.opcode = IBV_WR_RDMA_READ;
        EXPECT_EQ(ibv_post_send(qp[0], &swr, &sbad), EINVAL);
        swr.opcode = IBV_WR_SEND;
        EXPECT_EQ(ibv_post_send(qp[0], &swr, &sbad), 0);
    }
    deadline = efasim_now() + EFASIM_WAIT_S;
    while (got < 2) {
        for (int i = 0; i < 2; i++) {
            int n = ibv_poll_cq(cq[i], 1, &wc);

            EXPECT_TRUE(n >= 0);
            if (!n)
                continue;
            EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
            EXPECT_EQ(wc.wr_id, (uint64_t)i + 1);
            if (i == 1) {
                EXPECT_EQ(wc.byte_len, 2048 + UD_GRH);
                EXPECT_EQ(wc.src_qp, qp[0]->qp_num);
                EXPECT_EQ(efasim_check_fill(buf.addr + 2048 + 2 * UD_GRH, 2048, 77), 2048);
            }
            got++;
        }
        if (efasim_now() > deadline)
            efarm_test_fail(__FILE__, __LINE__, "%u of 2 completions", got);
    }
    EXPECT_EQ(ibv_destroy_ah(ah), 0);
    for (int i = 0; i < 2; i++) {
        EXPECT_EQ(ibv_destroy_qp(qp[i]), 0);
        EXPECT_EQ(ibv_destroy_cq(cq[i]), 0);
    }
    efasim_buf_free(&buf);
    efasim_dev_close(&dev);
}

/* Creation and the modify table as rdma-core 44 and EFA's driver take them for UD. */
EFARM_TEST(efasim_ud_creation_and_modify_as_efa)
{
    struct ibv_qp_init_attr_ex ex;
    struct efadv_qp_init_attr efa = {.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD};
    struct ibv_qp_init_attr init;
    struct efasim_dev dev;
    struct ibv_cq_ex *cq;
    struct ibv_qp_attr a;
    struct ibv_qp *qp;

    efasim_dev_open(0, &dev);
    cq = efasim_cq_create(&dev, 64);
    memset(&ex, 0, sizeof(ex));
    ex.send_cq = ibv_cq_ex_to_cq(cq);
    ex.recv_cq = ibv_cq_ex_to_cq(cq);
    ex.cap = (struct ibv_qp_cap){
        .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1};
    ex.pd = dev.pd;
    ex.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;

    /* Only UD through ibv_create_qp and ibv_create_qp_ex; SRD is efadv's. */
    memcpy(&init, &ex, sizeof(init));
    init.qp_type = IBV_QPT_RC;
    errno = 0;
    EXPECT_TRUE(ibv_create_qp(dev.pd, &init) == NULL);
    EXPECT_EQ(errno, EOPNOTSUPP);
    init.qp_type = IBV_QPT_UC;
    errno = 0;
    EXPECT_TRUE(ibv_create_qp(dev.pd, &init) == NULL);
    EXPECT_EQ(errno, EOPNOTSUPP);
    ex.qp_type = IBV_QPT_DRIVER;
    ex.send_ops_flags = IBV_QP_EX_WITH_SEND;
    errno = 0;
    EXPECT_TRUE(ibv_create_qp_ex(dev.ctx, &ex) == NULL);
    EXPECT_EQ(errno, EOPNOTSUPP);
    /* efadv makes driver QPs only: UD there is a compatibility problem. */
    ex.qp_type = IBV_QPT_UD;
    errno = 0;
    EXPECT_TRUE(efadv_create_qp_ex(dev.ctx, &ex, &efa, sizeof(efa)) == NULL);
    EXPECT_EQ(errno, EINVAL);
    /* UD's send operations are send and send with immediate. */
    ex.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_READ;
    errno = 0;
    EXPECT_TRUE(ibv_create_qp_ex(dev.ctx, &ex) == NULL);
    EXPECT_EQ(errno, EOPNOTSUPP);
    ex.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
    qp = ibv_create_qp_ex(dev.ctx, &ex);
    if (!qp)
        efarm_test_fail(__FILE__, __LINE__, "ibv_create_qp_ex(UD): %s", strerror(errno));
    EXPECT_EQ(qp->qp_type, IBV_QPT_UD);
    EXPECT_TRUE(ibv_qp_to_qp_ex(qp) != NULL);
    EXPECT_TRUE(ibv_qp_to_qp_ex(qp)->wr_rdma_read == NULL);

    /* RESET goes nowhere but INIT (and RESET); INIT needs PKEY_INDEX, PORT, QKEY. */
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_ERR;
    EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qkey = 0x1234;
    EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_QKEY), EINVAL);
    EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY),
              0);
    a.qp_state = IBV_QPS_RTR;
    EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
    /* RNR retry is SRD's: EINVAL on UD, also towards RTS. */
    a.qp_state = IBV_QPS_RTS;
    a.rnr_retry = 3;
    EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RNR_RETRY), EINVAL);
    EXPECT_EQ(qp->state, IBV_QPS_RTR);
    a.sq_psn = 0x45;
    EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
    {
        struct ibv_qp_attr q;

        memset(&q, 0, sizeof(q));
        EXPECT_EQ(ibv_query_qp(qp, &q, IBV_QP_SQ_PSN | IBV_QP_QKEY, &init), 0);
        EXPECT_EQ(q.sq_psn, 0x45); /* as rdma-core's test_modify_ud_qp checks */
        EXPECT_EQ(q.qkey, 0x1234);
    }
    EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_RNR_RETRY), EINVAL);
    EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_QKEY), 0);
    a.qp_state = IBV_QPS_ERR;
    EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
    EXPECT_EQ(ibv_destroy_qp(qp), 0);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
    efasim_dev_close(&dev);
}

/* A send beyond the MTU fails at the sender (vendor error 6) and sends nothing. */
EFARM_TEST(efasim_ud_oversize_fails_locally)
{
    struct efasim_wc wc;
    struct ud_pair p;

    ud_pair_open(&p, NULL);
    efasim_post_recv(&p.rx, 1, &p.rbuf, 0, 2 * (size_t)p.dev.mtu);
    EXPECT_EQ(efasim_send(&p.tx, &p.to_rx, 9, &p.sbuf, 0, p.dev.mtu + 1), 0);
    efasim_wait_wc(p.tx.send_cq, &wc, "the oversize UD send");
    EXPECT_WC_STATUS(&wc, IBV_WC_LOC_LEN_ERR);
    EXPECT_EQ(wc.vendor_err, 6); /* EFA_IO_COMP_STATUS_LOCAL_ERROR_BAD_LENGTH */
    efasim_expect_no_wc(p.rx.recv_cq, 50, "the receiver of an oversize UD send");
    /* The receive it did not take takes the next datagram. */
    EXPECT_EQ(efasim_send(&p.tx, &p.to_rx, 10, &p.sbuf, 0, 64), 0);
    efasim_wait_wc(p.rx.recv_cq, &wc, "the receive after the oversize send");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.wr_id, 1);
    EXPECT_EQ(wc.byte_len, UD_GRH + 64);
    efasim_wait_wc(p.tx.send_cq, &wc, "the send after the oversize one");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    ud_pair_close(&p);
}

/*
 * What SRD refuses (no receive: RNR; another Q-Key or a QP not ready: bad
 * destination) UD drops without a word: the send succeeds, the receiver sees
 * nothing, and a receive posted afterwards takes the next datagram, never
 * the dropped one. A receive buffer too short for the GRH room and the
 * payload fails at the receiver only.
 */
EFARM_TEST(efasim_ud_drops_unanswered)
{
    const struct efasim_qp_opts def = EFASIM_QP_OPTS_DEFAULT;
    struct efasim_dest wrong_qkey;
    struct efasim_qp idle;
    struct efasim_dest to_idle;
    struct efasim_wc wc;
    struct ud_pair p;
    struct ibv_qp_attr a;

    ud_pair_open(&p, NULL);

    efarm_test_context("no receive posted");
    EXPECT_EQ(efasim_send_imm(&p.tx, &p.to_rx, 1, &p.sbuf, 0, 64, 1), 0);
    efasim_wait_wc(p.tx.send_cq, &wc, "the send to a QP without receives");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    efasim_expect_no_wc(p.rx.recv_cq, 50, "the QP without receives");
    efasim_post_recv(&p.rx, 2, &p.rbuf, 0, p.dev.mtu + UD_GRH);
    EXPECT_EQ(efasim_send_imm(&p.tx, &p.to_rx, 2, &p.sbuf, 0, 64, 2), 0);
    efasim_wait_wc(p.rx.recv_cq, &wc, "the datagram after the receive was posted");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.imm, 2);
    efasim_wait_wc(p.tx.send_cq, &wc, "the second send");

    efarm_test_context("another Q-Key");
    wrong_qkey = p.to_rx;
    wrong_qkey.qkey = p.rx.qkey + 1;
    /* One byte short of an MTU-sized datagram's room: the next phase needs that. */
    efasim_post_recv(&p.rx, 3, &p.rbuf, 0, p.dev.mtu + UD_GRH - 1);
    EXPECT_EQ(efasim_send(&p.tx, &wrong_qkey, 3, &p.sbuf, 0, 64), 0);
    efasim_wait_wc(p.tx.send_cq, &wc, "the send with another Q-Key");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    efasim_expect_no_wc(p.rx.recv_cq, 50, "the QP of another Q-Key");

    efarm_test_context("a receive buffer without room for the GRH and the payload");
    EXPECT_EQ(efasim_send(&p.tx, &p.to_rx, 4, &p.sbuf, 0, p.dev.mtu), 0);
    efasim_wait_wc(p.tx.send_cq, &wc, "the send into a short receive");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS); /* nothing tells the sender */
    efasim_wait_wc(p.rx.recv_cq, &wc, "the short receive");
    EXPECT_EQ(wc.wr_id, 3);
    EXPECT_WC_STATUS(&wc, IBV_WC_LOC_LEN_ERR);
    EXPECT_EQ(wc.vendor_err, 6);

    efarm_test_context("a QP not ready to receive (INIT)");
    memset(&idle, 0, sizeof(idle));
    efasim_ud_open(&p.dev, &def, &idle);
    a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RESET};
    EXPECT_EQ(ibv_modify_qp(idle.qp, &a, IBV_QP_STATE), 0);
    a = (struct ibv_qp_attr){.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = idle.qkey};
    EXPECT_EQ(
        ibv_modify_qp(idle.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY),
        0);
    efasim_post_recv(&idle, 5, &p.rbuf, 0, p.dev.mtu + UD_GRH);
    efasim_dest_to(&p.dev, &idle, &to_idle);
    EXPECT_EQ(efasim_send(&p.tx, &to_idle, 5, &p.sbuf, 0, 64), 0);
    efasim_wait_wc(p.tx.send_cq, &wc, "the send to a QP in INIT");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    efasim_expect_no_wc(idle.recv_cq, 50, "the QP in INIT");
    EXPECT_EQ(ibv_destroy_ah(to_idle.ah), 0);
    efasim_qp_close(&idle);
    ud_pair_close(&p);
}

/* A sender the receiver's PD has no AH for: slid 0xffff and its GID through efadv. */
EFARM_TEST(efasim_ud_unknown_sender_gid)
{
    const struct efasim_qp_opts def = EFASIM_QP_OPTS_DEFAULT;
    struct efasim_dev dev[2];
    struct efasim_qp tx, rx;
    struct efasim_dest to_rx;
    struct efasim_buf buf;
    struct efasim_wc wc;
    char a[64], b[64];

    efasim_setenv("EFASIM_NDEV", "2");
    efasim_dev_open(0, &dev[0]);
    efasim_dev_open(1, &dev[1]);
    efasim_ud_open(&dev[0], &def, &tx);
    efasim_ud_open(&dev[1], &def, &rx);
    efasim_dest_to(&dev[0], &rx, &to_rx);
    efasim_buf_alloc(&dev[0], 4096, IBV_ACCESS_LOCAL_WRITE, &buf);
    {
        struct efasim_buf rbuf;

        efasim_buf_alloc(&dev[1], 4096, IBV_ACCESS_LOCAL_WRITE, &rbuf);
        efasim_post_recv(&rx, 1, &rbuf, 0, 4096);
        EXPECT_EQ(efasim_send(&tx, &to_rx, 1, &buf, 0, 100), 0);
        efasim_wait_wc(rx.recv_cq, &wc, "the receive from an unknown sender");
        EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
        EXPECT_EQ(wc.byte_len, UD_GRH + 100);
        EXPECT_EQ(wc.src_qp, tx.qpn);
        EXPECT_EQ(wc.slid, EFASIM_AHN_NONE);
        EXPECT_EQ(wc.sgid_ret, 0);
        if (memcmp(&wc.sgid, &dev[0].gid, sizeof(wc.sgid)))
            efarm_test_fail(__FILE__, __LINE__, "sgid %s, expected %s", efasim_gid_str(&wc.sgid, a),
                            efasim_gid_str(&dev[0].gid, b));
        efasim_buf_free(&rbuf);
    }
    efasim_wait_wc(tx.send_cq, &wc, "the send");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    efasim_buf_free(&buf);
    EXPECT_EQ(ibv_destroy_ah(to_rx.ah), 0);
    efasim_qp_close(&tx);
    efasim_qp_close(&rx);
    efasim_dev_close(&dev[0]);
    efasim_dev_close(&dev[1]);
}

/*
 * The fault injector's loss, duplication and reordering reach a UD receiver
 * as they happened: every send succeeds, some messages never arrive, some
 * arrive twice, some out of order. (SRD recovers all three.)
 */
EFARM_TEST_TIMEOUT(efasim_ud_faults_not_recovered, 60)
{
    enum { N = 300 };
    struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    unsigned seen[N], received = 0, lost = 0, twice = 0, inversions = 0;
    uint32_t last = 0;
    struct efasim_wc wc;
    struct ud_pair p;
    double quiet;

    efasim_setenv("EFASIM_LOSS", "0.2");
    efasim_setenv("EFASIM_DUP", "0.2");
    efasim_setenv("EFASIM_REORDER", "0.2");
    opts.max_recv_wr = 1024;
    opts.cqe = 2048;
    ud_pair_open(&p, &opts);
    for (unsigned i = 0; i < 1024; i++)
        efasim_post_recv(&p.rx, i, &p.rbuf, 0, 64 + UD_GRH);
    memset(seen, 0, sizeof(seen));
    for (uint32_t i = 0; i < N; i++) {
        EXPECT_EQ(efasim_send_imm(&p.tx, &p.to_rx, i, &p.sbuf, 0, 64, i), 0);
        efasim_wait_wc(p.tx.send_cq, &wc, "a UD send under faults");
        EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
        while (efasim_poll_one(p.rx.recv_cq, &wc)) {
            EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
            EXPECT_TRUE(wc.imm < N);
            inversions += received && wc.imm < last;
            last = wc.imm;
            seen[wc.imm]++;
            received++;
        }
    }
    /* Held datagrams leave within 200 us of their hold; wait for a quiet 300 ms. */
    quiet = efasim_now() + 0.3;
    while (efasim_now() < quiet) {
        if (!efasim_poll_one(p.rx.recv_cq, &wc)) {
            efasim_sleep_ms(1);
            continue;
        }
        EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
        EXPECT_TRUE(wc.imm < N);
        inversions += wc.imm < last;
        last = wc.imm;
        seen[wc.imm]++;
        received++;
        quiet = efasim_now() + 0.3;
    }
    for (unsigned i = 0; i < N; i++) {
        lost += !seen[i];
        twice += seen[i] > 1;
    }
    fprintf(stderr, "  note: %u sent, %u received: %u lost, %u more than once, %u out of order\n",
            N, received, lost, twice, inversions);
    EXPECT_TRUE(lost > 0);
    EXPECT_TRUE(twice > 0);
    EXPECT_TRUE(inversions > 0);
    ud_pair_close(&p);
}

/*
 * A UD datagram to an SRD QP is dropped unanswered, and an SRD datagram to a
 * UD QP too: the SRD sender hears nothing and its WR fails as to an
 * unreachable peer (vendor error 15).
 */
EFARM_TEST(efasim_ud_and_srd_do_not_talk)
{
    const struct efasim_qp_opts def = EFASIM_QP_OPTS_DEFAULT;
    struct efasim_dest to_srd, to_ud;
    struct efasim_qp ud, srd;
    struct efasim_buf sbuf, rbuf;
    struct efasim_dev dev;
    struct efasim_wc wc;

    efasim_setenv("EFASIM_TIMEOUT_MS", "300");
    efasim_dev_open(0, &dev);
    efasim_ud_open(&dev, &def, &ud);
    efasim_qp_open(&dev, &def, &srd);
    efasim_dest_to(&dev, &srd, &to_srd);
    efasim_dest_to(&dev, &ud, &to_ud);
    efasim_buf_alloc(&dev, 4096, IBV_ACCESS_LOCAL_WRITE, &sbuf);
    efasim_buf_alloc(&dev, 4096, IBV_ACCESS_LOCAL_WRITE, &rbuf);
    efasim_post_recv(&srd, 1, &rbuf, 0, 2048);
    efasim_post_recv(&ud, 2, &rbuf, 2048, 2048);

    EXPECT_EQ(efasim_send(&ud, &to_srd, 1, &sbuf, 0, 64), 0);
    efasim_wait_wc(ud.send_cq, &wc, "the UD send to an SRD QP");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    efasim_expect_no_wc(srd.recv_cq, 100, "the SRD QP a UD QP sent to");

    EXPECT_EQ(efasim_send(&srd, &to_ud, 2, &sbuf, 0, 64), 0);
    efasim_wait_wc(srd.send_cq, &wc, "the SRD send to a UD QP");
    EXPECT_WC_STATUS(&wc, EFASIM_WC_UNREACHABLE);
    EXPECT_EQ(wc.vendor_err, EFASIM_VENDOR_UNREACHABLE);
    efasim_expect_no_wc(ud.recv_cq, 10, "the UD QP an SRD QP sent to");

    efasim_buf_free(&sbuf);
    efasim_buf_free(&rbuf);
    EXPECT_EQ(ibv_destroy_ah(to_srd.ah), 0);
    EXPECT_EQ(ibv_destroy_ah(to_ud.ah), 0);
    efasim_qp_close(&ud);
    efasim_qp_close(&srd);
    efasim_dev_close(&dev);
}

struct ud_counters {
    uint64_t tx_pkts, tx_bytes, rx_pkts, rx_bytes, fast_ops, fast_bytes;
};

static void ud_counters_read(const char *name, struct ud_counters *c)
{
    int (*read_fn)(const char *, struct ud_counters *) =
        (int (*)(const char *, struct ud_counters *))dlsym(RTLD_DEFAULT, "efasim_hw_counters_read");

    memset(c, 0, sizeof(*c));
    EXPECT_TRUE(read_fn != NULL);
    if (read_fn)
        EXPECT_EQ(read_fn(name, c), 0);
}

/*
 * The device counters count UD datagrams: 20 sends from efasim_0 to efasim_1
 * are 20 datagrams out of the one and into the other, and nothing comes back
 * (no ACKs).
 */
EFARM_TEST(efasim_ud_counted)
{
    const struct efasim_qp_opts def = EFASIM_QP_OPTS_DEFAULT;
    struct ud_counters before[2], after[2];
    static const char *const names[2] = {"efasim_0", "efasim_1"};
    struct efasim_dev dev[2];
    struct efasim_qp tx, rx;
    struct efasim_dest to_rx;
    struct efasim_buf sbuf, rbuf;
    struct efasim_wc wc;

    efasim_private_sysfs();
    efasim_setenv("EFASIM_NDEV", "2");
    efasim_dev_open(0, &dev[0]);
    efasim_dev_open(1, &dev[1]);
    efasim_ud_open(&dev[0], &def, &tx);
    efasim_ud_open(&dev[1], &def, &rx);
    efasim_dest_to(&dev[0], &rx, &to_rx);
    efasim_buf_alloc(&dev[0], 4096, IBV_ACCESS_LOCAL_WRITE, &sbuf);
    efasim_buf_alloc(&dev[1], 4096, IBV_ACCESS_LOCAL_WRITE, &rbuf);
    for (int d = 0; d < 2; d++)
        ud_counters_read(names[d], &before[d]);
    for (unsigned i = 0; i < 20; i++) {
        efasim_post_recv(&rx, i, &rbuf, 0, 128);
        EXPECT_EQ(efasim_send(&tx, &to_rx, i, &sbuf, 0, 32), 0);
        efasim_wait_wc(rx.recv_cq, &wc, "a counted UD receive");
        EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
        efasim_wait_wc(tx.send_cq, &wc, "a counted UD send");
    }
    for (int d = 0; d < 2; d++)
        ud_counters_read(names[d], &after[d]);
    EXPECT_EQ(after[0].tx_pkts - before[0].tx_pkts, 20);
    EXPECT_TRUE(after[0].tx_bytes - before[0].tx_bytes >= 20 * 32);
    EXPECT_EQ(after[1].rx_pkts - before[1].rx_pkts, 20);
    EXPECT_EQ(after[1].rx_bytes - before[1].rx_bytes, after[0].tx_bytes - before[0].tx_bytes);
    EXPECT_EQ(after[1].tx_pkts, before[1].tx_pkts);
    EXPECT_EQ(after[0].rx_pkts, before[0].rx_pkts);
    efasim_buf_free(&sbuf);
    efasim_buf_free(&rbuf);
    EXPECT_EQ(ibv_destroy_ah(to_rx.ah), 0);
    efasim_qp_close(&tx);
    efasim_qp_close(&rx);
    efasim_dev_close(&dev[0]);
    efasim_dev_close(&dev[1]);
}
