// SPDX-License-Identifier: MIT
#include "extent/fiemap.hpp"

#include "util/unique_fd.hpp"

#include <gtest/gtest.h>
#include <linux/fiemap.h>
#include <linux/fs.h>

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <system_error>
#include <vector>

namespace {

using wz::extent::extent;
using wz::extent::kind;

constexpr std::uint64_t kib = 1024;
constexpr std::uint64_t mib = kib * kib;

// ---------------------------------------------------------------------------
// Pure logic
// ---------------------------------------------------------------------------

struct classify_row {
    std::uint32_t flags;
    kind expected;
};

constexpr classify_row classify_rows[] = {
    {0, kind::written},
    {FIEMAP_EXTENT_LAST, kind::written},
    {FIEMAP_EXTENT_MERGED, kind::written},
    {FIEMAP_EXTENT_UNKNOWN, kind::unknown},
    {FIEMAP_EXTENT_DELALLOC, kind::delalloc},
    // What the kernel really reports for delayed allocation.
    {FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_UNKNOWN, kind::delalloc},
    {FIEMAP_EXTENT_ENCODED, kind::encoded},
    {FIEMAP_EXTENT_DATA_ENCRYPTED, kind::encrypted},
    {FIEMAP_EXTENT_NOT_ALIGNED, kind::inline_data},
    {FIEMAP_EXTENT_DATA_INLINE, kind::inline_data},
    {FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_NOT_ALIGNED, kind::inline_data},
    {FIEMAP_EXTENT_DATA_TAIL, kind::inline_data},
    {FIEMAP_EXTENT_UNWRITTEN, kind::unwritten},
    {FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_LAST, kind::unwritten},
    {FIEMAP_EXTENT_SHARED, kind::shared},
    // Precedence: the most restrictive meaning wins.
    {FIEMAP_EXTENT_SHARED | FIEMAP_EXTENT_UNWRITTEN, kind::shared},
    {FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_SHARED, kind::inline_data},
    {FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_SHARED, kind::encoded},
    {FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_NOT_ALIGNED, kind::encoded},
    {FIEMAP_EXTENT_DATA_ENCRYPTED | FIEMAP_EXTENT_ENCODED, kind::encrypted},
    {FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DATA_ENCRYPTED, kind::unknown},
    {FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_UNWRITTEN, kind::unknown},
    {0xffffffffu, kind::delalloc},
};

TEST(extent_classify, table) {
    for (const auto& row : classify_rows) {
        EXPECT_EQ(wz::extent::classify(row.flags), row.expected) << "flags 0x" << std::hex << row.flags;
    }
}

TEST(extent_classify, names) {
    const std::pair<kind, std::string> names[] = {
        {kind::written, "written"},     {kind::unwritten, "unwritten"}, {kind::hole, "hole"},
        {kind::shared, "shared"},       {kind::encoded, "encoded"},     {kind::encrypted, "encrypted"},
        {kind::inline_data, "inline_data"}, {kind::delalloc, "delalloc"}, {kind::unknown, "unknown"},
    };
    for (const auto& [k, name] : names) {
        EXPECT_EQ(wz::extent::to_string(k), name);
    }
}

struct lba_row {
    std::uint64_t physical;
    std::uint64_t partition_start_bytes;
    std::uint32_t lba_bytes;
    std::optional<std::uint64_t> expected;
};

TEST(extent_to_lba, table) {
    const lba_row rows[] = {
        {0, 0, 512, 0},
        {4096, 0, 512, 8},
        {4096, 0, 4096, 1},
        {4096, 1 * mib, 512, (mib + 4096) / 512},
        {4096, 1 * mib, 4096, 257},
        {512, 0, 4096, std::nullopt},          // not on an LBA boundary
        {0, 1 * mib + 512, 4096, std::nullopt},  // partition start not 4K aligned
        {512, 1 * mib + 3584, 4096, 257},        // misaligned parts that add up
        {4096, 0, 0, std::nullopt},             // no LBA size
        {~std::uint64_t{0}, 1, 512, std::nullopt},  // overflow
        {~std::uint64_t{0} - 511, 0, 512, (~std::uint64_t{0} - 511) / 512},
    };
    for (const auto& row : rows) {
        EXPECT_EQ(wz::extent::to_lba(row.physical, row.partition_start_bytes, row.lba_bytes), row.expected)
            << row.physical << " + " << row.partition_start_bytes << " / " << row.lba_bytes;
    }
}

// Synthetic kernel answers: shapes ext4 on this kernel does not produce on demand.

fiemap_extent fe(std::uint64_t logical, std::uint64_t length, std::uint64_t physical, std::uint32_t flags = 0) {
    fiemap_extent e{};
    e.fe_logical = logical;
    e.fe_length = length;
    e.fe_physical = physical;
    e.fe_flags = flags;
    return e;
}

using wz::extent::detail::apply_fiemap_batch;
using wz::extent::detail::batch_outcome;

TEST(extent_apply_batch, extent_before_range_is_clipped_with_its_physical) {
    const fiemap_extent answer[] = {fe(0, 64 * kib, 10 * mib, FIEMAP_EXTENT_LAST)};
    std::uint64_t cursor = 4 * kib;
    std::vector<extent> out;
    EXPECT_EQ(apply_fiemap_batch(answer, false, cursor, 20 * kib, out), batch_outcome::done);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].offset, 4 * kib);
    EXPECT_EQ(out[0].length, 16 * kib);
    EXPECT_EQ(out[0].physical, 10 * mib + 4 * kib);
    EXPECT_EQ(cursor, 20 * kib);
}

