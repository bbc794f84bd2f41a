#!/bin/bash
# SPDX-License-Identifier: MIT
# tools/sqlite-testsuite.sh -- SQLite's own test suite with the wzero VFS as the default VFS.
#
# Usage: tools/sqlite-testsuite.sh [--build-only] [--all] [--work DIR] [--build DIR] [TESTFILE...]
#
# Fetches the source package of the installed libsqlite3-0 from Debian (apt-get source, with
# a private list of the machine's own mirrors as deb-src: the machine's apt configuration is
# not touched), builds its testfixture with fstests/src/sqlite_testfixture_init.c as
# SQLITE_EXTRA_INIT and the wzero VFS's sources (lib/plugins/sqlite) compiled in, linked
# against build/'s libwzero, and runs each TESTFILE (a name in SQLite's test/, e.g.
# wal.test; default: the list below) in a directory of its own under DIR (default: a new
# temporary directory, removed at the end; the caller's filesystem is where the databases
# live):
#   - with WZ_TESTFIXTURE_VFS=wzero: every connection, and every test VFS the suite stacks
#     on the default VFS, goes through the wzero VFS;
#   - where that run failed, again without it: the same binary is then SQLite's own
#     testfixture, and a case that fails there too is the machine's, not the VFS's (wal2's
#     read-only cases fail for root).
# A failure of the wzero run is explained when it also failed in the reference run, or when
# tools/sqlite-testsuite.expected names it, with the kind and the reason. Prints one line
# per file, "FILE: wzero N errors of M tests; unix N errors; unexplained: NAMES (S s)", S
# being the seconds its runs took, and the last line "sqlite-testsuite: N files, N
# unexplained failures". Exit status 0 when every failure is explained, 1 otherwise, 2 when
# the build failed.
# The build is kept in --build DIR (default /var/cache/wzero-sqlite/VERSION), rebuilt when
# the VFS's sources or this script's flags change. Needs root only for apt-get source's
# download; build/ must hold libwzero (tools/build.sh).
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# SQLite's WAL, journal, pager, lock, I/O error and crash tests (--all): every file of those
# families in SQLite 3.40's test/, and syscall.test (the VFS's system-call methods).
all_tests=(
	wal.test wal2.test wal3.test wal4.test wal5.test wal6.test wal64k.test wal7.test wal8.test
	wal9.test walbak.test walbig.test walblock.test walcksum.test walcrash.test walcrash2.test
	walcrash3.test walcrash4.test walfault.test walfault2.test walhook.test walmode.test
	walnoshm.test waloverwrite.test walpersist.test walprotocol.test walprotocol2.test
	walro.test walro2.test walrofault.test walsetlk.test walshared.test walslow.test
	walthread.test walvfs.test
	journal1.test journal2.test journal3.test jrnlmode.test jrnlmode2.test jrnlmode3.test
	pager1.test pager2.test pager3.test pager4.test pagerfault.test pagerfault2.test
	pagerfault3.test pageropt.test
	lock.test lock2.test lock3.test lock4.test lock5.test lock6.test lock7.test
	ioerr.test ioerr2.test ioerr3.test ioerr4.test ioerr5.test ioerr6.test
	crash.test crash2.test crash3.test crash4.test crash5.test crash6.test crash7.test
	crash8.test crashM.test
	syscall.test
)
# The default: the same without the files SQLite's own "quick" suite leaves out as slow
# (test/permutations.test, allquicktests: walcrash3 alone runs up to 10000 crash rounds,
# half an hour here), but with walcrash2, crash and crash2, which are quick.
slow_tests=(walcrash.test walcrash3.test walslow.test walthread.test walprotocol.test pagerfault2.test
	crash3.test crash4.test crash5.test crash6.test crash7.test)
default_tests=()
for t in "${all_tests[@]}"; do
	[[ " ${slow_tests[*]} " == *" $t "* ]] || default_tests+=("$t")
done

build_only=0 all=0 work='' build=''
while [ $# -gt 0 ]; do
	case $1 in
	--build-only) build_only=1; shift ;;
	--all) all=1; shift ;;
	--work) work=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "sqlite-testsuite: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
	if [ "$all" = 1 ]; then tests=("${all_tests[@]}"); else tests=("${default_tests[@]}"); fi
fi

die() {
	echo "sqlite-testsuite: $*" >&2
	exit 2
}

version=$(dpkg-query -W -f='${Version}' libsqlite3-0 2>/dev/null) || die "libsqlite3-0 is not installed"
libdir=$repo/build/lib
[ -e "$libdir/libwzero.so" ] || libdir=$repo/build
[ -e "$libdir/libwzero.so" ] || die "no libwzero.so under $repo/build (tools/build.sh)"
for c in apt-get dpkg-source make gcc tclsh8.6; do
	command -v "$c" >/dev/null || die "$c not found (tools/install-deps.sh)"
done
[ -e /usr/lib/tcl8.6/tclConfig.sh ] || [ -e /usr/lib/x86_64-linux-gnu/tcl8.6/tclConfig.sh ] ||
	die "no tclConfig.sh (tcl8.6-dev; tools/install-deps.sh)"

