/*
 * The rest of ch4:efarm's non-inline API: communicator, datatype and
 * operation hooks and memory allocation (dynamic processes: efarm_dynproc.c);
 * and the wait for an engine slot that point-to-point, receives, windows and
 * active messages share.
 *
 * efarm keeps no per-communicator, per-datatype or per-operation state of its
 * own: ch4 maps ranks to AV entries itself, datatypes are packed by MPICH,
 * and a communicator's info hints live in MPICH's hint array. The hooks are
 * where such state would go.
 */
/* MPICH's headers first: mpichconf.h sets the feature macros the system headers read. */
#include "efarm_impl.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include "efarm_noinline.h"

/* ---- Engine slots ---------------------------------------------------------- */

/*
 * The engine's operations and posted receives are bounded (EFARM_MAX_OPS,
 * EFARM_MAX_POSTED): a call that finds none free returns -EAGAIN, and its
 * caller retries after polling the engine, which frees them as operations
 * complete (efarm_impl.h).
 */
int MPIDI_EFARM_wait_for_slot(MPIDI_EFARM_vci_t *v, unsigned long *waits_p)
{
    /* Rails are VCI 0's. */
    int ret = MPIDI_EFARM_global.nrails > 1 && v == MPIDI_EFARM_VCI(0)
                  ? MPIDI_EFARM_rails_progress(v)
                  : efarm_ep_progress(v->ep);

    MPIDI_EFARM_slot_wait_warning(++*waits_p);
    v->nm_counters.eagain_waits++;
    if (ret < 0)
        return MPIDI_EFARM_ERROR(ret, "efarm_ep_progress");
    return MPI_SUCCESS;
}

/* Once, after ten million retries for an engine slot: say which knobs bound them. */
void MPIDI_EFARM_slot_wait_warning(unsigned long waits)
{
    const struct efarm_config *c;

    if (waits != 10000000)
        return;
    c = efarm_config();
    MPL_internal_error_printf("ch4:efarm: rank %d has waited for a free engine slot for %lu "
                              "polls: more operations or posted receives than "
                              "EFARM_MAX_OPS=%llu / EFARM_MAX_POSTED=%llu allow; still "
                              "waiting (raise them if this persists)\n",
                              MPIR_Process.rank, waits, (unsigned long long)c->max_ops,
                              (unsigned long long)c->max_posted);
}

/* ---- Communicators --------------------------------------------------------- */

