/*
 * interop-efarm: efarm's side of the interoperability test (interop.h).
 *
 *   interop-efarm --listen SOCKET [--sizes LIST] [--no-bursts] [--no-dc] [--no-msg]
 *                 [--rma] [--rma-fi LIST] [--rma-efarm LIST] [--atomics] [--refusals LIST]
 *                 [--fi-rdma 0|1]
 *                 [--fi-rdma-write 0|1] [--fi-unsolicited 0|1] [--fi-runt BYTES] [--expect LIST]
 *                 [--expect-rma LIST] [--read-nack] [--timeout S] [-v]
 *
 * Opens an efarm endpoint, listens on the UNIX socket for interop-fi, sends it the
 * parameters, exchanges raw addresses and runs every case. For each case it reads
 * efarm's per-type packet counters to see which subprotocol each message used (the
 * REQ types efarm sent, or received from libfabric), checks it against the
 * subprotocols that side's selection rules allow for that size (libfabric's rules
 * as its EFA provider documents them: FI_EFA_INTER_MAX_MEDIUM_MESSAGE_SIZE 64 KiB,
 * FI_EFA_INTER_MIN_READ_MESSAGE_SIZE 1 MiB, runting read only with FI_EFA_RUNT_SIZE
 * and never for delivery complete; --fi-rdma and --fi-runt say how the libfabric
 * side was started), and at the end checks that every subprotocol in --expect
 * was seen in both directions. The one-sided phase that follows, when asked
 * for, is interop_efarm_rma.c's.
 *
 * Exit status: 0 when every case passed, 1 on a defect, 2 on bad usage.
 */
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>

#include "efarm_config.h"
#include "efarm_errno.h"
#include "efarm_pkt.h"
#include "interop_efarm.h"

static const char *const g_ie_names[IE_NPROTO] = {
#define IE_NAME_(id, name) name,
    IE_PROTO_LIST(IE_NAME_)
#undef IE_NAME_
};

/* The REQ packet types that start a two-sided message, and the subprotocol each names. */
static const struct {
    uint8_t type;
    unsigned proto;
} g_ie_req_types[] = {
    {EFARM_PKT_EAGER_MSGRTM, IE(EAGER)},           {EFARM_PKT_EAGER_TAGRTM, IE(EAGER)},
    {EFARM_PKT_MEDIUM_MSGRTM, IE(MEDIUM)},         {EFARM_PKT_MEDIUM_TAGRTM, IE(MEDIUM)},
    {EFARM_PKT_LONGCTS_MSGRTM, IE(LONGCTS)},       {EFARM_PKT_LONGCTS_TAGRTM, IE(LONGCTS)},
    {EFARM_PKT_LONGREAD_MSGRTM, IE(LONGREAD)},     {EFARM_PKT_LONGREAD_TAGRTM, IE(LONGREAD)},
    {EFARM_PKT_RUNTREAD_MSGRTM, IE(RUNTREAD)},     {EFARM_PKT_RUNTREAD_TAGRTM, IE(RUNTREAD)},
    {EFARM_PKT_DC_EAGER_MSGRTM, IE(DC_EAGER)},     {EFARM_PKT_DC_EAGER_TAGRTM, IE(DC_EAGER)},
    {EFARM_PKT_DC_MEDIUM_MSGRTM, IE(DC_MEDIUM)},   {EFARM_PKT_DC_MEDIUM_TAGRTM, IE(DC_MEDIUM)},
    {EFARM_PKT_DC_LONGCTS_MSGRTM, IE(DC_LONGCTS)}, {EFARM_PKT_DC_LONGCTS_TAGRTM, IE(DC_LONGCTS)},
};
#define IE_NREQ (sizeof(g_ie_req_types) / sizeof(g_ie_req_types[0]))

static const char *ie_strerror(int err)
{
    return efarm_strerror(err);
}

static void ie_req_done(struct efarm_req *req)
{
    struct ic_op *op = req->ctx;

    op->status = req->status;
    op->len = req->length;
    op->tag = efarm_tag_pack(req->context, req->source, req->tag);
    op->has_cq_data = req->has_cq_data;
    op->cq_data = req->cq_data;
    op->done = true;
}

struct efarm_req *ie_req(struct ie_side *s, uint32_t m, struct ic_op *op)
{
    struct efarm_req *req = &s->reqs[m];

