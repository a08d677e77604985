/*
 * The device layer (src/device) on efasim: loading, enumeration, endpoints,
 * raw addresses, the AH cache, sends (inline and not, batched), the receive
 * pool, RDMA, and the error paths efasim produces on demand: RNR, bad key,
 * queue full, registration failure. Each test runs in its own process, so it
 * sets EFARM_DEVICE and EFASIM_* before the first device call.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <sys/mman.h>

#include "device_internal.h"
#include "efarm_config.h"
#include "efarm_device.h"
#include "efarm_mr_cache.h"
#include "topo_xml.h"
#include "efarm_errno.h"
#include "efarm_test.h"

static void use_efasim(void)
{
    setenv("EFARM_DEVICE", efarm_test_device(), 1);
    setenv("EFARM_EFASIM_PATH", EFARM_TEST_EFASIM_PATH, 1);
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Poll `ep` until a completion of kind `op` arrives (others are ignored), or fail. */
static void wait_cqe(struct efarm_dev_ep *ep, enum efarm_dev_op op, struct efarm_dev_cqe *out)
{
    double deadline = now_s() + 10;

    while (now_s() < deadline) {
        struct efarm_dev_cqe c[8];
        int n = efarm_dev_poll(ep, c, 8);

        /* No RDMA subsystem at all makes the real libibverbs return no list: DEV_NONE. */
        EXPECT_TRUE(n >= 0 || n == EFARM_E(DEV_NONE));
        for (int i = 0; i < n; i++) {
            if (c[i].op == op) {
                *out = c[i];
                /* Anything else polled here is dropped; tests keep one thing in flight. */
                return;
            }
        }
    }
    efarm_test_fail(__FILE__, __LINE__, "no completion of kind %d within 10 s", op);
}

struct pair {
    struct efarm_dev_ep *a, *b;
    struct efarm_dev_ah *a_to_b;
    uint32_t b_qpn, b_qkey;
    uint8_t b_raw[EFARM_RAW_ADDR_LEN];
};

static void pair_open(struct pair *p, uint32_t rx_a, uint32_t rx_b, uint8_t rnr_retry)
{
    struct efarm_dev_ep_attr aa = {.rx_buffers = rx_a, .rnr_retry = rnr_retry};
    struct efarm_dev_ep_attr ab = {.rx_buffers = rx_b, .rnr_retry = rnr_retry};

    EXPECT_RET(efarm_dev_ep_open(NULL, &aa, &p->a), 0);
    EXPECT_RET(efarm_dev_ep_open(NULL, &ab, &p->b), 0);
    efarm_dev_ep_raw_addr(p->b, p->b_raw);
    p->b_qpn = p->b_raw[16] | (uint32_t)p->b_raw[17] << 8;
    p->b_qkey = efarm_dev_ep_connid(p->b);
    EXPECT_RET(efarm_dev_ah_get(p->a, p->b_raw, &p->a_to_b), 0);
}

/* A pair whose endpoint b has its own attributes (a as pair_open makes it). */
static void pair_open_b_attr(struct pair *p, const struct efarm_dev_ep_attr *attr_b)
{
    pair_open(p, 0, 0, 7);
    efarm_dev_ep_close(p->b);
    EXPECT_RET(efarm_dev_ep_open(NULL, attr_b, &p->b), 0);
    efarm_dev_ep_raw_addr(p->b, p->b_raw);
    p->b_qpn = p->b_raw[16] | (uint32_t)p->b_raw[17] << 8;
    p->b_qkey = efarm_dev_ep_connid(p->b);
    EXPECT_RET(efarm_dev_ah_get(p->a, p->b_raw, &p->a_to_b), 0);
}

static void pair_close(struct pair *p)
{
    efarm_dev_ep_close(p->a);
    efarm_dev_ep_close(p->b);
}

static int send_bytes(struct pair *p, const void *buf, uint32_t len, uint32_t lkey, uint64_t id)
{
    struct efarm_dev_send s = {
        .ah = p->a_to_b, .qpn = p->b_qpn, .qkey = p->b_qkey, .wr_id = id, .nseg = 1};

    s.seg[0].addr = buf;
    s.seg[0].len = len;
    s.seg[0].lkey = lkey;
    return efarm_dev_post_send(p->a, &s, 1);
}

EFARM_TEST(device_enumerate_efasim)
{
    struct efarm_device_caps caps[4];

    use_efasim();
    setenv("EFASIM_NDEV", "2", 1);
    EXPECT_EQ(efarm_device_query_all(caps, 4), 2);
    EXPECT_EQ(efarm_device_kind(),
              strcmp(efarm_test_device(), "sim") ? EFARM_DEVICE_EFA : EFARM_DEVICE_SIM);
    EXPECT_TRUE(!strcmp(caps[0].name, "efasim_0") && !strcmp(caps[1].name, "efasim_1"));
    EXPECT_EQ(caps[0].max_msg_size, 8928);
    EXPECT_EQ(caps[0].inline_size, 32);
    EXPECT_EQ(caps[0].max_sq_wr, 4096);
    EXPECT_EQ(caps[0].max_rq_wr, 32768);
    EXPECT_EQ(caps[0].max_rdma_size, 1ull << 30);
    EXPECT_TRUE(caps[0].rdma_read && caps[0].rnr_retry && caps[0].cq_with_sgid);
    EXPECT_TRUE(!caps[0].rdma_write);
    EXPECT_EQ(caps[0].device_version, 0xefa2); /* vendor_part_id: the PCI device id */
    EXPECT_EQ(caps[0].vendor_id, 0x1d0f);
}

/*
 * rdma-core lists devices in its sysfs directory's order, which no kernel
 * promises (on ext4, the names' hash order; efasim's drop-in lists them the
 * same way): enumeration still gives them in natural name order, the order of
 * the NIC choice's indexes, so a rail index names the same device in both
 * (a rank's second rail was its first NIC again when the two orders differed).
 */
