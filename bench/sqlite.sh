#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark: SQLite single-row insert transactions per second, WAL mode, synchronous=FULL,
# stock unix VFS vs the wzero VFS (build/lib/plugins/sqlite/wzero_sqlite.so), side by side in
# one run: Debian's sqlite3 shell, ext4 on a loop device doing direct I/O to its image
# (bench/common.sh). Each round makes a fresh database per VFS (so each WAL grows from empty,
# as it does for every connection that opens a database after the last one closed it: SQLite
# deletes the WAL on the last close), inserts ROWS rows of 100 random bytes, one transaction
# each, and is timed as a whole; the VFS order alternates per round. Device flushes per
# transaction are the loop device's completed flush requests (/sys/block/loopN/stat field
# 16) over the session. Prints the medians over ROUNDS.
#   bench/sqlite.sh [ROWS] [ROUNDS]     (root; defaults 2000 rows, 5 rounds)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rows=${1:-2000}
rounds=${2:-5}
ext=$repo/build/lib/plugins/sqlite/wzero_sqlite.so
[ -f "$ext" ] || { echo "bench/sqlite.sh: build first ($ext missing)" >&2; exit 1; }
command -v sqlite3 >/dev/null || { echo "bench/sqlite.sh: sqlite3 missing (tools/install-deps.sh)" >&2; exit 1; }
# shellcheck source=common.sh
. "$repo/bench/common.sh"
bench_ext4_on_loop 2G --direct-io=on
dev=$(basename "$loop")

flushes() { awk '{ print $16 }' "/sys/block/$dev/stat"; }

# One session; prints "seconds flushes".
session() { # vfs dir
	local uri=$2/t.db t0 t1 f0 f1
	[ "$1" = wzero ] && uri="file:$2/t.db?vfs=wzero"
	mkdir -p "$2"
	{
		echo ".load $ext"
		echo ".open $uri"
		echo "PRAGMA journal_mode=WAL;"
		echo "PRAGMA synchronous=FULL;"
		echo "CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB);"
		for ((i = 0; i < rows; i++)); do
			echo "INSERT INTO t(v) VALUES (randomblob(100));"
		done
		echo "SELECT count(*) FROM t;"
		echo "PRAGMA integrity_check;"
	} >"$work/session.sql"
	sync
	f0=$(flushes)
	t0=$(date +%s%N)
	sqlite3 -batch -bail <"$work/session.sql" >"$work/session.out"
	t1=$(date +%s%N)
	f1=$(flushes)
	if [ "$(tail -2 "$work/session.out" | tr '\n' ' ')" != "$rows ok " ]; then
		echo "bench/sqlite.sh: $1: wrong result: $(tail -2 "$work/session.out" | tr '\n' ' ')" >&2
		exit 1
	fi
	echo "$(((t1 - t0) / 1000)) $((f1 - f0))"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A tps flush
for ((r = 1; r <= rounds; r++)); do
	order="stock wzero"
	[ $((r % 2)) = 0 ] && order="wzero stock"
	for vfs in $order; do
		read -r us fl < <(session "$vfs" "$work/mnt/$vfs-$r")
		tps[$vfs]+="$(awk -v n="$rows" -v us="$us" 'BEGIN { printf "%.1f", n / (us / 1e6) }') "
		flush[$vfs]+="$(awk -v n="$rows" -v f="$fl" 'BEGIN { printf "%.3f", f / n }') "
		echo "round $r $vfs: $rows transactions in $((us / 1000)) ms, $fl device flushes" >&2
		rm -rf "$work/mnt/$vfs-$r"
	done
done
s_tps=$(tr ' ' '\n' <<<"${tps[stock]}" | grep . | median)
w_tps=$(tr ' ' '\n' <<<"${tps[wzero]}" | grep . | median)
printf '%-7s %14s %18s\n' vfs "tx/s (median)" "flushes/tx (median)"
printf '%-7s %14s %18s\n' stock "$s_tps" "$(tr ' ' '\n' <<<"${flush[stock]}" | grep . | median)"
printf '%-7s %14s %18s\n' wzero "$w_tps" "$(tr ' ' '\n' <<<"${flush[wzero]}" | grep . | median)"
awk -v s="$s_tps" -v w="$w_tps" 'BEGIN { printf "wzero: %.2fx of stock (%d rows, %d rounds)\n", w / s, '"$rows"', '"$rounds"' }'
