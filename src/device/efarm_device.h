/*
 * efarm's EFA device layer: the only code that talks to the device.
 *
 * It reaches libibverbs and libefa through a function table filled by
 * efarm_device_initialize(), which loads either the system's libraries or
 * efasim's at run time (EFARM_DEVICE=efa|sim|auto), so one efarm binary runs
 * on real EFA and on the emulator with the same verbs calls. Nothing here
 * calls an exported verbs symbol directly; the inline verbs helpers it uses
 * (ibv_wr_*, ibv_start_poll, ibv_post_recv, ...) go through the objects'
 * own function pointers.
 *
 * An endpoint is a PD, an extended CQ (with the sender's GID where the device
 * offers it), an SRD QP in RTS whose Q-Key is a random connid, a pool of
 * registered receive buffers kept posted, and an address-handle cache keyed by
 * GID. Completions are returned in batches with the device's errors mapped to
 * efarm codes (efarm_errno.h).
 */
#ifndef EFARM_DEVICE_H
#define EFARM_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EFARM_RAW_ADDR_LEN 32 /* protocol v4 section 1.4 */
#define EFARM_DEV_NAME_MAX 64

/* Which libraries efarm_device_initialize() loaded (NONE: it refused to load any). */
enum efarm_device_kind { EFARM_DEVICE_EFA, EFARM_DEVICE_SIM, EFARM_DEVICE_NONE };

/* The device choice EFARM_DEVICE makes on this host, and why, in words. */
struct efarm_device_choice {
    enum efarm_device_kind kind;
    char reason[512];
};

/*
 * The choice without loading anything: EFARM_DEVICE=efa takes the system's
 * rdma-core, sim efasim (the emulator), and auto (the default) EFA when
 * SYSFS_ROOT/class/infiniband lists a device of Amazon's PCI vendor id, else
 * NONE: efarm never falls back to the emulator without being told, because a
 * cluster node without its EFA device would otherwise run 10x slower without a
 * word. sysfs_root NULL means "/sys".
 */
void efarm_device_choose(const char *want, const char *sysfs_root,
                         struct efarm_device_choice *choice);

/*
 * Load the verbs libraries of efarm_device_choose's choice, once per
 * process: the system's libibverbs.so.1/libefa.so.1, or efasim's (from
 * EFARM_EFASIM_PATH, else the installed efasim directory). Returns 0, or
 * EFARM_E(DEV_LOAD) with the reason printed (for NONE, the choice's reason,
 * which names EFARM_DEVICE). Safe to call again.
 */
int efarm_device_initialize(void);

/* What was loaded; valid after efarm_device_initialize(). */
enum efarm_device_kind efarm_device_kind(void);

/* efarm_device_initialize's choice and its reason (the choice is made on the first call). */
const struct efarm_device_choice *efarm_device_choice(void);

/* Capabilities of one device, from efadv_query_device and the port. */
struct efarm_device_caps {
    char name[EFARM_DEV_NAME_MAX];
    uint32_t max_msg_size; /* the MTU one send carries (port max_msg_sz) */
    uint32_t inline_size;
    uint32_t max_sq_wr, max_rq_wr;
    uint32_t max_sq_sge, max_rq_sge;
    uint64_t max_rdma_size;
    bool rdma_read, rdma_write, rnr_retry, cq_with_sgid;
    /* The device can take an RDMA write with immediate without a posted receive. */
    bool unsolicited_write_recv;
    uint32_t device_version; /* HANDSHAKE DEVICE_VERSION: the PCI device id, 0xEFA0, ... */
    uint32_t max_mr;         /* registrations the device holds */
    uint64_t max_mr_size;    /* largest registration */
    uint32_t max_qp;         /* queue pairs the device holds, every endpoint's on it counted */
    uint32_t vendor_id;
};

/*
 * Enumerate the devices: fills up to `max` entries of caps[], in natural name
 * order (the order of the NIC choice's indexes, struct efarm_nic_choice), and
 * returns how many devices exist (may exceed max), or a negative error.
 */
int efarm_device_query_all(struct efarm_device_caps *caps, unsigned max);

/* ---- Endpoints ---------------------------------------------------------------- */

struct efarm_dev_ep;
struct efarm_dev_ah;
struct efarm_dev_mr;

