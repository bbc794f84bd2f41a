#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark in the VM rig (setup A, QEMU NVMe, TCG): zeroing SIZE of the raw namespace with
# wzero's nvme method, BLKZEROOUT (wzero --method zeroout), a loop of `nvme write-zeroes`
# commands (nvme-cli, one process per 32 MiB command) and data writes (wzero --method write).
# Times are taken inside the guest (bash's EPOCHREALTIME: busybox date has no %N); the data bytes each one sent to the device are counted
# from QEMU's pci_nvme_write trace events of the same run.
#   bench/alloc-vm.sh [SIZE_MIB]       (default 256)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
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
	i=$((i + 1))
done
