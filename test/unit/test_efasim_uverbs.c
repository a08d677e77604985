/*
 * efasim's kernel front end at its boundary: the uverbs character device
 * driven by hand, as rdma-core drives it, and with the mistakes rdma-core
 * never makes, each answered with the errno Linux's uverbs core and EFA
 * driver give (src/efasim/README.md, "The kernel front end"). Runs with the
 * front end preloaded (efasim-info --env=kernel).
 */
#include <errno.h>
#include <fcntl.h>
#include <rdma/efa-abi.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "efarm_test.h"

#define RDMA_DRIVER_EFA_ID 17

/* An ioctl's header and up to 8 attributes, in one buffer. */
struct call {
    uint64_t buf[(sizeof(struct ib_uverbs_ioctl_hdr) + 8 * sizeof(struct ib_uverbs_attr)) / 8];
    struct ib_uverbs_ioctl_hdr *hdr;
    struct ib_uverbs_attr *attrs;
};

static int dev_open(void)
{
    int fd = open("/dev/infiniband/uverbs0", O_RDWR | O_CLOEXEC);

    EXPECT_TRUE(fd >= 0);
    return fd;
}

static void call_init(struct call *c, uint16_t object, uint16_t method, unsigned nattrs)
{
    memset(c, 0, sizeof(*c));
    c->hdr = (struct ib_uverbs_ioctl_hdr *)c->buf;
    c->attrs = c->hdr->attrs;
    c->hdr->length = (uint16_t)(sizeof(*c->hdr) + nattrs * sizeof(struct ib_uverbs_attr));
    c->hdr->object_id = object;
    c->hdr->method_id = method;
    c->hdr->num_attrs = (uint16_t)nattrs;
    c->hdr->driver_id = RDMA_DRIVER_EFA_ID;
}

/* ioctl, returning 0 or errno. */
static int do_ioctl(int fd, struct call *c)
{
    return ioctl(fd, RDMA_VERBS_IOCTL, c->hdr) ? errno : 0;
}

/* GET_CONTEXT by ioctl, as rdma-core 44's EFA provider asks for it. */
static int get_context(int fd, struct efa_ibv_alloc_ucontext_resp *resp)
{
    struct efa_ibv_alloc_ucontext_cmd cmd = {.comp_mask = EFA_ALLOC_UCONTEXT_CMD_COMP_TX_BATCH |
                                                          EFA_ALLOC_UCONTEXT_CMD_COMP_MIN_SQ_WR};
    uint32_t ncv = 0;
    uint64_t core = 0;
    struct call c;

    call_init(&c, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_GET_CONTEXT, 4);
    c.attrs[0] = (struct ib_uverbs_attr){.attr_id = UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS,
                                         .len = sizeof(ncv),
                                         .data = (uintptr_t)&ncv};
    c.attrs[1] = (struct ib_uverbs_attr){.attr_id = UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT,
                                         .len = sizeof(core),
                                         .data = (uintptr_t)&core};
    c.attrs[2] = (struct ib_uverbs_attr){.attr_id = UVERBS_ATTR_UHW_IN, .len = sizeof(cmd)};
    memcpy(&c.attrs[2].data, &cmd, sizeof(cmd));
    c.attrs[3] = (struct ib_uverbs_attr){
        .attr_id = UVERBS_ATTR_UHW_OUT, .len = sizeof(*resp), .data = (uintptr_t)resp};
    return do_ioctl(fd, &c);
}

