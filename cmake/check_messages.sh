#!/bin/bash
# SPDX-License-Identifier: MIT
# Library words in the library: the library's messages speak of its API
# (preallocate_options::force, WZ_ZERO_FORCE), and the CLI adds its own options as hints from
# the error's reason (wz::error_reason), never from the message text. Two rules, outside tests
# (*_test.*, lib/testing/):
# - no string literal in lib/ names a CLI option ("--force") or a wzero command
#   ("wzero alloc"): comments may (they are for maintainers);
# - no source in lib/ or tools/ decides on an error's text: .find(), == and the like on a
#   message, what(), ToString() or wz_last_error(), or strstr()/strcmp() on one.
# Prints each offence as FILE:LINE: ... and exits 1 if there is any.
# Usage: check_messages.sh SOURCE_DIR
set -euo pipefail
cd "$1"
status=0

sources() { # dir...
	find "$@" -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.c' -o -name '*.h' \) \
		! -name '*_test.cpp' ! -name '*_test.c' ! -path 'lib/testing/*' -print | sort
}

# The string literals of each file (comments skipped, raw strings included), one per line as
# FILE:LINE: "...", that name a CLI option or a wzero command.
mapfile -t lib_files < <(sources lib)
[ "${#lib_files[@]}" -gt 50 ] || { echo "messages.lint: only ${#lib_files[@]} sources in lib/: wrong tree?"; exit 1; }
flags=$(perl -0777 -ne '
	my $line = 1;
	while (/\G(?:(R"([^(\s]*)\((.*?)\)\2")|("(?:[^"\\\n]|\\.)*")|(\x27(?:[^\x27\\\n]|\\.)*\x27)|(\/\/[^\n]*)|(\/\*.*?\*\/)|(\n)|(.))/gcs) {
		my $lit = defined $1 ? $1 : $4;
		if (defined $lit && $lit =~ /(?<![\w-])--[a-z][a-z0-9-]*|\bwzero (?:alloc|stat|map|verify|bench|fallocate|write)\b/) {
			print "$ARGV:$line: $lit\n";
		}
		my $text = $&;
		$line += ($text =~ tr/\n//);
	}
' "${lib_files[@]}")
if [ -n "$flags" ]; then
	printf '%s\n' "$flags" | sed 's/$/ (a CLI option or command in a library message: say it in API terms; the CLI adds its hint from error_reason)/'
	status=1
fi

# Decisions on message text, in the library and the CLI.
mapfile -t all_files < <(sources lib tools)
text='(message|what\(\)|ToString\(\)|wz_last_error\(\))'
decisions=$(grep -nE "${text}\)?[[:space:]]*(\.(r?find|starts_with|ends_with|compare|contains|substr)\(|[!=]=)|str(n?cmp|str|casestr)\([^;]*${text}" \
	"${all_files[@]}" || true)
if [ -n "$decisions" ]; then
	printf '%s\n' "$decisions" | sed 's/$/ (a decision on message text: decide on the code and error_reason)/'
	status=1
fi

[ "$status" = 0 ] && echo "messages.lint: ${#lib_files[@]} library sources speak API terms; ${#all_files[@]} sources decide on codes, not text"
exit "$status"
