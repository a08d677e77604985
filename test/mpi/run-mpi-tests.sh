#!/usr/bin/env bash
# Build the MPI test programs of test/mpi with MPICH's mpicc and run each with
# `mpiexec -n 2` and `-n 4` over ch4:efarm on efasim (EFARM_DEVICE=sim,
# MPIR_CVAR_NOLOCAL=1 so every byte crosses efarm), each under timeout(1).
# Prints one PASS/FAIL line per build failure and per run, then
# "N passed, N failed"; exits nonzero if anything failed.
#
# Usage: run-mpi-tests.sh [--prefix PREFIX] [--timeout SECONDS] [--front-end verbs|kernel]
#                         [--except NAME]... [--mpicc WRAPPER] [NAME...]
#   PREFIX   MPICH install with ch4:efarm (default: where scripts/mpich-build.sh
#            installs, EFARM_MPICH_PREFIX or build/mpich/install)
#   kernel   efarm on EFA's own path: the system's rdma-core on efasim's emulated
#            uverbs device (EFARM_DEVICE=efa; scripts/efasim-env.sh); the runs
#            that need what rdma-core 44's EFA provider lacks (RDMA write) or
#            that check the drop-in's own messages are left out, each with a
#            SKIP line saying why
#   NAME     run only the runs whose name starts with NAME (e.g. probe,
#            pt2pt_sizes-faults); see the table below
#   --except NAME   leave out the runs whose name starts with NAME
#   --mpicc WRAPPER  compile with PREFIX/bin/WRAPPER: mpicc_abi for MPICH 5.0's
#            MPI standard ABI (scripts/mpich-build.sh --abi)
# Programs and logs go to build/mpitest (MPITEST_BUILD_DIR to change).
set -u
out=${MPITEST_BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build/mpitest}
timeout_s=120
usage_lines=2,22
# shellcheck source=test/mpi/mpitest-lib.sh
. "$(dirname "$0")/mpitest-lib.sh"

finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit
}

if [ ! -x "$mpicc" ] || [ ! -x "$mpiexec" ]; then
    echo "FAIL mpi-tests: no $mpicc or $mpiexec (build MPICH with scripts/mpich-build.sh)"
    failed=1
    finish
fi
mkdir -p "$out/logs"

# What efarm's info log says of the device it opened (loader.c): efasim's drop-in
# or the system's rdma-core.
case $front_end in
verbs) device_said="efasim,.the.emulated.EFA.device..EFARM_DEVICE=sim" ;;
*) device_said="EFA.through.the.system.s.rdma-core..EFARM_DEVICE=efa" ;;
esac
# Runs: NAME PROGRAM RANKS [VAR=VALUE...]. The -faults runs turn on efasim's
# datagram loss and reordering (below its reliability layer: every message
# must still arrive, intact and in MPI order) with smaller messages to bound
# the time; the -tuned and -noread runs move efarm's thresholds (the programs
# read the thresholds in force from efarm's MPI_T variables, so every boundary
# they check moves with them). Every run gets EFARM_PROFILE=reference (the
# reference's thresholds: medium to 64 KiB, reads from 1 MiB) unless it names
# another: the -profile runs take efasim's measured profile (issue 13).
faults="EFASIM_LOSS=0.02 EFASIM_REORDER=0.05 EFASIM_SEED=7"
# Huge pages for hugepages.c: reserved here when this may (root) and given back at
# the end, so that its hugetlb half must run; elsewhere it says SKIP for that half.
hugetlb=
hp_file=/proc/sys/vm/nr_hugepages
if [ -w "$hp_file" ] && hp_saved=$(cat "$hp_file") && [ "$hp_saved" -lt 64 ] &&
    echo 64 >"$hp_file" 2>/dev/null; then
    trap 'echo "$hp_saved" >"$hp_file"' EXIT
    [ "$(cat "$hp_file")" -lt 48 ] || hugetlb=MPITEST_HUGETLB=require
