#!/bin/sh
# What scripts/mpich-build.sh decides before it builds anything:
#
#   sh test/unit/test_mpich_build_args.sh
#
# - `--mpich 5.0.1` without --source fetches MPICH's release tarball; on a
#   machine that cannot reach MPICH's release site (these) it stops at once,
#   in the fetch step, with a message naming --source and the tarball with
#   its pinned SHA-256;
# - `--fetch-only` (how test-all.sh finds a version nobody passed it) stops the
#   same way, with nothing on standard output; with --source it prints that path;
# - a tarball whose SHA-256 is not the pinned one is removed and refused;
# - a version with no pinned checksum and no --source, a version outside 4.x
#   and 5.x, and an unknown option stop before any step, naming what to pass.
# Nothing here builds MPICH. Prints "PASS name" or "FAIL name: why" per check,
# then "N passed, N failed"; exits nonzero if any check failed.
set -u

top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=test/unit/testlib.sh
. "$(dirname "$0")/testlib.sh"

build() {
    EFARM_MPICH_CACHE=$tmp/cache EFARM_BUILD_ROOT=$tmp EFARM_MPICH_SOURCE='' \
        bash "$top/scripts/mpich-build.sh" "$@" >"$tmp/out" 2>&1
}

# 1. No --source: the release tarball, or a prompt stop naming --source.
start=$(date +%s)
if build --mpich 5.0.1; then
    fail fetch-no-network "mpich-build.sh --mpich 5.0.1 succeeded without --source (a network here?)"
else
    took=$(($(date +%s) - start))
    if grep -q "step 'fetch' failed" "$tmp/out" && grep -q -- '--source PATH' "$tmp/out" &&
        grep -q 'mpich-5.0.1.tar.gz (SHA-256 8c1832a13ddacf071685069f5fadfd1f2877a29e1a628652892c65211b1f3327)' "$tmp/out"; then
        if [ "$took" -le 45 ]; then
            pass fetch-no-network
        else
            fail fetch-no-network "stopped, but after $took s"
        fi
    else
        fail fetch-no-network "$(tail -n 5 "$tmp/out")"
    fi
fi
if [ ! -e "$tmp/cache/dl/mpich-5.0.1.tar.gz.part" ] && [ ! -e "$tmp/cache/dl/mpich-5.0.1.tar.gz" ]; then
    pass fetch-leaves-nothing
else
    fail fetch-leaves-nothing "a partial download was left in $tmp/cache/dl"
fi

# 1b. --fetch-only: no path when nothing can be fetched, the message on stderr.
start=$(date +%s)
if EFARM_MPICH_CACHE=$tmp/cache EFARM_BUILD_ROOT=$tmp EFARM_MPICH_SOURCE='' \
    bash "$top/scripts/mpich-build.sh" --mpich 4.3.2 --fetch-only >"$tmp/path" 2>"$tmp/out"; then
    fail fetch-only-no-network "succeeded without --source (a network here?): $(cat "$tmp/path")"
elif [ -s "$tmp/path" ]; then
    fail fetch-only-no-network "printed a path although it failed: $(cat "$tmp/path")"
elif ! grep -q 'mpich-4.3.2.tar.gz (SHA-256 47d774587a7156a53752218c811c852e70ac44db9c502dc3f399b4cb817e3818)' "$tmp/out"; then
    fail fetch-only-no-network "$(tail -n 3 "$tmp/out")"
elif [ $(($(date +%s) - start)) -gt 45 ]; then
    fail fetch-only-no-network "stopped, but after $(($(date +%s) - start)) s"
else
    pass fetch-only-no-network
fi
if EFARM_MPICH_CACHE=$tmp/cache EFARM_BUILD_ROOT=$tmp \
    bash "$top/scripts/mpich-build.sh" --mpich 4.3.2 --source "$tmp" --fetch-only >"$tmp/path" 2>"$tmp/out" &&
    [ "$(tail -n 1 "$tmp/path")" = "$(realpath "$tmp")" ]; then
    pass fetch-only-source
else
    fail fetch-only-source "$(cat "$tmp/path" "$tmp/out" | tail -n 3)"
fi

# 2. A tarball in the download cache that is not MPICH's: refused and removed.
mkdir -p "$tmp/cache/dl"
echo "not mpich" | gzip >"$tmp/cache/dl/mpich-5.0.1.tar.gz"
if build --mpich 5.0.1; then
    fail checksum-refused "built from a tarball with the wrong SHA-256"
elif grep -q 'expected 8c1832a13ddacf071685069f5fadfd1f2877a29e1a628652892c65211b1f3327' "$tmp/out" &&
    [ ! -e "$tmp/cache/dl/mpich-5.0.1.tar.gz" ]; then
    pass checksum-refused
else
    fail checksum-refused "$(tail -n 5 "$tmp/out")"
fi

# 3. Versions and options refused before any step.
refused() { # NAME PATTERN ARGS...
    name=$1 pattern=$2
    shift 2
    if build "$@"; then
        fail "$name" "mpich-build.sh $* succeeded"
    elif grep -q "mpich-build: deps" "$tmp/out"; then
        fail "$name" "mpich-build.sh $* started its steps before refusing"
    elif grep -q -- "$pattern" "$tmp/out"; then
        pass "$name"
    else
        fail "$name" "$(tail -n 3 "$tmp/out")"
    fi
}
refused unpinned-version '--source TARBALL|DIR' --mpich 4.2.1
refused version-3 'written for MPICH 4.x and 5.x' --mpich 3.4.3 --source /nonexistent
refused version-6 'written for MPICH 4.x and 5.x' --mpich 6.0.0 --source /nonexistent
refused bad-version 'a version such as' --mpich five

summary
