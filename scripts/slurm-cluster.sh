#!/usr/bin/env bash
# A Slurm cluster on one machine, for functional tests of MPI under Slurm: N
# emulated hosts, each a network namespace on a bridge with its own address and
# host name (as in test/mpi/run-two-hosts.sh, on another subnet) running its own
# slurmd, and slurmctld and munged on the "head" (the root namespace). Debian's
# packages: slurmctld, slurmd, slurm-client and munge (Slurm 22.05, munge 0.5).
#
#   scripts/slurm-cluster.sh start [--hosts N] [--cpus C] [--nics K]
#   scripts/slurm-cluster.sh run CMD [ARG...]
#   scripts/slurm-cluster.sh status
#   scripts/slurm-cluster.sh kill-node I [--unplug]
#   scripts/slurm-cluster.sh restart-node I
#   scripts/slurm-cluster.sh stop
#
# start         N hosts (default 2, 1..16) named efarm-node1..N at 10.199.2.1..N,
#               C CPUs each (default 16), K emulated EFA devices each (default
#               1; 1..8: see "Several NICs" below); waits until sinfo shows every node idle
#               (at most EFARM_SLURM_START_TIMEOUT seconds, default 60, less when
#               a daemon died), then prints the SLURM_CONF to export: 0.5 to 3 s
#               for 2 hosts, 6 s for 16 (2-core VM, a build running). On failure:
#               the end of every log, the cluster removed, status 1. Refused
#               (status 1) while a cluster runs; a stale one (a head daemon gone,
#               or namespaces, bridge or state left by a killed run) is removed
#               first, with a message.
# run CMD...    CMD on the head with SLURM_CONF set, e.g. `run srun -N2 -n4
#               hostname`, `run sbatch --wait job.sh`, `run salloc -N2 sh -c ...`.
#               The status is CMD's (1 when no cluster runs).
# status        sinfo's node list (status 0), or "no cluster" (status 1).
# kill-node I   "host I dies": SIGKILL to its slurmd and to every process in its
#               network namespace (the jobs' slurmstepd and tasks). --unplug also
#               takes its link down, so the others' packets to it vanish instead
#               of meeting closed ports (ICMP unreachable, TCP resets): a host
#               powered off rather than one whose processes died. A job on the
#               node ends when slurmctld has marked it down: srun -N2 ended 30 to
#               36 s after kill-node (see SlurmdTimeout below).
# restart-node I  its link up and its slurmd started again: the node is back in
#               service once it has registered (ReturnToService=2), within 1 s.
# stop          kills the cluster's clients on the head (srun, salloc, sbatch and
#               sattach whose SLURM_CONF is this cluster's: without slurmctld they
#               would wait for ever), what runs in the hosts' namespaces (slurmd,
#               slurmstepd, tasks left behind), slurmctld and munged; removes the
#               namespaces, veths, bridge and state directory. Idempotent; says
#               what it removed.
# Without root, iproute2 (ip), util-linux (nsenter, unshare, flock) or the
# daemons and srun/sinfo: "slurm-cluster: SKIP: REASON" and status 77 (as
# automake's tests: the test scripts report SKIP). start, stop, kill-node and
# restart-node take turns (a lock on this script), so two test scripts starting
# and stopping at once do not interleave.
#
# Environment: EFARM_SLURM_DIR (the state directory, default /run/efarm-slurm),
# EFARM_SLURM_START_TIMEOUT (seconds, default 60).
#
# One cluster per machine: the subnet, names and ports are fixed, so a test
# finds the cluster where this script put it. The network: bridge efslurm0
# holds the head's address 10.199.2.254/24 (the hosts' subnet is 10.199.2.0/24,
# run-two-hosts.sh's is 10.199.1.0/24, so both can exist at once); host I is
# namespace efarm-nodeI (made with `ip netns add`, so /run/netns/efarm-nodeI
# exists and `ip netns pids` finds its processes) with veth efsl-vI inside,
# addressed 10.199.2.I/24, and its peer efsl-pI on the bridge. The Slurm node
# name, the namespace's name and the host name (a UTS namespace) are one string,
# so `srun hostname` and SLURMD_NODENAME agree.
#
# State (DIR = EFARM_SLURM_DIR): DIR/slurm.conf, DIR/task-prolog.sh, DIR/munge/
# (key, socket, pid, seed), DIR/ctld/ (slurmctld's state), DIR/spool/NODE,
# DIR/tmp/NODE, DIR/run/ (pid files), DIR/log/ (munged.log, slurmctld.log,
# slurmd-NODE.log, network.log and each daemon's start-up output), DIR/cluster
# ("N C", written once the daemons are started: a started cluster). stop removes
# DIR only when it holds the marker file DIR/.efarm-slurm, and start will not use
# a non-empty DIR without it, so a mistyped EFARM_SLURM_DIR never loses data.
#
# Choices, and why:
# - munged of our own, with a key made at each start (1 KiB from /dev/urandom,
#   as munge's installation guide makes one) and its own socket, pid, seed and
#   log files in DIR: a system munged and /etc/munge/munge.key are neither needed
#   nor touched. Slurm finds the socket through AuthInfo=socket=... in
#   slurm.conf, which the daemons, slurmstepd and the client commands all read,
#   so no environment variable is needed. --force: munged checks every directory
#   above its files, and a DIR under /tmp (sticky, world-writable) would fail;
#   the key protects nothing but this test cluster. munged.log fills with
#   "Unauthorized credential for client UID=0 GID=0": a check that Slurm 22.05's
#   daemons and every slurmstepd make, harmless (Slurm 23.02.6's NEWS: "not a
#   cause for concern"; that release drops slurmstepd's).
# - slurmctld runs in the root namespace (reachable from every host and from the
#   client commands) but in a UTS namespace of its own named efarm-head:
#   slurmctld only runs where the host name matches SlurmctldHost ("This host
#   (vm/vm) not a valid controller" otherwise), and so slurm.conf does not
#   depend on the machine's name.
# - Each slurmd is started with `nsenter --net=/run/netns/NODE unshare --uts`,
#   not `ip netns exec`: ip netns exec also makes a mount namespace with /sys
#   mounted afresh, in which /sys/fs/cgroup is empty, and slurmd 22.05 sets up
#   its cgroup code even with no cgroup plugin configured: "No filesystem
#   mounted on /sys/fs/cgroup", "slurmd initialization failed". `-N NODE` names the node (the host name is NODE
#   too). slurmstepd and the tasks inherit both namespaces: a task's host name is
#   its node's, and its sockets bind its node's address. The daemons are started
#   without the lock's file descriptor (9<&-), or they would hold it for life.
# - SlurmUser=root: every daemon runs as root (no slurm user or file ownership
#   to arrange); jobs run as whoever submits them.
# - ProctrackType=proctrack/linuxproc and TaskPlugin=task/affinity, no cgroup
#   plugin: VMs and containers often lack a writable cgroup hierarchy (or have a
#   v1/v2 mix), and these two need none. linuxproc finds a step's processes by
#   their parent links in /proc (pgid would lose a task that calls setsid);
#   task/affinity is what gives srun --cpu-bind. JobAcctGatherType and
#   AccountingStorageType none: no slurmdbd. MailProg=/bin/true: no mail(1) here
#   (slurmctld logs an error at start otherwise).
# - SelectType=select/cons_tres with CR_Core, each node declared with C CPUs (1
#   socket of C cores) whatever the machine has, and
#   SlurmdParameters=config_overrides, without which slurmctld sets every node
#   INVAL ("Low socket*core*thread count, Low CPUs"): a test can run up to C
#   tasks per node (srun -N2 -n32 with the defaults) on a 2-core VM. The tasks
#   oversubscribe the real cores, which functional tests tolerate (efarm's MPI
#   tests already run 4 ranks on 2 cores; expect time, not failures).
# - The partition (efarm: all nodes, the default, no time limit) has
#   OverSubscribe=EXCLUSIVE: a job gets whole nodes, so `srun -N2 -n4` runs 2
#   tasks per node (ranks 0,1 on efarm-node1, 2,3 on efarm-node2), as MPI tests
#   expect. Without it cons_tres allocates only the CPUs asked for, filling the
#   first node first: 3 tasks on efarm-node1 and 1 on efarm-node2. The cost: one
#   job per node at a time (a second job waits).
# - TaskPluginParam=none: no binding unless asked. Without it Slurm binds a step
#   that has as many tasks as the node has (declared) CPUs to cores by itself,
#   and binding fails ("Unable to layout tasks on given cpus") past the real
#   cores: srun -N1 -n16 failed. With it, tasks get every real CPU
#   (Cpus_allowed_list 0-1 on this 2-core VM). An explicit --cpu-bind works up to
#   the real core count per node: --cpu-bind=cores -N1 -n2 gives 0 and 1 (the
#   kernel's Cpus_allowed_list), -N2 -n4 gives 0,1 on each host (the hosts share
#   the real CPUs), -N1 -n4 fails to launch as above.
# - MpiDefault=none: a test picks --mpi=pmix (pmix_v4) or --mpi=pmi2. The pmix
#   plugin makes per-step directories on each node: its server's under
#   SlurmdSpoolDir (per node through %n) and its clients' (spmix_appdir_UID_JOB.STEP)
#   under TmpFS, default /tmp, which the emulated hosts share: the second node of
#   a step then fails ("Cannot create client cli tmpdir ... File exists") and
#   the step fails or runs with half its ranks. TmpFS=DIR/tmp/%n (the plugin
#   expands %n) gives each node its own; SLURM_PMIX_TMPDIR in a job's
#   environment overrides it, so it must not be set to a shared directory.
# - TaskProlog=DIR/task-prolog.sh prints `export EFASIM_ADDR=10.199.2.I` for the
#   node it runs on (from SLURMD_NODENAME): efasim binds its emulated host's
#   address although srun runs on the head and passes on the head's environment.
#   Batch scripts get it too (the batch step is a task of the first node).
#   Several NICs (--nics K, K > 1): efasim's device i binds EFASIM_ADDR + i, so
#   host I gets K consecutive addresses of its own besides 10.199.2.I, from
#   10.199.2.(100 + (I - 1) * K) on (16 hosts of 8 stay below the head's .254),
#   and the TaskProlog exports the first as EFASIM_ADDR and EFASIM_NDEV=K: on
#   each host a rank sees K devices, as on a p4d or p5 instance.
# - SlurmdTimeout=20 (default 300): a dead node is noticed in about 30 s.
#   slurmctld pings a node it has not heard from for SlurmdTimeout/3, a ping of a
#   dead node takes MessageTimeout (10 s) to fail, and the node is set DOWN (its
#   jobs killed, their sruns told) at the first ping round SlurmdTimeout after
#   the previous one: 30-36 s measured; SlurmdTimeout=10 gave 28 s, so a lower
#   value buys little and risks marking a busy node down. KillWait=5: a
#   cancelled job's tasks get SIGKILL 5 s after SIGTERM (default 30).
#   ReturnToService=2: a node that registers again after being down
#   (restart-node) is back in service.
# - FirstJobId: each start begins at (seconds since 1970 mod 600000) * 100 + 1
#   (below Slurm's MaxJobId, 67043328), where Slurm would begin at 1 again since
#   the state directory is new. MPICH 5.0 names a node's shared-memory segment
#   after the job's PMI name (slurm.pmix.JOBID.STEP, or JOBID.STEP), the emulated
#   hosts share /dev/shm, and a killed job leaves its segment: a later cluster's
#   job with the same id found it and failed MPI_Init ("Out of memory" in
#   MPIDI_POSIX_comm_bootstrap), or would have joined it. stop also removes such
#   segments left by the cluster's jobs (remove_shm_left).
# - Ports 6817 (slurmctld, on the head) and 6818 (slurmd: each host has its own
#   address, so one port serves them all); start refuses when something already
#   listens on the head's port (a system slurmctld).
set -u

