#!/usr/bin/env bash
# MPI under Slurm across two emulated hosts (scripts/slurm-cluster.sh: slurmctld,
# and a slurmd per host in its own network and UTS namespace): the launches users
# make on an EFA cluster, 2 ranks per host, so ranks on one host use MPICH's
# shared memory and ranks on different hosts use efarm (two_hosts checks the
# split with efarm's send counter per destination).
#
# Usage: run-slurm.sh [--prefix PREFIX] [--pmix-prefix P] [--pmi2-prefix P]
#                     [--timeout SECONDS] [NAME...]
#   PREFIX  the default MPICH build (hydra; default as run-mpi-tests.sh): srun
#           --mpi=pmi2 (Slurm's PMI 2 server also answers hydra's PMI 1 client),
#           salloc with mpiexec (hydra's Slurm bootstrap), sbatch
#   --pmix-prefix  a build of `scripts/mpich-build.sh --pmi pmix`: srun --mpi=pmix
#   --pmi2-prefix  a build of `scripts/mpich-build.sh --pmi pmi2`: srun --mpi=pmi2
#   NAME    run only the runs whose name starts with NAME
# Runs of a build that is not given print SKIP. Failure runs: a launch whose PMI
# does not match the build must fail naming the srun option that fits; a host
# that dies mid-job (its slurmd and its ranks) must end the job with an error
# within SLURM_FAIL_S seconds, and no rank may be left on any host. Programs and
# logs go to build/mpitest-slurm (MPITEST_BUILD_DIR to change). Prints one
# PASS/FAIL/SKIP line per run, then "N passed, N failed, N skipped". Needs root,
# iproute2 and Debian's slurmctld, slurmd, slurm-client and munge; SKIP otherwise.
# A cluster that already runs (slurm-cluster.sh start) is used and left running;
# otherwise one is started and stopped.
set -u
out=${MPITEST_BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build/mpitest-slurm}
timeout_s=120
usage_lines=2,25
pmix_prefix=
pmi2_prefix=
rest=()
while [ $# -gt 0 ]; do
    case $1 in
    --pmix-prefix) pmix_prefix=${2:?--pmix-prefix needs a directory}; shift 2 ;;
    --pmi2-prefix) pmi2_prefix=${2:?--pmi2-prefix needs a directory}; shift 2 ;;
    *) rest+=("$1"); shift ;;
    esac
done
set -- "${rest[@]}"
# shellcheck source=test/mpi/mpitest-lib.sh
. "$(dirname "$0")/mpitest-lib.sh"

cluster=$top/scripts/slurm-cluster.sh
skipped=0
own_cluster=no
fail_s=${SLURM_FAIL_S:-150}
finish() {
    [ "$own_cluster" = no ] || "$cluster" stop >"$out/logs/cluster-stop.log" 2>&1
    echo "$passed passed, $failed failed, $skipped skipped"
    [ "$failed" -eq 0 ]
    exit
}
skip() { echo "SKIP $1"; skipped=$((skipped + 1)); }

mkdir -p "$out/logs"
if [ ! -x "$mpicc" ] || [ ! -x "$mpiexec" ]; then
    echo "FAIL slurm: no $mpicc or $mpiexec (build MPICH with scripts/mpich-build.sh)"
    failed=1
    finish
fi
if "$cluster" status >/dev/null 2>&1; then
    echo "slurm: using the cluster that runs already (scripts/slurm-cluster.sh status)"
else
    "$cluster" start --hosts 2 >"$out/logs/cluster-start.log" 2>&1
    rc=$?
    if [ "$rc" -eq 77 ]; then
        skip "slurm: $(grep -m1 'SKIP' "$out/logs/cluster-start.log" | sed 's/^slurm-cluster: SKIP: //')"
        finish
    elif [ "$rc" -ne 0 ]; then
        fail "slurm-cluster-start" "$out/logs/cluster-start.log"
        finish
    fi
    own_cluster=yes
fi
trap '[ "$own_cluster" = no ] || "$cluster" stop >/dev/null 2>&1' EXIT

