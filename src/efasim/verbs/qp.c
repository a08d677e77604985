/*
 * efasim's drop-in SRD and UD QPs: what rdma-core's EFA provider does around
 * the device (model/qp.c), as in release 44, with 64's efadv additions.
 * Creation's attribute checks and queue sizing; the
 * ibv_qp_ex work-request builder (wr_start ... wr_complete, all or nothing
 * like the EFA provider), which stages WRs and hands them to the device at
 * wr_complete; the legacy post_send/post_recv; and the rule that a WR's queue
 * slot is free again only when its completion is polled.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "efasim_verbs.h"

/* ---- Creation and state ----------------------------------------------------- */

static struct efasim_vqp *to_vqp_ex(struct ibv_qp_ex *qpx)
{
    return (struct efasim_vqp *)qpx; /* ibv is the first member */
}

static void qp_install_wr_ops(struct efasim_vqp *qp, uint64_t send_ops_flags, uint64_t wr_flags);

/*
 * The send operations a QP may ask for, as rdma-core 44's efa_check_qp_attr
 * allows them: send and send with immediate on UD; on SRD (IBV_QPT_DRIVER)
 * those, RDMA read where offered, and RDMA write where offered (newer EFA).
 */
static uint64_t qp_supported_send_ops(enum ibv_qp_type type)
{
    const struct efasim_config *cfg = efasim_config();
    uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;

    if (type == IBV_QPT_UD)
        return ops;
    return ops | (cfg->rdma_read ? IBV_QP_EX_WITH_RDMA_READ : 0) |
           (cfg->rdma_write ? IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM : 0);
}

/*
 * The checks of rdma-core's efa_check_qp_attr, in its order, with their errno
 * values: efadv flags the device does not offer, unknown comp_mask bits or
 * send operations, wr_flags beyond the processing hints (rdma-core 64's)
 * EOPNOTSUPP; no PD, no CQs or an SRQ EINVAL. Then those of rdma-core 64's
 * efa_check_qp_limits, all EINVAL: SGEs beyond the device's, the send queue
 * deeper than 64 computes it, more receive WRs than max_rq_wr descriptors
 * hold at max_recv_sge each (44's bound, max_rq_wr, for 0 SGEs, where 64
 * divides by zero), inline data beyond the device's; the model checks the
 * caps again, as the kernel does. The QP type (UD, or SRD as IBV_QPT_DRIVER)
 * and the driver QP type were settled by the entry point.
 */
static int qp_check_attr(const struct ibv_qp_init_attr_ex *attr,
                         const struct efasim_efadv_qp_init_attr *efa)
{
    const struct efasim_config *cfg = efasim_config();

    /*
     * rdma-core offers UNSOLICITED_WRITE_RECV with that capability, which the
     * device has only with EFASIM_UNSOLICITED_WRITE_RECV, and INLINE_WRITE
     * with RDMA write, whose inline form the drop-in has not: refused, as
     * where the device lacks them.
     */
    if (efa->flags &
        ~(cfg->unsolicited_write_recv ? EFASIM_EFADV_QP_FLAGS_UNSOLICITED_WRITE_RECV : 0u))
        return EOPNOTSUPP;
    if (attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
        return EOPNOTSUPP;
    if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd)
        return EINVAL;
    if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
        (attr->send_ops_flags & ~qp_supported_send_ops(attr->qp_type)))
        return EOPNOTSUPP;
    if (efa->wr_flags & ~EFASIM_EFADV_WR_EX_WITH_PROCESSING_HINTS)
        return EOPNOTSUPP;
    if (!attr->send_cq || !attr->recv_cq || attr->srq)
        return EINVAL;
    if (attr->cap.max_send_sge > cfg->max_sq_sge || attr->cap.max_recv_sge > cfg->max_rq_sge ||
        attr->cap.max_send_wr > efasim_vqp_sq_max_depth(attr->cap.max_inline_data, false) ||
        attr->cap.max_recv_wr >
            cfg->max_rq_wr / (attr->cap.max_recv_sge ? attr->cap.max_recv_sge : 1) ||
        attr->cap.max_inline_data > cfg->inline_size)
        return EINVAL;
    /*
     * The receive ring holds max_recv_sge * max_recv_wr descriptors, rounded up to
     * 2^n, counted in 16 bits by rdma-core (efa_setup_qp): beyond 32768 the
     * count wraps to 0 and the QP is left without a receive queue. Refused here.
     */
    if (efasim_roundup_pow2((attr->cap.max_recv_sge ? attr->cap.max_recv_sge : 1) *
                            (attr->cap.max_recv_wr ? attr->cap.max_recv_wr : 1)) > cfg->max_rq_wr)
        return EINVAL;
    return 0;
}

