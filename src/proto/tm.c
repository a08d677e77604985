/*
 * Software MPI tag matcher (see efarm_tm.h).
 *
 * Every list of entries sharing a key is a "queue" object found through one
 * chained hash table keyed by (kind, context, source, tag); wildcard fields of
 * the key are stored as -1. Each bucket holds one queue inline; a queue from
 * the pool is chained to a bucket only while it is non-empty, so the queue
 * pool never needs more than max_posted + 4 * (unexpected entries created)
 * objects: it grows by four queues with every unexpected entry and can never
 * run out. A bucket's inline queue costs the pool nothing, so when it empties
 * it keeps its key (a receive posted again for that key finds its queue ready)
 * until another key hashed to the bucket finds it empty and takes it over;
 * lookups therefore treat an empty queue as no queue. Unexpected entries are created in chunks as
 * messages wait (up to max_unexpected); receives are all created at open. Receive kinds 0..3 and
 * message kinds 4..7 share one numbering of wildcards: bit 0 means "any source", bit 1 "any tag". A
 * receive of wildcard shape w therefore reads message list w, and a message
 * is linked into message lists 0..3.
 *
 * Receives held by an offload device are in no queue: their `queue` points at
 * the marker tm->offload.held, they do not count in n_posted (which counts
 * software receives only, so arrivals never look for them), and their slot
 * keeps the device's handle where a free slot keeps its free-list link.
 */
#include "efarm_tm_inline.h"

#include "efarm_pool.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Apply a wildcard shape to a key: wildcard fields become -1. */
static inline void efarm_tm_key_shape(uint32_t shape, int32_t *source, int32_t *tag)
{
    if (shape & EFARM_TM_WILD_SOURCE)
        *source = -1;
    if (shape & EFARM_TM_WILD_TAG)
        *tag = -1;
}

/* The queue with a key in the chain starting at `first` (its bucket), or NULL; it may be empty. */
static inline struct efarm_tm_queue *efarm_tm_queue_find(struct efarm_tm_queue *first,
                                                         uint64_t key_ct, uint64_t key_sk)
{
    struct efarm_tm_queue *queue;

    for (queue = first; queue != NULL; queue = queue->hnext) {
        if (queue->key_ct == key_ct && queue->key_sk == key_sk)
            return queue;
    }
    return NULL;
}

/*
 * The oldest link of the non-empty queue with a key in the chain starting at
 * `first`, or NULL when there is none or it is empty.
 */
static inline struct efarm_link *efarm_tm_queue_head(struct efarm_tm_queue *first, uint64_t key_ct,
                                                     uint64_t key_sk)
{
    struct efarm_tm_queue *queue = efarm_tm_queue_find(first, key_ct, key_sk);

    if (queue == NULL || efarm_tm_queue_empty(queue))
        return NULL;
    return queue->entries.next;
}

/*
 * Find the queue for a key in the chain starting at `first` (its bucket),
 * taking over the inline queue when it is empty or chaining one from the pool
 * otherwise; the pool is sized so this cannot fail.
 */
static inline struct efarm_tm_queue *efarm_tm_queue_get(struct efarm_tm *tm,
                                                        struct efarm_tm_queue *first,
                                                        uint64_t key_ct, uint64_t key_sk)
{
    struct efarm_tm_queue *queue = efarm_tm_queue_find(first, key_ct, key_sk);

    if (queue != NULL)
        return queue;
    if (efarm_tm_queue_empty(first)) {
        queue = first;
    } else {
        queue = tm->queue_free;
        tm->queue_free = queue->hnext;
        queue->hnext = first->hnext;
        queue->hpprev = &first->hnext;
        if (first->hnext != NULL)
            first->hnext->hpprev = &queue->hnext;
        first->hnext = queue;
    }
    queue->key_ct = key_ct;
    queue->key_sk = key_sk;
    return queue;
}

