/*
 * efasim devices as libibverbs and libefa report them: names, ports, GIDs,
 * efadv attributes with their EFASIM_* overrides, and verbs efasim does not
 * implement failing cleanly.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "efasim_common.h"

#define EXPECT_GID(got, want)                                                                     \
    do {                                                                                          \
        char g_[64], w_[64];                                                                      \
        if (memcmp((got)->raw, (want)->raw, 16))                                                  \
            efarm_test_fail(__FILE__, __LINE__, "GID %s, expected %s", efasim_gid_str((got), g_), \
                            efasim_gid_str((want), w_));                                          \
    } while (0)

static void check_device_names(int want)
{
    struct ibv_device **list;
    int n = -1;

    list = ibv_get_device_list(&n);
    EXPECT_TRUE(list != NULL);
    EXPECT_EQ(n, want);
    for (int i = 0; i < n; i++) {
        char name[32];

        snprintf(name, sizeof(name), "efasim_%d", i);
        efarm_test_context("device %d", i);
        if (strcmp(ibv_get_device_name(list[i]), name))
            efarm_test_fail(__FILE__, __LINE__, "device %d is named %s, expected %s", i,
                            ibv_get_device_name(list[i]), name);
    }
    EXPECT_TRUE(list[n] == NULL);
    ibv_free_device_list(list);
}

static void check_port(const struct efasim_dev *dev, uint32_t mtu)
{
    struct ibv_device_attr attr;

    EXPECT_EQ(dev->port.state, IBV_PORT_ACTIVE);
    EXPECT_EQ(dev->port.max_msg_sz, mtu);
    EXPECT_TRUE(dev->port.gid_tbl_len >= 1);
    memset(&attr, 0, sizeof(attr));
    EXPECT_EQ(ibv_query_device(dev->ctx, &attr), 0);
    EXPECT_EQ(attr.phys_port_cnt, 1);
}

EFARM_TEST(efasim_device_defaults)
{
    const uint32_t caps = EFADV_DEVICE_ATTR_CAPS_RDMA_READ | EFADV_DEVICE_ATTR_CAPS_RNR_RETRY |
                          EFADV_DEVICE_ATTR_CAPS_CQ_WITH_SGID;
    struct ibv_port_attr port;
    struct efasim_dev dev;
    union ibv_gid want;

    check_device_names(1);
    efasim_dev_open(0, &dev);
    check_port(&dev, EFASIM_DEFAULT_MTU);
    efasim_gid_ipv4(&want, 127, 0, 0, 1);
    EXPECT_GID(&dev.gid, &want);

    EXPECT_EQ(dev.efa.max_sq_wr, EFASIM_DEFAULT_MAX_SQ_WR);
    EXPECT_EQ(dev.efa.max_rq_wr, EFASIM_DEFAULT_MAX_RQ_WR);
    EXPECT_EQ(dev.efa.max_sq_sge, EFASIM_DEFAULT_MAX_SQ_SGE);
    EXPECT_EQ(dev.efa.max_rq_sge, EFASIM_DEFAULT_MAX_RQ_SGE);
    EXPECT_EQ(dev.efa.inline_buf_size, EFASIM_DEFAULT_INLINE);
    EXPECT_EQ(dev.efa.max_rdma_size, EFASIM_DEFAULT_MAX_RDMA);
    EXPECT_EQ(dev.efa.device_caps & caps, caps);
    EXPECT_EQ(dev.efa.device_caps & EFASIM_CAPS_RDMA_WRITE, 0);

    /* There is one port. */
    EXPECT_TRUE(ibv_query_port(dev.ctx, 2, &port) != 0);
    efasim_dev_close(&dev);
}

/*
 * The device limits an EFA device reports (ibv_devinfo -v / efadv_query_device
 * on EC2, see src/efasim/README.md), which consumers size their pools from:
 * libfabric's receive pool is max_rq_wr / max_rq_sge rounded down to a power
 * of two (8192), not 32768.
 */
