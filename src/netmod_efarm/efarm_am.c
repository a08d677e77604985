/*
 * efarm's active-message transport for MPIDIG (see efarm_am.h for the
 * message format).
 *
 * Sending. An operation (struct MPIDI_EFARM_am_op) holds the efarm request
 * and the message: the efarm header, a copy of MPIDIG's header (callers
 * free theirs on return) and the packed payload, in the operation's inline
 * buffer when they fit, else in one allocation. When the engine completes the
 * send, the operation moves to a list and MPIDIG's origin callback runs from
 * MPIDI_NM_progress, outside the engine.
 *
 * Receiving. Progress claims each untagged message the engine holds
 * (efarm_probe) and receives it whole into an operation's buffer. Handlers
 * run strictly in the order messages were claimed, which is the order each
 * sender sent them (MPIDIG relies on it: a rendezvous's data follows its
 * request, an unlock follows the window's operations), even when a short
 * message finishes before a long one claimed earlier. A claimed message whose
 * receive finds every engine operation slot busy keeps its place and starts at
 * a later progress call (claiming pauses meanwhile). Handlers get the data
 * synchronously (no MPIDIG_AM_ATTR__IS_ASYNC) and copy what they keep.
 *
 * Every header and length from the wire is checked before use; a malformed
 * message is dropped with an error in the log and counted, never dispatched.
 */
#include "efarm_impl.h"

/* The efarm header in front of every active message (host byte order; efarm hosts are
 * little-endian). */
typedef struct {
    uint16_t handler_id;
    uint16_t am_hdr_sz;
    uint8_t src_vci;
    uint8_t dst_vci;
    uint16_t reserved; /* 0 */
    uint64_t data_sz;
} MPIDI_EFARM_am_wire_hdr_t;

_Static_assert(sizeof(MPIDI_EFARM_am_wire_hdr_t) == 16, "active-message header is 16 bytes");

/* Messages up to this size live in the operation itself: every header-only one. */
#define MPIDI_EFARM_AM_INLINE (sizeof(MPIDI_EFARM_am_wire_hdr_t) + MPIDI_EFARM_AM_HDR_MAX + 128)
/* Operations allocated at a time when the free list is empty. */
#define MPIDI_EFARM_AM_OP_CHUNK 64
/* Messages claimed per progress call: bounds the time one call spends. */
#define MPIDI_EFARM_AM_CLAIM_MAX 32

enum MPIDI_EFARM_am_op_kind {
    MPIDI_EFARM_AM_OP_SEND,
    MPIDI_EFARM_AM_OP_RECV,
};

struct MPIDI_EFARM_am_op {
    struct efarm_req ereq;
    struct MPIDI_EFARM_am_op *next;
    MPIDI_EFARM_vci_t *vci; /* whose lists and endpoint */
    enum MPIDI_EFARM_am_op_kind kind;
    bool done;
    int handler_id;     /* sends: whose origin callback */
    MPIR_Request *sreq; /* sends: MPIDIG's request, or NULL */
    uint8_t *buf;       /* the message: inline_buf or heap */
    uint64_t len;
    bool heap;
    efarm_tm_handle_t handle; /* receives: the claimed message, until its receive started */
    uint8_t inline_buf[MPIDI_EFARM_AM_INLINE] MPL_ATTR_ALIGNED(8);
};

/* Operations come from a VCI's chunks, which live until finalize; chunk headers chain them. */
struct MPIDI_EFARM_am_chunk {
    struct MPIDI_EFARM_am_chunk *next;
    struct MPIDI_EFARM_am_op ops[MPIDI_EFARM_AM_OP_CHUNK];
};

static struct MPIDI_EFARM_am_op *am_op_alloc(MPIDI_EFARM_vci_t *g, enum MPIDI_EFARM_am_op_kind kind,
                                             uint64_t len)
{
    struct MPIDI_EFARM_am_op *op;

    if (g->am_free == NULL) {
        struct MPIDI_EFARM_am_chunk *chunk = MPL_malloc(sizeof(*chunk), MPL_MEM_BUFFER);

        if (chunk == NULL)
            return NULL;
        chunk->next = g->am_chunks;
        g->am_chunks = chunk;
        for (int i = 0; i < MPIDI_EFARM_AM_OP_CHUNK; i++) {
            /* Finalize frees by these two fields, also in operations never used. */
            chunk->ops[i].buf = NULL;
            chunk->ops[i].heap = false;
            chunk->ops[i].next = g->am_free;
            g->am_free = &chunk->ops[i];
        }
    }
    op = g->am_free;
    if (len <= sizeof(op->inline_buf)) {
        op->buf = op->inline_buf;
        op->heap = false;
    } else {
        op->buf = MPL_malloc(len, MPL_MEM_BUFFER);
        op->heap = op->buf != NULL;
        if (op->buf == NULL)
            return NULL;
    }
    g->am_free = op->next;
    op->next = NULL;
    op->vci = g;
    op->kind = kind;
    op->done = false;
    op->len = len;
    op->sreq = NULL;
    op->handler_id = -1;
    return op;
}

