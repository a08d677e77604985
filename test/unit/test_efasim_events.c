/*
 * Completion channels and CQ events as EFA with CQ notifications offers them
 * through rdma-core 44: a channel is a pollable fd that gives one event per
 * read; ibv_req_notify_cq arms a CQ for one event at its next completion, or
 * at once when completions wait in it (solicited-only events are
 * EOPNOTSUPP); ibv_get_cq_event names the CQ and its cq_context; a channel
 * with CQs cannot be destroyed (EBUSY); ibv_destroy_cq takes the CQ's unread
 * events off its channel and waits until every event read was acknowledged.
 * EFA raises no async events: the context's async fd has none to read.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "efasim_common.h"

/* Whether fd has something to read within ms milliseconds. */
static bool readable(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};

    return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static void set_nonblocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);

    EXPECT_TRUE(fl >= 0);
    EXPECT_EQ(fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
}

/* A CQ of the standard completion fields, bound to channel, through ibv_create_cq_ex. */
static struct ibv_cq_ex *event_cq(struct efasim_dev *dev, struct ibv_comp_channel *channel,
                                  void *cq_context)
{
    struct ibv_cq_init_attr_ex attr = {
        .cqe = 64,
        .cq_context = cq_context,
        .channel = channel,
        .wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP,
    };
    struct ibv_cq_ex *cq = ibv_create_cq_ex(dev->ctx, &attr);

    if (!cq)
        efarm_test_fail(__FILE__, __LINE__, "ibv_create_cq_ex(channel): %s", strerror(errno));
    return cq;
}

/* An SRD QP in RTS whose queues both complete on cq. */
static void receiver_on(struct efasim_dev *dev, struct ibv_cq_ex *cq, struct efasim_qp *qp)
{
    memset(qp, 0, sizeof(*qp));
    qp->dev = dev;
    qp->qkey = EFASIM_TEST_QKEY;
    qp->qp = efasim_qp_create_raw(dev, cq);
    if (!qp->qp)
        efarm_test_fail(__FILE__, __LINE__, "efadv_create_qp_ex: %s", strerror(errno));
    qp->qpn = qp->qp->qp_num;
    efasim_qp_to_rts(qp->qp, qp->qkey, EFASIM_RNR_RETRY_INFINITE);
}

/*
 * Polls cq until one completion, which must be a successful receive. (Only
 * the accessors every CQ has: efasim_poll_one reads fields these CQs were not
 * created with.)
 */
static void take_receive(struct ibv_cq_ex *cq, const char *what)
{
    struct ibv_poll_cq_attr attr = {.comp_mask = 0};
    double deadline = efasim_now() + EFASIM_WAIT_S;
    int rc;

    while ((rc = ibv_start_poll(cq, &attr)) == ENOENT) {
        if (efasim_now() > deadline)
            efarm_test_fail(__FILE__, __LINE__, "no completion for %s", what);
        efasim_sleep_ms(0);
    }
    EXPECT_EQ(rc, 0);
    EXPECT_EQ(cq->status, IBV_WC_SUCCESS);
    EXPECT_EQ(ibv_wc_read_opcode(cq), IBV_WC_RECV);
    ibv_end_poll(cq);
}

EFARM_TEST(efasim_events_channel_and_cq)
{
    struct ibv_comp_channel *ch;
    struct ibv_cq_init_attr_ex attr;
    struct efasim_dev dev;
    struct ibv_cq_ex *cqx;
    struct ibv_cq *cq, *ev_cq;
    void *ev_ctx;
    int tag;

    efasim_dev_open(0, &dev);
    ch = ibv_create_comp_channel(dev.ctx);
    if (!ch)
        efarm_test_fail(__FILE__, __LINE__, "ibv_create_comp_channel: %s", strerror(errno));
    EXPECT_TRUE(ch->fd >= 0);
    EXPECT_TRUE(fcntl(ch->fd, F_GETFD) & FD_CLOEXEC);
    EXPECT_TRUE(ch->context == dev.ctx);
    EXPECT_EQ(ch->refcnt, 0);
    EXPECT_TRUE(!readable(ch->fd, 0));

    cq = ibv_create_cq(dev.ctx, 16, &tag, ch, 0);
    if (!cq)
        efarm_test_fail(__FILE__, __LINE__, "ibv_create_cq(channel): %s", strerror(errno));
    EXPECT_TRUE(cq->channel == ch);
    EXPECT_TRUE(cq->cq_context == &tag);
    EXPECT_EQ(ch->refcnt, 1);
    EXPECT_EQ(ibv_destroy_comp_channel(ch), EBUSY);

    /* EFA has no solicited-only events; arming an empty CQ raises nothing yet. */
    EXPECT_EQ(ibv_req_notify_cq(cq, 1), EOPNOTSUPP);
    EXPECT_EQ(ibv_req_notify_cq(cq, 0), 0);
    EXPECT_TRUE(!readable(ch->fd, 20));
    set_nonblocking(ch->fd);
    errno = 0;
    EXPECT_EQ(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), -1);
    EXPECT_EQ(errno, EAGAIN);

    /* ibv_create_cq_ex counts its CQ on the channel too. */
    memset(&attr, 0, sizeof(attr));
    attr.cqe = 16;
    attr.channel = ch;
    attr.cq_context = &tag;
    cqx = ibv_create_cq_ex(dev.ctx, &attr);
    if (!cqx)
        efarm_test_fail(__FILE__, __LINE__, "ibv_create_cq_ex(channel): %s", strerror(errno));
    EXPECT_TRUE(ibv_cq_ex_to_cq(cqx)->channel == ch);
    EXPECT_EQ(ch->refcnt, 2);

    EXPECT_EQ(ibv_destroy_cq(cq), 0);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0);
    EXPECT_EQ(ch->refcnt, 0);
    EXPECT_EQ(ibv_destroy_comp_channel(ch), 0);
    efasim_dev_close(&dev);
}

