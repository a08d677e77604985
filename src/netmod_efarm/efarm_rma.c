/*
 * One-sided operations on windows: MPI_Put, MPI_Get, the accumulates,
 * fetch_and_op and compare_and_swap, started by MPIDI_EFARM_rma_start
 * (called from efarm_rma_nm.h) and waited for by MPIDI_EFARM_rma_wait
 * (MPIDIG's completion hooks), and the addressing of a dynamic window's
 * target through the copy of its directory this origin caches. The windows
 * themselves are efarm_win.c's.
 *
 * A native operation is one engine operation (efarm_rma.h), or one per four
 * remote ranges of noncontiguous target data: put is a write
 * with remote completion (DC), get a read, accumulate and get_accumulate,
 * fetch_and_op and compare_and_swap are protocol v4 atomics, applied at the
 * target element by element in the order this process issued them. Each
 * holds an MPI request (the user's for MPI_Rput and friends, an internal one
 * otherwise) and counts in the window's outstanding totals until the engine
 * completes it; MPIDIG's synchronisation waits for those through the
 * completion hooks.
 */
/* MPICH's headers first: mpichconf.h sets the feature macros the system headers read. */
#include "efarm_impl.h"

#include <errno.h>
#include "efarm_noinline.h"
#include "efarm_rma.h"
#include "efarm_win.h"

/* ---- Addressing a dynamic window: the target's directory, cached --------------------------- */

static void dyn_read_done(struct efarm_req *ereq)
{
    *(volatile int *)ereq->ctx = ereq->status < 0 ? ereq->status : 1;
}

/* Read riov of target rank's exposed memory into buf, driving progress until it is there. */
static int dyn_read(MPIR_Win *win, int rank, void *buf, const struct efarm_riov *riov)
{
    const MPIDI_EFARM_win_target_t *t = &MPIDI_EFARM_WIN(win).targets[rank];
    int vci = MPIDI_EFARM_WIN(win).vci;
    struct efarm_req ereq = {.cb = dyn_read_done};
    volatile int state = 0; /* 0 pending, 1 done, < 0 efarm error */
    unsigned long waits = 0;
    int mpi_errno = MPI_SUCCESS, ret;

    ereq.ctx = (void *)&state;
    while ((ret = efarm_read(MPIDI_EFARM_VCI(vci)->ep, t->peer, buf, riov->len, riov, 1, 0,
                             &ereq)) == -EAGAIN) {
        mpi_errno = MPIDI_EFARM_wait_for_slot(MPIDI_EFARM_VCI(vci), &waits);
        MPIR_ERR_CHECK(mpi_errno);
    }
    if (ret == 0) {
        MPIDIU_PROGRESS_WHILE(state == 0, vci);
        ret = state < 0 ? state : 0;
    }
    if (ret < 0)
        mpi_errno = MPIDI_EFARM_ERROR(ret, "reading a dynamic window's directory");

fn_exit:
    return mpi_errno;
fn_fail:
    goto fn_exit;
}

/*
 * Fill riov with ranges covering [addr, addr + len) from the cached
 * directory c: one per attached region the access spans, regions adjacent
 * (MPI lets an access span regions attached next to each other), at most
 * EFARM_RMA_MAX_IOV. Returns how many, or 0 when not covered (or wrapping).
 */
static uint32_t dyn_cover(const dyn_cache_t *c, uint64_t addr, uint64_t len,
                          struct efarm_riov *riov)
{
    uint64_t cur = addr, end = addr + len;
    uint32_t n = 0;

    while (cur < end) {
        uint64_t i;

        for (i = 0; i < c->count; i++)
            if (cur >= c->ent[i].base && cur - c->ent[i].base < c->ent[i].size)
                break;
        if (i == c->count || n == EFARM_RMA_MAX_IOV)
            return 0;
        riov[n].addr = cur;
        riov[n].key = c->ent[i].key;
        riov[n].len = c->ent[i].size - (cur - c->ent[i].base);
        if (riov[n].len > end - cur)
            riov[n].len = end - cur;
        cur += riov[n++].len;
    }
    return n;
}

/*
 * Fill riov (riov[0] has the access's addr and len) with the ranges and keys
 * of target rank's attached regions covering it: from the cached directory,
 * else from fresh reads of it. Not covered: MPI_ERR_RMA_RANGE.
 */
