#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark: peak RSS and wall time of `wzero map`, `map --json`, `map -r`, `verify` and
# `verify --data` over files with many extents, on ext4 over a loop device: sparse files of
# N one-block unwritten extents with a hole after each (2N map entries), and a file of
# 150,000 one-block written extents with no hole (bench/make_fragmented.cpp --written).
# Peak RSS is wait4's ru_maxrss through /usr/bin/time; output goes to /dev/null.
#   bench/map.sh [WZERO]      (root; WZERO defaults to build/tools/wzero/wzero: pass an
#                              older build to compare)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
wzero=${1:-$repo/build/tools/wzero/wzero}
frag=$repo/build/bench/wzero_make_fragmented
if [ ! -x "$wzero" ] || [ ! -x "$frag" ]; then
	echo "build first (tools/build.sh)" >&2
	exit 1
fi
# shellcheck source=common.sh
. "$repo/bench/common.sh"
bench_ext4_on_loop 16G
m=$work/mnt
"$frag" "$m/sparse150k" $((150000 * 8192)) 8192
"$frag" "$m/sparse1m" $((1048576 * 8192)) 8192
"$frag" --written "$m/written150k" "$m/other" $((150000 * 4096))
rm "$m/other"
head -c 4096 /dev/zero >"$m/one"
sync

printf '%-38s %12s %10s\n' "command" "peak RSS" "seconds"
for run in "map --json one" "map --json sparse150k" "map sparse150k" "map --json sparse1m" "map sparse1m" "map -r sparse1m" \
	"verify written150k" "verify --data written150k"; do
	file=${run##* }
	args=${run% *}
	# shellcheck disable=SC2086 # the arguments are words
	/usr/bin/time -f "%M %e" -o "$work/time" "$wzero" $args "$m/$file" >/dev/null
	read -r kib secs <"$work/time"
	printf '%-38s %8d MiB %10.2f\n' "$args $file" $(((kib + 1023) / 1024)) "$secs"
done
