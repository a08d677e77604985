/*
 * Helpers for efasim's verbs-level tests: see efasim_common.h.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <ftw.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "efasim_common.h"

void efasim_expect_status(const char *file, int line, const struct efasim_wc *wc,
                          enum ibv_wc_status want)
{
    if (wc->status != want)
        efarm_test_fail(file, line,
                        "completion of wr_id 0x%" PRIx64 ": status %d (%s, vendor_err %u), "
                        "expected %d (%s)",
                        wc->wr_id, wc->status, ibv_wc_status_str(wc->status), wc->vendor_err, want,
                        ibv_wc_status_str(want));
}

void efasim_setenv(const char *name, const char *value)
{
    if (setenv(name, value, 1))
        efarm_test_fail(__FILE__, __LINE__, "setenv(%s): %s", name, strerror(errno));
}

static char g_private_sysfs[] = "/tmp/efasim-test-sysfs-XXXXXX";
static pid_t g_private_sysfs_owner;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    (void)remove(path); /* best effort */
    return 0;
}

static void private_sysfs_remove(void)
{
    if (getpid() == g_private_sysfs_owner) /* not from a forked child's exit */
        nftw(g_private_sysfs, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void efasim_private_sysfs(void)
{
    if (!mkdtemp(g_private_sysfs))
        efarm_test_fail(__FILE__, __LINE__, "mkdtemp: %s", strerror(errno));
    g_private_sysfs_owner = getpid();
    atexit(private_sysfs_remove);
    efasim_setenv("SYSFS_PATH", g_private_sysfs);
}

double efasim_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void efasim_sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

const char *efasim_gid_str(const union ibv_gid *gid, char *buf)
{
    if (!inet_ntop(AF_INET6, gid->raw, buf, 64))
        snprintf(buf, 64, "(bad gid)");
    return buf;
}

void efasim_gid_ipv4(union ibv_gid *gid, uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
    memset(gid, 0, sizeof(*gid));
    gid->raw[10] = 0xff;
    gid->raw[11] = 0xff;
    gid->raw[12] = a;
    gid->raw[13] = b;
    gid->raw[14] = c;
    gid->raw[15] = d;
}

void efasim_dev_open(int index, struct efasim_dev *dev)
{
    struct ibv_device **list;
    char want[32];
    int n = 0;

    memset(dev, 0, sizeof(*dev));
    snprintf(want, sizeof(want), "efasim_%d", index);
    list = ibv_get_device_list(&n);
    if (!list)
        efarm_test_fail(__FILE__, __LINE__, "ibv_get_device_list: %s", strerror(errno));
    for (int i = 0; i < n && !dev->ctx; i++) {
        if (strcmp(ibv_get_device_name(list[i]), want))
            continue;
        dev->ctx = ibv_open_device(list[i]);
        if (!dev->ctx)
            efarm_test_fail(__FILE__, __LINE__, "ibv_open_device(%s): %s", want, strerror(errno));
    }
    ibv_free_device_list(list);
    if (!dev->ctx)
        efarm_test_fail(__FILE__, __LINE__,
                        "no device %s among %d (is LD_LIBRARY_PATH set to efasim's .libs?)", want,
                        n);

    int rc = ibv_query_port(dev->ctx, 1, &dev->port);
    if (rc)
        efarm_test_fail(__FILE__, __LINE__, "ibv_query_port(%s, 1): %d", want, rc);
    rc = ibv_query_gid(dev->ctx, 1, 0, &dev->gid);
    if (rc)
        efarm_test_fail(__FILE__, __LINE__, "ibv_query_gid(%s, 1, 0): %d", want, rc);
    rc = efadv_query_device(dev->ctx, &dev->efa, sizeof(dev->efa));
    if (rc)
        efarm_test_fail(__FILE__, __LINE__, "efadv_query_device(%s): %d", want, rc);
    dev->mtu = dev->port.max_msg_sz;
    dev->pd = ibv_alloc_pd(dev->ctx);
    if (!dev->pd)
        efarm_test_fail(__FILE__, __LINE__, "ibv_alloc_pd(%s): %s", want, strerror(errno));
}

void efasim_dev_close(struct efasim_dev *dev)
{
    EXPECT_EQ(ibv_dealloc_pd(dev->pd), 0);
    EXPECT_EQ(ibv_close_device(dev->ctx), 0);
    memset(dev, 0, sizeof(*dev));
}

struct ibv_cq_ex *efasim_cq_create(struct efasim_dev *dev, uint32_t cqe)
{
    struct ibv_cq_init_attr_ex attr = {
        .cqe = cqe,
        .wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
                    IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID,
    };
    struct efadv_cq_init_attr efa_attr = {.wc_flags = EFADV_WC_EX_WITH_SGID};
    struct ibv_cq_ex *cq = efadv_create_cq(dev->ctx, &attr, &efa_attr, sizeof(efa_attr));

    if (!cq)
        efarm_test_fail(__FILE__, __LINE__, "efadv_create_cq(cqe %u): %s", cqe, strerror(errno));
    return cq;
}

void efasim_qp_to_rts(struct ibv_qp *qp, uint32_t qkey, uint8_t rnr_retry)
{
    struct ibv_qp_attr attr = {
        .qp_state = IBV_QPS_INIT,
        .pkey_index = 0,
        .port_num = 1,
        .qkey = qkey,
    };
    int rc = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);

    if (rc)
        efarm_test_fail(__FILE__, __LINE__, "ibv_modify_qp(INIT): %d", rc);
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_RTR;
    rc = ibv_modify_qp(qp, &attr, IBV_QP_STATE);
    if (rc)
        efarm_test_fail(__FILE__, __LINE__, "ibv_modify_qp(RTR): %d", rc);
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn = 0;
    attr.rnr_retry = rnr_retry;
    rc = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RNR_RETRY);
    if (rc)
        efarm_test_fail(__FILE__, __LINE__, "ibv_modify_qp(RTS): %d", rc);
}

