/*
 * Strict JSON reader (see json.h).
 *
 * Parsing is recursive descent; recursion is bounded by EFARM_JSON_MAX_DEPTH.
 * Before parsing, one pass over the input bounds the number of values: every
 * value but the root follows a '[', a ',' or a ':' of its own, so counting
 * those bytes (inside strings too, which only overestimates) sizes the node
 * pool. Each such value also owns at least one more byte (a scalar's first
 * byte or a container's closing bracket), so there are at most about half as
 * many values as bytes, plus the containers still open; the pool takes the
 * smaller bound. Unescaped strings never grow, so the input length bounds
 * their bytes. Node pool and string bytes share one allocation.
 */
#include "json.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "efarm_hex.h"

/* Duplicate keys are found by comparing every pair, so objects stay small. */
#define EFARM_JSON_MAX_MEMBERS 1024

struct json_parser {
    const char *text;
    size_t len;
    size_t pos;
    struct efarm_json_value *nodes;
    size_t nnodes;
    size_t max_nodes;
    char *strings; /* next free byte of the string area */
    char *strings_end;
    struct efarm_json_error *err;
};

static int parse_value(struct json_parser *ps, unsigned depth, struct efarm_json_value **value_p);

static int json_fail(struct json_parser *ps, const char *what)
{
    ps->err->offset = ps->pos;
    ps->err->what = what;
    return -EINVAL;
}

static void skip_space(struct json_parser *ps)
{
    while (ps->pos < ps->len && memchr(" \t\n\r", ps->text[ps->pos], 4))
        ps->pos++;
}

/* The next byte, or NUL at the end of the input (a NUL byte is never valid here). */
static char peek(const struct json_parser *ps)
{
    return ps->pos < ps->len ? ps->text[ps->pos] : '\0';
}

/* A null value at the current offset, or NULL when the pool is used up. */
static struct efarm_json_value *new_node(struct json_parser *ps)
{
    struct efarm_json_value *v;

    if (ps->nnodes == ps->max_nodes)
        return NULL; /* only malformed input gets here: see the bound at the top */
    v = &ps->nodes[ps->nnodes++];
    memset(v, 0, sizeof(*v));
    v->type = EFARM_JSON_NULL;
    v->offset = ps->pos;
    return v;
}

/* Length of the valid UTF-8 sequence at s[0..avail), or 0 if it is not one (RFC 3629). */
static size_t utf8_length(const unsigned char *s, size_t avail)
{
    unsigned char lo = 0x80, hi = 0xbf;
    size_t n;

    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        n = 2;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        n = 3;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        n = 4;
    else
        return 0;
    if (n > avail)
        return 0;
    /* The second byte's range excludes overlong forms, surrogates and values past U+10FFFF. */
    if (s[0] == 0xe0)
        lo = 0xa0;
    else if (s[0] == 0xed)
        hi = 0x9f;
    else if (s[0] == 0xf0)
        lo = 0x90;
    else if (s[0] == 0xf4)
        hi = 0x8f;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return n;
}

/* One escape after the backslash at ps->pos - 1; the character goes to *c_p. */
static int parse_escape(struct json_parser *ps, char *c_p)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *hit;
    char c = peek(ps);
    int v = 0;

    if (c != '\0' && (hit = strchr(from, c)) != NULL) {
        *c_p = to[hit - from];
        ps->pos++;
        return 0;
    }
    if (c != 'u')
        return json_fail(ps, "invalid escape in string");
    ps->pos++;
    for (int i = 0; i < 4; i++) {
        int d = efarm_hex_digit(peek(ps));

        if (d < 0)
            return json_fail(ps, "\\u needs four hex digits");
        v = v * 16 + d;
        ps->pos++;
    }
    if (v == 0 || v > 0x7f) {
        ps->pos -= 6; /* point at the backslash */
        return json_fail(ps, "\\u escape is NUL or not ASCII");
    }
    *c_p = (char)v;
    return 0;
}

