/*
 * EFA endpoints on verbs (see efarm_device.h): device enumeration, endpoint
 * open/close, the per-GID address-handle cache, memory registration, posting
 * and polling. Every exported verbs function is called through g_efarm_verbs.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <unistd.h>

#include "device_internal.h"
#include "efarm_config.h"
#include "efarm_device_limits.h"
#include "efarm_errno.h"
#include "efarm_log.h"
#include "efarm_mr_cache.h"

#define V             (&g_efarm_verbs)
#define EFARM_PORT    1
#define AH_BUCKETS    EFARM_DEV_AH_BUCKETS
#define POLL_BATCH_OK 32

/* rdma-core 50's unsolicited write receive, by its ABI values (create_cq below). */
#define EFARM_EFADV_CAPS_UNSOLICITED_WRITE_RECV     (1u << 4) /* efadv device_caps */
#define EFARM_EFADV_QP_FLAGS_UNSOLICITED_WRITE_RECV (1u << 0) /* efadv_qp_init_attr.flags */
#define EFARM_EFADV_WC_EX_WITH_IS_UNSOLICITED       (1u << 1) /* efadv_cq_init_attr.wc_flags */

struct efarm_dev_mr {
    struct ibv_mr *ibv;
};

/* ---- Pinned memory: what efarm registered, and why a registration is refused ---- */

/*
 * Bytes this process holds registered through efarm, counted as the kernel
 * pins them: the 4 KiB pages each registration spans (ib_umem_get adds them
 * to the process's pinned_vm, which RLIMIT_MEMLOCK bounds). For messages only.
 */
static atomic_ullong g_pinned_bytes;
static atomic_flag g_warned_pinned = ATOMIC_FLAG_INIT, g_warned_cache = ATOMIC_FLAG_INIT,
                   g_warned_write = ATOMIC_FLAG_INIT;

static uint64_t pinned_span(const void *addr, size_t len)
{
    uintptr_t lo = (uintptr_t)addr & ~(uintptr_t)4095;
    uintptr_t hi = ((uintptr_t)addr + len + 4095) & ~(uintptr_t)4095;

    return len ? (uint64_t)(hi - lo) : 0;
}

static void pinned_add(const struct ibv_mr *mr)
{
    atomic_fetch_add_explicit(&g_pinned_bytes, pinned_span(mr->addr, mr->length),
                              memory_order_relaxed);
}

static void pinned_sub(const struct ibv_mr *mr)
{
    atomic_fetch_sub_explicit(&g_pinned_bytes, pinned_span(mr->addr, mr->length),
                              memory_order_relaxed);
}

uint64_t efarm_dev_pinned_bytes(void)
{
    return atomic_load_explicit(&g_pinned_bytes, memory_order_relaxed);
}

/*
 * `ulimit -l` for messages: "N KiB" or "unlimited". Where efasim enforces a
 * limit in the kernel's place (EFASIM_MEMLOCK=N, on either of its front
 * ends), that one.
 */
static void memlock_text(char *buf, size_t n)
{
    const char *sim = getenv("EFASIM_MEMLOCK");
    struct rlimit rl;
    char *end;

    if (sim && *sim >= '0' && *sim <= '9') {
        unsigned long long v = strtoull(sim, &end, 0);

        if (*end == '\0') {
            snprintf(buf, n, "%llu KiB", v / 1024);
            return;
        }
    }
    if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY)
        snprintf(buf, n, "unlimited");
    else
        snprintf(buf, n, "%llu KiB", (unsigned long long)(rl.rlim_cur / 1024));
}

void efarm_dev_reg_refused(const struct efarm_dev_ep *ep, uint64_t len, int err, const char *what,
                           const char *fallback)
{
    /* efasim's knobs are named where efasim answers: its drop-in, or its kernel front end
     * when a limit of its own is set. */
    bool sim = efarm_device_kind() == EFARM_DEVICE_SIM || getenv("EFASIM_MEMLOCK") != NULL;
    uint64_t pinned = efarm_dev_pinned_bytes();
    char limit[32];

    if (err == -ENOSPC || err == -E2BIG) {
        /* efarm's own bound: the registration cache is full of registrations in use. */
        if (fallback && atomic_flag_test_and_set(&g_warned_cache))
            return;
        efarm_log(fallback ? EFARM_LOG_WARN : EFARM_LOG_ERROR,
                  "cannot register %llu bytes for %s: efarm's registration cache is at its "
                  "bound (EFARM_MR_CACHE_MAX_BYTES, EFARM_MR_CACHE_MAX_ENTRIES) with every "
                  "registration in use; %s. Raise those knobs to keep the zero-copy path",
                  (unsigned long long)len, what, fallback ? fallback : "cannot go on");
        return;
    }
    if (err != -ENOMEM && err != -EPERM) {
        efarm_log(fallback ? EFARM_LOG_DEBUG : EFARM_LOG_ERROR,
                  "%s refused to register %llu bytes for %s (%s)%s%s", ep->caps.name,
                  (unsigned long long)len, what, efarm_strerror(err), fallback ? ": " : "",
                  fallback ? fallback : "");
        return;
    }
    if (fallback && atomic_flag_test_and_set(&g_warned_pinned))
        return;
    memlock_text(limit, sizeof(limit));
    /*
     * ENOMEM: the kernel's RLIMIT_MEMLOCK (ib_umem_get counts every registered
     * page against it unless the process has CAP_IPC_LOCK) or the device's own
     * page budget; EPERM: `ulimit -l` is 0 (can_do_mlock).
     */
    /* One line each, within efarm_log's 512 bytes: the knobs come before the detail. */
    if (fallback)
        efarm_log(EFARM_LOG_WARN,
                  "%s refused to register %llu bytes for %s (%s): raise `ulimit -l` (%s "
                  "here%s) or lower EFARM_MR_CACHE_MAX_BYTES; efarm holds %llu KiB, its cache "
                  "included, and the device has a limit too. %s, slower. Further refusals are "
                  "not printed",
                  ep->caps.name, (unsigned long long)len, what, efarm_strerror(err), limit,
                  sim ? "; efasim: EFASIM_MEMLOCK" : "", (unsigned long long)(pinned / 1024),
                  fallback);
    else
        efarm_log(EFARM_LOG_ERROR,
                  "%s refused to register the %llu KiB of %s (%s): pinned memory is within "
                  "`ulimit -l`, %s here, and efarm needs at least %llu KiB for its endpoints so "
                  "far (one per VCI and rail). Raise `ulimit -l` (under Slurm: the srun shell's "
                  "and slurmd's LimitMEMLOCK) or lower EFARM_RX_BUFFERS and EFARM_TX_PKTS%s",
                  ep->caps.name, (unsigned long long)((len + 1023) / 1024), what,
                  efarm_strerror(err), limit,
                  (unsigned long long)((pinned + pinned_span(NULL, len) + 1023) / 1024),
                  sim ? " (efasim: EFASIM_MEMLOCK)" : "");
}

