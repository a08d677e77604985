/*
 * RDMA within one host by direct copy (efasim's fast path, EFASIM_FASTPATH):
 * reads and writes of one byte to 16 MiB, in one process and between two,
 * with the data and the guards around it checked; the target's refusals (bad
 * rkey, out of bounds, no remote access) with EFA's completion; the fast path
 * off; the kernel refusing process_vm_* (seccomp), and a target whose memory
 * is gone, both redone by datagrams; and the fault injector's loss,
 * duplication, reordering and delay under it, including late copies of
 * requests after their WR completed, which must not move data again.
 *
 * Which path moved the data is read from the device's counters (fast_ops,
 * fast_bytes: chunks the target served by direct copy), in a sysfs tree of the
 * test's own so no other efasim user on the host adds to them.
 */
#include <dlfcn.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "efasim_common.h"

#define FAST_GUARD   4096
#define FAST_MAX_LEN (16u << 20)
#define FAST_GUARD_C 0xee
#define FAST_R_OFF   13 /* unaligned on purpose */
#define FAST_L_OFF   5
/* A transfer's own region in tests that go by datagrams: 4 MiB and its guards. */
#define FAST_REGION ((4u << 20) + 2 * FAST_GUARD + 64)

static const size_t g_fast_sizes[] = {1, 4096, 65536, (1u << 20) + 13, 3u << 20, FAST_MAX_LEN};
#define FAST_NSIZES (sizeof(g_fast_sizes) / sizeof(g_fast_sizes[0]))

/* efasim's per-device counters (efasim-info --counters), found at run time. */
struct fast_counters {
    uint64_t tx_pkts, tx_bytes, rx_pkts, rx_bytes, fast_ops, fast_bytes;
};

static void counters_read(const char *name, struct fast_counters *c)
{
    int (*read_fn)(const char *, struct fast_counters *) =
        (int (*)(const char *, struct fast_counters *))dlsym(RTLD_DEFAULT,
                                                             "efasim_hw_counters_read");

    memset(c, 0, sizeof(*c));
    EXPECT_TRUE(read_fn != NULL);
    if (read_fn)
        EXPECT_EQ(read_fn(name, c), 0);
}

/* Before the first verbs call: a sysfs tree (and so counters) of this test's own. */
static void fast_env(const char *fastpath)
{
    efasim_private_sysfs();
    efasim_setenv("EFASIM_NDEV", "2");
    efasim_setenv("EFASIM_RDMA_WRITE", "1");
    efasim_setenv("EFASIM_FASTPATH", fastpath);
}

/* Requester on efasim_1, target on efasim_0. */
struct fast_fixture {
    struct efasim_dev dev[2];
    struct efasim_qp req, tgt;
    struct efasim_dest to_tgt;
    struct efasim_buf local, remote;
};

static void fast_open(struct fast_fixture *f, size_t len)
{
    struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;

    efasim_dev_open(0, &f->dev[0]);
    efasim_dev_open(1, &f->dev[1]);
    if (f->dev[1].efa.device_caps & EFASIM_CAPS_RDMA_WRITE) /* efasim_require_rdma_write */
        opts.send_ops_flags |= EFASIM_SEND_OPS_RDMA_WRITE;
    efasim_qp_open(&f->dev[1], &opts, &f->req);
    efasim_qp_open(&f->dev[0], &opts, &f->tgt);
    efasim_dest_to(&f->dev[1], &f->tgt, &f->to_tgt);
    efasim_buf_alloc(&f->dev[1], len, IBV_ACCESS_LOCAL_WRITE, &f->local);
    efasim_buf_alloc(&f->dev[0], len, EFASIM_ACCESS_ALL, &f->remote);
}

static void fast_close(struct fast_fixture *f)
{
    efasim_buf_free(&f->local);
    efasim_buf_free(&f->remote);
    EXPECT_EQ(ibv_destroy_ah(f->to_tgt.ah), 0);
    efasim_qp_close(&f->req);
    efasim_qp_close(&f->tgt);
    efasim_dev_close(&f->dev[0]);
    efasim_dev_close(&f->dev[1]);
}

static void expect_byte(const uint8_t *p, size_t len, uint8_t c, const char *what)
{
    size_t bad = efasim_check_byte(p, len, c);

    if (bad != len)
        efarm_test_fail(__FILE__, __LINE__, "%s: byte %zu of %zu changed", what, bad, len);
}

