// SPDX-License-Identifier: MIT
#pragma once

// The one way into the library for a public call that opens files. The calls below api/ run in
// the caller's descriptor table and on the caller's thread; a public call runs them on a
// worker thread with a descriptor table of its own (util/private_fd_table.hpp: its opens and
// closes then keep the process's POSIX record locks), handed the caller's descriptors it names,
// and moves the caller's progress callback back to the caller's thread. Public functions that open nothing (to_string, to_json, version,
// current_io_engine) live with what they describe.

#include "util/private_fd_table.hpp"

#include <wzero/wzero.hpp>

#include <initializer_list>
#include <span>
#include <string>
#include <utility>

namespace wz::api {

// Runs `fn(options')` as the public call WHAT ("preallocate PATH": names it if the thread
// cannot be started), where options' is OPTIONS with its on_progress running on the caller.
// CALLER_FDS: every descriptor of the caller's that `fn` uses (the file's, a directory's;
// AT_FDCWD and other negative numbers are skipped): the body's table has those, at the same
// numbers, and no other of the caller's (util/private_fd_table.hpp).
template <class R, class Fn>
R entry(const std::string& what, std::initializer_list<int> caller_fds, const preallocate_options& options, Fn&& fn) {
    private_fd_table table;
    const preallocate_options o = progress_on_caller(options, table);
    return in_private_fd_table<R>(what, table, std::span<const int>(caller_fds.begin(), caller_fds.size()),
                                  [&] { return fn(o); });
}

// The same for a call without options: `fn(table)`, which may hand work to the caller's thread
// through table.on_caller().
template <class R, class Fn>
R entry(const std::string& what, std::initializer_list<int> caller_fds, Fn&& fn) {
    private_fd_table table;
    return in_private_fd_table<R>(what, table, std::span<const int>(caller_fds.begin(), caller_fds.size()),
                                  [&] { return fn(table); });
}

}  // namespace wz::api
