/*
 * Selection profiles: what each two-sided subprotocol costs on a device, and
 * the thresholds of the selection rules (proto_select.c) that follow from it.
 *
 * A profile is a cost curve per subprotocol: one-way latency in microseconds
 * at message sizes, measured with every subprotocol forced
 * (bench/run-proto-sweep.sh --write-profile FILE), plus what registering a
 * buffer costs (the read protocols pay it when the send buffer is not in the
 * registration cache), and optionally stream curves: microseconds per
 * message with 16 in flight to the peer (run-proto-sweep.sh --bw
 * --write-profile FILE adds them). Between measured sizes the cost is interpolated
 * linearly, beyond them extrapolated from the last two points. From the
 * curves, at endpoint open:
 *   medium_max     where medium stops being cheaper than long-CTS by 5%
 *                  (EFARM_MEDIUM_HANDICAP): a medium message lands whole in
 *                  the receiver's buffers, posted or not, where long-CTS lets
 *                  the receiver pace it, so within a profile's noise the
 *                  receiver's memory decides;
 *   read_min       where a read protocol (long-read) becomes the cheapest of
 *                  medium, long-CTS and long-read for a registered buffer;
 *   read_min_cold  the same when the buffer must be registered first;
 *   runt_min       from where runting read is cheaper than long-read at every
 *                  larger measured size (never, if it is not);
 *   medium_max_stream, read_min_stream, read_min_stream_cold
 *                  the same from the stream curves, for a send that starts
 *                  while others to the same peer are in flight (without
 *                  stream curves: no medium bound of its own, the read
 *                  thresholds above);
 * each at the crossing of the interpolated curves, found by bisection between
 * the two measured sizes around it. A threshold set by its tunable
 * (EFARM_MEDIUM_MAX, EFARM_READ_MIN, EFARM_READ_MIN_UNREG, EFARM_RUNT_MIN)
 * wins over the profile's.
 *
 * Built in: "reference", the reference implementation's fixed thresholds
 * (medium to 64 KiB, reads and runting reads from 1 MiB; no curves), and
 * "efasim", measured on efasim (2 cores, bench/README.md). EFARM_PROFILE=auto
 * takes "efasim" on an efasim device and "reference" elsewhere: no EFA
 * measurement could be made here, so on EFA the reference's thresholds stay
 * until a profile is calibrated on the node (doc/PROTOCOL-SELECTION.md).
 *
 * A profile file is text, one fact per line, '#' starts a comment:
 *   name NAME
 *   register BASE_US US_PER_MIB
 *   PROTO SIZE US        (PROTO: medium, longcts, longread or runtread)
 *   stream PROTO SIZE US (us per message with 16 in flight)
 * at most EFARM_PROFILE_MAX_POINTS points; every malformed line is an error
 * naming the file and the line.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg_proto.h"
#include "proto_internal.h"
#include "proto_select.h"

/*
 * Measured on efasim, 2026-11-27, with its one-copy RDMA (issue 14: reads and
 * writes within a host move by one process_vm_readv/writev): the mean of two
 * calibrations (bench/run-proto-sweep.sh --runs 5, server and client pinned to
 * their own CPUs, best of the 5 runs each; bench/README.md). Reads now beat
 * every packet protocol from about 40 KiB (long-read 1 MiB: about 110 us,
 * long-CTS and medium about 530 us); the two calibrations differ by up to 36%
 * at a point, this machine's noise.
 */
