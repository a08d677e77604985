/*
 * What the one-sided operations (efarm_rma.c) take from the windows
 * (efarm_win.c). Included by those two files only.
 */
#ifndef EFARM_WIN_H_INCLUDED
#define EFARM_WIN_H_INCLUDED

/*
 * Fill riov (riov[0] has the access's addr and len) with the ranges and keys
 * of target rank's attached regions of dynamic window win covering it: from
 * the cached directory, else from fresh reads of it. Not covered:
 * MPI_ERR_RMA_RANGE.
 */
int MPIDI_EFARM_win_dyn_lookup(MPIR_Win *win, int rank, struct efarm_riov *riov, uint32_t *nriov_p);

#endif /* EFARM_WIN_H_INCLUDED */
