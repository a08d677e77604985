/*
 * efasim's drop-in libibverbs: devices, contexts, PDs, MRs, AHs and the rest of
 * the libibverbs ABI that is not the datapath, each a wrapper around the
 * model's object (model/objects.c makes them and checks what EFA's kernel
 * driver checks). Every exported symbol is bound to the version node rdma-core
 * 44 uses for it (libibverbs.map), so a binary linked against the real library
 * runs on this one unmodified. Calls efasim does not implement fail with
 * EOPNOTSUPP; none crash.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "efasim_verbs.h"

static struct efasim_vdev g_devices[EFASIM_MAX_DEVICES];
static struct ibv_device *g_device_ptrs[EFASIM_MAX_DEVICES + 1];
static pthread_once_t g_devices_once = PTHREAD_ONCE_INIT;
static pthread_once_t g_verbs_once = PTHREAD_ONCE_INIT;

/* ---- Devices -------------------------------------------------------------- */

static struct ibv_context *device_alloc_context(struct ibv_device *device, int cmd_fd)
{
    (void)device, (void)cmd_fd;
    errno = EOPNOTSUPP;
    return NULL;
}

static void device_free_context(struct ibv_context *context)
{
    (void)context;
}

/* The model's devices (which writes their sysfs view), each in its struct ibv_device. */
static void devices_init(void)
{
    unsigned n;
    struct efasim_device *devs = efasim_devices(&n);

    for (unsigned i = 0; i < n; i++) {
        struct efasim_vdev *d = &g_devices[i];

        d->m = &devs[i];
        d->ibv._ops._dummy1 = device_alloc_context;
        d->ibv._ops._dummy2 = device_free_context;
        d->ibv.node_type = IBV_NODE_UNSPECIFIED;
        d->ibv.transport_type = IBV_TRANSPORT_UNSPECIFIED;
        snprintf(d->ibv.name, sizeof(d->ibv.name), "%s", d->m->name);
        snprintf(d->ibv.dev_name, sizeof(d->ibv.dev_name), "uverbs%u", i);
        efasim_sysfs_paths(i, d->m->name, d->ibv.dev_path, d->ibv.ibdev_path);
        g_device_ptrs[i] = &d->ibv;
    }
    g_device_ptrs[n] = NULL;
}

/*
 * The devices in the order rdma-core lists them: its sysfs class directory's
 * (class/infiniband_verbs/uverbs<i>, as readdir gives them), which no kernel
 * promises to be any order (on ext4 it follows the names' hashes). A device the
 * directory does not show (its tree could not be written) comes after, in index
 * order. list has room for n.
 */
static void devices_in_sysfs_order(struct ibv_device **list, unsigned n)
{
    bool listed[EFASIM_MAX_DEVICES] = {false};
    char path[PATH_MAX];
    unsigned k = 0;
    struct dirent *e;
    DIR *d;

    snprintf(path, sizeof(path), "%s/class/infiniband_verbs", efasim_sysfs_root());
    d = opendir(path);
    while (d && (e = readdir(d)) != NULL) {
        unsigned i;
        char end;

        if (sscanf(e->d_name, "uverbs%u%c", &i, &end) == 1 && i < n && !listed[i]) {
            listed[i] = true;
            list[k++] = g_device_ptrs[i];
        }
    }
    if (d)
        closedir(d);
    for (unsigned i = 0; i < n; i++)
        if (!listed[i])
            list[k++] = g_device_ptrs[i];
}

EFASIM_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
    struct ibv_device **list;
    unsigned n;

    pthread_once(&g_devices_once, devices_init);
    pthread_once(&g_verbs_once, efasim_vfork_env_init); /* libibverbs 44's ibverbs_init */
    n = efasim_config()->ndev;
    list = calloc(n + 1, sizeof(*list));
    if (!list) {
        errno = ENOMEM;
        return NULL;
    }
    devices_in_sysfs_order(list, n);
    if (num_devices)
        *num_devices = (int)n;
    return list;
}

/* For libefa's efadv entry points (efadv.c), which refuse devices that are not EFA's. */
bool efasim_vdev_is_efa(const struct ibv_device *device)
{
    for (size_t i = 0; i < EFASIM_MAX_DEVICES; i++)
        if (device == &g_devices[i].ibv && g_devices[i].m)
            return true;
    return false;
}

EFASIM_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
    free(list);
}

EFASIM_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
    return device->name;
}

EFASIM_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
    return (int)to_vdev(device)->m->index;
}