static void am_op_release(struct MPIDI_EFARM_am_op *op)
{
    if (op->heap)
        MPL_free(op->buf);
    op->buf = NULL;
    op->heap = false;
    op->next = op->vci->am_free;
    op->vci->am_free = op;
}

/* ---- Sending ------------------------------------------------------------- */

/* Engine callback: the message is sent. MPIDIG's callback runs from progress. */
static void am_send_done(struct efarm_req *ereq)
{
    struct MPIDI_EFARM_am_op *op = ereq->ctx;
    MPIDI_EFARM_vci_t *g = op->vci;

    op->done = true;
    op->next = NULL;
    if (g->am_sent_tail)
        g->am_sent_tail->next = op;
    else
        g->am_sent_head = op;
    g->am_sent_tail = op;
}

int MPIDI_EFARM_am_send(int rank, MPIR_Comm *comm, int handler_id, const void *am_hdr,
                        MPI_Aint am_hdr_sz, const void *data, MPI_Aint count, MPI_Datatype datatype,
                        int src_vci, int dst_vci, MPIR_Request *sreq)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_EFARM_am_wire_hdr_t hdr;
    struct MPIDI_EFARM_am_op *op = NULL;
    MPI_Aint data_sz = 0;
    MPIDI_av_entry_t *av;
    unsigned long waits = 0;
    /* From VCI src_vci's endpoint (MPIDIG holds its lock) to the target's VCI dst_vci. */
    MPIDI_EFARM_vci_t *v;
    efarm_peer_t peer;
    int ret;

    MPIR_Assert(am_hdr_sz >= 0 && am_hdr_sz <= MPIDI_EFARM_AM_HDR_MAX);
    MPIR_Assert(handler_id >= 0 && handler_id < MPIDI_AM_HANDLERS_MAX);
    MPIR_ERR_CHKANDJUMP2(src_vci < 0 || src_vci >= MPIDI_EFARM_global.nvcis || dst_vci < 0 ||
                             dst_vci >= MPIDI_EFARM_VCI_MAX,
                         mpi_errno, MPI_ERR_OTHER, "**efarm_vci_pair", "**efarm_vci_pair %d %d",
                         src_vci, dst_vci);
    v = MPIDI_EFARM_VCI(src_vci);
    av = MPIDIU_comm_rank_to_av(comm, rank);
    peer = MPIDI_EFARM_vci_peer(src_vci, av, comm, rank, dst_vci);
    MPIR_ERR_CHKANDJUMP2(peer == EFARM_PEER_NONE, mpi_errno, MPI_ERR_OTHER, "**efarm_vci_pair",
                         "**efarm_vci_pair %d %d", src_vci, dst_vci);
    if (count > 0) {
        int dt_contig;
        MPI_Aint dt_true_lb;
        MPIR_Datatype *dt_ptr;

        MPIDI_Datatype_get_info(count, datatype, dt_contig, data_sz, dt_ptr, dt_true_lb);
        (void)dt_contig, (void)dt_true_lb, (void)dt_ptr;
    }

    op = am_op_alloc(v, MPIDI_EFARM_AM_OP_SEND,
                     sizeof(hdr) + (uint64_t)am_hdr_sz + (uint64_t)data_sz);
    MPIR_ERR_CHKANDJUMP1(op == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem", "**nomem %s",
                         "efarm active message");
    hdr.handler_id = (uint16_t)handler_id;
    hdr.am_hdr_sz = (uint16_t)am_hdr_sz;
    hdr.src_vci = (uint8_t)src_vci;
    hdr.dst_vci = (uint8_t)dst_vci;
    hdr.reserved = 0;
    hdr.data_sz = (uint64_t)data_sz;
    memcpy(op->buf, &hdr, sizeof(hdr));
    if (am_hdr_sz > 0)
        memcpy(op->buf + sizeof(hdr), am_hdr, (size_t)am_hdr_sz);
    if (data_sz > 0) {
        MPI_Aint packed = 0;

        mpi_errno = MPIR_Typerep_pack(data, count, datatype, 0, op->buf + sizeof(hdr) + am_hdr_sz,
                                      data_sz, &packed MPIDI_EFARM_TYPEREP_FLAGS);
        MPIR_ERR_CHECK(mpi_errno);
        MPIR_Assert(packed == data_sz);
    }
    op->sreq = sreq;
    op->handler_id = handler_id;
    op->ereq.cb = am_send_done;
    op->ereq.ctx = op;

    while ((ret = efarm_send(v->ep, peer, op->buf, op->len, 0, 0, &op->ereq)) == -EAGAIN) {
        mpi_errno = MPIDI_EFARM_wait_for_slot(v, &waits);
        MPIR_ERR_CHECK(mpi_errno);
    }
    if (ret < 0) {
        mpi_errno = MPIDI_EFARM_ERROR(ret, "efarm_send (active message)");
        goto fn_fail;
    }
    v->nm_counters.am_send++;

