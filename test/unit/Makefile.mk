# test/unit: C unit tests; `make check` runs them all, each in its own process.
check_PROGRAMS += test/unit/efarm-unit
test_unit_efarm_unit_SOURCES = \
	test/unit/efarm_test.h \
	test/unit/runner.c \
	test/unit/test_procs.h \
	test/unit/test_procs.c \
	test/unit/golden_vectors.h \
	test/unit/golden_vectors.c \
	test/unit/test_pkt_golden.c \
	test/unit/test_pkt_malformed.c \
	test/unit/test_pkt_roundtrip.c \
	test/unit/test_pkt_rows.c \
	test/unit/test_device.c \
	test/unit/test_config.c \
	test/unit/test_tm.c \
	test/unit/tm_model.h \
	test/unit/tm_model.c \
	test/unit/tm_offload_mock.h \
	test/unit/tm_offload_mock.c \
	test/unit/test_tm_offload.c \
	test/unit/proto_common.h \
	test/unit/proto_common.c \
	test/unit/test_proto_smoke.c \
	test/unit/test_proto_restart.c \
	test/unit/proto_rig.h \
	test/unit/proto_rig.c \
	test/unit/test_proto_matrix.c \
	test/unit/test_proto_threads.c \
	test/unit/test_proto_match.c \
	test/unit/test_proto_match_model.c \
	test/unit/test_proto_order.c \
	test/unit/test_proto_resources.c \
	test/unit/test_proto_memory.c \
	test/unit/test_proto_limits.c \
	test/unit/test_proto_unexpected.c \
	test/unit/test_proto_datalog.c \
	test/unit/test_proto_failures.c \
	test/unit/test_proto_vanish.c \
	test/unit/test_proto_expose.c \
	test/unit/test_proto_rma.c \
	test/unit/test_proto_write_data.c \
	test/unit/test_proto_force.c \
	test/unit/test_proto_policy.c \
	test/unit/wire_peer.h \
	test/unit/wire_peer.c \
	test/unit/test_wire_handshake.c \
	test/unit/test_wire_peers.c \
	test/unit/test_wire_baseline.c \
	test/unit/test_wire_flows.c \
	test/unit/test_wire_negotiation.c \
	test/unit/test_wire_order.c \
	test/unit/test_wire_malformed.c \
	test/unit/test_wire_rma.c \
	test/unit/test_wire_runt_rtw.c \
	test/unit/test_dynproc.c \
	src/netmod_efarm/efarm_dynproc.h \
	src/netmod_efarm/efarm_dynproc_core.c
# The netmod's dynamic-process core includes no MPICH header (test_dynproc.c).
test_unit_efarm_unit_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/test/unit $(IBVERBS_CFLAGS) \
	-I$(top_srcdir)/src/netmod_efarm \
	$(HWLOC_CFLAGS) -DEFARM_TEST_EFASIM_PATH=\"$(abs_builddir)/src/efasim/.libs\"
test_unit_efarm_unit_LDADD = libefarm.la

# Writes every golden vector as <name>.hex (dissector round trip, fuzz corpus seeds).
check_PROGRAMS += test/unit/golden-export
test_unit_golden_export_SOURCES = test/unit/golden_export.c test/unit/golden_vectors.c \
	test/unit/golden_vectors.h
test_unit_golden_export_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/test/unit
test_unit_golden_export_LDADD = libefarm.la

EXTRA_DIST += test/unit/test_pktdump.sh

check-local: $(check_PROGRAMS) $(bin_PROGRAMS) $(efasim_LTLIBRARIES) check-efasim
	./test/unit/efarm-unit
	$(SHELL) $(top_srcdir)/test/unit/test_pktdump.sh ./tools/efarm-pktdump ./test/unit/golden-export
	$(SHELL) $(top_srcdir)/test/unit/test_proto_procs.sh ./tools/efarm-pingpong \
		$(abs_builddir)/src/efasim/.libs

