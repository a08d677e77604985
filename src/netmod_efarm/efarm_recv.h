/*
 * Native point-to-point receives: a tagged efarm receive on (context,
 * source, tag), with MPI_ANY_SOURCE and MPI_ANY_TAG as the engine's
 * wildcards. The engine's matcher keeps MPI's order (non-overtaking per
 * sender, wildcards in posting order).
 *
 * A noncontiguous datatype receives into a packed buffer and unpacks when the
 * message is complete. A message longer than the buffer is truncated by the
 * engine (it writes only what fits, and still runs its protocol to the end);
 * the status then carries MPI_ERR_TRUNCATE.
 *
 * With MPICH's shared-memory module built, an MPI_ANY_SOURCE receive is
 * posted to both modules as a pair of "partner" requests (ch4_recv.h). The
 * one that matches first cancels the other (MPIDI_anysrc_try_cancel_partner);
 * when efarm matches from its unexpected queue while ch4 is still posting
 * (inside efarm_trecv), ch4 sorts out the pair itself.
 */
#ifndef EFARM_RECV_H_INCLUDED
#define EFARM_RECV_H_INCLUDED

#include "efarm_impl.h"
#include "efarm_p2p.h"

/* The engine finished a receive (the head, if the message is striped). */
MPL_STATIC_INLINE_PREFIX void MPIDI_EFARM_recv_done(struct efarm_req *ereq)
{
    MPIR_Request *rreq = ereq->ctx;

    if (unlikely(ereq->has_cq_data && (ereq->cq_data & MPIDI_EFARM_STRIPE_FLAG) &&
                 ereq->status != -ECANCELED)) {
        MPIDI_EFARM_stripe_recv_head(rreq);
        return;
    }
    MPIDI_EFARM_recv_finish(rreq, ereq->status, ereq->length, ereq->msg_length, false);
}

/*
 * Prepare rreq's netmod part for a receive of count x datatype at buf:
 * *recv_buf_p and *len_p are what the engine receives into.
 */
MPL_STATIC_INLINE_PREFIX int MPIDI_EFARM_recv_prepare(MPIR_Request *rreq, void *buf, MPI_Aint count,
                                                      MPI_Datatype datatype, void **recv_buf_p,
                                                      uint64_t *len_p)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_EFARM_request_t *r = &MPIDI_EFARM_REQ(rreq);
    int dt_contig;
    MPI_Aint data_sz, dt_true_lb;
    MPIR_Datatype *dt_ptr;

    r->pack_buf = NULL;
    r->stripe = NULL;
    r->posting = false;
    MPIDI_Datatype_get_info(count, datatype, dt_contig, data_sz, dt_ptr, dt_true_lb);
    if (dt_contig) {
        *recv_buf_p = MPIR_get_contig_ptr(buf, dt_true_lb);
    } else {
        r->pack_buf = MPL_malloc(data_sz > 0 ? data_sz : 1, MPL_MEM_BUFFER);
        MPIR_ERR_CHKANDJUMP1(r->pack_buf == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem", "**nomem %s",
                             "efarm receive pack buffer");
        r->user_buf = buf;
        r->user_count = count;
        r->user_dt = datatype;
        MPIR_Datatype_add_ref_if_not_builtin(datatype);
        *recv_buf_p = r->pack_buf;
    }
    *len_p = (uint64_t)data_sz;
    r->ereq.cb = MPIDI_EFARM_recv_done;
    r->ereq.ctx = rreq;

fn_exit:
    return mpi_errno;
fn_fail:
    goto fn_exit;
}

MPL_STATIC_INLINE_PREFIX void MPIDI_EFARM_recv_unprepare(MPIR_Request *rreq)
{
    MPIDI_EFARM_request_t *r = &MPIDI_EFARM_REQ(rreq);

    if (r->pack_buf) {
        MPL_free(r->pack_buf);
        r->pack_buf = NULL;
        MPIR_Datatype_release_if_not_builtin(r->user_dt);
    }
}

