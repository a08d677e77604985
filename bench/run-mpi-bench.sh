#!/usr/bin/env bash
# MPI point-to-point over efarm on efasim next to MPICH's ch4:ofi on Debian's libfabric:
# the same MPICH 4.0.2 built with the same flags, the same benchmark (bench/bench_mpi.c,
# OSU-style latency, bw, bibw and msgrate), two ranks on this machine, one after the
# other. Prints the figures and the ratios efarm/efa, efarm/udp and efarm/tcp per size,
# and draws build/bench/mpi-bench.png (latency and bandwidth, log axes, and efarm's
# instructions per 8-byte round trip by object: bench/run-instr-bench.sh under valgrind,
# unless --no-instr).
#
#   bench/run-mpi-bench.sh [--runs N] [--quick] [--only efarm,efa,udp,tcp] [--timeout S]
#                          [--no-install] [--no-instr] [-- BENCH-MPI-ARGS...]
#
#   efarm  build/mpich/install (EFARM_MPICH_PREFIX), scripts/mpich-build.sh builds it;
#          EFARM_DEVICE=sim MPIR_CVAR_NOLOCAL=1
#   efa    build/mpich-ofi/install (EFARM_MPICH_OFI_CACHE/install), built here with
#          scripts/mpich-build.sh --netmod ofi when missing; libfabric's own EFA
#          provider on the same efasim as efarm (the same-device anchor):
#          FI_PROVIDER=efa FI_EFA_ENABLE_SHM_TRANSFER=0 MPIR_CVAR_NOLOCAL=1, with
#          efasim's libibverbs/libefa first on LD_LIBRARY_PATH (EFARM_EFASIM_PATH, by
#          default the efasim efarm's prefix installed, PREFIX/lib/efarm/efasim) and
#          SYSFS_PATH at efasim's sysfs view (as `efasim-info --env` prints them)
#   udp    the same MPICH with FI_PROVIDER="udp;ofi_rxd"
#   tcp    the same MPICH with FI_PROVIDER="tcp;ofi_rxm"
#
# efarm and efa run the same efasim build, so their ratio compares the two EFA RDM
# protocol implementations (efarm's engine and netmod against libfabric's efa provider
# under ch4:ofi) on one device; udp and tcp put that in the light of libfabric's
# socket providers, which need no device.
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
only=efarm,efa,udp,tcp
efasim_dir=${EFARM_EFASIM_PATH:-$efarm_prefix/lib/efarm/efasim}
timeout_s=1800
install=yes
instr=yes
bench_args=()
deps=(gnuplot-nox libfabric-dev libpsm2-dev librdmacm-dev libpsm-infinipath1-dev hwloc-nox)

usage() { sed -n '10,11p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case $1 in
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --quick) bench_args=(-i 0.1 -m 1M "${bench_args[@]}"); shift ;;
    --only) only=${2:?--only needs a list}; shift 2 ;;
    --timeout) timeout_s=${2:?--timeout needs seconds}; shift 2 ;;
    --no-install) install=no; shift ;;
    --no-instr) instr=no; shift ;;
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
    efarm | efa | udp | tcp) variants+=("$v") ;;
    *) echo "run-mpi-bench: --only: unknown variant '$v' (efarm, efa, udp, tcp)" >&2; exit 2 ;;
    esac
done
[ ${#variants[@]} -gt 0 ] || { echo "run-mpi-bench: --only names no variant" >&2; exit 2; }
wants() { [[ " ${variants[*]} " == *" $1 "* ]]; }

mkdir -p "$out"
log() { echo "run-mpi-bench: $*"; }
# shellcheck source=bench/efarm-counters.sh
. "$top/bench/efarm-counters.sh"

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
if { wants efa || wants udp || wants tcp; } && [ ! -x "$ofi_prefix/bin/mpicc" ]; then
    log "no $ofi_prefix/bin/mpicc: building MPICH ch4:ofi (15-25 minutes on 2 cores)"
    "$top/scripts/mpich-build.sh" --netmod ofi --prefix "$ofi_prefix"
fi

# ---- bench-mpi, built by each MPICH's own mpicc -------------------------------------

prefix_of() { if [ "$1" = efarm ]; then echo "$efarm_prefix"; else echo "$ofi_prefix"; fi; }
binary_of() { if [ "$1" = efarm ]; then echo "$out/efarm/bench-mpi"; else echo "$out/ofi/bench-mpi"; fi; }
label_of() {
    case $1 in
    efarm) echo "efarm" ;;
    efa) echo "efa" ;;
    udp) echo "udp;ofi_rxd" ;;
    tcp) echo "tcp;ofi_rxm" ;;
    esac
}

