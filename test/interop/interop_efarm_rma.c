/*
 * interop-efarm's one-sided phase (interop.h, interop_efarm.h): efarm's
 * writes, reads and atomics on interop-fi's registered region through
 * efarm_write/efarm_read/efarm_atomic, its region exposed with efarm_expose
 * for libfabric's, and for every case a check of efarm's counters: which
 * subprotocol carried the operation (the request's proto and the REQ types
 * efarm sent, or received from libfabric), that it is one the origin's
 * selection may pick, that every REQ got its reply, and as target that efarm
 * served every REQ and refused or dropped none.
 */
#include <stddef.h>
#include <stdlib.h>

#include "efarm_config.h"
#include "efarm_errno.h"
#include "efarm_rma.h"
#include "interop_efarm.h"

#define IE_DT_ASSERT_(id, num, name, size, ctype, cls)    \
    _Static_assert((int)EFARM_DT_##id == (int)IC_DT_##id, \
                   "interop.h's datatype " name " is protocol v4's (libfabric's) number");
IC_DT_LIST(IE_DT_ASSERT_)
#undef IE_DT_ASSERT_
#define IE_OP_ASSERT_(id, num, name, fi)                   \
    _Static_assert((int)EFARM_AOP_##id == (int)IC_OP_##id, \
                   "interop.h's operation " name " is protocol v4's (libfabric's) number");
IC_OP_LIST(IE_OP_ASSERT_)
#undef IE_OP_ASSERT_
_Static_assert((int)EFARM_DT_COUNT == (int)IC_DT_COUNT && (int)EFARM_AOP_COUNT == (int)IC_OP_COUNT,
               "efarm carries the datatypes and operations interop.h lists, no more");

static const struct {
    const char *name;
    uint8_t type, reply;
    bool per_packet, served;
} g_ie_rma[IE_NRMA] = {
#define IE_RMA_ROW_(id, name, type, reply, per_packet, served) \
    {name, type, reply, per_packet, served},
    IE_RMA_LIST(IE_RMA_ROW_)
#undef IE_RMA_ROW_
};

/* The replies some REQs get one of each (the reply column). */
static const uint8_t g_ie_rma_replies[] = {EFARM_PKT_READRSP, EFARM_PKT_ATOMRSP, EFARM_PKT_RECEIPT,
                                           EFARM_PKT_EOR};

/*
 * libfabric's selection of one-sided subprotocols, as 1.17 does it (and as
 * measured on efasim, MTU 8928 B): once it has efarm's HANDSHAKE (which asks
 * for the 4-byte connid header), a write of up to 8892 B is one EAGER_RTW
 * (8 B header, connid, one 24 B rma_iov), with delivery complete up to 8884 B
 * one DC_EAGER_RTW (16 B header); from FI_EFA_INTER_MIN_READ_WRITE_SIZE
 * (64 KiB) up, when both sides have RDMA read, LONGREAD_RTW (delivery complete
 * or not); any other write LONGCTS_RTW or DC_LONGCTS_RTW. A read is the
 * device's RDMA read when both sides have it, else one SHORT_RTR below 8904 B
 * (MTU less the READRSP header) and LONGCTS_RTR above (efarm answers with a
 * READRSP and CTSDATA, then CTS rounds).
 */
#define IE_FI_MIN_READ_WRITE 65536

