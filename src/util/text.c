/* Texts built piece by piece (efarm_text.h). */
#include "efarm_text.h"

#include <stdarg.h>
#include <stdio.h>

void efarm_text_add(struct efarm_text *t, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (!t || !t->size || t->used + 1 >= t->size)
        return;
    va_start(ap, fmt);
    n = vsnprintf(t->buf + t->used, t->size - t->used, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->used = t->used + (size_t)n < t->size ? t->used + (size_t)n : t->size - 1;
}
