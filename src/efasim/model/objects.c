/*
 * efasim's device model: the emulated devices, a process's contexts on them,
 * and the objects EFA's kernel driver keeps for a context (PDs, MRs, AHs), with
 * the checks and errnos it applies when they are made; the CQ's depth check.
 * QPs are in qp.c.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "efasim_model.h"

#define PDN_COUNT 65536 /* EFA's PD numbers are 16 bits */

static struct efasim_device g_devices[EFASIM_MAX_DEVICES];
static pthread_once_t g_devices_once = PTHREAD_ONCE_INIT;

uint64_t efasim_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The object tables' lock prefers readers: the service thread and the
 * application's threads read the tables all the time, and creating or
 * destroying an object may wait for a gap (efasim_model.h, "Concurrency").
 */
static int objs_lock_init(pthread_rwlock_t *lock)
{
    pthread_rwlockattr_t attr;
    int err;

    if (pthread_rwlockattr_init(&attr))
        return -1;
    err = pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_READER_NP) ||
          pthread_rwlock_init(lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    return err ? -1 : 0;
}

/* Under the context's fault_lock (fault.c). */
double efasim_rand01(struct efasim_context *ctx)
{
    /* xorshift64*: reproducible per context from EFASIM_SEED. */
    ctx->rng ^= ctx->rng >> 12;
    ctx->rng ^= ctx->rng << 25;
    ctx->rng ^= ctx->rng >> 27;
    return (double)((ctx->rng * 0x2545f4914f6cdd1dull) >> 11) / (double)(1ull << 53);
}

void efasim_gid_from_addr(struct in_addr addr, union ibv_gid *gid_p)
{
    memset(gid_p, 0, sizeof(*gid_p));
    gid_p->raw[10] = 0xff;
    gid_p->raw[11] = 0xff;
    memcpy(&gid_p->raw[12], &addr, 4);
}

bool efasim_gid_to_addr(const union ibv_gid *gid, struct in_addr *addr_p)
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

    if (memcmp(gid->raw, prefix, sizeof(prefix)))
        return false;
    memcpy(addr_p, &gid->raw[12], 4);
    return true;
}

/* ---- Devices -------------------------------------------------------------- */

static void devices_init(void)
{
    const struct efasim_config *cfg = efasim_config();

    for (unsigned i = 0; i < cfg->ndev; i++) {
        struct efasim_device *d = &g_devices[i];

        d->index = i;
        d->addr = cfg->addr[i];
        efasim_gid_from_addr(d->addr, &d->gid);
        d->guid = 0x0efa5100000000ull | (uint64_t)i;
        snprintf(d->name, sizeof(d->name), "efasim_%u", i);
        efasim_share_construct(&d->share);
    }
    /* What libfabric and rdma-core's tools read about the devices (sysfs.c). */
    efasim_sysfs_write(g_devices, cfg->ndev);
}

struct efasim_device *efasim_devices(unsigned *n_p)
{
    pthread_once(&g_devices_once, devices_init);
    *n_p = efasim_config()->ndev;
    return g_devices;
}

void efasim_device_attr(const struct efasim_device *dev, struct ibv_device_attr *attr_p)
{
    const struct efasim_config *cfg = efasim_config();

    memset(attr_p, 0, sizeof(*attr_p));
    snprintf(attr_p->fw_ver, sizeof(attr_p->fw_ver), "0.0.0.0");
    attr_p->node_guid = htobe64(dev->guid);
    attr_p->sys_image_guid = attr_p->node_guid;
    attr_p->max_mr_size = cfg->max_mr_size;
    attr_p->page_size_cap = 0xfffff000; /* 4 KiB to 2 GiB pages, as EFA reports */
    attr_p->vendor_id = EFASIM_VENDOR_ID;
    attr_p->vendor_part_id = cfg->device_id; /* the kernel's EFA driver: the PCI device id */
    attr_p->hw_ver = cfg->device_id;         /* EFA: the PCI subsystem device, not published */
    attr_p->max_qp = (int)cfg->max_qp;
    attr_p->max_qp_wr = (int)(cfg->max_sq_wr < cfg->max_rq_wr ? cfg->max_sq_wr : cfg->max_rq_wr);
    attr_p->max_sge = (int)(cfg->max_sq_sge < cfg->max_rq_sge ? cfg->max_sq_sge : cfg->max_rq_sge);
    attr_p->max_sge_rd = 1;
    attr_p->max_cq = (int)cfg->max_cq;
    attr_p->max_cqe = (int)cfg->max_cqe;
    attr_p->max_mr = (int)cfg->max_mr;
    attr_p->max_pd = 256;
    attr_p->max_ah = (int)cfg->max_ah;
    attr_p->max_pkeys = 1;
    attr_p->phys_port_cnt = 1;
}

