/*
 * efasim SRD QPs: creation (a UDP socket whose port is the QP number), state
 * changes, the ibv_qp_ex work-request builder (wr_start ... wr_complete, all
 * or nothing like the EFA provider), and the legacy post_send/post_recv.
 * Posting validates each WR the way the device would, then hands it to the
 * wire (wire.c), which sends the first datagram from the posting thread.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../model/efasim_model.h"

/* ---- Creation and state ----------------------------------------------------- */

/* With EFASIM_QPN set, the process's QPs take consecutive ports; this counts them. */
static pthread_mutex_t g_qpn_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t g_qpn_taken;

/*
 * Bind the QP's socket. Its port is the QP number: the kernel's choice, or with
 * EFASIM_QPN the next of the process's consecutive numbers. A number some other
 * socket holds fails with EADDRINUSE and is not consumed, so a retry (after the
 * old holder exited) asks for it again.
 */
static int qp_bind(int fd, struct sockaddr_in *sin)
{
    const struct efasim_config *cfg = efasim_config();
    socklen_t len = sizeof(*sin);
    int err = 0;

    if (!cfg->qpn) {
        if (bind(fd, (struct sockaddr *)sin, sizeof(*sin)))
            return -errno;
        return getsockname(fd, (struct sockaddr *)sin, &len) ? -errno : 0;
    }
    pthread_mutex_lock(&g_qpn_lock);
    if (cfg->qpn + g_qpn_taken > 0xffff) {
        err = -EADDRINUSE; /* the numbers above EFASIM_QPN are used up */
    } else {
        sin->sin_port = htons((uint16_t)(cfg->qpn + g_qpn_taken));
        if (bind(fd, (struct sockaddr *)sin, sizeof(*sin)))
            err = -errno;
        else
            g_qpn_taken++;
    }
    pthread_mutex_unlock(&g_qpn_lock);
    return err;
}

