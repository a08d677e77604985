/*
 * Selection of the two-sided subprotocol (proto_select.c) and the
 * selection profiles its thresholds come from (proto_profile.c).
 */
#ifndef EFARM_PROTO_SELECT_H
#define EFARM_PROTO_SELECT_H

#include <stddef.h>

#include "proto_internal.h"

/* ---- Selection profiles (proto_profile.c) ------------------------------------------------ */

#define EFARM_PROFILE_MAX_POINTS 128

/* A point's curve: enum efarm_proto_kind, with this bit for its stream curve. */
#define EFARM_PROFILE_STREAM 0x80u

struct efarm_profile_point {
    uint8_t proto; /* enum efarm_proto_kind, | EFARM_PROFILE_STREAM */
    uint64_t size;
    double us; /* one-way latency; stream: us per message with 16 in flight */
};

struct efarm_profile {
    char name[64];
    unsigned npoints;
    struct efarm_profile_point pts[EFARM_PROFILE_MAX_POINTS];
    double reg_base_us, reg_us_per_mib; /* registering a buffer the cache does not hold */
    /* Without curves for them: fixed thresholds (the reference's). */
    uint64_t fixed_medium_max, fixed_read_min, fixed_runt_min;
};

/* The selection thresholds a profile gives (proto_select.c applies them). */
struct efarm_thresholds {
    uint64_t medium_max;    /* largest medium message */
    uint64_t read_min;      /* smallest read-protocol message, registered buffer */
    uint64_t read_min_cold; /* the same, buffer to be registered */
    uint64_t runt_min;      /* smallest runting read (UINT64_MAX: never) */
    /* While other sends to the peer are in flight (from the stream curves, else as above). */
    uint64_t medium_max_stream; /* UINT64_MAX: no bound of its own */
    uint64_t read_min_stream, read_min_stream_cold;
};
/* A threshold of struct efarm_thresholds as a subprotocol's profile rule names it: offset + 1. */
#define EFARM_THR(field) ((uint16_t)(offsetof(struct efarm_thresholds, field) + 1))

/* spec: auto, reference, efasim or a file; device_name picks auto's. 0 or -EINVAL (logged). */
int efarm_profile_load(const char *spec, const char *device_name, struct efarm_profile *pr);
struct efarm_ep_params;
/* Fill p's thresholds that are still 0 from the profile spec names (proto_ep.c). */
int efarm_thresholds_resolve(const char *profile, const char *device_name, uint32_t mtu,
                             struct efarm_ep_params *p);
/* The thresholds of a profile, for messages larger than one_packet bytes. */
void efarm_profile_derive(const struct efarm_profile *pr, uint64_t one_packet,
                          struct efarm_thresholds *t);
/* proto's interpolated one-way cost at size, us (INFINITY without its curve). */
double efarm_profile_cost(const struct efarm_profile *pr, int proto, double size);

/* proto_select.c */
struct efarm_select_in {
    uint64_t len;
    uint64_t eager_fit; /* application bytes one REQ packet carries for this peer */
    uint32_t flags;     /* EFARM_SEND_* */
    bool peer_rdma_read, peer_runt_read; /* negotiated (both sides) */
    bool buf_cold;       /* a read protocol would have to register the buffer first */
    uint32_t npeers;     /* senders the receiver may have at once (medium's fan-in) */
    uint8_t force_proto; /* a hint forces enum efarm_proto_kind force_proto - 1 (0: none) */
    uint32_t peer_sends; /* other sends to this peer in flight (a stream) */
    uint32_t reads_inflight;
    uint64_t runt_bytes_in_flight;
};
enum efarm_proto_kind efarm_proto_select(const struct efarm_ep_params *p,
                                         const struct efarm_select_in *in);
/* The same choice, with why in words (efarm-info; not for the hot path). */
enum efarm_proto_kind efarm_proto_select_why(const struct efarm_ep_params *p,
                                             const struct efarm_select_in *in, char *why,
                                             size_t size);
/* The read-protocol threshold that applies to in (its buffer registered or not). */
uint64_t efarm_select_read_min(const struct efarm_ep_params *p, const struct efarm_select_in *in);
/* The largest eager message: what fits one packet (eager_fit), or EFARM_EAGER_MAX below it. */
static inline uint64_t efarm_select_eager_max(const struct efarm_ep_params *p, uint64_t eager_fit)
{
    return p->eager_max && p->eager_max < eager_fit ? p->eager_max : eager_fit;
}
/* Whether proto may carry the message at all (EFARM_PROTO forces it only then). */
bool efarm_proto_legal(const struct efarm_ep_params *p, const struct efarm_select_in *in,
                       enum efarm_proto_kind proto);

#endif /* EFARM_PROTO_SELECT_H */
