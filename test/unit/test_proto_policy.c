/*
 * The selection policy (issue 13): profiles and the thresholds they give
 * (proto_profile.c), the rule table with every input it takes
 * (proto_select.c: table in, choice and its why out), and the engine using
 * them: a profile file named by the endpoint attribute, the registration
 * cache deciding between the registered and unregistered read thresholds,
 * EFARM_SEND_TEMP_BUF, medium's fan-in bound, and the caller's hints (fan-in,
 * a subprotocol for one send).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "efarm_mr_cache.h"
#include "efarm_proto.h"
#include "efarm_test.h"
#include "proto_common.h"
#include "proto_internal.h"
#include "proto_select.h"

/* Linear costs (us = a + size / b) sampled at powers of two, as a calibration would write them. */
struct line {
    const char *proto;
    double a, b;
};

static double line_cost(const struct line *l, double size)
{
    return l->a + size / l->b;
}

static void write_profile(const char *path, const struct line *lines, unsigned n, double reg_base,
                          double reg_per_mib)
{
    FILE *f = fopen(path, "w");

    EXPECT_TRUE(f != NULL);
    fprintf(f, "# written by test_proto_policy.c\nname linear\nregister %g %g\n", reg_base,
            reg_per_mib);
    for (unsigned i = 0; i < n; i++)
        for (uint64_t s = 16384; s <= (64u << 20); s *= 2)
            fprintf(f, "%s %llu %.6f   # a comment\n", lines[i].proto, (unsigned long long)s,
                    line_cost(&lines[i], (double)s));
    fclose(f);
}

/* Append stream curves ("stream PROTO SIZE US") to a profile written by write_profile. */
static void append_stream(const char *path, const struct line *lines, unsigned n)
{
    FILE *f = fopen(path, "a");

    EXPECT_TRUE(f != NULL);
    for (unsigned i = 0; i < n; i++)
        for (uint64_t s = 16384; s <= (64u << 20); s *= 2)
            fprintf(f, "stream %s %llu %.6f\n", lines[i].proto, (unsigned long long)s,
                    line_cost(&lines[i], (double)s));
    fclose(f);
}

/* Where a + n/b = c + n/d, rounded down. */
static uint64_t meet(double a, double b, double c, double d)
{
    return (uint64_t)((c - a) / (1 / b - 1 / d)); /* positive: truncation is floor */
}

static double absd(double x)
{
    return x < 0 ? -x : x;
}

static double min2(double a, double b)
{
    return a < b ? a : b;
}

static const struct line g_lines[] = {
    {"medium", 10, 1000}, {"longcts", 20, 1100}, {"longread", 40, 1300}, {"runtread", 45, 1300}};

EFARM_TEST(policy_profile_file_thresholds_at_the_crossings)
{
    char path[256];
    struct efarm_profile pr;
    struct efarm_thresholds t;
    /*
     * Medium must be 5% cheaper than long-CTS: 1.05 (10 + n/1000) = 20 + n/1100
     * at 67419; longread = longcts at 143000 (medium is dearer there).
     */
    uint64_t mm = meet(10.5, 1000 / 1.05, 20, 1100), rm = meet(20, 1100, 40, 1300);
    /* Unregistered: longread pays 30 us + 100 us per MiB more. */
    double cold_b = 1 / (1.0 / 1300 + 100.0 / 1048576);
    uint64_t rc = meet(20, 1100, 70, cold_b);

    proto_tmp_path(path, sizeof(path), "profile");
    write_profile(path, g_lines, 4, 30, 100);
    EXPECT_RET(efarm_profile_load(path, "efasim_0", &pr), 0);
    EXPECT_TRUE(!strcmp(pr.name, "linear"));
    EXPECT_EQ(pr.npoints, 4 * 13);
    EXPECT_TRUE(absd(pr.reg_base_us - 30) < 1e-9 && absd(pr.reg_us_per_mib - 100) < 1e-9);
    efarm_profile_derive(&pr, 8908, &t);
    efarm_test_context("medium_max %llu (want %llu), read_min %llu (%llu), cold %llu (%llu)",
                       (unsigned long long)t.medium_max, (unsigned long long)mm,
                       (unsigned long long)t.read_min, (unsigned long long)rm,
                       (unsigned long long)t.read_min_cold, (unsigned long long)rc);
    EXPECT_TRUE(t.medium_max + 1 >= mm && t.medium_max <= mm + 1);
    EXPECT_TRUE(t.read_min + 1 >= rm && t.read_min <= rm + 2);
    EXPECT_TRUE(t.read_min_cold + 2 >= rc && t.read_min_cold <= rc + 2);
    EXPECT_TRUE(t.read_min_cold > t.read_min);
    /* Runting read is always 5 us dearer than long-read: never. */
    EXPECT_EQ(t.runt_min, UINT64_MAX);
    /* The interpolation reproduces the lines between the measured sizes. */
    EXPECT_TRUE(absd(efarm_profile_cost(&pr, EFARM_PROTO_MEDIUM, 100000) -
                     line_cost(&g_lines[0], 100000)) < 1e-3);
    EXPECT_TRUE(isinf(efarm_profile_cost(&pr, EFARM_PROTO_EAGER, 100)));
    unlink(path);
}

