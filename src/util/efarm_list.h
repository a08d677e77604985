/*
 * Intrusive circular doubly-linked lists: a list head is a struct efarm_link
 * whose next/prev point at itself when the list is empty. Entries embed a
 * struct efarm_link and are recovered with efarm_container_of. Nothing here
 * allocates.
 */
#ifndef EFARM_LIST_H
#define EFARM_LIST_H

#include <stdbool.h>
#include <stddef.h>

#define efarm_container_of(ptr, type, member) \
    ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

struct efarm_link {
    struct efarm_link *next;
    struct efarm_link *prev;
};

static inline void efarm_list_init(struct efarm_link *head)
{
    head->next = head->prev = head;
}

static inline bool efarm_list_empty(const struct efarm_link *head)
{
    return head->next == head;
}

/* An unlinked entry points at itself (efarm_list_init or efarm_list_remove). */
static inline bool efarm_link_linked(const struct efarm_link *link)
{
    return link->next != link;
}

static inline void efarm_list_append(struct efarm_link *head, struct efarm_link *link)
{
    link->prev = head->prev;
    link->next = head;
    head->prev->next = link;
    head->prev = link;
}

static inline void efarm_list_prepend(struct efarm_link *head, struct efarm_link *link)
{
    link->next = head->next;
    link->prev = head;
    head->next->prev = link;
    head->next = link;
}

/* Unlink and leave the entry pointing at itself, so removing twice is harmless. */
static inline void efarm_list_remove(struct efarm_link *link)
{
    link->prev->next = link->next;
    link->next->prev = link->prev;
    link->next = link->prev = link;
}

/* Move every entry of `from` to the end of `to`; `from` ends empty. */
static inline void efarm_list_splice_tail(struct efarm_link *to, struct efarm_link *from)
{
    if (from->next == from)
        return;
    from->next->prev = to->prev;
    to->prev->next = from->next;
    from->prev->next = to;
    to->prev = from->prev;
    from->next = from->prev = from;
}

/* First entry or NULL. */
static inline struct efarm_link *efarm_list_first(const struct efarm_link *head)
{
    return head->next == head ? NULL : head->next;
}

#define efarm_list_foreach_safe(pos, tmp, head)                      \
    for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); \
         (pos) = (tmp), (tmp) = (pos)->next)

#endif /* EFARM_LIST_H */
