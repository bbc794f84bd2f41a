#!/bin/bash
# Benchmark in the VM rig (setup A, QEMU NVMe, TCG guest, Linux 7.2): durable 4 KiB writes
# through wz::writer on the raw namespace, `auto` against the `dsync` baseline at QD 1 and
# QD 32, with the write cache cleared by Set Features (WCE=0) and set (WCE=1), in one boot.
#   bench/write-vm.sh [OPS]      (default 2000)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ops=${1:-2000}
# shellcheck disable=SC2016 # expanded in the guest
guest='
b() { wzero bench write --json --ops $OPS -l 256M "$@" /dev/nvme0n1 | jq -c "{mode, qd, iops, flushes, fua_writes, p50: .latency_us.p50}"; }
for wce in 0 1; do
	nvme set-feature /dev/nvme0 -f 6 -v $wce >/dev/null
	for qd in 1 32; do
		echo "wce=$wce dsync $(b --mode dsync --qd $qd)"
		echo "wce=$wce auto $(b --qd $qd)"
	done
done
'
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$repo/fstests/vm/run" --kernel new --setup A -- env OPS="$ops" bash -c "$guest" >"$out" 2>/dev/null
echo "durable 4 KiB writes on QEMU NVMe (TCG guest, Linux 7.2), $ops writes each, one boot"
printf '%-5s %-4s %-8s %10s %8s %8s %10s %10s\n' WCE QD mode IOPS flushes FUA "p50 us" "auto/dsync"
while read -r wce _ json; do
	read -r mode qd iops flushes fua p50 < <(jq -r '"\(.mode) \(.qd) \(.iops) \(.flushes) \(.fua_writes) \(.p50)"' <<<"$json")
	key="${wce#wce=}_${qd}"
	if [ "$mode" = dsync ]; then
		declare "base_$key=$iops"
		ratio=1
	else
		b=base_$key
		ratio=$(echo "$iops / ${!b}" | bc -l)
	fi
	printf '%-5s %-4s %-8s %10.0f %8s %8s %10.0f %9.2fx\n' "${wce#wce=}" "$qd" "$mode" "$iops" "$flushes" "$fua" "$p50" "$ratio"
done <"$out"
