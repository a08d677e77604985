# NIC selection (issue 4, part 2): each local rank picks the EFA device nearest
# its CPU binding, balanced over the ranks that share the same nearest devices;
# see src/device/efarm_nic.h. Uses hwloc: libefarm_la_CPPFLAGS needs
# $(HWLOC_CFLAGS) and libefarm_la_LIBADD $(HWLOC_LIBS) (src/device/Makefile.mk
# has both). The tests call hwloc themselves to build their topologies
# (test/common/topo_xml.c, also built by test/mpi/run-mpi-tests.sh as efarm-topo-xml).
# Included after test/unit/Makefile.mk.
libefarm_la_SOURCES += src/device/efarm_nic.h src/device/nic_select.c
test_unit_efarm_unit_SOURCES += test/unit/test_nic_select.c test/common/topo_xml.h \
	test/common/topo_xml.c
test_unit_efarm_unit_CPPFLAGS += -I$(top_srcdir)/test/common
test_unit_efarm_unit_LDADD += $(HWLOC_LIBS)
