/*
 * interop-efarm: efarm's side of the interoperability test (interop.h).
 *
 *   interop-efarm --listen SOCKET [--sizes LIST] [--no-bursts] [--no-dc]
 *                 [--fi-rdma 0|1] [--fi-runt BYTES] [--expect LIST] [--read-nack]
 *                 [--timeout S] [-v]
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
 * was seen in both directions.
 *
 * Exit status: 0 when every case passed, 1 on a defect, 2 on bad usage.
 */
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>

#include "efarm_config.h"
#include "efarm_errno.h"
#include "efarm_pkt.h"
#include "efarm_proto.h"
#include "efarm_proto_v4.h"
#include "interop_driver.h"

/* The two-sided subprotocols a REQ type can name, as bits. */
#define IE_PROTO_LIST(X)      \
    X(EAGER, "eager")         \
    X(MEDIUM, "medium")       \
    X(LONGCTS, "longcts")     \
    X(LONGREAD, "longread")   \
    X(RUNTREAD, "runtread")   \
    X(DC_EAGER, "dc_eager")   \
    X(DC_MEDIUM, "dc_medium") \
    X(DC_LONGCTS, "dc_longcts")

enum {
#define IE_BIT_(id, name) IE_##id##_BIT,
    IE_PROTO_LIST(IE_BIT_)
#undef IE_BIT_
        IE_NPROTO
};
#define IE(id) (1u << IE_##id##_BIT)

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

struct ie_side {
    struct efarm_ep *ep;
    efarm_peer_t peer;
    struct efarm_req reqs[IC_BURST];
    struct efarm_counters before;
    uint64_t unexpected_before;
    /* What each side's selection may pick. */
    bool read_ok; /* both sides offer RDMA read */
    bool fi_runt, efarm_runt;
    bool reg_limited;  /* --read-nack: registrations fail, reads may end as long-CTS */
    uint64_t eager_hi; /* sizes up to here may still be eager (MTU) */
    uint64_t eager_lo; /* sizes up to here are eager for either side */
    uint64_t efarm_medium_max, efarm_read_min;
    unsigned seen[2]; /* subprotocols seen, per direction */
    unsigned long counts[2][IE_NPROTO];
    bool verbose;
};

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

static struct efarm_req *ie_req(struct ie_side *s, uint32_t m, struct ic_op *op)
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
};

/* ---- Command line ---------------------------------------------------------------- */

