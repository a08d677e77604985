/*
 * Cost of matching in the software tag matcher (efarm_tm.h) against the
 * depth of the posted-receive queue.
 *
 * The queue is filled with `depth` receives, each with its own tag, from a
 * few sources; a given share of them use ANY_SOURCE. Then, round after
 * round, a batch of messages arrives for distinct random posted receives
 * (each matches one: that is the figure "match"), and identical receives
 * are posted again (the figure "post"), so the depth never drops below
 * depth minus one batch (a batch is at most 1/8 of the depth, or 1). Batches
 * are timed as a whole; the cost of reading the clock is measured first and
 * taken off. Printed: ns per match, ns per post, best of three runs.
 *
 * `bench-tm pair N` instead runs N times the pair of a ping-pong's receive:
 * a receive posted for one exact key with nothing waiting, then the message
 * for it (efarm_tm_post + efarm_tm_match_posted), untimed. It is meant for
 * counting instructions: valgrind --tool=callgrind bench/bench-tm pair 100000
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "efarm_tm.h"

#define BENCH_SOURCES 16
#define BENCH_MATCHES (4u << 20)
#define BENCH_RUNS    3

struct bench_recv {
    int32_t source; /* EFARM_TM_ANY_SOURCE or a rank. */
    int32_t tag;
};

struct bench_result {
    double match_ns, post_ns;
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

/* The cost of one clock reading, the least of many. */
static double bench_clock_cost(void)
{
    double best = 1e9;

    for (int i = 0; i < 10000; i++) {
        double t0 = bench_now_ns(), t1 = bench_now_ns();

        if (t1 - t0 < best)
            best = t1 - t0;
    }
    return best;
}

/* A random order of the receives (Fisher-Yates), walked in batches. */
static void bench_shuffle(unsigned *order, unsigned n, uint64_t *state)
{
    for (unsigned i = 0; i < n; i++)
        order[i] = i;
    for (unsigned i = n; i > 1; i--) {
        unsigned j = (unsigned)(bench_rand(state) % i), t = order[i - 1];

        order[i - 1] = order[j];
        order[j] = t;
    }
}

/* One batch: its messages arrive, then its receives are posted again. */
static int bench_batch(struct efarm_tm *tm, struct bench_recv *recvs, const unsigned *batch,
                       unsigned n, unsigned step, double clock_cost, struct bench_result *sum)
{
    efarm_tm_handle_t handle;
    double t0, t1, t2;
    void *got;
    int ret;

    t0 = bench_now_ns();
    for (unsigned k = 0; k < n; k++) {
        struct bench_recv *recv = &recvs[batch[k]];
        int32_t source = recv->source >= 0 ? recv->source : (int32_t)((step + k) % BENCH_SOURCES);

        ret = efarm_tm_arrive(tm, 0, source, recv->tag, NULL, &got);
        if (ret != EFARM_TM_MATCHED || got != recv)
            return ret < 0 ? ret : -EPROTO;
    }
    t1 = bench_now_ns();
    for (unsigned k = 0; k < n; k++) {
        struct bench_recv *recv = &recvs[batch[k]];

        ret = efarm_tm_post(tm, 0, recv->source, recv->tag, recv, &handle, &got);
        if (ret != EFARM_TM_QUEUED)
            return ret < 0 ? ret : -EPROTO;
    }
    t2 = bench_now_ns();
    sum->match_ns += t1 - t0 - clock_cost;
    sum->post_ns += t2 - t1 - clock_cost;
    return 0;
}

/* ns per match and per post at one depth; 0 or a negative errno. */
static int bench_run(unsigned depth, unsigned any_source_percent, double clock_cost,
                     struct bench_result *res_p)
{
    unsigned batch = depth / 8 ? (depth / 8 < 512 ? depth / 8 : 512) : 1, done = 0;
    struct bench_result sum = {0, 0};
    uint64_t state = 0x9e3779b97f4a7c15ull;
    struct bench_recv *recvs = calloc(depth, sizeof(*recvs));
    unsigned *order = calloc(depth, sizeof(*order));
    efarm_tm_handle_t handle;
    struct efarm_tm *tm = NULL;
    void *got;
    int ret = -ENOMEM;