static int qp_open_socket(struct efasim_qp *qp)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr = qp->ctx->dev->addr};
    int buf = 4 << 20;
    int err;

    qp->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (qp->fd < 0)
        return -errno;
    /* Big kernel buffers make drops rare; the reliability layer covers the rest. */
    setsockopt(qp->fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
    setsockopt(qp->fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
    err = qp_bind(qp->fd, &sin);
    if (err) {
        close(qp->fd);
        qp->fd = -1;
        return err;
    }
    qp->qpn = ntohs(sin.sin_port);
    return 0;
}

/*
 * A fresh incarnation id: peers tell this QP from an earlier holder of its
 * number by it, so it must differ between processes (unlike EFASIM_SEED's
 * stream, which repeats by design). Never 0, which means "none".
 */
static uint32_t qp_incarnation(const struct efasim_qp *qp)
{
    static uint32_t fallback;
    uint32_t inc = 0;

    if (getrandom(&inc, sizeof(inc), GRND_NONBLOCK) != (ssize_t)sizeof(inc)) {
        uint64_t x = efasim_now_ns() ^ ((uint64_t)getpid() << 32) ^ (uintptr_t)qp ^
                     __atomic_add_fetch(&fallback, 1, __ATOMIC_RELAXED);

        x = (x ^ (x >> 31)) * 0x9e3779b97f4a7c15ull;
        inc = (uint32_t)(x >> 32);
    }
    return inc ? inc : 1;
}

static void qp_free(struct efasim_qp *qp)
{
    if (qp->fd >= 0)
        close(qp->fd);
    /* Nonces of WRs still in flight: a target must not find one in freed memory. */
    for (uint32_t i = 0; qp->sq && i < qp->cap.max_send_wr; i++)
        __atomic_store_n(&qp->sq[i].fast_nonce, 0, __ATOMIC_RELEASE);
    free(qp->sq);
    free(qp->inline_pool);
    free(qp->issue_fifo);
    free(qp->rq);
    free(qp->peers);
    free(qp->rxbuf);
    free(qp->txb);
    pthread_mutex_destroy(&qp->lock);
    free(qp);
}

static void qp_install_wr_ops(struct efasim_qp *qp, uint64_t send_ops_flags);

static uint32_t roundup_pow2(uint32_t v)
{
    uint32_t p = 1;

    while (p < v && p < (1u << 31))
        p <<= 1;
    return p;
}

/* The send operations an SRD QP may ask for: rdma-core 44's, plus RDMA write where offered. */
static uint64_t qp_supported_send_ops(void)
{
    const struct efasim_config *cfg = efasim_config();

    return IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
           (cfg->rdma_read ? IBV_QP_EX_WITH_RDMA_READ : 0) |
           (cfg->rdma_write ? IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM : 0);
}

/*
 * The checks of rdma-core 44's efa_check_qp_attr/efa_check_qp_limits and of
 * EFA's kernel driver, with their errno values: unknown comp_mask bits or send
 * operations EOPNOTSUPP; no PD, no CQs, an SRQ, or a capability beyond the
 * device EINVAL.
 */
static int qp_check_attr(const struct ibv_qp_init_attr_ex *attr)
{
    const struct efasim_config *cfg = efasim_config();

    if (attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
        return EOPNOTSUPP;
    if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd)
        return EINVAL;
    if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
        (attr->send_ops_flags & ~qp_supported_send_ops()))
        return EOPNOTSUPP;
    if (!attr->send_cq || !attr->recv_cq || attr->srq)
        return EINVAL;
    if (attr->cap.max_send_sge > cfg->max_sq_sge || attr->cap.max_recv_sge > cfg->max_rq_sge ||
        attr->cap.max_send_wr > cfg->max_sq_wr || attr->cap.max_recv_wr > cfg->max_rq_wr ||
        attr->cap.max_inline_data > cfg->inline_size)
        return EINVAL;
    /*
     * The receive ring holds max_recv_sge * max_recv_wr descriptors, rounded up to
     * 2^n, counted in 16 bits by rdma-core 44 (efa_setup_qp): beyond 32768 the
     * count wraps to 0 and the QP is left without a receive queue. Refused here.
     */
    if (roundup_pow2((attr->cap.max_recv_sge ? attr->cap.max_recv_sge : 1) *
                     (attr->cap.max_recv_wr ? attr->cap.max_recv_wr : 1)) > cfg->max_rq_wr)
        return EINVAL;
    return 0;
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

    cap.max_send_wr = roundup_pow2(want->max_send_wr ? want->max_send_wr : 1);
    cap.max_recv_wr = roundup_pow2(rsge * (want->max_recv_wr ? want->max_recv_wr : 1)) / rsge;
    return cap;
}

/*
 * The QPs open on the device across the host, whichever process holds them, as
 * EFA counts a device's: every efasim QP is a UDP socket bound to its device's
 * address, so the kernel's table of this network namespace's UDP sockets (one
 * emulated host) counts them. Read once per QP creation, never on the data
 * path. -1 when the table cannot be read.
 */
static long device_host_qps(struct in_addr addr)
{
    FILE *f = fopen("/proc/net/udp", "re");
    char line[512];
    long n = 0;

    if (!f)
        return -1;
    if (!fgets(line, sizeof(line), f)) { /* the header */
        fclose(f);
        return -1;
    }
    while (fgets(line, sizeof(line), f)) {
        unsigned int local, port;

        /* "  12: 0100007F:A1B2 ...": the address as the kernel holds it, in hex. */
        if (sscanf(line, " %*u: %8X:%4X", &local, &port) == 2 && local == addr.s_addr)
            n++;
    }
    fclose(f);
    return n;
}