void efasim_port_attr(struct ibv_port_attr *attr_p)
{
    memset(attr_p, 0, sizeof(*attr_p));
    attr_p->state = IBV_PORT_ACTIVE;
    attr_p->max_mtu = IBV_MTU_4096;
    attr_p->active_mtu = IBV_MTU_4096;
    attr_p->gid_tbl_len = 1;
    attr_p->max_msg_sz = efasim_config()->mtu;
    attr_p->pkey_tbl_len = 1;
    attr_p->lid = 0;
    attr_p->lmc = 1;
    attr_p->max_vl_num = 1;
    attr_p->active_width = 2; /* 4X, as EFA reports */
    attr_p->active_speed = 32;
    attr_p->phys_state = 5; /* LinkUp */
    attr_p->link_layer = IBV_LINK_LAYER_UNSPECIFIED;
}

/* ---- Contexts --------------------------------------------------------------- */

/* The context's tables and the context itself: the last step of closing it. */
static void context_free(struct efasim_context *ctx)
{
    free(ctx->qps);
    free(ctx->mrs);
    free(ctx->mr_gen);
    free(ctx->ahs);
    free(ctx->ahnums);
    free(ctx->pdns);
    free(ctx);
}

int efasim_context_open(struct efasim_device *dev, void *fe, struct efasim_context **ctx_p)
{
    const struct efasim_config *cfg = efasim_config();
    struct efasim_context *ctx;

    ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return -ENOMEM;
    ctx->qps = calloc(cfg->max_qp, sizeof(*ctx->qps));
    ctx->mrs = calloc(cfg->max_mr, sizeof(*ctx->mrs));
    ctx->mr_gen = calloc(cfg->max_mr, sizeof(*ctx->mr_gen));
    ctx->ahs = calloc(cfg->max_ah, sizeof(*ctx->ahs));
    ctx->ahnums = calloc(cfg->max_ah, sizeof(*ctx->ahnums));
    ctx->pdns = calloc(PDN_COUNT / 64, sizeof(*ctx->pdns));
    if (!ctx->qps || !ctx->mrs || !ctx->mr_gen || !ctx->ahs || !ctx->ahnums || !ctx->pdns)
        goto err_free;
    if (objs_lock_init(&ctx->objs))
        goto err_free;
    pthread_mutex_init(&ctx->fault_lock, NULL);
    ctx->dev = dev;
    ctx->fe = fe;
    ctx->rng = cfg->seed * 0x9e3779b97f4a7c15ull + (uint64_t)getpid() + 1;
    ctx->last_progress_ns = efasim_now_ns(); /* the NIC's clock starts running now */
    ctx->hwc = efasim_hw_counters_map(dev->name);
    if (efasim_tx_init(ctx))
        goto err_lock;
    if (efasim_service_start(ctx))
        goto err_tx;
    *ctx_p = ctx;
    return 0;

err_tx:
    efasim_tx_free(ctx);
err_lock:
    pthread_rwlock_destroy(&ctx->objs);
    pthread_mutex_destroy(&ctx->fault_lock);
    efasim_hw_counters_unmap(ctx->hwc);
err_free:
    context_free(ctx);
    return -ENOMEM;
}