/* A runting read that wins from some size on at every larger size starts there. */
EFARM_TEST(policy_profile_runt_from_where_it_keeps_winning)
{
    const struct line lines[] = {{"medium", 10, 1000},
                                 {"longcts", 20, 1100},
                                 {"longread", 40, 1300},
                                 {"runtread", 30, 1250}};
    struct efarm_profile pr;
    struct efarm_thresholds t;
    char path[256];
    /* runtread < longread while 30 + n/1250 < 40 + n/1300: up to 325000 bytes; never after. */
    proto_tmp_path(path, sizeof(path), "profile");
    write_profile(path, lines, 4, 0, 0);
    EXPECT_RET(efarm_profile_load(path, NULL, &pr), 0);
    efarm_profile_derive(&pr, 8908, &t);
    EXPECT_EQ(t.runt_min, UINT64_MAX); /* it stops winning: not from anywhere */
    unlink(path);

    const struct line better[] = {{"medium", 10, 1000},
                                  {"longcts", 20, 1100},
                                  {"longread", 40, 1300},
                                  {"runtread", 60, 1400}};
    uint64_t from = meet(40, 1300, 60, 1400); /* 1820000: dearer below, cheaper above */

    write_profile(path, better, 4, 0, 0);
    EXPECT_RET(efarm_profile_load(path, NULL, &pr), 0);
    efarm_profile_derive(&pr, 8908, &t);
    efarm_test_context("runt_min %llu, want %llu", (unsigned long long)t.runt_min,
                       (unsigned long long)from);
    EXPECT_TRUE(t.runt_min + 2 >= from && t.runt_min <= from + 2);
    unlink(path);
}

/*
 * Stream curves give the thresholds while sends to the peer are in flight,
 * at their own crossings; without them there is no stream bound and the
 * read thresholds are the latency ones.
 */
EFARM_TEST(policy_profile_stream_curves)
{
    /* In a stream medium gains less on long-CTS and long-read wins earlier. */
    const struct line stream[] = {{"medium", 2, 1000}, {"longcts", 4, 1050}, {"longread", 8, 1200}};
    /*
     * 1.05 (2 + n/1000) = 4 + n/1050; long-read beats long-CTS from 4 + n/1050 =
     * 8 + n/1200 (33600) and medium from 2 + n/1000 = 8 + n/1200 (36000).
     */
    uint64_t mm = meet(2.1, 1000 / 1.05, 4, 1050), rm = meet(2, 1000, 8, 1200);
    double cold_b = 1 / (1.0 / 1200 + 100.0 / 1048576);
    uint64_t rc = meet(4, 1050, 38, cold_b);
    struct efarm_profile pr;
    struct efarm_thresholds t, latency;
    char path[256];

    proto_tmp_path(path, sizeof(path), "profile");
    write_profile(path, g_lines, 4, 30, 100);
    EXPECT_RET(efarm_profile_load(path, NULL, &pr), 0);
    efarm_profile_derive(&pr, 8908, &latency);
    EXPECT_EQ(latency.medium_max_stream, UINT64_MAX);
    EXPECT_EQ(latency.read_min_stream, latency.read_min);
    EXPECT_EQ(latency.read_min_stream_cold, latency.read_min_cold);
    append_stream(path, stream, 3);
    EXPECT_RET(efarm_profile_load(path, NULL, &pr), 0);
    EXPECT_EQ(pr.npoints, 7 * 13);
    efarm_profile_derive(&pr, 8908, &t);
    efarm_test_context(
        "stream: medium_max %llu (want %llu), read_min %llu (%llu), cold %llu (%llu)",
        (unsigned long long)t.medium_max_stream, (unsigned long long)mm,
        (unsigned long long)t.read_min_stream, (unsigned long long)rm,
        (unsigned long long)t.read_min_stream_cold, (unsigned long long)rc);
    EXPECT_TRUE(t.medium_max_stream + 1 >= mm && t.medium_max_stream <= mm + 1);
    EXPECT_TRUE(t.read_min_stream + 2 >= rm && t.read_min_stream <= rm + 2);
    EXPECT_TRUE(t.read_min_stream_cold + 2 >= rc && t.read_min_stream_cold <= rc + 2);
    /* The latency thresholds do not move. */
    EXPECT_EQ(t.medium_max, latency.medium_max);
    EXPECT_EQ(t.read_min, latency.read_min);
    EXPECT_EQ(t.runt_min, latency.runt_min);
    EXPECT_TRUE(absd(efarm_profile_cost(&pr, EFARM_PROTO_LONGCTS | EFARM_PROFILE_STREAM, 100000) -
                     line_cost(&stream[1], 100000)) < 1e-3);
    unlink(path);
    EXPECT_RET(efarm_profile_load("reference", NULL, &pr), 0);
    efarm_profile_derive(&pr, 8908, &t);
    EXPECT_EQ(t.medium_max_stream, UINT64_MAX);
    EXPECT_EQ(t.read_min_stream, 1048576);
}