    memset(req, 0, sizeof(*req));
    req->cb = ie_req_done;
    req->ctx = op;
    op->impl = req;
    return req;
}

static int ie_send(void *side, const struct ic_case *c, uint32_t m, const void *buf, uint64_t len,
                   struct ic_op *op)
{
    struct ie_side *s = side;
    uint64_t tag = ic_tag(c);
    uint32_t flags = (c->dc ? EFARM_SEND_DC : 0) | (c->cqdata ? EFARM_SEND_CQ_DATA : 0);
    struct efarm_req *req = ie_req(s, m, op);

    if (!c->tagged)
        return efarm_send(s->ep, s->peer, buf, len, flags, IC_CQ_DATA(c->index), req);
    return efarm_tsend(s->ep, s->peer, buf, len, (uint32_t)(tag >> 48),
                       (int32_t)(tag >> 24 & 0xffffff), (int32_t)(tag & 0xffffff), flags,
                       IC_CQ_DATA(c->index), req);
}

static int ie_recv(void *side, const struct ic_case *c, uint32_t m, void *buf, uint64_t len,
                   struct ic_op *op)
{
    struct ie_side *s = side;
    uint64_t tag = ic_tag(c);
    struct efarm_req *req = ie_req(s, m, op);

    if (!c->tagged)
        return efarm_recv(s->ep, buf, len, s->peer, req);
    return efarm_trecv(s->ep, buf, len, (uint32_t)(tag >> 48), (int32_t)(tag >> 24 & 0xffffff),
                       (int32_t)(tag & 0xffffff), req);
}

static int ie_progress(void *side)
{
    struct ie_side *s = side;
    int ret = efarm_ep_progress(s->ep);

    return ret < 0 ? ret : 0;
}

/* efarm counts every message that arrives before its receive: exact. */
static int ie_arrived(void *side, const struct ic_case *c, double since)
{
    struct ie_side *s = side;

    (void)since;
    return efarm_ep_counters(s->ep)->unexpected - s->unexpected_before >= c->nmsg;
}

static void ie_case_begin(void *side, const struct ic_case *c)
{
    struct ie_side *s = side;

    (void)c;
    s->before = *efarm_ep_counters(s->ep);
    s->unexpected_before = s->before.unexpected;
}

/* What the sender's selection may pick for one message. */
static unsigned ie_allowed(const struct ie_side *s, const struct ic_case *c, uint64_t size)
{
    bool fi_sends = c->dir == IC_FI_TO_EFARM;
    uint64_t medium_max = fi_sends ? 65536 : s->efarm_medium_max;
    uint64_t read_min = fi_sends ? 1048576 : s->efarm_read_min;
    unsigned allowed = 0;

    if (s->read_ok && size >= read_min) {
        allowed = IE(LONGREAD);
        if ((fi_sends ? s->fi_runt : s->efarm_runt) && !c->dc)
            allowed |= IE(RUNTREAD);
        /* A receiver that cannot register answers READ_NACK, the rest goes long-CTS;
         * a sender that cannot register sends long-CTS from the start. */
        if (s->reg_limited)
            allowed |= c->dc ? IE(DC_LONGCTS) : IE(LONGCTS);
        return allowed;
    }
    if (size <= s->eager_hi)
        allowed |= c->dc ? IE(DC_EAGER) : IE(EAGER);
    if (size > s->eager_lo && size <= medium_max)
        allowed |= c->dc ? IE(DC_MEDIUM) : IE(MEDIUM);
    if (size > medium_max)
        allowed |= c->dc ? IE(DC_LONGCTS) : IE(LONGCTS);
    return allowed;
}

static void ie_bits_print(FILE *out, unsigned bits)
{
    const char *sep = "";

    for (unsigned b = 0; b < IE_NPROTO; b++)
        if (bits & 1u << b) {
            fprintf(out, "%s%s", sep, g_ie_names[b]);
            sep = "|";
        }
    if (!*sep)
        fputs("none", out);
}