int efasim_context_close(struct efasim_context *ctx, void (*release_fe)(void *fe))
{
    if (ctx->nqp)
        return -EBUSY;
    efasim_service_stop(ctx);
    efasim_tx_free(ctx);
    for (uint32_t i = 0; i < efasim_config()->max_mr; i++) {
        if (!ctx->mrs[i])
            continue;
        if (release_fe)
            release_fe(ctx->mrs[i]->fe);
        efasim_pin_release(&ctx->mrs[i]->pin); /* the kernel unpins what a closing file left */
        efasim_share_release(ctx->dev, EFASIM_SHARE_PAGES, ctx->mrs[i]->dev_pages,
                             ctx->mrs[i]->dev_epoch);
        free(ctx->mrs[i]);
    }
    for (uint32_t i = 0; i < efasim_config()->max_ah; i++) {
        if (ctx->ahs[i] && release_fe)
            release_fe(ctx->ahs[i]->fe);
        free(ctx->ahs[i]);
    }
    for (uint32_t i = 0; i < ctx->ahnum_slots_used; i++)
        if (ctx->ahnums[i].refs) /* the device forgets a closed context's AHs */
            efasim_share_release(ctx->dev, EFASIM_SHARE_AHNS, 1, ctx->ahnums[i].epoch);
    pthread_rwlock_destroy(&ctx->objs);
    pthread_mutex_destroy(&ctx->fault_lock);
    efasim_hw_counters_unmap(ctx->hwc);
    context_free(ctx);
    return 0;
}

/* ---- PDs -------------------------------------------------------------------- */

int efasim_pd_create(struct efasim_context *ctx, struct efasim_pd **pd_p)
{
    struct efasim_pd *pd = calloc(1, sizeof(*pd));
    uint32_t w;

    if (!pd)
        return -ENOMEM;
    pthread_rwlock_wrlock(&ctx->objs);
    for (w = 0; w < PDN_COUNT / 64 && ctx->pdns[w] == UINT64_MAX; w++)
        ;
    if (w == PDN_COUNT / 64) {
        pthread_rwlock_unlock(&ctx->objs);
        free(pd);
        return -ENOMEM; /* every PD number is taken */
    }
    pd->pdn = (uint16_t)(w * 64 + (uint32_t)__builtin_ctzll(~ctx->pdns[w]));
    ctx->pdns[w] |= 1ull << (pd->pdn % 64);
    pthread_rwlock_unlock(&ctx->objs);
    pd->ctx = ctx;
    *pd_p = pd;
    return 0;
}

bool efasim_pd_busy(const struct efasim_pd *pd)
{
    return __atomic_load_n(&pd->users, __ATOMIC_RELAXED) != 0;
}

void efasim_pd_destroy(struct efasim_pd *pd)
{
    struct efasim_context *ctx = pd->ctx;

    pthread_rwlock_wrlock(&ctx->objs);
    ctx->pdns[pd->pdn / 64] &= ~(1ull << (pd->pdn % 64));
    pthread_rwlock_unlock(&ctx->objs);
    free(pd);
}

/* ---- MRs -------------------------------------------------------------------- */

/*
 * An MR key fits in 24 bits, as EFA's work queue descriptors carry an lkey
 * (efa_io_defs.h: EFA_IO_TX_BUF_DESC_LKEY_MASK, EFA_IO_RX_DESC_LKEY_MASK): the
 * MR's slot + 1 (18 bits, never 0) above which sits the slot's generation (6
 * bits), which moves on when the slot's MR is deregistered. A key thus comes
 * back only with the 64th MR to take its slot after it. And slots are taken in
 * turn from where the last one was found (next fit), so a slot is taken again
 * only once the search has gone round the whole table: with EFA's 262144 MRs,
 * a deregistered MR's key matches nothing for millions of registrations.
 */
#define MR_SLOT_BITS 18 /* EFASIM_MAX_MR up to 2^18 (EFA's 262144) */
#define MR_GEN_BITS  6
#define MR_SLOT(key) (((key) & ((1u << MR_SLOT_BITS) - 1)) - 1)
_Static_assert(MR_SLOT_BITS + MR_GEN_BITS == 24, "MR keys are 24 bits, as EFA's descriptors");

struct efasim_mr *efasim_mr_check(struct efasim_context *ctx, uint32_t key, uint64_t addr,
                                  uint64_t len, unsigned access)
{
    uint32_t slot = MR_SLOT(key);
    struct efasim_mr *mr;

    if (slot >= efasim_config()->max_mr)
        return NULL;
    mr = ctx->mrs[slot];
    if (!mr || mr->lkey != key || (mr->access & access) != access)
        return NULL;
    if (addr < mr->addr || len > mr->length || addr - mr->addr > mr->length - len)
        return NULL;
    return mr;
}

