#!/usr/bin/env bash
# Run MPICH's own test suite (test/mpi of the MPICH source) against an installed MPICH.
#
#   scripts/mpich-testsuite.sh [--prefix PREFIX] [--dirs "pt2pt basic comm coll datatype rma"|more|all]
#                              [--subset ci|full] [--shm] [--source DIR] [--maxnp N]
#                              [--timeout S] [--max-timeout S] [--budget S] [--jobs N]
#                              [--xfail FILE] [--testlists DIR] [--list] [--build-only]
#                              [--faults] [--logs DIR] [--only FILE] [--except FILE] [--fortran]
#                              [--front-end verbs|kernel] [--srun pmi2|pmix]
#                              [--mpicc WRAPPER]
#
# Prints one line per test and ends with "N passed, N failed" (the format the
# `suite` function of scripts/test-all.sh reads); exits 0 only when nothing failed.
#   PASS  <id> (np N, T s)
#   FAIL  <id>: <reason>       "timeout after S s", "build failed: ...", the first
#                              relevant line of the output, or a missing "No Errors"
#   XFAIL <id>: <reason>       failed and listed in the xfail file (not counted)
#   XPASS <id>: ...            passed although listed in the xfail file (counted as a
#                              failure, so that the list cannot go stale)
#   SKIP  <id>: <reason>       not run (memory annotation larger than this machine; under
#                              --faults, listed in test/mpich-testlists/faults-skip)
# A test's <id> is "DIR/PROGRAM NP ARGS... ENV..." as in the test list (NP as listed,
# before --maxnp; runtests' junit output names tests the same way).
#
# Directories: pt2pt basic comm coll datatype rma (the default) and topo threads part
# io errhan attr group info init mpi_t spawn (`--dirs more`); `--dirs all` is all of them.
# spawn is dynamic processes (MPI_Comm_spawn, connect/accept, join, disconnect):
# its tests start further MPI jobs through mpiexec, whose processes inherit the
# environment below.
# threads runs its subdirectories (threads/pt2pt, threads/comm, threads/init,
# threads/mpi_t, threads/rma, threads/part, threads/coll in 4.0.2), which --dirs may
# also name one at a time.
# --fortran configures the suite with its Fortran tests (the prefix's mpif77 and
# mpifort: an MPICH built without --c-only) and adds f77 and f90, which run their
# subdirectories (f77/pt2pt, f90/coll, ...) as threads does; `--dirs fortran` is
# the two of them. Without --fortran the suite has no Fortran tests.
#
# Steps. (1) configure: test/mpi is copied out of the MPICH source into
# build/mpich-testsuite/obj-KEY and configured there with --with-mpi=PREFIX (no
# Fortran, C++ or fault-tolerance tests; spawn's are built; io's MPI-IO tests need the ROMIO
# that MPICH builds by default), once per KEY, a hash of the
# prefix, the installed MPICH's `mpichversion` (version, device, configure options),
# these configure arguments and the suite's source (its configure script). (2) build: MTest's library, DTPools, and then only
# the programs the chosen test lists name, `make -k -jN` (each MPICH install
# refreshes PREFIX/include/mpi.h, so make then rebuilds them). (3) run: each test in
# turn.
# Steps print their time; logs go to build/mpich-testsuite/logs (configure.log,
# build-DIR.log, and one DIR/ID.log per test with the command and its output).
#
# What a test is and when it passes follows MPICH's runtests. A test list line is
# "PROGRAM NP [key=value...]" (arg=, env=, timeLimit=, mem=, xfail=, strict=, mpix=,
# mpiexecarg=, resultTest=TestErrFatal or TestStatus: the test passes only when
# mpiexec exits nonzero, as the program ends with an error on purpose, through
# MPI_ERRORS_ARE_FATAL, its exit code or, for init/timeout, its time limit;
# resultTest=TestAllowWarnings: MPICH's warnings may come besides "No Errors"). NP above --maxnp (default 4, for 2 cores) runs with --maxnp
# processes. test/mpich-testlists/overrides changes that for named tests (np=keep:
# those that abort unless they get the count their list gives, one that divides 10,
# or 33) and gives longer time limits to tests too slow for theirs on efasim on 2
# cores (timeLimit=S). A test passes when mpiexec exits 0 and the output holds a "No Errors" line
# and nothing but "Test Passed" lines besides. Tests MPICH's lists mark xfail=TICKET
# run too (as with --enable-xfail): failing, they are XFAIL with MPICH's ticket as the
# reason (unless the xfail file gives efarm's); passing, PASS.
#
# runtests itself is not used: it names failed tests without their arguments, stops
# after five timeouts, builds each program alone, and MPICH has no test list for
# basic, whose programs print what they did rather than "No Errors". For basic,
# test/mpich-testlists/basic uses keys of efarm's: pass=exit replaces the rule above
# with "mpiexec exits 0, every expect=ERE matches a line of the output and no
# reject=ERE does" (both may repeat; an ERE has no spaces: [[:space:]] or .).
#
# Environment of every test: EFARM_DEVICE=sim and MPIR_CVAR_NOLOCAL=1, so ranks on
# this one machine talk through ch4:efarm on efasim, not MPICH's shared memory (with
# --front-end kernel, EFARM_DEVICE=efa and efasim's kernel front end instead: the
# system's rdma-core on efasim's emulated uverbs device, scripts/efasim-env.sh; the
# first test, efarm-traffic-check, is test/mpich-efarm-check.c: two ranks exchange
# messages and every rank's efarm MPI_T counters must have moved); the
# test list's env= entries. Each test runs under scripts/hang-guard.sh: at its time
# limit the stack of every thread of every rank goes to the test's log (the FAIL
# line says "timeout after S s; stacks in the log"), then the job is killed;
# MPIEXEC_TIMEOUT (30 s later: hydra kills the job and prints "APPLICATION TIMED
# OUT") is the backstop. --shm leaves MPIR_CVAR_NOLOCAL
# unset: ranks use MPICH's shared memory and efarm carries nothing, a check of the
# harness and of MPICH only, never a result for efarm; its lines say so and the xfail
# file is ignored.
#
# --faults runs every test with efasim's fault injector at 10% loss, 10% duplication
# and 20% reordering (EFASIM_LOSS=0.1 EFASIM_DUP=0.1 EFASIM_REORDER=0.2; any of them
# already in the environment wins), logging to build/mpich-testsuite/logs-faults.
# Tests listed in test/mpich-testlists/faults-skip ("ID-GLOB: reason": programs that
# rely on an order MPI does not promise, which lost and reordered packets upset) are
# skipped then, each with its reason.
# --mpicc WRAPPER compiles the suite with PREFIX/bin/WRAPPER instead of mpicc (its
# configure's MPICC): mpicc_abi for MPICH 5.0's MPI standard ABI (mpich-build.sh
# --abi), so every test is built against the standard's mpi.h and runs on
# libmpi_abi. A configuration of its own (the wrapper is part of the key).
# --srun MPI launches every test with srun --mpi=MPI on the running cluster of
# scripts/slurm-cluster.sh (two emulated hosts; as root) instead of mpiexec: ranks
# alternate between the hosts (-m cyclic, -N2 from 2 processes on), each started in
# a session of its own (setsid -w, as test/mpi/run-slurm.sh does), with
# SLURM_OVERLAP=1 (spawn's children are a job step of their own) and a silent peer
# given 30 s (EFASIM_TIMEOUT_MS=30000: the hosts share this machine's cores). pmi2
# for the default build (Slurm's PMI 2 server answers hydra's PMI 1 client), pmix for
# a build of `scripts/mpich-build.sh --pmi pmix`. Tests whose list line passes
# arguments to hydra's mpiexec (mpiexecarg=) are SKIP. Logs go to
# build/mpich-testsuite/logs-srun (logs-faults-srun with --faults).
# --logs DIR puts the logs elsewhere.
# --only FILE runs (and with --list lists) only the tests whose id matches a line of
# FILE, an ID-GLOB as in the xfail file (# starts a comment); the others are left out,
# not counted. For rerunning a run's failures, or finishing a run that was stopped:
# the ids still to run are the --list output less the ids of its PASS/FAIL/SKIP lines.
# A FILE that matches no test is an error.
# --except FILE leaves out (uncounted) the tests whose id matches a line of FILE, in the
# same format; CI's lists of tests too slow for its time budget.
#
# Subsets.
#   ci    test/mpich-testlists/basic and test/mpich-testlists/ci-DIR: a fixed subset
#         chosen to run in under 10 minutes on 2 cores (see the lists' headers)
#   full  every test of MPICH's lists for the directories (DIR/testlist and, where
#         configure generated one, DIR/testlist.dtp, as MPICH's `make testing` runs
#         them; the collective-algorithm sweep coll/testlist.cvar is left out) and
#         test/mpich-testlists/basic
# Time limits: a test's timeLimit= or else --timeout (ci 60 s, full 180 s as runtests),
# at most --max-timeout (300 s), unless test/mpich-testlists/overrides sets one. After 5 timeouts in a row, or once --budget seconds
# (ci 900; full unlimited) have passed, the tests left are reported as FAIL "not run".
#
# Known failures: test/mpich-xfail.txt, lines "ID-GLOB: reason" (a bash pattern over
# the test id, then ": " and the reason; # starts a comment). When the suite comes
# from another MPICH version than the one under test (4.0.2's suite against 4.3.2,
# doc/MPICH-VERSIONS.md), test/mpich-xfail-suite-SUITE-on-MPICH.txt is read too if
# it exists: tests whose expectations the two versions do not share; and
# test/mpich-xfail-suite-SUITE-on-MPICH-c-only.txt when that MPICH has no Fortran.
#
# Commands (one per subset; the last line is the summary):
#   scripts/mpich-testsuite.sh --subset ci
#   scripts/mpich-testsuite.sh --subset full
#   scripts/mpich-testsuite.sh --subset full --dirs pt2pt     # one directory
#   scripts/mpich-testsuite.sh --shm --dirs basic             # harness check only
# Environment: EFARM_MPICH_PREFIX (default build/mpich/install), EFARM_MPICH_CACHE
# (default build/mpich; the source is CACHE/tree/mpich-VERSION, else the pristine
# tree CACHE/pristine.path names), EFARM_MPICH_TESTSUITE_DIR (default
# build/mpich-testsuite).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${EFARM_MPICH_CACHE:-$top/build/mpich}
prefix=${EFARM_MPICH_PREFIX:-$cache/install}
out=${EFARM_MPICH_TESTSUITE_DIR:-$top/build/mpich-testsuite}
dirs="pt2pt basic comm coll datatype rma"
# The other directories (--dirs more), and every directory (--dirs all). threads
# stands for its subdirectories (threads/pt2pt, threads/comm, ...: the directories
# its testlist names), each of which may also be named alone.
more_dirs="topo threads part io errhan attr group info init mpi_t spawn"
all_dirs="$dirs $more_dirs"
# The tests must not see this script's own settings: libefarm warns on stderr about
# EFARM_* variables it does not know, and a test's stray output fails it.
for v in $(compgen -e EFARM_MPICH_); do unset "$v"; done
subset=ci
shm=0
source_dir=
maxnp=4
timeout_default=
timeout_max=300
budget=
jobs=2
xfail_file=$top/test/mpich-xfail.txt
lists_dir=$top/test/mpich-testlists
list_only=0
build_only=0
faults=0
front_end=verbs
srun_mpi=
logs=
only_file=
except_file=
fortran=0
mpicc_wrapper=
fortran_dirs="f77 f90"
consecutive_timeouts_max=5

