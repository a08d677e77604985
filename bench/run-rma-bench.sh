#!/bin/bash
# MPI one-sided benchmarks (bench-rma) with two ranks on this machine: efarm's
# native RMA by RDMA (efasim with RDMA write), efarm's emulated one-sided
# subprotocols (EAGER_RTW, LONGCTS_RTW, SHORT_RTR, LONGCTS_RTR), efarm on a
# device with RDMA read only (rdread: gets by RDMA read, large puts by
# LONGREAD_RTW, as on an EFA without RDMA write), efarm with every RMA
# operation through MPICH's active messages, and ch4:ofi on tcp;ofi_rxm.
# Prints each figure, the targets of issue 12 measured against the same run's
# send/recv round trip, the ratios between variants, and writes
# build/bench/rma-bench.png (gnuplot, when installed).
#
#   bench/run-rma-bench.sh [--only efarm,emulated,rdread,am,tcp] [--quick] [-- BENCH-ARGS...]
#
# efarm's MPICH comes from scripts/mpich-build.sh (build/mpich/install); the tcp
# variant needs build/mpich-ofi/install (bench/run-mpi-bench.sh builds it) and is
# skipped with a note when it is missing.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out=${EFARM_BUILD_ROOT:-$top/build}/bench
efarm_prefix=${EFARM_MPICH_PREFIX:-$top/build/mpich/install}
ofi_prefix=${EFARM_MPICH_OFI_CACHE:-$top/build/mpich-ofi}/install
only=efarm,emulated,rdread,am,tcp
bench_args=()
timeout_s=1200

while [ $# -gt 0 ]; do
    case $1 in
    --only) only=${2:?--only needs a list}; shift 2 ;;
    --quick) bench_args=(-i 0.2 -m 1M -b 2 "${bench_args[@]}"); shift ;;
    -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; bench_args+=("$@"); break ;;
    *) echo "run-rma-bench: unknown argument $1" >&2; exit 2 ;;
    esac
done
log() { echo "run-rma-bench: $*"; }
mkdir -p "$out/efarm" "$out/ofi"

[ -x "$efarm_prefix/bin/mpicc" ] || { log "no $efarm_prefix/bin/mpicc: run scripts/mpich-build.sh"; exit 1; }
build() { # PREFIX BIN
    if [ ! -x "$2" ] || [ "$2" -ot "$top/bench/bench_rma.c" ]; then
        "$1/bin/mpicc" -std=c11 -O2 -Wall -Wextra -Werror -o "$2" "$top/bench/bench_rma.c"
    fi
}
build "$efarm_prefix" "$out/efarm/bench-rma"

pvars=(-p efarm_nm_rma_native_ops -p efarm_nm_rma_fallback_ops -p efarm_rma_direct_write
    -p efarm_rma_direct_read -p efarm_rma_eager_rtw -p efarm_rma_short_rtr
    -p efarm_rma_longcts_rtw -p efarm_rma_longread_rtw -p efarm_rma_longcts_rtr)
variants=()
for v in ${only//,/ }; do
    case $v in
    efarm | emulated | rdread | am) variants+=("$v") ;;
    tcp)
        if [ -x "$ofi_prefix/bin/mpicc" ]; then
            build "$ofi_prefix" "$out/ofi/bench-rma"
            variants+=(tcp)
        else
            log "tcp skipped: no $ofi_prefix/bin/mpicc (bench/run-mpi-bench.sh --only tcp builds it)"
        fi
        ;;
    *) log "--only: unknown variant $v (efarm, emulated, am, tcp)"; exit 2 ;;
    esac
done

run() { # VARIANT
    local v=$1 f=$out/rma-$1.out
    case $v in
    efarm) env EFARM_DEVICE=sim MPIR_CVAR_NOLOCAL=1 EFASIM_RDMA_WRITE=1 \
        timeout "$timeout_s" "$efarm_prefix/bin/mpiexec" -n 2 "$out/efarm/bench-rma" "${pvars[@]}" "${bench_args[@]}" ;;
    emulated) env EFARM_DEVICE=sim MPIR_CVAR_NOLOCAL=1 EFARM_RDMA_WRITE=0 EFARM_RDMA_READ=0 \
        timeout "$timeout_s" "$efarm_prefix/bin/mpiexec" -n 2 "$out/efarm/bench-rma" "${pvars[@]}" "${bench_args[@]}" ;;
    rdread) env EFARM_DEVICE=sim MPIR_CVAR_NOLOCAL=1 EFARM_RDMA_WRITE=0 \
        timeout "$timeout_s" "$efarm_prefix/bin/mpiexec" -n 2 "$out/efarm/bench-rma" "${pvars[@]}" "${bench_args[@]}" ;;
    am) env EFARM_DEVICE=sim MPIR_CVAR_NOLOCAL=1 EFARM_RMA_NATIVE=0 \
        timeout "$timeout_s" "$efarm_prefix/bin/mpiexec" -n 2 "$out/efarm/bench-rma" "${pvars[@]}" "${bench_args[@]}" ;;
    tcp) env FI_PROVIDER="tcp;ofi_rxm" MPIR_CVAR_NOLOCAL=1 \
        timeout "$timeout_s" "$ofi_prefix/bin/mpiexec" -n 2 "$out/ofi/bench-rma" "${bench_args[@]}" ;;
    esac >"$f" 2>&1 || { log "$v failed (log: $f)"; tail -n 20 "$f"; return 1; }
    log "$v done"
}
for v in "${variants[@]}"; do run "$v"; done

