/*
 * A text built piece by piece in a caller's fixed buffer (explanations for
 * people: NIC choice reasons, subprotocol choices). Appends stop at the
 * buffer's end; the text stays terminated. Not for hot paths.
 */
#ifndef EFARM_TEXT_H
#define EFARM_TEXT_H

#include <stddef.h>

struct efarm_text {
    char *buf;
    size_t size; /* of buf, terminator included */
    size_t used; /* characters so far */
};

/* Append printf-style; cut at the buffer's end. A NULL text is ignored. */
void efarm_text_add(struct efarm_text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif /* EFARM_TEXT_H */
