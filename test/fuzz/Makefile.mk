# test/fuzz: libFuzzer targets, built with ./configure --enable-fuzz CC=clang.
if ENABLE_FUZZ
noinst_PROGRAMS += test/fuzz/fuzz-pkt-decode
test_fuzz_fuzz_pkt_decode_SOURCES = test/fuzz/fuzz_pkt_decode.c
test_fuzz_fuzz_pkt_decode_CFLAGS = $(AM_CFLAGS) -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=all -fno-omit-frame-pointer -g
test_fuzz_fuzz_pkt_decode_LDFLAGS = -fsanitize=fuzzer,address,undefined
# Compile the codec (only) into the target so libFuzzer instruments it.
test_fuzz_fuzz_pkt_decode_SOURCES += src/util/errno.c src/proto/pkt_codec.c src/proto/pkt_print.c
endif
EXTRA_DIST += test/fuzz/run-fuzz.sh