/* The engine's counter of each subprotocol it picks as origin. */
static const size_t g_ie_rma_counter[EFARM_RMA_PROTO_COUNT] = {
#define IE_RMA_COUNTER_(id, name, force, doc) \
    [EFARM_RMA_##id] = offsetof(struct efarm_counters, rma_##name),
    EFARM_RMA_PROTO_LIST(IE_RMA_COUNTER_)
#undef IE_RMA_COUNTER_
};

int ie_rma(void *side, const struct ic_rma_case *c, const struct ic_rma_io *io, struct ic_op *op)
{
    struct ie_side *s = side;
    struct efarm_riov riov[EFARM_RMA_MAX_IOV];
    uint32_t flags = (c->dc ? EFARM_RMA_DC : 0) | (c->emulate ? EFARM_RMA_NO_DIRECT : 0);
    uint32_t nriov = c->nriov ? c->nriov : 1;
    struct efarm_req *req = ie_req(s, 0, op);

    if (nriov > EFARM_RMA_MAX_IOV)
        return -EINVAL;
    for (uint32_t i = 0; i < nriov; i++) {
        uint64_t off, len;

        ic_rma_piece(io->len, nriov, i, &off, &len);
        riov[i] = (struct efarm_riov){.addr = io->raddr + off, .len = len, .key = io->rkey};
    }
    switch (c->kind) {
    case IC_RMA_WRITE:
        if (c->cq_data)
            return efarm_write_data(s->ep, s->peer, io->buf, io->len, riov, nriov, flags,
                                    ic_rma_cq_value(c), req);
        return efarm_write(s->ep, s->peer, io->buf, io->len, riov, nriov, flags, req);
    case IC_RMA_READ:
        return efarm_read(s->ep, s->peer, io->buf, io->len, riov, nriov, flags, req);
    default:
        return efarm_atomic(s->ep, s->peer, c->op, c->dt, io->buf, io->compare, io->result,
                            c->count, riov, 1, flags, req);
    }
}

void ie_on_write_data(void *side, const struct efarm_write_data *w)
{
    struct ie_side *s = side;

    if (w->peer != s->peer)
        fprintf(stderr, "interop(efarm): a write with CQ data from peer %u, not libfabric's (%u)\n",
                w->peer, s->peer);
    ic_cq_report_put(&s->cq_reports, w->peer == s->peer ? w->cq_data : 0, w->len);
}

int ie_rma_cq_data(void *side, uint64_t *data, uint64_t *len)
{
    return ic_cq_report_take(&((struct ie_side *)side)->cq_reports, data, len);
}

void ie_rma_case_begin(void *side, const struct ic_rma_case *c)
{
    struct ie_side *s = side;

    (void)c;
    s->before = *efarm_ep_counters(s->ep);
}

/*
 * efarm as origin, as efarm_rma.h documents its choice: the device's RDMA
 * when both sides have it (unless told to emulate); else a write from
 * EFARM_READ_MIN is LONGREAD_RTW when both sides have RDMA read (libfabric
 * reads it), one above EFARM_MEDIUM_MAX and a packet LONGCTS_RTW (DC_ for
 * remote completion), a shorter one EAGER_RTW packets; a read longer than
 * one READRSP is one LONGCTS_RTR, a shorter one SHORT_RTR.
 */
static unsigned ie_rma_efarm_allowed(const struct ie_side *s, const struct ic_rma_case *c)
{
    unsigned eager = c->dc ? IE_R(DC_EAGER_RTW) : IE_R(EAGER_RTW);
    uint64_t one = s->efarm_medium_max > s->eager_hi ? s->efarm_medium_max : s->eager_hi;

    bool one_range = c->nriov <= 1; /* the long subprotocols name one remote range */

    if (c->kind == IC_RMA_WRITE && c->cq_data) {
        /*
         * One request (efarm_write_data): an RDMA write with immediate where both
         * write by RDMA and agree on unsolicited write receive; else one
         * EAGER_RTW, or a long one.
         */
        if (s->write_ok && s->imm_ok && !c->emulate)
            return IE_R(DIRECT_WRITE);
        if (c->len <= s->eager_lo)
            return eager;
        if (s->read_ok && c->len >= s->efarm_read_min)
            return s->reg_limited ? IE_R(LONGREAD_RTW) | IE_R(LONGCTS_RTW) | IE_R(DC_LONGCTS_RTW)
                                  : IE_R(LONGREAD_RTW);
        return c->dc ? IE_R(DC_LONGCTS_RTW) : IE_R(LONGCTS_RTW);
    }
    if (c->kind == IC_RMA_WRITE) {
        if (s->write_ok && !c->emulate)
            return IE_R(DIRECT_WRITE);
        if (!one_range)
            return eager;
        if (s->read_ok && c->len >= s->efarm_read_min)
            return s->reg_limited ? IE_R(LONGREAD_RTW) | IE_R(LONGCTS_RTW) | IE_R(DC_LONGCTS_RTW)
                                  : IE_R(LONGREAD_RTW);
        if (c->len > one)
            return c->dc ? IE_R(DC_LONGCTS_RTW) : IE_R(LONGCTS_RTW);
        return eager;
    }
    if (s->read_ok && !c->emulate)
        return IE_R(DIRECT_READ);
    return c->len > s->eager_hi - sizeof(struct efarm_wire_readrsp_hdr) && one_range
               ? IE_R(LONGCTS_RTR)
               : IE_R(SHORT_RTR);
}

/*
 * The subprotocols the origin's selection may pick for case c: efarm's above;
 * libfabric's as 1.17 picks them (above), its size thresholds with the same
 * margin as the two-sided check's (eager up to an MTU, long from an MTU less
 * 128 B).
 */
static unsigned ie_rma_allowed(const struct ie_side *s, const struct ic_rma_case *c)
{
    bool fi_origin = c->dir == IC_FI_TO_EFARM;
    unsigned eager = c->dc ? IE_R(DC_EAGER_RTW) : IE_R(EAGER_RTW), emulated = 0;

    if (!fi_origin && (c->kind == IC_RMA_WRITE || c->kind == IC_RMA_READ))
        return ie_rma_efarm_allowed(s, c);
    switch (c->kind) {
    case IC_RMA_WRITE:
        if (s->read_ok && c->len >= IE_FI_MIN_READ_WRITE)
            emulated = IE_R(LONGREAD_RTW);
        else if (c->len <= s->eager_hi)
            emulated = eager;
        if (c->len > s->eager_lo && !emulated)
            emulated = c->dc ? IE_R(DC_LONGCTS_RTW) : IE_R(LONGCTS_RTW);
        /* libfabric writes CQ data by RDMA only to a peer that agrees on feature 8. */
        return emulated | (s->write_ok && (s->imm_ok || !c->cq_data) ? IE_R(DIRECT_WRITE) : 0);
    case IC_RMA_READ:
        if (s->read_ok && !c->emulate)
            return IE_R(DIRECT_READ);
        return c->len <= s->eager_hi ? IE_R(SHORT_RTR) : IE_R(LONGCTS_RTR);
    case IC_RMA_ATOMIC:
        return c->dc ? IE_R(DC_WRITE_RTA) : IE_R(WRITE_RTA);
    case IC_RMA_FETCH:
        return IE_R(FETCH_RTA);
    default:
        return IE_R(COMPARE_RTA);
    }
}

/* What efarm's engine says it picked as origin (the request's proto). */
static unsigned ie_rma_picked(const struct ic_rma_case *c, uint8_t proto)
{
    switch (proto) {
    case EFARM_RMA_DIRECT_WRITE:
        return IE_R(DIRECT_WRITE);
    case EFARM_RMA_EAGER_RTW:
        return c->dc ? IE_R(DC_EAGER_RTW) : IE_R(EAGER_RTW);
    case EFARM_RMA_DIRECT_READ:
        return IE_R(DIRECT_READ);
    case EFARM_RMA_SHORT_RTR:
        return IE_R(SHORT_RTR);
    case EFARM_RMA_LONGCTS_RTW:
        return c->dc ? IE_R(DC_LONGCTS_RTW) : IE_R(LONGCTS_RTW);
    case EFARM_RMA_LONGREAD_RTW:
        return IE_R(LONGREAD_RTW);
    case EFARM_RMA_LONGCTS_RTR:
        return IE_R(LONGCTS_RTR);
    case EFARM_RMA_WRITE_RTA:
        return c->dc ? IE_R(DC_WRITE_RTA) : IE_R(WRITE_RTA);
    case EFARM_RMA_FETCH_RTA:
        return IE_R(FETCH_RTA);
    case EFARM_RMA_COMPARE_RTA:
        return IE_R(COMPARE_RTA);
    default:
        return 0;
    }
}

/* "eager_rtw|short_rtr", or "none". */
static const char *ie_rma_bits_str(unsigned bits, char *buf, size_t len)
{
    size_t at = 0;

    buf[0] = '\0';
    for (unsigned b = 0; b < IE_NRMA; b++)
        if ((bits & 1u << b) && at < len)
            at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? "|" : "", g_ie_rma[b].name);
    return at ? buf : "none";
}