/* A string starting at the opening quote; stores it NUL-terminated in the string area. */
static int parse_string(struct json_parser *ps, const char **str_p, size_t *len_p)
{
    char *out = ps->strings;

    ps->pos++; /* opening quote */
    for (;;) {
        unsigned char c;
        size_t n = 1;

        if (ps->pos >= ps->len)
            return json_fail(ps, "unterminated string");
        c = (unsigned char)ps->text[ps->pos];
        if (c == '"')
            break;
        if (c < 0x20)
            return json_fail(ps, "control character in string");
        if (c == '\\') {
            char e;
            int ret;

            ps->pos++;
            ret = parse_escape(ps, &e);
            if (ret)
                return ret;
            *out++ = e;
            continue;
        }
        if (c >= 0x80) {
            n = utf8_length((const unsigned char *)ps->text + ps->pos, ps->len - ps->pos);
            if (n == 0)
                return json_fail(ps, "invalid UTF-8 in string");
        }
        if ((size_t)(ps->strings_end - out) <= n)
            return json_fail(ps, "string area exhausted"); /* cannot happen: strings shrink */
        memcpy(out, ps->text + ps->pos, n);
        out += n;
        ps->pos += n;
    }
    ps->pos++; /* closing quote */
    *out = '\0';
    *str_p = ps->strings;
    *len_p = (size_t)(out - ps->strings);
    ps->strings = out + 1;
    return 0;
}

static int parse_number(struct json_parser *ps, uint64_t *num_p)
{
    uint64_t v = 0;
    size_t start = ps->pos;
    char c;

    if (peek(ps) == '-')
        return json_fail(ps, "negative number (only unsigned integers are accepted)");
    while ((c = peek(ps)) >= '0' && c <= '9') {
        unsigned d = (unsigned)(c - '0');

        if (ps->pos > start && v == 0)
            return json_fail(ps, "leading zero in number");
        if (v > (UINT64_MAX - d) / 10)
            return json_fail(ps, "number does not fit in 64 bits");
        v = v * 10 + d;
        ps->pos++;
    }
    c = peek(ps);
    if (c == '.' || c == 'e' || c == 'E')
        return json_fail(ps, "number with a fraction or exponent (only integers are accepted)");
    *num_p = v;
    return 0;
}

static int parse_literal(struct json_parser *ps, struct efarm_json_value *v)
{
    static const char *const words[] = {"null", "false", "true"};
    static const enum efarm_json_type types[] = {EFARM_JSON_NULL, EFARM_JSON_FALSE,
                                                 EFARM_JSON_TRUE};

    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        size_t n = strlen(words[i]);

        if (ps->len - ps->pos >= n && !memcmp(ps->text + ps->pos, words[i], n)) {
            v->type = types[i];
            ps->pos += n;
            return 0;
        }
    }
    return json_fail(ps, "expected a value");
}

