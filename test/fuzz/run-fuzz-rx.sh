#!/bin/sh
# Run the receive-path fuzzer (fuzz_rx.c) for a bounded time or count.
#   run-fuzz-rx.sh FUZZ_BUILD_DIR SECONDS [RUNS [CAPTURE.pcap...]]
# Seeds: every golden vector (fuzz-rx-seeds) and the captures of a real run
# made here (efarm-pingpong between two processes over efasim, every
# subprotocol, EFARM_CAPTURE), plus any captures given. RUNS (-1: no limit)
# stops after that many inputs. Prints libFuzzer's final coverage line, its
# statistics and the harness's totals; exit status 0 when libFuzzer found
# nothing (the crash input is kept in $FUZZ_ARTIFACTS otherwise).
set -u
if [ $# -lt 2 ]; then
    echo "usage: $0 FUZZ_BUILD_DIR SECONDS [RUNS [CAPTURE.pcap...]]" >&2
    exit 2
fi
build=$1 seconds=$2 runs=${3:--1}
shift 2
[ $# -gt 0 ] && shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/seeds" "$work/corpus" "$work/cap"

env EFARM_DEVICE=sim EFARM_EFASIM_PATH="$build/src/efasim/.libs" \
    EFARM_CAPTURE="$work/cap/pingpong-%p.pcap" timeout 120 "$build/tools/efarm-pingpong" \
    --sizes 0,8,9000,100000,4M --iters 2 --check >"$work/pingpong.out" 2>&1 ||
    { tail -n 5 "$work/pingpong.out"; echo "run-fuzz-rx: the capture run failed"; exit 1; }
"$build/test/fuzz/fuzz-rx-seeds" "$work/seeds" "$work"/cap/*.pcap "$@" || exit 1
echo "run-fuzz-rx: ${seconds}s, runs ${runs} (-1: no limit)"
"$build/test/fuzz/fuzz-rx" -max_total_time="$seconds" -runs="$runs" -max_len=8192 -timeout=60 \
    -rss_limit_mb=3072 -print_final_stats=1 -artifact_prefix="${FUZZ_ARTIFACTS:-./}" \
    "$work/corpus" "$work/seeds" 2>"$work/log"
status=$?
grep -E '^#[0-9]+.*(DONE|pulse)' "$work/log" | tail -n 1
grep -E '^(stat::|fuzz_rx:)' "$work/log" || true
if [ $status -ne 0 ]; then
    grep -v '^#' "$work/log" | tail -n 60
    echo "run-fuzz-rx: libFuzzer exited $status"
fi
[ -n "${FUZZ_KEEP_CORPUS:-}" ] && cp -r "$work/corpus" "$FUZZ_KEEP_CORPUS"
exit $status
