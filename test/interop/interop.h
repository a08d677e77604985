/*
 * efarm <-> libfabric interoperability test: what both sides share.
 *
 * Two programs, one on efarm's protocol engine (interop-efarm) and one on
 * libfabric's API with its EFA provider (interop-fi), run the same list of
 * cases over the same (emulated or real) EFA devices. They agree on the cases
 * and pace each other over a control channel, a UNIX stream socket that
 * interop-efarm listens on and interop-fi connects to; the data only ever
 * crosses the fabric. Nothing here includes efarm's or libfabric's headers.
 *
 * Control records are fixed 16-byte structs in the host's byte order (both
 * ends run on one machine). At the start interop-efarm sends the parameters
 * (IC_PARAMS, then the sizes), both send their 32-byte raw address (IC_ADDR),
 * and each derives the case list from the parameters with ic_cases().
 *
 * One case: one side sends `nmsg` messages (sizes, tags, CQ data and
 * delivery-complete as the case says, back to back), the other receives them
 * in order, with its receives posted before the first message is sent
 * (IC_POSTED gates the sender) or after the messages arrived (IC_SENT tells
 * the receiver they are on their way; it waits until they have arrived before
 * posting). The receiver checks every byte, the length, the tag and the CQ
 * data of every message, and which message landed in which receive (send
 * after send order), then answers IC_DONE with the number of defects; the
 * sender waits for its completions and for IC_DONE.
 */
#ifndef EFARM_INTEROP_H
#define EFARM_INTEROP_H

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define IC_MAX_SIZES  32
#define IC_BURST      24         /* messages in a burst case */
#define IC_BURST_CAP  (2u << 20) /* largest message in a burst */
#define IC_MAX_CASES  1024
#define IC_TAG_BASE   0x0001000000000000ull /* wire tag of case i: base + i (context 1) */
#define IC_RAW_ADDR   32
#define IC_CQ_DATA(i) (0xc0de000000000000ull | (uint64_t)(i))

enum ic_kind {
    IC_PARAMS = 1, /* a = nsizes, b = flags (IC_F_*) */
    IC_SIZE,       /* a = index, b = size */
    IC_ADDR,       /* a = bytes that follow (IC_RAW_ADDR) */
    IC_POSTED,     /* a = case: the receiver posted every receive */
    IC_SENT,       /* a = case: the sender posted every send */
    IC_DONE,       /* a = case, b = defects the side that sends it found */
    IC_BYE,        /* a = 0 */
    IC_INFO,       /* interop-fi -> interop-efarm: a = libfabric's fi_version() at run time */
};

/*
 * Defects of released libfabric versions that the test tolerates, and only in
 * the versions that have them, each with where it is in libfabric's source.
 * IC_BUG_TAGGED_CQ_DATA_32: before 1.18, rxr_msg_construct() took the CQ data as
 * uint32_t, so fi_tsendmsg() sends only its low 32 bits (prov/efa/src/rxr/rxr_msg.h).
 * IC_BUG_UNEXP_CQ_DATA_FLAG: before 1.19, a receive matched to an unexpected
 * message reset cq_entry.flags to FI_RECV | FI_MSG, dropping FI_REMOTE_CQ_DATA
 * (the data itself is still reported; prov/efa/src/rxr/rxr_msg.c, the
 * unexpected-match path).
 */
#define IC_BUG_TAGGED_CQ_DATA_32  0x1u
#define IC_BUG_UNEXP_CQ_DATA_FLAG 0x2u

static inline unsigned ic_fi_bugs(uint32_t fi_version)
{
    unsigned major = fi_version >> 16, minor = fi_version & 0xffff, bugs = 0;

    if (major == 1 && minor < 18)
        bugs |= IC_BUG_TAGGED_CQ_DATA_32;
    if (major == 1 && minor < 19)
        bugs |= IC_BUG_UNEXP_CQ_DATA_FLAG;
    return bugs;
}