EFASIM_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
    return htobe64(to_vdev(device)->m->guid);
}

/* ---- Context ops ------------------------------------------------------------ */

static int ctx_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
    efasim_device_attr(to_vctx(context)->m->dev, attr);
    return 0;
}

static int ctx_query_device_ex(struct ibv_context *context,
                               const struct ibv_query_device_ex_input *input,
                               struct ibv_device_attr_ex *attr, size_t attr_size)
{
    struct ibv_device_attr_ex full;

    (void)input;
    memset(&full, 0, sizeof(full));
    efasim_device_attr(to_vctx(context)->m->dev, &full.orig_attr);
    full.max_dm_size = 0;
    /* libibverbs' ibv_cmd_query_device_any: the ports sysfs lists, else phys_port_cnt. */
    full.phys_port_cnt_ex = full.orig_attr.phys_port_cnt;
    memcpy(attr, &full, attr_size < sizeof(full) ? attr_size : sizeof(full));
    return 0;
}

static int ctx_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr,
                          size_t attr_len)
{
    struct ibv_port_attr full;

    (void)context;
    if (port_num != EFASIM_PORT)
        return EINVAL;
    efasim_port_attr(&full);
    memcpy(attr, &full, attr_len < sizeof(full) ? attr_len : sizeof(full));
    return 0;
}

static int ctx_poll_cq_unsupported(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
    (void)cq, (void)n, (void)wc;
    return -EOPNOTSUPP;
}

static struct ibv_mw *ctx_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
    (void)pd, (void)type;
    errno = EOPNOTSUPP;
    return NULL;
}

static int ctx_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
    (void)qp, (void)mw, (void)bind;
    return EOPNOTSUPP;
}

static int ctx_dealloc_mw(struct ibv_mw *mw)
{
    (void)mw;
    return EOPNOTSUPP;
}

static int ctx_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    (void)srq;
    *bad = wr;
    return EOPNOTSUPP;
}

/* ibv_create_cq_ex: the provider's CQ, then libibverbs' own part (__lib_ibv_create_cq_ex). */
static struct ibv_cq_ex *ctx_create_cq_ex(struct ibv_context *context,
                                          struct ibv_cq_init_attr_ex *attr)
{
    struct ibv_cq_ex *cq = efasim_vcq_create(to_vctx(context), attr, 0);

    if (cq)
        efasim_vcq_init_verbs(ibv_cq_ex_to_cq(cq), attr->channel, attr->cq_context);
    return cq;
}

/* ibv_create_qp_ex beyond the PD alone; as rdma-core 44's efa_create_qp_ex, UD only. */
static struct ibv_qp *ctx_create_qp_ex(struct ibv_context *context,
                                       struct ibv_qp_init_attr_ex *attr)
{
    if (attr->qp_type != IBV_QPT_UD) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    return efasim_vqp_create(to_vctx(context), attr, NULL);
}

EFASIM_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
    struct efasim_vctx *ctx = calloc(1, sizeof(*ctx));
    struct ibv_context *c;
    int err;

    if (!ctx) {
        errno = ENOMEM;
        return NULL;
    }
    /* The context's async event file: EFA raises no async event, but reading it blocks. */
    err = efasim_event_file_open(&ctx->vctx.context.async_fd, &ctx->async_device_fd);
    if (err) {
        free(ctx);
        errno = -err;
        return NULL;
    }
    err = efasim_context_open(to_vdev(device)->m, ctx, &ctx->m);
    if (err) {
        close(ctx->vctx.context.async_fd);
        close(ctx->async_device_fd);
        free(ctx);
        errno = -err;
        return NULL;
    }
    ctx->vctx.sz = sizeof(ctx->vctx);
    ctx->vctx.query_port = ctx_query_port;
    ctx->vctx.query_device_ex = ctx_query_device_ex;
    ctx->vctx.create_cq_ex = ctx_create_cq_ex;
    ctx->vctx.create_qp_ex = ctx_create_qp_ex;
    c = &ctx->vctx.context;
    c->device = device;
    c->cmd_fd = -1;
    c->num_comp_vectors = 1;
    c->abi_compat = __VERBS_ABI_IS_EXTENDED;
    pthread_mutex_init(&c->mutex, NULL);
    c->ops._compat_query_device = (void *)ctx_query_device;
    c->ops.poll_cq = efasim_vcq_poll;
    c->ops.req_notify_cq = efasim_vcq_arm;
    c->ops.alloc_mw = ctx_alloc_mw;
    c->ops.bind_mw = ctx_bind_mw;
    c->ops.dealloc_mw = ctx_dealloc_mw;
    c->ops.post_send = efasim_vqp_post_send;
    c->ops.post_recv = efasim_vqp_post_recv;
    c->ops.post_srq_recv = ctx_post_srq_recv;
    (void)ctx_poll_cq_unsupported;
    return c;
}

