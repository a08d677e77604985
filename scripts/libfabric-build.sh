#!/usr/bin/env bash
# Build libfabric (default 2.1.0, Debian trixie/sid's source package) with only its
# EFA provider, against this machine's rdma-core (Debian bookworm: 44) or a later one
# built by scripts/rdma-core-build.sh, and install it.
#
#   scripts/libfabric-build.sh [--version V] [--source TARBALL|DIR] [--rdma-core DIR]
#                              [--prefix DIR] [--jobs N] [--clean] [-- EXTRA-CONFIGURE-ARGS...]
#
#   --version    the release (default 2.1.0). Debian serves only 2.1.0's source; any
#                other needs --source, e.g. a `git archive --prefix=libfabric-V/ vV`
#                of libfabric's repository (tag vV) or a tree of it
#   --rdma-core  an rdma-core build (scripts/rdma-core-build.sh --out DIR, of a later
#                release than the system's): libfabric is configured against its
#                headers and libraries (--enable-efa=DIR/build) and finds its
#                libibverbs and libefa there at run time (DT_RUNPATH, so efasim's
#                drop-in first in LD_LIBRARY_PATH still wins)
#
# Steps, each timed and logged to build/logs/libfabric-STEP.log; the first failure
# stops the script with the step's name and the end of its log:
#   deps       the tools and headers the build needs (scripts/install-deps.sh)
#   fetch      libfabric_V.orig.tar.* of Debian's source package in trixie, else
#              sid (scripts/debsrc.sh: deb-src entries for those suites derived from
#              the machine's own bookworm entries, in a private apt configuration;
#              the system's apt sources and state are untouched and no mirror is
#              named here), or --source
#   autogen    the pristine tree, extracted and autoreconf'd (Debian's tarball is an
#              export of upstream's git tag: it has no configure script)
#   configure  --enable-only --enable-efa=yes: the efa provider is the only one built
#              (into libfabric.so; the core's built-in hook_noop and off_coll remain);
#              VPATH build in CACHE/build
#   make, install
#   check      the installed fi_info reports V, `fi_info -l` lists efa and no
#              other transport provider, libfabric.so needs only libibverbs and libefa
#              of rdma-core (no librdmacm), those of --rdma-core when given; records
#              what the efa provider was built without because the rdma-core lacks
#              it (below)
#
# Environment: EFARM_LIBFABRIC_CACHE (default build/libfabric), EFARM_LIBFABRIC_PREFIX
# (default CACHE/install), EFARM_BUILD_ROOT (default build; logs go to its logs/),
# CCACHE_DIR (default CACHE/ccache when ccache is installed).
#
# Cache (CACHE = build/libfabric): dl/ (the download), src/ (the extracted tree after
# autogen, read-only), build/, ccache/, install/ (PREFIX), and the keys that decide
# what to redo:
#   source id      the tarball's SHA256 (or, for --source DIR, its path and every
#                  file's name, size and mtime): a new one extracts afresh;
#   autogen key    source id and the autoconf, automake and libtool versions;
#   configure key  autogen key, configure arguments, compiler and rdma-core versions
#                  (configure's efa checks depend on rdma-core's headers): when it
#                  changes the build directory is configured afresh.
# An unchanged rerun is fetch (cached), make (nothing to do), install and check: seconds.
# --clean removes everything but the download and the ccache first.
#
# Exit status: 0 built and checked; 3 the source could not be downloaded (no deb
# entries, no network, or neither suite has 2.1.0 any more: callers such as
# scripts/test-all.sh skip what needs it, saying so); 1 any other failure; 2 usage.
#
# What 2.1.0's efa provider needs from rdma-core newer than 44. prov/efa/configure.m4
# checks these in <infiniband/efadv.h> and <infiniband/verbs.h>; rdma-core 44 has
# efadv_device_attr.max_rdma_size, EFADV_DEVICE_ATTR_CAPS_RNR_RETRY, the extended CQ
# (efadv_create_cq, efadv_cq_from_ibv_cq_ex, efadv_wc_read_sgid), ibv_reg_dmabuf_mr
# and ibv_is_fork_initialized, and lacks:
#   EFADV_DEVICE_ATTR_CAPS_RDMA_WRITE (HAVE_CAPS_RDMA_WRITE=0): the provider never
#     uses RDMA write, whatever the device reports (efa_device_support_rdma_write()
#     and efa_rdm_ep_support_rdma_write() are false, MRs never get remote write);
#   EFADV_DEVICE_ATTR_CAPS_UNSOLICITED_WRITE_RECV (=0): no unsolicited write-recv QPs;
#     with the above, the efa-direct fabric does not offer FI_RMA;
#   efadv_query_mr and struct efadv_mr_attr (HAVE_EFADV_QUERY_MR=0): the domain's
#     fi_efa_ops query_mr returns -FI_ENOSYS;
#   struct efadv_qp_init_attr.sl (HAVE_EFADV_SL=0): QPs are created without a service
#     level, FI_TC_LOW_LATENCY does not select the low-latency SL;
#   IBV_QUERY_QP_DATA_IN_ORDER_ALIGNED_128_BYTES (=0): ibv_query_qp_data_in_order is
#     not called; the provider assumes no 128-byte in-order guarantee.
# The check step prints the values configure found (CACHE/efa-features.txt) so another
# rdma-core is reported as it is.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
lf_version=2.1.0
suites=(trixie sid)
rdma_core=
cache=${EFARM_LIBFABRIC_CACHE:-}
prefix=${EFARM_LIBFABRIC_PREFIX:-}
logs=${EFARM_BUILD_ROOT:-$top/build}/logs
jobs=$(nproc 2>/dev/null || echo 2)
source_arg=
clean=no
extra_configure=()

