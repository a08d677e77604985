/*
 * libefa's functions of rdma-core 64's version nodes EFA_1.3 to EFA_1.6, and
 * 64's longer structures in EFA_1.1's and EFA_1.2's, as efasim's drop-in
 * answers them: what each fills in, and each refusal with rdma-core 64's
 * errno (a device that is not EFA's, a short inlen, a comp_mask, what the
 * device lacks). The system's headers are rdma-core 44's, so 64's structures
 * are spelt out here (efadv64_*, sizes pinned) and its functions are looked up
 * at their version nodes.
 *
 * The same tests run under the real rdma-core 64 on the kernel front end
 * (its libraries first on LD_LIBRARY_PATH, `efasim-info --run=kernel`), which
 * checks the drop-in against it: there only the direct data path's queries
 * answer otherwise (the queues are in the process's memory). Under the
 * system's rdma-core 44 they are skipped.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "efarm_errno.h"
#include "efasim_common.h"

/* ---- rdma-core 64's efadv.h, as far as these tests use it ---------------------- */

#define EFADV64_CAPS_RDMA_READ                  (1u << 0)
#define EFADV64_CAPS_RNR_RETRY                  (1u << 1)
#define EFADV64_CAPS_CQ_WITH_SGID               (1u << 2)
#define EFADV64_CAPS_RDMA_WRITE                 (1u << 3)
#define EFADV64_CAPS_UNSOLICITED_WRITE_RECV     (1u << 4)
#define EFADV64_CAPS_CQ_WITH_EXT_MEM_DMABUF     (1u << 5)
#define EFADV64_QP_FLAGS_UNSOLICITED_WRITE_RECV (1u << 0)
#define EFADV64_QP_FLAGS_INLINE_WRITE           (1u << 1)
#define EFADV64_WR_EX_WITH_PROCESSING_HINTS     (1ull << 0)
#define EFADV64_WR_PROCESSING_HINT_BURST_PPS    (1u << 0)
#define EFADV64_WC_EX_WITH_IS_UNSOLICITED       (1ull << 1)
#define EFADV64_CQ_INIT_FLAGS_EXT_MEM_DMABUF    (1ull << 0)
#define EFADV64_SQ_DEPTH_ATTR_INLINE_WRITE      (1u << 0)
#define EFADV64_MR_ATTR_VALIDITY_ALL            0x7u

struct efadv64_device_attr {
    uint64_t comp_mask;
    uint32_t max_sq_wr;
    uint32_t max_rq_wr;
    uint16_t max_sq_sge;
    uint16_t max_rq_sge;
    uint16_t inline_buf_size;
    uint16_t inline_buf_size_ex;
    uint32_t device_caps;
    uint32_t max_rdma_size;
};

struct efadv64_qp_init_attr {
    uint64_t comp_mask;
    uint32_t driver_qp_type;
    uint16_t flags;
    uint8_t sl;
    uint8_t reserved;
    uint64_t wr_flags;
};

struct efadv64_wq_attr {
    uint64_t comp_mask;
    uint8_t *buffer;
    uint32_t entry_size;
    uint32_t num_entries;
    uint32_t *doorbell;
    uint32_t max_batch;
    uint8_t reserved[4];
};

struct efadv64_qp {
    uint64_t comp_mask;
    void (*wr_set_processing_hints)(struct efadv64_qp *qp, uint32_t hints);
};

struct efadv64_cq_init_attr {
    uint64_t comp_mask;
    uint64_t wc_flags;
    uint64_t flags;
    struct {
        uint8_t *buffer;
        uint64_t length;
        uint64_t offset;
        int32_t fd;
        uint8_t reserved[4];
    } ext_mem_dmabuf;
};

struct efadv64_cq_attr {
    uint64_t comp_mask;
    uint8_t *buffer;
    uint32_t entry_size;
    uint32_t num_entries;
    uint32_t *doorbell;
};

struct efadv64_cq {
    uint64_t comp_mask;
    int (*wc_read_sgid)(struct efadv_cq *cq, union ibv_gid *sgid);
    bool (*wc_is_unsolicited)(struct efadv_cq *cq);
};

struct efadv64_mr_attr {
    uint64_t comp_mask;
    uint16_t ic_id_validity;
    uint16_t recv_ic_id;
    uint16_t rdma_read_ic_id;
    uint16_t rdma_recv_ic_id;
};

struct efadv64_sq_depth_attr {
    uint64_t comp_mask;
    uint32_t flags;
    uint32_t max_send_sge;
    uint32_t max_rdma_sge;
    uint32_t max_inline_data;
};

struct efadv64_rq_depth_attr {
    uint64_t comp_mask;
    uint32_t max_recv_sge;
};

/* rdma-core 64.0's sizes on x86-64. */
_Static_assert(sizeof(struct efadv64_device_attr) == 32, "");
_Static_assert(sizeof(struct efadv64_qp_init_attr) == 24, "");
_Static_assert(offsetof(struct efadv64_qp_init_attr, sl) == 14, "");
_Static_assert(sizeof(struct efadv64_wq_attr) == 40, "");
_Static_assert(sizeof(struct efadv64_qp) == 16, "");
_Static_assert(sizeof(struct efadv64_cq_init_attr) == 56, "");
_Static_assert(sizeof(struct efadv64_cq_attr) == 32, "");
_Static_assert(sizeof(struct efadv64_cq) == 24, "");
_Static_assert(sizeof(struct efadv64_mr_attr) == 16, "");
_Static_assert(sizeof(struct efadv64_sq_depth_attr) == 24, "");
_Static_assert(sizeof(struct efadv64_rq_depth_attr) == 16, "");