die() {
    echo "mpich-testsuite: $*" >&2
    exit 2
}
usage() { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; }

need_arg() { if [ $# -lt 2 ] || [ -z "$2" ]; then die "$1 needs a value"; fi; }
while [ $# -gt 0 ]; do
    case $1 in
    --prefix) need_arg "$@"; prefix=$2; shift ;;
    --dirs) need_arg "$@"; dirs=$2; shift ;;
    --subset) need_arg "$@"; subset=$2; shift ;;
    --shm) shm=1 ;;
    --source) need_arg "$@"; source_dir=$2; shift ;;
    --maxnp) need_arg "$@"; maxnp=$2; shift ;;
    --timeout) need_arg "$@"; timeout_default=$2; shift ;;
    --max-timeout) need_arg "$@"; timeout_max=$2; shift ;;
    --budget) need_arg "$@"; budget=$2; shift ;;
    --jobs) need_arg "$@"; jobs=$2; shift ;;
    --xfail) need_arg "$@"; xfail_file=$2; shift ;;
    --testlists) need_arg "$@"; lists_dir=$2; shift ;;
    --list) list_only=1 ;;
    --build-only) build_only=1 ;;
    --faults) faults=1 ;;
    --front-end) need_arg "$@"; front_end=$2; shift ;;
    --srun) need_arg "$@"; srun_mpi=$2; shift ;;
    --logs) need_arg "$@"; logs=$2; shift ;;
    --only) need_arg "$@"; only_file=$2; shift ;;
    --except) need_arg "$@"; except_file=$2; shift ;;
    --fortran) fortran=1 ;;
    --mpicc) need_arg "$@"; mpicc_wrapper=$2; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
    esac
    shift
