/*
 * The uverbs core's calls (uverbs_cmds.h): for each object, the ioctl
 * methods and legacy commands that reach it, and what the core does before
 * and after the driver (efa.c): context checks, handles, event files, use
 * counts, and the shape of the answer. The two paths of one call share one
 * core_* function, as the kernel's uverbs_cmd.c and uverbs_std_types_*.c
 * share ib_create_cq and its siblings.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../model/efasim_model.h"
#include "kernel.h"
#include "uverbs_cmds.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Core capabilities (ib_uverbs_core_support): optional MR access flags are dropped, not refused. */
#define CORE_SUPPORT IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS

bool efasim_kernel_ioctl_enabled(void)
{
    return efasim_config()->uverbs_ioctl;
}

static struct efasim_udata udata_of(struct efasim_kcall *c)
{
    return (struct efasim_udata){c->uhw_in, c->uhw_in_len, c->uhw_out, c->uhw_out_len};
}

/* A legacy request of size `size`: what the call carried, zero-filled beyond (uverbs_request). */
static int req_get(const struct efasim_kcall *c, void *dst, size_t size)
{
    memset(dst, 0, size);
    if (c->core_in_len < size)
        return -ENOSPC;
    memcpy(dst, c->core_in, size);
    for (size_t i = size; i < c->core_in_len; i++)
        if (((const uint8_t *)c->core_in)[i])
            return -EOPNOTSUPP; /* a longer request than this kernel knows, not cleared */
    return 0;
}

/* A legacy response: at most the room user space gave (uverbs_response). */
static void resp_put(struct efasim_kcall *c, const void *src, size_t size)
{
    memcpy(c->core_out, src, size < c->core_out_len ? size : c->core_out_len);
}

static int need_context(const struct efasim_kcall *c)
{
    return c->file->ctx ? 0 : -EINVAL;
}

/* ---- Driver data of an ioctl ------------------------------------------------------------ */

int efasim_kcall_uhw(struct efasim_kcall *c)
{
    struct ib_uverbs_attr ua;
    int err;

    if (c->attr[EFASIM_KATTR_UHW_IN]) {
        err = efasim_copy_from_user(&ua, (uint64_t)(uintptr_t)c->attr[EFASIM_KATTR_UHW_IN],
                                    sizeof(ua));
        if (err)
            return err;
        if (ua.len > sizeof(c->uhw_in_buf))
            return -EINVAL;
        err = efasim_kattr_in(c, UVERBS_ATTR_UHW_IN, c->uhw_in_buf, ua.len);
        if (err)
            return err;
        c->uhw_in = c->uhw_in_buf;
        c->uhw_in_len = ua.len;
    }
    if (c->attr[EFASIM_KATTR_UHW_OUT]) {
        err = efasim_copy_from_user(&ua, (uint64_t)(uintptr_t)c->attr[EFASIM_KATTR_UHW_OUT],
                                    sizeof(ua));
        if (err)
            return err;
        c->uhw_out = c->uhw_out_buf;
        c->uhw_out_len = ua.len < sizeof(c->uhw_out_buf) ? ua.len : sizeof(c->uhw_out_buf);
    }
    return 0;
}

void efasim_kcall_uhw_done(struct efasim_kcall *c, int err)
{
    /* As ib_uverbs_run_method: the driver is assumed to have written its answer. */
    if (!err && c->attr[EFASIM_KATTR_UHW_OUT])
        efasim_kattr_out(c, UVERBS_ATTR_UHW_OUT, c->uhw_out_buf, c->uhw_out_len);
}

/* ---- Context and device ------------------------------------------------------------------- */

static int core_alloc_context(struct efasim_kcall *c)
{
    struct efasim_udata u = udata_of(c);

    if (c->file->ctx)
        return -EINVAL; /* one context per file */
    return efasim_efa_alloc_ucontext(c->file, &u);
}

static int write_get_context(struct efasim_kcall *c)
{
    struct ib_uverbs_get_context cmd;
    struct ib_uverbs_get_context_resp resp = {0};
    int err = req_get(c, &cmd, sizeof(cmd));

    if (err)
        return err;
    err = core_alloc_context(c);
    if (err)
        return err;
    /* The legacy command also hands out the async event file. */
    err = efasim_kevents_open(&c->file->async, true);
    if (err) {
        efasim_efa_dealloc_ucontext(c->file);
        return err;
    }
    resp.async_fd = (uint32_t)c->file->async.user_fd;
    resp.num_comp_vectors = efasim_efa_num_comp_vectors(c->file);
    resp_put(c, &resp, sizeof(resp));
    return 0;
}

static int ioctl_context_outputs(struct efasim_kcall *c, unsigned ncv_id, unsigned core_id)
{
    uint32_t ncv = efasim_efa_num_comp_vectors(c->file);
    uint64_t core = CORE_SUPPORT;
    int err = 0;

    if (efasim_kattr_has(c, ncv_id))
        err = efasim_kattr_out(c, ncv_id, &ncv, sizeof(ncv));
    if (!err && efasim_kattr_has(c, core_id))
        err = efasim_kattr_out(c, core_id, &core, sizeof(core));
    return err;
}

/* The outputs are written before the context exists (a second call still fills them). */
static int ioctl_get_context(struct efasim_kcall *c)
{
    int err = ioctl_context_outputs(c, UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS,
                                    UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT);

    return err ? err : core_alloc_context(c);
}

/* EFA's driver has no query_ucontext: the core refuses after its context check. */
static int ioctl_query_context(struct efasim_kcall *c)
{
    int err = need_context(c);

    return err ? err : -EOPNOTSUPP;
}

static int ioctl_async_alloc(struct efasim_kcall *c)
{
    int err = need_context(c);

    if (err)
        return err;
    if (c->file->async.user_fd >= 0)
        return -EINVAL; /* the file has its async event file already */
    err = efasim_kevents_open(&c->file->async, true);
    if (err)
        return err;
    err = efasim_kattr_out_data(c, UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE,
                                (uint64_t)c->file->async.user_fd);
    if (err) {
        close(c->file->async.user_fd);
        close(c->file->async.device_fd);
        pthread_mutex_destroy(&c->file->async.lock);
        c->file->async.user_fd = c->file->async.device_fd = -1;
    }
    return err;
}

static void device_resp(const struct efasim_kdevice_attr *a, struct ib_uverbs_query_device_resp *r)
{
    memset(r, 0, sizeof(*r));
    r->fw_ver = a->fw_ver;
    r->node_guid = a->node_guid;
    r->sys_image_guid = a->sys_image_guid;
    r->max_mr_size = a->max_mr_size;
    r->page_size_cap = a->page_size_cap;
    r->vendor_id = a->vendor_id;
    r->vendor_part_id = a->vendor_part_id;
    r->hw_ver = a->hw_ver;
    r->max_qp = a->max_qp;
    r->max_qp_wr = a->max_qp_wr;
    r->max_sge = a->max_send_sge < a->max_recv_sge ? a->max_send_sge : a->max_recv_sge;
    r->max_sge_rd = a->max_sge_rd;
    r->max_cq = a->max_cq;
    r->max_cqe = a->max_cqe;
    r->max_mr = a->max_mr;
    r->max_pd = a->max_pd;
    r->max_ah = a->max_ah;
    r->max_pkeys = (uint16_t)a->max_pkeys;
    r->phys_port_cnt = a->phys_port_cnt;
}

static int write_query_device(struct efasim_kcall *c)
{
    struct ib_uverbs_query_device cmd;
    struct ib_uverbs_query_device_resp resp;
    struct efasim_kdevice_attr a;
    struct efasim_udata u = udata_of(c);
    int err = req_get(c, &cmd, sizeof(cmd));

    if (!err)
        err = need_context(c);
    if (!err)
        err = efasim_efa_query_device(c->file, &a, &u);
    if (err)
        return err;
    device_resp(&a, &resp);
    resp.sys_image_guid = 0; /* the core never fills it for EFA */
    resp_put(c, &resp, sizeof(resp));
    return 0;
}

