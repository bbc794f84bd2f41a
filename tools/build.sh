#!/bin/bash
# SPDX-License-Identifier: MIT
# Configures and builds wzero into build/ (warnings are errors, as in CI), through ccache
# when it is installed (tools/ccache.sh).
#   tools/build.sh [TARGET...]    every target, or only the TARGETs (e.g. wz_vm_payload)
# Debug information is line tables only (-g1): backtraces, perf and sanitizer reports keep
# their file:line, and a cold build takes about a third less time than with -g (CI builds
# three trees from scratch); configure a tree of your own with -DCMAKE_BUILD_TYPE=Debug to
# step through locals.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tools/ccache.sh
. "$repo/tools/ccache.sh"
cmake -S "$repo" -B "$repo/build" -DWZERO_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCMAKE_C_FLAGS_RELWITHDEBINFO='-O2 -g1 -DNDEBUG' -DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O2 -g1 -DNDEBUG' \
	"${ccache_args[@]}" >/dev/null
targets=()
[ $# -eq 0 ] || targets=(--target "$@")
cmake --build "$repo/build" -j "$(nproc)" "${targets[@]}" -- --no-print-directory >/dev/null
