// SPDX-License-Identifier: MIT
// parse_size (lib/util/size.hpp): any bytes as the size text. Properties, checked against
// arithmetic of our own (128-bit, so that no product wraps):
//   - an error is EINVAL or ERANGE and its message quotes the text;
//   - a plain number (no unit) is strtoumax's value of the whole text, base 0;
//   - with a unit and no fraction, the value is exactly number * 1024^n or 1000^n;
//   - with a fraction, number * unit <= value < (number + 2) * unit (util-linux's rounding
//     can pass number + 1 units: "0.999999999G" is 1182101901, size.hpp);
//   - whitespace before the text changes nothing, whitespace after it is refused;
//   - a size that parses parses to the same value in lower case.

#include "check.hpp"

#include "util/size.hpp"

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

using u128 = unsigned __int128;
constexpr u128 max_u64 = UINT64_MAX;

bool same(const wz::result<std::uint64_t>& a, const wz::result<std::uint64_t>& b) {
    if (a.has_value() != b.has_value()) {
        return false;
    }
    return a ? *a == *b : a.error().code == b.error().code;
}

// The number at the start (after C whitespace and one '+') in base 0, as strtoumax reads it,
// with its end; value capped just above UINT64_MAX.
struct number {
    u128 value = 0;
    std::size_t end = 0;
    bool any = false;
};
number leading_number(std::string_view t) {
    std::size_t p = 0;
    while (p < t.size() && (t[p] == ' ' || (t[p] >= '\t' && t[p] <= '\r'))) {
        ++p;
    }
    if (p < t.size() && t[p] == '+') {
        ++p;
    }
    unsigned base = 10;
    if (p < t.size() && t[p] == '0') {
        base = 8;
        if (p + 2 < t.size() && (t[p + 1] | 0x20) == 'x' && std::isxdigit(static_cast<unsigned char>(t[p + 2]))) {
            base = 16;
            p += 2;
        }
    }
    number n;
    for (; p < t.size(); ++p) {
        const char c = t[p];
        unsigned d = 99;
        if (c >= '0' && c <= '9') {
            d = static_cast<unsigned>(c - '0');
        } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
            d = static_cast<unsigned>((c | 0x20) - 'a' + 10);
        }
        if (d >= base) {
            break;
        }
        n.any = true;
        n.value = n.value * base + d;
        if (n.value > max_u64) {
            n.value = max_u64 + 1;
        }
    }
    n.end = p;
    return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const auto r = wz::parse_size(text);
    if (!r) {
        FUZZ_CHECK(r.error().code.value() == EINVAL || r.error().code.value() == ERANGE);
        FUZZ_CHECK(r.error().message.find("'" + text + "'") != std::string::npos);
    } else {
        FUZZ_CHECK(text.find('\0') == std::string::npos);
        FUZZ_CHECK(text.find('-') == std::string::npos);
        const number n = leading_number(text);
        FUZZ_CHECK(n.any && n.value <= max_u64);
        const std::string_view rest = std::string_view(text).substr(n.end);
        if (rest.empty()) {
            FUZZ_CHECK(*r == n.value);
        } else {
            // rest is [.fraction]UNIT[iB|B]; find the unit letter.
            const std::size_t u = rest.find_first_of("KMGTPEZYkmgtpezy");
            FUZZ_CHECK(u != std::string_view::npos);
            const std::string_view units = "kmgtpezy";
            const std::size_t power = units.find(static_cast<char>(rest[u] | 0x20)) + 1;
            const std::string_view after = rest.substr(u + 1);
            FUZZ_CHECK(after.empty() || after == "iB" || after == "ib" || after == "B" || after == "b");
            const u128 base = (after == "B" || after == "b") ? 1000 : 1024;
            u128 unit = 1;
            for (std::size_t i = 0; i < power; ++i) {
                unit *= base;  // 1024^8 = 2^80: fits in 128 bits
            }
            if (u == 0) {
                FUZZ_CHECK(*r == n.value * unit);
            } else {
                FUZZ_CHECK(rest[0] == '.');
                // Digits, and another '.' after a zero fraction ("1.0.5M").
                FUZZ_CHECK(rest.substr(0, u).find_first_not_of("0123456789.") == std::string_view::npos);
                FUZZ_CHECK(*r >= n.value * unit && *r < (n.value + 2) * unit);
            }
        }
        std::string lower = text;
        for (char& c : lower) {
            if (c >= 'A' && c <= 'Z') {
                c = static_cast<char>(c | 0x20);
            }
        }
        const auto l = wz::parse_size(lower);
        FUZZ_CHECK(l && *l == *r);
    }
    if (!text.empty()) {
        FUZZ_CHECK(same(wz::parse_size(" \t" + text), r));
    }
    FUZZ_CHECK(!wz::parse_size(text + " "));
    return 0;
}
