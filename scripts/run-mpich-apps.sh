#!/usr/bin/env bash
# Run applications that Debian builds against its MPICH over efarm instead,
# through the MPICH ABI: efarm's MPICH (scripts/mpich-build.sh) installs
# libmpi.so.12, the same library as Debian's libmpich.so.12 under MPICH's
# ABI, so a directory holding `libmpich.so.12 -> PREFIX/lib/libmpi.so.12` at
# the front of LD_LIBRARY_PATH makes Debian's binaries run on efarm's MPICH,
# started by efarm's mpiexec (doc/NETMOD.md, "Running MPICH-built
# applications over efarm").
#
#   scripts/run-mpich-apps.sh [--prefix PREFIX] [--subset ci|full] [--apps "scalapack netpipe"]
#                             [--timeout S] [--logs DIR] [--list]
#
# Applications (Debian packages, installed by scripts/install-deps.sh):
#   scalapack  scalapack-mpi-test: ScaLAPACK's test programs, MPICH flavour
#              (/usr/lib/x86_64-linux-gnu/scalapack/mpich-tests), each as its
#              CTestTestfile.cmake runs it (4 processes), in a scratch directory
#              holding a copy of the input files next to it. Passes when mpiexec
#              exits 0, the output has its end line ("END OF TESTS" in any case;
#              BLACS's testers instead end on BLACS_ABORT: exit status 255 after
#              their last regular test passed) and no line reports a failure: "N tests completed and
#              failed" with N > 0, a check "FAILED", an SVD line "Failed", a
#              nonzero FAILED column in PBLAS's summary, or an error termination.
#              The eigensolver testers (x[sdcz]sep) may fail their orthogonality
#              check alone (see sep_failures). xsllt and xdllt are left out: they
#              hang on Debian's own MPICH (ch4:ucx) as well.
#   netpipe    netpipe-mpich2 (NPmpich2) with 2 processes: its integrity check (-i)
#              one way, with preposted receives (-a), both ways at once (-2, with
#              -a: without it both sides enter MPI_Send first, which only a library
#              that buffers the message completes, and efarm's rendezvous sizes do
#              not, as MPI allows; NetPIPE's help says as much) and with
#              synchronous sends (-S), and one timed run (up to 8 MiB; 1 MiB in
#              the ci subset, 41 s against 68 on a 2-core VM, as the integrity
#              runs cover the sizes above); each passes on exit 0 and
#              output free of "Integrity check failed". NetPIPE's MPI_ANY_SOURCE
#              mode (-z) is left out: it hangs after its first size on Debian's own
#              MPICH (ch4:ucx) too.
# Every run gets EFARM_DEVICE=sim MPIR_CVAR_NOLOCAL=1 (efarm, not shared memory,
# carries the traffic) and a SYSFS_PATH of its own, so efasim's device counters
# start at zero: a run passes only if they show packets (`efasim-info
# --counters`), i.e. the application's messages crossed efarm. Each run is under
# scripts/hang-guard.sh (a hang is a failure with every rank's stack in the log).
#
# Subsets: full runs every program; ci a fixed few (one per ScaLAPACK family and
# precision mix, PBLAS level 3, BLACS C, and every NetPIPE run), about 3 minutes on
# 2 cores. Prints one PASS/FAIL line per run and "N passed, N failed"; logs in
# build/mpich-apps (--logs). --list prints the runs and exits.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
prefix=${EFARM_MPICH_PREFIX:-${EFARM_MPICH_CACHE:-$top/build/mpich}/install}
subset=ci
apps="scalapack netpipe"
timeout_s=300
logs=$top/build/mpich-apps
list_only=0
scalapack_dir=/usr/lib/x86_64-linux-gnu/scalapack/mpich-tests
# ScaLAPACK programs left out, with the reason.
scalapack_skip="xsllt xdllt" # hang on Debian's own MPICH 4.0.2 (ch4:ucx) too
# The ci subset: ScaLAPACK programs by name (others are left out of ci only).
scalapack_ci="xdlu xzqr xcinv xddblu xdsep xzhrd spb1tst dpb3tst xCbtest"

die() {
    echo "run-mpich-apps: $*" >&2
    exit 2
}
need_arg() { if [ $# -lt 2 ] || [ -z "$2" ]; then die "$1 needs a value"; fi; }
while [ $# -gt 0 ]; do
    case $1 in
    --prefix) need_arg "$@"; prefix=$2; shift ;;
    --subset) need_arg "$@"; subset=$2; shift ;;
    --apps) need_arg "$@"; apps=$2; shift ;;
    --timeout) need_arg "$@"; timeout_s=$2; shift ;;
    --logs) need_arg "$@"; logs=$2; shift ;;
    --list) list_only=1 ;;
    -h | --help) sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
    shift
done
case $subset in ci | full) ;; *) die "--subset must be ci or full, not '$subset'" ;; esac
[[ $timeout_s =~ ^[0-9]+$ ]] || die "--timeout must be a whole number of seconds"
for a in $apps; do
    case $a in scalapack | netpipe) ;; *) die "unknown application '$a' (scalapack, netpipe)" ;; esac
