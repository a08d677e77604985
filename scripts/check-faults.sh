#!/usr/bin/env bash
# The fault matrix: MPICH's pt2pt, rma and coll test directories and efarm's
# test/mpi, over ch4:efarm on efasim, under each kind of fault alone and all
# of them at once (`make check-faults`).
#
#   scripts/check-faults.sh [--prefix PREFIX] [--subset full|ci] [--slice ci]
#                           [--configs "loss dup ..."] [--suites "mpich mpi"]
#                           [--dirs "pt2pt rma coll"] [--seed N] [--out DIR] [--list]
#                           [--only FILE] [--source DIR] [--front-end verbs|kernel]
#
# Configurations (efasim's knobs, src/efasim/README.md; every fault knob not named
# is 0, so each row is that fault alone):
#   loss     EFASIM_LOSS=0.1              10% of datagrams dropped
#   dup      EFASIM_DUP=0.1               10% of datagrams sent twice
#   reorder  EFASIM_REORDER=0.2           20% of datagrams held behind 1-4 later ones
#   jitter   EFASIM_DELAY=0.3 EFASIM_DELAY_US=2000 EFASIM_JITTER=1
#                                         30% of datagrams held a random 0-2 ms
#   rnr      EFASIM_RNR_STALL_US=2000 EFASIM_RNR_STALL_PERIOD_US=10000
#                                         RNR storms: every QP refuses sends 2 ms in 10
#   sq       EFASIM_MAX_SQ_WR=16          send-queue exhaustion: 16-WR device queues
#   net      loss, dup and reorder at once (the network's faults; --faults alone)
#   all      all six at once
# Suites:
#   mpich    scripts/mpich-testsuite.sh --faults --dirs "pt2pt rma coll" --subset
#            SUBSET (full: every test of the three directories; ci: the fixed CI
#            lists), without a time budget and with 300 s a test (a test's own
#            limit from MPICH's list, up to 900 s, or efarm's overrides wins). Tests that rely on an order MPI does not promise are skipped
#            with their reason (test/mpich-testlists/faults-skip).
#   mpi      test/mpi/run-mpi-tests.sh, every run (runs that set their own efasim
#            faults keep them), with a 300 s limit per run.
# Every test runs under scripts/hang-guard.sh: a hang is a failure whose log holds
# the stack of every rank. Payloads are checked by the programs themselves (MPICH's
# tests compare what arrived with what was sent; test/mpi's programs fill every
# buffer from a seed and check every byte).
#
# --slice ci is what CI runs: `net` on the mpich suite's CI lists of pt2pt and
# coll, and `rnr`, `sq`, `jitter` and `all` on a fixed handful of test/mpi runs
# (pt2pt sizes, probe, ssend, collectives, native and emulated RMA): every kind
# of fault in 290 s (c684028, slow 2-core VM: 262 passed; net/mpich 238 tests
# in 223 s). MPICH's rma list under `net` is not in the slice
# (176 tests, 520 s on a quiet 2-core VM, more than CI's budget allows); RMA
# under loss, duplication and reordering is in CI through test/mpi's
# rma_native-faults-n2 and rma_dynamic-faults-n4, and through the slice's `all`
# runs. `--configs net --suites mpich --subset ci` runs the whole list.
# --dirs narrows the mpich suite to some of its three directories, so a long
# configuration can be run (and recorded) one directory at a time.
# --seed N (default 1) is EFASIM_SEED.
# --only FILE runs only the mpich suite's tests whose ids match a line of FILE
# (scripts/mpich-testsuite.sh --only: ID-GLOBs): a cell's failures again, or the
# rest of a cell that was stopped (each test seeds efasim alike, whatever ran
# before it). It needs --suites mpich.
# --front-end kernel runs both suites with efarm on its EFA path, the system's
# rdma-core over efasim's kernel front end (scripts/efasim-env.sh; the default,
# verbs, is efasim's drop-in): the same faults, from the same device model.
# --source DIR is the MPICH source tree whose test suite the mpich suite runs
# (scripts/mpich-testsuite.sh --source): 4.0.2's tree for an MPICH 5.0.1 or 4.3.2
# prefix, as CI does, since an export of their tags cannot build its own suite.
#
# Output: each suite's lines tagged with [CONFIG/SUITE] ("PASS [all/mpi] probe-n4 ..."),
# then the matrix (passed
# and failed per configuration and suite) and "N passed, N failed"; exits nonzero
# if anything failed. Logs: DIR (default build/check-faults)/CONFIG/SUITE.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
prefix=${EFARM_MPICH_PREFIX:-${EFARM_MPICH_CACHE:-$top/build/mpich}/install}
subset=full
slice=
configs=
suites="mpich mpi"
seed=1
out=${EFARM_BUILD_ROOT:-$top/build}/check-faults
list=0
dirs_opt=
only=
source=
front_end=verbs

