/*
 * efasim's fault injector, below the reliability layer (wire.c): every
 * datagram a QP sends goes through efasim_xmit, which drops, duplicates,
 * reorders or delays it with the probabilities EFASIM_LOSS, EFASIM_DUP,
 * EFASIM_REORDER and EFASIM_DELAY, drawn from the context's EFASIM_SEED
 * stream (under the context's fault_lock, as is the queue; with more than one
 * thread posting or polling, which datagram draws which number follows the
 * threads' timing). Held datagrams wait in a bounded per-context queue (64 slots); a
 * datagram that finds no slot goes out at once. A held datagram is a copy,
 * taken through the kernel: the application's memory behind an in-flight WR
 * may be gone (that used to crash the service thread in the copy), which is
 * reported to the caller as -EFAULT, as sendmsg reports it.
 *
 * Datagrams that leave the injector go out at once, or, between
 * efasim_tx_begin and efasim_tx_end (a progress pass, a posting), are gathered
 * in the QP's batch and sent with one sendmmsg per EFASIM_TX_BATCH: their efasim-owned
 * head (header, ACKs, direct-copy request) is copied into the batch, their
 * payload stays where the application has it until the flush. A payload the
 * kernel cannot read then (EFAULT) turns that datagram into the payload-less
 * probe the caller would have sent (EFASIM_F_PROBE); any other failure is loss.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "efasim_model.h"

/* ---- Fault injector: datagrams held back to reorder or delay them --------------- */

#define DELAYQ_SLOTS 64

struct delayed {
    bool used;
    int fd;
    struct sockaddr_in dst;
    uint64_t due_ns;
    unsigned hold; /* released after this many later datagrams, or at due_ns */
    size_t len;
    uint8_t *buf;
};

struct efasim_delayq {
    struct delayed slot[DELAYQ_SLOTS];
    size_t buf_size;
};

/* ---- Send batches: one sendmmsg for the datagrams of a pass ---------------------- */

#define TXB_HEAD                                                                \
    (sizeof(struct efasim_hdr) + EFASIM_ACK_PIGGY * sizeof(struct efasim_ack) + \
     sizeof(struct efasim_fast_req))

struct txb_entry {
    uint8_t head[TXB_HEAD]; /* the owned pieces, copied */
    struct iovec iov[1 + EFASIM_MAX_SGE];
    struct sockaddr_in dst;
    size_t iovcnt;
    bool probe_on_fault; /* EFAULT: send the head alone, flagged EFASIM_F_PROBE */
};

struct efasim_txbatch {
    unsigned depth; /* nested begin/end */
    int fd;
    unsigned n;
    struct txb_entry e[EFASIM_TX_BATCH];
    struct mmsghdr mm[EFASIM_TX_BATCH];
};

/* 0 or -EFAULT (memory unreadable); a full socket buffer or any other failure is loss. */
static int raw_send(int fd, const struct sockaddr_in *dst, struct iovec *iov, int iovcnt)
{
    struct msghdr msg = {.msg_name = (void *)dst,
                         .msg_namelen = sizeof(*dst),
                         .msg_iov = iov,
                         .msg_iovlen = (size_t)iovcnt};

    return sendmsg(fd, &msg, 0) < 0 && errno == EFAULT ? -EFAULT : 0;
}

int efasim_xmit_raw(int fd, const struct sockaddr_in *dst, struct iovec *iov, int iovcnt)
{
    return raw_send(fd, dst, iov, iovcnt);
}

