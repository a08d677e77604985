/*
 * Fixed-size object pools, and the one allocation point efarm's protocol
 * code uses.
 *
 * A pool hands out elements of one size, 64-byte aligned, from chunks it
 * allocates on demand up to a fixed bound: it never holds more than
 * max_elems elements, so a pool is the budget of whatever it holds. Elements
 * go back on a free list and are reused LIFO (cache warm); chunks are freed
 * only by efarm_pool_destruct(). Alloc and release are a pointer swap each;
 * only growing the pool by a chunk calls malloc, and `prealloc` elements are
 * created by construct so a hot path never does.
 *
 * Not thread safe: one owner at a time.
 */
#ifndef EFARM_POOL_H
#define EFARM_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EFARM_CACHE_LINE 64

struct efarm_pool {
    size_t elem_size;    /* rounded up to EFARM_CACHE_LINE */
    uint32_t per_chunk;  /* elements per chunk */
    uint32_t max_elems;  /* the bound */
    uint32_t nallocated; /* elements created so far (<= max_elems) */
    uint32_t in_use;
    void *free; /* free list through each element's first word */
    void **chunks;
    uint32_t nchunks;
};

/*
 * Set up a pool of at most max_elems elements of elem_size bytes, created
 * per_chunk at a time, the first `prealloc` of them now. The caller owns the
 * struct and calls efarm_pool_destruct(). Returns 0, -EINVAL or -ENOMEM.
 */
int efarm_pool_construct(struct efarm_pool *pool, size_t elem_size, uint32_t per_chunk,
                         uint32_t max_elems, uint32_t prealloc);

/* Free every chunk; elements still in use become invalid. */
void efarm_pool_destruct(struct efarm_pool *pool);

/* Grow by one chunk (cold path); returns 0 or -ENOMEM/-ENOSPC. */
int efarm_pool_grow(struct efarm_pool *pool);

/* An element (contents undefined), or NULL when the bound is reached or growth failed. */
static inline void *efarm_pool_alloc(struct efarm_pool *pool)
{
    void *elem = pool->free;

    if (elem == NULL) {
        if (efarm_pool_grow(pool))
            return NULL;
        elem = pool->free;
    }
    pool->free = *(void **)elem;
    pool->in_use++;
    return elem;
}

/* Give an element back. */
static inline void efarm_pool_release(struct efarm_pool *pool, void *elem)
{
    *(void **)elem = pool->free;
    pool->free = elem;
    pool->in_use--;
}

/* Whether efarm_pool_alloc() can succeed without hitting the bound. */
static inline bool efarm_pool_can_alloc(const struct efarm_pool *pool)
{
    return pool->free != NULL || pool->nallocated < pool->max_elems;
}

/*
 * calloc through one point, so tests can make the N-th allocation from now
 * fail (efarm_alloc_fail_at) and walk every failure path of an open.
 */
void *efarm_calloc(size_t n, size_t size);
void *efarm_aligned_calloc(size_t n, size_t size); /* EFARM_CACHE_LINE aligned; free() it */
void efarm_alloc_fail_at(unsigned n);              /* 0 = never */

#endif /* EFARM_POOL_H */
