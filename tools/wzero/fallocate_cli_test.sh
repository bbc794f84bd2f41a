#!/bin/bash
# SPDX-License-Identifier: MIT
# ctest cli.fallocate.*: wzero-fallocate without root or loop devices (fstests host/052 and
# host/053 compare it with util-linux's fallocate on ext4 and xfs).
#   verbose: the size in -v's line is util-linux's size_to_human_string(), byte for byte
#            (the oracle: `fallocate -v` on the same lengths);
#   usage:   dispatch on the name (wzero-fallocate, a link named fallocate), exit statuses
#            and the first words of the messages.
# Usage: fallocate_cli_test.sh WZERO SCRATCH_DIR verbose|usage
set -uo pipefail
wzero=$(readlink -f "$1")
scratch=$2
rm -rf "$scratch"
mkdir -p "$scratch/bin" || exit 1
cd "$scratch" || exit 1
ln -s "$wzero" bin/wzero-fallocate
ln -s "$wzero" bin/fallocate
wzf=$scratch/bin/wzero-fallocate
ul=$(command -v fallocate) || { echo "util-linux fallocate not found" >&2; exit 1; }
fail=0
check() { # label want got
	if [ "$2" != "$3" ]; then
		echo "FAIL $1: want '$2', got '$3'"
		fail=1
	else
		echo "ok   $1: $3"
	fi
}

case $3 in
verbose)
	for n in 1 512 1023 1024 1100 1500 1536 2047 10000 65535 100000 1048575 1048576 1100000 1310719 2000000; do
		want=$("$ul" -v -l "$n" "ul.$n" | sed -e "s/^ul\.$n: //" -e 's/ allocated\.$//')
		got=$("$wzf" -v -l "$n" "wz.$n" | head -n 1 | sed -e "s/^wz\.$n: //" -e 's/ allocated as written zeroes\.$//')
		check "-v -l $n" "$want" "$got"
	done
	;;
usage)
	run() { # args... : "STATUS FIRST-LINE-OF-STDERR"
		local rc
		"$wzf" "$@" >out 2>err
		rc=$?
		echo "$rc $(head -n 1 err)"
	}
	check "no argument" "1 wzero-fallocate: no filename specified" "$(run)"
	check "no length" "1 wzero-fallocate: no length argument specified" "$(run f)"
	check "try line" "Try 'wzero-fallocate --help' for more information." "$(tail -n 1 err)"
	check "invalid size" "1 wzero-fallocate: invalid length value specified: invalid size '32Gii'" \
		"$(run -l 32Gii f)"
	check "unknown option" "1 wzero-fallocate: invalid option -- 'q'" "$(run -q f)"
	check "ambiguous" "1 wzero-fallocate: option '--p' is ambiguous; possibilities: '--punch-hole' '--posix'" \
		"$(run --p -l 1M f)"
	check "exclusive" "1 wzero-fallocate: mutually exclusive arguments: --collapse-range --dig-holes --punch-hole --zero-range" \
		"$(run -z -p -l 1M f)"
	check "-x -z" "1 wzero-fallocate: mutually exclusive arguments: --posix --collapse-range --dig-holes --insert-range --keep-size --punch-hole --zero-range" \
		"$(run -x -z -l 1M f)"
	check "-w -n" "1 wzero-fallocate: mutually exclusive arguments: --keep-size --write-zeroes" "$(run -w -n -l 1M f)"
	check "punch refused" "2 wzero-fallocate: f: --punch-hole is not supported: it deallocates the range (a hole), the opposite of written zeroes; use util-linux's \`command fallocate\` for it" \
		"$(run -p -l 1M f)"
	[ -e f ] && check "refusal creates nothing" "no f" "f exists"
	check "create" "0 " "$(run -l 64K f)"
	check "keep past the end" "2" "$(run -n -l 1M f | cut -d' ' -f1)"
	check "keep inside" "0 " "$(run -n -l 64K f)"
	check "version" "wzero-fallocate from wzero" "$("$wzf" -V | sed 's/ [^ ]*$//')"
	check "help" "For more details see wzero-fallocate(1)." "$("$wzf" --help | tail -n 1)"
	check "named fallocate" "fallocate from wzero" "$("$scratch/bin/fallocate" --version | sed 's/ [^ ]*$//')"
	check "named fallocate, try line" "Try 'fallocate --help' for more information." \
		"$("$scratch/bin/fallocate" 2>&1 | tail -n 1)"
	check "wzero itself" "wzero: unknown command 'fallocate'" "$("$wzero" fallocate 2>&1 | head -n 1)"
	;;
*)
	echo "usage: $0 WZERO SCRATCH_DIR verbose|usage" >&2
	exit 1
	;;
esac
cd / && rm -rf "$scratch"
exit $fail
