/*
 * The case driver of the interop programs (interop_driver.h).
 */
#include "interop_driver.h"

#include <stdlib.h>

#define IC_GUARD      64 /* bytes after each receive buffer that must stay untouched */
#define IC_GUARD_BYTE 0xa5

struct ic_ctx {
    const struct ic_side_ops *ops;
    void *side;
    int ctl;
    const struct ic_run_opts *opts;
    double deadline;
    /* Control messages that arrived ahead of the one being waited for. */
    struct ic_msg pending[8];
    unsigned npending;
};

static int ic_fail(const struct ic_ctx *x, const struct ic_case *c, const char *what, int err)
{
    fprintf(stderr, "interop(%s): case %u (%s, %s, %u message(s), first %llu B, %s%s): %s%s%s\n",
            x->ops->name, c->index, ic_dir_name(c->dir), c->tagged ? "tagged" : "untagged", c->nmsg,
            (unsigned long long)c->size[0], c->after ? "receive after arrival" : "receive first",
            c->dc ? ", delivery complete" : "", what, err ? ": " : "",
            err ? (err == -ETIMEDOUT ? "timed out" : x->ops->strerror(err)) : "");
    return err ? err : -EPROTO;
}

/* Progress once; look for a control message of `kind` for case `ci` without blocking. */
static int ic_poll(struct ic_ctx *x, uint32_t kind, uint32_t ci, struct ic_msg *out, bool *got)
{
    struct ic_msg m;
    int ret = x->ops->progress(x->side);

    *got = false;
    if (ret)
        return ret;
    for (unsigned i = 0; i < x->npending; i++) {
        if (x->pending[i].kind == kind && x->pending[i].a == ci) {
            *out = x->pending[i];
            x->pending[i] = x->pending[--x->npending];
            *got = true;
            return 0;
        }
    }
    ret = ic_read(x->ctl, &m, sizeof(m), 0);
    if (ret == -EAGAIN)
        return 0;
    if (ret)
        return ret;
    if (m.kind == kind && m.a == ci) {
        *out = m;
        *got = true;
        return 0;
    }
    if (m.kind == IC_BYE || x->npending == sizeof(x->pending) / sizeof(x->pending[0]))
        return -EPROTO;
    x->pending[x->npending++] = m;
    return 0;
}

/* Progress until a control message of `kind` for case ci arrives, or the deadline. */
static int ic_wait_ctl(struct ic_ctx *x, uint32_t kind, uint32_t ci, struct ic_msg *out)
{
    for (unsigned spins = 0;; spins++) {
        bool got;
        int ret = ic_poll(x, kind, ci, out, &got);

        if (ret || got)
            return ret;
        if (spins % 256 == 0 && ic_now() > x->deadline)
            return -ETIMEDOUT;
    }
}

/* Progress until every op is done, or the deadline. */
static int ic_wait_ops(struct ic_ctx *x, const struct ic_op *ops, uint32_t n)
{
    for (unsigned spins = 0;; spins++) {
        uint32_t done = 0;
        int ret;

        for (uint32_t i = 0; i < n; i++)
            done += ops[i].done;
        if (done == n)
            return 0;
        ret = x->ops->progress(x->side);
        if (ret)
            return ret;
        if (spins % 256 == 0 && ic_now() > x->deadline)
            return -ETIMEDOUT;
    }
}

/* Post with retries while the side says -EAGAIN. */
static int ic_post(struct ic_ctx *x, bool send, const struct ic_case *c, uint32_t m, uint8_t *buf,
                   uint64_t len, struct ic_op *op)
{
    for (unsigned spins = 0;; spins++) {
        int ret = send ? x->ops->send(x->side, c, m, buf, len, op)
                       : x->ops->recv(x->side, c, m, buf, len, op);

        if (ret != -EAGAIN)
            return ret;
        ret = x->ops->progress(x->side);
        if (ret)
            return ret;
        if (spins % 256 == 0 && ic_now() > x->deadline)
            return -ETIMEDOUT;
    }
}

