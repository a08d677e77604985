/*
 * Protocol endpoints: open and close, parameters, the progress loop,
 * counters.
 *
 * efarm_ep_progress() is the only place work happens: it polls one batch of
 * device completions and hands each to the receive path (proto_rx.c), the
 * send path (proto_tx.c) or the read path (msg_recv.c), then retries what
 * waited for resources: packets that found the send queue full, peers whose
 * RNR backoff ended, HANDSHAKEs that found no send buffer, operations with
 * packets still to build, and peers whose next in-order message waited for
 * an operation or a record. Then it fails what waits on peers that failed
 * since the last call, and watches an endpoint that can receive nothing
 * (proto_rx.c). Each of those steps is bounded, so one call always returns.
 * Once the endpoint failed (ep->fatal), every call returns that error.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "efarm_capture.h"
#include "efarm_config.h"
#include "efarm_rma.h"
#include "msg_fast_inline.h"
#include "proto_internal.h"
#include "proto_onesided.h"
#include "proto_ops.h"
#include "proto_peers.h"
#include "proto_receive.h"
#include "proto_select.h"
#include "proto_transmit.h"

#define EFARM_MIN_MTU 1024 /* below this the REQ headers leave too little room */
_Static_assert(EFARM_MIN_MTU >= EFARM_EAGER_TMPL_SHORT,
               "a send buffer holds a short template copy");

static uint32_t pick_u32(uint32_t attr_value, uint64_t tunable)
{
    if (attr_value)
        return attr_value;
    return tunable > UINT32_MAX ? UINT32_MAX : (uint32_t)tunable;
}

static uint64_t pick_u64(uint64_t attr_value, uint64_t tunable)
{
    return attr_value ? attr_value : tunable;
}

