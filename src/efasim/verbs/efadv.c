/*
 * libefa's direct-verbs entry points on efasim devices, with the ABI of
 * rdma-core 64's libefa: the version nodes EFA_1.0 to EFA_1.6 (libefa.map).
 * Each answers as rdma-core 64's providers/efa/verbs.c does on an EFA device,
 * as far as efasim models one; a caller built against rdma-core 44's smaller
 * structures gets what 64 gives it. The structures 44's headers lack are
 * efasim_verbs.h's efasim_efadv_*.
 *
 * rdma-core's order of refusals is kept: a device that is not EFA's
 * EOPNOTSUPP, then a compatibility problem (inlen too short, comp_mask,
 * reserved or unknown trailing bytes) EINVAL, then what the device lacks
 * EOPNOTSUPP. What the drop-in has not, it refuses as rdma-core does where the
 * device lacks it: queue memory and doorbells in the process (the direct data
 * path's efadv_query_qp_wqs and efadv_query_cq), inline RDMA write, CQs in
 * external memory, service levels; unsolicited RDMA write receive only where
 * the device offers it (EFASIM_UNSOLICITED_WRITE_RECV with RDMA write). SRD is
 * the only driver QP type; UD QPs come from ibv_create_qp and ibv_create_qp_ex.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "efasim_verbs.h"

/*
 * rdma-core's vext_field_avail: the caller's inlen bytes hold at least the
 * first byte of field. A field so available is then read or written whole.
 */
#define EFADV_FIELD_AVAIL(type, field, inlen) (offsetof(type, field) < (inlen))

