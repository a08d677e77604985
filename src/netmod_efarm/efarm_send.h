/*
 * Native point-to-point sends: one tagged efarm message per MPI message.
 *
 * The wire tag is (context, source, tag) (efarm_proto.h): context is the
 * communicator's context id plus MPICH's offset (point-to-point or
 * collective traffic), source the sender's rank in the communicator, tag the
 * MPI tag without MPICH's two error bits, which ride in CQ data when set.
 * The engine picks eager, medium, long-CTS, long-read or runting read by
 * size. MPI_Ssend asks for delivery complete: the receiver's RECEIPT (or EOR
 * after an RDMA read) comes only once the message has matched a receive and
 * its data is in the user's buffer, which is what a synchronous send needs.
 *
 * Standard sends complete as soon as their data is in send packets
 * (EFARM_SEND_INJECT: eager and medium sizes at once), as MPI allows once the
 * buffer is free, instead of when the peer's device acknowledges them. One
 * that fits one eager packet goes through efarm_tsend_now() without a
 * request of its own: the caller gets MPICH's pre-completed send request.
 *
 * A noncontiguous datatype is packed into one buffer first: the engine sends
 * from one contiguous buffer, told by EFARM_SEND_TEMP_BUF that it is a
 * temporary (subprotocol selection then counts a read protocol's registration).
 * MPI_Ssend is EFARM_SEND_DC. Every send carries its communicator's hints
 * (MPIDI_EFARM_send_hints: its size as the receiver's fan-in, the info keys
 * efarm_fanin and efarm_protocol). Persistent requests cannot be told apart
 * here (ch4 starts them as plain isends); their reused buffers stay in the
 * registration cache, which the selection asks.
 *
 * MPI_PROC_NULL, sends to self on a size-1 communicator, and rsend/bsend/
 * persistent requests are handled by ch4 and MPICH above this layer, which
 * end in mpi_isend (and, with MPICH 4.0, mpi_issend and isend_coll).
 */
#ifndef EFARM_SEND_H_INCLUDED
#define EFARM_SEND_H_INCLUDED

#include "efarm_impl.h"
#include "efarm_p2p.h"

/*
 * The eager fast path: a standard send that goes at once as one eager packet
 * needs no request of its own: MPICH's pre-completed one stands for it, as for
 * ch4:ofi's injected sends. Returns 0 when sent (*request set), 1 when the
 * engine wants a request after all (the general path), or the engine's error.
 */
MPL_STATIC_INLINE_PREFIX int MPIDI_EFARM_send_inject(MPIDI_EFARM_vci_t *v, efarm_peer_t peer,
                                                     const void *buf, uint64_t len,
                                                     uint32_t context, int src_rank, int tag,
                                                     uint32_t flags, MPIR_Request **request)
{
    int ret = efarm_tsend_now(v->ep, peer, buf, len, context, src_rank, tag, flags);

    if (ret == 0) {
        *request = MPIR_Request_create_complete(MPIR_REQUEST_KIND__SEND);
        v->nm_counters.send_msgs++;
        v->nm_counters.send_bytes += (unsigned long long)len;
    }
    return ret;
}

/*
 * A noncontiguous datatype packed into one buffer of the request's own (freed
 * when it completes, or by the caller's failure path). Returns the buffer to
 * send, or NULL with *mpi_errno_p set.
 */
MPL_STATIC_INLINE_PREFIX const void *MPIDI_EFARM_send_pack(MPIR_Request *sreq, const void *buf,
                                                           MPI_Aint count, MPI_Datatype datatype,
                                                           MPI_Aint data_sz, int *mpi_errno_p)
{
    MPI_Aint packed;
    void *pack_buf = MPL_malloc(data_sz > 0 ? data_sz : 1, MPL_MEM_BUFFER);

    if (pack_buf == NULL) {
        MPIR_ERR_SET1(*mpi_errno_p, MPI_ERR_OTHER, "**nomem", "**nomem %s",
                      "efarm send pack buffer");
        return NULL;
    }
    *mpi_errno_p = MPIR_Typerep_pack(buf, count, datatype, 0, pack_buf, data_sz,
                                     &packed MPIDI_EFARM_TYPEREP_FLAGS);
    if (*mpi_errno_p) {
        MPL_free(pack_buf);
        return NULL;
    }
    MPIR_Assert(packed == data_sz);
    MPIDI_EFARM_REQ(sreq).pack_buf = pack_buf;
    return pack_buf;
}

/*
 * The general path's send of one contiguous buffer for request sreq: through
 * the engine (waiting for an operation slot if it has none), completing sreq
 * by MPIDI_EFARM_send_done. Returns an MPI error code.
 */
