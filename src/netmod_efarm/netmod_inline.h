/*
 * ch4:efarm's inline API, included into every ch4 translation unit through
 * netmod_impl.h (NETMOD_INLINE=__netmod_inline_efarm__).
 *
 * Point-to-point and probe are native (efarm_send.h, efarm_recv.h,
 * efarm_probe.h). RMA data operations are native where efarm can carry them
 * and MPIDIG's otherwise, with MPIDIG's synchronisation (efarm_rma_nm.h).
 * Partitioned communication comes from MPICH's active-message fallback
 * (MPIDIG over efarm's am_* functions, efarm_am.h);
 * collectives from MPICH's algorithms over point-to-point (the "coll"
 * fallback, which is what ch4:ofi does too).
 *
 * With --disable-ch4-netmod-inline (how scripts/mpich-build.sh configures
 * MPICH) only the generated func_table.c includes this file and ch4 calls
 * through its function table; inline builds compile it into every ch4 file.
 *
 * Everything included here is compiled into most of libmpi: keep these
 * headers small and put work that is not on the fast path in .c files.
 */
#ifndef NETMOD_INLINE_H_INCLUDED
#define NETMOD_INLINE_H_INCLUDED

#include "netmod_am_fallback_coll.h"
#include "netmod_am_fallback_part.h"

#include "efarm_progress.h"
#include "efarm_am.h"
#include "efarm_proc.h"
#include "efarm_send.h"
#include "efarm_recv.h"
#include "efarm_probe.h"
#include "efarm_rma_nm.h"

/* The non-inline API (generated from ch4_api.txt by autogen). */
#include "efarm_noinline.h"

#endif /* NETMOD_INLINE_H_INCLUDED */
