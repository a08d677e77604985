/*
 * efarm's tunable table: defaults, sources and their precedence, the one
 * check (ranges, powers of 2, booleans, choices, lists, files), refusals that
 * stop the endpoint, the MPI lookup, and the printed table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "efarm_config.h"
#include "efarm_errno.h"
#include "efarm_log.h"
#include "efarm_proto.h"
#include "efarm_rma.h"
#include "efarm_test.h"
#include "proto_common.h"
#include "proto_internal.h"

/* The refusal text, or "" when everything was accepted. */
static const char *refusals(void)
{
    const char *msg = "";

    return efarm_config_status(&msg) ? msg : "";
}

EFARM_TEST(config_defaults)
{
    const struct efarm_config *c;

    unsetenv("EFARM_DEVICE");
    unsetenv("EFARM_MR_CACHE");
    c = efarm_config();
    EXPECT_TRUE(!strcmp(c->device, "auto"));
    EXPECT_TRUE(c->mr_cache);
    EXPECT_EQ(c->mr_cache_max_entries, 0);
    EXPECT_EQ(c->recvwin, 128);
    EXPECT_TRUE(!*c->iface);
    EXPECT_EQ(efarm_config_status(NULL), 0);
}

EFARM_TEST(config_overrides_and_refusals)
{
    const struct efarm_config *c;
    const char *msg;

    setenv("EFARM_DEVICE", "SIM", 1); /* any letter case; stored as the table spells it */
    setenv("EFARM_MR_CACHE", "off", 1);
    setenv("EFARM_MR_CACHE_MAX_ENTRIES", "1024", 1);
    setenv("EFARM_MR_CACHE_MAX_BYTES", "lots", 1); /* refused: the default stays */
    setenv("EFARM_NIC_VERBOSE", "maybe", 1);       /* refused */
    setenv("EFARM_RECVWIN", "100", 1);             /* refused: not a power of 2 */
    c = efarm_config();
    EXPECT_TRUE(!strcmp(c->device, "sim"));
    EXPECT_TRUE(!c->mr_cache);
    EXPECT_EQ(c->mr_cache_max_entries, 1024);
    EXPECT_EQ(c->mr_cache_max_bytes, 0);
    EXPECT_TRUE(!c->nic_verbose);
    EXPECT_EQ(c->recvwin, 128);
    EXPECT_EQ(efarm_config_status(&msg), -EINVAL);
    EXPECT_TRUE(strstr(msg, "EFARM_MR_CACHE_MAX_BYTES=lots refused: expected a decimal number "
                            "from 0 to 9223372036854775807") != NULL);
    EXPECT_TRUE(strstr(msg, "EFARM_NIC_VERBOSE=maybe refused: expected 0 or 1") != NULL);
    EXPECT_TRUE(strstr(msg, "EFARM_RECVWIN=100 refused: expected a power of 2 from 1 to 65536 "
                            "(default 128)") != NULL);
}