MPL_STATIC_INLINE_PREFIX int MPIDI_EFARM_send_post(MPIDI_EFARM_vci_t *v, efarm_peer_t peer,
                                                   MPIR_Request *sreq, const void *send_buf,
                                                   uint64_t len, uint32_t context, int src_rank,
                                                   int tag, uint32_t flags, uint64_t cq_data)
{
    struct efarm_req *ereq = &MPIDI_EFARM_REQ(sreq).ereq;
    int mpi_errno = MPI_SUCCESS;
    int ret;

    ereq->cb = MPIDI_EFARM_send_done;
    ereq->ctx = sreq;
    ret = MPIDI_EFARM_tsend_wait(v, v->ep, peer, send_buf, len, context, src_rank, tag, flags,
                                 cq_data, ereq, &mpi_errno);
    if (mpi_errno)
        return mpi_errno;
    if (unlikely(ret < 0))
        return MPIDI_EFARM_ERROR(ret, "efarm_tsend");
    v->nm_counters.send_msgs++;
    v->nm_counters.send_bytes += (unsigned long long)len;
    return MPI_SUCCESS;
}

/* A send from VCI vci_src's endpoint to the receiver's VCI vci_dst, under vci_src's lock. */
MPL_STATIC_INLINE_PREFIX int MPIDI_EFARM_send_locked(const void *buf, MPI_Aint count,
                                                     MPI_Datatype datatype, int rank, int tag,
                                                     MPIR_Comm *comm, int context_offset,
                                                     MPIDI_av_entry_t *addr, MPIR_Request **request,
                                                     uint32_t flags, int vci_src, int vci_dst)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Request *sreq = NULL;
    int dt_contig;
    MPI_Aint data_sz, dt_true_lb;
    MPIR_Datatype *dt_ptr;
    const void *send_buf;
    uint64_t cq_data = 0;
    MPIDI_EFARM_vci_t *v = MPIDI_EFARM_VCI(vci_src);
    efarm_peer_t peer = MPIDI_EFARM_vci_peer(vci_src, addr, comm, rank, vci_dst);
    uint32_t context = (uint32_t)(comm->context_id + context_offset);
    bool stripe;

    MPIR_FUNC_ENTER;

    MPIR_ERR_CHKANDJUMP2(peer == EFARM_PEER_NONE, mpi_errno, MPI_ERR_OTHER, "**efarm_vci_pair",
                         "**efarm_vci_pair %d %d", vci_src, vci_dst);
    MPIDI_Datatype_get_info(count, datatype, dt_contig, data_sz, dt_ptr, dt_true_lb);
    /* Striping is VCI 0's (its rails). */
    stripe = (vci_src | vci_dst) == 0 && MPIDI_EFARM_stripe_to(addr, (uint64_t)data_sz);
    /*
     * Of the communicator's hints only a forced subprotocol (efarm_protocol)
     * can change what an injected eager message does, and it takes the general
     * path: the policy sends everything that fits one eager packet as eager
     * whatever the fan-in.
     */
    if (likely(flags == EFARM_SEND_INJECT && dt_contig && !(tag & MPIDI_EFARM_TAG_ERROR_BITS) &&
               comm->hints[MPIDI_EFARM_global.hint_proto] <= 0 && !stripe)) {
        int ret =
            MPIDI_EFARM_send_inject(v, peer, MPIR_get_contig_ptr(buf, dt_true_lb),
                                    (uint64_t)data_sz, context, comm->rank, tag, flags, request);

        if (ret == 0)
            goto fn_exit;
        if (unlikely(ret < 0)) {
            mpi_errno = MPIDI_EFARM_ERROR(ret, "efarm_tsend");
            goto fn_fail;
        }
    }

    MPIDI_CH4_REQUEST_CREATE(sreq, MPIR_REQUEST_KIND__SEND, vci_src, 2);
    MPIR_ERR_CHKANDSTMT(sreq == NULL, mpi_errno, MPIX_ERR_NOREQ, goto fn_fail, "**nomemreq");
    *request = sreq;
    MPIDI_EFARM_REQ(sreq).pack_buf = NULL;
    MPIDI_EFARM_REQ(sreq).vci = (uint8_t)vci_src;

    if (dt_contig) {
        send_buf = MPIR_get_contig_ptr(buf, dt_true_lb);
    } else {
        send_buf = MPIDI_EFARM_send_pack(sreq, buf, count, datatype, data_sz, &mpi_errno);
        if (send_buf == NULL)
            goto fn_fail;
        flags |= EFARM_SEND_TEMP_BUF; /* a read protocol would register it for this send alone */
    }

    if (unlikely(tag & MPIDI_EFARM_TAG_ERROR_BITS)) {
        cq_data = (uint64_t)(uint32_t)(tag & MPIDI_EFARM_TAG_ERROR_BITS);
        tag &= ~MPIDI_EFARM_TAG_ERROR_BITS;
        flags |= EFARM_SEND_CQ_DATA;
    }

    flags |= MPIDI_EFARM_send_hints(comm);
    if (stripe)
        mpi_errno = MPIDI_EFARM_stripe_send(sreq, send_buf, (uint64_t)data_sz, context, comm->rank,
                                            tag, flags, cq_data, addr);
    else
        mpi_errno = MPIDI_EFARM_send_post(v, peer, sreq, send_buf, (uint64_t)data_sz, context,
                                          comm->rank, tag, flags, cq_data);
    MPIR_ERR_CHECK(mpi_errno);

