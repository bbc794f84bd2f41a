// SPDX-License-Identifier: MIT
#include "probe/fs.hpp"

#include <gtest/gtest.h>
#include <linux/fs.h>
#include <sys/stat.h>

namespace wz::fsprobe {
namespace {

// ext2, and ext3/ext4 files without the extents flag, have no fallocate(2) (EOPNOTSUPP,
// seen on Linux 6.18): the record must say so, or alloc plans an allocation that fails.
TEST(FsFallocate, ByTypeAndExtentsFlag) {
    struct row {
        const char* type;
        std::optional<int> flags;
        int flags_err;
        std::optional<bool> expect;
    };
    const row rows[] = {
        {"ext2", 0, 0, false},
        {"ext2", FS_EXTENT_FL, 0, true},  // the flag, not the name, decides for the ext4 driver
        {"ext3", 0, 0, false},
        {"ext4", 0, 0, false},            // a file kept from ext3
        {"ext4", FS_EXTENT_FL, 0, true},
        {"ext4", std::nullopt, ENOTTY, std::nullopt},
        {"xfs", std::nullopt, 0, true},
        {"btrfs", std::nullopt, 0, true},
        {"tmpfs", std::nullopt, 0, true},
        {"fuse", std::nullopt, 0, std::nullopt},
        {"unknown(0x4d44)", std::nullopt, 0, std::nullopt},
    };
    for (const auto& r : rows) {
        fs_info info;
        info.type = r.type;
        assess_fallocate(info, r.flags, r.flags_err);
        EXPECT_EQ(info.fallocate, r.expect) << r.type << " flags " << r.flags.value_or(-1);
        EXPECT_FALSE(info.fallocate_reason.empty()) << r.type;
    }
}

TEST(Mount, FindsTheRootMount) {
    struct ::stat st {};
    ASSERT_EQ(::stat("/", &st), 0);
    auto m = find_mount("/", st.st_dev);
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_EQ(m->target, "/");
}

}  // namespace
}  // namespace wz::fsprobe