/*
 * EBUSY while the context has QPs. The MRs and AHs the application left go
 * with the context (their wrappers are freed with the model's objects).
 */
EFASIM_EXPORT int ibv_close_device(struct ibv_context *context)
{
    struct efasim_vctx *ctx = to_vctx(context);
    int err = efasim_context_close(ctx->m, free);

    if (err)
        return -err;
    close(context->async_fd);
    close(ctx->async_device_fd);
    free(ctx);
    return 0;
}

EFASIM_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
    return ctx_query_device(context, attr);
}

/* The old ABI's struct _compat_ibv_port_attr is a prefix of struct ibv_port_attr. */
#undef ibv_query_port
EFASIM_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
                                 struct _compat_ibv_port_attr *attr)
{
    return ctx_query_port(context, port_num, (struct ibv_port_attr *)attr,
                          offsetof(struct ibv_port_attr, flags));
}

EFASIM_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
                                union ibv_gid *gid)
{
    if (port_num != EFASIM_PORT || index != 0)
        return -1;
    *gid = to_vctx(context)->m->dev->gid;
    return 0;
}

/* rdma-core's private enum ibv_gid_type_sysfs: 0 = IB/RoCE v1. */
EFASIM_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
                                     unsigned int index, int *type)
{
    (void)context;
    if (port_num != EFASIM_PORT || index != 0)
        return -1;
    *type = 0;
    return 0;
}

EFASIM_EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
                                    uint32_t gid_index, struct ibv_gid_entry *entry, uint32_t flags,
                                    size_t entry_size)
{
    struct ibv_gid_entry e = {0};

    if (flags || port_num != EFASIM_PORT || gid_index != 0)
        return EINVAL;
    e.gid = to_vctx(context)->m->dev->gid;
    e.port_num = EFASIM_PORT;
    e.gid_type = IBV_GID_TYPE_IB;
    memcpy(entry, &e, entry_size < sizeof(e) ? entry_size : sizeof(e));
    return 0;
}

EFASIM_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context,
                                           struct ibv_gid_entry *entries, size_t max_entries,
                                           uint32_t flags, size_t entry_size)
{
    if (flags || !max_entries)
        return -EINVAL;
    if (_ibv_query_gid_ex(context, EFASIM_PORT, 0, entries, 0, entry_size))
        return -EINVAL;
    return 1;
}

EFASIM_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index,
                                 __be16 *pkey)
{
    (void)context;
    if (port_num != EFASIM_PORT || index != 0)
        return -1;
    *pkey = htobe16(0xffff);
    return 0;
}

EFASIM_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
    (void)context;
    return port_num == EFASIM_PORT && be16toh(pkey) == 0xffff ? 0 : -1;
}

/* ---- PD ----------------------------------------------------------------------- */

EFASIM_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
    struct efasim_pd *m;
    struct efasim_vpd *pd;
    int err = efasim_pd_create(to_vctx(context)->m, &m);

    if (err) {
        errno = -err;
        return NULL;
    }
    pd = calloc(1, sizeof(*pd));
    if (!pd) {
        efasim_pd_destroy(m);
        errno = ENOMEM;
        return NULL;
    }
    pd->m = m;
    pd->ibv.context = context;
    return &pd->ibv;
}

/* EBUSY while MRs, AHs or QPs use it, as the kernel's core answers (ib_dealloc_pd's use count). */
EFASIM_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
    if (efasim_pd_busy(to_vpd(pd)->m))
        return EBUSY;
    efasim_pd_destroy(to_vpd(pd)->m);
    free(pd);
    return 0;
}

/* ---- MR ----------------------------------------------------------------------- */

/*
 * libibverbs 44's ibv_reg_mr_iova2: the pages kept from forked children first
 * once ibv_fork_init succeeded (fork.c), back if the registration fails; the
 * kernel driver's checks, the limits and the keys are the model's (efasim_mr_reg).
 */
