// SPDX-License-Identifier: MIT
#pragma once

// What preallocate(PATH) and allocate(PATH) share: opening the name once (creating a missing
// regular file, claiming a block device exclusively: probe/target.hpp) and removing a file
// the run created when the run fails. The caller's table is the one these run in: callers
// wrap them in private_fd_table (util/private_fd_table.hpp) as the public calls do.

#include <wzero/wzero.hpp>

#include <cstdint>
#include <functional>
#include <string>

namespace wz::zero {

// preallocate() on a descriptor, in the current descriptor table.
result<preallocate_report> preallocate_in_place(int fd, const std::string& path, std::uint64_t offset,
                                                std::uint64_t length, const preallocate_options& options,
                                                preallocate_report* partial);

using on_descriptor = std::function<result<preallocate_report>(int fd, preallocate_report* partial)>;

// Opens PATH for writing as preallocate(PATH) does and calls `run` on the descriptor. A
// missing name is first planned on an unnamed file in its directory (the plan of
// preallocate() over [offset, offset + length) of an empty file, which is also what
// allocate() does to one), then created (mode 0666 less the umask); a failure of `run`
// removes a file created here. A dry run creates nothing.
result<preallocate_report> run_on_path(const std::string& path, std::uint64_t offset, std::uint64_t length,
                                       const preallocate_options& options, preallocate_report* partial,
                                       const on_descriptor& run);

}  // namespace wz::zero
