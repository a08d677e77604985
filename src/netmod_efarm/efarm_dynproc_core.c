/*
 * Dynamic processes over efarm without MPICH: upids and the bootstrap
 * exchange in the reserved match space (efarm_dynproc.h says what and why).
 *
 * This file is the version-independent core: MPICH 4.0/4.3's hooks
 * (efarm_dynproc.c) call it, MPICH 5.0's (insert_upid, dynamic_send,
 * dynamic_sendrecv, called with the VCI lock held) are meant to call it
 * unchanged, passing a progress callback that yields the lock. It includes
 * no MPICH header: the unit tests build it alone.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "efarm_dynproc.h"

/* Offsets in the raw address (protocol v4 section 1.4; efarm_proto_v4.h's efarm_wire_raw_addr). */
#define RAW_GID_LEN      16u
#define RAW_PAD_OFF      18u
#define RAW_PAD_LEN      2u
#define RAW_RESERVED_OFF 24u
#define RAW_RESERVED_LEN 8u

_Static_assert(EFARM_RAW_ADDR_LEN == RAW_RESERVED_OFF + RAW_RESERVED_LEN, "raw address layout");
_Static_assert(MPIDI_EFARM_UPID_LEN == 36, "upid length (doc/NETMOD.md)");

void MPIDI_EFARM_upid_encode(const uint8_t raw[EFARM_RAW_ADDR_LEN],
                             uint8_t upid[MPIDI_EFARM_UPID_LEN])
{
    upid[0] = MPIDI_EFARM_UPID_MAGIC0;
    upid[1] = MPIDI_EFARM_UPID_MAGIC1;
    upid[2] = MPIDI_EFARM_UPID_VERSION;
    upid[3] = 0;
    memcpy(upid + MPIDI_EFARM_UPID_HDR_LEN, raw, EFARM_RAW_ADDR_LEN);
}

static bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

int MPIDI_EFARM_upid_decode(const void *upid, int64_t len, uint8_t raw[EFARM_RAW_ADDR_LEN],
                            const char **why_p)
{
    const uint8_t *u = upid;
    const uint8_t *addr = u != NULL ? u + MPIDI_EFARM_UPID_HDR_LEN : NULL; /* no offset on NULL */
    const char *why = NULL;

    if (u == NULL || len < (int64_t)MPIDI_EFARM_UPID_HDR_LEN)
        why = "shorter than the 4-byte header (not an efarm upid)";
    else if (u[0] != MPIDI_EFARM_UPID_MAGIC0 || u[1] != MPIDI_EFARM_UPID_MAGIC1)
        why = "no 'EF' magic (a upid of another netmod, or not a upid)";
    else if (u[2] != MPIDI_EFARM_UPID_VERSION)
        why = "an unknown format version (this efarm reads version 1)";
    else if (u[3] != 0)
        why = "a nonzero reserved header byte";
    else if (len != (int64_t)MPIDI_EFARM_UPID_LEN)
        why = "not 36 bytes (version 1 is a header and one 32-byte raw address)";
    else if (all_zero(addr, RAW_GID_LEN))
        why = "a zero GID";
    else if (!all_zero(addr + RAW_PAD_OFF, RAW_PAD_LEN) ||
             !all_zero(addr + RAW_RESERVED_OFF, RAW_RESERVED_LEN))
        why = "nonzero padding or reserved bytes in the raw address";
    if (why) {
        *why_p = why;
        return -EINVAL;
    }
    memcpy(raw, addr, EFARM_RAW_ADDR_LEN);
    return 0;
}

int MPIDI_EFARM_dyn_peer(struct efarm_ep *ep, const uint8_t raw[EFARM_RAW_ADDR_LEN],
                         efarm_peer_t *peer_p)
{
    return efarm_av_insert(ep, raw, peer_p);
}

/* ---- The exchange ----------------------------------------------------------------------- */

