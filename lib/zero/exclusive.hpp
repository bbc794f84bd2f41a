// SPDX-License-Identifier: MIT
#pragma once

// When a run zeroes parts of an existing file it takes exclusive use of it first (the write
// lease of util/write_lease.hpp), as preallocate_options::exclusive asks: what the public calls
// share, and the one place that decides whether a missing lease refuses the run.

#include "util/write_lease.hpp"

#include <wzero/wzero.hpp>

#include <cstdint>
#include <string>

namespace wz::zero {

struct exclusive_request {
    bool by_path = false;    // the call opened the file itself (a path-based call)
    bool keep_data = false;  // allocate(): the range is mapped first and zeroed after
};

// Takes LEASE on FD (a regular file; anything else is left alone) as OPTIONS.exclusive and the
// call ask. Sets rep.exclusive_use and adds the decision line; an error refuses the run before
// any I/O: EBUSY while another process has the file open or mapped (naming the processes /proc
// shows), ENOLCK where leases are unavailable and keep-data zeroing needs one, EBADF for a
// descriptor that is not open read-write when a lease is required. WHAT begins the message
// ("allocate PATH [offset O, length L]").
status take_exclusive_use(write_lease& lease, int fd, const std::string& what, const preallocate_options& options,
                          exclusive_request request, preallocate_report& rep);

// The error of a run that stopped because its lease was broken: someone opened or truncated the
// file, and waits for the run to let go of it.
[[nodiscard]] error_info lease_broken_error(const std::string& what);

}  // namespace wz::zero
