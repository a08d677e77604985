#!/usr/bin/env bash
# Instructions per 8-byte MPI_Send/MPI_Recv round trip, per rank, split by object:
# MPICH (libmpi), efarm (libefarm), the device (efasim's libibverbs/libefa, which a
# real EFA replaces with rdma-core and the NIC), libc and the rest. Counted with
# valgrind's callgrind in the calling thread (efasim's service thread, the emulated
# NIC, is left out) over phases bench-instr (bench/bench_instr.c) brackets with
# callgrind's client requests, so start-up and warm-up count nothing. PLT stubs are
# counted in the object that calls through them (see objects() below).
#
#   bench/run-instr-bench.sh [--prefix MPICH-PREFIX] [--iters N1,N2] [--size BYTES]
#                            [--any-source] [--ucx] [--check] [--keep DIR]
#                            [--front-end verbs|kernel] [--rdma-core LIBDIR]
#                            [--ofi [--ofi-prefix MPICH-OFI-PREFIX]]
#
# --front-end kernel (issue 53): efarm on the path it takes on EFA, the system's
# rdma-core (libibverbs, libefa) over efasim's kernel front end (EFARM_DEVICE=efa,
# scripts/efasim-env.sh). The objects then split the device's side in two:
# rdma-core (the system's libibverbs and libefa: work requests, doorbells and
# completion parsing, which run on the host with a real EFA too) and device (efasim's
# libefasim-kernel: the emulated kernel and NIC, fitted out like the drop-in's). Its
# doorbells and completion rings trap (efasim's README), and the trap handler reads
# the faulting instruction's address and registers from the signal context: valgrind
# gives them exactly only with --vex-iropt-level=0 --px-default=allregs-at-mem-access,
# which this mode adds (slower; the instructions counted are the program's either way).
#
# --any-source: the receives use MPI_ANY_SOURCE (with MPICH's shared memory built,
# ch4's any-source pair and efarm's arrival-order check, issue 39, are in the count).
#
# The fit. A round trip's count depends on how often the receive polled in vain,
# which valgrind's slowness and the partner decide. bench-instr's idle phase (one
# receive whose sender sleeps first: thousands of progress calls that find nothing)
# gives each object's cost of an empty progress call; the netmod's MPI_T counters
# (efarm_nm_progress_calls, efarm_nm_progress_idle) say how many empty calls each
# phase made; so per round trip
#
#     fitted = (instructions - empty calls x cost of an empty call) / round trips,
#
# "one round trip whose polls all found work". Two iteration counts (-n N1,N2) give
# two fits; they must agree (--check: within 10% for efarm and MPICH), which tells
# that nothing but the round trips grew with the count. The empty-call cost also
# has the idle phase's one receive in it: taken out with the fitted figure itself
# (two passes).
#
# Output: a table per rank and, for scripts, "INSTR <rank> <object> <fitted per
# round trip> <raw per round trip> <empty-call cost>" lines, "POLLS <rank> <calls
# per round trip> <empty per round trip>", with --front-end kernel "HOST <rank> <efarm +
# rdma-core> <rdma-core>" (fitted, per round trip: the host's cost below MPICH on EFA), and "TARGET <name> <value> <limit> met|missed"
# for issue 14's targets (efarm <= 600, efarm + MPICH <= 1500, per rank). --check
# (CI) fails when a phase or object is missing, a count is not positive, or the two
# fits disagree; it never fails on a target.
#
# --ucx (issue 41): also count the same program on Debian's MPICH 4.0.2 with ch4:ucx
# (packages mpich and libmpich-dev: bench-instr built by its mpicc.mpich, started by
# its mpiexec.mpich, MPIR_CVAR_NOLOCAL=1 as for efarm, though Debian's build hands
# these messages to UCX without it too). UCX picks its own transport between two
# ranks of one host, uct's shared memory (sysv for the tag lane, cma for rendezvous
# on this VM): the run prints the lanes UCX's info log names. Objects: MPICH
# (libmpich), UCX's engine as ucp (libucp), uct (libuct and its transport modules)
# and ucs (libucs, libucm), libc, the rest; UCX's async thread is left out like
# efasim's service thread. ch4:ucx has no progress counters, so callgrind's own
# call counts stand in for them: the progress calls are the calls of
# ucp_worker_progress (ch4:ucx's progress makes one per progress call), and those
# that found work are the calls of ucp's active-message handlers (ucp_*_handler:
# uct calls one per message it takes from the transport; one 8-byte message, one
# ucp_eager_only_handler, one progress call); empty calls = progress calls -
# handler calls, and the fit is the one above. (Above UCX's eager sizes a message
# takes several handler calls, which this count takes as several polls with work:
# the fit is for small messages.) The run fails unless UCX carried every message
# (one ucp_tag_send_nbx per send and a handler per receive in each round-trip phase).
# Output adds a ch4:ucx table per rank, "UCX-INSTR" and "UCX-POLLS" lines (the
# formats of INSTR and POLLS; objects ucp, uct, ucs, mpich, libc, other), the two
# side by side ("engine + MPICH": efarm + MPICH against ucp + uct + ucs + MPICH) and
# "TARGET rank<R>-efarm+mpich-below-ucx <efarm + MPICH> <ch4:ucx's engine + MPICH>
# met|missed". --check applies its checks to both. Without --ucx nothing of Debian's
# MPICH is needed (CI runs without it); its checks are then efarm's alone.
#
# --ofi (issue 53): also count the same program on MPICH's ch4:ofi over libfabric's
# EFA provider (Debian's 1.17) on the same device: the same MPICH version built with
# ch4:ofi (scripts/mpich-build.sh --netmod ofi; --ofi-prefix, default
# EFARM_MPICH_OFI_CACHE/install, else build/mpich-ofi/install), FI_PROVIDER=efa,
# FI_EFA_ENABLE_SHM_TRANSFER=0 and MPIR_CVAR_NOLOCAL=1. Needs --front-end kernel and
# --rdma-core LIBDIR (a build of the installed rdma-core with symbols,
# scripts/rdma-core-build.sh; both MPIs then run on it, and its counts are Debian's
# libraries' own, bench/README.md): ch4:ofi has no progress counters, and callgrind's
# call counts stand in for them, as for ch4:ucx. The progress calls are the calls of
# ch4:ofi's progress function (MPIDI_NM_progress, one fi_cq_read each); those that
# found work are the calls of libefa's efa_end_poll, which closes a CQ poll that
# found a completion (libfabric's EFA provider polls its device CQ once per
# fi_cq_read and reports what it found in the same call); empty calls = progress
# calls - efa_end_poll calls. For efarm the same count is printed beside its MPI_T
# counter, a check of the method ("polls with work: MPI_T N, efa_end_poll M"). The
# run fails unless libfabric sent every message (a send posted to the device,
# efa_send_wr_complete or efa_post_send, per round trip at least). Output adds a
# ch4:ofi table per rank, "OFI-INSTR" and "OFI-POLLS" lines (objects libfabric,
# mpich, rdma-core, libc, device, other) and the two side by side.
#
# Issue 41's goal is printed in every run: "TARGET rank<R>-efarm+mpich-41 <value>
# 1300 met|missed" (efarm + MPICH at most 1300 per round trip and rank, release build).
#
# Needs valgrind and an MPICH built with ch4:efarm (scripts/mpich-build.sh).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out=${EFARM_BUILD_ROOT:-$top/build}/bench
prefix=${EFARM_MPICH_PREFIX:-$top/build/mpich/install}
iters=200,1000
size=8
any=
check=no
keep=
ucx=no
front_end=verbs
ucx_mpicc=/usr/bin/mpicc.mpich     # Debian's MPICH (libmpich-dev)
ucx_mpiexec=/usr/bin/mpiexec.mpich # Debian's MPICH (mpich)
ofi=no
ofi_prefix=${EFARM_MPICH_OFI_CACHE:-$top/build/mpich-ofi}/install
rdma_core=

