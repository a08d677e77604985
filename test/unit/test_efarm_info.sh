#!/bin/sh
# efarm-info and the tunable table, from the outside:
#
#   sh test/unit/test_efarm_info.sh BUILD_DIR
#
# A refused value (from EFARM_* or from MPICH's names for the control
# variable) shows as REFUSED with the variable, the value and what is allowed,
# and efarm-info exits 1; an accepted one shows in force with what set it; an
# unknown variable is reported, the scripts' own EFARM_* variables are not; the device efarm would use is said, and with
# the default (auto) a host without EFA gets none; EFARM_EAGER_MAX beyond one
# packet of the device is refused by --policy. Prints "PASS name" or "FAIL name: why" per
# check, then "N passed, N failed"; exits nonzero if any check failed.
set -u

if [ $# -ne 1 ]; then
    echo "usage: $0 BUILD_DIR" >&2
    exit 2
fi
build=$1
info=$build/tools/efarm-info
# shellcheck source=test/unit/testlib.sh
. "$(dirname "$0")/testlib.sh"

# check NAME WANT_STATUS PATTERN ENV... : run efarm-info under ENV; its exit
# status must be WANT_STATUS and its output (stdout and stderr) match PATTERN.
check() {
    name=$1 want=$2 pattern=$3
    shift 3
    env EFARM_DEVICE=sim EFARM_EFASIM_PATH="$build/src/efasim/.libs" "$@" "$info" $info_args \
        >"$tmp/out" 2>&1
    status=$?
    if [ "$status" -ne "$want" ]; then
        fail "$name" "exit $status, expected $want ($(head -c 300 "$tmp/out"))"
    elif ! grep -q -e "$pattern" "$tmp/out"; then
        fail "$name" "output lacks '$pattern'"
    else
        pass "$name"
    fi
}

# check_not NAME PATTERN ENV... : efarm-info under ENV exits 0 and its output
# does not match PATTERN.
check_not() {
    name=$1 pattern=$2
    shift 2
    env EFARM_DEVICE=sim EFARM_EFASIM_PATH="$build/src/efasim/.libs" "$@" "$info" $info_args \
        >"$tmp/out" 2>&1
    status=$?
    if [ "$status" -ne 0 ]; then
        fail "$name" "exit $status, expected 0 ($(head -c 300 "$tmp/out"))"
    elif grep -e "$pattern" "$tmp/out" >"$tmp/hit"; then
        fail "$name" "output has '$(head -c 200 "$tmp/hit")'"
    else
        pass "$name"
    fi
}

info_args=
check accepted-default 0 '^EFARM_RECVWIN  *128  *128  *default'
check accepted-efarm-name 0 '^EFARM_RECVWIN  *128  *64  *EFARM_RECVWIN ' EFARM_RECVWIN=64
check accepted-cvar-name 0 '^EFARM_RECVWIN  *128  *32  *MPIR_CVAR_CH4_EFARM_RECVWIN ' \
    EFARM_RECVWIN=64 MPIR_CVAR_CH4_EFARM_RECVWIN=32
check accepted-bytes-beyond-int 0 '^EFARM_UNEXP_MAX_BYTES  *268435456  *8589934592 ' \
    EFARM_UNEXP_MAX_BYTES=8589934592
check refused-not-power-of-2 1 \
    'EFARM_RECVWIN=100 refused: expected a power of 2 from 1 to 65536 (default 128)' \
    EFARM_RECVWIN=100
check refused-shown-refused 1 '^EFARM_RECVWIN  *128  *REFUSED  *EFARM_RECVWIN ' EFARM_RECVWIN=100
check refused-cvar-name 1 'MPICH_CH4_EFARM_MAX_OPS=65536 refused: expected a decimal number from 1 to 65535' \
    MPICH_CH4_EFARM_MAX_OPS=65536
check refused-not-a-number 1 'EFARM_SQ_DEPTH=lots refused' EFARM_SQ_DEPTH=lots
check refused-choice 1 'EFARM_LOG_LEVEL=loud refused: expected one of error, warn, info' \
    EFARM_LOG_LEVEL=loud
check refused-between 1 'EFARM_RX_RESERVE=600 refused: expected less than EFARM_RX_BUFFERS (512)' \
    EFARM_RX_RESERVE=600
check device-sim-said 0 '^device: efasim, the emulated EFA device (EFARM_DEVICE=sim)'
check nic-choice-said 0 '^NIC a lone, unbound rank takes: efasim_0 '
if ! grep -qs 0x1d0f /sys/class/infiniband/*/device/vendor; then
    check device-auto-without-efa 1 '^device: no EFA device on this host.*set EFARM_DEVICE=sim' \
        EFARM_DEVICE=auto
fi
check unknown-reported 0 'unknown variable EFARM_RECVWINDOW ignored' EFARM_RECVWINDOW=64
# The scripts' own variables are listed, with their value, and not reported;
# a name that only begins like one still is.
check_not script-vars-not-unknown 'unknown variable' EFARM_MPICH_PREFIX=/opt/m \
    EFARM_MPICH_SOURCE_4_3_2=/tmp/m.tar.xz EFARM_PROGRESS_SECONDS=5 EFARM_BUILD_ROOT=/tmp/b
check script-var-listed 0 '^EFARM_MPICH_PREFIX  */opt/m  *mpich-build.sh' EFARM_MPICH_PREFIX=/opt/m
check script-var-near-miss 0 'unknown variable EFARM_MPICH_PREFIXES ignored' \
    EFARM_MPICH_PREFIXES=/opt/m
check script-var-not-a-cvar 0 'unknown variable MPIR_CVAR_CH4_EFARM_BUILD_ROOT ignored' \
    MPIR_CVAR_CH4_EFARM_BUILD_ROOT=/tmp/b
info_args=--policy
check policy-refused 1 'EFARM_RECVWIN=100 refused' EFARM_RECVWIN=100
check policy-eager-beyond-device 1 'EFARM_EAGER_MAX=9000 refused: one packet of efasim_0' \
    EFARM_EAGER_MAX=9000
check policy-eager-within-device 0 'eager up to 1000 B' EFARM_EAGER_MAX=1000

summary
