# shellcheck shell=bash
# Sourced by bench/run-mpi-bench.sh and bench/run-mt-bench.sh (not run on its own):
# whether efarm carried a run, from its output's PVAR lines (efarm's MPI_T counters,
# bench_mpit.h) against the benchmark's SENT line.
#
# efarm_counters_check FILE PROGRAM: prints "N of the M messages PROGRAM sent" and
# succeeds when efarm's messages (native sends + active messages, efarm_nm_send_msgs
# + efarm_nm_am_send) reach what PROGRAM sent; prints why and fails when the
# counters are missing or fall short.
efarm_counters_check() {
    local f=$1 prog=$2 found
    if grep -q '^PVAR efarm_nm_.* missing' "$f"; then
        echo "MPI_T counters efarm_nm_* missing: cannot tell that traffic crossed efarm"
        return 1
    fi
    found=$(awk -v prog="$prog" '$1 == "PVAR" && ($2 == "efarm_nm_send_msgs" || $2 == "efarm_nm_am_send") {
            n += $3} $1 == "SENT" {sent = $2}
        END {printf "%d of the %d messages %s sent", n, sent, prog
             exit n >= sent && sent > 0 ? 0 : 1}' "$f") || {
        echo "efarm sent $found: not all traffic crossed efarm"
        return 1
    }
    echo "$found"
}
