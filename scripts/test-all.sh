#!/usr/bin/env bash
# Quick start, step 2: run every test. Builds efarm with gcc and clang
# (-Werror), checks formatting, runs the unit tests (gcc, clang, and clang with
# ASan+UBSan), the dissector round trip over every golden vector (also under
# ASan), the decoder and receive-path fuzzers for a bounded time each, builds libfabric 2.1.0 with only
# its efa provider, then builds MPICH 4.0.2 with ch4:efarm (C, C++ and Fortran) and
# runs the MPI tests over it (test/mpi, and a subset of MPICH's own test suite),
# builds MPICH 5.0.1 with ch4:efarm and runs test/mpi (through the system's rdma-core
# on efasim's kernel front end) and the threads directory's lists at four VCIs under
# faults over it (per-VCI critical sections; --mpich-5.0.1-suite: MPICH's test-suite
# subset and the threads lists at one VCI there too), compiles the netmod against a per-VCI MPICH 4.3.2
# (--mpich-4.3.2-tests: builds 4.3.2 in full and runs test/mpi over it) and against a
# 5.0.1 with the global critical section. The last line is "N passed, N failed";
# the exit status is nonzero if anything failed.
#
#   scripts/test-all.sh [--mpich-4.3.2-tests] [--mpich-5.0.1-suite]
#
# Environment: EFARM_BUILD_ROOT (default ./build), EFARM_FUZZ_SECONDS (default 60),
# EFARM_MPICH_SOURCE_4_3_2 (MPICH 4.3.2's source, a tarball or tree: Debian serves
# none; without it the release tarball is fetched from MPICH's site and checked
# against its pinned SHA-256, as scripts/mpich-build.sh does, and a machine that
# cannot reach the site prints a SKIP line naming the variable),
# EFARM_MPICH_SOURCE_5_0_1 (the same for MPICH 5.0.1), EFARM_MPICH_CACHE and
# EFARM_LIBFABRIC_CACHE (where MPICH 4.0.2 and libfabric are built and cached;
# 4.3.2's and 5.0.1's caches are EFARM_MPICH_CACHE's name with -4.3.2, -5.0.1 and
# -5.0.1-global),
# EFARM_TEST_BUDGET.
set -u
full432=no
suite501=no
for arg in "$@"; do
    case $arg in
    --mpich-4.3.2-tests) full432=yes ;;
    --mpich-5.0.1-suite) suite501=yes ;;
    *) echo "usage: scripts/test-all.sh [--mpich-4.3.2-tests] [--mpich-5.0.1-suite]" >&2; exit 2 ;;
    esac
done
top=$(cd "$(dirname "$0")/.." && pwd)
root=${EFARM_BUILD_ROOT:-$top/build}
fuzz_seconds=${EFARM_FUZZ_SECONDS:-60}
logs=$root/logs
mkdir -p "$logs"
passed=0
failed=0
jobs=$(nproc 2>/dev/null || echo 2)

pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1 (log: $2)"; tail -n 25 "$2" | sed 's/^/    /'; failed=$((failed + 1)); }

# EFARM_TEST_BUDGET=SECONDS (default 0: none): a step or suite that would start
# after that much of this run has gone is not run but counted as a failure that
# says so, so a slow machine still ends with the summary line and the times below
# tell where the time went (.ci/run sets it below CI's own limit).
budget=${EFARM_TEST_BUDGET:-0}
case $budget in '' | *[!0-9]*) echo "test-all: EFARM_TEST_BUDGET must be a number of seconds, not '$budget'" >&2; exit 2 ;; esac
over_budget() { # NAME: true (and counted as a failure) if the budget is used up
    [ "$budget" -gt 0 ] && [ "$SECONDS" -ge "$budget" ] || return 1
    echo "FAIL $1: not run (test-all's time budget of $budget s, EFARM_TEST_BUDGET, used up at $SECONDS s)"
    failed=$((failed + 1))
}
# Each step and suite ends with "TIME NAME: N s (at M s)": where a run's time goes.
took() { echo "TIME $1: $((SECONDS - $2)) s (at $SECONDS s)"; }

# step NAME COMMAND...: one check, counted once.
step() {
    local name=$1 log=$logs/$1.log t0=$SECONDS
    shift
    over_budget "$name" && return
    if "$@" >"$log" 2>&1; then pass "$name"; else fail "$name" "$log"; fi
    took "$name" "$t0"
}