# efasim, through the verbs API only: built against the system's rdma-core and
# run with efasim's libraries first on the loader path.
check_PROGRAMS += test/unit/efasim-unit test/unit/efasim-pingpong
test_unit_efasim_unit_SOURCES = \
	test/unit/efarm_test.h \
	test/unit/runner.c \
	test/unit/efasim_common.h \
	test/unit/efasim_common.c \
	test/unit/efasim_alloc_watch.c \
	test/unit/test_procs.h \
	test/unit/test_procs.c \
	test/unit/test_efasim_device.c \
	test/unit/test_efasim_send.c \
	test/unit/test_efasim_srd.c \
	test/unit/test_efasim_rnr.c \
	test/unit/test_efasim_rdma.c \
	test/unit/test_efasim_unsolicited.c \
	test/unit/test_efasim_reuse.c \
	test/unit/test_efasim_procs.c \
	test/unit/test_efasim_abi.c \
	test/unit/test_efasim_sysfs.c \
	test/unit/test_efasim_cq.c \
	test/unit/test_efasim_qp.c \
	test/unit/test_efasim_ah.c \
	test/unit/test_efasim_limits.c \
	test/unit/test_efasim_faults.c \
	test/unit/test_efasim_fastpath.c \
	test/unit/test_efasim_threads.c \
	test/unit/test_efasim_ud.c \
	test/unit/test_efasim_events.c \
	test/unit/test_efasim_patched.c \
	test/unit/test_efasim_netlink.c \
	test/unit/test_efasim_efadv_new.c
test_unit_efasim_unit_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/test/unit $(IBVERBS_CFLAGS)
test_unit_efasim_unit_LDADD = libefarm.la $(EFA_LIBS) $(IBVERBS_LIBS) -ldl
test_unit_efasim_pingpong_SOURCES = test/unit/efasim_pingpong.c
test_unit_efasim_pingpong_CPPFLAGS = $(AM_CPPFLAGS) $(IBVERBS_CFLAGS)
test_unit_efasim_pingpong_LDADD = $(EFA_LIBS) $(IBVERBS_LIBS)
EXTRA_DIST += test/unit/test_ibv_devinfo.sh test/unit/test_efasim_netns.sh \
	test/unit/test_proto_procs.sh test/unit/test_efasim_symbols.sh \
	test/libfabric/run-libfabric-tests.sh

EFASIM_ENV = LD_LIBRARY_PATH=$(abs_builddir)/src/efasim/.libs
check-efasim: $(check_PROGRAMS) $(efasim_LTLIBRARIES)
	$(EFASIM_ENV) ./test/unit/efasim-unit
	$(SHELL) $(top_srcdir)/test/unit/test_ibv_devinfo.sh $(abs_builddir)/src/efasim/.libs || test $$? -eq 77
	$(SHELL) $(top_srcdir)/test/unit/test_efasim_symbols.sh $(abs_builddir)/src/efasim/.libs || test $$? -eq 77
	$(SHELL) $(top_srcdir)/test/unit/test_efasim_netns.sh ./test/unit/efasim-pingpong \
		$(abs_builddir)/src/efasim/.libs
.PHONY: check-efasim

# efasim's kernel front end (src/efasim/kernel): the device's memory side alone
# (doorbell and ring faults, the instruction decoder), and the uverbs device at
# its boundary, run with the front end preloaded (efasim-info --run=kernel).
check_PROGRAMS += test/unit/efasim-mmio-unit test/unit/efasim-uverbs-unit
test_unit_efasim_mmio_unit_SOURCES = \
	test/unit/efarm_test.h \
	test/unit/runner.c \
	test/unit/test_efasim_mmio.c \
	src/efasim/kernel/mmio.c \
	src/efasim/kernel/x86.c
test_unit_efasim_mmio_unit_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/test/unit
test_unit_efasim_mmio_unit_LDADD = libefarm.la -ldl
test_unit_efasim_uverbs_unit_SOURCES = \
	test/unit/efarm_test.h \
	test/unit/runner.c \
	test/unit/test_efasim_uverbs.c
test_unit_efasim_uverbs_unit_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/test/unit
test_unit_efasim_uverbs_unit_LDADD = libefarm.la
