// SPDX-License-Identifier: MIT
#include "plan/zero_plan.hpp"

#include "plan/assess.hpp"
#include "plan/method_order.hpp"
#include "probe/nvme_decode.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

namespace wz::plan {
namespace {

using extent::kind;

nvme_geometry geo(std::uint32_t lba, std::optional<std::uint64_t> npdg, std::optional<std::uint64_t> npda,
                  bool deac, std::uint32_t max_nlb = 65536) {
    nvme_geometry g;
    g.lba_bytes = lba;
    g.npdg_bytes = npdg;
    g.npda_bytes = npda;
    g.deac = deac;
    g.max_nlb = max_nlb;
    return g;
}

// Every command in range, contiguous, NLB in 1..65536, exact cover of [slba, slba+n).
void expect_exact_cover(const std::vector<operation>& ops, std::uint64_t slba, std::uint64_t n) {
    std::uint64_t at = slba;
    for (const auto& op : ops) {
        ASSERT_EQ(op.kind, op_kind::nvme_write_zeroes);
        EXPECT_EQ(op.slba, at);
        EXPECT_GE(op.nlb, 1U);
        EXPECT_LE(op.nlb, 65536U);
        at += op.nlb;
    }
    EXPECT_EQ(at, slba + n);
}

TEST(SplitNvme, NoDeacIsOneChunkedRun) {
    std::vector<operation> ops;
    split_nvme_range(geo(512, 4096, 4096, false), 100, 300, 51200, "r", ops);
    ASSERT_EQ(ops.size(), 1U);
    EXPECT_EQ(ops[0].slba, 100U);
    EXPECT_EQ(ops[0].nlb, 300U);
    EXPECT_FALSE(ops[0].deac);
    EXPECT_EQ(ops[0].offset, 51200U);
    EXPECT_EQ(ops[0].length, 300U * 512);
}

TEST(SplitNvme, SixteenBitNlbLimit) {
    std::vector<operation> ops;
    split_nvme_range(geo(512, std::nullopt, std::nullopt, false), 0, 200000, 0, "r", ops);
    expect_exact_cover(ops, 0, 200000);
    ASSERT_EQ(ops.size(), 4U);
    EXPECT_EQ(ops[0].nlb, 65536U);
    EXPECT_EQ(ops[3].nlb, 200000U - 3 * 65536);
}

TEST(SplitNvme, DeacOnlyOnTheAlignedMiddle) {
    // 8 KiB granularity/alignment with 512-byte blocks (setup B): 16-block granules.
    std::vector<operation> ops;
    split_nvme_range(geo(512, 8192, 8192, true), 5, 100, 0, "r", ops);
    expect_exact_cover(ops, 5, 100);
    ASSERT_EQ(ops.size(), 3U);
    EXPECT_FALSE(ops[0].deac);  // head [5, 16)
    EXPECT_EQ(ops[0].nlb, 11U);
    EXPECT_TRUE(ops[1].deac);  // [16, 96): five granules
    EXPECT_EQ(ops[1].slba, 16U);
    EXPECT_EQ(ops[1].nlb, 80U);
    EXPECT_FALSE(ops[2].deac);  // tail [96, 105)
    EXPECT_EQ(ops[2].nlb, 9U);
    for (const auto& op : ops) {
        if (op.deac) {
            EXPECT_EQ(op.slba * 512 % 8192, 0U);
            EXPECT_EQ(op.nlb * 512ULL % 8192, 0U);
        }
    }
}

TEST(SplitNvme, AlreadyAlignedHasNoHeadOrTail) {
    std::vector<operation> ops;
    split_nvme_range(geo(4096, 65536, 65536, true), 32, 64, 0, "r", ops);
    ASSERT_EQ(ops.size(), 1U);
    EXPECT_TRUE(ops[0].deac);
    EXPECT_EQ(ops[0].nlb, 64U);
}

TEST(SplitNvme, TooSmallForAGranuleHasNoDeac) {
    std::vector<operation> ops;
    split_nvme_range(geo(4096, 65536, 65536, true), 3, 10, 0, "r", ops);
    expect_exact_cover(ops, 3, 10);
    for (const auto& op : ops) {
        EXPECT_FALSE(op.deac);
    }
}

TEST(SplitNvme, DeacChunksStayGranuleMultiples) {
    // Granule of 48 blocks, command limit of 100 blocks: DEAC chunks of 96.
    std::vector<operation> ops;
    split_nvme_range(geo(512, 48 * 512, 48 * 512, true, 100), 0, 1000, 0, "r", ops);
    expect_exact_cover(ops, 0, 1000);
    for (const auto& op : ops) {
        if (op.deac) {
            EXPECT_EQ(op.nlb % 48, 0U);
            EXPECT_LE(op.nlb, 100U);
        } else {
            EXPECT_GE(op.slba, 960U);  // only the tail is without DEAC
        }
    }
}

TEST(SplitNvme, DifferentAlignmentAndGranularity) {
    // Alignment 4 blocks, granularity 16: the middle starts on 4, is a multiple of 16.
    std::vector<operation> ops;
    split_nvme_range(geo(512, 16 * 512, 4 * 512, true), 1, 40, 0, "r", ops);
    expect_exact_cover(ops, 1, 40);
    ASSERT_EQ(ops.size(), 3U);
    EXPECT_EQ(ops[1].slba, 4U);
    EXPECT_EQ(ops[1].nlb, 32U);
    EXPECT_TRUE(ops[1].deac);
}

// `wzero map`'s dealloc_aligned and the split agree: a span is aligned exactly when the
// split would send all of it with DEAC.
struct dealloc_row {
    std::uint64_t slba;
    std::uint64_t nlb;
    std::uint32_t lba_bytes;
    std::uint64_t npdg_bytes;
    std::uint64_t npda_bytes;
    bool expected;
};

TEST(DeallocAligned, TableAgreesWithTheSplit) {
    constexpr std::uint64_t mi = 1ULL << 20;
    const dealloc_row rows[] = {
        {0, 8, 512, 4096, 4096, true},
        {8, 8, 512, 4096, 4096, true},
        {1, 8, 512, 4096, 4096, false},  // start not on NPDA
        {8, 7, 512, 4096, 4096, false},  // length not a multiple of NPDG
        {8, 1, 4096, 4096, 4096, true},
        {256, 512, 4096, 2 * mi, 1 * mi, true},
        {256, 256, 4096, 2 * mi, 1 * mi, false},  // 1 MiB long, granularity 2 MiB
        {128, 512, 4096, 2 * mi, 1 * mi, false},  // starts at 512 KiB
        {3, 5, 512, 512, 512, true},              // granularity of one LBA
    };
    for (const auto& row : rows) {
        const nvme_geometry g = geo(row.lba_bytes, row.npdg_bytes, row.npda_bytes, true);
        EXPECT_EQ(dealloc_aligned(g, row.slba, row.nlb), row.expected)
            << "slba " << row.slba << " nlb " << row.nlb << " lba_bytes " << row.lba_bytes << " npdg "
            << row.npdg_bytes << " npda " << row.npda_bytes;
        std::vector<operation> ops;
        split_nvme_range(g, row.slba, row.nlb, 0, "r", ops);
        const bool all_deac =
            !ops.empty() && std::all_of(ops.begin(), ops.end(), [](const operation& op) { return op.deac; });
        EXPECT_EQ(all_deac, row.expected) << "split of slba " << row.slba << " nlb " << row.nlb;
    }
}

TEST(DeallocAligned, BlocksOfTheGeometry) {
    auto b = dealloc_blocks_of(geo(512, 8192, 4096, true));
    EXPECT_EQ(b.granularity, 16U);
    EXPECT_EQ(b.alignment, 8U);
    b = dealloc_blocks_of(geo(4096, std::nullopt, std::nullopt, true));  // not stated: one block
    EXPECT_EQ(b.granularity, 1U);
    EXPECT_EQ(b.alignment, 1U);
}

TEST(SplitWrite, AlignedMiddleDirectEdgesBuffered) {
    std::vector<operation> ops;
    split_write_range(100, 10000, 4096, "w", ops);
    ASSERT_EQ(ops.size(), 3U);
    EXPECT_EQ(ops[0].kind, op_kind::write_buffered);
    EXPECT_EQ(ops[0].offset, 100U);
    EXPECT_EQ(ops[0].length, 3996U);
    EXPECT_EQ(ops[1].kind, op_kind::write_direct);
    EXPECT_EQ(ops[1].offset, 4096U);
    EXPECT_EQ(ops[1].length, 4096U);
    EXPECT_EQ(ops[2].kind, op_kind::write_buffered);
    EXPECT_EQ(ops[2].offset, 8192U);
    EXPECT_EQ(ops[2].length, 10100U - 8192);
}

TEST(SplitWrite, InsideOneBlockIsBuffered) {
    std::vector<operation> ops;
    split_write_range(10, 20, 4096, "w", ops);
    ASSERT_EQ(ops.size(), 1U);
    EXPECT_EQ(ops[0].kind, op_kind::write_buffered);
    EXPECT_EQ(ops[0].length, 20U);
}

TEST(SplitWrite, NoDirectIo) {
    std::vector<operation> ops;
    split_write_range(0, 1 << 20, 0, "w", ops);
    ASSERT_EQ(ops.size(), 1U);
    EXPECT_EQ(ops[0].kind, op_kind::write_buffered);
}

capabilities nvme_file(std::uint8_t dlfeat, const std::string& fstype = "ext4") {
    capabilities c;
    c.path = "/mnt/f";
    c.file_type = "regular";
    c.fs = fs_info{};
    c.fs->type = fstype;
    c.fs->cow = fstype == "btrfs";
    c.dio = dio_alignment{512, 512};
    c.device = device_info{};
    c.device->kind = "nvme";
    c.device->disk = "/dev/nvme0n1";
    c.device->partition = true;
    c.device->partition_start_bytes = 1 << 20;
    c.device->logical_block_size = 512;
    c.write_zeroes.max_bytes = 512 * 1024;
    c.write_zeroes.unmap = false;
    c.cache.kernel = cache_mode::write_back;
    nvme_info n;
    n.namespace_device = "/dev/nvme0n1";
    n.char_device = "/dev/ng0n1";
    probe::nvme::set_passthrough_route(n, "ng0n1", true);
    n.lba_bytes = 512;
    n.nsze_lba = 1 << 21;
    n.oncs = 0x15d;
    n.write_zeroes_supported = true;
    n.dlfeat = dlfeat;
    const auto dl = probe::nvme::decode_dlfeat(dlfeat);  // as the probe derives them
    n.wzds = dl.wzds;
    n.dlfeat_read_behavior = dl.read_behavior;
    n.deac = dl.deac_usable;
    n.npdg_bytes = 8192;
    n.npda_bytes = 8192;
    n.wzsl = 0;
    n.wzsl_max_bytes = 0;
    n.vwc_present = true;
    n.vwc_enabled = true;
    c.nvme = n;
    assess(c, assess_inputs{kernel_version{7, 2}, true, std::nullopt});
    return c;
}

extent::extent ext(std::uint64_t off, std::uint64_t len, kind k, std::optional<std::uint64_t> phys = std::nullopt) {
    extent::extent e;
    e.offset = off;
    e.length = len;
    e.type = k;
    e.physical = phys;
    return e;
}

// The zeroing operations of a file plan (allocation aside) cover [offset, offset + length)
// exactly: in order, no gap, no overlap, and each NVMe command's blocks are its bytes. An
// empty plan fails here rather than passing every per-operation check vacuously.
void expect_file_cover(const std::vector<operation>& ops, std::uint64_t offset, std::uint64_t length) {
    ASSERT_FALSE(ops.empty());
    std::uint64_t at = offset;
    for (const auto& op : ops) {
        if (op.kind == op_kind::allocate) {
            continue;
        }
        EXPECT_EQ(op.offset, at) << op.reason;
        if (op.kind == op_kind::nvme_write_zeroes) {
            EXPECT_EQ(std::uint64_t{op.nlb} * 512, op.length) << op.reason;
        }
        at = op.offset + op.length;
    }
    EXPECT_EQ(at, offset + length);
}

TEST(PlanFile, WrittenExtentsInPlaceUnwrittenByWrites) {
    auto c = nvme_file(0x09);
    request req{0, 3 << 20};
    std::vector<extent::extent> es = {ext(0, 1 << 20, kind::written, 8 << 20),
                                      ext(1 << 20, 1 << 20, kind::unwritten, 9 << 20),
                                      ext(2 << 20, 1 << 20, kind::hole)};
    auto p = plan_file_extents(c, req, es);
    ASSERT_TRUE(p) << p.error().message;
    expect_file_cover(p->operations, 0, 3 << 20);
    std::uint64_t nvme_bytes = 0, write_bytes = 0;
    for (const auto& op : p->operations) {
        if (op.kind == op_kind::nvme_write_zeroes) {
            nvme_bytes += op.length;
            // Namespace LBAs: the partition's start is added to FIEMAP's physical offset
            // (the extent at file offset 0 is at 8 MiB).
            EXPECT_EQ(op.slba, ((8U << 20) + (1U << 20) + op.offset) / 512);
            EXPECT_TRUE(op.deac);  // 8 MiB + 1 MiB is 8 KiB aligned
        } else {
            EXPECT_EQ(op.kind, op_kind::write_direct);
            EXPECT_GE(op.offset, 1U << 20);
            write_bytes += op.length;
        }
    }
    EXPECT_EQ(nvme_bytes, 1U << 20);
    EXPECT_EQ(write_bytes, 2U << 20);
    // The unwritten extent and the hole merge into one write run.
    EXPECT_EQ(p->operations.back().length, 2U << 20);
}

TEST(PlanFile, NoDeacWithoutWzds) {
    auto c = nvme_file(0x01);
    request req{0, 1 << 20};
    std::vector<extent::extent> es = {ext(0, 1 << 20, kind::written, 8 << 20)};
    auto p = plan_file_extents(c, req, es);
    ASSERT_TRUE(p);
    expect_file_cover(p->operations, 0, 1 << 20);
    // One command in place, at the extent's namespace LBA: FIEMAP's 8 MiB plus the
    // partition's 1 MiB, in 512-byte blocks; DRB=001b alone (WZDS=0) gives no DEAC.
    ASSERT_EQ(p->operations.size(), 1U);
    EXPECT_EQ(p->operations[0].kind, op_kind::nvme_write_zeroes);
    EXPECT_EQ(p->operations[0].slba, ((8U << 20) + (1U << 20)) / 512);
    EXPECT_EQ(p->operations[0].nlb, 2048U);
    EXPECT_FALSE(p->operations[0].deac);
}

TEST(PlanFile, SharedAndOddExtentsAreNeverZeroedInPlace) {
    auto c = nvme_file(0x09, "xfs");
    request req{0, 5 * 4096};
    std::vector<extent::extent> es = {ext(0, 4096, kind::shared, 1 << 20), ext(4096, 4096, kind::encoded),
                                      ext(8192, 4096, kind::delalloc), ext(12288, 4096, kind::unknown),
                                      ext(16384, 4096, kind::inline_data)};
    auto p = plan_file_extents(c, req, es);
    ASSERT_TRUE(p);
    // Data writes over all five extents, none in place.
    expect_file_cover(p->operations, 0, 5 * 4096);
    for (const auto& op : p->operations) {
        EXPECT_EQ(op.kind, op_kind::write_direct) << op.reason;
    }
}

TEST(PlanFile, InPlacePolicy) {
    auto c = nvme_file(0x09);
    std::vector<extent::extent> es = {ext(0, 1 << 20, kind::written, 8 << 20)};
    request never{0, 1 << 20, method_request::automatic, true, in_place_mode::never};
    auto p = plan_file_extents(c, never, es);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->operations.at(0).kind, op_kind::write_direct);