/*
 * One engine operation of an exchange, on the heap with its own copy of the
 * data, so that a timed-out one can be left to the engine: its completion
 * frees it once abandoned.
 */
struct dyn_op {
    struct efarm_req req;
    struct dyn_op *next; /* in g_dyn_abandoned */
    bool abandoned;
    uint64_t cap;
    uint8_t data[];
};

/* Operations of timed-out exchanges still owned by the engine. */
static struct dyn_op *g_dyn_abandoned;
static unsigned g_dyn_abandoned_count;

static void abandoned_unlink(struct dyn_op *op)
{
    for (struct dyn_op **pp = &g_dyn_abandoned; *pp; pp = &(*pp)->next) {
        if (*pp == op) {
            *pp = op->next;
            g_dyn_abandoned_count--;
            return;
        }
    }
}

static void op_done(struct efarm_req *req)
{
    struct dyn_op *op = req->ctx;

    if (op->abandoned) {
        abandoned_unlink(op);
        free(op);
    }
}

static struct dyn_op *op_alloc(uint64_t cap)
{
    struct dyn_op *op = calloc(1, sizeof(*op) + (size_t)cap);

    if (op) {
        op->cap = cap;
        op->req.cb = op_done;
        op->req.ctx = op;
    }
    return op;
}

/* Leave op to the engine (it has not completed): its completion, or release, frees it. */
static void op_abandon(struct dyn_op *op)
{
    op->abandoned = true;
    op->next = g_dyn_abandoned;
    g_dyn_abandoned = op;
    g_dyn_abandoned_count++;
}

unsigned MPIDI_EFARM_dyn_abandoned(void)
{
    return g_dyn_abandoned_count;
}

