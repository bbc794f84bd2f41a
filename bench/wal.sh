#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark: three ways a database makes a 16 MiB WAL segment, side by side in one run, and
# the first pass of durable appends into the fresh segment (bench/wal_bench.c does the work):
#   wzero      wz_create_zeroed()
#   pg         PostgreSQL's XLogFileInitInternal: pwritev of 8 KiB zero blocks, fsync,
#              rename, directory fsync
#   fallocate  fallocate(0) + fsync + rename + directory fsync (unwritten extents: RocksDB,
#              TigerBeetle)
# Per round and method: SEGMENTS segments are created (each one timed), then RECORD_BYTES
# sequential writes fill segment 1 with O_DSYNC|O_DIRECT pwrite (a WAL's writes) and
# segment 2 through the wzero writer in auto mode; the segments are removed. Rounds rotate
# the order of the methods, so that every method sees the same machine noise.
# - host: ext4 and xfs on a loop device doing direct I/O to its image (bench/common.sh);
#   device bytes and flushes are the loop device's /sys/block/*/stat counters (sectors
#   written, flush requests) around the creations.
# - vm: the same on QEMU's emulated NVMe namespace (fstests/vm/run setup A, TCG guest,
#   Linux 7.2); device bytes, Write Zeroes commands and flushes are counted from QEMU's
#   pci_nvme_write and pci_nvme_flush_ns trace events, split by 512-byte marker writes
#   outside the filesystem (TESTRIG.md: the exact device-side oracle).
# Segment 3 takes the same appends with no durability at all (O_DIRECT without O_DSYNC): the
# ceiling; the last two columns are the dsync and writer appends as fractions of it.
# Ratios are to pg in the same filesystem and run. VM_ARGS adds vm/run options, e.g.
# VM_ARGS="--flush-latency 1ms --fua-latency 300us" for the flush-cost model.
#   bench/wal.sh [host|vm|all] [SEGMENTS] [ROUNDS] [RECORD_BYTES]
#   (root; defaults: all, 8 segments per method per round, 3 rounds, 8192-byte records)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
where=${1:-all}
k=${2:-8}
rounds=${3:-3}
rec=${4:-8192}
seg_bytes=$((16 << 20))
records=$((seg_bytes / rec))
bench=$repo/build/bench/wzero_wal_bench
if [ ! -x "$bench" ]; then
	echo "build first (tools/build.sh)" >&2
	exit 1
fi
case $where in
host | vm | all) ;;
*) echo "usage: bench/wal.sh [host|vm|all] [SEGMENTS] [ROUNDS] [RECORD_BYTES]" >&2; exit 1 ;;
esac
if [ "$k" -lt 3 ] || [ $((rec % 4096)) -ne 0 ]; then
	echo "SEGMENTS >= 3 (one for each append kind); RECORD_BYTES a multiple of 4096" >&2
	exit 1
fi
methods=(wzero pg fallocate)
# The segment each append kind fills: dsync 1, wzero 2, plain (the ceiling) 3.
seg_of() { case $1 in dsync) echo 1 ;; wzero) echo 2 ;; plain) echo 3 ;; esac; }

# Results, one line each (FS is ext4 or xfs, prefixed vm- in the VM):
#   FS create METHOD NANOSECONDS
#   FS append METHOD KIND IOPS P50_US MODE
#   FS bytes METHOD SEGMENTS DATA_BYTES WRITE_ZEROES_CMDS FLUSHES   (over SEGMENTS creations)
#   FS appbytes METHOD KIND RECORDS DATA_BYTES WRITE_ZEROES_CMDS FLUSHES
results=$(mktemp /tmp/wzero-wal.XXXXXX)
vmwork=
cleanup_all() {
	if [ -n "${WZ_BENCH_KEEP:-}" ]; then echo "results kept in $results" >&2; else rm -f "$results"; fi
	[ -z "$vmwork" ] || rm -rf "$vmwork"
	bench_cleanup
}
bench_cleanup() { :; }

