#!/usr/bin/env bash
# Check that the code names a document mentions exist, so that a renamed
# function or a moved file cannot leave the document stale without notice.
#
#   scripts/check-doc-names.sh [--tree DIR]... FILE.md...
#
# What is checked, inside `backticks` and in fenced blocks (pictures, code):
#   - a path with a slash (src/proto/tm.c, doc/NETMOD.md): it exists in this
#     tree, under /usr/include (infiniband/efadv.h), or in a --tree DIR
#     (MPICH's paths, and its tests by their name in its test suite,
#     coll/oplxor; without a --tree, a path whose directory is not here
#     is counted as unchecked); absolute paths (device nodes) and globs are
#     left alone;
#   - a bare file name (tm.c, efarm_send.h, errnames.txt): some file of this
#     tree (git's list, or the working tree outside a clone) has that name;
#   - every identifier with an underscore (efarm_ep_progress, EFARM_RECVWIN,
#     MPIDI_NM_mpi_isend, ibv_wr_send): it is a word of this tree's code
#     (C, headers, scripts, build files, generated doc/TUNABLES.md; not the
#     other documents), or a name that code pastes ("efarm_nm_" #name and
#     recv_msgs: efarm_nm_recv_msgs), or a word of a --tree DIR, or of
#     rdma-core's installed headers.
#     A name that is not efarm's (no "efarm"/"efasim" in it) is only checked
#     when a --tree names where it comes from (MPICH's source); without one it
#     is counted as unchecked. A name ending in "_" is a prefix and skipped.
#   - a tool name with a dash (efarm-info): a file of this tree carries it.
# Prints each missing name with its file and line; exits 1 if any is missing.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
trees=()
docs=()
while [ $# -gt 0 ]; do
    case $1 in
    --tree) trees+=("${2:?--tree needs a directory}"); shift 2 ;;
    -h | --help) sed -n '2,24p' "$0"; exit 0 ;;
    -*) echo "check-doc-names: unknown option $1" >&2; exit 2 ;;
    *) docs+=("$1"); shift ;;
    esac
