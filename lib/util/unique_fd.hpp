// SPDX-License-Identifier: MIT
#pragma once

#include <unistd.h>

#include <cerrno>

#include <utility>

namespace wz {

// A move-only owner of a file descriptor. The destructor closes best-effort;
// close() returns the error for callers that must see it. close() is never retried
// on EINTR: on Linux the descriptor is gone either way.
class unique_fd {
public:
    unique_fd() noexcept = default;
    explicit unique_fd(int fd) noexcept : fd_(fd) {}
    unique_fd(const unique_fd&) = delete;
    unique_fd& operator=(const unique_fd&) = delete;
    unique_fd(unique_fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    unique_fd& operator=(unique_fd&& other) noexcept {
        if (this != &other) {
            reset(std::exchange(other.fd_, -1));
        }
        return *this;
    }
    ~unique_fd() { reset(); }

    [[nodiscard]] int get() const noexcept { return fd_; }
    [[nodiscard]] bool valid() const noexcept { return fd_ >= 0; }
    explicit operator bool() const noexcept { return valid(); }
    int release() noexcept { return std::exchange(fd_, -1); }
    void reset(int fd = -1) noexcept {
        if (fd_ >= 0) {
            (void)::close(fd_);  // wz: ignored-error (best-effort close in destructor/reset)
        }
        fd_ = fd;
    }
    // Returns 0 or -errno.
    int close() noexcept {
        int fd = std::exchange(fd_, -1);
        if (fd >= 0 && ::close(fd) != 0) {
            return -errno;
        }
        return 0;
    }

private:
    int fd_ = -1;
};

}  // namespace wz
