#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark: the two I/O engines side by side: `wzero alloc --method write` on
# io_uring and on psync (the thread pool doing pwrite), on a file in ext4 over a loop device
# and on a loop device itself, at several queue depths, rounds interleaved so that every
# contender sees the same machine noise. Reports the median time and MiB/s, and psync's
# speed relative to io_uring at the same queue depth.
#   bench/engine.sh [SIZE_MIB] [ROUNDS] [QUEUE_DEPTHS]   (root; default 512 MiB, 3, "1 4 8 32")
# WZ_BENCH_ENGINES (default "io_uring psync") and WZERO (the binary) are for measuring
# variants, e.g. a build with another psync thread cap.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
size_mib=${1:-512}
rounds=${2:-3}
read -r -a depths <<<"${3:-1 4 8 32}"
read -r -a engines <<<"${WZ_BENCH_ENGINES:-io_uring psync}"
wzero=${WZERO:-$repo/build/tools/wzero/wzero}
if [ ! -x "$wzero" ]; then
	echo "build first (tools/build.sh)" >&2
	exit 1
fi

# shellcheck source=common.sh
. "$repo/bench/common.sh"
# Direct I/O from the loop device to its backing file: queue depth reaches the disk as on a
# real device (in buffered mode one loop worker serialises everything).
bench_ext4_on_loop $((size_mib * 2 + 1024))M --direct-io=on
f=$work/mnt/target
# The raw target: a second loop device, also direct I/O, over its own image.
truncate -s "${size_mib}M" "$work/raw.img"
raw=$(losetup -f --show --direct-io=on "$work/raw.img")
trap 'losetup -d "$raw" 2>/dev/null; bench_cleanup' EXIT

now() { date +%s.%N; }
timed() { # name target command...
	local name=$1 target=$2 t0 t1
	shift 2
	[ "$target" = file ] && rm -f "$f"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	t0=$(now)
	"$@" >"$work/last.log" 2>&1 || { echo "$name failed:" >&2; cat "$work/last.log" >&2; exit 1; }
	t1=$(now)
	grep -qE " on ${name%%-*}(,|$)" "$work/last.log" || { echo "$name did not run on ${name%%-*}:" >&2; cat "$work/last.log" >&2; exit 1; }
	echo "$target $name $(echo "$t1 - $t0" | bc -l)" >>"$work/times"
}
: >"$work/times"
for _ in $(seq "$rounds"); do
	for qd in "${depths[@]}"; do
		for e in "${engines[@]}"; do
			timed "$e-qd$qd" file "$wzero" --engine "$e" alloc --method write --verify=none --queue-depth "$qd" \
				-l "${size_mib}M" "$f"
			timed "$e-qd$qd" raw "$wzero" --engine "$e" alloc --method write --verify=none --queue-depth "$qd" \
				-f -l "${size_mib}M" "$raw"
		done
	done
done

median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
echo "wzero alloc --method write of ${size_mib} MiB, 1 MiB writes, median of $rounds interleaved rounds"
echo "file: ext4 over a loop device; raw: a loop device (both direct I/O to their backing files)"
printf '%-6s %-4s %-9s %9s %8s %12s\n' target qd engine seconds MiB/s "vs io_uring"
for target in file raw; do
	for qd in "${depths[@]}"; do
		base=
		for e in "${engines[@]}"; do
			t=$(awk -v t="$target" -v m="$e-qd$qd" '$1 == t && $2 == m { print $3 }' "$work/times" | median)
			[ -z "$base" ] && base=$t
			printf '%-6s %-4s %-9s %9.3f %8.0f %11.2fx\n' "$target" "$qd" "$e" "$t" \
				"$(echo "$size_mib / $t" | bc -l)" "$(echo "$base / $t" | bc -l)"
		done
	done
done