    auto nonvme = nvme_file(0x09);
    nonvme.methods[zero_method::nvme].usable = false;
    nonvme.methods[zero_method::nvme_deac].usable = false;
    request require{0, 1 << 20, method_request::automatic, true, in_place_mode::require};
    auto q = plan_file_extents(nonvme, require, es);
    ASSERT_FALSE(q);
    EXPECT_EQ(q.error().code.value(), ENOTSUP);
}

// in_place_mode::require: which extents refuse a range, under which conditions. The rule the
// executor holds over the whole range before any I/O, and plan_file_extents again per batch.
TEST(PlanFile, RequireInPlaceRuleTable) {
    auto with_nvme = nvme_file(0x09, "xfs");
    auto without_nvme = nvme_file(0x09, "xfs");
    without_nvme.methods[zero_method::nvme].usable = false;
    without_nvme.methods[zero_method::nvme_deac].usable = false;
    const request require{0, 1 << 20, method_request::automatic, true, in_place_mode::require};
    request write_only = require;
    write_only.method = method_request::write;
    request automatic = require;
    automatic.in_place = in_place_mode::automatic;
    request never = require;
    never.in_place = in_place_mode::never;
    // An unaligned range: its first and last pages are partial (edge pages).
    const request edges{100, (1 << 20) - 200, method_request::automatic, true, in_place_mode::require};

    struct row {
        const char* name;
        const capabilities* caps;
        const request* req;
        std::vector<extent::extent> extents;
        bool written_needs_nvme;
        const char* refusal;  // nullptr: passes; else a substring of the message
        // What a caller can change: another method (in_place_excluded), or nothing here.
        error_reason reason = error_reason::method_unavailable;
    };
    const std::uint64_t M = 1 << 20;
    const std::vector<row> rows = {
        {"written, NVMe can reach it", &with_nvme, &require, {ext(0, M, kind::written, 8 * M)}, true, nullptr},
        {"holes and unwritten extents, no NVMe", &without_nvme, &require,
         {ext(0, M / 2, kind::hole), ext(M / 2, M / 2, kind::unwritten, 9 * M)}, true, nullptr},
        {"shared", &with_nvme, &require, {ext(0, M, kind::shared, 8 * M)}, true, "the shared extent at [offset 0"},
        {"shared, the kernel still to be tried", &with_nvme, &require, {ext(0, M, kind::shared, 8 * M)}, false,
         "shared with another file"},
        {"shared after a hole", &with_nvme, &require, {ext(0, M / 2, kind::hole), ext(M / 2, M / 2, kind::shared, 8 * M)},
         true, "shared extent at [offset 524288, length 524288]"},
        {"encoded", &with_nvme, &require, {ext(0, M, kind::encoded)}, true, "encoded"},
        {"encrypted", &with_nvme, &require, {ext(0, M, kind::encrypted, 8 * M)}, true, "encrypted"},
        {"inline", &with_nvme, &require, {ext(0, M, kind::inline_data)}, true, "inside filesystem metadata"},
        {"delalloc", &with_nvme, &require, {ext(0, M, kind::delalloc)}, true, "delayed allocation"},
        {"unknown", &with_nvme, &require, {ext(0, M, kind::unknown)}, true, "does not say where"},
        {"written without an address", &with_nvme, &require, {ext(0, M, kind::written)}, true, "no device address"},
        {"written, no NVMe", &without_nvme, &require, {ext(0, M, kind::written, 8 * M)}, true,
         "the written extent at offset 0 cannot be zeroed in place"},
        {"written, no NVMe, the kernel still to be tried", &without_nvme, &require,
         {ext(0, M, kind::written, 8 * M)}, false, nullptr},
        {"written, method write", &with_nvme, &write_only, {ext(0, M, kind::written, 8 * M)}, true,
         "the requested method never zeroes in place", error_reason::in_place_excluded},
        // The edge pages go through the page cache over the same blocks: a written extent
        // only there passes even without NVMe; a shared one never does.
        {"written only in the edge pages, no NVMe", &without_nvme, &edges,
         {ext(100, 3996, kind::written, 8 * M), ext(4096, M - 8192, kind::hole),
          ext(M - 4096, 3996, kind::written, 9 * M)},
         true, nullptr},
        {"shared only in an edge page", &with_nvme, &edges,
         {ext(100, 3996, kind::shared, 8 * M), ext(4096, M - 4196, kind::hole)}, true, "shared extent at [offset 100"},
        {"shared, in_place automatic", &with_nvme, &automatic, {ext(0, M, kind::shared, 8 * M)}, true, nullptr},
        {"shared, in_place never", &with_nvme, &never, {ext(0, M, kind::shared, 8 * M)}, true, nullptr},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.name);
        auto s = check_in_place_required(*r.caps, *r.req, r.extents, r.written_needs_nvme);
        if (r.refusal == nullptr) {
            EXPECT_TRUE(s.ok()) << s.error().message;
            continue;
        }
        ASSERT_FALSE(s.ok());
        EXPECT_EQ(s.code().value(), ENOTSUP);
        EXPECT_EQ(s.error().reason, r.reason);
        EXPECT_NE(s.error().message.find(r.refusal), std::string::npos) << s.error().message;
        EXPECT_EQ(s.error().message.rfind("/mnt/f: in-place zeroing required", 0), 0U) << s.error().message;
    }
}

