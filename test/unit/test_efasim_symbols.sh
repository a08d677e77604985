#!/bin/sh
# efasim's exported symbols and version nodes against Debian's rdma-core.
#
#   sh test/unit/test_efasim_symbols.sh EFASIM_LIBDIR [ELF...]
#
# A binary built against Debian's libibverbs/libefa binds to efasim only if
# every (symbol, version) it imports exists in efasim's libraries with exactly
# that version. Checked with objdump -T:
#   - every symbol the system's libibverbs.so.1 / libefa.so.1 export at a
#     public version node (default version) efasim exports at the same node;
#   - libefa's nodes of rdma-core 64 beyond the system's (EFA_1.3 to EFA_1.6,
#     the table below) efasim exports too, each symbol at its node, and
#     defines each node with 64's parent (objdump -p), so that binaries built
#     against rdma-core 64 (libfabric 2.6) bind;
#   - efasim exports nothing public at a version that neither the system
#     library nor that table uses for the symbol;
#   - every IBVERBS_*/EFA_* import of the installed binaries and libraries
#     that link libibverbs.so.1 or libefa.so.1 (librdmacm, libfabric,
#     ibverbs-utils, ...), and of each ELF named after EFASIM_LIBDIR (such as
#     a libfabric built against rdma-core 64), is exported by efasim.
# Private nodes are skipped (IBVERBS_PRIVATE_*: rdma-core's providers), except
# the imports of installed binaries, which must all resolve; rdma-core's own
# providers (libmlx5 and the like, which import its private driver ABI) are not
# programs and are left out. Prints PASS/FAIL
# lines and "N passed, N failed"; exits 77 without objdump or the system
# libraries.
set -u

if [ $# -lt 1 ]; then
    echo "usage: $0 EFASIM_LIBDIR [ELF...]" >&2
    exit 2
fi
libdir=$1
shift
npass=0
nfail=0
pass() {
    npass=$((npass + 1))
    echo "PASS $1"
}
fail() {
    nfail=$((nfail + 1))
    echo "FAIL $1: $2"
}

if ! command -v objdump >/dev/null 2>&1; then
    echo "SKIP symbols: objdump (binutils) not installed"
    exit 77
fi
sys_lib() { # SONAME: path of the system's copy
    ldconfig -p 2>/dev/null | awk -v so="$1" '$1 == so && /x86-64|64bit|x32/ {print $NF; exit}'
}
sys_verbs=$(sys_lib libibverbs.so.1)
sys_efa=$(sys_lib libefa.so.1)
if [ -z "$sys_verbs" ] || [ -z "$sys_efa" ]; then
    echo "SKIP symbols: the system's libibverbs.so.1/libefa.so.1 not found (ldconfig -p)"
    exit 77
fi
for f in libibverbs.so.1 libefa.so.1; do
    if [ ! -e "$libdir/$f" ]; then
        echo "$0: no $f in $libdir" >&2
        exit 2
    fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_efasim_symbols.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' HUP INT PIPE TERM
: >"$tmp/elfs" # the ELF files named after EFASIM_LIBDIR, one a line
for f in "$@"; do
    printf '%s\n' "$f" >>"$tmp/elfs"
done

# defs LIB: "symbol version" per defined function or object; a hidden
# (non-default) version is written "(version)" by objdump and kept so.
defs() {
    objdump -T "$1" | awk '$0 !~ /\*UND\*/ && ($3 == "DF" || $3 == "DO") && NF >= 7 {
        print $NF, $(NF - 1) }' | sort -u
}
# imports BIN: "symbol version" per import from an IBVERBS_* or EFA_* node.
imports() {
    objdump -T "$1" 2>/dev/null | awk '/\*UND\*/ && $(NF - 1) ~ /^\((IBVERBS|EFA)_/ {
        v = $(NF - 1); gsub(/[()]/, "", v); print $NF, v }' | sort -u
}

# rdma-core 64's libefa nodes beyond 44's (providers/efa/libefa.map of rdma-core
# 64.0): symbol, node, the node it inherits.
efa64_nodes='efadv_query_mr EFA_1.3 EFA_1.2
efadv_query_cq EFA_1.4 EFA_1.3
efadv_query_qp_wqs EFA_1.4 EFA_1.3
efadv_get_max_rq_depth EFA_1.5 EFA_1.4
efadv_get_max_sq_depth EFA_1.5 EFA_1.4
efadv_qp_from_ibv_qp_ex EFA_1.6 EFA_1.5'
echo "$efa64_nodes" | awk '{ print $1, $2 }' | sort -u >"$tmp/efa64.syms"
echo "$efa64_nodes" | awk '{ print $2, $3 }' | sort -u >"$tmp/efa64.parents"
: >"$tmp/extra_ok.libibverbs.so.1"
# The nodes' own symbols (objdump lists a node as a symbol of its name) and the functions.
echo "$efa64_nodes" | awk '{ print $2, $2 }' | sort -u - "$tmp/efa64.syms" >"$tmp/extra_ok.libefa.so.1"

# parents LIB: "node parent" per version definition that names a parent.
parents() {
    objdump -p "$1" | awk '/^Version definitions:/ { on = 1; next }
        on && /^$/ { exit }
        on && NF >= 4 { node = $4; next }
        on && NF == 1 { print node, $1 }' | sort -u
}