while [ $# -gt 0 ]; do
    case $1 in
    --prefix) prefix=${2:?}; shift 2 ;;
    --iters) iters=${2:?}; shift 2 ;;
    --size) size=${2:?}; shift 2 ;;
    --any-source) any=-a; shift ;;
    --ucx) ucx=yes; shift ;;
    --ofi) ofi=yes; shift ;;
    --ofi-prefix) ofi_prefix=${2:?}; shift 2 ;;
    --rdma-core) rdma_core=${2:?}; shift 2 ;;
    --check) check=yes; shift ;;
    --keep) keep=${2:?}; shift 2 ;;
    --front-end) front_end=${2:?}; shift 2 ;;
    -h | --help) sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//;/^set -e/d'; exit 0 ;;
    *) echo "run-instr-bench: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
log() { echo "run-instr-bench: $*" >&2; }
# shellcheck source=scripts/efasim-env.sh
. "$top/scripts/efasim-env.sh"
command -v valgrind >/dev/null || { log "valgrind is not installed (apt-get install valgrind)"; exit 1; }
[ -x "$prefix/bin/mpicc" ] || { log "no $prefix/bin/mpicc: run scripts/mpich-build.sh first"; exit 1; }

if [ -n "$rdma_core" ]; then
    [ "$front_end" = kernel ] || { log "--rdma-core: with --front-end kernel only"; exit 2; }
    [ -e "$rdma_core/libibverbs.so.1" ] && [ -e "$rdma_core/libefa.so.1" ] ||
        { log "--rdma-core: no libibverbs.so.1 and libefa.so.1 in $rdma_core (scripts/rdma-core-build.sh)"; exit 1; }
    rdma_core=$(cd "$rdma_core" && pwd)
