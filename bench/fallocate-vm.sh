#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark in the VM rig: `wzero alloc` of a new 128 MiB file next to util-linux's
# `fallocate -w` followed by `sync -f` on the same path, on ext4 on the rig's nvmet namespace
# (setup B: a namespace with unmap write zeroes) under Debian unstable's kernel (Linux 7.2,
# FALLOC_FL_WRITE_ZEROES), all in one boot. Each round runs, in turns, on a file that is
# removed afterwards (rm, then sync):
#   new file (the name does not exist):
#     wzero         wzero alloc -l SIZE FILE (the default: verify extents; the file is built
#                   unnamed, linked to its name, and the directory synced: on ext4 one
#                   journal commit makes the file and the name durable together)
#     ul+sync       fallocate -w -l SIZE FILE && sync -f FILE
#     wzero-none    wzero alloc with --verify=none
#     ul            fallocate -w -l SIZE FILE alone (nothing made durable)
#   existing empty file (touch, then sync, before the clock starts):
#     wzero-old     wzero alloc -l SIZE FILE (in place: no name to link)
#     ul+sync-old   fallocate -w -l SIZE FILE && sync -f FILE
#   start-up:
#     wzero-stat    wzero stat FILE (process start-up and the probe, nothing written)
#     wzero-version wzero --version (process start-up alone: the dynamic libraries)
#     ul-version    fallocate --version
# For each it prints the median time, the ratio to the ul+sync row of the same kind of file,
# and the journal commits ext4 made during the command (/proc/fs/jbd2/nvme0n1-8/info; each
# ends in a cache flush and a FUA write at the device).
# Times are taken in the guest (bash's EPOCHREALTIME). The guest is QEMU TCG on a shared
# machine: compare the rows of one run, not runs of different days.
# util-linux 2.42's fallocate (the first with -w) is built here from Debian unstable's
# upstream tarball of util-linux (apt's Sources index gives its URI and SHA256; the mirror
# may not serve the Debian patches, and fallocate needs none), against this machine's glibc:
# Debian unstable's own binary needs unstable's glibc. Cached in
# /var/cache/wzero-util-linux/VERSION.
#   bench/fallocate-vm.sh [ROUNDS] [SIZE_MIB]      (default 5 rounds of 128 MiB)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=${1:-5}
size_mib=${2:-128}
work=$(mktemp -d /tmp/wzero-bench-fallocate.XXXXXX)
trap '[ -n "${WZ_BENCH_KEEP:-}" ] || rm -rf "$work"' EXIT
die() { echo "fallocate-vm.sh: $*" >&2; exit 1; }

# ---- util-linux's fallocate from Debian unstable's source ------------------------------
apt_dir=$work/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/sources.list.d"
mirror=$(sed -n 's/^URIs: *\(http[^ ]*\/debian\)\/*$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
[ -n "$mirror" ] || mirror=$(sed -n 's/^deb \(\[[^]]*\] \)\{0,1\}\(http[^ ]*\/debian\)\/* .*/\2/p' /etc/apt/sources.list 2>/dev/null | head -n 1)
[ -n "$mirror" ] || die "no Debian mirror in the machine's apt sources"
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror sid main" >"$apt_dir/sources.list.d/sid.list"
o=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
	-o "Dir::State::Lists=$apt_dir/lists" -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
apt-get "${o[@]}" -qq update >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; die "apt-get update (sid deb-src) failed"; }
# "'URI' NAME SIZE SHA256:HASH" for the orig tarball of the newest util-linux in sid.
read -r uri name _ hash < <(apt-get "${o[@]}" -qq source --print-uris util-linux 2>>"$work/apt.log" |
	grep -E "util-linux_[0-9.]+\.orig\.tar\.xz'? " | head -n 1) || die "no util-linux source in sid"
