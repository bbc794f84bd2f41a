#!/bin/bash
# Every test: installs what is missing, builds with warnings as errors, runs the unit tests
# (ctest), the fstests on the host (ext4, xfs, btrfs, tmpfs on loop devices) and the fstests
# in the VM rig (QEMU NVMe and nvmet, Debian 12 and Debian unstable kernels). Run as root.
# The last line is the total: "total: N passed, N failed, N skipped".
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$repo/tools/install-deps.sh" || exit 1
echo "== build"
bash "$repo/tools/build.sh" || exit 1

echo "== unit tests (ctest)"
ctest_log=$(mktemp)
(cd "$repo/build" && ctest -j 2 --output-on-failure) | tee "$ctest_log"
u_total=$(sed -n 's/.*tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\2/p' "$ctest_log")
u_fail=$(sed -n 's/.*tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\1/p' "$ctest_log")
u_skip=$(grep -c '\*\*\*Skipped\|Not Run' "$ctest_log")
rm -f "$ctest_log"
if [ -z "$u_total" ]; then
	echo "test-all: ctest printed no summary" >&2
	u_total=1 u_fail=1
fi
u_pass=$((u_total - u_fail - u_skip))
echo "unit: $u_pass passed, $u_fail failed, $u_skip skipped"

echo "== fstests"
fst_log=$(mktemp)
"$repo/fstests/check" "$@" | tee "$fst_log"
f_line=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$fst_log" | tail -n 1)
rm -f "$fst_log"
read -r f_pass _ f_fail _ f_skip _ <<<"${f_line:-0 passed, 1 failed, 0 skipped}"

pass=$((u_pass + f_pass))
fail=$((u_fail + f_fail))
skip=$((u_skip + f_skip))
echo
echo "total: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
