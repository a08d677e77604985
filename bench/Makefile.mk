# bench: benchmarks that print figures and ratios (never timed unit tests).
noinst_PROGRAMS += bench/bench-codec
bench_bench_codec_SOURCES = bench/bench_codec.c
bench_bench_codec_LDADD = libefarm.la

# efasim next to raw UDP; links the system rdma-core, runs on efasim via LD_LIBRARY_PATH.
noinst_PROGRAMS += bench/bench-efasim
bench_bench_efasim_SOURCES = bench/bench_efasim.c
bench_bench_efasim_CFLAGS = $(AM_CFLAGS) $(IBVERBS_CFLAGS) $(EFA_CFLAGS)
bench_bench_efasim_LDADD = $(EFA_LIBS) $(IBVERBS_LIBS)

# The device layer's own cost, next to bench-efasim's raw verbs (run-device-bench.sh).
noinst_PROGRAMS += bench/bench-device
bench_bench_device_SOURCES = bench/bench_device.c
bench_bench_device_LDADD = libefarm.la
EXTRA_DIST += bench/run-device-bench.sh

# ns per match of the software tag matcher against posted-queue depth.
noinst_PROGRAMS += bench/bench-tm
bench_bench_tm_SOURCES = bench/bench_tm.c
bench_bench_tm_LDADD = libefarm.la

# The protocol engine's cost, next to bench-device's device layer (run-proto-bench.sh).
noinst_PROGRAMS += bench/bench-proto
bench_bench_proto_SOURCES = bench/bench_proto.c
bench_bench_proto_LDADD = libefarm.la
EXTRA_DIST += bench/run-proto-bench.sh

# Scale without the machines: address-vector memory and insert time per peer (issue 16).
noinst_PROGRAMS += bench/bench-av
bench_bench_av_SOURCES = bench/bench_av.c test/common/resident.h
bench_bench_av_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/proto -I$(top_srcdir)/test/common
bench_bench_av_LDADD = libefarm.la
# Start-up as the job grows (built with MPICH's mpicc by its script).
EXTRA_DIST += bench/init_scale.c bench/run-init-scale.sh

# The floor of a direct data path on EFA, per round trip (run-engine-instr.sh --rdma-core).
noinst_PROGRAMS += bench/bench-direct-path
bench_bench_direct_path_SOURCES = bench/bench_direct_path.c
bench_bench_direct_path_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/efasim/kernel
