/*
 * The emulated NIC's own activity: one thread per process, serving every open
 * device context, that runs retransmission timers and answers peers (RDMA
 * reads and writes, ACKs) while the application is not polling. One thread,
 * not one per context: an application that opens several contexts (one per
 * MPI VCI, one per libfabric domain) still has one NIC per device, and a
 * thread per context multiplied the wake-ups (16 per 500 us for 4 ranks of 4
 * VCIs on 2 cores) until they, not the application, used the CPU. It only
 * ever try-locks a QP (and reads a context's tables, whose lock prefers
 * readers), so the application's post and poll never wait for it, and it
 * never wakes the application: completions it produces are found by the next
 * poll. It never allocates, frees or maps memory (efasim_model.h, "Service
 * thread", says why): the contexts it serves are an intrusive list.
 *
 * Locks: svc_life orders starting and stopping the thread (context open and
 * close, never the data path); svc_list guards the list and is held by the
 * thread for one pass over it, so a context leaves the list only between
 * passes and is never served after efasim_context_close returns. Nobody holds a
 * context's table or QP lock while taking svc_list.
 *
 * Watches. Between passes the thread also wakes when a datagram reaches a
 * QP a front end asked it to watch (efasim_cq_watch): the kernel front end
 * does so for a CQ whose ring it stopped trapping, whose reader would
 * otherwise see new completions only at the next pass (../kernel/efa.c,
 * "Completion rings"). A watch fires once (EPOLLONESHOT); its wake-up runs
 * only the front ends' ticks, which arm the rings again, so that the readers'
 * own threads take in the datagrams at their next read: taking them in here
 * as well only contended with them for the QPs. Where the kernel cannot wait on an
 * epoll set with a timeout below a millisecond (epoll_pwait2, Linux 5.11),
 * the thread sleeps its period and watches are not kept. A watch's pass does
 * not move the period's: watches never put the timers off.
 *
 * fork: the child has no service thread and serves none of the parent's
 * contexts (on EFA a child cannot use them either); the contexts it opens
 * itself start its own thread. Both locks are taken around fork so the child
 * never inherits one held by a thread it does not have. For the same reason
 * the context that starts the thread is open only once the thread runs: a
 * fork right after the open would otherwise find it still starting, inside
 * the C library or a runtime (ASan allocates there), and the child would
 * inherit whatever lock that start held.
 */
#include <errno.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "efasim_model.h"

static pthread_mutex_t svc_life = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t svc_list = PTHREAD_MUTEX_INITIALIZER;
static struct efasim_context *svc_head; /* under svc_list */
static pthread_t svc_thread;            /* under svc_life */
static bool svc_running;                /* under svc_life */
static bool svc_up;                     /* under svc_list: the thread has started running */
static bool svc_stop;                   /* atomic */
static int svc_epfd = -1;               /* the watches' epoll set, or -1; atomic */
static pthread_once_t svc_once = PTHREAD_ONCE_INIT;
/* Signalled when svc_up becomes true. */
static pthread_cond_t svc_up_cond = PTHREAD_COND_INITIALIZER;

static void svc_atfork_prepare(void)
{
    pthread_mutex_lock(&svc_life);
    pthread_mutex_lock(&svc_list);
}

static void svc_atfork_parent(void)
{
    pthread_mutex_unlock(&svc_list);
    pthread_mutex_unlock(&svc_life);
}

static void svc_atfork_child(void)
{
    int epfd = __atomic_exchange_n(&svc_epfd, -1, __ATOMIC_RELAXED);

    if (epfd >= 0)
        close(epfd); /* the parent's set: the child's thread makes its own */
    svc_head = NULL;
    svc_running = false;
    svc_up = false;
    __atomic_store_n(&svc_stop, false, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&svc_list);
    pthread_mutex_unlock(&svc_life);
}

static void svc_register_atfork(void)
{
    /* Failing leaves a forked child's first context without a thread: it then polls alone. */
    (void)pthread_atfork(svc_atfork_prepare, svc_atfork_parent, svc_atfork_child);
}

/* One period (false), or less when a watched QP's socket became readable (true). */
static bool svc_wait(int epfd, const struct timespec *period)
{
#ifdef SYS_epoll_pwait2
    struct epoll_event ev[16];
    long n = epfd >= 0 ? syscall(SYS_epoll_pwait2, epfd, ev, 16, period, NULL, (size_t)8) : -1;

    if (n >= 0 || (epfd >= 0 && errno == EINTR))
        return n > 0;
    if (epfd >= 0 && errno == ENOSYS) /* no wait on a set below a millisecond: no watches */
        __atomic_store_n(&svc_epfd, -1, __ATOMIC_RELEASE); /* left open: a watch may hold it */
#else
    (void)epfd;
#endif
    nanosleep(period, NULL);
    return false;
}