/*
 * rdma-core's inlen rule (vext_field_avail): a field is there when inlen holds
 * its first byte. FIELD_END is where a field ends.
 */
#define FIELD_END(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

/* ---- Finding 64's functions ------------------------------------------------------ */

/*
 * A function of the libefa.so.1 loaded in this process at its version node:
 * missing on the drop-in fails the test; missing under the system's rdma-core
 * (44, on the kernel front end) skips it.
 */
static void *efa64_sym(const char *name, const char *version)
{
    void *h = dlopen("libefa.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *sym = h ? dlvsym(h, name, version) : NULL;

    if (h)
        dlclose(h);
    if (!sym && efasim_kernel_front_end())
        efarm_test_skip("libefa has no %s@%s: rdma-core before 64's nodes", name, version);
    if (!sym)
        efarm_test_fail(__FILE__, __LINE__, "%s@%s is not exported", name, version);
    return sym;
}

/* The test is of rdma-core 64's libefa: skipped under an older one (see efa64_sym). */
static void efa64_require(void)
{
    (void)efa64_sym("efadv_qp_from_ibv_qp_ex", "EFA_1.6");
}

typedef int (*query_mr_fn)(struct ibv_mr *, struct efadv64_mr_attr *, uint32_t);
typedef int (*query_qp_wqs_fn)(struct ibv_qp *, struct efadv64_wq_attr *, struct efadv64_wq_attr *,
                               uint32_t);
typedef int (*query_cq_fn)(struct ibv_cq *, struct efadv64_cq_attr *, uint32_t);
typedef int (*sq_depth_fn)(struct ibv_context *, struct efadv64_sq_depth_attr *, uint32_t);
typedef int (*rq_depth_fn)(struct ibv_context *, struct efadv64_rq_depth_attr *, uint32_t);
typedef struct efadv64_qp *(*qp_from_fn)(struct ibv_qp_ex *);

static query_mr_fn query_mr(void)
{
    return (query_mr_fn)efa64_sym("efadv_query_mr", "EFA_1.3");
}

static query_qp_wqs_fn query_qp_wqs(void)
{
    return (query_qp_wqs_fn)efa64_sym("efadv_query_qp_wqs", "EFA_1.4");
}

static query_cq_fn query_cq(void)
{
    return (query_cq_fn)efa64_sym("efadv_query_cq", "EFA_1.4");
}

static sq_depth_fn max_sq_depth(void)
{
    return (sq_depth_fn)efa64_sym("efadv_get_max_sq_depth", "EFA_1.5");
}

static rq_depth_fn max_rq_depth(void)
{
    return (rq_depth_fn)efa64_sym("efadv_get_max_rq_depth", "EFA_1.5");
}

static qp_from_fn qp_from_ibv_qp_ex(void)
{
    return (qp_from_fn)efa64_sym("efadv_qp_from_ibv_qp_ex", "EFA_1.6");
}

/*
 * A context whose device is not EFA's (the drop-in has only efasim's devices,
 * so one is made up). It is a whole zeroed verbs_context with the extended
 * ABI mark, and the device has zeroed room after it, so that rdma-core, which
 * looks at the verbs_device around the device and logs through the verbs
 * context, reads only zeros and names there.
 */
struct not_efa {
    struct {
        struct ibv_device dev;
        uint8_t room[4096];
    } device;
    struct verbs_context vctx;
    struct ibv_pd pd;
    struct ibv_mr mr;
    struct ibv_ah ah;
    struct ibv_cq cq;
    struct ibv_qp qp;
};

static void not_efa_make(struct not_efa *n)
{
    memset(n, 0, sizeof(*n));
    strcpy(n->device.dev.name, "not_efa_0");
    n->vctx.context.device = &n->device.dev;
    n->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
    n->pd.context = n->mr.context = n->ah.context = n->cq.context = n->qp.context =
        &n->vctx.context;
}

/* ---- Objects ---------------------------------------------------------------------- */

/* efadv_create_qp_ex with 64's structure and inlen: the QP, or NULL and errno (cleared first). */
static struct ibv_qp *create_qp64(struct efasim_dev *dev, struct ibv_qp_init_attr_ex *attr,
                                  const void *efa, uint32_t inlen)
{
    errno = 0;
    return efadv_create_qp_ex(dev->ctx, attr, (struct efadv_qp_init_attr *)efa, inlen);
}

/* Creation is refused with want; nothing is left behind. */
static void expect_qp_refused(struct efasim_dev *dev, struct ibv_qp_init_attr_ex *attr,
                              const void *efa, uint32_t inlen, int want)
{
    struct ibv_qp *qp = create_qp64(dev, attr, efa, inlen);

    if (qp) {
        ibv_destroy_qp(qp);
        efarm_test_fail(__FILE__, __LINE__, "QP created where errno %d (%s) was due", want,
                        strerror(want));
    }
    EXPECT_RET(errno, want);
}

static void expect_qp_created(struct efasim_dev *dev, struct ibv_qp_init_attr_ex *attr,
                              const void *efa, uint32_t inlen)
{
    struct ibv_qp *qp = create_qp64(dev, attr, efa, inlen);

    if (!qp)
        efarm_test_fail(__FILE__, __LINE__, "efadv_create_qp_ex(inlen %u): %s", inlen,
                        strerror(errno));
    EXPECT_EQ(ibv_destroy_qp(qp), 0);
}

/* ---- EFA_1.1 and EFA_1.2 with 64's structures ------------------------------------ */

/*
 * efadv_query_device: 64 needs inlen to hold inline_buf_size_ex (44's 22
 * bytes are short), which is inline_buf_size where the device reports no
 * other; RDMA write, like RDMA read, only where inlen reaches max_rdma_size;
 * no unsolicited write receive nor external CQ memory.
 */
EFARM_TEST(efasim_efadv64_query_device)
{
    struct efadv64_device_attr attr;
    struct efasim_dev dev;

    efasim_setenv("EFASIM_RDMA_WRITE", "1");
    efa64_require();
    efasim_dev_open(0, &dev);

    memset(&attr, 0xff, sizeof(attr));
    EXPECT_RET(efadv_query_device(dev.ctx, (struct efadv_device_attr *)&attr,
                                  offsetof(struct efadv64_device_attr, inline_buf_size_ex)),
               EINVAL);
    EXPECT_EQ(attr.max_sq_wr, 0xffffffffu); /* refused: nothing written */
    /* One byte of a field is enough, and the field is written whole. */
    EXPECT_RET(efadv_query_device(dev.ctx, (struct efadv_device_attr *)&attr,
                                  offsetof(struct efadv64_device_attr, inline_buf_size_ex) + 1),
               0);
    EXPECT_EQ(attr.inline_buf_size_ex, EFASIM_DEFAULT_INLINE);

    EXPECT_RET(efadv_query_device(dev.ctx, (struct efadv_device_attr *)&attr,
                                  FIELD_END(struct efadv64_device_attr, inline_buf_size_ex)),
               0);
    EXPECT_EQ(attr.comp_mask, 0);
    EXPECT_EQ(attr.max_sq_wr, EFASIM_DEFAULT_MAX_SQ_WR);
    EXPECT_EQ(attr.max_rq_sge, EFASIM_DEFAULT_MAX_RQ_SGE);
    EXPECT_EQ(attr.inline_buf_size, EFASIM_DEFAULT_INLINE);
    EXPECT_EQ(attr.inline_buf_size_ex, EFASIM_DEFAULT_INLINE);
    EXPECT_EQ(attr.device_caps, 0xffffffffu); /* beyond inlen: untouched */

    memset(&attr, 0xff, sizeof(attr));
    EXPECT_RET(efadv_query_device(dev.ctx, (struct efadv_device_attr *)&attr,
                                  FIELD_END(struct efadv64_device_attr, device_caps)),
               0);
    EXPECT_EQ(attr.device_caps, EFADV64_CAPS_RNR_RETRY | EFADV64_CAPS_CQ_WITH_SGID);
    EXPECT_EQ(attr.max_rdma_size, 0xffffffffu);

    memset(&attr, 0xff, sizeof(attr));
    EXPECT_RET(efadv_query_device(dev.ctx, (struct efadv_device_attr *)&attr, sizeof(attr)), 0);
    EXPECT_EQ(attr.device_caps, EFADV64_CAPS_RNR_RETRY | EFADV64_CAPS_CQ_WITH_SGID |
                                    EFADV64_CAPS_RDMA_READ | EFADV64_CAPS_RDMA_WRITE);
    EXPECT_EQ(attr.max_rdma_size, EFASIM_DEFAULT_MAX_RDMA);
    efasim_dev_close(&dev);
}

/*
 * efadv_create_qp_ex with 64's 24 bytes: a service level the device does not
 * offer, flags it does not offer and unknown wr_flags EOPNOTSUPP (libfabric
 * 2.6 retries its low-latency sl 8 with 0); the reserved byte, a comp_mask or
 * unknown trailing bytes EINVAL; the processing hints accepted.
 */
EFARM_TEST(efasim_efadv64_create_qp_ex)
{
    struct efadv64_qp_init_attr efa;
    struct ibv_qp_init_attr_ex attr;
    struct efasim_dev dev;
    struct ibv_cq_ex *cq;
    uint8_t longer[32];

    efa64_require();
    efasim_dev_open(0, &dev);
    cq = efasim_cq_create(&dev, 64);
    attr = efasim_srd_qp_attr(&dev, cq, IBV_QP_EX_WITH_SEND);

    memset(&efa, 0, sizeof(efa));
    expect_qp_created(&dev, &attr, &efa, sizeof(efa));
    efa.wr_flags = EFADV64_WR_EX_WITH_PROCESSING_HINTS;
    expect_qp_created(&dev, &attr, &efa, sizeof(efa));
    efa.sl = 8;
    expect_qp_refused(&dev, &attr, &efa, sizeof(efa), EOPNOTSUPP);
    /* rdma-core's own limits come before the kernel's look at the sl. */
    attr.cap.max_send_wr = 1u << 20;
    expect_qp_refused(&dev, &attr, &efa, sizeof(efa), EINVAL);
    attr.cap.max_send_wr = 16;
    attr.cap.max_send_sge = EFASIM_DEFAULT_MAX_SQ_SGE + 1;
    expect_qp_refused(&dev, &attr, &efa, sizeof(efa), EINVAL);
    attr.cap.max_send_sge = 1;
    attr.cap.max_inline_data = EFASIM_DEFAULT_INLINE + 1;
    expect_qp_refused(&dev, &attr, &efa, sizeof(efa), EINVAL);
    attr.cap.max_inline_data = 0;
    efa.sl = 0;

    efa.wr_flags = 1ull << 1;
    expect_qp_refused(&dev, &attr, &efa, sizeof(efa), EOPNOTSUPP);
    /* Checked before the CQs (EINVAL), as efa_check_qp_attr orders them. */
    attr.send_cq = NULL;
    expect_qp_refused(&dev, &attr, &efa, sizeof(efa), EOPNOTSUPP);
    efa.wr_flags = 0;
    expect_qp_refused(&dev, &attr, &efa, sizeof(efa), EINVAL);
    attr.send_cq = ibv_cq_ex_to_cq(cq);

    efa.flags = EFADV64_QP_FLAGS_UNSOLICITED_WRITE_RECV;
    expect_qp_refused(&dev, &attr, &efa, sizeof(efa), EOPNOTSUPP);
    efa.flags = EFADV64_QP_FLAGS_INLINE_WRITE; /* no RDMA write on this device */
    expect_qp_refused(&dev, &attr, &efa, sizeof(efa), EOPNOTSUPP);
    efa.flags = 0;

    efa.reserved = 1;
    expect_qp_refused(&dev, &attr, &efa, sizeof(efa), EINVAL);
    efa.reserved = 0;
    efa.comp_mask = 1;
    expect_qp_refused(&dev, &attr, &efa, sizeof(efa), EINVAL);
    efa.comp_mask = 0;
    efa.driver_qp_type = 1;
    expect_qp_refused(&dev, &attr, &efa, sizeof(efa), EOPNOTSUPP);
    efa.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD;

    /* A caller's longer structure: its tail must be zero. */
    memset(longer, 0, sizeof(longer));
    memcpy(longer, &efa, sizeof(efa));
    expect_qp_created(&dev, &attr, longer, sizeof(longer));
    longer[sizeof(longer) - 1] = 1;
    expect_qp_refused(&dev, &attr, longer, sizeof(longer), EINVAL);
    /* Without driver_qp_type; with its first byte only (the rest read as zero). */
    expect_qp_refused(&dev, &attr, &efa, offsetof(struct efadv64_qp_init_attr, driver_qp_type),
                      EINVAL);
    expect_qp_created(&dev, &attr, &efa, offsetof(struct efadv64_qp_init_attr, driver_qp_type) + 1);

    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
    efasim_dev_close(&dev);
}

/*
 * efadv_create_cq with 64's 56 bytes: a CQ in the caller's dma-buf is what the
 * device cannot do (EOPNOTSUPP), other flags bits are ignored, unknown
 * trailing bytes EINVAL, IS_UNSOLICITED EOPNOTSUPP; 64's efadv_cq has no
 * wc_is_unsolicited.
 */
EFARM_TEST(efasim_efadv64_create_cq)
{
    struct efadv64_cq_init_attr efa;
    struct ibv_cq_init_attr_ex attr;
    struct efasim_dev dev;
    struct efadv64_cq *dv;
    struct ibv_cq_ex *cq;
    uint8_t longer[64];

    efa64_require();
    efasim_dev_open(0, &dev);
    memset(&attr, 0, sizeof(attr));
    attr.cqe = 16;

    memset(&efa, 0, sizeof(efa));
    efa.wc_flags = EFADV_WC_EX_WITH_SGID;
    cq = efadv_create_cq(dev.ctx, &attr, (struct efadv_cq_init_attr *)&efa, sizeof(efa));
    EXPECT_TRUE(cq != NULL);
    dv = (struct efadv64_cq *)efadv_cq_from_ibv_cq_ex(cq);
    EXPECT_EQ(dv->comp_mask, 0);
    EXPECT_TRUE(dv->wc_read_sgid != NULL);
    EXPECT_TRUE(dv->wc_is_unsolicited == NULL);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);

    efa.flags = EFADV64_CQ_INIT_FLAGS_EXT_MEM_DMABUF;
    efa.ext_mem_dmabuf.fd = -1;
    errno = 0;
    EXPECT_TRUE(efadv_create_cq(dev.ctx, &attr, (struct efadv_cq_init_attr *)&efa, sizeof(efa)) ==
                NULL);
    EXPECT_RET(errno, EOPNOTSUPP);
    memset(&efa.ext_mem_dmabuf, 0, sizeof(efa.ext_mem_dmabuf));
    efa.flags = 1ull << 1;
    cq = efadv_create_cq(dev.ctx, &attr, (struct efadv_cq_init_attr *)&efa, sizeof(efa));
    EXPECT_TRUE(cq != NULL);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
    efa.flags = 0;

    efa.wc_flags = EFADV64_WC_EX_WITH_IS_UNSOLICITED;
    errno = 0;
    EXPECT_TRUE(efadv_create_cq(dev.ctx, &attr, (struct efadv_cq_init_attr *)&efa, sizeof(efa)) ==
                NULL);
    EXPECT_RET(errno, EOPNOTSUPP);
    efa.wc_flags = 0;

    memset(longer, 0, sizeof(longer));
    memcpy(longer, &efa, sizeof(efa));
    cq = efadv_create_cq(dev.ctx, &attr, (struct efadv_cq_init_attr *)longer, sizeof(longer));
    EXPECT_TRUE(cq != NULL);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
    longer[sizeof(longer) - 1] = 1;
    errno = 0;
    EXPECT_TRUE(efadv_create_cq(dev.ctx, &attr, (struct efadv_cq_init_attr *)longer,
                                sizeof(longer)) == NULL);
    EXPECT_RET(errno, EINVAL);
    efasim_dev_close(&dev);
}