dir=${EFARM_SLURM_DIR:-/run/efarm-slurm}
start_timeout=${EFARM_SLURM_START_TIMEOUT:-60}
net=10.199.2
head_addr=$net.254
bridge=efslurm0
node_prefix=efarm-node
ctld_port=6817
slurmd_port=6818
conf=$dir/slurm.conf
# The daemons are in sbin, which a non-login root shell (sudo, cron) may lack.
PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin

say() { echo "slurm-cluster: $*"; }
die() {
    echo "slurm-cluster: $*" >&2
    exit 1
}
usage() {
    sed -n 's|^#   \(scripts/slurm-cluster.sh .*\)|  \1|p' "$0" >&2
    exit 2
}

# The prerequisites, or SKIP with the reason (status 77).
require() {
    local missing='' b
    if [ "$(id -u)" -ne 0 ]; then
        say "SKIP: needs root (network namespaces, a bridge, daemons running as root)"
        exit 77
    fi
    for b in ip nsenter unshare flock munged slurmctld slurmd sinfo srun; do
        command -v "$b" >/dev/null 2>&1 || missing="$missing $b"
    done
    if [ -n "$missing" ]; then
        say "SKIP: not installed:$missing (Debian: iproute2 util-linux munge slurmctld slurmd slurm-client)"
        exit 77
    fi
}

