#!/bin/bash
# SPDX-License-Identifier: MIT
# Installs the build into a temporary prefix and checks it as an outside program sees it:
# - the exported symbols of the installed libwzero.so are exactly lib/libwzero.map's names;
# - the example tools/examples/wal_segments.c builds with pkg-config alone and runs;
# - C99 consumers (lib/capi/capi_test.c, and capi_abi_test.c, which calls every C function) and a C++17 consumer (cmake/install_consumer.cpp,
#   which calls every public C++ function) build and run, each twice: with pkg-config
#   (wzero.pc) and with CMake's find_package(wzero).
# Run by ctest as install.consumers.
set -euo pipefail
build=$(readlink -f "$1")
src=$(readlink -f "$2")
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(dirname "$(find "$prefix" -name wzero.pc)")")
export PKG_CONFIG_PATH=$libdir/pkgconfig
export LD_LIBRARY_PATH=$libdir

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

mkdir "$prefix/consumer"
cat >"$prefix/consumer/CMakeLists.txt" <<EOT
cmake_minimum_required(VERSION 3.25)
project(consumer C CXX)
find_package(wzero REQUIRED)
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
echo "install: C and C++ consumers built with pkg-config and find_package, and ran"
