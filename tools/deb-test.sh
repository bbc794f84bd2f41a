#!/bin/bash
# SPDX-License-Identifier: MIT
# The Debian packages tested as installed (tools/deb.sh test): DEBDIR's *.deb (tools/deb.sh
# build) installed with apt-get, then every check against the installed files only: PATH is
# the system's, no LD_LIBRARY_PATH, LD_PRELOAD, PKG_CONFIG_PATH or CMAKE_PREFIX_PATH, the
# working directory a scratch one, and no build tree is used (the programs compiled here
# come from the source tree's C and C++ files, built against /usr). Checks, each "ok NAME"
# or "FAILED NAME" with its output:
#   installed      apt-get installed every package, each at debian/changelog's version
#   paths          no RUNPATH in any installed ELF file, every library each one loads is
#                  under /lib or /usr/lib, no installed file names the build directory
#   ext4           wzero stat, alloc and verify --data on a file of an ext4 this script makes
#                  on a loop device; filefrag (no unwritten extent) and an O_DIRECT read
#                  (zeroes) judge the result
#   fallocate      wzero-fallocate on the same ext4, judged the same way
#   c99            tools/examples/wal_segments.c and lib/capi/capi_abi_test.c (every C
#                  function) built with pkg-config --cflags --libs wzero, run on the ext4
#   cxx            cmake/install_consumer.cpp (every C++ function) built with
#                  find_package(wzero), run on the ext4
#   rocksdb        Debian's db_bench --fs_uri=wzero with the installed plugin (LD_PRELOAD),
#                  ldb reads the keys back; without the plugin the same run fails
#   sqlite3        Debian's sqlite3 .loads the installed extension, vfs=wzero on the ext4
#                  (.vfsname says wzero), a shell without it reads the rows back
#   man            man renders wzero(1), wzero-fallocate(1), libwzero(3) and
#                  wz_create_zeroed(3) from /usr/share/man without a warning
#   completion     complete -p wzero and wzero-fallocate after sourcing bash-completion
#   autopkgtest    debian/tests/smoke and sqlite3-vfs, as autopkgtest runs them
#   purge          apt-get purge leaves no file or directory of the packages (their dpkg -L
#                  lists), and a search of /usr, /etc and /var/lib/dpkg finds no "*wzero*"
#                  path that was not there before the install
# The last line: "packages: N passed, N failed, N skipped". Needs root: run as
#   tools/deb-test.sh DEBDIR
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
debdir=$(cd "${1:?usage: tools/deb-test.sh DEBDIR}" && pwd)
packages=(libwzero0 libwzero-dev wzero wzero-rocksdb wzero-sqlite3)
if [ "$(id -u)" != 0 ]; then
	echo "deb-test: run as root (apt-get install)" >&2
	exit 1
fi
# The packages, not their -dbgsym companions.
debs=()
for p in "${packages[@]}"; do
	for deb in "$debdir/${p}"_*.deb; do
		[ -f "$deb" ] && debs+=("$deb")
	done
