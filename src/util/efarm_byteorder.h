/*
 * Explicit little-endian loads and stores.
 *
 * Every integer in protocol v4 is little-endian (doc/PROTOCOL-V4.md,
 * "Encoding"). Received buffers are never cast to structs: they may be
 * unaligned and hostile, so every multi-byte field is assembled byte by byte.
 * The compilers fold these into single moves on little-endian targets.
 */
#ifndef EFARM_BYTEORDER_H
#define EFARM_BYTEORDER_H

#include <stdint.h>

static inline uint16_t efarm_load_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}

static inline uint32_t efarm_load_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t efarm_load_le64(const uint8_t *p)
{
    return (uint64_t)efarm_load_le32(p) | (uint64_t)efarm_load_le32(p + 4) << 32;
}

static inline void efarm_store_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void efarm_store_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static inline void efarm_store_le64(uint8_t *p, uint64_t v)
{
    efarm_store_le32(p, (uint32_t)v);
    efarm_store_le32(p + 4, (uint32_t)(v >> 32));
}

#endif /* EFARM_BYTEORDER_H */
