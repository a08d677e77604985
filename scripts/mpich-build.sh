#!/usr/bin/env bash
# Build MPICH with efarm's netmod (--with-device=ch4:efarm) and install it.
#
#   scripts/mpich-build.sh [--mpich VERSION] [--source TARBALL|DIR] [--prefix DIR]
#                          [--jobs N] [--clean] [--netmod efarm|ofi] [--release]
#                          [--compile-only] [--c-only] [--pmi hydra|pmix|pmi2] [--abi]
#                          [--fetch-only] [-- EXTRA-MPICH-CONFIGURE-ARGS...]
#
# Steps, each timed and logged to build/logs/mpich-STEP.log; the first failure stops
# the script with the step's name and the end of its log:
#   deps       the tools the build needs (scripts/install-deps.sh installs them)
#   fetch      MPICH's source: Debian's `apt-get source` of mpich, or --source
#   efarm      efarm's engine, built in CACHE/efarm-build and installed into PREFIX
#   prepare    a copy of the pristine tree with src/netmod_efarm as
#              src/mpid/ch4/netmod/efarm, MPICH's two netmod lists patched, autogen
#   sync       netmod .c/.h files copied again when their content changed
#   configure  MPICH's configure (VPATH build in CACHE/build)
#   make, install, hello (mpicc compiles and links a hello world)
# --fetch-only gets the source only (the release tarball, or Debian's for 4.0.2) into
# the cache and prints its path as the last line: how scripts/test-all.sh finds a
# version nobody passed it.
# --compile-only stops after configure with the step "compile": the netmod's own
# files compiled against that MPICH (every inline netmod header is in func_table.c),
# without building or installing the rest of MPICH: CI's check of a second version.
#
# Environment: EFARM_MPICH_CACHE (default build/mpich), EFARM_MPICH_PREFIX (default
# CACHE/install), EFARM_BUILD_ROOT (default build; logs go to its logs/), CCACHE_DIR
# (MPICH's objects; default CACHE/ccache when ccache is installed), EFARM_CCACHE_DIR
# (efarm's own build in the efarm step goes through ccache with that cache, as
# scripts/test-all.sh's builds), EFARM_MPICH_SOURCE (--source's default).
#
# Versions (--mpich; doc/MPICH-VERSIONS.md). 4.0.2 (the default) is Debian bookworm's
# and is fetched from Debian. 5.0.1 and 4.3.2 are fetched from MPICH's release site
# and checked against their pinned SHA-256 (below); any other version needs
# --source. --source takes a release tarball (it has configure scripts) or an
# export of MPICH's git tag with its json-c, yaksa and hwloc submodules (no
# configure: MPICH's own autogen.sh runs in full, which takes several minutes
# more). Tested: 4.0.2, 4.3.2 and 5.0.1. A version other than 4.0.2
# has its own caches, build/mpich-VERSION (build/mpich-release-VERSION,
# build/mpich-ofi-VERSION), so versions never share objects; the netmod handles the
# API differences in src/netmod_efarm/efarm_compat.h.
#
# Source. By default Debian's source package of mpich, downloaded with apt-get into
# CACHE/dl through a private sources list (deb-src lines derived from this machine's
# own deb entries for its release) and private list and cache directories: the
# system's apt configuration and state are left untouched and no mirror is named
# here. Only the upstream tarball (mpich_4.0.2.orig.tar.*) is used, not Debian's
# patched tree: its one applied patch adds libfabric's confdb/fi_provider.m4 for a
# full autogen of the embedded libfabric, which the quick autogen below never runs,
# and its debian/ rules configure ch4:ucx; building from the pristine tree keeps
# the patches below the only difference from upstream. `--download-only` means
# dpkg-source (dpkg-dev) is not needed. --source takes a .tar.* or a directory of
# MPICH 4.0.2 instead.
#
# How MPICH links efarm. efarm's own autotools build installs into PREFIX (the same
# prefix as MPICH): lib/libefarm.so (the engine, src/netmod_efarm/install.mk),
# include/efarm/ (the engine's public headers) and lib/efarm/efasim/ (the emulated
# device). The netmod's subconfigure.m4 finds them with --with-efarm=PREFIX. So the
# engine keeps its own compiler flags and config.h (compiling its sources inside
# MPICH's build would mix the two configure results and MPICH's flags); libmpi.so
# gets PREFIX/lib in its run path from libtool, as the programs mpicc links do; an
# engine change needs no MPICH rebuild unless a public header changes, and the
# headers are installed only when their content changed (install -C), so an
# unchanged header never makes MPICH recompile.
#
# Run time: libefarm.so loads efasim from PREFIX/lib/efarm/efasim when
# EFARM_DEVICE=sim, or with EFARM_DEVICE=auto (the default) on a machine without an
# EFA device; EFARM_EFASIM_PATH=DIR picks another efasim build.
#
# Cache (CACHE = build/mpich): dl/ (the download), src/ (the pristine source),
# tree/ (the prepared tree), build/, efarm-build/, ccache/, install/ (PREFIX), and
# the keys that decide what to redo:
#   structure key  MPICH version, source identity, the patch functions of this
#                script, and the netmod's file list plus the content of the files
#                autogen and configure read (subconfigure.m4, Makefile.mk): when it
#                changes, the tree is copied afresh, patched and autogen'd.
#   prepare key  the structure key and the netmod's texts (errnames.txt,
#                efarm_cvars.h): when only they changed, they are copied and
#                MPICH's two autogen steps that read them run again (messages,
#                control variables), not the whole autogen.
#   configure key  the prepare key, the configure arguments and the compiler:
#                when it changes, the build directory is configured afresh, unless
#                the preparations differed in the netmod's texts only.
# Otherwise only changed netmod .c/.h files are copied (new content, new mtime;
# unchanged files keep theirs), and make rebuilds what depends on them.
# --clean removes everything but the download and the ccache first.
#
# --netmod ofi builds the same MPICH with ch4:ofi on Debian's libfabric instead, the
# baseline bench/run-mpi-bench.sh measures efarm against. It uses the pristine tree
# of the efarm cache (fetched there when missing; with --source, its own), skips the
# efarm, prepare and sync steps (ch4:ofi needs no patch or autogen) and configures
# that tree (an export of the git tag: a copy, after MPICH's autogen) in place of
# --with-device=ch4:efarm --with-efarm=PREFIX with
# --with-device=ch4:ofi --with-libfabric=/usr; every other argument is the efarm
# build's, --disable-ch4-netmod-inline included, so both call their netmod through
# ch4's function table and differ only in the netmod. Cache build/mpich-ofi
# (EFARM_MPICH_OFI_CACHE), prefix CACHE/install (--prefix; EFARM_MPICH_PREFIX is the
# efarm build's and is ignored), logs build/logs/mpich-ofi-STEP.log. libfabric-dev
# and, for its static link flags that MPICH's configure takes, libpsm2-dev,
# librdmacm-dev and libpsm-infinipath1-dev must be installed (the bench script
# installs them; they are not CI dependencies).
#
# --pmi picks how the job's processes find each other (doc/LAUNCH.md):
#   hydra  (the default) MPICH's own process manager, hydra's mpiexec, and the PMI
#          client that speaks to it. Hydra also starts jobs inside Slurm
#          allocations (salloc/sbatch: its Slurm bootstrap runs srun for its proxies).
#   pmix   no process manager: the job is started by a PMIx server, `srun --mpi=pmix`
#          under Slurm. MPICH links the system's libpmix (Debian: libpmix-dev, found
#          with pkg-config; EFARM_PMIX_DIR names another installation).
#   pmi2   no process manager: a PMI 2 client, for `srun --mpi=pmi2` (Slurm's own
#          PMI 2 server). MPICH 4.0: MPICH's own client (nothing to install). 4.1 and
#          later: Slurm's libpmi2 (Debian: libpmi2-0-dev; EFARM_SLURM_PMI_DIR names
#          another installation), since their own client's fullinit lacks the
#          pmijobid that Slurm's pmi2 plugin requires.
# Each has caches of its own, build/mpich-pmix and build/mpich-pmi2 (with the
# version and -release as above: build/mpich-pmix-5.0.1, build/mpich-release-pmix;
# EFARM_MPICH_PMIX_CACHE and EFARM_MPICH_PMI2_CACHE name them), prefix CACHE/install,
# logs build/logs/mpich-pmix-STEP.log; the download is the default cache's. Such a
# build installs no mpiexec. The configure lines: --with-pmix=DIR --with-pm=no, and
# --with-pmi=pmi2 --with-pmilib=slurm --with-slurm=DIR --with-pm=no
# CPPFLAGS=-DMISSING_PMI2_KEYVAL_T (4.0: --with-pmi=pmi2/simple --with-pm=no). Their trees get one
# more patch (patch_pmi_hint below): MPICH's message for a PMI client that found
# no server of its kind names the srun option that fits.
#
# --abi (MPICH 5.0 and later) also builds MPICH's MPI standard ABI library,
# libmpi_abi.so (--enable-mpi-abi), and its compiler wrapper mpicc_abi (mpicc
# -mpi-abi): programs compiled against the standard's mpi.h run on it. MPICH then
# compiles its internals, the netmod included, a second time with BUILD_MPI_ABI:
# the standard's values for the scalar constants (MPI_ANY_SOURCE is -1 there,
# MPI_ANY_TAG -2, MPI_PROC_NULL -3) and its MPI_Status layout. libmpi.so is built
# as before. Its own cache, build/mpich-abi-VERSION (EFARM_MPICH_ABI_CACHE; prefix
# CACHE/install, logs build/logs/mpich-abi-VERSION-STEP.log), with the hydra
# process manager; --compile-only then compiles the netmod's files for both
# libraries. About twice the compile time of the plain build.
#
# --release is the configuration to run applications with: ch4 calls efarm's netmod
# inline (--enable-ch4-netmod-inline, so the netmod's functions are compiled into
# ch4's callers instead of being called through its function table) and MPICH's
# inline functions are always inlined (--enable-fast=O2,alwaysinline), in its own
# cache build/mpich-release (EFARM_MPICH_RELEASE_CACHE; prefix CACHE/install, logs
# build/logs/mpich-release-STEP.log), from the download of the default cache. Every
# change to the netmod then recompiles most of libmpi, which is why the default
# (development) build keeps --disable-ch4-netmod-inline. bench/run-instr-bench.sh
# --prefix build/mpich-release/install counts what inlining saves.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
debian_version=4.0.2 # what Debian bookworm serves (fetch)
mpich_version=$debian_version
cache=
prefix=${EFARM_MPICH_PREFIX:-}
logs=${EFARM_BUILD_ROOT:-$top/build}/logs
jobs=$(nproc 2>/dev/null || echo 2)
source_arg=${EFARM_MPICH_SOURCE:-}
clean=no
extra_configure=()
netmod=efarm
prefix_set=no
release=no
compile_only=no
c_only=no
pmi=hydra
abi=no
fetch_only=no

