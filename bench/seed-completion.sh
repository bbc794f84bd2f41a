#!/bin/bash
# SPDX-License-Identifier: MIT
# Seed experiment: the writer's completion modes in the VM rig's device model
# (setup A: QEMU NVMe over nbdkit, a Flush costs the flush latency; 2 poll queues,
# nvme.poll_queues=2; TCG guest, Linux 7.2), one boot per latency. 4 KiB random writes on the
# raw namespace, WCE=1 (as a drive ships; env WCE=0 clears it), at QD 1, 8, 32 and 128:
#   writer   `wzero bench write --qd QD --completion C` in the mode auto picks (printed in the
#            table: with WCE=1 on the raw namespace it is fua, NVMe Writes with FUA through the
#            passthrough device; with WCE=0 it is through)
#   ceiling  `--mode through --unsafe-through --qd QD --completion C`: plain O_DIRECT writes,
#            no flush, no FUA, the same completion mode
#   dsync    `--mode dsync --threads QD`: O_DSYNC|O_DIRECT pwrite from QD threads, the
#            baseline (Linux sends a write and a Flush per write on a raw block device)
# for C in interrupt, adaptive (defaults: high 32, low 3, 30 us, 1000 loops) and poll
# (IOPOLL). IOPS, fraction of the ceiling of the same completion mode and QD ("of ceil"; the
# dsync row against the best ceiling of its QD), IOPS over dsync of the same QD, CPU us per
# write (user + system time of the process over the run, getrusage), the p50 and p99 latency,
# and per write the tool's own FUA writes and flushes ("wz") next to the device's write
# commands, FUA writes and flushes (fstests/common/devcount, the guest NVMe driver's trace,
# which also costs some CPU per command in every mode).
# Each QD runs its seven runs back to back, ROUNDS times, and the median is reported.
# Model caveat: QEMU's controller ignores the FUA bit while WCE=1, so the writer's FUA writes
# cost what plain writes cost (its gap to the ceiling is the passthrough path, not the drive);
# dsync's Flush costs the flush latency. QEMU's NBD client keeps at most 16 requests in flight
# (MAX_NBD_REQUESTS in QEMU's block/nbd.c), which caps concurrent flushes at QD 32 and 128.
# Headline (the last line): 1 ms, QD 32: the writer in its best completion mode (highest median
# IOPS) against dsync; "of ceiling" is against the ceiling in that completion mode.
#   bench/seed-completion.sh [OPS] [ROUNDS]   (defaults 2000, 3; env LATENCIES="0.2ms 1ms 5ms")
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# raw_fua: the FUA latency that goes with each flush latency (shared with the raw seeds)
# shellcheck source=raw-model.sh
. "$repo/bench/raw-model.sh"
ops=${1:-2000}
rounds=${2:-3}
latencies=${LATENCIES:-0.2ms 1ms 5ms}
wce=${WCE:-1}
qds="1 8 32 128"
modes="interrupt adaptive poll"
# shellcheck disable=SC2016 # expanded in the guest
guest='
. /wz/fstests/common/devcount
devcount_init || exit 1
nvme set-feature /dev/nvme0 -f 6 -v $WCE >/dev/null || exit 1
echo "io_poll $(cat /sys/block/nvme0n1/queue/io_poll)"
# b NAME COMPLETION ARGS...: one run, printed as "run QD NAME COMPLETION mode iops cpu p50 p99
# fua_writes flushes writes=N fua=N flushes=N zeroes=N" (first the tool counts, then the device counts)
b() {
	local name=$1 c=$2 j d
	shift 2
	devcount_begin
	j=$(wzero bench write --json --random --ops $OPS -l 256M "$@" /dev/nvme0n1) || exit 1
	d=$(devcount_end) || exit 1
	echo "run $qd $name $c $(echo "$j" | jq -r "\"\(.mode) \(.iops) \(.cpu_us_per_io) \(.latency_us.p50) \(.latency_us.p99) \(.fua_writes) \(.flushes)\"") $d"
}
for r in $(seq $ROUNDS); do
	for qd in $QDS; do
		for c in $MODES; do
			b writer $c --qd $qd --completion $c
			b ceiling $c --mode through --unsafe-through --qd $qd --completion $c
		done
		b dsync sync --mode dsync --threads $qd
	done
