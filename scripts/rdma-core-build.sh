#!/usr/bin/env bash
# Build rdma-core's libibverbs and its EFA provider (libefa) from source, with
# symbols, to run in place of the system's. Two uses:
#   - of the version this machine has installed (Debian bookworm: 44.0), the default:
#     bench/run-engine-instr.sh --rdma-core counts through it where rdma-core's
#     instructions go, function by function (Debian's libefa has no symbols);
#   - of a later release (--version), for what needs a newer rdma-core than the
#     system's: libfabric's EFA provider needs 45 for RDMA write and unsolicited
#     write recv, 59 for its direct data path (scripts/libfabric-build.sh
#     --rdma-core builds against this build's headers and libraries).
# It is never installed; nothing of the system's rdma-core changes.
#
#   scripts/rdma-core-build.sh [--version V] [--source DIR|TARBALL] [--out DIR]
#
#   --version  the release to build (default: the installed one)
#   --source   an rdma-core tree or upstream tarball of that version (else
#              EFARM_RDMA_CORE_SOURCE, else Debian's source package of that version,
#              fetched once into OUT/dl by scripts/debsrc.sh: the machine's own apt
#              sources for the installed version, trixie's and then sid's for a later
#              one; the tarball's checksum from the signed index), such as
#              `git archive --prefix=rdma-core-V/ vV` of rdma-core's repository
#   --out      where to build (default: EFARM_BUILD_ROOT, else build/, then
#              rdma-core-VERSION)
#
# Exit status: 0 built; 3 the source of a later version could not be downloaded (no
# deb-src entries, no network, or no suite has it any more: callers skip what needs
# it, saying so); 1 any other failure; 2 usage.
#
# Built as Debian builds the package (its debian/rules): the compiler and linker
# flags of dpkg-buildflags with hardening=+all, rdma-core's Release build type, and
# cmake with pyverbs and man pages off; in rdma-core's in-place mode (-DIN_PLACE=1:
# the libraries find their configuration and providers in the build tree); only the
# targets ibverbs and efa, and the build's provider list keeps only EFA's, so the
# libraries load no other provider. Use it by putting
# OUT/build/lib first in LD_LIBRARY_PATH (the last line printed is that directory).
# Needs cmake, ninja-build, pkg-config, libnl-3-dev and libnl-route-3-dev (installed
# when run as root).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
source_arg=${EFARM_RDMA_CORE_SOURCE:-}
out=
version=
while [ $# -gt 0 ]; do
    case $1 in
    --source) source_arg=${2:?--source needs a tree or tarball}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --version) version=${2:?--version needs a release such as 56.1}; shift 2 ;;
    -h | --help) sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//;/^set -e/d'; exit 0 ;;
    *) echo "rdma-core-build: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
log() { echo "rdma-core-build: $*" >&2; }

installed=$(dpkg-query -W -f='${Version}' libibverbs1 2>/dev/null | sed 's/^[0-9]*://; s/-[^-]*$//')
version=${version:-$installed}
[ -n "$version" ] || { log "cannot tell the installed rdma-core's version (dpkg libibverbs1); give --version"; exit 1; }
case $version in
[0-9]*.[0-9]*) ;;
*) log "--version $version: a release such as 56.1"; exit 2 ;;
esac
out=${out:-${EFARM_BUILD_ROOT:-$top/build}/rdma-core-$version}
mkdir -p "$out"
out=$(cd "$out" && pwd)

need=()
for t in cmake:cmake ninja:ninja-build pkg-config:pkg-config; do
    command -v "${t%%:*}" >/dev/null || need+=("${t#*:}")
done
for p in libnl-3-dev libnl-route-3-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
    [ "$(id -u)" -eq 0 ] || { log "missing: ${need[*]} (apt-get install them as root)"; exit 1; }
    log "installing ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" \
        >"$out/apt.log" 2>&1 || { tail -n 20 "$out/apt.log" >&2; log "apt-get failed ($out/apt.log)"; exit 1; }
fi

# The source: a tree, a tarball, or Debian's source package.
if [ -z "$source_arg" ]; then
    source_arg=$(ls "$out"/dl/rdma-core_"$version".orig.tar.* 2>/dev/null | head -n 1 || true)
