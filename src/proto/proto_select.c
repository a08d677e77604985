/*
 * Subprotocol selection: one table of rules, tried in order; the first rule
 * whose length bounds and conditions hold picks the subprotocol. Every bound
 * is a threshold resolved at endpoint open (EFARM_EAGER_MAX, EFARM_MEDIUM_MAX,
 * EFARM_READ_MIN, EFARM_READ_MIN_UNREG, EFARM_RUNT_MIN, each from the
 * selection profile unless set: proto_profile.c) or a fact of the packet
 * (what one REQ carries to this peer); the conditions are the peer's
 * negotiated features, the endpoint's reads in flight (EFARM_MAX_READS), the
 * peer's runt bytes in flight (EFARM_RUNT_SIZE), delivery complete, and two
 * inputs of the policy:
 *   - whether the send buffer is already registered (the registration cache
 *     holds it; a packed temporary never is): a read protocol for a buffer
 *     that is not pays its registration, so its threshold is read_min_cold;
 *   - how many peers may send to the receiver at once (its fan-in): a medium
 *     message lands whole in the receiver's buffers whether or not its
 *     receive is posted, and every sender may send one, so medium is used
 *     only while len x fan-in stays within EFARM_UNEXP_BYTES (the receiver's
 *     buffering before back-pressure). The fan-in is the peers this endpoint
 *     has talked to, or the caller's hint when larger (MPI: the
 *     communicator's size), or exactly the hint when the caller says so (MPI:
 *     the efarm_fanin info key).
 * Medium also ends where a read protocol this send may use starts. While
 * other sends to the same peer are in flight (a stream), the thresholds are
 * the stream ones (EFARM_MEDIUM_MAX_STREAM, EFARM_READ_MIN_STREAM), from the
 * profile's stream curves: how many messages per second each subprotocol
 * moves with several in flight, which is not what one message's latency says
 * (bench/README.md, bandwidth sweep).
 * With the reference profile this is the reference implementation: eager up
 * to what one packet holds, medium up to 64 KiB, reads from 1 MiB, runting
 * read when no read is in flight (it pays off with few messages in flight,
 * section 4.5), long-CTS otherwise.
 *
 * EFARM_PROTO forces one subprotocol for every message it may carry (for
 * comparisons and calibration), and a send's hint (EFARM_SEND_PROTO: the MPI
 * communicator's efarm_protocol info key) does the same for that send, in
 * place of EFARM_PROTO: the length bounds that are tunables no longer
 * apply, but the facts do: eager only what one packet holds, medium at least
 * a byte (its packets carry the data), the long ones only more than one
 * packet (a long REQ must leave data for later packets), reads
 * only when both sides negotiated them, runting read not for delivery
 * complete. A message the forced subprotocol cannot carry is selected as
 * without it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "efarm_text.h"
#include "msg_proto.h"
#include "proto_internal.h"
#include "proto_select.h"

/*
 * The rules are the rows' (msg_proto.h: each subprotocol's file holds its
 * rule), tried in EFARM_PROTO_LIST's rank order; the bounds and conditions
 * they name are resolved here.
 */
static const struct efarm_sel_rule *rule_of(unsigned kind)
{
    return &g_efarm_msg_protos[kind]->select;
}

uint64_t efarm_select_read_min(const struct efarm_ep_params *p, const struct efarm_select_in *in)
{
    if (in->peer_sends)
        return in->buf_cold ? p->read_min_stream_cold : p->read_min_stream;
    return in->buf_cold ? p->read_min_cold : p->read_min;
}

static uint32_t failed_condition(const struct efarm_ep_params *p, const struct efarm_select_in *in,
                                 uint32_t need);

/* Runting read's threshold: its own, and for a buffer to be registered at least the read one. */
static uint64_t runt_min(const struct efarm_ep_params *p, const struct efarm_select_in *in)
{
    return in->buf_cold && p->read_min_cold > p->runt_min ? p->read_min_cold : p->runt_min;
}

static uint64_t bound(const struct efarm_ep_params *p, const struct efarm_select_in *in,
                      enum efarm_sel_bound b, uint64_t none)
{
    uint64_t v;

