// SPDX-License-Identifier: MIT
// The writer's mode policy from tables: every row a record, the facts read from the target and
// the caller's options, and what the writer must do.
#include "writer/mode_policy.hpp"

#include "probe/nvme_decode.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <optional>
#include <string>

namespace {

using wz::cache_mode;
using wz::durability_mode;
using wz::writer_detail::choose_mode;
using wz::writer_detail::mode_facts;
using wz::writer_detail::rwf_dsync_use;

enum class target_kind { file, block };
// The namespace's passthrough route: none (neither node), its generic char device, or its
// block device (Linux 5.10 to 5.12: no /dev/ngXnY).
enum class nvme { none, no_route, char_device, block_device };

struct target {
    target_kind k = target_kind::file;
    std::optional<cache_mode> effective;
    std::optional<bool> flush_needed;
    std::optional<bool> fua;
    std::optional<bool> dsync_overwrite_fua;
    nvme ns = nvme::none;
};

wz::capabilities record_of(const target& t) {
    wz::capabilities c;
    c.file_type = t.k == target_kind::file ? "regular" : "block";
    c.cache.effective = t.effective;
    c.cache.effective_reason = "queue/write_cache";
    c.cache.flush_needed = t.flush_needed;
    c.cache.flush_reason = "copy on write";
    c.cache.fua = t.fua;
    c.cache.dsync_overwrite_fua = t.dsync_overwrite_fua;
    c.cache.dsync_overwrite_reason = "xfs: FUA for a pure overwrite";
    if (t.ns != nvme::none) {
        c.nvme.emplace();
        c.nvme->nsid = 1;
        c.nvme->lba_bytes = 512;
        c.nvme->namespace_device = "/dev/nvme0n1";
        if (t.ns == nvme::char_device) {
            c.nvme->char_device = "/dev/ng0n1";
        }
        wz::probe::nvme::set_passthrough_route(*c.nvme, "ng0n1", t.ns != nvme::no_route);
    }
    return c;
}

const auto wt = cache_mode::write_through;
const auto wb = cache_mode::write_back;
const auto never = rwf_dsync_use::never, lone = rwf_dsync_use::lone_writes,
           ring = rwf_dsync_use::every_write_on_io_uring;
const auto automatic = durability_mode::automatic, through = durability_mode::through, fua = durability_mode::fua,
           flush = durability_mode::flush, dsync = durability_mode::dsync;

struct row {
    const char* what;
    target t;
    mode_facts facts;  // range_written, may_passthrough
    durability_mode asked;
    bool allow_unsafe;
    // Expected: the mode, or the errno of the refusal (mode then unused).
    durability_mode mode;
    int error;
    bool nvme_fua, nvme_flush;
    rwf_dsync_use rwf_dsync;
    bool move_file_fua;  // through_facts::file_fua (forced and nvme_fua follow from the row)
};

// clang-format off
const row mode_rows[] = {
    // automatic: through needs write-through, no flush needed, every byte written.
    {"wt file, written", {target_kind::file, wt, false, false, false}, {true, false}, automatic, false,
     through, 0, false, false, never, false},
    {"wt file, holes", {target_kind::file, wt, false, false, false}, {false, false}, automatic, false,
     flush, 0, false, false, lone, false},
    {"wt file over copy on write (flush needed)", {target_kind::file, wt, true, false, false}, {true, false}, automatic, false,
     flush, 0, false, false, lone, false},
    {"wt, flush_needed unknown", {target_kind::file, wt, std::nullopt, false, false}, {true, false}, automatic, false,
     flush, 0, false, false, lone, false},
    {"unknown cache", {target_kind::file, std::nullopt, true, std::nullopt, std::nullopt}, {true, false}, automatic, false,
     flush, 0, false, false, lone, false},
    // automatic, write-back: fua where a FUA path exists, else flush.
    {"wb file, dsync overwrite is FUA", {target_kind::file, wb, true, true, true}, {true, false}, automatic, false,
     fua, 0, false, false, never, true},
    {"wb file with holes: no FUA path", {target_kind::file, wb, true, true, true}, {false, false}, automatic, false,
     flush, 0, false, false, lone, false},
    {"wb file, overwrite not FUA", {target_kind::file, wb, true, true, false}, {true, false}, automatic, false,
     flush, 0, false, false, lone, false},
    {"wb raw namespace, FUA, passthrough", {target_kind::block, wb, true, true, std::nullopt, nvme::char_device},
     {true, true}, automatic, false, fua, 0, true, true, never, false},
    {"wb raw namespace, no FUA", {target_kind::block, wb, true, false, std::nullopt, nvme::char_device},
     {true, true}, automatic, false, flush, 0, false, true, ring, false},
    {"wb raw namespace, no privilege", {target_kind::block, wb, true, true, std::nullopt, nvme::char_device},
     {true, false}, automatic, false, flush, 0, false, false, ring, false},
    {"wb raw namespace, no passthrough node", {target_kind::block, wb, true, true, std::nullopt, nvme::no_route},
     {true, true}, automatic, false, flush, 0, false, false, ring, false},
    {"wb raw namespace, block device route (< 5.13)",
     {target_kind::block, wb, true, true, std::nullopt, nvme::block_device}, {true, true}, automatic, false, fua, 0,
     true, true, never, false},
    {"wb block device, not NVMe", {target_kind::block, wb, true, true, std::nullopt, nvme::none}, {true, false}, automatic,
     false, flush, 0, false, false, ring, false},
    {"wt raw namespace", {target_kind::block, wt, false, true, std::nullopt, nvme::char_device}, {true, true}, automatic,
     false, through, 0, true, true, never, false},
    // Forced through.
    {"through, wt, written", {target_kind::file, wt, false, false, false}, {true, false}, through, false,
     through, 0, false, false, never, false},
    {"through over holes", {target_kind::file, wt, false, false, false}, {false, false}, through, true,
     through, EINVAL, false, false, never, false},
    {"through, wb", {target_kind::file, wb, true, true, true}, {true, false}, through, false,
     through, EINVAL, false, false, never, false},
    {"through, wb, allow_unsafe_through", {target_kind::file, wb, true, true, true}, {true, false}, through, true,
     through, 0, false, false, never, true},
    {"through, unknown cache", {target_kind::file, std::nullopt, true, std::nullopt, std::nullopt}, {true, false}, through,
     false, through, EINVAL, false, false, never, false},
    // Forced fua.
    {"fua, written file", {target_kind::file, wb, true, true, false}, {true, false}, fua, false,
     fua, 0, false, false, never, false},
    {"fua, file with holes", {target_kind::file, wb, true, true, true}, {false, false}, fua, false,
     fua, ENOTSUP, false, false, never, false},
    {"fua, raw namespace", {target_kind::block, wb, true, true, std::nullopt, nvme::char_device}, {true, true}, fua, false,
     fua, 0, true, true, never, false},
    {"fua, raw namespace without FUA", {target_kind::block, wb, true, false, std::nullopt, nvme::char_device}, {true, true},
     fua, false, fua, ENOTSUP, false, false, never, false},
    {"fua, block device not NVMe", {target_kind::block, wb, true, true, std::nullopt, nvme::none}, {true, false}, fua,
     false, fua, ENOTSUP, false, false, never, false},
    // Forced flush and dsync: always possible.
    {"flush, file", {target_kind::file, wt, false, false, false}, {true, false}, flush, false,
     flush, 0, false, false, lone, false},
    {"flush, raw namespace", {target_kind::block, wb, true, true, std::nullopt, nvme::char_device}, {true, true}, flush,
     false, flush, 0, true, true, ring, false},
    {"dsync, file", {target_kind::file, wb, true, true, true}, {true, false}, dsync, false,
     dsync, 0, false, false, never, true},
    {"dsync, block", {target_kind::block, wb, true, true, std::nullopt, nvme::none}, {true, false}, dsync, false,
     dsync, 0, false, false, never, false},
};
// clang-format on

TEST(ModePolicy, FromTheRecordTheFactsAndTheOptions) {
    for (const auto& r : mode_rows) {
        wz::writer_options o;
        o.mode = r.asked;
        o.allow_unsafe_through = r.allow_unsafe;
        const auto c = choose_mode(record_of(r.t), r.facts, o, "/x/f", 4096, 1048576);
        if (r.error != 0) {
            ASSERT_FALSE(c) << r.what;
            EXPECT_EQ(c.error().code.value(), r.error) << r.what;
            // Every refusal names the path.
            EXPECT_NE(c.error().message.find("/x/f"), std::string::npos) << r.what << ": " << c.error().message;
            continue;
        }
        ASSERT_TRUE(c) << r.what << ": " << c.error().message;
        EXPECT_EQ(c->mode, r.mode) << r.what << ": " << c->reason;
        EXPECT_EQ(c->nvme_fua, r.nvme_fua) << r.what;
        EXPECT_EQ(c->nvme_flush, r.nvme_flush) << r.what;
        EXPECT_EQ(c->rwf_dsync, r.rwf_dsync) << r.what;
        EXPECT_EQ(c->move_facts.forced, r.asked == through) << r.what;
        EXPECT_EQ(c->move_facts.nvme_fua, r.nvme_fua) << r.what;
        EXPECT_EQ(c->move_facts.file_fua, r.move_file_fua) << r.what;
        EXPECT_FALSE(c->reason.empty()) << r.what;
    }
}

// The reason says what the choice rests on.
TEST(ModePolicy, TheReasonNamesWhatTheChoiceRestsOn) {
    wz::writer_options o;
    const auto raw = choose_mode(record_of({target_kind::block, wb, true, true, std::nullopt, nvme::char_device}),
                                 {true, true}, o, "/dev/nvme0n1", 0, 4096);
    ASSERT_TRUE(raw);
    EXPECT_NE(raw->reason.find("/dev/ng0n1"), std::string::npos) << raw->reason;
    const auto block = choose_mode(record_of({target_kind::block, wb, true, true, std::nullopt, nvme::block_device}),
                                   {true, true}, o, "/dev/nvme0n1", 0, 4096);
    ASSERT_TRUE(block);
    EXPECT_NE(block->reason.find("NVMe Write with FUA through /dev/nvme0n1"), std::string::npos) << block->reason;
    // Flush mode on a block device: every write as RWF_DSYNC on io_uring, and it says so.
    const auto loop = choose_mode(record_of({target_kind::block, wb, true, false, std::nullopt, nvme::none}),
                                  {true, false}, o, "/dev/loop0", 0, 4096);
    ASSERT_TRUE(loop);
    EXPECT_NE(loop->reason.find("on io_uring every write goes as RWF_DSYNC"),
              std::string::npos)
        << loop->reason;
    const auto wt_file = choose_mode(record_of({target_kind::file, wt, false, false, false}), {true, false}, o, "/f", 0, 4096);
    ASSERT_TRUE(wt_file);
    EXPECT_NE(wt_file->reason.find("queue/write_cache"), std::string::npos) << wt_file->reason;
    const auto cow = choose_mode(record_of({target_kind::file, wt, true, false, false}), {true, false}, o, "/f", 0, 4096);
    ASSERT_TRUE(cow);
    EXPECT_NE(cow->reason.find("copy on write"), std::string::npos) << cow->reason;
    // Forced through over holes: the range is in the message.
    o.mode = through;
    const auto holes = choose_mode(record_of({target_kind::file, wt, false, false, false}), {false, false}, o, "/f", 4096,
                                   8192);
    ASSERT_FALSE(holes);
    EXPECT_NE(holes.error().message.find("[offset 4096, length 8192]"), std::string::npos) << holes.error().message;
}

}  // namespace
