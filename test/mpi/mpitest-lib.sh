# Shared by run-mpi-tests.sh and run-two-hosts.sh (sourced; bash): options,
# PASS/FAIL lines, run selection and building a test program with MPICH's mpicc.
# The sourcing script sets `out` and `timeout_s` (defaults) and `usage_lines`
# (the range of its header that --help prints) first.
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
prefix=${EFARM_MPICH_PREFIX:-${EFARM_MPICH_CACHE:-$top/build/mpich}/install}
front_end=verbs
mpicc_name=mpicc
filters=()
excepts=()
while [ $# -gt 0 ]; do
    case $1 in
    --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    --front-end) front_end=${2:?--front-end needs verbs or kernel}; shift 2 ;;
    --except) excepts+=("${2:?--except needs a run name}"); shift 2 ;;
    --mpicc) mpicc_name=${2:?--mpicc needs a wrapper of the prefix, such as mpicc_abi}; shift 2 ;;
    --front-end=*) front_end=${1#--front-end=}; shift ;;
    --timeout) timeout_s=${2:?--timeout needs seconds}; shift 2 ;;
    -h | --help) sed -n "${usage_lines}p" "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "$(basename "$0"): unknown option $1 (see --help)" >&2; exit 2 ;;
    *) filters+=("$1"); shift ;;
    esac
done

passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { # NAME LOG: the log's last lines or, after a hang, the top of each process's stack
    echo "FAIL $1 (log: $2)"
    if [ -f "$2" ] && grep -q '^hang-guard: stack of' "$2"; then
        grep -A8 '^hang-guard: stack of' "$2" | grep -e '^hang-guard' -e '^#' | head -n 40 |
            sed 's/^/    /'
    elif [ -f "$2" ]; then
        tail -n 15 "$2" | sed 's/^/    /'
    fi
    failed=$((failed + 1))
}

# --mpicc mpicc_abi: the programs are compiled against the MPI standard ABI (MPICH
# 5.0's libmpi_abi, scripts/mpich-build.sh --abi) and run on it.
mpicc=$prefix/bin/$mpicc_name
mpiexec=$prefix/bin/mpiexec

# The environment that puts efarm on efasim (scripts/efasim-env.sh): device_env.
# shellcheck source=scripts/efasim-env.sh
. "$top/scripts/efasim-env.sh"
if [ -x "$mpicc" ] && ! efasim_device_env "$front_end" "$prefix"; then
    echo "FAIL front-end: no environment for the $front_end front end"
    echo "0 passed, 1 failed"
    exit 1
fi

# selected NAME: false when NAME starts with an --except; else true when no filter was
# given or NAME starts with one.
selected() {
    local f
    for f in "${excepts[@]}"; do
        case $1 in "$f"*) return 1 ;; esac
    done
    [ ${#filters[@]} -eq 0 ] && return 0
    for f in "${filters[@]}"; do
        case $1 in "$f"*) return 0 ;; esac
    done
    return 1
}

# build_prog PROG: test/mpi/PROG.c with the helpers into $out/PROG, once;
# built[PROG] says ok or failed (a FAIL line names the log).
declare -A built=()
build_prog() {
    [ -n "${built[$1]:-}" ] && return 0
    local log=$out/logs/build-$1.log
    if "$mpicc" -std=c11 -O2 -g -Wall -Wextra -Werror -I"$top/test/mpi" -I"$top/test/common" -o "$out/$1" \
        "$top/test/mpi/$1.c" "$top/test/mpi/efarm_mpitest.c" >"$log" 2>&1; then
        built[$1]=ok
    else
        built[$1]=failed
        fail "build-$1" "$log"
    fi
}

# build_topo_xml LOG: test/common's efarm-topo-xml (hwloc XML of a machine model,
# for EFARM_TOPOLOGY) into $out/efarm-topo-xml, its compiler's output in LOG.
build_topo_xml() {
    cc -std=c11 -O2 -Wall -Wextra -Werror -I"$top/test/common" -o "$out/efarm-topo-xml" \
        "$top/test/common/topo_xml.c" "$top/test/common/topo_xml_main.c" -lhwloc >"$1" 2>&1
}

# judge NAME PROG RANKS [VARS]: a run that must pass, from $status, $secs and $log; with
# MPITEST_LOG_EXPECT=PATTERN among VARS the log must also match PATTERN (grep -E).
judge() {
    local want
    want=$(sed -n 's/.*MPITEST_LOG_EXPECT=\([^ ]*\).*/\1/p' <<<"${4:-}")
    if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
        fail "$1 (timeout ${timeout_s} s)" "$log"
    elif [ "$status" -ne 0 ]; then
        fail "$1 (exit $status, ${secs} s)" "$log"
    elif ! grep -q "^$2: OK ($3 ranks)" "$log"; then
        fail "$1 (no OK line, ${secs} s)" "$log"
    elif [ -n "$want" ] && ! grep -Eq "$want" "$log"; then
        fail "$1 (log lacks '$want', ${secs} s)" "$log"
    else
        pass "$1 (${secs} s)"
    fi
}

# Hydra's teardown when every rank fails at once can lose the ranks' stderr: its
# proxy writes a PMI answer to a rank that already exited ("Broken pipe"), and
# mpiexec ends on "assert (!closed)" before forwarding what the ranks printed (seen
# once in CI, on a loaded 2-core VM). Such a run is run once more, and says so.
hydra_lost_output() { grep -q 'HYDU_sock_write.*Broken pipe' "$1" && grep -q 'assert (!closed)' "$1"; }
# A failing run's pattern: extended regular expressions joined by "&&", each of which
# some line of the log must match.
log_matches() {
    local rest=$1 part
    while [ -n "$rest" ]; do
        part=${rest%%&&*}
        [ "$part" = "$rest" ] && rest= || rest=${rest#*&&}
        grep -Eq "$part" "$2" || return 1
    done
}

# judge_fail NAME PATTERN: a run that must fail, from $status, $secs and $log: a
# non-zero exit (not a hang: an exit status in $hang_codes, default 124 and 137) and
# the log matching PATTERN (log_matches).
judge_fail() {
    local code
    for code in ${hang_codes:-124 137}; do
        if [ "$status" -eq "$code" ]; then
            fail "$1 (hung: timeout ${timeout_s} s instead of an error)" "$log"
            return
        fi
    done
    if [ "$status" -eq 0 ]; then
        fail "$1 (exit 0, expected a failure, ${secs} s)" "$log"
    elif ! log_matches "$2" "$log"; then
        fail "$1 (exit $status without a message matching '$2', ${secs} s)" "$log"
    else
        pass "$1 (failed as it must: exit $status, ${secs} s)"
    fi
}