# suite NAME COMMAND...: a runner that prints PASS/FAIL lines and "N passed, N failed".
suite() {
    local name=$1 log=$logs/$1.log status p f t0=$SECONDS
    shift
    over_budget "$name" && return
    "$@" >"$log" 2>&1
    status=$?
    grep -E '^(PASS|FAIL|SKIP) ' "$log" | sed "s/^\(PASS\|FAIL\|SKIP\) /\1 $name: /"
    took "$name" "$t0"
    read -r p f < <(tail -n 1 "$log" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2/p')
    if [ -z "${p:-}" ]; then
        fail "$name (no summary line, exit $status)" "$log"
        return
    fi
    passed=$((passed + p))
    failed=$((failed + f))
    if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then fail "$name (exit $status)" "$log"; fi
}

# EFARM_CCACHE_DIR=DIR: efarm's own builds (gcc, clang, ASan, TSan, the fuzzers)
# compile through ccache with its cache in DIR (CI keeps it beside the MPICH caches),
# so a new clone recompiles only the files whose preprocessed text changed. Only
# these builds see that cache: MPICH's keep their own (scripts/mpich-build.sh).
ccache_cc=
ccenv=(env)
if [ -n "${EFARM_CCACHE_DIR:-}" ] && command -v ccache >/dev/null; then
    ccache_cc="ccache "
    # A clone's files are new copies (mtimes and ctimes), maybe elsewhere: hits go
    # by content, paths relative to the clone.
    ccenv=(env CCACHE_DIR="$EFARM_CCACHE_DIR" CCACHE_BASEDIR="$top" CCACHE_NOHASHDIR=1
        CCACHE_SLOPPINESS=include_file_mtime,include_file_ctime,time_macros)
fi

configure_build() { # DIR CONFIGURE-ARGS...
    local dir=$1
    shift
    mkdir -p "$dir" && cd "$dir" &&
        { [ -f Makefile ] && [ Makefile -nt "$top/configure" ] || "${ccenv[@]}" "$top/configure" "$@"; } &&
        "${ccenv[@]}" make -j"$jobs" all && "${ccenv[@]}" make -j"$jobs" \
            test/unit/efarm-unit test/unit/golden-export test/unit/efasim-unit \
            test/unit/efasim-pingpong test/unit/mem-hook-so test/unit/memhook-module.la \
            test/unit/efasim-mmio-unit test/unit/efasim-uverbs-unit
}

sanitize="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"

echo "test-all: builds and logs under $root"
if [ ! -x "$top/configure" ] || [ "$top/configure.ac" -nt "$top/configure" ] ||
    [ "$top/Makefile.am" -nt "$top/configure" ]; then
    step autogen "$top/autogen.sh"
fi

# ---- MPICH builds, in the background ------------------------------------------------------
# MPICH 4.0.2's build and the netmod's compile check against 4.3.2 take about 18
# and 8 minutes from cold on a slow 2-core VM, much of it single-threaded
# configure, and the efarm checks below leave a core idle much of the time. So
# both start now, one after the other, at nice 19 (the checks keep the CPU when
# they want it), and the MPICH parts below wait for them (bg_wait). Logs:
# build/logs/mpich-build.log and mpich-4.3.2-*.log.
mpich_cache=${EFARM_MPICH_CACHE:-$top/build/mpich}
mpich_prefix=${EFARM_MPICH_PREFIX:-$mpich_cache/install}
src432=${EFARM_MPICH_SOURCE_4_3_2:-}
[ -n "$src432" ] && [ -e "$src432" ] || src432=
cache432=${mpich_cache}-4.3.2
prefix432=$cache432/install
src501=${EFARM_MPICH_SOURCE_5_0_1:-}
[ -n "$src501" ] && [ -e "$src501" ] || src501=
cache501=${mpich_cache}-5.0.1
prefix501=$cache501/install
cache501g=${mpich_cache}-5.0.1-global
# A version nobody passed: its release tarball, fetched into its cache (pinned SHA-256;
# once, then from the cache), or nothing on a machine that cannot reach MPICH's site.
fetch_mpich() { # VERSION CACHE
    env EFARM_BUILD_ROOT="$root" EFARM_MPICH_CACHE="$2" EFARM_MPICH_SOURCE= \
        "$top/scripts/mpich-build.sh" --mpich "$1" --fetch-only 2>"$logs/mpich-$1-fetch.log" |
        tail -n 1
}
[ -n "$src432" ] || src432=$(fetch_mpich 4.3.2 "$cache432")
[ -n "$src501" ] || src501=$(fetch_mpich 5.0.1 "$cache501")
bg_dir=$logs/background
rm -rf "$bg_dir"
mkdir -p "$bg_dir"
bg_build() { # NAME COMMAND...: log to $logs/NAME.log; "STATUS SECONDS" to $bg_dir/NAME.rc
    local name=$1 t0=$SECONDS status
    shift
    "$@" >"$logs/$name.log" 2>&1
    status=$?
    echo "$status $((SECONDS - t0))" >"$bg_dir/$name.rc"
}
(
    renice -n 19 -p "$BASHPID" >/dev/null 2>&1
    bg_build mpich-build env EFARM_BUILD_ROOT="$root" "$top/scripts/mpich-build.sh" \
        --prefix "$mpich_prefix"
    # MPICH 5.0.1, C only: the C++ and Fortran wrappers are tested on 4.0.2's build,
    # and leaving them out here keeps a cold build within CI's budget. With per-VCI
    # critical sections (MPICH's own default; 4.0.2 is built with the global one, the
    # netmod's default), so that both locking schemes run under MPI_THREAD_MULTIPLE.
    if [ -n "$src501" ]; then
        bg_build mpich-5.0.1-build env EFARM_BUILD_ROOT="$root" EFARM_MPICH_CACHE="$cache501" \
            "$top/scripts/mpich-build.sh" --mpich 5.0.1 --source "$src501" --prefix "$prefix501" --c-only \
            -- --enable-thread-cs=per-vci
    fi
    # MPICH 4.3.2 with per-VCI critical sections (its own default): the netmod's
    # 4.3-only code there (init_vcis opening the VCIs' endpoints) is a superset of
    # what the global critical section compiles on 4.3, whose other paths 4.0.2's
    # build and test/mpi run.
    if [ -n "$src432" ] && [ "$full432" = yes ]; then
        bg_build mpich-4.3.2-build env EFARM_BUILD_ROOT="$root" EFARM_MPICH_CACHE="$cache432" \
            "$top/scripts/mpich-build.sh" --mpich 4.3.2 --source "$src432" --prefix "$prefix432" \
            -- --enable-thread-cs=per-vci
    elif [ -n "$src432" ]; then
        bg_build mpich-4.3.2-compile env EFARM_BUILD_ROOT="$root" EFARM_MPICH_CACHE="$cache432" \
            "$top/scripts/mpich-build.sh" --mpich 4.3.2 --source "$src432" --prefix "$prefix432" \
            --compile-only --c-only -- --enable-thread-cs=per-vci
    fi
    # MPICH 5.0.1 with the global critical section (ch4:efarm's default when the
    # configure line names no granularity, so what a user's plain build gets) and
    # the MPI standard ABI library (--abi: --enable-mpi-abi): compile only, for the
    # netmod's branches the per-VCI build above leaves out (comm_set_vcis refusing
    # more than one VCI, no VCI locks), and the netmod compiled a second time for
    # libmpi_abi (BUILD_MPI_ABI: the standard's constants and MPI_Status).
    if [ -n "$src501" ]; then
        bg_build mpich-5.0.1-global-compile env EFARM_BUILD_ROOT="$root" \
            EFARM_MPICH_ABI_CACHE="$cache501g" "$top/scripts/mpich-build.sh" --mpich 5.0.1 \
            --source "$src501" --prefix "$cache501g/install" --compile-only --c-only --abi
    fi
) &
bg_pid=$!
kill_tree() { # PID: it and its descendants
    local c
    for c in $(pgrep -P "$1"); do kill_tree "$c"; done
    kill "$1" 2>/dev/null
}
trap 'kill_tree "$bg_pid"' EXIT
# bg_wait NAME: wait for the background build NAME; a step like the others, whose
# TIME line says how long this run waited and how long the build took.
bg_wait() {
    local name=$1 t0=$SECONDS status secs
    # The build started long ago, so the budget does not stop this wait; a wait
    # past the budget by 5 minutes more ends it (a failure, and the summary still
    # comes before CI's own limit).
    while [ ! -f "$bg_dir/$name.rc" ] && kill -0 "$bg_pid" 2>/dev/null; do
        if [ "$budget" -gt 0 ] && [ "$SECONDS" -ge $((budget + 300)) ]; then
            echo "FAIL $name: still building at $SECONDS s, 300 s past test-all's time budget of $budget s (EFARM_TEST_BUDGET)"
            failed=$((failed + 1))
            return
        fi
        sleep 2
    done
    if read -r status secs <"$bg_dir/$name.rc" 2>/dev/null; then
        if [ "$status" -eq 0 ]; then pass "$name"; else fail "$name" "$logs/$name.log"; fi
    else
        fail "$name (the background build ended without a status)" "$logs/$name.log"
    fi
    echo "TIME $name: waited $((SECONDS - t0)) s, built in ${secs:-?} s in the background (at $SECONDS s)"
}

step build-gcc-werror configure_build "$root/gcc" CC="${ccache_cc}gcc"
step build-clang-werror configure_build "$root/clang" CC="${ccache_cc}clang"
step build-asan-ubsan configure_build "$root/asan" CC="${ccache_cc}clang" CFLAGS="$sanitize" LDFLAGS="$sanitize"
step check-format make -C "$root/gcc" check-format
# The MPICH control variable block and doc/TUNABLES.md, generated from the tunable table.
step check-config-gen make -C "$root/gcc" check-config-gen
# make install's extras (efarm.pc, manual pages, the dissector, the netmod's sources), the Spack recipes.
suite packaging sh "$top/test/unit/test_packaging.sh" "$root/gcc"
# scripts/mpich-build.sh's version and source checks: the pinned release checksums, the
# prompt stop without network.
suite mpich-build-args sh "$top/test/unit/test_mpich_build_args.sh"

export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
for b in gcc clang asan; do
    if [ "$b" = clang ]; then
        # The clang build's run goes through EFA's real path: the system's rdma-core on
        # efasim's kernel front end (EFARM_TEST_DEVICE=efa); gcc's and ASan's run on
        # the drop-in. Through rdma-core 44 there is no RDMA write: the tests expect
        # emulated writes there, and two skip.
        suite unit-clang-kernel env EFARM_TEST_DEVICE=efa "$root/gcc/tools/efasim-info" --run=kernel \
            "$root/clang/test/unit/efarm-unit"
    else
        suite "unit-$b" "$root/$b/test/unit/efarm-unit"
    fi
    # The registration cache's memory hook in a program that links only libefarm.so.
    suite "mem-hook-$b" "$root/$b/test/unit/mem-hook-so"
    suite "efarm-info-$b" sh "$top/test/unit/test_efarm_info.sh" "$root/$b"
    # EFARM_CAPTURE, the data log, efarm-pktdump --pcap/--log, the Wireshark dissector
    # (tshark); in the gcc and ASan trees (the ASan tree is clang's too).
    [ "$b" = clang ] && continue
    suite "capture-$b" sh "$top/test/unit/test_capture.sh" "$root/$b"
    suite "pktdump-$b" sh "$top/test/unit/test_pktdump.sh" "$root/$b/tools/efarm-pktdump" \
        "$root/$b/test/unit/golden-export"
done
step bench-codec-runs "$root/gcc/bench/bench-codec" 20000
step bench-tm-runs "$root/gcc/bench/bench-tm"

# efasim: the verbs-level suite in the gcc tree and under ASan+UBSan (clang; the
# kernel front end's run below takes the gcc tree's), Debian's ibv_devinfo on it, two
# network namespaces, and the efasim/UDP bench once.
for b in gcc asan; do
    suite "efasim-$b" env LD_LIBRARY_PATH="$root/$b/src/efasim/.libs" \
        "$root/$b/test/unit/efasim-unit"
done
tsan_build() {
    mkdir -p "$root/tsan" && cd "$root/tsan" &&
        { [ -f Makefile ] && [ Makefile -nt "$top/configure" ] ||
            "${ccenv[@]}" "$top/configure" CC="${ccache_cc}clang" CFLAGS="-O1 -g -fsanitize=thread" \
                LDFLAGS="-fsanitize=thread"; } &&
        "${ccenv[@]}" make -j"$jobs" src/efasim/libibverbs.la src/efasim/libefa.la test/unit/efasim-unit \
            test/unit/efarm-unit src/netmod_efarm/libefarm.la
}
step build-tsan-efasim tsan_build
suite efasim-tsan env TSAN_OPTIONS=halt_on_error=1 LD_LIBRARY_PATH="$root/tsan/src/efasim/.libs" \
    "$root/tsan/test/unit/efasim-unit"
# The engine under ThreadSanitizer where threads meet (issue 42): endpoint pairs
# driven by their own threads at once (test_proto_threads.c).
suite proto-tsan env TSAN_OPTIONS=halt_on_error=1 "$root/tsan/test/unit/efarm-unit" proto_threads
suite ibv-devinfo sh "$top/test/unit/test_ibv_devinfo.sh" "$root/gcc/src/efasim/.libs"
# efasim's kernel front end (src/efasim/kernel): its own tests (the trap decoder,
# doorbells and armed rings; the uverbs ABI by hand), then the system's rdma-core
# (libibverbs, libefa) on it: efasim's suite, ibv_devinfo and ibv_ud_pingpong,
# libfabric 1.17, and rdma-core's own test suite on both front ends (a SKIP line
# where the machine's package sources lack its 44.0 source).
suite efasim-mmio "$root/gcc/test/unit/efasim-mmio-unit"
suite efasim-uverbs "$root/gcc/tools/efasim-info" --run=kernel "$root/gcc/test/unit/efasim-uverbs-unit"
suite efasim-kernel "$root/gcc/tools/efasim-info" --run=kernel "$root/gcc/test/unit/efasim-unit"
suite ibv-devinfo-kernel sh "$top/test/unit/test_ibv_devinfo.sh" --kernel "$root/gcc/src/efasim/.libs"
suite efasim-netns-kernel sh "$top/test/unit/test_efasim_netns.sh" "$root/gcc/test/unit/efasim-pingpong" \
    "$root/gcc/src/efasim/.libs" kernel
suite libfabric-kernel bash "$top/test/libfabric/run-libfabric-tests.sh" --front-end kernel "$root/gcc"
suite rdma-core-kernel bash "$top/test/rdma-core/run-rdma-core-tests.sh" "$root/gcc"
suite rdma-core-verbs bash "$top/test/rdma-core/run-rdma-core-tests.sh" --front-end verbs "$root/gcc"
suite efasim-symbols sh "$top/test/unit/test_efasim_symbols.sh" "$root/gcc/src/efasim/.libs"
# libfabric's own fi_info and fi_pingpong (Debian's 1.17), unmodified, on efasim.
suite libfabric bash "$top/test/libfabric/run-libfabric-tests.sh" "$root/gcc"
suite efasim-netns sh "$top/test/unit/test_efasim_netns.sh" "$root/gcc/test/unit/efasim-pingpong" \
    "$root/gcc/src/efasim/.libs"
suite proto-procs sh "$top/test/unit/test_proto_procs.sh" "$root/gcc/tools/efarm-pingpong" \
    "$root/gcc/src/efasim/.libs"
# efarm's engine against libfabric's EFA provider (Debian's 1.17), both on efasim.
step build-interop make -C "$root/gcc" -j"$jobs" test/interop/interop-efarm test/interop/interop-fi
suite interop-libfabric bash "$top/test/interop/run-interop.sh" "$root/gcc" --label libfabric-1.17
suite interop-libfabric-kernel bash "$top/test/interop/run-interop.sh" "$root/gcc" \
    --label libfabric-1.17-kernel --front-end kernel
step bench-efasim-runs env LD_LIBRARY_PATH="$root/gcc/src/efasim/.libs" \
    "$root/gcc/bench/bench-efasim" 200
step bench-device-runs env EFARM_DEVICE=sim EFARM_EFASIM_PATH="$root/gcc/src/efasim/.libs" \
    "$root/gcc/bench/bench-device" 200
step bench-proto-runs env EFARM_DEVICE=sim EFARM_EFASIM_PATH="$root/gcc/src/efasim/.libs" \
    "$root/gcc/bench/bench-proto" 200
# The subprotocol sweep as a smoke run: every forced subprotocol carries some size
# (its timings are figures for bench/README.md, never judged here); it also writes
# its figures as a selection profile (calibration), which efarm-info must then load
# and print (the thresholds it gives are figures of this machine, not judged).
step proto-sweep-smoke bash "$top/bench/run-proto-sweep.sh" "$root/gcc" --quick \
    --write-profile "$root/bench/smoke.profile"
# The same with 16 messages in flight, adding stream curves to that profile.
step proto-sweep-bw-smoke bash "$top/bench/run-proto-sweep.sh" "$root/gcc" --quick --bw \
    --write-profile "$root/bench/smoke.profile"
policy_print() {
    local env="EFARM_DEVICE=sim EFARM_EFASIM_PATH=$root/gcc/src/efasim/.libs"
    env $env "$root/gcc/tools/efarm-info" --policy | grep -q ': profile efasim$' &&
        env $env EFARM_PROFILE=reference "$root/gcc/tools/efarm-info" --policy |
        grep -q 'medium up to 65536 B, reads from 1048576 B' &&
        env $env EFARM_PROFILE="$root/bench/smoke.profile" "$root/gcc/tools/efarm-info" --policy |
        grep -q ': profile calibrated-' &&
        [ "$(grep -c '^stream \(medium\|longcts\|longread\) ' "$root/bench/smoke.profile")" -ge 6 ]
}
step policy-print policy_print

fuzz_build() {
    mkdir -p "$root/fuzz" && cd "$root/fuzz" &&
        { [ -f Makefile ] && [ Makefile -nt "$top/configure" ] ||
            "${ccenv[@]}" "$top/configure" --enable-fuzz CC="${ccache_cc}clang" CFLAGS="-O1 -g"; } &&
        "${ccenv[@]}" make -j"$jobs" test/fuzz/fuzz-pkt-decode &&
        "${ccenv[@]}" make -j"$jobs" test/unit/golden-export &&
        "${ccenv[@]}" make -j"$jobs" test/fuzz/fuzz-rx test/fuzz/fuzz-rx-seeds tools/efarm-pingpong \
            src/efasim/libibverbs.la src/efasim/libefa.la
}
step build-fuzz fuzz_build
FUZZ_ARTIFACTS=$logs/ step "fuzz-pkt-decode-${fuzz_seconds}s" sh "$top/test/fuzz/run-fuzz.sh" \
    "$root/fuzz/test/fuzz/fuzz-pkt-decode" "$root/fuzz/test/unit/golden-export" "$fuzz_seconds"
# The receive-path fuzzer's smoke run: the whole engine on efasim, hostile wire peers.
FUZZ_ARTIFACTS=$logs/ step "fuzz-rx-${fuzz_seconds}s" sh "$top/test/fuzz/run-fuzz-rx.sh" \
    "$root/fuzz" "$fuzz_seconds"

# ---- libfabric 2.1.0, efa provider only --------------------------------------------------
# scripts/libfabric-build.sh builds Debian trixie's libfabric 2.1.0 (source fetched
# through a private deb-src list) with only its efa provider against bookworm's
# rdma-core 44 (about 40 s the first time on 2 cores, 1 s cached, under
# build/libfabric), then runs test/libfabric's checks with its fi_info and
# fi_pingpong. Skipped, saying why, only when the source cannot be downloaded.
lf_prefix=${EFARM_LIBFABRIC_PREFIX:-${EFARM_LIBFABRIC_CACHE:-$top/build/libfabric}/install}
lf_log=$logs/libfabric-build.log
lf_t0=$SECONDS
if over_budget libfabric-build; then
    lf_status=4
else
    env EFARM_BUILD_ROOT="$root" "$top/scripts/libfabric-build.sh" --prefix "$lf_prefix" >"$lf_log" 2>&1
    lf_status=$?
    took libfabric-build "$lf_t0"
fi
case $lf_status in
0)
    pass libfabric-build
    # The same fi_info/fi_pingpong checks as for Debian's 1.17, with 2.1.0's tools.
    suite libfabric-2.1 bash "$top/test/libfabric/run-libfabric-tests.sh" --libfabric "$lf_prefix" \
        "$root/gcc"
    # efarm's engine against 2.1.0's EFA provider (READ_NACK included), both on efasim.
    suite interop-libfabric-2.1 bash "$top/test/interop/run-interop.sh" "$root/gcc" \
        --libfabric "$lf_prefix" --label libfabric-2.1
    ;;