fi
# Pinned memory (EFASIM_MEMLOCK: `ulimit -l` in bytes, as for a process without
# CAP_IPC_LOCK): 24 MiB leaves a rank room for its endpoint's pools (about 9 MiB)
# and for some registrations, not for every 4 MiB buffer and window: those go by
# copy (long-CTS) and active messages, with one warning naming `ulimit -l`.
memlock="EFASIM_MEMLOCK=25165824"
# Multi-rail: two efasim devices, an endpoint on each, striping from 64 KiB.
rails="EFASIM_NDEV=2 EFARM_RAILS=2 EFARM_STRIPE_MIN=65536"
# The soak runs' length (soak.c): MPITEST_SOAK_SECONDS from the environment (10 s
# by default; CI runs soak-faults-n4 for 60 s, the documented runs are 30 minutes),
# a report every tenth of it.
soak_s=${MPITEST_SOAK_SECONDS:-10}
soak_report=$(((soak_s + 9) / 10))
# efarm's control variables (cvars.c): as many as doc/TUNABLES.md lists with an MPI_T type.
ncvars=$(grep -c '^| `EFARM_[A-Z0-9_]*` | \(int\|boolean\|string\) |' "$top/doc/TUNABLES.md")
cvars="MPITEST_CVARS_COUNT=$ncvars"
cvars_pvars="MPITEST_PVAR_EXPECT=efarm_nm_medium_max=20000,efarm_nm_read_min=300000"
runs=(
    "cvars-n2 cvars 2 $cvars"
    "cvars-write-n2 cvars 2 $cvars EFASIM_NDEV=2 MPITEST_CVAR_WRITE=MEDIUM_MAX=20000,READ_MIN=300000,RAILS=2 $cvars_pvars,efarm_nm_nrails=2"
    "cvars-info-log-n2 cvars 2 $cvars EFARM_LOG_LEVEL=info MPITEST_LOG_EXPECT=MPI.rank.1:.$device_said.;.device.efasim_0:"
    "cvars-env-n2 cvars 2 $cvars MPIR_CVAR_CH4_EFARM_MEDIUM_MAX=20000 MPICH_CH4_EFARM_READ_MIN=300000 $cvars_pvars"
    "pt2pt_sizes-n2 pt2pt_sizes 2"
    "pt2pt_sizes-n4 pt2pt_sizes 4"
    "wildcard_order-n2 wildcard_order 2"
    "wildcard_order-n4 wildcard_order 4"
    "probe-n2 probe 2"
    "probe-n4 probe 4"
    "match_model-n2 match_model 2"
    "match_model-n4 match_model 4"
    "match_model-n8 match_model 8"
    "match_model-faults-n4 match_model 4 $faults EFASIM_DUP=0.05 MPITEST_SEED=2"
    "match_model-faults-n8 match_model 8 $faults EFASIM_DUP=0.05 MPITEST_SEED=3"
    "cancel_status-n2 cancel_status 2"
    "cancel_status-n4 cancel_status 4"
    "ssend-n2 ssend 2"
    "ssend-n4 ssend 4"
    "comm_free_pending-n2 comm_free_pending 2"
    "comm_free_pending-n3 comm_free_pending 3"
    "datatypes-n2 datatypes 2"
    "datatypes-n4 datatypes 4"
    "collectives-n2 collectives 2"
    "collectives-n4 collectives 4"
    "comm_hints-n2 comm_hints 2 EFARM_UNEXP_BYTES=100000"
    "stripe-n2 stripe 2 $rails"
    "stripe-n4 stripe 4 $rails"
    "stripe-faults-n2 stripe 2 $rails $faults"
    "stripe-profile-n2 stripe 2 $rails EFARM_PROFILE=efasim"
    "stripe-off-n2 stripe 2 EFASIM_NDEV=2 MPITEST_RAILS=1"
    "comm_hints-n4 comm_hints 4 EFARM_UNEXP_BYTES=150000"
    "pt2pt_sizes-profile-n2 pt2pt_sizes 2 EFARM_PROFILE=efasim"
    "datatypes-profile-n2 datatypes 2 EFARM_PROFILE=efasim"
    "probe-profile-n2 probe 2 EFARM_PROFILE=efasim"
    "wildcard_order-profile-n2 wildcard_order 2 EFARM_PROFILE=efasim"
    "pt2pt_sizes-tuned-n2 pt2pt_sizes 2 EFARM_EAGER_MAX=1000 EFARM_MEDIUM_MAX=20000 EFARM_READ_MIN=300000 MPITEST_MAX_SIZE=2097152"
    "pt2pt_sizes-noread-n2 pt2pt_sizes 2 EFARM_RDMA_READ=0 MPITEST_MAX_SIZE=4194304"
    "pt2pt_sizes-faults-n2 pt2pt_sizes 2 $faults MPITEST_MAX_SIZE=4194304"
    "pt2pt_sizes-faults-n4 pt2pt_sizes 4 $faults MPITEST_MAX_SIZE=2097152"
    "wildcard_order-faults-n2 wildcard_order 2 $faults MPITEST_EXPECT_REORDER=1"
    "wildcard_order-faults-n4 wildcard_order 4 $faults MPITEST_EXPECT_REORDER=1 MPITEST_MAX_SIZE=2097152"
    "unexpected_flood-n2 unexpected_flood 2 MPITEST_FLOOD_N=20000"
    "unexpected_flood-100k-n2 unexpected_flood 2 MPITEST_FLOOD_N=100000"
    "unexpected_flood-n4 unexpected_flood 4 MPITEST_FLOOD_N=20000"
    "finalize_flush-loss-n2 finalize_flush 2 EFASIM_LOSS=0.3 EFASIM_SEED=5"
    "finalize_flush-loss-n4 finalize_flush 4 EFASIM_LOSS=0.3 EFASIM_SEED=6"
    "rma_phases-n2 rma_phases 2 MALLOC_PERTURB_=165"
    "rma_phases-n4 rma_phases 4 MALLOC_PERTURB_=165"
    "rma_native-n2 rma_native 2 EFASIM_RDMA_WRITE=1 MPITEST_RMA_PROTO=direct MPITEST_RMA_PASSIVE=20"
    "rma_native-n4 rma_native 4 EFASIM_RDMA_WRITE=1 MPITEST_RMA_PROTO=direct"
    "rma_native-emulated-n2 rma_native 2 EFARM_RDMA_WRITE=0 EFARM_RDMA_READ=0 MPITEST_RMA_PROTO=emulated"
    "rma_native-emulated-n4 rma_native 4 EFARM_RDMA_WRITE=0 EFARM_RDMA_READ=0 MPITEST_RMA_PROTO=emulated"
    "rma_native-longread-n2 rma_native 2 EFARM_RDMA_WRITE=0 MPITEST_RMA_PROTO=longread"
    "rma_native-am-n2 rma_native 2 EFARM_RMA_NATIVE=0 MPITEST_RMA_EXPECT=am"
    "rma_native-faults-n2 rma_native 2 EFASIM_RDMA_WRITE=1 $faults"
    "rma_dynamic-n2 rma_dynamic 2 EFASIM_RDMA_WRITE=1 MPITEST_RMA_PASSIVE=20"
    "rma_dynamic-n4 rma_dynamic 4 EFASIM_RDMA_WRITE=1"
    "rma_dynamic-emulated-n2 rma_dynamic 2 EFARM_RDMA_WRITE=0 EFARM_RDMA_READ=0"
    "rma_dynamic-am-n2 rma_dynamic 2 EFARM_RMA_NATIVE=0 MPITEST_RMA_EXPECT=am"
    "rma_dynamic-faults-n4 rma_dynamic 4 EFASIM_RDMA_WRITE=1 $faults"
    "pt2pt_sizes-small-sq-n2 pt2pt_sizes 2 EFASIM_MAX_SQ_WR=16 MPITEST_MAX_SIZE=4194304"
    "soak-n2 soak 2 MPITEST_SOAK_SECONDS=$soak_s MPITEST_SOAK_REPORT=$soak_report"
    "soak-faults-n4 soak 4 MPITEST_SOAK_SECONDS=$soak_s MPITEST_SOAK_REPORT=$soak_report EFASIM_LOSS=0.05 EFASIM_DUP=0.05 EFASIM_REORDER=0.1 EFASIM_SEED=11"
    "mr_cache_reuse-n2 mr_cache_reuse 2"
    "mr_cache_reuse-n4 mr_cache_reuse 4"
    "mr_cache_reuse-off-n2 mr_cache_reuse 2 EFARM_MR_CACHE=0 MPITEST_MR_CACHE=off"
    "intercomm-n2 intercomm 2"
    "intercomm-n4 intercomm 4"
    "intercomm-faults-n4 intercomm 4 $faults"
    "sessions-n2 sessions 2"
    "sessions-n4 sessions 4"
    "dynproc-n2 dynproc 2"
    "dynproc-n1 dynproc 1"
    "dynproc-faults-n2 dynproc 2 $faults EFASIM_DUP=0.05"
    "threads-n2 threads 2"
    "threads-n4 threads 4"
    "threads-faults-n2 threads 2 $faults MPITEST_THREAD_MSGS=100"
    "vcis-n2 vcis 2"
    "vcis-n3 vcis 3"
    "fork-n2 fork 2"
    "fork-n3 fork 3"
    "fork-faults-n2 fork 2 $faults MPITEST_ROUNDS=4"
    "fork-memlock-n2 fork 2 $memlock"
    "hugepages-n2 hugepages 2 $hugetlb"
    "hugepages-n3 hugepages 3 $hugetlb"
    "pt2pt_sizes-memlock-n2 pt2pt_sizes 2 $memlock MPITEST_LOG_EXPECT=raise..ulimit.-l"
    "rma_native-memlock-n2 rma_native 2 EFASIM_RDMA_WRITE=1 EFASIM_MEMLOCK=9437184 MPITEST_RMA_EXPECT=mixed MPITEST_LOG_EXPECT=served.without.registration"
    "mr_cache_reuse-memlock-n2 mr_cache_reuse 2 $memlock"
    "rma_native-rw-pages-n2 rma_native 2 EFASIM_RDMA_WRITE=1 EFASIM_MAX_RW_MR_PAGES=16 MPITEST_RMA_EXPECT=mixed MPITEST_LOG_EXPECT=open.to.RDMA.write,.and.takes.them.without"
)