struct efarm_dev_ep_attr {
    uint32_t sq_depth;   /* send WRs in flight; 0 = 256 */
    bool sq_depth_fit;   /* sq_depth above the device's max_sq_wr: take that max (else refuse) */
    uint32_t rx_buffers; /* receive buffers of max_msg_size kept posted; 0 = none */
    uint32_t rx_refill;  /* repost in batches of this many; 0 = 32 */
    uint32_t cq_depth;   /* 0 = sq_depth + rx_buffers + 64 */
    uint8_t rnr_retry;   /* 7 = retry forever */
};

/*
 * Open an endpoint on device `name` (NULL = the first). The caller owns the
 * endpoint and closes it with efarm_dev_ep_close(). Returns 0 or a negative
 * error; *ep_p is set only on success.
 */
int efarm_dev_ep_open(const char *name, const struct efarm_dev_ep_attr *attr,
                      struct efarm_dev_ep **ep_p);
void efarm_dev_ep_close(struct efarm_dev_ep *ep);

/*
 * Destroy the endpoint's QP now: the device reads and writes nothing more for
 * it (sends still being retransmitted, RDMA reads, receives), so the caller
 * may deregister and free the memory its work requests named before
 * efarm_dev_ep_close(), which then only frees the rest. Nothing may be posted
 * or polled afterwards.
 */
void efarm_dev_ep_quiesce(struct efarm_dev_ep *ep);

/* The device's capabilities as the endpoint sees them (owned by the endpoint). */
const struct efarm_device_caps *efarm_dev_ep_caps(const struct efarm_dev_ep *ep);

/*
 * Whether the endpoint's QP takes RDMA writes with immediate without a posted
 * receive (EFA's unsolicited write receive: protocol v4's extra feature 8).
 * It is created so where the device offers it and the rdma-core loaded can
 * ask for it (EFADV_QP_FLAGS_UNSOLICITED_WRITE_RECV, rdma-core 50 and later).
 */
bool efarm_dev_ep_unsolicited(const struct efarm_dev_ep *ep);

/* The endpoint's 32-byte raw address: gid 16, qpn 2, pad 2, connid 4, reserved 8. */
void efarm_dev_ep_raw_addr(const struct efarm_dev_ep *ep, uint8_t out[EFARM_RAW_ADDR_LEN]);
uint32_t efarm_dev_ep_connid(const struct efarm_dev_ep *ep);

/*
 * Address handle for a peer's GID, created on first use and cached per GID
 * (owned by the endpoint, valid until it closes). Returns 0 or an error.
 */
int efarm_dev_ah_get(struct efarm_dev_ep *ep, const uint8_t gid[16], struct efarm_dev_ah **ah_p);

/* The AH number the device reports as the source of receives from that GID. */
uint16_t efarm_dev_ah_number(const struct efarm_dev_ah *ah);

/* Memory registration; the caller deregisters what it registered. */
int efarm_dev_mr_reg(struct efarm_dev_ep *ep, void *addr, size_t len, bool remote_read,
                     bool remote_write, struct efarm_dev_mr **mr_p);
void efarm_dev_mr_dereg(struct efarm_dev_mr *mr);
uint32_t efarm_dev_mr_lkey(const struct efarm_dev_mr *mr);
uint32_t efarm_dev_mr_rkey(const struct efarm_dev_mr *mr);

/* One send: up to two segments of registered memory, or inline data. */
struct efarm_dev_send {
    struct efarm_dev_ah *ah;
    uint32_t qpn, qkey; /* the peer's QP number and connid */
    uint64_t wr_id;
    uint32_t nseg;
    struct {
        const void *addr;
        uint32_t len;
        uint32_t lkey; /* ignored when the whole send fits inline */
    } seg[2];
};

/*
 * Post `n` sends in one batch (one doorbell). Sends whose total length fits
 * the device's inline size are copied inline and need no lkey. Returns the
 * number posted (all or none), -EAGAIN when the send queue lacks room for the
 * batch (retry after polling), or another negative error.
 */
int efarm_dev_post_send(struct efarm_dev_ep *ep, const struct efarm_dev_send *sends, unsigned n);

/* efarm_dev_post_send of one send of one segment (the small-message path's post). */
int efarm_dev_post_send1(struct efarm_dev_ep *ep, struct efarm_dev_ah *ah, uint32_t qpn,
                         uint32_t qkey, uint64_t wr_id, const void *addr, uint32_t len,
                         uint32_t lkey);

