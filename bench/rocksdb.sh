#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark: Debian's own, unmodified db_bench (rocksdb-tools 7.8.3) on RocksDB's
# default POSIX file system ("stock") against the same db_bench on the wzero FileSystem
#   LD_PRELOAD=build/lib/plugins/rocksdb/libwzero_rocksdb.so db_bench --fs_uri=wzero ...
# side by side in one run: ROUNDS rounds, the order of stock and wzero reversed every other
# round, a fresh database per run, medians of db_bench's own ops/s.
# Workloads (N = OPS synced writes per run, 16-byte keys, 100-byte values):
#   fillsync     --benchmarks=fillsync --num=1000N --writes=N: N writes with sync=true from
#                one thread to keys out of N. (7.8.3's fillsync divides --num by 1000 for the
#                key range only; the number of writes is --writes, which defaults to --num:
#                plain --num=300000 gives "300000 operations" and 2 loop-device flushes per
#                write, and any --num below 1000 leaves no key range and one operation.)
#   fillrandom8  --benchmarks=fillrandom --sync=1 --threads=8 --num=N/8: 8 threads of N/8
#                synced writes each (RocksDB's write group shares one WAL sync among them)
# each in two variants, both through --options_file (this db_bench has no flag for recycling):
#   plain        write_buffer_size=64 KiB, so that N writes switch WALs (and flush a memtable
#                to an SST) every few hundred writes, as a busy database does
#   recycle      the same plus recycle_log_file_num=4 and wal_recovery_mode=
#                kSkipAnyCorruptedRecords: RocksDB 7.8.3 sets recycle_log_file_num to 0 under
#                every other recovery mode (SanitizeOptions, rocksdb PR 7252), so without it
#                the "recycle" runs would not recycle at all.
# Places:
#   host   ext4 and xfs on a loop device over a sparse image (losetup --direct-io=on, so the
#          loop device's flushes are fsyncs of the image on the host's disk; bench/common.sh).
#          Per op: the loop device's completed flushes and written bytes (/sys/block/loopN/stat
#          fields 16 and 7; written bytes include write-zeroes requests). No FUA count there.
#   vm     the VM rig's flush-cost model with 1 ms flushes and 300 us FUA writes
#          (fstests/vm/run --kernel new --setup A --flush-latency 1ms --fua-latency 300us
#          --with plugins --with db_bench), ONE boot: ext4 and xfs on the namespace with its
#          volatile write cache on (every durable sync costs a 1 ms NVMe Flush), then ext4
#          with the write cache disabled (WCE=0 by Set Features FID 06h, as bench/seed-wce0.sh:
#          every write becomes FUA at the model, and the capability record says no flush is
#          needed, so the plugin syncs the WAL with sync_file_range instead of fdatasync).
#          Per op, from the guest NVMe driver's trace (fstests/common/devcount): flushes, FUA
#          writes, bytes of data written (Write commands) and bytes zeroed (Write Zeroes).
# Counts are over the whole db_bench process (open, runs, close) divided by its operations;
# ops/s is db_bench's own figure for the benchmark phase.
# Last lines: one per experiment, "rocksdb: PLACE BENCH VARIANT: wzero X.XXx of stock, ...".
#   bench/rocksdb.sh [--quick] [host|vm|all]   (root; default all)
#   bench/rocksdb.sh --table FILE               the tables again from a run's raw lines
#   env RDB_RAW=FILE keeps the raw lines ("run ...", "base ...", "seen ...") in FILE
#   env OPS_HOST (4000), ROUNDS_HOST (9), OPS_VM (1500), ROUNDS_VM (3), VM_CONFS ("ext4 xfs
#   ext4-wce0"); --quick: 400 and 160 ops, one round (a smoke run, not a measurement)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
plugin=$repo/build/lib/plugins/rocksdb/libwzero_rocksdb.so
quick=
from=
if [ "${1:-}" = --quick ]; then quick=1; shift; fi
if [ "${1:-}" = --table ]; then from=${2:?--table FILE}; set -- none; fi
where=${1:-all}
case $where in host | vm | all | none) ;; *) echo "usage: bench/rocksdb.sh [--quick] [host|vm|all] | --table FILE" >&2; exit 2 ;; esac
[ -f "$plugin" ] || { echo "bench/rocksdb.sh: build first ($plugin missing)" >&2; exit 1; }
command -v db_bench >/dev/null || { echo "bench/rocksdb.sh: db_bench missing (rocksdb-tools)" >&2; exit 1; }
OPS_HOST=${OPS_HOST:-4000}
ROUNDS_HOST=${ROUNDS_HOST:-9}
OPS_VM=${OPS_VM:-1500}
ROUNDS_VM=${ROUNDS_VM:-3}
VM_CONFS=${VM_CONFS:-"ext4 xfs ext4-wce0"}
if [ -n "$quick" ]; then OPS_HOST=400 ROUNDS_HOST=1 OPS_VM=160 ROUNDS_VM=1; fi
BENCHES="fillsync fillrandom8"
VARIANTS="plain recycle"

