#!/usr/bin/env bash
# MPI point-to-point over efarm on efasim next to MPICH's ch4:ofi on Debian's libfabric:
# the same MPICH 4.0.2 built with the same flags, the same benchmark (bench/bench_mpi.c,
# OSU-style latency, bw, bibw and msgrate), two ranks on this machine, one after the
# other. Prints the figures and the ratios efarm/udp and efarm/tcp per size, and draws
# build/bench/mpi-bench.png (latency and bandwidth, log axes).
#
#   bench/run-mpi-bench.sh [--runs N] [--quick] [--only efarm,udp,tcp] [--timeout S]
#                          [--no-install] [-- BENCH-MPI-ARGS...]
#
#   efarm  build/mpich/install (EFARM_MPICH_PREFIX), scripts/mpich-build.sh builds it;
#          EFARM_DEVICE=sim MPIR_CVAR_NOLOCAL=1
#   udp    build/mpich-ofi/install (EFARM_MPICH_OFI_CACHE/install), built here with
#          scripts/mpich-build.sh --netmod ofi when missing; FI_PROVIDER="udp;ofi_rxd"
#   tcp    the same MPICH with FI_PROVIDER="tcp;ofi_rxm"
#
# MPIR_CVAR_NOLOCAL=1 makes ch4 treat the two ranks as remote, so every message goes
# through the netmod instead of shared memory. That the netmod carried the traffic is
# checked, not assumed, in every run: ofi runs have MPIR_CVAR_DEBUG_SUMMARY=1 and must
# print MPICH's own "libfabric provider: <FI_PROVIDER> - ..." line (libfabric never
# opens a provider FI_PROVIDER does not name); efarm runs read efarm's MPI_T counters
# (bench-mpi -p) and efarm must have sent, natively or as active messages, at least as
# many messages as the benchmark's two ranks did (bench-mpi's SENT line). A run whose
# check fails keeps its figures but is reported UNVERIFIED and the exit status is 1.
#
# --runs N runs each variant N times, alternating, and keeps each figure's best run
# (lowest median latency, highest rate): the run least disturbed by other load on two
# cores. --quick is bench-mpi -i 0.1 -m 1M. Arguments after -- go to bench-mpi.
# Latency compares medians of the one-way times (bench-mpi's p50 column); the raw
# outputs, with averages, are kept in build/bench/mpi-<variant>.<run>.out.
#
# Dependencies only this benchmark needs are installed with apt-get when missing (as
# root; --no-install only checks): gnuplot-nox, libfabric-dev and, for the static link
# flags MPICH's configure takes from libfabric, libpsm2-dev librdmacm-dev
# libpsm-infinipath1-dev. The exit status is 1 when a variant failed or its check did.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out=${EFARM_BUILD_ROOT:-$top/build}/bench
efarm_prefix=${EFARM_MPICH_PREFIX:-$top/build/mpich/install}
ofi_prefix=${EFARM_MPICH_OFI_CACHE:-$top/build/mpich-ofi}/install
runs=1
only=efarm,udp,tcp
timeout_s=1800
install=yes
bench_args=()
deps=(gnuplot-nox libfabric-dev libpsm2-dev librdmacm-dev libpsm-infinipath1-dev)

usage() { sed -n '8,9p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case $1 in
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --quick) bench_args=(-i 0.1 -m 1M "${bench_args[@]}"); shift ;;
    --only) only=${2:?--only needs a list}; shift 2 ;;
    --timeout) timeout_s=${2:?--timeout needs seconds}; shift 2 ;;
    --no-install) install=no; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; bench_args+=("$@"); break ;;
    *) echo "run-mpi-bench: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
done
case $runs in '' | *[!0-9]* | 0) echo "run-mpi-bench: --runs $runs: a number from 1" >&2; exit 2 ;; esac
case $timeout_s in '' | *[!0-9]* | 0) echo "run-mpi-bench: --timeout $timeout_s: seconds" >&2; exit 2 ;; esac
variants=()
for v in ${only//,/ }; do
    case $v in
    efarm | udp | tcp) variants+=("$v") ;;
    *) echo "run-mpi-bench: --only: unknown variant '$v' (efarm, udp, tcp)" >&2; exit 2 ;;
    esac