EFARM_TEST(device_enumerate_in_name_order)
{
    struct efarm_device_caps caps[12];
    char root[] = "/tmp/efarm-test-sysfs-XXXXXX", cmd[64], want[16];

    use_efasim();
    EXPECT_TRUE(mkdtemp(root) != NULL);
    setenv("SYSFS_PATH", root, 1);
    setenv("EFASIM_NDEV", "12", 1);
    EXPECT_EQ(efarm_device_query_all(caps, 12), 12);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
    EXPECT_EQ(system(cmd), 0);
    for (unsigned i = 0; i < 12; i++) {
        snprintf(want, sizeof(want), "efasim_%u", i);
        if (strcmp(caps[i].name, want))
            efarm_test_fail(__FILE__, __LINE__, "device %u of the enumeration is %s, not %s", i,
                            caps[i].name, want);
    }
}

EFARM_TEST(device_caps_follow_the_device)
{
    struct efarm_device_caps caps;

    use_efasim();
    setenv("EFASIM_MTU", "4000", 1);
    setenv("EFASIM_RDMA_WRITE", "1", 1);
    setenv("EFASIM_INLINE", "16", 1);
    EXPECT_EQ(efarm_device_query_all(&caps, 1), 1);
    EXPECT_EQ(caps.max_msg_size, 4000);
    EXPECT_EQ(caps.inline_size, 16);
    /* Through rdma-core 44 libefa reports no RDMA write, whatever the device has. */
    EXPECT_EQ(caps.rdma_write, !strcmp(efarm_test_device(), "sim"));
}

EFARM_TEST(device_bad_selection_fails_cleanly)
{
    struct efarm_device_caps caps;
    struct efarm_dev_ep *ep;

    setenv("EFARM_DEVICE", "gpu", 1);
    EXPECT_RET(efarm_device_query_all(&caps, 1), EFARM_E(DEV_LOAD));
    EXPECT_RET(efarm_dev_ep_open(NULL, NULL, &ep), EFARM_E(DEV_LOAD));
}

EFARM_TEST(device_sim_path_missing_fails_cleanly)
{
    struct efarm_device_caps caps;

    setenv("EFARM_DEVICE", "sim", 1);
    setenv("EFARM_EFASIM_PATH", "/nonexistent/efasim", 1);
    EXPECT_RET(efarm_device_query_all(&caps, 1), EFARM_E(DEV_LOAD));
}

/* A fake sysfs tree: ROOT/class/infiniband/NAME/device/vendor holding VENDOR. */
static void fake_rdma_device(const char *root, const char *name, const char *vendor)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "mkdir -p %s/class/infiniband/%s/device", root, name);
    EXPECT_EQ(system(path), 0);
    snprintf(path, sizeof(path), "%s/class/infiniband/%s/device/vendor", root, name);
    f = fopen(path, "w");
    EXPECT_TRUE(f != NULL);
    fprintf(f, "%s\n", vendor);
    fclose(f);
}

/* auto takes EFA only when sysfs lists one; otherwise it refuses rather than emulate. */
EFARM_TEST(device_choice_auto_needs_an_efa_device)
{
    char root[] = "/tmp/efarm-sysfs-XXXXXX", cmd[64];
    struct efarm_device_choice c;

    EXPECT_TRUE(mkdtemp(root) != NULL);
    efarm_device_choose("auto", root, &c); /* no class/infiniband at all */
    EXPECT_EQ(c.kind, EFARM_DEVICE_NONE);
    EXPECT_TRUE(strstr(c.reason, "EFARM_DEVICE=sim") != NULL);
    fake_rdma_device(root, "mlx5_0", "0x15b3"); /* another vendor's RDMA device */
    efarm_device_choose("auto", root, &c);
    EXPECT_EQ(c.kind, EFARM_DEVICE_NONE);
    fake_rdma_device(root, "rdmap16s27", "0x1d0f");
    efarm_device_choose("auto", root, &c);
    EXPECT_EQ(c.kind, EFARM_DEVICE_EFA);
    EXPECT_TRUE(strstr(c.reason, "rdmap16s27") != NULL);
    efarm_device_choose("sim", root, &c); /* asked for: always the emulator */
    EXPECT_EQ(c.kind, EFARM_DEVICE_SIM);
    efarm_device_choose("efa", "/nonexistent", &c); /* asked for: EFA, whatever sysfs says */
    EXPECT_EQ(c.kind, EFARM_DEVICE_EFA);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
    EXPECT_EQ(system(cmd), 0);
}

/* auto reads the sysfs libibverbs reads: SYSFS_PATH when set (rdma-core's own variable). */
EFARM_TEST(device_choice_auto_reads_sysfs_path)
{
    char root[] = "/tmp/efarm-sysfs-XXXXXX", cmd[64];
    const char *saved = getenv("SYSFS_PATH");
    char *keep = saved ? strdup(saved) : NULL;
    struct efarm_device_choice c;

    EXPECT_TRUE(mkdtemp(root) != NULL);
    fake_rdma_device(root, "rdmap0s6", "0x1d0f");
    setenv("SYSFS_PATH", root, 1);
    efarm_device_choose("auto", NULL, &c);
    EXPECT_EQ(c.kind, EFARM_DEVICE_EFA);
    EXPECT_TRUE(strstr(c.reason, root) != NULL);
    EXPECT_TRUE(strstr(c.reason, "rdmap0s6") != NULL);
    if (keep)
        setenv("SYSFS_PATH", keep, 1);
    else
        unsetenv("SYSFS_PATH");
    free(keep);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
    EXPECT_EQ(system(cmd), 0);
}

/* On this host with the default: a host without EFA loads nothing and says why. */
EFARM_TEST(device_default_without_efa_refuses)
{
    struct efarm_device_choice host;
    struct efarm_device_caps caps;

    unsetenv("EFARM_DEVICE");
    efarm_device_choose("auto", NULL, &host);
    if (host.kind == EFARM_DEVICE_EFA) {
        printf("  this host has an EFA device: nothing to refuse\n");
        return;
    }
    EXPECT_RET(efarm_device_query_all(&caps, 1), EFARM_E(DEV_LOAD));
    EXPECT_EQ(efarm_device_kind(), EFARM_DEVICE_NONE);
    EXPECT_TRUE(strstr(efarm_device_choice()->reason, "does not fall back to the emulator") !=
                NULL);
}

