/*
 * efarm's one-sided interface, target side: memory an endpoint exposes to its
 * peers' RMA and atomic operations (issue 12; the operations themselves are
 * not written yet).
 *
 * A peer may read or write only memory exposed here. Each region is
 * registered with the device (so RDMA by the NIC checks the same key and
 * bounds) and entered in the endpoint's region table, which the engine
 * consults before it reads or writes a byte for an emulated operation
 * (RTW/RTR/RTA packets): the key must name a live region, the range
 * [addr, addr + len) must lie inside it without overflow, and the region must
 * grant the access. Addresses are the target's virtual addresses, as EFA's
 * RMA uses them.
 *
 * Keys. A region's key is its device registration's rkey (below 2^32); a
 * region of zero bytes has no registration and gets a key from 2^32 up, which
 * no rkey can be. Keys are not reused while the endpoint lives, except where
 * the device reuses an rkey of a region already unexposed.
 */
#ifndef EFARM_RMA_H
#define EFARM_RMA_H

#include <stdbool.h>
#include <stdint.h>

struct efarm_ep;
struct efarm_region;

/* Access a region grants to peers. Atomics need both (they read and write). */
#define EFARM_EXPOSE_READ  (1u << 0)
#define EFARM_EXPOSE_WRITE (1u << 1)

/*
 * Expose [addr, addr + len) with `access` (a nonzero mask of EFARM_EXPOSE_*).
 * The memory must stay valid until efarm_unexpose. Returns 0 and *region_p,
 * -EINVAL (no access, unknown bits, addr NULL with len > 0, or a range that
 * wraps), -ENOMEM, or the device's registration error (for example the
 * device's registration limit).
 */
int efarm_expose(struct efarm_ep *ep, void *addr, uint64_t len, unsigned access,
                 struct efarm_region **region_p);

/* The key peers name the region by (in rma_iov entries and RDMA). */
uint64_t efarm_region_key(const struct efarm_region *region);

/*
 * Withdraw a region: from the return on, peers' operations that name its key
 * are refused. The caller ensures none is in progress (MPI: the window's
 * synchronisation). NULL is ignored.
 */
void efarm_unexpose(struct efarm_ep *ep, struct efarm_region *region);

/*
 * Check one remote access as the engine does before touching memory for a
 * peer: returns 0 and *ptr_p (the first byte), or EFARM_E(PROTO_RMA_KEY) (no
 * live region has the key), EFARM_E(PROTO_RMA_BOUNDS) (the range leaves the
 * region or wraps), EFARM_E(PROTO_RMA_ACCESS) (the region does not grant
 * `access`). A zero-length access must still name a live region and lie
 * within [base, base + len]. Each refusal is counted (rma_refused).
 */
int efarm_region_check(struct efarm_ep *ep, uint64_t addr, uint64_t len, uint64_t key,
                       unsigned access, uint8_t **ptr_p);

/* Regions exposed now (for tests and efarm-info). */
uint32_t efarm_region_count(const struct efarm_ep *ep);

#endif /* EFARM_RMA_H */
