#!/usr/bin/env bash
# Engine level, on one device: efarm's protocol engine (tools/efarm-pingpong) next to
# libfabric's EFA provider (libfabric's own fi_pingpong -p efa -e rdm) on the same
# efasim, two processes on this machine, the same sizes and iteration counts, one
# program after the other per size. Prints the mean one-way latency and bandwidth of
# each and the ratio efarm/libfabric.
#
#   bench/run-fi-pingpong-bench.sh [--build DIR] [--libfabric PREFIX]... [--sizes LIST]
#                                  [--iters N] [--runs N] [--quick] [--timeout S]
#                                  [--fi-env VAR=VALUE]...
#
#   --build DIR        efarm build tree (default build/gcc): its tools/efarm-pingpong,
#                      tools/efasim-info and src/efasim/.libs (the efasim both use)
#   --libfabric PREFIX fi_pingpong from PREFIX/bin; repeat for more columns. Default:
#                      Debian's (/usr, libfabric 1.17) and build/libfabric/install
#                      (2.1.0, scripts/libfabric-build.sh) when it exists
#   --sizes LIST       bytes, comma-separated, K/M suffixes (default
#                      8,64,512,4K,8K,64K,256K,1M,4M,16M)
#   --iters N          round trips per size up to 4 KiB (default 10000); above, N *
#                      4 KiB / size, at least 50: both programs get the same count
#   --runs N           alternate the programs N times per size; keep each one's best
#                      (lowest mean) run (default 1)
#   --quick            --iters 1000 --sizes 8,4K,64K,1M
#   --fi-env VAR=VALUE extra environment for fi_pingpong (both sides), e.g.
#                      FI_EFA_USE_DEVICE_RDMA=0
#
# How each program is run:
#   efarm      EFARM_DEVICE=sim EFARM_EFASIM_PATH=<build>/src/efasim/.libs
#              efarm-pingpong --sizes S --iters N (server forked, its own warm-up
#              of N/10, at most 100, round trips excluded)
#   fi_pingpong  in efasim's environment for unmodified programs (`efasim-info --env`:
#              LD_LIBRARY_PATH with efasim first, SYSFS_PATH at efasim's sysfs view,
#              FI_EFA_ENABLE_SHM_TRANSFER=0), server `fi_pingpong -p efa -e rdm [-f efa]
#              -S S -I N -B PORT`, client the same with `-P PORT 127.0.0.1` (-f efa
#              where fi_pingpong has -f, i.e. 2.x: its first fabric is efa-direct, the
#              device's send/receive without the RDM protocol efarm speaks); fi_pingpong
#              has no warm-up, so its first round trip (the EFA handshake, first
#              registrations) is in its mean: at N=10000 that is well under 1%.
# Both report the mean one-way time (fi_pingpong's usec/xfer = elapsed / iterations /
# 2; efarm-pingpong's "mean us" = the mean of the timed round trips / 2) and MB/s as
# bytes of one message over it. The ratio is efarm's mean over libfabric's (< 1: efarm
# faster). Outputs: build/bench/fipp-<program>-<size>.<run>.out, figures
# build/bench/fipp-results.txt. Exit status 1 when a run failed.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out=${EFARM_BUILD_ROOT:-$top/build}/bench
build=$top/build/gcc
lf_prefixes=()
sizes=8,64,512,4K,8K,64K,256K,1M,4M,16M
iters=10000
runs=1
timeout_s=300
fi_env=()

usage() { sed -n '8,10p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case $1 in
    --build) build=${2:?--build needs a directory}; shift 2 ;;
    --libfabric) lf_prefixes+=("${2:?--libfabric needs a prefix}"); shift 2 ;;
    --sizes) sizes=${2:?--sizes needs a list}; shift 2 ;;
    --iters) iters=${2:?--iters needs a number}; shift 2 ;;
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --quick) iters=1000; sizes=8,4K,64K,1M; shift ;;
    --timeout) timeout_s=${2:?--timeout needs seconds}; shift 2 ;;
    --fi-env) fi_env+=("${2:?--fi-env needs VAR=VALUE}"); shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "run-fi-pingpong-bench: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
