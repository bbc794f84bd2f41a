#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark on the host: durable 4 KiB overwrites at QD 1 through wz::writer on a loop-backed
# ext4 file preallocated written (wzero alloc) vs unwritten (fallocate), both in the same
# mode (flush: a loop device is write-back without FUA) and as O_DSYNC (dsync), rounds
# interleaved, medians. The ceiling is the same writes on the written file with no durability
# at all (--mode through --unsafe-through: plain O_DIRECT, no flush); "of ceiling" is each
# row's IOPS over it. The public figure on NVMe: 98.8k (written) vs 20.1k (unwritten) IOPS.
#   bench/write-host.sh [OPS] [ROUNDS]       (root; default 5000 writes, 3 rounds)
# WZ_BENCH_BEFORE=BUILD_DIR runs every row a second time in the same rounds with that build's
# wzero (a worktree of an earlier commit built with tools/build.sh), and adds "before" rows
# and each row's after/before ratio.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ops=${1:-5000}
rounds=${2:-3}
wzero=$repo/build/tools/wzero/wzero
before=${WZ_BENCH_BEFORE:+$WZ_BENCH_BEFORE/tools/wzero/wzero}
if [ -n "$before" ] && [ ! -x "$before" ]; then
	echo "WZ_BENCH_BEFORE: no $before" >&2
	exit 1
fi
# shellcheck source=common.sh
. "$repo/bench/common.sh"
bench_ext4_on_loop 2G --direct-io=on
: >"$work/results"
for _ in $(seq "$rounds"); do
	for build in now ${before:+before}; do
		bin=$wzero
		[ "$build" = before ] && bin=$before
		for kind in written unwritten; do
			for mode in flush dsync ceiling; do
				[ "$mode" = ceiling ] && [ "$kind" = unwritten ] && continue
				margs=(--mode "$mode")
				[ "$mode" = ceiling ] && margs=(--mode through --unsafe-through)
				f=$work/mnt/$kind
				rm -f "$f"
				if [ "$kind" = written ]; then
					"$bin" alloc -l 64M "$f" >/dev/null
				else
					fallocate -l 64M "$f"
				fi
				sync
				iops=$("$bin" bench write --json "${margs[@]}" --ops "$ops" --random "$f" | jq .iops)
				echo "$build $kind $mode $iops" >>"$work/results"
			done
		done
	done
done
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
echo "durable 4 KiB random overwrites at QD 1, ext4 on a direct-I/O loop device, median of $rounds rounds"
printf '%-10s %-8s %10s %18s %11s\n' file mode IOPS "written/unwritten" "of ceiling"
# row BUILD KIND MODE: the median IOPS
row() { awk -v b="$1" -v k="$2" -v m="$3" '$1 == b && $2 == k && $3 == m { print $4 }' "$work/results" | median; }
for build in now ${before:+before}; do
	[ "$build" = before ] && echo "with WZ_BENCH_BEFORE's wzero ($before):"
	c=$(row "$build" written ceiling)
	for mode in flush dsync; do
		w=$(row "$build" written "$mode")
		u=$(row "$build" unwritten "$mode")
		printf '%-10s %-8s %10.0f %18s %11.2f\n' written "$mode" "$w" "$(printf '%.2fx' "$(echo "$w / $u" | bc -l)")" \
			"$(echo "$w / $c" | bc -l)"
		printf '%-10s %-8s %10.0f %18s %11.2f\n' unwritten "$mode" "$u" "" "$(echo "$u / $c" | bc -l)"
	done
	printf '%-10s %-8s %10.0f %18s %11.2f\n' written ceiling "$c" "" 1
done
if [ -n "$before" ]; then
	echo "after/before, IOPS of the same row:"
	for kind_mode in "written flush" "written dsync" "unwritten flush" "unwritten dsync" "written ceiling"; do
		read -r kind mode <<<"$kind_mode"
		printf '%-10s %-8s %10.2fx\n' "$kind" "$mode" "$(echo "$(row now "$kind" "$mode") / $(row before "$kind" "$mode")" | bc -l)"
	done
fi