# NAME|ENVIRONMENT|WHAT: the one table of configurations.
table=(
    "loss|EFASIM_LOSS=0.1|10% of datagrams dropped"
    "dup|EFASIM_DUP=0.1|10% of datagrams sent twice"
    "reorder|EFASIM_REORDER=0.2|20% of datagrams held behind 1-4 later ones"
    "jitter|EFASIM_DELAY=0.3 EFASIM_DELAY_US=2000 EFASIM_JITTER=1|30% of datagrams held a random 0-2 ms"
    "rnr|EFASIM_RNR_STALL_US=2000 EFASIM_RNR_STALL_PERIOD_US=10000|RNR storms: each QP refuses sends 2 ms in every 10"
    "sq|EFASIM_MAX_SQ_WR=16|send-queue exhaustion: device send queues of 16 WRs"
)
all_env=
for row in "${table[@]}"; do
    IFS='|' read -r _ env _ <<<"$row"
    all_env="$all_env $env"
done
table+=("net|EFASIM_LOSS=0.1 EFASIM_DUP=0.1 EFASIM_REORDER=0.2|loss, duplication and reordering at once")
table+=("all|${all_env# }|all six at once")
# Every fault knob, 0 unless a configuration sets it.
fault_zero="EFASIM_LOSS=0 EFASIM_DUP=0 EFASIM_REORDER=0 EFASIM_DELAY=0 EFASIM_RNR_STALL_US=0"
# MPICH's test directories the mpich suite runs (--dirs picks some).
mpich_dirs="pt2pt rma coll"
# The CI slice: MPICH's directories under `net`, and test/mpi's runs under the others.
slice_mpich_dirs="pt2pt coll"
slice_mpi_runs="pt2pt_sizes-n2 probe-n4 ssend-n2 collectives-n4 rma_native-n2 rma_native-emulated-n2"

usage() { sed -n '2,/^set -uo pipefail/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case $1 in
    --prefix) prefix=${2:?--prefix needs a directory}; shift ;;
    --subset) subset=${2:?--subset needs full or ci}; shift ;;
    --slice) slice=${2:?--slice needs ci}; shift ;;
    --configs) configs=${2:?--configs needs names}; shift ;;
    --suites) suites=${2:?--suites needs names}; shift ;;
    --dirs) dirs_opt=${2:?--dirs needs directory names}; shift ;;
    --seed) seed=${2:?--seed needs a number}; shift ;;
    --out) out=${2:?--out needs a directory}; shift ;;
    --only) only=${2:?--only needs a file}; shift ;;
    --source) source=${2:?--source needs a directory}; shift ;;
    --front-end) front_end=${2:?--front-end needs verbs or kernel}; shift ;;
    --list) list=1 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "check-faults: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
case $subset in full | ci) ;; *) echo "check-faults: --subset is full or ci" >&2; exit 2 ;; esac
case $slice in "" | ci) ;; *) echo "check-faults: --slice is ci" >&2; exit 2 ;; esac
case $front_end in verbs | kernel) ;; *) echo "check-faults: --front-end is verbs or kernel" >&2; exit 2 ;; esac
[[ $seed =~ ^[0-9]+$ ]] || { echo "check-faults: --seed is a number" >&2; exit 2; }

env_of() { # NAME: its environment, or nothing when not in the table
    local row name env
    for row in "${table[@]}"; do
        IFS='|' read -r name env _ <<<"$row"
        [ "$name" = "$1" ] && { echo "$env"; return 0; }
    done
    return 1
}

if [ $list = 1 ]; then
    for row in "${table[@]}"; do
        IFS='|' read -r name env what <<<"$row"
        printf '%-8s %-52s %s\n' "$name" "$what" "$env"
    done
    exit 0
fi

# The runs: CONFIG SUITE pairs.
runs=()
if [ "$slice" = ci ]; then
    runs=("net mpich" "rnr mpi" "sq mpi" "jitter mpi" "all mpi")
    subset=ci
else
    for row in "${table[@]}"; do
        IFS='|' read -r name _ _ <<<"$row"
        [ -z "$configs" ] || [[ " $configs " == *" $name "* ]] || continue
        for s in $suites; do runs+=("$name $s"); done
    done
fi
for c in $configs; do
    env_of "$c" >/dev/null || { echo "check-faults: no configuration $c (see --list)" >&2; exit 2; }
