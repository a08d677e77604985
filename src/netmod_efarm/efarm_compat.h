/*
 * The MPICH versions the netmod builds against, and every difference between
 * their internal APIs that it meets, in one place: the rest of the netmod is
 * written once, against the names below.
 *
 * Supported: MPICH 4.0.x (tested: 4.0.2, Debian bookworm's), 4.3.x (tested:
 * 4.3.2) and 5.0.x (tested: 5.0.1). The series in between (4.1, 4.2) changed
 * the same interfaces in steps this header does not track, so they are
 * refused at compile time, as is any series after 5.0 until it is tested.
 * doc/MPICH-VERSIONS.md lists the differences for users. A new series is a
 * new block below, not a fork of the netmod.
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
 *
 * And from 4.3 to 5.0 (everything above still holds):
 *   - start-up: init_world, post_init and init_vcis are gone; the addresses
 *     are exchanged when a communicator marked MPIR_COMM_ATTR__BOOTSTRAP is
 *     committed (MPI_COMM_WORLD, or a group's communicator of MPI sessions),
 *     after the shared-memory module's hook; comm_set_vcis tells the netmod a
 *     communicator's VCIs; MPIDU_bc_* is gone (efarm_init.c);
 *   - processes are named by one 64-bit lpid (MPIDIU_lpid_to_av) instead of an
 *     (address table, rank) pair: comm_get_gpid and upids_to_gpids are gone,
 *     insert_upid and dynamic_sendrecv are new, dynamic_send takes an lpid;
 *   - every C binding swaps MPI's predefined datatypes for MPICH-internal
 *     ones (MPIR_INT32, ...) before they reach the netmod, so a test against
 *     MPI_INT no longer matches: MPIDI_EFARM_RAW_TYPE gives the internal type
 *     to look up (efarm_rma.c), and internal collectives take MPIR_BYTE_INTERNAL;
 *   - collectives take a collective attribute word (error flags and
 *     MPIR_COLL_ATTR_SYNC) instead of an error flag; MPIR_Errflag_t is gone
 *     and the attribute word's error flag is an error class;
 *   - am_can_do_tag is asked per receive request;
 *   - ch4 links an any-source pair both ways when the netmod names the
 *     partner (MPIDI_REQUEST_SET_LOCAL) and never looks at the netmod request
 *     after posting, so one that completes while it is posted is paired off at
 *     once and released at once (efarm_p2p.h).
 */
#ifndef EFARM_COMPAT_H_INCLUDED
#define EFARM_COMPAT_H_INCLUDED

#include <mpi.h>

#if !defined(MPICH_NUMVERSION)
#error "efarm's netmod is built inside MPICH: mpi.h does not define MPICH_NUMVERSION"
#elif MPICH_NUMVERSION < 40000000
#error "efarm's netmod needs MPICH 4.0 or later (tested: 4.0.2, 4.3.2)"
#elif MPICH_NUMVERSION >= 40100000 && MPICH_NUMVERSION < 40300000
#error \
    "efarm's netmod supports MPICH 4.0.x, 4.3.x and 5.0.x (tested: 4.0.2, 4.3.2, 5.0.1), not 4.1 or 4.2"
#elif MPICH_NUMVERSION >= 40400000 && MPICH_NUMVERSION < 50000000
#error "efarm's netmod supports MPICH 4.0.x, 4.3.x and 5.0.x (tested: 4.0.2, 4.3.2, 5.0.1)"
#elif MPICH_NUMVERSION >= 50100000
#error \
    "efarm's netmod supports MPICH 4.0.x, 4.3.x and 5.0.x (tested: 4.0.2, 4.3.2, 5.0.1); a later series needs its differences in efarm_compat.h first"
#endif

/*
 * Thread safety. Under MPICH's global critical section (ch4:efarm's default)
 * every MPI call holds the one lock and progress yields it while it waits, so
 * the engine runs in one thread at a time. With per-VCI critical sections
 * (--enable-thread-cs=per-vci, MPICH 4.3 and later) ch4 holds a VCI's lock
 * only around progress, and the netmod's entry points take it themselves
 * (MPIDI_EFARM_VCI_ENTER, efarm_impl.h), as ch4:ofi and ch4:ucx do. MPICH
 * 4.0 fixes its VCIs before the netmod starts and never asks it how many it
 * serves (no init_vcis): per-VCI critical sections are refused there.
 */
