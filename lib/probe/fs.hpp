// SPDX-License-Identifier: MIT
#pragma once

#include <wzero/wzero.hpp>

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace wz::fsprobe {

struct mount_entry {
    std::string target, source, fstype, options;
    dev_t devno = 0;
};
// The mount holding `path` (libmount over /proc/self/mountinfo), matched by st_dev
// first and by the longest target prefix second.
result<mount_entry> find_mount(const std::string& path, dev_t st_dev);

// fs_info::fallocate from the filesystem's traits and, where the extents flag decides
// (fallocate_support::extents_flag), the file's FS_IOC_GETFLAGS flags (nullopt or flags_err != 0: they could not be read). Pure, for unit tests.
void assess_fallocate(fs_info& info, std::optional<int> inode_flags, int flags_err);

// Fills fs_info for an open regular file. The mount entry is cached per st_dev (parsing
// mountinfo is most of a cached stat's cost); `refresh` re-reads it.
result<fs_info> probe_fs(int fd, const std::string& path, dev_t st_dev, bool refresh);

}  // namespace wz::fsprobe
