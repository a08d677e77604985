# test/unit: C unit tests; `make check` runs them all, each in its own process.
check_PROGRAMS += test/unit/efarm-unit
test_unit_efarm_unit_SOURCES = \
	test/unit/efarm_test.h \
	test/unit/runner.c \
	test/unit/golden_vectors.h \
	test/unit/golden_vectors.c \
	test/unit/test_pkt_golden.c \
	test/unit/test_pkt_malformed.c \
	test/unit/test_pkt_roundtrip.c
test_unit_efarm_unit_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/test/unit
test_unit_efarm_unit_LDADD = libefarm.la

# Writes every golden vector as <name>.hex (dissector round trip, fuzz corpus seeds).
check_PROGRAMS += test/unit/golden-export
test_unit_golden_export_SOURCES = test/unit/golden_export.c test/unit/golden_vectors.c \
	test/unit/golden_vectors.h
test_unit_golden_export_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/test/unit
test_unit_golden_export_LDADD = libefarm.la

EXTRA_DIST += test/unit/test_pktdump.sh

check-local: $(check_PROGRAMS) $(bin_PROGRAMS)
	./test/unit/efarm-unit
	$(SHELL) $(top_srcdir)/test/unit/test_pktdump.sh ./tools/efarm-pktdump ./test/unit/golden-export