# --- shared by the host and the guest (passed to the guest with declare -f) ---

# DIR: the options files plain.ini and recycle.ini
rdb_ini() {
	local v
	for v in plain recycle; do
		{
			printf '[Version]\n  rocksdb_version=7.8.3\n  options_file_version=1.1\n'
			printf '[DBOptions]\n  create_if_missing=true\n'
			if [ "$v" = recycle ]; then
				printf '  recycle_log_file_num=4\n  wal_recovery_mode=kSkipAnyCorruptedRecords\n'
			fi
			printf '[CFOptions "default"]\n  write_buffer_size=65536\n'
			printf '[TableOptions/BlockBasedTable "default"]\n'
		} >"$1/$v.ini"
	done
}

# One db_bench run on a fresh database in MNT; prints
#   run PLACE BENCH VARIANT IMPL OPS_PER_S OPS COUNTS...
# with COUNTS from count_begin/count_end (defined per place). Needs RDB_OPS, RDB_INI, RDB_PLUGIN.
rdb_run() { # PLACE BENCH VARIANT IMPL MNT
	local db=$5/db out line c
	local -a env_args=() args=(--db="$db" --options_file="$RDB_INI/$3.ini" --seed=1)
	case $2 in
	fillsync) args+=(--benchmarks=fillsync --num=$((RDB_OPS * 1000)) --writes="$RDB_OPS") ;;
	fillrandom8) args+=(--benchmarks=fillrandom --sync=1 --threads=8 --num=$((RDB_OPS / 8))) ;;
	esac
	if [ "$4" = wzero ]; then
		env_args=(LD_PRELOAD="$RDB_PLUGIN")
		args+=(--fs_uri=wzero)
	fi
	rm -rf "$db"
	sync
	count_begin
	if ! out=$(env "${env_args[@]}" db_bench "${args[@]}" 2>&1); then
		echo "rocksdb.sh: $1 $2 $3 $4: db_bench ${args[*]} failed:" >&2
		printf '%s\n' "$out" | tail -n 20 >&2
		return 1
	fi
	c=$(count_end)
	line=$(printf '%s\n' "$out" | grep -E '^fill(sync|random) +:' | tail -n 1)
	[ -n "$line" ] || { echo "rocksdb.sh: $1 $2 $3 $4: no report from db_bench" >&2; printf '%s\n' "$out" >&2; return 1; }
	# the last field: WALs RocksDB took from its recycle list (its LOG)
	echo "run $1 $2 $3 $4 $(awk '{ for (i = 2; i <= NF; i++) { if ($i == "ops/sec") o = $(i - 1); if ($i == "operations;") n = $(i - 1) } } END { print o, n }' <<<"$line") $c $(grep -c 'reusing log [0-9]* from recycle list' "$db/LOG" || true)"
	rm -rf "$db"
}

# What a db_bench process costs whatever it writes: one warm-up run (page cache, the dynamic
# loader), then fillsync with one write per file system, as "base PLACE IMPL ..." lines.
rdb_base() { # PLACE MNT
	local i
	RDB_OPS=1 rdb_run "$1" fillsync plain wzero "$2" >/dev/null
	for i in stock wzero; do
		RDB_OPS=1 rdb_run "$1" fillsync plain "$i" "$2" | sed 's/^run \([^ ]*\) [^ ]* [^ ]* /base \1 /'
	done
}