/* An array or object after its opening bracket; `depth` counts the enclosing containers. */
static int parse_members(struct json_parser *ps, unsigned depth, struct efarm_json_value *v)
{
    bool object = v->type == EFARM_JSON_OBJECT;
    char close = object ? '}' : ']';
    struct efarm_json_value **link = &v->first;

    skip_space(ps);
    if (peek(ps) == close) {
        ps->pos++;
        return 0;
    }
    for (;;) {
        const char *key = NULL;
        size_t key_len, key_pos;
        struct efarm_json_value *member;
        int ret;

        skip_space(ps);
        if (object) {
            if (peek(ps) != '"')
                return json_fail(ps, "expected a string key");
            if (v->count == EFARM_JSON_MAX_MEMBERS)
                return json_fail(ps, "object has too many members");
            key_pos = ps->pos;
            ret = parse_string(ps, &key, &key_len);
            if (ret)
                return ret;
            for (const struct efarm_json_value *m = v->first; m; m = m->next) {
                if (!strcmp(m->key, key)) {
                    ps->pos = key_pos;
                    return json_fail(ps, "duplicate key");
                }
            }
            skip_space(ps);
            if (peek(ps) != ':')
                return json_fail(ps, "expected ':'");
            ps->pos++;
        }
        ret = parse_value(ps, depth, &member);
        if (ret)
            return ret;
        member->key = key;
        *link = member;
        link = &member->next;
        v->count++;
        skip_space(ps);
        if (peek(ps) == close) {
            ps->pos++;
            return 0;
        }
        if (peek(ps) != ',')
            return json_fail(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
        ps->pos++;
    }
}

static int parse_value(struct json_parser *ps, unsigned depth, struct efarm_json_value **value_p)
{
    struct efarm_json_value *v;
    char c;
    int ret;

    skip_space(ps);
    c = peek(ps);
    if (ps->pos >= ps->len)
        return json_fail(ps, "unexpected end of input");
    v = new_node(ps);
    if (!v)
        return json_fail(ps, "too many values");
    if (c == '{' || c == '[') {
        if (depth == EFARM_JSON_MAX_DEPTH)
            return json_fail(ps, "arrays and objects nested too deeply");
        v->type = c == '{' ? EFARM_JSON_OBJECT : EFARM_JSON_ARRAY;
        ps->pos++;
        ret = parse_members(ps, depth + 1, v);
    } else if (c == '"') {
        v->type = EFARM_JSON_STRING;
        ret = parse_string(ps, &v->string, &v->count);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        v->type = EFARM_JSON_NUMBER;
        ret = parse_number(ps, &v->number);
    } else {
        ret = parse_literal(ps, v);
    }
    if (ret)
        return ret;
    *value_p = v;
    return 0;
}

int efarm_json_open(const char *text, size_t len, struct efarm_json_doc *doc_p,
                    struct efarm_json_error *err_p)
{
    struct json_parser ps = {.text = text, .len = len, .err = err_p};
    struct efarm_json_value *root;
    size_t max_nodes = 1;
    void *arena;
    int ret;

    for (size_t i = 0; i < len; i++)
        max_nodes += text[i] == '[' || text[i] == ',' || text[i] == ':';
    if (max_nodes > len / 2 + EFARM_JSON_MAX_DEPTH + 1)
        max_nodes = len / 2 + EFARM_JSON_MAX_DEPTH + 1;
    if (max_nodes > (SIZE_MAX - len - 1) / sizeof(struct efarm_json_value)) {
        err_p->offset = 0;
        err_p->what = "input too large";
        return -ENOMEM;
    }
    arena = malloc(max_nodes * sizeof(struct efarm_json_value) + len + 1);
    if (!arena) {
        err_p->offset = 0;
        err_p->what = "out of memory";
        return -ENOMEM;
    }
    ps.nodes = arena;
    ps.max_nodes = max_nodes;
    ps.strings = (char *)(ps.nodes + max_nodes);
    ps.strings_end = ps.strings + len + 1;

    ret = parse_value(&ps, 0, &root);
    if (!ret) {
        skip_space(&ps);
        if (ps.pos != len)
            ret = json_fail(&ps, "unexpected data after the JSON value");
    }
    if (ret) {
        free(arena);
        return ret;
    }
    doc_p->root = root;
    doc_p->arena = arena;
    return 0;
}

void efarm_json_close(struct efarm_json_doc *doc)
{
    free(doc->arena);
    doc->arena = NULL;
    doc->root = NULL;
}

const struct efarm_json_value *efarm_json_get(const struct efarm_json_value *obj, const char *key)
{
    if (obj->type != EFARM_JSON_OBJECT)
        return NULL;
    for (const struct efarm_json_value *m = obj->first; m; m = m->next)
        if (!strcmp(m->key, key))
            return m;
    return NULL;
}

const char *efarm_json_type_name(enum efarm_json_type type)
{
    static const char *const names[] = {
        [EFARM_JSON_NULL] = "null",     [EFARM_JSON_FALSE] = "false",
        [EFARM_JSON_TRUE] = "true",     [EFARM_JSON_NUMBER] = "number",
        [EFARM_JSON_STRING] = "string", [EFARM_JSON_ARRAY] = "array",
        [EFARM_JSON_OBJECT] = "object",
    };

    return (unsigned)type < sizeof(names) / sizeof(names[0]) ? names[type] : "?";
}
