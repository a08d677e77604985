/*
 * Helpers for efasim's verbs-level tests.
 *
 * Only the public libibverbs and libefa API is used, so the same tests run
 * against any provider that behaves like EFA. Every helper that can fail ends
 * the test with a message naming the call; every wait has a deadline, so a
 * lost completion fails the test instead of hanging it.
 *
 * efasim reads its EFASIM_* environment at first use: a test calls
 * efasim_setenv() before its first efasim_dev_open().
 */
#ifndef EFASIM_COMMON_H
#define EFASIM_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <infiniband/efadv.h>

#include "efarm_test.h"
#include "test_procs.h"

/* efasim's defaults (and real EFA's on the instance types it models). */
#define EFASIM_DEFAULT_MTU        8928
#define EFASIM_DEFAULT_INLINE     32
#define EFASIM_DEFAULT_MAX_SQ_WR  4096
#define EFASIM_DEFAULT_MAX_RQ_WR  32768
#define EFASIM_DEFAULT_MAX_SQ_SGE 2
#define EFASIM_DEFAULT_MAX_RQ_SGE 3
#define EFASIM_DEFAULT_MAX_RDMA   (1u << 30)
#define EFASIM_TEST_QKEY          0x0e7a5151u
#define EFASIM_RNR_RETRY_INFINITE 7
#define EFASIM_AHN_NONE           0xffff
/* EFADV_DEVICE_ATTR_CAPS_RDMA_WRITE: newer than some rdma-core releases. */
#define EFASIM_CAPS_RDMA_WRITE (1u << 3)

/* EFA vendor error codes (the EFA device's completion status values). */
#define EFASIM_VENDOR_REMOTE_ACCESS 7
#define EFASIM_VENDOR_UNKNOWN_DEST  9
#define EFASIM_VENDOR_RNR           10
#define EFASIM_VENDOR_UNRESPONSIVE  13
#define EFASIM_VENDOR_UNREACHABLE   15
/*
 * The rdma-core release whose libibverbs this process runs, from the file
 * name the library was loaded by (libibverbs.so.1.MINOR.RELEASE.0: 44 for
 * Debian bookworm's); 0 for efasim's drop-in, which answers as 44 does.
 */
unsigned efasim_rdma_core_release(void);

/*
 * The work-completion statuses the EFA provider gives the two device statuses
 * whose mapping changed: a bad remote address or key (7) is
 * IBV_WC_GENERAL_ERR in 44 (and the drop-in), IBV_WC_REM_ACCESS_ERR from
 * v52; an unreachable peer (15) IBV_WC_GENERAL_ERR, IBV_WC_RESP_TIMEOUT_ERR
 * from v55 (providers/efa/verbs.c, to_ibv_status).
 */
#define EFASIM_WC_REMOTE_ACCESS \
    (efasim_rdma_core_release() >= 52 ? IBV_WC_REM_ACCESS_ERR : IBV_WC_GENERAL_ERR)
#define EFASIM_WC_UNREACHABLE \
    (efasim_rdma_core_release() >= 55 ? IBV_WC_RESP_TIMEOUT_ERR : IBV_WC_GENERAL_ERR)

/* How long a wait for one completion may take before the test fails. */
#define EFASIM_WAIT_S 10.0

struct efasim_dev {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    union ibv_gid gid;
    struct ibv_port_attr port;
    struct efadv_device_attr efa;
    uint32_t mtu;
};

struct efasim_qp_opts {
    uint32_t max_send_wr;
    uint32_t max_recv_wr;
    uint32_t cqe;
    uint32_t qkey;
    uint8_t rnr_retry;
    uint64_t send_ops_flags;
};

/* Send, send-with-immediate and RDMA read; add the RDMA write flags when enabled. */
#define EFASIM_QP_OPTS_DEFAULT                                                             \
    {                                                                                      \
        .max_send_wr = 256, .max_recv_wr = 256, .cqe = 1024, .qkey = EFASIM_TEST_QKEY,     \
        .rnr_retry = EFASIM_RNR_RETRY_INFINITE,                                            \
        .send_ops_flags =                                                                  \
            IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ, \
    }

#define EFASIM_SEND_OPS_RDMA_WRITE (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)

/* An SRD QP in RTS with its own send and receive CQs (created by efadv_create_cq). */
struct efasim_qp {
    struct efasim_dev *dev;
    struct ibv_cq_ex *send_cq;
    struct ibv_cq_ex *recv_cq;
    struct ibv_qp *qp;
    struct ibv_qp_ex *qpx;
    uint32_t qpn;
    uint32_t qkey;
};

/* Where a send goes: an AH on the sender's device, the remote QPN and Q-Key. */
struct efasim_dest {
    struct ibv_ah *ah;
    uint32_t qpn;
    uint32_t qkey;
};

/* A registered buffer. */
struct efasim_buf {
    uint8_t *addr;
    size_t len;
    struct ibv_mr *mr;
};

