/*
 * Completing point-to-point requests: what efarm_send.h and efarm_recv.h (the
 * inline API) and efarm_stripe.c (striped messages) share. Unlike those two
 * headers it defines no MPIDI_NM_* function, so a non-inline source may
 * include it.
 */
#ifndef EFARM_P2P_H_INCLUDED
#define EFARM_P2P_H_INCLUDED

#include "efarm_impl.h"

/*
 * efarm_tsend on ep, one of VCI v's endpoints, retried after polling v while
 * it has no slot (MPIDI_EFARM_wait_for_slot). Returns the engine's result;
 * *mpi_errno_p is set when polling failed (the send was not started).
 */
MPL_STATIC_INLINE_PREFIX int MPIDI_EFARM_tsend_wait(MPIDI_EFARM_vci_t *v, struct efarm_ep *ep,
                                                    efarm_peer_t peer, const void *buf,
                                                    uint64_t len, uint32_t context, int32_t source,
                                                    int32_t tag, uint32_t flags, uint64_t cq_data,
                                                    struct efarm_req *ereq, int *mpi_errno_p)
{
    unsigned long waits = 0;
    int ret;

    *mpi_errno_p = MPI_SUCCESS;
    while ((ret = efarm_tsend(ep, peer, buf, len, context, source, tag, flags, cq_data, ereq)) ==
           -EAGAIN) {
        *mpi_errno_p = MPIDI_EFARM_wait_for_slot(v, &waits);
        if (*mpi_errno_p)
            break;
    }
    return ret;
}

/* Called by the engine when a send has completed: data sent (or delivered, for DC), or failed. */
MPL_STATIC_INLINE_PREFIX void MPIDI_EFARM_send_done(struct efarm_req *ereq)
{
    MPIR_Request *sreq = ereq->ctx;

    if (unlikely(ereq->status < 0))
        sreq->status.MPI_ERROR = MPIDI_EFARM_ERROR(ereq->status, "send");
    if (MPIDI_EFARM_REQ(sreq).pack_buf) {
        MPL_free(MPIDI_EFARM_REQ(sreq).pack_buf);
        MPIDI_EFARM_REQ(sreq).pack_buf = NULL;
        MPIDI_EFARM_REQ(sreq).stripe = NULL;
    }
    MPIDI_EFARM_request_complete(sreq);
}

/*
 * With MPICH's shared-memory module an any-source receive is a pair of
 * requests (ch4_recv.h): when efarm matches, the shared-memory partner is
 * cancelled (MPIDI_anysrc_try_cancel_partner; it cannot have matched), and
 * when efarm's request completes the partner is completed with its status
 * and freed (MPIDI_anysrc_free_partner). A request that completes while
 * efarm_trecv posts it (posting) is ch4's to sort out with MPICH 4.0, which
 * looks at the netmod request once it is posted. MPICH 4.3's ch4 does not:
 * it links the pair when the netmod request still names its partner, and
 * otherwise never looks at it again. So there efarm pairs them off at once,
 * as for a later match, and keeps the netmod request alive until the next
 * receive or progress call (its VCI's release_later), since ch4
 * reads it on return; MPI_Finalize drops the last one before MPICH counts
 * the references to its communicators (MPIDI_EFARM_release_at_finalize).
 * MPICH 5.0's ch4 links the pair both ways when the netmod names the partner
 * (MPIDI_REQUEST_SET_LOCAL) and never reads the netmod request after posting:
 * there efarm pairs them off at once and releases the request at once.
 */
MPL_STATIC_INLINE_PREFIX void MPIDI_EFARM_recv_cancel_partner(MPIR_Request *rreq)
{
#ifndef MPIDI_CH4_DIRECT_NETMOD
    if (!MPIDI_EFARM_REQ(rreq).posting || MPIDI_EFARM_MPICH_43) {
        int is_cancelled;

        MPIDI_anysrc_try_cancel_partner(rreq, &is_cancelled);
        MPIR_Assert(is_cancelled);
    }
#else
    (void)rreq;
#endif
}

