/*
 * efasim's SRD and UD QPs as EFA's kernel driver and device keep them:
 * creation (a UDP socket whose port is the QP number, within the device's
 * limits), the state machine, and the send and receive queues a front end
 * posts work requests into. A submitted send is checked the way the device
 * checks it, then handed to the wire (wire.c), which sends its first datagram
 * from the posting thread.
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

#include "efasim_model.h"

/* ---- Creation ------------------------------------------------------------------ */

/* With EFASIM_QPN set, the process's QPs take consecutive ports; this counts them. */
static pthread_mutex_t g_qpn_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t g_qpn_taken;

/*
 * Bind the QP's socket to its QP number's port (efasim_qpn_port). As EFA's
 * device does, the number is the lowest the device has free, over every
 * process on the host: the kernel's bind is the allocator, exact under
 * concurrent creations, and a destroyed QP's number is the next one given out.
 * With EFASIM_QPN, the process's consecutive numbers from it instead: a number
 * some other socket holds fails with EADDRINUSE and is not consumed, so a
 * retry (after the old holder exited) asks for it again. -ENOMEM when every
 * number is taken, as the device refuses a QP beyond max_qp.
 */
static int qp_bind(int fd, struct sockaddr_in *sin, uint32_t *qpn_p)
{
    const struct efasim_config *cfg = efasim_config();
    int err = 0;

    if (!cfg->qpn) {
        for (uint32_t q = 0; q < cfg->max_qp; q++) {
            sin->sin_port = htons(efasim_qpn_port(q));
            if (!bind(fd, (struct sockaddr *)sin, sizeof(*sin))) {
                *qpn_p = q;
                return 0;
            }
            if (errno != EADDRINUSE)
                return -errno;
        }
        return -ENOMEM;
    }
    pthread_mutex_lock(&g_qpn_lock);
    if (cfg->qpn + g_qpn_taken >= cfg->max_qp) {
        err = -EADDRINUSE; /* the numbers above EFASIM_QPN are used up */
    } else {
        sin->sin_port = htons(efasim_qpn_port(cfg->qpn + g_qpn_taken));
        if (bind(fd, (struct sockaddr *)sin, sizeof(*sin)))
            err = -errno;
        else
            *qpn_p = cfg->qpn + g_qpn_taken++;
    }
    pthread_mutex_unlock(&g_qpn_lock);
    return err;
}

