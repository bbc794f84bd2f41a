#!/bin/bash
# SPDX-License-Identifier: MIT
# Every test: installs what is missing, builds with warnings as errors, runs the unit tests
# (ctest), the fuzz targets briefly (tools/fuzz.sh), the fstests on the host (ext4, xfs,
# btrfs, tmpfs on loop devices), the fstests in the VM rig (QEMU NVMe and nvmet, Debian 12
# and Debian unstable kernels), the unit tests under ASan+UBSan and TSan
# (tools/sanitize.sh), and the host fstests that go through an I/O engine once more with the
# psync engine forced (WZERO_ENGINE=psync) and the ASan+UBSan CLI, and the Debian packages
# (tools/deb.sh): built, lintian-clean, installed and tested as installed, purged. Run as
# root.
# The VM fstests run beside everything after the build for the VM: the rig's QEMU (TCG, one
# thread) keeps one core busy for most of the run, the host layers the other; their output
# is printed when they end, after the host layers ("VM fstests").
# Before the total, the counts per layer (unit, fuzz, host fstests, host fstests of group vm
# (they run on the VM lane), host fstests with psync, packages,
# sanitizers asan and tsan, sanitizer reports of the psync pass, VM fstests), and the time
# of each phase ("time: ..."); the last line is the total: "total: N passed, N failed, N
# skipped".
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# phase TITLE: prints "== TITLE" and starts timing it; the time of every phase is printed at
# the end ("time: ..."), CI's budget being what it is, with how busy the machine's CPUs were
# meanwhile (/proc/stat: the share of CPU time not idle or waiting for I/O, over all CPUs and
# every process, the VM lane's included): a phase near 100% is bound by CPU, not by waits.
phase_titles=() phase_seconds=() phase_busy=() phase_start=$SECONDS
# cpu_ticks: "BUSY TOTAL" jiffies of all CPUs so far.
cpu_ticks() {
	awk '$1 == "cpu" { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t; exit }' /proc/stat
}
read -r phase_cpu0_busy phase_cpu0_total < <(cpu_ticks)
phase_end() {
	local busy total
	read -r busy total < <(cpu_ticks)
	phase_seconds+=($((SECONDS - phase_start)))
	phase_busy+=($(((busy - phase_cpu0_busy) * 100 / (total - phase_cpu0_total > 0 ? total - phase_cpu0_total : 1))))
	phase_cpu0_busy=$busy phase_cpu0_total=$total
}
phase() {
	if [ ${#phase_titles[@]} -gt 0 ]; then
		phase_end
	fi
	phase_titles+=("${1%% (*}") phase_start=$SECONDS
	echo "== $1"
}
phase "install (tools/install-deps.sh)"
bash "$repo/tools/install-deps.sh" || exit 1
# What the VM rig copies into its guest (target wz_vm_payload: the CLI, the fstests tools,
# libwzero, the plugins) first: the VM lane starts on it while the rest of build/ (the unit
# tests, most of the build's time) compiles.
phase "build for the VM (tools/build.sh wz_vm_payload)"
bash "$repo/tools/build.sh" wz_vm_payload || exit 1
# kill_tree PID: SIGTERM to PID's descendants, deepest first, then to PID (vm/run stops its QEMU
# on SIGTERM).
kill_tree() {
	local c
	for c in $(pgrep -P "$1"); do kill_tree "$c"; done
	kill -TERM "$1" 2>/dev/null || true # wz: ignored-error (it may have ended meanwhile)
}
# The VM configurations (fstests/check --vm), from now on in the background; then, on the
# same lane, the host tests that boot the VM rig themselves (group vm: host/005, 006, 009,
# 072, 079, 084), so that one QEMU runs at a time and the host lane keeps its core; they use
# more of build/ than the guest does (bench/'s tools), so they wait for the whole build.
# Their logs are printed, and counted, in the last phase.
# The lane runs at nice -10: it is one thread at a time (QEMU's TCG, then a crash test's
# replay checks) and the longest path of the run, while the host layers run several
# processes at once (ctest -j 2, the sanitizer and fuzz builds beside it: six compilers);
# at equal priority they took a share of its core (nvme/053: 163 to 205 s in CI, 70 s
# alone), and at nice -5 still a third of it while they compiled (nvme/016 35 s in CI, 27 s
# alone). At -10 its weight is more than nine jobs of nice 0 together, so it keeps a whole
# core; with a second CI run beside it, the two lanes still leave the host layers most of
# a core (at -19 they would leave them a few per cent).
vm_log=$(mktemp) vmhost_log=$(mktemp) build_done=$(mktemp -d)
vm_start=$SECONDS
{
	nice -n -10 "$repo/fstests/check" --vm "$@" >"$vm_log" 2>&1
	while [ ! -e "$build_done/status" ]; do sleep 5; done
	nice -n -10 "$repo/fstests/check" --no-vm -g vm "$@" >"$vmhost_log" 2>&1
} &
vm_pid=$!
phase "build (tools/build.sh: the rest of build/)"
build_rc=0
bash "$repo/tools/build.sh" || build_rc=$?
echo "$build_rc" >"$build_done/status"
if [ "$build_rc" -ne 0 ]; then
	echo "test-all: the build failed; stopping the VM lane" >&2
	kill_tree "$vm_pid"
	wait "$vm_pid"
	rm -rf "$vm_log" "$vmhost_log" "$build_done"
	exit 1
fi
# The sanitizer builds (build-asan, build-tsan) go on in the background while the unit tests,
# the fuzzers and the fstests run, at their normal priority: at nice 19 they got only what the
# VM's TCG thread and the host tests left, and were not done when the host tests were, so the
# sanitizer phase below waited for them while only the VM ran beside. That phase waits for
# them; their log is printed there. A failed build is built, and counted, again there.
san_build_log=$(mktemp)
bash "$repo/tools/sanitize.sh" build >"$san_build_log" 2>&1 &
san_build_pid=$!
# The fuzz targets' build (clang, build-fuzz/) likewise, beside the unit tests; the fuzz phase
# waits for it and prints its log. A failed build fails that phase (tools/fuzz.sh builds
# again there and says why).
fuzz_build_log=$(mktemp)
bash "$repo/tools/fuzz.sh" build >"$fuzz_build_log" 2>&1 &
fuzz_build_pid=$!
# The Debian packages' build (dpkg-buildpackage in build-deb/, then lintian) likewise; the
# packages phase waits for it, then installs and tests them.
deb_build_log=$(mktemp)
bash "$repo/tools/deb.sh" build >"$deb_build_log" 2>&1 &
deb_build_pid=$!

# keep_failures WHAT LOG: copies each failed test's lines from LOG (fstests/check's
# "... [failed, WHY]" line with the diff or output indented under it, ctest's "***Failed"
# lines and its closing list) to fail_log, printed again before the total: CI shows the
# run's last lines, and a failure of the first layer is thousands of lines above them.
fail_log=$(mktemp)
keep_failures() { # what log
	awk -v what="$1" '
		/\[failed, / { print "[" what "] " $0; inblock = 1; n = 0; next }
		inblock && /^    / { if (n++ < 40) print; next }
		{ inblock = 0 }
		/^ *[0-9]+\/[0-9]+ +Test +#[0-9]+: / && !/ Passed +[0-9.]+ sec$/ &&
			!/\*\*\*Skipped +[0-9.]+ sec$/ && !/Not Run \(Disabled\)/ { print "[" what "] " $0 }
		/^sanitizers \(fstests\): [1-9][0-9]* reports$/ || /^fuzz .*, FAILED / { print "[" what "] " $0 }
		/^FAILED [a-z0-9]+ \(exit [0-9]+\):$/ { print "[" what "] " $0; inblock = 1; n = 0; next }
	' "$2" >>"$fail_log"
}
phase "unit tests (ctest)"
ctest_log=$(mktemp)
(cd "$repo/build" && ctest -j 2 --output-on-failure) | tee "$ctest_log"
# Each test once, from its own result line "N/M Test #K: NAME ....   STATUS  T sec": Passed,
# ***Skipped (SKIP_RETURN_CODE, SKIP_REGULAR_EXPRESSION), ***Not Run (Disabled) are what they
# say; everything else (***Failed, ***Not Run for a missing executable, ***Timeout,
# ***Exception...) failed. The names in ctest's closing lists ("(Not Run)", "(Skipped)") are
# not counted again. ctest's "out of N" counts passed + skipped + failed, not disabled: the
# two must agree.
read -r u_pass u_fail u_skip u_disabled < <(awk '
	/^ *[0-9]+\/[0-9]+ +Test +#[0-9]+: / {
		if ($0 ~ / Passed +[0-9.]+ sec$/) { p++ }
		else if ($0 ~ /\*\*\*Skipped +[0-9.]+ sec$/) { s++ }
		else if ($0 ~ /\*\*\*Not Run \(Disabled\) +[0-9.]+ sec$/) { d++ }
		else { f++ }
	}
	END { print p + 0, f + 0, s + 0, d + 0 }' "$ctest_log")
u_total=$(sed -n 's/.*tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\2/p' "$ctest_log")
u_total_fail=$(sed -n 's/.*tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\1/p' "$ctest_log")
keep_failures unit "$ctest_log"
rm -f "$ctest_log"
if [ -z "$u_total" ]; then
	echo "test-all: ctest printed no summary" >&2
	u_fail=$((u_fail + 1))
elif [ $((u_pass + u_fail + u_skip)) -ne "$u_total" ] || [ "$u_fail" -ne "$u_total_fail" ]; then
	echo "test-all: ctest's summary ($u_total_fail failed out of $u_total) disagrees with its" \
		"result lines ($u_pass passed, $u_fail failed, $u_skip skipped)" >&2
	u_fail=$((u_fail + 1))
fi
u_skip=$((u_skip + u_disabled))

# check's closing line "N passed, N failed, N skipped" in LOG.
check_summary() { # log
	grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$1" | tail -n 1
}
# The counts of a layer's line "LAYER: N passed, N failed, N skipped" in LOG (check's per
# layer, fuzz.sh's, deb.sh's).
layer_counts() { # log layer
	sed -n "s/^$2: \([0-9]* passed, [0-9]* failed, [0-9]* skipped\)\$/\1/p" "$1" | tail -n 1
}

# The libFuzzer targets (fuzz/): each over its seeds, then WZ_FUZZ_SECONDS (default 10) of
# fuzzing; a crash fails the layer and tools/fuzz.sh prints the kept input's path.
phase "fuzz (tools/fuzz.sh)"
fuzz_build_rc=0
wait "$fuzz_build_pid" || fuzz_build_rc=$?
echo "(the background fuzz build ended with status $fuzz_build_rc)"
cat "$fuzz_build_log"
rm -f "$fuzz_build_log"
fuzz_log=$(mktemp)
bash "$repo/tools/fuzz.sh" | tee "$fuzz_log"
z_line=$(layer_counts "$fuzz_log" fuzz)
keep_failures fuzz "$fuzz_log"
rm -f "$fuzz_log"
if [ -z "$z_line" ]; then
	echo "test-all: tools/fuzz.sh printed no summary" >&2
fi
read -r z_pass _ z_fail _ z_skip _ <<<"${z_line:-0 passed, 1 failed, 0 skipped}"

# add_counts WHAT LINE: adds check's closing LINE to the fstests' counts (f_pass, f_fail,
# f_skip); no LINE is a failure: WHAT printed no summary.
f_pass=0 f_fail=0 f_skip=0
add_counts() { # what line
	local line=$2 p f s
	if [ -z "$line" ]; then
		echo "test-all: $1 printed no summary" >&2
		line="0 passed, 1 failed, 0 skipped"
	fi
	read -r p _ f _ s _ <<<"$line"
	f_pass=$((f_pass + p)) f_fail=$((f_fail + f)) f_skip=$((f_skip + s))
}

phase "host fstests (fstests/check --no-vm -x vm; group vm on the VM lane)"
fst_log=$(mktemp)
"$repo/fstests/check" --no-vm -x vm "$@" | tee "$fst_log"
add_counts "fstests/check --no-vm" "$(check_summary "$fst_log")"
keep_failures "host fstests" "$fst_log"
h_line=$(layer_counts "$fst_log" "host fstests")
rm -f "$fst_log"

# The sanitizer builds (tools/sanitize.sh): the unit tests under ASan+UBSan, the writer's
# and the I/O engines' threaded tests under TSan; one count line each.
phase "sanitizers (tools/sanitize.sh all)"
san_build_rc=0
wait "$san_build_pid" || san_build_rc=$?
echo "(the background sanitizer builds ended with status $san_build_rc)"
cat "$san_build_log"
rm -f "$san_build_log"
san_log=$(mktemp)
bash "$repo/tools/sanitize.sh" all | tee "$san_log"
s_pass=0 s_fail=0 s_skip=0 s_lines=()
for s in asan tsan; do
	s_line=$(sed -n "s/^sanitizers ($s): \([0-9]* passed, [0-9]* failed, [0-9]* skipped\)\$/\1/p" "$san_log" | tail -n 1)
	if [ -z "$s_line" ]; then
		echo "test-all: tools/sanitize.sh printed no count for $s" >&2
		s_line="0 passed, 1 failed, 0 skipped"
	fi
	s_lines+=("sanitizers ($s): $s_line")
	read -r a _ b _ c _ <<<"$s_line"
	s_pass=$((s_pass + a)) s_fail=$((s_fail + b)) s_skip=$((s_skip + c))
done
keep_failures sanitizers "$san_log"
rm -f "$san_log"

# The host tests whose work goes through an I/O engine, again on the second engine: what
# runs where io_uring is refused (containers' default seccomp profiles,
# kernel.io_uring_disabled). With the ASan+UBSan CLI and fstests tools of build-asan
# (tools/sanitize.sh fstests): every sanitizer report of the run is a failure of its own,
# besides the test it came from. Selected by group (psync_groups): zeroing, writing, the
# database lifecycle and plugins, pacing, signals mid-run, the engine choice, and bad
# arguments (for the sanitizer). Not repeated, having run in the first pass: tests that boot
# the VM rig themselves (vm; the guest's own psync runs are nvme/007, 030, 058, 060), read
# through no engine (noengine), measure resource limits (limits), check the replay tool
# (replay) or the runner (runner), race the open of a path, which is decided before any
# engine is chosen (race: host/011's 150 rounds under ASan took 153 s of a 20-minute pass), or
# compare the command line with util-linux's (compat: host/052, 84 s of the pass).
psync_groups=(-g alloc -g writer -g db -g fallocate -g inplace -g rate -g signal -g engine -g psync
	-g badinput -x vm -x noengine -x limits -x replay -x runner -x race -x compat)
phase "fstests on the host with the psync engine (WZERO_ENGINE=psync), ASan+UBSan CLI"
fst_log=$(mktemp)
bash "$repo/tools/sanitize.sh" fstests "${psync_groups[@]}" "$@" | tee "$fst_log"
add_counts "fstests/check --engine psync" "$(check_summary "$fst_log")"
ph_line=$(layer_counts "$fst_log" "host fstests (psync)")
keep_failures "host fstests (psync)" "$fst_log"
s_reports=$(sed -n 's/^sanitizers (fstests): \([0-9]*\) reports$/\1/p' "$fst_log" | tail -n 1)
rm -f "$fst_log"
if [ -z "$s_reports" ]; then
	echo "test-all: tools/sanitize.sh fstests printed no report count" >&2
	s_reports=1
fi
s_fail=$((s_fail + s_reports))

# The Debian packages: built in the background since the build (tools/deb.sh build: a failed
# build or a lintian error or warning is one failure), then installed with apt-get, tested
# against the installed files only and purged (tools/deb.sh test, a count per check).
phase "Debian packages (tools/deb.sh build, then test as installed)"
deb_build_rc=0
wait "$deb_build_pid" || deb_build_rc=$?
echo "(the background package build ended with status $deb_build_rc)"
cat "$deb_build_log"
rm -f "$deb_build_log"
if [ "$deb_build_rc" -eq 0 ]; then
	deb_log=$(mktemp)
	bash "$repo/tools/deb.sh" test | tee "$deb_log"
	d_line=$(layer_counts "$deb_log" packages)
	keep_failures packages "$deb_log"
	rm -f "$deb_log"
	if [ -z "$d_line" ]; then
		echo "test-all: tools/deb.sh test printed no summary" >&2
		d_line="0 passed, 1 failed, 0 skipped"
	fi
	read -r d_pass _ d_fail _ d_skip _ <<<"$d_line"
	d_pass=$((d_pass + 1)) # the build, lintian included
	d_line="$d_pass passed, $d_fail failed, $d_skip skipped"
else
	echo "[packages] the package build failed (tools/deb.sh build above); nothing was installed" >>"$fail_log"
	d_pass=0 d_fail=1 d_skip=0
	d_line="0 passed, 1 failed, 0 skipped (the build failed)"
fi

phase "VM fstests (fstests/check --vm, running since the build for the VM)"
wait "$vm_pid"
echo "(the VM fstests ran $((SECONDS - vm_start)) s beside the host layers)"
cat "$vm_log"
add_counts "fstests/check --vm" "$(check_summary "$vm_log")"
v_line=$(layer_counts "$vm_log" "VM fstests")
keep_failures "VM fstests" "$vm_log"
rm -f "$vm_log"
echo "== host fstests of group vm (fstests/check --no-vm -g vm, after the VM configurations)"
cat "$vmhost_log"
add_counts "fstests/check --no-vm -g vm" "$(check_summary "$vmhost_log")"
hv_line=$(layer_counts "$vmhost_log" "host fstests")
keep_failures "host fstests (group vm)" "$vmhost_log"
rm -rf "$vmhost_log" "$build_done"

pass=$((u_pass + z_pass + f_pass + s_pass + d_pass))
fail=$((u_fail + z_fail + f_fail + s_fail + d_fail))
skip=$((u_skip + z_skip + f_skip + s_skip + d_skip))
echo
echo "unit: $u_pass passed, $u_fail failed, $u_skip skipped"
echo "fuzz: ${z_line:-(no count)}"
echo "host fstests: ${h_line:-(no count)}"
echo "host fstests (group vm): ${hv_line:-(no count)}"
echo "host fstests (psync): ${ph_line:-(no count)}"
printf '%s\n' "${s_lines[@]}"
echo "sanitizer reports in the psync fstests: $s_reports"
echo "packages: $d_line"
echo "VM fstests: ${v_line:-(no count)}"
if [ -s "$fail_log" ]; then
	echo "failures, as their layers printed them:"
	cat "$fail_log"
fi
rm -f "$fail_log"
phase_end
times=time: sep=" "
for i in "${!phase_titles[@]}"; do
	times+="$sep${phase_titles[$i]} ${phase_seconds[$i]} s (CPU ${phase_busy[$i]}% busy)" sep=", "
done
echo "$times; in all $SECONDS s"
echo "total: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
