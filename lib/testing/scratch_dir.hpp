// SPDX-License-Identifier: MIT
// Unit tests only: a scratch directory on a real filesystem (WZ_TEST_DIR, else /var/tmp:
// O_DIRECT and extents need one, so not /tmp, which may be tmpfs), removed afterwards.
#pragma once

#include <fcntl.h>
#include <stdlib.h>  // mkdtemp
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace wz::testing {

inline std::filesystem::path test_base() {
    const char* d = std::getenv("WZ_TEST_DIR");
    return (d != nullptr && *d != '\0') ? std::filesystem::path(d) : std::filesystem::path("/var/tmp");
}

class scratch_dir {
public:
    explicit scratch_dir(const std::string& prefix = "wz_test") {
        std::string tmpl = (test_base() / (prefix + ".XXXXXX")).string();
        if (::mkdtemp(tmpl.data()) == nullptr) {
            throw std::system_error(errno, std::system_category(), "mkdtemp " + tmpl);
        }
        path_ = tmpl;
    }
    scratch_dir(const scratch_dir&) = delete;
    scratch_dir& operator=(const scratch_dir&) = delete;
    ~scratch_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);  // wz: ignored-error (best-effort cleanup)
    }
    [[nodiscard]] const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

// The whole content of PATH ("" if it cannot be opened), read through the page cache.
inline std::string contents(const std::string& path) {
    std::string out;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    char buf[65536];
    ssize_t n = 0;
    while (fd >= 0 && (n = ::read(fd, buf, sizeof(buf))) > 0) {
        out.append(buf, static_cast<std::size_t>(n));
    }
    if (fd >= 0) {
        ::close(fd);
    }
    return out;
}

}  // namespace wz::testing