fi
if [ -z "$source_arg" ]; then
    # shellcheck source=scripts/debsrc.sh
    . "$top/scripts/debsrc.sh"
    suites=()
    [ "$version" = "$installed" ] || suites=(trixie sid)
    log "fetching rdma-core $version's source (Debian's source package${suites[*]:+, from ${suites[*]}})"
    fetch_fail=1
    [ ${#suites[@]} -eq 0 ] || fetch_fail=3
    debsrc_download "$out/apt" "$out/dl" rdma-core "rdma-core_$version.orig.tar." "${suites[@]}" >"$out/fetch.log" 2>&1 ||
        { tail -n 20 "$out/fetch.log" >&2; log "could not fetch rdma-core $version's source ($out/fetch.log); --source names a tree or tarball, such as an export of rdma-core's git tag v$version"; exit $fetch_fail; }
    source_arg=$(ls "$out"/dl/rdma-core_"$version".orig.tar.* 2>/dev/null | head -n 1)
    [ -n "$source_arg" ] || { log "no rdma-core_$version.orig.tar.* among what was fetched"; exit 1; }
fi
tree=$out/src
if [ -d "$source_arg" ]; then
    tree=$(cd "$source_arg" && pwd)
elif [ ! -f "$tree/CMakeLists.txt" ]; then
    rm -rf "$tree" "$out/unpack"
    mkdir -p "$out/unpack"
    tar -xf "$source_arg" -C "$out/unpack" || { log "cannot unpack $source_arg"; exit 1; }
    top_dir=$(ls -d "$out"/unpack/*/ | head -n 1)
    mv "$top_dir" "$tree"
    rm -rf "$out/unpack"
fi
[ -f "$tree/providers/efa/verbs.c" ] || { log "$tree is not an rdma-core tree (no providers/efa/verbs.c)"; exit 1; }
grep -q "\"$version\"" "$tree/CMakeLists.txt" ||
    log "warning: $tree does not say version $version in CMakeLists.txt; the counts are of what it is"

# Debian's flags (debian/rules: hardening=+all, CMAKE_BUILD_TYPE=Release, which in
# rdma-core is -O2 -g -DNDEBUG; its default RelWithDebInfo adds VERBS_DEBUG checks).
# From the cache directory: dpkg-buildflags maps the current directory away
# (-ffile-prefix-map), and the flags are part of the build's key, which must not
# change with the directory the caller runs in (a rebuild each time it did).
flags() { (cd "$out" && DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get "$1"); }
cmake_args=(-GNinja -DDISTRO_FLAVOUR=Debian -DCMAKE_BUILD_TYPE=Release -DIN_PLACE=1 -DNO_MAN_PAGES=1
    -DNO_PYVERBS=1 -DENABLE_STATIC=0 "-DCMAKE_C_FLAGS=$(flags CFLAGS) $(flags CPPFLAGS)"
    "-DCMAKE_SHARED_LINKER_FLAGS=$(flags LDFLAGS)" "$tree")
b=$out/build
key="${cmake_args[*]} $(gcc --version | head -n 1)"
if [ ! -f "$b/build.ninja" ] || [ "$(cat "$b/efarm-config-key" 2>/dev/null)" != "$key" ]; then
    rm -rf "$b"
    mkdir -p "$b"
    (cd "$b" && cmake "${cmake_args[@]}") >"$out/cmake.log" 2>&1 ||
        { tail -n 20 "$out/cmake.log" >&2; log "cmake failed ($out/cmake.log)"; exit 1; }
    printf '%s\n' "$key" >"$b/efarm-config-key"
fi
ninja -C "$b" ibverbs efa >"$out/ninja.log" 2>&1 ||
    { tail -n 20 "$out/ninja.log" >&2; log "ninja failed ($out/ninja.log)"; exit 1; }
# Only EFA's provider: the others are not built, and libibverbs would warn of each.
find "$b/etc/libibverbs.d" -name '*.driver' ! -name efa.driver -delete
[ -e "$b/lib/libibverbs.so.1" ] && [ -e "$b/lib/libefa.so.1" ] ||
    { log "the build made no libibverbs.so.1 or libefa.so.1 in $b/lib"; exit 1; }
log "rdma-core $version with symbols in $b/lib"
echo "$b/lib"