bool efarm_dev_reg_write_refused(struct efarm_dev_ep *ep, void *addr, size_t len, bool remote_read,
                                 const char *what, const char *fallback)
{
    struct efarm_dev_mr *probe;

    /* Granted without remote write: the device's bound on such regions refused it. */
    if (efarm_dev_mr_reg(ep, addr, len, remote_read, false, &probe))
        return false;
    efarm_dev_mr_dereg(probe);
    if (!atomic_flag_test_and_set(&g_warned_write))
        efarm_log(EFARM_LOG_WARN,
                  "%s refused to register %llu bytes for %s open to RDMA write, and takes them "
                  "without: EFA holds at most 2^20 pages (4 GiB of 4 KiB pages) in one region "
                  "open to RDMA write. %s. Memory on huge pages holds more per page. Further "
                  "refusals are not printed",
                  ep->caps.name, (unsigned long long)len, what, fallback);
    return true;
}

/* ---- A NIC's address handles, shared ------------------------------------------- */

/*
 * EFA's address-handle table (max_ah) is the device's: every endpoint of every
 * process on the NIC draws from it, and a process can release only its own.
 * Left alone, the endpoint that makes its handles first (at its address
 * vector's inserts) may hold the table, and a rank on the same NIC that holds
 * none can release none: it fails its peers after a wait. So each endpoint
 * holds at most its share, max_ah divided among the node's ranks that share
 * the NIC (the NIC choice counts them) and the process's endpoints on it; at
 * its share, a creation is refused as the full device refuses it, and the
 * engine releases the endpoint's least recently used handle instead.
 */
static atomic_uint g_nic_sharers = 1;

void efarm_dev_note_nic_sharers(unsigned n)
{
    atomic_store_explicit(&g_nic_sharers, n ? n : 1, memory_order_relaxed);
}

static unsigned nic_sharers(void)
{
    return atomic_load_explicit(&g_nic_sharers, memory_order_relaxed);
}

/* The process's open endpoints per device, by name. */
#define DEV_EPS_MAX 64
static struct {
    char name[EFARM_DEV_NAME_MAX];
    unsigned eps;
} g_dev_eps[DEV_EPS_MAX];
static pthread_mutex_t g_dev_eps_lock = PTHREAD_MUTEX_INITIALIZER;

static void dev_eps_join(struct efarm_dev_ep *ep)
{
    int free_slot = -1;

    ep->dev_slot = -1;
    pthread_mutex_lock(&g_dev_eps_lock);
    for (int i = 0; i < DEV_EPS_MAX && ep->dev_slot < 0; i++) {
        if (g_dev_eps[i].eps && !strcmp(g_dev_eps[i].name, ep->caps.name))
            ep->dev_slot = i;
        else if (!g_dev_eps[i].eps && free_slot < 0)
            free_slot = i;
    }
    if (ep->dev_slot < 0 && free_slot >= 0) {
        ep->dev_slot = free_slot;
        snprintf(g_dev_eps[free_slot].name, sizeof(g_dev_eps[free_slot].name), "%s", ep->caps.name);
    }
    if (ep->dev_slot >= 0)
        g_dev_eps[ep->dev_slot].eps++;
    pthread_mutex_unlock(&g_dev_eps_lock);
}

static void dev_eps_leave(struct efarm_dev_ep *ep)
{
    pthread_mutex_lock(&g_dev_eps_lock);
    if (ep->dev_slot >= 0)
        g_dev_eps[ep->dev_slot].eps--;
    pthread_mutex_unlock(&g_dev_eps_lock);
    ep->dev_slot = -1;
}

/* The endpoint's share of its NIC's handles: at least one; no bound when max_ah is unknown. */
static uint32_t ah_share(const struct efarm_dev_ep *ep)
{
    unsigned eps =
        ep->dev_slot >= 0 ? __atomic_load_n(&g_dev_eps[ep->dev_slot].eps, __ATOMIC_RELAXED) : 1;
    uint64_t n = (uint64_t)nic_sharers() * (eps ? eps : 1);

    if (!ep->ah_max)
        return UINT32_MAX;
    return ep->ah_max / n ? (uint32_t)(ep->ah_max / n) : 1;
}

/* ---- Allocation with a failure hook ------------------------------------------- */

static unsigned g_alloc_fail_at, g_alloc_count;

void efarm_dev_alloc_fail_at(unsigned n)
{
    g_alloc_fail_at = n;
    g_alloc_count = 0;
}

bool efarm_dev_alloc_fails(void)
{
    return g_alloc_fail_at && ++g_alloc_count == g_alloc_fail_at;
}

void *efarm_dev_calloc(size_t n, size_t size)
{
    return efarm_dev_alloc_fails() ? NULL : calloc(n, size);
}

/* ---- Status mapping ------------------------------------------------------------ */

/*
 * What EFA's completion statuses (the vendor error, efa_io_comp_status) mean to
 * efarm, for a completion whose verbs status says no more than "general
 * error": rdma-core before 55 maps 7 (a bad remote address or key), 14 (an
 * unknown peer) and 15 (unreachable) to IBV_WC_GENERAL_ERR, later releases to
 * REM_ACCESS, REM_OP and RESP_TIMEOUT. The device's status is the same on
 * either, so efarm reads it there.
 */
