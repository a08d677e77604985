/*
 * Atomic operations on memory: which (operation, datatype) pairs protocol v4
 * carries, and applying them element by element.
 *
 * Protocol v4 carries libfabric's datatype and operation numbers. The pairs
 * accepted are those the reference implementation applies with its compiler
 * atomics (every datatype up to 8 bytes): MIN/MAX and the ordered
 * compare-swaps on integers and reals, bitwise operations and MSWAP on
 * integers only, arithmetic, logical, READ, WRITE, CSWAP and CSWAP_NE on all
 * of them, float complex included. The semantics are libfabric's (fi_atomic):
 * CSWAP_LE writes when compare <= the target, MSWAP writes
 * (operand & compare) | (target & ~compare), logical operations yield 0 or 1.
 *
 * Atomicity: the engine runs one thread per endpoint and applies a peer's
 * atomic in one call, so elements are atomic with respect to every other
 * peer's atomics; integer arithmetic wraps (it is done unsigned).
 * Elements are loaded and stored with memcpy: target memory need not be
 * aligned.
 */
#include <complex.h>
#include <string.h>

#include "efarm_rma.h"

enum dt_class { DTC_INT = 1, DTC_REAL = 2, DTC_CPLX = 4 };

#define DTC_ALL (DTC_INT | DTC_REAL | DTC_CPLX)
#define DTC_ORD (DTC_INT | DTC_REAL)

static const struct dt_info {
    uint8_t size;
    uint8_t cls;
} g_dts[EFARM_DT_COUNT] = {
#define DT_ROW_(id, name, ctype)                                                           \
    [EFARM_DT_##id] = {sizeof(ctype), EFARM_DT_##id <= EFARM_DT_UINT64          ? DTC_INT  \
                                      : EFARM_DT_##id == EFARM_DT_FLOAT_COMPLEX ? DTC_CPLX \
                                                                                : DTC_REAL},
    EFARM_ATOMIC_DT_LIST(DT_ROW_)
#undef DT_ROW_
};

/* Per operation: the datatype classes it applies to and the kinds of atomic that carry it. */
#define K_WRITE (1u << EFARM_ATOMIC_WRITE)
#define K_FETCH (1u << EFARM_ATOMIC_FETCH)
#define K_CMP   (1u << EFARM_ATOMIC_COMPARE)

static const struct op_info {
    uint8_t classes;
    uint8_t kinds;
} g_ops[EFARM_AOP_COUNT] = {
    [EFARM_AOP_MIN] = {DTC_ORD, K_WRITE | K_FETCH},
    [EFARM_AOP_MAX] = {DTC_ORD, K_WRITE | K_FETCH},
    [EFARM_AOP_SUM] = {DTC_ALL, K_WRITE | K_FETCH},
    [EFARM_AOP_PROD] = {DTC_ALL, K_WRITE | K_FETCH},
    [EFARM_AOP_LOR] = {DTC_ALL, K_WRITE | K_FETCH},
    [EFARM_AOP_LAND] = {DTC_ALL, K_WRITE | K_FETCH},
    [EFARM_AOP_BOR] = {DTC_INT, K_WRITE | K_FETCH},
    [EFARM_AOP_BAND] = {DTC_INT, K_WRITE | K_FETCH},
    [EFARM_AOP_LXOR] = {DTC_ALL, K_WRITE | K_FETCH},
    [EFARM_AOP_BXOR] = {DTC_INT, K_WRITE | K_FETCH},
    [EFARM_AOP_READ] = {DTC_ALL, K_FETCH},
    [EFARM_AOP_WRITE] = {DTC_ALL, K_WRITE | K_FETCH},
    [EFARM_AOP_CSWAP] = {DTC_ALL, K_CMP},
    [EFARM_AOP_CSWAP_NE] = {DTC_ALL, K_CMP},
    [EFARM_AOP_CSWAP_LE] = {DTC_ORD, K_CMP},
    [EFARM_AOP_CSWAP_LT] = {DTC_ORD, K_CMP},
    [EFARM_AOP_CSWAP_GE] = {DTC_ORD, K_CMP},
    [EFARM_AOP_CSWAP_GT] = {DTC_ORD, K_CMP},
    [EFARM_AOP_MSWAP] = {DTC_INT, K_CMP},
};