/* RDMA read of [raddr, raddr+len) on the peer into local registered memory. */
int efarm_dev_post_read(struct efarm_dev_ep *ep, struct efarm_dev_ah *ah, uint32_t qpn,
                        uint32_t qkey, void *local, uint32_t len, uint32_t lkey, uint64_t raddr,
                        uint32_t rkey, uint64_t wr_id);

/* RDMA write; -EOPNOTSUPP when the device does not offer RDMA write. */
int efarm_dev_post_write(struct efarm_dev_ep *ep, struct efarm_dev_ah *ah, uint32_t qpn,
                         uint32_t qkey, const void *local, uint32_t len, uint32_t lkey,
                         uint64_t raddr, uint32_t rkey, uint64_t wr_id);

/*
 * RDMA write with a 32-bit immediate: once the data is placed, the target's
 * receive queue completes one of its receive WRs as IBV_WC_RECV_RDMA_WITH_IMM
 * carrying `imm` (EFARM_DEV_OP_RECV_WRITE_IMM there). The immediate goes as
 * given, in no byte order of ours: libfabric's EFA provider passes its CQ
 * data's low 32 bits the same way and reports them as it reads them.
 */
int efarm_dev_post_write_imm(struct efarm_dev_ep *ep, struct efarm_dev_ah *ah, uint32_t qpn,
                             uint32_t qkey, const void *local, uint32_t len, uint32_t lkey,
                             uint64_t raddr, uint32_t rkey, uint32_t imm, uint64_t wr_id);

/*
 * What a completion belongs to. EFA reports every send-queue completion that is
 * not an RDMA write as a send, RDMA reads included (rdma-core providers/efa,
 * efa_wc_read_opcode), so the device layer never tells sends, reads and writes
 * apart by the opcode: all three complete as EFARM_DEV_OP_SEND and the caller
 * routes them by the wr_id it chose when it posted them.
 */
enum efarm_dev_op {
    EFARM_DEV_OP_SEND, /* a send-queue WR: send, RDMA read or RDMA write (see wr_id) */
    EFARM_DEV_OP_RECV, /* a receive: its data is in the rx buffer */
    /* An RDMA write with immediate from a peer: no data in any rx buffer (the
       write placed it where it named), `imm` and `len` set; it consumed the
       receive WR rx_id unless `unsolicited` (efarm_dev_ep_unsolicited). */
    EFARM_DEV_OP_RECV_WRITE_IMM,
};

#define EFARM_DEV_AHN_UNKNOWN 0xffff

/*
 * One completion. op, status, vendor_err and wr_id are always set; the fields
 * marked "receives" only for receives (a send's leaves them as they were). For
 * receives, data points into an rx buffer until efarm_dev_rx_release.
 */
struct efarm_dev_cqe {
    enum efarm_dev_op op;
    int status; /* 0 or an EFARM_ERR_DEV_* code */
    uint32_t vendor_err;
    uint64_t wr_id;   /* sends and RDMA */
    uint32_t rx_id;   /* receives: the buffer to release */
    uint8_t *data;    /* receives */
    uint32_t len;     /* receives: bytes received (a write with immediate: bytes it wrote) */
    uint32_t imm;     /* EFARM_DEV_OP_RECV_WRITE_IMM: the immediate, as the writer gave it */
    bool unsolicited; /* EFARM_DEV_OP_RECV_WRITE_IMM: it took no receive WR (no rx_id) */
    uint32_t src_qpn; /* receives */
    uint16_t ahn;     /* receives: EFARM_DEV_AHN_UNKNOWN if the sender has no AH here */
    bool has_sgid;
    uint8_t sgid[16]; /* receives from unknown senders, where the CQ offers it */
};

/*
 * Poll up to `max` completions (one batch). Returns how many were filled, or
 * a negative error. Receive buffers are reposted in batches as they are
 * released, never on this path's account.
 */
int efarm_dev_poll(struct efarm_dev_ep *ep, struct efarm_dev_cqe *cqes, unsigned max);

/* Give a receive buffer back; it is reposted with the next batch. */
void efarm_dev_rx_release(struct efarm_dev_ep *ep, uint32_t rx_id);

