// SPDX-License-Identifier: MIT
#include "probe/nvme_decode.hpp"

#include <gtest/gtest.h>
#include <libnvme.h>

#include <cstddef>
#include <cstring>
#include <fstream>
#include <sstream>

namespace wz::probe::nvme {
namespace {

// The byte offsets this decoder reads must be the ones libnvme's structures use.
TEST(NvmeLayout, OffsetsMatchLibnvme) {
    EXPECT_EQ(offsetof(nvme_id_ns, nsze), 0U);
    EXPECT_EQ(offsetof(nvme_id_ns, nsfeat), 24U);
    EXPECT_EQ(offsetof(nvme_id_ns, nlbaf), 25U);
    EXPECT_EQ(offsetof(nvme_id_ns, flbas), 26U);
    EXPECT_EQ(offsetof(nvme_id_ns, dlfeat), 33U);
    EXPECT_EQ(offsetof(nvme_id_ns, npwg), 64U);
    EXPECT_EQ(offsetof(nvme_id_ns, npdg), 68U);
    EXPECT_EQ(offsetof(nvme_id_ns, npda), 70U);
    EXPECT_EQ(offsetof(nvme_id_ns, lbaf), 128U);
    EXPECT_EQ(offsetof(nvme_id_ctrl, sn), 4U);
    EXPECT_EQ(offsetof(nvme_id_ctrl, mn), 24U);
    EXPECT_EQ(offsetof(nvme_id_ctrl, fr), 64U);
    EXPECT_EQ(offsetof(nvme_id_ctrl, mdts), 77U);
    EXPECT_EQ(offsetof(nvme_id_ctrl, oncs), 520U);
    EXPECT_EQ(offsetof(nvme_id_ctrl, vwc), 525U);
    EXPECT_EQ(offsetof(nvme_id_ctrl_nvm, wzsl), 1U);
    EXPECT_EQ(sizeof(nvme_id_ns), identify_page_bytes);
}

struct dlfeat_case {
    std::uint8_t dlfeat;
    std::uint8_t drb;
    bool wzds, guard, deac;
};

class Dlfeat : public ::testing::TestWithParam<dlfeat_case> {};

TEST_P(Dlfeat, Decodes) {
    const auto& c = GetParam();
    auto f = decode_dlfeat(c.dlfeat);
    EXPECT_EQ(f.read_behavior, c.drb);
    EXPECT_EQ(f.wzds, c.wzds);
    EXPECT_EQ(f.guard_crc, c.guard);
    EXPECT_EQ(f.deac_usable, c.deac);
}

INSTANTIATE_TEST_SUITE_P(
    Table, Dlfeat,
    ::testing::Values(
        // A datacentre drive (`nvme id-ns` prints "dlfeat : 25"): WZDS, DRB=001b and the guard bit.
        dlfeat_case{0x19, 1, true, true, true},
        // nvmet over a device with unmap write zeroes (setup B in TESTRIG.md).
        dlfeat_case{0x09, 1, true, false, true},
        // QEMU's emulated controller: reads zeroes but does not promise WZDS.
        dlfeat_case{0x01, 1, false, false, false},
        // WZDS without a stated read behaviour: deallocated blocks may read anything.
        dlfeat_case{0x08, 0, true, false, false},
        dlfeat_case{0x00, 0, false, false, false},
        // Deallocated blocks read as ones: DEAC would not give zeroes.
        dlfeat_case{0x0a, 2, true, false, false},
        dlfeat_case{0x1f, 7, true, true, false}));

TEST(Dealloc, OptperfBits) {
    // OPTPERF 01b (bit 4, NVMe 2.0 and older): NPDG/NPDA only; 10b/11b (NVMe 2.1): NPDGL/NPDAL too.
    EXPECT_FALSE(npdgl_valid(0x14));
    EXPECT_TRUE(npdgl_valid(0x20));
    EXPECT_TRUE(npdgl_valid(0x32));
    // OPTPERF 10b alone: NPDGL/NPDAL are used, and without NPDGL the 16-bit fields still are.
    auto g = decode_dealloc(0x20, 0, 7, 7, 0, 0, 512);
    ASSERT_TRUE(g.granularity_bytes);
    EXPECT_EQ(*g.granularity_bytes, 4096U);
    EXPECT_EQ(g.source, "npdg/npda");
    g = decode_dealloc(0x20, 0, 7, 7, 32, 0, 512);
    ASSERT_TRUE(g.granularity_bytes);
    EXPECT_EQ(*g.granularity_bytes, 16384U);
    EXPECT_EQ(*g.alignment_bytes, 16384U);
    EXPECT_EQ(g.source, "npdgl/npdal");
}

TEST(Dealloc, ValidOnlyWithOptperf) {
    // NSFEAT 0x04 (DAE) without bit 4: NPDG/NPDA are not to be used whatever they hold.
    auto g = decode_dealloc(0x04, 7, 7, 7, 0, 0, 512);
    EXPECT_FALSE(g.granularity_bytes);
    EXPECT_FALSE(g.alignment_bytes);
    EXPECT_NE(g.reason.find("OPTPERF"), std::string::npos);
}

TEST(Dealloc, ZeroBasedCountsOfBlocks) {
    // QEMU default: nsfeat 0x14, npdg = npda = 7 with 512-byte LBAs -> 4 KiB.
    auto g = decode_dealloc(0x14, 7, 7, 7, 0, 0, 512);
    ASSERT_TRUE(g.granularity_bytes);
    EXPECT_EQ(*g.granularity_bytes, 4096U);
    EXPECT_EQ(*g.alignment_bytes, 4096U);
    EXPECT_EQ(g.source, "npdg/npda");
    // nvmet over scsi_debug: npdg = npda = 15, 512-byte LBAs -> 8 KiB.
    g = decode_dealloc(0x1c, 0, 15, 15, 0, 0, 512);
    EXPECT_EQ(*g.granularity_bytes, 8192U);
    // 64 KiB with 4 KiB LBAs (QEMU discard_granularity=65536,logical_block_size=4096).
    g = decode_dealloc(0x10, 15, 15, 15, 0, 0, 4096);
    EXPECT_EQ(*g.granularity_bytes, 65536U);
    // Alignment and granularity may differ.
    g = decode_dealloc(0x10, 0, 255, 7, 0, 0, 4096);
    EXPECT_EQ(*g.granularity_bytes, 1048576U);
    EXPECT_EQ(*g.alignment_bytes, 32768U);
    // Largest 16-bit value: 65536 blocks.
    g = decode_dealloc(0x10, 0, 0xffff, 0xffff, 0, 0, 4096);
    EXPECT_EQ(*g.granularity_bytes, 65536ULL * 4096);
}

TEST(Dealloc, LargeFieldsFromNvme21) {
    // OPTPERF = 10b (NSFEAT bits 5:4): NPDGL/NPDAL valid, not 0's based.
    auto g = decode_dealloc(0x20, 0, 0xffff, 0xffff, 1U << 20, 1U << 19, 4096);
    EXPECT_EQ(*g.granularity_bytes, (1ULL << 20) * 4096);
    EXPECT_EQ(*g.alignment_bytes, (1ULL << 19) * 4096);
    EXPECT_EQ(g.source, "npdgl/npdal");
    // OPTPERF = 11b but NPDGL = 0: the 16-bit fields apply.
    g = decode_dealloc(0x30, 0, 15, 15, 0, 0, 4096);
    EXPECT_EQ(*g.granularity_bytes, 65536U);
    EXPECT_EQ(g.source, "npdg/npda");
    // NPDAL = 0 with NPDGL set: align to the granularity.
    g = decode_dealloc(0x20, 0, 0, 0, 64, 0, 512);
    EXPECT_EQ(*g.alignment_bytes, 64U * 512);
}

TEST(Dealloc, UnknownBlockSize) {
    EXPECT_FALSE(decode_dealloc(0x10, 0, 7, 7, 0, 0, 0).granularity_bytes);
}

identify_page page_with(std::initializer_list<std::pair<std::size_t, std::uint8_t>> bytes) {
    identify_page p{};
    for (auto [off, v] : bytes) {
        p[off] = v;
    }
    return p;
}

TEST(IdNs, ParsesFieldsAndFormat) {
    // nsze 0x80000, nsfeat 0x14, nlbaf 1, flbas 1, dlfeat 9, npdg 15, npda 15,
    // lbaf0: 512 B (lbads 9), lbaf1: 4 KiB (lbads 12).
    auto p = page_with({{2, 0x08}, {24, 0x14}, {25, 1}, {26, 1}, {33, 9}, {68, 15}, {70, 15},
                        {128 + 2, 9}, {132 + 2, 12}});
    auto f = parse_id_ns(p);
    EXPECT_EQ(f.nsze, 0x80000U);
    EXPECT_EQ(f.nsfeat, 0x14);
    EXPECT_EQ(f.dlfeat, 9);
    EXPECT_EQ(f.npdg, 15);
    EXPECT_EQ(f.npda, 15);
    EXPECT_EQ(lba_bytes(p), 4096U);
    // FLBAS bits 6:5 extend the index: 0x21 -> format 17.
    auto q = page_with({{26, 0x21}, {128 + 4 * 17 + 2, 12}});
    EXPECT_EQ(lba_bytes(q), 4096U);
    // An LBADS below 9 is invalid.
    auto r = page_with({{26, 0}, {128 + 2, 3}});
    EXPECT_FALSE(lba_bytes(r));
}

TEST(IdCtrl, ParsesFields) {
    auto p = page_with({{77, 7}, {520, 0x5d}, {521, 0x01}, {525, 0x07}});
    std::memcpy(p.data() + 24, "QEMU NVMe Ctrl                          ", 40);
    std::memcpy(p.data() + 4, "wz1                 ", 20);
    auto f = parse_id_ctrl(p);
    EXPECT_EQ(f.mdts, 7);
    EXPECT_EQ(f.oncs, 0x15d);
    EXPECT_NE(f.oncs & oncs_write_zeroes_bit, 0);
    EXPECT_EQ(f.vwc, 7);
    EXPECT_TRUE(vwc_present(f.vwc));
    EXPECT_FALSE(vwc_present(0x06));
    EXPECT_EQ(f.model, "QEMU NVMe Ctrl");
    EXPECT_EQ(f.serial, "wz1");
    EXPECT_EQ((0x15dU & oncs_write_zeroes_bit) != 0, true);
    EXPECT_EQ((0x155U & oncs_write_zeroes_bit) != 0, false);
}

TEST(NvmIdNs, LargeFieldsAtTheirOffsets) {
    auto p = page_with({{268, 0x00}, {269, 0x01}, {284, 0x80}});
    auto f = parse_nvm_id_ns(p);
    EXPECT_EQ(f.npdgl, 0x100U);
    EXPECT_EQ(f.npdal, 0x80U);
}

TEST(Features, WriteCacheEnable) {
    EXPECT_TRUE(wce_enabled(1));
    EXPECT_FALSE(wce_enabled(0));
    EXPECT_FALSE(wce_enabled(0xfffffffe));
}

TEST(Limits, PowersOfTwoOfMinimumPageSize) {
    EXPECT_EQ(limit_bytes(0, 4096), 0U);  // no limit stated
    EXPECT_EQ(limit_bytes(7, 4096), 512U * 1024);
    EXPECT_EQ(limit_bytes(5, 4096), 128U * 1024);
    EXPECT_FALSE(limit_bytes(5, std::nullopt));
    EXPECT_EQ(limit_bytes(0, std::nullopt), 0U);
}

// fuzz/fuzz_nvme_rules: MPSMIN 128 MiB (CAP.MPSMIN 15) with WZSL 37..39 shifted past 64 bits
// and came out 0, which reads as "no limit stated"; a limit 64 bits cannot hold is none we
// can use. Below that, exponents past 39 are a plain shift.
TEST(Limits, NoWrapPastSixtyFourBits) {
    constexpr std::uint64_t mps_max = std::uint64_t{4096} << 15;
    EXPECT_EQ(limit_bytes(36, mps_max), std::uint64_t{1} << 63);
    EXPECT_FALSE(limit_bytes(37, mps_max));
    EXPECT_FALSE(limit_bytes(39, mps_max));
    EXPECT_EQ(limit_bytes(51, 4096), std::uint64_t{1} << 63);
    EXPECT_FALSE(limit_bytes(52, 4096));
    EXPECT_FALSE(limit_bytes(255, 4096));
    EXPECT_EQ(limit_bytes(40, 4096), std::uint64_t{1} << 52);
}

TEST(Names, ControllerAndCharDevice) {
    EXPECT_EQ(controller_name("nvme0n1"), "nvme0");
    EXPECT_EQ(controller_name("nvme12n3"), "nvme12");
    EXPECT_EQ(controller_name("nvme1c2n1"), "nvme1");
    EXPECT_EQ(controller_name("sda"), "");
    EXPECT_EQ(generic_char_name("nvme0n1"), "ng0n1");
    EXPECT_EQ(generic_char_name("nvme12n3"), "ng12n3");
    EXPECT_EQ(generic_char_name("loop0"), "");
    EXPECT_EQ(generic_char_name("nvme0"), "");
}

TEST(Names, PassthroughRoute) {
    nvme_info n;
    n.namespace_device = "/dev/nvme0n1";
    n.char_device = "/dev/ng0n1";
    set_passthrough_route(n, "ng0n1", true);
    EXPECT_EQ(n.passthrough, passthrough_route::char_device);
    EXPECT_EQ(n.passthrough_device, "/dev/ng0n1");
    EXPECT_NE(n.passthrough_reason.find("uring_cmd"), std::string::npos) << n.passthrough_reason;

    n.char_device.clear();  // Linux 5.10 to 5.12: no /dev/ngXnY
    set_passthrough_route(n, "ng0n1", true);
    EXPECT_EQ(n.passthrough, passthrough_route::block_device);
    EXPECT_EQ(n.passthrough_device, "/dev/nvme0n1");
    EXPECT_NE(n.passthrough_reason.find("no /dev/ng0n1 (the generic char device needs Linux 5.13)"),
              std::string::npos)
        << n.passthrough_reason;
    EXPECT_NE(n.passthrough_reason.find("NVME_IOCTL_IO_CMD on the namespace's block device /dev/nvme0n1"),
              std::string::npos)
        << n.passthrough_reason;

    set_passthrough_route(n, "ng0n1", false);
    EXPECT_EQ(n.passthrough, passthrough_route::none);
    EXPECT_EQ(n.passthrough_device, "");
    EXPECT_EQ(n.passthrough_reason, "neither /dev/ng0n1 nor /dev/nvme0n1 is a device node here");
    EXPECT_STREQ(to_string(passthrough_route::block_device), "block_device");
}

// Pages recorded with `nvme id-ns -b` / `nvme id-ctrl -b` inside the VM rig
// (fstests/vm/run), stored as hexdump -v -e '16/1 "%02x " "\n"'.
identify_page load_hex(const std::string& name) {
    identify_page p{};
    std::ifstream in(std::string(WZERO_TESTDATA) + "/" + name);
    EXPECT_TRUE(in) << name;
    std::size_t i = 0;
    unsigned v = 0;
    while (i < p.size() && (in >> std::hex >> v)) {
        p[i++] = static_cast<std::uint8_t>(v);
    }
    EXPECT_EQ(i, p.size()) << name;
    return p;
}

TEST(Recorded, QemuNamespaceSetupA) {
    auto ns = load_hex("qemu-7.2-id-ns.hex");
    auto f = parse_id_ns(ns);
    EXPECT_EQ(f.nsfeat, 0x14);
    EXPECT_EQ(f.dlfeat, 0x01);
    EXPECT_FALSE(decode_dlfeat(f.dlfeat).deac_usable);
    auto g = decode_dealloc(f.nsfeat, f.npwg, f.npdg, f.npda, 0, 0, *lba_bytes(ns));
    EXPECT_EQ(*g.granularity_bytes, 4096U);
    auto c = parse_id_ctrl(load_hex("qemu-7.2-id-ctrl.hex"));
    EXPECT_EQ(c.oncs, 0x15d);
    EXPECT_TRUE(vwc_present(c.vwc));
    EXPECT_EQ(c.mdts, 7);
}

TEST(Recorded, NvmetOverScsiDebugSetupB) {
    auto ns = load_hex("nvmet-scsi_debug-id-ns.hex");
    auto f = parse_id_ns(ns);
    EXPECT_EQ(f.dlfeat, 0x09);
    EXPECT_TRUE(decode_dlfeat(f.dlfeat).deac_usable);
    EXPECT_EQ(f.nsfeat, 0x32);  // OPTPERF = 11b: NPDGL/NPDAL valid
    EXPECT_TRUE(npdgl_valid(f.nsfeat));
    EXPECT_EQ(f.npdg, 15);
    auto large = parse_nvm_id_ns(load_hex("nvmet-scsi_debug-nvm-id-ns.hex"));
    // The same 8 KiB as NPDG (0's based 15), stated as a plain count of 16 blocks.
    EXPECT_EQ(large.npdgl, 16U);
    EXPECT_EQ(large.npdal, 16U);
    auto g = decode_dealloc(f.nsfeat, f.npwg, f.npdg, f.npda, large.npdgl, large.npdal, *lba_bytes(ns));
    ASSERT_TRUE(g.granularity_bytes);
    EXPECT_EQ(*g.granularity_bytes, 8192U);
    EXPECT_EQ(*g.alignment_bytes, 8192U);
    EXPECT_EQ(g.source, "npdgl/npdal");
    auto c = parse_id_ctrl(load_hex("nvmet-scsi_debug-id-ctrl.hex"));
    EXPECT_NE(c.oncs & oncs_write_zeroes_bit, 0);
    EXPECT_EQ(c.vwc & 1, 1);
}

}  // namespace
}  // namespace wz::probe::nvme