done
[ ${#docs[@]} -gt 0 ] || { echo "usage: scripts/check-doc-names.sh [--tree DIR]... FILE.md..." >&2; exit 2; }
for t in "${trees[@]}"; do
    [ -d "$t" ] || { echo "check-doc-names: --tree $t: no such directory" >&2; exit 2; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# This tree's files: git's list in a clone, else every file but build output.
if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$top" ls-files >"$work/files"
else
    (cd "$top" && find . -path ./build -prune -o -path ./.git -prune -o -type f -print | sed 's|^\./||') >"$work/files"
fi
grep -E '\.(c|h|sh|am|mk|m4|ac|lua|py|txt|in)$|^scripts/|^\.ci/|^doc/TUNABLES\.md$' "$work/files" |
    grep -v '\.md$\|^doc/TUNABLES\.md$' >"$work/code" || true
grep -qx 'doc/TUNABLES.md' "$work/files" && echo doc/TUNABLES.md >>"$work/code"
sed 's|.*/||' "$work/files" | sort -u >"$work/basenames"

# Every `span` of every document, as FILE:LINE<TAB>span.
for d in "${docs[@]}"; do
    [ -f "$d" ] || { echo "check-doc-names: $d: no such file" >&2; exit 2; }
    awk -v f="$d" '
        /^```/ { fence = !fence; next }
        fence { print f ":" NR "\t" $0 " "; next }
        {
        line = $0
        while (match(line, /`[^`]+`/)) {
            print f ":" NR "\t" substr(line, RSTART + 1, RLENGTH - 2)
            line = substr(line, RSTART + RLENGTH)
        }
    }' "$d"
done >"$work/spans"

# Sort each span's names into paths, file names, identifiers and dash names
# (FILE:LINE<TAB>name in each list). Identifiers are taken anywhere in a span
# but after a dash (option names such as --with-device are not code names).
awk -F'\t' -v dir="$work" '
    function out(list, name) { print $1 "\t" name > (dir "/" list) }
    {
        span = $2
        if (span ~ /[ *<]|\.\./ || span ~ /^[-\/]/) {
            # code or prose: only its identifiers
        } else if (span ~ /\//) {
            sub(/\/$/, "", span); sub(/:.*/, "", span); out("paths", span); next
        } else if (span ~ /\.(c|h|md|sh|txt|m4|mk|am|lua|py)$/) {
            out("bare", span); next
        } else if (span ~ /^(efarm|efasim)-[a-z0-9-]+$/) {
            out("dashed", span)
        }
        rest = $2
        # A picture (a fenced line) or a snippet: its file names too.
        while (match(rest, /[A-Za-z0-9_.\/-]+\.[ch][^A-Za-z0-9_]/)) {
            w = substr(rest, RSTART, RLENGTH - 1)
            rest = substr(rest, RSTART + RLENGTH - 1)
            if (w ~ /^\./)
                continue
            out(w ~ /\// ? "paths" : "bare", w)
        }
        rest = $2
        while (match(rest, /[A-Za-z_][A-Za-z0-9_]*/)) {
            w = substr(rest, RSTART, RLENGTH)
            before = RSTART > 1 ? substr(rest, RSTART - 1, 1) : ""
            rest = substr(rest, RSTART + RLENGTH)
            # after a dash: an option; before .c or .h: the stem of a file name
            if (before ~ /[-0-9]/ || rest ~ /^\.[ch]$/ || rest ~ /^\.[ch][^A-Za-z0-9_]/ ||
                w !~ /_/ || w ~ /^_|_$/)
                continue
            out("idents", w)
        }
    }' "$work/spans"
for l in paths bare idents dashed; do touch "$work/$l"; done

missing=0 checked=0 unchecked=0
miss() { # WHERE WHAT NAME
    echo "check-doc-names: $1: $2 \`$3\` not found"
    missing=$((missing + 1))
}

while IFS=$'\t' read -r where p; do
    checked=$((checked + 1))
    [ -e "$top/$p" ] || [ -e "/usr/include/$p" ] && continue
    if [ ${#trees[@]} -eq 0 ] && [ ! -d "$top/$(dirname "$p")" ]; then
        # Not here: maybe MPICH's (src/mpid/...), which only a --tree can tell.
        checked=$((checked - 1)) unchecked=$((unchecked + 1))
        continue
    fi
    found=
    for t in "${trees[@]}"; do
        # MPICH's tests are named by their place in its test suite (coll/oplxor).
        [ -e "$t/$p" ] || [ -e "$t/test/mpi/$p" ] || [ -e "$t/test/mpi/$p.c" ] && found=1 && break
    done
    [ -n "$found" ] || miss "$where" "path" "$p"
done <"$work/paths"

while IFS=$'\t' read -r where b; do
    checked=$((checked + 1))
    grep -qxF "$b" "$work/basenames" && continue
    found=
    for t in "${trees[@]}"; do
        [ -n "$(find "$t" -name "$b" -print -quit 2>/dev/null)" ] && found=1 && break
    done
    [ -n "$found" ] || miss "$where" "file" "$b"
done <"$work/bare"

# Identifiers: one pass over this tree's code, one over the other trees.
cut -f2 "$work/idents" | sort -u >"$work/names"
(cd "$top" && xargs -a "$work/code" -d '\n' grep -ohwF -f "$work/names" 2>/dev/null || true) |
    sort -u >"$work/found_here"
ext_dirs=("${trees[@]}")
[ -d /usr/include/infiniband ] && ext_dirs+=(/usr/include/infiniband)
if [ ${#ext_dirs[@]} -gt 0 ]; then
    grep -rohwF --include='*.[ch]' --include='*.in' --include='*.txt' --include='*.py' \
        -f "$work/names" "${ext_dirs[@]}" 2>/dev/null | sort -u >"$work/found_ext" || true
else
    : >"$work/found_ext"
fi
# Names the code makes by pasting: a prefix string before a stringized macro
# argument ("efarm_nm_" #name: the MPI_T variables made from the counter
# lists). A document's efarm_nm_recv_msgs is found when the code has that
# prefix and the rest, recv_msgs, is a word of the code.
(cd "$top" && xargs -a "$work/code" -d '\n' grep -ohE '"[A-Za-z_][A-Za-z0-9_]*_" *#[a-z_]+' 2>/dev/null || true) |
    sed -E 's/^"([A-Za-z0-9_]+)".*/\1/' | sort -u >"$work/paste_prefixes"
pasted() { # NAME: a pasted name whose prefix and rest the code both has
    local p
    while read -r p; do
        case $1 in
        "$p"?*) (cd "$top" && xargs -a "$work/code" -d '\n' grep -qwF -- "${1#"$p"}" 2>/dev/null) &&
            return 0 ;;
        esac
    done <"$work/paste_prefixes"
    return 1
}

while IFS=$'\t' read -r where w; do
    if grep -qxF "$w" "$work/found_here" || grep -qxF "$w" "$work/found_ext" || pasted "$w"; then
        checked=$((checked + 1))
        continue
    fi
    case ${w,,} in
    *efarm* | *efasim*) checked=$((checked + 1)); miss "$where" "name" "$w" ;;
    *)
        if [ ${#trees[@]} -gt 0 ]; then
            checked=$((checked + 1))
            miss "$where" "name" "$w"
        else
            unchecked=$((unchecked + 1))
        fi
        ;;
    esac
done <"$work/idents"

while IFS=$'\t' read -r where n; do
    checked=$((checked + 1))
    grep -q -- "$n" "$work/files" && continue
    (cd "$top" && xargs -a "$work/code" -d '\n' grep -qwF -- "$n" 2>/dev/null) || miss "$where" "tool" "$n"
done <"$work/dashed"

msg="check-doc-names: ${docs[*]}: $checked names checked, $missing missing"
[ "$unchecked" -eq 0 ] || msg+=", $unchecked not efarm's left unchecked (no --tree)"
echo "$msg"
[ "$missing" -eq 0 ]