static int dyn_lookup(MPIR_Win *win, int rank, struct efarm_riov *riov, uint32_t *nriov_p)
{
    uint64_t addr = riov[0].addr, len = riov[0].len;
    struct MPIDI_EFARM_dyn *d = MPIDI_EFARM_WIN(win).dyn;
    const MPIDI_EFARM_win_target_t *t = &MPIDI_EFARM_WIN(win).targets[rank];
    dyn_cache_t *c = &d->cache[rank];
    int mpi_errno = MPI_SUCCESS;

    /* Two reads at most: one racing the target's own attach or detach may miss an entry. */
    for (int round = 0;; round++) {
        dyn_header_t hdr;
        struct efarm_riov dir;

        if (c->epoch == d->epoch && (*nriov_p = dyn_cover(c, addr, len, riov)) != 0)
            return MPI_SUCCESS;
        if (round == 2)
            break;
        dir = (struct efarm_riov){.addr = t->base, .len = sizeof(hdr), .key = t->key};
        mpi_errno = dyn_read(win, rank, &hdr, &dir);
        MPIR_ERR_CHECK(mpi_errno);
        MPIDI_EFARM_VCI(d->vci)->nm_counters.rma_dyn_lookups++;
        /* Nothing attached or detached since the entries were read: they still hold. */
        if (round == 0 && c->epoch != 0 && hdr.gen == c->gen && hdr.count == c->count &&
            hdr.entries == c->entries) {
            c->epoch = d->epoch;
            continue;
        }
        /* The header is the peer's data: its count only sizes one read the target checks. */
        if (hdr.count > (uint64_t)INT32_MAX / sizeof(dyn_entry_t))
            break;
        if (hdr.count > c->cap) {
            dyn_entry_t *ent = MPL_realloc(c->ent, hdr.count * sizeof(*ent), MPL_MEM_RMA);

            MPIR_ERR_CHKANDJUMP1(ent == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem", "**nomem %s",
                                 "efarm dynamic window directory");
            c->ent = ent;
            c->cap = hdr.count;
        }
        c->count = 0;
        if (hdr.count > 0) {
            dir = (struct efarm_riov){.addr = hdr.entries,
                                      .len = hdr.count * sizeof(dyn_entry_t),
                                      .key = hdr.entries_key};
            mpi_errno = dyn_read(win, rank, c->ent, &dir);
            MPIR_ERR_CHECK(mpi_errno);
        }
        c->count = hdr.count;
        c->gen = hdr.gen;
        c->entries = hdr.entries;
        c->epoch = d->epoch;
    }
    MPIR_ERR_SETANDJUMP3(mpi_errno, MPI_ERR_RMA_RANGE, "**efarm_dynrange",
                         "**efarm_dynrange %p %d %d", (void *)(uintptr_t)addr, (int)len, rank);

fn_exit:
    return mpi_errno;
fn_fail:
    goto fn_exit;
}

/* ---- Native operations ------------------------------------------------------------------ */

/*
 * MPI's predefined datatypes that are atomic datatypes of protocol v4: by
 * MPI's names, and (MPICH 5.0, whose C bindings hand the netmod internal
 * types) by MPICH's internal ones, which name the kind and the size.
 */