static int write_ex_query_device(struct efasim_kcall *c)
{
    struct ib_uverbs_ex_query_device cmd;
    struct ib_uverbs_ex_query_device_resp resp = {0};
    struct efasim_kdevice_attr a;
    struct efasim_udata u = udata_of(c);
    int err = req_get(c, &cmd, sizeof(cmd));

    if (!err)
        err = need_context(c);
    if (err)
        return err;
    if (cmd.comp_mask || cmd.reserved)
        return -EINVAL;
    err = efasim_efa_query_device(c->file, &a, &u);
    if (err)
        return err;
    device_resp(&a, &resp.base);
    resp.base.sys_image_guid = 0; /* the core never fills it for EFA */
    resp.response_length =
        (uint32_t)(c->core_out_len < sizeof(resp) ? c->core_out_len : sizeof(resp));
    resp_put(c, &resp, sizeof(resp));
    return 0;
}

static int write_query_port(struct efasim_kcall *c)
{
    struct ib_uverbs_query_port cmd;
    struct ib_uverbs_query_port_resp resp = {0};
    int err = req_get(c, &cmd, sizeof(cmd));

    if (!err)
        err = need_context(c);
    if (!err)
        err = efasim_efa_query_port(c->file, cmd.port_num, &resp);
    if (err)
        return err;
    resp_put(c, &resp, sizeof(resp));
    return 0;
}

static int ioctl_query_port(struct efasim_kcall *c)
{
    struct ib_uverbs_query_port_resp_ex resp = {0};
    uint64_t port;
    int err = need_context(c);

    if (!err)
        err = efasim_kattr_u64(c, UVERBS_ATTR_QUERY_PORT_PORT_NUM, &port);
    if (!err)
        err = port > 0xff ? -EINVAL
                          : efasim_efa_query_port(c->file, (uint32_t)port, &resp.legacy_resp);
    if (err)
        return err;
    return efasim_kattr_out_struct(c, UVERBS_ATTR_QUERY_PORT_RESP, &resp, sizeof(resp));
}

/* The GID table's entry: EFA's one GID, type IB, no netdev (config_non_roce_gid_cache). */
static int gid_entry(struct efasim_kcall *c, uint32_t port, uint32_t index,
                     struct ib_uverbs_gid_entry *e)
{
    static const uint8_t zero[16];
    uint8_t gid[16];
    int err;

    if (port != 1 || index >= 1)
        return -EINVAL;
    err = efasim_efa_query_gid(c->file, port, index, gid);
    if (err)
        return err;
    if (!memcmp(gid, zero, sizeof(gid)))
        return -ENODATA; /* a zero GID is never stored in the table */
    memset(e, 0, sizeof(*e));
    memcpy(e->gid, gid, sizeof(gid));
    e->gid_index = index;
    e->port_num = port;
    e->gid_type = IB_UVERBS_GID_TYPE_IB;
    e->netdev_ifindex = 0;
    return 0;
}

static int ioctl_query_gid_entry(struct efasim_kcall *c)
{
    struct ib_uverbs_gid_entry e;
    uint64_t port, index, flags = 0;
    int err = efasim_kattr_in(c, UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS, &flags, sizeof(flags));

    if (!err && flags)
        err = -EINVAL;
    if (!err)
        err = efasim_kattr_u64(c, UVERBS_ATTR_QUERY_GID_ENTRY_PORT, &port);
    if (!err)
        err = efasim_kattr_u64(c, UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX, &index);
    if (!err && (port > UINT32_MAX || index > UINT32_MAX))
        err = -EINVAL;
    if (!err)
        err = need_context(c);
    if (!err)
        err = gid_entry(c, (uint32_t)port, (uint32_t)index, &e);
    if (err)
        return err;
    return efasim_kattr_out_struct(c, UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, &e, sizeof(e));
}

static int ioctl_query_gid_table(struct efasim_kcall *c)
{
    struct ib_uverbs_gid_entry e;
    struct ib_uverbs_attr ua;
    uint64_t entry_size, flags = 0, n;
    uint8_t entry[4096] = {0};
    int err = 0;

    if (efasim_kattr_has(c, UVERBS_ATTR_QUERY_GID_TABLE_FLAGS))
        err = efasim_kattr_in(c, UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, &flags, sizeof(flags));
    if (!err && flags)
        err = -EINVAL;
    if (!err)
        err = efasim_kattr_u64(c, UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, &entry_size);
    if (!err && (!entry_size || entry_size > sizeof(entry)))
        err = -EINVAL;
    if (!err)
        err = efasim_copy_from_user(
            &ua, (uint64_t)(uintptr_t)c->attr[UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES],
            sizeof(ua));
    if (!err && (ua.len % entry_size || !(ua.len / entry_size)))
        err = -EINVAL;
    if (!err)
        err = need_context(c);
    if (err)
        return err;
    err = gid_entry(c, 1, 0, &e);
    if (err && err != -ENODATA)
        return err;
    n = err ? 0 : 1;
    if (n) {
        /* Each entry as large as the user's, truncated or zero-padded. */
        memcpy(entry, &e, entry_size < sizeof(e) ? entry_size : sizeof(e));
        err = efasim_kattr_out(c, UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, entry, entry_size);
        if (err)
            return err;
    }
    return efasim_kattr_out(c, UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, &n, sizeof(n));
}

/* ---- INVOKE_WRITE: a legacy command carried by ioctl -------------------------------------- */

static int ioctl_invoke_write(struct efasim_kcall *c)
{
    const struct efasim_kwrite *w;
    struct ib_uverbs_attr in = {0}, out = {0};
    uint8_t inbuf[512], outbuf[512];
    uint64_t cmd;
    int err;

    err = efasim_kattr_u64(c, UVERBS_ATTR_WRITE_CMD, &cmd);
    if (err)
        return err;
    if (cmd > UINT32_MAX ||
        (cmd & ~(uint64_t)(IB_USER_VERBS_CMD_FLAG_EXTENDED | IB_USER_VERBS_CMD_COMMAND_MASK)))
        return -EINVAL;
    w = efasim_kwrite_find((uint32_t)cmd & IB_USER_VERBS_CMD_COMMAND_MASK,
                           cmd & IB_USER_VERBS_CMD_FLAG_EXTENDED);
    if (!w)
        return -EOPNOTSUPP;
    if (c->attr[UVERBS_ATTR_CORE_IN]) {
        err = efasim_copy_from_user(&in, (uint64_t)(uintptr_t)c->attr[UVERBS_ATTR_CORE_IN],
                                    sizeof(in));
        if (err)
            return err;
    }
    if (c->attr[UVERBS_ATTR_CORE_OUT]) {
        err = efasim_copy_from_user(&out, (uint64_t)(uintptr_t)c->attr[UVERBS_ATTR_CORE_OUT],
                                    sizeof(out));
        if (err)
            return err;
    }
    /* The request (its response pointer included, and ignored) and the response's room. */
    if (in.len < w->req_size || out.len < w->resp_size)
        return -ENOSPC;
    if (in.len > sizeof(inbuf) || out.len > sizeof(outbuf))
        return -EINVAL;
    if (in.len) {
        err = efasim_kattr_in(c, UVERBS_ATTR_CORE_IN, inbuf, in.len);
        if (err)
            return err;
    }
    memset(outbuf, 0, sizeof(outbuf));
    c->core_in = inbuf;
    c->core_in_len = in.len;
    c->core_out = outbuf;
    c->core_out_len = out.len;
    err = w->fn(c);
    if (!err && c->attr[UVERBS_ATTR_CORE_OUT])
        err = efasim_kattr_out(c, UVERBS_ATTR_CORE_OUT, outbuf, out.len);
    return err;
}

