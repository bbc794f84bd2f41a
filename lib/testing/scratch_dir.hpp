// SPDX-License-Identifier: MIT
// Unit tests only: a scratch directory on a real filesystem (WZ_TEST_DIR, else /var/tmp:
// O_DIRECT and extents need one, so not /tmp, which may be tmpfs), removed afterwards.
#pragma once

#include <stdlib.h>  // mkdtemp

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

}  // namespace wz::testing