    if (recvs == NULL || order == NULL || (ret = efarm_tm_open(depth, 1024, &tm)) < 0)
        goto out;
    for (unsigned i = 0; i < depth; i++) {
        recvs[i].tag = (int32_t)i;
        recvs[i].source = bench_rand(&state) % 100 < any_source_percent
                              ? EFARM_TM_ANY_SOURCE
                              : (int32_t)(i % BENCH_SOURCES);
        efarm_tm_post(tm, 0, recvs[i].source, recvs[i].tag, &recvs[i], &handle, &got);
    }
    while (done < BENCH_MATCHES && ret >= 0) {
        bench_shuffle(order, depth, &state);
        for (unsigned first = 0; first + batch <= depth && done < BENCH_MATCHES; first += batch) {
            ret = bench_batch(tm, recvs, order + first, batch, done, clock_cost, &sum);
            if (ret < 0)
                break;
            done += batch;
        }
    }
    if (ret >= 0) {
        res_p->match_ns = sum.match_ns / done;
        res_p->post_ns = sum.post_ns / done;
        ret = 0;
    }
out:
    efarm_tm_close(tm);
    free(order);
    free(recvs);
    return ret;
}

/* N posts of one exact key, each matched by the message for it; 0 or a negative errno. */
static __attribute__((noinline)) int bench_pair(struct efarm_tm *tm, unsigned n)
{
    efarm_tm_handle_t handle;
    void *got;
    int ret;

    for (unsigned i = 0; i < n; i++) {
        ret = efarm_tm_post(tm, 3, 1, 42, tm, &handle, &got);
        if (ret != EFARM_TM_QUEUED)
            return ret < 0 ? ret : -EPROTO;
        ret = efarm_tm_match_posted(tm, 3, 1, 42, &got);
        if (ret != EFARM_TM_MATCHED || got != tm)
            return ret < 0 ? ret : -EPROTO;
    }
    return 0;
}

static int bench_pair_main(unsigned n)
{
    struct efarm_tm *tm;
    int ret;

    /* EFARM_MAX_POSTED's default; the unexpected side is never used. */
    ret = efarm_tm_open(65536, 4096, &tm);
    if (ret < 0)
        return ret;
    ret = bench_pair(tm, n);
    efarm_tm_close(tm);
    if (ret == 0)
        printf("bench-tm pair: %u post + match_posted pairs\n", n);
    return ret;
}

int main(int argc, char **argv)
{
    static const unsigned depths[] = {1, 64, 1024, 16384};
    static const unsigned percents[] = {0, 10};
    double clock_cost;

    if (argc == 3 && strcmp(argv[1], "pair") == 0) {
        int ret = bench_pair_main((unsigned)strtoul(argv[2], NULL, 0));

        if (ret < 0)
            printf("bench-tm pair failed: %d\n", ret);
        return ret < 0;
    }
    if (argc != 1) {
        fprintf(stderr, "usage: %s [pair N]\n", argv[0]);
        return 2;
    }
    clock_cost = bench_clock_cost();

    printf("efarm_tm: ns per match (a message matching a posted receive) and per post, "
           "best of %d runs\n",
           BENCH_RUNS);
    printf("%8s | %-21s | %-21s\n", "depth", "0% ANY_SOURCE", "10% ANY_SOURCE");
    printf("%8s | %10s %10s | %10s %10s\n", "", "match", "post", "match", "post");
    for (unsigned d = 0; d < sizeof(depths) / sizeof(depths[0]); d++) {
        printf("%8u", depths[d]);
        for (unsigned p = 0; p < sizeof(percents) / sizeof(percents[0]); p++) {
            struct bench_result best = {1e9, 1e9};

            for (int run = 0; run < BENCH_RUNS; run++) {
                struct bench_result r;
                int ret = bench_run(depths[d], percents[p], clock_cost, &r);

                if (ret < 0) {
                    printf("\nbench-tm: depth %u failed: %d\n", depths[d], ret);
                    return 1;
                }
                if (r.match_ns < best.match_ns)
                    best.match_ns = r.match_ns;
                if (r.post_ns < best.post_ns)
                    best.post_ns = r.post_ns;
            }
            printf(" | %10.1f %10.1f", best.match_ns, best.post_ns);
        }
        printf("\n");
    }
    return 0;
}
