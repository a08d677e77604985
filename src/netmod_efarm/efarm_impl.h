/*
 * ch4:efarm's shared declarations: the netmod's global state, rank to peer
 * lookup, and the two ways an efarm call ends in MPICH's error handling.
 *
 * The netmod is glue: it turns MPI objects into efarm_* calls on one engine
 * endpoint (efarm_proto.h) and efarm's negative error codes into mpi_errno.
 * Nothing below this layer knows MPICH.
 */
/*
 * MPICH first, outside the guard: in the inline build (--enable-ch4-netmod-inline)
 * mpidimpl.h includes the netmod's inline headers, which include this file; had
 * the guard been set first, they would see none of the declarations below.
 */
#include <mpidimpl.h>

#ifndef EFARM_IMPL_H_INCLUDED
#define EFARM_IMPL_H_INCLUDED

#include "efarm_compat.h"
#ifndef MPICH_THREAD_GRANULARITY /* efarm_compat.h checks it; it must have been seen */
#error "mpidimpl.h did not define MPICH_THREAD_GRANULARITY"
#endif
#include "efarm_config.h"
#include "efarm_errno.h"
#include "efarm_log.h"
#include "efarm_proto.h"

/* The netmod's own counters (MPI_T pvars efarm_nm_*, beside the engine's efarm_*). */
#define MPIDI_EFARM_NM_COUNTER_LIST(X)                                                    \
    X(send_msgs, "native point-to-point sends started")                                   \
    X(send_bytes, "payload bytes of native point-to-point sends")                         \
    X(recv_msgs, "native point-to-point receives completed with data")                    \
    X(recv_bytes, "payload bytes delivered by native point-to-point")                     \
    X(am_send, "active messages sent (MPIDIG over efarm)")                                \
    X(am_recv, "active messages received and dispatched to MPIDIG")                       \
    X(eagain_waits, "engine calls retried after progress (no free slot)")                 \
    X(rma_native_ops, "RMA operations carried natively (efarm_write/read/atomic)")        \
    X(rma_native_bytes, "bytes of native RMA operations")                                 \
    X(rma_fallback_ops, "RMA operations sent through MPIDIG (active messages)")           \
    X(rma_native_windows, "windows whose RMA may go native")                              \
    X(rma_fallback_windows, "windows whose RMA all goes through MPIDIG")                  \
    X(rma_native_split, "native RMA operations carried by several engine operations")     \
    X(rma_dyn_attached, "regions attached to dynamic windows with native RMA")            \
    X(rma_dyn_lookups, "reads of a peer's dynamic-window directory (cache misses)")       \
    X(stripe_sends, "messages sent striped over the rails (EFARM_RAILS)")                 \
    X(stripe_recvs, "striped messages received")                                          \
    X(stripe_tail_waits, "striped receives whose rail parts waited for an engine slot")   \
    X(dyn_sends, "dynamic-process bootstrap messages sent (connect, accept)")             \
    X(dyn_recvs, "dynamic-process bootstrap messages received")                           \
    X(dyn_timeouts, "dynamic-process exchanges that timed out")                           \
    X(dyn_peers_new, "upids naming a process new to efarm (4.x: to every address table)") \
    X(dyn_peers_reused, "upids naming a process efarm knew (4.x: a table held it)")       \
    X(progress_calls, "calls of the netmod's progress (ch4's progress engine polls)")     \
    X(progress_idle, "progress calls that found nothing to do (no completion, no message)")

typedef struct {
#define MPIDI_EFARM_NM_COUNTER_MEMBER_(name, doc) unsigned long long name;
    MPIDI_EFARM_NM_COUNTER_LIST(MPIDI_EFARM_NM_COUNTER_MEMBER_)
#undef MPIDI_EFARM_NM_COUNTER_MEMBER_
} MPIDI_EFARM_nm_counters_t;

struct MPIDI_EFARM_am_op;

/*
 * One VCI's netmod state: its engine endpoint (and the rails beside it), its
 * active messages, and what its progress keeps between calls. Everything a
 * VCI's progress or its entry points change lives here, so that VCIs share
 * nothing on the data path; the process-wide rest is in MPIDI_EFARM_global_t.
 * VCI 0's endpoint opens at init_local, the others' when ch4 sets the VCIs
 * (per-VCI critical sections: comm_set_vcis on MPICH 5.0, init_vcis on 4.3;
 * doc/NETMOD.md, "Threads").
 */