/* Each case: a value, and whether the check of that variable accepts it. */
EFARM_TEST(config_check_rules)
{
    static const struct {
        const char *name, *text;
        bool ok;
    } cases[] = {
        {"RECVWIN", "64", true},
        {"RECVWIN", "65536", true},
        {"RECVWIN", "131072", false},
        {"RECVWIN", "0", false},
        {"RECVWIN", "0x40", false}, /* decimal only, as MPICH reads its ints */
        {"RECVWIN", "-64", false},
        {"RECVWIN", " 64", false},
        {"RECVWIN", "", false},
        {"MAX_OPS", "65535", true},
        {"MAX_OPS", "65536", false},
        {"RNR_RETRY", "7", true},
        {"RNR_RETRY", "8", false},
        {"UNEXP_MAX_BYTES", "8589934592", true},            /* beyond MPI_T's int */
        {"UNEXP_MAX_BYTES", "18446744073709551616", false}, /* 2^64: overflow */
        {"RAILS", "4", true},
        {"RAILS", "5", false},
        {"RAILS", "0", false},
        {"MR_CACHE", "TRUE", true},
        {"MR_CACHE", "On", true},
        {"MR_CACHE", "2", false},
        {"DEVICE", "efa", true},
        {"DEVICE", "Auto", true},
        {"DEVICE", "efasim", false},
        {"LOG_LEVEL", "data", true},
        {"LOG_LEVEL", "verbose", false},
        {"PROTO", "runtread", true},
        {"PROTO", "long", false},
        {"RMA_PROTO", "auto", true},
        {"RMA_PROTO", "direct_write,short_rtr", true},
        {"RMA_PROTO", "direct_write,", false},
        {"RMA_PROTO", "auto,direct_write", false},
        {"RMA_PROTO", "direct_write,bogus", false},
        {"RMA_PROTO", "", false},
        {"PROFILE", "reference", true},
        {"PROFILE", "/proc/self/status", true}, /* a readable file */
        {"PROFILE", "/nonexistent/profile", false},
        {"PROFILE", "/tmp", false}, /* a directory is not a file */
        {"TOPOLOGY", "", true},
        {"TOPOLOGY", "/nonexistent.xml", false},
        {"EFASIM_PATH", "/tmp", true},
        {"EFASIM_PATH", "/proc/self/status", false},
        {"IFACE", "efa_0,efa_1", true},
    };
    char err[512];

    for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct efarm_config_var *v = efarm_config_var(cases[i].name);
        int ret;

        EXPECT_TRUE(v != NULL);
        err[0] = '\0';
        ret = efarm_config_check(v, cases[i].name, cases[i].text, err, sizeof(err));
        if ((ret == 0) != cases[i].ok)
            printf("  EFARM_%s=\"%s\": check %d, expected %s (%s)\n", cases[i].name, cases[i].text,
                   ret, cases[i].ok ? "accepted" : "refused", err);
        EXPECT_EQ(ret == 0, cases[i].ok);
        /* A refusal names the variable and the value. */
        if (ret)
            EXPECT_TRUE(strstr(err, cases[i].name) && strstr(err, "refused: expected"));
    }
}

/* MPICH's names for the control variable win over EFARM_*, as MPICH orders its own. */
EFARM_TEST(config_mpich_names_take_precedence)
{
    setenv("EFARM_RECVWIN", "64", 1);
    setenv("MPICH_CH4_EFARM_RECVWIN", "8", 1);
    setenv("MPIR_PARAM_CH4_EFARM_RECVWIN", "16", 1);
    setenv("MPIR_CVAR_CH4_EFARM_RECVWIN", "32", 1);
    setenv("MPICH_CH4_EFARM_MAX_OPS", "1000", 1);
    setenv("EFARM_MAX_OPS", "2000", 1);
    setenv("MPICH_CH4_EFARM_RX_WINDOW", "10", 1);
    setenv("MPIR_PARAM_CH4_EFARM_RX_WINDOW", "20", 1);
    setenv("MPIR_CVAR_CH4_EFARM_EAGER_MAX", "99999", 1); /* refused: beyond 65536 */
    EXPECT_EQ(efarm_config()->recvwin, 32);
    EXPECT_EQ(efarm_config()->max_ops, 1000);
    EXPECT_EQ(efarm_config()->rx_window, 20);
    EXPECT_EQ(efarm_config()->eager_max, 0);
    EXPECT_TRUE(strstr(refusals(), "MPIR_CVAR_CH4_EFARM_EAGER_MAX=99999 refused") != NULL);
}

struct lookup_ctx {
    const char *name, *text;
    unsigned calls;
};

static const char *lookup_one(const struct efarm_config_var *v, void *ctx_, char *buf, size_t len,
                              const char **source)
{
    struct lookup_ctx *ctx = ctx_;

    ctx->calls++;
    if (strcmp(v->name, ctx->name))
        return NULL;
    snprintf(buf, len, "%s", ctx->text);
    *source = "MPIR_CVAR_CH4_EFARM_X (MPI_T)";
    return buf;
}

