// SPDX-License-Identifier: MIT
// wz::stat() and wz::write_cache(): the capability record and the write cache of a file or
// block device (record/).

#include "api/entry.hpp"
#include "record/record.hpp"
#include "util/cached_only.hpp"

#include <wzero/wzero.hpp>

#include <fmt/format.h>

namespace wz {

// The probes reopen the file (an O_DIRECT read of the alignment, the path's descriptors). A
// record of a descriptor whose filesystem and device were asked about before comes from the
// caches and opens nothing (statx, fstatfs, an ioctl on FD): tried in place first.
result<capabilities> stat(int fd, const std::string& path, const stat_options& options) {
    if (!options.refresh) {
        cached_only::attempt in_place;
        auto r = record::of(fd, path, options);
        if (!in_place.missed()) {
            return r;
        }
    }
    return api::entry<result<capabilities>>(fmt::format("stat {}", path), {fd},
                                            [&](private_fd_table&) { return record::of(fd, path, options); });
}

result<capabilities> stat(const std::string& path, const stat_options& options) {
    return api::entry<result<capabilities>>(fmt::format("stat {}", path), {},
                                            [&](private_fd_table&) { return record::of(path, options); });
}

// Called before each acknowledgement: a fresh answer opens nothing and starts no thread; a
// device not asked about before is probed in a table of its own (record::write_cache).
result<write_cache_state> write_cache(int fd, const std::string& path, std::chrono::nanoseconds max_age) {
    return record::write_cache(fd, path, max_age);
}

}  // namespace wz
