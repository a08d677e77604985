# shellcheck shell=bash
# Sourced (bash) by the scripts that run MPI jobs on efasim: the environment
# that puts efarm on efasim through one of its two front ends.
#
#   verbs   efasim's drop-in libibverbs/libefa, loaded by efarm itself
#           (EFARM_DEVICE=sim)
#   kernel  the system's rdma-core (libibverbs, libefa) on efasim's emulated
#           uverbs device: efarm takes the path it takes on EFA
#           (EFARM_DEVICE=efa), with efasim's kernel front end preloaded
#           (efasim-info --env=kernel)
#
# efasim_device_env FRONT_END PREFIX: sets the array device_env to the
# VAR=VALUE words of that environment (for env(1)), with PREFIX the install
# that holds efasim-info (MPICH's, where scripts/mpich-build.sh installs efarm).
# Returns nonzero, with a message, for an unknown front end or when the kernel
# front end's environment cannot be had.
efasim_device_env() {
    local line info=$2/bin/efasim-info
    case $1 in
    verbs) device_env=(EFARM_DEVICE=sim) ;;
    kernel)
        if [ ! -x "$info" ]; then
            echo "efasim-env: no $info to tell the kernel front end's environment" >&2
            return 1
        fi
        device_env=(EFARM_DEVICE=efa)
        while IFS= read -r line; do
            case $line in
            export\ *=*) eval "device_env+=(${line#export })" ;;
            esac
        done < <("$info" --env=kernel) || return 1
        [ ${#device_env[@]} -gt 1 ] || {
            echo "efasim-env: $info --env=kernel printed no environment" >&2
            return 1
        }
        ;;
    *)
        echo "efasim-env: front end '$1' is neither verbs nor kernel" >&2
        return 1
        ;;
    esac
}
