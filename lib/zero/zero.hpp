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

result<preallocate_report> preallocate(int fd, const std::string& path, std::uint64_t offset, std::uint64_t length,
                                       const preallocate_options& options, preallocate_report* partial);
result<preallocate_report> preallocate(const std::string& path, std::uint64_t offset, std::uint64_t length,
                                       const preallocate_options& options, preallocate_report* partial);

result<preallocate_report> allocate(int fd, const std::string& path, std::uint64_t offset, std::uint64_t length,
                                    const preallocate_options& options, preallocate_report* partial);
result<preallocate_report> allocate(const std::string& path, std::uint64_t offset, std::uint64_t length,
                                    const preallocate_options& options, preallocate_report* partial);

}  // namespace wz::zero
