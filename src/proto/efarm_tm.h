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
 * Memory: efarm_tm_open() allocates the hash table, every posted-receive
 * entry and the first EFARM_TM_MSG_CHUNK (1024) unexpected-message entries.
 * Unexpected entries are created a chunk at a time when all are in use (with
 * the queues they may need), up to max_unexpected, and kept until close: a
 * matcher that once held many waiting messages reuses their entries, and one
 * that never does never grows. Matching, posting and queueing allocate
 * nothing otherwise. Not thread safe: one matcher per receiving context, used
 * by one thread at a time.
 *
 * Ownership: `user` pointers are the caller's and are never dereferenced; the
 * matcher hands each one back exactly once (on match, claim or cancel) or
 * forgets it at close. Handles (efarm_tm_handle_t) name one posted receive or
 * one unexpected message; once it is matched, claimed or cancelled the handle
 * goes stale and every later use of it fails with -ENOENT (it is never reused
 * for another entry for 2^32 reuses of its slot).
 *
 * Offload (RDMA hardware tag matching, as verbs models it):
 * a device may hold a bounded PREFIX of the posted receives and match arriving
 * messages against it itself. efarm_tm_offload_attach() connects one through
 * struct efarm_tm_offload_ops; without one, every receive is held in software
 * and nothing below applies. The matcher keeps three rules:
 *
 * 1. Prefix: the receives the device holds are exactly the oldest posted
 *    receives, in posting order. A receive goes to the device (ops->add) only
 *    from efarm_tm_post(), when it matched no unexpected message, no older
 *    receive waits in software, the device holds fewer than `capacity`, and
 *    the matcher believes the device is in sync (below). Otherwise it is held
 *    in software, and so is every later receive until software holds none.
 *    A device that matches in its list order therefore picks the
 *    earliest-posted matching receive overall.
 * 2. Count: every message the device did not match ("unexpected" to the
 *    device, delivered to software) must be given to efarm_tm_arrive() or
 *    efarm_tm_match_posted(), and only such messages. The matcher counts the
 *    ones it handled: queued as unexpected, or matched to a software receive
 *    (a -EAGAIN or a miss of efarm_tm_match_posted() is not handled; the same
 *    message is counted once, when it is). Every add, del and sync carries
 *    that count (mod 2^32), the RFC's unexpected_cnt.
 * 3. Sync: the device refuses an add (-EAGAIN) while its own count of the
 *    messages it passed to software differs from the count carried. After a
 *    refusal, or after efarm_tm_offload_sync_required() (a completion flagged
 *    like IBV_WC_TM_SYNC_REQ), the matcher adds nothing until an ops->sync
 *    with its current count has returned 0; it tries that sync at the next
 *    post that could go to the device. Order rests on the device's check;
 *    the pause spares adds it would refuse and sends the sync it waits for.
 *
 * Why messages the device passed up need only the software receives: an add
 * succeeds only when software has handled every message the device passed
 * up, so between the moment the device passes message m up and the moment
 * software handles it no receive is added: the device then holds a subset of
 * the receives it held when m arrived, none of which matched m. The
 * earliest-posted receive matching m, if any, is in software. This is the
 * RFC's m1/m2 race: if b1 is posted after m1 reached the device but before
 * software handled m1, b1's add is refused and b1 stays in software, so m2
 * cannot take b1 in the device; software handles m1 first and gives it b1.
 * A message the device matches may be taken before earlier messages still on
 * their way to software, but never ahead of one that its receive also
 * matches: that receive was in the device when they arrived and did not
 * match them. The result is MPI's matching, each message taken when the
 * device matched it or when software handled it.
 *
 * Completions: a device match is reported with efarm_tm_offload_matched(),
 * which returns the receive's user pointer. A cancel of a device-held receive
 * goes through ops->del; when the device has already consumed the receive,
 * the cancel fails with -ENOENT and the match completion follows. Probes and
 * claims look only at unexpected messages, which are all in software.
 */
#ifndef EFARM_TM_H
#define EFARM_TM_H

#include <stddef.h>
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
 * messages (both 1 .. 2^24). The hash table is sized for max_posted receives
 * and up to 8192 waiting messages; more only make its chains longer. Returns
 * 0, -EINVAL or -ENOMEM.
 */