void MPIDI_EFARM_dyn_release(void)
{
    while (g_dyn_abandoned) {
        struct dyn_op *op = g_dyn_abandoned;

        g_dyn_abandoned = op->next;
        free(op);
    }
    g_dyn_abandoned_count = 0;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool expired(const struct MPIDI_EFARM_dyn_wait *w, double start)
{
    return w->timeout_s > 0 && now_s() - start >= (double)w->timeout_s;
}

/* Start the send (from op's copy), retrying while the engine has no slot. */
static int send_start(struct efarm_ep *ep, efarm_peer_t peer, int32_t source, int32_t tag,
                      struct dyn_op *op, uint64_t len, const struct MPIDI_EFARM_dyn_wait *w,
                      double start)
{
    int ret;

    while ((ret = efarm_tsend(ep, peer, op->data, len, MPIDI_EFARM_DYN_CONTEXT, source, tag, 0, 0,
                              &op->req)) == -EAGAIN) {
        if (expired(w, start))
            return -ETIMEDOUT;
        ret = w->progress(w->arg);
        if (ret < 0)
            return ret;
    }
    return ret;
}

static int recv_start(struct efarm_ep *ep, int32_t source, int32_t tag, struct dyn_op *op,
                      const struct MPIDI_EFARM_dyn_wait *w, double start)
{
    int ret;

    while ((ret = efarm_trecv(ep, op->data, op->cap, MPIDI_EFARM_DYN_CONTEXT, source, tag,
                              &op->req)) == -EAGAIN) {
        if (expired(w, start))
            return -ETIMEDOUT;
        ret = w->progress(w->arg);
        if (ret < 0)
            return ret;
    }
    return ret;
}

/*
 * A receive the wait left before it completed (timeout or error): cancel
 * it, or, when it matched already, wait for its data (the engine fails it if
 * the sender goes away) while progress may be called. Returns false when it
 * still has not completed: then it is left to the engine.
 */
static bool recv_settle(struct efarm_ep *ep, struct dyn_op *op,
                        const struct MPIDI_EFARM_dyn_wait *w, bool can_progress)
{
    if (op->req.done || efarm_cancel_recv(ep, &op->req) == 0)
        return true;
    while (can_progress && !op->req.done)
        if (w->progress(w->arg) < 0)
            break;
    if (!op->req.done) {
        op_abandon(op);
        return false;
    }
    return true;
}

int MPIDI_EFARM_dyn_exchange(struct efarm_ep *ep, efarm_peer_t peer, int32_t tag, const void *sbuf,
                             uint64_t slen, void *rbuf, uint64_t rlen,
                             const struct MPIDI_EFARM_dyn_wait *wait,
                             struct MPIDI_EFARM_dyn_result *res_p)
{
    return MPIDI_EFARM_dyn_exchange_conv(ep, peer, MPIDI_EFARM_DYN_SOURCE, tag, sbuf, slen, rbuf,
                                         rlen, wait, res_p);
}

int MPIDI_EFARM_dyn_exchange_conv(struct efarm_ep *ep, efarm_peer_t peer, int32_t conv, int32_t tag,
                                  const void *sbuf, uint64_t slen, void *rbuf, uint64_t rlen,
                                  const struct MPIDI_EFARM_dyn_wait *wait,
                                  struct MPIDI_EFARM_dyn_result *res_p)
{
    struct MPIDI_EFARM_dyn_result res = {.sender = EFARM_PEER_NONE};
    struct dyn_op *rop = NULL, *sop = NULL;
    double start = now_s();
    int ret = 0;

    if (tag < 0 || tag > EFARM_TAG_MAX || conv < MPIDI_EFARM_DYN_CONV_MIN ||
        conv > MPIDI_EFARM_DYN_SOURCE || slen > INT32_MAX || rlen > INT32_MAX ||
        (sbuf == NULL && slen) || (!sbuf && !rbuf)) {
        res.recv_status = res.send_status = -EINVAL;
        if (res_p)
            *res_p = res;
        return -EINVAL;
    }
    if (rbuf) {
        rop = op_alloc(rlen);
        if (!rop) {
            ret = -ENOMEM;
            goto out;
        }
        ret = recv_start(ep, conv, tag, rop, wait, start);
        if (ret < 0)
            goto err_free_recv;
    }
    if (sbuf) {
        sop = op_alloc(slen);
        if (!sop) {
            ret = -ENOMEM;
            goto out;
        }
        memcpy(sop->data, sbuf, (size_t)slen);
        ret = send_start(ep, peer, conv, tag, sop, slen, wait, start);
        if (ret < 0)
            goto err_free_send;
    }
    while ((rop && !rop->req.done) || (sop && !sop->req.done)) {
        if (expired(wait, start)) {
            ret = -ETIMEDOUT;
            break;
        }
        ret = wait->progress(wait->arg);
        if (ret < 0)
            break;
        ret = 0;
    }
    goto out;

err_free_send:
    free(sop);
    sop = NULL;
    goto out;
err_free_recv:
    free(rop);
    rop = NULL;

out:
    /*
     * ret is 0, or why the wait stopped early. An operation not started ends
     * with it; a receive still pending is cancelled or, when it matched
     * already, taken if it completes (progress permitting); a send still
     * pending is abandoned to the engine.
     */
    if (rop && !rop->req.done && !recv_settle(ep, rop, wait, ret == -ETIMEDOUT))
        rop = NULL;
    if (rop) {
        res.recv_status = rop->req.status == -ECANCELED ? ret : rop->req.status;
        if (rop->req.status == 0 || rop->req.status == -EMSGSIZE) {
            res.recv_len = rop->req.msg_length;
            res.sender = rop->req.peer;
            memcpy(rbuf, rop->data, (size_t)rop->req.length);
        }
    } else if (rbuf) {
        res.recv_status = ret;
    }
    if (sop && !sop->req.done) {
        op_abandon(sop);
        sop = NULL;
        res.send_status = ret;
    } else if (sop) {
        res.send_status = sop->req.status;
    } else if (sbuf) {
        res.send_status = ret;
    }
    free(rop);
    free(sop);
    if (res_p)
        *res_p = res;
    return res.recv_status ? res.recv_status : res.send_status;
}
