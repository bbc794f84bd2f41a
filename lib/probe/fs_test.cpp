// SPDX-License-Identifier: MIT
#include "probe/fs.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace wz::probe::fs {
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

TEST(Mount, FdinfoMountId) {
    EXPECT_EQ(parse_fdinfo_mnt_id("pos:\t0\nflags:\t0100000\nmnt_id:\t23\nino:\t3\n"), 23);
    EXPECT_EQ(parse_fdinfo_mnt_id("mnt_id: 7"), 7);  // last line without a newline
    EXPECT_FALSE(parse_fdinfo_mnt_id("pos:\t0\nflags:\t02\n"));  // before Linux 3.15
    EXPECT_FALSE(parse_fdinfo_mnt_id("mnt_id:\t\n"));
    EXPECT_FALSE(parse_fdinfo_mnt_id("mnt_id:\t-1\n"));
    EXPECT_FALSE(parse_fdinfo_mnt_id("xmnt_id:\t5\n"));  // the key starts the line
    EXPECT_FALSE(parse_fdinfo_mnt_id(""));
}

// statx's mount id is the one fdinfo shows, so the fallback finds the same mount.
TEST(Mount, IdFromTheDescriptorAsFdinfoHasIt) {
    const int fd = ::open("/", O_PATH | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    auto id = mount_id_of(fd, "/");
    ASSERT_TRUE(id) << id.error().message;
    std::ifstream in("/proc/thread-self/fdinfo/" + std::to_string(fd));
    std::ostringstream text;
    text << in.rdbuf();
    EXPECT_EQ(parse_fdinfo_mnt_id(text.str()), *id);
    ::close(fd);
}

TEST(Mount, FindsTheRootMount) {
    const int fd = ::open("/", O_PATH | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    auto m = find_mount(fd, "/");
    ::close(fd);
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_EQ(m->target, "/");
    EXPECT_GE(m->id, 0);
}

// The mount of the descriptor, whatever name comes with it (a relative one here, which is
// only for messages: a lookup by name would resolve it against the working directory).
TEST(Mount, ByDescriptorWhateverTheName) {
    const int fd = ::open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    auto m = find_mount(fd, "self");
    ::close(fd);
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_EQ(m->fstype, "proc");
    EXPECT_EQ(m->target, "/proc");
}

}  // namespace
}  // namespace wz::probe::fs