usage() { sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case $1 in
    --mpich) mpich_version=${2:?--mpich needs a version}; shift 2 ;;
    --source) source_arg=${2:?--source needs a path}; shift 2 ;;
    --prefix) prefix=${2:?--prefix needs a directory}; prefix_set=yes; shift 2 ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift 2 ;;
    --clean) clean=yes; shift ;;
    --netmod) netmod=${2:?--netmod needs efarm or ofi}; shift 2 ;;
    --release) release=yes; shift ;;
    --compile-only) compile_only=yes; shift ;;
    --c-only) c_only=yes; shift ;;
    --pmi) pmi=${2:?--pmi needs hydra, pmix or pmi2}; shift 2 ;;
    --abi) abi=yes; shift ;;
    --fetch-only) fetch_only=yes; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; extra_configure=("$@"); break ;;
    *) echo "mpich-build: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
done

case $mpich_version in
[0-9]*.[0-9]*.[0-9]*) ;;
*) echo "mpich-build: --mpich $mpich_version: a version such as 4.3.2" >&2; exit 2 ;;
esac
case $mpich_version in
4.* | 5.*) ;;
*) echo "mpich-build: MPICH $mpich_version: the netmod is written for MPICH 4.x and 5.x (tested: 4.0.2, 4.3.2, 5.0.1)" >&2
    exit 2 ;;
esac
# MPICH's release tarballs this script can fetch itself (--mpich VERSION without
# --source), each checked against the SHA-256 pinned here: the checksums MPICH's
# release tarballs have, as package recipes elsewhere pin them too.
mpich_release_url() { echo "https://www.mpich.org/static/downloads/$1/mpich-$1.tar.gz"; }
mpich_release_sha256() {
    case $1 in
    5.0.1) echo 8c1832a13ddacf071685069f5fadfd1f2877a29e1a628652892c65211b1f3327 ;;
    4.3.2) echo 47d774587a7156a53752218c811c852e70ac44db9c502dc3f399b4cb817e3818 ;;
    *) return 1 ;;
    esac
}
if [ "$mpich_version" != "$debian_version" ] && [ -z "$source_arg" ] &&
    ! mpich_release_sha256 "$mpich_version" >/dev/null; then
    echo "mpich-build: Debian serves MPICH $debian_version only, and MPICH $mpich_version has no pinned release checksum here (5.0.1, 4.3.2 do); pass --source TARBALL|DIR (or set EFARM_MPICH_SOURCE)" >&2
    exit 2
fi
# Caches: build/mpich (4.0.2) or build/mpich-VERSION, and the same with -release, -ofi.
vsuffix=
[ "$mpich_version" = "$debian_version" ] || vsuffix=-$mpich_version
cache=${EFARM_MPICH_CACHE:-$top/build/mpich$vsuffix}
logname=mpich$vsuffix
srccache=$cache # dl/ and src/ (the download and the pristine tree) live there
case $netmod in
efarm) ;;
ofi)
    logname=mpich-ofi$vsuffix
    cache=${EFARM_MPICH_OFI_CACHE:-$top/build/mpich-ofi$vsuffix}
    [ "$prefix_set" = yes ] || prefix=
    ;;
*) echo "mpich-build: --netmod $netmod: efarm or ofi" >&2; exit 2 ;;
esac
[ "$compile_only" = no ] || [ "$netmod" = efarm ] ||
    { echo "mpich-build: --compile-only checks ch4:efarm only" >&2; exit 2; }
if [ "$release" = yes ]; then
    [ "$netmod" = efarm ] || { echo "mpich-build: --release builds ch4:efarm only" >&2; exit 2; }
    logname=mpich-release$vsuffix
    cache=${EFARM_MPICH_RELEASE_CACHE:-$top/build/mpich-release$vsuffix}
    [ "$prefix_set" = yes ] || prefix=
fi

pmix_dir=
slurm_dir=
case $pmi in
hydra) ;;
pmix | pmi2)
    [ "$netmod" = efarm ] || { echo "mpich-build: --pmi $pmi builds ch4:efarm only" >&2; exit 2; }
    base=mpich
    [ "$release" = no ] || base=mpich-release
    logname=$base-$pmi$vsuffix
    if [ "$pmi" = pmix ]; then
        cache=${EFARM_MPICH_PMIX_CACHE:-$top/build/$base-pmix$vsuffix}
        pmix_dir=${EFARM_PMIX_DIR:-$(pkg-config --variable=prefix pmix 2>/dev/null || true)}
        if [ -z "$pmix_dir" ] || [ ! -f "$pmix_dir/include/pmix.h" ]; then
            echo "mpich-build: --pmi pmix needs PMIx's headers and library: install libpmix-dev (Debian), or set EFARM_PMIX_DIR to a PMIx installation (DIR/include/pmix.h, DIR/lib/libpmix.so)" >&2
            exit 2
        fi
    else
        cache=${EFARM_MPICH_PMI2_CACHE:-$top/build/$base-pmi2$vsuffix}
        slurm_dir=${EFARM_SLURM_PMI_DIR:-/usr}
        case $mpich_version in
        4.0.*) ;;
        *)
            if [ ! -f "$slurm_dir/include/slurm/pmi2.h" ]; then
                echo "mpich-build: --pmi pmi2 with MPICH $mpich_version links Slurm's PMI 2 library (MPICH's own PMI 2 client is refused by Slurm's pmi2 plugin): install libpmi2-0-dev (Debian), or set EFARM_SLURM_PMI_DIR to where include/slurm/pmi2.h and libpmi2.so are" >&2
                exit 2
            fi
            ;;
        esac
    fi
    [ "$prefix_set" = yes ] || prefix=
    ;;