TEST(extent_apply_batch, straddling_extent_is_not_repeated) {
    // The previous batch ended at 8 KiB inside this extent; the kernel returns it whole again.
    const fiemap_extent answer[] = {fe(0, 12 * kib, mib), fe(16 * kib, 4 * kib, 2 * mib)};
    std::uint64_t cursor = 8 * kib;
    std::vector<extent> out;
    EXPECT_EQ(apply_fiemap_batch(answer, true, cursor, 64 * kib, out), batch_outcome::more);
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out[0].offset, 8 * kib);
    EXPECT_EQ(out[0].length, 4 * kib);
    EXPECT_EQ(out[0].physical, mib + 8 * kib);
    EXPECT_EQ(out[1].type, kind::hole);
    EXPECT_EQ(out[1].offset, 12 * kib);
    EXPECT_EQ(out[2].offset, 16 * kib);
    EXPECT_EQ(cursor, 20 * kib);  // a full answer: the next request starts where its last extent ended
}

TEST(extent_apply_batch, extents_already_covered_are_skipped) {
    const fiemap_extent answer[] = {fe(0, 4 * kib, mib), fe(4 * kib, 4 * kib, 2 * mib), fe(8 * kib, 4 * kib, 3 * mib)};
    std::uint64_t cursor = 8 * kib;
    std::vector<extent> out;
    EXPECT_EQ(apply_fiemap_batch(answer, false, cursor, 12 * kib, out), batch_outcome::done);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].offset, 8 * kib);
    EXPECT_EQ(out[0].physical, 3 * mib);
}

TEST(extent_apply_batch, no_extents_is_one_hole) {
    std::uint64_t cursor = 4 * kib;
    std::vector<extent> out;
    EXPECT_EQ(apply_fiemap_batch({}, false, cursor, 8 * kib, out), batch_outcome::done);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].type, kind::hole);
    EXPECT_EQ(out[0].offset, 4 * kib);
    EXPECT_EQ(out[0].length, 4 * kib);
}

// fuzz/fuzz_fiemap: an empty request [cursor, cursor) with an extent over the cursor gave
// one extent of length 0. An empty range is covered by nothing.
TEST(extent_apply_batch, empty_request_yields_no_extent) {
    const fiemap_extent answer[] = {fe(0, 64 * kib, mib)};
    std::uint64_t cursor = 16;
    std::vector<extent> out;
    EXPECT_EQ(apply_fiemap_batch(answer, true, cursor, 16, out), batch_outcome::done);
    EXPECT_TRUE(out.empty());
    EXPECT_EQ(cursor, 16u);
}

TEST(extent_apply_batch, last_flag_ends_the_walk_even_in_a_full_answer) {
    const fiemap_extent answer[] = {fe(0, 4 * kib, mib, FIEMAP_EXTENT_LAST)};
    std::uint64_t cursor = 0;
    std::vector<extent> out;
    EXPECT_EQ(apply_fiemap_batch(answer, true, cursor, mib, out), batch_outcome::done);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[1].type, kind::hole);
    EXPECT_EQ(out[1].offset + out[1].length, mib);
}