static unsigned ie_case_end(void *side, const struct ic_case *c)
{
    struct ie_side *s = side;
    const struct efarm_counters *now = efarm_ep_counters(s->ep);
    bool efarm_sends = c->dir == IC_EFARM_TO_FI;
    const uint64_t *a = efarm_sends ? now->tx_by_type : now->rx_by_type;
    const uint64_t *b = efarm_sends ? s->before.tx_by_type : s->before.rx_by_type;
    unsigned seen = 0, allowed = 0, defects = 0;
    uint64_t nreq = 0;

    for (unsigned i = 0; i < IE_NREQ; i++) {
        uint64_t n = a[g_ie_req_types[i].type] - b[g_ie_req_types[i].type];

        if (n) {
            seen |= g_ie_req_types[i].proto;
            nreq += n;
            for (unsigned p = 0; p < IE_NPROTO; p++)
                if (g_ie_req_types[i].proto & 1u << p)
                    s->counts[c->dir][p] += n;
        }
    }
    for (uint32_t m = 0; m < c->nmsg; m++)
        allowed |= ie_allowed(s, c, c->size[m]);
    s->seen[c->dir] |= seen;
    /* Medium and runt messages send several REQs; a message sends at least one. */
    if (nreq < c->nmsg || (seen & ~allowed) || !seen) {
        fprintf(stderr, "interop(efarm): case %u (%s, %llu B%s): subprotocol ", c->index,
                ic_dir_name(c->dir), (unsigned long long)c->size[0], c->dc ? ", DC" : "");
        ie_bits_print(stderr, seen);
        fprintf(stderr, " in %llu REQ(s), allowed ", (unsigned long long)nreq);
        ie_bits_print(stderr, allowed);
        fputc('\n', stderr);
        defects++;
    }
    if (s->verbose) {
        printf("  case %u subprotocol ", c->index);
        ie_bits_print(stdout, seen);
        printf(" (%llu REQ packets)\n", (unsigned long long)nreq);
    }
    return defects;
}

static const struct ic_side_ops g_ie_ops = {
    .name = "efarm",
    .send = ie_send,
    .recv = ie_recv,
    .progress = ie_progress,
    .arrived = ie_arrived,
    .case_begin = ie_case_begin,
    .case_end = ie_case_end,
    .strerror = ie_strerror,
    .rma = ie_rma,
    .rma_case_begin = ie_rma_case_begin,
    .rma_arrived = ie_rma_arrived,
    .rma_case_end = ie_rma_case_end,
    .rma_cq_data = ie_rma_cq_data,
};

/* ---- Command line ---------------------------------------------------------------- */

static const char g_usage[] =
    "usage: interop-efarm --listen SOCKET [--sizes LIST] [--no-bursts] [--no-dc]\n"
    "                     [--no-msg] [--rma] [--rma-fi LIST] [--rma-efarm LIST] [--atomics]\n"
    "                     [--refusals LIST]\n"
    "                     [--fi-rdma 0|1] [--fi-rdma-write 0|1] [--fi-unsolicited 0|1]\n"
    "                     [--fi-runt BYTES]\n"
    "                     [--expect LIST] [--expect-rma LIST] [--read-nack]\n"
    "                     [--timeout SECONDS] [-v]\n"
    "\n"
    "efarm's side of the efarm <-> libfabric interoperability test; interop-fi is\n"
    "the other. LIST of --sizes: bytes, comma-separated (K/M suffixes). --expect:\n"
    "subprotocols (eager,medium,longcts,longread,runtread,dc_eager,dc_medium,\n"
    "dc_longcts) that must have been used in both directions. --read-nack: efarm\n"
    "runs with registrations limited (EFASIM_MAX_MR), so messages of a read size\n"
    "may also end as long-CTS (READ_NACK, or a sender that cannot register).\n"
    "\n"
    "One-sided phase (after the two-sided cases; --no-msg skips those): --rma runs\n"
    "it with the default sizes, --rma-fi and --rma-efarm set the sizes of the\n"
    "operations libfabric or efarm starts (and run it): SIZE[:OPS], OPS letters\n"
    "of w (write), d (delivery-complete write), r (read), all by default; 'none'\n"
    "for atomics only. Defaults:\n"
    "  --rma-fi " IE_RMA_FI_SIZES "\n"
    "  --rma-efarm " IE_RMA_EFARM_SIZES "\n"
    "--atomics: and every atomic (kind, operation, datatype) libfabric's EFA\n"
    "provider carries, both ways, four elements each; each side first checks its\n"
    "own list of what it carries against the test's. --ranges: and writes and\n"
    "reads on 2-4 remote ranges (libfabric also from 2-4 local iovs) and an\n"
    "injected write. --writedata: and writes with remote CQ data both ways\n"
    "(fi_writedata, efarm_write_data; 16 B to 1 MiB, plain and delivery complete):\n"
    "the target must report each once, with its data and length. --refusals LIST: and\n"
    "operations on memory the target did not grant (a bad key, before or past the\n"
    "region, a read-only region; interop.h): fi (libfabric's writes and atomics),\n"
    "reads (both ways; only where reads are the device's), efarm-writes (a bad\n"
    "key; only where they are the device's), efarm-write-ranges (the others; only\n"
    "where libfabric's MR cache is off).\n"
    "--fi-unsolicited: libfabric's QP takes RDMA writes with immediate without a\n"
    "posted receive (extra feature 8; 1.22 and later on a device with it). Writes\n"
    "with CQ data go by RDMA only where efarm's QP is of the same kind.\n"
    "--fi-rdma-write: libfabric offers RDMA write (1.18 and later on a device\n"
    "with it). --expect-rma: one-sided subprotocols (direct_write,eager_rtw,\n"
    "dc_eager_rtw,longcts_rtw,dc_longcts_rtw,longread_rtw,direct_read,short_rtr,\n"
    "longcts_rtr,write_rta,dc_write_rta,fetch_rta,compare_rta) that must have been used, each\n"
    "optionally prefixed fi: or efarm: for the operations that side started only.\n";

