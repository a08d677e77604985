/*
 * Two-sided SRD traffic between two QPs of one process: every size up to the
 * MTU through both posting APIs, inline data, immediate data, gather lists,
 * the legacy CQ path, and the error completions of oversized messages, short
 * receive buffers, wrong Q-Keys and dead QPNs.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "efasim_common.h"

static void roundtrip_every_size(enum efasim_api api)
{
    struct efasim_pair p;
    uint32_t mtu;

    efasim_pair_open(&p, NULL, NULL);
    mtu = p.dev.mtu;
    EXPECT_EQ(mtu, EFASIM_DEFAULT_MTU);
    for (uint32_t len = 0; len <= 64; len++) {
        efarm_test_context("%s send of %u bytes", api == EFASIM_API_WR ? "ibv_wr" : "legacy", len);
        efasim_pair_roundtrip(&p, len, api);
    }
    for (uint32_t len = 97; len < mtu - 1; len += 97) {
        efarm_test_context("%s send of %u bytes", api == EFASIM_API_WR ? "ibv_wr" : "legacy", len);
        efasim_pair_roundtrip(&p, len, api);
    }
    efarm_test_context("send of MTU - 1 bytes");
    efasim_pair_roundtrip(&p, mtu - 1, api);
    efarm_test_context("send of MTU bytes");
    efasim_pair_roundtrip(&p, mtu, api);
    efasim_pair_close(&p);
}

EFARM_TEST(efasim_send_every_size_wr)
{
    roundtrip_every_size(EFASIM_API_WR);
}

EFARM_TEST(efasim_send_every_size_legacy)
{
    roundtrip_every_size(EFASIM_API_LEGACY);
}

/* MTU + 1 bytes fails at post time or with IBV_WC_LOC_LEN_ERR; the receiver sees nothing. */
EFARM_TEST(efasim_send_longer_than_mtu_fails)
{
    struct efasim_pair p;

    efasim_pair_open(&p, NULL, NULL);
    efasim_post_recv(&p.rx, 1, &p.rbuf, 0, p.rbuf.len);
    for (int api = EFASIM_API_WR; api <= EFASIM_API_LEGACY; api++) {
        size_t len = p.dev.mtu + 1;
        int rc;

        efarm_test_context("%s send of MTU + 1 bytes", api == EFASIM_API_WR ? "ibv_wr" : "legacy");
        if (api == EFASIM_API_WR)
            rc = efasim_send(&p.tx, &p.to_rx, 2, &p.sbuf, 0, len);
        else
            rc = efasim_send_legacy(&p.tx, &p.to_rx, 2, &p.sbuf, 0, len);
        if (!rc) {
            struct efasim_wc wc;

            efasim_wait_wc(p.tx.send_cq, &wc, "the oversized send");
            EXPECT_WC_STATUS(&wc, IBV_WC_LOC_LEN_ERR);
            EXPECT_EQ(wc.wr_id, 2);
        }
        efasim_expect_no_wc(p.rx.recv_cq, 100, "a receive of the oversized send");
    }
    efasim_pair_close(&p);
}

