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
 *
 * After the two-sided cases comes the one-sided phase when the parameters ask
 * for it (IC_F_RMA): interop_rma.h has its cases and how they are paced.
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
    /* One-sided phase (interop_rma.h). */
    IC_RMA_SIZE,   /* a = IC_RMA_FROM_* | IC_RMA_DO_*, b = size; nrma follow the sizes */
    IC_REGION,     /* a = 0, b = the exposed region's virtual address */
    IC_REGION_KEY, /* a = 0, b = its remote key */
    IC_RMA_READY,  /* a = case: the target prepared its memory */
    IC_RMA_ISSUED, /* a = case, b = 0: the origin's operation completed, 1: it failed */
    IC_RMA_DONE,   /* a = case, b = defects the target found in its memory */
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
 * IC_BUG_WRITE_BUF_UNREADABLE: from 2.5, on a device with RDMA write, a buffer
 * registered for FI_WRITE only gets no IBV_ACCESS_REMOTE_READ
 * (efa_mr_ofi_to_ibv_access in prov/efa/src/efa_mr.c), yet a write from it to
 * a peer without RDMA write still goes by LONGREAD_RTW (from 64 KiB, both
 * with RDMA read): the peer's RDMA read of it fails with a remote access
 * error. efarm answers READ_NACK and libfabric sends the data again by
 * (DC_)LONGCTS_RTW; only there does the test tolerate it.
 */
#define IC_BUG_TAGGED_CQ_DATA_32    0x1u
#define IC_BUG_UNEXP_CQ_DATA_FLAG   0x2u
#define IC_BUG_WRITE_BUF_UNREADABLE 0x4u
/*
 * IC_BUG_MR_CACHE_WIDENS: fi_mr_reg of a region for remote access goes through
 * libfabric's MR cache (on by default, FI_EFA_MR_CACHE_ENABLE), which answers
 * with an existing registration that contains the region, such as one libfabric
 * made of a freed buffer that memory now reuses: its key grants the peer all of
 * that older, larger registration. An RDMA read a little before or past the
 * region is then not refused by the device and returns whatever lies there.
 * Tolerated for efarm's reads before and past libfabric's region, every version.
 */
#define IC_BUG_MR_CACHE_WIDENS 0x8u
/*
 * IC_BUG_MR_GRANTS_ALL: before 2.5, on a device with RDMA write (and libfabric
 * built against an rdma-core that has it), every registration gets
 * IBV_ACCESS_REMOTE_WRITE (and REMOTE_READ with RDMA read) whatever access was
 * asked for (prov/efa/src/efa_mr.c, efa_mr_reg_impl): a region registered with
 * FI_REMOTE_READ only takes a peer's RDMA write. 2.5 grants only what is asked
 * (efa_mr_ofi_to_ibv_access). Tolerated for efarm's RDMA writes on libfabric's
 * read-only region.
 */
#define IC_BUG_MR_GRANTS_ALL 0x10u

static inline unsigned ic_fi_bugs(uint32_t fi_version)
{
    unsigned major = fi_version >> 16, minor = fi_version & 0xffff, bugs = 0;

    if (major == 1 && minor < 18)
        bugs |= IC_BUG_TAGGED_CQ_DATA_32;
    if (major == 1 && minor < 19)
        bugs |= IC_BUG_UNEXP_CQ_DATA_FLAG;
    if (major > 2 || (major == 2 && minor >= 5))
        bugs |= IC_BUG_WRITE_BUF_UNREADABLE;
    else
        bugs |= IC_BUG_MR_GRANTS_ALL;
    bugs |= IC_BUG_MR_CACHE_WIDENS;
    return bugs;
}

#define IC_F_NO_BURSTS 0x1u  /* single messages only */
#define IC_F_NO_DC     0x2u  /* no delivery-complete cases */
#define IC_F_NO_MSG    0x4u  /* no two-sided cases at all */
#define IC_F_RMA       0x8u  /* the one-sided phase runs, on the IC_RMA_SIZE sizes */
#define IC_F_ATOMICS   0x10u /* and every atomic libfabric's EFA provider carries */
/* Refusals (IC_REFUSE_*): operations on memory the target did not grant. */
#define IC_F_REFUSALS       0x20u /* libfabric writes and atomics, emulated or direct */
#define IC_F_REFUSE_READS   0x40u /* reads, both origins (where they are the device's) */
#define IC_F_REFUSE_EFARM_W 0x80u /* efarm's writes, a bad key (where they are the device's) */
/*
 * and out of range or on the read-only region: only where libfabric's MR cache
 * is off (IC_BUG_MR_CACHE_WIDENS: a widened key would let the write land in
 * libfabric's own memory, past its region).
 */
#define IC_F_REFUSE_EFARM_W_RANGES 0x100u
/*
 * Several remote ranges (rma_iov entries) and, from libfabric, several local
 * iovs and an injected write; sizes of one packet, the long one-sided
 * subprotocols serving one range at efarm's target.
 */
#define IC_F_RANGES 0x200u
/*
 * Writes with remote CQ data (fi_writedata, efarm_write_data), both ways, of
 * one packet, a long one and one the target reads; the target must report the
 * data once, with the write's length, after the data landed.
 */
#define IC_F_WRITEDATA 0x400u

/*
 * What a one-sided size is for (IC_RMA_SIZE's a): which side is the origin and
 * which operations use it. A sender picks its subprotocol by size per
 * operation (libfabric's largest eager write differs with delivery complete,
 * its largest short read is another size), so a size may be for some only.
 */
