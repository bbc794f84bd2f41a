// SPDX-License-Identifier: MIT
// wz_neighbour: a test tool for generic/004 and generic/007 and bench/neighbours.sh, a process
// that writes next to a range while wzero zeroes it, as a database writing its own records
// beside a preallocated file region.
//
//   wz_neighbour [--stop FILE] [--seconds S] [--rounds N] [--direct] [--interval-us U]
//                PATH OFFSET:LENGTH...
//
// Each round writes LENGTH bytes of one value at every OFFSET of PATH (buffered pwrite, or
// O_DIRECT with --direct: offsets and lengths then multiples of 4096), then fsyncs. The value
// of round R is 1 + R % 255 (never 0, so the bytes can never pass for the zeroes of a
// neighbouring range). It stops after the round in which FILE appeared, after S seconds
// (default 60) or after N rounds (default: no limit), whichever comes first. --interval-us
// starts a round at most every U microseconds (a paced writer, as a database's log is, rather
// than one that saturates the device; default 0: back to back).
//
// stdout, one line each: "rounds R", "last_byte V" (the value of the last round, decimal),
// "fsync_failures F", then the latency of a round (its writes and its fsync, measured on the
// monotonic clock): "p50_us", "p99_us", "max_us". A failed fsync is counted and the loop goes
// on (a writer that keeps writing after an error is what meets the next one); its errno goes
// to stderr.
// Exit status: 0 when every pwrite and fsync succeeded, 1 otherwise or on bad usage.

#include "tool_args.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

struct region {
    std::uint64_t offset = 0;
    std::size_t length = 0;
};

int usage() {
    std::fprintf(stderr, "usage: wz_neighbour [--stop FILE] [--seconds S] [--rounds N] [--direct] "
                         "[--interval-us U] PATH OFFSET:LENGTH...\n");
    return 1;
}

constexpr std::uint64_t direct_align = 4096;

struct free_deleter {
    void operator()(void* p) const { std::free(p); }
};

// The value at quantile q of sorted samples (nearest rank), 0 for none.
double quantile(const std::vector<double>& sorted, double q) {
    if (sorted.empty()) {
        return 0;
    }
    const auto rank = static_cast<std::size_t>(q * static_cast<double>(sorted.size()));
    return sorted[std::min(rank, sorted.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
    std::string stop_file;
    std::uint64_t seconds = 60;
    std::uint64_t max_rounds = 0;
    std::uint64_t interval_us = 0;
    bool direct = false;
    int i = 1;
    for (; i + 1 < argc && std::strncmp(argv[i], "--", 2) == 0; i += 2) {
        const std::string opt = argv[i];
        if (opt == "--direct") {
            direct = true;
            --i;  // takes no value
        } else if (opt == "--interval-us") {
            if (!parse_u64(argv[i + 1], interval_us)) {
                return usage();
            }
        } else if (opt == "--stop") {
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
            !parse_u64(arg.substr(colon + 1).c_str(), len) || len == 0 || len > (1U << 20) ||
            (direct && (off % direct_align != 0 || len % direct_align != 0))) {
            return usage();
        }
        regions.push_back({off, static_cast<std::size_t>(len)});
    }
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));
    if (fd < 0) {
        std::fprintf(stderr, "wz_neighbour: open %s: %s\n", path.c_str(), std::strerror(errno));
        return 1;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    // One buffer for the largest region, aligned for O_DIRECT either way.
    std::size_t buf_bytes = direct_align;
    for (const auto& r : regions) {
        buf_bytes = std::max(buf_bytes, (r.length + direct_align - 1) / direct_align * direct_align);
    }
    void* raw = nullptr;
    if (::posix_memalign(&raw, direct_align, buf_bytes) != 0) {
        std::fprintf(stderr, "wz_neighbour: out of memory\n");
        return 1;
    }
    const std::unique_ptr<unsigned char, free_deleter> buf(static_cast<unsigned char*>(raw));
    std::vector<double> latencies_us;
    auto next_start = std::chrono::steady_clock::now();
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
        if (interval_us != 0) {
            std::this_thread::sleep_until(next_start);
            next_start += std::chrono::microseconds(interval_us);
        }
        ++rounds;
        last_byte = 1 + static_cast<unsigned>(rounds % 255);
        std::memset(buf.get(), static_cast<int>(last_byte), buf_bytes);
        const auto t0 = std::chrono::steady_clock::now();
        for (const auto& r : regions) {
            const ssize_t n = ::pwrite(fd, buf.get(), r.length, static_cast<off_t>(r.offset));
            if (n != static_cast<ssize_t>(r.length)) {
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
        latencies_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
        if (stopping) {
            break;
        }
    }
    std::sort(latencies_us.begin(), latencies_us.end());
    std::printf("rounds %llu\nlast_byte %u\nfsync_failures %llu\np50_us %.1f\np99_us %.1f\nmax_us %.1f\n",
                static_cast<unsigned long long>(rounds), last_byte, static_cast<unsigned long long>(fsync_failures),
                quantile(latencies_us, 0.50), quantile(latencies_us, 0.99),
                latencies_us.empty() ? 0.0 : latencies_us.back());
    if (::close(fd) != 0) {
        std::fprintf(stderr, "wz_neighbour: close %s: %s\n", path.c_str(), std::strerror(errno));
        return 1;
    }
    return fsync_failures == 0 && !write_failed ? 0 : 1;
}
