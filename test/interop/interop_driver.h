/*
 * The case driver both interop programs run (interop_driver.c): it walks the
 * case list, paces the two sides over the control channel, posts the sends or
 * receives (or, in the one-sided phase, the writes, reads and atomics) through
 * a side's ops and checks what arrived. A side supplies only its fabric
 * operations.
 */
#ifndef EFARM_INTEROP_DRIVER_H
#define EFARM_INTEROP_DRIVER_H

#include "interop.h"

/* One send or receive in flight, as the side reports its completion. */
struct ic_op {
    bool done;
    int status;   /* 0 or a negative error (the side's own code space) */
    uint64_t len; /* receives: bytes delivered */
    uint64_t tag; /* receives, tagged: the message's tag */
    bool has_cq_data;
    uint64_t cq_data;
    void *impl; /* the side's own per-op state */
};

/* One-sided operation as the driver hands it to the origin's side (interop.h). */
struct ic_rma_io {
    uint64_t raddr, rkey; /* the target's range: virtual address and key */
    uint64_t len;         /* bytes of it (atomics: elements of 8 bytes) */
    void *buf;            /* write: the data; read: where it goes; atomics: the operands */
    const void *compare;  /* compare atomics: the compare values, else NULL */
    void *result;         /* fetch and compare atomics: the old values, else NULL */
};

/*
 * Reports of the peer's writes with CQ data a target side has seen and the
 * driver not yet taken (ic_side_ops.rma_cq_data): a few, in arrival order. One
 * that finds the queue full is counted and later taken as a report of nothing,
 * which no case wants.
 */
struct ic_cq_reports {
    struct {
        uint64_t data, len;
    } r[8];
    unsigned head, count, overflow;
};

void ic_cq_report_put(struct ic_cq_reports *q, uint64_t data, uint64_t len);
/* The oldest report into *data and *len: 1, or 0 when there is none. */
int ic_cq_report_take(struct ic_cq_reports *q, uint64_t *data, uint64_t *len);

struct ic_side_ops {
    const char *name; /* "efarm", "libfabric" */
    /* Start a send or receive of message m of case c; -EAGAIN: progress and retry. */
    int (*send)(void *side, const struct ic_case *c, uint32_t m, const void *buf, uint64_t len,
                struct ic_op *op);
    int (*recv)(void *side, const struct ic_case *c, uint32_t m, void *buf, uint64_t len,
                struct ic_op *op);
    /* Drive the fabric once, completing ops. Returns 0 or a fatal negative error. */
    int (*progress)(void *side);
    /* 1 once the case's n messages (as far as the side can tell) arrived unmatched, else 0. */
    int (*arrived)(void *side, const struct ic_case *c, double since);
    /* Around each case (counters, reports); may be NULL. Returns defects found. */
    void (*case_begin)(void *side, const struct ic_case *c);
    unsigned (*case_end)(void *side, const struct ic_case *c);
    const char *(*strerror)(int err);
    /* One-sided: start the origin's operation of case c; -EAGAIN: progress and retry. */
    int (*rma)(void *side, const struct ic_rma_case *c, const struct ic_rma_io *io,
               struct ic_op *op);
    /*
     * Around each one-sided case, both roles; may be NULL. Returns defects found.
     * origin_failed: the origin's operation completed with an error.
     */
    void (*rma_case_begin)(void *side, const struct ic_rma_case *c);
    /*
     * As target, whether the case's REQ(s) reached the side (a refused plain write
     * or atomic changes nothing and answers nothing, so only this tells that it
     * came); NULL when the side cannot tell.
     */
    bool (*rma_arrived)(void *side, const struct ic_rma_case *c);
    unsigned (*rma_case_end)(void *side, const struct ic_rma_case *c, bool origin_failed);
    /*
     * As target: take the oldest report of a peer's write with CQ data not yet
     * taken (its data and length): 1, or 0 when there is none.
     */
    int (*rma_cq_data)(void *side, uint64_t *data, uint64_t *len);
};

struct ic_run_opts {
    double case_timeout_s;    /* one case may take at most this long */
    bool verbose;             /* a line per case */
    unsigned fi_bugs;         /* IC_BUG_* of the libfabric on the other side, tolerated */
    unsigned long *tolerated; /* counts the defects tolerated for fi_bugs */
};

/*
 * Run every case with `me` as one of the two sides (IC_FI_TO_EFARM: "fi" is the
 * side named libfabric). Returns the number of defects (0: all good), or a negative
 * error when the run could not go on (a timeout, a dead peer, a control-channel
 * error), after printing why.
 */
int ic_run(const struct ic_side_ops *ops, void *side, bool i_am_efarm, int ctl,
           const struct ic_case *cases, unsigned ncases, const struct ic_run_opts *opts);

/* What a side brings to the one-sided phase; the side owns the memory. */
struct ic_rma_mem {
    uint8_t *region;    /* IC_RMA_REGION bytes exposed to the peer */
    uint8_t *ro;        /* IC_RMA_RO bytes exposed for remote read only (ic_rma_ro_byte) */
    uint8_t *local;     /* IC_RMA_LOCAL bytes the side's operations use as origin */
    uint64_t peer_addr; /* the peer's exposed region */
    uint64_t peer_key;
    uint64_t peer_ro_addr; /* and its read-only one */
    uint64_t peer_ro_key;
};

/*
 * Run every one-sided case with `me` as one side, as ic_run does the two-sided
 * ones: origin of the cases whose direction starts at it, target of the
 * others. Returns the number of defects, or a negative error after printing
 * why the run could not go on.
 */
int ic_rma_run(const struct ic_side_ops *ops, void *side, bool i_am_efarm, int ctl,
               const struct ic_rma_case *cases, unsigned ncases, const struct ic_run_opts *opts,
               const struct ic_rma_mem *mem);

#endif /* EFARM_INTEROP_DRIVER_H */