TEST(extent_apply_batch, extent_past_the_range_ends_it) {
    const fiemap_extent answer[] = {fe(0, 4 * kib, mib), fe(64 * kib, 4 * kib, 2 * mib)};
    std::uint64_t cursor = 0;
    std::vector<extent> out;
    EXPECT_EQ(apply_fiemap_batch(answer, true, cursor, 32 * kib, out), batch_outcome::done);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[1].type, kind::hole);
    EXPECT_EQ(out[1].offset + out[1].length, 32 * kib);
}

TEST(extent_apply_batch, extent_crossing_the_end_is_clipped) {
    const fiemap_extent answer[] = {fe(0, 64 * kib, mib)};
    std::uint64_t cursor = 0;
    std::vector<extent> out;
    EXPECT_EQ(apply_fiemap_batch(answer, true, cursor, 10 * kib, out), batch_outcome::done);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].length, 10 * kib);
}

TEST(extent_apply_batch, full_answer_without_progress_is_stalled) {
    const fiemap_extent answer[] = {fe(0, 4 * kib, mib)};
    std::uint64_t cursor = 8 * kib;
    std::vector<extent> out;
    EXPECT_EQ(apply_fiemap_batch(answer, true, cursor, 64 * kib, out), batch_outcome::stalled);
    EXPECT_TRUE(out.empty());
}

TEST(extent_apply_batch, empty_extents_are_ignored) {
    const fiemap_extent answer[] = {fe(4 * kib, 0, mib), fe(8 * kib, 4 * kib, 2 * mib)};
    std::uint64_t cursor = 0;
    std::vector<extent> out;
    EXPECT_EQ(apply_fiemap_batch(answer, false, cursor, 12 * kib, out), batch_outcome::done);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].type, kind::hole);
    EXPECT_EQ(out[0].length, 8 * kib);
}

// fuzz/fuzz_fiemap: a device range that runs past 2^64 wrapped around to low device
// addresses (fe_physical + offset), where zeroing by LBA would hit other data. Such an
// extent has no usable device address; one whose end is still a 64-bit address keeps it.
TEST(extent_apply_batch, no_device_address_that_wraps_past_u64) {
    const std::uint64_t top = ~std::uint64_t{0};
    const fiemap_extent answer[] = {fe(0, mib, top - 4 * kib + 1), fe(mib, mib, top - mib, FIEMAP_EXTENT_LAST)};
    std::uint64_t cursor = 4 * kib;
    std::vector<extent> out;
    EXPECT_EQ(apply_fiemap_batch(answer, false, cursor, 2 * mib, out), batch_outcome::done);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].type, kind::written);
    EXPECT_FALSE(out[0].physical);
    EXPECT_EQ(out[1].physical, top - mib);
}

TEST(extent_apply_batch, no_device_address_where_it_is_not_linear) {
    const fiemap_extent answer[] = {
        fe(0, 4 * kib, 0, FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_UNKNOWN),
        fe(4 * kib, 4 * kib, mib, FIEMAP_EXTENT_ENCODED),
        fe(8 * kib, 60, 2 * mib + 100, FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_NOT_ALIGNED),
        fe(12 * kib, 4 * kib, 3 * mib, FIEMAP_EXTENT_SHARED),
        fe(16 * kib, 4 * kib, 4 * mib, FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_LAST),
    };
    std::uint64_t cursor = 0;
    std::vector<extent> out;
    EXPECT_EQ(apply_fiemap_batch(answer, false, cursor, 20 * kib, out), batch_outcome::done);
    ASSERT_EQ(out.size(), 6u);  // a hole after the 60-byte inline extent
    EXPECT_EQ(out[0].type, kind::delalloc);
    EXPECT_FALSE(out[0].physical);
    EXPECT_EQ(out[1].type, kind::encoded);
    EXPECT_FALSE(out[1].physical);
    EXPECT_EQ(out[2].type, kind::inline_data);
    EXPECT_FALSE(out[2].physical);
    EXPECT_EQ(out[3].type, kind::hole);
    EXPECT_EQ(out[4].type, kind::shared);
    EXPECT_EQ(out[4].physical, 3 * mib);
    EXPECT_EQ(out[5].type, kind::unwritten);
    EXPECT_EQ(out[5].physical, 4 * mib);
}