static int ic_sender(struct ic_ctx *x, const struct ic_case *c, uint8_t **bufs, struct ic_op *ops)
{
    struct ic_msg m;
    int ret;

    for (uint32_t i = 0; i < c->nmsg; i++)
        ic_fill(bufs[i], c->index, i, c->size[i]);
    if (!c->after && (ret = ic_wait_ctl(x, IC_POSTED, c->index, &m)))
        return ic_fail(x, c, "waiting for the receiver to post", ret);
    for (uint32_t i = 0; i < c->nmsg; i++)
        if ((ret = ic_post(x, true, c, i, bufs[i], c->size[i], &ops[i])))
            return ic_fail(x, c, "posting a send", ret);
    if (c->after && (ret = ic_send(x->ctl, IC_SENT, c->index, 0)))
        return ic_fail(x, c, "control channel", ret);
    if ((ret = ic_wait_ops(x, ops, c->nmsg)))
        return ic_fail(x, c, "waiting for the send completions", ret);
    if ((ret = ic_wait_ctl(x, IC_DONE, c->index, &m)))
        return ic_fail(x, c, "waiting for the receiver's verdict", ret);
    for (uint32_t i = 0; i < c->nmsg; i++)
        if (ops[i].status) {
            fprintf(stderr, "interop(%s): case %u: send %u of %llu B completed with %s\n",
                    x->ops->name, c->index, i, (unsigned long long)c->size[i],
                    x->ops->strerror(ops[i].status));
            m.b++;
        }
    return (int)m.b; /* the receiver's defects plus ours */
}

static unsigned ic_check_recv(struct ic_ctx *x, const struct ic_case *c, uint32_t i,
                              const uint8_t *buf, const struct ic_op *op)
{
    uint64_t len = c->size[i], off;
    unsigned defects = 0;

#define IC_DEFECT(...)                                                                           \
    do {                                                                                         \
        fprintf(stderr, "interop(%s): case %u message %u (%llu B): ", x->ops->name, c->index, i, \
                (unsigned long long)len);                                                        \
        fprintf(stderr, __VA_ARGS__);                                                            \
        fputc('\n', stderr);                                                                     \
        defects++;                                                                               \
    } while (0)

    if (op->status) {
        IC_DEFECT("receive completed with %s", x->ops->strerror(op->status));
        return defects;
    }
    if (op->len != len)
        IC_DEFECT("%llu bytes delivered", (unsigned long long)op->len);
    if (c->tagged && op->tag != ic_tag(c))
        IC_DEFECT("tag %#llx, sent %#llx", (unsigned long long)op->tag,
                  (unsigned long long)ic_tag(c));
    if (c->cqdata) {
        bool fi_sent = c->dir == IC_FI_TO_EFARM, fi_recv = !fi_sent;
        uint64_t want = IC_CQ_DATA(c->index);
        bool has = op->has_cq_data;

        if (fi_sent && c->tagged && (x->opts->fi_bugs & IC_BUG_TAGGED_CQ_DATA_32)) {
            want = (uint32_t)want; /* libfabric < 1.18 sends 32 bits (interop.h) */
            ++*x->opts->tolerated;
        }
        if (fi_recv && c->after && !has && op->cq_data == want &&
            (x->opts->fi_bugs & IC_BUG_UNEXP_CQ_DATA_FLAG)) {
            has = true; /* libfabric < 1.19 drops the flag, not the data (interop.h) */
            ++*x->opts->tolerated;
        }
        if (!has || op->cq_data != want)
            IC_DEFECT("CQ data %s%#llx, sent %#llx", has ? "" : "flag missing, ",
                      (unsigned long long)op->cq_data, (unsigned long long)want);
    } else if (op->has_cq_data) {
        IC_DEFECT("CQ data %#llx where none was sent", (unsigned long long)op->cq_data);
    }
    if ((off = ic_check(buf, c->index, i, len)) != len) {
        /* Say whose message it is if it is another one of this case (order broken). */
        for (uint32_t j = 0; j < c->nmsg; j++)
            if (j != i && c->size[j] == len && ic_check(buf, c->index, j, len) == len) {
                IC_DEFECT("holds message %u of the case: send-after-send order broken", j);
                off = len;
                break;
            }
        if (off != len)
            IC_DEFECT("byte %llu differs (0x%02x, expected 0x%02x)", (unsigned long long)off,
                      buf[off], ic_byte(c->index, i, off));
    }
    for (unsigned g = 0; g < IC_GUARD; g++)
        if (buf[len + g] != IC_GUARD_BYTE) {
            IC_DEFECT("written past its end (guard byte %u)", g);
            break;
        }
#undef IC_DEFECT
    return defects;
}

