// SPDX-License-Identifier: MIT
#include "util/json_text.hpp"

#include <fmt/format.h>

namespace wz {

namespace {

bool is_continuation(unsigned char c) {
    return (c & 0xC0) == 0x80;
}

// Length of the well-formed UTF-8 sequence at the start of `s`, or 0 if there is none
// (RFC 3629 section 4, the table of well-formed byte sequences).
std::size_t sequence_length(std::string_view s) {
    const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
    const unsigned char c = b(0);
    if (c < 0x80) {
        return 1;
    }
    std::size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;  // E0 80..9F: overlong
        hi = c == 0xED ? 0x9F : 0xBF;  // ED A0..BF: UTF-16 surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;  // F0 80..8F: overlong
        hi = c == 0xF4 ? 0x8F : 0xBF;  // F4 90..: above U+10FFFF
    } else {
        return 0;  // C0, C1 (overlong), F5..FF, or a continuation byte on its own
    }
    if (s.size() < n || b(1) < lo || b(1) > hi) {
        return 0;
    }
    for (std::size_t i = 2; i < n; ++i) {
        if (!is_continuation(b(i))) {
            return 0;
        }
    }
    return n;
}

}  // namespace

std::string escape_invalid_utf8(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    while (!bytes.empty()) {
        const std::size_t n = sequence_length(bytes);
        if (n == 0) {
            // One byte at a time: what follows a broken lead byte is looked at afresh.
            out += fmt::format("\\x{:02x}", static_cast<unsigned char>(bytes[0]));
            bytes.remove_prefix(1);
        } else {
            out.append(bytes.substr(0, n));
            bytes.remove_prefix(n);
        }
    }
    return out;
}

}  // namespace wz
