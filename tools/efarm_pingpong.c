/*
 * efarm-pingpong: two processes exchange tagged messages through the
 * protocol engine (efarm_proto.h). It is the engine's user-facing example:
 * open an endpoint, publish its address, insert a peer, send, receive,
 * progress, read the counters.
 *
 *   efarm-pingpong --server ADDRFILE             echo every message back
 *   efarm-pingpong --client ADDRFILE [options]   ping-pong each size, print figures
 *   efarm-pingpong [options]                     both: a forked server, this process the client
 *
 * The server opens an endpoint and writes its 32-byte raw address as 64 hex
 * digits to ADDRFILE, under a temporary name renamed into place, so a reader
 * never sees half an address. It needs nothing from the client: the client's
 * first REQ carries the raw-address header, the engine adds the client to the
 * server's address vector on its own, and the receive names it in req.peer,
 * which is where the echoes go.
 *
 * Messages (context 0): HELLO carries the largest size the client will send
 * (the server sizes its buffers by it) and is answered by an empty HELLO;
 * DATA is echoed; an empty EXIT ends the server. The client posts the receive
 * of each echo before sending, so echoes take the engine's expected path.
 * With --check every message carries a pattern that depends on its size and
 * iteration, and the client checks every byte of every echo.
 *
 * Nothing waits forever: the client gives up when the address file does not
 * appear or the server does not answer within --timeout seconds, the server
 * when no client comes or it falls silent; both then exit 1 with a message.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "efarm_byteorder.h"
#include "efarm_errno.h"
#include "efarm_hex.h"
#include "efarm_proto.h"

#define PP_CONTEXT    0
#define PP_SRC_CLIENT 0
#define PP_SRC_SERVER 1
#define PP_TAG_HELLO  1
#define PP_TAG_DATA   2
#define PP_TAG_EXIT   3
#define PP_TAG_STREAM 4 /* --window: a message the server only receives */
#define PP_WINDOW_MAX 256

#define PP_MAX_SIZES 64
#define PP_SIZE_MAX  (1ull << 30) /* the server allocates two buffers of the largest size */
#define PP_ITERS_MAX 10000000

struct pp_opts {
    const char *server_file, *client_file;
    uint64_t sizes[PP_MAX_SIZES];
    unsigned nsizes;
    long iters;
    double timeout_s;
    bool check;
    unsigned window; /* 0: ping-pong; W: W messages one way, then a 0-byte answer */
};

static const char g_usage[] =
    "usage: efarm-pingpong [--server ADDRFILE | --client ADDRFILE] [--sizes LIST]\n"
    "                      [--iters N] [--check] [--timeout SECONDS] [--window W]\n"
    "\n"
    "Ping-pong between two processes through efarm's protocol engine.\n"
    "\n"
    "  --server ADDRFILE  open an endpoint, write its raw address (64 hex digits) to\n"
    "                     ADDRFILE, echo messages until the client says to stop\n"
    "  --client ADDRFILE  read the server's address from ADDRFILE (waiting for it to\n"
    "                     appear), ping-pong each size, print figures and counters\n"
    "  (neither)          run both: the server in a forked child, the address file in\n"
    "                     a temporary directory\n"
    "  --sizes LIST       message sizes in bytes, comma-separated, K/M suffixes for\n"
    "                     KiB/MiB (default 8,4096,65536,1048576)\n"
    "  --iters N          timed round trips per size (default 1000), after N/10 (at\n"
    "                     least 1, at most 100) warm-up round trips\n"
    "  --check            fill every message with a pattern of its size and iteration\n"
    "                     and check every byte of every echo\n"
    "  --timeout SECONDS  give up, with exit status 1, after this long without the\n"
    "                     address file, the server's answer or a client (default 30)\n"
    "  --window W         bandwidth instead: each iteration sends W messages at once\n"
    "                     (1..256, all in flight) and waits for the server's 0-byte\n"
    "                     answer to the last; the latency columns are the iteration's\n"
    "                     time / W, MB/s is W x size over that time (--check ignored)\n"
    "\n"
    "Per size the client prints the subprotocol(s) its sends used, the median and 99th\n"
    "percentile one-way latency (half the round trip), the bandwidth (bytes of one\n"
    "message over the mean one-way time) and that mean (as fi_pingpong's usec/xfer),\n"
    "then its endpoint's counters. The device is the one an MPI rank alone on its node\n"
    "would get (EFARM_IFACE=NAME picks one). Over efasim:\n"
    "EFARM_DEVICE=sim EFARM_EFASIM_PATH=<build>/src/efasim/.libs. Between two hosts\n"
    "ADDRFILE must be on a file system both see.\n";

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- Command line ---------------------------------------------------------------- */