fi
if [ "$ofi" = yes ]; then
    [ "$front_end" = kernel ] && [ -n "$rdma_core" ] ||
        { log "--ofi: needs --front-end kernel and --rdma-core LIBDIR (see --help)"; exit 2; }
    [ -x "$ofi_prefix/bin/mpicc" ] ||
        { log "--ofi: no $ofi_prefix/bin/mpicc (scripts/mpich-build.sh --netmod ofi --prefix $ofi_prefix)"; exit 1; }
    "$ofi_prefix/bin/mpichversion" 2>/dev/null | grep -q '^MPICH Device:.*ch4:ofi' ||
        { log "--ofi: $ofi_prefix/bin/mpichversion does not name ch4:ofi"; exit 1; }
fi
if [ "$ucx" = yes ]; then
    if [ ! -x "$ucx_mpicc" ] || [ ! -x "$ucx_mpiexec" ]; then
        log "--ucx: no $ucx_mpicc or $ucx_mpiexec (apt-get install mpich libmpich-dev)"
        exit 1
    fi
    "${ucx_mpiexec%/*}/mpichversion" 2>/dev/null | grep -q '^MPICH Device:.*ch4:ucx' ||
        { log "--ucx: ${ucx_mpiexec%/*}/mpichversion does not name ch4:ucx"; exit 1; }
fi

# One binary per MPICH prefix: mpicc links it to that prefix's libmpi (RUNPATH),
# so a binary built for another prefix would count the other MPICH.
bin=$out/efarm/bench-instr-$(printf %s "$(cd "$prefix" && pwd -P)" | cksum | cut -d' ' -f1)
mkdir -p "$out/efarm"
if [ ! -x "$bin" ] || [ "$bin" -ot "$top/bench/bench_instr.c" ] || [ "$bin" -ot "$prefix/bin/mpicc" ]; then
    "$prefix/bin/mpicc" -std=c11 -O2 -g -Wall -Wextra -Werror -o "$bin" "$top/bench/bench_instr.c"
    log "built $bin"
fi
# The same source built by ch4:ofi's mpicc.
ofi_bin=$out/ofi/bench-instr
if [ "$ofi" = yes ]; then
    mkdir -p "$out/ofi"
    if [ ! -x "$ofi_bin" ] || [ "$ofi_bin" -ot "$top/bench/bench_instr.c" ] || [ "$ofi_bin" -ot "$ofi_prefix/bin/mpicc" ]; then
        "$ofi_prefix/bin/mpicc" -std=c11 -O2 -g -Wall -Wextra -Werror -o "$ofi_bin" "$top/bench/bench_instr.c"
        log "built $ofi_bin"
    fi
