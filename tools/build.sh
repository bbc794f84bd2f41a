#!/bin/bash
# SPDX-License-Identifier: MIT
# Configures and builds wzero into build/ (warnings are errors, as in CI).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cmake -S "$repo" -B "$repo/build" -DWZERO_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$repo/build" -j "$(nproc)" -- --no-print-directory >/dev/null