struct ibv_qp_init_attr_ex efasim_srd_qp_attr(struct efasim_dev *dev, struct ibv_cq_ex *cq,
                                              uint64_t send_ops_flags)
{
    struct ibv_qp_init_attr_ex attr = {
        .qp_type = IBV_QPT_DRIVER,
        .send_cq = ibv_cq_ex_to_cq(cq),
        .recv_cq = ibv_cq_ex_to_cq(cq),
        .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1},
        .pd = dev->pd,
        .comp_mask = IBV_QP_INIT_ATTR_PD,
    };

    if (send_ops_flags) {
        attr.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
        attr.send_ops_flags = send_ops_flags;
    }
    return attr;
}

struct ibv_qp *efasim_qp_create_raw(struct efasim_dev *dev, struct ibv_cq_ex *cq)
{
    struct ibv_qp_init_attr_ex attr = efasim_srd_qp_attr(dev, cq, 0);
    struct efadv_qp_init_attr efa_attr = {.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD};

    errno = 0;
    return efadv_create_qp_ex(dev->ctx, &attr, &efa_attr, sizeof(efa_attr));
}

bool efasim_kernel_front_end(void)
{
    const char *preload = getenv("LD_PRELOAD");

    return preload && strstr(preload, "libefasim-kernel");
}

void efasim_drop_in_only(const char *why)
{
    if (efasim_kernel_front_end())
        efarm_test_skip("on the kernel front end: %s", why);
}

void efasim_require_rdma_write(void)
{
    int status = 0;
    pid_t pid;

    /* Asked in a child: this process touches no verbs before the test does (or forks). */
    fflush(NULL);
    pid = fork();
    EXPECT_TRUE(pid >= 0);
    if (!pid) {
        struct efasim_dev dev;
        bool write;

        efasim_dev_open(0, &dev);
        write = dev.efa.device_caps & EFASIM_CAPS_RDMA_WRITE;
        efasim_dev_close(&dev);
        _exit(write ? 0 : 3);
    }
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3));
    if (WEXITSTATUS(status) == 3)
        efarm_test_skip("needs RDMA write, which this verbs provider does not offer on efasim_0 "
                        "(rdma-core's EFA provider has it from release 45)");
}