/* Under MPI the control variable's value (an MPI_T write) comes last and is checked alike. */
EFARM_TEST(config_mpi_lookup)
{
    struct lookup_ctx ctx = {"RECVWIN", "16", 0};
    unsigned n;
    char *text = NULL;
    size_t len = 0;
    FILE *out;

    efarm_config_vars(&n);
    setenv("MPIR_CVAR_CH4_EFARM_RECVWIN", "32", 1);
    EXPECT_EQ(efarm_config()->recvwin, 32);
    EXPECT_EQ(efarm_config_load(lookup_one, &ctx), 0);
    EXPECT_EQ(efarm_config()->recvwin, 16);
    EXPECT_EQ(ctx.calls, n - 1); /* every variable but the test-only one */
    out = open_memstream(&text, &len);
    efarm_config_print(out);
    fclose(out);
    EXPECT_TRUE(strstr(text, "MPIR_CVAR_CH4_EFARM_X (MPI_T)") != NULL);
    free(text);

    ctx.text = "12";
    EXPECT_EQ(efarm_config_load(lookup_one, &ctx), -EINVAL);
    EXPECT_TRUE(strstr(refusals(), "MPIR_CVAR_CH4_EFARM_X (MPI_T)=12 refused") != NULL);
    EXPECT_EQ(efarm_config()->recvwin, 32); /* the refused one does not take */
    ctx.text = "64";
    EXPECT_EQ(efarm_config_load(lookup_one, &ctx), 0); /* a new load starts clean */
    EXPECT_EQ(efarm_config()->recvwin, 64);
}

EFARM_TEST(config_rules_between_variables)
{
    setenv("EFARM_RX_BUFFERS", "64", 1);
    setenv("EFARM_RX_RESERVE", "64", 1);
    setenv("EFARM_UNEXP_BYTES", "2000000", 1);
    setenv("EFARM_UNEXP_MAX_BYTES", "1000000", 1);
    setenv("EFARM_RNR_BACKOFF_US", "5000", 1);
    setenv("EFARM_RNR_BACKOFF_MAX_US", "4000", 1);
    EXPECT_TRUE(strstr(refusals(), "EFARM_RX_RESERVE=64 refused: expected less than "
                                   "EFARM_RX_BUFFERS (64)") != NULL);
    EXPECT_TRUE(strstr(refusals(), "EFARM_UNEXP_BYTES=2000000 refused") != NULL);
    EXPECT_TRUE(strstr(refusals(), "EFARM_RNR_BACKOFF_US=5000 refused") != NULL);
}

/* MPI_T's int carries what fits in 31 bits; larger ranges are strings that efarm parses. */
EFARM_TEST(config_cvar_types)
{
    EXPECT_TRUE(efarm_config_cvar_is_int(efarm_config_var("RECVWIN")));
    EXPECT_TRUE(efarm_config_cvar_is_int(efarm_config_var("MAX_POSTED")));
    EXPECT_TRUE(!efarm_config_cvar_is_int(efarm_config_var("UNEXP_MAX_BYTES")));
    EXPECT_TRUE(!efarm_config_cvar_is_int(efarm_config_var("MR_CACHE")));
    EXPECT_TRUE(!efarm_config_cvar_is_int(efarm_config_var("DEVICE")));
    EXPECT_TRUE(efarm_config_var("NO_SUCH") == NULL);
}

