/*
 * Cost of one match in the software tag matcher (efarm_tm.h) against the
 * depth of the posted-receive queue.
 *
 * The queue is filled with `depth` receives, each with its own tag, from a
 * few sources; a given share of them use ANY_SOURCE. Each timed step is one
 * message arriving for a random posted receive (which it matches) followed by
 * the re-posting of an identical receive, so the depth stays constant. The
 * figure printed is ns per step (arrive + post).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "efarm_tm.h"

#define BENCH_SOURCES 16
#define BENCH_STEPS   (4u << 20)

struct bench_recv {
    int32_t source; /* EFARM_TM_ANY_SOURCE or a rank. */
    int32_t tag;
};

static uint64_t bench_rand(uint64_t *state)
{
    uint64_t x = *state;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1dull;
}

static double bench_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Returns ns per step, or a negative errno. */
static double bench_run(unsigned depth, unsigned any_source_percent)
{
    struct bench_recv *recvs;
    struct efarm_tm *tm;
    uint64_t state = 0x9e3779b97f4a7c15ull;
    efarm_tm_handle_t handle;
    void *got;
    double start, stop;
    int ret;

    recvs = calloc(depth, sizeof(*recvs));
    if (recvs == NULL)
        return -ENOMEM;
    ret = efarm_tm_open(depth, 1024, &tm);
    if (ret < 0) {
        free(recvs);
        return ret;
    }
    for (unsigned i = 0; i < depth; i++) {
        recvs[i].tag = (int32_t)i;
        recvs[i].source = bench_rand(&state) % 100 < any_source_percent
                              ? EFARM_TM_ANY_SOURCE
                              : (int32_t)(i % BENCH_SOURCES);
        efarm_tm_post(tm, 0, recvs[i].source, recvs[i].tag, &recvs[i], &handle, &got);
    }

    start = bench_now_ns();
    for (unsigned step = 0; step < BENCH_STEPS; step++) {
        struct bench_recv *recv = &recvs[bench_rand(&state) % depth];
        int32_t source = recv->source >= 0 ? recv->source : (int32_t)(step % BENCH_SOURCES);

        ret = efarm_tm_arrive(tm, 0, source, recv->tag, NULL, &got);
        if (ret != EFARM_TM_MATCHED || got != recv)
            break;
        ret = efarm_tm_post(tm, 0, recv->source, recv->tag, recv, &handle, &got);
        if (ret != EFARM_TM_QUEUED)
            break;
    }
    stop = bench_now_ns();
    efarm_tm_close(tm);
    free(recvs);
    if (ret < 0)
        return ret;
    if (ret != EFARM_TM_QUEUED)
        return -EPROTO;
    return (stop - start) / BENCH_STEPS;
}

int main(void)
{
    static const unsigned depths[] = {1, 64, 1024, 16384};
    static const unsigned percents[] = {0, 10};

    printf("efarm_tm: ns per match (arrive matching a posted receive + re-post)\n");
    printf("%8s %16s %16s\n", "depth", "0% ANY_SOURCE", "10% ANY_SOURCE");
    for (unsigned d = 0; d < sizeof(depths) / sizeof(depths[0]); d++) {
        printf("%8u", depths[d]);
        for (unsigned p = 0; p < sizeof(percents) / sizeof(percents[0]); p++) {
            double ns = bench_run(depths[d], percents[p]);

            if (ns < 0) {
                printf("\nbench_tm: depth %u failed: %d\n", depths[d], (int)ns);
                return 1;
            }
            printf(" %16.1f", ns);
        }
        printf("\n");
    }
    return 0;
}