fn_exit:
    MPIR_FUNC_EXIT;
    return mpi_errno;
fn_fail:
    if (sreq) {
        MPL_free(MPIDI_EFARM_REQ(sreq).pack_buf);
        MPIDI_EFARM_REQ(sreq).pack_buf = NULL;
        /* Both references: nothing will complete it. */
        MPIDI_CH4_REQUEST_FREE(sreq);
        MPIDI_CH4_REQUEST_FREE(sreq);
        *request = NULL;
    }
    goto fn_exit;
}

/* Every send: under its source VCI's lock (MPIDI_EFARM_VCI_ENTER). */
MPL_STATIC_INLINE_PREFIX int MPIDI_EFARM_send(const void *buf, MPI_Aint count,
                                              MPI_Datatype datatype, int rank, int tag,
                                              MPIR_Comm *comm, int context_offset,
                                              MPIDI_av_entry_t *addr, MPIR_Request **request,
                                              uint32_t flags, int vci_src, int vci_dst)
{
    int mpi_errno;

    MPIDI_EFARM_VCI_ENTER(vci_src);
    mpi_errno = MPIDI_EFARM_send_locked(buf, count, datatype, rank, tag, comm, context_offset, addr,
                                        request, flags, vci_src, vci_dst);
    MPIDI_EFARM_VCI_EXIT(vci_src);
    return mpi_errno;
}

/*
 * A collective's send after an earlier failure: MPICH's error flag goes into
 * the tag's error bits (no-ops when this MPICH has none, efarm_compat.h).
 */
MPL_STATIC_INLINE_PREFIX int MPIDI_EFARM_tag_errflag(int tag, MPIDI_EFARM_errflag_t errflag)
{
    if (errflag == MPIDI_EFARM_ERRFLAG_NONE)
        return tag;
    if (errflag == MPIDI_EFARM_ERRFLAG_PROC_FAILED)
        MPIR_TAG_SET_PROC_FAILURE_BIT(tag);
    else
        MPIR_TAG_SET_ERROR_BIT(tag);
    return tag;
}

/*
 * attr: MPICH 4.3's attribute word (context offset, synchronous and error
 * flags), MPICH 4.0's context offset (efarm_compat.h).
 */
MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_isend(const void *buf, MPI_Aint count,
                                                MPI_Datatype datatype, int rank, int tag,
                                                MPIR_Comm *comm, int attr, MPIDI_av_entry_t *addr,
                                                MPIR_Request **request)
{
    int vci_src, vci_dst;

    MPIDI_EFARM_SEND_VCIS(comm, attr, rank, tag, vci_src, vci_dst);
    return MPIDI_EFARM_send(
        buf, count, datatype, rank, MPIDI_EFARM_tag_errflag(tag, MPIDI_EFARM_ATTR_ERRFLAG(attr)),
        comm, MPIDI_EFARM_ATTR_CONTEXT_OFFSET(attr), addr, request,
        MPIDI_EFARM_ATTR_SYNC(attr) ? EFARM_SEND_DC : EFARM_SEND_INJECT, vci_src, vci_dst);
}

#if !MPIDI_EFARM_MPICH_43
/* MPICH 4.0 only: 4.3 sends these through mpi_isend with flags in attr. */
MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_issend(const void *buf, MPI_Aint count,
                                                 MPI_Datatype datatype, int rank, int tag,
                                                 MPIR_Comm *comm, int context_offset,
                                                 MPIDI_av_entry_t *addr, MPIR_Request **request)
{
    return MPIDI_EFARM_send(buf, count, datatype, rank, tag, comm, context_offset, addr, request,
                            EFARM_SEND_DC, 0, 0);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_isend_coll(const void *buf, MPI_Aint count,
                                                 MPI_Datatype datatype, int rank, int tag,
                                                 MPIR_Comm *comm, int context_offset,
                                                 MPIDI_av_entry_t *addr, MPIR_Request **request,
                                                 MPIR_Errflag_t *errflag)
{
    return MPIDI_EFARM_send(buf, count, datatype, rank, MPIDI_EFARM_tag_errflag(tag, *errflag),
                            comm, context_offset, addr, request, EFARM_SEND_INJECT, 0, 0);
}
#endif

/*
 * Cancelling a send is not supported (MPI allows a cancel to fail; MPI 4.0
 * deprecates it): the send completes normally and MPI_Test_cancelled says
 * false.
 */
MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_cancel_send(MPIR_Request *sreq)
{
    (void)sreq;
    return MPI_SUCCESS;
}

#endif /* EFARM_SEND_H_INCLUDED */
