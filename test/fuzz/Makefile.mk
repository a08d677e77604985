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
EXTRA_DIST += test/fuzz/run-fuzz.sh test/fuzz/run-fuzz-rx.sh

# The receive-path fuzzer: the whole engine (libefarm's sources, instrumented)
# with wire peers on efasim, and its seed writer (see fuzz_rx.c, fuzz_rx.h).
if ENABLE_FUZZ
noinst_PROGRAMS += test/fuzz/fuzz-rx test/fuzz/fuzz-rx-seeds
test_fuzz_fuzz_rx_SOURCES = test/fuzz/fuzz_rx.c test/fuzz/fuzz_rx.h test/unit/wire_peer.c \
	test/unit/wire_peer.h test/unit/proto_common.c test/unit/proto_common.h \
	$(libefarm_la_SOURCES)
test_fuzz_fuzz_rx_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/test/unit -I$(top_srcdir)/test/fuzz \
	$(IBVERBS_CFLAGS) $(HWLOC_CFLAGS) \
	-DEFARM_TEST_EFASIM_PATH=\"$(abs_builddir)/src/efasim/.libs\" \
	-DEFARM_EFASIM_DIR=\"$(pkglibdir)/efasim\"
test_fuzz_fuzz_rx_CFLAGS = $(AM_CFLAGS) $(ENGINE_CFLAGS) -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=all -fno-omit-frame-pointer -g
test_fuzz_fuzz_rx_LDFLAGS = -fsanitize=fuzzer,address,undefined
test_fuzz_fuzz_rx_LDADD = $(HWLOC_LIBS) -ldl -lpthread
test_fuzz_fuzz_rx_seeds_SOURCES = test/fuzz/fuzz_rx_seeds.c test/fuzz/fuzz_rx.h \
	test/unit/golden_vectors.c test/unit/golden_vectors.h
test_fuzz_fuzz_rx_seeds_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/test/unit
test_fuzz_fuzz_rx_seeds_LDADD = libefarm.la
endif
