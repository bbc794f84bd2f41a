#!/bin/bash
# SPDX-License-Identifier: MIT
# Draws the benchmark figures of docs/performance.md as SVG with gnuplot (Debian's
# gnuplot-nox; bench/plot.gp holds the plots), from the JSON that the benchmarks write when
# WZ_BENCH_JSON names a file. Rerunning a benchmark into the data directory and then this
# script redraws its figures.
#   bench/plot.sh [-d DATA_DIR] [-o OUT_DIR] [FIGURE...]
#     DATA_DIR  where the JSON is (default docs/figures/data)
#     OUT_DIR   where the SVGs go (default docs/figures), one FIGURE.svg each
#     FIGURE    one of the names below; default: every figure whose JSON is in DATA_DIR
# Figures and the JSON each one reads:
#   host-qd-iops      IOPS against queue depth per mode: the writer (auto, --mode flush),
#                     O_DSYNC (pwrite from QD threads, and through io_uring) and the ceiling
#                     (no durability), one panel per filesystem       seed-host-qd1.json
#   host-qd-latency   p50 (solid) and p99 (dashed) latency against queue depth, same modes
#                                                                     seed-host-qd1.json
#   host-qd-flushes   flush requests per write at the loop device against queue depth, next
#                     to 1/QD (one flush per QD writes)               seed-host-qd1.json
#   write-host-iops   IOPS per target (written file, unwritten file, raw device) and mode
#                     (auto, flush, dsync, ceiling) at QD 1 and QD 8  write-host.json
# The JSON comes from (root, a few minutes on two cores):
#   FSES="ext4 xfs" QDS="1 2 4 8 16 32" WZ_BENCH_JSON=docs/figures/data/seed-host-qd1.json \
#       bash bench/seed-host-qd1.sh 2000 5
#   WZ_BENCH_JSON=docs/figures/data/write-host.json bash bench/write-host.sh 4000 5
# Exit status 1, with the reason, when gnuplot or jq is missing, when a figure's JSON is
# absent or is not that benchmark's, or when gnuplot fails.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
data=$repo/docs/figures/data
out=$repo/docs/figures
all_figures=(host-qd-iops host-qd-latency host-qd-flushes write-host-iops)

die() {
	echo "plot.sh: $*" >&2
	exit 1
}
usage() {
	sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit "${1:-1}"
}

while [ $# -gt 0 ]; do
	case $1 in
	-d) [ $# -ge 2 ] || usage 1; data=$2; shift 2 ;;
	-o) [ $# -ge 2 ] || usage 1; out=$2; shift 2 ;;
	-h | --help) usage 0 ;;
	-*) echo "plot.sh: unknown option $1" >&2; usage 1 ;;
	*) break ;;
	esac
done

command -v gnuplot >/dev/null ||
	die "gnuplot not found: install Debian's gnuplot-nox (apt-get install gnuplot-nox; tools/install-deps.sh installs it)"
command -v jq >/dev/null || die "jq not found (apt-get install jq)"

# json_of FIGURE: the benchmark JSON the figure reads.
json_of() {
	case $1 in
	host-qd-*) echo seed-host-qd1 ;;
	write-host-*) echo write-host ;;
	*) die "unknown figure '$1' (one of: ${all_figures[*]})" ;;
	esac
}
# how_to BENCHMARK: the command that writes its JSON into $data.
how_to() {
	case $1 in
	seed-host-qd1) echo "FSES=\"ext4 xfs\" QDS=\"1 2 4 8 16 32\" WZ_BENCH_JSON=$data/seed-host-qd1.json bash bench/seed-host-qd1.sh 2000 5" ;;
	write-host) echo "WZ_BENCH_JSON=$data/write-host.json bash bench/write-host.sh 4000 5" ;;
	esac
}

