/*
 * efasim's drop-in CQs: a ring of completions behind the ibv_cq_ex poll API
 * (start/next/end_poll and the read_* accessors), the legacy ibv_poll_cq,
 * efadv's SGID read, and completion events on a channel. The ring is the
 * producer side of the model's CQ (struct efasim_cq_ops): the device writes
 * completions into it, and raises an armed CQ's event as it does. Polling is
 * where the datapath runs: start_poll and ibv_poll_cq first make progress on the QPs
 * that feed the CQ (and on the context's other QPs that no other thread is
 * serving), reading their sockets without blocking, so the application thread
 * drives its own latency path.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "efasim_verbs.h"

static struct efasim_vcq *model_to_vcq(const struct efasim_cq *m)
{
    return (struct efasim_vcq *)((uint8_t *)m - offsetof(struct efasim_vcq, m));
}

/* A completion of the QP whose slot it holds: qp's counter of those in the ring, or NULL. */
static uint32_t *cqe_in_cq(const struct efasim_cqe *cqe)
{
    struct efasim_vqp *qp = cqe->qp ? cqe->qp->fe : NULL;

    if (!qp)
        return NULL;
    return cqe->sq ? &qp->sq_in_cq : &qp->rq_in_cq;
}

/*
 * An armed CQ with a channel raises one event and is armed no more, as EFA's
 * device answers the doorbell's ARM bit with one interrupt; the event names
 * the CQ as rdma-core's user handle does (its struct ibv_cq). A channel whose
 * queue is full loses the event. The CQ's lock held.
 */
static void cq_event_raise(struct efasim_vcq *cq)
{
    struct ib_uverbs_comp_event_desc ev = {.cq_handle = (uintptr_t)ibv_cq_ex_to_cq(&cq->ibv)};

    if (!cq->armed || cq->event_fd < 0)
        return;
    cq->armed = false;
    (void)send(cq->event_fd, &ev, sizeof(ev), MSG_DONTWAIT | MSG_NOSIGNAL);
}

/*
 * Ring operations: the CQ's lock held. count and reserved are also read without
 * it (hints). A completion counts against its QP's queue from when it enters the
 * ring, under this lock, so the consumer can never uncount it first.
 */
static void ring_put(struct efasim_vcq *cq, const struct efasim_cqe *cqe)
{
    uint32_t *in_cq = cqe_in_cq(cqe);

    if (in_cq)
        __atomic_add_fetch(in_cq, 1, __ATOMIC_RELAXED);
    cq->ring[(cq->head + cq->count) % cq->size] = *cqe;
    __atomic_store_n(&cq->count, cq->count + 1, __ATOMIC_RELAXED);
    cq_event_raise(cq);
}

static bool ring_has_room(const struct efasim_vcq *cq)
{
    return cq->count + cq->reserved < cq->size;
}

static int vcq_push(struct efasim_cq *m, const struct efasim_cqe *cqe)
{
    struct efasim_vcq *cq = model_to_vcq(m);
    int ret = -EAGAIN;

    pthread_mutex_lock(&cq->lock);
    if (ring_has_room(cq)) {
        ring_put(cq, cqe);
        ret = 0;
    }
    pthread_mutex_unlock(&cq->lock);
    return ret;
}

static bool vcq_reserve(struct efasim_cq *m)
{
    struct efasim_vcq *cq = model_to_vcq(m);
    bool ok;

    pthread_mutex_lock(&cq->lock);
    ok = ring_has_room(cq);
    if (ok)
        __atomic_store_n(&cq->reserved, cq->reserved + 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&cq->lock);
    return ok;
}

static void vcq_push_reserved(struct efasim_cq *m, const struct efasim_cqe *cqe)
{
    struct efasim_vcq *cq = model_to_vcq(m);

    pthread_mutex_lock(&cq->lock);
    __atomic_store_n(&cq->reserved, cq->reserved - 1, __ATOMIC_RELAXED);
    ring_put(cq, cqe);
    pthread_mutex_unlock(&cq->lock);
}

