#!/usr/bin/env bash
# Multithreaded MPI between two ranks (issue 42): bench-mt (bench/bench_mt.c) with 1, 2,
# 4 and 8 threads per rank, message rate (osu_mbw_mr-style pairs) and latency
# (osu_latency_mt-style pairs), each thread on its own communicator and all on one,
# over efarm on efasim next to Debian's MPICH with ch4:ucx (UCX over tcp) and MPICH's
# ch4:ofi with tcp;ofi_rxm, alternating in one run. Prints a table per mode,
# communicator kind and size (threads x variant), the ratios efarm/ucx and efarm/tcp,
# and each variant's scaling (rate at T threads / rate at 1 thread).
#
#   bench/run-mt-bench.sh [--runs N] [--quick] [--only efarm,ucx,tcp] [--threads 1,2,4,8]
#                         [--vcis 1[,N]] [--prefix P] [--timeout S] [-- BENCH-MT-ARGS...]
#
#   efarm  P = --prefix, EFARM_MPICH_PREFIX or build/mpich/install (ch4:efarm,
#          scripts/mpich-build.sh); EFARM_DEVICE=sim MPIR_CVAR_NOLOCAL=1, efasim from
#          EFARM_EFASIM_PATH or P/lib/efarm/efasim
#   ucx    Debian's MPICH 4.0.2 with ch4:ucx (/usr/bin/mpicc.mpich, mpiexec.mpich;
#          apt-get install mpich libmpich-dev), UCX_TLS=tcp,self MPIR_CVAR_NOLOCAL=1
#   tcp    build/mpich-ofi/install (EFARM_MPICH_OFI_CACHE/install), ch4:ofi with
#          FI_PROVIDER="tcp;ofi_rxm" MPIR_CVAR_NOLOCAL=1; skipped when not built
#          (scripts/mpich-build.sh --netmod ofi builds it)
#
# Every run has MPIR_CVAR_CH4_NUM_VCIS set to each count of --vcis (default 1). A
# variant whose MPICH was not configured --enable-thread-cs=per-vci (its mpichversion)
# runs only the counts up to 1 and lists the others as skipped: with the global
# critical section (efarm's default 4.0.2 build, Debian's) ch4 has MPIDI_CH4_MAX_VCIS 1
# and asserts in MPI_Init on more. A library that refuses a count it was given fails
# that run.
#
# That the netmod carried the traffic is checked in every run, as run-mpi-bench.sh
# does: efarm's MPI_T counters (bench-mt -p) must show at least as many messages as
# bench-mt's ranks sent (its SENT line); ucx runs have UCX_LOG_LEVEL=info and every
# lane UCX opened to the other rank must be tcp (its ep_cfg lines); ofi runs have
# MPIR_CVAR_DEBUG_SUMMARY=1 and MPICH must name the provider. bench-mt itself checks
# every message's stamp and length (and every byte in its warm-ups) and aborts on a
# wrong one. Debian's UCX 1.13 over tcp sometimes never returns from MPI_Finalize after
# the measurement (openucx/ucx#8738): a ucx run that printed its SENT line is then
# stopped after 15 s and kept, with a note.
#
# --runs N (default 3) runs each variant N times, alternating, and reports each
# figure's median over the runs. --quick is bench-mt -T 0.1 (about a tenth of a second
# per point instead of one). The raw outputs are kept in build/bench/mt-<variant>-v<vcis>.<run>.out
# (EFARM_BUILD_ROOT for build/), the figures in build/bench/mt-results.txt. No figure
# is judged: the exit status is 1 only when a run failed or its check did.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out=${EFARM_BUILD_ROOT:-$top/build}/bench
efarm_prefix=${EFARM_MPICH_PREFIX:-$top/build/mpich/install}
ofi_prefix=${EFARM_MPICH_OFI_CACHE:-$top/build/mpich-ofi}/install
ucx_mpicc=/usr/bin/mpicc.mpich     # Debian's MPICH (libmpich-dev)
ucx_mpiexec=/usr/bin/mpiexec.mpich # Debian's MPICH (mpich)
runs=3
only=efarm,ucx,tcp
threads=1,2,4,8
vcis_list=1
seconds=1
timeout_s=
grace_s=15
bench_args=()

