# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Sourced by the host benchmarks: an ext4 filesystem on a loop device over a sparse image in
# a temporary directory, all of it removed on exit.
#   bench_ext4_on_loop SIZE [losetup options...]   -> sets $work, $loop; mounted on $work/mnt

work=
loop=
bench_cleanup() {
	umount "$work/mnt" 2>/dev/null || true # wz: ignored-error (teardown)
	[ -n "$loop" ] && losetup -d "$loop" 2>/dev/null
	[ -n "$work" ] && rm -rf "$work"
}

bench_ext4_on_loop() {
	local size=$1
	shift
	work=$(mktemp -d /var/tmp/wzero-bench.XXXXXX)
	trap bench_cleanup EXIT
	truncate -s "$size" "$work/fs.img"
	loop=$(losetup -f --show "$@" "$work/fs.img")
	mkfs.ext4 -q -F "$loop"
	mkdir "$work/mnt"
	mount "$loop" "$work/mnt"
}
