#!/bin/bash
# SPDX-License-Identifier: MIT
# Seed experiment "wce1": a drive with its volatile write cache enabled (WCE=1),
# where a durable write needs a flush or a FUA write. The VM rig's flush-cost model (vm/run
# --flush-latency L --fua-latency F, QEMU 7.2 NVMe over nbdkit, TCG guest, Linux 7.2), one boot
# per latency L in LATENCIES (F = 100us, 300us, 2ms for 0.2ms, 1ms, 5ms), Set Features FID 06h
# value 1. 4 KiB random writes on the raw namespace /dev/nvme0n1, QD 1, 8 and 32, side by side
# per boot (bench/raw-model.sh: ROUNDS rounds, order reversed every other round, medians):
#   ceiling   plain O_DIRECT, no flush, no FUA (--mode through --unsafe-through)
#   dsync     synchronous O_DSYNC|O_DIRECT pwrite from QD threads (what databases do: Linux
#             sends a FUA write and a Flush per write)
#   fua*      the writer's fua mode: NVMe passthrough writes with FUA
#   flush     the writer's flush mode: O_DIRECT writes, one Flush shared by every write that
#             completed before it (group commit)
#   auto      the writer's own choice (fua on this namespace: the row names it)
# * NOT CHARGED BY THIS MODEL: QEMU 7.2's NVMe controller ignores the FUA bit while WCE=1, so
#   a FUA write reaches nbdkit as a plain write and costs nothing extra; on a real drive it
#   costs a media write. The fua and auto(fua) rows are therefore an upper bound that a real
#   drive will not reach, not a measured win; flush mode is the writer's honest number here.
# Columns as in bench/seed-wce0.sh: flushes and FUA writes per write at the guest's NVMe
# driver (devcount) next to the writer's own counts, CPU us per write, p50 latency.
# QD32 is capped at 16 in flight by the model (see bench/seed-wce0.sh).
# Headline (the last line): 1ms, QD32, flush mode against dsync and the ceiling (auto picks
# fua, which this model does not charge; the last latency run when 1ms is not in LATENCIES).
#   bench/seed-wce1.sh [OPS] [ROUNDS]      (defaults 400, 7; env LATENCIES="0.2ms 1ms 5ms")
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$repo/bench/raw-model.sh"
OPS=${1:-400}
ROUNDS=${2:-7}
QDS="1 8 32"
MODES="ceiling dsync fua flush auto"
LATENCIES=${LATENCIES:-"0.2ms 1ms 5ms"}
# shellcheck disable=SC2034 # read by raw_table (bench/raw-model.sh)
RAW_FUA_MARK="*"
# shellcheck disable=SC2016 # expanded in the guest
guest='
nvme set-feature /dev/nvme0 -f 6 -v 1 >/dev/null
seen "WCE=1"
flushlat 200
rounds
'
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for lat in $LATENCIES; do
	raw_boot "$lat" "$out" -- "$guest"
done
echo "seed wce1: VWC present, WCE=1 (Set Features FID 06h = 1), raw QEMU NVMe namespace over the"
echo "flush-cost model (flush L, FUA F), TCG guest (Linux 7.2), 4 KiB random writes, $OPS per run,"
echo "median of $ROUNDS rounds, one boot per latency; QD32 reaches the model as at most 16 in flight"
echo "* fua: NOT CHARGED BY THIS MODEL (QEMU ignores the NVMe FUA bit with WCE=1: each FUA write costs"
echo "  what a plain write costs); on a real drive it pays a media write. Not a measured win."
headline=
for lat in $LATENCIES; do
	echo
	echo "flush $lat, FUA $(raw_fua "$lat") (uncharged here); the guest saw: $(grep "^$lat seen " "$out" | cut -d' ' -f3-)"
	echo "flush latency: $(awk -v l="$lat" '$1 == l && $2 == "flushlat" { sub("flushes=", "", $7); print "median NVMe Flush at the guest driver " $4 " us over " $7 " fsyncs of the device; " $3 " us per fsync timed from xfs_io" }' "$out")"
	raw_table "$out" "$lat"
	if [ "$lat" = 1ms ] || [ -z "$headline" ]; then headline=$lat; fi
done
[ "$headline" = 1ms ] || headline=$lat
raw_headline wce1 "$out" "$headline" 32 flush
