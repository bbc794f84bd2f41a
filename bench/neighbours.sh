#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark on the host: what a background `wzero alloc --rate` costs the foreground. Four
# paced writers (wz_neighbour: a 4 KiB write and an fsync every INTERVAL us, latency per
# write + fsync) run on ext4 and on xfs over a direct-I/O loop device: O_DIRECT and buffered
# on ranges beside the one being zeroed, O_DIRECT and buffered on another file. Each round
# runs them for SECONDS alone, then for as long as `wzero alloc --method write --rate RATE`
# takes to zero RATE x SECONDS bytes of the first file, then for SECONDS while the same alloc
# runs back to back without --rate (what the limit buys), the order of the three rotating
# from round to round; the table gives the medians over the rounds of
# each writer's p50 and p99 in the three phases side by side, with the writers' errors (any
# pwrite or fsync failure), and the allocs' exit status and time.
#   bench/neighbours.sh [SECONDS] [ROUNDS] [RATE] [INTERVAL]   (root; default 5 3 64M 1000)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${1:-5}
rounds=${2:-3}
rate=${3:-64M}
interval=${4:-1000}
wzero=$repo/build/tools/wzero/wzero
neighbour=$repo/build/tools/wzero/wz_neighbour
[ -x "$neighbour" ] || { echo "neighbours.sh: $neighbour not built" >&2; exit 1; }
# shellcheck source=common.sh
. "$repo/bench/common.sh"
rate_bytes=$(numfmt --from=iec "${rate%iB}")
len=$((rate_bytes * seconds))
mib=$((1 << 20))
off=$((64 * mib))

writers=(a-direct a-buffered b-direct b-buffered)
declare -A label=([a-direct]="same file, O_DIRECT" [a-buffered]="same file, buffered"
	[b-direct]="other file, O_DIRECT" [b-buffered]="other file, buffered")

# One phase: the four writers until $work/stop appears; "alone" stops them after SECONDS,
# "alloc" once the rate-limited alloc has zeroed its range, "full" after SECONDS of the same
# alloc without --rate, run after run. Appends "fs phase writer p50 p99 failures".
phase() { # fs phase
	local fs=$1 ph=$2 a=$work/mnt/a b=$work/mnt/b w
	local -A pid
	rm -f "$work/stop"
	declare -A args=([a-direct]="--direct $a $((off - 65536)):4096"
		[a-buffered]="$a $((off + len + 65536)):4096"
		[b-direct]="--direct $b 0:4096" [b-buffered]="$b $((mib)):4096")
	for w in "${writers[@]}"; do
		# shellcheck disable=SC2086 # the arguments of each writer, split on purpose
		"$neighbour" --stop "$work/stop" --seconds 600 --interval-us "$interval" ${args[$w]} \
			>"$work/$w.out" 2>"$work/$w.err" &
		pid[$w]=$!
	done
	if [ "$ph" = alone ] || [ "$ph" = warmup ]; then
		sleep "$seconds"
	else
		# Without a limit one run is over in a fraction of a second: runs back to back for
		# SECONDS, so that the writers' percentiles rest on as many samples as alone.
		local t0 rc limit=(--rate "$rate") end=$(($(date +%s%N) + seconds * 1000000000))
		[ "$ph" = full ] && limit=()
		while :; do
			rc=0
			t0=$(date +%s%N)
			# --force: the writers have the file open (wzero(1), EXCLUSIVE USE).
			"$wzero" alloc --method write --force "${limit[@]}" -o "$off" -l "$len" "$a" >"$work/alloc.out" 2>&1 || rc=$?
			[ "$rc" -eq 0 ] || { cat "$work/alloc.out" >&2; echo "neighbours.sh: wzero alloc failed" >&2; }
			echo "$fs $ph $rc $((($(date +%s%N) - t0) / 1000000))" >>"$work/allocs"
			{ [ "$ph" = full ] && [ "$(date +%s%N)" -lt "$end" ]; } || break
		done
	fi
	touch "$work/stop"
	for w in "${writers[@]}"; do
		local rc=0
		wait "${pid[$w]}" || rc=$?
		local fails
		fails=$(( $(sed -n 's/^fsync_failures //p' "$work/$w.out") + $(wc -l <"$work/$w.err") ))
		[ "$rc" -eq 0 ] || fails=$((fails > 0 ? fails : 1))
		echo "$fs $ph $w $(sed -n 's/^p50_us //p' "$work/$w.out") $(sed -n 's/^p99_us //p' "$work/$w.out") $fails" \
			>>"$work/results"
	done
}

