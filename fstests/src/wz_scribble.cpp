// SPDX-License-Identifier: MIT
// wz_scribble: a process that writes blocks at random into a file while wzero works on it, and
// the check that none of its writes was lost (generic/009, generic/010).
//
//   wz_scribble write [--hold | --reopen] [--stop FILE] [--seconds S] [--max N] [--seed N]
//                     [--pause-us U] [--ready FILE] PATH LOG OFFSET:LENGTH...
//       Writes 4096-byte blocks at random 4096-aligned offsets inside the regions, each stamped
//       with its sequence number and offset (never zeroes), each a buffered pwrite followed by
//       fsync, as a database writes its pages. After every write whose pwrite and fsync both
//       succeeded it appends "OFFSET SEQ" to LOG: what the file must hold afterwards. --hold
//       (default) opens PATH once and keeps it open; --reopen opens it (O_WRONLY) for every write
//       and closes it after, so that an exclusive lease held by another process makes each open
//       wait. --ready FILE is created once the first write is done (and, with --hold, while the
//       file is open). Between writes it pauses U microseconds (default 200; with --reopen the
//       file is closed meanwhile). Stops after N writes, S seconds (default 60) or once FILE
//       appeared.
//       stdout: "writes W", "write_errors E", "fsync_errors F", "open_max_ms M" (the longest
//       open: how long a lease made the writer wait). Exit status 0 when every call succeeded.
//   wz_scribble check PATH LOG
//       Reads, with O_DIRECT (the device's answer, not the page cache's), every block LOG names
//       and compares it with the last write logged there. stdout: "checked N", "lost L"; the
//       first lost blocks to stderr. Exit status 0 when none was lost.

#include "tool_args.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr std::size_t block = 4096;

struct region {
    std::uint64_t offset = 0, length = 0;
};

int usage() {
    std::fprintf(stderr, "usage: wz_scribble write [--hold|--reopen] [--stop FILE] [--seconds S] [--max N] "
                         "[--seed N] [--pause-us U] [--ready FILE] PATH LOG OFFSET:LENGTH...\n"
                         "       wz_scribble check PATH LOG\n");
    return 2;
}

// The block written as write SEQ at OFFSET: 64-bit words alternating SEQ and OFFSET + 1.
void stamp(unsigned char* buf, std::uint64_t seq, std::uint64_t offset) {
    for (std::size_t i = 0; i < block; i += 16) {
        const std::uint64_t a = seq;
        const std::uint64_t b = offset + 1;
        std::memcpy(buf + i, &a, 8);
        std::memcpy(buf + i + 8, &b, 8);
    }
}

bool exists(const std::string& path) { return !path.empty() && ::access(path.c_str(), F_OK) == 0; }

