#!/usr/bin/env bash
# libfabric's EFA provider against itself, two processes on efasim and no efarm:
# fi-pair's cases (test/interop/fi_pair.c), the defects the interop suite found,
# against each libfabric given.
#
#   test/interop/run-fi-pair.sh BUILD_DIR [--libfabric PREFIX|system [--front-end verbs|kernel]]...
#                               [--cases NAME[,NAME...]] [--timeout S]
#
# Each --libfabric names one libfabric: the one in PREFIX/lib (another build, such
# as scripts/libfabric-build.sh's) or the system's, on the front end named by the
# --front-end after it: verbs (default), efasim's drop-in, where libfabric runs
# with FI_EFA_USE_DATA_PATH_DIRECT=0; kernel, efasim's kernel front end under the
# real rdma-core, the system's or the one a libfabric built against a later
# rdma-core finds by its RUNPATH (RDMA write needs rdma-core 45 or later there).
# Without --libfabric: the system's libfabric on the drop-in.
#
# Cases (default all): unreadable-write, bad-key-write, widened-key, cq-data-context;
# unreadable-write and widened-key run twice, with libfabric's MR cache as it is and with
# FI_EFA_MR_CACHE_ENABLE=0. Prints one line per case, libfabric and cache setting,
# "LABEL CASE: SHOWN ..." / "NOT SHOWN ..." (fi-pair's verdict) or "... ERROR ...",
# and ends with "N shown, N not shown" (and the errors, if any). Exit status 0, or 2
# when a run could not be set up. Logs go to $EFARM_BUILD_ROOT/logs/fi-pair
# (default build/logs/fi-pair).
#
# BUILD_DIR is a configured efarm tree with test/interop/fi-pair and tools/efasim-info
# built (make test/interop/fi-pair tools/efasim-info; fi-pair needs libfabric-dev) and
# efasim in src/efasim/.libs.
set -u

usage() { sed -n '6,7p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

build=${1:-}
if [ -z "$build" ] || [ ! -d "$build" ]; then usage; fi
build=$(cd "$build" && pwd)
shift
top=$(cd "$(dirname "$0")/../.." && pwd)
prefixes=()
front_ends=()
cases=unreadable-write,bad-key-write,widened-key,cq-data-context
timeout_s=10
while [ $# -gt 0 ]; do
    case $1 in
    --libfabric)
        if [ "${2:-}" = system ]; then
            prefixes+=(system)
        else
            prefixes+=("$(cd "${2:?}" && pwd)") || exit 2
        fi
        front_ends+=(verbs)
        shift 2
        ;;
    --front-end)
        case ${2:-} in verbs | kernel) ;; *) usage ;; esac
        [ ${#prefixes[@]} -gt 0 ] || { prefixes+=(system); front_ends+=(verbs); }
        front_ends[${#front_ends[@]} - 1]=$2
        shift 2
        ;;
    --cases) cases=${2:?}; shift 2 ;;
    --timeout) timeout_s=${2:?}; shift 2 ;;
    *) usage ;;
    esac
done
[ ${#prefixes[@]} -gt 0 ] || { prefixes=(system); front_ends=(verbs); }

bin=$build/test/interop/fi-pair
info=$build/tools/efasim-info
simlib=$build/src/efasim/.libs
logs=${EFARM_BUILD_ROOT:-$top/build}/logs/fi-pair
mkdir -p "$logs"
if [ ! -x "$bin" ] || [ ! -x "$info" ]; then
    echo "ERROR: $bin or $info not built (make test/interop/fi-pair tools/efasim-info)"
    echo "0 shown, 0 not shown, 1 error"
    exit 2
fi
# Nothing of the caller's libfabric or efasim settings: each case sets its own.
unset FI_PROVIDER FI_EFA_USE_DEVICE_RDMA FI_EFA_MR_CACHE_ENABLE
for v in $(env | sed -n 's/^\(EFASIM_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done

shown=0
not_shown=0
errors=0

# run LABEL PREFIX FRONT-END CASE [NAME=VALUE...]: one fi-pair run, one line.
run() {
    local label=$1 prefix=$2 fe=$3 case=$4 tag log verdict rc
    shift 4
    tag=${*:+ $*}
    log=$logs/$(echo "$label-$case$tag" | tr ' /=' '_-_').log
    (
        if [ "$fe" = kernel ]; then
            eval "$("$info" --env=kernel)"
            [ "$prefix" = system ] || export LD_LIBRARY_PATH=$prefix/lib:$prefix/lib64
        else
            eval "$("$info" --env)"
            export FI_EFA_USE_DATA_PATH_DIRECT=0
            [ "$prefix" = system ] || export LD_LIBRARY_PATH=$simlib:$prefix/lib:$prefix/lib64
        fi
        # shellcheck disable=SC2068
        exec env $@ timeout -k 5 $((timeout_s * 40 + 60)) "$bin" "$case" --timeout "$timeout_s"
    ) >"$log" 2>&1
    rc=$?
    verdict=$(grep -a "^fi-pair $case: " "$log" | tail -n 1 | sed "s/^fi-pair $case: //")
    case $rc:$verdict in
    0:SHOWN*) shown=$((shown + 1)) ;;
    1:NOT\ SHOWN*) not_shown=$((not_shown + 1)) ;;
    *)
        errors=$((errors + 1))
        verdict="ERROR (exit $rc) ${verdict:-no verdict}"
        ;;
    esac
    echo "$label $case$tag: $verdict (log $log)"
}

for i in "${!prefixes[@]}"; do
    prefix=${prefixes[$i]}
    fe=${front_ends[$i]}
    fi_info_bin=fi_info
    [ "$prefix" = system ] || fi_info_bin=$prefix/bin/fi_info
    version=$("$fi_info_bin" --version 2>/dev/null | sed -n 's/^libfabric: *\([0-9.a-z]*\).*/\1/p')
    label="libfabric-${version:-unknown}$([ "$prefix" = system ] && echo "(system)")/$fe"
    for case in ${cases//,/ }; do
        run "$label" "$prefix" "$fe" "$case"
        case $case in
        unreadable-write | widened-key) run "$label" "$prefix" "$fe" "$case" FI_EFA_MR_CACHE_ENABLE=0 ;;
        esac
    done
done

summary="$shown shown, $not_shown not shown"
[ $errors -eq 0 ] || summary="$summary, $errors error(s)"
echo "$summary"
[ $errors -eq 0 ] || exit 2
