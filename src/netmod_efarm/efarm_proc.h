/*
 * Ranks and processes: ch4 keeps the communicator -> (address table, local
 * process id) maps and the node map itself, so efarm answers from them and
 * keeps no copy.
 */
#ifndef EFARM_PROC_H_INCLUDED
#define EFARM_PROC_H_INCLUDED

#include "efarm_impl.h"

/* Whether `rank` of comm runs on this node; only asked when ch4 has no SHM module. */
MPL_STATIC_INLINE_PREFIX int MPIDI_NM_rank_is_local(int rank, MPIR_Comm *comm)
{
    return MPIDIU_av_is_local(MPIDIU_comm_rank_to_av(comm, rank));
}

#if !MPIDI_EFARM_MPICH_50
/* The global process id of rank idx of comm (of its remote group when is_remote). 4.x only:
 * MPICH 5.0 names processes by lpids of its own. */
MPL_STATIC_INLINE_PREFIX int MPIDI_NM_comm_get_gpid(MPIR_Comm *comm_ptr, int idx,
                                                    uint64_t *gpid_ptr, bool is_remote)
{
    int avtid = 0;
    int lpid = 0;

    if (comm_ptr->comm_kind == MPIR_COMM_KIND__INTERCOMM && !is_remote)
        MPIDIU_comm_rank_to_pid_local(comm_ptr, idx, &lpid, &avtid);
    else
        MPIDIU_comm_rank_to_pid(comm_ptr, idx, &lpid, &avtid);

    *gpid_ptr = MPIDIU_GPID_CREATE(avtid, lpid);
    return MPI_SUCCESS;
}
#endif

#endif /* EFARM_PROC_H_INCLUDED */
