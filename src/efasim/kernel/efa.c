/*
 * EFA's kernel driver behind efasim's uverbs core, and the device side of the
 * queues it hands out: what drivers/infiniband/hw/efa checks and answers for
 * each verb (kernel.h lists them), with the errno Linux's driver returns, and
 * what the device does with the memory the provider writes (send queue
 * entries, receive descriptors, doorbells) and reads (completion rings).
 * The device behind it is efasim's model (../model), the same one the
 * drop-in front end drives: SRD, faults, counters and limits are the
 * model's; this file only translates EFA's formats to and from it.
 *
 * Kernel facts follow Linux's EFA driver (efa_verbs.c) and uverbs core as of
 * 6.1, Debian bookworm's kernel; what the device decides (limits, AH
 * numbers, which CQs get a doorbell) follows the model and EFA's published
 * attributes (src/efasim/README.md, "Fidelity"). Each refusal says which
 * check it is.
 *
 * Completion rings. A CQ's ring is written by the device and read by the
 * provider without a system call. To let the reader's thread run the device
 * (as the drop-in's poll does), the ring is armed: its pages fault on read,
 * and the fault runs the model's progress for the CQ first (mmio.c). A read
 * that finds new entries disarms the ring, so the provider reads them
 * without further faults. The device does not know when its reader has read
 * them all: rdma-core 44 reports its consumer index to a CQ's doorbell only
 * sometimes (after ibv_poll_cq, and after ibv_end_poll only when the reader
 * stopped before the ring's end), and only CQs that raise events have one.
 * So the ring is armed again whenever its reader probably caught up: at a
 * doorbell of a QP that uses the CQ (the provider posts after it polled), at
 * the CQ doorbell when it says so, and at the service thread's next pass,
 * which comes early when a datagram reaches a QP that feeds the disarmed
 * ring (efasim_cq_watch): a reader that caught up and posts nothing (it
 * waits for an answer) hears of the answer one thread wake-up after it
 * arrived, not one service period. A ring armed too early costs its reader
 * one more fault; whether armed or not, the reader always sees exactly what
 * the device wrote.
 *
 * For the same reason the device never knows whether a ring has room: as
 * EFA's, it writes every completion, and a CQ smaller than the work requests
 * that feed it loses the oldest unread ones (rdma-core sizes CQs for them).
 */
#include <errno.h>
#include <pthread.h>
#include <rdma/efa-abi.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../model/efasim_model.h"
#include "efa_io.h"
#include "kernel.h"
#include "mmio.h"
#include "uverbs_cmds.h"

#define EFA_SUB_CQS      1    /* sub-CQs per CQ the device reports (efasim's choice) */
#define EFA_MAX_TX_BATCH 16   /* doorbell batch, in 64-byte units (efasim's choice) */
#define EFA_MIN_SQ_WR    0    /* minimum send queue depth (efasim's choice: none) */
#define EFA_NUM_COMP_VEC 1    /* completion vectors (EQs) */
#define EFA_SQ_DB_OFFSET 0x40 /* doorbells sit inside their page, as on EFA's BAR */
#define EFA_RQ_DB_OFFSET 0x80
#define EFA_CQ_DB_OFFSET 0xc0
#define EFA_MAX_PD       256
/* Linux 6.x's RDMA write capability bit (efa-abi.h), newer than Debian's headers. */
#define EFA_CAPS_RDMA_WRITE (1u << 5)
/* Linux 6.x's unsolicited write receive: the capability and create_qp's flag (efa-abi.h). */
#define EFA_CAPS_UNSOLICITED_WRITE_RECV           (1u << 6)
#define EFA_CREATE_QP_WITH_UNSOLICITED_WRITE_RECV (1u << 0)
/* create_qp's driver data past rdma-core 44's 16 bytes: 6.x's flags (16 bits), then sl. */
#define EFA_CREATE_QP_FLAGS_OFF 16
#define EFA_CREATE_QP_SL_OFF    18

struct efa_kcq;

struct efa_ucontext {
    struct efasim_context *ctx; /* the model's device context */
    uint16_t next_cqn;
    uint32_t ncq;
    pthread_mutex_t cqs_lock; /* the list below; the service thread only try-locks it */
    struct efa_kcq *cqs;
};

struct efa_kcq {
    struct efasim_cq m; /* the model's CQ: its producer side (ops) writes the ring */
    struct efasim_kobj *obj;
    struct efasim_kobj *channel; /* completion channel object, or NULL */
    struct efasim_mmio *ring, *db;
    uint8_t *ring_dev;
    pthread_mutex_t lock; /* the ring's producer state and arming */
    uint32_t depth, entry_size;
    uint32_t pi; /* entries written, ever */
    uint16_t cqn;
    bool notify;          /* created with a completion channel: it raises events */
    bool event_armed;     /* the doorbell asked for one event */
    bool watched;         /* disarmed, with the service thread watching its QPs */
    uint16_t cc;          /* the consumer index the doorbell last reported */
    struct efa_kcq *next; /* the context's CQs */
};

struct efa_kqp {
    struct efasim_qp *m;
    struct efasim_kobj *obj, *pd, *send_cq, *recv_cq;
    struct efasim_mmio *llq, *sq_db, *rq, *rq_db;
    uint32_t sq_depth;      /* send queue entries in the LLQ */
    uint32_t rq_descs;      /* receive descriptors in the ring */
    uint16_t sq_ci;         /* the device's next send queue entry */
    uint16_t rq_ci;         /* its next receive descriptor */
    uint8_t qp_type;        /* IB_UVERBS_QPT_UD or IB_UVERBS_QPT_DRIVER (SRD) */
    uint8_t inline_buf[32]; /* a send queue entry's inline data, under the posting section */
};

struct efa_kmr {
    struct efasim_mr *m;
    struct efasim_kobj *pd;
};

struct efa_kah {
    struct efasim_ah *m;
    struct efasim_kobj *pd;
};

static struct efa_ucontext *uctx(const struct efasim_kfile *f)
{
    return f->driver;
}

static struct efasim_device *device_of(const struct efasim_kfile *f)
{
    unsigned n;

    return &efasim_devices(&n)[f->dev_index];
}

/* An mmap entry for region; its key into an answer's (ABI-typed) field. */
static int map_add(struct efasim_kfile *f, struct efasim_mmio *region, __u64 *key_p)
{
    uint64_t key;
    int err = efasim_kfile_add_map(f, region, &key);

    if (!err)
        *key_p = key;
    return err;
}

static struct efasim_pd *pd_model(const struct efasim_kobj *pd)
{
    return pd->impl;
}

