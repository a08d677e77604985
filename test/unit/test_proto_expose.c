/*
 * The engine suite, part 15: exposed memory, the target side of one-sided
 * operations (efarm_rma.h). Every remote access is checked against the
 * region table before a byte is touched: a key no live region has, a range
 * that leaves the region (at either end, or wraps around 2^64) and an access
 * the region does not grant are refused with their own error and counted;
 * accesses inside a region are granted with the right pointer. Regions are
 * registered with the device (the key is the rkey, so RDMA checks the same
 * key), keys are unique, the table grows past its first size, withdrawn
 * regions' keys are refused, bad arguments are rejected, allocation failure
 * leaves the table usable, and closing the endpoint releases what is still
 * exposed (LeakSanitizer checks the process).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "efarm_errno.h"
#include "efarm_pool.h"
#include "efarm_proto.h"
#include "efarm_rma.h"
#include "efarm_test.h"
#include "proto_common.h"

enum { RLEN = 4096 };

static struct efarm_ep *open_ep(void)
{
    struct efarm_ep *ep;

    proto_use_efasim();
    EXPECT_RET(efarm_ep_open(NULL, &ep), 0);
    return ep;
}

static uint64_t addr_of(const void *p)
{
    return (uint64_t)(uintptr_t)p;
}

EFARM_TEST(proto_expose_checks_key_bounds_access)
{
    struct efarm_ep *ep = open_ep();
    uint8_t *mem = calloc(1, RLEN), *p = NULL;
    struct efarm_region *rw, *ro;
    uint64_t base = addr_of(mem), key, refused;

    EXPECT_RET(efarm_expose(ep, mem, RLEN / 2, EFARM_EXPOSE_READ | EFARM_EXPOSE_WRITE, &rw), 0);
    EXPECT_RET(efarm_expose(ep, mem + RLEN / 2, RLEN / 2, EFARM_EXPOSE_READ, &ro), 0);
    EXPECT_TRUE(efarm_region_key(rw) != efarm_region_key(ro));
    EXPECT_TRUE(efarm_region_key(rw) < (UINT64_C(1) << 32)); /* the device's rkey */
    EXPECT_EQ(efarm_region_count(ep), 2);
    key = efarm_region_key(rw);
    refused = efarm_ep_counters(ep)->rma_refused;

    /* Granted: the whole region, its last byte, an empty access at either end. */
    EXPECT_RET(efarm_region_check(ep, base, RLEN / 2, key, EFARM_EXPOSE_WRITE, &p), 0);
    EXPECT_TRUE(p == mem);
    EXPECT_RET(efarm_region_check(ep, base + RLEN / 2 - 1, 1, key, EFARM_EXPOSE_READ, &p), 0);
    EXPECT_TRUE(p == mem + RLEN / 2 - 1);
    EXPECT_RET(efarm_region_check(ep, base + RLEN / 2, 0, key, EFARM_EXPOSE_READ, &p), 0);
    EXPECT_RET(efarm_region_check(ep, base, 0, key, EFARM_EXPOSE_READ, &p), 0);
    EXPECT_EQ(efarm_ep_counters(ep)->rma_refused, refused);

    /* Refused, each with its reason, and counted. */
    p = NULL;
    EXPECT_RET(efarm_region_check(ep, base, 1, key + 12345, EFARM_EXPOSE_READ, &p),
               EFARM_E(PROTO_RMA_KEY));
    EXPECT_RET(efarm_region_check(ep, base, 1, key | (UINT64_C(1) << 40), EFARM_EXPOSE_READ, &p),
               EFARM_E(PROTO_RMA_KEY));
    EXPECT_RET(efarm_region_check(ep, base, RLEN / 2 + 1, key, EFARM_EXPOSE_READ, &p),
               EFARM_E(PROTO_RMA_BOUNDS));
    EXPECT_RET(efarm_region_check(ep, base + RLEN / 2, 1, key, EFARM_EXPOSE_READ, &p),
               EFARM_E(PROTO_RMA_BOUNDS));
    EXPECT_RET(efarm_region_check(ep, base + RLEN / 2 + 1, 0, key, EFARM_EXPOSE_READ, &p),
               EFARM_E(PROTO_RMA_BOUNDS));
    EXPECT_RET(efarm_region_check(ep, base - 1, 1, key, EFARM_EXPOSE_READ, &p),
               EFARM_E(PROTO_RMA_BOUNDS));
    EXPECT_RET(efarm_region_check(ep, base + 8, UINT64_MAX - 4, key, EFARM_EXPOSE_READ, &p),
               EFARM_E(PROTO_RMA_BOUNDS));
    EXPECT_RET(efarm_region_check(ep, UINT64_MAX, 2, key, EFARM_EXPOSE_READ, &p),
               EFARM_E(PROTO_RMA_BOUNDS));
    EXPECT_RET(
        efarm_region_check(ep, base + RLEN / 2, 8, efarm_region_key(ro), EFARM_EXPOSE_WRITE, &p),
        EFARM_E(PROTO_RMA_ACCESS));
    EXPECT_RET(efarm_region_check(ep, base, 8, key, 0, &p), EFARM_E(PROTO_RMA_ACCESS));
    EXPECT_RET(efarm_region_check(ep, base, 8, key, 4, &p), EFARM_E(PROTO_RMA_ACCESS));
    EXPECT_TRUE(p == NULL);
    EXPECT_EQ(efarm_ep_counters(ep)->rma_refused, refused + 11);

    /* A withdrawn region's key is refused; the other region stays. */
    efarm_unexpose(ep, rw);
    EXPECT_EQ(efarm_region_count(ep), 1);
    EXPECT_RET(efarm_region_check(ep, base, 1, key, EFARM_EXPOSE_READ, &p), EFARM_E(PROTO_RMA_KEY));
    EXPECT_RET(efarm_region_check(ep, base + RLEN / 2, RLEN / 2, efarm_region_key(ro),
                                  EFARM_EXPOSE_READ, &p),
               0);
    efarm_unexpose(ep, NULL);
    efarm_ep_close(ep); /* ro is still exposed: close releases it */
    free(mem);
}