EFARM_TEST(efasim_device_limits_as_efa)
{
    struct ibv_device_attr a;
    struct efasim_dev dev;

    efasim_dev_open(0, &dev);
    memset(&a, 0, sizeof(a));
    EXPECT_EQ(ibv_query_device(dev.ctx, &a), 0);
    EXPECT_EQ(a.vendor_id, 0x1d0f);
    EXPECT_EQ(a.max_qp, 256);
    EXPECT_EQ(a.max_qp_wr, 4096); /* the smaller of max_sq_wr and max_rq_wr */
    EXPECT_EQ(a.max_sge, 2);
    EXPECT_EQ(a.max_sge_rd, 1);
    EXPECT_EQ(a.max_cq, 512);
    EXPECT_EQ(a.max_cqe, 32768);
    EXPECT_EQ(a.max_mr, 262144);
    EXPECT_EQ(a.max_mr_size, 103079215104ull);
    EXPECT_EQ(a.page_size_cap, 0xfffff000ull);
    EXPECT_EQ(a.max_pd, 256);
    EXPECT_EQ(a.max_ah, 1024);
    EXPECT_EQ(a.atomic_cap, IBV_ATOMIC_NONE);
    EXPECT_EQ(a.max_srq, 0);
    EXPECT_EQ(a.phys_port_cnt, 1);
    /* libibverbs fills phys_port_cnt_ex itself (ibv_cmd_query_device_any). */
    {
        struct ibv_device_attr_ex ax;

        memset(&ax, 0xff, sizeof(ax));
        EXPECT_EQ(ibv_query_device_ex(dev.ctx, NULL, &ax), 0);
        EXPECT_EQ(ax.orig_attr.phys_port_cnt, 1);
        EXPECT_EQ(ax.phys_port_cnt_ex, 1);
        EXPECT_EQ(ax.orig_attr.max_qp, 256);
    }
    EXPECT_EQ(dev.efa.max_rq_sge, 3);
    EXPECT_EQ(dev.port.max_msg_sz, 8928);
    EXPECT_EQ(dev.port.active_width, 2);
    EXPECT_EQ(dev.port.active_speed, 32);
    EXPECT_EQ(dev.port.lmc, 1);
    EXPECT_EQ(dev.port.gid_tbl_len, 1);
    /* libfabric 1.17 efa_prov_info_set_tx_rx_attr: rounddown_pow2(max_rq_wr / max_rq_sge). */
    {
        uint32_t per_wr = dev.efa.max_rq_wr / dev.efa.max_rq_sge, rx_size = 1;

        while (rx_size * 2 <= per_wr)
            rx_size *= 2;
        EXPECT_EQ(rx_size, 8192);
    }
    efasim_dev_close(&dev);
}

/* An MR beyond max_mr_size is refused with EINVAL, as EFA's kernel driver refuses it. */
EFARM_TEST(efasim_device_mr_size_limit)
{
    static char region[3 << 20];
    struct efasim_dev dev;
    struct ibv_mr *mr;

    efasim_setenv("EFASIM_MAX_MR_SIZE", "2097152");
    efasim_dev_open(0, &dev);
    mr = ibv_reg_mr(dev.pd, region, 2u << 20, IBV_ACCESS_LOCAL_WRITE);
    EXPECT_TRUE(mr != NULL);
    EXPECT_EQ(ibv_dereg_mr(mr), 0);
    errno = 0;
    EXPECT_TRUE(ibv_reg_mr(dev.pd, region, (2u << 20) + 1, IBV_ACCESS_LOCAL_WRITE) == NULL);
    EXPECT_EQ(errno, EINVAL);
    efasim_dev_close(&dev);
}

/*
 * A PD in use by an MR, an AH or a QP cannot be deallocated: EBUSY, as the
 * kernel's core answers from the PD's use count; once they are gone it can.
 */
EFARM_TEST(efasim_device_pd_busy)
{
    static char region[4096];
    struct efasim_dev dev;
    struct ibv_pd *pd;
    struct ibv_mr *mr;
    struct ibv_ah *ah;
    struct ibv_cq_ex *cq;
    struct ibv_qp *qp;
    struct ibv_qp_init_attr_ex attr = {0};
    struct efadv_qp_init_attr efa = {.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD};

    efasim_dev_open(0, &dev);
    pd = ibv_alloc_pd(dev.ctx);
    EXPECT_TRUE(pd != NULL);
    mr = ibv_reg_mr(pd, region, sizeof(region), IBV_ACCESS_LOCAL_WRITE);
    EXPECT_TRUE(mr != NULL);
    EXPECT_EQ(ibv_dealloc_pd(pd), EBUSY);
    EXPECT_EQ(ibv_dereg_mr(mr), 0);
    ah = ibv_create_ah(
        pd, &(struct ibv_ah_attr){.port_num = 1, .is_global = 1, .grh = {.dgid = dev.gid}});
    EXPECT_TRUE(ah != NULL);
    EXPECT_EQ(ibv_dealloc_pd(pd), EBUSY);
    EXPECT_EQ(ibv_destroy_ah(ah), 0);
    cq = efasim_cq_create(&dev, 16);
    attr.qp_type = IBV_QPT_DRIVER;
    attr.send_cq = ibv_cq_ex_to_cq(cq);
    attr.recv_cq = ibv_cq_ex_to_cq(cq);
    attr.cap = (struct ibv_qp_cap){
        .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1};
    attr.pd = pd;
    attr.comp_mask = IBV_QP_INIT_ATTR_PD;
    qp = efadv_create_qp_ex(dev.ctx, &attr, &efa, sizeof(efa));
    EXPECT_TRUE(qp != NULL);
    EXPECT_EQ(ibv_dealloc_pd(pd), EBUSY);
    EXPECT_EQ(ibv_destroy_qp(qp), 0);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
    EXPECT_EQ(ibv_dealloc_pd(pd), 0);
    efasim_dev_close(&dev);
}