/* Inline data is copied at post time: the source is overwritten before the send completes. */
EFARM_TEST(efasim_send_inline_data)
{
    struct efasim_pair p;
    uint8_t data[64];
    struct efasim_wc wc;

    efasim_pair_open(&p, NULL, NULL);
    EXPECT_EQ(p.dev.efa.inline_buf_size, EFASIM_DEFAULT_INLINE);
    for (int api = EFASIM_API_WR; api <= EFASIM_API_LEGACY; api++) {
        for (size_t len = 0; len <= p.dev.efa.inline_buf_size; len++) {
            uint64_t seed = 1000 + len, wr_id = (uint64_t)api << 32 | len;
            int rc;

            efarm_test_context("%s inline send of %zu bytes",
                               api == EFASIM_API_WR ? "ibv_wr" : "legacy", len);
            efasim_fill(data, len, seed);
            efasim_post_recv(&p.rx, wr_id, &p.rbuf, 0, p.dev.mtu);
            if (api == EFASIM_API_WR) {
                rc = efasim_send_inline(&p.tx, &p.to_rx, wr_id, data, len);
            } else {
                /* Inline data needs no lkey: the stack buffer is not registered. */
                struct ibv_sge sge = {.addr = (uintptr_t)data, .length = (uint32_t)len};
                struct ibv_send_wr wr = {
                    .wr_id = wr_id,
                    .sg_list = &sge,
                    .num_sge = 1,
                    .opcode = IBV_WR_SEND,
                    .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
                    .wr.ud = {.ah = p.to_rx.ah, .remote_qpn = p.rx.qpn, .remote_qkey = p.rx.qkey},
                };
                struct ibv_send_wr *bad = NULL;

                rc = ibv_post_send(p.tx.qp, &wr, &bad);
            }
            EXPECT_EQ(rc, 0);
            memset(data, 0x55, sizeof(data));

            efasim_wait_wc(p.rx.recv_cq, &wc, "the inline receive");
            EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
            EXPECT_EQ(wc.wr_id, wr_id);
            EXPECT_EQ(wc.byte_len, len);
            EXPECT_EQ(efasim_check_fill(p.rbuf.addr, len, seed), len);
            efasim_wait_wc(p.tx.send_cq, &wc, "the inline send");
            EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
            EXPECT_EQ(wc.wr_id, wr_id);
        }
    }
    efasim_pair_close(&p);
}

static void expect_imm_recv(struct efasim_pair *p, uint64_t wr_id, size_t len, uint32_t imm)
{
    struct efasim_wc wc;

    efasim_wait_wc(p->rx.recv_cq, &wc, "the receive with immediate data");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.wr_id, wr_id);
    EXPECT_EQ(wc.opcode, IBV_WC_RECV);
    EXPECT_EQ(wc.byte_len, len);
    EXPECT_EQ(wc.wc_flags & IBV_WC_WITH_IMM, IBV_WC_WITH_IMM);
    EXPECT_EQ(wc.imm, imm);
    EXPECT_EQ(wc.src_qp, p->tx.qpn);
    EXPECT_EQ(efasim_check_fill(p->rbuf.addr, len, wr_id), len);
    efasim_wait_wc(p->tx.send_cq, &wc, "the send with immediate data");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.wr_id, wr_id);
    EXPECT_EQ(wc.opcode, IBV_WC_SEND);
}

EFARM_TEST(efasim_send_with_imm)
{
    static const size_t lens[] = {0, 1, 100, EFASIM_DEFAULT_MTU};
    struct efasim_pair p;

    efasim_pair_open(&p, NULL, NULL);
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        uint32_t imm = 0xdeadbe00u + (uint32_t)i;
        uint64_t wr_id = 100 + i;

        efarm_test_context("ibv_wr_send_imm of %zu bytes", lens[i]);
        efasim_fill(p.sbuf.addr, lens[i], wr_id);
        efasim_post_recv(&p.rx, wr_id, &p.rbuf, 0, p.dev.mtu);
        EXPECT_EQ(efasim_send_imm(&p.tx, &p.to_rx, wr_id, &p.sbuf, 0, lens[i], imm), 0);
        expect_imm_recv(&p, wr_id, lens[i], imm);
    }
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        uint32_t imm = 0x01020300u + (uint32_t)i;
        uint64_t wr_id = 200 + i;
        struct ibv_sge sge = {
            .addr = (uintptr_t)p.sbuf.addr,
            .length = (uint32_t)lens[i],
            .lkey = p.sbuf.mr->lkey,
        };
        struct ibv_send_wr wr = {
            .wr_id = wr_id,
            .sg_list = &sge,
            .num_sge = lens[i] ? 1 : 0,
            .opcode = IBV_WR_SEND_WITH_IMM,
            .send_flags = IBV_SEND_SIGNALED,
            .imm_data = htobe32(imm),
            .wr.ud = {.ah = p.to_rx.ah, .remote_qpn = p.rx.qpn, .remote_qkey = p.rx.qkey},
        };
        struct ibv_send_wr *bad = NULL;

        efarm_test_context("legacy IBV_WR_SEND_WITH_IMM of %zu bytes", lens[i]);
        efasim_fill(p.sbuf.addr, lens[i], wr_id);
        efasim_post_recv(&p.rx, wr_id, &p.rbuf, 0, p.dev.mtu);
        EXPECT_EQ(ibv_post_send(p.tx.qp, &wr, &bad), 0);
        expect_imm_recv(&p, wr_id, lens[i], imm);
    }
    efasim_pair_close(&p);
}