*) echo "mpich-build: --pmi $pmi: hydra, pmix or pmi2" >&2; exit 2 ;;
esac

if [ "$abi" = yes ]; then
    case $mpich_version in
    4.*) echo "mpich-build: --abi: MPICH $mpich_version has no MPI standard ABI build (--enable-mpi-abi came with MPICH 5.0)" >&2
        exit 2 ;;
    esac
    [ "$netmod" = efarm ] && [ "$release" = no ] && [ "$pmi" = hydra ] ||
        { echo "mpich-build: --abi builds the development build of ch4:efarm with hydra (no --netmod ofi, --release or --pmi)" >&2; exit 2; }
    logname=mpich-abi$vsuffix
    cache=${EFARM_MPICH_ABI_CACHE:-$top/build/mpich-abi$vsuffix}
    [ "$prefix_set" = yes ] || prefix=
fi

mkdir -p "$cache" "$logs"
cache=$(cd "$cache" && pwd)
if { [ "$netmod" = efarm ] && [ "$release" = no ] && [ "$pmi" = hydra ] && [ "$abi" = no ]; } || [ -n "$source_arg" ]; then
    srccache=$cache
else
    mkdir -p "$srccache"
    srccache=$(cd "$srccache" && pwd)
fi
prefix=${prefix:-$cache/install}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
[ -z "$source_arg" ] || source_arg=$(realpath "$source_arg")

netmod_src=$top/src/netmod_efarm
tree=$cache/tree/mpich-$mpich_version
builddir=$cache/build
netmod_dst=$tree/src/mpid/ch4/netmod/efarm

# ---- Steps: timing, logs, failure ------------------------------------------------

t_total=$(date +%s)
current_log=

# progress NAME PID T0: while PID runs, a line every EFARM_PROGRESS_SECONDS (60):
# the step, the minutes so far and, for compiling steps, the files compiled so
# far (lines "CC ..." of its log) against the count the last successful build of
# that step logged (kept in $cache/progress-NAME), so a first build of several
# minutes is never silent.
progress() {
    local name=$1 pid=$2 t0=$3 every=${EFARM_PROGRESS_SECONDS:-60} n last
    last=$(cat "$cache/progress-$name" 2>/dev/null || true)
    while sleep "$every" >/dev/null 2>&1 && kill -0 "$pid" 2>/dev/null; do
        n=$(grep -c '^ *CC ' "$current_log" 2>/dev/null || true)
        printf '\n  ... %-9s %3d min' "$name" $((($(date +%s) - t0) / 60))
        if [ "${n:-0}" -gt 0 ]; then
            printf ', %d files compiled' "$n"
            [ -n "$last" ] && printf ' (the last build compiled %d)' "$last"
        fi
    done
}

# step NAME FUNCTION: run FUNCTION with its output in build/logs/mpich-NAME.log.
step() {
    local name=$1 fn=$2 t0 rc
    current_log=$logs/$logname-$name.log
    t0=$(date +%s)
    printf 'mpich-build: %-10s ' "$name"
    set +e
    (set -e; "$fn") >"$current_log" 2>&1 &
    local pid=$!
    progress "$name" "$pid" "$t0" &
    local ticker=$!
    wait "$pid"
    rc=$?
    kill "$ticker" 2>/dev/null
    wait "$ticker" 2>/dev/null
    set -e
    # After progress lines, the step's result on a line of its own.
    [ $(($(date +%s) - t0)) -lt "${EFARM_PROGRESS_SECONDS:-60}" ] || printf '\n  ... %-9s done: ' "$name"
    if [ $rc -ne 0 ]; then
        echo "FAILED after $(($(date +%s) - t0)) s (log: $current_log)"
        tail -n 30 "$current_log" | sed 's/^/    /'
        echo "mpich-build: step '$name' failed" >&2
        exit 1
    fi
    local compiled
    compiled=$(grep -c '^ *CC ' "$current_log" || true)
    [ "${compiled:-0}" -eq 0 ] || echo "$compiled" >"$cache/progress-$name"
    echo "$(($(date +%s) - t0)) s  $(tail -n 1 "$current_log")"
}

note() { echo "$*"; } # the last line a step prints is its summary

sha() { sha256sum | cut -c1-16; }

# ---- deps ------------------------------------------------------------------------