done
prefix=$(cd "$prefix" 2>/dev/null && pwd) || die "no MPICH at $prefix (scripts/mpich-build.sh)"
[ -e "$prefix/lib/libmpi.so.12" ] || die "$prefix/lib/libmpi.so.12 is missing: not an MPICH 4 install"

# ---- the runs: NAME NP WORKDIR_SOURCE PROGRAM [ARG...] ----------------------------------
runs=()
add_scalapack() {
    local f dir prog np
    [ -d "$scalapack_dir" ] || die "$scalapack_dir is missing: apt-get install scalapack-mpi-test"
    for f in "$scalapack_dir/CTestTestfile.cmake" "$scalapack_dir/PBLAS/CTestTestfile.cmake" \
        "$scalapack_dir/BLACS/CTestTestfile.cmake"; do
        dir=$(dirname "$f")
        # add_test(NAME ... "-n" "4" ...) for the programs; the BLACS ones go through cmake.
        while read -r prog np; do
            [[ " $scalapack_skip " == *" $prog "* ]] && continue
            [ "$subset" = full ] || [[ " $scalapack_ci " == *" $prog "* ]] || continue
            [ -x "$dir/$prog" ] || die "$dir/$prog is missing"
            runs+=("scalapack/$prog $np $dir $dir/$prog")
        done < <(sed -n 's/^add_test(\([A-Za-z0-9_]*\) .*"\(-n\|-DMPIEXEC_NUMPROC_FLAG=-n\)" "\([0-9]*\)".*/\1 \3/p' "$f";
            sed -n 's/^add_test(\(x[CF]btest\) .*/\1 4/p' "$f")
    done
}
add_netpipe() {
    local np=/usr/bin/NPmpich2
    [ -x "$np" ] || die "$np is missing: apt-get install netpipe-mpich2"
    runs+=("netpipe/integrity 2 - $np -i -u 4194304"
        "netpipe/integrity-preposted 2 - $np -i -a -u 4194304"
        "netpipe/integrity-both-ways 2 - $np -i -2 -a -u 4194304"
        "netpipe/integrity-ssend 2 - $np -i -S -u 1048576"
        "netpipe/timed 2 - $np -u $([ "$subset" = full ] && echo 8388608 || echo 1048576) -o np.out")
}
for a in $apps; do "add_$a"; done

if [ "$list_only" = 1 ]; then
    printf '%s\n' "${runs[@]}" | awk '{ print $1, "np", $2 }'
    exit 0
fi

abi=$logs/abi
mkdir -p "$abi" || die "cannot create $abi"
ln -sfn "$prefix/lib/libmpi.so.12" "$abi/libmpich.so.12"
echo "run-mpich-apps: Debian's MPICH applications on $prefix/lib/libmpi.so.12 (as libmpich.so.12)," \
    "ch4:efarm on efasim, MPIR_CVAR_NOLOCAL=1; subset $subset"

# The eigensolver testers' failed result lines ("N NB P Q TYP SUB WALL CPU CHK
# QTQ FAILED"), each under the THRESH= line of the failure report printed
# before it. Prints the allowed ones (orthogonality only: CHK < THRESH, QTQ <
# 20 THRESH) and returns 0, or prints the first other one and returns 1.
sep_failures() { # LOG
    awk '
        /THRESH=/ { t = $NF; sub(/[Dd]/, "e", t); thresh = t + 0 }
        $NF == "FAILED" && NF == 11 && $1 ~ /^[0-9]+$/ {
            chk = $9; qtq = $10; sub(/\.$/, "", qtq)
            line = $1 " " $2 " " $3 " " $4 " " $5 ": CHK " $9 " QTQ " $10 " THRESH " thresh
            if (thresh > 0 && chk ~ /^[0-9.E+-]+$/ && qtq ~ /^[0-9.E+-]+$/ && chk + 0 < thresh && qtq + 0 < 20 * thresh) {
                allowed = allowed (allowed == "" ? "" : "; ") line
                next
            }
            print "failed beyond orthogonality: " line
            bad = 1
            exit
        }
        $NF == "FAILED" { print "unrecognised failed line: " $0; bad = 1; exit }
        END { if (bad) exit 1; if (allowed != "") print allowed }' "$1"
}