# Runs that must fail: NAME PROGRAM RANKS PATTERN [VAR=VALUE...]. They pass when
# mpiexec exits nonzero before the timeout and the log matches PATTERN (grep -E):
# a limit that is reached must end the job with a message naming its knob. The
# budget run accepts efarm's warning when the budget is reached ("... raise
# EFARM_UNEXP_MAX_BYTES. The endpoint fails if ...") as well as the error when the
# endpoint fails ("... Raise EFARM_UNEXP_MAX_BYTES"): hydra may drop an aborting
# process's last lines (seen once in 12 CI runs: the warning, then exit 143 and
# nothing more).
tiny_budget="EFARM_RX_BUFFERS=32 EFARM_UNEXP_BYTES=16384 EFARM_UNEXP_MAX_BYTES=65536"
failruns=(
    "cvars-refused-env-n2 cvars 2 MPIR_CVAR_CH4_EFARM_RECVWIN=100.refused $cvars MPIR_CVAR_CH4_EFARM_RECVWIN=100"
    "cvars-refused-efarm-n2 cvars 2 EFARM_RECVWIN=100.refused:.expected.a.power.of.2.from.1.to.65536 $cvars EFARM_RECVWIN=100"
    "cvars-refused-write-n2 cvars 2 MPIR_CVAR_CH4_EFARM_RECVWIN=100.refused $cvars MPITEST_CVAR_WRITE=RECVWIN=100"
    "cvars-refused-write-string-n2 cvars 2 MPIR_CVAR_CH4_EFARM_PROTO=fastest.refused:.expected.one.of.auto $cvars MPITEST_CVAR_WRITE=PROTO=fastest"
    "cvars-refused-device-n2 cvars 2 EFARM_DEVICE=nic.refused:.expected.one.of.auto,.efa,.sim $cvars EFARM_DEVICE=nic"
    "cvars-refused-eager-n2 cvars 2 EFARM_EAGER_MAX=9000.refused:.one.packet $cvars EFARM_EAGER_MAX=9000"
    "sq-depth-refused-n2 cvars 2 EFARM_SQ_DEPTH=256.refused:.efasim_0.takes.at.most.16.send $cvars EFASIM_MAX_SQ_WR=16 EFARM_SQ_DEPTH=256"
    "unexpected_flood-tiny-budget-n2 unexpected_flood 2 [Rr]aise.EFARM_UNEXP_MAX_BYTES $tiny_budget EFARM_RX_FULL_TIMEOUT_MS=2000 MPITEST_FLOOD_N=20000"
    "rma_native-passive-emulated-n2 rma_native 2 mem.0.....FLAG:.0.vs EFARM_RDMA_WRITE=0 MPITEST_RMA_PASSIVE=3"
    "rma_dynamic-passive-emulated-n2 rma_dynamic 2 mem.0.....FLAG:.0.vs EFARM_RDMA_WRITE=0 MPITEST_RMA_PASSIVE=3"
    "fork-safe-child-loses-pages-n2 fork 2 expected.WIFEXITED.st.*the.child.reads.registered.memory RDMAV_FORK_SAFE=1"
    "memlock-too-low-n2 cvars 2 within..ulimit.-l.,.4096.KiB.here,.and.efarm.needs.at.least $cvars EFASIM_MEMLOCK=4194304"
)