typedef struct MPIDI_EFARM_vci {
    struct efarm_ep *ep; /* the VCI's endpoint: VCI 0's from init_local, the others' from
                            comm_set_vcis or init_vcis, to finalize */
    /*
     * This endpoint's peers for the other processes' VCIs, made on first use
     * (MPIDI_EFARM_vci_peer): world rank r's VCI d at peer_rows[r][d],
     * EFARM_PEER_NONE until then; a rank's row is allocated at its first
     * use. NULL with one VCI everywhere.
     */
    efarm_peer_t **peer_rows;
    MPIDI_EFARM_nm_counters_t nm_counters; /* summed over the VCIs for MPI_T */
    /* Active messages (efarm_am.c). */
    struct MPIDI_EFARM_am_chunk *am_chunks;                /* where operations come from */
    struct MPIDI_EFARM_am_op *am_free;                     /* free operations */
    struct MPIDI_EFARM_am_op *am_recv_head, *am_recv_tail; /* claimed, in arrival order */
    struct MPIDI_EFARM_am_op *am_sent_head, *am_sent_tail; /* sends done, origin_cb due */
    unsigned am_recv_pending;                              /* claimed, not yet dispatched */
    bool am_dispatching;                                   /* inside a target handler */
    /*
     * A claimed message whose receive could not start (every engine operation
     * slot busy, -EAGAIN); it keeps its place in the dispatch order and starts
     * at a later progress call. Claiming stops while there is one, so there is
     * at most one.
     */
    struct MPIDI_EFARM_am_op *am_unstarted;
    /*
     * The engine's count of untagged messages queued unexpected, and its value
     * when probing last found none: while the two agree there is nothing to
     * claim, and MPIDI_EFARM_am_idle() tells without a call.
     */
    const uint64_t *am_arrivals;
    uint64_t am_arrivals_seen;
    /* Progress calls in a row that found nothing (EFARM_YIELD_POLLS). */
    unsigned idle_polls;
    /*
     * Multi-rail (efarm_stripe.c): rails[0] is ep; rails 1 .. nrails-1 are
     * endpoints on the other NICs tied for nearest, carrying only the tails of
     * striped messages.
     */
    struct efarm_ep *rails[MPIDI_EFARM_RAILS_MAX];
    uint32_t stripe_id;                               /* the last striped message's id */
    struct MPIDI_EFARM_stripe *post_head, *post_tail; /* receives with tails to post */
    /*
     * Receives whose last reference the next progress call drops (MPICH 4.3's
     * any-source pairs completed while posting, efarm_p2p.h).
     */
    struct MPIR_Request *release_later;
} MPIDI_EFARM_vci_t;

/*
 * Most VCIs the netmod serves: as many as ch4 has under per-VCI critical
 * sections (MPICH 4.3 and later, MPIDI_CH4_MAX_VCIS), else one.
 */
#if MPIDI_EFARM_PER_VCI
#define MPIDI_EFARM_VCI_MAX MPIDI_CH4_MAX_VCIS
#else
#define MPIDI_EFARM_VCI_MAX 1
#endif

/* Process-wide netmod state. */
typedef struct {
    MPIDI_EFARM_vci_t vci[MPIDI_EFARM_VCI_MAX];
    int nvcis; /* VCIs with an endpoint: 0 before init_local, then 1, then ch4's (set_vcis) */
    /*
     * With more than one VCI anywhere (set_vcis): every world rank's VCI
     * addresses, vci_cards_n slots of EFARM_RAW_ADDR_LEN bytes each (zeros
     * past its own count), and the world's size; NULL otherwise.
     */
    uint8_t *vci_cards;
    int vci_cards_n, vci_cards_ranks;
    /* What VCI 0's endpoint was opened with (the other VCIs' are alike, on rail_device). */
    struct efarm_ep_attr ep_attr;
    char ep_device[EFARM_DEV_NAME_MAX];
    /* Each rail's device (rail 0: ep_device): VCI v's endpoint opens on rail v % nrails's. */
    char rail_device[MPIDI_EFARM_RAILS_MAX][EFARM_DEV_NAME_MAX];
    /* Engine counters as they were at finalize, for MPI_T reads after it. */
    struct efarm_counters final_counters;
    /* How many idle progress calls in a row make one yield (EFARM_YIELD_POLLS). */
    unsigned yield_polls;
    /* The NIC chosen at init_local (MPI_T: efarm_nm_nic_*). */
    struct efarm_nic_choice nic;
    unsigned long long nic_index, nic_nearness, nic_devices, nic_sharing, nic_local_ranks;
    /* The endpoint's selection thresholds (MPI_T: efarm_nm_medium_max, ...). */
    unsigned long long medium_max, read_min, read_min_unreg, runt_min, medium_max_stream;
    unsigned long long read_min_stream, read_min_stream_unreg;
    /* Where communicators keep efarm's info hints (MPICH's comm->hints[], see efarm_noinline.c). */
    int hint_fanin, hint_proto;
    /* Rails per VCI (MPI_T efarm_nm_rails; 1 without multi-rail), and the striping threshold. */
    unsigned long long nrails;
    uint64_t stripe_min;
    /* Engine peers some AV entry names (one bit per peer): MPIDI_EFARM_peer_name. */
    uint8_t *named_peers;
    size_t named_peers_len; /* bytes */
} MPIDI_EFARM_global_t;