/*
 * ibv_reg_dmabuf_mr is refused as EFA's driver refuses it where no device exports
 * dma-bufs: a descriptor of no open file EBADF (dma_buf_get), a file that is no
 * dma-buf EINVAL, an offset and IOVA apart within a page EINVAL (the core's check,
 * before the descriptor is looked at), an access EFA does not offer EOPNOTSUPP.
 */
EFARM_TEST(efasim_device_dmabuf_mr_refused)
{
    struct efasim_dev dev;
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

    EXPECT_TRUE(fd >= 0);
    efasim_setenv("EFASIM_RDMA_WRITE", "0");
    efasim_dev_open(0, &dev);
    errno = 0;
    EXPECT_TRUE(ibv_reg_dmabuf_mr(dev.pd, 0, 4096, 0, -2, IBV_ACCESS_LOCAL_WRITE) == NULL);
    EXPECT_EQ(errno, EBADF);
    errno = 0;
    EXPECT_TRUE(ibv_reg_dmabuf_mr(dev.pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE) == NULL);
    EXPECT_EQ(errno, EBADF);
    errno = 0;
    EXPECT_TRUE(ibv_reg_dmabuf_mr(dev.pd, 0, 4096, 0, fd, IBV_ACCESS_LOCAL_WRITE) == NULL);
    EXPECT_EQ(errno, EINVAL);
    errno = 0;
    EXPECT_TRUE(ibv_reg_dmabuf_mr(dev.pd, 0, 4096, 8, -2, IBV_ACCESS_LOCAL_WRITE) == NULL);
    EXPECT_EQ(errno, EINVAL);
    errno = 0;
    EXPECT_TRUE(ibv_reg_dmabuf_mr(dev.pd, 0, 4096, 0, fd,
                                  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) == NULL);
    EXPECT_EQ(errno, EOPNOTSUPP);
    efasim_dev_close(&dev);
    close(fd);
}

/*
 * MR keys fit in 24 bits, as EFA's work queue descriptors carry an lkey
 * (rdma-core's efa_io_defs.h: EFA_IO_TX_BUF_DESC_LKEY_MASK and
 * EFA_IO_RX_DESC_LKEY_MASK are GENMASK(23, 0)), and the key of a deregistered
 * MR matches no later one: over many registrations in a small table, where
 * every slot is taken again and again, no key repeats, and a send through a
 * stale lkey fails with a local protection error while the new key over the
 * same memory works.
 */
static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return x < y ? -1 : x > y;
}