static void vcq_unreserve(struct efasim_cq *m)
{
    struct efasim_vcq *cq = model_to_vcq(m);

    pthread_mutex_lock(&cq->lock);
    __atomic_store_n(&cq->reserved, cq->reserved - 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&cq->lock);
}

static bool vcq_full(const struct efasim_cq *m)
{
    const struct efasim_vcq *cq = model_to_vcq(m);

    return __atomic_load_n(&cq->count, __ATOMIC_RELAXED) +
               __atomic_load_n(&cq->reserved, __ATOMIC_RELAXED) >=
           cq->size;
}

/*
 * The work-completion status of the device's status, as rdma-core 44's EFA
 * provider maps it (to_ibv_status in providers/efa/verbs.c): every status it
 * does not name is IBV_WC_GENERAL_ERR, among them 7 (a bad remote address or
 * key) and 15 (an unreachable peer), which newer rdma-core maps to
 * IBV_WC_REM_ACCESS_ERR (v52) and IBV_WC_RESP_TIMEOUT_ERR (v55).
 */
static enum ibv_wc_status cq_wc_status(uint32_t st)
{
    static const enum ibv_wc_status map[] = {
        [EFASIM_ST_OK] = IBV_WC_SUCCESS,
        [EFASIM_ST_FLUSHED] = IBV_WC_WR_FLUSH_ERR,
        [EFASIM_ST_LOCAL_QP_INTERNAL_ERROR] = IBV_WC_LOC_QP_OP_ERR,
        [EFASIM_ST_LOCAL_INVALID_OP] = IBV_WC_LOC_QP_OP_ERR,
        [EFASIM_ST_LOCAL_INVALID_AH] = IBV_WC_LOC_QP_OP_ERR,
        [EFASIM_ST_LOCAL_INVALID_LKEY] = IBV_WC_LOC_PROT_ERR,
        [EFASIM_ST_LOCAL_BAD_LENGTH] = IBV_WC_LOC_LEN_ERR,
        [EFASIM_ST_REMOTE_BAD_ADDRESS] = IBV_WC_GENERAL_ERR,
        [EFASIM_ST_REMOTE_ABORT] = IBV_WC_REM_ABORT_ERR,
        [EFASIM_ST_REMOTE_BAD_DEST_QPN] = IBV_WC_REM_INV_RD_REQ_ERR,
        [EFASIM_ST_REMOTE_RNR] = IBV_WC_RNR_RETRY_EXC_ERR,
        [EFASIM_ST_REMOTE_BAD_LENGTH] = IBV_WC_REM_INV_REQ_ERR,
        [EFASIM_ST_REMOTE_BAD_STATUS] = IBV_WC_BAD_RESP_ERR,
        [EFASIM_ST_UNRESP_REMOTE] = IBV_WC_RESP_TIMEOUT_ERR,
        [EFASIM_ST_UNREACH_REMOTE] = IBV_WC_GENERAL_ERR,
    };

    /* IBV_WC_SUCCESS is 0: a hole in the table is a status 44 does not know. */
    if (st == EFASIM_ST_OK)
        return IBV_WC_SUCCESS;
    if (st < sizeof(map) / sizeof(map[0]) && map[st] != IBV_WC_SUCCESS)
        return map[st];
    return IBV_WC_GENERAL_ERR;
}

/* Copy the ring's head entry for the accessors; it stays in the ring until consumed. */
static void cq_load_current(struct efasim_vcq *cq)
{
    cq->cur = cq->ring[cq->head];
    cq->has_cur = true;
    cq->ibv.wr_id = cq->cur.wr_id;
    cq->ibv.status = cq_wc_status(cq->cur.vendor_err);
}

