#!/usr/bin/env bash
# MPI across two emulated hosts: two network namespaces joined by a bridge,
# each with its own address (efasim binds it, EFASIM_ADDR) and host name (a
# UTS namespace), and mpiexec in the host's namespace starting one hydra proxy
# in each through test/mpi/netns-launcher.sh (as ssh would). 2 ranks per host,
# placed round-robin (-hosts A:1,B:1 -n 4: ranks 0 and 2 on one host, 1 and 3
# on the other), so ranks on one host use MPICH's shared memory and ranks on
# different hosts use efarm (no MPIR_CVAR_NOLOCAL). Needs root and iproute2;
# prints SKIP and why otherwise.
#
# The -4hosts runs take four such hosts, one rank each, with efasim's device
# holding two address handles (EFASIM_MAX_AH=2): each rank talks to three
# remote NICs, so efarm releases and makes handles again while messages are in
# flight (doc/NETMOD.md, "Limits and memory"), with and without datagram loss.
# The -4x2 runs put two ranks on each of the four hosts (8 ranks, placed in
# blocks) with the device holding four handles: each rank talks to three remote
# NICs, and the two ranks of a host share the device's table, so they release
# and make handles again only because the table is the device's, not a
# process's (efasim counts it over every process on the device).
#
# Usage: run-two-hosts.sh [--prefix PREFIX] [--timeout SECONDS] [NAME...]
#   PREFIX  MPICH install with ch4:efarm (default as run-mpi-tests.sh)
#   NAME    run only the runs whose name starts with NAME
# Programs and logs go to build/mpitest-two-hosts (MPITEST_BUILD_DIR to change).
# Prints one PASS/FAIL/SKIP line per run, then "N passed, N failed".
#
# By hand (as root), after the namespaces exist (see setup below):
#   NETNS_HOSTS=10.199.1.1=NS_A=hosta,10.199.1.2=NS_B=hostb EFARM_DEVICE=sim \
#     mpiexec -launcher ssh -launcher-exec test/mpi/netns-launcher.sh -iface BRIDGE \
#     -hosts 10.199.1.1:1,10.199.1.2:1 -n 4 ./a.out
set -u
out=${MPITEST_BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build/mpitest-two-hosts}
timeout_s=180
usage_lines=2,22
# shellcheck source=test/mpi/mpitest-lib.sh
. "$(dirname "$0")/mpitest-lib.sh"

skipped=0
tag=$$
bridge=efbr$tag
nsa=efha$tag
nsb=efhb$tag
nsc=efhc$tag
nsd=efhd$tag
cleanup() {
    local ns
    for ns in "$nsa" "$nsb" "$nsc" "$nsd"; do
        ip netns del "$ns" 2>/dev/null
    done
    ip link del "$bridge" 2>/dev/null
}
finish() {
    cleanup
    echo "$passed passed, $failed failed, $skipped skipped"
    [ "$failed" -eq 0 ]
    exit
}
trap cleanup EXIT

if [ ! -x "$mpicc" ] || [ ! -x "$mpiexec" ]; then
    echo "FAIL two-hosts: no $mpicc or $mpiexec (build MPICH with scripts/mpich-build.sh)"
    failed=1
    finish
fi
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null 2>&1 || ! command -v unshare >/dev/null 2>&1; then
    echo "SKIP two-hosts: needs root, iproute2 (ip) and unshare"
    skipped=1
    finish
fi

# A run killed before its cleanup (SIGKILL) leaves its bridge behind, holding 10.199.1.254
# and the route to the hosts' subnet: every later run's proxies then fail to reach mpiexec,
# each test only at its timeout. So the bridges and namespaces of runs whose process is gone
# go first.
remove_stale() {
    local link pid h
    for link in $(ip -o link show type bridge 2>/dev/null | awk -F': ' '{ print $2 }'); do
        case $link in efbr[0-9]*) ;; *) continue ;; esac
        pid=${link#efbr}
        [ "$pid" != "$tag" ] && ! kill -0 "$pid" 2>/dev/null || continue
        echo "two-hosts: removing $link and its namespaces, left by run $pid, which is gone" >&2
        for h in a b c d; do
            ip netns del "efh$h$pid" 2>/dev/null
        done
        ip link del "$link" 2>/dev/null
    done
}

# The hosts: 10.199.1.1 to .4 on a bridge whose own address (.254) is mpiexec's.
setup() {
    remove_stale
    ip link add "$bridge" type bridge && ip addr add 10.199.1.254/24 dev "$bridge" &&
        ip link set "$bridge" up || return 1
    local i ns all=("$nsa" "$nsb" "$nsc" "$nsd")
    for i in 1 2 3 4; do
        ns=${all[i - 1]}
        ip netns add "$ns" && ip link add "efv$i$tag" type veth peer name "efp$i$tag" &&
            ip link set "efv$i$tag" netns "$ns" && ip link set "efp$i$tag" master "$bridge" &&
            ip link set "efp$i$tag" up && ip -n "$ns" addr add "10.199.1.$i/24" dev "efv$i$tag" &&
            ip -n "$ns" link set "efv$i$tag" up && ip -n "$ns" link set lo up || return 1
    done
}
if ! setup >"$out.setup.log" 2>&1; then
    echo "SKIP two-hosts: this machine does not allow the namespaces, veth or bridge ($(tail -n 1 "$out.setup.log"))"
    skipped=1
    finish