/*
 * One event per arm: the next completion raises it, a completion without an
 * arm raises none, and arming a CQ that holds completions raises one at once.
 */
EFARM_TEST(efasim_events_one_per_arm)
{
    const struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    struct ibv_comp_channel *ch;
    struct efasim_buf sbuf, rbuf;
    struct efasim_qp tx, rx;
    struct efasim_dest to_rx;
    struct efasim_dev dev;
    struct ibv_cq_ex *rcq;
    struct ibv_cq *ev_cq;
    void *ev_ctx;
    int tag;

    efasim_dev_open(0, &dev);
    ch = ibv_create_comp_channel(dev.ctx);
    EXPECT_TRUE(ch != NULL);
    rcq = event_cq(&dev, ch, &tag);
    receiver_on(&dev, rcq, &rx);
    efasim_qp_open(&dev, &opts, &tx);
    efasim_dest_to(&dev, &rx, &to_rx);
    efasim_buf_alloc(&dev, 4096, IBV_ACCESS_LOCAL_WRITE, &sbuf);
    efasim_buf_alloc(&dev, 4096, IBV_ACCESS_LOCAL_WRITE, &rbuf);
    for (unsigned i = 0; i < 4; i++)
        efasim_post_recv(&rx, i, &rbuf, 0, 1024);

    /* Armed: the receive raises one event, which names the CQ and its context. */
    EXPECT_EQ(ibv_req_notify_cq(ibv_cq_ex_to_cq(rcq), 0), 0);
    EXPECT_EQ(efasim_send(&tx, &to_rx, 1, &sbuf, 0, 64), 0);
    if (!readable(ch->fd, (int)(EFASIM_WAIT_S * 1000)))
        efarm_test_fail(__FILE__, __LINE__, "no event for the armed CQ's completion");
    EXPECT_EQ(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
    EXPECT_TRUE(ev_cq == ibv_cq_ex_to_cq(rcq));
    EXPECT_TRUE(ev_ctx == &tag);
    EXPECT_TRUE(!readable(ch->fd, 0)); /* one event, one read */
    take_receive(rcq, "the receive that raised the event");

    /* Not armed again: the next completion raises nothing. */
    EXPECT_EQ(efasim_send(&tx, &to_rx, 2, &sbuf, 0, 64), 0);
    if (readable(ch->fd, 200))
        efarm_test_fail(__FILE__, __LINE__, "an event without an arm");

    /* Arming with that completion waiting in the CQ raises one at once. */
    EXPECT_EQ(ibv_req_notify_cq(ibv_cq_ex_to_cq(rcq), 0), 0);
    if (!readable(ch->fd, 1000))
        efarm_test_fail(__FILE__, __LINE__, "no event when arming a CQ that holds a completion");
    EXPECT_EQ(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
    EXPECT_TRUE(ev_cq == ibv_cq_ex_to_cq(rcq));
    take_receive(rcq, "the receive that waited for the arm");
    ibv_ack_cq_events(ibv_cq_ex_to_cq(rcq), 2);

    EXPECT_EQ(ibv_destroy_ah(to_rx.ah), 0);
    efasim_buf_free(&sbuf);
    efasim_buf_free(&rbuf);
    efasim_qp_close(&tx);
    EXPECT_EQ(ibv_destroy_qp(rx.qp), 0);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(rcq)), 0);
    EXPECT_EQ(ibv_destroy_comp_channel(ch), 0);
    efasim_dev_close(&dev);
}

struct destroyer {
    struct ibv_cq *cq;
    int ret;
    int done; /* atomic */
};

