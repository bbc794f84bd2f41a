#!/bin/bash
# SPDX-License-Identifier: MIT
# Holds lib/libwzero.map to the ABI policy of docs/abi.md, against lib/libwzero.released
# (the C symbols as releases gave them out, "NODE SYMBOL" per line):
# - every released C symbol is still in its node (not moved to another, not gone);
# - a released node holds nothing else (a new C function goes into WZERO_UNRELEASED);
# - every other C node is WZERO_UNRELEASED, and no node is released by a newer version
#   than the project's (a release renames WZERO_UNRELEASED and bumps the version together);
# - C++ names sit only in WZERO_CXX_<major>.<minor> of the project's version, and that node
#   holds no C name (the C++ API is source-compatible within a minor version only).
# The names in the map against the built library: cmake/check_exports.sh (exports.by_name).
# Usage: check_abi_policy.sh LIBWZERO.map LIBWZERO.released PROJECT_VERSION
# Run by ctest as exports.policy; exports.selftest runs it on broken maps.
set -euo pipefail
map=$1
released=$2
version=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
minor=${version%.*}
cxx_node=WZERO_CXX_$minor

# The map as "C|CXX NODE NAME" rows, one per name, comments stripped; "NODE" rows name the
# nodes. A node opens with "NAME {" and closes with "}" or "} PARENT;", an extern "C++"
# block with 'extern "C++" {' and "};".
sed -e 's|/\*.*\*/||g' "$map" | sed -e '/\/\*/,/\*\//d' |
  awk -v rows="$tmp/rows" -v nodes="$tmp/nodes" '
    /^[[:space:]]*$/ { next }
    /^[[:space:]]*extern[[:space:]]+"C\+\+"[[:space:]]*\{/ { cxx = 1; next }
    /^[[:space:]]*[A-Za-z_][A-Za-z0-9_.]*[[:space:]]*\{/ {
      node = $1; sub(/\{.*/, "", node); print node >nodes; next
    }
    /^[[:space:]]*\}/ { if (cxx) { cxx = 0 } else { node = "" }; next }
    /^[[:space:]]*(global|local):/ { next }
    /^[[:space:]]*\*;/ { next }
    /^[[:space:]]*"/ {
      name = $0; sub(/^[[:space:]]*"/, "", name); sub(/";[[:space:]]*$/, "", name)
      print "CXX " node " " name >rows; next
    }
    /^[[:space:]]*[A-Za-z_][A-Za-z0-9_]*;[[:space:]]*$/ {
      name = $0; gsub(/[[:space:];]/, "", name)
      print (cxx ? "CXX " : "C ") node " " name >rows; next
    }
    { print "unparsed line in the map: " $0 >"/dev/stderr"; bad = 1 }
    END { exit bad }
  '
touch "$tmp/rows" "$tmp/nodes"
grep '^C ' "$tmp/rows" | cut -d' ' -f2- | sort -u >"$tmp/c_in_map" || true
grep -v '^[[:space:]]*\(#\|$\)' "$released" | awk '{ print $1 " " $2 }' | sort -u >"$tmp/c_released"
cut -d' ' -f1 "$tmp/c_released" | sort -u >"$tmp/released_nodes"

status=0
fail() {
  echo "$1" >&2
  sed 's/^/  /' "$2" >&2
  status=1
}

# Released symbols that are no longer where the release put them.
comm -23 "$tmp/c_released" "$tmp/c_in_map" >"$tmp/lost"
[ -s "$tmp/lost" ] && fail "released C symbols moved out of their node or gone (a released node never changes):" "$tmp/lost"
# Names added to a released node.
awk 'NR == FNR { released[$1] = 1; next } $1 in released' "$tmp/released_nodes" "$tmp/c_in_map" |
  comm -23 - "$tmp/c_released" >"$tmp/added"
[ -s "$tmp/added" ] && fail "new C symbols in a released node (new functions go into WZERO_UNRELEASED):" "$tmp/added"
# C nodes that are neither released nor WZERO_UNRELEASED.
grep -v -x -e WZERO_UNRELEASED -e 'WZERO_CXX_.*' "$tmp/nodes" | sort -u | comm -23 - "$tmp/released_nodes" \
  >"$tmp/unknown" || true
[ -s "$tmp/unknown" ] &&
  fail "C nodes neither released (lib/libwzero.released) nor WZERO_UNRELEASED:" "$tmp/unknown"
# Released nodes the map lost entirely are reported above, symbol by symbol. A release newer
# than the project's version means a release renamed the node but did not bump the version.
while read -r node; do
  v=${node#WZERO_}
  if [ "$(printf '%s\n%s\n' "$v" "$minor" | sort -V | tail -n1)" != "$minor" ]; then
    echo "$node is released, but the project's version is $version" >&2
    status=1
  fi
done <"$tmp/released_nodes"
# C++ names only in the C++ node, and no C name there.
awk -v n="$cxx_node" '$1 == "CXX" && $2 != n { count[$2]++ } END { for (c in count) print c ": " count[c] " names" }' \
  "$tmp/rows" >"$tmp/cxx_elsewhere"
[ -s "$tmp/cxx_elsewhere" ] &&
  fail "C++ names outside $cxx_node (the C++ node is named after the project's minor version):" "$tmp/cxx_elsewhere"
awk -v n="$cxx_node" '$1 == "C" && $2 == n' "$tmp/rows" >"$tmp/c_in_cxx"
[ -s "$tmp/c_in_cxx" ] && fail "C names in $cxx_node (they belong to a C node):" "$tmp/c_in_cxx"

if [ "$status" -eq 0 ]; then
  echo "abi policy: $(wc -l <"$tmp/c_released") released C symbols in their nodes," \
    "$(grep -c ' WZERO_UNRELEASED ' "$tmp/rows" || true) unreleased," \
    "$(grep -c '^CXX ' "$tmp/rows") C++ names in $cxx_node"
fi
exit "$status"