static uint64_t ie_delta(const struct efarm_counters *now, const struct efarm_counters *was,
                         size_t off)
{
    return *(const uint64_t *)((const char *)now + off) -
           *(const uint64_t *)((const char *)was + off);
}
#define IE_DELTA(now, was, name) ie_delta(now, was, offsetof(struct efarm_counters, name))

/* What crossed during one case, from efarm's counters. */
struct ie_rma_tally {
    unsigned pkts;         /* subprotocols whose REQ types crossed */
    uint64_t nreq;         /* REQs of them */
    uint64_t replies_owed; /* REQs that get one reply each */
    uint64_t replies;      /* READRSP, ATOMRSP, RECEIPT, EOR the other way */
    uint64_t triggers;     /* libfabric's handshake triggers among the EAGER_RTWs */
    bool per_packet;       /* one REQ per packet of data, not one for the operation */
};

static void ie_rma_tally(const struct ie_side *s, const struct ic_rma_case *c,
                         struct ie_rma_tally *t)
{
    const struct efarm_counters *now = efarm_ep_counters(s->ep), *was = &s->before;
    bool efarm_origin = c->dir == IC_EFARM_TO_FI;
    const uint64_t *req_now = efarm_origin ? now->tx_by_type : now->rx_by_type;
    const uint64_t *req_was = efarm_origin ? was->tx_by_type : was->rx_by_type;
    const uint64_t *rsp_now = efarm_origin ? now->rx_by_type : now->tx_by_type;
    const uint64_t *rsp_was = efarm_origin ? was->rx_by_type : was->tx_by_type;