struct ibv_qp *efasim_qp_create(struct efasim_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
    const struct efasim_config *cfg = efasim_config();
    struct efasim_qp *qp;
    uint32_t slot;
    int err;

    err = qp_check_attr(attr);
    if (err)
        goto err;
    err = ENOMEM;
    qp = calloc(1, sizeof(*qp));
    if (!qp)
        goto err;
    qp->fd = -1;
    qp->ctx = ctx;
    pthread_mutex_init(&qp->lock, NULL);
    qp->cap = qp_sizes(&attr->cap);
    qp->sq_sig_all = attr->sq_sig_all != 0;
    qp->send_cq = (struct efasim_cq *)attr->send_cq;
    qp->recv_cq = (struct efasim_cq *)attr->recv_cq;
    /* As on EFA, the ibv_wr_* API exists only on a QP created with send_ops_flags. */
    qp->has_qp_ex = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    qp->sq = calloc(qp->cap.max_send_wr, sizeof(*qp->sq));
    qp->inline_pool = calloc(qp->cap.max_send_wr, cfg->inline_size ? cfg->inline_size : 1);
    qp->issue_fifo = calloc(qp->cap.max_send_wr, sizeof(*qp->issue_fifo));
    qp->rq = calloc(qp->cap.max_recv_wr, sizeof(*qp->rq));
    qp->peers = calloc(cfg->max_peers, sizeof(*qp->peers));
    qp->rxbuf_size = efasim_datagram_max(cfg) + 64;
    qp->rxbuf = malloc(EFASIM_RX_BATCH * qp->rxbuf_size);
    qp->txb = efasim_txb_alloc();
    if (!qp->sq || !qp->inline_pool || !qp->issue_fifo || !qp->rq || !qp->peers || !qp->rxbuf ||
        !qp->txb)
        goto err_free;
    for (uint32_t i = 0; i < qp->cap.max_send_wr; i++)
        qp->sq[i].inline_data = qp->inline_pool + (size_t)i * cfg->inline_size;
    err = -qp_open_socket(qp);
    if (err)
        goto err_free;
    qp->inc = qp_incarnation(qp);

    qp->state = IBV_QPS_RESET;
    qp->ibv.qp_base.context = &ctx->vctx.context;
    qp->ibv.qp_base.qp_context = attr->qp_context;
    qp->ibv.qp_base.pd = attr->pd;
    qp->ibv.qp_base.send_cq = attr->send_cq;
    qp->ibv.qp_base.recv_cq = attr->recv_cq;
    qp->ibv.qp_base.qp_num = qp->qpn;
    qp->ibv.qp_base.qp_type = attr->qp_type;
    qp->ibv.qp_base.state = IBV_QPS_RESET;
    pthread_mutex_init(&qp->ibv.qp_base.mutex, NULL);
    pthread_cond_init(&qp->ibv.qp_base.cond, NULL);
    if (qp->has_qp_ex)
        qp_install_wr_ops(qp, attr->send_ops_flags);

    /*
     * The device's QPs, as EFA counts them: this process's over all its
     * contexts (exact under concurrent creations), then the host's, this one's
     * socket included. Two processes creating the last QP at once may both be
     * refused; the device never holds more than max_qp.
     */
    if (__atomic_fetch_add(&ctx->dev->live_qps, 1, __ATOMIC_RELAXED) >= cfg->max_qp) {
        __atomic_fetch_sub(&ctx->dev->live_qps, 1, __ATOMIC_RELAXED);
        err = ENOMEM;
        goto err_free;
    }
    if (device_host_qps(ctx->dev->addr) > (long)cfg->max_qp) {
        __atomic_fetch_sub(&ctx->dev->live_qps, 1, __ATOMIC_RELAXED);
        err = ENOMEM;
        goto err_free;
    }
    pthread_rwlock_wrlock(&ctx->objs);
    for (slot = 0; slot < cfg->max_qp; slot++)
        if (!ctx->qps[slot])
            break;
    if (slot == cfg->max_qp) {
        pthread_rwlock_unlock(&ctx->objs);
        __atomic_fetch_sub(&ctx->dev->live_qps, 1, __ATOMIC_RELAXED);
        err = ENOMEM;
        goto err_free;
    }
    ctx->qps[slot] = qp;
    ctx->nqp++;
    if (slot >= ctx->qp_slots_used)
        ctx->qp_slots_used = slot + 1;
    pthread_rwlock_unlock(&ctx->objs);
    attr->cap = qp->cap;
    return &qp->ibv.qp_base;

err_free:
    qp_free(qp);
err:
    errno = err;
    return NULL;
}

