/*
 * interop-efarm, efarm's side of the interoperability test: what its two
 * halves share (interop_efarm.c: the two-sided cases, the command line and
 * main; interop_efarm_rma.c: the one-sided phase).
 */
#ifndef EFARM_INTEROP_EFARM_H
#define EFARM_INTEROP_EFARM_H

#include "efarm_proto.h"
#include "efarm_proto_v4.h"
#include "efarm_rma.h"
#include "interop_driver.h"

/* The two-sided subprotocols a REQ type can name, as bits. */
#define IE_PROTO_LIST(X)      \
    X(EAGER, "eager")         \
    X(MEDIUM, "medium")       \
    X(LONGCTS, "longcts")     \
    X(LONGREAD, "longread")   \
    X(RUNTREAD, "runtread")   \
    X(DC_EAGER, "dc_eager")   \
    X(DC_MEDIUM, "dc_medium") \
    X(DC_LONGCTS, "dc_longcts")

enum {
#define IE_BIT_(id, name) IE_##id##_BIT,
    IE_PROTO_LIST(IE_BIT_)
#undef IE_BIT_
        IE_NPROTO
};
#define IE(id) (1u << IE_##id##_BIT)

/*
 * The one-sided subprotocols as this test names them (--expect-rma), and what
 * the counters show of each: the REQ packet type that carries it (0: the
 * device's RDMA, no packet), the reply the target sends to each REQ (0: none
 * one for one; long-CTS writes get CTS rounds), whether it sends a REQ per
 * packet of data (else one per operation) and whether efarm's target serves
 * it. The last two are libfabric's that efarm's target does not serve yet.
 */
#define IE_RMA_LIST(X)                                                                            \
    X(DIRECT_WRITE, "direct_write", 0, 0, false, true)                                            \
    X(EAGER_RTW, "eager_rtw", EFARM_PKT_EAGER_RTW, 0, true, true)                                 \
    X(DC_EAGER_RTW, "dc_eager_rtw", EFARM_PKT_DC_EAGER_RTW, EFARM_PKT_RECEIPT, true, true)        \
    X(LONGCTS_RTW, "longcts_rtw", EFARM_PKT_LONGCTS_RTW, 0, false, true)                          \
    X(DC_LONGCTS_RTW, "dc_longcts_rtw", EFARM_PKT_DC_LONGCTS_RTW, EFARM_PKT_RECEIPT, false, true) \
    X(LONGREAD_RTW, "longread_rtw", EFARM_PKT_LONGREAD_RTW, EFARM_PKT_EOR, false, true)           \
    X(DIRECT_READ, "direct_read", 0, 0, false, true)                                              \
    X(SHORT_RTR, "short_rtr", EFARM_PKT_SHORT_RTR, EFARM_PKT_READRSP, true, true)                 \
    X(WRITE_RTA, "write_rta", EFARM_PKT_WRITE_RTA, 0, true, true)                                 \
    X(DC_WRITE_RTA, "dc_write_rta", EFARM_PKT_DC_WRITE_RTA, EFARM_PKT_RECEIPT, true, true)        \
    X(FETCH_RTA, "fetch_rta", EFARM_PKT_FETCH_RTA, EFARM_PKT_ATOMRSP, true, true)                 \
    X(COMPARE_RTA, "compare_rta", EFARM_PKT_COMPARE_RTA, EFARM_PKT_ATOMRSP, true, true)           \
    X(LONGCTS_RTR, "longcts_rtr", EFARM_PKT_LONGCTS_RTR, EFARM_PKT_READRSP, false, true)          \
    X(RUNTCTS_RTW, "runtcts_rtw", EFARM_PKT_RUNTCTS_RTW, 0, true, true)                           \
    X(RUNTREAD_RTW, "runtread_rtw", EFARM_PKT_RUNTREAD_RTW, 0, true, true)

enum {
#define IE_RMA_BIT_(id, name, type, reply, per_packet, served) IE_RMA_##id##_BIT,
    IE_RMA_LIST(IE_RMA_BIT_)
#undef IE_RMA_BIT_
        IE_NRMA
};
#define IE_R(id) (1u << IE_RMA_##id##_BIT)

