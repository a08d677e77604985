/*
 * Hexadecimal text: one digit parser for every reader of hex (the dissector,
 * its JSON reader, the golden test vectors).
 */
#ifndef EFARM_HEX_H
#define EFARM_HEX_H

#include <stddef.h>
#include <stdint.h>

/* Value of one hex digit (either case), or -1 when c is not one. */
static inline int efarm_hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

#endif /* EFARM_HEX_H */
