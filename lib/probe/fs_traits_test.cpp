// SPDX-License-Identifier: MIT
#include "probe/fs_traits.hpp"

#include <gtest/gtest.h>
#include <linux/magic.h>

#include <atomic>
#include <thread>
#include <vector>

namespace wz::probe::fs {
namespace {

TEST(FsTraits, NamesByMagic) {
    EXPECT_EQ(fs_type_name(EXT4_SUPER_MAGIC), "ext4");
    EXPECT_EQ(fs_type_name(XFS_SUPER_MAGIC), "xfs");
    EXPECT_EQ(fs_type_name(BTRFS_SUPER_MAGIC), "btrfs");
    EXPECT_EQ(fs_type_name(TMPFS_MAGIC), "tmpfs");
    EXPECT_EQ(fs_type_name(0xca451a4e), "bcachefs");
    EXPECT_EQ(fs_type_name(0x1234), "unknown(0x1234)");
}

// ext2/3/4 share a magic: the mount's fstype tells them apart, and names what the table
// does not know; elsewhere the magic wins (a fuse mount's "fuse.sshfs" stays "fuse").
TEST(FsTraits, MountTypeRefinesOnlyWhereTheMagicDoesNotTell) {
    EXPECT_EQ(fs_type_name(EXT4_SUPER_MAGIC, "ext3"), "ext3");
    EXPECT_EQ(fs_type_name(EXT4_SUPER_MAGIC, "ext2"), "ext2");
    EXPECT_EQ(fs_type_name(EXT4_SUPER_MAGIC, ""), "ext4");
    EXPECT_EQ(fs_type_name(0x1234, "vfat"), "vfat");
    EXPECT_EQ(fs_type_name(0x65735546, "fuse.sshfs"), "fuse");
    EXPECT_EQ(fs_type_name(XFS_SUPER_MAGIC, "ext4"), "xfs");
}

TEST(FsTraits, OneRowPerFilesystem) {
    struct row {
        const char* type;
        bool cow, in_place, kernel, fua, memory_only;
        fallocate_support fallocate;
    };
    const row rows[] = {
        {"ext4", false, true, true, true, false, fallocate_support::extents_flag},
        {"ext3", false, false, false, false, false, fallocate_support::extents_flag},
        {"ext2", false, false, false, false, false, fallocate_support::extents_flag},
        {"xfs", false, true, false, true, false, fallocate_support::yes},
        {"btrfs", true, false, false, false, false, fallocate_support::yes},
        {"bcachefs", true, false, false, false, false, fallocate_support::yes},
        {"zfs", true, false, false, false, false, fallocate_support::unknown},
        {"tmpfs", false, false, false, false, true, fallocate_support::yes},
        {"ramfs", false, false, false, false, true, fallocate_support::unknown},
        {"f2fs", false, false, false, false, false, fallocate_support::yes},
        {"fuse", false, false, false, false, false, fallocate_support::unknown},
        {"unknown(0x4d44)", false, false, false, false, false, fallocate_support::unknown},
    };
    for (const auto& r : rows) {
        const fs_traits t = fs_traits_of(r.type);
        EXPECT_EQ(t.cow, r.cow) << r.type;
        EXPECT_EQ(t.in_place_rezero, r.in_place) << r.type;
        EXPECT_EQ(t.kernel_write_zeroes, r.kernel) << r.type;
        EXPECT_EQ(t.dsync_overwrite_fua, r.fua) << r.type;
        EXPECT_EQ(t.memory_only, r.memory_only) << r.type;
        EXPECT_EQ(t.fallocate, r.fallocate) << r.type;
    }
    EXPECT_TRUE(fs_traits_of("btrfs").nocow_per_file);
    EXPECT_FALSE(fs_traits_of("bcachefs").nocow_per_file);
    // Every row's name is the one its magic gives (the ext4 driver's rows: by the mount).
    for (const char* type :
         {"ext4", "xfs", "btrfs", "tmpfs", "ramfs", "bcachefs", "zfs", "fuse", "nfs", "f2fs", "overlay"}) {
        EXPECT_EQ(fs_type_name(fs_traits_of(type).magic), type);
    }
}

TEST(FsTraits, NamesWithATrait) {
    EXPECT_EQ(fs_names_with(&fs_traits::in_place_rezero), "ext4 or xfs");
    EXPECT_EQ(fs_names_with(&fs_traits::kernel_write_zeroes), "ext4");
    EXPECT_EQ(fs_names_with(&fs_traits::cow), "btrfs, bcachefs or zfs");
    // Where FIEMAP's addresses are not device offsets (map's PHYSICAL and LBA empty).
    EXPECT_EQ(fs_names_with(&fs_traits::fiemap_logical), "btrfs");
    EXPECT_EQ(fs_names_with(&fs_traits::memory_only), "tmpfs or ramfs");
}

// The O_DIRECT open is tried once per filesystem, again only on refresh.
TEST(FsTraitsCache, DirectOpenTriedOncePerDevice) {
    const dev_t a = static_cast<dev_t>(0x7fff0001);
    const dev_t b = static_cast<dev_t>(0x7fff0002);
    std::atomic<int> tries{0};
    auto ok = [&] { ++tries; return 0; };
    auto refused = [&] { ++tries; return EINVAL; };
    EXPECT_EQ(direct_open_errno(a, false, ok), 0);
    EXPECT_EQ(direct_open_errno(a, false, refused), 0);
    EXPECT_EQ(tries, 1);
    EXPECT_EQ(direct_open_errno(b, false, refused), EINVAL);
    EXPECT_EQ(tries, 2);
    EXPECT_EQ(direct_open_errno(a, true, refused), EINVAL);
    EXPECT_EQ(direct_open_errno(a, false, ok), EINVAL);
    EXPECT_EQ(tries, 3);
}

TEST(FsTraitsCache, KernelRefusalRememberedPerDevice) {
    const dev_t a = static_cast<dev_t>(0x7fff0011);
    const dev_t b = static_cast<dev_t>(0x7fff0012);
    EXPECT_FALSE(kernel_write_zeroes_refused(a));
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) {
        threads.emplace_back([&] { note_kernel_write_zeroes_refused(a); });
    }
    for (auto& t : threads) {
        t.join();
    }
    EXPECT_TRUE(kernel_write_zeroes_refused(a));
    EXPECT_FALSE(kernel_write_zeroes_refused(b));
    // A refusal does not forget the O_DIRECT answer of the same filesystem, nor the reverse.
    EXPECT_EQ(direct_open_errno(a, false, [] { return 0; }), 0);
    EXPECT_TRUE(kernel_write_zeroes_refused(a));
}

}  // namespace
}  // namespace wz::probe::fs
