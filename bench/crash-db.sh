#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark-style long run of the database crash tests: many more rounds
# of fstests/tests/nvme/041 (RocksDB and SQLite writers SIGKILLed at random points, ext4 and
# xfs, in one VM boot) and of nvme/042 (QEMU killed, a power cut, during the same writers,
# one boot per cut on one disk image); the CI runs 3 rounds per filesystem and 3 cuts. Each
# test runs exactly as check runs it (the same script, WZ_DBC_ROUNDS / WZ_DBC_CUTS raise the
# counts); this prints their verdict lines and what was checked: rounds, kills, cuts, and
# the keys/rows acknowledged before them (all of which must be there after each restart).
#   bench/crash-db.sh [ROUNDS] [CUTS]     (root; defaults 20 SIGKILL rounds per filesystem,
#                                          10 power cuts)
# Exit status 1 when a check failed (a missing acknowledged key/row, a damaged database, a
# filesystem check that found damage, the control not caught).
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=${1:-20}
cuts=${2:-10}
[ "$(id -u)" = 0 ] || { echo "bench/crash-db.sh: run as root" >&2; exit 1; }
for f in build/tools/wzero/wzero build/lib/plugins/rocksdb/wz_rocksdb_ackwriter build/lib/plugins/sqlite/wzero_sqlite.so; do
	[ -e "$repo/$f" ] || { echo "bench/crash-db.sh: build first ($f missing)" >&2; exit 1; }
done
work=$(mktemp -d /var/tmp/wzero-crash-db.XXXXXX)
trap 'rm -rf "$work"' EXIT
status=0

echo "== SIGKILL: nvme/041, $rounds rounds on ext4 and $rounds on xfs, one boot"
start=$(date +%s)
# The guest runs the test as check does (fstests/check's run_test: cwd fstests, seq, seqres).
WZ_DBC_ROUNDS=$rounds "$repo/fstests/vm/run" --kernel new --setup A --with plugins --with sqlite3 \
	--with ldb --with sst_dump --timeout $((120 + rounds * 60)) -- bash -c '
	cd /wz/fstests && mkdir -p /tmp/res &&
	seq=nvme/041 seqres=/tmp/res/041 WZERO=/wz/bin/wzero repo=/wz bash tests/nvme/041 >/tmp/res/out 2>&1
	echo "exit status $?"; cat /tmp/res/out; echo "== details"; cat /tmp/res/041.full' >"$work/041" 2>"$work/041.err"
rc=$?
grep -v '^vm/run: info: ' "$work/041.err" >&2
sed -n '1,/^== details$/p' "$work/041" | grep -v '^== details$'
sed -n '/^== details$/,$p' "$work/041" | grep -E '^(rounds|(ext4|xfs) [a-z-]+: acknowledged)' | sed 's/^/  /'
diff -u "$repo/fstests/tests/nvme/041.out" <(sed -n '/^QA output/,/^== details$/p' "$work/041" | grep -v '^== details$') >/dev/null ||
	{ echo "nvme/041: FAILED (vm/run exit $rc; output above differs from nvme/041.out)"; status=1; }
echo "SIGKILL: $(($(date +%s) - start)) s"

echo "== power cuts: nvme/042, $cuts cuts, $((cuts + 1)) boots"
start=$(date +%s)
mkdir -p "$work/res"
(
	cd "$repo/fstests" || exit 1
	export WZ_DBC_CUTS=$cuts WZ_VM_RUN=$repo/fstests/vm/run WZ_VM_ARGS="--kernel new --setup A" \
		seq=nvme/042 seqres=$work/res/042 WZERO=$repo/build/tools/wzero/wzero repo
	exec bash tests/nvme/042
) >"$work/042" 2>&1
rc=$?
cat "$work/042"
grep -E '^[a-z0-9]+\.[a-z]+: acknowledged|^delays' "$work/res/042.full" | sed 's/^/  /'
if [ $rc != 0 ] || grep -qE 'missing [1-9]|damaged [1-9]|dirty after a cut: [1-9]|caught no|: none$|FAIL' "$work/042"; then
	echo "nvme/042: FAILED (exit $rc)"
	status=1
fi
echo "power cuts: $(($(date +%s) - start)) s"
exit $status
