// SPDX-License-Identifier: MIT
// Group commit without a device: flush_batcher fed with events at chosen times (and run
// against a simulated device), shared_flush with threads and a flush function that blocks
// until the test lets it return.
#include "writer/group_commit.hpp"

#include "util/errors.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace wz::writer_detail {
namespace {

using clock = flush_batcher::clock;
using std::chrono::microseconds;

const clock::time_point t0{};

clock::time_point at(long us) { return t0 + microseconds(us); }

TEST(FlushBatcher, AtQueueDepthOneNothingWaits) {
    flush_batcher g;
    g.write_completed(0, microseconds(100), at(100));
    // The only write in flight: the flush starts at its completion.
    EXPECT_TRUE(g.flush_due(at(100), 1));
    EXPECT_EQ(g.start_flush(), std::vector<std::uint32_t>{0});
    EXPECT_FALSE(g.flush_due(at(100), 1));  // one flush at a time
    EXPECT_EQ(g.flush_completed(), std::vector<std::uint32_t>{0});
    EXPECT_FALSE(g.flush_in_flight());
    EXPECT_FALSE(g.flush_due(at(300), 0));  // nothing waits: no flush
}

TEST(FlushBatcher, ACohortSharesOneFlush) {
    flush_batcher g;
    // Four writes submitted together complete within a few microseconds of each other.
    for (std::uint32_t id = 0; id < 4; ++id) {
        g.write_completed(id, microseconds(100), at(100 + id));
        if (id < 3) {
            EXPECT_FALSE(g.flush_due(at(100 + id), 4)) << "after write " << id;
        }
    }
    EXPECT_TRUE(g.flush_due(at(103), 4));
    EXPECT_EQ(g.start_flush(), (std::vector<std::uint32_t>{0, 1, 2, 3}));
}

TEST(FlushBatcher, TheOldestWaitsAtMostAWriteTime) {
    flush_batcher g;
    g.write_completed(0, microseconds(100), at(100));  // the mean write time is now 100 us
    EXPECT_DOUBLE_EQ(g.mean_write_us(), 100);
    EXPECT_FALSE(g.flush_due(at(199), 4));  // three others still on the device
    EXPECT_TRUE(g.flush_due(at(200), 4));   // but the oldest has waited a write's time
    g.write_completed(1, microseconds(200), at(250));
    EXPECT_DOUBLE_EQ(g.mean_write_us(), 0.875 * 100 + 0.125 * 200);
}

TEST(FlushBatcher, AWriteCompletedAfterAFlushStartedWaitsForTheNext) {
    flush_batcher g;
    g.write_completed(0, microseconds(100), at(100));
    ASSERT_TRUE(g.flush_due(at(100), 1));
    g.start_flush();
    g.write_completed(1, microseconds(100), at(150));
    EXPECT_EQ(g.waiting(), 1U);
    EXPECT_EQ(g.covered(), 1U);
    EXPECT_FALSE(g.flush_due(at(1000), 2));  // the flush in flight does not cover it
    EXPECT_EQ(g.flush_completed(), std::vector<std::uint32_t>{0});
    ASSERT_TRUE(g.flush_due(at(1000), 1));
    EXPECT_EQ(g.start_flush(), std::vector<std::uint32_t>{1});
}

TEST(FlushBatcher, AFlushThatCannotBeQueuedIsRetried) {
    flush_batcher g;
    g.write_completed(0, microseconds(100), at(100));
    g.write_completed(1, microseconds(100), at(101));
    g.start_flush();
    g.unstart_flush();  // no submission entry
    EXPECT_FALSE(g.flush_in_flight());
    EXPECT_EQ(g.waiting(), 2U);
    EXPECT_TRUE(g.flush_due(at(101), 2));
    EXPECT_EQ(g.start_flush(), (std::vector<std::uint32_t>{0, 1}));
}

TEST(FlushBatcher, AFlushErrorFailsExactlyTheWritesItCovered) {
    flush_batcher g;
    g.write_completed(3, microseconds(100), at(100));
    g.write_completed(5, microseconds(100), at(101));
    ASSERT_TRUE(g.flush_due(at(101), 2));
    g.start_flush();
    g.write_completed(7, microseconds(100), at(102));
    // The caller fails what flush_completed hands back: 3 and 5, not 7.
    EXPECT_EQ(g.flush_completed(), (std::vector<std::uint32_t>{3, 5}));
    EXPECT_EQ(g.waiting(), 1U);
    EXPECT_EQ(g.start_flush(), std::vector<std::uint32_t>{7});
}

// A device with unlimited parallelism: a write takes 40..60 us (a fixed pseudo-random
// sequence), a flush 200 us. The submitter keeps `qd` writes in flight, as wzero bench write
// does: whenever writes are handed back it submits as many new ones. Returns the flushes, and
// checks that every write was handed back once, after a flush that started after it completed.
struct sim_result {
    unsigned flushes = 0;
    unsigned handed_back = 0;
};

sim_result simulate(unsigned qd, unsigned total) {
    flush_batcher g;
    std::uint32_t seed = 12345;
    auto write_us = [&] {
        seed = seed * 1103515245U + 12345U;
        return 40 + static_cast<long>((seed >> 16) % 21);
    };
    struct write_t {
        long submitted = 0, done = 0;
        bool completed = false;
    };
    std::map<std::uint32_t, write_t> on_device;  // by id
    std::map<std::uint32_t, long> completed_at;
    std::vector<std::uint32_t> free_ids;
    for (std::uint32_t i = qd; i > 0; --i) {
        free_ids.push_back(i - 1);
    }
    long now = 0;
    long flush_done = -1, flush_started = -1;
    unsigned submitted = 0;
    sim_result r;
    auto submit_free = [&] {
        while (!free_ids.empty() && submitted < total) {
            const std::uint32_t id = free_ids.back();
            free_ids.pop_back();
            on_device[id] = {now, now + write_us(), false};
            ++submitted;
        }
    };
    submit_free();
    while (r.handed_back < total) {
        long next = flush_done;
        for (const auto& [id, w] : on_device) {
            if (!w.completed && (next < 0 || w.done < next)) {
                next = w.done;
            }
        }
        EXPECT_GE(next, 0) << "nothing in flight with " << r.handed_back << " of " << total << " handed back";
        if (next < 0) {
            break;
        }
        now = next;
        // Drain everything that completed by now, then look at the group commit once.
        for (auto& [id, w] : on_device) {
            if (!w.completed && w.done <= now) {
                w.completed = true;
                completed_at[id] = w.done;
                g.write_completed(id, microseconds(w.done - w.submitted), at(w.done));
            }
        }
        if (flush_done >= 0 && flush_done <= now) {
            for (std::uint32_t id : g.flush_completed()) {
                EXPECT_LE(completed_at[id], flush_started) << "write " << id;
                on_device.erase(id);
                free_ids.push_back(id);
                ++r.handed_back;
            }
            flush_done = -1;
        }
        if (g.flush_due(at(now), on_device.size())) {
            g.start_flush();
            flush_started = now;
            flush_done = now + 200;
            ++r.flushes;
        }
        submit_free();
    }
    return r;
}

TEST(FlushBatcher, SimulatedDeviceQueueDepthOneFlushesEveryWrite) {
    const sim_result r = simulate(1, 500);
    EXPECT_EQ(r.handed_back, 500U);
    EXPECT_EQ(r.flushes, 500U);
}

TEST(FlushBatcher, SimulatedDeviceAtMostHalfAFlushPerWrite) {
    for (unsigned qd : {4U, 16U}) {
        const sim_result r = simulate(qd, 2000);
        EXPECT_EQ(r.handed_back, 2000U) << "qd " << qd;
        EXPECT_GE(r.flushes, 2000U / qd) << "qd " << qd;
        EXPECT_LE(r.flushes, 2000U / 2) << "qd " << qd;
        // A cohort of qd writes shares one flush (about 1/qd per write).
        EXPECT_LE(r.flushes, 2000U / qd + 2000U / qd / 4) << "qd " << qd;
    }
}

// A flush function the test releases one call at a time.
class gated_flush {
public:
    status operator()() {
        std::unique_lock lk(m_);
        const unsigned mine = started_++;
        cv_.notify_all();
        cv_.wait(lk, [&] { return released_ > mine; });
        if (mine < results_.size() && results_[mine]) {
            return *results_[mine];
        }
        return {};
    }
    // False after 5 s without the n-th call (a broken policy must fail the test, not hang it).
    bool wait_started(unsigned n) {
        std::unique_lock lk(m_);
        return cv_.wait_for(lk, std::chrono::seconds(5), [&] { return started_ >= n; });
    }
    void release_one() {
        std::lock_guard lk(m_);
        ++released_;
        cv_.notify_all();
    }
    unsigned started() {
        std::lock_guard lk(m_);
        return started_;
    }
    void fail(unsigned call) {
        std::lock_guard lk(m_);
        results_.resize(std::max<std::size_t>(results_.size(), call + 1));
        results_[call] = error_info{std::error_code(EIO, std::system_category()), "flush failed"};
    }

private:
    std::mutex m_;
    std::condition_variable cv_;
    unsigned started_ = 0, released_ = 0;
    std::vector<std::optional<error_info>> results_;
};

// Which writes go alone (RWF_DSYNC) in flush mode: those started with no other in flight
// after a write that had none beside it either; one row per write of a sequence.
TEST(LoneWrites, OnlyAQueueDepthOfOneThatLastsGoesAlone) {
    struct row {
        const char* what;
        std::vector<std::size_t> others_in_flight;  // at each write's start
        std::vector<bool> alone;
    };
    const std::vector<row> rows{
        {"queue depth 1: every write", {0, 0, 0, 0}, {true, true, true, true}},
        {"steady queue depth 4: none", {0, 1, 2, 3, 3, 3, 3}, {true, false, false, false, false, false, false}},
        // Bursts of 3 submitted together: the first of each later burst follows a write that
        // had company, so it joins its burst's group commit.
        {"bursts of 3", {0, 1, 2, 0, 1, 2, 0, 1, 2}, {true, false, false, false, false, false, false, false, false}},
        {"back to queue depth 1 after a burst", {0, 1, 0, 0, 0}, {true, false, false, true, true}},
        {"a write with company in the middle", {0, 0, 1, 0, 0}, {true, true, false, false, true}},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.what);
        lone_writes rule;
        ASSERT_EQ(r.others_in_flight.size(), r.alone.size());
        for (std::size_t i = 0; i < r.alone.size(); ++i) {
            EXPECT_EQ(rule.starts(r.others_in_flight[i]), r.alone[i]) << "write " << i;
        }
    }
}

