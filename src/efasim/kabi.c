/*
 * The kernel-ABI conversion helpers that rdma-core's libibverbs still exports
 * for its sibling libraries: librdmacm imports ibv_copy_qp_attr_from_kern,
 * ibv_copy_path_rec_from_kern (IBVERBS_1.0) and ibv_copy_ah_attr_from_kern
 * (IBVERBS_1.1). efasim has no kernel, but a program that links librdmacm (as
 * Debian's libfabric does) cannot even be loaded unless they exist with those
 * versions, so they are here, converting between the uverbs structures of
 * <rdma/ib_user_verbs.h> / <rdma/ib_user_sa.h> and the verbs ones.
 */
#include <string.h>

#include "efasim.h"

EFASIM_EXPORT void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst,
                                              struct ib_uverbs_ah_attr *src)
{
    const struct ib_uverbs_global_route *g = &src->grh;

    memcpy(dst->grh.dgid.raw, g->dgid, sizeof(g->dgid));
    dst->grh.flow_label = g->flow_label;
    dst->grh.sgid_index = g->sgid_index;
    dst->grh.hop_limit = g->hop_limit;
    dst->grh.traffic_class = g->traffic_class;
    dst->is_global = src->is_global;
    dst->dlid = src->dlid;
    dst->sl = src->sl;
    dst->src_path_bits = src->src_path_bits;
    dst->static_rate = src->static_rate;
    dst->port_num = src->port_num;
}

/* Fields of struct ib_uverbs_qp_attr and struct ibv_qp_attr with the same name and meaning. */
#define EFASIM_QP_ATTR_SCALARS(X)                                                               \
    X(cur_qp_state)                                                                             \
    X(path_mtu) X(path_mig_state) X(qkey) X(rq_psn) X(sq_psn) X(dest_qp_num) X(qp_access_flags) \
        X(pkey_index) X(alt_pkey_index) X(en_sqd_async_notify) X(sq_draining) X(max_rd_atomic)  \
            X(max_dest_rd_atomic) X(min_rnr_timer) X(port_num) X(timeout) X(retry_cnt)          \
                X(rnr_retry) X(alt_port_num) X(alt_timeout)

EFASIM_EXPORT void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst,
                                              struct ib_uverbs_qp_attr *src)
{
#define EFASIM_COPY(f) dst->f = src->f;
    EFASIM_QP_ATTR_SCALARS(EFASIM_COPY)
#undef EFASIM_COPY
    /* The kernel structure flattens struct ibv_qp_cap into five members. */
    dst->cap = (struct ibv_qp_cap){.max_send_wr = src->max_send_wr,
                                   .max_recv_wr = src->max_recv_wr,
                                   .max_send_sge = src->max_send_sge,
                                   .max_recv_sge = src->max_recv_sge,
                                   .max_inline_data = src->max_inline_data};
    ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
    ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
}

/* Path record fields both structures share (the GIDs differ in type and are copied apart). */
#define EFASIM_PATH_REC_SCALARS(X)                                                                 \
    X(dlid)                                                                                        \
    X(slid) X(raw_traffic) X(flow_label) X(hop_limit) X(traffic_class) X(reversible) X(numb_path)  \
        X(pkey) X(sl) X(mtu_selector) X(mtu) X(rate_selector) X(rate) X(packet_life_time_selector) \
            X(packet_life_time) X(preference)

EFASIM_EXPORT void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst,
                                               struct ib_user_path_rec *src)
{
    memcpy(dst->dgid.raw, src->dgid, sizeof(src->dgid));
    memcpy(dst->sgid.raw, src->sgid, sizeof(src->sgid));
#define EFASIM_COPY(f) dst->f = src->f;
    EFASIM_PATH_REC_SCALARS(EFASIM_COPY)
#undef EFASIM_COPY
}

EFASIM_EXPORT void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst,
                                             struct ibv_sa_path_rec *src)
{
    memcpy(dst->dgid, src->dgid.raw, sizeof(dst->dgid));
    memcpy(dst->sgid, src->sgid.raw, sizeof(dst->sgid));
#define EFASIM_COPY(f) dst->f = src->f;
    EFASIM_PATH_REC_SCALARS(EFASIM_COPY)
#undef EFASIM_COPY
}
