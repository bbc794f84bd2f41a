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
#   zero-throughput   zeroing throughput (MiB/s) per contender or method, one panel per
#                     benchmark: a file on ext4 over a loop device (wzero alloc, dd, fallocate
#                     -z + dd, fio; with every round's spread) and QEMU's emulated NVMe
#                     namespace in the VM rig (wzero's nvme, zeroout and write methods, and
#                     nvme-cli)                                       alloc.json, alloc-vm.json
#                     (drawn with whichever of the two is there, said on stderr)
# The JSON comes from (root, a few minutes on two cores):
#   FSES="ext4 xfs" QDS="1 2 4 8 16 32" WZ_BENCH_JSON=docs/figures/data/seed-host-qd1.json \
#       bash bench/seed-host-qd1.sh 2000 5
#   WZ_BENCH_JSON=docs/figures/data/write-host.json bash bench/write-host.sh 4000 5
#   WZ_BENCH_JSON=docs/figures/data/alloc.json bash bench/alloc.sh 512 3
#   WZ_BENCH_JSON=docs/figures/data/alloc-vm.json bash bench/alloc-vm.sh 256
# Exit status 1, with the reason, when gnuplot or jq is missing, when a figure's JSON is
# absent or is not that benchmark's, or when gnuplot fails.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
data=$repo/docs/figures/data
out=$repo/docs/figures
all_figures=(host-qd-iops host-qd-latency host-qd-flushes write-host-iops zero-throughput)

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

# json_of FIGURE: the benchmark JSON the figure reads (one, or several: one panel each).
json_of() {
	case $1 in
	host-qd-*) echo seed-host-qd1 ;;
	write-host-*) echo write-host ;;
	zero-throughput) echo alloc alloc-vm ;;
	*) die "unknown figure '$1' (one of: ${all_figures[*]})" ;;
	esac
}
# how_to BENCHMARK: the command that writes its JSON into $data.
how_to() {
	case $1 in
	seed-host-qd1) echo "FSES=\"ext4 xfs\" QDS=\"1 2 4 8 16 32\" WZ_BENCH_JSON=$data/seed-host-qd1.json bash bench/seed-host-qd1.sh 2000 5" ;;
	write-host) echo "WZ_BENCH_JSON=$data/write-host.json bash bench/write-host.sh 4000 5" ;;
	alloc) echo "WZ_BENCH_JSON=$data/alloc.json bash bench/alloc.sh 512 3" ;;
	alloc-vm) echo "WZ_BENCH_JSON=$data/alloc-vm.json bash bench/alloc-vm.sh 256" ;;
	esac
}
# present FIGURE: those of the figure's benchmarks whose JSON is in $data.
present() {
	local b
	for b in $(json_of "$1"); do
		if [ -f "$data/$b.json" ]; then echo "$b"; fi
	done
}

