#!/usr/bin/env bash
# Quick start, step 1: install dependencies, build efarm and MPICH 4.0.2 with
# ch4:efarm, and run the main job: a 2-rank MPI run over efarm on efasim (the
# emulated EFA device) that prints point-to-point latency and bandwidth.
#
# MPIR_CVAR_NOLOCAL=1 sends the two ranks' traffic through efarm (without it,
# ranks on one node use MPICH's shared memory); the run ends by printing efarm's
# MPI_T counters, which show that every message crossed efarm. The first run
# builds MPICH (15-25 minutes on 2 cores); later runs reuse build/mpich.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
root=${EFARM_BUILD_ROOT:-$top/build}
build=$root/gcc

"$top/scripts/install-deps.sh"
[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh)
mkdir -p "$build"
cd "$build"
[ -f Makefile ] || "$top/configure" -q CC=gcc
make -s -j2

"$top/scripts/mpich-build.sh"
prefix=${EFARM_MPICH_PREFIX:-$root/mpich/install}
mkdir -p "$root/bench"
"$prefix/bin/mpicc" -O2 -o "$root/bench/bench-mpi" "$top/bench/bench_mpi.c"

echo "== MPI over efarm on efasim: mpiexec -n 2 bench-mpi =="
EFARM_DEVICE=sim MPIR_CVAR_NOLOCAL=1 "$prefix/bin/mpiexec" -n 2 "$root/bench/bench-mpi" \
    -t latency,bw -m 1M -p efarm_nm_send_msgs -p efarm_nm_send_bytes -p efarm_tx_pkts
