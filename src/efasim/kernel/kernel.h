/*
 * Between the uverbs core (uverbs.c) and the EFA driver behind it (efa.c):
 * the driver's operations, as drivers/infiniband/hw/efa registers them with
 * the core (struct ib_device_ops), in user-space form. The core has parsed
 * the call, checked its generic rules and resolved handles; the driver checks
 * what EFA checks, does it on the device model and fills its answer. Each
 * returns 0 or a negative errno. The file's lock is held. At the end, the
 * entry points of the RDMA netlink emulation (netlink.c) for interpose.c.
 */
#ifndef EFASIM_KERNEL_H
#define EFASIM_KERNEL_H

#include <sys/socket.h>

#include "uverbs.h"

/* The driver's data of a call (udata): what followed the core request, and room for its answer. */
struct efasim_udata {
    const void *in;
    size_t inlen;
    void *out;
    size_t outlen;
};

/* The device as the core reports it (the fields of struct ib_device_attr the driver fills). */
struct efasim_kdevice_attr {
    uint64_t fw_ver, max_mr_size, page_size_cap;
    uint64_t node_guid, sys_image_guid; /* big endian, as reported */
    uint32_t vendor_id, vendor_part_id, hw_ver;
    uint32_t max_qp, max_qp_wr, max_send_sge, max_recv_sge, max_sge_rd;
    uint32_t max_cq, max_cqe, max_mr, max_pd, max_ah, max_pkeys;
    uint8_t phys_port_cnt;
};

struct efasim_kqp_init {
    struct efasim_kobj *pd, *send_cq, *recv_cq;
    uint8_t qp_type; /* IB_UVERBS_QPT_UD or IB_UVERBS_QPT_DRIVER */
    bool sq_sig_all;
    uint32_t create_flags;
    struct ib_uverbs_qp_cap cap; /* asked for; the driver writes what it made */
};

/* ucontext */
int efasim_efa_alloc_ucontext(struct efasim_kfile *f, struct efasim_udata *u);
void efasim_efa_dealloc_ucontext(struct efasim_kfile *f);
uint32_t efasim_efa_num_comp_vectors(const struct efasim_kfile *f);

/* device, port, GID */
int efasim_efa_query_device(struct efasim_kfile *f, struct efasim_kdevice_attr *a,
                            struct efasim_udata *u);
int efasim_efa_query_port(struct efasim_kfile *f, uint32_t port,
                          struct ib_uverbs_query_port_resp *r);
int efasim_efa_query_gid(struct efasim_kfile *f, uint32_t port, uint32_t index, uint8_t gid[16]);
int efasim_efa_query_pkey(struct efasim_kfile *f, uint32_t port, uint32_t index, uint16_t *pkey_p);

/* objects: the core made obj (handle, type); the driver fills obj->impl */
int efasim_efa_alloc_pd(struct efasim_kobj *pd, struct efasim_udata *u);
int efasim_efa_dealloc_pd(struct efasim_kobj *pd);
int efasim_efa_reg_mr(struct efasim_kobj *mr, struct efasim_kobj *pd, uint64_t start,
                      uint64_t length, uint64_t iova, uint32_t access, uint32_t *lkey_p,
                      uint32_t *rkey_p, struct efasim_udata *u);
int efasim_efa_reg_dmabuf_mr(struct efasim_kobj *mr, struct efasim_kobj *pd, uint64_t offset,
                             uint64_t length, uint64_t iova, int fd, uint32_t access,
                             uint32_t *lkey_p, uint32_t *rkey_p);
int efasim_efa_dereg_mr(struct efasim_kobj *mr);
int efasim_efa_create_cq(struct efasim_kobj *cq, uint32_t cqe, uint32_t comp_vector,
                         struct efasim_kobj *channel, uint32_t flags, uint32_t *cqe_p,
                         struct efasim_udata *u);
int efasim_efa_destroy_cq(struct efasim_kobj *cq, uint32_t *comp_events_p);
int efasim_efa_create_qp(struct efasim_kobj *qp, struct efasim_kqp_init *init, uint32_t *qpn_p,
                         struct efasim_udata *u);
int efasim_efa_modify_qp(struct efasim_kobj *qp, const struct ib_uverbs_qp_attr *attr,
                         uint32_t mask, struct efasim_udata *u);
int efasim_efa_query_qp(struct efasim_kobj *qp, uint32_t mask, struct ib_uverbs_qp_attr *attr,
                        bool *sq_sig_all_p);
int efasim_efa_destroy_qp(struct efasim_kobj *qp);
int efasim_efa_create_ah(struct efasim_kobj *ah, struct efasim_kobj *pd,
                         const struct ib_uverbs_ah_attr *attr, struct efasim_udata *u);
int efasim_efa_destroy_ah(struct efasim_kobj *ah);

/* What the core needs to know of the driver's objects. */
struct efasim_kobj *efasim_efa_cq_channel(struct efasim_kobj *cq);
struct efasim_kobj *efasim_efa_obj_pd(struct efasim_kobj *o);
void efasim_efa_qp_objects(struct efasim_kobj *qp, struct efasim_kobj **pd_p,
                           struct efasim_kobj **scq_p, struct efasim_kobj **rcq_p);

/* A forked child's copy of a file: its calls fail (the device state stays the parent's). */
void efasim_kernel_forked(struct efasim_kfile *f);

/*
 * RDMA netlink (netlink.c): NETLINK_RDMA sockets answered as Linux's nldev
 * client answers them. socket() makes one (the descriptor, or a negative
 * errno); the calls on a descriptor return false when it is not one of them
 * (the caller goes to the C library), else true with *ret_p the call's result
 * (0 or a length, or a negative errno). efasim_nl_dup and efasim_nl_close keep
 * the descriptor table as the C library's dup*, fcntl(F_DUPFD*) and close do.
 */
int efasim_nl_socket(int type);
bool efasim_nl_bind(int fd, const struct sockaddr *addr, socklen_t len, int *ret_p);
bool efasim_nl_getsockname(int fd, struct sockaddr *addr, socklen_t *len_p, int *ret_p);
bool efasim_nl_setsockopt(int fd, int level, int name, const void *val, socklen_t len, int *ret_p);
bool efasim_nl_getsockopt(int fd, int level, int name, void *val, socklen_t *len_p, int *ret_p);
bool efasim_nl_sendmsg(int fd, const struct msghdr *msg, int flags, ssize_t *ret_p);
bool efasim_nl_recvmsg(int fd, struct msghdr *msg, int flags, ssize_t *ret_p);
void efasim_nl_dup(int oldfd, int newfd);
void efasim_nl_close(int fd);

#endif /* EFASIM_KERNEL_H */
