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
    MPIDI_EFARM_vci_t *v;
    int ret;

    /* ch4 polls only the VCIs it has (MPIDI_EFARM_VCI_MAX bounds them). */
    MPIR_Assert(vci >= 0 && vci < MPIDI_EFARM_VCI_MAX);
    v = MPIDI_EFARM_VCI(vci);

#if MPIDI_EFARM_RELEASE_LATER
    if (unlikely(v->release_later))
        MPIDI_EFARM_release_drain(v); /* 4.3's any-source pairs (efarm_p2p.h) */
#endif
    /* ch4 may poll before init_local or after finalize (no endpoint): nothing to do. */
    if (unlikely(v->ep == NULL))
        goto fn_exit;

    /* Rails are VCI 0's. */
    ret = likely(MPIDI_EFARM_global.nrails <= 1 || vci != 0) ? efarm_ep_progress(v->ep)
                                                             : MPIDI_EFARM_rails_progress(v);
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
    if (!MPIDI_EFARM_am_idle(v)) {
        mpi_errno = MPIDI_EFARM_am_progress(v);
        if (mpi_errno)
            goto fn_fail;
    }

    v->nm_counters.progress_calls++;
    MPIDI_EFARM_PROGRESS_REPORT(ret > 0 || v->am_recv_head);
    if (ret > 0 || v->am_recv_head) {
        v->idle_polls = 0;
    } else {
        v->nm_counters.progress_idle++;
        if (++v->idle_polls == MPIDI_EFARM_global.yield_polls) {
            /*
             * Nothing arrived for a while: let another process on this core run
             * (ranks outnumbering cores otherwise spin through each other's
             * time slices). Never on a call that found work.
             */
            v->idle_polls = 0;
            sched_yield();
        }
    }

fn_exit:
    return mpi_errno;
fn_fail:
    goto fn_exit;
}

#endif /* EFARM_PROGRESS_H_INCLUDED */