// plan_file_extents holds the same rule on the batch it plans: a shared extent under
// require is refused, never planned as data writes (which would copy it).
TEST(PlanFile, RequireInPlaceRefusesSharedInThePlan) {
    auto c = nvme_file(0x09, "xfs");
    const request require{0, 3 << 20, method_request::automatic, true, in_place_mode::require};
    const std::vector<extent::extent> es = {ext(0, 1 << 20, kind::written, 8 << 20), ext(1 << 20, 1 << 20, kind::hole),
                                            ext(2 << 20, 1 << 20, kind::shared, 16 << 20)};
    auto p = plan_file_extents(c, require, es);
    ASSERT_FALSE(p);
    EXPECT_EQ(p.error().code.value(), ENOTSUP);
    EXPECT_NE(p.error().message.find("shared extent at [offset 2097152, length 1048576]"), std::string::npos)
        << p.error().message;
    request automatic = require;
    automatic.in_place = in_place_mode::automatic;
    auto q = plan_file_extents(c, automatic, es);
    ASSERT_TRUE(q);
    EXPECT_EQ(q->operations.back().kind, op_kind::write_direct);  // shared: data writes, as ever
}

TEST(PlanFile, UnalignedEdgesOfAClippedExtent) {
    auto c = nvme_file(0x09);
    request req{100, 10000};
    std::vector<extent::extent> es = {ext(100, 10000, kind::written, (8 << 20) + 100)};
    auto p = plan_file_extents(c, req, es);
    ASSERT_TRUE(p);
    std::uint64_t covered = 0;
    for (const auto& op : p->operations) {
        covered += op.length;
    }
    EXPECT_EQ(covered, 10000U);
    EXPECT_EQ(p->operations.front().kind, op_kind::write_buffered);
    EXPECT_EQ(p->operations.back().kind, op_kind::write_buffered);
}