static const struct {
    uint32_t vendor_err;
    int err;
} g_efa_status[] = {
    {1, EFARM_E(DEV_FLUSHED)},
    {2, EFARM_E(DEV_LOCAL_QP)},
    {3, EFARM_E(DEV_LOCAL_QP)},
    {4, EFARM_E(DEV_LOCAL_QP)},
    {5, EFARM_E(DEV_LOCAL_PROTECTION)},
    {6, EFARM_E(DEV_LOCAL_LENGTH)},
    {7, EFARM_E(DEV_REMOTE_ACCESS)},
    {9, EFARM_E(DEV_REMOTE_QP)},
    {10, EFARM_E(DEV_RNR)},
    {11, EFARM_E(DEV_REMOTE_LENGTH)},
    {13, EFARM_E(DEV_TIMEOUT)},
    {14, EFARM_E(DEV_REMOTE_QP)},
    {15, EFARM_E(DEV_TIMEOUT)},
    {18, EFARM_E(DEV_REMOTE_LENGTH)},
};

int efarm_dev_status(enum ibv_wc_status status, uint32_t vendor_err)
{
    switch (status) {
    case IBV_WC_SUCCESS:
        return 0;
    case IBV_WC_RNR_RETRY_EXC_ERR:
        return EFARM_E(DEV_RNR);
    case IBV_WC_REM_ACCESS_ERR:
        return EFARM_E(DEV_REMOTE_ACCESS);
    case IBV_WC_REM_INV_RD_REQ_ERR:
    case IBV_WC_REM_OP_ERR:
        return EFARM_E(DEV_REMOTE_QP);
    case IBV_WC_REM_INV_REQ_ERR:
        return EFARM_E(DEV_REMOTE_LENGTH);
    case IBV_WC_LOC_LEN_ERR:
        return EFARM_E(DEV_LOCAL_LENGTH);
    case IBV_WC_LOC_PROT_ERR:
        return EFARM_E(DEV_LOCAL_PROTECTION);
    case IBV_WC_LOC_QP_OP_ERR:
        return EFARM_E(DEV_LOCAL_QP);
    case IBV_WC_WR_FLUSH_ERR:
        return EFARM_E(DEV_FLUSHED);
    case IBV_WC_RESP_TIMEOUT_ERR:
    case IBV_WC_RETRY_EXC_ERR:
        return EFARM_E(DEV_TIMEOUT);
    default:
        for (size_t i = 0; i < sizeof(g_efa_status) / sizeof(g_efa_status[0]); i++)
            if (g_efa_status[i].vendor_err == vendor_err)
                return g_efa_status[i].err;
        return EFARM_E(DEV_GENERAL);
    }
}

/* ---- Devices ---------------------------------------------------------------------- */

static int query_caps(struct ibv_context *ctx, const char *name, struct efarm_device_caps *caps)
{
    struct efadv_device_attr efa;
    struct ibv_device_attr dev;
    struct ibv_port_attr port;

    memset(caps, 0, sizeof(*caps));
    memset(&port, 0, sizeof(port));
    if (V->efadv_query_device(ctx, &efa, sizeof(efa)) || V->ibv_query_device(ctx, &dev) ||
        (V->ibv_query_port)(ctx, EFARM_PORT, (struct _compat_ibv_port_attr *)&port))
        return EFARM_E(DEV_NONE);
    snprintf(caps->name, sizeof(caps->name), "%s", name);
    caps->max_msg_size = port.max_msg_sz;
    caps->inline_size = efa.inline_buf_size;
    caps->max_sq_wr = efa.max_sq_wr;
    caps->max_rq_wr = efa.max_rq_wr;
    caps->max_sq_sge = efa.max_sq_sge;
    caps->max_rq_sge = efa.max_rq_sge;
    caps->max_rdma_size = efa.max_rdma_size;
    caps->rdma_read = efa.device_caps & EFADV_DEVICE_ATTR_CAPS_RDMA_READ;
    caps->rnr_retry = efa.device_caps & EFADV_DEVICE_ATTR_CAPS_RNR_RETRY;
    caps->cq_with_sgid = efa.device_caps & EFADV_DEVICE_ATTR_CAPS_CQ_WITH_SGID;
#if HAVE_DECL_EFADV_DEVICE_ATTR_CAPS_RDMA_WRITE
    caps->rdma_write = efa.device_caps & EFADV_DEVICE_ATTR_CAPS_RDMA_WRITE;
#else
    caps->rdma_write = efa.device_caps & (1u << 3); /* its ABI value in newer rdma-core */
#endif
    caps->unsolicited_write_recv = efa.device_caps & EFARM_EFADV_CAPS_UNSOLICITED_WRITE_RECV;
    /*
     * The HANDSHAKE's device version is the PCI device id (0xEFA0, 0xEFA1, ...),
     * which rdma-core reports as vendor_part_id; libfabric 2.x sends the same and
     * decides RDMA-read interoperability by it (efarm_proto_read_interop).
     */
    caps->device_version = dev.vendor_part_id;
    caps->max_mr = dev.max_mr > 0 ? (uint32_t)dev.max_mr : 0;
    caps->max_mr_size = dev.max_mr_size;
    caps->max_qp = dev.max_qp > 0 ? (uint32_t)dev.max_qp : 0;
    caps->vendor_id = dev.vendor_id;
    return 0;
}

static int device_order(const void *a, const void *b)
{
    return efarm_dev_name_order(V->ibv_get_device_name(*(struct ibv_device *const *)a),
                                V->ibv_get_device_name(*(struct ibv_device *const *)b));
}

int efarm_device_query_all(struct efarm_device_caps *caps, unsigned max)
{
    struct ibv_device **list;
    int n = 0, ret;

    ret = efarm_device_initialize();
    if (ret)
        return ret;
    list = V->ibv_get_device_list(&n);
    if (!list)
        return EFARM_E(DEV_NONE);
    /* The NIC choice's order, so that its indexes (the rails) name the same devices here. */
    qsort(list, (size_t)n, sizeof(*list), device_order);
    for (int i = 0; i < n && (unsigned)i < max; i++) {
        struct ibv_context *ctx = V->ibv_open_device(list[i]);

        if (!ctx) {
            V->ibv_free_device_list(list);
            return EFARM_E(DEV_NONE);
        }
        ret = query_caps(ctx, V->ibv_get_device_name(list[i]), &caps[i]);
        V->ibv_close_device(ctx);
        if (ret) {
            V->ibv_free_device_list(list);
            return ret;
        }
    }
    V->ibv_free_device_list(list);
    return n;
}

