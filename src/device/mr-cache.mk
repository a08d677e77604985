# The memory registration cache (issue 4, part 3; issue 14) and its memory hook:
# see the comments at the top of src/device/mr_cache.c and mem_hook.c. The hook
# patches GOT entries at run time, when the first caching cache opens, so it lives
# in libefarm and defines no symbol of its own. Included after test/unit/Makefile.mk.
libefarm_la_SOURCES += src/device/efarm_mr_cache.h src/device/mr_cache.c src/device/mem_hook.c
test_unit_efarm_unit_SOURCES += test/unit/test_mr_cache.c

# ns per hit and per miss at 16, 1024 and 65536 entries, with fake registration.
noinst_PROGRAMS += bench/bench-mr-cache
bench_bench_mr_cache_SOURCES = bench/bench_mr_cache.c
bench_bench_mr_cache_LDADD = libefarm.la