# Several VCIs (vcis.c; doc/NETMOD.md, "Threads"): only an MPICH 4.3 or 5.0 built
# with per-VCI critical sections has them; ch4:efarm refuses more than one elsewhere.
vci4="MPIR_CVAR_CH4_NUM_VCIS=4"
per_vci=no
"$prefix/bin/mpichversion" 2>/dev/null | grep -q -- '--enable-thread-cs=per-vci' && per_vci=yes
if [ "$per_vci" = yes ]; then
    runs+=(
        "vcis-4-n2 vcis 2 $vci4"
        "vcis-4-n3 vcis 3 $vci4"
        "vcis-4-n4 vcis 4 $vci4"
        "vcis-4-faults-n2 vcis 2 $vci4 $faults MPITEST_ROUNDS=5"
        "vcis-reserved-streams-n2 vcis 2 MPIR_CVAR_CH4_NUM_VCIS=2 MPIR_CVAR_CH4_RESERVE_VCIS=2 MPITEST_VCIS=4 MPITEST_STREAMS=1"
        "threads-vcis-n4 threads 4 $vci4"
        "threads-vcis-faults-n2 threads 2 $vci4 $faults MPITEST_THREAD_MSGS=100"
        "probe-vcis-n4 probe 4 $vci4"
        "wildcard_order-vcis-n4 wildcard_order 4 $vci4"
        "comm_free_pending-vcis-n2 comm_free_pending 2 $vci4 MPITEST_ROUNDS=500"
        "collectives-vcis-n4 collectives 4 $vci4"
        "rma_native-vcis-n4 rma_native 4 $vci4 EFASIM_RDMA_WRITE=1 MPITEST_RMA_PROTO=direct"
        "rma_native-vcis-emulated-n2 rma_native 2 $vci4 EFARM_RDMA_WRITE=0 EFARM_RDMA_READ=0 MPITEST_RMA_PROTO=emulated"
        "rma_native-vcis-faults-n2 rma_native 2 $vci4 EFASIM_RDMA_WRITE=1 $faults"
        "rma_dynamic-vcis-n4 rma_dynamic 4 $vci4 EFASIM_RDMA_WRITE=1"
        "rma_phases-vcis-n4 rma_phases 4 $vci4 MALLOC_PERTURB_=165"
    )
    # MPICH 4.3 checks its own VCI limit before the netmod starts (ch4_init.c); 5.0 leaves
    # it to the netmod. The device's limit (max_qp) counts every QP on the device, over
    # both ranks as on EFA: two ranks of four VCIs need eight where efasim holds six,
    # although each rank's four would fit.
    if "$prefix/bin/mpichversion" 2>/dev/null | grep -Eq 'Version:[[:space:]]+4\.'; then
        failruns+=("vcis-too-many-n2 vcis 2 n_total_vcis.<=.MPIDI_CH4_MAX_VCIS MPIR_CVAR_CH4_NUM_VCIS=65")
    else
        failruns+=("vcis-too-many-n2 vcis 2 opened.1.of.the.65.VCIs.*at.most.64 MPIR_CVAR_CH4_NUM_VCIS=65")
    fi
    failruns+=("vcis-device-limit-n2 vcis 2 efasim_0.refused.a.queue.pair.*holds.6..max_qp.&&opened.[1-3].of.the.4.VCIs.MPIR_CVAR_CH4_NUM_VCIS $vci4 EFASIM_MAX_QP=6")
