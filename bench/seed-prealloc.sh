#!/bin/bash
# SPDX-License-Identifier: MIT
# Seed experiment: written vs unwritten preallocation of a file, in the VM rig's
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
# the process: the journal's kernel threads are not in it), p50 and p99 latency, and per write
# the tool's own FUA writes and flushes ("wz"; 0 where the kernel does them: dsync) next to
# what the device saw (fstests/common/devcount, the guest NVMe driver's trace): write commands
# (> 1 = journal or log writes), FUA writes and flushes.
# Model caveat: QEMU's controller ignores the FUA bit while WCE=1, so a FUA write costs what a
# plain write costs here; a flush costs the flush latency.
# Headline (the last line): ext4, 1 ms, QD 1: the writer on the written file against dsync on
# the unwritten file -- a database's before (fallocate + O_DSYNC) and after (wzero alloc +
# the writer); "of ceiling" is the writer's fraction of the ceiling.
# Each latency's boot runs the 16 runs ROUNDS times (the four of a fs and QD in order, then
# backwards in the next round) and the table shows the medians.
#   bench/seed-prealloc.sh [OPS] [ROUNDS]  (defaults 2000, 3; env LATENCIES="0.2ms 1ms 5ms", SIZE=256M)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# raw_fua: the FUA latency that goes with each flush latency (shared with the raw seeds)
# shellcheck source=raw-model.sh
. "$repo/bench/raw-model.sh"
ops=${1:-2000}
rounds=${2:-3}
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
# set QD K: the K-th run of a QD
set_run() {
	case $2 in
	1) run $fs written dsync $1 --mode dsync --threads $1 ;;
	2) run $fs unwritten dsync $1 --mode dsync --threads $1 ;;
	3) run $fs written writer $1 --qd $1 ;;
	4) run $fs written ceiling $1 --mode through --unsafe-through --qd $1 ;;
	esac
}
for r in $(seq $ROUNDS); do
	# odd rounds run the four in order, even rounds backwards
	order="1 2 3 4"
	[ $((r % 2)) = 0 ] && order="4 3 2 1"
	for fs in ext4 xfs; do
		if [ $fs = ext4 ]; then mkfs.ext4 -q -F /dev/nvme0n1; else mkfs.xfs -q -f /dev/nvme0n1; fi || exit 1
		mount -t $fs /dev/nvme0n1 /mnt/s || exit 1
		for qd in 1 32; do
			for k in $order; do set_run $qd $k; done
		done
		umount /mnt/s || exit 1
	done
done
'
out=$(mktemp) flat=$(mktemp)
trap 'rm -f "$out" "$flat"' EXIT
# median of the values on stdin
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "written (wzero alloc) vs unwritten (fallocate) $size file on ext4/xfs, QEMU NVMe model, WCE=1,"
echo "TCG guest (Linux 7.2); 4 KiB random overwrites, $ops per run, file recreated before each run,"
echo "median of $rounds rounds (order reversed every other round), one boot per latency"
printf '%-6s %-4s %-3s %-8s %-9s %-6s %8s %7s %7s %9s %8s %8s %6s %6s %6s %6s %6s\n' lat fs QD run file mode IOPS "of ceil" \
	"x unwr" "CPU us/wr" "p50 us" "p99 us" "wz FUA" "wz fl" "dev wr" "FUA" flushes