/* The largest power of two at most v, 0 for 0 (rdma-core's rounddown_pow_of_two). */
static uint32_t rounddown_pow2(uint32_t v)
{
    uint32_t p = 1;

    if (!v)
        return 0;
    while (p <= v / 2)
        p <<= 1;
    return p;
}

uint32_t efasim_vqp_sq_max_depth(uint32_t max_inline_data, bool inline_write)
{
    /* The device's LLQ: max_sq_wr 64-byte descriptors (EFA's max_llq_size). */
    uint64_t llq_bytes = (uint64_t)efasim_config()->max_sq_wr * EFASIM_EFA_TX_WQE_SIZE;
    uint32_t wqe_size = max_inline_data > EFASIM_EFA_TX_INLINE_MAX || inline_write
                            ? EFASIM_EFA_TX_WQE_SIZE_EX
                            : EFASIM_EFA_TX_WQE_SIZE;

    return rounddown_pow2((uint32_t)(llq_bytes / wqe_size));
}

/*
 * Queue sizes as rdma-core 44's efa_setup_qp computes them and returns them in
 * the caller's cap: the send queue rounded up to a power of two; the receive
 * ring of max_recv_sge * max_recv_wr descriptors rounded up to a power of
 * two, which holds that many divided by max_recv_sge WRs. max_inline_data
 * stays what was asked for and is the QP's inline limit.
 */
static struct ibv_qp_cap qp_sizes(const struct ibv_qp_cap *want)
{
    struct ibv_qp_cap cap = *want;
    uint32_t rsge = want->max_recv_sge ? want->max_recv_sge : 1;

    cap.max_send_wr = efasim_roundup_pow2(want->max_send_wr ? want->max_send_wr : 1);
    cap.max_recv_wr =
        efasim_roundup_pow2(rsge * (want->max_recv_wr ? want->max_recv_wr : 1)) / rsge;
    return cap;
}

static void qp_free(struct efasim_vqp *qp)
{
    free(qp->staged);
    free(qp->staged_inline);
    free(qp);
}

