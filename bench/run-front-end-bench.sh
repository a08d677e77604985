#!/usr/bin/env bash
# efarm's engine on efasim's two front ends, alternating in one run: latency and
# bandwidth of efarm-pingpong through efasim's drop-in (EFARM_DEVICE=sim) and through
# the system's rdma-core on efasim's kernel front end (EFARM_DEVICE=efa, the path efarm
# takes on EFA), with the ratio kernel / drop-in. Figures only: nothing is judged.
#
#   bench/run-front-end-bench.sh [--build DIR] [--runs N] [--sizes LIST] [--iters N]
#                                [--window W]
#
# DIR is a configured efarm build tree (default build/gcc): its tools/efarm-pingpong,
# tools/efasim-info and src/efasim/.libs. Each run measures every size on each front
# end in turn (drop-in first in odd runs, kernel first in even ones), one-way latency
# (median of --iters round trips) and then bandwidth (--window messages in flight per
# iteration); the table gives the medians over the runs and their ratios. Timings on
# a shared 2-core machine spread 10-30% from run to run: compare the ratios.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build/gcc
runs=5
sizes=8,4096,65536,1048576
iters=1000
window=16
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=${2:?}; shift 2 ;;
    --runs) runs=${2:?}; shift 2 ;;
    --sizes) sizes=${2:?}; shift 2 ;;
    --iters) iters=${2:?}; shift 2 ;;
    --window) window=${2:?}; shift 2 ;;
    -h | --help) sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//;/^set -e/d'; exit 0 ;;
    *) echo "run-front-end-bench: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
build=$(cd "$build" && pwd)
pp=$build/tools/efarm-pingpong
info=$build/tools/efasim-info
[ -x "$pp" ] && [ -x "$info" ] || { echo "run-front-end-bench: build $build first" >&2; exit 1; }
kernel_env=$("$info" --env=kernel)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# measure FRONT_END MODE: efarm-pingpong's table rows as "SIZE VALUE" (MODE lat: median
# one-way us; bw: MB/s with --window).
measure() {
    local extra=()
    [ "$2" = bw ] && extra=(--window "$window")
    (
        if [ "$1" = kernel ]; then
            eval "$kernel_env"
            export EFARM_DEVICE=efa
        else
            export EFARM_DEVICE=sim EFARM_EFASIM_PATH=$build/src/efasim/.libs
        fi
        export EFARM_PROFILE=reference
        timeout 600 "$pp" --sizes "$sizes" --iters "$iters" "${extra[@]}"
    ) 2>&1 | awk -v mode="$2" -F'|' 'NF >= 5 && $1 ~ /^ *[0-9]+ *$/ {
        split($3, l, " "); gsub(/ /, "", $1); gsub(/ /, "", $4)
        print $1, (mode == "lat" ? l[1] : $4) }'
}

for r in $(seq 1 "$runs"); do
    order="verbs kernel"
    [ $((r % 2)) -eq 1 ] || order="kernel verbs"
    for fe in $order; do
        for mode in lat bw; do
            measure "$fe" "$mode" | sed "s/^/$fe $mode /" >>"$work/all"
        done
    done
    echo "run-front-end-bench: run $r of $runs done" >&2
done

echo "efarm-pingpong on efasim's two front ends: $runs alternating runs, medians;" \
    "latency one-way (us, $iters round trips), bandwidth (MB/s, window $window)"
awk '
function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ v[$1, $2, $3] = v[$1, $2, $3] " " $4; sizes[$3] = 1 }
END {
    printf("%10s | %12s %12s %8s | %12s %12s %8s\n", "bytes", "lat drop-in", "lat kernel", "ratio",
           "bw drop-in", "bw kernel", "ratio")
    n = 0; for (s in sizes) order[++n] = s + 0
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (order[j] < order[i]) { t = order[i]; order[i] = order[j]; order[j] = t }
    for (i = 1; i <= n; i++) {
        s = order[i]
        lv = median(v["verbs", "lat", s]); lk = median(v["kernel", "lat", s])
        bv = median(v["verbs", "bw", s]); bk = median(v["kernel", "bw", s])
        printf("%10d | %12.2f %12.2f %8.2f | %12.1f %12.1f %8.2f\n", s, lv, lk, lv ? lk / lv : 0,
               bv, bk, bv ? bk / bv : 0)
        printf("FRONTEND %d %.2f %.2f %.1f %.1f\n", s, lv, lk, bv, bk)
    }
}' "$work/all"