static void *destroy_cq_thread(void *arg)
{
    struct destroyer *d = arg;

    d->ret = ibv_destroy_cq(d->cq);
    __atomic_store_n(&d->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* ibv_destroy_cq waits until the events read from the CQ's channel are acknowledged. */
EFARM_TEST(efasim_events_destroy_waits_for_ack)
{
    const struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    struct destroyer d = {0};
    struct ibv_comp_channel *ch;
    struct efasim_buf sbuf, rbuf;
    struct efasim_qp tx, rx;
    struct efasim_dest to_rx;
    struct efasim_dev dev;
    struct ibv_cq_ex *rcq;
    struct ibv_cq *ev_cq;
    pthread_t thread;
    void *ev_ctx;

    efasim_dev_open(0, &dev);
    ch = ibv_create_comp_channel(dev.ctx);
    EXPECT_TRUE(ch != NULL);
    rcq = event_cq(&dev, ch, NULL);
    receiver_on(&dev, rcq, &rx);
    efasim_qp_open(&dev, &opts, &tx);
    efasim_dest_to(&dev, &rx, &to_rx);
    efasim_buf_alloc(&dev, 4096, IBV_ACCESS_LOCAL_WRITE, &sbuf);
    efasim_buf_alloc(&dev, 4096, IBV_ACCESS_LOCAL_WRITE, &rbuf);
    efasim_post_recv(&rx, 1, &rbuf, 0, 1024);
    EXPECT_EQ(ibv_req_notify_cq(ibv_cq_ex_to_cq(rcq), 0), 0);
    EXPECT_EQ(efasim_send(&tx, &to_rx, 1, &sbuf, 0, 64), 0);
    if (!readable(ch->fd, (int)(EFASIM_WAIT_S * 1000)))
        efarm_test_fail(__FILE__, __LINE__, "no event");
    EXPECT_EQ(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
    take_receive(rcq, "the receive");
    EXPECT_EQ(ibv_destroy_qp(rx.qp), 0);

    d.cq = ibv_cq_ex_to_cq(rcq);
    EXPECT_EQ(pthread_create(&thread, NULL, destroy_cq_thread, &d), 0);
    efasim_sleep_ms(200);
    EXPECT_EQ(__atomic_load_n(&d.done, __ATOMIC_ACQUIRE), 0); /* still waiting for the ack */
    ibv_ack_cq_events(ev_cq, 1);
    EXPECT_EQ(pthread_join(thread, NULL), 0);
    EXPECT_EQ(d.ret, 0);

    EXPECT_EQ(ibv_destroy_ah(to_rx.ah), 0);
    efasim_buf_free(&sbuf);
    efasim_buf_free(&rbuf);
    efasim_qp_close(&tx);
    EXPECT_EQ(ibv_destroy_comp_channel(ch), 0);
    efasim_dev_close(&dev);
}

/*
 * A CQ destroyed with an unread event takes the event off the channel, as the
 * kernel does: the next event read is another CQ's, never the gone one's.
 */
EFARM_TEST(efasim_events_unread_go_with_their_cq)
{
    const struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    struct ibv_comp_channel *ch;
    struct efasim_buf sbuf, rbuf;
    struct efasim_qp tx, rx[2];
    struct efasim_dest to_rx[2];
    struct ibv_cq_ex *rcq[2];
    struct efasim_dev dev;
    struct ibv_cq *ev_cq;
    void *ev_ctx;

    efasim_dev_open(0, &dev);
    ch = ibv_create_comp_channel(dev.ctx);
    EXPECT_TRUE(ch != NULL);
    efasim_qp_open(&dev, &opts, &tx);
    efasim_buf_alloc(&dev, 4096, IBV_ACCESS_LOCAL_WRITE, &sbuf);
    efasim_buf_alloc(&dev, 4096, IBV_ACCESS_LOCAL_WRITE, &rbuf);
    for (int i = 0; i < 2; i++) {
        rcq[i] = event_cq(&dev, ch, NULL);
        receiver_on(&dev, rcq[i], &rx[i]);
        efasim_dest_to(&dev, &rx[i], &to_rx[i]);
        efasim_post_recv(&rx[i], 1, &rbuf, 1024 * (size_t)i, 1024);
        EXPECT_EQ(ibv_req_notify_cq(ibv_cq_ex_to_cq(rcq[i]), 0), 0);
    }
    /* The first CQ's event is raised, then the second's; neither is read. */
    for (int i = 0; i < 2; i++) {
        EXPECT_EQ(efasim_send(&tx, &to_rx[i], (uint64_t)i, &sbuf, 0, 64), 0);
        take_receive(rcq[i], "a receive whose event stays unread");
    }
    EXPECT_EQ(ibv_destroy_qp(rx[0].qp), 0);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(rcq[0])), 0); /* nothing read: nothing to ack */
    set_nonblocking(ch->fd);
    EXPECT_EQ(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
    EXPECT_TRUE(ev_cq == ibv_cq_ex_to_cq(rcq[1]));
    errno = 0;
    EXPECT_EQ(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), -1);
    EXPECT_EQ(errno, EAGAIN);
    ibv_ack_cq_events(ibv_cq_ex_to_cq(rcq[1]), 1);

    for (int i = 0; i < 2; i++)
        EXPECT_EQ(ibv_destroy_ah(to_rx[i].ah), 0);
    EXPECT_EQ(ibv_destroy_qp(rx[1].qp), 0);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(rcq[1])), 0);
    efasim_buf_free(&sbuf);
    efasim_buf_free(&rbuf);
    efasim_qp_close(&tx);
    EXPECT_EQ(ibv_destroy_comp_channel(ch), 0);
    efasim_dev_close(&dev);
}