run_host() {
	# shellcheck source=common.sh
	. "$repo/bench/common.sh"
	bench_loop 4G --direct-io=on
	trap cleanup_all EXIT # after bench_loop, which sets its own
	local stat=/sys/block/${loop#/dev/}/stat fs r i i2 m kind w0 f0 w1 f1
	for fs in ext4 xfs; do
		bench_mkfs_mount "$fs"
		for r in $(seq "$rounds"); do
			for i in 0 1 2; do
				m=${methods[$(((r + i) % 3))]}
				sync
				echo 3 >/proc/sys/vm/drop_caches
				read -r _ _ _ _ _ _ w0 _ _ _ _ _ _ _ _ f0 _ <"$stat"
				for i2 in $(seq "$k"); do
					"$bench" create "$m" "$work/mnt" "seg$i2" "$seg_bytes" | sed "s/^/$fs /" >>"$results"
				done
				read -r _ _ _ _ _ _ w1 _ _ _ _ _ _ _ _ f1 _ <"$stat"
				echo "$fs bytes $m $k $(((w1 - w0) * 512)) - $((f1 - f0))" >>"$results"
				for kind in dsync wzero plain; do
					read -r _ _ _ _ _ _ w0 _ _ _ _ _ _ _ _ f0 _ <"$stat"
					"$bench" append "$kind" "$work/mnt/seg$(seg_of "$kind")" "$rec" "$records" |
						sed "s/^append /$fs append $m /" >>"$results"
					read -r _ _ _ _ _ _ w1 _ _ _ _ _ _ _ _ f1 _ <"$stat"
					echo "$fs appbytes $m $kind $records $(((w1 - w0) * 512)) - $((f1 - f0))" >>"$results"
				done
				rm -f "$work/mnt"/seg*
			done
		done
	done
	umount "$work/mnt"
}

run_vm() {
	vmwork=$(mktemp -d /tmp/wzero-wal-vm.XXXXXX)
	trap cleanup_all EXIT
	# fstests/vm/run copies the executables of BUILD/tools/wzero (and their libraries).
	mkdir -p "$vmwork/build/tools/wzero"
	cp "$bench" "$vmwork/build/tools/wzero/"
	# Markers at 900 MiB of the 1 GiB namespace, past the 768 MiB filesystem.
	local mark_lba=1843200
	# shellcheck disable=SC2016 # expanded in the guest
	local guest='
set -o pipefail
ns=/dev/nvme0n1
mark() { echo "mark $*"; wzero_wal_bench mark $ns $MARK_LBA || exit 1; }
methods="wzero pg fallocate"
for fs in ext4 xfs; do
	if [ $fs = ext4 ]; then
		/usr/local/bin/mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 $ns 768M || exit 1
	else
		/usr/local/bin/mkfs.xfs -q -f -d size=768m $ns || exit 1
	fi
	mkdir -p /mnt/wal
	mount -t $fs $ns /mnt/wal || exit 1
	for r in $(seq $ROUNDS); do
		for i in 0 1 2; do
			idx=$(( (r + i) % 3 ))
			m=$(echo $methods | cut -d" " -f$((idx + 1)))
			sync
			echo 3 >/proc/sys/vm/drop_caches
			mark create vm-$fs $m
			for s in $(seq $K); do
				wzero_wal_bench create $m /mnt/wal seg$s $SEG | sed "s/^/vm-$fs /" || exit 1
			done
			mark append vm-$fs $m dsync
			wzero_wal_bench append dsync /mnt/wal/seg1 $REC $RECORDS | sed "s/^append /vm-$fs append $m /"
			mark append vm-$fs $m wzero
			wzero_wal_bench append wzero /mnt/wal/seg2 $REC $RECORDS | sed "s/^append /vm-$fs append $m /"
			mark append vm-$fs $m plain
			wzero_wal_bench append plain /mnt/wal/seg3 $REC $RECORDS | sed "s/^append /vm-$fs append $m /"
			mark idle
			rm -f /mnt/wal/seg*
			sync
		done
	done
	umount /mnt/wal
done
echo wal-done
'
	# shellcheck disable=SC2086 # VM_ARGS is a word list
	"$repo/fstests/vm/run" --kernel new --setup A --disk-size 1G ${VM_ARGS:-} --build "$vmwork/build" --timeout 1500 \
		--trace pci_nvme_write --trace pci_nvme_flush_ns --trace-log "$vmwork/trace" \
		-- env K="$k" ROUNDS="$rounds" REC="$rec" RECORDS="$records" SEG="$seg_bytes" MARK_LBA="$mark_lba" \
		bash -c "$guest" >"$vmwork/out" 2>&1 || { cat "$vmwork/out" >&2; exit 1; }
	grep -q '^wal-done' "$vmwork/out" || { cat "$vmwork/out" >&2; exit 1; }
	grep -E '^vm-(ext4|xfs) (create|append) ' "$vmwork/out" >>"$results"
	# Region n of the trace (after the n-th marker write) belongs to the n-th "mark" line.
	awk -v mark="$(printf '0x%x' "$mark_lba")" '
		FNR == NR { if ($1 == "mark") { n++; label[n] = $2 " " $3 " " $4 " " $5 }; next }
		/^pci_nvme_write / {
			op = ""; c = 0; l = ""
			for (i = 1; i <= NF; i++) { if ($i == "opname") op = $(i + 1); if ($i == "count") c = $(i + 1); if ($i == "lba") l = $(i + 1) }
			if (op ~ /CMD_WRITE\047/ && c == 512 && l == mark) { seg++; next }
			if (op ~ /CMD_WRITE\047/) data[seg] += c; else if (op ~ /WRITE_ZEROES/) wz[seg]++
			next
		}
		/^pci_nvme_flush_ns / { fl[seg]++ }
		END {
			for (s = 1; s <= n; s++) {
				split(label[s], f, " ")
				if (f[1] == "create") print f[2], "bytes", f[3], K, data[s] + 0, wz[s] + 0, fl[s] + 0
				else if (f[1] == "append") print f[2], "appbytes", f[3], f[4], RECORDS, data[s] + 0, wz[s] + 0, fl[s] + 0
			}
		}' K="$k" RECORDS="$records" "$vmwork/out" "$vmwork/trace" >>"$results"
}

if [ "$where" = host ] || [ "$where" = all ]; then
	run_host
fi
if [ "$where" = vm ] || [ "$where" = all ]; then
	run_vm
fi

# ---- report -----------------------------------------------------------------------------
median() { sort -g | awk '{ v[NR] = $1 } END { printf "%.3f\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mean() { awk '{ s += $1 } END { printf "%.3f\n", s / NR }'; }
sel() { awk -v fs="$1" -v what="$2" -v m="$3" -v kind="${4:-}" -v col="$5" \
	'$1 == fs && $2 == what && $3 == m && (kind == "" || $4 == kind) { print $col }' "$results"; }
sum() { awk '{ s += $1 } END { printf "%.0f\n", s }'; }

echo "16 MiB WAL segments: $k created per method per round, $rounds rounds (method order rotated),"
echo "then $records sequential ${rec}-byte durable appends into a fresh segment; ratios to pg"
for fs in ext4 xfs vm-ext4 vm-xfs; do
	grep -q "^$fs create" "$results" || continue
	case $fs in
	vm-*) echo; echo "${fs#vm-} on QEMU NVMe (TCG guest, Linux 7.2); device bytes from QEMU's trace" ;;
	*) echo; echo "$fs on a direct-I/O loop device (host); device bytes from /sys/block stat" ;;
	esac
	printf '%-10s %9s %9s %7s %11s %7s %6s %9s %7s %9s %-8s %7s %9s %6s %6s\n' method "mean ms" "p50 ms" "x pg" \
		"dev KiB/seg" "WZ/seg" "fl/seg" "dsync/s" "x pg" "writer/s" mode "x pg" "ceil/s" "dsync" "writer"
	pg_t=$(sel "$fs" create pg "" 4 | mean)
	pg_d=$(sel "$fs" append pg dsync 5 | median)
	for m in "${methods[@]}"; do
		t=$(sel "$fs" create "$m" "" 4 | mean)
		p50=$(sel "$fs" create "$m" "" 4 | median)
		n=$(sel "$fs" bytes "$m" "" 4 | sum)
		b=$(sel "$fs" bytes "$m" "" 5 | sum)
		wzc=$(sel "$fs" bytes "$m" "" 6 | sum)
		fl=$(sel "$fs" bytes "$m" "" 7 | sum)
		d=$(sel "$fs" append "$m" dsync 5 | median)
		wr=$(sel "$fs" append "$m" wzero 5 | median)
		mode=$(sel "$fs" append "$m" wzero 7 | sort -u | paste -sd, -)
		ceil=$(sel "$fs" append "$m" plain 5 | median)
		case $fs in vm-*) wzs=$(echo "$wzc / $n" | bc -l) ;; *) wzs=- ;; esac
		printf '%-10s %9.1f %9.1f %6.2fx %11.0f %7s %6.1f %9.0f %6.2fx %9.0f %-8s %6.2fx %9.0f %6.2f %6.2f\n' "$m" \
			"$(echo "$t / 1000000" | bc -l)" "$(echo "$p50 / 1000000" | bc -l)" "$(echo "$pg_t / $t" | bc -l)" \
			"$(echo "$b / $n / 1024" | bc -l)" "$([ "$wzs" = - ] && echo - || printf '%.1f' "$wzs")" \
			"$(echo "$fl / $n" | bc -l)" "$d" "$(echo "$d / $pg_d" | bc -l)" "$wr" "$mode" "$(echo "$wr / $pg_d" | bc -l)" \
			"$ceil" "$(echo "$d / $ceil" | bc -l)" "$(echo "$wr / $ceil" | bc -l)"
	done
	if grep -q "^$fs appbytes" "$results"; then
		echo "device traffic per append (all rounds): data KiB and flushes per record"
		for m in "${methods[@]}"; do
			for kind in dsync wzero plain; do
				r=$(sel "$fs" appbytes "$m" "$kind" 5 | sum)
				b=$(sel "$fs" appbytes "$m" "$kind" 6 | sum)
				fl=$(sel "$fs" appbytes "$m" "$kind" 8 | sum)
				printf '  %-10s %-6s %8.1f KiB %6.2f flushes\n' "$m" "$kind" "$(echo "$b / $r / 1024" | bc -l)" \
					"$(echo "$fl / $r" | bc -l)"
			done
		done
	fi
done