/* ---- EFA_1.3 to EFA_1.6 ---------------------------------------------------------- */

/*
 * efadv_query_mr: inlen must hold rdma_recv_ic_id (EINVAL, nothing written);
 * then rdma-core zeroes attr to inlen and asks the kernel, and Linux 6.1's
 * EFA driver (the kernel efasim plays on both front ends) has no MR query:
 * EPROTONOSUPPORT, as rdma-core 64 answers on the kernel front end.
 */
EFARM_TEST(efasim_efadv64_query_mr)
{
    query_mr_fn fn = query_mr();
    static char region[4096];
    uint8_t raw[24];
    struct efadv64_mr_attr *attr = (struct efadv64_mr_attr *)raw;
    struct efasim_dev dev;
    struct ibv_mr *mr;

    efasim_dev_open(0, &dev);
    mr = ibv_reg_mr(dev.pd, region, sizeof(region), IBV_ACCESS_LOCAL_WRITE);
    EXPECT_TRUE(mr != NULL);

    memset(raw, 0xff, sizeof(raw));
    EXPECT_RET(fn(mr, attr, offsetof(struct efadv64_mr_attr, rdma_recv_ic_id)), EINVAL);
    EXPECT_EQ(attr->ic_id_validity, 0xffff); /* refused: nothing written */
    EXPECT_RET(fn(mr, attr, sizeof(*attr)), EPROTONOSUPPORT);
    EXPECT_EQ(efasim_check_byte(raw, sizeof(*attr), 0), sizeof(*attr)); /* zeroed first */
    EXPECT_EQ(raw[sizeof(*attr)], 0xff); /* beyond inlen: untouched */
    memset(raw, 0xff, sizeof(raw));
    EXPECT_RET(fn(mr, attr, sizeof(raw)), EPROTONOSUPPORT);
    EXPECT_EQ(efasim_check_byte(raw, sizeof(raw), 0), sizeof(raw));

    EXPECT_EQ(ibv_dereg_mr(mr), 0);
    efasim_dev_close(&dev);
}

