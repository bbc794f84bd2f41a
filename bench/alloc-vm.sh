#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark in the VM rig (setup A, QEMU NVMe, TCG): zeroing SIZE of the raw namespace with
# wzero's nvme method, BLKZEROOUT (wzero --method zeroout), a loop of `nvme write-zeroes`
# commands (nvme-cli, one process per 32 MiB command) and data writes (wzero --method write).
# Times are taken inside the guest (bash's EPOCHREALTIME: busybox date has no %N); the data bytes each one sent to the device are counted
# from QEMU's pci_nvme_write trace events of the same run.
#   bench/alloc-vm.sh [SIZE_MIB]       (default 256)
# WZ_BENCH_JSON=FILE also writes the results as JSON to FILE (what bench/plot.sh draws): the
# run's command, date and machine (the host's, and the guest's kernel, QEMU and the
# namespace's limits from the rig's info block), the parameters, and one row per method with
# the printed seconds, ratio to nvme-cli, data bytes and Write Zeroes commands, plus MiB/s.
# What is printed stays the same.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=json.sh
. "$repo/bench/json.sh"
size_mib=${1:-256}
work=$(mktemp -d /tmp/wzero-bench-vm.XXXXXX)
trap '[ -n "${WZ_BENCH_KEEP:-}" ] || rm -rf "$work"' EXIT

# shellcheck disable=SC2016 # expanded in the guest
guest_script='
ns=/dev/nvme0n1; size=$((SIZE_MIB << 20)); blocks=$((size / 512))
t() { local s e; s=${EPOCHREALTIME/./}; "$@" >/dev/null 2>&1 || echo "FAILED: $*"; e=${EPOCHREALTIME/./}; echo "$((e - s))"; }
mark() { dd if=/dev/zero of=$ns bs=512 count=1 seek=$1 oflag=direct status=none; }
mark 1000001; echo "nvme $(t wzero alloc -l ${SIZE_MIB}M --method nvme --no-fallback --verify=none $ns)"
mark 1000002; echo "zeroout $(t wzero alloc -l ${SIZE_MIB}M --method zeroout --no-fallback --verify=none $ns)"
mark 1000003
nvme_loop() { local s=0; while [ $s -lt $blocks ]; do nvme write-zeroes $ns -s $s -c 65535 >/dev/null || return 1; s=$((s + 65536)); done; }
echo "nvme-cli $(t nvme_loop)"
mark 1000004; echo "write $(t wzero alloc -l ${SIZE_MIB}M --method write --no-fallback --verify=none $ns)"
mark 1000005
'
"$repo/fstests/vm/run" --kernel new --setup A --disk-size 1G --trace pci_nvme_write --trace-log "$work/trace" \
	-- env SIZE_MIB="$size_mib" bash -c "$guest_script" >"$work/out" 2>"$work/err" || { cat "$work/err" >&2; exit 1; }

# Split the trace at the marker writes (one 512-byte WRITE at LBA 1000001.. between runs).
awk '
	/pci_nvme_write / {
		op = ""; for (i = 1; i <= NF; i++) { if ($i == "opname") op = $(i + 1); if ($i == "count") c = $(i + 1); if ($i == "lba") l = $(i + 1) }
		if (op ~ /CMD_WRITE\047/ && c == 512 && (l == "0xf4241" || l == "0xf4242" || l == "0xf4243" || l == "0xf4244" || l == "0xf4245")) { seg++; next }
		if (op ~ /CMD_WRITE\047/) data[seg] += c; else if (op ~ /WRITE_ZEROES/) wz[seg]++
	}
	END { for (s = 1; s <= 4; s++) print s, data[s] + 0, wz[s] + 0 }' "$work/trace" >"$work/bytes"
echo "zeroing ${size_mib} MiB of QEMU's emulated NVMe namespace (TCG guest, Linux 7.2), one run"
printf '%-10s %10s %12s %18s %16s\n' method seconds "vs nvme-cli" "data bytes sent" "write-zeroes cmds"
base=$(awk '$1 == "nvme-cli" { print $2 }' "$work/out")
i=1
for m in nvme zeroout nvme-cli write; do
	ns=$(awk -v m="$m" '$1 == m { print $2 }' "$work/out")
	read -r _ bytes cmds < <(awk -v s="$i" '$1 == s' "$work/bytes")
	printf '%-10s %10.3f %11.2fx %18s %16s\n' "$m" "$(echo "$ns / 1000000" | bc -l)" "$(echo "$base / $ns" | bc -l)" "$bytes" "$cmds"
	if [ -n "${WZ_BENCH_JSON:-}" ]; then
		jq -nc --arg m "$m" --argjson us "$ns" --argjson base "$base" --argjson size "$size_mib" \
			--argjson bytes "$bytes" --argjson cmds "$cmds" \
			'{method: $m, seconds: ($us / 1000000), mib_per_s: ($size * 1000000 / $us), vs_nvme_cli: ($base / $us),
			  data_bytes_sent: $bytes, write_zeroes_cmds: $cmds}' >>"$work/json-rows"
	fi
	i=$((i + 1))
done
if [ -n "${WZ_BENCH_JSON:-}" ]; then
	# The rig's info block ("vm/run: info: KEY=VALUE" on its stderr): the guest's side.
	info() { sed -n "s/^vm\/run: info: $1=//p" "$work/err" | head -n 1; }
	jq -n --arg cmd "bench/alloc-vm.sh $size_mib" --arg date "$(bench_json_date)" \
		--argjson machine "$(bench_json_machine)" --argjson size_mib "$size_mib" \
		--arg qemu "$(qemu-system-x86_64 --version | sed -n '1s/^QEMU emulator version //p')" \
		--arg accel "$(info host.accel)" --arg guest_kernel "$(info kernel)" --arg mdts "$(info ctrl.mdts)" \
		--arg lba_size "$(info ns.lba_size)" --arg wz_max "$(info nvme0n1.queue.write_zeroes_max_bytes)" \
		--slurpfile rows "$work/json-rows" \
		'{license: "SPDX-License-Identifier: MIT", benchmark: "alloc-vm",
		  command: $cmd, date: $date,
		  machine: $machine,
		  vm: {setup: "A", qemu: $qemu, accel: $accel, guest_kernel: $guest_kernel, disk_size: "1G",
		       mdts: $mdts, lba_size: $lba_size, write_zeroes_max_bytes: $wz_max},
		  target: "/dev/nvme0n1, the emulated NVMe namespace of QEMU over a sparse image (cache=none), from offset 0",
		  size_mib: $size_mib, rounds: 1,
		  contenders: {nvme: "wzero alloc --method nvme --no-fallback --verify=none (NVMe Write Zeroes, passthrough)",
		               zeroout: "wzero alloc --method zeroout --no-fallback --verify=none (BLKZEROOUT)",
		               "nvme-cli": "a loop of nvme write-zeroes -c 65535, one process per 32 MiB command",
		               write: "wzero alloc --method write --no-fallback --verify=none (data writes)"},
		  rows: $rows}' | bench_json_write "$WZ_BENCH_JSON" rows
fi
