// SPDX-License-Identifier: MIT
#include "probe/btrfs.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>

namespace wz::probe::btrfs {
namespace {

namespace fs = std::filesystem;

TEST(BtrfsFsid, AsItsSysfsDirectoryIsNamed) {
    const std::array<std::uint8_t, 16> fsid = {0xe7, 0xcb, 0x14, 0xaf, 0xf6, 0xad, 0x48, 0x2d,
                                               0xbd, 0xfb, 0xf7, 0x0a, 0xc0, 0x73, 0xd4, 0x73};
    EXPECT_EQ(format_fsid(fsid), "e7cb14af-f6ad-482d-bdfb-f70ac073d473");
}

// A recorded /sys/fs/btrfs/FSID/devices (Linux 6.18, a btrfs made over loop0 and loop1 with
// -d single -m raid1): one link per device, named after it, to its block device node.
class BtrfsSysfs : public ::testing::Test {
protected:
    void SetUp() override {
        root_ = fs::temp_directory_path() / ("wz-btrfs-test-" + std::to_string(::getpid()) + "-" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(root_);
        fs::create_directories(root_ / devices_dir);
    }
    void TearDown() override { fs::remove_all(root_); }

    void block(const std::string& name, const std::string& dev) {
        const fs::path node = root_ / "devices/virtual/block" / name;
        fs::create_directories(node);
        if (!dev.empty()) {
            std::ofstream(node / "dev") << dev << "\n";
        }
        fs::create_directory_symlink(fs::path("../../../../devices/virtual/block") / name, root_ / devices_dir / name);
    }

    static constexpr const char* fsid = "e7cb14af-f6ad-482d-bdfb-f70ac073d473";
    const std::string devices_dir = std::string("fs/btrfs/") + fsid + "/devices";
    fs::path root_;
};

TEST_F(BtrfsSysfs, EveryDeviceOrderedByNumber) {
    block("loop10", "7:10");
    block("loop1", "7:1");
    block("nvme0n1p2", "259:2");
    auto m = sysfs_members(sysfs::tree(root_.string()), fsid);
    ASSERT_TRUE(m) << m.error().message;
    ASSERT_EQ(m->size(), 3U);
    EXPECT_EQ((*m)[0].name, "loop1");
    EXPECT_EQ((*m)[0].major, 7U);
    EXPECT_EQ((*m)[0].minor, 1U);
    EXPECT_EQ((*m)[1].name, "loop10");
    EXPECT_EQ((*m)[2].name, "nvme0n1p2");
    EXPECT_EQ((*m)[2].major, 259U);
    EXPECT_EQ((*m)[2].minor, 2U);
}

TEST_F(BtrfsSysfs, ADeviceWithoutNumberIsAnError) {
    block("loop0", "7:0");
    block("loop1", "");
    auto m = sysfs_members(sysfs::tree(root_.string()), fsid);
    ASSERT_FALSE(m);
    EXPECT_NE(m.error().message.find("loop1/dev"), std::string::npos) << m.error().message;
}

TEST_F(BtrfsSysfs, AnotherFilesystemIsNotFound) {
    block("loop0", "7:0");
    auto m = sysfs_members(sysfs::tree(root_.string()), "00000000-0000-0000-0000-000000000000");
    ASSERT_FALSE(m);
    EXPECT_NE(m.error().message.find("fs/btrfs/00000000-0000-0000-0000-000000000000/devices"), std::string::npos)
        << m.error().message;
}

}  // namespace
}  // namespace wz::probe::btrfs