/* One completion; the fields past vendor_err are read only for successful ones. */
struct efasim_wc {
    uint64_t wr_id;
    enum ibv_wc_status status;
    uint32_t vendor_err;
    enum ibv_wc_opcode opcode;
    unsigned int wc_flags;
    uint32_t byte_len;
    uint32_t imm; /* host order, valid when wc_flags has IBV_WC_WITH_IMM */
    uint32_t qp_num;
    uint32_t src_qp;
    uint32_t slid;
    int sgid_ret; /* efadv_wc_read_sgid()'s return for a receive */
    union ibv_gid sgid;
};

#define EXPECT_WC_STATUS(wc, want) efasim_expect_status(__FILE__, __LINE__, (wc), (want))

void efasim_expect_status(const char *file, int line, const struct efasim_wc *wc,
                          enum ibv_wc_status want);

void efasim_setenv(const char *name, const char *value);
/*
 * Before the first verbs call: SYSFS_PATH at a new directory of this test's
 * own, removed when the test process exits, so efasim's device counters count
 * only this test's traffic (other efasim users on the host share the default).
 */
void efasim_private_sysfs(void);
double efasim_now(void);
void efasim_sleep_ms(unsigned ms);

/* "::ffff:127.0.0.1"-style text for messages; buf holds at least 64 bytes. */
const char *efasim_gid_str(const union ibv_gid *gid, char *buf);
/* The IPv4-mapped GID ::ffff:a.b.c.d. */
void efasim_gid_ipv4(union ibv_gid *gid, uint8_t a, uint8_t b, uint8_t c, uint8_t d);

/* Opens device efasim_<index>, queries it and allocates a PD. */
void efasim_dev_open(int index, struct efasim_dev *dev);
void efasim_dev_close(struct efasim_dev *dev);

/*
 * The suite runs on either of efasim's front ends: its drop-in libibverbs and
 * libefa, or the system's rdma-core over its kernel front end (efasim-info
 * --run=kernel: LD_PRELOAD names libefasim-kernel). A test that checks what
 * only one of them can show says so with efarm_test_skip.
 */
bool efasim_kernel_front_end(void);
/*
 * Why a test of a receive that waits for room in a full CQ is the drop-in's:
 * its CQ tells the device what was polled. On EFA's queues the device learns
 * a CQ's consumer index only from the doorbell of a CQ with events, which
 * rdma-core 44 rings only sometimes: a completion is always written, and a CQ
 * too small for its work requests loses the oldest (efasim's README).
 */
#define CQ_ROOM_DROP_IN_ONLY                                                                 \
    "a receive waiting for room in a full CQ (EFA's device does not learn what was polled; " \
    "a CQ too small for its work requests loses completions)"
/* Skips the test on the kernel front end, with why (what only the drop-in shows). */
void efasim_drop_in_only(const char *why);
/*
 * After the test's last efasim_setenv (it reads the knobs): skips the test when
 * the verbs provider offers no RDMA write on efasim_0 (the system's rdma-core
 * before release 45, whatever the device can do).
 */
void efasim_require_rdma_write(void);

struct ibv_cq_ex *efasim_cq_create(struct efasim_dev *dev, uint32_t cqe);
/*
 * An SRD QP straight through efadv_create_qp_ex, left in RESET, for tests of
 * creation itself: NULL and errno (cleared first) on failure.
 */
struct ibv_qp *efasim_qp_create_raw(struct efasim_dev *dev, struct ibv_cq_ex *cq);

/*
 * The attributes efasim_qp_create_raw asks for (an SRD driver QP of 16 WRs and
 * one SGE each way, send and receive on cq), with send_ops_flags when nonzero.
 */
struct ibv_qp_init_attr_ex efasim_srd_qp_attr(struct efasim_dev *dev, struct ibv_cq_ex *cq,
                                              uint64_t send_ops_flags);
void efasim_qp_open(struct efasim_dev *dev, const struct efasim_qp_opts *opts,
                    struct efasim_qp *qp);
void efasim_qp_close(struct efasim_qp *qp);
/* INIT, RTR, RTS with the given Q-Key and RNR retry count. */
void efasim_qp_to_rts(struct ibv_qp *qp, uint32_t qkey, uint8_t rnr_retry);
/*
 * A UD QP through ibv_create_qp_ex, in RTS (UD takes no RNR retry), with
 * its own CQs; of opts->send_ops_flags only what UD offers (send, send with
 * immediate) is asked for. Closed with efasim_qp_close.
 */
void efasim_ud_open(struct efasim_dev *dev, const struct efasim_qp_opts *opts,
                    struct efasim_qp *qp);
/* INIT, RTR, RTS of a UD QP with the given Q-Key. */
void efasim_ud_to_rts(struct ibv_qp *qp, uint32_t qkey);

/* access without the remote access the device does not offer (EFA refuses to register it). */
int efasim_access_offered(const struct efasim_dev *dev, int access);
/* A page-aligned buffer of len bytes, registered with access (less what the device lacks). */
void efasim_buf_alloc(struct efasim_dev *dev, size_t len, int access, struct efasim_buf *buf);
void efasim_buf_free(struct efasim_buf *buf);
#define EFASIM_ACCESS_ALL \
    (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE)

