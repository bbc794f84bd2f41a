# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Sourced by bench/seed-wce0.sh, seed-through.sh and seed-wce1.sh: 4 KiB random writes on the
# raw namespace of the VM rig's flush-cost model (vm/run --flush-latency/--fua-latency), one
# boot per latency, every mode of that latency side by side in that boot, ROUNDS rounds with
# the order of the modes reversed every other round, medians on the host.
#   raw_fua LAT            the FUA latency that goes with flush latency LAT (the configs
#                          new-A-lat200us/lat1ms/lat5ms of fstests/vm/configs)
#   raw_boot LAT OUT [VM/RUN ARGS...] -- GUEST
#                          boot the model at LAT, run GUEST (bash, after $raw_guest_lib) with
#                          OPS, ROUNDS, QDS, MODES in its environment; output appended to OUT
#   raw_table OUT LAT      print the rows of LAT (QDS x MODES, medians over the rounds, and the
#                          lowest..highest IOPS of the rounds)
#   raw_row OUT LAT QD MODE FIELD   one median (iops, cpu, p50) of a row
#   raw_headline NAME OUT LAT QD MODE   the "seed: NAME: ..." line, MODE against dsync and
#                          the ceiling at LAT and QD
# In the guest (raw_guest_lib): rounds (every QD and mode ROUNDS times), flushlat N (the flush
# latency), seen LABEL (a "seen LABEL: ..." line: VWC, WCE, write_cache and the record).
# Modes (the names in MODES):
#   ceiling  --mode through --unsafe-through --qd N: no durability at all (plain O_DIRECT, no
#            flush, no FUA): the limit a durable writer can approach
#   dsync    --mode dsync --threads N: synchronous O_DSYNC|O_DIRECT pwrite from N threads
#   auto     --qd N: the writer's own choice (the row names the mode it resolved to)
#   fua, flush, through   --mode M --qd N: the writer in that mode
# SEED_RAW=FILE keeps the guest's lines (each prefixed with its latency) in FILE.
# The guest prints one line per run:
#   run QD MODE RESOLVED IOPS CPU_US_PER_IO P50_US WRITER_FLUSHES WRITER_FUA DEV_WRITES DEV_FUA DEV_FLUSHES
# where DEV_* come from the guest NVMe driver's trace (fstests/common/devcount), not from the
# tool.

# shellcheck disable=SC2016 # expanded in the guest
raw_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
raw_guest_lib='
set -euo pipefail
. /wz/fstests/common/devcount
devcount_init
dev=/dev/nvme0n1
args() { # MODE QD
	case $1 in
	ceiling) echo "--mode through --unsafe-through --qd $2" ;;
	dsync) echo "--mode dsync --threads $2" ;;
	auto) echo "--qd $2" ;;
	*) echo "--mode $1 --qd $2" ;;
	esac
}
b() { # MODE QD
	local j c
	devcount_begin
	# shellcheck disable=SC2046
	j=$(wzero bench write --json --random --ops "$OPS" -l 256M $(args "$1" "$2") $dev)
	c=$(devcount_end)
	echo "run $2 $1 $(jq -r "\"\(.mode) \(.iops) \(.cpu_us_per_io) \(.latency_us.p50) \(.flushes) \(.fua_writes)\"" <<<"$j") $(sed "s/[a-z]*=//g" <<<"$c")"
}
rounds() { # every QD, every mode, ROUNDS times; the order of the modes reversed every other round
	local r qd m order
	wzero bench write --random --ops 200 -l 256M --mode through --unsafe-through --qd 1 $dev >/dev/null
	for r in $(seq "$ROUNDS"); do
		for qd in $QDS; do
			order=$MODES
			if [ $((r % 2)) = 0 ]; then order=$(awk "{ for (i = NF; i > 0; i--) printf \"%s \", \$i }" <<<"$MODES"); fi
			for m in $order; do b "$m" "$qd"; done
		done
	done
}
seen() { # LABEL: what the guest sees of the cache: VWC (Identify Controller), WCE (Get
	# Features FID 06h), the kernel'"'"'s write_cache and the record'"'"'s reading of them
	echo "seen $1: vwc=$(nvme id-ctrl /dev/nvme0 | awk "\$1 == \"vwc\" { print \$3 }") $(nvme get-feature /dev/nvme0 -f 6 | sed "s/.*Current value:/wce=/") write_cache=\"$(cat /sys/block/nvme0n1/queue/write_cache)\" $(wzero stat --record $dev | jq -r "\"record: cache \\(.cache.kernel) (kernel), \\(.cache.effective) (effective), flush needed \\(.cache.flush_needed)\"")"
}
flushlat() { # N: the flush latency, two ways: microseconds per fsync of the device (xfs_io
	# with N + 1 fsyncs minus xfs_io with one: the mean, syscall included) and the median NVMe
	# Flush at the guest driver (nvme_setup_cmd to nvme_complete_rq, fstests/common/nvme_latency.awk)
	# prints "flushlat MEAN_US DEVICE_MEDIAN_US writes=.. fua=.. flushes=N+2 zeroes=.."
	local n=$1 fs=() t0 t1 t2 c med e=$DEVCOUNT_TRACEFS/events/nvme/nvme_complete_rq/enable
	for _ in $(seq "$n"); do fs+=(-c fsync); done
	echo 1 >"$e"
	devcount_begin
	t0=$EPOCHREALTIME
	xfs_io -d -c fsync $dev
	t1=$EPOCHREALTIME
	xfs_io -d -c fsync "${fs[@]}" $dev
	t2=$EPOCHREALTIME
	c=$(devcount_end)
	med=$(awk -f /wz/fstests/common/nvme_latency.awk "$DEVCOUNT_TRACEFS/trace" | awk "\$1 == \"nvme_cmd_flush\" { sub(\"median_us=\", \"\", \$3); print \$3 }")
	echo 0 >"$e"
	echo "flushlat $(awk -v a="$t0" -v b="$t1" -v c="$t2" -v n="$n" "BEGIN { printf \"%.0f\", ((c - b) - (b - a)) * 1e6 / n }") ${med:-none} $c"
}
'

