#!/bin/bash
# SPDX-License-Identifier: MIT
# Configures and builds wzero into build/ (warnings are errors, as in CI), through ccache
# when it is installed (tools/ccache.sh).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tools/ccache.sh
. "$repo/tools/ccache.sh"
cmake -S "$repo" -B "$repo/build" -DWZERO_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo "${ccache_args[@]}" >/dev/null
cmake --build "$repo/build" -j "$(nproc)" -- --no-print-directory >/dev/null
