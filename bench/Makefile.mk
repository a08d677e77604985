# bench: benchmarks that print figures and ratios (never timed unit tests).
noinst_PROGRAMS += bench/bench-codec
bench_bench_codec_SOURCES = bench/bench_codec.c
bench_bench_codec_LDADD = libefarm.la
