#!/bin/bash
# Two-sided subprotocol sweep: the one-way latency (median of efarm-pingpong's
# round trips, halved) of every subprotocol forced by EFARM_PROTO, and of the
# selection policy (auto), at every size from 0 to 64 MiB: powers of two and
# the boundaries +-1 (one packet, the reference's 64 KiB and 1 MiB, and the
# medium and read thresholds of the policy in force, from efarm-info --policy).
# Prints the table with, per size, the best forced subprotocol and auto's
# ratio to it (marked when above 1.10), the ratio of the forced run of the
# subprotocol auto picked to the best (pick/best: the choice alone, without
# the noise of auto's own run), auto's 128 KiB / 64 KiB latency ratio,
# and writes build/bench/proto-sweep.png (gnuplot, when installed). The policy
# is whatever EFARM_PROFILE and the thresholds' tunables say in the caller's
# environment (auto: efasim's measured profile on efasim).
#
#   bench/run-proto-sweep.sh BUILD_DIR [--quick] [--runs N] [--max SIZE] [--bw]
#                            [--write-profile FILE [--measure-register]]
#
# With two CPUs or more, the server and client processes are pinned to CPUs 1
# and 0 (taskset): unpinned, the same subprotocol's median moved by up to 35%
# from one process pair to the next as the scheduler placed them.
#
# --bw: bandwidth instead of latency: efarm-pingpong --window 16 (16 messages in
# flight, then the server's 0-byte answer), MB/s = 16 x size / window time, the
# median window; the best forced is the highest, auto's ratio is best / auto
# (marked above 1.10); writes build/bench/proto-sweep-bw.png.
#
# --write-profile FILE: calibration. Writes the forced subprotocols' figures at
# the powers of two above one packet as a selection profile (EFARM_PROFILE=FILE then uses it;
# doc/PROTOCOL-SELECTION.md). --measure-register also times long-read with the
# registration cache off (EFARM_MR_CACHE=0) at 1, 4 and 16 MiB and writes the
# difference as the cost of registering (least squares, at least 0); without
# it the profile says registering costs nothing. With --bw, FILE must hold such
# a latency profile already: the stream costs of medium, long-CTS and long-read
# (us per message, 16 in flight) replace its 'stream' lines (the thresholds
# while sends to a peer are in flight come from them).
#
# --quick: sizes up to 2 MiB (or --max), a twentieth of the round trips (a
# smoke run: CI's). --runs N: the whole sweep N times, variants alternating
# size group by size group within each run, each run starting one variant
# later; each figure is the best (lowest) of the N. A forced subprotocol that cannot carry a size (eager above one
# packet, the long ones within one) leaves it to the policy; the table shows
# '-' there. Exits 1 if a forced subprotocol carried no size at all (the
# forcing is broken) or a run failed; timings are never judged here.
set -euo pipefail

build=${1:?usage: run-proto-sweep.sh BUILD_DIR [--quick] [--runs N] [--max SIZE]}
shift
quick=0 runs=1 max= profile_out= measure_reg=0 bw=0
while [ $# -gt 0 ]; do
    case $1 in
    --quick) quick=1; shift ;;
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --max) max=${2:?--max needs a size}; shift 2 ;;
    --write-profile) profile_out=${2:?--write-profile needs a file}; shift 2 ;;
    --measure-register) measure_reg=1; shift ;;
    --bw) bw=1; shift ;;
    -h | --help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run-proto-sweep: unknown argument $1" >&2; exit 2 ;;
    esac
done
top=$(cd "$(dirname "$0")/.." && pwd)
out=${EFARM_BUILD_ROOT:-$top/build}/bench
mkdir -p "$out"
pp=$build/tools/efarm-pingpong
export EFARM_DEVICE=sim EFARM_EFASIM_PATH=$build/src/efasim/.libs
[ -x "$pp" ] || { echo "run-proto-sweep: $pp not built" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/efarm-proto-sweep.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

tosize() { # 4K, 2M -> bytes
    case $1 in
    *K) echo $((${1%K} * 1024)) ;;
    *M) echo $((${1%M} * 1048576)) ;;
    *) echo "$1" ;;
    esac
}
if [ -n "$max" ]; then max=$(tosize "$max"); elif [ $quick = 1 ]; then max=2097152; else max=67108864; fi