int write_mode(int argc, char** argv) {
    bool reopen = false;
    std::string stop, ready;
    std::uint64_t seconds = 60, max = UINT64_MAX, seed = 1, pause_us = 200;
    int i = 2;
    for (; i < argc && argv[i][0] == '-'; ++i) {
        const std::string a = argv[i];
        if (a == "--hold") {
            reopen = false;
        } else if (a == "--reopen") {
            reopen = true;
        } else if (a == "--stop" && i + 1 < argc) {
            stop = argv[++i];
        } else if (a == "--ready" && i + 1 < argc) {
            ready = argv[++i];
        } else if ((a == "--seconds" || a == "--max" || a == "--seed" || a == "--pause-us") && i + 1 < argc) {
            std::uint64_t v = 0;
            if (!parse_u64(argv[++i], v)) {
                return usage();
            }
            (a == "--seconds" ? seconds : a == "--max" ? max : a == "--seed" ? seed : pause_us) = v;
        } else {
            return usage();
        }
    }
    if (argc - i < 3) {
        return usage();
    }
    const std::string path = argv[i], log_path = argv[i + 1];
    std::vector<region> regions;
    for (int k = i + 2; k < argc; ++k) {
        const char* colon = std::strchr(argv[k], ':');
        region r;
        if (colon == nullptr || !parse_u64(std::string(argv[k], static_cast<std::size_t>(colon - argv[k])).c_str(), r.offset) ||
            !parse_u64(colon + 1, r.length) || r.offset % block != 0 || r.length < block) {
            return usage();
        }
        regions.push_back(r);
    }
    std::unique_ptr<FILE, int (*)(FILE*)> log(std::fopen(log_path.c_str(), "a"), std::fclose);
    if (!log) {
        std::perror(log_path.c_str());
        return 1;
    }
    int held = -1;
    if (!reopen) {
        held = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
        if (held < 0) {
            std::perror(path.c_str());
            return 1;
        }
    }
    std::mt19937_64 rng(seed * 1000003 + static_cast<std::uint64_t>(::getpid()));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    std::uint64_t writes = 0, write_errors = 0, fsync_errors = 0;
    double open_max_ms = 0;
    unsigned char buf[block];
    while (writes < max && std::chrono::steady_clock::now() < deadline && !exists(stop)) {
        const region& where = regions[rng() % regions.size()];
        const std::uint64_t off = where.offset + (rng() % (where.length / block)) * block;
        const std::uint64_t seq = writes + 1;
        stamp(buf, seq, off);
        int fd = held;
        if (reopen) {
            const auto t0 = std::chrono::steady_clock::now();
            fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
            const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            open_max_ms = std::max(open_max_ms, ms);
            if (fd < 0) {
                std::fprintf(stderr, "open %s: %s\n", path.c_str(), std::strerror(errno));
                ++write_errors;
                break;
            }
        }
        ++writes;
        bool ok = true;
        if (::pwrite(fd, buf, block, static_cast<off_t>(off)) != static_cast<ssize_t>(block)) {
            std::fprintf(stderr, "pwrite %s at %llu: %s\n", path.c_str(), static_cast<unsigned long long>(off),
                         std::strerror(errno));
            ++write_errors;
            ok = false;
        } else if (::fsync(fd) != 0) {
            std::fprintf(stderr, "fsync %s after a write at %llu: %s\n", path.c_str(),
                         static_cast<unsigned long long>(off), std::strerror(errno));
            ++fsync_errors;
            ok = false;
        }
        if (ok) {
            std::fprintf(log.get(), "%llu %llu\n", static_cast<unsigned long long>(off),
                         static_cast<unsigned long long>(seq));
            (void)std::fflush(log.get());  // wz: ignored-error (the check reads what reached the log)
        }
        if (reopen && ::close(fd) != 0) {
            ++write_errors;
        }
        if (writes == 1 && !ready.empty()) {
            const int marker = ::open(ready.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
            if (marker >= 0) {
                (void)::close(marker);  // wz: ignored-error (an empty marker file)
            }
        }
        std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
    }
    if (held >= 0 && ::close(held) != 0) {
        ++write_errors;
    }
    std::printf("writes %llu\nwrite_errors %llu\nfsync_errors %llu\nopen_max_ms %.1f\n",
                static_cast<unsigned long long>(writes), static_cast<unsigned long long>(write_errors),
                static_cast<unsigned long long>(fsync_errors), open_max_ms);
    return write_errors == 0 && fsync_errors == 0 ? 0 : 1;
}

int check_mode(int argc, char** argv) {
    if (argc != 4) {
        return usage();
    }
    std::map<std::uint64_t, std::uint64_t> last;  // offset -> the last sequence number logged there
    std::unique_ptr<FILE, int (*)(FILE*)> log(std::fopen(argv[3], "r"), std::fclose);
    if (!log) {
        std::perror(argv[3]);
        return 1;
    }
    unsigned long long off = 0, seq = 0;
    while (std::fscanf(log.get(), "%llu %llu", &off, &seq) == 2) {
        last[off] = seq;  // in log order: a later write to the same block wins
    }
    const int fd = ::open(argv[2], O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (fd < 0) {
        std::perror(argv[2]);
        return 1;
    }
    void* mem = nullptr;
    if (::posix_memalign(&mem, block, block) != 0) {
        return 1;
    }
    std::unique_ptr<unsigned char, decltype(&std::free)> buf(static_cast<unsigned char*>(mem), std::free);
    unsigned char want[block];
    std::uint64_t lost = 0;
    for (const auto& [o, s] : last) {
        stamp(want, s, o);
        const ssize_t n = ::pread(fd, buf.get(), block, static_cast<off_t>(o));
        if (n != static_cast<ssize_t>(block) || std::memcmp(buf.get(), want, block) != 0) {
            if (lost < 10) {
                std::uint64_t got = 0;
                if (n >= 8) {
                    std::memcpy(&got, buf.get(), 8);
                }
                std::fprintf(stderr, "lost: the block at %llu should hold write %llu; it holds %s %llu\n",
                             static_cast<unsigned long long>(o), static_cast<unsigned long long>(s),
                             n != static_cast<ssize_t>(block) ? "a short read," : "a block starting with",
                             static_cast<unsigned long long>(got));
            }
            ++lost;
        }
    }
    (void)::close(fd);  // wz: ignored-error (read-only)
    std::printf("checked %zu\nlost %llu\n", last.size(), static_cast<unsigned long long>(lost));
    return lost == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        return usage();
    }
    const std::string mode = argv[1];
    if (mode == "write") {
        return write_mode(argc, argv);
    }
    if (mode == "check") {
        return check_mode(argc, argv);
    }
    return usage();
}
