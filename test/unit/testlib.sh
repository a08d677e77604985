# Shared by test/unit's shell suites (sourced): a temporary directory removed
# at exit, PASS/FAIL lines and the summary line run-all scripts count.
#   pass NAME          "PASS NAME"
#   fail NAME WHY      "FAIL NAME: WHY"
#   summary            "N passed, N failed"; returns nonzero if anything failed
npass=0
nfail=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/$(basename "$0" .sh).XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' HUP INT PIPE TERM

pass() {
    npass=$((npass + 1))
    echo "PASS $1"
}

fail() {
    nfail=$((nfail + 1))
    echo "FAIL $1: $2"
}

summary() {
    echo "$npass passed, $nfail failed"
    [ "$nfail" -eq 0 ]
}