static int parse_u64(const char *s, uint64_t *v_p)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -EINVAL;
    if (*end == 'K' || *end == 'k')
        v <<= 10, end++;
    else if (*end == 'M' || *end == 'm')
        v <<= 20, end++;
    if (*end && *end != ',')
        return -EINVAL;
    *v_p = v;
    return (int)(end - s);
}

static int parse_sizes(const char *list, struct ic_params *p)
{
    p->nsizes = 0;
    for (const char *s = list;;) {
        uint64_t v;
        int n = parse_u64(s, &v);

        if (n < 0 || p->nsizes == IC_MAX_SIZES || v > (1ull << 30))
            return -EINVAL;
        p->sizes[p->nsizes++] = v;
        s += n;
        if (*s == '\0')
            return 0;
        s++;
    }
}

static int parse_protos(const char *list, unsigned *bits_p)
{
    char buf[256], *save = NULL;

    if (strlen(list) >= sizeof(buf))
        return -EINVAL;
    strcpy(buf, list);
    *bits_p = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        unsigned b = 0;

        while (b < IE_NPROTO && strcmp(t, g_ie_names[b]))
            b++;
        if (b == IE_NPROTO)
            return -EINVAL;
        *bits_p |= 1u << b;
    }
    return 0;
}

/* SIZE[:OPS],... for one origin (IC_RMA_FROM_*), replacing its sizes; "none": no sizes. */
static int parse_rma_sizes(const char *list, unsigned from, struct ic_params *p)
{
    char buf[512], *save = NULL;
    uint32_t kept = 0;

    if (strlen(list) >= sizeof(buf))
        return -EINVAL;
    strcpy(buf, list);
    for (uint32_t i = 0; i < p->nrma; i++)
        if (!(p->rma_use[i] & from)) {
            p->rma_use[kept] = p->rma_use[i];
            p->rma_sizes[kept++] = p->rma_sizes[i];
        }
    p->nrma = kept;
    p->flags |= IC_F_RMA;
    if (strcmp(list, "none") == 0)
        return 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *ops = strchr(t, ':');
        unsigned use = from | (ops ? 0 : IC_RMA_DO_ALL);
        uint64_t v;

        if (ops)
            for (*ops++ = '\0'; *ops; ops++) {
                unsigned bit = *ops == 'w'   ? IC_RMA_DO_WRITE
                               : *ops == 'd' ? IC_RMA_DO_DCWRITE
                               : *ops == 'r' ? IC_RMA_DO_READ
                                             : 0;

                if (bit == 0)
                    return -EINVAL;
                use |= bit;
            }
        if (parse_u64(t, &v) != (int)strlen(t) || v == 0 || v > IC_RMA_MAX ||
            !(use & IC_RMA_DO_ALL) || p->nrma == IC_MAX_SIZES)
            return -EINVAL;
        p->rma_use[p->nrma] = (uint8_t)use;
        p->rma_sizes[p->nrma++] = v;
    }
    return 0;
}

