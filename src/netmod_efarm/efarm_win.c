/*
 * Windows: MPIDIG creates, synchronises and frees them; its hooks are where
 * efarm exposes each window's memory and exchanges keys (win_native_init),
 * and where a dynamic window keeps the directory of its attached regions
 * (efarm_win.h), which origins read to address it. The operations on
 * windows, and that reading, are efarm_rma.c's. Partitioned communication
 * is MPIDIG's.
 */
/* MPICH's headers first: mpichconf.h sets the feature macros the system headers read. */
#include "efarm_impl.h"

#include <errno.h>
#include "efarm_noinline.h"
#include "efarm_rma.h"
#include "efarm_win.h"

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

/* ---- Window memory: exposed with the engine, exchanged with the window's group ---------- */

/* What each member tells the others at window creation. */
typedef struct {
    uint64_t base, size, key;
    uint32_t disp_unit, ok;
    uint32_t vci, pad; /* the member's window VCI: its endpoint is the one to reach */
} win_info_t;

/*
 * The engine's exposure calls, on the endpoint of the window's VCI and under
 * its lock (MPIDI_EFARM_VCI_ENTER): the window hooks run without it and do
 * collectives between these calls. Peers reach the memory through that
 * endpoint only (its protection domain and region table).
 */
static int win_expose(int vci, void *base, uint64_t len, unsigned access,
                      struct efarm_region **region_p)
{
    int ret;

    MPIDI_EFARM_VCI_ENTER(vci);
    ret = efarm_expose(MPIDI_EFARM_VCI(vci)->ep, base, len, access, region_p);
    MPIDI_EFARM_VCI_EXIT(vci);
    return ret;
}

static void win_unexpose(int vci, struct efarm_region *region)
{
    MPIDI_EFARM_VCI_ENTER(vci);
    efarm_unexpose(MPIDI_EFARM_VCI(vci)->ep, region);
    MPIDI_EFARM_VCI_EXIT(vci);
}

/*
 * Make this window's RMA native if every member can: expose this process's
 * memory (efarm_expose: the device registration and the region table the
 * engine checks peers' accesses against), exchange base, size, disp_unit and
 * key, and mark the window MPIDI_WINATTR_NM_REACHABLE. If any member cannot
 * (EFARM_RMA_NATIVE=0, access 0, or its registration failed), nobody exposes and the
 * window's RMA all goes through MPIDIG. Collective over the window's group.
 */
