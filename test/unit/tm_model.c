/* The reference MPI matcher for the tag-matcher tests (see tm_model.h). */
#include "tm_model.h"

#include <string.h>

#include "efarm_test.h"

void *tm_user_of(uintptr_t id)
{
    return (void *)(id + 1);
}

bool tm_model_match(const struct tm_model_entry *recv, uint32_t context, int32_t source,
                    int32_t tag)
{
    return recv->context == context &&
           (recv->source == EFARM_TM_ANY_SOURCE || recv->source == source) &&
           (recv->tag == EFARM_TM_ANY_TAG || recv->tag == tag);
}

void tm_model_delete(struct tm_model_entry *array, unsigned *n, unsigned i)
{
    memmove(&array[i], &array[i + 1], (*n - i - 1) * sizeof(array[0]));
    (*n)--;
}

int tm_model_find_unexpected(const struct tm_model *m, uint32_t context, int32_t source,
                             int32_t tag)
{
    struct tm_model_entry key = {.context = context, .source = source, .tag = tag};

    for (unsigned i = 0; i < m->n_unexpected; i++) {
        const struct tm_model_entry *u = &m->unexpected[i];

        if (tm_model_match(&key, u->context, u->source, u->tag))
            return (int)i;
    }
    return -1;
}

int tm_model_find_posted(const struct tm_model *m, uint32_t context, int32_t source, int32_t tag)
{
    for (unsigned i = 0; i < m->n_posted; i++) {
        if (tm_model_match(&m->posted[i], context, source, tag))
            return (int)i;
    }
    return -1;
}

int tm_model_find_id(const struct tm_model_entry *array, unsigned n, uintptr_t id)
{
    for (unsigned i = 0; i < n; i++) {
        if (array[i].id == id)
            return (int)i;
    }
    return -1;
}

void tm_ring_add(struct tm_handle_ring *ring, efarm_tm_handle_t handle, uintptr_t id)
{
    unsigned slot = ring->n < TM_RING ? ring->n++ : (unsigned)(efarm_test_rand() % TM_RING);

    ring->handle[slot] = handle;
    ring->id[slot] = id;
}

int32_t tm_random_field(unsigned range, unsigned wild_percent)
{
    if (wild_percent != 0 && efarm_test_rand() % 100 < wild_percent)
        return -1;
    return (int32_t)(efarm_test_rand() % range);
}
