#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark on the host: durable 4 KiB random overwrites through wz::writer's asynchronous API
# at QD 1 and QD 8, on three targets: a file on ext4 over a direct-I/O loop device
# preallocated written (wzero alloc) or unwritten (fallocate), and a raw direct-I/O loop
# device of its own. Each in auto (what wzero picks: flush mode here, a loop device being
# write-back without FUA), flush and dsync (O_DSYNC, the baseline auto must never lose to),
# rounds interleaved, medians. The ceiling is the same writes with no durability at all
# (--mode through --unsafe-through: plain O_DIRECT, no flush), on the written file and on the
# raw device; "of ceiling" is each row's IOPS over its target's. Each round runs the modes in
# another order. The summary gives auto over
# dsync per target and queue depth (at least 1 is the goal) and written over unwritten (the
# reason to preallocate written extents; the public figure on NVMe: 98.8k against 20.1k IOPS).
#   bench/write-host.sh [OPS] [ROUNDS]       (root; default 5000 writes, 3 rounds)
# WZ_BENCH_BEFORE=BUILD_DIR runs every row a second time in the same rounds with that build's
# wzero (a worktree of an earlier commit built with tools/build.sh), and adds "before" rows
# and each row's after/before ratio.
# WZ_BENCH_JSON=FILE also writes the results as JSON to FILE (what bench/plot.sh draws): the
# run's command, date and machine, one row per build, target, QD and mode with the printed
# medians plus the p99 latency, and every run's own `wzero bench write --json` record. What
# is printed stays the same.
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
# shellcheck source=json.sh
. "$repo/bench/json.sh"
bench_ext4_on_loop 2G --direct-io=on
# The raw target: a loop device of its own over an image beside the filesystem's, written
# whole first: a write into a hole of a sparse image allocates blocks in the filesystem
# under it, a cost only the runs that come first would pay.
dd if=/dev/zero of="$work/raw.img" bs=1M count=256 oflag=direct status=none
raw=$(losetup -f --show --direct-io=on "$work/raw.img")
trap 'bench_cleanup; losetup -d "$raw"' EXIT
: >"$work/results"
modes_of() { # target
	case $1 in
	unwritten) echo auto flush dsync ;;
	*) echo auto flush dsync ceiling ;;
	esac
}
# rotated N WORD...: the words, starting at the Nth (modulo their count): each round runs the
# modes in another order, so that none always runs first or last.
rotated() {
	local n=$1 i
	shift
	local -a w=("$@")
	for ((i = 0; i < ${#w[@]}; i++)); do echo "${w[(i + n) % ${#w[@]}]}"; done
}
for round in $(seq "$rounds"); do
	for build in now ${before:+before}; do
		bin=$wzero
		[ "$build" = before ] && bin=$before
		for qd in 1 8; do
			for target in written unwritten raw; do
				# shellcheck disable=SC2046 # the modes, one word each
				for mode in $(rotated "$round" $(modes_of "$target")); do
					margs=()
					case $mode in
					auto) ;;
					ceiling) margs=(--mode through --unsafe-through) ;;
					*) margs=(--mode "$mode") ;;
					esac
					path=$raw
					if [ "$target" != raw ]; then
						path=$work/mnt/$target
						rm -f "$path"
						if [ "$target" = written ]; then
							"$bin" alloc -l 64M "$path" >/dev/null
						else
							fallocate -l 64M "$path"
						fi
					fi
					# Every run starts with nothing left to write back below it: the ceiling's
					# writes, which no flush followed, would otherwise be flushed by the first
					# durable write of the run after it (the loop devices' images sit on this
					# machine's own disk, which has a cache of its own).
					sync
					j=$("$bin" bench write --json "${margs[@]}" --qd "$qd" --ops "$ops" --random "$path" | jq -c .)
					jq -r --arg p "$build $target $qd $mode" '"\($p) \(.iops) \(.latency_us.p50) \(.latency_us.p99)"' \
						<<<"$j" >>"$work/results"
					if [ -n "${WZ_BENCH_JSON:-}" ]; then
						jq -c --arg b "$build" --arg t "$target" --argjson q "$qd" --arg m "$mode" --argjson r "$round" \
							'{build: $b, target: $t, qd: $q, mode: $m, round: $r, result: .}' <<<"$j" >>"$work/json-runs"
					fi
				done
			done
		done
	done