static int ic_receiver(struct ic_ctx *x, const struct ic_case *c, uint8_t **bufs, struct ic_op *ops)
{
    unsigned defects = 0;
    struct ic_msg m;
    int ret;

    for (uint32_t i = 0; i < c->nmsg; i++)
        memset(bufs[i], IC_GUARD_BYTE, c->size[i] + IC_GUARD);
    if (c->after) {
        double since;

        if ((ret = ic_wait_ctl(x, IC_SENT, c->index, &m)))
            return ic_fail(x, c, "waiting for the sender", ret);
        since = ic_now();
        for (unsigned spins = 0; !x->ops->arrived(x->side, c, since); spins++) {
            if ((ret = x->ops->progress(x->side)))
                return ic_fail(x, c, "waiting for the messages to arrive", ret);
            if (spins % 256 == 0 && ic_now() > x->deadline)
                return ic_fail(x, c, "waiting for the messages to arrive", -ETIMEDOUT);
        }
    }
    for (uint32_t i = 0; i < c->nmsg; i++)
        if ((ret = ic_post(x, false, c, i, bufs[i], c->size[i], &ops[i])))
            return ic_fail(x, c, "posting a receive", ret);
    if (!c->after && (ret = ic_send(x->ctl, IC_POSTED, c->index, 0)))
        return ic_fail(x, c, "control channel", ret);
    if ((ret = ic_wait_ops(x, ops, c->nmsg)))
        return ic_fail(x, c, "waiting for the receive completions", ret);
    for (uint32_t i = 0; i < c->nmsg; i++)
        defects += ic_check_recv(x, c, i, bufs[i], &ops[i]);
    if ((ret = ic_send(x->ctl, IC_DONE, c->index, defects)))
        return ic_fail(x, c, "control channel", ret);
    return (int)defects;
}

int ic_run(const struct ic_side_ops *ops, void *side, bool i_am_efarm, int ctl,
           const struct ic_case *cases, unsigned ncases, const struct ic_run_opts *opts)
{
    struct ic_ctx x = {.ops = ops, .side = side, .ctl = ctl, .opts = opts};
    uint8_t *bufs[IC_BURST] = {0};
    struct ic_op cops[IC_BURST];
    unsigned defects = 0;
    int ret = 0;

    for (unsigned k = 0; k < ncases; k++) {
        const struct ic_case *c = &cases[k];
        bool sender = (c->dir == IC_EFARM_TO_FI) == i_am_efarm;
        double t0 = ic_now();

        for (uint32_t i = 0; i < c->nmsg; i++) {
            bufs[i] = malloc(c->size[i] + IC_GUARD);
            if (bufs[i] == NULL) {
                ret = ic_fail(&x, c, "out of memory", -ENOMEM);
                goto out;
            }
        }
        memset(cops, 0, sizeof(cops));
        x.deadline = t0 + opts->case_timeout_s;
        if (ops->case_begin)
            ops->case_begin(side, c);
        ret = sender ? ic_sender(&x, c, bufs, cops) : ic_receiver(&x, c, bufs, cops);
        if (ret < 0)
            goto out;
        defects += (unsigned)ret;
        if (ops->case_end)
            defects += ops->case_end(side, c);
        if (opts->verbose)
            printf("case %u %s %s n=%u size=%llu %s%s%s: %s (%.1f ms)\n", c->index,
                   ic_dir_name(c->dir), c->tagged ? "tagged" : "untagged", c->nmsg,
                   (unsigned long long)c->size[0], c->after ? "after" : "before",
                   c->dc ? " dc" : "", c->cqdata ? " cqdata" : "", ret ? "DEFECTS" : "ok",
                   (ic_now() - t0) * 1e3);
        for (uint32_t i = 0; i < c->nmsg; i++) {
            free(bufs[i]);
            bufs[i] = NULL;
        }
    }
    ret = (int)defects;
out:
    for (uint32_t i = 0; i < IC_BURST; i++)
        free(bufs[i]);
    return ret;
}