/*
 * efadv_query_qp_wqs and efadv_query_cq: inlen short EINVAL; then the drop-in,
 * whose queues are not in the process's memory, answers EOPNOTSUPP and writes
 * nothing. Under rdma-core 64 on the kernel front end they are the rings.
 */
EFARM_TEST(efasim_efadv64_query_queues)
{
    query_qp_wqs_fn wqs = query_qp_wqs();
    query_cq_fn cqq = query_cq();
    struct efadv64_wq_attr sq, rq;
    struct efadv64_cq_attr ca;
    struct efasim_dev dev;
    struct ibv_cq_ex *cq;
    struct ibv_qp *qp;
    int want;

    efasim_dev_open(0, &dev);
    cq = efasim_cq_create(&dev, 64);
    qp = efasim_qp_create_raw(&dev, cq);
    EXPECT_TRUE(qp != NULL);
    want = efasim_kernel_front_end() ? 0 : EOPNOTSUPP;

    memset(&sq, 0xa5, sizeof(sq));
    memset(&rq, 0xa5, sizeof(rq));
    EXPECT_RET(wqs(qp, &sq, &rq, offsetof(struct efadv64_wq_attr, max_batch)), EINVAL);
    EXPECT_RET(wqs(qp, &sq, &rq, sizeof(sq)), want);
    if (want) {
        EXPECT_EQ(efasim_check_byte(&sq, sizeof(sq), 0xa5), sizeof(sq));
        EXPECT_EQ(efasim_check_byte(&rq, sizeof(rq), 0xa5), sizeof(rq));
    } else {
        EXPECT_EQ(sq.comp_mask, 0);
        EXPECT_TRUE(sq.buffer != NULL && sq.doorbell != NULL);
        EXPECT_EQ(sq.entry_size, 64);
        EXPECT_EQ(rq.entry_size, 16);
    }

    memset(&ca, 0xa5, sizeof(ca));
    EXPECT_RET(cqq(ibv_cq_ex_to_cq(cq), &ca, offsetof(struct efadv64_cq_attr, num_entries)),
               EINVAL);
    EXPECT_RET(cqq(ibv_cq_ex_to_cq(cq), &ca, offsetof(struct efadv64_cq_attr, num_entries) + 1),
               want);
    EXPECT_RET(cqq(ibv_cq_ex_to_cq(cq), &ca, sizeof(ca)), want);
    if (want) {
        EXPECT_EQ(efasim_check_byte(&ca, sizeof(ca), 0xa5), sizeof(ca));
    } else {
        EXPECT_EQ(ca.comp_mask, 0);
        EXPECT_TRUE(ca.buffer != NULL);
        EXPECT_EQ(ca.num_entries, ibv_cq_ex_to_cq(cq)->cqe);
    }

    EXPECT_EQ(ibv_destroy_qp(qp), 0);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
    efasim_dev_close(&dev);
}

