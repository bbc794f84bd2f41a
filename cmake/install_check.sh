#!/bin/bash
# Installs the build into a temporary prefix and builds a C consumer of it twice: with
# pkg-config (wzero.pc) and with CMake's find_package(wzero). Run by ctest.
set -euo pipefail
build=$1
src=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(find "$prefix" -name wzero.pc)")
export PKG_CONFIG_PATH=$libdir
# shellcheck disable=SC2046 # pkg-config prints several words on purpose
cc -std=c99 -Wall -Werror "$src/lib/capi/capi_test.c" $(pkg-config --cflags --libs wzero) -o "$prefix/capi_pc"
LD_LIBRARY_PATH=$(dirname "$libdir") "$prefix/capi_pc" "$src/CMakeLists.txt"
mkdir "$prefix/consumer"
cat >"$prefix/consumer/CMakeLists.txt" <<EOT
cmake_minimum_required(VERSION 3.25)
project(consumer C)
find_package(wzero REQUIRED)
add_executable(capi_cmake $src/lib/capi/capi_test.c)
target_link_libraries(capi_cmake PRIVATE wzero::wzero)
EOT
cmake -S "$prefix/consumer" -B "$prefix/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/consumer/build" >/dev/null
LD_LIBRARY_PATH=$(dirname "$libdir") "$prefix/consumer/build/capi_cmake" "$src/CMakeLists.txt"
echo "install: pkg-config and find_package consumers built and ran"
