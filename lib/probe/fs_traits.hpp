// SPDX-License-Identifier: MIT
#pragma once

// What the library believes about each filesystem, in one table (fs_table below), and what
// only trying tells, cached per st_dev. The method rules (plan/assess.cpp), the record
// (probe/fs.cpp, record/record.cpp) and the executor (zero/) read these facts from here and
// nowhere else: adding a filesystem is adding a row.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace wz::probe::fs {

// Does fallocate(2) mode 0 allocate on this filesystem?
enum class fallocate_support {
    unknown,       // not known: tried, and a refusal (EOPNOTSUPP) falls back to data writes
    yes,           // implemented for every regular file
    extents_flag,  // only for files with FS_EXTENT_FL (the ext4 driver: ext2/3/4)
};

struct fs_traits {
    std::string_view type;     // the name in the record's fs.type
    std::uint64_t magic = 0;   // statfs f_type (rows sharing one: the first names it)
    // Data is written out of place (before per-file exceptions: btrfs No_COW, nodatacow):
    // written extents do not make overwrites cheaper.
    bool cow = false;
    // A file's data is in place despite `cow` with the No_COW attribute (chattr +C) or on a
    // mount with nodatacow (btrfs).
    bool nocow_per_file = false;
    // Written extents are overwritten in place at their device addresses, so NVMe Write
    // Zeroes at those LBAs re-zeroes the file's data (FIEMAP physical = the data device's),
    // and a pure overwrite needs no metadata: on a write-through device, writing the data
    // makes it durable (the record's cache.flush_needed may then be false).
    bool in_place_rezero = false;
    // FIEMAP's physical addresses are the filesystem's own logical addresses, not offsets on a
    // device (btrfs: its chunk tree maps them to one or more devices, each at its own offset).
    bool fiemap_logical = false;
    // Implements FALLOC_FL_WRITE_ZEROES (Linux 6.17 merged it for ext4 and block devices).
    bool kernel_write_zeroes = false;
    fallocate_support fallocate = fallocate_support::unknown;
    // An O_DSYNC O_DIRECT overwrite of written extents goes out as one FUA write with no
    // flush: confirmed at the device (QEMU's trace events) on Linux 6.1 and 7.2.
    bool dsync_overwrite_fua = false;
    // Data lives in memory only: fsync does nothing and nothing is durable (tmpfs, ramfs).
    bool memory_only = false;
    // The mount's fstype (libmount) names the filesystem better than the magic: ext2, ext3
    // and ext4 share one magic.
    bool mount_type_refines = false;
};

// The traits of the filesystem the record names `type` (fs_info::type); an unknown type
// gets every fact false/unknown, under its own name.
[[nodiscard]] fs_traits fs_traits_of(std::string_view type);

// statfs f_type -> the record's type name: the table's name, "unknown(0x...)" otherwise;
// `mount_fstype` (libmount, may be empty) replaces it where the magic does not tell
// (mount_type_refines, or a magic missing from the table).
[[nodiscard]] std::string fs_type_name(std::uint64_t magic, std::string_view mount_fstype = {});

// The names of the filesystems with a trait set, for reasons: "ext4", "ext4 or xfs".
[[nodiscard]] std::string fs_names_with(bool fs_traits::*trait);

// What only trying tells, per filesystem (st_dev), for this process. Thread-safe.

// Where statx reports no DIO alignment (btrfs): does an O_DIRECT open work here? 0, or the
// errno of the failed open. `try_open` runs once per st_dev (again with `refresh`); its
// answer holds for every file of the filesystem.
[[nodiscard]] int direct_open_errno(dev_t st_dev, bool refresh, const std::function<int()>& try_open);

// FALLOC_FL_WRITE_ZEROES was refused (EOPNOTSUPP/EINVAL) on this filesystem earlier in
// this process: asking again would only cost a syscall per call, but the report says why.
[[nodiscard]] bool kernel_write_zeroes_refused(dev_t st_dev);
void note_kernel_write_zeroes_refused(dev_t st_dev);

}  // namespace wz::probe::fs
