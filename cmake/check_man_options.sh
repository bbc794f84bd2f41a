#!/bin/bash
# SPDX-License-Identifier: MIT
# The man pages stay the reference: every long option that a command's --help lists is
# named in its page (wzero(1) for wzero and each subcommand, wzero-fallocate(1) for
# wzero-fallocate), as groff writes it (\-\-name) or plain. Prints each option missing from
# its page and exits 1 if there is any.
# Usage: check_man_options.sh SOURCE_DIR WZERO_BINARY
set -euo pipefail
src=$1 wzero=$2
fallocate=$(dirname "$wzero")/wzero-fallocate
[ -x "$wzero" ] || { echo "man.options: no binary $wzero"; exit 1; }
[ -x "$fallocate" ] || { echo "man.options: no binary $fallocate"; exit 1; }
status=0
checked=0

# check PAGE LABEL COMMAND...: the long options of COMMAND --help against PAGE.
check() {
	local page=$1 label=$2 opt esc
	shift 2
	local help
	help=$("$@" --help) || { echo "man.options: $label --help failed"; status=1; return; }
	while read -r opt; do
		checked=$((checked + 1))
		esc=${opt//-/\\-}
		if ! grep -qF -e "$esc" -e "$opt" "$page"; then
			echo "$label: $opt is in --help but not in ${page#"$src"/}"
			status=1
		fi
	done < <(grep -oE -- '--[a-z][a-z0-9-]+' <<<"$help" | sort -u)
}

check "$src/man/wzero.1" wzero "$wzero"
for cmd in stat alloc map verify "bench write"; do
	# shellcheck disable=SC2086 # "bench write" is two words
	check "$src/man/wzero.1" "wzero $cmd" "$wzero" $cmd
done
check "$src/man/wzero-fallocate.1" wzero-fallocate "$fallocate"
[ "$checked" -gt 40 ] || { echo "man.options: only $checked options found: wrong binary?"; exit 1; }
exit "$status"