3) echo "SKIP libfabric-build: $(grep -m 1 '^    cannot download' "$lf_log" | sed 's/^ *//') (log: $lf_log)" ;;
4) ;; # not run: counted by over_budget
*) fail libfabric-build "$lf_log" ;;
esac

# ---- libfabric against a later rdma-core: RDMA write, and libfabric 2.6 ----------------------
# bookworm's rdma-core 44 has no RDMA write, so neither has a libfabric built against
# it. scripts/rdma-core-build.sh builds rdma-core 56.1 (Debian trixie's source) into a
# private directory (about 20 s), never over the system's; libfabric 2.1.0 is built
# again against it (its own cache) and efarm's interop suite runs against that one:
# on the drop-in, and on the kernel front end with efarm through bookworm's rdma-core
# (no RDMA write: libfabric writes to efarm emulated) and through 56.1 (both write by
# RDMA). Then libfabric 2.6.0 against rdma-core 64.0 the same way, with its direct
# data path on the kernel front end, when exports of their git tags are at hand
# (LIBFABRIC_SOURCE_2_6_0 and RDMA_CORE_SOURCE_64_0: Debian serves
# neither; .ci/run takes them from its cache's dl/ when they are there); SKIP
# otherwise, saying so.
# later_lf LABEL RC_VERSION RC_SOURCE LF_VERSION LF_SOURCE: build both, run the suites.
later_lf() {
    local label=$1 rcv=$2 rcsrc=$3 lfv=$4 lfsrc=$5 t0=$SECONDS rc_out lf_cache lf_pfx st
    local log=$logs/build-$label.log
    rc_out=$lf_root/rdma-core-$rcv
    lf_cache=$lf_root/libfabric-$lfv-rdma-core-$rcv
    lf_pfx=$lf_cache/install
    over_budget "build-$label" && return
    {
        env EFARM_BUILD_ROOT="$root" "$top/scripts/rdma-core-build.sh" --version "$rcv" --out "$rc_out" \
            ${rcsrc:+--source "$rcsrc"} &&
            env EFARM_BUILD_ROOT="$root" EFARM_LIBFABRIC_CACHE="$lf_cache" "$top/scripts/libfabric-build.sh" \
                --version "$lfv" --rdma-core "$rc_out" --prefix "$lf_pfx" ${lfsrc:+--source "$lfsrc"}
    } >"$log" 2>&1
    st=$?
    took "build-$label" "$t0"
    case $st in
    0) pass "build-$label" ;;
    3)
        echo "SKIP build-$label: a source could not be downloaded (log: $log)"
        return
        ;;
    *)
        fail "build-$label" "$log"
        return
        ;;
    esac
    suite "interop-$label" bash "$top/test/interop/run-interop.sh" "$root/gcc" --libfabric "$lf_pfx" \
        --label "$label"
    suite "interop-$label-kernel" bash "$top/test/interop/run-interop.sh" "$root/gcc" \
        --libfabric "$lf_pfx" --label "$label-kernel" --front-end kernel
    suite "interop-$label-kernel-rw" bash "$top/test/interop/run-interop.sh" "$root/gcc" \
        --libfabric "$lf_pfx" --label "$label-kernel-rw" --front-end kernel --efarm-rdma-core "$rc_out" \
        --only rdma,rdmawrite,refusals,unsolicited,unsolicitedfi
}
lf_root=$(dirname "${EFARM_LIBFABRIC_CACHE:-$top/build/libfabric}")
later_lf libfabric-2.1-rdma-core-56.1 56.1 "" 2.1.0 ""
if [ -n "${LIBFABRIC_SOURCE_2_6_0:-}" ] && [ -n "${RDMA_CORE_SOURCE_64_0:-}" ]; then
    later_lf libfabric-2.6-rdma-core-64.0 64.0 "$RDMA_CORE_SOURCE_64_0" 2.6.0 \
        "$LIBFABRIC_SOURCE_2_6_0"
