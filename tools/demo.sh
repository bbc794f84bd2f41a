#!/bin/bash
# SPDX-License-Identifier: MIT
# The main job on a demo file: installs what building needs and is missing (not the test
# stack: tools/test-all.sh installs that), builds the CLI, creates a temporary image file,
# preallocates it as written zeroes (wzero alloc) and prints its capability record
# (wzero stat). Run as root.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$repo/tools/install-deps.sh" --build
bash "$repo/tools/build.sh" wzero_cli

img=$(mktemp /var/tmp/wzero-demo.XXXXXX)
trap 'rm -f "$img"' EXIT
echo "== wzero alloc -v -l 256MiB $img"
"$repo/build/tools/wzero/wzero" alloc -v -l 256MiB "$img"
echo
echo "== wzero stat $img"
"$repo/build/tools/wzero/wzero" stat "$img"
echo
echo "== wzero stat --record $img | jq '{recommended_method, cache}'"
"$repo/build/tools/wzero/wzero" stat --record "$img" | jq '{recommended_method, cache}'
