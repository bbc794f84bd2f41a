#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark: how close the VM rig's device model (fstests/vm/run --flush-latency/--fua-latency)
# comes to its parameters. For each model configuration of fstests/vm/configs
# (new-A-lat200us, new-A-lat1ms, new-A-lat5ms), one boot runs fstests' nvme/040, which traces
# 100 O_DIRECT 4 KiB writes and 100 fsyncs of the raw namespace with the volatile write cache
# enabled, then again with it cleared, and keeps each command's latency seen from the guest's
# NVMe driver; this script reads the 10th percentiles from its .full and prints, per latency:
#   flush cost   flush - plain write (WCE=1): what a flush costs beyond the rig's round trip,
#                and its ratio to the flush latency;
#   FUA cost     plain write with WCE=0 (every write FUA below QEMU's controller) - plain write
#                with WCE=1, and its ratio to the FUA latency.
# 1.00 is exact; nvme/040 itself checks only that no command is held less than its parameter,
# which load cannot break, while these ratios move with the load beside the VM (a CI run once
# measured a 200 us flush's 10th percentile at 387 us). Run on a quiet machine.
#   bench/model.sh            (root; build first: tools/build.sh)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ -x "$repo/build/tools/wzero/wzero" ] || { echo "build first (tools/build.sh)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# p10 FILE SECTION OPNAME: the 10th percentile in us of OPNAME in SECTION ("wce1", "wce0") of
# nvme/040's .full, or "none".
p10() {
	awk -v sec="$2" -v op="$3" '
		/^== / { in_sec = ($2 == sec) }
		in_sec && $1 == op { sub("p10_us=", "", $4); print $4; found = 1; exit }
		END { if (!found) print "none" }' "$1"
}
ratio() { awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN {
	if (a == "none" || b == "none") { print "-"; exit }
	printf "%d us  %.2f\n", a - b, (a - b) / p }'; }

printf '%-16s %-16s %-22s %-16s %-22s\n' "config" "flush latency" "flush cost, ratio" "FUA latency" "FUA cost, ratio"
while IFS= read -r line; do
	case $line in new-A-lat*:*) ;; *) continue ;; esac
	name=${line%%:*} args=${line#*:}
	out=$work/$name.out
	# shellcheck disable=SC2086 # args is a word list from the configs file
	WZ_VM_CONFIG=$name "$repo/fstests/vm/run" $args --timeout 600 -- bash -c \
		"/wz/fstests/check --in-vm --vm-config $name nvme/040 >/dev/null 2>&1
		 cat /wz/fstests/results/$name/nvme/040.full" >"$out" 2>"$work/$name.err" ||
		{ echo "bench/model.sh: the $name boot failed:" >&2; tail -n 5 "$work/$name.err" >&2; exit 1; }
	flush=$(sed -n 's/.*--flush-latency \([^ ]*\).*/\1/p' <<<"$args")
	fua=$(sed -n 's/.*--fua-latency \([^ ]*\).*/\1/p' <<<"$args")
	sec=$(sed -n 's/^== wce1 (WCE=1; flush \([0-9]*\) us, FUA \([0-9]*\) us)$/\1 \2/p' "$out" | head -n 1)
	[ -n "$sec" ] || { echo "bench/model.sh: no wce1 section in nvme/040's output ($name)" >&2; exit 1; }
	read -r flush_us fua_us <<<"$sec"
	wr1=$(p10 "$out" wce1 nvme_cmd_write) fl1=$(p10 "$out" wce1 nvme_cmd_flush)
	wr0=$(p10 "$out" wce0 nvme_cmd_write)
	printf '%-16s %-16s %-22s %-16s %-22s\n' "$name" "$flush" "$(ratio "$fl1" "$wr1" "$flush_us")" \
		"$fua" "$(ratio "$wr0" "$wr1" "$fua_us")"
done <"$repo/fstests/vm/configs"
echo "(10th percentiles of 100 commands each; the cost is the command's latency less a plain write's with WCE=1)"
