/*
 * efasim's drop-in front end: libibverbs.so.1 and libefa.so.1 with rdma-core
 * 44's ABI, playing its EFA provider (providers/efa) over the device model
 * (../model). What rdma-core's provider checks and keeps is here: the
 * attribute and comp_mask checks before the kernel is asked, queue sizing,
 * the ibv_wr_* session, the rule that a work request's slot is free only when
 * its completion is polled, the CQ's ring and poll API, efadv. Everything the
 * kernel driver and the device do is the model's.
 *
 * Each verbs object is a wrapper that begins with the libibverbs object the
 * application sees and points at the model's object (the CQ holds its model
 * CQ, whose producer side it implements: cq.c).
 */
#ifndef EFASIM_VERBS_H
#define EFASIM_VERBS_H

#include <infiniband/efadv.h>
#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

#include "../model/efasim_model.h"

/* Newer rdma-core capability bits (ABI values), defined here when the headers lack them. */
#define EFASIM_CAPS_RDMA_WRITE (1u << 3)

/*
 * rdma-core 64's efadv ABI (providers/efa/efadv.h of rdma-core 64.0) where it
 * goes beyond the rdma-core 44 headers this library is compiled against: the
 * structures of libefa's nodes EFA_1.3 to EFA_1.6, and the longer forms of
 * EFA_1.1's and EFA_1.2's. Named efasim_efadv_* so that a newer system header
 * never clashes with them; each layout is pinned to 64's by the asserts below.
 */
#define EFASIM_EFADV_CAPS_UNSOLICITED_WRITE_RECV     (1u << 4)
#define EFASIM_EFADV_QP_FLAGS_UNSOLICITED_WRITE_RECV (1u << 0)
#define EFASIM_EFADV_QP_FLAGS_INLINE_WRITE           (1u << 1)
#define EFASIM_EFADV_WR_EX_WITH_PROCESSING_HINTS     (1ull << 0)
#define EFASIM_EFADV_SQ_DEPTH_ATTR_INLINE_WRITE      (1u << 0)
#define EFASIM_EFADV_CQ_INIT_FLAGS_EXT_MEM_DMABUF    (1ull << 0)
#define EFASIM_EFADV_WC_EX_WITH_IS_UNSOLICITED       (1ull << 1)
/* The inline bytes a 64-byte send descriptor holds; more take a 128-byte one (efa_io_defs.h). */
#define EFASIM_EFA_TX_INLINE_MAX  32
#define EFASIM_EFA_TX_WQE_SIZE    64
#define EFASIM_EFA_TX_WQE_SIZE_EX 128

struct efasim_efadv_device_attr {
    uint64_t comp_mask;
    uint32_t max_sq_wr;
    uint32_t max_rq_wr;
    uint16_t max_sq_sge;
    uint16_t max_rq_sge;
    uint16_t inline_buf_size;
    uint16_t inline_buf_size_ex; /* rdma-core 44's reserved[2] */
    uint32_t device_caps;
    uint32_t max_rdma_size;
};

struct efasim_efadv_qp_init_attr {
    uint64_t comp_mask;
    uint32_t driver_qp_type;
    uint16_t flags; /* EFASIM_EFADV_QP_FLAGS_* */
    uint8_t sl;
    uint8_t reserved;
    uint64_t wr_flags; /* EFASIM_EFADV_WR_EX_* */
};

struct efasim_efadv_wq_attr {
    uint64_t comp_mask;
    uint8_t *buffer;
    uint32_t entry_size;
    uint32_t num_entries;
    uint32_t *doorbell;
    uint32_t max_batch;
    uint8_t reserved[4];
};

struct efasim_efadv_qp {
    uint64_t comp_mask;
    void (*wr_set_processing_hints)(struct efasim_efadv_qp *qp, uint32_t hints);
};