static bool udata_cleared(const struct efasim_udata *u, size_t from)
{
    for (size_t i = from; i < u->inlen; i++)
        if (((const uint8_t *)u->in)[i])
            return false;
    return true;
}

static void udata_out(struct efasim_udata *u, const void *resp, size_t size)
{
    if (u->out && u->outlen)
        memcpy(u->out, resp, size < u->outlen ? size : u->outlen);
}

static void service_tick(void *fe);

/* CAP_NET_RAW in the effective set: a privileged Q-Key may be set (ib_modify_qp's check). */
static bool net_raw_capable(void)
{
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct d[2];

    if (syscall(SYS_capget, &h, d))
        return false;
    return d[CAP_NET_RAW / 32].effective & (1u << (CAP_NET_RAW % 32));
}

/* ---- ucontext, device, port ---------------------------------------------------------------- */

int efasim_efa_alloc_ucontext(struct efasim_kfile *f, struct efasim_udata *u)
{
    struct efa_ibv_alloc_ucontext_cmd cmd = {0};
    struct efa_ibv_alloc_ucontext_resp resp = {0};
    const struct efasim_config *cfg = efasim_config();
    struct efa_ucontext *uc;
    int err;

    memcpy(&cmd, u->in, u->inlen < sizeof(cmd) ? u->inlen : sizeof(cmd));
    /* efa_user_comp_handshake: a device that batches needs user space to know it. */
    if (EFA_MAX_TX_BATCH && !(cmd.comp_mask & EFA_ALLOC_UCONTEXT_CMD_COMP_TX_BATCH))
        return -EOPNOTSUPP;
    if (EFA_MIN_SQ_WR && !(cmd.comp_mask & EFA_ALLOC_UCONTEXT_CMD_COMP_MIN_SQ_WR))
        return -EOPNOTSUPP;
    uc = calloc(1, sizeof(*uc));
    if (!uc)
        return -ENOMEM;
    pthread_mutex_init(&uc->cqs_lock, NULL);
    err = efasim_context_open(device_of(f), uc, &uc->ctx);
    if (err) {
        pthread_mutex_destroy(&uc->cqs_lock);
        free(uc);
        return err;
    }
    __atomic_store_n(&uc->ctx->fe_tick, service_tick, __ATOMIC_RELEASE);
    resp.cmds_supp_udata_mask =
        EFA_USER_CMDS_SUPP_UDATA_QUERY_DEVICE | EFA_USER_CMDS_SUPP_UDATA_CREATE_AH;
    resp.sub_cqs_per_cq = EFA_SUB_CQS;
    resp.inline_buf_size = (uint16_t)cfg->inline_size;
    resp.max_llq_size = cfg->max_sq_wr * (uint32_t)sizeof(struct efasim_io_tx_wqe);
    resp.max_tx_batch = EFA_MAX_TX_BATCH;
    resp.min_sq_wr = EFA_MIN_SQ_WR;
    udata_out(u, &resp, sizeof(resp));
    f->ctx = uc->ctx;
    f->driver = uc;
    return 0;
}

void efasim_efa_dealloc_ucontext(struct efasim_kfile *f)
{
    struct efa_ucontext *uc = uctx(f);

    if (!uc)
        return;
    efasim_context_close(uc->ctx, NULL);
    pthread_mutex_destroy(&uc->cqs_lock);
    free(uc);
    f->ctx = NULL;
    f->driver = NULL;
}

uint32_t efasim_efa_num_comp_vectors(const struct efasim_kfile *f)
{
    (void)f;
    return EFA_NUM_COMP_VEC;
}

int efasim_efa_query_device(struct efasim_kfile *f, struct efasim_kdevice_attr *a,
                            struct efasim_udata *u)
{
    const struct efasim_config *cfg = efasim_config();
    struct efa_ibv_ex_query_device_resp resp = {0};

    if (u->inlen && !udata_cleared(u, 0))
        return -EINVAL;
    memset(a, 0, sizeof(*a));
    a->max_mr_size = cfg->max_mr_size;
    a->page_size_cap = 0xfffff000ull;
    a->vendor_id = EFASIM_VENDOR_ID;
    a->vendor_part_id = cfg->device_id;
    a->hw_ver = cfg->device_id; /* the PCI subsystem device, which EFA does not publish */
    a->node_guid = htobe64(device_of(f)->guid);
    a->max_qp = cfg->max_qp;
    a->max_cq = cfg->max_cq;
    a->max_pd = EFA_MAX_PD;
    a->max_mr = cfg->max_mr;
    a->max_ah = cfg->max_ah;
    a->max_cqe = cfg->max_cqe;
    a->max_qp_wr = cfg->max_sq_wr < cfg->max_rq_wr ? cfg->max_sq_wr : cfg->max_rq_wr;
    a->max_send_sge = cfg->max_sq_sge;
    a->max_recv_sge = cfg->max_rq_sge;
    a->max_sge_rd = 1;
    a->max_pkeys = 1;
    a->phys_port_cnt = 1;
    resp.max_sq_wr = cfg->max_sq_wr;
    resp.max_rq_wr = cfg->max_rq_wr;
    resp.max_sq_sge = (uint16_t)cfg->max_sq_sge;
    resp.max_rq_sge = (uint16_t)cfg->max_rq_sge;
    resp.max_rdma_size = (uint32_t)cfg->max_rdma_size;
    resp.device_caps = EFA_QUERY_DEVICE_CAPS_RNR_RETRY | EFA_QUERY_DEVICE_CAPS_CQ_WITH_SGID |
                       EFA_QUERY_DEVICE_CAPS_CQ_NOTIFICATIONS |
                       (cfg->rdma_read ? EFA_QUERY_DEVICE_CAPS_RDMA_READ : 0) |
                       (cfg->rdma_write ? EFA_CAPS_RDMA_WRITE : 0) |
                       (cfg->unsolicited_write_recv ? EFA_CAPS_UNSOLICITED_WRITE_RECV : 0);
    udata_out(u, &resp, sizeof(resp));
    return 0;
}

int efasim_efa_query_port(struct efasim_kfile *f, uint32_t port,
                          struct ib_uverbs_query_port_resp *r)
{
    uint32_t mtu = efasim_config()->mtu;

    (void)f;
    if (port != 1)
        return -EINVAL; /* rdma_is_port_valid */
    memset(r, 0, sizeof(*r));
    r->state = IBV_PORT_ACTIVE;
    r->phys_state = 5; /* LinkUp */
    r->gid_tbl_len = 1;
    r->pkey_tbl_len = 1;
    r->lmc = 1;
    r->max_vl_num = 1;
    r->max_mtu = r->active_mtu = mtu >= 4096   ? IBV_MTU_4096
                                 : mtu >= 2048 ? IBV_MTU_2048
                                 : mtu >= 1024 ? IBV_MTU_1024
                                 : mtu >= 512  ? IBV_MTU_512
                                               : IBV_MTU_256;
    r->max_msg_sz = mtu;
    r->active_width = 2;  /* 4X: 100 Gb/s as EDR 4X */
    r->active_speed = 32; /* EDR */
    r->link_layer = IBV_LINK_LAYER_UNSPECIFIED;
    return 0;
}

