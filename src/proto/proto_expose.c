/*
 * Exposed memory: the regions an endpoint lets peers read and write
 * (efarm_rma.h). A hash table maps each key to its region; the table doubles
 * when it holds more regions than buckets, so a lookup stays O(1) however
 * many windows an application creates. Every check is written so that no
 * sum can overflow: the range is tested as an offset from the region's base.
 */
#include <errno.h>
#include <stdlib.h>

#include "efarm_device_limits.h"
#include "efarm_errno.h"
#include "efarm_rma.h"
#include "proto_internal.h"

struct efarm_region {
    struct efarm_region *next; /* hash chain */
    uint64_t key;
    uint64_t base, len;
    unsigned access;
    struct efarm_dev_mr *mr; /* NULL for a zero-length region */
};

#define EFARM_SOFT_KEY_BASE (UINT64_C(1) << 32)

static uint32_t key_bucket(const struct efarm_ep *ep, uint64_t key)
{
    return (uint32_t)((key * UINT64_C(0x9e3779b97f4a7c15)) >> 32) & ep->region_mask;
}

static struct efarm_region *region_find(const struct efarm_ep *ep, uint64_t key)
{
    if (ep->nregions == 0)
        return NULL;
    for (struct efarm_region *r = ep->regions[key_bucket(ep, key)]; r; r = r->next)
        if (r->key == key)
            return r;
    return NULL;
}

/* Make room for one more region: 0 or -ENOMEM (the table is unchanged then). */
static int regions_grow(struct efarm_ep *ep)
{
    uint32_t old_n = ep->regions ? ep->region_mask + 1 : 0, n = old_n ? 2 * old_n : 16;
    struct efarm_region **old = ep->regions, **table;

    if (ep->nregions < old_n)
        return 0;
    if (n > UINT32_MAX / 2)
        return -ENOMEM;
    table = efarm_calloc(n, sizeof(*table));
    if (table == NULL)
        return -ENOMEM;
    ep->regions = table;
    ep->region_mask = n - 1;
    for (uint32_t i = 0; i < old_n; i++) {
        for (struct efarm_region *r = old[i], *next; r; r = next) {
            uint32_t b = key_bucket(ep, r->key);

            next = r->next;
            r->next = table[b];
            table[b] = r;
        }
    }
    free(old);
    return 0;
}

int efarm_expose(struct efarm_ep *ep, void *addr, uint64_t len, unsigned access,
                 struct efarm_region **region_p)
{
    struct efarm_region *r;
    uint32_t b;
    int ret;

    if (ep == NULL || region_p == NULL || access == 0 ||
        (access & ~(EFARM_EXPOSE_READ | EFARM_EXPOSE_WRITE)) != 0 || (addr == NULL && len > 0) ||
        len > UINT64_MAX - (uint64_t)(uintptr_t)addr || len > SIZE_MAX)
        return -EINVAL;
    ret = regions_grow(ep);
    if (ret < 0)
        return ret;
    r = efarm_calloc(1, sizeof(*r));
    if (r == NULL)
        return -ENOMEM;
    r->base = (uint64_t)(uintptr_t)addr;
    r->len = len;
    r->access = access;
    if (len > 0) {
        /* The device grants remote access only where it has the capability. */
        bool rd = (access & EFARM_EXPOSE_READ) && ep->caps.rdma_read,
             wr = (access & EFARM_EXPOSE_WRITE) && ep->caps.rdma_write;

        ret = efarm_dev_mr_reg(ep->dev, addr, (size_t)len, rd, wr, &r->mr);
        /* Pinned memory is limited: what the cache keeps unused goes first (mr_cache.c). */
        if ((ret == -ENOMEM || ret == -EPERM) && efarm_mr_cache_trim(ep->mr_cache))
            ret = efarm_dev_mr_reg(ep->dev, addr, (size_t)len, rd, wr, &r->mr);
        if (ret < 0) {
            static const char what[] = "exposed memory (an RMA window)",
                              fallback[] = "Such memory is served without registration (MPI "
                                           "windows: by active messages)";

            if (ret != -ENOMEM || !wr ||
                !efarm_dev_reg_write_refused(ep->dev, addr, (size_t)len, rd, what, fallback))
                efarm_dev_reg_refused(ep->dev, len, ret, what, fallback);
            free(r);
            return ret;
        }
        r->key = efarm_dev_mr_rkey(r->mr);
        if (region_find(ep, r->key) != NULL) {
            /* The device handed out an rkey that is still live: never alias two regions. */
            efarm_dev_mr_dereg(r->mr);
            free(r);
            return -EEXIST;
        }
    } else {
        r->key = EFARM_SOFT_KEY_BASE + ep->next_soft_key++;
    }
    b = key_bucket(ep, r->key);
    r->next = ep->regions[b];
    ep->regions[b] = r;
    ep->nregions++;
    *region_p = r;
    return 0;
}

uint64_t efarm_region_key(const struct efarm_region *region)
{
    return region->key;
}

void efarm_unexpose(struct efarm_ep *ep, struct efarm_region *region)
{
    struct efarm_region **link;

    if (ep == NULL || region == NULL || ep->nregions == 0)
        return;
    for (link = &ep->regions[key_bucket(ep, region->key)]; *link; link = &(*link)->next) {
        if (*link == region) {
            *link = region->next;
            ep->nregions--;
            if (region->mr)
                efarm_dev_mr_dereg(region->mr);
            free(region);
            return;
        }
    }
}

int efarm_region_check(struct efarm_ep *ep, uint64_t addr, uint64_t len, uint64_t key,
                       unsigned access, uint8_t **ptr_p)
{
    const struct efarm_region *r = region_find(ep, key);
    int err;

    if (r == NULL)
        err = EFARM_E(PROTO_RMA_KEY);
    else if (addr < r->base || addr - r->base > r->len || len > r->len - (addr - r->base))
        err = EFARM_E(PROTO_RMA_BOUNDS);
    else if (access == 0 || (access & ~r->access) != 0)
        err = EFARM_E(PROTO_RMA_ACCESS);
    else {
        *ptr_p = (uint8_t *)(uintptr_t)addr;
        return 0;
    }
    ep->cnt.rma_refused++;
    return err;
}

uint32_t efarm_region_count(const struct efarm_ep *ep)
{
    return ep->nregions;
}

void efarm_regions_fini(struct efarm_ep *ep)
{
    if (ep->regions == NULL)
        return;
    for (uint32_t i = 0; i <= ep->region_mask; i++) {
        for (struct efarm_region *r = ep->regions[i], *next; r; r = next) {
            next = r->next;
            if (r->mr)
                efarm_dev_mr_dereg(r->mr);
            free(r);
        }
    }
    free(ep->regions);
    ep->regions = NULL;
    ep->region_mask = 0;
    ep->nregions = 0;
}
