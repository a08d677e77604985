#!/usr/bin/env bash
# efarm's protocol engine against libfabric's EFA provider, both on efasim: every
# case of interop.h (both directions, tagged and untagged, each size with the
# receive posted before and after arrival, plain and delivery complete, bursts;
# then one-sided writes, reads and atomics both ways) in several configurations
# of the libfabric side, with and without efasim faults.
#
#   test/interop/run-interop.sh BUILD_DIR [--libfabric PREFIX] [--label NAME]
#                               [--quick] [--only NAME[,NAME...]] [--timeout S]
#                               [--front-end verbs|kernel] [--efarm-rdma-core DIR]
#
# --front-end kernel: both processes on efasim's kernel front end, through the
# system's rdma-core (efarm with EFARM_DEVICE=efa), the path both take on EFA;
# by default efarm loads efasim's drop-in and libfabric finds it first on the path.
# A libfabric built against a later rdma-core (scripts/libfabric-build.sh
# --rdma-core) loads that one on the kernel front end (its RUNPATH); there its
# direct data path (libfabric 2.3 and later, on by default) writes the device's
# queues itself. On the drop-in, which has no queue memory, libfabric runs with
# FI_EFA_USE_DATA_PATH_DIRECT=0. --efarm-rdma-core DIR (an rdma-core-build.sh
# --out directory) runs efarm on the kernel front end through that rdma-core
# too: from 45 it sees RDMA write, which bookworm's 44 does not report.
#
# BUILD_DIR is a configured efarm tree with test/interop/interop-efarm and
# interop-fi built (make test/interop/interop-efarm test/interop/interop-fi) and
# efasim in src/efasim/.libs. --libfabric PREFIX runs interop-fi against the
# libfabric in PREFIX/lib (another build, e.g. scripts/libfabric-build.sh's)
# instead of the system's; --label names it in the output. Prints one
# "PASS NAME" / "FAIL NAME" line per configuration and ends with
# "N passed, N failed"; logs go to $EFARM_BUILD_ROOT/logs/interop (default
# build/logs/interop).
#
# efarm runs with EFARM_PROFILE=reference: the sizes below sit on the reference's
# thresholds (medium to 64 KiB, reads from 1 MiB), which libfabric also uses.
#
# Configurations (NAME: libfabric environment; what must be seen in both directions):
#   rdma     FI_EFA_USE_DEVICE_RDMA=1            eager, medium, long-CTS, long-read and DC;
#            every atomic libfabric's EFA provider carries (--atomics), both ways;
#            one-sided: (DC_)EAGER_RTW, RDMA read, (DC_)WRITE/FETCH/COMPARE_RTA both
#            ways, (DC_)LONGCTS_RTW and LONGREAD_RTW from libfabric, SHORT_RTR from efarm
#   runt     ... and FI_EFA_RUNT_SIZE=307200     runting read too
#   nordma   FI_EFA_USE_DEVICE_RDMA=0            long-CTS for every large message;
#            one-sided as rdma, but reads by SHORT_RTR both ways and no LONGREAD_RTW
#   rdmawrite  rdma, both processes on efasim with RDMA write (EFASIM_RDMA_WRITE=1):
#            everything still passes; where both offer RDMA write (below) every write
#            goes by RDMA write both ways (efarm's unless told to emulate)
#   readnack FI_EFA_USE_DEVICE_RDMA=1, efarm with EFASIM_MAX_MR=2: READ_NACK seen
#            (libfabric >= 1.20 only; SKIP with the reason otherwise)
#   readnackfi  the same with libfabric's registrations limited: libfabric's
#            receiver sends READ_NACK, efarm sends by long-CTS (>= 1.20)
#   refusals  one-sided refusals only, libfabric's MR cache off, RDMA write on:
#            every kind both ways, efarm's out-of-range RDMA writes too where both
#            write by RDMA
#   faults   rdma (one-sided too), with efasim loss 5%, duplication 5%, reordering
#            20%, delay 5%; efarm must have seen REQs out of order
#   selfcheck  interop-efarm told the wrong thing (no RDMA) must report a defect,
#            for a two-sided message and (rmaselfcheck) a one-sided read
set -u

