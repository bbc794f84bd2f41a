#!/bin/bash
# SPDX-License-Identifier: MIT
# Seed experiment "through": a write-through device. The VM rig's flush-cost model
# (vm/run --flush-latency L --fua-latency F, QEMU 7.2 NVMe over nbdkit, TCG guest, Linux 7.2),
# one boot per latency L in LATENCIES (F = 100us, 300us, 2ms for 0.2ms, 1ms, 5ms), with the
# controller's drive built write-through: vm/run --nvme-prop write-cache=off. What the guest
# sees (printed per boot): Identify VWC still 0x7 (QEMU 7.2 always reports a volatile write
# cache present; there is no property to clear it), Get Features FID 06h WCE = 0 from power-on,
# and Linux, which looks only at VWC, reports queue/write_cache "write back" and would send a
# Flush per O_DSYNC write (that case is seed-wce0). The guest then declares the device
# write-through the way Linux offers for it, `echo "write through" >
# /sys/block/nvme0n1/queue/write_cache`: the block layer stops sending flushes and FUA, as it
# does for a drive without VWC. At the model every write is FUA (QEMU's block layer with
# write-cache=off), so every write costs F and a flush is never sent: a write-through drive.
# 4 KiB random writes on /dev/nvme0n1, QD 1 and 32, side by side per boot (bench/raw-model.sh:
# ROUNDS rounds, order reversed every other round, medians):
#   ceiling   plain O_DIRECT, no flush, no FUA (--mode through --unsafe-through)
#   dsync     synchronous O_DSYNC|O_DIRECT pwrite from QD threads (what databases do)
#   auto      the writer's own choice at QD (the record reads write-through: mode through)
# On such a device O_DSYNC costs no more than the write itself, so every mode should sit at the
# ceiling: this experiment checks that the writer loses nothing there, and counts at the device
# that nobody flushes. The columns are those of bench/seed-wce0.sh.
# QD32 is capped at 16 in flight by the model (see bench/seed-wce0.sh).
# Headline (the last line): 1ms, QD1, auto against dsync and the ceiling (the last latency run
# when 1ms is not in LATENCIES).
#   bench/seed-through.sh [OPS] [ROUNDS]      (defaults 400, 7; env LATENCIES="0.2ms 1ms 5ms")
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$repo/bench/raw-model.sh"
OPS=${1:-400}
ROUNDS=${2:-7}
QDS="1 32"
MODES="ceiling dsync auto"
LATENCIES=${LATENCIES:-"0.2ms 1ms 5ms"}
# shellcheck disable=SC2016 # expanded in the guest
guest='
seen boot
echo "write through" >/sys/block/nvme0n1/queue/write_cache
seen "after sysfs"
flushlat 20
rounds
'
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for lat in $LATENCIES; do
	raw_boot "$lat" "$out" --nvme-prop write-cache=off -- "$guest"
done
echo "seed through: write-through device (QEMU nvme write-cache=off, queue/write_cache \"write through\"),"
echo "raw QEMU NVMe namespace over the flush-cost model (every write FUA: costs F), TCG guest (Linux 7.2),"
echo "4 KiB random writes, $OPS per run, median of $ROUNDS rounds, one boot per latency; QD32 reaches the"
echo "model as at most 16 in flight"
headline=
for lat in $LATENCIES; do
	echo
	echo "flush $lat, FUA $(raw_fua "$lat"); the guest saw:"
	grep "^$lat seen " "$out" | cut -d' ' -f3- | sed 's/^/  /'
	echo "  22 fsyncs of the device (two xfs_io): $(awk -v l="$lat" '$1 == l && $2 == "flushlat" { sub("flushes=", "", $7); print $7 }' "$out") NVMe Flushes at the device"
	raw_table "$out" "$lat"
	if [ "$lat" = 1ms ] || [ -z "$headline" ]; then headline=$lat; fi
done
[ "$headline" = 1ms ] || headline=$lat
raw_headline through "$out" "$headline" 1 auto
