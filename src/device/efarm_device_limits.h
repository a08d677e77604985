/*
 * The device's limits, as the engine meets them (libefarm's own code; not
 * installed): address handles released and created again when the device
 * holds no more, registrations the device or the kernel refuses, and the
 * registration cache's trim. doc/NETMOD.md, "Limits and memory", says what
 * a user sees.
 */
#ifndef EFARM_DEVICE_LIMITS_H
#define EFARM_DEVICE_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "efarm_device_inline.h"
#include "efarm_mr_cache.h"

/* ---- Address handles ------------------------------------------------------------ */

/*
 * efarm_dev_ah_get() gives the GID's entry even when the device refuses a
 * new handle (-ENOMEM: it holds max_ah): the entry then has none until
 * efarm_dev_ah_revive() gets one. Other errors give no entry.
 */
static inline bool efarm_dev_ah_live(const struct efarm_dev_ah *ah)
{
    return ah->ibv != NULL;
}

/* Create the device's handle for an entry without one: 0, -ENOMEM (the device is full) or
 * the device's error. */
int efarm_dev_ah_revive(struct efarm_dev_ep *ep, struct efarm_dev_ah *ah);

/* Destroy the entry's device handle (nothing may be posted with it); the entry stays. */
void efarm_dev_ah_release(struct efarm_dev_ep *ep, struct efarm_dev_ah *ah);

/* The endpoint's entries in turn: NULL starts, NULL ends. */
struct efarm_dev_ah *efarm_dev_ah_next(const struct efarm_dev_ep *ep,
                                       const struct efarm_dev_ah *prev);

/*
 * The node's ranks whose endpoints share one NIC, as the NIC choice found them
 * (efarm_dev_choose_nic; 1 until it ran): the device's handles are divided
 * among them and the process's endpoints on it (efarm_dev_ah_stats' share).
 */
void efarm_dev_note_nic_sharers(unsigned n);

struct efarm_dev_ah_stats {
    uint32_t max;      /* the device's max_ah (0: not reported) */
    uint32_t share;    /* this endpoint's part of it: max / (ranks on the NIC x its endpoints) */
    uint32_t sharers;  /* the ranks of the node that share the NIC */
    uint64_t capped;   /* creations held back at the share (as if the device had refused) */
    uint32_t entries;  /* GIDs known */
    uint32_t live;     /* of them with a device handle now */
    uint64_t created;  /* device handles created */
    uint64_t released; /* released to make room */
    uint64_t refused;  /* creations the device refused (ENOMEM) */
};

void efarm_dev_ah_stats(const struct efarm_dev_ep *ep, struct efarm_dev_ah_stats *stats_p);

/* Whether any handle was ever released (the engine's stale-AH-number check). */
static inline bool efarm_dev_ah_released(const struct efarm_dev_ep *ep)
{
    return ep->ah_released != 0;
}

/* ---- Registration --------------------------------------------------------------- */

/*
 * A registration of len bytes for `what` was refused with err (negative
 * errno). With a fallback (what efarm does instead, a sentence), one warning
 * per process and reason names the limit and its knob: `ulimit -l` and the
 * device's page budget for -ENOMEM/-EPERM, efarm's cache bounds for
 * -ENOSPC/-E2BIG; other errors are logged at debug level. Without one (NULL:
 * the endpoint cannot start), an error that also says how much efarm needs.
 */
void efarm_dev_reg_refused(const struct efarm_dev_ep *ep, uint64_t len, int err, const char *what,
                           const char *fallback);

/*
 * A registration open to remote write was refused with -ENOMEM: whether the
 * device takes the same memory without remote write, which means EFA's bound
 * on such regions (2^20 device pages, 4 GiB of 4 KiB pages) refused it. If
 * so, one warning per process names that bound and the fallback, and true.
 */
bool efarm_dev_reg_write_refused(struct efarm_dev_ep *ep, void *addr, size_t len, bool remote_read,
                                 const char *what, const char *fallback);

/* Bytes this process holds registered through efarm, as the kernel counts pinned pages. */
uint64_t efarm_dev_pinned_bytes(void);

/*
 * Deregister every cached registration no one references, as a miss does
 * when the device refuses one: for a caller about to register outside the
 * cache after a refusal. Returns how many were released (0 for NULL).
 */
size_t efarm_mr_cache_trim(struct efarm_mr_cache *cache);

#endif /* EFARM_DEVICE_LIMITS_H */