/*
 * efadv_create_cq takes a channel too and its CQ raises events; rdma-core 44
 * leaves such a CQ outside libibverbs' bookkeeping (no verbs_init_cq), so the
 * event's cq_context is NULL and the channel does not count the CQ.
 */
EFARM_TEST(efasim_events_efadv_cq)
{
    const struct efasim_qp_opts opts = EFASIM_QP_OPTS_DEFAULT;
    struct efadv_cq_init_attr efa = {.wc_flags = EFADV_WC_EX_WITH_SGID};
    struct ibv_cq_init_attr_ex attr;
    struct ibv_comp_channel *ch;
    struct efasim_buf sbuf, rbuf;
    struct efasim_qp tx, rx;
    struct efasim_dest to_rx;
    struct efasim_dev dev;
    struct ibv_cq_ex *rcq;
    struct ibv_cq *ev_cq;
    void *ev_ctx;
    int tag;

    efasim_dev_open(0, &dev);
    ch = ibv_create_comp_channel(dev.ctx);
    EXPECT_TRUE(ch != NULL);
    memset(&attr, 0, sizeof(attr));
    attr.cqe = 64;
    attr.channel = ch;
    attr.cq_context = &tag;
    attr.wc_flags = IBV_WC_EX_WITH_BYTE_LEN;
    rcq = efadv_create_cq(dev.ctx, &attr, &efa, sizeof(efa));
    if (!rcq)
        efarm_test_fail(__FILE__, __LINE__, "efadv_create_cq(channel): %s", strerror(errno));
    EXPECT_EQ(ch->refcnt, 0);
    receiver_on(&dev, rcq, &rx);
    efasim_qp_open(&dev, &opts, &tx);
    efasim_dest_to(&dev, &rx, &to_rx);
    efasim_buf_alloc(&dev, 4096, IBV_ACCESS_LOCAL_WRITE, &sbuf);
    efasim_buf_alloc(&dev, 4096, IBV_ACCESS_LOCAL_WRITE, &rbuf);
    efasim_post_recv(&rx, 1, &rbuf, 0, 1024);
    EXPECT_EQ(ibv_req_notify_cq(ibv_cq_ex_to_cq(rcq), 0), 0);
    EXPECT_EQ(efasim_send(&tx, &to_rx, 1, &sbuf, 0, 64), 0);
    if (!readable(ch->fd, (int)(EFASIM_WAIT_S * 1000)))
        efarm_test_fail(__FILE__, __LINE__, "no event for an efadv CQ");
    EXPECT_EQ(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
    EXPECT_TRUE(ev_cq == ibv_cq_ex_to_cq(rcq));
    EXPECT_TRUE(ev_ctx == NULL);
    ibv_ack_cq_events(ev_cq, 1);
    take_receive(rcq, "the receive");

    EXPECT_EQ(ibv_destroy_ah(to_rx.ah), 0);
    efasim_buf_free(&sbuf);
    efasim_buf_free(&rbuf);
    efasim_qp_close(&tx);
    EXPECT_EQ(ibv_destroy_qp(rx.qp), 0);
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(rcq)), 0);
    EXPECT_EQ(ibv_destroy_comp_channel(ch), 0);
    efasim_dev_close(&dev);
}

/* EFA raises no async event: the context's async fd is real and has nothing to read. */
EFARM_TEST(efasim_events_no_async_event)
{
    struct ibv_async_event ev;
    struct efasim_dev dev;

    efasim_dev_open(0, &dev);
    EXPECT_TRUE(dev.ctx->async_fd >= 0);
    EXPECT_TRUE(fcntl(dev.ctx->async_fd, F_GETFD) & FD_CLOEXEC);
    EXPECT_TRUE(!readable(dev.ctx->async_fd, 20));
    set_nonblocking(dev.ctx->async_fd);
    errno = 0;
    EXPECT_EQ(ibv_get_async_event(dev.ctx, &ev), -1);
    EXPECT_EQ(errno, EAGAIN);
    efasim_dev_close(&dev);
}
