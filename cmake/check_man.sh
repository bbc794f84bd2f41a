#!/bin/bash
# SPDX-License-Identifier: MIT
# The manual pages of man/ as a reader gets them:
# - each renders with no warning from groff -ww -man, nor from man(1) --warnings (man-db,
#   which also runs the preprocessors and resolves .so links as an installed page does);
# - each .so alias names a page that exists, and each page's NAME parses (lexgrog, what
#   mandb(8) reads to build whatis);
# - every function of include/wzero/wzero.h has a page (a page or a .so alias of its name),
#   and every page is in CMakeLists.txt's install lines;
# - every page's .TH names the project's version ("wzero VERSION"), so that a release
#   cannot ship pages that say another.
# Any line on stderr is a failure. Run by ctest as man.lint.
set -euo pipefail
src=$(readlink -f "${1:?usage: check_man.sh SOURCE_DIR VERSION}")
version=${2:?usage: check_man.sh SOURCE_DIR VERSION}
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
# .so requests name man3/PAGE relative to the manual's root, as installed pages do: lay the
# pages out that way so that groff and man resolve them.
ln -s "$src/man" "$root/man1"
ln -s "$src/man" "$root/man3"
cd "$root"
export LC_ALL=C.UTF-8 MANWIDTH=80 MANPAGER=cat PAGER=cat
fail=0
complain() {
  echo "$1: $2" >&2
  fail=1
}

pages=()
for f in "$src"/man/*.[0-9]; do
  pages+=("man${f##*.}/$(basename "$f")")
done
for p in "${pages[@]}"; do
  if ! out=$(groff -ww -z -man "$p" 2>&1) || [ -n "$out" ]; then
    complain "$p" "groff -ww -z -man: ${out:-non-zero exit}"
  fi
  if command -v man >/dev/null; then
    if ! out=$(man --warnings -l "$p" 2>&1 >/dev/null) || [ -n "$out" ]; then
      complain "$p" "man --warnings -l: ${out:-non-zero exit}"
    fi
  fi
  target=$(sed -n 's/^\.so  *//p' "$p")
  if [ -n "$target" ] && [ ! -f "$target" ]; then
    complain "$p" ".so $target: no such page"
  fi
  if [ -z "$target" ] && ! grep -q "^\.TH .* \"wzero $version\" " "$p"; then
    complain "$p" ".TH does not name \"wzero $version\", the project's version: $(grep -m1 '^\.TH' "$p")"
  fi
  if command -v lexgrog >/dev/null && ! lexgrog "$p" >/dev/null 2>&1; then
    complain "$p" "lexgrog: the NAME section does not parse"
  fi
  if ! grep -q "man/$(basename "$p")" "$src/CMakeLists.txt"; then
    complain "$p" "not installed: add it to the install(FILES ...) lines of CMakeLists.txt"
  fi
done

# One page (or .so alias) per C function.
while IFS= read -r fn; do
  [ -f "$src/man/$fn.3" ] || complain "include/wzero/wzero.h" "$fn has no man/$fn.3"
done < <(grep -v '^ *\(/\*\|\*\)' "$src/include/wzero/wzero.h" | grep -oE '\bwz_[a-z0-9_]+\(' | tr -d '(' | sort -u)

if [ "$fail" -ne 0 ]; then
  exit 1
fi
echo "man: ${#pages[@]} pages render without warnings, name wzero $version, every C function has one, all installed"