EFARM_TEST(device_raw_address_and_connid)
{
    uint8_t raw_a[EFARM_RAW_ADDR_LEN], raw_b[EFARM_RAW_ADDR_LEN];
    static const uint8_t gid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
    struct pair p;

    use_efasim();
    pair_open(&p, 0, 0, 7);
    efarm_dev_ep_raw_addr(p.a, raw_a);
    efarm_dev_ep_raw_addr(p.b, raw_b);
    EXPECT_MEM_EQ(raw_a, gid, 16);
    EXPECT_TRUE(memcmp(raw_a + 16, raw_b + 16, 2) != 0);         /* distinct QPNs */
    EXPECT_EQ(raw_a[18] | raw_a[19] | raw_a[24] | raw_a[31], 0); /* pad and reserved */
    EXPECT_EQ(raw_a[20] | (uint32_t)raw_a[21] << 8 | (uint32_t)raw_a[22] << 16 |
                  (uint32_t)raw_a[23] << 24,
              efarm_dev_ep_connid(p.a));
    EXPECT_TRUE(efarm_dev_ep_connid(p.a) != efarm_dev_ep_connid(p.b));
    pair_close(&p);
}

EFARM_TEST(device_ah_cache_per_gid)
{
    struct efarm_dev_ah *again;
    struct pair p;

    use_efasim();
    pair_open(&p, 0, 0, 7);
    EXPECT_RET(efarm_dev_ah_get(p.a, p.b_raw, &again), 0);
    EXPECT_TRUE(again == p.a_to_b);
    EXPECT_TRUE(efarm_dev_ah_number(again) != 0);
    pair_close(&p);
}

EFARM_TEST(device_send_recv_sizes_inline_and_registered)
{
    static const uint32_t sizes[] = {0, 1, 31, 32, 33, 100, 4096, 8927, 8928};
    uint8_t *buf = malloc(8928);
    struct efarm_dev_mr *mr;
    struct efarm_dev_cqe c;
    struct pair p;

    use_efasim();
    pair_open(&p, 0, 16, 7);
    EXPECT_RET(efarm_dev_mr_reg(p.a, buf, 8928, false, false, &mr), 0);
    /* Each size through the batch post, then through the single-send post. */
    for (size_t i = 0; i < 2 * sizeof(sizes) / sizeof(sizes[0]); i++) {
        bool one = i >= sizeof(sizes) / sizeof(sizes[0]);
        uint32_t n = sizes[one ? i - sizeof(sizes) / sizeof(sizes[0]) : i];
        /* Inline sends (up to 32 bytes) need no lkey: pass a wrong one to prove it. */
        uint32_t lkey = n <= 32 ? 0xdead : efarm_dev_mr_lkey(mr);

        efarm_test_context("size %u, %s", n, one ? "efarm_dev_post_send1" : "efarm_dev_post_send");
        for (uint32_t k = 0; k < n; k++)
            buf[k] = (uint8_t)(k * 7 + i);
        EXPECT_EQ(one ? efarm_dev_post_send1(p.a, p.a_to_b, p.b_qpn, p.b_qkey, i, buf, n, lkey)
                      : send_bytes(&p, buf, n, lkey, i),
                  1);
        wait_cqe(p.b, EFARM_DEV_OP_RECV, &c);
        EXPECT_RET(c.status, 0);
        EXPECT_EQ(c.len, n);
        EXPECT_MEM_EQ(c.data, buf, n);
        EXPECT_EQ(c.ahn, EFARM_DEV_AHN_UNKNOWN); /* b has no AH for a yet */
        EXPECT_TRUE(c.has_sgid);
        efarm_dev_rx_release(p.b, c.rx_id);
        wait_cqe(p.a, EFARM_DEV_OP_SEND, &c);
        EXPECT_RET(c.status, 0);
        EXPECT_EQ(c.wr_id, i);
    }
    efarm_dev_mr_dereg(mr);
    pair_close(&p);
    free(buf);
}

EFARM_TEST(device_recv_reports_known_ahn)
{
    uint8_t raw_a[EFARM_RAW_ADDR_LEN];
    struct efarm_dev_ah *b_to_a;
    struct efarm_dev_cqe c;
    struct pair p;

    use_efasim();
    pair_open(&p, 0, 4, 7);
    efarm_dev_ep_raw_addr(p.a, raw_a);
    EXPECT_RET(efarm_dev_ah_get(p.b, raw_a, &b_to_a), 0);
    EXPECT_EQ(send_bytes(&p, "hi", 2, 0, 1), 1);
    wait_cqe(p.b, EFARM_DEV_OP_RECV, &c);
    EXPECT_EQ(c.ahn, efarm_dev_ah_number(b_to_a));
    EXPECT_TRUE(!c.has_sgid);
    pair_close(&p);
}

EFARM_TEST(device_batched_sends_and_queue_full)
{
    struct efarm_dev_ep_attr aa = {.sq_depth = 8};
    struct efarm_dev_send s[9];
    struct efarm_dev_cqe c[16];
    struct pair p;
    int got = 0;

    use_efasim();
    pair_open(&p, 0, 64, 7);
    efarm_dev_ep_close(p.a);
    EXPECT_RET(efarm_dev_ep_open(NULL, &aa, &p.a), 0);
    EXPECT_RET(efarm_dev_ah_get(p.a, p.b_raw, &p.a_to_b), 0);
    for (int i = 0; i < 9; i++)
        s[i] = (struct efarm_dev_send){.ah = p.a_to_b,
                                       .qpn = p.b_qpn,
                                       .qkey = p.b_qkey,
                                       .wr_id = (uint64_t)i,
                                       .nseg = 1,
                                       .seg = {{"x", 1, 0}}};
    EXPECT_RET(efarm_dev_post_send(p.a, s, 9), -EAGAIN); /* more than the queue holds */
    EXPECT_EQ(efarm_dev_post_send(p.a, s, 8), 8);
    EXPECT_RET(efarm_dev_post_send(p.a, s, 1), -EAGAIN); /* full until completions */
    EXPECT_RET(efarm_dev_post_send1(p.a, p.a_to_b, p.b_qpn, p.b_qkey, 9, "x", 1, 0), -EAGAIN);
    for (double end = now_s() + 10; got < 8 && now_s() < end;) {
        int n = efarm_dev_poll(p.a, c, 16);

        for (int i = 0; i < n; i++)
            got += c[i].op == EFARM_DEV_OP_SEND && c[i].status == 0;
        n = efarm_dev_poll(p.b, c, 16);
        for (int i = 0; i < n; i++)
            efarm_dev_rx_release(p.b, c[i].rx_id);
    }
    EXPECT_EQ(got, 8);
    EXPECT_EQ(efarm_dev_post_send(p.a, s, 1), 1); /* room again */
    pair_close(&p);
}