static int atomic_dt(MPI_Datatype dt)
{
    static const struct {
        MPI_Datatype mpi;
        int8_t efarm;
    } map[] = {
#if MPIDI_EFARM_MPICH_50
        {MPIR_INT8, EFARM_DT_INT8},
        {MPIR_UINT8, EFARM_DT_UINT8},
        {MPIR_FIXED8, EFARM_DT_UINT8}, /* MPI_BYTE, MPI_CHAR: MPI allows replace and no-op */
        {MPIR_INT16, EFARM_DT_INT16},
        {MPIR_UINT16, EFARM_DT_UINT16},
        {MPIR_INT32, EFARM_DT_INT32},
        {MPIR_UINT32, EFARM_DT_UINT32},
        {MPIR_INT64, EFARM_DT_INT64},
        {MPIR_UINT64, EFARM_DT_UINT64},
        {MPIR_FLOAT32, EFARM_DT_FLOAT},
        {MPIR_FLOAT64, EFARM_DT_DOUBLE},
        {MPIR_COMPLEX32, EFARM_DT_FLOAT_COMPLEX}, /* two 32-bit floats */
#endif
        {MPI_SIGNED_CHAR, EFARM_DT_INT8},
        {MPI_INT8_T, EFARM_DT_INT8},
        {MPI_UNSIGNED_CHAR, EFARM_DT_UINT8},
        {MPI_UINT8_T, EFARM_DT_UINT8},
        {MPI_BYTE, EFARM_DT_UINT8},
        {MPI_SHORT, EFARM_DT_INT16},
        {MPI_INT16_T, EFARM_DT_INT16},
        {MPI_UNSIGNED_SHORT, EFARM_DT_UINT16},
        {MPI_UINT16_T, EFARM_DT_UINT16},
        {MPI_INT, EFARM_DT_INT32},
        {MPI_INT32_T, EFARM_DT_INT32},
        {MPI_UNSIGNED, EFARM_DT_UINT32},
        {MPI_UINT32_T, EFARM_DT_UINT32},
        {MPI_LONG, sizeof(long) == 8 ? EFARM_DT_INT64 : EFARM_DT_INT32},
        {MPI_UNSIGNED_LONG, sizeof(long) == 8 ? EFARM_DT_UINT64 : EFARM_DT_UINT32},
        {MPI_LONG_LONG, EFARM_DT_INT64},
        {MPI_INT64_T, EFARM_DT_INT64},
        {MPI_UNSIGNED_LONG_LONG, EFARM_DT_UINT64},
        {MPI_UINT64_T, EFARM_DT_UINT64},
        {MPI_AINT, sizeof(MPI_Aint) == 8 ? EFARM_DT_INT64 : EFARM_DT_INT32},
        {MPI_FLOAT, EFARM_DT_FLOAT},
        {MPI_DOUBLE, EFARM_DT_DOUBLE},
        {MPI_C_FLOAT_COMPLEX, EFARM_DT_FLOAT_COMPLEX},
    };

    dt = MPIDI_EFARM_RAW_TYPE(dt);
    for (unsigned i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (map[i].mpi == dt)
            return map[i].efarm;
    return -1;
}

/* MPI's predefined operations that are atomic operations of protocol v4. */
static int atomic_op(MPI_Op op)
{
    static const struct {
        MPI_Op mpi;
        int8_t efarm;
    } map[] = {
        {MPI_SUM, EFARM_AOP_SUM},   {MPI_PROD, EFARM_AOP_PROD},     {MPI_MIN, EFARM_AOP_MIN},
        {MPI_MAX, EFARM_AOP_MAX},   {MPI_LAND, EFARM_AOP_LAND},     {MPI_LOR, EFARM_AOP_LOR},
        {MPI_LXOR, EFARM_AOP_LXOR}, {MPI_BAND, EFARM_AOP_BAND},     {MPI_BOR, EFARM_AOP_BOR},
        {MPI_BXOR, EFARM_AOP_BXOR}, {MPI_REPLACE, EFARM_AOP_WRITE}, {MPI_NO_OP, EFARM_AOP_READ},
    };

    for (unsigned i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (map[i].mpi == op)
            return map[i].efarm;
    return -1;
}

/* A native operation's packed copy (and the datatype reference an unpack holds), its engine
 * requests when there are several. */
static void rma_buffers_free(MPIR_Request *req)
{
    MPIDI_EFARM_request_t *r = &MPIDI_EFARM_REQ(req);

    if (r->user_buf != NULL)
        MPIR_Datatype_release_if_not_builtin(r->user_dt);
    MPL_free(r->pack_buf);
    MPL_free(r->rma_ereqs);
    r->pack_buf = NULL;
    r->user_buf = NULL;
    r->rma_ereqs = NULL;
}

/* Every engine operation of a native MPI operation is done: status 0 or an efarm error. */
static void rma_finish(MPIR_Request *req, int status)
{
    MPIDI_EFARM_request_t *r = &MPIDI_EFARM_REQ(req);
    MPIR_Win *win = r->rma_win;
    MPIDI_EFARM_win_t *w = &MPIDI_EFARM_WIN(win);
    int err = MPI_SUCCESS;

    if (unlikely(status < 0))
        err = MPIDI_EFARM_ERROR(status, "one-sided operation");
    else if (r->user_buf != NULL) {
        /* A get into noncontiguous memory: unpack what was read. */
        MPI_Aint unpacked;

        err = MPIR_Typerep_unpack(r->pack_buf, r->rma_bytes, r->user_buf, r->user_count, r->user_dt,
                                  0, &unpacked MPIDI_EFARM_TYPEREP_FLAGS);
    }
    rma_buffers_free(req);
    if (unlikely(err)) {
        req->status.MPI_ERROR = err;
        if (w->error == MPI_SUCCESS)
            w->error = err;
    }
    w->outstanding--;
    w->outstanding_to[r->rma_target]--;
    r->rma_win = NULL;
    MPIDI_EFARM_request_complete(req);
}

static void rma_done(struct efarm_req *ereq)
{
    MPIR_Request *req = ereq->ctx;
    MPIDI_EFARM_request_t *r = &MPIDI_EFARM_REQ(req);

    if (unlikely(ereq->status < 0) && r->rma_status == 0)
        r->rma_status = ereq->status;
    if (--r->rma_pending == 0)
        rma_finish(req, r->rma_status);
}

/* A contiguous buffer of count elements of dt: its first byte and size, or false. */
static bool contig(const void *buf, MPI_Aint count, MPI_Datatype dt, const uint8_t **p,
                   MPI_Aint *size)
{
    int is_contig;
    MPI_Aint true_lb;
    MPIR_Datatype *dt_ptr;

    MPIDI_Datatype_get_info(count, dt, is_contig, *size, dt_ptr, true_lb);
    (void)dt_ptr;
    *p = (const uint8_t *)MPIR_get_contig_ptr(buf, true_lb);
    return is_contig;
}

/*
 * The remote ranges of one native operation: one per contiguous piece of the
 * target data, and for a dynamic window one per attached region a piece
 * spans. Small operations use the inline array; noncontiguous targets
 * allocate.
 */
typedef struct {
    struct efarm_riov *v;
    size_t n, cap;
    struct efarm_riov inl[EFARM_RMA_MAX_IOV];
} riov_list_t;

/* Append the ranges of the target piece [disp_addr, disp_addr + len) to l. */
static int riov_add(MPIR_Win *win, int rank, uint64_t at, uint64_t len, riov_list_t *l)
{
    MPIDI_EFARM_win_t *w = &MPIDI_EFARM_WIN(win);
    const MPIDI_EFARM_win_target_t *t = &w->targets[rank];
    uint32_t n = 1;
    int mpi_errno = MPI_SUCCESS;

    if (l->cap - l->n < EFARM_RMA_MAX_IOV) {
        size_t cap = l->cap * 2;
        struct efarm_riov *v = MPL_malloc(cap * sizeof(*v), MPL_MEM_RMA);

        MPIR_ERR_CHKANDJUMP1(v == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem", "**nomem %s",
                             "efarm RMA target ranges");
        memcpy(v, l->v, l->n * sizeof(*v));
        if (l->v != l->inl)
            MPL_free(l->v);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n].len = len;
    if (w->dyn != NULL) {
        /* A dynamic window's displacement is an address; the regions attached there have keys. */
        l->v[l->n].addr = at;
        mpi_errno = dyn_lookup(win, rank, &l->v[l->n], &n);
        MPIR_ERR_CHECK(mpi_errno);
    } else {
        l->v[l->n].addr = t->base + at;
        l->v[l->n].key = t->key;
    }
    l->n += n;

fn_exit:
    return mpi_errno;
fn_fail:
    goto fn_exit;
}

/*
 * The target data's remote ranges: contiguous (tcontig), one piece at tgt,
 * its true lower bound; else the datatype's pieces, unless there are more than
 * EFARM_RMA_TARGET_IOV_MAX (then *fallback_p: MPIDIG packs it into one
 * active message, far cheaper than many tiny one-sided operations).
 */
static int target_ranges(MPIR_Win *win, const MPIDI_EFARM_rma_args_t *a, bool tcontig,
                         const uint8_t *tgt, MPI_Aint tsize, riov_list_t *l, bool *fallback_p)
{
    MPIDI_EFARM_win_t *w = &MPIDI_EFARM_WIN(win);
    uint64_t disp =
        (uint64_t)a->target_disp * (w->dyn != NULL ? 1 : w->targets[a->target_rank].disp_unit);
    MPI_Aint niov = 0, got = 0;
    struct iovec *iov = NULL;
    int mpi_errno = MPI_SUCCESS;

    *fallback_p = false;
    if (tcontig)
        return riov_add(win, a->target_rank, disp + (uint64_t)(uintptr_t)tgt, (uint64_t)tsize, l);
    mpi_errno = MPIDI_EFARM_Typerep_iov_len(a->target_count, a->target_dt, tsize, &niov);
    MPIR_ERR_CHECK(mpi_errno);
    if (niov <= 0 || (uint64_t)niov > efarm_config()->rma_target_iov_max) {
        *fallback_p = true;
        goto fn_exit;
    }
    iov = MPL_malloc(sizeof(*iov) * (size_t)niov, MPL_MEM_RMA);
    MPIR_ERR_CHKANDJUMP1(iov == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem", "**nomem %s",
                         "efarm RMA target pieces");
    mpi_errno = MPIR_Typerep_to_iov_offset(NULL, a->target_count, a->target_dt, 0, iov, niov, &got);
    MPIR_ERR_CHECK(mpi_errno);
    for (MPI_Aint i = 0; i < got; i++) {
        if (iov[i].iov_len == 0)
            continue;
        mpi_errno = riov_add(win, a->target_rank, disp + (uint64_t)(uintptr_t)iov[i].iov_base,
                             (uint64_t)iov[i].iov_len, l);
        MPIR_ERR_CHECK(mpi_errno);
    }

fn_exit:
    MPL_free(iov);
    return mpi_errno;
fn_fail:
    goto fn_exit;
}

/* The predefined datatype a datatype is made of (itself if predefined), or MPI_DATATYPE_NULL. */
static MPI_Datatype basic_type(MPI_Datatype dt)
{
    MPI_Datatype b = MPI_DATATYPE_NULL;

    if (HANDLE_IS_BUILTIN(dt))
        return dt;
    MPIR_Datatype_get_basic_type(dt, b);
    return b;
}

/*
 * What a native one-sided operation moves, decided before anything starts:
 * the local data (packed or unpacked through pack_buf when noncontiguous),
 * the target's size, and for atomics the wire datatype, operation and
 * element size.
 */
typedef struct {
    const uint8_t *origin; /* the data sent (put, accumulates) */
    uint8_t *result;       /* where fetched data lands (get, fetching accumulates) */
    const uint8_t *tgt;    /* a contiguous target's true lower bound */
    MPI_Aint tsize;        /* bytes at the target */
    bool tcontig, pack, unpack;
    int dt, op;     /* atomics: enum efarm_atomic_dt and efarm_aop values */
    uint64_t esize; /* atomics: bytes per element (1 otherwise) */
} rma_plan_t;

/*
 * Check: whether this operation can run natively at all (a peer target, data
 * that matches in size, contiguous where it must be, an atomic protocol v4
 * applies), and its plan. False: MPIDIG does it with active messages.
 */
static bool rma_check(MPIR_Win *win, const MPIDI_EFARM_rma_args_t *a, rma_plan_t *p)
{
    const MPIDI_EFARM_win_t *w = &MPIDI_EFARM_WIN(win);
    MPI_Aint osize = 0, rsize = 0;

    memset(p, 0, sizeof(*p));
    p->dt = p->op = -1;
    p->esize = 1;
    if (w->targets == NULL || a->target_rank == win->comm_ptr->rank || a->target_rank < 0 ||
        a->target_rank >= win->comm_ptr->local_size)
        return false; /* ops to itself MPIDIG applies locally */
    if (w->targets[a->target_rank].peer == EFARM_PEER_NONE)
        return false; /* no peer for this VCI pair (logged when it was made) */
    p->tcontig = contig(NULL, a->target_count, a->target_dt, &p->tgt, &p->tsize);
    /* Noncontiguous origin data of a put is packed, of a get unpacked at completion. */
    if (a->kind == MPIDI_EFARM_RMA_PUT || a->kind == MPIDI_EFARM_RMA_ACC ||
        a->kind == MPIDI_EFARM_RMA_CAS ||
        (a->kind == MPIDI_EFARM_RMA_GET_ACC && a->op != MPI_NO_OP)) {
        if (!contig(a->origin, a->origin_count, a->origin_dt, &p->origin, &osize)) {
            if (a->kind != MPIDI_EFARM_RMA_PUT)
                return false;
            p->pack = true;
        }
        if (osize != p->tsize)
            return false;
    }
    if (a->kind != MPIDI_EFARM_RMA_PUT && a->kind != MPIDI_EFARM_RMA_ACC) {
        const uint8_t *result = NULL;

        if (!contig(a->result, a->result_count, a->result_dt, &result, &rsize)) {
            if (a->kind != MPIDI_EFARM_RMA_GET)
                return false;
            p->unpack = true;
        }
        p->result = (uint8_t *)(uintptr_t)result;
        if (rsize != p->tsize)
            return false;
    }
    if (a->kind >= MPIDI_EFARM_RMA_ACC) {
        enum efarm_atomic_kind kind = a->kind == MPIDI_EFARM_RMA_ACC       ? EFARM_ATOMIC_WRITE
                                      : a->kind == MPIDI_EFARM_RMA_GET_ACC ? EFARM_ATOMIC_FETCH
                                                                           : EFARM_ATOMIC_COMPARE;
        MPI_Datatype tb = basic_type(a->target_dt);

#ifndef MPIDI_CH4_DIRECT_NETMOD
        /* Node-local origins may apply accumulates through shared memory: not atomic with us. */
        if (!(MPIDI_WIN(win, winattr) & MPIDI_WINATTR_ACCU_NO_SHM))
            return false;
#endif
        /*
         * One predefined datatype throughout (the target's may be derived from
         * it), and an operation protocol v4 applies to it.
         */
        if (tb == MPI_DATATYPE_NULL ||
            tb != (a->kind == MPIDI_EFARM_RMA_GET_ACC && a->op == MPI_NO_OP ? a->result_dt
                                                                            : a->origin_dt) ||
            (a->kind != MPIDI_EFARM_RMA_ACC && a->result_dt != tb))
            return false;
        p->dt = atomic_dt(tb);
        p->op = a->kind == MPIDI_EFARM_RMA_CAS ? EFARM_AOP_CSWAP : atomic_op(a->op);
        if (p->dt < 0 || p->op < 0 || !efarm_atomic_valid(kind, (uint32_t)p->op, (uint32_t)p->dt))
            return false;
        p->esize = efarm_atomic_dt_size((uint32_t)p->dt);
    }
    return true;
}

/*
 * Plan: the target's remote ranges. *native_p false: too many pieces, or an
 * atomic element split between two (MPIDIG does it).
 */
static int rma_plan(MPIR_Win *win, const MPIDI_EFARM_rma_args_t *a, const rma_plan_t *p,
                    riov_list_t *l, bool *native_p)
{
    bool fallback;
    int mpi_errno = target_ranges(win, a, p->tcontig, p->tgt, p->tsize, l, &fallback);

    *native_p = false;
    if (mpi_errno || fallback)
        return mpi_errno;
    /* Atomics apply whole elements: a piece (or a region boundary in it) splitting one cannot. */
    for (size_t k = 0; p->esize > 1 && k < l->n; k++)
        if (l->v[k].len % p->esize)
            return MPI_SUCCESS;
    *native_p = true;
    return MPI_SUCCESS;
}

/* The request of an operation of nops engine operations, its buffers, the packed origin. */
static int rma_request(MPIR_Win *win, const MPIDI_EFARM_rma_args_t *a, rma_plan_t *p, size_t nops,
                       bool user_request, MPIR_Request **req_p)
{
    MPIR_Request *req = NULL;
    MPIDI_EFARM_request_t *r;
    int mpi_errno = MPI_SUCCESS, vci = MPIDI_EFARM_WIN(win).vci;

    /* From the pool of the window's VCI, whose lock is held: its endpoint completes it. */
    MPIDI_CH4_REQUEST_CREATE(req, MPIR_REQUEST_KIND__RMA, vci, user_request ? 2 : 1);
    MPIR_ERR_CHKANDSTMT(req == NULL, mpi_errno, MPIX_ERR_NOREQ, goto fn_fail, "**nomemreq");
    r = &MPIDI_EFARM_REQ(req);
    r->vci = (uint8_t)vci;
    r->pack_buf = NULL;
    r->user_buf = NULL;
    r->rma_ereqs = NULL;
    r->rma_win = win;
    r->rma_target = a->target_rank;
    r->rma_bytes = p->tsize;
    r->rma_status = 0;
    r->rma_pending = (int)nops;
    if (p->pack || p->unpack || nops > 1) {
        void *tmp = NULL;
        MPI_Aint packed;

        if (p->pack || p->unpack)
            r->pack_buf = tmp = MPL_malloc((size_t)p->tsize, MPL_MEM_RMA);
        if (nops > 1)
            r->rma_ereqs = MPL_malloc(nops * sizeof(*r->rma_ereqs), MPL_MEM_RMA);
        if ((tmp == NULL && (p->pack || p->unpack)) || (nops > 1 && r->rma_ereqs == NULL)) {
            rma_buffers_free(req);
            MPIDI_CH4_REQUEST_FREE(req);
            if (user_request)
                MPIDI_CH4_REQUEST_FREE(req);
            MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**nomem", "**nomem %s",
                                 "efarm RMA buffers");
        }
        if (p->pack) {
            mpi_errno = MPIR_Typerep_pack(a->origin, a->origin_count, a->origin_dt, 0, tmp,
                                          p->tsize, &packed MPIDI_EFARM_TYPEREP_FLAGS);
            MPIR_Assert(mpi_errno || packed == p->tsize);
            if (mpi_errno) {
                /* Nothing started: the call fails and leaves no trace. */
                rma_buffers_free(req);
                MPIDI_CH4_REQUEST_FREE(req);
                if (user_request)
                    MPIDI_CH4_REQUEST_FREE(req);
                goto fn_fail;
            }
            p->origin = tmp;
        } else if (p->unpack) {
            r->user_buf = a->result;
            r->user_count = a->result_count;
            r->user_dt = a->result_dt;
            MPIR_Datatype_add_ref_if_not_builtin(a->result_dt);
            p->result = tmp;
        }
    }
    *req_p = req;

fn_exit:
    return mpi_errno;
fn_fail:
    goto fn_exit;
}

/*
 * Issue: one engine operation per EFARM_RMA_MAX_IOV ranges, each on its slice
 * of the local data, waiting for a slot while the engine has none. Returns
 * the MPI error that stopped it; *started_p is how many began, *ret_p the
 * engine's last result.
 */
static int rma_issue(MPIR_Request *req, const MPIDI_EFARM_rma_args_t *a, const rma_plan_t *p,
                     const riov_list_t *l, size_t nops, size_t *started_p, int *ret_p)
{
    MPIDI_EFARM_request_t *r = &MPIDI_EFARM_REQ(req);
    const MPIDI_EFARM_win_t *w = &MPIDI_EFARM_WIN(r->rma_win);
    const MPIDI_EFARM_win_target_t *t = &w->targets[a->target_rank];
    int mpi_errno = MPI_SUCCESS, ret = 0;
    unsigned long waits = 0;
    size_t k, next = 0;
    uint64_t off = 0;

    for (k = 0; k < nops; k++) {
        struct efarm_req *ereq = nops > 1 ? &r->rma_ereqs[k] : &r->ereq;
        const struct efarm_riov *v = &l->v[next];
        uint32_t n = (uint32_t)(l->n - next < EFARM_RMA_MAX_IOV ? l->n - next : EFARM_RMA_MAX_IOV);
        uint64_t len = 0;

        for (uint32_t i = 0; i < n; i++)
            len += v[i].len;
        ereq->cb = rma_done;
        ereq->ctx = req;
        for (;;) {
            struct efarm_ep *ep = MPIDI_EFARM_VCI(w->vci)->ep;

            switch (a->kind) {
            case MPIDI_EFARM_RMA_PUT:
                ret = efarm_write(ep, t->peer, p->origin + off, len, v, n, EFARM_RMA_DC, ereq);
                break;
            case MPIDI_EFARM_RMA_GET:
                ret = efarm_read(ep, t->peer, p->result + off, len, v, n, 0, ereq);
                break;
            default:
                ret = efarm_atomic(ep, t->peer, (uint32_t)p->op, (uint32_t)p->dt,
                                   p->origin != NULL ? p->origin + off : NULL,
                                   a->kind == MPIDI_EFARM_RMA_CAS ? a->compare : NULL,
                                   a->kind == MPIDI_EFARM_RMA_ACC ? NULL : p->result + off,
                                   len / p->esize, v, n, EFARM_RMA_DC, ereq);
                break;
            }
            if (ret != -EAGAIN)
                break;
            mpi_errno = MPIDI_EFARM_wait_for_slot(MPIDI_EFARM_VCI(w->vci), &waits);
            if (mpi_errno)
                break;
        }
        if (mpi_errno == MPI_SUCCESS && ret < 0)
            mpi_errno = MPIDI_EFARM_ERROR(ret, "one-sided operation");
        if (mpi_errno)
            break;
        next += n;
        off += len;
    }
    *started_p = k;
    *ret_p = ret;
    return mpi_errno;
}

/* A zero-byte operation is done at once; its request (if the user asked for one) too. */
static int rma_empty(MPIR_Request **request, int vci)
{
    MPIR_Request *req = NULL;
    int mpi_errno = MPI_SUCCESS;

    if (request == NULL)
        return MPI_SUCCESS;
    MPIDI_CH4_REQUEST_CREATE(req, MPIR_REQUEST_KIND__RMA, vci, 2);
    MPIR_ERR_CHKANDSTMT(req == NULL, mpi_errno, MPIX_ERR_NOREQ, goto fn_fail, "**nomemreq");
    MPIDI_EFARM_REQ(req).rma_win = NULL;
    MPIDI_EFARM_REQ(req).vci = (uint8_t)vci;
    MPIDI_EFARM_request_complete(req);
    *request = req;

fn_exit:
    return mpi_errno;
fn_fail:
    goto fn_exit;
}

/*
 * One MPI one-sided operation, natively when it can (*native_p): check,
 * plan, issue. Anything it cannot do natively leaves *native_p false for
 * MPIDIG's active messages, having started nothing.
 */
int MPIDI_EFARM_rma_start(MPIR_Win *win, const MPIDI_EFARM_rma_args_t *a, MPIR_Request **request,
                          bool *native_p)
{
    MPIDI_EFARM_win_t *w = &MPIDI_EFARM_WIN(win);
    riov_list_t l = {.v = l.inl, .cap = EFARM_RMA_MAX_IOV};
    MPIR_Request *req = NULL;
    MPIDI_EFARM_request_t *r;
    int mpi_errno = MPI_SUCCESS, ret = 0;
    size_t nops, started;
    rma_plan_t p;
    bool native;

    *native_p = false;
    if (!rma_check(win, a, &p))
        return MPI_SUCCESS;
    MPIDIG_RMA_OP_CHECK_SYNC(a->target_rank, win);
    if (p.tsize == 0) {
        *native_p = true;
        return rma_empty(request, w->vci);
    }
    mpi_errno = rma_plan(win, a, &p, &l, &native);
    MPIR_ERR_CHECK(mpi_errno);
    if (!native)
        goto fn_exit;
    *native_p = true;
    nops = (l.n + EFARM_RMA_MAX_IOV - 1) / EFARM_RMA_MAX_IOV;
    mpi_errno = rma_request(win, a, &p, nops, request != NULL, &req);
    MPIR_ERR_CHECK(mpi_errno);
    r = &MPIDI_EFARM_REQ(req);
    w->outstanding++;
    w->outstanding_to[a->target_rank]++;
    mpi_errno = rma_issue(req, a, &p, &l, nops, &started, &ret);
    if (mpi_errno && started == 0) {
        /* Nothing started: the call fails and leaves no trace. */
        w->outstanding--;
        w->outstanding_to[a->target_rank]--;
        rma_buffers_free(req);
        MPIDI_CH4_REQUEST_FREE(req);
        if (request)
            MPIDI_CH4_REQUEST_FREE(req);
        goto fn_fail;
    }
    if (mpi_errno) {
        /*
         * Some pieces started: they complete; the operation fails, reported as
         * for a failed piece (the request's status), and the window's next
         * synchronisation returns this error itself (the first one wins there).
         */
        if (w->error == MPI_SUCCESS)
            w->error = mpi_errno;
        r->rma_status = ret < 0 && ret != -EAGAIN ? ret : -EIO;
        r->rma_pending -= (int)(nops - started);
        if (r->rma_pending == 0)
            rma_finish(req, r->rma_status);
        mpi_errno = MPI_SUCCESS;
    }
    MPIDI_EFARM_VCI(w->vci)->nm_counters.rma_native_ops++;
    MPIDI_EFARM_VCI(w->vci)->nm_counters.rma_native_bytes += (unsigned long long)p.tsize;
    if (nops > 1)
        MPIDI_EFARM_VCI(w->vci)->nm_counters.rma_native_split++;
    if (request)
        *request = req;

fn_exit:
    if (l.v != l.inl)
        MPL_free(l.v);
    return mpi_errno;
fn_fail:
    goto fn_exit;
}

/*
 * Called with the window's VCI lock held (MPIDIG's completion hooks):
 * MPIDIU_PROGRESS_WHILE yields it, and progresses that VCI, whose endpoint
 * completes the window's native operations.
 */
int MPIDI_EFARM_rma_wait(MPIR_Win *win, int rank)
{
    MPIDI_EFARM_win_t *w = &MPIDI_EFARM_WIN(win);
    int mpi_errno = MPI_SUCCESS;
    int *count = rank < 0 ? &w->outstanding : &w->outstanding_to[rank];

    MPIDIU_PROGRESS_WHILE(*count > 0, w->vci);
    /* A failed operation is reported once, at the first synchronisation after it. */
    mpi_errno = w->error;
    w->error = MPI_SUCCESS;

fn_exit:
    return mpi_errno;
fn_fail:
    goto fn_exit;
}