usage() { sed -n '10,11p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case $1 in
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --quick) seconds=0.1; shift ;;
    --only) only=${2:?--only needs a list}; shift 2 ;;
    --threads) threads=${2:?--threads needs a list}; shift 2 ;;
    --vcis) vcis_list=${2:?--vcis needs a list}; shift 2 ;;
    --prefix) efarm_prefix=${2:?--prefix needs a directory}; shift 2 ;;
    --timeout) timeout_s=${2:?--timeout needs seconds}; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; bench_args+=("$@"); break ;;
    *) echo "run-mt-bench: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
done
case $runs in '' | *[!0-9]* | 0) echo "run-mt-bench: --runs $runs: a number from 1" >&2; exit 2 ;; esac
case $threads in '' | *[!0-9,]* | ,* | *,) echo "run-mt-bench: --threads $threads: a list like 1,2,4,8" >&2; exit 2 ;; esac
case $vcis_list in '' | *[!0-9,]* | ,* | *,) echo "run-mt-bench: --vcis $vcis_list: a list like 1,4" >&2; exit 2 ;; esac
case $timeout_s in *[!0-9]*) echo "run-mt-bench: --timeout $timeout_s: seconds" >&2; exit 2 ;; esac
efasim_dir=${EFARM_EFASIM_PATH:-$efarm_prefix/lib/efarm/efasim}
variants=()
for v in ${only//,/ }; do
    case $v in
    efarm | ucx | tcp) variants+=("$v") ;;
    *) echo "run-mt-bench: --only: unknown variant '$v' (efarm, ucx, tcp)" >&2; exit 2 ;;
    esac
done
[ ${#variants[@]} -gt 0 ] || { echo "run-mt-bench: --only names no variant" >&2; exit 2; }
# Time limit of one run: 4 points (rate and lat, own and shared) per thread count, each
# two warm-ups and about $seconds timed, plus start-up; generous for a loaded machine.
if [ -z "$timeout_s" ]; then
    npoints=$((4 * $(tr ',' '\n' <<<"$threads" | grep -c .)))
    timeout_s=$(awk -v n="$npoints" -v s="$seconds" 'BEGIN { printf "%d", n * (3 * s + 3) + 60 }')
fi

mkdir -p "$out"
log() { echo "run-mt-bench: $*"; }
# shellcheck source=bench/efarm-counters.sh
. "$top/bench/efarm-counters.sh"
label_of() {
    case $1 in
    efarm) echo "efarm" ;;
    ucx) echo "ucx(tcp)" ;;
    tcp) echo "tcp;ofi_rxm" ;;
    esac
}

# ---- The MPI libraries ----------------------------------------------------------------

skipped=()
runnable=()
for v in "${variants[@]}"; do
    case $v in
    efarm)
        if [ ! -x "$efarm_prefix/bin/mpicc" ]; then
            log "no $efarm_prefix/bin/mpicc: run scripts/mpich-build.sh first (or --prefix)"
            exit 1
        fi
        if [ ! -e "$efasim_dir/libibverbs.so.1" ]; then
            log "no efasim in $efasim_dir: set EFARM_EFASIM_PATH"
            exit 1
        fi
        ;;
    ucx)
        if [ ! -x "$ucx_mpicc" ] || [ ! -x "$ucx_mpiexec" ]; then
            if [ "$(id -u)" = 0 ]; then
                log "installing Debian's MPICH (mpich libmpich-dev)"
                DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
                    mpich libmpich-dev >"$out/apt-mt.log" 2>&1 ||
                    { tail -n 20 "$out/apt-mt.log"; log "apt-get failed (log: $out/apt-mt.log)"; exit 1; }
            else
                log "no $ucx_mpicc or $ucx_mpiexec (apt-get install mpich libmpich-dev as root)"
                exit 1
            fi
        fi
        "${ucx_mpiexec%/*}/mpichversion" 2>/dev/null | grep -q '^MPICH Device:.*ch4:ucx' ||
            { log "${ucx_mpiexec%/*}/mpichversion does not name ch4:ucx"; exit 1; }
        ;;
    tcp)
        if [ ! -x "$ofi_prefix/bin/mpicc" ]; then
            echo "SKIP tcp;ofi_rxm: no $ofi_prefix/bin/mpicc (scripts/mpich-build.sh --netmod ofi builds MPICH's ch4:ofi there)"
            skipped+=(tcp)
            continue
        fi
        ;;
    esac
    runnable+=("$v")