/* One size: decimal digits and an optional K or M (KiB, MiB). Returns 0 or -EINVAL. */
static int parse_size(const char *s, const char *end, uint64_t *size_p)
{
    uint64_t v = 0, unit = 1;
    const char *p = s;

    if (p == end)
        return -EINVAL;
    for (; p < end && *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - 9) / 10)
            return -EINVAL;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (p == s)
        return -EINVAL;
    if (p < end && (*p == 'k' || *p == 'K'))
        unit = 1024, p++;
    else if (p < end && (*p == 'm' || *p == 'M'))
        unit = 1024 * 1024, p++;
    if (p != end || v > PP_SIZE_MAX / unit)
        return -EINVAL;
    *size_p = v * unit;
    return 0;
}

static int parse_sizes(const char *list, struct pp_opts *o)
{
    const char *s = list;

    o->nsizes = 0;
    for (;;) {
        const char *comma = strchr(s, ',');
        const char *end = comma ? comma : s + strlen(s);

        if (o->nsizes == PP_MAX_SIZES || parse_size(s, end, &o->sizes[o->nsizes]))
            return -EINVAL;
        o->nsizes++;
        if (comma == NULL)
            return 0;
        s = comma + 1;
    }
}

/* Returns 0, 1 (--help printed) or 2 (bad usage, message printed). */
static int parse_args(int argc, char **argv, struct pp_opts *o)
{
    static const struct option longopts[] = {
        {"server", required_argument, NULL, 's'},
        {"client", required_argument, NULL, 'c'},
        {"sizes", required_argument, NULL, 'z'},
        {"iters", required_argument, NULL, 'n'},
        {"check", no_argument, NULL, 'k'},
        {"timeout", required_argument, NULL, 't'},
        {"window", required_argument, NULL, 'w'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    char *end;
    int c;

    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            o->server_file = optarg;
            break;
        case 'c':
            o->client_file = optarg;
            break;
        case 'z':
            if (parse_sizes(optarg, o)) {
                fprintf(stderr,
                        "efarm-pingpong: bad --sizes '%s' (at most %d sizes, each at most "
                        "1024M)\n",
                        optarg, PP_MAX_SIZES);
                return 2;
            }
            break;
        case 'n':
            errno = 0;
            o->iters = strtol(optarg, &end, 10);
            if (errno || *end || o->iters < 1 || o->iters > PP_ITERS_MAX) {
                fprintf(stderr, "efarm-pingpong: bad --iters '%s' (1..%d)\n", optarg, PP_ITERS_MAX);
                return 2;
            }
            break;
        case 'k':
            o->check = true;
            break;
        case 'w':
            errno = 0;
            o->window = (unsigned)strtoul(optarg, &end, 10);
            if (errno || *end || o->window < 1 || o->window > PP_WINDOW_MAX) {
                fprintf(stderr, "efarm-pingpong: bad --window '%s' (1..%d)\n", optarg,
                        PP_WINDOW_MAX);
                return 2;
            }
            break;
        case 't':
            o->timeout_s = strtod(optarg, &end);
            if (*end || !(o->timeout_s > 0 && o->timeout_s < 1e6)) {
                fprintf(stderr, "efarm-pingpong: bad --timeout '%s'\n", optarg);
                return 2;
            }
            break;
        case 'h':
            fputs(g_usage, stdout);
            return 1;
        default:
            fputs(g_usage, stderr);
            return 2;
        }
    }
    if (optind < argc || (o->server_file && o->client_file)) {
        fprintf(stderr, "efarm-pingpong: %s\n%s",
                optind < argc ? "unexpected argument" : "--server and --client exclude each other",
                g_usage);
        return 2;
    }
    return 0;
}

/* ---- Address file ---------------------------------------------------------------- */

static int addrfile_write(const char *path, const uint8_t raw[EFARM_RAW_ADDR_LEN])
{
    char tmp[PATH_MAX], text[2 * EFARM_RAW_ADDR_LEN + 2];
    int fd, n;

    n = snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof(tmp)) {
        fprintf(stderr, "efarm-pingpong: address file name too long: %s\n", path);
        return -ENAMETOOLONG;
    }
    for (int i = 0; i < EFARM_RAW_ADDR_LEN; i++)
        snprintf(text + 2 * i, 3, "%02x", raw[i]);
    text[2 * EFARM_RAW_ADDR_LEN] = '\n';
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, text, sizeof(text) - 1) != (ssize_t)(sizeof(text) - 1) || fsync(fd) ||
        close(fd) || rename(tmp, path)) {
        int err = errno;

        fprintf(stderr, "efarm-pingpong: cannot write address file %s: %s\n", path, strerror(err));
        if (fd >= 0)
            unlink(tmp);
        return -err;
    }
    return 0;
}