done
if [ ${#debs[@]} -ne ${#packages[@]} ]; then
	echo "deb-test: ${#debs[@]} packages in $debdir, not ${#packages[@]} (tools/deb.sh build first)" >&2
	exit 1
fi

# One run at a time on a machine: a second CI run beside this one installs and purges the
# same packages. apt-get waits for dpkg's lock too, should anything else hold it.
exec {lock}>/run/lock/wzero-deb-test.lock
if ! flock -w 1800 "$lock"; then
	echo "deb-test: another run held /run/lock/wzero-deb-test.lock for 30 minutes" >&2
	exit 1
fi
apt_get() {
	apt-get -o DPkg::Lock::Timeout=600 "$@"
}
# installed PACKAGE: dpkg has PACKAGE installed.
installed() { # package
	[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

# The installed files only.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive
unset LD_LIBRARY_PATH LD_PRELOAD PKG_CONFIG_PATH CMAKE_PREFIX_PATH WZERO WZERO_ENGINE
work=$(mktemp -d /var/tmp/wzero-deb-test.XXXXXX)
cd "$work" || exit 1
export HOME=$work TMPDIR=$work
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir=/usr/lib/$multiarch
version=$(dpkg-parsechangelog -l "$repo/debian/changelog" -S Version)

loop='' mnt=$work/mnt
cleanup() {
	if mountpoint -q "$mnt"; then umount "$mnt"; fi
	if [ -n "$loop" ]; then losetup -d "$loop"; fi
	# A failed run leaves no package behind either.
	installed_now=()
	for p in "${packages[@]}"; do
		if installed "$p"; then
			installed_now+=("$p")
		fi
	done
	if [ ${#installed_now[@]} -gt 0 ]; then
		apt_get purge -y -qq "${installed_now[@]}" >/dev/null 2>&1
	fi
	rm -rf "$work"
}
trap cleanup EXIT

pass=0 fail=0 skip=0
# check NAME FUNCTION: runs FUNCTION in a subshell with errexit, its output in a log, printed
# on failure. The subshell is a command of its own, not the left side of || (where bash
# would ignore errexit inside it, and only its last command would count).
check() { # name function
	local log=$work/$1.log rc
	(set -euo pipefail; "$2") >"$log" 2>&1
	rc=$?
	if [ "$rc" -eq 0 ]; then
		echo "ok $1"
		pass=$((pass + 1))
	else
		echo "FAILED $1 (exit $rc):"
		sed 's/^/    /' "$log" | tail -n 40
		fail=$((fail + 1))
	fi
}
die() {
	echo "$*" >&2
	exit 1
}
# written_zeroes FILE SIZE: SIZE bytes, no unwritten extent in the kernel's map, and an
# O_DIRECT read (past the page cache) of zeroes only.
written_zeroes() { # file size
	[ "$(stat -c %s "$1")" = "$2" ] || die "$1 is $(stat -c %s "$1") bytes, not $2"
	filefrag -v "$1" >"$work/filefrag.out"
	if grep -q unwritten "$work/filefrag.out"; then
		cat "$work/filefrag.out"
		die "$1 has unwritten extents"
	fi
	dd if="$1" iflag=direct bs=1M status=none | cmp -s -n "$2" - /dev/zero ||
		die "$1 does not read back as zeroes (O_DIRECT)"
}

# loads FILE: FILE's libwzero.so.0 is the installed one.
loads() { # file
	local got
	got=$(ldd "$1" | sed -n 's/^[[:space:]]*libwzero\.so\.0 => \([^ ]*\) .*/\1/p')
	if [ -z "$got" ] || [ "$(readlink -f "$got")" != "$(readlink -f "$libdir/libwzero.so.0")" ]; then
		die "$1 loads libwzero.so.0 from '$got', not $libdir"
	fi
}

# What a search finds before the install; after the purge it must find the same.
search() {
	find /usr /etc /var/lib/dpkg -xdev -name '*wzero*' 2>/dev/null | sort
}
# Packages a failed earlier run left installed go first.
for p in "${packages[@]}"; do
	if installed "$p"; then
		echo "deb-test: $p is installed already (an earlier run?): purging it first"
		apt_get purge -y -qq "$p" >/dev/null
	fi
done
search >"$work/before.list"

t_installed() {
	apt_get install -y -qq --no-install-recommends "${debs[@]}"
	local p v
	for p in "${packages[@]}"; do
		v=$(dpkg-query -W -f='${Status} ${Version}' "$p")
		[ "$v" = "install ok installed $version" ] || die "$p: $v, not installed at $version"
		dpkg -L "$p" >"$work/$p.files"
	done
}
check installed t_installed

# Every installed regular file of the packages.
installed_files() {
	local p f
	for p in "${packages[@]}"; do
		while IFS= read -r f; do
			[ -f "$f" ] && [ ! -L "$f" ] && echo "$f"
		done <"$work/$p.files"
	done
}

t_paths() {
	local f n=0 deps
	while IFS= read -r f; do
		readelf -h "$f" >/dev/null 2>&1 || continue
		n=$((n + 1))
		if readelf -d "$f" | grep -E 'R(UN)?PATH'; then
			die "$f has a library search path"
		fi
		deps=$(ldd "$f")
		echo "$f:"
		echo "$deps"
		if echo "$deps" | grep -q 'not found'; then
			die "$f: a library is not found"
		fi
		if echo "$deps" | grep '=>' | grep -vE '=> /(usr/)?lib/'; then
			die "$f loads a library from outside /lib and /usr/lib"
		fi
	done < <(installed_files)
	[ "$n" -ge 4 ] || die "only $n ELF files installed (wzero, libwzero.so.0 and the two plugins at least)"
	if installed_files | xargs grep -l -F -e "$repo" -e "$debdir" --; then
		die "installed files name the build directory"
	fi
	ldd /usr/bin/wzero
	loads "$libdir/wzero/plugins/rocksdb/libwzero_rocksdb.so"
	loads "$libdir/wzero/wzero_sqlite.so"
}
check paths t_paths

# An ext4 of 512 MiB on a loop device made here, for the checks that write.
img=$work/ext4.img
mkdir -p "$mnt"
if truncate -s 512M "$img" && mkfs.ext4 -q -F "$img" && loop=$(losetup -f --show "$img") &&
	mount "$loop" "$mnt"; then
	echo "deb-test: ext4 on $loop (backed by $img) at $mnt"
else
	echo "FAILED ext4: could not make an ext4 on a loop device"
	loop=${loop:-}
	fail=$((fail + 1))
fi

t_ext4() {
	local f=$mnt/data.img
	wzero alloc -v -l 64MiB "$f"
	wzero verify --data "$f"
	written_zeroes "$f" $((64 << 20))
	wzero stat "$f" "$loop"
	wzero stat --record "$f" >"$work/record.json"
	grep -q '"path"' "$work/record.json" || die "wzero stat --record printed no record"
}
check ext4 t_ext4

t_fallocate() {
	[ "$(readlink /usr/bin/wzero-fallocate)" = wzero ] || die "/usr/bin/wzero-fallocate is not a link to wzero"
	wzero-fallocate -v -l 16MiB "$mnt/fallocate.img"
	written_zeroes "$mnt/fallocate.img" $((16 << 20))
}
check fallocate t_fallocate

t_c99() {
	[ "$(pkg-config --variable=libdir wzero)" = "$libdir" ] || die "wzero.pc's libdir is $(pkg-config --variable=libdir wzero)"
	# shellcheck disable=SC2046 # pkg-config prints several words on purpose
	cc -std=c99 -Wall -Wextra -pedantic -Werror "$repo/tools/examples/wal_segments.c" \
		$(pkg-config --cflags --libs wzero) -o "$work/wal_segments"
	# shellcheck disable=SC2046
	cc -std=c99 -Wall -Wextra -pedantic -Werror -pthread "$repo/lib/capi/capi_abi_test.c" \
		$(pkg-config --cflags --libs wzero) -o "$work/capi_abi_test"
	loads "$work/wal_segments"
	loads "$work/capi_abi_test"
	bash "$repo/tools/examples/wal_segments_test.sh" "$work/wal_segments" "$mnt"
	mkdir "$mnt/capi"
	"$work/capi_abi_test" "$mnt/capi"
}
check c99 t_c99

t_cxx() {
	mkdir -p "$work/cxx"
	cat >"$work/cxx/CMakeLists.txt" <<EOT
cmake_minimum_required(VERSION 3.25)
project(consumer CXX)
find_package(wzero ${version%%-*} EXACT REQUIRED)
message(STATUS "wzero_DIR: \${wzero_DIR}")
add_executable(cxx_consumer $repo/cmake/install_consumer.cpp)
set_target_properties(cxx_consumer PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
target_link_libraries(cxx_consumer PRIVATE wzero::wzero)
EOT
	cmake -S "$work/cxx" -B "$work/cxx/build" | tee "$work/cxx.cmake"
	grep -q "wzero_DIR: $libdir/cmake/wzero\$" "$work/cxx.cmake" || die "find_package found wzero elsewhere"
	cmake --build "$work/cxx/build"
	mkdir "$mnt/cxx"
	"$work/cxx/build/cxx_consumer" "$mnt/cxx"
}
check cxx t_cxx

t_rocksdb() {
	local plugin=$libdir/wzero/plugins/rocksdb/libwzero_rocksdb.so keys
	# Without the plugin, RocksDB has no FileSystem "wzero": the run must fail.
	if db_bench --fs_uri=wzero --benchmarks=fillsync --num=10 --db="$mnt/db-none" >"$work/none.out" 2>&1; then
		cat "$work/none.out"
		die "db_bench --fs_uri=wzero ran without the plugin"
	fi
	LD_PRELOAD=$plugin db_bench --fs_uri=wzero --benchmarks=fillsync --num=2000 --db="$mnt/db"
	keys=$(ldb --db="$mnt/db" scan | wc -l)
	[ "$keys" -gt 0 ] || die "ldb finds no key in the database"
	ldb --db="$mnt/db" checkconsistency
}
check rocksdb t_rocksdb

t_sqlite3() {
	local out
	out=$(sqlite3 :memory: <<EOT
.load $libdir/wzero/wzero_sqlite
.open file:$mnt/app.db?vfs=wzero
.vfsname
PRAGMA journal_mode=WAL;
PRAGMA synchronous=FULL;
CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
INSERT INTO t(v) SELECT randomblob(1000) FROM n;
PRAGMA wzero_stats;
EOT
	)
	printf '%s\n' "$out"
	# The VFS names itself after the one it sits on: wzero/unix.
	case $(printf '%s\n' "$out" | head -n 1) in wzero/*) ;; *) die ".vfsname is not wzero's" ;; esac
	[ "$(sqlite3 "$mnt/app.db" 'PRAGMA integrity_check; SELECT count(*) FROM t;' | tr '\n' ' ')" = "ok 2000 " ] ||
		die "the database does not read back as 2000 rows"
}
check sqlite3 t_sqlite3

t_man() {
	local page path warn
	# wz_writer_open_fd(3) is an alias (.so) of wz_writer_open(3).
	for page in 1:wzero 1:wzero-fallocate 3:libwzero 3:wz_create_zeroed 3:wz_writer_open_fd; do
		path=$(man -w "${page%%:*}" "${page#*:}")
		case $path in
		/usr/share/man/man"${page%%:*}"/*."${page%%:*}".gz) ;;
		*) die "man -w ${page%%:*} ${page#*:}: $path" ;;
		esac
		warn=$(MANWIDTH=80 man --warnings "${page%%:*}" "${page#*:}" 2>&1 >"$work/page.txt")
		[ -z "$warn" ] || die "man ${page#*:}: $warn"
		grep -q "${page#*:}" "$work/page.txt" || die "man ${page#*:} rendered nothing of it"
		echo "$path: $(wc -l <"$work/page.txt") lines"
	done
}
check man t_man

t_completion() {
	local out
	out=$(bash -c '. /usr/share/bash-completion/bash_completion
		__load_completion wzero && __load_completion wzero-fallocate
		complete -p wzero wzero-fallocate')
	echo "$out"
	if ! grep -q ' wzero$' <<<"$out" || ! grep -q ' wzero-fallocate$' <<<"$out"; then
		die "no completion for wzero and wzero-fallocate"
	fi
}
check completion t_completion

t_autopkgtest() {
	mkdir "$work/smoke" "$work/sqlite3-vfs"
	AUTOPKGTEST_TMP=$work/smoke bash "$repo/debian/tests/smoke"
	AUTOPKGTEST_TMP=$work/sqlite3-vfs bash "$repo/debian/tests/sqlite3-vfs"
}
check autopkgtest t_autopkgtest

t_purge() {
	local p f st left=0
	apt_get purge -y -qq "${packages[@]}"
	for p in "${packages[@]}"; do
		# Purged: dpkg forgot it, or knows it only as not-installed (not config-files).
		st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) || true
		case $st in
		"" | *" not-installed") ;;
		*) die "$p is not purged: $st" ;;
		esac
		while IFS= read -r f; do
			[ "$f" = /. ] && continue
			# Directories other packages own (/usr/bin, /usr/share/man/man1...) stay.
			if [ -e "$f" ] && ! { [ -d "$f" ] && dpkg -S "$f" >/dev/null 2>&1; }; then
				echo "left behind by $p: $f"
				left=$((left + 1))
			fi
		done <"$work/$p.files"
	done
	search >"$work/after.list"
	if ! diff "$work/before.list" "$work/after.list"; then
		die "the search after the purge finds paths that were not there before"
	fi
	[ "$left" -eq 0 ] || die "$left paths left behind"
	echo "$(cat "$work"/*.files | wc -l) paths listed, none left; search: $(wc -l <"$work/after.list") before and after"
}
check purge t_purge

echo "packages: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
