/*
 * efarm's members of MPICH's objects.
 *
 * ch4's configure names these eight types from the netmod's name and places
 * them in unions inside MPIR_Request, MPIR_Comm, MPIR_Datatype, MPIR_Win,
 * MPIR_Op, MPIDI_av_entry_t and the partitioned request (netmodpre.h), so
 * this header is part of nearly every MPICH translation unit: it stays small
 * and includes nothing of efarm but the peer handle's type.
 *
 * The point-to-point request and the address entry have content; the
 * others hold a placeholder because C has no empty structs.
 */
#ifndef EFARM_PRE_H_INCLUDED
#define EFARM_PRE_H_INCLUDED

#include <stdbool.h>

#include "efarm_proto.h"

/*
 * Netmod state of an active-message request (MPIDIG). efarm's active messages
 * keep their state in their own operations (efarm_am.c), since one MPIDIG
 * request can have more than one message in flight. The one field is an
 * unexpected point-to-point message's arrival stamp, written when MPIDIG
 * queues it (MPICH patch P5, scripts/mpich-netmod-prepare.sh), whichever
 * module it came through: MPICH's shared memory, or efarm's active messages.
 */
typedef struct {
    uint64_t arrival;
} MPIDI_EFARM_am_request_t;

/*
 * The arrival clocks shared by MPIDIG's unexpected queues and efarm's
 * engine endpoints, one per VCI (efarm_ep_set_arrival_clock): every
 * unexpected point-to-point message queued on a VCI, in either module, takes
 * that VCI's next value, so that for MPI_ANY_SOURCE ch4 takes the earlier of
 * the two modules' oldest matching messages (P5; MPIDI_EFARM_anysrc_nm_first,
 * efarm_noinline.c). A VCI's clock moves under that VCI's lock only; each
 * has a cache line of its own. MPIDIG's request is in the pool of the VCI
 * whose queue it joins (MPIDIG_request_create).
 */
extern uint64_t MPIDI_EFARM_arrival_clocks[][8];
#if defined(MPICH_THREAD_GRANULARITY__VCI) && \
    MPICH_THREAD_GRANULARITY == MPICH_THREAD_GRANULARITY__VCI && MPICH_NUMVERSION >= 40300000
#define MPIDI_EFARM_ARRIVAL_STAMP(req) (++MPIDI_EFARM_arrival_clocks[MPIR_REQUEST_POOL(req)][0])
#else
#define MPIDI_EFARM_ARRIVAL_STAMP(req) (++MPIDI_EFARM_arrival_clocks[0][0])
#endif

/*
 * For an MPI_ANY_SOURCE receive, probe or mprobe on (tag, comm, attr): 1 when
 * efarm holds a matching unexpected message that arrived before the oldest
 * matching one in MPIDIG's queue (shared memory), so ch4 must ask efarm
 * first; 0 otherwise (ch4's usual order: shared memory first). Called by the
 * ch4 code P5 patches; attr is MPICH 4.0's context offset, 4.3's attribute
 * word. Not inline: ch4 calls it with the netmod's inline functions compiled
 * in or not.
 */
struct MPIR_Comm;
int MPIDI_EFARM_anysrc_nm_first(int tag, struct MPIR_Comm *comm, int attr);

/*
 * Netmod state of a point-to-point request: the engine request and, for a
 * noncontiguous datatype, the packed copy of the data and where it unpacks.
 * A native RMA operation (efarm_rma.c) uses the same request: the engine
 * request (or several, one per four remote ranges of a noncontiguous target),
 * and the window and target rank whose outstanding counts it holds.
 */
struct MPIR_Win;
typedef struct {
    struct efarm_req ereq;
    struct MPIR_Win *rma_win;          /* native RMA: the window, or NULL */
    int rma_target;                    /* ... and the target's rank in it */
    int rma_pending;                   /* ... its engine operations not yet complete */
    int rma_status;                    /* ... the first one's error, or 0 */
    MPI_Aint rma_bytes;                /* ... its data size */
    struct efarm_req *rma_ereqs;       /* ... when several: their requests (else ereq) */
    void *pack_buf;                    /* MPL_malloc'd packed data, or NULL when contiguous */
    void *user_buf;                    /* receives into pack_buf: where the data unpacks */
    MPI_Aint user_count;               /* ... how many of user_dt */
    MPI_Datatype user_dt;              /* ... of which type (a reference is held) */
    efarm_tm_handle_t mprobe_handle;   /* a claimed message (MPI_Mprobe), for imrecv */
    struct MPIDI_EFARM_stripe *stripe; /* a striped message's parts on the rails, or NULL */
    bool posting;                      /* inside efarm_trecv (efarm_p2p.h: any-source pairs) */
    uint8_t vci;                       /* the VCI whose endpoint carries it */
    struct MPIR_Request *release_next; /* its VCI's release_later chain */
} MPIDI_EFARM_request_t;

/* Netmod state of a communicator. */
typedef struct {
    int placeholder;
} MPIDI_EFARM_comm_t;

/* Netmod state of a datatype. */
typedef struct {
    int placeholder;
} MPIDI_EFARM_dt_t;

/* Where one member of a window keeps its memory (exchanged at window creation). */
typedef struct {
    uint64_t base, size, key;
    uint32_t disp_unit;
    efarm_peer_t peer;
} MPIDI_EFARM_win_target_t;

/*
 * Netmod state of a window: this process's memory as exposed to peers, the
 * other members' (NULL: RMA on this window goes through MPIDIG), and the
 * native operations not yet complete, in all and per target rank, which the
 * completion hooks wait for.
 */
struct efarm_region;
struct MPIDI_EFARM_dyn; /* a dynamic window's attached regions and peers' (efarm_win.c) */
typedef struct {
    struct efarm_region *region;
    struct MPIDI_EFARM_dyn *dyn; /* NULL unless a dynamic window whose RMA is native */
    MPIDI_EFARM_win_target_t *targets;
    int *outstanding_to;
    int outstanding;
    int error; /* the first failed native operation's mpi_errno, reported at synchronisation */
    bool native_acc; /* accumulates may go native (no shared-memory path on this window) */
    int vci;         /* the window's VCI (MPIDIG's am_vci): its endpoint carries the native RMA */
} MPIDI_EFARM_win_t;

/* Most endpoints (rails) one rank opens: EFARM_RAILS's limit. */
#define MPIDI_EFARM_RAILS_MAX 4

/*
 * One rank's address: its peer in the endpoint's address vector, set by
 * MPIDI_EFARM_init_world for every rank of MPI_COMM_WORLD; with multi-rail
 * (EFARM_RAILS), the rails both ranks have and its peer on each further one.
 */
typedef struct {
    efarm_peer_t peer;
    uint8_t nrails; /* 0 or 1: no striping to this rank */
    efarm_peer_t rail_peer[MPIDI_EFARM_RAILS_MAX - 1];
} MPIDI_EFARM_addr_t;

/* Netmod state of a reduction operation. */
typedef struct {
    int placeholder;
} MPIDI_EFARM_op_t;

/* Netmod state of a partitioned request (stubnm in MPICH 4.0.2 lacks this one). */
typedef struct {
    int placeholder;
} MPIDI_EFARM_part_t;

#endif /* EFARM_PRE_H_INCLUDED */