/*
 * One RDMA read or write of len bytes at `at` bytes into both buffers, checked
 * with its guards. By datagrams efasim's service thread reads the source with
 * sendmsg; the socket orders that before the completion, but ThreadSanitizer
 * cannot see through the kernel, so tests that go by datagrams give every
 * transfer its own region instead of rewriting memory a transfer just read.
 */
static void fast_rdma_checked_at(struct fast_fixture *f, bool write, size_t len, uint64_t seed,
                                 enum ibv_wc_status want, size_t at)
{
    const size_t loff = at + FAST_GUARD + FAST_L_OFF, roff = at + FAST_GUARD + FAST_R_OFF;
    uint8_t *src = write ? f->local.addr + loff : f->remote.addr + roff;
    uint8_t *dst = write ? f->remote.addr + roff : f->local.addr + loff;
    uint8_t *dst_base = (write ? f->remote.addr : f->local.addr) + at;
    size_t dst_off = (write ? roff : loff) - at;
    struct efasim_wc wc;
    int rc;

    efasim_fill(src, len, seed);
    memset(dst_base, FAST_GUARD_C, dst_off + len + FAST_GUARD);
    if (write)
        rc = efasim_rdma_write(&f->req, &f->to_tgt, seed, &f->local, loff, len, f->remote.mr->rkey,
                               (uintptr_t)(f->remote.addr + roff));
    else
        rc = efasim_rdma_read(&f->req, &f->to_tgt, seed, &f->local, loff, len, f->remote.mr->rkey,
                              (uintptr_t)(f->remote.addr + roff));
    EXPECT_EQ(rc, 0);
    efasim_wait_wc_for(f->req.send_cq, &wc, 60, write ? "the RDMA write" : "the RDMA read");
    EXPECT_WC_STATUS(&wc, want);
    EXPECT_EQ(wc.wr_id, seed);
    if (want != IBV_WC_SUCCESS)
        return;
    EXPECT_EQ(wc.opcode, write ? IBV_WC_RDMA_WRITE : IBV_WC_SEND);
    if (efasim_check_fill(dst, len, seed) != len)
        efarm_test_fail(__FILE__, __LINE__, "RDMA %s of %zu bytes differs at byte %zu",
                        write ? "write" : "read", len, efasim_check_fill(dst, len, seed));
    expect_byte(dst_base, dst_off, FAST_GUARD_C, "the guard before the destination");
    expect_byte(dst + len, FAST_GUARD, FAST_GUARD_C, "the guard after the destination");
}

static void fast_rdma_checked(struct fast_fixture *f, bool write, size_t len, uint64_t seed,
                              enum ibv_wc_status want)
{
    fast_rdma_checked_at(f, write, len, seed, want, 0);
}

static void fast_sizes(bool write)
{
    struct fast_counters tgt0, tgt1, req0, req1;
    struct fast_fixture f;
    uint64_t total = 0;

    fast_env("1");
    if (write)
        efasim_require_rdma_write();
    fast_open(&f, FAST_MAX_LEN + 2 * FAST_GUARD + 64);
    counters_read("efasim_0", &tgt0);
    counters_read("efasim_1", &req0);
    for (size_t i = 0; i < FAST_NSIZES; i++) {
        efarm_test_context("RDMA %s of %zu bytes", write ? "write" : "read", g_fast_sizes[i]);
        fast_rdma_checked(&f, write, g_fast_sizes[i], 100 + i, IBV_WC_SUCCESS);
        total += g_fast_sizes[i];
    }
    efarm_test_context("counters");
    counters_read("efasim_0", &tgt1);
    counters_read("efasim_1", &req1);
    /* Every byte moved by the target's direct copies, none through the sockets. */
    EXPECT_EQ(tgt1.fast_bytes - tgt0.fast_bytes, total);
    EXPECT_TRUE(tgt1.fast_ops - tgt0.fast_ops >= FAST_NSIZES);
    EXPECT_TRUE(req1.tx_bytes - req0.tx_bytes < total / 64);
    EXPECT_TRUE(tgt1.tx_bytes - tgt0.tx_bytes < total / 64);
    efasim_expect_no_wc(f.tgt.recv_cq, 10, "the target (no immediate data)");
    fast_close(&f);
}

EFARM_TEST_TIMEOUT(efasim_fast_read_sizes, 60)
{
    fast_sizes(false);
}

EFARM_TEST_TIMEOUT(efasim_fast_write_sizes, 60)
{
    fast_sizes(true);
}