static int ctl_accept(const char *path, double timeout_s)
{
    struct sockaddr_un sa;
    struct pollfd pfd;
    int lfd, fd;

    if (ic_unix_addr(path, &sa)) {
        fprintf(stderr, "interop-efarm: socket path too long: %s\n", path);
        return -1;
    }
    unlink(path);
    lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1)) {
        fprintf(stderr, "interop-efarm: cannot listen on %s: %s\n", path, strerror(errno));
        return -1;
    }
    pfd = (struct pollfd){.fd = lfd, .events = POLLIN};
    if (poll(&pfd, 1, (int)(timeout_s * 1000)) != 1) {
        fprintf(stderr, "interop-efarm: interop-fi did not connect to %s within %g s\n", path,
                timeout_s);
        close(lfd);
        return -1;
    }
    fd = accept(lfd, NULL, NULL);
    close(lfd);
    unlink(path);
    if (fd < 0)
        fprintf(stderr, "interop-efarm: accept: %s\n", strerror(errno));
    return fd;
}

static int ie_bad(const char *what, const char *arg)
{
    fprintf(stderr, "interop-efarm: bad %s '%s'\n%s", what, arg, g_usage);
    return 2;
}

/* Returns 0 (go on), 1 (help printed: exit 0) or 2 (bad usage, said why). */
static int ie_parse_args(int argc, char **argv, struct ie_args *a)
{
    static const struct option longopts[] = {
        {"listen", required_argument, NULL, 'l'},
        {"sizes", required_argument, NULL, 'z'},
        {"no-bursts", no_argument, NULL, 'B'},
        {"no-dc", no_argument, NULL, 'D'},
        {"fi-rdma", required_argument, NULL, 'r'},
        {"fi-runt", required_argument, NULL, 'R'},
        {"expect", required_argument, NULL, 'e'},
        {"timeout", required_argument, NULL, 't'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {"read-nack", no_argument, NULL, 'N'},
        {"no-msg", no_argument, NULL, 'M'},
        {"rma", no_argument, NULL, 'A'},
        {"rma-fi", required_argument, NULL, 'F'},
        {"rma-efarm", required_argument, NULL, 'E'},
        {"expect-rma", required_argument, NULL, 'X'},
        {"fi-rdma-write", required_argument, NULL, 'W'},
        {"fi-unsolicited", required_argument, NULL, 'I'},
        {"atomics", no_argument, NULL, 'T'},
        {"ranges", no_argument, NULL, 'G'},
        {"writedata", no_argument, NULL, 'Y'},
        {"refusals", required_argument, NULL, 'U'},
        {NULL, 0, NULL, 0},
    };
    int c;

    *a = (struct ie_args){.ropts = {.case_timeout_s = 60}, .fi_rdma = 1};
    parse_sizes("0,1,4096,8192,65536,65537,1048575,1048576,16M", &a->params);
    parse_rma_sizes(IE_RMA_FI_SIZES, IC_RMA_FROM_FI, &a->params);
    parse_rma_sizes(IE_RMA_EFARM_SIZES, IC_RMA_FROM_EFARM, &a->params);
    a->params.flags &= ~IC_F_RMA; /* the defaults, for --rma */
    while ((c = getopt_long(argc, argv, "v", longopts, NULL)) != -1) {
        switch (c) {
        case 'l':
            a->path = optarg;
            break;
        case 'z':
            if (parse_sizes(optarg, &a->params))
                return ie_bad("--sizes (at most 32, each <= 1G)", optarg);
            break;
        case 'B':
            a->params.flags |= IC_F_NO_BURSTS;
            break;
        case 'D':
            a->params.flags |= IC_F_NO_DC;
            break;
        case 'M':
            a->params.flags |= IC_F_NO_MSG;
            break;
        case 'A':
            a->params.flags |= IC_F_RMA;
            break;
        case 'T':
            a->params.flags |= IC_F_RMA | IC_F_ATOMICS;
            break;
        case 'G':
            a->params.flags |= IC_F_RMA | IC_F_RANGES;
            break;
        case 'Y':
            a->params.flags |= IC_F_RMA | IC_F_WRITEDATA;
            break;
        case 'U': {
            char buf[128], *save = NULL;

            if (strlen(optarg) >= sizeof(buf))
                return ie_bad("--refusals", optarg);
            strcpy(buf, optarg);
            for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                if (strcmp(t, "fi") == 0)
                    a->params.flags |= IC_F_REFUSALS;
                else if (strcmp(t, "reads") == 0)
                    a->params.flags |= IC_F_REFUSE_READS;
                else if (strcmp(t, "efarm-writes") == 0)
                    a->params.flags |= IC_F_REFUSE_EFARM_W;
                else if (strcmp(t, "efarm-write-ranges") == 0)
                    a->params.flags |= IC_F_REFUSE_EFARM_W_RANGES;
                else
                    return ie_bad("--refusals (fi,reads,efarm-writes,efarm-write-ranges)", optarg);
            }
            a->params.flags |= IC_F_RMA;
            break;
        }
        case 'F':
        case 'E':
            if (parse_rma_sizes(optarg, c == 'F' ? IC_RMA_FROM_FI : IC_RMA_FROM_EFARM, &a->params))
                return ie_bad(c == 'F' ? "--rma-fi" : "--rma-efarm", optarg);
            break;
        case 'r':
        case 'R':
        case 'W':
        case 'I': {
            uint64_t *v = c == 'r'   ? &a->fi_rdma
                          : c == 'R' ? &a->fi_runt
                          : c == 'W' ? &a->fi_rdma_write
                                     : &a->fi_unsolicited;

            if (parse_u64(optarg, v) != (int)strlen(optarg))
                return ie_bad("number", optarg);
            break;
        }
        case 'e':
            if (parse_protos(optarg, &a->expect))
                return ie_bad("--expect", optarg);
            break;
        case 'X':
            if (ie_rma_parse_expect(optarg, a->expect_rma))
                return ie_bad("--expect-rma", optarg);
            break;
        case 't':
            a->ropts.case_timeout_s = strtod(optarg, NULL);
            if (!(a->ropts.case_timeout_s > 0))
                return ie_bad("--timeout", optarg);
            break;
        case 'v':
            a->ropts.verbose = a->verbose = true;
            break;
        case 'N':
            a->read_nack = true;
            break;
        case 'h':
            fputs(g_usage, stdout);
            return 1;
        default:
            fputs(g_usage, stderr);
            return 2;
        }
    }
    if (a->path == NULL || optind < argc) {
        fputs(g_usage, stderr);
        return 2;
    }
    return 0;
}

