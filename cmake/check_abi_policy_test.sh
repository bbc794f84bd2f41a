#!/bin/bash
# SPDX-License-Identifier: MIT
# The self-test of cmake/check_abi_policy.sh: it passes the real map, passes the map with a
# new function in WZERO_UNRELEASED, and fails each broken copy of the map for the reason the
# copy was broken for (its message is checked, so a checker failing on anything else does
# not count).
# Usage: check_abi_policy_test.sh SOURCE_DIR PROJECT_VERSION
# Run by ctest as exports.selftest.
set -euo pipefail
src=$(readlink -f "$1")
version=$2
check=$src/cmake/check_abi_policy.sh
map=$src/lib/libwzero.map
released=$src/lib/libwzero.released
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
minor=${version%.*}
fail=0
cases=0

# expect_pass NAME SED-SCRIPT
expect_pass() {
  cases=$((cases + 1))
  sed -e "$2" "$map" >"$tmp/$1.map"
  if ! bash "$check" "$tmp/$1.map" "$released" "$version" >"$tmp/$1.out" 2>&1; then
    echo "$1: the checker refused a map the policy allows:" >&2
    sed 's/^/  /' "$tmp/$1.out" >&2
    fail=1
  fi
}
# expect_fail NAME SED-SCRIPT MESSAGE [VERSION]
expect_fail() {
  cases=$((cases + 1))
  sed -e "$2" "$map" >"$tmp/$1.map"
  if cmp -s "$map" "$tmp/$1.map" && [ -z "${4:-}" ]; then
    echo "$1: the sed script changed nothing in the map (the test is stale)" >&2
    fail=1
    return
  fi
  if bash "$check" "$tmp/$1.map" "$released" "${4:-$version}" >"$tmp/$1.out" 2>&1; then
    echo "$1: the checker passed a broken map" >&2
    fail=1
  elif ! grep -q -F "$3" "$tmp/$1.out"; then
    echo "$1: the checker failed, but not with \"$3\":" >&2
    sed 's/^/  /' "$tmp/$1.out" >&2
    fail=1
  fi
}

expect_pass as_is ''
expect_pass unreleased_added \
  "/^WZERO_CXX_/i WZERO_UNRELEASED {\n  global:\n    wz_new_function;\n} WZERO_0.2;\n"
expect_fail released_moved \
  '/^[[:space:]]*wz_free;/d; /^[[:space:]]*wz_last_error;/a\    wz_free;' \
  "moved out of their node or gone"
expect_fail released_gone '/^[[:space:]]*wz_writer_close;/d' "moved out of their node or gone"
expect_fail added_to_released '/^[[:space:]]*wz_writer_close;/a\    wz_new_function;' \
  "new C symbols in a released node"
expect_fail node_unreleased \
  "/^WZERO_CXX_/i WZERO_0.99 {\n  global:\n    wz_new_function;\n} WZERO_0.2;\n" \
  "neither released"
expect_fail cxx_in_c_node \
  '/^[[:space:]]*wz_writer_close;/a\    extern "C++" {\n      "wz::new_function()";\n    };' \
  "C++ names outside WZERO_CXX_$minor"
expect_fail c_in_cxx_node '/^[[:space:]]*extern "C++" {/i\    wz_new_function;' \
  "C names in WZERO_CXX_$minor"
# The project's next minor version, with the map left as it is: the C++ node must follow.
expect_fail cxx_node_stale '' "C++ names outside WZERO_CXX_" "${minor%.*}.$((${minor#*.} + 1)).0"
# A released node newer than the project: a release that did not bump the version.
expect_fail release_ahead '' "is released, but the project's version" "0.1.0"

if [ "$fail" -ne 0 ]; then
  exit 1
fi
echo "abi policy self-test: $cases cases, each broken map refused for its reason"
