// SPDX-License-Identifier: MIT
#pragma once

// The database file lifecycle behind wz::zero_range(), wz::extend(), wz::rezero() and
// wz::create_zeroed() (include/wzero/wzero.hpp says what each does), run in the caller's
// descriptor table and on the caller's thread: the public calls are these inside the entry
// wrapper (api/entry.hpp).

#include <wzero/wzero.hpp>

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace wz::db {

status zero_range(int fd, std::uint64_t offset, std::uint64_t length, const preallocate_options& options,
                  preallocate_report* report);
status extend(int fd, std::uint64_t new_size, const preallocate_options& options, preallocate_report* report);
status rezero(int fd, std::uint64_t offset, std::uint64_t length, const preallocate_options& options,
              preallocate_report* report);
status create_zeroed(int dirfd, const std::string& path, std::uint64_t size, mode_t mode,
                     const preallocate_options& options, preallocate_report* report);

}  // namespace wz::db