    memset(t, 0, sizeof(*t));
    /*
     * libfabric asks for our HANDSHAKE with a 0-byte EAGER_RTW naming no memory
     * before its first delivery-complete operation when it has none yet: an
     * EAGER_RTW efarm neither served nor refused, in a case where it sent its
     * HANDSHAKE, is that trigger (a lost write would show in the memory).
     */
    if (!efarm_origin) {
        uint64_t rtw = req_now[EFARM_PKT_EAGER_RTW] - req_was[EFARM_PKT_EAGER_RTW], all = 0;
        uint64_t handled = IE_DELTA(now, was, rma_served) + IE_DELTA(now, was, rma_refused) +
                           IE_DELTA(now, was, unsupported);

        for (unsigned b = 0; b < IE_NRMA; b++)
            all += g_ie_rma[b].type ? req_now[g_ie_rma[b].type] - req_was[g_ie_rma[b].type] : 0;
        t->triggers = all > handled ? all - handled : 0;
        t->triggers = t->triggers < rtw ? t->triggers : rtw;
        if (t->triggers > IE_DELTA(now, was, handshakes_sent))
            t->triggers = IE_DELTA(now, was, handshakes_sent);
    }
    for (unsigned b = 0; b < IE_NRMA; b++) {
        uint8_t type = g_ie_rma[b].type;
        uint64_t n = type ? req_now[type] - req_was[type] : 0;

        if (type == EFARM_PKT_EAGER_RTW)
            n -= t->triggers;
        if (n) {
            t->pkts |= 1u << b;
            t->nreq += n;
            t->replies_owed += g_ie_rma[b].reply ? n : 0;
            t->per_packet |= g_ie_rma[b].per_packet;
        }
    }
    for (unsigned i = 0; i < sizeof(g_ie_rma_replies); i++)
        t->replies += rsp_now[g_ie_rma_replies[i]] - rsp_was[g_ie_rma_replies[i]];
}

