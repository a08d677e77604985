# test/interop: efarm's engine against libfabric's EFA provider, both on efasim
# (or both on EFA). interop-fi needs libfabric-dev; run-interop.sh runs the matrix.
check_PROGRAMS += test/interop/interop-efarm
test_interop_interop_efarm_SOURCES = test/interop/interop.h test/interop/interop_driver.h \
	test/interop/interop_driver.c test/interop/interop_efarm.h test/interop/interop_efarm.c \
	test/interop/interop_efarm_rma.c
test_interop_interop_efarm_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/test/interop
test_interop_interop_efarm_LDADD = libefarm.la

if HAVE_LIBFABRIC
check_PROGRAMS += test/interop/interop-fi
test_interop_interop_fi_SOURCES = test/interop/interop.h test/interop/interop_driver.h \
	test/interop/interop_driver.c test/interop/interop_fi.c
test_interop_interop_fi_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/test/interop $(FABRIC_CFLAGS)
test_interop_interop_fi_LDADD = $(FABRIC_LIBS)

# fi-pair: libfabric's EFA provider against itself (no efarm), for the defects the
# interop suite found; run-fi-pair.sh runs its cases against each libfabric given.
check_PROGRAMS += test/interop/fi-pair
test_interop_fi_pair_SOURCES = test/interop/fi_pair.c
test_interop_fi_pair_CPPFLAGS = $(AM_CPPFLAGS) $(FABRIC_CFLAGS)
test_interop_fi_pair_LDADD = $(FABRIC_LIBS)
endif

EXTRA_DIST += test/interop/run-interop.sh test/interop/run-fi-pair.sh test/interop/README.md
