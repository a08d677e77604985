/*
 * efasim's device model: an EFA device and what EFA's kernel driver does for
 * it, with no programming interface of its own. A front end presents it to
 * programs (verbs/: the drop-in libibverbs.so.1 and libefa.so.1, which play
 * rdma-core's EFA provider) and calls the functions below for everything the
 * kernel driver and the device do: the checks and errnos of object creation,
 * the QP state machine, the SRD wire, completions. The model includes nothing
 * of a front end's; it reaches one only through the ops of a CQ and hands
 * back the `fe` pointer each front end keeps in a context, QP and CQ. It uses
 * libibverbs' plain types and enums (struct ibv_sge, union ibv_gid, struct
 * ibv_qp_cap, IBV_ACCESS_*, ...), never its objects.
 *
 * Each emulated device has an IPv4 address; its GID is the IPv4-mapped IPv6
 * form of that address. Each QP is one non-blocking UDP socket bound to that
 * address, and its QP number is the socket's port, so (GID, QPN) is a UDP
 * address and no rendezvous service is needed. Below an SRD QP's verbs
 * semantics sits a reliability layer (sequence numbers, acknowledgements,
 * retransmission, duplicate suppression) so kernel drops and injected faults
 * never surface as loss, exactly as SRD hides the fabric's. A UD QP's
 * datagrams have none of it: what is lost, duplicated or reordered stays so.
 *
 * Concurrency, as the hardware has it: independent QPs never wait for each
 * other. Each QP has its own lock (its queues, sockets and reliability state),
 * each CQ its own (the front end's ring) besides the consumer's poll section,
 * and the context's object tables (QPs, MRs, AHs, PD numbers) a reader-writer
 * lock that only creating and destroying objects take for writing. Lock order:
 * the tables (read), then a QP, then a CQ, then the fault injector's lock (its
 * delay queue and random stream, taken only with faults on). Whoever takes a
 * QP's lock holds the tables first (a posting section, a progress pass), so MR
 * and AH lookups inside need no lock of their own; a CQ's consumer reaches the
 * QP of a completion through the completion, never through the tables. The
 * NIC clock and the traffic counters are atomics. The application's own calls
 * (post, poll) do the latency-critical work themselves: posting sends the
 * datagram, polling reads the sockets of the QPs that feed the polled CQ (and
 * of the others nobody is serving at that moment). The service thread (the
 * emulated NIC) only runs timers and serves peers while the application is not
 * polling; it only ever try-locks a QP and never blocks the application's path.
 *
 * Errors: the model's functions return 0 or a negative errno, the one EFA's
 * kernel driver or device returns for the case.
 */
#ifndef EFASIM_MODEL_H
#define EFASIM_MODEL_H

#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/uio.h>

#define EFASIM_MAX_DEVICES 64 /* p5.48xlarge has 32 EFA devices */
#define EFASIM_PORT        1
#define EFASIM_VENDOR_ID   0x1d0f /* Amazon */
#define EFASIM_AHN_UNKNOWN 0xffff /* slid of a receive whose sender has no AH here */
#define EFASIM_MAX_SGE     4      /* SGEs of one work request the model holds, at most */

/*
 * EFA completion status codes (efa_io_comp_status): what the device writes in
 * a completion and a front end reports as vendor_err. The device knows no
 * ibv_wc_status; mapping a status to one is the provider's (rdma-core's
 * to_ibv_status, which differs between releases), so it is the front end's.
 */
enum efasim_status {
    EFASIM_ST_OK = 0,
    EFASIM_ST_FLUSHED = 1,
    EFASIM_ST_LOCAL_QP_INTERNAL_ERROR = 2,
    EFASIM_ST_LOCAL_INVALID_OP = 3,
    EFASIM_ST_LOCAL_INVALID_AH = 4,
    EFASIM_ST_LOCAL_INVALID_LKEY = 5,
    EFASIM_ST_LOCAL_BAD_LENGTH = 6,
    EFASIM_ST_REMOTE_BAD_ADDRESS = 7,
    EFASIM_ST_REMOTE_ABORT = 8,
    EFASIM_ST_REMOTE_BAD_DEST_QPN = 9,
    EFASIM_ST_REMOTE_RNR = 10,
    EFASIM_ST_REMOTE_BAD_LENGTH = 11,
    EFASIM_ST_REMOTE_BAD_STATUS = 12,
    EFASIM_ST_UNRESP_REMOTE = 13,
    EFASIM_ST_UNREACH_REMOTE = 15,
    /*
     * efasim's own answers to a direct-copy request (fastpath.c), never
     * reported in a completion: the initiator moves the WR to datagrams, for
     * this peer from now on (REFUSED) or for this WR only (RETRY).
     */
    EFASIM_ST_FAST_REFUSED = 0x80,
    EFASIM_ST_FAST_RETRY = 0x81,
};

/* ---- Configuration (config.c): every knob, read once from EFASIM_* ---------- */

/* A LIMIT knob's value "kernel": the kernel's own limit for this process applies. */
#define EFASIM_LIMIT_KERNEL UINT64_MAX

struct efasim_config {
    unsigned ndev;
    struct in_addr addr[EFASIM_MAX_DEVICES];
    uint32_t mtu;
    uint32_t inline_size;
    uint32_t max_sq_wr;
    uint32_t max_rq_wr;
    uint32_t max_sq_sge;
    uint32_t max_rq_sge;
    uint32_t max_cqe;
    uint32_t max_qp;
    uint32_t max_cq;
    uint32_t max_mr;
    uint64_t max_mr_size;
    uint32_t max_ah;
    uint64_t max_reg_pages;   /* device pages registered, all processes (devshare.c) */
    uint64_t max_rw_mr_pages; /* device pages of one MR with remote write */
    uint64_t memlock;  /* EFASIM_LIMIT_KERNEL, or RLIMIT_MEMLOCK in bytes without CAP_IPC_LOCK */
    bool copy_on_fork; /* the kernel copies pinned pages at fork (Linux 5.13 and later) */
    uint64_t max_rdma_size;
    bool rdma_read;
    bool rdma_write;
    /* unsolicited write receive offered (EFASIM_UNSOLICITED_WRITE_RECV, only with rdma_write) */
    bool unsolicited_write_recv;
    uint32_t device_id;      /* PCI device id: 0xefa0 the first EFA platform, 0xefa1, 0xefa2, ... */
    uint32_t max_peers;      /* reliability state slots per QP */
    uint32_t rto_us;         /* first retransmission timeout */
    uint32_t rto_max_us;     /* retransmission backoff cap */
    uint32_t timeout_ms;     /* a peer silent this long is unreachable */
    uint32_t rnr_backoff_us; /* wait before resending after an RNR NACK */
    uint32_t ack_delay_us;   /* how long an ACK may wait for a datagram to ride on */
    uint32_t service_us;     /* service thread period */
    uint32_t rdma_chunk;     /* payload bytes per RDMA datagram */
    uint32_t qpn;            /* QP number of the process's first QP; 0 = the lowest free */
    uint32_t qpn_port;       /* UDP port of QP number 0 on each device's address */
    bool fastpath;           /* RDMA between processes of one host by direct copy */
    uint32_t fast_chunk;     /* bytes per direct-copy request */
    double loss, dup, reorder, delay;
    uint32_t delay_us;
    bool jitter;                  /* delay: a random hold up to delay_us */
    uint32_t rnr_stall_us;        /* RNR storms: no receive taken for this long ... */
    uint32_t rnr_stall_period_us; /* ... once per period (per QP, phases differ) */
    uint64_t seed;
    bool uverbs_ioctl; /* the kernel front end offers uverbs ioctl (else only write) */
};