# The key of a build: the package version, the VFS's sources and this script.
vfs_sources=("$repo/lib/plugins/sqlite/wzero_sqlite.c" "$repo/lib/plugins/sqlite/policy.c"
	"$repo/lib/plugins/sqlite/policy.h" "$repo/fstests/src/sqlite_testfixture_init.c"
	"$repo/fstests/src/sqlite_testfixture_init.h")
key=$(cat "${vfs_sources[@]}" "$0" | sha256sum | cut -c1-16)
build=${build:-/var/cache/wzero-sqlite/$version}
mkdir -p "$build" || die "cannot create $build"

# fetch: the source package, unpacked with Debian's patches, in $build/src.
fetch() {
	local apt=$build/apt f
	[ -f "$build/src/test/wal.test" ] && return 0
	rm -rf "$apt" "$build/src" "$build/dl"
	mkdir -p "$apt/lists/partial" "$apt/sources.list.d" "$build/dl"
	# The machine's own mirrors as deb-src, in a private list.
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] && sed -n 's/^deb \(.*\)$/deb-src \1/p' "$f"
	done >"$apt/sources.list.d/mirrors.list"
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] && sed 's/^Types:.*$/Types: deb-src/' "$f" >"$apt/sources.list.d/$(basename "$f")"
	done
	local o=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt/sources.list.d"
		-o "Dir::State::Lists=$apt/lists" -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
	apt-get "${o[@]}" -qq update >"$build/fetch.log" 2>&1 || { cat "$build/fetch.log" >&2; die "apt-get update (deb-src) failed"; }
	(cd "$build/dl" && apt-get "${o[@]}" -qq source --download-only "sqlite3=$version") >>"$build/fetch.log" 2>&1 ||
		{ cat "$build/fetch.log" >&2; die "apt-get source sqlite3=$version failed"; }
	(cd "$build/dl" && dpkg-source -x ./*.dsc "$build/src") >>"$build/fetch.log" 2>&1 ||
		{ cat "$build/fetch.log" >&2; die "dpkg-source -x failed"; }
	# dpkg-source leaves the upstream tarballs beside the tree it made.
	rm -rf "$build/dl" "$build"/*.orig*.tar.*
}

# build_fixture: $build/testfixture, SQLite's own, with the glue as SQLITE_EXTRA_INIT and the
# VFS compiled in (SQLITE_CORE: direct calls, no extension routines table).
build_fixture() {
	local tcl obj=$build/obj
	[ -x "$build/testfixture" ] && [ "$(cat "$build/testfixture.key" 2>/dev/null)" = "$key" ] && return 0
	rm -f "$build/testfixture" "$build/testfixture.key"
	for tcl in /usr/lib/tcl8.6 /usr/lib/x86_64-linux-gnu/tcl8.6; do
		[ -e "$tcl/tclConfig.sh" ] && break
	done
	if [ ! -f "$build/bld/Makefile" ]; then
		mkdir -p "$build/bld"
		# -O1: the suite's run time is I/O and Tcl, and the compile of sqlite3.c and the test
		# sources is most of the build.
		(cd "$build/bld" && CFLAGS='-O1 -g0' "$build/src/configure" --with-tcl="$tcl" --disable-shared \
			--enable-static >"$build/configure.log" 2>&1) || { tail -n 30 "$build/configure.log" >&2; die "configure failed"; }
	fi
	mkdir -p "$obj"
	local cflags=(-O1 -g0 -std=c99 -D_GNU_SOURCE -DSQLITE_CORE -fPIC -I"$build/bld" -I"$repo/include"
		-I"$repo/lib/plugins/sqlite")
	# sqlite3.h of this version first: the glue and the VFS see its API.
	(cd "$build/bld" && make -s sqlite3.h >/dev/null) || die "make sqlite3.h failed"
	# The VFS with its WAL chunk a variable of the glue's (WZ_TESTFIXTURE_WAL_CHUNK).
	for s in wzero_sqlite policy; do
		gcc "${cflags[@]}" -DWZS_DEFAULT_WAL_CHUNK_BYTES=wz_testfixture_wal_chunk_bytes \
			-include "$repo/fstests/src/sqlite_testfixture_init.h" \
			-c "$repo/lib/plugins/sqlite/$s.c" -o "$obj/$s.o" || die "compiling $s.c failed"
	done
	gcc "${cflags[@]}" -c "$repo/fstests/src/sqlite_testfixture_init.c" -o "$obj/sqlite_testfixture_init.o" ||
		die "compiling sqlite_testfixture_init.c failed"
	(cd "$build/bld" && rm -f testfixture && make -s -j "$(nproc)" testfixture \
		OPTS="-DSQLITE_EXTRA_INIT=wz_testfixture_init" \
		TLIBS="$obj/sqlite_testfixture_init.o $obj/wzero_sqlite.o $obj/policy.o -L$libdir -Wl,-rpath,$libdir -lwzero -lm -ldl -lpthread -lz" \
		>"$build/make.log" 2>&1) || { tail -n 30 "$build/make.log" >&2; die "make testfixture failed"; }
	cp "$build/bld/testfixture" "$build/testfixture" && echo "$key" >"$build/testfixture.key"
}

fetch
build_fixture
echo "sqlite-testsuite: SQLite $version testfixture in $build/testfixture"
[ "$build_only" = 1 ] && exit 0

own_work=0
if [ -z "$work" ]; then
	work=$(mktemp -d) || die "mktemp failed"
	own_work=1
fi
mkdir -p "$work" || die "cannot create $work"
expected=$repo/tools/sqlite-testsuite.expected

# run_file RUN FILE: runs FILE in $work/RUN/FILE/, RUN being wzero (the VFS as it ships),
# nochunk (the VFS growing files to exactly what SQLite writes) or unix (SQLite's own);
# prints "ERRORS TESTS FAILED-NAME..." ("- -" when the run printed no summary: it stopped
# part-way).
run_file() { # run file
	local vfs=$1 f=$2 dir=$work/$1/${2%.test} summary
	# The caller's own settings of the two never reach a run.
	local env=(-u WZ_TESTFIXTURE_VFS -u WZ_TESTFIXTURE_WAL_CHUNK)
	rm -rf "$dir" && mkdir -p "$dir"
	case $vfs in
	wzero) env+=(WZ_TESTFIXTURE_VFS=wzero) ;;
	nochunk) env+=(WZ_TESTFIXTURE_VFS=wzero WZ_TESTFIXTURE_WAL_CHUNK=0) ;;
	esac
	(cd "$dir" && env "${env[@]}" timeout -k 10 1800 "$build/testfixture" "$build/src/test/$f") \
		>"$dir/out.txt" 2>&1 </dev/null
	summary=$(sed -n 's/^\([0-9]*\) errors out of \([0-9]*\) tests.*/\1 \2/p' "$dir/out.txt" | tail -n 1)
	[ -n "$summary" ] || summary="- -"
	echo "$summary $(sed -n 's/^!Failures on these tests: *//p' "$dir/out.txt" | tail -n 1)"
}

