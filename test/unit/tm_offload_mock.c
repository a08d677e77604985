/* A software model of a tag-matching device (see tm_offload_mock.h). */
#include "tm_offload_mock.h"

#include <errno.h>
#include <string.h>

static bool tm_mock_entry_matches(const struct tm_mock_entry *entry, const struct tm_mock_msg *msg)
{
    return entry->context == msg->context &&
           (entry->source == EFARM_TM_ANY_SOURCE || entry->source == msg->source) &&
           (entry->tag == EFARM_TM_ANY_TAG || entry->tag == msg->tag);
}

static void tm_mock_list_delete(struct tm_mock *mock, unsigned i)
{
    memmove(&mock->list[i], &mock->list[i + 1], (mock->n_list - i - 1) * sizeof(mock->list[0]));
    mock->n_list--;
}

/* Software's count arrives with every operation. */
static void tm_mock_report(struct tm_mock *mock, uint32_t unexpected_count)
{
    mock->reported = unexpected_count;
}

static int tm_mock_add(void *ctx, uint32_t context, int32_t source, int32_t tag,
                       efarm_tm_handle_t recv, uint32_t unexpected_count, uint32_t *hw_handle_p)
{
    struct tm_mock *mock = ctx;

    tm_mock_report(mock, unexpected_count);
    mock->stats.adds++;
    if (mock->sync_wait_polled)
        mock->stats.violations++; /* Software knew a sync was required. */
    if (mock->enforce_sync && (mock->passed_up != mock->reported || mock->sync_wait)) {
        mock->stats.adds_refused++;
        return -EAGAIN;
    }
    if (mock->n_list == mock->capacity) {
        mock->stats.violations++;
        return -ENOSPC;
    }
    mock->list[mock->n_list++] = (struct tm_mock_entry){.context = context,
                                                        .source = source,
                                                        .tag = tag,
                                                        .recv = recv,
                                                        .hw_handle = mock->next_hw_handle};
    *hw_handle_p = mock->next_hw_handle++;
    return 0;
}

static int tm_mock_del(void *ctx, uint32_t hw_handle, uint32_t unexpected_count)
{
    struct tm_mock *mock = ctx;

    tm_mock_report(mock, unexpected_count);
    mock->stats.dels++;
    if (hw_handle >= mock->next_hw_handle)
        mock->stats.violations++;
    for (unsigned i = 0; i < mock->n_list; i++) {
        if (mock->list[i].hw_handle == hw_handle) {
            tm_mock_list_delete(mock, i);
            return 0;
        }
    }
    mock->stats.dels_failed++; /* Consumed by a match: its completion is queued. */
    return -ENOENT;
}

static int tm_mock_sync(void *ctx, uint32_t unexpected_count)
{
    struct tm_mock *mock = ctx;

    tm_mock_report(mock, unexpected_count);
    mock->stats.syncs++;
    if (mock->passed_up != unexpected_count) {
        mock->stats.syncs_failed++;
        return -EAGAIN;
    }
    mock->sync_wait = false;
    mock->sync_wait_polled = false;
    return 0;
}

const struct efarm_tm_offload_ops tm_mock_ops = {
    .add = tm_mock_add,
    .del = tm_mock_del,
    .sync = tm_mock_sync,
};

void tm_mock_init(struct tm_mock *mock, unsigned capacity, unsigned sync_threshold)
{
    memset(mock, 0, sizeof(*mock));
    mock->capacity = capacity < TM_MOCK_MAX_TAGS ? capacity : TM_MOCK_MAX_TAGS;
    mock->sync_threshold = sync_threshold;
    mock->enforce_sync = true;
    mock->next_hw_handle = 1;
}

static void tm_mock_queue(struct tm_mock *mock, const struct tm_mock_cqe *cqe)
{
    struct tm_mock_cqe *slot = &mock->cq[(mock->cq_head + mock->cq_n++) % TM_MOCK_CQ_MAX];

    *slot = *cqe;
    slot->sync_req = mock->sync_wait;
}

int tm_mock_arrive(struct tm_mock *mock, const struct tm_mock_msg *msg, efarm_tm_handle_t *recv_p)
{
    if (mock->cq_n == TM_MOCK_CQ_MAX)
        return -EAGAIN;
    for (unsigned i = 0; i < mock->n_list; i++) {
        if (tm_mock_entry_matches(&mock->list[i], msg)) {
            *recv_p = mock->list[i].recv;
            tm_mock_queue(mock, &(struct tm_mock_cqe){
                                    .kind = TM_MOCK_CQE_MATCHED, .recv = *recv_p, .msg = *msg});
            tm_mock_list_delete(mock, i);
            mock->stats.matched++;
            return 1;
        }
    }
    mock->passed_up++;
    mock->stats.passed_up++;
    if (mock->sync_threshold != 0 && mock->passed_up - mock->reported >= mock->sync_threshold)
        mock->sync_wait = true;
    tm_mock_queue(mock, &(struct tm_mock_cqe){.kind = TM_MOCK_CQE_UNEXPECTED, .msg = *msg});
    return 0;
}

const struct tm_mock_cqe *tm_mock_cqe_at(const struct tm_mock *mock, unsigned i)
{
    if (i >= mock->cq_n)
        return NULL;
    return &mock->cq[(mock->cq_head + i) % TM_MOCK_CQ_MAX];
}

bool tm_mock_pop(struct tm_mock *mock)
{
    bool sync_req = mock->cq[mock->cq_head].sync_req;

    mock->cq_head = (mock->cq_head + 1) % TM_MOCK_CQ_MAX;
    mock->cq_n--;
    if (sync_req && mock->sync_wait)
        mock->sync_wait_polled = true;
    return sync_req;
}