#define IC_F_NO_BURSTS 0x1u /* single messages only */
#define IC_F_NO_DC     0x2u /* no delivery-complete cases */

struct ic_msg {
    uint32_t kind;
    uint32_t a;
    uint64_t b;
};

enum ic_dir { IC_FI_TO_EFARM = 0, IC_EFARM_TO_FI = 1 };

struct ic_case {
    uint32_t index;
    uint8_t dir;    /* enum ic_dir */
    uint8_t tagged; /* tagged (FI_TAGGED, efarm_tsend) or untagged (FI_MSG, efarm_send) */
    uint8_t after;  /* receives posted after the messages arrived */
    uint8_t dc;     /* delivery complete requested */
    uint8_t cqdata; /* remote CQ data carried */
    uint32_t nmsg;
    uint64_t size[IC_BURST];
};

struct ic_params {
    uint32_t nsizes;
    uint32_t flags;
    uint64_t sizes[IC_MAX_SIZES];
};

static inline const char *ic_dir_name(unsigned dir)
{
    return dir == IC_FI_TO_EFARM ? "libfabric->efarm" : "efarm->libfabric";
}

static inline uint64_t ic_tag(const struct ic_case *c)
{
    return IC_TAG_BASE + c->index;
}

/*
 * The case list: for each direction, tagged and untagged, every size with the
 * receive posted before and after, plain and delivery complete (CQ data on
 * every other size); then per direction, mode and timing one burst of
 * IC_BURST messages cycling through the sizes (capped at IC_BURST_CAP).
 * Returns the number of cases.
 */
static inline unsigned ic_cases(const struct ic_params *p, struct ic_case *cases, unsigned max)
{
    unsigned n = 0;

    for (unsigned dir = 0; dir < 2; dir++)
        for (unsigned tagged = 2; tagged-- > 0;) {
            for (unsigned s = 0; s < p->nsizes; s++)
                for (unsigned after = 0; after < 2; after++)
                    for (unsigned dc = 0; dc < 2; dc++) {
                        if ((dc && (p->flags & IC_F_NO_DC)) || n == max)
                            continue;
                        cases[n] = (struct ic_case){.index = n,
                                                    .dir = (uint8_t)dir,
                                                    .tagged = (uint8_t)tagged,
                                                    .after = (uint8_t)after,
                                                    .dc = (uint8_t)dc,
                                                    .cqdata = (uint8_t)(s % 2),
                                                    .nmsg = 1};
                        cases[n].size[0] = p->sizes[s];
                        n++;
                    }
            if (p->flags & IC_F_NO_BURSTS)
                continue;
            for (unsigned after = 0; after < 2 && n < max; after++) {
                unsigned k = 0;

                cases[n] = (struct ic_case){.index = n,
                                            .dir = (uint8_t)dir,
                                            .tagged = (uint8_t)tagged,
                                            .after = (uint8_t)after,
                                            .nmsg = IC_BURST};
                for (unsigned m = 0; m < IC_BURST; m++) {
                    uint64_t size;

                    do
                        size = p->sizes[k++ % p->nsizes];
                    while (size > IC_BURST_CAP);
                    cases[n].size[m] = size;
                }
                n++;
            }
        }
    return n;
}

/* Byte i of message m of case c: depends on all three, so a misplaced message shows. */
static inline uint8_t ic_byte(uint32_t c, uint32_t m, uint64_t i)
{
    uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ ((uint64_t)c << 20 | m) * 0xc2b2ae3d27d4eb4full;

    return (uint8_t)(x >> 56 ^ x >> 29);
}

static inline void ic_fill(uint8_t *buf, uint32_t c, uint32_t m, uint64_t len)
{
    for (uint64_t i = 0; i < len; i++)
        buf[i] = ic_byte(c, m, i);
}

/* First offset that differs from the pattern, or len. */
static inline uint64_t ic_check(const uint8_t *buf, uint32_t c, uint32_t m, uint64_t len)
{
    for (uint64_t i = 0; i < len; i++)
        if (buf[i] != ic_byte(c, m, i))
            return i;
    return len;
}