done
[ ${#runnable[@]} -gt 0 ] || { log "no variant to run"; exit 1; }

mpicc_of() {
    case $1 in
    efarm) echo "$efarm_prefix/bin/mpicc" ;;
    ucx) echo "$ucx_mpicc" ;;
    tcp) echo "$ofi_prefix/bin/mpicc" ;;
    esac
}
mpiexec_of() {
    case $1 in
    efarm) echo "$efarm_prefix/bin/mpiexec" ;;
    ucx) echo "$ucx_mpiexec" ;;
    tcp) echo "$ofi_prefix/bin/mpiexec" ;;
    esac
}
binary_of() { echo "$out/$1/bench-mt"; }

# The VCI counts of --vcis a variant's MPICH can open: all of them when it was configured
# --enable-thread-cs=per-vci (mpichversion's configure line), else 1 only (the global
# critical section has MPIDI_CH4_MAX_VCIS 1; MPICH asserts on more). Counts left out are
# listed as skipped, not failed.
vcis_of() {
    local v=$1 n list=()
    if "$(dirname "$(mpiexec_of "$v")")/mpichversion" 2>/dev/null |
        grep -q -- '--enable-thread-cs=per-vci'; then
        echo "${vcis_list//,/ }"
        return
    fi
    for n in ${vcis_list//,/ }; do
        [ "$n" -gt 1 ] || list+=("$n")
    done
    echo "${list[*]}"
}
vcis_skipped=()
declare -A vcis_by
for v in "${runnable[@]}"; do
    vcis_by[$v]=$(vcis_of "$v")
    for n in ${vcis_list//,/ }; do
        [[ " ${vcis_by[$v]} " != *" $n "* ]] || continue
        vcis_skipped+=("$(label_of "$v") vcis=$n")
        log "SKIP $(label_of "$v") vcis=$n: its MPICH has one VCI (not configured --enable-thread-cs=per-vci)"
    done
done

# bench-mt, built by each MPI's own mpicc (again when the source, that mpicc or the
# mpicc it was built with changed).
for v in "${runnable[@]}"; do
    bin=$(binary_of "$v") cc=$(mpicc_of "$v")
    if [ -x "$bin" ] && [ "$(cat "$bin.mpicc" 2>/dev/null)" = "$cc" ] &&
        [ "$bin" -nt "$top/bench/bench_mt.c" ] && [ "$bin" -nt "$top/bench/bench_mpit.h" ] &&
        [ "$bin" -nt "$top/bench/bench_args.h" ] &&
        [ "$bin" -nt "$cc" ]; then
        continue
    fi
    mkdir -p "$(dirname "$bin")"
    "$cc" -std=c11 -O2 -Wall -Wextra -Werror -o "$bin" "$top/bench/bench_mt.c" -lpthread ||
        { log "$cc failed to build bench-mt"; exit 1; }
    echo "$cc" >"$bin.mpicc"
    log "built $bin with $cc"
done

# ---- Runs -----------------------------------------------------------------------------

# run_watched FILE CMD...: runs CMD with its output in FILE, stopped after $timeout_s s,
# or $grace_s s after bench-mt printed its SENT line (the measurement is over then, and
# only the library's exit is left). Returns CMD's status, 124 when stopped.
run_watched() {
    local f=$1 pid ticks=0 done_at=-1 rc=0
    shift
    "$@" >"$f" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        sleep 0.2
        ticks=$((ticks + 1))
        if [ "$done_at" -lt 0 ] && grep -q '^SENT ' "$f"; then done_at=$ticks; fi
        if [ $ticks -ge $((timeout_s * 5)) ] ||
            { [ "$done_at" -ge 0 ] && [ $((ticks - done_at)) -ge $((grace_s * 5)) ]; }; then
            kill -TERM "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
            return 124
        fi
    done
    wait "$pid" || rc=$?
    return $rc
}

# run_one VARIANT VCIS RUN: one bench-mt run; its output in $out/mt-VARIANT-vVCIS.RUN.out.
run_one() {
    local v=$1 n=$2 r=$3 f env_args=() extra=() rc=0 name
    f=$out/mt-$v-v$n.$r.out
    name="$(label_of "$v") vcis=$n run $r"
    case $v in
    efarm)
        env_args=(EFARM_DEVICE=sim EFARM_EFASIM_PATH="$efasim_dir" MPIR_CVAR_NOLOCAL=1)
        extra=(-p efarm_nm_send_msgs -p efarm_nm_am_send -p efarm_tx_pkts)
        ;;
    ucx) env_args=("UCX_TLS=tcp,self" UCX_LOG_LEVEL=info HWLOC_HIDE_ERRORS=1 MPIR_CVAR_NOLOCAL=1) ;;
    tcp) env_args=(FI_PROVIDER="tcp;ofi_rxm" MPIR_CVAR_NOLOCAL=1 MPIR_CVAR_DEBUG_SUMMARY=1) ;;
    esac
    env_args+=(MPIR_CVAR_CH4_NUM_VCIS="$n")
    log "$name: ${env_args[*]} mpiexec -n 2 $(binary_of "$v") -t $threads -T $seconds ${bench_args[*]} ${extra[*]}"
    run_watched "$f" env "${env_args[@]}" "$(mpiexec_of "$v")" -n 2 "$(binary_of "$v")" \
        -t "$threads" -T "$seconds" "${bench_args[@]}" "${extra[@]}" || rc=$?
    if [ $rc -eq 124 ] && [ "$v" = ucx ] && grep -q '^SENT ' "$f"; then
        log "$name: measured and checked, then MPI_Finalize did not return in ${grace_s} s (UCX's tcp" \
            "transport at cleanup, openucx/ucx#8738); stopped, figures kept"
        hung+=("$name")
    elif [ $rc -ne 0 ]; then
        [ $rc -ne 124 ] || echo "run-mt-bench: stopped after $timeout_s s" >>"$f"
        grep -m 2 -E 'CHECK FAILED|Assertion failed|MPI_THREAD_MULTIPLE|Fatal error' "$f" | sed 's/^/    /' ||
            tail -n 5 "$f" | sed 's/^/    /'
        log "$name FAILED (exit $rc; output $f)"
        return 1
    fi
    check_run "$v" "$f" || { unverified+=("$name"); return 0; }
}

