// SPDX-License-Identifier: MIT
#pragma once

// The zeroing calls behind wz::preallocate() and wz::allocate() (include/wzero/wzero.hpp says
// what each does), run in the caller's descriptor table and on the caller's thread: the public
// calls are these inside the entry wrapper (api/entry.hpp), and the lifecycle calls (db/) use
// them from within theirs.

#include <wzero/wzero.hpp>

#include <cstdint>
#include <string>

namespace wz::zero {

// How a run makes its range durable when options.sync asks.
struct sync_plan {
    // Empty: by the run's own fdatasync (and an NVMe Flush after passthrough writes on a
    // write-back cache). Otherwise the journal (target::ordered_journal) whose commit, forced
    // when a new file's name is published right after the run, makes the range durable with
    // the name: the run sends no fdatasync of its own. Only for a file nobody else can reach
    // before that, whose name is published, durably, by the caller.
    std::string by_name_commit;
};

result<preallocate_report> preallocate(int fd, const std::string& path, std::uint64_t offset, std::uint64_t length,
                                       const preallocate_options& options, preallocate_report* partial,
                                       const sync_plan& sync = {});
result<preallocate_report> preallocate(const std::string& path, std::uint64_t offset, std::uint64_t length,
                                       const preallocate_options& options, preallocate_report* partial);

result<preallocate_report> allocate(int fd, const std::string& path, std::uint64_t offset, std::uint64_t length,
                                    const preallocate_options& options, preallocate_report* partial);
result<preallocate_report> allocate(const std::string& path, std::uint64_t offset, std::uint64_t length,
                                    const preallocate_options& options, preallocate_report* partial);

}  // namespace wz::zero