static int win_native_init(MPIR_Win *win, void *base, MPI_Aint size, unsigned access)
{
    MPIDI_EFARM_win_t *w = &MPIDI_EFARM_WIN(win);
    MPIR_Comm *comm = win->comm_ptr;
    win_info_t mine = {0}, *all = NULL;
    int mpi_errno = MPI_SUCCESS, n = comm->local_size;
    bool all_ok = true;

    memset(w, 0, sizeof(*w));
    /*
     * Native operations run on the endpoint of the window's VCI (MPIDIG's
     * am_vci: MPICH 5.0 spreads windows over the VCIs, a stream
     * communicator's window takes each member's stream VCI), whose lock
     * MPIDIG's completion hooks hold while they wait for them; the memory is
     * exposed there and peers reach it at the owner's window VCI.
     */
    w->vci = MPIDI_EFARM_WIN_VCI(win);
    mine.vci = (uint32_t)w->vci;
    mine.ok = access != 0 && efarm_config()->rma_native && MPIDI_EFARM_VCI(w->vci)->ep != NULL;
    if (mine.ok) {
        int ret = win_expose(w->vci, base, (uint64_t)size, access, &w->region);

        if (ret) {
            /* A refused registration was reported once by the engine, naming its limit. */
            if (ret != -ENOMEM && ret != -EPERM)
                fprintf(stderr,
                        "efarm: cannot expose a window of %lld bytes for native RMA (%s); its "
                        "RMA goes through active messages\n",
                        (long long)size, efarm_strerror(ret));
            mine.ok = 0;
        } else {
            mine.base = (uint64_t)(uintptr_t)base;
            mine.size = (uint64_t)size;
            mine.key = efarm_region_key(w->region);
            mine.disp_unit = (uint32_t)win->disp_unit;
        }
    }
    all = MPL_malloc(sizeof(*all) * n, MPL_MEM_RMA);
    MPIR_ERR_CHKANDJUMP1(all == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem", "**nomem %s",
                         "efarm window table");
    mpi_errno = MPIDI_EFARM_Allgather_bytes(&mine, all, (MPI_Aint)sizeof(mine), comm);
    MPIR_ERR_CHECK(mpi_errno);
    for (int r = 0; r < n; r++)
        all_ok = all_ok && all[r].ok;
    if (all_ok) {
        w->targets = MPL_malloc(sizeof(*w->targets) * n, MPL_MEM_RMA);
        w->outstanding_to = MPL_calloc(n, sizeof(int), MPL_MEM_RMA);
        all_ok = w->targets != NULL && w->outstanding_to != NULL;
    }
    /* Every member reached the same answer unless a table allocation failed here. */
    if (all_ok) {
        /*
         * A member's peer is made on first use of a VCI pair (EFARM_PEER_NONE
         * when it cannot be, logged there: operations to that member go
         * through MPIDIG, rma_check).
         */
        MPIDI_EFARM_VCI_ENTER(w->vci);
        for (int r = 0; r < n; r++) {
            w->targets[r].base = all[r].base;
            w->targets[r].size = all[r].size;
            w->targets[r].key = all[r].key;
            w->targets[r].disp_unit = all[r].disp_unit;
            w->targets[r].peer = r == comm->rank
                                     ? EFARM_PEER_NONE
                                     : MPIDI_EFARM_vci_peer(w->vci, MPIDIU_comm_rank_to_av(comm, r),
                                                            comm, r, (int)all[r].vci);
        }
        MPIDI_EFARM_VCI(w->vci)->nm_counters.rma_native_windows++;
        MPIDI_EFARM_VCI_EXIT(w->vci);
        MPIDI_WIN(win, winattr) |= MPIDI_WINATTR_NM_REACHABLE;
    } else {
        MPL_free(w->targets);
        MPL_free(w->outstanding_to);
        w->targets = NULL;
        w->outstanding_to = NULL;
        if (w->region != NULL)
            win_unexpose(w->vci, w->region);
        w->region = NULL;
        MPIDI_WIN(win, winattr) &= ~(MPIDI_winattr_t)MPIDI_WINATTR_NM_REACHABLE;
        MPIDI_EFARM_VCI(w->vci)->nm_counters.rma_fallback_windows++;
    }

fn_exit:
    MPL_free(all);
    return mpi_errno;
fn_fail:
    goto fn_exit;
}

int MPIDI_EFARM_mpi_win_create_hook(MPIR_Win *win)
{
    return win_native_init(win, win->base, win->size, EFARM_EXPOSE_READ | EFARM_EXPOSE_WRITE);
}

int MPIDI_EFARM_mpi_win_allocate_hook(MPIR_Win *win)
{
    return win_native_init(win, win->base, win->size, EFARM_EXPOSE_READ | EFARM_EXPOSE_WRITE);
}

/*
 * Shared windows: each member's segment (win->base, win->size after MPIDIG
 * allocated the node's shared memory) is exposed like an allocated window's;
 * node-local processes may also use it by load and store.
 */
int MPIDI_EFARM_mpi_win_allocate_shared_hook(MPIR_Win *win)
{
    return win_native_init(win, win->base, win->size, EFARM_EXPOSE_READ | EFARM_EXPOSE_WRITE);
}

/* ---- Dynamic windows: a directory of attached regions, read by origins ---------------- */

#define DYN_FIRST_CAP 8

static void dyn_free(struct MPIDI_EFARM_dyn *d, int nranks, int vci)
{
    struct efarm_ep *ep = MPIDI_EFARM_VCI(vci)->ep;

    if (d == NULL)
        return;
    MPIDI_EFARM_VCI_ENTER(vci); /* as win_unexpose */
    for (uint64_t i = 0; d->hdr != NULL && i < d->hdr->count; i++)
        efarm_unexpose(ep, d->attached[i]);
    efarm_unexpose(ep, d->ent_region);
    while (d->retired != NULL) {
        dyn_retired_t *r = d->retired;

        d->retired = r->next;
        efarm_unexpose(ep, r->region);
        MPL_free(r->ent);
        MPL_free(r);
    }
    MPIDI_EFARM_VCI_EXIT(vci);
    for (int r = 0; d->cache != NULL && r < nranks; r++)
        MPL_free(d->cache[r].ent);
    MPL_free(d->cache);
    MPL_free(d->attached);
    MPL_free(d->ent);
    MPL_free(d->hdr);
    MPL_free(d);
}