/* ---- Endpoint open and close -------------------------------------------------------- */

static struct ibv_context *open_named(const char *name)
{
    struct ibv_device **list;
    struct ibv_context *ctx = NULL;
    int n = 0;

    list = V->ibv_get_device_list(&n);
    if (!list)
        return NULL;
    for (int i = 0; i < n && !ctx; i++)
        if (!name || !strcmp(V->ibv_get_device_name(list[i]), name))
            ctx = V->ibv_open_device(list[i]);
    V->ibv_free_device_list(list);
    return ctx;
}

/*
 * Unsolicited write receive came with rdma-core 50; bookworm's 44 headers lack
 * it. Its ABI values, and the two layouts that carry it: the QP's flags where
 * 44 has reserved bytes, and the CQ's accessor after wc_read_sgid. A libefa
 * that does not know them refuses the flag (its checks of reserved bytes and
 * of wc_flags), and efarm then creates its CQ and QP without.
 */
struct efarm_efadv_qp_attr50 {
    uint64_t comp_mask;
    uint32_t driver_qp_type;
    uint16_t flags;
    uint8_t sl;
    uint8_t reserved;
};

struct efarm_efadv_cq50 {
    uint64_t comp_mask;
    int (*wc_read_sgid)(struct efadv_cq *efadv_cq, union ibv_gid *sgid);
    bool (*wc_is_unsolicited)(struct efadv_cq *efadv_cq);
};

static int create_cq(struct efarm_dev_ep *ep, uint32_t depth)
{
    struct ibv_cq_init_attr_ex attr = {
        .cqe = depth,
        .wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
                    IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID,
    };
    bool unsolicited = ep->caps.unsolicited_write_recv && ep->caps.rdma_write;

    for (int pass = unsolicited ? 0 : 1; pass < 2 && !ep->cq; pass++) {
        struct efadv_cq_init_attr efa = {
            .wc_flags = (ep->caps.cq_with_sgid ? EFADV_WC_EX_WITH_SGID : 0) |
                        (pass == 0 ? EFARM_EFADV_WC_EX_WITH_IS_UNSOLICITED : 0)};

        if (efa.wc_flags == 0 || !V->efadv_create_cq || !V->efadv_cq_from_ibv_cq_ex)
            continue;
        ep->cq = V->efadv_create_cq(ep->ctx, &attr, &efa, sizeof(efa));
        if (ep->cq)
            ep->efadv_cq = V->efadv_cq_from_ibv_cq_ex(ep->cq);
        if (ep->efadv_cq && pass == 0)
            ep->wc_is_unsolicited = ((struct efarm_efadv_cq50 *)ep->efadv_cq)->wc_is_unsolicited;
    }
    ep->cq_sgid = ep->efadv_cq && ep->caps.cq_with_sgid;
    if (!ep->cq)
        ep->cq = ibv_create_cq_ex(ep->ctx, &attr); /* through the context's own op */
    return ep->cq ? 0 : -ENOMEM;
}