void efasim_qp_open(struct efasim_dev *dev, const struct efasim_qp_opts *opts, struct efasim_qp *qp)
{
    memset(qp, 0, sizeof(*qp));
    qp->dev = dev;
    qp->qkey = opts->qkey;
    qp->send_cq = efasim_cq_create(dev, opts->cqe);
    qp->recv_cq = efasim_cq_create(dev, opts->cqe);

    struct ibv_qp_init_attr_ex attr = {
        .qp_type = IBV_QPT_DRIVER,
        .send_cq = ibv_cq_ex_to_cq(qp->send_cq),
        .recv_cq = ibv_cq_ex_to_cq(qp->recv_cq),
        .cap =
            {
                .max_send_wr = opts->max_send_wr,
                .max_recv_wr = opts->max_recv_wr,
                .max_send_sge = dev->efa.max_sq_sge,
                .max_recv_sge = 1,
                .max_inline_data = dev->efa.inline_buf_size,
            },
        .pd = dev->pd,
        .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
        .send_ops_flags = opts->send_ops_flags,
    };
    struct efadv_qp_init_attr efa_attr = {.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD};

    qp->qp = efadv_create_qp_ex(dev->ctx, &attr, &efa_attr, sizeof(efa_attr));
    if (!qp->qp)
        efarm_test_fail(__FILE__, __LINE__, "efadv_create_qp_ex(SRD, send_ops 0x%" PRIx64 "): %s",
                        opts->send_ops_flags, strerror(errno));
    qp->qpx = ibv_qp_to_qp_ex(qp->qp);
    if (!qp->qpx)
        efarm_test_fail(__FILE__, __LINE__, "ibv_qp_to_qp_ex returned NULL");
    qp->qpn = qp->qp->qp_num;
    efasim_qp_to_rts(qp->qp, opts->qkey, opts->rnr_retry);
}

void efasim_ud_to_rts(struct ibv_qp *qp, uint32_t qkey)
{
    struct ibv_qp_attr attr = {
        .qp_state = IBV_QPS_INIT,
        .pkey_index = 0,
        .port_num = 1,
        .qkey = qkey,
    };
    int rc = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);

    if (rc)
        efarm_test_fail(__FILE__, __LINE__, "ibv_modify_qp(UD, INIT): %d", rc);
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_RTR;
    rc = ibv_modify_qp(qp, &attr, IBV_QP_STATE);
    if (rc)
        efarm_test_fail(__FILE__, __LINE__, "ibv_modify_qp(UD, RTR): %d", rc);
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_RTS;
    rc = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
    if (rc)
        efarm_test_fail(__FILE__, __LINE__, "ibv_modify_qp(UD, RTS): %d", rc);
}

void efasim_ud_open(struct efasim_dev *dev, const struct efasim_qp_opts *opts, struct efasim_qp *qp)
{
    const uint64_t ud_ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;

    memset(qp, 0, sizeof(*qp));
    qp->dev = dev;
    qp->qkey = opts->qkey;
    qp->send_cq = efasim_cq_create(dev, opts->cqe);
    qp->recv_cq = efasim_cq_create(dev, opts->cqe);

    struct ibv_qp_init_attr_ex attr = {
        .qp_type = IBV_QPT_UD,
        .send_cq = ibv_cq_ex_to_cq(qp->send_cq),
        .recv_cq = ibv_cq_ex_to_cq(qp->recv_cq),
        .cap =
            {
                .max_send_wr = opts->max_send_wr,
                .max_recv_wr = opts->max_recv_wr,
                .max_send_sge = dev->efa.max_sq_sge,
                .max_recv_sge = 1,
                .max_inline_data = dev->efa.inline_buf_size,
            },
        .pd = dev->pd,
        .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
        .send_ops_flags = opts->send_ops_flags & ud_ops,
    };

    qp->qp = ibv_create_qp_ex(dev->ctx, &attr);
    if (!qp->qp)
        efarm_test_fail(__FILE__, __LINE__, "ibv_create_qp_ex(UD, send_ops 0x%" PRIx64 "): %s",
                        attr.send_ops_flags, strerror(errno));
    qp->qpx = ibv_qp_to_qp_ex(qp->qp);
    if (!qp->qpx)
        efarm_test_fail(__FILE__, __LINE__, "ibv_qp_to_qp_ex(UD) returned NULL");
    qp->qpn = qp->qp->qp_num;
    efasim_ud_to_rts(qp->qp, opts->qkey);
}