raw_fua() {
	case $1 in
	0.2ms | 200us) echo 100us ;;
	1ms) echo 300us ;;
	5ms) echo 2ms ;;
	*) echo "raw-model.sh: no FUA latency known for $1 (0.2ms, 1ms or 5ms)" >&2; return 1 ;;
	esac
}

raw_boot() {
	local lat=$1 out=$2 fua boot st try
	shift 2
	local vmargs=()
	while [ "$1" != -- ]; do vmargs+=("$1"); shift; done
	shift
	fua=$(raw_fua "$lat")
	boot=$(mktemp)
	# A boot whose command failed is booted once more, and says so on stderr with the first
	# boot's last lines: QEMU 7.2's NVMe controller now and then stops completing passthrough
	# commands (docs/testing.md, the rig stall), and the writer's fua and flush modes on
	# a raw namespace use passthrough. A second failure ends the script.
	for try in 1 2; do
		st=0
		"$raw_repo/fstests/vm/run" --kernel new --setup A --flush-latency "$lat" --fua-latency "$fua" \
			--append idle=poll --timeout 1800 "${vmargs[@]}" -- \
			env OPS="$OPS" ROUNDS="$ROUNDS" QDS="$QDS" MODES="$MODES" bash -c "$raw_guest_lib$1" >"$boot" 2>&1 || st=$?
		[ "$st" = 0 ] && break
		echo "raw-model.sh: the boot at $lat failed (status $st, try $try); its last lines:" >&2
		grep -v '^vm/run: info: ' "$boot" | tail -n 15 | sed 's/^/  /' >&2
		[ "$try" = 2 ] && { rm -f "$boot"; return 1; }
	done
	{ echo "latency $lat $fua"; cat "$boot"; } | sed "s/^/$lat /" >>"$out"
	rm -f "$boot"
	if [ -n "${SEED_RAW:-}" ]; then grep "^$lat " "$out" >>"$SEED_RAW"; fi
}

# median of the values on stdin
raw_median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

raw_row() { # OUT LAT QD MODE FIELD (iops cpu p50)
	local col
	case $5 in iops) col=6 ;; cpu) col=7 ;; p50) col=8 ;; esac
	awk -v l="$2" -v q="$3" -v m="$4" -v c="$col" '$1 == l && $2 == "run" && $3 == q && $4 == m { print $c }' "$1" | raw_median
}

raw_table() { # OUT LAT
	local out=$1 lat=$2 qd m iops range ceil base resolved counts
	printf '%-6s %-3s %-14s %8s %11s %7s %7s %9s %8s %9s %8s %8s %8s\n' latency QD mode IOPS "min..max" "of ceil" "x dsync" \
		"dev fl/w" "dev FUA/w" "wzr fl/w" "wzr FUA/w" "CPU us/w" "p50 us"
	for qd in $QDS; do
		ceil=$(raw_row "$out" "$lat" "$qd" ceiling iops)
		base=$(raw_row "$out" "$lat" "$qd" dsync iops)
		for m in $MODES; do
			iops=$(raw_row "$out" "$lat" "$qd" "$m" iops)
			range=$(awk -v l="$lat" -v q="$qd" -v m="$m" '$1 == l && $2 == "run" && $3 == q && $4 == m { print $6 }' "$out" |
				sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.0f..%.0f", lo, hi }')
			resolved=$(awk -v l="$lat" -v q="$qd" -v m="$m" '$1 == l && $2 == "run" && $3 == q && $4 == m { print $5 }' "$out" | sort -u | paste -sd/)
			# per write, summed over the rounds: writer flushes, writer FUA, device FUA, device flushes
			counts=$(awk -v l="$lat" -v q="$qd" -v m="$m" '$1 == l && $2 == "run" && $3 == q && $4 == m {
				wf += $9; wu += $10; dw += $11; du += $12; df += $13 }
				END { if (dw == 0) dw = 1; printf "%.2f %.2f %.2f %.2f", df / dw, du / dw, wf / dw, wu / dw }' "$out")
			local label=$m
			[ "$m" = auto ] && label="auto($resolved)"
			[ "$m" = fua ] && [ -n "${RAW_FUA_MARK:-}" ] && label="fua$RAW_FUA_MARK"
			# shellcheck disable=SC2086 # counts is four numbers
			printf '%-6s %-3s %-14s %8.0f %11s %7.2f %6.2fx %9s %8s %9s %8s %8.0f %8.0f\n' "$lat" "$qd" "$label" "$iops" "$range" \
				"$(echo "$iops / $ceil" | bc -l)" "$(echo "$iops / $base" | bc -l)" $counts \
				"$(raw_row "$out" "$lat" "$qd" "$m" cpu)" "$(raw_row "$out" "$lat" "$qd" "$m" p50)"
		done
	done
}

raw_headline() { # NAME OUT LAT QD MODE
	local iops ceil base
	iops=$(raw_row "$2" "$3" "$4" "$5" iops)
	ceil=$(raw_row "$2" "$3" "$4" ceiling iops)
	base=$(raw_row "$2" "$3" "$4" dsync iops)
	printf 'seed: %s: writer %.2fx of dsync, %.2f of ceiling\n' "$1" "$(echo "$iops / $base" | bc -l)" \
		"$(echo "$iops / $ceil" | bc -l)"
}
