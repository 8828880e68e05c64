#!/usr/bin/env bash
# test_install.sh — `cmake --install` into a temporary prefix, then build examples/hello.c
# against it twice: with pkg-config (tilec.pc) and with a CMake project using find_package(tilec).
# Usage: bash test_install.sh /path/to/build/tilec   (CTest passes the tilec binary; its folder
# is the build tree). Prints "N passed, M failed" last.
set -u
tool=${1:?usage: test_install.sh /path/to/tilec}
build=$(cd "$(dirname "$tool")" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

if cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1; then ok; else bad "cmake --install"; cat "$tmp/install.log" >&2; fi
for f in include/tilec.h include/tilec_kernel.h include/tilec_tile.h include/tilec_vec.h include/tilec_vec_fns.h include/tilec_ops.h include/tilec_roofline.h include/tilec_bench.h include/tilec_dlpack.h bin/tilec; do
  [ -e "$tmp/prefix/$f" ] && ok || bad "$f not installed"
done
so=$(find "$tmp/prefix" -name 'libtilec.so.0' | head -1)
[ -n "$so" ] && ok || bad "libtilec.so.0 not installed"
[ -n "$(find "$tmp/prefix" -name 'libtilec.a')" ] && ok || bad "libtilec.a not installed"
pc=$(find "$tmp/prefix" -name tilec.pc | head -1)
[ -n "$pc" ] && ok || bad "tilec.pc not installed"
if [ -n "$so" ]; then
  soname=$(objdump -p "$so" 2>/dev/null | awk '/SONAME/ {print $2}')
  [ "$soname" = "libtilec.so.0" ] && ok || bad "SONAME is '$soname'"
fi
libdir=$(dirname "${so:-$tmp/prefix/lib/x}")
# the bench's libxsmm module, when the build made one (libxsmm-dev installed): in <libdir>/tilec,
# where the installed tilec finds it
if [ -e "$build/libtilec_xsmm_peer.so" ]; then
  [ -e "$libdir/tilec/libtilec_xsmm_peer.so" ] && ok || bad "libtilec_xsmm_peer.so not installed in $libdir/tilec"
  "$tmp/prefix/bin/tilec" bench gemm --quick --peers libxsmm --sizes 8x8x8 --threads 1 >"$tmp/xsmm.out" 2>&1
  grep -q "^  libxsmm: [0-9.]* (Debian's static archives in libtilec_xsmm_peer.so)" "$tmp/xsmm.out" && ok ||
    bad "the installed tilec does not find the installed libxsmm module"
fi

# pkg-config
if command -v pkg-config >/dev/null && [ -n "$pc" ]; then
  flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs tilec)
  if cc -o "$tmp/hello_pc" "$src/examples/hello.c" $flags >"$tmp/cc.log" 2>&1; then ok; else bad "cc with pkg-config flags: $flags"; cat "$tmp/cc.log" >&2; fi
  out=$(LD_LIBRARY_PATH=$libdir "$tmp/hello_pc" 2>&1)
  [ "$out" = "hello: OK" ] && ok || bad "hello (pkg-config build) printed '$out'"
else
  echo "pkg-config not found: skipping the pkg-config build" >&2
fi

# CMake package
mkdir -p "$tmp/proj"
cat >"$tmp/proj/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.18)
project(hello C)
find_package(tilec REQUIRED)
add_executable(hello $src/examples/hello.c)
target_link_libraries(hello PRIVATE tilec::tilec)
CM
if cmake -S "$tmp/proj" -B "$tmp/proj/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/cm.log" 2>&1 &&
   cmake --build "$tmp/proj/build" >>"$tmp/cm.log" 2>&1; then ok; else bad "find_package(tilec) project"; cat "$tmp/cm.log" >&2; fi
out=$(LD_LIBRARY_PATH=$libdir "$tmp/proj/build/hello" 2>&1)
[ "$out" = "hello: OK" ] && ok || bad "hello (CMake package build) printed '$out'"

echo "tools_install: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
