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

# The memory hook as programs meet it: linked against the shared libefarm.so only
# (src/netmod_efarm/libefarm.la) and a shared helper, and dlopening a second helper.
check_PROGRAMS += test/unit/mem-hook-so
check_LTLIBRARIES = test/unit/libmemhook-linked.la test/unit/memhook-module.la
test_unit_libmemhook_linked_la_SOURCES = test/unit/mem_hook_helper.c
test_unit_libmemhook_linked_la_LDFLAGS = -rpath /nowhere -avoid-version
test_unit_memhook_module_la_SOURCES = test/unit/mem_hook_helper.c
test_unit_memhook_module_la_LDFLAGS = -module -rpath /nowhere -avoid-version
test_unit_mem_hook_so_SOURCES = test/unit/efarm_test.h test/unit/runner.c \
	test/unit/test_mem_hook_so.c
test_unit_mem_hook_so_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/test/unit \
	-I$(top_srcdir)/src/device \
	-DEFARM_TEST_HELPER_MODULE=\"$(abs_builddir)/test/unit/.libs/memhook-module.so\"
test_unit_mem_hook_so_LDADD = src/netmod_efarm/libefarm.la test/unit/libmemhook-linked.la -ldl

check-local: check-mem-hook
check-mem-hook: test/unit/mem-hook-so test/unit/memhook-module.la
	./test/unit/mem-hook-so
.PHONY: check-mem-hook

# The cache under MPI (run by test/mpi/run-mpi-tests.sh).
EXTRA_DIST += test/mpi/mr_cache_reuse.c
