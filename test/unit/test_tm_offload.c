/*
 * Tests for the tag matcher with an offload device attached (efarm_tm.h,
 * "Offload"), driven through the device model of tm_offload_mock.h: the
 * RFC's m1/m2/b1/b2 race, sync requests, cancel against consumption by the
 * device, capacity, wildcards, and the model-based randomized test of
 * test_tm.c with the device in the loop and the test choosing when messages
 * reach the device and when software polls the completions.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "efarm_errno.h"
#include "efarm_test.h"
#include "efarm_tm.h"
#include "tm_model.h"
#include "tm_offload_mock.h"

#define ANY_SRC EFARM_TM_ANY_SOURCE
#define ANY_TAG EFARM_TM_ANY_TAG

struct rig {
    struct efarm_tm *tm;
    struct tm_mock mock;
};

static void rig_open(struct rig *rig, unsigned max_posted, unsigned max_unexpected,
                     unsigned capacity, unsigned sync_threshold)
{
    tm_mock_init(&rig->mock, capacity, sync_threshold);
    rig->tm = NULL;
    EXPECT_RET(efarm_tm_open(max_posted, max_unexpected, &rig->tm), 0);
    EXPECT_RET(efarm_tm_offload_attach(rig->tm, &tm_mock_ops, &rig->mock, capacity), 0);
}

/* A message reaches the device: 1 when it matched there (*recv_p set), 0 when it went to software.
 */
static int rig_wire(struct rig *rig, uint32_t context, int32_t source, int32_t tag, uintptr_t id,
                    efarm_tm_handle_t *recv_p)
{
    struct tm_mock_msg msg = {.context = context, .source = source, .tag = tag, .id = id};
    efarm_tm_handle_t recv = 0;
    int ret = tm_mock_arrive(&rig->mock, &msg, &recv);

    *recv_p = recv;
    return ret;
}

/* Software has polled the oldest completion: pass on a sync request it carries. */
static void rig_pop(struct rig *rig)
{
    if (tm_mock_pop(&rig->mock))
        efarm_tm_offload_sync_required(rig->tm);
}

/*
 * Poll the oldest completion into the matcher, as the engine would: a device
 * match through efarm_tm_offload_matched(), a message for software through
 * efarm_tm_arrive(). Returns EFARM_TM_MATCHED with the receive's user pointer
 * in *user_p, EFARM_TM_QUEUED, or -EAGAIN (the completion stays queued).
 */
static int rig_poll(struct rig *rig, void **user_p)
{
    const struct tm_mock_cqe *cqe = tm_mock_cqe_at(&rig->mock, 0);
    void *user = NULL;
    int ret;

    EXPECT_TRUE(cqe != NULL);
    if (cqe->kind == TM_MOCK_CQE_MATCHED) {
        EXPECT_RET(efarm_tm_offload_matched(rig->tm, cqe->recv, &user), 0);
        ret = EFARM_TM_MATCHED;
    } else {
        ret = efarm_tm_arrive(rig->tm, cqe->msg.context, cqe->msg.source, cqe->msg.tag,
                              tm_user_of(cqe->msg.id), &user);
        if (ret == -EAGAIN)
            return ret;
    }
    rig_pop(rig);
    *user_p = user;
    return ret;
}

static void rig_close(struct rig *rig)
{
    EXPECT_EQ(rig->mock.stats.violations, 0);
    efarm_tm_close(rig->tm);
}

