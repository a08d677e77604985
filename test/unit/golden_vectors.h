/*
 * Golden packets: bytes written by hand from the spec tables and the addenda,
 * each with the decoded values it must produce. test_pkt_golden.c checks both
 * directions (decode the bytes -> these values; encode these values -> the
 * bytes); golden-export writes them out for the dissector round trip and as
 * the fuzzer's seed corpus. They are never produced by efarm's own encoder.
 */
#ifndef GOLDEN_VECTORS_H
#define GOLDEN_VECTORS_H

#include <stddef.h>
#include <stdint.h>

#include "efarm_pkt.h"

#define GOLDEN_MAX_FIELDS 12
#define GOLDEN_MAX_IOV    4
#define GOLDEN_MAX_EXTRA  4
#define GOLDEN_MAX_BYTES  512

struct golden_field {
    enum efarm_pkt_field id;
    uint64_t value;
};

struct golden_vector {
    const char *name; /* unique, [A-Za-z0-9_], e.g. "EAGER_TAGRTM_raw_addr" */
    const char *hex;  /* the whole packet as hex digits; whitespace is ignored */
    uint8_t type;
    uint16_t flags;
    size_t hdr_length; /* bytes before the payload (mandatory + rma_iov + optional headers) */
    unsigned nfields;  /* every scalar field the packet carries, connid/cq_data/... included */
    struct golden_field fields[GOLDEN_MAX_FIELDS];
    unsigned nrma_iov; /* rma_iov[] entries (must equal the rma_iov_count field) */
    struct efarm_rma_iov rma_iov[GOLDEN_MAX_IOV];
    unsigned nextra_info; /* HANDSHAKE extra_info words (nextra_p3 - 3) */
    uint64_t extra_info[GOLDEN_MAX_EXTRA];
    int has_raw_addr;
    struct efarm_raw_addr raw_addr;
    int has_user_recv_qp;
    uint32_t user_recv_qpn;
    uint32_t user_recv_qkey;
};

extern const struct golden_vector g_golden_vectors[];
extern const size_t g_golden_vector_count;

/*
 * Parse hex digits (whitespace ignored) into out[cap]; returns the byte count,
 * or -1 on a bad digit, an odd digit count or overflow of cap.
 */
long golden_hex_parse(const char *hex, uint8_t *out, size_t cap);

#endif /* GOLDEN_VECTORS_H */
