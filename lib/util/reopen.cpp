// SPDX-License-Identifier: MIT
#include "util/reopen.hpp"

#include "util/cached_only.hpp"

#include "util/write_lease.hpp"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>

namespace wz {

// /proc/thread-self, not /proc/self: /proc/self/fd is the thread group leader's table, and a
// call running in a table of its own (util/private_fd_table.hpp) opens descriptors there only.
std::string self_fd_path(int fd) { return fmt::format("/proc/thread-self/fd/{}", fd); }

std::string self_fd_name(int fd) {
    char buf[PATH_MAX];
    const ssize_t n = ::readlink(self_fd_path(fd).c_str(), buf, sizeof(buf));
    if (n <= 0 || static_cast<std::size_t>(n) >= sizeof(buf)) {
        return fmt::format("descriptor {}", fd);
    }
    return std::string(buf, static_cast<std::size_t>(n));
}

unique_fd reopen_self(int fd, int flags) {
    if (fd < 0) {
        errno = EBADF;
        return unique_fd();
    }
    // Answered in place from the caches (util/cached_only.hpp): its close would drop the
    // process's POSIX locks on the file, so the call goes through its worker instead.
    if (cached_only::refuse()) {
        errno = EAGAIN;
        return unique_fd();
    }
    // An open of a leased file would break the lease, this thread's own open included: the
    // leased description serves instead, with O_DIRECT as asked (it is open read-write).
    if (const write_lease* lease = write_lease::held_on(fd); lease != nullptr && (flags & O_PATH) == 0) {
        if (const int rc = lease->set_direct((flags & O_DIRECT) != 0); rc != 0) {
            errno = -rc;
            return unique_fd();
        }
        return unique_fd(::fcntl(lease->fd(), F_DUPFD_CLOEXEC, 0));
    }
    return unique_fd(::open(self_fd_path(fd).c_str(), flags | O_CLOEXEC));
}

}  // namespace wz
