#!/usr/bin/env bash
# Put efarm's ch4 netmod into an MPICH source tree (4.0.x, 4.3.x or 5.0.x):
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
# and two changes to MPICH's ch4 layer that efarm's ordering guarantee needs:
#   P4  MPID_Probe (ch4_probe.h) stops as soon as its probe found a message.
#       Unpatched, it polls progress once more after a successful probe, and
#       that poll can bring a shared-memory message in: an MPI_ANY_SOURCE
#       receive, which ch4 tries on shared memory first, then takes that
#       message instead of the one the probe reported (another source,
#       another count). MPICH's own MPI_Dist_graph_create probes and receives
#       that way.
#   P5  One arrival order across shared memory and efarm for MPI_ANY_SOURCE:
#       MPIDIG stamps each unexpected message it queues (mpidig_recvq.h) from
#       the clock efarm's engine stamps its own with, and ch4's any-source
#       probe, mprobe and receive (ch4_probe.h, ch4_recv.h) go to efarm first
#       when efarm's matching message arrived before shared memory's
#       (MPIDI_EFARM_anysrc_nm_first), instead of always to shared memory
#       first.
# and, on MPICH 5.0, one fix to its connect/accept:
#   P6  establish_peer_conn (ch4_spawn.c) frees the dynamic lpid it inserted
#       when the connection fails after that (a refused process id, a send
#       that fails or times out); unpatched, the lpid stays and MPI_Finalize
#       aborts on MPICH's own assertion that every dynamic lpid was freed.
# See "Wildcards and probes: one arrival order" and "Dynamic processes" in
# doc/NETMOD.md. Every edit is idempotent. MPICH's autogen.sh must run afterwards (it turns
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
# P5
python3 - "$tree/src/mpid/ch4/src" <<'EOF'
import re, sys
src = sys.argv[1]

def patch(name, pattern, insert, mark):
    path = src + "/" + name
    text = open(path).read()
    if mark in text:
        return
    text, found = re.subn(pattern, insert, text, flags=re.S)
    if found != 1:
        sys.exit("P5: expected one match of %r in %s, found %d" % (pattern, path, found))
    open(path, "w").write(text)

# MPIDIG's unexpected queue stamps each message from the clock efarm's engine uses.
patch("mpidig_recvq.h",
      r"(MPIDIG_enqueue_request\(MPIR_Request \* req,.*?\n    DL_APPEND\(\*list, req\);\n)",
      lambda m: m.group(1)
      + "#ifdef HAVE_CH4_NETMOD_EFARM /* efarm P5: one arrival order with efarm's queue */\n"
      + "    if (qtype == MPIDIG_PT2PT_UNEXP)\n"
      + "        MPIDIG_REQUEST(req, netmod_am.efarm.arrival) = MPIDI_EFARM_ARRIVAL_STAMP(req);\n"
      + "#endif\n", "efarm P5")

# MPI_ANY_SOURCE: ask efarm first when its match arrived before shared memory's.
def nm_first(mark, call):
    def fn(m):
        ind, arg = m.group(2), m.group(4)
        return (m.group(1) + "#ifdef HAVE_CH4_NETMOD_EFARM /* " + mark + ": the earlier match */\n"
                + ind + "    if (MPIDI_EFARM_anysrc_nm_first(tag, comm, " + arg + ")) {\n"
                + call(ind + "        ", arg)
                + ind + "        goto fn_exit;\n" + ind + "    }\n#endif\n" + m.group(3))
    return fn

patch("ch4_probe.h",
      r"(\n( +)if \(unlikely\(source == MPI_ANY_SOURCE\)\) \{\n)"
      r"( +mpi_errno = MPIDI_SHM_mpi_iprobe\(source, tag, comm, (\w+), flag, status\);)",
      nm_first("efarm P5 iprobe",
               lambda i, a: i + "mpi_errno = MPIDI_NM_mpi_iprobe(source, tag, comm, " + a
               + ", av, flag, status);\n" + i + "MPIR_ERR_CHECK(mpi_errno);\n"),
      "efarm P5 iprobe")
patch("ch4_probe.h",
      r"(\n( +)if \(unlikely\(source == MPI_ANY_SOURCE\)\) \{\n)"
      r"( +mpi_errno = MPIDI_SHM_mpi_improbe\(source, tag, comm, (\w+), flag, message, status\);)",
      nm_first("efarm P5 improbe",
               lambda i, a: i + "mpi_errno = MPIDI_NM_mpi_improbe(source, tag, comm, " + a
               + ", av, flag, message, status);\n" + i + "MPIR_ERR_CHECK(mpi_errno);\n"
               + i + "if (*flag)\n" + i + "    MPIDI_REQUEST(*message, is_local) = 0;\n"),
      "efarm P5 improbe")
patch("ch4_recv.h",
      r"(MPL_STATIC_INLINE_PREFIX int anysource_irecv\([^{]*?int (context_offset|attr), MPIDI_av_entry_t \* av,[^{]*?\)\n\{\n    int mpi_errno = MPI_SUCCESS;\n)",
      lambda m: m.group(1)
      + "#ifdef HAVE_CH4_NETMOD_EFARM /* efarm P5: efarm's match arrived first: it alone receives */\n"
      + "    if (MPIDI_EFARM_anysrc_nm_first(tag, comm, " + m.group(2) + "))\n"
      + "        return MPIDI_NM_mpi_irecv(buf, count, datatype, rank, tag, comm, " + m.group(2)
      + ", av, request, NULL);\n#endif\n", "efarm P5")
EOF

# P6 (MPICH 5.0, whose connect/accept is establish_peer_conn in ch4_spawn.c)
python3 - "$tree/src/mpid/ch4/src/ch4_spawn.c" <<'EOF'
import re, sys
path = sys.argv[1]
text = open(path).read()
if "efarm P6" in text or "static int establish_peer_conn(" not in text:
    sys.exit(0)
# establish_peer_conn's failure path: the dynamic lpid it inserted is freed nowhere.
pat = re.compile(r"(static int establish_peer_conn\(.*?\n  fn_fail:\n)(    goto fn_exit;\n\})", re.S)
text, found = pat.subn(lambda m: m.group(1)
                       + "#ifdef HAVE_CH4_NETMOD_EFARM /* efarm P6: a failed connection frees its lpid */\n"
                       + "    if (remote_lpid != MPIR_LPID_INVALID) {\n"
                       + "        MPIDIU_free_dynamic_lpid(remote_lpid);\n"
                       + "        remote_lpid = MPIR_LPID_INVALID;\n"
                       + "    }\n#endif\n" + m.group(2), text)
if found != 1:
    sys.exit("P6: expected establish_peer_conn's fn_fail once in %s, found %d" % (path, found))
open(path, "w").write(text)
EOF

echo "mpich-netmod-prepare: efarm's netmod in $dst; now run MPICH's autogen.sh"