else
    # MPICH's own check stops it first (ch4_init.c: n_vcis <= MPIDI_CH4_MAX_VCIS) where
    # ch4 has one VCI; efarm's message where the build allows more.
    failruns+=("vcis-refused-n2 vcis 2 n_vcis.<=.MPIDI_CH4_MAX_VCIS|drives.one.VCI $vci4")
fi

# Runs that must hang: NAME PROGRAM RANKS. They pass when the hang guard ends the job
# at the time limit (HANG_S, not the usual one) with the stack of every rank, each
# inside MPI_Recv: a hang in any test is a failure that shows where every rank was.
hang_s=8
hangruns=(
    "hang-stacks-n2 hang 2"
    "hang-stacks-n4 hang 4"
)

# The default device on a host without EFA: MPI_Init fails and says how to ask for efasim.
# On the kernel front end the host has one (efasim's, in its sysfs view): auto takes it,
# through the system's rdma-core.
if [ "$front_end" = kernel ]; then
    runs+=("device-auto-finds-efa-n2 cvars 2 $cvars EFARM_DEVICE=auto EFARM_LOG_LEVEL=info MPITEST_LOG_EXPECT=MPI.rank.1:.EFA.through.the.system.s.rdma-core..EFARM_DEVICE=auto:.*lists.the.EFA.device.efasim_0")