/* Receive buffers currently posted to the device (for tests and back-pressure). */
unsigned efarm_dev_rx_posted(const struct efarm_dev_ep *ep);

#define EFARM_NIC_REASON_MAX 256
#define EFARM_NIC_RAILS_MAX  4

/* How near the chosen device is to the rank's binding (efarm_nic.h has the rules). */
enum efarm_nic_nearness {
    EFARM_NIC_SAME_NUMA,
    EFARM_NIC_SAME_PACKAGE,
    EFARM_NIC_NUMA_DISTANCE,
    EFARM_NIC_ANYWHERE,
    EFARM_NIC_UNBOUND,
};

struct efarm_nic_choice {
    unsigned index;                   /* into the names array (the verbs device list) */
    unsigned ndevices;                /* devices in that list */
    enum efarm_nic_nearness nearness; /* why the tied devices were nearest */
    unsigned ntied;                   /* devices tied for nearest, the chosen one among them */
    unsigned nsharing;                /* local ranks with the same tied devices, this one too */
    unsigned position;                /* this rank's place among them, from 0 */
    /*
     * The tied devices from the chosen one on, in the order of the set
     * (multi-rail: rail r is rails[r]; ranks sharing the set start at
     * different devices): min(ntied, EFARM_NIC_RAILS_MAX) of them.
     */
    unsigned nrails;
    unsigned rails[EFARM_NIC_RAILS_MAX];
    char reason[EFARM_NIC_REASON_MAX]; /* the above in words, without the rank and device name */
};

/*
 * Choose this rank's EFA device (efarm_nic.h has the rules): local_rank of
 * nlocal ranks on the node, bindings[r] the CPU binding of local rank r as an
 * hwloc CPU list ("0-3,8"), as efarm_dev_cpu_binding() writes it (NULL or "" =
 * unbound; bindings itself may be NULL). Honours EFARM_IFACE. Fills name_p
 * with the device name for efarm_dev_ep_open and, when choice_p is not NULL,
 * *choice_p; without choice_p, EFARM_NIC_VERBOSE prints rank -> NIC -> reason
 * here (a caller that takes the choice reports it in its own terms). The
 * _in variant takes a topology (tests); the other loads the machine's, with
 * its I/O objects.
 */
int efarm_dev_choose_nic(unsigned local_rank, unsigned nlocal, const char *const *bindings,
                         char name_p[EFARM_DEV_NAME_MAX], struct efarm_nic_choice *choice_p);
struct hwloc_topology;
int efarm_dev_choose_nic_in(struct hwloc_topology *topo, unsigned local_rank, unsigned nlocal,
                            const char *const *bindings, char name_p[EFARM_DEV_NAME_MAX],
                            struct efarm_nic_choice *choice_p);

/*
 * This process's CPU binding as an hwloc CPU list ("0,2": short for a core of
 * a big machine, where a mask would need a word per 32 CPUs), read
 * through hwloc on the machine's topology and limited to that topology's
 * CPUs; "" when the process is not bound (bound to every CPU, or hwloc cannot
 * tell). Returns 0, or -ENAMETOOLONG (buf holds "") when size is too small.
 */
int efarm_dev_cpu_binding(char *buf, size_t size);

/*
 * A registration cache (efarm_mr_cache.h) whose registrations are made on
 * this endpoint's PD, for long-read and runt-read send buffers. Its bounds
 * come from EFARM_MR_CACHE_MAX_ENTRIES/_BYTES, else from the device's limits
 * (half its MR table, at most 4096 entries; at most 4 GiB or its max MR
 * size). The caller closes it with efarm_mr_cache_close() before the endpoint.
 */
struct efarm_mr_cache;
int efarm_dev_mr_cache_open(struct efarm_dev_ep *ep, struct efarm_mr_cache **cache_p);

/* Access bits for efarm_mr_cache_get() on a device cache: the verbs values (checked in ep.c). */
#define EFARM_DEV_ACCESS_LOCAL_WRITE  1u
#define EFARM_DEV_ACCESS_REMOTE_WRITE 2u
#define EFARM_DEV_ACCESS_REMOTE_READ  4u

/*
 * Test hook: make the device layer's N-th allocation from now fail (0 = never).
 * Lets tests walk every failure point of the open paths.
 */
void efarm_dev_alloc_fail_at(unsigned n);

#endif /* EFARM_DEVICE_H */