do_deps() {
    local missing=() t
    for t in autoconf automake libtoolize m4 perl python3 make gcc pkg-config tar xz; do
        command -v "$t" >/dev/null || missing+=("$t")
    done
    [ -n "$source_arg" ] || command -v apt-get >/dev/null || missing+=(apt-get)
    if [ ${#missing[@]} -gt 0 ]; then
        echo "missing: ${missing[*]} (run scripts/install-deps.sh)"
        return 1
    fi
    pkg-config --exists hwloc || { echo "hwloc not found (libhwloc-dev)"; return 1; }
    note "tools present${ccache:+, ccache}"
}

# ---- fetch -----------------------------------------------------------------------

# scripts/debsrc.sh: deb-src entries derived from the machine's own, in a private
# apt configuration.
# shellcheck source=scripts/debsrc.sh
. "$top/scripts/debsrc.sh"

fetch_from_debian() {
    debsrc_download "$srccache/apt" "$srccache/dl" mpich "mpich_${mpich_version}.orig.tar."
}

# MPICH's release tarball into CACHE/dl, checked against its pinned SHA-256. A
# machine that cannot reach MPICH's release site stops here at once, saying what
# to pass instead. Prints the tarball's path.
fetch_release() {
    local want url file got
    want=$(mpich_release_sha256 "$mpich_version")
    url=$(mpich_release_url "$mpich_version")
    file=$srccache/dl/mpich-$mpich_version.tar.gz
    mkdir -p "$srccache/dl"
    if [ ! -f "$file" ]; then
        local ok=no
        if command -v curl >/dev/null; then
            curl -fsSL --connect-timeout 15 --max-time 900 -o "$file.part" "$url" && ok=yes
        elif command -v wget >/dev/null; then
            wget -q --timeout=15 -O "$file.part" "$url" && ok=yes
        fi
        if [ "$ok" != yes ]; then
            rm -f "$file.part"
            echo "cannot download $url (no network to MPICH's release site here?)." >&2
            echo "Get mpich-$mpich_version.tar.gz (SHA-256 $want) or an export of MPICH's git tag v$mpich_version with its modules elsewhere and pass it: --source PATH (or EFARM_MPICH_SOURCE=PATH)." >&2
            return 1
        fi
        mv "$file.part" "$file"
    fi
    got=$(sha256sum "$file" | cut -d' ' -f1)
    if [ "$got" != "$want" ]; then
        rm -f "$file"
        echo "$url: SHA-256 $got, expected $want: removed; not building from it" >&2
        return 1
    fi
    echo "$file"
}

# Sets pristine (the extracted upstream tree) and source_id.
do_fetch() {
    local tarball= dir=
    if [ -z "$source_arg" ] && [ "$mpich_version" != "$debian_version" ]; then
        tarball=$(fetch_release) || return 1
        note "checked $(basename "$tarball") against its pinned SHA-256"
    elif [ -z "$source_arg" ]; then
        tarball=$(ls "$srccache"/dl/mpich_"$mpich_version".orig.tar.* 2>/dev/null | head -n 1 || true)
        if [ -z "$tarball" ]; then
            fetch_from_debian
            tarball=$(ls "$srccache"/dl/mpich_"$mpich_version".orig.tar.* 2>/dev/null | head -n 1 || true)
            [ -n "$tarball" ] || { echo "Debian's mpich source is not $mpich_version (use --source)"; return 1; }
        fi
    elif [ -d "$source_arg" ]; then
        dir=$source_arg
    elif [ -f "$source_arg" ]; then
        tarball=$source_arg
    else
        echo "--source $source_arg: no such file or directory"
        return 1
    fi

    if [ -n "$dir" ]; then
        grep -q "MPICH_VERSION_m4\],\[$mpich_version\]" "$dir/maint/version.m4" ||
            { echo "$dir is not MPICH $mpich_version"; return 1; }
        echo "$dir" >"$cache/pristine.path"
        echo "dir:$dir" >"$srccache/source.id"
        note "using the tree in $dir"
        return 0
    fi
    local id
    id="tarball:$(sha <"$tarball")"
    if [ "$(cat "$srccache/source.id" 2>/dev/null)" != "$id" ] || [ ! -d "$srccache/src/mpich-$mpich_version" ]; then
        rm -rf "$srccache/src"
        mkdir -p "$srccache/src"
        tar -xf "$tarball" -C "$srccache/src"
        [ -d "$srccache/src/mpich-$mpich_version" ] || { echo "$tarball has no mpich-$mpich_version/"; return 1; }
        grep -q "MPICH_VERSION_m4\],\[$mpich_version\]" "$srccache/src/mpich-$mpich_version/maint/version.m4" ||
            { echo "$tarball is not MPICH $mpich_version"; return 1; }
        chmod -R a-w "$srccache/src" # the pristine tree is only ever copied (or configured VPATH)
        echo "$id" >"$srccache/source.id"
        echo "$srccache/src/mpich-$mpich_version" >"$cache/pristine.path"
        note "extracted $(basename "$tarball")"
    else
        echo "$srccache/src/mpich-$mpich_version" >"$cache/pristine.path"
        note "cached $(basename "$tarball")"
    fi
}

# ---- efarm -----------------------------------------------------------------------

do_efarm() {
    local b=$cache/efarm-build
    if [ ! -x "$top/configure" ] || [ "$top/configure.ac" -nt "$top/configure" ] ||
        [ "$top/Makefile.am" -nt "$top/configure" ]; then
        (cd "$top" && ./autogen.sh)
    fi
    local args=(--prefix="$prefix" CC=gcc) ccenv=(env)
    local key
    # EFARM_CCACHE_DIR (as scripts/test-all.sh): through ccache, hits by content
    # with paths relative to the source tree, so a new clone (CI) recompiles only
    # what changed instead of the whole engine in each MPICH cache.
    if [ -n "${EFARM_CCACHE_DIR:-}" ] && [ -n "$ccache" ]; then
        args=(--prefix="$prefix" "CC=ccache gcc")
        ccenv=(env CCACHE_DIR="$EFARM_CCACHE_DIR" CCACHE_BASEDIR="$top" CCACHE_NOHASHDIR=1
            CCACHE_SLOPPINESS=include_file_mtime,include_file_ctime,time_macros)
    fi
    # The source tree is part of the key: a build configured from another clone
    # (CI clones anew each time) would build and install that clone's efarm.
    key=$(printf '%s\n' "$top" "${args[@]}" | sha)
    if [ ! -f "$b/Makefile" ] || [ "$(cat "$b/.efarm-key" 2>/dev/null)" != "$key" ]; then
        rm -rf "$b" # objects and dependency files of another tree must not be reused
        mkdir -p "$b"
        (cd "$b" && "${ccenv[@]}" "$top/configure" -q "${args[@]}")
        echo "$key" >"$b/.efarm-key"
    fi
    "${ccenv[@]}" make -C "$b" -j"$jobs" all
    # install -C leaves files whose content did not change alone (mtime included),
    # so unchanged headers never make MPICH recompile.
    "${ccenv[@]}" make -C "$b" install INSTALL="$(command -v install) -C"
    note "libefarm, headers and efasim in $prefix"
}

# ---- prepare: the tree MPICH is built from ---------------------------------------

# The netmod's files, as they go into MPICH (our own install.mk and README stay).
netmod_files() {
    (cd "$netmod_src" && ls -1 | grep -v -x -e README.md -e install.mk | LC_ALL=C sort)
}

# P2 and P3 (efarm's Makefile fragment in MPICH's list; gen_ch4_api.py's
# dispatch to efarm's inline header) and the copy of the netmod's files:
# scripts/mpich-netmod-prepare.sh, which the Spack recipe runs too.
prepare_netmod() {
    "$top/scripts/mpich-netmod-prepare.sh" "$tree" "$netmod_src"
}

# The netmod's files that MPICH's autogen turns into generated sources: its
# messages (errnames.txt -> src/mpi/errhan/defmsg.h) and its control variables
# (efarm_cvars.h -> mpir_cvars.h and .c). What configure reads does not depend on
# them.
text_files=(errnames.txt efarm_cvars.h)

# key_inputs all|structure: what the prepare key (all) and the structure key
# (structure: what autogen and configure read, without the texts) are made of.
key_inputs() {
    echo "mpich $mpich_version"
    echo "c-only $c_only"
    cat "$cache/source.id"
    declare -f autogen_tree
    cat "$top/scripts/mpich-netmod-prepare.sh"
    netmod_files
    local f
    for f in subconfigure.m4 Makefile.mk "${text_files[@]}"; do
        [ "$1" = all ] || [ "$f" = subconfigure.m4 ] || [ "$f" = Makefile.mk ] || continue
        [ -f "$netmod_src/$f" ] && { echo "== $f"; cat "$netmod_src/$f"; }
    done
    if [ "$pmi" != hydra ]; then declare -f patch_pmi_hint; fi
    if pmix_spawn_patched; then declare -f patch_pmix_spawn; fi
    [ "$1" != all ] || { echo "pmi $pmi"; declare -f launch_hint patch_launch_hints; }
}
prepare_key() { key_inputs all | sha; }
structure_key() { key_inputs structure | sha; }

# --pmi pmix and pmi2: MPICH's message for a PMI client that found no server of
# its kind (src/pmi/errnames.txt, the same in 4.0, 4.3 and 5.0) says so and names
# the fix. Under srun without the build's --mpi there is no such server, and MPICH
# 4.0 says only "PMIX_Init returned -25" (PMIx) or "PMI2_Job_GetId returned 14"
# (PMI 2, whose client then runs as a singleton without a job id). Before
# autogen, which turns the error names into MPICH's message table.
patch_pmi_hint() {
    local f=$tree/src/pmi/errnames.txt key text hint
    if [ "$pmi" = pmix ]; then
        key='pmix_init %d' text='PMIX_Init returned %d'
        hint='-25, PMIX_ERR_UNREACH, means no PMIx server answered: this MPICH speaks PMIx only; under Slurm start it with srun --mpi=pmix'
    else
        key='pmi_job_getid %d' text='PMI2_Job_GetId returned %d'
        hint='no PMI 2 server answered: this MPICH speaks PMI 2 only; under Slurm start it with srun --mpi=pmi2'
    fi
    grep -qxF "**$key:$text" "$f" || { echo "$f: no '**$key' message to patch"; return 1; }
    sed -i "s/^\(\*\*$key:$text\)\$/\1 ($hint)/" "$f"
    # 4.3 and 5.0: "PMIx_Init failed (launcher not compatible with PMIx client)".
    [ "$pmi" != pmix ] || sed -i "s/^\(\*\*pmix_init %s:PMIx_Init failed %s\)\$/\1 ($hint)/" "$f"
}

# Every build of MPICH 4.1 and later: the messages MPICH's own PMI set-up prints
# when the launcher offers a PMI this build has no client for name the launch that
# fits. 5.0 detects the launcher's PMI before choosing a client ("Runtime environment
# uses unsupported PMI version PMIx", src/pmi/errnames.txt); 4.3's PMI 1 and PMI 2
# clients see a PMIx launcher and print "launcher not compatible with PMI1 client"
# (src/pmi/src/pmi_v1.c, pmi_v2.c), for example a hydra build under srun --mpi=pmix.
# Texts only: part of the prepare key, not the structure key, so a change
# regenerates MPICH's message table and recompiles three files (reapply_text_patches).
# A PMI version asked for by name that the build lacks (MPIR_CVAR_PMI_VERSION=x on
# a build without PMIx, =2 without PMI 2) ends in a bare "Internal MPI error!"
# (src/util/mpir_pmi.c): it prints the same fix first.
launch_hint_files=(src/pmi/errnames.txt src/pmi/src/pmi_v1.c src/pmi/src/pmi_v2.c src/util/mpir_pmi.c)
launch_hint() {
    case $pmi in
    hydra) echo 'this MPICH speaks PMI 1 and PMI 2, not PMIx: under Slurm start it with srun --mpi=pmi2, or with mpiexec inside the allocation' ;;
    pmix) echo 'this MPICH speaks PMIx only: under Slurm start it with srun --mpi=pmix' ;;
    pmi2) echo 'this MPICH speaks PMI 2 only: under Slurm start it with srun --mpi=pmi2' ;;
    esac
}
patch_launch_hints() {
    local hint f n want=0 done=0
    hint=$(launch_hint)
    case $mpich_version in
    4.0.*) return 0 ;;
    4.3.*) want=4 ;;
    5.0.*) want=5 ;;
    esac
    f=$tree/src/pmi/errnames.txt
    if grep -qx '\*\*pmi_version_auto_not_supported %s: *Runtime environment uses unsupported PMI version %s\. Aborting\.' "$f"; then
        sed -i "s|^\(\*\*pmi_version_auto_not_supported %s:.*Aborting\.\)\$|\1 ($hint)|" "$f"
        done=$((done + 1))
    fi
    for n in 1 2; do
        f=$tree/src/pmi/src/pmi_v$n.c
        if [ ! -f "$f" ] || [ "$(grep -c "\"launcher not compatible with PMI$n client\\\\n\"" "$f")" != 1 ]; then
            continue
        fi
        sed -i "s|\"launcher not compatible with PMI$n client\\\\n\"|\"launcher not compatible with PMI$n client ($hint)\\\\n\"|" "$f"
        done=$((done + 1))
    done
    f=$tree/src/util/mpir_pmi.c
    for n in 2 x; do
        sed -i "/^ *if (MPIR_CVAR_PMI_VERSION == MPIR_CVAR_PMI_VERSION_$n) {\$/{n;s|^\( *\)return MPI_ERR_INTERN;\$|\1MPL_error_printf(\"MPIR_CVAR_PMI_VERSION=$n asks for a PMI client this MPICH was built without ($hint)\\\\n\");\n\1return MPI_ERR_INTERN;|}" "$f"
        case $(grep -c "MPIR_CVAR_PMI_VERSION=$n asks for" "$f") in
        0) ;;
        1) done=$((done + 1)) ;;
        *) echo "$f: MPIR_CVAR_PMI_VERSION=$n's refusal patched more than once"; return 1 ;;
        esac
    done
    # A version this script knows must have had all of its messages patched.
    if [ "$done" -lt "$want" ]; then
        echo "mpich-build: MPICH $mpich_version's launch messages: $done of $want patched (patch_launch_hints)"
        return 1
    fi
}