# The programs, built once per MPICH build: PROG (the default build), PROG.pmix, PROG.pmi2.
declare -A built_as=()
build_as() { # PROG PREFIX SUFFIX
    local key=$1$3 log=$out/logs/build-$1$3.log
    [ -n "${built_as[$key]:-}" ] && return 0
    if "$2/bin/mpicc" -std=c11 -O2 -g -Wall -Wextra -Werror -I"$top/test/mpi" -I"$top/test/common" \
        -o "$out/$1$3" "$top/test/mpi/$1.c" "$top/test/mpi/efarm_mpitest.c" >"$log" 2>&1; then
        built_as[$key]=ok
    else
        built_as[$key]=failed
        fail "build-$1$3" "$log"
    fi
}

# left_behind: the processes other than slurmd (and its zombies) still in a host's
# namespace, "PID:NAME" each; nothing once a job has ended.
left_behind() {
    local i pid name
    for i in 1 2; do
        for pid in $(ip netns pids "efarm-node$i" 2>/dev/null); do
            name=$(cat "/proc/$pid/comm" 2>/dev/null) || continue
            [ "$name" = slurmd ] && continue
            grep -qs '^State:.*Z' "/proc/$pid/status" && continue
            echo "efarm-node$i:$pid:$name"
        done
    done
}
# settle: up to 15 s for the hosts to hold nothing but slurmd; prints what remains.
settle() {
    local i rest
    for i in $(seq 1 30); do
        rest=$(left_behind)
        [ -z "$rest" ] && return 0
        sleep 0.5
    done
    echo "$rest"
    return 1
}

# run NAME LOG EXPECT CMD...: CMD (on the head) under the hang guard; EXPECT is
# "ok PROG RANKS" (exit 0 and PROG's OK line) or "fail PATTERN" (non-zero exit and
# the log matching PATTERN, grep -E). Then no process may be left on the hosts.
run() {
    local name=$1 log=$2 expect=$3 start rest
    shift 3
    selected "$name" || return 0
    start=$(date +%s.%N)
    (cd "$out" && "$top/scripts/hang-guard.sh" "$timeout_s" "$@") >"$log" 2>&1
    status=$?
    secs=$(echo "$start $(date +%s.%N)" | awk '{ printf "%.1f", $2 - $1 }')
    if ! rest=$(settle); then
        echo "left on the hosts after the job: $rest" >>"$log"
        fail "$name (processes left on the hosts: $(echo "$rest" | tr '\n' ' '))" "$log"
        for p in $rest; do kill -9 "$(echo "$p" | cut -d: -f2)" 2>/dev/null; done
        return
    fi
    read -r kind a b <<<"$expect"
    if [ "$kind" = ok ]; then
        judge "$name" "$a" "$b" ""
    else
        # srun itself returns 137 when it killed a task: only the hang guard's 124 is a hang.
        hang_codes=124 judge_fail "$name" "$a"
    fi
}

base_env=(env EFARM_DEVICE=sim EFARM_PROFILE=reference)
# The runs that must pass give a silent peer 30 s instead of efasim's 5 before SRD
# gives up on it: two emulated hosts' ranks and threads share 2 cores here, and a
# rank starved for 5 s was seen while a build loaded the machine (threads over
# srun --mpi=pmix). A lost packet still ends as a hang, which fails.
run_env=("${base_env[@]}" EFASIM_TIMEOUT_MS=30000)
# Each rank srun starts runs in a session of its own (setsid): Linux schedules
# each session as a group (autogroups), and srun's tasks of one host share
# slurmstepd's session, so on a machine that also builds they share one group's
# CPU: 16 ranks' first alltoall took 0.8-1.2 s that way against 70-80 ms with
# setsid (hydra's ranks get a session each). Real hosts do not share their CPUs
# with another job.
own=(setsid -w)
# The tests' pair partners (rank ^ 1) are on the other host with -m cyclic (ranks
# 0 and 2 on efarm-node1); two_hosts checks the split itself. Programs whose
# counter checks expect every message on efarm run with MPIR_CVAR_NOLOCAL=1 (the
# ranks of one host then talk through efarm too); wildcard_order and rma_phases
# also move messages through shared memory, which efarm's counters do not see.
srun_runs=(
    "two_hosts MPITEST_RANKS_PER_HOST=2"
    "pt2pt_sizes MPITEST_MAX_SIZE=4194304"
    "wildcard_order MPITEST_NO_PVAR_CHECK=1"
    "rma_phases MPITEST_NO_PVAR_CHECK=1"
    "rma_native MPIR_CVAR_NOLOCAL=1"
    "threads MPIR_CVAR_NOLOCAL=1"
    "intercomm MPIR_CVAR_NOLOCAL=1"
)
srun_set() { # TAG PREFIX SUFFIX MPI
    local tag=$1 pfx=$2 sfx=$3 mpi=$4 r prog vars
    for r in "${srun_runs[@]}"; do
        read -r prog vars <<<"$r"
        selected "$prog-$tag" || continue
        build_as "$prog" "$pfx" "$sfx"
        [ "${built_as[$prog$sfx]}" = ok ] || continue
        log=$out/logs/$prog-$tag.log
        # shellcheck disable=SC2086 # $vars is a list of VAR=VALUE words
        run "$prog-$tag" "$log" "ok $prog 4" "${run_env[@]}" $vars \
            "$cluster" run srun --mpi="$mpi" -N2 -n4 -m cyclic "${own[@]}" "$out/$prog$sfx"
    done
}

