/*
 * golden-export DIR: write every golden vector to DIR/<name>.hex (lowercase
 * hex, one line) and DIR/<name>.bin (raw bytes), for the dissector round-trip
 * test and as the fuzzer's seed corpus.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "golden_vectors.h"

static int write_file(const char *dir, const char *name, const char *ext, const uint8_t *buf,
                      size_t len, int as_hex)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s.%s", dir, name, ext);
    f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "golden-export: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (as_hex) {
        for (size_t i = 0; i < len; i++)
            fprintf(f, "%02x", buf[i]);
        fputc('\n', f);
    } else {
        fwrite(buf, 1, len, f);
    }
    return fclose(f) ? -1 : 0;
}

int main(int argc, char **argv)
{
    uint8_t buf[GOLDEN_MAX_BYTES];

    if (argc != 2) {
        fprintf(stderr, "usage: golden-export DIR\n");
        return 2;
    }
    if (mkdir(argv[1], 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "golden-export: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    for (size_t i = 0; i < g_golden_vector_count; i++) {
        const struct golden_vector *v = &g_golden_vectors[i];
        long n = golden_hex_parse(v->hex, buf, sizeof(buf));

        if (n < 0) {
            fprintf(stderr, "golden-export: %s: bad hex\n", v->name);
            return 1;
        }
        if (write_file(argv[1], v->name, "hex", buf, (size_t)n, 1) ||
            write_file(argv[1], v->name, "bin", buf, (size_t)n, 0))
            return 1;
    }
    return 0;
}
