// SPDX-License-Identifier: MIT
// wz_parse_size SIZE...: prints, per argument, what wz::parse_size() makes of it, one line
// each: the byte count, or EINVAL / ERANGE. fstests host/054 compares these with what
// util-linux's fallocate(1) does with the same strings.
#include "util/size.hpp"

#include <cerrno>
#include <cstdio>

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: wz_parse_size SIZE...\n");
        return 1;
    }
    for (int i = 1; i < argc; ++i) {
        const auto parsed = wz::parse_size(argv[i]);
        if (parsed.has_value()) {
            std::printf("%llu\n", static_cast<unsigned long long>(*parsed));
        } else {
            const int errnum = parsed.error().code.value();
            std::printf("%s\n", errnum == EINVAL ? "EINVAL" : errnum == ERANGE ? "ERANGE" : "other");
        }
    }
    return 0;
}