/* One defect line per broken rule of case c's counters. */
#define IE_RMA_DEFECT(...)                                                    \
    do {                                                                      \
        fprintf(stderr, "interop(efarm): one-sided case %u (%s): ", c->index, \
                ic_rma_describe(c, name, sizeof(name)));                      \
        fprintf(stderr, __VA_ARGS__);                                         \
        fputc('\n', stderr);                                                  \
        (*defects)++;                                                         \
    } while (0)

/*
 * efarm as origin: the subprotocol is the request's proto; the engine counted
 * it once, and sent exactly its REQ types (none and an RDMA work request for
 * the direct ones).
 */
static unsigned ie_rma_origin_seen(const struct ie_side *s, const struct ic_rma_case *c,
                                   const struct ie_rma_tally *t, unsigned *defects)
{
    const struct efarm_counters *now = efarm_ep_counters(s->ep), *was = &s->before;
    uint8_t proto = s->reqs[0].proto;
    unsigned seen = ie_rma_picked(c, proto), want_pkts = 0;
    char name[96], b1[128], b2[128];

    if (proto < EFARM_RMA_PROTO_COUNT && ie_delta(now, was, g_ie_rma_counter[proto]) != 1)
        IE_RMA_DEFECT("the engine's %s counter did not count it once", efarm_rma_proto_name(proto));
    for (unsigned b = 0; b < IE_NRMA; b++)
        if ((seen & 1u << b) && g_ie_rma[b].type)
            want_pkts |= 1u << b;
    if (t->pkts != want_pkts)
        IE_RMA_DEFECT("the engine reports %s but sent REQs of %s",
                      ie_rma_bits_str(seen, b1, sizeof(b1)),
                      ie_rma_bits_str(t->pkts, b2, sizeof(b2)));
    if (!t->pkts && IE_DELTA(now, was, rma_wrs_posted) == 0)
        IE_RMA_DEFECT("direct, but no RDMA work request was posted");
    return seen;
}

/*
 * efarm as target: the subprotocol is the REQ types received, or the device's
 * RDMA when none came; efarm served every REQ once and refused or dropped none.
 */
static unsigned ie_rma_target_seen(const struct ie_side *s, const struct ic_rma_case *c,
                                   const struct ie_rma_tally *t, unsigned *defects)
{
    const struct efarm_counters *now = efarm_ep_counters(s->ep), *was = &s->before;
    char name[96];

    /* A refusal case: every REQ refused, none served (the device's own refuse nothing here). */
    uint64_t want_served = c->refuse ? 0 : t->nreq, want_refused = c->refuse ? t->nreq : 0;

    if (IE_DELTA(now, was, rma_served) != want_served)
        IE_RMA_DEFECT("efarm served %llu of %llu REQ(s)%s",
                      (unsigned long long)IE_DELTA(now, was, rma_served),
                      (unsigned long long)t->nreq, c->refuse ? " it had to refuse" : "");
    if (IE_DELTA(now, was, rma_refused) != want_refused || IE_DELTA(now, was, unsupported))
        IE_RMA_DEFECT("efarm refused %llu of %llu REQ(s) and dropped %llu unsupported",
                      (unsigned long long)IE_DELTA(now, was, rma_refused),
                      (unsigned long long)t->nreq,
                      (unsigned long long)IE_DELTA(now, was, unsupported));
    if (t->pkts)
        return t->pkts;
    return c->kind == IC_RMA_WRITE  ? IE_R(DIRECT_WRITE)
           : c->kind == IC_RMA_READ ? IE_R(DIRECT_READ)
                                    : 0;
}

