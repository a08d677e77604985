/*
 * interop-fi: libfabric's side of the efarm <-> libfabric interoperability test
 * (interop.h), written only against libfabric's public API.
 *
 *   interop-fi --connect SOCKET [--provider efa] [--timeout S] [-v]
 *
 * Opens an FI_EP_RDM endpoint with FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC (and
 * send-after-send ordering) on the named provider, connects to interop-efarm's
 * UNIX socket, takes the parameters and runs the same case list, then the
 * one-sided phase when asked: a region registered for remote read and write,
 * fi_writemsg, fi_readmsg and the three atomic calls on efarm's. libfabric's own
 * environment decides its protocols (FI_EFA_USE_DEVICE_RDMA, FI_EFA_RUNT_SIZE,
 * ...); interop-efarm is told what was set.
 *
 * Exit status: 0 when every case passed, 1 otherwise, 2 on bad usage.
 */
#include <getopt.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>

#include "interop_driver.h"

#define IF_DT_ASSERT_(id, num, name, size, ctype, cls) \
    _Static_assert((int)FI_##id == (int)IC_DT_##id,    \
                   "interop.h's datatype " name " is libfabric's number");
IC_DT_LIST(IF_DT_ASSERT_)
#undef IF_DT_ASSERT_
#define IF_OP_ASSERT_(id, num, name, fi)            \
    _Static_assert((int)FI_##fi == (int)IC_OP_##id, \
                   "interop.h's operation " name " is libfabric's number");
IC_OP_LIST(IF_OP_ASSERT_)
#undef IF_OP_ASSERT_

struct if_op {
    struct fi_context2 ctx; /* first: the completion's op_context points here */
    struct ic_op *op;
};

struct if_side {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    fi_addr_t peer;
    struct if_op ops[IC_BURST];
    struct fi_context2 peek_ctx;
    int peek_state; /* 0 idle, 1 peek posted, 2 found, 3 not found */
    /* One-sided phase: the region efarm may access, the local buffer of our operations. */
    struct fid_mr *region_mr, *local_mr;
    void *local_desc;
    /* Remote CQ data of efarm's writes (completions with FI_REMOTE_WRITE), not yet taken. */
    struct ic_cq_reports cq_reports;
    bool cq_context_said;
};

static const char *if_strerror(int err)
{
    return fi_strerror(err < 0 ? -err : err);
}

static void if_bind(struct if_side *s, struct ic_op *op, uint32_t m)
{
    memset(&s->ops[m], 0, sizeof(s->ops[m]));
    s->ops[m].op = op;
    op->impl = &s->ops[m];
}

static int if_send(void *side, const struct ic_case *c, uint32_t m, const void *buf, uint64_t len,
                   struct ic_op *op)
{
    struct if_side *s = side;
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    uint64_t flags =
        FI_COMPLETION | (c->dc ? FI_DELIVERY_COMPLETE : 0) | (c->cqdata ? FI_REMOTE_CQ_DATA : 0);
    ssize_t ret;

    if_bind(s, op, m);
    if (c->tagged) {
        struct fi_msg_tagged msg = {.msg_iov = &iov,
                                    .iov_count = 1,
                                    .addr = s->peer,
                                    .tag = ic_tag(c),
                                    .context = &s->ops[m].ctx,
                                    .data = IC_CQ_DATA(c->index)};

        ret = fi_tsendmsg(s->ep, &msg, flags);
    } else {
        struct fi_msg msg = {.msg_iov = &iov,
                             .iov_count = 1,
                             .addr = s->peer,
                             .context = &s->ops[m].ctx,
                             .data = IC_CQ_DATA(c->index)};

        ret = fi_sendmsg(s->ep, &msg, flags);
    }
    return (int)ret;
}

static int if_recv(void *side, const struct ic_case *c, uint32_t m, void *buf, uint64_t len,
                   struct ic_op *op)
{
    struct if_side *s = side;

    if_bind(s, op, m);
    if (c->tagged)
        return (int)fi_trecv(s->ep, buf, len, NULL, s->peer, ic_tag(c), 0, &s->ops[m].ctx);
    return (int)fi_recv(s->ep, buf, len, NULL, s->peer, &s->ops[m].ctx);
}