int efasim_qp_destroy(struct ibv_qp *ibv)
{
    struct efasim_qp *qp = efasim_qp(ibv);
    struct efasim_context *ctx = qp->ctx;

    /*
     * Quiesce under the QP's own lock, then take it out of the table: once the
     * table's write lock is had, no progress pass holds the QP any more.
     */
    pthread_rwlock_rdlock(&ctx->objs);
    pthread_mutex_lock(&qp->lock);
    if (qp->fd >= 0)
        efasim_qp_quiesce(qp);
    pthread_mutex_unlock(&qp->lock);
    pthread_rwlock_unlock(&ctx->objs);
    pthread_rwlock_wrlock(&ctx->objs);
    for (uint32_t i = 0; i < efasim_config()->max_qp; i++)
        if (ctx->qps[i] == qp)
            ctx->qps[i] = NULL;
    ctx->nqp--;
    pthread_rwlock_unlock(&ctx->objs);
    __atomic_fetch_sub(&ctx->dev->live_qps, 1, __ATOMIC_RELAXED);
    efasim_cq_forget_qp(qp->send_cq, qp);
    if (qp->recv_cq != qp->send_cq)
        efasim_cq_forget_qp(qp->recv_cq, qp);
    efasim_delayq_flush(ctx, true); /* nothing held back may outlive its socket */
    qp_free(qp);
    return 0;
}

/* Complete every queued WR with a flush error, as a QP moving to ERR does. */
static void qp_flush(struct efasim_qp *qp)
{
    for (uint32_t i = 0; i < EFASIM_INFLIGHT_MAX; i++)
        qp->inflight[i].used = false;
    qp->ninflight = 0;
    efasim_peers_settle_all(qp);
    qp->fifo_count = 0;
    for (uint32_t i = 0; i < qp->cap.max_send_wr; i++) {
        struct efasim_swqe *w = &qp->sq[i];

        if (!w->used)
            continue;
        w->status = IBV_WC_WR_FLUSH_ERR;
        w->vendor_err = EFASIM_ST_FLUSHED;
        w->chunks_inflight = 0;
        efasim_swqe_finish(qp, i);
    }
    while (qp->rq_count) {
        struct efasim_cqe cqe = {.wr_id = qp->rq[qp->rq_head].wr_id,
                                 .status = IBV_WC_WR_FLUSH_ERR,
                                 .opcode = IBV_WC_RECV,
                                 .vendor_err = EFASIM_ST_FLUSHED,
                                 .qp_num = qp->qpn,
                                 .qp = qp};

        __atomic_add_fetch(&qp->rq_in_cq, 1, __ATOMIC_RELAXED); /* before a poll can uncount it */
        if (efasim_cq_push(qp->recv_cq, &cqe)) {
            __atomic_sub_fetch(&qp->rq_in_cq, 1, __ATOMIC_RELAXED);
            break; /* the CQ is full */
        }
        qp->rq_head = (qp->rq_head + 1) % qp->cap.max_recv_wr;
        qp->rq_count--;
    }
}

/*
 * The state transitions an EFA QP takes and the attributes each requires and
 * allows: the kernel's table for UD QPs (ib_modify_qp_is_ok), which EFA's driver
 * applies to SRD QPs too, plus IBV_QP_RNR_RETRY where EFA adds it (towards RTS).
 * Transitions to RESET and ERR are valid from every state and take nothing.
 */
struct qp_transition {
    enum ibv_qp_state from, to;
    int required, optional;
};

static const struct qp_transition g_qp_transitions[] = {
    {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, 0},
    {IBV_QPS_INIT, IBV_QPS_INIT, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY},
    {IBV_QPS_INIT, IBV_QPS_RTR, 0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY},
    {IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_SQ_PSN, IBV_QP_CUR_STATE | IBV_QP_QKEY | IBV_QP_RNR_RETRY},
    {IBV_QPS_RTS, IBV_QPS_RTS, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY | IBV_QP_RNR_RETRY},
};