EFARM_TEST(device_rx_pool_refills_in_batches)
{
    struct efarm_dev_ep_attr ab = {.rx_buffers = 64, .rx_refill = 16};
    struct efarm_dev_cqe c;
    struct pair p;
    unsigned low = 64;

    use_efasim();
    pair_open_b_attr(&p, &ab);
    EXPECT_EQ(efarm_dev_rx_posted(p.b), 64);
    for (int i = 0; i < 300; i++) {
        EXPECT_EQ(send_bytes(&p, "data", 4, 0, (uint64_t)i), 1);
        wait_cqe(p.b, EFARM_DEV_OP_RECV, &c);
        efarm_dev_rx_release(p.b, c.rx_id);
        low = efarm_dev_rx_posted(p.b) < low ? efarm_dev_rx_posted(p.b) : low;
        wait_cqe(p.a, EFARM_DEV_OP_SEND, &c);
    }
    /* Reposted 16 at a time: never more than a batch short. */
    EXPECT_TRUE(low >= 64 - 16);
    EXPECT_TRUE(efarm_dev_rx_posted(p.b) > 64 - 16);
    pair_close(&p);
}

/*
 * A caller that holds most buffers (back-pressure) and gives back fewer than
 * a batch: with none posted, each goes back to the device at once, so a
 * packet can land. Before, they waited for a full batch while the device
 * had no buffer at all and answered every sender with RNR.
 */
EFARM_TEST(device_rx_pool_reposts_when_short)
{
    struct efarm_dev_ep_attr ab = {.rx_buffers = 16, .rx_refill = 8};
    struct efarm_dev_cqe c;
    uint32_t ids[16];
    struct pair p;

    use_efasim();
    pair_open_b_attr(&p, &ab);
    for (int i = 0; i < 16; i++) {
        EXPECT_EQ(send_bytes(&p, "data", 4, 0, (uint64_t)i), 1);
        wait_cqe(p.b, EFARM_DEV_OP_RECV, &c);
        ids[i] = c.rx_id;
        wait_cqe(p.a, EFARM_DEV_OP_SEND, &c);
    }
    EXPECT_EQ(efarm_dev_rx_posted(p.b), 0);
    for (int i = 0; i < 3; i++) {
        efarm_dev_rx_release(p.b, ids[i]);
        EXPECT_EQ(efarm_dev_rx_posted(p.b), (unsigned)i + 1);
    }
    /* One more packet lands in one of them. */
    EXPECT_EQ(send_bytes(&p, "more", 4, 0, 99), 1);
    wait_cqe(p.b, EFARM_DEV_OP_RECV, &c);
    EXPECT_RET(c.status, 0);
    wait_cqe(p.a, EFARM_DEV_OP_SEND, &c);
    EXPECT_RET(c.status, 0);
    pair_close(&p);
}

/*
 * The engine's poll session (efarm_device_inline.h): buffers released inside
 * it wait for its end, and a refill the device refuses part of counts the
 * part it took. Two packets into a pool of 4 whose receive queue holds 4: in
 * the session, with the second completion current, the device has room for
 * one repost only (a slot is freed when its completion stops being current,
 * in efasim as in rdma-core's EFA provider). Counting that partial refill as
 * nothing would post the buffer a second time at the session's end, and two
 * packets would land in it: the four packets after it must land in four
 * distinct buffers with their own data.
 */
EFARM_TEST(device_poll_session_defers_refill_and_counts_partial_posts)
{
    struct efarm_dev_ep_attr ab = {.rx_buffers = 4, .rx_refill = 4};
    struct efarm_dev_cqe c;
    uint32_t first, second, seen = 0;
    struct pair p;
    double deadline;

    use_efasim();
    pair_open_b_attr(&p, &ab);
    EXPECT_EQ(efarm_dev_rx_posted(p.b), 4);
    for (int i = 0; i < 2; i++) {
        EXPECT_EQ(send_bytes(&p, "data", 4, 0, (uint64_t)i), 1);
        wait_cqe(p.a, EFARM_DEV_OP_SEND, &c); /* acknowledged: in b's CQ */
    }
    deadline = now_s() + 10;
    while (!efarm_dev_poll_start(p.b))
        EXPECT_TRUE(now_s() < deadline);
    EXPECT_TRUE(efarm_dev_cur_is_recv(p.b));
    efarm_dev_cur_take(p.b, true);
    first = (uint32_t)efarm_dev_cur_wr_id(p.b);
    EXPECT_TRUE(efarm_dev_poll_next(p.b)); /* the first's slot is free now */
    efarm_dev_cur_take(p.b, true);
    second = (uint32_t)efarm_dev_cur_wr_id(p.b);
    EXPECT_TRUE(second != first);
    EXPECT_EQ(efarm_dev_rx_posted(p.b), 2);
    efarm_dev_rx_release(p.b, first);
    EXPECT_EQ(efarm_dev_rx_posted(p.b), 2); /* not reposted inside the session */
    efarm_dev_rx_release(p.b, second);
    efarm_dev_rx_refill(p.b, true); /* room for one: the second is still current */
    EXPECT_EQ(efarm_dev_rx_posted(p.b), 3);
    efarm_dev_poll_end(p.b); /* the other goes now */
    EXPECT_EQ(efarm_dev_rx_posted(p.b), 4);
    for (int i = 0; i < 4; i++) {
        char msg[5] = {'m', 's', 'g', (char)('0' + i), 0};

        EXPECT_EQ(send_bytes(&p, msg, 4, 0, (uint64_t)(10 + i)), 1);
        wait_cqe(p.b, EFARM_DEV_OP_RECV, &c);
        EXPECT_RET(c.status, 0);
        EXPECT_TRUE(c.rx_id < 4 && !(seen & 1u << c.rx_id));
        seen |= 1u << c.rx_id;
        EXPECT_TRUE(c.len == 4 && !memcmp(c.data, msg, 4));
        wait_cqe(p.a, EFARM_DEV_OP_SEND, &c);
    }
    EXPECT_EQ(seen, 0xfu);
    pair_close(&p);
}

