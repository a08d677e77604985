#!/usr/bin/env bash
# Quick start, step 1: install dependencies, build efarm and MPICH 4.0.2 with
# ch4:efarm, and run the main job: a 2-rank MPI run over efarm on efasim (the
# emulated EFA device) that prints point-to-point latency and bandwidth.
#
# MPIR_CVAR_NOLOCAL=1 sends the two ranks' traffic through efarm (without it,
# ranks on one node use MPICH's shared memory). The run ends with efarm's MPI_T
# counters and a verdict: how many of the benchmark's messages efarm carried
# and by which subprotocols. The tables go to build/bench/quickstart.txt and a
# plot of latency and bandwidth to build/bench/quickstart.png. The first run
# builds MPICH (about 5 minutes on 2 cores, with a progress line a minute); later
# runs reuse build/mpich.
#
#   quickstart.sh                   all of it
#   quickstart.sh --report FILE     only the verdict and the plot, from a saved
#                                   bench-mpi output (the PNG goes next to FILE)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
root=${EFARM_BUILD_ROOT:-$top/build}
build=$root/gcc
protos="eager medium longcts longread runtread"

# report TABLES: the verdict line (appended to TABLES) and TABLES' plot as a PNG
# beside it. Exits 1 when efarm did not carry every message of the benchmark.
report() {
    local tables=$1 base sent carried used= n p verdict status=0
    base=${tables%.txt}
    # The benchmark's messages (SENT) against those efarm sent (its count also
    # holds MPI's own messages: barriers, the counter exchange).
    sent=$(awk '$1 == "SENT" { print $2 }' "$tables")
    carried=$(awk '$1 == "PVAR" && $2 == "efarm_nm_send_msgs" { print $3 }' "$tables")
    for p in $protos; do
        n=$(awk -v v="efarm_proto_$p" '$1 == "PVAR" && $2 == v { print $3 }' "$tables")
        if [ "${n:-0}" -gt 0 ]; then used="$used${used:+, }$p ($n)"; fi
    done
    if [ -z "$sent" ] || [ -z "$carried" ]; then
        echo "verdict: the benchmark did not report its messages or efarm's counters (see above)"
        return 1
    elif [ "$carried" -ge "$sent" ]; then
        verdict="efarm carried $sent of $sent messages; subprotocols used: ${used:-none}"
    else
        verdict="efarm carried only $carried of $sent messages (the rest did not cross efarm); subprotocols used: ${used:-none}"
        status=1
    fi
    echo "verdict: $verdict" | tee -a "$tables"

    # The plot: one-way latency (median) and bandwidth against message size, log axes.
    awk '$1 == "RESULT" && $2 == "latency_p50" { print $3, $4 }' "$tables" >"$base-latency.dat"
    awk '$1 == "RESULT" && $2 == "bw" { print $3, $4 }' "$tables" >"$base-bw.dat"
    local panels=2
    [ -s "$base-bw.dat" ] || panels=1
    {
        echo "set terminal pngcairo size $((600 * panels)),500 font ',10'"
        echo "set output '$base.png'"
        echo "set multiplot layout 1,$panels title \"MPICH + ch4:efarm on efasim, 2 ranks: $verdict\" font ',9'"
        echo "set logscale x 2"
        echo "set format x '%.0b%BB'"
        echo "set xlabel 'message size'"
        echo "set grid"
        echo "set key off"
        echo "set logscale y 10"
        echo "set ylabel 'one-way latency, median (us)'"
        echo "set title 'latency'"
        echo "plot '$base-latency.dat' using (\$1 > 0 ? \$1 : 0.5):2 with linespoints pt 7"
        if [ "$panels" = 2 ]; then
            echo "set ylabel 'bandwidth (MB/s)'"
            echo "set title 'bandwidth'"
            echo "plot '$base-bw.dat' using 1:2 with linespoints pt 7"
        fi
        echo "unset multiplot"
    } >"$base.gp"
    if ! command -v gnuplot >/dev/null 2>&1; then
        echo "quickstart: tables in $tables; no plot (gnuplot-nox is not installed)"
    elif gnuplot "$base.gp" 2>"$base-gnuplot.log"; then
        echo "quickstart: tables in $tables, plot in $base.png"
    else
        echo "quickstart: tables in $tables; gnuplot failed ($(tail -n 1 "$base-gnuplot.log"))"
        status=1
    fi
    return $status
}

if [ "${1:-}" = --report ]; then
    report "${2:?--report needs the bench-mpi output file}"
    exit
fi

"$top/scripts/install-deps.sh"
[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh)
mkdir -p "$build"
cd "$build"
[ -f Makefile ] || "$top/configure" -q CC=gcc
echo "quickstart: building efarm in $build"
make -s -j2

"$top/scripts/mpich-build.sh"
prefix=${EFARM_MPICH_PREFIX:-$root/mpich/install}
out=$root/bench
mkdir -p "$out"
"$prefix/bin/mpicc" -O2 -o "$out/bench-mpi" "$top/bench/bench_mpi.c"

pvars=(-p efarm_nm_send_msgs -p efarm_nm_send_bytes -p efarm_tx_pkts)
for p in $protos; do pvars+=(-p "efarm_proto_$p"); done
echo "== MPI over efarm on efasim: mpiexec -n 2 bench-mpi =="
EFARM_DEVICE=sim MPIR_CVAR_NOLOCAL=1 "$prefix/bin/mpiexec" -n 2 "$out/bench-mpi" \
    -t latency,bw -m 1M "${pvars[@]}" | tee "$out/quickstart.txt"

report "$out/quickstart.txt"