done
for d in $dirs_opt; do
    [[ " $mpich_dirs " == *" $d "* ]] || { echo "check-faults: no directory $d ($mpich_dirs)" >&2; exit 2; }
done
[ -z "$dirs_opt" ] || [ -z "$slice" ] || { echo "check-faults: --dirs and --slice do not mix" >&2; exit 2; }
if [ -n "$only" ]; then
    [ "$suites" = mpich ] && [ -z "$slice" ] ||
        { echo "check-faults: --only needs --suites mpich and no --slice" >&2; exit 2; }
    [ -r "$only" ] || { echo "check-faults: --only: cannot read $only" >&2; exit 2; }
    only=$(cd "$(dirname "$only")" && pwd)/$(basename "$only")
fi
for s in $suites; do
    case $s in mpich | mpi) ;; *) echo "check-faults: no suite $s (mpich, mpi)" >&2; exit 2 ;; esac
done
if [ ! -x "$prefix/bin/mpiexec" ]; then
    echo "FAIL check-faults: no MPICH in $prefix (build it with scripts/mpich-build.sh)"
    echo "0 passed, 1 failed"
    exit 1
fi

# Outside the CI slice no time budget, and 300 s a test: under `all` a test of a
# few seconds can take a hundred. The slice's pt2pt and coll lists under `net`
# took 210 s on a quiet 2-core VM (pt2pt 50 tests in 55 s, coll 187 in 154 s);
# the slice gives them 600 s, so a slower machine or a neighbour does not turn
# it red.
limits=(--budget 600)
dirs=${dirs_opt:-$mpich_dirs}
[ "$slice" = ci ] && dirs=$slice_mpich_dirs
[ "$slice" = ci ] || limits=(--budget 0 --timeout 300 --max-timeout 900)
passed=0
failed=0
declare -A cell=()
t_start=$SECONDS
for r in "${runs[@]}"; do
    read -r config suite <<<"$r"
    env=$(env_of "$config")
    dir=$out/$config/$suite
    rm -rf "$dir"
    mkdir -p "$dir"
    echo "check-faults: $config/$suite: $env"
    t0=$SECONDS
    # shellcheck disable=SC2086 # lists of VAR=VALUE words
    if [ "$suite" = mpich ]; then
        env $fault_zero $env EFASIM_SEED="$seed" \
            bash "$top/scripts/mpich-testsuite.sh" --prefix "$prefix" --subset "$subset" \
            --dirs "$dirs" --faults --logs "$dir/logs" "${limits[@]}" ${only:+--only "$only"} ${source:+--source "$source"} \
            --front-end "$front_end" \
            >"$dir/out.txt" 2>&1
    else
        filter=()
        [ "$slice" = ci ] && read -r -a filter <<<"$slice_mpi_runs"
        env $fault_zero $env EFASIM_SEED="$seed" MPITEST_BUILD_DIR="$dir/mpitest" \
            bash "$top/test/mpi/run-mpi-tests.sh" --prefix "$prefix" --timeout 300 \
            --front-end "$front_end" "${filter[@]}" >"$dir/out.txt" 2>&1
    fi
    # "PASS [CONFIG/SUITE] ...", as test-all.sh's suite lines read them; other lines tagged too.
    sed -E -e '/^[0-9]+ passed, [0-9]+ failed$/d' \
        -e "s#^(PASS|FAIL|SKIP|XFAIL|XPASS) #\\1 [$config/$suite] #; t" -e "s#^#[$config/$suite] #" \
        "$dir/out.txt"
    summary=$(tail -n 1 "$dir/out.txt")
    if [[ $summary =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]}
    else
        echo "FAIL [$config/$suite] the runner ended without a summary (see $dir/out.txt)"
        p=0 f=1
    fi
    passed=$((passed + p))
    failed=$((failed + f))
    cell[$config/$suite]="$p/$f ($((SECONDS - t0)) s)"
done

echo
echo "check-faults: the matrix, passed/failed (time), $front_end front end, seed $seed, subset $subset$([ -n "$slice" ] && echo ", slice $slice")$([ -n "$dirs_opt" ] && echo ", mpich directories $dirs_opt")"
printf '%-8s %-22s %-22s %s\n' config mpich mpi what
for row in "${table[@]}"; do
    IFS='|' read -r name _ what <<<"$row"
    [ -n "${cell[$name/mpich]:-}${cell[$name/mpi]:-}" ] || continue
    printf '%-8s %-22s %-22s %s\n' "$name" "${cell[$name/mpich]:--}" "${cell[$name/mpi]:--}" "$what"
done
echo "check-faults: $((SECONDS - t_start)) s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
