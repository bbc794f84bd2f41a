// SPDX-License-Identifier: MIT
// wz_hostile: what a hostile neighbour does to wzero, for the safety tests (host/011, host/012).
//
//   wz_hostile swap DIR NAME1 NAME2 SECONDS
//       Exchanges the two names in DIR with renameat2(RENAME_EXCHANGE) as fast as it can, for
//       at most SECONDS (or until SIGTERM), then prints the number of exchanges. A tool that
//       checks a path and then opens it by name again can be made to open the other one.
//   wz_hostile hold DEVICE SECONDS
//       Opens DEVICE O_RDONLY | O_EXCL (the exclusive claim mkfs, mount and blkdiscard take),
//       prints "held", and keeps it for at most SECONDS (or until SIGTERM).
//   wz_hostile truncate PATH SIZE
//       truncate(2) of PATH to SIZE bytes, by name: the call waits while another process holds
//       an exclusive lease on the file (coreutils' and busybox's truncate(1) open the file with
//       O_NONBLOCK instead, and fail with EWOULDBLOCK). Prints how long it waited, in ms.
//
// All stop by themselves: a test that dies never leaves them running for long (a truncate
// waits at most /proc/sys/fs/lease-break-time, then the kernel breaks the lease).

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

std::atomic<bool> stop{false};

extern "C" void on_term(int) { stop.store(true); }

int usage() {
    std::fprintf(stderr, "usage: wz_hostile swap DIR NAME1 NAME2 SECONDS | hold DEVICE SECONDS | truncate PATH SIZE\n");
    return 2;
}

int swap(const char* dir, const char* a, const char* b, double seconds) {
    const int dfd = ::open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        std::fprintf(stderr, "wz_hostile: open %s: %s\n", dir, std::strerror(errno));
        return 1;
    }
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    unsigned long n = 0;
    while (!stop.load() && std::chrono::steady_clock::now() < end) {
        // glibc 2.36 has renameat2(), but the raw call keeps this independent of its headers.
        if (::syscall(SYS_renameat2, dfd, a, dfd, b, RENAME_EXCHANGE) != 0) {
            std::fprintf(stderr, "wz_hostile: renameat2 %s %s: %s\n", a, b, std::strerror(errno));
            return 1;
        }
        ++n;
    }
    // An even number of exchanges leaves the names as they were.
    if (n % 2 == 1 && ::syscall(SYS_renameat2, dfd, a, dfd, b, RENAME_EXCHANGE) == 0) {
        ++n;
    }
    std::printf("%lu\n", n);
    return 0;
}

int truncate_by_name(const char* path, const char* size_text) {
    char* end = nullptr;
    errno = 0;
    const long long size = std::strtoll(size_text, &end, 10);
    if (errno != 0 || end == size_text || *end != '\0' || size < 0) {
        return usage();
    }
    const auto t0 = std::chrono::steady_clock::now();
    if (::truncate(path, static_cast<off_t>(size)) != 0) {
        std::fprintf(stderr, "wz_hostile: truncate %s to %lld: %s\n", path, size, std::strerror(errno));
        return 1;
    }
    std::printf("%.1f\n", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    return 0;
}

int hold(const char* dev, double seconds) {
    const int fd = ::open(dev, O_RDONLY | O_EXCL | O_CLOEXEC);
    if (fd < 0) {
        std::fprintf(stderr, "wz_hostile: open %s O_EXCL: %s\n", dev, std::strerror(errno));
        return 1;
    }
    std::printf("held\n");
    std::fflush(stdout);
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!stop.load() && std::chrono::steady_clock::now() < end) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    (void)::close(fd);  // wz: ignored-error (read-only descriptor)
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    struct sigaction sa {};
    sa.sa_handler = on_term;
    sigemptyset(&sa.sa_mask);
    (void)sigaction(SIGTERM, &sa, nullptr);  // wz: ignored-error (then SIGTERM just kills)
    (void)sigaction(SIGINT, &sa, nullptr);   // wz: ignored-error
    if (argc == 6 && std::string(argv[1]) == "swap") {
        return swap(argv[2], argv[3], argv[4], std::atof(argv[5]));
    }
    if (argc == 4 && std::string(argv[1]) == "hold") {
        return hold(argv[2], std::atof(argv[3]));
    }
    if (argc == 4 && std::string(argv[1]) == "truncate") {
        return truncate_by_name(argv[2], argv[3]);
    }
    return usage();
}
