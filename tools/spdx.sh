#!/bin/bash
# SPDX-License-Identifier: MIT
# SPDX licence identifiers on every source file of the repository.
#   tools/spdx.sh --check   list files without one; exit 1 if any (run by ctest)
#   tools/spdx.sh --add     add the line where it is missing (after a #! line, as a comment
#                           in the file's own syntax)
# Data files (golden .out files, recorded Identify pages, fuzz seeds, tables, the licence,
# Markdown) carry none: they are not code, and a comment would change what they hold.
set -euo pipefail
mode=${1:?usage: tools/spdx.sh --check|--add}
cd "$(dirname "$0")/.."
id='SPDX-License-Identifier: MIT'

comment_for() {
  case $1 in
    *.c | *.h | *.map) echo "/* $id */" ;;
    *.cpp | *.hpp) echo "// $id" ;;
    *.1 | *.3) echo ".\\\" $id" ;;
    *) echo "# $id" ;;
  esac
}

skipped() {
  case $1 in
    LICENSE | *.md | *.out | *.hex | *.table | *.gitignore | lib/probe/testdata/README | fuzz/corpus/*) return 0 ;;
    # Debian's data files: formats of their own (changelog, DEP-5 copyright, symbols, file
    # lists, lintian overrides, the ABI baseline); debian/copyright names the licence.
    debian/changelog | debian/copyright | debian/source/format | debian/*.symbols | debian/*.install | \
      debian/*.docs | debian/not-installed | debian/*.lintian-overrides | debian/*.abi) return 0 ;;
    *) return 1 ;;
  esac
}

files=()
while IFS= read -r f; do
  skipped "$f" && continue
  [ -f "$f" ] && files+=("$f")
done < <(git ls-files)
# One awk over every file, not a head and a grep per file (a thousand processes were most of
# this check's time on a loaded machine). An empty file has no first line to carry it.
missing=()
while IFS= read -r f; do
  missing+=("$f")
done < <(
  for f in "${files[@]}"; do [ -s "$f" ] || printf '%s\n' "$f"; done
  awk 'FNR == 1 { if (name != "" && !found) print name; name = FILENAME; found = 0 }
       FNR <= 5 && /SPDX-License-Identifier:/ { found = 1 }
       END { if (name != "" && !found) print name }' "${files[@]}"
)

if [ "$mode" = --check ]; then
  if [ ${#missing[@]} -gt 0 ]; then
    printf 'no SPDX-License-Identifier in the first 5 lines: %s\n' "${missing[@]}" >&2
    exit 1
  fi
  echo "spdx: every source file carries an SPDX-License-Identifier"
  exit 0
fi

for f in "${missing[@]}"; do
  line=$(comment_for "$f")
  tmp=$(mktemp)
  if head -n 1 "$f" | grep -q '^#!'; then
    { head -n 1 "$f"; echo "$line"; tail -n +2 "$f"; } >"$tmp"
  elif [[ $f == *.1 || $f == *.3 ]] && head -n 1 "$f" | grep -q "^'\\\\\""; then
    { head -n 1 "$f"; echo "$line"; tail -n +2 "$f"; } >"$tmp"
  else
    { echo "$line"; cat "$f"; } >"$tmp"
  fi
  chmod --reference="$f" "$tmp"
  mv "$tmp" "$f"
  echo "added: $f"
done