# in_range VALUE MIN MAX: VALUE is a whole number from MIN to MAX.
in_range() {
    [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]
}

# alive NAME PIDFILE: prints the pid when PIDFILE names a live process whose
# command is NAME (a pid reused by another program does not count, nor a zombie
# not yet reaped: a daemon's parent is init, which in a container may be slow to).
alive() {
    local pid='' comm st
    { read -r pid <"$2"; } 2>/dev/null || [ -n "$pid" ] || return 1
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    { read -r comm <"/proc/$pid/comm"; } 2>/dev/null && [ "$comm" = "$1" ] || return 1
    { read -r st <"/proc/$pid/stat"; } 2>/dev/null || return 1
    st=${st##*) }
    [ "${st%% *}" != Z ] || return 1
    echo "$pid"
}

# gone PID: waits (at most 5 s) until PID is dead or a zombie.
gone() {
    local st _
    for _ in $(seq 1 50); do
        { read -r st <"/proc/$1/stat"; } 2>/dev/null || return 0
        st=${st##*) }
        [ "${st%% *}" != Z ] || return 0
        sleep 0.1
    done
    return 1
}

# The cluster's namespaces that exist, whatever their number.
cluster_netns() {
    ip netns list 2>/dev/null | awk -v p="$node_prefix" '$1 ~ "^" p "[0-9]+$" { print $1 }' | sort -V
}

# running: a started cluster whose head daemons live and whose namespaces exist
# (a node killed by kill-node does not make it stale).
running() {
    local n i
    [ -f "$dir/cluster" ] || return 1
    read -r n _ <"$dir/cluster" || return 1
    alive munged "$dir/munge/munged.pid" >/dev/null && alive slurmctld "$dir/run/slurmctld.pid" >/dev/null ||
        return 1
    for i in $(seq 1 "$n"); do
        [ -e "/run/netns/$node_prefix$i" ] || return 1
    done
}

# Why a cluster that is present is not running, for the messages.
stale_reason() {
    local why='' i
    if [ ! -f "$dir/cluster" ]; then
        [ -e "$dir/.efarm-slurm" ] && why="a start that did not finish" || why="no state in $dir"
    else
        alive munged "$dir/munge/munged.pid" >/dev/null || why="munged gone"
        alive slurmctld "$dir/run/slurmctld.pid" >/dev/null || why="${why:+$why, }slurmctld gone"
        for i in $(seq 1 "$(cut -d' ' -f1 "$dir/cluster")"); do
            [ -e "/run/netns/$node_prefix$i" ] || why="${why:+$why, }namespace $node_prefix$i gone"
        done
    fi
    echo "$why"
}

# Anything of a cluster present: state directory, namespaces, bridge, daemons.
present() {
    [ -e "$dir/.efarm-slurm" ] || [ -n "$(cluster_netns)" ] || ip link show "$bridge" >/dev/null 2>&1
}

# stop_pid NAME PIDFILE: SIGTERM, then SIGKILL after 5 s; prints the pid stopped.
stop_pid() {
    local pid
    pid=$(alive "$1" "$2") || return 1
    kill -TERM "$pid" 2>/dev/null
    gone "$pid" || { kill -KILL "$pid" 2>/dev/null && gone "$pid"; }
    echo "$pid"
}

# kill_netns NS: SIGKILL every process whose network namespace is NS, until none
# is left (a process may fork while we kill); prints how many were killed.
kill_netns() {
    local ns=$1 pids all='' _
    for _ in $(seq 1 50); do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -n "$pids" ] || break
        all="$all $pids"
        # shellcheck disable=SC2086 # a list of pids
        kill -KILL $pids 2>/dev/null
        sleep 0.1
    done
    echo "$all" | tr -s ' ' '\n' | sort -u | grep -c .
}

# kill_clients: the cluster's client commands on the head (srun, salloc,
# sbatch --wait, sattach; started by `run` or with SLURM_CONF exported): once
# slurmctld is gone they would wait for it for ever (srun ignores SIGTERM then),
# so SIGKILL. Known by the SLURM_CONF in their environment, so the clients of
# another cluster are never touched.
kill_clients() {
    local p pid comm
    for p in /proc/[0-9]*; do
        { read -r comm <"$p/comm"; } 2>/dev/null || continue
        case $comm in srun | salloc | sbatch | sattach) ;; *) continue ;; esac
        { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qxF "SLURM_CONF=$conf" || continue
        pid=${p#/proc/}
        kill -KILL "$pid" 2>/dev/null && say "killed $comm (pid $pid), a client of this cluster"
    done
}

# remove_shm_left: MPICH's node segments (/dev/shm/mpich_shm_*, mpich_vci_*)
# that the cluster's jobs left, once no process has them open or mapped. MPICH
# 5.0 names a node's segment after the job's PMI name and the node, and the
# last process of the node unlinks it in MPI_Finalize: a job that was killed
# (a host that died, a refused launch) leaves it behind. The emulated hosts
# share this machine's /dev/shm. Only segments made while this cluster ran
# (newer than DIR/cluster).
remove_shm_left() {
    local f name n=0
    [ -f "$dir/cluster" ] || return 0
    while IFS= read -r f; do
        name=${f##*/}
        if grep -qsF "/dev/shm/$name" /proc/[0-9]*/maps ||
            find /proc/[0-9]*/fd -maxdepth 1 -lname "/dev/shm/$name" 2>/dev/null | grep -q .; then
            continue
        fi
        rm -f "$f" && n=$((n + 1))
    done < <(find /dev/shm -maxdepth 1 -type f \( -name 'mpich_shm_*' -o -name 'mpich_vci_*' \) \
        -newer "$dir/cluster" 2>/dev/null)
    [ "$n" -eq 0 ] || say "removed $n MPICH shared-memory segment(s) that killed jobs left in /dev/shm"
}

# teardown: everything of the cluster that exists goes, each step said. Its
# clients on the head first, then the hosts (their slurmd, then whatever else
# runs in their namespaces: job steps and tasks), so that no slurmd registers or
# reports while slurmctld stops; munged last, as the others use it until then.
teardown() {
    local ns i n pid f link
    kill_clients
    for ns in $(cluster_netns); do
        if pid=$(alive slurmd "$dir/run/slurmd-$ns.pid"); then
            kill -KILL "$pid" 2>/dev/null
            gone "$pid"
            say "killed slurmd of $ns (pid $pid)"
        fi
        n=$(kill_netns "$ns")
        [ "$n" -eq 0 ] || say "killed $n process(es) left in $ns (job steps, tasks)"
    done
    # A slurmd whose namespace is gone already (removed by hand): its pid file.
    for f in "$dir"/run/slurmd-*.pid; do
        [ -e "$f" ] || continue
        if pid=$(alive slurmd "$f"); then
            kill -KILL "$pid" 2>/dev/null
            gone "$pid"
            f=${f##*/slurmd-}
            say "killed slurmd of ${f%.pid} (pid $pid), outside its namespace"
        fi
    done
    remove_shm_left
    if pid=$(stop_pid slurmctld "$dir/run/slurmctld.pid"); then
        say "stopped slurmctld (pid $pid)"
    fi
    if pid=$(stop_pid munged "$dir/munge/munged.pid"); then
        say "stopped munged (pid $pid)"
    fi
    # Deleting one end of a veth deletes the pair; deleting a namespace deletes
    # the veth inside it, but its peer on the bridge only a moment later.
    for ns in $(cluster_netns); do
        i=${ns#"$node_prefix"}
        ip link del "efsl-p$i" 2>/dev/null
        ip netns del "$ns" 2>/dev/null && say "removed namespace $ns and its veth"
    done
    for link in $(ip -o link show 2>/dev/null | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }'); do
        case $link in efsl-[pv][0-9]*) ip link del "$link" 2>/dev/null && say "removed veth $link" ;; esac
    done
    if ip link show "$bridge" >/dev/null 2>&1; then
        ip link del "$bridge" && say "removed bridge $bridge ($head_addr)"
    fi
    if [ -e "$dir/.efarm-slurm" ]; then
        rm -rf "$dir" && say "removed $dir"
    elif [ -d "$dir" ] && [ -z "$(ls -A "$dir")" ]; then
        rmdir "$dir"
    fi
}

# lock: one command at a time changes the cluster. start, stop, kill-node and
# restart-node hold a lock on this script (flock on fd 9; the daemons are started
# without that fd, or they would hold the lock for as long as they live), so two
# test scripts that start or stop at once take turns.
lock() {
    exec 9<"$0" || die "cannot open $0 to lock it"
    flock -w 300 9 || die "another slurm-cluster.sh command held the lock for 300 s"
}

# The end of every log, for a start that failed.
show_logs() {
    local f
    for f in "$dir"/log/*; do
        [ -s "$f" ] || continue
        echo "slurm-cluster: --- end of $f" >&2
        tail -n 15 "$f" >&2
    done
}

write_config() { # N C K
    local n=$1 cpus=$2 nics=$3 i
    # Job ids that a later cluster does not give again (see "Choices": FirstJobId).
    local first_job_id=$((($(date +%s) % 600000) * 100 + 1))
    cat >"$conf" <<EOF
# Written by scripts/slurm-cluster.sh (see its header for each choice).
ClusterName=efarm
SlurmctldHost=efarm-head($head_addr)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/ctld
FirstJobId=$first_job_id
SlurmdSpoolDir=$dir/spool/%n
TmpFS=$dir/tmp/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
TaskPluginParam=none
TaskProlog=$dir/task-prolog.sh
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
SlurmdTimeout=20
KillWait=5
MailProg=/bin/true
EOF
    for i in $(seq 1 "$n"); do
        echo "NodeName=$node_prefix$i NodeAddr=$net.$i CPUs=$cpus Sockets=1 CoresPerSocket=$cpus ThreadsPerCore=1 State=UNKNOWN" >>"$conf"
    done
    echo "PartitionName=efarm Nodes=ALL Default=YES MaxTime=INFINITE OverSubscribe=EXCLUSIVE State=UP" >>"$conf"

    cat >"$dir/task-prolog.sh" <<EOF
#!/bin/sh
# Written by scripts/slurm-cluster.sh: a task's EFASIM_ADDR is its emulated host's
# address, so efasim binds it.
EOF
    if [ "$nics" -eq 1 ]; then
        cat >>"$dir/task-prolog.sh" <<EOF
case \${SLURMD_NODENAME:-} in
${node_prefix}[0-9]*) echo "export EFASIM_ADDR=$net.\${SLURMD_NODENAME#$node_prefix}" ;;
esac
EOF
    else
        cat >>"$dir/task-prolog.sh" <<EOF
# --nics $nics: the host's $nics device addresses (scripts/slurm-cluster.sh).
case \${SLURMD_NODENAME:-} in
${node_prefix}[0-9]*)
    echo "export EFASIM_ADDR=$net.\$((100 + (\${SLURMD_NODENAME#$node_prefix} - 1) * $nics))"
    echo "export EFASIM_NDEV=$nics"
    ;;
esac
EOF
    fi
    chmod 755 "$dir/task-prolog.sh"
}

# setup_net N K: the bridge (the head's address) and N namespaces with a veth each;
# with K > 1 NICs, each host's K device addresses on its veth too.
setup_net() {
    local n=$1 nics=$2 i ns d
    ip link add "$bridge" type bridge && ip addr add "$head_addr/24" dev "$bridge" &&
        ip link set "$bridge" up || return 1
    for i in $(seq 1 "$n"); do
        ns=$node_prefix$i
        ip netns add "$ns" && ip link add "efsl-v$i" type veth peer name "efsl-p$i" &&
            ip link set "efsl-v$i" netns "$ns" && ip link set "efsl-p$i" master "$bridge" &&
            ip link set "efsl-p$i" up && ip -n "$ns" addr add "$net.$i/24" dev "efsl-v$i" &&
            ip -n "$ns" link set "efsl-v$i" up && ip -n "$ns" link set lo up || return 1
        [ "$nics" -gt 1 ] || continue
        for d in $(seq 0 $((nics - 1))); do
            ip -n "$ns" addr add "$net.$((100 + (i - 1) * nics + d))/24" dev "efsl-v$i" || return 1
        done
    done
}

# start_slurmd I: node I's slurmd in its namespaces (it daemonizes).
start_slurmd() {
    local ns=$node_prefix$1
    mkdir -p "$dir/spool/$ns" "$dir/tmp/$ns"
    chmod 1777 "$dir/tmp/$ns"
    # shellcheck disable=SC2016 # $1 and $2 are the inner shell's arguments
    nsenter --net="/run/netns/$ns" unshare --uts sh -c 'hostname "$1" && exec slurmd -f "$2" -N "$1"' \
        sh "$ns" "$conf" >>"$dir/log/slurmd-$ns.start.log" 2>&1 9<&-
}

# wait_file FILE SECONDS
wait_file() {
    local end=$((SECONDS + $2))
    while [ ! -e "$1" ]; do
        [ "$SECONDS" -lt "$end" ] || return 1
        sleep 0.1
    done
}

cmd_start() {
    local n=2 cpus=16 nics=1 i t0 end states idle why
    while [ $# -gt 0 ]; do
        case $1 in
        --hosts) n=${2:-}; shift 2 || usage ;;
        --hosts=*) n=${1#*=}; shift ;;
        --cpus) cpus=${2:-}; shift 2 || usage ;;
        --cpus=*) cpus=${1#*=}; shift ;;
        --nics) nics=${2:-}; shift 2 || usage ;;
        --nics=*) nics=${1#*=}; shift ;;
        *) usage ;;
        esac
    done
    in_range "$n" 1 16 || die "--hosts takes 1..16, not '$n'"
    in_range "$cpus" 1 256 || die "--cpus takes 1..256, not '$cpus'"
    in_range "$nics" 1 8 || die "--nics takes 1..8, not '$nics'"
    in_range "$start_timeout" 1 3600 || die "EFARM_SLURM_START_TIMEOUT is not a number of seconds (1..3600)"
    t0=$(date +%s.%N)

    if running; then
        read -r i _ <"$dir/cluster"
        die "a cluster is already running ($i hosts, state in $dir); 'scripts/slurm-cluster.sh stop' first"
    fi
    if [ -d "$dir" ] && [ ! -e "$dir/.efarm-slurm" ] && [ -n "$(ls -A "$dir")" ]; then
        die "$dir exists and is not a cluster's state directory (no .efarm-slurm): not touching it"
    fi
    if present; then
        say "removing a stale cluster ($(stale_reason))"
        teardown
    fi
    if ss -Hltn "sport = :$ctld_port" 2>/dev/null | grep -q .; then
        die "something already listens on port $ctld_port (a system slurmctld?): $(ss -Hltnp "sport = :$ctld_port" | head -n 1)"
    fi

    if ! { mkdir -p "$dir" && chmod 755 "$dir" && touch "$dir/.efarm-slurm"; }; then
        die "cannot create $dir"
    fi
    mkdir -p "$dir/munge" "$dir/ctld" "$dir/run" "$dir/log" "$dir/spool" "$dir/tmp"
    write_config "$n" "$cpus" "$nics"

    if ! setup_net "$n" "$nics" >"$dir/log/network.log" 2>&1; then
        say "SKIP: this machine does not allow the namespaces, veth or bridge ($(tail -n 1 "$dir/log/network.log"))"
        teardown >/dev/null
        exit 77
    fi

    head -c 1024 /dev/urandom >"$dir/munge/munge.key" && chmod 400 "$dir/munge/munge.key"
    munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
        --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/munged.seed" \
        --log-file="$dir/log/munged.log" >"$dir/log/munged.start.log" 2>&1 9<&-
    if ! wait_file "$dir/munge/munge.socket" 10; then
        show_logs
        teardown >/dev/null
        die "munged did not start (its logs above)"
    fi

    # shellcheck disable=SC2016 # $1 is the inner shell's argument
    unshare --uts sh -c 'hostname efarm-head && exec slurmctld -f "$1"' sh "$conf" \
        >"$dir/log/slurmctld.start.log" 2>&1 9<&-
    for i in $(seq 1 "$n"); do
        start_slurmd "$i"
    done
    echo "$n $cpus $nics" >"$dir/cluster"

    # Every node idle in sinfo. A daemon that died (a configuration error: its
    # start-up output and log say why) ends the wait at once; a slurmd gets 5 s
    # to write its pid file.
    end=$((SECONDS + start_timeout))
    while :; do
        states=$(SLURM_CONF=$conf sinfo -h -N -o '%N %T' 2>/dev/null)
        idle=$(echo "$states" | awk '$2 == "idle"' | sort -u | wc -l)
        [ "$idle" -lt "$n" ] || break
        why=
        if [ "$SECONDS" -ge "$end" ]; then
            why="not every node idle after $start_timeout s"
        elif ! alive slurmctld "$dir/run/slurmctld.pid" >/dev/null && [ "$SECONDS" -ge "$((end - start_timeout + 5))" ]; then
            why="slurmctld is not running"
        elif [ "$SECONDS" -ge "$((end - start_timeout + 5))" ]; then
            for i in $(seq 1 "$n"); do
                alive slurmd "$dir/run/slurmd-$node_prefix$i.pid" >/dev/null || why="$why $node_prefix$i"
            done
            [ -z "$why" ] || why="slurmd not running on$why"
        fi
        if [ -n "$why" ]; then
            show_logs
            while read -r i; do
                echo "slurm-cluster: sinfo: $i" >&2
            done <<<"${states:-no answer from slurmctld}"
            teardown >/dev/null
            die "$why (the logs' ends above); cluster removed"
        fi
        sleep 0.5
    done
    say "$n hosts (${node_prefix}1..$n at $net.1..$n, $cpus CPUs each) idle after $(echo "$t0 $(date +%s.%N)" | awk '{ printf "%.1f", $2 - $1 }') s"
    say "use it with: export SLURM_CONF=$conf"
    say "  or: $0 run srun -N$n -n$((2 * n)) hostname"
}

cmd_run() {
    [ $# -gt 0 ] || usage
    running || die "no cluster running ('scripts/slurm-cluster.sh start' first)"
    SLURM_CONF=$conf exec "$@"
}

cmd_status() {
    if running; then
        SLURM_CONF=$conf sinfo -N -l
    elif present; then
        say "a stale cluster ($(stale_reason)); 'stop' or 'start' removes it"
        return 1
    else
        echo "no cluster"
        return 1
    fi
}

node_arg() { # I: checks I names a node of the running cluster
    local n
    running || die "no cluster running"
    read -r n _ <"$dir/cluster"
    in_range "${1:-}" 1 "$n" || die "no node '${1:-}' (1..$n)"
}

cmd_kill_node() {
    local i=${1:-} ns pid count
    node_arg "$i"
    ns=$node_prefix$i
    case ${2:-} in "" | --unplug) ;; *) usage ;; esac
    if pid=$(alive slurmd "$dir/run/slurmd-$ns.pid"); then
        kill -KILL "$pid"
        gone "$pid"
        say "killed slurmd of $ns (pid $pid)"
    fi
    count=$(kill_netns "$ns")
    say "killed $count other process(es) in $ns"
    if [ "${2:-}" = --unplug ]; then
        ip link set "efsl-p$i" down && say "unplugged $ns (efsl-p$i down)"
    fi
}

cmd_restart_node() {
    local i=${1:-} ns
    node_arg "$i"
    ns=$node_prefix$i
    alive slurmd "$dir/run/slurmd-$ns.pid" >/dev/null && die "$ns's slurmd is running"
    ip link set "efsl-p$i" up
    start_slurmd "$i"
    say "restarted slurmd of $ns; sinfo shows it idle once it registered"
}

cmd_stop() {
    if ! present && [ ! -d "$dir" ]; then
        say "no cluster to stop"
        return 0
    fi
    teardown
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
start | kill-node | restart-node | stop) require && lock ;;
run | status) require ;;
*) usage ;;
esac
case $cmd in
start) cmd_start "$@" ;;
run) cmd_run "$@" ;;
status) cmd_status ;;
kill-node) cmd_kill_node "$@" ;;
restart-node) cmd_restart_node "$@" ;;
stop) cmd_stop ;;
esac