/* ---- PD
 * ------------------------------------------------------------------------------------------ */

static int write_alloc_pd(struct efasim_kcall *c)
{
    struct ib_uverbs_alloc_pd cmd;
    struct ib_uverbs_alloc_pd_resp resp = {0};
    struct efasim_udata u = udata_of(c);
    struct efasim_kobj *pd;
    int err = req_get(c, &cmd, sizeof(cmd));

    if (!err)
        err = need_context(c);
    if (err)
        return err;
    pd = efasim_kobj_new(c->file, EFASIM_KOBJ_PD);
    if (!pd)
        return -ENOMEM;
    err = efasim_efa_alloc_pd(pd, &u);
    if (err) {
        efasim_kobj_free(pd);
        return err;
    }
    efasim_kobj_commit(pd);
    resp.pd_handle = pd->handle;
    resp_put(c, &resp, sizeof(resp));
    return 0;
}

/* Destroy one object through its driver; the core's use counts say whether it may go. */
int efasim_kobj_destroy(struct efasim_kobj *o, bool force)
{
    uint32_t events = 0;
    int err;

    if (o->usecnt && !force)
        return -EBUSY;
    switch (o->type) {
    case EFASIM_KOBJ_PD:
        err = efasim_efa_dealloc_pd(o);
        break;
    case EFASIM_KOBJ_MR:
        err = efasim_efa_dereg_mr(o);
        break;
    case EFASIM_KOBJ_AH:
        err = efasim_efa_destroy_ah(o);
        break;
    case EFASIM_KOBJ_CQ:
        err = efasim_efa_destroy_cq(o, &events);
        break;
    case EFASIM_KOBJ_QP:
        err = efasim_efa_destroy_qp(o);
        break;
    case EFASIM_KOBJ_COMP_CHANNEL:
        efasim_kevents_free(o->impl);
        err = 0;
        break;
    default:
        err = -EINVAL;
        break;
    }
    if (!err)
        efasim_kobj_free(o);
    return err;
}

static int destroy_handle(struct efasim_kcall *c, uint64_t handle, enum efasim_kobj_type type)
{
    struct efasim_kobj *o;
    int err = need_context(c);

    if (err)
        return err;
    o = efasim_kobj_get(c->file, handle, type);
    return o ? efasim_kobj_destroy(o, false) : -EINVAL;
}

static int write_dealloc_pd(struct efasim_kcall *c)
{
    struct ib_uverbs_dealloc_pd cmd;
    int err = req_get(c, &cmd, sizeof(cmd));

    return err ? err : destroy_handle(c, cmd.pd_handle, EFASIM_KOBJ_PD);
}

static int ioctl_destroy(struct efasim_kcall *c, unsigned id, enum efasim_kobj_type type)
{
    uint64_t h;
    int err = efasim_kattr_u64(c, id, &h);

    return err ? err : destroy_handle(c, h, type);
}

static int ioctl_destroy_pd(struct efasim_kcall *c)
{
    return ioctl_destroy(c, UVERBS_ATTR_DESTROY_PD_HANDLE, EFASIM_KOBJ_PD);
}

/* ---- MR
 * ------------------------------------------------------------------------------------------ */

static int core_reg_mr(struct efasim_kcall *c, uint64_t pd_handle, uint64_t start, uint64_t length,
                       uint64_t iova, uint32_t access, bool dmabuf, int dmabuf_fd,
                       struct efasim_kobj **mr_p, uint32_t *lkey_p, uint32_t *rkey_p)
{
    struct efasim_udata u = udata_of(c);
    struct efasim_kobj *pd, *mr;
    long page = sysconf(_SC_PAGESIZE);
    int err = need_context(c);

    if (err)
        return err;
    if (!dmabuf && (start & (uint64_t)(page - 1)) != (iova & (uint64_t)(page - 1)))
        return -EINVAL; /* ib_uverbs_reg_mr: the start and the IOVA differ within a page */
    pd = efasim_kobj_get(c->file, pd_handle, EFASIM_KOBJ_PD);
    if (!pd)
        return -EINVAL;
    mr = efasim_kobj_new(c->file, EFASIM_KOBJ_MR);
    if (!mr)
        return -ENOMEM;
    if (dmabuf) /* any descriptor, negative ones too: dma_buf_get refuses those (EBADF) */
        err = efasim_efa_reg_dmabuf_mr(mr, pd, start, length, iova, dmabuf_fd, access, lkey_p,
                                       rkey_p);
    else
        err = efasim_efa_reg_mr(mr, pd, start, length, iova, access, lkey_p, rkey_p, &u);
    if (err) {
        efasim_kobj_free(mr);
        return err;
    }
    pd->usecnt++;
    efasim_kobj_commit(mr);
    *mr_p = mr;
    return 0;
}

static int write_reg_mr(struct efasim_kcall *c)
{
    struct ib_uverbs_reg_mr cmd;
    struct ib_uverbs_reg_mr_resp resp = {0};
    struct efasim_kobj *mr;
    int err = req_get(c, &cmd, sizeof(cmd));

    if (!err)
        err = core_reg_mr(c, cmd.pd_handle, cmd.start, cmd.length, cmd.hca_va, cmd.access_flags,
                          false, -1, &mr, &resp.lkey, &resp.rkey);
    if (err)
        return err;
    resp.mr_handle = mr->handle;
    resp_put(c, &resp, sizeof(resp));
    return 0;
}

static int ioctl_reg_dmabuf_mr(struct efasim_kcall *c)
{
    uint64_t pd, offset, length, iova, access;
    int32_t fd;
    uint32_t lkey = 0, rkey = 0;
    struct efasim_kobj *mr;
    int err = efasim_kattr_u64(c, UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE, &pd);

    if (!err)
        err = efasim_kattr_in(c, UVERBS_ATTR_REG_DMABUF_MR_OFFSET, &offset, sizeof(offset));
    if (!err)
        err = efasim_kattr_in(c, UVERBS_ATTR_REG_DMABUF_MR_LENGTH, &length, sizeof(length));
    if (!err)
        err = efasim_kattr_in(c, UVERBS_ATTR_REG_DMABUF_MR_IOVA, &iova, sizeof(iova));
    if (!err)
        err = efasim_kattr_in(c, UVERBS_ATTR_REG_DMABUF_MR_FD, &fd, sizeof(fd));
    if (!err)
        err = efasim_kattr_in(c, UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS, &access, sizeof(uint32_t));
    if (err)
        return err;
    err = core_reg_mr(c, pd, offset, length, iova, (uint32_t)access, true, fd, &mr, &lkey, &rkey);
    if (!err)
        err = efasim_kattr_out_data(c, UVERBS_ATTR_REG_DMABUF_MR_HANDLE, mr->handle);
    if (!err)
        err = efasim_kattr_out(c, UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY, &lkey, sizeof(lkey));
    if (!err)
        err = efasim_kattr_out(c, UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY, &rkey, sizeof(rkey));
    return err;
}

static struct efasim_kobj *obj_pd(struct efasim_kobj *o); /* the PD an object holds */

static int destroy_releasing_pd(struct efasim_kcall *c, uint64_t h, enum efasim_kobj_type type)
{
    struct efasim_kobj *o, *pd;
    int err = need_context(c);

    if (err)
        return err;
    o = efasim_kobj_get(c->file, h, type);
    if (!o)
        return -EINVAL;
    pd = obj_pd(o);
    err = efasim_kobj_destroy(o, false);
    if (!err && pd)
        pd->usecnt--;
    return err;
}