EFARM_TEST(efasim_uverbs_device_node)
{
    struct stat st;
    int fd = dev_open();

    EXPECT_EQ(fstat(fd, &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
    EXPECT_EQ(major(st.st_rdev), 231);
    EXPECT_EQ(minor(st.st_rdev), 192);
    EXPECT_EQ(stat("/dev/infiniband/uverbs0", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
    /* Read-only opens are refused: commands are written. */
    EXPECT_EQ(open("/dev/infiniband/uverbs0", O_RDONLY), -1);
    EXPECT_EQ(errno, EACCES);
    /* The file has no read. */
    {
        char b[8];

        EXPECT_EQ(read(fd, b, sizeof(b)), -1);
        EXPECT_EQ(errno, EINVAL);
    }
    EXPECT_EQ(close(fd), 0);
}

EFARM_TEST(efasim_uverbs_ioctl_header_checks)
{
    int fd = dev_open();
    struct call c;

    EXPECT_EQ(ioctl(fd, 0x1234, NULL), -1);
    EXPECT_EQ(errno, ENOTTY);
    /* A length that does not match the attribute count. */
    call_init(&c, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE, 1);
    c.hdr->length += 8;
    EXPECT_EQ(do_ioctl(fd, &c), EINVAL);
    /* Reserved fields. */
    call_init(&c, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE, 0);
    c.hdr->reserved1 = 1;
    EXPECT_EQ(do_ioctl(fd, &c), EPROTONOSUPPORT);
    /* Another driver's call. */
    call_init(&c, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE, 0);
    c.hdr->driver_id = 4;
    EXPECT_EQ(do_ioctl(fd, &c), EINVAL);
    /* A method EFA's driver does not have (memory windows). */
    call_init(&c, UVERBS_OBJECT_MW, UVERBS_METHOD_MW_DESTROY, 0);
    EXPECT_EQ(do_ioctl(fd, &c), EPROTONOSUPPORT);
    /* rdma-core's probe for write-through-ioctl: WRITE_CMD without a request. */
    call_init(&c, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE, 1);
    c.attrs[0] = (struct ib_uverbs_attr){
        .attr_id = UVERBS_ATTR_WRITE_CMD, .len = 8, .data = IB_USER_VERBS_CMD_QUERY_DEVICE};
    EXPECT_EQ(do_ioctl(fd, &c), ENOSPC);
    /* An unknown attribute: ignored, unless marked mandatory. */
    call_init(&c, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE, 2);
    c.attrs[0] = (struct ib_uverbs_attr){
        .attr_id = UVERBS_ATTR_WRITE_CMD, .len = 8, .data = IB_USER_VERBS_CMD_QUERY_DEVICE};
    c.attrs[1] = (struct ib_uverbs_attr){.attr_id = 20, .len = 4};
    EXPECT_EQ(do_ioctl(fd, &c), ENOSPC);
    c.attrs[1].flags = UVERBS_ATTR_F_MANDATORY;
    EXPECT_EQ(do_ioctl(fd, &c), EPROTONOSUPPORT);
    /* The same attribute twice. */
    c.attrs[1] = c.attrs[0];
    EXPECT_EQ(do_ioctl(fd, &c), EINVAL);
    /* A mandatory attribute missing. */
    call_init(&c, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE, 0);
    EXPECT_EQ(do_ioctl(fd, &c), EINVAL);
    /* A header that is not readable. */
    EXPECT_EQ(ioctl(fd, RDMA_VERBS_IOCTL, (void *)8), -1);
    EXPECT_EQ(errno, EFAULT);
    close(fd);
}

EFARM_TEST(efasim_uverbs_context_once)
{
    struct efa_ibv_alloc_ucontext_resp resp;
    int fd = dev_open();

    memset(&resp, 0xff, sizeof(resp));
    EXPECT_EQ(get_context(fd, &resp), 0);
    EXPECT_EQ(resp.comp_mask, 0);
    EXPECT_EQ(resp.cmds_supp_udata_mask,
              EFA_USER_CMDS_SUPP_UDATA_QUERY_DEVICE | EFA_USER_CMDS_SUPP_UDATA_CREATE_AH);
    EXPECT_TRUE(resp.sub_cqs_per_cq >= 1);
    EXPECT_EQ(resp.inline_buf_size, 32);
    /* One context per file. */
    EXPECT_EQ(get_context(fd, &resp), EINVAL);
    close(fd);
}

EFARM_TEST(efasim_uverbs_handshake_refused)
{
    struct efa_ibv_alloc_ucontext_resp resp;
    uint32_t ncv;
    struct call c;
    int fd = dev_open();

    /* A provider that does not know the device batches doorbells: EOPNOTSUPP. */
    call_init(&c, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_GET_CONTEXT, 3);
    c.attrs[0] = (struct ib_uverbs_attr){.attr_id = UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS,
                                         .len = sizeof(ncv),
                                         .data = (uintptr_t)&ncv};
    c.attrs[1] = (struct ib_uverbs_attr){.attr_id = UVERBS_ATTR_UHW_IN, .len = 8};
    c.attrs[2] = (struct ib_uverbs_attr){
        .attr_id = UVERBS_ATTR_UHW_OUT, .len = sizeof(resp), .data = (uintptr_t)&resp};
    EXPECT_EQ(do_ioctl(fd, &c), EOPNOTSUPP);
    close(fd);
}

/* A legacy command written as rdma-core's write path writes it. */
static ssize_t write_cmd(int fd, uint32_t cmd, void *req, size_t req_size, size_t out_size)
{
    struct ib_uverbs_cmd_hdr h = {.command = cmd,
                                  .in_words = (uint16_t)(req_size / 4),
                                  .out_words = (uint16_t)(out_size / 4)};

    memcpy(req, &h, sizeof(h));
    return write(fd, req, req_size);
}

EFARM_TEST(efasim_uverbs_write_path)
{
    struct efa_ibv_alloc_ucontext_cmd efa = {.comp_mask = EFA_ALLOC_UCONTEXT_CMD_COMP_TX_BATCH |
                                                          EFA_ALLOC_UCONTEXT_CMD_COMP_MIN_SQ_WR};
    struct {
        uint32_t async_fd, num_comp_vectors; /* struct ib_uverbs_get_context_resp */
        struct efa_ibv_alloc_ucontext_resp efa;
    } gr;
    struct ib_uverbs_alloc_pd_resp pr;
    /* Each command: the header, the core request (its response pointer first), driver data. */
    uint64_t gc[3], pd[2], dpd[2], poll[4] = {0};
    int fd = dev_open();

    gc[1] = (uintptr_t)&gr;
    memcpy(&gc[2], &efa, sizeof(efa));
    pd[1] = (uintptr_t)&pr;
    /* Before the context: ALLOC_PD is EINVAL. */
    EXPECT_EQ(write_cmd(fd, IB_USER_VERBS_CMD_ALLOC_PD, pd, sizeof(pd), sizeof(pr)), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(write_cmd(fd, IB_USER_VERBS_CMD_GET_CONTEXT, gc, sizeof(gc), sizeof(gr)),
              (ssize_t)sizeof(gc));
    EXPECT_TRUE((int)gr.async_fd > 2);
    EXPECT_EQ(gr.num_comp_vectors, 1);
    EXPECT_EQ(gr.efa.inline_buf_size, 32);
    /* in_words that disagree with the write's length. */
    {
        struct ib_uverbs_cmd_hdr h;

        memcpy(&h, gc, sizeof(h));
        h.in_words++;
        memcpy(gc, &h, sizeof(h));
    }
    EXPECT_EQ(write(fd, gc, sizeof(gc)), -1);
    EXPECT_EQ(errno, EINVAL);
    /* A response too small for the command. */
    EXPECT_EQ(write_cmd(fd, IB_USER_VERBS_CMD_ALLOC_PD, pd, sizeof(pd), 0), -1);
    EXPECT_EQ(errno, ENOSPC);
    /* PDs get the lowest free handle, from 0, shared by every object type. */
    EXPECT_EQ(write_cmd(fd, IB_USER_VERBS_CMD_ALLOC_PD, pd, sizeof(pd), sizeof(pr)),
              (ssize_t)sizeof(pd));
    EXPECT_EQ(pr.pd_handle, 0);
    EXPECT_EQ(write_cmd(fd, IB_USER_VERBS_CMD_ALLOC_PD, pd, sizeof(pd), sizeof(pr)),
              (ssize_t)sizeof(pd));
    EXPECT_EQ(pr.pd_handle, 1);
    dpd[1] = 0; /* pd_handle 0 */
    EXPECT_EQ(write_cmd(fd, IB_USER_VERBS_CMD_DEALLOC_PD, dpd, 12, 0), 12);
    EXPECT_EQ(write_cmd(fd, IB_USER_VERBS_CMD_DEALLOC_PD, dpd, 12, 0), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(write_cmd(fd, IB_USER_VERBS_CMD_ALLOC_PD, pd, sizeof(pd), sizeof(pr)),
              (ssize_t)sizeof(pd));
    EXPECT_EQ(pr.pd_handle, 0);
    /* Commands EFA's driver has no operation for: EOPNOTSUPP. */
    EXPECT_EQ(write_cmd(fd, IB_USER_VERBS_CMD_POLL_CQ, poll, sizeof(poll), 0), -1);
    EXPECT_EQ(errno, EOPNOTSUPP);
    EXPECT_EQ(write_cmd(fd, IB_USER_VERBS_CMD_REQ_NOTIFY_CQ, poll, sizeof(poll), 0), -1);
    EXPECT_EQ(errno, EOPNOTSUPP);
    close((int)gr.async_fd);
    close(fd);
}

EFARM_TEST(efasim_uverbs_mmap_checks)
{
    struct efa_ibv_alloc_ucontext_resp resp;
    long page = sysconf(_SC_PAGESIZE);
    int fd = dev_open();

    EXPECT_EQ(get_context(fd, &resp), 0);
    /* No entry at this key. */
    EXPECT_TRUE(mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_TRUE(mmap(NULL, (size_t)page, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED);
    EXPECT_EQ(errno, EINVAL);
    close(fd);
}