/* 0, or the errno EFA's driver returns for this modify (EINVAL, EOPNOTSUPP). */
static int qp_modify_check(const struct efasim_qp *qp, const struct ibv_qp_attr *attr, int mask)
{
    const int supported = IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY |
                          IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY | IBV_QP_SQ_PSN |
                          IBV_QP_RNR_RETRY;
    enum ibv_qp_state cur = mask & IBV_QP_CUR_STATE ? attr->cur_qp_state : qp->state;
    enum ibv_qp_state to = mask & IBV_QP_STATE ? attr->qp_state : cur;
    int rest = mask & ~(IBV_QP_STATE | IBV_QP_CUR_STATE);

    if (mask & ~supported)
        return EOPNOTSUPP;
    if (cur != qp->state)
        return EINVAL; /* a stale cur_qp_state */
    if ((mask & IBV_QP_PORT) && attr->port_num != EFASIM_PORT)
        return EINVAL;
    if ((mask & IBV_QP_PKEY_INDEX) && attr->pkey_index)
        return EINVAL;
    if (to == IBV_QPS_RESET || to == IBV_QPS_ERR)
        return rest ? EINVAL : 0;
    for (size_t i = 0; i < sizeof(g_qp_transitions) / sizeof(g_qp_transitions[0]); i++) {
        const struct qp_transition *t = &g_qp_transitions[i];

        if (t->from != cur || t->to != to)
            continue;
        if ((mask & t->required) != t->required ||
            (mask & ~(IBV_QP_STATE | t->required | t->optional)))
            return EINVAL;
        return 0;
    }
    return EINVAL;
}

int efasim_qp_modify(struct ibv_qp *ibv, struct ibv_qp_attr *attr, int mask)
{
    struct efasim_qp *qp = efasim_qp(ibv);
    int ret;

    pthread_mutex_lock(&qp->lock);
    ret = qp_modify_check(qp, attr, mask);
    if (!ret) {
        if (mask & IBV_QP_QKEY)
            qp->qkey = attr->qkey;
        if (mask & IBV_QP_RNR_RETRY)
            qp->rnr_retry = attr->rnr_retry;
        if (mask & IBV_QP_STATE) {
            if (attr->qp_state == IBV_QPS_ERR || attr->qp_state == IBV_QPS_RESET)
                qp_flush(qp);
            if (attr->qp_state == IBV_QPS_RESET) { /* rdma-core's efa_qp_init_indices */
                __atomic_store_n(&qp->sq_in_cq, 0, __ATOMIC_RELAXED);
                __atomic_store_n(&qp->rq_in_cq, 0, __ATOMIC_RELAXED);
            }
            qp->state = attr->qp_state;
            qp->ibv.qp_base.state = attr->qp_state;
        }
    }
    pthread_mutex_unlock(&qp->lock);
    return ret;
}

int efasim_qp_query(struct ibv_qp *ibv, struct ibv_qp_attr *attr, int mask,
                    struct ibv_qp_init_attr *init)
{
    struct efasim_qp *qp = efasim_qp(ibv);

    (void)mask;
    memset(attr, 0, sizeof(*attr));
    attr->qp_state = qp->state;
    attr->cur_qp_state = qp->state;
    attr->qkey = qp->qkey;
    attr->rnr_retry = qp->rnr_retry;
    attr->port_num = EFASIM_PORT;
    attr->cap = qp->cap;
    if (init) {
        memset(init, 0, sizeof(*init));
        init->send_cq = ibv->send_cq;
        init->recv_cq = ibv->recv_cq;
        init->cap = qp->cap;
        init->qp_type = ibv->qp_type;
        init->qp_context = ibv->qp_context;
    }
    return 0;
}

/* ---- Building send WRs ------------------------------------------------------- */