/* The configuration, read from the environment on first use. Never NULL. */
const struct efasim_config *efasim_config_slow(void);
extern const struct efasim_config *g_efasim_config; /* set once the environment was read */

static inline const struct efasim_config *efasim_config(void)
{
    const struct efasim_config *c = __atomic_load_n(&g_efasim_config, __ATOMIC_ACQUIRE);

    return c ? c : efasim_config_slow();
}

/*
 * QP numbers. As on EFA, a device's QP numbers run from 0 to max_qp - 1 over
 * every process on the host (rdma-core's EFA provider finds a completion's QP
 * by qp_num in a table of the next power of two of max_qp entries). QP number
 * n is the UDP socket bound to port EFASIM_QPN_PORT + n on its device's
 * address: the port of QP number qpn, 0 when no port can hold it.
 */
static inline uint16_t efasim_qpn_port(uint32_t qpn)
{
    uint32_t port = efasim_config()->qpn_port + qpn;

    return qpn < efasim_config()->max_qp && port <= 0xffff ? (uint16_t)port : 0;
}

/* The QP number a datagram's source port holds; false for a port that holds none. */
static inline bool efasim_port_qpn(uint16_t port, uint32_t *qpn_p)
{
    const struct efasim_config *c = efasim_config();

    if (port < c->qpn_port || port - c->qpn_port >= c->max_qp)
        return false;
    *qpn_p = port - c->qpn_port;
    return true;
}

/* Print every knob with its value and documentation. */
void efasim_config_print(FILE *out);

struct efasim_context;
struct efasim_pd;
struct efasim_mr;
struct efasim_ah;
struct efasim_cq;
struct efasim_qp;

/* ---- Time, randomness, addresses (objects.c) -------------------------------- */

uint64_t efasim_now_ns(void);
/* A draw from the context's EFASIM_SEED stream, in [0, 1). Under the context's fault_lock. */
double efasim_rand01(struct efasim_context *ctx);

/* GID <-> UDP address: a GID is the IPv4-mapped IPv6 form of a device's address. */
void efasim_gid_from_addr(struct in_addr addr, union ibv_gid *gid_p);
bool efasim_gid_to_addr(const union ibv_gid *gid, struct in_addr *addr_p);

/* ---- The device's tables, shared by the processes on its host (devshare.c) ------- */

enum efasim_share_kind {
    EFASIM_SHARE_AHNS,  /* AH numbers (max_ah) */
    EFASIM_SHARE_PAGES, /* pages of MRs (EFASIM_MAX_REG_PAGES) */
};

struct efasim_share_file;

/* This process's view of a device's shared table; efasim_share_construct'ed. */
struct efasim_share {
    pthread_mutex_t mu;             /* this process's threads */
    struct efasim_share_file *file; /* mapped shared, or the process's own when alone */
    int fd;                         /* the file's descriptor (its locks), or -1 when alone */
    int32_t me;                     /* this process's slot, or -1 before the first charge */
    bool listed;                    /* known to the fork handler */
};

struct efasim_device;
void efasim_share_construct(struct efasim_share *s);
/*
 * Charge n of kind to this process on dev, refused with -ENOMEM when every
 * process's charges on dev would then pass limit (the device's table is full).
 * *epoch_p names this process, for efasim_share_release.
 */
int efasim_share_charge(struct efasim_device *dev, enum efasim_share_kind kind, uint64_t n,
                        uint64_t limit, uint32_t *epoch_p);
/* Give back n of kind charged with epoch; nothing when another process (a fork's parent) charged.
 */
void efasim_share_release(struct efasim_device *dev, enum efasim_share_kind kind, uint64_t n,
                          uint32_t epoch);

/* ---- Devices (objects.c) ------------------------------------------------------- */

struct efasim_device {
    unsigned index;
    struct in_addr addr;
    union ibv_gid gid;
    uint64_t guid; /* node and system image GUID, in host order */
    char name[IBV_SYSFS_NAME_MAX];
    /*
     * QPs open on the device, over every context of this process (atomic): as
     * on EFA, max_qp bounds the device, not one context. Other processes' QPs
     * on the device are counted from the kernel's UDP table (qp.c).
     */
    uint32_t live_qps;
    /*
     * AH numbers and MR pages held on the device, by every process on the host
     * (devshare.c): as on EFA, max_ah and the page budget bound the device's
     * tables, not one context or process.
     */
    struct efasim_share share;
};

/*
 * The emulated devices, EFASIM_NDEV of them (*n_p), made on the first call,
 * which also writes their sysfs view (sysfs.c). The table lives as long as
 * the process.
 */
struct efasim_device *efasim_devices(unsigned *n_p);

/*
 * What EFA's kernel driver reports for the device (efa_query_device) and its
 * one port (efa_query_port): the limits of the configuration, max_qp_wr the
 * smaller queue depth, max_sge the smaller SGE count, max_sge_rd 1; no atomics,
 * SRQs, memory windows or multicast. *attr_p is filled whole.
 */
void efasim_device_attr(const struct efasim_device *dev, struct ibv_device_attr *attr_p);
void efasim_port_attr(struct ibv_port_attr *attr_p);

/* ---- Contexts (objects.c) ------------------------------------------------------- */

/*
 * An address handle number. As on EFA, the device keeps one per (PD, GID):
 * every AH created for the same PD and GID gets the same number, which lives
 * until the last of those AHs is destroyed. Receives report it as slid.
 */
