#!/bin/bash
# SPDX-License-Identifier: MIT
# Checks every private include of lib/ and of the CLI against cmake/layers: a source under a
# listed folder may include "F/..." only from its own folder, from the folders its line names,
# or from testing/; and the list itself has no cycle (tsort). Prints each wrong-way include
# as FILE:LINE: #include "...", (folder X may not include Y) and exits 1 if there is any.
# Usage: check_layering.sh SOURCE_DIR
set -euo pipefail
src=$1
layers=$src/cmake/layers
status=0

declare -A allowed
pairs=()
while read -r folder deps; do
	allowed[$folder]=" $deps "
	pairs+=("$folder $folder")
	for d in $deps; do
		[ -n "${allowed[$d]+x}" ] || {
			echo "cmake/layers: $folder names $d before its own line (bottom first)"
			status=1
		}
		pairs+=("$d $folder")
	done
done < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$layers")
if ! printf '%s\n' "${pairs[@]}" | tsort >/dev/null 2>&1; then
	echo "cmake/layers: the list has a cycle"
	status=1
fi

# Every folder of lib/ with sources must be listed (testing/ and plugins/ aside: the first is
# the tests' helpers, the second uses the public API only, checked below).
for dir in "$src"/lib/*/; do
	name=$(basename "$dir")
	case $name in testing | plugins) continue ;; esac
	[ -n "${allowed[$name]+x}" ] || {
		echo "lib/$name: not in cmake/layers"
		status=1
	}
done

check_file() { # file folder
	local f=$1 folder=$2 line inc dep
	while IFS=: read -r line inc; do
		dep=${inc#*\"}
		dep=${dep%%/*}
		[ "$dep" = "$folder" ] || [ "$dep" = testing ] && continue
		case ${allowed[$folder]} in *" $dep "*) continue ;; esac
		echo "${f#"$src"/}:$line: $inc (folder $folder may not include $dep)"
		status=1
	done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*/' "$f" || true)
}

for folder in "${!allowed[@]}"; do
	case $folder in */*) dir=$src/$folder ;; *) dir=$src/lib/$folder ;; esac
	[ -d "$dir" ] || {
		echo "cmake/layers: $folder: no such folder"
		status=1
		continue
	}
	while IFS= read -r -d '' f; do
		check_file "$f" "$folder"
	done < <(find "$dir" -maxdepth 1 -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.c' -o -name '*.h' \) -print0)
done

# The plugins use the public API only: no private header of lib/ at all.
while IFS= read -r -d '' f; do
	allowed[plugins]=" "
	check_file "$f" plugins
done < <(find "$src/lib/plugins" -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.c' -o -name '*.h' \) -print0)

exit "$status"
