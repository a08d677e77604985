# test/mpi: MPI programs run over ch4:efarm (issue 6). See test/mpi/README.md.
EXTRA_DIST += test/mpi/README.md