// ---------------------------------------------------------------------------
// Real files (ext4 on the test host: root runs them on the host's root fs)
// ---------------------------------------------------------------------------

std::string test_dir() {
    const char* dir = std::getenv("WZ_TEST_DIR");
    return dir != nullptr && *dir != '\0' ? dir : "/var/tmp";
}

// A temporary file, unlinked at once: nothing is left behind if a test dies.
class temp_file {
public:
    temp_file() {
        std::string name = test_dir() + "/wz_fiemap_XXXXXX";
        fd_.reset(::mkstemp(name.data()));
        if (fd_) {
            (void)::unlink(name.c_str());  // wz: ignored-error (only tidiness)
            path_ = name;
        }
    }
    [[nodiscard]] int fd() const { return fd_.get(); }
    [[nodiscard]] const std::string& path() const { return path_; }

    void write_at(std::uint64_t offset, std::uint64_t length) const {
        const std::vector<char> data(length, 'w');
        ASSERT_EQ(::pwrite(fd(), data.data(), data.size(), static_cast<off_t>(offset)),
                  static_cast<ssize_t>(length));
    }
    void sync() const { ASSERT_EQ(::fsync(fd()), 0); }

private:
    wz::unique_fd fd_;
    std::string path_;
};

std::vector<extent> map(const temp_file& f, std::uint64_t offset, std::uint64_t length, bool sync = false) {
    auto r = wz::extent::map_range(f.fd(), f.path(), offset, length, sync);
    EXPECT_TRUE(r.has_value()) << r.error().message;
    return r ? *r : std::vector<extent>{};
}

std::vector<extent> walk(const temp_file& f, std::uint64_t offset, std::uint64_t length, std::uint32_t batch) {
    wz::extent::walker w(f.fd(), f.path(), offset, length, batch);
    std::vector<extent> all;
    std::vector<extent> out;
    for (;;) {
        auto more = w.next(out);
        EXPECT_TRUE(more.has_value()) << more.error().message;
        if (!more || !*more) {
            break;
        }
        EXPECT_FALSE(out.empty());
        // Bounded memory: one ioctl's worth of extents (plus the holes between them) per call.
        const auto data_extents =
            std::count_if(out.begin(), out.end(), [](const extent& e) { return e.type != kind::hole; });
        EXPECT_LE(static_cast<std::uint64_t>(data_extents), batch);
        all.insert(all.end(), out.begin(), out.end());
    }
    return all;
}

// Every byte of [offset, offset + length) exactly once, in order, nothing empty.
void expect_exact_cover(const std::vector<extent>& extents, std::uint64_t offset, std::uint64_t length) {
    std::uint64_t at = offset;
    for (const auto& e : extents) {
        EXPECT_EQ(e.offset, at);
        EXPECT_GT(e.length, 0u);
        EXPECT_EQ(e.type == kind::hole, !e.physical.has_value());
        if (e.type == kind::hole) {
            EXPECT_EQ(e.flags, 0u);
        }
        at = e.offset + e.length;
    }
    EXPECT_EQ(at, offset + length);
}

// The extents of `whole` (a walk from 0) cut to a window, as the walker should return them.
std::vector<extent> clip(const std::vector<extent>& whole, std::uint64_t offset, std::uint64_t length) {
    std::vector<extent> out;
    for (auto e : whole) {
        const std::uint64_t start = std::max(e.offset, offset);
        const std::uint64_t stop = std::min(e.offset + e.length, offset + length);
        if (start >= stop) {
            continue;
        }
        if (e.physical) {
            *e.physical += start - e.offset;
        }
        e.offset = start;
        e.length = stop - start;
        out.push_back(e);
    }
    // Past the end of `whole` the walker continues its trailing hole rather than starting another.
    const std::uint64_t from = out.empty() ? offset : out.back().offset + out.back().length;
    if (from < offset + length) {
        if (!out.empty() && out.back().type == kind::hole) {
            out.back().length += offset + length - from;
        } else {
            out.push_back(extent{from, offset + length - from, std::nullopt, kind::hole, 0});
        }
    }
    return out;
}

