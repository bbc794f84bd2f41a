#pragma once

#include <wzero/wzero.hpp>

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace wz::fsprobe {

// statfs f_type -> name, for the filesystems whose behaviour the method rules depend on.
std::string fs_type_name(std::uint64_t magic);
// Copy-on-write filesystems: overwrites never land in place, so written extents gain nothing.
bool is_cow_fs(const std::string& type);

struct mount_entry {
    std::string target, source, fstype, options;
    dev_t devno = 0;
};
// The mount holding `path` (libmount over /proc/self/mountinfo), matched by st_dev
// first and by the longest target prefix second.
result<mount_entry> find_mount(const std::string& path, dev_t st_dev);

// fs_info::fallocate from the filesystem type and, for ext2/3/4, the file's FS_IOC_GETFLAGS
// flags (nullopt or flags_err != 0: they could not be read). Pure, for unit tests.
void assess_fallocate(fs_info& info, std::optional<int> inode_flags, int flags_err);

// Fills fs_info for an open regular file. The mount entry is cached per st_dev (parsing
// mountinfo is most of a cached stat's cost); `refresh` re-reads it.
result<fs_info> probe_fs(int fd, const std::string& path, dev_t st_dev, bool refresh);

}  // namespace wz::fsprobe