median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
col() { # fs phase writer column
	awk -v f="$1" -v p="$2" -v w="$3" -v c="$4" '$1 == f && $2 == p && $3 == w { print $c }' "$work/results"
}

bench_loop 2G --direct-io=on
: >"$work/results"
: >"$work/allocs"
for fs in ext4 xfs; do
	bench_mkfs_mount "$fs"
	# Written extents throughout, so that the O_DIRECT writers overwrite in place.
	"$wzero" alloc -l $((off + len + 2 * 65536 + mib)) "$work/mnt/a" >/dev/null
	"$wzero" alloc -l $((8 * mib)) "$work/mnt/b" >/dev/null
	sync
	# Warm-up, not counted: the first writes after mkfs and the preallocation are slower.
	phase "$fs" warmup
	# The order of the phases rotates from round to round: what one phase leaves behind (the
	# backing disk still busy after the unlimited runs) must not always land on the same one.
	order=(alone alloc full)
	for ((r = 0; r < rounds; r++)); do
		for ((i = 0; i < 3; i++)); do
			phase "$fs" "${order[(r + i) % 3]}"
		done
	done
done

echo "foreground writers (4 KiB write + fsync every $interval us) beside \`wzero alloc --method write\`" \
	"zeroing $((len / mib)) MiB of the same file at --rate $rate and without a limit;"
echo "direct-I/O loop device, medians of $rounds rounds ($seconds s alone); latency of write + fsync in us"
printf '%-5s %-21s %7s %7s %7s %7s %7s %7s %7s %7s %6s\n' "" "" alone alone rate rate full full rate full ""
printf '%-5s %-21s %7s %7s %7s %7s %7s %7s %7s %7s %6s\n' fs writer p50 p99 p50 p99 p50 p99 "x p99" "x p99" errors
for fs in ext4 xfs; do
	for w in "${writers[@]}"; do
		v=()
		for ph in alone alloc full; do
			v+=("$(col "$fs" "$ph" "$w" 4 | median)" "$(col "$fs" "$ph" "$w" 5 | median)")
		done
		errs=$(awk -v f="$fs" -v w="$w" '$1 == f && $3 == w { s += $6 } END { print s + 0 }' "$work/results")
		printf '%-5s %-21s %7.0f %7.0f %7.0f %7.0f %7.0f %7.0f %6.2fx %6.2fx %6s\n' "$fs" "${label[$w]}" "${v[@]}" \
			"$(echo "${v[3]} / ${v[1]}" | bc -l)" "$(echo "${v[5]} / ${v[1]}" | bc -l)" "$errs"
	done
done
for fs in ext4 xfs; do
	for ph in alloc full; do
		echo "$fs: alloc $([ "$ph" = alloc ] && echo "--rate $rate" || echo "without a limit"): exit status" \
			"$(awk -v f="$fs" -v p="$ph" '$1 == f && $2 == p { print $3 }' "$work/allocs" | sort -u | paste -sd,)" \
			"in $(awk -v f="$fs" -v p="$ph" '$1 == f && $2 == p' "$work/allocs" | wc -l) runs, median" \
			"$(awk -v f="$fs" -v p="$ph" '$1 == f && $2 == p { print $4 }' "$work/allocs" | median) ms" \
			"for $((len / mib)) MiB"
	done
done