static int swqe_alloc(struct efasim_qp *qp, uint32_t *idx_p)
{
    if (qp->sq_used == qp->cap.max_send_wr)
        return ENOMEM; /* send queue full, as ibv_post_send reports it */
    for (uint32_t i = 0; i < qp->cap.max_send_wr; i++) {
        struct efasim_swqe *w = &qp->sq[i];

        if (w->used)
            continue;
        uint8_t *inline_data = w->inline_data;

        memset(w, 0, sizeof(*w));
        w->inline_data = inline_data;
        w->used = true;
        qp->sq_used++;
        *idx_p = i;
        return 0;
    }
    return ENOMEM;
}

static void swqe_release(struct efasim_qp *qp, uint32_t idx)
{
    qp->sq[idx].used = false;
    qp->sq_used--;
}

/*
 * What rdma-core 44's efa_post_send_validate checks for every WR, on both
 * posting paths: the QP is in RTS, the WR is signaled (EFA cannot leave a WR
 * without a completion; only sq_sig_all excuses the flag), no flag other than
 * SIGNALED and INLINE, and the send queue has room.
 */
static int wr_validate(const struct efasim_qp *qp, unsigned int wr_flags)
{
    if (qp->state != IBV_QPS_RTS)
        return EINVAL;
    if (!(wr_flags & IBV_SEND_SIGNALED) && !qp->sq_sig_all)
        return EINVAL;
    if (wr_flags & ~(unsigned)(IBV_SEND_SIGNALED | IBV_SEND_INLINE))
        return EINVAL;
    if (qp->sq_used + __atomic_load_n(&qp->sq_in_cq, __ATOMIC_RELAXED) >= qp->cap.max_send_wr)
        return ENOMEM; /* full, counting completions not yet polled, as on EFA */
    return 0;
}

/* Start a new WR in the current session with the QP's wr_id and wr_flags. */
static struct efasim_swqe *wr_begin(struct ibv_qp_ex *qpx, enum efasim_op op)
{
    struct efasim_qp *qp = (struct efasim_qp *)qpx;
    struct efasim_swqe *w;
    uint32_t idx;
    int err;

    qp->building = NULL;
    if (qp->session_err)
        return NULL;
    err = wr_validate(qp, qpx->wr_flags);
    if (!err)
        err = swqe_alloc(qp, &idx);
    if (err) {
        qp->session_err = err;
        return NULL;
    }
    w = &qp->sq[idx];
    w->op = op;
    w->wr_id = qpx->wr_id;
    w->signaled = true; /* unsignaled WRs were refused above */
    w->staged_next = UINT32_MAX;
    if (qp->nstaged)
        qp->sq[qp->staged_last].staged_next = idx;
    else
        qp->staged_first = idx;
    qp->staged_last = idx;
    qp->nstaged++;
    qp->building = w;
    return w;
}