extern MPIDI_EFARM_global_t MPIDI_EFARM_global;

/*
 * VCI v's state. The paths that do not choose a VCI use VCI 0's: windows'
 * native RMA and registrations, the bootstrap and dynamic-process exchanges,
 * and the address table's inserts of MPI_COMM_WORLD's and other processes.
 */
#define MPIDI_EFARM_VCI(v) (&MPIDI_EFARM_global.vci[(v)])

/*
 * What a communicator tells the engine's selection about its sends: how many
 * ranks may send to one receiver at once (its size: the other ranks of an
 * intracommunicator, the local group of an intercommunicator; the info key
 * efarm_fanin replaces it) and a subprotocol its info key efarm_protocol
 * forces. Two loads and no branch a send pays for when no hint is set.
 */
MPL_STATIC_INLINE_PREFIX uint32_t MPIDI_EFARM_send_hints(const MPIR_Comm *comm)
{
    int fanin = comm->hints[MPIDI_EFARM_global.hint_fanin];
    int proto = comm->hints[MPIDI_EFARM_global.hint_proto];
    uint32_t hints = proto > 0 ? EFARM_SEND_PROTO(proto - 1) : 0;

    if (fanin > 0)
        return hints | EFARM_SEND_FANIN(fanin) | EFARM_SEND_FANIN_SET;
    return hints |
           EFARM_SEND_FANIN(comm->comm_kind == MPIR_COMM_KIND__INTERCOMM ? comm->local_size
                                                                         : comm->local_size - 1);
}

/* The efarm address of an AV entry (MPIDIU_comm_rank_to_av gives the entry). */
#define MPIDI_EFARM_AV(av) ((av)->netmod.efarm)

/* The netmod part of a point-to-point request. */
#define MPIDI_EFARM_REQ(req) ((req)->dev.ch4.netmod.efarm)
/* The VCI state of the endpoint that carries a point-to-point request. */
#define MPIDI_EFARM_REQ_VCI(req) MPIDI_EFARM_VCI(MPIDI_EFARM_REQ(req).vci)

/*
 * MPICH reserves the top two bits of the tags it hands down for error flags
 * (collectives after a failure), MPIDI_EFARM_TAG_ERROR_BITS (efarm_compat.h).
 * Matching ignores them: they travel in the message's CQ data and come back
 * into the received status's tag.
 */

/* ---- Multi-rail striping (efarm_stripe.c) ---- */

/*
 * A striped message is a head on rail 0, matched like any message, and one
 * tail of the same length on each further rail, matched by (0, the sender's
 * rank in MPI_COMM_WORLD, an id). The head's CQ data says so, beside MPICH's
 * error bits (22 and 23 of 24 tag bits): bit 63 set, bits 61-62 the tails less
 * one, bits 32-60 a tail's length in 4 KiB, bits 0-21 the id.
 */
#define MPIDI_EFARM_STRIPE_FLAG         (1ull << 63)
#define MPIDI_EFARM_STRIPE_TAILS(cq)    ((unsigned)(((cq) >> 61) & 3) + 1)
#define MPIDI_EFARM_STRIPE_TAIL_LEN(cq) ((((cq) >> 32) & ((1ull << 29) - 1)) << 12)
#define MPIDI_EFARM_STRIPE_ID_MASK      ((1u << 22) - 1)
#define MPIDI_EFARM_STRIPE_ID(cq)       ((int32_t)((cq)&MPIDI_EFARM_STRIPE_ID_MASK))