EFARM_TEST(proto_expose_zero_length_and_bad_arguments)
{
    struct efarm_ep *ep = open_ep();
    uint8_t mem[64], *p = NULL;
    struct efarm_region *z1, *z2, *r = NULL;

    /* Zero-length regions (MPI windows of size 0): keys above every rkey, distinct. */
    EXPECT_RET(efarm_expose(ep, NULL, 0, EFARM_EXPOSE_READ, &z1), 0);
    EXPECT_RET(efarm_expose(ep, mem, 0, EFARM_EXPOSE_WRITE, &z2), 0);
    EXPECT_TRUE(efarm_region_key(z1) >= (UINT64_C(1) << 32));
    EXPECT_TRUE(efarm_region_key(z1) != efarm_region_key(z2));
    EXPECT_RET(
        efarm_region_check(ep, addr_of(mem), 0, efarm_region_key(z2), EFARM_EXPOSE_WRITE, &p), 0);
    EXPECT_RET(
        efarm_region_check(ep, addr_of(mem), 1, efarm_region_key(z2), EFARM_EXPOSE_WRITE, &p),
        EFARM_E(PROTO_RMA_BOUNDS));

    EXPECT_RET(efarm_expose(ep, mem, sizeof(mem), 0, &r), -EINVAL);
    EXPECT_RET(efarm_expose(ep, mem, sizeof(mem), 8, &r), -EINVAL);
    EXPECT_RET(efarm_expose(ep, NULL, 8, EFARM_EXPOSE_READ, &r), -EINVAL);
    EXPECT_RET(efarm_expose(ep, (void *)(uintptr_t)(UINTPTR_MAX - 8), 64, EFARM_EXPOSE_READ, &r),
               -EINVAL);
    EXPECT_RET(efarm_expose(ep, mem, sizeof(mem), EFARM_EXPOSE_READ, NULL), -EINVAL);
    EXPECT_TRUE(r == NULL);
    EXPECT_EQ(efarm_region_count(ep), 2);
    efarm_unexpose(ep, z1);
    efarm_unexpose(ep, z2);
    EXPECT_EQ(efarm_region_count(ep), 0);
    efarm_ep_close(ep);
}

/* Many regions: the table grows, every key stays unique and found, in any order of release. */
EFARM_TEST(proto_expose_many_regions)
{
    enum { N = 300 };
    struct efarm_ep *ep = open_ep();
    uint8_t *mem = calloc(N, 64), *p;
    struct efarm_region **r = calloc(N, sizeof(*r));
    uint64_t *key = calloc(N, sizeof(*key)); /* a released region's key, read before release */

    for (int i = 0; i < N; i++) {
        efarm_test_context("region %d", i);
        EXPECT_RET(
            efarm_expose(ep, mem + 64 * i, 64, EFARM_EXPOSE_READ | EFARM_EXPOSE_WRITE, &r[i]), 0);
    }
    EXPECT_EQ(efarm_region_count(ep), N);
    for (int i = 0; i < N; i++) {
        efarm_test_context("check %d", i);
        key[i] = efarm_region_key(r[i]);
        EXPECT_RET(efarm_region_check(ep, addr_of(mem + 64 * i), 64, efarm_region_key(r[i]),
                                      EFARM_EXPOSE_WRITE, &p),
                   0);
        EXPECT_TRUE(p == mem + 64 * i);
        /* Each key covers its own 64 bytes only. */
        EXPECT_RET(efarm_region_check(ep, addr_of(mem + 64 * i), 65, efarm_region_key(r[i]),
                                      EFARM_EXPOSE_WRITE, &p),
                   EFARM_E(PROTO_RMA_BOUNDS));
    }
    for (int i = 0; i < N; i += 2)
        efarm_unexpose(ep, r[i]);
    for (int i = 0; i < N; i++) {
        efarm_test_context("after release, %d", i);
        EXPECT_RET(efarm_region_check(ep, addr_of(mem + 64 * i), 1, key[i], EFARM_EXPOSE_READ, &p),
                   i % 2 ? 0 : EFARM_E(PROTO_RMA_KEY));
    }
    efarm_ep_close(ep);
    free(key);
    free(r);
    free(mem);
}

/* Allocation failures at each point of efarm_expose: -ENOMEM, nothing exposed, nothing leaked. */
EFARM_TEST(proto_expose_alloc_failure)
{
    struct efarm_ep *ep = open_ep();
    uint8_t mem[256], *p;
    struct efarm_region *r = NULL;
    unsigned k;
    int ret;

    for (k = 1; k < 10; k++) {
        efarm_test_context("allocation %u fails", k);
        efarm_alloc_fail_at(k);
        ret = efarm_expose(ep, mem, sizeof(mem), EFARM_EXPOSE_READ, &r);
        efarm_alloc_fail_at(0);
        if (ret == 0)
            break;
        EXPECT_RET(ret, -ENOMEM);
        EXPECT_EQ(efarm_region_count(ep), 0);
    }
    EXPECT_TRUE(k > 1 && k < 10);
    EXPECT_RET(efarm_region_check(ep, addr_of(mem), sizeof(mem), efarm_region_key(r),
                                  EFARM_EXPOSE_READ, &p),
               0);
    efarm_ep_close(ep);
}
