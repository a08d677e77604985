#!/bin/sh
# Dissector tests for efarm-pktdump.
#
#   sh test/unit/test_pktdump.sh PATH/TO/efarm-pktdump PATH/TO/golden-export
#
# Every golden vector must survive hex -> --json -> --encode unchanged and
# decode in text mode; malformed input of every kind must end with exit status
# 1 and exactly one line on stderr. Prints "PASS name" or "FAIL name: why" per
# check, then "N passed, N failed"; exits nonzero if any check failed.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 EFARM_PKTDUMP GOLDEN_EXPORT" >&2
    exit 2
fi
pktdump=$1
golden_export=$2

# shellcheck source=test/unit/testlib.sh
. "$(dirname "$0")/testlib.sh"

# A hung tool must fail its check, not the whole run.
run_limit=
if command -v timeout >/dev/null 2>&1; then
    run_limit="timeout 30"
fi

# Hex digits only, lowercase: the form two hex dumps are compared in.
normalize_hex() {
    tr -d ' \t\r\n' | tr 'ABCDEF' 'abcdef'
}

# run OPTION INPUT_FILE: the tool's stdout, stderr and status in $tmp/out, $tmp/err, $rc.
run() {
    if [ -n "$1" ]; then
        $run_limit "$pktdump" "$1" <"$2" >"$tmp/out" 2>"$tmp/err"
    else
        $run_limit "$pktdump" <"$2" >"$tmp/out" 2>"$tmp/err"
    fi
    rc=$?
}

# First stderr line, for failure messages.
first_err() {
    head -n 1 "$tmp/err"
}