/* Whether a contiguous message of len bytes to addr is striped. */
MPL_STATIC_INLINE_PREFIX bool MPIDI_EFARM_stripe_to(const MPIDI_av_entry_t *addr, uint64_t len)
{
    return unlikely(MPIDI_EFARM_AV(addr).nrails > 1 && len >= MPIDI_EFARM_global.stripe_min);
}

/* The length of the whole message whose head has head_len bytes and this CQ data. */
MPL_STATIC_INLINE_PREFIX uint64_t MPIDI_EFARM_stripe_msg_length(uint64_t head_len, uint64_t cq)
{
    return head_len + (uint64_t)(MPIDI_EFARM_STRIPE_TAILS(cq)) * MPIDI_EFARM_STRIPE_TAIL_LEN(cq);
}

/* Send sreq's len bytes at buf striped (MPIDI_EFARM_send); flags and cq_data as for the head. */
int MPIDI_EFARM_stripe_send(MPIR_Request *sreq, const void *buf, uint64_t len, uint32_t context,
                            int source, int tag, uint32_t flags, uint64_t cq_data,
                            const MPIDI_av_entry_t *addr);
/* A receive's head completed with the stripe flag: receive the tails, then complete. */
void MPIDI_EFARM_stripe_recv_head(MPIR_Request *rreq);
/* Progress VCI v's rails and post tails that waited for a slot; returns events or an error. */
int MPIDI_EFARM_rails_progress(MPIDI_EFARM_vci_t *v);
/* efarm_protocol's number for a communicator (MPICH 4.3's keyed hint callback). */
int MPIDI_EFARM_hint_proto_set(MPIR_Comm *comm_ptr, int index, int value);

/* Open the other rails (init_local) and close them (finalize). */
int MPIDI_EFARM_rails_open(const struct efarm_ep_attr *attr);
/*
 * Note that an AV entry names engine peer `peer` (efarm_init.c). Returns 1 if
 * one did already (the process is known), 0 if not, or -ENOMEM.
 */
int MPIDI_EFARM_peer_name(efarm_peer_t peer);
#if MPIDI_EFARM_MPICH_50
/* MPICH 5.0: the address exchange of a bootstrap communicator (efarm_init.c). */
int MPIDI_EFARM_comm_addr_exchange(MPIR_Comm *comm);
#endif
int MPIDI_EFARM_rails_flush(uint64_t timeout_ms);
int MPIDI_EFARM_rails_close(void);

/* ---- Active messages (efarm_am.c; the inline API is in efarm_am.h) ---- */

/* Largest MPIDIG header one active message carries. */
#define MPIDI_EFARM_AM_HDR_MAX 256
/*
 * Largest header plus packed data MPIDIG sends eagerly: the engine's largest
 * medium message (EFARM_MEDIUM_MAX's default), within MPIDIG's pack buffers as
 * MPIDIG_am_check_init requires (MPIDI_EFARM_AM_PACK_BUFFER_SIZE: MPICH 4.0's
 * default 69632 leaves 65536; 4.3's default is 16384).
 */
#define MPIDI_EFARM_AM_EAGER_BUF_LIMIT \
    ((MPI_Aint)MPL_MIN(65536, MPL_MAX(MPIDI_EFARM_AM_PACK_BUFFER_SIZE, 0)))
/* Largest payload of an eager active message: the buffer less the largest header. */
#define MPIDI_EFARM_AM_EAGER_LIMIT \
    MPL_MAX(MPIDI_EFARM_AM_EAGER_BUF_LIMIT - MPIDI_EFARM_AM_HDR_MAX, 0)

/* Send one active message to rank of comm; sreq (may be NULL) gets its origin callback. */
int MPIDI_EFARM_am_send(int rank, MPIR_Comm *comm, int handler_id, const void *am_hdr,
                        MPI_Aint am_hdr_sz, const void *data, MPI_Aint count, MPI_Datatype datatype,
                        int src_vci, int dst_vci, MPIR_Request *sreq);

/* Claim, receive and dispatch VCI g's active messages; run its origin callbacks. */
int MPIDI_EFARM_am_progress(MPIDI_EFARM_vci_t *g);