TEST(PlanFile, GapInTheMapIsAnError) {
    auto c = nvme_file(0x09);
    request req{0, 8192};
    std::vector<extent::extent> es = {ext(0, 4096, kind::written, 0)};
    EXPECT_FALSE(plan_file_extents(c, req, es));
}

TEST(PlanFile, FirstStage) {
    auto c = nvme_file(0x09);
    request req{0, 1 << 20};
    auto s = plan_file_first_stage(c, req);
    ASSERT_TRUE(s);
    EXPECT_FALSE(s->try_kernel);  // no unmap write zeroes
    req.method = method_request::kernel;
    req.fallback = false;
    auto t = plan_file_first_stage(c, req);
    ASSERT_FALSE(t);
    EXPECT_EQ(t.error().code.value(), ENOTSUP);

    c.write_zeroes.unmap = true;
    c.write_zeroes.unmap_max_bytes = 1 << 20;
    assess(c, assess_inputs{kernel_version{7, 2}, true, std::nullopt});
    req.method = method_request::automatic;
    EXPECT_TRUE(plan_file_first_stage(c, req)->try_kernel);
    req.method = method_request::write;
    EXPECT_FALSE(plan_file_first_stage(c, req)->try_kernel);
}

// ext2 (and ext3/ext4 files without extents) have no fallocate(2): the record says so, and
// the plan has no allocate step, only data writes that allocate the holes.
TEST(PlanFile, NoFallocateMeansDataWritesAllocate) {
    auto c = nvme_file(0x09, "ext2");
    c.fs->fallocate = false;
    c.fs->fallocate_reason = "ext2 file mapped by indirect blocks";
    c.write_zeroes.unmap = true;
    c.write_zeroes.unmap_max_bytes = 1 << 20;
    assess(c, assess_inputs{kernel_version{7, 2}, true, std::nullopt});
    EXPECT_EQ(c.methods[zero_method::kernel].usable, false);
    EXPECT_EQ(c.recommended_method, zero_method::write);

    request req{1000, 65536};
    auto first = plan_file_first_stage(c, req);
    ASSERT_TRUE(first);
    EXPECT_FALSE(first->try_kernel);
    const auto how = plan_file_allocation(c, req);
    EXPECT_FALSE(how.allocate);
    EXPECT_NE(how.reason.find("data writes allocate"), std::string::npos) << how.reason;

    // Without an allocation the range is a hole (and past the end of the file: FIEMAP's walk
    // reports a hole there too): all of it by data writes, none zeroed in place.
    std::vector<extent::extent> es = {ext(1000, 65536, kind::hole)};
    auto p = plan_file_extents(c, req, es);
    ASSERT_TRUE(p);
    std::uint64_t covered = 0;
    for (const auto& op : p->operations) {
        EXPECT_TRUE(op.kind == op_kind::write_direct || op.kind == op_kind::write_buffered) << to_string(op.kind);
        covered += op.length;
    }
    EXPECT_EQ(covered, 65536U);
}