#define IC_RMA_FROM_FI    0x01u
#define IC_RMA_FROM_EFARM 0x02u
#define IC_RMA_DO_WRITE   0x10u /* plain write */
#define IC_RMA_DO_DCWRITE 0x20u /* delivery-complete write */
#define IC_RMA_DO_READ    0x40u
#define IC_RMA_DO_ALL     (IC_RMA_DO_WRITE | IC_RMA_DO_DCWRITE | IC_RMA_DO_READ)
#define IC_RMA_MAX        (1u << 20) /* largest one-sided transfer */

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
    uint32_t nrma;                 /* one-sided sizes (IC_F_RMA) */
    uint8_t rma_use[IC_MAX_SIZES]; /* IC_RMA_FROM_* | IC_RMA_DO_* */
    uint64_t rma_sizes[IC_MAX_SIZES];
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

    if (p->flags & IC_F_NO_MSG)
        return 0;
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
    int ret = ic_send(fd, IC_PARAMS, p->nsizes | p->nrma << 16, p->flags);

    for (uint32_t i = 0; !ret && i < p->nsizes; i++)
        ret = ic_send(fd, IC_SIZE, i, p->sizes[i]);
    for (uint32_t i = 0; !ret && i < p->nrma; i++)
        ret = ic_send(fd, IC_RMA_SIZE, p->rma_use[i], p->rma_sizes[i]);
    return ret;
}