/*
 * IC_BUG_WRITE_BUF_UNREADABLE (interop.h): libfabric's LONGREAD_RTW whose
 * buffer efarm's RDMA read was refused, answered by one READ_NACK and sent
 * again as one (DC_)LONGCTS_RTW. Where the run may show it, the case counts
 * as the LONGREAD_RTW libfabric picked, its READ_NACK as its reply.
 */
static bool ie_rma_unreadable(const struct ie_side *s, const struct ic_rma_case *c,
                              struct ie_rma_tally *t, unsigned *seen)
{
    const struct efarm_counters *now = efarm_ep_counters(s->ep), *was = &s->before;
    unsigned again = c->dc ? IE_R(DC_LONGCTS_RTW) : IE_R(LONGCTS_RTW);

    if (!(s->fi_bugs & IC_BUG_WRITE_BUF_UNREADABLE) || c->dir != IC_FI_TO_EFARM ||
        c->kind != IC_RMA_WRITE || (s->write_ok && !c->cq_data) ||
        t->pkts != (IE_R(LONGREAD_RTW) | again) || t->nreq != 2 ||
        IE_DELTA(now, was, read_nacks_sent) != 1)
        return false;
    t->pkts = IE_R(LONGREAD_RTW);
    t->nreq = 1;
    t->replies_owed = c->dc; /* the RECEIPT of DC_LONGCTS_RTW; the READ_NACK is no EOR */
    *seen = t->pkts;
    ++*s->tolerated;
    return true;
}

/* As target: a REQ of the case was served or refused (a direct one is the device's: none comes). */
bool ie_rma_arrived(void *side, const struct ic_rma_case *c)
{
    const struct ie_side *s = side;
    const struct efarm_counters *now = efarm_ep_counters(s->ep), *was = &s->before;

    (void)c;
    return IE_DELTA(now, was, rma_refused) + IE_DELTA(now, was, rma_served) > 0;
}

unsigned ie_rma_case_end(void *side, const struct ic_rma_case *c, bool origin_failed)
{
    struct ie_side *s = side;
    /* A REQ per packet carries at most an MTU of data, at least an MTU less its header. */
    uint64_t mtu = efarm_ep_caps(s->ep)->max_msg_size;
    uint64_t lo = (c->len + mtu - 1) / mtu, hi = (c->len + mtu - 257) / (mtu - 256);
    unsigned seen, allowed = ie_rma_allowed(s, c), found = 0, *defects = &found;
    char name[96], b1[128], b2[128];
    struct ie_rma_tally t;

    ie_rma_tally(s, c, &t);
    seen = c->dir == IC_EFARM_TO_FI ? ie_rma_origin_seen(s, c, &t, defects)
                                    : ie_rma_target_seen(s, c, &t, defects);
    (void)ie_rma_unreadable(s, c, &t, &seen);
    /*
     * A refusal: efarm as origin always learns it (the device's error for its
     * RDMA, the REFUSED answer for its packets); libfabric as origin where the
     * device refused its RDMA (no REQ reached efarm).
     */
    if (c->refuse && !origin_failed && (c->dir == IC_EFARM_TO_FI || t.pkts == 0) &&
        !ic_rma_cache_may_widen(c, s->fi_bugs) && !ic_rma_ro_may_take_write(c, s->fi_bugs))
        IE_RMA_DEFECT("refused, yet the origin's operation completed without an error");
    if (t.replies != t.replies_owed)
        IE_RMA_DEFECT("%llu replies (READRSP, ATOMRSP, RECEIPT, EOR) to %llu REQ(s) that get one",
                      (unsigned long long)t.replies, (unsigned long long)t.replies_owed);
    if (t.pkts && (t.per_packet ? t.nreq < lo || t.nreq > hi : t.nreq != 1))
        IE_RMA_DEFECT("%llu REQ(s) for %llu B (%s)", (unsigned long long)t.nreq,
                      (unsigned long long)c->len,
                      t.per_packet ? "a REQ per packet of data" : "one for the operation");
    if (!seen || (seen & (seen - 1)) || (seen & ~allowed))
        IE_RMA_DEFECT("subprotocol %s in %llu REQ(s), allowed %s",
                      ie_rma_bits_str(seen, b1, sizeof(b1)), (unsigned long long)t.nreq,
                      ie_rma_bits_str(allowed, b2, sizeof(b2)));
    s->rma_seen[c->dir] |= seen;
    for (unsigned b = 0; b < IE_NRMA; b++)
        if (seen & 1u << b) {
            s->rma_ops[c->dir][b]++;
            s->rma_reqs[c->dir][b] += t.nreq;
        }
    if (s->verbose)
        printf("  one-sided case %u subprotocol %s (%llu REQ packets, %llu replies%s)\n", c->index,
               ie_rma_bits_str(seen, b1, sizeof(b1)), (unsigned long long)t.nreq,
               (unsigned long long)t.replies, t.triggers ? ", a handshake trigger" : "");
    return found;
}
#undef IE_RMA_DEFECT

