#!/bin/sh
# Debian's ibv_devinfo, ibv_devices and ibv_ud_pingpong (ibverbs-utils) against efasim.
#
#   sh test/unit/test_ibv_devinfo.sh [--kernel] EFASIM_LIBDIR
#
# EFASIM_LIBDIR holds efasim's libibverbs.so.1 and libefa.so.1 (the build's
# src/efasim/.libs), and libefasim-kernel.so. Without --kernel the tools load
# efasim's drop-in libraries; with it, the system's rdma-core on efasim's kernel
# front end (libefasim-kernel.so preloaded, a sysfs view of the run's own).
# Unmodified rdma-core tools must list efasim_0 with port 1 active and its GID,
# whatever they query on the way, and ibv_ud_pingpong must exchange checked UD
# messages between two processes, polling and with completion events.
# IBV_DEVINFO names another ibv_devinfo binary. Prints "PASS name" or
# "FAIL name: why" per check, then "N passed, N failed"; exits 77 (skipped)
# without ibverbs-utils, nonzero if any check failed.
set -u

kernel=
if [ "${1:-}" = --kernel ]; then
    kernel=1
    shift
fi
if [ $# -ne 1 ]; then
    echo "usage: $0 [--kernel] EFASIM_LIBDIR" >&2
    exit 2
fi
libdir=$1
devinfo=${IBV_DEVINFO:-/usr/bin/ibv_devinfo}
devices=$(dirname "$devinfo")/ibv_devices

if [ ! -x "$devinfo" ]; then
    echo "SKIP ibv_devinfo: ibverbs-utils not installed"
    exit 77
fi
if [ ! -e "$libdir/libibverbs.so.1" ]; then
    echo "$0: no libibverbs.so.1 in $libdir" >&2
    exit 2
fi

# shellcheck source=test/unit/testlib.sh
. "$(dirname "$0")/testlib.sh"

# The checks below expect efasim's defaults.
unset EFASIM_NDEV EFASIM_ADDR EFASIM_MTU EFASIM_QPN
if [ -n "$kernel" ]; then
    if [ ! -e "$libdir/libefasim-kernel.so" ]; then
        echo "$0: no libefasim-kernel.so in $libdir" >&2
        exit 2
    fi
    LD_PRELOAD=$libdir/libefasim-kernel.so
    SYSFS_PATH=$tmp/sysfs
    mkdir -p "$SYSFS_PATH"
    export LD_PRELOAD SYSFS_PATH
else
    LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export LD_LIBRARY_PATH
fi

# A hung tool must fail its check, not the whole run.
run_limit=
if command -v timeout >/dev/null 2>&1; then
    run_limit="timeout 30"
fi

# run TOOL ARGS...: stdout, stderr and status in $tmp/out, $tmp/err, $rc.
run() {
    $run_limit "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
}

first_err() {
    head -n 1 "$tmp/err"
}

# expect_line NAME PATTERN WHAT: $tmp/out has a line matching the extended regex PATTERN.
expect_line() {
    if grep -Eq "$2" "$tmp/out"; then
        pass "$1"
    else
        fail "$1" "no line matching '$2' ($3)"
    fi
}

# ---- ibv_devinfo: the summary of every device ---------------------------------

run "$devinfo"
if [ "$rc" -ne 0 ]; then
    fail devinfo_runs "exit status $rc ($(first_err))"
else
    pass devinfo_runs
fi
expect_line devinfo_hca_id '^hca_id:[[:space:]]*efasim_0$' "efasim_0 not listed"
expect_line devinfo_one_port '^[[:space:]]*phys_port_cnt:[[:space:]]*1$' "phys_port_cnt"

# The "state:" line that follows "port: 1" says PORT_ACTIVE.
state=$(awk '/^[[:space:]]*port:[[:space:]]*1$/ { p = 1; next }
             p && /^[[:space:]]*state:/ { print; exit }' "$tmp/out")
case $state in
*PORT_ACTIVE*) pass devinfo_port_1_active ;;
*) fail devinfo_port_1_active "port 1 state line: '${state:-none}'" ;;
esac

# ---- ibv_devinfo -v: every attribute query, the port's limits and GID ---------

run "$devinfo" -v -d efasim_0
if [ "$rc" -ne 0 ]; then
    fail devinfo_verbose_runs "exit status $rc ($(first_err))"
else
    pass devinfo_verbose_runs
fi
expect_line devinfo_verbose_max_msg_sz '^[[:space:]]*max_msg_sz:[[:space:]]*0x22e0$' \
    "max_msg_sz is not the 8928-byte MTU"
expect_line devinfo_verbose_gid 'GID\[ *0\]:[[:space:]]*0000:0000:0000:0000:0000:ffff:7f00:0001' \
    "GID 0 is not ::ffff:127.0.0.1"

# ---- Device list, an unknown device, several devices ---------------------------

run "$devinfo" -d no_such_device
if [ "$rc" -eq 0 ]; then
    fail devinfo_unknown_device "exit status 0 for a device that does not exist"
elif [ "$rc" -eq 124 ] || { [ "$rc" -gt 128 ] && [ "$rc" -lt 160 ]; }; then
    fail devinfo_unknown_device "exit status $rc (hang or signal)"
else
    pass devinfo_unknown_device
fi

run env EFASIM_NDEV=3 "$devinfo" -l
expect_line devinfo_list_three '^3 HCAs? found' "EFASIM_NDEV=3"
expect_line devinfo_list_efasim_2 '^[[:space:]]*efasim_2$' "EFASIM_NDEV=3"

if [ -x "$devices" ]; then
    run "$devices"
    if [ "$rc" -ne 0 ]; then
        fail ibv_devices_runs "exit status $rc ($(first_err))"
    else
        pass ibv_devices_runs
    fi
    expect_line ibv_devices_lists_efasim_0 '^[[:space:]]*efasim_0[[:space:]]' "not listed"
fi

# ---- ibv_ud_pingpong: UD between two processes, checked ------------------------

udpp=$(dirname "$devinfo")/ibv_ud_pingpong
# udpp_pair NAME ARGS...: a server and a client on TCP port 18515 + $$ % 1000, both exit 0.
udpp_pair() {
    name=$1
    shift
    port=$((18515 + $$ % 1000))
    $run_limit "$udpp" -d efasim_0 -g 0 -p "$port" "$@" >"$tmp/srv" 2>&1 &
    srv=$!
    sleep 1
    $run_limit "$udpp" -d efasim_0 -g 0 -p "$port" "$@" 127.0.0.1 >"$tmp/out" 2>&1
    rc=$?
    wait "$srv"
    src=$?
    if [ "$rc" -ne 0 ] || [ "$src" -ne 0 ]; then
        fail "$name" "client exit $rc, server exit $src: $(tail -n 2 "$tmp/out" | tr '\n' ' ')$(tail -n 2 "$tmp/srv" | tr '\n' ' ')"
    elif ! grep -q 'iters in' "$tmp/out"; then
        fail "$name" "the client reported no iterations: $(tail -n 2 "$tmp/out" | tr '\n' ' ')"
    else
        pass "$name ($(grep 'iters in' "$tmp/out" | head -n 1))"
    fi
}
if [ -x "$udpp" ]; then
    udpp_pair ud_pingpong_polling -n 200 -c
    udpp_pair ud_pingpong_events -n 100 -c -e
fi

summary