/* efadv_get_max_sq_depth's answer, or its negative errno. */
static int sq_depth(struct efasim_dev *dev, uint32_t flags, uint32_t send_sge, uint32_t rdma_sge,
                    uint32_t inline_data)
{
    struct efadv64_sq_depth_attr a = {.flags = flags,
                                      .max_send_sge = send_sge,
                                      .max_rdma_sge = rdma_sge,
                                      .max_inline_data = inline_data};

    return max_sq_depth()(dev->ctx, &a, sizeof(a));
}

/* The deepest send queue a QP gets, and one more is refused (EINVAL). */
static void expect_sq_bound(struct efasim_dev *dev, uint32_t depth, uint32_t inline_data)
{
    struct efadv64_qp_init_attr efa = {.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD};
    struct ibv_cq_ex *cq = efasim_cq_create(dev, 64);
    struct ibv_qp_init_attr_ex attr = efasim_srd_qp_attr(dev, cq, IBV_QP_EX_WITH_SEND);

    efarm_test_context("a send queue of %u WRs, %u inline bytes", depth, inline_data);
    attr.cap.max_inline_data = inline_data;
    attr.cap.max_send_wr = depth;
    expect_qp_created(dev, &attr, &efa, sizeof(efa));
    attr.cap.max_send_wr = depth + 1;
    expect_qp_refused(dev, &attr, &efa, sizeof(efa), EINVAL);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
    efarm_test_context("%s", "");
}