/* EFASIM_FASTPATH=0: the same transfers go by datagrams, byte for byte. */
EFARM_TEST_TIMEOUT(efasim_fast_off_uses_datagrams, 60)
{
    struct fast_counters tgt0, tgt1, req0, req1;
    struct fast_fixture f;

    fast_env("0");
    efasim_require_rdma_write();
    fast_open(&f, 2 * FAST_REGION);
    counters_read("efasim_0", &tgt0);
    counters_read("efasim_1", &req0);
    fast_rdma_checked_at(&f, false, 3u << 20, 1, IBV_WC_SUCCESS, 0);
    fast_rdma_checked_at(&f, true, (1u << 20) + 13, 2, IBV_WC_SUCCESS, FAST_REGION);
    counters_read("efasim_0", &tgt1);
    counters_read("efasim_1", &req1);
    EXPECT_EQ(tgt1.fast_ops, tgt0.fast_ops);
    EXPECT_TRUE(tgt1.tx_bytes - tgt0.tx_bytes >= 3u << 20);        /* the read's data */
    EXPECT_TRUE(req1.tx_bytes - req0.tx_bytes >= (1u << 20) + 13); /* the write's */
    fast_close(&f);
}

/*
 * The target refuses a direct-copy request exactly as a datagram one: bad
 * rkey, out of bounds, an MR without the remote access; EFA's status 7
 * (IBV_WC_GENERAL_ERR in rdma-core 44), its memory untouched, nothing copied; then the same
 * QP's valid request is served by direct copy.
 */
struct refusal {
    const char *name;
    uint32_t rkey;
    uint64_t raddr;
    size_t len;
};

static void fast_refusals(bool write)
{
    const size_t len = 1u << 20;
    struct fast_counters c0, c1;
    struct efasim_buf nope, big;
    struct fast_fixture f;
    struct efasim_wc wc;
    uint8_t *snapshot;
    struct refusal cases[5];

    fast_env("1");
    if (write)
        efasim_require_rdma_write();
    fast_open(&f, len);
    efasim_buf_alloc(&f.dev[0], len, IBV_ACCESS_LOCAL_WRITE | (write ? IBV_ACCESS_REMOTE_READ : 0),
                     &nope);
    efasim_buf_alloc(&f.dev[1], 2 * len, IBV_ACCESS_LOCAL_WRITE, &big); /* room for len + 1 */
    cases[0] = (struct refusal){"bad rkey", f.remote.mr->rkey ^ 0x5a5a5a00u,
                                (uintptr_t)f.remote.addr, 4096};
    cases[1] = (struct refusal){"length crossing the end", f.remote.mr->rkey,
                                (uintptr_t)f.remote.addr + len - 4096, 8192};
    cases[2] = (struct refusal){"start before the region", f.remote.mr->rkey,
                                (uintptr_t)f.remote.addr - 64, 4096};
    cases[3] = (struct refusal){"whole region plus one", f.remote.mr->rkey,
                                (uintptr_t)f.remote.addr, len + 1};
    cases[4] = (struct refusal){write ? "MR without remote write" : "MR without remote read",
                                nope.mr->rkey, (uintptr_t)nope.addr, 4096};
    efasim_fill(f.remote.addr, len, 0xabc);
    efasim_fill(nope.addr, len, 0xdef);
    efasim_fill(f.local.addr, len, 0x123);
    snapshot = malloc(2 * len);
    EXPECT_TRUE(snapshot != NULL);
    memcpy(snapshot, f.remote.addr, len);
    memcpy(snapshot + len, nope.addr, len);
    counters_read("efasim_0", &c0);
    for (unsigned i = 0; i < 5; i++) {
        int rc;

        efarm_test_context("RDMA %s: %s", write ? "write" : "read", cases[i].name);
        if (write)
            rc = efasim_rdma_write(&f.req, &f.to_tgt, i, &big, 0, cases[i].len, cases[i].rkey,
                                   cases[i].raddr);
        else
            rc = efasim_rdma_read(&f.req, &f.to_tgt, i, &big, 0, cases[i].len, cases[i].rkey,
                                  cases[i].raddr);
        EXPECT_EQ(rc, 0);
        efasim_wait_wc(f.req.send_cq, &wc, cases[i].name);
        EXPECT_WC_STATUS(&wc, EFASIM_WC_REMOTE_ACCESS);
        EXPECT_EQ(wc.vendor_err, EFASIM_VENDOR_REMOTE_ACCESS);
        EXPECT_EQ(wc.wr_id, i);
        EXPECT_MEM_EQ(f.remote.addr, snapshot, len);
        EXPECT_MEM_EQ(nope.addr, snapshot + len, len);
    }
    counters_read("efasim_0", &c1);
    EXPECT_EQ(c1.fast_ops, c0.fast_ops);
    efarm_test_context("a valid RDMA %s after the refusals", write ? "write" : "read");
    if (write)
        EXPECT_EQ(efasim_rdma_write(&f.req, &f.to_tgt, 9, &f.local, 0, len, f.remote.mr->rkey,
                                    (uintptr_t)f.remote.addr),
                  0);
    else
        EXPECT_EQ(efasim_rdma_read(&f.req, &f.to_tgt, 9, &f.local, 0, len, f.remote.mr->rkey,
                                   (uintptr_t)f.remote.addr),
                  0);
    efasim_wait_wc(f.req.send_cq, &wc, "the valid request");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_MEM_EQ(f.local.addr, f.remote.addr, len);
    counters_read("efasim_0", &c1);
    EXPECT_EQ(c1.fast_bytes - c0.fast_bytes, len);
    free(snapshot);
    efasim_buf_free(&big);
    efasim_buf_free(&nope);
    fast_close(&f);
}