/* Set up the side's view of what each selection may pick. */
static void ie_side_setup(struct ie_side *s, const struct ie_args *a)
{
    const struct efarm_device_caps *caps = efarm_ep_caps(s->ep);

    s->read_ok = a->fi_rdma && caps->rdma_read && efarm_config()->rdma_read;
    s->write_ok = a->fi_rdma_write && caps->rdma_write && efarm_config()->rdma_write;
    /*
     * A write with CQ data goes by RDMA only where both sides' QPs are of one
     * kind (extra feature 8); efarm's takes unsolicited writes where its device
     * offers them and it writes by RDMA (efarm_dev_ep_unsolicited).
     */
    s->imm_ok = (a->fi_unsolicited != 0) ==
                (caps->unsolicited_write_recv && caps->rdma_write && efarm_config()->rdma_write);
    s->fi_runt = a->fi_runt > 0;
    s->efarm_runt = efarm_config()->runt_size > 0;
    s->reg_limited = a->read_nack;
    s->verbose = a->verbose;
    s->eager_hi = caps->max_msg_size;
    s->eager_lo = caps->max_msg_size > 128 ? caps->max_msg_size - 128 : 0;
    {
        struct efarm_ep_policy pol; /* the thresholds in force: tunables or the profile */

        efarm_ep_policy(s->ep, &pol);
        s->efarm_medium_max = pol.medium_max;
        s->efarm_read_min = pol.read_min;
    }
}