struct efasim_efadv_cq_init_attr {
    uint64_t comp_mask;
    uint64_t wc_flags;
    uint64_t flags; /* EFASIM_EFADV_CQ_INIT_FLAGS_* */
    struct {
        uint8_t *buffer;
        uint64_t length;
        uint64_t offset;
        int32_t fd;
        uint8_t reserved[4];
    } ext_mem_dmabuf;
};

/*
 * rdma-core 64's struct efadv_cq, which 44's is the beginning of.
 * wc_is_unsolicited only on a CQ created with EFADV_WC_EX_WITH_IS_UNSOLICITED,
 * which the device takes only where it offers unsolicited write receive
 * (EFASIM_UNSOLICITED_WRITE_RECV); NULL otherwise.
 */
struct efasim_efadv_cq {
    uint64_t comp_mask;
    int (*wc_read_sgid)(struct efadv_cq *efadv, union ibv_gid *sgid);
    bool (*wc_is_unsolicited)(struct efadv_cq *efadv);
};

struct efasim_efadv_cq_attr {
    uint64_t comp_mask;
    uint8_t *buffer;
    uint32_t entry_size;
    uint32_t num_entries;
    uint32_t *doorbell;
};

struct efasim_efadv_mr_attr {
    uint64_t comp_mask;
    uint16_t ic_id_validity;
    uint16_t recv_ic_id;
    uint16_t rdma_read_ic_id;
    uint16_t rdma_recv_ic_id;
};

struct efasim_efadv_sq_depth_attr {
    uint64_t comp_mask;
    uint32_t flags; /* EFASIM_EFADV_SQ_DEPTH_ATTR_* */
    uint32_t max_send_sge;
    uint32_t max_rdma_sge;
    uint32_t max_inline_data;
};

struct efasim_efadv_rq_depth_attr {
    uint64_t comp_mask;
    uint32_t max_recv_sge;
};

/* rdma-core 64.0's sizes and offsets (x86-64). */
_Static_assert(sizeof(struct efasim_efadv_device_attr) == 32, "efadv_device_attr");
_Static_assert(offsetof(struct efasim_efadv_device_attr, inline_buf_size_ex) == 22, "");
_Static_assert(offsetof(struct efasim_efadv_device_attr, device_caps) ==
                   offsetof(struct efadv_device_attr, device_caps),
               "");
_Static_assert(offsetof(struct efasim_efadv_device_attr, max_rdma_size) == 28, "");
_Static_assert(sizeof(struct efasim_efadv_qp_init_attr) == 24, "efadv_qp_init_attr");
_Static_assert(offsetof(struct efasim_efadv_qp_init_attr, flags) == 12, "");
_Static_assert(offsetof(struct efasim_efadv_qp_init_attr, sl) == 14, "");
_Static_assert(offsetof(struct efasim_efadv_qp_init_attr, reserved) == 15, "");
_Static_assert(offsetof(struct efasim_efadv_qp_init_attr, wr_flags) == 16, "");
_Static_assert(sizeof(struct efasim_efadv_wq_attr) == 40, "efadv_wq_attr");
_Static_assert(offsetof(struct efasim_efadv_wq_attr, doorbell) == 24, "");
_Static_assert(offsetof(struct efasim_efadv_wq_attr, max_batch) == 32, "");
_Static_assert(sizeof(struct efasim_efadv_qp) == 16, "efadv_qp");
_Static_assert(offsetof(struct efasim_efadv_qp, wr_set_processing_hints) == 8, "");
_Static_assert(sizeof(struct efasim_efadv_cq_init_attr) == 56, "efadv_cq_init_attr");
_Static_assert(offsetof(struct efasim_efadv_cq_init_attr, flags) == 16, "");
_Static_assert(offsetof(struct efasim_efadv_cq_init_attr, ext_mem_dmabuf.fd) == 48, "");
_Static_assert(sizeof(struct efasim_efadv_cq) == 24, "efadv_cq");
_Static_assert(offsetof(struct efasim_efadv_cq, wc_read_sgid) ==
                   offsetof(struct efadv_cq, wc_read_sgid),
               "");