done
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# cell BUILD TARGET QD MODE FIELD: the median of FIELD (5: IOPS, 6: p50 us, 7: p99 us)
cell() {
	awk -v b="$1" -v t="$2" -v q="$3" -v m="$4" -v f="$5" '$1 == b && $2 == t && $3 == q && $4 == m { print $f }' \
		"$work/results" | median
}
ratio() { printf '%.2fx' "$(echo "$1 / $2" | bc -l)"; }
echo "durable 4 KiB random overwrites, asynchronous API, ext4 on a direct-I/O loop device (written and"
echo "unwritten file) and a raw direct-I/O loop device, $ops writes each, median of $rounds rounds"
for build in now ${before:+before}; do
	[ "$build" = before ] && echo "with WZ_BENCH_BEFORE's wzero ($before):"
	printf '%-10s %3s %-8s %9s %9s %11s\n' target QD mode IOPS "p50 us" "of ceiling"
	for qd in 1 8; do
		for target in written unwritten raw; do
			ct=$target
			[ "$target" = unwritten ] && ct=written
			c=$(cell "$build" "$ct" "$qd" ceiling 5)
			for mode in $(modes_of "$target"); do
				i=$(cell "$build" "$target" "$qd" "$mode" 5)
				p50=$(cell "$build" "$target" "$qd" "$mode" 6)
				printf '%-10s %3s %-8s %9.0f %9.1f %11.2f\n' "$target" "$qd" "$mode" "$i" "$p50" \
					"$(echo "$i / $c" | bc -l)"
				[ -n "${WZ_BENCH_JSON:-}" ] || continue
				jq -nc --arg b "$build" --arg t "$target" --argjson q "$qd" --arg m "$mode" \
					--argjson iops "$i" --argjson p50 "$p50" \
					--argjson p99 "$(cell "$build" "$target" "$qd" "$mode" 7)" --argjson ceil "$c" \
					'{build: $b, target: $t, qd: $q, mode: $m, iops: $iops, p50_us: $p50, p99_us: $p99,
					  of_ceiling: ($iops / $ceil)}' >>"$work/json-rows"
			done
		done
	done
	echo "auto over dsync, IOPS (at least 1.00x is the goal):"
	for qd in 1 8; do
		line="  QD $qd:"
		for target in written unwritten raw; do
			line+=" $target $(ratio "$(cell "$build" "$target" "$qd" auto 5)" "$(cell "$build" "$target" "$qd" dsync 5)")"
		done
		echo "$line"
	done
	echo "written over unwritten, IOPS:"
	for qd in 1 8; do
		line="  QD $qd:"
		for mode in auto dsync; do
			line+=" $mode $(ratio "$(cell "$build" written "$qd" "$mode" 5)" "$(cell "$build" unwritten "$qd" "$mode" 5)")"
		done
		echo "$line"
	done
done
if [ -n "$before" ]; then
	echo "after/before, IOPS of the same row:"
	for qd in 1 8; do
		for target in written unwritten raw; do
			for mode in $(modes_of "$target"); do
				printf '%-10s %3s %-8s %9s\n' "$target" "$qd" "$mode" \
					"$(ratio "$(cell now "$target" "$qd" "$mode" 5)" "$(cell before "$target" "$qd" "$mode" 5)")"
			done
		done
	done
fi
if [ -n "${WZ_BENCH_JSON:-}" ]; then
	jq -n --arg cmd "bench/write-host.sh $ops $rounds" --arg date "$(bench_json_date)" \
		--argjson machine "$(bench_json_machine)" --arg before "$before" \
		--argjson ops "$ops" --argjson rounds "$rounds" \
		--slurpfile rows "$work/json-rows" --slurpfile runs "$work/json-runs" \
		'{license: "SPDX-License-Identifier: MIT", benchmark: "write-host",
		  command: ((if $before != "" then "WZ_BENCH_BEFORE=... " else "" end) + $cmd), date: $date,
		  machine: $machine,
		  targets: {written: "64 MiB file preallocated by wzero alloc, ext4 on a 2 GiB direct-I/O loop device",
		            unwritten: "64 MiB file preallocated by fallocate (unwritten extents), same ext4",
		            raw: "a 256 MiB direct-I/O loop device of its own"},
		  ops: $ops, rounds: $rounds, qds: [1, 8], rows: $rows, runs: $runs}' | bench_json_write "$WZ_BENCH_JSON" rows runs
fi