done
for n in "$iters" "$runs" "$timeout_s"; do
    case $n in '' | *[!0-9]* | 0) echo "run-fi-pingpong-bench: '$n' is not a number from 1" >&2; exit 2 ;; esac
done
for e in "${fi_env[@]}"; do
    [[ $e == [A-Za-z_]*=* ]] || { echo "run-fi-pingpong-bench: --fi-env $e: VAR=VALUE" >&2; exit 2; }
done

log() { echo "run-fi-pingpong-bench: $*"; }
mkdir -p "$out"
build=$(cd "$build" && pwd)
pingpong=$build/tools/efarm-pingpong
efasim_info=$build/tools/efasim-info
efasim_dir=$build/src/efasim/.libs
for f in "$pingpong" "$efasim_info" "$efasim_dir/libibverbs.so.1"; do
    [ -e "$f" ] || { log "no $f: build efarm in $build first (see README)"; exit 1; }
done
if [ ${#lf_prefixes[@]} -eq 0 ]; then
    [ ! -x /usr/bin/fi_pingpong ] || lf_prefixes+=(/usr)
    [ ! -x "$top/build/libfabric/install/bin/fi_pingpong" ] || lf_prefixes+=("$top/build/libfabric/install")
fi
[ ${#lf_prefixes[@]} -gt 0 ] ||
    { log "no fi_pingpong: apt-get install libfabric-bin, or scripts/libfabric-build.sh"; exit 1; }

# Sizes in bytes, and the round trips for each.
size_list=()
for s in ${sizes//,/ }; do
    b=$(awk -v s="$s" 'BEGIN { n = s + 0; if (s ~ /[kK]$/) n *= 1024; else if (s ~ /[mM]$/) n *= 1048576
        if (s !~ /^[0-9]+[kKmM]?$/ || n < 1) exit 1; print n }') ||
        { log "--sizes: bad size '$s'"; exit 2; }
    size_list+=("$b")
done
iters_of() { awk -v b="$1" -v n="$iters" 'BEGIN { i = b <= 4096 ? n : int(n * 4096 / b); print i < 50 ? 50 : i }'; }

# efasim's environment for unmodified programs, from efasim-info itself; the run's
# LD_LIBRARY_PATH is kept after efasim's directory.
efasim_env=()
while IFS= read -r line; do
    case $line in LD_LIBRARY_PATH=* | SYSFS_PATH=* | FI_EFA_ENABLE_SHM_TRANSFER=*) efasim_env+=("$line") ;; esac
done < <("$efasim_info" --run env 2>/dev/null || true)
if ! printf '%s\n' "${efasim_env[@]}" | grep -q '^SYSFS_PATH='; then
    log "efasim-info --run env gave no SYSFS_PATH: this efasim has no sysfs view for libfabric (merge efasim's branch)"
    exit 1
fi
printf '%s\n' "${efasim_env[@]}" | grep -q '^FI_EFA_ENABLE_SHM_TRANSFER=' ||
    efasim_env+=(FI_EFA_ENABLE_SHM_TRANSFER=0)

# A TCP port for fi_pingpong's control connection that nothing listens on.
free_port() {
    local p
    for _ in $(seq 1 50); do
        p=$((20000 + RANDOM % 20000))
        [ -n "$(ss -Htln "sport = :$p" 2>/dev/null)" ] || { echo "$p"; return 0; }
    done
    return 1
}

# run_efarm BYTES RUN: efarm-pingpong; prints "mean_us MBps proto".
run_efarm() {
    local b=$1 r=$2 f=$out/fipp-efarm-$1.$2.out n
    n=$(iters_of "$b")
    if ! EFARM_DEVICE=sim EFARM_EFASIM_PATH="$efasim_dir" timeout "$timeout_s" \
        "$pingpong" --sizes "$b" --iters "$n" --timeout 60 >"$f" 2>&1; then
        tail -n 10 "$f" | sed 's/^/    /' >&2
        return 1
    fi
    awk -F'|' -v b="$b" '$1 + 0 == b && $1 ~ /^ *[0-9]+ *$/ { gsub(/ /, "", $2)
        printf "%s %s %s\n", $5 + 0, $4 + 0, $2; found = 1; exit } END { exit !found }' "$f"
}

# run_fi PREFIX TAG BYTES RUN: fi_pingpong server and client; prints "mean_us MBps".
run_fi() {
    local prefix=$1 b=$3 f=$out/fipp-$2-$3.$4.out n port spid rc=0 src=0
    n=$(iters_of "$b")
    port=$(free_port) || { echo "no free TCP port" >"$f"; return 1; }
    local cmd=("$prefix/bin/fi_pingpong" -p efa -e rdm)
    # libfabric 2.x lists the efa-direct fabric (the device's own send/receive, no
    # protocol) first; -f efa picks the RDM protocol efarm implements. 1.x has no -f
    # and only the protocol fabric.
    local help
    help=$("$prefix/bin/fi_pingpong" -h 2>&1 || true)
    [[ $help != *"-f <fabric>"* ]] || cmd+=(-f efa)
    cmd+=(-S "$b" -I "$n")
    env "${efasim_env[@]}" "${fi_env[@]}" timeout "$timeout_s" "${cmd[@]}" -B "$port" \
        >"$f.server" 2>&1 &
    spid=$!
    for _ in $(seq 1 200); do # the client connects once: wait for the server's listen
        [ -z "$(ss -Htln "sport = :$port" 2>/dev/null)" ] || break
        kill -0 "$spid" 2>/dev/null || break
        sleep 0.05
    done
    env "${efasim_env[@]}" "${fi_env[@]}" timeout "$timeout_s" "${cmd[@]}" -P "$port" 127.0.0.1 \
        >"$f" 2>&1 || rc=$?
    [ $rc -eq 0 ] || kill "$spid" 2>/dev/null || true # a failed client leaves the server waiting
    wait "$spid" || src=$?
    if [ $rc -ne 0 ] || [ $src -ne 0 ]; then
        { echo "== client (exit $rc)"; tail -n 10 "$f"; echo "== server (exit $src)"; tail -n 10 "$f.server"; } |
            sed 's/^/    /' >&2
        return 1
    fi
    # "bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec": the one result line.
    awk '$2 ~ /^[0-9.]+[kmg]?$/ && $3 ~ /^=/ { printf "%s %s\n", $7 + 0, $6 + 0; found = 1; exit }
        END { exit !found }' "$f"
}

# A column per libfabric: its tag (fi-<version>) and its title.
tags=()
titles=()
for p in "${lf_prefixes[@]}"; do
    [ -x "$p/bin/fi_pingpong" ] || { log "no $p/bin/fi_pingpong"; exit 1; }
    v=$("$p/bin/fi_info" --version 2>/dev/null | sed -n 's/^libfabric: //p')
    tags+=("fi-${v:-unknown}")
    titles+=("fi_pingpong ${v:-?}")
done

log "efasim: $efasim_dir; fi_pingpong environment: ${efasim_env[*]} ${fi_env[*]}"
results=$out/fipp-results.txt
: >"$results"
failed=()
for r in $(seq 1 "$runs"); do
    for b in "${size_list[@]}"; do
        if res=$(run_efarm "$b" "$r"); then
            echo "efarm $b $res" >>"$results"
            log "run $r, $b B: efarm-pingpong ($(iters_of "$b") round trips) mean $(echo "$res" | cut -d' ' -f1) us, ${res##* }"
        else
            log "run $r, $b B: efarm-pingpong FAILED (output $out/fipp-efarm-$b.$r.out)"
            failed+=("efarm/$b")
        fi
        for i in "${!lf_prefixes[@]}"; do
            if res=$(run_fi "${lf_prefixes[i]}" "${tags[i]}" "$b" "$r"); then
                echo "${tags[i]} $b $res" >>"$results"
                log "run $r, $b B: ${titles[i]} mean $(echo "$res" | cut -d' ' -f1) us"
            else
                log "run $r, $b B: ${titles[i]} FAILED (output $out/fipp-${tags[i]}-$b.$r.out)"
                failed+=("${tags[i]}/$b")
            fi
        done
    done
done

echo
echo "Engine-level ping-pong on efasim, 2 processes on $(hostname), $(nproc) cores; best of $runs run(s);" \
    "round trips: $iters per size up to 4 KiB, fewer above (at least 50)"
echo "efarm: efarm-pingpong (protocol engine on efasim); fi_pingpong -p efa -e rdm on the same efasim" \
    "(${efasim_env[*]}${fi_env[*]:+ ${fi_env[*]}})"
[ ${#failed[@]} -eq 0 ] || echo "FAILED: ${failed[*]} (their cells are '-')"
awk -v tags="${tags[*]}" -v titles="$(printf '%s|' "${titles[@]}")" '
    { v = $1; b = $2 + 0; sizes[b] = 1
      if (!((v, b) in lat) || $3 + 0 < lat[v, b]) { lat[v, b] = $3 + 0; bw[v, b] = $4 + 0; proto[v, b] = $5 } }
    function cell(v, b, what) { return (v, b) in lat ? sprintf("%.2f", what == "lat" ? lat[v, b] : bw[v, b]) : "-" }
    function ratio(v, w, b) { return ((v, b) in lat && (w, b) in lat && lat[w, b] > 0) ? sprintf("%.2f", lat[v, b] / lat[w, b]) : "-" }
    END {
        nt = split(tags, tag, " "); split(titles, title, "|")
        n = 0; for (b in sizes) list[++n] = b + 0
        for (i = 2; i <= n; i++) for (j = i; j > 1 && list[j - 1] > list[j]; j--) { t = list[j]; list[j] = list[j - 1]; list[j - 1] = t }
        printf "\nmean one-way latency, us (lower is better; efarm/x < 1: efarm faster)\n"
        line = sprintf("%10s | %-17s %10s |", "bytes", "efarm proto", "efarm")
        for (k = 1; k <= nt; k++) line = line sprintf(" %16s", title[k])
        line = line " |"
        for (k = 1; k <= nt; k++) line = line sprintf(" %14s", "efarm/" substr(tag[k], 4))
        print line
        for (i = 1; i <= n; i++) {
            b = list[i]
            line = sprintf("%10d | %-17s %10s |", b, ("efarm", b) in proto ? proto["efarm", b] : "-", cell("efarm", b, "lat"))
            for (k = 1; k <= nt; k++) line = line sprintf(" %16s", cell(tag[k], b, "lat"))
            line = line " |"
            for (k = 1; k <= nt; k++) line = line sprintf(" %14s", ratio("efarm", tag[k], b))
            print line
        }
        printf "\nbandwidth, MB/s = bytes / mean one-way time (higher is better)\n"
        line = sprintf("%10s | %10s |", "bytes", "efarm")
        for (k = 1; k <= nt; k++) line = line sprintf(" %16s", title[k])
        print line
        for (i = 1; i <= n; i++) {
            b = list[i]
            line = sprintf("%10d | %10s |", b, cell("efarm", b, "bw"))
            for (k = 1; k <= nt; k++) line = line sprintf(" %16s", cell(tag[k], b, "bw"))
            print line
        }
    }' "$results"
echo
log "raw outputs $out/fipp-<program>-<bytes>.<run>.out, figures $results"
[ ${#failed[@]} -eq 0 ]
