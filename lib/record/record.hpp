// SPDX-License-Identifier: MIT
#pragma once

// The capability record (wz::capabilities) of an open file or block device, put together from
// the probes' facts (probe/), the plan's assessment of them (plan/assess.hpp) and the process's
// I/O engine (io/). These run in the caller's descriptor table: the library's own callers are
// already inside a public call's table (api/entry.hpp); wz::stat and wz::write_cache are these
// behind that wrapper.

#include <wzero/wzero.hpp>

#include <chrono>
#include <string>

namespace wz::record {

// wz::stat's record of FD, opened as PATH (PATH names it in messages and for the mount).
[[nodiscard]] result<capabilities> of(int fd, const std::string& path, const stat_options& options = {});
// The same for PATH, opened read-only (a block device without O_EXCL) and closed.
[[nodiscard]] result<capabilities> of(const std::string& path, const stat_options& options = {});

// wz::write_cache: the effective write cache of FD's device(s), read again when older than
// MAX_AGE. A device or filesystem not asked about before is probed whole, in a descriptor table
// of its own (the only opens this makes).
[[nodiscard]] result<write_cache_state> write_cache(int fd, const std::string& path, std::chrono::nanoseconds max_age);

}  // namespace wz::record