/* ---- One-sided phase ------------------------------------------------------------------- */

static int ic_rma_fail(const struct ic_ctx *x, const struct ic_rma_case *c, const char *what,
                       int err)
{
    char name[96];

    fprintf(stderr, "interop(%s): one-sided case %u (%s): %s%s%s\n", x->ops->name, c->index,
            ic_rma_describe(c, name, sizeof(name)), what, err ? ": " : "",
            err ? (err == -ETIMEDOUT ? "timed out" : x->ops->strerror(err)) : "");
    return err ? err : -EPROTO;
}

/* First offset in [from, to) of the target's region that differs from the result, or to. */
static uint64_t ic_rma_diff(const struct ic_rma_case *c, const uint8_t *region, uint64_t from,
                            uint64_t to)
{
    for (uint64_t o = from; o < to; o++)
        if (region[o] != ic_rma_after(c, o))
            return o;
    return to;
}

/*
 * The target's verdict on its own memory. An operation that completed
 * remotely must be there now; one that completed when sent gets half the
 * case's remaining time to arrive, with progress (the target's engine may
 * still have its packets to apply), so that the verdict still reaches the
 * origin before the case times out there.
 */
static int ic_rma_settle(struct ic_ctx *x, const struct ic_rma_case *c, const uint8_t *region,
                         bool origin_failed)
{
    bool at_once =
        c->dc || c->kind == IC_RMA_READ || c->kind == IC_RMA_FETCH || c->kind == IC_RMA_COMPARE;
    double until = ic_now() + (x->deadline - ic_now()) / 2;
    uint64_t end = c->off + c->len, o;
    char name[96], where[64];

    for (unsigned spins = 0; !at_once; spins++) {
        int ret;

        /*
         * A refusal leaves the range as it was: one that succeeded at its origin
         * (an emulated plain write or atomic) is waited for until its REQs came,
         * where the side can tell.
         */
        if (spins % 64 == 0 && ic_rma_diff(c, region, c->off, end) == end &&
            (!c->refuse || origin_failed || x->ops->rma_arrived == NULL ||
             x->ops->rma_arrived(x->side, c)))
            break;
        if ((ret = x->ops->progress(x->side)))
            return ic_rma_fail(x, c, "progress while waiting for the operation to land", ret);
        if (spins % 256 == 0 && ic_now() > until)
            break;
    }
    o = ic_rma_diff(c, region, 0, ic_rma_window(c));
    if (o == ic_rma_window(c))
        return 0;
    if (o < c->off)
        snprintf(where, sizeof(where), "%llu B before the range", (unsigned long long)(c->off - o));
    else if (o >= end)
        snprintf(where, sizeof(where), "%llu B past the range", (unsigned long long)(o - end));
    else
        snprintf(where, sizeof(where), "byte %llu of the range", (unsigned long long)(o - c->off));
    fprintf(stderr,
            "interop(%s): one-sided case %u (%s): target memory %s is 0x%02x, expected 0x%02x "
            "(0x%02x before the operation; %s)\n",
            x->ops->name, c->index, ic_rma_describe(c, name, sizeof(name)), where, region[o],
            ic_rma_after(c, o), ic_rma_before(c, o),
            at_once ? "checked once it had completed remotely" : "waited half the case's time");
    return 1;
}

/* A refused write or atomic on the read-only region: it must hold what it always held. */
static int ic_rma_ro_intact(const struct ic_ctx *x, const struct ic_rma_case *c, const uint8_t *ro)
{
    char name[96];

    for (uint64_t o = 0; o < IC_RMA_RO; o++)
        if (ro[o] != ic_rma_ro_byte(o)) {
            fprintf(stderr,
                    "interop(%s): one-sided case %u (%s): read-only region byte %llu is 0x%02x, "
                    "expected 0x%02x\n",
                    x->ops->name, c->index, ic_rma_describe(c, name, sizeof(name)),
                    (unsigned long long)o, ro[o], ic_rma_ro_byte(o));
            return 1;
        }
    return 0;
}