static void if_complete(struct if_side *s, void *context, int status, uint64_t flags, uint64_t len,
                        uint64_t tag, uint64_t data)
{
    struct ic_op *op;

    if (context == &s->peek_ctx) {
        s->peek_state = status ? 3 : 2;
        return;
    }
    op = ((struct if_op *)context)->op;
    op->status = status;
    op->len = len;
    op->tag = tag;
    op->has_cq_data = !status && (flags & FI_REMOTE_CQ_DATA);
    op->cq_data = status ? 0 : data; /* kept without the flag: see IC_BUG_UNEXP_CQ_DATA_FLAG */
    op->done = true;
}

/* A peer's write with CQ data landed here: no operation of ours caused its completion. */
static void if_remote_write(struct if_side *s, const struct fi_cq_tagged_entry *e)
{
    if (e->op_context != NULL && !s->cq_context_said) {
        /* fi_cq(3): a completion no posted operation caused has a NULL op_context. */
        fprintf(stderr,
                "interop-fi: libfabric's completion of a peer's write with CQ data has "
                "op_context %p, not NULL (flags %#llx)\n",
                e->op_context, (unsigned long long)e->flags);
        s->cq_context_said = true;
    }
    ic_cq_report_put(&s->cq_reports, e->data, e->len);
}

static int if_rma_cq_data(void *side, uint64_t *data, uint64_t *len)
{
    return ic_cq_report_take(&((struct if_side *)side)->cq_reports, data, len);
}

static int if_progress(void *side)
{
    struct if_side *s = side;
    struct fi_cq_tagged_entry e[16];
    ssize_t n = fi_cq_read(s->cq, e, 16);

    if (n > 0) {
        for (ssize_t i = 0; i < n; i++)
            if (e[i].flags & FI_REMOTE_WRITE)
                if_remote_write(s, &e[i]);
            else
                if_complete(s, e[i].op_context, 0, e[i].flags, e[i].len, e[i].tag, e[i].data);
        return 0;
    }
    if (n == -FI_EAVAIL) {
        struct fi_cq_err_entry err = {0};

        if (fi_cq_readerr(s->cq, &err, 0) == 1) {
            if (err.op_context != &s->peek_ctx)
                fprintf(stderr, "interop(libfabric): completion error: %s (prov_errno %d: %s)\n",
                        fi_strerror(err.err), err.prov_errno,
                        fi_cq_strerror(s->cq, err.prov_errno, err.err_data, NULL, 0));
            if_complete(s, err.op_context, -(err.err ? err.err : FI_EIO), err.flags, err.len,
                        err.tag, err.data);
        }
        return 0;
    }
    return n == -FI_EAGAIN ? 0 : (int)n;
}

/*
 * Tagged: FI_PEEK until the case's first message is there. Untagged (no peek for
 * FI_MSG): progress 50 ms after the sender said it sent, on a fabric whose round
 * trip is microseconds.
 */
static int if_arrived(void *side, const struct ic_case *c, double since)
{
    struct if_side *s = side;

    if (!c->tagged)
        return ic_now() - since > 0.05;
    if (s->peek_state == 2) {
        s->peek_state = 0;
        return 1;
    }
    if (s->peek_state == 0 || s->peek_state == 3) {
        struct fi_msg_tagged msg = {.addr = s->peer, .tag = ic_tag(c), .context = &s->peek_ctx};

        if (fi_trecvmsg(s->ep, &msg, FI_PEEK) == 0)
            s->peek_state = 1;
    }
    return 0;
}

/*
 * One-sided operations, as the *msg calls so that delivery complete can be
 * asked for per operation. The local buffer is registered (its desc given);
 * the remote address is efarm's virtual address (FI_MR_VIRT_ADDR).
 */
static int if_rma_atomic(struct if_side *s, const struct ic_rma_case *c, const struct ic_rma_io *io,
                         void **desc, uint64_t flags)
{
    struct fi_ioc operand = {.addr = io->buf, .count = c->count};
    struct fi_ioc compare = {.addr = (void *)io->compare, .count = c->count};
    struct fi_ioc result = {.addr = io->result, .count = c->count};
    struct fi_rma_ioc rioc = {.addr = io->raddr, .count = c->count, .key = io->rkey};
    struct fi_msg_atomic msg = {.msg_iov = &operand,
                                .desc = desc,
                                .iov_count = 1,
                                .addr = s->peer,
                                .rma_iov = &rioc,
                                .rma_iov_count = 1,
                                .datatype = (enum fi_datatype)c->dt,
                                .op = (enum fi_op)c->op,
                                .context = &s->ops[0].ctx};

    switch (c->kind) {
    case IC_RMA_ATOMIC:
        return (int)fi_atomicmsg(s->ep, &msg, flags);
    case IC_RMA_FETCH:
        return (int)fi_fetch_atomicmsg(s->ep, &msg, &result, desc, 1, flags);
    default:
        return (int)fi_compare_atomicmsg(s->ep, &msg, &compare, desc, 1, &result, desc, 1, flags);
    }
}