EFARM_TEST(efasim_device_mr_keys_24_bits)
{
    enum { ROUNDS = 600, LIVE = 2 };
    static uint32_t keys[ROUNDS];
    struct ibv_mr *live[LIVE] = {NULL};
    struct efasim_buf stale_buf, new_buf;
    struct ibv_mr stale_mr;
    struct efasim_pair p;
    struct efasim_wc wc;

    /* The pair's own two MRs, the live ones, and a dozen free slots taken in turn. */
    efasim_setenv("EFASIM_MAX_MR", "16");
    efasim_pair_open(&p, NULL, NULL);
    for (unsigned i = 0; i < ROUNDS; i++) {
        struct ibv_mr **mr = &live[i % LIVE];

        if (*mr)
            EXPECT_EQ(ibv_dereg_mr(*mr), 0);
        *mr = ibv_reg_mr(p.dev.pd, p.sbuf.addr, p.sbuf.len, IBV_ACCESS_LOCAL_WRITE);
        EXPECT_TRUE(*mr != NULL);
        efarm_test_context("registration %u: lkey 0x%x rkey 0x%x", i, (*mr)->lkey, (*mr)->rkey);
        EXPECT_TRUE((*mr)->lkey != 0 && (*mr)->lkey < (1u << 24));
        EXPECT_TRUE((*mr)->rkey < (1u << 24));
        keys[i] = (*mr)->lkey;
    }
    qsort(keys, ROUNDS, sizeof(keys[0]), cmp_u32);
    for (unsigned i = 1; i < ROUNDS; i++) {
        efarm_test_context("key 0x%x handed out twice in %u registrations", keys[i], ROUNDS);
        EXPECT_TRUE(keys[i] != keys[i - 1]);
    }

    /* The same memory registered again: the old lkey is refused, the new one works. */
    stale_mr = *live[0];
    EXPECT_EQ(ibv_dereg_mr(live[0]), 0);
    live[0] = ibv_reg_mr(p.dev.pd, p.sbuf.addr, p.sbuf.len, IBV_ACCESS_LOCAL_WRITE);
    EXPECT_TRUE(live[0] != NULL);
    EXPECT_TRUE(live[0]->lkey != stale_mr.lkey);
    stale_buf = (struct efasim_buf){.addr = p.sbuf.addr, .len = p.sbuf.len, .mr = &stale_mr};
    new_buf = (struct efasim_buf){.addr = p.sbuf.addr, .len = p.sbuf.len, .mr = live[0]};
    efasim_post_recv(&p.rx, 7, &p.rbuf, 0, p.dev.mtu);
    EXPECT_EQ(efasim_send(&p.tx, &p.to_rx, 1, &stale_buf, 0, 64), 0);
    efasim_wait_wc(p.tx.send_cq, &wc, "the send through a stale lkey");
    EXPECT_EQ(wc.wr_id, 1);
    EXPECT_WC_STATUS(&wc, IBV_WC_LOC_PROT_ERR);
    EXPECT_EQ(efasim_send(&p.tx, &p.to_rx, 2, &new_buf, 0, 64), 0);
    efasim_wait_wc(p.tx.send_cq, &wc, "the send through the new lkey");
    EXPECT_EQ(wc.wr_id, 2);
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    efasim_wait_wc(p.rx.recv_cq, &wc, "the receive of the send through the new lkey");
    EXPECT_EQ(wc.wr_id, 7);
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    for (unsigned i = 0; i < LIVE; i++)
        EXPECT_EQ(ibv_dereg_mr(live[i]), 0);
    efasim_pair_close(&p);
}

/*
 * max_qp bounds the device, over all of the process's contexts (as EFA's
 * counts every QP on the device): with EFASIM_MAX_QP=2, two contexts of one
 * device hold two QPs between them, a third is refused with ENOMEM until one
 * is destroyed; another device has its own two.
 */
/*
 * A device address of the test's own (loopback, from the process id), so that
 * other programs' QPs on 127.0.0.1 (efasim counts the host's) do not count.
 */
static void private_device_addr(void)
{
    char addr[32];
    unsigned id = (unsigned)getpid();

    snprintf(addr, sizeof(addr), "127.%u.%u.1", 100 + (id >> 8) % 150, id & 0xff);
    efasim_setenv("EFASIM_ADDR", addr);
}

/* A QP the device must refuse: max_qp is reached (ENOMEM, as EFA's provider says). */
static void expect_qp_refused(struct efasim_dev *dev, struct ibv_cq_ex *cq)
{
    struct ibv_qp *q = efasim_qp_create_raw(dev, cq);

    EXPECT_TRUE(q == NULL);
    EXPECT_EQ(errno, ENOMEM);
}