# expect_error NAME OPTION INPUT [PATTERN]: status 1, nothing on stdout and exactly one
# stderr line "efarm-pktdump: ..." that contains PATTERN when one is given.
expect_error() {
    printf '%s' "$3" >"$tmp/in"
    run "$2" "$tmp/in"
    lines=$(wc -l <"$tmp/err" | tr -d ' ')
    if [ "$rc" -ne 1 ]; then
        fail "$1" "exit status $rc, expected 1 ($(first_err))"
    elif [ "$lines" -ne 1 ]; then
        fail "$1" "$lines lines on stderr, expected 1"
    elif ! grep -q '^efarm-pktdump: ' "$tmp/err"; then
        fail "$1" "stderr line does not start with 'efarm-pktdump: ': $(first_err)"
    elif [ $# -ge 4 ] && ! grep -q -- "$4" "$tmp/err"; then
        fail "$1" "stderr does not mention '$4': $(first_err)"
    elif [ -s "$tmp/out" ]; then
        fail "$1" "printed to stdout although it failed"
    else
        pass "$1"
    fi
}

# expect_ok NAME OPTION INPUT: status 0 and nothing on stderr (controls for expect_error).
expect_ok() {
    printf '%s' "$3" >"$tmp/in"
    run "$2" "$tmp/in"
    if [ "$rc" -ne 0 ]; then
        fail "$1" "exit status $rc, expected 0 ($(first_err))"
    elif [ -s "$tmp/err" ]; then
        fail "$1" "wrote to stderr: $(first_err)"
    else
        pass "$1"
    fi
}

# ---- Round trip of every golden vector ---------------------------------------

# roundtrip NAME FILE: hex -> --json -> --encode gives the same bytes; text mode works.
roundtrip() {
    want=$(normalize_hex <"$2")
    run --json "$2"
    if [ "$rc" -ne 0 ]; then
        fail "roundtrip_$1" "--json exit status $rc ($(first_err))"
        return
    fi
    if [ "$(wc -l <"$tmp/out" | tr -d ' ')" -ne 1 ] || [ -s "$tmp/err" ]; then
        fail "roundtrip_$1" "--json did not print exactly one line and nothing on stderr"
        return
    fi
    cp "$tmp/out" "$tmp/rt.json"
    run --encode "$tmp/rt.json"
    if [ "$rc" -ne 0 ]; then
        fail "roundtrip_$1" "--encode exit status $rc ($(first_err)) on $(cat "$tmp/rt.json")"
        return
    fi
    got=$(normalize_hex <"$tmp/out")
    if [ "$got" != "$want" ]; then
        fail "roundtrip_$1" "re-encoded bytes differ: want $want, got $got"
        return
    fi
    pass "roundtrip_$1"

    run "" "$2"
    if [ "$rc" -ne 0 ]; then
        fail "text_$1" "exit status $rc ($(first_err))"
    elif ! grep -q '^type: ' "$tmp/out"; then
        fail "text_$1" "no 'type:' line in the text output"
    else
        pass "text_$1"
    fi
}

mkdir "$tmp/vectors"
first_vector=
if ! $run_limit "$golden_export" "$tmp/vectors" >"$tmp/export.log" 2>&1; then
    fail golden_export "'$golden_export $tmp/vectors' failed: $(head -n 1 "$tmp/export.log")"
else
    for f in "$tmp/vectors"/*.hex; do
        [ -f "$f" ] || continue
        name=$(basename "$f" .hex)
        [ -n "$first_vector" ] || first_vector=$f
        roundtrip "$name" "$f"
    done
    if [ -n "$first_vector" ]; then
        pass golden_export
    else
        fail golden_export "no <name>.hex files written"
    fi
fi

# ---- Malformed hex and packets -------------------------------------------------

expect_error empty_input "" ""
expect_error empty_input_json --json ""
expect_error whitespace_only "" "
 	"
expect_error odd_hex "" "40040"
expect_error non_hex_char "" "4004000g"
expect_error unknown_type "" "0c040000" PKT_UNKNOWN_TYPE
expect_error reserved_type_131 "" "83040000$(printf '%040d' 0)" PKT_RESERVED_TYPE
expect_error retired_type_rts "" "01040000$(printf '%040d' 0)" PKT_RETIRED_TYPE

if [ -n "$first_vector" ]; then
    hex=$(normalize_hex <"$first_vector")
    expect_error truncated_base "" "$(printf '%s' "$hex" | cut -c1-6)" PKT_TRUNCATED_BASE
    expect_error truncated_base_json --json "$(printf '%s' "$hex" | cut -c1-6)" PKT_TRUNCATED_BASE
    wrong_version="$(printf '%s' "$hex" | cut -c1-2)03$(printf '%s' "$hex" | cut -c5-)"
    expect_error wrong_version "" "$wrong_version" PKT_BAD_VERSION
    expect_error wrong_version_json --json "$wrong_version" PKT_BAD_VERSION

    # Decoder-derived JSON with one change: an unknown key must be rejected.
    printf '%s' "$hex" >"$tmp/in"
    run --json "$tmp/in"
    if [ "$rc" -eq 0 ]; then
        expect_error json_unknown_key --encode "$(sed 's/^{/{"bogus":1,/' "$tmp/out")" bogus
    else
        fail json_unknown_key "--json failed on the first vector ($(first_err))"
    fi
else
    fail vector_cases "no golden vector to derive the truncation and version cases from"
fi

# ---- Malformed JSON for --encode -------------------------------------------------

# Each error case has a control that differs only in the defect and must be accepted.
gid='"gid":"000102030405060708090a0b0c0d0e0f","qpn":1,"connid":2'
iov='{"addr":1,"len":2,"key":3}'

expect_ok control_eager_tagrtm --encode '{"type_name":"EAGER_TAGRTM","msg_id":1,"tag":5}'
expect_error json_missing_field --encode '{"type_name":"EAGER_TAGRTM","msg_id":1}' tag
expect_error json_unknown_key_literal --encode \
    '{"type_name":"EAGER_TAGRTM","msg_id":1,"tag":5,"bogus":0}' bogus
expect_error json_missing_type --encode '{"msg_id":1,"tag":5}' type

expect_ok control_raw_addr --encode \
    "{\"type_name\":\"EAGER_MSGRTM\",\"flags\":1,\"msg_id\":1,\"raw_addr\":{$gid}}"
expect_error json_raw_addr_without_flag --encode \
    "{\"type_name\":\"EAGER_MSGRTM\",\"flags\":0,\"msg_id\":1,\"raw_addr\":{$gid}}" raw_addr

expect_ok control_rma_iov --encode \
    "{\"type_name\":\"EAGER_RTW\",\"rma_iov_count\":2,\"rma_iov\":[$iov,$iov]}"
expect_error json_rma_iov_length --encode \
    "{\"type_name\":\"EAGER_RTW\",\"rma_iov_count\":2,\"rma_iov\":[$iov]}" rma_iov

expect_ok control_u64_max --encode \
    '{"type_name":"EAGER_TAGRTM","msg_id":1,"tag":18446744073709551615}'
expect_error json_number_overflow --encode \
    '{"type_name":"EAGER_TAGRTM","msg_id":1,"tag":18446744073709551616}'
expect_error json_u32_overflow --encode \
    '{"type_name":"EAGER_TAGRTM","msg_id":4294967296,"tag":5}' msg_id
expect_error json_negative --encode '{"type_name":"EAGER_TAGRTM","msg_id":-1,"tag":5}'
expect_error json_fraction --encode '{"type_name":"EAGER_TAGRTM","msg_id":1.5,"tag":5}'
expect_error json_wrong_type --encode '{"type_name":"EAGER_TAGRTM","msg_id":"1","tag":5}' msg_id
expect_error json_type_disagrees --encode '{"type":64,"type_name":"EAGER_TAGRTM","msg_id":1}'
expect_error json_bad_version --encode '{"type":64,"version":3,"msg_id":1}' PKT_BAD_VERSION
expect_error json_reserved_type --encode '{"type":131}' PKT_ENCODE_TYPE
expect_error json_payload_length --encode \
    '{"type":64,"msg_id":1,"payload_hex":"0102","payload_length":3}' payload_length
expect_error json_decoder_rejects --encode \
    '{"type_name":"CTS","send_id":1,"recv_id":2,"recv_length":0}' PKT_CTS_ZERO
expect_error json_truncated --encode '{"type":64,"msg_id":1'
expect_error json_not_object --encode '[1,2]'
expect_error json_trailing_data --encode '{"type":64,"msg_id":1} {}'
expect_error json_duplicate_key --encode '{"type":64,"msg_id":1,"msg_id":1}'
expect_error json_too_deep --encode '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]'

# ---- Command line ----------------------------------------------------------------

printf '' >"$tmp/in"
run --bogus "$tmp/in"
if [ "$rc" -eq 2 ]; then
    pass unknown_option
else
    fail unknown_option "exit status $rc, expected 2"
fi
run --help "$tmp/in"
if [ "$rc" -eq 0 ] && [ -s "$tmp/out" ]; then
    pass help
else
    fail help "exit status $rc or no usage text"
fi

summary
