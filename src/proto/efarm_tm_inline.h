/*
 * The tag matcher's state and the common cases of posting a receive and of
 * matching an arrival against the posted receives, as inline functions for
 * the protocol engine (efarm_tm_post_inl, efarm_tm_match_posted_inl). The
 * exported efarm_tm_post and efarm_tm_match_posted (efarm_tm.h) are these
 * same bodies; everything else, and the layout rules these structures follow,
 * is in tm.c.
 */
#ifndef EFARM_TM_INLINE_H
#define EFARM_TM_INLINE_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "efarm_list.h"
#include "efarm_tm.h"

#define EFARM_TM_MAX_ENTRIES (1u << 24)
#define EFARM_TM_MSG_CHUNK   1024u /* unexpected entries created at a time */
/* Unexpected entries the hash table is sized for (beyond them chains grow longer). */
#define EFARM_TM_BUCKET_UNEXPECTED 8192u
#define EFARM_TM_WILD_SOURCE       1u
#define EFARM_TM_WILD_TAG          2u
#define EFARM_TM_SHAPES            4u
#define EFARM_TM_KIND_MSG          4u
#define EFARM_TM_NO_FREE           UINT32_MAX
/* key_sk of an inline queue that never had a key: no (source, kind) gives it. */
#define EFARM_TM_NO_KEY UINT64_MAX

/*
 * A key is two words: key_ct = context << 32 | tag and key_sk = source << 3 |
 * kind (source and tag as uint32_t, so wildcards are 0xffffffff); a lookup
 * compares both.
 */
struct efarm_tm_queue {
    uint64_t key_ct;
    uint64_t key_sk;                /* EFARM_TM_NO_KEY: never used. */
    struct efarm_link entries;      /* Oldest first; empty in a free queue. */
    struct efarm_tm_queue *hnext;   /* Bucket chain, or free list. */
    struct efarm_tm_queue **hpprev; /* Where this queue is linked from; NULL when inline. */
};

/*
 * A hash bucket holds its first queue inline (one cache line: lookup of a
 * key that owns the line costs one miss) and chains further queues from the
 * pool through queue.hnext. Queues never move, because entries point at their
 * sentinel; an inline queue that empties keeps its key until the next other
 * key hashed to this bucket takes it over, while chained queues stay where
 * they are until they empty and go back to the pool.
 */
struct efarm_tm_bucket {
    _Alignas(64) struct efarm_tm_queue queue;
};
_Static_assert(sizeof(struct efarm_tm_bucket) == 64, "a bucket is one cache line");

struct efarm_tm_recv {
    struct efarm_link link;
    struct efarm_tm_queue *queue; /* NULL while free; &tm->offload.held: in the device. */
    uint64_t seq;                 /* Global posting order. */
    void *user;
    uint32_t gen;
    union {
        uint32_t next_free; /* While the slot is free. */
        uint32_t index;     /* While held in software: its own number (no division to free it). */
        uint32_t hw_handle; /* While the device holds the receive. */
    };
};

struct efarm_tm_msg {
    struct efarm_link link[EFARM_TM_SHAPES];
    struct efarm_tm_queue *queue[EFARM_TM_SHAPES]; /* queue[0] NULL while free. */
    void *user;
    uint32_t gen;
    uint32_t next_free;
    uint32_t index; /* Its number: chunk index / EFARM_TM_MSG_CHUNK, slot index % CHUNK. */
};

/* The attached device (efarm_tm_offload_attach); only read when tm->offload_ops is set. */
struct efarm_tm_offload {
    void *ctx;
    unsigned capacity;
    unsigned n_held;            /* Receives the device holds, or matched and not yet reported. */
    bool sync_pending;          /* Add nothing until ops->sync returns 0. */
    struct efarm_tm_queue held; /* Marker only: recv->queue of a device-held receive. */
};

/*
 * The offload fields fill the hole after msg_free and follow queues, so that
 * every field the software paths use keeps its place and its cache line.
 */