/* A queue just emptied: a chained one goes back to the pool, an inline one keeps its key. */
static inline void efarm_tm_queue_put(struct efarm_tm *tm, struct efarm_tm_queue *queue)
{
    if (queue->hpprev == NULL)
        return;
    *queue->hpprev = queue->hnext;
    if (queue->hnext != NULL)
        queue->hnext->hpprev = queue->hpprev;
    queue->hnext = tm->queue_free;
    tm->queue_free = queue;
}

/* Unlink a receive held in software, free its slot and return its user pointer. */
static inline void *efarm_tm_recv_remove(struct efarm_tm *tm, struct efarm_tm_recv *recv)
{
    struct efarm_tm_queue *queue = recv->queue;
    struct efarm_link *prev = recv->link.prev, *next = recv->link.next;

    if ((queue->key_sk & (EFARM_TM_SHAPES - 1)) != 0)
        tm->n_wild_recv--;
    prev->next = next;
    next->prev = prev;
    if (prev == next) /* Both are the sentinel: the queue is empty now. */
        efarm_tm_queue_put(tm, queue);
    tm->n_posted--;
    return efarm_tm_recv_free(tm, recv, recv->index);
}

/* The live receive named by a handle, or NULL when the handle is stale. */
static inline struct efarm_tm_recv *efarm_tm_recv_lookup(struct efarm_tm *tm,
                                                         efarm_tm_handle_t recv)
{
    uint32_t index = (uint32_t)recv;
    struct efarm_tm_recv *entry;

    if (index >= tm->max_posted)
        return NULL;
    entry = &tm->recvs[index];
    if (entry->queue == NULL || entry->gen != (uint32_t)(recv >> 32))
        return NULL;
    return entry;
}

/* Unlink an unexpected message from its four lists, free its slot and return its user pointer. */
static void *efarm_tm_msg_remove(struct efarm_tm *tm, struct efarm_tm_msg *msg)
{
    void *user = msg->user;

    for (uint32_t shape = 0; shape < EFARM_TM_SHAPES; shape++) {
        efarm_list_remove(&msg->link[shape]);
        if (efarm_tm_queue_empty(msg->queue[shape]))
            efarm_tm_queue_put(tm, msg->queue[shape]);
        msg->queue[shape] = NULL;
    }
    msg->user = NULL;
    msg->gen = efarm_tm_next_gen(msg->gen);
    msg->next_free = tm->msg_free;
    tm->msg_free = msg->index;
    tm->n_unexpected--;
    return user;
}

/* The earliest-arrived unexpected message matching a (possibly wildcard) key, or NULL. */
static inline struct efarm_tm_msg *efarm_tm_msg_find(const struct efarm_tm *tm, uint32_t context,
                                                     int32_t source, int32_t tag)
{
    uint32_t shape = efarm_tm_shape(source, tag), kind = EFARM_TM_KIND_MSG + shape;
    uint64_t key_ct = efarm_tm_key_ct(context, tag);
    struct efarm_link *head;

    if (tm->n_unexpected == 0)
        return NULL;
    head = efarm_tm_queue_head(efarm_tm_bucket(tm, efarm_tm_hash(tm, key_ct, source), kind), key_ct,
                               efarm_tm_key_sk(kind, source));
    if (head == NULL)
        return NULL;
    return efarm_container_of(head, struct efarm_tm_msg, link[shape]);
}

static inline struct efarm_tm_msg *efarm_tm_msg_at(const struct efarm_tm *tm, uint32_t index)
{
    return &tm->msg_chunks[index / EFARM_TM_MSG_CHUNK][index % EFARM_TM_MSG_CHUNK];
}

/* Put n fresh queues on the free list. */
static void efarm_tm_queues_add(struct efarm_tm *tm, struct efarm_tm_queue *queues, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        efarm_list_init(&queues[i].entries);
        queues[i].hnext = i + 1 < n ? &queues[i + 1] : tm->queue_free;
    }
    if (n)
        tm->queue_free = &queues[0];
}