EFARM_TEST(policy_builtin_profiles)
{
    struct efarm_profile pr;
    struct efarm_thresholds t;

    EXPECT_RET(efarm_profile_load("reference", "efasim_0", &pr), 0);
    efarm_profile_derive(&pr, 8908, &t);
    EXPECT_EQ(t.medium_max, 65536);
    EXPECT_EQ(t.read_min, 1048576);
    EXPECT_EQ(t.read_min_cold, 1048576);
    EXPECT_EQ(t.runt_min, 1048576);
    /* auto: efasim's own profile on efasim, the reference elsewhere. */
    EXPECT_RET(efarm_profile_load("auto", "rdmap16s27", &pr), 0);
    EXPECT_TRUE(!strcmp(pr.name, "reference"));
    EXPECT_RET(efarm_profile_load(NULL, "efasim_3", &pr), 0);
    EXPECT_TRUE(!strcmp(pr.name, "efasim"));

    /* efasim's measured curves: each threshold sits where the curves cross. */
    efarm_profile_derive(&pr, 8908, &t);
    efarm_test_context("efasim: medium_max %llu read_min %llu runt_min %llu",
                       (unsigned long long)t.medium_max, (unsigned long long)t.read_min,
                       (unsigned long long)t.runt_min);
    /* Medium beats long-CTS by 5% up to medium_max (the first crossing), not a byte beyond. */
    EXPECT_TRUE(t.medium_max > 8908 && t.medium_max < (64u << 20));
    for (uint64_t s = 16384; s <= t.medium_max; s *= 2)
        EXPECT_TRUE(1.05 * efarm_profile_cost(&pr, EFARM_PROTO_MEDIUM, (double)s) <=
                    efarm_profile_cost(&pr, EFARM_PROTO_LONGCTS, (double)s));
    EXPECT_TRUE(1.05 * efarm_profile_cost(&pr, EFARM_PROTO_MEDIUM, (double)t.medium_max) <=
                efarm_profile_cost(&pr, EFARM_PROTO_LONGCTS, (double)t.medium_max));
    EXPECT_TRUE(1.05 * efarm_profile_cost(&pr, EFARM_PROTO_MEDIUM, (double)t.medium_max + 1) >
                efarm_profile_cost(&pr, EFARM_PROTO_LONGCTS, (double)t.medium_max + 1));
    /* From runt_min on, runting read is the cheapest at every measured size. */
    EXPECT_TRUE(t.runt_min < (64u << 20));
    for (uint64_t s = 1u << 26; s > t.runt_min; s /= 2)
        for (int k = EFARM_PROTO_MEDIUM; k <= EFARM_PROTO_LONGREAD; k++)
            EXPECT_TRUE(efarm_profile_cost(&pr, EFARM_PROTO_RUNTREAD, (double)s) <=
                        efarm_profile_cost(&pr, k, (double)s));
    /* Long-read is cheapest from read_min: at the crossing, and dearer just below it. */
    EXPECT_TRUE(t.read_min > 8908);
    if (t.read_min != UINT64_MAX) {
        double below = (double)t.read_min - 1;

        EXPECT_TRUE(efarm_profile_cost(&pr, EFARM_PROTO_LONGREAD, (double)t.read_min) <=
                    min2(efarm_profile_cost(&pr, EFARM_PROTO_MEDIUM, (double)t.read_min),
                         efarm_profile_cost(&pr, EFARM_PROTO_LONGCTS, (double)t.read_min)));
        EXPECT_TRUE(efarm_profile_cost(&pr, EFARM_PROTO_LONGREAD, below) >
                    min2(efarm_profile_cost(&pr, EFARM_PROTO_MEDIUM, below),
                         efarm_profile_cost(&pr, EFARM_PROTO_LONGCTS, below)));
    }
}