figures=("$@")
if [ ${#figures[@]} -eq 0 ]; then
	for f in "${all_figures[@]}"; do
		[ -n "$(present "$f")" ] && figures+=("$f")
	done
	[ ${#figures[@]} -gt 0 ] ||
		die "no benchmark JSON in $data: run, as root, $(how_to seed-host-qd1) (or: $(how_to write-host); $(how_to alloc))"
fi
for f in "${figures[@]}"; do
	bs=$(json_of "$f")
	if [ -z "$(present "$f")" ] && [ "$bs" != "${bs%% *}" ]; then
		die "$f needs $(for b in $bs; do echo "$data/$b.json"; done | paste -sd ' ' | sed 's/ / or /g'), and none is there: run, as root, $(for b in $bs; do how_to "$b"; done | paste -sd ';' | sed 's/;/ (and: /; s/$/)/')"
	fi
	for b in $bs; do
		if [ ! -f "$data/$b.json" ]; then
			[ "$b" != "$bs" ] || die "$f needs $data/$b.json, which is absent: run, as root, $(how_to "$b")"
			# A figure of several benchmarks is drawn with those that are there.
			echo "plot.sh: $f: no $data/$b.json, drawn without its panel (run, as root, $(how_to "$b"))" >&2
			continue
		fi
		[ "$(jq -r .benchmark "$data/$b.json" 2>/dev/null)" = "$b" ] ||
			die "$data/$b.json is not the JSON of bench/$b.sh (no \"benchmark\": \"$b\" in it)"
	done
done
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# note JSON: the figure's footnote: the command, its date and the machine (and the guest's,
# for a benchmark in the VM rig).
note() {
	jq -r '"\(.command)   \(.date[0:10])   \(.machine.cpu), \(.machine.cpus) CPUs, Linux \(.machine.kernel)   load average at the end: \(.machine.load_average_at_end)" +
		if .vm then "   guest: Linux \(.vm.guest_kernel), QEMU \(.vm.qemu | split(" ")[0]) \(.vm.accel)" else "" end' "$1"
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

# alloc.json or alloc-vm.json -> $tmp/zt-BENCH.dat: "label MiB/s slowest fastest text colour
# text-x" per written-zeroes row, in the order of the JSON (MiB/s: of the median time; slowest
# and fastest: of the rounds' own times; colour: wzero's rows blue, the others grey), and
# $tmp/zt-BENCH.gp: the panel's title, its row count and rounds, the x range, and a line on
# what is not drawn (posix_fallocate: unwritten extents, not a written-zeroes peer).
prepare_zt() {
	local b=$1 j=$data/$1.json
	# shellcheck disable=SC2016 # jq's own program
	jq -r 'def f2: (. * 100 | round) as $n | "\($n / 100 | floor).\($n % 100 | tostring | if length < 2 then "0" + . else . end)";
		def q: "\"" + gsub("\""; "") + "\"";
		. as $j | ($j.wzero_alloc_methods // "") as $wm |
		{"dd-bs2M-direct": "dd bs=2M oflag=direct", "wzero-alloc": ("wzero alloc" + if $wm != "" then " (\($wm))" else "" end),
		 "wzero-alloc-before": "wzero alloc, earlier build", "fallocate-z+dd": "fallocate -z + dd",
		 "fio-qd32-bs1M": "fio QD 32, 1 MiB writes", "nvme": "wzero --method nvme",
		 "zeroout": "wzero --method zeroout", "nvme-cli": "nvme-cli write-zeroes loop",
		 "write": "wzero --method write"} as $names |
		.rows[] | select(.written_zeroes != false) | . as $r |
		([$j.runs // [] | .[] | select(.method == $r.method) | .seconds]) as $t |
		(if ($t | length) > 1 then [$j.size_mib / ($t | max), $j.size_mib / ($t | min)] else [.mib_per_s, .mib_per_s] end) as $range |
		(if .speed_vs_dd then "\(.speed_vs_dd | f2)x dd"
		 else "\(.vs_nvme_cli | f2)x nvme-cli, " +
			(if .data_bytes_sent > 0 then "\(.data_bytes_sent / 1048576 | round) MiB of data" else "no data" end) +
			(if .write_zeroes_cmds > 0 then ", \(.write_zeroes_cmds) Write Zeroes" else "" end) end) as $how |
		[($names[.method] // .method | q), .mib_per_s, $range[0], $range[1],
		 ("\(.mib_per_s | round) MiB/s, \($how)" | q),
		 (if .method | test("^(wzero|nvme$|zeroout|write)") then 2062260 else 10066329 end),
		 ([.mib_per_s, $range[1]] | max)] | map(tostring) | join(" ")' "$j" >"$tmp/zt-$b.dat"
	local title extra
	case $b in
	alloc)
		title=$(jq -r '"host: a new file on ext4 over a loop device (\(.loop_mode) I/O), \(.size_mib) MiB, median of \(.rounds) interleaved rounds"' "$j")
		extra=$(jq -r '[.rows[] | select(.written_zeroes == false) |
			"not drawn: \(.method), \(.seconds * 1000 | round) ms (\(.mib_per_s | round) MiB/s): unwritten extents, the floor, not a written-zeroes peer"] | join("; ")' "$j")
		;;
	alloc-vm)
		title=$(jq -r '"VM rig: \(.size_mib) MiB of the emulated NVMe namespace of QEMU \(.vm.qemu | split(" ")[0]) (\(.vm.accel | ascii_upcase) guest, Linux \(.vm.guest_kernel | split("+")[0])), one run"' "$j")
		extra=
		;;
	esac
	{
		echo "ptitle = '${title//\'/}'"
		echo "pextra = '${extra//\'/}'"
		echo "prows = $(wc -l <"$tmp/zt-$b.dat")"
		echo "prounds = $(jq '.rounds // 1' "$j")"
		echo "pxmax = $(awk '$NF > m { m = $NF } END { print m * 1.75 }' "$tmp/zt-$b.dat")"
	} >"$tmp/zt-$b.gp"
}

prepared_qd=0 prepared_wh=0
for f in "${figures[@]}"; do
	b=$(json_of "$f")
	note2='' panels='' from=$data/$b.json
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
	"alloc alloc-vm")
		panels=$(present "$f" | paste -sd ' ')
		for p in $panels; do prepare_zt "$p"; done
		# The footnote: a line per panel's benchmark.
		b=${panels%% *}
		[ "$b" = "$panels" ] || note2=$(note "$data/${panels#* }.json" | tr -d "'")
		from=$(for p in $panels; do echo "$data/$p.json"; done | paste -sd ' ' | sed 's/ / and /g')
		fses='' modes=''
		;;
	esac
	svg=$out/$f.svg
	gnuplot -e "figure='$f'; dir='$tmp'; out='$svg.tmp'; fses='$fses'; modes='$modes'; note='$(note "$data/$b.json" | tr -d "'")'; note2='$note2'; panels='$panels'" \
		"$repo/bench/plot.gp" || die "gnuplot failed on $f"
	# The licence line every tracked file carries (tools/spdx.sh), after the XML declaration.
	sed '1a <!-- SPDX-License-Identifier: MIT -->' "$svg.tmp" >"$svg"
	rm -f "$svg.tmp"
	echo "plot.sh: $svg (from $from)"
done
