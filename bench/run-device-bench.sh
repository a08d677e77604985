#!/bin/sh
# The device layer (bench-device) next to raw verbs (bench-efasim) on efasim, with the
# ratio of their one-way median latencies and bandwidths: the device layer's own overhead.
#   bench/run-device-bench.sh BUILD_DIR [iterations]
set -eu
build=$1
iters=${2:-20000}
lib=$build/src/efasim/.libs
verbs=$(LD_LIBRARY_PATH=$lib "$build/bench/bench-efasim" "$iters")
device=$(EFARM_DEVICE=sim EFARM_EFASIM_PATH=$lib "$build/bench/bench-device" "$iters")
echo "$verbs"
echo
echo "$device"
echo
echo "device layer vs raw verbs (same sizes, same machine):"
printf '%6s | %14s %14s | %9s %9s | %s\n' bytes "verbs lat us" "device lat us" "verbs MB/s" \
    "dev MB/s" "ratio lat  bw"
echo "$verbs" | awk -F'|' '/^ *[0-9]+ \|/ {split($2, l, " "); split($4, b, " ");
    gsub(/ /, "", $1); print $1, l[1], b[1]}' >"${TMPDIR:-/tmp}/efarm-verbs.$$"
echo "$device" | awk -F'|' '/^ *[0-9]+ \|/ {split($2, l, " "); gsub(/ /, "", $1); gsub(/ /, "", $3);
    print $1, l[1], $3}' >"${TMPDIR:-/tmp}/efarm-device.$$"
join "${TMPDIR:-/tmp}/efarm-verbs.$$" "${TMPDIR:-/tmp}/efarm-device.$$" |
    awk '{printf "%6s | %14.2f %14.2f | %9.1f %9.1f | %6.2fx %5.2fx\n", $1, $2, $4, $3, $5, $4/$2, $5/$3}'
rm -f "${TMPDIR:-/tmp}/efarm-verbs.$$" "${TMPDIR:-/tmp}/efarm-device.$$"