# All rounds at one place (the filesystem mounted on MNT): every bench and variant, stock and
# wzero next to each other, their order reversed every other round.
rdb_rounds() { # PLACE MNT ROUNDS
	local r b v i order
	for ((r = 1; r <= $3; r++)); do
		order="stock wzero"
		[ $((r % 2)) = 0 ] && order="wzero stock"
		for b in $BENCHES; do
			for v in $VARIANTS; do
				for i in $order; do rdb_run "$1" "$b" "$v" "$i" "$2"; done
			done
		done
	done
}

# --- the guest (the VM rig's flush-cost model) ---
# shellcheck disable=SC2016 # expanded in the guest
rdb_guest='
set -euo pipefail
. /wz/fstests/common/devcount
devcount_init
. /wz/fstests/common/benchvm
RDB_INI=/tmp/rdb-ini
mkdir -p "$RDB_INI" /mnt/rdb
rdb_ini "$RDB_INI"
for conf in $VM_CONFS; do
	benchvm_conf "$conf" /mnt/rdb
	rdb_base "vm-$conf" /mnt/rdb
	rdb_rounds "vm-$conf" /mnt/rdb "$ROUNDS"
	umount /mnt/rdb
done
'

# shellcheck source=common.sh
. "$repo/bench/common.sh"
out=$(mktemp)
cleanup_out() { rm -f "$out"; }

run_host() {
	bench_loop 2G --direct-io=on
	trap 'bench_cleanup; cleanup_out' EXIT
	local dev fs
	dev=$(basename "$loop")
	# The loop device keeps the write_cache mode its last user gave it.
	echo "write back" >"/sys/block/$dev/queue/write_cache"
	bench_loopstat_counters "$dev"
	RDB_INI=$work RDB_OPS=$OPS_HOST RDB_PLUGIN=$plugin
	rdb_ini "$RDB_INI"
	for fs in ext4 xfs; do
		bench_mkfs_mount "$fs"
		echo "host-$fs: $ROUNDS_HOST rounds of $OPS_HOST ops, $(date -u +%H:%M:%S)" >&2
		rdb_base "host-$fs" "$work/mnt" | tee -a "$out" | sed 's/^/  /' >&2
		rdb_rounds "host-$fs" "$work/mnt" "$ROUNDS_HOST" | tee -a "$out" | sed 's/^/  /' >&2
	done
	bench_cleanup
	trap cleanup_out EXIT
}

run_vm() {
	local st=0 boot
	boot=$(mktemp)
	echo "vm: one boot, $ROUNDS_VM rounds of $OPS_VM ops per config ($VM_CONFS), $(date -u +%H:%M:%S)" >&2
	"$repo/fstests/vm/run" --kernel new --setup A --flush-latency 1ms --fua-latency 300us \
		--append idle=poll --timeout 3000 --with plugins --with db_bench -- \
		env RDB_OPS="$OPS_VM" ROUNDS="$ROUNDS_VM" VM_CONFS="$VM_CONFS" BENCHES="$BENCHES" \
		VARIANTS="$VARIANTS" RDB_PLUGIN=/wz/lib/libwzero_rocksdb.so \
		bash -c "$(declare -f rdb_ini rdb_run rdb_base rdb_rounds)$rdb_guest" >"$boot" 2>&1 || st=$?
	grep -E '^(run|seen|base) ' "$boot" >>"$out" || true # wz: ignored-error (checked below)
	grep -E '^(run|seen|base) ' "$boot" | sed 's/^/  /' >&2 || true # wz: ignored-error (progress only)
	if [ "$st" != 0 ]; then
		echo "bench/rocksdb.sh: the VM run failed (status $st); its last lines:" >&2
		grep -v '^vm/run: info: ' "$boot" | tail -n 25 | sed 's/^/  /' >&2
		rm -f "$boot"
		return 1
	fi
	rm -f "$boot"
}

trap cleanup_out EXIT
case $where in
host) run_host ;;
vm) run_vm ;;
all) run_host; run_vm ;;
none) cp "$from" "$out" ;;
esac
if [ -n "${RDB_RAW:-}" ] && [ -z "$from" ]; then cp "$out" "$RDB_RAW"; fi