# ---- The default (hydra) build ----------------------------------------------------
srun_set srun-pmi2 "$prefix" "" pmi2

# salloc, then mpiexec inside the allocation: hydra finds the nodes from Slurm's
# variables and starts its proxies with srun. -iface: the head's host name does not
# resolve to the bridge address here (on a cluster it resolves); -ppn 2: hydra
# would fill a node's 16 declared CPUs first.
if selected two_hosts-salloc-mpiexec; then
    build_as two_hosts "$prefix" ""
    run two_hosts-salloc-mpiexec "$out/logs/two_hosts-salloc-mpiexec.log" "ok two_hosts 4" \
        "${run_env[@]}" MPITEST_RANKS_PER_HOST=2 "$cluster" run salloc -N2 \
        "$mpiexec" -iface efslurm0 -ppn 2 -n 4 "$out/two_hosts"
fi
# sbatch --wait: a batch script that runs the job step with srun; its output file is
# the log.
if selected two_hosts-sbatch; then
    build_as two_hosts "$prefix" ""
    cat >"$out/sbatch-two_hosts.sh" <<EOF
#!/bin/sh
#SBATCH -N 2
#SBATCH -o $out/logs/two_hosts-sbatch.out
srun --mpi=pmi2 -n 4 -m cyclic ${own[*]} $out/two_hosts
EOF
    rm -f "$out/logs/two_hosts-sbatch.out"
    run two_hosts-sbatch "$out/logs/two_hosts-sbatch.log" "ok two_hosts 4" \
        "${run_env[@]}" MPITEST_RANKS_PER_HOST=2 sh -c \
        "'$cluster' run sbatch --wait '$out/sbatch-two_hosts.sh' && cat '$out/logs/two_hosts-sbatch.out'"
fi
# Dynamic processes: MPI_Comm_spawn starts its children as a job step of their own
# (Slurm's PMI 2 server runs srun for them; hydra's mpiexec runs srun for new
# proxies). Slurm 22.05 gives a step every CPU of the allocation unless it may
# overlap, so without SLURM_OVERLAP=1 (srun --overlap) the children's step waits
# for ever ("step creation temporarily disabled"); with it, both work.
if selected dynproc-srun-pmi2; then
    build_as dynproc "$prefix" ""
    run dynproc-srun-pmi2 "$out/logs/dynproc-srun-pmi2.log" "ok dynproc 2" \
        "${run_env[@]}" SLURM_OVERLAP=1 "$cluster" run srun --mpi=pmi2 -N2 -n2 "$out/dynproc"
fi
if selected dynproc-salloc-mpiexec; then
    build_as dynproc "$prefix" ""
    run dynproc-salloc-mpiexec "$out/logs/dynproc-salloc-mpiexec.log" "ok dynproc 2" \
        "${run_env[@]}" SLURM_OVERLAP=1 "$cluster" run salloc -N2 \
        "$mpiexec" -iface efslurm0 -ppn 1 -n 2 "$out/dynproc"
