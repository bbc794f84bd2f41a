#include "probe/fs.hpp"

#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/stat.h>

namespace wz::fsprobe {
namespace {

TEST(FsType, NamesByMagic) {
    EXPECT_EQ(fs_type_name(EXT4_SUPER_MAGIC), "ext4");
    EXPECT_EQ(fs_type_name(XFS_SUPER_MAGIC), "xfs");
    EXPECT_EQ(fs_type_name(BTRFS_SUPER_MAGIC), "btrfs");
    EXPECT_EQ(fs_type_name(TMPFS_MAGIC), "tmpfs");
    EXPECT_EQ(fs_type_name(0xca451a4e), "bcachefs");
    EXPECT_EQ(fs_type_name(0x1234), "unknown(0x1234)");
}

TEST(FsType, CopyOnWrite) {
    EXPECT_TRUE(is_cow_fs("btrfs"));
    EXPECT_TRUE(is_cow_fs("bcachefs"));
    EXPECT_FALSE(is_cow_fs("ext4"));
    EXPECT_FALSE(is_cow_fs("xfs"));
    EXPECT_FALSE(is_cow_fs("tmpfs"));
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