void efasim_qp_close(struct efasim_qp *qp)
{
    EXPECT_EQ(ibv_destroy_qp(qp->qp), 0);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(qp->send_cq)), 0);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(qp->recv_cq)), 0);
    memset(qp, 0, sizeof(*qp));
}

int efasim_access_offered(const struct efasim_dev *dev, int access)
{
    if (!(dev->efa.device_caps & EFASIM_CAPS_RDMA_WRITE))
        access &= ~IBV_ACCESS_REMOTE_WRITE;
    if (!(dev->efa.device_caps & EFADV_DEVICE_ATTR_CAPS_RDMA_READ))
        access &= ~IBV_ACCESS_REMOTE_READ;
    return access;
}

void efasim_buf_alloc(struct efasim_dev *dev, size_t len, int access, struct efasim_buf *buf)
{
    size_t map_len = len ? len : 1;

    access = efasim_access_offered(dev, access);
    void *p = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED)
        efarm_test_fail(__FILE__, __LINE__, "mmap(%zu): %s", len, strerror(errno));
    buf->addr = p;
    buf->len = len;
    buf->mr = ibv_reg_mr(dev->pd, p, map_len, access);
    if (!buf->mr)
        efarm_test_fail(__FILE__, __LINE__, "ibv_reg_mr(%zu bytes, access 0x%x): %s", len, access,
                        strerror(errno));
}

void efasim_buf_free(struct efasim_buf *buf)
{
    EXPECT_EQ(ibv_dereg_mr(buf->mr), 0);
    munmap(buf->addr, buf->len ? buf->len : 1);
    memset(buf, 0, sizeof(*buf));
}

struct ibv_ah *efasim_ah_create(struct efasim_dev *dev, const union ibv_gid *gid)
{
    struct ibv_ah_attr attr = {
        .port_num = 1,
        .is_global = 1,
        .grh = {.dgid = *gid, .sgid_index = 0, .hop_limit = 255},
    };
    struct ibv_ah *ah = ibv_create_ah(dev->pd, &attr);
    char s[64];

    if (!ah)
        efarm_test_fail(__FILE__, __LINE__, "ibv_create_ah(%s): %s", efasim_gid_str(gid, s),
                        strerror(errno));
    return ah;
}

uint16_t efasim_ahn(struct ibv_ah *ah)
{
    struct efadv_ah_attr attr;
    int rc;

    memset(&attr, 0, sizeof(attr));
    rc = efadv_query_ah(ah, &attr, sizeof(attr));
    if (rc)
        efarm_test_fail(__FILE__, __LINE__, "efadv_query_ah: %d", rc);
    return attr.ahn;
}

void efasim_dest_to(struct efasim_dev *from, const struct efasim_qp *peer, struct efasim_dest *dest)
{
    dest->ah = efasim_ah_create(from, &peer->dev->gid);
    dest->qpn = peer->qpn;
    dest->qkey = peer->qkey;
}

void efasim_post_recv(struct efasim_qp *qp, uint64_t wr_id, const struct efasim_buf *buf,
                      size_t off, size_t len)
{
    struct ibv_sge sge = {
        .addr = (uintptr_t)(buf->addr + off),
        .length = (uint32_t)len,
        .lkey = buf->mr->lkey,
    };
    struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad = NULL;
    int rc = ibv_post_recv(qp->qp, &wr, &bad);

    if (rc)
        efarm_test_fail(__FILE__, __LINE__, "ibv_post_recv(wr_id 0x%" PRIx64 ", %zu bytes): %d",
                        wr_id, len, rc);
}

/* Opens a signaled WR on qp; the caller sets the opcode, then efasim_wr_finish(). */
static void efasim_wr_begin(struct efasim_qp *qp, uint64_t wr_id)
{
    ibv_wr_start(qp->qpx);
    qp->qpx->wr_id = wr_id;
    qp->qpx->wr_flags = IBV_SEND_SIGNALED;
}