# --pmi pmix on MPICH 4.0: its PMIx client has no spawn, and MPI_Comm_spawn
# stops the root on an assertion (src/util/mpir_pmi.c: "not supported yet",
# MPIR_Assert(0)) while the other ranks wait in the spawn's broadcast for ever:
# srun, unless -K, waits with them. Patched to say so and fail the spawn, which
# ch4 then fails on every rank ("Error in spawn call"). 4.1 and later spawn
# through PMIx_Spawn (Slurm's PMIx server refuses it: "PMIx_Spawn not supported
# by PMIx Host").
pmix_spawn_patched() { [ "$pmi" = pmix ] && case $mpich_version in 4.0.*) true ;; *) false ;; esac; }
patch_pmix_spawn() {
    local f=$tree/src/util/mpir_pmi.c
    local why='MPI_Comm_spawn: MPICH 4.0 built with PMIx cannot spawn processes (its PMIx client has none; MPICH 4.1 and later have); use a build with hydra or PMI 2'
    [ "$(grep -c '^    /\* not supported yet \*/$' "$f")" = 1 ] ||
        { echo "$f: not the one PMIx spawn stub expected"; return 1; }
    sed -i "/^    \/\* not supported yet \*\/\$/{n;s|^    MPIR_Assert(0);\$|    MPL_error_printf(\"$why\\\\n\");\\n    MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_SPAWN, \"**notimpl\", \"**notimpl %s\", \"MPI_Comm_spawn with PMIx\");|}" "$f"
    grep -q 'MPI_Comm_spawn with PMIx' "$f" || { echo "$f: the PMIx spawn stub was not patched"; return 1; }
}

# A release tarball has its modules' configure scripts: MPICH's quick autogen
# regenerates only what the netmod changes. An export of the git tag has none:
# the full autogen (without the ucx and ofi modules, whose directories are empty,
# yaksa, since the configure below picks the dataloop datatype engine, the test
# suite, whose autogen needs a tool the export lacks, and with --c-only the
# Fortran bindings; the C++ ones are generated either way, as configure wants them).
autogen_tree() {
    if [ -x "$tree/configure" ] && [ -x "$tree/src/pm/hydra/configure" ]; then
        (cd "$tree" && ./autogen.sh -quick -without-hwloc -without-json -without-hydra -without-bindings)
    else
        local lang=()
        [ "$c_only" = no ] || lang=(-without-fortran)
        (cd "$tree" && ./autogen.sh -without-ucx -without-ofi -without-yaksa -without-test "${lang[@]}")
    fi
}

# regen_texts FILE...: MPICH's autogen steps for the netmod's changed text files
# alone (the commands of MPICH's autogen.sh, the same in 4.0, 4.3 and 5.0; 4.0
# gives extractcvars its directory list, 4.3 and later find them themselves).
# Only the generated file of a changed input is rewritten: a new mpir_cvars.h
# recompiles most of MPICH, a new defmsg.h one file.
regen_texts() {
    local f
    for f in "$@"; do
        case $f in
        errnames.txt)
            (
                cd "$tree" &&
                    maint/extracterrmsgs -careful=unusederr.txt -skip=src/util/multichannel/mpi.c \
                        $(cat maint/errmsgdirs) >.efarm-defmsg.h 2>.efarm-errmsgs.err
                if grep -v 'Warning:' .efarm-errmsgs.err | grep -q .; then
                    cat .efarm-errmsgs.err
                    echo "MPICH's extracterrmsgs failed: the messages were not regenerated"
                    exit 1
                fi
                [ -s .efarm-defmsg.h ] || { echo "MPICH's extracterrmsgs wrote nothing"; exit 1; }
                mv .efarm-defmsg.h src/mpi/errhan/defmsg.h
                rm -f .efarm-errmsgs.err
            ) || return 1
            ;;
        efarm_cvars.h)
            if [ -f "$tree/maint/cvardirs" ]; then
                (cd "$tree" && ./maint/extractcvars --dirs="$(cat maint/cvardirs)") || return 1
            else
                (cd "$tree" && ./maint/extractcvars) || return 1
            fi
            ;;
        esac
        note "regenerated what MPICH makes of $f"
    done
}

# reapply_text_patches: the patches of MPICH's own texts made again, on its files
# as they came (a changed hint replaces the old one). Prints the files whose
# contents changed; the others keep their times, so make recompiles nothing for them.
reapply_text_patches() {
    local pristine keep f ok
    pristine=$(cat "$cache/pristine.path")
    keep=$(mktemp -d)
    for f in "${launch_hint_files[@]}"; do
        [ -f "$pristine/$f" ] || continue
        mkdir -p "$keep/${f%/*}"
        if ! cp -p "$tree/$f" "$keep/$f" || ! cp "$pristine/$f" "$tree/$f"; then
            rm -rf "$keep"
            return 1
        fi
    done
    # patch_pmi_hint and patch_pmix_spawn change the same files (their changes are
    # in the structure key).
    ok=yes
    if [ "$pmi" != hydra ]; then patch_pmi_hint || ok=no; fi
    if pmix_spawn_patched; then patch_pmix_spawn || ok=no; fi
    patch_launch_hints || ok=no
    [ "$ok" = yes ] || { rm -rf "$keep"; return 1; }
    for f in "${launch_hint_files[@]}"; do
        [ -f "$keep/$f" ] || continue
        if cmp -s "$tree/$f" "$keep/$f"; then cp -p "$keep/$f" "$tree/$f"; else echo "$f"; fi
    done
    rm -rf "$keep"
}