elif ! grep -qs 0x1d0f /sys/class/infiniband/*/device/vendor; then
    failruns+=("device-auto-without-efa-n2 cvars 2 no.EFA.device.on.this.host.*EFARM_DEVICE=sim $cvars EFARM_DEVICE=auto")
fi

# NIC placement runs (nic_placement.c): NAME RANKS BIND MODEL NDEV EXPECT. efasim gets
# NDEV devices and its own sysfs directory (so its per-device counters start at zero),
# efarm the machine MODEL (EFARM_TOPOLOGY, written by efarm-topo-xml: PUs numbered
# round-robin over the sockets, so this machine's CPUs 0 and 1 sit on different
# sockets), and mpiexec binds the ranks to cores (BIND core; oversubscribed: rank i
# on CPU i mod 2) or not (none). EXPECT is MPITEST_NIC_EXPECT. After the job,
# `efasim-info --counters` must show traffic on exactly the devices the program
# printed as used.
p5_nics=$(for i in $(seq 0 31); do printf 'efasim_%d:%d,' "$i" $((i % 2)); done)
p5_even=$(seq -s, 0 2 30)
p5_odd=$(seq -s, 1 2 31)
topo_args() { # MODEL
    case $1 in
    one) echo "--packages 1 --cores 8 --nics efasim_0:0" ;;
    p4d) echo "--packages 2 --cores 24 --interleave --nics efasim_0:0,efasim_1:0,efasim_2:1,efasim_3:1" ;;
    p5) echo "--packages 2 --cores 48 --interleave --nics ${p5_nics%,}" ;;
    esac
}
nicruns=(
    "nic_placement-one-socket-n4 4 core one 1 0:0;1:0"
    "nic_placement-p4d-n8 8 core p4d 4 0:0,1;1:2,3"
    "nic_placement-p4d-unbound-n8 8 none p4d 4 *:0,1,2,3"
    "nic_placement-p5-n8 8 core p5 32 0:$p5_even;1:$p5_odd"
    "nic_placement-p4d-n4 4 core p4d 4 0:0,1;1:2,3"
)

# Build every program a selected run needs.
for r in "${nicruns[@]}"; do
    read -r name _ <<<"$r"
    selected "$name" && nic_selected=1
done
if [ -n "${nic_selected:-}" ]; then
    log=$out/logs/build-efarm-topo-xml.log
    if build_topo_xml "$log" &&
        "$mpicc" -std=c11 -O2 -g -Wall -Wextra -Werror -I"$top/test/mpi" -o "$out/nic_placement" \
            "$top/test/mpi/nic_placement.c" "$top/test/mpi/efarm_mpitest.c" >>"$log" 2>&1; then
        built[nic_placement]=ok
    else
        built[nic_placement]=failed
        fail "build-nic_placement" "$log"
    fi
fi
for r in "${runs[@]}" "${failruns[@]}" "${hangruns[@]}"; do
    read -r name prog _ <<<"$r"
    selected "$name" || continue
    build_prog "$prog"
done
if [ "$per_vci" = yes ] && selected vcis-rails-n2; then build_prog vcis; fi

# launch NAME PROG RANKS VARS: run one job; sets status, secs and log (or returns 1 if the
# program was not built, reported as a failure).
launch() {
    log=$out/logs/$1.log
    if [ "${built[$2]}" != ok ]; then
        echo "FAIL $1 (not built)"
        failed=$((failed + 1))
        return 1
    fi
    local start
    start=$(date +%s.%N)
    # shellcheck disable=SC2086 # $4 is a list of VAR=VALUE words
    "$top/scripts/hang-guard.sh" "$timeout_s" env "${device_env[@]}" MPIR_CVAR_NOLOCAL=1 EFARM_PROFILE=reference $4 \
        "$mpiexec" -n "$3" "$out/$2" >"$log" 2>&1
    status=$?
    secs=$(echo "$start $(date +%s.%N)" | awk '{ printf "%.1f", $2 - $1 }')
    if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
        echo "(timed out after $timeout_s s)" >>"$log"
    fi
}

# Whether the device path gives RDMA write (efarm-info asks it): the system's rdma-core
# offers EFA's RDMA write from release 45, so with an older one the kernel front end's
# runs that need it (EFASIM_RDMA_WRITE=1: writes landing with no progress at the
# target, the counters of direct writes) are SKIP lines, their emulated and long-read
# twins still run.
device_writes=no
if [ -x "$prefix/bin/efarm-info" ] &&
    env "${device_env[@]}" EFASIM_RDMA_WRITE=1 "$prefix/bin/efarm-info" 2>/dev/null | grep -q ', write yes,'; then
    device_writes=yes
fi
# skipped NAME VARS: prints a SKIP line and is true when the run needs what this
# front end's device path lacks.
skipped() {
    case " $2 " in
    *" EFASIM_RDMA_WRITE=1 "*)
        if [ "$device_writes" = no ]; then
            echo "SKIP $1 (needs RDMA write, which the $front_end front end's device path does not offer: efarm-info says write no)"
            return 0
        fi
        ;;
    esac
    return 1
}

for r in "${runs[@]}"; do
    read -r name prog ranks vars <<<"$r"
    selected "$name" || continue
    skipped "$name" "$vars" && continue
    launch "$name" "$prog" "$ranks" "$vars" || continue
    judge "$name" "$prog" "$ranks" "$vars"
done

# Ranks that set EFARM_RAILS differently (MPMD): rank 0 opens two rails, rank 1 one;
# every card has four slots, so they agree to stripe nothing and all else works.
if selected stripe-mixed-n2; then
    name=stripe-mixed-n2
    if [ "${built[stripe]:-}" != ok ]; then
        echo "FAIL $name (not built)"
        failed=$((failed + 1))
    else
        log=$out/logs/$name.log
        start=$(date +%s.%N)
        "$top/scripts/hang-guard.sh" "$timeout_s" env "${device_env[@]}" MPIR_CVAR_NOLOCAL=1 EFARM_PROFILE=reference \
            EFASIM_NDEV=2 EFARM_STRIPE_MIN=65536 "$mpiexec" \
            -n 1 -env EFARM_RAILS 2 -env MPITEST_RAILS 2 -env MPITEST_PEER_RAILS 1 "$out/stripe" : \
            -n 1 -env MPITEST_RAILS 1 -env MPITEST_PEER_RAILS 2 "$out/stripe" >"$log" 2>&1
        status=$?
        secs=$(echo "$start $(date +%s.%N)" | awk '{ printf "%.1f", $2 - $1 }')
        judge "$name" stripe 2
    fi
fi

# efasim's counters per device, as "NAME TX_PKTS RX_PKTS" lines, in its sysfs directory $1.
device_traffic() {
    SYSFS_PATH=$1 EFASIM_NDEV=$2 "$prefix/bin/efasim-info" --counters | awk '{ print $1, $3, $7 }'
}
# sysfs_fresh NAME: an empty sysfs directory of the run's own in $sysfs (efasim's
# per-device counters start at zero there).
sysfs_fresh() {
    sysfs=$out/sysfs-$1
    rm -rf "$sysfs"
    mkdir -p "$sysfs"
}
# traffic_logged NDEV: device_traffic of $sysfs into $traffic, also appended to $log.
traffic_logged() {
    traffic=$(device_traffic "$sysfs" "$1")
    { echo "efasim counters (device tx_pkts rx_pkts):"; echo "$traffic"; } >>"$log"
}

for r in "${nicruns[@]}"; do
    read -r name ranks bind model ndev expect <<<"$r"
    selected "$name" || continue
    if [ "${built[nic_placement]}" != ok ]; then
        echo "FAIL $name (not built)"
        failed=$((failed + 1))
        continue
    fi
    log=$out/logs/$name.log
    sysfs_fresh "$name"
    # shellcheck disable=SC2046 # topo_args is a list of words
    "$out/efarm-topo-xml" $(topo_args "$model") >"$out/topo-$model.xml"
    start=$(date +%s.%N)
    "$top/scripts/hang-guard.sh" "$timeout_s" env "${device_env[@]}" MPIR_CVAR_NOLOCAL=1 SYSFS_PATH="$sysfs" \
        EFASIM_NDEV="$ndev" EFARM_TOPOLOGY="$out/topo-$model.xml" EFARM_NIC_VERBOSE=1 \
        MPITEST_NIC_EXPECT="$expect" "$mpiexec" -n "$ranks" -bind-to "$bind" \
        "$out/nic_placement" >"$log" 2>&1
    status=$?
    secs=$(echo "$start $(date +%s.%N)" | awk '{ printf "%.1f", $2 - $1 }')
    traffic_logged "$ndev"
    used=$(sed -n 's/^nic-used: //p' "$log" | sort)
    active=$(echo "$traffic" | awk '$2 > 0 && $3 > 0 { print $1 }' | sort)
    idle_with_traffic=$(echo "$traffic" | awk '$2 > 0 || $3 > 0 { print $1 }' | sort)
    if [ "$status" -ne 0 ]; then
        fail "$name (exit $status, ${secs} s)" "$log"
    elif ! grep -q "^nic_placement: OK ($ranks ranks)" "$log"; then
        fail "$name (no OK line, ${secs} s)" "$log"
    elif [ -z "$used" ] || [ "$used" != "$active" ] || [ "$used" != "$idle_with_traffic" ]; then
        echo "devices used: $used; with traffic both ways: $active; with any traffic: $idle_with_traffic" >>"$log"
        fail "$name (traffic not on exactly the chosen devices, ${secs} s)" "$log"
    else
        pass "$name (${secs} s; devices $(echo $used | tr ' ' ,))"
    fi
done

# VCIs spread over the rails (per-VCI builds): rank 0 has two rails (efasim_0 and
# efasim_1) and four VCIs, so VCIs 1 and 3 open on efasim_1; rank 1 may use efasim_0
# only (EFARM_IFACE). Messages stay below the striping threshold, so efasim_1 carries
# traffic both ways only if rank 0's VCIs went there (all on efasim_0 otherwise).
if [ "$per_vci" = yes ] && selected vcis-rails-n2; then
    name=vcis-rails-n2
    if [ "${built[vcis]:-}" != ok ]; then
        echo "FAIL $name (not built)"
        failed=$((failed + 1))
    else
        log=$out/logs/$name.log
        sysfs_fresh "$name"
        start=$(date +%s.%N)
        "$top/scripts/hang-guard.sh" "$timeout_s" env "${device_env[@]}" MPIR_CVAR_NOLOCAL=1 \
            EFARM_PROFILE=reference SYSFS_PATH="$sysfs" EFASIM_NDEV=2 EFARM_STRIPE_MIN=65536 $vci4 MPITEST_MAX_SIZE=32768 \
            "$mpiexec" -n 1 -env EFARM_RAILS 2 "$out/vcis" : \
            -n 1 -env EFARM_IFACE efasim_0 "$out/vcis" >"$log" 2>&1
        status=$?
        secs=$(echo "$start $(date +%s.%N)" | awk '{ printf "%.1f", $2 - $1 }')
        traffic_logged 2
        if [ "$status" -ne 0 ]; then
            fail "$name (exit $status, ${secs} s)" "$log"
        elif ! grep -q "^vcis: OK (2 ranks)" "$log"; then
            fail "$name (no OK line, ${secs} s)" "$log"
        elif ! echo "$traffic" | awk '$1 == "efasim_1" && $2 > 0 && $3 > 0 { ok = 1 } END { exit !ok }'; then
            fail "$name (no traffic both ways on efasim_1: rank 0's VCIs 1 and 3 are not there, ${secs} s)" "$log"
        else
            pass "$name (${secs} s; $(echo "$traffic" | awk '{ printf "%s%s %s/%s", (NR > 1 ? ", " : ""), $1, $2, $3 }'))"
        fi
    fi
fi

# Other languages: a C++ program built with mpicxx, Fortran ones built with mpifort
# (use mpi; use mpi_f08), each run with 2 ranks over efarm. efasim's counters (a
# sysfs directory of the run's own) must show at least the program's bytes moved,
# so its messages crossed efarm. A build with scripts/mpich-build.sh --c-only has no such
# wrappers: SKIP lines say so (mpich-build.sh's own hello step checks that a default
# build has them).
langruns=(
    "lang-cxx lang_cxx mpicxx lang_cxx.cxx"
    "lang-fortran lang_fortran mpifort lang_fortran.f90"
    "lang-f08 lang_f08 mpifort lang_f08.f90"
)
for r in "${langruns[@]}"; do
    read -r name prog wrapper src <<<"$r"
    selected "$name" || continue
    if [ ! -x "$prefix/bin/$wrapper" ]; then
        echo "SKIP $name: $prefix/bin/$wrapper not installed (MPICH built with --c-only?)"
        continue
    fi
    log=$out/logs/$name.log
    if ! "$prefix/bin/$wrapper" -O2 -o "$out/$prog" "$top/test/mpi/$src" >"$out/logs/build-$prog.log" 2>&1; then
        fail "build-$prog ($wrapper)" "$out/logs/build-$prog.log"
        continue
    fi
    sysfs_fresh "$name"
    start=$(date +%s.%N)
    "$top/scripts/hang-guard.sh" "$timeout_s" env "${device_env[@]}" MPIR_CVAR_NOLOCAL=1 SYSFS_PATH="$sysfs" \
        "$mpiexec" -n 2 "$out/$prog" >"$log" 2>&1
    status=$?
    secs=$(echo "$start $(date +%s.%N)" | awk '{ printf "%.1f", $2 - $1 }')
    # Bytes the device moved: sent in packets and by RDMA (the 1 MiB messages go by the
    # read protocol); the two rings' large messages alone are 2 MiB.
    traffic=$(SYSFS_PATH=$sysfs EFASIM_NDEV=1 "$prefix/bin/efasim-info" --counters)
    echo "efasim counters: $traffic" >>"$log"
    moved=$(echo "$traffic" | awk '{ s += $5 + $13 } END { print s + 0 }')
    if [ "$status" -ne 0 ]; then
        fail "$name (exit $status, ${secs} s)" "$log"
    elif ! grep -q "^$prog: OK (2 ranks)" "$log"; then
        fail "$name (no OK line, ${secs} s)" "$log"
    elif [ "$moved" -lt 2097152 ]; then
        fail "$name (efasim moved $moved bytes, less than the program's 2 MiB: $traffic)" "$log"
    else
        pass "$name (${secs} s; $wrapper)"
    fi
done

for r in "${failruns[@]}"; do
    read -r name prog ranks pattern vars <<<"$r"
    selected "$name" || continue
    skipped "$name" "$vars" && continue
    launch "$name" "$prog" "$ranks" "$vars" || continue
    if [ "$status" -ne 0 ] && ! log_matches "$pattern" "$log" && hydra_lost_output "$log"; then
        mv "$log" "$log.first"
        echo "RETRY $name: hydra lost the ranks' output (log $log.first); run again"
        launch "$name" "$prog" "$ranks" "$vars" || continue
    fi
    judge_fail "$name" "$pattern"
done

for r in "${hangruns[@]}"; do
    read -r name prog ranks <<<"$r"
    selected "$name" || continue
    saved_timeout=$timeout_s
    timeout_s=$hang_s
    launch "$name" "$prog" "$ranks" "" || { timeout_s=$saved_timeout; continue; }
    timeout_s=$saved_timeout
    # Stacks, and stacks inside MPI_Recv, one per rank. MPICH's generated binding
    # keeps MPI_Recv's body in internal_Recv, which PMPI_Recv tail-calls in a build
    # with --enable-fast=...,alwaysinline (mpich-build.sh --release): no PMPI_Recv frame.
    stacks=$(grep -c "^hang-guard: stack of .* ($prog)" "$log")
    in_recv=$(awk -v prog="($prog)" '/^hang-guard: stack of/ { cur = ($NF == prog) }
        cur && /MPI_Recv|internal_Recv/ { n++; cur = 0 } END { print n + 0 }' "$log")
    if [ "$status" -ne 124 ]; then
        fail "$name (exit $status, expected the guard's 124 after $hang_s s)" "$log"
    elif [ "$stacks" -ne "$ranks" ] || [ "$in_recv" -ne "$ranks" ]; then
        fail "$name ($stacks stacks of $ranks ranks, $in_recv inside MPI_Recv)" "$log"
    else
        pass "$name (guard stopped it after $hang_s s; $ranks stacks in MPI_Recv)"
    fi
done
finish