struct efarm_tm {
    struct efarm_tm_bucket *buckets;
    uint64_t bucket_shift; /* 64 - log2(buckets): a hash's top bits pick the bucket. */
    uint64_t next_seq;
    unsigned n_wild_recv; /* Posted receives with a wildcard: 0 keeps arrivals to one lookup. */
    unsigned n_posted;    /* Held in software. */
    unsigned n_unexpected;
    unsigned max_posted;
    unsigned max_unexpected;
    uint32_t recv_free;
    uint32_t msg_free;
    uint32_t n_handled; /* Messages handled by arrive/match_posted: the RFC's unexpected_cnt. */
    struct efarm_tm_queue *queue_free;
    struct efarm_tm_recv *recvs;
    struct efarm_tm_msg **msg_chunks;     /* max_unexpected / EFARM_TM_MSG_CHUNK (rounded up) */
    unsigned n_msgs;                      /* unexpected entries created so far */
    struct efarm_tm_queue **queue_chunks; /* one per msg chunk, plus the first block */
    unsigned n_queue_chunks;
    const struct efarm_tm_offload_ops *offload_ops; /* NULL: no device. */
    struct efarm_tm_offload offload;
};

static inline bool efarm_tm_queue_empty(const struct efarm_tm_queue *queue)
{
    return queue->entries.next == &queue->entries;
}

static inline uint64_t efarm_tm_key_ct(uint32_t context, int32_t tag)
{
    return ((uint64_t)context << 32) | (uint32_t)tag;
}

static inline uint64_t efarm_tm_key_sk(uint32_t kind, int32_t source)
{
    return ((uint64_t)(uint32_t)source << 3) | kind;
}

/*
 * The bucket number of a key without its kind (efarm_tm_bucket adds it), so
 * one call serves every kind: the source spread over 64 bits by an odd
 * multiplier and mixed into (context, tag), then Fibonacci hashing (the top
 * bits of the product with 2^64 / golden ratio, which depend on every bit).
 */
static inline uint64_t efarm_tm_hash(const struct efarm_tm *tm, uint64_t key_ct, int32_t source)
{
    uint64_t x = key_ct ^ ((uint32_t)source * 0xc2b2ae3d27d4eb4full);

    return (x * 0x9e3779b97f4a7c15ull) >> tm->bucket_shift;
}

/*
 * The inline queue of the bucket of a key of the given kind, from its
 * efarm_tm_hash(): the kinds 0..7 of a key use 8 distinct buckets (there are
 * at least 16).
 */
static inline struct efarm_tm_queue *efarm_tm_bucket(const struct efarm_tm *tm, uint64_t hash,
                                                     uint32_t kind)
{
    return &tm->buckets[hash ^ kind].queue;
}

static inline efarm_tm_handle_t efarm_tm_handle(uint32_t gen, uint32_t index)
{
    return ((uint64_t)gen << 32) | index;
}

static inline uint32_t efarm_tm_next_gen(uint32_t gen)
{
    return gen == UINT32_MAX ? 1 : gen + 1;
}

static inline bool efarm_tm_key_valid(int32_t source, int32_t tag, bool wild_ok)
{
    int32_t lowest = wild_ok ? -1 : 0;

    return source >= lowest && tag >= lowest;
}

static inline uint32_t efarm_tm_shape(int32_t source, int32_t tag)
{
    return (source < 0 ? EFARM_TM_WILD_SOURCE : 0) | (tag < 0 ? EFARM_TM_WILD_TAG : 0);
}

/*
 * Free a receive's slot (its handle goes stale) and return its user pointer.
 * Only queue and gen say whether a slot is live, so its link and user are left
 * as they are.
 */
static inline void *efarm_tm_recv_free(struct efarm_tm *tm, struct efarm_tm_recv *recv,
                                       uint32_t index)
{
    void *user = recv->user;

    recv->queue = NULL;
    recv->gen = efarm_tm_next_gen(recv->gen);
    recv->next_free = tm->recv_free;
    tm->recv_free = index;
    return user;
}

/*
 * Queue a receive of wildcard shape `shape` at the end of `queue` (its key's)
 * in a free slot (there is one) and store its handle in *recv_p.
 */
static inline void efarm_tm_recv_queue(struct efarm_tm *tm, struct efarm_tm_queue *queue,
                                       uint32_t shape, void *user, efarm_tm_handle_t *recv_p)
{
    uint32_t index = tm->recv_free;
    struct efarm_tm_recv *recv = &tm->recvs[index];

    tm->recv_free = recv->next_free;
    recv->index = index;
    recv->queue = queue;
    recv->seq = tm->next_seq++;
    recv->user = user;
    efarm_list_append(&queue->entries, &recv->link);
    if (shape != 0)
        tm->n_wild_recv++;
    tm->n_posted++;
    *recv_p = efarm_tm_handle(recv->gen, index);
}