/*
 * Create the next chunk of unexpected entries and the four queues each may
 * need (cold path: a chunk is created only when every entry is in use).
 * Returns 0, -EAGAIN when max_unexpected entries exist, or -ENOMEM.
 */
static int efarm_tm_msgs_grow(struct efarm_tm *tm)
{
    unsigned n = tm->max_unexpected - tm->n_msgs;
    struct efarm_tm_queue *queues;
    struct efarm_tm_msg *msgs;

    if (n == 0)
        return -EAGAIN;
    if (n > EFARM_TM_MSG_CHUNK)
        n = EFARM_TM_MSG_CHUNK;
    msgs = efarm_calloc(n, sizeof(*msgs));
    if (msgs == NULL)
        return -ENOMEM;
    queues = efarm_calloc((size_t)EFARM_TM_SHAPES * n, sizeof(*queues));
    if (queues == NULL) {
        free(msgs);
        return -ENOMEM;
    }
    tm->msg_chunks[tm->n_msgs / EFARM_TM_MSG_CHUNK] = msgs;
    tm->queue_chunks[tm->n_queue_chunks++] = queues;
    efarm_tm_queues_add(tm, queues, (uint64_t)EFARM_TM_SHAPES * n);
    /* The free list runs in index order, so the lowest new entry is taken first. */
    for (unsigned i = n; i-- > 0;) {
        msgs[i].gen = 1;
        msgs[i].index = tm->n_msgs + i;
        msgs[i].next_free = tm->msg_free;
        tm->msg_free = tm->n_msgs + i;
    }
    tm->n_msgs += n;
    return 0;
}

int efarm_tm_open(unsigned max_posted, unsigned max_unexpected, struct efarm_tm **tm_p)
{
    unsigned n_chunks, bucket_unexpected;
    struct efarm_tm_queue *queues;
    struct efarm_tm *tm;
    uint64_t n_buckets, shift;

    if (max_posted == 0 || max_unexpected == 0 || max_posted > EFARM_TM_MAX_ENTRIES ||
        max_unexpected > EFARM_TM_MAX_ENTRIES)
        return -EINVAL;
    bucket_unexpected =
        max_unexpected < EFARM_TM_BUCKET_UNEXPECTED ? max_unexpected : EFARM_TM_BUCKET_UNEXPECTED;
    for (n_buckets = 16, shift = 60;
         n_buckets < (uint64_t)max_posted + EFARM_TM_SHAPES * bucket_unexpected; n_buckets *= 2)
        shift--;
    n_chunks = (max_unexpected + EFARM_TM_MSG_CHUNK - 1) / EFARM_TM_MSG_CHUNK;

    _Static_assert(_Alignof(struct efarm_tm_bucket) <= EFARM_CACHE_LINE, "buckets fit the line");
    tm = efarm_calloc(1, sizeof(*tm));
    if (tm == NULL)
        goto err;
    tm->buckets = efarm_aligned_calloc(n_buckets, sizeof(*tm->buckets));
    if (tm->buckets == NULL)
        goto err_free_tm;
    for (uint64_t i = 0; i < n_buckets; i++) {
        tm->buckets[i].queue.key_sk = EFARM_TM_NO_KEY;
        efarm_list_init(&tm->buckets[i].queue.entries);
    }
    tm->recvs = efarm_calloc(max_posted, sizeof(*tm->recvs));
    if (tm->recvs == NULL)
        goto err_free_buckets;
    tm->msg_chunks = efarm_calloc(n_chunks, sizeof(*tm->msg_chunks));
    if (tm->msg_chunks == NULL)
        goto err_free_recvs;
    tm->queue_chunks = efarm_calloc(n_chunks + 1, sizeof(*tm->queue_chunks));
    if (tm->queue_chunks == NULL)
        goto err_free_msg_chunks;
    /* The receives' queues; the unexpected entries bring their own. */
    queues = efarm_calloc(max_posted, sizeof(*queues));
    if (queues == NULL)
        goto err_free_queue_chunks;
    tm->queue_chunks[tm->n_queue_chunks++] = queues;

    tm->bucket_shift = shift;
    tm->max_posted = max_posted;
    tm->max_unexpected = max_unexpected;
    tm->msg_free = EFARM_TM_NO_FREE;
    for (unsigned i = 0; i < max_posted; i++) {
        tm->recvs[i].gen = 1;
        tm->recvs[i].next_free = i + 1 < max_posted ? i + 1 : EFARM_TM_NO_FREE;
    }
    efarm_tm_queues_add(tm, queues, max_posted);
    /* The first chunk now, so a matcher that never holds many messages never grows. */
    if (efarm_tm_msgs_grow(tm) != 0)
        goto err_close;
    *tm_p = tm;
    return 0;

err_close:
    efarm_tm_close(tm);
    goto err;
err_free_queue_chunks:
    free(tm->queue_chunks);
err_free_msg_chunks:
    free(tm->msg_chunks);
err_free_recvs:
    free(tm->recvs);
err_free_buckets:
    free(tm->buckets);
err_free_tm:
    free(tm);
err:
    return -ENOMEM;
}