/* Whether MPIDI_EFARM_am_progress(g) has nothing to do (the progress call skips it). */
MPL_STATIC_INLINE_PREFIX bool MPIDI_EFARM_am_idle(const MPIDI_EFARM_vci_t *g)
{

    return g->am_sent_head == NULL && g->am_recv_head == NULL && g->am_unstarted == NULL &&
           g->am_arrivals != NULL && *g->am_arrivals == g->am_arrivals_seen;
}
/* Free VCI g's active-message operations (finalize). */
void MPIDI_EFARM_am_finalize(MPIDI_EFARM_vci_t *g);

/*
 * Retry an engine call that returned -EAGAIN (no operation slot) after
 * polling VCI v's endpoint (and rails), which frees slots as operations complete. Only the
 * engine is polled, never MPICH's progress: no handler runs in between.
 * *waits_p counts the caller's retries (start at 0); a wait that lasts
 * prints one warning naming the limits, since only more posted receives'
 * messages arriving, or larger limits, can end it.
 */
int MPIDI_EFARM_wait_for_slot(MPIDI_EFARM_vci_t *v, unsigned long *waits_p);
/* The one warning of a wait that lasts (waits: the caller's retries so far). */
void MPIDI_EFARM_slot_wait_warning(unsigned long waits);

/* ---- Native RMA (efarm_rma.c, its windows efarm_win.c; the inline API efarm_rma_nm.h) ---- */

#define MPIDI_EFARM_WIN(win) ((win)->dev.netmod.efarm)

/* What a native RMA call asks for; MPI_Op/MPI_Datatype are MPI's. */
typedef struct {
    int kind; /* MPIDI_EFARM_RMA_PUT, _GET, _ACC, _GET_ACC, _CAS */
    const void *origin;
    MPI_Aint origin_count;
    MPI_Datatype origin_dt;
    void *result;
    MPI_Aint result_count;
    MPI_Datatype result_dt;
    const void *compare;
    int target_rank;
    MPI_Aint target_disp;
    MPI_Aint target_count;
    MPI_Datatype target_dt;
    MPI_Op op;
} MPIDI_EFARM_rma_args_t;

enum {
    MPIDI_EFARM_RMA_PUT,
    MPIDI_EFARM_RMA_GET,
    MPIDI_EFARM_RMA_ACC,
    MPIDI_EFARM_RMA_GET_ACC,
    MPIDI_EFARM_RMA_CAS
};

/*
 * Start one native RMA operation; *native_p says whether it could (false:
 * the caller sends it through MPIDIG). request: NULL, or where a user
 * request (MPI_Rput, ...) goes.
 */
int MPIDI_EFARM_rma_start(MPIR_Win *win, const MPIDI_EFARM_rma_args_t *a, MPIR_Request **request,
                          bool *native_p);

/* A synchronisation point (epoch opened, MPI_Win_sync): dynamic windows' cached directories go. */
void MPIDI_EFARM_rma_sync_point(MPIR_Win *win);

/* Wait until the window's native operations (to one target, or all: rank < 0) completed. */
int MPIDI_EFARM_rma_wait(MPIR_Win *win, int rank);

/*
 * VCI vci's lock under MPICH's per-VCI critical sections (efarm_compat.h):
 * ch4 holds it around progress only, so the entry points ch4 calls without
 * it (sends, receives, probes, one-sided operations, the window and bootstrap
 * hooks' engine calls) take the lock of the VCI they use themselves, as
 * ch4:ofi and ch4:ucx do, and never across a call that takes it again
 * (MPIDIG, collectives: the lock is not recursive). No-ops under the global
 * critical section.
 */
#if MPIDI_EFARM_PER_VCI
#define MPIDI_EFARM_VCI_ENTER(vci) MPID_THREAD_CS_ENTER(VCI, MPIDI_EFARM_VCI_LOCK(vci))
#define MPIDI_EFARM_VCI_EXIT(vci)  MPID_THREAD_CS_EXIT(VCI, MPIDI_EFARM_VCI_LOCK(vci))
#else
#define MPIDI_EFARM_VCI_ENTER(vci) \
    do {                           \
        (void)(vci);               \
    } while (0)
#define MPIDI_EFARM_VCI_EXIT(vci) \
    do {                          \
        (void)(vci);              \
    } while (0)
#endif

/*
 * A point-to-point call's VCIs, as ch4's own modules choose them (ch4:ucx's
 * MPIDI_UCX_SEND_VNIS, the shared-memory module's MPIDI_POSIX_RECV_VSI): a
 * stream communicator's explicit ones, else MPICH's hashing of (comm, ranks,
 * tag), which gives 0 for a communicator without VCIs (vcis_enabled: only
 * MPI_COMM_WORLD's descendants have them). A sender's (source, destination)
 * pair; a receiver's own VCI. 0 without per-VCI critical sections.
 */