EFARM_TEST(efasim_device_max_qp_per_device)
{
    struct efasim_dev a, b, other;
    struct ibv_cq_ex *cqa, *cqb, *cqo;
    struct ibv_qp *qa, *qb, *q3, *qo[2];

    private_device_addr();
    efasim_setenv("EFASIM_NDEV", "2");
    efasim_setenv("EFASIM_MAX_QP", "2");
    efasim_dev_open(0, &a);
    efasim_dev_open(0, &b);
    efasim_dev_open(1, &other);
    EXPECT_EQ(a.ctx != b.ctx, 1);
    cqa = efasim_cq_create(&a, 64);
    cqb = efasim_cq_create(&b, 64);
    cqo = efasim_cq_create(&other, 64);
    qa = efasim_qp_create_raw(&a, cqa);
    EXPECT_TRUE(qa != NULL);
    qb = efasim_qp_create_raw(&b, cqb);
    EXPECT_TRUE(qb != NULL);
    efarm_test_context("a third QP on efasim_0, in either context");
    expect_qp_refused(&a, cqa);
    expect_qp_refused(&b, cqb);
    efarm_test_context("efasim_1 counts its own");
    qo[0] = efasim_qp_create_raw(&other, cqo);
    qo[1] = efasim_qp_create_raw(&other, cqo);
    EXPECT_TRUE(qo[0] != NULL && qo[1] != NULL);
    efarm_test_context("a QP destroyed gives its place back");
    EXPECT_EQ(ibv_destroy_qp(qa), 0);
    q3 = efasim_qp_create_raw(&b, cqb);
    EXPECT_TRUE(q3 != NULL);
    EXPECT_EQ(ibv_destroy_qp(q3), 0);
    EXPECT_EQ(ibv_destroy_qp(qb), 0);
    EXPECT_EQ(ibv_destroy_qp(qo[0]), 0);
    EXPECT_EQ(ibv_destroy_qp(qo[1]), 0);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cqa)), 0);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cqb)), 0);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cqo)), 0);
    efasim_dev_close(&other);
    efasim_dev_close(&b);
    efasim_dev_close(&a);
}

/*
 * A device address the host does not have (EFASIM_ADDR in TEST-NET-1): the QP
 * cannot be opened (errno EADDRNOTAVAIL, from the socket under it, not the
 * ENOMEM of the device's max_qp), and efasim says once which address is
 * missing and which knob to set.
 */
EFARM_TEST(efasim_device_addr_not_on_host)
{
    char path[] = "/tmp/efasim-test-addr-XXXXXX", line[512] = "";
    struct efasim_dev d;
    struct ibv_cq_ex *cq;
    struct ibv_qp *q;
    int fd, saved, err;
    FILE *f;

    efasim_setenv("EFASIM_ADDR", "192.0.2.1");
    efasim_dev_open(0, &d);
    cq = efasim_cq_create(&d, 64);
    fd = mkstemp(path);
    EXPECT_TRUE(fd >= 0);
    fflush(stderr);
    saved = dup(2);
    EXPECT_TRUE(saved >= 0 && dup2(fd, 2) == 2);
    q = efasim_qp_create_raw(&d, cq);
    err = errno;
    EXPECT_TRUE(efasim_qp_create_raw(&d, cq) == NULL); /* said once */
    fflush(stderr);
    EXPECT_TRUE(dup2(saved, 2) == 2);
    close(saved);
    close(fd);
    EXPECT_TRUE(q == NULL);
    EXPECT_EQ(err, EADDRNOTAVAIL);
    f = fopen(path, "r");
    EXPECT_TRUE(f != NULL);
    EXPECT_TRUE(fgets(line, sizeof(line), f) != NULL);
    EXPECT_TRUE(strstr(line, "efasim_0 cannot open a QP: its address 192.0.2.1 is not one of "
                             "this host's") != NULL);
    EXPECT_TRUE(strstr(line, "EFASIM_NDEV") != NULL);
    EXPECT_TRUE(fgets(line, sizeof(line), f) == NULL);
    fclose(f);
    unlink(path);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
    efasim_dev_close(&d);
}

/*
 * QP numbers as EFA's device gives them: from 0 up to max_qp - 1, the lowest
 * free one first, a destroyed QP's number given out again (rdma-core's EFA
 * provider looks a completion's QP up by qp_num in a table of the next power
 * of two of max_qp entries: a number beyond would alias another QP). Number n
 * is the socket bound to EFASIM_QPN_PORT + n on the device's address.
 */