else
    echo "SKIP libfabric-2.6: no export of libfabric v2.6.0 and rdma-core v64.0 (LIBFABRIC_SOURCE_2_6_0, RDMA_CORE_SOURCE_64_0; test/interop/README.md says how to make them)"
fi

# ---- MPICH 4.0.2 with ch4:efarm, and the MPI tests over it ----------------------------------
# scripts/mpich-build.sh builds and installs MPICH with efarm's netmod, in the
# background since the start (above; 8 to 18 minutes the first time on 2 cores;
# cached under build/mpich after, so a rerun only recompiles what changed). Then
# test/mpi's programs with 2, 4 and 8 ranks through efarm on efasim's drop-in, and a
# fixed subset of MPICH's own test suite (pt2pt, basic, comm, coll, datatype, rma;
# `scripts/mpich-testsuite.sh --subset full` runs them all): rma on the drop-in, a
# second time with RMA as active messages, the others through the system's rdma-core
# on efasim's kernel front end, coll only under efasim's network faults (the fault
# matrix's CI slice, with pt2pt).
bg_wait mpich-build
# The code names that the README, the architecture and the documents a reader goes
# to from them mention exist (MPICH's names in its source tree, which the build
# above unpacked); and the check finds a stale one.
doc_trees=()
[ -d "$mpich_cache/tree/mpich-4.0.2" ] && doc_trees=(--tree "$mpich_cache/tree/mpich-4.0.2")
step doc-names "$top/scripts/check-doc-names.sh" "${doc_trees[@]}" "$top/README.md" \
    "$top/doc/ARCHITECTURE.md" "$top/src/proto/README.md" "$top/src/netmod_efarm/README.md" \
    "$top/doc/NETMOD.md" "$top/doc/STATUS.md" "$top/doc/PROTOCOL-SELECTION.md" "$top/doc/TUNABLES.md" \
    "$top/test/interop/README.md"