# The names of FILE's failures that the expected list explains.
explained_names() { # file
	awk -F'|' -v f="$1" '$1 !~ /^ *#/ && NF >= 3 { gsub(/ /, "", $1); gsub(/ /, "", $2); if ($1 == f) print $2 }' \
		"$expected" 2>/dev/null
}

unexplained_total=0
for f in "${tests[@]}"; do
	[ -f "$build/src/test/$f" ] || { echo "$f: no such test file in SQLite $version"; unexplained_total=$((unexplained_total + 1)); continue; }
	started=$SECONDS
	read -r w_err w_tests w_failed <<<"$(run_file wzero "$f")"
	line="$f: wzero $w_err errors of $w_tests tests"
	unexplained=() as_unix=() size_only=() listed=()
	if [ "$w_err" != 0 ]; then
		read -r u_err u_tests u_failed <<<"$(run_file unix "$f")"
		read -r n_err n_tests n_failed <<<"$(run_file nochunk "$f")"
		line+="; unix $u_err of $u_tests; no chunk $n_err of $n_tests"
		mapfile -t known < <(explained_names "$f")
		if [ "$w_err" = - ]; then
			# Stopped part-way: explained when the run without the chunk went to the end (a
			# size), when SQLite's own stopped as well, or when the list says so ("stopped").
			if [ "$n_err" != - ]; then
				size_only+=("(stopped)")
			elif [ "$u_err" = - ] || printf '%s\n' "${known[@]}" | grep -qx stopped; then
				listed+=("(stopped)")
			else
				unexplained+=("(stopped part-way: $(grep -v '^ *$' "$work/wzero/${f%.test}/out.txt" | tail -n 1 | cut -c1-120))")
			fi
		fi
		for n in $w_failed; do
			case " $u_failed " in *" $n "*) as_unix+=("$n"); continue ;; esac
			if printf '%s\n' "${known[@]}" | grep -qx -- "$n"; then
				listed+=("$n")
			elif [ "$n_err" != - ] && case " $n_failed " in *" $n "*) false ;; *) true ;; esac; then
				size_only+=("$n")
			else
				unexplained+=("$n")
			fi
		done
	fi
	[ ${#as_unix[@]} -gt 0 ] && line+="; also with unix: ${as_unix[*]}"
	[ ${#listed[@]} -gt 0 ] && line+="; listed: ${listed[*]}"
	[ ${#size_only[@]} -gt 0 ] && line+="; pass with no chunk: ${size_only[*]}"
	if [ ${#unexplained[@]} -gt 0 ]; then
		line+="; unexplained: ${unexplained[*]}"
		unexplained_total=$((unexplained_total + ${#unexplained[@]}))
	fi
	echo "$line ($((SECONDS - started)) s)"
done
echo "sqlite-testsuite: ${#tests[@]} files, $unexplained_total unexplained failures"
if [ "$own_work" = 1 ] && [ "$unexplained_total" = 0 ]; then
	rm -rf "$work"
elif [ "$unexplained_total" != 0 ]; then
	echo "sqlite-testsuite: the runs' output is in $work/{wzero,nochunk,unix}/NAME/out.txt" >&2
fi
[ "$unexplained_total" = 0 ]
