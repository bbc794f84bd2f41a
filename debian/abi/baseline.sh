#!/bin/sh
# SPDX-License-Identifier: MIT
# Writes debian/libwzero0.abi, the C ABI that debian/rules holds the built libwzero.so.0 to:
# abidw(1) of LIBRARY (unstripped, with its debug information: the package build's
# debian/tmp copy) without the C++ names, pruned to the C functions and the types they reach
# (debian/abi/prune.py). Run from the source tree, after a release that changed the C ABI
# as docs/abi.md allows:
#   debian/abi/baseline.sh build-deb/wzero-VERSION/debian/tmp/usr/lib/<triplet>/libwzero.so.0
set -eu
lib=${1:?usage: debian/abi/baseline.sh LIBRARY}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
abidw --headers-dir "$(pwd)/include/wzero" --drop-private-types --drop-undefined-syms \
	--no-show-locs --no-comp-dir-path --no-corpus-path --type-id-style hash \
	--suppressions debian/libwzero0.abignore --out-file "$tmp" "$lib"
python3 debian/abi/prune.py "$tmp" debian/libwzero0.abi
