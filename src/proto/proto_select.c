/*
 * Subprotocol selection: one table of rules, tried in order; the first rule
 * whose length bounds and conditions hold picks the subprotocol. Every bound
 * is a tunable (EFARM_EAGER_MAX, EFARM_MEDIUM_MAX, EFARM_READ_MIN,
 * EFARM_RUNT_SIZE, EFARM_MAX_READS) or a fact of the packet (what one REQ
 * carries to this peer), and the defaults are the reference implementation's:
 * eager up to what one packet holds, medium up to 64 KiB, reads from 1 MiB,
 * runting read when no read is in flight (it pays off with few messages in
 * flight, section 4.5), long-CTS otherwise.
 *
 * EFARM_PROTO forces one subprotocol for every message it may carry (for
 * comparisons and calibration): the length bounds that are tunables no longer
 * apply, but the facts do: eager only what one packet holds, medium at least
 * a byte (its packets carry the data), the long ones only more than one
 * packet (a long REQ must leave data for later packets), reads
 * only when both sides negotiated them, runting read not for delivery
 * complete. A message the forced subprotocol cannot carry is selected as
 * without it.
 */
#include <errno.h>
#include <string.h>

#include "proto_internal.h"

enum sel_bound { SEL_NONE, SEL_EAGER_FIT, SEL_MEDIUM_MAX, SEL_READ_MIN };

/* Conditions of a rule. */
#define SEL_NEED_READ   0x01u /* both sides negotiated RDMA read */
#define SEL_NEED_RUNT   0x02u /* both sides negotiated runting read */
#define SEL_NO_DC       0x04u /* not for delivery-complete sends */
#define SEL_IDLE_READS  0x08u /* no RDMA read in flight on this endpoint */
#define SEL_READ_SLOT   0x10u /* a read slot is free (EFARM_MAX_READS) */
#define SEL_RUNT_BUDGET 0x20u /* the peer's runt bytes in flight leave room (EFARM_RUNT_SIZE) */

/* What one packet decides, whatever the tunables say. */
enum sel_fit { FIT_ANY, FIT_ONE_PKT, FIT_BEYOND_PKT, FIT_NONEMPTY };

struct sel_rule {
    uint8_t proto;
    uint8_t min_len; /* enum sel_bound: len >= this */
    uint8_t max_len; /* enum sel_bound: len <= this */
    uint8_t need;
    uint8_t fit;         /* enum sel_fit: what must hold even when EFARM_PROTO forces it */
    uint8_t need_forced; /* the conditions that still hold when forced (the rest are policy) */
};

static const struct sel_rule g_rules[] = {
    {.proto = EFARM_PROTO_EAGER, .max_len = SEL_EAGER_FIT, .fit = FIT_ONE_PKT},
    {.proto = EFARM_PROTO_MEDIUM, .max_len = SEL_MEDIUM_MAX, .fit = FIT_NONEMPTY},
    {.proto = EFARM_PROTO_RUNTREAD,
     .min_len = SEL_READ_MIN,
     .need = SEL_NEED_READ | SEL_NEED_RUNT | SEL_NO_DC | SEL_IDLE_READS | SEL_RUNT_BUDGET,
     .fit = FIT_BEYOND_PKT,
     .need_forced = SEL_NEED_READ | SEL_NEED_RUNT | SEL_NO_DC | SEL_RUNT_BUDGET},
    {.proto = EFARM_PROTO_LONGREAD,
     .min_len = SEL_READ_MIN,
     .need = SEL_NEED_READ | SEL_READ_SLOT,
     .fit = FIT_BEYOND_PKT,
     .need_forced = SEL_NEED_READ | SEL_READ_SLOT},
    {.proto = EFARM_PROTO_LONGCTS, .fit = FIT_BEYOND_PKT},
};

static uint64_t bound(const struct efarm_ep_params *p, const struct efarm_select_in *in,
                      enum sel_bound b, uint64_t none)
{
    switch (b) {
    case SEL_EAGER_FIT:
        return p->eager_max && p->eager_max < in->eager_fit ? p->eager_max : in->eager_fit;
    case SEL_MEDIUM_MAX:
        return p->medium_max;
    case SEL_READ_MIN:
        return p->read_min;
    default:
        return none;
    }
}

static bool conditions_hold(const struct efarm_ep_params *p, const struct efarm_select_in *in,
                            uint32_t need)
{
    if ((need & SEL_NEED_READ) && !in->peer_rdma_read)
        return false;
    if ((need & SEL_NEED_RUNT) && !in->peer_runt_read)
        return false;
    if ((need & SEL_NO_DC) && (in->flags & EFARM_SEND_DC))
        return false;
    if ((need & SEL_IDLE_READS) && in->reads_inflight != 0)
        return false;
    if ((need & SEL_READ_SLOT) && in->reads_inflight >= p->max_reads)
        return false;
    if ((need & SEL_RUNT_BUDGET) && in->runt_bytes_in_flight >= p->runt_size)
        return false;
    return true;
}

bool efarm_proto_legal(const struct efarm_ep_params *p, const struct efarm_select_in *in,
                       enum efarm_proto_kind proto)
{
    for (unsigned i = 0; i < sizeof(g_rules) / sizeof(g_rules[0]); i++) {
        const struct sel_rule *r = &g_rules[i];

        if (r->proto != proto)
            continue;
        if ((r->fit == FIT_ONE_PKT && in->len > in->eager_fit) ||
            (r->fit == FIT_BEYOND_PKT && in->len <= in->eager_fit) ||
            (r->fit == FIT_NONEMPTY && in->len == 0))
            return false;
        return conditions_hold(p, in, r->need_forced);
    }
    return false;
}

int efarm_proto_parse(const char *name)
{
    if (name == NULL || !strcmp(name, "auto") || !*name)
        return -1;
    for (int k = 0; k < EFARM_PROTO_COUNT; k++)
        if (!strcmp(name, efarm_proto_name((enum efarm_proto_kind)k)))
            return k;
    return -EINVAL;
}

enum efarm_proto_kind efarm_proto_select(const struct efarm_ep_params *p,
                                         const struct efarm_select_in *in)
{
    if (p->force >= 0 && efarm_proto_legal(p, in, (enum efarm_proto_kind)p->force))
        return (enum efarm_proto_kind)p->force;
    for (unsigned i = 0; i < sizeof(g_rules) / sizeof(g_rules[0]); i++) {
        const struct sel_rule *r = &g_rules[i];

        if (in->len < bound(p, in, r->min_len, 0) || in->len > bound(p, in, r->max_len, UINT64_MAX))
            continue;
        if (conditions_hold(p, in, r->need))
            return (enum efarm_proto_kind)r->proto;
    }
    return EFARM_PROTO_LONGCTS;
}