EFARM_TEST(device_rnr_maps_to_dev_rnr)
{
    struct efarm_dev_cqe c;
    struct pair p;

    use_efasim();
    setenv("EFASIM_RNR_BACKOFF_US", "100", 1);
    pair_open(&p, 0, 0, 1); /* b posts no receives; a retries RNR once */
    EXPECT_EQ(send_bytes(&p, "x", 1, 0, 7), 1);
    wait_cqe(p.a, EFARM_DEV_OP_SEND, &c);
    EXPECT_RET(c.status, EFARM_E(DEV_RNR));
    EXPECT_EQ(c.vendor_err, 10);
    pair_close(&p);
}

EFARM_TEST(device_rdma_read_write_and_bad_key)
{
    enum { LEN = 100000 };
    uint8_t *src = malloc(LEN), *dst = malloc(LEN);
    struct efarm_dev_mr *msrc, *mdst;
    struct efarm_dev_cqe c;
    struct pair p;

    use_efasim();
    setenv("EFASIM_RDMA_WRITE", "1", 1);
    pair_open(&p, 0, 0, 7);
    for (int i = 0; i < LEN; i++)
        src[i] = (uint8_t)(i * 13);
    memset(dst, 0, LEN);
    EXPECT_RET(efarm_dev_mr_reg(p.b, src, LEN, true, true, &msrc), 0);
    EXPECT_RET(efarm_dev_mr_reg(p.a, dst, LEN, false, false, &mdst), 0);

    EXPECT_RET(efarm_dev_post_read(p.a, p.a_to_b, p.b_qpn, p.b_qkey, dst, LEN,
                                   efarm_dev_mr_lkey(mdst), (uintptr_t)src, efarm_dev_mr_rkey(msrc),
                                   1),
               0);
    wait_cqe(p.a, EFARM_DEV_OP_SEND, &c); /* EFA reports an RDMA read as a send */
    EXPECT_EQ(c.wr_id, 1);
    EXPECT_RET(c.status, 0);
    EXPECT_MEM_EQ(dst, src, LEN);

    memset(dst, 0x5a, LEN);
    if (!efarm_dev_ep_caps(p.a)->rdma_write) {
        /* Through rdma-core 44 (EFARM_TEST_DEVICE=efa) libefa knows no RDMA write
         * capability to report: efarm refuses the write, as on a device without it. */
        EXPECT_TRUE(strcmp(efarm_test_device(), "sim") != 0);
        EXPECT_RET(efarm_dev_post_write(p.a, p.a_to_b, p.b_qpn, p.b_qkey, dst, LEN,
                                        efarm_dev_mr_lkey(mdst), (uintptr_t)src,
                                        efarm_dev_mr_rkey(msrc), 2),
                   -EOPNOTSUPP);
    } else {
        EXPECT_RET(efarm_dev_post_write(p.a, p.a_to_b, p.b_qpn, p.b_qkey, dst, LEN,
                                        efarm_dev_mr_lkey(mdst), (uintptr_t)src,
                                        efarm_dev_mr_rkey(msrc), 2),
                   0);
        wait_cqe(p.a, EFARM_DEV_OP_SEND, &c);
        EXPECT_EQ(c.wr_id, 2);
        EXPECT_RET(c.status, 0);
        EXPECT_MEM_EQ(src, dst, LEN);
    }

    EXPECT_RET(efarm_dev_post_read(p.a, p.a_to_b, p.b_qpn, p.b_qkey, dst, 64,
                                   efarm_dev_mr_lkey(mdst), (uintptr_t)src,
                                   efarm_dev_mr_rkey(msrc) ^ 0x100, 3),
               0);
    wait_cqe(p.a, EFARM_DEV_OP_SEND, &c);
    EXPECT_EQ(c.wr_id, 3);
    EXPECT_RET(c.status, EFARM_E(DEV_REMOTE_ACCESS));
    EXPECT_EQ(c.vendor_err, 7);
    efarm_dev_mr_dereg(msrc);
    efarm_dev_mr_dereg(mdst);
    pair_close(&p);
    free(src);
    free(dst);
}

EFARM_TEST(device_write_refused_without_the_capability)
{
    uint8_t buf[64];
    struct efarm_dev_mr *mr;
    struct pair p;

    use_efasim();
    pair_open(&p, 0, 0, 7);
    EXPECT_RET(efarm_dev_mr_reg(p.a, buf, sizeof(buf), false, false, &mr), 0);
    EXPECT_RET(efarm_dev_post_write(p.a, p.a_to_b, p.b_qpn, p.b_qkey, buf, 8, efarm_dev_mr_lkey(mr),
                                    0, 0, 1),
               -EOPNOTSUPP);
    efarm_dev_mr_dereg(mr);
    pair_close(&p);
}

