#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark: SQLite single-row insert transactions per second, WAL mode, synchronous=FULL,
# stock unix VFS vs the wzero VFS (wzero_sqlite.so), side by side in one run, Debian's sqlite3
# shell. Each round makes a fresh database per VFS (so each WAL grows from empty, as it does
# for every connection that opens a database after the last one closed it: SQLite deletes
# the WAL on the last close), inserts ROWS rows of 100 random bytes, one transaction each,
# and is timed as a whole (the shell's start included); the VFS order alternates per round.
# Every session ends with count(*) and PRAGMA integrity_check, which must say ROWS and ok.
# Prints the medians over ROUNDS of transactions per second, and per transaction the device
# commands over all rounds of that VFS (summed, divided by the transactions).
#   host (default): ext4 on a loop device doing direct I/O to its image (bench/common.sh);
#          flushes and bytes written are the loop device's (/sys/block/loopN/stat fields 16
#          and 7); no FUA count there.
#   --vm:  the VM rig's flush-cost model, 1 ms flushes and 300 us FUA writes, ONE boot
#          (fstests/vm/run --kernel new --setup A --flush-latency 1ms --fua-latency 300us
#          --with plugins --with sqlite3): ext4 and xfs on the namespace with its volatile
#          write cache on, then ext4 with it disabled (WCE=0 by Set Features FID 06h, as
#          bench/seed-wce0.sh; the record then says no flush is needed and the VFS syncs the
#          WAL with sync_file_range). Counts from the guest NVMe driver's trace
#          (fstests/common/devcount): flushes, FUA writes, bytes written, bytes zeroed.
# Last lines: one per experiment, "sqlite: PLACE ROWS rows: wzero X.XXx of stock, ...".
#   bench/sqlite.sh [ROWS] [ROUNDS]         (root; defaults 2000 rows, 5 rounds)
#   bench/sqlite.sh --vm [ROWS] [ROUNDS]    (the same defaults; env VM_CONFS, default
#                                            "ext4 xfs ext4-wce0")
#   bench/sqlite.sh [--vm] 100 1            a smoke run
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
vm=
if [ "${1:-}" = --vm ]; then vm=1; shift; fi
rows=${1:-2000}
rounds=${2:-5}
VM_CONFS=${VM_CONFS:-"ext4 xfs ext4-wce0"}
ext=$repo/build/lib/plugins/sqlite/wzero_sqlite.so
[ -f "$ext" ] || { echo "bench/sqlite.sh: build first ($ext missing)" >&2; exit 1; }
command -v sqlite3 >/dev/null || { echo "bench/sqlite.sh: sqlite3 missing (tools/install-deps.sh)" >&2; exit 1; }

# --- shared by the host and the guest (passed to the guest with declare -f) ---

# One session in a fresh directory DIR; prints "run PLACE VFS MICROSECONDS COUNTS..." with
# COUNTS from count_begin/count_end (defined per place). Needs SQ_ROWS, SQ_EXT.
sq_session() { # PLACE VFS DIR
	local uri=$3/t.db t0 t1 c i res
	[ "$2" = wzero ] && uri="file:$3/t.db?vfs=wzero"
	mkdir -p "$3"
	{
		echo ".load $SQ_EXT"
		echo ".open $uri"
		echo "PRAGMA journal_mode=WAL;"
		echo "PRAGMA synchronous=FULL;"
		echo "CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB);"
		for ((i = 0; i < SQ_ROWS; i++)); do
			echo "INSERT INTO t(v) VALUES (randomblob(100));"
		done
		echo "SELECT count(*) FROM t;"
		echo "PRAGMA integrity_check;"
	} >"$3.sql"
	sync
	count_begin
	t0=$EPOCHREALTIME
	sqlite3 -batch -bail <"$3.sql" >"$3.out"
	t1=$EPOCHREALTIME
	c=$(count_end)
	res=$(tail -n 2 "$3.out" | tr '\n' ' ')
	if [ "$res" != "$SQ_ROWS ok " ]; then
		echo "bench/sqlite.sh: $1 $2: wrong result: $res" >&2
		return 1
	fi
	echo "run $1 $2 $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", (b - a) * 1e6 }') $c"
	rm -rf "$3" "$3.sql" "$3.out"
}

sq_rounds() { # PLACE DIR ROUNDS
	local r v order
	for ((r = 1; r <= $3; r++)); do
		order="stock wzero"
		[ $((r % 2)) = 0 ] && order="wzero stock"
		for v in $order; do sq_session "$1" "$v" "$2/$v-$r"; done
	done
}

# --- the guest (the VM rig's flush-cost model) ---
# shellcheck disable=SC2016 # expanded in the guest
sq_guest='
set -euo pipefail
. /wz/fstests/common/devcount
devcount_init
. /wz/fstests/common/benchvm
mkdir -p /mnt/sq
for conf in $VM_CONFS; do
	benchvm_conf "$conf" /mnt/sq
	sq_rounds "vm-$conf" /mnt/sq "$ROUNDS"
	umount /mnt/sq
