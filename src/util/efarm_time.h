/*
 * The monotonic clock in nanoseconds: timers, back-off, liveness and rate
 * limits. A vDSO call, no system call.
 */
#ifndef EFARM_TIME_H
#define EFARM_TIME_H

#include <stdint.h>
#include <time.h>

static inline uint64_t efarm_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif /* EFARM_TIME_H */