/* clang-format off */
static const struct efarm_profile_point g_efasim_points[] = {
#define P(proto, size, us) {EFARM_PROTO_##proto, size, us}
    P(MEDIUM, 16384, 9.50),
    P(MEDIUM, 32768, 16.02),
    P(MEDIUM, 65536, 29.92),
    P(MEDIUM, 131072, 54.14),
    P(MEDIUM, 262144, 110.78),
    P(MEDIUM, 524288, 245.30),
    P(MEDIUM, 1048576, 483.19),
    P(MEDIUM, 2097152, 1107.74),
    P(MEDIUM, 4194304, 2079.91),
    P(MEDIUM, 8388608, 4450.92),
    P(MEDIUM, 16777216, 8698.67),
    P(MEDIUM, 33554432, 17078.39),
    P(MEDIUM, 67108864, 33046.62),
    P(LONGCTS, 16384, 15.97),
    P(LONGCTS, 32768, 22.81),
    P(LONGCTS, 65536, 39.04),
    P(LONGCTS, 131072, 68.53),
    P(LONGCTS, 262144, 126.63),
    P(LONGCTS, 524288, 250.58),
    P(LONGCTS, 1048576, 530.90),
    P(LONGCTS, 2097152, 1015.04),
    P(LONGCTS, 4194304, 1960.11),
    P(LONGCTS, 8388608, 3969.92),
    P(LONGCTS, 16777216, 8336.36),
    P(LONGCTS, 33554432, 17367.42),
    P(LONGCTS, 67108864, 35517.79),
    P(LONGREAD, 16384, 15.25),
    P(LONGREAD, 32768, 17.04),
    P(LONGREAD, 65536, 20.23),
    P(LONGREAD, 131072, 25.11),
    P(LONGREAD, 262144, 35.69),
    P(LONGREAD, 524288, 58.77),
    P(LONGREAD, 1048576, 114.34),
    P(LONGREAD, 2097152, 268.44),
    P(LONGREAD, 4194304, 508.94),
    P(LONGREAD, 8388608, 1000.81),
    P(LONGREAD, 16777216, 2352.11),
    P(LONGREAD, 33554432, 6869.92),
    P(LONGREAD, 67108864, 15410.65),
    P(RUNTREAD, 16384, 11.82),
    P(RUNTREAD, 32768, 18.57),
    P(RUNTREAD, 65536, 32.72),
    P(RUNTREAD, 131072, 61.94),
    P(RUNTREAD, 262144, 124.61),
    P(RUNTREAD, 524288, 158.18),
    P(RUNTREAD, 1048576, 215.70),
    P(RUNTREAD, 2097152, 328.17),
    P(RUNTREAD, 4194304, 560.82),
    P(RUNTREAD, 8388608, 983.87),
    P(RUNTREAD, 16777216, 2251.59),
    P(RUNTREAD, 33554432, 7029.26),
    P(RUNTREAD, 67108864, 14278.81),
    /*
     * Stream costs, 2026-11-27 (one-copy RDMA): us per message with 16 in flight
     * (bytes / MB/s of the median window), the mean of two calibrations
     * (bench/run-proto-sweep.sh --bw --runs 5 --max 16M, pinned, best of 5 each;
     * bench/README.md).
     */
#define S(proto, size, us) {EFARM_PROTO_##proto | EFARM_PROFILE_STREAM, size, us}
    S(LONGCTS, 16384, 8.35),
    S(LONGCTS, 32768, 15.23),
    S(LONGCTS, 65536, 29.05),
    S(LONGCTS, 131072, 55.72),
    S(LONGCTS, 262144, 115.85),
    S(LONGCTS, 524288, 230.77),
    S(LONGCTS, 1048576, 486.01),
    S(LONGCTS, 2097152, 973.97),
    S(LONGCTS, 4194304, 1926.17),
    S(LONGCTS, 8388608, 3832.25),
    S(LONGCTS, 16777216, 7659.06),
    S(LONGREAD, 16384, 7.80),
    S(LONGREAD, 32768, 8.43),
    S(LONGREAD, 65536, 9.85),
    S(LONGREAD, 131072, 12.64),
    S(LONGREAD, 262144, 18.14),
    S(LONGREAD, 524288, 28.83),
    S(LONGREAD, 1048576, 69.72),
    S(LONGREAD, 2097152, 200.08),
    S(LONGREAD, 4194304, 425.91),
    S(LONGREAD, 8388608, 840.26),
    S(LONGREAD, 16777216, 1735.80),
    S(MEDIUM, 16384, 8.02),
    S(MEDIUM, 32768, 15.50),
    S(MEDIUM, 65536, 34.72),
    S(MEDIUM, 131072, 60.84),
    S(MEDIUM, 262144, 121.83),
    S(MEDIUM, 524288, 229.31),
    S(MEDIUM, 1048576, 474.03),
    S(MEDIUM, 2097152, 983.70),
    S(MEDIUM, 4194304, 1962.01),
    S(MEDIUM, 8388608, 4076.58),
    S(MEDIUM, 16777216, 8112.51),
#undef S
#undef P
};
/* clang-format on */