struct ibv_ah *efasim_ah_create(struct efasim_dev *dev, const union ibv_gid *gid);
uint16_t efasim_ahn(struct ibv_ah *ah);
/* A destination for qp's peer: an AH for peer's GID created on from's device. */
void efasim_dest_to(struct efasim_dev *from, const struct efasim_qp *peer,
                    struct efasim_dest *dest);

void efasim_post_recv(struct efasim_qp *qp, uint64_t wr_id, const struct efasim_buf *buf,
                      size_t off, size_t len);

/* One signaled WR through the ibv_wr_* API; returns ibv_wr_complete()'s result. */
int efasim_send(struct efasim_qp *qp, const struct efasim_dest *to, uint64_t wr_id,
                const struct efasim_buf *buf, size_t off, size_t len);
int efasim_send_imm(struct efasim_qp *qp, const struct efasim_dest *to, uint64_t wr_id,
                    const struct efasim_buf *buf, size_t off, size_t len, uint32_t imm);
int efasim_send_inline(struct efasim_qp *qp, const struct efasim_dest *to, uint64_t wr_id,
                       const void *data, size_t len);
/* The same through ibv_post_send(); returns its result. */
int efasim_send_legacy(struct efasim_qp *qp, const struct efasim_dest *to, uint64_t wr_id,
                       const struct efasim_buf *buf, size_t off, size_t len);
int efasim_rdma_read(struct efasim_qp *qp, const struct efasim_dest *to, uint64_t wr_id,
                     const struct efasim_buf *local, size_t off, size_t len, uint32_t rkey,
                     uint64_t raddr);
int efasim_rdma_write(struct efasim_qp *qp, const struct efasim_dest *to, uint64_t wr_id,
                      const struct efasim_buf *local, size_t off, size_t len, uint32_t rkey,
                      uint64_t raddr);
int efasim_rdma_write_imm(struct efasim_qp *qp, const struct efasim_dest *to, uint64_t wr_id,
                          const struct efasim_buf *local, size_t off, size_t len, uint32_t rkey,
                          uint64_t raddr, uint32_t imm);

/* Takes one completion if there is one (ibv_start_poll/ibv_end_poll). */
bool efasim_poll_one(struct ibv_cq_ex *cq, struct efasim_wc *wc);
/* Polls until one completion arrives; fails the test after EFASIM_WAIT_S. */
void efasim_wait_wc(struct ibv_cq_ex *cq, struct efasim_wc *wc, const char *what);
void efasim_wait_wc_for(struct ibv_cq_ex *cq, struct efasim_wc *wc, double timeout_s,
                        const char *what);
/* Polls for ms milliseconds and fails the test if anything completes. */
void efasim_expect_no_wc(struct ibv_cq_ex *cq, unsigned ms, const char *what);

/*
 * Two QPs on one device: tx sends to rx through to_rx (an AH for the device's
 * own GID); sbuf and rbuf are 2 * MTU + 4096 bytes each.
 */
struct efasim_pair {
    struct efasim_dev dev;
    struct efasim_qp tx, rx;
    struct efasim_dest to_rx;
    struct efasim_buf sbuf, rbuf;
};

enum efasim_api { EFASIM_API_WR, EFASIM_API_LEGACY };

/* Opens device efasim_0 and the pair; NULL options mean EFASIM_QP_OPTS_DEFAULT. */
void efasim_pair_open(struct efasim_pair *p, const struct efasim_qp_opts *tx_opts,
                      const struct efasim_qp_opts *rx_opts);
void efasim_pair_close(struct efasim_pair *p);
/*
 * Sends len bytes tx -> rx through api and checks both completions, the data,
 * that nothing past len was written and that slid is the AH number of to_rx.
 */
void efasim_pair_roundtrip(struct efasim_pair *p, size_t len, enum efasim_api api);

/* Deterministic content: byte i of the stream named seed. */
void efasim_fill(void *buf, size_t len, uint64_t seed);
/* Offset of the first byte that differs from efasim_fill(seed), or len if none. */
size_t efasim_check_fill(const void *buf, size_t len, uint64_t seed);
/* Offset of the first byte that is not c, or len if none. */
size_t efasim_check_byte(const void *buf, size_t len, uint8_t c);

/*
 * Allocation and mapping calls from other threads (efasim_alloc_watch.c):
 * begin marks the calling thread as the watcher and starts counting; end
 * stops, returns how many calls came from other threads and names the first.
 * Only counted where EFASIM_ALLOC_WATCH is 1: ASan's and TSan's runtimes
 * define those functions themselves.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define EFASIM_ALLOC_WATCH 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define EFASIM_ALLOC_WATCH 0
#endif
#endif
#ifndef EFASIM_ALLOC_WATCH
#define EFASIM_ALLOC_WATCH 1
#endif
void efasim_alloc_watch_begin(void);
unsigned long efasim_alloc_watch_end(const char **first);

#endif /* EFASIM_COMMON_H */
