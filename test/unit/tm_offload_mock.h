/*
 * A software model of a tag-matching device (the verbs TM-SRQ of RDMA
 * hardware tag matching) for the offload tests. It
 * implements struct efarm_tm_offload_ops, and lets a test choose the order of
 * everything the real device and software would do concurrently:
 *
 * - tm_mock_arrive(): a message reaches the device. It is matched against the
 *   device's list in list (posting) order; a match removes the entry and
 *   queues a MATCHED completion. Otherwise the device passes the message to
 *   software: its own count goes up and an UNEXPECTED completion is queued.
 * - Completions wait in one FIFO, as in a CQ, until the test polls them
 *   (tm_mock_peek() / tm_mock_pop()), at times of its choosing.
 * - add is refused (-EAGAIN) while the device's count differs from the last
 *   count software reported with any add, del or sync, or while the device
 *   waits for a sync: the RFC's rule. It waits for one once sync_threshold
 *   messages are passed up unreported, and flags every completion it queues
 *   meanwhile (IBV_WC_TM_SYNC_REQ); only a sync with the right count ends it.
 * - del fails with -ENOENT when the entry has been consumed by a match.
 *
 * The device also checks its user: an add beyond capacity, an add after
 * software polled a sync request and before it synced, or a del of a handle
 * never issued counts in stats.violations, which the tests require to stay 0.
 */
#ifndef EFARM_TM_OFFLOAD_MOCK_H
#define EFARM_TM_OFFLOAD_MOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "efarm_tm.h"

#define TM_MOCK_MAX_TAGS 64
#define TM_MOCK_CQ_MAX   64

struct tm_mock_msg {
    uint32_t context;
    int32_t source;
    int32_t tag;
    uintptr_t id;
};

enum tm_mock_cqe_kind {
    TM_MOCK_CQE_MATCHED,    /* The device matched recv with msg. */
    TM_MOCK_CQE_UNEXPECTED, /* msg is for software. */
};

struct tm_mock_cqe {
    enum tm_mock_cqe_kind kind;
    bool sync_req; /* The device waited for a sync when it queued this. */
    efarm_tm_handle_t recv;
    struct tm_mock_msg msg;
};

struct tm_mock_entry {
    uint32_t context;
    int32_t source;
    int32_t tag;
    efarm_tm_handle_t recv;
    uint32_t hw_handle;
};

struct tm_mock_stats {
    unsigned adds, adds_refused, dels, dels_failed, syncs, syncs_failed;
    unsigned matched, passed_up, violations;
};

struct tm_mock {
    unsigned capacity;
    unsigned sync_threshold; /* 0: never ask for a sync. */
    bool enforce_sync;       /* The RFC's rule; false only to show what breaks without it. */
    struct tm_mock_entry list[TM_MOCK_MAX_TAGS]; /* In add order. */
    unsigned n_list;
    struct tm_mock_cqe cq[TM_MOCK_CQ_MAX];
    unsigned cq_head, cq_n;
    uint32_t passed_up; /* Messages passed to software, the device's unexpected count. */
    uint32_t reported;  /* The count software sent last. */
    uint32_t next_hw_handle;
    bool sync_wait;        /* The device waits for a sync... */
    bool sync_wait_polled; /* ...and software has polled a completion saying so. */
    struct tm_mock_stats stats;
};

/* The ops table; ctx is a struct tm_mock *. */
extern const struct efarm_tm_offload_ops tm_mock_ops;

/* An empty device holding at most capacity (<= TM_MOCK_MAX_TAGS) receives, enforcing the rule. */
void tm_mock_init(struct tm_mock *mock, unsigned capacity, unsigned sync_threshold);

/*
 * A message reaches the device. Returns 1 and the matched receive in *recv_p,
 * 0 when it was passed to software, -EAGAIN when the completion queue is full
 * (nothing happened).
 */
int tm_mock_arrive(struct tm_mock *mock, const struct tm_mock_msg *msg, efarm_tm_handle_t *recv_p);

/* The i-th oldest completion not yet popped, or NULL. */
const struct tm_mock_cqe *tm_mock_cqe_at(const struct tm_mock *mock, unsigned i);

/* Remove the oldest completion: software has processed it. Returns its sync_req flag. */
bool tm_mock_pop(struct tm_mock *mock);

#endif /* EFARM_TM_OFFLOAD_MOCK_H */