usage() { sed -n '8,9p' "$0" | sed 's/^# \{0,1\}//'; }

build=${1:-}
[ -n "$build" ] && [ -d "$build" ] || { usage >&2; exit 2; }
build=$(cd "$build" && pwd)
shift
top=$(cd "$(dirname "$0")/../.." && pwd)
lfprefix=
label=
quick=no
only=
timeout_s=300
front_end=verbs
efarm_rdma_core=
while [ $# -gt 0 ]; do
    case $1 in
    --libfabric) lfprefix=$(cd "${2:?}" && pwd) || exit 2; shift 2 ;;
    --label) label=${2:?}; shift 2 ;;
    --quick) quick=yes; shift ;;
    --only) only=${2:?}; shift 2 ;;
    --timeout) timeout_s=${2:?}; shift 2 ;;
    --front-end) front_end=${2:?}; shift 2 ;;
    --efarm-rdma-core) efarm_rdma_core=$(cd "${2:?}" && pwd) || exit 2; shift 2 ;;
    *) usage >&2; exit 2 ;;
    esac
done
label=${label:-$( [ -n "$lfprefix" ] && echo "libfabric-$(basename "$lfprefix")" || echo "libfabric-system")}

efarm_bin=$build/test/interop/interop-efarm
fi_bin=$build/test/interop/interop-fi
simlib=$build/src/efasim/.libs
logs=${EFARM_BUILD_ROOT:-$top/build}/logs/interop
mkdir -p "$logs"
passed=0
failed=0

if [ ! -x "$efarm_bin" ] || [ ! -x "$fi_bin" ]; then
    echo "FAIL $label: interop programs not built in $build (make test/interop/interop-efarm test/interop/interop-fi; interop-fi needs libfabric-dev)"
    echo "0 passed, 1 failed"
    exit 1
fi

sizes=0,1,4096,8800,8850,8900,8928,8929,65535,65536,65537,1048575,1048576,16M
[ "$quick" = yes ] && sizes=0,1,8928,8929,65536,65537,1048576

# counter NAME LOG: the value of one of efarm's counters in a run's log (0 if absent).
counter() {
    awk -v n="$1" '$1 == n && $2 ~ /^[0-9]+$/ { v = $2 } END { print v + 0 }' "$2"
}

# first_complaint LOG: a crash's line, else the first error either side printed.
first_complaint() {
    { grep -m 1 'terminated with signal' "$1" || grep -m 1 -E '^interop(-efarm|-fi|\()' "$1"; } |
        cut -c 1-200
}

# run NAME FI-ENV EFARM-ARGS [CHECK]: one configuration; both sides under one timeout.
# CHECK, when given, is a function called with the log that prints a reason and
# returns nonzero when the run passed but did not show what the configuration is for.
run() {
    local name=$1 fienv=$2 efargs=$3 check=${4:-} log=$logs/$label-$1.log sock pe pf se sf why first
    case ",${only:-$name}," in *",$name,"*) ;; *) return ;; esac
    sock=$(mktemp -u "${TMPDIR:-/tmp}/efarm-interop.XXXXXX")
    {
        echo "# libfabric side: $fienv"
        echo "# efarm side: $efargs"
    } >"$log"
    # shellcheck disable=SC2086
    (
        eval "$efarm_env"
        exec env EFARM_PROFILE=reference $EFAULTS $EFARM_ENV \
            timeout -k 5 "$timeout_s" "$efarm_bin" --listen "$sock" --sizes "$sizes" $efargs
    ) >"$log.efarm" 2>&1 &
    pe=$!
    # shellcheck disable=SC2086
    (
        eval "$fienv_sim"
        [ -z "$lfprefix" ] || export LD_LIBRARY_PATH=$lf_libpath
        exec env $fienv $EFAULTS timeout -k 5 "$timeout_s" "$fi_bin" --connect "$sock"
    ) >"$log.fi" 2>&1 &
    pf=$!
    wait $pe; se=$?
    wait $pf; sf=$?
    { echo "## interop-efarm (exit $se)"; cat "$log.efarm"; echo "## interop-fi (exit $sf)"; cat "$log.fi"; } >>"$log"
    rm -f "$log.efarm" "$log.fi" "$sock"
    why=
    if [ $se -eq 0 ] && [ $sf -eq 0 ] && [ -n "$check" ]; then
        why=$("$check" "$log") || { se=99; echo "# check: $why" >>"$log"; }
    fi
    if [ $se -eq 0 ] && [ $sf -eq 0 ]; then
        echo "PASS $label/$name: $(grep -E '^(one-sided )?(libfabric->efarm|efarm->libfabric):' "$log" | tr '\n' ' ')"
        passed=$((passed + 1))
    else
        # The first complaint on the FAIL line itself: summaries may keep only that line.
        first=$(first_complaint "$log")
        echo "FAIL $label/$name (efarm exit $se, libfabric exit $sf${why:+: $why}; log $log)${first:+: $first}"
        grep -E 'interop|FAIL|error|Error' "$log" | head -n 15 | sed 's/^/    /'
        failed=$((failed + 1))
    fi
}