void ic_cq_report_put(struct ic_cq_reports *q, uint64_t data, uint64_t len)
{
    unsigned n = sizeof(q->r) / sizeof(q->r[0]), at;

    if (q->count == n) {
        q->overflow++;
        return;
    }
    at = (q->head + q->count++) % n;
    q->r[at].data = data;
    q->r[at].len = len;
}

int ic_cq_report_take(struct ic_cq_reports *q, uint64_t *data, uint64_t *len)
{
    unsigned n = sizeof(q->r) / sizeof(q->r[0]);

    if (q->count == 0 && q->overflow) {
        q->overflow--;
        *data = 0;
        *len = 0;
        return 1;
    }
    if (q->count == 0)
        return 0;
    *data = q->r[q->head].data;
    *len = q->r[q->head].len;
    q->head = (q->head + 1) % n;
    q->count--;
    return 1;
}

/*
 * A write with CQ data that landed: the target reports it once, with the
 * case's data and length. Its report may follow the data by a little (the
 * target's engine completes it when it has applied the last packet): up to
 * half the case's remaining time; then a few milliseconds more of progress
 * must bring no second one.
 */
static int ic_rma_cq_data_check(struct ic_ctx *x, const struct ic_rma_case *c)
{
    double until = ic_now() + (x->deadline - ic_now()) / 2, quiet = 0;
    uint64_t data = 0, len = 0, more_data, more_len;
    unsigned got = 0;
    char name[96];
    int ret;

    while (got == 0 || ic_now() < quiet) {
        if (x->ops->rma_cq_data(x->side, got ? &more_data : &data, got ? &more_len : &len) == 1) {
            if (got++)
                break;
            quiet = ic_now() + 0.005;
            continue;
        }
        if ((ret = x->ops->progress(x->side)))
            return ic_rma_fail(x, c, "progress while waiting for its CQ data", ret);
        if (got == 0 && ic_now() > until)
            break;
    }
    if (got == 1 && data == ic_rma_cq_value(c) && len == c->len)
        return 0;
    fprintf(stderr,
            "interop(%s): one-sided case %u (%s): %s%s (wanted one report: data 0x%llx, %llu B; "
            "the first had data 0x%llx, %llu B)\n",
            x->ops->name, c->index, ic_rma_describe(c, name, sizeof(name)),
            got == 0  ? "no report of its CQ data"
            : got > 1 ? "more than one report of its CQ data"
                      : "its CQ data reported wrong",
            got == 0 ? " in half the case's time" : "", (unsigned long long)ic_rma_cq_value(c),
            (unsigned long long)c->len, (unsigned long long)data, (unsigned long long)len);
    return 1;
}

static int ic_rma_target(struct ic_ctx *x, const struct ic_rma_case *c, uint8_t *region,
                         uint8_t *ro, bool *origin_failed)
{
    struct ic_msg m;
    int ret, defects = 0;

    for (uint64_t o = 0; o < ic_rma_window(c); o++)
        region[o] = ic_rma_before(c, o);
    if ((ret = ic_send(x->ctl, IC_RMA_READY, c->index, 0)))
        return ic_rma_fail(x, c, "control channel", ret);
    if ((ret = ic_wait_ctl(x, IC_RMA_ISSUED, c->index, &m)))
        return ic_rma_fail(x, c, "waiting for the origin's operation", ret);
    *origin_failed = m.b != 0;
    /*
     * An operation that failed at the origin is its defect; what it left here is
     * not checked. A refused one must have changed nothing, failed or not.
     */
    if ((m.b == 0 || c->refuse) && (defects = ic_rma_settle(x, c, region, m.b != 0)) < 0)
        return defects;
    if (c->cq_data && m.b == 0 && !c->refuse) {
        if (x->ops->rma_cq_data == NULL)
            return ic_rma_fail(x, c, "this side cannot report CQ data", 0);
        if ((ret = ic_rma_cq_data_check(x, c)) < 0)
            return ret;
        defects += ret;
    }
    if (c->refuse == IC_REFUSE_READ_ONLY) {
        if (ic_rma_ro_may_take_write(c, x->opts->fi_bugs) && m.b == 0) {
            /* IC_BUG_MR_GRANTS_ALL: it took the write; put it back for the next cases. */
            for (uint64_t o = 0; o < IC_RMA_RO; o++)
                if (ro[o] != ic_rma_ro_byte(o)) {
                    ++*x->opts->tolerated;
                    break;
                }
            for (uint64_t o = 0; o < IC_RMA_RO; o++)
                ro[o] = ic_rma_ro_byte(o);
        } else {
            defects += ic_rma_ro_intact(x, c, ro);
        }
    }
    if ((ret = ic_send(x->ctl, IC_RMA_DONE, c->index, (uint64_t)defects)))
        return ic_rma_fail(x, c, "control channel", ret);
    return defects;
}