done

case $subset in
ci) : "${timeout_default:=60}" "${budget:=900}" ;;
full) : "${timeout_default:=180}" "${budget:=0}" ;;
*) die "--subset must be ci or full, not '$subset'" ;;
esac
for v in maxnp timeout_default timeout_max budget jobs; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die "--${v//_/-} must be a whole number, not '${!v}'"
done
[ "$maxnp" -ge 1 ] || die "--maxnp must be at least 1"
case $srun_mpi in '' | pmi2 | pmix) ;; *) die "--srun takes pmi2 or pmix, not '$srun_mpi'" ;; esac
[ "$fortran" = 0 ] || all_dirs="$all_dirs $fortran_dirs"
case $dirs in all) dirs=$all_dirs ;; more) dirs=$more_dirs ;; fortran) dirs=$fortran_dirs ;; esac
for d in $dirs; do
    case $d in
    pt2pt | basic | comm | coll | datatype | rma | topo | threads | threads/* | part | io | errhan | \
        attr | group | info | init | mpi_t | spawn) ;;
    f77 | f77/* | f90 | f90/*)
        [ "$fortran" = 1 ] || die "directory '$d' needs --fortran (the suite's Fortran tests)" ;;
    *) die "unknown directory '$d' (choose from $all_dirs)" ;;
    esac
done
[ -n "$dirs" ] || die "--dirs is empty"
[ "$shm" = 1 ] || [ -r "$xfail_file" ] || die "xfail file $xfail_file is not readable"

prefix=$(cd "$prefix" 2>/dev/null && pwd) || die "prefix does not exist (build MPICH with scripts/mpich-build.sh or pass --prefix)"
# A build for srun (mpich-build.sh --pmi pmix|pmi2) has no mpiexec, and --srun needs none.
tools=(mpicc mpichversion)
[ -n "$srun_mpi" ] || tools+=(mpiexec)
for t in "${tools[@]}"; do
    [ -x "$prefix/bin/$t" ] || die "$prefix/bin/$t is missing: is MPICH installed in $prefix?"
done
mpichversion_out=$("$prefix/bin/mpichversion") || die "$prefix/bin/mpichversion failed"
mpich_version=$(sed -n 's/^MPICH Version:[[:space:]]*//p' <<<"$mpichversion_out")
mpich_device=$(sed -n 's/^MPICH Device:[[:space:]]*//p' <<<"$mpichversion_out")
[ -n "$mpich_version" ] || die "cannot read the MPICH version from $prefix/bin/mpichversion"

if [ -z "$source_dir" ]; then
    source_dir=$cache/tree/mpich-$mpich_version
    if [ ! -f "$source_dir/test/mpi/configure" ] && [ -r "$cache/pristine.path" ]; then
        source_dir=$(cat "$cache/pristine.path")
    fi
fi
[ -f "$source_dir/test/mpi/configure" ] ||
    die "no MPICH source with test/mpi/configure at '$source_dir' (pass --source DIR)"
suite_version=$(sed -n 's/^m4_define(\[MPICH_VERSION_m4\],\[\([^]]*\)\]).*/\1/p' \
    "$source_dir/maint/version.m4" 2>/dev/null)
suite_xfail=
if [ -n "$suite_version" ] && [ "$suite_version" != "$mpich_version" ] &&
    [ -r "$top/test/mpich-xfail-suite-$suite_version-on-$mpich_version.txt" ]; then
    suite_xfail=$top/test/mpich-xfail-suite-$suite_version-on-$mpich_version.txt
fi
# An MPICH built without Fortran (--c-only) may refuse the Fortran datatypes an older
# suite's C tests use: test/mpich-xfail-suite-SUITE-on-MPICH-c-only.txt then.
suite_xfail_c_only=
if [ -n "$suite_xfail" ] && [ ! -x "$prefix/bin/mpifort" ] &&
    [ -r "$top/test/mpich-xfail-suite-$suite_version-on-$mpich_version-c-only.txt" ]; then
    suite_xfail_c_only=$top/test/mpich-xfail-suite-$suite_version-on-$mpich_version-c-only.txt
fi

