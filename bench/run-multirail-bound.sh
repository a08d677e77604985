#!/bin/bash
# What striping a rank's large messages over two NICs could gain on efasim, at
# most (issue 13, multi-rail): the bandwidth of one stream on one device next to
# two streams at once on two devices (each pair of processes on its own
# efasim device, as two rails would be) and, as the control, two streams at once
# on one device. Striping one stream over two rails cannot beat two independent
# streams on them, so two-device / one-stream bounds its gain.
#
#   bench/run-multirail-bound.sh BUILD_DIR [--runs N] [--sizes LIST]
#
# Each stream is efarm-pingpong --window 16 (16 messages in flight, then the
# server's answer; MB/s of the median window), one size per invocation so that
# concurrent streams run the same size; configurations alternate, each run
# starting with the next one; figures are the best of N runs (default 3). Two
# streams' figure is the sum of their MB/s (they start together; each runs the
# same number of windows). Prints the table and the ratios; judges nothing.
set -euo pipefail

build=${1:?usage: run-multirail-bound.sh BUILD_DIR [--runs N] [--sizes LIST]}
shift
runs=3 sizes="65536 1048576 4194304 16777216"
while [ $# -gt 0 ]; do
    case $1 in
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --sizes) sizes=$(tr ',' ' ' <<<"${2:?--sizes needs a list}"); shift 2 ;;
    -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run-multirail-bound: unknown argument $1" >&2; exit 2 ;;
    esac
done
pp=$build/tools/efarm-pingpong
[ -x "$pp" ] || { echo "run-multirail-bound: $pp not built" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/efarm-multirail.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export EFARM_DEVICE=sim EFARM_EFASIM_PATH=$build/src/efasim/.libs EFASIM_NDEV=2 SYSFS_PATH=$tmp/sysfs

# stream OUT DEVICE SIZE: one pair of processes on DEVICE; prints its MB/s into OUT.
stream() {
    local iters=$(($3 >= 4194304 ? 10 : 40))
    EFARM_IFACE=$2 timeout 300 "$pp" --window 16 --sizes "$3" --iters "$iters" >"$1.log" 2>&1
    awk -F'|' '$1 ~ /^ *[0-9]+ *$/ { gsub(/ /, "", $4); print $4 }' "$1.log" >"$1"
}

configs=(one two-devices two-same-device)
for ((r = 0; r < runs; r++)); do
    for size in $sizes; do
        for ((k = 0; k < ${#configs[@]}; k++)); do
            c=${configs[$(((k + r) % ${#configs[@]}))]}
            case $c in
            one) stream "$tmp/a" efasim_0 "$size"; total=$(cat "$tmp/a") ;;
            two-devices)
                stream "$tmp/a" efasim_0 "$size" & stream "$tmp/b" efasim_1 "$size" & wait
                total=$(awk '{ s += $1 } END { print s }' "$tmp/a" "$tmp/b") ;;
            two-same-device)
                stream "$tmp/a" efasim_0 "$size" & stream "$tmp/b" efasim_0 "$size" & wait
                total=$(awk '{ s += $1 } END { print s }' "$tmp/a" "$tmp/b") ;;
            esac
            echo "$c $size $total" >>"$tmp/all"
            sleep 0.3
        done
    done
done
printf "%10s | %12s | %16s | %16s | %11s | %11s\n" "bytes" "one stream" "two, two devices" \
    "two, one device" "2dev / one" "2dev / 1dev"
awk '{ k = $1 " " $2; if (!(k in m) || $3 > m[k]) m[k] = $3; S[$2] = 1 }
    END {
        for (s in S)
            printf "%10d | %12.1f | %16.1f | %16.1f | %11.2f | %11.2f\n", s, m["one " s],
                m["two-devices " s], m["two-same-device " s],
                m["two-devices " s] / m["one " s], m["two-devices " s] / m["two-same-device " s]
    }' "$tmp/all" | sort -n
echo "MB/s, best of $runs run(s); efarm-pingpong --window 16, one size per process pair;" \
    "2dev / one bounds what striping one stream over two devices could gain here"