/*
 * What registering a buffer costs on efasim: ibv_reg_mr + ibv_dereg_mr of 64 KiB
 * took 2.5-4.6 us on a busy 2-core machine (efasim pins nothing, but counts the
 * pages against RLIMIT_MEMLOCK and asks the kernel for the buffer's page size,
 * src/efasim/README.md, "Registered memory"); 0.07-0.10 us before it did. On
 * EFA registration pins pages and costs far more: a profile calibrated there
 * carries its own figures.
 */
#define EFASIM_REG_BASE_US    3.0
#define EFASIM_REG_US_PER_MIB 0.0

static void profile_reference(struct efarm_profile *pr)
{
    memset(pr, 0, sizeof(*pr));
    snprintf(pr->name, sizeof(pr->name), "reference");
    pr->fixed_medium_max = 65536;
    pr->fixed_read_min = 1048576;
    pr->fixed_runt_min = 1048576;
}

static void profile_efasim(struct efarm_profile *pr)
{
    memset(pr, 0, sizeof(*pr));
    snprintf(pr->name, sizeof(pr->name), "efasim");
    pr->npoints = sizeof(g_efasim_points) / sizeof(g_efasim_points[0]);
    memcpy(pr->pts, g_efasim_points, sizeof(g_efasim_points));
    pr->reg_base_us = EFASIM_REG_BASE_US;
    pr->reg_us_per_mib = EFASIM_REG_US_PER_MIB;
}

/* The subprotocol whose curve a profile line names (its row says it may have one), or -1. */
static int profile_proto(const char *word)
{
    for (int k = 0; k < EFARM_PROTO_COUNT; k++)
        if (g_efarm_msg_protos[k]->profile.curve &&
            !strcmp(word, efarm_proto_name((enum efarm_proto_kind)k)))
            return k;
    return -1;
}

/* "medium, longcts, longread or runtread": the names profile_proto takes. */
static const char *profile_proto_names(char *buf, size_t size)
{
    unsigned n = 0, total = 0;
    size_t len = 0;

    for (int k = 0; k < EFARM_PROTO_COUNT; k++)
        total += g_efarm_msg_protos[k]->profile.curve;
    buf[0] = '\0';
    for (int k = 0; k < EFARM_PROTO_COUNT && len < size; k++) {
        if (!g_efarm_msg_protos[k]->profile.curve)
            continue;
        n++;
        len += (size_t)snprintf(buf + len, size - len, "%s%s",
                                n == 1       ? ""
                                : n == total ? " or "
                                             : ", ",
                                efarm_proto_name((enum efarm_proto_kind)k));
    }
    return buf;
}