uint32_t efarm_atomic_dt_size(uint32_t dt)
{
    return dt < EFARM_DT_COUNT ? g_dts[dt].size : 0;
}

bool efarm_atomic_valid(enum efarm_atomic_kind kind, uint32_t op, uint32_t dt)
{
    if (op >= EFARM_AOP_COUNT || dt >= EFARM_DT_COUNT || (unsigned)kind > EFARM_ATOMIC_COMPARE)
        return false;
    return (g_ops[op].classes & g_dts[dt].cls) && (g_ops[op].kinds & (1u << kind));
}

/*
 * The new value of one element, for operations every class has: d target, s
 * operand, c compare. ORDERED adds the comparisons, BITS the bitwise ones
 * (on U, the unsigned type of the same width).
 */
#define NEW_COMMON(op, d, s, c, T)            \
    case EFARM_AOP_SUM:                       \
        return (d) + (s);                     \
    case EFARM_AOP_PROD:                      \
        return (d) * (s);                     \
    case EFARM_AOP_LOR:                       \
        return (T)((d) != 0 || (s) != 0);     \
    case EFARM_AOP_LAND:                      \
        return (T)((d) != 0 && (s) != 0);     \
    case EFARM_AOP_LXOR:                      \
        return (T)(((d) != 0) != ((s) != 0)); \
    case EFARM_AOP_WRITE:                     \
        return (s);                           \
    case EFARM_AOP_CSWAP:                     \
        return (d) == (c) ? (s) : (d);        \
    case EFARM_AOP_CSWAP_NE:                  \
        return (d) != (c) ? (s) : (d);

#define NEW_ORDERED(op, d, s, c)       \
    case EFARM_AOP_MIN:                \
        return (s) < (d) ? (s) : (d);  \
    case EFARM_AOP_MAX:                \
        return (s) > (d) ? (s) : (d);  \
    case EFARM_AOP_CSWAP_LE:           \
        return (c) <= (d) ? (s) : (d); \
    case EFARM_AOP_CSWAP_LT:           \
        return (c) < (d) ? (s) : (d);  \
    case EFARM_AOP_CSWAP_GE:           \
        return (c) >= (d) ? (s) : (d); \
    case EFARM_AOP_CSWAP_GT:           \
        return (c) > (d) ? (s) : (d);

/* Integers: arithmetic and bits on the unsigned type (wrapping), order on the signed one. */
#define DEF_INT(name, T, U)                                                                    \
    static T new_##name(uint32_t op, T d, T s, T c)                                            \
    {                                                                                          \
        U ud = (U)d, us = (U)s, uc = (U)c;                                                     \
        switch (op) {                                                                          \
        case EFARM_AOP_SUM:                                                                    \
            return (T)(U)(ud + us);                                                            \
        case EFARM_AOP_PROD:                                                                   \
            return (T)(U)(1u * ud * us); /* unsigned int at least: no promoted int overflow */ \
        case EFARM_AOP_BOR:                                                                    \
            return (T)(U)(ud | us);                                                            \
        case EFARM_AOP_BAND:                                                                   \
            return (T)(U)(ud & us);                                                            \
        case EFARM_AOP_BXOR:                                                                   \
            return (T)(U)(ud ^ us);                                                            \
        case EFARM_AOP_MSWAP:                                                                  \
            return (T)(U)((us & uc) | (ud & (U)~uc));                                          \
            NEW_ORDERED(op, d, s, c)                                                           \
        case EFARM_AOP_LOR:                                                                    \
            return (T)(d != 0 || s != 0);                                                      \
        case EFARM_AOP_LAND:                                                                   \
            return (T)(d != 0 && s != 0);                                                      \
        case EFARM_AOP_LXOR:                                                                   \
            return (T)((d != 0) != (s != 0));                                                  \
        case EFARM_AOP_WRITE:                                                                  \
            return s;                                                                          \
        case EFARM_AOP_CSWAP:                                                                  \
            return d == c ? s : d;                                                             \
        case EFARM_AOP_CSWAP_NE:                                                               \
            return d != c ? s : d;                                                             \
        default: /* READ */                                                                    \
            return d;                                                                          \
        }                                                                                      \
    }