/* The table's choices are exactly what the code that maps them understands. */
EFARM_TEST(config_choices_match_the_parsers)
{
    static const char *const protos[] = {"eager", "medium", "longcts", "longread", "runtread"};
    static const char *const rma[] = {"direct_write", "eager_rtw", "longcts_rtw", "longread_rtw",
                                      "direct_read",  "short_rtr", "longcts_rtr"};
    static const char *const levels[] = {"error", "warn", "info", "debug", "trace", "data"};
    char err[512];
    uint32_t mask;

    for (unsigned i = 0; i < sizeof(protos) / sizeof(protos[0]); i++) {
        EXPECT_TRUE(efarm_proto_parse(protos[i]) >= 0);
        EXPECT_EQ(efarm_config_check(efarm_config_var("PROTO"), "P", protos[i], err, 512), 0);
    }
    EXPECT_EQ(efarm_proto_parse("auto"), -1);
    for (unsigned i = 0; i < sizeof(rma) / sizeof(rma[0]); i++) {
        EXPECT_EQ(efarm_rma_proto_parse(rma[i], &mask), 0);
        EXPECT_TRUE(mask != 0);
        EXPECT_EQ(efarm_config_check(efarm_config_var("RMA_PROTO"), "R", rma[i], err, 512), 0);
    }
    /* Every subprotocol name: the parser accepts it exactly when the tunable does. */
    for (unsigned k = 0; k < EFARM_PROTO_COUNT; k++) {
        const char *name = efarm_proto_name((enum efarm_proto_kind)k);

        efarm_test_context("two-sided %s", name);
        EXPECT_EQ(efarm_proto_parse(name), k);
        EXPECT_EQ(efarm_config_check(efarm_config_var("PROTO"), "P", name, err, 512), 0);
    }
    for (unsigned k = 0; k < EFARM_RMA_PROTO_COUNT; k++) {
        const char *name = efarm_rma_proto_name((enum efarm_rma_proto)k);
        bool parsed = efarm_rma_proto_parse(name, &mask) == 0;

        efarm_test_context("one-sided %s", name);
        EXPECT_EQ(parsed,
                  efarm_config_check(efarm_config_var("RMA_PROTO"), "R", name, err, 512) == 0);
        if (parsed)
            EXPECT_EQ(mask, 1u << k);
    }
    /* The atomics have one subprotocol each: nothing to force. */
    EXPECT_RET(efarm_rma_proto_parse("write_rta", &mask), -EINVAL);
    EXPECT_TRUE(efarm_config_check(efarm_config_var("RMA_PROTO"), "R", "write_rta", err, 512) != 0);
    for (unsigned i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
        EXPECT_EQ(efarm_config_check(efarm_config_var("LOG_LEVEL"), "L", levels[i], err, 512), 0);
        setenv("EFARM_LOG_LEVEL", levels[i], 1);
        efarm_config_load(NULL, NULL);
        EXPECT_EQ(efarm_log_level_init(), (int)i + 1);
    }
}

/* A refused value stops the endpoint: nothing runs with a configuration the user did not ask for.
 */
EFARM_TEST(config_refusal_stops_the_endpoint)
{
    struct efarm_ep *ep = NULL;

    proto_use_efasim();
    setenv("EFARM_RECVWIN", "100", 1);
    EXPECT_EQ(efarm_ep_open(NULL, &ep), -EINVAL);
    EXPECT_TRUE(ep == NULL);
}

/* EFARM_EAGER_MAX beyond one packet of the device is refused at open, not capped. */
EFARM_TEST(config_eager_max_beyond_the_device)
{
    struct efarm_ep *ep = NULL;

    proto_use_efasim();
    setenv("EFARM_EAGER_MAX", "65536", 1);
    EXPECT_EQ(efarm_config_status(NULL), 0); /* within the table's range */
    EXPECT_EQ(efarm_ep_open(NULL, &ep), -EINVAL);
    EXPECT_TRUE(ep == NULL);
    setenv("EFARM_EAGER_MAX", "1000", 1);
    efarm_config_load(NULL, NULL);
    EXPECT_EQ(efarm_ep_open(NULL, &ep), 0);
    EXPECT_TRUE(ep != NULL);
    efarm_ep_close(ep);
}

/*
 * A device with a small send queue (EFASIM_MAX_SQ_WR=16): the default
 * EFARM_SQ_DEPTH (256) fits itself to it; a depth the user set above it is
 * refused, not lowered; one within it is taken.
 */
EFARM_TEST(config_sq_depth_default_fits_device)
{
    struct efarm_ep *ep = NULL;

    proto_use_efasim();
    setenv("EFASIM_MAX_SQ_WR", "16", 1);
    EXPECT_EQ(efarm_ep_open(NULL, &ep), 0);
    EXPECT_TRUE(ep != NULL);
    efarm_ep_close(ep);
}

EFARM_TEST(config_sq_depth_set_beyond_device_refused)
{
    struct efarm_ep *ep = NULL;

    proto_use_efasim();
    setenv("EFASIM_MAX_SQ_WR", "16", 1);
    setenv("EFARM_SQ_DEPTH", "256", 1);
    EXPECT_EQ(efarm_config_status(NULL), 0);
    EXPECT_EQ(efarm_ep_open(NULL, &ep), -EINVAL);
    EXPECT_TRUE(ep == NULL);
    setenv("EFARM_SQ_DEPTH", "16", 1);
    efarm_config_load(NULL, NULL);
    EXPECT_EQ(efarm_ep_open(NULL, &ep), 0);
    EXPECT_TRUE(ep != NULL);
    efarm_ep_close(ep);
}