/* Two gather entries arrive as one message, in order. */
EFARM_TEST(efasim_send_sge_list)
{
    struct efasim_pair p;
    struct ibv_sge sge[2];
    struct efasim_wc wc;

    efasim_pair_open(&p, NULL, NULL);
    EXPECT_TRUE(p.dev.efa.max_sq_sge >= 2);
    efasim_fill(p.sbuf.addr, p.sbuf.len, 77);
    sge[0] = (struct ibv_sge){(uintptr_t)(p.sbuf.addr + 1000), 3000, p.sbuf.mr->lkey};
    sge[1] = (struct ibv_sge){(uintptr_t)(p.sbuf.addr + 5), 4000, p.sbuf.mr->lkey};
    efasim_post_recv(&p.rx, 1, &p.rbuf, 0, p.dev.mtu);
    ibv_wr_start(p.tx.qpx);
    p.tx.qpx->wr_id = 2;
    p.tx.qpx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_send(p.tx.qpx);
    ibv_wr_set_ud_addr(p.tx.qpx, p.to_rx.ah, p.rx.qpn, p.rx.qkey);
    ibv_wr_set_sge_list(p.tx.qpx, 2, sge);
    EXPECT_EQ(ibv_wr_complete(p.tx.qpx), 0);

    efasim_wait_wc(p.rx.recv_cq, &wc, "the receive");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.byte_len, 7000);
    EXPECT_MEM_EQ(p.rbuf.addr, p.sbuf.addr + 1000, 3000);
    EXPECT_MEM_EQ(p.rbuf.addr + 3000, p.sbuf.addr + 5, 4000);
    efasim_wait_wc(p.tx.send_cq, &wc, "the send");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    efasim_pair_close(&p);
}

/* The receive buffer is too small: the sender sees REM_INV_REQ, the receiver LOC_LEN. */
EFARM_TEST(efasim_recv_buffer_too_small)
{
    struct efasim_pair p;
    struct efasim_wc wc;

    efasim_pair_open(&p, NULL, NULL);
    efasim_post_recv(&p.rx, 11, &p.rbuf, 0, 16);
    EXPECT_EQ(efasim_send(&p.tx, &p.to_rx, 12, &p.sbuf, 0, 100), 0);
    efasim_wait_wc(p.rx.recv_cq, &wc, "the short receive");
    EXPECT_WC_STATUS(&wc, IBV_WC_LOC_LEN_ERR);
    EXPECT_EQ(wc.wr_id, 11);
    efasim_wait_wc(p.tx.send_cq, &wc, "the send to the short receive");
    EXPECT_WC_STATUS(&wc, IBV_WC_REM_INV_REQ_ERR);
    EXPECT_EQ(wc.wr_id, 12);

    /* Both QPs keep working (SRD errors do not move a QP to the error state). */
    efarm_test_context("send after the error");
    efasim_pair_roundtrip(&p, 100, EFASIM_API_WR);
    efasim_pair_close(&p);
}