doc_names_detects() {
    # The stale name is put together here, so that it is no word of this tree.
    local d=$root/doc-names-stale.md name=efarm_ep_"tsend"_gone
    printf 'Sends go through `%s` in `src/proto/msg_tsend.c`.\n' "$name" >"$d"
    ! "$top/scripts/check-doc-names.sh" "$d" >"$d.out" 2>&1 &&
        grep -q "name \`$name\` not found" "$d.out" &&
        grep -q 'path `src/proto/msg_tsend.c` not found' "$d.out" || return 1
    # A name the code pastes: an MPI_T variable made from a counter list is found,
    # one whose counter does not exist is not.
    name=efarm_nm_recv_"gone"
    printf 'See `efarm_nm_recv_msgs` and `%s`.\n' "$name" >"$d"
    ! "$top/scripts/check-doc-names.sh" "$d" >"$d.out" 2>&1 &&
        grep -q "name \`$name\` not found" "$d.out" &&
        ! grep -q 'efarm_nm_recv_msgs' "$d.out"
}
step doc-names-detects doc_names_detects
if [ -x "$mpich_prefix/bin/mpicc" ]; then
    # A second run of the same build with nothing changed reuses the install (the
    # README's second command after its first): it must say so, and build nothing.
    mpich_build_reused() {
        env EFARM_BUILD_ROOT="$root" "$top/scripts/mpich-build.sh" --prefix "$mpich_prefix" &&
            grep -q '^mpich-build: make, install, hello: nothing changed' "$logs/mpich-build-reuse.log"
    }
    step mpich-build-reuse mpich_build_reused
    # On efasim's verbs drop-in here; on 5.0.1 (below) the same runs go through the
    # system's rdma-core on the kernel front end (EFARM_DEVICE=efa).
    suite mpi bash "$top/test/mpi/run-mpi-tests.sh" --prefix "$mpich_prefix"
    # The soak under faults for a minute (test/mpi/soak.c: random traffic, every byte
    # checked, memory flat after warm-up, efarm's levels back to 0 at the end).
    suite soak env MPITEST_SOAK_SECONDS=60 MPITEST_BUILD_DIR="$root/mpitest-soak" \
        bash "$top/test/mpi/run-mpi-tests.sh" --prefix "$mpich_prefix" --timeout 300 soak-faults-n4
    # Two emulated hosts (network and UTS namespaces), 2 ranks each: shared memory within
    # a host, efarm between them (test/mpi/run-two-hosts.sh; SKIP lines without root).
    suite two-hosts env MPITEST_BUILD_DIR="$root/mpitest-two-hosts" \
        bash "$top/test/mpi/run-two-hosts.sh" --prefix "$mpich_prefix"
    # Slurm across two emulated hosts (scripts/slurm-cluster.sh): srun --mpi=pmi2,
    # salloc with mpiexec, sbatch, spawn, a launch with the wrong PMI, a host that dies
    # mid-job (test/mpi/run-slurm.sh; the PMIx and PMI 2 builds' runs by hand).
    suite slurm env MPITEST_BUILD_DIR="$root/mpitest-slurm" \
        bash "$top/test/mpi/run-slurm.sh" --prefix "$mpich_prefix"
    # quickstart.sh's verdict and plot on a short run of its benchmark; and the verdict
    # must fail when the ranks' messages go through shared memory instead of efarm.
    quickstart_report() {
        local d=$root/quickstart-ci pv=(-p efarm_nm_send_msgs -p efarm_proto_eager -p efarm_proto_medium)
        mkdir -p "$d" && "$mpich_prefix/bin/mpicc" -O2 -o "$d/bench-mpi" "$top/bench/bench_mpi.c" &&
            EFARM_DEVICE=sim MPIR_CVAR_NOLOCAL=1 "$mpich_prefix/bin/mpiexec" -n 2 "$d/bench-mpi" \
                -t latency,bw -m 64K -i 0.05 "${pv[@]}" >"$d/efarm.txt" &&
            bash "$top/scripts/quickstart.sh" --report "$d/efarm.txt" &&
            grep -Eq '^verdict: efarm carried ([0-9]+) of \1 messages; subprotocols used: eager' "$d/efarm.txt" &&
            [ "$(head -c 4 "$d/efarm.png" | od -An -c | tr -d ' ')" = "211PNG" ] &&
            EFARM_DEVICE=sim "$mpich_prefix/bin/mpiexec" -n 2 "$d/bench-mpi" -t latency -m 64 -i 0.05 \
                "${pv[@]}" >"$d/shm.txt" &&
            ! bash "$top/scripts/quickstart.sh" --report "$d/shm.txt" &&
            grep -q '^verdict: efarm carried only ' "$d/shm.txt"
    }
    step quickstart-report quickstart_report
    # Instructions per 8-byte round trip under callgrind (issue 14's benchmark), at its
    # default 200 and 1000 round trips: its phases, objects and the agreement of its two
    # fits are checked, not its figures. (At 100 and 400 a one-off cost of about 12000
    # MPICH instructions in the shorter phase, on a machine loaded by the background
    # MPICH build, once made MPICH's fits differ by 11%.)
    step instr-bench-smoke env EFARM_BUILD_ROOT="$root" bash "$top/bench/run-instr-bench.sh" \
        --prefix "$mpich_prefix" --check
    # The multithreaded benchmark (issue 42) over efarm, 1 and 2 threads, a tenth of a
    # second per point: every message's stamp and efarm's counters against what it sent
    # are checked, not its figures; and its self-test (-x, one wrong stamp) must fail.
    mt_bench_smoke() {
        local run=(env EFARM_BUILD_ROOT="$root" bash "$top/bench/run-mt-bench.sh"
            --prefix "$mpich_prefix" --only efarm --threads "1,2" --quick --runs 1)
        local st=$root/bench/mt-selftest.txt rc=0
        "${run[@]}" || return 1
        # The self-test (-x) must fail, and through the stamp check: anything else
        # (a clean exit, a hang, a crash) is shown here, since the step's log is all
        # CI keeps.
        "${run[@]}" -- -x >"$st" 2>&1 || rc=$?
        if [ $rc -ne 0 ] && grep 'CHECK FAILED' "$st"; then return 0; fi
        echo "mt-bench-smoke: the self-test run (-x) exited $rc without a CHECK FAILED line; its last lines:"
        tail -n 12 "$st"
        return 1
    }
    step mt-bench-smoke mt_bench_smoke
    # Applications Debian builds against its MPICH, run over efarm through the MPICH
    # ABI (ScaLAPACK's test programs, NetPIPE; scripts/run-mpich-apps.sh, its ci subset).
    suite mpich-apps bash "$top/scripts/run-mpich-apps.sh" --prefix "$mpich_prefix" --subset ci \
        --logs "$root/mpich-apps"
    if [ -x "$top/scripts/mpich-testsuite.sh" ]; then
        # --only (finishing a stopped fault-matrix cell): it must pick exactly the
        # tests of the full list that its globs match, and refuse a file matching none.
        only_select() {
            local ts=$top/scripts/mpich-testsuite.sh d=$root/only-select all picked
            mkdir -p "$d"
            all=$(bash "$ts" --prefix "$mpich_prefix" --list --dirs rma --subset full | grep '^rma/') || return 1
            printf '# comment\nrma/rma_contig 2 -iter=10000\n  rma/atomic_get_*  \n' >"$d/only"
            picked=$(bash "$ts" --prefix "$mpich_prefix" --list --dirs rma --subset full --only "$d/only" |
                grep '^rma/') || return 1
            echo "$picked"
            [ "$picked" = "$(grep -E '^rma/(rma_contig 2 -iter=10000|atomic_get_.*)$' <<<"$all")" ] &&
                [ "$(wc -l <<<"$picked")" -ge 2 ] || return 1
            echo 'rma/no-such-test*' >"$d/none"
            ! bash "$ts" --prefix "$mpich_prefix" --list --dirs rma --subset full --only "$d/none"
        }
        step mpich-testsuite-only only_select
        # Its CI subset on efarm's EFA path (EFARM_DEVICE=efa, the system's rdma-core on
        # efasim's kernel front end): pt2pt, basic, comm and datatype here, and pt2pt and
        # coll under faults in the fault slice below, also on that path (coll does not
        # run a second time without them). Its rma directory runs on the drop-in: the RMA
        # tests spin in MPI's progress, and every empty poll of an armed completion ring
        # is a trapped fault on the kernel front end (about 11 us), so that directory
        # takes 3.1 times as long there (629 s against 203 s, contention_putget near its
        # 60 s limit; src/efasim/README.md, "Costs"); the others about 8% longer.
        # test/mpi's RMA runs on 5.0.1 (below) and rdma-core's own tests cover RDMA on
        # that path; `--front-end kernel --dirs rma` runs the directory there.
        suite mpich-testsuite-kernel bash "$top/scripts/mpich-testsuite.sh" --prefix "$mpich_prefix" \
            --subset ci --front-end kernel --dirs "pt2pt basic comm datatype" \
            --logs "$root/mpich-testsuite-kernel"
        suite mpich-testsuite-rma bash "$top/scripts/mpich-testsuite.sh" --prefix "$mpich_prefix" \
            --subset ci --dirs rma --logs "$root/mpich-testsuite-rma"
        # MPICH's other directories (topo, threads, part, io, errhan, attr, group, info,
        # init, mpi_t, spawn): their CI lists (test/mpich-testlists/ci-DIR), but three
        # that take 160 s of its 600 (test/mpich-testlists/except-ci-budget).
        suite mpich-testsuite-more bash "$top/scripts/mpich-testsuite.sh" --prefix "$mpich_prefix" \
            --subset ci --dirs more --except "$top/test/mpich-testlists/except-ci-budget" \
            --logs "$root/mpich-testsuite-more"
        # Its Fortran directories, f77 and f90, where MPICH was built with Fortran
        # (the default; --c-only leaves it out): the suite configured a second time
        # with its Fortran tests, and their CI lists (test/mpich-testlists/ci-f77-*,
        # ci-f90-*).
        if [ -x "$mpich_prefix/bin/mpifort" ]; then
            suite mpich-testsuite-fortran bash "$top/scripts/mpich-testsuite.sh" \
                --prefix "$mpich_prefix" --fortran --subset ci --dirs fortran \
                --logs "$root/mpich-testsuite-fortran"
        else
            echo "SKIP mpich-testsuite-fortran: $mpich_prefix has no mpifort (MPICH built with --c-only)"
        fi
        # Its rma part again with every RMA operation as MPIDIG's active messages
        # (EFARM_RMA_NATIVE=0): both paths must pass. 92 of the 177 tests: the file
        # says which variants it leaves out (they add nothing to that path).
        suite mpich-testsuite-rma-am env EFARM_RMA_NATIVE=0 bash "$top/scripts/mpich-testsuite.sh" \
            --prefix "$mpich_prefix" --subset ci --dirs rma --only "$top/test/mpich-testlists/only-rma-am" \
            --logs "$root/mpich-testsuite-rma-am"
        # The fault matrix's CI slice (scripts/check-faults.sh --slice ci): the pt2pt
        # and coll part of that subset under 10% loss, 10% duplication and 20%
        # reordering, and a few test/mpi runs under RNR storms, 16-WR send queues,
        # delay jitter and all six at once, on the kernel front end (354 s there against
        # 300 s on the drop-in; its direct-write RMA run skips there, as rdma-core 44 has
        # no RDMA write: test/mpi's rma_native-faults runs above have it).
        # `make check-faults` runs the whole matrix.
        suite check-faults-slice bash "$top/scripts/check-faults.sh" --prefix "$mpich_prefix" \
            --slice ci --front-end kernel --out "$root/check-faults"
    fi