# The netmod carried the run; prints what it found.
check_run() {
    local v=$1 f=$2 line found lanes bad
    case $v in
    efarm)
        found=$(efarm_counters_check "$f" bench-mt) || { log "efarm: $found"; return 1; }
        log "efarm: counters show $found crossing efarm"
        ;;
    ucx)
        # UCX's lanes per endpoint configuration; those without self/ lead to the other rank.
        lanes=$(sed -n 's/.*ep_cfg\[[0-9]*\]: //p' "$f" | grep -v 'self/' | sort -u || true)
        bad=$(grep -o '[a-z_0-9]*/[A-Za-z_0-9.:-]*' <<<"$lanes" | grep -v '^tcp/' | sort -u | paste -sd' ' || true)
        if [ -z "$lanes" ] || [ -n "$bad" ]; then
            log "ucx: UCX's lanes to the other rank are not all tcp (${lanes:-none reported}${bad:+; not tcp: $bad})"
            return 1
        fi
        log "ucx: UCX's lanes to the other rank: $(paste -sd';' <<<"$lanes")"
        ;;
    tcp)
        line=$(grep -m 1 '^libfabric provider:' "$f" || true)
        if [ "$(sed -n 's/^libfabric provider: \(.*\) - .*/\1/p' <<<"$line")" != "tcp;ofi_rxm" ]; then
            log "tcp;ofi_rxm: MPICH did not report opening provider tcp;ofi_rxm ('${line:-no provider line}')"
            return 1
        fi
        log "tcp;ofi_rxm: MPICH reports '$line'"
        ;;
    esac
}