void efarm_tm_close(struct efarm_tm *tm)
{
    if (tm == NULL)
        return;
    for (unsigned i = 0; i < tm->n_queue_chunks; i++)
        free(tm->queue_chunks[i]);
    for (unsigned i = 0; i < (tm->n_msgs + EFARM_TM_MSG_CHUNK - 1) / EFARM_TM_MSG_CHUNK; i++)
        free(tm->msg_chunks[i]);
    free(tm->queue_chunks);
    free(tm->msg_chunks);
    free(tm->recvs);
    free(tm->buckets);
    free(tm);
}

size_t efarm_tm_unexpected_entry_size(void)
{
    return sizeof(struct efarm_tm_msg) + EFARM_TM_SHAPES * sizeof(struct efarm_tm_queue);
}

/* Calls through the device's ops table, each with the current unexpected count. */
static inline int efarm_tm_device_add(struct efarm_tm *tm, uint32_t context, int32_t source,
                                      int32_t tag, efarm_tm_handle_t recv, uint32_t *hw_handle_p)
{
    return tm->offload_ops->add(tm->offload.ctx, context, source, tag, recv, tm->n_handled,
                                hw_handle_p);
}

static inline int efarm_tm_device_del(struct efarm_tm *tm, uint32_t hw_handle)
{
    return tm->offload_ops->del(tm->offload.ctx, hw_handle, tm->n_handled);
}

static inline int efarm_tm_device_sync(struct efarm_tm *tm)
{
    return tm->offload_ops->sync(tm->offload.ctx, tm->n_handled);
}

int efarm_tm_offload_attach(struct efarm_tm *tm, const struct efarm_tm_offload_ops *ops, void *ctx,
                            unsigned capacity)
{
    if (ops == NULL || ops->add == NULL || ops->del == NULL || ops->sync == NULL)
        return -EINVAL;
    if (tm->offload_ops != NULL || tm->n_posted != 0)
        return -EBUSY;
    tm->offload = (struct efarm_tm_offload){.ctx = ctx, .capacity = capacity};
    tm->n_handled = 0; /* The device starts counting from 0 too. */
    tm->offload_ops = ops;
    return 0;
}

/*
 * Hand a receive that matched no unexpected message to the device, if the
 * rules of efarm_tm.h allow it now. Returns true when the device took it (its
 * handle is in *recv_p), false when it must be held in software.
 */