static int efasim_wr_finish(struct efasim_qp *qp, const struct efasim_dest *to,
                            const struct efasim_buf *buf, size_t off, size_t len)
{
    ibv_wr_set_ud_addr(qp->qpx, to->ah, to->qpn, to->qkey);
    if (len)
        ibv_wr_set_sge(qp->qpx, buf->mr->lkey, (uintptr_t)(buf->addr + off), (uint32_t)len);
    else
        ibv_wr_set_sge_list(qp->qpx, 0, NULL);
    return ibv_wr_complete(qp->qpx);
}

int efasim_send(struct efasim_qp *qp, const struct efasim_dest *to, uint64_t wr_id,
                const struct efasim_buf *buf, size_t off, size_t len)
{
    efasim_wr_begin(qp, wr_id);
    ibv_wr_send(qp->qpx);
    return efasim_wr_finish(qp, to, buf, off, len);
}

int efasim_send_imm(struct efasim_qp *qp, const struct efasim_dest *to, uint64_t wr_id,
                    const struct efasim_buf *buf, size_t off, size_t len, uint32_t imm)
{
    efasim_wr_begin(qp, wr_id);
    ibv_wr_send_imm(qp->qpx, htobe32(imm));
    return efasim_wr_finish(qp, to, buf, off, len);
}

int efasim_send_inline(struct efasim_qp *qp, const struct efasim_dest *to, uint64_t wr_id,
                       const void *data, size_t len)
{
    efasim_wr_begin(qp, wr_id);
    ibv_wr_send(qp->qpx);
    ibv_wr_set_ud_addr(qp->qpx, to->ah, to->qpn, to->qkey);
    ibv_wr_set_inline_data(qp->qpx, (void *)data, len);
    return ibv_wr_complete(qp->qpx);
}

int efasim_send_legacy(struct efasim_qp *qp, const struct efasim_dest *to, uint64_t wr_id,
                       const struct efasim_buf *buf, size_t off, size_t len)
{
    struct ibv_sge sge = {
        .addr = (uintptr_t)(buf->addr + off),
        .length = (uint32_t)len,
        .lkey = buf->mr->lkey,
    };
    struct ibv_send_wr wr = {
        .wr_id = wr_id,
        .sg_list = &sge,
        .num_sge = len ? 1 : 0,
        .opcode = IBV_WR_SEND,
        .send_flags = IBV_SEND_SIGNALED,
        .wr.ud = {.ah = to->ah, .remote_qpn = to->qpn, .remote_qkey = to->qkey},
    };
    struct ibv_send_wr *bad = NULL;

    return ibv_post_send(qp->qp, &wr, &bad);
}

int efasim_rdma_read(struct efasim_qp *qp, const struct efasim_dest *to, uint64_t wr_id,
                     const struct efasim_buf *local, size_t off, size_t len, uint32_t rkey,
                     uint64_t raddr)
{
    efasim_wr_begin(qp, wr_id);
    ibv_wr_rdma_read(qp->qpx, rkey, raddr);
    return efasim_wr_finish(qp, to, local, off, len);
}

int efasim_rdma_write(struct efasim_qp *qp, const struct efasim_dest *to, uint64_t wr_id,
                      const struct efasim_buf *local, size_t off, size_t len, uint32_t rkey,
                      uint64_t raddr)
{
    efasim_wr_begin(qp, wr_id);
    ibv_wr_rdma_write(qp->qpx, rkey, raddr);
    return efasim_wr_finish(qp, to, local, off, len);
}

int efasim_rdma_write_imm(struct efasim_qp *qp, const struct efasim_dest *to, uint64_t wr_id,
                          const struct efasim_buf *local, size_t off, size_t len, uint32_t rkey,
                          uint64_t raddr, uint32_t imm)
{
    efasim_wr_begin(qp, wr_id);
    ibv_wr_rdma_write_imm(qp->qpx, rkey, raddr, htobe32(imm));
    return efasim_wr_finish(qp, to, local, off, len);
}