static int qp_open_socket(struct efasim_qp *qp)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr = qp->ctx->dev->addr};
    int buf = 4 << 20;
    uint32_t qpn = 0;
    int err;

    qp->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (qp->fd < 0)
        return -errno;
    /* Big kernel buffers make drops rare; the reliability layer covers the rest. */
    setsockopt(qp->fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
    setsockopt(qp->fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
    err = qp_bind(qp->fd, &sin, &qpn);
    if (err == -EADDRNOTAVAIL) {
        /*
         * Not a device's refusal but the emulation's host: device i's QPs are
         * sockets on EFASIM_ADDR + i, and this host has no such address.
         */
        static int told;
        char a[INET_ADDRSTRLEN];

        if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
            fprintf(stderr,
                    "efasim: %s cannot open a QP: its address %s is not one of this host's "
                    "(device i uses EFASIM_ADDR + i; give the host EFASIM_NDEV consecutive "
                    "addresses or set EFASIM_NDEV=1)\n",
                    qp->ctx->dev->name, inet_ntop(AF_INET, &sin.sin_addr, a, sizeof(a)));
    }
    if (err) {
        close(qp->fd);
        qp->fd = -1;
        return err;
    }
    qp->qpn = (uint16_t)qpn;
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

/*
 * What EFA's kernel driver checks of a new QP: its type, PD and CQs, and the
 * caps asked for against the device's limits (EINVAL).
 */
static int qp_check_init(const struct efasim_qp_init *init)
{
    const struct efasim_config *cfg = efasim_config();
    const struct ibv_qp_cap *want = &init->want;

    if (init->type != EFASIM_QPT_SRD && init->type != EFASIM_QPT_UD)
        return -EINVAL;
    if (!init->pd || !init->send_cq || !init->recv_cq || !init->cap.max_send_wr ||
        !init->cap.max_recv_wr)
        return -EINVAL;
    if (want->max_send_sge > cfg->max_sq_sge || want->max_recv_sge > cfg->max_rq_sge ||
        want->max_send_wr > cfg->max_sq_wr || want->max_recv_wr > cfg->max_rq_wr ||
        want->max_inline_data > cfg->inline_size)
        return -EINVAL;
    if (init->unsolicited_write_recv &&
        (!cfg->unsolicited_write_recv || init->type != EFASIM_QPT_SRD))
        return -EOPNOTSUPP;
    return 0;
}

/*
 * The device's QPs, as EFA counts them: this process's over all its contexts
 * (exact under concurrent creations). The host's other processes' count
 * through the QP numbers they hold (qp_bind: no free number, no QP).
 * 0, or -ENOMEM with nothing counted.
 */
static int device_qp_count(struct efasim_device *dev)
{
    if (__atomic_fetch_add(&dev->live_qps, 1, __ATOMIC_RELAXED) >= efasim_config()->max_qp) {
        __atomic_fetch_sub(&dev->live_qps, 1, __ATOMIC_RELAXED);
        return -ENOMEM;
    }
    return 0;
}

int efasim_qp_create(const struct efasim_qp_init *init, struct efasim_qp **qp_p)
{
    const struct efasim_config *cfg = efasim_config();
    struct efasim_context *ctx;
    struct efasim_qp *qp;
    uint32_t slot;
    int err;

    err = qp_check_init(init);
    if (err)
        return err;
    ctx = init->pd->ctx;
    qp = calloc(1, sizeof(*qp));
    if (!qp)
        return -ENOMEM;
    qp->fd = -1;
    qp->ctx = ctx;
    qp->pd = init->pd;
    qp->fe = init->fe;
    qp->type = init->type;
    pthread_mutex_init(&qp->lock, NULL);
    qp->cap = init->cap;
    qp->sq_sig_all = init->sq_sig_all;
    qp->unsolicited_write_recv = init->unsolicited_write_recv;
    qp->send_cq = init->send_cq;
    qp->recv_cq = init->recv_cq;
    qp->sq = calloc(qp->cap.max_send_wr, sizeof(*qp->sq));
    qp->inline_pool = calloc(qp->cap.max_send_wr, cfg->inline_size ? cfg->inline_size : 1);
    qp->issue_fifo = calloc(qp->cap.max_send_wr, sizeof(*qp->issue_fifo));
    qp->rq = calloc(qp->cap.max_recv_wr, sizeof(*qp->rq));
    /* Reliability state per peer is SRD's; a UD QP keeps none. */
    if (qp->type == EFASIM_QPT_SRD)
        qp->peers = calloc(cfg->max_peers, sizeof(*qp->peers));
    qp->rxbuf_size = efasim_datagram_max(cfg) + 64;
    qp->rxbuf = malloc(EFASIM_RX_BATCH * qp->rxbuf_size);
    qp->txb = efasim_txb_alloc();
    err = -ENOMEM;
    if (!qp->sq || !qp->inline_pool || !qp->issue_fifo || !qp->rq ||
        (qp->type == EFASIM_QPT_SRD && !qp->peers) || !qp->rxbuf || !qp->txb)
        goto err_free;
    for (uint32_t i = 0; i < qp->cap.max_send_wr; i++)
        qp->sq[i].inline_data = qp->inline_pool + (size_t)i * cfg->inline_size;
    err = qp_open_socket(qp);
    if (err)
        goto err_free;
    qp->inc = qp_incarnation(qp);
    qp->state = IBV_QPS_RESET;

    err = device_qp_count(ctx->dev);
    if (err)
        goto err_free;
    pthread_rwlock_wrlock(&ctx->objs);
    for (slot = 0; slot < cfg->max_qp; slot++)
        if (!ctx->qps[slot])
            break;
    if (slot == cfg->max_qp) {
        pthread_rwlock_unlock(&ctx->objs);
        err = -ENOMEM;
        goto err_uncount;
    }
    ctx->qps[slot] = qp;
    ctx->nqp++;
    __atomic_add_fetch(&qp->pd->users, 1, __ATOMIC_RELAXED);
    if (slot >= ctx->qp_slots_used)
        ctx->qp_slots_used = slot + 1;
    pthread_rwlock_unlock(&ctx->objs);
    *qp_p = qp;
    return 0;

err_uncount:
    __atomic_fetch_sub(&ctx->dev->live_qps, 1, __ATOMIC_RELAXED);
err_free:
    qp_free(qp);
    return err;
}

void efasim_qp_destroy(struct efasim_qp *qp)
{
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
    __atomic_sub_fetch(&qp->pd->users, 1, __ATOMIC_RELAXED);
    pthread_rwlock_unlock(&ctx->objs);
    __atomic_fetch_sub(&ctx->dev->live_qps, 1, __ATOMIC_RELAXED);
    efasim_cq_forget_qp(qp->send_cq, qp);
    if (qp->recv_cq != qp->send_cq)
        efasim_cq_forget_qp(qp->recv_cq, qp);
    efasim_delayq_flush(ctx, true); /* nothing held back may outlive its socket */
    qp_free(qp);
}

/* ---- State ---------------------------------------------------------------------- */

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
        w->status = EFASIM_ST_FLUSHED;
        w->chunks_inflight = 0;
        efasim_swqe_finish(qp, i);
    }
    while (qp->rq_count) {
        struct efasim_cqe cqe = {.wr_id = qp->rq[qp->rq_head].wr_id,
                                 .opcode = IBV_WC_RECV,
                                 .vendor_err = EFASIM_ST_FLUSHED,
                                 .qp_num = qp->qpn,
                                 .qp = qp};

        if (efasim_cq_push(qp->recv_cq, &cqe))
            break; /* the CQ is full */
        qp->rq_head = (qp->rq_head + 1) % qp->cap.max_recv_wr;
        qp->rq_count--;
    }
}