/* One fewer of a counter that the QP's completions raise; never below 0. */
static void in_cq_drop(uint32_t *n)
{
    uint32_t v = __atomic_load_n(n, __ATOMIC_RELAXED);

    while (v &&
           !__atomic_compare_exchange_n(n, &v, v - 1, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

/* A polled completion leaves the queue it came from: its slot is free for a new WR. */
static void cqe_consumed(const struct efasim_cqe *cqe)
{
    uint32_t *in_cq = cqe_in_cq(cqe);

    if (in_cq)
        in_cq_drop(in_cq);
}

static void vcq_forget_qp(struct efasim_cq *m, const struct efasim_qp *qp)
{
    struct efasim_vcq *cq = model_to_vcq(m);

    pthread_mutex_lock(&cq->lock);
    for (uint32_t i = 0; i < cq->count; i++) {
        struct efasim_cqe *e = &cq->ring[(cq->head + i) % cq->size];

        if (e->qp == qp)
            e->qp = NULL;
    }
    pthread_mutex_unlock(&cq->lock);
}

static const struct efasim_cq_ops g_vcq_ops = {
    .push = vcq_push,
    .reserve = vcq_reserve,
    .push_reserved = vcq_push_reserved,
    .unreserve = vcq_unreserve,
    .full = vcq_full,
    .forget_qp = vcq_forget_qp,
};

/* Consume the head entry. The CQ's lock held. */
static void cq_pop(struct efasim_vcq *cq)
{
    cqe_consumed(&cq->ring[cq->head]);
    cq->head = (cq->head + 1) % cq->size;
    __atomic_store_n(&cq->count, cq->count - 1, __ATOMIC_RELAXED);
    cq->has_cur = false;
}

static int cq_start_poll(struct ibv_cq_ex *ibv, struct ibv_poll_cq_attr *attr)
{
    struct efasim_vcq *cq = to_vcq(ibv);
    int ret = 0;

    if (!attr) {
        /*
         * rdma-core's efa_start_poll reads attr->comp_mask: on EFA this call
         * crashes, so here too (with the reason), never kinder.
         */
        fprintf(stderr, "efasim: ibv_start_poll() with a NULL attr: rdma-core's EFA provider "
                        "dereferences it and the program crashes on EFA; aborting\n");
        abort();
    } else if (attr->comp_mask) {
        return EINVAL;
    }
    pthread_mutex_lock(&cq->poll_lock);
    efasim_progress(cq->m.ctx, &cq->m);
    pthread_mutex_lock(&cq->lock);
    if (cq->count)
        cq_load_current(cq);
    else
        ret = ENOENT;
    pthread_mutex_unlock(&cq->lock);
    if (ret)
        pthread_mutex_unlock(&cq->poll_lock);
    return ret; /* on success poll_lock is held until end_poll, as EFA holds its CQ lock */
}

static int cq_next_poll(struct ibv_cq_ex *ibv)
{
    struct efasim_vcq *cq = to_vcq(ibv);
    int ret = 0;

    pthread_mutex_lock(&cq->lock);
    if (cq->has_cur)
        cq_pop(cq);
    if (cq->count)
        cq_load_current(cq);
    else
        ret = ENOENT;
    pthread_mutex_unlock(&cq->lock);
    return ret;
}

static void cq_end_poll(struct ibv_cq_ex *ibv)
{
    struct efasim_vcq *cq = to_vcq(ibv);

    pthread_mutex_lock(&cq->lock);
    if (cq->has_cur)
        cq_pop(cq);
    pthread_mutex_unlock(&cq->lock);
    pthread_mutex_unlock(&cq->poll_lock);
}

static enum ibv_wc_opcode cq_read_opcode(struct ibv_cq_ex *ibv)
{
    return to_vcq(ibv)->cur.opcode;
}

static uint32_t cq_read_vendor_err(struct ibv_cq_ex *ibv)
{
    return to_vcq(ibv)->cur.vendor_err;
}

static uint32_t cq_read_byte_len(struct ibv_cq_ex *ibv)
{
    return to_vcq(ibv)->cur.byte_len;
}

static __be32 cq_read_imm_data(struct ibv_cq_ex *ibv)
{
    return htobe32(to_vcq(ibv)->cur.imm);
}

static uint32_t cq_read_qp_num(struct ibv_cq_ex *ibv)
{
    return to_vcq(ibv)->cur.qp_num;
}

static uint32_t cq_read_src_qp(struct ibv_cq_ex *ibv)
{
    return to_vcq(ibv)->cur.src_qp;
}

static unsigned int cq_read_wc_flags(struct ibv_cq_ex *ibv)
{
    return to_vcq(ibv)->cur.wc_flags;
}

static uint32_t cq_read_slid(struct ibv_cq_ex *ibv)
{
    return to_vcq(ibv)->cur.slid;
}

static uint8_t cq_read_zero_u8(struct ibv_cq_ex *ibv)
{
    (void)ibv;
    return 0;
}

/* efadv: the sender's GID, available only when the receiver has no AH for it. */
static int cq_wc_read_sgid(struct efadv_cq *efadv, union ibv_gid *sgid)
{
    struct efasim_vcq *cq =
        (struct efasim_vcq *)((uint8_t *)efadv - offsetof(struct efasim_vcq, efadv));

    if (!cq->has_cur || cq->cur.slid != EFASIM_AHN_UNKNOWN)
        return -ENOENT;
    *sgid = cq->cur.sgid;
    return 0;
}

/*
 * efadv: whether the completion being read is a write with immediate that
 * took no receive WR (a QP created with unsolicited write receive).
 */
static bool cq_wc_is_unsolicited(struct efadv_cq *efadv)
{
    struct efasim_vcq *cq =
        (struct efasim_vcq *)((uint8_t *)efadv - offsetof(struct efasim_vcq, efadv));

    return cq->has_cur && cq->cur.unsolicited;
}

/* Legacy ibv_poll_cq through context->ops.poll_cq. */
int efasim_vcq_poll(struct ibv_cq *ibv, int n, struct ibv_wc *wc)
{
    struct efasim_vcq *cq = (struct efasim_vcq *)ibv;
    int got = 0;

    pthread_mutex_lock(&cq->poll_lock);
    efasim_progress(cq->m.ctx, &cq->m);
    pthread_mutex_lock(&cq->lock);
    while (got < n && cq->count) {
        const struct efasim_cqe *e = &cq->ring[cq->head];
        struct ibv_wc *w = &wc[got++];

        memset(w, 0, sizeof(*w));
        w->wr_id = e->wr_id;
        w->status = cq_wc_status(e->vendor_err);
        w->opcode = e->opcode;
        w->vendor_err = e->vendor_err;
        w->byte_len = e->byte_len;
        w->imm_data = htobe32(e->imm);
        w->qp_num = e->qp_num;
        w->src_qp = e->src_qp;
        w->wc_flags = e->wc_flags;
        w->slid = e->slid;
        cq_pop(cq);
    }
    pthread_mutex_unlock(&cq->lock);
    pthread_mutex_unlock(&cq->poll_lock);
    return got;
}

/*
 * The kernel's hold on the channel: the CQ keeps duplicates of both its ends
 * (the device's, to raise events, and the reader's, to take back its unread
 * ones when it goes). 0, or -errno (EBADF for a closed channel, EMFILE).
 */
static int cq_channel_attach(struct efasim_vcq *cq, struct ibv_comp_channel *channel)
{
    const struct efasim_vchannel *ch = (const struct efasim_vchannel *)channel;

    cq->event_fd = fcntl(ch->device_fd, F_DUPFD_CLOEXEC, 0);
    if (cq->event_fd < 0)
        return -errno;
    cq->channel_fd = fcntl(ch->ibv.fd, F_DUPFD_CLOEXEC, 0);
    if (cq->channel_fd < 0) {
        int err = -errno;

        close(cq->event_fd);
        cq->event_fd = -1;
        return err;
    }
    return 0;
}

static void cq_channel_detach(struct efasim_vcq *cq)
{
    if (cq->event_fd >= 0)
        close(cq->event_fd);
    if (cq->channel_fd >= 0)
        close(cq->channel_fd);
    cq->event_fd = cq->channel_fd = -1;
}

/*
 * As rdma-core 44's create_cq: no comp_mask and no wc_flags beyond the standard
 * ones (EOPNOTSUPP); a completion channel, which EFA takes with its
 * CQ_NOTIFICATIONS capability (efasim's device has it); the depth rounded up
 * to a power of two. Then the kernel's checks: the uverbs core's first, a
 * comp_vector the context does not have (EINVAL), the channel, then EFA's
 * driver's depth from 1 to max_cqe (EINVAL: the model's check). Only the
 * accessors the wc_flags ask for are installed; the others stay NULL, as on
 * EFA; so are efadv's (efadv_wc_flags: the SGID read, the unsolicited mark).
 * The caller does libibverbs' part (efasim_vcq_init_verbs) if any.
 */
struct ibv_cq_ex *efasim_vcq_create(struct efasim_vctx *ctx, struct ibv_cq_init_attr_ex *attr,
                                    uint64_t efadv_wc_flags)
{
    struct efasim_vcq *cq;
    uint32_t cqe;
    int err;

    if (attr->comp_mask || (attr->wc_flags & ~(uint64_t)IBV_WC_STANDARD_FLAGS)) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    cqe = attr->cqe ? efasim_roundup_pow2(attr->cqe) : 0;
    if (attr->comp_vector >= (uint32_t)ctx->vctx.context.num_comp_vectors) {
        errno = EINVAL;
        return NULL;
    }
    cq = calloc(1, sizeof(*cq));
    if (!cq) {
        errno = ENOMEM;
        return NULL;
    }
    cq->event_fd = cq->channel_fd = -1;
    if (attr->channel) {
        err = cq_channel_attach(cq, attr->channel);
        if (err)
            goto err_free;
    }
    err = efasim_cq_construct(&cq->m, ctx->m, cqe, &g_vcq_ops, cq);
    if (err)
        goto err_detach;
    attr->cqe = cqe;
    err = -ENOMEM;
    cq->ring = calloc(cqe, sizeof(*cq->ring));
    if (!cq->ring)
        goto err_detach;
    cq->size = cqe;
    pthread_mutex_init(&cq->poll_lock, NULL);
    pthread_mutex_init(&cq->lock, NULL);
    cq->ibv.context = &ctx->vctx.context;
    cq->ibv.cqe = (int)cqe;
    pthread_mutex_init(&cq->ibv.mutex, NULL);
    pthread_cond_init(&cq->ibv.cond, NULL);
    cq->ibv.start_poll = cq_start_poll;
    cq->ibv.next_poll = cq_next_poll;
    cq->ibv.end_poll = cq_end_poll;
    cq->ibv.read_opcode = cq_read_opcode;
    cq->ibv.read_vendor_err = cq_read_vendor_err;
    cq->ibv.read_wc_flags = cq_read_wc_flags;
    if (attr->wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
        cq->ibv.read_byte_len = cq_read_byte_len;
    if (attr->wc_flags & IBV_WC_EX_WITH_IMM)
        cq->ibv.read_imm_data = cq_read_imm_data;
    if (attr->wc_flags & IBV_WC_EX_WITH_QP_NUM)
        cq->ibv.read_qp_num = cq_read_qp_num;
    if (attr->wc_flags & IBV_WC_EX_WITH_SRC_QP)
        cq->ibv.read_src_qp = cq_read_src_qp;
    if (attr->wc_flags & IBV_WC_EX_WITH_SLID)
        cq->ibv.read_slid = cq_read_slid;
    if (attr->wc_flags & IBV_WC_EX_WITH_SL)
        cq->ibv.read_sl = cq_read_zero_u8;
    if (attr->wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
        cq->ibv.read_dlid_path_bits = cq_read_zero_u8;
    cq->efadv.comp_mask = 0;
    cq->efadv.wc_is_unsolicited = NULL;
    if (efadv_wc_flags & EFADV_WC_EX_WITH_SGID)
        cq->efadv.wc_read_sgid = cq_wc_read_sgid;
    if (efadv_wc_flags & EFASIM_EFADV_WC_EX_WITH_IS_UNSOLICITED)
        cq->efadv.wc_is_unsolicited = cq_wc_is_unsolicited;
    return &cq->ibv;

err_detach:
    cq_channel_detach(cq);
err_free:
    free(cq);
    errno = -err;
    return NULL;
}

/* libibverbs' verbs_init_cq: the channel's reference and the application's cq_context. */
void efasim_vcq_init_verbs(struct ibv_cq *cq, struct ibv_comp_channel *channel, void *cq_context)
{
    cq->channel = channel;
    if (channel) {
        pthread_mutex_lock(&cq->context->mutex);
        ++channel->refcnt;
        pthread_mutex_unlock(&cq->context->mutex);
    }
    cq->cq_context = cq_context;
    cq->comp_events_completed = 0;
    cq->async_events_completed = 0;
}

/*
 * The kernel takes a destroyed CQ's unread events off its channel
 * (ib_uverbs_release_ucq): read what waits there and put the other CQs'
 * events back, in their order (a reader in another thread may take some
 * meanwhile, as it may from the kernel's queue). The CQ raises no more.
 */
static void cq_events_withdraw(struct efasim_vcq *cq)
{
    const uint64_t self = (uintptr_t)ibv_cq_ex_to_cq(&cq->ibv);
    struct ib_uverbs_comp_event_desc ev, *keep = NULL;
    size_t n = 0, slots = 0;

    while (recv(cq->channel_fd, &ev, sizeof(ev), MSG_DONTWAIT) == (ssize_t)sizeof(ev)) {
        if (ev.cq_handle == self)
            continue;
        if (n == slots) {
            size_t more = slots ? 2 * slots : 16;
            struct ib_uverbs_comp_event_desc *k = realloc(keep, more * sizeof(*keep));

            if (!k) { /* put it back now; what is left stays as it is */
                (void)send(cq->event_fd, &ev, sizeof(ev), MSG_DONTWAIT | MSG_NOSIGNAL);
                break;
            }
            keep = k;
            slots = more;
        }
        keep[n++] = ev;
    }
    for (size_t i = 0; i < n; i++)
        (void)send(cq->event_fd, &keep[i], sizeof(keep[i]), MSG_DONTWAIT | MSG_NOSIGNAL);
    free(keep);
}

/*
 * As efa_destroy_cq and ibv_cmd_destroy_cq: the CQ goes (its unread events
 * with it), then the call waits until the application acknowledged
 * (ibv_ack_cq_events) every event it read.
 */
int efasim_vcq_destroy(struct ibv_cq *ibv)
{
    struct efasim_vcq *cq = (struct efasim_vcq *)ibv;

    if (cq->event_fd >= 0) {
        pthread_mutex_lock(&cq->lock);
        cq->armed = false;
        pthread_mutex_unlock(&cq->lock);
        cq_events_withdraw(cq);
        cq_channel_detach(cq);
    }
    pthread_mutex_lock(&ibv->mutex);
    while (ibv->comp_events_completed != __atomic_load_n(&cq->events_read, __ATOMIC_ACQUIRE) ||
           ibv->async_events_completed)
        pthread_cond_wait(&ibv->cond, &ibv->mutex);
    pthread_mutex_unlock(&ibv->mutex);
    pthread_mutex_destroy(&cq->poll_lock);
    pthread_mutex_destroy(&cq->lock);
    free(cq->ring);
    free(cq);
    return 0;
}

/*
 * As rdma-core 44's efa_arm_cq: solicited-only events are not EFA's
 * (EOPNOTSUPP). Arming asks for one event at the next completion, or at once
 * when completions wait in the CQ already (the consumer index the doorbell
 * carries tells EFA's device so). A CQ without a channel raises none.
 */
int efasim_vcq_arm(struct ibv_cq *ibv, int solicited_only)
{
    struct efasim_vcq *cq = (struct efasim_vcq *)ibv;

    if (solicited_only)
        return EOPNOTSUPP;
    pthread_mutex_lock(&cq->lock);
    cq->armed = true;
    if (cq->count)
        cq_event_raise(cq);
    pthread_mutex_unlock(&cq->lock);
    return 0;
}

void efasim_vcq_event_read(struct ibv_cq *ibv)
{
    __atomic_add_fetch(&((struct efasim_vcq *)ibv)->events_read, 1, __ATOMIC_RELEASE);
}

/* For efadv_cq_from_ibv_cq_ex (efadv.c). */
struct efadv_cq *efasim_vcq_efadv(struct ibv_cq_ex *ibv)
{
    return (struct efadv_cq *)&to_vcq(ibv)->efadv; /* 64's layout, 44's at its beginning */
}
