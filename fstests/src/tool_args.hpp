// SPDX-License-Identifier: MIT
#pragma once

// Command-line numbers for the test tools: a whole decimal string, no sign, no overflow.

#include <cerrno>
#include <cstdint>
#include <cstdlib>

inline bool parse_u64(const char* s, std::uint64_t& out) {
    if (s == nullptr || *s == '\0' || *s == '-') {
        return false;
    }
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0') {
        return false;
    }
    out = v;
    return true;
}