EFARM_TEST_TIMEOUT(efasim_fast_read_refusals, 60)
{
    fast_refusals(false);
}

EFARM_TEST_TIMEOUT(efasim_fast_write_refusals, 60)
{
    fast_refusals(true);
}

/*
 * A target whose registered memory can no longer be read (its upper half made
 * PROT_NONE: an unmapped hole could be filled by any other mapping of the
 * process before the read, as ThreadSanitizer's runtime once did): the direct
 * copy faults, the WR is redone by datagrams, and the read fails as it does
 * there (status 7), never with garbage or a crash.
 */
EFARM_TEST_TIMEOUT(efasim_fast_target_memory_gone, 60)
{
    const size_t len = 1u << 20;
    struct fast_fixture f;
    struct efasim_wc wc;

    fast_env("1");
    fast_open(&f, len);
    EXPECT_EQ(mprotect(f.remote.addr + len / 2, len / 2, PROT_NONE), 0);
    EXPECT_EQ(efasim_rdma_read(&f.req, &f.to_tgt, 1, &f.local, 0, len, f.remote.mr->rkey,
                               (uintptr_t)f.remote.addr),
              0);
    efasim_wait_wc(f.req.send_cq, &wc, "the read of unmapped memory");
    EXPECT_WC_STATUS(&wc, EFASIM_WC_REMOTE_ACCESS);
    EXPECT_EQ(wc.vendor_err, EFASIM_VENDOR_REMOTE_ACCESS);
    /* The mapped half still reads, by direct copy (the peer was not given up). */
    EXPECT_EQ(efasim_rdma_read(&f.req, &f.to_tgt, 2, &f.local, 0, len / 2, f.remote.mr->rkey,
                               (uintptr_t)f.remote.addr),
              0);
    efasim_wait_wc(f.req.send_cq, &wc, "the read of the mapped half");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_MEM_EQ(f.local.addr, f.remote.addr, len / 2);
    EXPECT_EQ(mprotect(f.remote.addr + len / 2, len / 2, PROT_READ | PROT_WRITE), 0);
    efasim_buf_free(&f.remote);
    efasim_buf_free(&f.local);
    EXPECT_EQ(ibv_destroy_ah(f.to_tgt.ah), 0);
    efasim_qp_close(&f.req);
    efasim_qp_close(&f.tgt);
    efasim_dev_close(&f.dev[0]);
    efasim_dev_close(&f.dev[1]);
}

/* process_vm_readv/writev fail with EPERM in this process from now on (as under seccomp). */
static void forbid_process_vm(void)
{
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_writev, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    };
    struct sock_fprog prog = {.len = sizeof(filter) / sizeof(filter[0]), .filter = filter};

    EXPECT_EQ(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
    EXPECT_EQ(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0), 0);
}

/*
 * The kernel refuses the copy (seccomp here; EPERM from ptrace rules or
 * ENOSYS alike): every WR still succeeds, by datagrams, and after the first
 * refusal no request asks for a direct copy again.
 */