# The environment under which an unmodified libfabric program runs on efasim
# (efasim's libraries first, its sysfs view, libfabric's shm transfer off).
case $front_end in
verbs) env_arg=--env ;;
kernel) env_arg=--env=kernel ;;
*) usage >&2; exit 2 ;;
esac
fienv_sim=$("$build/tools/efasim-info" $env_arg) || {
    echo "FAIL $label: $build/tools/efasim-info $env_arg failed"
    echo "0 passed, 1 failed"
    exit 1
}
# efarm's side: its own loader picks efasim's drop-in, or the system's rdma-core
# under the kernel front end's environment.
if [ "$front_end" = kernel ]; then
    efarm_env="$fienv_sim
export EFARM_DEVICE=efa"
    [ -z "$efarm_rdma_core" ] || efarm_env="$efarm_env
export LD_LIBRARY_PATH='$efarm_rdma_core/build/lib'"
else
    efarm_env="export EFARM_DEVICE=sim EFARM_EFASIM_PATH='$simlib'"
fi
# Another libfabric's libraries, after efasim's drop-in where it is used.
lf_libpath=$lfprefix/lib:$lfprefix/lib64
[ "$front_end" = kernel ] || lf_libpath=$simlib:$lf_libpath
# The drop-in has no queue memory for libfabric's direct data path.
[ "$front_end" = kernel ] || fienv_sim="$fienv_sim
export FI_EFA_USE_DATA_PATH_DIRECT=0"

# libfabric's version, for the configurations that need a newer one.
fi_info_bin=fi_info
[ -z "$lfprefix" ] || fi_info_bin=$lfprefix/bin/fi_info
fi_version=$("$fi_info_bin" --version 2>/dev/null | sed -n 's/^libfabric: \([0-9]*\.[0-9]*\).*/\1/p')
fi_at_least() { # MAJOR.MINOR
    [ -n "$fi_version" ] && [ "$(printf '%s\n%s\n' "$1" "$fi_version" | sort -V | head -n 1)" = "$1" ]
}