static int if_rma(void *side, const struct ic_rma_case *c, const struct ic_rma_io *io,
                  struct ic_op *op)
{
    struct if_side *s = side;
    uint64_t flags = FI_COMPLETION | (c->dc ? FI_DELIVERY_COMPLETE : 0) |
                     (c->inject ? FI_INJECT : 0) | (c->cq_data ? FI_REMOTE_CQ_DATA : 0);
    unsigned niov = c->niov ? c->niov : 1, nriov = c->nriov ? c->nriov : 1;
    void *desc[4] = {s->local_desc, s->local_desc, s->local_desc, s->local_desc};
    struct iovec iov[4];
    struct fi_rma_iov riov[4];
    struct fi_msg_rma msg = {.msg_iov = iov,
                             .desc = desc,
                             .iov_count = niov,
                             .addr = s->peer,
                             .rma_iov = riov,
                             .rma_iov_count = nriov,
                             .context = &s->ops[0].ctx,
                             .data = c->cq_data ? ic_rma_cq_value(c) : 0};

    /*
     * libfabric's EFA provider offers one remote range per operation
     * (rma_iov_limit 1): the same bytes then go as one range, and several
     * ranges are efarm's only.
     */
    if (nriov > s->info->tx_attr->rma_iov_limit && s->info->tx_attr->rma_iov_limit >= 1)
        nriov = (unsigned)s->info->tx_attr->rma_iov_limit;
    msg.rma_iov_count = nriov;
    if (niov > 4 || nriov > 4 || niov > s->info->tx_attr->iov_limit ||
        (c->inject && io->len > s->info->tx_attr->inject_size)) {
        fprintf(stderr,
                "interop-fi: one-sided case %u: %u iov(s), %u range(s)%s beyond what this "
                "libfabric offers (iov_limit %zu, rma_iov_limit %zu, inject_size %zu)\n",
                c->index, niov, nriov, c->inject ? ", injected" : "", s->info->tx_attr->iov_limit,
                s->info->tx_attr->rma_iov_limit, s->info->tx_attr->inject_size);
        return -FI_EINVAL;
    }
    for (unsigned i = 0; i < niov; i++) {
        uint64_t off, len;

        ic_rma_piece(io->len, niov, i, &off, &len);
        iov[i] = (struct iovec){.iov_base = (uint8_t *)io->buf + off, .iov_len = len};
    }
    for (unsigned i = 0; i < nriov; i++) {
        uint64_t off, len;

        ic_rma_piece(io->len, nriov, i, &off, &len);
        riov[i] = (struct fi_rma_iov){.addr = io->raddr + off, .len = len, .key = io->rkey};
    }
    if_bind(s, op, 0);
    switch (c->kind) {
    case IC_RMA_WRITE:
        return (int)fi_writemsg(s->ep, &msg, flags);
    case IC_RMA_READ:
        return (int)fi_readmsg(s->ep, &msg, flags);
    default:
        return if_rma_atomic(s, c, io, desc, flags);
    }
}

static const struct ic_side_ops g_if_ops = {
    .name = "libfabric",
    .send = if_send,
    .recv = if_recv,
    .progress = if_progress,
    .arrived = if_arrived,
    .strerror = if_strerror,
    .rma = if_rma,
    .rma_cq_data = if_rma_cq_data,
};