static inline double ic_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- Control channel --------------------------------------------------------------- */

/* Write all of buf; returns 0 or -errno. */
static inline int ic_write(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;

    while (len) {
        ssize_t n = write(fd, p, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EPIPE;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static inline int ic_send(int fd, uint32_t kind, uint32_t a, uint64_t b)
{
    struct ic_msg m = {.kind = kind, .a = a, .b = b};

    return ic_write(fd, &m, sizeof(m));
}

/*
 * Read exactly len bytes, waiting at most timeout_ms for each part (0: only
 * what is already there, returning -EAGAIN when nothing is). Returns 0, -EAGAIN,
 * -ETIMEDOUT, -EPIPE (peer closed) or -errno.
 */
static inline int ic_read(int fd, void *buf, size_t len, int timeout_ms)
{
    uint8_t *p = buf;
    size_t got = 0;

    while (got < len) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int r = poll(&pfd, 1, got ? 10000 : timeout_ms);
        ssize_t n;

        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            return got || timeout_ms ? -ETIMEDOUT : -EAGAIN;
        n = read(fd, p + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EPIPE;
        got += (size_t)n;
    }
    return 0;
}

static inline int ic_unix_addr(const char *path, struct sockaddr_un *sa)
{
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(sa->sun_path))
        return -ENAMETOOLONG;
    strcpy(sa->sun_path, path);
    return 0;
}

/* Send the parameters (the side that has them). */
static inline int ic_params_send(int fd, const struct ic_params *p)
{
    int ret = ic_send(fd, IC_PARAMS, p->nsizes, p->flags);

    for (uint32_t i = 0; !ret && i < p->nsizes; i++)
        ret = ic_send(fd, IC_SIZE, i, p->sizes[i]);
    return ret;
}

/* Receive them; every count and size is checked. Returns 0 or a negative error. */
static inline int ic_params_recv(int fd, struct ic_params *p, int timeout_ms)
{
    struct ic_msg m;
    int ret = ic_read(fd, &m, sizeof(m), timeout_ms);

    if (ret)
        return ret;
    if (m.kind != IC_PARAMS || m.a == 0 || m.a > IC_MAX_SIZES)
        return -EPROTO;
    p->nsizes = m.a;
    p->flags = (uint32_t)m.b;
    for (uint32_t i = 0; i < p->nsizes; i++) {
        ret = ic_read(fd, &m, sizeof(m), timeout_ms);
        if (ret)
            return ret;
        if (m.kind != IC_SIZE || m.a != i || m.b > (1ull << 30))
            return -EPROTO;
        p->sizes[i] = m.b;
    }
    return 0;
}

/* Exchange raw addresses: send ours, read theirs. */
static inline int ic_addr_exchange(int fd, const uint8_t mine[IC_RAW_ADDR],
                                   uint8_t theirs[IC_RAW_ADDR], int timeout_ms)
{
    struct ic_msg m;
    int ret = ic_send(fd, IC_ADDR, IC_RAW_ADDR, 0);

    if (!ret)
        ret = ic_write(fd, mine, IC_RAW_ADDR);
    if (!ret)
        ret = ic_read(fd, &m, sizeof(m), timeout_ms);
    if (!ret && (m.kind != IC_ADDR || m.a != IC_RAW_ADDR))
        ret = -EPROTO;
    if (!ret)
        ret = ic_read(fd, theirs, IC_RAW_ADDR, timeout_ms);
    return ret;
}

/* Largest message of a case (buffer sizing). */
static inline uint64_t ic_case_max(const struct ic_case *c)
{
    uint64_t max = 0;

    for (uint32_t m = 0; m < c->nmsg; m++)
        max = c->size[m] > max ? c->size[m] : max;
    return max;
}

#endif /* EFARM_INTEROP_H */
