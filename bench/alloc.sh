#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark: zero-filling a file on a loop-backed ext4, side by side in one run, rounds
# interleaved so that every contender sees the same machine noise. Reports medians and
# ratios against `dd if=/dev/zero bs=2M oflag=direct`, plus the peak RSS of walking and
# planning a 64 GiB sparse file with 1 million extents (wzero alloc --dry-run).
#   bench/alloc.sh [SIZE_MIB] [ROUNDS]      (root; default 1024 MiB, 5 rounds)
# WZ_BENCH_BEFORE=BUILD_DIR adds that build's wzero (a worktree of an earlier commit built with
# tools/build.sh) to every round as wzero-alloc-before, and its RSS: a change's before and
# after, side by side.
# WZ_BENCH_JSON=FILE also writes the results as JSON to FILE (what bench/plot.sh draws): the
# run's command, date and machine, the parameters, one row per contender with the printed
# median seconds, MiB/s and speed against dd, every round's own time, the methods wzero alloc
# plans here (its --dry-run) and the memory figure. What is printed stays the same.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
size_mib=${1:-1024}
rounds=${2:-5}
wzero=$repo/build/tools/wzero/wzero
frag=$repo/build/bench/wzero_make_fragmented
before=${WZ_BENCH_BEFORE:+$WZ_BENCH_BEFORE/tools/wzero/wzero}
if [ -n "$before" ] && [ ! -x "$before" ]; then
	echo "WZ_BENCH_BEFORE: no $before" >&2
	exit 1
fi
command -v fio >/dev/null || apt-get install -y -qq fio >/dev/null
if [ ! -x "$wzero" ] || [ ! -x "$frag" ]; then
	echo "build first (tools/build.sh)" >&2
	exit 1
fi

# shellcheck source=common.sh
. "$repo/bench/common.sh"
# shellcheck source=json.sh
. "$repo/bench/json.sh"
# The loop device does direct I/O to its backing file (losetup --direct-io=on), so queue
# depth reaches the disk as on a real device; WZ_BENCH_LOOP=buffered for the default loop
# mode, where one worker thread copies every request into the backing file's page cache.
loop_mode=${WZ_BENCH_LOOP:-direct}
case $loop_mode in
direct) loop_opt=--direct-io=on ;;
buffered) loop_opt= ;;
*) echo "WZ_BENCH_LOOP: direct or buffered" >&2; exit 1 ;;
esac
# shellcheck disable=SC2086 # the option is one word or none
# Room for the zeroing runs and for the 64 GiB file of the memory figure below, which
# alloc --dry-run checks against the free space (the backing file is sparse: it costs nothing).
bench_ext4_on_loop $((size_mib * 3 + 72 * 1024))M $loop_opt
f=$work/mnt/target

now() { date +%s.%N; }
timed() { # name command...
	local name=$1 t0 t1
	shift
	rm -f "$f"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	t0=$(now)
	"$@" >"$work/last.log" 2>&1 || { echo "$name failed:" >&2; cat "$work/last.log" >&2; exit 1; }
	t1=$(now)
	echo "$name $(echo "$t1 - $t0" | bc -l)" >>"$work/times"
}
: >"$work/times"
for _ in $(seq "$rounds"); do
	timed "dd-bs2M-direct" dd if=/dev/zero of="$f" bs=2M count=$((size_mib / 2)) oflag=direct conv=fsync
	timed "wzero-alloc" "$wzero" alloc -l "${size_mib}M" --verify=none "$f"
	if [ -n "$before" ]; then
		timed "wzero-alloc-before" "$before" alloc -l "${size_mib}M" --verify=none "$f"
	fi
	timed "fallocate-z+dd" sh -c "touch '$f' && fallocate -z -l ${size_mib}M '$f' && dd if=/dev/zero of='$f' bs=2M count=$((size_mib / 2)) oflag=direct conv=notrunc,fsync"
	timed "posix_fallocate" sh -c "fallocate -x -l ${size_mib}M '$f' && sync '$f'"
	timed "fio-qd32-bs1M" fio --name=z --filename="$f" --rw=write --bs=1M --iodepth=32 --direct=1 \
		--ioengine=io_uring --size="${size_mib}M" --zero_buffers --end_fsync=1
done

median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
base=$(awk '$1 == "dd-bs2M-direct" { print $2 }' "$work/times" | median)
echo "zeroing ${size_mib} MiB on ext4 over a loop device ($loop_mode I/O to its backing file), median of $rounds interleaved rounds"
printf '%-18s %10s %10s %14s\n' "method" "seconds" "MiB/s" "speed vs dd"
for m in dd-bs2M-direct wzero-alloc ${before:+wzero-alloc-before} fallocate-z+dd posix_fallocate fio-qd32-bs1M; do
	t=$(awk -v m="$m" '$1 == m { print $2 }' "$work/times" | median)
	printf '%-18s %10.3f %10.0f %13.2fx\n' "$m" "$t" "$(echo "$size_mib / $t" | bc -l)" "$(echo "$base / $t" | bc -l)"
	if [ -n "${WZ_BENCH_JSON:-}" ]; then
		# bc writes .437 for 0.437, which is no JSON number: printf makes it one.
		jq -nc --arg m "$m" --argjson t "$(printf '%.9f' "$t")" --argjson base "$(printf '%.9f' "$base")" \
			--argjson size "$size_mib" \
			'{method: $m, seconds: $t, mib_per_s: ($size / $t), speed_vs_dd: ($base / $t),
			  written_zeroes: ($m != "posix_fallocate")}' >>"$work/json-rows"
	fi