/* An exposed, zeroed entry array of cap entries, or an efarm error. */
static int dyn_entries_new(int vci, uint64_t cap, dyn_entry_t **ent_p,
                           struct efarm_region **region_p)
{
    dyn_entry_t *ent = MPL_calloc(cap, sizeof(*ent), MPL_MEM_RMA);
    int ret;

    if (ent == NULL)
        return -ENOMEM;
    ret = win_expose(vci, ent, cap * sizeof(*ent), EFARM_EXPOSE_READ, region_p);
    if (ret) {
        MPL_free(ent);
        return ret;
    }
    *ent_p = ent;
    return 0;
}

int MPIDI_EFARM_mpi_win_create_dynamic_hook(MPIR_Win *win)
{
    MPIDI_EFARM_win_t *w = &MPIDI_EFARM_WIN(win);
    struct MPIDI_EFARM_dyn *d = NULL;
    int mpi_errno = MPI_SUCCESS, n = win->comm_ptr->local_size, vci = MPIDI_EFARM_WIN_VCI(win);

    memset(w, 0, sizeof(*w));
    if (efarm_config()->rma_native && MPIDI_EFARM_VCI(vci)->ep != NULL) {
        d = MPL_calloc(1, sizeof(*d), MPL_MEM_RMA);
        if (d != NULL) {
            d->vci = vci;
            d->hdr = MPL_calloc(1, sizeof(*d->hdr), MPL_MEM_RMA);
            d->attached = MPL_calloc(DYN_FIRST_CAP, sizeof(*d->attached), MPL_MEM_RMA);
            d->cache = MPL_calloc((size_t)n, sizeof(*d->cache), MPL_MEM_RMA);
        }
        if (d == NULL || d->hdr == NULL || d->attached == NULL || d->cache == NULL ||
            dyn_entries_new(vci, DYN_FIRST_CAP, &d->ent, &d->ent_region) != 0) {
            dyn_free(d, n, vci);
            d = NULL;
        } else {
            d->cap = DYN_FIRST_CAP;
            d->hdr->entries = (uint64_t)(uintptr_t)d->ent;
            d->hdr->entries_key = efarm_region_key(d->ent_region);
            d->epoch = 1;
        }
    }
    /*
     * The header is what each member exposes and exchanges, as a window's
     * memory; a member without a directory takes part saying "not native"
     * (access 0) and the whole window falls back to MPIDIG.
     */
    if (d != NULL)
        mpi_errno = win_native_init(win, d->hdr, sizeof(*d->hdr), EFARM_EXPOSE_READ);
    else
        mpi_errno = win_native_init(win, NULL, 0, 0);
    if (mpi_errno == MPI_SUCCESS && w->targets != NULL && d != NULL)
        w->dyn = d;
    else
        dyn_free(d, n, vci);
    return mpi_errno;
}
/* Make room for one more directory entry: a larger array, exposed, replaces the full one. */
static int dyn_grow(struct MPIDI_EFARM_dyn *d)
{
    uint64_t cap = d->cap * 2;
    dyn_entry_t *ent;
    struct efarm_region *region;
    struct efarm_region **attached = MPL_realloc(d->attached, cap * sizeof(*attached), MPL_MEM_RMA);
    dyn_retired_t *old = MPL_malloc(sizeof(*old), MPL_MEM_RMA);
    int ret;

    if (attached != NULL)
        d->attached = attached;
    if (attached == NULL || old == NULL) {
        MPL_free(old);
        return -ENOMEM;
    }
    ret = dyn_entries_new(d->vci, cap, &ent, &region);
    if (ret) {
        MPL_free(old);
        return ret;
    }
    memcpy(ent, d->ent, d->hdr->count * sizeof(*ent));
    /* An origin reading the old array meanwhile still finds it exposed and intact. */
    old->ent = d->ent;
    old->region = d->ent_region;
    old->next = d->retired;
    d->retired = old;
    d->ent = ent;
    d->ent_region = region;
    d->cap = cap;
    d->hdr->entries_key = efarm_region_key(region);
    __atomic_store_n(&d->hdr->entries, (uint64_t)(uintptr_t)ent, __ATOMIC_RELEASE);
    return 0;
}

