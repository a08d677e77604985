/*
 * efasim's knobs: one table, read once from the environment on first use.
 * Device attributes default to what EFA devices report (ibv_devinfo -v and
 * efadv_query_device on EC2; sources in src/efasim/README.md); every one can
 * be overridden. `efasim-info` prints the table with the values in force.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "efasim_model.h"

extern char **environ;

/*
 * X(name, member, kind, default, doc). kind: U32, U64, BOOL, PROB (0..1), ADDR, LIMIT
 * ("kernel": what the kernel enforces for this process, or a number of bytes).
 */
#define EFASIM_KNOBS(X)                                                                           \
    X(NDEV, ndev, U32, "1", "number of emulated EFA devices (efasim_0, efasim_1, ...; 1..64)")    \
    X(ADDR, addr, ADDR, "127.0.0.1", "IPv4 address of device 0; device i uses the next ones")     \
    X(MTU, mtu, U32, "8928", "max message size of one send (port max_msg_sz), like EFA")          \
    X(INLINE, inline_size, U32, "32", "inline data bytes per send WR (efadv inline_buf_size)")    \
    X(MAX_SQ_WR, max_sq_wr, U32, "4096", "send queue depth limit (efadv max_sq_wr)")              \
    X(MAX_RQ_WR, max_rq_wr, U32, "32768", "receive queue descriptors (efadv max_rq_wr)")          \
    X(MAX_SQ_SGE, max_sq_sge, U32, "2", "SGEs per send WR")                                       \
    X(MAX_RQ_SGE, max_rq_sge, U32, "3", "SGEs per receive WR")                                    \
    X(MAX_CQE, max_cqe, U32, "32768", "entries per CQ")                                           \
    X(MAX_QP, max_qp, U32, "256", "QPs per device, over every process on the host")               \
    X(MAX_CQ, max_cq, U32, "512", "CQs per device context (reported)")                            \
    X(MAX_MR, max_mr, U32, "262144", "registered regions per context (ibv_reg_mr fails beyond)")  \
    X(MAX_MR_SIZE, max_mr_size, U64, "103079215104", "largest MR, 96 GiB like EFA")               \
    X(MAX_REG_PAGES, max_reg_pages, U64, "25165824",                                              \
      "device pages registered, all processes (4 KiB, or whole huge pages; 96 GiB of 4 KiB)")     \
    X(MAX_RW_MR_PAGES, max_rw_mr_pages, U64, "1048576",                                           \
      "device pages of one MR that allows remote write (2^20: 4 GiB of 4 KiB pages)")             \
    X(MEMLOCK, memlock, LIMIT, "kernel",                                                          \
      "pinned-page limit: kernel (RLIMIT_MEMLOCK, CAP_IPC_LOCK) or N bytes without CAP_IPC_LOCK") \
    X(COPY_ON_FORK, copy_on_fork, BOOL, "1",                                                      \
      "the kernel copies pinned pages at fork (>= 5.13): ibv_is_fork_initialized UNNEEDED")       \
    X(MAX_AH, max_ah, U32, "1024", "address handle numbers per device, all processes")            \
    X(MAX_RDMA_SIZE, max_rdma_size, U64, "1073741824", "largest RDMA read/write, 1 GiB like EFA") \
    X(RDMA_READ, rdma_read, BOOL, "1", "advertise and serve RDMA read")                           \
    X(RDMA_WRITE, rdma_write, BOOL, "0", "advertise and serve RDMA write (newer EFA only)")       \
    X(UNSOLICITED_WRITE_RECV, unsolicited_write_recv, BOOL, "0",                                  \
      "with RDMA_WRITE=1: advertise and serve unsolicited write receive (newer EFA only)")        \
    X(DEVICE_ID, device_id, U32, "0xefa2", "PCI device id: vendor_part_id, hw_ver, sysfs device") \
    X(MAX_PEERS, max_peers, U32, "1024", "reliability state slots per SRD QP (distinct peers)")   \
    X(RTO_US, rto_us, U32, "2000", "first retransmission timeout; doubles per retry")             \
    X(RTO_MAX_US, rto_max_us, U32, "100000", "retransmission timeout cap")                        \
    X(TIMEOUT_MS, timeout_ms, U32, "5000", "SRD: silence after which a peer is unreachable")      \
    X(RNR_BACKOFF_US, rnr_backoff_us, U32, "1000", "wait before resending after an RNR")          \
    X(ACK_DELAY_US, ack_delay_us, U32, "20", "how long an ACK waits to ride on a datagram back")  \
    X(SERVICE_US, service_us, U32, "500", "service thread period (timers, idle serving, events)") \
    X(RDMA_CHUNK, rdma_chunk, U32, "8192", "payload bytes per RDMA datagram")                     \
    X(QPN, qpn, U32, "0", "QP number of the process's first QP, +1 each; 0: the lowest free")     \
    X(QPN_PORT, qpn_port, U32, "20000", "UDP port of QP number 0; QP n binds QPN_PORT + n")       \
    X(FASTPATH, fastpath, BOOL, "1", "RDMA within one host by one direct copy (0: datagrams)")    \
    X(FAST_CHUNK, fast_chunk, U32, "1048576", "bytes per direct-copy RDMA request")               \
    X(LOSS, loss, PROB, "0", "probability a datagram is dropped (below SRD's reliability)")       \
    X(DUP, dup, PROB, "0", "probability a datagram is sent twice")                                \
    X(REORDER, reorder, PROB, "0", "probability a datagram is held back behind later ones")       \
    X(DELAY, delay, PROB, "0", "probability a datagram is held for EFASIM_DELAY_US")              \
    X(DELAY_US, delay_us, U32, "1000", "how long a delayed datagram is held")                     \
    X(JITTER, jitter, BOOL, "0", "1: a delayed datagram is held a random time up to DELAY_US")    \
    X(RNR_STALL_US, rnr_stall_us, U32, "0", "RNR storms: a QP takes no receive this long ...")    \
    X(RNR_STALL_PERIOD_US, rnr_stall_period_us, U32, "20000", "... in every period this long")    \
    X(SEED, seed, U64, "1", "seed of the fault injector's random stream")                         \
    X(UVERBS_IOCTL, uverbs_ioctl, BOOL, "1",                                                      \
      "kernel front end: offer uverbs ioctl (0: write() only, as kernels before 4.17)")

