#!/usr/bin/env bash
# Where a multithreaded efarm run spends its CPU, per VCI count (issue 42): bench-mt's
# rate pattern (bench/bench_mt.c: 8-byte messages, a communicator per thread) between
# two ranks on efasim, recorded with perf for each count of --vcis in turn, and the
# share of the samples (both ranks, every thread) that went to:
#   wire     efasim's UDP datagrams: sendmsg, sendmmsg and recvmmsg, kernel time included
#   yield    sched_yield, which idle progress calls make so ranks sharing cores let the
#            other run (EFARM_YIELD_POLLS)
#   futex    threads blocked on or waking a lock (the kernel's futex calls): a VCI's
#            lock wanted by several threads at once shows here
#   user     the user-space code of MPICH (libmpi), efarm (libefarm), efasim
#            (its libibverbs) and libc, each
#
#   bench/run-mt-perf.sh [--prefix P] [--vcis 1,4] [--threads 2] [--seconds 3]
#
# P is a per-VCI MPICH (scripts/mpich-build.sh ... -- --enable-thread-cs=per-vci;
# default build/mpich-5.0.1/install). Prints one line per VCI count:
#   PERF vcis=N threads=T msgs_per_s=R wire=% yield=% futex=% libmpi=% libefarm=% efasim=% libc=%
# The rate is what bench-mt measured while perf sampled (perf costs a little of it);
# shares are of all samples. perf.data files stay in build/bench/mt-perf-vN.data. No
# figure is judged: the exit status is nonzero only when a run or perf fails.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out=${EFARM_BUILD_ROOT:-$top/build}/bench
prefix=$top/build/mpich-5.0.1/install
vcis_list=1,4
threads=2
seconds=3

while [ $# -gt 0 ]; do
    case $1 in
    --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
    --vcis) vcis_list=${2:?--vcis needs a list}; shift 2 ;;
    --threads) threads=${2:?--threads needs a number}; shift 2 ;;
    --seconds) seconds=${2:?--seconds needs a number}; shift 2 ;;
    -h | --help) sed -n '15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run-mt-perf: unknown argument $1" >&2; exit 2 ;;
    esac
done
case $vcis_list in '' | *[!0-9,]* | ,* | *,) echo "run-mt-perf: --vcis $vcis_list: a list like 1,4" >&2; exit 2 ;; esac
case $threads in '' | *[!0-9]* | 0) echo "run-mt-perf: --threads $threads: a number from 1" >&2; exit 2 ;; esac
case $seconds in '' | *[!0-9.]*) echo "run-mt-perf: --seconds $seconds: a number" >&2; exit 2 ;; esac
command -v perf >/dev/null || { echo "run-mt-perf: perf is not installed (Debian: linux-perf)" >&2; exit 1; }
[ -x "$prefix/bin/mpicc" ] || { echo "run-mt-perf: no $prefix/bin/mpicc (--prefix)" >&2; exit 1; }
"$prefix/bin/mpichversion" | grep -q -- '--enable-thread-cs=per-vci' ||
    echo "run-mt-perf: $prefix is not built with per-VCI critical sections: every count runs on one VCI"

mkdir -p "$out"
bin=$out/bench-mt-perf
"$prefix/bin/mpicc" -std=c11 -O2 -Wall -Wextra -Werror -o "$bin" "$top/bench/bench_mt.c" -lpthread

# share FILE PATTERN: the percentage of samples with a symbol matching PATTERN on their
# call chain (--children: the symbol and what it called, each sample counted once).
share() {
    perf report -i "$1" --stdio -g none --percent-limit 0 --children --sort sym 2>/dev/null |
        awk -v pat="$2" '!/^#/ && NF >= 2 && $0 ~ pat { v = $1; sub(/%/, "", v); if (v + 0 > best) best = v + 0 }
                         END { printf "%.1f", best + 0 }'
}
# dso_share FILE DSO-PATTERN: the self time of the matching DSOs, summed.
dso_share() {
    perf report -i "$1" --stdio -g none --percent-limit 0 --no-children --sort dso 2>/dev/null |
        awk -v pat="$2" '!/^#/ && NF >= 2 && $2 ~ pat { v = $1; sub(/%/, "", v); s += v } END { printf "%.1f", s + 0 }'
}

for v in ${vcis_list//,/ }; do
    data=$out/mt-perf-v$v.data
    log=$out/mt-perf-v$v.out
    env LD_LIBRARY_PATH="$prefix/lib" EFARM_DEVICE=sim MPIR_CVAR_NOLOCAL=1 MPIR_CVAR_CH4_NUM_VCIS="$v" \
        perf record -q -F 499 -g -o "$data" -- \
        "$prefix/bin/mpiexec" -n 2 "$bin" -m rate -c own -t "$threads" -T "$seconds" >"$log" 2>&1 ||
        { echo "run-mt-perf: the run at $v VCIs failed (log $log)" >&2; tail -n 5 "$log" >&2; exit 1; }
    rate=$(sed -n 's/^MT mode=rate .* msgs_per_s=\([0-9]*\).*/\1/p' "$log")
    # The wire: the largest inclusive share among the three datagram calls' entry points
    # is not enough (they add up), so each is taken and summed.
    send=$(share "$data" '\] (__libc_sendmsg|__sendmsg)$')
    sendm=$(share "$data" '\] __sendmmsg$')
    recvm=$(share "$data" '\] __recvmmsg$')
    wire=$(awk -v a="$send" -v b="$sendm" -v c="$recvm" 'BEGIN { printf "%.1f", a + b + c }')
    yield=$(share "$data" '\] __sched_yield$')
    futex=$(share "$data" '\] (__x64_sys_futex|do_futex)$')
    echo "PERF vcis=$v threads=$threads msgs_per_s=${rate:-?} wire=$wire% yield=$yield% futex=$futex%" \
        "libmpi=$(dso_share "$data" '^libmpi')% libefarm=$(dso_share "$data" '^libefarm')%" \
        "efasim=$(dso_share "$data" '^libibverbs|^libefa')% libc=$(dso_share "$data" '^libc')%"
done