static bool efarm_tm_offload_post(struct efarm_tm *tm, uint32_t context, int32_t source,
                                  int32_t tag, void *user, efarm_tm_handle_t *recv_p)
{
    struct efarm_tm_offload *offload = &tm->offload;
    uint32_t index = tm->recv_free, hw_handle;
    struct efarm_tm_recv *recv = &tm->recvs[index];
    efarm_tm_handle_t handle = efarm_tm_handle(recv->gen, index);
    int ret;

    /* Prefix rule: no older receive may wait in software. */
    if (tm->n_posted != 0 || offload->n_held >= offload->capacity)
        return false;
    if (offload->sync_pending) {
        if (efarm_tm_device_sync(tm) != 0)
            return false; /* Messages the device passed up are still on their way. */
        offload->sync_pending = false;
    }
    ret = efarm_tm_device_add(tm, context, source, tag, handle, &hw_handle);
    if (ret != 0) {
        if (ret == -EAGAIN)
            offload->sync_pending = true;
        return false;
    }
    tm->recv_free = recv->next_free;
    recv->queue = &offload->held;
    recv->seq = tm->next_seq++;
    recv->user = user;
    recv->hw_handle = hw_handle;
    offload->n_held++;
    *recv_p = handle;
    return true;
}

/* Free the slot of a device-held receive and return its user pointer. */
static void *efarm_tm_offload_remove(struct efarm_tm *tm, struct efarm_tm_recv *recv)
{
    tm->offload.n_held--;
    return efarm_tm_recv_free(tm, recv, (uint32_t)(recv - tm->recvs));
}

int efarm_tm_offload_matched(struct efarm_tm *tm, efarm_tm_handle_t recv, void **recv_user_p)
{
    struct efarm_tm_recv *entry = efarm_tm_recv_lookup(tm, recv);

    if (entry == NULL || entry->queue != &tm->offload.held)
        return -ENOENT;
    *recv_user_p = efarm_tm_offload_remove(tm, entry);
    return 0;
}

void efarm_tm_offload_sync_required(struct efarm_tm *tm)
{
    tm->offload.sync_pending = tm->offload_ops != NULL;
}

unsigned efarm_tm_offload_count(const struct efarm_tm *tm)
{
    return tm->offload.n_held;
}

/*
 * efarm_tm_post() for both cases; `offload` is a constant in each of the two
 * copies, so the copy without a device is the software matcher alone.
 */
static inline __attribute__((always_inline)) int
efarm_tm_post_common(struct efarm_tm *tm, uint32_t context, int32_t source, int32_t tag, void *user,
                     efarm_tm_handle_t *recv_p, void **msg_user_p, bool offload)
{
    struct efarm_tm_queue *queue;
    struct efarm_tm_msg *msg;
    uint64_t key_ct;
    uint32_t shape;

    if (!efarm_tm_key_valid(source, tag, true))
        return -EINVAL;
    msg = efarm_tm_msg_find(tm, context, source, tag);
    if (msg != NULL) {
        *msg_user_p = efarm_tm_msg_remove(tm, msg);
        return EFARM_TM_MATCHED;
    }
    if (tm->recv_free == EFARM_TM_NO_FREE)
        return -ENOMEM;
    if (offload && efarm_tm_offload_post(tm, context, source, tag, user, recv_p))
        return EFARM_TM_QUEUED;
    shape = efarm_tm_shape(source, tag);
    key_ct = efarm_tm_key_ct(context, tag);
    queue = efarm_tm_queue_get(tm, efarm_tm_bucket(tm, efarm_tm_hash(tm, key_ct, source), shape),
                               key_ct, efarm_tm_key_sk(shape, source));
    efarm_tm_recv_queue(tm, queue, shape, user, recv_p);
    return EFARM_TM_QUEUED;
}

__attribute__((noinline)) int efarm_tm_post_software(struct efarm_tm *tm, uint32_t context,
                                                     int32_t source, int32_t tag, void *user,
                                                     efarm_tm_handle_t *recv_p, void **msg_user_p)
{
    return efarm_tm_post_common(tm, context, source, tag, user, recv_p, msg_user_p, false);
}

__attribute__((noinline)) int efarm_tm_post_offload(struct efarm_tm *tm, uint32_t context,
                                                    int32_t source, int32_t tag, void *user,
                                                    efarm_tm_handle_t *recv_p, void **msg_user_p)
{
    return efarm_tm_post_common(tm, context, source, tag, user, recv_p, msg_user_p, true);
}