for v in "${variants[@]}"; do
    bin=$(binary_of "$v")
    [ ! -x "$bin" ] || [ "$bin" -ot "$top/bench/bench_mpi.c" ] ||
        [ "$bin" -ot "$top/bench/bench_mpit.h" ] || [ "$bin" -ot "$top/bench/bench_args.h" ] ||
        [ "$bin" -ot "$(prefix_of "$v")/bin/mpicc" ] || continue
    mkdir -p "$(dirname "$bin")"
    "$(prefix_of "$v")/bin/mpicc" -std=c11 -O2 -Wall -Wextra -Werror \
        -o "$bin" "$top/bench/bench_mpi.c"
    log "built $bin"
done

# ---- efasim, for efarm and for libfabric's efa provider --------------------------------

# efasim_topology: scripts/efasim-env.sh.
# shellcheck source=scripts/efasim-env.sh
. "$top/scripts/efasim-env.sh"

# Programs linked against Debian's rdma-core (libfabric's efa provider) reach efasim by
# its libibverbs.so.1 and libefa.so.1 coming first on the loader path, and libfabric
# reads sysfs itself (the device's driver and PCI address, the verbs ABI version):
# efasim-info --run prints that environment (LD_LIBRARY_PATH, SYSFS_PATH at efasim's
# sysfs view, FI_EFA_ENABLE_SHM_TRANSFER=0). efarm loads the same directory itself
# (EFARM_EFASIM_PATH), so both variants run one efasim build.
efasim_env=()
if wants efa || wants efarm; then
    if [ ! -e "$efasim_dir/libibverbs.so.1" ] || [ ! -e "$efasim_dir/libefa.so.1" ]; then
        log "no efasim in $efasim_dir (libibverbs.so.1, libefa.so.1): set EFARM_EFASIM_PATH"
        exit 1
    fi
fi
if wants efa; then
    efasim_info=$efarm_prefix/bin/efasim-info
    [ -x "$efasim_info" ] || { log "no $efasim_info: run scripts/mpich-build.sh first"; exit 1; }
    while IFS= read -r line; do
        case $line in LD_LIBRARY_PATH=* | SYSFS_PATH=* | FI_EFA_ENABLE_SHM_TRANSFER=*) efasim_env+=("$line") ;; esac
    done < <(LD_LIBRARY_PATH="$efasim_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$efasim_info" --run env 2>/dev/null || true)
    if ! printf '%s\n' "${efasim_env[@]}" | grep -q '^SYSFS_PATH='; then
        log "$efasim_info --run gave no SYSFS_PATH: this efasim has no sysfs view for libfabric"
        exit 1
    fi
    # MPICH's ch4:ofi places each NIC libfabric reports in hwloc's topology by its PCI
    # address and asserts that it is there (MPIR_hwtopo_get_dev_parent_by_pci, from
    # ofi_nic.c). hwloc reads the real /sys, where efasim's PCI functions (in its sysfs
    # view) do not exist: give hwloc this machine's topology with them added, as on a
    # host with EFA NICs, unless efasim's environment already names one.
    if ! printf '%s\n' "${efasim_env[@]}" | grep -q '^HWLOC_XMLFILE='; then
        topo=$out/efasim-topology.xml
        efasim_topology "$(printf '%s\n' "${efasim_env[@]}" | sed -n 's/^SYSFS_PATH=//p')" "$topo" ||
            { log "cannot write $topo (lstopo-no-graphics from hwloc-nox)"; exit 1; }
        efasim_env+=(HWLOC_XMLFILE="$topo" HWLOC_THISSYSTEM=1)
    fi
    log "efa: efasim's environment: ${efasim_env[*]}"
fi

# ---- Runs ----------------------------------------------------------------------------

efarm_pvars=(-p efarm_nm_send_msgs -p efarm_nm_am_send -p efarm_nm_send_bytes -p efarm_tx_pkts
    -p efarm_rx_bytes)

# run_one VARIANT RUN: one bench-mpi run; its output in $out/mpi-VARIANT.RUN.out.
run_one() {
    local v=$1 r=$2 f=$out/mpi-$1.$2.out prefix env_args=() extra=() rc=0
    prefix=$(prefix_of "$v")
    case $v in
    efarm)
        env_args=(EFARM_DEVICE=sim EFARM_EFASIM_PATH="$efasim_dir" MPIR_CVAR_NOLOCAL=1)
        extra=("${efarm_pvars[@]}")
        ;;
    efa)
        # FI_EFA_ENABLE_SHM_TRANSFER=0 last, whatever efasim-info says: the two ranks
        # share efasim's GID, and libfabric would send through its shm provider.
        env_args=("${efasim_env[@]}" FI_PROVIDER=efa FI_EFA_ENABLE_SHM_TRANSFER=0
            MPIR_CVAR_NOLOCAL=1 MPIR_CVAR_DEBUG_SUMMARY=1)
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
        # efarm's messages (native sends + active messages) against bench-mpi's SENT count.
        found=$(efarm_counters_check "$f" bench-mpi) || { log "efarm: $found"; return 1; }
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
            failed+=("$(label_of "$v")/run$r")
        fi
    done