int MPIDI_EFARM_mpi_win_attach_hook(MPIR_Win *win, void *base, MPI_Aint size)
{
    struct MPIDI_EFARM_dyn *d = MPIDI_EFARM_WIN(win).dyn;
    struct efarm_region *region = NULL;
    uint64_t n;
    int ret, mpi_errno = MPI_SUCCESS;

    if (d == NULL || size == 0)
        return MPI_SUCCESS; /* RMA through MPIDIG, or nothing peers could access */
    n = d->hdr->count;
    ret = n == d->cap ? dyn_grow(d) : 0;
    if (ret == 0)
        ret = win_expose(d->vci, base, (uint64_t)size, EFARM_EXPOSE_READ | EFARM_EXPOSE_WRITE,
                         &region);
    if (ret)
        return MPIDI_EFARM_ERROR(ret, "exposing memory attached to a dynamic window");
    d->ent[n].base = (uint64_t)(uintptr_t)base;
    d->ent[n].size = (uint64_t)size;
    d->ent[n].key = efarm_region_key(region);
    d->attached[n] = region;
    /* The entry is complete before an origin's read can count it. */
    __atomic_store_n(&d->hdr->count, n + 1, __ATOMIC_RELEASE);
    d->hdr->gen++;
    MPIDI_EFARM_VCI(d->vci)->nm_counters.rma_dyn_attached++;
    return mpi_errno;
}

int MPIDI_EFARM_mpi_win_detach_hook(MPIR_Win *win, const void *base)
{
    struct MPIDI_EFARM_dyn *d = MPIDI_EFARM_WIN(win).dyn;
    uint64_t n;

    if (d == NULL)
        return MPI_SUCCESS;
    n = d->hdr->count;
    for (uint64_t i = 0; i < n; i++) {
        if (d->ent[i].base != (uint64_t)(uintptr_t)base)
            continue;
        win_unexpose(d->vci, d->attached[i]);
        /* The last entry takes the freed slot, then the count drops. */
        d->ent[i] = d->ent[n - 1];
        d->attached[i] = d->attached[n - 1];
        __atomic_store_n(&d->hdr->count, n - 1, __ATOMIC_RELEASE);
        d->hdr->gen++;
        return MPI_SUCCESS;
    }
    /* Memory attached with size 0 has no entry; MPI leaves other bases undefined. */
    return MPI_SUCCESS;
}

int MPIDI_EFARM_mpi_win_free_hook(MPIR_Win *win)
{
    MPIDI_EFARM_win_t *w = &MPIDI_EFARM_WIN(win);
    int mpi_errno = MPI_SUCCESS;

    /* MPI_Win_free follows the last synchronisation: nothing native is left, but be sure. */
    if (w->outstanding) {
        MPIDI_EFARM_VCI_ENTER(w->vci); /* MPIDIU_PROGRESS_WHILE yields it */
        mpi_errno = MPIDI_EFARM_rma_wait(win, -1);
        MPIDI_EFARM_VCI_EXIT(w->vci);
    }
    if (MPIDI_EFARM_VCI(w->vci)->ep != NULL) {
        if (w->region != NULL)
            win_unexpose(w->vci, w->region);
        dyn_free(w->dyn, win->comm_ptr->local_size, w->vci);
    }
    w->region = NULL;
    w->dyn = NULL;
    MPL_free(w->targets);
    MPL_free(w->outstanding_to);
    w->targets = NULL;
    w->outstanding_to = NULL;
    return mpi_errno;
}

/* Every target's cached directory is stale from here on (an epoch opens, MPI_Win_sync). */
void MPIDI_EFARM_rma_sync_point(MPIR_Win *win)
{
    int vci = MPIDI_EFARM_WIN(win).vci;

    MPIDI_EFARM_VCI_ENTER(vci); /* before MPIDIG's synchronisation, which takes it itself */
    if (MPIDI_EFARM_WIN(win).dyn != NULL)
        MPIDI_EFARM_WIN(win).dyn->epoch++;
    MPIDI_EFARM_VCI_EXIT(vci);
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
    return MPIDI_EFARM_precv_init(buf, partitions, count, datatype, rank, tag, comm, info, req_p);
}