fi
# A launch without the PMI the build speaks: every task would run alone; ch4:efarm
# refuses it and names the fix, whole (the message's end is matched too: MPICH cuts
# an error line at 256 characters). MPICH 4.0's default build gets that far. Later
# versions stop before, in MPI_Init's PMI set-up, on a PMIx environment: 5.0 with
# "Runtime environment uses unsupported PMI version PMIx", 4.2 and 4.3 with "launcher
# not compatible with PMI1 client" (their own libpmi has a PMIx client, but for
# hydra only); scripts/mpich-build.sh (patch_launch_hints) adds the fix to both,
# matched whole here.
efarm_refusal='srun.started.4.tasks,.but.this.one.runs.alone.*start.it.with.mpiexec.inside.the.allocation.\(salloc.or.sbatch\),.or.srun.--mpi=pmi2'
hydra_hint='\(this.MPICH.speaks.PMI.1.and.PMI.2,.not.PMIx:.under.Slurm.start.it.with.srun.--mpi=pmi2,.or.with.mpiexec.inside.the.allocation\)'
if selected mismatch-pmix-to-hydra; then
    build_as two_hosts "$prefix" ""
    run mismatch-pmix-to-hydra "$out/logs/mismatch-pmix-to-hydra.log" \
        "fail $efarm_refusal|unsupported.PMI.version.PMIx\..Aborting\..$hydra_hint|launcher.not.compatible.with.PMI1.client.$hydra_hint" \
        "${base_env[@]}" "$cluster" run srun --mpi=pmix -N2 -n4 "$out/two_hosts"
fi
# The same with MPICH's PMIx client chosen (MPIR_CVAR_PMI_VERSION=x): on 4.2 and 4.3
# it finds no server it speaks and each task would run alone as a one-rank job;
# ch4:efarm refuses that. 5.0's default build has no PMIx client and refuses the
# variable in MPIR_pmi_init ("Internal MPI error!", its check of the variable, which
# patch_launch_hints makes print the fix first); 4.0 has no such variable (ch4:efarm
# refuses the launch as above).
if selected mismatch-pmix-x-to-hydra; then
    build_as two_hosts "$prefix" ""
    run mismatch-pmix-x-to-hydra "$out/logs/mismatch-pmix-x-to-hydra.log" \
        "fail $efarm_refusal|MPIR_CVAR_PMI_VERSION=x.asks.for.a.PMI.client.this.MPICH.was.built.without.$hydra_hint" \
        "${base_env[@]}" MPIR_CVAR_PMI_VERSION=x "$cluster" run srun --mpi=pmix -N2 -n4 \
        "$out/two_hosts"
fi
# No PMI at all (srun --mpi=none, or a site whose MpiDefault is none): ch4:efarm's
# message on every version.
if selected mismatch-none-to-hydra; then
    build_as two_hosts "$prefix" ""
    run mismatch-none-to-hydra "$out/logs/mismatch-none-to-hydra.log" \
        "fail srun.--mpi=none.gives.no.PMI&&$efarm_refusal" \
        "${base_env[@]}" "$cluster" run srun --mpi=none -N2 -n4 "$out/two_hosts"
fi

# ---- PMIx and PMI 2 builds ----------------------------------------------------------
if [ -n "$pmix_prefix" ]; then
    srun_set srun-pmix "$pmix_prefix" .pmix pmix
    if selected mismatch-none-to-pmix; then
        build_as two_hosts "$pmix_prefix" .pmix
        run mismatch-none-to-pmix "$out/logs/mismatch-none-to-pmix.log" \
            "fail srun.--mpi=pmix" "${base_env[@]}" "$cluster" run srun --mpi=none -N2 -n4 \
            "$out/two_hosts.pmix"
    fi
    # Slurm's PMI 2 to a PMIx build: MPICH 4.0's PMIx client finds no server
    # (patch_pmi_hint), 5.0 sees a PMI 1/2 launcher first (patch_launch_hints).
    if selected mismatch-pmi2-to-pmix; then
        build_as two_hosts "$pmix_prefix" .pmix
        run mismatch-pmi2-to-pmix "$out/logs/mismatch-pmi2-to-pmix.log" \
            "fail start.it.with.srun.--mpi=pmix" "${base_env[@]}" "$cluster" run srun --mpi=pmi2 \
            -N2 -n4 "$out/two_hosts.pmix"
    fi
    # Spawn under Slurm's PMIx server: refused, with an error on every rank (the
    # test aborts the job), never a hang. MPICH 4.1 and later ask the server
    # (PMIx_Spawn), which Slurm 22.05 refuses: "PMIx_Spawn not supported by PMIx
    # Host". MPICH 4.0's PMIx client has no spawn (scripts/mpich-build.sh
    # patch_pmix_spawn makes it say so instead of an assertion).
    if selected dynproc-srun-pmix; then
        build_as dynproc "$pmix_prefix" .pmix
        run dynproc-srun-pmix "$out/logs/dynproc-srun-pmix.log" \
            "fail PMIx_Spawn.not.supported.by.PMIx.Host|built.with.PMIx.cannot.spawn" \
            "${base_env[@]}" SLURM_OVERLAP=1 "$cluster" run srun --mpi=pmix -N2 -n2 \
            "$out/dynproc.pmix"
    fi