check_reordered() { # the faults reached efarm: REQs arrived out of order
    [ "$(counter out_of_order "$1")" -gt 0 ] || { echo "no REQ arrived out of order: were efasim's faults on?"; return 1; }
}
check_read_nack() {
    [ "$(counter read_nacks_sent "$1")" -gt 0 ] || { echo "efarm sent no READ_NACK"; return 1; }
}
check_read_nack_recv() {
    [ "$(counter read_nacks_recv "$1")" -gt 0 ] || { echo "libfabric sent efarm no READ_NACK"; return 1; }
}
# selfcheck NAME EFARM-ARGS PATTERN WHAT: the checker can fail. Told libfabric uses no
# RDMA while it has RDMA read, interop-efarm must report what it sees (long-read
# messages, reads by RDMA) as a subprotocol the sender may not pick: its log must
# match PATTERN, and it must fail.
selfcheck() {
    local name=$1 efargs=$2 pattern=$3 what=$4 log=$logs/$label-$1.log sock pe se sf first
    case ",${only:-$name}," in *",$name,"*) ;; *) return ;; esac
    sock=$(mktemp -u "${TMPDIR:-/tmp}/efarm-interop.XXXXXX")
    # shellcheck disable=SC2086
    env EFARM_DEVICE=sim EFARM_PROFILE=reference EFARM_EFASIM_PATH="$simlib" timeout -k 5 "$timeout_s" "$efarm_bin" \
        --listen "$sock" --fi-rdma 0 $efargs >"$log" 2>&1 &
    pe=$!
    (
        eval "$fienv_sim"
        [ -z "$lfprefix" ] || export LD_LIBRARY_PATH=$lf_libpath
        exec env FI_EFA_USE_DEVICE_RDMA=1 timeout -k 5 "$timeout_s" "$fi_bin" --connect "$sock"
    ) >>"$log" 2>&1
    sf=$?
    wait $pe
    se=$?
    echo "## interop-efarm exit $se, interop-fi exit $sf" >>"$log"
    if [ $se -ne 0 ] && grep -q "$pattern" "$log"; then
        echo "PASS $label/$name: $what is reported"
        passed=$((passed + 1))
    else
        # Which subprotocols each case saw, and both exits: enough to tell a
        # checker that missed the defect from a run that never got that far.
        first=$(first_complaint "$log")
        echo "FAIL $label/$name: interop-efarm did not report $what (efarm exit $se, libfabric exit $sf; log $log)${first:+: $first}"
        grep -E 'interop|^(libfabric->efarm|efarm->libfabric|one-sided)|_RTM|_RTR|HANDSHAKE' "$log" |
            head -n 20 | sed 's/^/    /'
        failed=$((failed + 1))
    fi
    rm -f "$sock"
}

base="eager,medium,longcts,dc_eager,dc_medium,dc_longcts"
# One-sided: what both sides start in every configuration, and what libfabric
# sends for writes longer than a packet (long-CTS; long-read from 64 KiB with RDMA
# read). Without RDMA read libfabric reads more than one READRSP holds by
# LONGCTS_RTR (nordma reads 20000 B and 1 MiB); with RDMA read a read of any size
# is the device's, so the RDMA configurations read 1 MiB too.
rma_base="eager_rtw,dc_eager_rtw,write_rta,dc_write_rta,fetch_rta,compare_rta,fi:longcts_rtw,fi:dc_longcts_rtw"
# efarm writes more than EFARM_MEDIUM_MAX by LONGCTS_RTW (DC_ for delivery
# complete) and from EFARM_READ_MIN by LONGREAD_RTW when both sides have RDMA read;
# its emulated reads longer than one READRSP are one LONGCTS_RTR each.
rma_long="efarm:longcts_rtw,efarm:dc_longcts_rtw,efarm:longcts_rtr"
rma_rdma="--rma --rma-fi 1,4096,8884:d,8892:w,8903:r,20000:wd,65536:wd,1M --expect-rma $rma_base,$rma_long,longread_rtw,direct_read,efarm:short_rtr"
EFAULTS=
EFARM_ENV=
run rdma "FI_EFA_USE_DEVICE_RDMA=1" "--fi-rdma 1 --expect $base,longread $rma_rdma --atomics --ranges --writedata --refusals fi,reads"
run runt "FI_EFA_USE_DEVICE_RDMA=1 FI_EFA_RUNT_SIZE=307200" "--fi-rdma 1 --fi-runt 307200 --expect $base,longread,runtread"
run nordma "FI_EFA_USE_DEVICE_RDMA=0" "--fi-rdma 0 --expect $base --rma --rma-fi 1,4096,8884:d,8892:w,8903:r,20000,65536:wd,1M --expect-rma $rma_base,$rma_long,short_rtr,fi:longcts_rtr --ranges --writedata --refusals fi"
# A device with RDMA write under both. libfabric offers RDMA write in its HANDSHAKE
# only from 1.18 and only when built against an rdma-core that has
# EFADV_DEVICE_ATTR_CAPS_RDMA_WRITE (45 and later): Debian's 1.17 does not, nor a
# build against bookworm's rdma-core 44; scripts/libfabric-build.sh records what its
# build has (PREFIX/share/libfabric/efa-features.txt), and
# EFARM_INTEROP_FI_RDMA_WRITE=1 says so for another. efarm has it on the drop-in,
# and on the kernel front end only through an rdma-core from 45
# (--efarm-rdma-core). Where both have it each writes to the other by RDMA write;
# where only libfabric has it, libfabric from 2.5 shows IC_BUG_WRITE_BUF_UNREADABLE
# (test/interop/interop.h): efarm answers READ_NACK and the data comes by long-CTS.
rw=0 rma_rw=$rma_rdma
if fi_at_least 1.18 && { [ "${EFARM_INTEROP_FI_RDMA_WRITE:-0}" = 1 ] ||
    grep -q '^HAVE_CAPS_RDMA_WRITE  *1 ' "$lfprefix/share/libfabric/efa-features.txt" 2>/dev/null; }; then
    rw=1
    if [ "$front_end" = verbs ] || [ -n "$efarm_rdma_core" ]; then
        # Both write by RDMA: libfabric every write; efarm where not told to emulate.
        rma_rw="--rma --rma-fi 1,4096,8884:d,8892:w,8903:r,20000:wd,65536:wd,1M --expect-rma direct_write,efarm:eager_rtw,efarm:dc_eager_rtw,write_rta,dc_write_rta,fetch_rta,compare_rta,$rma_long,efarm:longread_rtw,direct_read,efarm:short_rtr --refusals fi,reads,efarm-writes"
    fi
