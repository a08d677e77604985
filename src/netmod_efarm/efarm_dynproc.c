/*
 * Dynamic processes (MPI_Comm_spawn/_multiple, MPI_Open_port with
 * MPI_Comm_connect/accept, MPI_Comm_join, MPI_Intercomm_create between
 * groups without a common address table): the netmod hooks of MPICH 4.0,
 * 4.3 and 5.0.
 *
 * ch4 does the protocol (src/mpid/ch4/src/ch4_spawn.c, ch4_comm.c); the
 * netmod names processes by upids and carries the bootstrap messages before
 * any communicator exists between the two sides. Everything that does not
 * need MPICH is in efarm_dynproc_core.c (efarm_dynproc.h: the upid format
 * and the reserved match space); the hooks here are thin callers of it.
 * MPICH 4.x turns upids into "gpids" (an address table id and an index in
 * it: upids_to_gpids); MPICH 5.0 names every process by an lpid of its own
 * and asks the netmod to fill the lpid's entry from a upid (insert_upid),
 * and its MPI_Intercomm_create always has the two leaders exchange their
 * groups (dynamic_sendrecv, called with VCI 0's lock held, yielded while it
 * waits), even within one MPI_COMM_WORLD.
 *
 * Address tables (MPICH 4.x). A process new to this one gets an entry in a new table
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
#include <time.h>
#include <unistd.h>
#include "efarm_dynproc.h"
#include "efarm_noinline.h"

/* ---- Bootstrap messages, every version ----------------------------------------------- */

/*
 * One round of ch4's progress (shared memory, efarm, MPIDIG), as the
 * netmod's other blocking paths wait (MPIDIU_PROGRESS_WHILE); arg keeps the
 * mpi_errno of a failed round. MPICH 5.0 calls the bootstrap hooks with VCI
 * 0's lock held, and its progress takes that lock (per-VCI critical
 * sections; the lock is not recursive): it is left around the round, as
 * ch4's own MPIDI_progress_test_vci does, so other threads progress too.
 */