/*
 * Default one-sided sizes: for libfabric as origin the largest write of each
 * kind in one packet, the largest short read, several packets (long-CTS), the
 * long-read threshold and 1 MiB for writes; for efarm, which fills a packet at
 * the same sizes (8904 B per READRSP), the same, the first read that is
 * LONGCTS_RTR (8905 B), writes of EAGER_RTW packets (20000 B), LONGCTS_RTW
 * (100000 B, above EFARM_MEDIUM_MAX) and LONGREAD_RTW (1 MiB, EFARM_READ_MIN,
 * with RDMA read), and long reads of each size.
 */
#define IE_RMA_FI_SIZES    "1,4096,8884:d,8892:w,8903:r,20000:wd,65536:wd,1M:wd"
#define IE_RMA_EFARM_SIZES "1,4096,8884:d,8892:w,8904:r,8905:r,20000,100000,1M"

/* The side: the endpoint, what each selection may pick, what was seen. */
struct ie_side {
    struct efarm_ep *ep;
    efarm_peer_t peer;
    struct efarm_req reqs[IC_BURST];
    struct efarm_counters before;
    uint64_t unexpected_before;
    /* What each side's selection may pick. */
    bool read_ok; /* both sides offer RDMA read */
    bool fi_runt, efarm_runt;
    bool reg_limited;  /* --read-nack: registrations fail, reads may end as long-CTS */
    uint64_t eager_hi; /* sizes up to here may still be eager (MTU) */
    uint64_t eager_lo; /* sizes up to here are eager for either side */
    uint64_t efarm_medium_max, efarm_read_min;
    unsigned seen[2]; /* subprotocols seen, per direction */
    unsigned long counts[2][IE_NPROTO];
    bool verbose;
    /* One-sided phase. */
    bool write_ok;            /* both sides offer RDMA write */
    bool imm_ok;              /* both agree on unsolicited write receive (extra feature 8) */
    unsigned fi_bugs;         /* IC_BUG_* that may show in this run (interop.h) */
    unsigned long *tolerated; /* counts them where they showed */
    unsigned rma_seen[2];
    unsigned long rma_ops[2][IE_NRMA], rma_reqs[2][IE_NRMA];
    /* Reports of libfabric's writes with CQ data not yet taken (efarm_ep_on_write_data). */
    struct ic_cq_reports cq_reports;
};

/* What the command line says. */
struct ie_args {
    const char *path;
    struct ic_params params;
    struct ic_run_opts ropts;
    uint64_t fi_rdma, fi_rdma_write, fi_runt, fi_unsolicited;
    unsigned expect, expect_rma[2];
    bool read_nack, verbose;
};

/* interop_efarm.c: a request slot for message m bound to op (the side owns it). */
struct efarm_req *ie_req(struct ie_side *s, uint32_t m, struct ic_op *op);

/* interop_efarm_rma.c: the side's one-sided operations and their checks (struct ic_side_ops). */
int ie_rma(void *side, const struct ic_rma_case *c, const struct ic_rma_io *io, struct ic_op *op);
void ie_rma_case_begin(void *side, const struct ic_rma_case *c);
bool ie_rma_arrived(void *side, const struct ic_rma_case *c);
unsigned ie_rma_case_end(void *side, const struct ic_rma_case *c, bool origin_failed);
int ie_rma_cq_data(void *side, uint64_t *data, uint64_t *len);
/* Where efarm reports a peer's write with CQ data (efarm_ep_on_write_data's handler). */
void ie_on_write_data(void *side, const struct efarm_write_data *w);

/* --expect-rma's LIST into bits per direction. Returns 0 or -EINVAL. */
int ie_rma_parse_expect(const char *list, unsigned bits[2]);

/*
 * The one-sided phase with `ops` as the side's ops: expose a region, trade it
 * for interop-fi's, run the one-sided cases (their number in *ncases_p).
 * Returns the defects or a negative error; the memory it used is freed.
 */
int ie_rma_phase(struct ie_side *s, const struct ic_side_ops *ops, int fd, const struct ie_args *a,
                 unsigned *ncases_p);

/* Print what each direction used and check --expect-rma; returns the defects. */
unsigned ie_rma_report(const struct ie_side *s, const struct ie_args *a);

#endif /* EFARM_INTEROP_EFARM_H */