static const char g_usage[] =
    "usage: interop-efarm --listen SOCKET [--sizes LIST] [--no-bursts] [--no-dc]\n"
    "                     [--fi-rdma 0|1] [--fi-runt BYTES] [--expect LIST]\n"
    "                     [--read-nack] [--timeout SECONDS] [-v]\n"
    "\n"
    "efarm's side of the efarm <-> libfabric interoperability test; interop-fi is\n"
    "the other. LIST of --sizes: bytes, comma-separated (K/M suffixes). --expect:\n"
    "subprotocols (eager,medium,longcts,longread,runtread,dc_eager,dc_medium,\n"
    "dc_longcts) that must have been used in both directions. --read-nack: efarm\n"
    "runs with registrations limited (EFASIM_MAX_MR), so messages of a read size\n"
    "may also end as long-CTS (READ_NACK, or a sender that cannot register).\n";

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

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"listen", required_argument, NULL, 'l'},  {"sizes", required_argument, NULL, 'z'},
        {"no-bursts", no_argument, NULL, 'B'},     {"no-dc", no_argument, NULL, 'D'},
        {"fi-rdma", required_argument, NULL, 'r'}, {"fi-runt", required_argument, NULL, 'R'},
        {"expect", required_argument, NULL, 'e'},  {"timeout", required_argument, NULL, 't'},
        {"verbose", no_argument, NULL, 'v'},       {"help", no_argument, NULL, 'h'},
        {"read-nack", no_argument, NULL, 'N'},     {NULL, 0, NULL, 0},
    };
    static struct ic_case cases[IC_MAX_CASES];
    struct ic_params params = {0};
    struct ic_run_opts ropts = {.case_timeout_s = 60};
    struct ie_side s = {0};
    const char *path = NULL;
    uint64_t fi_runt = 0, fi_rdma = 1;
    unsigned expect = 0, ncases;
    uint8_t mine[IC_RAW_ADDR], theirs[IC_RAW_ADDR];
    const struct efarm_device_caps *caps;
    struct ic_msg info = {0};
    unsigned long tolerated = 0;
    int c, fd, ret;

    signal(SIGPIPE, SIG_IGN);
    parse_sizes("0,1,4096,8192,65536,65537,1048575,1048576,16M", &params);
    while ((c = getopt_long(argc, argv, "v", longopts, NULL)) != -1) {
        switch (c) {
        case 'l':
            path = optarg;
            break;
        case 'z':
            if (parse_sizes(optarg, &params)) {
                fprintf(stderr, "interop-efarm: bad --sizes '%s' (at most %d, each <= 1G)\n",
                        optarg, IC_MAX_SIZES);
                return 2;
            }
            break;
        case 'B':
            params.flags |= IC_F_NO_BURSTS;
            break;
        case 'D':
            params.flags |= IC_F_NO_DC;
            break;
        case 'r':
        case 'R':
            if (parse_u64(optarg, c == 'r' ? &fi_rdma : &fi_runt) != (int)strlen(optarg)) {
                fprintf(stderr, "interop-efarm: bad number '%s'\n", optarg);
                return 2;
            }
            break;
        case 'e':
            if (parse_protos(optarg, &expect)) {
                fprintf(stderr, "interop-efarm: bad --expect '%s'\n%s", optarg, g_usage);
                return 2;
            }
            break;
        case 't':
            ropts.case_timeout_s = strtod(optarg, NULL);
            if (!(ropts.case_timeout_s > 0)) {
                fprintf(stderr, "interop-efarm: bad --timeout '%s'\n", optarg);
                return 2;
            }
            break;
        case 'v':
            ropts.verbose = s.verbose = true;
            break;
        case 'N':
            s.reg_limited = true;
            break;
        case 'h':
            fputs(g_usage, stdout);
            return 0;
        default:
            fputs(g_usage, stderr);
            return 2;
        }
    }
    if (path == NULL || optind < argc) {
        fputs(g_usage, stderr);
        return 2;
    }

    ret = efarm_ep_open(NULL, &s.ep);
    if (ret) {
        fprintf(stderr, "interop-efarm: cannot open an endpoint: %s\n", efarm_strerror(ret));
        return 1;
    }
    caps = efarm_ep_caps(s.ep);
    s.read_ok = fi_rdma && caps->rdma_read && efarm_config()->rdma_read;
    s.fi_runt = fi_runt > 0;
    s.efarm_runt = efarm_config()->runt_size > 0;
    s.eager_hi = caps->max_msg_size;
    s.eager_lo = caps->max_msg_size > 128 ? caps->max_msg_size - 128 : 0;
    s.efarm_medium_max = efarm_config()->medium_max;
    s.efarm_read_min = efarm_config()->read_min;
    efarm_ep_addr(s.ep, mine);

    fd = ctl_accept(path, ropts.case_timeout_s);
    if (fd < 0)
        goto err_close_ep;
    ret = ic_params_send(fd, &params);
    if (!ret)
        ret = ic_read(fd, &info, sizeof(info), (int)(ropts.case_timeout_s * 1000));
    if (!ret && info.kind != IC_INFO)
        ret = -EPROTO;
    ropts.fi_bugs = ic_fi_bugs(info.a);
    ropts.tolerated = &tolerated;
    if (!ret)
        ret = ic_addr_exchange(fd, mine, theirs, (int)(ropts.case_timeout_s * 1000));
    if (!ret)
        ret = efarm_av_insert(s.ep, theirs, &s.peer);
    if (ret) {
        fprintf(stderr, "interop-efarm: setting up with interop-fi failed: %s\n",
                ret == -EPROTO ? "protocol error on the control channel" : efarm_strerror(ret));
        goto err_close_fd;
    }
    ncases = ic_cases(&params, cases, IC_MAX_CASES);
    ret = ic_run(&g_ie_ops, &s, true, fd, cases, ncases, &ropts);
    if (ret >= 0) {
        for (unsigned dir = 0; dir < 2; dir++) {
            printf("%s:", ic_dir_name(dir));
            for (unsigned p = 0; p < IE_NPROTO; p++)
                if (s.counts[dir][p])
                    printf(" %s=%lu", g_ie_names[p], s.counts[dir][p]);
            printf("\n");
            if (expect & ~s.seen[dir]) {
                fprintf(stderr, "interop-efarm: %s never used: ", ic_dir_name(dir));
                ie_bits_print(stderr, expect & ~s.seen[dir]);
                fputc('\n', stderr);
                ret++;
            }
        }
        printf("interop-efarm: libfabric %u.%u on the other side, %u cases, %d defect(s)",
               info.a >> 16, info.a & 0xffff, ncases, ret);
        if (tolerated)
            printf(", %lu known libfabric defect(s) tolerated (see interop.h)", tolerated);
        printf("\n");
        efarm_counters_print(stdout, efarm_ep_counters(s.ep));
        ic_send(fd, IC_BYE, 0, 0);
    }
    close(fd);
    efarm_ep_close(s.ep);
    return ret == 0 ? 0 : 1;

err_close_fd:
    close(fd);
err_close_ep:
    efarm_ep_close(s.ep);
    return 1;
}
