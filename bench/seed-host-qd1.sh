#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark on the host (the goal: never slower than the baseline): where group
# commit has nothing to group, auto must cost no more than O_DSYNC. Durable 4 KiB random
# overwrites of a written file (wzero alloc) on ext4 and on xfs over a direct-I/O loop device
# (write-back, no FUA: auto picks flush), at QD 1, 8 and 32, side by side:
#   dsync sync    the baseline: pwrite on O_DSYNC|O_DIRECT from QD threads (what databases do)
#   dsync async   O_DSYNC through the writer's io_uring at QD
#   flush async   --mode flush: group commit; a write with no other in flight goes as RWF_DSYNC
#   auto async    the writer's own choice (flush here, so the same as the row above)
#   ceiling       --mode through --unsafe-through: the same writes with no durability at all
# Every run reads the loop device's /sys/block/loopN/stat before and after it (fields per
# Documentation/admin-guide/iostats.rst): flush requests and 4 KiB of data written per write at
# the device, next to the writer's own flushes per write. The modes of one fs and QD run back
# to back, their order rotated each round; IOPS and CPU per write are medians over ROUNDS, and
# "x dsync" and "of ceiling" are medians of each round's own ratio (this box is shared: ratios
# of runs seconds apart are steadier than absolute numbers); p50 latency (submit or call to
# durable) and CPU per write (user + system, getrusage) are the steadiest columns of all.
# Headline (the last line): auto against dsync sync and the ceiling at QD 1 on ext4.
#   bench/seed-host-qd1.sh [OPS] [ROUNDS]     (root; default 3000 writes, 3 rounds)
#   env FSES (default "ext4 xfs"), QDS (default "1 8 32"); WZERO_BEFORE=PATH adds a row
#   "flush-before": --mode flush of another build of wzero (e.g. one from before the lone
#   writes went as RWF_DSYNC), in the same rotation
# WZ_BENCH_JSON=FILE also writes the results as JSON to FILE (what bench/plot.sh draws): the
# run's command, date and machine, one row per fs, QD and mode with the printed medians plus
# the p99 latency, and every run's own `wzero bench write --json` record. What is printed
# stays the same.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ops=${1:-3000}
rounds=${2:-3}
read -r -a fses <<<"${FSES:-ext4 xfs}"
read -r -a qds <<<"${QDS:-1 8 32}"
wzero=$repo/build/tools/wzero/wzero
# shellcheck source=common.sh
. "$repo/bench/common.sh"
# shellcheck source=json.sh
. "$repo/bench/json.sh"
bench_loop 2G --direct-io=on
stat_file=/sys/block/$(basename "$loop")/stat
[ -r "$stat_file" ] || { echo "no $stat_file" >&2; exit 1; }
modes=(dsync-sync dsync-async flush-async auto-async ceiling)
if [ -n "${WZERO_BEFORE:-}" ]; then
	modes+=(flush-before)
fi
: >"$work/results"
for fs in "${fses[@]}"; do
	bench_mkfs_mount "$fs"
	f=$work/mnt/written
	"$wzero" alloc -l 256M "$f" >/dev/null
	sync
	for r in $(seq "$rounds"); do
		for qd in "${qds[@]}"; do
			for i in "${!modes[@]}"; do
				m=${modes[$(((i + r) % ${#modes[@]}))]}
				bin=$wzero
				case $m in
				dsync-sync) args=(--mode dsync --threads "$qd") ;;
				dsync-async) args=(--mode dsync --qd "$qd") ;;
				flush-async) args=(--mode flush --qd "$qd") ;;
				auto-async) args=(--qd "$qd") ;;
				ceiling) args=(--mode through --unsafe-through --qd "$qd") ;;
				flush-before) args=(--mode flush --qd "$qd") bin=$WZERO_BEFORE ;;
				esac
				sync -f "$f"
				read -r -a s0 <"$stat_file"
				j=$("$bin" bench write --json --random --ops "$ops" "${args[@]}" "$f" | jq -c .)
				read -r -a s1 <"$stat_file"
				# write sectors (6) and flush requests (15): an empty preflush counts as a write
				# request (4) too, so data is counted in sectors.
				echo "$fs $qd $m $r $((s1[6] - s0[6])) $((s1[15] - s0[15])) $j" >>"$work/results"
			done
		done
	done
done
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# field: IOPS of fs, qd, mode, round
iops_of() { awk -v f="$1" -v q="$2" -v m="$3" -v r="$4" '$1 == f && $2 == q && $3 == m && $4 == r { $1 = $2 = $3 = $4 = $5 = $6 = ""; print }' "$work/results" | jq .iops; }
echo "durable 4 KiB random overwrites of a written file over a direct-I/O loop device (write-back,"
echo "no FUA), $ops writes per run, $rounds rounds; IOPS and CPU: medians; ratios: medians of each round's"
printf '%-5s %-3s %-12s %-7s %7s %8s %8s %7s %9s %9s %9s %9s\n' fs QD mode picked IOPS "x dsync" "of ceil" \
	"p50 us" "CPU us/w" "w flush/w" "dev fl/w" "dev wr/w"