struct efasim_ahnum {
    const struct efasim_pd *pd;
    union ibv_gid gid;
    uint32_t refs;  /* live AHs that carry this number; 0 = free */
    uint32_t epoch; /* the process that charged it to the device (efasim_share_charge) */
};

/* A device opened by a process: the object tables, the NIC's clock and fault injector. */
struct efasim_context {
    struct efasim_device *dev;
    void *fe;                    /* the front end's own object for the context */
    pthread_rwlock_t objs;       /* the object tables below: written only to create or destroy */
    pthread_mutex_t fault_lock;  /* the fault injector's delay queue and rng */
    struct efasim_qp **qps;      /* max_qp slots */
    struct efasim_mr **mrs;      /* max_mr slots, indexed by the slot a key names */
    uint8_t *mr_gen;             /* per MR slot, the generation of its next key */
    uint32_t mr_next;            /* where the search for a free MR slot starts */
    struct efasim_ah **ahs;      /* max_ah slots; NULL: free */
    struct efasim_ahnum *ahnums; /* AH numbers, indexed by ahn - 1 */
    uint64_t *pdns;              /* PD numbers in use, a bit each */
    uint32_t ahnum_slots_used;   /* every number in use sits below this index */
    uint32_t nqp, nmr, nah;
    uint32_t qp_slots_used;          /* every QP sits below this slot index */
    struct efasim_context *svc_next; /* the service thread's list (service.c) */
    uint64_t last_progress_ns;       /* the emulated NIC last ran (efasim_progress); atomic */
    uint64_t stalled_ns;            /* time it did not run at all: off its liveness clock; atomic */
    uint64_t rng;                   /* under fault_lock */
    struct efasim_delayq *delayq;   /* under fault_lock */
    struct efasim_hw_counters *hwc; /* the device's traffic counters (atomics), or NULL */
    /*
     * Called by the service thread after each pass over the context, once a
     * front end set it (atomically): its own idle work; also after a watch
     * woke the thread (efasim_cq_watch). It must not block nor allocate, as
     * the service thread itself (service.c).
     */
    void (*fe_tick)(void *fe);
};

/*
 * Open dev for this process: empty object tables, the fault injector, the
 * service thread's attention (service.c). fe is the caller's, handed back in
 * ctx->fe. 0 and *ctx_p, or -ENOMEM; close it with efasim_context_close.
 */
int efasim_context_open(struct efasim_device *dev, void *fe, struct efasim_context **ctx_p);
/*
 * -EBUSY while it has QPs; else frees the context with the MRs and AHs still
 * in it, handing each one's fe to release_fe first (when not NULL), as the
 * kernel destroys what a closing process left.
 */
int efasim_context_close(struct efasim_context *ctx, void (*release_fe)(void *fe));

/* ---- Protection domains, memory regions, address handles (objects.c) ----------- */

struct efasim_pd {
    struct efasim_context *ctx;
    uint16_t pdn;   /* unique among the context's PDs, as EFA's driver numbers them */
    uint32_t users; /* its MRs, AHs and QPs (atomic): the core's use count */
};

/* A new PD: 0 and *pd_p (freed by efasim_pd_destroy), or -ENOMEM. */
int efasim_pd_create(struct efasim_context *ctx, struct efasim_pd **pd_p);
/* Whether MRs, AHs or QPs still use the PD (ib_dealloc_pd's EBUSY, checked by the core). */
bool efasim_pd_busy(const struct efasim_pd *pd);
void efasim_pd_destroy(struct efasim_pd *pd);

/* What a registration added to the process's pinned pages (pinned.c). */
struct efasim_pin {
    uint64_t pages; /* 4 KiB pages added to the process's pinned_vm */
    uint32_t epoch; /* the process (before or after a fork) that counted them */
};

struct efasim_mr {
    struct efasim_context *ctx;
    struct efasim_pd *pd;
    uint64_t addr, length; /* RDMA addresses are virtual addresses (iova == addr) */
    uint32_t lkey, rkey;   /* 24 bits, as EFA's descriptors carry them; never 0 */
    unsigned access;       /* IBV_ACCESS_* granted */
    struct efasim_pin pin; /* its pinned pages, counted against RLIMIT_MEMLOCK */
    uint64_t dev_pages;    /* its pages on the device, counted against EFASIM_MAX_REG_PAGES */
    uint32_t dev_epoch;    /* the process that charged them (efasim_share_charge) */
    void *fe;              /* the front end's own object for the MR; the model never reads it */
};

/*
 * efasim_mr_reg's flags. EFASIM_MR_UMEM_STRICT: the range is checked as
 * ib_umem_get pins it, an empty page-aligned range -EINVAL and a page not
 * mapped -EFAULT (the kernel front end, which plays the kernel); without it
 * neither is checked (the drop-in, as before these were modelled).
 */
enum { EFASIM_MR_UMEM_STRICT = 1 << 0 };

/*
 * Register [addr, addr + length) with access, as Linux and EFA's kernel driver
 * do, in their order: an iova other than addr, or no address with a length,
 * -EINVAL (efasim maps RDMA addresses 1:1); efa_alloc_mr's access check
 * (optional flags dropped; a flag the device does not offer -EOPNOTSUPP;
 * remote write without local write -EINVAL); ib_umem_get's (a wrapping range
 * -EINVAL; RLIMIT_MEMLOCK 0 without CAP_IPC_LOCK -EPERM; the process's pinned
 * pages beyond it -ENOMEM; EFASIM_MEMLOCK stands in for both; pinned.c); then
 * the device's: beyond max_mr_size -EINVAL, its registered pages beyond
 * EFASIM_MAX_REG_PAGES -ENOMEM, the MR table full -ENOMEM. 0 and *mr_p, owned
 * by the context until efasim_mr_dereg.
 */
int efasim_mr_reg(struct efasim_pd *pd, uint64_t addr, uint64_t length, uint64_t iova,
                  unsigned access, unsigned flags, struct efasim_mr **mr_p);
/*
 * A dma-buf registration (ibv_reg_dmabuf_mr), which EFA refuses here as its driver
 * does: offset and iova apart within a page -EINVAL, access as efasim_mr_reg, then
 * a descriptor that names no open file -EBADF, and any other -EINVAL (efasim has
 * no device memory, so no dma-buf). Always a negative errno.
 */
int efasim_mr_reg_dmabuf(struct efasim_pd *pd, uint64_t offset, uint64_t length, uint64_t iova,
                         int fd, unsigned access);
/*
 * Deregister and free mr. Its keys match no MR until the 64th MR to take its
 * slot after it (objects.c, "An MR key").
 */