bool efasim_poll_one(struct ibv_cq_ex *cq, struct efasim_wc *wc)
{
    struct ibv_poll_cq_attr attr = {.comp_mask = 0};
    int rc = ibv_start_poll(cq, &attr);

    if (rc == ENOENT)
        return false;
    if (rc)
        efarm_test_fail(__FILE__, __LINE__, "ibv_start_poll: %d (expected 0 or ENOENT)", rc);
    memset(wc, 0, sizeof(*wc));
    wc->wr_id = cq->wr_id;
    wc->status = cq->status;
    wc->vendor_err = ibv_wc_read_vendor_err(cq);
    wc->sgid_ret = -1;
    if (wc->status == IBV_WC_SUCCESS) {
        wc->opcode = ibv_wc_read_opcode(cq);
        wc->wc_flags = ibv_wc_read_wc_flags(cq);
        wc->byte_len = ibv_wc_read_byte_len(cq);
        if (wc->wc_flags & IBV_WC_WITH_IMM)
            wc->imm = be32toh(ibv_wc_read_imm_data(cq));
        wc->qp_num = ibv_wc_read_qp_num(cq);
        if (wc->opcode & IBV_WC_RECV) {
            struct efadv_cq *ecq = efadv_cq_from_ibv_cq_ex(cq);

            wc->src_qp = ibv_wc_read_src_qp(cq);
            wc->slid = ibv_wc_read_slid(cq);
            if (ecq)
                wc->sgid_ret = efadv_wc_read_sgid(ecq, &wc->sgid);
        }
    }
    ibv_end_poll(cq);
    return true;
}

void efasim_wait_wc_for(struct ibv_cq_ex *cq, struct efasim_wc *wc, double timeout_s,
                        const char *what)
{
    double deadline = efasim_now() + timeout_s;
    unsigned spins = 0;

    while (!efasim_poll_one(cq, wc)) {
        if (efasim_now() > deadline)
            efarm_test_fail(__FILE__, __LINE__, "no completion for %s within %.1f s", what,
                            timeout_s);
        /* Spin briefly, then yield the CPU to efasim's threads and the peer. */
        if (++spins > 1000)
            efasim_sleep_ms(0);
    }
}

void efasim_wait_wc(struct ibv_cq_ex *cq, struct efasim_wc *wc, const char *what)
{
    efasim_wait_wc_for(cq, wc, EFASIM_WAIT_S, what);
}

void efasim_expect_no_wc(struct ibv_cq_ex *cq, unsigned ms, const char *what)
{
    double deadline = efasim_now() + ms / 1e3;
    struct efasim_wc wc;

    do {
        if (efasim_poll_one(cq, &wc))
            efarm_test_fail(__FILE__, __LINE__,
                            "unexpected completion for %s: wr_id 0x%" PRIx64
                            ", status %d (%s), opcode %d, byte_len %u",
                            what, wc.wr_id, wc.status, ibv_wc_status_str(wc.status), wc.opcode,
                            wc.byte_len);
        efasim_sleep_ms(1);
    } while (efasim_now() < deadline);
}

static uint64_t efasim_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

void efasim_fill(void *buf, size_t len, uint64_t seed)
{
    uint8_t *p = buf;
    uint64_t word = 0;

    for (size_t i = 0; i < len; i++) {
        if (i % 8 == 0)
            word = efasim_mix(seed * 0x100000001b3ull + i / 8);
        p[i] = (uint8_t)(word >> (8 * (i % 8)));
    }
}

size_t efasim_check_fill(const void *buf, size_t len, uint64_t seed)
{
    const uint8_t *p = buf;
    uint64_t word = 0;

    for (size_t i = 0; i < len; i++) {
        if (i % 8 == 0)
            word = efasim_mix(seed * 0x100000001b3ull + i / 8);
        if (p[i] != (uint8_t)(word >> (8 * (i % 8))))
            return i;
    }
    return len;
}

size_t efasim_check_byte(const void *buf, size_t len, uint8_t c)
{
    const uint8_t *p = buf;

    for (size_t i = 0; i < len; i++)
        if (p[i] != c)
            return i;
    return len;
}

