/*
 * The reference MPI matcher for the tag-matcher tests (test_tm.c,
 * test_tm_offload.c): posted receives and unexpected messages in two plain
 * arrays, in posting and arrival order, searched from the front. Entries are
 * named by a unique id; the matcher under test gets tm_user_of(id) as user
 * pointer.
 */
#ifndef EFARM_TM_MODEL_H
#define EFARM_TM_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "efarm_tm.h"

#define TM_MODEL_MAX 64

struct tm_model_entry {
    uint32_t context;
    int32_t source;
    int32_t tag;
    uintptr_t id;
    efarm_tm_handle_t handle;
};

struct tm_model {
    struct tm_model_entry posted[TM_MODEL_MAX];
    struct tm_model_entry unexpected[TM_MODEL_MAX];
    unsigned n_posted, n_unexpected;
    unsigned max_posted, max_unexpected;
};

/* A distinct user pointer for a small integer (never dereferenced). */
void *tm_user_of(uintptr_t id);

/* Whether a receive (wildcards allowed) matches a message key. */
bool tm_model_match(const struct tm_model_entry *recv, uint32_t context, int32_t source,
                    int32_t tag);

/* Remove array[i], keeping the order of the others. */
void tm_model_delete(struct tm_model_entry *array, unsigned *n, unsigned i);

/* Index of the earliest-arrived unexpected message a receive key matches, or -1. */
int tm_model_find_unexpected(const struct tm_model *m, uint32_t context, int32_t source,
                             int32_t tag);

/* Index of the earliest-posted receive a message matches, or -1. */
int tm_model_find_posted(const struct tm_model *m, uint32_t context, int32_t source, int32_t tag);

/* Index of the entry with this id, or -1. */
int tm_model_find_id(const struct tm_model_entry *array, unsigned n, uintptr_t id);

/* Handles seen recently, live or stale, with the id they named. */
#define TM_RING 16

struct tm_handle_ring {
    efarm_tm_handle_t handle[TM_RING];
    uintptr_t id[TM_RING];
    unsigned n;
};

/* Remember a handle, replacing a random one when the ring is full. */
void tm_ring_add(struct tm_handle_ring *ring, efarm_tm_handle_t handle, uintptr_t id);

/* A random key field in 0 .. range-1, or -1 (a wildcard) wild_percent% of the time. */
int32_t tm_random_field(unsigned range, unsigned wild_percent);

#endif /* EFARM_TM_MODEL_H */
