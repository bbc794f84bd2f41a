// SPDX-License-Identifier: MIT
// The rate limit's arithmetic: piece sizes, where pieces are cut, and the token bucket on a
// clock the test moves (no sleeping, no timing bounds).
#include "io/pacing.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace wz::io {
namespace {

constexpr std::uint64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

TEST(pacing, piece_bytes_from_the_rate) {
    struct row {
        std::uint64_t rate, piece;
    };
    const row rows[] = {
        {0, 0},                         // no rate: nothing is cut
        {1, 64 * KiB},                  // at least one unit
        {1 * MiB, 64 * KiB},            // 52428.8 rounds down to no unit: one
        {20 * 64 * KiB, 64 * KiB},      // exactly one unit per twentieth of a second
        {20 * 64 * KiB - 1, 64 * KiB},  // just under: still the one-unit floor
        {8 * MiB, 384 * KiB},           // 419430.4 -> 6 units
        {64 * MiB, 51 * 64 * KiB},      // 3355443.2 -> 51 units
        {1 * GiB, 819 * 64 * KiB},      // 53687091.2 -> 819 units
        {20 * 64 * MiB, 64 * MiB},      // the cap exactly
        {100 * GiB, 64 * MiB},          // capped
        {UINT64_MAX, 64 * MiB},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.rate);
        const std::uint64_t p = paced_piece_bytes(r.rate);
        EXPECT_EQ(p, r.piece);
        EXPECT_EQ(p % piece_unit_bytes, 0U);
    }
}

TEST(pacing, pieces_end_on_multiples_of_the_piece) {
    struct row {
        std::uint64_t at, end, piece, length;
    };
    const row rows[] = {
        {0, 100, 0, 100},                        // no piece size: all of it
        {5, 5, 64, 0},                           // empty
        {0, 1000, 256, 256},                     // aligned start
        {100, 1000, 256, 156},                   // unaligned start: up to the boundary
        {256, 1000, 256, 256},                   // then whole pieces
        {768, 1000, 256, 232},                   // the last one shorter
        {900, 1000, 256, 100},                   // inside one piece
        {UINT64_MAX - 10, UINT64_MAX, 4096, 10}, // no overflow at the top
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(::testing::Message() << r.at << ".." << r.end << " / " << r.piece);
        EXPECT_EQ(piece_length(r.at, r.end, r.piece), r.length);
    }
    // A walk covers the range exactly, every inner cut on a multiple of the piece.
    const std::uint64_t piece = 192 * KiB, start = 12345, end = start + 5 * MiB + 77;
    std::uint64_t at = start, pieces = 0;
    while (at < end) {
        const std::uint64_t n = piece_length(at, end, piece);
        ASSERT_GT(n, 0U);
        ASSERT_LE(n, piece);
        at += n;
        if (at < end) {
            EXPECT_EQ(at % piece, 0U);
        }
        ++pieces;
    }
    EXPECT_EQ(at, end);
    EXPECT_EQ(pieces, (end - 1) / piece - start / piece + 1);
}

TEST(pacing, nvme_piece_blocks) {
    struct row {
        std::uint64_t piece;
        std::uint32_t lba, unit, plain, deac;
    };
    const row rows[] = {
        {0, 512, 16, 65536, 65536},             // no rate: nothing is cut
        {384 * KiB, 512, 1, 768, 768},          // no DEAC geometry: the same for both
        {384 * KiB, 512, 16, 768, 768},         // 8 KiB granules: 768 is 48 of them
        {400 * KiB, 512, 48, 800, 768},         // DEAC rounds down to whole units
        {64 * KiB, 512, 2048, 128, 2048},       // a unit larger than a piece: one unit
        {64 * KiB, 4096, 1, 16, 16},
        {64 * MiB, 512, 1, 65536, 65536},       // never above the 16-bit NLB
        {64 * MiB, 512, 48, 65536, 65520},      // DEAC: whole units under it
        {64 * KiB, 512, 131072, 128, 65536},    // unit beyond NLB: capped (no DEAC command is that large)
        {100, 4096, 1, 1, 1},                   // less than a block: one block
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(::testing::Message() << r.piece << " bytes, LBA " << r.lba << ", unit " << r.unit);
        const nvme_piece_blocks b = nvme_pieces(r.piece, r.lba, r.unit);
        EXPECT_EQ(b.plain, r.plain);
        EXPECT_EQ(b.deac, r.deac);
    }
}

using detail::nanoseconds;
using detail::steady;
using detail::token_bucket;

