/*
 * Logging: levels error, warn, info, debug, trace and data (data prints every
 * packet through the dissector). EFARM_LOG_LEVEL picks the level (default
 * warn). The level is checked before any formatting, and data-path warnings
 * go through efarm_log_ratelimited(), which prints a call site at most once a
 * second and says how many lines it held back.
 */
#ifndef EFARM_LOG_H
#define EFARM_LOG_H

#include <stddef.h>
#include <stdint.h>

enum efarm_log_level {
    EFARM_LOG_ERROR = 1,
    EFARM_LOG_WARN,
    EFARM_LOG_INFO,
    EFARM_LOG_DEBUG,
    EFARM_LOG_TRACE,
    EFARM_LOG_DATA,
};

extern int g_efarm_log_level; /* 0 until the first efarm_log_level() call */

/* The level in force (read from EFARM_LOG_LEVEL on first use). */
int efarm_log_level_init(void);

static inline int efarm_log_level(void)
{
    return g_efarm_log_level ? g_efarm_log_level : efarm_log_level_init();
}

/*
 * Every line starts "efarm[PID] LEVEL file:line:", or "efarm[PID rank R]"
 * once the MPI glue has said which rank this process is.
 */
void efarm_log_set_rank(int rank);

/* "efarm[PID]" or "efarm[PID rank R]": how this process's lines start. */
void efarm_log_who(char *buf, size_t len);

void efarm_log_emit(int level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define efarm_log(level, ...)                                         \
    do {                                                              \
        if ((level) <= efarm_log_level())                             \
            efarm_log_emit((level), __FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

/* Rate limit state of one call site. */
struct efarm_log_limit {
    uint64_t last_ns;
    uint64_t held;
};

/* Whether a rate-limited site may print now; counts the lines it holds back. */
int efarm_log_limit_pass(struct efarm_log_limit *limit, uint64_t *held_p);

#define efarm_log_ratelimited(level, fmt, ...)                                            \
    do {                                                                                  \
        static struct efarm_log_limit efarm_log_limit_;                                   \
        uint64_t efarm_log_held_;                                                         \
        if ((level) <= efarm_log_level() &&                                               \
            efarm_log_limit_pass(&efarm_log_limit_, &efarm_log_held_))                    \
            efarm_log_emit((level), __FILE__, __LINE__, fmt " (%llu similar lines held)", \
                           __VA_ARGS__, (unsigned long long)efarm_log_held_);             \
    } while (0)

#endif /* EFARM_LOG_H */