/* Parse 64 hex digits, whitespace around them allowed. Returns 0 or -EINVAL with a message. */
static int addr_parse(const char *path, const char *text, size_t len,
                      uint8_t raw[EFARM_RAW_ADDR_LEN])
{
    size_t digits = 0;

    for (size_t i = 0; i < len; i++) {
        int d = efarm_hex_digit((unsigned char)text[i]);

        if (d < 0) {
            if (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')
                continue;
            fprintf(stderr,
                    "efarm-pingpong: %s: character %#x at offset %zu is not a hex digit (the "
                    "file must hold a 32-byte raw address as 64 hex digits)\n",
                    path, (unsigned char)text[i], i);
            return -EINVAL;
        }
        if (digits == 2 * EFARM_RAW_ADDR_LEN) {
            digits++;
            break;
        }
        if (digits % 2 == 0)
            raw[digits / 2] = (uint8_t)(d << 4);
        else
            raw[digits / 2] |= (uint8_t)d;
        digits++;
    }
    if (digits != 2 * EFARM_RAW_ADDR_LEN) {
        fprintf(stderr,
                "efarm-pingpong: %s: %s hex digits, expected exactly %d (a 32-byte raw "
                "address)\n",
                path, digits > 2 * EFARM_RAW_ADDR_LEN ? "more than 64" : "fewer", 2 * 32);
        return -EINVAL;
    }
    return 0;
}

/*
 * Wait for the address file and read it. `server` (nonzero in the forked mode)
 * is the server's pid: its early death ends the wait at once.
 */
static int addrfile_read(const char *path, double timeout_s, pid_t server,
                         uint8_t raw[EFARM_RAW_ADDR_LEN])
{
    double deadline = now_s() + timeout_s;
    char text[256];
    ssize_t len;
    int fd;

    while ((fd = open(path, O_RDONLY)) < 0) {
        int status;

        if (errno != ENOENT) {
            fprintf(stderr, "efarm-pingpong: cannot open address file %s: %s\n", path,
                    strerror(errno));
            return -errno;
        }
        if (server > 0 && waitpid(server, &status, WNOHANG) == server) {
            fprintf(stderr, "efarm-pingpong: the server exited before writing %s\n", path);
            return -ESRCH;
        }
        if (now_s() > deadline) {
            fprintf(stderr,
                    "efarm-pingpong: no address file %s after %g s (is the server "
                    "running?)\n",
                    path, timeout_s);
            return -ETIMEDOUT;
        }
        usleep(10000);
    }
    len = read(fd, text, sizeof(text));
    close(fd);
    if (len < 0) {
        fprintf(stderr, "efarm-pingpong: cannot read address file %s: %s\n", path, strerror(errno));
        return -EIO;
    }
    return addr_parse(path, text, (size_t)len, raw);
}

/* ---- Engine helpers -------------------------------------------------------------- */

/* The device as an MPI rank alone on its node would choose it (EFARM_IFACE narrows it). */
static int ep_open(struct efarm_ep **ep_p)
{
    char name[EFARM_DEV_NAME_MAX];
    struct efarm_ep_attr attr = {0};
    int ret = efarm_dev_choose_nic(0, 1, NULL, name, NULL);

    if (ret == 0) {
        attr.device = name;
        ret = efarm_ep_open(&attr, ep_p);
    }

    if (ret)
        fprintf(stderr,
                "efarm-pingpong: cannot open an endpoint: %s (no EFA device? over efasim set "
                "EFARM_DEVICE=sim EFARM_EFASIM_PATH=<build>/src/efasim/.libs)\n",
                efarm_strerror(ret));
    return ret;
}

/*
 * Progress until a (and b, unless NULL) are done, or the deadline passes.
 * Returns 0, -ETIMEDOUT or the device's error, with a message naming `what`.
 */
static int wait_reqs(struct efarm_ep *ep, const struct efarm_req *a, const struct efarm_req *b,
                     double deadline, const char *what)
{
    unsigned spins = 0;

    while (!a->done || (b && !b->done)) {
        int ret = efarm_ep_progress(ep);

        if (ret < 0) {
            fprintf(stderr, "efarm-pingpong: %s: device failed: %s\n", what, efarm_strerror(ret));
            return ret;
        }
        if (++spins % 1024 == 0 && now_s() > deadline) {
            fprintf(stderr, "efarm-pingpong: %s: no progress before the deadline (--timeout)\n",
                    what);
            return -ETIMEDOUT;
        }
    }
    return 0;
}

static int req_status(const struct efarm_req *req, const char *what)
{
    if (req->status)
        fprintf(stderr, "efarm-pingpong: %s failed: %s\n", what, efarm_strerror(req->status));
    return req->status;
}

/* ---- Data pattern ---------------------------------------------------------------- */

/* 64-bit word k of the message of size `size` in iteration `iter`. */
static inline uint64_t pattern_word(uint64_t size, long iter, uint64_t k)
{
    uint64_t x = (k + 1) * 0x9e3779b97f4a7c15ull ^
                 (size * 0x100000001b3ull + (uint64_t)iter) * 0xc2b2ae3d27d4eb4full;

    return x ^ x >> 29;
}

static void pattern_fill(uint8_t *buf, uint64_t size, long iter)
{
    uint64_t k = 0;

    for (; (k + 1) * 8 <= size; k++) {
        uint64_t w = pattern_word(size, iter, k);

        memcpy(buf + k * 8, &w, 8);
    }
    if (k * 8 < size) {
        uint64_t w = pattern_word(size, iter, k);

        memcpy(buf + k * 8, &w, size - k * 8);
    }
}

/* Returns the first offset that differs from the pattern, or size when none does. */
static uint64_t pattern_check(const uint8_t *buf, uint64_t size, long iter)
{
    uint8_t want[8];

    for (uint64_t k = 0; k * 8 < size; k++) {
        uint64_t w = pattern_word(size, iter, k), n = size - k * 8 < 8 ? size - k * 8 : 8;

        memcpy(want, &w, 8);
        if (memcmp(buf + k * 8, want, n) == 0)
            continue;
        for (uint64_t i = 0; i < n; i++)
            if (buf[k * 8 + i] != want[i])
                return k * 8 + i;
    }
    return size;
}

/* ---- Server ---------------------------------------------------------------------- */

static const char *g_server_file; /* removed at exit once written */

static void server_cleanup(void)
{
    if (g_server_file)
        unlink(g_server_file);
}

/* Wait for HELLO, answer it; returns the client's largest size in *max_p. */
static int server_hello(struct efarm_ep *ep, const struct pp_opts *o, efarm_peer_t *client_p,
                        uint64_t *max_p, unsigned *window_p)
{
    struct efarm_req rreq = {0}, sreq = {0};
    uint8_t hello[16];
    int ret;

    ret = efarm_trecv(ep, hello, sizeof(hello), PP_CONTEXT, EFARM_ANY_SOURCE, PP_TAG_HELLO, &rreq);
    if (ret == 0)
        ret = wait_reqs(ep, &rreq, NULL, now_s() + o->timeout_s, "waiting for a client");
    if (ret || req_status(&rreq, "receiving the client's HELLO"))
        return ret ? ret : rreq.status;
    /* HELLO: the largest size, and with --window the window. */
    *max_p = rreq.length >= 8 ? efarm_load_le64(hello) : UINT64_MAX;
    *window_p = rreq.length == 16 ? (unsigned)efarm_load_le64(hello + 8) : 0;
    if (*max_p > PP_SIZE_MAX || *window_p > PP_WINDOW_MAX ||
        (rreq.length != 8 && rreq.length != 16)) {
        fprintf(stderr, "efarm-pingpong: bad HELLO from the client\n");
        return -EPROTO;
    }
    ret = efarm_tsend(ep, rreq.peer, NULL, 0, PP_CONTEXT, PP_SRC_SERVER, PP_TAG_HELLO, 0, 0, &sreq);
    if (ret == 0)
        ret = wait_reqs(ep, &sreq, NULL, now_s() + o->timeout_s, "answering HELLO");
    if (ret || req_status(&sreq, "answering HELLO"))
        return ret ? ret : sreq.status;
    *client_p = rreq.peer;
    return 0;
}

/*
 * Echo loop with two buffers: the receive of the next message is posted into
 * one before the echo of the current one leaves from the other.
 */
static int server_echo(struct efarm_ep *ep, const struct pp_opts *o, uint64_t max,
                       uint64_t *echoed_p)
{
    struct efarm_req rreq[2] = {{0}}, sreq = {.done = true};
    uint8_t *buf[2] = {malloc(max ? max : 1), malloc(max ? max : 1)};
    unsigned cur = 0;
    int ret = -ENOMEM;

    if (!buf[0] || !buf[1]) {
        fprintf(stderr, "efarm-pingpong: cannot allocate 2 x %" PRIu64 " bytes\n", max);
        goto free_buffers;
    }
    ret = efarm_trecv(ep, buf[0], max, PP_CONTEXT, EFARM_ANY_SOURCE, EFARM_ANY_TAG, &rreq[0]);
    for (;;) {
        if (ret)
            break;
        ret = wait_reqs(ep, &rreq[cur], NULL, now_s() + o->timeout_s, "waiting for the client");
        if (ret || (ret = req_status(&rreq[cur], "receiving a message")))
            break;
        if (rreq[cur].tag == PP_TAG_EXIT)
            break;
        /* The previous echo left from the other buffer: it must be done before we reuse it. */
        ret = wait_reqs(ep, &sreq, NULL, now_s() + o->timeout_s, "echoing");
        if (ret || (ret = req_status(&sreq, "echoing a message")))
            break;
        rreq[cur ^ 1] = (struct efarm_req){0};
        ret = efarm_trecv(ep, buf[cur ^ 1], max, PP_CONTEXT, EFARM_ANY_SOURCE, EFARM_ANY_TAG,
                          &rreq[cur ^ 1]);
        if (ret)
            break;
        sreq = (struct efarm_req){0};
        ret = efarm_tsend(ep, rreq[cur].peer, buf[cur], rreq[cur].length, PP_CONTEXT, PP_SRC_SERVER,
                          PP_TAG_DATA, 0, 0, &sreq);
        (*echoed_p)++;
        cur ^= 1;
    }
    if (ret == 0)
        ret = wait_reqs(ep, &sreq, NULL, now_s() + o->timeout_s, "echoing the last message");
    if (ret == 0)
        ret = req_status(&sreq, "echoing the last message");
free_buffers:
    free(buf[0]);
    free(buf[1]);
    return ret;
}

/*
 * --window: W receives posted at once (all into one buffer: the data is not
 * looked at), then a 0-byte answer once the last has arrived; until the
 * client's goodbye ends it.
 */
static int server_stream(struct efarm_ep *ep, const struct pp_opts *o, uint64_t max,
                         unsigned window, uint64_t *received_p)
{
    struct efarm_req rreq[PP_WINDOW_MAX], sreq = {.done = true};
    uint8_t *buf = malloc(max ? max : 1);
    int ret = buf ? 0 : -ENOMEM;

    while (ret == 0) {
        efarm_peer_t from = EFARM_PEER_NONE;
        bool bye = false;

        for (unsigned i = 0; i < window && ret == 0; i++) {
            rreq[i] = (struct efarm_req){0};
            ret = efarm_trecv(ep, buf, max, PP_CONTEXT, EFARM_ANY_SOURCE, EFARM_ANY_TAG, &rreq[i]);
        }
        for (unsigned i = 0; i < window && ret == 0 && !bye; i++) {
            ret = wait_reqs(ep, &rreq[i], NULL, now_s() + o->timeout_s, "waiting for the client");
            if (ret == 0)
                ret = req_status(&rreq[i], "receiving a message");
            bye = ret == 0 && rreq[i].tag == PP_TAG_EXIT;
            from = rreq[i].peer;
            (*received_p)++;
        }
        if (ret || bye)
            break; /* the receives still posted end with the endpoint */
        ret = wait_reqs(ep, &sreq, NULL, now_s() + o->timeout_s, "answering");
        if (ret == 0)
            ret = req_status(&sreq, "answering");
        sreq = (struct efarm_req){0};
        if (ret == 0)
            ret =
                efarm_tsend(ep, from, NULL, 0, PP_CONTEXT, PP_SRC_SERVER, PP_TAG_DATA, 0, 0, &sreq);
    }
    if (ret == 0)
        ret = wait_reqs(ep, &sreq, NULL, now_s() + o->timeout_s, "answering the last window");
    free(buf);
    return ret;
}

/* `verbose` (a server of its own, not the forked one) says what happens, and the counters. */
static int run_server(const struct pp_opts *o, bool verbose)
{
    uint8_t raw[EFARM_RAW_ADDR_LEN];
    uint64_t max = 0, echoed = 0;
    unsigned window = 0;
    struct efarm_ep *ep;
    efarm_peer_t client = EFARM_PEER_NONE;
    int ret;

    ret = ep_open(&ep);
    if (ret)
        return 1;
    efarm_ep_addr(ep, raw);
    ret = addrfile_write(o->server_file, raw);
    if (ret == 0) {
        g_server_file = o->server_file;
        atexit(server_cleanup);
        if (verbose) {
            printf("efarm-pingpong: server address ");
            for (int i = 0; i < EFARM_RAW_ADDR_LEN; i++)
                printf("%02x", raw[i]);
            printf(" in %s, waiting up to %g s for a client\n", o->server_file, o->timeout_s);
            fflush(stdout);
        }
        ret = server_hello(ep, o, &client, &max, &window);
    }
    if (ret == 0 && verbose) {
        printf("efarm-pingpong: client connected (peer %u, learnt from its raw-address header), "
               "messages up to %" PRIu64 " bytes\n",
               client, max);
        fflush(stdout);
    }
    if (ret == 0)
        ret =
            window ? server_stream(ep, o, max, window, &echoed) : server_echo(ep, o, max, &echoed);
    if (verbose) {
        printf("efarm-pingpong: %" PRIu64 " messages echoed%s\n\nengine counters (server):\n",
               echoed, ret ? ", then failed" : "; the client said goodbye");
        efarm_counters_print(stdout, efarm_ep_counters(ep));
    }
    efarm_ep_close(ep);
    return ret ? 1 : 0;
}

/* ---- Client ---------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static int client_hello(struct efarm_ep *ep, efarm_peer_t server, const struct pp_opts *o,
                        uint64_t max)
{
    struct efarm_req rreq = {0}, sreq = {0};
    uint8_t hello[16];
    int ret;

    efarm_store_le64(hello, max);
    efarm_store_le64(hello + 8, o->window);
    ret = efarm_trecv(ep, NULL, 0, PP_CONTEXT, PP_SRC_SERVER, PP_TAG_HELLO, &rreq);
    if (ret == 0)
        ret = efarm_tsend(ep, server, hello, o->window ? 16 : 8, PP_CONTEXT, PP_SRC_CLIENT,
                          PP_TAG_HELLO, 0, 0, &sreq);
    if (ret == 0)
        ret = wait_reqs(ep, &rreq, &sreq, now_s() + o->timeout_s,
                        "waiting for the server's answer (is the address file current?)");
    if (ret == 0 && (req_status(&sreq, "sending HELLO") || req_status(&rreq, "receiving HELLO")))
        ret = sreq.status ? sreq.status : rreq.status;
    return ret;
}

struct pp_buffers {
    uint8_t *send, *recv;
    double *lat;
};

/* One round trip of iteration `iter` (negative: warm-up); its one-way time in *us_p. */
static int client_round(struct efarm_ep *ep, efarm_peer_t server, const struct pp_opts *o,
                        const struct pp_buffers *b, uint64_t size, long iter, unsigned *protos,
                        double *us_p)
{
    struct efarm_req rreq = {0}, sreq = {0};
    double deadline, t0;
    uint64_t bad;
    int ret;

    if (o->check) {
        pattern_fill(b->send, size, iter);
        memset(b->recv, 0, size);
    }
    deadline = now_s() + o->timeout_s;
    t0 = now_s();
    ret = efarm_trecv(ep, b->recv, size, PP_CONTEXT, PP_SRC_SERVER, PP_TAG_DATA, &rreq);
    if (ret == 0)
        ret = efarm_tsend(ep, server, b->send, size, PP_CONTEXT, PP_SRC_CLIENT, PP_TAG_DATA, 0, 0,
                          &sreq);
    if (ret == 0)
        ret = wait_reqs(ep, &rreq, &sreq, deadline, "waiting for an echo");
    if (ret)
        return ret;
    *us_p = (now_s() - t0) * 1e6 / 2;
    if (req_status(&sreq, "sending") || req_status(&rreq, "receiving an echo"))
        return sreq.status ? sreq.status : rreq.status;
    *protos |= 1u << sreq.proto;
    if (rreq.length != size || rreq.msg_length != size) {
        fprintf(stderr,
                "efarm-pingpong: size %" PRIu64 " iteration %ld: echo of %" PRIu64 " bytes\n", size,
                iter, rreq.msg_length);
        return -EPROTO;
    }
    if (o->check && (bad = pattern_check(b->recv, size, iter)) != size) {
        fprintf(stderr,
                "efarm-pingpong: size %" PRIu64 " iteration %ld: byte %" PRIu64
                " of the echo is wrong\n",
                size, iter, bad);
        return -EPROTO;
    }
    return 0;
}

/* --window: W sends at once and the server's answer; the time per message in *us_p. */
static int client_window(struct efarm_ep *ep, efarm_peer_t server, const struct pp_opts *o,
                         const struct pp_buffers *b, uint64_t size, unsigned *protos, double *us_p)
{
    struct efarm_req sreq[PP_WINDOW_MAX], rreq = {0};
    double deadline = now_s() + o->timeout_s, t0 = now_s();
    int ret;

    ret = efarm_trecv(ep, NULL, 0, PP_CONTEXT, PP_SRC_SERVER, PP_TAG_DATA, &rreq);
    for (unsigned i = 0; i < o->window && ret == 0; i++) {
        sreq[i] = (struct efarm_req){0};
        ret = efarm_tsend(ep, server, b->send, size, PP_CONTEXT, PP_SRC_CLIENT, PP_TAG_STREAM, 0, 0,
                          &sreq[i]);
    }
    for (unsigned i = 0; i < o->window && ret == 0; i++) {
        ret = wait_reqs(ep, &sreq[i], NULL, deadline, "sending a window");
        if (ret == 0)
            ret = req_status(&sreq[i], "sending");
        *protos |= 1u << sreq[i].proto;
    }
    if (ret == 0)
        ret = wait_reqs(ep, &rreq, NULL, deadline, "waiting for the answer to a window");
    if (ret == 0)
        ret = req_status(&rreq, "receiving the answer to a window");
    *us_p = (now_s() - t0) * 1e6 / o->window;
    return ret;
}

static void protos_format(unsigned protos, char *out, size_t len)
{
    size_t n = 0;

    out[0] = '\0';
    for (unsigned p = 0; p < EFARM_PROTO_COUNT; p++) {
        if (protos & 1u << p)
            n += (size_t)snprintf(out + n, len - n, "%s%s", n ? "+" : "",
                                  efarm_proto_name((enum efarm_proto_kind)p));
        if (n >= len)
            break;
    }
}

/* Untimed round trips before each size's timed ones: a tenth, at least 1, at most 100. */
static long warmup_iters(const struct pp_opts *o)
{
    return o->iters / 10 < 1 ? 1 : o->iters / 10 > 100 ? 100 : o->iters / 10;
}

static int client_size(struct efarm_ep *ep, efarm_peer_t server, const struct pp_opts *o,
                       const struct pp_buffers *b, uint64_t size)
{
    long warmup = warmup_iters(o);
    double sum = 0, us;
    unsigned protos = 0;
    char names[64];

    for (long i = -warmup; i < o->iters; i++) {
        int ret = o->window ? client_window(ep, server, o, b, size, &protos, &us)
                            : client_round(ep, server, o, b, size, i, &protos, &us);

        if (ret)
            return ret;
        if (i >= 0) {
            b->lat[i] = us;
            sum += us;
        }
    }
    qsort(b->lat, (size_t)o->iters, sizeof(b->lat[0]), cmp_double);
    protos_format(protos, names, sizeof(names));
    printf("%10" PRIu64 " | %-17s | %10.2f %10.2f | %10.1f | %10.2f\n", size, names,
           b->lat[o->iters / 2], b->lat[o->iters * 99 / 100], (double)size * o->iters / sum,
           sum / (double)o->iters);
    fflush(stdout);
    return 0;
}

/*
 * Tell the server to exit. The server closes its endpoint as soon as the
 * goodbye arrives, so when the device's acknowledgement of it is lost (efasim
 * with EFASIM_LOSS, or a real network) the retransmission finds no QP and the
 * send fails as unreachable although the server got it: the last-ACK problem.
 * Every message before was checked, and the test checks the server's own exit
 * status, so a failed goodbye is reported but not an error.
 */
static int client_bye(struct efarm_ep *ep, efarm_peer_t server, const struct pp_opts *o)
{
    struct efarm_req sreq = {0};
    int ret;

    ret = efarm_tsend(ep, server, NULL, 0, PP_CONTEXT, PP_SRC_CLIENT, PP_TAG_EXIT, 0, 0, &sreq);
    if (ret == 0)
        ret = wait_reqs(ep, &sreq, NULL, now_s() + o->timeout_s, "telling the server to exit");
    if (ret == 0 && sreq.status != 0)
        fprintf(stderr,
                "efarm-pingpong: note: the goodbye was not acknowledged (%s); the server may "
                "have exited before its acknowledgement arrived\n",
                efarm_strerror(sreq.status));
    return ret;
}

static int run_client(const struct pp_opts *o, pid_t server_pid)
{
    uint8_t raw[EFARM_RAW_ADDR_LEN];
    struct pp_buffers b = {0};
    struct efarm_ep *ep;
    efarm_peer_t server;
    uint64_t max = 0;
    int ret;

    for (unsigned i = 0; i < o->nsizes; i++)
        max = o->sizes[i] > max ? o->sizes[i] : max;
    b.send = malloc(max ? max : 1);
    b.recv = malloc(max ? max : 1);
    b.lat = malloc((size_t)o->iters * sizeof(*b.lat));
    if (!b.send || !b.recv || !b.lat) {
        fprintf(stderr, "efarm-pingpong: out of memory\n");
        ret = -ENOMEM;
        goto free_buffers;
    }
    memset(b.send, 0x5a, max);
    ret = addrfile_read(o->client_file, o->timeout_s, server_pid, raw);
    if (ret)
        goto free_buffers;
    ret = ep_open(&ep);
    if (ret)
        goto free_buffers;
    ret = efarm_av_insert(ep, raw, &server);
    if (ret) {
        fprintf(stderr, "efarm-pingpong: cannot insert the server's address: %s\n",
                efarm_strerror(ret));
        goto close_ep;
    }
    ret = client_hello(ep, server, o, max);
    if (ret)
        goto close_ep;
    if (o->window)
        printf("efarm-pingpong: %ld windows of %u messages per size after %ld warm-up, "
               "data not checked, per message = window time / %u\n"
               "%10s | %-17s | %21s | %10s | %10s\n",
               o->iters, o->window, warmup_iters(o), o->window, "bytes", "proto", "msg med/p99 us",
               "MB/s", "mean us");
    else
        printf("efarm-pingpong: %ld round trips per size after %ld warm-up, %s, one-way = "
               "round trip / 2\n"
               "%10s | %-17s | %21s | %10s | %10s\n",
               o->iters, warmup_iters(o), o->check ? "every byte checked" : "data not checked",
               "bytes", "proto", "lat med/p99 us", "MB/s", "mean us");
    for (unsigned i = 0; i < o->nsizes && ret == 0; i++)
        ret = client_size(ep, server, o, &b, o->sizes[i]);
    if (ret == 0)
        ret = client_bye(ep, server, o);
    printf("\nengine counters (client):\n");
    efarm_counters_print(stdout, efarm_ep_counters(ep));
close_ep:
    efarm_ep_close(ep);
free_buffers:
    free(b.lat);
    free(b.recv);
    free(b.send);
    return ret ? 1 : 0;
}

/* ---- Both in one command ----------------------------------------------------------- */

/* Fork the server (before any verbs call, so each process opens its own device), be the client. */
static int run_both(struct pp_opts *o)
{
    char dir[] = "/tmp/efarm-pingpong.XXXXXX", path[sizeof(dir) + 16];
    pid_t child;
    int ret, status = 0;

    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "efarm-pingpong: cannot create a temporary directory: %s\n",
                strerror(errno));
        return 1;
    }
    snprintf(path, sizeof(path), "%s/server.addr", dir);
    fflush(stdout);
    child = fork();
    if (child < 0) {
        fprintf(stderr, "efarm-pingpong: fork: %s\n", strerror(errno));
        rmdir(dir);
        return 1;
    }
    if (child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the client */
        o->server_file = path;
        exit(run_server(o, false));
    }
    o->client_file = path;
    ret = run_client(o, child);
    if (ret) {
        /* The server may wait for a client that will not come back: end it now. */
        kill(child, SIGTERM);
    }
    if (waitpid(child, &status, 0) == child && ret == 0 &&
        !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        fprintf(stderr, "efarm-pingpong: the server failed\n");
        ret = 1;
    }
    unlink(path);
    rmdir(dir);
    return ret;
}

int main(int argc, char **argv)
{
    struct pp_opts o = {
        .sizes = {8, 4096, 65536, 1048576}, .nsizes = 4, .iters = 1000, .timeout_s = 30};
    int ret = parse_args(argc, argv, &o);

    if (ret)
        return ret == 1 ? 0 : 2;
    if (o.server_file)
        return run_server(&o, true);
    if (o.client_file)
        return run_client(&o, 0);
    return run_both(&o);
}