static int profile_file(const char *path, struct efarm_profile *pr)
{
    char line[256];
    unsigned lineno = 0, nlatency = 0;
    FILE *f = fopen(path, "r");

    if (!f) {
        efarm_log(EFARM_LOG_ERROR,
                  "EFARM_PROFILE=%s: cannot open (%s); expected auto, "
                  "reference, efasim or a profile file",
                  path, strerror(errno));
        return -EINVAL;
    }
    memset(pr, 0, sizeof(*pr));
    snprintf(pr->name, sizeof(pr->name), "%s", path);
    while (fgets(line, sizeof(line), f)) {
        char word[32], name[64], extra[2];
        unsigned long long size;
        double a, b;
        int proto, stream = 0;

        lineno++;
        line[strcspn(line, "#\n")] = '\0';
        if (sscanf(line, " %31s", word) != 1)
            continue; /* blank or comment */
        if (!strcmp(word, "stream") && sscanf(line, " stream %31s", word) == 1)
            stream = 1;
        if (!strcmp(word, "name") && sscanf(line, " name %63s %1s", name, extra) == 1) {
            snprintf(pr->name, sizeof(pr->name), "%s", name);
        } else if (!strcmp(word, "register") &&
                   sscanf(line, " register %lf %lf %1s", &a, &b, extra) == 2 && a >= 0 && b >= 0 &&
                   isfinite(a) && isfinite(b)) {
            pr->reg_base_us = a;
            pr->reg_us_per_mib = b;
        } else if ((proto = profile_proto(word)) >= 0 &&
                   sscanf(line, stream ? " %*s %*s %llu %lf %1s" : " %*s %llu %lf %1s", &size, &a,
                          extra) == 2 &&
                   size > 0 && a > 0 && isfinite(a) && pr->npoints < EFARM_PROFILE_MAX_POINTS) {
            pr->pts[pr->npoints++] = (struct efarm_profile_point){
                (uint8_t)(proto | (stream ? EFARM_PROFILE_STREAM : 0)), size, a};
            nlatency += !stream;
        } else {
            char names[128];

            efarm_log(EFARM_LOG_ERROR,
                      "EFARM_PROFILE=%s line %u: expected 'name NAME', 'register BASE_US "
                      "US_PER_MIB', 'PROTO SIZE US' or 'stream PROTO SIZE US' (PROTO %s; sizes "
                      "and costs positive; at most %d points)",
                      path, lineno, profile_proto_names(names, sizeof(names)),
                      EFARM_PROFILE_MAX_POINTS);
            fclose(f);
            return -EINVAL;
        }
    }
    fclose(f);
    if (!nlatency) {
        efarm_log(EFARM_LOG_ERROR, "EFARM_PROFILE=%s: no latency cost points", path);
        return -EINVAL;
    }
    return 0;
}

int efarm_profile_load(const char *spec, const char *device_name, struct efarm_profile *pr)
{
    if (!spec || !*spec || !strcmp(spec, "auto"))
        spec = device_name && !strncmp(device_name, "efasim_", 7) ? "efasim" : "reference";
    if (!strcmp(spec, "reference")) {
        profile_reference(pr);
        return 0;
    }
    if (!strcmp(spec, "efasim")) {
        profile_efasim(pr);
        return 0;
    }
    return profile_file(spec, pr);
}

/* ---- Costs and crossings ------------------------------------------------------------------ */

/* The two measured points of proto's curve around size (or the last two), or false if < 2. */
static bool curve_segment(const struct efarm_profile *pr, int proto, double size,
                          const struct efarm_profile_point **lo_p,
                          const struct efarm_profile_point **hi_p)
{
    const struct efarm_profile_point *lo = NULL, *hi = NULL, *first = NULL, *second = NULL;

    for (unsigned i = 0; i < pr->npoints; i++) {
        const struct efarm_profile_point *q = &pr->pts[i];

        if (q->proto != proto)
            continue;
        if ((double)q->size <= size && (!lo || q->size > lo->size))
            lo = q;
        if ((double)q->size > size && (!hi || q->size < hi->size))
            hi = q;
        if (!first || q->size < first->size) {
            second = first;
            first = q;
        } else if ((!second || q->size < second->size) && q->size != first->size) {
            second = q;
        }
    }
    if (!lo && !hi)
        return false;
    if (!lo) { /* below the curve: from its first two points */
        lo = first;
        hi = second;
    } else if (!hi) { /* above it: from the last two */
        hi = lo;
        lo = NULL;
        for (unsigned i = 0; i < pr->npoints; i++) {
            const struct efarm_profile_point *q = &pr->pts[i];

            if (q->proto == proto && q->size < hi->size && (!lo || q->size > lo->size))
                lo = q;
        }
    }
    if (!lo || !hi || lo->size == hi->size)
        return false;
    *lo_p = lo;
    *hi_p = hi;
    return true;
}