struct ibv_qp *efasim_vqp_create(struct efasim_vctx *ctx, struct ibv_qp_init_attr_ex *attr,
                                 const struct efasim_efadv_qp_init_attr *efa)
{
    static const struct efasim_efadv_qp_init_attr no_efa;
    uint32_t inline_size = efasim_config()->inline_size;
    struct efasim_qp_init init;
    struct efasim_vqp *qp;
    int err;

    if (!efa)
        efa = &no_efa;
    err = qp_check_attr(attr, efa);
    if (err)
        goto err;
    /*
     * The kernel's part: a service level goes to the device with the QP, and
     * efasim's offers none but the default (EOPNOTSUPP, as the kernel front
     * end answers rdma-core 64's sl).
     */
    err = EOPNOTSUPP;
    if (efa->sl)
        goto err;
    err = ENOMEM;
    qp = calloc(1, sizeof(*qp));
    if (!qp)
        goto err;
    init = (struct efasim_qp_init){
        .type = attr->qp_type == IBV_QPT_UD ? EFASIM_QPT_UD : EFASIM_QPT_SRD,
        .pd = to_vpd(attr->pd)->m,
        .send_cq = &((struct efasim_vcq *)attr->send_cq)->m,
        .recv_cq = &((struct efasim_vcq *)attr->recv_cq)->m,
        .want = attr->cap,
        .cap = qp_sizes(&attr->cap),
        .sq_sig_all = attr->sq_sig_all != 0,
        .unsolicited_write_recv = efa->flags & EFASIM_EFADV_QP_FLAGS_UNSOLICITED_WRITE_RECV,
        .fe = qp};
    err = -efasim_qp_create(&init, &qp->m);
    if (err)
        goto err_free;
    err = ENOMEM;
    qp->staged = calloc(qp->m->cap.max_send_wr, sizeof(*qp->staged));
    qp->staged_inline = calloc(qp->m->cap.max_send_wr, inline_size ? inline_size : 1);
    if (!qp->staged || !qp->staged_inline)
        goto err_destroy;

    qp->ibv.qp_base.context = &ctx->vctx.context;
    qp->ibv.qp_base.qp_context = attr->qp_context;
    qp->ibv.qp_base.pd = attr->pd;
    qp->ibv.qp_base.send_cq = attr->send_cq;
    qp->ibv.qp_base.recv_cq = attr->recv_cq;
    qp->ibv.qp_base.qp_num = qp->m->qpn;
    qp->ibv.qp_base.qp_type = attr->qp_type;
    qp->ibv.qp_base.state = IBV_QPS_RESET;
    pthread_mutex_init(&qp->ibv.qp_base.mutex, NULL);
    pthread_cond_init(&qp->ibv.qp_base.cond, NULL);
    /* As on EFA, the ibv_wr_* API exists only on a QP created with send_ops_flags. */
    qp->has_qp_ex = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    if (qp->has_qp_ex)
        qp_install_wr_ops(qp, attr->send_ops_flags, efa->wr_flags);
    attr->cap = qp->m->cap;
    return &qp->ibv.qp_base;

err_destroy:
    efasim_qp_destroy(qp->m);
err_free:
    qp_free(qp);
err:
    errno = err;
    return NULL;
}

int efasim_vqp_destroy(struct ibv_qp *ibv)
{
    struct efasim_vqp *qp = to_vqp(ibv);

    efasim_qp_destroy(qp->m); /* its completions left in the CQs stop pointing at it */
    qp_free(qp);
    return 0;
}

int efasim_vqp_modify(struct ibv_qp *ibv, struct ibv_qp_attr *attr, int mask)
{
    struct efasim_vqp *qp = to_vqp(ibv);
    int err = -efasim_qp_modify(qp->m, attr, mask);

    if (!err && (mask & IBV_QP_STATE)) {
        if (attr->qp_state == IBV_QPS_RESET) { /* rdma-core's efa_qp_init_indices */
            __atomic_store_n(&qp->sq_in_cq, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&qp->rq_in_cq, 0, __ATOMIC_RELAXED);
        }
        qp->ibv.qp_base.state = attr->qp_state;
    }
    return err;
}

int efasim_vqp_query(struct ibv_qp *ibv, struct ibv_qp_attr *attr, int mask,
                     struct ibv_qp_init_attr *init)
{
    (void)mask;
    efasim_qp_query(to_vqp(ibv)->m, attr);
    if (init) {
        memset(init, 0, sizeof(*init));
        init->send_cq = ibv->send_cq;
        init->recv_cq = ibv->recv_cq;
        init->cap = attr->cap;
        init->qp_type = ibv->qp_type;
        init->qp_context = ibv->qp_context;
    }
    return 0;
}

/* ---- Building send WRs ------------------------------------------------------- */

/*
 * What rdma-core 44's efa_post_send_validate checks for every WR, on both
 * posting paths: the QP is in RTS, the WR is signaled (EFA cannot leave a WR
 * without a completion; only sq_sig_all excuses the flag), no flag other than
 * SIGNALED and INLINE, and the send queue has room, counting the WRs staged in
 * this session and the completions not yet polled. In a send section.
 */
static int wr_validate(const struct efasim_vqp *qp, unsigned int wr_flags)
{
    const struct efasim_qp *m = qp->m;

    if (m->state != IBV_QPS_RTS)
        return EINVAL;
    if (!(wr_flags & IBV_SEND_SIGNALED) && !m->sq_sig_all)
        return EINVAL;
    if (wr_flags & ~(unsigned)(IBV_SEND_SIGNALED | IBV_SEND_INLINE))
        return EINVAL;
    if (m->sq_used + qp->nstaged + __atomic_load_n(&qp->sq_in_cq, __ATOMIC_RELAXED) >=
        m->cap.max_send_wr)
        return ENOMEM; /* full, counting completions not yet polled, as on EFA */
    return 0;
}