TEST(PlanFile, AllocationWhereFallocateIsKnownOrNot) {
    auto c = nvme_file(0x09, "xfs");
    request req{0, 1 << 20};
    c.fs->fallocate = true;
    EXPECT_TRUE(plan_file_allocation(c, req).allocate);
    c.fs->fallocate.reset();  // not known: tried
    EXPECT_TRUE(plan_file_allocation(c, req).allocate);

    // A refusal at run time: go on with data writes, and say so ...
    for (auto m : {method_request::automatic, method_request::write, method_request::kernel}) {
        for (bool fallback : {true, false}) {
            if (m == method_request::kernel && !fallback) {
                continue;  // refused before allocation (first stage)
            }
            req.method = m;
            req.fallback = fallback;
            auto note = allocation_refused(c, req, "fallocate /mnt/f: Operation not supported");
            ASSERT_TRUE(note);
            EXPECT_NE(note->find("data writes"), std::string::npos) << *note;
        }
    }
    // ... except where data writes are not allowed.
    req.method = method_request::nvme;
    req.fallback = false;
    auto e = allocation_refused(c, req, "fallocate /mnt/f: Operation not supported");
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error().code.value(), ENOTSUP);
    req.fallback = true;
    EXPECT_TRUE(allocation_refused(c, req, "x"));
}