fi
EFARM_ENV="EFASIM_RDMA_WRITE=1"
run rdmawrite "FI_EFA_USE_DEVICE_RDMA=1 EFASIM_RDMA_WRITE=1" "--fi-rdma 1 --fi-rdma-write $rw --expect $base,longread $rma_rw --ranges --writedata"
# Unsolicited write receive (protocol v4's extra feature 8): on a device with it
# (EFASIM_UNSOLICITED_WRITE_RECV=1, which needs RDMA write) libfabric from 1.22,
# built against an rdma-core that has EFADV_DEVICE_ATTR_CAPS_UNSOLICITED_WRITE_RECV,
# creates its QP so and advertises bit 8, and so does efarm where its rdma-core can
# ask for it (efasim's drop-in, or --efarm-rdma-core). unsolicited: both sides'
# devices offer it, both QPs take writes with immediate unsolicited, and writes
# with CQ data go by RDMA write both ways. unsolicitedfi: only libfabric's device
# offers it; the two disagree, so both write CQ data emulated (libfabric's
# EAGER_RTW proves its side: its plain writes go by RDMA write), plain writes by
# RDMA still. The per-case check allows an RDMA write for CQ data only where they
# agree.
if [ $rw = 1 ] && fi_at_least 1.22 &&
    grep -q '^HAVE_CAPS_UNSOLICITED_WRITE_RECV  *1 ' "$lfprefix/share/libfabric/efa-features.txt" 2>/dev/null &&
    { [ "$front_end" = verbs ] || [ -n "$efarm_rdma_core" ]; }; then
    uw="--fi-rdma 1 --fi-rdma-write 1 --fi-unsolicited 1 --no-msg --rma-fi 4096:w --rma-efarm 4096:w --writedata"
    EFARM_ENV="EFASIM_RDMA_WRITE=1 EFASIM_UNSOLICITED_WRITE_RECV=1"
    run unsolicited "FI_EFA_USE_DEVICE_RDMA=1 EFASIM_RDMA_WRITE=1 EFASIM_UNSOLICITED_WRITE_RECV=1" \
        "$uw --expect-rma direct_write,efarm:eager_rtw,efarm:dc_eager_rtw,efarm:longcts_rtw"
    # libfabric 1.22 to 2.3 refuse such a write (FI_EOPNOTSUPP, "Inconsistent
    # support status detected on unsolicited write recv") where 2.4 and later
    # emulate it.
    if fi_at_least 2.4; then
        EFARM_ENV="EFASIM_RDMA_WRITE=1 EFASIM_UNSOLICITED_WRITE_RECV=0"
        run unsolicitedfi "FI_EFA_USE_DEVICE_RDMA=1 EFASIM_RDMA_WRITE=1 EFASIM_UNSOLICITED_WRITE_RECV=1" \
            "$uw --expect-rma direct_write,fi:eager_rtw,fi:dc_eager_rtw,fi:longcts_rtw,efarm:eager_rtw,efarm:dc_eager_rtw,efarm:longcts_rtw"
    else
        echo "SKIP $label/unsolicitedfi: libfabric $fi_version refuses fi_writedata (FI_EOPNOTSUPP) toward a peer that differs on unsolicited write recv; 2.4 and later emulate it"
    fi
    EFARM_ENV="EFASIM_RDMA_WRITE=1" # as the refusals below need it