static void wr_send(struct ibv_qp_ex *qpx)
{
    wr_begin(qpx, EFASIM_OP_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
    struct efasim_swqe *w = wr_begin(qpx, EFASIM_OP_SEND);

    if (w) {
        w->has_imm = true;
        w->imm = be32toh(imm);
    }
}

static void wr_rdma(struct ibv_qp_ex *qpx, enum efasim_op op, uint32_t rkey, uint64_t raddr)
{
    struct efasim_swqe *w = wr_begin(qpx, op);

    if (w) {
        w->rkey = rkey;
        w->raddr = raddr;
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
    struct efasim_qp *qp = (struct efasim_qp *)qpx;

    wr_rdma(qpx, EFASIM_OP_WRITE, rkey, raddr);
    if (qp->building) {
        qp->building->has_imm = true;
        qp->building->imm = be32toh(imm);
    }
}

static void wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah, uint32_t remote_qpn,
                           uint32_t remote_qkey)
{
    struct efasim_qp *qp = (struct efasim_qp *)qpx;
    struct efasim_swqe *w = qp->building;
    struct efasim_ah *a = (struct efasim_ah *)ah;

    if (!w)
        return;
    if (!a || !a->live || remote_qpn > 0xffff || !efasim_gid_to_addr(&a->gid, &w->dst.sin_addr)) {
        qp->session_err = EINVAL;
        return;
    }
    w->dst.sin_family = AF_INET;
    w->dst.sin_port = htons((uint16_t)remote_qpn);
    w->dst_qkey = remote_qkey;
}

static void wr_set_sge_list(struct ibv_qp_ex *qpx, size_t n, const struct ibv_sge *sge)
{
    struct efasim_qp *qp = (struct efasim_qp *)qpx;
    struct efasim_swqe *w = qp->building;

    if (!w)
        return;
    /* RDMA moves one local buffer (the device's max_sge_rd, 1); a send up to max_send_sge. */
    if ((w->op != EFASIM_OP_SEND && n > 1) || n > qp->cap.max_send_sge || n > EFASIM_MAX_SGE) {
        qp->session_err = EINVAL;
        return;
    }
    w->nsge = (uint32_t)n;
    w->length = 0;
    for (size_t i = 0; i < n; i++) {
        w->sge[i] = sge[i];
        w->length += sge[i].length;
    }
}

static void wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr, uint32_t length)
{
    struct ibv_sge sge = {.addr = addr, .length = length, .lkey = lkey};

    wr_set_sge_list(qpx, 1, &sge);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t n, const struct ibv_data_buf *b)
{
    struct efasim_qp *qp = (struct efasim_qp *)qpx;
    struct efasim_swqe *w = qp->building;
    size_t total = 0;

    if (!w)
        return;
    for (size_t i = 0; i < n; i++)
        total += b[i].length;
    if (total > qp->cap.max_inline_data || w->op != EFASIM_OP_SEND) {
        qp->session_err = EINVAL;
        return;
    }
    /* Inline data is copied now: the caller may reuse its buffer once this returns. */
    total = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(w->inline_data + total, b[i].addr, b[i].length);
        total += b[i].length;
    }
    w->is_inline = true;
    w->nsge = 0;
    w->length = total;
}

static void wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
    struct ibv_data_buf b = {.addr = addr, .length = length};

    wr_set_inline_data_list(qpx, 1, &b);
}

static void wr_start(struct ibv_qp_ex *qpx)
{
    struct efasim_qp *qp = (struct efasim_qp *)qpx;

    pthread_rwlock_rdlock(&qp->ctx->objs); /* MR checks at wr_complete read the table */
    pthread_mutex_lock(&qp->lock);         /* as EFA's wr_start takes the SQ's lock */
    qp->in_session = true;
    qp->session_err = 0;
    qp->nstaged = 0;
    qp->building = NULL;
}

/* Check a staged WR the way the device would; a failure becomes its completion. */
static void swqe_validate(struct efasim_qp *qp, struct efasim_swqe *w)
{
    const struct efasim_config *cfg = efasim_config();
    unsigned access = w->op == EFASIM_OP_READ ? IBV_ACCESS_LOCAL_WRITE : 0;

    if (!w->dst.sin_family) {
        w->status = IBV_WC_LOC_QP_OP_ERR;
        w->vendor_err = EFASIM_ST_LOCAL_INVALID_AH;
        return;
    }
    for (uint32_t i = 0; i < w->nsge; i++) {
        if (!efasim_mr_check(qp->ctx, w->sge[i].lkey, w->sge[i].addr, w->sge[i].length, access)) {
            w->status = IBV_WC_LOC_PROT_ERR;
            w->vendor_err = EFASIM_ST_LOCAL_INVALID_LKEY;
            return;
        }
    }
    if ((w->op == EFASIM_OP_SEND && w->length > cfg->mtu) ||
        (w->op != EFASIM_OP_SEND && w->length > cfg->max_rdma_size)) {
        w->status = IBV_WC_LOC_LEN_ERR;
        w->vendor_err = EFASIM_ST_LOCAL_BAD_LENGTH;
    }
}

/* Queue a validated WR for the wire, or complete it at once with its error. */
static void swqe_submit(struct efasim_qp *qp, uint32_t idx)
{
    struct efasim_swqe *w = &qp->sq[idx];

    swqe_validate(qp, w);
    if (w->status != IBV_WC_SUCCESS) {
        efasim_swqe_finish(qp, idx);
        return;
    }
    /* A send is one datagram; RDMA moves a chunk per datagram or direct-copy request. */
    efasim_swqe_plan(qp, w);
    w->rnr_left = qp->rnr_retry == 7 ? UINT32_MAX : qp->rnr_retry;
    qp->issue_fifo[(qp->fifo_head + qp->fifo_count) % qp->cap.max_send_wr] = idx;
    qp->fifo_count++;
}

