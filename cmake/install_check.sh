#!/bin/bash
# SPDX-License-Identifier: MIT
# Installs the build into a temporary prefix and checks it as an outside program sees it:
# - the installed library is libwzero.so.VERSION with the soname libwzero.so.SOVERSION and
#   its links, wzero.pc and wz_version() say VERSION, find_package(wzero MAJOR.MINOR) finds
#   it, and C programs depend on C symbol versions only (docs/abi.md);
# - the exported symbols of the installed libwzero.so are exactly lib/libwzero.map's names;
# - the example tools/examples/wal_segments.c builds with pkg-config alone and runs;
# - C99 consumers (lib/capi/capi_test.c, and capi_abi_test.c, which calls every C function) and a C++17 consumer (cmake/install_consumer.cpp,
#   which calls every public C++ function) build and run, each twice: with pkg-config
#   (wzero.pc) and with CMake's find_package(wzero).
# Run by ctest as install.consumers.
set -euo pipefail
build=$(readlink -f "$1")
src=$(readlink -f "$2")
version=${3:?usage: install_check.sh BUILD_DIR SOURCE_DIR VERSION SOVERSION}
soversion=${4:?usage: install_check.sh BUILD_DIR SOURCE_DIR VERSION SOVERSION}
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(dirname "$(find "$prefix" -name wzero.pc)")")
export PKG_CONFIG_PATH=$libdir/pkgconfig
export LD_LIBRARY_PATH=$libdir

fail() {
  echo "install.consumers: $*" >&2
  exit 1
}
# The file, its soname and the links a loader and a linker follow.
if [ ! -f "$libdir/libwzero.so.$version" ] || [ -L "$libdir/libwzero.so.$version" ]; then
  fail "no file libwzero.so.$version under $libdir"
fi
soname=$(readelf -d "$libdir/libwzero.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libwzero.so.$soversion" ] || fail "soname '$soname', not libwzero.so.$soversion"
[ "$(readlink "$libdir/libwzero.so.$soversion")" = "libwzero.so.$version" ] ||
  fail "libwzero.so.$soversion does not link to libwzero.so.$version"
[ "$(readlink "$libdir/libwzero.so")" = "libwzero.so.$soversion" ] ||
  fail "libwzero.so does not link to libwzero.so.$soversion"
[ "$(pkg-config --modversion wzero)" = "$version" ] || fail "wzero.pc says $(pkg-config --modversion wzero), not $version"
printf '#include <stdio.h>\n#include <wzero/wzero.h>\nint main(void) { return puts(wz_version()) < 0; }\n' \
  >"$prefix/version.c"
# shellcheck disable=SC2046 # pkg-config prints several words on purpose
cc -std=c99 -Wall -Werror "$prefix/version.c" $(pkg-config --cflags --libs wzero) -o "$prefix/version"
[ "$("$prefix/version")" = "$version" ] || fail "wz_version() says $("$prefix/version"), not $version"

bash "$src/cmake/check_exports.sh" "$(readlink -f "$libdir/libwzero.so")" "$src/lib/libwzero.map"
# The bash completions land under the prefix (bash-completion's completionsdir made relative).
for completion in wzero wzero-fallocate; do
  [ -f "$prefix/share/bash-completion/completions/$completion" ] ||
    { echo "install.consumers: no share/bash-completion/completions/$completion under the prefix" >&2; exit 1; }
done

mkdir "$prefix/scratch-pc" "$prefix/scratch-cmake"
# shellcheck disable=SC2046 # pkg-config prints several words on purpose
cc -std=c99 -Wall -Werror "$src/lib/capi/capi_test.c" $(pkg-config --cflags --libs wzero) -o "$prefix/capi_pc"
"$prefix/capi_pc" "$src/CMakeLists.txt"
# shellcheck disable=SC2046
cc -std=c99 -Wall -Werror -pthread "$src/lib/capi/capi_abi_test.c" $(pkg-config --cflags --libs wzero) \
  -o "$prefix/capi_abi_pc"
"$prefix/capi_abi_pc" "$prefix/scratch-pc"
# shellcheck disable=SC2046
cc -std=c99 -Wall -Wextra -pedantic -Werror "$src/tools/examples/wal_segments.c" $(pkg-config --cflags --libs wzero) \
  -o "$prefix/wal_segments_pc"
bash "$src/tools/examples/wal_segments_test.sh" "$prefix/wal_segments_pc" "$prefix" >/dev/null
# shellcheck disable=SC2046
c++ -std=c++17 -Wall -Wextra -Werror "$src/cmake/install_consumer.cpp" $(pkg-config --cflags --libs wzero) \
  -o "$prefix/cxx_pc"
"$prefix/cxx_pc" "$prefix/scratch-pc"
# A C program needs only the C API's symbol versions, which no minor release renames; a C++
# program needs the C++ node of this minor version.
for program in capi_pc capi_abi_pc wal_segments_pc; do
  if needs=$(objdump -p "$prefix/$program" | grep -o 'WZERO_CXX_[0-9.]*'); then
    fail "$program (C) depends on the C++ symbol version $needs"
  fi
done
objdump -p "$prefix/cxx_pc" | grep -q "WZERO_CXX_${version%.*}\$" ||
  fail "cxx_pc (C++) does not depend on WZERO_CXX_${version%.*}"

mkdir "$prefix/consumer"
cat >"$prefix/consumer/CMakeLists.txt" <<EOT
cmake_minimum_required(VERSION 3.25)
project(consumer C CXX)
find_package(wzero ${version%.*} REQUIRED)
add_executable(capi_cmake $src/lib/capi/capi_test.c)
target_link_libraries(capi_cmake PRIVATE wzero::wzero)
add_executable(cxx_cmake $src/cmake/install_consumer.cpp)
set_target_properties(cxx_cmake PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
target_link_libraries(cxx_cmake PRIVATE wzero::wzero)
EOT
cmake -S "$prefix/consumer" -B "$prefix/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/consumer/build" >/dev/null
"$prefix/consumer/build/capi_cmake" "$src/CMakeLists.txt"
"$prefix/consumer/build/cxx_cmake" "$prefix/scratch-cmake"
echo "install: libwzero.so.$version (soname libwzero.so.$soversion); C and C++ consumers built with" \
  "pkg-config and find_package, and ran"
