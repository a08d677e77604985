/*
 * A small strict JSON reader for efarm's tools.
 *
 * It reads one JSON value (RFC 8259) into a tree that lives in a single arena
 * sized from the input, so the number of allocations does not depend on what
 * the input contains. It is stricter than the RFC where efarm's formats allow:
 * numbers must be unsigned integers that fit in 64 bits, \u escapes must name
 * an ASCII character other than NUL, object keys must be unique and nesting is
 * limited to EFARM_JSON_MAX_DEPTH levels, so no input can exhaust the stack.
 * Errors carry the byte offset where the reader stopped.
 */
#ifndef EFARM_JSON_H
#define EFARM_JSON_H

#include <stddef.h>
#include <stdint.h>

/* Arrays and objects nested deeper than this are rejected. */
#define EFARM_JSON_MAX_DEPTH 8

enum efarm_json_type {
    EFARM_JSON_NULL,
    EFARM_JSON_FALSE,
    EFARM_JSON_TRUE,
    EFARM_JSON_NUMBER,
    EFARM_JSON_STRING,
    EFARM_JSON_ARRAY,
    EFARM_JSON_OBJECT,
};

/*
 * One value. Members of an array or object are a list through `next`; an
 * object member also has its key. Strings and keys are unescaped and
 * NUL-terminated (they cannot contain NUL).
 */
struct efarm_json_value {
    enum efarm_json_type type;
    size_t count;    /* members of an array or object, bytes of a string */
    size_t offset;   /* byte offset of the value in the input */
    const char *key; /* object members only, else NULL */
    uint64_t number;
    const char *string;
    struct efarm_json_value *first; /* first member of an array or object */
    struct efarm_json_value *next;  /* next member of the enclosing array or object */
};

/* A parsed document: the root value and the arena that holds it. */
struct efarm_json_doc {
    struct efarm_json_value *root;
    void *arena;
};

/* Where and why parsing failed. `what` is a static string. */
struct efarm_json_error {
    size_t offset;
    const char *what;
};

/*
 * Parse the `len` bytes at `text` as exactly one JSON value, optionally
 * surrounded by whitespace. Returns 0 and fills *doc_p, which owns one arena
 * that efarm_json_close() releases; the tree does not point into `text`.
 * Returns -EINVAL with *err_p filled on malformed input, -ENOMEM when the
 * arena cannot be allocated (then err_p->what says so too).
 */
int efarm_json_open(const char *text, size_t len, struct efarm_json_doc *doc_p,
                    struct efarm_json_error *err_p);

/* Release the arena of a document filled by efarm_json_open(). */
void efarm_json_close(struct efarm_json_doc *doc);

/* Member `key` of object `obj`, or NULL when it has none. */
const struct efarm_json_value *efarm_json_get(const struct efarm_json_value *obj, const char *key);

/* "number", "string", ...: for messages. Never NULL. */
const char *efarm_json_type_name(enum efarm_json_type type);

#endif /* EFARM_JSON_H */