EFARM_TEST(efasim_device_qp_numbers_as_efa)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};
    struct ibv_qp *q[4], *again;
    struct efasim_dev dev;
    struct ibv_cq_ex *cq;
    int fd;

    private_device_addr();
    efasim_setenv("EFASIM_MAX_QP", "4");
    efasim_dev_open(0, &dev);
    cq = efasim_cq_create(&dev, 64);
    for (uint32_t i = 0; i < 4; i++) {
        q[i] = efasim_qp_create_raw(&dev, cq);
        EXPECT_TRUE(q[i] != NULL);
        EXPECT_EQ(q[i]->qp_num, i);
    }
    efarm_test_context("a fifth QP: every number is taken");
    expect_qp_refused(&dev, cq);
    efarm_test_context("QP number 2's port is held on the device's address");
    EXPECT_EQ(inet_pton(AF_INET, getenv("EFASIM_ADDR"), &sin.sin_addr), 1);
    sin.sin_port = htons(efarm_test_qpn_port(2));
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    EXPECT_TRUE(fd >= 0);
    EXPECT_EQ(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), -1);
    EXPECT_EQ(errno, EADDRINUSE);
    close(fd);
    efarm_test_context("a destroyed QP's number is the next one given");
    EXPECT_EQ(ibv_destroy_qp(q[1]), 0);
    again = efasim_qp_create_raw(&dev, cq);
    EXPECT_TRUE(again != NULL);
    EXPECT_EQ(again->qp_num, 1);
    EXPECT_EQ(ibv_destroy_qp(again), 0);
    for (uint32_t i = 0; i < 4; i++)
        if (i != 1)
            EXPECT_EQ(ibv_destroy_qp(q[i]), 0);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
    efasim_dev_close(&dev);
}

/*
 * Another process's QPs on the device count too, as on EFA: with a child
 * holding one of EFASIM_MAX_QP=2, this process gets one, and the other when
 * the child has gone.
 */
EFARM_TEST(efasim_device_max_qp_across_processes)
{
    struct efasim_dev dev;
    struct ibv_cq_ex *cq;
    struct ibv_qp *q1, *q2;
    int up[2], down[2], status;
    char byte = 0;
    pid_t child;

    private_device_addr();
    efasim_setenv("EFASIM_MAX_QP", "2");
    EXPECT_EQ(pipe(up), 0);
    EXPECT_EQ(pipe(down), 0);
    fflush(NULL);
    /* Before this process touches verbs: a child must not inherit efasim's threads. */
    child = fork();
    EXPECT_TRUE(child >= 0);
    if (!child) {
        struct efasim_dev cdev;
        struct ibv_cq_ex *ccq;
        struct ibv_qp *cq1;

        close(up[0]);
        close(down[1]);
        efasim_dev_open(0, &cdev);
        ccq = efasim_cq_create(&cdev, 64);
        cq1 = efasim_qp_create_raw(&cdev, ccq);
        byte = cq1 != NULL;
        efarm_test_pipe_write(up[1], &byte, 1);
        efarm_test_pipe_read(down[0], &byte, 1, "the parent's word to go");
        _exit(0); /* the QP's socket goes with the process, as a QP with its owner */
    }
    close(up[1]);
    close(down[0]);
    efarm_test_pipe_read(up[0], &byte, 1, "the child's QP");
    EXPECT_EQ(byte, 1);
    efasim_dev_open(0, &dev);
    cq = efasim_cq_create(&dev, 64);
    q1 = efasim_qp_create_raw(&dev, cq);
    EXPECT_TRUE(q1 != NULL);
    efarm_test_context("the device holds the child's QP and this one");
    expect_qp_refused(&dev, cq);
    efarm_test_context("the child has gone");
    efarm_test_pipe_write(down[1], &byte, 1);
    EXPECT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    q2 = efasim_qp_create_raw(&dev, cq);
    EXPECT_TRUE(q2 != NULL);
    EXPECT_EQ(ibv_destroy_qp(q2), 0);
    EXPECT_EQ(ibv_destroy_qp(q1), 0);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
    efasim_dev_close(&dev);
    close(up[0]);
    close(down[1]);
}

