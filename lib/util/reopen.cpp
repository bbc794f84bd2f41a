// SPDX-License-Identifier: MIT
#include "util/reopen.hpp"

#include <fcntl.h>

#include <fmt/format.h>

#include <cerrno>

namespace wz {

std::string self_fd_path(int fd) { return fmt::format("/proc/self/fd/{}", fd); }

unique_fd reopen_self(int fd, int flags) {
    if (fd < 0) {
        errno = EBADF;
        return unique_fd();
    }
    return unique_fd(::open(self_fd_path(fd).c_str(), flags | O_CLOEXEC));
}

}  // namespace wz