# The largest eager message: probe the sizes around one MTU with the policy.
probe=$(seq -s, 8865 8928) # efarm-pingpong takes 64 sizes at most
fit=$("$pp" --sizes "$probe" --iters 1 | awk -F'|' '$2 ~ /eager/ {gsub(/ /, "", $1); f = $1} END {print f}')
[ -n "$fit" ] || { echo "run-proto-sweep: could not find the eager size" >&2; exit 1; }

# The policy's own thresholds (medium max, read min) in this environment.
info=$build/tools/efarm-info
policy=$("$info" --policy 2>/dev/null | grep -m1 'medium up to' || true)
pmed=$(sed -n 's/.*medium up to \([0-9]*\) B.*/\1/p' <<<"$policy")
pread=$(sed -n 's/.*reads from \([0-9]*\) B.*/\1/p' <<<"$policy")
profile_name=$("$info" --policy 2>/dev/null | sed -n 's/.*: profile \(.*\)$/\1/p' | head -1)

sizes="0"
for ((s = 1; s <= max; s *= 2)); do sizes+=" $s"; done
for b in "$fit" 65536 1048576 ${pmed:-} ${pread:-}; do
    for s in $((b - 1)) "$b" $((b + 1)); do [ "$s" -le "$max" ] && sizes+=" $s"; done
done
sizes=$(tr ' ' '\n' <<<"$sizes" | sort -n -u | tr '\n' ' ')
# Round trips per size group: up to the read size, and above it. One count (and
# warm-up) for every size up to 1 MiB + 1: sizes timed in different groups with
# different counts would differ by the measurement, not the subprotocol.
small='' large=''
for s in $sizes; do
    if [ "$s" -le 1048577 ]; then small+=${small:+,}$s; else large+=${large:+,}$s; fi
done
if [ $quick = 1 ]; then iters=(10 2); else iters=(200 20); fi
window=()
if [ $bw = 1 ]; then
    window=(--window 16)
    if [ $quick = 1 ]; then iters=(4 1); else iters=(50 5); fi
    if [ -n "$profile_out" ] && ! grep -q '^[a-z]* [0-9]' "$profile_out" 2>/dev/null; then
        echo "run-proto-sweep: --bw --write-profile $profile_out adds stream costs to a latency" \
            "profile: write it first (without --bw)" >&2
        exit 2
    fi
fi
tag=${window:+-bw}
variants=(auto eager medium longcts longread runtread)

# pp_run OUT ARGS...: one server/client pair (pinned to CPUs 1 and 0 when there are
# two), the client's output in OUT; the variant is in EFARM_PROTO.
pin=0
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null 2>&1; then pin=1; fi
pp_run() {
    local out=$1 status
    shift
    if [ $pin = 0 ]; then
        timeout 600 "$pp" "$@" >"$out" 2>&1
        return
    fi
    rm -f "$tmp/addr"
    timeout 600 taskset -c 1 "$pp" --server "$tmp/addr" >"$out.server" 2>&1 &
    timeout 600 taskset -c 0 "$pp" --client "$tmp/addr" "$@" >"$out" 2>&1
    status=$?
    wait $! || status=1
    return $status
}

nv=${#variants[@]}
for ((r = 1; r <= runs; r++)); do
    g=0
    for group in "$small" "$large"; do
        if [ -n "$group" ]; then
            # Each run starts the rotation one variant later: no variant always runs first.
            for ((k = 0; k < nv; k++)); do
                v=${variants[$(((k + r - 1) % nv))]}
                if ! EFARM_PROTO=$v pp_run "$tmp/$v.$r.$g" --sizes "$group" \
                    --iters "${iters[$g]}" "${window[@]}"; then
                    echo "run-proto-sweep: EFARM_PROTO=$v failed:" >&2
                    tail -n 20 "$tmp/$v.$r.$g" >&2
                    exit 1
                fi
                # Let the last run's processes finish tearing down (a 64 MiB buffer's
                # deregistration and unmapping) before the next variant is timed.
                sleep 0.3
                # variant bytes proto figure (median us; with --bw, minus MB/s so that
                # lower is better everywhere)
                awk -F'|' -v v="$v" -v bw=$bw 'NF >= 5 && $1 ~ /^ *[0-9]+ *$/ {
                    split($3, l, " "); gsub(/ /, "", $1); gsub(/ /, "", $2);
                    print v, $1, $2, bw ? -$4 : l[1] }' "$tmp/$v.$r.$g" >>"$tmp/all"
            done
        fi
        g=$((g + 1))
    done
