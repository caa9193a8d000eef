#!/bin/sh
# SPDX-License-Identifier: MIT
# clattn as a user gets it: configured with --prefix into a temporary
# directory, built and installed there; then examples/attention.c compiled
# with `pkg-config --cflags --libs clattn` against the installed headers and
# library, and run (the OpenCL ICD loader's test/pkgconfig does the same).
# Also: pkg-config works where clblast.pc is absent, the installed clattn
# finds its library through its runpath, and what is installed is what
# should be.
#
# Usage: test_install.sh SOURCE_ROOT
# Exit: 0 pass, 1 fail, 77 skip (no pkg-config or C compiler; or no OpenCL
# device for the example's run, after everything else passed).
set -eu

src=${1:?usage: test_install.sh SOURCE_ROOT}
command -v pkg-config >/dev/null 2>&1 || { echo "SKIP: no pkg-config"; exit 77; }
CC=${CC:-cc}
command -v "$CC" >/dev/null 2>&1 || { echo "SKIP: no C compiler ($CC)"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/clattn-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
prefix=$tmp/prefix

fail() {
    echo "FAIL: $*" >&2
    [ -s "$tmp/log" ] && tail -30 "$tmp/log" >&2
    exit 1
}
# The build under test sets LD_LIBRARY_PATH to its own library; what is
# installed must not need it.
unset LD_LIBRARY_PATH

meson setup "$tmp/build" "$src" --prefix="$prefix" -Dtests=false >"$tmp/log" 2>&1 ||
    fail "meson setup --prefix"
meson compile -C "$tmp/build" >"$tmp/log" 2>&1 || fail "meson compile"
meson install -C "$tmp/build" >"$tmp/log" 2>&1 || fail "meson install"
echo "ok: configured, built and installed into $prefix"

pc=$(find "$prefix" -name clattn.pc)
[ -n "$pc" ] || fail "no clattn.pc installed"
pcdir=$(dirname "$pc")
libdir=$(PKG_CONFIG_PATH=$pcdir pkg-config --variable=libdir clattn)
[ -e "$libdir/libclattn.so.1" ] || fail "no libclattn.so.1 in $libdir"
[ "$(readelf -d "$libdir/libclattn.so" 2>/dev/null | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')" = \
    libclattn.so.1 ] || fail "soname is not libclattn.so.1"
for h in clattn.h types.h version.h model.h device.h; do
    [ -f "$prefix/include/clattn/$h" ] || fail "header $h not installed"
done
[ -x "$prefix/bin/clattn" ] && [ -x "$prefix/bin/clattn-plot-bench" ] ||
    fail "clattn or clattn-plot-bench not installed with its run bit"
if command -v help2man >/dev/null 2>&1; then
    [ -f "$prefix/share/man/man1/clattn.1" ] || fail "help2man present, clattn.1 not installed"
fi
if find "$prefix" -name 'test_*' -o -name 'header_*' | grep -q .; then
    fail "test programs were installed"
fi
echo "ok: library (soname libclattn.so.1), headers, tool, plot script, man page"

# The installed tool finds the installed library by its runpath.
"$prefix/bin/clattn" --version >"$tmp/log" 2>&1 || fail "installed clattn --version"
grep -q "^clattn " "$tmp/log" || fail "installed clattn --version: no version"
echo "ok: installed clattn runs without LD_LIBRARY_PATH ($(head -1 "$tmp/log"))"

# pkg-config with clattn.pc and OpenCL.pc alone, no clblast.pc: --cflags
# --libs must work (CLBlast is only in Libs.private); --static lists it.
mkdir "$tmp/pc"
cp "$pc" "$tmp/pc/"
ocl_pc=$(pkg-config --variable=pcfiledir OpenCL 2>/dev/null)/OpenCL.pc
[ -f "$ocl_pc" ] || fail "no OpenCL.pc to copy"
cp "$ocl_pc" "$tmp/pc/"
PKG_CONFIG_LIBDIR=$tmp/pc PKG_CONFIG_PATH= pkg-config --cflags --libs clattn >"$tmp/log" 2>&1 ||
    fail "pkg-config --cflags --libs clattn fails without clblast.pc"
if grep -q "^Libs.private:.*-lclblast" "$pc"; then
    PKG_CONFIG_LIBDIR=$tmp/pc PKG_CONFIG_PATH= pkg-config --static --libs clattn | grep -q clblast ||
        fail "pkg-config --static --libs clattn lacks -lclblast"
fi
! grep -q "^Requires.private:.*clblast" "$pc" || fail "clblast in Requires.private"
echo "ok: pkg-config --cflags --libs clattn works without clblast.pc"

# The example, built as its comment says.
flags=$(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs clattn)
echo "pkg-config --cflags --libs clattn: $flags"
"$CC" -std=c11 -Wall -Wextra -Werror "$src/examples/attention.c" $flags -o "$tmp/attention" \
    >"$tmp/log" 2>&1 || fail "the example does not build against the installed clattn"
echo "ok: examples/attention.c built against $prefix"
set +e
LD_LIBRARY_PATH=$libdir "$tmp/attention"
rc=$?
set -e
[ "$rc" -eq 77 ] && { echo "SKIP: no OpenCL device to run the example on"; exit 77; }
[ "$rc" -eq 0 ] || fail "the example exited $rc"
echo "PASS"