static int write_dereg_mr(struct efasim_kcall *c)
{
    struct ib_uverbs_dereg_mr cmd;
    int err = req_get(c, &cmd, sizeof(cmd));

    return err ? err : destroy_releasing_pd(c, cmd.mr_handle, EFASIM_KOBJ_MR);
}

static int ioctl_destroy_mr(struct efasim_kcall *c)
{
    uint64_t h;
    int err = efasim_kattr_u64(c, UVERBS_ATTR_DESTROY_MR_HANDLE, &h);

    return err ? err : destroy_releasing_pd(c, h, EFASIM_KOBJ_MR);
}

/* ---- AH
 * ------------------------------------------------------------------------------------------ */

static int write_create_ah(struct efasim_kcall *c)
{
    struct ib_uverbs_create_ah cmd;
    struct ib_uverbs_create_ah_resp resp = {0};
    struct efasim_udata u = udata_of(c);
    struct efasim_kobj *pd, *ah;
    int err = req_get(c, &cmd, sizeof(cmd));

    if (!err)
        err = need_context(c);
    if (err)
        return err;
    pd = efasim_kobj_get(c->file, cmd.pd_handle, EFASIM_KOBJ_PD);
    if (!pd)
        return -EINVAL;
    ah = efasim_kobj_new(c->file, EFASIM_KOBJ_AH);
    if (!ah)
        return -ENOMEM;
    ah->user_handle = cmd.user_handle;
    err = efasim_efa_create_ah(ah, pd, &cmd.attr, &u);
    if (err) {
        efasim_kobj_free(ah);
        return err;
    }
    pd->usecnt++;
    efasim_kobj_commit(ah);
    resp.ah_handle = ah->handle;
    resp_put(c, &resp, sizeof(resp));
    return 0;
}

static int write_destroy_ah(struct efasim_kcall *c)
{
    struct ib_uverbs_destroy_ah cmd;
    int err = req_get(c, &cmd, sizeof(cmd));

    return err ? err : destroy_releasing_pd(c, cmd.ah_handle, EFASIM_KOBJ_AH);
}

static int ioctl_destroy_ah(struct efasim_kcall *c)
{
    uint64_t h;
    int err = efasim_kattr_u64(c, UVERBS_ATTR_DESTROY_AH_HANDLE, &h);

    return err ? err : destroy_releasing_pd(c, h, EFASIM_KOBJ_AH);
}

/* ---- Completion channels and CQs ----------------------------------------------------------- */

static int write_create_comp_channel(struct efasim_kcall *c)
{
    struct ib_uverbs_create_comp_channel cmd;
    struct ib_uverbs_create_comp_channel_resp resp = {0};
    struct efasim_kevents *ev;
    struct efasim_kobj *o;
    int err = req_get(c, &cmd, sizeof(cmd));

    if (!err)
        err = need_context(c);
    if (err)
        return err;
    ev = calloc(1, sizeof(*ev));
    o = ev ? efasim_kobj_new(c->file, EFASIM_KOBJ_COMP_CHANNEL) : NULL;
    if (!o) {
        free(ev);
        return -ENOMEM;
    }
    err = efasim_kevents_open(ev, false);
    if (err) {
        efasim_kobj_free(o);
        free(ev);
        return err;
    }
    o->impl = ev;
    efasim_kobj_commit(o);
    resp.fd = (uint32_t)ev->user_fd;
    resp_put(c, &resp, sizeof(resp));
    return 0;
}

/* The completion channel whose user end is fd, or NULL. */
static struct efasim_kobj *channel_by_fd(struct efasim_kfile *f, int fd)
{
    for (uint32_t h = 0; h < f->nobjs_slots; h++) {
        struct efasim_kobj *o = f->objs[h];

        if (o && o->type == EFASIM_KOBJ_COMP_CHANNEL &&
            ((struct efasim_kevents *)o->impl)->user_fd == fd)
            return o;
    }
    return NULL;
}

static int core_create_cq(struct efasim_kcall *c, uint64_t user_handle, uint32_t cqe,
                          uint32_t comp_vector, int channel_fd, uint32_t flags,
                          struct efasim_kobj **cq_p, uint32_t *cqe_p)
{
    struct efasim_udata u = udata_of(c);
    struct efasim_kobj *cq, *ch = NULL;
    int err = need_context(c);

    if (err)
        return err;
    if (comp_vector >= efasim_efa_num_comp_vectors(c->file))
        return -EINVAL;
    if (channel_fd >= 0) {
        ch = channel_by_fd(c->file, channel_fd);
        if (!ch)
            return -EINVAL;
    }
    cq = efasim_kobj_new(c->file, EFASIM_KOBJ_CQ);
    if (!cq)
        return -ENOMEM;
    cq->user_handle = user_handle;
    err = efasim_efa_create_cq(cq, cqe, comp_vector, ch, flags, cqe_p, &u);
    if (err) {
        efasim_kobj_free(cq);
        return err;
    }
    if (ch)
        ch->usecnt++;
    efasim_kobj_commit(cq);
    *cq_p = cq;
    return 0;
}

static int write_create_cq(struct efasim_kcall *c)
{
    struct ib_uverbs_create_cq cmd;
    struct ib_uverbs_create_cq_resp resp = {0};
    struct efasim_kobj *cq;
    int err = req_get(c, &cmd, sizeof(cmd));

    if (!err)
        err = core_create_cq(c, cmd.user_handle, cmd.cqe, cmd.comp_vector, cmd.comp_channel, 0, &cq,
                             &resp.cqe);
    if (err)
        return err;
    resp.cq_handle = cq->handle;
    resp_put(c, &resp, sizeof(resp));
    return 0;
}

static int write_ex_create_cq(struct efasim_kcall *c)
{
    struct ib_uverbs_ex_create_cq cmd;
    struct ib_uverbs_ex_create_cq_resp resp = {0};
    struct efasim_kobj *cq;
    int err = req_get(c, &cmd, sizeof(cmd));

    if (err)
        return err;
    if (cmd.comp_mask || cmd.reserved)
        return -EINVAL;
    if (c->core_out_len < sizeof(resp.base))
        return -ENOSPC;
    err = core_create_cq(c, cmd.user_handle, cmd.cqe, cmd.comp_vector, cmd.comp_channel, cmd.flags,
                         &cq, &resp.base.cqe);
    if (err)
        return err;
    resp.base.cq_handle = cq->handle;
    resp.response_length =
        (uint32_t)(c->core_out_len < sizeof(resp) ? c->core_out_len : sizeof(resp));
    resp_put(c, &resp, sizeof(resp));
    return 0;
}

static int ioctl_create_cq(struct efasim_kcall *c)
{
    uint64_t user_handle, fd = (uint64_t)-1;
    uint32_t cqe = 0, vector = 0, flags = 0, resp_cqe = 0;
    struct efasim_kobj *cq;
    int err = efasim_kattr_in(c, UVERBS_ATTR_CREATE_CQ_CQE, &cqe, sizeof(cqe));

    if (!err)
        err = efasim_kattr_u64(c, UVERBS_ATTR_CREATE_CQ_USER_HANDLE, &user_handle);
    if (!err)
        err = efasim_kattr_in(c, UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, &vector, sizeof(vector));
    if (!err && efasim_kattr_has(c, UVERBS_ATTR_CREATE_CQ_FLAGS))
        err = efasim_kattr_in(c, UVERBS_ATTR_CREATE_CQ_FLAGS, &flags, sizeof(flags));
    if (!err && efasim_kattr_has(c, UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL))
        err = efasim_kattr_u64(c, UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL, &fd);
    if (err)
        return err;
    err = core_create_cq(c, user_handle, cqe, vector, (int)(int64_t)fd, flags, &cq, &resp_cqe);
    if (err)
        return err;
    err = efasim_kattr_out_data(c, UVERBS_ATTR_CREATE_CQ_HANDLE, cq->handle);
    if (!err)
        err = efasim_kattr_out(c, UVERBS_ATTR_CREATE_CQ_RESP_CQE, &resp_cqe, sizeof(resp_cqe));
    return err;
}

