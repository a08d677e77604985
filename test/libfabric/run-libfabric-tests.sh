#!/usr/bin/env bash
# libfabric's own tools, unmodified, on efasim.
#
#   test/libfabric/run-libfabric-tests.sh [--libfabric PREFIX] [--full]
#                                         [--front-end verbs|kernel] EFASIM_BUILD_DIR
#
# EFASIM_BUILD_DIR is a configured efarm build tree (its src/efasim/.libs holds
# efasim's libibverbs.so.1 and libefa.so.1, and libefasim-kernel.so). The front
# end (efasim's README): verbs (default), libfabric on efasim's drop-in
# libibverbs and libefa; kernel, libfabric on the system's rdma-core (libibverbs,
# libefa) driving efasim's emulated uverbs device, as on EFA. Without --libfabric the system's
# libfabric is used (Debian's 1.17: fi_info and fi_pingpong from libfabric-bin);
# with it, PREFIX/bin/fi_info, PREFIX/bin/fi_pingpong and PREFIX/lib{,64}/libfabric.so.1
# (another libfabric build, such as 2.1 from scripts/libfabric-build.sh).
#
# Checks:
#   - fi_info -p efa lists RDM and DGRAM domains for every efasim device
#     (EFASIM_NDEV=2), and the DGRAM queue sizes libfabric derives from the
#     device (tx 4096, rx 8192 as on EFA, max_msg_size 8928);
#   - fi_pingpong -p efa -e rdm, server and client as two processes, with data
#     checks (-c), sizes 0 B .. 6 MiB (-S all), then 8 MiB and 16 MiB, each with
#     FI_EFA_USE_DEVICE_RDMA=0 and =1;
#   - the same with efasim's fault injector on (loss, duplication, reordering).
# Every process runs under a timeout; both exit statuses must be 0.
#
# The environment is what `efasim-info --env` (--env=kernel) prints: LD_LIBRARY_PATH
# with efasim first (LD_PRELOAD of the kernel front end), SYSFS_PATH at efasim's sysfs
# view (here a private directory, removed at the end) and FI_EFA_ENABLE_SHM_TRANSFER=0
# (the two processes share efasim's loopback GID, so libfabric would otherwise talk
# through its shm provider).
#
# Prints "PASS name" / "FAIL name: why" per check and ends with "N passed, N failed";
# exits nonzero if anything failed, 77 if the libfabric tools are not installed.
# --full adds fi_pingpong's 'all' sizes under faults with both RDMA settings (CI runs one).
# LIBFABRIC_TEST_TIMEOUT (seconds, default 120) bounds each fi_pingpong process.
set -u

usage() {
    echo "usage: $0 [--libfabric PREFIX] [--full] [--front-end verbs|kernel] EFASIM_BUILD_DIR" >&2
    exit 2
}

prefix=
full=0
front_end=verbs
build=
while [ $# -gt 0 ]; do
    case $1 in
    --libfabric)
        [ $# -ge 2 ] || usage
        prefix=$2
        shift 2
        ;;
    --full)
        full=1
        shift
        ;;
    --front-end)
        [ $# -ge 2 ] || usage
        front_end=$2
        shift 2
        ;;
    -h | --help) usage ;;
    -*) usage ;;
    *)
        [ -z "$build" ] || usage
        build=$1
        shift
        ;;
    esac
done
[ -n "$build" ] || usage
case $front_end in verbs | kernel) ;; *) usage ;; esac

efasim_libs=$(cd "$build" 2>/dev/null && pwd)/src/efasim/.libs
preload=
if [ "$front_end" = kernel ]; then
    preload=$efasim_libs/libefasim-kernel.so
    if [ ! -e "$preload" ]; then
        echo "$0: no $preload (build efarm there first)" >&2
        exit 2
    fi
    libpath= # the system's rdma-core
elif [ ! -e "$efasim_libs/libibverbs.so.1" ] || [ ! -e "$efasim_libs/libefa.so.1" ]; then
    echo "$0: no efasim libraries in $efasim_libs (build efarm there first)" >&2
    exit 2
else
    libpath=$efasim_libs
fi
if [ -n "$prefix" ]; then
    fi_info=$prefix/bin/fi_info
    fi_pingpong=$prefix/bin/fi_pingpong
    libpath=${libpath:+$libpath:}$prefix/lib:$prefix/lib64
else
    fi_info=$(command -v fi_info || true)
    fi_pingpong=$(command -v fi_pingpong || true)
fi
if [ ! -x "$fi_info" ] || [ ! -x "$fi_pingpong" ]; then
    echo "SKIP libfabric: fi_info/fi_pingpong not found${prefix:+ under $prefix/bin} (libfabric-bin)"
    echo "0 passed, 0 failed"
    exit 77