EFARM_TEST(config_table_printed_whole)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out;
    int lines = 0;

    setenv("EFARM_SQ_DEPTH", "0", 1);
    out = open_memstream(&text, &len);
    EXPECT_TRUE(out != NULL);
    efarm_config_print(out);
    fclose(out);
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
#define CONFIG_COUNT_(name, member, kind, def, lo, hi, choices, why) +1
#define SCRIPT_COUNT_(name, reader, what)                            +1
    /*
     * the header, one per tunable, a blank line, a heading and one per script
     * variable, then a blank line, a heading and the one refusal
     */
    EXPECT_EQ(lines, 1 + (0 EFARM_CONFIG_LIST(CONFIG_COUNT_)) + 2 +
                         (0 EFARM_SCRIPT_VAR_LIST(SCRIPT_COUNT_)) + 3);
#undef CONFIG_COUNT_
#undef SCRIPT_COUNT_
    EXPECT_TRUE(strstr(text, "\nEFARM_MPICH_PREFIX ") != NULL);
    EXPECT_TRUE(strstr(text, "\nEFARM_MPICH_SOURCE_* ") != NULL);
#define CONFIG_PRINTED_(name, member, kind, def, lo, hi, choices, why) \
    EXPECT_TRUE(strstr(text, "EFARM_" #name " ") != NULL);
    EFARM_CONFIG_LIST(CONFIG_PRINTED_)
#undef CONFIG_PRINTED_
    EXPECT_TRUE(strstr(text, "REFUSED") != NULL);
    EXPECT_TRUE(
        strstr(text, "EFARM_SQ_DEPTH=0 refused: expected a decimal number from 1 to 65536") !=
        NULL);
    free(text);
}

/* MPICH's reading of the same environment variable is not checked (and refused) twice. */
EFARM_TEST(config_mpi_lookup_same_as_environment)
{
    struct lookup_ctx ctx = {"MAX_OPS", "70000", 0};
    const char *msg, *first;

    setenv("MPIR_CVAR_CH4_EFARM_MAX_OPS", "70000", 1);
    EXPECT_EQ(efarm_config_load(lookup_one, &ctx), -EINVAL);
    efarm_config_status(&msg);
    first = strstr(msg, "MAX_OPS=70000 refused");
    EXPECT_TRUE(first != NULL);
    EXPECT_TRUE(strstr(first + 1, "MAX_OPS=70000 refused") == NULL);
    EXPECT_TRUE(strstr(msg, "MPIR_CVAR_CH4_EFARM_MAX_OPS=70000 refused") != NULL);
}

/* Log lines name the process, and the MPI rank once the glue has said it. */
EFARM_TEST(log_lines_carry_pid_and_rank)
{
    char path[] = "/tmp/efarm-log-XXXXXX", line[512], want[64];
    int fd = mkstemp(path), saved = dup(2);
    FILE *f;

    EXPECT_TRUE(fd >= 0 && saved >= 0);
    efarm_log_level(); /* the configuration's own messages (unknown EFARM_* variables) go first */
    fflush(stderr);
    dup2(fd, 2);
    efarm_log(EFARM_LOG_ERROR, "first");
    efarm_log_set_rank(3);
    efarm_log(EFARM_LOG_ERROR, "second");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    f = fdopen(fd, "r");
    rewind(f);
    snprintf(want, sizeof(want), "efarm[%d] error ", (int)getpid());
    EXPECT_TRUE(fgets(line, sizeof(line), f) && !strncmp(line, want, strlen(want)) &&
                strstr(line, ": first"));
    snprintf(want, sizeof(want), "efarm[%d rank 3] error ", (int)getpid());
    EXPECT_TRUE(fgets(line, sizeof(line), f) && !strncmp(line, want, strlen(want)) &&
                strstr(line, ": second"));
    fclose(f);
    unlink(path);
}
