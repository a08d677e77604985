#!/usr/bin/env bash
# Install what efarm needs to build and test, from Debian bookworm's packages.
# Idempotent: does nothing (and needs no network) when everything is present.
set -euo pipefail

packages=(
    build-essential autoconf automake libtool pkg-config git
    gfortran          # scripts/mpich-build.sh: MPICH's Fortran bindings and mpifort (g++ is in build-essential)
    libhwloc-dev      # NIC selection (required by configure)
    libibverbs-dev    # libibverbs, libefa and infiniband/efadv.h (rdma-core)
    ibverbs-utils     # ibv_devinfo, ibv_ud_pingpong: run unmodified on efasim by the tests
    python3-pyverbs   # test/rdma-core: rdma-core's own test suite (its tests/), on efasim
    libfabric-bin libfabric-dev  # fi_info, fi_pingpong: libfabric's EFA provider on efasim
    iproute2          # ip netns and veth for the two-host efasim test
    slurmctld slurmd slurm-client munge  # scripts/slurm-cluster.sh: a Slurm cluster of emulated hosts
    libpmix-dev       # scripts/mpich-build.sh --pmi pmix: MPICH for srun --mpi=pmix
    libpmi2-0-dev     # scripts/mpich-build.sh --pmi pmi2 (MPICH 4.1+): Slurm's PMI 2 library
    ccache            # scripts/mpich-build.sh: recompiles of MPICH hit the cache
    python3 xz-utils  # MPICH's autogen (python3) and its source tarball (.tar.xz)
    valgrind          # bench/run-instr-bench.sh: instructions per round trip (callgrind)
    clang clang-format libclang-rt-14-dev   # clang builds, check-format, libFuzzer, sanitizers
    tshark            # the Wireshark dissector tools/efarm.lua, tested on captures
    gnuplot-nox       # quickstart.sh's plot of latency and bandwidth (PNG)
    gdb               # scripts/hang-guard.sh: the stacks of a hung test's processes
    scalapack-mpi-test netpipe-mpich2  # scripts/run-mpich-apps.sh: Debian's MPICH-built
                                       # applications, run over efarm through the MPICH ABI
)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#packages[@]} packages present"
    exit 0
fi

as_root=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: run as root to install: ${missing[*]}" >&2; exit 1; }
    as_root=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
"${as_root[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
echo "install-deps: done"