fn_exit:
    return mpi_errno;
fn_fail:
    if (op)
        am_op_release(op);
    goto fn_exit;
}

/* ---- Receiving ----------------------------------------------------------- */

static void am_recv_done(struct efarm_req *ereq)
{
    struct MPIDI_EFARM_am_op *op = ereq->ctx;

    op->done = true;
}

/* Start the receive of a claimed message: 0 started, 1 no slot yet, else an MPI error. */
static int am_start_recv(struct MPIDI_EFARM_am_op *op)
{
    int ret;

    op->ereq.cb = am_recv_done;
    op->ereq.ctx = op;
    ret = efarm_tmrecv(op->vci->ep, op->handle, op->buf, op->len, &op->ereq);
    if (ret == -EAGAIN) {
        static unsigned long waits; /* retries of waiting messages, all told */

        op->vci->nm_counters.eagain_waits++;
        MPIDI_EFARM_slot_wait_warning(++waits);
        return 1;
    }
    if (ret < 0)
        return MPIDI_EFARM_ERROR(ret, "efarm_tmrecv (active message)");
    return 0;
}

/* Claim and start receiving the untagged messages VCI g's endpoint holds. */
static int am_claim(MPIDI_EFARM_vci_t *g)
{
    struct efarm_probe_info info;
    uint64_t arrivals;

    if (g->am_unstarted) {
        int ret = am_start_recv(g->am_unstarted);

        if (ret != 0)
            return ret == 1 ? MPI_SUCCESS : ret;
        g->am_unstarted = NULL;
    }
    if (g->am_arrivals == NULL)
        g->am_arrivals = efarm_ep_untagged_arrivals(g->ep);
    arrivals = *g->am_arrivals;
    if (arrivals == g->am_arrivals_seen)
        return MPI_SUCCESS;
    for (int n = 0; n < MPIDI_EFARM_AM_CLAIM_MAX; n++) {
        struct MPIDI_EFARM_am_op *op;
        int ret;

        ret = efarm_probe(g->ep, EFARM_PEER_NONE, false, &info);
        if (ret < 0)
            return MPIDI_EFARM_ERROR(ret, "efarm_probe");
        if (ret == 0) {
            g->am_arrivals_seen = arrivals; /* everything up to here is claimed */
            break;
        }
        /* Allocate first: a message is claimed only once there is room for it. */
        op = am_op_alloc(g, MPIDI_EFARM_AM_OP_RECV, info.msg_length);
        if (op == NULL)
            break; /* no memory now: the message waits in the engine */
        ret = efarm_probe(g->ep, info.peer, true, &info);
        if (ret <= 0 || info.msg_length != op->len) {
            /* Not the message just seen (cannot happen single-threaded): retry later. */
            am_op_release(op);
            if (ret < 0)
                return MPIDI_EFARM_ERROR(ret, "efarm_probe");
            break;
        }
        op->handle = info.handle;
        ret = am_start_recv(op);
        if (ret != 0 && ret != 1) {
            am_op_release(op);
            return ret;
        }
        /* Dispatch order is claim order, also for a message still waiting for a slot. */
        op->next = NULL;
        if (g->am_recv_tail)
            g->am_recv_tail->next = op;
        else
            g->am_recv_head = op;
        g->am_recv_tail = op;
        g->am_recv_pending++;
        if (ret == 1) {
            g->am_unstarted = op;
            break;
        }
    }
    return MPI_SUCCESS;
}

