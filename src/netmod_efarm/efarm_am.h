/*
 * Active messages: the transport under MPICH's generic layer (MPIDIG), which
 * carries what efarm does not do natively (RMA, partitioned communication,
 * through the fallbacks in netmod_inline.h) and MPIDIG's own control
 * messages (rendezvous, RMA synchronisation).
 *
 * Each active message is one untagged efarm message: a 16-byte efarm header
 * (handler id, MPIDIG header size, VCIs, payload size), the MPIDIG header,
 * then the payload packed. The engine carries any size (medium, long-CTS or
 * read), so am_isend takes any size too; am_check_eager tells MPIDIG to use
 * its own rendezvous above MPIDI_EFARM_AM_EAGER_LIMIT, as a receiver buffers
 * an unexpected eager payload. The machinery is in efarm_am.c.
 */
#ifndef EFARM_AM_H_INCLUDED
#define EFARM_AM_H_INCLUDED

#include "efarm_impl.h"

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_am_send_hdr(int rank, MPIR_Comm *comm, int handler_id,
                                                  const void *am_hdr, MPI_Aint am_hdr_sz,
                                                  int src_vci, int dst_vci)
{
    return MPIDI_EFARM_am_send(rank, comm, handler_id, am_hdr, am_hdr_sz, NULL, 0,
                               MPI_DATATYPE_NULL, src_vci, dst_vci, NULL);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_am_isend(int rank, MPIR_Comm *comm, int handler_id,
                                               const void *am_hdr, MPI_Aint am_hdr_sz,
                                               const void *data, MPI_Aint count,
                                               MPI_Datatype datatype, int src_vci, int dst_vci,
                                               MPIR_Request *sreq)
{
    return MPIDI_EFARM_am_send(rank, comm, handler_id, am_hdr, am_hdr_sz, data, count, datatype,
                               src_vci, dst_vci, sreq);
}

/* Replies go to the rank the incoming message names (its src_rank) in comm. */
MPL_STATIC_INLINE_PREFIX int MPIDI_NM_am_send_hdr_reply(MPIR_Comm *comm, int src_rank,
                                                        int handler_id, const void *am_hdr,
                                                        MPI_Aint am_hdr_sz, int src_vci,
                                                        int dst_vci)
{
    return MPIDI_EFARM_am_send(src_rank, comm, handler_id, am_hdr, am_hdr_sz, NULL, 0,
                               MPI_DATATYPE_NULL, src_vci, dst_vci, NULL);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_am_isend_reply(MPIR_Comm *comm, int src_rank, int handler_id,
                                                     const void *am_hdr, MPI_Aint am_hdr_sz,
                                                     const void *data, MPI_Aint count,
                                                     MPI_Datatype datatype, int src_vci,
                                                     int dst_vci, MPIR_Request *sreq)
{
    return MPIDI_EFARM_am_send(src_rank, comm, handler_id, am_hdr, am_hdr_sz, data, count, datatype,
                               src_vci, dst_vci, sreq);
}

MPL_STATIC_INLINE_PREFIX MPIDIG_recv_data_copy_cb MPIDI_NM_am_get_data_copy_cb(uint32_t attr)
{
    (void)attr;
    MPIDI_EFARM_NOT_IMPLEMENTED();
    return NULL;
}

MPL_STATIC_INLINE_PREFIX MPI_Aint MPIDI_NM_am_hdr_max_sz(void)
{
    return MPIDI_EFARM_AM_HDR_MAX;
}

MPL_STATIC_INLINE_PREFIX MPI_Aint MPIDI_NM_am_eager_limit(void)
{
    return MPIDI_EFARM_AM_EAGER_LIMIT;
}

MPL_STATIC_INLINE_PREFIX MPI_Aint MPIDI_NM_am_eager_buf_limit(void)
{
    return MPIDI_EFARM_AM_EAGER_BUF_LIMIT;
}

/* Whether MPIDIG may send this payload in one message (else it runs its rendezvous). */
MPL_STATIC_INLINE_PREFIX bool MPIDI_NM_am_check_eager(MPI_Aint am_hdr_sz, MPI_Aint data_sz,
                                                      const void *data, MPI_Aint count,
                                                      MPI_Datatype datatype, MPIR_Request *sreq)
{
    (void)data, (void)count, (void)datatype, (void)sreq;
    return am_hdr_sz + data_sz <= MPIDI_EFARM_AM_EAGER_BUF_LIMIT;
}

MPL_STATIC_INLINE_PREFIX void MPIDI_NM_am_request_init(MPIR_Request *req)
{
    (void)req; /* efarm keeps no state in MPIDIG requests */
}

MPL_STATIC_INLINE_PREFIX void MPIDI_NM_am_request_finalize(MPIR_Request *req)
{
    (void)req; /* efarm keeps no state in MPIDIG requests */
}

#if MPIDI_EFARM_MPICH_43
/*
 * MPICH 4.3's tagged active messages (a large MPIDIG payload received by a
 * tagged receive): efarm does not offer them, so MPIDIG uses its own
 * rendezvous and never calls the two below.
 */
#if MPIDI_EFARM_MPICH_50
MPL_STATIC_INLINE_PREFIX bool MPIDI_NM_am_can_do_tag(MPIR_Request *rreq)
{
    (void)rreq;
    return false;
}
#else
MPL_STATIC_INLINE_PREFIX bool MPIDI_NM_am_can_do_tag(void)
{
    return false;
}
#endif

/* What the two below return if MPIDIG ever called them. */
MPL_STATIC_INLINE_PREFIX int MPIDI_EFARM_am_tag_refused(void)
{
    int mpi_errno = MPI_SUCCESS;

    MPIR_ERR_SET(mpi_errno, MPI_ERR_INTERN, "**efarm_am_tag");
    return mpi_errno;
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_am_tag_send(int rank, MPIR_Comm *comm, int handler_id,
                                                  int tag, const void *buf, MPI_Aint count,
                                                  MPI_Datatype datatype, int vci_src, int vci_dst,
                                                  MPIR_Request *sreq)
{
    (void)rank, (void)comm, (void)handler_id, (void)tag, (void)buf, (void)count;
    (void)datatype, (void)vci_src, (void)vci_dst, (void)sreq;
    return MPIDI_EFARM_am_tag_refused();
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_am_tag_recv(int rank, MPIR_Comm *comm, int handler_id,
                                                  int tag, void *buf, MPI_Aint count,
                                                  MPI_Datatype datatype, int vci_src, int vci_dst,
                                                  MPIR_Request *rreq)
{
    (void)rank, (void)comm, (void)handler_id, (void)tag, (void)buf, (void)count;
    (void)datatype, (void)vci_src, (void)vci_dst, (void)rreq;
    return MPIDI_EFARM_am_tag_refused();
}
#endif

#endif /* EFARM_AM_H_INCLUDED */