/* Start a new WR in the current session with the QP's wr_id and wr_flags. */
static struct efasim_send_desc *wr_begin(struct ibv_qp_ex *qpx, enum efasim_op op)
{
    struct efasim_vqp *qp = to_vqp_ex(qpx);
    struct efasim_send_desc *d;
    int err;

    qp->building = NULL;
    if (qp->session_err)
        return NULL;
    err = wr_validate(qp, qpx->wr_flags);
    if (err) {
        qp->session_err = err;
        return NULL;
    }
    d = &qp->staged[qp->nstaged++];
    memset(d, 0, sizeof(*d));
    d->op = op;
    d->wr_id = qpx->wr_id;
    d->signaled = true; /* unsignaled WRs were refused above */
    qp->building = d;
    return d;
}

static void wr_send(struct ibv_qp_ex *qpx)
{
    wr_begin(qpx, EFASIM_OP_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
    struct efasim_send_desc *d = wr_begin(qpx, EFASIM_OP_SEND);

    if (d) {
        d->has_imm = true;
        d->imm = be32toh(imm);
    }
}

static void wr_rdma(struct ibv_qp_ex *qpx, enum efasim_op op, uint32_t rkey, uint64_t raddr)
{
    struct efasim_send_desc *d = wr_begin(qpx, op);

    if (d) {
        d->rkey = rkey;
        d->raddr = raddr;
    }
}

static void wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr)
{
    wr_rdma(qpx, EFASIM_OP_READ, rkey, raddr);
}

static void wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr)
{
    wr_rdma(qpx, EFASIM_OP_WRITE, rkey, raddr);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr, __be32 imm)
{
    struct efasim_vqp *qp = to_vqp_ex(qpx);

    wr_rdma(qpx, EFASIM_OP_WRITE, rkey, raddr);
    if (qp->building) {
        qp->building->has_imm = true;
        qp->building->imm = be32toh(imm);
    }
}

static void wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah, uint32_t remote_qpn,
                           uint32_t remote_qkey)
{
    struct efasim_vqp *qp = to_vqp_ex(qpx);
    struct efasim_send_desc *d = qp->building;
    struct in_addr unused;

    if (!d)
        return;
    if (!ah || remote_qpn > 0xffff || !efasim_gid_to_addr(&to_vah(ah)->m->gid, &unused)) {
        qp->session_err = EINVAL;
        return;
    }
    d->has_dest = true;
    d->dgid = to_vah(ah)->m->gid;
    d->dqpn = remote_qpn;
    d->dqkey = remote_qkey;
}

static void wr_set_sge_list(struct ibv_qp_ex *qpx, size_t n, const struct ibv_sge *sge)
{
    struct efasim_vqp *qp = to_vqp_ex(qpx);
    struct efasim_send_desc *d = qp->building;

    if (!d)
        return;
    /* RDMA moves one local buffer (the device's max_sge_rd, 1); a send up to max_send_sge. */
    if ((d->op != EFASIM_OP_SEND && n > 1) || n > qp->m->cap.max_send_sge || n > EFASIM_MAX_SGE) {
        qp->session_err = EINVAL;
        return;
    }
    d->is_inline = false;
    d->nsge = (uint32_t)n;
    for (size_t i = 0; i < n; i++)
        d->sge[i] = sge[i];
}