usage() { sed -n '5,6p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case $1 in
    --source) source_arg=${2:?--source needs a path}; shift 2 ;;
    --version) lf_version=${2:?--version needs a release such as 2.6.0}; shift 2 ;;
    --rdma-core) rdma_core=${2:?--rdma-core needs an rdma-core-build.sh --out directory}; shift 2 ;;
    --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift 2 ;;
    --clean) clean=yes; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; extra_configure=("$@"); break ;;
    *) echo "libfabric-build: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
done

case $lf_version in
[0-9]*.[0-9]*.[0-9]*) ;;
*) echo "libfabric-build: --version $lf_version: a release such as 2.6.0" >&2; exit 2 ;;
esac
if [ -n "$rdma_core" ]; then
    rdma_core=$(cd "$rdma_core" 2>/dev/null && pwd) &&
        [ -e "$rdma_core/build/include/infiniband/efadv.h" ] && [ -e "$rdma_core/build/lib/libefa.so.1" ] ||
        { echo "libfabric-build: --rdma-core: no build/include/infiniband/efadv.h and build/lib/libefa.so.1 there (scripts/rdma-core-build.sh --out DIR)" >&2; exit 2; }
fi
[ -n "$cache" ] || {
    cache=$top/build/libfabric
    [ "$lf_version" = 2.1.0 ] || cache=$cache-$lf_version
}
mkdir -p "$cache" "$logs"
cache=$(cd "$cache" && pwd)
prefix=${prefix:-$cache/install}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
[ -z "$source_arg" ] || source_arg=$(realpath "$source_arg")
src=$cache/src/libfabric-$lf_version
builddir=$cache/build

# ---- Steps: timing, logs, failure ------------------------------------------------

t_total=$(date +%s)

# step NAME FUNCTION: run FUNCTION with its output in build/logs/libfabric-NAME.log.
step() {
    local name=$1 fn=$2 t0 rc log=$logs/libfabric-$1.log
    t0=$(date +%s)
    printf 'libfabric-build: %-10s ' "$name"
    set +e
    (set -e; "$fn") >"$log" 2>&1
    rc=$?
    set -e
    if [ $rc -ne 0 ]; then
        echo "FAILED after $(($(date +%s) - t0)) s (log: $log)"
        tail -n 30 "$log" | sed 's/^/    /'
        echo "libfabric-build: step '$name' failed" >&2
        [ $rc -eq 3 ] && exit 3 # fetch: the source could not be downloaded
        exit 1
    fi
    echo "$(($(date +%s) - t0)) s  $(tail -n 1 "$log")"
}

note() { echo "$*"; } # the last line a step prints is its summary

sha() { sha256sum | cut -c1-16; }

cc=gcc
ccache=
if command -v ccache >/dev/null; then
    cc="ccache gcc"
    ccache=yes
    export CCACHE_DIR=${CCACHE_DIR:-$cache/ccache}
fi

# ---- deps ------------------------------------------------------------------------