    switch (b) {
    case EFARM_SEL_EAGER_FIT:
        return efarm_select_eager_max(p, in->eager_fit);
    case EFARM_SEL_MEDIUM_MAX:
        /*
         * A read protocol this send may use takes over from its threshold:
         * long-read's whenever the peer reads, runting read's when its
         * conditions hold now.
         */
        v = in->peer_rdma_read ? efarm_select_read_min(p, in) : UINT64_MAX;
        if (!failed_condition(p, in, EFARM_SEL_RUNT_NEED) && runt_min(p, in) < v)
            v = runt_min(p, in);
        v = v - 1 < p->medium_max ? v - 1 : p->medium_max;
        /* A stream to this peer: the receiver-paced protocols move it faster. */
        if (in->peer_sends && p->medium_max_stream < v)
            v = p->medium_max_stream;
        return v;
    case EFARM_SEL_READ_MIN:
        return efarm_select_read_min(p, in);
    case EFARM_SEL_RUNT_MIN:
        return runt_min(p, in);
    default:
        return none;
    }
}

/* What bound b (of value v) is, in words. */
static const char *bound_name(const struct efarm_ep_params *p, enum efarm_sel_bound b,
                              const struct efarm_select_in *in, uint64_t v)
{
    switch (b) {
    case EFARM_SEL_EAGER_FIT:
        return "one packet (or EFARM_EAGER_MAX)";
    case EFARM_SEL_MEDIUM_MAX:
        if (in->peer_sends && v == p->medium_max_stream)
            return "medium max with sends in flight to the peer (EFARM_MEDIUM_MAX_STREAM)";
        return in->peer_rdma_read ? "medium max (EFARM_MEDIUM_MAX, below the read thresholds)"
                                  : "medium max (EFARM_MEDIUM_MAX)";
    case EFARM_SEL_READ_MIN:
        if (in->peer_sends)
            return in->buf_cold ? "read min with sends in flight, unregistered buffer "
                                  "(EFARM_READ_MIN_STREAM)"
                                : "read min with sends in flight (EFARM_READ_MIN_STREAM)";
        return in->buf_cold ? "read min for an unregistered buffer (EFARM_READ_MIN_UNREG)"
                            : "read min (EFARM_READ_MIN)";
    case EFARM_SEL_RUNT_MIN:
        return "runting-read min (EFARM_RUNT_MIN)";
    default:
        return "";
    }
}

/* The first condition of need that fails, or 0. */
static uint32_t failed_condition(const struct efarm_ep_params *p, const struct efarm_select_in *in,
                                 uint32_t need)
{
    if ((need & EFARM_SEL_NEED_READ) && !in->peer_rdma_read)
        return EFARM_SEL_NEED_READ;
    if ((need & EFARM_SEL_NEED_RUNT) && !in->peer_runt_read)
        return EFARM_SEL_NEED_RUNT;
    if ((need & EFARM_SEL_NO_DC) && (in->flags & EFARM_SEND_DC))
        return EFARM_SEL_NO_DC;
    if ((need & EFARM_SEL_IDLE_READS) && in->reads_inflight != 0)
        return EFARM_SEL_IDLE_READS;
    if ((need & EFARM_SEL_READ_SLOT) && in->reads_inflight >= p->max_reads)
        return EFARM_SEL_READ_SLOT;
    if ((need & EFARM_SEL_RUNT_BUDGET) && in->runt_bytes_in_flight >= p->runt_size)
        return EFARM_SEL_RUNT_BUDGET;
    if ((need & EFARM_SEL_FANIN) && in->npeers > 1 && in->len > p->unexp_bytes / in->npeers)
        return EFARM_SEL_FANIN;
    return 0;
}

static bool conditions_hold(const struct efarm_ep_params *p, const struct efarm_select_in *in,
                            uint32_t need)
{
    return failed_condition(p, in, need) == 0;
}

static void why_condition(struct efarm_text *w, const struct efarm_ep_params *p,
                          const struct efarm_select_in *in, uint32_t cond)
{
    switch (cond) {
    case EFARM_SEL_NEED_READ:
        efarm_text_add(w, "no RDMA read on both sides");
        break;
    case EFARM_SEL_NEED_RUNT:
        efarm_text_add(w, "no runting read on both sides");
        break;
    case EFARM_SEL_NO_DC:
        efarm_text_add(w, "delivery complete (ssend)");
        break;
    case EFARM_SEL_IDLE_READS:
        efarm_text_add(w, "%u reads in flight", in->reads_inflight);
        break;
    case EFARM_SEL_READ_SLOT:
        efarm_text_add(w, "all %u read slots busy (EFARM_MAX_READS)", p->max_reads);
        break;
    case EFARM_SEL_RUNT_BUDGET:
        efarm_text_add(w, "runt budget used (EFARM_RUNT_SIZE)");
        break;
    case EFARM_SEL_FANIN:
        efarm_text_add(w, "%u peers x %llu B > EFARM_UNEXP_BYTES %llu", in->npeers,
                       (unsigned long long)in->len, (unsigned long long)p->unexp_bytes);
        break;
    default:
        break;
    }
}