/* rdma-core's is_efa_dev, for the device of an object's context. */
static bool is_efa(const struct ibv_context *ctx)
{
    return ctx && efasim_vdev_is_efa(ctx->device);
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
 * inlen must hold inline_buf_size_ex (EINVAL; 44 asked only for
 * inline_buf_size, 64 is the stricter); attr is zeroed to inlen, and
 * device_caps filled only if inlen holds it, max_rdma_size and the RDMA read
 * and write capabilities only if inlen holds max_rdma_size. As in rdma-core,
 * fields are written whole and the capabilities added to what device_caps
 * holds, so an inlen that ends inside a field gets all of it. The device
 * reports no separate inline size for 128-byte WQEs, so inline_buf_size_ex is
 * inline_buf_size, as rdma-core takes it then. Unsolicited write receive is
 * among the capabilities in device_caps where the device offers it
 * (EFASIM_UNSOLICITED_WRITE_RECV, with RDMA write); it offers no CQ in
 * external memory.
 */
EFASIM_EXPORT int efadv_query_device(struct ibv_context *ibvctx, struct efadv_device_attr *attr,
                                     uint32_t inlen)
{
    const struct efasim_config *cfg = efasim_config();
    struct efasim_efadv_device_attr *a = (struct efasim_efadv_device_attr *)attr;

    if (!is_efa(ibvctx))
        return EOPNOTSUPP;
    if (!EFADV_FIELD_AVAIL(struct efasim_efadv_device_attr, inline_buf_size_ex, inlen))
        return EINVAL;
    memset(attr, 0, inlen);
    a->max_sq_wr = cfg->max_sq_wr;
    a->max_rq_wr = cfg->max_rq_wr;
    a->max_sq_sge = (uint16_t)cfg->max_sq_sge;
    a->max_rq_sge = (uint16_t)cfg->max_rq_sge;
    a->inline_buf_size = (uint16_t)cfg->inline_size;
    a->inline_buf_size_ex = (uint16_t)cfg->inline_size;
    if (EFADV_FIELD_AVAIL(struct efasim_efadv_device_attr, device_caps, inlen)) {
        a->device_caps |= EFADV_DEVICE_ATTR_CAPS_RNR_RETRY | EFADV_DEVICE_ATTR_CAPS_CQ_WITH_SGID;
        if (cfg->unsolicited_write_recv)
            a->device_caps |= EFASIM_EFADV_CAPS_UNSOLICITED_WRITE_RECV;
    }
    if (EFADV_FIELD_AVAIL(struct efasim_efadv_device_attr, max_rdma_size, inlen)) {
        a->max_rdma_size =
            cfg->max_rdma_size > UINT32_MAX ? UINT32_MAX : (uint32_t)cfg->max_rdma_size;
        if (cfg->rdma_read)
            a->device_caps |= EFADV_DEVICE_ATTR_CAPS_RDMA_READ;
        if (cfg->rdma_write)
            a->device_caps |= EFASIM_CAPS_RDMA_WRITE;
    }
    a->comp_mask = 0;
    return 0;
}

/*
 * A compatibility problem (not a driver QP, inlen without driver_qp_type,
 * comp_mask, the reserved byte, trailing bytes beyond rdma-core 64's
 * structure) is EINVAL; the caller's structure counts up to inlen, the rest
 * is zero (a 44 caller's 16 bytes have no flags, sl or wr_flags). Then the
 * QP checks of qp.c in rdma-core's order: a driver QP type other than SRD,
 * flags, wr_flags other than the processing hints, an sl: EOPNOTSUPP.
 */
EFASIM_EXPORT struct ibv_qp *efadv_create_qp_ex(struct ibv_context *ibvctx,
                                                struct ibv_qp_init_attr_ex *attr_ex,
                                                struct efadv_qp_init_attr *efa_attr, uint32_t inlen)
{
    const struct efasim_efadv_qp_init_attr *in = (const void *)efa_attr;
    struct efasim_efadv_qp_init_attr a;

    if (!is_efa(ibvctx)) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    /* rdma-core reads comp_mask and the reserved byte whatever inlen says. */
    if (attr_ex->qp_type != IBV_QPT_DRIVER ||
        !EFADV_FIELD_AVAIL(struct efasim_efadv_qp_init_attr, driver_qp_type, inlen) ||
        in->comp_mask || in->reserved ||
        (inlen > sizeof(a) && !tail_cleared(in, sizeof(a), inlen))) {
        errno = EINVAL;
        return NULL;
    }
    memset(&a, 0, sizeof(a));
    memcpy(&a, in, inlen < sizeof(a) ? inlen : sizeof(a));
    if (a.driver_qp_type != EFADV_QP_DRIVER_TYPE_SRD) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    return efasim_vqp_create(to_vctx(ibvctx), attr_ex, &a);
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

    if (!is_efa(ibvpd->context)) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    if (attr->qp_type != IBV_QPT_DRIVER) {
        errno = EINVAL;
        return NULL;
    }
    if (driver_qp_type != EFADV_QP_DRIVER_TYPE_SRD) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    qp = efasim_vqp_create(to_vctx(ibvpd->context), &ex, NULL);
    if (qp)
        attr->cap = ex.cap;
    return qp;
}

EFASIM_EXPORT int efadv_query_ah(struct ibv_ah *ibvah, struct efadv_ah_attr *attr, uint32_t inlen)
{
    if (!is_efa(ibvah->context))
        return EOPNOTSUPP;
    if (!EFADV_FIELD_AVAIL(struct efadv_ah_attr, ahn, inlen))
        return EINVAL;
    memset(attr, 0, inlen);
    attr->ahn = to_vah(ibvah)->m->ahn;
    attr->comp_mask = 0;
    return 0;
}

/*
 * Compatibility problems (inlen without wc_flags, comp_mask, trailing bytes
 * beyond rdma-core 64's structure) are EINVAL; wc_flags beyond the SGID and,
 * where the device offers unsolicited write receive, its mark EOPNOTSUPP. A CQ
 * in the caller's dma-buf (EFADV_CQ_INIT_FLAGS_EXT_MEM_DMABUF) goes to the
 * kernel as CQ_CREATE's buffer attributes, mandatory, which a kernel without
 * them (efasim's: no external CQ memory) does not know: EOPNOTSUPP, as
 * libibverbs answers then. Other flags bits rdma-core 64 ignores.
 */
EFASIM_EXPORT struct ibv_cq_ex *efadv_create_cq(struct ibv_context *ibvctx,
                                                struct ibv_cq_init_attr_ex *attr_ex,
                                                struct efadv_cq_init_attr *efa_attr, uint32_t inlen)
{
    uint64_t supported = EFADV_WC_EX_WITH_SGID;
    struct efasim_efadv_cq_init_attr a;

    if (!is_efa(ibvctx)) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    if (!EFADV_FIELD_AVAIL(struct efasim_efadv_cq_init_attr, wc_flags, inlen) ||
        efa_attr->comp_mask || (inlen > sizeof(a) && !tail_cleared(efa_attr, sizeof(a), inlen))) {
        errno = EINVAL;
        return NULL;
    }
    memset(&a, 0, sizeof(a));
    memcpy(&a, efa_attr, inlen < sizeof(a) ? inlen : sizeof(a));
    if (efasim_config()->unsolicited_write_recv)
        supported |= EFASIM_EFADV_WC_EX_WITH_IS_UNSOLICITED;
    if (a.wc_flags & ~supported) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    if (a.flags & EFASIM_EFADV_CQ_INIT_FLAGS_EXT_MEM_DMABUF) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    return efasim_vcq_create(to_vctx(ibvctx), attr_ex, a.wc_flags);
}

EFASIM_EXPORT struct efadv_cq *efadv_cq_from_ibv_cq_ex(struct ibv_cq_ex *ibvcqx)
{
    return efasim_vcq_efadv(ibvcqx);
}

/* ---- rdma-core 64's nodes: EFA_1.3 to EFA_1.6 ----------------------------------- */

/*
 * EFA_1.3. inlen must hold rdma_recv_ic_id (EINVAL); attr is zeroed to inlen
 * and gets the interconnect ids the kernel reports valid. efasim models no
 * interconnects, so its kernel reports none: ic_id_validity 0, every id 0,
 * comp_mask 0.
 */
EFASIM_EXPORT int efasim_efadv_query_mr(struct ibv_mr *ibvmr, struct efasim_efadv_mr_attr *attr,
                                        uint32_t inlen)
{
    if (!is_efa(ibvmr->context))
        return EOPNOTSUPP;
    if (!EFADV_FIELD_AVAIL(struct efasim_efadv_mr_attr, rdma_recv_ic_id, inlen))
        return EINVAL;
    /*
     * rdma-core zeroes attr, then asks the kernel (EFA_IB_METHOD_MR_QUERY),
     * which the kernel efasim plays (Linux 6.1's, as on its kernel front end)
     * does not have: the method lookup answers EPROTONOSUPPORT.
     */
    memset(attr, 0, inlen);
    return EPROTONOSUPPORT;
}

/*
 * EFA_1.4. On EFA these hand out the QP's send and receive rings, the CQ's
 * ring and their doorbells, mapped into the process, for libfabric's direct
 * data path. The drop-in's queues live in the model, not in memory the
 * process could write descriptors into, so after rdma-core's checks (a
 * device not EFA's EOPNOTSUPP, inlen EINVAL) both answer EOPNOTSUPP, what
 * rdma-core answers for a QP or CQ that is not EFA's, and write nothing. The
 * direct data path runs on the kernel front end, under the real rdma-core.
 */
EFASIM_EXPORT int efasim_efadv_query_qp_wqs(struct ibv_qp *ibvqp,
                                            struct efasim_efadv_wq_attr *sq_attr,
                                            struct efasim_efadv_wq_attr *rq_attr, uint32_t inlen)
{
    (void)sq_attr, (void)rq_attr;
    if (!is_efa(ibvqp->context))
        return EOPNOTSUPP;
    if (!EFADV_FIELD_AVAIL(struct efasim_efadv_wq_attr, max_batch, inlen))
        return EINVAL;
    return EOPNOTSUPP;
}

EFASIM_EXPORT int efasim_efadv_query_cq(struct ibv_cq *ibvcq, struct efasim_efadv_cq_attr *attr,
                                        uint32_t inlen)
{
    (void)attr;
    if (!is_efa(ibvcq->context))
        return EOPNOTSUPP;
    if (!EFADV_FIELD_AVAIL(struct efasim_efadv_cq_attr, num_entries, inlen))
        return EINVAL;
    return EOPNOTSUPP;
}

/*
 * EFA_1.5: the deepest queues a QP may ask for, or a negative errno. A device
 * not EFA's -EOPNOTSUPP; inlen without the last field, or a comp_mask,
 * -EINVAL; SGEs beyond the device's (max_sq_sge, max_sge_rd for RDMA,
 * max_rq_sge) or inline data beyond inline_buf_size_ex -EINVAL. The send
 * queue: the LLQ's 64-byte descriptors, half as many with 128-byte WQEs
 * (inline data beyond 32 bytes, or inline RDMA write), rounded down to a power
 * of two; flags are not checked, as in rdma-core 64.
 */
EFASIM_EXPORT int efasim_efadv_get_max_sq_depth(struct ibv_context *ibvctx,
                                                struct efasim_efadv_sq_depth_attr *attr,
                                                uint32_t inlen)
{
    const struct efasim_config *cfg = efasim_config();
    struct ibv_device_attr dev;

    if (!is_efa(ibvctx))
        return -EOPNOTSUPP;
    if (!EFADV_FIELD_AVAIL(struct efasim_efadv_sq_depth_attr, max_inline_data, inlen) ||
        attr->comp_mask)
        return -EINVAL;
    if (attr->max_send_sge > cfg->max_sq_sge)
        return -EINVAL;
    /* rdma-core's max_wr_rdma_sge: the device's max_sge_rd, as ibv_query_device gives it. */
    if (ibv_query_device(ibvctx, &dev) || attr->max_rdma_sge > (uint32_t)dev.max_sge_rd)
        return -EINVAL;
    if (attr->max_inline_data > cfg->inline_size)
        return -EINVAL;
    return (int)efasim_vqp_sq_max_depth(attr->max_inline_data,
                                        attr->flags & EFASIM_EFADV_SQ_DEPTH_ATTR_INLINE_WRITE);
}

/*
 * The receive queue: max_rq_wr descriptors, max_recv_sge of them per WR. As in
 * rdma-core 64, max_recv_sge 0 divides by zero there: the process gets
 * SIGFPE, as it does on EFA (-EINVAL if a handler returns).
 */
EFASIM_EXPORT int efasim_efadv_get_max_rq_depth(struct ibv_context *ibvctx,
                                                struct efasim_efadv_rq_depth_attr *attr,
                                                uint32_t inlen)
{
    const struct efasim_config *cfg = efasim_config();

    if (!is_efa(ibvctx))
        return -EOPNOTSUPP;
    if (!EFADV_FIELD_AVAIL(struct efasim_efadv_rq_depth_attr, max_recv_sge, inlen) ||
        attr->comp_mask)
        return -EINVAL;
    if (attr->max_recv_sge > cfg->max_rq_sge)
        return -EINVAL;
    if (!attr->max_recv_sge) {
        raise(SIGFPE);
        return -EINVAL;
    }
    return (int)(cfg->max_rq_wr / attr->max_recv_sge);
}

/*
 * EFA_1.6: the QP's efadv part, for efadv_wr_set_processing_hints. Its
 * wr_set_processing_hints is set only on a QP created with send_ops_flags and
 * EFADV_WR_EX_WITH_PROCESSING_HINTS (NULL otherwise, as in rdma-core 64); the
 * pointer lives as long as the QP.
 */
EFASIM_EXPORT struct efasim_efadv_qp *efasim_efadv_qp_from_ibv_qp_ex(struct ibv_qp_ex *ibvqpx)
{
    return &((struct efasim_vqp *)ibvqpx)->efadv;
}