/*
 * The rest of efarm_tm_post() when nothing can match the receive (no
 * unexpected message) and a slot is free but the key's queue is not its
 * bucket's inline queue: `first` is the bucket.
 */
__attribute__((noinline)) int efarm_tm_post_chained(struct efarm_tm *tm,
                                                    struct efarm_tm_queue *first, uint64_t key_ct,
                                                    uint64_t key_sk, void *user,
                                                    efarm_tm_handle_t *recv_p)
{
    struct efarm_tm_queue *queue = efarm_tm_queue_get(tm, first, key_ct, key_sk);

    efarm_tm_recv_queue(tm, queue, (uint32_t)key_sk & (EFARM_TM_SHAPES - 1), user, recv_p);
    return EFARM_TM_QUEUED;
}

/* The oldest software receive of one shape matching a message's key, or NULL. */
static inline struct efarm_tm_recv *efarm_tm_recv_head(const struct efarm_tm *tm, uint32_t shape,
                                                       uint32_t context, int32_t source,
                                                       int32_t tag)
{
    struct efarm_link *link;
    uint64_t key_ct;

    efarm_tm_key_shape(shape, &source, &tag);
    key_ct = efarm_tm_key_ct(context, tag);
    link = efarm_tm_queue_head(efarm_tm_bucket(tm, efarm_tm_hash(tm, key_ct, source), shape),
                               key_ct, efarm_tm_key_sk(shape, source));
    return link == NULL ? NULL : efarm_container_of(link, struct efarm_tm_recv, link);
}

/* The earliest-posted of `best` (the exact receive, or NULL) and the wildcard receives. */
static struct efarm_tm_recv *efarm_tm_recv_best_wild(const struct efarm_tm *tm, uint32_t context,
                                                     int32_t source, int32_t tag,
                                                     struct efarm_tm_recv *best)
{
    for (uint32_t shape = 1; shape < EFARM_TM_SHAPES; shape++) {
        struct efarm_tm_recv *head = efarm_tm_recv_head(tm, shape, context, source, tag);

        if (head != NULL && (best == NULL || head->seq < best->seq))
            best = head;
    }
    return best;
}

/*
 * The earliest-posted software receive matching a message's key, or NULL.
 * Without wildcard receives only the exact key's queue can hold one: one
 * lookup.
 */
static inline struct efarm_tm_recv *efarm_tm_recv_best(const struct efarm_tm *tm, uint32_t context,
                                                       int32_t source, int32_t tag)
{
    struct efarm_tm_recv *best;

    if (tm->n_posted == 0)
        return NULL;
    best = efarm_tm_recv_head(tm, 0, context, source, tag);
    if (tm->n_wild_recv == 0)
        return best;
    return efarm_tm_recv_best_wild(tm, context, source, tag, best);
}

/* efarm_tm_match_posted() for every case. */
__attribute__((noinline)) int efarm_tm_match_posted_software(struct efarm_tm *tm, uint32_t context,
                                                             int32_t source, int32_t tag,
                                                             void **recv_user_p)
{
    struct efarm_tm_recv *best;

    if (!efarm_tm_key_valid(source, tag, false))
        return -EINVAL;
    best = efarm_tm_recv_best(tm, context, source, tag);
    if (best != NULL) {
        tm->n_handled++;
        *recv_user_p = efarm_tm_recv_remove(tm, best);
        return EFARM_TM_MATCHED;
    }
    return 0;
}

int efarm_tm_post(struct efarm_tm *tm, uint32_t context, int32_t source, int32_t tag, void *user,
                  efarm_tm_handle_t *recv_p, void **msg_user_p)
{
    return efarm_tm_post_inl(tm, context, source, tag, user, recv_p, msg_user_p);
}

int efarm_tm_match_posted(struct efarm_tm *tm, uint32_t context, int32_t source, int32_t tag,
                          void **recv_user_p)
{
    return efarm_tm_match_posted_inl(tm, context, source, tag, recv_user_p);
}

