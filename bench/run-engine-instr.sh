#!/usr/bin/env bash
# Instructions per 8-byte round trip at engine level, under callgrind: efarm's
# protocol engine (tools/efarm-pingpong) next to libfabric's EFA provider (Debian's
# fi_pingpong -p efa -e rdm), both through the same verbs below them on the same
# efasim, counted per object in the thread that posts and polls.
#
#   bench/run-engine-instr.sh [--build DIR] [--front-end kernel|verbs]
#                             [--iters N1,N2,...] [--only efarm|fi] [--keep DIR]
#                             [--rdma-core LIBDIR]
#
#   --build DIR      efarm build tree (default build/gcc): tools/efarm-pingpong,
#                    tools/efasim-info, src/efasim/.libs
#   --front-end F    kernel (default): the system's rdma-core (libibverbs, libefa) over
#                    efasim's kernel front end, the host code of a real EFA (efarm with
#                    EFARM_DEVICE=efa); verbs: efasim's drop-in libibverbs and libefa
#   --iters LIST     timed round trips of the runs (default 200,600): each count runs
#                    twice, the two processes on different cores and both on one
#   --only P         one program: efarm or fi
#   --keep DIR       keep the callgrind files and outputs in DIR
#   --rdma-core LIBDIR  (kernel front end) run on this build of the installed
#                    rdma-core with symbols (scripts/rdma-core-build.sh prints its
#                    LIBDIR) in place of the system's, and split rdma-core's count by
#                    function: where its instructions go per round trip
#
# Each program runs once per count, server and client as two processes under
# valgrind --tool=callgrind (each thread apart; --skip-plt=no), 8-byte messages
# (efarm-pingpong adds its warm-up, N/10 up to 100 round trips, which is counted in).
# Counted: each process's main thread, the one that posts and polls (efasim's
# service thread stands in for the NIC and is left out). Both programs spin on
# their completion queue while the peer works, and how often depends on timing,
# so each object's count is fitted, over the runs, as
#     count = fixed + per_trip x round trips + per_call x verbs calls
# (least squares; verbs calls: the thread's calls of the verbs provider's CQ poll,
# libefa's or efasim's drop-in's, mostly empty ones): per_trip is the cost of a
# round trip without the polls that found nothing; set-up, handshake and teardown
# fall into fixed. The runs on one core (taskset) spin far more per round trip than
# those on two, which keeps the round trips and the calls apart in the fit. Objects:
#   engine     libefarm (efarm) or libfabric's provider (fi)
#   program    the benchmark itself (efarm-pingpong's loop; fabtests' harness)
#   rdma-core  the system's libibverbs and libefa (kernel front end; none on the drop-in)
#   device     efasim: its model and kernel front end, or its drop-in libibverbs and
#              libefa with the model: the emulated device (and kernel), which on EFA
#              are hardware and no host instruction
#   libc, other
# With the kernel front end, valgrind runs with --vex-iropt-level=0
# --px-default=allregs-at-mem-access: efasim's doorbells and armed completion rings
# trap, and its handler reads the faulting instruction's registers from the signal
# context, which valgrind gives exactly only so (the counts are the program's).
#
# Output: a table per program (per trip and per empty verbs call, client and server,
# and the fit's largest residual as a share of the count), and for scripts
# "ENGINE <program> <process> <class> <per trip> <per call>" and
# "HOSTCOST <program> <process> <engine + rdma-core per trip>" lines; with --rdma-core
# also rdma-core's functions, and "RCFN <program> <process> <function> <per trip>
# <per call>" lines.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build/gcc
front_end=kernel
iters=200,600
only=
keep=
rdma_core=

while [ $# -gt 0 ]; do
    case $1 in
    --build) build=${2:?--build needs a directory}; shift 2 ;;
    --front-end) front_end=${2:?--front-end needs kernel or verbs}; shift 2 ;;
    --iters) iters=${2:?--iters needs a list}; shift 2 ;;
    --only) only=${2:?--only needs efarm or fi}; shift 2 ;;
    --keep) keep=${2:?--keep needs a directory}; shift 2 ;;
    --rdma-core) rdma_core=${2:?--rdma-core needs a directory}; shift 2 ;;
    -h | --help) sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//;/^set -e/d'; exit 0 ;;
    *) echo "run-engine-instr: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
log() { echo "run-engine-instr: $*" >&2; }
case $front_end in kernel | verbs) ;; *) log "--front-end: kernel or verbs, not '$front_end'"; exit 2 ;; esac
case $only in '' | efarm | fi) ;; *) log "--only: efarm or fi, not '$only'"; exit 2 ;; esac
counts=()
for n in ${iters//,/ }; do
    case $n in '' | *[!0-9]* | 0) log "--iters: round-trip counts from 1, not '$n'"; exit 2 ;; esac
    counts+=("$n")
