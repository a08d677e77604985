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

#include "efasim_verbs.h"

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

EFASIM_EXPORT void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst,
                                              struct ib_uverbs_qp_attr *src)
{
    dst->cur_qp_state = src->cur_qp_state;
    dst->path_mtu = src->path_mtu;
    dst->path_mig_state = src->path_mig_state;
    dst->qkey = src->qkey;
    dst->rq_psn = src->rq_psn;
    dst->sq_psn = src->sq_psn;
    dst->dest_qp_num = src->dest_qp_num;
    dst->qp_access_flags = src->qp_access_flags;
    /* The kernel structure flattens struct ibv_qp_cap into five members. */
    dst->cap = (struct ibv_qp_cap){.max_send_wr = src->max_send_wr,
                                   .max_recv_wr = src->max_recv_wr,
                                   .max_send_sge = src->max_send_sge,
                                   .max_recv_sge = src->max_recv_sge,
                                   .max_inline_data = src->max_inline_data};
    ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
    ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
    dst->pkey_index = src->pkey_index;
    dst->alt_pkey_index = src->alt_pkey_index;
    dst->en_sqd_async_notify = src->en_sqd_async_notify;
    dst->sq_draining = src->sq_draining;
    dst->max_rd_atomic = src->max_rd_atomic;
    dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
    dst->min_rnr_timer = src->min_rnr_timer;
    dst->port_num = src->port_num;
    dst->timeout = src->timeout;
    dst->retry_cnt = src->retry_cnt;
    dst->rnr_retry = src->rnr_retry;
    dst->alt_port_num = src->alt_port_num;
    dst->alt_timeout = src->alt_timeout;
}

/*
 * The path record's scalar fields, the same in both structures; the GIDs
 * differ in type and are copied by the callers. Written as a function on both
 * directions' pointers through a macro, so the field list is given once.
 */
#define EFASIM_PATH_REC_COPY(dst, src)                                       \
    do {                                                                     \
        (dst)->dlid = (src)->dlid;                                           \
        (dst)->slid = (src)->slid;                                           \
        (dst)->raw_traffic = (src)->raw_traffic;                             \
        (dst)->flow_label = (src)->flow_label;                               \
        (dst)->hop_limit = (src)->hop_limit;                                 \
        (dst)->traffic_class = (src)->traffic_class;                         \
        (dst)->reversible = (src)->reversible;                               \
        (dst)->numb_path = (src)->numb_path;                                 \
        (dst)->pkey = (src)->pkey;                                           \
        (dst)->sl = (src)->sl;                                               \
        (dst)->mtu_selector = (src)->mtu_selector;                           \
        (dst)->mtu = (src)->mtu;                                             \
        (dst)->rate_selector = (src)->rate_selector;                         \
        (dst)->rate = (src)->rate;                                           \
        (dst)->packet_life_time_selector = (src)->packet_life_time_selector; \
        (dst)->packet_life_time = (src)->packet_life_time;                   \
        (dst)->preference = (src)->preference;                               \
    } while (0)

EFASIM_EXPORT void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst,
                                               struct ib_user_path_rec *src)
{
    memcpy(dst->dgid.raw, src->dgid, sizeof(src->dgid));
    memcpy(dst->sgid.raw, src->sgid, sizeof(src->sgid));
    EFASIM_PATH_REC_COPY(dst, src);
}

EFASIM_EXPORT void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst,
                                             struct ibv_sa_path_rec *src)
{
    memcpy(dst->dgid, src->dgid.raw, sizeof(dst->dgid));
    memcpy(dst->sgid, src->sgid.raw, sizeof(dst->sgid));
    EFASIM_PATH_REC_COPY(dst, src);
}