static int if_open(struct if_side *s, const char *prov)
{
    struct fi_info *hints = fi_allocinfo();
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED, .size = 1024};
    int ret;

    if (hints == NULL)
        return -FI_ENOMEM;
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV | FI_RMA | FI_ATOMIC;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->tx_attr->msg_order = FI_ORDER_SAS;
    hints->rx_attr->msg_order = FI_ORDER_SAS;
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->fabric_attr->prov_name = strdup(prov);
    ret = fi_getinfo(FI_VERSION(1, 14), NULL, NULL, 0, hints, &s->info);
    fi_freeinfo(hints);
    if (ret) {
        fprintf(
            stderr,
            "interop-fi: fi_getinfo(provider %s, FI_EP_RDM, FI_MSG|FI_TAGGED|FI_RMA|FI_ATOMIC): "
            "%s\n",
            prov, fi_strerror(-ret));
        return ret;
    }
    if ((ret = fi_fabric(s->info->fabric_attr, &s->fabric, NULL)) ||
        (ret = fi_domain(s->fabric, s->info, &s->domain, NULL)) ||
        (ret = fi_av_open(s->domain, &av_attr, &s->av, NULL)) ||
        (ret = fi_cq_open(s->domain, &cq_attr, &s->cq, NULL)) ||
        (ret = fi_endpoint(s->domain, s->info, &s->ep, NULL)) ||
        (ret = fi_ep_bind(s->ep, &s->av->fid, 0)) ||
        (ret = fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV)) || (ret = fi_enable(s->ep)))
        fprintf(stderr, "interop-fi: opening the endpoint: %s\n", fi_strerror(-ret));
    return ret;
}

/*
 * Whether this libfabric carries the case's atomic (fi_atomicvalid and its
 * fetch and compare variants): one that does not is a defect, said once.
 */
static unsigned if_atomics_valid(struct if_side *s, const struct ic_rma_case *cases, unsigned n)
{
    unsigned defects = 0;

    for (unsigned k = 0; k < n; k++) {
        const struct ic_rma_case *c = &cases[k];
        enum fi_datatype dt = (enum fi_datatype)c->dt;
        enum fi_op op = (enum fi_op)c->op;
        size_t count = 0;
        int ret;

        if (c->dir != IC_FI_TO_EFARM || !ic_rma_is_atomic(c))
            continue;
        ret = c->kind == IC_RMA_ATOMIC  ? fi_atomicvalid(s->ep, dt, op, &count)
              : c->kind == IC_RMA_FETCH ? fi_fetch_atomicvalid(s->ep, dt, op, &count)
                                        : fi_compare_atomicvalid(s->ep, dt, op, &count);
        if (ret || count < c->count) {
            fprintf(stderr, "interop-fi: atomic op %d on datatype %d: %s, %zu element(s) at most\n",
                    c->op, c->dt, ret ? fi_strerror(-ret) : "valid", count);
            defects++;
        }
    }
    return defects;
}

/*
 * With IC_F_ATOMICS: libfabric's own answer (fi_atomicvalid and its fetch and
 * compare forms) for every kind, operation and datatype up to the 128-bit
 * integers agrees with interop.h's list of what the EFA provider carries
 * (ic_atomic_valid), so that the cases cover all it offers and no more.
 */
static unsigned if_atomics_offered(struct if_side *s)
{
    unsigned defects = 0;

    for (unsigned kind = IC_RMA_ATOMIC; kind <= IC_RMA_COMPARE; kind++)
        for (unsigned op = 0; op < IC_OP_COUNT; op++)
            for (unsigned dt = 0; dt <= 15; dt++) { /* FI_UINT128 */
                size_t count = 0;
                int ret =
                    kind == IC_RMA_ATOMIC
                        ? fi_atomicvalid(s->ep, (enum fi_datatype)dt, (enum fi_op)op, &count)
                    : kind == IC_RMA_FETCH
                        ? fi_fetch_atomicvalid(s->ep, (enum fi_datatype)dt, (enum fi_op)op, &count)
                        : fi_compare_atomicvalid(s->ep, (enum fi_datatype)dt, (enum fi_op)op,
                                                 &count);

                if ((ret == 0) != ic_atomic_valid(kind, op, dt)) {
                    fprintf(stderr,
                            "interop-fi: %s atomic %s on datatype %u: libfabric says %s, the "
                            "test's list says %s\n",
                            kind == IC_RMA_ATOMIC  ? "write"
                            : kind == IC_RMA_FETCH ? "fetch"
                                                   : "compare",
                            ic_op_name(op), dt, ret ? fi_strerror(-ret) : "valid",
                            ic_atomic_valid(kind, op, dt) ? "valid" : "not carried");
                    defects++;
                }
            }
    return defects;
}