static void expect_bad_profile(const char *text, const char *what)
{
    char path[256], log[256];
    struct efarm_profile pr;
    FILE *f;
    int saved;

    efarm_test_context("%s", what);
    proto_tmp_path(path, sizeof(path), "badprofile");
    proto_tmp_path(log, sizeof(log), "badprofile-log");
    f = fopen(path, "w");
    EXPECT_TRUE(f != NULL);
    fputs(text, f);
    fclose(f);
    saved = proto_stderr_capture(log);
    EXPECT_RET(efarm_profile_load(path, NULL, &pr), -EINVAL);
    proto_stderr_restore(saved);
    EXPECT_EQ(proto_file_count(log, "EFARM_PROFILE="), 1);
    unlink(path);
    unlink(log);
}

EFARM_TEST(policy_profile_file_errors_name_the_line)
{
    char log[256];
    struct efarm_profile pr;
    int saved;

    expect_bad_profile("medium 16384 12\nmedium 32768\n", "a point without its cost");
    expect_bad_profile("medium 16384 12\nbulk 32768 20\n", "an unknown subprotocol");
    expect_bad_profile("eager 4096 3\n", "eager has no curve (one packet decides it)");
    expect_bad_profile("medium 16384 -5\n", "a negative cost");
    expect_bad_profile("medium 0 5\n", "a zero size");
    expect_bad_profile("register 1\nmedium 16384 5\n", "register without its per-MiB cost");
    expect_bad_profile("medium 16384 12 extra\n", "trailing words");
    expect_bad_profile("# nothing\nname empty\n", "no points");
    expect_bad_profile("medium 16384 nan\n", "not a number");
    expect_bad_profile("medium 16384 12\nstream medium 32768\n", "a stream point without its cost");
    expect_bad_profile("medium 16384 12\nstream 32768 20\n", "a stream point without its curve");
    expect_bad_profile("stream medium 16384 12\nstream longcts 16384 13\n",
                       "stream points alone: no latency curves");
    proto_tmp_path(log, sizeof(log), "badprofile-log");
    saved = proto_stderr_capture(log);
    EXPECT_RET(efarm_profile_load("/nonexistent/profile", NULL, &pr), -EINVAL);
    proto_stderr_restore(saved);
    EXPECT_EQ(proto_file_count(log, "cannot open"), 1);
    unlink(log);
}

/* ---- The rule table: one input changed at a time ----------------------------------------- */

static struct efarm_ep_params policy_params(void)
{
    struct efarm_ep_params p;

    memset(&p, 0, sizeof(p));
    p.force = -1;
    p.medium_max = 400000;
    p.read_min = 300000;
    p.read_min_cold = 600000;
    p.runt_min = 2000000;
    p.max_reads = 4;
    p.runt_size = 307200;
    p.unexp_bytes = 64 << 20;
    p.medium_max_stream = 65536;
    p.read_min_stream = 200000;
    p.read_min_stream_cold = 250000;
    p.rdma_read = true;
    return p;
}