/* [fi:|efarm:]NAME,...: bits[dir] for the operations each side starts. */
int ie_rma_parse_expect(const char *list, unsigned bits[2])
{
    char buf[512], *save = NULL;

    if (strlen(list) >= sizeof(buf))
        return -EINVAL;
    strcpy(buf, list);
    bits[0] = bits[1] = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        unsigned dirs = 1u << IC_FI_TO_EFARM | 1u << IC_EFARM_TO_FI, b = 0;

        if (strncmp(t, "fi:", 3) == 0) {
            dirs = 1u << IC_FI_TO_EFARM;
            t += 3;
        } else if (strncmp(t, "efarm:", 6) == 0) {
            dirs = 1u << IC_EFARM_TO_FI;
            t += 6;
        }
        while (b < IE_NRMA && strcmp(t, g_ie_rma[b].name))
            b++;
        if (b == IE_NRMA || !g_ie_rma[b].served)
            return -EINVAL;
        for (unsigned dir = 0; dir < 2; dir++)
            if (dirs & 1u << dir)
                bits[dir] |= 1u << b;
    }
    return 0;
}

/*
 * With IC_F_ATOMICS: efarm's own answer (efarm_atomic_valid) for every kind,
 * operation and datatype up to libfabric's 128-bit integers agrees with
 * interop.h's list of what libfabric's EFA provider carries. Returns the
 * disagreements, each said once.
 */
static unsigned ie_atomics_offered(void)
{
    static const enum efarm_atomic_kind kinds[] = {
        [IC_RMA_ATOMIC] = EFARM_ATOMIC_WRITE,
        [IC_RMA_FETCH] = EFARM_ATOMIC_FETCH,
        [IC_RMA_COMPARE] = EFARM_ATOMIC_COMPARE,
    };
    unsigned defects = 0;

    for (unsigned kind = IC_RMA_ATOMIC; kind <= IC_RMA_COMPARE; kind++)
        for (unsigned op = 0; op < IC_OP_COUNT; op++)
            for (unsigned dt = 0; dt <= 15; dt++) { /* FI_UINT128 */
                bool mine = efarm_atomic_valid(kinds[kind], op, dt);

                if (mine != ic_atomic_valid(kind, op, dt)) {
                    fprintf(stderr,
                            "interop-efarm: %s atomic %s on datatype %u: efarm says %s, the test's "
                            "list says %s\n",
                            kind == IC_RMA_ATOMIC  ? "write"
                            : kind == IC_RMA_FETCH ? "fetch"
                                                   : "compare",
                            ic_op_name(op), dt, mine ? "valid" : "not carried",
                            ic_atomic_valid(kind, op, dt) ? "valid" : "not carried");
                    defects++;
                }
            }
    return defects;
}

