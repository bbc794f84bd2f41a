// SPDX-License-Identifier: MIT
#pragma once

#include <wzero/wzero.hpp>

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace wz::probe::fs {

struct mount_entry {
    int id = -1;  // the mount id of /proc/self/mountinfo (and of statx STATX_MNT_ID)
    std::string target, source, fstype, options;
    dev_t devno = 0;
};

// The mount id of the mount through which the file open on `fd` was reached: statx's
// STATX_MNT_ID (Linux 5.8), else the "mnt_id:" line of /proc/thread-self/fdinfo/FD (Linux
// 3.15). From the descriptor, never from a path. `path` names the file in messages.
result<int> mount_id_of(int fd, const std::string& path);

// The "mnt_id:" value of an fdinfo text; nullopt when there is none. Pure, for unit tests.
std::optional<int> parse_fdinfo_mnt_id(std::string_view fdinfo);

// The mount the file open on `fd` (any descriptor, O_PATH included) was reached through: its
// mount id (mount_id_of) looked up in /proc/thread-self/mountinfo (libmount). Never by a path
// prefix or st_dev, which pick another mount for a relative path, a bind mount, a moved mount
// or a btrfs subvolume (whose st_dev matches no mount). ENOENT when the id is not in this
// mount namespace's table (a mount detached with umount -l, or one of another namespace).
result<mount_entry> find_mount(int fd, const std::string& path);
// fs_info::fallocate from the filesystem's traits and, where the extents flag decides
// (fallocate_support::extents_flag), the file's FS_IOC_GETFLAGS flags (nullopt or flags_err != 0: they could not be read). Pure, for unit tests.
void assess_fallocate(fs_info& info, std::optional<int> inode_flags, int flags_err);

// Fills fs_info for an open regular file. The mount entry is found from the descriptor
// (find_mount); where the kernel gives mounts ids that are never reused (statx
// STATX_MNT_ID_UNIQUE, Linux 6.8) it is cached by that id (parsing mountinfo is most of a
// cached stat's cost), and `refresh` reads it again (after a remount changed its options).
// A mount that cannot be found leaves the mount fields empty and says why in `unknown`
// ("fs.mount_point").
result<fs_info> probe_fs(int fd, const std::string& path, bool refresh, unknown_reasons& unknown);

}  // namespace wz::probe::fs