bool efarm_proto_legal(const struct efarm_ep_params *p, const struct efarm_select_in *in,
                       enum efarm_proto_kind proto)
{
    const struct efarm_sel_rule *r;

    if ((unsigned)proto >= EFARM_PROTO_COUNT)
        return false;
    r = rule_of(proto);
    if ((r->fit == EFARM_FIT_ONE_PKT && in->len > in->eager_fit) ||
        (r->fit == EFARM_FIT_BEYOND_PKT && in->len <= in->eager_fit) ||
        (r->fit == EFARM_FIT_NONEMPTY && in->len == 0))
        return false;
    return conditions_hold(p, in, r->need_forced);
}

static enum efarm_proto_kind select_impl(const struct efarm_ep_params *p,
                                         const struct efarm_select_in *in, struct efarm_text *w)
{
    if (in->force_proto) {
        /* The caller's hint (MPI: the communicator's efarm_protocol) before EFARM_PROTO. */
        enum efarm_proto_kind k = (enum efarm_proto_kind)(in->force_proto - 1);

        if (efarm_proto_legal(p, in, k)) {
            efarm_text_add(w, "forced by the send's hint (efarm_protocol)");
            return k;
        }
        efarm_text_add(w, "hint %s cannot carry it; ", efarm_proto_name(k));
    } else if (p->force >= 0 && efarm_proto_legal(p, in, (enum efarm_proto_kind)p->force)) {
        efarm_text_add(w, "forced by EFARM_PROTO");
        return (enum efarm_proto_kind)p->force;
    }
    for (unsigned i = 0; i < EFARM_PROTO_COUNT; i++) {
        const enum efarm_proto_kind kind = (enum efarm_proto_kind)g_efarm_msg_proto_order[i];
        const struct efarm_sel_rule *r = rule_of(kind);
        uint64_t lo = bound(p, in, r->min_len, 0), hi = bound(p, in, r->max_len, UINT64_MAX);
        uint32_t failed;

        if (in->len < lo || in->len > hi) {
            if (w && lo == UINT64_MAX)
                efarm_text_add(w, "not %s: never (%s); ", efarm_proto_name(kind),
                               bound_name(p, r->min_len, in, lo));
            else if (w && (r->min_len || r->max_len) &&
                     !(in->len > hi && r->max_len == EFARM_SEL_EAGER_FIT))
                efarm_text_add(w, "not %s: %s %llu; ", efarm_proto_name(kind),
                               in->len < lo ? bound_name(p, r->min_len, in, lo)
                                            : bound_name(p, r->max_len, in, hi),
                               (unsigned long long)(in->len < lo ? lo : hi));
            continue;
        }
        failed = failed_condition(p, in, r->need);
        if (!failed) {
            if (w && r->min_len)
                efarm_text_add(w, "%s from %s %llu", efarm_proto_name(kind),
                               bound_name(p, r->min_len, in, lo), (unsigned long long)lo);
            else if (w && r->max_len)
                efarm_text_add(w, "%s up to %s %llu", efarm_proto_name(kind),
                               bound_name(p, r->max_len, in, hi), (unsigned long long)hi);
            else
                efarm_text_add(w, "%s: nothing else applies", efarm_proto_name(kind));
            return kind;
        }
        if (w) {
            efarm_text_add(w, "not %s: ", efarm_proto_name(kind));
            why_condition(w, p, in, failed);
            efarm_text_add(w, "; ");
        }
    }
    /* Unreached: the last rule has no bound nor condition (test_pkt_rows checks it). */
    return (enum efarm_proto_kind)g_efarm_msg_proto_order[EFARM_PROTO_COUNT - 1];
}

enum efarm_proto_kind efarm_proto_select(const struct efarm_ep_params *p,
                                         const struct efarm_select_in *in)
{
    return select_impl(p, in, NULL);
}

enum efarm_proto_kind efarm_proto_select_why(const struct efarm_ep_params *p,
                                             const struct efarm_select_in *in, char *buf,
                                             size_t size)
{
    struct efarm_text w = {buf, size, 0};

    if (size)
        buf[0] = '\0';
    return select_impl(p, in, &w);
}