/*
 * The one-sided phase: register a region for efarm and a local buffer, trade
 * regions with interop-efarm, run the one-sided cases. Returns the defects or
 * a negative error.
 */
static int if_rma_phase(struct if_side *s, int fd, const struct ic_params *params,
                        const struct ic_run_opts *ropts)
{
    static struct ic_rma_case cases[IC_MAX_RMA_CASES];
    unsigned ncases = ic_rma_cases(params, cases, IC_MAX_RMA_CASES), defects;
    struct ic_rma_mem mem = {.region = aligned_alloc(4096, IC_RMA_REGION),
                             .ro = aligned_alloc(4096, IC_RMA_RO),
                             .local = aligned_alloc(4096, IC_RMA_LOCAL)};
    struct fid_mr *ro_mr = NULL;
    int ret = -FI_ENOMEM;

    if (mem.region == NULL || mem.local == NULL || mem.ro == NULL)
        goto out_free;
    memset(mem.region, 0, IC_RMA_REGION);
    for (uint64_t o = 0; o < IC_RMA_RO; o++)
        mem.ro[o] = ic_rma_ro_byte(o);
    ret = fi_mr_reg(s->domain, mem.ro, IC_RMA_RO, FI_REMOTE_READ, 0, 0, 0, &ro_mr, NULL);
    if (ret) {
        fprintf(stderr, "interop-fi: fi_mr_reg of the read-only region: %s\n", fi_strerror(-ret));
        goto out_free;
    }
    ret = fi_mr_reg(s->domain, mem.region, IC_RMA_REGION, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0,
                    &s->region_mr, NULL);
    if (ret) {
        fprintf(stderr, "interop-fi: fi_mr_reg of the exposed region: %s\n", fi_strerror(-ret));
        goto out_free;
    }
    ret = fi_mr_reg(s->domain, mem.local, IC_RMA_LOCAL, FI_READ | FI_WRITE, 0, 0, 0, &s->local_mr,
                    NULL);
    if (ret) {
        fprintf(stderr, "interop-fi: fi_mr_reg of the local buffer: %s\n", fi_strerror(-ret));
        goto out_close_region;
    }
    s->local_desc = fi_mr_desc(s->local_mr);
    ret = ic_region_exchange(fd, (uint64_t)(uintptr_t)mem.region, fi_mr_key(s->region_mr),
                             &mem.peer_addr, &mem.peer_key, (int)(ropts->case_timeout_s * 1000));
    if (!ret)
        ret =
            ic_region_exchange(fd, (uint64_t)(uintptr_t)mem.ro, fi_mr_key(ro_mr), &mem.peer_ro_addr,
                               &mem.peer_ro_key, (int)(ropts->case_timeout_s * 1000));
    if (ret) {
        fprintf(stderr, "interop-fi: exchanging the one-sided regions: %s\n",
                ret == -EPROTO ? "protocol error on the control channel" : if_strerror(ret));
        goto out_close_local;
    }
    defects = if_atomics_valid(s, cases, ncases);
    if (params->flags & IC_F_ATOMICS)
        defects += if_atomics_offered(s);
    ret = ic_rma_run(&g_if_ops, s, false, fd, cases, ncases, ropts, &mem);
    if (ret >= 0)
        ret += (int)defects;
out_close_local:
    fi_close(&s->local_mr->fid);
    s->local_mr = NULL;
out_close_region:
    fi_close(&s->region_mr->fid);
    s->region_mr = NULL;
out_free:
    if (ro_mr)
        fi_close(&ro_mr->fid);
    free(mem.local);
    free(mem.ro);
    free(mem.region);
    return ret;
}

