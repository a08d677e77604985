/*
 * efasim-pingpong: a two-process check of efasim across hosts (network
 * namespaces over veth, see test_efasim_netns.sh). The server publishes its
 * GID and QP number in DIR/server.addr; the client sends COUNT messages of
 * varying size, each filled from its index, and the server echoes them; the
 * client checks every byte of every echo. Exit 0 only if all came back intact.
 *
 *   efasim-pingpong server|client DIR COUNT
 */
#include <errno.h>
#include <infiniband/efadv.h>
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define QKEY   0x7a11
#define NRECV  64
#define MSGMAX 8928

struct ep {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq_ex *cq;
    struct ibv_qp *qp;
    struct ibv_qp_ex *qpx;
    struct ibv_mr *mr;
    struct ibv_ah *ah;
    uint32_t peer_qpn;
    uint8_t *buf; /* NRECV receive slots, then the send slot */
};

/* ibv_start_poll's attribute: rdma-core's EFA provider reads it, so never NULL. */
static struct ibv_poll_cq_attr g_poll_attr = {.comp_mask = 0};

static void fail(const char *what)
{
    fprintf(stderr, "efasim-pingpong: %s: %s\n", what, strerror(errno));
    exit(1);
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void post_recv(struct ep *e, uint64_t slot)
{
    struct ibv_sge sge = {(uintptr_t)(e->buf + slot * MSGMAX), MSGMAX, e->mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1}, *bad;

    if (ibv_post_recv(e->qp, &wr, &bad))
        fail("ibv_post_recv");
}

static void ep_open(struct ep *e)
{
    struct ibv_device **list = ibv_get_device_list(NULL);
    struct ibv_cq_init_attr_ex cqa = {.cqe = 1024, .wc_flags = IBV_WC_EX_WITH_BYTE_LEN};
    struct efadv_qp_init_attr ea = {.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD};
    struct ibv_qp_init_attr_ex qa = {
        .qp_type = IBV_QPT_DRIVER,
        .cap = {.max_send_wr = 64, .max_recv_wr = NRECV, .max_send_sge = 1, .max_recv_sge = 1},
        .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
        .send_ops_flags = IBV_QP_EX_WITH_SEND};
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY};

    if (!list || !list[0] || !(e->ctx = ibv_open_device(list[0])))
        fail("ibv_open_device");
    e->pd = ibv_alloc_pd(e->ctx);
    e->cq = ibv_create_cq_ex(e->ctx, &cqa);
    if (!e->pd || !e->cq)
        fail("pd/cq");
    qa.pd = e->pd;
    qa.send_cq = qa.recv_cq = ibv_cq_ex_to_cq(e->cq);
    e->qp = efadv_create_qp_ex(e->ctx, &qa, &ea, sizeof(ea));
    if (!e->qp)
        fail("efadv_create_qp_ex");
    if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
        fail("INIT");
    a.qp_state = IBV_QPS_RTR;
    if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE))
        fail("RTR");
    a.qp_state = IBV_QPS_RTS;
    a.rnr_retry = 7;
    if (ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RNR_RETRY))
        fail("RTS");
    e->qpx = ibv_qp_to_qp_ex(e->qp);
    e->buf = calloc(NRECV + 1, MSGMAX);
    e->mr = e->buf ? ibv_reg_mr(e->pd, e->buf, (NRECV + 1) * (size_t)MSGMAX, IBV_ACCESS_LOCAL_WRITE)
                   : NULL;
    if (!e->mr)
        fail("ibv_reg_mr");
    for (uint64_t i = 0; i < NRECV; i++)
        post_recv(e, i);
    ibv_free_device_list(list);
}

static void ep_connect(struct ep *e, const union ibv_gid *gid, uint32_t qpn)
{
    struct ibv_ah_attr attr = {.is_global = 1, .port_num = 1};

    attr.grh.dgid = *gid;
    e->ah = ibv_create_ah(e->pd, &attr);
    if (!e->ah)
        fail("ibv_create_ah");
    e->peer_qpn = qpn;
}

static void ep_send(struct ep *e, const uint8_t *data, size_t len)
{
    uint8_t *slot = e->buf + (size_t)NRECV * MSGMAX;

    memcpy(slot, data, len);
    ibv_wr_start(e->qpx);
    e->qpx->wr_id = 0;
    e->qpx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_send(e->qpx);
    ibv_wr_set_ud_addr(e->qpx, e->ah, e->peer_qpn, QKEY);
    ibv_wr_set_sge(e->qpx, e->mr->lkey, (uintptr_t)slot, (uint32_t)len);
    if (ibv_wr_complete(e->qpx))
        fail("ibv_wr_complete");
}

/* Poll until a receive completes (sends must complete successfully meanwhile). */
static size_t ep_recv(struct ep *e, uint8_t *out, double timeout_s, struct ibv_cq_ex *cq)
{
    double deadline = now_s() + timeout_s;

    while (now_s() < deadline) {
        if (ibv_start_poll(cq, &g_poll_attr))
            continue;
        do {
            if (cq->status != IBV_WC_SUCCESS) {
                fprintf(stderr, "efasim-pingpong: completion failed: %s (vendor %u)\n",
                        ibv_wc_status_str(cq->status), ibv_wc_read_vendor_err(cq));
                exit(1);
            }
            if (ibv_wc_read_opcode(cq) == IBV_WC_RECV) {
                uint64_t slot = cq->wr_id;
                size_t n = ibv_wc_read_byte_len(cq);

                ibv_end_poll(cq);
                memcpy(out, e->buf + slot * MSGMAX, n);
                post_recv(e, slot);
                return n;
            }
        } while (!ibv_next_poll(cq));
        ibv_end_poll(cq);
    }
    fprintf(stderr, "efasim-pingpong: nothing arrived within %.0f s\n", timeout_s);
    exit(1);
}