/* Receive them; every count and size is checked. Returns 0 or a negative error. */
static inline int ic_params_recv(int fd, struct ic_params *p, int timeout_ms)
{
    struct ic_msg m;
    int ret = ic_read(fd, &m, sizeof(m), timeout_ms);

    if (ret)
        return ret;
    /* a: the two-sided sizes in the low 16 bits, the one-sided ones above. */
    if (m.kind != IC_PARAMS || (m.a & 0xffff) == 0 || (m.a & 0xffff) > IC_MAX_SIZES ||
        m.a >> 16 > IC_MAX_SIZES)
        return -EPROTO;
    p->nsizes = m.a & 0xffff;
    p->nrma = m.a >> 16;
    p->flags = (uint32_t)m.b;
    for (uint32_t i = 0; i < p->nsizes; i++) {
        ret = ic_read(fd, &m, sizeof(m), timeout_ms);
        if (ret)
            return ret;
        if (m.kind != IC_SIZE || m.a != i || m.b > (1ull << 30))
            return -EPROTO;
        p->sizes[i] = m.b;
    }
    for (uint32_t i = 0; i < p->nrma; i++) {
        ret = ic_read(fd, &m, sizeof(m), timeout_ms);
        if (ret)
            return ret;
        if (m.kind != IC_RMA_SIZE || !(m.a & (IC_RMA_FROM_FI | IC_RMA_FROM_EFARM)) ||
            !(m.a & IC_RMA_DO_ALL) ||
            (m.a & ~(IC_RMA_FROM_FI | IC_RMA_FROM_EFARM | IC_RMA_DO_ALL)) || m.b == 0 ||
            m.b > IC_RMA_MAX)
            return -EPROTO;
        p->rma_use[i] = (uint8_t)m.a;
        p->rma_sizes[i] = m.b;
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

/* ---- One-sided phase ----------------------------------------------------------------- */

/*
 * Each side exposes one region of IC_RMA_REGION bytes to the other for remote
 * read and write (fi_mr_reg with FI_REMOTE_READ | FI_REMOTE_WRITE;
 * efarm_expose) and sends its virtual address (IC_REGION) and key
 * (IC_REGION_KEY): EFA addresses remote memory by virtual address
 * (FI_MR_VIRT_ADDR) and both name a region by the device's rkey.
 *
 * One case is one operation by the origin on the target's region:
 *  1. the target writes its whole region: the case's "before" pattern, and
 *     for atomics the initial elements in the range; then IC_RMA_READY;
 *  2. the origin starts the operation from its local buffer, waits for its
 *     completion, checks what came back (the data read, the old values a
 *     fetch or compare atomic returned, nothing written past them) and says
 *     IC_RMA_ISSUED;
 *  3. the target checks every byte of its region: the range holds what the
 *     operation leaves (the data written, the atomics' results, the before
 *     pattern for reads) and every other byte the before pattern. What must
 *     be applied when the origin's completion came (delivery complete, and
 *     operations answered by the target: reads, fetch and compare atomics) is
 *     checked at once; a plain write or atomic completes when sent and may be
 *     applied later, so the target progresses until its range holds the
 *     result or half the case's time is gone. IC_RMA_DONE carries the defects.
 */
#define IC_RMA_PAD    4096u
#define IC_RMA_REGION (IC_RMA_MAX + 2 * IC_RMA_PAD) /* bytes each side exposes */
#define IC_RMA_LOCAL  (IC_RMA_MAX + IC_RMA_PAD)     /* the origin's local buffer */
#define IC_RMA_GUARD  64u /* bytes after what an operation returns that must stay untouched */
/* Atomics in the local buffer: operands at 0, compare values and results here. */
#define IC_RMA_COMPARE_AT 1024u
#define IC_RMA_RESULT_AT  2048u
#define IC_RMA_MAX_COUNT  16u /* elements of an atomic case */
#define IC_MAX_RMA_CASES  1024
_Static_assert(8 * IC_RMA_MAX_COUNT + IC_RMA_GUARD <= IC_RMA_COMPARE_AT,
               "an atomic case's operands, compare values and results do not overlap");

enum ic_rma_kind { IC_RMA_WRITE, IC_RMA_READ, IC_RMA_ATOMIC, IC_RMA_FETCH, IC_RMA_COMPARE };

/*
 * The atomic datatypes and operations, in libfabric's numbering (enum
 * fi_datatype, enum fi_op), which protocol v4 carries: NAME, number, and for
 * datatypes the element size, C type and class (integer, real, complex: which
 * operations apply), for operations libfabric's name (FI_ATOMIC_READ). Each side checks
 * its own constants against these. Datatypes past float complex (double and long double complex,
 * long double, the 128-bit integers) are ones libfabric's EFA provider refuses.
 */
#define IC_DT_LIST(X)                        \
    X(INT8, 0, "int8", 1, int8_t, INT)       \
    X(UINT8, 1, "uint8", 1, uint8_t, INT)    \
    X(INT16, 2, "int16", 2, int16_t, INT)    \
    X(UINT16, 3, "uint16", 2, uint16_t, INT) \
    X(INT32, 4, "int32", 4, int32_t, INT)    \
    X(UINT32, 5, "uint32", 4, uint32_t, INT) \
    X(INT64, 6, "int64", 8, int64_t, INT)    \
    X(UINT64, 7, "uint64", 8, uint64_t, INT) \
    X(FLOAT, 8, "float", 4, float, REAL)     \
    X(DOUBLE, 9, "double", 8, double, REAL)  \
    X(FLOAT_COMPLEX, 10, "float_complex", 8, float _Complex, COMPLEX)
#define IC_OP_LIST(X)                     \
    X(MIN, 0, "min", MIN)                 \
    X(MAX, 1, "max", MAX)                 \
    X(SUM, 2, "sum", SUM)                 \
    X(PROD, 3, "prod", PROD)              \
    X(LOR, 4, "lor", LOR)                 \
    X(LAND, 5, "land", LAND)              \
    X(BOR, 6, "bor", BOR)                 \
    X(BAND, 7, "band", BAND)              \
    X(LXOR, 8, "lxor", LXOR)              \
    X(BXOR, 9, "bxor", BXOR)              \
    X(READ, 10, "read", ATOMIC_READ)      \
    X(WRITE, 11, "write", ATOMIC_WRITE)   \
    X(CSWAP, 12, "cswap", CSWAP)          \
    X(CSWAP_NE, 13, "cswap_ne", CSWAP_NE) \
    X(CSWAP_LE, 14, "cswap_le", CSWAP_LE) \
    X(CSWAP_LT, 15, "cswap_lt", CSWAP_LT) \
    X(CSWAP_GE, 16, "cswap_ge", CSWAP_GE) \
    X(CSWAP_GT, 17, "cswap_gt", CSWAP_GT) \
    X(MSWAP, 18, "mswap", MSWAP)
enum {
#define IC_DT_ENUM_(id, num, name, size, ctype, cls) IC_DT_##id = num,
    IC_DT_LIST(IC_DT_ENUM_)
#undef IC_DT_ENUM_
        IC_DT_COUNT
};
enum {
#define IC_OP_ENUM_(id, num, name, fi) IC_OP_##id = num,
    IC_OP_LIST(IC_OP_ENUM_)
#undef IC_OP_ENUM_
        IC_OP_COUNT
};

static inline unsigned ic_dt_size(unsigned dt)
{
    static const uint8_t size[] = {
#define IC_DT_SIZE_(id, num, name, sz, ctype, cls) [num] = sz,
        IC_DT_LIST(IC_DT_SIZE_)
#undef IC_DT_SIZE_
    };
    return dt < IC_DT_COUNT ? size[dt] : 0;
}

enum ic_dt_class { IC_DTC_INT, IC_DTC_REAL, IC_DTC_COMPLEX, IC_DTC_NONE };

static inline enum ic_dt_class ic_dt_class(unsigned dt)
{
    static const uint8_t cls[] = {
#define IC_DT_CLASS_(id, num, name, sz, ctype, c) [num] = IC_DTC_##c,
        IC_DT_LIST(IC_DT_CLASS_)
#undef IC_DT_CLASS_
    };
    return dt < IC_DT_COUNT ? (enum ic_dt_class)cls[dt] : IC_DTC_NONE;
}

static inline const char *ic_dt_name(unsigned dt)
{
    static const char *const names[] = {
#define IC_DT_NAME_(id, num, name, sz, ctype, cls) [num] = name,
        IC_DT_LIST(IC_DT_NAME_)
#undef IC_DT_NAME_
    };
    return dt < IC_DT_COUNT ? names[dt] : "?";
}

static inline const char *ic_op_name(unsigned op)
{
    static const char *const names[] = {
#define IC_OP_NAME_(id, num, name, fi) [num] = name,
        IC_OP_LIST(IC_OP_NAME_)
#undef IC_OP_NAME_
    };
    return op < IC_OP_COUNT ? names[op] : "?";
}

/*
 * What a refusal case names at the target: a key no region has, a range that
 * starts before the region or runs past its end, or a region the target
 * exposed for remote read only (writes and atomics). The target must change
 * nothing; the origin gets no data (a read or the old values of an atomic leave
 * its buffer untouched) and an error where the path has one: the device's for
 * its own RDMA, efarm's REFUSED answer for an efarm origin. An emulated write or
 * atomic from libfabric has no answer that carries an error in protocol v4
 * (efarm still answers RECEIPT and ATOMRSP, flagged REFUSED, so that the
 * origin finishes), nor has an emulated read: efarm's READRSP carries no data,
 * on which a libfabric origin would wait for ever, so reads are refusal cases
 * only where they are the device's.
 */
enum ic_refuse {
    IC_REFUSE_NONE,
    IC_REFUSE_BAD_KEY,
    IC_REFUSE_BEFORE,
    IC_REFUSE_PAST,
    IC_REFUSE_READ_ONLY
};
#define IC_RMA_RO 4096u /* the region each side exposes for remote read only */

struct ic_rma_case {
    uint32_t index;
    uint8_t dir;     /* enum ic_dir: libfabric->efarm has libfabric as the origin */
    uint8_t refuse;  /* enum ic_refuse */
    uint8_t kind;    /* enum ic_rma_kind */
    uint8_t dc;      /* remote completion: FI_DELIVERY_COMPLETE, EFARM_RMA_DC */
    uint8_t emulate; /* efarm origin: EFARM_RMA_NO_DIRECT */
    uint8_t nriov;   /* remote ranges the range is cut into (0: one) */
    uint8_t niov;    /* libfabric origin: local iovs its buffer is cut into (0: one) */
    uint8_t inject;  /* libfabric origin: FI_INJECT */
    uint8_t cq_data; /* a write with remote CQ data (ic_rma_cq_value) */
    uint8_t dt, op;  /* atomics */
    uint32_t count;  /* atomics: elements */
    uint64_t len;    /* bytes of the target's memory the operation covers */
    uint64_t off;    /* where in the target's region */
};

static inline bool ic_rma_is_atomic(const struct ic_rma_case *c)
{
    return c->kind >= IC_RMA_ATOMIC;
}

/*
 * The CQ data of a write with it: 32 bits, what libfabric's EFA provider
 * carries (cq_data_size 4) and an RDMA write's immediate holds.
 */
static inline uint64_t ic_rma_cq_value(const struct ic_rma_case *c)
{
    return 0xda7a0000u | (c->index & 0xffffu);
}

/*
 * A refusal libfabric's registration may let through (above): an RDMA read
 * before or past its region (IC_BUG_MR_CACHE_WIDENS), an RDMA write on its
 * read-only region (IC_BUG_MR_GRANTS_ALL).
 */
static inline bool ic_rma_cache_may_widen(const struct ic_rma_case *c, unsigned fi_bugs)
{
    return (fi_bugs & IC_BUG_MR_CACHE_WIDENS) && c->dir == IC_EFARM_TO_FI &&
           c->kind == IC_RMA_READ && (c->refuse == IC_REFUSE_BEFORE || c->refuse == IC_REFUSE_PAST);
}

static inline bool ic_rma_ro_may_take_write(const struct ic_rma_case *c, unsigned fi_bugs)
{
    return (fi_bugs & IC_BUG_MR_GRANTS_ALL) && c->dir == IC_EFARM_TO_FI &&
           c->kind == IC_RMA_WRITE && c->refuse == IC_REFUSE_READ_ONLY;
}

/*
 * Piece i of n of a len-byte range, unevenly (boundaries at len * k^2 / n^2, so
 * no two pieces are alike and none is empty for len >= n^2): *off and *plen.
 */
static inline void ic_rma_piece(uint64_t len, unsigned n, unsigned i, uint64_t *off, uint64_t *plen)
{
    uint64_t a, b;

    if (n <= 1) {
        *off = 0;
        *plen = len;
        return;
    }
    a = len * i * i / ((uint64_t)n * n);
    b = len * (i + 1) * (i + 1) / ((uint64_t)n * n);
    *off = a;
    *plen = b - a;
}

/*
 * Which atomics libfabric's EFA provider carries (fi_atomicvalid and its
 * fetch and compare forms; prov/util/src/util_atomic.c's handler tables, the
 * EFA provider refusing the 128-bit integers), written down here on their own:
 * integers take every write and fetch operation, floating types all but the
 * bitwise ones, float complex neither MIN nor MAX; READ only fetches; the
 * ordered compares need a real type, MSWAP an integer one.
 */
static inline bool ic_atomic_valid(unsigned kind, unsigned op, unsigned dt)
{
    enum ic_dt_class cls = ic_dt_class(dt);
    bool integer = cls == IC_DTC_INT, real = integer || cls == IC_DTC_REAL,
         any = cls != IC_DTC_NONE;
    bool cmp = kind == IC_RMA_COMPARE;

    switch (op) {
    case IC_OP_MIN:
    case IC_OP_MAX:
        return !cmp && real;
    case IC_OP_SUM:
    case IC_OP_PROD:
    case IC_OP_LOR:
    case IC_OP_LAND:
    case IC_OP_LXOR:
    case IC_OP_WRITE:
        return !cmp && any;
    case IC_OP_BOR:
    case IC_OP_BAND:
    case IC_OP_BXOR:
        return !cmp && integer;
    case IC_OP_READ:
        return kind == IC_RMA_FETCH && any;
    case IC_OP_CSWAP:
    case IC_OP_CSWAP_NE:
        return cmp && any;
    case IC_OP_CSWAP_LE:
    case IC_OP_CSWAP_LT:
    case IC_OP_CSWAP_GE:
    case IC_OP_CSWAP_GT:
        return cmp && real;
    case IC_OP_MSWAP:
        return cmp && integer;
    default:
        return false;
    }
}

/* "efarm->libfabric write 4096 B, emulated, dc", "libfabric->efarm fetch sum int64 x8". */
static inline const char *ic_rma_describe(const struct ic_rma_case *c, char *buf, size_t len)
{
    static const char *const kinds[] = {"write", "read", "atomic", "fetch", "compare"};

    static const char *const refusals[] = {"", ", bad key", ", before the region",
                                           ", past the region", ", read-only region"};
    int n;

    if (ic_rma_is_atomic(c))
        n = snprintf(buf, len, "%s %s %s %s x%u%s", ic_dir_name(c->dir), kinds[c->kind],
                     ic_op_name(c->op), ic_dt_name(c->dt), c->count, c->dc ? ", dc" : "");
    else
        n = snprintf(buf, len, "%s %s %llu B%s%s", ic_dir_name(c->dir), kinds[c->kind],
                     (unsigned long long)c->len, c->emulate ? ", emulated" : "",
                     c->dc ? ", dc" : "");
    if (c->refuse && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, "%s", refusals[c->refuse % 5]);
    if (c->cq_data && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, ", with CQ data");
    if ((c->nriov > 1 || c->niov > 1 || c->inject) && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, ", %u range(s), %u iov(s)%s", c->nriov ? c->nriov : 1,
                 c->niov ? c->niov : 1, c->inject ? ", injected" : "");
    return buf;
}

static inline void ic_rma_add(struct ic_rma_case *cases, unsigned *n, unsigned max,
                              struct ic_rma_case c)
{
    if (*n == max)
        return;
    c.index = *n;
    /* Byte operations at every alignment; atomics on whole elements (8-byte aligned). */
    c.off = IC_RMA_PAD + (ic_rma_is_atomic(&c) ? 8 * (*n % 8) : *n % 8);
    cases[(*n)++] = c;
}

/*
 * The one-sided cases: for each direction, each size for that origin with
 * the operations it is for (plain write, delivery-complete write, read; an
 * efarm origin does each twice, letting the engine use the device's RDMA and
 * forcing the emulated packets), then the atomics: sum of int64 (one
 * element; sixteen with delivery complete), sum of double, fetch-and-sum of
 * int64, compare-and-swap of int64 (even elements match, odd ones do not);
 * with IC_F_ATOMICS, every atomic ic_atomic_valid names, four elements each.
 */
static inline unsigned ic_rma_cases(const struct ic_params *p, struct ic_rma_case *cases,
                                    unsigned max)
{
    static const struct ic_rma_case atomics[] = {
        {.kind = IC_RMA_ATOMIC, .op = IC_OP_SUM, .dt = IC_DT_INT64, .count = 1},
        {.kind = IC_RMA_ATOMIC, .op = IC_OP_SUM, .dt = IC_DT_INT64, .count = 16, .dc = 1},
        {.kind = IC_RMA_ATOMIC, .op = IC_OP_SUM, .dt = IC_DT_DOUBLE, .count = 4},
        {.kind = IC_RMA_FETCH, .op = IC_OP_SUM, .dt = IC_DT_INT64, .count = 8},
        {.kind = IC_RMA_COMPARE, .op = IC_OP_CSWAP, .dt = IC_DT_INT64, .count = 8},
    };
    static const struct {
        unsigned use;
        uint8_t kind, dc;
    } ops[] = {
        {IC_RMA_DO_WRITE, IC_RMA_WRITE, 0},
        {IC_RMA_DO_DCWRITE, IC_RMA_WRITE, 1},
        {IC_RMA_DO_READ, IC_RMA_READ, 0},
    };
    unsigned n = 0;

    if (!(p->flags & IC_F_RMA))
        return 0;
    for (unsigned dir = 0; dir < 2; dir++) {
        unsigned from = dir == IC_FI_TO_EFARM ? IC_RMA_FROM_FI : IC_RMA_FROM_EFARM;

        for (unsigned s = 0; s < p->nrma; s++) {
            unsigned use = p->rma_use[s];

            if (!(use & from))
                continue;
            if (p->flags & IC_F_NO_DC)
                use &= ~IC_RMA_DO_DCWRITE;
            for (unsigned emulate = 0; emulate < (dir == IC_EFARM_TO_FI ? 2u : 1u); emulate++)
                for (unsigned o = 0; o < sizeof(ops) / sizeof(ops[0]); o++)
                    if (use & ops[o].use)
                        ic_rma_add(cases, &n, max,
                                   (struct ic_rma_case){.dir = (uint8_t)dir,
                                                        .kind = ops[o].kind,
                                                        .dc = ops[o].dc,
                                                        .emulate = (uint8_t)emulate,
                                                        .len = p->rma_sizes[s]});
        }
        for (unsigned a = 0; a < sizeof(atomics) / sizeof(atomics[0]); a++) {
            struct ic_rma_case c = atomics[a];

            if (c.dc && (p->flags & IC_F_NO_DC))
                continue;
            c.dir = (uint8_t)dir;
            c.len = (uint64_t)ic_dt_size(c.dt) * c.count;
            ic_rma_add(cases, &n, max, c);
        }
        /*
         * Every kind, operation and datatype carried: four elements each. The
         * write kind with delivery complete: many of these leave an element as
         * it was (MIN of a larger operand), so a plain one could not be told to
         * have landed, and might land in the next case's memory.
         */
        for (unsigned kind = IC_RMA_ATOMIC; (p->flags & IC_F_ATOMICS) && kind <= IC_RMA_COMPARE;
             kind++)
            for (unsigned op = 0; op < IC_OP_COUNT; op++)
                for (unsigned dt = 0; dt < IC_DT_COUNT; dt++)
                    if (ic_atomic_valid(kind, op, dt))
                        ic_rma_add(cases, &n, max,
                                   (struct ic_rma_case){.dir = (uint8_t)dir,
                                                        .kind = (uint8_t)kind,
                                                        .op = (uint8_t)op,
                                                        .dt = (uint8_t)dt,
                                                        .dc = kind == IC_RMA_ATOMIC,
                                                        .count = 4,
                                                        .len = 4ull * ic_dt_size(dt)});
        /* Several ranges and iovs, an injected write. */
        if (p->flags & IC_F_RANGES) {
            static const struct ic_rma_case ranged[] = {
                {.kind = IC_RMA_WRITE, .len = 3000, .nriov = 3, .niov = 2},
                {.kind = IC_RMA_WRITE, .len = 2000, .nriov = 2, .niov = 3, .dc = 1},
                {.kind = IC_RMA_WRITE, .len = 4000, .nriov = 4, .niov = 4},
                {.kind = IC_RMA_READ, .len = 3000, .nriov = 4, .niov = 2},
                {.kind = IC_RMA_READ, .len = 200, .nriov = 2, .niov = 1},
                {.kind = IC_RMA_WRITE, .len = 16, .inject = 1},
            };

            for (unsigned k = 0; k < sizeof(ranged) / sizeof(ranged[0]); k++) {
                struct ic_rma_case c = ranged[k];

                if ((c.dc && (p->flags & IC_F_NO_DC)) || (c.inject && dir != IC_FI_TO_EFARM))
                    continue;
                c.dir = (uint8_t)dir;
                if (dir == IC_EFARM_TO_FI)
                    c.niov = 0; /* efarm's local buffer is one range */
                for (unsigned emulate = 0; emulate < (dir == IC_EFARM_TO_FI ? 2u : 1u); emulate++) {
                    c.emulate = (uint8_t)emulate;
                    ic_rma_add(cases, &n, max, c);
                }
            }
        }
        /*
         * Writes with CQ data: one packet, a long write (efarm as origin: by
         * CTS below its EFARM_READ_MIN), one the target reads where both read
         * by RDMA; plain and delivery complete, and efarm's emulated too.
         */
        if (p->flags & IC_F_WRITEDATA) {
            static const uint64_t sizes[] = {16, 4000, 20000, 200000, 1u << 20};

            for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
                for (unsigned dc = 0; dc < 2; dc++)
                    for (unsigned emulate = 0; emulate < (dir == IC_EFARM_TO_FI ? 2u : 1u);
                         emulate++)
                        if (!dc || !(p->flags & IC_F_NO_DC))
                            ic_rma_add(cases, &n, max,
                                       (struct ic_rma_case){.dir = (uint8_t)dir,
                                                            .kind = IC_RMA_WRITE,
                                                            .dc = (uint8_t)dc,
                                                            .emulate = (uint8_t)emulate,
                                                            .cq_data = 1,
                                                            .len = sizes[k]});
        }
        /* Refusals. */
        for (unsigned r = IC_REFUSE_BAD_KEY; r <= IC_REFUSE_READ_ONLY; r++) {
            static const struct ic_rma_case refused[] = {
                {.kind = IC_RMA_WRITE, .len = 64},
                {.kind = IC_RMA_WRITE, .len = 64, .dc = 1},
                {.kind = IC_RMA_READ, .len = 64},
                {.kind = IC_RMA_ATOMIC, .op = IC_OP_SUM, .dt = IC_DT_INT64, .count = 4, .len = 32},
                {.kind = IC_RMA_FETCH, .op = IC_OP_SUM, .dt = IC_DT_INT64, .count = 4, .len = 32},
                {.kind = IC_RMA_COMPARE,
                 .op = IC_OP_CSWAP,
                 .dt = IC_DT_INT64,
                 .count = 4,
                 .len = 32},
            };

            for (unsigned k = 0; k < sizeof(refused) / sizeof(refused[0]); k++) {
                struct ic_rma_case c = refused[k];
                bool fi = dir == IC_FI_TO_EFARM;
                unsigned want = c.kind == IC_RMA_READ            ? IC_F_REFUSE_READS
                                : fi                             ? IC_F_REFUSALS
                                : c.kind != IC_RMA_WRITE || c.dc ? 0
                                : r == IC_REFUSE_BAD_KEY         ? IC_F_REFUSE_EFARM_W
                                                                 : IC_F_REFUSE_EFARM_W_RANGES;

                if (!(p->flags & want) || (c.dc && (p->flags & IC_F_NO_DC)) ||
                    (c.kind == IC_RMA_READ && r == IC_REFUSE_READ_ONLY))
                    continue;
                c.dir = (uint8_t)dir;
                c.refuse = (uint8_t)r;
                ic_rma_add(cases, &n, max, c);
            }
        }
    }
    return n;
}

/* Element j of an atomic case in each role, as the bits of its datatype (host order). */
enum ic_rma_role { IC_RMA_INITIAL, IC_RMA_OPERAND, IC_RMA_COMPARAND };

static inline uint64_t ic_rma_mix(const struct ic_rma_case *c, unsigned role, uint64_t j)
{
    uint64_t x = ((j + 1) * 0x9e3779b97f4a7c15ull) ^
                 (((uint64_t)c->index << 8 | role) * 0xc2b2ae3d27d4eb4full);

    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    return x ^ x >> 29;
}

/* A value of the datatype from x, as its bits: small enough that no sum or product overflows. */
static inline uint64_t ic_rma_make(unsigned dt, uint64_t x)
{
    int64_t i = (int64_t)(x >> 33);
    uint64_t v = 0;

    /* Every fifth value zero, so the logical operations see both truths. */
    if (x % 5 == 0 && dt != IC_DT_INT64 && dt != IC_DT_DOUBLE)
        return 0;
    switch (dt) {
#define IC_MAKE_(DT, T, expr)      \
    case DT: {                     \
        T t = (T)(expr);           \
        memcpy(&v, &t, sizeof(t)); \
        return v;                  \
    }
        IC_MAKE_(IC_DT_INT8, int8_t, i % 17 - 8)
        IC_MAKE_(IC_DT_UINT8, uint8_t, i % 16)
        IC_MAKE_(IC_DT_INT16, int16_t, i % 201 - 100)
        IC_MAKE_(IC_DT_UINT16, uint16_t, i % 256)
        IC_MAKE_(IC_DT_INT32, int32_t, i % 60001 - 30000)
        IC_MAKE_(IC_DT_UINT32, uint32_t, i % 65536)
        IC_MAKE_(IC_DT_INT64, int64_t, (int64_t)(x >> 23) - (1ll << 40))
        IC_MAKE_(IC_DT_UINT64, uint64_t, x >> 34)
        /* Quarters: every sum and product exact. */
        IC_MAKE_(IC_DT_FLOAT, float, (double)(i % 513 - 256) * 0.25)
        IC_MAKE_(IC_DT_DOUBLE, double, (double)(i % 4001 - 2000) * 0.25)
#undef IC_MAKE_
    case IC_DT_FLOAT_COMPLEX: {
        float re = (float)(i % 129 - 64) * 0.25f, im = (float)((i >> 8) % 129 - 64) * 0.25f;

        memcpy(&v, &re, 4);
        memcpy((uint8_t *)&v + 4, &im, 4);
        return v;
    }
    default:
        return 0;
    }
}

static inline uint64_t ic_rma_value(const struct ic_rma_case *c, unsigned role, uint64_t j)
{
    uint64_t x = ic_rma_mix(c, role, j);

    if (role == IC_RMA_COMPARAND) {
        uint64_t initial = ic_rma_value(c, IC_RMA_INITIAL, j), d;

        if (c->op == IC_OP_MSWAP) /* a mask */
            return x & (~0ull >> (64 - 8 * ic_dt_size(c->dt)));
        /* Equal, below or above the target's element by turns (j % 3). */
        if (j % 3 == 0)
            return initial;
        d = ic_rma_make(c->dt, x | 1); /* odd: never the forced zero */
        if (ic_dt_class(c->dt) != IC_DTC_INT) {
            /* The initial value moved by a quarter or more, down or up. */
            if (c->dt == IC_DT_DOUBLE) {
                double a;

                memcpy(&a, &initial, 8);
                a += j % 3 == 1 ? -0.25 : 0.25;
                memcpy(&d, &a, 8);
            } else {
                float a;

                memcpy(&a, &initial, 4);
                a += j % 3 == 1 ? -0.25f : 0.25f;
                d = initial;
                memcpy(&d, &a, 4);
            }
            return d;
        }
        /* Integers: one below or above, in the datatype's width. */
        d = j % 3 == 1 ? initial - 1 : initial + 1;
        return d & (~0ull >> (64 - 8 * ic_dt_size(c->dt)));
    }
    return ic_rma_make(c->dt, x);
}

/*
 * Element j of the target once the atomic was applied, as libfabric's
 * handlers compute it: MIN keeps the smaller, LOR/LAND/LXOR give 0 or 1, the
 * compares swap in the operand when `compare OP target` holds, MSWAP takes the
 * operand's bits where the mask is set.
 */
#define IC_APPLY_COMMON_(a, b, cmp, r)                          \
    case IC_OP_SUM:                                             \
        r = a + b;                                              \
        break;                                                  \
    case IC_OP_PROD:                                            \
        r = a * b;                                              \
        break;                                                  \
    case IC_OP_LOR:                                             \
        r = (a != 0) || (b != 0);                               \
        break;                                                  \
    case IC_OP_LAND:                                            \
        r = (a != 0) && (b != 0);                               \
        break;                                                  \
    case IC_OP_LXOR:                                            \
        r = ((a != 0) && !(b != 0)) || (!(a != 0) && (b != 0)); \
        break;                                                  \
    case IC_OP_READ:                                            \
        r = a;                                                  \
        break;                                                  \
    case IC_OP_WRITE:                                           \
        r = b;                                                  \
        break;                                                  \
    case IC_OP_CSWAP:                                           \
        r = cmp == a ? b : a;                                   \
        break;                                                  \
    case IC_OP_CSWAP_NE:                                        \
        r = cmp != a ? b : a;                                   \
        break;
#define IC_APPLY_ORD_(a, b, cmp, r) \
    case IC_OP_MIN:                 \
        r = a > b ? b : a;          \
        break;                      \
    case IC_OP_MAX:                 \
        r = a < b ? b : a;          \
        break;                      \
    case IC_OP_CSWAP_LE:            \
        r = cmp <= a ? b : a;       \
        break;                      \
    case IC_OP_CSWAP_LT:            \
        r = cmp < a ? b : a;        \
        break;                      \
    case IC_OP_CSWAP_GE:            \
        r = cmp >= a ? b : a;       \
        break;                      \
    case IC_OP_CSWAP_GT:            \
        r = cmp > a ? b : a;        \
        break;
#define IC_APPLY_INT_(a, b, cmp, r) \
    case IC_OP_BOR:                 \
        r = a | b;                  \
        break;                      \
    case IC_OP_BAND:                \
        r = a & b;                  \
        break;                      \
    case IC_OP_BXOR:                \
        r = a ^ b;                  \
        break;                      \
    case IC_OP_MSWAP:               \
        r = (b & cmp) | (a & ~cmp); \
        break;
#define IC_APPLY_TYPED_(T, KINDS)          \
    {                                      \
        T a, b, cmp, r;                    \
        memcpy(&a, &initial, sizeof(T));   \
        memcpy(&b, &operand, sizeof(T));   \
        memcpy(&cmp, &compare, sizeof(T)); \
        r = a;                             \
        switch (c->op) {                   \
            IC_APPLY_COMMON_(a, b, cmp, r) \
            KINDS                          \
        default:                           \
            break;                         \
        }                                  \
        out = 0;                           \
        memcpy(&out, &r, sizeof(T));       \
        return out;                        \
    }

static inline uint64_t ic_rma_value_after(const struct ic_rma_case *c, uint64_t j)
{
    uint64_t initial = ic_rma_value(c, IC_RMA_INITIAL, j);
    uint64_t operand = ic_rma_value(c, IC_RMA_OPERAND, j);
    uint64_t compare = ic_rma_value(c, IC_RMA_COMPARAND, j), out;

    switch (c->dt) {
#define IC_APPLY_INT_CLASS_(T) \
    IC_APPLY_TYPED_(T, IC_APPLY_ORD_(a, b, cmp, r) IC_APPLY_INT_(a, b, cmp, r))
#define IC_APPLY_REAL_CLASS_(T)    IC_APPLY_TYPED_(T, IC_APPLY_ORD_(a, b, cmp, r))
#define IC_APPLY_COMPLEX_CLASS_(T) IC_APPLY_TYPED_(T, )
#define IC_APPLY_CASE_(id, num, name, sz, ctype, cls) \
    case IC_DT_##id:                                  \
        IC_APPLY_##cls##_CLASS_(ctype)
        IC_DT_LIST(IC_APPLY_CASE_)
#undef IC_APPLY_CASE_
#undef IC_APPLY_COMPLEX_CLASS_
#undef IC_APPLY_REAL_CLASS_
#undef IC_APPLY_INT_CLASS_
    default:
        return initial;
    }
}
#undef IC_APPLY_TYPED_
#undef IC_APPLY_INT_
#undef IC_APPLY_ORD_
#undef IC_APPLY_COMMON_

static inline uint8_t ic_rma_value_byte(uint64_t v, uint64_t i)
{
    uint8_t b[8];

    memcpy(b, &v, sizeof(b));
    return b[i % 8];
}

/* Byte i of what a write sends. */
static inline uint8_t ic_rma_data(const struct ic_rma_case *c, uint64_t i)
{
    return ic_byte(c->index, 0, i);
}

/*
 * The part of its region the target prepares and checks for case c: all of it,
 * but for an atomic (a few elements near the start) the first two pads only, so
 * that hundreds of atomic cases do not each rewrite a MiB.
 */
static inline uint64_t ic_rma_window(const struct ic_rma_case *c)
{
    return ic_rma_is_atomic(c) && !c->refuse ? 2 * IC_RMA_PAD : IC_RMA_REGION;
}

/* Byte o of the read-only region each side exposes (IC_RMA_RO bytes), for the whole run. */
static inline uint8_t ic_rma_ro_byte(uint64_t o)
{
    return ic_byte(0xffffu, 2, o);
}

/* Byte o of the target's region before the operation. */
static inline uint8_t ic_rma_before(const struct ic_rma_case *c, uint64_t o)
{
    unsigned size = ic_dt_size(c->dt);

    if (ic_rma_is_atomic(c) && o >= c->off && o < c->off + c->len)
        return ic_rma_value_byte(ic_rma_value(c, IC_RMA_INITIAL, (o - c->off) / size),
                                 (o - c->off) % size);
    return ic_byte(c->index, 1, o);
}

/* Byte o of the target's region once the operation was applied. */
static inline uint8_t ic_rma_after(const struct ic_rma_case *c, uint64_t o)
{
    if (o < c->off || o >= c->off + c->len || c->kind == IC_RMA_READ || c->refuse)
        return ic_rma_before(c, o);
    if (c->kind == IC_RMA_WRITE)
        return ic_rma_data(c, o - c->off);
    return ic_rma_value_byte(ic_rma_value_after(c, (o - c->off) / ic_dt_size(c->dt)),
                             (o - c->off) % ic_dt_size(c->dt));
}

/* Exchange the exposed regions: send ours, read theirs; outputs set only on success. */
static inline int ic_region_exchange(int fd, uint64_t addr, uint64_t key, uint64_t *addr_p,
                                     uint64_t *key_p, int timeout_ms)
{
    struct ic_msg a, k;
    int ret = ic_send(fd, IC_REGION, 0, addr);

    if (!ret)
        ret = ic_send(fd, IC_REGION_KEY, 0, key);
    if (!ret)
        ret = ic_read(fd, &a, sizeof(a), timeout_ms);
    if (!ret)
        ret = ic_read(fd, &k, sizeof(k), timeout_ms);
    if (!ret && (a.kind != IC_REGION || k.kind != IC_REGION_KEY || a.b == 0))
        ret = -EPROTO;
    if (ret)
        return ret;
    *addr_p = a.b;
    *key_p = k.b;
    return 0;
}

#endif /* EFARM_INTEROP_H */