/* Lay out the origin's local buffer for case c and describe the operation in io. */
static void ic_rma_prepare(const struct ic_rma_case *c, const struct ic_rma_mem *mem,
                           struct ic_rma_io *io)
{
    uint8_t *local = mem->local;

    *io = (struct ic_rma_io){
        .raddr = mem->peer_addr + c->off, .rkey = mem->peer_key, .len = c->len, .buf = local};
    switch (c->refuse) {
    case IC_REFUSE_BAD_KEY: /* a key no region has: the region's with its low bits changed */
        io->rkey = mem->peer_key ^ 0x5a5au;
        if (io->rkey == mem->peer_ro_key)
            io->rkey ^= 0x100u;
        break;
    case IC_REFUSE_BEFORE: /* half before the region's start, half in it */
        io->raddr = mem->peer_addr - c->len / 2;
        break;
    case IC_REFUSE_PAST: /* half at the region's end, half past it */
        io->raddr = mem->peer_addr + IC_RMA_REGION - c->len / 2;
        break;
    case IC_REFUSE_READ_ONLY:
        io->raddr = mem->peer_ro_addr + 64;
        io->rkey = mem->peer_ro_key;
        break;
    default:
        break;
    }
    switch (c->kind) {
    case IC_RMA_WRITE:
        for (uint64_t i = 0; i < c->len; i++)
            local[i] = ic_rma_data(c, i);
        break;
    case IC_RMA_READ:
        memset(local, IC_GUARD_BYTE, c->len + IC_RMA_GUARD);
        break;
    default:
        for (uint32_t j = 0, size = ic_dt_size(c->dt); j < c->count; j++) {
            uint64_t operand = ic_rma_value(c, IC_RMA_OPERAND, j);
            uint64_t compare = ic_rma_value(c, IC_RMA_COMPARAND, j);

            memcpy(local + size * j, &operand, size); /* the element's bytes (little-endian) */
            memcpy(local + IC_RMA_COMPARE_AT + size * j, &compare, size);
        }
        memset(local + IC_RMA_RESULT_AT, IC_GUARD_BYTE, c->len + IC_RMA_GUARD);
        if (c->kind == IC_RMA_COMPARE)
            io->compare = local + IC_RMA_COMPARE_AT;
        if (c->kind != IC_RMA_ATOMIC)
            io->result = local + IC_RMA_RESULT_AT;
        break;
    }
}