EFARM_TEST_TIMEOUT(efasim_fast_kernel_refuses, 60)
{
    struct fast_counters c0, c1;
    struct fast_fixture f;

    fast_env("1");
    efasim_require_rdma_write();
    /* The kernel front end copies the commands' user memory with process_vm_readv itself. */
    efasim_drop_in_only("process_vm_readv forbidden stops the kernel front end's own copies");
    forbid_process_vm(); /* before the service threads exist: they inherit it */
    fast_open(&f, 6 * FAST_REGION);
    counters_read("efasim_0", &c0);
    for (unsigned i = 0; i < 6; i++) {
        efarm_test_context("transfer %u", i);
        fast_rdma_checked_at(&f, i % 2, (i + 1) * 600000u + 7, 10 + i, IBV_WC_SUCCESS,
                             i * FAST_REGION);
    }
    counters_read("efasim_0", &c1);
    EXPECT_EQ(c1.fast_ops, c0.fast_ops);
    EXPECT_TRUE(c1.tx_bytes - c0.tx_bytes >= 600007u + 1800007u + 3000007u); /* reads' data */
    fast_close(&f);
}

/*
 * Loss, duplication, reordering and delay below the fast path: every WR
 * completes once with its data; and copies of requests that arrive after
 * their WR completed (delayed or duplicated ones) never move data again: the
 * destination, overwritten by the test after each completion, keeps what the
 * test wrote.
 */
EFARM_TEST_TIMEOUT(efasim_fast_faults, 120)
{
    const size_t span = 3u << 20, half = span + 4096;
    struct fast_counters c0, c1;
    struct fast_fixture f;
    struct efasim_wc wc;
    uint64_t total = 0;

    fast_env("1");
    efasim_require_rdma_write();
    efasim_setenv("EFASIM_LOSS", "0.1");
    efasim_setenv("EFASIM_DUP", "0.2");
    efasim_setenv("EFASIM_REORDER", "0.2");
    efasim_setenv("EFASIM_DELAY", "0.1");
    efasim_setenv("EFASIM_DELAY_US", "3000");
    efasim_setenv("EFASIM_FAST_CHUNK", "262144");
    /* Reads land in local's first half, writes in remote's; the other halves are sources. */
    fast_open(&f, 2 * half);
    memset(f.local.addr, 0x5c, half);
    memset(f.remote.addr, 0x5c, half);
    counters_read("efasim_0", &c0);
    for (unsigned i = 0; i < 40; i++) {
        bool write = i % 2;
        size_t len = 1 + (size_t)(efarm_test_rand() % span);
        size_t off = (size_t)(efarm_test_rand() % 4096);
        uint8_t *dst = write ? f.remote.addr + off : f.local.addr + off;
        uint8_t *src = write ? f.local.addr + half + off : f.remote.addr + half + off;
        int rc;

        efarm_test_context("transfer %u: RDMA %s of %zu bytes", i, write ? "write" : "read", len);
        efasim_fill(src, len, 500 + i);
        if (write)
            rc = efasim_rdma_write(&f.req, &f.to_tgt, i, &f.local, half + off, len,
                                   f.remote.mr->rkey, (uintptr_t)dst);
        else
            rc = efasim_rdma_read(&f.req, &f.to_tgt, i, &f.local, off, len, f.remote.mr->rkey,
                                  (uintptr_t)src);
        EXPECT_EQ(rc, 0);
        efasim_wait_wc_for(f.req.send_cq, &wc, 60, "the transfer");
        EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
        EXPECT_EQ(wc.wr_id, i);
        if (efasim_check_fill(dst, len, 500 + i) != len)
            efarm_test_fail(__FILE__, __LINE__, "data differs at byte %zu",
                            efasim_check_fill(dst, len, 500 + i));
        /* Late copies of this WR's requests must not write here again. */
        memset(dst, 0x5c, len);
        total += len;
    }
    /* Let every held or duplicated copy arrive and be answered; nothing may complete. */
    efasim_expect_no_wc(f.req.send_cq, 100, "the requester after its WRs completed");
    efarm_test_context("after the late copies");
    expect_byte(f.local.addr, half, 0x5c, "the reads' destination");
    expect_byte(f.remote.addr, half, 0x5c, "the writes' destination");
    counters_read("efasim_0", &c1);
    EXPECT_TRUE(c1.fast_bytes - c0.fast_bytes >= total);
    fast_close(&f);
}

/* ---- Two processes ------------------------------------------------------------------------ */

