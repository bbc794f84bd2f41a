// SPDX-License-Identifier: MIT
#pragma once

// Opening again the file a descriptor refers to, with other flags (O_DIRECT, read-write, an
// exclusive claim), through /proc/thread-self/fd/N: the same inode even when its name has been
// swapped or unlinked since, which a second open by name cannot promise. Works on O_PATH
// descriptors too, which is how target/target.hpp turns a checked O_PATH handle into an open
// file.

#include "util/unique_fd.hpp"

#include <string>

namespace wz {

// "/proc/thread-self/fd/N", for messages that say what was reopened.
[[nodiscard]] std::string self_fd_path(int fd);

// The name FD refers to now (the /proc/thread-self/fd link), for messages only: never opened again
// by it; "descriptor N" when the link cannot be read (a descriptor that is not open).
[[nodiscard]] std::string self_fd_name(int fd);

// open(2) of self_fd_path(fd) with `flags`; O_CLOEXEC is always added (no reopened descriptor
// leaks into a child). As open(2): an empty unique_fd with errno set on failure (EBADF for a
// negative fd; ENOENT for a number that is not open). While this thread holds a write lease on
// the file (util/write_lease.hpp), a dup() of the leased description instead, with O_DIRECT
// set or cleared on it as `flags` ask: opening the file again would break the lease.
[[nodiscard]] unique_fd reopen_self(int fd, int flags);

}  // namespace wz
