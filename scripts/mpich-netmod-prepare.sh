#!/usr/bin/env bash
# Put efarm's ch4 netmod into an MPICH source tree (4.0.2 or 4.3.x):
#
#   mpich-netmod-prepare.sh MPICH_TREE [NETMOD_DIR]
#
# copies the netmod's files from NETMOD_DIR (default: the installed copy next
# to this script, PREFIX/share/efarm/mpich/netmod, or src/netmod_efarm in a
# checkout) to MPICH_TREE/src/mpid/ch4/netmod/efarm: those whose content
# differs, each named on a line "copied FILE" (identical ones keep their mtime,
# so make rebuilds only what changed). Then it makes two edits for the netmod
#   P2  MPICH's list of netmod Makefile fragments includes efarm's;
#   P3  maint/gen_ch4_api.py writes efarm's func_table.c and efarm_noinline.h,
#       and netmod_impl.h includes efarm/netmod_inline.h when NETMOD_INLINE
#       names efarm (without it every file would silently include stubnm's).
# and one fix to MPICH's ch4 layer that efarm's ordering guarantee needs:
#   P4  MPID_Probe (ch4_probe.h) stops as soon as its probe found a message.
#       Unpatched, it polls progress once more after a successful probe, and
#       that poll can bring a shared-memory message in: an MPI_ANY_SOURCE
#       receive, which ch4 tries on shared memory first, then takes that
#       message instead of the one the probe reported (another source,
#       another count). MPICH's own MPI_Dist_graph_create probes and receives
#       that way. See "Wildcards and probes: one arrival order" in
#       doc/NETMOD.md.
# All three edits are idempotent. MPICH's autogen.sh must run afterwards (it turns
# efarm_cvars.h into control variables and errnames.txt into messages).
# scripts/mpich-build.sh and the Spack recipe (packaging/spack) both use it.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: $0 MPICH_TREE [NETMOD_DIR]" >&2
    exit 2
fi
tree=$1
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -eq 2 ]; then
    src=$2
elif [ -d "$here/netmod" ]; then
    src=$here/netmod
else
    src=$here/../src/netmod_efarm
fi
[ -f "$tree/maint/gen_ch4_api.py" ] || { echo "$0: $tree is not an MPICH source tree" >&2; exit 1; }
[ -f "$src/netmod_inline.h" ] || { echo "$0: $src holds no efarm netmod" >&2; exit 1; }

dst=$tree/src/mpid/ch4/netmod/efarm
mkdir -p "$dst"
for f in $(cd "$src" && ls -1 | grep -v -x -e README.md -e install.mk | LC_ALL=C sort); do
    cmp -s "$src/$f" "$dst/$f" || { cp "$src/$f" "$dst/$f" && echo "copied $f"; }
done

# P2
f=$tree/src/mpid/ch4/netmod/Makefile.mk
anchor='include $(top_srcdir)/src/mpid/ch4/netmod/stubnm/Makefile.mk'
line='include $(top_srcdir)/src/mpid/ch4/netmod/efarm/Makefile.mk'
if ! grep -qxF "$line" "$f"; then
    [ "$(grep -cxF "$anchor" "$f")" = 1 ] || { echo "P2: '$anchor' not found once in $f" >&2; exit 1; }
    printf '%s\n' "$line" >>"$f"
fi

# P3
python3 - "$tree/maint/gen_ch4_api.py" <<'EOF'
import sys
path = sys.argv[1]
text = open(path).read()
if "__netmod_inline_efarm__" in text:
    sys.exit(0)

def replace(old, new, count):
    global text
    found = text.count(old)
    if found != count:
        sys.exit("P3: expected %d of %r in %s, found %d" % (count, old, path, found))
    text = text.replace(old, new)

replace('for m in "ofi", "ucx", "stubnm":', 'for m in "ofi", "ucx", "stubnm", "efarm":', 2)
define_ucx = '        print("#define __netmod_inline_ucx__   2", file=Out)\n'
replace(define_ucx,
        define_ucx + '        print("#define __netmod_inline_efarm__   3", file=Out)\n', 1)
include_ucx = '        print("#include \\"../ucx/netmod_inline.h\\"", file=Out)\n'
replace(include_ucx,
        include_ucx
        + '        print("#elif NETMOD_INLINE==__netmod_inline_efarm__", file=Out)\n'
        + '        print("#include \\"../efarm/netmod_inline.h\\"", file=Out)\n', 1)
open(path, "w").write(text)
EOF

# P4
python3 - "$tree/src/mpid/ch4/src/ch4_probe.h" <<'EOF'
import re, sys
path = sys.argv[1]
text = open(path).read()
if "efarm P4" in text:
    sys.exit(0)
# MPID_Probe's loop: probe, then poll progress whether or not the probe found a message.
loop = re.compile(r"(\n( +)mpi_errno = MPIDI_iprobe\(source, tag, comm, \w+, av, &flag, status\);\n"
                  r" +MPIR_ERR_CHECK\(mpi_errno\);\n)(\n +mpi_errno = MPID_Progress_test\(NULL\);)")
text, found = loop.subn(lambda m: m.group(1) + m.group(2) + "if (flag)\n" + m.group(2)
                        + "    break; /* efarm P4: no progress between a probe and its receive */\n"
                        + m.group(3), text)
if found != 1:
    sys.exit("P4: expected MPID_Probe's probe-then-progress loop once in %s, found %d" % (path, found))
open(path, "w").write(text)
EOF
echo "mpich-netmod-prepare: efarm's netmod in $dst; now run MPICH's autogen.sh"