/*
 * efadv_get_max_sq_depth: the LLQ's 64-byte descriptors (max_sq_wr of them),
 * half as many 128-byte ones for inline RDMA write, a power of two; flags
 * unchecked; SGEs or inline data beyond the device's, a comp_mask or a short
 * inlen -EINVAL. QP creation takes exactly that depth.
 */
EFARM_TEST(efasim_efadv64_max_sq_depth)
{
    struct efadv64_sq_depth_attr a;
    struct efasim_dev dev;

    efasim_dev_open(0, &dev);
    EXPECT_RET(sq_depth(&dev, 0, 1, 1, 0), EFASIM_DEFAULT_MAX_SQ_WR);
    EXPECT_RET(sq_depth(&dev, 0, EFASIM_DEFAULT_MAX_SQ_SGE, 1, EFASIM_DEFAULT_INLINE),
               EFASIM_DEFAULT_MAX_SQ_WR);
    EXPECT_RET(sq_depth(&dev, EFADV64_SQ_DEPTH_ATTR_INLINE_WRITE, 1, 1, 0),
               EFASIM_DEFAULT_MAX_SQ_WR / 2);
    EXPECT_RET(sq_depth(&dev, 1u << 7, 1, 1, 0), EFASIM_DEFAULT_MAX_SQ_WR);
    EXPECT_RET(sq_depth(&dev, 0, 0, 0, 0), EFASIM_DEFAULT_MAX_SQ_WR);

    EXPECT_RET(sq_depth(&dev, 0, EFASIM_DEFAULT_MAX_SQ_SGE + 1, 1, 0), -EINVAL);
    EXPECT_RET(sq_depth(&dev, 0, 1, 2, 0), -EINVAL); /* max_sge_rd is 1 */
    EXPECT_RET(sq_depth(&dev, 0, 1, 1, EFASIM_DEFAULT_INLINE + 1), -EINVAL);
    memset(&a, 0, sizeof(a));
    a.comp_mask = 1;
    EXPECT_RET(max_sq_depth()(dev.ctx, &a, sizeof(a)), -EINVAL);
    a.comp_mask = 0;
    EXPECT_RET(max_sq_depth()(dev.ctx, &a, offsetof(struct efadv64_sq_depth_attr, max_inline_data)),
               -EINVAL);

    expect_sq_bound(&dev, EFASIM_DEFAULT_MAX_SQ_WR, EFASIM_DEFAULT_INLINE);
    efasim_dev_close(&dev);
}

/*
 * A device whose max_sq_wr is no power of two and whose inline buffer is
 * beyond a 64-byte descriptor's 32 bytes: rounded down, and halved for more
 * than 32 inline bytes (128-byte WQEs), at creation as in the answer.
 */
EFARM_TEST(efasim_efadv64_max_sq_depth_wide_inline)
{
    struct efasim_dev dev;

    efasim_setenv("EFASIM_MAX_SQ_WR", "1000");
    efasim_setenv("EFASIM_INLINE", "64");
    efasim_dev_open(0, &dev);
    EXPECT_RET(sq_depth(&dev, 0, 1, 1, 32), 512);
    EXPECT_RET(sq_depth(&dev, 0, 1, 1, 33), 256);
    EXPECT_RET(sq_depth(&dev, 0, 1, 1, 64), 256);
    EXPECT_RET(sq_depth(&dev, 0, 1, 1, 65), -EINVAL);
    expect_sq_bound(&dev, 512, 32);
    expect_sq_bound(&dev, 256, 64);
    efasim_dev_close(&dev);
}

/* efadv_get_max_rq_depth's answer, or its negative errno. */
static int rq_depth(struct efasim_dev *dev, uint32_t recv_sge)
{
    struct efadv64_rq_depth_attr a = {.max_recv_sge = recv_sge};

    return max_rq_depth()(dev->ctx, &a, sizeof(a));
}

/*
 * efadv_get_max_rq_depth: max_rq_wr over max_recv_sge; SGEs beyond the
 * device's, a comp_mask or a short inlen -EINVAL; max_recv_sge 0 divides by
 * zero in rdma-core 64 (SIGFPE). QP creation takes exactly that depth.
 */