# The tree's keys: .prepare-key (everything prepared, texts included),
# .structure-key (what autogen and configure read) and .text-keys (the earlier
# prepare keys of this structure, whose configured build directories stay valid).
do_prepare() {
    local key skey pristine t patched changed=()
    key=$(prepare_key)
    skey=$(structure_key)
    if [ -f "$cache/tree/.prepare-key" ] && [ "$(cat "$cache/tree/.prepare-key")" = "$key" ]; then
        [ -f "$cache/tree/.structure-key" ] || echo "$skey" >"$cache/tree/.structure-key"
        note "unchanged (key $key): no patch, no autogen"
        return 0
    fi
    # Only texts changed (the netmod's messages or control variables, MPICH's
    # messages that patch_launch_hints patches): copy or patch them again and run
    # the autogen steps that read them, not the whole autogen (about 10 minutes for
    # an export of a git tag) and the configure it makes necessary.
    if [ -f "$cache/tree/.prepare-key" ] &&
        [ "$(cat "$cache/tree/.structure-key" 2>/dev/null)" = "$skey" ] &&
        [ -x "$tree/maint/extracterrmsgs" ] && [ -x "$tree/maint/extractcvars" ]; then
        for t in "${text_files[@]}"; do
            cmp -s "$netmod_src/$t" "$netmod_dst/$t" || changed+=("$t")
        done
        cat "$cache/tree/.prepare-key" >>"$cache/tree/.text-keys"
        rm -f "$cache/tree/.prepare-key" # a failure below makes the next run prepare afresh
        prepare_netmod
        patched=$(reapply_text_patches) || { echo "$patched"; return 1; }
        # MPICH's message table is made of every errnames.txt, its own and the netmod's.
        if grep -qx src/pmi/errnames.txt <<<"$patched" &&
            ! printf '%s\n' "${changed[@]}" | grep -qx errnames.txt; then
            changed+=(errnames.txt)
        fi
        regen_texts "${changed[@]}" || return 1
        echo "$key" >"$cache/tree/.prepare-key"
        note "texts changed (${changed[*]:-none regenerated}${patched:+; patched again in MPICH: ${patched//$'\n'/ }}): no autogen (key $key)"
        return 0
    fi
    pristine=$(cat "$cache/pristine.path")
    rm -rf "$cache/tree"
    mkdir -p "$cache/tree"
    cp -a "$pristine" "$tree"
    chmod -R u+w "$tree"
    prepare_netmod
    if [ "$pmi" != hydra ]; then patch_pmi_hint; fi
    if pmix_spawn_patched; then patch_pmix_spawn; fi
    patch_launch_hints || return 1
    autogen_tree
    # What the patches must have produced.
    if ! grep -q '__netmod_inline_efarm__' "$tree/src/mpid/ch4/netmod/include/netmod_impl.h" ||
        [ ! -f "$netmod_dst/func_table.c" ] || [ ! -f "$netmod_dst/efarm_noinline.h" ]; then
        echo "autogen did not generate efarm's func_table.c, efarm_noinline.h and dispatch"
        return 1
    fi
    if ! grep -q 'efarm P4' "$tree/src/mpid/ch4/src/ch4_probe.h" ||
        ! grep -q 'efarm P5 improbe' "$tree/src/mpid/ch4/src/ch4_probe.h" ||
        ! grep -q 'efarm P5' "$tree/src/mpid/ch4/src/ch4_recv.h" ||
        ! grep -q 'efarm P5' "$tree/src/mpid/ch4/src/mpidig_recvq.h"; then
        echo "ch4 was not patched (P4, P5: scripts/mpich-netmod-prepare.sh)"
        return 1
    fi
    if grep -q 'static int establish_peer_conn(' "$tree/src/mpid/ch4/src/ch4_spawn.c" &&
        ! grep -q 'efarm P6' "$tree/src/mpid/ch4/src/ch4_spawn.c"; then
        echo "ch4's connect/accept was not patched (P6: scripts/mpich-netmod-prepare.sh)"
        return 1
    fi
    if [ "$pmi" != hydra ] && ! grep -q "srun --mpi=$pmi" "$tree/src/pmi/errnames.txt"; then
        echo "MPICH's PMI messages were not patched (patch_pmi_hint)"
        return 1
    fi
    echo "$skey" >"$cache/tree/.structure-key"
    echo "$key" >"$cache/tree/.prepare-key"
    note "patched and regenerated (key $key)"
}

do_sync() {
    local copied
    local out
    out=$(prepare_netmod)
    copied=$(grep '^copied ' <<<"$out" || true)
    [ -z "$copied" ] || echo "$copied"
    note "$(echo -n "$copied" | grep -c . || true) of $(netmod_files | wc -l) netmod files changed"
}

# ---- configure, make, install ----------------------------------------------------

cc=gcc
command -v ccache >/dev/null && cc="ccache gcc" && ccache=yes || ccache=
if [ -n "$ccache" ]; then
    export CCACHE_DIR=${CCACHE_DIR:-$cache/ccache}
    # Objects of a re-prepared tree hit the cache although its files are new copies.
    export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-include_file_mtime,include_file_ctime,time_macros}
fi

configure_args=(
    --prefix="$prefix"
    --with-device=ch4:efarm
    --with-efarm="$prefix"
    --with-hwloc
    --with-datatype-engine=dataloop
    --disable-ch4-netmod-inline
    --enable-g=none
    --disable-static
    --no-recursion
    CC="$cc"
)
# --no-recursion: 4.0.2's configure also configures its test suite (test/mpi and
# DTPools, AC_CONFIG_SUBDIRS; two of its five minutes on a slow VM), which the build
# never uses: scripts/mpich-testsuite.sh configures a copy of it against the
# installed MPICH. MPICH's own subsystems (mpl, json-c, romio, hydra) are configured
# by its PAC_CONFIG_SUBDIR, which --no-recursion does not touch; 4.3.2 has no
# AC_CONFIG_SUBDIRS.
# Threads: efarm relies on MPICH's global critical section under MPI_THREAD_MULTIPLE
# and refuses to compile against per-VCI ones (efarm_compat.h). ch4's default is
# global in 4.0 and per-vci from 4.1 on; the netmod's subconfigure.m4 picks global
# when the configure line names no granularity (as here: the builds of 4.3 and 5.0
# thus check that a user's plain configure line gets it) and refuses any other.
# Languages. By default the C++ and Fortran bindings and their compiler wrappers
# (mpicxx; mpif77, mpif90, mpifort), so applications in either compile against this
# MPICH; --c-only leaves them out (a faster build, mpicc only). gfortran 10 and
# later refuse MPICH 4.0's Fortran 77 bindings without -fallow-argument-mismatch
# (4.1 and later add it themselves): FFLAGS/FCFLAGS carry it for every version.
if [ "$c_only" = yes ]; then
    configure_args+=(--disable-fortran --disable-cxx)
else
    if ! command -v gfortran >/dev/null || ! command -v g++ >/dev/null; then
        echo "mpich-build: the C++ and Fortran wrappers need g++ and gfortran (scripts/install-deps.sh), or pass --c-only" >&2
        exit 2
    fi
    cxx=g++
    [ -z "$ccache" ] || cxx="ccache g++"
    configure_args+=(--enable-cxx --enable-fortran=all CXX="$cxx" FC=gfortran F77=gfortran)
    case $(gfortran -dumpversion) in
    [1-9]) ;;
    *) configure_args+=(FFLAGS=-fallow-argument-mismatch FCFLAGS=-fallow-argument-mismatch) ;;
    esac
fi
# --release: ch4 calls efarm inline, and MPICH's performance-critical functions are
# always inlined (--enable-fast=O2,alwaysinline, as MPICH's configure documents it;
# error checking and assertions stay on). With ch4's shared-memory module built,
# ch4's own send and receive (MPID_Isend, MPID_Irecv) grow past gcc's inlining
# limits: without alwaysinline each is a call of its own, and so are the request
# allocation and the shared-memory poll (issue 41: 950 MPICH instructions per
# round trip against 794; bench/README.md). EXTRA arguments come later and win.
if [ "$release" = yes ]; then
    for i in "${!configure_args[@]}"; do
        [ "${configure_args[i]}" != --disable-ch4-netmod-inline ] ||
            configure_args[i]=--enable-ch4-netmod-inline
    done
    configure_args+=(--enable-fast=O2,alwaysinline)
