/* Fixed-size object pools (see efarm_pool.h). */
#include "efarm_pool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static unsigned g_alloc_fail_at, g_alloc_count;

void efarm_alloc_fail_at(unsigned n)
{
    g_alloc_fail_at = n;
    g_alloc_count = 0;
}

static bool alloc_fails(void)
{
    return g_alloc_fail_at && ++g_alloc_count == g_alloc_fail_at;
}

void *efarm_calloc(size_t n, size_t size)
{
    return alloc_fails() ? NULL : calloc(n, size);
}

void *efarm_aligned_calloc(size_t n, size_t size)
{
    size_t bytes;
    void *p;

    if (alloc_fails() || (size && n > SIZE_MAX / size))
        return NULL;
    bytes = n * size;
    bytes = (bytes + EFARM_CACHE_LINE - 1) & ~(size_t)(EFARM_CACHE_LINE - 1);
    p = aligned_alloc(EFARM_CACHE_LINE, bytes ? bytes : EFARM_CACHE_LINE);
    if (p)
        memset(p, 0, bytes);
    return p;
}

int efarm_pool_construct(struct efarm_pool *pool, size_t elem_size, uint32_t per_chunk,
                         uint32_t max_elems, uint32_t prealloc)
{
    memset(pool, 0, sizeof(*pool));
    if (elem_size < sizeof(void *) || per_chunk == 0 || max_elems == 0 || prealloc > max_elems)
        return -EINVAL;
    pool->elem_size = (elem_size + EFARM_CACHE_LINE - 1) & ~(size_t)(EFARM_CACHE_LINE - 1);
    pool->per_chunk = per_chunk < max_elems ? per_chunk : max_elems;
    pool->max_elems = max_elems;
    pool->chunks =
        efarm_calloc((max_elems + pool->per_chunk - 1) / pool->per_chunk, sizeof(*pool->chunks));
    if (pool->chunks == NULL)
        return -ENOMEM;
    while (pool->nallocated < prealloc) {
        if (efarm_pool_grow(pool)) {
            efarm_pool_destruct(pool);
            return -ENOMEM;
        }
    }
    return 0;
}

void efarm_pool_destruct(struct efarm_pool *pool)
{
    for (uint32_t i = 0; i < pool->nchunks; i++)
        free(pool->chunks[i]);
    free(pool->chunks);
    memset(pool, 0, sizeof(*pool));
}

int efarm_pool_grow(struct efarm_pool *pool)
{
    uint32_t n = pool->max_elems - pool->nallocated;
    uint8_t *chunk;

    if (n == 0)
        return -ENOSPC;
    if (n > pool->per_chunk)
        n = pool->per_chunk;
    chunk = efarm_aligned_calloc(n, pool->elem_size);
    if (chunk == NULL)
        return -ENOMEM;
    pool->chunks[pool->nchunks++] = chunk;
    /* Push in reverse so the first element of the chunk is handed out first. */
    for (uint32_t i = n; i-- > 0;) {
        void *elem = chunk + (size_t)i * pool->elem_size;

        *(void **)elem = pool->free;
        pool->free = elem;
    }
    pool->nallocated += n;
    return 0;
}
