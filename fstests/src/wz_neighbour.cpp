// SPDX-License-Identifier: MIT
// wz_neighbour: a test tool for generic/004, a process that writes next to a range while
// wzero zeroes it, as a database writing its own records beside a preallocated file region.
//
//   wz_neighbour [--stop FILE] [--seconds S] [--rounds N] PATH OFFSET:LENGTH...
//
// Each round writes LENGTH bytes of one value at every OFFSET of PATH (buffered pwrite), then
// fsyncs. The value of round R is 1 + R % 255 (never 0, so the bytes can never pass for the
// zeroes of a neighbouring range). It stops after the round in which FILE appeared, after S
// seconds (default 60) or after N rounds (default: no limit), whichever comes first.
//
// stdout, one line each: "rounds R", "last_byte V" (the value of the last round, decimal),
// "fsync_failures F". A failed fsync is counted and the loop goes on (a writer that keeps
// writing after an error is what meets the next one); its errno goes to stderr.
// Exit status: 0 when every pwrite and fsync succeeded, 1 otherwise or on bad usage.

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct region {
    std::uint64_t offset = 0;
    std::size_t length = 0;
};

int usage() {
    std::fprintf(stderr, "usage: wz_neighbour [--stop FILE] [--seconds S] [--rounds N] PATH OFFSET:LENGTH...\n");
    return 1;
}

bool parse_u64(const char* s, std::uint64_t& out) {
    if (s == nullptr || *s == '\0') {
        return false;
    }
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || s[0] == '-') {
        return false;
    }
    out = v;
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    std::string stop_file;
    std::uint64_t seconds = 60;
    std::uint64_t max_rounds = 0;
    int i = 1;
    for (; i + 1 < argc && std::strncmp(argv[i], "--", 2) == 0; i += 2) {
        const std::string opt = argv[i];
        if (opt == "--stop") {
            stop_file = argv[i + 1];
        } else if (opt == "--seconds") {
            if (!parse_u64(argv[i + 1], seconds)) {
                return usage();
            }
        } else if (opt == "--rounds") {
            if (!parse_u64(argv[i + 1], max_rounds)) {
                return usage();
            }
        } else {
            return usage();
        }
    }
    if (argc - i < 2) {
        return usage();
    }
    const std::string path = argv[i++];
    std::vector<region> regions;
    for (; i < argc; ++i) {
        const std::string arg = argv[i];
        const auto colon = arg.find(':');
        std::uint64_t off = 0;
        std::uint64_t len = 0;
        if (colon == std::string::npos || !parse_u64(arg.substr(0, colon).c_str(), off) ||
            !parse_u64(arg.substr(colon + 1).c_str(), len) || len == 0 || len > (1U << 20)) {
            return usage();
        }
        regions.push_back({off, static_cast<std::size_t>(len)});
    }
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        std::fprintf(stderr, "wz_neighbour: open %s: %s\n", path.c_str(), std::strerror(errno));
        return 1;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    std::vector<unsigned char> buf;
    std::uint64_t rounds = 0;
    std::uint64_t fsync_failures = 0;
    bool write_failed = false;
    unsigned last_byte = 0;
    while (true) {
        // Looked at before the round: the round after FILE appeared is the last, so the
        // final bytes are written after every wzero run ended.
        const bool stopping = (!stop_file.empty() && ::access(stop_file.c_str(), F_OK) == 0) ||
                              std::chrono::steady_clock::now() >= deadline ||
                              (max_rounds != 0 && rounds + 1 >= max_rounds);
        ++rounds;
        last_byte = 1 + static_cast<unsigned>(rounds % 255);
        for (const auto& r : regions) {
            buf.assign(r.length, static_cast<unsigned char>(last_byte));
            const ssize_t n = ::pwrite(fd, buf.data(), buf.size(), static_cast<off_t>(r.offset));
            if (n != static_cast<ssize_t>(buf.size())) {
                std::fprintf(stderr, "wz_neighbour: pwrite %s [offset %llu, length %zu]: %s\n", path.c_str(),
                             static_cast<unsigned long long>(r.offset), r.length,
                             n < 0 ? std::strerror(errno) : "short write");
                write_failed = true;
            }
        }
        if (::fsync(fd) != 0) {
            std::fprintf(stderr, "wz_neighbour: fsync %s (round %llu): %s\n", path.c_str(),
                         static_cast<unsigned long long>(rounds), std::strerror(errno));
            ++fsync_failures;
        }
        if (stopping) {
            break;
        }
    }
    std::printf("rounds %llu\nlast_byte %u\nfsync_failures %llu\n", static_cast<unsigned long long>(rounds), last_byte,
                static_cast<unsigned long long>(fsync_failures));
    if (::close(fd) != 0) {
        std::fprintf(stderr, "wz_neighbour: close %s: %s\n", path.c_str(), std::strerror(errno));
        return 1;
    }
    return fsync_failures == 0 && !write_failed ? 0 : 1;
}