#if MPIDI_EFARM_PER_VCI
#define MPIDI_EFARM_SEND_VCIS(comm_, attr_, rank_, tag_, src_, dst_)                        \
    do {                                                                                    \
        MPIDI_EXPLICIT_VCIS(comm_, attr_, (comm_)->rank, rank_, src_, dst_);                \
        if ((src_) == 0 && (dst_) == 0) {                                                   \
            (src_) = MPIDI_get_vci(SRC_VCI_FROM_SENDER, comm_, (comm_)->rank, rank_, tag_); \
            (dst_) = MPIDI_get_vci(DST_VCI_FROM_SENDER, comm_, (comm_)->rank, rank_, tag_); \
        }                                                                                   \
    } while (0)
#define MPIDI_EFARM_RECV_VCI(comm_, attr_, rank_, tag_, dst_)                               \
    do {                                                                                    \
        int src_unused_;                                                                    \
        MPIDI_EXPLICIT_VCIS(comm_, attr_, rank_, (comm_)->rank, src_unused_, dst_);         \
        if (src_unused_ == 0 && (dst_) == 0)                                                \
            (dst_) = MPIDI_get_vci(DST_VCI_FROM_RECVER, comm_, rank_, (comm_)->rank, tag_); \
    } while (0)
#else
#define MPIDI_EFARM_SEND_VCIS(comm, attr, rank, tag, src_, dst_) ((src_) = 0, (dst_) = 0)
#define MPIDI_EFARM_RECV_VCI(comm, attr, rank, tag, dst_)        ((dst_) = 0)
#endif

/*
 * The engine peer through which VCI src's endpoint reaches the VCI dst of
 * comm's rank (whose AV entry is addr): the AV entry's own for (0, 0), else
 * VCI src's table entry, made on first use from the rank's VCI addresses
 * (efarm_init.c). EFARM_PEER_NONE when it cannot be made (not a world
 * process, a VCI it does not have, or no address-vector room: logged there).
 * Called under VCI src's lock.
 */
efarm_peer_t MPIDI_EFARM_vci_peer_make(int src, int grank, int dst);
MPL_STATIC_INLINE_PREFIX efarm_peer_t MPIDI_EFARM_vci_peer(int src, const MPIDI_av_entry_t *addr,
                                                           MPIR_Comm *comm, int rank, int dst)
{
    if (likely((src | dst) == 0))
        return MPIDI_EFARM_AV(addr).peer;
#if MPIDI_EFARM_PER_VCI
    {
        efarm_peer_t *const *rows = MPIDI_EFARM_VCI(src)->peer_rows;
        int grank = MPIDI_EFARM_grank(rank, comm);

        if (likely(rows != NULL && grank >= 0 && grank < MPIDI_EFARM_global.vci_cards_ranks &&
                   dst < MPIDI_EFARM_global.vci_cards_n && rows[grank] != NULL &&
                   rows[grank][dst] != EFARM_PEER_NONE))
            return rows[grank][dst];
        return MPIDI_EFARM_vci_peer_make(src, grank, dst);
    }
#else
    (void)comm, (void)rank;
    return EFARM_PEER_NONE;
#endif
}

/*
 * An mpi_errno for an efarm call `what` that returned the negative code err.
 * The message names the call and efarm's reason (errnames.txt: **efarm).
 */
#define MPIDI_EFARM_ERROR(err, what)                                                           \
    MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__, MPI_ERR_OTHER, \
                         "**efarm", "**efarm %s %s", (what), efarm_strerror(err))

/*
 * Abort in an API ch4:efarm does not provide yet. A stub that returned
 * MPI_SUCCESS would make MPI calls succeed without doing anything (MPICH's
 * own stub netmod lets cpi print pi = 0); this stops the job instead, naming
 * the function, whether or not MPICH was built with error checking.
 */
#define MPIDI_EFARM_NOT_IMPLEMENTED()                                          \
    MPIR_Assert_fail_fmt("ch4:efarm: not implemented yet", __FILE__, __LINE__, \
                         "ch4:efarm does not implement %s yet", __func__)

#endif /* EFARM_IMPL_H_INCLUDED */