// FIEMAP_EXTENT_LAST is relative to the request: iomap (ext4 since 5.x, xfs) sets it on the last
// extent inside [fm_start, fm_start + fm_length), so a window ending early marks an extent that
// a whole-file walk does not. Every other flag must match.
bool same(const extent& a, const extent& b) {
    return a.offset == b.offset && a.length == b.length && a.physical == b.physical && a.type == b.type &&
           (a.flags | FIEMAP_EXTENT_LAST) == (b.flags | FIEMAP_EXTENT_LAST);
}

void expect_same(const std::vector<extent>& a, const std::vector<extent>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_TRUE(same(a[i], b[i])) << "extent " << i << ": " << a[i].offset << "+" << a[i].length << " "
                                      << to_string(a[i].type) << " 0x" << std::hex << a[i].flags << std::dec << " vs "
                                      << b[i].offset << "+" << b[i].length << " " << to_string(b[i].type) << " 0x"
                                      << std::hex << b[i].flags << std::dec;
    }
}

class fiemap_file : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(file_.fd() >= 0) << "mkstemp in " << test_dir() << " failed (set WZ_TEST_DIR)";
        // A filesystem without FIEMAP is a reason to skip, not a failure. Asked with the raw
        // ioctl (a count of extents, none returned), not with map_range: a map_range that
        // failed everywhere would otherwise skip every test below instead of failing them.
        struct fiemap probe {};
        probe.fm_start = 0;
        probe.fm_length = FIEMAP_MAX_OFFSET;
        probe.fm_extent_count = 0;
        if (::ioctl(file_.fd(), FS_IOC_FIEMAP, &probe) != 0) {
            const int e = errno;
            if (e == EOPNOTSUPP || e == ENOTTY) {
                GTEST_SKIP() << "FS_IOC_FIEMAP on " << test_dir() << ": " << std::strerror(e);
            }
            FAIL() << "FS_IOC_FIEMAP on " << file_.path() << ": " << std::strerror(e);
        }
    }
    temp_file file_;
};

TEST_F(fiemap_file, empty_range_yields_nothing) {
    EXPECT_TRUE(map(file_, 0, 0).empty());
}

TEST_F(fiemap_file, fallocated_range_is_unwritten) {
    ASSERT_EQ(::fallocate(file_.fd(), 0, 0, static_cast<off_t>(mib)), 0) << "fallocate: errno " << errno;
    const auto extents = map(file_, 0, mib);
    expect_exact_cover(extents, 0, mib);
    for (const auto& e : extents) {
        EXPECT_EQ(e.type, kind::unwritten) << e.offset;
        EXPECT_TRUE(e.physical.has_value());
    }
}

TEST_F(fiemap_file, synced_data_is_written) {
    file_.write_at(0, 64 * kib);
    file_.sync();
    const auto extents = map(file_, 0, 64 * kib);
    expect_exact_cover(extents, 0, 64 * kib);
    for (const auto& e : extents) {
        EXPECT_EQ(e.type, kind::written) << e.offset;
    }
}

TEST_F(fiemap_file, sync_flag_resolves_delayed_allocation) {
    file_.write_at(0, 16 * kib);
    // Without SYNC ext4 reports delalloc until writeback: both answers are right then.
    for (const auto& e : map(file_, 0, 16 * kib)) {
        EXPECT_TRUE(e.type == kind::delalloc || e.type == kind::written) << to_string(e.type);
        EXPECT_EQ(e.type == kind::delalloc, !e.physical.has_value());
    }
    const auto synced = map(file_, 0, 16 * kib, true);
    expect_exact_cover(synced, 0, 16 * kib);
    for (const auto& e : synced) {
        EXPECT_EQ(e.type, kind::written);
    }
}

TEST_F(fiemap_file, sparse_file_has_hole_between_data) {
    file_.write_at(0, 4 * kib);
    file_.write_at(8 * mib, 4 * kib);
    file_.sync();
    const auto extents = map(file_, 0, 8 * mib + 4 * kib);
    ASSERT_EQ(extents.size(), 3u);
    EXPECT_EQ(extents[0].type, kind::written);
    EXPECT_EQ(extents[0].offset, 0u);
    EXPECT_EQ(extents[0].length, 4 * kib);
    EXPECT_EQ(extents[1].type, kind::hole);
    EXPECT_EQ(extents[1].offset, 4 * kib);
    EXPECT_EQ(extents[1].length, 8 * mib - 4 * kib);
    EXPECT_FALSE(extents[1].physical.has_value());
    EXPECT_EQ(extents[2].type, kind::written);
    EXPECT_EQ(extents[2].offset, 8 * mib);
    EXPECT_EQ(extents[2].length, 4 * kib);
}