EFARM_TEST(device_registration_failure_is_reported)
{
    static uint8_t bufs[4][4096];
    struct efarm_dev_mr *mr[4];
    struct efarm_dev_ep *ep;
    int ok = 0, ret = 0;

    use_efasim();
    setenv("EFASIM_MAX_MR", "3", 1); /* the endpoint's rx pool takes one */
    EXPECT_RET(efarm_dev_ep_open(NULL, &(struct efarm_dev_ep_attr){.rx_buffers = 4}, &ep), 0);
    while (ok < 4 && !(ret = efarm_dev_mr_reg(ep, bufs[ok], 4096, true, false, &mr[ok])))
        ok++;
    EXPECT_EQ(ok, 2);
    EXPECT_RET(ret, -ENOMEM);
    while (ok)
        efarm_dev_mr_dereg(mr[--ok]);
    efarm_dev_ep_close(ep);
}

EFARM_TEST_TIMEOUT(device_open_allocation_failure_walk, 60)
{
    struct efarm_dev_ep_attr attr = {.rx_buffers = 8};
    struct efarm_dev_ah *ah;
    struct efarm_dev_ep *ep;
    uint8_t raw[EFARM_RAW_ADDR_LEN];
    unsigned k;
    int ret;

    use_efasim();
    /* Fail the 1st, 2nd, ... allocation of open until open needs no more. */
    for (k = 1; k < 100; k++) {
        efarm_test_context("allocation %u fails", k);
        efarm_dev_alloc_fail_at(k);
        ret = efarm_dev_ep_open(NULL, &attr, &ep);
        efarm_dev_alloc_fail_at(0);
        if (!ret)
            break;
        EXPECT_RET(ret, -ENOMEM);
    }
    EXPECT_TRUE(k > 1 && k < 100);
    /* And the AH cache's allocation. */
    efarm_dev_ep_raw_addr(ep, raw);
    efarm_dev_alloc_fail_at(1);
    EXPECT_RET(efarm_dev_ah_get(ep, raw, &ah), -ENOMEM);
    efarm_dev_alloc_fail_at(0);
    EXPECT_RET(efarm_dev_ah_get(ep, raw, &ah), 0);
    efarm_dev_ep_close(ep);
}

/* The cache on a real (emulated) device: a hit reuses the key, RDMA works through it. */
EFARM_TEST(device_mr_cache_on_efasim)
{
    enum { LEN = 1 << 16 };
    uint8_t *src = malloc(LEN), *dst = malloc(LEN);
    struct efarm_mr_cache_stats st;
    struct efarm_mr_ref r1, r2;
    struct efarm_mr_cache *cache;
    struct efarm_dev_mr *mdst;
    struct efarm_dev_cqe c;
    struct pair p;

    use_efasim();
    pair_open(&p, 0, 0, 7);
    EXPECT_RET(efarm_dev_mr_cache_open(p.b, &cache), 0);
    for (int i = 0; i < LEN; i++)
        src[i] = (uint8_t)(i * 3);
    EXPECT_RET(efarm_mr_cache_get(cache, src, LEN, IBV_ACCESS_REMOTE_READ, &r1), 0);
    efarm_mr_cache_put(cache, &r1);
    EXPECT_RET(efarm_mr_cache_get(cache, src + 100, 1000, IBV_ACCESS_REMOTE_READ, &r2), 0);
    efarm_mr_cache_stats(cache, &st);
    if (efarm_mem_hook_status() == EFARM_MEM_HOOK_LIVE) {
        EXPECT_EQ(st.hits, 1);
        EXPECT_EQ(r2.rkey, r1.rkey);
    } else {
        EXPECT_EQ(st.misses, 2); /* sanitizer builds: no hook, so the cache passes through */
    }
    /* The receiver reads the sender's buffer through the cached key. */
    EXPECT_RET(efarm_dev_mr_reg(p.a, dst, LEN, false, false, &mdst), 0);
    /* Through r2, exactly the range it was obtained for (all a pass-through one covers). */
    EXPECT_RET(efarm_dev_post_read(p.a, p.a_to_b, p.b_qpn, p.b_qkey, dst, 1000,
                                   efarm_dev_mr_lkey(mdst), (uintptr_t)(src + 100), r2.rkey, 9),
               0);
    wait_cqe(p.a, EFARM_DEV_OP_SEND, &c);
    EXPECT_EQ(c.wr_id, 9);
    EXPECT_RET(c.status, 0);
    EXPECT_MEM_EQ(dst, src + 100, 1000);
    efarm_mr_cache_put(cache, &r2);
    efarm_mr_cache_close(cache);
    efarm_dev_mr_dereg(mdst);
    pair_close(&p);
    free(src);
    free(dst);
}

/* Freed and remapped memory must not be served by the old registration (the hook). */
EFARM_TEST(device_mr_cache_address_reuse_on_efasim)
{
    const size_t len = 1 << 20;
    struct efarm_mr_cache_stats st;
    struct efarm_mr_cache *cache;
    struct efarm_mr_ref r;
    struct pair p;
    void *a, *b;

    use_efasim();
    pair_open(&p, 0, 0, 7);
    EXPECT_RET(efarm_dev_mr_cache_open(p.b, &cache), 0);
    a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_TRUE(a != MAP_FAILED);
    EXPECT_RET(efarm_mr_cache_get(cache, a, len, IBV_ACCESS_REMOTE_READ, &r), 0);
    efarm_mr_cache_put(cache, &r);
    EXPECT_EQ(munmap(a, len), 0);
    b = mmap(a, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
             0);
    EXPECT_TRUE(b == a);
    EXPECT_RET(efarm_mr_cache_get(cache, b, len, IBV_ACCESS_REMOTE_READ, &r), 0);
    efarm_mr_cache_stats(cache, &st);
    if (efarm_mem_hook_status() == EFARM_MEM_HOOK_LIVE)
        EXPECT_EQ(st.hits, 0); /* invalidated by munmap: a second miss */
    EXPECT_EQ(st.misses, 2);
    efarm_mr_cache_put(cache, &r);
    efarm_mr_cache_close(cache);
    munmap(b, len);
    pair_close(&p);
}