/*
 * The state transitions an EFA QP takes and the attributes each requires and
 * allows: the kernel's table for UD QPs (ib_modify_qp_is_ok), which EFA's
 * driver applies to SRD QPs with one more optional attribute, IBV_QP_RNR_RETRY
 * from RTR to RTS (srd_qp_state_table in its efa_verbs.c). Every state but
 * RESET may go to RESET or ERR, taking nothing; RESET only stays or goes to
 * INIT. (SQD and SQE, which no efasim QP enters, are left out.)
 */
struct qp_transition {
    enum ibv_qp_state from, to;
    int required, optional;
    int srd_optional; /* what an SRD QP may give besides */
};

static const struct qp_transition g_qp_transitions[] = {
    {IBV_QPS_RESET, IBV_QPS_RESET, 0, 0, 0},
    {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, 0, 0},
    {IBV_QPS_INIT, IBV_QPS_INIT, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, 0},
    {IBV_QPS_INIT, IBV_QPS_RTR, 0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY, 0},
    {IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_SQ_PSN, IBV_QP_CUR_STATE | IBV_QP_QKEY, IBV_QP_RNR_RETRY},
    {IBV_QPS_RTS, IBV_QPS_RTS, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY, 0},
    {IBV_QPS_INIT, IBV_QPS_RESET, 0, 0, 0},
    {IBV_QPS_INIT, IBV_QPS_ERR, 0, 0, 0},
    {IBV_QPS_RTR, IBV_QPS_RESET, 0, 0, 0},
    {IBV_QPS_RTR, IBV_QPS_ERR, 0, 0, 0},
    {IBV_QPS_RTS, IBV_QPS_RESET, 0, 0, 0},
    {IBV_QPS_RTS, IBV_QPS_ERR, 0, 0, 0},
    {IBV_QPS_ERR, IBV_QPS_RESET, 0, 0, 0},
    {IBV_QPS_ERR, IBV_QPS_ERR, 0, 0, 0},
};