EFARM_TEST(efasim_efadv64_max_rq_depth)
{
    struct efadv64_qp_init_attr efa = {.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD};
    struct efadv64_rq_depth_attr a;
    struct ibv_qp_init_attr_ex attr;
    struct efasim_dev dev;
    struct ibv_cq_ex *cq;
    int status = 0;
    pid_t pid;

    efasim_dev_open(0, &dev);
    EXPECT_RET(rq_depth(&dev, 1), EFASIM_DEFAULT_MAX_RQ_WR);
    EXPECT_RET(rq_depth(&dev, EFASIM_DEFAULT_MAX_RQ_SGE),
               EFASIM_DEFAULT_MAX_RQ_WR / EFASIM_DEFAULT_MAX_RQ_SGE);
    EXPECT_RET(rq_depth(&dev, EFASIM_DEFAULT_MAX_RQ_SGE + 1), -EINVAL);
    memset(&a, 0, sizeof(a));
    a.comp_mask = 1;
    a.max_recv_sge = 1;
    EXPECT_RET(max_rq_depth()(dev.ctx, &a, sizeof(a)), -EINVAL);
    a.comp_mask = 0;
    EXPECT_RET(max_rq_depth()(dev.ctx, &a, offsetof(struct efadv64_rq_depth_attr, max_recv_sge)),
               -EINVAL);
    EXPECT_RET(
        max_rq_depth()(dev.ctx, &a, offsetof(struct efadv64_rq_depth_attr, max_recv_sge) + 1),
        EFASIM_DEFAULT_MAX_RQ_WR);

    fflush(NULL);
    pid = fork();
    EXPECT_TRUE(pid >= 0);
    if (pid == 0) {
        signal(SIGFPE, SIG_DFL);
        (void)rq_depth(&dev, 0);
        _exit(0);
    }
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status));
    EXPECT_EQ(WTERMSIG(status), SIGFPE);

    cq = efasim_cq_create(&dev, 64);
    attr = efasim_srd_qp_attr(&dev, cq, IBV_QP_EX_WITH_SEND);
    attr.cap.max_recv_sge = EFASIM_DEFAULT_MAX_RQ_SGE;
    attr.cap.max_recv_wr = (uint32_t)rq_depth(&dev, EFASIM_DEFAULT_MAX_RQ_SGE);
    expect_qp_created(&dev, &attr, &efa, sizeof(efa));
    attr.cap.max_recv_wr++;
    expect_qp_refused(&dev, &attr, &efa, sizeof(efa), EINVAL);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
    efasim_dev_close(&dev);
}

/* An SRD QP through efadv_create_qp_ex with 64's wr_flags, in RTS, with its own CQs. */
static void hints_qp_open(struct efasim_dev *dev, uint64_t wr_flags, struct efasim_qp *qp)
{
    struct efadv64_qp_init_attr efa = {.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD,
                                       .wr_flags = wr_flags};
    struct ibv_qp_init_attr_ex attr;

    memset(qp, 0, sizeof(*qp));
    qp->dev = dev;
    qp->qkey = EFASIM_TEST_QKEY;
    qp->send_cq = efasim_cq_create(dev, 64);
    qp->recv_cq = efasim_cq_create(dev, 64);
    attr = efasim_srd_qp_attr(dev, qp->send_cq, IBV_QP_EX_WITH_SEND);
    attr.recv_cq = ibv_cq_ex_to_cq(qp->recv_cq);
    qp->qp = create_qp64(dev, &attr, &efa, sizeof(efa));
    if (!qp->qp)
        efarm_test_fail(__FILE__, __LINE__, "efadv_create_qp_ex(wr_flags 0x%" PRIx64 "): %s",
                        wr_flags, strerror(errno));
    qp->qpx = ibv_qp_to_qp_ex(qp->qp);
    EXPECT_TRUE(qp->qpx != NULL);
    qp->qpn = qp->qp->qp_num;
    efasim_qp_to_rts(qp->qp, qp->qkey, EFASIM_RNR_RETRY_INFINITE);
}

/*
 * efadv_qp_from_ibv_qp_ex: comp_mask 0; wr_set_processing_hints only on a QP
 * created with EFADV_WR_EX_WITH_PROCESSING_HINTS (libfabric 2.6 asks for it),
 * where a hinted send goes out and arrives as any other.
 */