static int core_destroy_cq(struct efasim_kcall *c, uint64_t h, struct ib_uverbs_destroy_cq_resp *r)
{
    struct efasim_kobj *cq, *ch;
    int err = need_context(c);

    if (err)
        return err;
    cq = efasim_kobj_get(c->file, h, EFASIM_KOBJ_CQ);
    if (!cq)
        return -EINVAL;
    if (cq->usecnt)
        return -EBUSY;
    ch = efasim_efa_cq_channel(cq);
    memset(r, 0, sizeof(*r));
    err = efasim_efa_destroy_cq(cq, &r->comp_events_reported);
    if (err)
        return err;
    efasim_kobj_free(cq);
    if (ch)
        ch->usecnt--;
    return 0;
}

static int write_destroy_cq(struct efasim_kcall *c)
{
    struct ib_uverbs_destroy_cq cmd;
    struct ib_uverbs_destroy_cq_resp resp;
    int err = req_get(c, &cmd, sizeof(cmd));

    if (!err)
        err = core_destroy_cq(c, cmd.cq_handle, &resp);
    if (!err)
        resp_put(c, &resp, sizeof(resp));
    return err;
}

static int ioctl_destroy_cq(struct efasim_kcall *c)
{
    struct ib_uverbs_destroy_cq_resp resp;
    uint64_t h;
    int err = efasim_kattr_u64(c, UVERBS_ATTR_DESTROY_CQ_HANDLE, &h);

    if (!err)
        err = core_destroy_cq(c, h, &resp);
    if (!err)
        err = efasim_kattr_out(c, UVERBS_ATTR_DESTROY_CQ_RESP, &resp, sizeof(resp));
    return err;
}

/* ---- QP
 * ------------------------------------------------------------------------------------------ */

static int core_create_qp(struct efasim_kcall *c, uint64_t user_handle, uint64_t pd_h,
                          uint64_t scq_h, uint64_t rcq_h, bool has_srq, uint8_t qp_type,
                          bool sq_sig_all, uint32_t create_flags, struct ib_uverbs_qp_cap *cap,
                          struct efasim_kobj **qp_p, uint32_t *qpn_p)
{
    struct efasim_udata u = udata_of(c);
    struct efasim_kqp_init init = {0};
    struct efasim_kobj *qp;
    int err = need_context(c);

    if (err)
        return err;
    init.pd = efasim_kobj_get(c->file, pd_h, EFASIM_KOBJ_PD);
    init.send_cq = efasim_kobj_get(c->file, scq_h, EFASIM_KOBJ_CQ);
    init.recv_cq = efasim_kobj_get(c->file, rcq_h, EFASIM_KOBJ_CQ);
    if (!init.pd || !init.send_cq || !init.recv_cq)
        return -EINVAL;
    if (has_srq)
        return -EINVAL; /* no SRQ object can exist on this device */
    init.qp_type = qp_type;
    init.sq_sig_all = sq_sig_all;
    init.create_flags = create_flags;
    init.cap = *cap;
    qp = efasim_kobj_new(c->file, EFASIM_KOBJ_QP);
    if (!qp)
        return -ENOMEM;
    qp->user_handle = user_handle;
    err = efasim_efa_create_qp(qp, &init, qpn_p, &u);
    if (err) {
        efasim_kobj_free(qp);
        return err;
    }
    init.pd->usecnt++;
    init.send_cq->usecnt++;
    init.recv_cq->usecnt++;
    efasim_kobj_commit(qp);
    *cap = init.cap;
    *qp_p = qp;
    return 0;
}

static void qp_resp(struct ib_uverbs_create_qp_resp *r, const struct efasim_kobj *qp, uint32_t qpn,
                    const struct ib_uverbs_qp_cap *cap)
{
    r->qp_handle = qp->handle;
    r->qpn = qpn;
    r->max_send_wr = cap->max_send_wr;
    r->max_recv_wr = cap->max_recv_wr;
    r->max_send_sge = cap->max_send_sge;
    r->max_recv_sge = cap->max_recv_sge;
    r->max_inline_data = cap->max_inline_data;
}

static int write_create_qp(struct efasim_kcall *c)
{
    struct ib_uverbs_create_qp cmd;
    struct ib_uverbs_create_qp_resp resp = {0};
    struct ib_uverbs_qp_cap cap;
    struct efasim_kobj *qp;
    uint32_t qpn;
    int err = req_get(c, &cmd, sizeof(cmd));

    if (err)
        return err;
    cap = (struct ib_uverbs_qp_cap){cmd.max_send_wr, cmd.max_recv_wr, cmd.max_send_sge,
                                    cmd.max_recv_sge, cmd.max_inline_data};
    err = core_create_qp(c, cmd.user_handle, cmd.pd_handle, cmd.send_cq_handle, cmd.recv_cq_handle,
                         cmd.is_srq, cmd.qp_type, cmd.sq_sig_all, 0, &cap, &qp, &qpn);
    if (err)
        return err;
    qp_resp(&resp, qp, qpn, &cap);
    resp_put(c, &resp, sizeof(resp));
    return 0;
}

static int write_ex_create_qp(struct efasim_kcall *c)
{
    struct ib_uverbs_ex_create_qp cmd;
    struct ib_uverbs_ex_create_qp_resp resp = {0};
    struct ib_uverbs_qp_cap cap;
    struct efasim_kobj *qp;
    uint32_t qpn;
    int err = req_get(c, &cmd, sizeof(cmd));

    if (err)
        return err;
    if (cmd.comp_mask & ~(uint32_t)IB_UVERBS_CREATE_QP_SUP_COMP_MASK)
        return -EINVAL;
    if (cmd.comp_mask & IB_UVERBS_CREATE_QP_MASK_IND_TABLE)
        return -EINVAL; /* no indirection table can exist on this device */
    if (c->core_out_len < sizeof(resp.base))
        return -ENOSPC;
    cap = (struct ib_uverbs_qp_cap){cmd.max_send_wr, cmd.max_recv_wr, cmd.max_send_sge,
                                    cmd.max_recv_sge, cmd.max_inline_data};
    err =
        core_create_qp(c, cmd.user_handle, cmd.pd_handle, cmd.send_cq_handle, cmd.recv_cq_handle,
                       cmd.is_srq, cmd.qp_type, cmd.sq_sig_all, cmd.create_flags, &cap, &qp, &qpn);
    if (err)
        return err;
    qp_resp(&resp.base, qp, qpn, &cap);
    resp.response_length =
        (uint32_t)(c->core_out_len < sizeof(resp) ? c->core_out_len : sizeof(resp));
    resp_put(c, &resp, sizeof(resp));
    return 0;
}