/* The subprotocols each direction used and the --expect checks; returns the defects. */
static unsigned ie_report(const struct ie_side *s, const struct ie_args *a)
{
    unsigned defects = 0;

    for (unsigned dir = 0; dir < 2 && !(a->params.flags & IC_F_NO_MSG); dir++) {
        printf("%s:", ic_dir_name(dir));
        for (unsigned p = 0; p < IE_NPROTO; p++)
            if (s->counts[dir][p])
                printf(" %s=%lu", g_ie_names[p], s->counts[dir][p]);
        printf("\n");
        if (a->expect & ~s->seen[dir]) {
            fprintf(stderr, "interop-efarm: %s never used: ", ic_dir_name(dir));
            ie_bits_print(stderr, a->expect & ~s->seen[dir]);
            fputc('\n', stderr);
            defects++;
        }
    }
    if (a->params.flags & IC_F_RMA)
        defects += ie_rma_report(s, a);
    return defects;
}

int main(int argc, char **argv)
{
    static struct ic_case cases[IC_MAX_CASES];
    static struct ie_args a;
    struct ie_side s = {0};
    uint8_t mine[IC_RAW_ADDR], theirs[IC_RAW_ADDR];
    struct ic_msg info = {0};
    unsigned long tolerated = 0;
    unsigned ncases, nrma = 0;
    int fd, ret;

    signal(SIGPIPE, SIG_IGN);
    ret = ie_parse_args(argc, argv, &a);
    if (ret)
        return ret == 1 ? 0 : 2;
    ret = efarm_ep_open(NULL, &s.ep);
    if (ret) {
        fprintf(stderr, "interop-efarm: cannot open an endpoint: %s\n", efarm_strerror(ret));
        return 1;
    }
    ie_side_setup(&s, &a);
    efarm_ep_on_write_data(s.ep, ie_on_write_data, &s);
    efarm_ep_addr(s.ep, mine);

    fd = ctl_accept(a.path, a.ropts.case_timeout_s);
    if (fd < 0)
        goto err_close_ep;
    ret = ic_params_send(fd, &a.params);
    if (!ret)
        ret = ic_read(fd, &info, sizeof(info), (int)(a.ropts.case_timeout_s * 1000));
    if (!ret && info.kind != IC_INFO)
        ret = -EPROTO;
    a.ropts.fi_bugs = ic_fi_bugs(info.a);
    a.ropts.tolerated = &tolerated;
    /*
     * The unreadable write buffer shows only where a libfabric with RDMA write
     * emulates a write: to an efarm without RDMA write, or one with CQ data to an
     * efarm that disagrees on unsolicited write receive (ie_rma_unreadable).
     */
    s.fi_bugs = a.ropts.fi_bugs;
    if (!(a.fi_rdma_write && (!s.write_ok || !s.imm_ok)))
        s.fi_bugs &= ~IC_BUG_WRITE_BUF_UNREADABLE;
    s.tolerated = &tolerated;
    if (!ret)
        ret = ic_addr_exchange(fd, mine, theirs, (int)(a.ropts.case_timeout_s * 1000));
    if (!ret)
        ret = efarm_av_insert(s.ep, theirs, &s.peer);
    if (ret) {
        fprintf(stderr, "interop-efarm: setting up with interop-fi failed: %s\n",
                ret == -EPROTO ? "protocol error on the control channel" : efarm_strerror(ret));
        goto err_close_fd;
    }
    ncases = ic_cases(&a.params, cases, IC_MAX_CASES);
    ret = ic_run(&g_ie_ops, &s, true, fd, cases, ncases, &a.ropts);
    if (ret >= 0 && (a.params.flags & IC_F_RMA)) {
        int r = ie_rma_phase(&s, &g_ie_ops, fd, &a, &nrma);

        ret = r < 0 ? r : ret + r;
    }
    if (ret >= 0) {
        ret += (int)ie_report(&s, &a);
        printf("interop-efarm: libfabric %u.%u on the other side, %u cases (%u one-sided), "
               "%d defect(s)",
               info.a >> 16, info.a & 0xffff, ncases + nrma, nrma, ret);
        if (tolerated)
            printf(", %lu known libfabric defect(s) tolerated (see interop.h)", tolerated);
        printf("\n");
        ic_send(fd, IC_BYE, 0, 0);
    }
    /* On a failure too: the per-type counters show what crossed (an unserved REQ, say). */
    efarm_counters_print(stdout, efarm_ep_counters(s.ep));
    close(fd);
    efarm_ep_close(s.ep);
    return ret == 0 ? 0 : 1;

err_close_fd:
    close(fd);
err_close_ep:
    efarm_ep_close(s.ep);
    return 1;
}
