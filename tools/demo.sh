#!/bin/bash
# SPDX-License-Identifier: MIT
# The main job on a demo file: installs what is missing, builds, creates a temporary image
# file, preallocates it as written zeroes (wzero alloc) and prints its capability record
# (wzero stat). Run as root.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$repo/tools/install-deps.sh"
bash "$repo/tools/build.sh"

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
