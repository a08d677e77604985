/*
 * efasim CQs as rdma-core 44's EFA provider makes them: verbs of the same
 * context are callable between ibv_start_poll and ibv_end_poll (libfabric
 * posts receives, sends and registers memory while it processes completions),
 * creation is checked as EFA checks it, and only the accessors the wc_flags
 * ask for exist.
 */
#include <errno.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "efasim_common.h"

/* Everything below runs inside one poll section on rx's receive CQ. */
static void verbs_inside_poll(struct efasim_pair *p)
{
    struct ibv_ah_attr ah_attr = {.port_num = 1, .is_global = 1, .grh = {.dgid = p->dev.gid}};
    char scratch[4096];
    struct ibv_mr *mr;
    struct ibv_ah *ah;

    /* libfabric: the packet is handled, a receive is posted in its place. */
    efasim_post_recv(&p->rx, 2, &p->rbuf, p->dev.mtu, p->dev.mtu);
    /* A reply goes out from the handler: the send path takes the context too. */
    EXPECT_EQ(efasim_send(&p->tx, &p->to_rx, 3, &p->sbuf, 0, 100), 0);
    /* Memory registration and address handles from the handler. */
    mr = ibv_reg_mr(p->dev.pd, scratch, sizeof(scratch), IBV_ACCESS_LOCAL_WRITE);
    EXPECT_TRUE(mr != NULL);
    EXPECT_EQ(ibv_dereg_mr(mr), 0);
    ah = ibv_create_ah(p->dev.pd, &ah_attr);
    EXPECT_TRUE(ah != NULL);
    EXPECT_EQ(ibv_destroy_ah(ah), 0);
}

EFARM_TEST_TIMEOUT(efasim_cq_verbs_inside_poll_section, 10)
{
    struct ibv_poll_cq_attr attr = {.comp_mask = 0};
    struct efasim_pair p;
    struct efasim_wc wc;
    double deadline;
    int rc;

    efasim_pair_open(&p, NULL, NULL);
    efasim_post_recv(&p.rx, 1, &p.rbuf, 0, p.dev.mtu);
    EXPECT_EQ(efasim_send(&p.tx, &p.to_rx, 1, &p.sbuf, 0, 64), 0);

    deadline = efasim_now() + EFASIM_WAIT_S;
    while ((rc = ibv_start_poll(p.rx.recv_cq, &attr)) == ENOENT) {
        if (efasim_now() > deadline)
            efarm_test_fail(__FILE__, __LINE__, "no receive completion");
        efasim_sleep_ms(0);
    }
    EXPECT_EQ(rc, 0);
    EXPECT_EQ(p.rx.recv_cq->wr_id, 1);
    verbs_inside_poll(&p);
    /* The entry being read is still the same one. */
    EXPECT_EQ(p.rx.recv_cq->wr_id, 1);
    EXPECT_EQ(ibv_wc_read_byte_len(p.rx.recv_cq), 64);
    rc = ibv_next_poll(p.rx.recv_cq);
    EXPECT_TRUE(rc == 0 || rc == ENOENT);
    if (!rc)
        EXPECT_EQ(p.rx.recv_cq->wr_id, 2);
    ibv_end_poll(p.rx.recv_cq);

    /* What was posted inside the section works. */
    if (rc) {
        efasim_wait_wc(p.rx.recv_cq, &wc, "the receive posted inside the poll section");
        EXPECT_EQ(wc.wr_id, 2);
        EXPECT_EQ(wc.byte_len, 100);
    }
    efasim_wait_wc(p.tx.send_cq, &wc, "the first send");
    EXPECT_EQ(wc.wr_id, 1);
    efasim_wait_wc(p.tx.send_cq, &wc, "the send posted inside the poll section");
    EXPECT_EQ(wc.wr_id, 3);
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    efasim_pair_close(&p);
}

/* A NULL poll attribute crashes rdma-core's efa_start_poll, so efasim must not accept it. */
EFARM_TEST(efasim_cq_start_poll_null_attr_dies)
{
    struct efasim_pair p;
    pid_t pid;
    int status;

    efasim_pair_open(&p, NULL, NULL);
    pid = fork();
    EXPECT_TRUE(pid >= 0);
    if (pid == 0) {
        (void)ibv_start_poll(p.rx.recv_cq, NULL);
        _exit(0); /* accepted: what EFA does not do */
    }
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status));
    /* The drop-in aborts; rdma-core's own efa_start_poll reads through the NULL pointer. */
    EXPECT_EQ(WTERMSIG(status), efasim_kernel_front_end() ? SIGSEGV : SIGABRT);
}

