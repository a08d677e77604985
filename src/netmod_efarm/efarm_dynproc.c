/*
 * Dynamic processes (MPI_Comm_spawn/_multiple, MPI_Open_port with
 * MPI_Comm_connect/accept, MPI_Comm_join, MPI_Intercomm_create between
 * groups without a common address table): MPICH 4.0 and 4.3's netmod hooks.
 *
 * ch4 does the protocol (src/mpid/ch4/src/ch4_spawn.c, ch4_comm.c); the
 * netmod names processes by upids, turns upids into "gpids" (an address
 * table id and an index in it) and carries the bootstrap messages before any
 * communicator exists between the two sides. Everything that does not need
 * MPICH is in efarm_dynproc_core.c (efarm_dynproc.h: the upid format and the
 * reserved match space): MPICH 5.0's hooks (insert_upid(lpid, upid, len),
 * dynamic_send(lpid, ...), dynamic_sendrecv(remote_lpid, peer_comm, tag,
 * sbuf, ssz, rbuf, rsz, timeout)) should be written against the core as
 * these are: MPIDI_EFARM_upid_decode + MPIDI_EFARM_dyn_peer for insert_upid,
 * MPIDI_EFARM_dyn_exchange with a progress callback that yields the VCI lock
 * for the other two.
 *
 * Address tables. A process new to this one gets an entry in a new table
 * (MPIDIU_new_avt), its peer from the engine's address vector; a process
 * some table holds already (a rank of our own MPI_COMM_WORLD, a process met
 * in an earlier spawn or connect that is still referenced) keeps that gpid,
 * so MPICH sees one process as one. Such processes are never striped to
 * (their entry has one rail): efarm_stripe.c keys tails by world rank.
 *
 * Departure. A process of another job leaves after MPI_Comm_disconnect
 * without any barrier with this one (MPICH 4.0's disconnect is a free), so a
 * packet to it can still be in flight, delivered but its acknowledgement
 * lost, when it exits. Within one MPI_COMM_WORLD MPI_Finalize's flush and
 * barrier rule that out and such a loss fails the endpoint; a peer added from
 * a upid is marked departing (efarm_av_set_departing), so the loss fails
 * that peer alone.
 *
 * Disconnect. MPI_Comm_disconnect frees the communicator; the last
 * reference to a table frees it in MPICH (MPIDIU_free_avt) without calling
 * the netmod, and the engine has no removal from its address vector
 * (src/proto/proto_av.c appends only), so a peer's engine entry (a few dozen
 * bytes, its address handle shared per GID) stays until MPI_Finalize, and is
 * reused if the same process connects again. doc/NETMOD.md, "Dynamic
 * processes", lists the limits.
 */
/* MPICH's headers first: mpichconf.h sets the feature macros the system headers read. */
#include "efarm_impl.h"

#include <errno.h>
#include "efarm_dynproc.h"
#include "efarm_noinline.h"

/* ---- upids ------------------------------------------------------------------------------ */

/* The av entry of rank i of comm's local group. */
static MPIDI_av_entry_t *local_av(MPIR_Comm *comm, int i)
{
    int avtid = 0, lpid = 0;

    if (comm->comm_kind == MPIR_COMM_KIND__INTERCOMM)
        MPIDIU_comm_rank_to_pid_local(comm, i, &lpid, &avtid);
    else
        MPIDIU_comm_rank_to_pid(comm, i, &lpid, &avtid);
    return &MPIDIU_get_av(avtid, lpid);
}

/*
 * The upids of comm's local group, rank order: *local_upid_size (one length
 * per rank) and *local_upids (their bytes one after another), both
 * MPL_malloc'd for the caller, who frees them.
 */
int MPIDI_EFARM_get_local_upids(MPIR_Comm *comm, int **local_upid_size, char **local_upids)
{
    int mpi_errno = MPI_SUCCESS;
    int n = comm->local_size;
    int *sizes = NULL;
    char *upids = NULL;

    MPIR_ERR_CHKANDJUMP(MPIDI_EFARM_global.ep == NULL, mpi_errno, MPI_ERR_OTHER, "**efarm");
    sizes = MPL_malloc((size_t)n * sizeof(*sizes), MPL_MEM_ADDRESS);
    upids = MPL_malloc((size_t)n * MPIDI_EFARM_UPID_LEN, MPL_MEM_ADDRESS);
    MPIR_ERR_CHKANDJUMP(!sizes || !upids, mpi_errno, MPI_ERR_OTHER, "**nomem");
    for (int i = 0; i < n; i++) {
        uint8_t raw[EFARM_RAW_ADDR_LEN];
        int ret =
            efarm_av_lookup(MPIDI_EFARM_global.ep, MPIDI_EFARM_AV(local_av(comm, i)).peer, raw);

        if (ret < 0) {
            mpi_errno = MPIDI_EFARM_ERROR(ret, "efarm_av_lookup (a local upid)");
            goto fn_fail;
        }
        MPIDI_EFARM_upid_encode(raw, (uint8_t *)upids + (size_t)i * MPIDI_EFARM_UPID_LEN);
        sizes[i] = MPIDI_EFARM_UPID_LEN;
    }
    *local_upid_size = sizes;
    *local_upids = upids;

fn_exit:
    return mpi_errno;
fn_fail:
    MPL_free(sizes);
    MPL_free(upids);
    goto fn_exit;
}