double efarm_profile_cost(const struct efarm_profile *pr, int proto, double size)
{
    const struct efarm_profile_point *lo, *hi;
    double c;

    if (!curve_segment(pr, proto, size, &lo, &hi))
        return INFINITY;
    c = lo->us + (hi->us - lo->us) * (size - (double)lo->size) / (double)(hi->size - lo->size);
    return c > 0 ? c : 0;
}

static double reg_cost(const struct efarm_profile *pr, double size)
{
    return pr->reg_base_us + pr->reg_us_per_mib * size / 1048576.0;
}

/* What a question about one size asks: is `proto` cheapest among `rivals` there? */
struct race {
    const struct efarm_profile *pr;
    int proto;
    uint8_t curve;   /* 0: latency; EFARM_PROFILE_STREAM: the stream curves */
    uint32_t rivals; /* bits of enum efarm_proto_kind */
    bool cold;       /* read protocols pay registration */
    double handicap; /* proto must win by this fraction of its cost */
};

static double race_cost(const struct race *r, int proto, double size)
{
    double c = efarm_profile_cost(r->pr, proto | r->curve, size);

    if (r->cold && g_efarm_msg_protos[proto]->reads)
        c += reg_cost(r->pr, size);
    return c;
}

/* proto's cost minus its cheapest rival's at size (negative: proto wins). */
static double race_margin(const struct race *r, double size)
{
    double best = INFINITY;

    for (int k = 0; k < EFARM_PROTO_COUNT; k++)
        if (r->rivals & (1u << k)) {
            double c = race_cost(r, k, size);

            best = c < best ? c : best;
        }
    return race_cost(r, r->proto, size) * (1 + r->handicap) - best;
}

/* The measured sizes of the curves, ascending and unique, above `above`; returns how many. */
static unsigned grid(const struct efarm_profile *pr, uint64_t above,
                     uint64_t out[EFARM_PROFILE_MAX_POINTS])
{
    unsigned n = 0;

    for (unsigned i = 0; i < pr->npoints; i++) {
        uint64_t s = pr->pts[i].size;
        unsigned j = 0;

        if (s <= above)
            continue;
        while (j < n && out[j] < s)
            j++;
        if (j < n && out[j] == s)
            continue;
        memmove(&out[j + 1], &out[j], (n - j) * sizeof(out[0]));
        out[j] = s;
        n++;
    }
    return n;
}