/* 0, or the errno EFA's driver returns for this modify (-EINVAL, -EOPNOTSUPP). */
static int qp_modify_check(const struct efasim_qp *qp, const struct ibv_qp_attr *attr, int mask)
{
    const int supported = IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY |
                          IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY | IBV_QP_SQ_PSN |
                          IBV_QP_RNR_RETRY;
    enum ibv_qp_state cur = mask & IBV_QP_CUR_STATE ? attr->cur_qp_state : qp->state;
    enum ibv_qp_state to = mask & IBV_QP_STATE ? attr->qp_state : cur;

    if (mask & ~supported)
        return -EOPNOTSUPP;
    if (cur != qp->state)
        return -EINVAL; /* a stale cur_qp_state */
    if ((mask & IBV_QP_PORT) && attr->port_num != EFASIM_PORT)
        return -EINVAL;
    if ((mask & IBV_QP_PKEY_INDEX) && attr->pkey_index)
        return -EINVAL;
    /* ib_modify_qp_is_ok: a current state is given only for one that can be left so. */
    if ((mask & IBV_QP_CUR_STATE) && cur != IBV_QPS_RTR && cur != IBV_QPS_RTS &&
        cur != IBV_QPS_SQD && cur != IBV_QPS_SQE)
        return -EINVAL;
    for (size_t i = 0; i < sizeof(g_qp_transitions) / sizeof(g_qp_transitions[0]); i++) {
        const struct qp_transition *t = &g_qp_transitions[i];
        int optional = t->optional | (qp->type == EFASIM_QPT_SRD ? t->srd_optional : 0);

        if (t->from != cur || t->to != to)
            continue;
        if ((mask & t->required) != t->required ||
            (mask & ~(IBV_QP_STATE | t->required | optional)))
            return -EINVAL;
        return 0;
    }
    return -EINVAL;
}

int efasim_qp_modify(struct efasim_qp *qp, const struct ibv_qp_attr *attr, int mask)
{
    int ret;

    pthread_mutex_lock(&qp->lock);
    ret = qp_modify_check(qp, attr, mask);
    if (!ret) {
        if (mask & IBV_QP_QKEY)
            qp->qkey = attr->qkey;
        if (mask & IBV_QP_SQ_PSN)
            qp->sq_psn = attr->sq_psn;
        if (mask & IBV_QP_RNR_RETRY)
            qp->rnr_retry = attr->rnr_retry;
        if (mask & IBV_QP_STATE) {
            if (attr->qp_state == IBV_QPS_ERR || attr->qp_state == IBV_QPS_RESET)
                qp_flush(qp);
            qp->state = attr->qp_state;
        }
    }
    pthread_mutex_unlock(&qp->lock);
    return ret;
}

void efasim_qp_query(const struct efasim_qp *qp, struct ibv_qp_attr *attr_p)
{
    memset(attr_p, 0, sizeof(*attr_p));
    attr_p->qp_state = qp->state;
    attr_p->cur_qp_state = qp->state;
    attr_p->qkey = qp->qkey;
    attr_p->sq_psn = qp->sq_psn;
    attr_p->rnr_retry = qp->rnr_retry;
    attr_p->port_num = EFASIM_PORT;
    attr_p->cap = qp->cap;
}

/* ---- Posting ---------------------------------------------------------------------- */

void efasim_qp_post_begin(struct efasim_qp *qp)
{
    pthread_rwlock_rdlock(&qp->ctx->objs); /* lkey checks read the MR table */
    pthread_mutex_lock(&qp->lock);
}

void efasim_qp_post_end(struct efasim_qp *qp)
{
    pthread_mutex_unlock(&qp->lock);
    pthread_rwlock_unlock(&qp->ctx->objs);
}

void efasim_qp_lock(struct efasim_qp *qp)
{
    pthread_mutex_lock(&qp->lock);
}

void efasim_qp_unlock(struct efasim_qp *qp)
{
    pthread_mutex_unlock(&qp->lock);
}

static int swqe_alloc(struct efasim_qp *qp, uint32_t *idx_p)
{
    if (qp->sq_used == qp->cap.max_send_wr)
        return -ENOMEM;
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
    return -ENOMEM;
}

