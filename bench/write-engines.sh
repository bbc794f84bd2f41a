#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark on the host: the durable writer on its two I/O engines side by side, io_uring and
# psync (the thread pool used where io_uring cannot be set up: WZERO_ENGINE=psync), on one
# preallocated (written) file on ext4 over a direct-I/O loop device. For each of flush and
# dsync mode: the asynchronous API at QD 1, 16 and 64, and the synchronous API from 4 threads
# (which is pwrite on both engines: the control). The ceiling is the same writes with no
# durability at all (mode through with --unsafe-through: plain O_DIRECT, no flush, no FUA), on
# the same engine and load; "of ceiling" is each row's IOPS over it. Rounds interleaved,
# medians of IOPS, p99 latency, CPU per write and flushes per write.
#   bench/write-engines.sh [OPS] [ROUNDS]    (root; default 4000 writes, 3 rounds)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ops=${1:-4000}
rounds=${2:-3}
wzero=$repo/build/tools/wzero/wzero
# shellcheck source=common.sh
. "$repo/bench/common.sh"
bench_ext4_on_loop 2G --direct-io=on
f=$work/mnt/wal
"$wzero" alloc -l 256M "$f" >/dev/null
sync
: >"$work/results"
loads=("--qd 1" "--qd 16" "--qd 64" "--threads 4")
for _ in $(seq "$rounds"); do
	for mode in flush dsync ceiling; do
		margs=(--mode "$mode")
		[ "$mode" = ceiling ] && margs=(--mode through --unsafe-through)
		for load in "${loads[@]}"; do
			for engine in io_uring psync; do
				# shellcheck disable=SC2086 # load is two words
				WZERO_ENGINE=$engine "$wzero" bench write --json "${margs[@]}" $load --ops "$ops" --random "$f" |
					jq -r --arg m "$mode" --arg l "${load// /=}" --arg e "$engine" \
						'[$m, $l, $e, .engine, .iops, .latency_us.p99, .cpu_us_per_io, (.flushes / .writes)] | @tsv' \
						>>"$work/results"
			done
		done
	done
done
# Every run used the engine asked for (a psync run on io_uring would compare nothing).
awk -F'\t' '$3 != $4 { print "engine asked " $3 ", used " $4; bad = 1 } END { exit bad }' "$work/results"
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
col() { awk -F'\t' -v m="$1" -v l="$2" -v e="$3" -v c="$4" '$1 == m && $2 == l && $3 == e { print $c }' \
	"$work/results" | median; }
echo "durable 4 KiB random overwrites of a written file, ext4 on a direct-I/O loop device, median of $rounds rounds"
printf '%-7s %-12s %-9s %9s %11s %11s %12s %14s\n' mode load engine IOPS "of ceiling" "p99 (us)" "CPU us/write" \
	"flushes/write"
for mode in flush dsync ceiling; do
	for load in "${loads[@]}"; do
		for engine in io_uring psync; do
			l=${load// /=}
			iops=$(col "$mode" "$l" "$engine" 5)
			printf '%-7s %-12s %-9s %9.0f %11.2f %11.0f %12.1f %14.3f\n' "$mode" "${load#--}" "$engine" "$iops" \
				"$(echo "$iops / $(col ceiling "$l" "$engine" 5)" | bc -l)" "$(col "$mode" "$l" "$engine" 6)" \
				"$(col "$mode" "$l" "$engine" 7)" "$(col "$mode" "$l" "$engine" 8)"
		done
	done
done