TEST(pacing, bucket_starts_empty_and_meters_every_byte) {
    const auto t0 = steady::time_point{} + std::chrono::hours(1);
    token_bucket b(1000, 100, t0);  // 1000 bytes/s, pieces of 100
    // Empty at the start: the first piece waits its own worth, 100 ms.
    auto w = b.take(100, t0);
    ASSERT_TRUE(w);
    EXPECT_EQ(*w, std::chrono::milliseconds(100));
    EXPECT_TRUE(b.take(100, t0 + std::chrono::milliseconds(99)));
    EXPECT_FALSE(b.take(100, t0 + std::chrono::milliseconds(100)));
    // Right after a take the bucket is empty again.
    w = b.take(50, t0 + std::chrono::milliseconds(100));
    ASSERT_TRUE(w);
    EXPECT_EQ(*w, std::chrono::milliseconds(50));
    // Idle time fills it to two pieces, no more: no larger burst after a pause.
    EXPECT_FALSE(b.take(100, t0 + std::chrono::seconds(10)));
    EXPECT_FALSE(b.take(100, t0 + std::chrono::seconds(10)));
    EXPECT_TRUE(b.take(1, t0 + std::chrono::seconds(10)));
}

TEST(pacing, a_late_wake_up_is_credit_not_lost) {
    // 1000 bytes/s, pieces of 100: every wait is slept 5 ms too long (a VM's timer). With
    // room for one piece only the lateness was lost, 5 ms a piece: 100 pieces took 10.5 s.
    // Kept as credit, 100 pieces take 10 s plus the last wake-up's lateness.
    const auto t0 = steady::time_point{} + std::chrono::hours(1);
    token_bucket b(1000, 100, t0);
    auto now = t0;
    for (int i = 0; i < 100; ++i) {
        while (auto w = b.take(100, now)) {
            now += *w + std::chrono::milliseconds(5);
        }
    }
    EXPECT_LE(now - t0, std::chrono::milliseconds(10005));
    EXPECT_GE(now - t0, std::chrono::seconds(10));
}

TEST(pacing, bucket_never_lets_more_than_rate_times_elapsed) {
    // Pieces of uneven size taken as soon as allowed: at every take, the bytes taken so far
    // are at most rate * (time since the bucket was made).
    const auto t0 = steady::time_point{} + std::chrono::hours(1);
    const std::uint64_t rate = 8 * MiB;
    token_bucket b(rate, 512 * KiB, t0);
    const std::uint64_t sizes[] = {4 * KiB, 512 * KiB, 64 * KiB, 512 * KiB, 1, 300 * KiB};
    auto now = t0;
    std::uint64_t taken = 0;
    for (int round = 0; round < 50; ++round) {
        for (std::uint64_t n : sizes) {
            while (auto w = b.take(n, now)) {
                now += *w;
            }
            taken += n;
            const double elapsed = std::chrono::duration<double>(now - t0).count();
            ASSERT_LE(static_cast<double>(taken), static_cast<double>(rate) * elapsed + 1.0)
                << "after " << taken << " bytes";
        }
    }
    // And no slower than the rate: the waits add up to the bytes' worth (300 takes, each
    // rounded up to whole nanoseconds or, short by a rounding error, one more microsecond).
    const double elapsed = std::chrono::duration<double>(now - t0).count();
    EXPECT_LT(elapsed, static_cast<double>(taken) / static_cast<double>(rate) + 1e-3);
}

TEST(pacing, bucket_grows_to_the_largest_request) {
    const auto t0 = steady::time_point{} + std::chrono::hours(1);
    token_bucket b(1000, 10, t0);
    // 100 bytes in a bucket of 2 x 10 would never be there: it takes its 100 ms instead.
    auto w = b.take(100, t0);
    ASSERT_TRUE(w);
    EXPECT_EQ(*w, std::chrono::milliseconds(100));
    EXPECT_FALSE(b.take(100, t0 + std::chrono::milliseconds(100)));
}

TEST(pacing, no_rate_takes_everything_at_once) {
    token_bucket b(0, 0);
    EXPECT_FALSE(b.limited());
    EXPECT_FALSE(b.take(UINT64_MAX));
    pacer p(rate_limit{}, 0);
    EXPECT_TRUE(p.admit(UINT64_MAX, [](std::uint64_t) { return false; }));  // not even asked
}

TEST(pacing, admit_asks_while_it_waits_and_stops_on_cancel) {
    // 64 KiB at 1 byte/s: 18 hours. The caller's answer ends the wait within a slice.
    pacer p(rate_limit{1}, 64 * KiB);
    unsigned asked = 0;
    std::atomic<bool> stop{false};
    std::thread canceller([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(120));
        stop = true;
    });
    const auto t0 = steady::now();
    const bool admitted = p.admit(64 * KiB, [&](std::uint64_t n) {
        EXPECT_EQ(n, 0U);
        ++asked;
        return !stop.load();
    });
    const auto waited = steady::now() - t0;
    canceller.join();
    EXPECT_FALSE(admitted);
    EXPECT_GE(asked, 2U);  // asked after each slice, not once at the end
    EXPECT_GE(waited, std::chrono::milliseconds(120));
    // Generous: only a machine stalled for seconds breaks it; an 18-hour wait is the bug.
    EXPECT_LT(waited, std::chrono::seconds(5));
}

}  // namespace
}  // namespace wz::io