fi
# --pmi: the process manager and the PMI client (see the header).
case $pmi in
pmix) configure_args+=(--with-pmix="$pmix_dir" --with-pm=no) ;;
pmi2)
    # 4.0 names its PMI 2 client by its directory, src/pmi/pmi2/simple.
    case $mpich_version in
    4.0.*) configure_args+=(--with-pmi=pmi2/simple --with-pm=no) ;;
    # 4.1 and later: Slurm's own PMI 2 library. MPICH's PMI 2 client there sends
    # no pmijobid in its fullinit, and Slurm's pmi2 plugin refuses it ("pmijobid
    # missing in fullinit command", Slurm 22.05). MPICH's configure checks for
    # PMI2_keyval_t only for other outside PMI libraries; Slurm's header has none,
    # and mpir_pmi2.inc then stops the build: defined as the check would have
    # (added to the environment's CPPFLAGS, which configure's argument replaces).
    *) configure_args+=(--with-pmi=pmi2 --with-pmilib=slurm --with-slurm="$slurm_dir" --with-pm=no
        "CPPFLAGS=${CPPFLAGS:+$CPPFLAGS }-DMISSING_PMI2_KEYVAL_T") ;;
    esac
    ;;
esac
[ "$abi" = no ] || configure_args+=(--enable-mpi-abi)
configure_args+=("${extra_configure[@]}")
if [ "$netmod" = ofi ]; then
    # The same arguments but the two that name the netmod (see --netmod ofi above).
    for i in "${!configure_args[@]}"; do
        case ${configure_args[i]} in
        --with-device=ch4:efarm) configure_args[i]=--with-device=ch4:ofi ;;
        --with-efarm=*) configure_args[i]=--with-libfabric=/usr ;;
        esac
    done
fi

# configure_tree SRC KEY NETMOD: configure MPICH from SRC into builddir unless KEY
# matches the last configure, then check that ch4 calls NETMOD through its table.
configure_tree() {
    local src=$1 key=$2 nm=$3 old=${4:-}
    if [ -f "$builddir/Makefile" ] && [ "$(cat "$builddir/.configure-key" 2>/dev/null)" = "$key" ]; then
        note "unchanged (key $key): not rerun"
        return 0
    fi
    # Configured from an earlier preparation that differed in the netmod's texts only.
    local was
    was=$(cat "$builddir/.configure-key" 2>/dev/null || true)
    if [ -f "$builddir/Makefile" ] && [ -n "$was" ] && grep -qxF "$was" <<<"$old"; then
        echo "$key" >"$builddir/.configure-key"
        note "the netmod's texts changed, what configure reads did not: not rerun (key $key)"
        return 0
    fi
    rm -rf "$builddir"
    mkdir -p "$builddir"
    (cd "$builddir" && "$src/configure" "${configure_args[@]}")
    # ch4 calls the netmod through MPIDI_NM_<nm>_funcs (func_table.c), so a netmod
    # change recompiles the netmod's files only; inline would rebuild most of libmpi.
    # --release asks for exactly that inline build.
    if [ "$release" = no ] && grep -q -- '-DNETMOD_INLINE=' "$builddir/Makefile"; then
        echo "configure selected the inline netmod build; expected --disable-ch4-netmod-inline"
        return 1
    fi
    if [ "$release" = yes ] && ! grep -q -- '-DNETMOD_INLINE=__netmod_inline_efarm__' "$builddir/Makefile"; then
        echo "configure did not select the inline efarm netmod (--enable-ch4-netmod-inline)"
        return 1
    fi
    grep -q "MPIDI_NM_${nm}_funcs" "$builddir/src/mpid/ch4/src/mpid_ch4_net_array.c" ||
        { echo "configure did not put $nm in ch4's netmod table"; return 1; }
    echo "$key" >"$builddir/.configure-key"
    note "configured: ${configure_args[*]}"
}

do_configure() {
    local k old=
    while read -r k; do
        old+="$({ echo "$k"; printf '%s\n' "${configure_args[@]}"; } | sha)"$'\n'
    done < <(cat "$cache/tree/.text-keys" 2>/dev/null)
    configure_tree "$tree" \
        "$({ cat "$cache/tree/.prepare-key"; printf '%s\n' "${configure_args[@]}"; } | sha)" efarm "$old"
}

# ---- --netmod ofi: libfabric, configure ---------------------------------------------

do_libfabric() {
    pkg-config --exists libfabric || { echo "libfabric not found (libfabric-dev)"; return 1; }
    # MPICH's configure links libmpi with libfabric's static flags (-lpsm2 -lrdmacm ...).
    local flags
    read -ra flags <<<"$(pkg-config --libs --static libfabric)"
    echo 'int main(void) { return 0; }' >"$cache/link-test.c"
    if ! gcc "$cache/link-test.c" -o "$cache/link-test" "${flags[@]}"; then
        echo "cannot link ${flags[*]}: install libfabric-dev libpsm2-dev librdmacm-dev libpsm-infinipath1-dev"
        return 1
    fi
    rm -f "$cache/link-test.c" "$cache/link-test"
    note "libfabric $(pkg-config --modversion libfabric), links ${flags[*]}"
}

# MPICH's configure on the pristine tree itself (a VPATH build writes only builddir).
# An export of the git tag has no configure: a copy of it, CACHE/ofi-tree, gets
# MPICH's full autogen once (autogen_tree, as the efarm build's prepare step; the
# embedded libfabric is left out, Debian's is used), keyed on the source.
do_configure_ofi() {
    local src id
    src=$(cat "$cache/pristine.path")
    if [ ! -x "$src/configure" ]; then
        id=$({ cat "$srccache/source.id"; echo "$src $c_only"; } | sha)
        if [ "$(cat "$cache/ofi-tree/.autogen-key" 2>/dev/null)" != "$id" ]; then
            rm -rf "$cache/ofi-tree"
            cp -a "$src" "$cache/ofi-tree"
            local tree=$cache/ofi-tree # autogen_tree's tree (no configure: its full autogen)
            autogen_tree || { echo "MPICH's autogen.sh failed in $cache/ofi-tree"; return 1; }
            echo "$id" >"$cache/ofi-tree/.autogen-key"
            note "autogen of the git export in $cache/ofi-tree"
        fi
        src=$cache/ofi-tree
    fi
    configure_tree "$src" "$({ cat "$srccache/source.id"; echo "$src"; pkg-config --modversion libfabric
        printf '%s\n' "${configure_args[@]}"; } | sha)" ofi
}