done
[ ${#variants[@]} -gt 0 ] || { echo "run-mpi-bench: --only names no variant" >&2; exit 2; }
wants() { [[ " ${variants[*]} " == *" $1 "* ]]; }

mkdir -p "$out"
log() { echo "run-mpi-bench: $*"; }

# ---- Dependencies and the two MPICH builds ------------------------------------------

missing=()
for p in "${deps[@]}"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' ||
        missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$install" = yes ] && [ "$(id -u)" = 0 ]; then
        log "installing ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            "${missing[@]}" >"$out/apt.log" 2>&1 ||
            { tail -n 20 "$out/apt.log"; log "apt-get failed (log: $out/apt.log)"; exit 1; }
    else
        log "missing: ${missing[*]} (apt-get install them as root)"
        exit 1
    fi
fi

if wants efarm && [ ! -x "$efarm_prefix/bin/mpicc" ]; then
    log "no $efarm_prefix/bin/mpicc: run scripts/mpich-build.sh first"
    exit 1
fi
if { wants udp || wants tcp; } && [ ! -x "$ofi_prefix/bin/mpicc" ]; then
    log "no $ofi_prefix/bin/mpicc: building MPICH ch4:ofi (15-25 minutes on 2 cores)"
    "$top/scripts/mpich-build.sh" --netmod ofi --prefix "$ofi_prefix"
fi

# ---- bench-mpi, built by each MPICH's own mpicc -------------------------------------

prefix_of() { if [ "$1" = efarm ]; then echo "$efarm_prefix"; else echo "$ofi_prefix"; fi; }
binary_of() { if [ "$1" = efarm ]; then echo "$out/efarm/bench-mpi"; else echo "$out/ofi/bench-mpi"; fi; }
label_of() {
    case $1 in
    efarm) echo "efarm" ;;
    udp) echo "udp;ofi_rxd" ;;
    tcp) echo "tcp;ofi_rxm" ;;
    esac
}

for v in "${variants[@]}"; do
    bin=$(binary_of "$v")
    [ ! -x "$bin" ] || [ "$bin" -ot "$top/bench/bench_mpi.c" ] ||
        [ "$bin" -ot "$(prefix_of "$v")/bin/mpicc" ] || continue
    mkdir -p "$(dirname "$bin")"
    "$(prefix_of "$v")/bin/mpicc" -std=c11 -O2 -Wall -Wextra -Werror \
        -o "$bin" "$top/bench/bench_mpi.c"
    log "built $bin"
done

# ---- Runs ----------------------------------------------------------------------------

efarm_pvars=(-p efarm_nm_send_msgs -p efarm_nm_am_send -p efarm_nm_send_bytes -p efarm_tx_pkts
    -p efarm_rx_bytes)

# run_one VARIANT RUN: one bench-mpi run; its output in $out/mpi-VARIANT.RUN.out.
run_one() {
    local v=$1 r=$2 f=$out/mpi-$1.$2.out prefix env_args=() extra=() rc=0
    prefix=$(prefix_of "$v")
    case $v in
    efarm)
        env_args=(EFARM_DEVICE=sim MPIR_CVAR_NOLOCAL=1)
        extra=("${efarm_pvars[@]}")
        ;;
    *) env_args=(FI_PROVIDER="$(label_of "$v")" MPIR_CVAR_NOLOCAL=1 MPIR_CVAR_DEBUG_SUMMARY=1) ;;
    esac
    log "$(label_of "$v") run $r: ${env_args[*]} mpiexec -n 2 $(binary_of "$v") ${bench_args[*]} ${extra[*]}"
    env "${env_args[@]}" timeout "$timeout_s" "$prefix/bin/mpiexec" -n 2 \
        "$(binary_of "$v")" "${bench_args[@]}" "${extra[@]}" >"$f" 2>&1 || rc=$?
    if [ $rc -ne 0 ]; then
        [ $rc -ne 124 ] || echo "run-mpi-bench: timed out after $timeout_s s" >>"$f"
        tail -n 15 "$f" | sed 's/^/    /'
        log "$(label_of "$v") run $r FAILED (exit $rc; output $f)"
        return 1
    fi
    check_run "$v" "$f" || unverified+=("$(label_of "$v") run $r")
}