do_deps() {
    local missing=() t
    for t in autoreconf autoconf automake libtoolize m4 make gcc tar xz sha256sum; do
        command -v "$t" >/dev/null || missing+=("$t")
    done
    [ -n "$source_arg" ] || command -v apt-get >/dev/null || missing+=(apt-get)
    if [ ${#missing[@]} -gt 0 ]; then
        echo "missing: ${missing[*]} (run scripts/install-deps.sh)"
        return 1
    fi
    local h inc=()
    [ -z "$rdma_core" ] || inc=(-I"$rdma_core/build/include")
    for h in infiniband/verbs.h infiniband/efadv.h; do
        echo "#include <$h>" | gcc "${inc[@]}" -E -x c - >/dev/null 2>&1 ||
            { echo "no <$h> (libibverbs-dev${rdma_core:+, or $rdma_core/build/include})"; return 1; }
    done
    note "tools present${ccache:+, ccache}; rdma-core $(rdma_core_version)"
}

rdma_core_version() {
    if [ -n "$rdma_core" ]; then # the build's libibverbs.pc: 1.18.65.0 (ABI, then rdma-core)
        echo "$(sed -n 's/^Version: [0-9]*\.[0-9]*\.//p' "$rdma_core/build/lib/pkgconfig/libibverbs.pc") (built in $rdma_core)"
        return
    fi
    # Debian's package version (44.0-2); libibverbs.pc says 1.14.44.0 (ABI, then rdma-core).
    dpkg-query -W -f='${Version}' libibverbs-dev 2>/dev/null ||
        pkg-config --modversion libibverbs 2>/dev/null || echo unknown
}

# ---- fetch -----------------------------------------------------------------------

# shellcheck source=scripts/debsrc.sh
. "$top/scripts/debsrc.sh"

# The source's identity, written to CACHE/source.id; a tarball is extracted into src/.
do_fetch() {
    local tarball='' dir='' id
    if [ -z "$source_arg" ]; then
        mkdir -p "$cache/dl"
        tarball=$(find "$cache/dl" -maxdepth 1 -name "libfabric_$lf_version.orig.tar.*" 2>/dev/null | sed -n 1p)
        if [ -z "$tarball" ]; then
            debsrc_download "$cache/apt" "$cache/dl" libfabric "libfabric_$lf_version.orig.tar." "${suites[@]}" ||
                { echo "cannot download libfabric $lf_version's source from Debian (${suites[*]})"; return 3; }
            tarball=$(find "$cache/dl" -maxdepth 1 -name "libfabric_$lf_version.orig.tar.*" | sed -n 1p)
            [ -n "$tarball" ] || { echo "no libfabric_$lf_version.orig.tar.* after the download"; return 1; }
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
        id="dir:$dir:$(cd "$dir" && find . -path ./.git -prune -o -type f -printf '%P %s %T@\n' | LC_ALL=C sort | sha)"
    else
        id="tarball:$(sha <"$tarball")"
    fi
    if [ "$(cat "$cache/source.id" 2>/dev/null)" = "$id" ] && [ -d "$src" ]; then
        note "cached ${tarball:+$(basename "$tarball")}${dir}"
        return 0
    fi
    chmod -R u+w "$cache/src" 2>/dev/null || true
    rm -rf "$cache/src" "$cache/source.id"
    mkdir -p "$cache/src"
    if [ -n "$dir" ]; then
        cp -a "$dir" "$src"
        rm -rf "$src/.git"
    else
        tar -xf "$tarball" -C "$cache/src"
        [ -d "$src" ] || { echo "$tarball has no libfabric-$lf_version/"; return 1; }
    fi
    grep -q "^AC_INIT(\[libfabric\], \[$lf_version\]" "$src/configure.ac" ||
        { echo "${tarball:-$dir} is not libfabric $lf_version (configure.ac's AC_INIT)"; return 1; }
    echo "$id" >"$cache/source.id"
    note "extracted ${tarball:+$(basename "$tarball")}${dir}"
}

# ---- autogen ---------------------------------------------------------------------

autogen_key() {
    {
        cat "$cache/source.id"
        autoconf --version | sed -n 1p
        automake --version | sed -n 1p
        libtoolize --version | sed -n 1p
    } | sha
}

do_autogen() {
    local key
    key=$(autogen_key)
    if [ "$(cat "$cache/src/.autogen-key" 2>/dev/null)" = "$key" ] && [ -x "$src/configure" ]; then
        note "unchanged (key $key): not rerun"
        return 0
    fi
    chmod -R u+w "$cache/src"
    (cd "$src" && autoreconf -ivf)
    [ -x "$src/configure" ] || { echo "autoreconf made no configure"; return 1; }
    echo "$key" >"$cache/src/.autogen-key"
    chmod -R a-w "$src" # the tree is only ever configured VPATH
    note "configure generated (key $key)"
}

# ---- configure, make, install ----------------------------------------------------

configure_args=(
    --prefix="$prefix"
    --enable-only
    --enable-efa="${rdma_core:+$rdma_core/build}"
    --disable-static
    CC="$cc"
)
[ -n "$rdma_core" ] || configure_args[2]=--enable-efa=yes
[ -z "$rdma_core" ] || configure_args+=("LDFLAGS=-Wl,--enable-new-dtags,-rpath,$rdma_core/build/lib")
configure_args+=("${extra_configure[@]}")

do_configure() {
    local key
    key=$({
        cat "$cache/src/.autogen-key"
        printf '%s\n' "${configure_args[@]}"
        gcc --version | sed -n 1p
        rdma_core_version
    } | sha)
    if [ -f "$builddir/Makefile" ] && [ "$(cat "$builddir/.configure-key" 2>/dev/null)" = "$key" ]; then
        note "unchanged (key $key): not rerun"
        return 0
    fi
    rm -rf "$builddir"
    mkdir -p "$builddir"
    (cd "$builddir" && "$src/configure" "${configure_args[@]}") | tee "$builddir/configure.out"
    local builtin
    builtin=$(sed -n 's/^\*\*\* Built-in providers:[[:space:]]*//p' "$builddir/configure.out" | xargs)
    grep -q '^#define HAVE_EFA 1' "$builddir/config.h" ||
        { echo "configure did not enable the efa provider (see config.log)"; return 1; }
    echo "$key" >"$builddir/.configure-key"
    note "configured ${configure_args[*]}${builtin:+; built-in providers: $builtin}"
}

do_make() {
    make -C "$builddir" -j"$jobs"
    note "built"
}

do_install() {
    make -C "$builddir" install
    local t
    for t in fi_info fi_pingpong; do
        [ -x "$prefix/bin/$t" ] || { echo "no $t in $prefix/bin"; return 1; }
    done
    note "installed libfabric.so, fi_info, fi_pingpong in $prefix"
}

# ---- check -----------------------------------------------------------------------

# name in config.h | what rdma-core gives when it is 1 | what the provider does without
efa_features() {
    cat <<'EOF'
HAVE_RDMA_SIZE|efadv_device_attr.max_rdma_size and device_caps|no RDMA read at all
HAVE_CAPS_RNR_RETRY|EFADV_DEVICE_ATTR_CAPS_RNR_RETRY|RNR retry not configurable
HAVE_EFADV_CQ_EX|efadv_create_cq, efadv_cq_from_ibv_cq_ex, efadv_wc_read_sgid|no extended CQ: unknown peers' GIDs unreadable
HAVE_EFA_DMABUF_MR|ibv_reg_dmabuf_mr|no dma-buf registration
HAVE_IBV_IS_FORK_INITIALIZED|ibv_is_fork_initialized|fork support not checked
HAVE_CAPS_RDMA_WRITE|EFADV_DEVICE_ATTR_CAPS_RDMA_WRITE|never uses RDMA write; efa-direct offers no FI_RMA
HAVE_CAPS_UNSOLICITED_WRITE_RECV|EFADV_DEVICE_ATTR_CAPS_UNSOLICITED_WRITE_RECV|no unsolicited write-recv QPs
HAVE_EFADV_QUERY_MR|efadv_query_mr, struct efadv_mr_attr|fi_efa_ops query_mr returns -FI_ENOSYS
HAVE_EFADV_SL|efadv_qp_init_attr.sl|QPs get no service level (FI_TC_LOW_LATENCY ignored)
HAVE_EFA_DATA_IN_ORDER_ALIGNED_128_BYTES|IBV_QUERY_QP_DATA_IN_ORDER_ALIGNED_128_BYTES|assumes no 128-byte in-order delivery
HAVE_EFA_DATA_PATH_DIRECT|efadv_query_qp_wqs and efadv_query_cq (rdma-core 59)|no direct data path: every work request through libefa (libfabric >= 2.3)
EOF
}

do_check() {
    local fi_info=$prefix/bin/fi_info v provs
    v=$("$fi_info" --version | sed -n 's/^libfabric: //p')
    [ "$v" = "$lf_version" ] || { echo "fi_info --version says libfabric '$v', not $lf_version"; return 1; }
    # fi_info -l lists every provider that registered; efa registers without a device.
    provs=$("$fi_info" -l | sed -n 's/^\([A-Za-z0-9_-]*\):$/\1/p' | LC_ALL=C sort | tr '\n' ' ')
    echo "fi_info -l: $provs"
    [[ " $provs " == *" efa "* ]] || { echo "fi_info -l does not list efa"; return 1; }
    local p others=''
    for p in $provs; do
        case $p in efa | ofi_hook_noop | off_coll) ;; *) others+=" $p" ;; esac
    done
    [ -z "$others" ] || { echo "providers other than efa were built:$others"; return 1; }
    local needed
    needed=$(readelf -d "$prefix/lib/libfabric.so.1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
    echo "libfabric.so.1 needs: $needed"
    [[ " $needed " == *" libefa.so.1 "* && " $needed " == *" libibverbs.so.1 "* ]] ||
        { echo "libfabric.so.1 does not link libefa.so.1 and libibverbs.so.1"; return 1; }
    [[ " $needed " != *librdmacm* ]] || { echo "libfabric.so.1 links librdmacm (another provider?)"; return 1; }
    if [ -n "$rdma_core" ]; then
        local runpath
        runpath=$(readelf -d "$prefix/lib/libfabric.so.1" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
        [[ ":$runpath:" == *":$rdma_core/build/lib:"* ]] ||
            { echo "libfabric.so.1's RUNPATH '$runpath' does not name $rdma_core/build/lib"; return 1; }
        # Whole, then matched: grep -q may leave ldd a closed pipe (SIGPIPE under pipefail).
        local loads
        loads=$(env -u LD_LIBRARY_PATH ldd "$prefix/lib/libfabric.so.1")
        [[ "$loads" == *"libefa.so.1 => $rdma_core/build/lib/"* ]] ||
            { echo "libfabric.so.1 does not load $rdma_core/build/lib/libefa.so.1"; return 1; }
    fi

    local name what without val lacks=''
    {
        echo "# libfabric $lf_version efa provider against rdma-core $(rdma_core_version): configure's checks"
        while IFS='|' read -r name what without; do
            val=$(sed -n "s/^#define $name \([01]\)\$/\1/p" "$builddir/config.h")
            [ -n "$val" ] || { printf '%-42s -  not checked by libfabric %s\n' "$name" "$lf_version"; continue; }
            printf '%-42s %s  %s%s\n' "$name" "$val" "$what" "$([ "$val" = 1 ] || echo " -- without: $without")"
        done < <(efa_features)
    } >"$cache/efa-features.txt"
    cat "$cache/efa-features.txt"
    mkdir -p "$prefix/share/libfabric"
    cp "$cache/efa-features.txt" "$prefix/share/libfabric/efa-features.txt"
    while IFS='|' read -r name what without; do
        if grep -q "^#define $name 0\$" "$builddir/config.h"; then lacks+="${lacks:+, }$name"; fi
    done < <(efa_features)
    note "efa only; rdma-core $(rdma_core_version) lacks: ${lacks:-nothing}"
}

# ---- main --------------------------------------------------------------------------

echo "libfabric-build: libfabric $lf_version, efa provider only; cache $cache, prefix $prefix, logs $logs/libfabric-*"
if [ "$clean" = yes ]; then
    echo "libfabric-build: --clean: removing the cache but its download and ccache"
    chmod -R u+w "$cache/src" 2>/dev/null || true
    find "$cache" -mindepth 1 -maxdepth 1 ! -name dl ! -name ccache -exec rm -rf {} +
    [ "$prefix" = "$cache/install" ] || echo "libfabric-build: --prefix $prefix is not removed"
    mkdir -p "$prefix"
fi

step deps do_deps
step fetch do_fetch
step autogen do_autogen
step configure do_configure
step make do_make
step install do_install
step check do_check

echo "libfabric-build: done in $(($(date +%s) - t_total)) s"
echo "libfabric-build: run: LD_LIBRARY_PATH=<efasim's .libs> $prefix/bin/fi_info -p efa"
echo "libfabric-build: prefix $prefix"
