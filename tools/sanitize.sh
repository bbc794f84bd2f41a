#!/bin/bash
# SPDX-License-Identifier: MIT
# The sanitizer builds and their runs (g++'s libasan, libubsan, libtsan).
# Usage: tools/sanitize.sh [asan|tsan|all]      (default: all)
#        tools/sanitize.sh build                 (both builds, no tests: tools/test-all.sh
#                                                 runs it in the background, niced)
#        tools/sanitize.sh fstests [CHECK ARG]...
#   asan     build-asan/: the library, the CLI, the fstests tools and the unit tests with
#            AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer on), then the unit
#            tests through ctest (the lint, licence, install and plugin tests are not code of
#            the library and are not built or run here).
#   tsan     build-tsan/: wzero_tsan_tests (the writer, group commit, the psync pool, the I/O
#            engines, completions, the private fd table) with ThreadSanitizer, through ctest.
#   fstests  the host fstests on the psync engine (fstests/check --no-vm --engine psync) with
#            build-asan's CLI and tools, on real ext4, xfs, btrfs and tmpfs; every report goes
#            to a log file, and any file there fails the run. Build asan (and build/) first.
# Every error is fatal: no recovery, halt on the first report, leaks included. Each run ends
# with a line "sanitizers (asan|tsan): N passed, N failed, N skipped" (fstests: check's own
# lines, then "sanitizers (fstests): N reports"), which tools/test-all.sh counts; a report
# is a failure even where the test itself passed. Exits non-zero on any failure.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tools/ccache.sh
. "$repo/tools/ccache.sh"
jobs=$(nproc)
[ "$jobs" -gt 2 ] && jobs=2

asan_flags='-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all'
tsan_flags='-fsanitize=thread'
# wz_test_tools: every fstests tool next to the CLI (fstests/src); check's tests find them by
# $WZERO's dir.
asan_targets=(wzero wzero_cli wzero_unit_tests wzero_cli_table_test wzero_capi_test wzero_capi_abi_test
	wzero_posix_locks_test wzero_example_wal_segments wz_test_tools)
# Not code of the library, or of targets not built here (the plugins).
asan_ctest_exclude='^(shell|man)\.lint$|^spdx\.|^exports\.|^install\.|^layering\.|rocksdb|sqlite'

export ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:check_initialization_order=1:detect_stack_use_after_return=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# die_after_fork=0: private_fd_table_test and posix_locks_test fork a child that only runs
# async-signal-safe calls before it exits or execs; TSan's default would kill it.
export TSAN_OPTIONS=halt_on_error=1:abort_on_error=1:second_deadlock_stack=1:history_size=4:die_after_fork=0

# A sanitizer's report in a log: also where the test passed (a child's report, a report
# after the test's verdict).
report_re='^==[0-9]+==ERROR: |^SUMMARY: (Address|Undefined|Thread|Leak)Sanitizer|^WARNING: ThreadSanitizer|: runtime error: '

# -g1: line tables are what the reports' stack traces need (a quarter less compile time).
# -Og: the instrumentation is the same as at -O1, and build-asan compiled in 241 s of CPU
# where -O1 took 355 s, with its unit tests no slower (73 s against 86 s, two cores).
configure() { # dir flags [cmake arg]...
	local dir=$1 flags=$2
	shift 2
	cmake -S "$repo" -B "$repo/$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWZERO_WERROR=OFF \
		-DCMAKE_C_FLAGS_RELWITHDEBINFO='-Og -g1' -DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-Og -g1' \
		-DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
		-DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" \
		-DCMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE=PRE_TEST "${ccache_args[@]}" "$@" >/dev/null
}

# ctest in DIR with the given arguments; prints "sanitizers (NAME): N passed, N failed, N
# skipped" from its result lines (as tools/test-all.sh counts the unit tests).
run_ctest() { # name dir [ctest arg]...
	local name=$1 dir=$2 log pass fail skip disabled total reports
	shift 2
	log=$(mktemp)
	(cd "$repo/$dir" && ctest -j "$jobs" --output-on-failure "$@") | tee "$log"
	read -r pass fail skip disabled < <(awk '
		/^ *[0-9]+\/[0-9]+ +Test +#[0-9]+: / {
			if ($0 ~ / Passed +[0-9.]+ sec$/) { p++ }
			else if ($0 ~ /\*\*\*Skipped +[0-9.]+ sec$/) { s++ }
			else if ($0 ~ /\*\*\*Not Run \(Disabled\) +[0-9.]+ sec$/) { d++ }
			else { f++ }
		}
		END { print p + 0, f + 0, s + 0, d + 0 }' "$log")
	total=$(sed -n 's/.*tests passed, [0-9]* tests failed out of \([0-9]*\).*/\1/p' "$log")
	rm -f "$log"
	if [ -z "$total" ] || [ "$total" = 0 ] || [ $((pass + fail + skip)) -ne "$total" ]; then
		echo "sanitize: ctest in $dir ran no tests or its summary disagrees with its result lines" >&2
		fail=$((fail + 1))
	fi
	reports=$(grep -cE "$report_re" "$repo/$dir/Testing/Temporary/LastTest.log" 2>/dev/null)
	if [ "${reports:-0}" -gt 0 ] && [ "$fail" -eq 0 ]; then
		echo "sanitize: $reports sanitizer report lines in passing tests (Testing/Temporary/LastTest.log):" >&2
		grep -E "$report_re" "$repo/$dir/Testing/Temporary/LastTest.log" | head -n 20 >&2
		fail=$((fail + 1))
	fi
	echo "sanitizers ($name): $pass passed, $fail failed, $((skip + disabled)) skipped"
	[ "$fail" -eq 0 ]
}

