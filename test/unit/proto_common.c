/* Shared helpers of the protocol-engine tests (see proto_common.h). */
#include "proto_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "efarm_errno.h"
#include "efarm_test.h"

void proto_use_efasim(void)
{
    setenv("EFARM_DEVICE", efarm_test_device(), 1);
    setenv("EFARM_EFASIM_PATH", EFARM_TEST_EFASIM_PATH, 1);
}

double proto_now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void proto_pair_open(struct proto_pair *p, const struct efarm_ep_attr *attr_a,
                     const struct efarm_ep_attr *attr_b)
{
    uint8_t raw_a[EFARM_RAW_ADDR_LEN], raw_b[EFARM_RAW_ADDR_LEN];

    EXPECT_RET(efarm_ep_open(attr_a, &p->a), 0);
    EXPECT_RET(efarm_ep_open(attr_b, &p->b), 0);
    efarm_ep_addr(p->a, raw_a);
    efarm_ep_addr(p->b, raw_b);
    EXPECT_RET(efarm_av_insert(p->a, raw_b, &p->a_to_b), 0);
    EXPECT_RET(efarm_av_insert(p->b, raw_a, &p->b_to_a), 0);
}

void proto_pair_close(struct proto_pair *p)
{
    efarm_ep_close(p->a);
    efarm_ep_close(p->b);
}

void proto_pair_wait(struct proto_pair *p, struct efarm_req *const *reqs, unsigned n,
                     double timeout_s)
{
    struct efarm_ep *const eps[] = {p->a, p->b};

    proto_wait(eps, 2, reqs, n, timeout_s);
}

void proto_wait(struct efarm_ep *const *eps, unsigned neps, struct efarm_req *const *reqs,
                unsigned n, double timeout_s)
{
    double deadline = proto_now_s() + timeout_s;

    for (;;) {
        unsigned done = 0;

        for (unsigned i = 0; i < n; i++)
            done += reqs[i]->done;
        if (done == n)
            return;
        if (proto_now_s() > deadline)
            efarm_test_fail(__FILE__, __LINE__, "%u of %u requests done after %.0f s", done, n,
                            timeout_s);
        for (unsigned i = 0; i < neps; i++)
            EXPECT_TRUE(efarm_ep_progress(eps[i]) >= 0);
    }
}

void proto_pair_spin(struct proto_pair *p, unsigned us)
{
    double end = proto_now_s() + us / 1e6;

    while (proto_now_s() < end) {
        EXPECT_TRUE(efarm_ep_progress(p->a) >= 0);
        EXPECT_TRUE(efarm_ep_progress(p->b) >= 0);
    }
}

void proto_fill(uint8_t *buf, uint64_t n, uint64_t seed)
{
    for (uint64_t i = 0; i < n; i++)
        buf[i] = proto_pattern(seed, i);
}

void proto_expect_pattern(const uint8_t *buf, uint64_t n, uint64_t seed)
{
    for (uint64_t i = 0; i < n; i++) {
        if (buf[i] != proto_pattern(seed, i))
            efarm_test_fail(__FILE__, __LINE__,
                            "byte %llu of %llu is %#x, expected %#x (pattern %llu)",
                            (unsigned long long)i, (unsigned long long)n, buf[i],
                            proto_pattern(seed, i), (unsigned long long)seed);
    }
}

void proto_tmp_path(char *buf, size_t n, const char *what)
{
    const char *dir = getenv("TMPDIR");

    snprintf(buf, n, "%s/efarm-unit.%d.%s.log", dir && *dir ? dir : "/tmp", (int)getpid(), what);
}

int proto_stderr_capture(const char *path)
{
    FILE *f = fopen(path, "w");
    int saved;

    EXPECT_TRUE(f != NULL);
    fflush(stderr);
    saved = dup(2);
    EXPECT_TRUE(saved >= 0);
    EXPECT_TRUE(dup2(fileno(f), 2) == 2);
    fclose(f);
    return saved;
}

void proto_stderr_restore(int saved)
{
    fflush(stderr);
    EXPECT_TRUE(dup2(saved, 2) == 2);
    close(saved);
}

unsigned proto_file_count(const char *path, const char *needle)
{
    char line[4096];
    unsigned n = 0;
    FILE *f;

    fflush(stderr);
    f = fopen(path, "r");
    EXPECT_TRUE(f != NULL);
    while (fgets(line, sizeof(line), f)) {
        if (strstr(line, needle))
            n++;
    }
    fclose(f);
    return n;
}
