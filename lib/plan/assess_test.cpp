// SPDX-License-Identifier: MIT
#include "plan/assess.hpp"

#include "probe/nvme_decode.hpp"

#include <gtest/gtest.h>

namespace wz::plan {
namespace {

capabilities ext4_on_loop() {
    capabilities c;
    c.path = "/mnt/f";
    c.file_type = "regular";
    c.fs = fs_info{};
    c.fs->type = "ext4";
    c.device = device_info{};
    c.device->kind = "loop";
    c.device->disk = "/dev/loop0";
    c.dio = dio_alignment{512, 512};
    c.write_zeroes.max_bytes = 4ULL << 30;
    c.write_zeroes.unmap = false;
    c.write_zeroes.unmap_max_bytes = 0;
    c.cache.kernel = cache_mode::write_back;
    c.cache.fua = false;
    return c;
}

capabilities raw_nvme(std::uint8_t dlfeat, bool vwc_present, std::optional<bool> wce) {
    capabilities c;
    c.path = "/dev/nvme0n1";
    c.file_type = "block";
    c.device = device_info{};
    c.device->kind = "nvme";
    c.device->disk = "/dev/nvme0n1";
    c.write_zeroes.max_bytes = 512 * 1024;
    // The fields as the probe derives them from DLFEAT (nvme_probe.cpp), so that the rule
    // tested here is the one a real record carries. Linux advertises unmap write zeroes on
    // the same condition as DEAC (WZDS=1 and DRB=001b).
    const auto dl = probe::nvme::decode_dlfeat(dlfeat);
    c.write_zeroes.unmap = dl.deac_usable;
    c.write_zeroes.unmap_max_bytes = c.write_zeroes.unmap.value() ? 1U << 20 : 0;
    c.cache.kernel = cache_mode::write_back;  // Linux says this whenever VWC is present
    c.cache.fua = true;
    nvme_info n;
    n.namespace_device = "/dev/nvme0n1";
    n.char_device = "/dev/ng0n1";
    probe::nvme::set_passthrough_route(n, "ng0n1", true);
    n.oncs = 0x15d;
    n.write_zeroes_supported = true;
    n.dlfeat = dlfeat;
    n.wzds = dl.wzds;
    n.dlfeat_read_behavior = dl.read_behavior;
    n.deac = dl.deac_usable;
    n.npdg_bytes = 8192;
    n.npda_bytes = 8192;
    n.vwc_present = vwc_present;
    n.vwc_enabled = wce;
    c.nvme = n;
    return c;
}

const assess_inputs new_kernel{kernel_version{7, 2}, true, std::nullopt};
const assess_inputs old_kernel{kernel_version{6, 1}, true, std::nullopt};

TEST(KernelRelease, Parses) {
    auto v = parse_kernel_release("6.17.0-rc3-amd64");
    ASSERT_TRUE(v);
    EXPECT_EQ(v->major, 6U);
    EXPECT_EQ(v->minor, 17U);
    EXPECT_TRUE((kernel_version{6, 1} < write_zeroes_falloc_since));
    EXPECT_FALSE((kernel_version{7, 2} < write_zeroes_falloc_since));
    EXPECT_FALSE(parse_kernel_release("garbage"));
    EXPECT_FALSE(parse_kernel_release("6"));
}

TEST(Cache, WceClearedIsWriteThroughWhatLinuxSays) {
    auto c = raw_nvme(0x01, true, false);
    assess(c, new_kernel);
    EXPECT_EQ(c.cache.kernel, cache_mode::write_back);
    EXPECT_EQ(c.cache.effective, cache_mode::write_through);
    EXPECT_EQ(c.cache.flush_needed, false);
    EXPECT_NE(c.cache.effective_reason.find("WCE = 0"), std::string::npos);
}

TEST(Cache, WceSetIsWriteBack) {
    auto c = raw_nvme(0x01, true, true);
    assess(c, new_kernel);
    EXPECT_EQ(c.cache.effective, cache_mode::write_back);
    EXPECT_EQ(c.cache.flush_needed, true);
}

TEST(Cache, NoVolatileCacheIsWriteThrough) {
    auto c = raw_nvme(0x01, false, false);
    c.cache.kernel = cache_mode::write_through;
    assess(c, new_kernel);
    EXPECT_EQ(c.cache.effective, cache_mode::write_through);
    EXPECT_EQ(c.cache.flush_needed, false);
}

TEST(Cache, UnreadableWceFallsBackToTheKernelWithReason) {
    auto c = raw_nvme(0x01, true, std::nullopt);
    c.unknown["nvme.vwc_enabled"] = "Get Features FID 06h: Operation not permitted";
    assess(c, new_kernel);
    EXPECT_EQ(c.cache.effective, cache_mode::write_back);
    EXPECT_EQ(c.cache.flush_needed, true);
    EXPECT_NE(c.cache.effective_reason.find("Operation not permitted"), std::string::npos);
}

TEST(Cache, DsyncOverwriteFuaOnlyWhereConfirmed) {
    struct row {
        const char* fs;
        std::optional<bool> fua;
        std::optional<bool> want;
        const char* says;
    };
    for (const row& r : {row{"xfs", true, true, "one FUA write"}, row{"ext4", true, true, "one FUA write"},
                         row{"ext4", false, false, "without FUA"}, row{"btrfs", true, false, "copy on write"},
                         row{"f2fs", true, false, "not confirmed"}, row{"xfs", std::nullopt, std::nullopt, "unknown"}}) {
        capabilities c;
        c.file_type = "regular";
        c.fs = fs_info{};
        c.fs->type = r.fs;
        c.device = device_info{};
        c.device->kind = "nvme";
        c.cache.kernel = cache_mode::write_back;
        c.cache.fua = r.fua;
        assess(c, new_kernel);
        EXPECT_EQ(c.cache.dsync_overwrite_fua, r.want) << r.fs;
        EXPECT_NE(c.cache.dsync_overwrite_reason.find(r.says), std::string::npos) << c.cache.dsync_overwrite_reason;
    }
    auto raw = raw_nvme(0x01, true, true);
    assess(raw, new_kernel);
    EXPECT_FALSE(raw.cache.dsync_overwrite_fua);  // a block device: the writer's own FUA path
}

TEST(Cache, NoDeviceNeedsNoFlush) {
    capabilities c;
    c.file_type = "regular";
    c.fs = fs_info{};
    c.fs->type = "tmpfs";
    assess(c, new_kernel);
    EXPECT_FALSE(c.cache.effective);
    EXPECT_EQ(c.cache.flush_needed, false);
    EXPECT_NE(c.cache.flush_reason.find("tmpfs"), std::string::npos);
    EXPECT_EQ(c.methods[zero_method::kernel].usable, false);
    EXPECT_EQ(c.recommended_method, zero_method::write);
}

// A device that cannot be named (NFS, FUSE, overlay, a btrfs whose devices were not found):
// its cache is not known, and nothing may skip a flush on that.
TEST(Cache, UnknownDeviceNeedsAFlush) {
    for (const char* fs : {"nfs", "fuse", "overlay", "btrfs"}) {
        capabilities c;
        c.path = "/mnt/f";
        c.file_type = "regular";
        c.fs = fs_info{};
        c.fs->type = fs;
        c.unknown["device"] = "not resolved";
        assess(c, new_kernel);
        EXPECT_FALSE(c.cache.effective) << fs;
        EXPECT_EQ(c.cache.flush_needed, true) << fs;
        EXPECT_NE(c.cache.flush_reason.find("safe side"), std::string::npos) << c.cache.flush_reason;
        EXPECT_NE(c.cache.effective_reason.find("not resolved"), std::string::npos) << c.cache.effective_reason;
    }
}

TEST(Cache, UnreadableCacheModeNeedsAFlush) {
    auto c = ext4_on_loop();
    c.cache.kernel.reset();
    assess(c, new_kernel);
    EXPECT_FALSE(c.cache.effective);
    EXPECT_EQ(c.cache.flush_needed, true);
    EXPECT_NE(c.cache.flush_reason.find("safe side"), std::string::npos) << c.cache.flush_reason;
}

// No flush on a write-through device only where an overwrite stays in place: a copy-on-write
// file (or one whose filesystem is not known to overwrite in place, or ext4 data=journal)
// needs the filesystem's commit whatever the cache.
TEST(Cache, WriteThroughSkipsTheFlushOnlyForInPlaceOverwrites) {
    struct row {
        const char* fs;
        bool cow;
        const char* options;
        bool flush;
        const char* says;
    };
    for (const row& r : {row{"ext4", false, "rw,relatime", false, "write-through"},
                         row{"xfs", false, "rw", false, "write-through"},
                         row{"ext4", false, "rw,data=journal", true, "data=journal"},
                         row{"btrfs", true, "rw", true, "copy on write"},
                         row{"btrfs", false, "rw,nodatacow", true, "not known to overwrite"},
                         row{"f2fs", false, "rw", true, "not known to overwrite"}}) {
        auto c = ext4_on_loop();
        c.fs->type = r.fs;
        c.fs->cow = r.cow;
        c.fs->mount_options = r.options;
        c.cache.kernel = cache_mode::write_through;
        assess(c, new_kernel);
        EXPECT_EQ(c.cache.effective, cache_mode::write_through) << r.fs;
        EXPECT_EQ(c.cache.flush_needed, r.flush) << r.fs << " " << r.options;
        EXPECT_NE(c.cache.flush_reason.find(r.says), std::string::npos) << c.cache.flush_reason;
    }
}

data_device loop_member(const char* path, std::uint32_t minor, cache_mode mode, bool fua) {
    data_device d;
    d.device.path = path;
    d.device.disk = path;
    d.device.kind = "loop";
    d.device.major = 7;
    d.device.minor = minor;
    d.cache.kernel = mode;
    d.cache.fua = fua;
    return d;
}

capabilities btrfs_over(std::vector<data_device> devices) {
    capabilities c;
    c.path = "/mnt/b/f";
    c.file_type = "regular";
    c.fs = fs_info{};
    c.fs->type = "btrfs";
    c.fs->cow = true;
    c.device = devices.front().device;
    c.cache = devices.front().cache;
    c.devices = std::move(devices);
    return c;
}

// Several devices: a write may land on any (or all, mirrored), so the least safe decides.
TEST(Cache, SeveralDevicesTheLeastSafeDecides) {
    auto c = btrfs_over({loop_member("/dev/loop0", 0, cache_mode::write_through, true),
                         loop_member("/dev/loop1", 1, cache_mode::write_back, false)});
    assess(c, new_kernel);
    EXPECT_EQ(c.devices[0].cache.effective, cache_mode::write_through);
    EXPECT_EQ(c.devices[0].cache.flush_needed, false);
    EXPECT_EQ(c.devices[1].cache.effective, cache_mode::write_back);
    EXPECT_EQ(c.devices[1].cache.flush_needed, true);
    EXPECT_EQ(c.cache.kernel, cache_mode::write_back);
    EXPECT_EQ(c.cache.effective, cache_mode::write_back);
    EXPECT_EQ(c.cache.fua, false);  // FUA only if all have it
    EXPECT_EQ(c.cache.flush_needed, true);
    EXPECT_NE(c.cache.flush_reason.find("/dev/loop1"), std::string::npos) << c.cache.flush_reason;
    EXPECT_EQ(c.cache.flush_reason.find("/dev/loop0 ("), std::string::npos) << c.cache.flush_reason;
    EXPECT_NE(c.cache.effective_reason.find("2 devices"), std::string::npos) << c.cache.effective_reason;
    // Never NVMe commands at FIEMAP addresses that cannot say which device they are on.
    EXPECT_EQ(c.methods[zero_method::nvme].usable, false);
    EXPECT_EQ(c.methods[zero_method::nvme_deac].usable, false);
}

TEST(Cache, SeveralDevicesAllWriteThrough) {
    auto c = btrfs_over({loop_member("/dev/loop0", 0, cache_mode::write_through, true),
                         loop_member("/dev/loop1", 1, cache_mode::write_through, true)});
    assess(c, new_kernel);
    EXPECT_EQ(c.cache.kernel, cache_mode::write_through);
    EXPECT_EQ(c.cache.effective, cache_mode::write_through);
    EXPECT_EQ(c.cache.fua, true);
    // No device needs a flush, yet a copy-on-write overwrite needs btrfs's commit.
    EXPECT_EQ(c.cache.flush_needed, true);
    EXPECT_NE(c.cache.flush_reason.find("copy on write"), std::string::npos) << c.cache.flush_reason;
}

TEST(Cache, SeveralDevicesOneUnknown) {
    auto unknown = loop_member("/dev/loop1", 1, cache_mode::write_through, true);
    unknown.cache.kernel.reset();
    auto c = btrfs_over({loop_member("/dev/loop0", 0, cache_mode::write_through, true), unknown});
    assess(c, new_kernel);
    EXPECT_FALSE(c.cache.effective);
    EXPECT_EQ(c.cache.flush_needed, true);
    EXPECT_NE(c.cache.flush_reason.find("/dev/loop1"), std::string::npos) << c.cache.flush_reason;
}

TEST(Methods, Ext4OnLoopFallsBackToWrites) {
    auto c = ext4_on_loop();
    assess(c, new_kernel);
    EXPECT_EQ(c.methods[zero_method::kernel].usable, false);
    EXPECT_NE(c.methods[zero_method::kernel].reason.find("EOPNOTSUPP"), std::string::npos);
    EXPECT_EQ(c.methods[zero_method::nvme_deac].usable, false);
    EXPECT_EQ(c.methods[zero_method::nvme].usable, false);
    EXPECT_EQ(c.methods[zero_method::zeroout].usable, false);
    EXPECT_EQ(c.methods[zero_method::write].usable, true);
    EXPECT_EQ(c.recommended_method, zero_method::write);
    EXPECT_EQ(c.cache.effective, cache_mode::write_back);
}

TEST(Methods, KernelOffloadNeedsExt4UnmapAndLinux617) {
    auto c = ext4_on_loop();
    c.write_zeroes.unmap = true;
    c.write_zeroes.unmap_max_bytes = 32U << 20;
    assess(c, new_kernel);
    EXPECT_EQ(c.methods[zero_method::kernel].usable, true);
    EXPECT_EQ(c.recommended_method, zero_method::kernel);

    assess(c, old_kernel);
    EXPECT_EQ(c.methods[zero_method::kernel].usable, false);
    EXPECT_NE(c.methods[zero_method::kernel].reason.find("6.17"), std::string::npos);

    c.fs->type = "xfs";
    assess(c, new_kernel);
    EXPECT_EQ(c.methods[zero_method::kernel].usable, false);

    // Unknown unmap support (no sysfs attribute) stays unknown.
    c = ext4_on_loop();
    c.write_zeroes.unmap.reset();
    assess(c, new_kernel);
    EXPECT_FALSE(c.methods[zero_method::kernel].usable.has_value());
    EXPECT_EQ(c.recommended_method, zero_method::write);
}

TEST(Methods, DeacOnlyWithWzdsAndZeroReads) {
    for (int dlfeat : {0x19, 0x09}) {
        auto c = raw_nvme(static_cast<std::uint8_t>(dlfeat), true, true);
        assess(c, new_kernel);
        EXPECT_EQ(c.methods[zero_method::nvme_deac].usable, true) << int(dlfeat);
        EXPECT_EQ(c.recommended_method, zero_method::nvme_deac);
    }
    for (int dlfeat : {0x01, 0x08, 0x00, 0x0a}) {
        auto c = raw_nvme(static_cast<std::uint8_t>(dlfeat), true, true);
        assess(c, new_kernel);
        EXPECT_EQ(c.methods[zero_method::nvme_deac].usable, false) << int(dlfeat);
        EXPECT_EQ(c.methods[zero_method::nvme].usable, true) << int(dlfeat);
        EXPECT_EQ(c.recommended_method, zero_method::nvme) << int(dlfeat);
    }
}

TEST(Methods, PassthroughNeedsPrivilegeAndWriteZeroes) {
    auto c = raw_nvme(0x09, true, true);
    assess(c, assess_inputs{kernel_version{7, 2}, false, std::nullopt});
    EXPECT_EQ(c.methods[zero_method::nvme_deac].usable, false);
    EXPECT_NE(c.methods[zero_method::nvme_deac].reason.find("CAP_SYS_ADMIN"), std::string::npos);
    // The kernel path (fallocate on the block device) is then the best.
    EXPECT_EQ(c.recommended_method, zero_method::kernel);

    c = raw_nvme(0x09, true, true);
    c.nvme->oncs = 0x155;
    c.nvme->write_zeroes_supported = false;
    assess(c, new_kernel);
    EXPECT_EQ(c.methods[zero_method::nvme].usable, false);
    EXPECT_EQ(c.methods[zero_method::nvme_deac].usable, false);
}

// Linux 5.10 to 5.12 have no /dev/ngXnY: the namespace's block device takes the same ioctl.
TEST(Methods, PassthroughThroughTheBlockDeviceWithoutACharDevice) {
    auto c = raw_nvme(0x09, true, true);
    c.nvme->char_device.clear();
    probe::nvme::set_passthrough_route(*c.nvme, "ng0n1", true);
    assess(c, assess_inputs{kernel_version{5, 10}, true, std::nullopt});
    ASSERT_EQ(c.methods[zero_method::nvme_deac].usable, true) << c.methods[zero_method::nvme_deac].reason;
    EXPECT_NE(c.methods[zero_method::nvme_deac].reason.find(
                  "through /dev/nvme0n1 (the block device's NVME_IOCTL_IO_CMD: no generic char device) with DEAC"),
              std::string::npos)
        << c.methods[zero_method::nvme_deac].reason;
    EXPECT_EQ(c.methods[zero_method::nvme].usable, true);
    EXPECT_EQ(c.recommended_method, zero_method::nvme_deac);  // no kernel offload on 5.10

    // Neither node: no route, and the reason says which nodes are missing.
    c = raw_nvme(0x09, true, true);
    c.nvme->char_device.clear();
    probe::nvme::set_passthrough_route(*c.nvme, "ng0n1", false);
    assess(c, assess_inputs{kernel_version{5, 10}, false, std::nullopt});
    EXPECT_EQ(c.methods[zero_method::nvme].usable, false);
    EXPECT_EQ(c.methods[zero_method::nvme].reason,
              "no passthrough device: neither /dev/ng0n1 nor /dev/nvme0n1 is a device node here");
}

TEST(Methods, NoPassthroughThroughStacksOrCowFilesystems) {
    auto c = raw_nvme(0x09, true, true);
    c.device->kind = "dm";
    assess(c, new_kernel);
    EXPECT_EQ(c.methods[zero_method::nvme].usable, false);
    EXPECT_NE(c.methods[zero_method::nvme].reason.find("stack"), std::string::npos);

    c = raw_nvme(0x09, true, true);
    c.file_type = "regular";
    c.fs = fs_info{};
    c.fs->type = "btrfs";
    c.fs->cow = true;
    assess(c, new_kernel);
    EXPECT_EQ(c.methods[zero_method::nvme_deac].usable, false);
    EXPECT_EQ(c.methods[zero_method::kernel].usable, false);
    EXPECT_EQ(c.methods[zero_method::zeroout].usable, false);
    EXPECT_NE(c.recommended_reason.find("copy-on-write"), std::string::npos);

    c.fs->type = "xfs";
    c.fs->cow = false;
    assess(c, new_kernel);
    EXPECT_EQ(c.methods[zero_method::nvme_deac].usable, true);
    EXPECT_EQ(c.recommended_method, zero_method::write);  // new extents start unwritten
}

TEST(Methods, UnknownIdentifyStaysUnknown) {
    auto c = raw_nvme(0x09, true, true);
    c.nvme->dlfeat.reset();
    c.nvme->deac.reset();
    c.unknown["nvme.dlfeat"] = "Identify Namespace: Permission denied";
    assess(c, new_kernel);
    EXPECT_FALSE(c.methods[zero_method::nvme_deac].usable.has_value());
    EXPECT_NE(c.methods[zero_method::nvme_deac].reason.find("Permission denied"), std::string::npos);
}

TEST(Methods, ZerooutOnBlockDevicesOnly) {
    auto c = raw_nvme(0x01, true, true);
    assess(c, new_kernel);
    EXPECT_EQ(c.methods[zero_method::zeroout].usable, true);
    c.write_zeroes.max_bytes = 0;
    assess(c, new_kernel);
    EXPECT_EQ(c.methods[zero_method::zeroout].usable, true);
    EXPECT_NE(c.methods[zero_method::zeroout].reason.find("zero pages"), std::string::npos);
}

TEST(Methods, WriteNamesTheEngineAndRefusesAForcedIoUringThatCannotRun) {
    auto c = raw_nvme(0x09, true, true);
    c.io = io_engine_info{io_engine::psync, "io_uring setup: Operation not permitted (kernel.io_uring_disabled=2)",
                          false};
    assess(c, new_kernel);
    EXPECT_EQ(c.methods[zero_method::write].usable, true);
    EXPECT_NE(c.methods[zero_method::write].reason.find("psync threads (io_uring setup: Operation not permitted"),
              std::string::npos)
        << c.methods[zero_method::write].reason;

    c.io = io_engine_info{io_engine::io_uring, "forced (WZERO_ENGINE=io_uring)", true};
    assess(c, assess_inputs{kernel_version{7, 2}, true, std::string("io_uring setup: Operation not permitted")});
    EXPECT_EQ(c.methods[zero_method::write].usable, false);
    EXPECT_NE(c.methods[zero_method::write].reason.find("cannot be set up: io_uring setup: Operation not permitted"),
              std::string::npos)
        << c.methods[zero_method::write].reason;
    EXPECT_NE(c.recommended_method, zero_method::write);
}

}  // namespace
}  // namespace wz::plan