EFARM_TEST(policy_select_every_input)
{
    const struct efarm_select_in base = {
        .eager_fit = 8908, .peer_rdma_read = true, .peer_runt_read = true, .npeers = 1};
    static const struct {
        const char *what;
        uint64_t len;
        int change; /* which input differs from base */
        enum efarm_proto_kind want;
        const char *why; /* in the explanation */
    } cases[] = {
        {"one packet", 8908, 0, EFARM_PROTO_EAGER, "eager up to"},
        {"just above a packet", 8909, 0, EFARM_PROTO_MEDIUM, "medium up to"},
        /* With reads, medium ends where reads start (300000), not at its own 400000. */
        {"below the read threshold", 299999, 0, EFARM_PROTO_MEDIUM, "below the read"},
        {"at the read threshold", 300000, 0, EFARM_PROTO_LONGREAD, "longread from read min"},
        {"unregistered buffer below its threshold", 300000, 1, EFARM_PROTO_MEDIUM, "medium up to"},
        {"unregistered beyond medium", 500000, 1, EFARM_PROTO_LONGCTS,
         "EFARM_READ_MIN_UNREG) 600000"},
        {"unregistered at its threshold", 600000, 1, EFARM_PROTO_LONGREAD, "EFARM_READ_MIN_UNREG"},
        {"no RDMA read: medium to its max", 400000, 2, EFARM_PROTO_MEDIUM, "medium up to"},
        {"no RDMA read: long-CTS above", 400001, 2, EFARM_PROTO_LONGCTS, "no RDMA read"},
        {"1024 peers: medium's fan-in", 100000, 3, EFARM_PROTO_LONGCTS, "1024 peers"},
        {"1024 peers, small medium", 60000, 3, EFARM_PROTO_MEDIUM, "medium up to"},
        {"runting read from its threshold", 2000000, 0, EFARM_PROTO_RUNTREAD, "runtread from"},
        {"ssend: no runting read", 2000000, 4, EFARM_PROTO_LONGREAD, "delivery complete"},
        {"a read in flight: long-read", 2000000, 5, EFARM_PROTO_LONGREAD, "reads in flight"},
        {"read slots full: long-CTS", 2000000, 6, EFARM_PROTO_LONGCTS, "read slots busy"},
        {"runt budget used", 2000000, 7, EFARM_PROTO_LONGREAD, "runt budget"},
        {"forced long-CTS", 20000, 8, EFARM_PROTO_LONGCTS, "forced by EFARM_PROTO"},
        {"a stream: medium to its stream bound", 65536, 10, EFARM_PROTO_MEDIUM,
         "MEDIUM_MAX_STREAM"},
        {"a stream: long-CTS above it", 65537, 10, EFARM_PROTO_LONGCTS, "MEDIUM_MAX_STREAM) 65536"},
        {"a stream: reads from the stream threshold", 200000, 10, EFARM_PROTO_LONGREAD,
         "sends in flight (EFARM_READ_MIN_STREAM) 200000"},
        {"a stream, unregistered: its own threshold", 200000, 13, EFARM_PROTO_LONGCTS,
         "unregistered buffer (EFARM_READ_MIN_STREAM) 250000"},
        {"a stream, unregistered, at it", 250000, 13, EFARM_PROTO_LONGREAD,
         "unregistered buffer (EFARM_READ_MIN_STREAM)"},
        {"no stream bound: medium to the stream read threshold", 199999, 14, EFARM_PROTO_MEDIUM,
         "below the read"},
        {"forced eager cannot carry two packets", 20000, 9, EFARM_PROTO_MEDIUM, "medium up to"},
        {"the send's hint before EFARM_PROTO", 20000, 11, EFARM_PROTO_LONGCTS,
         "forced by the send's hint"},
        {"a hint that cannot carry it: the policy", 2000000, 12, EFARM_PROTO_LONGREAD,
         "hint runtread cannot carry it"},
    };

    for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct efarm_ep_params p = policy_params();
        struct efarm_select_in in = base;
        char why[512];
        enum efarm_proto_kind got;

        in.len = cases[i].len;
        switch (cases[i].change) {
        case 1:
            in.buf_cold = true;
            break;
        case 2:
            in.peer_rdma_read = in.peer_runt_read = false;
            break;
        case 3:
            in.npeers = 1024;
            break;
        case 4:
            in.flags = EFARM_SEND_DC;
            break;
        case 5:
            in.reads_inflight = 1;
            break;
        case 6:
            in.reads_inflight = p.max_reads;
            break;
        case 7:
            in.runt_bytes_in_flight = p.runt_size;
            break;
        case 8:
            p.force = EFARM_PROTO_LONGCTS;
            break;
        case 9:
            p.force = EFARM_PROTO_EAGER;
            break;
        case 10:
            in.peer_sends = 3;
            break;
        case 11:
            p.force = EFARM_PROTO_MEDIUM;
            in.force_proto = EFARM_PROTO_LONGCTS + 1;
            break;
        case 13:
            in.peer_sends = 1;
            in.buf_cold = true;
            break;
        case 14:
            in.peer_sends = 1;
            p.medium_max_stream = UINT64_MAX;
            break;
        case 12: /* runting read is not for delivery complete; EFARM_PROTO does not step in */
            p.force = EFARM_PROTO_LONGCTS;
            in.flags = EFARM_SEND_DC;
            in.force_proto = EFARM_PROTO_RUNTREAD + 1;
            break;
        default:
            break;
        }
        got = efarm_proto_select_why(&p, &in, why, sizeof(why));
        efarm_test_context("%s (%llu B): %s, why: %s", cases[i].what,
                           (unsigned long long)cases[i].len, efarm_proto_name(got), why);
        EXPECT_EQ(got, cases[i].want);
        EXPECT_EQ(efarm_proto_select(&p, &in), got); /* the hot path agrees */
        EXPECT_TRUE(strstr(why, cases[i].why) != NULL);
    }
}

/* ---- The engine: a profile file, the registration cache, a packed buffer, fan-in ------- */