# --- the tables: medians of ops/s; counts summed over the rounds, per operation ---
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ops_median() { awk -v p="$1" -v b="$2" -v v="$3" -v i="$4" '$1 == "run" && $2 == p && $3 == b && $4 == v && $5 == i { print $6 }' "$out" | median; }
reuse_median() { awk -v p="$1" -v b="$2" -v v="$3" -v i="$4" '$1 == "run" && $2 == p && $3 == b && $4 == v && $5 == i { print $14 }' "$out" | median; }
# flushes/op FUA/op KiB-written/op KiB-zeroed/op net-KiB-written/op ("-" where the place
# cannot count it; net: less the bytes of the place's one-write process, per run)
per_op() {
	awk -v p="$1" -v b="$2" -v v="$3" -v i="$4" '$1 == "base" && $2 == p && $3 == i { base = $10 }
		$1 == "run" && $2 == p && $3 == b && $4 == v && $5 == i {
		r++; n += $7; fl += $10; fu += $9; wb += $12; zb += $13; if ($9 == "-") nofua = 1; if ($13 == "-") nozero = 1 }
		END { if (n == 0) n = 1
			printf "%.2f %s %.1f %s %.1f", fl / n, nofua ? "-" : sprintf("%.2f", fu / n), wb / n / 1024,
				nozero ? "-" : sprintf("%.1f", zb / n / 1024), (wb - r * base) / n / 1024 }' "$out"
}
echo
echo "db_bench (Debian rocksdb-tools 7.8.3), stock POSIX file system vs --fs_uri=wzero; ops/s: median"
echo "of the rounds (db_bench's figure); per op: device commands over the whole process / ops"
echo "(host: loop device, no FUA count, zeroes counted as written; vm: guest NVMe driver trace)"
echo "recycle = recycle_log_file_num=4 + wal_recovery_mode=kSkipAnyCorruptedRecords (7.8.3 drops"
echo "recycling under any other recovery mode); both variants: write_buffer_size=64 KiB"
grep '^seen ' "$out" | sed 's/^seen /the guest saw: /' || true # wz: ignored-error (host only: none)
echo "what one db_bench process costs whatever it writes (fillsync --writes=1, plain):"
awk '$1 == "base" { printf "  %-15s %-6s %5d flushes, %6.0f KiB written, %6.0f KiB zeroed\n", $2, $3, $8, $10 / 1024, ($11 == "-") ? 0 : $11 / 1024 }' "$out"
echo "reuse = WALs taken from the recycle list per run (RocksDB's LOG), median, stock/wzero"
echo "KiB/op: data written at the device per op; net: the same less the one-write process's"
printf '%-15s %-11s %-7s %8s %8s %6s %8s %8s %7s %7s %8s %8s %7s %7s %7s %7s %5s\n' place bench variant \
	"stock/s" "wzero/s" "x" "st fl/op" "wz fl/op" "st FUA" "wz FUA" "st KiB" "wz KiB" "st net" "wz net" "st zKiB" "wz zKiB" reuse
summary=()
while read -r p; do
	for b in $BENCHES; do
		for v in $VARIANTS; do
			s=$(ops_median "$p" "$b" "$v" stock)
			w=$(ops_median "$p" "$b" "$v" wzero)
			if [ -z "$s" ] || [ -z "$w" ]; then continue; fi
			read -r sfl sfu swb szb snet <<<"$(per_op "$p" "$b" "$v" stock)"
			read -r wfl wfu wwb wzb wnet <<<"$(per_op "$p" "$b" "$v" wzero)"
			x=$(awk -v s="$s" -v w="$w" 'BEGIN { printf "%.2f", w / s }')
			reuse="$(reuse_median "$p" "$b" "$v" stock)/$(reuse_median "$p" "$b" "$v" wzero)"
			printf '%-15s %-11s %-7s %8.0f %8.0f %5sx %8s %8s %7s %7s %8s %8s %7s %7s %7s %7s %5s\n' "$p" "$b" "$v" "$s" "$w" "$x" \
				"$sfl" "$wfl" "$sfu" "$wfu" "$swb" "$wwb" "$snet" "$wnet" "$szb" "$wzb" "$reuse"
			summary+=("rocksdb: $p $b $v: wzero ${x}x of stock ($(printf '%.0f' "$w") vs $(printf '%.0f' "$s") ops/s), device flushes/op $wfl vs $sfl")
		done
	done
done < <(awk '$1 == "run" && !s[$2]++ { print $2 }' "$out")
echo
printf '%s\n' "${summary[@]}"
