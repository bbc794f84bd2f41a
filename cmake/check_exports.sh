#!/bin/bash
# SPDX-License-Identifier: MIT
# Checks the exported dynamic symbols of libwzero against lib/libwzero.map, both ways:
# every defined dynamic symbol is listed by name in the map (nothing private leaks through
# a glob or an inline member), and every name in the map is exported (a typo in the map
# would otherwise drop a public function silently, and programs would fail to link).
# Usage: check_exports.sh LIBWZERO.so LIBWZERO.map
set -euo pipefail
lib=$1
map=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The map's names: bare C names ending in ';' and quoted C++ names, version nodes and
# the local wildcard excluded, comments stripped.
sed -e 's|/\*.*\*/||g' "$map" | sed -e '/\/\*/,/\*\//d' |
  awk '
    /^[[:space:]]*"/ { sub(/^[[:space:]]*"/, ""); sub(/";[[:space:]]*$/, ""); print; next }
    /^[[:space:]]*[A-Za-z_][A-Za-z0-9_]*;[[:space:]]*$/ { gsub(/[[:space:];]/, ""); print }
  ' | sort -u >"$tmp/listed"

# What the library exports: defined dynamic symbols, demangled, version suffix removed.
# The version node itself shows up as an absolute symbol named after it.
nm -DC --defined-only "$lib" |
  awk '$2 != "A" { $1 = ""; $2 = ""; sub(/^  /, ""); print }' >"$tmp/exported.raw"
if grep -v '@@WZERO_' "$tmp/exported.raw" >"$tmp/unversioned"; then
  echo "exported without a version node:" >&2
  cat "$tmp/unversioned" >&2
  exit 1
fi
sed -e 's/@@WZERO_[A-Z_]*[0-9.]*$//' "$tmp/exported.raw" | sort -u >"$tmp/exported"

status=0
if ! comm -23 "$tmp/exported" "$tmp/listed" >"$tmp/extra" || [ -s "$tmp/extra" ]; then
  echo "exported but not in $map (private symbols leaking out):" >&2
  sed 's/^/  /' "$tmp/extra" >&2
  status=1
fi
if ! comm -13 "$tmp/exported" "$tmp/listed" >"$tmp/missing" || [ -s "$tmp/missing" ]; then
  echo "listed in $map but not exported (programs calling these will not link):" >&2
  sed 's/^/  /' "$tmp/missing" >&2
  status=1
fi
if [ "$status" -eq 0 ]; then
  echo "exports: $(wc -l <"$tmp/exported") symbols, exactly the names in $(basename "$map")"
fi
exit "$status"