_Static_assert(offsetof(struct efasim_efadv_cq, wc_is_unsolicited) == 16, "");
_Static_assert(sizeof(struct efasim_efadv_cq_attr) == 32, "efadv_cq_attr");
_Static_assert(offsetof(struct efasim_efadv_cq_attr, num_entries) == 20, "");
_Static_assert(offsetof(struct efasim_efadv_cq_attr, doorbell) == 24, "");
_Static_assert(sizeof(struct efasim_efadv_mr_attr) == 16, "efadv_mr_attr");
_Static_assert(offsetof(struct efasim_efadv_mr_attr, rdma_recv_ic_id) == 14, "");
_Static_assert(sizeof(struct efasim_efadv_sq_depth_attr) == 24, "efadv_sq_depth_attr");
_Static_assert(offsetof(struct efasim_efadv_sq_depth_attr, max_inline_data) == 20, "");
_Static_assert(sizeof(struct efasim_efadv_rq_depth_attr) == 16, "efadv_rq_depth_attr");
_Static_assert(offsetof(struct efasim_efadv_rq_depth_attr, max_recv_sge) == 8, "");

/* Symbols exported under a version node (see libibverbs.map). */
#define EFASIM_EXPORT __attribute__((visibility("default")))

struct efasim_vdev {
    struct ibv_device ibv; /* what ibv_get_device_list hands out */
    struct efasim_device *m;
};

struct efasim_vctx {
    struct verbs_context vctx; /* ibv_context at its end, as verbs_get_ctx expects */
    struct efasim_context *m;
    int async_device_fd; /* the device's end of context.async_fd (EFA raises no async events) */
};

/*
 * A completion channel. Its fd (ibv.fd) is one end of a SEQPACKET socket
 * pair, so a read returns one event, as the uverbs event file's does; the
 * device writes events into the other end, device_fd. That end stands for
 * the kernel's channel object: every CQ bound to the channel holds a
 * duplicate of it, so a CQ's events still have somewhere to go after the
 * channel is destroyed, as the kernel keeps the file of a channel its CQs
 * reference.
 */
struct efasim_vchannel {
    struct ibv_comp_channel ibv;
    int device_fd;
};

struct efasim_vpd {
    struct ibv_pd ibv;
    struct efasim_pd *m;
};

struct efasim_vmr {
    struct ibv_mr ibv;
    struct efasim_mr *m;
};

struct efasim_vah {
    struct ibv_ah ibv;
    struct efasim_ah *m;
};

/*
 * A CQ: the model's CQ and the ring it fills. The ring has its own lock
 * (producers are the QPs that feed the CQ, each under its own lock); the
 * consumer side has another, held from a successful ibv_start_poll to
 * ibv_end_poll as rdma-core's EFA provider holds its CQ spinlock, so the
 * application may post, register and create objects of the same context
 * inside the poll section (libfabric does). The entry being read stays in the
 * ring, reserved, until next_poll or end_poll consumes it; the accessors read
 * a copy of it. A receive that needs a completion reserves its place first
 * (efasim_cq_reserve), so a second QP filling the same CQ in between can never
 * make it lose one.
 */
struct efasim_vcq {
    struct ibv_cq_ex ibv;         /* begins with the struct ibv_cq fields (ibv_cq_ex_to_cq) */
    struct efasim_efadv_cq efadv; /* for efadv_cq_from_ibv_cq_ex / efadv_wc_read_sgid */
    struct efasim_cq m;
    pthread_mutex_t poll_lock; /* the consumer: one poll section at a time */
    pthread_mutex_t lock;      /* the ring: producers and the consumer's pops */
    struct efasim_cqe *ring;
    uint32_t size, head, count; /* under lock */
    uint32_t reserved;          /* places promised to receives in progress (efasim_cq_reserve) */
    struct efasim_cqe cur;      /* copy of the ring's head entry during a poll section */
    bool has_cur;