done

# Best (lowest) median per variant and size; the subprotocol that carried it.
awk '{k = $1 " " $2} !(k in m) || $4 < m[k] {m[k] = $4; p[k] = $3}
    END {for (k in m) print k, p[k], m[k]}' "$tmp/all" | sort -k2,2n >"$tmp/best"
export fit
awk -v vlist="${variants[*]}" -v png="$out/proto-sweep$tag.dat" -v bw=$bw '
    BEGIN { n = split(vlist, V, " ") }
    { lat[$1, $2] = bw ? -$4 : $4; pro[$1, $2] = $3; if (!($2 in seen)) { seen[$2] = 1; S[++ns] = $2 } }
    END {
        printf "%9s | %-9s %9s", "bytes", "auto", bw ? "MB/s" : "us"
        for (i = 2; i <= n; i++) printf " | %9s", V[i]
        printf " | %-9s %9s | %s | %s\n", "best", bw ? "MB/s" : "us", "auto/best", "pick/best"
        over = 0; worst = 0
        for (j = 1; j <= ns; j++) {
            s = S[j]; best = ""; bl = 0
            printf "%9d | %-9s %9.2f", s, pro["auto", s], lat["auto", s]
            line = s " " lat["auto", s]
            for (i = 2; i <= n; i++) {
                v = V[i]
                if ((v, s) in lat && pro[v, s] == v) {
                    printf " | %9.2f", lat[v, s]; line = line " " lat[v, s]
                    if (best == "" || (bw ? lat[v, s] > bl : lat[v, s] < bl)) { best = v; bl = lat[v, s] }
                    carried[v]++
                } else { printf " | %9s", "-"; line = line " NaN" }
            }
            ratio = bl > 0 ? lat["auto", s] / bl : 1
            if (bw) ratio = lat["auto", s] > 0 ? bl / lat["auto", s] : 1
            mark = ratio > 1.10 ? "  > 10%" : ""
            if (ratio > 1.10) over++
            if (ratio > worst) { worst = ratio; ws = s }
            # The choice alone: the forced run of the subprotocol auto picked against the
            # best forced one (no run of auto itself in it; only where auto used one).
            pick = pro["auto", s]; cr = ""
            if ((pick, s) in lat && pro[pick, s] == pick && bl > 0) {
                cr = bw ? bl / lat[pick, s] : lat[pick, s] / bl
                nchoice++; if (cr > 1.10) cover++
            }
            printf " | %-9s %9.2f | %6.2f%s", best, bl, ratio, mark
            if (cr != "") printf " | %6.2f%s\n", cr, (cr > 1.10 ? "  > 10%" : ""); else printf " |\n"
            print line > png
            if (s == 65536) l64 = lat["auto", s]
            if (s == 131072) l128 = lat["auto", s]
        }
        printf "\nauto within 10%% of the best forced subprotocol at %d of %d sizes", ns - over, ns
        printf " (worst %.2fx at %d B)\n", worst, ws
        printf "auto picked a subprotocol within 10%% of the best forced one at %d of %d sizes" \
            " (pick/best: the forced run of its pick; sizes where auto used one)\n", nchoice - cover, nchoice
        if (l64 > 0 && l128 > 0 && !bw)
            printf "auto: latency at 128 KiB / 64 KiB = %.2f (target <= 1.5)\n", l128 / l64
        missing = ""
        for (i = 2; i <= n; i++) if (!(V[i] in carried)) missing = missing " " V[i]
        if (missing != "") { print "forced subprotocols that carried no size:" missing; exit 1 }
    }' "$tmp/best"
if [ $bw = 1 ]; then
    echo "bandwidth, MB/s of the median window of 16 messages, best of $runs run(s);" \
        "eager carries up to $fit B here; windows per size ${iters[*]} (<=1 MiB+1, above)"
else
    echo "one-way latency, median of each run's round trips / 2, best of $runs run(s);" \
        "eager carries up to $fit B here; round trips per size ${iters[*]} (<=1 MiB+1, above)"
fi
echo "policy: profile ${profile_name:-?}, medium up to ${pmed:-?} B, reads from ${pread:-?} B" \
    "(efarm-info --policy)"

