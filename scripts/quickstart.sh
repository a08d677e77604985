#!/usr/bin/env bash
# Quick start, step 1: install dependencies, build efarm, and run the main job.
# The main job today is a two-process ping-pong through efarm's protocol
# engine on efasim (the emulated EFA device): eager, medium and runting-read
# messages, every byte checked, latency and bandwidth printed. (Issue 6 turns
# this into a 2-rank MPI run over efarm.)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${EFARM_BUILD_ROOT:-$top/build}/gcc

"$top/scripts/install-deps.sh"
[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh)
mkdir -p "$build"
cd "$build"
[ -f Makefile ] || "$top/configure" -q CC=gcc
make -s -j2

echo "== efarm-pingpong: two processes, protocol v4 over efasim =="
EFARM_DEVICE=sim EFARM_EFASIM_PATH="$build/src/efasim/.libs" \
    ./tools/efarm-pingpong --check --iters 500