/* A wrong Q-Key is rejected by the responder and consumes no receive. */
EFARM_TEST(efasim_qkey_mismatch)
{
    struct efasim_dest wrong;
    struct efasim_pair p;
    struct efasim_wc wc;

    efasim_pair_open(&p, NULL, NULL);
    wrong = p.to_rx;
    wrong.qkey = p.rx.qkey ^ 0x00010001u;
    efasim_post_recv(&p.rx, 21, &p.rbuf, 0, p.dev.mtu);
    EXPECT_EQ(efasim_send(&p.tx, &wrong, 22, &p.sbuf, 0, 64), 0);
    efasim_wait_wc(p.tx.send_cq, &wc, "the send with a wrong Q-Key");
    EXPECT_WC_STATUS(&wc, IBV_WC_REM_INV_RD_REQ_ERR);
    EXPECT_EQ(wc.wr_id, 22);
    EXPECT_EQ(wc.vendor_err, EFASIM_VENDOR_UNKNOWN_DEST);
    efasim_expect_no_wc(p.rx.recv_cq, 200, "a receive of the wrong-Q-Key send");

    /* The receive posted above is still there for the right Q-Key. */
    efasim_fill(p.sbuf.addr, 64, 23);
    EXPECT_EQ(efasim_send(&p.tx, &p.to_rx, 23, &p.sbuf, 0, 64), 0);
    efasim_wait_wc(p.rx.recv_cq, &wc, "the receive with the right Q-Key");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.wr_id, 21);
    EXPECT_EQ(wc.byte_len, 64);
    EXPECT_EQ(efasim_check_fill(p.rbuf.addr, 64, 23), 64);
    efasim_wait_wc(p.tx.send_cq, &wc, "the send with the right Q-Key");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    efasim_pair_close(&p);
}

/*
 * A QPN that no longer exists: REM_INV_RD_REQ (vendor error 9), or, when
 * nothing answers there, a timeout: vendor error 13 (RESP_TIMEOUT) or 15
 * (GENERAL_ERR in rdma-core 44).
 */
EFARM_TEST(efasim_send_to_dead_qpn)
{
    const struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    struct efasim_dest dead;
    struct efasim_qp gone;
    struct efasim_pair p;
    struct efasim_wc wc;

    efasim_pair_open(&p, NULL, NULL);
    efasim_qp_open(&p.dev, &opts, &gone);
    dead = p.to_rx;
    dead.qpn = gone.qpn;
    efasim_qp_close(&gone);

    EXPECT_EQ(efasim_send(&p.tx, &dead, 31, &p.sbuf, 0, 64), 0);
    efasim_wait_wc_for(p.tx.send_cq, &wc, 25.0, "the send to a destroyed QP");
    if (!(wc.status == IBV_WC_REM_INV_RD_REQ_ERR && wc.vendor_err == EFASIM_VENDOR_UNKNOWN_DEST) &&
        !(wc.status == IBV_WC_RESP_TIMEOUT_ERR && wc.vendor_err == EFASIM_VENDOR_UNRESPONSIVE) &&
        !(wc.status == EFASIM_WC_UNREACHABLE && wc.vendor_err == EFASIM_VENDOR_UNREACHABLE))
        efarm_test_fail(__FILE__, __LINE__,
                        "send to a dead QPN completed with %s (vendor_err %u), expected "
                        "REM_INV_RD_REQ_ERR (9), RESP_TIMEOUT_ERR (13) or GENERAL_ERR (15)",
                        ibv_wc_status_str(wc.status), wc.vendor_err);
    EXPECT_EQ(wc.wr_id, 31);
    efasim_expect_no_wc(p.rx.recv_cq, 50, "the live QP");
    efasim_pair_close(&p);
}

