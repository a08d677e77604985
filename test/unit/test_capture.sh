#!/bin/sh
# Seeing the wire: EFARM_CAPTURE, EFARM_LOG_LEVEL=data, efarm-pktdump --pcap and
# --log, and the Wireshark dissector tools/efarm.lua under tshark.
#
#   sh test/unit/test_capture.sh BUILD_DIR
#
# efarm-pingpong runs every subprotocol (eager, medium, long-CTS, runting read)
# between two processes with a capture file each (EFARM_CAPTURE=...-%p.pcap)
# and the data log on. Then: per packet type, what one process's capture says
# it sent is what the other's says it received; the data log holds as many
# packets as both captures, of the same types; tshark with efarm.lua decodes
# every record to the direction, type and msg_id efarm-pktdump --json gives.
# Bad captures and bad EFARM_CAPTURE values fail with one clear line.
# Prints "PASS name", "FAIL name: why" or "SKIP name: why" per check, then
# "N passed, N failed"; exits nonzero if any check failed.
set -u

if [ $# -ne 1 ]; then
    echo "usage: $0 BUILD_DIR" >&2
    exit 2
fi
build=$1
top=$(cd "$(dirname "$0")/../.." && pwd)
pktdump=$build/tools/efarm-pktdump
pingpong=$build/tools/efarm-pingpong
# shellcheck source=test/unit/testlib.sh
. "$(dirname "$0")/testlib.sh"

sim() {
    env EFARM_DEVICE=sim EFARM_EFASIM_PATH="$build/src/efasim/.libs" EFARM_PROFILE=reference "$@"
}

# "dir type" per record of a capture, from efarm-pktdump --json.
records() {
    "$pktdump" --json --pcap "$1" |
        sed -n 's/.*"dir":"\([a-z]*\)".*"type_name":"\([A-Z_]*\)".*/\1 \2/p'
}

# "TYPE COUNT" lines for the records of direction $2 in capture $1.
type_counts() {
    records "$1" | awk -v d="$2" '$1 == d { n[$2]++ } END { for (t in n) print t, n[t] }' | sort
}

sim EFARM_CAPTURE="$tmp/cap-%p.pcap" EFARM_LOG_LEVEL=data timeout 120 "$pingpong" \
    --sizes 0,8,9000,100000,4M --iters 2 --check >"$tmp/pingpong.out" 2>"$tmp/data.log"
status=$?
set -- "$tmp"/cap-*.pcap
if [ "$status" -ne 0 ]; then
    fail pingpong-with-capture "exit $status: $(tail -n 3 "$tmp/pingpong.out")"
elif [ $# -ne 2 ] || [ ! -s "$1" ] || [ ! -s "$2" ]; then
    fail pingpong-with-capture "expected two capture files, found: $*"
else
    pass pingpong-with-capture
    a=$1
    b=$2
    if type_counts "$a" tx | grep -q . && [ "$(type_counts "$a" tx)" = "$(type_counts "$b" rx)" ] &&
        [ "$(type_counts "$b" tx)" = "$(type_counts "$a" rx)" ]; then
        pass sent-is-received
    else
        fail sent-is-received "A sent: $(type_counts "$a" tx | tr '\n' ' '); B received: $(type_counts "$b" rx | tr '\n' ' ')"
    fi
    for t in EAGER_TAGRTM MEDIUM_TAGRTM LONGCTS_TAGRTM CTS CTSDATA RUNTREAD_TAGRTM HANDSHAKE; do
        if records "$a" | grep -q " $t\$" || records "$b" | grep -q " $t\$"; then
            pass "captured-$t"
        else
            fail "captured-$t" "no $t record in either capture"
        fi
    done
    ncap=$(($(records "$a" | wc -l) + $(records "$b" | wc -l)))
    "$pktdump" --json --log <"$tmp/data.log" >"$tmp/log.json" 2>"$tmp/log.err"
    nlog=$(grep -c '"packet":{' "$tmp/log.json")
    if [ "$nlog" -eq "$ncap" ] && [ "$ncap" -gt 0 ]; then
        pass "data-log-has-every-packet ($nlog)"
    else
        fail data-log-has-every-packet "$nlog packets in the log, $ncap in the captures ($(cat "$tmp/log.err"))"
    fi
    log_types=$(sed -n 's/.*"type_name":"\([A-Z_]*\)".*/\1/p' "$tmp/log.json" | sort | uniq -c)
    cap_types=$( { records "$a"; records "$b"; } | awk '{ print $2 }' | sort | uniq -c)
    if [ "$log_types" = "$cap_types" ]; then
        pass data-log-types-match-captures
    else
        fail data-log-types-match-captures "log: $(echo $log_types); captures: $(echo $cap_types)"
    fi
    # The dissector: tshark's direction, type and msg_id per record against efarm-pktdump's.
    if ! command -v tshark >/dev/null 2>&1; then
        echo "SKIP wireshark-dissector: tshark not installed (scripts/install-deps.sh installs it)"
    else
        "$pktdump" --json --pcap "$a" | sed -e 's/.*"dir":"tx".*"type_name":"\([A-Z_]*\)".*/0 \1/' \
            -e 's/.*"dir":"rx".*"type_name":"\([A-Z_]*\)".*/1 \1/' >"$tmp/pktdump.fields"
        "$pktdump" --json --pcap "$a" | sed -n 's/.*"msg_id":\([0-9]*\).*/\1/p;t;s/.*/-/p' >"$tmp/pktdump.msgid"
        tshark -X lua_script:"$top/tools/efarm.lua" -r "$a" -T fields -e efarm.dir \
            -e efarm.type_name -e efarm.msg_id >"$tmp/tshark.out" 2>"$tmp/tshark.err"
        awk -F'\t' '{ print $1, $2 }' "$tmp/tshark.out" >"$tmp/tshark.fields"
        awk -F'\t' '{ print ($3 == "" ? "-" : $3) }' "$tmp/tshark.out" >"$tmp/tshark.msgid"
        if [ ! -s "$tmp/tshark.out" ]; then
            fail wireshark-dissector "tshark printed nothing: $(grep -v 'Running as user' "$tmp/tshark.err" | head -n 3)"
        elif cmp -s "$tmp/pktdump.fields" "$tmp/tshark.fields" &&
            cmp -s "$tmp/pktdump.msgid" "$tmp/tshark.msgid"; then
            pass "wireshark-dissector ($(wc -l <"$tmp/tshark.out") records)"
        else
            fail wireshark-dissector "tshark and efarm-pktdump differ: $(diff "$tmp/pktdump.fields" "$tmp/tshark.fields" | head -n 3 | tr '\n' ' ') $(diff "$tmp/pktdump.msgid" "$tmp/tshark.msgid" | head -n 3 | tr '\n' ' ')"
        fi
    fi
    # A capture cut short: the records before it, then one line and exit 1.
    head -c $(($(wc -c <"$a") - 10)) "$a" >"$tmp/cut.pcap"
    "$pktdump" --pcap "$tmp/cut.pcap" >"$tmp/cut.out" 2>"$tmp/cut.err"
    if [ $? -eq 1 ] && [ "$(wc -l <"$tmp/cut.err")" -eq 1 ] && grep -q "cut short" "$tmp/cut.err" &&
        grep -q '^#1 ' "$tmp/cut.out"; then
        pass capture-cut-short
    else
        fail capture-cut-short "$(cat "$tmp/cut.err")"
    fi
fi

# Not a capture at all.
printf 'not a pcap file at all\n' >"$tmp/junk"
"$pktdump" --pcap "$tmp/junk" >/dev/null 2>"$tmp/junk.err"
if [ $? -eq 1 ] && [ "$(wc -l <"$tmp/junk.err")" -eq 1 ]; then
    pass not-a-capture
else
    fail not-a-capture "$(cat "$tmp/junk.err")"
fi
# A log without packets.
echo "efarm[1] warn x.c:1: nothing" | "$pktdump" --log >/dev/null 2>"$tmp/nolog.err"
if [ $? -eq 1 ] && grep -q "no packet in the log" "$tmp/nolog.err"; then
    pass log-without-packets
else
    fail log-without-packets "$(cat "$tmp/nolog.err")"
fi
# EFARM_CAPTURE that cannot be created, or with an unknown %-sequence: no endpoint, one clear line.
for bad in "$tmp/no/such/dir/cap.pcap" "$tmp/cap-%q.pcap"; do
    sim EFARM_CAPTURE="$bad" timeout 60 "$pingpong" --sizes 8 --iters 1 >"$tmp/bad.out" 2>&1
    if [ $? -ne 0 ] && grep -q "EFARM_CAPTURE" "$tmp/bad.out"; then
        pass "bad-capture-name ($(basename "$bad"))"
    else
        fail "bad-capture-name ($(basename "$bad"))" "$(tail -n 2 "$tmp/bad.out")"
    fi
done

summary