void efasim_mr_dereg(struct efasim_mr *mr);
/*
 * Look up an MR by key with [addr, addr + len) inside it and `access` granted;
 * NULL if not. The table lock held (a posting section or a progress pass has it).
 */
struct efasim_mr *efasim_mr_check(struct efasim_context *ctx, uint32_t key, uint64_t addr,
                                  uint64_t len, unsigned access);

struct efasim_ah {
    struct efasim_context *ctx;
    struct efasim_pd *pd;
    union ibv_gid gid;
    uint16_t ahn;   /* the device's number for (pd, gid) */
    uint32_t index; /* its slot in the context's AH table */
    void *fe;       /* the front end's own object for the AH; the model never reads it */
};

/*
 * An AH for gid: -EINVAL unless gid is an emulated device's kind (IPv4-mapped),
 * -ENOMEM when the device's AH table is full. 0 and *ah_p, owned by the
 * context until efasim_ah_destroy.
 */
int efasim_ah_create(struct efasim_pd *pd, const union ibv_gid *gid, struct efasim_ah **ah_p);
void efasim_ah_destroy(struct efasim_ah *ah);
/* The AH number of (pd, gid) in this context, or EFASIM_AHN_UNKNOWN. The table lock held. */
uint16_t efasim_ahn_for_gid(struct efasim_context *ctx, const struct efasim_pd *pd,
                            const union ibv_gid *gid);
/*
 * The GID that AH number ahn of pd stands for (a work request names its
 * destination by number): 0 and *gid_p, or -EINVAL if pd has no such number.
 * The table lock held.
 */
int efasim_ahn_gid(const struct efasim_pd *pd, uint16_t ahn, union ibv_gid *gid_p);

/* ---- Completions and CQs ---------------------------------------------------------- */

/* One completion as the device writes it. */
struct efasim_cqe {
    uint64_t wr_id;
    enum ibv_wc_opcode opcode;
    uint32_t vendor_err; /* the device's status (enum efasim_status); 0: success */
    uint32_t byte_len;
    uint32_t imm;
    uint32_t qp_num;
    uint32_t src_qp;
    unsigned wc_flags;
    uint16_t slid;
    union ibv_gid sgid;
    bool sq; /* a send-queue completion (else a receive's) */
    /*
     * A write with immediate that took no receive WR (a QP created with
     * unsolicited write receive): wr_id 0, and no queue slot held (qp NULL).
     */
    bool unsolicited;
    /* The QP whose queue slot the completion holds until polled; NULL once it is destroyed. */
    struct efasim_qp *qp;
};

/*
 * The producer side of a CQ, which the front end implements (the CQ's memory
 * and its consumer are the front end's); the device calls them with the
 * producing QP's lock held, never the CQ's.
 */
struct efasim_cq_ops {
    /* Append a completion; -EAGAIN when the CQ is full. */
    int (*push)(struct efasim_cq *cq, const struct efasim_cqe *cqe);
    /*
     * Promise a place (false: the CQ is full). The promise is kept by
     * push_reserved, which cannot fail, or given back by unreserve.
     */
    bool (*reserve)(struct efasim_cq *cq);
    void (*push_reserved)(struct efasim_cq *cq, const struct efasim_cqe *cqe);
    void (*unreserve)(struct efasim_cq *cq);
    /* Whether the CQ has no place left: a hint, read without its lock. */
    bool (*full)(const struct efasim_cq *cq);
    /* QP qp is being destroyed: its completions still in the CQ stop pointing at it. */
    void (*forget_qp)(struct efasim_cq *cq, const struct efasim_qp *qp);
};

struct efasim_cq {
    struct efasim_context *ctx;
    const struct efasim_cq_ops *ops;
    void *fe; /* the front end's own object for the CQ */
};

/*
 * Make cq, in memory the caller owns, a CQ of ctx with depth entries: -EINVAL
 * for 0 or beyond max_cqe, as EFA's kernel driver checks the depth the
 * provider asks for. Nothing to undo: the caller frees the memory once no QP
 * uses the CQ.
 */
int efasim_cq_construct(struct efasim_cq *cq, struct efasim_context *ctx, uint32_t depth,
                        const struct efasim_cq_ops *ops, void *fe);

static inline int efasim_cq_push(struct efasim_cq *cq, const struct efasim_cqe *cqe)
{
    return cq->ops->push(cq, cqe);
}

static inline bool efasim_cq_reserve(struct efasim_cq *cq)
{
    return cq->ops->reserve(cq);
}

static inline void efasim_cq_push_reserved(struct efasim_cq *cq, const struct efasim_cqe *cqe)
{
    cq->ops->push_reserved(cq, cqe);
}

static inline void efasim_cq_unreserve(struct efasim_cq *cq)
{
    cq->ops->unreserve(cq);
}

static inline bool efasim_cq_full(const struct efasim_cq *cq)
{
    return cq->ops->full(cq);
}

static inline void efasim_cq_forget_qp(struct efasim_cq *cq, const struct efasim_qp *qp)
{
    cq->ops->forget_qp(cq, qp);
}

/*
 * Make progress on the context's QPs: read datagrams, run timers. With a CQ,
 * the QPs that feed it wait for their lock and the others are served only when
 * nobody holds them; without (the service thread), every QP only if free.
 * Takes the table lock (read) and each QP's; a front end calls it at each poll.
 */
void efasim_progress(struct efasim_context *ctx, struct efasim_cq *cq);

/* ---- QPs and the datapath (qp.c, wire.c) ------------------------------------ */

#define EFASIM_RX_BATCH     16   /* datagrams read per QP per progress call */
#define EFASIM_RX_WINDOW    512  /* sequence numbers unsettled per peer and direction, at most */
#define EFASIM_INFLIGHT_MAX 1024 /* datagrams awaiting a response, per QP */
#define EFASIM_RDMA_WINDOW  32   /* chunks of one RDMA WR in flight at once */
#define EFASIM_FAST_WINDOW  4    /* direct-copy requests of one RDMA WR in flight at once */
#define EFASIM_ACK_PIGGY    16   /* ACKs a peer may be owed before they go out on their own */
#define EFASIM_PEND_PEERS   64   /* peers with ACKs owed, per QP */
#define EFASIM_TX_BATCH     32   /* datagrams per sendmmsg */

