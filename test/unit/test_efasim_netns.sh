#!/bin/sh
# efasim between two hosts: two network namespaces joined by a veth pair, one
# efasim process in each (EFASIM_ADDR = its namespace's address), exchanging
# checked echoes. Then the same with the kernel's netem degrading the link
# (loss, delay, reordering), where the kernel offers netem, and with efasim's
# own fault injector. Needs root and iproute2; says SKIP (and why) otherwise.
#
#   test_efasim_netns.sh EFASIM_PINGPONG EFASIM_LIBDIR [kernel]
#
# With "kernel", the processes run on efasim's kernel front end (the system's
# rdma-core, libefasim-kernel.so from EFASIM_LIBDIR preloaded, a sysfs view per
# host) instead of its drop-in libraries.
#
# The recipe by hand (as root), from a build tree:
#   ip netns add ea; ip netns add eb
#   ip link add efva type veth peer name efvb
#   ip link set efva netns ea; ip link set efvb netns eb
#   ip -n ea addr add 10.199.0.1/24 dev efva; ip -n ea link set efva up; ip -n ea link set lo up
#   ip -n eb addr add 10.199.0.2/24 dev efvb; ip -n eb link set efvb up; ip -n eb link set lo up
#   ip netns exec ea tc qdisc add dev efva root netem loss 5% delay 1ms 200us reorder 10%
#   ip netns exec ea env LD_LIBRARY_PATH=src/efasim/.libs EFASIM_ADDR=10.199.0.1 \
#       test/unit/efasim-pingpong server /tmp/rdv 1000 &
#   ip netns exec eb env LD_LIBRARY_PATH=src/efasim/.libs EFASIM_ADDR=10.199.0.2 \
#       test/unit/efasim-pingpong client /tmp/rdv 1000
#   ip netns del ea; ip netns del eb
set -u
pingpong=$1
libdir=$2
front_end=${3:-verbs}
passed=0 failed=0 skipped=0
a=efarm_a$$ b=efarm_b$$ va=efva$$ vb=efvb$$
dir=$(mktemp -d)

pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
skip() { echo "SKIP $1: $2"; skipped=$((skipped + 1)); }
finish() {
    ip netns del "$a" 2>/dev/null
    ip netns del "$b" 2>/dev/null
    rm -rf "$dir"
    echo "$passed passed, $failed failed, $skipped skipped"
    [ "$failed" -eq 0 ]
    exit
}

if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null 2>&1; then
    skip netns "needs root and iproute2 (ip)"
    finish
fi
if ! ip netns add "$a" 2>/dev/null || ! ip netns add "$b" 2>/dev/null; then
    skip netns "this machine does not allow network namespaces"
    finish
fi
if ! ip link add "$va" type veth peer name "$vb" 2>/dev/null; then
    skip netns "this machine does not allow veth links"
    finish
fi
ip link set "$va" netns "$a" && ip link set "$vb" netns "$b" &&
    ip -n "$a" addr add 10.199.0.1/24 dev "$va" && ip -n "$a" link set "$va" up &&
    ip -n "$a" link set lo up &&
    ip -n "$b" addr add 10.199.0.2/24 dev "$vb" && ip -n "$b" link set "$vb" up &&
    ip -n "$b" link set lo up || { fail setup "could not configure the veth pair"; finish; }

# device_env HOST: the VAR=VALUE words that put a process on efasim's front end.
device_env() {
    if [ "$front_end" = kernel ]; then
        mkdir -p "$dir/sysfs-$1"
        echo "LD_PRELOAD=$libdir/libefasim-kernel.so SYSFS_PATH=$dir/sysfs-$1"
    else
        echo "LD_LIBRARY_PATH=$libdir"
    fi
}

# run NAME COUNT [VAR=VALUE...]: one server in $a, one client in $b.
run() {
    name=$1 count=$2
    shift 2
    rm -f "$dir/server.addr"
    # shellcheck disable=SC2046 # device_env prints VAR=VALUE words
    ip netns exec "$a" env $(device_env a) EFASIM_ADDR=10.199.0.1 "$@" \
        "$pingpong" server "$dir" "$count" >"$dir/server.log" 2>&1 &
    server=$!
    # shellcheck disable=SC2046
    if ip netns exec "$b" env $(device_env b) EFASIM_ADDR=10.199.0.2 "$@" \
        "$pingpong" client "$dir" "$count" >"$dir/client.log" 2>&1 && wait "$server"; then
        pass "$name"
    else
        wait "$server" 2>/dev/null
        fail "$name" "$(cat "$dir/client.log" "$dir/server.log" | tr '\n' ' ')"
    fi
}

run netns_veth_echo 2000
if ip netns exec "$a" tc qdisc add dev "$va" root netem loss 5% delay 1ms 200us reorder 10% \
    2>/dev/null && ip netns exec "$b" tc qdisc add dev "$vb" root netem loss 5% delay 1ms 2>/dev/null; then
    run netns_netem_loss_delay_reorder 500
    ip netns exec "$a" tc qdisc del dev "$va" root 2>/dev/null
    ip netns exec "$b" tc qdisc del dev "$vb" root 2>/dev/null
else
    skip netns_netem "the kernel has no netem qdisc (sch_netem) here; efasim's injector covers loss"
fi
run netns_efasim_faults 1000 EFASIM_LOSS=0.1 EFASIM_DUP=0.05 EFASIM_REORDER=0.2 EFASIM_RTO_US=500
finish
