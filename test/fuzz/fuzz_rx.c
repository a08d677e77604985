/*
 * libFuzzer target for the whole receive path: packets from wire peers reach
 * a real engine endpoint through efasim (the device's receive queue, the CQ,
 * the engine's fast path, decode, sender identification, ordering, matching,
 * every packet type's handler, RMA targets, atomics) while the engine has
 * receives posted and unexpected messages queued, sends and RMA operations
 * of its own waiting, and a window exposed. fuzz_rx.h is the input language.
 *
 * What it checks:
 *   - no crash, no sanitizer report (the whole engine is built with ASan and
 *     UBSan into this target);
 *   - nothing is read or written outside memory the engine was given: every
 *     receive buffer, RMA result buffer and the exposed window sit between
 *     PROT_NONE guard pages (touching one is a SEGV), the bytes before a
 *     receive buffer on its page are a canary checked when the slot is
 *     reused, and the send source is read-only;
 *   - no unbounded growth: after each input the engine's levels stay within
 *     the budgets it was configured with (operations, receive buffers held,
 *     stored bytes, peers), and libFuzzer's -rss_limit_mb bounds the rest.
 *
 * State persists across inputs (opening an endpoint costs milliseconds); the
 * endpoint and its wire peers are reopened every FZ_RESET_EVERY inputs and
 * whenever the engine failed (a hostile peer may make it fail: allowed, as
 * long as it fails cleanly). A crash found after state built up may need the
 * inputs before it: rerun with -runs on the corpus to reproduce.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "efarm_byteorder.h"
#include "efarm_errno.h"
#include "efarm_pkt.h"
#include "efarm_proto.h"
#include "efarm_rma.h"
#include "fuzz_rx.h"
#include "proto_common.h"
#include "wire_peer.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_SLOTS       8
#define FZ_SLOT_MAX    (512u * 1024u + 4096u) /* FZ_RECV's len * 8, and the canary */
#define FZ_SENDS       16
#define FZ_SRC_LEN     (256u * 1024u) /* 1 << 18, FZ_SEND's largest */
#define FZ_CANARY      0x5a
#define FZ_CANARY_LEN  256 /* bytes before a receive buffer that must stay untouched */
#define FZ_SETTLE_S    0.5 /* wait this long for a packet to reach the engine */
#define FZ_RDMA_LEN    8192u
#define FZ_RESET_EVERY 1000u
#define FZ_BATCH       16 /* packets sent before the engine must have received them */
#define FZ_IOV_MAX     64 /* rma_iov entries FZ_FIX_RMA rewrites */

/* The budgets the engine runs with (set in LLVMFuzzerInitialize unless the environment has them).
 */
static const struct {
    const char *name, *value;
} g_env[] = {
    {"EFARM_LOG_LEVEL", "error"},
    {"EFARM_AV_SIZE", "64"},
    {"EFARM_RX_BUFFERS", "64"},
    {"EFARM_TX_PKTS", "128"},
    {"EFARM_MAX_OPS", "256"},
    {"EFARM_UNEXP_BYTES", "1048576"},
    {"EFARM_UNEXP_MAX_BYTES", "4194304"},
    {"EFARM_RX_FULL_TIMEOUT_MS", "200"},
    {"EFARM_RX_WINDOW", "8"},
};

/* A buffer between guard pages, reused by one request at a time. */
struct slot {
    uint8_t *map; /* guard page, FZ_SLOT_MAX bytes, guard page */
    uint8_t *buf; /* the request's buffer: ends where the second guard page starts */
    uint64_t len;
    struct efarm_req req;
    bool busy;
};

static struct fz {
    struct efarm_ep *ep;
    struct wp wp[FZ_PEERS];
    bool open, dead;
    size_t page;
    struct slot slots[FZ_SLOTS];
    struct efarm_req sends[FZ_SENDS];
    bool send_busy[FZ_SENDS];
    uint8_t *src; /* read-only send source */
    uint8_t *win_map, *win;
    struct efarm_region *region;
    uint8_t *rdma_buf[FZ_PEERS]; /* each wire peer's RDMA landing buffer */
    struct efarm_dev_mr *rdma_mr[FZ_PEERS];
    /* Per wire peer: its next msg_id, and the ids the engine last sent it. */
    uint32_t next_msg_id[FZ_PEERS];
    uint64_t eng_send_id[FZ_PEERS], eng_recv_id[FZ_PEERS], eng_msg_id[FZ_PEERS];
    bool has_send_id[FZ_PEERS], has_recv_id[FZ_PEERS], has_msg_id[FZ_PEERS];
    uint64_t max_ops, rx_buffers, unexp_max_bytes, av_size;
    unsigned inputs_since_reset;
    uint64_t rx_expected; /* the engine's rx_pkts when nothing was in flight */
    unsigned in_flight;   /* packets sent since */
    /* Totals printed at exit. */
    uint64_t inputs, pkts, fixed, undelivered, resets, failures, rdma_posted, rdma_refused;
    uint64_t decode_errors, stale_ids, rma_refused, unknown_sender, implicit_peers;
} g;