/* 1 for MPICH 5.0 and later (lpids, bootstrap communicators, internal datatypes, per-VCI). */
#if MPICH_NUMVERSION >= 50000000
#define MPIDI_EFARM_MPICH_50 1
#else
#define MPIDI_EFARM_MPICH_50 0
#endif
#if defined(MPICH_THREAD_GRANULARITY) && defined(MPICH_THREAD_GRANULARITY__GLOBAL) && \
    defined(MPICH_THREAD_GRANULARITY__SINGLE) && defined(MPICH_THREAD_GRANULARITY__VCI)
#if MPICH_THREAD_GRANULARITY == MPICH_THREAD_GRANULARITY__VCI
#if MPICH_NUMVERSION < 40300000
#error \
    "efarm's netmod supports per-VCI critical sections on MPICH 4.3 and later only: configure this MPICH with --enable-thread-cs=global (ch4:efarm's default)"
#endif
#define MPIDI_EFARM_PER_VCI 1
#elif MPICH_THREAD_GRANULARITY != MPICH_THREAD_GRANULARITY__GLOBAL && \
    MPICH_THREAD_GRANULARITY != MPICH_THREAD_GRANULARITY__SINGLE
#error \
    "efarm's netmod needs MPICH's global or per-VCI critical sections: configure MPICH with --enable-thread-cs=global (ch4:efarm's default) or per-vci"
#else
#define MPIDI_EFARM_PER_VCI 0
#endif
#elif defined(MPICH_THREAD_GRANULARITY)
#error "efarm's netmod cannot tell MPICH's thread granularity: mpichconfconst.h was not included"
#else
#define MPIDI_EFARM_PER_VCI 0
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

#define MPIDI_EFARM_TYPEREP_FLAGS , MPIR_TYPEREP_FLAG_NONE

#define MPIDI_EFARM_request_complete(req) MPIDI_Request_complete_fast(req)
#define MPIDI_EFARM_AM_PACK_BUFFER_SIZE   MPIR_CVAR_CH4_PACK_BUFFER_SIZE
/* A request's any-source partner (builds with a SHM module only). */
#define MPIDI_EFARM_ANYSRC_PARTNER(req) ((req)->dev.anysrc_partner)
#define MPIDI_EFARM_Typerep_iov_len(count, type, max_bytes, len_p) \
    MPIR_Typerep_iov_len(count, type, max_bytes, len_p, NULL)
/* The netmod's peers are remote to it: local ones are the SHM module's. */
#define MPIDI_EFARM_precv_init(buf, parts, count, dt, src, tag, comm, info, req_p) \
    MPIDIG_mpi_precv_init(buf, parts, count, dt, src, tag, comm, info, false, req_p)
