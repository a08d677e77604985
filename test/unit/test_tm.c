/*
 * Tests for the software tag matcher (efarm_tm.h): ordering corner cases,
 * handles, pool exhaustion, and a model-based randomized test against the
 * reference matcher of tm_model.h (two plain arrays searched linearly).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "efarm_errno.h"
#include "efarm_test.h"
#include "efarm_tm.h"
#include "tm_model.h"

#define ANY_SRC EFARM_TM_ANY_SOURCE
#define ANY_TAG EFARM_TM_ANY_TAG

static struct efarm_tm *open_tm(unsigned max_posted, unsigned max_unexpected)
{
    struct efarm_tm *tm = NULL;

    EXPECT_RET(efarm_tm_open(max_posted, max_unexpected, &tm), 0);
    EXPECT_TRUE(tm != NULL);
    return tm;
}

EFARM_TEST(tm_open_rejects_bad_sizes)
{
    struct efarm_tm *tm = NULL;

    EXPECT_RET(efarm_tm_open(0, 4, &tm), -EINVAL);
    EXPECT_RET(efarm_tm_open(4, 0, &tm), -EINVAL);
    EXPECT_TRUE(tm == NULL);
}

EFARM_TEST(tm_any_source_posted_first_wins)
{
    struct efarm_tm *tm = open_tm(8, 8);
    efarm_tm_handle_t h1, h2;
    void *got = NULL;

    EXPECT_RET(efarm_tm_post(tm, 0, ANY_SRC, 5, tm_user_of(1), &h1, &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_post(tm, 0, 3, 5, tm_user_of(2), &h2, &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_arrive(tm, 0, 3, 5, tm_user_of(100), &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(1));
    EXPECT_RET(efarm_tm_arrive(tm, 0, 3, 5, tm_user_of(101), &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(2));
    EXPECT_EQ(efarm_tm_posted_count(tm), 0);
    efarm_tm_close(tm);
}

EFARM_TEST(tm_exact_posted_first_wins_over_wildcards)
{
    struct efarm_tm *tm = open_tm(8, 8);
    efarm_tm_handle_t h;
    void *got = NULL;

    EXPECT_RET(efarm_tm_post(tm, 0, 3, 5, tm_user_of(1), &h, &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_post(tm, 0, ANY_SRC, ANY_TAG, tm_user_of(2), &h, &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_post(tm, 0, 3, ANY_TAG, tm_user_of(3), &h, &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_arrive(tm, 0, 3, 5, tm_user_of(100), &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(1));
    EXPECT_RET(efarm_tm_arrive(tm, 0, 3, 5, tm_user_of(101), &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(2));
    /* Another context matches nothing. */
    EXPECT_RET(efarm_tm_arrive(tm, 1, 3, 5, tm_user_of(102), &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_arrive(tm, 0, 3, 9, tm_user_of(103), &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(3));
    efarm_tm_close(tm);
}

EFARM_TEST(tm_receive_takes_earliest_arrived)
{
    struct efarm_tm *tm = open_tm(8, 8);
    efarm_tm_handle_t h;
    void *got = NULL;

    EXPECT_RET(efarm_tm_arrive(tm, 0, 1, 7, tm_user_of(1), &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_arrive(tm, 0, 2, 7, tm_user_of(2), &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_arrive(tm, 0, 2, 8, tm_user_of(3), &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_post(tm, 0, 2, ANY_TAG, tm_user_of(10), &h, &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(2));
    EXPECT_RET(efarm_tm_post(tm, 0, ANY_SRC, ANY_TAG, tm_user_of(11), &h, &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(1));
    EXPECT_RET(efarm_tm_post(tm, 0, ANY_SRC, 8, tm_user_of(12), &h, &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(3));
    EXPECT_EQ(efarm_tm_unexpected_count(tm), 0);
    efarm_tm_close(tm);
}

EFARM_TEST(tm_cancel_after_match_fails)
{
    struct efarm_tm *tm = open_tm(8, 8);
    efarm_tm_handle_t h1, h2;
    void *got = NULL;

    EXPECT_RET(efarm_tm_post(tm, 0, 1, 1, tm_user_of(1), &h1, &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_arrive(tm, 0, 1, 1, tm_user_of(100), &got), EFARM_TM_MATCHED);
    /* The slot is reused by the next receive; the old handle must stay stale. */
    EXPECT_RET(efarm_tm_post(tm, 0, 1, 1, tm_user_of(2), &h2, &got), EFARM_TM_QUEUED);
    EXPECT_TRUE(h1 != h2);
    EXPECT_RET(efarm_tm_cancel(tm, h1, &got), -ENOENT);
    EXPECT_EQ(efarm_tm_posted_count(tm), 1);
    EXPECT_RET(efarm_tm_cancel(tm, h2, &got), 0);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(2));
    EXPECT_RET(efarm_tm_cancel(tm, h2, &got), -ENOENT);
    EXPECT_RET(efarm_tm_cancel(tm, 0, &got), -ENOENT);
    EXPECT_RET(efarm_tm_cancel(tm, UINT64_MAX, &got), -ENOENT);
    EXPECT_RET(efarm_tm_arrive(tm, 0, 1, 1, tm_user_of(101), &got), EFARM_TM_QUEUED);
    efarm_tm_close(tm);
}

EFARM_TEST(tm_probe_does_not_remove_and_claim_removes_that_entry)
{
    struct efarm_tm *tm = open_tm(8, 8);
    efarm_tm_handle_t m1, m2, h;
    void *got = NULL;

    EXPECT_RET(efarm_tm_probe(tm, 0, ANY_SRC, ANY_TAG, &m1, &got), 0);
    EXPECT_RET(efarm_tm_arrive(tm, 0, 1, 4, tm_user_of(1), &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_arrive(tm, 0, 2, 4, tm_user_of(2), &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_arrive(tm, 0, 1, 5, tm_user_of(3), &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_probe(tm, 0, ANY_SRC, 4, &m1, &got), 1);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(1));
    EXPECT_RET(efarm_tm_probe(tm, 0, ANY_SRC, 4, &m2, &got), 1);
    EXPECT_EQ(m1, m2);
    EXPECT_EQ(efarm_tm_unexpected_count(tm), 3);
    EXPECT_RET(efarm_tm_probe(tm, 0, 2, ANY_TAG, &m2, &got), 1);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(2));
    EXPECT_RET(efarm_tm_claim(tm, m2, &got), 0);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(2));
    EXPECT_RET(efarm_tm_claim(tm, m2, &got), -ENOENT);
    EXPECT_EQ(efarm_tm_unexpected_count(tm), 2);
    /* The others are still there, in arrival order, in every list. */
    EXPECT_RET(efarm_tm_probe(tm, 0, 2, ANY_TAG, &m2, &got), 0);
    EXPECT_RET(efarm_tm_post(tm, 0, ANY_SRC, ANY_TAG, tm_user_of(10), &h, &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(1));
    EXPECT_RET(efarm_tm_claim(tm, m1, &got), -ENOENT);
    EXPECT_RET(efarm_tm_post(tm, 0, 1, 5, tm_user_of(11), &h, &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(3));
    efarm_tm_close(tm);
}

EFARM_TEST(tm_pool_exhaustion_changes_nothing)
{
    struct efarm_tm *tm = open_tm(2, 2);
    efarm_tm_handle_t h, m;
    void *got = NULL;

    EXPECT_RET(efarm_tm_post(tm, 0, 1, 1, tm_user_of(1), &h, &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_post(tm, 0, ANY_SRC, 2, tm_user_of(2), &h, &got), EFARM_TM_QUEUED);
    h = 77;
    EXPECT_RET(efarm_tm_post(tm, 0, 1, 3, tm_user_of(3), &h, &got), -ENOMEM);
    EXPECT_EQ(h, 77);
    EXPECT_EQ(efarm_tm_posted_count(tm), 2);

    EXPECT_RET(efarm_tm_arrive(tm, 0, 5, 5, tm_user_of(10), &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_arrive(tm, 0, 5, 6, tm_user_of(11), &got), EFARM_TM_QUEUED);
    got = NULL;
    EXPECT_RET(efarm_tm_arrive(tm, 0, 5, 7, tm_user_of(12), &got), -EAGAIN);
    EXPECT_TRUE(got == NULL);
    EXPECT_EQ(efarm_tm_unexpected_count(tm), 2);
    EXPECT_RET(efarm_tm_probe(tm, 0, 5, 7, &m, &got), 0);

    /* A full matcher still matches: nothing needs to be queued. */
    EXPECT_RET(efarm_tm_arrive(tm, 0, 9, 2, tm_user_of(13), &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(2));
    EXPECT_RET(efarm_tm_post(tm, 0, ANY_SRC, ANY_TAG, tm_user_of(4), &h, &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(10));
    EXPECT_RET(efarm_tm_arrive(tm, 0, 1, 1, tm_user_of(14), &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(1));
    efarm_tm_close(tm);
}

EFARM_TEST(tm_rejects_bad_keys)
{
    struct efarm_tm *tm = open_tm(2, 2);
    efarm_tm_handle_t h;
    void *got = NULL;

    EXPECT_RET(efarm_tm_arrive(tm, 0, ANY_SRC, 1, tm_user_of(1), &got), -EINVAL);
    EXPECT_RET(efarm_tm_arrive(tm, 0, 1, ANY_TAG, tm_user_of(1), &got), -EINVAL);
    EXPECT_RET(efarm_tm_post(tm, 0, -2, 1, tm_user_of(1), &h, &got), -EINVAL);
    EXPECT_RET(efarm_tm_probe(tm, 0, 1, -5, &h, &got), -EINVAL);
    EXPECT_EQ(efarm_tm_posted_count(tm) + efarm_tm_unexpected_count(tm), 0);
    efarm_tm_close(tm);
}

EFARM_TEST(tm_emptied_queue_is_no_queue)
{
    struct efarm_tm *tm = open_tm(4, 4);
    efarm_tm_handle_t h, m;
    void *got = NULL;

    /* The receive's queue empties and keeps its key: the next message must not see it. */
    EXPECT_RET(efarm_tm_post(tm, 0, 7, 7, tm_user_of(9), &h, &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_post(tm, 0, 1, 1, tm_user_of(1), &h, &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_match_posted(tm, 0, 1, 1, &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(1));
    EXPECT_RET(efarm_tm_would_match(tm, 0, 1, 1), 0);
    EXPECT_RET(efarm_tm_match_posted(tm, 0, 1, 1, &got), 0);
    EXPECT_RET(efarm_tm_arrive(tm, 0, 1, 1, tm_user_of(100), &got), EFARM_TM_QUEUED);
    /* The same with a wildcard receive posted (the general path). */
    EXPECT_RET(efarm_tm_post(tm, 0, ANY_SRC, 2, tm_user_of(2), &h, &got), EFARM_TM_QUEUED);
    EXPECT_RET(efarm_tm_arrive(tm, 0, 5, 2, tm_user_of(101), &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(2));
    EXPECT_RET(efarm_tm_arrive(tm, 0, 5, 2, tm_user_of(102), &got), EFARM_TM_QUEUED);
    /* The message lists empty too and keep their keys: probes must not see them. */
    EXPECT_RET(efarm_tm_post(tm, 0, 1, 1, tm_user_of(3), &h, &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(100));
    EXPECT_RET(efarm_tm_probe(tm, 0, 1, 1, &m, &got), 0);
    EXPECT_RET(efarm_tm_probe(tm, 0, 1, ANY_TAG, &m, &got), 0);
    EXPECT_RET(efarm_tm_post(tm, 0, ANY_SRC, ANY_TAG, tm_user_of(4), &h, &got), EFARM_TM_MATCHED);
    EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(102));
    EXPECT_RET(efarm_tm_probe(tm, 0, ANY_SRC, ANY_TAG, &m, &got), 0);
    EXPECT_RET(efarm_tm_post(tm, 0, 5, 2, tm_user_of(5), &h, &got), EFARM_TM_QUEUED);
    EXPECT_EQ(efarm_tm_posted_count(tm), 2);
    EXPECT_EQ(efarm_tm_unexpected_count(tm), 0);
    efarm_tm_close(tm);
}

/*
 * Every ordered pair of 64 keys in a matcher of 16 buckets, so that many
 * pairs share a bucket: a is posted first (its queue inline in the bucket),
 * then b (chained when it collides), a is matched (its queue empties and
 * lingers), b is posted again. b's two receives must stay in one queue, in
 * posting order, whatever the bucket holds.
 */
EFARM_TEST(tm_colliding_keys_keep_posting_order)
{
    struct efarm_tm *tm = open_tm(4, 1);
    efarm_tm_handle_t h;
    void *got = NULL;

    for (int32_t a = 0; a < 64; a++) {
        for (int32_t b = 0; b < 64; b++) {
            if (a == b)
                continue;
            efarm_test_context("tags a %d b %d", a, b);
            EXPECT_RET(efarm_tm_post(tm, 0, 0, a, tm_user_of(1), &h, &got), EFARM_TM_QUEUED);
            EXPECT_RET(efarm_tm_post(tm, 0, 0, b, tm_user_of(2), &h, &got), EFARM_TM_QUEUED);
            EXPECT_RET(efarm_tm_match_posted(tm, 0, 0, a, &got), EFARM_TM_MATCHED);
            EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(1));
            EXPECT_RET(efarm_tm_post(tm, 0, 0, b, tm_user_of(3), &h, &got), EFARM_TM_QUEUED);
            EXPECT_RET(efarm_tm_match_posted(tm, 0, 0, b, &got), EFARM_TM_MATCHED);
            EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(2));
            EXPECT_RET(efarm_tm_match_posted(tm, 0, 0, b, &got), EFARM_TM_MATCHED);
            EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(3));
            EXPECT_RET(efarm_tm_match_posted(tm, 0, 0, a, &got), 0);
            EXPECT_EQ(efarm_tm_posted_count(tm), 0);
        }
    }
    efarm_tm_close(tm);
}

/*
 * Emptied queues linger in their buckets until another key takes them over.
 * A matcher with 4 receives and 4 messages has 32 buckets and 20 pooled
 * queues; round after round, new keys fill every receive and message slot
 * while the last round's emptied queues linger. Every post must succeed up to
 * the limit, exactly, and the bucket chains many rounds build must give every
 * chained queue back (a queue kept would run the pool dry within a few rounds).
 */
EFARM_TEST(tm_lingering_queues_never_fail_a_post)
{
    struct efarm_tm *tm = open_tm(4, 4);
    efarm_tm_handle_t h, m;
    void *got = NULL;

    for (uint32_t round = 0; round < 20000; round++) {
        int32_t tags[4];

        efarm_test_context("round %u", round);
        for (int32_t k = 0; k < 4; k++) {
            /* Every fifth round the last receive is ANY_SOURCE (from 9 below). */
            int32_t source = round % 5 == 0 && k == 3 ? ANY_SRC : k;

            tags[k] = (int32_t)((round * 7 + (uint32_t)k) % 13);
            EXPECT_RET(
                efarm_tm_post(tm, round, source, tags[k], tm_user_of(round * 8 + k + 1), &h, &got),
                EFARM_TM_QUEUED);
        }
        h = 77;
        EXPECT_RET(efarm_tm_post(tm, round, 0, 99, tm_user_of(1), &h, &got), -ENOMEM);
        EXPECT_EQ(h, 77);
        for (int32_t k = 3; k >= 0; k--) {
            int32_t source = round % 5 == 0 && k == 3 ? 9 : k;

            EXPECT_RET(efarm_tm_arrive(tm, round, source, tags[k], tm_user_of(2), &got),
                       EFARM_TM_MATCHED);
            EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(round * 8 + k + 1));
        }
        EXPECT_EQ(efarm_tm_posted_count(tm), 0);
        /* Four messages for four keys fill the unexpected side (16 queues). */
        for (int32_t k = 0; k < 4; k++)
            EXPECT_RET(efarm_tm_arrive(tm, round, k, tags[k], tm_user_of(round * 8 + k + 5), &got),
                       EFARM_TM_QUEUED);
        EXPECT_RET(efarm_tm_arrive(tm, round, 5, 5, tm_user_of(3), &got), -EAGAIN);
        EXPECT_RET(efarm_tm_probe(tm, round, ANY_SRC, ANY_TAG, &m, &got), 1);
        EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(round * 8 + 5));
        EXPECT_RET(efarm_tm_claim(tm, m, &got), 0);
        /* The round's tags are distinct: an ANY_SOURCE receive takes the message for key 2. */
        EXPECT_RET(efarm_tm_post(tm, round, ANY_SRC, tags[2], tm_user_of(4), &h, &got),
                   EFARM_TM_MATCHED);
        EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(round * 8 + 2 + 5));
        for (int32_t k = 1; k < 4; k += 2) {
            EXPECT_RET(efarm_tm_post(tm, round, k, tags[k], tm_user_of(4), &h, &got),
                       EFARM_TM_MATCHED);
            EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(round * 8 + k + 5));
        }
        EXPECT_EQ(efarm_tm_unexpected_count(tm), 0);
        EXPECT_EQ(efarm_tm_posted_count(tm), 0);
        EXPECT_RET(efarm_tm_probe(tm, round, ANY_SRC, ANY_TAG, &m, &got), 0);
    }
    efarm_tm_close(tm);
}

static void run_model(unsigned max_posted, unsigned max_unexpected, unsigned steps,
                      unsigned n_contexts, unsigned n_sources, unsigned n_tags)
{
    static struct tm_model m;
    struct tm_handle_ring recvs = {.n = 0}, msgs = {.n = 0};
    struct efarm_tm *tm = open_tm(max_posted, max_unexpected);
    uintptr_t next_id = 1;

    memset(&m, 0, sizeof(m));
    m.max_posted = max_posted;
    m.max_unexpected = max_unexpected;
    for (unsigned step = 0; step < steps; step++) {
        uint32_t context = (uint32_t)(efarm_test_rand() % n_contexts);
        /* About 20% of receives and probes carry at least one wildcard. */
        int32_t source = tm_random_field(n_sources, 11);
        int32_t tag = tm_random_field(n_tags, 11);
        unsigned op = (unsigned)(efarm_test_rand() % 100);
        efarm_tm_handle_t handle = 0;
        void *got = NULL;
        uintptr_t id = next_id++;
        int ret, i;

        efarm_test_context("step %u op %u key (%u,%d,%d) posted %u unexpected %u", step, op,
                           context, source, tag, m.n_posted, m.n_unexpected);
        if (op < 35) {
            ret = efarm_tm_post(tm, context, source, tag, tm_user_of(id), &handle, &got);
            i = tm_model_find_unexpected(&m, context, source, tag);
            if (i >= 0) {
                EXPECT_RET(ret, EFARM_TM_MATCHED);
                EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(m.unexpected[i].id));
                tm_model_delete(m.unexpected, &m.n_unexpected, (unsigned)i);
            } else if (m.n_posted == m.max_posted) {
                EXPECT_RET(ret, -ENOMEM);
            } else {
                EXPECT_RET(ret, EFARM_TM_QUEUED);
                m.posted[m.n_posted++] = (struct tm_model_entry){context, source, tag, id, handle};
                tm_ring_add(&recvs, handle, id);
            }
        } else if (op < 75) {
            if (source < 0)
                source = (int32_t)(efarm_test_rand() % n_sources);
            if (tag < 0)
                tag = (int32_t)(efarm_test_rand() % n_tags);
            ret = efarm_tm_arrive(tm, context, source, tag, tm_user_of(id), &got);
            i = tm_model_find_posted(&m, context, source, tag);
            if (i >= 0) {
                EXPECT_RET(ret, EFARM_TM_MATCHED);
                EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(m.posted[i].id));
                tm_model_delete(m.posted, &m.n_posted, (unsigned)i);
            } else if (m.n_unexpected == m.max_unexpected) {
                EXPECT_RET(ret, -EAGAIN);
            } else {
                EXPECT_RET(ret, EFARM_TM_QUEUED);
                m.unexpected[m.n_unexpected++] =
                    (struct tm_model_entry){context, source, tag, id, 0};
            }
        } else if (op < 85) {
            ret = efarm_tm_probe(tm, context, source, tag, &handle, &got);
            i = tm_model_find_unexpected(&m, context, source, tag);
            EXPECT_RET(ret, i >= 0 ? 1 : 0);
            if (i >= 0) {
                EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(m.unexpected[i].id));
                tm_ring_add(&msgs, handle, m.unexpected[i].id);
            }
        } else if (op < 93) {
            unsigned slot;

            if (msgs.n == 0)
                continue;
            slot = (unsigned)(efarm_test_rand() % msgs.n);
            ret = efarm_tm_claim(tm, msgs.handle[slot], &got);
            i = tm_model_find_id(m.unexpected, m.n_unexpected, msgs.id[slot]);
            if (i >= 0) {
                EXPECT_RET(ret, 0);
                EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(msgs.id[slot]));
                tm_model_delete(m.unexpected, &m.n_unexpected, (unsigned)i);
            } else {
                EXPECT_RET(ret, -ENOENT);
            }
        } else {
            unsigned slot;

            if (recvs.n == 0)
                continue;
            slot = (unsigned)(efarm_test_rand() % recvs.n);
            ret = efarm_tm_cancel(tm, recvs.handle[slot], &got);
            i = tm_model_find_id(m.posted, m.n_posted, recvs.id[slot]);
            if (i >= 0) {
                EXPECT_RET(ret, 0);
                EXPECT_EQ((uintptr_t)got, (uintptr_t)tm_user_of(recvs.id[slot]));
                tm_model_delete(m.posted, &m.n_posted, (unsigned)i);
            } else {
                EXPECT_RET(ret, -ENOENT);
            }
        }
        EXPECT_EQ(efarm_tm_posted_count(tm), m.n_posted);
        EXPECT_EQ(efarm_tm_unexpected_count(tm), m.n_unexpected);
    }
    efarm_tm_close(tm);
}

EFARM_TEST_TIMEOUT(tm_model_random_small_pools, 120)
{
    /* Tiny pools: exhaustion on both sides is frequent. */
    run_model(4, 4, 300000, 2, 3, 3);
}

EFARM_TEST_TIMEOUT(tm_model_random_deep_queues, 120)
{
    run_model(TM_MODEL_MAX, TM_MODEL_MAX, 1000000, 2, 4, 4);
}

EFARM_TEST_TIMEOUT(tm_model_random_sparse_keys, 120)
{
    /* More keys than entries: queues appear and vanish, hash chains get used. */
    run_model(TM_MODEL_MAX, 32, 300000, 3, 8, 16);
}