EFARM_TEST(tm_offload_attach_rules)
{
    const struct efarm_tm_offload_ops no_sync = {.add = tm_mock_ops.add, .del = tm_mock_ops.del};
    struct efarm_tm *tm = NULL;
    struct tm_mock mock;
    efarm_tm_handle_t h;
    void *got = NULL;

    tm_mock_init(&mock, 0, 0);
    EXPECT_RET(efarm_tm_open(4, 4, &tm), 0);
    EXPECT_RET(efarm_tm_offload_attach(tm, NULL, &mock, 1), -EINVAL);
    EXPECT_RET(efarm_tm_offload_attach(tm, &no_sync, &mock, 1), -EINVAL);
    EXPECT_RET(efarm_tm_post(tm, 0, 1, 1, tm_user_of(1), &h, &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_offload_attach(tm, &tm_mock_ops, &mock, 1), -EBUSY);
    EXPECT_RET(efarm_tm_cancel(tm, h, &got), 0);
    /* Capacity 0: attached, but every receive stays in software. */
    EXPECT_RET(efarm_tm_offload_attach(tm, &tm_mock_ops, &mock, 0), 0);
    EXPECT_RET(efarm_tm_offload_attach(tm, &tm_mock_ops, &mock, 0), -EBUSY);
    EXPECT_RET(efarm_tm_post(tm, 0, 1, 1, tm_user_of(2), &h, &got), EFARM_TM_QUEUED);
    EXPECT_EQ(efarm_tm_offload_count(tm), 0);
    EXPECT_EQ(mock.stats.adds, 0);
    EXPECT_RET(efarm_tm_offload_matched(tm, h, &got), -ENOENT);
    efarm_tm_close(tm);
}

/*
 * The RFC's race: m1 reaches the device before b1 is posted, m2 after. b1
 * must not be added to the device before software has handled m1, or m2
 * would take it ahead of m1.
 */
EFARM_TEST(tm_offload_m1_m2_race_keeps_b1_in_software)
{
    struct rig rig;
    efarm_tm_handle_t b1, b2, b3, recv;
    void *got = NULL;

    rig_open(&rig, 8, 8, 4, 0);
    EXPECT_RET(rig_wire(&rig, 0, 1, 5, 101, &recv), 0);
    EXPECT_RET(efarm_tm_post(rig.tm, 0, 1, 5, tm_user_of(1), &b1, &got), EFARM_TM_QUEUED);
    EXPECT_RET(rig_wire(&rig, 0, 1, 5, 102, &recv), 0); /* m2 must not take b1. */
    /* b2 may not overtake b1, which waits in software: it is not even offered. */
    EXPECT_RET(efarm_tm_post(rig.tm, 0, 1, 5, tm_user_of(2), &b2, &got), EFARM_TM_QUEUED);
    EXPECT_RET(rig_poll(&rig, &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(1));
    EXPECT_RET(rig_poll(&rig, &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(2));
    EXPECT_EQ(rig.mock.stats.adds, 1);
    EXPECT_EQ(rig.mock.stats.adds_refused, 1);

    /* Software has handled both: after a sync the device takes receives again. */
    EXPECT_RET(efarm_tm_post(rig.tm, 0, 1, 6, tm_user_of(3), &b3, &got), EFARM_TM_QUEUED);
    EXPECT_EQ(rig.mock.stats.syncs, 1);
    EXPECT_EQ(efarm_tm_offload_count(rig.tm), 1);
    EXPECT_RET(rig_wire(&rig, 0, 1, 6, 103, &recv), 1);
    EXPECT_EQ(recv, b3);
    EXPECT_RET(rig_poll(&rig, &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(3));
    EXPECT_EQ(efarm_tm_posted_count(rig.tm) + efarm_tm_offload_count(rig.tm), 0);
    rig_close(&rig);
}

/*
 * The same sequence against a device that ignores the counts: m2 takes b1
 * while m1, which b1 also matches, is still on its way to software. This is
 * what the rule prevents, and what the tests above and below would catch.
 */
EFARM_TEST(tm_offload_race_breaks_order_without_the_sync_rule)
{
    struct rig rig;
    efarm_tm_handle_t b1, recv;
    void *got = NULL;

    rig_open(&rig, 8, 8, 4, 0);
    rig.mock.enforce_sync = false;
    EXPECT_RET(rig_wire(&rig, 0, 1, 5, 101, &recv), 0);
    EXPECT_RET(efarm_tm_post(rig.tm, 0, 1, 5, tm_user_of(1), &b1, &got), EFARM_TM_QUEUED);
    EXPECT_EQ(efarm_tm_offload_count(rig.tm), 1);
    EXPECT_RET(rig_wire(&rig, 0, 1, 5, 102, &recv), 1);
    EXPECT_EQ(recv, b1); /* m2 overtook m1. */
    EXPECT_RET(rig_poll(&rig, &got), EFARM_TM_QUEUED);
    rig_close(&rig);
}

/*
 * A message software could not take (-EAGAIN, unexpected pool full) is not
 * handled: the device stays out of sync and b1 stays in software until it is.
 */
EFARM_TEST(tm_offload_refused_message_is_not_counted)
{
    struct rig rig;
    efarm_tm_handle_t b1, m, recv;
    void *got = NULL;

    rig_open(&rig, 8, 1, 4, 0);
    EXPECT_RET(rig_wire(&rig, 0, 2, 9, 100, &recv), 0);
    EXPECT_RET(rig_poll(&rig, &got), EFARM_TM_QUEUED);
    EXPECT_RET(rig_wire(&rig, 0, 1, 5, 101, &recv), 0);
    EXPECT_RET(rig_poll(&rig, &got), -EAGAIN);
    EXPECT_RET(efarm_tm_post(rig.tm, 0, 1, 5, tm_user_of(1), &b1, &got), EFARM_TM_QUEUED);
    EXPECT_RET(rig_wire(&rig, 0, 1, 5, 102, &recv), 0); /* m2 must not take b1. */
    EXPECT_EQ(efarm_tm_offload_count(rig.tm), 0);
    EXPECT_RET(efarm_tm_probe(rig.tm, 0, 2, 9, &m, &got), 1);
    EXPECT_RET(efarm_tm_claim(rig.tm, m, &got), 0);
    EXPECT_RET(rig_poll(&rig, &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(1));
    EXPECT_RET(rig_poll(&rig, &got), EFARM_TM_QUEUED);
    rig_close(&rig);
}

/*
 * A completion flagged "sync required" stops adds until a sync succeeds; a
 * sync that comes too early (messages still queued for software) fails and
 * the receive stays in software.
 */
EFARM_TEST(tm_offload_sync_request_stops_adds_until_synced)
{
    struct rig rig;
    efarm_tm_handle_t b1, b2, b3, b4, recv;
    void *got = NULL;

    rig_open(&rig, 8, 8, 4, 1);
    EXPECT_RET(rig_wire(&rig, 0, 0, 1, 101, &recv), 0);
    EXPECT_RET(rig_poll(&rig, &got), EFARM_TM_QUEUED);
    EXPECT_TRUE(rig.mock.sync_wait_polled);
    EXPECT_RET(efarm_tm_post(rig.tm, 0, 0, 2, tm_user_of(1), &b1, &got), EFARM_TM_QUEUED);
    EXPECT_EQ(rig.mock.stats.syncs, 1);
    EXPECT_EQ(rig.mock.stats.adds, 1);
    EXPECT_EQ(efarm_tm_offload_count(rig.tm), 1);

    /* m2 goes to software; b2 is posted before software has polled it. */
    EXPECT_RET(rig_wire(&rig, 0, 0, 3, 102, &recv), 0);
    EXPECT_RET(efarm_tm_post(rig.tm, 0, 0, 4, tm_user_of(2), &b2, &got), EFARM_TM_QUEUED);
    EXPECT_EQ(rig.mock.stats.adds_refused, 1);
    EXPECT_RET(efarm_tm_post(rig.tm, 0, 0, 5, tm_user_of(3), &b3, &got), EFARM_TM_QUEUED);
    EXPECT_EQ(rig.mock.stats.adds, 2);
    EXPECT_EQ(efarm_tm_offload_count(rig.tm), 1);
    EXPECT_RET(rig_poll(&rig, &got), EFARM_TM_QUEUED);
    EXPECT_RET(rig_wire(&rig, 0, 0, 4, 103, &recv), 0);
    EXPECT_RET(rig_wire(&rig, 0, 0, 5, 104, &recv), 0);
    EXPECT_RET(rig_poll(&rig, &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(2));

    /* Message 104 still waits for software: the sync fails, b4 stays in software. */
    EXPECT_RET(efarm_tm_cancel(rig.tm, b3, &got), 0);
    EXPECT_RET(efarm_tm_post(rig.tm, 0, 0, 6, tm_user_of(4), &b4, &got), EFARM_TM_QUEUED);
    EXPECT_EQ(rig.mock.stats.syncs_failed, 1);
    EXPECT_EQ(rig.mock.stats.adds, 2);
    EXPECT_RET(rig_poll(&rig, &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_cancel(rig.tm, b4, &got), 0);
    EXPECT_RET(efarm_tm_post(rig.tm, 0, 0, 6, tm_user_of(5), &b4, &got), EFARM_TM_QUEUED);
    EXPECT_EQ(rig.mock.stats.syncs, 3);
    EXPECT_EQ(efarm_tm_offload_count(rig.tm), 2);
    rig_close(&rig);
}

/* Cancel of a device-held receive goes through del, which fails once the device consumed it. */
EFARM_TEST(tm_offload_cancel_against_device_consumption)
{
    struct rig rig;
    efarm_tm_handle_t b1, b2, b3, recv;
    void *got = NULL;

    rig_open(&rig, 8, 8, 4, 0);
    EXPECT_RET(efarm_tm_post(rig.tm, 0, 1, 1, tm_user_of(1), &b1, &got), EFARM_TM_QUEUED);
    EXPECT_RET(rig_wire(&rig, 0, 1, 1, 101, &recv), 1);
    got = NULL;
    EXPECT_RET(efarm_tm_cancel(rig.tm, b1, &got), -ENOENT);
    EXPECT_TRUE(got == NULL);
    EXPECT_EQ(rig.mock.stats.dels_failed, 1);
    EXPECT_EQ(efarm_tm_posted_count(rig.tm), 1); /* Until the completion is polled. */
    EXPECT_RET(rig_poll(&rig, &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(1));
    EXPECT_RET(efarm_tm_cancel(rig.tm, b1, &got), -ENOENT);
    EXPECT_EQ(rig.mock.stats.dels, 1); /* A stale handle never reaches the device. */
    EXPECT_RET(efarm_tm_offload_matched(rig.tm, b1, &got), -ENOENT);

    EXPECT_RET(efarm_tm_post(rig.tm, 0, 1, 2, tm_user_of(2), &b2, &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_post(rig.tm, 0, 1, 3, tm_user_of(3), &b3, &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_cancel(rig.tm, b2, &got), 0);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(2));
    EXPECT_EQ(rig.mock.n_list, 1);
    EXPECT_RET(efarm_tm_offload_matched(rig.tm, b2, &got), -ENOENT);
    EXPECT_RET(rig_wire(&rig, 0, 1, 2, 102, &recv), 0);
    EXPECT_RET(rig_poll(&rig, &got), EFARM_TM_QUEUED);
    EXPECT_RET(rig_wire(&rig, 0, 1, 3, 103, &recv), 1);
    EXPECT_EQ(recv, b3);
    EXPECT_RET(rig_poll(&rig, &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(3));
    rig_close(&rig);
}

/*
 * Receives beyond the capacity stay in software, and while any does, later
 * receives stay behind it even when the device has room again.
 */
EFARM_TEST(tm_offload_capacity_keeps_posting_order)
{
    struct rig rig;
    efarm_tm_handle_t h, recv;
    void *got = NULL;

    rig_open(&rig, 16, 8, 2, 0);
    EXPECT_RET(efarm_tm_post(rig.tm, 0, 0, 1, tm_user_of(1), &h, &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_post(rig.tm, 0, 0, 2, tm_user_of(2), &h, &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_post(rig.tm, 0, 0, 3, tm_user_of(3), &h, &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_post(rig.tm, 0, ANY_SRC, ANY_TAG, tm_user_of(4), &h, &got),
               EFARM_TM_QUEUED);
    EXPECT_EQ(efarm_tm_offload_count(rig.tm), 2);
    EXPECT_EQ(rig.mock.stats.adds, 2);
    EXPECT_RET(rig_wire(&rig, 0, 0, 1, 101, &recv), 1);
    EXPECT_RET(rig_poll(&rig, &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(1));
    EXPECT_EQ(efarm_tm_offload_count(rig.tm), 1);

    /* Room in the device, but receives 3 and 4 wait in software: 5 goes behind them. */
    EXPECT_RET(efarm_tm_post(rig.tm, 0, 0, 5, tm_user_of(5), &h, &got), EFARM_TM_QUEUED);
    EXPECT_RET(rig_wire(&rig, 0, 0, 5, 102, &recv), 0); /* Receive 4 comes first. */
    EXPECT_EQ(rig.mock.stats.adds, 2);
    EXPECT_EQ(efarm_tm_offload_count(rig.tm), 1);
    EXPECT_RET(rig_wire(&rig, 0, 0, 3, 103, &recv), 0);
    EXPECT_RET(rig_wire(&rig, 0, 0, 5, 104, &recv), 0);
    EXPECT_RET(rig_wire(&rig, 0, 0, 2, 105, &recv), 1);
    EXPECT_RET(rig_poll(&rig, &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(4)); /* Posted before 5. */
    EXPECT_RET(rig_poll(&rig, &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(3));
    EXPECT_RET(rig_poll(&rig, &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(5));
    EXPECT_RET(rig_poll(&rig, &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(2));

    /* Software holds nothing now and has handled everything: the device fills again. */
    EXPECT_RET(efarm_tm_post(rig.tm, 0, 0, 6, tm_user_of(6), &h, &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_post(rig.tm, 0, 0, 7, tm_user_of(7), &h, &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_post(rig.tm, 0, 0, 8, tm_user_of(8), &h, &got), EFARM_TM_QUEUED);
    EXPECT_EQ(efarm_tm_offload_count(rig.tm), 2);
    EXPECT_EQ(efarm_tm_posted_count(rig.tm), 3);
    rig_close(&rig);
}

/* Wildcard receives in the device match in posting order, as in software. */
EFARM_TEST(tm_offload_wildcards_match_in_posting_order)
{
    struct rig rig;
    efarm_tm_handle_t h, m, recv;
    void *got = NULL;

    rig_open(&rig, 8, 8, 4, 0);
    EXPECT_RET(efarm_tm_post(rig.tm, 0, ANY_SRC, 7, tm_user_of(1), &h, &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_post(rig.tm, 0, 3, ANY_TAG, tm_user_of(2), &h, &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_post(rig.tm, 0, ANY_SRC, ANY_TAG, tm_user_of(3), &h, &got),
               EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_post(rig.tm, 1, 3, 7, tm_user_of(4), &h, &got), EFARM_TM_QUEUED);
    EXPECT_EQ(efarm_tm_offload_count(rig.tm), 4);
    EXPECT_RET(rig_wire(&rig, 0, 3, 7, 101, &recv), 1);
    EXPECT_RET(rig_wire(&rig, 0, 3, 7, 102, &recv), 1);
    EXPECT_RET(rig_wire(&rig, 0, 3, 7, 103, &recv), 1);
    EXPECT_RET(rig_wire(&rig, 0, 3, 7, 104, &recv), 0);
    EXPECT_RET(rig_wire(&rig, 1, 3, 7, 105, &recv), 1);
    for (uintptr_t id = 1; id <= 3; id++) {
        EXPECT_RET(rig_poll(&rig, &got), EFARM_TM_MATCHED);
        EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(id));
    }
    EXPECT_RET(rig_poll(&rig, &got), EFARM_TM_QUEUED);
    EXPECT_RET(rig_poll(&rig, &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(4));
    /* Probes see what the device passed up, once software has it. */
    EXPECT_RET(efarm_tm_probe(rig.tm, 0, ANY_SRC, ANY_TAG, &m, &got), 1);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(104));
    rig_close(&rig);
}

/*
 * The randomized test: the reference matcher of tm_model.h against the
 * matcher with the device model attached. Each message is taken, in the
 * reference, when the device matches it or when software handles it; the
 * matcher must make exactly the reference's matches, and in addition:
 * - a device match never takes a receive that a message still queued for
 *   software matches (that message reached the device first);
 * - the device's list is exactly the oldest posted receives, in order;
 * - the device never sees a protocol violation (stats.violations).
 */
struct offload_run {
    struct rig rig;
    struct tm_model m;
    /* Receives the device matched whose completion is not polled yet. */
    struct tm_model_entry consumed[TM_MOCK_CQ_MAX];
    unsigned n_consumed;
    struct tm_handle_ring recvs, msgs;
    unsigned n_contexts, n_sources, n_tags;
    uintptr_t next_id;
};

/* What the randomized runs went through, summed over a test, to show they reached every path. */
struct offload_coverage {
    uint64_t steps, device_matches, software_matches, adds_refused, dels_failed;
    uint64_t syncs_failed, back_pressure;
};

static void run_post(struct offload_run *run, uint32_t context, int32_t source, int32_t tag,
                     uintptr_t id)
{
    struct tm_model *m = &run->m;
    efarm_tm_handle_t handle = 0;
    void *got = NULL;
    int ret = efarm_tm_post(run->rig.tm, context, source, tag, tm_user_of(id), &handle, &got);
    int i = tm_model_find_unexpected(m, context, source, tag);

    if (i >= 0) {
        EXPECT_RET(ret, EFARM_TM_MATCHED);
        EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(m->unexpected[i].id));
        tm_model_delete(m->unexpected, &m->n_unexpected, (unsigned)i);
    } else if (m->n_posted + run->n_consumed == m->max_posted) {
        EXPECT_RET(ret, -ENOMEM);
    } else {
        EXPECT_RET(ret, EFARM_TM_QUEUED);
        m->posted[m->n_posted++] = (struct tm_model_entry){context, source, tag, id, handle};
        tm_ring_add(&run->recvs, handle, id);
    }
}

static void run_wire(struct offload_run *run, uint32_t context, int32_t source, int32_t tag,
                     uintptr_t id, struct offload_coverage *cov)
{
    struct tm_model *m = &run->m;
    efarm_tm_handle_t recv;
    int i;

    if (run->rig.mock.cq_n == TM_MOCK_CQ_MAX ||
        rig_wire(&run->rig, context, source, tag, id, &recv) == 0)
        return;
    i = tm_model_find_posted(m, context, source, tag);
    EXPECT_TRUE(i >= 0);
    EXPECT_EQ(m->posted[i].handle, recv);
    for (unsigned k = 0; k < run->rig.mock.cq_n; k++) {
        const struct tm_mock_cqe *cqe = tm_mock_cqe_at(&run->rig.mock, k);

        if (cqe->kind == TM_MOCK_CQE_UNEXPECTED)
            EXPECT_TRUE(
                !tm_model_match(&m->posted[i], cqe->msg.context, cqe->msg.source, cqe->msg.tag));
    }
    run->consumed[run->n_consumed++] = m->posted[i];
    tm_model_delete(m->posted, &m->n_posted, (unsigned)i);
    cov->device_matches++;
}

/* Software polls the oldest completion; messages go through match_posted + arrive, or arrive. */
static void run_poll(struct offload_run *run, struct offload_coverage *cov)
{
    const struct tm_mock_cqe *cqe = tm_mock_cqe_at(&run->rig.mock, 0);
    struct tm_model *m = &run->m;
    void *got = NULL;
    int ret, i;

    if (cqe == NULL)
        return;
    if (cqe->kind == TM_MOCK_CQE_MATCHED) {
        for (i = 0; i < (int)run->n_consumed && run->consumed[i].handle != cqe->recv; i++)
            ;
        EXPECT_TRUE(i < (int)run->n_consumed);
        EXPECT_RET(efarm_tm_offload_matched(run->rig.tm, cqe->recv, &got), 0);
        EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(run->consumed[i].id));
        tm_model_delete(run->consumed, &run->n_consumed, (unsigned)i);
        rig_pop(&run->rig);
        return;
    }
    i = tm_model_find_posted(m, cqe->msg.context, cqe->msg.source, cqe->msg.tag);
    ret = 0;
    if (efarm_test_rand() % 2)
        ret = efarm_tm_match_posted(run->rig.tm, cqe->msg.context, cqe->msg.source, cqe->msg.tag,
                                    &got);
    if (ret == 0)
        ret = efarm_tm_arrive(run->rig.tm, cqe->msg.context, cqe->msg.source, cqe->msg.tag,
                              tm_user_of(cqe->msg.id), &got);
    if (i >= 0) {
        EXPECT_RET(ret, EFARM_TM_MATCHED);
        EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(m->posted[i].id));
        tm_model_delete(m->posted, &m->n_posted, (unsigned)i);
        cov->software_matches++;
    } else if (m->n_unexpected == m->max_unexpected) {
        EXPECT_RET(ret, -EAGAIN);
        cov->back_pressure++;
        return; /* The completion stays queued, as the engine retries it. */
    } else {
        EXPECT_RET(ret, EFARM_TM_QUEUED);
        m->unexpected[m->n_unexpected++] = (struct tm_model_entry){
            cqe->msg.context, cqe->msg.source, cqe->msg.tag, cqe->msg.id, 0};
    }
    rig_pop(&run->rig);
}

static void run_probe(struct offload_run *run, uint32_t context, int32_t source, int32_t tag)
{
    struct tm_model *m = &run->m;
    efarm_tm_handle_t handle = 0;
    void *got = NULL;
    int ret = efarm_tm_probe(run->rig.tm, context, source, tag, &handle, &got);
    int i = tm_model_find_unexpected(m, context, source, tag);

    EXPECT_RET(ret, i >= 0 ? 1 : 0);
    if (i >= 0) {
        EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(m->unexpected[i].id));
        tm_ring_add(&run->msgs, handle, m->unexpected[i].id);
    }
}

/*
 * Claim a message or cancel a receive: a quarter of the time one named by a
 * recent handle (live or stale), otherwise a live one (the earliest message,
 * found by probe, or any posted receive), so that phases of
 * claims and cancels can empty the queues; or a receive the device consumed
 * and has not reported yet, whose cancel must fail.
 */
static void run_remove(struct offload_run *run, bool claim)
{
    struct tm_handle_ring *ring = claim ? &run->msgs : &run->recvs;
    struct tm_model_entry *array = claim ? run->m.unexpected : run->m.posted;
    unsigned *n = claim ? &run->m.n_unexpected : &run->m.n_posted;
    efarm_tm_handle_t handle;
    uintptr_t id;
    void *got = NULL;
    int ret, i;

    if (efarm_test_rand() % 4 == 0 && ring->n != 0) {
        unsigned slot = (unsigned)(efarm_test_rand() % ring->n);

        handle = ring->handle[slot];
        id = ring->id[slot];
    } else if (!claim && run->n_consumed != 0 && efarm_test_rand() % 4 == 0) {
        /* Consumed by the device, completion not polled: the cancel must fail. */
        i = (int)(efarm_test_rand() % run->n_consumed);
        handle = run->consumed[i].handle;
        id = run->consumed[i].id;
    } else if (claim) {
        /* The earliest message, found as a matched probe with both wildcards finds it. */
        if (*n == 0)
            return;
        id = array[0].id;
        EXPECT_RET(efarm_tm_probe(run->rig.tm, array[0].context, ANY_SRC, ANY_TAG, &handle, &got),
                   1);
        EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(id));
    } else {
        if (*n == 0)
            return;
        i = (int)(efarm_test_rand() % *n);
        handle = array[i].handle;
        id = array[i].id;
    }
    if (claim)
        ret = efarm_tm_claim(run->rig.tm, handle, &got);
    else
        ret = efarm_tm_cancel(run->rig.tm, handle, &got);
    i = tm_model_find_id(array, *n, id);
    if (i >= 0) {
        EXPECT_RET(ret, 0);
        EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(id));
        tm_model_delete(array, n, (unsigned)i);
    } else {
        EXPECT_RET(ret, -ENOENT);
    }
}

static void run_check(const struct offload_run *run)
{
    const struct tm_mock *mock = &run->rig.mock;

    EXPECT_EQ(efarm_tm_posted_count(run->rig.tm), run->m.n_posted + run->n_consumed);
    EXPECT_EQ(efarm_tm_unexpected_count(run->rig.tm), run->m.n_unexpected);
    EXPECT_EQ(efarm_tm_offload_count(run->rig.tm), mock->n_list + run->n_consumed);
    EXPECT_TRUE(mock->n_list <= mock->capacity);
    for (unsigned i = 0; i < mock->n_list; i++)
        EXPECT_EQ(mock->list[i].recv, run->m.posted[i].handle);
    EXPECT_EQ(mock->stats.violations, 0);
}

/*
 * The workload changes every phase, so that every state is visited: the
 * receiver ahead (receives wait, often in the device), the sender ahead
 * (unexpected messages pile up), software slow to poll (the RFC's race
 * window: completions wait while receives are posted), and catch-up
 * (software drains the completions and empties its queues, so that the
 * device gets receives again). Shares of 100: poll, post, wire (a message
 * reaches the device), probe, claim; the rest cancels. `aimed`% of the
 * messages are for a posted receive's key.
 */
struct offload_phase {
    unsigned poll, post, wire, probe, claim, aimed;
};

static const struct offload_phase offload_phases[] = {
    {.poll = 40, .post = 28, .wire = 28, .probe = 2, .claim = 1, .aimed = 100},
    {.poll = 25, .post = 20, .wire = 40, .probe = 5, .claim = 5, .aimed = 20},
    {.poll = 3, .post = 40, .wire = 40, .probe = 7, .claim = 5, .aimed = 50},
    {.poll = 50, .post = 5, .wire = 0, .probe = 0, .claim = 30, .aimed = 0},
};

/*
 * A message key: random, or aimed at a random posted receive (wildcards
 * filled in). Returns false, for no message, when it should be aimed and no
 * receive is posted.
 */
static bool run_message_key(const struct offload_run *run, unsigned aimed, uint32_t *context,
                            int32_t *source, int32_t *tag)
{
    if (efarm_test_rand() % 100 < aimed) {
        const struct tm_model_entry *recv;

        if (run->m.n_posted == 0)
            return false;
        recv = &run->m.posted[efarm_test_rand() % run->m.n_posted];
        *context = recv->context;
        *source = recv->source;
        *tag = recv->tag;
    }
    if (*source < 0)
        *source = (int32_t)(efarm_test_rand() % run->n_sources);
    if (*tag < 0)
        *tag = (int32_t)(efarm_test_rand() % run->n_tags);
    return true;
}

static void run_step(struct offload_run *run, const struct offload_phase *phase,
                     struct offload_coverage *cov)
{
    uint32_t context = (uint32_t)(efarm_test_rand() % run->n_contexts);
    int32_t source = tm_random_field(run->n_sources, 11);
    int32_t tag = tm_random_field(run->n_tags, 11);
    unsigned op = (unsigned)(efarm_test_rand() % 100);
    uintptr_t id = run->next_id++;

    if (op < phase->poll) {
        run_poll(run, cov);
    } else if ((op -= phase->poll) < phase->post) {
        run_post(run, context, source, tag, id);
    } else if ((op -= phase->post) < phase->wire) {
        if (run_message_key(run, phase->aimed, &context, &source, &tag))
            run_wire(run, context, source, tag, id, cov);
    } else if ((op -= phase->wire) < phase->probe) {
        run_probe(run, context, source, tag);
    } else {
        run_remove(run, op - phase->probe < phase->claim);
    }
}

struct offload_config {
    unsigned max_posted, max_unexpected, capacity, sync_threshold;
    unsigned n_contexts, n_sources, n_tags;
};

static void run_offload_model(const struct offload_config *cfg, unsigned steps,
                              struct offload_coverage *cov)
{
    static struct offload_run run;
    const struct offload_phase *phase = &offload_phases[0];

    memset(&run, 0, sizeof(run));
    rig_open(&run.rig, cfg->max_posted, cfg->max_unexpected, cfg->capacity, cfg->sync_threshold);
    run.m.max_posted = cfg->max_posted;
    run.m.max_unexpected = cfg->max_unexpected;
    run.n_contexts = cfg->n_contexts;
    run.n_sources = cfg->n_sources;
    run.n_tags = cfg->n_tags;
    run.next_id = 1;
    for (unsigned step = 0; step < steps; step++) {
        if (step % 1024 == 0)
            phase = phase == &offload_phases[3] ? &offload_phases[0]
                                                : &offload_phases[efarm_test_rand() % 4];
        efarm_test_context("K %u sync %u pools %u/%u step %u posted %u unexpected %u device %u "
                           "cq %u",
                           cfg->capacity, cfg->sync_threshold, cfg->max_posted, cfg->max_unexpected,
                           step, run.m.n_posted, run.m.n_unexpected, run.rig.mock.n_list,
                           run.rig.mock.cq_n);
        run_step(&run, phase, cov);
        run_check(&run);
    }
    cov->steps += steps;
    cov->adds_refused += run.rig.mock.stats.adds_refused;
    cov->dels_failed += run.rig.mock.stats.dels_failed;
    cov->syncs_failed += run.rig.mock.stats.syncs_failed;
    rig_close(&run.rig);
}

/*
 * Rounds with random device capacities up to max_capacity (the first two
 * rounds take 0 and 1), sync thresholds and pool sizes; then a check that
 * the rounds went through every path, so that a change that makes the device
 * idle cannot pass unnoticed.
 */
static void run_offload_rounds(unsigned rounds, unsigned steps, unsigned max_pool,
                               unsigned max_capacity, unsigned n_sources, unsigned n_tags)
{
    static const unsigned thresholds[] = {0, 1, 2, 8};
    struct offload_coverage cov = {0};

    for (unsigned round = 0; round < rounds; round++) {
        struct offload_config cfg = {
            .max_posted = 1 + (unsigned)(efarm_test_rand() % max_pool),
            .max_unexpected = 1 + (unsigned)(efarm_test_rand() % max_pool),
            .capacity = round < 2 ? round : (unsigned)(efarm_test_rand() % (max_capacity + 1)),
            .sync_threshold = thresholds[efarm_test_rand() % 4],
            .n_contexts = 2,
            .n_sources = n_sources,
            .n_tags = n_tags,
        };

        run_offload_model(&cfg, steps, &cov);
    }
    efarm_test_context("coverage: steps %" PRIu64 " device matches %" PRIu64
                       " software matches %" PRIu64 " adds refused %" PRIu64 " dels failed %" PRIu64
                       " syncs failed %" PRIu64 " back-pressure %" PRIu64,
                       cov.steps, cov.device_matches, cov.software_matches, cov.adds_refused,
                       cov.dels_failed, cov.syncs_failed, cov.back_pressure);
    EXPECT_TRUE(cov.device_matches > cov.steps / 1000);
    EXPECT_TRUE(cov.software_matches > cov.steps / 1000);
    EXPECT_TRUE(cov.adds_refused > 10 && cov.dels_failed > 5 && cov.syncs_failed > 5);
    EXPECT_TRUE(cov.back_pressure != 0);
}

/* 3.2 million steps in all. */
EFARM_TEST_TIMEOUT(tm_offload_model_random_small, 120)
{
    /* Tiny pools and devices: exhaustion everywhere, the device full or out of sync often. */
    run_offload_rounds(24, 50000, 6, 4, 3, 3);
}

EFARM_TEST_TIMEOUT(tm_offload_model_random_deep, 120)
{
    run_offload_rounds(12, 100000, TM_MODEL_MAX, TM_MOCK_MAX_TAGS, 4, 4);
}

EFARM_TEST_TIMEOUT(tm_offload_model_random_sparse, 120)
{
    /* More keys than entries: receives rarely match, the device list stays full. */
    run_offload_rounds(8, 100000, TM_MODEL_MAX, TM_MOCK_MAX_TAGS, 8, 16);
}