EFASIM_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
                                              uint64_t iova, unsigned int access)
{
    bool odp = access & IBV_ACCESS_ON_DEMAND;
    struct efasim_mr *m;
    struct efasim_vmr *mr;
    int err;

    if (!odp && ibv_dontfork_range(addr, length))
        return NULL; /* errno: madvise's */
    err = efasim_mr_reg(to_vpd(pd)->m, (uint64_t)(uintptr_t)addr, length, iova, access, 0, &m);
    if (err)
        goto err_dofork;
    mr = calloc(1, sizeof(*mr));
    if (!mr) {
        efasim_mr_dereg(m);
        err = -ENOMEM;
        goto err_dofork;
    }
    mr->m = m;
    m->fe = mr;
    mr->ibv.context = pd->context;
    mr->ibv.pd = pd;
    mr->ibv.addr = addr;
    mr->ibv.length = length;
    mr->ibv.lkey = m->lkey;
    mr->ibv.rkey = m->rkey;
    return &mr->ibv;

err_dofork:
    if (!odp)
        ibv_dofork_range(addr, length);
    errno = -err;
    return NULL;
}

/* Refused as EFA's driver refuses it with no dma-buf exporter (efasim_mr_reg_dmabuf). */
EFASIM_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
                                               uint64_t iova, int fd, int access)
{
    errno = -efasim_mr_reg_dmabuf(to_vpd(pd)->m, offset, length, iova, fd, (unsigned)access);
    return NULL;
}

#undef ibv_reg_mr_iova
EFASIM_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
                                             uint64_t iova, int access)
{
    return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned)access);
}

#undef ibv_reg_mr
EFASIM_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
    return ibv_reg_mr_iova2(pd, addr, length, (uint64_t)(uintptr_t)addr, (unsigned)access);
}

/* libibverbs 44's ibv_dereg_mr: the pages go back to forked children after the provider's part. */
EFASIM_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
    void *addr = mr->addr;
    size_t length = mr->length;

    efasim_mr_dereg(to_vmr(mr)->m);
    free(mr);
    ibv_dofork_range(addr, length);
    return 0;
}

/* ---- AH ----------------------------------------------------------------------- */

/* A global address on port 1 (EINVAL); the AH number and its table are the model's. */
EFASIM_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
    struct efasim_ah *m;
    struct efasim_vah *ah;
    int err;

    if (!attr->is_global || attr->port_num != EFASIM_PORT) {
        errno = EINVAL;
        return NULL;
    }
    err = efasim_ah_create(to_vpd(pd)->m, &attr->grh.dgid, &m);
    if (err) {
        errno = -err;
        return NULL;
    }
    ah = calloc(1, sizeof(*ah));
    if (!ah) {
        efasim_ah_destroy(m);
        errno = ENOMEM;
        return NULL;
    }
    ah->m = m;
    m->fe = ah;
    ah->ibv.context = pd->context;
    ah->ibv.pd = pd;
    ah->ibv.handle = m->index + 1;
    return &ah->ibv;
}

EFASIM_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
    efasim_ah_destroy(to_vah(ah)->m);
    free(ah);
    return 0;
}

/* ---- QP and CQ entry points (bodies in qp.c and cq.c) ---------------------------- */

/*
 * As rdma-core 44's efa_create_qp: UD only (EOPNOTSUPP for any other type;
 * SRD is efadv's), with the PD as the only extension, and the caps handed
 * back in attr.
 */
EFASIM_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
    struct ibv_qp_init_attr_ex ex;
    struct ibv_qp *qp;

    if (attr->qp_type != IBV_QPT_UD) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    memset(&ex, 0, sizeof(ex));
    memcpy(&ex, attr, sizeof(*attr));
    ex.comp_mask = IBV_QP_INIT_ATTR_PD;
    ex.pd = pd;
    qp = efasim_vqp_create(to_vctx(pd->context), &ex, NULL);
    if (qp)
        memcpy(attr, &ex, sizeof(*attr));
    return qp;
}

EFASIM_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
    return efasim_vqp_modify(qp, attr, attr_mask);
}

EFASIM_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
                               struct ibv_qp_init_attr *init_attr)
{
    return efasim_vqp_query(qp, attr, attr_mask, init_attr);
}

EFASIM_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
    return efasim_vqp_destroy(qp);
}

EFASIM_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
                                           struct ibv_comp_channel *channel, int comp_vector)
{
    struct ibv_cq_init_attr_ex attr = {.cqe = (uint32_t)cqe,
                                       .cq_context = cq_context,
                                       .channel = channel,
                                       .comp_vector = (uint32_t)comp_vector,
                                       .wc_flags = IBV_WC_STANDARD_FLAGS};
    struct ibv_cq_ex *cq;