/*
 * As EFA's kernel driver: optional flags (relaxed ordering) are dropped, a
 * flag the device does not offer is EOPNOTSUPP, and remote write without
 * local write is EINVAL (ib_check_mr_access). Nothing is granted unasked.
 */
static int mr_access_refusal(unsigned *access)
{
    const struct efasim_config *cfg = efasim_config();

    *access &= ~(unsigned)IBV_ACCESS_OPTIONAL_RANGE;
    if (*access &
        ~(unsigned)(IBV_ACCESS_LOCAL_WRITE | (cfg->rdma_read ? IBV_ACCESS_REMOTE_READ : 0) |
                    (cfg->rdma_write ? IBV_ACCESS_REMOTE_WRITE : 0)))
        return -EOPNOTSUPP;
    if ((*access & IBV_ACCESS_REMOTE_WRITE) && !(*access & IBV_ACCESS_LOCAL_WRITE))
        return -EINVAL;
    return 0;
}

int efasim_mr_reg_dmabuf(struct efasim_pd *pd, uint64_t offset, uint64_t length, uint64_t iova,
                         int fd, unsigned access)
{
    long page = sysconf(_SC_PAGESIZE);
    int err;

    (void)pd, (void)length;
    /* ib_uverbs_reg_dmabuf_mr: the offset and the IOVA must agree within a page. */
    if ((offset & (uint64_t)(page - 1)) != (iova & (uint64_t)(page - 1)))
        return -EINVAL;
    err = mr_access_refusal(&access);
    if (err)
        return err;
    /* dma_buf_get: no open file is EBADF, a file that is no dma-buf EINVAL. efasim
     * exports no device memory, so no descriptor is one. */
    if (fd < 0 || fcntl(fd, F_GETFD) < 0)
        return -EBADF;
    return -EINVAL;
}

/*
 * The device's part of a registration (EFA's admin command REG_MR, as
 * efa_register_mr issues it), under the tables' lock: no free slot is the
 * device's resource error, which efa_com_comp_status_to_errno makes -ENOMEM.
 */
static int mr_slot_take(struct efasim_context *ctx, uint32_t *slot_p)
{
    const struct efasim_config *cfg = efasim_config();
    uint32_t slots =
        cfg->max_mr < (1u << MR_SLOT_BITS) - 1 ? cfg->max_mr : (1u << MR_SLOT_BITS) - 1;
    uint32_t slot = 0, n;

    for (n = 0; n < slots; n++) {
        slot = (ctx->mr_next + n) % slots;
        if (!ctx->mrs[slot])
            break;
    }
    if (n == slots)
        return -ENOMEM; /* as the device does when its MR table is full */
    *slot_p = slot;
    return 0;
}