int MPIDI_EFARM_mpi_comm_commit_pre_hook(MPIR_Comm *comm)
{
#if MPIDI_EFARM_MPICH_50
    /* MPI_COMM_WORLD or a session's group communicator: exchange the addresses first. */
    if (comm->attr & MPIR_COMM_ATTR__BOOTSTRAP)
        return MPIDI_EFARM_comm_addr_exchange(comm);
#endif
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

/*
 * efarm's communicator info keys (MPI_Comm_set_info, MPI_Comm_dup_with_info,
 * ...; doc/PROTOCOL-SELECTION.md):
 *   efarm_fanin=N     at most N ranks send to one rank of this communicator at
 *                     once (medium's fan-in bound takes N instead of the
 *                     communicator's size); 0 = no hint;
 *   efarm_protocol=P  this communicator's sends go by subprotocol P (a name
 *                     of EFARM_PROTO_LIST, or its number: the kind + 1) where
 *                     it may carry them, like EFARM_PROTO for one
 *                     communicator; auto (0) = none.
 * MPICH has parsed efarm_fanin into comm->hints already; both are checked
 * here. A value that is not valid is ignored, as MPI lets an implementation
 * ignore hints, with one message naming the key and the value: an
 * efarm_fanin that is not a count counts as unset, an unknown
 * efarm_protocol leaves the communicator's as it was.
 *
 * MPICH 4.3 calls comm_set_hints for MPI_Comm_set_info only: at a
 * communicator's creation it hands the info to registered integer keys alone
 * (atoi of the value). There efarm_protocol is such a key too
 * (MPIDI_EFARM_hint_proto_set gets the number), so a name given at creation
 * reads as 0 (auto) and efarm_fanin's text is not checked
 * (doc/MPICH-VERSIONS.md).
 */
static void hint_bad(const char *key, const char *value, const char *allowed)
{
    fprintf(stderr, "efarm: MPI rank %d: ignoring info %s=%s (%s)\n", MPIR_Process.rank, key, value,
            allowed);
}

/* An efarm_protocol that is no subprotocol: the message lists what is (EFARM_PROTO_LIST). */
static void hint_proto_bad(const char *value)
{
    char allowed[160];

    snprintf(allowed, sizeof(allowed), "%s, 0-%d", EFARM_PROTO_NAMES_TEXT, EFARM_PROTO_COUNT);
    hint_bad("efarm_protocol", value, allowed);
}

/* efarm_protocol as a number: 0 (auto) .. EFARM_PROTO_COUNT, the kind + 1. */
static bool hint_proto_valid(int n)
{
    return n >= 0 && n <= EFARM_PROTO_COUNT;
}

int MPIDI_EFARM_hint_proto_set(MPIR_Comm *comm_ptr, int index, int value)
{
    if (hint_proto_valid(value)) {
        comm_ptr->hints[index] = value;
    } else {
        char text[16];

        snprintf(text, sizeof(text), "%d", value);
        hint_proto_bad(text);
    }
    return MPI_SUCCESS;
}

int MPIDI_EFARM_comm_set_hints(MPIR_Comm *comm_ptr, MPIR_Info *info)
{
    char value[MPI_MAX_INFO_VAL + 1];
    int flag = 0;

    if (info == NULL)
        return MPI_SUCCESS;
    if (MPIR_Info_get_impl(info, "efarm_fanin", MPI_MAX_INFO_VAL, value, &flag) == MPI_SUCCESS &&
        flag) {
        char *end;
        long n = strtol(value, &end, 10);

        /* MPICH stored atoi's reading; keep it only if the whole value was a count. */
        if (end == value || *end || n < 0 || n > INT_MAX) {
            hint_bad("efarm_fanin", value, "a count of ranks, 0 for none");
            comm_ptr->hints[MPIDI_EFARM_global.hint_fanin] = 0;
        }
    }
    if (MPIR_Info_get_impl(info, "efarm_protocol", MPI_MAX_INFO_VAL, value, &flag) == MPI_SUCCESS &&
        flag) {
        char *end;
        long n = strtol(value, &end, 10);
        int k = efarm_proto_parse(value);

        if (end != value && *end == 0 && n >= 0 && n <= EFARM_PROTO_COUNT)
            k = (int)n - 1; /* a number: the kind + 1 */
        if (k == -EINVAL)
            hint_proto_bad(value);
        else
            comm_ptr->hints[MPIDI_EFARM_global.hint_proto] = k + 1;
    }
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
 * MPI_ANY_SOURCE across the two modules (MPICH patch P5, efarm_pre.h): efarm
 * first only when both hold a matching unexpected message and efarm's
 * arrived first, by the arrival clock both stamp from. Both are the
 * receive's VCI's: efarm's endpoint and MPIDIG's queue (the shared-memory
 * module chooses the VCI as efarm does, MPIDI_EFARM_RECV_VCI).
 */
int MPIDI_EFARM_anysrc_nm_first(int tag, MPIR_Comm *comm, int attr)
{
#ifdef MPIDI_CH4_DIRECT_NETMOD
    (void)tag, (void)comm, (void)attr;
    return 0;
#else
    struct efarm_probe_info info;
    int context_id = comm->recvcontext_id + MPIDI_EFARM_ATTR_CONTEXT_OFFSET(attr);
    MPIR_Request *shm;
    int first = 0, vci;

    /* ch4 asks before it takes a lock: take the VCI's (MPIDI_EFARM_VCI_ENTER). */
    MPIDI_EFARM_RECV_VCI(comm, attr, MPI_ANY_SOURCE, tag, vci);
    MPIDI_EFARM_VCI_ENTER(vci);
    if (efarm_tprobe(MPIDI_EFARM_VCI(vci)->ep, (uint32_t)context_id, EFARM_ANY_SOURCE,
                     tag == MPI_ANY_TAG ? EFARM_ANY_TAG : tag, false, &info) == 1) {
        shm = MPIDI_EFARM_shm_unexp_find(tag, context_id, vci);
        first = shm != NULL && info.arrival < MPIDIG_REQUEST(shm, netmod_am.efarm.arrival);
    }
    MPIDI_EFARM_VCI_EXIT(vci);
    return first;
#endif
}