static void txb_send(struct efasim_txbatch *b)
{
    unsigned i = 0;

    if (b->n == 1) { /* nothing to gain from sendmmsg */
        struct txb_entry *e = &b->e[0];

        if (raw_send(b->fd, &e->dst, e->iov, (int)e->iovcnt) && e->probe_on_fault) {
            uint16_t flags;

            memcpy(&flags, e->head + offsetof(struct efasim_hdr, flags), sizeof(flags));
            flags |= EFASIM_F_PROBE;
            memcpy(e->head + offsetof(struct efasim_hdr, flags), &flags, sizeof(flags));
            (void)raw_send(b->fd, &e->dst, e->iov, 1);
        }
        b->n = 0;
        return;
    }
    for (unsigned k = 0; k < b->n; k++)
        b->mm[k] = (struct mmsghdr){.msg_hdr = {.msg_name = &b->e[k].dst,
                                                .msg_namelen = sizeof(b->e[k].dst),
                                                .msg_iov = b->e[k].iov,
                                                .msg_iovlen = b->e[k].iovcnt}};
    while (i < b->n) {
        int sent = sendmmsg(b->fd, &b->mm[i], b->n - i, 0);
        struct txb_entry *e = &b->e[i];

        if (sent > 0) {
            i += (unsigned)sent;
            continue;
        }
        /* Datagram i failed. Its payload unreadable: the probe; else it is lost. */
        if (errno == EFAULT && e->probe_on_fault && b->mm[i].msg_hdr.msg_iovlen > 1) {
            uint16_t flags;

            memcpy(&flags, e->head + offsetof(struct efasim_hdr, flags), sizeof(flags));
            flags |= EFASIM_F_PROBE;
            memcpy(e->head + offsetof(struct efasim_hdr, flags), &flags, sizeof(flags));
            b->mm[i].msg_hdr.msg_iovlen = 1;
            continue;
        }
        i++;
    }
    b->n = 0;
}

struct efasim_txbatch *efasim_txb_alloc(void)
{
    return calloc(1, sizeof(struct efasim_txbatch));
}

void efasim_tx_begin(struct efasim_qp *qp)
{
    qp->txb->depth++;
}

void efasim_tx_flush(struct efasim_qp *qp)
{
    if (qp->txb && qp->txb->n)
        txb_send(qp->txb);
}

void efasim_tx_end(struct efasim_qp *qp)
{
    if (!qp->txb || !qp->txb->depth)
        return;
    if (!--qp->txb->depth)
        efasim_tx_flush(qp);
}

/*
 * Send now, or add to the batch when one is open and the caller allowed it
 * (owned >= 0: the first `owned` pieces are efasim's and copied, the rest stay
 * readable until the flush). 0, or -EFAULT when sent now and unreadable.
 */
static int out_send(struct efasim_qp *qp, const struct sockaddr_in *dst, struct iovec *iov,
                    int iovcnt, int owned, bool probe_on_fault)
{
    struct efasim_txbatch *b = qp->txb;
    int fd = qp->fd;
    struct txb_entry *e;
    size_t off = 0;

    if (owned < 0 || !b || !b->depth || iovcnt - owned > EFASIM_MAX_SGE)
        return raw_send(fd, dst, iov, iovcnt);
    if (b->n && (b->fd != fd || b->n == EFASIM_TX_BATCH))
        txb_send(b);
    e = &b->e[b->n];
    for (int i = 0; i < owned; i++) {
        if (iov[i].iov_len > sizeof(e->head) - off)
            return raw_send(fd, dst, iov, iovcnt); /* cannot happen: heads fit TXB_HEAD */
        memcpy(e->head + off, iov[i].iov_base, iov[i].iov_len);
        off += iov[i].iov_len;
    }
    e->iov[0] = (struct iovec){e->head, off};
    e->iovcnt = 1;
    for (int i = owned; i < iovcnt; i++)
        if (iov[i].iov_len)
            e->iov[e->iovcnt++] = iov[i];
    e->dst = *dst;
    e->probe_on_fault = probe_on_fault;
    b->fd = fd;
    b->n++;
    return 0;
}