/* efasim's devices have no PCI locality: ranks share them by local rank. */
EFARM_TEST(device_choose_nic_balances_placeless_devices)
{
    char name[EFARM_DEV_NAME_MAX];

    use_efasim();
    setenv("EFASIM_NDEV", "3", 1);
    for (unsigned r = 0; r < 6; r++) {
        efarm_test_context("local rank %u of 6", r);
        struct efarm_nic_choice c;

        EXPECT_RET(efarm_dev_choose_nic(r, 6, NULL, name, &c), 0);
        char want[32];

        snprintf(want, sizeof(want), "efasim_%u", r % 3);
        EXPECT_TRUE(!strcmp(name, want));
        EXPECT_EQ(c.index, r % 3);
        EXPECT_EQ(c.ndevices, 3);
        EXPECT_EQ(c.nearness, EFARM_NIC_UNBOUND);
        EXPECT_EQ(c.nsharing, 6);
        EXPECT_EQ(c.position, r);
    }
    EXPECT_RET(efarm_dev_choose_nic(6, 6, NULL, name, NULL), -EINVAL);
}

EFARM_TEST(device_choose_nic_honours_iface_and_bindings)
{
    const char *bindings[4] = {"0", NULL, "", "0-1"};
    char name[EFARM_DEV_NAME_MAX];

    use_efasim();
    setenv("EFASIM_NDEV", "3", 1);
    setenv("EFARM_IFACE", "efasim_2", 1);
    for (unsigned r = 0; r < 4; r++) {
        EXPECT_RET(efarm_dev_choose_nic(r, 4, bindings, name, NULL), 0);
        EXPECT_TRUE(!strcmp(name, "efasim_2"));
    }
    bindings[0] = "not a bitmap";
    EXPECT_RET(efarm_dev_choose_nic(0, 4, bindings, name, NULL), -EINVAL);
}

/* The process's own binding as the netmod publishes it: one CPU, then none (every CPU). */
EFARM_TEST(device_cpu_binding_reads_the_process_affinity)
{
    cpu_set_t saved, one;
    char buf[256], tiny[1]; /* not even one CPU number fits */

    EXPECT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
    if (CPU_COUNT(&saved) < 2) {
        fprintf(stderr, "note: one CPU only, so no binding to a part of the machine to read\n");
        return;
    }
    int cpu = 0;

    while (!CPU_ISSET(cpu, &saved))
        cpu++;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    EXPECT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
    EXPECT_RET(efarm_dev_cpu_binding(buf, sizeof(buf)), 0);
    EXPECT_RET(efarm_dev_cpu_binding(tiny, sizeof(tiny)), -ENAMETOOLONG);
    EXPECT_EQ(tiny[0], '\0');
    EXPECT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
    char want[32];

    snprintf(want, sizeof(want), "%d", cpu);
    if (strcmp(buf, want))
        efarm_test_fail(__FILE__, __LINE__, "bound to CPU %d: binding '%s', expected '%s'", cpu,
                        buf, want);
    EXPECT_RET(efarm_dev_cpu_binding(buf, sizeof(buf)), 0);
    if (CPU_COUNT(&saved) == (int)sysconf(_SC_NPROCESSORS_ONLN) && buf[0])
        efarm_test_fail(__FILE__, __LINE__, "bound to every CPU: binding '%s', expected ''", buf);
}

/*
 * EFARM_TOPOLOGY describes the machine: two sockets with PUs numbered
 * round-robin (PU 1 on socket 1) and efasim's four devices two per socket.
 * Bound to PU 1, this process is on socket 1, so its device is one of socket
 * 1's; the rank bound to PU 0 takes one of socket 0's.
 */
EFARM_TEST(device_choose_nic_from_efarm_topology)
{
    static const struct nic_at nics[] = {NIC("efasim_0", 0, -1), NIC("efasim_1", 1, -1),
                                         NIC("efasim_2", 0, -1), NIC("efasim_3", 1, -1)};
    const struct topo_spec spec = {2, 1, 2, nics, 4, NULL, true};
    char path[] = "/tmp/efarm-topo-XXXXXX", name[EFARM_DEV_NAME_MAX], mine[256];
    const char *bindings[2] = {mine, "0"};
    struct efarm_nic_choice c;
    cpu_set_t saved, one;
    char *xml = topo_xml(&spec);
    int fd = mkstemp(path);

    EXPECT_TRUE(xml != NULL && fd >= 0);
    EXPECT_EQ(write(fd, xml, strlen(xml)), (ssize_t)strlen(xml));
    close(fd);
    free(xml);
    EXPECT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
    if (!CPU_ISSET(1, &saved)) {
        fprintf(stderr, "note: CPU 1 is not ours, so no binding to it to read\n");
        unlink(path);
        return;
    }
    use_efasim();
    setenv("EFASIM_NDEV", "4", 1);
    setenv("EFARM_TOPOLOGY", path, 1);
    CPU_ZERO(&one);
    CPU_SET(1, &one);
    EXPECT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
    EXPECT_RET(efarm_dev_cpu_binding(mine, sizeof(mine)), 0);
    EXPECT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
    EXPECT_TRUE(!strcmp(mine, "1"));
    EXPECT_RET(efarm_dev_choose_nic(0, 2, bindings, name, &c), 0);
    efarm_test_context("local rank 0 chose %s: %s", name, c.reason);
    EXPECT_TRUE(!strcmp(name, "efasim_1"));
    EXPECT_EQ(c.ntied, 2);
    EXPECT_TRUE(c.nearness != EFARM_NIC_UNBOUND && c.nearness != EFARM_NIC_ANYWHERE);
    EXPECT_RET(efarm_dev_choose_nic(1, 2, bindings, name, &c), 0);
    EXPECT_TRUE(!strcmp(name, "efasim_0"));
    unlink(path);
}

/* An EFARM_TOPOLOGY that is no readable file is refused; the choice fails. */
EFARM_TEST(device_choose_nic_missing_efarm_topology)
{
    char name[EFARM_DEV_NAME_MAX];

    use_efasim();
    setenv("EFARM_TOPOLOGY", "/nonexistent/topology.xml", 1);
    EXPECT_RET(efarm_dev_choose_nic(0, 1, NULL, name, NULL), -EINVAL);
}