static struct efasim_config g_config;
static pthread_once_t g_config_once = PTHREAD_ONCE_INIT;

static void knob_error(const char *name, const char *value, const char *why)
{
    fprintf(stderr, "efasim: EFASIM_%s=%s ignored: %s\n", name, value, why);
}

static void parse_u64(const char *name, const char *value, uint64_t max, uint64_t *out)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(value, &end, 0);
    if (errno || end == value || *end || v > max || value[0] == '-')
        knob_error(name, value, "not a number in range");
    else
        *out = v;
}

static void parse_knob(const char *name, const char *kind, const char *value, void *member)
{
    if (!strcmp(kind, "U32")) {
        uint64_t v = *(uint32_t *)member;
        parse_u64(name, value, UINT32_MAX, &v);
        *(uint32_t *)member = (uint32_t)v;
    } else if (!strcmp(kind, "U64")) {
        parse_u64(name, value, UINT64_MAX, member);
    } else if (!strcmp(kind, "BOOL")) {
        uint64_t v = *(bool *)member;
        parse_u64(name, value, 1, &v);
        *(bool *)member = v != 0;
    } else if (!strcmp(kind, "PROB")) {
        char *end;
        double v = strtod(value, &end);
        if (end == value || *end || !(v >= 0.0 && v <= 1.0))
            knob_error(name, value, "not a probability in [0, 1]");
        else
            *(double *)member = v;
    } else if (!strcmp(kind, "LIMIT")) {
        if (!strcmp(value, "kernel"))
            *(uint64_t *)member = EFASIM_LIMIT_KERNEL;
        else
            parse_u64(name, value, EFASIM_LIMIT_KERNEL - 1, member);
    } else { /* ADDR */
        struct in_addr *a = member;
        if (inet_pton(AF_INET, value, a) != 1)
            knob_error(name, value, "not an IPv4 address");
    }
}