static int dyn_progress(void *arg)
{
#if MPIDI_EFARM_MPICH_50
    MPID_THREAD_CS_EXIT(VCI, MPIDI_VCI_LOCK(0));
#endif
    int mpi_errno = MPID_Progress_test(NULL);

#if MPIDI_EFARM_MPICH_50
    MPID_THREAD_CS_ENTER(VCI, MPIDI_VCI_LOCK(0));
#endif
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

/*
 * One exchange with peer (EFARM_PEER_NONE: receive only) in conversation conv
 * (MPIDI_EFARM_DYN_SOURCE: none), as MPI errors; res_p (may be NULL) gets the
 * core's result.
 */
static int dyn_exchange_conv(efarm_peer_t peer, int32_t conv, int tag, const void *sbuf, int ssize,
                             void *rbuf, int rsize, int timeout, const char *what,
                             struct MPIDI_EFARM_dyn_result *res_p)
{
    static bool finalize_added;
    int mpi_errno = MPI_SUCCESS, progress_errno = MPI_SUCCESS;
    struct MPIDI_EFARM_dyn_wait w = {
        .progress = dyn_progress, .arg = &progress_errno, .timeout_s = timeout};
    struct MPIDI_EFARM_dyn_result res;
    int ret;

    MPIR_ERR_CHKANDJUMP(MPIDI_EFARM_VCI(0)->ep == NULL || ssize < 0 || rsize < 0, mpi_errno,
                        MPI_ERR_OTHER, "**efarm");
    ret = MPIDI_EFARM_dyn_exchange_conv(MPIDI_EFARM_VCI(0)->ep, peer, conv, tag, sbuf,
                                        (uint64_t)ssize, rbuf, (uint64_t)rsize, &w, &res);
    if (res_p)
        *res_p = res;
    MPIDI_EFARM_VCI(0)->nm_counters.dyn_sends += sbuf && res.send_status == 0;
    MPIDI_EFARM_VCI(0)->nm_counters.dyn_recvs += rbuf && res.recv_status == 0;
    MPIDI_EFARM_VCI(0)->nm_counters.dyn_timeouts += ret == -ETIMEDOUT;
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

/* The same outside any conversation. */
static int dyn_exchange_peer(efarm_peer_t peer, int tag, const void *sbuf, int ssize, void *rbuf,
                             int rsize, int timeout, const char *what)
{
    return dyn_exchange_conv(peer, MPIDI_EFARM_DYN_SOURCE, tag, sbuf, ssize, rbuf, rsize, timeout,
                             what, NULL);
}

#if !MPIDI_EFARM_MPICH_50

/* ---- MPICH 4.x: upids and gpids ------------------------------------------------------------ */

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

    MPIR_ERR_CHKANDJUMP(MPIDI_EFARM_VCI(0)->ep == NULL || size < 0, mpi_errno, MPI_ERR_OTHER,
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
        ret = MPIDI_EFARM_dyn_peer(MPIDI_EFARM_VCI(0)->ep, raw, &peers[i]);
        if (ret < 0) {
            mpi_errno = MPIDI_EFARM_ERROR(ret, "efarm_av_insert (a remote upid)");
            goto fn_fail;
        }
        slot[i] = -1;
        if (gpid_of_peer(peers[i], &remote_gpids[i])) {
            MPIDI_EFARM_VCI(0)->nm_counters.dyn_peers_reused++;
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
            efarm_av_set_departing(MPIDI_EFARM_VCI(0)->ep, peers[i]);
            remote_gpids[i] = MPIDIU_GPID_CREATE(avtid, slot[i]);
        }
        MPIDI_EFARM_VCI(0)->nm_counters.dyn_peers_new += (unsigned long long)n_new;
    }

fn_exit:
    MPL_free(peers);
    MPL_free(slot);
    return mpi_errno;
fn_fail:
    goto fn_exit;
}

/* ---- MPICH 4.x: bootstrap messages --------------------------------------------------------- */

static int dyn_exchange(uint64_t gpid, int tag, const void *sbuf, int ssize, void *rbuf, int rsize,
                        int timeout, const char *what)
{
    int mpi_errno = MPI_SUCCESS;
    efarm_peer_t peer = EFARM_PEER_NONE;

    if (sbuf) {
        int avtid = (int)MPIDIU_GPID_GET_AVTID(gpid), lpid = (int)MPIDIU_GPID_GET_LPID(gpid);

        if (avtid < 0 || avtid >= MPIDIU_get_n_avts() || MPIDIU_get_av_table(avtid) == NULL ||
            lpid < 0 || lpid >= MPIDIU_get_av_table(avtid)->size) {
            MPIR_ERR_SET2(mpi_errno, MPI_ERR_OTHER, "**efarm_dyngpid", "**efarm_dyngpid %d %d",
                          avtid, lpid);
            return mpi_errno;
        }
        peer = MPIDI_EFARM_AV(&MPIDIU_get_av(avtid, lpid)).peer;
    }
    return dyn_exchange_peer(peer, tag, sbuf, ssize, rbuf, rsize, timeout, what);
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

#else /* MPICH 5.0 */

/* ---- MPICH 5.0: lpids ------------------------------------------------------------------- */

/* The av entry of rank i of comm's local group. */
static MPIDI_av_entry_t *local_av(MPIR_Comm *comm, int i)
{
    if (comm->comm_kind == MPIR_COMM_KIND__INTERCOMM)
        return MPIDIU_lpid_to_av_slow(MPIR_Group_rank_to_lpid(comm->local_group, i));
    return MPIDIU_lpid_to_av_slow(MPIR_comm_rank_to_lpid(comm, i));
}

/*
 * The process lpid names is the one upid names (from the wire: checked
 * first). A dynamic lpid (connect/accept, spawn) or an entry not set yet (a
 * process of another world) gets the engine's peer for it, an entry already
 * set (a process met before) is left as it is. New entries take one rail
 * (never striped to: efarm_stripe.c keys tails by world rank).
 */
int MPIDI_EFARM_insert_upid(MPIR_Lpid lpid, const char *upid, int upid_len)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_av_entry_t *av;
    MPIDI_EFARM_addr_t *a;
    uint8_t raw[EFARM_RAW_ADDR_LEN];
    const char *why;
    efarm_peer_t peer;
    int ret;

    MPIR_ERR_CHKANDJUMP(MPIDI_EFARM_VCI(0)->ep == NULL, mpi_errno, MPI_ERR_OTHER, "**efarm");
    av = MPIDIU_lpid_to_av_slow(lpid);
    a = &MPIDI_EFARM_AV(av);
    /*
     * MPICH 5.0 allocates dynamic entries without clearing them, and its
     * MPIDIU_insert_dynamic_upid drops this function's error: a refused
     * upid must leave the entry naming no process, so that the connect's
     * dynamic_send fails on it (lpid_peer) instead of sending anywhere.
     */
    if (lpid & MPIR_LPID_DYNAMIC_MASK) {
        a->nrails = 0;
        a->peer = EFARM_PEER_NONE;
    }
    if (MPIDI_EFARM_upid_decode(upid, upid_len, raw, &why) < 0) {
        MPIR_ERR_SET2(mpi_errno, MPI_ERR_OTHER, "**efarm_upid", "**efarm_upid %d %s", upid_len,
                      why);
        goto fn_fail;
    }
    if (!(lpid & MPIR_LPID_DYNAMIC_MASK) && a->nrails != 0) {
        MPIDI_EFARM_VCI(0)->nm_counters.dyn_peers_reused++;
        goto fn_exit; /* known */
    }
    /*
     * MPICH 5.0 gives a process a new dynamic lpid at every connect/accept
     * and a world lpid when an intercommunicator names it; the engine keeps
     * one peer per process, so a process some entry named already counts as
     * reused.
     */
    ret = MPIDI_EFARM_dyn_peer(MPIDI_EFARM_VCI(0)->ep, raw, &peer);
    if (ret >= 0)
        ret = MPIDI_EFARM_peer_name(peer);
    if (ret < 0) {
        mpi_errno = MPIDI_EFARM_ERROR(ret, "efarm_av_insert (a remote upid)");
        goto fn_fail;
    }
    a->peer = peer;
    a->nrails = 1; /* never striped to (efarm_stripe.c keys tails by world rank) */
    /* A process of another job may exit after MPI_Comm_disconnect, with no barrier with us. */
    if ((lpid & MPIR_LPID_DYNAMIC_MASK) || MPIR_LPID_WORLD_INDEX(lpid) != 0)
        efarm_av_set_departing(MPIDI_EFARM_VCI(0)->ep, peer);
    if (ret == 0)
        MPIDI_EFARM_VCI(0)->nm_counters.dyn_peers_new++;
    else
        MPIDI_EFARM_VCI(0)->nm_counters.dyn_peers_reused++;

fn_exit:
    return mpi_errno;
fn_fail:
    goto fn_exit;
}

/* ---- MPICH 5.0: bootstrap messages -------------------------------------------------------- */

/*
 * Conversations. MPICH 5.0 follows a connect/accept's first message with
 * the leaders' exchange (dynamic_sendrecv) under the port's tag, and a
 * connect that times out has sent its part of that exchange already; a later
 * connect/accept between the same two processes (the other way round, say,
 * with an equal port tag) would take that stale message for its own. So each
 * connect numbers its conversation (a random number from
 * MPIDI_EFARM_DYN_CONV_MIN up), sends the number after the connect message,
 * and both sides keep it per peer; the exchanges carry it as their source
 * word (efarm_dynproc.h), so a receive takes only its own conversation's
 * messages. An exchange that times out ends its conversation. Processes that
 * never connected (MPI_Intercomm_create within a world) use none.
 */
static int32_t *g_conv; /* per engine peer: its conversation, 0 for none */
static size_t g_conv_len;

static int conv_free(void *arg)
{
    (void)arg;
    MPL_free(g_conv);
    g_conv = NULL;
    g_conv_len = 0;
    return MPI_SUCCESS;
}

static int32_t conv_of(efarm_peer_t peer)
{
    return peer < g_conv_len && g_conv[peer] ? g_conv[peer] : MPIDI_EFARM_DYN_SOURCE;
}

static int conv_set(efarm_peer_t peer, int32_t conv)
{
    if (peer >= g_conv_len) {
        size_t len = g_conv_len ? g_conv_len : 16;
        int32_t *p;

        while (len <= peer)
            len *= 2;
        p = MPL_realloc(g_conv, len * sizeof(*p), MPL_MEM_ADDRESS);
        if (p == NULL)
            return MPI_ERR_NO_MEM;
        if (g_conv == NULL)
            MPIR_Add_finalize(conv_free, NULL, 0);
        memset(p + g_conv_len, 0, (len - g_conv_len) * sizeof(*p));
        g_conv = p;
        g_conv_len = len;
    }
    g_conv[peer] = conv;
    return MPI_SUCCESS;
}

/* A new conversation number: MPIDI_EFARM_DYN_CONV_MIN to MPIDI_EFARM_DYN_SOURCE - 1. */
static int32_t conv_new(void)
{
    static uint64_t counter;
    struct timespec ts;
    uint64_t x;

    clock_gettime(CLOCK_REALTIME, &ts);
    x = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    x ^= (uint64_t)getpid() << 32;
    x += ++counter * 0x9e3779b97f4a7c15u; /* splitmix64 */
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    x ^= x >> 31;
    return MPIDI_EFARM_DYN_CONV_MIN +
           (int32_t)(x % (uint64_t)(MPIDI_EFARM_DYN_SOURCE - MPIDI_EFARM_DYN_CONV_MIN));
}

#define MPIDI_EFARM_CONV_LEN                                            \
    4 /* the conversation number after a connect message, little-endian \
       */

static void conv_store(uint8_t *p, int32_t conv)
{
    for (int i = 0; i < MPIDI_EFARM_CONV_LEN; i++)
        p[i] = (uint8_t)((uint32_t)conv >> (8 * i));
}

static int32_t conv_load(const uint8_t *p)
{
    uint32_t v = 0;

    for (int i = 0; i < MPIDI_EFARM_CONV_LEN; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return (int32_t)v;
}

/* The engine peer of lpid's entry, or an error if the entry names none. */
static int lpid_peer(MPIR_Lpid lpid, efarm_peer_t *peer_p)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_EFARM_addr_t *a = &MPIDI_EFARM_AV(MPIDIU_lpid_to_av_slow(lpid));

    if (a->nrails == 0 && (lpid & MPIR_LPID_DYNAMIC_MASK)) {
        /* insert_upid refused its upid (MPICH 5.0 goes on without its error). */
        MPIR_ERR_SET(mpi_errno, MPI_ERR_PORT, "**efarm_upidrefused");
        return mpi_errno;
    }
    if (a->nrails == 0) {
        MPIR_ERR_SET2(mpi_errno, MPI_ERR_OTHER, "**efarm_dyngpid", "**efarm_dyngpid %d %d",
                      (int)MPIR_LPID_WORLD_INDEX(lpid), (int)MPIR_LPID_WORLD_RANK(lpid));
        return mpi_errno;
    }
    *peer_p = a->peer;
    return MPI_SUCCESS;
}

/*
 * The connect message: size bytes to the process remote_lpid names (tag: the
 * port's) and a new conversation number after them, within timeout seconds.
 */
int MPIDI_EFARM_dynamic_send(MPIR_Lpid remote_lpid, int tag, const void *buf, int size, int timeout)
{
    int mpi_errno;
    efarm_peer_t peer;
    int32_t conv = conv_new();
    uint8_t *msg;

    mpi_errno = lpid_peer(remote_lpid, &peer);
    if (mpi_errno)
        return mpi_errno;
    if (size < 0 || size > INT32_MAX - MPIDI_EFARM_CONV_LEN)
        return MPIDI_EFARM_ERROR(-EINVAL, "a dynamic-process send (connect/accept)");
    msg = MPL_malloc((size_t)size + MPIDI_EFARM_CONV_LEN, MPL_MEM_OTHER);
    if (msg == NULL)
        return MPIDI_EFARM_ERROR(-ENOMEM, "a dynamic-process send (connect/accept)");
    if (size > 0)
        memcpy(msg, buf, (size_t)size);
    conv_store(msg + size, conv);
    mpi_errno =
        dyn_exchange_conv(peer, MPIDI_EFARM_DYN_SOURCE, tag, msg, size + MPIDI_EFARM_CONV_LEN, NULL,
                          0, timeout, "a dynamic-process send (connect/accept)", NULL);
    MPL_free(msg);
    if (mpi_errno == MPI_SUCCESS)
        mpi_errno = conv_set(peer, conv);
    return mpi_errno;
}

/*
 * The accept: a connect message of at most size bytes tagged tag from any
 * process, within timeout seconds; its conversation number (checked) is kept
 * for the sender.
 */
int MPIDI_EFARM_dynamic_recv(int tag, void *buf, int size, int timeout)
{
    int mpi_errno;
    struct MPIDI_EFARM_dyn_result res;
    uint8_t *msg;
    int32_t conv;

    if (size < 0 || size > INT32_MAX - MPIDI_EFARM_CONV_LEN)
        return MPIDI_EFARM_ERROR(-EINVAL, "a dynamic-process receive (connect/accept)");
    msg = MPL_malloc((size_t)size + MPIDI_EFARM_CONV_LEN, MPL_MEM_OTHER);
    if (msg == NULL)
        return MPIDI_EFARM_ERROR(-ENOMEM, "a dynamic-process receive (connect/accept)");
    mpi_errno = dyn_exchange_conv(EFARM_PEER_NONE, MPIDI_EFARM_DYN_SOURCE, tag, NULL, 0, msg,
                                  size + MPIDI_EFARM_CONV_LEN, timeout,
                                  "a dynamic-process receive (connect/accept)", &res);
    if (mpi_errno)
        goto out;
    conv = res.recv_len >= MPIDI_EFARM_CONV_LEN
               ? conv_load(msg + res.recv_len - MPIDI_EFARM_CONV_LEN)
               : 0;
    if (conv < MPIDI_EFARM_DYN_CONV_MIN || conv >= MPIDI_EFARM_DYN_SOURCE) {
        MPIR_ERR_SET1(mpi_errno, MPI_ERR_OTHER, "**efarm_dynconv", "**efarm_dynconv %d",
                      (int)res.recv_len);
        goto out;
    }
    memcpy(buf, msg, (size_t)res.recv_len - MPIDI_EFARM_CONV_LEN);
    mpi_errno = conv_set(res.sender, conv);
out:
    MPL_free(msg);
    return mpi_errno;
}

/*
 * The leaders' exchange of MPI_Intercomm_create (and of connect/accept after
 * the connect message): send_size bytes to remote_lpid and at most recv_size
 * from it, both with tag, in the pair's conversation, within timeout seconds.
 * A size of 0 skips that half, as ch4 asks. ch4's tags here carry MPICH's
 * collective bit (MPIR_Intercomm_create_timeout sets MPIR_TAG_COLL_BIT),
 * a port's tag never does: an exchange and a connect message never match
 * each other even outside a conversation.
 */
int MPIDI_EFARM_dynamic_sendrecv(MPIR_Lpid remote_lpid, MPIR_Comm *peer_comm, int tag,
                                 const void *send_buf, int send_size, void *recv_buf, int recv_size,
                                 int timeout)
{
    int mpi_errno = MPI_SUCCESS;
    struct MPIDI_EFARM_dyn_result res;
    efarm_peer_t peer;

    (void)peer_comm;
    mpi_errno = lpid_peer(remote_lpid, &peer);
    if (mpi_errno)
        return mpi_errno;
    mpi_errno = dyn_exchange_conv(peer, conv_of(peer), tag, send_size > 0 ? send_buf : NULL,
                                  send_size, recv_size > 0 ? recv_buf : NULL, recv_size, timeout,
                                  "a dynamic-process exchange (intercommunicator creation)", &res);
    if (mpi_errno && (res.recv_status == -ETIMEDOUT || res.send_status == -ETIMEDOUT))
        conv_set(peer, 0); /* the conversation is over: its late messages match nothing */
    return mpi_errno;
}

#endif /* MPIDI_EFARM_MPICH_50 */

/* ---- Every version: this process's group as upids ------------------------------------------- */

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

    MPIR_ERR_CHKANDJUMP(MPIDI_EFARM_VCI(0)->ep == NULL, mpi_errno, MPI_ERR_OTHER, "**efarm");
    sizes = MPL_malloc((size_t)n * sizeof(*sizes) + 1, MPL_MEM_ADDRESS);
    upids = MPL_malloc((size_t)n * MPIDI_EFARM_UPID_LEN + 1, MPL_MEM_ADDRESS);
    MPIR_ERR_CHKANDJUMP(!sizes || !upids, mpi_errno, MPI_ERR_OTHER, "**nomem");
    for (int i = 0; i < n; i++) {
        const MPIDI_EFARM_addr_t *a = &MPIDI_EFARM_AV(local_av(comm, i));
        uint8_t raw[EFARM_RAW_ADDR_LEN];
        int ret;

        MPIR_ERR_CHKANDJUMP(a->nrails == 0, mpi_errno, MPI_ERR_OTHER, "**efarm");
        ret = efarm_av_lookup(MPIDI_EFARM_VCI(0)->ep, a->peer, raw);
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