// One order (wz::all_zero_methods) and one stated departure for block devices: these are
// the two lists the assessor and the planner each spelled out before they shared it.
TEST(MethodOrder, OneOrderAndTheBlockDeviceDeparture) {
    const method_order order = block_device_order();
    const std::vector<zero_method> block(order.begin(), order.end());
    EXPECT_EQ(block, (std::vector<zero_method>{zero_method::nvme_deac, zero_method::kernel, zero_method::nvme,
                                               zero_method::zeroout, zero_method::write}));
    EXPECT_EQ(block_device_requests(), (std::vector<method_request>{method_request::nvme, method_request::kernel,
                                                                    method_request::zeroout, method_request::write}));
    for (zero_method m : all_zero_methods) {
        EXPECT_EQ(std::count(block.begin(), block.end(), m), 1) << to_string(m);
        const auto named = named_method(request_of(m));
        ASSERT_TRUE(named) << to_string(m);
        EXPECT_EQ(request_of(*named), request_of(m)) << to_string(m);
    }
    EXPECT_FALSE(named_method(method_request::automatic));
    // The assessor gives every method of the order a verdict.
    auto c = nvme_file(0x09);
    EXPECT_EQ(c.methods.size(), std::size(all_zero_methods));
}

// DLFEAT unknown, Write Zeroes and unmap write zeroes known: the record recommends the
// kernel (only DEAC puts passthrough before it), while an automatic run on the device sends
// NVMe Write Zeroes without DEAC (--method nvme covers both). Pinned as it was before the
// orders were shared.
TEST(MethodOrder, BlockDeviceWithoutDlfeat) {
    auto c = nvme_file(0x09);
    c.file_type = "block";
    c.fs.reset();
    c.device->partition = false;
    c.device->partition_start_bytes = 0;
    c.size_bytes = 1 << 30;
    c.nvme->dlfeat.reset();
    c.nvme->deac.reset();
    c.write_zeroes.unmap = true;
    c.write_zeroes.unmap_max_bytes = 1 << 20;
    assess(c, assess_inputs{kernel_version{7, 2}, true, std::nullopt});
    EXPECT_FALSE(c.methods[zero_method::nvme_deac].usable.has_value());
    EXPECT_EQ(c.methods[zero_method::nvme].usable, true);
    EXPECT_EQ(c.methods[zero_method::kernel].usable, true);
    EXPECT_EQ(c.recommended_method, zero_method::kernel);
    auto p = plan_block_device(c, request{0, 1 << 20});
    ASSERT_TRUE(p) << p.error().message;
    ASSERT_FALSE(p->operations.empty());
    for (const auto& op : p->operations) {
        EXPECT_EQ(op.kind, op_kind::nvme_write_zeroes);
        EXPECT_FALSE(op.deac);
    }
}

TEST(PlanBlock, PassthroughFirstThenChain) {
    auto c = nvme_file(0x09);
    c.file_type = "block";
    c.fs.reset();
    c.device->partition = false;
    c.device->partition_start_bytes = 0;
    c.size_bytes = 1 << 30;
    assess(c, assess_inputs{kernel_version{7, 2}, true, std::nullopt});
    request req{4096, 1 << 20};
    auto p = plan_block_device(c, req);
    ASSERT_TRUE(p) << p.error().message;
    std::uint64_t covered = 0;
    for (const auto& op : p->operations) {
        EXPECT_EQ(op.kind, op_kind::nvme_write_zeroes);
        covered += op.length;
    }
    EXPECT_EQ(covered, 1U << 20);
    EXPECT_EQ(p->operations.front().slba, 8U);

    // Past the end of the device: refused before anything is planned.
    request past{(1ULL << 30) - 4096, 8192};
    EXPECT_FALSE(plan_block_device(c, past));

    // No passthrough privilege: the kernel's path is next, then BLKZEROOUT.
    assess(c, assess_inputs{kernel_version{7, 2}, false, std::nullopt});
    p = plan_block_device(c, req);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->operations.at(0).kind, op_kind::zeroout);  // no unmap: kernel unusable

    request forced{4096, 1 << 20, method_request::nvme, false};
    auto q = plan_block_device(c, forced);
    ASSERT_FALSE(q);
    EXPECT_EQ(q.error().code.value(), ENOTSUP);

    request sub{100, 1000, method_request::zeroout};
    p = plan_block_device(c, sub);
    ASSERT_TRUE(p);
    std::uint64_t sum = 0;
    for (const auto& op : p->operations) {
        sum += op.length;
    }
    EXPECT_EQ(sum, 1000U);
    EXPECT_EQ(p->operations.front().kind, op_kind::write_buffered);
}