/* tm.c: the general cases the two inline paths hand over to. */
int efarm_tm_post_software(struct efarm_tm *tm, uint32_t context, int32_t source, int32_t tag,
                           void *user, efarm_tm_handle_t *recv_p, void **msg_user_p);
int efarm_tm_post_offload(struct efarm_tm *tm, uint32_t context, int32_t source, int32_t tag,
                          void *user, efarm_tm_handle_t *recv_p, void **msg_user_p);
int efarm_tm_post_chained(struct efarm_tm *tm, struct efarm_tm_queue *first, uint64_t key_ct,
                          uint64_t key_sk, void *user, efarm_tm_handle_t *recv_p);
int efarm_tm_match_posted_software(struct efarm_tm *tm, uint32_t context, int32_t source,
                                   int32_t tag, void **recv_user_p);

/*
 * The common case is served here without a call: no device, no unexpected
 * message, a free slot, a valid key, and the key's bucket either holds the
 * key's queue inline or holds nothing at all (its inline queue empty, no
 * chain), so that the inline queue is the key's. Everything else takes the
 * general path, which gives the same result in these cases too.
 */
static inline __attribute__((always_inline)) int
efarm_tm_post_inl(struct efarm_tm *tm, uint32_t context, int32_t source, int32_t tag, void *user,
                  efarm_tm_handle_t *recv_p, void **msg_user_p)
{
    struct efarm_tm_queue *queue;
    uint64_t key_ct, key_sk;
    uint32_t shape;

    if (tm->offload_ops != NULL)
        return efarm_tm_post_offload(tm, context, source, tag, user, recv_p, msg_user_p);
    if (tm->n_unexpected != 0 || tm->recv_free == EFARM_TM_NO_FREE ||
        !efarm_tm_key_valid(source, tag, true))
        return efarm_tm_post_software(tm, context, source, tag, user, recv_p, msg_user_p);
    shape = efarm_tm_shape(source, tag);
    key_ct = efarm_tm_key_ct(context, tag);
    key_sk = efarm_tm_key_sk(shape, source);
    queue = efarm_tm_bucket(tm, efarm_tm_hash(tm, key_ct, source), shape);
    if (queue->key_ct != key_ct || queue->key_sk != key_sk) {
        if (!efarm_tm_queue_empty(queue) || queue->hnext != NULL)
            return efarm_tm_post_chained(tm, queue, key_ct, key_sk, user, recv_p);
        queue->key_ct = key_ct; /* Take over the empty inline queue, as efarm_tm_queue_get would. */
        queue->key_sk = key_sk;
    }
    efarm_tm_recv_queue(tm, queue, shape, user, recv_p);
    return EFARM_TM_QUEUED;
}

/*
 * The common case is served here without a call: no wildcard receive, a valid
 * key, and the key's bucket holds the key's queue inline or no chain (then no
 * queue of the key exists). An inline queue stays in place when it empties and
 * holds only exact receives, so taking its head needs no more bookkeeping.
 */
static inline __attribute__((always_inline)) int
efarm_tm_match_posted_inl(struct efarm_tm *tm, uint32_t context, int32_t source, int32_t tag,
                          void **recv_user_p)
{
    struct efarm_tm_queue *queue;
    struct efarm_link *link, *next;
    struct efarm_tm_recv *recv;
    uint64_t key_ct;

    if (tm->n_wild_recv != 0 || !efarm_tm_key_valid(source, tag, false))
        return efarm_tm_match_posted_software(tm, context, source, tag, recv_user_p);
    if (tm->n_posted == 0)
        return 0;
    key_ct = efarm_tm_key_ct(context, tag);
    queue = efarm_tm_bucket(tm, efarm_tm_hash(tm, key_ct, source), 0);
    if (queue->key_ct != key_ct || queue->key_sk != efarm_tm_key_sk(0, source)) {
        if (queue->hnext == NULL)
            return 0;
        return efarm_tm_match_posted_software(tm, context, source, tag, recv_user_p);
    }
    link = queue->entries.next;
    if (link == &queue->entries)
        return 0;
    next = link->next;
    queue->entries.next = next;
    next->prev = &queue->entries;
    tm->n_posted--;
    tm->n_handled++;
    recv = efarm_container_of(link, struct efarm_tm_recv, link);
    *recv_user_p = efarm_tm_recv_free(tm, recv, recv->index);
    return EFARM_TM_MATCHED;
}

#endif /* EFARM_TM_INLINE_H */
