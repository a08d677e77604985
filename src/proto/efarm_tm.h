/*
 * Software MPI tag matcher (issue 5).
 *
 * A matcher holds two queues: posted receives, waiting for a message, and
 * unexpected messages, waiting for a receive. Keys are (context, source, tag);
 * receives and probes may use EFARM_TM_ANY_SOURCE and EFARM_TM_ANY_TAG,
 * messages may not. The rules are MPI's:
 *
 * - a posted receive takes the EARLIEST-ARRIVED matching unexpected message;
 * - an arriving message takes the EARLIEST-POSTED matching receive, wildcard
 *   receives included;
 * - messages from one sender match in arrival order, so the caller must hand
 *   them to efarm_tm_arrive() in per-sender order (after reordering).
 *
 * Cost: average O(1) per call whatever the queue depths. Every queue with a
 * given key lives in a hash table sized at open: exact receives by
 * (context, source, tag), ANY_SOURCE receives by (context, tag), ANY_TAG
 * receives by (context, source), and receives with both wildcards by
 * (context). Receives carry a global posting sequence number, so an arrival
 * compares the heads of at most four queues. Each unexpected message is
 * linked, in arrival order, into four lists (exact, by (context, tag), by
 * (context, source), by (context)), so a receive or probe of any shape reads
 * the head of exactly one list.
 *
 * Memory: everything is allocated by efarm_tm_open(); entries come from two
 * bounded pools and nothing is allocated, freed or grown afterwards. Not
 * thread safe: one matcher per receiving context, used by one thread at a time.
 *
 * Ownership: `user` pointers are the caller's and are never dereferenced; the
 * matcher hands each one back exactly once (on match, claim or cancel) or
 * forgets it at close. Handles (efarm_tm_handle_t) name one posted receive or
 * one unexpected message; once it is matched, claimed or cancelled the handle
 * goes stale and every later use of it fails with -ENOENT (it is never reused
 * for another entry for 2^32 reuses of its slot).
 *
 * Offload hook (RDMA hardware tag matching, RFC "Hardware tag matching"): a
 * device may hold a bounded PREFIX, in posting order, of the posted receives.
 * The place for it is efarm_tm_post(): after the unexpected queue has been
 * searched and before the receive is queued in software, a receive may be
 * handed to the device only while no receive is held in software (otherwise
 * the device could match a message that an earlier software receive should
 * take). Device matches are then reported through a completion path that
 * removes the receive from the prefix; device "unexpected" messages go through
 * efarm_tm_arrive() as now, and the software sequence numbers keep the order
 * across both. Not implemented: every receive is held in software here.
 */
#ifndef EFARM_TM_H
#define EFARM_TM_H

#include <stdint.h>

#define EFARM_TM_ANY_SOURCE (-1)
#define EFARM_TM_ANY_TAG    (-1)

/* Positive results of efarm_tm_post() and efarm_tm_arrive(). */
#define EFARM_TM_QUEUED  0
#define EFARM_TM_MATCHED 1

/* Names one posted receive or one unexpected message; 0 is never a handle. */
typedef uint64_t efarm_tm_handle_t;

struct efarm_tm;

/*
 * Create a matcher holding at most max_posted receives and max_unexpected
 * messages (both 1 .. 2^24). Returns 0, -EINVAL or -ENOMEM.
 */
int efarm_tm_open(unsigned max_posted, unsigned max_unexpected, struct efarm_tm **tm_p);

/* Free the matcher; entries still queued are dropped (their user pointers are not touched). */
void efarm_tm_close(struct efarm_tm *tm);

/*
 * Post a receive. If an unexpected message matches, it is removed and its
 * user pointer stored in *msg_user_p: returns EFARM_TM_MATCHED. Otherwise
 * the receive is queued, its handle stored in *recv_p: returns
 * EFARM_TM_QUEUED. Returns -ENOMEM when it would have to be queued and
 * max_posted receives are already queued (nothing changes), -EINVAL for a
 * negative source or tag other than the wildcards.
 */
int efarm_tm_post(struct efarm_tm *tm, uint32_t context, int32_t source, int32_t tag, void *user,
                  efarm_tm_handle_t *recv_p, void **msg_user_p);

/*
 * A message arrived (in per-sender order). If a posted receive matches, it is
 * removed and its user pointer stored in *recv_user_p: returns
 * EFARM_TM_MATCHED. Otherwise the message is queued as unexpected: returns
 * EFARM_TM_QUEUED. Returns -EAGAIN when it would have to be queued and
 * max_unexpected messages are already queued (nothing changes; retry after a
 * receive is posted or a message claimed), -EINVAL for a negative source or tag.
 */
int efarm_tm_arrive(struct efarm_tm *tm, uint32_t context, int32_t source, int32_t tag, void *user,
                    void **recv_user_p);

/*
 * The matching half of efarm_tm_arrive(): if a posted receive matches, remove
 * it, store its user pointer in *recv_user_p and return EFARM_TM_MATCHED;
 * otherwise return 0 and change nothing (the caller may then queue the
 * message with efarm_tm_arrive(), once it knows it can keep it). -EINVAL for
 * a negative source or tag.
 */
int efarm_tm_match_posted(struct efarm_tm *tm, uint32_t context, int32_t source, int32_t tag,
                          void **recv_user_p);

/*
 * Look at the earliest-arrived unexpected message matching the key (wildcards
 * allowed) without removing it. Returns 1 and sets *msg_p and *msg_user_p, 0
 * when none matches, -EINVAL for a bad key.
 */
int efarm_tm_probe(const struct efarm_tm *tm, uint32_t context, int32_t source, int32_t tag,
                   efarm_tm_handle_t *msg_p, void **msg_user_p);

/*
 * Remove the unexpected message named by a handle from efarm_tm_probe() (a
 * matched probe). Returns 0 and its user pointer in *msg_user_p, or -ENOENT
 * if the handle is stale.
 */
int efarm_tm_claim(struct efarm_tm *tm, efarm_tm_handle_t msg, void **msg_user_p);

/*
 * Cancel a posted receive. Returns 0 and its user pointer in *recv_user_p, or
 * -ENOENT if it was already matched or cancelled.
 */
int efarm_tm_cancel(struct efarm_tm *tm, efarm_tm_handle_t recv, void **recv_user_p);

/* Number of queued posted receives and unexpected messages. */
unsigned efarm_tm_posted_count(const struct efarm_tm *tm);
unsigned efarm_tm_unexpected_count(const struct efarm_tm *tm);

#endif /* EFARM_TM_H */