// Regression: a partial page at either end of the range also holds bytes
// outside it, which another process may be writing through the page cache. O_DIRECT into
// such a page left it stale in the cache ("Page cache invalidation failure on direct I/O",
// EIO to every process with the file open); a device command under it is undone when the
// neighbour's page is written back. Whatever the target and method: the operations cover
// exactly the range, in order; every page that O_DIRECT or the device writes lies wholly
// inside the range; the partial edge pages are buffered writes; and everything between
// them (the whole pages) still goes direct or to the device.
enum class edge_target { file_writes, file_in_place, block_writes, block_zeroout, block_nvme };

struct edge_row {
    const char* name;
    edge_target target;
    std::uint64_t offset, length;
    std::uint32_t page_bytes;
};

const edge_row edge_rows[] = {
    {"file_unaligned", edge_target::file_writes, 66536, 133072, 4096},
    {"file_dio_aligned_in_a_page", edge_target::file_writes, 66048, 133120, 4096},
    {"file_inside_one_page", edge_target::file_writes, 100, 200, 4096},
    {"file_two_partial_pages", edge_target::file_writes, 3000, 2000, 4096},
    {"file_page_aligned", edge_target::file_writes, 8192, 65536, 4096},
    {"file_aligned_head_unaligned_tail", edge_target::file_writes, 0, 10000, 4096},
    {"file_64k_pages", edge_target::file_writes, 70000, 300000, 65536},
    {"file_in_place_unaligned", edge_target::file_in_place, 66536, 133072, 4096},
    {"file_in_place_dio_aligned", edge_target::file_in_place, 66048, 133120, 4096},
    {"block_writes_unaligned", edge_target::block_writes, 66536, 133072, 4096},
    {"block_writes_lba_aligned_in_a_page", edge_target::block_writes, 66048, 133120, 4096},
    {"block_zeroout_unaligned", edge_target::block_zeroout, 66536, 133072, 4096},
    {"block_zeroout_lba_aligned_in_a_page", edge_target::block_zeroout, 66048, 133120, 4096},
    {"block_zeroout_inside_one_page", edge_target::block_zeroout, 100, 1000, 4096},
    {"block_nvme_unaligned", edge_target::block_nvme, 66536, 133072, 4096},
    {"block_nvme_lba_aligned_in_a_page", edge_target::block_nvme, 66048, 133120, 4096},
    {"block_nvme_64k_pages", edge_target::block_nvme, 70000, 300000, 65536},
};

class EdgePages : public ::testing::TestWithParam<edge_row> {};

void PrintTo(const edge_row& row, std::ostream* os) { *os << row.name; }

std::uint64_t down(std::uint64_t v, std::uint64_t a) { return v / a * a; }
std::uint64_t up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

TEST_P(EdgePages, DirectOnlyOnWholePagesEdgesBuffered) {
    const edge_row& row = GetParam();
    const std::uint64_t end = row.offset + row.length;
    request req{row.offset, row.length};
    req.page_bytes = row.page_bytes;
    auto c = nvme_file(0x09);
    auto plan = [&]() -> result<plan_result> {
        if (row.target == edge_target::file_writes || row.target == edge_target::file_in_place) {
            const bool in_place = row.target == edge_target::file_in_place;
            req.in_place = in_place ? in_place_mode::automatic : in_place_mode::never;
            const std::vector<extent::extent> es = {ext(row.offset, row.length,
                                                        in_place ? kind::written : kind::unwritten,
                                                        (8 << 20) + row.offset)};
            return plan_file_extents(c, req, es);
        }
        c.file_type = "block";
        c.fs.reset();
        c.device->partition = false;
        c.device->partition_start_bytes = 0;
        c.size_bytes = 1 << 30;
        assess(c, assess_inputs{kernel_version{7, 2}, true, std::nullopt});
        req.method = row.target == edge_target::block_writes    ? method_request::write
                     : row.target == edge_target::block_zeroout ? method_request::zeroout
                                                                : method_request::nvme;
        req.fallback = false;
        return plan_block_device(c, req);
    };
    auto p = plan();
    ASSERT_TRUE(p) << p.error().message;
    ASSERT_FALSE(p->operations.empty());
    std::uint64_t at = row.offset;
    std::uint64_t direct_bytes = 0;
    for (const auto& op : p->operations) {
        EXPECT_EQ(op.offset, at) << "operations must cover the range in order, nothing outside it";
        at = op.offset + op.length;
        if (op.kind == op_kind::write_buffered) {
            continue;
        }
        direct_bytes += op.length;
        EXPECT_GE(down(op.offset, row.page_bytes), row.offset)
            << to_string(op.kind) << " at " << op.offset << " writes a page that starts before the range";
        EXPECT_LE(up(op.offset + op.length, row.page_bytes), end)
            << to_string(op.kind) << " ending at " << op.offset + op.length
            << " writes a page that ends after the range";
    }
    EXPECT_EQ(at, end);
    if (row.offset % row.page_bytes != 0) {
        EXPECT_EQ(p->operations.front().kind, op_kind::write_buffered);
    }
    if (end % row.page_bytes != 0) {
        EXPECT_EQ(p->operations.back().kind, op_kind::write_buffered);
    }
    const std::uint64_t mid_start = std::min(up(row.offset, row.page_bytes), end);
    const std::uint64_t mid_end = std::max(down(end, row.page_bytes), mid_start);
    EXPECT_EQ(direct_bytes, mid_end - mid_start) << "the whole pages should not be buffered";
}

