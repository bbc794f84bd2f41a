#!/bin/bash
# SPDX-License-Identifier: MIT
# Seed experiment (issue 13): written vs unwritten preallocation of a file, in the VM rig's
# device model (setup A: QEMU NVMe over nbdkit, a Flush costs the flush latency; TCG guest,
# Linux 7.2), one boot per latency. The namespace keeps WCE=1 (as a drive ships); ext4 and then
# xfs are made on /dev/nvme0n1 (mkfs in the guest), and a SIZE file on them is recreated
# before every measured run, either
#   written    `wzero alloc -l SIZE` (written zeroed extents)
#   unwritten  util-linux `fallocate -l SIZE` (mode 0: unwritten extents)
# (the number of unwritten extents is checked after each recreation: 0 for written, > 0 for
# unwritten). 4 KiB random overwrites over the whole file, at QD 1 and 32:
#   dsync    `wzero bench write --mode dsync --threads QD` (O_DSYNC|O_DIRECT pwrite from QD
#            threads: what a database does; wzero's dsync path accepts an unwritten file)
#   writer   `wzero bench write --qd QD` (the writer, auto mode; written file only: it picks
#            fua or flush, the mode is printed)
#   ceiling  `wzero bench write --mode through --unsafe-through --qd QD` on the written file
#            (plain O_DIRECT writes, no flush, no FUA: no durability at all)
# Per run: IOPS, fraction of the ceiling at the same fs and QD, IOPS over dsync on the
# unwritten file ("x unwr": for dsync/written that is the written/unwritten ratio; the public
# measurement to compare with is 4.9x, 98.8k vs 20.1k IOPS), CPU us per write (getrusage of
# the process: the journal's kernel threads are not in it), p50 and p99 latency, and per write at the device
# (fstests/common/devcount, the guest NVMe driver's trace): write commands (> 1 = journal or
# log writes), FUA writes and flushes.
# Model caveat: QEMU's controller ignores the FUA bit while WCE=1, so a FUA write costs what a
# plain write costs here; a flush costs the flush latency.
# Headline (the last line): ext4, 1 ms, QD 1: the writer on the written file against dsync on
# the unwritten file -- a database's before (fallocate + O_DSYNC) and after (wzero alloc +
# the writer); "of ceiling" is the writer's fraction of the ceiling.
#   bench/seed-prealloc.sh [OPS]      (default 2000; env LATENCIES="0.2ms 1ms 5ms", SIZE=256M)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ops=${1:-2000}
latencies=${LATENCIES:-0.2ms 1ms 5ms}
size=${SIZE:-256M}
# shellcheck disable=SC2016 # expanded in the guest
guest='
set -u
. /wz/fstests/common/devcount
devcount_init || exit 1
nvme set-feature /dev/nvme0 -f 6 -v 1 >/dev/null || exit 1
mkdir -p /mnt/s
f=/mnt/s/data
# run FS PREP NAME QD ARGS...: recreate the file (PREP written|unwritten), then measure
run() {
	local fs=$1 prep=$2 name=$3 qd=$4 j c u
	shift 4
	rm -f $f
	if [ $prep = written ]; then
		wzero alloc -l $SIZE $f >/dev/null || exit 1
	else
		fallocate -l $SIZE $f || exit 1
	fi
	sync
	u=$(filefrag -v $f | grep -c unwritten)
	devcount_begin
	j=$(wzero bench write --json --random --ops $OPS "$@" $f) || exit 1
	c=$(devcount_end) || exit 1
	echo "run $fs $prep $name $qd unwritten_extents=$u $c $(echo "$j" | jq -c "{mode, api, qd, iops, cpu: .cpu_us_per_io, flushes, fua_writes, p50: .latency_us.p50, p99: .latency_us.p99}")"
}
for fs in ext4 xfs; do
	if [ $fs = ext4 ]; then mkfs.ext4 -q -F /dev/nvme0n1; else mkfs.xfs -q -f /dev/nvme0n1; fi || exit 1
	mount -t $fs /dev/nvme0n1 /mnt/s || exit 1
	for qd in 1 32; do
		run $fs written dsync $qd --mode dsync --threads $qd
		run $fs unwritten dsync $qd --mode dsync --threads $qd
		run $fs written writer $qd --qd $qd
		run $fs written ceiling $qd --mode through --unsafe-through --qd $qd
	done
	umount /mnt/s || exit 1