fi
# The same source built by Debian's mpicc (linked to its libmpich.so.12, no RUNPATH).
ucx_bin=$out/ucx/bench-instr
if [ "$ucx" = yes ]; then
    mkdir -p "$out/ucx"
    if [ ! -x "$ucx_bin" ] || [ "$ucx_bin" -ot "$top/bench/bench_instr.c" ] || [ "$ucx_bin" -ot "$ucx_mpicc" ]; then
        "$ucx_mpicc" -std=c11 -O2 -g -Wall -Wextra -Werror -o "$ucx_bin" "$top/bench/bench_instr.c" ||
            { log "--ucx: $ucx_mpicc failed (Debian's MPICH headers: apt-get install libmpich-dev)"; exit 1; }
        log "built $ucx_bin"
    fi
fi

dir=${keep:-$(mktemp -d)}
mkdir -p "$dir"
[ -n "$keep" ] || trap 'rm -rf "$dir"' EXIT
rm -f "$dir"/cg.* "$dir"/phases "$dir"/sum
rm -rf "$dir/ucx" "$dir/ofi"
# Valgrind's and hwloc's notes that say nothing about the run.
quiet() { grep -v -F -f "$top/bench/valgrind-quiet.txt" >&2; }
# The efasim that MPICH's prefix holds, unless EFARM_EFASIM_PATH names another.
efasim_device_env "$front_end" "$prefix" || exit 1
# After efasim's own LD_LIBRARY_PATH: the later one counts.
[ -z "$rdma_core" ] || device_env+=(LD_LIBRARY_PATH="$rdma_core")
vg_exact=()
[ "$front_end" = verbs ] || vg_exact=(--vex-iropt-level=0 --px-default=allregs-at-mem-access)
env "${device_env[@]}" MPIR_CVAR_NOLOCAL=1 HWLOC_HIDE_ERRORS=1 timeout 1800 \
    "$prefix/bin/mpiexec" -n 2 valgrind -q --tool=callgrind --separate-threads=yes --skip-plt=no \
    "${vg_exact[@]}" --callgrind-out-file="$dir/cg.%p" "$bin" -n "$iters" -s "$size" $any \
    >"$dir/phases" 2> >(quiet)
grep -q '^PHASE' "$dir/phases" || { log "bench-instr printed no phases"; exit 1; }
if [ "$ofi" = yes ]; then
    mkdir -p "$dir/ofi"
    # FI_EFA_ENABLE_SHM_TRANSFER=0 last: the two ranks share a host, and libfabric
    # would hand their messages to its shm provider.
    ofi_env=("${device_env[@]}" FI_PROVIDER=efa FI_EFA_ENABLE_SHM_TRANSFER=0 MPIR_CVAR_NOLOCAL=1 HWLOC_HIDE_ERRORS=1)
    # ch4:ofi finds its NIC in hwloc's topology by PCI address: efasim's, added to this
    # machine's (efasim_topology), once a process made efasim's sysfs view.
    env "${device_env[@]}" true
    sysfs=$(printf '%s\n' "${device_env[@]}" | sed -n 's/^SYSFS_PATH=//p' | tail -n 1)
    efasim_topology "$sysfs" "$dir/ofi/topology.xml" ||
        { log "--ofi: cannot write $dir/ofi/topology.xml (lstopo-no-graphics from hwloc-nox)"; exit 1; }
    ofi_env+=(HWLOC_XMLFILE="$dir/ofi/topology.xml" HWLOC_THISSYSTEM=1)
    env "${ofi_env[@]}" MPIR_CVAR_DEBUG_SUMMARY=1 timeout 300 "$ofi_prefix/bin/mpiexec" -n 2 "$ofi_bin" -n 1 -d 1 \
        >"$dir/ofi/info" 2>&1 || { cat "$dir/ofi/info" >&2; log "--ofi: bench-instr failed on ch4:ofi"; exit 1; }
    grep -q '^libfabric provider: efa' "$dir/ofi/info" ||
        { cat "$dir/ofi/info" >&2; log "--ofi: ch4:ofi did not name libfabric's efa provider"; exit 1; }
    env "${ofi_env[@]}" timeout 1800 \
        "$ofi_prefix/bin/mpiexec" -n 2 valgrind -q --tool=callgrind --separate-threads=yes --skip-plt=no \
        "${vg_exact[@]}" --callgrind-out-file="$dir/ofi/cg.%p" "$ofi_bin" -n "$iters" -s "$size" $any \
        >"$dir/ofi/phases" 2> >(quiet)
    grep -q '^PHASE' "$dir/ofi/phases" || { log "--ofi: bench-instr printed no phases"; exit 1; }