done
[ ${#counts[@]} -ge 2 ] || { log "--iters: at least two counts (the fit has three unknowns)"; exit 2; }
if [ -n "$rdma_core" ]; then
    [ "$front_end" = kernel ] || { log "--rdma-core: with the kernel front end only"; exit 2; }
    for f in libibverbs.so.1 libefa.so.1; do
        [ -e "$rdma_core/$f" ] || { log "--rdma-core: no $rdma_core/$f (scripts/rdma-core-build.sh)"; exit 1; }
    done
    rdma_core=$(cd "$rdma_core" && pwd)
fi
command -v taskset >/dev/null || { log "taskset is not installed (util-linux)"; exit 1; }
[ "$(nproc)" -ge 2 ] || { log "the runs need two cores"; exit 1; }
command -v valgrind >/dev/null || { log "valgrind is not installed (apt-get install valgrind)"; exit 1; }
build=$(cd "$build" && pwd)
pingpong=$build/tools/efarm-pingpong
info=$build/tools/efasim-info
for f in "$pingpong" "$info"; do
    [ -x "$f" ] || { log "no $f: build efarm in $build first (README)"; exit 1; }
done
fi_pingpong=$(command -v fi_pingpong || true)
[ -n "$fi_pingpong" ] || [ "$only" = efarm ] ||
    { log "no fi_pingpong (apt-get install libfabric-bin), or --only efarm"; exit 1; }

if [ -n "$keep" ]; then
    mkdir -p "$keep"
    dir=$(cd "$keep" && pwd)
else
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
fi

# The front end's environment, from efasim-info (as efasim-info --run gives it).
dev_env=()
env_arg=--env
[ "$front_end" = verbs ] || env_arg=--env=kernel
while IFS= read -r line; do
    case $line in export\ *=*) eval "dev_env+=(${line#export })" ;; esac
done < <("$info" "$env_arg")
[ ${#dev_env[@]} -gt 0 ] || { log "efasim-info printed no environment"; exit 1; }
# After efasim's own LD_LIBRARY_PATH: the later one counts.
[ -z "$rdma_core" ] || dev_env+=(LD_LIBRARY_PATH="$rdma_core")
if [ "$front_end" = kernel ]; then
    efarm_env=(EFARM_DEVICE=efa)
    vg_exact=(--vex-iropt-level=0 --px-default=allregs-at-mem-access)
else
    efarm_env=(EFARM_DEVICE=sim EFARM_EFASIM_PATH="$build/src/efasim/.libs")
    vg_exact=()
fi
vg=(valgrind -q --tool=callgrind --separate-threads=yes --skip-plt=no "${vg_exact[@]}")

# Notes of valgrind and hwloc that say nothing about the run (bench/valgrind-quiet.txt).
quiet() { grep -v -F -f "$top/bench/valgrind-quiet.txt" >&2 || true; }

# run_efarm N OUT SERVER-CPU CLIENT-CPU: server and client of efarm-pingpong under callgrind.
run_efarm() {
    local n=$1 o=$2 scpu=$3 ccpu=$4 spid rc=0
    rm -f "$o/addr"
    env "${dev_env[@]}" "${efarm_env[@]}" timeout 900 taskset -c "$scpu" "${vg[@]}" \
        --callgrind-out-file="$o/cg.server.%p" "$pingpong" --server "$o/addr" --timeout 600 >"$o/server.out" 2> >(quiet) &
    spid=$!
    env "${dev_env[@]}" "${efarm_env[@]}" timeout 900 taskset -c "$ccpu" "${vg[@]}" \
        --callgrind-out-file="$o/cg.client.%p" "$pingpong" --client "$o/addr" --sizes 8 --iters "$n" --timeout 600 >"$o/client.out" 2> >(quiet) ||
        rc=1
    wait "$spid" || rc=1
    [ "$rc" -eq 0 ] || { log "efarm-pingpong at $n round trips failed: $o/*.out"; return 1; }
}

# run_fi N OUT SERVER-CPU CLIENT-CPU: fi_pingpong's server and client under callgrind
# (a TCP port for its control connection that nothing listens on).
run_fi() {
    local n=$1 o=$2 scpu=$3 ccpu=$4 spid rc=0 port
    for _ in $(seq 1 50); do
        port=$((20000 + RANDOM % 20000))
        [ -n "$(ss -Htln "sport = :$port" 2>/dev/null)" ] || break
    done
    env "${dev_env[@]}" timeout 900 taskset -c "$scpu" "${vg[@]}" --callgrind-out-file="$o/cg.server.%p" \
        "$fi_pingpong" -p efa -e rdm -S 8 -I "$n" -B "$port" >"$o/server.out" 2> >(quiet) &
    spid=$!
    for _ in $(seq 1 100); do
        [ -z "$(ss -Htln "sport = :$port" 2>/dev/null)" ] || break
        sleep 0.2
    done
    env "${dev_env[@]}" timeout 900 taskset -c "$ccpu" "${vg[@]}" --callgrind-out-file="$o/cg.client.%p" \
        "$fi_pingpong" -p efa -e rdm -S 8 -I "$n" -P "$port" 127.0.0.1 >"$o/client.out" 2> >(quiet) ||
        rc=1
    wait "$spid" || rc=1
    [ "$rc" -eq 0 ] || { log "fi_pingpong at $n round trips failed: $o/*.out"; return 1; }
}

# Self instructions per object class in one callgrind file, and "calls N": the
# calls into the verbs provider's CQ poll (bench/callgrind.awk).
byfn=0
[ -z "$rdma_core" ] || byfn=1
objects() { awk -v mode=engine -v byfn="$byfn" -f "$top/bench/callgrind.awk" "$1"; }

main_file() { ls "$1"/cg."$2".*-01 2>/dev/null | head -n 1; }

trips() { # PROGRAM N: round trips the run makes, warm-up included
    if [ "$1" = efarm ]; then
        awk -v n="$2" 'BEGIN { w = int(n / 10); if (w < 1) w = 1; if (w > 100) w = 100; print n + w }'
    else
        echo "$2"
    fi
}

programs=(efarm 'fi')
[ -z "$only" ] || programs=("$only")
log "front end $front_end, ${counts[*]} round trips of 8 bytes; files in $dir"
: >"$dir/data"
for p in "${programs[@]}"; do
    for n in "${counts[@]}"; do
        for layout in apart shared; do
            o=$dir/$p-$n-$layout
            rm -rf "$o"
            mkdir -p "$o"
            log "$p, $n round trips, processes on cores $layout"
            if [ "$layout" = apart ]; then "run_$p" "$n" "$o" 0 1; else "run_$p" "$n" "$o" 0 0; fi
            t=$(trips "$p" "$n")
            for role in server client; do
                f=$(main_file "$o" "$role")
                [ -n "$f" ] || { log "$p at $n ($layout): no callgrind file for the $role"; exit 1; }
                objects "$f" | awk -v p="$p" -v r="$role" -v id="$n-$layout" -v t="$t" \
                    '{ print p, r, id, t, $1, $2 }' >>"$dir/data"
            done
        done
    done
done

# Least squares per (program, process, class): count = a + b trips + c calls.
awk -v fe="$front_end" '
function solve(k,   i, j, r, m, f, x) { # 3x3 normal equations A x = y, Gaussian elimination
    for (i = 1; i <= 3; i++) for (j = 1; j <= 3; j++) m[i, j] = A[k, i, j]
    for (i = 1; i <= 3; i++) x[i] = Y[k, i]
    for (i = 1; i <= 3; i++) {
        if (m[i, i] == 0) return 0
        for (r = i + 1; r <= 3; r++) {
            f = m[r, i] / m[i, i]
            for (j = i; j <= 3; j++) m[r, j] -= f * m[i, j]
            x[r] -= f * x[i]
        }
    }
    for (i = 3; i >= 1; i--) {
        for (j = i + 1; j <= 3; j++) x[i] -= m[i, j] * sol[j]
        sol[i] = x[i] / m[i, i]
    }
    return 1
}
$5 == "calls" { calls[$1, $2, $3] = $6; next }
{
    cnt[$1, $2, $3, $5] = $6; trip[$1, $2, $3] = $4; runs[$1, $2, $3] = 1; prog[$1] = 1
    if ($5 ~ /^rdma-core:/) fns[$5] = 1
}
END {
    n = split("engine program rdma-core device libc other", cls, " ")
    base = n # then rdma-core by function (--rdma-core), sorted by name
    for (c in fns) {
        for (i = ++n; i > base + 1 && cls[i - 1] > c; i--) cls[i] = cls[i - 1]
        cls[i] = c
    }
    for (p in prog) {
        printf "\n%s (%s front end): instructions per 8-byte round trip and per empty verbs call, main thread, fitted over the runs\n", p, fe
        printf "%-8s %-10s %10s %10s %10s %9s\n", "process", "object", "per trip", "per call", "fixed", "residual"
        for (ri = 1; ri <= 2; ri++) {
            role = ri == 1 ? "client" : "server"
            host = 0
            for (ci = 1; ci <= n; ci++) {
                c = cls[ci]; k = p SUBSEP role SUBSEP c
                delete A; delete Y
                for (rk in runs) {
                    split(rk, f, SUBSEP)
                    if (f[1] != p || f[2] != role) continue
                    id = f[3]; t = trip[p, role, id]; v = calls[p, role, id]; y = cnt[p, role, id, c] + 0
                    xv[1] = 1; xv[2] = t; xv[3] = v
                    for (i = 1; i <= 3; i++) { Y[k, i] += xv[i] * y; for (j = 1; j <= 3; j++) A[k, i, j] += xv[i] * xv[j] }
                }
                if (!solve(k)) { sol[1] = sol[2] = sol[3] = 0 }
                worst = 0
                for (rk in runs) {
                    split(rk, f, SUBSEP)
                    if (f[1] != p || f[2] != role) continue
                    id = f[3]; t = trip[p, role, id]; y = cnt[p, role, id, c] + 0
                    e = y - (sol[1] + sol[2] * t + sol[3] * calls[p, role, id])
                    if (y > 0 && (e < 0 ? -e : e) / y > worst) worst = (e < 0 ? -e : e) / y
                }
                if (c ~ /^rdma-core:/) {
                    if (sol[2] < 0.5 && sol[2] > -0.5 && sol[3] < 0.5 && sol[3] > -0.5) continue
                    printf "%-8s   %-28s %10.0f %10.1f %10.0f %8.1f%%\n", role, substr(c, 11), sol[2], sol[3], sol[1], 100 * worst
                    printf "RCFN %s %s %s %.0f %.1f\n", p, role, substr(c, 11), sol[2], sol[3] > "/dev/stderr"
                    continue
                }
                printf "%-8s %-10s %10.0f %10.1f %10.0f %8.1f%%\n", role, c, sol[2], sol[3], sol[1], 100 * worst
                printf "ENGINE %s %s %s %.0f %.1f\n", p, role, c, sol[2], sol[3] > "/dev/stderr"
                if (c == "engine" || c == "rdma-core") host += sol[2]
            }
            printf "%-8s %-10s %10.0f\n", role, "eng+rdma", host
            printf "HOSTCOST %s %s %.0f\n", p, role, host > "/dev/stderr"
        }
    }
}' "$dir/data" 2>"$dir/lines"
echo
cat "$dir/lines"

# With --rdma-core: the floor of a direct data path (bench/bench_direct_path.c),
# counted the same way (callgrind, only its dp_ functions), next to what rdma-core
# cost per round trip and per empty poll above: what a direct path would save.
[ -n "$rdma_core" ] || exit 0
direct=$build/bench/bench-direct-path
[ -x "$direct" ] || { log "no $direct: build efarm in $build first"; exit 1; }
direct_count() { # TRIPS EMPTY: the instructions of the dp_ functions
    local f=$dir/cg.direct.$1.$2
    valgrind -q --tool=callgrind --toggle-collect='dp_*' --callgrind-out-file="$f" "$direct" "$1" "$2" >/dev/null ||
        { log "bench-direct-path $1 $2 failed"; exit 1; }
    awk '/^totals:/ { print $2; found = 1 } END { if (!found) exit 1 }' "$f" ||
        { log "no totals in $f"; exit 1; }
}
a=$(direct_count 1000 0)
b=$(direct_count 2000 0)
c=$(direct_count 1000 1000)
awk -v a="$a" -v b="$b" -v c="$c" '
$1 == "ENGINE" && $4 == "rdma-core" { rc[$2 " " $3] = $5; rcc[$2 " " $3] = $6 }
END {
    trip = (b - a) / 1000; poll = (c - a) / 1000
    printf "\ndirect path floor (bench-direct-path: a send, a receive posted again, two completions read):\n"
    printf "  %.0f instructions per round trip, %.0f per empty poll\n", trip, poll
    printf "DIRECT %.0f %.0f\n", trip, poll
    printf "%-14s %-8s %10s %10s %10s %10s\n", "program", "process", "rdma-core", "saving", "per poll", "saving"
    for (k in rc) {
        split(k, f, " ")
        printf "%-14s %-8s %10.0f %10.0f %10.1f %10.1f\n", f[1], f[2], rc[k], rc[k] - trip, rcc[k], rcc[k] - poll
        printf "SAVING %s %s %.0f %.1f\n", f[1], f[2], rc[k] - trip, rcc[k] - poll
    }
}' "$dir/lines"