fi

# ---- MPICH 5.0.1 with ch4:efarm ---------------------------------------------------------
# The current MPICH release line (doc/MPICH-VERSIONS.md), built in the background
# after 4.0.2 from the source EFARM_MPICH_SOURCE_5_0_1 names (.ci/run finds an
# export of its git tag beside the checkout; per-VCI critical sections): test/mpi on
# the kernel front end, then its threads directory's CI lists at four VCIs under
# faults (--mpich-5.0.1-suite: MPICH's test-suite CI subset too). The suite's
# programs come from 4.0.2's tree (an export of 5.0.1's tag cannot build its own
# suite); test/mpich-xfail-suite-4.0.2-on-5.0.1.txt lists what the two versions
# expect differently.
if [ -n "$src501" ]; then
    bg_wait mpich-5.0.1-build
    if [ -x "$prefix501/bin/mpicc" ]; then
        # test/mpi in full on efarm's EFA path: EFARM_DEVICE=efa through the system's
        # rdma-core on efasim's kernel front end (4.0.2's run above is on the drop-in; by
        # hand each version runs on both front ends, --front-end).
        # The 8-rank matching models take 110 s there (27 s on the drop-in, where 4.0.2
        # runs them).
        suite mpi-kernel-5.0.1 env MPITEST_BUILD_DIR="$root/mpitest-kernel-5.0.1" \
            bash "$top/test/mpi/run-mpi-tests.sh" --prefix "$prefix501" --front-end kernel \
            --except match_model-n8 --except match_model-faults-n8
        # MPICH's test-suite CI subset on 5.0.1 (the programs 4.0.2's run above runs, about
        # 6 minutes on a slow 2-core VM) and its threads directory's CI lists at one VCI
        # (95 s): by hand or with --mpich-5.0.1-suite (CI's budget). 4.0.2's run above has
        # the threads lists under the global critical section.
        if [ "$suite501" = yes ]; then
            suite mpich-testsuite-5.0.1 bash "$top/scripts/mpich-testsuite.sh" --prefix "$prefix501" \
                --subset ci --source "$mpich_cache/tree/mpich-4.0.2" --logs "$root/mpich-testsuite-5.0.1"
            suite mpich-testsuite-threads-5.0.1 bash "$top/scripts/mpich-testsuite.sh" \
                --prefix "$prefix501" --subset ci --dirs threads --source "$mpich_cache/tree/mpich-4.0.2" \
                --logs "$root/mpich-testsuite-threads-5.0.1"
        else
            echo "SKIP mpich-testsuite-5.0.1: MPICH's test-suite CI subset on 5.0.1 runs with scripts/test-all.sh --mpich-5.0.1-suite (CI's budget)"
            echo "SKIP mpich-testsuite-threads-5.0.1: its threads lists at one VCI on 5.0.1 run with scripts/test-all.sh --mpich-5.0.1-suite (CI's budget)"
        fi
        # The threads directory's CI lists at four VCIs under efasim faults (10% loss, 10%
        # duplication, 20% reordering): several VCIs with per-VCI critical sections, all
        # but multirma (225 s there) and two that take 72-75 s there (the file says why;
        # the whole directory so by hand: doc/NETMOD.md).
        suite mpich-testsuite-threads-vcis-faults-5.0.1 env MPIR_CVAR_CH4_NUM_VCIS=4 \
            bash "$top/scripts/mpich-testsuite.sh" --prefix "$prefix501" --subset ci --dirs threads \
            --faults --only "$top/test/mpich-testlists/only-threads-vcis-faults" \
            --source "$mpich_cache/tree/mpich-4.0.2" \
            --logs "$root/mpich-testsuite-threads-vcis-faults-5.0.1"
        # Under Slurm (test/mpi/run-slurm.sh): srun --mpi=pmi2 across two emulated hosts,
        # with threads, and the refused launches (MPICH 5.0 refuses a PMIx launch itself).
        suite slurm-5.0.1 env MPITEST_BUILD_DIR="$root/mpitest-slurm-5.0.1" \
            bash "$top/test/mpi/run-slurm.sh" --prefix "$prefix501" two_hosts-srun-pmi2 \
            threads-srun-pmi2 mismatch
        # ThreadSanitizer over multi-VCI MPI runs: the engine (libefarm) and
        # efasim built with -fsanitize=thread (the tsan tree above) under this MPICH, which
        # is not instrumented (its locks are intercepted, so its per-VCI critical sections
        # order what they guard); test programs built with clang -fsanitize=thread: threads
        # on their own communicators over four VCIs (vcis), threads sharing one with RMA
        # epochs (threads), native RMA on the windows' VCIs (rma_native). Any report fails.
        mpi_tsan() {
            local d=$root/mpi-tsan t
            mkdir -p "$d" || return 1
            for t in vcis threads rma_native; do
                "$prefix501/bin/mpicc" -cc=clang -std=c11 -O1 -g -fsanitize=thread -I"$top/test/mpi" \
                    -o "$d/$t" "$top/test/mpi/$t.c" "$top/test/mpi/efarm_mpitest.c" -lpthread || return 1
            done
            tsan_run() {
                env LD_LIBRARY_PATH="$root/tsan/src/netmod_efarm/.libs" \
                    EFARM_EFASIM_PATH="$root/tsan/src/efasim/.libs" TSAN_OPTIONS="halt_on_error=1 exitcode=66" \
                    EFARM_DEVICE=sim MPIR_CVAR_NOLOCAL=1 MPIR_CVAR_CH4_NUM_VCIS=4 MPIEXEC_TIMEOUT=300 "$@"
            }
            tsan_run MPITEST_ROUNDS=5 "$prefix501/bin/mpiexec" -n 2 "$d/vcis" &&
                tsan_run "$prefix501/bin/mpiexec" -n 4 "$d/threads" &&
                tsan_run EFASIM_RDMA_WRITE=1 MPITEST_RMA_PROTO=direct "$prefix501/bin/mpiexec" -n 2 "$d/rma_native"
        }
        step mpi-tsan-vcis-5.0.1 mpi_tsan
        # The multithreaded benchmark at 1 and 4 VCIs (an endpoint per VCI):
        # stamps and efarm's counters checked, not its figures.
        step mt-bench-smoke-5.0.1 env EFARM_BUILD_ROOT="$root/mt-5.0.1" bash "$top/bench/run-mt-bench.sh" \
            --prefix "$prefix501" --only efarm --vcis 1,4 --threads 1,2 --quick --runs 1
        # Its CPU profile per VCI count (perf): a PERF line for each, every share a figure.
        mt_perf_smoke() {
            local o=$root/mt-perf-5.0.1.txt
            EFARM_BUILD_ROOT="$root/mt-5.0.1" bash "$top/bench/run-mt-perf.sh" --prefix "$prefix501" \
                --vcis 1,4 --seconds 0.3 | tee "$o" &&
                [ "$(grep -cE '^PERF vcis=[14] .*msgs_per_s=[0-9]+ wire=[0-9.]+% yield=[0-9.]+% futex=[0-9.]+%' "$o")" -eq 2 ]
        }
        if command -v perf >/dev/null; then
            step mt-perf-smoke-5.0.1 mt_perf_smoke
        else
            echo "SKIP mt-perf-smoke-5.0.1: perf is not installed"
        fi
    fi
