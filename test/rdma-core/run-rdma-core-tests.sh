#!/usr/bin/env bash
# rdma-core's own test suite (its tests/ directory, run with Debian's
# python3-pyverbs) on efasim, unmodified: a judge nobody here wrote.
#
#   test/rdma-core/run-rdma-core-tests.sh [--front-end kernel|verbs] [--source DIR|TARBALL]
#                                         [--keep-log FILE] EFASIM_BUILD_DIR
#
# EFASIM_BUILD_DIR is a configured efarm build tree (tools/efasim-info and
# src/efasim/.libs). The suite must be the one of the rdma-core installed
# (Debian bookworm's 44): --source names its tree or its upstream tarball;
# without it, EFARM_RDMA_CORE_SOURCE, else a copy cached under
# ${XDG_CACHE_HOME:-$HOME/.cache}/efarm-ci/rdma-core-VERSION, else Debian's
# source package of that version, fetched once (scripts/debsrc.sh: the
# machine's own apt sources, the tarball's checksum from the signed index).
# Where none of these has it, the run is one SKIP line saying so (exit 0).
#
# Front ends:
#   kernel (default)  the system's libibverbs, libefa and pyverbs on efasim's
#                     emulated uverbs device (efasim-info --run=kernel): the
#                     path a program takes on EFA
#   verbs             efasim's drop-in libibverbs/libefa. pyverbs' mlx5 modules
#                     link libmlx5, which needs libibverbs' private provider
#                     ABI that a drop-in cannot offer, and rdma-core's tests
#                     import them whatever the device: they are replaced by
#                     stand-ins (mlx5-standin.py) that refuse as the real ones
#                     do on a device that is not mlx5, and nothing else changes
#
# One PASS, FAIL or SKIP line per test, then "N passed, N failed". A test the
# suite skips counts as passed only when its reason is one expected-skips
# lists (each line: a pattern of the reason and what of EFA, or of this host,
# explains it); any other skip is a FAIL, so a capability efasim lacks but EFA
# has cannot hide as a skip. Exits nonzero if anything failed.
set -u

usage() {
    echo "usage: $0 [--front-end kernel|verbs] [--source DIR|TARBALL] [--keep-log FILE] EFASIM_BUILD_DIR" >&2
    exit 2
}

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
front_end=kernel
source=${EFARM_RDMA_CORE_SOURCE:-}
keep_log=
build=
while [ $# -gt 0 ]; do
    case $1 in
    --front-end) front_end=${2:-}; shift 2 ;;
    --source) source=${2:-}; shift 2 ;;
    --keep-log) keep_log=${2:-}; shift 2 ;;
    -h | --help) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) usage ;;
    *) [ -z "$build" ] || usage; build=$1; shift ;;
    esac
done
[ -n "$build" ] || usage
case $front_end in kernel | verbs) ;; *) usage ;; esac
build=$(cd "$build" && pwd) || usage
info=$build/tools/efasim-info
python=/usr/bin/python3 # Debian's, with python3-pyverbs

fail_early() {
    echo "FAIL rdma-core-tests: $1"
    echo "0 passed, 1 failed"
    exit 1
}

[ -x "$info" ] || fail_early "no $info (build efarm first)"
"$python" -c 'import pyverbs.device' 2>/dev/null ||
    fail_early "Debian's python3-pyverbs is not installed ($python cannot import pyverbs)"
version=$(dpkg-query -W -f='${Version}' libibverbs1 2>/dev/null | sed 's/^[0-9]*://; s/-[^-]*$//')
[ -n "$version" ] || fail_early "cannot tell the installed rdma-core's version (dpkg libibverbs1)"