int ie_rma_phase(struct ie_side *s, const struct ic_side_ops *ops, int fd, const struct ie_args *a,
                 unsigned *ncases_p)
{
    static struct ic_rma_case cases[IC_MAX_RMA_CASES];
    unsigned ncases = ic_rma_cases(&a->params, cases, IC_MAX_RMA_CASES);
    struct ic_rma_mem mem = {.region = aligned_alloc(4096, IC_RMA_REGION),
                             .ro = aligned_alloc(4096, IC_RMA_RO),
                             .local = aligned_alloc(4096, IC_RMA_LOCAL)};
    struct efarm_region *region, *ro = NULL;
    unsigned offered = 0;
    int ret = -ENOMEM;

    *ncases_p = ncases;
    if (a->params.flags & IC_F_ATOMICS)
        offered = ie_atomics_offered();
    if (mem.region == NULL || mem.local == NULL || mem.ro == NULL)
        goto out_free;
    memset(mem.region, 0, IC_RMA_REGION);
    for (uint64_t o = 0; o < IC_RMA_RO; o++)
        mem.ro[o] = ic_rma_ro_byte(o);
    ret = efarm_expose(s->ep, mem.ro, IC_RMA_RO, EFARM_EXPOSE_READ, &ro);
    if (ret) {
        fprintf(stderr, "interop-efarm: efarm_expose of the read-only region: %s\n",
                efarm_strerror(ret));
        goto out_free;
    }
    ret = efarm_expose(s->ep, mem.region, IC_RMA_REGION, EFARM_EXPOSE_READ | EFARM_EXPOSE_WRITE,
                       &region);
    if (ret) {
        fprintf(stderr, "interop-efarm: efarm_expose: %s\n", efarm_strerror(ret));
        goto out_free;
    }
    ret = ic_region_exchange(fd, (uint64_t)(uintptr_t)mem.region, efarm_region_key(region),
                             &mem.peer_addr, &mem.peer_key, (int)(a->ropts.case_timeout_s * 1000));
    if (!ret)
        ret = ic_region_exchange(fd, (uint64_t)(uintptr_t)mem.ro, efarm_region_key(ro),
                                 &mem.peer_ro_addr, &mem.peer_ro_key,
                                 (int)(a->ropts.case_timeout_s * 1000));
    if (ret) {
        fprintf(stderr, "interop-efarm: exchanging the one-sided regions: %s\n",
                ret == -EPROTO ? "protocol error on the control channel" : efarm_strerror(ret));
        goto out_unexpose;
    }
    ret = ic_rma_run(ops, s, true, fd, cases, ncases, &a->ropts, &mem);
    if (ret >= 0)
        ret += (int)offered;
out_unexpose:
    efarm_unexpose(s->ep, region);
out_free:
    if (ro)
        efarm_unexpose(s->ep, ro);
    free(mem.local);
    free(mem.ro);
    free(mem.region);
    return ret;
}

unsigned ie_rma_report(const struct ie_side *s, const struct ie_args *a)
{
    unsigned defects = 0;

    /* NAME=operations(REQ packets) per origin. */
    for (unsigned dir = 0; dir < 2; dir++) {
        printf("one-sided %s:", ic_dir_name(dir));
        for (unsigned b = 0; b < IE_NRMA; b++)
            if (s->rma_ops[dir][b])
                printf(" %s=%lu(%lu)", g_ie_rma[b].name, s->rma_ops[dir][b], s->rma_reqs[dir][b]);
        printf("\n");
        if (a->expect_rma[dir] & ~s->rma_seen[dir]) {
            char bits[256];

            fprintf(stderr, "interop-efarm: one-sided %s never used: %s\n", ic_dir_name(dir),
                    ie_rma_bits_str(a->expect_rma[dir] & ~s->rma_seen[dir], bits, sizeof(bits)));
            defects++;
        }
    }
    return defects;
}