/* Attribute over tunable; checks what must hold for the engine to work. */
static int params_resolve(const struct efarm_ep_attr *a, struct efarm_ep_params *p)
{
    const struct efarm_config *c = efarm_config();
    const char *refused;

    if (efarm_config_status(&refused)) {
        for (const char *line = refused; *line; line += strcspn(line, "\n"), line += !!*line)
            efarm_log(EFARM_LOG_ERROR, "%.*s", (int)strcspn(line, "\n"), line);
        return -EINVAL;
    }

    p->av_size = pick_u32(a->av_size, c->av_size);
    p->sq_depth = pick_u32(a->sq_depth, c->sq_depth);
    p->rx_buffers = pick_u32(a->rx_buffers, c->rx_buffers);
    p->tx_pkts = pick_u32(a->tx_pkts, c->tx_pkts);
    p->max_ops = pick_u32(a->max_ops, c->max_ops);
    p->max_posted = pick_u32(a->max_posted, c->max_posted);
    p->max_unexpected = a->max_unexpected; /* tests only; 0: the byte budget alone */
    p->unexp_bytes = pick_u64(a->unexp_bytes, c->unexp_bytes);
    p->unexp_max_bytes = pick_u64(a->unexp_max_bytes, c->unexp_max_bytes);
    p->rx_full_timeout_ms = pick_u64(a->rx_full_timeout_ms, c->rx_full_timeout_ms);
    p->peer_probe_ms = pick_u64(a->peer_probe_ms, c->peer_probe_ms);
    if (p->unexp_max_bytes < p->unexp_bytes)
        p->unexp_max_bytes = p->unexp_bytes;
    p->rx_reserve = pick_u32(a->rx_reserve, c->rx_reserve);
    p->recvwin = pick_u32(a->recvwin, c->recvwin);
    p->eager_max = pick_u64(a->eager_max, c->eager_max);
    p->medium_max = pick_u64(a->medium_max, c->medium_max);
    p->read_min = pick_u64(a->read_min, c->read_min);
    p->read_min_cold = pick_u64(a->read_min_unreg, c->read_min_unreg);
    p->runt_min = pick_u64(a->runt_min, c->runt_min);
    p->medium_max_stream = pick_u64(a->medium_max_stream, c->medium_max_stream);
    p->read_min_stream = pick_u64(a->read_min_stream, c->read_min_stream);
    p->runt_size = pick_u64(a->runt_size, c->runt_size);
    p->max_reads = pick_u32(a->max_reads, c->max_reads);
    p->cts_credits = pick_u32(a->cts_credits, c->cts_credits);
    p->rx_window = pick_u32(a->rx_window, c->rx_window);
    p->rnr_retry = pick_u32(a->rnr_retry, c->rnr_retry);
    p->rnr_backoff_us = pick_u32(a->rnr_backoff_us, c->rnr_backoff_us);
    p->rnr_backoff_max_us = pick_u32(a->rnr_backoff_max_us, c->rnr_backoff_max_us);
    p->rdma_read = c->rdma_read && !a->no_rdma_read;
    p->rdma_write = c->rdma_write && !a->no_rdma_write;
    p->connid_header = c->connid_header && !a->no_connid_header;
    p->dc = !a->no_dc;
    p->first_msg_id = a->first_msg_id;
    {
        const char *name = a->proto ? a->proto : c->proto;
        int force = efarm_proto_parse(name);

        if (force == -EINVAL) {
            efarm_log(EFARM_LOG_ERROR, "EFARM_PROTO=%s: expected one of " EFARM_PROTO_NAMES, name);
            return -EINVAL;
        }
        p->force = (int8_t)force;
        name = a->rma_proto ? a->rma_proto : c->rma_proto;
        if (efarm_rma_proto_parse(name, &p->rma_force)) {
            efarm_log(EFARM_LOG_ERROR,
                      "EFARM_RMA_PROTO=%s: expected auto or a comma-separated list of some "
                      "of " EFARM_RMA_FORCE_NAMES,
                      name);
            return -EINVAL;
        }
    }
    if (p->rx_reserve == 0)
        p->rx_reserve = p->rx_buffers / 4 ? p->rx_buffers / 4 : 1;

    if (p->av_size == 0 || p->av_size >= EFARM_PEER_NONE / 2 || p->sq_depth == 0 ||
        p->rx_buffers < 2 || p->tx_pkts < 4 || p->max_ops == 0 || p->max_ops > 0xffff ||
        p->max_posted == 0 || p->recvwin == 0 || p->rx_reserve >= p->rx_buffers ||
        p->recvwin > (1u << 16) || (p->recvwin & (p->recvwin - 1)) || p->cts_credits == 0 ||
        p->rx_window == 0 || p->rnr_retry > 7 || p->rnr_backoff_us == 0 ||
        p->rnr_backoff_max_us < p->rnr_backoff_us || p->max_reads == 0) {
        /* The tunables were checked by efarm_config: an attribute is out of range. */
        efarm_log(EFARM_LOG_ERROR, "endpoint attributes out of range (efarm-info shows the "
                                   "allowed range of each EFARM_* tunable of the same name)");
        return -EINVAL;
    }
    return 0;
}

/*
 * The selection thresholds not set by attribute or tunable, from the profile
 * (proto_profile.c) for messages above one packet of this device. An explicit
 * EFARM_READ_MIN is also the default of the unregistered-buffer, runting and
 * stream thresholds, as it was before profiles.
 */
int efarm_thresholds_resolve(const char *profile, const char *device_name, uint32_t mtu,
                             struct efarm_ep_params *p)
{
    struct efarm_profile pr; /* 3 KiB, once per endpoint open */
    struct efarm_thresholds t;
    int ret;

    ret = efarm_profile_load(profile, device_name, &pr);
    if (ret)
        return ret;
    efarm_profile_derive(&pr, mtu, &t);
    snprintf(p->profile, sizeof(p->profile), "%s", pr.name);
    if (!p->medium_max_stream)
        p->medium_max_stream = t.medium_max_stream;
    if (!p->read_min_stream_cold)
        p->read_min_stream_cold = p->read_min_stream ? p->read_min_stream
                                  : p->read_min      ? p->read_min
                                                     : t.read_min_stream_cold;
    if (!p->read_min_stream)
        p->read_min_stream = p->read_min ? p->read_min : t.read_min_stream;
    if (!p->read_min_cold)
        p->read_min_cold = p->read_min ? p->read_min : t.read_min_cold;
    if (!p->runt_min)
        p->runt_min = p->read_min ? p->read_min : t.runt_min;
    if (!p->medium_max)
        p->medium_max = t.medium_max;
    if (!p->read_min)
        p->read_min = t.read_min;
    return 0;
}