/* Datagram types between efasim QPs (efasim's own wire, not EFA's). */
enum efasim_pkt {
    EFASIM_PKT_DATA = 1, /* a send; consumes a receive */
    EFASIM_PKT_WRITE,    /* one chunk of an RDMA write */
    EFASIM_PKT_READ_REQ, /* request for one chunk of an RDMA read */
    EFASIM_PKT_READ_RESP,
    EFASIM_PKT_ACK,  /* payload: array of struct efasim_ack */
    EFASIM_PKT_NACK, /* status says why */
    EFASIM_PKT_UD,   /* a UD QP's send: no sequence number, nothing answers it */
};

#define EFASIM_MAGIC    0xe5
#define EFASIM_F_IMM    0x1 /* carries immediate data (DATA, last WRITE chunk) */
#define EFASIM_F_ACKREQ 0x2
/*
 * DATA, WRITE: the sender has no RNR retry left, so a refusal of this datagram
 * is final and the receiver settles it. NACK (RNR): the receiver settled this
 * refusal and will never take the datagram; only such a NACK fails the WR.
 */
#define EFASIM_F_RNR_FINAL 0x4
/*
 * DATA, WRITE: a retransmission whose payload the sender can no longer read
 * (its MR was deregistered or its memory unmapped while the WR was in
 * flight). It carries no payload: a receiver that settled the datagram answers
 * as it did; one that never got it settles it as refused (the sender's WR
 * fails with EFASIM_ST_LOCAL_INVALID_LKEY) and no later copy is taken.
 */
#define EFASIM_F_PROBE 0x8
/*
 * WRITE, READ_REQ: a direct-copy request (fastpath.c). Its payload is a
 * struct efasim_fast_req instead of data: the target, after its usual checks,
 * copies the chunk between its memory and the initiator's with
 * process_vm_readv/writev and answers with an ACK (or a NACK, as for a
 * datagram request). Settled in the target's receive window like a WRITE, so
 * no copy of the request ever moves data twice.
 */
#define EFASIM_F_FAST 0x10

/*
 * Header of every datagram, in the host's byte order: both ends are this library.
 *
 * A QP number (UDP port) outlives the QP that held it, so every datagram names
 * its sender's incarnation (a random id drawn when the QP was created) and the
 * incarnation of the receiver that its answers are for. A receiver that sees a
 * new incarnation at an address forgets what it knew of the old one; answers
 * (ACK entries, NACK, READ_RESP) are applied only when they name the receiver's
 * own incarnation. Sequence numbers run per (sender QP, receiver address) across
 * the receiver's incarnations; `low` lets a receiver that never heard of the
 * sender, or just forgot it, place its duplicate window.
 */
struct efasim_hdr {
    uint8_t magic;
    uint8_t type;
    uint16_t flags;
    uint32_t qkey;   /* DATA, WRITE, READ_REQ: the destination QP's Q-Key */
    uint64_t seq;    /* per (sender QP, receiver address) sequence number */
    uint32_t cookie; /* sender's in-flight slot; echoed in ACK, NACK and READ_RESP */
    uint32_t imm;
    uint64_t raddr;  /* WRITE, READ_REQ: remote address of this chunk */
    uint64_t rbase;  /* WRITE, READ_REQ: start of the whole remote range of the WR */
    uint64_t rtotal; /* WRITE, READ_REQ: length of that range, checked before any chunk */
    uint32_t rkey;
    uint32_t len;     /* WRITE, READ_REQ: bytes of this chunk */
    uint32_t status;  /* NACK: enum efasim_status */
    uint16_t nacks;   /* struct efasim_ack entries between this header and the payload */
    uint16_t attempt; /* DATA, WRITE: the sender's RNR attempt; NACK: the one it answers */
    uint32_t src_inc; /* every datagram: the sending QP's incarnation, never 0 */
    uint32_t dst_inc; /* the incarnation the ACK entries, NACK or READ_RESP answer; 0 if none */
    uint64_t low;     /* DATA, WRITE, READ_REQ: the sender settled every seq below this */
};
_Static_assert(sizeof(struct efasim_hdr) == 80, "efasim header is 80 bytes");
_Static_assert(offsetof(struct efasim_hdr, src_inc) == 64, "incarnations follow the v1 header");

struct efasim_ack {
    uint64_t seq;
    uint32_t cookie;
    uint32_t pad;
};

/*
 * Payload of a direct-copy request: who the initiator is (its host and pid
 * namespace, so the target can tell that the pid names a process it sees; its
 * pid; and the WR's unguessable nonce with its address there, proof that the
 * pid is the sender's and that the WR still waits for the data) and where this chunk's data lies in
 * the initiator (READ_REQ: the destination; WRITE: the source). Validated by the target
 * (fastpath.c).
 */
struct efasim_fast_iov {
    uint64_t addr;
    uint64_t len;
};

struct efasim_fast_req {
    uint8_t boot_id[16]; /* /proc/sys/kernel/random/boot_id */
    uint64_t pidns_ino;  /* /proc/self/ns/pid: inode and device of the pid namespace */
    uint64_t pidns_dev;
    uint8_t token[16];   /* the WR's nonce (8 bytes, then zeros), which the target reads back */
    uint64_t token_addr; /* at token_addr before it moves a byte: the pid is the sender's own */
    uint32_t pid;
    uint32_t niov; /* 1..EFASIM_MAX_SGE entries of iov in use */
    struct efasim_fast_iov iov[EFASIM_MAX_SGE];
};
_Static_assert(sizeof(struct efasim_fast_req) == 128, "direct-copy request is 128 bytes");
_Static_assert(offsetof(struct efasim_fast_req, iov) == 64, "iovecs follow the identity");

/* ACK and NACK cookie of a departing QP's answers: match the in-flight datagram by seq. */
#define EFASIM_COOKIE_ANY UINT32_MAX

enum efasim_op { EFASIM_OP_SEND, EFASIM_OP_READ, EFASIM_OP_WRITE };

/* A send-queue entry: one posted send, RDMA read or RDMA write. */
struct efasim_swqe {
    uint64_t wr_id;
    enum efasim_op op;
    bool used, signaled, has_imm, is_inline;
    uint32_t imm;
    struct sockaddr_in dst;
    uint32_t dst_qkey;
    uint32_t nsge;
    struct ibv_sge sge[EFASIM_MAX_SGE];
    uint8_t *inline_data;
    uint64_t length;
    uint32_t rkey;
    uint64_t raddr;
    uint32_t nchunks, next_chunk, chunks_done, chunks_inflight;
    uint32_t chunk_size; /* RDMA: bytes per chunk (EFASIM_RDMA_CHUNK, or FAST_CHUNK if fast) */
    bool fast;           /* RDMA by direct-copy requests (fastpath.c) */
    bool fast_fallback;  /* a request was refused: redo the WR by datagrams once drained */
    uint64_t fast_nonce; /* read back by the target; nonzero only while the WR is in flight */
    uint32_t rnr_left;   /* RNR NACKs still tolerated; UINT32_MAX = forever */
    uint8_t status;      /* enum efasim_status: EFASIM_ST_OK until the WR fails */
};