TEST_F(fiemap_file, range_inside_extents_is_clipped) {
    file_.write_at(0, 4 * kib);
    file_.write_at(8 * mib, 4 * kib);
    file_.sync();
    const auto whole = map(file_, 0, 8 * mib + 4 * kib);
    ASSERT_EQ(whole.size(), 3u);

    const auto inner = map(file_, 100, 900);  // starts and ends inside the first extent
    ASSERT_EQ(inner.size(), 1u);
    EXPECT_EQ(inner[0].offset, 100u);
    EXPECT_EQ(inner[0].length, 900u);
    EXPECT_EQ(inner[0].type, kind::written);
    EXPECT_EQ(inner[0].physical, *whole[0].physical + 100);

    const auto across = map(file_, 2 * kib, 8 * mib - kib);  // mid first extent to mid last
    expect_same(across, clip(whole, 2 * kib, 8 * mib - kib));
    ASSERT_EQ(across.size(), 3u);
    EXPECT_EQ(across[2].offset, 8 * mib);
    EXPECT_EQ(across[2].length, kib);
}

TEST_F(fiemap_file, range_past_eof_ends_in_hole) {
    file_.write_at(0, 4 * kib);
    file_.sync();
    const auto extents = map(file_, 0, mib);
    ASSERT_EQ(extents.size(), 2u);
    EXPECT_EQ(extents[0].type, kind::written);
    EXPECT_EQ(extents[1].type, kind::hole);
    EXPECT_EQ(extents[1].offset, 4 * kib);
    EXPECT_EQ(extents[1].length, mib - 4 * kib);

    const auto beyond = map(file_, 2 * mib, mib);  // no extent at all: one hole
    ASSERT_EQ(beyond.size(), 1u);
    EXPECT_EQ(beyond[0].type, kind::hole);
    EXPECT_EQ(beyond[0].offset, 2 * mib);
    EXPECT_EQ(beyond[0].length, mib);
}

TEST_F(fiemap_file, empty_file_is_one_hole) {
    const auto extents = map(file_, 0, 64 * kib);
    ASSERT_EQ(extents.size(), 1u);
    EXPECT_EQ(extents[0].type, kind::hole);
    EXPECT_EQ(extents[0].length, 64 * kib);
}

// 2000 written 4 KiB blocks separated by 4 KiB holes: far more extents than one batch.
class fiemap_many_extents : public fiemap_file {
protected:
    static constexpr std::uint64_t blocks = 2000;
    static constexpr std::uint64_t stride = 8 * kib;
    static constexpr std::uint64_t file_bytes = blocks * stride;

    void SetUp() override {
        fiemap_file::SetUp();
        if (IsSkipped()) {
            return;
        }
        for (std::uint64_t i = 0; i < blocks; ++i) {
            file_.write_at(i * stride, 4 * kib);
        }
        file_.sync();
        whole_ = walk(file_, 0, file_bytes, 512);
    }
    std::vector<extent> whole_;
};

TEST_F(fiemap_many_extents, small_batches_match_large_batches) {
    expect_exact_cover(whole_, 0, file_bytes);
    const auto written =
        std::count_if(whole_.begin(), whole_.end(), [](const extent& e) { return e.type == kind::written; });
    EXPECT_EQ(static_cast<std::uint64_t>(written), blocks);
    for (const std::uint32_t batch : {1u, 2u, 7u, 1999u, 2000u, 2001u}) {
        SCOPED_TRACE(batch);
        const auto batched = walk(file_, 0, file_bytes, batch);
        expect_exact_cover(batched, 0, file_bytes);
        expect_same(batched, whole_);
    }
}