# A failed run's reason from its exit status and log, or nothing when they are a pass.
verdict() { # NAME RC LOG
    local name=$1 rc=$2 log=$3 line
    case $name in
    scalapack/x[CF]btest)
        # BLACS's tester ends with BLACS_ABORT(ctxt, -1) on purpose: the job must end
        # with the abort's own status (-1: 255), no test failed, after the tester
        # announced its last regular test. The lines printed right before the abort
        # ("The final auxiliary test ...", "killed other procs") are not required:
        # Hydra's mpiexec exits as soon as the abort reaches it (fn_abort in
        # pmiserv_pmi_v1.c), so what the proxies had not yet forwarded is lost
        # (one CI run of 2026-12-02 lost them; the job itself had passed).
        line=$(grep -m1 -E '[1-9][0-9]* FAILED|FAILED +[A-Z]|Error termination|Segmentation|Fatal error' "$log")
        if [ -n "$line" ]; then
            echo "$line" | cut -c1-200
        elif [ "$rc" -ne 255 ]; then
            echo "exit status $rc, not BLACS_ABORT's 255"
        elif ! grep -q 'PASSED  BLACS_SET/BLACS_GET TESTS' "$log"; then
            echo "exit status 255 before the last regular test (BLACS_SET/BLACS_GET) passed"
        fi
        return
        ;;
    esac
    if [ "$rc" -ne 0 ]; then
        echo "exit status $rc; $(grep -m1 -E 'Error|error|Abort|FAILED|failed' "$log" | cut -c1-160)"
        return
    fi
    # A testers' summary of failed tests, and a result line that failed.
    local summary='[1-9][0-9]* tests completed and failed|[0-9] +FAILED *$|'
    case $name in
    scalapack/x[sdcz]sep)
        # The eigensolver testers' orthogonality check (QTQ) is not repeatable:
        # BLACS's combines receive from MPI_ANY_SOURCE and add in arrival order
        # (two thirds of xdsep's receives), so rounding, and with it PDSYEVX's
        # orthogonality for eigenvalue clusters split over processes, varies
        # from run to run on any transport: MPICH's shared memory alone failed
        # N=27, 3x1 grid, type 10 once in 18 runs (QTQ 66 > THRESH 50), as
        # efarm did once in 19. A failed line whose eigenpairs are right
        # (CHK under THRESH) and whose QTQ is under 20 THRESH (under 1e-11 for
        # N=27) is that loss, not damaged data, and is allowed; any other
        # failed line, or a failure another check sees, still fails.
        line=$(sep_failures "$log") || {
            echo "$line"
            return
        }
        [ -z "$line" ] || echo "run-mpich-apps: allowed (orthogonality only, CHK < THRESH, QTQ < 20 THRESH):" \
            "$line" >>"$log"
        summary=
        ;;
    esac
    line=$(grep -m1 -E "$summary"'check: *[A-Z0-9]+ +FAILED|^ *Failed |Error termination|Integrity check failed|Fatal error|Segmentation|Abort\(' "$log")
    # PBLAS's summary table: "|  PDGEMM  TOTAL PASSED FAILED SKIPPED"
    [ -n "$line" ] || line=$(awk '$1 == "|" && $2 ~ /^P[A-Z0-9]+$/ && NF == 6 && $5 != 0 { print "PBLAS " $2 ": " $5 " failed"; exit }' "$log")
    if [ -n "$line" ]; then
        echo "$line" | cut -c1-200
        return
    fi
    case $name in
    # xshseqr and xdhseqr print no end line: their one result line must say PASSED.
    scalapack/x[sd]hseqr) grep -q -E ' PASSED *$' "$log" || echo "no PASSED line" ;;
    scalapack/*) grep -q -i -E 'END OF TESTS' "$log" || echo "no end-of-tests line" ;;
    netpipe/timed) [ -s "$logs/np.out" ] || echo "no np.out written" ;;
    netpipe/*) grep -q -i 'integrity' "$log" || echo "no integrity-check output" ;;
    esac
}

n_pass=0
n_fail=0
for r in "${runs[@]}"; do
    read -r name np src prog args <<<"$r"
    work=$logs/work/$name
    rm -rf "$work"
    mkdir -p "$work"
    [ "$src" = - ] || cp "$src"/*.dat "$work/" 2>/dev/null
    log=$logs/${name//\//_}.log
    sysfs=$work/sysfs
    t0=$SECONDS
    # shellcheck disable=SC2086 # args are words
    (cd "$work" && exec "$top/scripts/hang-guard.sh" "$timeout_s" env EFARM_DEVICE=sim MPIR_CVAR_NOLOCAL=1 \
        SYSFS_PATH="$sysfs" LD_LIBRARY_PATH="$abi${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        "$prefix/bin/mpiexec" -n "$np" "$prog" $args) >"$log" 2>&1 </dev/null
    rc=$?
    secs=$((SECONDS - t0))
    [ "$name" != netpipe/timed ] || cp "$work/np.out" "$logs/np.out" 2>/dev/null
    pkts=$(SYSFS_PATH=$sysfs "$prefix/bin/efasim-info" --counters 2>/dev/null | awk '{ s += $3 } END { print s + 0 }')
    reason=$(verdict "$name" "$rc" "$log")
    [ -n "$reason" ] || [ "$pkts" -gt 0 ] || reason="no packet crossed efasim (efarm carried nothing)"
    if [ -z "$reason" ]; then
        n_pass=$((n_pass + 1))
        note=
        grep -q '^run-mpich-apps: allowed' "$log" && note="; an orthogonality-only failure allowed, see the log"
        echo "PASS $name (np $np, $secs s, $pkts packets$note)"
    else
        n_fail=$((n_fail + 1))
        echo "FAIL $name: $reason (log $log)"
        tail -n 12 "$log" | sed 's/^/  | /'
    fi
done
echo "$n_pass passed, $n_fail failed"
[ "$n_fail" -eq 0 ]