    if (cqe <= 0) {
        errno = EINVAL;
        return NULL;
    }
    cq = efasim_vcq_create(to_vctx(context), &attr, 0);
    if (!cq)
        return NULL;
    efasim_vcq_init_verbs(ibv_cq_ex_to_cq(cq), channel, cq_context);
    return ibv_cq_ex_to_cq(cq);
}

/* libibverbs' ibv_destroy_cq: the CQ, then its channel's reference (a CQ from efadv has none). */
EFASIM_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
    struct ibv_comp_channel *channel = cq->channel;
    struct ibv_context *context = cq->context;
    int ret = efasim_vcq_destroy(cq);

    if (!ret && channel) {
        pthread_mutex_lock(&context->mutex);
        --channel->refcnt;
        pthread_mutex_unlock(&context->mutex);
    }
    return ret;
}

/* ---- Strings -------------------------------------------------------------------- */

EFASIM_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status status)
{
    static const char *const str[] = {
        [IBV_WC_SUCCESS] = "success",
        [IBV_WC_LOC_LEN_ERR] = "local length error",
        [IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
        [IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
        [IBV_WC_LOC_PROT_ERR] = "local protection error",
        [IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
        [IBV_WC_MW_BIND_ERR] = "memory management operation error",
        [IBV_WC_BAD_RESP_ERR] = "bad response error",
        [IBV_WC_LOC_ACCESS_ERR] = "local access error",
        [IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
        [IBV_WC_REM_ACCESS_ERR] = "remote access error",
        [IBV_WC_REM_OP_ERR] = "remote operation error",
        [IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
        [IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
        [IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
        [IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
        [IBV_WC_REM_ABORT_ERR] = "aborted error",
        [IBV_WC_INV_EECN_ERR] = "invalid EE context number",
        [IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
        [IBV_WC_FATAL_ERR] = "fatal error",
        [IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
        [IBV_WC_GENERAL_ERR] = "general error",
        [IBV_WC_TM_ERR] = "TM error",
        [IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
    };

    if ((unsigned)status < sizeof(str) / sizeof(str[0]) && str[status])
        return str[status];
    return "unknown";
}

EFASIM_EXPORT const char *ibv_node_type_str(enum ibv_node_type node_type)
{
    switch (node_type) {
    case IBV_NODE_CA:
        return "InfiniBand channel adapter";
    case IBV_NODE_SWITCH:
        return "InfiniBand switch";
    case IBV_NODE_ROUTER:
        return "InfiniBand router";
    case IBV_NODE_RNIC:
        return "iWARP NIC";
    case IBV_NODE_USNIC:
        return "usNIC";
    case IBV_NODE_USNIC_UDP:
        return "usNIC UDP";
    case IBV_NODE_UNSPECIFIED:
        return "unspecified";
    default:
        return "unknown";
    }
}

EFASIM_EXPORT const char *ibv_port_state_str(enum ibv_port_state port_state)
{
    static const char *const str[] = {"no state change (NOP)", "down", "init", "armed", "active",
                                      "active deferred"};

    return (unsigned)port_state < 6 ? str[port_state] : "unknown";
}

/* ---- Not implemented: fail cleanly ------------------------------------------------ */

#define EFASIM_UNSUPPORTED_PTR(ret_type, name, params, uses) \
    EFASIM_EXPORT ret_type name params                       \
    {                                                        \
        uses;                                                \
        errno = EOPNOTSUPP;                                  \
        return NULL;                                         \
    }
#define EFASIM_UNSUPPORTED_INT(name, params, uses) \
    EFASIM_EXPORT int name params                  \
    {                                              \
        uses;                                      \
        errno = EOPNOTSUPP;                        \
        return EOPNOTSUPP;                         \
    }

EFASIM_UNSUPPORTED_PTR(struct ibv_srq *, ibv_create_srq,
                       (struct ibv_pd * pd, struct ibv_srq_init_attr *a), (void)pd;
                       (void)a)
EFASIM_UNSUPPORTED_INT(ibv_modify_srq, (struct ibv_srq * s, struct ibv_srq_attr *a, int m), (void)s;
                       (void)a; (void)m)
EFASIM_UNSUPPORTED_INT(ibv_query_srq, (struct ibv_srq * s, struct ibv_srq_attr *a), (void)s;
                       (void)a)
EFASIM_UNSUPPORTED_INT(ibv_destroy_srq, (struct ibv_srq * s), (void)s)
EFASIM_UNSUPPORTED_INT(ibv_attach_mcast, (struct ibv_qp * q, const union ibv_gid *g, uint16_t l),
                       (void)q;
                       (void)g; (void)l)
EFASIM_UNSUPPORTED_INT(ibv_detach_mcast, (struct ibv_qp * q, const union ibv_gid *g, uint16_t l),
                       (void)q;
                       (void)g; (void)l)
EFASIM_UNSUPPORTED_INT(ibv_resize_cq, (struct ibv_cq * c, int n), (void)c; (void)n)
EFASIM_UNSUPPORTED_INT(ibv_rereg_mr,
                       (struct ibv_mr * mr, int f, struct ibv_pd *pd, void *a, size_t l, int ac),
                       (void)mr;
                       (void)f; (void)pd; (void)a; (void)l; (void)ac)
EFASIM_UNSUPPORTED_PTR(struct ibv_ah *, ibv_create_ah_from_wc,
                       (struct ibv_pd * pd, struct ibv_wc *wc, struct ibv_grh *g, uint8_t p),
                       (void)pd;
                       (void)wc; (void)g; (void)p)
EFASIM_UNSUPPORTED_INT(ibv_init_ah_from_wc,
                       (struct ibv_context * c, uint8_t p, struct ibv_wc *wc, struct ibv_grh *g,
                        struct ibv_ah_attr *a),
                       (void)c;
                       (void)p; (void)wc; (void)g; (void)a)
EFASIM_UNSUPPORTED_PTR(struct ibv_context *, ibv_import_device, (int fd), (void)fd)
EFASIM_UNSUPPORTED_PTR(struct ibv_pd *, ibv_import_pd, (struct ibv_context * c, uint32_t h),
                       (void)c;
                       (void)h)
EFASIM_UNSUPPORTED_PTR(struct ibv_mr *, ibv_import_mr, (struct ibv_pd * pd, uint32_t h), (void)pd;
                       (void)h)
EFASIM_UNSUPPORTED_PTR(struct ibv_dm *, ibv_import_dm, (struct ibv_context * c, uint32_t h),
                       (void)c;
                       (void)h)
EFASIM_UNSUPPORTED_INT(ibv_query_ece, (struct ibv_qp * q, struct ibv_ece *e), (void)q; (void)e)
EFASIM_UNSUPPORTED_INT(ibv_set_ece, (struct ibv_qp * q, struct ibv_ece *e), (void)q; (void)e)
EFASIM_UNSUPPORTED_INT(ibv_resolve_eth_l2_from_gid,
                       (struct ibv_context * c, struct ibv_ah_attr *a, uint8_t m[6], uint16_t *v),
                       (void)c;
                       (void)a; (void)m; (void)v)
/*
 * Read dir/file (efasim's sysfs view, or any other) into buf as a string
 * without its trailing newline; the length, or -1 with errno set, as
 * rdma-core's does.
 */
EFASIM_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
    char path[PATH_MAX];
    ssize_t len;
    int fd;

    if (!size || snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    len = read(fd, buf, size);
    close(fd);
    if (len < 0)
        return -1;
    if (len > 0 && buf[len - 1] == '\n')
        buf[--len] = '\0';
    else if ((size_t)len < size)
        buf[len] = '\0';
    return (int)len;
}

EFASIM_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
    (void)pd;
}

EFASIM_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
    (void)mr;
}

EFASIM_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
    (void)dm;
}

EFASIM_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op,
                                             uint32_t flags)
{
    (void)qp, (void)op, (void)flags;
    return 0; /* SRD guarantees no ordering */
}

/* SYSFS_PATH as rdma-core honours it, but never the kernel's /sys (sysfs.c). */
EFASIM_EXPORT const char *ibv_get_sysfs_path(void)
{
    return efasim_sysfs_root();
}

EFASIM_EXPORT int ibv_rate_to_mult(enum ibv_rate rate)
{
    return rate == IBV_RATE_MAX ? 0 : (int)rate;
}

EFASIM_EXPORT enum ibv_rate mult_to_ibv_rate(int mult)
{
    return (enum ibv_rate)mult;
}

EFASIM_EXPORT int ibv_rate_to_mbps(enum ibv_rate rate)
{
    return rate == IBV_RATE_100_GBPS ? 100000 : 0;
}

EFASIM_EXPORT enum ibv_rate mbps_to_ibv_rate(int mbps)
{
    return mbps >= 100000 ? IBV_RATE_100_GBPS : IBV_RATE_MAX;
}