    /*
     * Completion events (a CQ created with a channel): event_fd is the
     * channel's device end, channel_fd its reading end (duplicates the CQ
     * owns), -1 without a channel. armed (under lock): the next completion
     * raises an event, as the doorbell's ARM bit asks EFA's device for one.
     * events_read counts the events of this CQ read through
     * ibv_get_cq_event, the kernel's comp_events_reported (atomic).
     */
    int event_fd, channel_fd;
    bool armed;
    uint32_t events_read;
};

struct efasim_vqp {
    struct ibv_qp_ex ibv; /* begins with struct ibv_qp (ibv_qp_to_qp_ex) */
    struct efasim_qp *m;  /* m->fe points back here */
    bool has_qp_ex;       /* created with send_ops_flags: ibv_qp_to_qp_ex and ibv_wr_* work */
    /*
     * What efadv_qp_from_ibv_qp_ex returns: wr_set_processing_hints only on a
     * QP created with send_ops_flags and EFADV_WR_EX_WITH_PROCESSING_HINTS.
     */
    struct efasim_efadv_qp efadv;
    /*
     * Completions in a CQ's ring but not yet polled. As on EFA, a WR's queue
     * slot is free again only when its completion is polled (rdma-core returns
     * the wrid index in next_poll/end_poll), so these still count against the
     * queue depth. Atomic: the CQ's ring counts them in, its consumer out.
     */
    uint32_t sq_in_cq, rq_in_cq;

    /* The wr_start session: WRs staged until wr_complete posts them all or none. */
    int session_err;
    uint32_t nstaged;
    struct efasim_send_desc *staged; /* cap.max_send_wr entries */
    uint8_t *staged_inline;          /* their inline data, inline_size bytes each */
    struct efasim_send_desc *building;
};

static inline struct efasim_vctx *to_vctx(struct ibv_context *c)
{
    return (struct efasim_vctx *)((uint8_t *)c - offsetof(struct efasim_vctx, vctx.context));
}

static inline struct efasim_vdev *to_vdev(struct ibv_device *d)
{
    return (struct efasim_vdev *)d; /* ibv is the first member */
}

static inline struct efasim_vpd *to_vpd(struct ibv_pd *pd)
{
    return (struct efasim_vpd *)pd;
}

static inline struct efasim_vmr *to_vmr(struct ibv_mr *mr)
{
    return (struct efasim_vmr *)mr;
}

static inline struct efasim_vah *to_vah(struct ibv_ah *ah)
{
    return (struct efasim_vah *)ah;
}

static inline struct efasim_vcq *to_vcq(struct ibv_cq_ex *cq)
{
    return (struct efasim_vcq *)cq;
}

static inline struct efasim_vqp *to_vqp(struct ibv_qp *qp)
{
    return (struct efasim_vqp *)qp;
}

/* The smallest power of two at least v (2^31 at most). */
static inline uint32_t efasim_roundup_pow2(uint32_t v)
{
    uint32_t p = 1;

    while (p < v && p < (1u << 31))
        p <<= 1;
    return p;
}

/*
 * QPs (qp.c): the verbs entry points' bodies; ibv-style errors (errno, or its
 * value). efasim_vqp_create makes a UD QP for IBV_QPT_UD and an SRD QP
 * otherwise: the entry points (ibv_create_qp*, efadv_create_*) decide which
 * types they take, and check efa's driver_qp_type; efa is what
 * efadv_create_qp_ex adds (flags, sl, wr_flags), NULL for none.
 */
struct ibv_qp *efasim_vqp_create(struct efasim_vctx *ctx, struct ibv_qp_init_attr_ex *attr,
                                 const struct efasim_efadv_qp_init_attr *efa);
/*
 * rdma-core 64's efa_calc_sq_max_depth: the deepest send queue the device's
 * LLQ holds with WQEs of the size max_inline_data and inline RDMA write ask
 * for. qp.c's creation checks it; efadv_get_max_sq_depth answers it.
 */