fi
per_run=${LIBFABRIC_TEST_TIMEOUT:-120}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/efasim-libfabric.XXXXXX") || exit 2
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 2' HUP INT PIPE TERM

# The environment an unmodified program needs on efasim (efasim-info --env).
if [ -n "$preload" ]; then
    export LD_PRELOAD=$preload
    # never efasim's drop-in beneath the system's rdma-core's place
    LD_LIBRARY_PATH=$(tr ':' '\n' <<<"${LD_LIBRARY_PATH:-}" | grep -v -x -F "$efasim_libs" | paste -sd:)
fi
[ -z "$libpath" ] || export LD_LIBRARY_PATH=$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export SYSFS_PATH=$tmp/sysfs
export FI_EFA_ENABLE_SHM_TRANSFER=0
unset FI_PROVIDER FI_EFA_USE_DEVICE_RDMA
for v in $(env | sed -n 's/^\(EFASIM_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done

npass=0
nfail=0
pass() {
    npass=$((npass + 1))
    echo "PASS $1"
}
fail() {
    nfail=$((nfail + 1))
    echo "FAIL $1: $2"
}

echo "libfabric tests on efasim's $front_end front end: $fi_info, $fi_pingpong; efasim $efasim_libs"
"$fi_info" --version 2>/dev/null | sed 's/^/  /' | head -2

# ---- fi_info ----------------------------------------------------------------------------

# fi_info_has OUT DOMAIN TYPE: a provider entry of efa with that domain and endpoint type.
fi_info_has() {
    awk -v dom="$2" -v type="$3" '
        /^provider:/ { prov = $2; d = ""; t = "" }
        /^ *domain:/ { d = $2 }
        /^ *type:/ { t = $2; if (prov == "efa" && d == dom && t == type) found = 1 }
        END { exit !found }' "$1"
}

if EFASIM_NDEV=2 timeout 60 "$fi_info" -p efa >"$tmp/fi_info.out" 2>"$tmp/fi_info.err"; then
    missing=
    for dev in efasim_0 efasim_1; do
        fi_info_has "$tmp/fi_info.out" "$dev-rdm" FI_EP_RDM || missing="$missing $dev-rdm"
        fi_info_has "$tmp/fi_info.out" "$dev-dgrm" FI_EP_DGRAM || missing="$missing $dev-dgrm"
    done
    if [ -z "$missing" ]; then
        pass "fi_info -p efa lists RDM and DGRAM for efasim_0 and efasim_1"
    else
        fail "fi_info -p efa" "missing:$missing; got: $(tr '\n' ' ' <"$tmp/fi_info.out" | cut -c1-300)"
    fi
else
    fail "fi_info -p efa" "exit $?: $(head -c 300 "$tmp/fi_info.err")"
fi

# The DGRAM endpoint's attributes come straight from the device, its NIC
# attributes from efasim's sysfs view (the driver link, the PCI address).
if timeout 60 "$fi_info" -p efa -t FI_EP_DGRAM -v >"$tmp/fi_info_v.out" 2>&1; then
    got=$(LC_ALL=C awk '/fi_tx_attr:/ { s = "tx" } /fi_rx_attr:/ { s = "rx" } /fi_ep_attr:/ { s = "ep" }
        / size:/ && s == "tx" && !tx { tx = $2 } / size:/ && s == "rx" && !rx { rx = $2 }
        /max_msg_size:/ && s == "ep" && !m { m = $2 } / driver:/ && !d { d = $2 }
        END { printf "tx %s rx %s max_msg_size %s driver %s", tx, rx, m, d }' "$tmp/fi_info_v.out")
    if [ "$got" = "tx 4096 rx 8192 max_msg_size 8928 driver efa" ]; then
        pass "fi_info -v: DGRAM $got, as on EFA"
    else
        fail "fi_info -v attributes" "$got (expected tx 4096 rx 8192 max_msg_size 8928 driver efa)"
    fi
else
    fail "fi_info -p efa -t FI_EP_DGRAM -v" "exit $?: $(head -c 300 "$tmp/fi_info_v.out")"
fi

# ---- fi_pingpong between two processes -----------------------------------------------------

# A TCP port in LISTEN state (fi_pingpong's control connection), from /proc/net/tcp.
listening() {
    local hex
    hex=$(printf '%04X' "$1")
    awk -v p=":$hex" 'NR > 1 && substr($2, length($2) - 4) == p && $4 == "0A" { f = 1 } END { exit !f }' \
        /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

port_base=$((20000 + ($$ % 4000) * 8))
fabric=()
"$fi_pingpong" -h 2>&1 | grep -q -- '^ *-f <fabric>' && fabric=(-f efa)
run_no=0

# pingpong NAME LARGEST ENV... -- FI_PINGPONG_ARGS...: server and client; both must exit 0
# and the client must have printed a result line for a size of at least LARGEST bytes
# (a run that exits 0 having measured nothing is a failure, not a pass). `-f efa`, where
# fi_pingpong has -f (2.x), names the fabric of the RDM protocol: libfabric 2.x lists its
# efa-direct fabric first, whose messages stop at the MTU.
pingpong() {
    local name=$1 want=$2 envs=() args port s_status c_status tries=0 largest
    shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        envs+=("$1")
        shift
    done
    shift
    args=("$@")
    while :; do
        run_no=$((run_no + 1))
        port=$((port_base + run_no))
        env "${envs[@]}" timeout "$per_run" "$fi_pingpong" -p efa "${fabric[@]}" -e rdm -c -B "$port" "${args[@]}" \
            >"$tmp/server.out" 2>&1 &
        server_pid=$!
        local waited=0
        while ! listening "$port" && kill -0 "$server_pid" 2>/dev/null && [ $waited -lt 200 ]; do
            sleep 0.05
            waited=$((waited + 1))
        done
        if listening "$port"; then
            break
        fi
        wait "$server_pid"
        server_pid=
        tries=$((tries + 1))
        if [ $tries -ge 3 ] || ! grep -q -i "address already in use" "$tmp/server.out"; then
            fail "$name" "the server did not listen on port $port: $(tail -c 300 "$tmp/server.out")"
            return
        fi
    done
    env "${envs[@]}" timeout "$per_run" "$fi_pingpong" -p efa "${fabric[@]}" -e rdm -c -P "$port" "${args[@]}" \
        127.0.0.1 >"$tmp/client.out" 2>&1
    c_status=$?
    wait "$server_pid"
    s_status=$?
    server_pid=
    largest=$(awk 'NR > 1 && NF >= 8 && $1 ~ /^[0-9]+/ { v = $1; sub(/k$/, "", v)
        if ($1 ~ /k$/) v *= 1024; if ($1 ~ /m$/) v *= 1048576; if (v > m) m = v } END { print m + 0 }' \
        "$tmp/client.out")
    if [ $c_status -eq 0 ] && [ $s_status -eq 0 ] && [ "$largest" -lt "$want" ]; then
        fail "$name" "both exited 0 but the client measured no size of $want bytes or more (largest: $largest): $(tail -c 300 "$tmp/client.out" | tr '\n' ' ')"
    elif [ $c_status -eq 0 ] && [ $s_status -eq 0 ]; then
        pass "$name ($(awk 'NR > 1 && NF >= 8 { n++; last = $1 " " $7 " us" } END {
            printf "%d sizes, largest %s", n, last }' "$tmp/client.out"))"
    else
        fail "$name" "client exit $c_status, server exit $s_status$( [ $c_status -eq 124 ] ||
            [ $s_status -eq 124 ] && echo " (timeout ${per_run}s)"); client: $(tail -c 300 \
            "$tmp/client.out" | tr '\n' ' '); server: $(tail -c 300 "$tmp/server.out" | tr '\n' ' ')"
    fi
}

faults=(EFASIM_LOSS=0.05 EFASIM_DUP=0.05 EFASIM_REORDER=0.1 EFASIM_SEED=7)
all=6291456 # the largest of fi_pingpong's 'all' sizes
for rdma in 0 1; do
    pingpong "fi_pingpong rdm 0 B..6 MiB, FI_EFA_USE_DEVICE_RDMA=$rdma" $all \
        FI_EFA_USE_DEVICE_RDMA=$rdma -- -S all
    pingpong "fi_pingpong rdm 8 MiB, FI_EFA_USE_DEVICE_RDMA=$rdma" 8388608 \
        FI_EFA_USE_DEVICE_RDMA=$rdma -- -S 8388608
    pingpong "fi_pingpong rdm 16 MiB, FI_EFA_USE_DEVICE_RDMA=$rdma" 16777216 \
        FI_EFA_USE_DEVICE_RDMA=$rdma -- -S 16777216
done
pingpong "fi_pingpong rdm 0 B..6 MiB under efasim faults (5% loss, 5% dup, 10% reorder), RDMA read" \
    $all FI_EFA_USE_DEVICE_RDMA=1 "${faults[@]}" -- -S all
if [ $full -eq 1 ]; then
    pingpong "fi_pingpong rdm 0 B..6 MiB under efasim faults, no RDMA" $all \
        FI_EFA_USE_DEVICE_RDMA=0 "${faults[@]}" -- -S all
    pingpong "fi_pingpong rdm 16 MiB under efasim faults, RDMA read" 16777216 \
        FI_EFA_USE_DEVICE_RDMA=1 "${faults[@]}" -- -S 16777216
fi

echo "$npass passed, $nfail failed"
[ $nfail -eq 0 ]