int efarm_tm_open(unsigned max_posted, unsigned max_unexpected, struct efarm_tm **tm_p);

/* Bytes one unexpected-message entry costs, with its share of the queues (for budgets). */
size_t efarm_tm_unexpected_entry_size(void);

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
 * receive is posted or a message claimed), -ENOMEM when a new chunk of
 * entries could not be allocated (nothing changes either), -EINVAL for a
 * negative source or tag.
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
 * Whether efarm_tm_match_posted() would match a posted receive now: 1 or 0,
 * changing nothing (-EINVAL for a negative source or tag). For a caller that
 * must know before matching whether it can take the message.
 */
int efarm_tm_would_match(const struct efarm_tm *tm, uint32_t context, int32_t source, int32_t tag);

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
 * -ENOENT if it was already matched or cancelled. A receive held by a device
 * is cancelled through ops->del: -ENOENT when the device has matched it (the
 * match completion follows), or del's other error.
 */
int efarm_tm_cancel(struct efarm_tm *tm, efarm_tm_handle_t recv, void **recv_user_p);

/*
 * Number of posted receives (in software or held by the device, including
 * device matches not yet reported) and of queued unexpected messages.
 */
unsigned efarm_tm_posted_count(const struct efarm_tm *tm);
unsigned efarm_tm_unexpected_count(const struct efarm_tm *tm);

/*
 * A tag-matching device (see "Offload" above). Every function gets the ctx
 * given to efarm_tm_offload_attach() and the matcher's count of handled
 * unexpected messages; each is called from inside a matcher call, on its
 * thread. No slot may be NULL: a device without an operation points it at a
 * function that fails.
 */
struct efarm_tm_offload_ops {
    /*
     * Append a receive for key (context, source, tag), wildcards -1, to the
     * end of the device's list. When the device matches it, it reports `recv`
     * (the verbs recv_wr_id) to efarm_tm_offload_matched(). Returns 0 and the
     * device's own handle in *hw_handle_p, or a negative errno and the list is
     * unchanged: -EAGAIN when the device is not in sync (its count of messages
     * passed to software differs from unexpected_count, or it waits for a
     * sync); any other error leaves the receive in software as well.
     */
    int (*add)(void *ctx, uint32_t context, int32_t source, int32_t tag, efarm_tm_handle_t recv,
               uint32_t unexpected_count, uint32_t *hw_handle_p);
    /*
     * Remove the receive added with hw_handle. Returns 0, -ENOENT when the
     * device has already matched it (its match completion is on its way), or
     * another negative errno (the receive stays in the device).
     */
    int (*del)(void *ctx, uint32_t hw_handle, uint32_t unexpected_count);
    /*
     * Report the count. Returns 0 when the device is in sync afterwards (its
     * count equals unexpected_count), -EAGAIN when not yet.
     */
    int (*sync)(void *ctx, uint32_t unexpected_count);
};

/*
 * Attach a device that holds at most `capacity` receives (0 is allowed: it
 * then holds none), starting with an empty list and a count of 0. ops and ctx
 * stay the caller's and must outlive the matcher; efarm_tm_close() does not
 * call them (the caller tears the device down). Returns 0, -EINVAL for a NULL
 * slot, -EBUSY when a device is attached already or receives are posted.
 */
int efarm_tm_offload_attach(struct efarm_tm *tm, const struct efarm_tm_offload_ops *ops, void *ctx,
                            unsigned capacity);

/*
 * The device matched the receive it was given as `recv` and delivered the
 * message: the receive is removed. Returns 0 and its user pointer in
 * *recv_user_p, or -ENOENT when recv names no receive held by the device.
 */
int efarm_tm_offload_matched(struct efarm_tm *tm, efarm_tm_handle_t recv, void **recv_user_p);

/*
 * A device completion asked for a sync (IBV_WC_TM_SYNC_REQ): add nothing more
 * until a sync has succeeded. A no-op without a device.
 */
void efarm_tm_offload_sync_required(struct efarm_tm *tm);

/* Receives held by the device, including matches not yet reported; 0 without a device. */
unsigned efarm_tm_offload_count(const struct efarm_tm *tm);

#endif /* EFARM_TM_H */
