/*
 * Engine endpoints driven by several threads at once (issue 42): an MPI
 * library with one endpoint per VCI drives each endpoint from whichever
 * thread holds that VCI, with no lock shared between VCIs. Two pairs of
 * endpoints, each pair driven by its own thread, run the subprotocol matrix
 * (every subprotocol at its boundaries, bytes and wire counters checked) at
 * the same time. Endpoints share nothing but process-wide state (the
 * configuration, the registration caches' registry, the log), so under TSan
 * (CI's proto-tsan suite) any data race between them is a failure.
 */
#include <pthread.h>

#include "proto_rig.h"

struct matrix_job {
    struct rig *rig;
    bool tagged;
};

static void *matrix_thread(void *arg)
{
    struct matrix_job *job = arg;

    efarm_test_context("matrix, %s, in its own thread", job->tagged ? "tagged" : "untagged");
    matrix_run(job->rig, job->tagged);
    return NULL;
}

EFARM_TEST_TIMEOUT(proto_threads_two_pairs_in_parallel, 120)
{
    enum { N = 2 };
    struct rig r[N];
    struct matrix_job job[N];
    pthread_t t[N];

    for (unsigned i = 0; i < N; i++) {
        rig_open(&r[i], &g_small, &g_small);
        rig_handshake(&r[i]);
        job[i] = (struct matrix_job){.rig = &r[i], .tagged = i == 0};
    }
    for (unsigned i = 0; i < N; i++)
        EXPECT_EQ(pthread_create(&t[i], NULL, matrix_thread, &job[i]), 0);
    for (unsigned i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    for (unsigned i = 0; i < N; i++)
        rig_close(&r[i]);
}