static int ioctl_create_qp(struct efasim_kcall *c)
{
    uint64_t user_handle, pd, scq, rcq, type;
    uint32_t flags = 0, qpn;
    struct ib_uverbs_qp_cap cap;
    struct efasim_kobj *qp;
    int err = efasim_kattr_u64(c, UVERBS_ATTR_CREATE_QP_USER_HANDLE, &user_handle);

    if (!err)
        err = efasim_kattr_u64(c, UVERBS_ATTR_CREATE_QP_TYPE, &type);
    if (!err)
        err = efasim_kattr_in(c, UVERBS_ATTR_CREATE_QP_CAP, &cap, sizeof(cap));
    if (!err && efasim_kattr_has(c, UVERBS_ATTR_CREATE_QP_FLAGS))
        err = efasim_kattr_in(c, UVERBS_ATTR_CREATE_QP_FLAGS, &flags, sizeof(flags));
    if (err)
        return err;
    if (!efasim_kattr_has(c, UVERBS_ATTR_CREATE_QP_PD_HANDLE) ||
        !efasim_kattr_has(c, UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE) ||
        !efasim_kattr_has(c, UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE) ||
        efasim_kattr_has(c, UVERBS_ATTR_CREATE_QP_XRCD_HANDLE) ||
        efasim_kattr_has(c, UVERBS_ATTR_CREATE_QP_IND_TABLE_HANDLE) ||
        efasim_kattr_has(c, UVERBS_ATTR_CREATE_QP_SOURCE_QPN))
        return -EINVAL;
    efasim_kattr_u64(c, UVERBS_ATTR_CREATE_QP_PD_HANDLE, &pd);
    efasim_kattr_u64(c, UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE, &scq);
    efasim_kattr_u64(c, UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE, &rcq);
    if (type > 0xff || (flags & ~(uint32_t)IB_UVERBS_QP_CREATE_SQ_SIG_ALL))
        return -EINVAL;
    err = core_create_qp(c, user_handle, pd, scq, rcq,
                         efasim_kattr_has(c, UVERBS_ATTR_CREATE_QP_SRQ_HANDLE), (uint8_t)type,
                         flags & IB_UVERBS_QP_CREATE_SQ_SIG_ALL, 0, &cap, &qp, &qpn);
    if (err)
        return err;
    err = efasim_kattr_out_data(c, UVERBS_ATTR_CREATE_QP_HANDLE, qp->handle);
    if (!err)
        err = efasim_kattr_out(c, UVERBS_ATTR_CREATE_QP_RESP_CAP, &cap, sizeof(cap));
    if (!err)
        err = efasim_kattr_out(c, UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, &qpn, sizeof(qpn));
    return err;
}

static struct efasim_kobj *qp_get(struct efasim_kcall *c, uint64_t h)
{
    return c->file->ctx ? efasim_kobj_get(c->file, h, EFASIM_KOBJ_QP) : NULL;
}

static void dest_to_ah(const struct ib_uverbs_qp_dest *d, struct ib_uverbs_ah_attr *a)
{
    memcpy(a->grh.dgid, d->dgid, sizeof(d->dgid));
    a->grh.flow_label = d->flow_label;
    a->grh.sgid_index = d->sgid_index;
    a->grh.hop_limit = d->hop_limit;
    a->grh.traffic_class = d->traffic_class;
    a->dlid = d->dlid;
    a->sl = d->sl;
    a->src_path_bits = d->src_path_bits;
    a->static_rate = d->static_rate;
    a->is_global = d->is_global;
    a->port_num = d->port_num;
}

static int core_modify_qp(struct efasim_kcall *c, const struct ib_uverbs_modify_qp *m)
{
    struct efasim_udata u = udata_of(c);
    struct ib_uverbs_qp_attr a = {0};
    struct efasim_kobj *qp = qp_get(c, m->qp_handle);

    if (!qp)
        return -EINVAL;
    a.qp_attr_mask = m->attr_mask;
    a.qp_state = m->qp_state;
    a.cur_qp_state = m->cur_qp_state;
    a.path_mtu = m->path_mtu;
    a.path_mig_state = m->path_mig_state;
    a.qkey = m->qkey;
    a.rq_psn = m->rq_psn;
    a.sq_psn = m->sq_psn;
    a.dest_qp_num = m->dest_qp_num;
    a.qp_access_flags = m->qp_access_flags;
    dest_to_ah(&m->dest, &a.ah_attr);
    dest_to_ah(&m->alt_dest, &a.alt_ah_attr);
    a.pkey_index = m->pkey_index;
    a.alt_pkey_index = m->alt_pkey_index;
    a.en_sqd_async_notify = m->en_sqd_async_notify;
    a.max_rd_atomic = m->max_rd_atomic;
    a.max_dest_rd_atomic = m->max_dest_rd_atomic;
    a.min_rnr_timer = m->min_rnr_timer;
    a.port_num = m->port_num;
    a.timeout = m->timeout;
    a.retry_cnt = m->retry_cnt;
    a.rnr_retry = m->rnr_retry;
    a.alt_port_num = m->alt_port_num;
    a.alt_timeout = m->alt_timeout;
    /* ib_uverbs_modify_qp: mask bits beyond the last known attribute are refused. */
    if (m->attr_mask & ~((IBV_QP_RATE_LIMIT << 1) - 1))
        return -EOPNOTSUPP;
    return efasim_efa_modify_qp(qp, &a, m->attr_mask, &u);
}

static int write_modify_qp(struct efasim_kcall *c)
{
    struct ib_uverbs_modify_qp cmd;
    int err = req_get(c, &cmd, sizeof(cmd));

    return err ? err : core_modify_qp(c, &cmd);
}

static int write_ex_modify_qp(struct efasim_kcall *c)
{
    struct ib_uverbs_ex_modify_qp cmd;
    struct ib_uverbs_ex_modify_qp_resp resp = {0};
    int err = req_get(c, &cmd, sizeof(cmd));

    if (err)
        return err;
    if (cmd.reserved)
        return -EINVAL;
    if (cmd.base.attr_mask & IBV_QP_RATE_LIMIT)
        return -EOPNOTSUPP;
    err = core_modify_qp(c, &cmd.base);
    if (err)
        return err;
    resp.response_length =
        (uint32_t)(c->core_out_len < sizeof(resp) ? c->core_out_len : sizeof(resp));
    resp_put(c, &resp, sizeof(resp));
    return 0;
}

static void ah_to_dest(const struct ib_uverbs_ah_attr *a, struct ib_uverbs_qp_dest *d)
{
    memcpy(d->dgid, a->grh.dgid, sizeof(d->dgid));
    d->flow_label = a->grh.flow_label;
    d->sgid_index = a->grh.sgid_index;
    d->hop_limit = a->grh.hop_limit;
    d->traffic_class = a->grh.traffic_class;
    d->dlid = a->dlid;
    d->sl = a->sl;
    d->src_path_bits = a->src_path_bits;
    d->static_rate = a->static_rate;
    d->is_global = a->is_global;
    d->port_num = a->port_num;
}

static int write_query_qp(struct efasim_kcall *c)
{
    struct ib_uverbs_query_qp cmd;
    struct ib_uverbs_query_qp_resp resp = {0};
    struct ib_uverbs_qp_attr a = {0};
    struct efasim_kobj *qp;
    bool sig_all = false;
    int err = req_get(c, &cmd, sizeof(cmd));

    if (err)
        return err;
    qp = qp_get(c, cmd.qp_handle);
    if (!qp)
        return -EINVAL;
    err = efasim_efa_query_qp(qp, cmd.attr_mask, &a, &sig_all);
    if (err)
        return err;
    ah_to_dest(&a.ah_attr, &resp.dest);
    ah_to_dest(&a.alt_ah_attr, &resp.alt_dest);
    resp.max_send_wr = a.max_send_wr;
    resp.max_recv_wr = a.max_recv_wr;
    resp.max_send_sge = a.max_send_sge;
    resp.max_recv_sge = a.max_recv_sge;
    resp.max_inline_data = a.max_inline_data;
    resp.qkey = a.qkey;
    resp.rq_psn = a.rq_psn;
    resp.sq_psn = a.sq_psn;
    resp.dest_qp_num = a.dest_qp_num;
    resp.qp_access_flags = a.qp_access_flags;
    resp.pkey_index = a.pkey_index;
    resp.alt_pkey_index = a.alt_pkey_index;
    resp.qp_state = (uint8_t)a.qp_state;
    resp.cur_qp_state = (uint8_t)a.cur_qp_state;
    resp.path_mtu = (uint8_t)a.path_mtu;
    resp.path_mig_state = (uint8_t)a.path_mig_state;
    resp.sq_draining = a.sq_draining;
    resp.max_rd_atomic = a.max_rd_atomic;
    resp.max_dest_rd_atomic = a.max_dest_rd_atomic;
    resp.min_rnr_timer = a.min_rnr_timer;
    resp.port_num = a.port_num;
    resp.timeout = a.timeout;
    resp.retry_cnt = a.retry_cnt;
    resp.rnr_retry = a.rnr_retry;
    resp.alt_port_num = a.alt_port_num;
    resp.alt_timeout = a.alt_timeout;
    resp.sq_sig_all = sig_all;
    resp_put(c, &resp, sizeof(resp));
    return 0;
}

