/*
 * Progress: ch4's progress engine (MPIDI_progress_test) calls this, and it is
 * the only place efarm does its work. efarm has no thread of its own; efasim's
 * service thread is the emulated NIC, not part of efarm.
 */
#ifndef EFARM_PROGRESS_H_INCLUDED
#define EFARM_PROGRESS_H_INCLUDED

#include <errno.h>
#include <sched.h>

#include "efarm_impl.h"
#include "efarm_p2p.h"

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_progress(int vci, MPIDI_EFARM_PROGRESS_PARAM)
{
    int mpi_errno = MPI_SUCCESS;
    int ret;

    /* efarm opens one endpoint; ch4 with more VCIs would need one per VCI. */
    MPIR_Assert(vci == 0);

#if MPIDI_EFARM_RELEASE_LATER
    if (unlikely(MPIDI_EFARM_global.release_later))
        MPIDI_EFARM_release_drain(); /* 4.3's any-source pairs (efarm_p2p.h) */
#endif
    /* ch4 may poll before init_local or after finalize (no endpoint): nothing to do. */
    if (unlikely(MPIDI_EFARM_global.ep == NULL))
        goto fn_exit;

    ret = likely(MPIDI_EFARM_global.nrails <= 1) ? efarm_ep_progress(MPIDI_EFARM_global.ep)
                                                 : MPIDI_EFARM_rails_progress();
    /*
     * Called from inside a completion callback of the engine: MPICH does this
     * when the completion frees a communicator (its MPID_Iprobe for unmatched
     * messages). Nothing can progress there, and it is no error: the outer
     * progress goes on once the callback returns.
     */
    if (unlikely(ret == -EDEADLK))
        goto fn_exit;
    if (unlikely(ret < 0)) {
        mpi_errno = MPIDI_EFARM_ERROR(ret, "efarm_ep_progress");
        goto fn_fail;
    }
    /* Point-to-point requests completed inside the engine; active messages run here. */
    if (!MPIDI_EFARM_am_idle()) {
        mpi_errno = MPIDI_EFARM_am_progress();
        if (mpi_errno)
            goto fn_fail;
    }

    MPIDI_EFARM_global.nm_counters.progress_calls++;
    MPIDI_EFARM_PROGRESS_REPORT(ret > 0 || MPIDI_EFARM_global.am_recv_head);
    if (ret > 0 || MPIDI_EFARM_global.am_recv_head) {
        MPIDI_EFARM_global.idle_polls = 0;
    } else {
        MPIDI_EFARM_global.nm_counters.progress_idle++;
        if (++MPIDI_EFARM_global.idle_polls == MPIDI_EFARM_global.yield_polls) {
            /*
             * Nothing arrived for a while: let another process on this core run
             * (ranks outnumbering cores otherwise spin through each other's
             * time slices). Never on a call that found work.
             */
            MPIDI_EFARM_global.idle_polls = 0;
            sched_yield();
        }
    }

fn_exit:
    return mpi_errno;
fn_fail:
    goto fn_exit;
}

#endif /* EFARM_PROGRESS_H_INCLUDED */