uri=${uri//\'/}
version=${name#util-linux_}
version=${version%.orig.tar.xz}
ul_dir=/var/cache/wzero-util-linux/$version
ul=$ul_dir/fallocate
if [ ! -x "$ul" ]; then
	mkdir -p "$ul_dir"
	/usr/lib/apt/apt-helper download-file "$uri" "$ul_dir/$name" "$hash" >>"$work/apt.log" 2>&1 ||
		{ cat "$work/apt.log" >&2; die "download of $uri failed"; }
	rm -rf "$ul_dir/src"
	mkdir -p "$ul_dir/src"
	tar -xf "$ul_dir/$name" -C "$ul_dir/src" --strip-components=1
	(cd "$ul_dir/src" &&
		./configure -q --disable-all-programs --enable-fallocate --without-python --without-systemd \
			--without-tinfo --without-ncursesw --without-readline --disable-nls --disable-asciidoc &&
		make -j"$(nproc)" fallocate) >"$ul_dir/build.log" 2>&1 || { tail -n 30 "$ul_dir/build.log" >&2; die "build of fallocate failed"; }
	cp "$ul_dir/src/fallocate" "$ul"
	rm -rf "$ul_dir/src" "${ul_dir:?}/$name"
fi
"$ul" --help | grep -q -- '--write-zeroes' || die "$ul has no --write-zeroes"

# ---- the guest -------------------------------------------------------------------------
# shellcheck disable=SC2016 # expanded in the guest
guest_script='
set -u
ns=/dev/nvme0n1 m=/mnt/b size=${SIZE_MIB}M
commits() { set -- $(head -n 1 /proc/fs/jbd2/nvme0n1-8/info); echo "$1"; }
# t WHAT COMMAND...: one timed run, "WHAT MICROSECONDS COMMITS".
t() {
	local w=$1 s e c
	shift
	c=$(commits) s=${EPOCHREALTIME/./}
	"$@" >/dev/null 2>"$m.err" || { echo "FAILED: $* $(cat "$m.err")" >&2; exit 1; }
	e=${EPOCHREALTIME/./}
	echo "$w $((e - s)) $(($(commits) - c))"
}
gone() { rm -f "$m/f"; sync; }
old() { touch "$m/f"; sync; }
mkfs.ext4 -q -F $ns && mkdir -p $m && mount $ns $m || exit 1
touch $m/p && sync && wzero stat $m/p | sed "s/^/record: /"
# One of each first, not counted: the first run of a program reads it and its libraries in.
wzero alloc -l 1M $m/f >/dev/null; gone; fallocate -w -l 1M $m/f; gone
for r in $(seq 1 "$ROUNDS"); do
	t wzero wzero alloc -l $size $m/f; gone
	t ul+sync sh -c "fallocate -w -l $size $m/f && sync -f $m/f"; gone
	t wzero-none wzero alloc -l $size --verify=none $m/f; gone
	t ul fallocate -w -l $size $m/f; gone
	old; t wzero-old wzero alloc -l $size $m/f; gone
	old; t ul+sync-old sh -c "fallocate -w -l $size $m/f && sync -f $m/f"; gone
	t wzero-stat wzero stat $m/p
	t wzero-version wzero --version
	t ul-version fallocate --version
done
wzero alloc -v -l $size $m/f 2>&1 | sed "s/^/verbose: /"; gone
umount $m
'
"$repo/fstests/vm/run" --kernel new --setup B --with "$ul" --timeout 900 --info "$work/info" \
	-- env ROUNDS="$rounds" SIZE_MIB="$size_mib" bash -c "$guest_script" >"$work/out" 2>"$work/err" ||
	{ cat "$work/out" "$work/err" >&2; die "the VM run failed"; }

kernel=$(sed -n 's/^kernel=//p' "$work/info")
echo "wzero alloc of a ${size_mib} MiB file against util-linux $version's fallocate -w, ext4 on the"
echo "rig's nvmet namespace (setup B), guest kernel ${kernel:-?}, TCG; $rounds rounds, one boot"
grep '^record: ' "$work/out" | sed 's/^record: /  record: /'
printf '%-14s %10s %10s %8s  %s\n' what "median ms" "vs ul+sync" commits "all runs (ms)"
median() { sort -n | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'; }
base_new=$(awk '$1 == "ul+sync" { print $2 }' "$work/out" | median)
base_old=$(awk '$1 == "ul+sync-old" { print $2 }' "$work/out" | median)
for w in wzero ul+sync wzero-none ul wzero-old ul+sync-old wzero-stat wzero-version ul-version; do
	base=$base_new
	[[ $w == *-old ]] && base=$base_old
	awk -v w="$w" -v base="$base" '
		function med(x, n,   i, j, t) {
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
			return x[int((n + 1) / 2)]
		}
		$1 == w { n++; a[n] = $2 / 1000; c[n] = $3; all = all sprintf(" %.0f", $2 / 1000) }
		END {
			if (!n) exit
			m = med(a, n)
			r = w ~ /-stat$|-version$/ ? "" : sprintf("%.2fx", m * 1000 / base)
			printf "%-14s %10.1f %10s %8s %s\n", w, m, r, med(c, n), all
		}' "$work/out"
done
grep '^verbose: ' "$work/out" | sed 's/^verbose: /  /'