/*
 * Complete a receive whose every part is done: status (source and tag from
 * the engine request that matched, length delivered and sent, the first
 * error), unpack, complete. partner_cancelled: the any-source partner was
 * cancelled when the message matched (a striped message's head).
 */
MPL_STATIC_INLINE_PREFIX void MPIDI_EFARM_recv_finish(MPIR_Request *rreq, int status,
                                                      uint64_t length, uint64_t msg_length,
                                                      bool partner_cancelled)
{
    MPIDI_EFARM_request_t *r = &MPIDI_EFARM_REQ(rreq);
    const struct efarm_req *ereq = &r->ereq;
    bool release_later = false;

    if (unlikely(status == -ECANCELED)) {
        MPIR_STATUS_SET_CANCEL_BIT(rreq->status, TRUE);
        MPIR_STATUS_SET_COUNT(rreq->status, 0);
    } else {
        int tag = ereq->tag;

        if (unlikely(ereq->has_cq_data))
            tag |= (int)(ereq->cq_data & (uint64_t)(uint32_t)MPIDI_EFARM_TAG_ERROR_BITS);
        rreq->status.MPI_SOURCE = ereq->source;
        rreq->status.MPI_TAG = tag;
        MPIR_STATUS_SET_COUNT(rreq->status, (MPI_Aint)length);
        if (status == -EMSGSIZE) {
            rreq->status.MPI_ERROR =
                MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                     MPI_ERR_TRUNCATE, "**truncate", "**truncate %d %d %d %d",
                                     ereq->source, ereq->tag, (int)msg_length, (int)ereq->buf_len);
        } else if (unlikely(status < 0)) {
            rreq->status.MPI_ERROR = MPIDI_EFARM_ERROR(status, "receive");
        }
        if (r->pack_buf && length > 0) {
            MPI_Aint unpacked = 0;
            int err = MPIR_Typerep_unpack(r->pack_buf, (MPI_Aint)length, r->user_buf, r->user_count,
                                          r->user_dt, 0, &unpacked MPIDI_EFARM_TYPEREP_FLAGS);
            if ((err || unpacked != (MPI_Aint)length) && !rreq->status.MPI_ERROR)
                rreq->status.MPI_ERROR =
                    MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                         MPI_ERR_TYPE, "**dtypemismatch", 0);
        }
        MPIDI_EFARM_REQ_VCI(rreq)->nm_counters.recv_msgs++;
        MPIDI_EFARM_REQ_VCI(rreq)->nm_counters.recv_bytes += length;
#ifndef MPIDI_CH4_DIRECT_NETMOD
        /* With MPICH 4.3 and 5.0, a pair that completed while posting too (see above). */
        bool pair_now =
            !r->posting || (MPIDI_EFARM_MPICH_43 && MPIDI_EFARM_ANYSRC_PARTNER(rreq) != NULL);

        release_later = MPIDI_EFARM_RELEASE_LATER && r->posting && pair_now;
        if (pair_now) {
            if (!partner_cancelled)
                MPIDI_EFARM_recv_cancel_partner(rreq);
            MPIDI_anysrc_free_partner(rreq);
        }
#else
        (void)partner_cancelled;
#endif
    }
    if (r->pack_buf) {
        MPL_free(r->pack_buf);
        r->pack_buf = NULL;
        MPIR_Datatype_release_if_not_builtin(r->user_dt);
    }
    if (unlikely(release_later)) {
        MPIDI_EFARM_vci_t *v = MPIDI_EFARM_REQ_VCI(rreq);

        r->release_next = v->release_later;
        v->release_later = rreq;
        return;
    }
    MPIDI_EFARM_request_complete(rreq);
}

/* Drop the last reference of the receives VCI v's release_later holds (progress, finalize). */
MPL_STATIC_INLINE_PREFIX void MPIDI_EFARM_release_drain(MPIDI_EFARM_vci_t *v)
{
    while (v->release_later) {
        MPIR_Request *rreq = v->release_later;

        v->release_later = MPIDI_EFARM_REQ(rreq).release_next;
        MPIDI_EFARM_request_complete(rreq);
    }
}

#endif /* EFARM_P2P_H_INCLUDED */