static enum efarm_proto_kind send_once(struct proto_pair *p, const void *src, void *dst, uint64_t n,
                                       uint32_t flags)
{
    struct efarm_req sreq = {0}, rreq = {0};
    struct efarm_req *reqs[] = {&sreq, &rreq};

    EXPECT_RET(efarm_trecv(p->b, dst, n, 1, 2, 3, &rreq), 0);
    EXPECT_RET(efarm_tsend(p->a, p->a_to_b, src, n, 1, 2, 3, flags, 0, &sreq), 0);
    proto_pair_wait(p, reqs, 2, 20);
    EXPECT_RET(sreq.status, 0);
    EXPECT_RET(rreq.status, 0);
    return (enum efarm_proto_kind)sreq.proto;
}

/* Both endpoints have the other's HANDSHAKE (features negotiated: reads allowed). */
static void handshake(struct proto_pair *p)
{
    uint8_t x = 1, y = 2, gx = 0, gy = 0;
    struct efarm_req s1 = {0}, s2 = {0}, r1 = {0}, r2 = {0};
    struct efarm_req *reqs[] = {&s1, &s2, &r1, &r2};
    double deadline = proto_now_s() + 10;

    EXPECT_RET(efarm_trecv(p->b, &gx, 1, 9, 0, 0, &r1), 0);
    EXPECT_RET(efarm_trecv(p->a, &gy, 1, 9, 0, 0, &r2), 0);
    EXPECT_RET(efarm_tsend(p->a, p->a_to_b, &x, 1, 9, 0, 0, 0, 0, &s1), 0);
    EXPECT_RET(efarm_tsend(p->b, p->b_to_a, &y, 1, 9, 0, 0, 0, 0, &s2), 0);
    proto_pair_wait(p, reqs, 4, 10);
    while (
        (!efarm_ep_counters(p->a)->handshakes_recv || !efarm_ep_counters(p->b)->handshakes_recv) &&
        proto_now_s() < deadline)
        proto_pair_spin(p, 1000);
    EXPECT_TRUE(efarm_ep_counters(p->a)->handshakes_recv &&
                efarm_ep_counters(p->b)->handshakes_recv);
}

/*
 * With the linear profile and 200 us to register a buffer: reads from 143000
 * bytes for a registered buffer, from about 1.29 MB for one to be registered,
 * medium to 110000. A 2 MiB send registers buffer a (cold, but above its
 * threshold); then 400000 bytes of a go by a read protocol (the cache holds
 * a), 400000 bytes of a fresh buffer go long-CTS (cold), and a's bytes flagged
 * EFARM_SEND_TEMP_BUF go long-CTS too (a packed temporary is never registered
 * for long).
 */
EFARM_TEST(policy_engine_profile_and_registration)
{
    char path[256];
    struct efarm_ep_attr attr = {0};
    struct efarm_ep_policy pol;
    struct proto_pair p;
    const uint64_t big = 2u << 20, n = 400000;
    uint8_t *a = malloc(big), *b = malloc(n), *dst = malloc(big);
    enum efarm_proto_kind got;

    proto_use_efasim();
    proto_tmp_path(path, sizeof(path), "profile");
    write_profile(path, g_lines, 3, 200, 0);
    attr.profile = path;
    proto_pair_open(&p, &attr, &attr);
    handshake(&p);
    efarm_ep_policy(p.a, &pol);
    efarm_test_context("profile %s: medium %llu read %llu unreg %llu runt %llu", pol.profile,
                       (unsigned long long)pol.medium_max, (unsigned long long)pol.read_min,
                       (unsigned long long)pol.read_min_unreg, (unsigned long long)pol.runt_min);
    EXPECT_TRUE(!strcmp(pol.profile, "linear"));
    EXPECT_TRUE(pol.medium_max < n && pol.read_min < n && pol.read_min_unreg > n &&
                pol.read_min_unreg < big);
    EXPECT_EQ(pol.runt_min, pol.read_min); /* no runting-read curve: with long-read */

    proto_fill(a, big, 1);
    got = send_once(&p, a, dst, big, 0);
    EXPECT_TRUE(got == EFARM_PROTO_LONGREAD || got == EFARM_PROTO_RUNTREAD);
    proto_expect_pattern(dst, big, 1);

    efarm_test_context("400000 bytes of the registered buffer (cache %s)",
                       efarm_mem_hook_status() == EFARM_MEM_HOOK_LIVE ? "caching"
                                                                      : "passing through");
    got = send_once(&p, a, dst, n, 0);
    if (efarm_mem_hook_status() == EFARM_MEM_HOOK_LIVE)
        EXPECT_TRUE(got == EFARM_PROTO_LONGREAD || got == EFARM_PROTO_RUNTREAD);
    else /* sanitizer builds: no memory hook, so nothing stays registered: cold again */
        EXPECT_EQ(got, EFARM_PROTO_LONGCTS);
    proto_expect_pattern(dst, n, 1);

    efarm_test_context("400000 bytes of a buffer never registered");
    proto_fill(b, n, 2);
    EXPECT_EQ(send_once(&p, b, dst, n, 0), EFARM_PROTO_LONGCTS);
    proto_expect_pattern(dst, n, 2);

    efarm_test_context("the registered buffer flagged as a temporary");
    EXPECT_EQ(send_once(&p, a, dst, n, EFARM_SEND_TEMP_BUF), EFARM_PROTO_LONGCTS);
    proto_expect_pattern(dst, n, 1);
    proto_pair_close(&p);

    /* EFARM_READ_MIN set: the unregistered and runting thresholds follow it. */
    attr.read_min = 200000;
    proto_pair_open(&p, &attr, &attr);
    handshake(&p);
    efarm_ep_policy(p.a, &pol);
    EXPECT_EQ(pol.read_min, 200000);
    EXPECT_EQ(pol.read_min_unreg, 200000);
    EXPECT_EQ(pol.runt_min, 200000);
    got = send_once(&p, b, dst, n, 0);
    EXPECT_TRUE(got == EFARM_PROTO_LONGREAD || got == EFARM_PROTO_RUNTREAD);
    proto_pair_close(&p);
    free(a);
    free(b);
    free(dst);
    unlink(path);
}