done
'
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# median of the values on stdin
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "completion modes: 4 KiB random writes, raw QEMU NVMe namespace in the flush-latency model, WCE=$wce,"
echo "2 poll queues, TCG guest (Linux 7.2), $ops writes per run, median of $rounds rounds, one boot per latency"
printf '%-6s %-4s %-8s %-10s %-8s %9s %8s %8s %10s %8s %8s %6s %6s %6s %6s %6s\n' lat QD run completion mode IOPS "of ceil" \
	"x dsync" "CPU us/wr" "p50 us" "p99 us" "wz FUA" "wz fl" "dev wr" "FUA" flushes
headline=
for lat in $latencies; do
	fua=$(raw_fua "$lat")
	"$repo/fstests/vm/run" --kernel new --setup A --flush-latency "$lat" --fua-latency "$fua" --append idle=poll \
		--append nvme.poll_queues=2 --timeout 3000 -- \
		env OPS="$ops" ROUNDS="$rounds" WCE="$wce" QDS="$qds" MODES="$modes" bash -c "$guest" >"$out" 2>&1 ||
		{ cat "$out" >&2; exit 1; }
	grep -q '^io_poll 1' "$out" || { echo "seed-completion: no poll queues in the guest:" >&2; cat "$out" >&2; exit 1; }
	for qd in $qds; do
		# col RUN COMPLETION N: the median of field N (6 IOPS, 7 CPU, 8 p50, 9 p99, 10 and 11 the
		# tool's FUA writes and flushes, 12-14 the device's writes, FUA writes and flushes) of
		# those runs at qd
		col() { awk -v q="$qd" -v r="$1" -v c="$2" -v n="$3" '$1 == "run" && $2 == q && $3 == r && $4 == c { sub(/^[a-z]+=/, "", $n); print $n }' "$out" | median; }
		n=$(awk -v q="$qd" '$1 == "run" && $2 == q' "$out" | wc -l)
		[ "$n" = $((7 * rounds)) ] || { echo "seed-completion: $n runs at QD $qd, not $((7 * rounds)):" >&2; cat "$out" >&2; exit 1; }
		dsync=$(col dsync sync 6) best_ceil=0 best=0 best_c=
		for c in $modes; do
			ceil=$(col ceiling "$c" 6)
			best_ceil=$(echo "if ($ceil > $best_ceil) $ceil else $best_ceil" | bc -l)
		done
		for r in writer ceiling dsync; do
			cs=$modes
			[ $r = dsync ] && cs=sync
			for c in $cs; do
				iops=$(col $r "$c" 6) cpu=$(col $r "$c" 7) p50=$(col $r "$c" 8) p99=$(col $r "$c" 9)
				wfua=$(col $r "$c" 10) wfl=$(col $r "$c" 11) dw=$(col $r "$c" 12) dfua=$(col $r "$c" 13) dfl=$(col $r "$c" 14)
				# the mode the runs used (every round's, joined with + if they differ)
				mode=$(awk -v q="$qd" -v r="$r" -v c="$c" '$1 == "run" && $2 == q && $3 == r && $4 == c { m[$5] = 1 }
					END { s = ""; for (k in m) s = s (s == "" ? "" : "+") k; print s }' "$out")
				if [ $r = dsync ]; then ceil=$best_ceil; else ceil=$(col ceiling "$c" 6); fi
				printf '%-6s %-4s %-8s %-10s %-8s %9.0f %8.2f %7.2fx %10.1f %8.0f %8.0f %6.2f %6.2f %6.2f %6.2f %6.2f\n' "$lat" "$qd" \
					"$r" "$c" "$mode" "$iops" "$(echo "$iops / $ceil" | bc -l)" "$(echo "$iops / $dsync" | bc -l)" "$cpu" "$p50" "$p99" \
					"$(echo "$wfua / $ops" | bc -l)" "$(echo "$wfl / $ops" | bc -l)" "$(echo "$dw / $ops" | bc -l)" \
					"$(echo "$dfua / $ops" | bc -l)" "$(echo "$dfl / $ops" | bc -l)"
				if [ $r = writer ] && [ "$(echo "$iops > $best" | bc -l)" = 1 ]; then
					best=$iops best_c=$c best_of=$(echo "$iops / $ceil" | bc -l)
				fi
			done
		done
		if [ "$lat" = 1ms ] && [ "$qd" = 32 ]; then
			headline=$(printf 'seed: completion: writer %.2fx of dsync, %.2f of ceiling' "$(echo "$best / $dsync" | bc -l)" "$best_of")
			headline_note="(1ms QD 32: the writer's best completion mode is $best_c)"
		fi
	done
done
if [ -n "$headline" ]; then
	echo "$headline_note"
	echo "$headline"
else
	echo "seed: completion: no 1ms QD 32 run (LATENCIES=\"$latencies\")"
fi
