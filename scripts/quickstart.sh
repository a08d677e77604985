#!/usr/bin/env bash
# Quick start, step 1: install dependencies, build efarm, and run the main job.
# The main job today is the protocol v4 dissector on a sample packet: an
# EAGER_TAGRTM carrying the raw-address header, as the first message to a peer
# looks on the wire. (Issue 6 turns this into a 2-rank MPI run over efarm.)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${EFARM_BUILD_ROOT:-$top/build}/gcc

"$top/scripts/install-deps.sh"
[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh)
mkdir -p "$build"
cd "$build"
[ -f Makefile ] || "$top/configure" -q CC=gcc
make -s -j2

# type 65 EAGER_TAGRTM, v4, flags RAW_ADDR_HDR|MSG|TAGGED; msg_id 0; tag 7;
# raw address (size 36): gid fe80::1, qpn 3, connid 0x12345678; 5 bytes "hello".
sample="41040d00 00000000 0700000000000000
24000000 fe800000000000000000000000000001 0300 0000 78563412 0000000000000000 00000000
68656c6c6f"
echo "== efarm-pktdump: the first eager tagged message to a peer =="
echo "$sample" | ./tools/efarm-pktdump
echo
echo "== the same packet as JSON (efarm-pktdump --json) =="
echo "$sample" | ./tools/efarm-pktdump --json