EFARM_TEST(efasim_device_env_overrides)
{
    struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    struct efasim_pair p;
    union ibv_gid want;
    int rc;

    efasim_setenv("EFASIM_MTU", "4096");
    efasim_setenv("EFASIM_INLINE", "64");
    efasim_setenv("EFASIM_MAX_SQ_WR", "512");
    efasim_setenv("EFASIM_MAX_RQ_WR", "1024");
    efasim_setenv("EFASIM_MAX_RDMA_SIZE", "65536");
    efasim_setenv("EFASIM_RDMA_READ", "0");
    efasim_setenv("EFASIM_RDMA_WRITE", "1");
    efasim_setenv("EFASIM_ADDR", "127.0.0.9");

    opts.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
    efasim_pair_open(&p, &opts, &opts);
    check_port(&p.dev, 4096);
    efasim_gid_ipv4(&want, 127, 0, 0, 9);
    EXPECT_GID(&p.dev.gid, &want);
    EXPECT_EQ(p.dev.efa.inline_buf_size, 64);
    EXPECT_EQ(p.dev.efa.max_sq_wr, 512);
    EXPECT_EQ(p.dev.efa.max_rq_wr, 1024);
    EXPECT_EQ(p.dev.efa.max_rdma_size, 65536);
    EXPECT_EQ(p.dev.efa.device_caps & EFADV_DEVICE_ATTR_CAPS_RDMA_READ, 0);
    /* The write capability reaches a program only through a provider that knows it (45 on). */
    if (!efasim_kernel_front_end())
        EXPECT_EQ(p.dev.efa.device_caps & EFASIM_CAPS_RDMA_WRITE, EFASIM_CAPS_RDMA_WRITE);

    /* The smaller MTU is the message limit on the wire too. */
    efarm_test_context("4096-byte send at EFASIM_MTU=4096");
    efasim_pair_roundtrip(&p, 4096, EFASIM_API_WR);
    efarm_test_context("4097-byte send at EFASIM_MTU=4096");
    efasim_post_recv(&p.rx, 1, &p.rbuf, 0, 8192);
    rc = efasim_send(&p.tx, &p.to_rx, 2, &p.sbuf, 0, 4097);
    if (!rc) {
        struct efasim_wc wc;

        efasim_wait_wc(p.tx.send_cq, &wc, "the 4097-byte send");
        EXPECT_WC_STATUS(&wc, IBV_WC_LOC_LEN_ERR);
    }
    efasim_expect_no_wc(p.rx.recv_cq, 100, "a receive of the oversized send");
    efasim_pair_close(&p);
}

EFARM_TEST(efasim_device_three)
{
    struct efasim_dev dev[3];

    efasim_setenv("EFASIM_NDEV", "3");
    check_device_names(3);
    for (int i = 0; i < 3; i++) {
        union ibv_gid want;

        efarm_test_context("efasim_%d", i);
        efasim_dev_open(i, &dev[i]);
        check_port(&dev[i], EFASIM_DEFAULT_MTU);
        efasim_gid_ipv4(&want, 127, 0, 0, (uint8_t)(1 + i));
        EXPECT_GID(&dev[i].gid, &want);
    }
    for (int i = 0; i < 3; i++)
        efasim_dev_close(&dev[i]);
}

/* rc from a verb that returns an errno value: EOPNOTSUPP, or -1 with errno set to it. */
static void expect_unsupported_rc(int rc, const char *what)
{
    if (rc == EOPNOTSUPP || (rc == -1 && errno == EOPNOTSUPP))
        return;
    efarm_test_fail(__FILE__, __LINE__, "%s returned %d (errno %d: %s), expected EOPNOTSUPP", what,
                    rc, errno, strerror(errno));
}

EFARM_TEST(efasim_unsupported_verbs_fail_cleanly)
{
    struct ibv_srq_init_attr srq_attr = {.attr = {.max_wr = 16, .max_sge = 1}};
    struct ibv_xrcd_init_attr xrcd_attr = {
        .comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
        .fd = -1,
        .oflags = 0,
    };
    struct ibv_qp_init_attr rc_attr;
    struct efasim_pair p;
    union ibv_gid mgid;
    struct ibv_srq *srq;
    struct ibv_xrcd *xrcd;
    struct ibv_mw *mw;
    struct ibv_qp *qp;

    efasim_pair_open(&p, NULL, NULL);

    errno = 0;
    srq = ibv_create_srq(p.dev.pd, &srq_attr);
    EXPECT_TRUE(srq == NULL);
    EXPECT_EQ(errno, EOPNOTSUPP);

    errno = 0;
    mw = ibv_alloc_mw(p.dev.pd, IBV_MW_TYPE_1);
    EXPECT_TRUE(mw == NULL);
    EXPECT_TRUE(errno == EOPNOTSUPP || errno == ENOSYS);

    errno = 0;
    xrcd = ibv_open_xrcd(p.dev.ctx, &xrcd_attr);
    EXPECT_TRUE(xrcd == NULL);
    EXPECT_TRUE(errno == EOPNOTSUPP || errno == ENOSYS);

    memset(&mgid, 0, sizeof(mgid));
    mgid.raw[0] = 0xff;
    mgid.raw[15] = 1;
    errno = 0;
    expect_unsupported_rc(ibv_attach_mcast(p.rx.qp, &mgid, 0), "ibv_attach_mcast");
    errno = 0;
    expect_unsupported_rc(ibv_detach_mcast(p.rx.qp, &mgid, 0), "ibv_detach_mcast");

    /* EFA has no RC QPs: creation fails with an error code, not a crash. */
    memset(&rc_attr, 0, sizeof(rc_attr));
    rc_attr.send_cq = ibv_cq_ex_to_cq(p.tx.send_cq);
    rc_attr.recv_cq = ibv_cq_ex_to_cq(p.tx.recv_cq);
    rc_attr.qp_type = IBV_QPT_RC;
    rc_attr.cap.max_send_wr = 16;
    rc_attr.cap.max_recv_wr = 16;
    rc_attr.cap.max_send_sge = 1;
    rc_attr.cap.max_recv_sge = 1;
    errno = 0;
    qp = ibv_create_qp(p.dev.pd, &rc_attr);
    EXPECT_TRUE(qp == NULL);
    EXPECT_TRUE(errno != 0);

    /* Nothing above broke the device. */
    efasim_pair_roundtrip(&p, 100, EFASIM_API_WR);
    efasim_pair_close(&p);
}

