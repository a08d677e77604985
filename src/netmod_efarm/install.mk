# src/netmod_efarm, efarm's side: what efarm installs for MPICH's ch4:efarm netmod.
#
# The other files of this directory are the netmod itself; scripts/mpich-build.sh
# copies them into an MPICH tree as src/mpid/ch4/netmod/efarm (its Makefile.mk and
# subconfigure.m4 are MPICH's, not ours, which is why this fragment has its own name).
# The netmod links the engine from an installed prefix: libefarm.so, the same objects
# as the in-tree libefarm.la, exporting only efarm_* names, and the public headers the
# netmod includes, in PREFIX/include/efarm. efasim installs beside it (src/efasim).
lib_LTLIBRARIES = src/netmod_efarm/libefarm.la
src_netmod_efarm_libefarm_la_SOURCES =
src_netmod_efarm_libefarm_la_LIBADD = libefarm.la
src_netmod_efarm_libefarm_la_LDFLAGS = -version-info 0:0:0 -export-symbols-regex '^g?_?efarm_' \
	-Wl,-Bsymbolic-functions

pkginclude_HEADERS = \
	src/proto/efarm_proto.h \
	src/proto/efarm_rma.h \
	src/proto/efarm_tm.h \
	src/device/efarm_device.h \
	src/device/efarm_mr_cache.h \
	src/util/efarm_errno.h \
	src/util/efarm_config.h \
	src/util/efarm_proto_names.h \
	src/util/efarm_log.h

EXTRA_DIST += src/netmod_efarm/README.md

# The netmod's sources and scripts/mpich-netmod-prepare.sh, installed so that an
# MPICH build elsewhere (the Spack recipe, packaging/spack) can put the netmod
# into its tree: PREFIX/share/efarm/mpich/mpich-netmod-prepare.sh MPICH_TREE.
# test/unit/test_packaging.sh checks this list against src/netmod_efarm.
mpichdir = $(pkgdatadir)/mpich
dist_mpich_SCRIPTS = scripts/mpich-netmod-prepare.sh
mpichnetmoddir = $(pkgdatadir)/mpich/netmod
dist_mpichnetmod_DATA = \
	src/netmod_efarm/subconfigure.m4 \
	src/netmod_efarm/Makefile.mk \
	src/netmod_efarm/errnames.txt \
	src/netmod_efarm/efarm_pre.h \
	src/netmod_efarm/efarm_impl.h \
	src/netmod_efarm/efarm_compat.h \
	src/netmod_efarm/efarm_cvars.h \
	src/netmod_efarm/netmod_inline.h \
	src/netmod_efarm/efarm_am.h \
	src/netmod_efarm/efarm_proc.h \
	src/netmod_efarm/efarm_progress.h \
	src/netmod_efarm/efarm_send.h \
	src/netmod_efarm/efarm_recv.h \
	src/netmod_efarm/efarm_p2p.h \
	src/netmod_efarm/efarm_probe.h \
	src/netmod_efarm/efarm_rma_nm.h \
	src/netmod_efarm/efarm_win.h \
	src/netmod_efarm/efarm_dynproc.h \
	src/netmod_efarm/efarm_am.c \
	src/netmod_efarm/efarm_init.c \
	src/netmod_efarm/efarm_win.c \
	src/netmod_efarm/efarm_rma.c \
	src/netmod_efarm/efarm_stripe.c \
	src/netmod_efarm/efarm_noinline.c \
	src/netmod_efarm/efarm_dynproc.c \
	src/netmod_efarm/efarm_dynproc_core.c

# `make mpich`: MPICH 4.0.2 with this netmod, installed under build/mpich/install
# (scripts/mpich-build.sh; caches under build/mpich, so a rerun redoes only what changed).
mpich:
	$(top_srcdir)/scripts/mpich-build.sh

.PHONY: mpich

# `make check-mpich`: MPICH's own test suite (pt2pt, basic, comm, coll, datatype, rma), all of
# it, against that MPICH (scripts/mpich-testsuite.sh --subset full; test-all runs the
# "ci" subset). Takes about 75 minutes on 2 cores (rma about 15 of them).
check-mpich:
	$(top_srcdir)/scripts/mpich-testsuite.sh --subset full

.PHONY: check-mpich

# `make check-faults`: the fault matrix, MPICH's pt2pt, rma and coll directories (all of
# them) and test/mpi under each kind of efasim fault alone and all at once
# (scripts/check-faults.sh; test-all runs its CI slice, --slice ci). Hours on 2 cores:
# `scripts/check-faults.sh --subset ci` runs the same matrix on the CI lists.
check-faults:
	$(top_srcdir)/scripts/check-faults.sh

.PHONY: check-faults