/*
 * Medium's fan-in: with EFARM_UNEXP_BYTES at 100000, a 60000-byte message goes
 * medium while the endpoint has talked to one peer and long-CTS once it has
 * talked to two (2 x 60000 > 100000).
 */
EFARM_TEST(policy_engine_medium_fan_in)
{
    struct efarm_ep_attr attr = {.profile = "reference", .unexp_bytes = 100000};
    uint8_t raw_c[EFARM_RAW_ADDR_LEN], raw_a[EFARM_RAW_ADDR_LEN];
    struct efarm_ep *c;
    efarm_peer_t a_to_c, c_to_a;
    struct proto_pair p;
    const uint64_t n = 60000;
    uint8_t *src = malloc(n), *dst = malloc(n);

    proto_use_efasim();
    proto_pair_open(&p, &attr, NULL);
    handshake(&p);
    proto_fill(src, n, 3);
    EXPECT_EQ(send_once(&p, src, dst, n, 0), EFARM_PROTO_MEDIUM);
    EXPECT_RET(efarm_ep_open(NULL, &c), 0);
    efarm_ep_addr(c, raw_c);
    efarm_ep_addr(p.a, raw_a);
    EXPECT_RET(efarm_av_insert(p.a, raw_c, &a_to_c), 0);
    EXPECT_RET(efarm_av_insert(c, raw_a, &c_to_a), 0);
    {
        struct efarm_req sreq = {0}, rreq = {0};
        struct efarm_req *reqs[] = {&sreq, &rreq};
        struct efarm_ep *const eps[] = {p.a, c};
        uint8_t x = 7, y = 0;

        EXPECT_RET(efarm_trecv(c, &y, 1, 1, 2, 3, &rreq), 0);
        EXPECT_RET(efarm_tsend(p.a, a_to_c, &x, 1, 1, 2, 3, 0, 0, &sreq), 0);
        proto_wait(eps, 2, reqs, 2, 20);
        EXPECT_EQ(y, 7);
    }
    EXPECT_EQ(send_once(&p, src, dst, n, 0), EFARM_PROTO_LONGCTS);
    proto_expect_pattern(dst, n, 3);
    (void)c_to_a;
    efarm_ep_close(c);
    proto_pair_close(&p);
    free(src);
    free(dst);
}

/*
 * The caller's hints (the MPI netmod passes its communicator's): a fan-in
 * raises medium's fan-in above the peers talked to, or with
 * EFARM_SEND_FANIN_SET replaces it; a subprotocol hint forces that send
 * alone and counts in proto_forced; a hint beyond the subprotocols is
 * refused; the fan-in saturates at EFARM_SEND_FANIN_MAX.
 */