/* The gpid of an address-table entry whose peer is peer, if a table has one. */
static bool gpid_of_peer(efarm_peer_t peer, uint64_t *gpid_p)
{
    int n_avts = MPIDIU_get_n_avts();

    for (int k = 0; k < n_avts; k++) {
        MPIDI_av_table_t *t = MPIDIU_get_av_table(k);

        if (t == NULL)
            continue;
        for (int j = 0; j < t->size; j++) {
            if (MPIDI_EFARM_AV(&t->table[j]).peer == peer) {
                *gpid_p = MPIDIU_GPID_CREATE(k, j);
                return true;
            }
        }
    }
    return false;
}

/*
 * gpids for size upids (remote_upid_size[i] bytes each, one after another):
 * every upid is checked before anything is inserted; a known process keeps
 * its gpid, the new ones share one new address table.
 */
int MPIDI_EFARM_upids_to_gpids(int size, int *remote_upid_size, char *remote_upids,
                               uint64_t *remote_gpids)
{
    int mpi_errno = MPI_SUCCESS;
    efarm_peer_t *peers = NULL; /* per upid */
    int *slot = NULL;           /* per upid: its entry in the new table, or -1 (known) */
    int n_new = 0, avtid;
    const char *cur = remote_upids;

    MPIR_ERR_CHKANDJUMP(MPIDI_EFARM_global.ep == NULL || size < 0, mpi_errno, MPI_ERR_OTHER,
                        "**efarm");
    peers = MPL_malloc((size_t)size * sizeof(*peers) + 1, MPL_MEM_ADDRESS);
    slot = MPL_malloc((size_t)size * sizeof(*slot) + 1, MPL_MEM_ADDRESS);
    MPIR_ERR_CHKANDJUMP(!peers || !slot, mpi_errno, MPI_ERR_OTHER, "**nomem");

    /* Every upid valid first: a bad one fails the call with nothing inserted. */
    for (int i = 0; i < size; i++) {
        uint8_t raw[EFARM_RAW_ADDR_LEN];
        const char *why;

        if (MPIDI_EFARM_upid_decode(cur, remote_upid_size[i], raw, &why) < 0) {
            /* Said here too: ch4 4.0 ignores this call's error in MPI_Intercomm_create. */
            efarm_log(EFARM_LOG_ERROR, "a process id (upid %d of %d, %d bytes) is malformed: %s", i,
                      size, remote_upid_size[i], why);
            MPIR_ERR_SET2(mpi_errno, MPI_ERR_OTHER, "**efarm_upid", "**efarm_upid %d %s",
                          remote_upid_size[i], why);
            goto fn_fail;
        }
        cur += remote_upid_size[i];
    }
    cur = remote_upids;
    for (int i = 0; i < size; i++) {
        uint8_t raw[EFARM_RAW_ADDR_LEN];
        const char *why;
        int ret;

        MPIDI_EFARM_upid_decode(cur, remote_upid_size[i], raw, &why);
        cur += remote_upid_size[i];
        ret = MPIDI_EFARM_dyn_peer(MPIDI_EFARM_global.ep, raw, &peers[i]);
        if (ret < 0) {
            mpi_errno = MPIDI_EFARM_ERROR(ret, "efarm_av_insert (a remote upid)");
            goto fn_fail;
        }
        slot[i] = -1;
        if (gpid_of_peer(peers[i], &remote_gpids[i])) {
            MPIDI_EFARM_global.nm_counters.dyn_peers_reused++;
            continue;
        }
        /* New, and a new entry unless listed already in this call. */
        for (int j = 0; j < i && slot[i] < 0; j++)
            if (slot[j] >= 0 && peers[j] == peers[i])
                slot[i] = slot[j];
        if (slot[i] < 0)
            slot[i] = n_new++;
    }
    if (n_new > 0) {
        mpi_errno = MPIDIU_new_avt(n_new, &avtid);
        MPIR_ERR_CHECK(mpi_errno);
        for (int i = 0; i < size; i++) {
            MPIDI_EFARM_addr_t *a;

            if (slot[i] < 0)
                continue;
            a = &MPIDI_EFARM_AV(&MPIDIU_get_av(avtid, slot[i]));
            a->peer = peers[i];
            a->nrails = 1; /* never striped to (efarm_stripe.c keys tails by world rank) */
            /* It may exit after MPI_Comm_disconnect, with no barrier with us (doc/NETMOD.md). */
            efarm_av_set_departing(MPIDI_EFARM_global.ep, peers[i]);
            remote_gpids[i] = MPIDIU_GPID_CREATE(avtid, slot[i]);
        }
        MPIDI_EFARM_global.nm_counters.dyn_peers_new += (unsigned long long)n_new;
    }

fn_exit:
    MPL_free(peers);
    MPL_free(slot);
    return mpi_errno;
fn_fail:
    goto fn_exit;
}

