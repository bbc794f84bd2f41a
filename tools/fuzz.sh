#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds the libFuzzer targets of fuzz/ with clang into build-fuzz/ and runs every one of
# them (those listed in build-fuzz/fuzz/fuzz_targets.txt): first over its seeds once
# (fuzz/corpus/NAME, the regression run), then fuzzing for SECONDS from a working corpus
# outside the repository, so that the seeds in the repository are only read.
#   tools/fuzz.sh [SECONDS]     SECONDS per target: the argument, else WZ_FUZZ_SECONDS, else 10;
#                               0 runs the seeds only.
#   tools/fuzz.sh build         only the build (tools/test-all.sh runs it in the background;
#                               a later run finds it done).
# Environment: WZ_FUZZ_WORK (working corpora and crashes, default /var/tmp/wzero-fuzz: they
# grow from run to run), WZ_FUZZ_JOBS (targets at once, default 2), WZ_FUZZ_BUILD (build dir).
# Two runs may share WORK (a CI run beside another): the corpora and crashes are shared, each
# run's logs and verdicts are its own (WORK/run.XXXXXX, removed when every target passed).
# One line per target, "fuzz NAME: N executions, corpus A -> B, passed|FAILED ...", with the
# kept crashing input's path and the log on a failure; the last line is "fuzz: N passed, N failed,
# N skipped" (tools/test-all.sh counts it as a layer). Exit status 0 only if none failed.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_only=0
if [ "${1:-}" = build ]; then
	build_only=1
	shift
fi
seconds=${1:-${WZ_FUZZ_SECONDS:-10}}
build=${WZ_FUZZ_BUILD:-$repo/build-fuzz}
work=${WZ_FUZZ_WORK:-/var/tmp/wzero-fuzz}
jobs=${WZ_FUZZ_JOBS:-2}
case $seconds in '' | *[!0-9]*) echo "fuzz.sh: SECONDS must be a number, not '$seconds'" >&2; exit 2 ;; esac

cxx=${WZ_FUZZ_CXX:-clang++-14}
cc=${WZ_FUZZ_CC:-clang-14}
if ! command -v "$cxx" >/dev/null; then
	echo "fuzz.sh: $cxx not found (tools/install-deps.sh installs clang-14 and libclang-rt-14-dev)" >&2
	echo "fuzz: 0 passed, 1 failed, 0 skipped"
	exit 1
fi
build_log=$(mktemp)
trap 'rm -f "$build_log"' EXIT
start=$SECONDS
if ! cmake -S "$repo" -B "$build" -DWZERO_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCMAKE_C_FLAGS_RELWITHDEBINFO='-O2 -g1 -DNDEBUG' -DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O2 -g1 -DNDEBUG' \
	-DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" >"$build_log" 2>&1 ||
	! cmake --build "$build" -j 2 -- --no-print-directory >>"$build_log" 2>&1; then
	tail -n 40 "$build_log" >&2
	echo "fuzz.sh: the build in $build failed" >&2
	echo "fuzz: 0 passed, 1 failed, 0 skipped"
	exit 1
fi
if [ "$build_only" = 1 ]; then
	echo "fuzz: built in $((SECONDS - start)) s"
	exit 0
fi
echo "fuzz: built in $((SECONDS - start)) s; $seconds s per target, $jobs at once; work in $work"

mapfile -t targets < <(grep -v '^$' "$build/fuzz/fuzz_targets.txt")
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# One target: the seeds once, then SECONDS of fuzzing; the verdict and numbers in $out/NAME.result.
run_target() { # name
	local name=$1 bin=$build/fuzz/fuzz_$1 seeds=$repo/fuzz/corpus/$1 dir=$work/$1
	local corpus=$dir/corpus crashes=$dir/crashes dict=() log=$out/$1.log
	mkdir -p "$corpus" "$crashes"
	[ -f "$repo/fuzz/$name.dict" ] && dict=(-dict="$repo/fuzz/$name.dict")
	local before after rc execs=0
	before=$(find "$corpus" -type f | wc -l)
	"$bin" -runs=0 -artifact_prefix="$crashes/" "$seeds" >"$log" 2>&1
	rc=$?
	if [ "$rc" -eq 0 ] && [ "$seconds" -gt 0 ]; then
		"$bin" -max_total_time="$seconds" -print_final_stats=1 -timeout=5 -rss_limit_mb=1024 -max_len=4096 \
			"${dict[@]}" -artifact_prefix="$crashes/" "$corpus" "$seeds" >>"$log" 2>&1
		rc=$?
		execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	fi
	after=$(find "$corpus" -type f | wc -l)
	if [ "$rc" -eq 0 ]; then
		echo "fuzz $name: ${execs:-0} executions, corpus $before -> $after, passed" >"$out/$name.result"
	else
		local input why
		input=$(sed -n 's/.*Test unit written to //p' "$log" | tail -n 1)
		why=$(grep -m 1 -E 'property failed|ERROR: (AddressSanitizer|libFuzzer|LeakSanitizer)|runtime error' "$log")
		{
			echo "fuzz $name: ${execs:-0} executions, corpus $before -> $after, FAILED (exit $rc)"
			echo "  ${why:-see $log}"
			echo "  input kept: ${input:-none written (see $log)}"
			echo "  log: $log"
		} >"$out/$name.result"
	fi
}

mkdir -p "$work"
out=$(mktemp -d "$work/run.XXXXXX") || exit 1
running=0
for t in "${targets[@]}"; do
	run_target "$t" &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
done
wait

pass=0 fail=0 skip=0
for t in "${targets[@]}"; do
	if [ -f "$out/$t.result" ]; then
		cat "$out/$t.result"
		if grep -q ', passed$' "$out/$t.result"; then
			pass=$((pass + 1))
		else
			fail=$((fail + 1))
		fi
	else
		echo "fuzz $t: no result (the run did not finish)"
		fail=$((fail + 1))
	fi
done
[ "$fail" -eq 0 ] && rm -rf "$out"
echo "fuzz: took $((SECONDS - start)) s in all"
echo "fuzz: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
