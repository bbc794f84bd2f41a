// SPDX-License-Identifier: MIT
// The database file lifecycle from the command line, for fstests (generic/006, host/023):
//   wz_lifecycle zero|rezero PATH OFFSET LENGTH [--no-sync]
//   wz_lifecycle extend PATH SIZE
//   wz_lifecycle create DIR NAME SIZE MODE(octal)
// Prints one line "ok: kernel=N nvme_deac=N nvme=N zeroout=N write=N verified=yes|no|unset"
// or "error: ERRNO-NAME" (exit 1); the report's decisions and the message go to stderr.
#include <wzero/wzero.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

std::uint64_t num(const char* s, int base = 10) { return std::strtoull(s, nullptr, base); }

int finish(const wz::status& st, const wz::preallocate_report& rep) {
    for (const auto& d : rep.decisions) {
        std::fprintf(stderr, "decision: %s\n", d.c_str());
    }
    if (!st.ok()) {
        std::fprintf(stderr, "%s\n", st.error().message.c_str());
        std::printf("error: %s\n", strerrorname_np(st.code().value()) != nullptr ? strerrorname_np(st.code().value())
                                                                                : "?");
        return 1;
    }
    auto by = [&](wz::zero_method m) {
        auto it = rep.bytes_by_method.find(m);
        return static_cast<unsigned long long>(it == rep.bytes_by_method.end() ? 0 : it->second);
    };
    std::printf("ok: kernel=%llu nvme_deac=%llu nvme=%llu zeroout=%llu write=%llu verified=%s\n",
                by(wz::zero_method::kernel), by(wz::zero_method::nvme_deac), by(wz::zero_method::nvme),
                by(wz::zero_method::zeroout), by(wz::zero_method::write),
                !rep.verified.has_value() ? "unset" : (*rep.verified ? "yes" : "no"));
    return 0;
}

int usage() {
    std::fprintf(stderr, "usage: wz_lifecycle zero|rezero PATH OFFSET LENGTH [--no-sync]\n"
                         "       wz_lifecycle extend PATH SIZE\n"
                         "       wz_lifecycle create DIR NAME SIZE MODE\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 4) {
        return usage();
    }
    const std::string op = argv[1];
    wz::preallocate_report rep;
    wz::preallocate_options opt;
    if (op == "create") {
        if (argc != 6) {
            return usage();
        }
        const int dir = ::open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0) {
            std::perror(argv[2]);
            return 1;
        }
        const int rc = finish(wz::create_zeroed(dir, argv[3], num(argv[4]), static_cast<mode_t>(num(argv[5], 8)),
                                                opt, &rep),
                              rep);
        ::close(dir);
        return rc;
    }
    struct stat st {};
    if (::stat(argv[2], &st) != 0) {
        std::perror(argv[2]);
        return 1;
    }
    // A block device is claimed exclusively, as wzero alloc does.
    const int fd = ::open(argv[2], O_RDWR | O_CLOEXEC | (S_ISBLK(st.st_mode) ? O_EXCL : 0));
    if (fd < 0) {
        std::perror(argv[2]);
        return 1;
    }
    int rc = 2;
    if (op == "extend" && argc == 4) {
        rc = finish(wz::extend(fd, num(argv[3]), opt, &rep), rep);
    } else if ((op == "zero" || op == "rezero") && (argc == 5 || argc == 6)) {
        if (argc == 6 && std::strcmp(argv[5], "--no-sync") == 0) {
            opt.sync = false;
        } else if (argc == 6) {
            ::close(fd);
            return usage();
        }
        rc = finish(op == "zero" ? wz::zero_range(fd, num(argv[3]), num(argv[4]), opt, &rep)
                                 : wz::rezero(fd, num(argv[3]), num(argv[4]), opt, &rep),
                    rep);
    } else {
        rc = usage();
    }
    ::close(fd);
    return rc;
}