/* One datagram awaiting its ACK, NACK or READ_RESP. */
struct efasim_inflight {
    bool used;
    uint16_t gen;
    uint32_t wqe;
    uint32_t chunk;
    uint32_t peer;
    uint64_t seq;
    uint64_t first_ns, deadline_ns;
    uint32_t rto_us;
    uint16_t attempt; /* RNR refusals counted so far; copies carry it, NACKs echo it */
    bool rnr_backoff; /* the deadline is an RNR backoff, not a retransmission timeout */
};

/* Sequence numbers below base are settled; bit i is set when base + i is. */
struct efasim_seqwin {
    uint64_t base;
    uint64_t bits[EFASIM_RX_WINDOW / 64];
};

/*
 * The receive side of a peer: which of its sequence numbers this QP settled
 * (took, or refused for good) and how it answered each, for every number the
 * sender may still ask about again. base is the sender's low-water mark (it
 * holds the answer to everything below), and the sender never runs
 * EFASIM_RX_WINDOW past it, so a ring of that many entries, indexed by
 * seq % EFASIM_RX_WINDOW, is exact: a copy is always answered as its original
 * was, however many answers were lost. Entry bits: `settled`, and the NACK
 * status as a 3-bit code (0 = ACK) in the bit planes `code[0..2]`.
 */
struct efasim_rxwin {
    uint64_t base;
    struct {
        uint64_t settled, code[3];
    } word[EFASIM_RX_WINDOW / 64];
};

/*
 * Reliability state for one remote address (ip, port), whichever QP holds it:
 * the receive side belongs to the incarnation `inc` and is reset when another
 * one speaks from that address; the send side's sequence numbers never restart.
 */
struct efasim_peer {
    bool used;
    bool heard;             /* something came back from it at least once */
    bool no_fast;           /* it refused a direct-copy request: datagrams only */
    uint64_t last_heard_ns; /* when it last sent this QP anything (its liveness) */
    struct in_addr ip;
    uint16_t port;
    uint32_t inc;      /* incarnation last heard from at this address; 0 = none yet */
    uint32_t prev_inc; /* the one it replaced: its late requests are dropped */
    uint64_t tx_seq;
    struct efasim_seqwin tx;                  /* our datagrams to it: base is the `low` we send */
    struct efasim_rxwin rx;                   /* its datagrams to us settled, and our answers */
    struct efasim_ack pend[EFASIM_ACK_PIGGY]; /* ACKs owed, sent with the next datagram */
    unsigned npend;
    uint64_t pend_since_ns;
};

struct efasim_rwqe {
    uint64_t wr_id;
    uint32_t nsge;
    struct ibv_sge sge[EFASIM_MAX_SGE];
    uint64_t length;
};

/* A QP's transport, as the device knows it (EFA's admin QP types). */
enum efasim_qp_type {
    EFASIM_QPT_SRD = 0, /* reliable, unordered datagrams: what a zeroed efasim_qp_init asks for */
    EFASIM_QPT_UD,      /* unreliable datagrams */
};

/*
 * Bytes at the start of every UD receive buffer that take the place of a
 * GRH: the payload lands after them and byte_len counts them, as InfiniBand
 * UD receives do (consumers of EFA's UD QPs leave this room: libfabric's
 * DGRAM endpoint as its 40-byte message prefix, ibv_ud_pingpong). EFA's
 * contents for them are not published; efasim leaves them untouched.
 */
#define EFASIM_UD_GRH_LEN 40

struct efasim_qp {
    struct efasim_context *ctx;
    struct efasim_pd *pd;
    void *fe; /* the front end's own object for the QP */
    enum efasim_qp_type type;
    pthread_mutex_t lock;       /* everything below; posting, progress and modify take it */
    struct efasim_txbatch *txb; /* datagrams gathered for one sendmmsg (fault.c) */
    struct efasim_cq *send_cq, *recv_cq;
    int fd;
    uint16_t qpn;
    uint32_t inc; /* this QP's incarnation: random, never 0 */
    uint32_t qkey;
    uint32_t sq_psn; /* as the last modify set it: the device keeps it, queries report it */
    uint8_t rnr_retry;
    enum ibv_qp_state state;
    struct ibv_qp_cap cap; /* the queues as sized at creation */
    bool sq_sig_all;       /* every WR completes, whatever its IBV_SEND_SIGNALED */
    /* Created with unsolicited write receive: a write with immediate takes no receive WR. */
    bool unsolicited_write_recv;

    struct efasim_swqe *sq; /* cap.max_send_wr entries */
    uint8_t *inline_pool;   /* cap.max_send_wr * inline_size bytes */
    uint32_t sq_used;
    uint32_t *issue_fifo; /* swqe indices with chunks still to send, in posting order */
    uint32_t fifo_head, fifo_count;

    struct efasim_rwqe *rq; /* ring of cap.max_recv_wr entries */
    uint32_t rq_head, rq_count;

    struct efasim_inflight inflight[EFASIM_INFLIGHT_MAX];
    uint32_t ninflight;
    uint64_t next_deadline_ns;              /* no in-flight timer fires before this */
    bool finish_pending;                    /* a completion waits for room in the send CQ */
    struct efasim_peer *peers;              /* max_peers slots, open addressing; UD: NULL */
    uint32_t pend_peers[EFASIM_PEND_PEERS]; /* peers that are owed ACKs */
    uint32_t npend_peers;

    uint8_t *rxbuf; /* EFASIM_RX_BATCH datagram buffers */
    size_t rxbuf_size;
};

/* What a front end asks for when it creates a QP (qp.c). */
struct efasim_qp_init {
    enum efasim_qp_type type;
    struct efasim_pd *pd;
    struct efasim_cq *send_cq, *recv_cq;
    struct ibv_qp_cap want; /* the caps as the application asked: checked against the device */
    struct ibv_qp_cap cap;  /* the queues as the front end sized them from want */
    bool sq_sig_all;
    /* Unsolicited write receive (SRD only, where the device offers it; else -EOPNOTSUPP). */
    bool unsolicited_write_recv;
    void *fe; /* handed back in qp->fe, from before the QP can complete anything */
};

