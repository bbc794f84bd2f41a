#!/bin/bash
# SPDX-License-Identifier: MIT
# What watching the write cache costs mode through: a drive with a volatile write cache that
# is disabled (VWC present, WCE cleared by Set Features FID 06h), the VM rig's flush-cost
# model (vm/run --flush-latency L --fua-latency F, QEMU 7.2 NVMe over nbdkit, TCG guest, Linux
# 7.2), one boot per latency L in LATENCIES, 4 KiB random writes on the raw namespace at QD 1
# and 32, side by side in each boot (bench/raw-model.sh: ROUNDS rounds, order reversed every
# other round, medians):
#   before  --mode through --unsafe-through: `through` as it was, never re-reading the cache
#           (allow_unsafe_through still skips the watch; the same I/O path)
#   after   auto (the record reads WCE=0: mode through), re-reading the cache before an
#           acknowledgement once the answer is 100 ms old (writer_options::cache_max_age)
#   every   --mode through --cache-max-age 0: a re-read before every acknowledgement, the
#           cost of one re-read per write
# Columns: IOPS (median, and min..max over the rounds), of before (IOPS / before's), re-reads
# per second (the writer's cache_rereads over the run's time: Get Features FID 06h commands),
# re-reads per write, device flushes and FUA writes per write (fstests/common/devcount), CPU
# per write (user + sys, getrusage), p50 latency. Then wz::write_cache's own cost in the same
# boot (build/bench/wzero_bench_stat --write-cache /dev/nvme0n1): an answer held (no I/O) and a
# re-read (one Get Features FID 06h).
#   bench/seed-cache-reread.sh [OPS] [ROUNDS]   (defaults 2000, 7; env LATENCIES="1ms")
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$repo/bench/raw-model.sh"
OPS=${1:-2000}
ROUNDS=${2:-7}
QDS="1 32"
MODES="before after every"
LATENCIES=${LATENCIES:-"1ms"}
stat_bin=$repo/build/bench/wzero_bench_stat
[ -x "$stat_bin" ] || { echo "seed-cache-reread.sh: build $stat_bin first (tools/build.sh)" >&2; exit 1; }
# shellcheck disable=SC2016 # expanded in the guest
guest='
nvme set-feature /dev/nvme0 -f 6 -v 0 >/dev/null
seen "WCE=0"
cargs() { # MODE QD
	case $1 in
	before) echo "--mode through --unsafe-through --qd $2" ;;
	after) echo "--qd $2" ;;
	every) echo "--mode through --cache-max-age 0 --qd $2" ;;
	esac
}
cb() { # MODE QD
	local j c
	devcount_begin
	# shellcheck disable=SC2046
	j=$(wzero bench write --json --random --ops "$OPS" -l 256M $(cargs "$1" "$2") $dev)
	c=$(devcount_end)
	echo "cache $2 $1 $(jq -r "\"\(.mode) \(.iops) \(.cpu_us_per_io) \(.latency_us.p50) \(.cache_rereads) \(.cache_rereads_per_second) \(.writes) \(.mode_changes)\"" <<<"$j") $(sed "s/[a-z]*=//g" <<<"$c")"
}
wzero bench write --random --ops 200 -l 256M --mode through --unsafe-through --qd 1 $dev >/dev/null
for r in $(seq "$ROUNDS"); do
	for qd in $QDS; do
		order=$MODES
		if [ $((r % 2)) = 0 ]; then order=$(awk "{ for (i = NF; i > 0; i--) printf \"%s \", \$i }" <<<"$MODES"); fi
		for m in $order; do cb "$m" "$qd"; done
	done
done
/wz/bin/wzero_bench_stat --write-cache $dev | sed "s/^/statbench /"
'
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for lat in $LATENCIES; do
	raw_boot "$lat" "$out" --with "$stat_bin" -- "$guest"
done
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
col() { # LAT QD MODE COLUMN: the values of one column over the rounds
	awk -v l="$1" -v q="$2" -v m="$3" -v c="$4" '$1 == l && $2 == "cache" && $3 == q && $4 == m { print $c }' "$out"
}
echo "seed cache-reread: VWC present, WCE=0 (Set Features FID 06h = 0), mode through on the raw QEMU NVMe"
echo "namespace over the flush-cost model (flush L, FUA F), TCG guest (Linux 7.2), 4 KiB random writes,"
echo "$OPS per run, median of $ROUNDS rounds, one boot per latency; before = through never re-reading the cache,"
echo "after = the default (re-read once the answer is 100 ms old), every = a re-read before every write"
for lat in $LATENCIES; do
	echo
	echo "flush $lat, FUA $(raw_fua "$lat"); the guest saw: $(grep "^$lat seen " "$out" | cut -d' ' -f3- | paste -sd';')"
	printf '%-6s %-3s %-15s %8s %11s %9s %11s %11s %9s %9s %8s %8s\n' latency QD mode IOPS "min..max" "of before" \
		"rereads/s" "rereads/w" "dev fl/w" "dev FUA/w" "CPU us/w" "p50 us"
	for qd in $QDS; do
		base=$(col "$lat" "$qd" before 6 | median)
		for m in $MODES; do
			iops=$(col "$lat" "$qd" "$m" 6 | median)
			range=$(col "$lat" "$qd" "$m" 6 | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.0f..%.0f", lo, hi }')
			resolved=$(col "$lat" "$qd" "$m" 5 | sort -u | paste -sd/)
			rps=$(col "$lat" "$qd" "$m" 10 | median)
			# per write, summed over the rounds: re-reads, device flushes, device FUA writes
			counts=$(awk -v l="$lat" -v q="$qd" -v m="$m" '$1 == l && $2 == "cache" && $3 == q && $4 == m {
				rr += $9; w += $11; dw += $13; du += $14; df += $15 }
				END { if (w == 0) w = 1; if (dw == 0) dw = 1; printf "%.4f %.2f %.2f", rr / w, df / dw, du / dw }' "$out")
			read -r rpw dfl dfua <<<"$counts"
			printf '%-6s %-3s %-15s %8.0f %11s %8.2fx %11.1f %11.4f %9s %9s %8.0f %8.0f\n' "$lat" "$qd" "$m($resolved)" "$iops" \
				"$range" "$(echo "$iops / $base" | bc -l)" "$rps" "$rpw" "$dfl" "$dfua" \
				"$(col "$lat" "$qd" "$m" 7 | median)" "$(col "$lat" "$qd" "$m" 8 | median)"
		done
	done
	echo "wz::write_cache on /dev/nvme0n1 in the same boot (wzero_bench_stat --write-cache, medians of 5 rounds):"
	grep "^$lat statbench " "$out" | cut -d' ' -f3- | sed 's/^/  /'
	moved=$(awk -v l="$lat" '$1 == l && $2 == "cache" && $12 > 0' "$out" | wc -l)
	[ "$moved" = 0 ] || echo "  ($moved runs moved out of through (mode_changes > 0): the cache was not write-through)"
done