# The netmod carried the run: for ofi MPICH names the provider it opened; for efarm its
# counters show every message. Prints what it found.
check_run() {
    local v=$1 f=$2 line found
    case $v in
    efarm)
        if grep -q '^PVAR efarm_nm_.* missing' "$f"; then
            log "efarm: MPI_T counters efarm_nm_* missing: cannot tell that traffic crossed efarm"
            return 1
        fi
        # efarm's messages (native sends + active messages) against bench-mpi's SENT count.
        found=$(awk '$1 == "PVAR" && ($2 == "efarm_nm_send_msgs" || $2 == "efarm_nm_am_send") {
                n += $3} $1 == "SENT" {sent = $2}
            END {printf "%d of the %d messages bench-mpi sent", n, sent; exit n >= sent && sent > 0 ? 0 : 1}' "$f") || {
            log "efarm: efarm sent $found: not all traffic crossed efarm"
            return 1
        }
        log "efarm: counters show $found crossing efarm ($(awk '$1 == "PVAR" {
            printf "%s%s=%s", sep, $2, $3; sep = ", "}' "$f"))"
        ;;
    *)
        line=$(grep -m 1 '^libfabric provider:' "$f" || true)
        if [ "$(echo "$line" | sed -n 's/^libfabric provider: \(.*\) - .*/\1/p')" != "$(label_of "$v")" ]; then
            log "$(label_of "$v"): MPICH did not report opening provider $(label_of "$v") ('${line:-no provider line}')"
            return 1
        fi
        log "$(label_of "$v"): MPICH reports '$line'"
        ;;
    esac
}

failed=()
unverified=()
rm -f "$out"/mpi-*.out "$out/mpi-results.txt"
for r in $(seq 1 "$runs"); do
    for v in "${variants[@]}"; do
        if run_one "$v" "$r"; then
            awk -v v="$v" '$1 == "RESULT" {print v, $2, $3, $4}' "$out/mpi-$v.$r.out" \
                >>"$out/mpi-results.txt"
        else
            [[ " ${failed[*]} " == *" $v "* ]] || failed+=("$v")
        fi
    done
done
touch "$out/mpi-results.txt"

# ---- Table ---------------------------------------------------------------------------

echo
echo "MPI point-to-point, 2 ranks on $(hostname), $(nproc) cores; MPICH 4.0.2, same flags;" \
    "best of $runs run(s); bench-mpi ${bench_args[*]:-(defaults)}"
echo "efarm: ch4:efarm on efasim; udp, tcp: ch4:ofi, libfabric" \
    "$(pkg-config --modversion libfabric 2>/dev/null || echo '?') FI_PROVIDER=udp;ofi_rxd," \
    "tcp;ofi_rxm; all with MPIR_CVAR_NOLOCAL=1"