TEST(SharedFlush, OneThreadFlushesEveryWrite) {
    shared_flush s;
    unsigned flushes = 0;
    for (int i = 0; i < 3; ++i) {
        EXPECT_TRUE(s.commit([&]() -> status {
                         ++flushes;
                         return {};
                     }).ok());
    }
    EXPECT_EQ(flushes, 3U);
}

// Thread A runs flush 0; B, C and D complete while it runs: flush 0 does not cover them, and
// one flush (1) covers all three.
TEST(SharedFlush, WritesCompletedDuringAFlushShareTheNext) {
    shared_flush s;
    gated_flush f;
    auto flush = [&] { return f(); };
    std::atomic<unsigned> done{0};
    std::thread a([&] {
        EXPECT_TRUE(s.commit(flush).ok());
        ++done;
    });
    ASSERT_TRUE(f.wait_started(1));
    std::vector<std::thread> others;
    for (int i = 0; i < 3; ++i) {
        others.emplace_back([&] {
            EXPECT_TRUE(s.commit(flush).ok());
            ++done;
        });
    }
    // Give B, C, D time to arrive and wait; none may return while flush 0 runs.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(done.load(), 0U);
    f.release_one();  // flush 0 returns: A is durable, the others are not
    EXPECT_TRUE(f.wait_started(2));
    a.join();
    EXPECT_EQ(done.load(), 1U);
    f.release_one();  // flush 1 covers B, C and D
    for (auto& t : others) {
        t.join();
    }
    EXPECT_EQ(done.load(), 4U);
    EXPECT_EQ(f.started(), 2U);
}