else
    selected srun-pmix && skip "srun-pmix: no --pmix-prefix (scripts/mpich-build.sh --pmi pmix)"
fi
if [ -n "$pmi2_prefix" ]; then
    srun_set srun-pmi2build "$pmi2_prefix" .pmi2 pmi2
    if selected dynproc-srun-pmi2build; then
        build_as dynproc "$pmi2_prefix" .pmi2
        run dynproc-srun-pmi2build "$out/logs/dynproc-srun-pmi2build.log" "ok dynproc 2" \
            "${run_env[@]}" SLURM_OVERLAP=1 "$cluster" run srun --mpi=pmi2 -N2 -n2 "$out/dynproc.pmi2"
    fi
    if selected mismatch-pmix-to-pmi2; then
        build_as two_hosts "$pmi2_prefix" .pmi2
        run mismatch-pmix-to-pmi2 "$out/logs/mismatch-pmix-to-pmi2.log" \
            "fail start.it.with.srun.--mpi=pmi2" "${base_env[@]}" "$cluster" run srun --mpi=pmix \
            -N2 -n4 "$out/two_hosts.pmi2"
    fi
else
    selected srun-pmi2build && skip "srun-pmi2build: no --pmi2-prefix (scripts/mpich-build.sh --pmi pmi2)"
fi

# ---- A host dies mid-job ------------------------------------------------------------
# The soak runs on both hosts; 3 s after its traffic started ("soak: started", once
# MPI_Init, its communicators and its window are set up; a host that dies during
# that set-up is not what this run checks), efarm-node2 dies (kill-node:
# its slurmd and every process in its namespace). The surviving ranks must end within ranks_s
# seconds when one of them sends to the dead host (efarm: efasim's SRD gives up on
# the silent peer after EFASIM_TIMEOUT_MS, 5 s, the send fails, the rank aborts the
# job). A rank that waits only for receives from it (a barrier or a reduction whose
# sends to the dead host completed before it died) has nothing in flight there and
# cannot tell it from a slow one: then Slurm cancels the step when slurmctld marks
# the node down (30-40 s: "CANCELLED ... DUE TO NODE FAILURE" in the log), and the
# ranks must be gone by then. srun must return an error within fail_s, and nothing
# may be left on the hosts. The PASS line says which of the two ended the ranks. The
# host is then started again for whatever runs next.
ranks_s=${SLURM_RANKS_S:-30}
if selected host-dies; then
    build_as soak "$prefix" ""
    log=$out/logs/host-dies.log
    (cd "$out" && "${base_env[@]}" MPITEST_SOAK_SECONDS=600 "$top/scripts/hang-guard.sh" "$fail_s" \
        "$cluster" run srun --mpi=pmi2 -N2 -n4 -m cyclic "${own[@]}" "$out/soak") >"$log" 2>&1 &
    job=$!
    for _ in $(seq 600); do
        grep -q '^soak: started' "$log" 2>/dev/null || ! kill -0 "$job" 2>/dev/null && break
        sleep 0.1
    done
    sleep 3
    "$cluster" kill-node 2 >>"$log" 2>&1
    killed=$(date +%s.%N)
    # When the last rank on efarm-node1 is gone.
    ranks_gone=
    while kill -0 "$job" 2>/dev/null || [ -z "$ranks_gone" ]; do
        if [ -z "$ranks_gone" ] && ! left_behind | grep -q ':soak$'; then
            ranks_gone=$(echo "$killed $(date +%s.%N)" | awk '{ printf "%.1f", $2 - $1 }')
        fi
        kill -0 "$job" 2>/dev/null || break
        sleep 0.2
    done
    wait "$job"
    status=$?
    secs=$(echo "$killed $(date +%s.%N)" | awk '{ printf "%.1f", $2 - $1 }')
    rest=$(settle) || true
    "$cluster" restart-node 2 >>"$log" 2>&1
    echo "host-dies: ranks gone ${ranks_gone:-never} s after the host died, srun returned after $secs s" >>"$log"
    if [ -n "$rest" ]; then
        fail "host-dies (processes left on the hosts: $(echo "$rest" | tr '\n' ' '))" "$log"
        for p in $rest; do kill -9 "$(echo "$p" | cut -d: -f2)" 2>/dev/null; done
    elif [ -z "$ranks_gone" ]; then
        fail "host-dies (the ranks on the live host never ended)" "$log"
    elif awk -v g="$ranks_gone" -v m="$ranks_s" 'BEGIN { exit !(g > m) }' &&
        ! grep -q 'CANCELLED AT .* DUE TO NODE FAILURE' "$log"; then
        fail "host-dies (the ranks on the live host ran ${ranks_gone} s after the host died, more than ${ranks_s} s, and Slurm had not cancelled them)" "$log"
    elif [ "$status" -eq 124 ]; then
        # (137, a task killed by SIGKILL, is what srun itself returns here.)
        fail "host-dies (ranks gone after ${ranks_gone} s, but srun still ran ${fail_s} s after the start)" "$log"
    elif [ "$status" -eq 0 ]; then
        fail "host-dies (exit 0 although a host died)" "$log"
    else
        # efarm's end: a packet to the dead host failed at the device, within ranks_s;
        # past it, only Slurm's cancellation let the run pass (above).
        by="Slurm's node failure (no packet of theirs failed within ${ranks_s} s)"
        if awk -v g="$ranks_gone" -v m="$ranks_s" 'BEGIN { exit !(g <= m) }' &&
            grep -q 'failed at the device' "$log"; then
            by="efarm, a packet to the dead host failed"
        fi
        pass "host-dies (ranks gone ${ranks_gone} s after the host died, ended by $by; srun returned after $secs s, exit $status; nothing left)"
    fi