headline=
for lat in $latencies; do
	fua=$(raw_fua "$lat")
	"$repo/fstests/vm/run" --kernel new --setup A --flush-latency "$lat" --fua-latency "$fua" --append idle=poll \
		--timeout 3000 -- env OPS="$ops" ROUNDS="$rounds" SIZE="$size" bash -c "$guest" >"$out" 2>&1 || { cat "$out" >&2; exit 1; }
	# one record per run: fs file name qd unwritten_extents dev_writes dev_fua dev_flushes mode iops cpu p50 p99
	# fua_writes flushes (the last two are the tool's own counts)
	while read -r l; do
		read -r fs p n qd u dw df dfl <<<"$(awk '{ for (i = 6; i <= 9; i++) { sub(/^[a-z_]+=/, "", $i) } print $2, $3, $4, $5, $6, $7, $8, $9 }' <<<"$l")"
		if { [ "$p" = written ] && [ "$u" != 0 ]; } || { [ "$p" = unwritten ] && [ "$u" = 0 ]; }; then
			echo "seed-prealloc: $fs $p file had $u unwritten extents before a $n run at $lat" >&2
			exit 1
		fi
		echo "$fs $p $n $qd $u $dw $df $dfl $(jq -r '"\(.mode) \(.iops) \(.cpu) \(.p50) \(.p99) \(.fua_writes) \(.flushes)"' <<<"{${l#*\{}")"
	done < <(grep '^run ' "$out") >"$flat"
	for fs in ext4 xfs; do
		for qd in 1 32; do
			# col FILE NAME N: the median over the rounds of field N of those runs
			col() { awk -v fs="$fs" -v qd="$qd" -v p="$1" -v n="$2" -v f="$3" '$1 == fs && $2 == p && $3 == n && $4 == qd { print $f }' "$flat" | median; }
			ceil=$(col written ceiling 10) unwr=$(col unwritten dsync 10)
			for r in "written dsync" "unwritten dsync" "written writer" "written ceiling"; do
				read -r p n <<<"$r"
				k=$(awk -v fs="$fs" -v qd="$qd" -v p="$p" -v n="$n" '$1 == fs && $2 == p && $3 == n && $4 == qd' "$flat" | wc -l)
				[ "$k" = "$rounds" ] || { echo "seed-prealloc: $k $fs $p $n QD $qd runs at $lat, not $rounds:" >&2; cat "$out" >&2; exit 1; }
				# the mode the runs used (every round's, joined with + if they differ)
				mode=$(awk -v fs="$fs" -v qd="$qd" -v p="$p" -v n="$n" '$1 == fs && $2 == p && $3 == n && $4 == qd { m[$9] = 1 }
					END { s = ""; for (k in m) s = s (s == "" ? "" : "+") k; print s }' "$flat")
				iops=$(col "$p" "$n" 10) cpu=$(col "$p" "$n" 11) p50=$(col "$p" "$n" 12) p99=$(col "$p" "$n" 13)
				dw=$(col "$p" "$n" 6) df=$(col "$p" "$n" 7) dfl=$(col "$p" "$n" 8) wfua=$(col "$p" "$n" 14) wfl=$(col "$p" "$n" 15)
				printf '%-6s %-4s %-3s %-8s %-9s %-6s %8.0f %7.2f %6.2fx %9.1f %8.0f %8.0f %6.2f %6.2f %6.2f %6.2f %6.2f\n' "$lat" "$fs" \
					"$qd" "$n" "$p" "$mode" "$iops" "$(echo "$iops / $ceil" | bc -l)" "$(echo "$iops / $unwr" | bc -l)" "$cpu" "$p50" \
					"$p99" "$(echo "$wfua / $ops" | bc -l)" "$(echo "$wfl / $ops" | bc -l)" "$(echo "$dw / $ops" | bc -l)" \
					"$(echo "$df / $ops" | bc -l)" "$(echo "$dfl / $ops" | bc -l)"
				if [ "$lat" = 1ms ] && [ "$fs" = ext4 ] && [ "$qd" = 1 ] && [ "$n" = writer ]; then
					headline=$(printf 'seed: prealloc: writer %.2fx of dsync, %.2f of ceiling' \
						"$(echo "$iops / $unwr" | bc -l)" "$(echo "$iops / $ceil" | bc -l)")
				fi
			done
		done
	done
done
echo "${headline:-seed: prealloc: no ext4 1ms QD 1 run (LATENCIES=\"$latencies\")}"