done
'

# shellcheck source=common.sh
. "$repo/bench/common.sh"
out=$(mktemp)
trap 'rm -f "$out"' EXIT

if [ -n "$vm" ]; then
	boot=$(mktemp)
	st=0
	echo "vm: one boot, $rounds rounds of $rows transactions per config ($VM_CONFS), $(date -u +%H:%M:%S)" >&2
	"$repo/fstests/vm/run" --kernel new --setup A --flush-latency 1ms --fua-latency 300us \
		--append idle=poll --timeout 3000 --with plugins --with sqlite3 -- \
		env SQ_ROWS="$rows" ROUNDS="$rounds" VM_CONFS="$VM_CONFS" SQ_EXT=/wz/lib/wzero_sqlite.so \
		bash -c "$(declare -f sq_session sq_rounds)$sq_guest" >"$boot" 2>&1 || st=$?
	grep -E '^(run|seen) ' "$boot" >>"$out" || true # wz: ignored-error (checked below)
	grep -E '^(run|seen) ' "$boot" | sed 's/^/  /' >&2 || true # wz: ignored-error (progress only)
	if [ "$st" != 0 ]; then
		echo "bench/sqlite.sh: the VM run failed (status $st); its last lines:" >&2
		grep -v '^vm/run: info: ' "$boot" | tail -n 25 | sed 's/^/  /' >&2
		rm -f "$boot"
		exit 1
	fi
	rm -f "$boot"
else
	bench_ext4_on_loop 2G --direct-io=on
	trap 'bench_cleanup; rm -f "$out"' EXIT
	dev=$(basename "$loop")
	echo "write back" >"/sys/block/$dev/queue/write_cache"
	bench_loopstat_counters "$dev"
	SQ_ROWS=$rows SQ_EXT=$ext
	sq_rounds host-ext4 "$work/mnt" "$rounds" | tee -a "$out" | sed 's/^/  /' >&2
fi

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# tx/s median; per transaction: flushes, FUA, KiB written, KiB zeroed ("-": not counted here)
tps_all() { awk -v p="$1" -v v="$2" -v n="$rows" '$1 == "run" && $2 == p && $3 == v { printf "%.1f\n", n / ($4 / 1e6) }' "$out"; }
tps() { tps_all "$@" | median; }
tps_range() { tps_all "$@" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.0f..%.0f", lo, hi }'; }
per_tx() {
	awk -v p="$1" -v v="$2" -v rows="$rows" '$1 == "run" && $2 == p && $3 == v {
		n += rows; fu += $6; fl += $7; wb += $9; zb += $10; if ($6 == "-") nofua = 1; if ($10 == "-") nozero = 1 }
		END { if (n == 0) n = 1
			printf "%.3f %s %.1f %s", fl / n, nofua ? "-" : sprintf("%.3f", fu / n), wb / n / 1024, nozero ? "-" : sprintf("%.1f", zb / n / 1024) }' "$out"
}
echo
echo "SQLite $(sqlite3 -version | cut -d' ' -f1), WAL, synchronous=FULL, single-row insert transactions of 100 random"
echo "bytes, $rows per round, fresh database per round, median of $rounds rounds; per tx: device"
echo "commands summed over the rounds / transactions (host: loop device, no FUA count, zeroes"
echo "counted as written; vm: guest NVMe driver trace)"
grep '^seen ' "$out" | sed 's/^seen /the guest saw: /' || true # wz: ignored-error (host: none)
printf '%-14s %-6s %10s %11s %6s %8s %8s %9s %9s\n' place vfs "tx/s" "min..max" "x" "fl/tx" "FUA/tx" "KiB/tx" "zKiB/tx"
summary=()
while read -r p; do
	s=$(tps "$p" stock)
	w=$(tps "$p" wzero)
	x=$(awk -v s="$s" -v w="$w" 'BEGIN { printf "%.2f", w / s }')
	read -r sfl sfu swb szb <<<"$(per_tx "$p" stock)"
	read -r wfl wfu wwb wzb <<<"$(per_tx "$p" wzero)"
	printf '%-14s %-6s %10s %11s %6s %8s %8s %9s %9s\n' "$p" stock "$s" "$(tps_range "$p" stock)" "" "$sfl" "$sfu" "$swb" "$szb"
	printf '%-14s %-6s %10s %11s %5sx %8s %8s %9s %9s\n' "$p" wzero "$w" "$(tps_range "$p" wzero)" "$x" "$wfl" "$wfu" "$wwb" "$wzb"
	summary+=("sqlite: $p $rows rows: wzero ${x}x of stock ($w vs $s tx/s), device flushes/tx $wfl vs $sfl")
done < <(awk '$1 == "run" && !s[$2]++ { print $2 }' "$out")
echo
printf '%s\n' "${summary[@]}"
