/* efarm's tunables (see efarm_config.h). */
#include "efarm_config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

static struct efarm_config g_config;
static pthread_once_t g_config_once = PTHREAD_ONCE_INIT;

static void set_str(const char *name, const char *value, const char **out)
{
    (void)name;
    *out = value;
}

static void set_bool(const char *name, const char *value, bool *out)
{
    if (!strcmp(value, "1") || !strcmp(value, "yes") || !strcmp(value, "true"))
        *out = true;
    else if (!strcmp(value, "0") || !strcmp(value, "no") || !strcmp(value, "false"))
        *out = false;
    else
        fprintf(stderr, "efarm: EFARM_%s=%s ignored: expected 0 or 1\n", name, value);
}

static void set_u64(const char *name, const char *value, uint64_t *out)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(value, &end, 0);
    if (errno || end == value || *end || value[0] == '-')
        fprintf(stderr, "efarm: EFARM_%s=%s ignored: not a number\n", name, value);
    else
        *out = v;
}

#define set_STR  set_str
#define set_BOOL set_bool
#define set_U64  set_u64

static void config_read(void)
{
#define EFARM_CONFIG_READ(name, member, kind, def, why) \
    set_##kind(#name, def, &g_config.member);           \
    if (getenv("EFARM_" #name))                         \
        set_##kind(#name, getenv("EFARM_" #name), &g_config.member);
    EFARM_CONFIG_LIST(EFARM_CONFIG_READ)
#undef EFARM_CONFIG_READ

    for (char **e = environ; e && *e; e++) {
        bool known = false;

        if (strncmp(*e, "EFARM_", 6))
            continue;
#define EFARM_CONFIG_KNOWN(name, member, kind, def, why) \
    known |= !strncmp(*e + 6, #name "=", sizeof(#name));
        EFARM_CONFIG_LIST(EFARM_CONFIG_KNOWN)
#undef EFARM_CONFIG_KNOWN
        if (!known)
            fprintf(stderr, "efarm: unknown variable %.*s ignored (efarm-info lists them all)\n",
                    (int)strcspn(*e, "="), *e);
    }
}

const struct efarm_config *efarm_config(void)
{
    pthread_once(&g_config_once, config_read);
    return &g_config;
}

void efarm_config_print(FILE *out)
{
    efarm_config();
    fprintf(out, "%-28s %-8s %-14s %s\n", "variable", "default", "value", "why");
#define EFARM_CONFIG_PRINT(name, member, kind, def, why)                       \
    fprintf(out, "%-28s %-8s %-14s %s\n", "EFARM_" #name, *def ? def : "\"\"", \
            getenv("EFARM_" #name) ? getenv("EFARM_" #name) : (*def ? def : "\"\""), why);
    EFARM_CONFIG_LIST(EFARM_CONFIG_PRINT)
#undef EFARM_CONFIG_PRINT
}