static void *service_main(void *arg)
{
    const struct efasim_config *cfg = efasim_config();
    (void)arg;
    pthread_mutex_lock(&svc_list);
    svc_up = true;
    pthread_cond_broadcast(&svc_up_cond);
    pthread_mutex_unlock(&svc_list);
    uint64_t period_ns = (uint64_t)cfg->service_us * 1000, due = efasim_now_ns() + period_ns;

    for (;;) {
        uint64_t now = efasim_now_ns(), left = due > now ? due - now : 0;
        struct timespec wait = {.tv_sec = (time_t)(left / 1000000000),
                                .tv_nsec = (long)(left % 1000000000)};
        bool watch = left && svc_wait(__atomic_load_n(&svc_epfd, __ATOMIC_ACQUIRE), &wait);

        if (__atomic_load_n(&svc_stop, __ATOMIC_ACQUIRE))
            break;
        if (!watch)
            due = efasim_now_ns() + period_ns;
        pthread_mutex_lock(&svc_list);
        for (struct efasim_context *ctx = svc_head; ctx; ctx = ctx->svc_next) {
            /*
             * Only QPs nobody holds: the others progress themselves. A watch's
             * wake-up only hands the work back to the CQs' readers (the ticks).
             */
            if (!watch)
                efasim_progress(ctx, NULL);
            void (*tick)(void *) = __atomic_load_n(&ctx->fe_tick, __ATOMIC_ACQUIRE);

            if (tick)
                tick(ctx->fe);
        }
        pthread_mutex_unlock(&svc_list);
    }
    return NULL;
}

int efasim_service_start(struct efasim_context *ctx)
{
    int err = 0;

    pthread_once(&svc_once, svc_register_atfork);
    pthread_mutex_lock(&svc_life);
    if (!svc_running) {
        /* -1: the thread sleeps its period, without watches. */
        if (__atomic_load_n(&svc_epfd, __ATOMIC_RELAXED) < 0)
            __atomic_store_n(&svc_epfd, epoll_create1(EPOLL_CLOEXEC), __ATOMIC_RELEASE);
        __atomic_store_n(&svc_stop, false, __ATOMIC_RELAXED);
        err = pthread_create(&svc_thread, NULL, service_main, NULL);
        svc_running = !err;
    }
    if (!err) {
        pthread_mutex_lock(&svc_list);
        while (!svc_up)
            pthread_cond_wait(&svc_up_cond, &svc_list);
        ctx->svc_next = svc_head;
        svc_head = ctx;
        pthread_mutex_unlock(&svc_list);
    }
    pthread_mutex_unlock(&svc_life);
    return -err;
}

void efasim_service_stop(struct efasim_context *ctx)
{
    bool last;

    pthread_mutex_lock(&svc_life);
    pthread_mutex_lock(&svc_list);
    for (struct efasim_context **p = &svc_head; *p; p = &(*p)->svc_next) {
        if (*p == ctx) {
            *p = ctx->svc_next;
            break;
        }
    }
    ctx->svc_next = NULL;
    last = !svc_head;
    pthread_mutex_unlock(&svc_list);
    if (last && svc_running) {
        __atomic_store_n(&svc_stop, true, __ATOMIC_RELEASE);
        pthread_join(svc_thread, NULL);
        svc_running = false;
        pthread_mutex_lock(&svc_list);
        svc_up = false;
        pthread_mutex_unlock(&svc_list);
    }
    pthread_mutex_unlock(&svc_life);
}

/* Watch (EPOLLIN, once) or stop watching one QP's socket; the QP cannot go away meanwhile. */
static void qp_watch(int epfd, const struct efasim_qp *qp, bool on)
{
    struct epoll_event ev = {.events = (on ? EPOLLIN : 0) | EPOLLONESHOT};

    /* A failure leaves the period's next pass to arm the ring. */
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, qp->fd, &ev) && errno == ENOENT && on)
        (void)epoll_ctl(epfd, EPOLL_CTL_ADD, qp->fd, &ev);
}

void efasim_cq_watch(struct efasim_cq *cq, bool on)
{
    struct efasim_context *ctx = cq->ctx;
    int epfd = __atomic_load_n(&svc_epfd, __ATOMIC_ACQUIRE);

    if (epfd < 0)
        return;
    pthread_rwlock_rdlock(&ctx->objs);
    for (uint32_t i = 0; i < ctx->qp_slots_used; i++) {
        const struct efasim_qp *qp = ctx->qps[i];

        if (qp && (qp->send_cq == cq || qp->recv_cq == cq) && qp->fd >= 0)
            qp_watch(epfd, qp, on);
    }
    pthread_rwlock_unlock(&ctx->objs);
}