fi
if [ "$ucx" = yes ]; then
    mkdir -p "$dir/ucx"
    # Which transports UCX picks between the two ranks: a short run outside valgrind,
    # UCX's info log (its version and each endpoint's lanes).
    MPIR_CVAR_NOLOCAL=1 HWLOC_HIDE_ERRORS=1 UCX_LOG_LEVEL=info timeout 120 \
        "$ucx_mpiexec" -n 2 "$ucx_bin" -n 1 -d 1 >"$dir/ucx/info" 2>&1 ||
        { cat "$dir/ucx/info" >&2; log "--ucx: bench-instr failed on Debian's MPICH"; exit 1; }
    MPIR_CVAR_NOLOCAL=1 HWLOC_HIDE_ERRORS=1 timeout 900 \
        "$ucx_mpiexec" -n 2 valgrind -q --tool=callgrind --separate-threads=yes --skip-plt=no \
        --callgrind-out-file="$dir/ucx/cg.%p" "$ucx_bin" -n "$iters" -s "$size" $any \
        >"$dir/ucx/phases" 2> >(quiet)
    grep -q '^PHASE' "$dir/ucx/phases" || { log "--ucx: bench-instr printed no phases"; exit 1; }
fi

# Self instructions per object class in one callgrind file (its calling thread);
# bench/callgrind.awk says how PLT stubs are counted.
objects() { awk -v mode=mpi -f "$top/bench/callgrind.awk" "$1"; }

# Calls in one callgrind file, from every caller (bench/callgrind.awk, mode=calls).
# UCX's: "<progress calls> <handler calls> <sends>", the calls of
# ucp_worker_progress, of ucp's active-message handlers (ucp_*_handler but the
# setters ucp_worker_set_am_*) and of ucp_tag_send_nbx.
ucx_calls() {
    awk -v mode=calls -v patterns='^ucp_worker_progress$ ^ucp_[a-z_]*_handler$ ^ucp_tag_send_nbx$' \
        -v exclude='^ucp_worker_set_' -f "$top/bench/callgrind.awk" "$1"
}
# On the kernel front end with --rdma-core: "<progress calls> <efa_end_poll calls>
# <sends posted>", the calls of ch4:ofi's progress function (MPIDI_NM_progress), of
# libefa's efa_end_poll (a CQ poll that found work) and of its send posts
# (efa_send_wr_complete: a batch of ibv_wr_* sends, as efarm posts; efa_post_send:
# ibv_post_send, as libfabric 1.17 posts).
efa_calls() {
    awk -v mode=calls -v patterns='^MPIDI_NM_progress$ ^efa_end_poll$ ^(efa_send_wr_complete|efa_post_send)$' \
        -f "$top/bench/callgrind.awk" "$1"
}

# The file of a rank's phase: cg.<pid>.<dump>-01 whose trigger names the phase.
phase_file() { # DIR PID PHASE
    grep -l -x "desc: Trigger: Client Request: $3" "$1"/cg."$2".*-01 2>/dev/null | head -n 1
}