/*
 * Copy the datagram's pieces into buf (len bytes in all). Payloads are the
 * application's memory, which may have gone away under an in-flight WR, so the
 * copy goes through the kernel (process_vm_readv on this process) and reports
 * -EFAULT instead of crashing; where the kernel refuses that call (seccomp), a
 * plain copy.
 */
static int gather(uint8_t *buf, size_t len, const struct iovec *iov, int iovcnt)
{
    struct iovec local = {.iov_base = buf, .iov_len = len};
    ssize_t n = process_vm_readv(getpid(), &local, 1, iov, (unsigned long)iovcnt, 0);

    if (n == (ssize_t)len)
        return 0;
    if (n >= 0 || errno == EFAULT)
        return -EFAULT;
    for (int i = 0; i < iovcnt; i++) { /* ENOSYS, EPERM: no kernel help */
        memcpy(buf, iov[i].iov_base, iov[i].iov_len);
        buf += iov[i].iov_len;
    }
    return 0;
}

static void delayed_release(struct delayed *d)
{
    struct iovec iov = {.iov_base = d->buf, .iov_len = d->len};

    if (d->fd >= 0)
        (void)raw_send(d->fd, &d->dst, &iov, 1); /* our own copy: always readable */
    d->used = false;
}

void efasim_delayq_flush(struct efasim_context *ctx, bool all)
{
    uint64_t now;

    if (!ctx->delayq)
        return;
    now = efasim_now_ns();
    pthread_mutex_lock(&ctx->fault_lock);
    for (unsigned i = 0; i < DELAYQ_SLOTS; i++) {
        struct delayed *d = &ctx->delayq->slot[i];

        if (d->used && (all || now >= d->due_ns))
            delayed_release(d);
    }
    pthread_mutex_unlock(&ctx->fault_lock);
}

/*
 * With reordering, delay or duplication on, the delay queue with all its
 * buffers: allocated here, when the context opens, because the service thread
 * must never allocate or free (efasim_model.h, "Service thread").
 */
int efasim_tx_init(struct efasim_context *ctx)
{
    const struct efasim_config *cfg = efasim_config();
    struct efasim_delayq *q;

    if (!cfg->dup && !cfg->reorder && !cfg->delay)
        return 0;
    if (!(q = ctx->delayq = calloc(1, sizeof(*q))))
        goto err;
    q->buf_size = efasim_datagram_max(cfg);
    for (unsigned i = 0; i < DELAYQ_SLOTS; i++)
        if (!(q->slot[i].buf = malloc(q->buf_size)))
            goto err;
    return 0;
err:
    efasim_tx_free(ctx);
    return -ENOMEM;
}

void efasim_tx_free(struct efasim_context *ctx)
{
    if (!ctx->delayq)
        return;
    for (unsigned i = 0; i < DELAYQ_SLOTS; i++)
        free(ctx->delayq->slot[i].buf);
    free(ctx->delayq);
    ctx->delayq = NULL;
}

/*
 * Hold a copy of the datagram: 1 when held, 0 when no slot is free (then it
 * goes out now), -EFAULT when its memory cannot be read.
 */
static int delayq_hold(struct efasim_context *ctx, int fd, const struct sockaddr_in *dst,
                       struct iovec *iov, int iovcnt, bool by_time_only)
{
    const struct efasim_config *cfg = efasim_config();
    struct efasim_delayq *q = ctx->delayq;
    struct delayed *d = NULL;
    size_t len = 0;