static int core_destroy_qp(struct efasim_kcall *c, uint64_t h, uint32_t *events_p)
{
    struct efasim_kobj *qp = qp_get(c, h), *pd, *scq, *rcq;
    int err;

    if (!qp)
        return -EINVAL;
    efasim_efa_qp_objects(qp, &pd, &scq, &rcq);
    err = efasim_efa_destroy_qp(qp);
    if (err)
        return err;
    efasim_kobj_free(qp);
    pd->usecnt--;
    scq->usecnt--;
    rcq->usecnt--;
    *events_p = 0;
    return 0;
}

static int write_destroy_qp(struct efasim_kcall *c)
{
    struct ib_uverbs_destroy_qp cmd;
    struct ib_uverbs_destroy_qp_resp resp = {0};
    int err = req_get(c, &cmd, sizeof(cmd));

    if (!err)
        err = core_destroy_qp(c, cmd.qp_handle, &resp.events_reported);
    if (!err)
        resp_put(c, &resp, sizeof(resp));
    return err;
}

static int ioctl_destroy_qp(struct efasim_kcall *c)
{
    struct ib_uverbs_destroy_qp_resp resp = {0};
    uint64_t h;
    int err = efasim_kattr_u64(c, UVERBS_ATTR_DESTROY_QP_HANDLE, &h);

    if (!err)
        err = core_destroy_qp(c, h, &resp.events_reported);
    if (!err)
        err = efasim_kattr_out(c, UVERBS_ATTR_DESTROY_QP_RESP, &resp, sizeof(resp));
    return err;
}

static struct efasim_kobj *obj_pd(struct efasim_kobj *o)
{
    return efasim_efa_obj_pd(o);
}

/* ---- The tables -------------------------------------------------------------------------------
 */

#define A_IN(id, min, max, mand)                \
    {                                           \
        id, EFASIM_KATTR_PTR_IN, mand, min, max \
    }
#define A_OUT(id, min, mand)                   \
    {                                          \
        id, EFASIM_KATTR_PTR_OUT, mand, min, 0 \
    }
#define A_CONST(id, mand)                     \
    {                                         \
        id, EFASIM_KATTR_CONST_IN, mand, 0, 8 \
    }
#define A_FLAGS(id, mand)                     \
    {                                         \
        id, EFASIM_KATTR_FLAGS_IN, mand, 0, 8 \
    }
#define A_IDR(id, mand)                  \
    {                                    \
        id, EFASIM_KATTR_IDR, mand, 0, 0 \
    }
#define A_FD(id, mand)                  \
    {                                   \
        id, EFASIM_KATTR_FD, mand, 0, 0 \
    }
#define A_UHW                                              \
    {UVERBS_ATTR_UHW_IN, EFASIM_KATTR_UHW, false, 0, 0},   \
    {                                                      \
        UVERBS_ATTR_UHW_OUT, EFASIM_KATTR_UHW, false, 0, 0 \
    }

static const struct efasim_kmethod g_methods[] = {
    {UVERBS_OBJECT_DEVICE,
     UVERBS_METHOD_INVOKE_WRITE,
     ioctl_invoke_write,
     {A_IN(UVERBS_ATTR_CORE_IN, 0, 0, false), A_OUT(UVERBS_ATTR_CORE_OUT, 0, false),
      A_CONST(UVERBS_ATTR_WRITE_CMD, true), A_UHW}},
    {UVERBS_OBJECT_DEVICE,
     UVERBS_METHOD_GET_CONTEXT,
     ioctl_get_context,
     {A_OUT(UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, 4, false),
      A_OUT(UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT, 8, false), A_UHW}},
    {UVERBS_OBJECT_DEVICE,
     UVERBS_METHOD_QUERY_CONTEXT,
     ioctl_query_context,
     {A_OUT(UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS, 4, false),
      A_OUT(UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT, 8, false)}},
    {UVERBS_OBJECT_DEVICE,
     UVERBS_METHOD_QUERY_PORT,
     ioctl_query_port,
     {A_CONST(UVERBS_ATTR_QUERY_PORT_PORT_NUM, true),
      A_OUT(UVERBS_ATTR_QUERY_PORT_RESP, sizeof(struct ib_uverbs_query_port_resp_ex), true)}},
    {UVERBS_OBJECT_DEVICE,
     UVERBS_METHOD_QUERY_GID_TABLE,
     ioctl_query_gid_table,
     {A_CONST(UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, true),
      A_FLAGS(UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, false),
      A_OUT(UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, 0, true),
      A_OUT(UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, 8, true)}},
    {UVERBS_OBJECT_DEVICE,
     UVERBS_METHOD_QUERY_GID_ENTRY,
     ioctl_query_gid_entry,
     {A_CONST(UVERBS_ATTR_QUERY_GID_ENTRY_PORT, true),
      A_CONST(UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX, true),
      A_FLAGS(UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS, true),
      A_OUT(UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, sizeof(struct ib_uverbs_gid_entry), true)}},
    {UVERBS_OBJECT_ASYNC_EVENT,
     UVERBS_METHOD_ASYNC_EVENT_ALLOC,
     ioctl_async_alloc,
     {A_FD(UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE, true)}},
    {UVERBS_OBJECT_PD,
     UVERBS_METHOD_PD_DESTROY,
     ioctl_destroy_pd,
     {A_IDR(UVERBS_ATTR_DESTROY_PD_HANDLE, true)}},
    {UVERBS_OBJECT_MR,
     UVERBS_METHOD_MR_DESTROY,
     ioctl_destroy_mr,
     {A_IDR(UVERBS_ATTR_DESTROY_MR_HANDLE, true)}},
    {UVERBS_OBJECT_MR,
     UVERBS_METHOD_REG_DMABUF_MR,
     ioctl_reg_dmabuf_mr,
     {A_IDR(UVERBS_ATTR_REG_DMABUF_MR_HANDLE, true),
      A_IDR(UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE, true),
      A_IN(UVERBS_ATTR_REG_DMABUF_MR_OFFSET, 8, 8, true),
      A_IN(UVERBS_ATTR_REG_DMABUF_MR_LENGTH, 8, 8, true),
      A_IN(UVERBS_ATTR_REG_DMABUF_MR_IOVA, 8, 8, true),
      /* UVERBS_ATTR_RAW_FD: an s32 inline, as rdma-core fills it (fill_attr_in_uint32) */
      A_IN(UVERBS_ATTR_REG_DMABUF_MR_FD, 4, 4, true),
      A_FLAGS(UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS, true),
      A_OUT(UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY, 4, true),
      A_OUT(UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY, 4, true)}},
    {UVERBS_OBJECT_AH,
     UVERBS_METHOD_AH_DESTROY,
     ioctl_destroy_ah,
     {A_IDR(UVERBS_ATTR_DESTROY_AH_HANDLE, true)}},
    {UVERBS_OBJECT_CQ,
     UVERBS_METHOD_CQ_CREATE,
     ioctl_create_cq,
     {A_IDR(UVERBS_ATTR_CREATE_CQ_HANDLE, true), A_IN(UVERBS_ATTR_CREATE_CQ_CQE, 4, 4, true),
      A_IN(UVERBS_ATTR_CREATE_CQ_USER_HANDLE, 8, 8, true),
      A_FD(UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL, false),
      A_IN(UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, 4, 4, true),
      A_FLAGS(UVERBS_ATTR_CREATE_CQ_FLAGS, false), A_OUT(UVERBS_ATTR_CREATE_CQ_RESP_CQE, 4, true),
      A_FD(UVERBS_ATTR_CREATE_CQ_EVENT_FD, false), A_UHW}},
    {UVERBS_OBJECT_CQ,
     UVERBS_METHOD_CQ_DESTROY,
     ioctl_destroy_cq,
     {A_IDR(UVERBS_ATTR_DESTROY_CQ_HANDLE, true),
      A_OUT(UVERBS_ATTR_DESTROY_CQ_RESP, sizeof(struct ib_uverbs_destroy_cq_resp), true)}},
    {UVERBS_OBJECT_QP,
     UVERBS_METHOD_QP_CREATE,
     ioctl_create_qp,
     {A_IDR(UVERBS_ATTR_CREATE_QP_HANDLE, true), A_IDR(UVERBS_ATTR_CREATE_QP_XRCD_HANDLE, false),
      A_IDR(UVERBS_ATTR_CREATE_QP_PD_HANDLE, false), A_IDR(UVERBS_ATTR_CREATE_QP_SRQ_HANDLE, false),
      A_IDR(UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE, false),
      A_IDR(UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE, false),
      A_IDR(UVERBS_ATTR_CREATE_QP_IND_TABLE_HANDLE, false),
      A_IN(UVERBS_ATTR_CREATE_QP_USER_HANDLE, 8, 8, true),
      A_IN(UVERBS_ATTR_CREATE_QP_CAP, sizeof(struct ib_uverbs_qp_cap),
           sizeof(struct ib_uverbs_qp_cap), true),
      A_CONST(UVERBS_ATTR_CREATE_QP_TYPE, true), A_FLAGS(UVERBS_ATTR_CREATE_QP_FLAGS, false),
      A_IN(UVERBS_ATTR_CREATE_QP_SOURCE_QPN, 4, 4, false),
      A_FD(UVERBS_ATTR_CREATE_QP_EVENT_FD, false),
      A_OUT(UVERBS_ATTR_CREATE_QP_RESP_CAP, sizeof(struct ib_uverbs_qp_cap), true),
      A_OUT(UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, 4, true), A_UHW}},
    {UVERBS_OBJECT_QP,
     UVERBS_METHOD_QP_DESTROY,
     ioctl_destroy_qp,
     {A_IDR(UVERBS_ATTR_DESTROY_QP_HANDLE, true),
      A_OUT(UVERBS_ATTR_DESTROY_QP_RESP, sizeof(struct ib_uverbs_destroy_qp_resp), true)}},
};