// Threads that commit, and a bounded wait for all of them: a policy that leaves a waiter
// blocked must turn the test red, not hang it (the blocked thread cannot be joined, so the
// process ends after the failure is printed).
class committers {
public:
    explicit committers(shared_flush& s) : s_(s) {}
    ~committers() {
        for (auto& t : threads_) {
            t.join();
        }
    }
    // Starts a thread that commits once; its result is result(i), i counting from 0.
    template <class Flush>
    void start(Flush flush) {
        std::lock_guard lk(m_);
        const std::size_t i = results_.size();
        results_.emplace_back();
        threads_.emplace_back([this, i, flush] {
            auto e = error_of(s_.commit(flush));
            std::lock_guard lk2(m_);
            results_[i] = std::move(e);
            ++done_;
            cv_.notify_all();
        });
    }
    unsigned done() {
        std::lock_guard lk(m_);
        return done_;
    }
    // Waits up to 5 s for `n` threads to have returned.
    bool wait_done(unsigned n) {
        std::unique_lock lk(m_);
        return cv_.wait_for(lk, std::chrono::seconds(5), [&] { return done_ >= n; });
    }
    void finish_or_abort() {
        if (!wait_done(static_cast<unsigned>(threads_.size()))) {
            ADD_FAILURE() << "a committer still waits after 5 s (" << done() << " of " << threads_.size()
                          << " returned)";
            std::abort();
        }
    }
    std::optional<error_info> result(std::size_t i) {
        std::lock_guard lk(m_);
        return results_[i];
    }

private:
    shared_flush& s_;
    std::mutex m_;
    std::condition_variable cv_;
    std::vector<std::thread> threads_;
    std::vector<std::optional<error_info>> results_;
    unsigned done_ = 0;
};