# "<rank> <phase> <round trips> <progress calls> <empty calls> <object> <instructions>"
# per phase and object of one run (DIR: its phases and callgrind files; KIND efarm
# takes the progress counts from bench-instr's MPI_T counters, ucx from callgrind).
tabulate() { # DIR KIND
    local d=$1 kind=$2 rank pid phase trips calls idle f handlers sends work
    : >"$d/table"
    : >"$d/polls-with-work"
    while read -r _ rank pid phase trips calls idle; do
        f=$(phase_file "$d" "$pid" "$phase")
        [ -n "$f" ] || { log "no callgrind dump for rank $rank phase $phase ($kind)"; return 1; }
        if [ "$kind" = ofi ]; then
            read -r calls work sends < <(efa_calls "$f")
            if [ "$calls" -le 0 ] || [ "$sends" -lt "$trips" ] || [ "$work" -gt "$calls" ]; then
                log "ch4:ofi rank $rank phase $phase: $trips round trips but $sends sends posted to the" \
                    "device, $work polls with work, $calls progress calls: libfabric did not carry the messages"
                return 1
            fi
            idle=$((calls - work))
        elif [ -n "$rdma_core" ]; then
            # efarm: the ofi method's count of polls with work, beside its MPI_T counter
            read -r _ work _ < <(efa_calls "$f")
            echo "$rank $phase $((calls - idle)) $work" >>"$d/polls-with-work"
        fi
        if [ "$kind" = ucx ]; then
            read -r calls handlers sends < <(ucx_calls "$f")
            # UCX must have carried the phase's messages: a send per round trip and a
            # handler at least per message received.
            if [ "$calls" -le 0 ] || [ "$handlers" -lt "$((trips > 0 ? trips : 1))" ] ||
                [ "$sends" -ne "$trips" ]; then
                log "ch4:ucx rank $rank phase $phase: $trips round trips but $sends ucp_tag_send_nbx," \
                    "$handlers handler calls, $calls ucp_worker_progress: UCX did not carry the messages"
                return 1
            fi
            idle=$((calls - handlers))
        fi
        objects "$f" | while read -r c n; do echo "$rank $phase $trips $calls $idle $c $n"; done >>"$d/table"
    done < <(grep '^PHASE' "$d/phases")
}

