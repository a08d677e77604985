#!/usr/bin/env bash
# mpi4py's own test suite over efarm: build mpi4py from a source tree against
# efarm's MPICH and run test/runtests.py under its mpiexec.
#
#   scripts/run-mpi4py.sh --source DIR [--prefix PREFIX] [--np "2 4"] [--timeout S]
#                         [--out DIR]
#
# DIR is an mpi4py 3.1.x source tree (a release tarball or an export of its git
# tag: 3.1.x builds with Debian bookworm's cython3 0.29; 4.x needs Cython 3).
# Debian's archives do not serve it here (bookworm's mpi4py_3.1.4.orig.tar.gz and
# trixie's 4.0.3 files are not found), so CI does not run this; it is run by hand
# and its figures are recorded in doc/MPICH-VERSIONS.md.
#
# The build uses Debian's /usr/bin/python3 (python3-dev, cython3; python3-numpy
# lets the buffer tests run) with MPICC=PREFIX/bin/mpicc, into OUT/build (default
# build/mpi4py). Each run is `mpiexec -n N python3 test/runtests.py -v` with
# EFARM_DEVICE=sim MPIR_CVAR_NOLOCAL=1 and efasim counters of its own
# (SYSFS_PATH), under scripts/hang-guard.sh. A run passes when mpiexec exits 0,
# every rank printed "OK" after "Ran N tests", and efasim's counters show
# packets. Prints one PASS/FAIL line per process count and "N passed, N failed".
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
prefix=${EFARM_MPICH_PREFIX:-${EFARM_MPICH_CACHE:-$top/build/mpich}/install}
source_dir=
nps="2 4"
timeout_s=1800
out=$top/build/mpi4py
python=/usr/bin/python3

die() {
    echo "run-mpi4py: $*" >&2
    exit 2
}
need_arg() { if [ $# -lt 2 ] || [ -z "$2" ]; then die "$1 needs a value"; fi; }
while [ $# -gt 0 ]; do
    case $1 in
    --source) need_arg "$@"; source_dir=$2; shift ;;
    --prefix) need_arg "$@"; prefix=$2; shift ;;
    --np) need_arg "$@"; nps=$2; shift ;;
    --timeout) need_arg "$@"; timeout_s=$2; shift ;;
    --out) need_arg "$@"; out=$2; shift ;;
    -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
    shift
done
[ -n "$source_dir" ] || die "--source DIR (an mpi4py 3.1.x source tree) is required"
if [ ! -f "$source_dir/setup.py" ] || [ ! -f "$source_dir/test/runtests.py" ]; then
    die "$source_dir is not an mpi4py source tree (no setup.py and test/runtests.py)"
fi
[ -x "$prefix/bin/mpicc" ] || die "no mpicc in $prefix/bin (scripts/mpich-build.sh)"
"$python" -c 'import Cython' 2>/dev/null || die "$python has no Cython: apt-get install cython3 python3-dev"
for n in $nps; do [[ $n =~ ^[1-9][0-9]*$ ]] || die "--np takes process counts, not '$n'"; done

mkdir -p "$out" || die "cannot create $out"
build=$out/build
rm -rf "$build"
cp -a "$source_dir" "$build" || die "cannot copy $source_dir"
t0=$SECONDS
if ! (cd "$build" && env MPICC="$prefix/bin/mpicc" "$python" setup.py build) >"$out/build.log" 2>&1; then
    tail -n 15 "$out/build.log" >&2
    die "building mpi4py failed; see $out/build.log"
fi
lib=
for d in "$build"/build/lib.*; do [ -d "$d" ] && lib=$d && break; done
[ -n "$lib" ] || die "the build left no build/lib.* directory"
echo "run-mpi4py: mpi4py from $source_dir built against $prefix in $((SECONDS - t0)) s"

n_pass=0
n_fail=0
for n in $nps; do
    log=$out/np$n.log
    sysfs=$out/sysfs-np$n
    rm -rf "$sysfs"
    t0=$SECONDS
    (cd "$build" && exec "$top/scripts/hang-guard.sh" "$timeout_s" env PYTHONPATH="$lib" \
        EFARM_DEVICE=sim MPIR_CVAR_NOLOCAL=1 SYSFS_PATH="$sysfs" \
        "$prefix/bin/mpiexec" -n "$n" "$python" test/runtests.py -v) >"$log" 2>&1 </dev/null
    rc=$?
    secs=$((SECONDS - t0))
    ran=$(grep -m1 -E '^Ran [0-9]+ tests' "$log")
    oks=$(grep -c -E '^OK( \(.*\))?$' "$log")
    pkts=$(SYSFS_PATH=$sysfs "$prefix/bin/efasim-info" --counters 2>/dev/null | awk '{ s += $3 } END { print s + 0 }')
    if [ $rc -eq 0 ] && [ "$oks" -eq "$n" ] && [ "$pkts" -gt 0 ]; then
        n_pass=$((n_pass + 1))
        echo "PASS mpi4py np $n: ${ran:-?}, $(grep -m1 -E '^OK' "$log") on each of $n ranks ($secs s, $pkts packets)"
    else
        n_fail=$((n_fail + 1))
        echo "FAIL mpi4py np $n: exit $rc, $oks of $n ranks OK, $pkts packets; $(grep -m1 -E '^(FAIL|ERROR):' "$log") (log $log)"
    fi
done
echo "$n_pass passed, $n_fail failed"
[ "$n_fail" -eq 0 ]
