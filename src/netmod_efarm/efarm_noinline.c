/*
 * The rest of ch4:efarm's non-inline API: communicator, datatype and
 * operation hooks, memory allocation, and dynamic processes.
 *
 * The hooks have nothing to do while efarm keeps no per-communicator,
 * per-datatype or per-operation state: ch4 maps ranks to AV entries itself,
 * and datatypes are packed by MPICH. They are where such state will go.
 */
#include "efarm_impl.h"
#include "efarm_noinline.h"

/* ---- Communicators --------------------------------------------------------- */

int MPIDI_EFARM_mpi_comm_commit_pre_hook(MPIR_Comm *comm)
{
    (void)comm;
    return MPI_SUCCESS;
}

int MPIDI_EFARM_mpi_comm_commit_post_hook(MPIR_Comm *comm)
{
    (void)comm;
    return MPI_SUCCESS;
}

int MPIDI_EFARM_mpi_comm_free_hook(MPIR_Comm *comm)
{
    (void)comm;
    return MPI_SUCCESS;
}

/* efarm understands no communicator info hints. */
int MPIDI_EFARM_comm_set_hints(MPIR_Comm *comm_ptr, MPIR_Info *info)
{
    (void)comm_ptr, (void)info;
    return MPI_SUCCESS;
}

/* ---- Datatypes and reduction operations ------------------------------------ */

int MPIDI_EFARM_mpi_type_commit_hook(MPIR_Datatype *datatype_p)
{
    (void)datatype_p;
    return MPI_SUCCESS;
}

int MPIDI_EFARM_mpi_type_free_hook(MPIR_Datatype *datatype_p)
{
    (void)datatype_p;
    return MPI_SUCCESS;
}

int MPIDI_EFARM_mpi_op_commit_hook(MPIR_Op *op_p)
{
    (void)op_p;
    return MPI_SUCCESS;
}

int MPIDI_EFARM_mpi_op_free_hook(MPIR_Op *op_p)
{
    (void)op_p;
    return MPI_SUCCESS;
}

/* ---- MPI_Alloc_mem / MPI_Free_mem: MPIDIG's plain allocation ---------------- */

void *MPIDI_EFARM_mpi_alloc_mem(MPI_Aint size, MPIR_Info *info)
{
    return MPIDIG_mpi_alloc_mem(size, info);
}

int MPIDI_EFARM_mpi_free_mem(void *ptr)
{
    return MPIDIG_mpi_free_mem(ptr);
}

/*
 * ---- Dynamic processes -------------------------------------------------------
 *
 * Spawn, connect/accept, join, and intercommunicators between groups that do
 * not share an address table, identify processes by "upids" (for efarm, the
 * raw address) and bootstrap over dynamic_send/recv. Not provided yet: these
 * fail the MPI call with an error rather than abort, since the application
 * can handle it.
 */

int MPIDI_EFARM_get_local_upids(MPIR_Comm *comm, int **local_upid_size, char **local_upids)
{
    int mpi_errno = MPI_SUCCESS;

    (void)comm, (void)local_upid_size, (void)local_upids;
    MPIR_ERR_SET(mpi_errno, MPI_ERR_OTHER, "**efarm_dynamic");
    return mpi_errno;
}

int MPIDI_EFARM_upids_to_gpids(int size, int *remote_upid_size, char *remote_upids,
                               uint64_t *remote_gpids)
{
    int mpi_errno = MPI_SUCCESS;

    (void)size, (void)remote_upid_size, (void)remote_upids, (void)remote_gpids;
    MPIR_ERR_SET(mpi_errno, MPI_ERR_OTHER, "**efarm_dynamic");
    return mpi_errno;
}

int MPIDI_EFARM_dynamic_send(uint64_t remote_gpid, int tag, const void *buf, int size, int timeout)
{
    int mpi_errno = MPI_SUCCESS;

    (void)remote_gpid, (void)tag, (void)buf, (void)size, (void)timeout;
    MPIR_ERR_SET(mpi_errno, MPI_ERR_OTHER, "**efarm_dynamic");
    return mpi_errno;
}

int MPIDI_EFARM_dynamic_recv(int tag, void *buf, int size, int timeout)
{
    int mpi_errno = MPI_SUCCESS;

    (void)tag, (void)buf, (void)size, (void)timeout;
    MPIR_ERR_SET(mpi_errno, MPI_ERR_OTHER, "**efarm_dynamic");
    return mpi_errno;
}