static void wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr, uint32_t length)
{
    struct ibv_sge sge = {.addr = addr, .length = length, .lkey = lkey};

    wr_set_sge_list(qpx, 1, &sge);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t n, const struct ibv_data_buf *b)
{
    struct efasim_vqp *qp = to_vqp_ex(qpx);
    struct efasim_send_desc *d = qp->building;
    uint8_t *data;
    size_t total = 0;

    if (!d)
        return;
    for (size_t i = 0; i < n; i++)
        total += b[i].length;
    if (total > qp->m->cap.max_inline_data || d->op != EFASIM_OP_SEND) {
        qp->session_err = EINVAL;
        return;
    }
    /* Inline data is copied now: the caller may reuse its buffer once this returns. */
    data = qp->staged_inline + (size_t)(d - qp->staged) * efasim_config()->inline_size;
    total = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(data + total, b[i].addr, b[i].length);
        total += b[i].length;
    }
    d->is_inline = true;
    d->nsge = 0;
    d->inline_data = data;
    d->inline_len = (uint32_t)total;
}

static void wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
    struct ibv_data_buf b = {.addr = addr, .length = length};

    wr_set_inline_data_list(qpx, 1, &b);
}

static void wr_start(struct ibv_qp_ex *qpx)
{
    struct efasim_vqp *qp = to_vqp_ex(qpx);

    efasim_qp_post_begin(qp->m); /* as EFA's wr_start takes the SQ's lock */
    qp->session_err = 0;
    qp->nstaged = 0;
    qp->building = NULL;
}

/* All or nothing, like the EFA provider: a session with an error posts none of its WRs. */
static int wr_complete(struct ibv_qp_ex *qpx)
{
    struct efasim_vqp *qp = to_vqp_ex(qpx);
    int err = qp->session_err;

    if (!err) {
        /* The device checks each WR; what it refuses becomes that WR's error completion. */
        for (uint32_t i = 0; i < qp->nstaged && !err; i++)
            err = -efasim_qp_post_send(qp->m, &qp->staged[i]);
        efasim_qp_kick(qp->m);
    }
    qp->nstaged = 0;
    efasim_qp_post_end(qp->m);
    return err;
}

static void wr_abort(struct ibv_qp_ex *qpx)
{
    to_vqp_ex(qpx)->session_err = EINVAL;
    wr_complete(qpx);
}

/*
 * efadv_wr_set_processing_hints (rdma-core 64): rdma-core writes the hints into
 * the WR being built, for the device to schedule it by. efasim's device
 * schedules every WR alike, so the hint changes nothing and none is kept: the
 * WR, and the session's outcome, are what they were.
 */
static void wr_set_processing_hints(struct efasim_efadv_qp *efadv, uint32_t hints)
{
    (void)efadv, (void)hints;
}

/*
 * As rdma-core's efa_qp_fill_wr_pfns: the operations asked for, the rest stay
 * NULL; efadv's processing hints with EFADV_WR_EX_WITH_PROCESSING_HINTS.
 */