/*
 * Create an SRD or UD QP in RESET, as EFA's kernel driver does: a type the
 * device does not have, no PD or CQs, or caps beyond the device, -EINVAL;
 * unsolicited write receive on a device without it, or on UD, -EOPNOTSUPP; the
 * queues -ENOMEM; its socket (whose port
 * is the QP number) the socket's errno, -EADDRINUSE when EFASIM_QPN's next
 * number is taken; max_qp reached over the host's processes, or the context's
 * QP table full, -ENOMEM. 0 and *qp_p, freed by efasim_qp_destroy.
 */
int efasim_qp_create(const struct efasim_qp_init *init, struct efasim_qp **qp_p);
/*
 * Take in what reached the QP, answer its peers once more, take it out of its
 * context and its CQs (efasim_cq_forget_qp) and free it.
 */
void efasim_qp_destroy(struct efasim_qp *qp);
/*
 * Apply ibv_modify_qp's attributes: the kernel's transition table for UD QPs
 * (ib_modify_qp_is_ok), which EFA's driver applies to SRD QPs with RNR retry
 * allowed from RTR to RTS (its srd_qp_state_table), -EINVAL otherwise;
 * attributes it does not take -EOPNOTSUPP. Moving to ERR or RESET completes
 * every queued WR with a flush error. Takes the QP's lock.
 */
int efasim_qp_modify(struct efasim_qp *qp, const struct ibv_qp_attr *attr, int mask);
/* The QP's state, Q-Key, SQ PSN, RNR retry, port and caps in *attr_p; the rest of it zeroed. */
void efasim_qp_query(const struct efasim_qp *qp, struct ibv_qp_attr *attr_p);

/*
 * A posting section: the object tables (read: the lkeys of the work requests
 * posted are checked against them), then the QP's lock, as EFA's wr_start
 * takes its send queue's. Inside, efasim_qp_post_send queues work requests
 * and efasim_qp_kick puts them on the wire.
 */
void efasim_qp_post_begin(struct efasim_qp *qp);
void efasim_qp_post_end(struct efasim_qp *qp);
/* The QP's lock alone: enough to post receives (nothing is looked up in the tables). */
void efasim_qp_lock(struct efasim_qp *qp);
void efasim_qp_unlock(struct efasim_qp *qp);

/* One send work request as the device takes it from its send queue. */
struct efasim_send_desc {
    uint64_t wr_id;
    enum efasim_op op;
    bool signaled; /* complete it even on success */
    bool has_imm;
    bool has_dest; /* false: no destination was given, and the device fails the WR */
    /*
     * Nonzero: the device could not read the work request (an operation it
     * does not know, more buffers than a descriptor holds): it completes with
     * this status (EFASIM_ST_*) and moves nothing.
     */
    uint8_t fail;
    bool is_inline;
    uint32_t imm;
    union ibv_gid dgid; /* the destination: GID, QP number and Q-Key */
    uint32_t dqpn;
    uint32_t dqkey;
    uint32_t nsge; /* not inline: the local memory, by lkey */
    struct ibv_sge sge[EFASIM_MAX_SGE];
    const void *inline_data; /* inline: inline_len bytes, copied by efasim_qp_post_send */
    uint32_t inline_len;
    uint32_t rkey; /* RDMA: the remote memory */
    uint64_t raddr;
};

/*
 * In a posting section: take the work request into a free send queue slot
 * and check it as the device does (a destination, the lkeys and their access,
 * the message size; on a UD QP only sends); a failure becomes its error
 * completion, else it waits in the issue queue for efasim_qp_kick. 0, or -ENOMEM with no slot free,
 * or -EINVAL for more than the device's inline buffer or EFASIM_MAX_SGE SGEs.
 */
int efasim_qp_post_send(struct efasim_qp *qp, const struct efasim_send_desc *d);
/* In a posting section: put the queued work requests on the wire, in one sendmmsg batch. */
void efasim_qp_kick(struct efasim_qp *qp);
/*
 * With the QP's lock (or in a posting section): one receive work request of
 * nsge SGEs at the tail of the receive queue. 0, or -ENOMEM when the queue is
 * full, -EINVAL beyond EFASIM_MAX_SGE.
 */
int efasim_qp_post_recv(struct efasim_qp *qp, uint64_t wr_id, uint32_t nsge,
                        const struct ibv_sge *sge);

/* ---- Pinned memory (pinned.c) ---------------------------------------------------- */

/*
 * ib_umem_get's checks and accounting for registering [addr, addr + length):
 * a wrapping range -EINVAL; RLIMIT_MEMLOCK 0 without CAP_IPC_LOCK -EPERM; more
 * than UINT_MAX pages, or with strict none, -EINVAL; the process's pinned
 * pages beyond the limit -ENOMEM; with strict, a page not mapped -EFAULT.
 * 0 and *pin_p, to be handed to efasim_pin_release; nothing counted on failure.
 */
int efasim_pin_charge(uint64_t addr, uint64_t length, bool strict, struct efasim_pin *pin_p);
void efasim_pin_release(const struct efasim_pin *pin);
/*
 * The page size the kernel maps [addr, addr + length) with (at least one byte):
 * the smallest hugetlb page size when hugetlb mappings cover all of it, else
 * 4 KiB (transparent huge pages included). Reads /proc/self/maps, and smaps for
 * file mappings: for registration, never the data path.
 */
uint64_t efasim_page_size_at(uint64_t addr, uint64_t length);
/* The pages EFA's device is given for an MR over [addr, addr + length) (efa_register_mr). */
uint64_t efasim_device_pages(uint64_t addr, uint64_t length);

/* ---- Inside the model ---------------------------------------------------------- */

/* wire.c: before a QP is destroyed, receive what reached it and send every ACK owed. */
void efasim_qp_quiesce(struct efasim_qp *qp);

/* wire.c: choose how a validated RDMA WR moves (datagrams or direct copy) and its chunks. */
void efasim_swqe_plan(struct efasim_qp *qp, struct efasim_swqe *w);

/* wire.c: put chunks of queued WRs on the wire while in-flight slots last. */
void efasim_qp_issue(struct efasim_qp *qp);

/* wire.c: complete a WR (push its CQE if signaled or failed) and free its slot. */
void efasim_swqe_finish(struct efasim_qp *qp, uint32_t idx);

/* wire.c: every in-flight slot was dropped (flush): settle every peer's sequence numbers. */
void efasim_peers_settle_all(struct efasim_qp *qp);

/* Bytes of a receive buffer for one datagram: header, piggybacked ACKs, payload. */
static inline size_t efasim_datagram_max(const struct efasim_config *cfg)
{
    return sizeof(struct efasim_hdr) + EFASIM_ACK_PIGGY * sizeof(struct efasim_ack) +
           (cfg->mtu > cfg->rdma_chunk ? cfg->mtu : cfg->rdma_chunk);
}