INSTANTIATE_TEST_SUITE_P(rows, EdgePages, ::testing::ValuesIn(edge_rows),
                         [](const ::testing::TestParamInfo<edge_row>& row_info) { return std::string(row_info.param.name); });

TEST(SplitEdges, PartialPagesOnly) {
    auto s = split_range_edges(66536, 133072, 4096);
    EXPECT_EQ(s.mid_start, 69632U);
    EXPECT_EQ(s.mid_end, 196608U);
    ASSERT_EQ(s.head.size(), 1U);
    EXPECT_EQ(s.head[0].kind, op_kind::write_buffered);
    EXPECT_EQ(s.head[0].offset, 66536U);
    EXPECT_EQ(s.head[0].length, 69632U - 66536);
    ASSERT_EQ(s.tail.size(), 1U);
    EXPECT_EQ(s.tail[0].offset, 196608U);
    EXPECT_EQ(s.tail[0].length, 66536U + 133072 - 196608);

    s = split_range_edges(8192, 8192, 4096);  // aligned: no edge at all
    EXPECT_TRUE(s.head.empty());
    EXPECT_TRUE(s.tail.empty());
    EXPECT_EQ(s.mid_start, 8192U);
    EXPECT_EQ(s.mid_end, 16384U);

    s = split_range_edges(100, 200, 4096);  // inside one page: all of it is the head
    EXPECT_EQ(s.mid_start, s.mid_end);
    ASSERT_EQ(s.head.size(), 1U);
    EXPECT_EQ(s.head[0].length, 200U);
    EXPECT_TRUE(s.tail.empty());

    s = split_range_edges(100, 200, 0);  // no page size: no edges
    EXPECT_TRUE(s.head.empty());
    EXPECT_EQ(s.mid_start, 100U);
    EXPECT_EQ(s.mid_end, 300U);
}

TEST(Geometry, LimitsFromTheRecord) {
    auto c = nvme_file(0x09);
    auto g = geometry_from(c);
    EXPECT_EQ(g.max_nlb, 65536U);  // WZSL 0: no limit stated
    c.nvme->wzsl = 5;
    c.nvme->wzsl_max_bytes = 128 * 1024;
    EXPECT_EQ(geometry_from(c).max_nlb, 256U);
    c.nvme->wzsl_max_bytes.reset();  // unit unknown: the kernel's limit stands in
    EXPECT_EQ(geometry_from(c).max_nlb, 1024U);
    EXPECT_EQ(g.partition_start_bytes, 1U << 20);
}

TEST(QueueDepth, AutomaticExceptBufferedLoop) {
    capabilities c;
    c.file_type = "regular";
    EXPECT_EQ(choose_queue_depth(c, 0).depth, 32U);  // no device (tmpfs)
    c.device = device_info{};
    c.device->kind = "nvme";
    EXPECT_EQ(choose_queue_depth(c, 0).depth, 32U);
    c.device->kind = "loop";
    c.device->disk = "/dev/loop3";
    EXPECT_EQ(choose_queue_depth(c, 0).depth, 32U);  // dio unknown: no claim
    c.device->loop_direct_io = true;
    EXPECT_EQ(choose_queue_depth(c, 0).depth, 32U);
    c.device->loop_direct_io = false;
    auto q = choose_queue_depth(c, 0);
    EXPECT_EQ(q.depth, 2U);
    EXPECT_NE(q.reason.find("/dev/loop3 does buffered I/O"), std::string::npos) << q.reason;
    EXPECT_EQ(choose_queue_depth(c, 64).depth, 64U);  // asked for: kept
}

// The executor commits the mapping (fdatasync) before a walk only when the walk may aim NVMe
// commands at written extents: the same rule plan_file_extents applies.
TEST(MayZeroInPlace, FollowsTheInPlaceRule) {
    const capabilities nvme_ext4 = nvme_file(0x09);
    request r;
    r.length = 1 << 20;
    EXPECT_TRUE(may_zero_in_place(nvme_ext4, r));
    r.in_place = in_place_mode::never;
    EXPECT_FALSE(may_zero_in_place(nvme_ext4, r));
    r.in_place = in_place_mode::automatic;
    r.method = method_request::write;
    EXPECT_FALSE(may_zero_in_place(nvme_ext4, r));
    r.method = method_request::nvme;
    EXPECT_TRUE(may_zero_in_place(nvme_ext4, r));
    // btrfs: copy-on-write, no in-place zeroing; a file off NVMe: no commands at all.
    EXPECT_FALSE(may_zero_in_place(nvme_file(0x09, "btrfs"), request{}));
    capabilities plain = nvme_ext4;
    plain.nvme.reset();
    assess(plain, assess_inputs{kernel_version{7, 2}, true, std::nullopt});
    EXPECT_FALSE(may_zero_in_place(plain, request{}));
}

}  // namespace
}  // namespace wz::plan
