/* Logging (see efarm_log.h). */
#include "efarm_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "efarm_capture.h"
#include "efarm_config.h"
#include "efarm_time.h"

int g_efarm_log_level;

/* Who this process is, after the pid on every line: "" or " rank 3" (efarm_log_set_rank). */
static char g_who[32];

void efarm_log_set_rank(int rank)
{
    snprintf(g_who, sizeof(g_who), " rank %d", rank);
    efarm_capture_set_rank(rank);
}

static const char *const g_level_names[] = {"none",  "error", "warn", "info",
                                            "debug", "trace", "data"};

int efarm_log_level_init(void)
{
    const char *want = efarm_config()->log_level;
    int level = EFARM_LOG_WARN;
    unsigned i;

    for (i = 1; i < sizeof(g_level_names) / sizeof(g_level_names[0]); i++) {
        if (!strcasecmp(want, g_level_names[i]))
            break;
    }
    /* efarm_config checked the name: it is one of the table's. */
    if (i < sizeof(g_level_names) / sizeof(g_level_names[0]))
        level = (int)i;
    g_efarm_log_level = level;
    return level;
}

void efarm_log_who(char *buf, size_t len)
{
    snprintf(buf, len, "efarm[%d%s]", (int)getpid(), g_who);
}

void efarm_log_emit(int level, const char *file, int line, const char *fmt, ...)
{
    const char *base = strrchr(file, '/');
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "efarm[%d%s] %s %s:%d: %s\n", (int)getpid(), g_who,
            level >= 1 && level <= EFARM_LOG_DATA ? g_level_names[level] : "?",
            base ? base + 1 : file, line, msg);
}

int efarm_log_limit_pass(struct efarm_log_limit *limit, uint64_t *held_p)
{
    uint64_t now = efarm_now_ns();

    if (limit->last_ns != 0 && now - limit->last_ns < 1000000000ull) {
        limit->held++;
        return 0;
    }
    *held_p = limit->held;
    limit->held = 0;
    limit->last_ns = now;
    return 1;
}