int efasim_efa_query_gid(struct efasim_kfile *f, uint32_t port, uint32_t index, uint8_t gid[16])
{
    if (port != 1 || index)
        return -EINVAL;
    memcpy(gid, device_of(f)->gid.raw, 16);
    return 0;
}

int efasim_efa_query_pkey(struct efasim_kfile *f, uint32_t port, uint32_t index, uint16_t *pkey_p)
{
    (void)f;
    if (port != 1 || index)
        return -EINVAL;
    *pkey_p = 0xffff;
    return 0;
}

/* ---- PD ----------------------------------------------------------------------------------- */

int efasim_efa_alloc_pd(struct efasim_kobj *pd, struct efasim_udata *u)
{
    struct efa_ibv_alloc_pd_resp resp = {0};
    struct efasim_pd *m;
    int err;

    if (u->inlen && !udata_cleared(u, 0))
        return -EINVAL;
    err = efasim_pd_create(pd->file->ctx, &m);
    if (err)
        return err;
    resp.pdn = m->pdn;
    udata_out(u, &resp, sizeof(resp));
    pd->impl = m;
    return 0;
}

int efasim_efa_dealloc_pd(struct efasim_kobj *pd)
{
    efasim_pd_destroy(pd->impl);
    return 0; /* efa_dealloc_pd ignores the device's answer */
}

/* ---- MR ----------------------------------------------------------------------------------- */

