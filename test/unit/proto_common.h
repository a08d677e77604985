/*
 * Shared helpers of the protocol-engine tests: efasim selection, a pair of
 * endpoints that know each other, progress loops with deadlines, and data
 * patterns that name their offset.
 */
#ifndef EFARM_TEST_PROTO_COMMON_H
#define EFARM_TEST_PROTO_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "efarm_proto.h"

/* EFARM_DEVICE=sim with the build tree's efasim; call before the first endpoint opens. */
void proto_use_efasim(void);

struct proto_pair {
    struct efarm_ep *a, *b;
    efarm_peer_t a_to_b; /* b in a's address vector */
    efarm_peer_t b_to_a; /* a in b's address vector */
};

/* Open a and b (NULL attributes: defaults) and insert each other's address. */
void proto_pair_open(struct proto_pair *p, const struct efarm_ep_attr *attr_a,
                     const struct efarm_ep_attr *attr_b);
void proto_pair_close(struct proto_pair *p);

/* Progress the endpoints until every request is done; fails the test after timeout_s. */
void proto_wait(struct efarm_ep *const *eps, unsigned neps, struct efarm_req *const *reqs,
                unsigned n, double timeout_s);
void proto_pair_wait(struct proto_pair *p, struct efarm_req *const *reqs, unsigned n,
                     double timeout_s);

/* Progress both endpoints for about `us` microseconds. */
void proto_pair_spin(struct proto_pair *p, unsigned us);

/* Byte i of pattern `seed`: changes with every offset and seed. */
static inline uint8_t proto_pattern(uint64_t seed, uint64_t i)
{
    uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed * 0xc2b2ae3d27d4eb4full;

    return (uint8_t)(x >> 56 ^ x >> 13);
}

void proto_fill(uint8_t *buf, uint64_t n, uint64_t seed);

/* Fail the test, naming the first differing offset, unless buf holds pattern seed. */
void proto_expect_pattern(const uint8_t *buf, uint64_t n, uint64_t seed);

double proto_now_s(void);

/* A file name of this process's own under $TMPDIR (or /tmp), for logs a test reads. */
void proto_tmp_path(char *buf, size_t n, const char *what);

/*
 * Send this process's stderr (the engine's log) to a fresh file at path;
 * returns the saved descriptor for proto_stderr_restore().
 */
int proto_stderr_capture(const char *path);
void proto_stderr_restore(int saved);

/* Lines of the file at path that contain needle. */
unsigned proto_file_count(const char *path, const char *needle);

#endif /* EFARM_TEST_PROTO_COMMON_H */