int efarm_tm_would_match(const struct efarm_tm *tm, uint32_t context, int32_t source, int32_t tag)
{
    if (!efarm_tm_key_valid(source, tag, false))
        return -EINVAL;
    return efarm_tm_recv_best(tm, context, source, tag) != NULL;
}

int efarm_tm_arrive(struct efarm_tm *tm, uint32_t context, int32_t source, int32_t tag, void *user,
                    void **recv_user_p)
{
    struct efarm_tm_msg *msg;
    uint32_t index;
    int ret;

    ret = efarm_tm_match_posted(tm, context, source, tag, recv_user_p);
    if (ret != 0)
        return ret;
    if (tm->msg_free == EFARM_TM_NO_FREE) {
        ret = efarm_tm_msgs_grow(tm);
        if (ret != 0)
            return ret;
    }
    index = tm->msg_free;
    msg = efarm_tm_msg_at(tm, index);
    tm->msg_free = msg->next_free;
    for (uint32_t shape = 0; shape < EFARM_TM_SHAPES; shape++) {
        int32_t shaped_source = source, shaped_tag = tag;
        uint32_t kind = EFARM_TM_KIND_MSG + shape;
        uint64_t key_ct;

        efarm_tm_key_shape(shape, &shaped_source, &shaped_tag);
        key_ct = efarm_tm_key_ct(context, shaped_tag);
        msg->queue[shape] = efarm_tm_queue_get(
            tm, efarm_tm_bucket(tm, efarm_tm_hash(tm, key_ct, shaped_source), kind), key_ct,
            efarm_tm_key_sk(kind, shaped_source));
        efarm_list_append(&msg->queue[shape]->entries, &msg->link[shape]);
    }
    msg->user = user;
    tm->n_unexpected++;
    tm->n_handled++;
    return EFARM_TM_QUEUED;
}

int efarm_tm_probe(const struct efarm_tm *tm, uint32_t context, int32_t source, int32_t tag,
                   efarm_tm_handle_t *msg_p, void **msg_user_p)
{
    const struct efarm_tm_msg *msg;

    if (!efarm_tm_key_valid(source, tag, true))
        return -EINVAL;
    msg = efarm_tm_msg_find(tm, context, source, tag);
    if (msg == NULL)
        return 0;
    *msg_p = efarm_tm_handle(msg->gen, msg->index);
    *msg_user_p = msg->user;
    return 1;
}

int efarm_tm_claim(struct efarm_tm *tm, efarm_tm_handle_t msg, void **msg_user_p)
{
    uint32_t index = (uint32_t)msg;
    struct efarm_tm_msg *entry;

    if (index >= tm->n_msgs)
        return -ENOENT;
    entry = efarm_tm_msg_at(tm, index);
    if (entry->queue[0] == NULL || entry->gen != (uint32_t)(msg >> 32))
        return -ENOENT;
    *msg_user_p = efarm_tm_msg_remove(tm, entry);
    return 0;
}

int efarm_tm_cancel(struct efarm_tm *tm, efarm_tm_handle_t recv, void **recv_user_p)
{
    struct efarm_tm_recv *entry = efarm_tm_recv_lookup(tm, recv);
    int ret;

    if (entry == NULL)
        return -ENOENT;
    if (entry->queue == &tm->offload.held) {
        /* -ENOENT: the device consumed it; efarm_tm_offload_matched() will report it. */
        ret = efarm_tm_device_del(tm, entry->hw_handle);
        if (ret != 0)
            return ret;
        *recv_user_p = efarm_tm_offload_remove(tm, entry);
        return 0;
    }
    *recv_user_p = efarm_tm_recv_remove(tm, entry);
    return 0;
}

unsigned efarm_tm_posted_count(const struct efarm_tm *tm)
{
    return tm->n_posted + tm->offload.n_held;
}

unsigned efarm_tm_unexpected_count(const struct efarm_tm *tm)
{
    return tm->n_unexpected;
}