/*
 * EFARM_EAGER_MAX against this device: at most what one packet carries after
 * the shortest eager header. A message whose header is longer (tagged, with
 * the connid or the sender's address) carries a few bytes less eagerly.
 */
static int eager_max_check(uint64_t eager_max, const char *device_name, uint32_t mtu)
{
    uint64_t fit = mtu - efarm_pkt_type_info(EFARM_PKT_EAGER_MSGRTM)->hdr_size;

    if (eager_max <= fit)
        return 0;
    efarm_log(EFARM_LOG_ERROR,
              "EFARM_EAGER_MAX=%llu refused: one packet of %s (MTU %u) carries at most %llu "
              "bytes of an eager message (expected 0 to %llu; 0: what fits)",
              (unsigned long long)eager_max, device_name, mtu, (unsigned long long)fit,
              (unsigned long long)fit);
    return -EINVAL;
}

/* The sizes efarm_policy_print() lists: powers of two, one packet and each threshold +-1. */
static unsigned policy_sizes(const struct efarm_ep_params *p, uint64_t eager_fit, uint64_t out[96])
{
    uint64_t marks[] = {
        eager_fit,   p->medium_max,        p->read_min,        p->read_min_cold,
        p->runt_min, p->medium_max_stream, p->read_min_stream, p->read_min_stream_cold};
    unsigned n = 0;

    out[n++] = 0;
    for (unsigned k = 0; k <= 26; k++)
        out[n++] = 1ull << k;
    for (unsigned m = 0; m < sizeof(marks) / sizeof(marks[0]); m++)
        for (int d = -1; d <= 1; d++)
            if (marks[m] && marks[m] < (1ull << 26) && marks[m] + (uint64_t)(int64_t)d > 0)
                out[n++] = marks[m] + (uint64_t)(int64_t)d;
    /* Sort, drop repeats. */
    for (unsigned i = 1; i < n; i++)
        for (unsigned j = i; j > 0 && out[j - 1] > out[j]; j--) {
            uint64_t t = out[j];

            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    unsigned m = 0;

    for (unsigned i = 0; i < n; i++)
        if (!m || out[m - 1] != out[i])
            out[m++] = out[i];
    return m;
}

static void policy_size(FILE *out, const char *before, uint64_t size, const char *after)
{
    if (size == UINT64_MAX)
        fprintf(out, "%snever (it never wins in the profile)%s", before, after);
    else
        fprintf(out, "%s%llu B%s", before, (unsigned long long)size, after);
}

int efarm_policy_print(FILE *out, const char *device_name, uint32_t mtu)
{
    static const struct efarm_ep_attr none;
    struct efarm_ep_params p;
    uint64_t sizes[96], eager_fit;
    unsigned n;
    int ret;

    memset(&p, 0, sizeof(p));
    ret = params_resolve(&none, &p);
    if (ret)
        return ret;
    ret = eager_max_check(p.eager_max, device_name, mtu);
    if (ret)
        return ret;
    ret = efarm_thresholds_resolve(efarm_config()->profile, device_name, mtu, &p);
    if (ret)
        return ret;
    /* A tagged eager REQ with the connid header, as to a peer that asked for it. */
    eager_fit =
        mtu - efarm_pkt_type_info(EFARM_PKT_EAGER_TAGRTM)->hdr_size - EFARM_REQ_OPT_CONNID_LEN;
    fprintf(out, "selection policy on %s (MTU %u): profile %s\n", device_name, mtu, p.profile);
    fprintf(out, "  eager up to %llu B (one packet%s), medium up to %llu B, ",
            (unsigned long long)(p.eager_max && p.eager_max < eager_fit ? p.eager_max : eager_fit),
            p.eager_max ? ", EFARM_EAGER_MAX" : "", (unsigned long long)p.medium_max);
    policy_size(out, "reads from ", p.read_min, " (registered buffer) / ");
    policy_size(out, "", p.read_min_cold, " (unregistered), ");
    policy_size(out, "runting read from ", p.runt_min, "");
    fprintf(out, ",\n  in a stream (other sends to the peer in flight): ");
    if (p.medium_max_stream == UINT64_MAX)
        fprintf(out, "medium as above, ");
    else
        policy_size(out, "medium up to ", p.medium_max_stream, ", ");
    policy_size(out, "reads from ", p.read_min_stream, " / ");
    policy_size(out, "", p.read_min_stream_cold, " (unregistered)");
    fprintf(out,
            ",\n  medium only while size x fan-in <= EFARM_UNEXP_BYTES %llu (fan-in: the peers "
            "talked to,\n  at least a communicator's size - 1, or its efarm_fanin); forced: %s\n\n",
            (unsigned long long)p.unexp_bytes, p.force >= 0 ? efarm_proto_name(p.force) : "none");
    fprintf(out, "%12s  %-9s %-9s %-9s %-9s %-9s %-9s  %s\n", "bytes", "default", "unreg", "ssend",
            "1024peers", "noread", "stream", "why (default)");
    n = policy_sizes(&p, eager_fit, sizes);
    for (unsigned i = 0; i < n; i++) {
        struct efarm_select_in base = {.len = sizes[i],
                                       .eager_fit = eager_fit,
                                       .peer_rdma_read = p.rdma_read,
                                       .peer_runt_read = p.rdma_read,
                                       .npeers = 1};
        struct efarm_select_in v[5] = {base, base, base, base, base};
        char why[512];
        enum efarm_proto_kind d = efarm_proto_select_why(&p, &base, why, sizeof(why));

        v[0].buf_cold = true;
        v[1].flags = EFARM_SEND_DC;
        v[2].npeers = 1024;
        v[3].peer_rdma_read = v[3].peer_runt_read = false;
        v[4].peer_sends = 1;
        fprintf(out, "%12llu  %-9s", (unsigned long long)sizes[i], efarm_proto_name(d));
        for (int k = 0; k < 5; k++)
            fprintf(out, " %-9s", efarm_proto_name(efarm_proto_select(&p, &v[k])));
        fprintf(out, "  %s\n", why);
    }
    return 0;
}

/* What our HANDSHAKE advertises and requests (section 2.1, addenda). */
static uint64_t our_extra_info(const struct efarm_ep *ep)
{
    uint64_t info = 0;

    if (ep->p.dc)
        info |= EFARM_EXTRA_FEATURE_DELIVERY_COMPLETE;
    if (ep->p.rdma_read && ep->caps.rdma_read)
        info |= EFARM_EXTRA_FEATURE_RDMA_READ | EFARM_EXTRA_FEATURE_RUNT_READ |
                EFARM_EXTRA_FEATURE_READ_NACK;
    if (ep->p.rdma_write && ep->caps.rdma_write)
        info |= EFARM_EXTRA_FEATURE_RDMA_WRITE;
    /* Its QP takes writes with immediate unsolicited: peers must know to agree (rma.c). */
    if (ep->p.rdma_write && ep->caps.rdma_write && efarm_dev_ep_unsolicited(ep->dev))
        info |= EFARM_EXTRA_FEATURE_UNSOLICITED_WRITE_RECV;
    if (ep->p.connid_header)
        info |= EFARM_EXTRA_REQUEST_CONNID_HEADER;
    return info;
}

int efarm_ep_open(const struct efarm_ep_attr *attr, struct efarm_ep **ep_p)
{
    struct efarm_ep_attr a = attr ? *attr : (struct efarm_ep_attr){0};
    struct efarm_dev_ep_attr dattr = {0};
    struct efarm_ep *ep;
    int ret;

    ep = efarm_aligned_calloc(1, sizeof(*ep));
    if (ep == NULL)
        return -ENOMEM;
    ret = params_resolve(&a, &ep->p);
    if (ret)
        goto err_free;
    ep->arrival_clock = &ep->own_clock;
    efarm_list_init(&ep->tx_queue);
    efarm_list_init(&ep->work);
    efarm_list_init(&ep->hs_queue);
    efarm_list_init(&ep->backoff_peers);
    efarm_list_init(&ep->stalled_peers);
    efarm_list_init(&ep->failed_peers);

    dattr.sq_depth = ep->p.sq_depth;
    /* The default fits the device's send queue; a depth the user asked for is not lowered. */
    dattr.sq_depth_fit = !a.sq_depth && efarm_config_is_default("SQ_DEPTH");
    dattr.rx_buffers = ep->p.rx_buffers;
    dattr.rx_refill = ep->p.rx_buffers / 4 < 32 ? ep->p.rx_buffers / 4 : 32;
    if (dattr.rx_refill == 0)
        dattr.rx_refill = 1;
    dattr.rnr_retry = (uint8_t)ep->p.rnr_retry;
    ret = efarm_dev_ep_open(a.device, &dattr, &ep->dev);
    if (ret) {
        efarm_log(EFARM_LOG_ERROR, "cannot open the EFA endpoint: %s", efarm_strerror(ret));
        goto err_free;
    }
    ep->caps = *efarm_dev_ep_caps(ep->dev);
    ep->mtu = ep->caps.max_msg_size;
    if (ep->mtu < EFARM_MIN_MTU) {
        efarm_log(EFARM_LOG_ERROR, "device MTU %u is below %u bytes", ep->mtu, EFARM_MIN_MTU);
        ret = -EINVAL;
        goto err_close_dev;
    }
    ret = eager_max_check(ep->p.eager_max, ep->caps.name, ep->mtu);
    if (ret)
        goto err_close_dev;
    ret = efarm_capture_open(); /* EFARM_CAPTURE: the process's pcap file, on the first open */
    if (ret)
        goto err_close_dev;
    ep->observe = efarm_log_level() >= EFARM_LOG_DATA || efarm_capture_on();
    ret = efarm_thresholds_resolve(a.profile ? a.profile : efarm_config()->profile, ep->caps.name,
                                   ep->mtu, &ep->p);
    if (ret)
        goto err_close_dev;
    efarm_dev_ep_raw_addr(ep->dev, ep->raw_addr);
    ep->connid = efarm_dev_ep_connid(ep->dev);
    ep->extra_info = our_extra_info(ep);
    ep->rng = ((uint64_t)ep->connid << 32 | 0x9e3779b9u) ^ efarm_now_ns();
    if (ep->rng == 0)
        ep->rng = 1;

    ret = efarm_av_init(ep);
    if (ret)
        goto err_close_dev;
    efarm_rx_fast_init(ep);
    ret = efarm_ops_init(ep);
    if (ret)
        goto err_fini_av;
    ep->probe_ops = ep->p.peer_probe_ms ? ep->p.max_ops : 0; /* efarm_ep_progress's test */
    ret = efarm_tx_init(ep);
    if (ret)
        goto err_fini_ops;
    ret = efarm_rx_init(ep);
    if (ret)
        goto err_fini_tx;
    /* As many waiting messages as the records the byte budget allows (efarm_rx_init). */
    ret = efarm_tm_open(ep->p.max_posted, ep->unexp_max, &ep->tm);
    if (ret)
        goto err_fini_rx;
    if (ep->extra_info & (EFARM_EXTRA_FEATURE_RDMA_READ | EFARM_EXTRA_FEATURE_RDMA_WRITE)) {
        ret = efarm_dev_mr_cache_open(ep->dev, &ep->mr_cache);
        if (ret)
            goto err_close_tm;
    }
    *ep_p = ep;
    return 0;

err_close_tm:
    efarm_tm_close(ep->tm);
err_fini_rx:
    efarm_rx_fini(ep);
err_fini_tx:
    efarm_tx_fini(ep);
err_fini_ops:
    efarm_ops_fini(ep);
err_fini_av:
    efarm_av_fini(ep);
err_close_dev:
    efarm_dev_ep_close(ep->dev);
err_free:
    free(ep);
    return ret;
}

void efarm_ep_close(struct efarm_ep *ep)
{
    if (ep == NULL)
        return;
    /*
     * The QP goes first: the device may still be resending a packet from a
     * send buffer, or serving a peer's read of a registered user buffer, and
     * must not touch that memory once it is deregistered and freed below.
     */
    efarm_dev_ep_quiesce(ep->dev);
    /* Registrations held by operations go first: the cache closes before the PD. */
    efarm_ops_fini(ep);
    efarm_regions_fini(ep);
    if (ep->mr_cache)
        efarm_mr_cache_close(ep->mr_cache);
    efarm_tm_close(ep->tm);
    efarm_rma_pending_fini(ep);
    efarm_rx_fini(ep);
    efarm_tx_fini(ep);
    efarm_av_fini(ep);
    efarm_dev_ep_close(ep->dev);
    free(ep);
}

void efarm_ep_addr(const struct efarm_ep *ep, uint8_t raw[EFARM_RAW_ADDR_LEN])
{
    memcpy(raw, ep->raw_addr, EFARM_RAW_ADDR_LEN);
}

void efarm_ep_policy(const struct efarm_ep *ep, struct efarm_ep_policy *out)
{
    snprintf(out->profile, sizeof(out->profile), "%s", ep->p.profile);
    out->medium_max = ep->p.medium_max;
    out->read_min = ep->p.read_min;
    out->read_min_unreg = ep->p.read_min_cold;
    out->runt_min = ep->p.runt_min;
    out->medium_max_stream = ep->p.medium_max_stream;
    out->read_min_stream = ep->p.read_min_stream;
    out->read_min_stream_unreg = ep->p.read_min_stream_cold;
}

const struct efarm_device_caps *efarm_ep_caps(const struct efarm_ep *ep)
{
    return &ep->caps;
}

/*
 * Run the operations waiting for send buffers, the send queue or read slots,
 * each once, in order: one that is still blocked goes back on ep->work for
 * the next call, behind nothing new.
 */
static void work_progress(struct efarm_ep *ep)
{
    struct efarm_link todo, *link;

    efarm_list_init(&todo);
    efarm_list_splice_tail(&todo, &ep->work);
    while ((link = efarm_list_first(&todo)) != NULL) {
        struct efarm_op *op = efarm_container_of(link, struct efarm_op, link);

        if (ep->ntx_free == 0) {
            /* Nothing more can be built until packets complete: keep the rest, in order. */
            efarm_list_splice_tail(&ep->work, &todo);
            return;
        }
        efarm_list_remove(link);
        op->flags &= ~EFARM_OPF_IN_WORK;
        efarm_op_role_ops(op)->work(ep, op);
    }
}

/* An RDMA read or write completed: its operation's class takes it. */
static void rdma_completion(struct efarm_ep *ep, const struct efarm_dev_cqe *cqe)
{
    struct efarm_op *op = efarm_op_find_live(ep, (uint32_t)(cqe->wr_id >> 32), EFARM_PEER_NONE);

    if (op == NULL || efarm_op_role_ops(op)->rdma_done == NULL) {
        efarm_log(EFARM_LOG_ERROR, "RDMA completion for no live operation (wr_id %#llx)",
                  (unsigned long long)cqe->wr_id);
        return;
    }
    efarm_op_role_ops(op)->rdma_done(ep, op, cqe);
}

/*
 * Sanitizer builds (CI's ASan and TSan runs of every engine test) check on
 * every progress call that no list holds work while ep->pending is clear:
 * a place that queued work without efarm_ep_pending() would stall it.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define EFARM_CHECK_PENDING 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define EFARM_CHECK_PENDING 1
#endif
#endif

/* Whether a list efarm_ep_progress serves besides the CQ holds something. */
static bool lists_busy(const struct efarm_ep *ep)
{
    return !efarm_list_empty(&ep->tx_queue) || !efarm_list_empty(&ep->backoff_peers) ||
           !efarm_list_empty(&ep->hs_queue) || !efarm_list_empty(&ep->work) ||
           !efarm_list_empty(&ep->stalled_peers) || ep->rma_pending != NULL ||
           !efarm_list_empty(&ep->failed_peers);
}

/* Serve the lists (ep->pending was set); pending stays set while any holds something. */
__attribute__((noinline)) static void lists_progress(struct efarm_ep *ep)
{
    ep->pending = false;
    if (!efarm_list_empty(&ep->tx_queue) || !efarm_list_empty(&ep->backoff_peers))
        efarm_tx_progress(ep);
    if (!efarm_list_empty(&ep->hs_queue))
        efarm_handshake_progress(ep);
    if (!efarm_list_empty(&ep->work))
        work_progress(ep);
    if (!efarm_list_empty(&ep->stalled_peers))
        efarm_rx_progress(ep);
    if (ep->rma_pending != NULL)
        efarm_rma_pending_progress(ep);
    if (!efarm_list_empty(&ep->failed_peers))
        efarm_failed_peers_progress(ep);
    if (lists_busy(ep))
        ep->pending = true;
}

/*
 * The device's current completion, handled inside the poll session: a
 * receive the fast path takes, and an injected send's packet, straight from
 * the CQ; anything else from a completion record.
 */
static inline __attribute__((always_inline)) void cur_completion(struct efarm_ep *ep,
                                                                 struct efarm_dev_ep *dev)
{
    struct efarm_dev_cqe cqe;
    enum efarm_dev_op op = efarm_dev_cur_op(dev);
    bool recv = op != EFARM_DEV_OP_SEND;

    /* An unsolicited write with immediate took no receive WR, and no send slot either. */
    if (!(op == EFARM_DEV_OP_RECV_WRITE_IMM && efarm_dev_cur_unsolicited(dev)))
        efarm_dev_cur_take(dev, recv);
    if (efarm_dev_cur_ok(dev)) {
        uint64_t wr_id = efarm_dev_cur_wr_id(dev);

        /* A peer's RDMA write with immediate took a receive WR but left no packet in it. */
        if (op == EFARM_DEV_OP_RECV ? efarm_rx_eager_fast(ep, dev, (uint32_t)wr_id)
                                    : !recv && efarm_tx_done_fast(ep, wr_id))
            return;
    }
    efarm_dev_cqe_read(dev, &cqe);
    if (recv)
        efarm_rx_completion(ep, &cqe);
    else if ((cqe.wr_id & EFARM_WR_KIND) == EFARM_WR_RDMA)
        rdma_completion(ep, &cqe); /* routed by our own wr_id: EFA reports reads as sends */
    else
        efarm_tx_completion_general(ep, &cqe);
}

int efarm_ep_progress(struct efarm_ep *ep)
{
    struct efarm_dev_ep *dev = ep->dev;
    int n = 0;

    if (__builtin_expect(efarm_dev_in_poll(dev), 0)) {
        /*
         * A callback that progress runs calls progress again. MPICH does this
         * on purpose: a request's completion that drops a communicator's last
         * reference frees it, and that probes the communicator for unmatched
         * messages (MPID_Iprobe, which progresses). The call does nothing and
         * the outer progress goes on, so it is only counted. A callback that
         * waits (calls progress until something completes) would spin
         * forever: from EFARM_NESTED_SPIN_CALLS calls in a row on, the call
         * fails, and the error is logged once.
         */
        ep->cnt.progress_nested++;
        if (ep->nested_in_row < EFARM_NESTED_SPIN_CALLS &&
            ++ep->nested_in_row < EFARM_NESTED_SPIN_CALLS)
            return -EDEADLK;
        efarm_log_ratelimited(EFARM_LOG_ERROR,
                              "%s called %u times in a row from inside a request's callback "
                              "that its progress runs: those calls do nothing, so a wait "
                              "inside a completion callback cannot complete; failing them",
                              __func__, EFARM_NESTED_SPIN_CALLS);
        return EFARM_E(PROTO_NESTED_WAIT);
    }
    if (__builtin_expect(ep->nested_in_row != 0, 0))
        ep->nested_in_row = 0;
    if (efarm_dev_poll_start(dev)) {
        /* Completions are handled inside the poll session (efarm_device_inline.h). */
        do {
            n++;
            cur_completion(ep, dev);
        } while (n < EFARM_POLL_BATCH && efarm_dev_poll_next(dev));
        efarm_dev_poll_end(dev);
    }
    if (ep->pending)
        lists_progress(ep);
#ifdef EFARM_CHECK_PENDING
    /* Sanitizer builds: a list that got work without efarm_ep_pending() would stall. */
    if (!ep->pending && lists_busy(ep)) {
        efarm_log(EFARM_LOG_ERROR, "efarm_ep_progress: work on a list without efarm_ep_pending()");
        abort();
    }
#endif
    if (efarm_rx_full(ep))
        efarm_rx_full_check(ep);
    /* An operation is in use and probes are on: maybe one waits on a silent peer. */
    if (ep->nop_free < ep->probe_ops)
        efarm_probe_check(ep);
    return ep->fatal ? ep->fatal : n;
}

/* Whether a packet of ours is queued, in flight, or still to be built (sends, owed replies). */
static bool ep_sending(const struct efarm_ep *ep)
{
    return ep->ntx_free != ep->p.tx_pkts || !efarm_list_empty(&ep->work) ||
           !efarm_list_empty(&ep->hs_queue) || ep->rma_pending != NULL;
}

int efarm_ep_flush(struct efarm_ep *ep, uint64_t timeout_ms)
{
    uint64_t deadline = efarm_now_ns() + timeout_ms * 1000000ull;
    unsigned spins = 0;

    while (ep_sending(ep)) {
        int ret = efarm_ep_progress(ep);

        if (ret < 0)
            return ret;
        if (timeout_ms && ++spins % 1024 == 0 && efarm_now_ns() > deadline) {
            efarm_log(EFARM_LOG_WARN,
                      "%u packets still unacknowledged after %llu ms (flush before close)",
                      ep->p.tx_pkts - ep->ntx_free, (unsigned long long)timeout_ms);
            return -ETIMEDOUT;
        }
    }
    return ep->fatal;
}

const struct efarm_counters *efarm_ep_counters(const struct efarm_ep *ep)
{
    return &ep->cnt;
}

void efarm_counters_print(FILE *out, const struct efarm_counters *c)
{
#define EFARM_COUNTER_PRINT_(name, doc) \
    if (c->name)                        \
        fprintf(out, "%-20s %12llu  %s\n", #name, (unsigned long long)c->name, doc);
    EFARM_COUNTER_LIST(EFARM_COUNTER_PRINT_)
#undef EFARM_COUNTER_PRINT_
    for (unsigned t = 0; t < 256; t++) {
        if (c->tx_by_type[t] || c->rx_by_type[t])
            fprintf(out, "%-20s %12llu tx %12llu rx\n", efarm_pkt_type_info((uint8_t)t)->name,
                    (unsigned long long)c->tx_by_type[t], (unsigned long long)c->rx_by_type[t]);
    }
}

void efarm_ep_levels(const struct efarm_ep *ep, struct efarm_levels *out)
{
    memset(out, 0, sizeof(*out));
    out->ops = ep->p.max_ops - ep->nop_free;
    out->tx_bufs = ep->p.tx_pkts - ep->ntx_free;
    out->rx_held = ep->nheld;
    for (unsigned i = 0; i < EFARM_RX_COPY_CLASSES; i++)
        out->rx_copies += ep->copy_pool[i].in_use;
    out->stored_bytes = ep->stored_bytes;
    out->unexpected = ep->unexp_live;
    out->windows = ep->windows.in_use;
    out->peers = ep->npeers;
    out->peer_states = ep->npeer_states;
}

void efarm_counters_describe(FILE *out)
{
#define EFARM_COUNTER_DESCRIBE_(name, doc) fprintf(out, "  %-20s %s\n", #name, doc);
    EFARM_COUNTER_LIST(EFARM_COUNTER_DESCRIBE_)
#undef EFARM_COUNTER_DESCRIBE_
    fprintf(out, "  %-20s %s\n", "<packet type>", "packets posted and received, by type");
    fprintf(out, "levels, what an endpoint holds now (MPI_T efarm_level_<name>):\n");
#define EFARM_LEVEL_DESCRIBE_(name, doc) fprintf(out, "  %-20s %s\n", #name, doc);
    EFARM_LEVEL_LIST(EFARM_LEVEL_DESCRIBE_)
#undef EFARM_LEVEL_DESCRIBE_
}

void efarm_proto_sizes(const struct efarm_ep *ep, struct efarm_proto_sizes *sizes_p)
{
    uint64_t recvwin = ep ? ep->p.recvwin : efarm_config()->recvwin;

    sizes_p->peer = sizeof(struct efarm_peer);
    sizes_p->peer_state = (uint32_t)sizeof(struct efarm_peer_state);
    sizes_p->window = (uint32_t)(recvwin * sizeof(struct efarm_rxpkt *));
    sizes_p->op = sizeof(struct efarm_op);
    sizes_p->tx_pkt = sizeof(struct efarm_txpkt);
    sizes_p->rx_pkt = sizeof(struct efarm_rxpkt);
    sizes_p->unexp = (uint32_t)(sizeof(struct efarm_unexp) + efarm_tm_unexpected_entry_size());
}
