#!/bin/sh
# The protocol engine between two processes over efasim, through efarm-pingpong.
#
#   sh test/unit/test_proto_procs.sh PATH/TO/efarm-pingpong EFASIM_LIBDIR
#
# A server and a client, started as separate processes that meet through an
# address file, ping-pong every subprotocol's size with every byte checked:
# 0 and 8 bytes (eager), 9000 (medium), 100000 (long-CTS), 4 MiB (runting
# read); once plainly, once with efasim's fault injector (loss, reordering,
# duplication), and 4 MiB once more with EFARM_RUNT_SIZE=0 (long-read), at the
# reference's thresholds (EFARM_PROFILE=reference). Each run must pass its data
# check, name the expected subprotocol on its size's line and count it. The
# same sizes in bandwidth mode (--window 8: eight messages in flight, then the
# server's answer), plainly and with faults: each size's line and counters
# again, and the server must have received every message. Then the forked mode
# (no --server/--client) and the error paths: a malformed address file, a
# server that never comes, --help, a bad --window.
# Prints "PASS name" or "FAIL name: why" per check, then "N passed, N failed";
# exits nonzero if any check failed.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 EFARM_PINGPONG EFASIM_LIBDIR" >&2
    exit 2
fi
pingpong=$1
libdir=$2

if [ ! -e "$libdir/libibverbs.so.1" ]; then
    echo "$0: no libibverbs.so.1 in $libdir" >&2
    exit 2
fi

# shellcheck source=test/unit/testlib.sh
. "$(dirname "$0")/testlib.sh"

# efasim's defaults, efarm on efasim; faults only where a run asks for them.
unset EFASIM_LOSS EFASIM_DUP EFASIM_REORDER EFASIM_DELAY EFASIM_QPN EFASIM_NDEV EFASIM_ADDR \
    EFASIM_MTU EFARM_RUNT_SIZE EFARM_RDMA_READ EFARM_READ_MIN EFARM_MEDIUM_MAX EFARM_EAGER_MAX
EFARM_DEVICE=sim
EFARM_EFASIM_PATH=$libdir
EFARM_PROFILE=reference
export EFARM_DEVICE EFARM_EFASIM_PATH EFARM_PROFILE

# Hung processes must fail their check, not the whole run.
run_limit=
if command -v timeout >/dev/null 2>&1; then
    run_limit="timeout 60"
fi

first_err() {
    head -n 1 "$1" | tr -d '\n'
}

# pingpong NAME "SIZE:PROTO ..." ITERS [VAR=VALUE...]: a server and a client process, then one
# check per size that its line names PROTO, and one that the counters count it. With
# window=W set, in bandwidth mode (--window W, no data check): the server must report
# (warm-up + ITERS) x W messages per size, and the goodbye.
window=
pingpong() {
    name=$1 expect=$2 iters=$3
    shift 3
    sizes=$(for e in $expect; do printf '%s,' "${e%%:*}"; done)
    rm -f "$tmp/addr"
    env "$@" $run_limit "$pingpong" --server "$tmp/addr" --timeout 20 \
        >"$tmp/server.out" 2>"$tmp/server.err" &
    server=$!
    env "$@" $run_limit "$pingpong" --client "$tmp/addr" --sizes "${sizes%,}" --iters "$iters" \
        ${window:+--window "$window"} --check --timeout 20 >"$tmp/client.out" 2>"$tmp/client.err"
    crc=$?
    wait "$server"
    src=$?
    if [ "$crc" -ne 0 ]; then
        fail "${name}_client" "exit status $crc ($(first_err "$tmp/client.err"))"
        return
    fi
    pass "${name}_client"
    if [ "$src" -ne 0 ]; then
        fail "${name}_server" "exit status $src ($(first_err "$tmp/server.err"))"
    elif [ -e "$tmp/addr" ]; then
        fail "${name}_server" "left its address file behind"
    else
        pass "${name}_server"
    fi
    if [ -n "$window" ]; then
        nsizes=$(echo $expect | wc -w)
        warm=$((iters / 10 < 1 ? 1 : iters / 10))
        want=$((nsizes * (warm + iters) * window + 1)) # and the goodbye
        got=$(sed -n 's/^efarm-pingpong: \([0-9]*\) messages echoed.*/\1/p' "$tmp/server.out")
        if [ "$got" = "$want" ]; then
            pass "${name}_server_received_all"
        else
            fail "${name}_server_received_all" "the server counted '$got' messages, expected $want"
        fi
    fi
    for e in $expect; do
        size=${e%%:*} proto=${e#*:}
        bytes=$(awk -v s="$size" 'BEGIN { n = s + 0; if (s ~ /M$/) n *= 1048576; print n }')
        line=$(awk -F'|' -v b="$bytes" '$1 + 0 == b && $1 ~ /^ *[0-9]+ *$/ { print; exit }' \
            "$tmp/client.out")
        if [ -z "$line" ]; then
            fail "${name}_${size}_${proto}" "no figures line for $bytes bytes"
            continue
        fi
        used=$(printf '%s' "$line" | awk -F'|' '{ gsub(/ /, "", $2); print $2 }')
        case "+$used+" in
        *"+$proto+"*) pass "${name}_${size}_${proto}" ;;
        *) fail "${name}_${size}_${proto}" "$bytes bytes went $used, expected $proto" ;;
        esac
    done
    for proto in $(for e in $expect; do echo "${e#*:}"; done | sort -u); do
        if grep -Eq "^proto_$proto +[1-9][0-9]* " "$tmp/client.out"; then
            pass "${name}_counter_proto_$proto"
        else
            fail "${name}_counter_proto_$proto" "the client's counters have no proto_$proto"
        fi
    done
}