failed=()
unverified=()
hung=()
results=$out/mt-results.txt
rm -f "$out"/mt-*.out "$results"
log "load before the runs:$(uptime | sed 's/.*load average//')"
for r in $(seq 1 "$runs"); do
    for v in "${runnable[@]}"; do
        for n in ${vcis_by[$v]}; do
            if run_one "$v" "$n" "$r"; then
                # "variant:vcis run mode comm size threads metric value", one line per figure.
                awk -v col="$v:$n" -v r="$r" '$1 == "MT" {
                        delete kv
                        for (i = 2; i <= NF; i++) { split($i, p, "="); kv[p[1]] = p[2] }
                        n = split(kv["mode"] == "rate" ? "msgs_per_s per_thread_min per_thread_max" : "p50_us avg_us", m, " ")
                        for (i = 1; i <= n; i++)
                            print col, r, kv["mode"], kv["comm"], kv["size"], kv["threads"], m[i], kv[m[i]]
                    }' "$out/mt-$v-v$n.$r.out" >>"$results"
            else
                failed+=("$(label_of "$v") vcis=$n run $r")
            fi
        done
    done
done
touch "$results"
log "load after the runs:$(uptime | sed 's/.*load average//')"

# ---- Tables ---------------------------------------------------------------------------

echo
echo "bench-mt, 2 ranks on $(hostname), $(nproc) cores; median of $runs run(s) per figure;" \
    "bench-mt -t $threads -T $seconds ${bench_args[*]}"
