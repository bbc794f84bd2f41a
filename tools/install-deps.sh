#!/bin/bash
# SPDX-License-Identifier: MIT
# Installs what wzero needs to build and to run every test, from Debian 12's packages.
# Idempotent: packages already present are not touched. Needs root.
set -euo pipefail

packages=(
	# build
	g++ make cmake pkg-config
	# compiler cache of every build dir (tools/ccache.sh): warm CI builds
	ccache
	liburing-dev libnvme-dev libjson-c-dev libmount-dev libblkid-dev
	# the CLI's tables (lsblk's library; same source package as libmount)
	libsmartcols-dev
	libcli11-dev libgtest-dev libgmock-dev nlohmann-json3-dev libfmt-dev
	# fstests/src/wz_noring: io_uring refused through seccomp, as a container refuses it
	libseccomp-dev
	# host tests
	jq util-linux fdisk e2fsprogs xfsprogs btrfs-progs shellcheck man-db time
	# benchmark figures (bench/plot.sh: SVG from the benchmarks' JSON), gnuplot without X11
	gnuplot-nox
	# bash completion: its completionsdir (pkg-config) and ctest cli.completion
	bash-completion
	# the SQLite VFS (lib/plugins/sqlite) and its tests with Debian's own shell
	libsqlite3-dev sqlite3
	# SQLite's own test suite on the VFS (tools/sqlite-testsuite.sh): its testfixture is Tcl,
	# and the source package is unpacked with dpkg-source
	tcl8.6-dev dpkg-dev
	# VM rig: QEMU, busybox initramfs, Debian kernels, NVMe tools for the guest
	qemu-system-x86 busybox-static cpio xz-utils kmod nvme-cli
	# VM rig device model (vm/run --flush-latency): nbdkit + a filter built against its header
	nbdkit nbdkit-plugin-dev gcc
	# libFuzzer targets (fuzz/, tools/fuzz.sh): clang and its fuzzer/sanitizer runtimes
	clang-14 libclang-rt-14-dev
	# RocksDB FileSystem plugin (lib/plugins/rocksdb) and its host test with Debian's db_bench
	librocksdb-dev rocksdb-tools strace
)

if [ "$(id -u)" != 0 ]; then
	echo "install-deps: run as root (apt-get install)" >&2
	exit 1
fi
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "install-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