# The suite: a tree holding tests/run_tests.py, of the installed version.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tree=
cache=${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/efarm-ci/rdma-core-$version
if [ -z "$source" ] && [ -f "$cache/tests/run_tests.py" ]; then
    source=$cache
fi
if [ -z "$source" ]; then
    # shellcheck source=scripts/debsrc.sh
    . "$top/scripts/debsrc.sh"
    echo "rdma-core-tests: fetching rdma-core $version's source (Debian's source package)"
    if ! debsrc_download "$work/apt" "$work/dl" rdma-core "rdma-core_$version.orig.tar."; then
        # Not this project's failure: the machine's package sources lack the tarball.
        echo "SKIP rdma-core-tests: rdma-core $version's source could not be fetched from this" \
            "machine's package sources (--source or EFARM_RDMA_CORE_SOURCE names a tree or tarball," \
            "such as an export of rdma-core's git tag v$version)"
        echo "0 passed, 0 failed"
        exit 0
    fi
    source=$(ls "$work"/dl/rdma-core_"$version".orig.tar.* 2>/dev/null | head -n 1)
    [ -n "$source" ] || fail_early "no rdma-core_$version.orig.tar.* among what was fetched"
fi
if [ -d "$source" ]; then
    tree=$source
else
    mkdir -p "$work/src" && tar -xf "$source" -C "$work/src" ||
        fail_early "cannot unpack $source"
    tree=$(dirname "$(ls "$work"/src/*/tests/run_tests.py | head -n 1)")
    tree=${tree%/tests}
    # Keep the suite for the next run (only tests/: the rest is not needed).
    if [ ! -f "$cache/tests/run_tests.py" ] && mkdir -p "$cache" 2>/dev/null; then
        cp -r "$tree/tests" "$cache/" 2>/dev/null && echo "rdma-core-tests: suite cached in $cache"
    fi
fi
[ -f "$tree/tests/run_tests.py" ] || fail_early "$tree has no tests/run_tests.py"

# Run it. Verbose unittest output: one "name (id) ... outcome" line per test.
log=$work/run.log
sysfs=$work/sysfs
mkdir -p "$sysfs"
cd "$tree" || fail_early "cannot enter $tree"
case $front_end in
kernel)
    SYSFS_PATH=$sysfs timeout 1200 "$info" --run=kernel "$python" tests/run_tests.py -v >"$log" 2>&1
    ;;
verbs)
    SYSFS_PATH=$sysfs timeout 1200 "$info" --run "$python" "$here/mlx5-standin.py" \
        tests/run_tests.py -v >"$log" 2>&1
    ;;
esac
status=$?
[ -z "$keep_log" ] || cp "$log" "$keep_log"
if ! grep -q '^Ran [0-9]* tests' "$log"; then
    tail -n 20 "$log" | sed 's/^/    /'
    fail_early "the suite did not run to its end (exit $status)"
fi

# Judge every test. A skip's reason must match a line of expected-skips.
# The pattern is what comes before " | " (a pattern may hold | of its own).
mapfile -t allowed < <(grep -v '^#' "$here/expected-skips" | grep -v '^[[:space:]]*$' | sed 's/ | .*//')
passed=0
failed=0
# Lines: "<description or name> (<id>) ... <outcome>", the outcome possibly on a later line.
while IFS=$'\t' read -r id outcome reason; do
    case $outcome in
    ok) echo "PASS $id"; passed=$((passed + 1)) ;;
    skipped)
        ok=
        for p in "${allowed[@]}"; do
            if grep -Eq -- "$p" <<<"$reason"; then ok=1; break; fi
        done
        if [ -n "$ok" ]; then
            echo "SKIP $id: $reason"
            passed=$((passed + 1))
        else
            echo "FAIL $id: skipped for a reason expected-skips does not explain: $reason"
            failed=$((failed + 1))
        fi
        ;;
    *) echo "FAIL $id: $outcome"; failed=$((failed + 1)) ;;
    esac
done < <(awk '
    # A test prints its id in parentheses, then (with a docstring, on the next
    # line) " ... " and its outcome; output of the test may come in between.
    # When the test prints, its outcome comes alone on a line after the output
    # (which may begin on the " ... " line itself).
    function outcome(id, out) {
        if (out ~ /^ok/)
            print id "\tok\t"
        else if (out ~ /^skipped /)
            print id "\tskipped\t" substr(out, 9)
        else
            print id "\t" out "\t"
    }
    pending != "" && /^(ok|FAIL|ERROR|expected failure|unexpected success|skipped .*)$/ {
        outcome(pending, $0)
        pending = ""
        next
    }
    {
        line = $0
        if (match(line, /\(tests\.[A-Za-z0-9_.]+\)/)) {
            id = substr(line, RSTART + 1, RLENGTH - 2)
            line = substr(line, RSTART + RLENGTH)
        }
        if (id == "" || !match(line, / \.\.\. ?/))
            next
        out = substr(line, RSTART + RLENGTH)
        if (out ~ /^(ok|FAIL|ERROR|expected failure|unexpected success|skipped .*)$/)
            outcome(id, out)
        else
            pending = id # the test printed: its outcome follows on a line of its own
        id = ""
    }
' "$log")
ran=$(sed -n 's/^Ran \([0-9]*\) tests.*/\1/p' "$log")
if [ $((passed + failed)) -ne "${ran:-0}" ]; then
    echo "FAIL rdma-core-tests: the suite ran $ran tests, $((passed + failed)) were read from its output"
    failed=$((failed + 1))
fi
echo "rdma-core $version's tests/ on efasim ($front_end front end): $(tail -n 1 "$log")"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
