// SPDX-License-Identifier: MIT
#include "probe/sysfs.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace wz::probe::sysfs {
namespace {

namespace fs = std::filesystem;

TEST(SysfsParse, U64) {
    EXPECT_EQ(parse_u64("4294967296\n"), 4294967296ULL);
    EXPECT_EQ(parse_u64("0"), 0U);
    EXPECT_EQ(parse_u64(" 512 \n"), 512U);
    EXPECT_FALSE(parse_u64(""));
    EXPECT_FALSE(parse_u64("\n"));
    EXPECT_FALSE(parse_u64("-1"));
    EXPECT_FALSE(parse_u64("12abc"));
    EXPECT_FALSE(parse_u64("99999999999999999999999"));  // overflow
}

TEST(SysfsParse, WriteCache) {
    EXPECT_EQ(parse_write_cache("write back\n"), cache_mode::write_back);
    EXPECT_EQ(parse_write_cache("write through\n"), cache_mode::write_through);
    EXPECT_FALSE(parse_write_cache("write-back"));
    EXPECT_FALSE(parse_write_cache(""));
}

TEST(SysfsParse, Dev) {
    auto d = parse_dev("259:3\n");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->first, 259U);
    EXPECT_EQ(d->second, 3U);
    EXPECT_FALSE(parse_dev("259"));
    EXPECT_FALSE(parse_dev("a:b"));
}

