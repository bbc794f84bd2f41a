// SPDX-License-Identifier: MIT
// The psync engine's pool without a device: writes and flushes are functions the test
// controls (gated, failing), so the durability rule is checked exactly: complete() hands back
// nothing before its flush returned, a failed flush fails the writes it covered and no
// others, workers take no signals, and nothing outlives the pool.
#include "writer/psync_pool.hpp"

#include "testing/threads.hpp"
#include "util/errors.hpp"

#include <pthread.h>
#include <signal.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace {

using wz::writer_detail::psync_pool;

// A gate the test opens; waiters are counted.
struct job_gate {
    std::mutex m;
    std::condition_variable cv;
    bool open = false;
    unsigned waiting = 0;
    void wait() {
        std::unique_lock lk(m);
        ++waiting;
        cv.notify_all();
        cv.wait(lk, [&] { return open; });
        --waiting;
    }
    void release() {
        std::lock_guard lk(m);
        open = true;
        cv.notify_all();
    }
    // Waits (bounded) until n threads wait here.
    bool await_waiters(unsigned n) {
        std::unique_lock lk(m);
        return cv.wait_for(lk, std::chrono::seconds(10), [&] { return waiting >= n; });
    }
};

psync_pool::job job_at(std::uint64_t id) {
    psync_pool::job j;
    j.user_data = id;
    j.len = 4096;
    j.offset = id * 4096;
    j.t0 = psync_pool::clock::now();
    return j;
}

// The pool's workers ("wz-psync"; io_uring's io-wq workers of other tests in this process
// leave in their own time and are not counted).
std::size_t task_count() { return wz::testing::threads_named("wz-psync"); }
std::size_t task_count_settled(std::size_t want) { return wz::testing::threads_named_settled("wz-psync", want); }

TEST(PsyncPool, NothingIsHandedBackBeforeItsFlushReturned) {
    job_gate flush_gate;
    std::atomic<unsigned> flushes{0};
    psync_pool pool(
        4, [](const psync_pool::job&) { return wz::status{}; },
        [&] {
            ++flushes;
            flush_gate.wait();
            return wz::status{};
        },
        "/test/f");
    for (std::uint64_t i = 0; i < 4; ++i) {
        ASSERT_TRUE(pool.submit(job_at(i)).ok());
    }
    ASSERT_TRUE(flush_gate.await_waiters(1)) << "no flush started";
    // Every write has completed (the write function returns at once), and not one is durable.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::vector<psync_pool::finished> out;
    EXPECT_EQ(pool.complete(out, 0), 0U) << "handed back before the flush returned";
    EXPECT_TRUE(out.empty());
    EXPECT_EQ(pool.in_flight(), 4U);
    flush_gate.release();
    EXPECT_EQ(pool.complete(out, 4), 4U);
    std::set<std::uint64_t> ids;
    for (const auto& f : out) {
        EXPECT_FALSE(f.error) << f.error->message;
        EXPECT_EQ(f.len, 4096U);
        ids.insert(f.user_data);
    }
    EXPECT_EQ(ids.size(), 4U);
    EXPECT_GE(flushes.load(), 1U);
    EXPECT_LE(flushes.load(), 4U);
    EXPECT_EQ(pool.in_flight(), 0U);
}

// A job that goes alone (RWF_DSYNC) is durable when its write returns: handed back without a
// flush, while the others still wait for theirs.
TEST(PsyncPool, AJobThatGoesAloneIsHandedBackWithoutAFlush) {
    job_gate flush_gate;
    std::atomic<unsigned> flushes{0};
    std::atomic<unsigned> alone_writes{0};
    psync_pool pool(
        4,
        [&](const psync_pool::job& j) {
            if (j.alone) {
                ++alone_writes;
            }
            return wz::status{};
        },
        [&] {
            ++flushes;
            flush_gate.wait();
            return wz::status{};
        },
        "/test/f");
    auto lone = job_at(0);
    lone.alone = true;
    ASSERT_TRUE(pool.submit(lone).ok());
    std::vector<psync_pool::finished> out;
    // Looked for without blocking (bounded): a job held for a flush would wait at the gate.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (pool.complete(out, 0) == 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (out.size() != 1U) {
        flush_gate.release();
        FAIL() << "a write that went alone was not handed back without a flush (flushes " << flushes.load() << ")";
    }
    EXPECT_EQ(out[0].user_data, 0U);
    EXPECT_TRUE(out[0].alone);
    EXPECT_FALSE(out[0].error);
    EXPECT_EQ(flushes.load(), 0U) << "a write that went alone was flushed";
    EXPECT_EQ(alone_writes.load(), 1U);
    // Not alone: held until a flush returns.
    ASSERT_TRUE(pool.submit(job_at(1)).ok());
    ASSERT_TRUE(flush_gate.await_waiters(1)) << "no flush started";
    out.clear();
    EXPECT_EQ(pool.complete(out, 0), 0U) << "handed back before the flush returned";
    flush_gate.release();
    ASSERT_EQ(pool.complete(out, 1), 1U);
    EXPECT_FALSE(out[0].alone);
    EXPECT_EQ(flushes.load(), 1U);
    EXPECT_EQ(alone_writes.load(), 1U);
}