int efasim_mr_reg(struct efasim_pd *pd, uint64_t addr, uint64_t length, uint64_t iova,
                  unsigned access, unsigned flags, struct efasim_mr **mr_p)
{
    struct efasim_context *ctx = pd->ctx;
    struct efasim_mr *mr;
    struct efasim_pin pin;
    uint32_t slot;
    int err;

    if (iova != addr || (!addr && length))
        return -EINVAL;               /* efasim maps RDMA addresses 1:1 to virtual addresses */
    err = mr_access_refusal(&access); /* efa_alloc_mr, before the memory is pinned */
    if (err)
        return err;
    /* ib_umem_get: RLIMIT_MEMLOCK against the process's pinned pages (pinned.c). */
    err = efasim_pin_charge(addr, length, flags & EFASIM_MR_UMEM_STRICT, &pin);
    if (err)
        return err;
    if (length > efasim_config()->max_mr_size) {
        err = -EINVAL; /* EFA refuses an MR beyond max_mr_size */
        goto err_unpin;
    }
    mr = calloc(1, sizeof(*mr));
    if (!mr) {
        err = -ENOMEM;
        goto err_unpin;
    }
    mr->ctx = ctx;
    mr->pd = pd;
    mr->addr = addr;
    mr->length = length;
    mr->access = access;
    mr->pin = pin;
    mr->dev_pages = efasim_device_pages(addr, length); /* reads /proc: outside the lock */
    /*
     * The pages the device is given, beyond what it holds for every process's
     * MRs: the device's resource error, -ENOMEM (efa_com_comp_status_to_errno).
     * Its budget is the device's own and not published (README, "Registered
     * memory"); devshare.c sums every process's.
     */
    /*
     * One MR open to remote write takes at most 2^20 device pages (4 GiB of
     * 4 KiB pages; ofiwg/libfabric pull request #10402, "The EFA limit for single
     * MR that enables remote write is 1M pages"). The device refuses REG_MR
     * then; how is not published, and its refusals of REG_MR seen in the field
     * are RESOURCE_ALLOCATION_FAILURE (comp_status 1, -ENOMEM: kernel logs in
     * NVIDIA/nccl issue #563), so -ENOMEM.
     */
    if ((access & IBV_ACCESS_REMOTE_WRITE) && mr->dev_pages > efasim_config()->max_rw_mr_pages) {
        err = -ENOMEM;
        goto err_free;
    }
    err = efasim_share_charge(ctx->dev, EFASIM_SHARE_PAGES, mr->dev_pages,
                              efasim_config()->max_reg_pages, &mr->dev_epoch);
    if (err)
        goto err_free;
    pthread_rwlock_wrlock(&ctx->objs);
    err = mr_slot_take(ctx, &slot);
    if (err) {
        pthread_rwlock_unlock(&ctx->objs);
        efasim_share_release(ctx->dev, EFASIM_SHARE_PAGES, mr->dev_pages, mr->dev_epoch);
        goto err_free;
    }
    mr->lkey = (uint32_t)ctx->mr_gen[slot] << MR_SLOT_BITS | (slot + 1);
    mr->rkey = mr->lkey;
    ctx->mrs[slot] = mr;
    ctx->mr_next = slot + 1;
    ctx->nmr++;
    __atomic_add_fetch(&pd->users, 1, __ATOMIC_RELAXED);
    pthread_rwlock_unlock(&ctx->objs);
    *mr_p = mr;
    return 0;

err_free:
    free(mr);
err_unpin:
    efasim_pin_release(&pin);
    return err;
}

void efasim_mr_dereg(struct efasim_mr *mr)
{
    struct efasim_context *ctx = mr->ctx;

    uint32_t slot = MR_SLOT(mr->lkey);

    pthread_rwlock_wrlock(&ctx->objs);
    ctx->mrs[slot] = NULL;
    ctx->mr_gen[slot] = (ctx->mr_gen[slot] + 1) & ((1u << MR_GEN_BITS) - 1);
    ctx->nmr--;
    __atomic_sub_fetch(&mr->pd->users, 1, __ATOMIC_RELAXED);
    pthread_rwlock_unlock(&ctx->objs);
    efasim_share_release(ctx->dev, EFASIM_SHARE_PAGES, mr->dev_pages, mr->dev_epoch);
    efasim_pin_release(&mr->pin); /* ib_umem_release */
    free(mr);
}

/* ---- AHs -------------------------------------------------------------------- */

uint16_t efasim_ahn_for_gid(struct efasim_context *ctx, const struct efasim_pd *pd,
                            const union ibv_gid *gid)
{
    for (uint32_t i = 0; i < ctx->ahnum_slots_used; i++) {
        const struct efasim_ahnum *n = &ctx->ahnums[i];

        if (n->refs && n->pd == pd && !memcmp(n->gid.raw, gid->raw, sizeof(gid->raw)))
            return (uint16_t)(i + 1);
    }
    return EFASIM_AHN_UNKNOWN;
}

int efasim_ahn_gid(const struct efasim_pd *pd, uint16_t ahn, union ibv_gid *gid_p)
{
    const struct efasim_context *ctx = pd->ctx;
    const struct efasim_ahnum *n;

    if (!ahn || ahn > ctx->ahnum_slots_used)
        return -EINVAL;
    n = &ctx->ahnums[ahn - 1];
    if (!n->refs || n->pd != pd)
        return -EINVAL;
    *gid_p = n->gid;
    return 0;
}