# value VARIANT TEST BYTES
value() { awk -v t="$2" -v s="$3" '$1 == "RESULT" && $2 == t && $3 == s { print $4 }' "$out/rma-$1.out"; }
pvar() { awk -v n="$2" '$1 == "PVAR" && $2 == n { print $3 + $4 }' "$out/rma-$1.out"; }

# The path each efarm variant took, from efarm's counters.
for v in efarm emulated rdread am; do
    [[ " ${variants[*]} " == *" $v "* ]] || continue
    printf '%-9s native ops %s, fallback %s; RDMA write %s, read %s; EAGER_RTW %s, SHORT_RTR %s,' "$v" \
        "$(pvar "$v" efarm_nm_rma_native_ops)" "$(pvar "$v" efarm_nm_rma_fallback_ops)" \
        "$(pvar "$v" efarm_rma_direct_write)" "$(pvar "$v" efarm_rma_direct_read)" \
        "$(pvar "$v" efarm_rma_eager_rtw)" "$(pvar "$v" efarm_rma_short_rtr)"
    printf ' LONGCTS_RTW %s, LONGREAD_RTW %s, LONGCTS_RTR %s\n' \
        "$(pvar "$v" efarm_rma_longcts_rtw)" "$(pvar "$v" efarm_rma_longread_rtw)" \
        "$(pvar "$v" efarm_rma_longcts_rtr)"
done

echo
printf '%-10s %9s' test bytes
for v in "${variants[@]}"; do printf ' %12s' "$v"; done
for v in "${variants[@]}"; do [ "$v" = efarm ] || printf ' %12s' "efarm/$v"; done
echo
keys=$(awk '$1 == "RESULT" { print $2, $3 }' "$out/rma-${variants[0]}.out")
while read -r t s; do
    printf '%-10s %9s' "$t" "$s"
    for v in "${variants[@]}"; do printf ' %12s' "$(value "$v" "$t" "$s")"; done
    e=$(value efarm "$t" "$s" 2>/dev/null || true)
    for v in "${variants[@]}"; do
        [ "$v" = efarm ] && continue
        o=$(value "$v" "$t" "$s")
        if [ -n "$e" ] && [ -n "$o" ]; then
            awk -v a="$e" -v b="$o" 'BEGIN { if (b > 0) printf " %12.2f", a / b; else printf " %12s", "-" }'
        else
            printf ' %12s' -
        fi
    done
    echo
done <<<"$keys"

# Issue 12's targets, against the same run's 8-byte send/recv round trip.
if [[ " ${variants[*]} " == *" efarm "* ]]; then
    rt=$(value efarm pingpong 8)
    echo
    echo "targets (efarm, RDMA): 8-byte send/recv round trip $rt us"
    target() { # LABEL FIGURE LIMIT_US
        awk -v l="$1" -v f="$2" -v r="$rt" -v lim="$3" 'BEGIN {
            printf "  %-34s %9.2f us, %+.2f us vs round trip (target <= +%s): %s\n", l, f, f - r, lim,
                (f - r <= lim) ? "met" : "NOT met" }'
    }
    target "put 8 B + flush" "$(value efarm put_lat 8)" 1
    target "get 8 B + flush" "$(value efarm get_lat 8)" 1
    target "fetch_and_op + flush" "$(value efarm fop_lat 8)" 1.5
    pb=$(value efarm put_busy_max 8)
    gb=$(value efarm get_busy_max 8)
    echo "  slowest put / get while the target computes: $pb / $gb us"
fi

if command -v gnuplot >/dev/null; then
    for v in "${variants[@]}"; do
        awk '$1 == "RESULT" && ($2 == "put_lat" || $2 == "get_lat") { print $2, $3, $4 }' "$out/rma-$v.out" >"$out/rma-$v.lat"
        awk '$1 == "RESULT" && ($2 == "put_bw" || $2 == "get_bw") { print $2, $3, $4 }' "$out/rma-$v.out" >"$out/rma-$v.bw"
    done
    {
        echo "set terminal png size 1200,500; set output '$out/rma-bench.png'"
        echo "set multiplot layout 1,2; set logscale xy; set key left top; set xlabel 'bytes'"
        printf "set ylabel 'us'; set title 'put/get + flush latency'; plot"
        sep=""
        for v in "${variants[@]}"; do
            printf "%s '%s' using 2:(\$1 eq \"put_lat\" ? \$3 : 1/0) with lp title '%s put', '%s' using 2:(\$1 eq \"get_lat\" ? \$3 : 1/0) with lp title '%s get'" \
                "$sep" "$out/rma-$v.lat" "$v" "$out/rma-$v.lat" "$v"
            sep=","
        done
        echo
        printf "set ylabel 'MB/s'; set title 'put/get bandwidth'; plot"
        sep=""
        for v in "${variants[@]}"; do
            printf "%s '%s' using 2:(\$1 eq \"put_bw\" ? \$3 : 1/0) with lp title '%s put', '%s' using 2:(\$1 eq \"get_bw\" ? \$3 : 1/0) with lp title '%s get'" \
                "$sep" "$out/rma-$v.bw" "$v" "$out/rma-$v.bw" "$v"
            sep=","
        done
        echo
    } | gnuplot && log "plot: $out/rma-bench.png"
fi