static int wr_complete(struct ibv_qp_ex *qpx)
{
    struct efasim_qp *qp = (struct efasim_qp *)qpx;
    uint32_t idx = qp->staged_first;
    int err = qp->session_err;

    for (uint32_t n = 0; n < qp->nstaged; n++) {
        uint32_t next = qp->sq[idx].staged_next;

        if (err)
            swqe_release(qp, idx); /* all or nothing, like the EFA provider */
        else
            swqe_submit(qp, idx);
        idx = next;
    }
    if (!err) {
        efasim_tx_begin(qp); /* the session's datagrams in one sendmmsg */
        efasim_qp_issue(qp);
        efasim_tx_end(qp);
    }
    qp->in_session = false;
    qp->nstaged = 0;
    pthread_mutex_unlock(&qp->lock);
    pthread_rwlock_unlock(&qp->ctx->objs);
    return err;
}

static void wr_abort(struct ibv_qp_ex *qpx)
{
    struct efasim_qp *qp = (struct efasim_qp *)qpx;

    qp->session_err = EINVAL;
    wr_complete(qpx);
}

/* As rdma-core 44's efa_qp_fill_wr_pfns: the operations asked for, the rest stay NULL. */
static void qp_install_wr_ops(struct efasim_qp *qp, uint64_t send_ops_flags)
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
}

/* ---- Legacy posting ------------------------------------------------------------ */

/* rdma-core 44's efa_post_send_validate_wr: the common checks, then what the legacy path allows. */
static int post_send_validate(const struct efasim_qp *qp, const struct ibv_send_wr *wr)
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
        return inline_len > qp->cap.max_inline_data ? EINVAL : 0;
    }
    return (uint32_t)wr->num_sge > qp->cap.max_send_sge ? EINVAL : 0;
}

/*
 * Each WR is checked as EFA checks it; the first bad one stops the chain with
 * its errno and *bad pointing at it, and the WRs before it are posted.
 */
int efasim_post_send(struct ibv_qp *ibv, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    struct ibv_qp_ex *qpx = &efasim_qp(ibv)->ibv;
    struct efasim_qp *qp = efasim_qp(ibv);
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

int efasim_post_recv(struct ibv_qp *ibv, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    struct efasim_qp *qp = efasim_qp(ibv);
    int err = 0;

    pthread_mutex_lock(&qp->lock);
    for (; wr; wr = wr->next) {
        struct efasim_rwqe *r;

        if (qp->state == IBV_QPS_RESET || qp->state == IBV_QPS_ERR) {
            err = EINVAL;
        } else if (qp->rq_count + __atomic_load_n(&qp->rq_in_cq, __ATOMIC_RELAXED) >=
                   qp->cap.max_recv_wr) {
            err = ENOMEM;
        } else if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_recv_sge ||
                   wr->num_sge > EFASIM_MAX_SGE) {
            err = EINVAL;
        }
        if (err) {
            *bad = wr;
            break;
        }
        r = &qp->rq[(qp->rq_head + qp->rq_count) % qp->cap.max_recv_wr];
        r->wr_id = wr->wr_id;
        r->nsge = (uint32_t)wr->num_sge;
        r->length = 0;
        for (int i = 0; i < wr->num_sge; i++) {
            r->sge[i] = wr->sg_list[i];
            r->length += wr->sg_list[i].length;
        }
        qp->rq_count++;
    }
    pthread_mutex_unlock(&qp->lock);
    return err;
}

/* NULL for a QP created without send_ops_flags, as rdma-core returns it. */
EFASIM_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
    return efasim_qp(qp)->has_qp_ex ? &efasim_qp(qp)->ibv : NULL;
}
