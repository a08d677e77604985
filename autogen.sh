#!/bin/sh
# Regenerate the build system (configure, Makefile.in, config.h.in).
set -e
cd "$(dirname "$0")"
mkdir -p m4 build-aux
autoreconf --install --force --warnings=all,no-portability >/dev/null
echo "autogen.sh: now run ./configure"
