#!/bin/sh
# The protocol engine (bench-proto) next to the device layer alone (bench-device) on the
# same efasim: the engine's overhead per small round trip (engine RTT minus device RTT,
# from the median one-way latencies) and the ratio of their streaming rates.
#   bench/run-proto-bench.sh BUILD_DIR [iterations] [runs]
# The two run back to back, alternating, `runs` times (default 3); the first table takes
# each figure's best run (lowest median latency, highest rate), the figure least disturbed
# by other load on the machine. The second takes the overhead bench-proto measures itself,
# with device-layer and engine blocks alternating in one run (both under the same load),
# as the median over the runs. The last run's full output comes first.
set -eu
build=$1
iters=${2:-20000}
runs=${3:-3}
lib=$build/src/efasim/.libs
tmp=$(mktemp -d "${TMPDIR:-/tmp}/efarm-proto-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
r=1
while [ "$r" -le "$runs" ]; do
    EFARM_DEVICE=sim EFARM_EFASIM_PATH=$lib "$build/bench/bench-proto" "$iters" >"$tmp/proto.$r"
    EFARM_DEVICE=sim EFARM_EFASIM_PATH=$lib "$build/bench/bench-device" "$iters" >"$tmp/device.$r"
    # bytes one-way-median-us MB/s, from each.
    awk -F'|' '/^ *[0-9]+ \|/ {split($2, l, " "); gsub(/ /, "", $1); gsub(/ /, "", $3);
        print $1, l[1], $3}' "$tmp/device.$r" >>"$tmp/dev.all"
    awk -F'|' '$1 ~ /^pingpong/ {split($4, l, " "); gsub(/ /, "", $2); print $2, l[1]}' \
        "$tmp/proto.$r" >>"$tmp/lat.all"
    awk -F'|' '$1 ~ /^pingpong/ {split($4, l, " "); split($5, d, " "); gsub(/ /, "", $2);
        if (d[1] != "-") print $2, d[1], l[1], d[2]}' "$tmp/proto.$r" >>"$tmp/inter.all"
    awk -F'|' '$1 ~ /^stream/ {split($4, b, " "); gsub(/ /, "", $2); print $2, b[1]}' \
        "$tmp/proto.$r" >>"$tmp/bw.all"
    awk -F'|' '$1 ~ /^msgrate/ {split($4, m, " "); print 8, m[1]}' "$tmp/proto.$r" \
        >>"$tmp/rate.all"
    r=$((r + 1))
done
cat "$tmp/proto.$runs"
echo
cat "$tmp/device.$runs"
echo
# Best run per size: lowest latency, highest rate.
awk '!($1 in l) || $2 < l[$1] {l[$1] = $2} !($1 in b) || $3 > b[$1] {b[$1] = $3}
    END {for (s in l) print s, l[s], b[s]}' "$tmp/dev.all" | sort -k1,1 >"$tmp/dev.txt"
awk '!($1 in l) || $2 < l[$1] {l[$1] = $2} END {for (s in l) print s, l[s]}' "$tmp/lat.all" |
    sort -k1,1 >"$tmp/lat.txt"
awk '!($1 in b) || $2 > b[$1] {b[$1] = $2} END {for (s in b) print s, b[s]}' "$tmp/bw.all" |
    sort -k1,1 >"$tmp/bw.txt"
echo "engine alone, best of $runs runs (ping-pong: lowest median one-way; stream: highest):"
printf '%8s | %14s | %14s\n' bytes "lat med us" "stream MB/s"
join -a 1 -a 2 -e - -o 0,1.2,2.2 "$tmp/lat.txt" "$tmp/bw.txt" | sort -n |
    awk '{printf "%8s | %14s | %14s\n", $1, $2, $3}'
printf '%8s | %14s | %14s\n' 8 "" "$(awk '$2 > m {m = $2} END {printf "%.0f msgs/s", m}' \
    "$tmp/rate.all")"
echo
echo "engine vs device layer (same efasim, same machine, best of $runs alternating runs," \
    "$iters iterations):"
printf '%8s | %14s %14s | %s\n' bytes "device lat us" "engine lat us" \
    "ENGINE OVERHEAD per round trip us"
join "$tmp/dev.txt" "$tmp/lat.txt" | sort -n |
    awk '{printf "%8s | %14.2f %14.2f | %10.2f\n", $1, $2, $4, 2 * ($4 - $2)}'
printf '%8s | %14s %14s | %s\n' bytes "device MB/s" "engine MB/s" "ratio engine/device"
join "$tmp/dev.txt" "$tmp/bw.txt" | sort -n |
    awk '{printf "%8s | %14.1f %14.1f | %9.2fx\n", $1, $3, $4, $4 / $3}'
dev_rate=$(awk '$1 == 8 {printf "%.0f", $3 * 1e6 / 8}' "$tmp/dev.txt")
eng_rate=$(awk '$2 > m {m = $2} END {printf "%.0f", m}' "$tmp/rate.all")
printf '%8s | %14s %14s | %9.2fx  (8-byte msgs/s; device: credit stream, engine: window)\n' \
    8 "$dev_rate" "$eng_rate" "$(awk -v a="$eng_rate" -v b="$dev_rate" 'BEGIN {print a / b}')"
echo
echo "the same, interleaved: device-layer and engine blocks alternating inside each bench-proto"
echo "run (median over $runs runs; every run's overhead in brackets):"
printf '%8s | %14s %14s | %s\n' bytes "device lat us" "engine lat us" \
    "ENGINE OVERHEAD per round trip us"
for size in $(awk '{print $1}' "$tmp/inter.all" | sort -un); do
    awk -v s="$size" '$1 == s' "$tmp/inter.all" >"$tmp/one"
    med() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
    printf '%8s | %14.2f %14.2f | %10.2f  (%s)\n' "$size" "$(awk '{print $2}' "$tmp/one" | med)" \
        "$(awk '{print $3}' "$tmp/one" | med)" "$(awk '{print $4}' "$tmp/one" | med)" \
        "$(awk '{printf "%s%s", (NR > 1 ? " " : ""), $4}' "$tmp/one")"
done
