# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Sourced by the host benchmarks: a filesystem on a loop device over a sparse image in a
# temporary directory, all of it removed on exit.
#   bench_ext4_on_loop SIZE [losetup options...]   -> sets $work, $loop; mounted on $work/mnt
#   bench_loop SIZE [losetup options...]           -> sets $work, $loop; nothing on it yet
#   bench_mkfs_mount ext4|xfs                       -> (re)makes that filesystem on $loop and
#                                                     mounts it on $work/mnt

work=
loop=
bench_cleanup() {
	umount "$work/mnt" 2>/dev/null || true # wz: ignored-error (teardown)
	[ -n "$loop" ] && losetup -d "$loop" 2>/dev/null
	[ -n "$work" ] && rm -rf "$work"
}

bench_loop() {
	local size=$1
	shift
	work=$(mktemp -d /var/tmp/wzero-bench.XXXXXX)
	trap bench_cleanup EXIT
	truncate -s "$size" "$work/fs.img"
	loop=$(losetup -f --show "$@" "$work/fs.img")
	mkdir "$work/mnt"
}

bench_mkfs_mount() {
	if mountpoint -q "$work/mnt"; then
		umount "$work/mnt"
	fi
	case $1 in
	# Inode tables and journal initialised now, not by ext4lazyinit in the background, where
	# its writes would land in the device counters of whatever runs next.
	ext4) mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$loop" ;;
	xfs) mkfs.xfs -q -f "$loop" ;;
	*) echo "bench_mkfs_mount: ext4 or xfs, not $1" >&2; return 1 ;;
	esac
	mount "$loop" "$work/mnt"
}

bench_ext4_on_loop() {
	bench_loop "$@"
	bench_mkfs_mount ext4
}

# bench_loopstat_counters DEV: count_begin / count_end over /sys/block/DEV/stat (a loop
# device), count_end printing "WRITES FUA FLUSHES ZEROES WRITE-BYTES ZERO-BYTES" as the
# guest's fstests/common/benchvm does; FUA and zeroes are not separable here ("-").
bench_loopstat_counters() {
	bench_loopstat_dev=$1
	count_begin() { read -r -a bench_loopstat_c0 <"/sys/block/$bench_loopstat_dev/stat"; }
	count_end() {
		local -a c1
		read -r -a c1 <"/sys/block/$bench_loopstat_dev/stat"
		local -a c0=("${bench_loopstat_c0[@]}")
		echo "$((c1[4] - c0[4])) - $((c1[15] - c0[15])) - $(((c1[6] - c0[6]) * 512)) -"
	}
}
