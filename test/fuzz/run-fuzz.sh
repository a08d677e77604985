#!/bin/sh
# Run the decoder fuzzer for a bounded time with the golden vectors as seeds.
#   run-fuzz.sh FUZZ_BINARY GOLDEN_EXPORT_BINARY SECONDS
# Exit status 0 when libFuzzer found nothing; the crash input is kept otherwise.
set -u
fuzzer=$1 export=$2 seconds=${3:-60}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/seeds" "$work/corpus"
"$export" "$work/seeds" || exit 1
rm -f "$work"/seeds/*.hex
echo "run-fuzz: $(ls "$work/seeds" | wc -l) seed inputs, ${seconds}s"
"$fuzzer" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="${FUZZ_ARTIFACTS:-./}" \
    "$work/corpus" "$work/seeds" 2>"$work/log"
status=$?
grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::new_units_added)' "$work/log" || true
if [ $status -ne 0 ]; then
    tail -n 40 "$work/log"
    echo "run-fuzz: libFuzzer exited $status"
fi
exit $status
