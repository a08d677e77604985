/*
 * Windows and partitioned communication: MPICH's generic layer (MPIDIG)
 * implements both on active messages, so efarm forwards the calls to it and
 * answers its hooks.
 *
 * The window hooks are where efarm will register window memory and exchange
 * keys for native RDMA. Until then they leave the window unreachable by the
 * netmod (MPIDI_WINATTR_NM_REACHABLE stays clear), which makes MPIDIG carry
 * every RMA operation as active messages: correct, only slower.
 */
#include "efarm_impl.h"
#include "efarm_noinline.h"

int MPIDI_EFARM_mpi_win_create(void *base, MPI_Aint length, int disp_unit, MPIR_Info *info,
                               MPIR_Comm *comm_ptr, MPIR_Win **win_p)
{
    return MPIDIG_mpi_win_create(base, length, disp_unit, info, comm_ptr, win_p);
}

int MPIDI_EFARM_mpi_win_allocate(MPI_Aint size, int disp_unit, MPIR_Info *info, MPIR_Comm *comm,
                                 void *baseptr, MPIR_Win **win_p)
{
    return MPIDIG_mpi_win_allocate(size, disp_unit, info, comm, baseptr, win_p);
}

int MPIDI_EFARM_mpi_win_allocate_shared(MPI_Aint size, int disp_unit, MPIR_Info *info,
                                        MPIR_Comm *comm_ptr, void **baseptr_p, MPIR_Win **win_p)
{
    return MPIDIG_mpi_win_allocate_shared(size, disp_unit, info, comm_ptr, baseptr_p, win_p);
}

int MPIDI_EFARM_mpi_win_create_dynamic(MPIR_Info *info, MPIR_Comm *comm, MPIR_Win **win_p)
{
    return MPIDIG_mpi_win_create_dynamic(info, comm, win_p);
}

int MPIDI_EFARM_mpi_win_attach(MPIR_Win *win, void *base, MPI_Aint size)
{
    return MPIDIG_mpi_win_attach(win, base, size);
}

int MPIDI_EFARM_mpi_win_detach(MPIR_Win *win, const void *base)
{
    return MPIDIG_mpi_win_detach(win, base);
}

int MPIDI_EFARM_mpi_win_free(MPIR_Win **win_p)
{
    return MPIDIG_mpi_win_free(win_p);
}

int MPIDI_EFARM_mpi_win_set_info(MPIR_Win *win, MPIR_Info *info)
{
    return MPIDIG_mpi_win_set_info(win, info);
}

int MPIDI_EFARM_mpi_win_get_info(MPIR_Win *win, MPIR_Info **info_p)
{
    return MPIDIG_mpi_win_get_info(win, info_p);
}

/* The hooks MPIDIG calls from the functions above: no efarm window state yet. */

int MPIDI_EFARM_mpi_win_create_hook(MPIR_Win *win)
{
    (void)win;
    return MPI_SUCCESS;
}

int MPIDI_EFARM_mpi_win_allocate_hook(MPIR_Win *win)
{
    (void)win;
    return MPI_SUCCESS;
}

int MPIDI_EFARM_mpi_win_allocate_shared_hook(MPIR_Win *win)
{
    (void)win;
    return MPI_SUCCESS;
}

int MPIDI_EFARM_mpi_win_create_dynamic_hook(MPIR_Win *win)
{
    (void)win;
    return MPI_SUCCESS;
}

int MPIDI_EFARM_mpi_win_attach_hook(MPIR_Win *win, void *base, MPI_Aint size)
{
    (void)win, (void)base, (void)size;
    return MPI_SUCCESS;
}

int MPIDI_EFARM_mpi_win_detach_hook(MPIR_Win *win, const void *base)
{
    (void)win, (void)base;
    return MPI_SUCCESS;
}

int MPIDI_EFARM_mpi_win_free_hook(MPIR_Win *win)
{
    (void)win;
    return MPI_SUCCESS;
}

/* Partitioned communication: MPIDIG's, as in ch4:ofi and ch4:ucx. */

int MPIDI_EFARM_mpi_psend_init(const void *buf, int partitions, MPI_Aint count,
                               MPI_Datatype datatype, int rank, int tag, MPIR_Comm *comm,
                               MPIR_Info *info, MPIDI_av_entry_t *av, MPIR_Request **req_p)
{
    (void)av;
    return MPIDIG_mpi_psend_init(buf, partitions, count, datatype, rank, tag, comm, info, req_p);
}

int MPIDI_EFARM_mpi_precv_init(void *buf, int partitions, MPI_Aint count, MPI_Datatype datatype,
                               int rank, int tag, MPIR_Comm *comm, MPIR_Info *info,
                               MPIDI_av_entry_t *av, MPIR_Request **req_p)
{
    (void)av;
    /* MPIDIG takes an int count here (4.0.2); it came from MPI_Precv_init's int argument. */
    return MPIDIG_mpi_precv_init(buf, partitions, (int)count, datatype, rank, tag, comm, info,
                                 req_p);
}
