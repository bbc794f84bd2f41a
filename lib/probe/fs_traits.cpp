// SPDX-License-Identifier: MIT
#include "probe/fs_traits.hpp"

#include "util/cached_only.hpp"

#include <linux/magic.h>

#include <fmt/format.h>

#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

namespace wz::probe::fs {

namespace {

// Magics missing from Debian 12's linux/magic.h.
constexpr std::uint64_t bcachefs_magic = 0xca451a4eULL;
constexpr std::uint64_t zfs_magic = 0x2fc12fc1ULL;
constexpr std::uint64_t fuse_magic = 0x65735546ULL;
constexpr std::uint64_t nfs_magic = 0x6969ULL;
constexpr std::uint64_t f2fs_magic = 0xF2F52010ULL;

constexpr fs_traits row(std::string_view type, std::uint64_t magic) {
    fs_traits t;
    t.type = type;
    t.magic = magic;
    return t;
}

// Each fact with where it comes from:
// - in_place_rezero: ext4 and xfs map file data 1:1 onto their (single) data device; xfs's
//   realtime device is not handled (FIEMAP addresses are the data device's).
// - kernel_write_zeroes: Linux 6.17 implements FALLOC_FL_WRITE_ZEROES for ext4 and block
//   devices only.
// - fallocate: ext2 (its own driver or ext4's) has no fallocate for indirect-mapped files,
//   and the ext4 driver refuses fallocate on any file without the extents flag
//   (ext4_fallocate, every Linux since 3.x; seen on Linux 6.18: EOPNOTSUPP).
// - dsync_overwrite_fua: the iomap direct I/O path sends a pure overwrite with RWF_DSYNC as
//   one FUA write when the queue has FUA; ext4's mtime update is not datasync metadata, so
//   ext4 qualifies without lazytime. Measured with QEMU's trace events (0 flushes for 200
//   writes on xfs, ext4 and ext4 lazytime; Linux 6.1 and 7.2).
constexpr fs_traits ext4_row() {
    fs_traits t = row("ext4", EXT4_SUPER_MAGIC);
    t.in_place_rezero = true;
    t.kernel_write_zeroes = true;
    t.fallocate = fallocate_support::extents_flag;
    t.dsync_overwrite_fua = true;
    t.mount_type_refines = true;
    return t;
}
constexpr fs_traits ext23_row(std::string_view type) {
    fs_traits t = row(type, EXT4_SUPER_MAGIC);
    t.fallocate = fallocate_support::extents_flag;
    t.mount_type_refines = true;
    return t;
}
constexpr fs_traits xfs_row() {
    fs_traits t = row("xfs", XFS_SUPER_MAGIC);
    t.in_place_rezero = true;
    t.fallocate = fallocate_support::yes;
    t.dsync_overwrite_fua = true;
    return t;
}
constexpr fs_traits cow_row(std::string_view type, std::uint64_t magic, fallocate_support fallocate) {
    fs_traits t = row(type, magic);
    t.cow = true;
    t.fallocate = fallocate;
    return t;
}
constexpr fs_traits btrfs_row() {
    fs_traits t = cow_row("btrfs", BTRFS_SUPER_MAGIC, fallocate_support::yes);
    t.nocow_per_file = true;
    t.fiemap_logical = true;
    return t;
}
constexpr fs_traits tmpfs_row() {
    fs_traits t = row("tmpfs", TMPFS_MAGIC);
    t.fallocate = fallocate_support::yes;
    t.memory_only = true;
    return t;
}
constexpr fs_traits ramfs_row() {
    fs_traits t = row("ramfs", RAMFS_MAGIC);
    t.memory_only = true;
    return t;
}
constexpr fs_traits fallocate_row(std::string_view type, std::uint64_t magic) {
    fs_traits t = row(type, magic);
    t.fallocate = fallocate_support::yes;
    return t;
}

// The one table. ext4 before ext2/ext3: the first row with a magic names it.
constexpr fs_traits fs_table[] = {
    ext4_row(),
    ext23_row("ext3"),
    ext23_row("ext2"),
    xfs_row(),
    btrfs_row(),
    tmpfs_row(),
    ramfs_row(),
    cow_row("bcachefs", bcachefs_magic, fallocate_support::yes),
    cow_row("zfs", zfs_magic, fallocate_support::unknown),
    row("fuse", fuse_magic),
    row("nfs", nfs_magic),
    fallocate_row("f2fs", f2fs_magic),
    row("overlay", OVERLAYFS_SUPER_MAGIC),
};

const fs_traits* by_magic(std::uint64_t magic) {
    for (const auto& t : fs_table) {
        if (t.magic == magic) {
            return &t;
        }
    }
    return nullptr;
}

struct learned {
    std::optional<int> direct_open_errno;
    bool kernel_write_zeroes_refused = false;
};

std::mutex learned_mutex;
std::unordered_map<dev_t, learned> learned_by_dev;

}  // namespace

fs_traits fs_traits_of(std::string_view type) {
    for (const auto& t : fs_table) {
        if (t.type == type) {
            return t;
        }
    }
    return fs_traits{};
}

std::string fs_type_name(std::uint64_t magic, std::string_view mount_fstype) {
    const fs_traits* t = by_magic(magic);
    if (!mount_fstype.empty() && (t == nullptr || t->mount_type_refines)) {
        return std::string(mount_fstype);  // libmount knows ext2/ext3 from ext4, fuse subtypes, etc.
    }
    return t != nullptr ? std::string(t->type) : fmt::format("unknown({:#x})", magic);
}

std::string fs_names_with(bool fs_traits::*trait) {
    std::vector<std::string_view> names;
    for (const auto& t : fs_table) {
        if (t.*trait) {
            names.push_back(t.type);
        }
    }
    std::string out;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i != 0) {
            out += i + 1 == names.size() ? " or " : ", ";
        }
        out += names[i];
    }
    return out;
}

int direct_open_errno(dev_t st_dev, bool refresh, const std::function<int()>& try_open) {
    {
        std::lock_guard lock(learned_mutex);
        auto it = learned_by_dev.find(st_dev);
        if (!refresh && it != learned_by_dev.end() && it->second.direct_open_errno) {
            return *it->second.direct_open_errno;
        }
    }
    if (cached_only::refuse()) {
        return EAGAIN;  // not learned: the call runs again through its worker
    }
    const int err = try_open();
    std::lock_guard lock(learned_mutex);
    learned_by_dev[st_dev].direct_open_errno = err;
    return err;
}

bool kernel_write_zeroes_refused(dev_t st_dev) {
    std::lock_guard lock(learned_mutex);
    auto it = learned_by_dev.find(st_dev);
    return it != learned_by_dev.end() && it->second.kernel_write_zeroes_refused;
}

void note_kernel_write_zeroes_refused(dev_t st_dev) {
    std::lock_guard lock(learned_mutex);
    learned_by_dev[st_dev].kernel_write_zeroes_refused = true;
}

}  // namespace wz::probe::fs
