// SPDX-License-Identifier: MIT
#pragma once

#include <wzero/wzero.hpp>

#include <cstdint>
#include <string_view>

namespace wz {

// Parses a byte count exactly as util-linux v2.38.1's parse_size()/strtosize() (lib/strutils.c,
// the version behind Debian 12's `fallocate -l`; unchanged since v2.38) does, so that
// `wzero -l SIZE` and `fallocate -l SIZE` mean the same number of bytes. size_test.cpp holds
// util-linux's own vectors (tests/ts/misc/strtosize at v2.38.1) and our wider table, whose
// rows were checked against that fallocate; the test suite checks them again against the
// fallocate(1) installed on the machine.
//
//   - number: strtoumax(base 0) rules, so "0x10" is 16 and "010" is 8 (octal!), leading
//     whitespace and one '+' are skipped, '-' is rejected, trailing whitespace is not allowed;
//   - suffix K M G T P E Z Y (or k m g t p e z y), alone or followed by "iB"/"ib": powers
//     of 1024; followed by "B"/"b": powers of 1000. "B" alone, "KIB", "Ki" are invalid;
//   - fraction: only with a suffix ("1.5M"); "1.5" and "34.9Ki" are invalid. The fraction
//     is added digit by digit with util-linux's integer divisions, which are not exact:
//     "1.25M" = 1310719, "0.3K" = 341, and a last digit d with 10/d == 1 counts as a
//     whole unit, so "0.9G" = "0.10M"... = 1 GiB/1 MiB. We reproduce this on purpose:
//     the same string must give the same byte count as the util-linux tools.
//
// Deliberate differences, all cases where util-linux reads past the string or returns a
// wrapped or saturated number: a fraction with no digits and no suffix ("1.0", where
// util-linux 2.38 reads past the terminator; v2.42 made it EINVAL too, commit a9fbb9811) is
// EINVAL; a fractional size whose unit does not fit in 64 bits ("0.5Z") or whose fractional
// part overflows ("15.9E") is ERANGE instead of a wrong value; an embedded NUL is EINVAL.
// The decimal point is always '.', whatever the locale (util-linux follows LC_NUMERIC).
//
// Errors: EINVAL "invalid size 'TEXT'", ERANGE "size 'TEXT' is too large".
[[nodiscard]] result<std::uint64_t> parse_size(std::string_view text);

}  // namespace wz