every="0:eager 8:eager 9000:medium 100000:longcts 4M:runtread"
pingpong plain "$every" 40
pingpong faults "$every" 20 EFASIM_LOSS=0.05 EFASIM_REORDER=0.2 EFASIM_DUP=0.05
pingpong longread "4M:longread" 10 EFARM_RUNT_SIZE=0
pingpong longread_faults "4M:longread" 5 EFARM_RUNT_SIZE=0 EFASIM_LOSS=0.05 \
    EFASIM_REORDER=0.2 EFASIM_DUP=0.05
window=8
pingpong window "$every" 10
pingpong window_faults "$every" 5 EFASIM_LOSS=0.05 EFASIM_REORDER=0.2 EFASIM_DUP=0.05
window=

# ---- Both sides from one command (the quick start's form) ----------------------------

$run_limit "$pingpong" --sizes 8,64K --iters 20 --check --timeout 20 >"$tmp/both.out" \
    2>"$tmp/both.err"
rc=$?
if [ "$rc" -ne 0 ]; then
    fail forked "exit status $rc ($(first_err "$tmp/both.err"))"
elif ! grep -Eq '^ +65536 \| medium ' "$tmp/both.out" ||
    ! grep -q '^engine counters' "$tmp/both.out"; then
    fail forked "no 64 KiB medium line or no counters in its output"
else
    pass forked
fi

# ---- Errors end with a message and status 1, never a hang --------------------------------

# expect_error NAME PATTERN ARGS...: exit status 1 and PATTERN on stderr.
expect_error() {
    name=$1 pattern=$2
    shift 2
    $run_limit "$pingpong" "$@" >"$tmp/err.out" 2>"$tmp/err.err"
    rc=$?
    if [ "$rc" -ne 1 ]; then
        fail "$name" "exit status $rc, expected 1 ($(first_err "$tmp/err.err"))"
    elif ! grep -q -- "$pattern" "$tmp/err.err"; then
        fail "$name" "stderr does not mention '$pattern': $(first_err "$tmp/err.err")"
    else
        pass "$name"
    fi
}

printf 'not an address\n' >"$tmp/bad"
expect_error bad_address_file "not a hex digit" --client "$tmp/bad" --timeout 5
printf '0011223344\n' >"$tmp/short"
expect_error short_address_file "expected exactly 64" --client "$tmp/short" --timeout 5
expect_error no_address_file "no address file" --client "$tmp/none" --timeout 1
expect_error no_client "waiting for a client" --server "$tmp/lonely" --timeout 1
# A well-formed address nobody answers at (a QP number no process holds): the deadline ends it.
printf '00000000000000000000ffff7f000001%04x0000%08x%016x\n' 1 305419896 0 >"$tmp/dead"
expect_error dead_server "waiting for the server" --client "$tmp/dead" --timeout 2

$run_limit "$pingpong" --help >"$tmp/help.out" 2>&1
if [ $? -eq 0 ] && grep -q -- '--server ADDRFILE' "$tmp/help.out"; then
    pass help
else
    fail help "exit status not 0 or no usage text"
fi
$run_limit "$pingpong" --iters 0 >/dev/null 2>&1
if [ $? -eq 2 ]; then
    pass bad_option
else
    fail bad_option "exit status not 2 for --iters 0"
fi
$run_limit "$pingpong" --window 257 >/dev/null 2>"$tmp/err.err"
if [ $? -eq 2 ] && grep -q "bad --window" "$tmp/err.err"; then
    pass bad_window
else
    fail bad_window "exit status not 2 or no message for --window 257"
fi

summary