# The netmod's objects only (--compile-only), as MPICH's make names them: for
# libmpi and, with --abi, for the ABI library (lib_libmpi_abi_la-, or
# lib_libpmpi_abi_la- where MPICH builds a separate profiling library).
do_compile() {
    local objs=() f libs=(lib_libmpi_la) l n=0
    if [ "$abi" = yes ]; then
        l=$(grep -o 'src/mpid/ch4/netmod/efarm/lib_lib[a-z]*_abi_la-' "$builddir/Makefile" | sort -u | head -n 1)
        [ -n "$l" ] || { echo "configured with --enable-mpi-abi, but MPICH's Makefile builds no netmod object for an ABI library"; return 1; }
        l=${l##*/}
        libs+=("${l%-}")
    fi
    for f in $(sed -n 's|^ *src/mpid/ch4/netmod/efarm/\([a-z_]*\)\.c.*|\1|p' "$netmod_src/Makefile.mk"); do
        for l in "${libs[@]}"; do objs+=("src/mpid/ch4/netmod/efarm/$l-$f.lo"); done
        n=$((n + 1))
    done
    [ $n -gt 0 ] || { echo "no netmod sources found in $netmod_src/Makefile.mk"; return 1; }
    make -C "$builddir" -j"$jobs" "${objs[@]}"
    libs=("${libs[@]#lib_}")
    note "compiled $n netmod files for ${libs[*]%_la} against MPICH $mpich_version (compile only: nothing installed)"
}

do_make() {
    make -C "$builddir" -j"$jobs"
    note "built"
}

do_install() {
    # install -C here too: a rebuild that changed only the netmod's code leaves
    # mpi.h and the other headers as they were (mtime included), so programs built
    # against this prefix (MPICH's test suite, cached apart) are not all recompiled.
    make -C "$builddir" install INSTALL="$(command -v install) -C"
    local w wrappers=(mpicc)
    [ "$pmi" != hydra ] || wrappers+=(mpiexec)
    [ "$c_only" = yes ] || wrappers+=(mpicxx mpif77 mpif90 mpifort)
    [ "$abi" = no ] || wrappers+=(mpicc_abi)
    for w in "${wrappers[@]}"; do
        [ -x "$prefix/bin/$w" ] || { echo "no $w in $prefix/bin"; return 1; }
    done
    [ "$abi" = no ] || [ -f "$prefix/lib/libmpi_abi.so" ] || { echo "no libmpi_abi.so in $prefix/lib"; return 1; }
    if [ "$pmi" = hydra ]; then
        note "installed ${wrappers[*]} ($(readlink "$prefix/bin/mpiexec" || echo mpiexec))"
    else
        note "installed ${wrappers[*]} (no mpiexec: srun --mpi=$pmi starts the jobs)"
    fi
}

# ---- reuse: nothing to build or install ------------------------------------------

# What the install must hold, as files of PREFIX: MPICH's library and wrappers (the
# engine's files are the efarm step's, which installs them itself).
install_files() {
    lib_file() { # lib/NAME.so, or the file its link names (lib/NAME.so.12.2.2)
        if [ -e "$prefix/lib/$1" ]; then echo "lib/$(basename "$(readlink -f "$prefix/lib/$1")")"; else echo "lib/$1"; fi
    }
    lib_file libmpi.so
    echo include/mpi.h
    [ "$abi" = no ] || lib_file libmpi_abi.so
    echo bin/mpicc
    [ "$pmi" != hydra ] || echo bin/mpiexec
    [ "$c_only" = yes ] || printf '%s\n' bin/mpicxx bin/mpifort
}
# The inputs of make: the configuration, the netmod's files in the tree and the
# engine's installed headers (the netmod includes them; the engine's library is
# linked at run time and needs no rebuild of MPICH).
make_inputs_key() {
    {
        cat "$builddir/.configure-key"
        (cd "$netmod_dst" && find . -type f | LC_ALL=C sort | xargs sha256sum)
        [ ! -d "$prefix/include/efarm" ] ||
            (cd "$prefix/include/efarm" && find . -type f | LC_ALL=C sort | xargs sha256sum)
    } | sha
}
install_manifest() { (cd "$prefix" && install_files | xargs sha256sum 2>/dev/null); }
# reusable: the last make, install and hello succeeded from the same inputs, and the
# install still holds the files they installed (content checked, not a stamp).
reusable() {
    [ -f "$cache/install.key" ] && [ -f "$cache/install.manifest" ] || return 1
    [ "$(cat "$cache/install.key")" = "$(make_inputs_key)" ] || return 1
    [ "$(install_manifest)" = "$(cat "$cache/install.manifest")" ] || return 1
    [ "$(install_files | wc -l)" = "$(wc -l <"$cache/install.manifest")" ]
}
record_install() {
    make_inputs_key >"$cache/install.key"
    install_manifest >"$cache/install.manifest"
}

do_hello() {
    local d=$cache/hello
    mkdir -p "$d"
    cat >"$d/hello.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("hello from rank %d of %d\n", rank, size);
    MPI_Finalize();
    return 0;
}
EOF
    "$prefix/bin/mpicc" -o "$d/hello" "$d/hello.c"
    if [ "$abi" = yes ]; then
        # The standard ABI: mpi.h's MPI_ABI branch, linked with libmpi_abi alone.
        "$prefix/bin/mpicc_abi" -o "$d/hello_abi" "$d/hello.c"
        readelf -d "$d/hello_abi" | grep -q 'NEEDED.*libmpi_abi\.so' ||
            { echo "$d/hello_abi does not link libmpi_abi.so"; return 1; }
        if readelf -d "$d/hello_abi" | grep -q 'NEEDED.*libmpi\.so'; then
            echo "$d/hello_abi links libmpi.so as well"
            return 1
        fi
    fi
    if [ "$c_only" = yes ]; then
        note "mpicc built $d/hello"
        return 0
    fi
    cp "$d/hello.c" "$d/hello_cxx.cxx"
    "$prefix/bin/mpicxx" -o "$d/hello_cxx" "$d/hello_cxx.cxx"
    cat >"$d/hello_f.f90" <<'EOF'
program hello
    use mpi
    implicit none
    integer :: rank, nprocs, ierr
    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
    print '(a,i0,a,i0)', 'hello from rank ', rank, ' of ', nprocs
    call MPI_Finalize(ierr)
end program hello
EOF
    "$prefix/bin/mpifort" -o "$d/hello_f" "$d/hello_f.f90"
    note "mpicc, mpicxx and mpifort built $d/hello, hello_cxx, hello_f"
}

# ---- main --------------------------------------------------------------------------

if [ "$fetch_only" = yes ]; then
    if [ -n "$source_arg" ]; then
        echo "$source_arg"
    elif [ "$mpich_version" != "$debian_version" ]; then
        fetch_release || exit 1
    else
        ls "$srccache"/dl/mpich_"$mpich_version".orig.tar.* >/dev/null 2>&1 ||
            fetch_from_debian >"$logs/$logname-fetch.log" 2>&1 || exit 1
        ls "$srccache"/dl/mpich_"$mpich_version".orig.tar.* | head -n 1
    fi
    exit 0
fi

if [ "$netmod" = ofi ]; then
    echo "mpich-build: MPICH $mpich_version with ch4:ofi (Debian's libfabric); cache $cache, prefix $prefix, source $srccache, logs $logs/$logname-*"
else
    echo "mpich-build: MPICH $mpich_version with ch4:efarm; cache $cache, prefix $prefix, logs $logs"
fi
if [ "$clean" = yes ]; then
    echo "mpich-build: --clean: removing the cache but its download and ccache"
    chmod -R u+w "$cache/src" 2>/dev/null || true
    find "$cache" -mindepth 1 -maxdepth 1 ! -name dl ! -name ccache -exec rm -rf {} +
    [ "$prefix" = "$cache/install" ] || echo "mpich-build: --prefix $prefix is not removed"
fi

if [ "$netmod" = ofi ]; then
    step deps do_deps
    step libfabric do_libfabric
    step fetch do_fetch
    step configure do_configure_ofi
    step make do_make
    step install do_install
    step hello do_hello
    echo "mpich-build: done in $(($(date +%s) - t_total)) s"
    echo "mpich-build: run: FI_PROVIDER='tcp;ofi_rxm' $prefix/bin/mpiexec -n 2 ./a.out (MPIR_CVAR_NOLOCAL=1 routes local ranks through ofi)"
    echo "mpich-build: prefix $prefix"
    exit 0
fi

step deps do_deps
step fetch do_fetch
step efarm do_efarm
step prepare do_prepare
step sync do_sync
step configure do_configure
if [ "$compile_only" = yes ]; then
    step compile do_compile
    echo "mpich-build: done in $(($(date +%s) - t_total)) s (compile only)"
    exit 0
fi
if reusable; then
    echo "mpich-build: make, install, hello: nothing changed (sources, configuration, engine headers) and $prefix holds the last install: reused (key $(cat "$cache/install.key"))"
else
    rm -f "$cache/install.key" "$cache/install.manifest"
    step make do_make
    step install do_install
    step hello do_hello
    record_install
fi

echo "mpich-build: done in $(($(date +%s) - t_total)) s"
if [ "$pmi" = hydra ]; then
    echo "mpich-build: run: EFARM_DEVICE=sim $prefix/bin/mpiexec -n 2 ./a.out (MPIR_CVAR_NOLOCAL=1 routes local ranks through efarm)"
else
    echo "mpich-build: run: EFARM_DEVICE=sim srun --mpi=$pmi -N 2 -n 4 ./a.out (doc/LAUNCH.md; scripts/slurm-cluster.sh for a cluster on this machine)"
fi
echo "mpich-build: prefix $prefix"
