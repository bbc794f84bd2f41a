// SPDX-License-Identifier: MIT
// Private to the library: the process's I/O engine (see wz::select_io_engine in wzero.hpp)
// and the fallback from io_uring to psync when a ring setup is refused after the choice.
#pragma once

#include <wzero/wzero.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace wz::io {

// WZERO_ENGINE's value: nullopt when it is none of "io_uring", "psync", "auto" (or empty).
[[nodiscard]] std::optional<io_engine_request> parse_engine_request(std::string_view text);

// A ring setup failed with `errnum` (positive) after io_uring had been chosen. If the choice
// was automatic and the errno is one that retrying will not fix (EPERM, EACCES, ENOSYS,
// EMFILE, ENFILE, ENOMEM), the process moves to psync for good, the reason naming `what`
// and the errno, and this returns true: the caller redoes the operation on psync. Otherwise
// (io_uring asked for, or another errno) false: the caller reports the error.
[[nodiscard]] bool fall_back_to_psync(int errnum, std::string_view what);

// Why io_uring cannot be set up on this machine right now (the probe's message), or nullopt
// when a ring can be set up. Uncached: every call sets up and tears down a small ring.
[[nodiscard]] std::optional<std::string> probe_io_uring();

// select_io_engine() naming where the request came from in the reason ("--engine psync").
status select_engine(io_engine_request request, std::string_view source);

// current_io_engine().engine without its lock and copy, for the paths taken on every write.
[[nodiscard]] io_engine current_engine_kind();

// For tests: forget the choice, as in a new process.
void reset_engine_for_testing();

}  // namespace wz::io