EFARM_TEST(efasim_efadv64_processing_hints)
{
    qp_from_fn from = qp_from_ibv_qp_ex();
    struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    struct efasim_qp tx, plain, rx, ud;
    struct efasim_buf sbuf, rbuf;
    struct efasim_dest to_rx;
    struct efadv64_qp *dv;
    struct efasim_dev dev;
    struct efasim_wc wc;

    efasim_dev_open(0, &dev);
    hints_qp_open(&dev, EFADV64_WR_EX_WITH_PROCESSING_HINTS, &tx);
    hints_qp_open(&dev, 0, &plain);
    efasim_qp_open(&dev, &opts, &rx);
    efasim_ud_open(&dev, &opts, &ud);

    dv = from(tx.qpx);
    EXPECT_EQ(dv->comp_mask, 0);
    EXPECT_TRUE(dv->wr_set_processing_hints != NULL);
    EXPECT_TRUE(from(plain.qpx)->wr_set_processing_hints == NULL);
    EXPECT_TRUE(from(ud.qpx)->wr_set_processing_hints == NULL);

    /* A send with the burst hint, between its opcode and its completion. */
    efasim_buf_alloc(&dev, 4096, IBV_ACCESS_LOCAL_WRITE, &sbuf);
    efasim_buf_alloc(&dev, 4096, IBV_ACCESS_LOCAL_WRITE, &rbuf);
    efasim_fill(sbuf.addr, 4096, 41);
    efasim_dest_to(&dev, &rx, &to_rx);
    efasim_post_recv(&rx, 7, &rbuf, 0, 4096);
    ibv_wr_start(tx.qpx);
    tx.qpx->wr_id = 8;
    tx.qpx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_send(tx.qpx);
    dv->wr_set_processing_hints(dv, EFADV64_WR_PROCESSING_HINT_BURST_PPS);
    ibv_wr_set_ud_addr(tx.qpx, to_rx.ah, to_rx.qpn, to_rx.qkey);
    ibv_wr_set_sge(tx.qpx, sbuf.mr->lkey, (uintptr_t)sbuf.addr, 1000);
    EXPECT_RET(ibv_wr_complete(tx.qpx), 0);
    efasim_wait_wc(tx.send_cq, &wc, "the hinted send");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.wr_id, 8);
    efasim_wait_wc(rx.recv_cq, &wc, "the hinted send's receive");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.byte_len, 1000);
    EXPECT_EQ(efasim_check_fill(rbuf.addr, 1000, 41), 1000);

    /* In a session that already failed the hint changes nothing: it still fails. */
    ibv_wr_start(tx.qpx);
    tx.qpx->wr_id = 9;
    tx.qpx->wr_flags = 0; /* unsignaled: EFA refuses it */
    ibv_wr_send(tx.qpx);
    dv->wr_set_processing_hints(dv, EFADV64_WR_PROCESSING_HINT_BURST_PPS);
    ibv_wr_set_ud_addr(tx.qpx, to_rx.ah, to_rx.qpn, to_rx.qkey);
    ibv_wr_set_sge(tx.qpx, sbuf.mr->lkey, (uintptr_t)sbuf.addr, 10);
    EXPECT_RET(ibv_wr_complete(tx.qpx), EINVAL);
    efasim_expect_no_wc(tx.send_cq, 50, "the refused session");

    EXPECT_EQ(ibv_destroy_ah(to_rx.ah), 0);
    efasim_buf_free(&sbuf);
    efasim_buf_free(&rbuf);
    efasim_qp_close(&ud);
    efasim_qp_close(&rx);
    efasim_qp_close(&plain);
    efasim_qp_close(&tx);
    efasim_dev_close(&dev);
}

/*
 * A device that is not EFA's: every efadv function refuses it with
 * EOPNOTSUPP (rdma-core's is_efa_dev), before looking at anything else.
 */
EFARM_TEST(efasim_efadv64_not_efa)
{
    static struct not_efa n;
    struct efadv64_qp_init_attr qpa = {.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD};
    struct efadv64_cq_init_attr cqa = {.wc_flags = 0};
    struct efadv64_sq_depth_attr sqd = {.max_send_sge = 1};
    struct efadv64_rq_depth_attr rqd = {.max_recv_sge = 1};
    struct efadv64_device_attr da;
    struct ibv_qp_init_attr_ex qattr = {.qp_type = IBV_QPT_DRIVER};
    struct ibv_qp_init_attr qinit = {.qp_type = IBV_QPT_DRIVER};
    struct ibv_cq_init_attr_ex cattr = {.cqe = 16};
    struct efadv64_wq_attr sq, rq;
    struct efadv64_mr_attr mra;
    struct efadv64_cq_attr ca;
    struct efadv_ah_attr aha;

    efa64_require();
    not_efa_make(&n);
    EXPECT_RET(efadv_query_device(&n.vctx.context, (struct efadv_device_attr *)&da, sizeof(da)),
               EOPNOTSUPP);
    errno = 0;
    EXPECT_TRUE(efadv_create_qp_ex(&n.vctx.context, &qattr, (struct efadv_qp_init_attr *)&qpa,
                                   sizeof(qpa)) == NULL);
    EXPECT_RET(errno, EOPNOTSUPP);
    errno = 0;
    EXPECT_TRUE(efadv_create_driver_qp(&n.pd, &qinit, EFADV_QP_DRIVER_TYPE_SRD) == NULL);
    EXPECT_RET(errno, EOPNOTSUPP);
    errno = 0;
    EXPECT_TRUE(efadv_create_cq(&n.vctx.context, &cattr, (struct efadv_cq_init_attr *)&cqa,
                                sizeof(cqa)) == NULL);
    EXPECT_RET(errno, EOPNOTSUPP);
    EXPECT_RET(efadv_query_ah(&n.ah, &aha, sizeof(aha)), EOPNOTSUPP);
    EXPECT_RET(query_mr()(&n.mr, &mra, sizeof(mra)), EOPNOTSUPP);
    EXPECT_RET(query_qp_wqs()(&n.qp, &sq, &rq, sizeof(sq)), EOPNOTSUPP);
    EXPECT_RET(query_cq()(&n.cq, &ca, sizeof(ca)), EOPNOTSUPP);
    EXPECT_RET(max_sq_depth()(&n.vctx.context, &sqd, sizeof(sqd)), -EOPNOTSUPP);
    EXPECT_RET(max_rq_depth()(&n.vctx.context, &rqd, sizeof(rqd)), -EOPNOTSUPP);
}
