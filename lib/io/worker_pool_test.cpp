// SPDX-License-Identifier: MIT
// io::worker_pool, the one pool of psync threads: threads on demand up to the cap, named and
// signal-free, jobs' results handed back with their tags, queued tasks dropped by stop().
#include "io/worker_pool.hpp"

#include <gtest/gtest.h>

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

using wz::io::worker_pool;

// Tasks wait here until released; await(n) waits until n of them wait.
class gate {
public:
    void wait() {
        std::unique_lock lock(m_);
        ++waiting_;
        cv_.notify_all();
        cv_.wait(lock, [this] { return open_; });
    }
    bool await(unsigned n) {
        std::unique_lock lock(m_);
        return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return waiting_ >= n; });
    }
    void release() {
        std::lock_guard lock(m_);
        open_ = true;
        cv_.notify_all();
    }

private:
    std::mutex m_;
    std::condition_variable cv_;
    unsigned waiting_ = 0;
    bool open_ = false;
};

TEST(WorkerPool, ThreadsAreMadeOnDemandUpToTheCap) {
    for (const unsigned cap : {1U, 3U, 1000U}) {
        SCOPED_TRACE(::testing::Message() << "cap asked " << cap);
        const unsigned expect = std::min(cap, wz::io::max_worker_threads);
        worker_pool pool(cap, "test");
        EXPECT_EQ(pool.threads(), 0U) << "a thread before the first task";
        gate g;
        std::atomic<unsigned> running{0}, most{0}, blocked{0}, finished{0};
        std::mutex names_mutex;
        std::set<std::string> names;
        for (unsigned i = 0; i < expect + 5; ++i) {
            ASSERT_TRUE(pool.post([&] {
                const unsigned now = ++running;
                for (unsigned m = most.load(); now > m && !most.compare_exchange_weak(m, now);) {
                }
                sigset_t cur;
                ::pthread_sigmask(SIG_SETMASK, nullptr, &cur);
                if (::sigismember(&cur, SIGINT) == 1 && ::sigismember(&cur, SIGTERM) == 1) {
                    ++blocked;
                }
                char name[16] = {};
                ::pthread_getname_np(::pthread_self(), name, sizeof name);
                {
                    std::lock_guard lock(names_mutex);
                    names.insert(name);
                }
                g.wait();
                --running;
                ++finished;
            }).ok());
        }
        ASSERT_TRUE(g.await(expect));
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        EXPECT_EQ(pool.threads(), expect);
        EXPECT_EQ(most.load(), expect);
        g.release();
        while (finished.load() < expect + 5) {  // the queued ones run on the same threads
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        EXPECT_EQ(pool.threads(), expect);
        pool.stop();
        EXPECT_EQ(blocked.load(), expect + 5) << "a task ran with SIGINT or SIGTERM deliverable";
        EXPECT_EQ(names, std::set<std::string>{"wz-psync"});
    }
}

TEST(WorkerPool, StartMakesThemUpFrontAndJobsComeBackWithTheirTags) {
    worker_pool pool(4, "test");
    ASSERT_TRUE(pool.start(10).ok());
    EXPECT_EQ(pool.threads(), 4U);
    for (std::uint64_t tag = 0; tag < 4; ++tag) {
        ASSERT_TRUE(pool.submit(tag, [tag] { return static_cast<std::int64_t>(tag * 10) - 5; }).ok());
    }
    std::vector<worker_pool::completion> done;
    while (done.size() < 4) {
        ASSERT_TRUE(pool.wait(std::chrono::seconds(30), done));
    }
    std::sort(done.begin(), done.end(), [](const auto& a, const auto& b) { return a.tag < b.tag; });
    for (std::uint64_t tag = 0; tag < 4; ++tag) {
        EXPECT_EQ(done[tag].tag, tag);
        EXPECT_EQ(done[tag].result, static_cast<std::int64_t>(tag * 10) - 5);
    }
    done.clear();
    EXPECT_FALSE(pool.wait(std::chrono::milliseconds(10), done)) << "a completion nobody submitted";
}

TEST(WorkerPool, StopFinishesTheRunningTasksAndDropsTheQueuedOnes) {
    gate g;
    std::atomic<unsigned> started{0}, finished{0};
    std::thread opener;
    {
        worker_pool pool(2, "test");
        for (int i = 0; i < 10; ++i) {
            ASSERT_TRUE(pool.post([&] {
                ++started;
                g.wait();
                ++finished;
            }).ok());
        }
        ASSERT_TRUE(g.await(2));
        opener = std::thread([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            g.release();
        });
    }  // ~worker_pool: stop()
    EXPECT_EQ(started.load(), 2U) << "a queued task was started by a pool being stopped";
    EXPECT_EQ(finished.load(), 2U) << "stop() returned before the running tasks did";
    opener.join();
}

}  // namespace
