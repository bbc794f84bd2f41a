// SPDX-License-Identifier: MIT
#pragma once

// What preallocate(PATH) and allocate(PATH) share: opening the name once (claiming a block
// device exclusively: target/target.hpp), exclusive use of an existing file, and building a
// missing one where nobody sees it until it is complete. The caller's table is the one these
// run in: callers wrap them in private_fd_table (util/private_fd_table.hpp) as the public calls
// do.

#include "zero/zero.hpp"

#include <wzero/wzero.hpp>

#include <cstdint>
#include <functional>
#include <string>

namespace wz::zero {

// preallocate() on a descriptor, in the current descriptor table.
result<preallocate_report> preallocate_in_place(int fd, const std::string& path, std::uint64_t offset,
                                                std::uint64_t length, const preallocate_options& options,
                                                preallocate_report* partial, const sync_plan& sync);

// A run on FD, made durable as SYNC says when its options ask.
using on_descriptor =
    std::function<result<preallocate_report>(int fd, const sync_plan& sync, preallocate_report* partial)>;

// Opens PATH for writing as preallocate(PATH) does and calls `run` on the descriptor. An
// existing regular file is held under an exclusive write lease for the run, as
// options.exclusive asks (zero/exclusive.hpp; KEEP_DATA: allocate(), which refuses where leases
// are unavailable). A missing name is built unnamed (target/target.hpp unnamed_file, mode 0666
// less the umask) and linked when `run` succeeds, in one journal commit with what the run did
// where the filesystem allows (target::ordered_journal); a dry run plans on an unnamed file
// and creates nothing.
result<preallocate_report> run_on_path(const std::string& path, std::uint64_t offset, std::uint64_t length,
                                       const preallocate_options& options, preallocate_report* partial,
                                       const on_descriptor& run, bool keep_data);

// Calls `run` on the caller's descriptor FD: with an exclusive write lease for the run when
// options.exclusive and the descriptor allow (zero/exclusive.hpp: automatic takes it only
// when FD's description is the file's only one), already held by an enclosing call or not.
result<preallocate_report> run_on_descriptor(int fd, const std::string& path, std::uint64_t offset,
                                             std::uint64_t length, const preallocate_options& options,
                                             preallocate_report* partial, const on_descriptor& run, bool keep_data);

}  // namespace wz::zero