/* ibv_create_cq + ibv_post_send/ibv_post_recv + ibv_poll_cq, no extended API. */
EFARM_TEST(efasim_legacy_cq_path)
{
    struct ibv_cq *scq, *rcq;
    struct efasim_pair p;
    struct ibv_qp *tx, *rx;
    struct ibv_wc wc;
    double deadline;
    int n;

    efasim_pair_open(&p, NULL, NULL);
    scq = ibv_create_cq(p.dev.ctx, 64, NULL, NULL, 0);
    rcq = ibv_create_cq(p.dev.ctx, 64, NULL, NULL, 0);
    EXPECT_TRUE(scq && rcq);

    struct ibv_qp_init_attr_ex attr = {
        .qp_type = IBV_QPT_DRIVER,
        .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1},
        .pd = p.dev.pd,
        .comp_mask = IBV_QP_INIT_ATTR_PD,
    };
    struct efadv_qp_init_attr efa_attr = {.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD};

    attr.send_cq = scq;
    attr.recv_cq = rcq;
    tx = efadv_create_qp_ex(p.dev.ctx, &attr, &efa_attr, sizeof(efa_attr));
    rx = efadv_create_qp_ex(p.dev.ctx, &attr, &efa_attr, sizeof(efa_attr));
    EXPECT_TRUE(tx && rx);
    efasim_qp_to_rts(tx, EFASIM_TEST_QKEY, EFASIM_RNR_RETRY_INFINITE);
    efasim_qp_to_rts(rx, EFASIM_TEST_QKEY, EFASIM_RNR_RETRY_INFINITE);
    EXPECT_EQ(ibv_poll_cq(rcq, 1, &wc), 0);

    struct ibv_sge rsge = {(uintptr_t)p.rbuf.addr, p.dev.mtu, p.rbuf.mr->lkey};
    struct ibv_recv_wr rwr = {.wr_id = 41, .sg_list = &rsge, .num_sge = 1}, *rbad = NULL;
    struct ibv_sge ssge = {(uintptr_t)p.sbuf.addr, 777, p.sbuf.mr->lkey};
    struct ibv_send_wr swr = {
        .wr_id = 42,
        .sg_list = &ssge,
        .num_sge = 1,
        .opcode = IBV_WR_SEND_WITH_IMM,
        .send_flags = IBV_SEND_SIGNALED,
        .imm_data = htobe32(0xcafe0042u),
        .wr.ud = {.ah = p.to_rx.ah, .remote_qpn = rx->qp_num, .remote_qkey = EFASIM_TEST_QKEY},
    };
    struct ibv_send_wr *sbad = NULL;

    efasim_fill(p.sbuf.addr, 777, 42);
    EXPECT_EQ(ibv_post_recv(rx, &rwr, &rbad), 0);
    EXPECT_EQ(ibv_post_send(tx, &swr, &sbad), 0);

    deadline = efasim_now() + EFASIM_WAIT_S;
    while ((n = ibv_poll_cq(rcq, 1, &wc)) == 0 && efasim_now() < deadline)
        efasim_sleep_ms(0);
    EXPECT_EQ(n, 1);
    if (wc.status != IBV_WC_SUCCESS)
        efarm_test_fail(__FILE__, __LINE__, "receive completed with %s (vendor_err %u)",
                        ibv_wc_status_str(wc.status), wc.vendor_err);
    EXPECT_EQ(wc.wr_id, 41);
    EXPECT_EQ(wc.opcode, IBV_WC_RECV);
    EXPECT_EQ(wc.byte_len, 777);
    EXPECT_EQ(wc.qp_num, rx->qp_num);
    EXPECT_EQ(wc.src_qp, tx->qp_num);
    EXPECT_EQ(wc.slid, efasim_ahn(p.to_rx.ah));
    EXPECT_EQ(wc.wc_flags & IBV_WC_WITH_IMM, IBV_WC_WITH_IMM);
    EXPECT_EQ(be32toh(wc.imm_data), 0xcafe0042u);
    EXPECT_EQ(efasim_check_fill(p.rbuf.addr, 777, 42), 777);

    deadline = efasim_now() + EFASIM_WAIT_S;
    while ((n = ibv_poll_cq(scq, 1, &wc)) == 0 && efasim_now() < deadline)
        efasim_sleep_ms(0);
    EXPECT_EQ(n, 1);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.wr_id, 42);
    EXPECT_EQ(wc.opcode, IBV_WC_SEND);
    EXPECT_EQ(ibv_poll_cq(scq, 1, &wc), 0);

    EXPECT_EQ(ibv_destroy_qp(tx), 0);
    EXPECT_EQ(ibv_destroy_qp(rx), 0);
    EXPECT_EQ(ibv_destroy_cq(scq), 0);
    EXPECT_EQ(ibv_destroy_cq(rcq), 0);
    efasim_pair_close(&p);
}