/* ---- The test library's failure hooks (wire_peer.c uses them): abort ------------------- */

_Noreturn void efarm_test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "fuzz_rx: harness check failed at %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

_Noreturn void efarm_test_fail_mem(const char *file, int line, const char *an, const char *bn,
                                   const void *a, const void *b, size_t n)
{
    (void)a, (void)b, (void)n;
    efarm_test_fail(file, line, "%s != %s", an, bn);
}

void efarm_test_context(const char *fmt, ...)
{
    (void)fmt;
}

/* The harness always runs on efasim's drop-in (proto_use_efasim asks which device). */
const char *efarm_test_device(void)
{
    return "sim";
}

static void check(bool cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "fuzz_rx: invariant failed: %s\n", what);
        abort();
    }
}

/* ---- Guarded memory -------------------------------------------------------------------- */

/* len bytes (rounded up to pages) between two PROT_NONE pages; returns the first usable byte. */
static uint8_t *guarded(size_t len, uint8_t **map_p)
{
    size_t span = (len + g.page - 1) / g.page * g.page;
    uint8_t *map =
        mmap(NULL, span + 2 * g.page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    check(map != MAP_FAILED, "mmap of a guarded buffer");
    check(mprotect(map, g.page, PROT_NONE) == 0, "leading guard page");
    check(mprotect(map + g.page + span, g.page, PROT_NONE) == 0, "trailing guard page");
    *map_p = map;
    return map + g.page;
}

/* Slot s's buffer of len bytes, flush against the trailing guard, after FZ_CANARY_LEN canary. */
static uint8_t *slot_take(struct slot *s, uint64_t len)
{
    uint8_t *end = s->map + g.page + FZ_SLOT_MAX;

    memset(end - len - FZ_CANARY_LEN, FZ_CANARY, FZ_CANARY_LEN);
    memset(&s->req, 0, sizeof(s->req));
    s->buf = end - len;
    s->len = len;
    s->busy = true;
    return s->buf;
}

/* Nothing just before the buffer was written (the page after it is a guard page). */
static void slot_check(const struct slot *s)
{
    static uint8_t canary[FZ_CANARY_LEN];

    if (canary[0] != FZ_CANARY)
        memset(canary, FZ_CANARY, sizeof(canary));
    check(!memcmp(s->buf - FZ_CANARY_LEN, canary, FZ_CANARY_LEN),
          "a byte before a receive buffer was written");
}

/* A free slot (done requests free theirs), or NULL. */
static struct slot *slot_free(void)
{
    for (unsigned i = 0; i < FZ_SLOTS; i++) {
        struct slot *s = &g.slots[i];

        if (s->busy && s->req.done) {
            slot_check(s);
            s->busy = false;
        }
        if (!s->busy)
            return s;
    }
    return NULL;
}

/* ---- The engine and its wire peers ----------------------------------------------------- */

/* Take every packet a wire peer received: remember the ids the engine gave it. */
static void drain(unsigned k)
{
    struct wp *w = &g.wp[k];

    for (unsigned i = 0; i < w->nq; i++) {
        struct efarm_pkt pkt;

        if (efarm_pkt_decode(w->q[i].data, w->q[i].len, &pkt) == 0) {
            bool req = efarm_pkt_type_info(pkt.type)->traits & EFARM_PKT_T_REQ;

            if (req && (pkt.present & EFARM_PKT_HAS(SEND_ID))) {
                g.eng_send_id[k] = pkt.value[EFARM_PKT_F_SEND_ID];
                g.has_send_id[k] = true;
            }
            if (pkt.present & EFARM_PKT_HAS(RECV_ID)) {
                g.eng_recv_id[k] = pkt.value[EFARM_PKT_F_RECV_ID];
                g.has_recv_id[k] = true;
            }
            if (req && (pkt.present & EFARM_PKT_HAS(MSG_ID))) {
                g.eng_msg_id[k] = pkt.value[EFARM_PKT_F_MSG_ID];
                g.has_msg_id[k] = true;
            }
        }
        free(w->q[i].data);
    }
    w->nq = 0;
}

/* Progress the engine once (until it fails) and poll every wire peer once. */
static void step(void)
{
    if (!g.dead && efarm_ep_progress(g.ep) < 0)
        g.dead = true;
    pump(); /* wire_peer.c's: g_ep stays NULL, so it polls the wire peers only */
    for (unsigned k = 0; k < FZ_PEERS; k++)
        drain(k);
}

static void steps(unsigned n)
{
    while (n--)
        step();
}

/* Step until *counter exceeds `before` (or the engine failed, or FZ_SETTLE_S); true if it did. */
static bool settle(const uint64_t *counter, uint64_t before)
{
    double deadline = proto_now_s() + FZ_SETTLE_S;

    while (*counter <= before && !g.dead && proto_now_s() < deadline)
        step();
    return *counter > before;
}

/*
 * Wait until the engine received every packet sent so far. Consecutive FZ_PKT
 * commands go out back to back (at most FZ_BATCH unreceived, well below the
 * engine's receive buffers) and are settled before anything else happens.
 */
static void settle_all(void)
{
    const uint64_t *rx = &efarm_ep_counters(g.ep)->rx_pkts;

    if (g.in_flight && !settle(rx, g.rx_expected + g.in_flight - 1))
        g.undelivered += g.rx_expected + g.in_flight - *rx;
    g.rx_expected = *rx;
    g.in_flight = 0;
}

static void connect_peer(unsigned k, uint64_t features)
{
    struct wp *w = &g.wp[k];
    const uint64_t *hs = &efarm_ep_counters(g.ep)->tx_by_type[EFARM_PKT_HANDSHAKE];
    uint64_t hs_before = *hs;

    check(efarm_av_insert(g.ep, w->raw, &w->peer) == 0, "wire peer inserted");
    wp_send_handshake(w, features);
    check(settle(hs, hs_before), "the engine answers a HANDSHAKE");
    w->req_raw_addr = false;
    w->send_connid = true;
}

static void engine_up(void)
{
    check(efarm_ep_open(NULL, &g.ep) == 0, "engine endpoint opens on efasim");
    efarm_ep_addr(g.ep, g_eng_raw);
    g_eng_qpn = efarm_load_le16(g_eng_raw + offsetof(struct efarm_wire_raw_addr, qpn));
    g_eng_connid = efarm_load_le32(g_eng_raw + offsetof(struct efarm_wire_raw_addr, connid));
    g.dead = false;
    check(efarm_expose(g.ep, g.win, FZ_WINDOW_LEN, EFARM_EXPOSE_READ | EFARM_EXPOSE_WRITE,
                       &g.region) == 0,
          "window exposed");
    for (unsigned k = 0; k < FZ_PEERS; k++) {
        wp_open(&g.wp[k]);
        check(efarm_dev_mr_reg(g.wp[k].dev, g.rdma_buf[k], FZ_RDMA_LEN, false, false,
                               &g.rdma_mr[k]) == 0,
              "wire peer's RDMA buffer registered");
        g.next_msg_id[k] = 0;
        g.has_send_id[k] = g.has_recv_id[k] = g.has_msg_id[k] = false;
    }
    connect_peer(0, FEAT_ALL);
    connect_peer(1, FEAT_NO_READ);
    g.inputs_since_reset = 0;
    g.open = true;
}

static void totals_add(void)
{
    const struct efarm_counters *c = efarm_ep_counters(g.ep);

    g.decode_errors += c->decode_errors;
    g.stale_ids += c->stale_ids;
    g.rma_refused += c->rma_refused;
    g.unknown_sender += c->unknown_sender;
    g.implicit_peers += c->implicit_peers;
}

static void engine_down(void)
{
    totals_add();
    efarm_unexpose(g.ep, g.region);
    efarm_ep_close(g.ep);
    g.ep = NULL;
    for (unsigned k = 0; k < FZ_PEERS; k++) {
        efarm_dev_mr_dereg(g.rdma_mr[k]);
        wp_close(&g.wp[k]);
    }
    /* Requests the closed endpoint held are gone with it: their buffers are free again. */
    for (unsigned i = 0; i < FZ_SLOTS; i++) {
        if (g.slots[i].busy)
            slot_check(&g.slots[i]);
        g.slots[i].busy = false;
    }
    memset(g.send_busy, 0, sizeof(g.send_busy));
    g.open = false;
}

static uint64_t env_u64(const char *name)
{
    const char *v = getenv(name);

    return v ? strtoull(v, NULL, 0) : 0;
}

static void totals_print(void)
{
    if (g.open)
        totals_add();
    fprintf(stderr,
            "fuzz_rx: %" PRIu64 " inputs, %" PRIu64 " packets (%" PRIu64 " rewritten, %" PRIu64
            " not received within %.1f s), %" PRIu64 " endpoint resets (%" PRIu64
            " after the engine failed), %" PRIu64 " RDMA posted (%" PRIu64
            " refused by the device); engine dropped: %" PRIu64 " undecodable, %" PRIu64
            " stale ids, %" PRIu64 " RMA refused, %" PRIu64 " unknown senders; %" PRIu64
            " implicit peers\n",
            g.inputs, g.pkts, g.fixed, g.undelivered, FZ_SETTLE_S, g.resets, g.failures,
            g.rdma_posted, g.rdma_refused, g.decode_errors, g.stale_ids, g.rma_refused,
            g.unknown_sender, g.implicit_peers);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    for (size_t i = 0; i < sizeof(g_env) / sizeof(g_env[0]); i++)
        setenv(g_env[i].name, g_env[i].value, 0);
    proto_use_efasim();
    g.max_ops = env_u64("EFARM_MAX_OPS");
    g.rx_buffers = env_u64("EFARM_RX_BUFFERS");
    g.unexp_max_bytes = env_u64("EFARM_UNEXP_MAX_BYTES");
    g.av_size = env_u64("EFARM_AV_SIZE");
    g.page = (size_t)sysconf(_SC_PAGESIZE);
    for (unsigned i = 0; i < FZ_SLOTS; i++)
        guarded(FZ_SLOT_MAX, &g.slots[i].map);
    g.src = guarded(FZ_SRC_LEN, &(uint8_t *){NULL});
    for (uint32_t i = 0; i < FZ_SRC_LEN; i++)
        g.src[i] = (uint8_t)(i * 7 + 3);
    check(mprotect(g.src, FZ_SRC_LEN, PROT_READ) == 0, "read-only send source");
    g.win = guarded(FZ_WINDOW_LEN, &g.win_map);
    for (unsigned k = 0; k < FZ_PEERS; k++)
        g.rdma_buf[k] = guarded(FZ_RDMA_LEN, &(uint8_t *){NULL});
    atexit(totals_print);
    return 0;
}

/* ---- Commands -------------------------------------------------------------------------- */

struct in {
    const uint8_t *p;
    size_t n;
};

static bool take(struct in *in, void *out, size_t n)
{
    if (in->n < n)
        return false;
    memcpy(out, in->p, n);
    in->p += n;
    in->n -= n;
    return true;
}

static bool take_u8(struct in *in, uint8_t *v)
{
    return take(in, v, 1);
}

static bool take_u16(struct in *in, uint16_t *v)
{
    uint8_t b[2];

    if (!take(in, b, 2))
        return false;
    *v = efarm_load_le16(b);
    return true;
}

/* Keep an address the engine would send to on this host: efasim's GIDs name IPv4 addresses. */
static void loopback_only(uint8_t gid[EFARM_GID_LEN])
{
    gid[12] = 127;
}

/* Rewrite a packet that decodes as `flags` asks; returns its new length in out, or 0. */
static uint32_t fix(unsigned k, uint8_t flags, const uint8_t *bytes, uint32_t len, uint8_t *out,
                    uint32_t cap)
{
    struct wp *w = &g.wp[k];
    uint8_t iov[FZ_IOV_MAX * 24];
    struct efarm_pkt pkt;
    size_t hdr;

    if (efarm_pkt_decode(bytes, len, &pkt) != 0)
        return 0;
    if (pkt.present & EFARM_PKT_HAS_RAW_ADDR) {
        if (flags & FZ_FIX_ADDR) {
            memcpy(pkt.raw_addr.gid, w->raw, EFARM_GID_LEN);
            pkt.raw_addr.qpn = w->qpn;
            pkt.raw_addr.connid = w->connid;
        }
        loopback_only(pkt.raw_addr.gid);
    }
    if ((flags & FZ_FIX_ADDR) && (pkt.present & EFARM_PKT_HAS(CONNID)))
        pkt.value[EFARM_PKT_F_CONNID] = w->connid;
    if ((flags & FZ_FIX_MSGID) && (pkt.present & EFARM_PKT_HAS(MSG_ID)) &&
        (efarm_pkt_type_info(pkt.type)->traits & EFARM_PKT_T_REQ)) {
        bool later_segment =
            (pkt.present & EFARM_PKT_HAS(SEG_OFFSET)) && pkt.value[EFARM_PKT_F_SEG_OFFSET] != 0;

        pkt.value[EFARM_PKT_F_MSG_ID] = later_segment ? g.next_msg_id[k] - 1 : g.next_msg_id[k]++;
    }
    if (flags & FZ_FIX_IDS) {
        bool req = efarm_pkt_type_info(pkt.type)->traits & EFARM_PKT_T_REQ;

        if (!req && (pkt.present & EFARM_PKT_HAS(SEND_ID)) && g.has_send_id[k])
            pkt.value[EFARM_PKT_F_SEND_ID] = g.eng_send_id[k];
        if ((pkt.present & EFARM_PKT_HAS(RECV_ID)) && g.has_recv_id[k])
            pkt.value[EFARM_PKT_F_RECV_ID] = g.eng_recv_id[k];
        if (!req && (pkt.present & EFARM_PKT_HAS(MSG_ID)) && g.has_msg_id[k])
            pkt.value[EFARM_PKT_F_MSG_ID] = g.eng_msg_id[k];
    }
    if ((flags & FZ_FIX_RMA) && (pkt.present & EFARM_PKT_HAS_RMA_IOV)) {
        uint32_t n = (uint32_t)pkt.value[EFARM_PKT_F_RMA_IOV_COUNT];
        uint64_t base = (uint64_t)(uintptr_t)g.win;

        /* An atomic: an operation and datatype pair that exists, an aligned target, and
         * (one range) a length that matches its data, so the checks can pass. */
        bool rta = pkt.present & EFARM_PKT_HAS(ATOMIC_OP);
        uint64_t total =
            pkt.type == EFARM_PKT_COMPARE_RTA ? pkt.payload_length / 2 : pkt.payload_length;

        if (n > FZ_IOV_MAX)
            return 0;
        if (rta) {
            pkt.value[EFARM_PKT_F_ATOMIC_OP] %= EFARM_AOP_COUNT;
            pkt.value[EFARM_PKT_F_ATOMIC_DATATYPE] %= EFARM_DT_COUNT;
        }
        for (uint32_t i = 0; i < n; i++) {
            struct efarm_rma_iov e;

            efarm_rma_iov_load(pkt.rma_iov, i, &e);
            /* Mostly inside, sometimes a page or less beyond either end. */
            e.addr = base - g.page + e.addr % (FZ_WINDOW_LEN + 2 * g.page);
            e.len %= FZ_WINDOW_LEN + g.page;
            e.key = efarm_region_key(g.region) ^ (e.key & 1);
            if (rta) {
                e.addr &= ~(uint64_t)7;
                if (n == 1)
                    e.len = total;
            }
            efarm_rma_iov_store(iov, i, &e);
        }
        pkt.rma_iov = iov;
    }
    if (efarm_pkt_encode(&pkt, out, cap, &hdr) != 0 || hdr + pkt.payload_length > cap)
        return 0;
    memmove(out + hdr, pkt.payload, pkt.payload_length);
    return (uint32_t)(hdr + pkt.payload_length);
}

static void cmd_pkt(struct in *in)
{
    static uint8_t fixed[WP_MAX_PKT];
    uint8_t k, flags;
    uint16_t len;
    const uint8_t *bytes;
    uint32_t n;

    if (!take_u8(in, &k) || !take_u8(in, &flags) || !take_u16(in, &len))
        return;
    k %= FZ_PEERS;
    if (len > in->n)
        len = (uint16_t)in->n;
    bytes = in->p;
    in->p += len;
    in->n -= len;
    if (len > g.wp[k].mtu)
        len = (uint16_t)g.wp[k].mtu;
    n = fix(k, flags, bytes, len, fixed, g.wp[k].mtu);
    if (n) {
        g.fixed++;
        bytes = fixed;
    } else {
        n = len;
    }
    if (g.in_flight >= FZ_BATCH)
        settle_all();
    wp_send_bytes(&g.wp[k], bytes, n);
    g.pkts++;
    g.in_flight++;
}

static void cmd_recv(struct in *in)
{
    static const int32_t tags[4] = {0, 1, 2, 0x1234};
    struct slot *s;
    uint8_t mode;
    uint16_t len;
    uint8_t *buf;
    int ret;

    if (!take_u8(in, &mode) || !take_u16(in, &len) || (s = slot_free()) == NULL)
        return;
    buf = slot_take(s, (uint64_t)len * 8);
    switch (mode % 4) {
    case 0:
        ret = efarm_trecv(g.ep, buf, s->len, 1, 2, tags[(mode >> 2) % 4], &s->req);
        break;
    case 1:
        ret = efarm_trecv(g.ep, buf, s->len, 1, EFARM_ANY_SOURCE, tags[(mode >> 2) % 4], &s->req);
        break;
    case 2:
        ret = efarm_trecv(g.ep, buf, s->len, (mode >> 2) % 4, EFARM_ANY_SOURCE, EFARM_ANY_TAG,
                          &s->req);
        break;
    default:
        ret = efarm_recv(g.ep, buf, s->len, (mode >> 2) % 2 ? g.wp[0].peer : EFARM_PEER_NONE,
                         &s->req);
        break;
    }
    if (ret != 0)
        s->busy = false;
}

static void cmd_cancel(void)
{
    for (unsigned i = 0; i < FZ_SLOTS; i++)
        if (g.slots[i].busy && !g.slots[i].req.done &&
            efarm_cancel_recv(g.ep, &g.slots[i].req) == 0)
            return;
}

static void cmd_probe(struct in *in)
{
    struct efarm_probe_info info;
    struct slot *s;
    uint8_t mode;
    bool claim;
    int found;
    uint64_t len;

    if (!take_u8(in, &mode))
        return;
    claim = mode & 1;
    if (mode & 2)
        found = efarm_probe(g.ep, EFARM_PEER_NONE, claim, &info);
    else
        found = efarm_tprobe(g.ep, 1, EFARM_ANY_SOURCE, EFARM_ANY_TAG, claim, &info);
    if (found != 1 || !claim)
        return;
    s = slot_free();
    if (s == NULL)
        return; /* the claimed message stays claimed: the reset frees it */
    /* Receive into less than was sent when mode says so: truncation. */
    len = info.msg_length < FZ_SLOT_MAX - FZ_CANARY_LEN ? info.msg_length
                                                        : FZ_SLOT_MAX - FZ_CANARY_LEN;
    slot_take(s, (mode & 4) ? len / 2 : len);
    if (efarm_tmrecv(g.ep, info.handle, s->buf, s->len, &s->req) != 0)
        s->busy = false;
}

static void cmd_send(struct in *in)
{
    uint8_t k, size, flags;
    unsigned i;

    if (!take_u8(in, &k) || !take_u8(in, &size) || !take_u8(in, &flags))
        return;
    for (i = 0; i < FZ_SENDS && g.send_busy[i] && !g.sends[i].done; i++)
        ;
    if (i == FZ_SENDS)
        return;
    memset(&g.sends[i], 0, sizeof(g.sends[i]));
    g.send_busy[i] =
        efarm_tsend(g.ep, g.wp[k % 2].peer, g.src, 1ull << (size % 19), 1, 2, flags >> 4,
                    flags & (EFARM_SEND_DC | EFARM_SEND_CQ_DATA), 0x1234, &g.sends[i]) == 0;
}

static void cmd_rma(struct in *in)
{
    uint8_t k, kind;
    uint16_t off, len;
    struct efarm_riov riov;
    struct slot *s;
    int64_t operand = 1;

    if (!take_u8(in, &k) || !take_u8(in, &kind) || !take_u16(in, &off) || !take_u16(in, &len))
        return;
    if ((s = slot_free()) == NULL)
        return;
    riov = (struct efarm_riov){.addr = 0x10000 + off, .len = len, .key = kind >> 2};
    slot_take(s, len);
    switch (kind % 3) {
    case 0:
        if (efarm_read(g.ep, g.wp[k % 2].peer, s->buf, len, &riov, 1, 0, &s->req) != 0)
            s->busy = false;
        break;
    case 1:
        if (efarm_write(g.ep, g.wp[k % 2].peer, g.src, len, &riov, 1, 0, &s->req) != 0)
            s->busy = false;
        break;
    default:
        riov.len = 8;
        if (s->len < 8 || efarm_atomic(g.ep, g.wp[k % 2].peer, EFARM_AOP_SUM, EFARM_DT_INT64,
                                       &operand, NULL, s->buf, 1, &riov, 1, 0, &s->req) != 0)
            s->busy = false;
        break;
    }
}

static void cmd_rdma(struct in *in)
{
    uint8_t k, kind, key;
    uint16_t off, len;
    struct wp *w;
    uint64_t raddr;
    uint32_t rkey;
    unsigned before;
    int ret;

    if (!take_u8(in, &k) || !take_u8(in, &kind) || !take_u16(in, &off) || !take_u16(in, &len) ||
        !take_u8(in, &key))
        return;
    w = &g.wp[k % FZ_PEERS];
    len %= FZ_RDMA_LEN + 1;
    raddr = (uint64_t)(uintptr_t)g.win - g.page + off % (FZ_WINDOW_LEN + 2 * g.page);
    rkey = (uint32_t)efarm_region_key(g.region) + (key % 4 == 0 ? 0 : key);
    before = w->reads_done;
    if (kind & 1)
        ret = efarm_dev_post_write(w->dev, w->ah, g_eng_qpn, g_eng_connid, g.rdma_buf[k % FZ_PEERS],
                                   len, efarm_dev_mr_lkey(g.rdma_mr[k % FZ_PEERS]), raddr, rkey,
                                   WP_WR_READ);
    else
        ret = efarm_dev_post_read(w->dev, w->ah, g_eng_qpn, g_eng_connid, g.rdma_buf[k % FZ_PEERS],
                                  len, efarm_dev_mr_lkey(g.rdma_mr[k % FZ_PEERS]), raddr, rkey,
                                  WP_WR_READ);
    if (ret != 0)
        return; /* no RDMA write on this device, or the send queue is full */
    g.rdma_posted++;
    w->read_status = 0;
    {
        double deadline = proto_now_s() + 10.0;

        while (w->reads_done == before && proto_now_s() < deadline)
            step();
    }
    check(w->reads_done > before, "the device completes an RDMA operation");
    if (w->read_status)
        g.rdma_refused++;
}

/* ---- Invariants ------------------------------------------------------------------------ */

static void check_levels(void)
{
    struct efarm_levels lv;

    efarm_ep_levels(g.ep, &lv);
    check(lv.ops <= g.max_ops, "operations within EFARM_MAX_OPS");
    check(lv.rx_held <= g.rx_buffers, "receive buffers held within EFARM_RX_BUFFERS");
    check(lv.stored_bytes <= g.unexp_max_bytes + (uint64_t)g.rx_buffers * WP_MAX_PKT,
          "stored bytes within EFARM_UNEXP_MAX_BYTES (plus the buffers it may hold)");
    check(lv.peers <= g.av_size, "peers within EFARM_AV_SIZE");
    check(lv.peer_states <= lv.peers, "peer states only for peers");
    check(lv.windows <= lv.peer_states, "reorder windows only for peers talked to");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct in in = {data, size};
    uint8_t op, n;

    if (g.open && (g.dead || g.inputs_since_reset >= FZ_RESET_EVERY)) {
        g.failures += g.dead;
        g.resets++;
        engine_down();
    }
    if (!g.open)
        engine_up();
    g.inputs++;
    g.inputs_since_reset++;
    g.rx_expected = efarm_ep_counters(g.ep)->rx_pkts;
    g.in_flight = 0;
    while (!g.dead && take_u8(&in, &op)) {
        if (op % FZ_OP_COUNT != FZ_PKT)
            settle_all();
        switch (op % FZ_OP_COUNT) {
        case FZ_PKT:
            cmd_pkt(&in);
            break;
        case FZ_RECV:
            cmd_recv(&in);
            break;
        case FZ_CANCEL:
            cmd_cancel();
            break;
        case FZ_PROBE:
            cmd_probe(&in);
            break;
        case FZ_SEND:
            cmd_send(&in);
            break;
        case FZ_RMA:
            cmd_rma(&in);
            break;
        case FZ_RDMA:
            cmd_rdma(&in);
            break;
        default:
            if (take_u8(&in, &n))
                steps(n % 16);
            break;
        }
    }
    settle_all();
    steps(4);
    if (!g.dead)
        check_levels();
    return 0;
}