/* ---- Bootstrap messages ----------------------------------------------------------------- */

/*
 * One round of ch4's progress (shared memory, efarm, MPIDIG), as the
 * netmod's other blocking paths wait (MPIDIU_PROGRESS_WHILE); arg keeps the
 * mpi_errno of a failed round.
 */
static int dyn_progress(void *arg)
{
    int mpi_errno = MPID_Progress_test(NULL);

    MPID_THREAD_CS_YIELD(GLOBAL, MPIR_THREAD_GLOBAL_ALLFUNC_MUTEX);
    if (mpi_errno) {
        *(int *)arg = mpi_errno;
        return -EIO;
    }
    return 0;
}

/* MPI_Finalize, after the endpoint closed: what timed-out exchanges left to the engine. */
static int dyn_finalize(void *arg)
{
    (void)arg;
    MPIDI_EFARM_dyn_release();
    return MPI_SUCCESS;
}

static int dyn_exchange(uint64_t gpid, int tag, const void *sbuf, int ssize, void *rbuf, int rsize,
                        int timeout, const char *what)
{
    static bool finalize_added;
    int mpi_errno = MPI_SUCCESS, progress_errno = MPI_SUCCESS;
    struct MPIDI_EFARM_dyn_wait w = {
        .progress = dyn_progress, .arg = &progress_errno, .timeout_s = timeout};
    struct MPIDI_EFARM_dyn_result res;
    efarm_peer_t peer = EFARM_PEER_NONE;
    int ret;

    MPIR_ERR_CHKANDJUMP(MPIDI_EFARM_global.ep == NULL || ssize < 0 || rsize < 0, mpi_errno,
                        MPI_ERR_OTHER, "**efarm");
    if (sbuf) {
        int avtid = (int)MPIDIU_GPID_GET_AVTID(gpid), lpid = (int)MPIDIU_GPID_GET_LPID(gpid);

        if (avtid < 0 || avtid >= MPIDIU_get_n_avts() || MPIDIU_get_av_table(avtid) == NULL ||
            lpid < 0 || lpid >= MPIDIU_get_av_table(avtid)->size) {
            MPIR_ERR_SET2(mpi_errno, MPI_ERR_OTHER, "**efarm_dyngpid", "**efarm_dyngpid %d %d",
                          avtid, lpid);
            goto fn_fail;
        }
        peer = MPIDI_EFARM_AV(&MPIDIU_get_av(avtid, lpid)).peer;
    }
    ret = MPIDI_EFARM_dyn_exchange(MPIDI_EFARM_global.ep, peer, tag, sbuf, (uint64_t)ssize, rbuf,
                                   (uint64_t)rsize, &w, &res);
    MPIDI_EFARM_global.nm_counters.dyn_sends += sbuf && res.send_status == 0;
    MPIDI_EFARM_global.nm_counters.dyn_recvs += rbuf && res.recv_status == 0;
    MPIDI_EFARM_global.nm_counters.dyn_timeouts += ret == -ETIMEDOUT;
    if (MPIDI_EFARM_dyn_abandoned() && !finalize_added) {
        finalize_added = true;
        MPIR_Add_finalize(dyn_finalize, NULL, 0);
    }
    if (ret == -EIO && progress_errno) {
        mpi_errno = progress_errno;
    } else if (ret == -ETIMEDOUT) {
        MPIR_ERR_SET2(mpi_errno, MPI_ERR_PORT, "**efarm_dyntimeout", "**efarm_dyntimeout %s %d",
                      what, timeout);
    } else if (ret < 0) {
        mpi_errno = MPIDI_EFARM_ERROR(ret, what);
    }

fn_exit:
    return mpi_errno;
fn_fail:
    goto fn_exit;
}

/* Send size bytes to the process remote_gpid names (tag: the port's), within timeout seconds. */
int MPIDI_EFARM_dynamic_send(uint64_t remote_gpid, int tag, const void *buf, int size, int timeout)
{
    return dyn_exchange(remote_gpid, tag, buf, size, NULL, 0, timeout,
                        "a dynamic-process send (connect/accept)");
}

/* Receive at most size bytes tagged tag from any process, within timeout seconds. */
int MPIDI_EFARM_dynamic_recv(int tag, void *buf, int size, int timeout)
{
    return dyn_exchange(0, tag, NULL, 0, buf, size, timeout,
                        "a dynamic-process receive (connect/accept)");
}
