#!/bin/sh
# What `make install` ships besides the libraries, and the Spack recipes:
#
#   sh test/unit/test_packaging.sh BUILD_DIR
#
# - `make install DESTDIR=...` installs efarm.pc (pkg-config finds libefarm
#   and its headers there, and a program built with its flags links and runs),
#   the manual pages, and the Wireshark dissector with its packet table;
# - every manual page renders without a groff warning, and every option a
#   tool's --help names is in the tool's page;
# - the Spack recipes (packaging/spack) pass test/unit/spack_lint.py.
# Prints "PASS name" or "FAIL name: why" per check, then "N passed, N failed";
# exits nonzero if any check failed.
set -u

if [ $# -ne 1 ]; then
    echo "usage: $0 BUILD_DIR" >&2
    exit 2
fi
build=$(cd "$1" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=test/unit/testlib.sh
. "$(dirname "$0")/testlib.sh"

# The install, into a staging directory (DESTDIR) under the configured prefix.
prefix=$(sed -n 's/^prefix = //p' "$build/Makefile")
if make -C "$build" install DESTDIR="$tmp/stage" >"$tmp/install.log" 2>&1; then
    pass make-install
else
    fail make-install "$(tail -n 3 "$tmp/install.log")"
fi
root=$tmp/stage$prefix
for f in lib/pkgconfig/efarm.pc share/efarm/mpich/mpich-netmod-prepare.sh share/man/man1/efarm-info.1 share/man/man1/efarm-pktdump.1 \
    share/man/man1/efarm-pingpong.1 share/man/man1/efasim-info.1 share/man/man7/efarm.7 \
    share/efarm/wireshark/efarm.lua share/efarm/wireshark/efarm_v4.lua include/efarm/efarm_proto.h; do
    if [ -s "$root/$f" ]; then pass "installed $f"; else fail "installed $f" "missing"; fi
done

# The netmod's sources for MPICH builds elsewhere: exactly src/netmod_efarm's.
want=$(cd "$top/src/netmod_efarm" && ls -1 | grep -v -x -e README.md -e install.mk | sort)
got=$(ls -1 "$root/share/efarm/mpich/netmod" 2>/dev/null | sort)
if [ "$want" = "$got" ]; then
    pass installed-netmod-sources
else
    fail installed-netmod-sources "differs from src/netmod_efarm: $(echo "$want" "$got" | tr ' ' '\n' | sort | uniq -u | tr '\n' ' ')"
fi

# pkg-config: flags that build and link a program against the staged libefarm.
pc() {
    PKG_CONFIG_PATH="$root/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$tmp/stage" pkg-config "$@"
}
if [ "$(pc --modversion efarm)" = "$(sed -n 's/^AC_INIT(\[efarm\], \[\([^]]*\)\].*/\1/p' "$top/configure.ac")" ]; then
    pass pkg-config-version
else
    fail pkg-config-version "pkg-config says '$(pc --modversion efarm 2>&1)'"
fi
cat >"$tmp/use.c" <<'PROG'
#include <stdio.h>
#include <efarm_config.h>
int main(void)
{
    unsigned n;
    efarm_config_vars(&n);
    printf("%u tunables\n", n);
    return n == 0;
}
PROG
# shellcheck disable=SC2046 # pkg-config prints a list of flags
if cc -o "$tmp/use" "$tmp/use.c" $(pc --cflags --libs efarm) >"$tmp/cc.log" 2>&1 &&
    LD_LIBRARY_PATH="$root/lib" "$tmp/use" >"$tmp/use.out" 2>&1 && grep -q tunables "$tmp/use.out"; then
    pass pkg-config-builds-a-program
else
    fail pkg-config-builds-a-program "$(cat "$tmp/cc.log" "$tmp/use.out" 2>/dev/null | tail -n 3)"
fi

# Manual pages: no groff warning; the tools' options documented.
for page in "$top"/doc/man/*.[17]; do
    name=$(basename "$page")
    LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z "$page" >"$tmp/groff.out" 2>&1
    if [ -s "$tmp/groff.out" ]; then
        fail "man-renders $name" "$(head -n 2 "$tmp/groff.out")"
    else
        pass "man-renders $name"
    fi
done
for tool in efarm-info efarm-pktdump efarm-pingpong efasim-info; do
    missing=
    for opt in $("$build/tools/$tool" --help 2>&1 | grep -o -- '--[a-z][a-z-]*' | sort -u); do
        grep -q -- "$(echo "$opt" | sed 's/-/\\\\-/g')" "$top/doc/man/$tool.1" || missing="$missing $opt"
    done
    if [ -z "$missing" ]; then
        pass "man-has-options $tool"
    else
        fail "man-has-options $tool" "not in $tool.1:$missing"
    fi
done

# Spack recipes.
if python3 "$top/test/unit/spack_lint.py" "$top/packaging/spack" >"$tmp/spack.out" 2>&1; then
    pass "spack-recipes ($(tail -n 1 "$tmp/spack.out"))"
else
    fail spack-recipes "$(tail -n 3 "$tmp/spack.out")"
fi

summary