#define DEF_REAL(name, T)                           \
    static T new_##name(uint32_t op, T d, T s, T c) \
    {                                               \
        switch (op) {                               \
            NEW_COMMON(op, d, s, c, T)              \
            NEW_ORDERED(op, d, s, c)                \
        default:                                    \
            return d;                               \
        }                                           \
    }

#define DEF_CPLX(name, T)                           \
    static T new_##name(uint32_t op, T d, T s, T c) \
    {                                               \
        switch (op) {                               \
            NEW_COMMON(op, d, s, c, T)              \
        default:                                    \
            return d;                               \
        }                                           \
    }

DEF_INT(int8, int8_t, uint8_t)
DEF_INT(uint8, uint8_t, uint8_t)
DEF_INT(int16, int16_t, uint16_t)
DEF_INT(uint16, uint16_t, uint16_t)
DEF_INT(int32, int32_t, uint32_t)
DEF_INT(uint32, uint32_t, uint32_t)
DEF_INT(int64, int64_t, uint64_t)
DEF_INT(uint64, uint64_t, uint64_t)
DEF_REAL(float, float)
DEF_REAL(double, double)
DEF_CPLX(float_complex, float _Complex)

/* Apply to n elements of one type: old value to res (if any), new value to dst. */
#define DEF_APPLY(id, name, ctype)                                                              \
    static void apply_##name(uint32_t op, uint8_t *dst, const uint8_t *src, const uint8_t *cmp, \
                             uint8_t *res, uint64_t n)                                          \
    {                                                                                           \
        for (uint64_t i = 0; i < n; i++) {                                                      \
            ctype d, s, c, v;                                                                   \
                                                                                                \
            memset(&s, 0, sizeof(s));                                                           \
            memset(&c, 0, sizeof(c));                                                           \
            memcpy(&d, dst + i * sizeof(ctype), sizeof(ctype));                                 \
            if (src != NULL)                                                                    \
                memcpy(&s, src + i * sizeof(ctype), sizeof(ctype));                             \
            if (cmp != NULL)                                                                    \
                memcpy(&c, cmp + i * sizeof(ctype), sizeof(ctype));                             \
            if (res != NULL)                                                                    \
                memcpy(res + i * sizeof(ctype), &d, sizeof(ctype));                             \
            v = new_##name(op, d, s, c);                                                        \
            memcpy(dst + i * sizeof(ctype), &v, sizeof(ctype));                                 \
        }                                                                                       \
    }
EFARM_ATOMIC_DT_LIST(DEF_APPLY)
#undef DEF_APPLY

typedef void (*apply_fn)(uint32_t op, uint8_t *dst, const uint8_t *src, const uint8_t *cmp,
                         uint8_t *res, uint64_t n);

static const apply_fn g_apply[EFARM_DT_COUNT] = {
#define APPLY_ROW_(id, name, ctype) [EFARM_DT_##id] = apply_##name,
    EFARM_ATOMIC_DT_LIST(APPLY_ROW_)
#undef APPLY_ROW_
};

void efarm_atomic_apply(uint32_t op, uint32_t dt, uint8_t *dst, const uint8_t *src,
                        const uint8_t *cmp, uint8_t *res, uint64_t count)
{
    if (dt < EFARM_DT_COUNT && op < EFARM_AOP_COUNT)
        g_apply[dt](op, dst, src, cmp, res, count);
}