/* ib_check_mr_access, then what EFA's efa_alloc_mr grants: 0 or the errno. */
static int mr_access_check(uint32_t *access)
{
    const struct efasim_config *cfg = efasim_config();
    uint32_t supported = IBV_ACCESS_LOCAL_WRITE | (cfg->rdma_read ? IBV_ACCESS_REMOTE_READ : 0) |
                         (cfg->rdma_write ? IBV_ACCESS_REMOTE_WRITE : 0);

    if ((*access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
        !(*access & IBV_ACCESS_LOCAL_WRITE))
        return -EINVAL;
    if (*access & ~(uint32_t)(0x3ff | IBV_ACCESS_OPTIONAL_RANGE))
        return -EINVAL;
    if (*access & IBV_ACCESS_ON_DEMAND)
        return -EOPNOTSUPP; /* no ODP */
    *access &= ~(uint32_t)IBV_ACCESS_OPTIONAL_RANGE;
    if (*access & ~supported)
        return -EOPNOTSUPP;
    return 0;
}

int efasim_efa_reg_mr(struct efasim_kobj *mr, struct efasim_kobj *pd, uint64_t start,
                      uint64_t length, uint64_t iova, uint32_t access, uint32_t *lkey_p,
                      uint32_t *rkey_p, struct efasim_udata *u)
{
    struct efa_kmr *k;
    int err = mr_access_check(&access);

    if (err)
        return err;
    /* efa_alloc_mr checks the first 8 bytes of its udata (sizeof the length field). */
    if (u->inlen) {
        struct efasim_udata first = {u->in, u->inlen < 8 ? u->inlen : 8, NULL, 0};

        if (!udata_cleared(&first, 0))
            return -EINVAL;
    }
    k = calloc(1, sizeof(*k));
    if (!k)
        return -ENOMEM;
    /*
     * ib_umem_get's checks in its order (RLIMIT_MEMLOCK, pages to pin, each one
     * mapped), then the device's: the model's, strict as the kernel is.
     */
    err = efasim_mr_reg(pd_model(pd), start, length, iova, access, EFASIM_MR_UMEM_STRICT, &k->m);
    if (err) {
        free(k);
        return err;
    }
    k->pd = pd;
    *lkey_p = k->m->lkey;
    *rkey_p = k->m->rkey;
    mr->impl = k;
    return 0;
}

int efasim_efa_reg_dmabuf_mr(struct efasim_kobj *mr, struct efasim_kobj *pd, uint64_t offset,
                             uint64_t length, uint64_t iova, int fd, uint32_t access,
                             uint32_t *lkey_p, uint32_t *rkey_p)
{
    int err;

    (void)mr, (void)lkey_p, (void)rkey_p;
    if ((offset & 0xfff) != (iova & 0xfff))
        return -EINVAL;
    if (access &
        ~(uint32_t)(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
                    IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_RELAXED_ORDERING))
        return -EINVAL;
    err = mr_access_check(&access);
    if (err)
        return err;
    /* dma_buf_get, as the model answers it: efasim has no device memory to export. */
    return efasim_mr_reg_dmabuf(pd_model(pd), offset, length, iova, fd, access);
}

int efasim_efa_dereg_mr(struct efasim_kobj *mr)
{
    struct efa_kmr *k = mr->impl;

    efasim_mr_dereg(k->m);
    free(k);
    return 0;
}

/* ---- AH ----------------------------------------------------------------------------------- */

int efasim_efa_create_ah(struct efasim_kobj *ah, struct efasim_kobj *pd,
                         const struct ib_uverbs_ah_attr *attr, struct efasim_udata *u)
{
    struct efa_ibv_create_ah_resp resp = {0};
    union ibv_gid gid;
    struct efa_kah *k;
    int err;

    if (attr->port_num != 1)
        return -EINVAL; /* ib_uverbs_create_ah: not a port of the device */
    if (attr->is_global && attr->grh.sgid_index >= 1)
        return -EINVAL; /* rdma_fill_sgid_attr: the GID table has one entry */
    if (u->inlen && !udata_cleared(u, 0))
        return -EINVAL;
    /* The device is given the destination GID (all zero without a GRH). */
    memset(&gid, 0, sizeof(gid));
    if (attr->is_global)
        memcpy(gid.raw, attr->grh.dgid, sizeof(gid.raw));
    k = calloc(1, sizeof(*k));
    if (!k)
        return -ENOMEM;
    err = efasim_ah_create(pd_model(pd), &gid, &k->m);
    if (err) {
        free(k);
        return err;
    }
    k->pd = pd;
    resp.efa_address_handle = k->m->ahn;
    udata_out(u, &resp, sizeof(resp));
    ah->impl = k;
    return 0;
}

int efasim_efa_destroy_ah(struct efasim_kobj *ah)
{
    struct efa_kah *k = ah->impl;

    efasim_ah_destroy(k->m);
    free(k);
    return 0; /* efa_destroy_ah ignores the device's answer */
}

/* The PD an object was made on (uverbs_cmds.c releases its use). */
struct efasim_kobj *efasim_efa_obj_pd(struct efasim_kobj *o)
{
    switch (o->type) {
    case EFASIM_KOBJ_MR:
        return ((struct efa_kmr *)o->impl)->pd;
    case EFASIM_KOBJ_AH:
        return ((struct efa_kah *)o->impl)->pd;
    default:
        return NULL;
    }
}

/* ---- Completion rings --------------------------------------------------------------------- */

static struct efa_kcq *kcq_of(struct efasim_cq *m)
{
    return (struct efa_kcq *)((uint8_t *)m - offsetof(struct efa_kcq, m));
}

/* Entries written that the consumer has not read, as far as its doorbell said. */
static uint32_t ring_unread(const struct efa_kcq *cq)
{
    return (uint16_t)((uint16_t)cq->pi - cq->cc);
}

/* Write one completion at the producer index; the phase last. The CQ's lock held. */
static void ring_write(struct efa_kcq *cq, const struct efasim_cqe *e)
{
    uint8_t *slot = cq->ring_dev + (size_t)(cq->pi % cq->depth) * cq->entry_size;
    struct efasim_io_rx_cdesc_ex x;
    uint8_t phase = (uint8_t)(~(cq->pi / cq->depth) & 1); /* 1 on the first lap */
    uint8_t flags = 0;
    uint8_t op = e->opcode == IBV_WC_RDMA_WRITE || e->opcode == IBV_WC_RECV_RDMA_WITH_IMM
                     ? EFASIM_IO_OP_RDMA_WRITE
                     : EFASIM_IO_OP_SEND;

    memset(&x, 0, sizeof(x));
    x.base.common.req_id = (uint16_t)e->wr_id;
    x.base.common.status = (uint8_t)e->vendor_err;
    x.base.common.qp_num = (uint16_t)e->qp_num;
    x.base.common.length = (uint16_t)e->byte_len;
    if (!e->sq) {
        x.base.ah = e->slid;
        x.base.src_qp_num = (uint16_t)e->src_qp;
        x.base.imm = e->imm;
        /*
         * An RDMA write with immediate has the high half of its length where
         * other receives have the sender's GID (efa_io_defs.h's
         * efa_io_rx_cdesc_ex; rdma-core from 45 reads it, 44 only the low half).
         * A 16-byte entry has room for neither.
         */
        if (op == EFASIM_IO_OP_RDMA_WRITE)
            x.length_hi = (uint16_t)(e->byte_len >> 16);
        else
            memcpy(x.src_addr, e->sgid.raw, sizeof(x.src_addr));
    }
    flags = EFASIM_IO_SET(flags, EFASIM_IO_CQE_PHASE, phase);
    flags = EFASIM_IO_SET(flags, EFASIM_IO_CQE_Q_TYPE,
                          e->sq ? EFASIM_IO_SEND_QUEUE : EFASIM_IO_RECV_QUEUE);
    flags = EFASIM_IO_SET(flags, EFASIM_IO_CQE_HAS_IMM, (e->wc_flags & IBV_WC_WITH_IMM) != 0);
    flags = EFASIM_IO_SET(flags, EFASIM_IO_CQE_OP_TYPE, op);
    /* A write with immediate that took no receive WR: req_id 0, the provider reads no RQ. */
    flags = EFASIM_IO_SET(flags, EFASIM_IO_CQE_UNSOLICITED, e->unsolicited);
    memcpy(slot + sizeof(x.base.common.req_id) + 2, &x.base.common.qp_num,
           cq->entry_size - 4); /* everything after req_id, status, flags */
    memcpy(slot, &x.base.common.req_id, 3);
    __atomic_store_n(slot + 3, flags, __ATOMIC_RELEASE);
    cq->pi++;
}

/* A completion event for an armed CQ of a channel: one per arm, as the device interrupts. */
static void ring_event(struct efa_kcq *cq)
{
    if (!cq->event_armed || !cq->channel)
        return;
    cq->event_armed = false;
    efasim_kevents_comp(cq->channel->impl, cq->obj);
}

static int kcq_push(struct efasim_cq *m, const struct efasim_cqe *e)
{
    struct efa_kcq *cq = kcq_of(m);

    pthread_mutex_lock(&cq->lock);
    ring_write(cq, e);
    ring_event(cq);
    pthread_mutex_unlock(&cq->lock);
    return 0;
}

/* Room in the ring: always, as far as the device knows ("Completion rings"). */
static bool kcq_reserve(struct efasim_cq *m)
{
    (void)m;
    return true;
}

static void kcq_push_reserved(struct efasim_cq *m, const struct efasim_cqe *e)
{
    kcq_push(m, e);
}

static void kcq_unreserve(struct efasim_cq *m)
{
    (void)m;
}

static bool kcq_full(const struct efasim_cq *m)
{
    (void)m;
    return false;
}

static void kcq_forget_qp(struct efasim_cq *m, const struct efasim_qp *qp)
{
    (void)m, (void)qp; /* the ring holds QP numbers, never pointers */
}

static const struct efasim_cq_ops g_kcq_ops = {
    .push = kcq_push,
    .reserve = kcq_reserve,
    .push_reserved = kcq_push_reserved,
    .unreserve = kcq_unreserve,
    .full = kcq_full,
    .forget_qp = kcq_forget_qp,
};

/*
 * Arm the ring, or disarm it and have the service thread watch the QPs that
 * feed it, so that a datagram reaching them while the reader reads the ring
 * unarmed wakes a pass that arms it again (see "Completion rings"). The CQ's
 * lock held.
 */
static void ring_arm(struct efa_kcq *cq, bool armed)
{
    efasim_mmio_arm(cq->ring, armed);
    if (cq->watched != !armed) {
        cq->watched = !armed;
        efasim_cq_watch(&cq->m, !armed);
    }
}

/* A read of the armed ring at `offset`: the reader's thread runs the device first. */
static void kcq_ring_load(void *owner, size_t offset)
{
    struct efa_kcq *cq = owner;
    uint32_t slot = (uint32_t)(offset / cq->entry_size) % cq->depth;

    efasim_progress(cq->m.ctx, &cq->m);
    pthread_mutex_lock(&cq->lock);
    /*
     * The reader is at slot s of its lap; it finds an entry there when the
     * device wrote past it. (pi - s) % depth == 0 is read as "caught up": a
     * ring that is exactly full then answers by emulated loads, still right.
     */
    if ((cq->pi - slot) % cq->depth)
        ring_arm(cq, false);
    pthread_mutex_unlock(&cq->lock);
}

/*
 * The CQ doorbell: the consumer index (rdma-core writes it after every poll
 * that returned entries) and, with ARM, a request for the next event. Once
 * the consumer has read everything written, its ring is armed again.
 */
static void kcq_db_store(void *owner, size_t offset, uint64_t value, unsigned size)
{
    struct efa_kcq *cq = owner;
    uint32_t v = (uint32_t)value;

    if (offset != EFA_CQ_DB_OFFSET || size != 4)
        return; /* not the doorbell register: the device ignores it */
    pthread_mutex_lock(&cq->lock);
    cq->cc = (uint16_t)EFASIM_IO_GET(v, EFASIM_IO_CQ_DB_CONSUMER);
    if (EFASIM_IO_GET(v, EFASIM_IO_CQ_DB_ARM)) {
        cq->event_armed = true;
        if (ring_unread(cq))
            ring_event(cq); /* an entry is there already */
    }
    if (!ring_unread(cq))
        ring_arm(cq, true);
    pthread_mutex_unlock(&cq->lock);
}

static const struct efasim_mmio_ops g_ring_ops = {.load = kcq_ring_load};
static const struct efasim_mmio_ops g_cq_db_ops = {.store = kcq_db_store};

/* Arm a CQ's ring again: its reader has probably caught up (see "Completion rings"). */
static void kcq_rearm(struct efa_kcq *cq)
{
    pthread_mutex_lock(&cq->lock);
    ring_arm(cq, true);
    pthread_mutex_unlock(&cq->lock);
}

struct efasim_kobj *efasim_efa_cq_channel(struct efasim_kobj *cq)
{
    return ((struct efa_kcq *)cq->impl)->channel;
}

static void kcq_free(struct efa_kcq *cq)
{
    efasim_mmio_release(cq->ring);
    efasim_mmio_release(cq->db);
    pthread_mutex_destroy(&cq->lock);
    free(cq);
}

int efasim_efa_create_cq(struct efasim_kobj *obj, uint32_t cqe, uint32_t comp_vector,
                         struct efasim_kobj *channel, uint32_t flags, uint32_t *cqe_p,
                         struct efasim_udata *u)
{
    struct efa_ibv_create_cq cmd = {0};
    struct efa_ibv_create_cq_resp resp = {0};
    struct efa_ucontext *uc = uctx(obj->file);
    long page = sysconf(_SC_PAGESIZE);
    struct efa_kcq *cq;
    size_t size;
    int err;

    (void)comp_vector;
    if (flags)
        return -EOPNOTSUPP;
    if (cqe < 1 || cqe > efasim_config()->max_cqe)
        return -EINVAL;
    if (u->inlen < offsetof(struct efa_ibv_create_cq, num_sub_cqs) + sizeof(cmd.num_sub_cqs))
        return -EINVAL;
    if (u->inlen > sizeof(cmd) && !udata_cleared(u, sizeof(cmd)))
        return -EINVAL;
    memcpy(&cmd, u->in, u->inlen < sizeof(cmd) ? u->inlen : sizeof(cmd));
    if (cmd.comp_mask || cmd.reserved_58[0] || cmd.reserved_58[1] || cmd.reserved_58[2] ||
        cmd.reserved_58[3] || cmd.reserved_58[4])
        return -EINVAL;
    if (cmd.cq_entry_size != sizeof(struct efasim_io_rx_cdesc_ex) &&
        (cmd.flags & EFA_CREATE_CQ_WITH_SGID ||
         cmd.cq_entry_size != sizeof(struct efasim_io_rx_cdesc)))
        return -EINVAL;
    if (cmd.num_sub_cqs != EFA_SUB_CQS)
        return -EINVAL;
    if (uc->ncq >= efasim_config()->max_cq)
        return -ENOMEM; /* the device's CQ table */
    cq = calloc(1, sizeof(*cq));
    if (!cq)
        return -ENOMEM;
    pthread_mutex_init(&cq->lock, NULL);
    cq->obj = obj;
    cq->depth = cqe;
    cq->entry_size = cmd.cq_entry_size;
    cq->notify = cmd.flags & EFA_CREATE_CQ_WITH_COMPLETION_CHANNEL;
    cq->channel = channel;
    size = ((size_t)cq->entry_size * cqe * EFA_SUB_CQS + (size_t)page - 1) & ~((size_t)page - 1);
    cq->ring = efasim_mmio_create(size, EFASIM_MMIO_RING, &g_ring_ops, cq);
    if (!cq->ring) {
        err = -ENOMEM;
        goto err_free;
    }
    cq->ring_dev = efasim_mmio_device_view(cq->ring);
    efasim_mmio_arm(cq->ring, true);
    err = map_add(obj->file, cq->ring, &resp.q_mmap_key);
    if (err)
        goto err_free;
    resp.q_mmap_size = size;
    if (cq->notify) {
        /* A CQ that raises events has a doorbell to arm it (and to hear its consumer). */
        cq->db = efasim_mmio_create((size_t)page, EFASIM_MMIO_DOORBELL, &g_cq_db_ops, cq);
        if (!cq->db) {
            err = -ENOMEM;
            goto err_unmap;
        }
        err = map_add(obj->file, cq->db, &resp.db_mmap_key);
        if (err)
            goto err_unmap;
        resp.db_off = EFA_CQ_DB_OFFSET;
        resp.comp_mask |= EFA_CREATE_CQ_RESP_DB_OFF;
    }
    cq->cqn = uc->next_cqn++;
    resp.cq_idx = cq->cqn;
    err = efasim_cq_construct(&cq->m, obj->file->ctx, cqe, &g_kcq_ops, cq);
    if (err)
        goto err_unmap;
    uc->ncq++;
    pthread_mutex_lock(&uc->cqs_lock);
    cq->next = uc->cqs;
    uc->cqs = cq;
    pthread_mutex_unlock(&uc->cqs_lock);
    udata_out(u, &resp, sizeof(resp));
    *cqe_p = cqe; /* the kernel does not round: rdma-core did */
    obj->impl = cq;
    return 0;

err_unmap:
    efasim_kfile_remove_map(obj->file, cq->ring);
    if (cq->db)
        efasim_kfile_remove_map(obj->file, cq->db);
err_free:
    kcq_free(cq);
    return err;
}

int efasim_efa_destroy_cq(struct efasim_kobj *obj, uint32_t *comp_events_p)
{
    struct efa_kcq *cq = obj->impl;
    struct efa_ucontext *uc = uctx(obj->file);
    struct efasim_kobj *channel;

    /* No event after this one; its unread events leave the channel, and the
     * answer counts those read (ib_uverbs_release_ucq). */
    pthread_mutex_lock(&cq->lock);
    channel = cq->channel;
    cq->channel = NULL;
    cq->event_armed = false;
    pthread_mutex_unlock(&cq->lock);
    if (channel)
        efasim_kevents_forget(channel->impl, obj);
    *comp_events_p = obj->events_read;
    pthread_mutex_lock(&uc->cqs_lock);
    for (struct efa_kcq **p = &uc->cqs; *p; p = &(*p)->next) {
        if (*p == cq) {
            *p = cq->next;
            break;
        }
    }
    pthread_mutex_unlock(&uc->cqs_lock);
    efasim_kfile_remove_map(obj->file, cq->ring);
    if (cq->db)
        efasim_kfile_remove_map(obj->file, cq->db);
    uc->ncq--;
    kcq_free(cq);
    return 0;
}

/* ---- Send and receive queues ---------------------------------------------------------------- */

static void qp_rearm_cqs(struct efa_kqp *qp)
{
    kcq_rearm(qp->send_cq->impl);
    if (qp->recv_cq != qp->send_cq)
        kcq_rearm(qp->recv_cq->impl);
}

/* The send queue entry at the device's index: its descriptor in the model's terms. */
static bool sq_entry(struct efa_kqp *qp, struct efasim_send_desc *d, uint16_t *status_p)
{
    const struct efasim_io_tx_wqe *w =
        (const void *)(efasim_mmio_device_view(qp->llq) +
                       (size_t)(qp->sq_ci % qp->sq_depth) * sizeof(struct efasim_io_tx_wqe));
    struct efasim_io_tx_wqe e;
    uint8_t expect_phase = (uint8_t)((qp->sq_ci / qp->sq_depth) & 1) ^ 0;
    unsigned op;

    memcpy(&e, w, sizeof(e));
    if (!EFASIM_IO_GET(e.meta.ctrl1, EFASIM_IO_TX_META) ||
        EFASIM_IO_GET(e.meta.ctrl2, EFASIM_IO_TX_PHASE) != expect_phase)
        return false; /* not written yet: the device waits for it */
    memset(d, 0, sizeof(*d));
    *status_p = EFASIM_ST_OK;
    d->wr_id = e.meta.req_id;
    d->signaled = EFASIM_IO_GET(e.meta.ctrl2, EFASIM_IO_TX_COMP_REQ);
    /* The destination: the AH number of the QP's PD, resolved as the device does. */
    d->has_dest = !efasim_ahn_gid(pd_model(qp->pd), e.meta.ah, &d->dgid);
    d->dqpn = e.meta.dest_qp_num;
    d->dqkey = e.meta.qkey;
    if (EFASIM_IO_GET(e.meta.ctrl1, EFASIM_IO_TX_HAS_IMM)) {
        d->has_imm = true;
        d->imm = e.meta.immediate_data;
    }
    op = EFASIM_IO_GET(e.meta.ctrl1, EFASIM_IO_TX_OP_TYPE);
    if (op == EFASIM_IO_OP_SEND) {
        d->op = EFASIM_OP_SEND;
        if (EFASIM_IO_GET(e.meta.ctrl1, EFASIM_IO_TX_INLINE)) {
            if (e.meta.length > sizeof(e.data.inline_data)) {
                *status_p = EFASIM_ST_LOCAL_BAD_LENGTH;
                return true;
            }
            d->is_inline = true;
            d->inline_len = e.meta.length;
            memcpy(qp->inline_buf, e.data.inline_data, e.meta.length);
            d->inline_data = qp->inline_buf;
            return true;
        }
        if (e.meta.length > 2) {
            *status_p = EFASIM_ST_LOCAL_BAD_LENGTH;
            return true;
        }
        d->nsge = e.meta.length;
        for (unsigned i = 0; i < d->nsge; i++) {
            d->sge[i].addr = (uint64_t)e.data.sgl[i].addr_hi << 32 | e.data.sgl[i].addr_lo;
            d->sge[i].length = e.data.sgl[i].length;
            d->sge[i].lkey = e.data.sgl[i].lkey & EFASIM_IO_LKEY_MASK;
        }
        return true;
    }
    if ((op == EFASIM_IO_OP_RDMA_READ && efasim_config()->rdma_read) ||
        (op == EFASIM_IO_OP_RDMA_WRITE && efasim_config()->rdma_write)) {
        d->op = op == EFASIM_IO_OP_RDMA_READ ? EFASIM_OP_READ : EFASIM_OP_WRITE;
        d->rkey = e.data.rdma.remote.rkey;
        d->raddr = (uint64_t)e.data.rdma.remote.addr_hi << 32 | e.data.rdma.remote.addr_lo;
        if (e.meta.length > 1) {
            *status_p = EFASIM_ST_LOCAL_BAD_LENGTH;
            return true;
        }
        d->nsge = e.meta.length;
        if (d->nsge) {
            d->sge[0].addr =
                (uint64_t)e.data.rdma.local[0].addr_hi << 32 | e.data.rdma.local[0].addr_lo;
            d->sge[0].length = e.data.rdma.local[0].length;
            d->sge[0].lkey = e.data.rdma.local[0].lkey & EFASIM_IO_LKEY_MASK;
        }
        return true;
    }
    *status_p = EFASIM_ST_LOCAL_INVALID_OP;
    return true;
}

/* The send queue doorbell: the provider's producer index. The posting thread runs the device. */
static void sq_db_store(void *owner, size_t offset, uint64_t value, unsigned size)
{
    struct efa_kqp *qp = owner;
    uint16_t pc = (uint16_t)value;
    struct efasim_send_desc d;
    uint16_t status;

    if (offset != EFA_SQ_DB_OFFSET || size != 4)
        return;
    efasim_qp_post_begin(qp->m);
    while (qp->sq_ci != pc && (uint16_t)(pc - qp->sq_ci) <= qp->sq_depth) {
        if (!sq_entry(qp, &d, &status))
            break;
        d.fail = (uint8_t)status;
        efasim_qp_post_send(qp->m, &d);
        qp->sq_ci++;
    }
    efasim_qp_kick(qp->m);
    efasim_qp_post_end(qp->m);
    qp_rearm_cqs(qp);
}

/* The receive queue doorbell: descriptors up to pc make receive WRs, FIRST to LAST. */
static void rq_db_store(void *owner, size_t offset, uint64_t value, unsigned size)
{
    struct efa_kqp *qp = owner;
    const struct efasim_io_rx_desc *ring = (const void *)efasim_mmio_device_view(qp->rq);
    uint16_t pc = (uint16_t)value;
    struct ibv_sge sge[EFASIM_MAX_SGE];
    uint64_t wr_id = 0;
    uint32_t n = 0;

    if (offset != EFA_RQ_DB_OFFSET || size != 4)
        return;
    efasim_qp_post_begin(qp->m);
    while (qp->rq_ci != pc && (uint16_t)(pc - qp->rq_ci) <= qp->rq_descs) {
        struct efasim_io_rx_desc r = ring[qp->rq_ci % qp->rq_descs];

        if (r.lkey_ctrl & EFASIM_IO_RX_FIRST) {
            n = 0;
            wr_id = r.req_id;
        }
        if (n < EFASIM_MAX_SGE)
            sge[n++] = (struct ibv_sge){.addr = (uint64_t)r.addr_hi << 32 | r.addr_lo,
                                        .length = r.length,
                                        .lkey = r.lkey_ctrl & EFASIM_IO_LKEY_MASK};
        qp->rq_ci++;
        if (r.lkey_ctrl & EFASIM_IO_RX_LAST) {
            efasim_qp_post_recv(qp->m, wr_id, n, sge);
            n = 0;
        }
    }
    efasim_qp_post_end(qp->m);
    qp_rearm_cqs(qp);
}

static const struct efasim_mmio_ops g_sq_db_ops = {.store = sq_db_store};
static const struct efasim_mmio_ops g_rq_db_ops = {.store = rq_db_store};
static const struct efasim_mmio_ops g_llq_ops = {0};

static void kqp_free(struct efa_kqp *qp)
{
    efasim_mmio_release(qp->llq);
    efasim_mmio_release(qp->sq_db);
    efasim_mmio_release(qp->rq);
    efasim_mmio_release(qp->rq_db);
    free(qp);
}

static void kqp_remove_maps(struct efasim_kfile *f, struct efa_kqp *qp)
{
    struct efasim_mmio *r[] = {qp->llq, qp->sq_db, qp->rq, qp->rq_db};

    for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
        if (r[i])
            efasim_kfile_remove_map(f, r[i]);
}

static int kqp_map(struct efasim_kfile *f, struct efasim_mmio **r_p, size_t len,
                   enum efasim_mmio_kind kind, const struct efasim_mmio_ops *ops, void *owner,
                   __u64 *key_p)
{
    *r_p = efasim_mmio_create(len, kind, ops, owner);
    if (!*r_p)
        return -ENOMEM;
    return map_add(f, *r_p, key_p);
}

int efasim_efa_create_qp(struct efasim_kobj *obj, struct efasim_kqp_init *init, uint32_t *qpn_p,
                         struct efasim_udata *u)
{
    const struct efasim_config *cfg = efasim_config();
    struct efa_ibv_create_qp cmd = {0};
    struct efa_ibv_create_qp_resp resp = {0};
    struct efasim_qp_init mi = {0};
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uint16_t flags = 0; /* 6.x's, past rdma-core 44's 16 bytes */
    struct efa_kqp *qp;
    int err;

    /* efa_qp_validate_cap */
    if (init->cap.max_send_wr > cfg->max_sq_wr || init->cap.max_recv_wr > cfg->max_rq_wr ||
        init->cap.max_send_sge > cfg->max_sq_sge || init->cap.max_recv_sge > cfg->max_rq_sge ||
        init->cap.max_inline_data > cfg->inline_size)
        return -EINVAL;
    /* efa_qp_validate_attr */
    if ((init->qp_type != IBV_QPT_DRIVER && init->qp_type != IBV_QPT_UD) || init->create_flags)
        return -EOPNOTSUPP;
    if (u->inlen < offsetof(struct efa_ibv_create_qp, driver_qp_type) + 4)
        return -EINVAL;
    if (u->inlen > sizeof(cmd) + 8 && !udata_cleared(u, sizeof(cmd) + 8))
        return -EINVAL; /* 6.x's struct is 24 bytes: flags and sl beyond rdma-core 44's 16 */
    memcpy(&cmd, u->in, u->inlen < sizeof(cmd) ? u->inlen : sizeof(cmd));
    if (u->inlen > EFA_CREATE_QP_FLAGS_OFF)
        memcpy(&flags, (const uint8_t *)u->in + EFA_CREATE_QP_FLAGS_OFF,
               u->inlen < EFA_CREATE_QP_SL_OFF ? 1 : 2);
    if (flags & ~(cfg->unsolicited_write_recv ? EFA_CREATE_QP_WITH_UNSOLICITED_WRITE_RECV : 0u))
        return -EOPNOTSUPP; /* flags this device does not offer */
    if (u->inlen > EFA_CREATE_QP_SL_OFF && !udata_cleared(u, EFA_CREATE_QP_SL_OFF))
        return -EOPNOTSUPP; /* a service level this device does not offer */
    if (cmd.comp_mask)
        return -EINVAL;
    if (init->qp_type == IBV_QPT_DRIVER && cmd.driver_qp_type != EFA_QP_DRIVER_TYPE_SRD)
        return -EOPNOTSUPP;
    /* The device's checks of the rings it is given (ILLEGAL_PARAMETER: EINVAL). */
    if (cmd.sq_ring_size % sizeof(struct efasim_io_tx_wqe) ||
        cmd.sq_ring_size / sizeof(struct efasim_io_tx_wqe) < init->cap.max_send_wr ||
        cmd.sq_ring_size > cfg->max_sq_wr * sizeof(struct efasim_io_tx_wqe) || !cmd.sq_ring_size ||
        cmd.rq_ring_size % sizeof(struct efasim_io_rx_desc) ||
        cmd.rq_ring_size / sizeof(struct efasim_io_rx_desc) > cfg->max_rq_wr ||
        (cmd.rq_ring_size &&
         cmd.rq_ring_size / sizeof(struct efasim_io_rx_desc) < init->cap.max_recv_wr))
        return -EINVAL;
    qp = calloc(1, sizeof(*qp));
    if (!qp)
        return -ENOMEM;
    qp->obj = obj;
    qp->pd = init->pd;
    qp->send_cq = init->send_cq;
    qp->recv_cq = init->recv_cq;
    qp->qp_type = init->qp_type;
    qp->sq_depth = cmd.sq_ring_size / (uint32_t)sizeof(struct efasim_io_tx_wqe);
    qp->rq_descs = cmd.rq_ring_size / (uint32_t)sizeof(struct efasim_io_rx_desc);
    err = kqp_map(obj->file, &qp->sq_db, page, EFASIM_MMIO_DOORBELL, &g_sq_db_ops, qp,
                  &resp.sq_db_mmap_key);
    if (!err)
        err = kqp_map(obj->file, &qp->llq, (cmd.sq_ring_size + page - 1) & ~(page - 1),
                      EFASIM_MMIO_MEMORY, &g_llq_ops, qp, &resp.llq_desc_mmap_key);
    if (!err && cmd.rq_ring_size) {
        err = kqp_map(obj->file, &qp->rq_db, page, EFASIM_MMIO_DOORBELL, &g_rq_db_ops, qp,
                      &resp.rq_db_mmap_key);
        if (!err)
            err = kqp_map(obj->file, &qp->rq, (cmd.rq_ring_size + page - 1) & ~(page - 1),
                          EFASIM_MMIO_MEMORY, &g_llq_ops, qp, &resp.rq_mmap_key);
        resp.rq_mmap_size = efasim_mmio_length(qp->rq);
    }
    if (err)
        goto err_free;
    mi.pd = pd_model(init->pd);
    mi.send_cq = &((struct efa_kcq *)init->send_cq->impl)->m;
    mi.recv_cq = &((struct efa_kcq *)init->recv_cq->impl)->m;
    mi.want = (struct ibv_qp_cap){.max_send_wr = init->cap.max_send_wr,
                                  .max_recv_wr = init->cap.max_recv_wr,
                                  .max_send_sge = init->cap.max_send_sge,
                                  .max_recv_sge = init->cap.max_recv_sge,
                                  .max_inline_data = init->cap.max_inline_data};
    /* The device's queues: the send queue the LLQ holds, a receive WR per descriptor at most. */
    mi.cap = mi.want;
    mi.cap.max_send_wr = qp->sq_depth;
    mi.cap.max_recv_wr = qp->rq_descs;
    mi.sq_sig_all = init->sq_sig_all;
    mi.type = init->qp_type == IBV_QPT_UD ? EFASIM_QPT_UD : EFASIM_QPT_SRD;
    mi.unsolicited_write_recv = flags & EFA_CREATE_QP_WITH_UNSOLICITED_WRITE_RECV;
    mi.fe = qp;
    err = efasim_qp_create(&mi, &qp->m);
    if (err)
        goto err_free;
    resp.sq_db_offset = EFA_SQ_DB_OFFSET;
    resp.rq_db_offset = EFA_RQ_DB_OFFSET;
    resp.llq_desc_offset = 0;
    resp.send_sub_cq_idx = 0;
    resp.recv_sub_cq_idx = 0;
    udata_out(u, &resp, sizeof(resp));
    *qpn_p = qp->m->qpn;
    obj->impl = qp;
    return 0;

err_free:
    kqp_remove_maps(obj->file, qp);
    kqp_free(qp);
    return err;
}

void efasim_efa_qp_objects(struct efasim_kobj *obj, struct efasim_kobj **pd_p,
                           struct efasim_kobj **scq_p, struct efasim_kobj **rcq_p)
{
    struct efa_kqp *qp = obj->impl;

    *pd_p = qp->pd;
    *scq_p = qp->send_cq;
    *rcq_p = qp->recv_cq;
}

int efasim_efa_destroy_qp(struct efasim_kobj *obj)
{
    struct efa_kqp *qp = obj->impl;

    efasim_qp_destroy(qp->m);
    kqp_remove_maps(obj->file, qp);
    kqp_free(qp);
    return 0;
}

int efasim_efa_modify_qp(struct efasim_kobj *obj, const struct ib_uverbs_qp_attr *a, uint32_t mask,
                         struct efasim_udata *u)
{
    struct efa_kqp *qp = obj->impl;
    struct ibv_qp_attr attr = {0};
    int err;

    if (u->inlen && !udata_cleared(u, 0))
        return -EINVAL;
    attr.qp_state = (enum ibv_qp_state)a->qp_state;
    attr.cur_qp_state = (enum ibv_qp_state)a->cur_qp_state;
    attr.qkey = a->qkey;
    attr.sq_psn = a->sq_psn;
    attr.pkey_index = a->pkey_index;
    attr.port_num = a->port_num;
    attr.rnr_retry = a->rnr_retry;
    attr.en_sqd_async_notify = a->en_sqd_async_notify;
    if ((mask & IBV_QP_PORT) && a->port_num != 1)
        return -EINVAL; /* the core's port check comes first */
    if (((mask & IBV_QP_STATE) && a->qp_state > IBV_QPS_ERR) ||
        ((mask & IBV_QP_CUR_STATE) && a->cur_qp_state > IBV_QPS_ERR))
        return -EINVAL;
    if ((mask & IBV_QP_QKEY) && (a->qkey & 0x80000000u) && !net_raw_capable())
        return -EPERM; /* a privileged Q-Key needs CAP_NET_RAW */
    err = efasim_qp_modify(qp->m, &attr, (int)mask);
    if (!err && (mask & IBV_QP_STATE) && a->qp_state == IBV_QPS_RESET)
        qp->sq_ci = qp->rq_ci = 0; /* the device's queue indices start over with the QP */
    return err;
}

int efasim_efa_query_qp(struct efasim_kobj *obj, uint32_t mask, struct ib_uverbs_qp_attr *a,
                        bool *sq_sig_all_p)
{
    const uint32_t supported = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY |
                               IBV_QP_SQ_PSN | IBV_QP_CAP | IBV_QP_RNR_RETRY;
    struct efa_kqp *qp = obj->impl;
    struct ibv_qp_attr attr;

    if (mask & ~supported)
        return -EOPNOTSUPP;
    efasim_qp_query(qp->m, &attr);
    memset(a, 0, sizeof(*a));
    a->qp_state = attr.qp_state;
    a->qkey = attr.qkey;
    a->sq_psn = attr.sq_psn;
    a->sq_draining = attr.sq_draining;
    a->rnr_retry = attr.rnr_retry;
    a->port_num = 1;
    a->max_send_wr = attr.cap.max_send_wr;
    a->max_recv_wr = attr.cap.max_recv_wr;
    a->max_send_sge = attr.cap.max_send_sge;
    a->max_recv_sge = attr.cap.max_recv_sge;
    a->max_inline_data = attr.cap.max_inline_data;
    /* EFA leaves sq_sig_type 0, IB_SIGNAL_ALL_WR: the core reports 1 whatever was asked. */
    *sq_sig_all_p = true;
    return 0;
}

/* The service thread's pass or a watch's: arm the context's rings again ("Completion rings"). */
static void service_tick(void *fe)
{
    struct efa_ucontext *uc = fe;

    if (pthread_mutex_trylock(&uc->cqs_lock))
        return;
    for (struct efa_kcq *cq = uc->cqs; cq; cq = cq->next)
        kcq_rearm(cq);
    pthread_mutex_unlock(&uc->cqs_lock);
}
