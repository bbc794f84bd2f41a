#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark in the VM rig (setup A, QEMU NVMe with 2 poll queues, TCG guest, Linux 7.2):
# the writer's completion modes side by side in one boot. 4 KiB random writes on the raw
# namespace with the write cache cleared (mode through: no flush, no FUA, so only the
# completion path differs), asynchronous API at QD 1, 8, 32 and 128; interrupt, adaptive
# (defaults: high 32, low 3, 30 us, 1000 loops) and poll (IOPOLL). IOPS and CPU time per
# write (the process's user + system time over the run, from getrusage), and the ratios to
# interrupt at the same QD. Each QD runs the three modes back to back, ROUNDS times
# alternating, and the median is reported.
#   bench/completion-vm.sh [OPS] [ROUNDS]     (defaults 4000, 3)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ops=${1:-4000}
rounds=${2:-3}
# shellcheck disable=SC2016 # expanded in the guest
guest='
nvme set-feature /dev/nvme0 -f 6 -v 0 >/dev/null
echo "io_poll $(cat /sys/block/nvme0n1/queue/io_poll)"
for r in $(seq $ROUNDS); do
	for qd in 1 8 32 128; do
		for c in interrupt adaptive poll; do
			j=$(wzero bench write --json --random --ops $OPS -l 256M --qd $qd --completion $c /dev/nvme0n1) || exit 1
			echo "run $qd $c $(echo "$j" | jq -r "\"\(.mode) \(.iops) \(.cpu_us_per_io) \(.blocking_waits) \(.busy_looks) \(.idle_sleeps)\"")"
		done
	done
done
'
out=$(mktemp)
trap 'rm -f "$out"' EXIT
WZ_VM_APPEND="nvme.poll_queues=2" "$repo/fstests/vm/run" --kernel new --setup A -- \
	env OPS="$ops" ROUNDS="$rounds" bash -c "$guest" >"$out" 2>&1 || { cat "$out" >&2; exit 1; }
grep -q '^io_poll 1' "$out" || { echo "no poll queues in the guest:" >&2; cat "$out" >&2; exit 1; }
echo "completion modes: 4 KiB random writes, raw QEMU NVMe namespace, WCE=0 (mode through),"
echo "TCG guest (Linux 7.2), $ops writes per run, median of $rounds rounds, one boot"
printf '%-4s %-10s %10s %12s %10s %12s %10s\n' QD completion IOPS "CPU us/IO" "x IOPS" "x CPU/IO" "waits/IO"
# median of the values on stdin
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for qd in 1 8 32 128; do
	for c in interrupt adaptive poll; do
		iops=$(awk -v q="$qd" -v c="$c" '$1 == "run" && $2 == q && $3 == c { print $5 }' "$out" | median)
		cpu=$(awk -v q="$qd" -v c="$c" '$1 == "run" && $2 == q && $3 == c { print $6 }' "$out" | median)
		waits=$(awk -v q="$qd" -v c="$c" -v n="$ops" '$1 == "run" && $2 == q && $3 == c { print $7 / n }' "$out" | median)
		if [ "$c" = interrupt ]; then
			base_iops=$iops base_cpu=$cpu
		fi
		printf '%-4s %-10s %10.0f %12.1f %9.2fx %11.2fx %10.2f\n' "$qd" "$c" "$iops" "$cpu" \
			"$(echo "$iops / $base_iops" | bc -l)" "$(echo "$cpu / $base_cpu" | bc -l)" "$waits"
	done
done