/*
 * fault.c: send one datagram from a QP through the fault injector. 0, or
 * -EFAULT when its memory cannot be read (the datagram is neither sent nor
 * held); any other failure is loss, which retransmission covers.
 */
int efasim_xmit(struct efasim_qp *qp, const struct sockaddr_in *dst, struct iovec *iov, int iovcnt);
/*
 * fault.c: the same, batched with sendmmsg while a batch is open
 * (efasim_tx_begin): iov[0..owned) are efasim's own pieces and copied, the
 * rest must stay readable until the batch is flushed. When the kernel then
 * finds them unreadable, probe_on_fault sends the owned pieces alone, flagged
 * EFASIM_F_PROBE (what inflight_send does on -EFAULT); otherwise it is loss.
 */
int efasim_xmit_batched(struct efasim_qp *qp, const struct sockaddr_in *dst, struct iovec *iov,
                        int iovcnt, int owned, bool probe_on_fault);
/*
 * fault.c: efasim_tx_init allocates, when the context opens, the fault
 * injector's delay queue; tx_free releases it. efasim_txb_alloc makes a QP's
 * send batch when the QP is created. Open (nested) and close a QP's batch;
 * flush sends what it holds now. QP lock held.
 */
int efasim_tx_init(struct efasim_context *ctx);
void efasim_tx_free(struct efasim_context *ctx);
struct efasim_txbatch *efasim_txb_alloc(void);
void efasim_tx_begin(struct efasim_qp *qp);
void efasim_tx_flush(struct efasim_qp *qp);
void efasim_tx_end(struct efasim_qp *qp);
/* fault.c: send one datagram as it is, never dropped or held by the fault injector. */
int efasim_xmit_raw(int fd, const struct sockaddr_in *dst, struct iovec *iov, int iovcnt);

/* The emulated NIC's clock: monotonic time without the stretches it did not run. */
uint64_t efasim_nic_now(const struct efasim_context *ctx);

/* fault.c: flush datagrams held by the fault injector whose time has come. Takes fault_lock. */
void efasim_delayq_flush(struct efasim_context *ctx, bool all);

/*
 * Direct copy between processes of one host (fastpath.c). efasim_fast_usable:
 * this process may ask peers for direct copies (EFASIM_FASTPATH on and its
 * identity known); the first call also lets peers of the same user attach
 * (Yama's PR_SET_PTRACER, PR_SET_DUMPABLE).
 */
bool efasim_fast_usable(void);
/* A fresh nonce for a direct-copy WR: unpredictable outside this process, never 0. */
uint64_t efasim_fast_nonce(void);
/*
 * Fill a request naming this process, the WR's nonce (read back by the target
 * at its address: it must stay there while the WR is in flight) and the n
 * (1..EFASIM_MAX_SGE) pieces of its memory.
 */
void efasim_fast_req_build(struct efasim_fast_req *req, const uint64_t *nonce,
                           const struct iovec *local, int n);
/*
 * Target side: copy len bytes between `mem` (this process's, already checked
 * against its MR) and the initiator named by the request in payload[0..plen),
 * towards the initiator for a read. Returns EFASIM_ST_OK, EFASIM_ST_FAST_REFUSED
 * (malformed, another host or pid namespace, or the kernel refuses: use
 * datagrams with this peer) or EFASIM_ST_FAST_RETRY (a fault on either side:
 * this WR by datagrams, which report the right error).
 */
uint32_t efasim_fast_copy(const uint8_t *payload, size_t plen, void *mem, uint64_t len,
                          bool to_initiator);

/* sysfs view (sysfs.c): the root ibv_get_sysfs_path() reports, the per-device paths, the tree. */
const char *efasim_sysfs_root(void);
void efasim_sysfs_paths(unsigned i, const char *name, char *dev_path, char *ibdev_path);
bool efasim_sysfs_write(const struct efasim_device *devs, unsigned ndev);
/*
 * A file of efasim's own state that processes share, <root>/efasim/<dir>/<name>:
 * made if missing (mode 0600; zeros), grown to at least size bytes. Its
 * descriptor (close-on-exec), or -errno (-EPERM: not the user's own file).
 */
int efasim_state_file(const char *dir, const char *name, size_t size);

/* A device's traffic counters (sysfs.c), shared by every process on it; only grow. */
struct efasim_hw_counters {
    uint64_t tx_pkts, tx_bytes;    /* datagrams the device sent (before fault injection) */
    uint64_t rx_pkts, rx_bytes;    /* datagrams it received */
    uint64_t fast_ops, fast_bytes; /* RDMA chunks it served by direct copy (as the target) */
};
/* Map device name's counters for adding (NULL if they cannot be: nothing is counted). */
struct efasim_hw_counters *efasim_hw_counters_map(const char *name);
void efasim_hw_counters_unmap(struct efasim_hw_counters *hwc);
/* A snapshot of name's counters (zeros before any traffic); 0 or -errno. */
int efasim_hw_counters_read(const char *name, struct efasim_hw_counters *out);

static inline void efasim_hw_count(uint64_t *pkts, uint64_t *bytes, size_t len)
{
    __atomic_fetch_add(pkts, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(bytes, len, __ATOMIC_RELAXED);
}

/*
 * Service thread (service.c). It never allocates or frees memory, nor calls
 * anything else that may enter mmap, munmap, mremap, madvise, brk, shmat or
 * shmdt: a memory monitor in the application (libfabric's "memhooks")
 * overwrites the first bytes of those libc functions while the application
 * runs, and a thread executing one of them at that moment faults. Real EFA has
 * no thread in the process, so efasim must not bring that hazard in. What the
 * progress path needs is allocated when the context or the QP is created.
 */
/* Serve ctx from the process's service thread (started with the first context); 0 or -errno. */
int efasim_service_start(struct efasim_context *ctx);
/* Stop serving ctx; the thread ends with the last context. ctx is not served after this returns. */
void efasim_service_stop(struct efasim_context *ctx);
/*
 * on: wake the service thread for one pass as soon as a datagram reaches a QP
 * that feeds cq (once; watch again to hear the next). off: stop waiting for
 * that. Two system calls' worth per QP; for a front end whose CQ's reader
 * cannot run the device while it waits (the kernel front end's disarmed rings).
 */
void efasim_cq_watch(struct efasim_cq *cq, bool on);

#endif /* EFASIM_MODEL_H */