// Flush 0 fails: its caller A gets the error; B, which completed while it ran (not covered),
// is made durable by the next flush and succeeds.
TEST(SharedFlush, AWriteCompletedDuringAFailingFlushIsFlushedAgain) {
    shared_flush s;
    gated_flush f;
    f.fail(0);
    auto flush = [&] { return f(); };
    committers c(s);
    c.start(flush);  // A
    ASSERT_TRUE(f.wait_started(1));
    c.start(flush);  // B
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    f.release_one();  // flush 0 fails
    EXPECT_TRUE(f.wait_started(2));
    f.release_one();  // flush 1 covers B
    c.finish_or_abort();
    ASSERT_TRUE(c.result(0));
    EXPECT_EQ(c.result(0)->code.value(), EIO);
    EXPECT_FALSE(c.result(1));
    EXPECT_EQ(f.started(), 2U);
    EXPECT_EQ(s.failed_ranges_held(), 0U);
}

// The fsync-error rule (PostgreSQL, the kernel's errseq_t): a failed flush fails every write
// it covered, not only the one whose thread ran it. A runs flush 0 (succeeds); B, C and D
// complete while it runs, so flush 1 covers all three, and fails. E completes while flush 1
// runs: not covered, it is flushed again (flush 2) and succeeds. B, C and D must not succeed
// through flush 2: Linux reports a writeback error once per open file description, so a
// second fdatasync on the same descriptor says nothing about their data.
TEST(SharedFlush, AFlushErrorGoesToEveryWriteItCovered) {
    shared_flush s;
    gated_flush f;
    f.fail(1);
    auto flush = [&] { return f(); };
    committers c(s);
    c.start(flush);  // A
    ASSERT_TRUE(f.wait_started(1));
    for (int i = 0; i < 3; ++i) {
        c.start(flush);  // B, C, D
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    f.release_one();  // flush 0 succeeds: A is durable
    ASSERT_TRUE(c.wait_done(1));
    EXPECT_FALSE(c.result(0));
    ASSERT_TRUE(f.wait_started(2));  // one of B, C, D runs flush 1
    c.start(flush);                  // E
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    f.release_one();  // flush 1 fails
    // Each covered waiter returns the error, and none waits for another flush to do so.
    EXPECT_TRUE(c.wait_done(4)) << c.done() << " returned";
    EXPECT_TRUE(f.wait_started(3));  // E's flush
    f.release_one();                 // flush 2 succeeds
    // Anything a broken policy started beyond that may return.
    for (int i = 0; i < 8; ++i) {
        f.release_one();
    }
    c.finish_or_abort();
    for (std::size_t i = 1; i <= 3; ++i) {
        ASSERT_TRUE(c.result(i)) << "covered write " << i << " succeeded after its flush failed";
        EXPECT_EQ(c.result(i)->code.value(), EIO);
        EXPECT_EQ(c.result(i)->message, "flush failed");
    }
    EXPECT_FALSE(c.result(4));
    EXPECT_EQ(f.started(), 3U);
    EXPECT_EQ(s.failed_ranges_held(), 0U);  // every covered waiter took its error
}

// Many threads, many commits, every third flush fails: nobody hangs, each failed flush fails
// at least the write of the thread that ran it, and no failed range outlives its waiters.
TEST(SharedFlush, FailingFlushesUnderLoadSettleEveryWrite) {
    shared_flush s;
    std::atomic<unsigned> calls{0}, failed{0}, errors{0}, successes{0};
    auto flush = [&]() -> status {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        if (calls++ % 3 == 1) {
            ++failed;
            return error_info{std::error_code(EIO, std::system_category()), "flush failed"};
        }
        return {};
    };
    constexpr unsigned threads = 8, per_thread = 50;
    std::atomic<unsigned> finished{0};
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < threads; ++t) {
        ts.emplace_back([&] {
            for (unsigned i = 0; i < per_thread; ++i) {
                if (!s.commit(flush).ok()) {
                    ++errors;
                } else {
                    ++successes;
                }
            }
            ++finished;
        });
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (finished.load() < threads && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (finished.load() < threads) {
        ADD_FAILURE() << "committers still wait after 20 s";
        std::abort();
    }
    for (auto& t : ts) {
        t.join();
    }
    EXPECT_EQ(errors + successes, threads * per_thread);
    EXPECT_GE(errors.load(), failed.load());
    EXPECT_GT(successes.load(), 0U);
    EXPECT_EQ(s.failed_ranges_held(), 0U);
}

}  // namespace
}  // namespace wz::writer_detail