static void config_read(void)
{
    struct efasim_config *c = &g_config;

#define EFASIM_KNOB_SET(name, member, kind, def, doc) \
    parse_knob(#name, #kind, def, &c->member);        \
    if (getenv("EFASIM_" #name))                      \
        parse_knob(#name, #kind, getenv("EFASIM_" #name), &c->member);
    EFASIM_KNOBS(EFASIM_KNOB_SET)
#undef EFASIM_KNOB_SET

    if (c->ndev < 1 || c->ndev > EFASIM_MAX_DEVICES) {
        fprintf(stderr, "efasim: EFASIM_NDEV=%u out of 1..%d; using 1\n", c->ndev,
                EFASIM_MAX_DEVICES);
        c->ndev = 1;
    }
    if (c->max_qp < 1 || c->max_qp > 32768) {
        fprintf(stderr, "efasim: EFASIM_MAX_QP=%u out of 1..32768; using 256\n", c->max_qp);
        c->max_qp = 256;
    }
    if (c->qpn_port < 1024 || c->qpn_port + c->max_qp - 1 > 0xffff) {
        fprintf(stderr,
                "efasim: EFASIM_QPN_PORT=%u out of 1024..%u (its QP numbers' ports, up to "
                "EFASIM_MAX_QP=%u of them, must fit below 65536); using 20000\n",
                c->qpn_port, 0x10000 - c->max_qp, c->max_qp);
        c->qpn_port = 20000;
    }
    for (unsigned i = 1; i < c->ndev; i++)
        c->addr[i].s_addr = htonl(ntohl(c->addr[0].s_addr) + i);
    if (c->mtu < 64 || c->mtu > 65000) {
        fprintf(stderr, "efasim: EFASIM_MTU=%u out of 64..65000; using 8928\n", c->mtu);
        c->mtu = 8928;
    }
    if (c->rdma_chunk < 512 || c->rdma_chunk > 65000)
        c->rdma_chunk = 8192;
    if (c->fast_chunk < c->rdma_chunk || c->fast_chunk > (64u << 20)) {
        fprintf(stderr, "efasim: EFASIM_FAST_CHUNK=%u out of EFASIM_RDMA_CHUNK..64 MiB; using %u\n",
                c->fast_chunk, c->fast_chunk < c->rdma_chunk ? c->rdma_chunk : 64u << 20);
        c->fast_chunk = c->fast_chunk < c->rdma_chunk ? c->rdma_chunk : 64u << 20;
    }
    if (c->rnr_stall_us && (!c->rnr_stall_period_us || c->rnr_stall_us >= c->rnr_stall_period_us)) {
        fprintf(stderr,
                "efasim: EFASIM_RNR_STALL_US=%u not below EFASIM_RNR_STALL_PERIOD_US=%u; "
                "no RNR storms\n",
                c->rnr_stall_us, c->rnr_stall_period_us);
        c->rnr_stall_us = 0;
    }
    /* Unsolicited write receive is a way to receive RDMA writes: none without them. */
    if (!c->rdma_write)
        c->unsolicited_write_recv = false;
    if (!c->max_sq_sge)
        c->max_sq_sge = 1;
    if (!c->max_rq_sge)
        c->max_rq_sge = 1;
    if (c->max_sq_sge > EFASIM_MAX_SGE || c->max_rq_sge > EFASIM_MAX_SGE) {
        fprintf(stderr, "efasim: EFASIM_MAX_SQ_SGE/MAX_RQ_SGE above %d; using %d\n", EFASIM_MAX_SGE,
                EFASIM_MAX_SGE);
        c->max_sq_sge = c->max_sq_sge > EFASIM_MAX_SGE ? EFASIM_MAX_SGE : c->max_sq_sge;
        c->max_rq_sge = c->max_rq_sge > EFASIM_MAX_SGE ? EFASIM_MAX_SGE : c->max_rq_sge;
    }
    if (c->max_mr >= (1u << 18) + 1) {
        fprintf(stderr, "efasim: EFASIM_MAX_MR above %u; using %u\n", 1u << 18, 1u << 18);
        c->max_mr = 1u << 18;
    }
    if (c->max_peers < 8)
        c->max_peers = 8;
    if (!c->rto_us)
        c->rto_us = 1;
    if (c->qpn > 0xffff) {
        fprintf(stderr, "efasim: EFASIM_QPN=%u is not a UDP port; using 0 (any)\n", c->qpn);
        c->qpn = 0;
    }

    /* A misspelt knob silently doing nothing is worse than a warning. */
    for (char **e = environ; e && *e; e++) {
        bool known = false;

        if (strncmp(*e, "EFASIM_", 7))
            continue;
#define EFASIM_KNOB_KNOWN(name, member, kind, def, doc) \
    known |= !strncmp(*e + 7, #name "=", sizeof(#name));
        EFASIM_KNOBS(EFASIM_KNOB_KNOWN)
#undef EFASIM_KNOB_KNOWN
        if (!known)
            fprintf(stderr, "efasim: unknown variable %.*s ignored\n", (int)strcspn(*e, "="), *e);
    }
}

const struct efasim_config *g_efasim_config;

const struct efasim_config *efasim_config_slow(void)
{
    pthread_once(&g_config_once, config_read);
    __atomic_store_n(&g_efasim_config, &g_config, __ATOMIC_RELEASE);
    return &g_config;
}

void efasim_config_print(FILE *out)
{
    const struct efasim_config *c = efasim_config();
    char addr[INET_ADDRSTRLEN];

    (void)c;
    fprintf(out, "efasim knobs (set in the environment; read once at first use)\n");
    fprintf(out, "%-30s %-12s %-12s %s\n", "variable", "default", "value", "meaning");
#define EFASIM_KNOB_PRINT(name, member, kind, def, doc)          \
    fprintf(out, "%-30s %-12s %-12s %s\n", "EFASIM_" #name, def, \
            getenv("EFASIM_" #name) ? getenv("EFASIM_" #name) : def, doc);
    EFASIM_KNOBS(EFASIM_KNOB_PRINT)
#undef EFASIM_KNOB_PRINT
    inet_ntop(AF_INET, &c->addr[0], addr, sizeof(addr));
    fprintf(out, "(device 0 address in force: %s)\n", addr);
}
