#!/bin/bash
# SPDX-License-Identifier: MIT
# Installs what wzero needs to build and to run every test, from Debian 12's packages;
# with --build, only what it needs to build. Idempotent: packages already present are not
# touched. Needs root.
set -euo pipefail

# What building needs (tools/build.sh, and debian/control's Build-Depends but debhelper's):
# the main job's set, tools/demo.sh installs only these.
build_packages=(
	g++ make cmake pkg-config
	# compiler cache of every build dir (tools/ccache.sh): warm CI builds
	ccache
	liburing-dev libnvme-dev libmount-dev libblkid-dev
	# libnvme.pc's Requires.private: pkg-config wants them to hand out libnvme's flags
	libjson-c-dev libssl-dev
	# the CLI's tables (lsblk's library; same source package as libmount)
	libsmartcols-dev
	libcli11-dev nlohmann-json3-dev libfmt-dev
	# build/ configures the unit tests (GoogleTest) and the fstests' tools; fstests/src/wz_noring:
	# io_uring refused through seccomp, as a container refuses it
	libgtest-dev libgmock-dev libseccomp-dev
	# bash completion's completionsdir (pkg-config bash-completion)
	bash-completion
	# the database plugins (lib/plugins): the SQLite VFS and the RocksDB FileSystem
	libsqlite3-dev librocksdb-dev
	# tools/demo.sh prints part of the record with it; host tests read JSON with it
	jq
)
# What the tests need besides.
test_packages=(
	# host tests
	util-linux fdisk e2fsprogs xfsprogs btrfs-progs shellcheck man-db time
	# benchmark figures (bench/plot.sh: SVG from the benchmarks' JSON), gnuplot without X11
	gnuplot-nox
	# SQLite's own shell for the VFS's tests, and its own test suite on the VFS
	# (tools/sqlite-testsuite.sh): its testfixture is Tcl, and the source package is unpacked
	# with dpkg-source
	sqlite3 tcl8.6-dev dpkg-dev
	# VM rig: QEMU, busybox initramfs, Debian kernels, NVMe tools for the guest
	qemu-system-x86 busybox-static cpio xz-utils kmod nvme-cli
	# VM rig device model (vm/run --flush-latency): nbdkit + a filter built against its header
	nbdkit nbdkit-plugin-dev gcc
	# libFuzzer targets (fuzz/, tools/fuzz.sh): clang and its fuzzer/sanitizer runtimes
	clang-14 libclang-rt-14-dev
	# RocksDB's db_bench and ldb for the plugin's tests, strace to watch them
	rocksdb-tools strace
	# the Debian packages (tools/deb.sh): debhelper, lintian, and abidiff for the C ABI check
	debhelper lintian abigail-tools
)

case ${1:-} in
--build) packages=("${build_packages[@]}") ;;
"") packages=("${build_packages[@]}" "${test_packages[@]}") ;;
*)
	echo "usage: tools/install-deps.sh [--build]" >&2
	exit 1
	;;
esac

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
