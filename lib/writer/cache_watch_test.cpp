// SPDX-License-Identifier: MIT
#include "writer/cache_watch.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using wz::cache_mode;
using wz::durability_mode;
using wz::writer_detail::after_reread;
using wz::writer_detail::reread_due;
using wz::writer_detail::through_facts;
using wz::writer_detail::watch_clock;
using namespace std::chrono_literals;

TEST(CacheWatch, RereadDueByAge) {
    const watch_clock::time_point t0{std::chrono::seconds(1000)};
    struct row {
        watch_clock::duration since_read;  // now - verified_at (negative: read after now)
        watch_clock::duration max_age;
        bool due;
    };
    const row rows[] = {
        {0ms, 100ms, false},
        {99ms, 100ms, false},
        {100ms, 100ms, false},  // exactly the maximum age: still within it
        {100ms + 1ns, 100ms, true},
        {5s, 100ms, true},
        {-1ms, 100ms, false},  // another thread's read started after this acknowledgement's look
        {0ms, 0ms, true},      // 0: before every acknowledgement
        {1ns, 0ms, true},
        {-1ns, 0ms, false},    // ... but a read that started after this look is fresher than it
        {1h, 2h, false},
        {3h, 2h, true},
        {1ns, 1ns, false},
        {2ns, 1ns, true},
    };
    for (const auto& r : rows) {
        const watch_clock::time_point now = t0 + 10h;
        EXPECT_EQ(reread_due(now - r.since_read, now, r.max_age), r.due)
            << "since read " << std::chrono::nanoseconds(r.since_read).count() << " ns, max age "
            << std::chrono::nanoseconds(r.max_age).count() << " ns";
    }
}

TEST(CacheWatch, ANeverReadAnswerIsDue) {
    // A writer that never had a write-through answer holds the clock's epoch: due at once.
    EXPECT_TRUE(reread_due(watch_clock::time_point{}, watch_clock::now(), 100ms));
}

TEST(CacheWatch, WhereAThroughWriterGoes) {
    struct row {
        std::optional<cache_mode> effective;
        through_facts facts;  // forced, nvme_fua, file_fua
        bool move;
        durability_mode to;
    };
    const auto through = durability_mode::through, fua = durability_mode::fua, flush = durability_mode::flush;
    const row rows[] = {
        // Still write-through: stay, whatever the writer is.
        {cache_mode::write_through, {false, false, false}, false, through},
        {cache_mode::write_through, {true, true, true}, false, through},
        {cache_mode::write_through, {false, true, false}, false, through},
        // Write-back: an automatic writer goes where an automatic choice would.
        {cache_mode::write_back, {false, true, false}, true, fua},    // raw namespace: NVMe Write FUA
        {cache_mode::write_back, {false, false, true}, true, fua},    // xfs/ext4 file: RWF_DSYNC
        {cache_mode::write_back, {false, true, true}, true, fua},
        {cache_mode::write_back, {false, false, false}, true, flush},  // no FUA path: group commit
        // A forced `through` goes to flush (as refresh() does), FUA path or not.
        {cache_mode::write_back, {true, false, false}, true, flush},
        {cache_mode::write_back, {true, true, false}, true, flush},
        {cache_mode::write_back, {true, false, true}, true, flush},
        // Unknown (the re-read failed, no privilege any more, a controller gone): not write-through.
        {std::nullopt, {false, true, false}, true, fua},
        {std::nullopt, {false, false, true}, true, fua},
        {std::nullopt, {false, false, false}, true, flush},
        {std::nullopt, {true, true, true}, true, flush},
    };
    for (const auto& r : rows) {
        const auto m = after_reread(r.effective, r.facts);
        const std::string what = std::string(r.effective ? wz::to_string(*r.effective) : "unknown") +
                                 (r.facts.forced ? ", forced" : ", auto") + (r.facts.nvme_fua ? ", nvme fua" : "") +
                                 (r.facts.file_fua ? ", file fua" : "");
        EXPECT_EQ(m.move, r.move) << what;
        EXPECT_EQ(m.to, r.to) << what;
    }
}

}  // namespace