TEST(PsyncPool, AFailedFlushFailsTheWritesItCoveredAndNoOthers) {
    // Write 0 completes alone: its flush (the first) starts and is held. Writes 1 and 2
    // complete while it runs, so it does not cover them: it fails, and so does write 0 only;
    // the next flush (which succeeds) covers 1 and 2.
    job_gate first_flush;
    std::atomic<unsigned> flushes{0};
    std::atomic<unsigned> written{0};
    psync_pool pool(
        2,
        [&](const psync_pool::job&) {
            ++written;
            return wz::status{};
        },
        [&]() -> wz::status {
            if (flushes++ == 0) {
                first_flush.wait();
                return wz::make_error("fdatasync", "/test/f", EIO);
            }
            return wz::status{};
        },
        "/test/f");
    ASSERT_TRUE(pool.submit(job_at(0)).ok());
    ASSERT_TRUE(first_flush.await_waiters(1));
    ASSERT_TRUE(pool.submit(job_at(1)).ok());
    ASSERT_TRUE(pool.submit(job_at(2)).ok());
    for (int i = 0; i < 10000 && written.load() < 3; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(written.load(), 3U);
    std::vector<psync_pool::finished> out;
    EXPECT_EQ(pool.complete(out, 0), 0U) << "handed back while the flush ran";
    first_flush.release();
    ASSERT_EQ(pool.complete(out, 3), 3U);
    for (const auto& f : out) {
        SCOPED_TRACE(::testing::Message() << "write " << f.user_data);
        if (f.user_data == 0) {
            ASSERT_TRUE(f.error);
            EXPECT_EQ(f.error->code.value(), EIO);
            EXPECT_NE(f.error->message.find("fdatasync /test/f"), std::string::npos) << f.error->message;
            EXPECT_NE(f.error->message.find("(write [offset 0, length 4096] not durable)"), std::string::npos)
                << f.error->message;
        } else {
            EXPECT_FALSE(f.error) << f.error->message;
        }
    }
    EXPECT_EQ(flushes.load(), 2U);
}

// Writes submitted together share a flush (at QD q about 1/q per write, as on io_uring),
// and a write whose write failed is not held back by the flush rule.
TEST(PsyncPool, ACohortSharesAFlushAndAFailedWriteDoesNotStallIt) {
    std::atomic<unsigned> flushes{0};
    psync_pool pool(
        4,
        [](const psync_pool::job& j) -> wz::status {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            if (j.user_data % 8 == 7) {
                return wz::make_error_range("write (psync)", "/test/f", j.offset, j.len, EIO);
            }
            return wz::status{};
        },
        [&] {
            ++flushes;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            return wz::status{};
        },
        "/test/f");
    constexpr unsigned rounds = 25, qd = 4;
    unsigned failed = 0;
    for (unsigned r = 0; r < rounds; ++r) {
        for (std::uint64_t i = 0; i < qd; ++i) {
            ASSERT_TRUE(pool.submit(job_at(r * qd + i)).ok());
        }
        std::vector<psync_pool::finished> out;
        ASSERT_EQ(pool.complete(out, qd), qd);
        for (const auto& f : out) {
            failed += f.error ? 1 : 0;
        }
    }
    EXPECT_EQ(failed, rounds * qd / 8);
    EXPECT_GE(flushes.load(), rounds);
    EXPECT_LE(flushes.load(), rounds * 2) << "about one flush per cohort of " << qd;
}

TEST(PsyncPool, EveryWriteAFailingFlushCoveredFails) {
    std::atomic<unsigned> flushes{0};
    psync_pool pool(
        8, [](const psync_pool::job&) { return wz::status{}; },
        [&]() -> wz::status {
            ++flushes;
            return wz::make_error("fdatasync", "/test/f", EIO);
        },
        "/test/f");
    constexpr unsigned n = 64;
    for (std::uint64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(pool.submit(job_at(i)).ok());
    }
    std::vector<psync_pool::finished> out;
    ASSERT_EQ(pool.complete(out, n), n);
    for (const auto& f : out) {
        ASSERT_TRUE(f.error) << "write " << f.user_data << " handed back as durable";
        EXPECT_NE(f.error->message.find(fmt::format("[offset {}, length 4096] not durable", f.user_data * 4096)),
                  std::string::npos)
            << f.error->message;
    }
    EXPECT_GE(flushes.load(), 1U);
    EXPECT_LE(flushes.load(), n);
}

TEST(PsyncPool, AFailedWriteIsHandedBackWithItsErrorAndNotFlushed) {
    std::atomic<unsigned> flushes{0};
    psync_pool pool(
        2,
        [](const psync_pool::job& j) -> wz::status {
            return wz::make_error_range("write (psync)", "/test/f", j.offset, j.len, ENOSPC);
        },
        [&] {
            ++flushes;
            return wz::status{};
        },
        "/test/f");
    ASSERT_TRUE(pool.submit(job_at(3)).ok());
    std::vector<psync_pool::finished> out;
    ASSERT_EQ(pool.complete(out, 1), 1U);
    ASSERT_TRUE(out[0].error);
    EXPECT_EQ(out[0].error->code.value(), ENOSPC);
    EXPECT_NE(out[0].error->message.find("write (psync) /test/f"), std::string::npos) << out[0].error->message;
    EXPECT_NE(out[0].error->message.find("12288"), std::string::npos) << out[0].error->message;
    EXPECT_EQ(flushes.load(), 0U);
}

TEST(PsyncPool, AtMostTheGivenThreadsAndNoneOutliveThePool) {
    const std::size_t tasks_before = task_count();
    constexpr unsigned jobs = wz::io::max_worker_threads + 8;
    for (const unsigned threads : {1U, 3U, 1000U}) {
        SCOPED_TRACE(::testing::Message() << threads << " threads asked");
        const unsigned expect = std::min(threads, wz::io::max_worker_threads);
        job_gate writes;
        std::atomic<unsigned> running{0}, most{0};
        std::atomic<unsigned> signals_blocked{0};
        {
            psync_pool pool(
                threads,
                [&](const psync_pool::job&) {
                    const unsigned now = ++running;
                    for (unsigned m = most.load(); now > m && !most.compare_exchange_weak(m, now);) {
                    }
                    sigset_t cur;
                    ::pthread_sigmask(SIG_SETMASK, nullptr, &cur);
                    if (::sigismember(&cur, SIGTERM) == 1 && ::sigismember(&cur, SIGINT) == 1 &&
                        ::sigismember(&cur, SIGHUP) == 1) {
                        ++signals_blocked;
                    }
                    writes.wait();
                    --running;
                    return wz::status{};
                },
                {}, "/test/f");
            EXPECT_EQ(pool.threads(), 0U) << "threads before the first submit";
            for (std::uint64_t i = 0; i < jobs; ++i) {
                ASSERT_TRUE(pool.submit(job_at(i)).ok());
            }
            ASSERT_TRUE(writes.await_waiters(expect));
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            EXPECT_EQ(pool.threads(), expect);
            EXPECT_EQ(most.load(), expect);
            EXPECT_EQ(task_count(), tasks_before + expect);
            writes.release();
            std::vector<psync_pool::finished> out;
            EXPECT_EQ(pool.complete(out, jobs), jobs);
            EXPECT_EQ(signals_blocked.load(), jobs) << "a worker ran with SIGTERM, SIGINT or SIGHUP deliverable";
        }
        EXPECT_EQ(task_count_settled(tasks_before), tasks_before) << "a worker outlived its pool";
    }
}

TEST(PsyncPool, DestroyedWithWritesQueuedWaitsForTheRunningOnesOnly) {
    const std::size_t tasks_before = task_count();
    job_gate writes;
    std::atomic<unsigned> started{0}, finished_writes{0};
    std::thread opener;
    {
        psync_pool pool(
            2,
            [&](const psync_pool::job&) {
                ++started;
                writes.wait();
                ++finished_writes;
                return wz::status{};
            },
            {}, "/test/f");
        for (std::uint64_t i = 0; i < 10; ++i) {
            ASSERT_TRUE(pool.submit(job_at(i)).ok());
        }
        ASSERT_TRUE(writes.await_waiters(2));
        opener = std::thread([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            writes.release();
        });
    }  // the destructor returns only after the two running writes returned
    EXPECT_EQ(finished_writes.load(), started.load());
    EXPECT_LT(started.load(), 10U) << "queued writes were started by a pool being destroyed";
    opener.join();
    EXPECT_EQ(task_count_settled(tasks_before), tasks_before);
}

}  // namespace