/* Poll until one send completes successfully. */
static void ep_wait_send(struct ep *e, double timeout_s)
{
    double deadline = now_s() + timeout_s;

    while (now_s() < deadline) {
        if (ibv_start_poll(e->cq, &g_poll_attr))
            continue;
        do {
            if (e->cq->status != IBV_WC_SUCCESS) {
                fprintf(stderr, "efasim-pingpong: send failed: %s\n",
                        ibv_wc_status_str(e->cq->status));
                exit(1);
            }
            if (ibv_wc_read_opcode(e->cq) == IBV_WC_SEND) {
                ibv_end_poll(e->cq);
                return;
            }
        } while (!ibv_next_poll(e->cq));
        ibv_end_poll(e->cq);
    }
    fprintf(stderr, "efasim-pingpong: the hello never completed\n");
    exit(1);
}

/* Keep polling for `secs`, so the last sends complete and their ACKs go out. */
static void ep_drain(struct ep *e, double secs)
{
    double end = now_s() + secs;

    while (now_s() < end) {
        if (ibv_start_poll(e->cq, &g_poll_attr))
            continue;
        do {
            if (e->cq->status != IBV_WC_SUCCESS) {
                fprintf(stderr, "efasim-pingpong: completion failed: %s\n",
                        ibv_wc_status_str(e->cq->status));
                exit(1);
            }
        } while (!ibv_next_poll(e->cq));
        ibv_end_poll(e->cq);
    }
}

static size_t msg_len(unsigned i)
{
    return (size_t)(i * 2654435761u % (MSGMAX + 1));
}

static void msg_fill(uint8_t *p, size_t n, unsigned i)
{
    for (size_t k = 0; k < n; k++)
        p[k] = (uint8_t)(i * 31 + k * 7);
}

int main(int argc, char **argv)
{
    static uint8_t msg[MSGMAX], got[MSGMAX];
    char path[4096], tmp[4200];
    struct ep e = {0};
    union ibv_gid gid;
    unsigned count;
    FILE *f;

    if (argc != 4 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
        fprintf(stderr, "usage: efasim-pingpong server|client DIR COUNT\n");
        return 2;
    }
    count = (unsigned)atoi(argv[3]);
    snprintf(path, sizeof(path), "%s/server.addr", argv[2]);
    ep_open(&e);
    if (!strcmp(argv[1], "server")) {
        union ibv_gid peer_gid;
        uint32_t peer_qpn;
        size_t n;

        if (ibv_query_gid(e.ctx, 1, 0, &gid))
            fail("ibv_query_gid");
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        f = fopen(tmp, "w");
        if (!f)
            fail(tmp);
        for (int i = 0; i < 16; i++)
            fprintf(f, "%02x", gid.raw[i]);
        fprintf(f, " %u\n", e.qp->qp_num);
        if (fclose(f) || rename(tmp, path))
            fail(path);
        /* The client's first message carries its GID and QPN. */
        n = ep_recv(&e, got, 30, e.cq);
        if (n != sizeof(peer_gid) + sizeof(peer_qpn))
            return 1;
        memcpy(&peer_gid, got, sizeof(peer_gid));
        memcpy(&peer_qpn, got + sizeof(peer_gid), sizeof(peer_qpn));
        ep_connect(&e, &peer_gid, peer_qpn);
        for (unsigned i = 0; i < count; i++) {
            n = ep_recv(&e, got, 30, e.cq);
            ep_send(&e, got, n);
        }
        ep_drain(&e, 0.5); /* let the last echo complete before the QP goes away */
        return 0;
    }

    /* client */
    unsigned qpn = 0;
    char hex[33] = {0};
    double deadline = now_s() + 30;

    while (!(f = fopen(path, "r"))) {
        if (now_s() > deadline)
            fail("waiting for the server's address");
        usleep(10000);
    }
    if (fscanf(f, "%32s %u", hex, &qpn) != 2)
        return 1;
    fclose(f);
    for (int i = 0; i < 16; i++)
        sscanf(hex + 2 * i, "%2hhx", &gid.raw[i]);
    ep_connect(&e, &gid, qpn);
    if (ibv_query_gid(e.ctx, 1, 0, &gid))
        fail("ibv_query_gid");
    memcpy(msg, &gid, sizeof(gid));
    memcpy(msg + sizeof(gid), &e.qp->qp_num, sizeof(uint32_t));
    ep_send(&e, msg, sizeof(gid) + sizeof(uint32_t));
    /* SRD does not keep order: nothing may overtake the hello, so wait until it landed. */
    ep_wait_send(&e, 30);
    for (unsigned i = 0; i < count; i++) {
        size_t n = msg_len(i), r;

        msg_fill(msg, n, i);
        ep_send(&e, msg, n);
        r = ep_recv(&e, got, 30, e.cq);
        if (r != n || memcmp(msg, got, n)) {
            fprintf(stderr, "efasim-pingpong: echo %u came back wrong (%zu of %zu bytes)\n", i, r,
                    n);
            return 1;
        }
    }
    printf("efasim-pingpong: %u echoes intact\n", count);
    return 0;
}