EFARM_TEST(efasim_cq_creation_as_efa)
{
    struct efadv_cq_init_attr efa = {.wc_flags = EFADV_WC_EX_WITH_SGID};
    struct ibv_cq_init_attr_ex attr;
    struct efasim_dev dev;
    struct ibv_cq_ex *cq;

    efasim_dev_open(0, &dev);

    /* Only the accessors asked for; the depth rounded up to a power of two. */
    memset(&attr, 0, sizeof(attr));
    attr.cqe = 1000;
    attr.wc_flags = IBV_WC_EX_WITH_BYTE_LEN;
    cq = ibv_create_cq_ex(dev.ctx, &attr);
    EXPECT_TRUE(cq != NULL);
    EXPECT_EQ(ibv_cq_ex_to_cq(cq)->cqe, 1024);
    EXPECT_TRUE(cq->read_byte_len != NULL);
    EXPECT_TRUE(cq->read_opcode != NULL && cq->read_vendor_err != NULL);
    EXPECT_TRUE(cq->read_src_qp == NULL && cq->read_slid == NULL && cq->read_imm_data == NULL);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);

    /* Beyond the device's max_cqe: EINVAL, from the kernel on EFA. */
    memset(&attr, 0, sizeof(attr));
    attr.cqe = 1u << 20;
    errno = 0;
    EXPECT_TRUE(ibv_create_cq_ex(dev.ctx, &attr) == NULL);
    EXPECT_EQ(errno, EINVAL);

    /* wc_flags beyond the standard ones: EOPNOTSUPP. */
    memset(&attr, 0, sizeof(attr));
    attr.cqe = 16;
    attr.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
    errno = 0;
    EXPECT_TRUE(ibv_create_cq_ex(dev.ctx, &attr) == NULL);
    EXPECT_EQ(errno, EOPNOTSUPP);

    /* efadv: a comp_mask is a compatibility problem (EINVAL); SGID is offered. */
    memset(&attr, 0, sizeof(attr));
    attr.cqe = 16;
    efa.comp_mask = 1;
    errno = 0;
    EXPECT_TRUE(efadv_create_cq(dev.ctx, &attr, &efa, sizeof(efa)) == NULL);
    EXPECT_EQ(errno, EINVAL);
    efa.comp_mask = 0;
    cq = efadv_create_cq(dev.ctx, &attr, &efa, sizeof(efa));
    EXPECT_TRUE(cq != NULL);
    EXPECT_TRUE(efadv_cq_from_ibv_cq_ex(cq)->wc_read_sgid != NULL);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
    efasim_dev_close(&dev);
}

/*
 * A completion vector the context does not have is the uverbs core's first
 * check of CQ creation (EINVAL), through ibv_create_cq and ibv_create_cq_ex
 * alike; the last vector the context reports works.
 */
EFARM_TEST(efasim_cq_comp_vector_checked)
{
    struct ibv_cq_init_attr_ex attr;
    struct efasim_dev dev;
    struct ibv_cq_ex *cqx;
    struct ibv_cq *cq;
    int nvec;

    efasim_dev_open(0, &dev);
    nvec = dev.ctx->num_comp_vectors;
    EXPECT_TRUE(nvec >= 1);

    errno = 0;
    EXPECT_TRUE(ibv_create_cq(dev.ctx, 16, NULL, NULL, nvec) == NULL);
    EXPECT_EQ(errno, EINVAL);
    errno = 0;
    EXPECT_TRUE(ibv_create_cq(dev.ctx, 16, NULL, NULL, nvec + 1) == NULL);
    EXPECT_EQ(errno, EINVAL);
    cq = ibv_create_cq(dev.ctx, 16, NULL, NULL, nvec - 1);
    EXPECT_TRUE(cq != NULL);
    EXPECT_EQ(ibv_destroy_cq(cq), 0);

    memset(&attr, 0, sizeof(attr));
    attr.cqe = 16;
    attr.comp_vector = (uint32_t)nvec;
    errno = 0;
    EXPECT_TRUE(ibv_create_cq_ex(dev.ctx, &attr) == NULL);
    EXPECT_EQ(errno, EINVAL);
    attr.comp_vector = (uint32_t)nvec - 1;
    cqx = ibv_create_cq_ex(dev.ctx, &attr);
    EXPECT_TRUE(cqx != NULL);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0);
    efasim_dev_close(&dev);
}