uint32_t efasim_vqp_sq_max_depth(uint32_t max_inline_data, bool inline_write);
/* True when device is one of efasim's (rdma-core's is_efa_dev). */
bool efasim_vdev_is_efa(const struct ibv_device *device);
int efasim_vqp_destroy(struct ibv_qp *qp);
int efasim_vqp_modify(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int efasim_vqp_query(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
                     struct ibv_qp_init_attr *init);
int efasim_vqp_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int efasim_vqp_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

/*
 * CQs (cq.c). efasim_vcq_create is the provider's and the kernel's part of CQ
 * creation; efasim_vcq_init_verbs is libibverbs' own (verbs_init_cq: the
 * channel's reference count, cq_context), which rdma-core does for
 * ibv_create_cq and ibv_create_cq_ex but not for efadv_create_cq.
 * efasim_vcq_destroy is the provider's and the kernel's destroy, and waits,
 * as ibv_cmd_destroy_cq does, until every event read has been acknowledged.
 */
struct ibv_cq_ex *efasim_vcq_create(struct efasim_vctx *ctx, struct ibv_cq_init_attr_ex *attr,
                                    uint64_t efadv_wc_flags);
void efasim_vcq_init_verbs(struct ibv_cq *cq, struct ibv_comp_channel *channel, void *cq_context);
int efasim_vcq_destroy(struct ibv_cq *cq);
/* ibv_req_notify_cq, through context->ops.req_notify_cq: arm the CQ for one event. */
int efasim_vcq_arm(struct ibv_cq *cq, int solicited_only);
/* An event of cq was read from its channel (the provider's cq_event op and the kernel's count). */
void efasim_vcq_event_read(struct ibv_cq *cq);
/* Legacy ibv_poll_cq, through context->ops.poll_cq. */
int efasim_vcq_poll(struct ibv_cq *cq, int n, struct ibv_wc *wc);
struct efadv_cq *efasim_vcq_efadv(struct ibv_cq_ex *cq);

/*
 * Event files (events.c): a SEQPACKET socket pair whose first end the
 * application reads (shut for writing) and whose second the device writes.
 * 0, or -errno.
 */
int efasim_event_file_open(int *user_fd_p, int *device_fd_p);

/* fork.c: RDMAV_FORK_SAFE and IBV_FORK_SAFE, at the first ibv_get_device_list (once). */
void efasim_vfork_env_init(void);

/*
 * libefa's functions of rdma-core 64's nodes EFA_1.3 to EFA_1.6 (efadv.c).
 * rdma-core 44's headers do not declare them and newer ones declare them with
 * their own structures, so they are efasim_efadv_* in C and take the public
 * name only as symbols (the asm labels), which libefa.map exports.
 */
int efasim_efadv_query_mr(struct ibv_mr *ibvmr, struct efasim_efadv_mr_attr *attr,
                          uint32_t inlen) __asm__("efadv_query_mr");
int efasim_efadv_query_qp_wqs(struct ibv_qp *ibvqp, struct efasim_efadv_wq_attr *sq_attr,
                              struct efasim_efadv_wq_attr *rq_attr,
                              uint32_t inlen) __asm__("efadv_query_qp_wqs");
int efasim_efadv_query_cq(struct ibv_cq *ibvcq, struct efasim_efadv_cq_attr *attr,
                          uint32_t inlen) __asm__("efadv_query_cq");
int efasim_efadv_get_max_sq_depth(struct ibv_context *ibvctx,
                                  struct efasim_efadv_sq_depth_attr *attr,
                                  uint32_t inlen) __asm__("efadv_get_max_sq_depth");
int efasim_efadv_get_max_rq_depth(struct ibv_context *ibvctx,
                                  struct efasim_efadv_rq_depth_attr *attr,
                                  uint32_t inlen) __asm__("efadv_get_max_rq_depth");
struct efasim_efadv_qp *
efasim_efadv_qp_from_ibv_qp_ex(struct ibv_qp_ex *ibvqpx) __asm__("efadv_qp_from_ibv_qp_ex");

/* Exported symbols that no public rdma-core header declares. */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
                       int *type);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
const char *ibv_get_sysfs_path(void);
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src);
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src);

#endif /* EFASIM_VERBS_H */
