/*
 * The emulated NIC's own activity: one thread per device context that runs
 * retransmission timers and answers peers (RDMA reads and writes, ACKs) while
 * the application is not polling. It only ever try-locks a QP (and reads the
 * context's tables, whose lock prefers readers), so the application's post
 * and poll never wait for it, and it never wakes the
 * application: completions it produces are found by the next poll. It never
 * allocates, frees or maps memory (efasim.h, "Service thread", says why).
 */
#include <errno.h>
#include <time.h>

#include "efasim.h"

static void *service_main(void *arg)
{
    struct efasim_context *ctx = arg;
    const struct efasim_config *cfg = efasim_config();
    struct timespec period = {.tv_sec = cfg->service_us / 1000000,
                              .tv_nsec = (long)(cfg->service_us % 1000000) * 1000};

    for (;;) {
        nanosleep(&period, NULL);
        if (__atomic_load_n(&ctx->stop, __ATOMIC_ACQUIRE))
            break;
        efasim_progress(ctx, NULL); /* only QPs nobody holds: the others progress themselves */
    }
    return NULL;
}

int efasim_service_start(struct efasim_context *ctx)
{
    int err = pthread_create(&ctx->service, NULL, service_main, ctx);

    if (err)
        return -err;
    ctx->service_running = true;
    return 0;
}

void efasim_service_stop(struct efasim_context *ctx)
{
    if (!ctx->service_running)
        return;
    __atomic_store_n(&ctx->stop, true, __ATOMIC_RELEASE);
    pthread_join(ctx->service, NULL);
    ctx->service_running = false;
}