# Calibration, bandwidth: the stream cost (us per message = bytes / MB/s) of medium,
# long-CTS and long-read forced, at the powers of two above one packet, replacing
# the profile's stream lines. Runting read is left out: in a window only the first
# message has runt budget.
if [ -n "$profile_out" ] && [ $bw = 1 ]; then
    {
        grep -v '^stream ' "$profile_out" | grep -v '^# stream:'
        echo "# stream: us per message with 16 in flight (bytes / MB/s), best of $runs run(s), $(date -u +%Y-%m-%d)"
        awk -v fit="$fit" 'function pow2(n) { while (n > 1 && n % 2 == 0) n /= 2; return n == 1 }
            ($1 == "medium" || $1 == "longcts" || $1 == "longread") && $1 == $3 && $2 > fit &&
            pow2($2) && $4 < 0 { printf "stream %s %s %.3f\n", $1, $2, $2 / -$4 }' \
            "$tmp/best" | sort -k2,2 -k3,3n
    } >"$tmp/profile"
    cp "$tmp/profile" "$profile_out"
    echo "profile: $profile_out ($(grep -c '^stream ' "$profile_out") stream points added)"
fi

# Calibration: the forced figures above one packet as a profile.
if [ -n "$profile_out" ] && [ $bw = 0 ]; then
    reg_base=0 reg_mib=0
    if [ $measure_reg = 1 ]; then
        for cache in 1 0; do
            EFARM_PROTO=longread EFARM_MR_CACHE=$cache pp_run "$tmp/reg.$cache" \
                --sizes 1M,4M,16M --iters "${iters[1]}"
        done
        # bytes extra-us per size, then a least-squares line, clamped at 0.
        read -r reg_base reg_mib < <(join <(awk -F'|' '$1 ~ /^ *[0-9]+ *$/ {split($3, l, " "); gsub(/ /, "", $1); print $1, l[1]}' "$tmp/reg.1" | sort) \
            <(awk -F'|' '$1 ~ /^ *[0-9]+ *$/ {split($3, l, " "); gsub(/ /, "", $1); print $1, l[1]}' "$tmp/reg.0" | sort) |
            awk '{x = $1 / 1048576; y = $3 - $2; n++; sx += x; sy += y; sxx += x * x; sxy += x * y}
                END {b = n * sxx - sx * sx ? (n * sxy - sx * sy) / (n * sxx - sx * sx) : 0
                     a = (sy - b * sx) / n; if (a < 0) a = 0; if (b < 0) b = 0; printf "%.2f %.3f\n", a, b}')
    fi
    {
        echo "# efarm selection profile: bench/run-proto-sweep.sh --write-profile, $(date -u +%Y-%m-%d)"
        echo "# one-way latency (us) of each subprotocol forced, best of $runs run(s), above one packet ($fit B)"
        echo "name calibrated-$(hostname -s 2>/dev/null || echo host)"
        if [ $measure_reg = 1 ]; then
            echo "register $reg_base $reg_mib   # measured: long-read with EFARM_MR_CACHE=0 minus with the cache"
        else
            echo "register 0 0   # not measured (--measure-register)"
        fi
        # Powers of two only: the +-1 sizes around a boundary would put wiggles of
        # noise between points a byte apart, and crossings in them.
        awk -v fit="$fit" 'function pow2(n) { while (n > 1 && n % 2 == 0) n /= 2; return n == 1 }
            $1 != "auto" && $1 != "eager" && $1 == $3 && $2 > fit && pow2($2) { print $1, $2, $4 }' \
            "$tmp/best" | sort -k1,1 -k2,2n
    } >"$profile_out"
    echo "profile: $profile_out ($(grep -c '^[a-z]* [0-9]' "$profile_out") points; EFARM_PROFILE=$profile_out uses it)"
fi

if command -v gnuplot >/dev/null 2>&1; then
    gnuplot <<EOF || echo "run-proto-sweep: gnuplot failed; the table above stands"
set terminal png size 1000,640
set output "$out/proto-sweep$tag.png"
set logscale xy
set xlabel "bytes"
set ylabel "$([ $bw = 1 ] && echo "bandwidth, MB/s (median window of 16)" || echo "one-way latency, us (median)")"
set key top left
set datafile missing "NaN"
plot for [i=2:$((${#variants[@]} + 1))] "$out/proto-sweep$tag.dat" using (\$1 > 0 ? \$1 : 0.5):i with linespoints title word("${variants[*]}", i - 1)
EOF
    echo "plot: $out/proto-sweep$tag.png"
fi
