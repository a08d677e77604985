/*
 * The MPICH versions the netmod builds against, and every difference between
 * their internal APIs that it meets, in one place: the rest of the netmod is
 * written once, against the names below.
 *
 * Supported: MPICH 4.0.x (tested: 4.0.2, Debian bookworm's) and 4.3.x (tested:
 * 4.3.2). The series in between (4.1, 4.2) changed the same interfaces in
 * steps this header does not track, so they are refused at compile time.
 * doc/MPICH-VERSIONS.md lists the differences for users.
 *
 * What changed from 4.0 to 4.3, as the netmod sees it:
 *   - point-to-point calls take an attribute word (context offset, error flag,
 *     synchronous flag, VCIs) instead of the context offset; MPI_Issend and
 *     the collectives' sends (isend_coll) became plain isends with flags in it;
 *   - progress reports whether it made progress instead of being told
 *     whether the caller blocks; cancel_recv is told whether the caller blocks;
 *   - ch4 asks the netmod how many VCIs it serves (init_vcis), and whether it
 *     offers tagged active messages (am_can_do_tag; efarm does not);
 *   - RMA origin, target and result counts are MPI_Aint;
 *   - the typerep pack and unpack calls take a flags word;
 *   - collectives called from the netmod take the error flag by value;
 *   - a request's completion is MPIDI_Request_complete_fast (it also signals a
 *     completion counter) instead of MPIDIU_request_complete;
 *   - MPIR_Typerep_iov_len can report the bytes the pieces cover;
 *   - MPIDIG's partitioned receive takes an MPI_Aint count and whether the
 *     peer is local;
 *   - a request's any-source partner is a field (dev.anysrc_partner), not a
 *     macro; and ch4 no longer looks at a netmod receive that completed while
 *     it was posted (efarm_p2p.h);
 *   - the tag's error bits exist only when MPICH is configured with them;
 *   - MPIDIG's queue lookups take whether the message came through shared
 *     memory (4.0 keeps both modules' active messages in one queue);
 *   - MPIDIG's pack buffers, which bound an eager active message, are
 *     MPIR_CVAR_CH4_PACK_BUFFER_SIZE (default 16384), not
 *     MPIR_CVAR_CH4_AM_PACK_BUFFER_SIZE (default 69632).
 */
#ifndef EFARM_COMPAT_H_INCLUDED
#define EFARM_COMPAT_H_INCLUDED

#include <mpi.h>

#if !defined(MPICH_NUMVERSION)
#error "efarm's netmod is built inside MPICH: mpi.h does not define MPICH_NUMVERSION"
#elif MPICH_NUMVERSION < 40000000
#error "efarm's netmod needs MPICH 4.0 or later (tested: 4.0.2, 4.3.2)"
#elif MPICH_NUMVERSION >= 40100000 && MPICH_NUMVERSION < 40300000
#error "efarm's netmod supports MPICH 4.0.x and 4.3.x (tested: 4.0.2, 4.3.2), not 4.1 or 4.2"
#endif

/* 1 for MPICH 4.3 and later (the attribute-word API), 0 for 4.0. */
#if MPICH_NUMVERSION >= 40300000
#define MPIDI_EFARM_MPICH_43 1
#else
#define MPIDI_EFARM_MPICH_43 0
#endif

#if MPIDI_EFARM_MPICH_43

/* The point-to-point attribute word: its context offset, sync and error flags. */
#define MPIDI_EFARM_ATTR_CONTEXT_OFFSET(attr) MPIR_PT2PT_ATTR_CONTEXT_OFFSET(attr)
#define MPIDI_EFARM_ATTR_SYNC(attr)           MPIR_PT2PT_ATTR_GET_SYNCFLAG(attr)
#define MPIDI_EFARM_ATTR_ERRFLAG(attr)        MPIR_PT2PT_ATTR_GET_ERRFLAG(attr)

/* The second parameter of MPIDI_NM_progress. */
#define MPIDI_EFARM_PROGRESS_PARAM int *made_progress
/* Report what one progress call did (found: it completed or received something). */
#define MPIDI_EFARM_PROGRESS_REPORT(found) \
    do {                                   \
        if (made_progress && (found))      \
            *made_progress = 1;            \
    } while (0)

/* MPIDI_NM_mpi_cancel_recv's parameters after the request. */
#define MPIDI_EFARM_CANCEL_RECV_PARAMS   , bool is_blocking
#define MPIDI_EFARM_CANCEL_RECV_UNUSED() MPL_UNREFERENCED_ARG(is_blocking)