static void qp_install_wr_ops(struct efasim_vqp *qp, uint64_t send_ops_flags, uint64_t wr_flags)
{
    struct ibv_qp_ex *x = &qp->ibv;

    x->wr_start = wr_start;
    x->wr_complete = wr_complete;
    x->wr_abort = wr_abort;
    if (send_ops_flags & IBV_QP_EX_WITH_SEND)
        x->wr_send = wr_send;
    if (send_ops_flags & IBV_QP_EX_WITH_SEND_WITH_IMM)
        x->wr_send_imm = wr_send_imm;
    if (send_ops_flags & IBV_QP_EX_WITH_RDMA_READ)
        x->wr_rdma_read = wr_rdma_read;
    if (send_ops_flags & IBV_QP_EX_WITH_RDMA_WRITE)
        x->wr_rdma_write = wr_rdma_write;
    if (send_ops_flags & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
        x->wr_rdma_write_imm = wr_rdma_write_imm;
    x->wr_set_ud_addr = wr_set_ud_addr;
    x->wr_set_sge = wr_set_sge;
    x->wr_set_sge_list = wr_set_sge_list;
    x->wr_set_inline_data = wr_set_inline_data;
    x->wr_set_inline_data_list = wr_set_inline_data_list;
    if (wr_flags & EFASIM_EFADV_WR_EX_WITH_PROCESSING_HINTS)
        qp->efadv.wr_set_processing_hints = wr_set_processing_hints;
}

/* ---- Legacy posting ------------------------------------------------------------ */

/* rdma-core 44's efa_post_send_validate_wr: the common checks, then what the legacy path allows. */
static int post_send_validate(const struct efasim_vqp *qp, const struct ibv_send_wr *wr)
{
    int err = wr_validate(qp, wr->send_flags);
    uint64_t inline_len = 0;

    if (err)
        return err;
    if (wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_IMM)
        return EINVAL; /* RDMA needs the ibv_wr_* API on EFA */
    if (wr->num_sge < 0)
        return EINVAL;
    if (wr->send_flags & IBV_SEND_INLINE) {
        for (int i = 0; i < wr->num_sge; i++)
            inline_len += wr->sg_list[i].length;
        return inline_len > qp->m->cap.max_inline_data ? EINVAL : 0;
    }
    return (uint32_t)wr->num_sge > qp->m->cap.max_send_sge ? EINVAL : 0;
}

/*
 * Each WR is checked as EFA checks it; the first bad one stops the chain with
 * its errno and *bad pointing at it, and the WRs before it are posted.
 */
int efasim_vqp_post_send(struct ibv_qp *ibv, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    struct efasim_vqp *qp = to_vqp(ibv);
    struct ibv_qp_ex *qpx = &qp->ibv;
    int err = 0;

    for (; wr; wr = wr->next) {
        wr_start(qpx);
        err = post_send_validate(qp, wr);
        if (err) {
            qp->session_err = err;
            wr_complete(qpx);
            *bad = wr;
            return err;
        }
        qpx->wr_id = wr->wr_id;
        qpx->wr_flags = wr->send_flags;
        if (wr->opcode == IBV_WR_SEND)
            wr_send(qpx);
        else
            wr_send_imm(qpx, wr->imm_data);
        wr_set_ud_addr(qpx, wr->wr.ud.ah, wr->wr.ud.remote_qpn, wr->wr.ud.remote_qkey);
        if (wr->send_flags & IBV_SEND_INLINE) {
            struct ibv_data_buf bufs[EFASIM_MAX_SGE];
            size_t n = (size_t)wr->num_sge < EFASIM_MAX_SGE ? (size_t)wr->num_sge : EFASIM_MAX_SGE;

            for (size_t i = 0; i < n; i++)
                bufs[i] = (struct ibv_data_buf){(void *)(uintptr_t)wr->sg_list[i].addr,
                                                wr->sg_list[i].length};
            wr_set_inline_data_list(qpx, n, bufs);
        } else {
            wr_set_sge_list(qpx, (size_t)wr->num_sge, wr->sg_list);
        }
        err = wr_complete(qpx);
        if (err) {
            *bad = wr;
            return err;
        }
    }
    return 0;
}

/*
 * As rdma-core 44's efa_post_recv_validate: EINVAL in RESET or ERR or beyond
 * max_recv_sge, ENOMEM when the receive queue is full, counting completions
 * not yet polled. The first bad WR stops the chain; the ones before are posted.
 */
int efasim_vqp_post_recv(struct ibv_qp *ibv, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    struct efasim_vqp *qp = to_vqp(ibv);
    struct efasim_qp *m = qp->m;
    int err = 0;

    efasim_qp_lock(m);
    for (; wr; wr = wr->next) {
        if (m->state == IBV_QPS_RESET || m->state == IBV_QPS_ERR)
            err = EINVAL;
        else if (m->rq_count + __atomic_load_n(&qp->rq_in_cq, __ATOMIC_RELAXED) >=
                 m->cap.max_recv_wr)
            err = ENOMEM;
        else if (wr->num_sge < 0 || (uint32_t)wr->num_sge > m->cap.max_recv_sge)
            err = EINVAL;
        else
            err = -efasim_qp_post_recv(m, wr->wr_id, (uint32_t)wr->num_sge, wr->sg_list);
        if (err) {
            *bad = wr;
            break;
        }
    }
    efasim_qp_unlock(m);
    return err;
}

/* NULL for a QP created without send_ops_flags, as rdma-core returns it. */
EFASIM_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
    return to_vqp(qp)->has_qp_ex ? &to_vqp(qp)->ibv : NULL;
}
