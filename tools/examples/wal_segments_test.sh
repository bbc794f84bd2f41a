#!/bin/bash
# SPDX-License-Identifier: MIT
# ctest example.wal_segments: runs the example on a scratch directory and checks what it
# leaves: every segment 16 MiB of zeroes in SCRATCH/pg_wal, the first one too after its
# appends (re-zeroed).
#   tools/examples/wal_segments_test.sh WAL_SEGMENTS_BINARY SCRATCH_PARENT
set -euo pipefail
bin=$1
scratch=$(mktemp -d "$2/wal_segments.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
"$bin" -n 3 -r 256 -b 8192 "$scratch"
n=0
for seg in "$scratch"/pg_wal/0000000100000000000000*; do
	size=$(stat -c %s "$seg")
	if [ "$size" -ne $((16 << 20)) ]; then
		echo "FAILED: $seg is $size bytes, not 16 MiB" >&2
		exit 1
	fi
	if ! cmp -s -n $((16 << 20)) "$seg" /dev/zero; then
		echo "FAILED: $seg is not all zeroes: $(cmp -n $((16 << 20)) "$seg" /dev/zero 2>&1 || true)" >&2
		exit 1
	fi
	n=$((n + 1))
done
if [ "$n" -ne 3 ] || [ -n "$(find "$scratch" -mindepth 1 \( -name '.*' -o -name '*tmp*' \))" ] ||
	[ "$(find "$scratch" -mindepth 1 -maxdepth 1)" != "$scratch/pg_wal" ]; then
	echo "FAILED: expected exactly 3 segments and no temporaries:" >&2
	ls -laR "$scratch" >&2
	exit 1
fi
echo "wal_segments: 3 segments of 16 MiB zeroes, the recycled one included"
