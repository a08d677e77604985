/*
 * efarm's unit-test harness.
 *
 * EFARM_TEST(name) defines a test; the runner (runner.c) runs each one in its
 * own process with a timeout and ends with "N passed, N failed". A failed
 * expectation prints both operands and ends the test's process, so one test
 * can never corrupt another.
 */
#ifndef EFARM_TEST_H
#define EFARM_TEST_H

#include <inttypes.h>
#include <stdint.h>
#include <string.h>

typedef void (*efarm_test_fn)(void);

void efarm_test_register(const char *name, efarm_test_fn fn, unsigned timeout_s);
_Noreturn void efarm_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define EFARM_TEST_DEFAULT_TIMEOUT 30

#define EFARM_TEST_TIMEOUT(name, seconds)                          \
    static void name(void);                                        \
    __attribute__((constructor)) static void name##_register(void) \
    {                                                              \
        efarm_test_register(#name, name, seconds);                 \
    }                                                              \
    static void name(void)

#define EFARM_TEST(name) EFARM_TEST_TIMEOUT(name, EFARM_TEST_DEFAULT_TIMEOUT)

#define EXPECT_TRUE(c)                                              \
    do {                                                            \
        if (!(c))                                                   \
            efarm_test_fail(__FILE__, __LINE__, "expected %s", #c); \
    } while (0)

#define EXPECT_EQ(a, b)                                                                        \
    do {                                                                                       \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                       \
        if (a_ != b_)                                                                          \
            efarm_test_fail(__FILE__, __LINE__,                                                \
                            "%s == %s: %" PRIu64 " (0x%" PRIx64 ") vs %" PRIu64 " (0x%" PRIx64 \
                            ")",                                                               \
                            #a, #b, a_, a_, b_, b_);                                           \
    } while (0)

/* Return codes: both printed with their efarm names. */
#define EXPECT_RET(a, b)                                                                    \
    do {                                                                                    \
        int a_ = (a), b_ = (b);                                                             \
        if (a_ != b_)                                                                       \
            efarm_test_fail(__FILE__, __LINE__, "%s == %s: %d (%s) vs %d (%s)", #a, #b, a_, \
                            efarm_strerror_name(a_), b_, efarm_strerror_name(b_));          \
    } while (0)

#define EXPECT_MEM_EQ(a, b, n)                                             \
    do {                                                                   \
        size_t n_ = (n);                                                   \
        if (memcmp((a), (b), n_))                                          \
            efarm_test_fail_mem(__FILE__, __LINE__, #a, #b, (a), (b), n_); \
    } while (0)

/*
 * The test cannot run here (a feature this rdma-core or front end lacks): it
 * ends, reported as SKIP with the reason, neither passed nor failed.
 */
_Noreturn void efarm_test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

_Noreturn void efarm_test_fail_mem(const char *file, int line, const char *an, const char *bn,
                                   const void *a, const void *b, size_t n);

/*
 * Say what the test is working on (a vector's name, a loop index); a failure
 * prints the last context set, and nothing is printed otherwise.
 */
void efarm_test_context(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Deterministic per-test pseudo-random numbers (xorshift64*), seeded by EFARM_TEST_SEED. */
uint64_t efarm_test_rand(void);
uint64_t efarm_test_seed(void);

/*
 * The EFARM_DEVICE the tests that open endpoints run on: "sim" (efasim's drop-in,
 * loaded from EFARM_EFASIM_PATH), or what EFARM_TEST_DEVICE says. EFARM_TEST_DEVICE=efa
 * runs them through the system's rdma-core, on efasim's kernel front end when the
 * runner is started by `efasim-info --run=kernel`.
 */
const char *efarm_test_device(void);

/* TEST_TSAN: built with ThreadSanitizer (gcc says so one way, clang the other). */
#if defined(__SANITIZE_THREAD__)
#define TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TEST_TSAN 1
#endif
#endif
#ifndef TEST_TSAN
#define TEST_TSAN 0
#endif

#endif /* EFARM_TEST_H */
