#!/usr/bin/env bash
# Start-up as the job grows, on efasim, oversubscribed (every rank on this
# machine's cores): for each rank count, one job of bench/init_scale.c through
# ch4:efarm (MPIR_CVAR_NOLOCAL=1, so every pair of ranks talks through efarm),
# and its figures: the slowest rank's MPI_Init, its first MPI_Alltoall (first
# contact with every peer: handshakes), a second one, the job's wall time from
# mpiexec to exit, and resident memory per rank. Ends with how each figure grew
# from the smallest job to the largest, against the ranks' ratio.
#
#   bench/run-init-scale.sh [--prefix PREFIX] [--ranks "2 4 8 16 32 64"] [--runs N]
#                           [--launch mpiexec|srun-pmix|srun-pmi2|salloc-mpiexec]
#
# PREFIX: an MPICH with ch4:efarm (default build/mpich/install). --runs: jobs per
# rank count, the fastest (by wall time) reported (default 1). --launch: hydra's
# mpiexec on this machine (the default), or through the Slurm cluster of
# scripts/slurm-cluster.sh (started beforehand; its two hosts, half the ranks on
# each): srun --mpi=pmix (PREFIX a `mpich-build.sh --pmi pmix` build), srun
# --mpi=pmi2 (the default build or a `--pmi pmi2` one), or salloc with mpiexec
# inside (the default build).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
prefix=${EFARM_MPICH_PREFIX:-$top/build/mpich/install}
ranks="2 4 8 16 32 64"
runs=1
launch=mpiexec
while [ $# -gt 0 ]; do
    case $1 in
    --launch) launch=${2:?}; shift ;;
    --prefix) prefix=${2:?}; shift ;;
    --ranks) ranks=${2:?}; shift ;;
    --runs) runs=${2:?}; shift ;;
    -h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run-init-scale: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
out=${EFARM_BUILD_ROOT:-$top/build}/bench/init-scale
mkdir -p "$out"
"$prefix/bin/mpicc" -O2 -I"$top/test/common" -o "$out/init_scale" "$top/bench/init_scale.c" || exit 2

printf '%6s %10s %14s %14s %10s %12s %12s\n' ranks init_ms alltoall1_ms alltoall2_ms wall_ms \
    rss_mb_max rss_mb_mean
first=
last=
for n in $ranks; do
    best=
    for _ in $(seq 1 "$runs"); do
        case $launch in
        mpiexec) cmd=("$prefix/bin/mpiexec" -n "$n") ;;
        # setsid -w: each rank a session (a scheduling group) of its own, as hydra
        # starts them; srun's tasks of one host would otherwise share slurmstepd's
        # (doc/LAUNCH.md: the emulated hosts share this machine's cores).
        srun-pmix | srun-pmi2) cmd=("$top/scripts/slurm-cluster.sh" run srun --mpi="${launch#srun-}" -N 2 -n "$n"
            -m cyclic setsid -w) ;;
        salloc-mpiexec) cmd=("$top/scripts/slurm-cluster.sh" run salloc -N 2 "$prefix/bin/mpiexec" \
            -iface efslurm0 -ppn $(((n + 1) / 2)) -n "$n") ;;
        *) echo "run-init-scale: --launch $launch: mpiexec, srun-pmix, srun-pmi2 or salloc-mpiexec" >&2; exit 2 ;;
        esac
        t0=$(date +%s%N)
        line=$(EFARM_DEVICE=sim MPIR_CVAR_NOLOCAL=1 timeout 600 "${cmd[@]}" \
            "$out/init_scale" 2>"$out/err-$n.txt" | grep '^init_scale:')
        wall=$((($(date +%s%N) - t0) / 1000000))
        if [ -z "$line" ]; then
            echo "run-init-scale: $n ranks failed; see $out/err-$n.txt" >&2
            continue
        fi
        if [ -z "$best" ] || [ "$wall" -lt "${best##* }" ]; then best="$line $wall"; fi
    done
    [ -n "$best" ] || exit 1
    read -r _ _ r _ init _ a1 _ a2 _ rmax _ rmean wall <<<"$best"
    printf '%6s %10s %14s %14s %10s %12s %12s\n' "$r" "$init" "$a1" "$a2" "$wall" "$rmax" "$rmean"
    [ -n "$first" ] || first="$r $init $a1 $wall"
    last="$r $init $a1 $wall"
done
read -r r0 i0 f0 w0 <<<"$first"
read -r r1 i1 f1 w1 <<<"$last"
awk -v r0="$r0" -v r1="$r1" -v i0="$i0" -v i1="$i1" -v f0="$f0" -v f1="$f1" -v w0="$w0" -v w1="$w1" \
    'BEGIN { printf "run-init-scale: from %d to %d ranks (%.0fx): MPI_Init %.1fx, first alltoall %.1fx, wall %.1fx\n",
             r0, r1, r1 / r0, i1 / i0, f1 / f0, w1 / w0 }'
