/*
 * src/device internals: the table of exported verbs and efadv functions that
 * the loader fills (loader.c), and the endpoint's private state.
 */
#ifndef EFARM_DEVICE_INTERNAL_H
#define EFARM_DEVICE_INTERNAL_H

#include <infiniband/efadv.h>
#include <infiniband/verbs.h>

#include "efarm_device.h"
#include "efarm_device_inline.h"

/* X(return type, name, parameters): every exported symbol src/device calls. */
#define EFARM_VERBS_FUNCS(X)                                                                       \
    X(struct ibv_device **, ibv_get_device_list, (int *num))                                       \
    X(void, ibv_free_device_list, (struct ibv_device * *list))                                     \
    X(const char *, ibv_get_device_name, (struct ibv_device * dev))                                \
    X(struct ibv_context *, ibv_open_device, (struct ibv_device * dev))                            \
    X(int, ibv_close_device, (struct ibv_context * ctx))                                           \
    X(int, ibv_query_device, (struct ibv_context * ctx, struct ibv_device_attr * attr))            \
    X(int, ibv_query_port,                                                                         \
      (struct ibv_context * ctx, uint8_t port, struct _compat_ibv_port_attr * a))                  \
    X(int, ibv_query_gid, (struct ibv_context * ctx, uint8_t port, int index, union ibv_gid *gid)) \
    X(struct ibv_pd *, ibv_alloc_pd, (struct ibv_context * ctx))                                   \
    X(int, ibv_dealloc_pd, (struct ibv_pd * pd))                                                   \
    X(struct ibv_mr *, ibv_reg_mr, (struct ibv_pd * pd, void *addr, size_t len, int access))       \
    X(int, ibv_dereg_mr, (struct ibv_mr * mr))                                                     \
    X(int, ibv_destroy_cq, (struct ibv_cq * cq))                                                   \
    X(int, ibv_modify_qp, (struct ibv_qp * qp, struct ibv_qp_attr * attr, int mask))               \
    X(int, ibv_destroy_qp, (struct ibv_qp * qp))                                                   \
    X(struct ibv_ah *, ibv_create_ah, (struct ibv_pd * pd, struct ibv_ah_attr * attr))             \
    X(int, ibv_destroy_ah, (struct ibv_ah * ah))                                                   \
    X(struct ibv_qp_ex *, ibv_qp_to_qp_ex, (struct ibv_qp * qp))                                   \
    X(const char *, ibv_wc_status_str, (enum ibv_wc_status status))

#define EFARM_EFADV_FUNCS(X)                                                       \
    X(int, efadv_query_device,                                                     \
      (struct ibv_context * ctx, struct efadv_device_attr * attr, uint32_t inlen)) \
    X(struct ibv_qp *, efadv_create_qp_ex,                                         \
      (struct ibv_context * ctx, struct ibv_qp_init_attr_ex * attr,                \
       struct efadv_qp_init_attr * efa_attr, uint32_t inlen))                      \
    X(int, efadv_query_ah, (struct ibv_ah * ah, struct efadv_ah_attr * attr, uint32_t inlen))

/* Optional: older rdma-core has no efadv_create_cq; then the CQ has no SGID. */
#define EFARM_EFADV_OPTIONAL_FUNCS(X)                               \
    X(struct ibv_cq_ex *, efadv_create_cq,                          \
      (struct ibv_context * ctx, struct ibv_cq_init_attr_ex * attr, \
       struct efadv_cq_init_attr * efa_attr, uint32_t inlen))       \
    X(struct efadv_cq *, efadv_cq_from_ibv_cq_ex, (struct ibv_cq_ex * cq))

struct efarm_verbs {
#define EFARM_VERBS_MEMBER(ret, name, params) ret(*name) params;
    EFARM_VERBS_FUNCS(EFARM_VERBS_MEMBER)
    EFARM_EFADV_FUNCS(EFARM_VERBS_MEMBER)
    EFARM_EFADV_OPTIONAL_FUNCS(EFARM_VERBS_MEMBER)
#undef EFARM_VERBS_MEMBER
};

/* Filled by efarm_device_initialize(); read-only afterwards. */
extern struct efarm_verbs g_efarm_verbs;

/* Allocation through one point, so tests can make the N-th one fail. */
void *efarm_dev_calloc(size_t n, size_t size);
/*
 * The order efarm gives devices everywhere (NIC choice, rails, enumeration):
 * natural name order (rdmap16s27 before rdmap160s27, efasim_2 before
 * efasim_10), never rdma-core's, which is its sysfs directory's and which no
 * kernel promises. strcmp's sign convention.
 */
int efarm_dev_name_order(const char *a, const char *b);

/* Whether the allocation about to be made should fail (counts it). */
bool efarm_dev_alloc_fails(void);

#endif /* EFARM_DEVICE_INTERNAL_H */