/* Request sizes as uverbs_def_write_intf declares them (a struct up to its last field). */
#define W(cmd, req, resp, fn)                    \
    {                                            \
        cmd, false, sizeof(req), resp, false, fn \
    }
#define WU(cmd, req, resp, fn)                  \
    {                                           \
        cmd, false, sizeof(req), resp, true, fn \
    }
#define WX(cmd, req, resp, fn)         \
    {                                  \
        cmd, true, req, resp, true, fn \
    }

static const struct efasim_kwrite g_writes[] = {
    WU(IB_USER_VERBS_CMD_GET_CONTEXT, struct ib_uverbs_get_context,
       sizeof(struct ib_uverbs_get_context_resp), write_get_context),
    W(IB_USER_VERBS_CMD_QUERY_DEVICE, struct ib_uverbs_query_device,
      sizeof(struct ib_uverbs_query_device_resp), write_query_device),
    W(IB_USER_VERBS_CMD_QUERY_PORT, struct ib_uverbs_query_port,
      sizeof(struct ib_uverbs_query_port_resp), write_query_port),
    WU(IB_USER_VERBS_CMD_ALLOC_PD, struct ib_uverbs_alloc_pd,
       sizeof(struct ib_uverbs_alloc_pd_resp), write_alloc_pd),
    W(IB_USER_VERBS_CMD_DEALLOC_PD, struct ib_uverbs_dealloc_pd, 0, write_dealloc_pd),
    WU(IB_USER_VERBS_CMD_CREATE_AH, struct ib_uverbs_create_ah,
       sizeof(struct ib_uverbs_create_ah_resp), write_create_ah),
    W(IB_USER_VERBS_CMD_DESTROY_AH, struct ib_uverbs_destroy_ah, 0, write_destroy_ah),
    WU(IB_USER_VERBS_CMD_REG_MR, struct ib_uverbs_reg_mr, sizeof(struct ib_uverbs_reg_mr_resp),
       write_reg_mr),
    W(IB_USER_VERBS_CMD_DEREG_MR, struct ib_uverbs_dereg_mr, 0, write_dereg_mr),
    W(IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, struct ib_uverbs_create_comp_channel,
      sizeof(struct ib_uverbs_create_comp_channel_resp), write_create_comp_channel),
    WU(IB_USER_VERBS_CMD_CREATE_CQ, struct ib_uverbs_create_cq,
       sizeof(struct ib_uverbs_create_cq_resp), write_create_cq),
    W(IB_USER_VERBS_CMD_DESTROY_CQ, struct ib_uverbs_destroy_cq,
      sizeof(struct ib_uverbs_destroy_cq_resp), write_destroy_cq),
    WU(IB_USER_VERBS_CMD_CREATE_QP, struct ib_uverbs_create_qp,
       sizeof(struct ib_uverbs_create_qp_resp), write_create_qp),
    W(IB_USER_VERBS_CMD_QUERY_QP, struct ib_uverbs_query_qp, sizeof(struct ib_uverbs_query_qp_resp),
      write_query_qp),
    W(IB_USER_VERBS_CMD_MODIFY_QP, struct ib_uverbs_modify_qp, 0, write_modify_qp),
    W(IB_USER_VERBS_CMD_DESTROY_QP, struct ib_uverbs_destroy_qp,
      sizeof(struct ib_uverbs_destroy_qp_resp), write_destroy_qp),
    WX(IB_USER_VERBS_EX_CMD_QUERY_DEVICE, sizeof(struct ib_uverbs_ex_query_device),
       offsetof(struct ib_uverbs_ex_query_device_resp, response_length) + 4, write_ex_query_device),
    WX(IB_USER_VERBS_EX_CMD_CREATE_CQ, sizeof(struct ib_uverbs_ex_create_cq),
       sizeof(struct ib_uverbs_ex_create_cq_resp), write_ex_create_cq),
    WX(IB_USER_VERBS_EX_CMD_CREATE_QP, offsetof(struct ib_uverbs_ex_create_qp, comp_mask) + 4,
       sizeof(struct ib_uverbs_ex_create_qp_resp), write_ex_create_qp),
    WX(IB_USER_VERBS_EX_CMD_MODIFY_QP, sizeof(struct ib_uverbs_ex_modify_qp), 0,
       write_ex_modify_qp),
};

const struct efasim_kmethod *efasim_kmethod_find(uint16_t object, uint16_t method)
{
    for (size_t i = 0; i < ARRAY_SIZE(g_methods); i++)
        if (g_methods[i].object == object && g_methods[i].method == method)
            return &g_methods[i];
    return NULL;
}

const struct efasim_kwrite *efasim_kwrite_find(uint32_t cmd, bool extended)
{
    for (size_t i = 0; i < ARRAY_SIZE(g_writes); i++)
        if (g_writes[i].cmd == cmd && g_writes[i].extended == extended)
            return &g_writes[i];
    return NULL;
}