    if (!q)
        return 0; /* cannot happen: efasim_tx_init made it for these faults */
    for (int i = 0; i < iovcnt; i++)
        len += iov[i].iov_len;
    if (len > q->buf_size)
        return 0; /* cannot happen: datagrams are built within efasim_datagram_max */
    for (unsigned i = 0; i < DELAYQ_SLOTS && !d; i++)
        if (!q->slot[i].used)
            d = &q->slot[i];
    if (!d)
        return 0;
    if (gather(d->buf, len, iov, iovcnt))
        return -EFAULT;
    d->len = len;
    d->used = true;
    d->fd = fd;
    d->dst = *dst;
    /*
     * Reordering: behind 1-4 later datagrams (or 200 us); delay: EFASIM_DELAY_US,
     * or with EFASIM_JITTER a random time up to it.
     */
    d->hold = by_time_only ? UINT32_MAX : 1 + (unsigned)(efasim_rand01(ctx) * 4);
    d->due_ns =
        efasim_now_ns() + (!by_time_only ? 200000
                           : cfg->jitter ? (uint64_t)(efasim_rand01(ctx) * cfg->delay_us * 1000)
                                         : (uint64_t)cfg->delay_us * 1000);
    return 1;
}

/* One more datagram went out: release held ones whose turn has come. */
static void delayq_tick(struct efasim_context *ctx)
{
    uint64_t now = efasim_now_ns();

    for (unsigned i = 0; i < DELAYQ_SLOTS; i++) {
        struct delayed *d = &ctx->delayq->slot[i];

        if (d->used && d->hold != UINT32_MAX)
            d->hold--;
        if (d->used && (d->hold == 0 || now >= d->due_ns))
            delayed_release(d);
    }
}

static int xmit_faulty(struct efasim_qp *qp, const struct sockaddr_in *dst, struct iovec *iov,
                       int iovcnt, int owned, bool probe_on_fault)
{
    const struct efasim_config *cfg = efasim_config();
    struct efasim_context *ctx = qp->ctx;
    int fd = qp->fd, held;

    if (ctx->delayq)
        delayq_tick(ctx);
    if (cfg->loss && efasim_rand01(ctx) < cfg->loss)
        return 0;
    if (cfg->delay && efasim_rand01(ctx) < cfg->delay &&
        (held = delayq_hold(ctx, fd, dst, iov, iovcnt, true)))
        return held < 0 ? held : 0;
    if (cfg->reorder && efasim_rand01(ctx) < cfg->reorder &&
        (held = delayq_hold(ctx, fd, dst, iov, iovcnt, false)))
        return held < 0 ? held : 0;
    if (out_send(qp, dst, iov, iovcnt, owned, probe_on_fault))
        return -EFAULT;
    if (cfg->dup && efasim_rand01(ctx) < cfg->dup && !delayq_hold(ctx, fd, dst, iov, iovcnt, false))
        (void)out_send(qp, dst, iov, iovcnt, owned, probe_on_fault);
    return 0;
}

static int xmit(struct efasim_qp *qp, const struct sockaddr_in *dst, struct iovec *iov, int iovcnt,
                int owned, bool probe_on_fault)
{
    const struct efasim_config *cfg = efasim_config();
    struct efasim_context *ctx = qp->ctx;
    int ret;

    if (ctx->hwc) {
        size_t len = 0;

        for (int i = 0; i < iovcnt; i++)
            len += iov[i].iov_len;
        efasim_hw_count(&ctx->hwc->tx_pkts, &ctx->hwc->tx_bytes, len);
    }
    if (!cfg->loss && !cfg->dup && !cfg->reorder && !cfg->delay)
        return out_send(qp, dst, iov, iovcnt, owned, probe_on_fault);
    pthread_mutex_lock(&ctx->fault_lock);
    ret = xmit_faulty(qp, dst, iov, iovcnt, owned, probe_on_fault);
    pthread_mutex_unlock(&ctx->fault_lock);
    return ret;
}

int efasim_xmit(struct efasim_qp *qp, const struct sockaddr_in *dst, struct iovec *iov, int iovcnt)
{
    return xmit(qp, dst, iov, iovcnt, -1, false);
}

int efasim_xmit_batched(struct efasim_qp *qp, const struct sockaddr_in *dst, struct iovec *iov,
                        int iovcnt, int owned, bool probe_on_fault)
{
    return xmit(qp, dst, iov, iovcnt, owned, probe_on_fault);
}