/* Validate one received message and run its MPIDIG handler. */
static int am_dispatch(struct MPIDI_EFARM_am_op *op)
{
    MPIDI_EFARM_am_wire_hdr_t hdr;
    uint32_t attr = 0;
    uint8_t *am_hdr, *data;
    int mpi_errno;

    if (op->ereq.status < 0 || op->ereq.length != op->len || op->len < sizeof(hdr)) {
        MPL_internal_error_printf("ch4:efarm: dropped an active message (status %d, %llu of "
                                  "%llu bytes)\n",
                                  op->ereq.status, (unsigned long long)op->ereq.length,
                                  (unsigned long long)op->len);
        return MPI_SUCCESS;
    }
    memcpy(&hdr, op->buf, sizeof(hdr));
    if (hdr.am_hdr_sz > MPIDI_EFARM_AM_HDR_MAX ||
        hdr.data_sz != op->len - sizeof(hdr) - hdr.am_hdr_sz ||
        sizeof(hdr) + hdr.am_hdr_sz > op->len || hdr.handler_id >= MPIDI_AM_HANDLERS_MAX ||
        hdr.dst_vci != op->vci - MPIDI_EFARM_VCI(0) || hdr.src_vci >= MPIDI_EFARM_VCI_MAX ||
        MPIDIG_global.target_msg_cbs[hdr.handler_id] == NULL) {
        MPL_internal_error_printf("ch4:efarm: dropped a malformed active message (handler %u, "
                                  "header %u bytes, data %llu bytes, message %llu bytes, VCI "
                                  "%u to %u, arrived on VCI %d)\n",
                                  hdr.handler_id, hdr.am_hdr_sz, (unsigned long long)hdr.data_sz,
                                  (unsigned long long)op->len, hdr.src_vci, hdr.dst_vci,
                                  (int)(op->vci - MPIDI_EFARM_VCI(0)));
        return MPI_SUCCESS;
    }
    am_hdr = op->buf + sizeof(hdr);
    data = am_hdr + hdr.am_hdr_sz;
    MPIDIG_AM_ATTR_SET_VCIS(attr, hdr.src_vci, hdr.dst_vci);
    op->vci->nm_counters.am_recv++;
    mpi_errno = MPIDIG_global.target_msg_cbs[hdr.handler_id](am_hdr, data, (MPI_Aint)hdr.data_sz,
                                                             attr, NULL);
    return mpi_errno;
}

int MPIDI_EFARM_am_progress(MPIDI_EFARM_vci_t *g)
{
    int mpi_errno = MPI_SUCCESS;

    /* A handler that polls progress must not dispatch the next message under itself. */
    if (g->am_dispatching)
        return MPI_SUCCESS;
    g->am_dispatching = true;

    while (g->am_sent_head) {
        struct MPIDI_EFARM_am_op *op = g->am_sent_head;

        g->am_sent_head = op->next;
        if (g->am_sent_head == NULL)
            g->am_sent_tail = NULL;
        if (op->sreq) {
            MPIR_Request *sreq = op->sreq;
            int handler_id = op->handler_id;

            if (op->ereq.status < 0)
                sreq->status.MPI_ERROR = MPIDI_EFARM_ERROR(op->ereq.status, "active message");
            am_op_release(op);
            mpi_errno = MPIDIG_global.origin_cbs[handler_id](sreq);
            if (mpi_errno)
                goto fn_exit;
        } else {
            am_op_release(op);
        }
    }

    mpi_errno = am_claim(g);
    if (mpi_errno)
        goto fn_exit;

    while (g->am_recv_head && g->am_recv_head->done) {
        struct MPIDI_EFARM_am_op *op = g->am_recv_head;

        g->am_recv_head = op->next;
        if (g->am_recv_head == NULL)
            g->am_recv_tail = NULL;
        g->am_recv_pending--;
        mpi_errno = am_dispatch(op);
        am_op_release(op);
        if (mpi_errno)
            goto fn_exit;
    }

fn_exit:
    g->am_dispatching = false;
    return mpi_errno;
}

/* At finalize: operations still in the engine die with the endpoint; free the memory. */
void MPIDI_EFARM_am_finalize(MPIDI_EFARM_vci_t *g)
{
    for (struct MPIDI_EFARM_am_chunk *c = g->am_chunks; c;) {
        struct MPIDI_EFARM_am_chunk *next = c->next;

        for (int i = 0; i < MPIDI_EFARM_AM_OP_CHUNK; i++)
            if (c->ops[i].heap)
                MPL_free(c->ops[i].buf);
        MPL_free(c);
        c = next;
    }
    g->am_chunks = NULL;
    g->am_unstarted = NULL;
    g->am_arrivals = NULL;
    g->am_arrivals_seen = 0;
    g->am_free = NULL;
    g->am_recv_head = g->am_recv_tail = NULL;
    g->am_sent_head = g->am_sent_tail = NULL;
    g->am_recv_pending = 0;
}
