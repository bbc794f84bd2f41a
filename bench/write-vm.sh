#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark in the VM rig (setup A, QEMU NVMe, TCG guest, Linux 7.2): durable 4 KiB writes
# through wz::writer on the raw namespace, in one boot, with the write cache cleared by Set
# Features (WCE=0) and set (WCE=1), at QD 1 and QD 32:
#   dsync sync   the baseline: pwrite on O_DSYNC|O_DIRECT from QD threads (Linux sends a
#                FUA write and then a Flush per write: the fsync the synchronous path adds)
#   dsync async  O_DSYNC through io_uring at QD (a raw block device: FUA writes, no Flush)
#   auto async   the writer's own choice (through with WCE=0, fua with WCE=1) at QD
#   ceiling      the same writes with no durability at all: mode through with
#                --unsafe-through at QD (plain O_DIRECT, no flush, no FUA)
# "x base" is the ratio to the baseline of the same WCE and QD, "of ceil" the fraction of the
# ceiling. This rig's flushes cost next to nothing; bench/seed-*.sh measure the same on the
# flush-cost model (vm/run --flush-latency).
#   bench/write-vm.sh [OPS]      (default 2000)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ops=${1:-2000}
# shellcheck disable=SC2016 # expanded in the guest
guest='
b() { wzero bench write --json --random --ops $OPS -l 256M "$@" /dev/nvme0n1 | jq -c "{mode, api, qd, iops, flushes, fua_writes, p50: .latency_us.p50}"; }
for wce in 0 1; do
	nvme set-feature /dev/nvme0 -f 6 -v $wce >/dev/null
	for qd in 1 32; do
		echo "wce=$wce $(b --mode through --unsafe-through --qd $qd)"
		echo "wce=$wce $(b --mode dsync --threads $qd)"
		echo "wce=$wce $(b --mode dsync --qd $qd)"
		echo "wce=$wce $(b --qd $qd)"
	done
done
'
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$repo/fstests/vm/run" --kernel new --setup A -- env OPS="$ops" bash -c "$guest" >"$out" 2>&1 || { cat "$out" >&2; exit 1; }
echo "durable 4 KiB random writes on QEMU NVMe (TCG guest, Linux 7.2), $ops writes each, one boot"
printf '%-4s %-3s %-8s %-6s %9s %8s %6s %9s %8s %8s\n' WCE QD mode api IOPS flushes FUA "p50 us" "x base" "of ceil"
declare -A ceil
grep '^wce=' "$out" | while read -r wce json; do
	read -r mode api qd iops flushes fua p50 < <(jq -r '"\(.mode) \(.api) \(.qd) \(.iops) \(.flushes) \(.fua_writes) \(.p50)"' <<<"$json")
	# Each (WCE, QD) group starts with the ceiling, then the baseline.
	if [ -z "${ceil[$wce$qd]:-}" ]; then
		ceil[$wce$qd]=$iops
		printf '%-4s %-3s %-8s %-6s %9.0f %8s %6s %9.0f %8s %8.2f\n' "${wce#wce=}" "$qd" ceiling "$api" "$iops" "$flushes" \
			"$fua" "$p50" - 1
		continue
	fi
	if [ "$mode" = dsync ] && [ "$api" = sync ]; then
		base=$iops
	fi
	printf '%-4s %-3s %-8s %-6s %9.0f %8s %6s %9.0f %7.2fx %8.2f\n' "${wce#wce=}" "$qd" "$mode" "$api" "$iops" "$flushes" \
		"$fua" "$p50" "$(echo "$iops / $base" | bc -l)" "$(echo "$iops / ${ceil[$wce$qd]}" | bc -l)"
done