/* A readable EFARM_TOPOLOGY that hwloc cannot load fails the choice (with a message naming it). */
EFARM_TEST(device_choose_nic_bad_efarm_topology)
{
    char name[EFARM_DEV_NAME_MAX];
    char path[] = "/tmp/efarm-topo-XXXXXX";
    int fd = mkstemp(path);

    EXPECT_TRUE(fd >= 0);
    EXPECT_TRUE(write(fd, "not xml\n", 8) == 8);
    close(fd);
    use_efasim();
    setenv("EFARM_TOPOLOGY", path, 1);
    EXPECT_EQ(efarm_config_status(NULL), 0);
    EXPECT_RET(efarm_dev_choose_nic(0, 1, NULL, name, NULL), -EINVAL);
    unlink(path);
}

EFARM_TEST(device_choose_nic_iface_naming_nothing)
{
    char name[EFARM_DEV_NAME_MAX];

    use_efasim();
    setenv("EFARM_IFACE", "rdmap99s0", 1);
    EXPECT_RET(efarm_dev_choose_nic(0, 1, NULL, name, NULL), -ENODEV);
}

EFARM_TEST(device_choose_nic_allocation_failure_walk)
{
    const char *bindings[3] = {"0", "1", NULL};
    char name[EFARM_DEV_NAME_MAX];
    unsigned k;
    int ret;

    use_efasim();
    setenv("EFASIM_NDEV", "2", 1);
    EXPECT_RET(efarm_dev_choose_nic(0, 3, bindings, name, NULL), 0); /* load the libraries first */
    for (k = 1; k < 200; k++) {
        efarm_test_context("allocation %u fails", k);
        efarm_dev_alloc_fail_at(k);
        ret = efarm_dev_choose_nic(1, 3, bindings, name, NULL);
        efarm_dev_alloc_fail_at(0);
        if (!ret)
            break;
        EXPECT_RET(ret, -ENOMEM);
    }
    EXPECT_TRUE(k > 3 && k < 200); /* several allocation points were walked */
}

/* Every completion status the issue names maps to the device's own code. */
EFARM_TEST(device_status_mapping)
{
    EXPECT_RET(efarm_dev_status(IBV_WC_SUCCESS, 0), 0);
    EXPECT_RET(efarm_dev_status(IBV_WC_RNR_RETRY_EXC_ERR, 0), EFARM_E(DEV_RNR));
    EXPECT_RET(efarm_dev_status(IBV_WC_REM_ACCESS_ERR, 0), EFARM_E(DEV_REMOTE_ACCESS));
    EXPECT_RET(efarm_dev_status(IBV_WC_LOC_LEN_ERR, 0), EFARM_E(DEV_LOCAL_LENGTH));
    EXPECT_RET(efarm_dev_status(IBV_WC_LOC_PROT_ERR, 0), EFARM_E(DEV_LOCAL_PROTECTION));
    EXPECT_RET(efarm_dev_status(IBV_WC_WR_FLUSH_ERR, 0), EFARM_E(DEV_FLUSHED));
    EXPECT_RET(efarm_dev_status(IBV_WC_REM_INV_RD_REQ_ERR, 0), EFARM_E(DEV_REMOTE_QP));
    EXPECT_RET(efarm_dev_status(IBV_WC_REM_INV_REQ_ERR, 0), EFARM_E(DEV_REMOTE_LENGTH));
    EXPECT_RET(efarm_dev_status(IBV_WC_LOC_QP_OP_ERR, 0), EFARM_E(DEV_LOCAL_QP));
    EXPECT_RET(efarm_dev_status(IBV_WC_RESP_TIMEOUT_ERR, 0), EFARM_E(DEV_TIMEOUT));
    EXPECT_RET(efarm_dev_status(IBV_WC_GENERAL_ERR, 0), EFARM_E(DEV_GENERAL));
}

/*
 * rdma-core 44 (Debian bookworm's) reports EFA's statuses 7 (bad remote address
 * or key), 14 (unknown peer) and 15 (unreachable) as IBV_WC_GENERAL_ERR; newer
 * releases as REM_ACCESS, REM_OP and RESP_TIMEOUT. efarm reads EFA's status, so
 * both give the same error.
 */
EFARM_TEST(device_status_general_error_by_efa_status)
{
    EXPECT_RET(efarm_dev_status(IBV_WC_GENERAL_ERR, 7), EFARM_E(DEV_REMOTE_ACCESS));
    EXPECT_RET(efarm_dev_status(IBV_WC_REM_ACCESS_ERR, 7), EFARM_E(DEV_REMOTE_ACCESS));
    EXPECT_RET(efarm_dev_status(IBV_WC_GENERAL_ERR, 15), EFARM_E(DEV_TIMEOUT));
    EXPECT_RET(efarm_dev_status(IBV_WC_RESP_TIMEOUT_ERR, 15), EFARM_E(DEV_TIMEOUT));
    EXPECT_RET(efarm_dev_status(IBV_WC_GENERAL_ERR, 14), EFARM_E(DEV_REMOTE_QP));
    EXPECT_RET(efarm_dev_status(IBV_WC_GENERAL_ERR, 12), EFARM_E(DEV_GENERAL));
}

/* EFARM_DEVICE=efa loads the system's rdma-core; without EFA hardware it finds none. */
EFARM_TEST(device_efa_mode_loads_the_system_libraries)
{
    struct efarm_device_caps caps[4];
    int n;

    if (strcmp(efarm_test_device(), "sim"))
        efarm_test_skip("EFARM_TEST_DEVICE=efa: the system's rdma-core has an EFA device here "
                        "(efasim's kernel front end)");
    setenv("EFARM_DEVICE", "efa", 1);
    n = efarm_device_query_all(caps, 4);
    EXPECT_EQ(efarm_device_kind(), EFARM_DEVICE_EFA);
    /* No RDMA subsystem at all makes the real libibverbs return no list: DEV_NONE. */
    EXPECT_TRUE(n >= 0 || n == EFARM_E(DEV_NONE));
    for (int i = 0; i < n && i < 4; i++)
        EXPECT_TRUE(strncmp(caps[i].name, "efasim", 6) != 0);
}