fi
rm -f "$out.setup.log"
mkdir -p "$out/logs"
export NETNS_HOSTS="10.199.1.1=$nsa=efarm-host-a,10.199.1.2=$nsb=efarm-host-b,10.199.1.3=$nsc=efarm-host-c,10.199.1.4=$nsd=efarm-host-d"
faults="EFASIM_LOSS=0.02 EFASIM_REORDER=0.05 EFASIM_SEED=7"

# Runs: NAME PROGRAM [VAR=VALUE...], 4 ranks, 2 per host. The programs' pair
# partners (rank ^ 1) are on the other host, so their per-step counter checks
# hold; wildcard_order, probe (rank 0 collects from every rank), collectives
# and rma_phases also move messages through shared memory, which efarm's
# counters do not see, so their counter checks are off. two_hosts checks the
# split itself: 0 efarm sends to a rank on the same host, all of them to the other.
runs=(
    "two_hosts-2x2 two_hosts MPITEST_RANKS_PER_HOST=2"
    "pt2pt_sizes-2x2 pt2pt_sizes MPITEST_MAX_SIZE=4194304"
    "wildcard_order-2x2 wildcard_order MPITEST_NO_PVAR_CHECK=1"
    "probe-2x2 probe MPITEST_NO_PVAR_CHECK=1"
    "ssend-2x2 ssend"
    "datatypes-2x2 datatypes"
    "collectives-2x2 collectives MPITEST_NO_PVAR_CHECK=1"
    "rma_phases-2x2 rma_phases MPITEST_NO_PVAR_CHECK=1"
    "collectives-ah-4hosts collectives EFASIM_MAX_AH=2 MPITEST_LOG_EXPECT=holds.no.more.address.handles.for.this.endpoint..max_ah.2"
    "match_model-ah-4hosts match_model EFASIM_MAX_AH=2 MPITEST_LOG_EXPECT=holds.no.more.address.handles"
    "wildcard_order-ah-4hosts wildcard_order EFASIM_MAX_AH=2 MPITEST_LOG_EXPECT=holds.no.more.address.handles"
    "rma_phases-ah-4hosts rma_phases EFASIM_MAX_AH=2 MPITEST_LOG_EXPECT=holds.no.more.address.handles"
    "collectives-ah-faults-4hosts collectives EFASIM_MAX_AH=2 $faults MPITEST_LOG_EXPECT=holds.no.more.address.handles"
    "match_model-ah-faults-4hosts match_model EFASIM_MAX_AH=2 $faults EFASIM_DUP=0.05 MPITEST_SEED=2 MPITEST_LOG_EXPECT=holds.no.more.address.handles"
    "collectives-ah-shared-4x2 collectives EFASIM_MAX_AH=4 MPITEST_NO_PVAR_CHECK=1 MPITEST_LOG_EXPECT=holds.no.more.address.handles.for.this.endpoint..max_ah.4.for.the.NIC.*share.2,.with.2.ranks"
    "rma_phases-ah-shared-4x2 rma_phases EFASIM_MAX_AH=4 MPITEST_NO_PVAR_CHECK=1 MPITEST_LOG_EXPECT=holds.no.more.address.handles"
)

for r in "${runs[@]}"; do
    read -r name prog vars <<<"$r"
    selected "$name" || continue
    build_prog "$prog"
    [ "${built[$prog]}" = ok ] || continue
    log=$out/logs/$name.log
    start=$(date +%s.%N)
    # shellcheck disable=SC2086 # $vars is a list of VAR=VALUE words
    hosts=10.199.1.1:1,10.199.1.2:1
    n=4
    case $name in
    *-4hosts) hosts=$hosts,10.199.1.3:1,10.199.1.4:1 ;;
    *-4x2) hosts=10.199.1.1:2,10.199.1.2:2,10.199.1.3:2,10.199.1.4:2 n=8 ;;
    esac
    (cd "$out" && "$top/scripts/hang-guard.sh" "$timeout_s" env EFARM_DEVICE=sim EFARM_PROFILE=reference $vars \
        "$mpiexec" -launcher ssh -launcher-exec "$top/test/mpi/netns-launcher.sh" -iface "$bridge" \
        -hosts "$hosts" -n "$n" "$out/$prog") >"$log" 2>&1
    status=$?
    secs=$(echo "$start $(date +%s.%N)" | awk '{ printf "%.1f", $2 - $1 }')
    judge "$name" "$prog" "$n" "$vars"
done
finish