/* The size in (lo, hi] where the margin changes sign, to a byte (the margin is continuous). */
static uint64_t crossing(const struct race *r, uint64_t lo, uint64_t hi)
{
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;

        if ((race_margin(r, (double)mid) <= 0) == (race_margin(r, (double)lo) <= 0))
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

/*
 * Where proto stops winning (last_win: the largest size it still wins at,
 * from `from` up while it wins at every measured size) or starts winning
 * (first size from which it wins at every larger measured size). UINT64_MAX:
 * never starts; 0: never wins.
 */
static uint64_t wins_until(const struct race *r, uint64_t from)
{
    uint64_t g[EFARM_PROFILE_MAX_POINTS], prev = from;
    unsigned n = grid(r->pr, from, g);

    if (race_margin(r, (double)from) > 0)
        return 0;
    for (unsigned i = 0; i < n; i++) {
        if (race_margin(r, (double)g[i]) > 0)
            return crossing(r, prev, g[i]) - 1;
        prev = g[i];
    }
    return n ? g[n - 1] : from;
}

static uint64_t wins_from(const struct race *r, uint64_t from)
{
    uint64_t g[EFARM_PROFILE_MAX_POINTS];
    unsigned n = grid(r->pr, from, g);
    int first = -1;

    for (int i = (int)n - 1; i >= 0 && race_margin(r, (double)g[i]) <= 0; i--)
        first = i;
    if (first < 0)
        return UINT64_MAX;
    if (first == 0)
        return race_margin(r, (double)from) <= 0 ? from : crossing(r, from, g[0]);
    return crossing(r, g[first - 1], g[first]);
}

static bool has_curve(const struct efarm_profile *pr, int proto)
{
    unsigned n = 0;

    for (unsigned i = 0; i < pr->npoints; i++)
        n += pr->pts[i].proto == proto;
    return n >= 2;
}

/* A threshold a row names (EFARM_THR), in t; NULL for none. */
static uint64_t *thr_of(struct efarm_thresholds *t, uint16_t thr)
{
    return thr ? (uint64_t *)((char *)t + thr - 1) : NULL;
}

/*
 * The thresholds of one set of curves (latency, or with curve =
 * EFARM_PROFILE_STREAM the stream curves), each from its subprotocol's
 * profile rule (msg_proto.h), in the order of the kinds: a threshold copied
 * from another kind's (fallback_from) is derived by then. Each stays as it
 * is in *t when the curves it needs are missing.
 */
static void derive_curves(const struct efarm_profile *pr, uint8_t curve, uint64_t from,
                          struct efarm_thresholds *t)
{
    const unsigned set = curve ? 1 : 0;
    uint32_t have = 0;

    for (int k = 0; k < EFARM_PROTO_COUNT; k++)
        if (has_curve(pr, k | curve))
            have |= 1u << k;
    for (int k = 0; k < EFARM_PROTO_COUNT; k++) {
        const struct efarm_profile_rule *pf = &g_efarm_msg_protos[k]->profile;
        uint64_t *warm = thr_of(t, pf->thr[set][0]), *cold = thr_of(t, pf->thr[set][1]);
        uint32_t rivals = pf->rivals & have;

        if (pf->race == EFARM_RACE_NONE || warm == NULL || (pf->needs & ~have))
            continue;
        if (!(have & (1u << k))) {
            uint64_t *src =
                pf->fallback_from
                    ? thr_of(t, g_efarm_msg_protos[pf->fallback_from - 1]->profile.thr[set][0])
                    : NULL;

            if (src)
                *warm = *src;
            continue;
        }
        if (pf->race == EFARM_RACE_UNTIL) {
            struct race r = {pr, k, curve, rivals, false, pf->handicap};

            if (rivals)
                *warm = wins_until(&r, from);
        } else {
            struct race w = {pr, k, curve, rivals, false, pf->handicap};
            struct race c = {pr, k, curve, rivals, true, pf->handicap};

            *warm = rivals ? wins_from(&w, from) : from;
            if (cold)
                *cold = rivals ? wins_from(&c, from) : from;
        }
    }
}

void efarm_profile_derive(const struct efarm_profile *pr, uint64_t one_packet,
                          struct efarm_thresholds *t)
{
    uint64_t from = one_packet + 1;

    t->medium_max = pr->fixed_medium_max;
    t->read_min = pr->fixed_read_min;
    t->read_min_cold = pr->fixed_read_min;
    t->runt_min = pr->fixed_runt_min;
    derive_curves(pr, 0, from, t);
    /*
     * In a stream (runting read carries only a window's first message: no
     * curve of its own): without stream curves, no medium bound of its own
     * and the read thresholds above.
     */
    t->medium_max_stream = UINT64_MAX;
    t->read_min_stream = t->read_min;
    t->read_min_stream_cold = t->read_min_cold;
    derive_curves(pr, EFARM_PROFILE_STREAM, from, t);
}
