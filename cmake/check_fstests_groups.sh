#!/bin/bash
# SPDX-License-Identifier: MIT
# cmake/check_fstests_groups.sh SRC: every test under SRC/fstests/tests has one "# groups:"
# line, every group it names has its line in fstests/doc/group-names.txt, and every line
# there is a group some test uses, once (a list that says what each group means, as
# xfstests' doc/group-names.txt). ctest fstests.groups.
set -euo pipefail
fst=$1/fstests
list=$fst/doc/group-names.txt
[ -f "$list" ] || { echo "fstests.groups: $list missing" >&2; exit 1; }
bad=0
listed=$(sed -n 's/^\([a-z0-9_-][a-z0-9_-]*\)\([[:space:]].*\)\{0,1\}$/\1/p' "$list")
if dups=$(sort <<<"$listed" | uniq -d) && [ -n "$dups" ]; then
    echo "fstests.groups: listed twice in $list: ${dups//$'\n'/ }"
    bad=1
fi
# A line that is neither a comment nor "name<TAB>meaning".
if grep -vnE '^(#.*|[a-z0-9_-]+[[:space:]]+[^[:space:]].*)$' "$list"; then
    echo "fstests.groups: lines above in $list are not 'name  what its tests have in common'"
    bad=1
fi
tests=0
declare -A used=() known=()
while read -r g; do [ -n "$g" ] && known[$g]=1; done <<<"$listed"
for t in "$fst"/tests/*/[0-9][0-9][0-9]; do
    tests=$((tests + 1))
    name=${t#"$fst"/tests/}
    # One read of the file, in the shell: a grep and a sed per test were most of this
    # check's time on a loaded machine.
    n=0 line=
    while IFS= read -r l; do
        [[ $l == "# groups:"* ]] && { n=$((n + 1)); line=${l#"# groups:"}; }
    done <"$t"
    if [ "$n" != 1 ]; then
        echo "fstests.groups: $name has $n '# groups:' lines, not 1"
        bad=1
        continue
    fi
    read -r -a gs <<<"$line"
    [ ${#gs[@]} -gt 0 ] || { echo "fstests.groups: $name names no group"; bad=1; }
    for g in "${gs[@]}"; do
        used[$g]=1
        [ -n "${known[$g]:-}" ] || { echo "fstests.groups: $name: group '$g' is not in doc/group-names.txt"; bad=1; }
    done
done
[ $tests -gt 50 ] || { echo "fstests.groups: only $tests tests found under $fst/tests: wrong tree?"; exit 1; }
while read -r g; do
    [ -n "${used[$g]:-}" ] ||
        { echo "fstests.groups: '$g' is listed in doc/group-names.txt but no test uses it"; bad=1; }
done <<<"$listed"
[ $bad = 0 ] || exit 1
echo "fstests.groups: $tests tests, $(wc -l <<<"$listed") groups, all listed"