MPL_STATIC_INLINE_PREFIX int
MPIDI_EFARM_irecv_locked(void *buf, MPI_Aint count, MPI_Datatype datatype, int rank, int tag,
                         MPIR_Comm *comm, int attr, MPIDI_av_entry_t *addr, MPIR_Request **request,
                         MPIR_Request *partner, int vci)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Request *rreq = *request;
    bool created = false;
    void *recv_buf;
    uint64_t len;
    unsigned long waits = 0;
    MPIDI_EFARM_vci_t *v = MPIDI_EFARM_VCI(vci);
    int ret;

    MPIR_FUNC_ENTER;
    (void)addr; /* NULL for MPI_ANY_SOURCE; the rank is the match key */
#if MPIDI_EFARM_RELEASE_LATER
    if (unlikely(v->release_later))
        MPIDI_EFARM_release_drain(v); /* at most one any-source pair waits (efarm_p2p.h) */
#endif

    if (rreq == NULL) {
        MPIDI_CH4_REQUEST_CREATE(rreq, MPIR_REQUEST_KIND__RECV, vci, 2);
        MPIR_ERR_CHKANDSTMT(rreq == NULL, mpi_errno, MPIX_ERR_NOREQ, goto fn_fail, "**nomemreq");
        created = true;
    } else {
        MPIR_Request_add_ref(rreq);
    }
    rreq->status.MPI_SOURCE = MPI_UNDEFINED;
    if (rreq->comm == NULL) {
        rreq->comm = comm;
        MPIR_Comm_add_ref(comm);
    }
    mpi_errno = MPIDI_EFARM_recv_prepare(rreq, buf, count, datatype, &recv_buf, &len);
    MPIR_ERR_CHECK(mpi_errno);
    MPIDI_REQUEST_SET_LOCAL(rreq, 0, partner);
    *request = rreq;
    MPIDI_EFARM_REQ(rreq).vci = (uint8_t)vci;

    MPIDI_EFARM_REQ(rreq).posting = true;
    while (
        (ret = efarm_trecv(v->ep, recv_buf, len,
                           (uint32_t)(comm->recvcontext_id + MPIDI_EFARM_ATTR_CONTEXT_OFFSET(attr)),
                           rank == MPI_ANY_SOURCE ? EFARM_ANY_SOURCE : rank,
                           tag == MPI_ANY_TAG ? EFARM_ANY_TAG : tag,
                           &MPIDI_EFARM_REQ(rreq).ereq)) == -EAGAIN) {
        mpi_errno = MPIDI_EFARM_wait_for_slot(v, &waits);
        if (mpi_errno)
            break;
    }
    MPIDI_EFARM_REQ(rreq).posting = false;
    MPIR_ERR_CHECK(mpi_errno);
    if (unlikely(ret < 0)) {
        mpi_errno = MPIDI_EFARM_ERROR(ret, "efarm_trecv");
        goto fn_fail;
    }

fn_exit:
    MPIR_FUNC_EXIT;
    return mpi_errno;
fn_fail:
    if (rreq) {
        MPIDI_EFARM_recv_unprepare(rreq);
        if (created)
            MPIDI_CH4_REQUEST_FREE(rreq);
        MPIDI_CH4_REQUEST_FREE(rreq);
        *request = NULL;
    }
    goto fn_exit;
}

/*
 * On the receive's VCI (MPIDI_EFARM_RECV_VCI), under its lock
 * (MPIDI_EFARM_VCI_ENTER), but for ch4's any-source receive with shared
 * memory (a partner request): ch4 holds that VCI's lock then (the shared-memory
 * module chooses it as efarm does).
 */
MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_irecv(void *buf, MPI_Aint count, MPI_Datatype datatype,
                                                int rank, int tag, MPIR_Comm *comm, int attr,
                                                MPIDI_av_entry_t *addr, MPIR_Request **request,
                                                MPIR_Request *partner)
{
    int mpi_errno, vci;

    MPIDI_EFARM_RECV_VCI(comm, attr, rank, tag, vci);
    if (partner)
        return MPIDI_EFARM_irecv_locked(buf, count, datatype, rank, tag, comm, attr, addr, request,
                                        partner, vci);
    MPIDI_EFARM_VCI_ENTER(vci);
    mpi_errno = MPIDI_EFARM_irecv_locked(buf, count, datatype, rank, tag, comm, attr, addr, request,
                                         partner, vci);
    MPIDI_EFARM_VCI_EXIT(vci);
    return mpi_errno;
}

/* Receive a message claimed by MPI_Mprobe/MPI_Improbe into buf. */
MPL_STATIC_INLINE_PREFIX int MPIDI_EFARM_imrecv_locked(void *buf, MPI_Aint count,
                                                       MPI_Datatype datatype, MPIR_Request *message)
{
    int mpi_errno = MPI_SUCCESS;
    efarm_tm_handle_t handle = MPIDI_EFARM_REQ(message).mprobe_handle;
    void *recv_buf;
    uint64_t len;
    unsigned long waits = 0;
    MPIDI_EFARM_vci_t *v = MPIDI_EFARM_REQ_VCI(message); /* where the message was claimed */
    int ret;

    MPIR_FUNC_ENTER;

    mpi_errno = MPIDI_EFARM_recv_prepare(message, buf, count, datatype, &recv_buf, &len);
    MPIR_ERR_CHECK(mpi_errno);
    MPIDI_REQUEST_SET_LOCAL(message, 0, NULL);
    MPIDI_EFARM_REQ(message).posting = true; /* no partner; skip the pair logic */
    while ((ret = efarm_tmrecv(v->ep, handle, recv_buf, len, &MPIDI_EFARM_REQ(message).ereq)) ==
           -EAGAIN) {
        mpi_errno = MPIDI_EFARM_wait_for_slot(v, &waits);
        if (mpi_errno)
            break;
    }
    MPIR_ERR_CHECK(mpi_errno);
    if (unlikely(ret < 0)) {
        MPIDI_EFARM_recv_unprepare(message);
        mpi_errno = MPIDI_EFARM_ERROR(ret, "efarm_tmrecv");
        goto fn_fail;
    }

fn_exit:
    MPIR_FUNC_EXIT;
    return mpi_errno;
fn_fail:
    goto fn_exit;
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_imrecv(void *buf, MPI_Aint count, MPI_Datatype datatype,
                                                 MPIR_Request *message)
{
    int mpi_errno;

    MPIDI_EFARM_VCI_ENTER(MPIDI_EFARM_REQ(message).vci);
    mpi_errno = MPIDI_EFARM_imrecv_locked(buf, count, datatype, message);
    MPIDI_EFARM_VCI_EXIT(MPIDI_EFARM_REQ(message).vci);
    return mpi_errno;
}

/*
 * Cancel a receive that has not matched: the engine completes it as
 * cancelled (MPIDI_EFARM_recv_done sets the cancel bit). A receive that has
 * matched completes normally and the cancel has no effect.
 */
MPL_STATIC_INLINE_PREFIX int
MPIDI_NM_mpi_cancel_recv(MPIR_Request *rreq MPIDI_EFARM_CANCEL_RECV_PARAMS)
{
    int ret;

    MPIDI_EFARM_CANCEL_RECV_UNUSED();
    if (MPIR_Request_is_complete(rreq))
        return MPI_SUCCESS;
    ret = efarm_cancel_recv(MPIDI_EFARM_REQ_VCI(rreq)->ep, &MPIDI_EFARM_REQ(rreq).ereq);
    if (ret < 0 && ret != -ENOENT)
        return MPIDI_EFARM_ERROR(ret, "efarm_cancel_recv");
    return MPI_SUCCESS;
}

#endif /* EFARM_RECV_H_INCLUDED */