static int create_qp(struct efarm_dev_ep *ep, uint32_t rq_depth, uint8_t rnr_retry)
{
    struct efarm_efadv_qp_attr50 efa = {.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD};
    struct ibv_qp_init_attr_ex attr = {
        .send_cq = ibv_cq_ex_to_cq(ep->cq),
        .recv_cq = ibv_cq_ex_to_cq(ep->cq),
        .cap = {.max_send_wr = ep->sq_depth,
                .max_recv_wr = rq_depth ? rq_depth : 1,
                .max_send_sge = 2 < ep->caps.max_sq_sge ? 2 : ep->caps.max_sq_sge,
                .max_recv_sge = 1,
                .max_inline_data = ep->caps.inline_size},
        .qp_type = IBV_QPT_DRIVER,
        .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
        .pd = ep->pd,
        .send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM,
    };
    struct ibv_qp_attr qa = {.qp_state = IBV_QPS_INIT, .port_num = EFARM_PORT};

    if (ep->caps.rdma_read)
        attr.send_ops_flags |= IBV_QP_EX_WITH_RDMA_READ;
    if (ep->caps.rdma_write)
        attr.send_ops_flags |= IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
    if (ep->wc_is_unsolicited) {
        efa.flags = EFARM_EFADV_QP_FLAGS_UNSOLICITED_WRITE_RECV;
        ep->qp =
            V->efadv_create_qp_ex(ep->ctx, &attr, (struct efadv_qp_init_attr *)&efa, sizeof(efa));
        if (!ep->qp) {
            /* The CQ took the mark but the QP not the flag: plain receives, no mark. */
            efa.flags = 0;
            ep->wc_is_unsolicited = NULL;
        }
    }
    if (!ep->qp)
        ep->qp =
            V->efadv_create_qp_ex(ep->ctx, &attr, (struct efadv_qp_init_attr *)&efa, sizeof(efa));
    if (!ep->qp) {
        int err = errno ? errno : ENOMEM;

        /*
         * EFA's driver answers ENOMEM when the device's resources are used up,
         * most often its QPs: every endpoint (VCI, rail) of every process on the
         * NIC has a QP of its own. Other errors are not that limit.
         */
        if (err == ENOMEM)
            efarm_log(EFARM_LOG_ERROR,
                      "%s refused a queue pair (%s): it holds %u (max_qp), counting every QP "
                      "open on it by any process; efarm opens one per endpoint (MPI: one per VCI "
                      "and per rail, for each rank on the NIC)%s",
                      ep->caps.name, strerror(err), ep->caps.max_qp,
                      efarm_device_kind() == EFARM_DEVICE_SIM ? "; EFASIM_MAX_QP sets efasim's"
                                                              : "");
        else
            efarm_log(EFARM_LOG_ERROR, "%s refused a queue pair (%s)", ep->caps.name,
                      strerror(err));
        return -err;
    }
    /* The Q-Key is the endpoint's connid: a random 32-bit number (section 1.4). */
    qa.qkey = ep->connid;
    if (V->ibv_modify_qp(ep->qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
        return -EINVAL;
    qa.qp_state = IBV_QPS_RTR;
    if (V->ibv_modify_qp(ep->qp, &qa, IBV_QP_STATE))
        return -EINVAL;
    qa.qp_state = IBV_QPS_RTS;
    qa.rnr_retry = rnr_retry;
    if (V->ibv_modify_qp(ep->qp, &qa,
                         IBV_QP_STATE | IBV_QP_SQ_PSN |
                             (ep->caps.rnr_retry ? IBV_QP_RNR_RETRY : 0)))
        return -EINVAL;
    ep->qpx = V->ibv_qp_to_qp_ex(ep->qp);
    return 0;
}

static int rx_pool_open(struct efarm_dev_ep *ep, uint32_t count, uint32_t refill)
{
    size_t size = (size_t)count * ep->caps.max_msg_size;

    ep->rx_count = count;
    ep->rx_refill = refill ? refill : 32;
    if (ep->rx_refill > count)
        ep->rx_refill = count ? count : 1;
    if (!count)
        return 0;
    ep->rx_free = efarm_dev_calloc(count, sizeof(*ep->rx_free));
    ep->rx_wrs = efarm_dev_calloc(ep->rx_refill, sizeof(*ep->rx_wrs));
    ep->rx_sges = efarm_dev_calloc(ep->rx_refill, sizeof(*ep->rx_sges));
    ep->rx_mem = efarm_dev_calloc(1, size);
    if (!ep->rx_free || !ep->rx_wrs || !ep->rx_sges || !ep->rx_mem)
        return -ENOMEM;
    ep->rx_mr = (V->ibv_reg_mr)(ep->pd, ep->rx_mem, size, IBV_ACCESS_LOCAL_WRITE);
    if (!ep->rx_mr) {
        int err = errno ? -errno : -ENOMEM;

        efarm_dev_reg_refused(ep, size, err, "its receive pool (EFARM_RX_BUFFERS x MTU)", NULL);
        return err;
    }
    pinned_add(ep->rx_mr);
    for (uint32_t i = 0; i < count; i++)
        ep->rx_free[ep->rx_nfree++] = i;
    efarm_dev_rx_refill(ep, true);
    return ep->rx_posted == count ? 0 : -ENOMEM;
}

int efarm_dev_ep_open(const char *name, const struct efarm_dev_ep_attr *attr,
                      struct efarm_dev_ep **ep_p)
{
    struct efarm_dev_ep_attr a = attr ? *attr : (struct efarm_dev_ep_attr){0};
    struct efarm_dev_ep *ep;
    int ret;

    ret = efarm_device_initialize();
    if (ret)
        return ret;
    ep = efarm_dev_calloc(1, sizeof(*ep));
    if (!ep)
        return -ENOMEM;
    ep->dev_slot = -1;
    ep->ctx = open_named(name);
    if (!ep->ctx) {
        ret = EFARM_E(DEV_NONE);
        goto err_free;
    }
    ret = query_caps(ep->ctx, name ? name : ep->ctx->device->name, &ep->caps);
    if (ret)
        goto err_close_device;
    {
        struct ibv_device_attr dev;

        /* Reported, never enforced by the driver: the device refuses beyond it. */
        if (V->ibv_query_device(ep->ctx, &dev) == 0 && dev.max_ah > 0)
            ep->ah_max = (uint32_t)dev.max_ah;
    }
    ep->sq_depth = a.sq_depth ? a.sq_depth : 256;
    if (ep->sq_depth > ep->caps.max_sq_wr && a.sq_depth_fit && ep->caps.max_sq_wr) {
        efarm_log(EFARM_LOG_INFO,
                  "%s takes %u send work requests (max_sq_wr): EFARM_SQ_DEPTH %u -> %u",
                  ep->caps.name, ep->caps.max_sq_wr, ep->sq_depth, ep->caps.max_sq_wr);
        ep->sq_depth = ep->caps.max_sq_wr;
    }
    if (ep->sq_depth > ep->caps.max_sq_wr) {
        efarm_log(EFARM_LOG_ERROR,
                  "EFARM_SQ_DEPTH=%u refused: %s takes at most %u send work requests (max_sq_wr)",
                  ep->sq_depth, ep->caps.name, ep->caps.max_sq_wr);
        ret = -EINVAL;
        goto err_close_device;
    }
    if (a.rx_buffers > ep->caps.max_rq_wr) {
        efarm_log(
            EFARM_LOG_ERROR,
            "EFARM_RX_BUFFERS=%u refused: %s takes at most %u receive work requests (max_rq_wr)",
            a.rx_buffers, ep->caps.name, ep->caps.max_rq_wr);
        ret = -EINVAL;
        goto err_close_device;
    }
    if (getrandom(&ep->connid, sizeof(ep->connid), 0) != sizeof(ep->connid))
        ep->connid = (uint32_t)getpid() * 2654435761u ^ (uint32_t)(uintptr_t)ep;
    ep->pd = V->ibv_alloc_pd(ep->ctx);
    if (!ep->pd) {
        ret = -ENOMEM;
        goto err_close_device;
    }
    ret = create_cq(ep, a.cq_depth ? a.cq_depth : ep->sq_depth + a.rx_buffers + 64);
    if (ret)
        goto err_dealloc_pd;
    ret = create_qp(ep, a.rx_buffers, a.rnr_retry);
    if (ret)
        goto err_destroy_qp;
    if (V->ibv_query_gid(ep->ctx, EFARM_PORT, 0, &ep->gid)) {
        ret = EFARM_E(DEV_NONE);
        goto err_destroy_qp;
    }
    ret = rx_pool_open(ep, a.rx_buffers, a.rx_refill);
    if (ret)
        goto err_close_rx;
    dev_eps_join(ep);
    *ep_p = ep;
    return 0;

err_close_rx:
    if (ep->rx_mr) {
        pinned_sub(ep->rx_mr);
        V->ibv_dereg_mr(ep->rx_mr);
    }
    free(ep->rx_mem);
    free(ep->rx_sges);
    free(ep->rx_wrs);
    free(ep->rx_free);
err_destroy_qp:
    if (ep->qp)
        V->ibv_destroy_qp(ep->qp);
    V->ibv_destroy_cq(ibv_cq_ex_to_cq(ep->cq));
err_dealloc_pd:
    V->ibv_dealloc_pd(ep->pd);
err_close_device:
    V->ibv_close_device(ep->ctx);
err_free:
    free(ep);
    return ret;
}

void efarm_dev_ep_quiesce(struct efarm_dev_ep *ep)
{
    if (ep->qp == NULL)
        return;
    V->ibv_destroy_qp(ep->qp);
    ep->qp = NULL;
}

void efarm_dev_ep_close(struct efarm_dev_ep *ep)
{
    dev_eps_leave(ep);
    for (unsigned b = 0; b < AH_BUCKETS; b++) {
        while (ep->ah_bucket[b]) {
            struct efarm_dev_ah *ah = ep->ah_bucket[b];

            ep->ah_bucket[b] = ah->next;
            if (ah->ibv)
                V->ibv_destroy_ah(ah->ibv);
            free(ah);
        }
    }
    efarm_dev_ep_quiesce(ep);
    if (ep->rx_mr) {
        pinned_sub(ep->rx_mr);
        V->ibv_dereg_mr(ep->rx_mr);
    }
    free(ep->rx_mem);
    free(ep->rx_sges);
    free(ep->rx_wrs);
    free(ep->rx_free);
    V->ibv_destroy_cq(ibv_cq_ex_to_cq(ep->cq));
    V->ibv_dealloc_pd(ep->pd);
    V->ibv_close_device(ep->ctx);
    free(ep);
}

bool efarm_dev_ep_unsolicited(const struct efarm_dev_ep *ep)
{
    return ep->wc_is_unsolicited != NULL;
}

const struct efarm_device_caps *efarm_dev_ep_caps(const struct efarm_dev_ep *ep)
{
    return &ep->caps;
}

uint32_t efarm_dev_ep_connid(const struct efarm_dev_ep *ep)
{
    return ep->connid;
}

void efarm_dev_ep_raw_addr(const struct efarm_dev_ep *ep, uint8_t out[EFARM_RAW_ADDR_LEN])
{
    uint16_t qpn = (uint16_t)ep->qp->qp_num;

    memset(out, 0, EFARM_RAW_ADDR_LEN);
    memcpy(out, ep->gid.raw, 16);
    out[16] = (uint8_t)qpn;
    out[17] = (uint8_t)(qpn >> 8);
    for (int i = 0; i < 4; i++)
        out[20 + i] = (uint8_t)(ep->connid >> (8 * i));
}

/* ---- Address handles ------------------------------------------------------------- */

static unsigned gid_bucket(const uint8_t gid[16])
{
    uint32_t h = 2166136261u;

    for (int i = 0; i < 16; i++)
        h = (h ^ gid[i]) * 16777619u;
    return h % AH_BUCKETS;
}

/* The device's handle for ah->gid: 0, or a negative errno (-ENOMEM: the device holds max_ah). */
static int ah_create(struct efarm_dev_ep *ep, struct efarm_dev_ah *ah)
{
    struct ibv_ah_attr attr = {.is_global = 1, .port_num = EFARM_PORT};
    struct efadv_ah_attr efa;
    struct ibv_ah *ibv;

    /* The endpoint's share of the NIC's table is held: as if the device refused. */
    if (ep->ah_live >= ah_share(ep)) {
        ep->ah_capped++;
        return -ENOMEM;
    }
    memcpy(attr.grh.dgid.raw, ah->gid, 16);
    errno = 0;
    ibv = V->ibv_create_ah(ep->pd, &attr);
    if (!ibv) {
        /* EFA's CREATE_AH answers a full AH table with ENOMEM (efa_com.c's status map). */
        int err = errno ? -errno : -ENOMEM;

        if (err == -ENOMEM)
            ep->ah_refused++;
        return err;
    }
    if (V->efadv_query_ah(ibv, &efa, sizeof(efa))) {
        V->ibv_destroy_ah(ibv);
        return -EIO;
    }
    ah->ibv = ibv;
    ah->ahn = efa.ahn;
    ep->ah_live++;
    ep->ah_created++;
    return 0;
}

int efarm_dev_ah_get(struct efarm_dev_ep *ep, const uint8_t gid[16], struct efarm_dev_ah **ah_p)
{
    unsigned b = gid_bucket(gid);
    struct efarm_dev_ah *ah;
    int ret;

    *ah_p = NULL;
    for (ah = ep->ah_bucket[b]; ah; ah = ah->next) {
        if (!memcmp(ah->gid, gid, 16)) {
            *ah_p = ah;
            return efarm_dev_ah_live(ah) ? 0 : -ENOMEM;
        }
    }
    ah = efarm_dev_calloc(1, sizeof(*ah));
    if (!ah)
        return -ENOMEM;
    memcpy(ah->gid, gid, 16);
    ah->ahn = EFARM_DEV_AHN_UNKNOWN;
    ah->user_head = UINT32_MAX;
    ret = ah_create(ep, ah);
    if (ret && ret != -ENOMEM) {
        free(ah);
        return ret;
    }
    /* Refused for room: the entry stays, without a handle until efarm_dev_ah_revive. */
    ah->next = ep->ah_bucket[b];
    ep->ah_bucket[b] = ah;
    ep->ah_entries++;
    *ah_p = ah;
    return ret;
}

int efarm_dev_ah_revive(struct efarm_dev_ep *ep, struct efarm_dev_ah *ah)
{
    return efarm_dev_ah_live(ah) ? 0 : ah_create(ep, ah);
}

void efarm_dev_ah_release(struct efarm_dev_ep *ep, struct efarm_dev_ah *ah)
{
    if (!efarm_dev_ah_live(ah))
        return;
    V->ibv_destroy_ah(ah->ibv);
    ah->ibv = NULL;
    ah->ahn = EFARM_DEV_AHN_UNKNOWN;
    ep->ah_live--;
    ep->ah_released++;
}

struct efarm_dev_ah *efarm_dev_ah_next(const struct efarm_dev_ep *ep,
                                       const struct efarm_dev_ah *prev)
{
    unsigned b = 0;

    if (prev) {
        if (prev->next)
            return prev->next;
        b = gid_bucket(prev->gid) + 1;
    }
    for (; b < AH_BUCKETS; b++)
        if (ep->ah_bucket[b])
            return ep->ah_bucket[b];
    return NULL;
}

void efarm_dev_ah_stats(const struct efarm_dev_ep *ep, struct efarm_dev_ah_stats *stats_p)
{
    *stats_p = (struct efarm_dev_ah_stats){.max = ep->ah_max,
                                           .share = ah_share(ep),
                                           .sharers = nic_sharers(),
                                           .capped = ep->ah_capped,
                                           .entries = ep->ah_entries,
                                           .live = ep->ah_live,
                                           .created = ep->ah_created,
                                           .released = ep->ah_released,
                                           .refused = ep->ah_refused};
}

uint16_t efarm_dev_ah_number(const struct efarm_dev_ah *ah)
{
    return ah->ahn;
}

/* ---- Memory registration ---------------------------------------------------------- */

int efarm_dev_mr_reg(struct efarm_dev_ep *ep, void *addr, size_t len, bool remote_read,
                     bool remote_write, struct efarm_dev_mr **mr_p)
{
    int access = IBV_ACCESS_LOCAL_WRITE | (remote_read ? IBV_ACCESS_REMOTE_READ : 0) |
                 (remote_write ? IBV_ACCESS_REMOTE_WRITE : 0);
    struct efarm_dev_mr *mr = efarm_dev_calloc(1, sizeof(*mr));

    if (!mr)
        return -ENOMEM;
    mr->ibv = (V->ibv_reg_mr)(ep->pd, addr, len, access);
    if (!mr->ibv) {
        int err = errno ? -errno : -ENOMEM;

        free(mr);
        return err;
    }
    pinned_add(mr->ibv);
    *mr_p = mr;
    return 0;
}

void efarm_dev_mr_dereg(struct efarm_dev_mr *mr)
{
    pinned_sub(mr->ibv);
    V->ibv_dereg_mr(mr->ibv);
    free(mr);
}

uint32_t efarm_dev_mr_lkey(const struct efarm_dev_mr *mr)
{
    return mr->ibv->lkey;
}

uint32_t efarm_dev_mr_rkey(const struct efarm_dev_mr *mr)
{
    return mr->ibv->rkey;
}

/* ---- Posting ------------------------------------------------------------------------ */

/* One send WR of a batch: its head and the data, inline when it fits. */
static inline void wr_send_one(struct efarm_dev_ep *ep, const struct efarm_dev_send *s)
{
    struct ibv_qp_ex *qpx = ep->qpx;
    uint64_t total = 0;

    for (uint32_t k = 0; k < s->nseg; k++)
        total += s->seg[k].len;
    efarm_dev_wr_send_head(qpx, s->ah, s->qpn, s->qkey, s->wr_id);
    if (total <= ep->caps.inline_size) {
        struct ibv_data_buf bufs[2];

        for (uint32_t k = 0; k < s->nseg; k++)
            bufs[k] = (struct ibv_data_buf){(void *)s->seg[k].addr, s->seg[k].len};
        ibv_wr_set_inline_data_list(qpx, s->nseg, bufs);
    } else {
        struct ibv_sge sge[2];

        for (uint32_t k = 0; k < s->nseg; k++)
            sge[k] = (struct ibv_sge){(uintptr_t)s->seg[k].addr, s->seg[k].len, s->seg[k].lkey};
        ibv_wr_set_sge_list(qpx, s->nseg, sge);
    }
}

int efarm_dev_post_send(struct efarm_dev_ep *ep, const struct efarm_dev_send *sends, unsigned n)
{
    if (ep->sq_used + n > ep->sq_depth)
        return -EAGAIN; /* queue and retry after the next poll */
    ibv_wr_start(ep->qpx);
    for (unsigned i = 0; i < n; i++)
        wr_send_one(ep, &sends[i]);
    return efarm_dev_wr_finish(ep, n);
}

int efarm_dev_post_send1(struct efarm_dev_ep *ep, struct efarm_dev_ah *ah, uint32_t qpn,
                         uint32_t qkey, uint64_t wr_id, const void *addr, uint32_t len,
                         uint32_t lkey)
{
    return efarm_dev_post_send1_inl(ep, ah, qpn, qkey, wr_id, addr, len, lkey);
}

/* An RDMA read or write (with its immediate when imm is not NULL). */
static int post_rdma(struct efarm_dev_ep *ep, bool write, struct efarm_dev_ah *ah, uint32_t qpn,
                     uint32_t qkey, const void *local, uint32_t len, uint32_t lkey, uint64_t raddr,
                     uint32_t rkey, const uint32_t *imm, uint64_t wr_id)
{
    struct ibv_qp_ex *qpx = ep->qpx;
    int ret;

    if (write ? !ep->caps.rdma_write : !ep->caps.rdma_read)
        return -EOPNOTSUPP;
    if (len > ep->caps.max_rdma_size)
        return EFARM_E(DEV_LOCAL_LENGTH);
    if (ep->sq_used == ep->sq_depth)
        return -EAGAIN;
    ibv_wr_start(qpx);
    qpx->wr_id = wr_id;
    qpx->wr_flags = IBV_SEND_SIGNALED;
    if (write && imm != NULL)
        ibv_wr_rdma_write_imm(qpx, rkey, raddr, *imm);
    else if (write)
        ibv_wr_rdma_write(qpx, rkey, raddr);
    else
        ibv_wr_rdma_read(qpx, rkey, raddr);
    ibv_wr_set_ud_addr(qpx, ah->ibv, qpn, qkey);
    ibv_wr_set_sge(qpx, lkey, (uintptr_t)local, len);
    ret = ibv_wr_complete(qpx);
    if (ret)
        return ret == ENOMEM ? -EAGAIN : -ret;
    ep->sq_used++;
    return 0;
}

int efarm_dev_post_read(struct efarm_dev_ep *ep, struct efarm_dev_ah *ah, uint32_t qpn,
                        uint32_t qkey, void *local, uint32_t len, uint32_t lkey, uint64_t raddr,
                        uint32_t rkey, uint64_t wr_id)
{
    return post_rdma(ep, false, ah, qpn, qkey, local, len, lkey, raddr, rkey, NULL, wr_id);
}

int efarm_dev_post_write(struct efarm_dev_ep *ep, struct efarm_dev_ah *ah, uint32_t qpn,
                         uint32_t qkey, const void *local, uint32_t len, uint32_t lkey,
                         uint64_t raddr, uint32_t rkey, uint64_t wr_id)
{
    return post_rdma(ep, true, ah, qpn, qkey, local, len, lkey, raddr, rkey, NULL, wr_id);
}

int efarm_dev_post_write_imm(struct efarm_dev_ep *ep, struct efarm_dev_ah *ah, uint32_t qpn,
                             uint32_t qkey, const void *local, uint32_t len, uint32_t lkey,
                             uint64_t raddr, uint32_t rkey, uint32_t imm, uint64_t wr_id)
{
    return post_rdma(ep, true, ah, qpn, qkey, local, len, lkey, raddr, rkey, &imm, wr_id);
}

/* ---- Receive pool ------------------------------------------------------------------- */

/* Post released buffers in batches of rx_refill (all of them when `all`). */
void efarm_dev_rx_refill(struct efarm_dev_ep *ep, bool all)
{
    while (ep->rx_nfree && (all || ep->rx_nfree >= ep->rx_refill)) {
        uint32_t n = ep->rx_nfree < ep->rx_refill ? ep->rx_nfree : ep->rx_refill;
        struct ibv_recv_wr *bad;

        for (uint32_t i = 0; i < n; i++) {
            uint32_t id = ep->rx_free[ep->rx_nfree - 1 - i];

            ep->rx_sges[i] =
                (struct ibv_sge){(uintptr_t)(ep->rx_mem + (size_t)id * ep->caps.max_msg_size),
                                 ep->caps.max_msg_size, ep->rx_mr->lkey};
            ep->rx_wrs[i] = (struct ibv_recv_wr){.wr_id = id,
                                                 .next = i + 1 < n ? &ep->rx_wrs[i + 1] : NULL,
                                                 .sg_list = &ep->rx_sges[i],
                                                 .num_sge = 1};
        }
        if (ibv_post_recv(ep->qp, ep->rx_wrs, &bad)) {
            /*
             * The WRs before *bad are posted (rdma-core's providers stop at the
             * first they refuse); the rest are kept for the next refill, and the
             * receiver applies back-pressure meanwhile.
             */
            uint32_t posted =
                bad >= ep->rx_wrs && bad < ep->rx_wrs + n ? (uint32_t)(bad - ep->rx_wrs) : 0;

            ep->rx_nfree -= posted;
            ep->rx_posted += posted;
            return;
        }
        ep->rx_nfree -= n;
        ep->rx_posted += n;
    }
}

void efarm_dev_rx_release(struct efarm_dev_ep *ep, uint32_t rx_id)
{
    efarm_dev_rx_release_inl(ep, rx_id);
}

unsigned efarm_dev_rx_posted(const struct efarm_dev_ep *ep)
{
    return ep->rx_posted;
}

/* ---- Polling ------------------------------------------------------------------------- */

int efarm_dev_poll(struct efarm_dev_ep *ep, struct efarm_dev_cqe *cqes, unsigned max)
{
    return max ? efarm_dev_poll_inl(ep, cqes, max) : 0;
}

/* ---- Registration cache on this endpoint ------------------------------------------- */

static int cache_reg(void *ctx, void *addr, size_t len, unsigned access, void **handle_p,
                     uint32_t *lkey_p, uint32_t *rkey_p)
{
    struct efarm_dev_ep *ep = ctx;
    struct ibv_mr *mr = (V->ibv_reg_mr)(ep->pd, addr, len, (int)access);

    if (!mr)
        return errno == ENOMEM || !errno ? -ENOMEM : -errno;
    pinned_add(mr);
    *handle_p = mr;
    *lkey_p = mr->lkey;
    *rkey_p = mr->rkey;
    return 0;
}

static void cache_dereg(void *ctx, void *handle)
{
    (void)ctx;
    pinned_sub(handle);
    V->ibv_dereg_mr(handle);
}

_Static_assert(EFARM_DEV_ACCESS_LOCAL_WRITE == IBV_ACCESS_LOCAL_WRITE &&
                   EFARM_DEV_ACCESS_REMOTE_WRITE == IBV_ACCESS_REMOTE_WRITE &&
                   EFARM_DEV_ACCESS_REMOTE_READ == IBV_ACCESS_REMOTE_READ,
               "EFARM_DEV_ACCESS_* are the verbs access bits");

static const struct efarm_mr_cache_ops g_dev_cache_ops = {.reg = cache_reg, .dereg = cache_dereg};

int efarm_dev_mr_cache_open(struct efarm_dev_ep *ep, struct efarm_mr_cache **cache_p)
{
    const struct efarm_config *cfg = efarm_config();
    uint64_t entries = cfg->mr_cache_max_entries, bytes = cfg->mr_cache_max_bytes;

    if (!entries) {
        entries = ep->caps.max_mr ? ep->caps.max_mr / 2 : 1024;
        entries = entries > 4096 ? 4096 : entries ? entries : 1;
    }
    if (!bytes) {
        bytes = 4ull << 30;
        if (ep->caps.max_mr_size && bytes > ep->caps.max_mr_size)
            bytes = ep->caps.max_mr_size;
    }
    return efarm_mr_cache_open(&g_dev_cache_ops, ep, (size_t)entries, (size_t)bytes, cache_p);
}
