#!/bin/bash
# SPDX-License-Identifier: MIT
# What a durable 4 KiB write costs at the block layer, per kernel, device, engine and mode:
# the requests the guest's block layer issues (tracefs block_rq_issue) for one
# `wzero bench write` at QD 1, counted as data writes, FUA writes among them, flushes and
# driver-private (NVMe passthrough) commands. Each cell is the difference between a run of
# 2N and a run of N writes, divided by N: the probe's own commands (Identify, Get Features)
# cancel out. Devices: the rig's NVMe namespace (write-back, FUA) and a loop device over a
# file in the guest's tmpfs (write-back, no FUA). Modes: dsync (O_DSYNC: the kernel's
# durable write) and flush (a write, then a flush of its own: fdatasync, or an NVMe Flush
# through passthrough on the raw namespace).
#   bench/dsync-cost-vm.sh [N]     (root; N defaults to 8; boots old, new and bullseye)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
n=${1:-8}
guest=$(
	cat <<EOF
mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
T=/sys/kernel/tracing
truncate -s 64M /tmp/b.img
L=\$(losetup -f --show /tmp/b.img) || exit 1
echo 1 >\$T/events/block/block_rq_issue/enable
for d in /dev/nvme0n1 \$L; do
	for eng in io_uring psync; do
		for m in dsync flush; do
			for ops in $n $((2 * n)); do
				echo >\$T/trace
				echo 1 >\$T/tracing_on
				wzero --engine \$eng bench write --mode \$m --ops \$ops --random \$d >/dev/null || exit 1
				echo 0 >\$T/tracing_on
				printf 'row %s %s %s %s ' "\${d#/dev/}" \$eng \$m \$ops
				grep -v '^#' \$T/trace | sed 's/.*block_rq_issue: [0-9,]* //' | awk '
					\$1 ~ /^W/ { w++; if (\$1 ~ /^W[A-Z]*F/) f++ }
					\$1 ~ /^F/ && \$1 !~ /^FW/ { fl++ }
					\$1 ~ /^N/ { nv++ }
					END { print w + 0, f + 0, fl + 0, nv + 0 }'
			done
		done
	done
done
EOF
)
printf '%-9s %-8s %-8s %-6s %7s %9s %8s %12s\n' kernel device engine mode writes "FUA" flushes passthrough
for k in old new bullseye; do
	out=$("$repo/fstests/vm/run" --kernel "$k" -- sh -c "$guest" 2>/dev/null) || {
		echo "vm/run --kernel $k failed" >&2
		exit 1
	}
	printf '%s\n' "$out" | awk -v k="$k" -v n="$n" '
		$1 == "row" { key = $2 " " $3 " " $4; v[key, $5] = $6 " " $7 " " $8 " " $9; keys[key] = 1; order[++o] = key }
		END {
			for (i = 1; i <= o; i += 2) {
				key = order[i]; split(v[key, n], a, " "); split(v[key, 2 * n], b, " "); split(key, kk, " ")
				printf "%-9s %-8s %-8s %-6s %7.2f %9.2f %8.2f %12.2f\n", k, kk[1], kk[2], kk[3],
					(b[1] - a[1]) / n, (b[2] - a[2]) / n, (b[3] - a[3]) / n, (b[4] - a[4]) / n
			}
		}'
done
