// SPDX-License-Identifier: MIT
#pragma once

// The block devices of a btrfs filesystem, from the filesystem itself. A btrfs file's st_dev
// is an anonymous number (one per subvolume, and on Linux 6.x even the top level's differs
// from the mount's), so neither st_dev nor the mount's source names where the data goes: a
// btrfs over several devices puts it on any of them.

#include "probe/sysfs.hpp"

#include <wzero/wzero.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace wz::probe::btrfs {

// The 16 bytes of a btrfs fsid as the name of its /sys/fs/btrfs directory:
// "e7cb14af-f6ad-482d-bdfb-f70ac073d473".
[[nodiscard]] std::string format_fsid(std::span<const std::uint8_t, 16> fsid);

struct member {
    std::string name;  // "loop0", "nvme0n1p2", "dm-3"
    std::uint32_t major = 0, minor = 0;
};

// The devices listed under /sys/fs/btrfs/FSID/devices (Linux 3.14; one link per device, named
// after it, to its block device node), ordered by major:minor. An error names what is missing:
// the directory, or a link without a readable "dev".
result<std::vector<member>> sysfs_members(const sysfs::tree& sys, const std::string& fsid);

struct filesystem {
    std::string fsid;
    std::uint64_t num_devices = 0;  // BTRFS_IOC_FS_INFO: devices the filesystem has, missing ones included
    std::vector<member> devices;    // the ones the kernel has open (sysfs_members)
};

// BTRFS_IOC_FS_INFO on a descriptor of any file of the filesystem (no privilege needed), then
// sysfs_members for its fsid. `path` names the file in messages.
result<filesystem> devices_of(int fd, const std::string& path, const sysfs::tree& sys);

}  // namespace wz::probe::btrfs