figures=("$@")
if [ ${#figures[@]} -eq 0 ]; then
	for f in "${all_figures[@]}"; do
		[ -f "$data/$(json_of "$f").json" ] && figures+=("$f")
	done
	[ ${#figures[@]} -gt 0 ] ||
		die "no benchmark JSON in $data: run, as root, $(how_to seed-host-qd1) (or: $(how_to write-host))"
fi
for f in "${figures[@]}"; do
	b=$(json_of "$f")
	[ -f "$data/$b.json" ] || die "$f needs $data/$b.json, which is absent: run, as root, $(how_to "$b")"
	[ "$(jq -r .benchmark "$data/$b.json" 2>/dev/null)" = "$b" ] ||
		die "$data/$b.json is not the JSON of bench/$b.sh (no \"benchmark\": \"$b\" in it)"
done
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# note JSON: the figure's footnote: the command, its date and the machine.
note() {
	jq -r '"\(.command)   \(.date[0:10])   \(.machine.cpu), \(.machine.cpus) CPUs, Linux \(.machine.kernel)   load average at the end: \(.machine.load_average_at_end)"' "$1"
}

# seed-host-qd1.json -> $tmp/FS-MODE.dat: "qd iops p50 p99 device-flushes/write
# writer-flushes/write cpu-us/write" per row, sorted by queue depth.
prepare_qd() {
	local j=$data/seed-host-qd1.json fs mode
	for fs in $(jq -r '.fses[]' "$j"); do
		for mode in $(jq -r '[.rows[].mode] | unique | .[]' "$j"); do
			jq -r --arg fs "$fs" --arg m "$mode" '[.rows[] | select(.fs == $fs and .mode == $m)] |
				sort_by(.qd) | .[] | "\(.qd) \(.iops) \(.p50_us) \(.p99_us) \(.device_flushes_per_write) \(.writer_flushes_per_write) \(.cpu_us_per_write)"' \
				"$j" >"$tmp/$fs-$mode.dat"
		done
	done
}

# write-host.json -> $tmp/wh.dat: "label written unwritten raw" per mode and QD (IOPS of
# this build's rows; "-" where a target has no such mode).
prepare_wh() {
	local j=$data/write-host.json
	jq -r '[.rows[] | select(.build == "now")] as $r |
		(1, 8) as $q | ("auto", "flush", "dsync", "ceiling") as $m |
		["\"QD \($q), \($m)\""] + [("written", "unwritten", "raw") as $t |
			(first($r[] | select(.qd == $q and .mode == $m and .target == $t) | .iops) // "-")] |
		map(tostring) | join(" ")' "$j" >"$tmp/wh.dat"
}

prepared_qd=0 prepared_wh=0
for f in "${figures[@]}"; do
	b=$(json_of "$f")
	case $b in
	seed-host-qd1)
		[ $prepared_qd = 1 ] || { prepare_qd; prepared_qd=1; }
		fses=$(jq -r '.fses | join(" ")' "$data/$b.json")
		# The key's order: the baselines, the writer, the ceiling; any other mode after them.
		modes=$(jq -r '["dsync-sync", "dsync-async", "flush-async", "auto-async", "ceiling", "flush-before"] as $o |
			([.rows[].mode] | unique) as $m | ($o - ($o - $m)) + ($m - $o) | join(" ")' "$data/$b.json")
		;;
	write-host)
		[ $prepared_wh = 1 ] || { prepare_wh; prepared_wh=1; }
		fses=ext4 modes=
		;;
	esac
	svg=$out/$f.svg
	gnuplot -e "figure='$f'; dir='$tmp'; out='$svg.tmp'; fses='$fses'; modes='$modes'; note='$(note "$data/$b.json" | tr -d "'")'" \
		"$repo/bench/plot.gp" || die "gnuplot failed on $f"
	# The licence line every tracked file carries (tools/spdx.sh), after the XML declaration.
	sed '1a <!-- SPDX-License-Identifier: MIT -->' "$svg.tmp" >"$svg"
	rm -f "$svg.tmp"
	echo "plot.sh: $svg (from $data/$b.json)"
done