TEST_F(fiemap_many_extents, random_windows_are_exact_covers) {
    std::mt19937_64 rng(20240607);  // fixed seed: a failure must reproduce
    std::uniform_int_distribution<std::uint64_t> pos(0, file_bytes + 64 * kib);  // some past EOF
    std::uniform_int_distribution<std::uint32_t> batch(1, 40);
    for (int round = 0; round < 200; ++round) {
        std::uint64_t a = pos(rng);
        std::uint64_t b = pos(rng);
        if (a > b) {
            std::swap(a, b);
        }
        if (round % 4 == 0) {
            a -= a % (4 * kib);  // some windows start exactly on an extent edge
        }
        const std::uint32_t n = batch(rng);
        SCOPED_TRACE(testing::Message() << "window " << a << "+" << (b - a) << " batch " << n);
        const auto got = walk(file_, a, b - a, n);
        if (a == b) {
            EXPECT_TRUE(got.empty());
            continue;
        }
        expect_exact_cover(got, a, b - a);
        expect_same(got, clip(whole_, a, b - a));
        if (HasFailure()) {
            break;
        }
    }
}

// wz::map_extents' streaming form hands out exactly the vector form's extents, across batch
// boundaries (about 4000 entries, eight batches), and stops at the first error its callback
// returns. Both map to the end of the file (length 0): the file ends with its last written
// block, and a range past that end is refused.
TEST_F(fiemap_many_extents, streamed_map_equals_the_vector_and_stops_on_error) {
    // The scratch file has no name left: reach it through its descriptor.
    const std::string path = "/proc/self/fd/" + std::to_string(file_.fd());
    const std::uint64_t size = file_bytes - stride + 4 * kib;
    auto past = wz::map_extents(path, 0, file_bytes);
    ASSERT_FALSE(past.has_value());
    EXPECT_EQ(past.error().code.value(), EINVAL);
    EXPECT_NE(past.error().message.find("range ends past the end of the file (" + std::to_string(size) + " bytes)"),
              std::string::npos)
        << past.error().message;
    auto all = wz::map_extents(path, 0, 0);
    ASSERT_TRUE(all.has_value()) << all.error().message;
    ASSERT_EQ(all->size(), clip(whole_, 0, size).size());
    std::size_t i = 0;
    const wz::status s = wz::map_extents(path, 0, 0, [&](const wz::mapped_extent& m) -> wz::status {
        EXPECT_LT(i, all->size());
        if (i < all->size()) {
            EXPECT_EQ(m.offset, (*all)[i].offset);
            EXPECT_EQ(m.length, (*all)[i].length);
            EXPECT_EQ(m.kind, (*all)[i].kind);
            EXPECT_EQ(m.physical, (*all)[i].physical);
        }
        ++i;
        return {};
    });
    EXPECT_TRUE(s.ok());
    EXPECT_EQ(i, all->size());

    std::size_t seen = 0;
    const wz::status stopped = wz::map_extents(path, 0, 0, [&](const wz::mapped_extent&) -> wz::status {
        if (++seen == 1000) {
            return wz::error_info{std::make_error_code(std::errc::operation_canceled), "enough"};
        }
        return {};
    });
    EXPECT_EQ(stopped.code(), std::errc::operation_canceled);
    EXPECT_EQ(seen, 1000u);
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

TEST(fiemap_errors, unsupported_file_names_operation_path_and_range) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    wz::unique_fd read_end(fds[0]);
    wz::unique_fd write_end(fds[1]);
    auto r = wz::extent::map_range(read_end.get(), "pipe:[test]", 4096, 8192);
    ASSERT_FALSE(r.has_value());
    EXPECT_NE(r.error().code.value(), 0);
    const std::string& msg = r.error().message;
    EXPECT_NE(msg.find("FIEMAP"), std::string::npos) << msg;
    EXPECT_NE(msg.find("pipe:[test]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("offset 4096, length 8192"), std::string::npos) << msg;
}

TEST(fiemap_errors, range_past_u64_is_invalid) {
    temp_file f;
    ASSERT_GE(f.fd(), 0);
    auto r = wz::extent::map_range(f.fd(), f.path(), ~std::uint64_t{0} - 10, 100);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code.value(), EINVAL);
}

TEST(fiemap_errors, walker_stays_finished_after_error) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    wz::unique_fd read_end(fds[0]);
    wz::unique_fd write_end(fds[1]);
    wz::extent::walker w(read_end.get(), "pipe", 0, 4096);
    std::vector<extent> out;
    EXPECT_FALSE(w.next(out).has_value());
    auto again = w.next(out);
    ASSERT_TRUE(again.has_value());
    EXPECT_FALSE(*again);
    EXPECT_TRUE(out.empty());
}

}  // namespace