EFARM_TEST(policy_engine_send_hints)
{
    struct efarm_ep_attr attr = {.profile = "reference", .unexp_bytes = 100000};
    struct efarm_req sreq = {0};
    struct proto_pair p;
    const uint64_t n = 60000;
    uint8_t *src = malloc(n), *dst = malloc(n);

    proto_use_efasim();
    proto_pair_open(&p, &attr, &attr);
    handshake(&p);
    proto_fill(src, n, 5);
    EXPECT_EQ(send_once(&p, src, dst, n, 0), EFARM_PROTO_MEDIUM);
    EXPECT_EQ(send_once(&p, src, dst, n, EFARM_SEND_FANIN(1)), EFARM_PROTO_MEDIUM);
    /* 2 x 60000 > 100000: medium could overrun the receiver's buffering. */
    EXPECT_EQ(send_once(&p, src, dst, n, EFARM_SEND_FANIN(2)), EFARM_PROTO_LONGCTS);
    proto_expect_pattern(dst, n, 5);
    EXPECT_EQ(send_once(&p, src, dst, n, EFARM_SEND_FANIN(1000) | EFARM_SEND_FANIN_SET),
              EFARM_PROTO_LONGCTS);
    EXPECT_EQ(send_once(&p, src, dst, n, EFARM_SEND_FANIN(1) | EFARM_SEND_FANIN_SET),
              EFARM_PROTO_MEDIUM);
    EXPECT_EQ(efarm_ep_counters(p.a)->proto_forced, 0);
    EXPECT_EQ(send_once(&p, src, dst, 20000, EFARM_SEND_PROTO(EFARM_PROTO_LONGCTS)),
              EFARM_PROTO_LONGCTS);
    EXPECT_EQ(send_once(&p, src, dst, n, EFARM_SEND_PROTO(EFARM_PROTO_LONGREAD)),
              EFARM_PROTO_LONGREAD);
    proto_expect_pattern(dst, n, 5);
    EXPECT_EQ(efarm_ep_counters(p.a)->proto_forced, 2);
    /* Eager cannot carry 60000 bytes: the policy picks, and nothing counts as forced. */
    EXPECT_EQ(send_once(&p, src, dst, n, EFARM_SEND_PROTO(EFARM_PROTO_EAGER)), EFARM_PROTO_MEDIUM);
    EXPECT_EQ(efarm_ep_counters(p.a)->proto_forced, 2);
    EXPECT_RET(
        efarm_tsend(p.a, p.a_to_b, src, n, 1, 2, 3, EFARM_SEND_PROTO(EFARM_PROTO_COUNT), 0, &sreq),
        -EINVAL);
    EXPECT_RET(efarm_tsend(p.a, p.a_to_b, src, n, 1, 2, 3, EFARM_SEND_PROTO_MASK, 0, &sreq),
               -EINVAL);
    EXPECT_EQ(EFARM_SEND_FANIN(1u << 20) >> EFARM_SEND_FANIN_SHIFT, EFARM_SEND_FANIN_MAX);
    EXPECT_EQ(EFARM_SEND_FANIN(7) >> EFARM_SEND_FANIN_SHIFT, 7);
    proto_pair_close(&p);
    free(src);
    free(dst);
}

/*
 * A stream to one peer: with a 100000-byte send still in flight (its receive
 * not posted, so long-CTS holds it), a second one goes long-CTS too
 * (EFARM_MEDIUM_MAX_STREAM 65536), where alone it goes medium; once both
 * completed, the peer's count is back to zero and medium returns.
 */
EFARM_TEST(policy_engine_stream_bound)
{
    struct efarm_ep_attr attr = {
        .profile = "reference", .medium_max = 200000, .medium_max_stream = 65536};
    struct efarm_req s1 = {0}, s2 = {0}, r1 = {0}, r2 = {0};
    struct efarm_req *reqs[] = {&s1, &s2, &r1, &r2};
    struct proto_pair p;
    const uint64_t n = 100000;
    uint8_t *src = malloc(n), *d1 = malloc(n), *d2 = malloc(n);

    proto_use_efasim();
    proto_pair_open(&p, &attr, &attr);
    handshake(&p);
    proto_fill(src, n, 4);
    EXPECT_EQ(send_once(&p, src, d1, n, 0), EFARM_PROTO_MEDIUM);
    EXPECT_RET(efarm_tsend(p.a, p.a_to_b, src, n, 1, 2, 3, 0, 0, &s1), 0);
    EXPECT_RET(efarm_tsend(p.a, p.a_to_b, src, n, 1, 2, 3, 0, 0, &s2), 0);
    EXPECT_EQ(s1.proto, EFARM_PROTO_MEDIUM);
    EXPECT_EQ(s2.proto, EFARM_PROTO_LONGCTS);
    EXPECT_RET(efarm_trecv(p.b, d1, n, 1, 2, 3, &r1), 0);
    EXPECT_RET(efarm_trecv(p.b, d2, n, 1, 2, 3, &r2), 0);
    proto_pair_wait(&p, reqs, 4, 20);
    proto_expect_pattern(d1, n, 4);
    proto_expect_pattern(d2, n, 4);
    proto_pair_spin(&p, 20000); /* the device's acknowledgements release the sends */
    EXPECT_EQ(send_once(&p, src, d1, n, 0), EFARM_PROTO_MEDIUM);
    proto_pair_close(&p);
    free(src);
    free(d1);
    free(d2);
}