headline=
json_rows=$work/json-rows
: >"$json_rows"
for fs in "${fses[@]}"; do
	for qd in "${qds[@]}"; do
		for m in "${modes[@]}"; do
			rows=$(awk -v f="$fs" -v q="$qd" -v m="$m" '$1 == f && $2 == q && $3 == m' "$work/results")
			field() { while read -r _ _ _ _ sectors flushes json; do jq -r --argjson s "$sectors" --argjson fl "$flushes" "$1" <<<"$json"; done <<<"$rows"; }
			iops=$(field .iops | median)
			cpu=$(field .cpu_us_per_io | median)
			p50=$(field .latency_us.p50 | median)
			picked=$(field .mode | sort | uniq | paste -sd/)
			wfl=$(field '.flushes / .writes' | median)
			# shellcheck disable=SC2016 # jq's own variables
			dfl=$(field '$fl / .writes' | median)
			# shellcheck disable=SC2016 # jq's own variables
			dwr=$(field '$s / 8 / .writes' | median)
			ratios=$(for r in $(seq "$rounds"); do
				echo "$(iops_of "$fs" "$qd" "$m" "$r") $(iops_of "$fs" "$qd" dsync-sync "$r") $(iops_of "$fs" "$qd" ceiling "$r")"
			done)
			x_dsync=$(awk '{ print $1 / $2 }' <<<"$ratios" | median)
			of_ceil=$(awk '{ print $1 / $3 }' <<<"$ratios" | median)
			printf '%-5s %-3s %-12s %-7s %7.0f %7.2fx %8.2f %7.0f %9.1f %9.2f %9.2f %9.2f\n' "$fs" "$qd" "$m" "$picked" \
				"$iops" "$x_dsync" "$of_ceil" "$p50" "$cpu" "$wfl" "$dfl" "$dwr"
			if [ -n "${WZ_BENCH_JSON:-}" ]; then
				p99=$(field .latency_us.p99 | median)
				jq -nc --arg fs "$fs" --argjson qd "$qd" --arg mode "$m" --arg picked "$picked" \
					--argjson iops "$iops" --argjson x_dsync "$x_dsync" --argjson of_ceiling "$of_ceil" \
					--argjson p50 "$p50" --argjson p99 "$p99" --argjson cpu "$cpu" --argjson wfl "$wfl" \
					--argjson dfl "$dfl" --argjson dwr "$dwr" \
					'{fs: $fs, qd: $qd, mode: $mode, picked: $picked, iops: $iops, x_dsync: $x_dsync,
					  of_ceiling: $of_ceiling, p50_us: $p50, p99_us: $p99, cpu_us_per_write: $cpu,
					  writer_flushes_per_write: $wfl, device_flushes_per_write: $dfl,
					  device_writes_per_write: $dwr}' >>"$json_rows"
			fi
			if [ "$fs" = "${fses[0]}" ] && [ "$qd" = "${qds[0]}" ] && [ "$m" = auto-async ]; then
				headline=$(printf 'seed: host-qd1: writer %.2fx of dsync, %.2f of ceiling' "$x_dsync" "$of_ceil")
			fi
		done
	done
done
echo "$headline"
if [ -n "${WZ_BENCH_JSON:-}" ]; then
	# The runs: "fs qd mode round sectors flushes json" lines of $work/results.
	while read -r rfs rqd rm rr rs rfl rj; do
		jq -c --arg fs "$rfs" --argjson qd "$rqd" --arg mode "$rm" --argjson round "$rr" \
			--argjson sectors "$rs" --argjson flushes "$rfl" \
			'{fs: $fs, qd: $qd, mode: $mode, round: $round, device_write_sectors: $sectors,
			  device_flushes: $flushes, result: .}' <<<"$rj"
	done <"$work/results" >"$work/json-runs"
	jq -n --arg cmd "bench/seed-host-qd1.sh $ops $rounds" --arg date "$(bench_json_date)" \
		--argjson machine "$(bench_json_machine)" --arg fses "${fses[*]}" --arg qds "${qds[*]}" \
		--argjson ops "$ops" --argjson rounds "$rounds" --arg headline "$headline" \
		--slurpfile rows "$json_rows" --slurpfile runs "$work/json-runs" \
		'{license: "SPDX-License-Identifier: MIT", benchmark: "seed-host-qd1",
		  command: ("FSES=\"" + $fses + "\" QDS=\"" + $qds + "\" " + $cmd), date: $date,
		  machine: $machine,
		  target: "a written file (wzero alloc -l 256M) on FS over a 2 GiB direct-I/O loop device",
		  ops: $ops, rounds: $rounds, fses: ($fses | split(" ")), qds: ($qds | split(" ") | map(tonumber)),
		  headline: $headline, rows: $rows, runs: $runs}' | bench_json_write "$WZ_BENCH_JSON" rows runs
fi