done
touch "$out/mpi-results.txt"

# ---- Table ---------------------------------------------------------------------------

all_variants=(efarm efa udp tcp) # column order of the tables and of the .dat files
echo
echo "MPI point-to-point, 2 ranks on $(hostname), $(nproc) cores; MPICH 4.0.2, same flags;" \
    "best of $runs run(s); bench-mpi ${bench_args[*]:-(defaults)}"
echo "efarm: ch4:efarm on efasim; efa, udp, tcp: ch4:ofi, libfabric" \
    "$(pkg-config --modversion libfabric 2>/dev/null || echo '?') FI_PROVIDER=efa (on the same" \
    "efasim, FI_EFA_ENABLE_SHM_TRANSFER=0), udp;ofi_rxd, tcp;ofi_rxm; all with MPIR_CVAR_NOLOCAL=1"
[ ${#failed[@]} -eq 0 ] ||
    echo "FAILED: ${failed[*]} (figures come from the runs that completed; '-' where none did)"
[ ${#unverified[@]} -eq 0 ] || echo "UNVERIFIED (the netmod check failed, see above): ${unverified[*]}"

# Best figure per variant, test and size; then one table per test with a column per
# variant run and the ratios efarm/x, and gnuplot's data (bytes efarm efa udp tcp, '?'
# when missing) in $out/mpi-TEST.dat.
labels=()
for v in "${all_variants[@]}"; do labels+=("$(label_of "$v")"); done
awk -v out="$out" -v all="${all_variants[*]}" -v shown="${variants[*]}" -v labels="${labels[*]}" '
    BEGIN { nall = split(all, av, " "); split(labels, lab, " ")
            for (i = 1; i <= nall; i++) label[av[i]] = lab[i]
            nshown = 0
            for (i = 1; i <= nall; i++) if (index(" " shown " ", " " av[i] " ")) col[++nshown] = av[i] }
    { key = $2 " " $3; v = $1; x = $4 + 0; tests[$2] = 1; sizes[$2, $3] = 1
      if (!((v, key) in best) || ($2 ~ /^latency/ ? x < best[v, key] : x > best[v, key]))
          best[v, key] = x }
    function cell(v, key) { return (v, key) in best ? best[v, key] : "-" }
    function ratio(v, w, key) {
        if (!((v, key) in best) || !((w, key) in best) || best[w, key] <= 0) return "-"
        return sprintf("%.2f", best[v, key] / best[w, key]) }
    function table(test, title, unit, fmt,    n, s, i, j, t, key, list, line, dline) {
        if (!(test in tests)) return
        n = 0
        for (i in sizes) { split(i, s, SUBSEP); if (s[1] == test) list[++n] = s[2] + 0 }
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && list[j - 1] > list[j]; j--) { t = list[j]; list[j] = list[j - 1]; list[j - 1] = t }
        printf "\n%s\n", title
        line = sprintf("%10s |", "bytes")
        for (c = 1; c <= nshown; c++) line = line sprintf(" %12s", label[col[c]])
        line = line " |"
        for (c = 1; c <= nshown; c++) if (col[c] != "efarm") line = line sprintf(" %10s", "efarm/" col[c])
        print line
        dat = out "/mpi-" test ".dat"
        printf "# bytes %s (%s)\n", all, unit > dat
        for (i = 1; i <= n; i++) {
            key = test " " list[i]
            line = sprintf("%10d |", list[i])
            for (c = 1; c <= nshown; c++) line = line sprintf(" %12s", fmtc(cell(col[c], key), fmt))
            line = line " |"
            for (c = 1; c <= nshown; c++) if (col[c] != "efarm") line = line sprintf(" %10s", ratio("efarm", col[c], key))
            print line
            dline = list[i]
            for (c = 1; c <= nall; c++) dline = dline " " dq(cell(av[c], key))
            print dline > dat
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

# ---- Instructions per round trip (bench/run-instr-bench.sh) ---------------------------

# efarm's build only: callgrind's counts per object, empty progress calls fitted out;
# $out/mpi-instr.dat holds "object rank0 rank1" for the plot.
instr_dat=$out/mpi-instr.dat
rm -f "$instr_dat"
if wants efarm && [ "$instr" = yes ]; then
    if ! command -v valgrind >/dev/null; then
        log "valgrind is not installed: no instruction counts (apt-get install valgrind)"
    elif bash "$top/bench/run-instr-bench.sh" --prefix "$efarm_prefix" >"$out/mpi-instr.out" 2>&1; then
        echo
        echo "instructions per 8-byte MPI_Send/MPI_Recv round trip and rank (callgrind, the calling" \
            "thread, empty progress calls fitted out; bench/run-instr-bench.sh, $out/mpi-instr.out):"
        awk '$1 == "INSTR" { v[$3, $2] = $4; o[$3] = 1 }
            END {
                printf "%12s %8s %8s\n", "object", "rank 0", "rank 1"
                n = split("efarm mpich libc device", order, " ")
                for (k = 1; k <= n; k++) if (order[k] in o)
                    printf "%12s %8s %8s\n", order[k], v[order[k], 0], v[order[k], 1]
                printf "%12s %8d %8d\n", "efarm+mpich", v["efarm", 0] + v["mpich", 0], v["efarm", 1] + v["mpich", 1]
                printf "# object rank0 rank1\n" > dat
                for (k = 1; k <= n; k++) if (order[k] in o)
                    printf "%s %s %s\n", order[k], v[order[k], 0], v[order[k], 1] > dat
            }' dat="$instr_dat" "$out/mpi-instr.out"
        grep '^TARGET' "$out/mpi-instr.out" | sed 's/^/  /'
    else
        tail -n 20 "$out/mpi-instr.out"
        log "run-instr-bench.sh failed (log: $out/mpi-instr.out)"
        failed+=(instr)
    fi
fi

# ---- Plot ----------------------------------------------------------------------------

# gnuplot's title of a variant (underscores escaped) and its column in the .dat files.
gp_title() { label_of "$1" | sed 's/_/\\_/g'; }
gp_col() {
    local i
    for i in "${!all_variants[@]}"; do [ "${all_variants[i]}" != "$1" ] || echo $((i + 2)); done
}

png=$out/mpi-bench.png
if [ -s "$out/mpi-latency_p50.dat" ] || [ -s "$out/mpi-bw.dat" ]; then
    {
        panels=2
        [ ! -s "$instr_dat" ] || panels=3
        echo "set terminal pngcairo size $((700 * panels)),560 font ',10'"
        echo "set output '$png'"
        echo "set datafile missing '?'"
        echo "set logscale xy; set grid; set key top left; set format x '%.0s%cB'; set autoscale xfix"
        echo "set xlabel 'message size (bytes)'"
        echo "set multiplot layout 1,$panels title 'MPICH 4.0.2, 2 ranks, $(hostname): efarm on efasim vs ch4:ofi (libfabric)'"
        if [ -s "$out/mpi-latency_p50.dat" ]; then
            echo "set title 'latency (one-way, median)'; set ylabel 'us'"
            sep="plot '$out/mpi-latency_p50.dat'"
            for v in "${variants[@]}"; do
                printf "%s using (\$1 > 0 ? \$1 : 1/0):%s with linespoints lw 2 lc %s title '%s'" \
                    "$sep" "$(gp_col "$v")" "$(($(gp_col "$v") - 1))" "$(gp_title "$v")"
                sep=", ''"
            done
            echo
        fi
        if [ -s "$out/mpi-bw.dat" ]; then
            echo "set title 'bandwidth (solid: bw, dashed: bibw)'; set ylabel 'MB/s'; set key top left"
            sep="plot '$out/mpi-bw.dat'"
            for v in "${variants[@]}"; do
                printf "%s using 1:%s with linespoints lw 2 lc %s title '%s bw'" \
                    "$sep" "$(gp_col "$v")" "$(($(gp_col "$v") - 1))" "$(gp_title "$v")"
                sep=", ''"
            done
            if [ -s "$out/mpi-bibw.dat" ]; then
                sep=", '$out/mpi-bibw.dat'"
                for v in "${variants[@]}"; do
                    printf "%s using 1:%s with lines dt 2 lw 2 lc %s title '%s bibw'" \
                        "$sep" "$(gp_col "$v")" "$(($(gp_col "$v") - 1))" "$(gp_title "$v")"
                    sep=", ''"
                done
            fi
            echo
        fi
        if [ -s "$instr_dat" ]; then
            echo "unset logscale; set format x '%g'; set autoscale x; set yrange [0:*]; set xlabel ''"
            echo "set title 'efarm: instructions per 8-byte round trip (callgrind)'; set ylabel 'instructions'"
            echo "set style data histograms; set style histogram clustered; set style fill solid 0.6; set boxwidth 0.8"
            echo "plot '$instr_dat' using 2:xtic(1) title 'rank 0', '' using 3 title 'rank 1'"
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
