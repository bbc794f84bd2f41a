#!/bin/bash
# SPDX-License-Identifier: MIT
# cmake/check_fstests_new.sh SRC: fstests/new in a throw-away copy of SRC/fstests makes the
# next numbered test of a directory with its preamble and a golden output it passes; it
# refuses an unknown group, directory or VM configuration and then writes nothing.
# ctest fstests.new.
set -euo pipefail
src=$1/fstests
work=$(mktemp -d "${TMPDIR:-/tmp}/wz-fstests-new.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -a "$src/new" "$src/common" "$src/doc" "$src/tests" "$src/vm" "$work/"
fst=$work
bad=0
fail() { echo "fstests.new: $*"; bad=1; }

# Expected: one past the highest number in tests/host.
last=$(find "$fst/tests/host" -maxdepth 1 -name '[0-9][0-9][0-9]' -printf '%f\n' | sort | tail -n 1)
want=$(printf '%03d' $((10#$last + 1)))
out=$("$fst/new" host auto quick) || fail "new host auto quick failed"
[ "$out" = "fstests/tests/host/$want" ] || fail "printed '$out', expected fstests/tests/host/$want"
t=$fst/tests/host/$want
[ -x "$t" ] || fail "$t missing or not executable"
[ "$(cat "$t.out" 2>/dev/null)" = "QA output created by $want" ] || fail "$t.out is not the QA line alone"
[ "$(sed -n 1p "$t")" = '#!/bin/bash' ] || fail "no #!/bin/bash first"
grep -qx '# SPDX-License-Identifier: MIT' "$t" || fail "no SPDX line"
{ [ "$(grep -c '^# groups:' "$t")" = 1 ] && grep -qx '# groups: auto quick' "$t"; } || fail "groups line wrong"
grep -qx '\. \./common/rc' "$t" || fail "does not source common/rc"
grep -qx '_begin' "$t" || fail "no _begin"
# The new test passes as made: run it as check does (a stand-in wzero: it runs none).
res=$work/results
mkdir -p "$res"
if ! (cd "$fst" && WZERO=/bin/true repo=$work seq=host/$want seqres=$res/$want bash "$t") >"$res/out" 2>&1; then
    fail "the new test failed: $(head -n 3 "$res/out")"
fi
cmp -s "$res/out" "$t.out" || fail "the new test's output differs from its .out: $(head -n 3 "$res/out")"
# Twice: the number after the one just made.
out=$("$fst/new" host auto) || fail "second new failed"
[ "$out" = "fstests/tests/host/$(printf '%03d' $((10#$want + 1)))" ] || fail "second test is $out"
# nvme: the VM configuration line and _require_nvme.
out=$("$fst/new" nvme auto nvme --vm-configs new-A old-A) || fail "new nvme failed"
grep -qx '# vm-configs: new-A old-A' "$fst/${out#fstests/}" || fail "$out has no vm-configs line"
grep -qx '_require_nvme' "$fst/${out#fstests/}" || fail "$out does not _require_nvme"
# Refusals write nothing.
before=$(find "$fst/tests" -type f | sort | md5sum)
for args in "host no-such-group" "host" "hots auto" "nvme auto --vm-configs no-such-config" \
    "host auto --vm-configs new-A"; do
    # shellcheck disable=SC2086 # words of the case
    if "$fst/new" $args >/dev/null 2>&1; then fail "new $args succeeded"; fi
done
[ "$(find "$fst/tests" -type f | sort | md5sum)" = "$before" ] || fail "a refused new wrote a file"
[ $bad = 0 ] || exit 1
echo "fstests.new: made host/$want and the next, nvme with its configurations; refusals write nothing"
