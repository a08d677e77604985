/*
 * libFuzzer target for the packet decoder, the trust boundary.
 *
 * Any input: decode must not crash or read out of bounds (ASan), and must not
 * hit undefined behaviour (UBSan). When it decodes, the packet must survive an
 * encode/decode cycle unchanged, and the printers must handle it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "efarm_pkt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_check(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "fuzz_pkt_decode: invariant failed: %s\n", what);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t again[1 << 17];
    struct efarm_pkt pkt, pkt2;
    size_t hdr_length;
    FILE *sink;

    if (efarm_pkt_decode(data, size, &pkt) != 0)
        return 0;
    fuzz_check(pkt.hdr_length + pkt.payload_length == size, "hdr_length + payload == size");

    sink = fopen("/dev/null", "w");
    if (sink) {
        efarm_pkt_print_text(sink, &pkt);
        efarm_pkt_print_json(sink, &pkt);
        fclose(sink);
    }

    if (efarm_pkt_encode(&pkt, again, sizeof(again), &hdr_length) != 0)
        return 0;
    fuzz_check(hdr_length == pkt.hdr_length, "re-encoded header length");
    memcpy(again + hdr_length, pkt.payload, pkt.payload_length);
    fuzz_check(efarm_pkt_decode(again, hdr_length + pkt.payload_length, &pkt2) == 0,
               "re-encoded packet decodes");
    fuzz_check(pkt2.present == pkt.present, "same fields present");
    fuzz_check(!memcmp(pkt2.value, pkt.value, sizeof(pkt.value)), "same field values");
    return 0;
}