/* The oldest unexpected shared-memory message in VCI vci's MPIDIG queue matching (any source). */
#define MPIDI_EFARM_shm_unexp_find(tag, context_id, vci)                                           \
    MPIDIG_rreq_find(MPI_ANY_SOURCE, tag, context_id, &MPIDI_global.per_vci[vci].unexp_list, true, \
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

#define MPIDI_EFARM_request_complete(req) MPIDIU_request_complete(req)
#define MPIDI_EFARM_AM_PACK_BUFFER_SIZE   MPIR_CVAR_CH4_AM_PACK_BUFFER_SIZE
#define MPIDI_EFARM_ANYSRC_PARTNER(req)   MPIDI_REQUEST_ANYSOURCE_PARTNER(req)
#define MPIDI_EFARM_Typerep_iov_len(count, type, max_bytes, len_p) \
    MPIR_Typerep_iov_len(count, type, max_bytes, len_p)
/* 4.0's MPIDIG takes an int count; it came from MPI_Precv_init's int argument. */
#define MPIDI_EFARM_precv_init(buf, parts, count, dt, src, tag, comm, info, req_p) \
    MPIDIG_mpi_precv_init(buf, parts, (int)(count), dt, src, tag, comm, info, req_p)
/* 4.0's MPIDIG queue does not tell local messages from the netmod's: efarm sends none. */
#define MPIDI_EFARM_shm_unexp_find(tag, context_id, vci)                                     \
    MPIDIG_rreq_find(MPI_ANY_SOURCE, tag, context_id, &MPIDI_global.per_vci[vci].unexp_list, \
                     MPIDIG_PT2PT_UNEXP)

#endif /* MPIDI_EFARM_MPICH_43 */

/* The VCI of a window's active messages and synchronisation (per-VCI: MPIDIG's am_vci). */
#if MPIDI_EFARM_PER_VCI
#define MPIDI_EFARM_WIN_VCI(win) MPIDI_WIN(win, am_vci)
#else
#define MPIDI_EFARM_WIN_VCI(win) 0
#endif

/*
 * Per-VCI critical sections: VCI vci's lock; the MPI_COMM_WORLD rank of
 * comm's rank, or -1 (the row of the VCI address table); an allgather of
 * len bytes a rank over comm at start-up, in place.
 */
#if MPIDI_EFARM_PER_VCI && MPIDI_EFARM_MPICH_50
#define MPIDI_EFARM_VCI_LOCK(vci)     MPIDI_VCI_LOCK(vci)
#define MPIDI_EFARM_grank(rank, comm) MPIDIU_get_grank(rank, comm)
#define MPIDI_EFARM_Allgather_start(buf, len, comm)                                           \
    MPIR_Allgather_fallback(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, len, MPIR_BYTE_INTERNAL, \
                            comm, MPIR_COLL_ATTR_SYNC)
#elif MPIDI_EFARM_PER_VCI
#define MPIDI_EFARM_VCI_LOCK(vci)     MPIDI_VCI(vci).lock
#define MPIDI_EFARM_grank(rank, comm) MPIDIU_rank_to_lpid(rank, comm)
#define MPIDI_EFARM_Allgather_start(buf, len, comm)                                       \
    MPIR_Allgather_fallback(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, len, MPI_BYTE, comm, \
                            MPIR_ERR_NONE)
#endif

#if MPIDI_EFARM_MPICH_50

/* The MPI_COMM_WORLD rank of comm's rank, or -1 (another world, a dynamic process). */
#define MPIDI_EFARM_world_rank(rank, comm) \
    MPIDI_EFARM_lpid_world_rank(MPIR_comm_rank_to_lpid(comm, rank))
#define MPIDI_EFARM_lpid_world_rank(lpid)                                \
    (((lpid)&MPIR_LPID_DYNAMIC_MASK) || MPIR_LPID_WORLD_INDEX(lpid) != 0 \
         ? -1                                                            \
         : (int)MPIR_LPID_WORLD_RANK(lpid))

/* The error flag a point-to-point attribute word or a collective carries. */
typedef int MPIDI_EFARM_errflag_t;
#define MPIDI_EFARM_ERRFLAG_NONE        0
#define MPIDI_EFARM_ERRFLAG_PROC_FAILED MPIX_ERR_PROC_FAILED
/* An internal allgather of bytes over comm (the window tables). */
#define MPIDI_EFARM_Allgather_bytes(sendbuf, recvbuf, len, comm)                             \
    MPIR_Allgather(sendbuf, len, MPIR_BYTE_INTERNAL, recvbuf, len, MPIR_BYTE_INTERNAL, comm, \
                   MPIR_COLL_ATTR_SYNC)
/* The MPICH-internal type a C binding handed over for dt (MPIR_INT32, ...), or dt. */
#define MPIDI_EFARM_RAW_TYPE(dt) \
    (MPIR_DATATYPE_IS_INTERNAL(dt) ? MPIR_DATATYPE_GET_RAW_INTERNAL(dt) : (dt))
/* ch4 never reads a netmod receive after posting it: no request is kept back. */
#define MPIDI_EFARM_RELEASE_LATER 0

#else /* MPICH 4.x */

/* The MPI_COMM_WORLD rank of comm's rank, or -1 (another world). */
#define MPIDI_EFARM_world_rank(rank, comm) MPIDIU_rank_to_lpid(rank, comm)

typedef MPIR_Errflag_t MPIDI_EFARM_errflag_t;
#define MPIDI_EFARM_ERRFLAG_NONE           MPIR_ERR_NONE
#define MPIDI_EFARM_ERRFLAG_PROC_FAILED    MPIR_ERR_PROC_FAILED
#if MPIDI_EFARM_MPICH_43
#define MPIDI_EFARM_Allgather_bytes(sendbuf, recvbuf, len, comm) \
    MPIR_Allgather(sendbuf, len, MPI_BYTE, recvbuf, len, MPI_BYTE, comm, MPIR_ERR_NONE)
#else
#define MPIDI_EFARM_Allgather_bytes(sendbuf, recvbuf, len, comm)         \
    MPIR_Allgather(sendbuf, len, MPI_BYTE, recvbuf, len, MPI_BYTE, comm, \
                   &(MPIR_Errflag_t){MPIR_ERR_NONE})
#endif
#define MPIDI_EFARM_RAW_TYPE(dt)  (dt)
/* 4.3's ch4 reads a netmod receive on return from posting it (efarm_p2p.h). */
#define MPIDI_EFARM_RELEASE_LATER MPIDI_EFARM_MPICH_43

#endif /* MPIDI_EFARM_MPICH_50 */

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
