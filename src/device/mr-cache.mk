# The memory registration cache (issue 4, part 3); see the comment at the top of
# src/device/mr_cache.c. mem_hook.c interposes free, munmap and friends, so it is
# compiled only into the programs that cache registrations (listed here), not into
# libefarm; elsewhere the cache passes through. Included after test/unit/Makefile.mk.
libefarm_la_SOURCES += src/device/efarm_mr_cache.h src/device/mr_cache.c
test_unit_efarm_unit_SOURCES += test/unit/test_mr_cache.c src/device/mem_hook.c
EXTRA_DIST += src/device/mem_hook.c

# ns per hit and per miss at 16, 1024 and 65536 entries, with fake registration.
noinst_PROGRAMS += bench/bench-mr-cache
bench_bench_mr_cache_SOURCES = bench/bench_mr_cache.c src/device/mem_hook.c
bench_bench_mr_cache_LDADD = libefarm.la