fi
# ---- A NIC per rank, from the topology and srun's binding ----------------------------
# Hosts with four emulated EFA devices each (slurm-cluster.sh --nics 4: efasim's
# devices on addresses of their own) and efarm told the machine is a p4d
# (EFARM_TOPOLOGY from efarm-topo-xml: two sockets with two NICs each, this
# machine's CPUs 0 and 1 on different sockets). srun --cpu-bind=cores puts each
# host's two ranks on CPUs 0 and 1, so on both hosts the rank on CPU 0 must take
# efasim_0 (socket 0's first NIC) and the rank on CPU 1 efasim_2 (socket 1's), and
# the job's traffic crosses between the hosts on them (nic_placement.c checks each
# rank's choice, and its exchange must pass). It needs a cluster of its own (its
# hosts' addresses), so it runs last and only when this script started the cluster.
if selected nic_placement-srun; then
    if [ "$own_cluster" = no ]; then
        skip "nic_placement-srun: needs a cluster with --nics 4 of its own; a cluster that already ran is used as it is"
    elif ! build_topo_xml "$out/logs/build-efarm-topo-xml.log" ||
        ! "$out/efarm-topo-xml" --packages 2 --cores 24 --interleave \
            --nics efasim_0:0,efasim_1:0,efasim_2:1,efasim_3:1 >"$out/topo-p4d.xml"; then
        fail build-efarm-topo-xml "$out/logs/build-efarm-topo-xml.log"
    else
        build_as nic_placement "$prefix" ""
        "$cluster" stop >"$out/logs/cluster-stop.log" 2>&1
        if ! "$cluster" start --hosts 2 --nics 4 >"$out/logs/cluster-start-nics.log" 2>&1; then
            own_cluster=no
            fail "nic_placement-srun (slurm-cluster.sh start --nics 4 failed)" "$out/logs/cluster-start-nics.log"
        elif [ "${built_as[nic_placement]}" = ok ]; then
            run nic_placement-srun "$out/logs/nic_placement-srun.log" "ok nic_placement 4" \
                "${run_env[@]}" MPIR_CVAR_NOLOCAL=1 EFARM_TOPOLOGY="$out/topo-p4d.xml" \
                MPITEST_NIC_EXPECT="0:0;1:2" "$cluster" run srun --mpi=pmi2 -N2 -n4 \
                --cpu-bind=cores "${own[@]}" "$out/nic_placement"
        fi
    fi
fi
finish