/* ibv_reg_mr's access flags and efadv_query_device's inlen, as EFA checks them. */
EFARM_TEST(efasim_device_access_and_query_as_efa)
{
    static char region[4096];
    struct efadv_device_attr attr;
    struct efasim_dev dev;
    struct ibv_mr *mr;

    efasim_dev_open(0, &dev);
    /* Remote write is not offered (RDMA write off): EOPNOTSUPP; no local write granted unasked. */
    errno = 0;
    EXPECT_TRUE(ibv_reg_mr(dev.pd, region, sizeof(region),
                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) == NULL);
    EXPECT_EQ(errno, EOPNOTSUPP);
    errno = 0;
    EXPECT_TRUE(ibv_reg_mr(dev.pd, region, sizeof(region),
                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC) == NULL);
    EXPECT_EQ(errno, EOPNOTSUPP);
    mr = ibv_reg_mr(dev.pd, region, sizeof(region), IBV_ACCESS_REMOTE_READ);
    EXPECT_TRUE(mr != NULL);
    EXPECT_EQ(ibv_dereg_mr(mr), 0);
    mr = ibv_reg_mr(dev.pd, region, sizeof(region),
                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
    EXPECT_TRUE(mr != NULL); /* an optional flag is dropped, not refused */
    EXPECT_EQ(ibv_dereg_mr(mr), 0);

    /* inlen must reach inline_buf_size; shorter structures get no caps or RDMA size. */
    EXPECT_EQ(efadv_query_device(dev.ctx, &attr, offsetof(struct efadv_device_attr, max_sq_sge)),
              EINVAL);
    memset(&attr, 0xff, sizeof(attr));
    EXPECT_EQ(efadv_query_device(dev.ctx, &attr, offsetof(struct efadv_device_attr, device_caps)),
              0);
    EXPECT_EQ(attr.inline_buf_size, EFASIM_DEFAULT_INLINE);
    EXPECT_EQ(attr.device_caps, 0xffffffffu); /* beyond inlen: untouched */
    memset(&attr, 0, sizeof(attr));
    EXPECT_EQ(efadv_query_device(dev.ctx, &attr, offsetof(struct efadv_device_attr, max_rdma_size)),
              0);
    EXPECT_EQ(attr.device_caps & EFADV_DEVICE_ATTR_CAPS_RDMA_READ, 0);
    EXPECT_TRUE(attr.device_caps & EFADV_DEVICE_ATTR_CAPS_RNR_RETRY);
    efasim_dev_close(&dev);
}

/* With RDMA write offered, remote write needs local write too (EINVAL), as ib_check_mr_access. */
EFARM_TEST(efasim_device_remote_write_needs_local_write)
{
    static char region[4096];
    struct efasim_dev dev;
    struct ibv_mr *mr;

    efasim_setenv("EFASIM_RDMA_WRITE", "1");
    efasim_dev_open(0, &dev);
    errno = 0;
    EXPECT_TRUE(ibv_reg_mr(dev.pd, region, sizeof(region), IBV_ACCESS_REMOTE_WRITE) == NULL);
    EXPECT_EQ(errno, EINVAL);
    mr = ibv_reg_mr(dev.pd, region, sizeof(region),
                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    EXPECT_TRUE(mr != NULL);
    EXPECT_EQ(ibv_dereg_mr(mr), 0);
    efasim_dev_close(&dev);
}