struct fast_peer_info {
    uint8_t gid[16];
    uint32_t qpn, rkey;
    uint64_t addr;
};

/*
 * The target: registers a region, says where it is, and then only waits on
 * the pipe, blocked: its NIC (service thread) serves the requests.
 */
static _Noreturn void fast_target_child(int rfd, int wfd, pid_t parent, void *arg)
{
    size_t len = *(const size_t *)arg;
    struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    struct fast_peer_info me = {0};
    struct efasim_buf region;
    struct efasim_dev dev;
    struct efasim_qp qp;
    char word = 0;

    if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
        _exit(3);
    opts.send_ops_flags |= EFASIM_SEND_OPS_RDMA_WRITE;
    efasim_dev_open(0, &dev);
    efasim_qp_open(&dev, &opts, &qp);
    efasim_buf_alloc(&dev, len, EFASIM_ACCESS_ALL, &region);
    efasim_fill(region.addr, len, 0x7a7a);
    memcpy(me.gid, dev.gid.raw, 16);
    me.qpn = qp.qpn;
    me.rkey = region.mr->rkey;
    me.addr = (uintptr_t)region.addr;
    efarm_test_pipe_write(wfd, &me, sizeof(me));
    /* The parent reads the region, then writes its own pattern over it. */
    efarm_test_pipe_read(rfd, &word, 1, "the parent's end of its writes");
    EXPECT_EQ(word, 'W');
    word = efasim_check_fill(region.addr, len, 0x8b8b) == len ? 'Y' : 'N';
    efarm_test_pipe_write(wfd, &word, 1);
    efasim_buf_free(&region);
    efasim_qp_close(&qp);
    efasim_dev_close(&dev);
    fflush(NULL);
    _exit(0);
}

EFARM_TEST_TIMEOUT(efasim_fast_two_processes, 90)
{
    const size_t len = FAST_MAX_LEN;
    struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    struct efarm_test_child child;
    struct fast_counters c0, c1;
    struct fast_peer_info peer;
    struct efasim_buf local;
    struct efasim_dest dest;
    struct efasim_dev dev;
    struct efasim_qp qp;
    struct efasim_wc wc;
    union ibv_gid gid;
    char word;

    fast_env("1");
    efasim_require_rdma_write();
    efarm_test_fork_child(&child, fast_target_child, (void *)&len);
    opts.send_ops_flags |= EFASIM_SEND_OPS_RDMA_WRITE;
    efasim_dev_open(1, &dev);
    efasim_qp_open(&dev, &opts, &qp);
    efasim_buf_alloc(&dev, len, IBV_ACCESS_LOCAL_WRITE, &local);
    efarm_test_pipe_read(child.rfd, &peer, sizeof(peer), "the target's region");
    memcpy(gid.raw, peer.gid, 16);
    dest = (struct efasim_dest){efasim_ah_create(&dev, &gid), peer.qpn, qp.qkey};
    counters_read("efasim_0", &c0);

    efarm_test_context("RDMA read of the other process's 16 MiB");
    EXPECT_EQ(efasim_rdma_read(&qp, &dest, 1, &local, 0, len, peer.rkey, peer.addr), 0);
    efasim_wait_wc_for(qp.send_cq, &wc, 60, "the read");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    EXPECT_EQ(efasim_check_fill(local.addr, len, 0x7a7a), len);

    efarm_test_context("RDMA write of 16 MiB into the other process");
    efasim_fill(local.addr, len, 0x8b8b);
    EXPECT_EQ(efasim_rdma_write(&qp, &dest, 2, &local, 0, len, peer.rkey, peer.addr), 0);
    efasim_wait_wc_for(qp.send_cq, &wc, 60, "the write");
    EXPECT_WC_STATUS(&wc, IBV_WC_SUCCESS);
    efarm_test_pipe_write(child.wfd, "W", 1);
    efarm_test_pipe_read(child.rfd, &word, 1, "the target's check of the write");
    EXPECT_EQ(word, 'Y');
    counters_read("efasim_0", &c1);
    EXPECT_EQ(c1.fast_bytes - c0.fast_bytes, 2 * (uint64_t)len);

    efarm_test_child_reap(&child, "target");
    EXPECT_EQ(ibv_destroy_ah(dest.ah), 0);
    efasim_buf_free(&local);
    efasim_qp_close(&qp);
    efasim_dev_close(&dev);
    close(child.wfd);
    close(child.rfd);
}
