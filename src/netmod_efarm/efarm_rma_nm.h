/*
 * ch4:efarm's RMA: native one-sided operations where efarm can carry them,
 * MPICH's active messages (MPIDIG) for the rest.
 *
 * Synchronisation (fence, PSCW, lock/unlock, flush) is MPIDIG's, done with
 * active messages; before each point where MPI says operations are complete,
 * MPIDIG calls the completion hooks below, which wait for this window's
 * native operations (efarm_rma.c counts them per window and per target).
 * Each data operation tries the native path first (MPIDI_EFARM_rma_start:
 * contiguous data, predefined datatype and operation for accumulates, a
 * window whose members exposed their memory) and otherwise goes to MPIDIG,
 * counted in the rma_fallback_ops pvar.
 */
#ifndef EFARM_RMA_NM_H_INCLUDED
#define EFARM_RMA_NM_H_INCLUDED

#include "efarm_impl.h"

/*
 * Native if the window allows and efarm can, on the window's VCI under its
 * lock; otherwise `fallback` (an MPIDIG call, which takes that lock itself:
 * it is not held then).
 */
#define MPIDI_EFARM_RMA_TRY(winattr, win, args, request, fallback)                \
    do {                                                                          \
        bool native_ = false;                                                     \
        int vci_ = MPIDI_EFARM_WIN(win).vci;                                      \
        MPIDI_EFARM_VCI_ENTER(vci_);                                              \
        if ((winattr)&MPIDI_WINATTR_NM_REACHABLE) {                               \
            int err_ = MPIDI_EFARM_rma_start((win), (args), (request), &native_); \
            if (err_ || native_) {                                                \
                MPIDI_EFARM_VCI_EXIT(vci_);                                       \
                return err_;                                                      \
            }                                                                     \
        }                                                                         \
        MPIDI_EFARM_VCI(vci_)->nm_counters.rma_fallback_ops++;                    \
        MPIDI_EFARM_VCI_EXIT(vci_);                                               \
        return fallback;                                                          \
    } while (0)

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_start(MPIR_Group *group, int assert, MPIR_Win *win)
{
    MPIDI_EFARM_rma_sync_point(win);
    return MPIDIG_mpi_win_start(group, assert, win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_complete(MPIR_Win *win)
{
    return MPIDIG_mpi_win_complete(win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_post(MPIR_Group *group, int assert, MPIR_Win *win)
{
    return MPIDIG_mpi_win_post(group, assert, win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_wait(MPIR_Win *win)
{
    return MPIDIG_mpi_win_wait(win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_test(MPIR_Win *win, int *flag)
{
    return MPIDIG_mpi_win_test(win, flag);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_lock(int lock_type, int rank, int assert,
                                                   MPIR_Win *win, MPIDI_av_entry_t *addr)
{
    (void)addr;
    MPIDI_EFARM_rma_sync_point(win);
    return MPIDIG_mpi_win_lock(lock_type, rank, assert, win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_unlock(int rank, MPIR_Win *win,
                                                     MPIDI_av_entry_t *addr)
{
    (void)addr;
    return MPIDIG_mpi_win_unlock(rank, win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_fence(int assert, MPIR_Win *win)
{
    MPIDI_EFARM_rma_sync_point(win);
    return MPIDIG_mpi_win_fence(assert, win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_shared_query(MPIR_Win *win, int rank, MPI_Aint *size,
                                                           int *disp_unit, void *baseptr)
{
    return MPIDIG_mpi_win_shared_query(win, rank, size, disp_unit, baseptr);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_flush(int rank, MPIR_Win *win, MPIDI_av_entry_t *addr)
{
    (void)addr;
    return MPIDIG_mpi_win_flush(rank, win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_flush_local_all(MPIR_Win *win)
{
    return MPIDIG_mpi_win_flush_local_all(win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_unlock_all(MPIR_Win *win)
{
    return MPIDIG_mpi_win_unlock_all(win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_flush_local(int rank, MPIR_Win *win,
                                                          MPIDI_av_entry_t *addr)
{
    (void)addr;
    return MPIDIG_mpi_win_flush_local(rank, win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_sync(MPIR_Win *win)
{
    MPIDI_EFARM_rma_sync_point(win);
    return MPIDIG_mpi_win_sync(win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_flush_all(MPIR_Win *win)
{
    return MPIDIG_mpi_win_flush_all(win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_win_lock_all(int assert, MPIR_Win *win)
{
    MPIDI_EFARM_rma_sync_point(win);
    return MPIDIG_mpi_win_lock_all(assert, win);
}

/*
 * Completion hooks: native operations complete remotely (RDMA completions,
 * RECEIPT, READRSP, ATOMRSP), so local and remote completion wait alike.
 */
MPL_STATIC_INLINE_PREFIX int MPIDI_NM_rma_win_cmpl_hook(MPIR_Win *win)
{
    return MPIDI_EFARM_WIN(win).outstanding ? MPIDI_EFARM_rma_wait(win, -1)
                                            : MPIDI_EFARM_WIN(win).error;
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_rma_win_local_cmpl_hook(MPIR_Win *win)
{
    return MPIDI_NM_rma_win_cmpl_hook(win);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_rma_target_cmpl_hook(int rank, MPIR_Win *win)
{
    if (MPIDI_EFARM_WIN(win).outstanding_to == NULL)
        return MPIDI_EFARM_WIN(win).error;
    return MPIDI_EFARM_rma_wait(win, rank);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_rma_target_local_cmpl_hook(int rank, MPIR_Win *win)
{
    return MPIDI_NM_rma_target_cmpl_hook(rank, win);
}

MPL_STATIC_INLINE_PREFIX int
MPIDI_NM_mpi_put(const void *origin_addr, MPIDI_EFARM_rma_count_t origin_count,
                 MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                 MPIDI_EFARM_rma_count_t target_count, MPI_Datatype target_datatype, MPIR_Win *win,
                 MPIDI_av_entry_t *addr, MPIDI_winattr_t winattr)
{
    MPIDI_EFARM_rma_args_t a = {.kind = MPIDI_EFARM_RMA_PUT,
                                .origin = origin_addr,
                                .origin_count = origin_count,
                                .origin_dt = origin_datatype,
                                .target_rank = target_rank,
                                .target_disp = target_disp,
                                .target_count = target_count,
                                .target_dt = target_datatype};

    (void)addr;
    MPIDI_EFARM_RMA_TRY(winattr, win, &a, NULL,
                        MPIDIG_mpi_put(origin_addr, origin_count, origin_datatype, target_rank,
                                       target_disp, target_count, target_datatype, win));
}

MPL_STATIC_INLINE_PREFIX int
MPIDI_NM_mpi_get(void *origin_addr, MPIDI_EFARM_rma_count_t origin_count,
                 MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                 MPIDI_EFARM_rma_count_t target_count, MPI_Datatype target_datatype, MPIR_Win *win,
                 MPIDI_av_entry_t *addr, MPIDI_winattr_t winattr)
{
    MPIDI_EFARM_rma_args_t a = {.kind = MPIDI_EFARM_RMA_GET,
                                .result = origin_addr,
                                .result_count = origin_count,
                                .result_dt = origin_datatype,
                                .target_rank = target_rank,
                                .target_disp = target_disp,
                                .target_count = target_count,
                                .target_dt = target_datatype};

    (void)addr;
    MPIDI_EFARM_RMA_TRY(winattr, win, &a, NULL,
                        MPIDIG_mpi_get(origin_addr, origin_count, origin_datatype, target_rank,
                                       target_disp, target_count, target_datatype, win));
}

MPL_STATIC_INLINE_PREFIX int
MPIDI_NM_mpi_rput(const void *origin_addr, MPIDI_EFARM_rma_count_t origin_count,
                  MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                  MPIDI_EFARM_rma_count_t target_count, MPI_Datatype target_datatype, MPIR_Win *win,
                  MPIDI_av_entry_t *addr, MPIDI_winattr_t winattr, MPIR_Request **request)
{
    MPIDI_EFARM_rma_args_t a = {.kind = MPIDI_EFARM_RMA_PUT,
                                .origin = origin_addr,
                                .origin_count = origin_count,
                                .origin_dt = origin_datatype,
                                .target_rank = target_rank,
                                .target_disp = target_disp,
                                .target_count = target_count,
                                .target_dt = target_datatype};

    (void)addr;
    MPIDI_EFARM_RMA_TRY(winattr, win, &a, request,
                        MPIDIG_mpi_rput(origin_addr, origin_count, origin_datatype, target_rank,
                                        target_disp, target_count, target_datatype, win, request));
}

MPL_STATIC_INLINE_PREFIX int
MPIDI_NM_mpi_rget(void *origin_addr, MPIDI_EFARM_rma_count_t origin_count,
                  MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                  MPIDI_EFARM_rma_count_t target_count, MPI_Datatype target_datatype, MPIR_Win *win,
                  MPIDI_av_entry_t *addr, MPIDI_winattr_t winattr, MPIR_Request **request)
{
    MPIDI_EFARM_rma_args_t a = {.kind = MPIDI_EFARM_RMA_GET,
                                .result = origin_addr,
                                .result_count = origin_count,
                                .result_dt = origin_datatype,
                                .target_rank = target_rank,
                                .target_disp = target_disp,
                                .target_count = target_count,
                                .target_dt = target_datatype};

    (void)addr;
    MPIDI_EFARM_RMA_TRY(winattr, win, &a, request,
                        MPIDIG_mpi_rget(origin_addr, origin_count, origin_datatype, target_rank,
                                        target_disp, target_count, target_datatype, win, request));
}

MPL_STATIC_INLINE_PREFIX int
MPIDI_NM_mpi_accumulate(const void *origin_addr, MPIDI_EFARM_rma_count_t origin_count,
                        MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                        MPIDI_EFARM_rma_count_t target_count, MPI_Datatype target_datatype,
                        MPI_Op op, MPIR_Win *win, MPIDI_av_entry_t *addr, MPIDI_winattr_t winattr)
{
    MPIDI_EFARM_rma_args_t a = {.kind = MPIDI_EFARM_RMA_ACC,
                                .origin = origin_addr,
                                .origin_count = origin_count,
                                .origin_dt = origin_datatype,
                                .target_rank = target_rank,
                                .target_disp = target_disp,
                                .target_count = target_count,
                                .target_dt = target_datatype,
                                .op = op};

    (void)addr;
    MPIDI_EFARM_RMA_TRY(winattr, win, &a, NULL,
                        MPIDIG_mpi_accumulate(origin_addr, origin_count, origin_datatype,
                                              target_rank, target_disp, target_count,
                                              target_datatype, op, win));
}

MPL_STATIC_INLINE_PREFIX int
MPIDI_NM_mpi_raccumulate(const void *origin_addr, MPIDI_EFARM_rma_count_t origin_count,
                         MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                         MPIDI_EFARM_rma_count_t target_count, MPI_Datatype target_datatype,
                         MPI_Op op, MPIR_Win *win, MPIDI_av_entry_t *addr, MPIDI_winattr_t winattr,
                         MPIR_Request **request)
{
    MPIDI_EFARM_rma_args_t a = {.kind = MPIDI_EFARM_RMA_ACC,
                                .origin = origin_addr,
                                .origin_count = origin_count,
                                .origin_dt = origin_datatype,
                                .target_rank = target_rank,
                                .target_disp = target_disp,
                                .target_count = target_count,
                                .target_dt = target_datatype,
                                .op = op};

    (void)addr;
    MPIDI_EFARM_RMA_TRY(winattr, win, &a, request,
                        MPIDIG_mpi_raccumulate(origin_addr, origin_count, origin_datatype,
                                               target_rank, target_disp, target_count,
                                               target_datatype, op, win, request));
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_get_accumulate(
    const void *origin_addr, MPIDI_EFARM_rma_count_t origin_count, MPI_Datatype origin_datatype,
    void *result_addr, MPIDI_EFARM_rma_count_t result_count, MPI_Datatype result_datatype,
    int target_rank, MPI_Aint target_disp, MPIDI_EFARM_rma_count_t target_count,
    MPI_Datatype target_datatype, MPI_Op op, MPIR_Win *win, MPIDI_av_entry_t *addr,
    MPIDI_winattr_t winattr)
{
    MPIDI_EFARM_rma_args_t a = {.kind = MPIDI_EFARM_RMA_GET_ACC,
                                .origin = origin_addr,
                                .origin_count = origin_count,
                                .origin_dt = origin_datatype,
                                .result = result_addr,
                                .result_count = result_count,
                                .result_dt = result_datatype,
                                .target_rank = target_rank,
                                .target_disp = target_disp,
                                .target_count = target_count,
                                .target_dt = target_datatype,
                                .op = op};

    (void)addr;
    MPIDI_EFARM_RMA_TRY(winattr, win, &a, NULL,
                        MPIDIG_mpi_get_accumulate(origin_addr, origin_count, origin_datatype,
                                                  result_addr, result_count, result_datatype,
                                                  target_rank, target_disp, target_count,
                                                  target_datatype, op, win));
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_rget_accumulate(
    const void *origin_addr, MPIDI_EFARM_rma_count_t origin_count, MPI_Datatype origin_datatype,
    void *result_addr, MPIDI_EFARM_rma_count_t result_count, MPI_Datatype result_datatype,
    int target_rank, MPI_Aint target_disp, MPIDI_EFARM_rma_count_t target_count,
    MPI_Datatype target_datatype, MPI_Op op, MPIR_Win *win, MPIDI_av_entry_t *addr,
    MPIDI_winattr_t winattr, MPIR_Request **request)
{
    MPIDI_EFARM_rma_args_t a = {.kind = MPIDI_EFARM_RMA_GET_ACC,
                                .origin = origin_addr,
                                .origin_count = origin_count,
                                .origin_dt = origin_datatype,
                                .result = result_addr,
                                .result_count = result_count,
                                .result_dt = result_datatype,
                                .target_rank = target_rank,
                                .target_disp = target_disp,
                                .target_count = target_count,
                                .target_dt = target_datatype,
                                .op = op};

    (void)addr;
    MPIDI_EFARM_RMA_TRY(winattr, win, &a, request,
                        MPIDIG_mpi_rget_accumulate(origin_addr, origin_count, origin_datatype,
                                                   result_addr, result_count, result_datatype,
                                                   target_rank, target_disp, target_count,
                                                   target_datatype, op, win, request));
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_fetch_and_op(const void *origin_addr, void *result_addr,
                                                       MPI_Datatype datatype, int target_rank,
                                                       MPI_Aint target_disp, MPI_Op op,
                                                       MPIR_Win *win, MPIDI_av_entry_t *addr,
                                                       MPIDI_winattr_t winattr)
{
    MPIDI_EFARM_rma_args_t a = {.kind = MPIDI_EFARM_RMA_GET_ACC,
                                .origin = origin_addr,
                                .origin_count = 1,
                                .origin_dt = datatype,
                                .result = result_addr,
                                .result_count = 1,
                                .result_dt = datatype,
                                .target_rank = target_rank,
                                .target_disp = target_disp,
                                .target_count = 1,
                                .target_dt = datatype,
                                .op = op};

    (void)addr;
    MPIDI_EFARM_RMA_TRY(winattr, win, &a, NULL,
                        MPIDIG_mpi_fetch_and_op(origin_addr, result_addr, datatype, target_rank,
                                                target_disp, op, win));
}

MPL_STATIC_INLINE_PREFIX int
MPIDI_NM_mpi_compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr,
                              MPI_Datatype datatype, int target_rank, MPI_Aint target_disp,
                              MPIR_Win *win, MPIDI_av_entry_t *addr, MPIDI_winattr_t winattr)
{
    MPIDI_EFARM_rma_args_t a = {.kind = MPIDI_EFARM_RMA_CAS,
                                .origin = origin_addr,
                                .origin_count = 1,
                                .origin_dt = datatype,
                                .result = result_addr,
                                .result_count = 1,
                                .result_dt = datatype,
                                .compare = compare_addr,
                                .target_rank = target_rank,
                                .target_disp = target_disp,
                                .target_count = 1,
                                .target_dt = datatype};

    (void)addr;
    MPIDI_EFARM_RMA_TRY(winattr, win, &a, NULL,
                        MPIDIG_mpi_compare_and_swap(origin_addr, compare_addr, result_addr,
                                                    datatype, target_rank, target_disp, win));
}

#endif /* EFARM_RMA_NM_H_INCLUDED */
