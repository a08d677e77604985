/*
 * MPI_Iprobe and MPI_Improbe: ask the engine's matcher for an unexpected
 * tagged message on (context, source, tag). A matched probe claims the
 * message (the engine takes it out of matching) and keeps its handle in the
 * message request for MPI_Imrecv. ch4 polls progress between unsuccessful
 * probes; MPI_PROC_NULL never reaches the netmod. A striped message's head
 * reports the whole message's length (efarm_stripe.c).
 */
#ifndef EFARM_PROBE_H_INCLUDED
#define EFARM_PROBE_H_INCLUDED

#include "efarm_impl.h"

MPL_STATIC_INLINE_PREFIX int MPIDI_EFARM_probe_locked(int source, int tag, MPIR_Comm *comm,
                                                      int context_offset, int *flag,
                                                      MPIR_Request **message, MPI_Status *status,
                                                      int vci)
{
    int mpi_errno = MPI_SUCCESS;
    struct efarm_probe_info info;
    int ret;

    ret = efarm_tprobe(MPIDI_EFARM_VCI(vci)->ep, (uint32_t)(comm->recvcontext_id + context_offset),
                       source == MPI_ANY_SOURCE ? EFARM_ANY_SOURCE : source,
                       tag == MPI_ANY_TAG ? EFARM_ANY_TAG : tag, message != NULL, &info);
    if (unlikely(ret < 0)) {
        mpi_errno = MPIDI_EFARM_ERROR(ret, "efarm_tprobe");
        goto fn_fail;
    }
    *flag = ret;
    if (!ret)
        goto fn_exit;
    /* A striped message's head: the count is the whole message's; the tag has MPICH's bits. */
    if (unlikely(info.has_cq_data)) {
        if (info.cq_data & MPIDI_EFARM_STRIPE_FLAG)
            info.msg_length = MPIDI_EFARM_stripe_msg_length(info.msg_length, info.cq_data);
        info.tag |= (int)(info.cq_data & (uint64_t)(uint32_t)MPIDI_EFARM_TAG_ERROR_BITS);
    }

    if (message) {
        MPIR_Request *mreq;

        MPIDI_CH4_REQUEST_CREATE(mreq, MPIR_REQUEST_KIND__MPROBE, vci, 2);
        MPIR_ERR_CHKANDSTMT(mreq == NULL, mpi_errno, MPIX_ERR_NOREQ, goto fn_fail, "**nomemreq");
        mreq->comm = comm;
        MPIR_Comm_add_ref(comm);
        mreq->status.MPI_SOURCE = info.source;
        mreq->status.MPI_TAG = info.tag;
        MPIR_STATUS_SET_COUNT(mreq->status, (MPI_Aint)info.msg_length);
        MPIDI_EFARM_REQ(mreq).mprobe_handle = info.handle;
        MPIDI_EFARM_REQ(mreq).pack_buf = NULL;
        MPIDI_EFARM_REQ(mreq).stripe = NULL;
        MPIDI_EFARM_REQ(mreq).vci = (uint8_t)vci;
        *message = mreq;
    }
    /* A probe's status leaves MPI_ERROR as the caller had it. */
    if (status != MPI_STATUS_IGNORE) {
        status->MPI_SOURCE = info.source;
        status->MPI_TAG = info.tag;
        MPIR_STATUS_SET_COUNT(*status, (MPI_Aint)info.msg_length);
        MPIR_STATUS_SET_CANCEL_BIT(*status, FALSE);
    }

fn_exit:
    return mpi_errno;
fn_fail:
    goto fn_exit;
}

/* Probes, on the VCI a receive would use, under its lock (MPIDI_EFARM_VCI_ENTER). */
MPL_STATIC_INLINE_PREFIX int MPIDI_EFARM_probe(int source, int tag, MPIR_Comm *comm, int attr,
                                               int *flag, MPIR_Request **message,
                                               MPI_Status *status)
{
    int mpi_errno, vci;

    MPIDI_EFARM_RECV_VCI(comm, attr, source, tag, vci);
    MPIDI_EFARM_VCI_ENTER(vci);
    mpi_errno = MPIDI_EFARM_probe_locked(source, tag, comm, MPIDI_EFARM_ATTR_CONTEXT_OFFSET(attr),
                                         flag, message, status, vci);
    MPIDI_EFARM_VCI_EXIT(vci);
    return mpi_errno;
}

/* attr: MPICH 4.3's attribute word, MPICH 4.0's context offset (efarm_compat.h). */
MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_iprobe(int source, int tag, MPIR_Comm *comm, int attr,
                                                 MPIDI_av_entry_t *addr, int *flag,
                                                 MPI_Status *status)
{
    (void)addr;
    return MPIDI_EFARM_probe(source, tag, comm, attr, flag, NULL, status);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_improbe(int source, int tag, MPIR_Comm *comm, int attr,
                                                  MPIDI_av_entry_t *addr, int *flag,
                                                  MPIR_Request **message, MPI_Status *status)
{
    (void)addr;
    return MPIDI_EFARM_probe(source, tag, comm, attr, flag, message, status);
}

#endif /* EFARM_PROBE_H_INCLUDED */
