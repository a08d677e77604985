/*
 * efasim's drop-in completion channels and event files: what libibverbs does
 * around them (ibv_create_comp_channel, ibv_get_cq_event, ibv_ack_cq_events,
 * the async event calls) and what the uverbs core's event files are: one
 * event per read, blocking or EAGAIN when there is none. CQs raise their
 * events themselves (cq.c); EFA raises no async event.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "efasim_verbs.h"

/* A read returns one event, as from the uverbs core's event files. */
int efasim_event_file_open(int *user_fd_p, int *device_fd_p)
{
    int sv[2];

    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
        return -errno;
    shutdown(sv[0], SHUT_WR);
    *user_fd_p = sv[0];
    *device_fd_p = sv[1];
    return 0;
}

EFASIM_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
    struct efasim_vchannel *ch = calloc(1, sizeof(*ch));
    int err;

    if (!ch) {
        errno = ENOMEM;
        return NULL;
    }
    err = efasim_event_file_open(&ch->ibv.fd, &ch->device_fd);
    if (err) {
        free(ch);
        errno = -err;
        return NULL;
    }
    ch->ibv.context = context;
    ch->ibv.refcnt = 0;
    return &ch->ibv;
}

/* EBUSY while a CQ made through libibverbs uses it, as rdma-core counts them. */
EFASIM_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
    struct efasim_vchannel *ch = (struct efasim_vchannel *)channel;
    struct ibv_context *context = channel->context;
    int ret = 0;

    pthread_mutex_lock(&context->mutex);
    if (channel->refcnt) {
        ret = EBUSY;
    } else {
        close(ch->ibv.fd);
        close(ch->device_fd);
        free(ch);
    }
    pthread_mutex_unlock(&context->mutex);
    return ret;
}

/* One event per call; -1 (errno from read) when there is none to read. */
EFASIM_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
                                   void **cq_context)
{
    struct ib_uverbs_comp_event_desc ev;

    if (read(channel->fd, &ev, sizeof(ev)) != (ssize_t)sizeof(ev))
        return -1;
    *cq = (struct ibv_cq *)(uintptr_t)ev.cq_handle;
    *cq_context = (*cq)->cq_context;
    efasim_vcq_event_read(*cq);
    return 0;
}

EFASIM_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += nevents;
    pthread_cond_signal(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}

/*
 * libibverbs' ibv_get_async_event on the context's event file: EFA raises
 * none, so the call blocks, or fails with EAGAIN on a non-blocking fd.
 */
EFASIM_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
    struct ib_uverbs_async_event_desc ev;

    if (read(context->async_fd, &ev, sizeof(ev)) != (ssize_t)sizeof(ev))
        return -1;
    event->event_type = (enum ibv_event_type)ev.event_type;
    switch (event->event_type) {
    case IBV_EVENT_CQ_ERR:
        event->element.cq = (struct ibv_cq *)(uintptr_t)ev.element;
        break;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
        event->element.qp = (struct ibv_qp *)(uintptr_t)ev.element;
        break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
        event->element.srq = (struct ibv_srq *)(uintptr_t)ev.element;
        break;
    case IBV_EVENT_WQ_FATAL:
        event->element.wq = (struct ibv_wq *)(uintptr_t)ev.element;
        break;
    default:
        event->element.port_num = (int)ev.element;
        break;
    }
    return 0;
}

/* libibverbs' ibv_ack_async_event: the acknowledged object's count, which its destroy waits for. */
EFASIM_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
    pthread_mutex_t *mutex = NULL;
    pthread_cond_t *cond = NULL;
    uint32_t *done = NULL;

    switch (event->event_type) {
    case IBV_EVENT_CQ_ERR:
        mutex = &event->element.cq->mutex;
        cond = &event->element.cq->cond;
        done = &event->element.cq->async_events_completed;
        break;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
        mutex = &event->element.qp->mutex;
        cond = &event->element.qp->cond;
        done = &event->element.qp->events_completed;
        break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
        mutex = &event->element.srq->mutex;
        cond = &event->element.srq->cond;
        done = &event->element.srq->events_completed;
        break;
    case IBV_EVENT_WQ_FATAL:
        mutex = &event->element.wq->mutex;
        cond = &event->element.wq->cond;
        done = &event->element.wq->events_completed;
        break;
    default:
        return;
    }
    pthread_mutex_lock(mutex);
    ++*done;
    pthread_cond_signal(cond);
    pthread_mutex_unlock(mutex);
}

EFASIM_EXPORT const char *ibv_event_type_str(enum ibv_event_type event)
{
    static const char *const str[] = {
        [IBV_EVENT_CQ_ERR] = "CQ error",
        [IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
        [IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
        [IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
        [IBV_EVENT_COMM_EST] = "communication established",
        [IBV_EVENT_SQ_DRAINED] = "send queue drained",
        [IBV_EVENT_PATH_MIG] = "path migrated",
        [IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
        [IBV_EVENT_DEVICE_FATAL] = "local catastrophic error",
        [IBV_EVENT_PORT_ACTIVE] = "port active",
        [IBV_EVENT_PORT_ERR] = "port error",
        [IBV_EVENT_LID_CHANGE] = "LID change",
        [IBV_EVENT_PKEY_CHANGE] = "P_Key change",
        [IBV_EVENT_SM_CHANGE] = "SM change",
        [IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error",
        [IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
        [IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
        [IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
        [IBV_EVENT_GID_CHANGE] = "GID table change",
        [IBV_EVENT_WQ_FATAL] = "WQ fatal",
    };

    if ((unsigned)event < sizeof(str) / sizeof(str[0]) && str[event])
        return str[event];
    return "unknown";
}
