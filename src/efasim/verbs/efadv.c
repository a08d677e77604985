/*
 * libefa's direct-verbs entry points on efasim devices. SRD is the only driver
 * QP type; every other one is refused as EFA refuses it (UD QPs come from
 * ibv_create_qp and ibv_create_qp_ex).
 */
#include <errno.h>
#include <string.h>

#include "efasim_verbs.h"

/*
 * As rdma-core 44: inlen must reach inline_buf_size (EINVAL); device_caps is
 * filled only if inlen reaches it, max_rdma_size and the RDMA read capability
 * only if inlen reaches max_rdma_size; the rest of attr is zeroed.
 */
EFASIM_EXPORT int efadv_query_device(struct ibv_context *ibvctx, struct efadv_device_attr *attr,
                                     uint32_t inlen)
{
    const struct efasim_config *cfg = efasim_config();
    struct efadv_device_attr a;

    (void)ibvctx;
    if (inlen < offsetof(struct efadv_device_attr, inline_buf_size) + sizeof(a.inline_buf_size))
        return EINVAL;
    memset(&a, 0, sizeof(a));
    a.max_sq_wr = cfg->max_sq_wr;
    a.max_rq_wr = cfg->max_rq_wr;
    a.max_sq_sge = (uint16_t)cfg->max_sq_sge;
    a.max_rq_sge = (uint16_t)cfg->max_rq_sge;
    a.inline_buf_size = (uint16_t)cfg->inline_size;
    if (inlen >= offsetof(struct efadv_device_attr, device_caps) + sizeof(a.device_caps)) {
        a.device_caps = EFADV_DEVICE_ATTR_CAPS_RNR_RETRY | EFADV_DEVICE_ATTR_CAPS_CQ_WITH_SGID;
        if (cfg->rdma_write)
            a.device_caps |= EFASIM_CAPS_RDMA_WRITE;
    }
    if (inlen >= offsetof(struct efadv_device_attr, max_rdma_size) + sizeof(a.max_rdma_size)) {
        a.max_rdma_size =
            cfg->max_rdma_size > UINT32_MAX ? UINT32_MAX : (uint32_t)cfg->max_rdma_size;
        if (cfg->rdma_read)
            a.device_caps |= EFADV_DEVICE_ATTR_CAPS_RDMA_READ;
    }
    memset(attr, 0, inlen);
    memcpy(attr, &a, inlen < sizeof(a) ? inlen : sizeof(a));
    return 0;
}

/* True when bytes [from, len) of p are all zero (an extension this library does not know). */
static bool tail_cleared(const void *p, size_t from, size_t len)
{
    const uint8_t *b = p;

    for (size_t i = from; i < len; i++)
        if (b[i])
            return false;
    return true;
}

/*
 * As rdma-core 44: a compatibility problem (not a driver QP, inlen too short,
 * comp_mask, reserved or unknown trailing bytes set) is EINVAL; a driver QP
 * type other than SRD is EOPNOTSUPP; then the QP checks of qp.c and the model's.
 */
EFASIM_EXPORT struct ibv_qp *efadv_create_qp_ex(struct ibv_context *ibvctx,
                                                struct ibv_qp_init_attr_ex *attr_ex,
                                                struct efadv_qp_init_attr *efa_attr, uint32_t inlen)
{
    size_t need = offsetof(struct efadv_qp_init_attr, driver_qp_type) + sizeof(uint32_t);

    if (attr_ex->qp_type != IBV_QPT_DRIVER || !efa_attr || inlen < need || efa_attr->comp_mask ||
        !tail_cleared(efa_attr->reserved, 0, sizeof(efa_attr->reserved)) ||
        (inlen > sizeof(*efa_attr) && !tail_cleared(efa_attr, sizeof(*efa_attr), inlen))) {
        errno = EINVAL;
        return NULL;
    }
    if (efa_attr->driver_qp_type != EFADV_QP_DRIVER_TYPE_SRD) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    return efasim_vqp_create(to_vctx(ibvctx), attr_ex);
}

EFASIM_EXPORT struct ibv_qp *
efadv_create_driver_qp(struct ibv_pd *ibvpd, struct ibv_qp_init_attr *attr, uint32_t driver_qp_type)
{
    struct ibv_qp_init_attr_ex ex = {.qp_context = attr->qp_context,
                                     .send_cq = attr->send_cq,
                                     .recv_cq = attr->recv_cq,
                                     .srq = attr->srq,
                                     .cap = attr->cap,
                                     .qp_type = IBV_QPT_DRIVER,
                                     .sq_sig_all = attr->sq_sig_all,
                                     .comp_mask = IBV_QP_INIT_ATTR_PD,
                                     .pd = ibvpd};
    struct ibv_qp *qp;

    if (attr->qp_type != IBV_QPT_DRIVER) {
        errno = EINVAL;
        return NULL;
    }
    if (driver_qp_type != EFADV_QP_DRIVER_TYPE_SRD) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    qp = efasim_vqp_create(to_vctx(ibvpd->context), &ex);
    if (qp)
        attr->cap = ex.cap;
    return qp;
}

EFASIM_EXPORT int efadv_query_ah(struct ibv_ah *ibvah, struct efadv_ah_attr *attr, uint32_t inlen)
{
    struct efadv_ah_attr a = {.ahn = to_vah(ibvah)->m->ahn};

    if (inlen < offsetof(struct efadv_ah_attr, reserved))
        return EINVAL;
    memset(attr, 0, inlen);
    memcpy(attr, &a, inlen < sizeof(a) ? inlen : sizeof(a));
    return 0;
}

/* As rdma-core 44: compatibility problems are EINVAL, unknown wc_flags EOPNOTSUPP. */
EFASIM_EXPORT struct ibv_cq_ex *efadv_create_cq(struct ibv_context *ibvctx,
                                                struct ibv_cq_init_attr_ex *attr_ex,
                                                struct efadv_cq_init_attr *efa_attr, uint32_t inlen)
{
    if (!efa_attr || inlen < offsetof(struct efadv_cq_init_attr, wc_flags) + sizeof(uint64_t) ||
        efa_attr->comp_mask) {
        errno = EINVAL;
        return NULL;
    }
    if (efa_attr->wc_flags & ~(uint64_t)EFADV_WC_EX_WITH_SGID) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    return efasim_vcq_create(to_vctx(ibvctx), attr_ex, efa_attr->wc_flags & EFADV_WC_EX_WITH_SGID);
}

EFASIM_EXPORT struct efadv_cq *efadv_cq_from_ibv_cq_ex(struct ibv_cq_ex *ibvcqx)
{
    return efasim_vcq_efadv(ibvcqx);
}