void efasim_pair_open(struct efasim_pair *p, const struct efasim_qp_opts *tx_opts,
                      const struct efasim_qp_opts *rx_opts)
{
    const struct efasim_qp_opts def = EFASIM_QP_OPTS_DEFAULT;

    memset(p, 0, sizeof(*p));
    efasim_dev_open(0, &p->dev);
    efasim_qp_open(&p->dev, tx_opts ? tx_opts : &def, &p->tx);
    efasim_qp_open(&p->dev, rx_opts ? rx_opts : &def, &p->rx);
    efasim_dest_to(&p->dev, &p->rx, &p->to_rx);
    efasim_buf_alloc(&p->dev, 2 * (size_t)p->dev.mtu + 4096, EFASIM_ACCESS_ALL, &p->sbuf);
    efasim_buf_alloc(&p->dev, 2 * (size_t)p->dev.mtu + 4096, EFASIM_ACCESS_ALL, &p->rbuf);
}

void efasim_pair_close(struct efasim_pair *p)
{
    efasim_buf_free(&p->sbuf);
    efasim_buf_free(&p->rbuf);
    EXPECT_EQ(ibv_destroy_ah(p->to_rx.ah), 0);
    efasim_qp_close(&p->tx);
    efasim_qp_close(&p->rx);
    efasim_dev_close(&p->dev);
}

void efasim_pair_roundtrip(struct efasim_pair *p, size_t len, enum efasim_api api)
{
    uint64_t seed = len * 7 + (uint64_t)api, wr_id = 0x10000 + len;
    const size_t guard = 64;
    struct efasim_wc wc;
    size_t bad;
    int rc;

    memset(p->rbuf.addr, 0xee, p->dev.mtu + guard);
    efasim_fill(p->sbuf.addr, len, seed);
    efasim_post_recv(&p->rx, wr_id, &p->rbuf, 0, p->dev.mtu);
    if (api == EFASIM_API_WR)
        rc = efasim_send(&p->tx, &p->to_rx, wr_id, &p->sbuf, 0, len);
    else
        rc = efasim_send_legacy(&p->tx, &p->to_rx, wr_id, &p->sbuf, 0, len);
    EXPECT_EQ(rc, 0);

    efasim_wait_wc(p->rx.recv_cq, &wc, "the receive");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.wr_id, wr_id);
    EXPECT_EQ(wc.opcode, IBV_WC_RECV);
    EXPECT_EQ(wc.byte_len, len);
    EXPECT_EQ(wc.wc_flags & IBV_WC_WITH_IMM, 0);
    EXPECT_EQ(wc.qp_num, p->rx.qpn);
    EXPECT_EQ(wc.src_qp, p->tx.qpn);
    EXPECT_EQ(wc.slid, efasim_ahn(p->to_rx.ah));
    bad = efasim_check_fill(p->rbuf.addr, len, seed);
    if (bad != len)
        efarm_test_fail(__FILE__, __LINE__, "received data differs at byte %zu of %zu", bad, len);
    bad = efasim_check_byte(p->rbuf.addr + len, guard, 0xee);
    if (bad != guard)
        efarm_test_fail(__FILE__, __LINE__, "byte %zu past a %zu-byte message was written", bad,
                        len);

    efasim_wait_wc(p->tx.send_cq, &wc, "the send");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.wr_id, wr_id);
    EXPECT_EQ(wc.opcode, IBV_WC_SEND);
}

/* dl_iterate_phdr's callback: the release in the loaded libibverbs' real file name. */
static int release_of_libibverbs(struct dl_phdr_info *info, size_t size, void *data)
{
    char real[PATH_MAX];
    const char *base;
    unsigned minor, release;

    (void)size;
    if (info->dlpi_name == NULL || strstr(info->dlpi_name, "libibverbs.so") == NULL ||
        realpath(info->dlpi_name, real) == NULL)
        return 0;
    base = strrchr(real, '/');
    base = base ? base + 1 : real;
    if (sscanf(base, "libibverbs.so.1.%u.%u.0", &minor, &release) == 2)
        *(unsigned *)data = release;
    return 1; /* the first libibverbs loaded answers, whatever its name */
}

unsigned efasim_rdma_core_release(void)
{
    static unsigned release = UINT_MAX;

    if (release == UINT_MAX) {
        unsigned found = 0;

        dl_iterate_phdr(release_of_libibverbs, &found);
        release = found;
    }
    return release;
}