/* The type of RMA origin, target and result counts. */
typedef MPI_Aint MPIDI_EFARM_rma_count_t;

#define MPIDI_EFARM_TYPEREP_FLAGS        , MPIR_TYPEREP_FLAG_NONE
#define MPIDI_EFARM_ERRFLAG_ARG(errflag) (errflag)

#define MPIDI_EFARM_request_complete(req) MPIDI_Request_complete_fast(req)
#define MPIDI_EFARM_AM_PACK_BUFFER_SIZE   MPIR_CVAR_CH4_PACK_BUFFER_SIZE
/* A request's any-source partner (builds with a SHM module only). */
#define MPIDI_EFARM_ANYSRC_PARTNER(req) ((req)->dev.anysrc_partner)
#define MPIDI_EFARM_Typerep_iov_len(count, type, max_bytes, len_p) \
    MPIR_Typerep_iov_len(count, type, max_bytes, len_p, NULL)
/* The netmod's peers are remote to it: local ones are the SHM module's. */
#define MPIDI_EFARM_precv_init(buf, parts, count, dt, src, tag, comm, info, req_p) \
    MPIDIG_mpi_precv_init(buf, parts, count, dt, src, tag, comm, info, false, req_p)
/* The oldest unexpected shared-memory message in MPIDIG's queue matching (any source). */
#define MPIDI_EFARM_shm_unexp_find(tag, context_id)                                              \
    MPIDIG_rreq_find(MPI_ANY_SOURCE, tag, context_id, &MPIDI_global.per_vci[0].unexp_list, true, \
                     MPIDIG_PT2PT_UNEXP)

#else /* MPICH 4.0 */

/* 4.0 passes the context offset itself where 4.3 passes the attribute word. */
#define MPIDI_EFARM_ATTR_CONTEXT_OFFSET(attr) (attr)
#define MPIDI_EFARM_ATTR_SYNC(attr)           0
#define MPIDI_EFARM_ATTR_ERRFLAG(attr)        MPIR_ERR_NONE

#define MPIDI_EFARM_PROGRESS_PARAM         int blocking
#define MPIDI_EFARM_PROGRESS_REPORT(found) MPL_UNREFERENCED_ARG(blocking)

#define MPIDI_EFARM_CANCEL_RECV_PARAMS
#define MPIDI_EFARM_CANCEL_RECV_UNUSED() \
    do {                                 \
    } while (0)

typedef int MPIDI_EFARM_rma_count_t;

#define MPIDI_EFARM_TYPEREP_FLAGS
#define MPIDI_EFARM_ERRFLAG_ARG(errflag) (&(errflag))

#define MPIDI_EFARM_request_complete(req) MPIDIU_request_complete(req)
#define MPIDI_EFARM_AM_PACK_BUFFER_SIZE   MPIR_CVAR_CH4_AM_PACK_BUFFER_SIZE
#define MPIDI_EFARM_ANYSRC_PARTNER(req)   MPIDI_REQUEST_ANYSOURCE_PARTNER(req)
#define MPIDI_EFARM_Typerep_iov_len(count, type, max_bytes, len_p) \
    MPIR_Typerep_iov_len(count, type, max_bytes, len_p)
/* 4.0's MPIDIG takes an int count; it came from MPI_Precv_init's int argument. */
#define MPIDI_EFARM_precv_init(buf, parts, count, dt, src, tag, comm, info, req_p) \
    MPIDIG_mpi_precv_init(buf, parts, (int)(count), dt, src, tag, comm, info, req_p)
/* 4.0's MPIDIG queue does not tell local messages from the netmod's: efarm sends none. */
#define MPIDI_EFARM_shm_unexp_find(tag, context_id)                                        \
    MPIDIG_rreq_find(MPI_ANY_SOURCE, tag, context_id, &MPIDI_global.per_vci[0].unexp_list, \
                     MPIDIG_PT2PT_UNEXP)

#endif /* MPIDI_EFARM_MPICH_43 */

/*
 * MPICH's two tag error bits (collectives after a failure), or 0 when this
 * MPICH was configured without them (4.3's default: the error flag travels in
 * the attribute word instead).
 */
#ifdef HAVE_TAG_ERROR_BITS
#define MPIDI_EFARM_TAG_ERROR_BITS ((int)(MPIR_TAG_ERROR_BIT | MPIR_TAG_PROC_FAILURE_BIT))
#else
#define MPIDI_EFARM_TAG_ERROR_BITS 0
#endif

#endif /* EFARM_COMPAT_H_INCLUDED */