/* What came back to the origin: read data, or the old values of a fetch or compare atomic. */
static unsigned ic_rma_check_local(const struct ic_ctx *x, const struct ic_rma_case *c,
                                   const struct ic_rma_io *io, const struct ic_op *op)
{
    const uint8_t *got = c->kind == IC_RMA_READ ? io->buf : io->result;
    char name[96];
    uint64_t i;

    if (op->status && !c->refuse) {
        fprintf(stderr, "interop(%s): one-sided case %u (%s): completed with %s\n", x->ops->name,
                c->index, ic_rma_describe(c, name, sizeof(name)), x->ops->strerror(op->status));
        return 1;
    }
    if (got == NULL)
        return 0;
    if (c->refuse && op->status == 0 && ic_rma_cache_may_widen(c, x->opts->fi_bugs)) {
        ++*x->opts->tolerated;
        return 0;
    }
    /*
     * Both hold the target's bytes before the operation, then the guard; a
     * refused one nothing: its buffer keeps its guard bytes, failed or not.
     */
    for (i = 0; i < c->len + IC_RMA_GUARD; i++) {
        uint8_t want = i < c->len && !c->refuse ? ic_rma_before(c, c->off + i) : IC_GUARD_BYTE;

        if (got[i] != want) {
            fprintf(stderr,
                    "interop(%s): one-sided case %u (%s): %s%s byte %llu is 0x%02x, expected "
                    "0x%02x%s\n",
                    x->ops->name, c->index, ic_rma_describe(c, name, sizeof(name)),
                    c->refuse ? "refused, yet " : "",
                    c->kind == IC_RMA_READ ? "read" : "returned old value", (unsigned long long)i,
                    got[i], want, i < c->len || c->refuse ? "" : " (written past the end)");
            return 1;
        }
    }
    return 0;
}

static int ic_rma_origin(struct ic_ctx *x, const struct ic_rma_case *c,
                         const struct ic_rma_mem *mem, struct ic_op *op)
{
    struct ic_rma_io io;
    struct ic_msg m;
    unsigned defects;
    int ret;

    ic_rma_prepare(c, mem, &io);
    if ((ret = ic_wait_ctl(x, IC_RMA_READY, c->index, &m)))
        return ic_rma_fail(x, c, "waiting for the target to prepare", ret);
    memset(op, 0, sizeof(*op));
    for (unsigned spins = 0; (ret = x->ops->rma(x->side, c, &io, op)) == -EAGAIN; spins++) {
        if ((ret = x->ops->progress(x->side)))
            break;
        if (spins % 256 == 0 && ic_now() > x->deadline) {
            ret = -ETIMEDOUT;
            break;
        }
    }
    if (ret)
        return ic_rma_fail(x, c, "starting the operation", ret);
    if ((ret = ic_wait_ops(x, op, 1)))
        return ic_rma_fail(x, c, "waiting for its completion", ret);
    defects = ic_rma_check_local(x, c, &io, op);
    if ((ret = ic_send(x->ctl, IC_RMA_ISSUED, c->index, op->status != 0)))
        return ic_rma_fail(x, c, "control channel", ret);
    if ((ret = ic_wait_ctl(x, IC_RMA_DONE, c->index, &m)))
        return ic_rma_fail(x, c, "waiting for the target's verdict", ret);
    return (int)(defects + m.b); /* ours plus the target's */
}

int ic_rma_run(const struct ic_side_ops *ops, void *side, bool i_am_efarm, int ctl,
               const struct ic_rma_case *cases, unsigned ncases, const struct ic_run_opts *opts,
               const struct ic_rma_mem *mem)
{
    struct ic_ctx x = {.ops = ops, .side = side, .ctl = ctl, .opts = opts};
    unsigned defects = 0;
    struct ic_op op;

    for (unsigned k = 0; k < ncases; k++) {
        const struct ic_rma_case *c = &cases[k];
        bool origin = (c->dir == IC_EFARM_TO_FI) == i_am_efarm, origin_failed = false;
        double t0 = ic_now();
        unsigned found;
        char name[96];
        int ret;

        x.deadline = t0 + opts->case_timeout_s;
        if (ops->rma_case_begin)
            ops->rma_case_begin(side, c);
        ret = origin ? ic_rma_origin(&x, c, mem, &op)
                     : ic_rma_target(&x, c, mem->region, mem->ro, &origin_failed);
        if (ret < 0)
            return ret;
        if (origin)
            origin_failed = op.status != 0;
        found = (unsigned)ret;
        if (ops->rma_case_end)
            found += ops->rma_case_end(side, c, origin_failed);
        defects += found;
        if (opts->verbose)
            printf("one-sided case %u %s: %s (%.1f ms)\n", c->index,
                   ic_rma_describe(c, name, sizeof(name)), found ? "DEFECTS" : "ok",
                   (ic_now() - t0) * 1e3);
    }
    return (int)defects;
}