static void if_close(struct if_side *s)
{
    if (s->ep)
        fi_close(&s->ep->fid);
    if (s->cq)
        fi_close(&s->cq->fid);
    if (s->av)
        fi_close(&s->av->fid);
    if (s->domain)
        fi_close(&s->domain->fid);
    if (s->fabric)
        fi_close(&s->fabric->fid);
    if (s->info)
        fi_freeinfo(s->info);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"connect", required_argument, NULL, 'c'},
        {"provider", required_argument, NULL, 'p'},
        {"timeout", required_argument, NULL, 't'},
        {"verbose", no_argument, NULL, 'v'},
        {NULL, 0, NULL, 0},
    };
    static struct ic_case cases[IC_MAX_CASES];
    struct ic_run_opts ropts = {.case_timeout_s = 60};
    struct ic_params params = {0};
    struct if_side s = {0};
    const char *path = NULL, *prov = "efa";
    uint8_t mine[IC_RAW_ADDR] = {0}, theirs[IC_RAW_ADDR];
    size_t addrlen = sizeof(mine);
    struct sockaddr_un sa;
    struct ic_msg bye;
    unsigned long tolerated = 0;
    double deadline;
    int c, fd, ret;

    signal(SIGPIPE, SIG_IGN);
    while ((c = getopt_long(argc, argv, "v", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            path = optarg;
            break;
        case 'p':
            prov = optarg;
            break;
        case 't':
            ropts.case_timeout_s = strtod(optarg, NULL);
            if (!(ropts.case_timeout_s > 0))
                return 2;
            break;
        case 'v':
            ropts.verbose = true;
            break;
        default:
            fprintf(stderr, "usage: interop-fi --connect SOCKET [--provider NAME] "
                            "[--timeout S] [-v]\n");
            return 2;
        }
    }
    if (path == NULL || optind < argc || ic_unix_addr(path, &sa)) {
        fprintf(stderr, "usage: interop-fi --connect SOCKET [--provider NAME] [--timeout S]\n");
        return 2;
    }
    if (if_open(&s, prov))
        goto err_close;
    ret = fi_getname(&s.ep->fid, mine, &addrlen);
    if (ret || addrlen != IC_RAW_ADDR) {
        fprintf(stderr, "interop-fi: fi_getname: %s (%zu bytes; efarm's raw address is %d)\n",
                ret ? fi_strerror(-ret) : "ok", addrlen, IC_RAW_ADDR);
        goto err_close;
    }

    deadline = ic_now() + ropts.case_timeout_s;
    for (;;) {
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
            break;
        if (fd >= 0)
            close(fd);
        if (ic_now() > deadline) {
            fprintf(stderr, "interop-fi: cannot connect to %s: %s\n", path, strerror(errno));
            goto err_close;
        }
        usleep(20000);
    }
    ret = ic_params_recv(fd, &params, (int)(ropts.case_timeout_s * 1000));
    if (!ret)
        ret = ic_send(fd, IC_INFO, fi_version(), 0);
    ropts.fi_bugs = ic_fi_bugs(fi_version());
    ropts.tolerated = &tolerated;
    if (!ret)
        ret = ic_addr_exchange(fd, mine, theirs, (int)(ropts.case_timeout_s * 1000));
    if (!ret && fi_av_insert(s.av, theirs, 1, &s.peer, 0, NULL) != 1)
        ret = -FI_EINVAL;
    if (ret) {
        fprintf(stderr, "interop-fi: setting up with interop-efarm failed: %s\n",
                ret == -EPROTO ? "protocol error on the control channel" : if_strerror(ret));
        goto err_close_fd;
    }
    ret = ic_run(&g_if_ops, &s, false, fd, cases, ic_cases(&params, cases, IC_MAX_CASES), &ropts);
    if (ret >= 0 && (params.flags & IC_F_RMA)) {
        int r = if_rma_phase(&s, fd, &params, &ropts);

        ret = r < 0 ? r : ret + r;
    }
    if (ret >= 0) {
        /* Keep the endpoint alive (acknowledging) until efarm says goodbye. */
        int r;

        deadline = ic_now() + ropts.case_timeout_s;
        while ((r = ic_read(fd, &bye, sizeof(bye), 0)) == -EAGAIN && ic_now() < deadline)
            if_progress(&s);
        if (r || bye.kind != IC_BYE) {
            fprintf(stderr, "interop-fi: no goodbye from interop-efarm\n");
            ret = ret ? ret : 1;
        }
    }
    printf("interop-fi: libfabric %u.%u, %s", FI_MAJOR(fi_version()), FI_MINOR(fi_version()),
           ret == 0 ? "every case passed" : "defects found");
    if (tolerated)
        printf(" (%lu known libfabric defect(s) tolerated, see interop.h)", tolerated);
    printf("\n");
    close(fd);
    if_close(&s);
    return ret == 0 ? 0 : 1;

err_close_fd:
    close(fd);
err_close:
    if_close(&s);
    return 1;
}