else
    echo "SKIP mpich-5.0.1: no MPICH 5.0.1 source (MPICH's release site could not be reached: set EFARM_MPICH_SOURCE_5_0_1 to its tarball or tree)"
fi

# ---- MPICH 4.3.2 with ch4:efarm ---------------------------------------------------------
# The same netmod against the current 4.x release (doc/MPICH-VERSIONS.md), with
# per-VCI critical sections (above). By default compile only
# (scripts/mpich-build.sh --compile-only: MPICH's full
# autogen from a git export and its configure, then the netmod's own files
# compiled against 4.3.2's headers): a cold 4.3.2 build and test/mpi over it took
# an estimated 20 minutes on a slow 2-core VM, more than CI's budget has room for.
# --mpich-4.3.2-tests builds and installs it in full and runs test/mpi over it;
# MPICH's own test-suite subset on 4.3.2 is run by hand (scripts/mpich-testsuite.sh
# --prefix PREFIX --source build/mpich/tree/mpich-4.0.2).
if [ -n "$src432" ] && [ "$full432" = yes ]; then
    bg_wait mpich-4.3.2-build
    if [ -x "$prefix432/bin/mpicc" ]; then
        suite mpi-4.3.2 env MPITEST_BUILD_DIR="$root/mpitest-4.3.2" \
            bash "$top/test/mpi/run-mpi-tests.sh" --prefix "$prefix432"
    fi
elif [ -n "$src432" ]; then
    bg_wait mpich-4.3.2-compile
    echo "SKIP mpi-4.3.2: MPICH 4.3.2 compiled against, not installed (scripts/test-all.sh --mpich-4.3.2-tests runs test/mpi over it)"
else
    echo "SKIP mpich-4.3.2: no MPICH 4.3.2 source (MPICH's release site could not be reached: set EFARM_MPICH_SOURCE_4_3_2 to its tarball or tree)"
fi

# ---- MPICH 5.0.1 with the global critical section: compiled against ---------------------
if [ -n "$src501" ]; then
    bg_wait mpich-5.0.1-global-compile
fi

echo "TIME test-all: $SECONDS s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