for pair in "libibverbs.so.1 $sys_verbs" "libefa.so.1 $sys_efa"; do
    set -- $pair
    name=$1
    defs "$2" >"$tmp/sys.$name"
    defs "$libdir/$name" >"$tmp/sim.$name"
    # System exports at a public node, default version (no parentheses).
    awk '$2 !~ /^\(/ && $2 !~ /PRIVATE/' "$tmp/sys.$name" >"$tmp/want.$name"
    comm -23 "$tmp/want.$name" "$tmp/sim.$name" >"$tmp/missing.$name"
    if [ -s "$tmp/missing.$name" ]; then
        fail "$name exports" "$(wc -l <"$tmp/missing.$name") missing or at another version: $(
            tr '\n' ' ' <"$tmp/missing.$name" | cut -c1-400)"
    else
        pass "$name exports every public symbol of $2 at its version ($(wc -l <"$tmp/want.$name"))"
    fi
    # efasim's public exports must be versions the system library (or rdma-core 64's
    # libefa, the table above) has for them.
    awk '$2 !~ /EFASIM_PRIVATE/' "$tmp/sim.$name" >"$tmp/ours.$name"
    sed 's/[()]//g' "$tmp/sys.$name" | sort -u - "$tmp/extra_ok.$name" >"$tmp/sysany.$name"
    comm -23 "$tmp/ours.$name" "$tmp/sysany.$name" >"$tmp/extra.$name"
    if [ -s "$tmp/extra.$name" ]; then
        fail "$name versions" "exported at a version the system library does not use: $(
            tr '\n' ' ' <"$tmp/extra.$name" | cut -c1-400)"
    else
        pass "$name invents no symbol version"
    fi
done

# rdma-core 64's libefa nodes: each symbol at its node (default version), each node
# defined with 64's parent.
comm -23 "$tmp/efa64.syms" "$tmp/sim.libefa.so.1" >"$tmp/missing64"
if [ -s "$tmp/missing64" ]; then
    fail "libefa.so.1 rdma-core 64 nodes" "missing or at another version: $(
        tr '\n' ' ' <"$tmp/missing64" | cut -c1-400)"
else
    pass "libefa.so.1 exports rdma-core 64's EFA_1.3 to EFA_1.6 ($(wc -l <"$tmp/efa64.syms") symbols)"
fi
parents "$libdir/libefa.so.1" >"$tmp/sim.parents"
comm -23 "$tmp/efa64.parents" "$tmp/sim.parents" >"$tmp/badparents"
if [ -s "$tmp/badparents" ]; then
    fail "libefa.so.1 node parents" "not defined so (node parent): $(
        tr '\n' ' ' <"$tmp/badparents" | cut -c1-400)"
else
    pass "libefa.so.1 defines EFA_1.3 to EFA_1.6 each on its predecessor, as rdma-core 64"
fi

# Every installed ELF that links libibverbs.so.1 or libefa.so.1 must bind.
sort -u "$tmp/sim.libibverbs.so.1" "$tmp/sim.libefa.so.1" >"$tmp/sim.all"
nbin=0
for dir in /usr/bin /usr/sbin /usr/lib/x86_64-linux-gnu; do
    [ -d "$dir" ] || continue
    for f in "$dir"/*; do
        [ -f "$f" ] && [ ! -L "$f" ] || continue
        case $f in */libibverbs.so.* | */libefa.so.*) continue ;; esac
        grep -qs -e libibverbs.so.1 -e libefa.so.1 "$f" || continue
        objdump -p "$f" 2>/dev/null | grep -Eq 'NEEDED +(libibverbs|libefa)\.so\.1' || continue
        imports "$f" >"$tmp/imp"
        # rdma-core's own providers (libmlx5, libmana, ...) are built into the real
        # libibverbs through its private driver ABI; they are not programs efasim serves.
        grep -q '^_verbs_init_and_alloc_context ' "$tmp/imp" && continue
        nbin=$((nbin + 1))
        comm -23 "$tmp/imp" "$tmp/sim.all" >"$tmp/unbound"
        if [ -s "$tmp/unbound" ]; then
            fail "binds $f" "$(tr '\n' ' ' <"$tmp/unbound" | cut -c1-400)"
        else
            pass "binds $f ($(wc -l <"$tmp/imp") imports)"
        fi
    done
done
if [ "$nbin" -eq 0 ]; then
    echo "SKIP binds: no installed binary links libibverbs.so.1 or libefa.so.1"
fi
# The ELF files named on the command line must bind too.
while IFS= read -r f; do
    if [ ! -f "$f" ]; then
        fail "binds $f" "no such file"
        continue
    fi
    imports "$f" >"$tmp/imp"
    comm -23 "$tmp/imp" "$tmp/sim.all" >"$tmp/unbound"
    if [ ! -s "$tmp/imp" ]; then
        fail "binds $f" "imports nothing from IBVERBS_* or EFA_* nodes"
    elif [ -s "$tmp/unbound" ]; then
        fail "binds $f" "$(tr '\n' ' ' <"$tmp/unbound" | cut -c1-400)"
    else
        pass "binds $f ($(wc -l <"$tmp/imp") imports)"
    fi
done <"$tmp/elfs"

echo "$npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