/* Take the descriptor into send queue entry w; the device checks it afterwards. */
static void swqe_fill(struct efasim_swqe *w, const struct efasim_send_desc *d)
{
    w->wr_id = d->wr_id;
    w->op = d->op;
    w->signaled = d->signaled;
    w->has_imm = d->has_imm;
    w->imm = d->imm;
    if (d->has_dest && d->dqpn <= 0xffff && efasim_gid_to_addr(&d->dgid, &w->dst.sin_addr)) {
        w->dst.sin_family = AF_INET;
        w->dst.sin_port = htons(efasim_qpn_port(d->dqpn)); /* 0: no QP can have it */
        w->dst_qkey = d->dqkey;
    }
    if (d->is_inline) {
        /* Copied now: the caller may reuse its buffer once the WR is posted. */
        memcpy(w->inline_data, d->inline_data, d->inline_len);
        w->is_inline = true;
        w->length = d->inline_len;
    } else {
        w->nsge = d->nsge;
        for (uint32_t i = 0; i < d->nsge; i++) {
            w->sge[i] = d->sge[i];
            w->length += d->sge[i].length;
        }
    }
    w->rkey = d->rkey;
    w->raddr = d->raddr;
}

/* Check a WR the way the device would; a failure becomes its completion. */
static void swqe_validate(struct efasim_qp *qp, struct efasim_swqe *w, uint8_t fail)
{
    const struct efasim_config *cfg = efasim_config();
    unsigned access = w->op == EFASIM_OP_READ ? IBV_ACCESS_LOCAL_WRITE : 0;

    if (fail) {
        w->status = fail;
        return;
    }
    if (qp->type == EFASIM_QPT_UD && w->op != EFASIM_OP_SEND) {
        w->status = EFASIM_ST_LOCAL_INVALID_OP; /* UD moves sends only */
        return;
    }
    if (!w->dst.sin_family) {
        w->status = EFASIM_ST_LOCAL_INVALID_AH;
        return;
    }
    for (uint32_t i = 0; i < w->nsge; i++) {
        if (!efasim_mr_check(qp->ctx, w->sge[i].lkey, w->sge[i].addr, w->sge[i].length, access)) {
            w->status = EFASIM_ST_LOCAL_INVALID_LKEY;
            return;
        }
    }
    if ((w->op == EFASIM_OP_SEND && w->length > cfg->mtu) ||
        (w->op != EFASIM_OP_SEND && w->length > cfg->max_rdma_size))
        w->status = EFASIM_ST_LOCAL_BAD_LENGTH;
}

int efasim_qp_post_send(struct efasim_qp *qp, const struct efasim_send_desc *d)
{
    struct efasim_swqe *w;
    uint32_t idx;
    int err;

    if ((d->is_inline && d->inline_len > efasim_config()->inline_size) ||
        (!d->is_inline && d->nsge > EFASIM_MAX_SGE))
        return -EINVAL;
    err = swqe_alloc(qp, &idx);
    if (err)
        return err;
    w = &qp->sq[idx];
    swqe_fill(w, d);
    swqe_validate(qp, w, d->fail);
    if (w->status != EFASIM_ST_OK) {
        efasim_swqe_finish(qp, idx);
        return 0;
    }
    /* A send is one datagram; RDMA moves a chunk per datagram or direct-copy request. */
    efasim_swqe_plan(qp, w);
    w->rnr_left = qp->rnr_retry == 7 ? UINT32_MAX : qp->rnr_retry;
    qp->issue_fifo[(qp->fifo_head + qp->fifo_count) % qp->cap.max_send_wr] = idx;
    qp->fifo_count++;
    return 0;
}

void efasim_qp_kick(struct efasim_qp *qp)
{
    efasim_tx_begin(qp); /* the section's datagrams in one sendmmsg */
    efasim_qp_issue(qp);
    efasim_tx_end(qp);
}

int efasim_qp_post_recv(struct efasim_qp *qp, uint64_t wr_id, uint32_t nsge,
                        const struct ibv_sge *sge)
{
    struct efasim_rwqe *r;

    if (nsge > EFASIM_MAX_SGE)
        return -EINVAL;
    if (qp->rq_count == qp->cap.max_recv_wr)
        return -ENOMEM;
    r = &qp->rq[(qp->rq_head + qp->rq_count) % qp->cap.max_recv_wr];
    r->wr_id = wr_id;
    r->nsge = nsge;
    r->length = 0;
    for (uint32_t i = 0; i < nsge; i++) {
        r->sge[i] = sge[i];
        r->length += sge[i].length;
    }
    qp->rq_count++;
    return 0;
}