echo "efarm: ch4:efarm on efasim ($efarm_prefix); ucx(tcp): Debian's MPICH" \
    "$("${ucx_mpiexec%/*}/mpichversion" 2>/dev/null | sed -n 's/^MPICH Version:[[:space:]]*//p') ch4:ucx," \
    "UCX_TLS=tcp,self; tcp;ofi_rxm: ch4:ofi; all MPIR_CVAR_NOLOCAL=1; columns variant:vcis"
joined() { local s; s=$(IFS=';'; echo "$*"); echo "${s//;/; }"; }
[ ${#skipped[@]} -eq 0 ] || echo "SKIPPED: $(joined "${skipped[@]}")"
[ ${#vcis_skipped[@]} -eq 0 ] || echo "SKIPPED (one VCI in that MPICH): $(joined "${vcis_skipped[@]}")"
[ ${#failed[@]} -eq 0 ] || echo "FAILED: $(joined "${failed[@]}") (figures come from the runs that completed)"
[ ${#unverified[@]} -eq 0 ] || echo "UNVERIFIED (the netmod check failed, see above): $(joined "${unverified[@]}")"
[ ${#hung[@]} -eq 0 ] || echo "STOPPED AT EXIT (measured and checked; MPI_Finalize hung): $(joined "${hung[@]}")"

cols=()
for v in "${runnable[@]}"; do
    for n in ${vcis_by[$v]}; do cols+=("$v:$n"); done
done
awk -v cols="${cols[*]}" '
    { key = $1 SUBSEP $3 SUBSEP $4 SUBSEP $5 SUBSEP $6 SUBSEP $7
      nv[key]++; val[key, nv[key]] = $8 + 0
      group[$3 SUBSEP $4 SUBSEP $5] = 1; thr[$6 + 0] = 1 }
    function median(key,    n, i, j, t, a) {
        n = nv[key]
        if (!n) return ""
        for (i = 1; i <= n; i++) a[i] = val[key, i]
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    function cell(c, g, th, metric) { return median(c SUBSEP g SUBSEP th SUBSEP metric) }
    function ratio(x, y) { return x == "" || y == "" || y + 0 <= 0 ? "-" : sprintf("%.2f", x / y) }
    function table(mode, comm, size,    g, metric, unit, c, t, line, x, vc, other, n, j) {
        g = mode SUBSEP comm SUBSEP size
        if (!(g in group)) return
        metric = mode == "rate" ? "msgs_per_s" : "p50_us"
        unit = mode == "rate" ? "messages/s over all threads (higher is better)" : "one-way us, median over all threads (lower is better)"
        printf "\n%s, comm=%s, %s-byte messages: %s\n", mode, comm, size, unit
        line = sprintf("%8s |", "threads")
        for (c = 1; c <= ncol; c++) line = line sprintf(" %13s", col[c])
        if (nratio) line = line " |"
        for (c = 1; c <= ncol; c++) if (col[c] ~ /^efarm:/)
            for (j = 1; j <= ncol; j++) if (col[j] !~ /^efarm:/ && vcis(col[j]) == vcis(col[c]))
                line = line sprintf(" %14s", "efarm/" name(col[j]) ":" vcis(col[c]))
        if (mode == "rate") {
            line = line " | scaling"
            for (c = 1; c <= ncol; c++) line = line sprintf(" %13s", col[c])
        }
        print line
        for (t = 1; t <= nthr; t++) {
            line = sprintf("%8d |", th[t])
            for (c = 1; c <= ncol; c++) {
                x = cell(col[c], g, th[t], metric)
                line = line sprintf(" %13s", x == "" ? "-" : sprintf(mode == "rate" ? "%.0f" : "%.2f", x))
            }
            if (nratio) line = line " |"
            for (c = 1; c <= ncol; c++) if (col[c] ~ /^efarm:/)
                for (j = 1; j <= ncol; j++) if (col[j] !~ /^efarm:/ && vcis(col[j]) == vcis(col[c]))
                    line = line sprintf(" %14s", ratio(cell(col[c], g, th[t], metric), cell(col[j], g, th[t], metric)))
            if (mode == "rate") {
                line = line " |        "
                for (c = 1; c <= ncol; c++)
                    line = line sprintf(" %13s", ratio(cell(col[c], g, th[t], metric), cell(col[c], g, th[1], metric)))
            }
            print line
        }
        if (mode == "rate") {
            print "  per thread, slowest / fastest (messages/s, medians):"
            for (t = 1; t <= nthr; t++) {
                line = sprintf("%8d |", th[t])
                for (c = 1; c <= ncol; c++) {
                    x = cell(col[c], g, th[t], "per_thread_min"); vc = cell(col[c], g, th[t], "per_thread_max")
                    line = line sprintf(" %13s", x == "" ? "-" : sprintf("%.0f/%.0f", x, vc))
                }
                print line
            }
        }
    }
    function vcis(c) { sub(/^[^:]*:/, "", c); return c }
    function name(c) { sub(/:.*/, "", c); return c }
    END {
        ncol = split(cols, col, " ")
        for (c = 1; c <= ncol; c++) for (j = 1; j <= ncol; j++)
            nratio += col[c] ~ /^efarm:/ && col[j] !~ /^efarm:/ && vcis(col[j]) == vcis(col[c])
        nthr = 0
        for (t in thr) th[++nthr] = t + 0
        for (i = 2; i <= nthr; i++)
            for (j = i; j > 1 && th[j - 1] > th[j]; j--) { x = th[j]; th[j] = th[j - 1]; th[j - 1] = x }
        for (g in group) { split(g, p, SUBSEP); sizes[p[3] + 0] = 1 }
        for (s in sizes)
            for (m = 1; m <= 2; m++)
                for (k = 1; k <= 2; k++)
                    table(m == 1 ? "rate" : "lat", k == 1 ? "own" : "shared", s)
    }' "$results"
echo
log "raw outputs $out/mt-<variant>-v<vcis>.<run>.out, figures $results"
[ ${#failed[@]} -eq 0 ] && [ ${#unverified[@]} -eq 0 ]
