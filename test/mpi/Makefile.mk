# test/mpi: MPI programs run over ch4:efarm (issue 6). See test/mpi/README.md.
# They are built with MPICH's mpicc by run-mpi-tests.sh, not by this tree.
EXTRA_DIST += test/mpi/README.md test/mpi/run-mpi-tests.sh \
	test/mpi/efarm_mpitest.h test/mpi/efarm_mpitest.c \
	test/mpi/pt2pt_sizes.c test/mpi/wildcard_order.c test/mpi/probe.c test/mpi/match_model.c \
	test/mpi/cancel_status.c test/mpi/ssend.c test/mpi/comm_free_pending.c test/mpi/datatypes.c \
	test/mpi/collectives.c test/mpi/unexpected_flood.c \
	test/mpi/finalize_flush.c test/mpi/rma_phases.c \
	test/mpi/rma_native.c test/mpi/rma_dynamic.c \
	test/mpi/comm_hints.c test/mpi/nic_placement.c test/mpi/stripe.c \
	test/mpi/cvars.c test/mpi/mr_cache_reuse.c test/mpi/two_hosts.c test/mpi/hang.c test/mpi/soak.c \
	test/mpi/intercomm.c test/mpi/sessions.c test/mpi/lang_cxx.cxx test/mpi/lang_fortran.f90 \
	test/mpi/lang_f08.f90 \
	test/mpi/dynproc.c test/mpi/threads.c test/mpi/vcis.c test/mpi/fork.c \
	test/mpi/hugepages.c \
	test/mpi/mpitest-lib.sh test/mpi/run-two-hosts.sh test/mpi/netns-launcher.sh

# `make check-mpi`: the MPI tests against the MPICH that scripts/mpich-build.sh installed.
check-mpi:
	$(top_srcdir)/test/mpi/run-mpi-tests.sh
.PHONY: check-mpi
