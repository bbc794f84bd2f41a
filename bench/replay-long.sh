#!/bin/bash
# SPDX-License-Identifier: MIT
# The long run of the write-log replay tests: nvme/050 (the durable writer),
# nvme/051 (alloc), nvme/052 (create_zeroed) and nvme/053 (RocksDB, SQLite) through
# fstests/check, with more work per scenario and every cut point the checker finds instead of
# CI's sample:
#   WZ_REPLAY_WRITES   acknowledged writes per writer scenario   (CI 200)
#   WZ_REPLAY_CUTS     random cut points per scenario, besides the flushes and FUA writes (CI 20)
#   WZ_REPLAY_FILES    files per create_zeroed run                (CI 12)
#   WZ_REPLAY_FS_CUTS  most cut points per filesystem run, 0 all  (CI 40)
#   WZ_REPLAY_KEYS     keys/rows per database writer              (CI 40)
#   WZ_REPLAY_DB_CUTS  most cut points per database writer, 0 all (CI 20)
# (each can be set in the environment; the defaults below are the long run's). Prints, per
# scenario, its window in the log, the cut points replayed by kind, the images checked and
# the violations (acknowledged writes lost, ranges not old-or-zero, partial files, damaged
# databases).
#   bench/replay-long.sh            (root; about 20 minutes under TCG)
# Exit status 1 when a test failed.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ "$(id -u)" = 0 ] || { echo "bench/replay-long.sh: run as root" >&2; exit 1; }
[ -x "$repo/build/tools/wzero/wz_replay" ] || { echo "bench/replay-long.sh: build first" >&2; exit 1; }
export WZ_REPLAY_WRITES=${WZ_REPLAY_WRITES:-500} WZ_REPLAY_CUTS=${WZ_REPLAY_CUTS:-200}
export WZ_REPLAY_FILES=${WZ_REPLAY_FILES:-40} WZ_REPLAY_FS_CUTS=${WZ_REPLAY_FS_CUTS:-0}
export WZ_REPLAY_KEYS=${WZ_REPLAY_KEYS:-120} WZ_REPLAY_DB_CUTS=${WZ_REPLAY_DB_CUTS:-60}
start=$(date +%s)
"$repo/fstests/check" --vm nvme/050 nvme/051 nvme/052 nvme/053
status=$?
echo "== figures (WZ_REPLAY_WRITES=$WZ_REPLAY_WRITES WZ_REPLAY_CUTS=$WZ_REPLAY_CUTS" \
	"WZ_REPLAY_FILES=$WZ_REPLAY_FILES WZ_REPLAY_FS_CUTS=$WZ_REPLAY_FS_CUTS WZ_REPLAY_KEYS=$WZ_REPLAY_KEYS" \
	"WZ_REPLAY_DB_CUTS=$WZ_REPLAY_DB_CUTS; $(($(date +%s) - start)) s)"
for t in 050 051 052 053; do
	f=$repo/fstests/results/new-A/nvme/$t.full
	[ -f "$f" ] || continue
	sed -n "s/^replay \([^:]*\): window entries [0-9-]*, \(cut points .*\), images checked \([0-9]*\),.*/nvme\/$t \1: \2; images \3/p;
		s/^replay \([^:]*\): violations \([0-9]*\)$/nvme\/$t \1: violations \2/p" "$f"
done
exit $status