[ ${#failed[@]} -eq 0 ] || echo "FAILED: ${failed[*]} (their columns are '-')"
[ ${#unverified[@]} -eq 0 ] || echo "UNVERIFIED (the netmod check failed, see above): ${unverified[*]}"

# Best figure per variant, test and size; then one table per test, and gnuplot's data
# (bytes efarm udp tcp, '?' when missing) in $out/mpi-TEST.dat.
awk -v out="$out" '
    { key = $2 " " $3; v = $1; x = $4 + 0; tests[$2] = 1; sizes[$2, $3] = 1
      if (!((v, key) in best) || ($2 ~ /^latency/ ? x < best[v, key] : x > best[v, key]))
          best[v, key] = x }
    function cell(v, key) { return (v, key) in best ? best[v, key] : "-" }
    function ratio(v, w, key) {
        if (!((v, key) in best) || !((w, key) in best) || best[w, key] <= 0) return "-"
        return sprintf("%.2f", best[v, key] / best[w, key]) }
    function table(test, title, unit, fmt,    n, s, i, j, t, key, list) {
        if (!(test in tests)) return
        n = 0
        for (i in sizes) { split(i, s, SUBSEP); if (s[1] == test) list[++n] = s[2] + 0 }
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && list[j - 1] > list[j]; j--) { t = list[j]; list[j] = list[j - 1]; list[j - 1] = t }
        printf "\n%s\n", title
        printf "%10s | %12s %12s %12s | %9s %9s\n", "bytes", "efarm", "udp;ofi_rxd", "tcp;ofi_rxm", "efarm/udp", "efarm/tcp"
        dat = out "/mpi-" test ".dat"
        printf "# bytes efarm udp tcp (%s)\n", unit > dat
        for (i = 1; i <= n; i++) {
            key = test " " list[i]
            printf "%10d | %12s %12s %12s | %9s %9s\n", list[i], fmtc(cell("efarm", key), fmt),
                fmtc(cell("udp", key), fmt), fmtc(cell("tcp", key), fmt),
                ratio("efarm", "udp", key), ratio("efarm", "tcp", key)
            printf "%d %s %s %s\n", list[i], dq(cell("efarm", key)), dq(cell("udp", key)), dq(cell("tcp", key)) > dat
        }
        close(dat)
    }
    function fmtc(c, fmt) { return c == "-" ? c : sprintf(fmt, c) }
    function dq(c) { return c == "-" ? "?" : c }
    END {
        table("latency_p50", "latency: one-way us, median (lower is better; efarm/x < 1: efarm faster)", "us", "%.2f")
        table("bw", "bandwidth: MB/s, windows of 64 (higher is better; efarm/x > 1: efarm faster)", "MB/s", "%.1f")
        table("bibw", "bi-directional bandwidth: MB/s, both directions (higher is better)", "MB/s", "%.1f")
        table("msgrate", "message rate: 8-byte messages per second (higher is better)", "msg/s", "%.0f")
    }' "$out/mpi-results.txt"

# ---- Plot ----------------------------------------------------------------------------

png=$out/mpi-bench.png
if [ -s "$out/mpi-latency_p50.dat" ] || [ -s "$out/mpi-bw.dat" ]; then
    {
        echo "set terminal pngcairo size 1400,560 font ',10'"
        echo "set output '$png'"
        echo "set datafile missing '?'"
        echo "set logscale xy; set grid; set key top left; set format x '%.0s%cB'; set autoscale xfix"
        echo "set xlabel 'message size (bytes)'"
        echo "set multiplot layout 1,2 title 'MPICH 4.0.2, 2 ranks, $(hostname): efarm on efasim vs ch4:ofi (libfabric)'"
        if [ -s "$out/mpi-latency_p50.dat" ]; then
            echo "set title 'latency (one-way, median)'; set ylabel 'us'"
            echo "plot '$out/mpi-latency_p50.dat' using (\$1 > 0 ? \$1 : 1/0):2 with linespoints lw 2 title 'efarm', \\"
            echo "     '' using (\$1 > 0 ? \$1 : 1/0):3 with linespoints lw 2 title 'udp;ofi\\_rxd', \\"
            echo "     '' using (\$1 > 0 ? \$1 : 1/0):4 with linespoints lw 2 title 'tcp;ofi\\_rxm'"
        fi
        if [ -s "$out/mpi-bw.dat" ]; then
            echo "set title 'bandwidth (solid: bw, dashed: bibw)'; set ylabel 'MB/s'; set key top left"
            printf "plot '%s' using 1:2 with linespoints lw 2 lc 1 title 'efarm bw', " "$out/mpi-bw.dat"
            printf "'' using 1:3 with linespoints lw 2 lc 2 title 'udp;ofi\\\\_rxd bw', "
            printf "'' using 1:4 with linespoints lw 2 lc 3 title 'tcp;ofi\\\\_rxm bw'"
            if [ -s "$out/mpi-bibw.dat" ]; then
                printf ", '%s' using 1:2 with lines dt 2 lw 2 lc 1 title 'efarm bibw', " "$out/mpi-bibw.dat"
                printf "'' using 1:3 with lines dt 2 lw 2 lc 2 title 'udp;ofi\\\\_rxd bibw', "
                printf "'' using 1:4 with lines dt 2 lw 2 lc 3 title 'tcp;ofi\\\\_rxm bibw'"
            fi
            echo
        fi
        echo "unset multiplot"
    } >"$out/mpi-bench.gp"
    if gnuplot "$out/mpi-bench.gp" 2>"$out/gnuplot.log"; then
        echo
        log "plot $png (script $out/mpi-bench.gp)"
    else
        cat "$out/gnuplot.log"
        log "gnuplot failed"
        failed+=(plot)
    fi
fi
log "raw outputs $out/mpi-<variant>.<run>.out, figures $out/mpi-results.txt"
[ ${#failed[@]} -eq 0 ] && [ ${#unverified[@]} -eq 0 ]