configure_args=(--with-mpi="$prefix" --enable-fortran=no --disable-cxx
    --disable-ft-tests --disable-maintainer-mode)
if [ "$fortran" = 1 ]; then
    for t in mpif77 mpifort; do
        [ -x "$prefix/bin/$t" ] || die "--fortran: $prefix/bin/$t not found (MPICH built with --c-only?)"
    done
    # gfortran 10 and later refuse the tests' mismatched buffer arguments without this.
    configure_args=(--with-mpi="$prefix" --enable-fortran=all --disable-cxx
        --disable-ft-tests --disable-maintainer-mode
        FFLAGS=-fallow-argument-mismatch FCFLAGS=-fallow-argument-mismatch)
fi
if [ -n "$mpicc_wrapper" ]; then
    [ -x "$prefix/bin/$mpicc_wrapper" ] || die "--mpicc: $prefix/bin/$mpicc_wrapper not found (mpicc_abi: scripts/mpich-build.sh --abi)"
    configure_args+=(MPICC="$prefix/bin/$mpicc_wrapper")
fi
# The suite's source is part of the key: the suite of another MPICH version (its
# test programs and lists differ) configured against the same prefix is another
# configuration. A directory configured under the key without it (before the
# source was part of it) is still used when it holds the same suite (its copy
# of the suite's configure script is the source's).
key_inputs() {
    echo "$prefix"
    echo "$mpichversion_out"
    printf '%s\n' "${configure_args[@]}"
}
key=$({
    key_inputs
    sha256sum <"$source_dir/test/mpi/configure"
} | sha256sum | cut -c1-12)
obj=$out/obj-$key
old_obj=$out/obj-$(key_inputs | sha256sum | cut -c1-12)
if [ ! -d "$obj" ] && [ -f "$old_obj/.configured" ] &&
    cmp -s "$old_obj/configure" "$source_dir/test/mpi/configure"; then
    key=${old_obj##*/obj-}
    obj=$old_obj
fi
if [ $faults -eq 1 ]; then
    export EFASIM_LOSS=${EFASIM_LOSS:-0.1} EFASIM_DUP=${EFASIM_DUP:-0.1}
    export EFASIM_REORDER=${EFASIM_REORDER:-0.2}
    : "${logs:=$out/logs-faults${srun_mpi:+-srun}}"
fi
: "${logs:=$out/logs${srun_mpi:+-srun}}"
mpiexec=$prefix/bin/mpiexec
cluster=$top/scripts/slurm-cluster.sh

# launcher NP [MPIEXEC-ARGS...]: sets launch, the command that starts NP processes.
launcher() {
    local np=$1
    shift
    if [ -n "$srun_mpi" ]; then
        launch=("$cluster" run srun --mpi="$srun_mpi" -N "$((np < 2 ? np : 2))" -n "$np" -m cyclic
            setsid -w)
    else
        launch=("$mpiexec" -n "$np" "$@")
    fi
}

now() { date +%s; }
step_note() { printf 'mpich-testsuite: %-9s %4d s  %s\n' "$1" "$2" "$3"; }

# ---- configure ---------------------------------------------------------------------
configure_suite() {
    local t0
    t0=$(now)
    if [ -f "$obj/.configured" ]; then
        step_note configure 0 "cached ($obj, key $key)"
        return 0
    fi
    rm -rf "$obj"
    mkdir -p "$out" "$logs" || return 1
    cp -a "$source_dir/test/mpi" "$obj" && chmod -R u+w "$obj" || return 1
    if ! (cd "$obj" && ./configure "${configure_args[@]}") >"$logs/configure.log" 2>&1; then
        echo "mpich-testsuite: configure failed; the end of $logs/configure.log:" >&2
        tail -n 15 "$logs/configure.log" >&2
        return 1
    fi
    touch "$obj/.configured"
    step_note configure $(($(now) - t0)) "configured $obj from $source_dir/test/mpi"
}

# ---- test lists ----------------------------------------------------------------------
# threads, in $dirs, becomes the subdirectories its testlist names (in the
# configured suite: a testlist line of one word that is a directory with a
# testlist of its own), as runtests recurses into them.
expand_dirs() {
    local d sub out=
    for d in $dirs; do
        if [ "$d" = threads ] || [ "$d" = f77 ] || [ "$d" = f90 ]; then
            for sub in $(list_lines "$obj/$d/testlist" | awk 'NF == 1 { print $1 }'); do
                [ -f "$obj/$d/$sub/testlist" ] && out+=" $d/$sub"
            done
        else
            out+=" $d"
        fi
    done
    dirs=${out# }
}

# Prints the list files of directory $1 for the chosen subset.
lists_of() {
    local d=$1
    if [ "$d" = basic ]; then
        echo "$lists_dir/basic"
    elif [ "$subset" = ci ]; then
        echo "$lists_dir/ci-${d//\//-}"
    else
        echo "$obj/$d/testlist"
        [ -f "$obj/$d/testlist.dtp" ] && echo "$obj/$d/testlist.dtp"
    fi
    return 0
}

# Prints the test lines of a list file: comments and blank lines removed.
list_lines() {
    sed -e 's/#.*//' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' "$1" | grep -v '^$'
}

# ---- build ---------------------------------------------------------------------------
build_dir() { # DIR: builds the programs its lists name; log build-DIR.log
    local d=$1 f progs
    progs=$(for f in $(lists_of "$d"); do list_lines "$f" | awk '$1 !~ /^!/ { print $1 }'; done |
        sort -u)
    [ -n "$progs" ] || return 0
    # shellcheck disable=SC2086 # one word per program
    make -k -j"$jobs" -C "$obj/$d" $progs >"$logs/build-${d//\//-}.log" 2>&1
}


build_suite() {
    local t0 d status=0
    t0=$(now)
    mkdir -p "$logs"
    if ! { make -j"$jobs" -C "$obj/util" libmtest_single.la &&
        make -j"$jobs" -C "$obj/dtpools"; } >"$logs/build-support.log" 2>&1; then
        echo "mpich-testsuite: building MTest or DTPools failed; see $logs/build-support.log" >&2
        tail -n 15 "$logs/build-support.log" >&2
        return 1
    fi
    for d in $dirs; do
        build_dir "$d" || status=1
    done
    step_note build $(($(now) - t0)) \
        "$([ $status = 0 ] && echo "programs built" || echo "some programs failed to build (reported per test)")"
    return 0
}

# ---- xfail list and the fault-run skip list ---------------------------------------------
# shellcheck disable=SC2034 # filled and read through namerefs
xfail_globs=() xfail_reasons=() faults_skip_globs=() faults_skip_reasons=()
load_reasons() { # FILE GLOBS_ARRAY REASONS_ARRAY: lines "ID-GLOB: reason"
    local line glob reason file=$1
    local -n globs_=$2 reasons_=$3
    while IFS= read -r line || [ -n "$line" ]; do
        line=${line%%#*}
        [[ $line =~ [^[:space:]] ]] || continue
        [[ $line == *": "* ]] || die "$file: line without ': reason': $line"
        glob=${line%%: *}
        reason=${line#*: }
        reason=${reason%"${reason##*[![:space:]]}"}
        [ -n "$reason" ] || die "$file: entry without a reason: $glob"
        globs_+=("$glob")
        reasons_+=("$reason")
    done <"$file"
}
load_xfail() {
    [ "$shm" = 0 ] || return 0
    load_reasons "$xfail_file" xfail_globs xfail_reasons
    [ -z "$suite_xfail" ] || load_reasons "$suite_xfail" xfail_globs xfail_reasons
    [ -z "$suite_xfail_c_only" ] || load_reasons "$suite_xfail_c_only" xfail_globs xfail_reasons
    [ "$faults" = 0 ] || [ ! -r "$lists_dir/faults-skip" ] ||
        load_reasons "$lists_dir/faults-skip" faults_skip_globs faults_skip_reasons
}

# Per-test settings that override the test list and the options:
# test/mpich-testlists/overrides, lines "ID-GLOB: KEY=VALUE..." with np=keep (run with
# the listed process count even above --maxnp), timeLimit=S (also above
# --max-timeout), env=VAR=VALUE (one more variable for the run; the test id does not
# change) and resultTest=TestAllowWarnings (MPICH's rule of that name: lines MPICH
# prints as warnings, "MPICH: ..." and "WARNING: ...", may come besides "No Errors").
# When the suite comes from another MPICH version than the one under test,
# test/mpich-testlists/overrides-suite-SUITE-on-MPICH is read too if it exists: what
# the newer version's own lists run differently.
override_globs=()
override_settings=()
load_overrides() {
    local line f setting
    [ -r "$lists_dir/overrides" ] || die "$lists_dir/overrides is missing"
    for f in "$lists_dir/overrides" "$lists_dir/overrides-suite-$suite_version-on-$mpich_version"; do
        [ -r "$f" ] || continue
        while IFS= read -r line || [ -n "$line" ]; do
            line=${line%%#*}
            [[ $line =~ [^[:space:]] ]] || continue
            [[ $line == *": "* ]] || die "$f: line without ': KEY=VALUE': $line"
            for setting in ${line#*: }; do
                [[ $setting =~ ^(np=keep|timeLimit=[0-9]+|env=[A-Za-z_][A-Za-z0-9_]*=[^[:space:]]*|resultTest=TestAllowWarnings)$ ]] ||
                    die "$f: unknown setting '$setting' (np=keep, timeLimit=S, env=VAR=VALUE, resultTest=TestAllowWarnings)"
            done
            override_globs+=("${line%%: *}")
            override_settings+=("${line#*: }")
        done <"$f"
    done
}

# --only FILE and --except FILE: one ID-GLOB a line.
only_globs=()
except_globs=()
n_only=0
read_globs() { # OPTION FILE: the file's globs into globs_read
    local line
    globs_read=()
    [ -r "$2" ] || die "$1: cannot read $2"
    while IFS= read -r line || [ -n "$line" ]; do
        line=${line%%#*}
        line=${line#"${line%%[![:space:]]*}"}
        line=${line%"${line##*[![:space:]]}"}
        [ -n "$line" ] && globs_read+=("$line")
    done <"$2"
    [ ${#globs_read[@]} -gt 0 ] || die "$1: $2 names no test"
}
load_only() {
    local -a globs_read
    if [ -n "$only_file" ]; then
        read_globs --only "$only_file"
        only_globs=("${globs_read[@]}")
    fi
    if [ -n "$except_file" ]; then
        read_globs --except "$except_file"
        except_globs=("${globs_read[@]}")
    fi
}
only_check() { # after the lists were read: a FILE that matched nothing is a mistake
    [ -z "$only_file" ] || [ "$n_only" -gt 0 ] ||
        die "--only: no test of dirs '$dirs' (subset $subset) matches a line of $only_file"
}

glob_match() { # ID GLOB...: true when a pattern matches ID
    local id=$1 glob
    shift
    for glob in "$@"; do
        # shellcheck disable=SC2053 # the entry is a pattern
        [[ $id == $glob ]] && return 0
    done
    return 1
}

reason_of() { # ID GLOBS_ARRAY REASONS_ARRAY: prints the reason of the first matching entry
    local i
    local -n pats_=$2 whys_=$3
    for i in "${!pats_[@]}"; do
        # shellcheck disable=SC2053 # the entry is a pattern
        if [[ $1 == ${pats_[$i]} ]]; then
            printf '%s\n' "${whys_[$i]}"
            return 0
        fi
    done
    return 1
}

xfail_reason_of() { # ID: prints the xfail reason of the first matching entry
    reason_of "$1" xfail_globs xfail_reasons
}

# ---- results -----------------------------------------------------------------------------
n_pass=0
n_fail=0
n_xfail=0
n_xpass=0
n_skip=0
consecutive_timeouts=0
stop_reason=

# First relevant line of a failed test's output: a crash or MPI error (with the
# innermost line of MPICH's error stack), else the first line a passing test would
# not print; hydra's banner and the proxies' follow-up messages are not relevant.
reason_from_output() { # LOG
    awk '
        function noise(s) {
            return s ~ /^[[:space:]]*$/ || s ~ /^=+$/ || s ~ /^\[(proxy|mpiexec)[^]]*\]/ ||
                s ~ /BAD TERMINATION|RUNNING AT|EXIT CODE:|CLEANING UP REMAINING|YOU CAN IGNORE/ ||
                s ~ /^[[:space:]]*No [Ee]rrors[[:space:]]*$/ || s ~ /^[[:space:]]*Test Passed[[:space:]]*$/ ||
                s ~ /^(YOUR APPLICATION TERMINATED|This typically refers|Please see the FAQ)/
        }
        /^\+ / { next }                 # the command line and exit status the harness logged
        {
            line = $0
            sub(/^[[:space:]]+/, "", line)
            if (in_stack) {
                if (line ~ /^[A-Za-z_][A-Za-z0-9_]*\([0-9]*\)/) { last_stack = line; next }
                in_stack = 0
            }
            p = 0
            if (line ~ /does not implement/) p = 3
            else if (line ~ /Assertion failed|Fatal error|Segmentation fault|Bus error|signal [0-9]|Other MPI error/) p = 2
            else if (line ~ /Abort\(|Internal error|[Kk]illed/) p = 1
            if (p > prio) {
                prio = p
                crash = line
                last_stack = ""
                if (line ~ /error stack:$/) in_stack = 1
                next
            }
            if (other == "" && !noise(line)) other = line
        }
        END {
            if (prio == 1 && crash ~ /application called MPI_Abort/ && other != "") {
                print other " (then MPI_Abort)"
            } else if (crash != "") {
                if (last_stack != "") crash = crash " ... " last_stack
                print crash
            } else if (other != "") {
                print "unexpected output: " other
            }
        }' "$1" | cut -c1-300
}

report() { # KIND ID TEXT
    printf '%s %s%s\n' "$1" "$2" "$3"
}

# Records the outcome of one test: OK (0/1) and the failure reason.
finish() { # ID OK REASON MPICH_XFAIL TIME NP
    local id=$1 ok=$2 reason=$3 mpich_xfail=$4 secs=$5 np=$6 listed
    if [ "$shm" = 0 ] && listed=$(xfail_reason_of "$id"); then
        if [ "$ok" = 1 ]; then
            n_xpass=$((n_xpass + 1))
            report XPASS "$id" ": passed but listed in $(basename "$xfail_file") ($listed)"
        else
            n_xfail=$((n_xfail + 1))
            report XFAIL "$id" ": $listed [this run: $reason]"
        fi
    elif [ "$ok" = 1 ]; then
        n_pass=$((n_pass + 1))
        report PASS "$id" " (np $np, $secs s)"
    elif [ -n "$mpich_xfail" ]; then
        n_xfail=$((n_xfail + 1))
        report XFAIL "$id" ": MPICH's test list marks it xfail=$mpich_xfail [this run: $reason]"
    else
        n_fail=$((n_fail + 1))
        report FAIL "$id" ": $reason"
    fi
}

# ---- one test --------------------------------------------------------------------------------
mem_total_gb=$(awk '/^MemTotal:/ { printf "%d", $2 / 1048576 }' /proc/meminfo 2>/dev/null || echo 0)

run_line() { # DIR LINE
    local d=$1 line=$2 prog np word key value id log limit rc t0 secs ok reason
    local -a args=() envs=() mpiexec_args=()
    local time_limit='' mem='' mpich_xfail='' spec re pass_rule=noerrors
    local -a expect=() reject=()
    local -a words
    read -r -a words <<<"$line"
    prog=${words[0]}
    np=${words[1]:-2}
    if [[ $prog == !* ]]; then
        # "!DIR:TARGET": a prerequisite runtests makes first.
        spec=${prog#!}
        make -C "$obj/$d/${spec%%:*}" "${spec#*:}" >>"$logs/build-${d//\//-}.log" 2>&1
        return 0
    fi
    for word in "${words[@]:2}"; do
        [[ $word == *=* ]] || continue # runtests ignores words that are not key=value
        key=${word%%=*}
        value=${word#*=}
        case $key in
        arg) args+=("$value") ;;
        env) envs+=("$value") ;;
        mpiexecarg) mpiexec_args+=("$value") ;;
        timeLimit) time_limit=$value ;;
        mem) mem=$value ;;
        xfail) mpich_xfail=${mpich_xfail:+$mpich_xfail,}$value ;;
        expect) expect+=("$value") ;;
        reject) reject+=("$value") ;;
        pass) [ "$value" = exit ] || die "pass= takes only 'exit' (in '$line' of $d)"; pass_rule="exit" ;;
        resultTest)
            # runtests' checks by name: TestErrFatal and TestStatus require a
            # nonzero exit (the program ends with an error on purpose: through
            # MPI_ERRORS_ARE_FATAL, a nonzero exit code, or its time limit), any output.
            case $value in
            TestErrFatal | TestStatus) pass_rule=errfatal ;;
            TestAllowWarnings) pass_rule=warnings ;;
            *) die "resultTest=$value is not supported (in '$line' of $d)" ;;
            esac
            ;;
        strict | mpix | lock) ;; # this MPI is MPICH: not strict, has MPIX
        *) die "unknown key '$key' in test line '$line' of $d" ;;
        esac
    done
    id="$d/$prog $np${args[*]:+ ${args[*]}}${envs[*]:+ ${envs[*]}}"
    [[ $np =~ ^[0-9]+$ ]] || die "bad process count in test line '$line' of $d"
    local keep_np=0 limit_override='' i setting skip_reason
    for i in "${!override_globs[@]}"; do
        glob_match "$id" "${override_globs[$i]}" || continue
        for setting in ${override_settings[$i]}; do
            case $setting in
            np=keep) keep_np=1 ;;
            timeLimit=*) limit_override=${setting#timeLimit=} ;;
            env=*) envs+=("${setting#env=}") ;;
            resultTest=TestAllowWarnings) pass_rule=warnings ;;
            esac
        done
    done
    [ "$np" -le "$maxnp" ] || [ "$keep_np" = 1 ] || np=$maxnp
    if [ -n "$only_file" ]; then
        glob_match "$id" "${only_globs[@]}" || return 0
        n_only=$((n_only + 1))
    fi
    if [ -n "$except_file" ] && glob_match "$id" "${except_globs[@]}"; then
        return 0
    fi

    if [ "$list_only" = 1 ]; then
        echo "$id"
        return 0
    fi
    if [ -n "$stop_reason" ]; then
        n_fail=$((n_fail + 1))
        report FAIL "$id" ": not run ($stop_reason)"
        return 0
    fi
    if [ "$faults" = 1 ] && skip_reason=$(reason_of "$id" faults_skip_globs faults_skip_reasons); then
        n_skip=$((n_skip + 1))
        report SKIP "$id" ": under faults: $skip_reason"
        return 0
    fi
    if [ -n "$mem" ] && awk -v m="$mem" -v t="$mem_total_gb" 'BEGIN { exit !(m > t) }'; then
        n_skip=$((n_skip + 1))
        report SKIP "$id" ": needs ${mem} GB, this machine has ${mem_total_gb} GB"
        return 0
    fi

    limit=${time_limit:-$timeout_default}
    [[ $limit =~ ^[0-9]+$ ]] || limit=$timeout_default
    [ "$limit" -le "$timeout_max" ] || limit=$timeout_max
    [ -z "$limit_override" ] || limit=$limit_override
    mkdir -p "$logs/$d"
    log=$logs/$d/$(printf '%s' "${id#*/}" | tr -c 'A-Za-z0-9._=+,-' '_' | cut -c1-150).log

    if [ ! -x "$obj/$d/$prog" ]; then
        reason=$(grep -m1 -E "(error|Error|\*\*\*).*" "$logs/build-${d//\//-}.log" 2>/dev/null |
            grep -m1 -F "$prog" || true)
        finish "$id" 0 "build failed: ${reason:-no $prog after make; see $logs/build-${d//\//-}.log}" \
            "$mpich_xfail" 0 "$np"
        return 0
    fi

    if [ -n "$srun_mpi" ] && [ ${#mpiexec_args[@]} -gt 0 ]; then
        n_skip=$((n_skip + 1))
        report SKIP "$id" ": passes hydra's mpiexec ${mpiexec_args[*]}, which srun does not take"
        return 0
    fi
    local -a env_run=() launch=()
    if [ "$shm" = 1 ]; then env_run+=(-u MPIR_CVAR_NOLOCAL); else env_run+=(MPIR_CVAR_NOLOCAL=1); fi
    env_run+=("${device_env[@]}" MPIEXEC_TIMEOUT="$((limit + 30))")
    [ -z "$srun_mpi" ] || env_run+=(SLURM_OVERLAP=1 EFASIM_TIMEOUT_MS=30000)
    env_run+=("${envs[@]}")
    launcher "$np" "${mpiexec_args[@]}"
    t0=$(date +%s.%N)
    {
        echo "+ cd $obj/$d && env ${env_run[*]} ${launch[*]} ./$prog ${args[*]}"
        (cd "$obj/$d" && exec env "${env_run[@]}" "$top/scripts/hang-guard.sh" "$limit" \
            "${launch[@]}" "./$prog" "${args[@]}" </dev/null 2>&1)
        rc=$?
        echo "+ exit status $rc"
    } >"$log" 2>&1
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')

    ok=0
    reason=
    local body
    body=$(sed -e '1d' -e '$d' "$log")
    if [ "$pass_rule" = errfatal ]; then
        # Ended with an error, as it must (a time limit that stops it counts).
        consecutive_timeouts=0
        ok=$([ "$rc" != 0 ] && echo 1 || echo 0)
        [ "$ok" = 1 ] || reason="exit status 0; the test must end with an error"
    elif grep -q 'APPLICATION TIMED OUT' <<<"$body" || [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        reason="timeout after $limit s"
        ! grep -q '^hang-guard: stack of' <<<"$body" || reason="$reason; stacks of the ranks in $log"
        consecutive_timeouts=$((consecutive_timeouts + 1))
    else
        consecutive_timeouts=0
        if [ "$pass_rule" = exit ]; then
            ok=$([ "$rc" = 0 ] && echo 1 || echo 0)
            for re in "${reject[@]}"; do
                if [ "$ok" = 1 ] && grep -Eq -- "$re" <<<"$body"; then
                    ok=0
                    reason="output matches $re: $(grep -E -m1 -- "$re" <<<"$body" | cut -c1-200)"
                fi
            done
            for re in "${expect[@]}"; do
                if [ "$ok" = 1 ] && ! grep -Eq -- "$re" <<<"$body"; then
                    ok=0
                    reason="no output line matches $re"
                fi
            done
        else
            # "No Errors", nothing else but "Test Passed" and blank lines. With
            # TestAllowWarnings MPICH's warnings ("MPICH: ..." and "WARNING: ..." to the
            # line's end, as runtests takes them) are left out first, wherever they
            # start: they come on stderr, the log holds stdout too, and a warning may
            # land inside another rank's line (" No ErrorsMPICH: ...", seen in 3 of 100
            # runs of pt2pt/rqfreeb with shared memory).
            local judged=$body
            [ "$pass_rule" != warnings ] || judged=$(sed -E 's/(MPICH|WARNING): .*$//' <<<"$body")
            if [ "$rc" = 0 ] && grep -Eq '^[[:space:]]*No [Ee]rrors[[:space:]]*$' <<<"$judged" &&
                ! grep -Evq '^[[:space:]]*(No [Ee]rrors|Test Passed)[[:space:]]*$|^[[:space:]]*$' <<<"$judged"; then
                ok=1
            fi
        fi
        if [ "$ok" = 0 ] && [ -z "$reason" ]; then
            reason=$(reason_from_output "$log")
            if [ -z "$reason" ] && [ "$rc" != 0 ]; then
                reason="exit status $rc, no output"
            elif [ -z "$reason" ]; then
                reason="no 'No Errors' line"
            elif [ "$rc" != 0 ]; then
                reason="$reason (exit status $rc)"
            fi
        fi
    fi
    finish "$id" "$ok" "$reason" "$mpich_xfail" "$secs" "$np"

    if [ "$consecutive_timeouts" -ge "$consecutive_timeouts_max" ]; then
        stop_reason="stopped after $consecutive_timeouts timeouts in a row"
    elif [ "$budget" -gt 0 ] && [ $(($(now) - run_t0)) -ge "$budget" ]; then
        stop_reason="time budget of $budget s used up"
    fi
    return 0
}

# ---- pre-flight: does the traffic cross efarm? -----------------------------------------------
# test/mpich-efarm-check.c exchanges messages between two ranks and reads efarm's MPI_T
# counters: a run whose ranks talk through shared memory (or another netmod) fails it,
# so no result below is mistaken for efarm's.
traffic_check() {
    local id=efarm-traffic-check exe=$obj/mpich-efarm-check log=$logs/efarm-traffic-check.log
    if [ "$shm" = 1 ]; then
        n_skip=$((n_skip + 1))
        report SKIP "$id" ": --shm (efarm carries nothing)"
        return 0
    fi
    if ! "$prefix/bin/mpicc" -O2 -o "$exe" "$top/test/mpich-efarm-check.c" >"$log" 2>&1; then
        n_fail=$((n_fail + 1))
        report FAIL "$id" ": does not compile: $(grep -m1 -i error "$log" | cut -c1-200)"
        return 0
    fi
    local -a launch=()
    launcher 2
    if env MPIR_CVAR_NOLOCAL=1 "${device_env[@]}" MPIEXEC_TIMEOUT=60 \
        ${srun_mpi:+EFASIM_TIMEOUT_MS=30000} timeout -k 10 90 "${launch[@]}" "$exe" </dev/null >>"$log" 2>&1; then
        n_pass=$((n_pass + 1))
        report PASS "$id" " ($(grep -m1 'efarm carries' "$log" | sed 's/^mpich-efarm-check: //'))"
    else
        n_fail=$((n_fail + 1))
        report FAIL "$id" ": $(grep -m1 -e 'mpich-efarm-check: rank' -e 'TIMED OUT' -e 'Fatal' "$log" |
            cut -c1-200) (results below may not be efarm's; see $log)"
    fi
}

# ---- main ------------------------------------------------------------------------------------
# shellcheck source=scripts/efasim-env.sh
. "$top/scripts/efasim-env.sh"
efasim_device_env "$front_end" "$prefix" || exit 2
mode_note="ch4:efarm on efasim ($front_end front end), MPIR_CVAR_NOLOCAL=1"
if [ -n "$srun_mpi" ] && [ "$list_only" = 0 ] && [ "$build_only" = 0 ]; then
    "$cluster" status >/dev/null 2>&1 ||
        die "--srun needs the cluster of scripts/slurm-cluster.sh running (scripts/slurm-cluster.sh start, as root)"
    mode_note="$mode_note, launched by srun --mpi=$srun_mpi across the cluster's two hosts"
fi
if [ "$shm" = 1 ]; then
    mode_note="HARNESS CHECK ONLY: MPICH shared memory, efarm not involved, not a result"
fi
echo "mpich-testsuite: MPICH $mpich_version ($mpich_device) in $prefix; subset $subset;" \
    "dirs $dirs; maxnp $maxnp; $mode_note"
fault_env=$(env | grep -E '^EFASIM_[A-Z0-9_]+=' | sort | tr '\n' ' ')
[ -z "$fault_env" ] || echo "mpich-testsuite: efasim variables: $fault_env"

configure_suite || exit 2
expand_dirs
load_overrides
load_only
for d in $dirs; do
    for f in $(lists_of "$d"); do
        [ -r "$f" ] || die "test list $f is missing"
    done
done
if [ "$list_only" = 1 ]; then
    for d in $dirs; do
        for f in $(lists_of "$d"); do
            while IFS= read -r line; do run_line "$d" "$line"; done < <(list_lines "$f")
        done
    done
    only_check
    exit 0
fi
build_suite || exit 2
[ "$build_only" = 1 ] && exit 0
load_xfail

run_t0=$(now)
traffic_check
for d in $dirs; do
    rm -rf "${logs:?}/$d"
    for f in $(lists_of "$d"); do
        while IFS= read -r line; do run_line "$d" "$line"; done < <(list_lines "$f")
    done
done
only_check
step_note run $(($(now) - run_t0)) "$n_xfail xfail, $n_xpass xpass, $n_skip skipped; logs in $logs"
[ "$shm" = 0 ] || echo "mpich-testsuite: HARNESS CHECK ONLY (shared memory, efarm not involved)"
echo "$n_pass passed, $((n_fail + n_xpass)) failed"
[ $((n_fail + n_xpass)) -eq 0 ]