/* The number for (pd, gid): the existing one, or a free one. 0 when the table is full. */
static uint16_t ahnum_get(struct efasim_context *ctx, const struct efasim_pd *pd,
                          const union ibv_gid *gid)
{
    uint32_t n = efasim_config()->max_ah < 0xfffe ? efasim_config()->max_ah : 0xfffe;
    uint16_t ahn = efasim_ahn_for_gid(ctx, pd, gid);
    uint32_t i, epoch;

    if (ahn != EFASIM_AHN_UNKNOWN) {
        ctx->ahnums[ahn - 1].refs++;
        return ahn;
    }
    for (i = 0; i < n && ctx->ahnums[i].refs; i++)
        ;
    if (i == n)
        return 0;
    /* The device's table holds max_ah, whichever process's contexts hold them (devshare.c). */
    if (efasim_share_charge(ctx->dev, EFASIM_SHARE_AHNS, 1, efasim_config()->max_ah, &epoch))
        return 0;
    ctx->ahnums[i] = (struct efasim_ahnum){.pd = pd, .gid = *gid, .refs = 1, .epoch = epoch};
    if (i >= ctx->ahnum_slots_used)
        ctx->ahnum_slots_used = i + 1;
    return (uint16_t)(i + 1);
}

int efasim_ah_create(struct efasim_pd *pd, const union ibv_gid *gid, struct efasim_ah **ah_p)
{
    struct efasim_context *ctx = pd->ctx;
    const struct efasim_config *cfg = efasim_config();
    struct efasim_ah *ah;
    struct in_addr unused;
    uint32_t slot;
    uint16_t ahn;

    if (!efasim_gid_to_addr(gid, &unused))
        return -EINVAL; /* no emulated device has that GID */
    ah = calloc(1, sizeof(*ah));
    if (!ah)
        return -ENOMEM;
    pthread_rwlock_wrlock(&ctx->objs);
    for (slot = 0; slot < cfg->max_ah; slot++)
        if (!ctx->ahs[slot])
            break;
    ahn = slot < cfg->max_ah ? ahnum_get(ctx, pd, gid) : 0;
    if (!ahn) {
        pthread_rwlock_unlock(&ctx->objs);
        free(ah);
        /*
         * The device's AH table is full: its admin command fails with
         * RESOURCE_ALLOCATION_FAILURE, which Linux's efa_com.c
         * (efa_com_comp_status_to_errno) returns as -ENOMEM. The table's size
         * is max_ah (efa_query_device); EFA publishes no number per device, so
         * EFASIM_MAX_AH's 1024 is efasim's choice.
         */
        return -ENOMEM;
    }
    ah->ctx = ctx;
    ah->pd = pd;
    ah->gid = *gid;
    ah->ahn = ahn;
    ah->index = slot;
    ctx->ahs[slot] = ah;
    ctx->nah++;
    __atomic_add_fetch(&pd->users, 1, __ATOMIC_RELAXED);
    pthread_rwlock_unlock(&ctx->objs);
    *ah_p = ah;
    return 0;
}

void efasim_ah_destroy(struct efasim_ah *ah)
{
    struct efasim_context *ctx = ah->ctx;

    pthread_rwlock_wrlock(&ctx->objs);
    ctx->ahs[ah->index] = NULL;
    if (--ctx->ahnums[ah->ahn - 1].refs == 0)
        efasim_share_release(ctx->dev, EFASIM_SHARE_AHNS, 1, ctx->ahnums[ah->ahn - 1].epoch);
    ctx->nah--;
    __atomic_sub_fetch(&ah->pd->users, 1, __ATOMIC_RELAXED);
    pthread_rwlock_unlock(&ctx->objs);
    free(ah);
}

/* ---- CQs -------------------------------------------------------------------- */

int efasim_cq_construct(struct efasim_cq *cq, struct efasim_context *ctx, uint32_t depth,
                        const struct efasim_cq_ops *ops, void *fe)
{
    if (!depth || depth > efasim_config()->max_cqe)
        return -EINVAL;
    cq->ctx = ctx;
    cq->ops = ops;
    cq->fe = fe;
    return 0;
}
