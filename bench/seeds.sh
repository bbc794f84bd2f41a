#!/bin/bash
# SPDX-License-Identifier: MIT
# The seed experiments, one after the other: every bench/seed-*.sh (each boots
# the VM rig's flush-cost model once per latency, or runs on the host), their tables as they
# come, then, last, one line per experiment:
#   NAME: writer X.XXx of dsync, Y.YY of ceiling
# (the experiment's headline point, named in each script's header). A script that fails is
# named and makes the exit status 1; the others still run.
#   bench/seeds.sh [OPS]        OPS is passed to each script (each has its own default)
#   LATENCIES="1ms" bench/seeds.sh   only the 1 ms model (default "0.2ms 1ms 5ms")
#   SEEDS="wce0 wce1" bench/seeds.sh only these experiments
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
scripts=()
if [ -n "${SEEDS:-}" ]; then
	for s in $SEEDS; do
		[ -x "$repo/bench/seed-$s.sh" ] || { echo "seeds.sh: no bench/seed-$s.sh" >&2; exit 2; }
		scripts+=("$repo/bench/seed-$s.sh")
	done
else
	for s in "$repo"/bench/seed-*.sh; do
		[ -x "$s" ] && scripts+=("$s")
	done
fi
[ ${#scripts[@]} -gt 0 ] || { echo "seeds.sh: no bench/seed-*.sh" >&2; exit 2; }
rc=0
summary=()
for s in "${scripts[@]}"; do
	name=$(basename "$s" .sh)
	echo "== $name $(date -u +%H:%M:%S)"
	start=$SECONDS
	"$s" "$@" 2>&1 | tee "$out"
	st=${PIPESTATUS[0]}
	line=$(grep '^seed: ' "$out" | tail -1)
	if [ "$st" -ne 0 ] || [ -z "$line" ]; then
		summary+=("${name#seed-}: FAILED (exit $st$([ -z "$line" ] && echo ', no seed: line'))")
		rc=1
	else
		summary+=("${line#seed: }")
	fi
	echo "== $name: $((SECONDS - start)) s"
	echo
done
printf '%s\n' "${summary[@]}"
exit $rc