# The fit per rank and object of one run's table; KIND efarm prints the lines it
# always printed (INSTR, POLLS, TARGET), ucx the same with UCX- in front. Appends
# "<kind> <rank> <object> <fit>" to $dir/sum (object "engine": the engine's objects).
fit() { # TABLE KIND
    awk -v check="$check" -v size="$size" -v kind="$2" -v sum="$dir/sum" '
BEGIN {
    if (kind == "ucx") {
        norder = split("ucp uct ucs mpich libc device other", order, " ")
        neng = split("ucp uct ucs", eng, " "); ename = "ucx"; pre = "UCX-"; title = " on ch4:ucx"
    } else if (kind == "ofi") {
        norder = split("libfabric mpich rdma-core libc device other", order, " ")
        neng = split("libfabric", eng, " "); ename = "libfabric"; pre = "OFI-"; title = " on ch4:ofi"
    } else {
        norder = split("efarm mpich rdma-core libc device other", order, " ")
        neng = split("efarm", eng, " "); ename = "efarm"; pre = ""; title = ""
    }
}
{
    rank = $1; phase = $2; cnt[rank, phase, $6] = $7
    trips[rank, phase] = $3; calls[rank, phase] = $4; idle[rank, phase] = $5
    ranks[rank] = 1; classes[$6] = 1
    if (phase ~ /^rt-/) { seen = 0; for (i = 1; i <= nrt; i++) if (rt[i] == phase) seen = 1; if (!seen) rt[++nrt] = phase }
}
END {
    bad = 0
    for (r = 0; r <= 1; r++) {
        ip = "idle-" r
        if (!((r, ip) in idle) || idle[r, ip] <= 0 || nrt < 1) {
            printf("run-instr-bench: rank %d%s: no idle phase or no progress counters\n", r, title)
            bad = 1; continue
        }
        last = rt[nrt]
        printf("\nrank %d%s: instructions per %d-byte round trip (calling thread), empty progress calls fitted out\n", r, title, size)
        printf("%-12s %10s %10s", "object", "raw", "empty-call")
        for (i = 1; i <= nrt; i++) printf(" %10s", "fit " substr(rt[i], 4))
        printf("\n")
        for (i = 1; i <= nrt; i++) { E[i] = 0; M[i] = 0 }
        for (k = 1; k <= norder; k++) {
            c = order[k]
            if (!(c in classes)) continue
            # The idle phase holds one receive (about half a round trip): two passes.
            fit = 0
            for (pass = 0; pass < 2; pass++) {
                e = (cnt[r, ip, c] - fit / 2) / idle[r, ip]; if (e < 0) e = 0
                fit = (cnt[r, last, c] - idle[r, last] * e) / trips[r, last]
            }
            empty[r, c] = e
            printf("%-12s %10.0f %10.1f", c, cnt[r, last, c] / trips[r, last], e)
            for (i = 1; i <= nrt; i++) {
                f[r, c, i] = (cnt[r, rt[i], c] - idle[r, rt[i]] * e) / trips[r, rt[i]]
                printf(" %10.0f", f[r, c, i])
                for (j = 1; j <= neng; j++) if (eng[j] == c) E[i] += f[r, c, i]
                if (c == "mpich") M[i] = f[r, c, i]
            }
            printf("\n")
            printf("%sINSTR %d %s %.0f %.0f %.1f\n", pre, r, c, f[r, c, nrt], cnt[r, last, c] / trips[r, last], e)
            printf("%s %d %s %.1f\n", kind, r, c, f[r, c, nrt]) >> sum
        }
        printf("%s %d engine %.1f\n", kind, r, E[nrt]) >> sum
        both = E[nrt] + M[nrt]
        if (kind == "ucx") {
            printf("%-12s %10s %10s", "ucp+uct+ucs", "", "")
            for (i = 1; i <= nrt; i++) printf(" %10.0f", E[i])
            printf("\n")
        }
        printf("%-12s %10s %10s", ename "+mpich", "", "")
        for (i = 1; i <= nrt; i++) printf(" %10.0f", E[i] + M[i])
        printf("\n")
        if ("rdma-core" in classes) {
            printf("%-12s %10s %10s", ename "+rdma-core", "", "")
            for (i = 1; i <= nrt; i++) printf(" %10.0f", E[i] + f[r, "rdma-core", i])
            printf("\n")
            printf("HOST %d %.0f %.0f\n", r, E[nrt] + f[r, "rdma-core", nrt], f[r, "rdma-core", nrt])
        }
        printf("progress calls per round trip %.2f, of which empty %.2f (phase %s)\n",
               calls[r, last] / trips[r, last], idle[r, last] / trips[r, last], last)
        printf("%sPOLLS %d %.2f %.2f\n", pre, r, calls[r, last] / trips[r, last], idle[r, last] / trips[r, last])
        if (kind == "efarm") {
            printf("TARGET rank%d-efarm %.0f 600 %s\n", r, E[nrt], E[nrt] <= 600 ? "met" : "missed")
            printf("TARGET rank%d-efarm+mpich %.0f 1500 %s\n", r, both, both <= 1500 ? "met" : "missed")
            printf("TARGET rank%d-efarm+mpich-41 %.0f 1300 %s\n", r, both, both <= 1300 ? "met" : "missed")
        }
        if (check == "yes") {
            if (!((r, last, "mpich") in cnt) || E[nrt] <= 0 || M[nrt] <= 0) {
                if (kind == "efarm")
                    printf("run-instr-bench: rank %d: no efarm or MPICH instructions counted\n", r) > "/dev/stderr"
                else
                    printf("run-instr-bench: rank %d%s: no %s or MPICH instructions counted\n", r, title, ename) > "/dev/stderr"
                bad = 1
            }
            for (i = 1; i <= nrt; i++) { C[1, i] = E[i]; C[2, i] = M[i] }
            split(ename " mpich", cname, " ")
            for (k = 1; k <= 2; k++) {
                c = cname[k]
                if (nrt >= 2 && (C[k, 1] - C[k, nrt] > 0.1 * C[k, nrt] || C[k, nrt] - C[k, 1] > 0.1 * C[k, nrt])) {
                    printf("run-instr-bench: rank %d %s%s: the fits of %s and %s disagree (%.0f, %.0f)\n", r, c, title, rt[1], rt[nrt], C[k, 1], C[k, nrt]) > "/dev/stderr"; bad = 1
                }
            }
        }
    }
    exit bad
}' "$1" 2>&1
}

status=0
tabulate "$dir" efarm || exit 1
fit "$dir/table" efarm || status=1
if [ -s "$dir/polls-with-work" ]; then
    echo
    echo "efarm's polls with work per phase and rank, MPI_T against ch4:ofi's method (efa_end_poll calls):"
    awk '{ printf("  rank %d %-8s MPI_T %d, efa_end_poll %d\n", $1, $2, $3, $4) }' "$dir/polls-with-work"
