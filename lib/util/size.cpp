// SPDX-License-Identifier: MIT
#include "util/size.hpp"

#include "util/errors.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstddef>
#include <limits>

namespace wz {

namespace {

constexpr std::uint64_t max_u64 = std::numeric_limits<std::uint64_t>::max();

error_info invalid_size(std::string_view text) {
    return make_error_msg(EINVAL, fmt::format("invalid size '{}'", text));
}

error_info size_too_large(std::string_view text) {
    return make_error_msg(ERANGE, fmt::format("size '{}' is too large", text));
}

// isspace() in the C locale: what strtoumax() skips before the number.
bool is_c_space(char c) noexcept {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool is_digit(char c) noexcept {
    return c >= '0' && c <= '9';
}

bool is_hex_digit(char c) noexcept {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// Multiplies x by base^power; false on overflow (x is then partly scaled, as in util-linux's
// do_scale_by_power(), but we never use it).
bool scale_by_power(std::uint64_t& x, std::uint64_t base, int power) noexcept {
    for (int i = 0; i < power; ++i) {
        if (max_u64 / base < x) {
            return false;
        }
        x *= base;
    }
    return true;
}

// strtoumax(text + pos, &end, 0) without locale or errno: `end` is the index just past the
// number, npos when there are no digits.
struct parsed_number {
    std::size_t end = std::string_view::npos;
    std::uint64_t value = 0;
    bool overflow = false;
};

parsed_number parse_c_number(std::string_view text, std::size_t pos) {
    while (pos < text.size() && is_c_space(text[pos])) {
        ++pos;
    }
    if (pos < text.size() && text[pos] == '+') {
        ++pos;
    }
    int base = 10;
    if (pos < text.size() && text[pos] == '0') {
        // C's base-0 rules: "0x" needs a hex digit after it, else the "0" alone is the number.
        if (pos + 2 < text.size() && (text[pos + 1] == 'x' || text[pos + 1] == 'X') && is_hex_digit(text[pos + 2])) {
            pos += 2;
            base = 16;
        } else {
            base = 8;
        }
    }
    parsed_number out;
    const char* first = text.data() + pos;
    const char* last = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(first, last, out.value, base);
    if (ec == std::errc::invalid_argument) {
        return out;
    }
    out.end = static_cast<std::size_t>(ptr - text.data());
    out.overflow = ec == std::errc::result_out_of_range;
    return out;
}

}  // namespace

result<std::uint64_t> parse_size(std::string_view text) {
    // A C string ends at the first NUL; silently parsing a prefix of what we were given would hide a bug.
    if (text.empty() || text.find('\0') != std::string_view::npos) {
        return invalid_size(text);
    }
    std::size_t p = 0;
    while (p < text.size() && is_c_space(text[p])) {
        ++p;
    }
    // strtoumax() would negate "-1" into a huge value; util-linux refuses the sign up front.
    if (p < text.size() && text[p] == '-') {
        return invalid_size(text);
    }
    const parsed_number number = parse_c_number(text, 0);
    if (number.end == std::string_view::npos) {
        return invalid_size(text);
    }
    if (number.overflow) {
        return size_too_large(text);
    }
    std::uint64_t x = number.value;
    p = number.end;
    if (p == text.size()) {
        return x;  // plain bytes
    }

    // Past the end reads as NUL, as it does in util-linux's C string.
    auto at = [&text](std::size_t i) { return i < text.size() ? text[i] : '\0'; };
    std::uint64_t base = 1024;
    std::uint64_t frac = 0;
    int frac_zeros = 0;
    // util-linux's check_suffix loop: a '.' may be consumed (once a fraction is non-zero, never
    // again) before the unit letter, which must be last or be followed by exactly "iB" or "B".
    for (;;) {
        if (p >= text.size()) {
            // "1.0": a fraction with neither digits that count nor a unit (util-linux reads past
            // the terminator here, and rejects "1.5" in the same position).
            return invalid_size(text);
        }
        if (at(p + 1) == 'i' && (at(p + 2) == 'B' || at(p + 2) == 'b') && p + 3 == text.size()) {
            base = 1024;
        } else if ((at(p + 1) == 'B' || at(p + 1) == 'b') && p + 2 == text.size()) {
            base = 1000;
        } else if (p + 1 < text.size()) {
            if (frac != 0 || text[p] != '.') {
                return invalid_size(text);
            }
            // Leading zeros are counted, not parsed, so "0.05" is frac 5 with one zero.
            for (++p; at(p) == '0'; ++p) {
                ++frac_zeros;
            }
            if (is_digit(at(p))) {
                std::size_t digits_end = p;
                while (is_digit(at(digits_end))) {
                    ++digits_end;
                }
                // util-linux: a fraction longer than 64 bits hold fails strtoumax() with ERANGE.
                if (std::from_chars(text.data() + p, text.data() + digits_end, frac).ec ==
                    std::errc::result_out_of_range) {
                    return size_too_large(text);
                }
                if (digits_end == text.size()) {
                    return invalid_size(text);  // "1.5": a fraction needs a unit
                }
                p = digits_end;
            }
            continue;
        }
        break;
    }

    constexpr std::string_view upper_units = "KMGTPEZY";
    constexpr std::string_view lower_units = "kmgtpezy";
    std::size_t unit = upper_units.find(text[p]);
    if (unit == std::string_view::npos) {
        unit = lower_units.find(text[p]);
    }
    if (unit == std::string_view::npos) {
        return invalid_size(text);
    }
    const int power = static_cast<int>(unit) + 1;
    if (!scale_by_power(x, base, power)) {
        return size_too_large(text);
    }
    if (frac == 0) {
        return x;
    }

    // From here on util-linux's arithmetic, digit by digit, including its rounding.
    std::uint64_t frac_base = 1;
    if (!scale_by_power(frac_base, base, power)) {
        // util-linux goes on with a partly scaled unit ("0.5Z" = 2^59): a wrong answer, not ours.
        return size_too_large(text);
    }
    std::uint64_t frac_div = 10;
    while (frac_div < frac) {
        if (frac_div <= max_u64 / 10) {
            frac_div *= 10;
        } else {
            frac /= 10;
        }
    }
    for (int i = 0; i < frac_zeros; ++i) {
        if (frac_div <= max_u64 / 10) {
            frac_div *= 10;
        } else {
            frac /= 10;
        }
    }
    std::uint64_t frac_poz = 1;
    do {
        const std::uint64_t seg = frac % 10;
        const std::uint64_t seg_div = frac_div / frac_poz;
        frac /= 10;
        // frac_poz only overflows after the last digit, where it is no longer used.
        frac_poz *= 10;
        if (seg != 0 && seg_div / seg != 0) {
            const std::uint64_t add = frac_base / (seg_div / seg);
            // util-linux wraps here ("15.9E" = 0).
            if (x > max_u64 - add) {
                return size_too_large(text);
            }
            x += add;
        }
    } while (frac != 0);
    return x;
}

}  // namespace wz