done
echo "(posix_fallocate leaves unwritten extents: it is the floor, not a written-zeroes peer)"

# Memory: 64 GiB sparse file, one 4 KiB extent every 64 KiB = 1,048,576 extents.
rm -f "$f"
if [ -n "${WZ_BENCH_JSON:-}" ]; then
	# What wzero alloc does on this target (the rounds above discard its output).
	"$wzero" alloc -l "${size_mib}M" --dry-run "$f" >"$work/plan"
fi
"$frag" "$work/mnt/frag" $((64 << 30)) 65536
rss=$( { /usr/bin/time -f "%M" "$wzero" alloc -l 64G --dry-run "$work/mnt/frag" >/dev/null; } 2>&1 | tail -n 1)
# filefrag merges physically adjacent extents in its count; FIEMAP (wzero map) does not.
extents=$("$wzero" map "$work/mnt/frag" | grep -c unwritten)
echo "peak RSS of wzero alloc --dry-run over 64 GiB with $extents extents: $((rss / 1024)) MiB"
rss_now=$rss rss_before=null
if [ -n "$before" ]; then
	rss=$( { /usr/bin/time -f "%M" "$before" alloc -l 64G --dry-run "$work/mnt/frag" >/dev/null; } 2>&1 | tail -n 1)
	echo "the same with WZ_BENCH_BEFORE's wzero: $((rss / 1024)) MiB"
	rss_before=$rss
fi
if [ -n "${WZ_BENCH_JSON:-}" ]; then
	# Every round's time: "method seconds" lines of $work/times, in the order they ran.
	awk '{ n[$1]++; printf "{\"method\": \"%s\", \"round\": %d, \"seconds\": %.9f}\n", $1, n[$1], $2 }' \
		"$work/times" | jq -c . >"$work/json-runs"
	env_prefix=
	[ "$loop_mode" = direct ] || env_prefix+="WZ_BENCH_LOOP=$loop_mode "
	[ -z "$before" ] || env_prefix+="WZ_BENCH_BEFORE=... "
	jq -n --arg cmd "${env_prefix}bench/alloc.sh $size_mib $rounds" --arg date "$(bench_json_date)" \
		--argjson machine "$(bench_json_machine)" --arg loop_mode "$loop_mode" \
		--argjson size_mib "$size_mib" --argjson rounds "$rounds" --rawfile plan "$work/plan" \
		--argjson extents "$extents" --argjson rss "$rss_now" --argjson rss_before "$rss_before" \
		--slurpfile rows "$work/json-rows" --slurpfile runs "$work/json-runs" \
		'{license: "SPDX-License-Identifier: MIT", benchmark: "alloc",
		  command: $cmd, date: $date,
		  machine: $machine,
		  target: ("a new file on ext4 over a loop device (" + $loop_mode + " I/O to its backing file, a sparse image in /var/tmp)"),
		  loop_mode: $loop_mode, size_mib: $size_mib, rounds: $rounds,
		  contenders: {"dd-bs2M-direct": "dd if=/dev/zero bs=2M oflag=direct conv=fsync",
		               "wzero-alloc": "wzero alloc --verify=none",
		               "wzero-alloc-before": "the same with the wzero of WZ_BENCH_BEFORE",
		               "fallocate-z+dd": "fallocate -z, then dd bs=2M oflag=direct conv=notrunc,fsync",
		               "posix_fallocate": "fallocate -x, then sync: unwritten extents, the floor, not a written-zeroes peer",
		               "fio-qd32-bs1M": "fio --rw=write --bs=1M --iodepth=32 --direct=1 --ioengine=io_uring --zero_buffers --end_fsync=1"},
		  wzero_alloc_plan: ($plan | rtrimstr("\n") | split("\n")),
		  wzero_alloc_methods: ([$plan | split("\n")[] | select(test("^(kernel|nvme|zeroout|write) +offset"))
		                         | split(" ")[0]] | unique | join("+")),
		  memory: {file_gib: 64, extents: $extents, peak_rss_kib: $rss, before_peak_rss_kib: $rss_before},
		  rows: $rows, runs: $runs} |
		 if $rss_before == null then del(.contenders["wzero-alloc-before"]) else . end' |
		bench_json_write "$WZ_BENCH_JSON" rows runs
fi