fi
[ "$ucx" = yes ] || [ "$ofi" = yes ] || exit "$status"

# side_by_side KIND TITLE: efarm's fitted figures next to ch4:ucx's or ch4:ofi's.
side_by_side() {
    awk -v size="$size" -v other="$1" -v title="$2" '
{ v[$1, $2, $3] = $4 }
END {
    printf("fitted instructions per %d-byte round trip (calling thread)\n", size)
    printf("%-14s %9s %9s %9s %9s\n", "", "rank 0", "", "rank 1", "")
    printf("%-14s %9s %9s %9s %9s\n", "object", "efarm", title, "efarm", title)
    n = split("mpich:MPICH;engine:engine;efarm:  efarm;libfabric:  libfabric;ucp:  ucp;uct:  uct;ucs:  ucs;rdma-core:rdma-core;device:device;libc:libc;other:other", rows, ";")
    for (k = 1; k <= n; k++) {
        split(rows[k], p, ":"); o = p[1]
        if (!(("efarm", 0, o) in v) && !((other, 0, o) in v)) continue
        printf("%-14s", p[2])
        for (r = 0; r <= 1; r++)
            for (q = 1; q <= 2; q++) {
                kind = q == 1 ? "efarm" : other
                if ((kind, r, o) in v) printf(" %9.0f", v[kind, r, o]); else printf(" %9s", "-")
            }
        printf("\n")
    }
    printf("%-14s", "engine+MPICH")
    for (r = 0; r <= 1; r++)
        for (q = 1; q <= 2; q++) {
            kind = q == 1 ? "efarm" : other
            t[kind, r] = v[kind, r, "engine"] + v[kind, r, "mpich"]
            printf(" %9.0f", t[kind, r])
        }
    printf("\n")
    if (("efarm", 0, "rdma-core") in v && (other, 0, "rdma-core") in v) {
        printf("%-14s", "engine+rdma")
        for (r = 0; r <= 1; r++)
            for (q = 1; q <= 2; q++) {
                kind = q == 1 ? "efarm" : other
                printf(" %9.0f", v[kind, r, "engine"] + v[kind, r, "rdma-core"])
            }
        printf("\n")
    }
    for (r = 0; r <= 1; r++)
        printf("TARGET rank%d-efarm+mpich-below-%s %.0f %.0f %s\n", r, other, t["efarm", r], t[other, r],
               t["efarm", r] < t[other, r] ? "met" : "missed")
}' "$dir/sum"
}

if [ "$ofi" = yes ]; then
    tabulate "$dir/ofi" ofi || exit 1
    fit "$dir/ofi/table" ofi || status=1
    echo
    echo "efarm against ch4:ofi (MPICH $("$ofi_prefix/bin/mpichversion" | sed -n 's/^MPICH Version:[[:space:]]*//p')" \
        "with libfabric $(pkg-config --modversion libfabric 2>/dev/null || echo '?')'s efa provider," \
        "both through rdma-core $rdma_core on efasim's kernel front end)"
    side_by_side ofi ch4:ofi
fi
[ "$ucx" = yes ] || exit "$status"

tabulate "$dir/ucx" ucx || exit 1
fit "$dir/ucx/table" ucx || status=1

# Side by side: what UCX said it runs on, then each rank's fitted figures.
version=$(sed -n 's/.*UCX  INFO  Version \([^ ]*\).*/\1/p' "$dir/ucx/info" | head -n 1)
lanes=$(sed -n 's/.*ep_cfg\[[0-9]*\]: \(tag([^)]*)\).*/\1/p' "$dir/ucx/info" | grep -v '^tag(self' | sort -u | paste -sd' ')
echo
echo "efarm against ch4:ucx (Debian's MPICH $("${ucx_mpiexec%/*}/mpichversion" | sed -n 's/^MPICH Version:[[:space:]]*//p')," \
    "UCX ${version:-?}; UCX's lanes to the other rank: ${lanes:-not reported})"
side_by_side ucx ch4:ucx
exit "$status"