// A recorded sysfs tree: the attribute values below were read from the machines in
// TESTRIG.md (a loop device on the host, QEMU NVMe in the 7.2 VM, a dm device).
class SysfsTree : public ::testing::Test {
protected:
    void SetUp() override {
        root_ = fs::temp_directory_path() / ("wz-sysfs-test-" + std::to_string(::getpid()) + "-" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(root_);
        fs::create_directories(root_ / "dev/block");
    }
    void TearDown() override { fs::remove_all(root_); }

    void put(const std::string& rel, const std::string& value) {
        fs::path p = root_ / rel;
        fs::create_directories(p.parent_path());
        std::ofstream(p) << value << "\n";
    }
    void link_dev(const std::string& majmin, const std::string& target) {
        fs::create_directory_symlink(fs::path("../..") / target, root_ / "dev/block" / majmin);
    }
    void queue(const std::string& disk, const std::map<std::string, std::string>& attrs) {
        for (const auto& [k, v] : attrs) {
            put(disk + "/queue/" + k, v);
        }
    }

    fs::path root_;
};

TEST_F(SysfsTree, NvmePartitionWalksToItsDisk) {
    const std::string disk = "devices/pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n1";
    put(disk + "/dev", "259:0");
    put(disk + "/size", "1048576");
    put(disk + "/nsid", "1");
    put(disk + "/nvme0n1p1/partition", "1");
    put(disk + "/nvme0n1p1/start", "2048");
    put(disk + "/nvme0n1p1/size", "1044480");
    put(disk + "/nvme0n1p1/dev", "259:1");
    queue(disk, {{"logical_block_size", "512"},
                 {"physical_block_size", "512"},
                 {"max_hw_sectors_kb", "512"},
                 {"write_zeroes_max_bytes", "524288"},
                 {"write_zeroes_unmap_max_bytes", "0"},
                 {"write_zeroes_unmap_max_hw_bytes", "0"},
                 {"discard_granularity", "4096"},
                 {"discard_max_bytes", "2199023255040"},
                 {"write_cache", "write back"},
                 {"fua", "1"},
                 {"rotational", "0"},
                 {"io_poll", "1"}});
    link_dev("259:1", disk + "/nvme0n1p1");

    tree sys(root_.string());
    auto node = find_block_node(sys, 259, 1);
    ASSERT_TRUE(node) << node.error().message;
    EXPECT_EQ(node->name, "nvme0n1p1");
    EXPECT_EQ(node->disk_name, "nvme0n1");
    EXPECT_TRUE(node->partition);
    EXPECT_EQ(node->start_sectors, 2048U);

    device_info dev;
    write_zeroes_info wz;
    cache_info cache;
    unknown_reasons unknown;
    read_block_info(sys, *node, dev, wz, cache, unknown);
    EXPECT_EQ(dev.kind, "nvme");
    EXPECT_EQ(dev.path, "/dev/nvme0n1p1");
    EXPECT_EQ(dev.disk, "/dev/nvme0n1");
    EXPECT_EQ(dev.partition_start_bytes, 2048U * 512);
    EXPECT_EQ(dev.size_bytes, 1044480U * 512);
    EXPECT_EQ(dev.major, 259U);
    EXPECT_EQ(dev.minor, 1U);
    EXPECT_EQ(dev.logical_block_size, 512U);
    EXPECT_EQ(dev.max_hw_transfer_bytes, 512U * 1024);
    EXPECT_EQ(wz.max_bytes, 524288U);
    ASSERT_TRUE(wz.unmap);
    EXPECT_FALSE(*wz.unmap);
    EXPECT_EQ(cache.kernel, cache_mode::write_back);
    EXPECT_EQ(cache.fua, true);
    EXPECT_EQ(dev.rotational, false);
    EXPECT_EQ(dev.io_poll, true);
    EXPECT_TRUE(unknown.empty());
}

TEST_F(SysfsTree, LoopOnAnOldKernelHasNoUnmapLimit) {
    // Linux 6.1: no write_zeroes_unmap_max_bytes; "unknown" with the reason, not "no".
    const std::string disk = "devices/virtual/block/loop3";
    put(disk + "/dev", "7:3");
    put(disk + "/size", "2097152");
    put(disk + "/loop/backing_file", "/tmp/wz/test.img");
    queue(disk, {{"logical_block_size", "512"},
                 {"physical_block_size", "512"},
                 {"write_zeroes_max_bytes", "4294966784"},
                 {"write_cache", "write back"},
                 {"fua", "0"}});
    link_dev("7:3", disk);
    tree sys(root_.string());
    auto node = find_block_node(sys, 7, 3);
    ASSERT_TRUE(node);
    EXPECT_FALSE(node->partition);
    device_info dev;
    write_zeroes_info wz;
    cache_info cache;
    unknown_reasons unknown;
    read_block_info(sys, *node, dev, wz, cache, unknown);
    EXPECT_EQ(dev.kind, "loop");
    EXPECT_EQ(dev.backing_file, "/tmp/wz/test.img");
    EXPECT_FALSE(dev.io_poll);  // no queue/io_poll: unknown, not "no"
    EXPECT_EQ(wz.max_bytes, 4294966784U);
    EXPECT_FALSE(wz.unmap);
    ASSERT_TRUE(unknown.count("write_zeroes.unmap"));
    EXPECT_NE(unknown["write_zeroes.unmap"].find("6.17"), std::string::npos);
    EXPECT_EQ(cache.fua, false);
}

TEST_F(SysfsTree, DmStackListsItsSlaves) {
    const std::string disk = "devices/virtual/block/dm-0";
    put(disk + "/dev", "254:0");
    put(disk + "/size", "8192");
    put(disk + "/dm/name", "wzvg-lv");
    put(disk + "/slaves/.keep", "");
    fs::create_directory(root_ / disk / "slaves/nvme0n1p2");
    fs::remove(root_ / disk / "slaves/.keep");
    queue(disk, {{"logical_block_size", "4096"}, {"write_zeroes_max_bytes", "0"}, {"write_cache", "write through"}});
    link_dev("254:0", disk);
    tree sys(root_.string());
    auto node = find_block_node(sys, 254, 0);
    ASSERT_TRUE(node);
    device_info dev;
    write_zeroes_info wz;
    cache_info cache;
    unknown_reasons unknown;
    read_block_info(sys, *node, dev, wz, cache, unknown);
    EXPECT_EQ(dev.kind, "dm");
    ASSERT_EQ(dev.slaves.size(), 1U);
    EXPECT_EQ(dev.slaves[0], "/dev/nvme0n1p2");
    EXPECT_EQ(cache.kernel, cache_mode::write_through);
    EXPECT_TRUE(unknown.count("cache.fua"));
}

TEST_F(SysfsTree, MissingDeviceIsAnErrorNamingIt) {
    tree sys(root_.string());
    auto node = find_block_node(sys, 8, 16);
    ASSERT_FALSE(node);
    EXPECT_NE(node.error().message.find("8:16"), std::string::npos);
}

TEST(SysfsLive, HostLoopOrRootDeviceResolves) {
    // The machine's own sysfs: whatever holds / must be found and classified.
    struct ::stat st {};
    ASSERT_EQ(::stat("/", &st), 0);
    if (major(st.st_dev) == 0) {
        GTEST_SKIP() << "/ is not on a block device";
    }
    tree sys;
    auto node = find_block_node(sys, major(st.st_dev), minor(st.st_dev));
    ASSERT_TRUE(node) << node.error().message;
    EXPECT_FALSE(node->disk_name.empty());
}

}  // namespace
}  // namespace wz::probe::sysfs