done
'
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "written (wzero alloc) vs unwritten (fallocate) $size file on ext4/xfs, QEMU NVMe model, WCE=1,"
echo "TCG guest (Linux 7.2); 4 KiB random overwrites, $ops per run, file recreated before each run"
printf '%-6s %-4s %-3s %-8s %-9s %-6s %8s %7s %7s %9s %8s %8s %7s %7s %7s\n' lat fs QD run file mode IOPS "of ceil" \
	"x unwr" "CPU us/wr" "p50 us" "p99 us" "dev wr" "FUA" flushes
headline=
for lat in $latencies; do
	case $lat in
	0.2ms) fua=100us ;;
	1ms) fua=300us ;;
	5ms) fua=2ms ;;
	*)
		echo "seed-prealloc: no FUA latency for flush latency $lat (0.2ms, 1ms or 5ms)" >&2
		exit 1
		;;
	esac
	"$repo/fstests/vm/run" --kernel new --setup A --flush-latency "$lat" --fua-latency "$fua" --append idle=poll \
		--timeout 3000 -- env OPS="$ops" SIZE="$size" bash -c "$guest" >"$out" 2>&1 || { cat "$out" >&2; exit 1; }
	for fs in ext4 xfs; do
		for qd in 1 32; do
			# field of the run FILE NAME: "run fs file name qd unwritten_extents=U writes=.. fua=.. flushes=.. zeroes=.. JSON"
			line() { awk -v fs="$fs" -v qd="$qd" -v p="$1" -v n="$2" '$1 == "run" && $2 == fs && $3 == p && $4 == n && $5 == qd' "$out"; }
			iops() { line "$1" "$2" | sed 's/^[^{]*//' | jq -r .iops; }
			ceil=$(iops written ceiling) unwr=$(iops unwritten dsync)
			for r in "written dsync" "unwritten dsync" "written writer" "written ceiling"; do
				read -r p n <<<"$r"
				l=$(line "$p" "$n")
				[ -n "$l" ] || { echo "seed-prealloc: no $fs $p $n QD $qd run at $lat:" >&2; cat "$out" >&2; exit 1; }
				read -r u dw df dfl < <(awk '{ for (i = 6; i <= 9; i++) { sub(/^[a-z_]+=/, "", $i) } print $6, $7, $8, $9 }' <<<"$l")
				if { [ "$p" = written ] && [ "$u" != 0 ]; } || { [ "$p" = unwritten ] && [ "$u" = 0 ]; }; then
					echo "seed-prealloc: $fs $p file has $u unwritten extents before the $n run" >&2
					exit 1
				fi
				read -r mode iops cpu p50 p99 < <(jq -r '"\(.mode) \(.iops) \(.cpu) \(.p50) \(.p99)"' <<<"{${l#*\{}")
				printf '%-6s %-4s %-3s %-8s %-9s %-6s %8.0f %7.2f %6.2fx %9.1f %8.0f %8.0f %7.2f %7.2f %7.2f\n' "$lat" "$fs" "$qd" \
					"$n" "$p" "$mode" "$iops" "$(echo "$iops / $ceil" | bc -l)" "$(echo "$iops / $unwr" | bc -l)" "$cpu" "$p50" "$p99" \
					"$(echo "$dw / $ops" | bc -l)" "$(echo "$df / $ops" | bc -l)" "$(echo "$dfl / $ops" | bc -l)"
				if [ "$lat" = 1ms ] && [ "$fs" = ext4 ] && [ "$qd" = 1 ] && [ "$n" = writer ]; then
					headline=$(printf 'seed: prealloc: writer %.2fx of dsync, %.2f of ceiling' \
						"$(echo "$iops / $unwr" | bc -l)" "$(echo "$iops / $ceil" | bc -l)")
				fi
			done
		done
	done
done
echo "${headline:-seed: prealloc: no ext4 1ms QD 1 run (LATENCIES=\"$latencies\")}"
