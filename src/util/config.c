/* efarm's tunables (see efarm_config.h): the table, the one check, the sources. */
#include "efarm_config.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "efarm_log.h"

extern char **environ;

static const struct efarm_config_var g_vars[] = {
#define EFARM_CONFIG_ROW(name, member, kind, def, lo, hi, choices, why) \
    {#name, EFARM_CONFIG_##kind, def, lo, hi, choices, why},
    EFARM_CONFIG_LIST(EFARM_CONFIG_ROW)
#undef EFARM_CONFIG_ROW
};

#define NVARS (sizeof(g_vars) / sizeof(g_vars[0]))

static const struct efarm_script_var g_script_vars[] = {
#define EFARM_SCRIPT_ROW(name, reader, what) {#name, reader, what},
    EFARM_SCRIPT_VAR_LIST(EFARM_SCRIPT_ROW)
#undef EFARM_SCRIPT_ROW
};

#define NSCRIPT (sizeof(g_script_vars) / sizeof(g_script_vars[0]))

/* Where each member lives, in table order. */
static const size_t g_offsets[] = {
#define EFARM_CONFIG_OFFSET(name, member, kind, def, lo, hi, choices, why) \
    offsetof(struct efarm_config, member),
    EFARM_CONFIG_LIST(EFARM_CONFIG_OFFSET)
#undef EFARM_CONFIG_OFFSET
};

/* MPICH's environment names for a control variable, lowest precedence first. */
static const char *const g_mpich_prefixes[] = {"MPICH_CH4_EFARM_", "MPIR_PARAM_CH4_EFARM_",
                                               "MPIR_CVAR_CH4_EFARM_"};

struct var_state {
    char *text;      /* the value in force, owned */
    char source[64]; /* "default", or the name it was set by */
    bool refused;
};

static struct efarm_config g_config;
static struct var_state g_state[NVARS];
static char g_errors[4096];
static size_t g_errors_len;
static pthread_once_t g_config_once = PTHREAD_ONCE_INIT;

const struct efarm_config_var *efarm_config_vars(unsigned *n)
{
    *n = (unsigned)NVARS;
    return g_vars;
}

const struct efarm_script_var *efarm_script_vars(unsigned *n)
{
    *n = (unsigned)NSCRIPT;
    return g_script_vars;
}

const struct efarm_config_var *efarm_config_var(const char *name)
{
    for (unsigned i = 0; i < NVARS; i++) {
        if (!strcmp(g_vars[i].name, name))
            return &g_vars[i];
    }
    return NULL;
}

bool efarm_config_cvar_is_int(const struct efarm_config_var *v)
{
    return (v->kind == EFARM_CONFIG_U64 || v->kind == EFARM_CONFIG_POW2) && v->hi <= INT32_MAX;
}

/* Each "|"-separated choice in turn: *len its length; NULL after the last. */
static const char *choice_next(const char *p, size_t *len)
{
    if (!p || !*p)
        return NULL;
    *len = strcspn(p, "|");
    return p;
}

static const char *choice_after(const char *p, size_t len)
{
    return p[len] == '|' ? p + len + 1 : NULL;
}

/* The choice of v that word (length n) names, any letter case; NULL if none. */
static const char *choice_find(const struct efarm_config_var *v, const char *word, size_t n)
{
    size_t len;

    for (const char *c = choice_next(v->choices, &len); c;
         c = choice_next(choice_after(c, len), &len)) {
        if (len == n && !strncasecmp(c, word, n))
            return c;
    }
    return NULL;
}

static void choices_text(const char *choices, const char *skip, char *buf, size_t len)
{
    size_t used = 0, n;

    buf[0] = '\0';
    for (const char *c = choice_next(choices, &n); c && used < len;
         c = choice_next(choice_after(c, n), &n)) {
        if (skip && strlen(skip) == n && !strncmp(c, skip, n))
            continue;
        used += (size_t)snprintf(buf + used, len - used, "%s%.*s", used ? ", " : "", (int)n, c);
    }
}

void efarm_config_allowed(const struct efarm_config_var *v, char *buf, size_t len)
{
    char list[256];

    switch (v->kind) {
    case EFARM_CONFIG_U64:
    case EFARM_CONFIG_TEST:
        snprintf(buf, len, "a decimal number from %llu to %llu", (unsigned long long)v->lo,
                 (unsigned long long)v->hi);
        break;
    case EFARM_CONFIG_POW2:
        snprintf(buf, len, "a power of 2 from %llu to %llu", (unsigned long long)v->lo,
                 (unsigned long long)v->hi);
        break;
    case EFARM_CONFIG_BOOL:
        snprintf(buf, len, "0 or 1 (also no/yes, false/true, off/on)");
        break;
    case EFARM_CONFIG_ENUM:
        choices_text(v->choices, NULL, list, sizeof(list));
        snprintf(buf, len, "one of %s", list);
        break;
    case EFARM_CONFIG_LIST:
        choices_text(v->choices, "auto", list, sizeof(list));
        snprintf(buf, len, "auto, or a comma-separated list of %s", list);
        break;
    case EFARM_CONFIG_PROFILE:
        choices_text(v->choices, NULL, list, sizeof(list));
        snprintf(buf, len, "%s, or a readable file", list);
        break;
    case EFARM_CONFIG_FILE:
        snprintf(buf, len, "empty, or a readable file");
        break;
    case EFARM_CONFIG_DIR:
        snprintf(buf, len, "empty, or a directory");
        break;
    case EFARM_CONFIG_STR:
        snprintf(buf, len, "any text");
        break;
    }
}

static bool parse_bool(const char *text, bool *out)
{
    static const char *const yes[] = {"1", "yes", "true", "on"};
    static const char *const no[] = {"0", "no", "false", "off"};

    for (unsigned i = 0; i < 4; i++) {
        if (!strcasecmp(text, yes[i])) {
            *out = true;
            return true;
        }
        if (!strcasecmp(text, no[i])) {
            *out = false;
            return true;
        }
    }
    return false;
}

/* Decimal digits only, as MPICH reads an int control variable; no sign, no overflow. */
static bool parse_u64(const char *text, uint64_t *out)
{
    uint64_t v = 0;

    if (!*text)
        return false;
    for (const char *p = text; *p; p++) {
        if (!isdigit((unsigned char)*p) || v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
            return false;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *out = v;
    return true;
}

static bool readable_file(const char *path)
{
    struct stat st;

    return !stat(path, &st) && S_ISREG(st.st_mode) && !access(path, R_OK);
}

static bool check_list(const struct efarm_config_var *v, const char *text)
{
    const char *p = text;

    if (!strcasecmp(text, "auto"))
        return true;
    for (;;) {
        size_t n = strcspn(p, ",");

        if (n == 0 || (n == 4 && !strncasecmp(p, "auto", 4)) || !choice_find(v, p, n))
            return false;
        if (!p[n])
            return true;
        p += n + 1;
    }
}

static bool value_ok(const struct efarm_config_var *v, const char *text)
{
    struct stat st;
    uint64_t u;
    bool b;

    switch (v->kind) {
    case EFARM_CONFIG_U64:
    case EFARM_CONFIG_TEST:
        return parse_u64(text, &u) && u >= v->lo && u <= v->hi;
    case EFARM_CONFIG_POW2:
        return parse_u64(text, &u) && u >= v->lo && u <= v->hi && !(u & (u - 1));
    case EFARM_CONFIG_BOOL:
        return parse_bool(text, &b);
    case EFARM_CONFIG_ENUM:
        return choice_find(v, text, strlen(text)) != NULL;
    case EFARM_CONFIG_LIST:
        return check_list(v, text);
    case EFARM_CONFIG_PROFILE:
        return choice_find(v, text, strlen(text)) != NULL || readable_file(text);
    case EFARM_CONFIG_FILE:
        return !*text || readable_file(text);
    case EFARM_CONFIG_DIR:
        return !*text || (!stat(text, &st) && S_ISDIR(st.st_mode));
    case EFARM_CONFIG_STR:
        return true;
    }
    return false;
}

int efarm_config_check(const struct efarm_config_var *v, const char *source, const char *text,
                       char *err, size_t errlen)
{
    char allowed[320];

    if (value_ok(v, text))
        return 0;
    efarm_config_allowed(v, allowed, sizeof(allowed));
    snprintf(err, errlen, "%s=%s refused: expected %s (default %s)", source, text, allowed,
             *v->def ? v->def : "empty");
    return -EINVAL;
}

static void error_add(const char *msg)
{
    int n = snprintf(g_errors + g_errors_len, sizeof(g_errors) - g_errors_len, "%s%s",
                     g_errors_len ? "\n" : "", msg);

    if (n > 0)
        g_errors_len += (size_t)n < sizeof(g_errors) - g_errors_len
                            ? (size_t)n
                            : sizeof(g_errors) - g_errors_len - 1;
}

/* Take text from source for variable i when the check passes; record a refusal otherwise. */
static void offer(unsigned i, const char *source, const char *text)
{
    const struct efarm_config_var *v = &g_vars[i];
    struct var_state *st = &g_state[i];
    char err[512];
    char *copy;

    if (efarm_config_check(v, source, text, err, sizeof(err))) {
        error_add(err);
        st->refused = true;
        snprintf(st->source, sizeof(st->source), "%s", source);
        return;
    }
    copy = strdup(text);
    if (!copy) {
        error_add("efarm: out of memory reading the configuration");
        st->refused = true;
        return;
    }
    if (v->kind == EFARM_CONFIG_ENUM) {
        const char *c = choice_find(v, text, strlen(text));

        memcpy(copy, c, strlen(text)); /* the table's spelling */
    }
    free(st->text);
    st->text = copy;
    snprintf(st->source, sizeof(st->source), "%s", source);
}

/* Store variable i's text in force into the struct. */
static void store(unsigned i)
{
    const struct efarm_config_var *v = &g_vars[i];
    char *field = (char *)&g_config + g_offsets[i];
    const char *text = g_state[i].text;

    switch (v->kind) {
    case EFARM_CONFIG_U64:
    case EFARM_CONFIG_POW2:
    case EFARM_CONFIG_TEST: {
        uint64_t u = 0;

        parse_u64(text, &u);
        memcpy(field, &u, sizeof(u));
        break;
    }
    case EFARM_CONFIG_BOOL: {
        bool b = false;

        parse_bool(text, &b);
        memcpy(field, &b, sizeof(b));
        break;
    }
    default:
        memcpy(field, &text, sizeof(text));
        break;
    }
}

/* Rules between variables, once each has its value. */
static void cross_check(void)
{
    const struct efarm_config *c = &g_config;
    char msg[512];

    if (c->rx_reserve && c->rx_reserve >= c->rx_buffers) {
        snprintf(msg, sizeof(msg),
                 "EFARM_RX_RESERVE=%llu refused: expected less than EFARM_RX_BUFFERS (%llu)",
                 (unsigned long long)c->rx_reserve, (unsigned long long)c->rx_buffers);
        error_add(msg);
    }
    if (c->unexp_bytes > c->unexp_max_bytes) {
        snprintf(msg, sizeof(msg),
                 "EFARM_UNEXP_BYTES=%llu refused: expected at most EFARM_UNEXP_MAX_BYTES (%llu)",
                 (unsigned long long)c->unexp_bytes, (unsigned long long)c->unexp_max_bytes);
        error_add(msg);
    }
    if (c->rnr_backoff_us > c->rnr_backoff_max_us) {
        snprintf(msg, sizeof(msg),
                 "EFARM_RNR_BACKOFF_US=%llu refused: expected at most EFARM_RNR_BACKOFF_MAX_US "
                 "(%llu)",
                 (unsigned long long)c->rnr_backoff_us, (unsigned long long)c->rnr_backoff_max_us);
        error_add(msg);
    }
}

static bool env_known(const char *entry, const char *prefix)
{
    size_t plen = strlen(prefix);

    if (strncmp(entry, prefix, plen))
        return true; /* not ours to judge */
    for (unsigned i = 0; i < NVARS; i++) {
        size_t n = strlen(g_vars[i].name);

        if (!strncmp(entry + plen, g_vars[i].name, n) && entry[plen + n] == '=')
            return true;
    }
    if (strcmp(prefix, "EFARM_"))
        return false;
    for (unsigned i = 0; i < NSCRIPT; i++) {
        size_t n = strlen(g_script_vars[i].name);

        if (!strncmp(entry + plen, g_script_vars[i].name, n) &&
            (g_script_vars[i].name[n - 1] == '_' || entry[plen + n] == '='))
            return true;
    }
    return false;
}

static void load(efarm_config_lookup_fn lookup, void *ctx)
{
    char name[96], buf[4096];

    g_errors_len = 0;
    g_errors[0] = '\0';
    for (unsigned i = 0; i < NVARS; i++) {
        const struct efarm_config_var *v = &g_vars[i];
        const char *text, *source, *last = v->def;

        g_state[i].refused = false;
        free(g_state[i].text);
        g_state[i].text = NULL;
        offer(i, "default", v->def);
        snprintf(name, sizeof(name), "EFARM_%s", v->name);
        if ((text = getenv(name)))
            offer(i, name, last = text);
        if (v->kind != EFARM_CONFIG_TEST) {
            for (unsigned p = 0; p < sizeof(g_mpich_prefixes) / sizeof(g_mpich_prefixes[0]); p++) {
                snprintf(name, sizeof(name), "%s%s", g_mpich_prefixes[p], v->name);
                if ((text = getenv(name)))
                    offer(i, name, last = text);
            }
            /* The control variable: taken when it says something else (an MPI_T write). */
            source = NULL;
            if (lookup && (text = lookup(v, ctx, buf, sizeof(buf), &source)) && strcmp(text, last))
                offer(i, source ? source : "MPI_T", text);
        }
        store(i);
    }
    cross_check();

    for (char **e = environ; e && *e; e++) {
        const char *prefix = !strncmp(*e, "EFARM_", 6) ? "EFARM_" : NULL;

        for (unsigned p = 0; !prefix && p < sizeof(g_mpich_prefixes) / sizeof(g_mpich_prefixes[0]);
             p++) {
            if (!strncmp(*e, g_mpich_prefixes[p], strlen(g_mpich_prefixes[p])))
                prefix = g_mpich_prefixes[p];
        }
        if (prefix && !env_known(*e, prefix))
            fprintf(stderr, "efarm: unknown variable %.*s ignored (efarm-info lists them all)\n",
                    (int)strcspn(*e, "="), *e);
    }
}

static void load_env(void)
{
    load(NULL, NULL);
}

const struct efarm_config *efarm_config(void)
{
    pthread_once(&g_config_once, load_env);
    return &g_config;
}

int efarm_config_status(const char **msg)
{
    efarm_config();
    if (msg)
        *msg = g_errors;
    return g_errors_len ? -EINVAL : 0;
}

int efarm_config_load(efarm_config_lookup_fn lookup, void *ctx)
{
    efarm_config();
    load(lookup, ctx);
    efarm_log_level_init(); /* EFARM_LOG_LEVEL may have changed */
    return efarm_config_status(NULL);
}

bool efarm_config_is_default(const char *name)
{
    efarm_config();
    for (unsigned i = 0; i < NVARS; i++) {
        if (!strcmp(g_vars[i].name, name))
            return !strcmp(g_state[i].source, "default");
    }
    return false;
}

void efarm_config_print(FILE *out)
{
    char allowed[320];

    efarm_config();
    fprintf(out, "%-28s %-9s %-14s %-30s %s\n", "variable", "default", "value", "set by",
            "allowed; why");
    for (unsigned i = 0; i < NVARS; i++) {
        const struct efarm_config_var *v = &g_vars[i];
        const struct var_state *st = &g_state[i];
        char name[64];

        snprintf(name, sizeof(name), "EFARM_%s", v->name);
        efarm_config_allowed(v, allowed, sizeof(allowed));
        fprintf(out, "%-28s %-9s %-14s %-30s %s; %s\n", name, *v->def ? v->def : "\"\"",
                st->refused ? "REFUSED" : (*st->text ? st->text : "\"\""), st->source, allowed,
                v->why);
    }
    fprintf(out, "\nread by efarm's scripts and tests, not by the library:\n");
    for (unsigned i = 0; i < NSCRIPT; i++) {
        const struct efarm_script_var *v = &g_script_vars[i];
        const char *value = NULL;
        char name[64];

        snprintf(name, sizeof(name), "EFARM_%s%s", v->name,
                 v->name[strlen(v->name) - 1] == '_' ? "*" : "");
        if (!strchr(name, '*'))
            value = getenv(name);
        fprintf(out, "%-28s %-14s %s: %s\n", name, value ? value : "-", v->reader, v->what);
    }
    if (g_errors_len)
        fprintf(out, "\nrefused values (efarm will not start with them):\n%s\n", g_errors);
}