build_failed() { # name
	echo "sanitize: the $1 build failed" >&2
	echo "sanitizers ($1): 0 passed, 1 failed, 0 skipped"
	return 1
}

build_asan() {
	configure build-asan "$asan_flags" &&
		cmake --build "$repo/build-asan" -j "$jobs" --target "${asan_targets[@]}" -- --no-print-directory >/dev/null
}
build_tsan() {
	configure build-tsan "$tsan_flags" -DWZERO_TSAN_TESTS=ON &&
		cmake --build "$repo/build-tsan" -j "$jobs" --target wzero_tsan_tests -- --no-print-directory >/dev/null
}

run_asan() {
	echo "== sanitizers: ASan+UBSan build (build-asan)"
	build_asan || { build_failed asan; return; }
	echo "== sanitizers: unit tests under ASan+UBSan"
	run_ctest asan build-asan -E "$asan_ctest_exclude"
}

run_tsan() {
	echo "== sanitizers: TSan build (build-tsan)"
	build_tsan || { build_failed tsan; return; }
	echo "== sanitizers: writer and I/O tests under TSan"
	# Not the 12 data ranges of write_zeroes_test (64 MiB written and compared byte by byte,
	# 70 s each under TSan): one thread's data, checked by the ASan+UBSan run.
	run_ctest tsan build-tsan -R '^tsan\.' -E 'write_zeroes_test\.ranges_are_zero_and_nothing_else_changes'
}

# The host fstests on the psync engine with the ASan+UBSan CLI. With WZ_SANITIZER set, the
# cases the sanitizer runtimes cannot run (descriptor and address-space limits, peak RSS) run
# $WZERO_PLAIN, build/'s CLI, and strace runs wzero without LeakSanitizer (common/rc).
run_fstests() {
	local logs n rc
	if [ ! -x "$repo/build-asan/tools/wzero/wzero" ] || [ ! -x "$repo/build/tools/wzero/wzero" ]; then
		echo "sanitize: no build-asan/tools/wzero/wzero or build/tools/wzero/wzero (tests of" \
			"descriptor limits run the plain one): run tools/build.sh and tools/sanitize.sh asan first" >&2
		echo "sanitizers (fstests): 1 reports"
		return 1
	fi
	logs=$(mktemp -d /tmp/wz-sanitize.XXXXXX)
	chmod 0777 "$logs"
	# host/040 loads the RocksDB plugin into Debian's db_bench, which has no ASan runtime: build/'s.
	WZ_ROCKSDB_PLUGIN=${WZ_ROCKSDB_PLUGIN:-$repo/build/lib/plugins/rocksdb/libwzero_rocksdb.so} \
	WZ_SANITIZER=asan WZERO=$repo/build-asan/tools/wzero/wzero WZERO_PLAIN=$repo/build/tools/wzero/wzero \
		ASAN_OPTIONS="$ASAN_OPTIONS:log_path=$logs/asan" UBSAN_OPTIONS="$UBSAN_OPTIONS:log_path=$logs/ubsan" \
		"$repo/fstests/check" "$@" --no-vm --engine psync
	rc=$?
	n=$(find "$logs" -type f | wc -l)
	if [ "$n" -gt 0 ]; then
		echo "sanitize: sanitizer reports of the fstests run (ASAN_OPTIONS log_path):" >&2
		find "$logs" -type f -exec sh -c 'echo "--- $1"; head -n 40 "$1"' sh {} \; >&2
	fi
	rm -rf "$logs"
	echo "sanitizers (fstests): $n reports"
	[ "$rc" -eq 0 ] && [ "$n" -eq 0 ]
}

case ${1:-all} in
asan) run_asan ;;
tsan) run_tsan ;;
all)
	rc=0
	run_asan || rc=1
	run_tsan || rc=1
	exit $rc
	;;
build)
	# Only the builds (the runs above build again, which is then a no-op): what test-all.sh
	# starts in the background while the other tests run. A failure here is found again,
	# and counted, by the run that follows.
	rc=0
	build_asan || { echo "sanitize: the asan build failed" >&2; rc=1; }
	build_tsan || { echo "sanitize: the tsan build failed" >&2; rc=1; }
	exit $rc
	;;
fstests) shift; run_fstests "$@" ;;
*)
	echo "usage: tools/sanitize.sh [asan|tsan|all|build] | fstests [CHECK ARG]..." >&2
	exit 2
	;;
esac