else
    echo "SKIP $label/unsolicited: needs a libfabric from 1.22 built with unsolicited write receive and RDMA write (efa-features.txt), and efarm with RDMA write"
    echo "SKIP $label/unsolicitedfi: the same"
fi
# Every refusal, efarm's RDMA writes out of range and on the read-only region too:
# only with libfabric's MR cache off, whose widened keys (IC_BUG_MR_CACHE_WIDENS)
# would let such a write land in libfabric's own memory.
refuse=fi,reads
[ "$rma_rw" = "$rma_rdma" ] || refuse=$refuse,efarm-writes,efarm-write-ranges
run refusals "FI_EFA_USE_DEVICE_RDMA=1 EFASIM_RDMA_WRITE=1 FI_EFA_MR_CACHE_ENABLE=0" \
    "--fi-rdma 1 --fi-rdma-write $rw --no-msg --rma-fi 64 --rma-efarm 64 --refusals $refuse"
EFARM_ENV=
if fi_at_least 1.20; then
    # efarm's endpoint holds the only two registrations efasim allows: its receive
    # side cannot register the buffer of a long-read message and answers READ_NACK
    # (libfabric >= 1.20 has it); its read sends fall back to long-CTS.
    EFARM_ENV="EFASIM_MAX_MR=2"
    run readnack "FI_EFA_USE_DEVICE_RDMA=1" "--fi-rdma 1 --read-nack --no-bursts" check_read_nack
    EFARM_ENV=
    # The other way: libfabric's receiver cannot register a long-read message's buffer
    # (libfabric with efasim's registrations limited) and answers READ_NACK; efarm
    # sends the message again by long-CTS.
    run readnackfi "FI_EFA_USE_DEVICE_RDMA=1 EFASIM_MAX_MR=2" \
        "--fi-rdma 1 --read-nack --no-bursts" check_read_nack_recv
else
    echo "SKIP $label/readnack: libfabric ${fi_version:-(unknown version)} has no READ_NACK (it came with 1.20)"
    echo "SKIP $label/readnackfi: libfabric ${fi_version:-(unknown version)} has no READ_NACK (it came with 1.20)"
fi
EFAULTS="EFASIM_LOSS=0.05 EFASIM_DUP=0.05 EFASIM_REORDER=0.2 EFASIM_DELAY=0.05 EFASIM_DELAY_US=500"
run faults "FI_EFA_USE_DEVICE_RDMA=1" "--fi-rdma 1 --expect $base,longread $rma_rdma --writedata" check_reordered
EFAULTS=
selfcheck selfcheck "--sizes 1048576 --no-bursts --no-dc" 'subprotocol longread .* allowed longcts' \
    "a long-read message where only long-CTS was allowed"
selfcheck rmaselfcheck "--no-msg --rma-fi 4096:r --rma-efarm 4096:r" \
    'subprotocol direct_read in 0 REQ(s), allowed short_rtr' \
    "a one-sided read by RDMA where only SHORT_RTR was allowed"

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
