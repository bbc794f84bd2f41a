// SPDX-License-Identifier: MIT
// Private to lib/writer: the thread pool behind the writer's asynchronous API on the psync
// engine (no io_uring). submit() queues a write; a worker runs it and, in flush mode, hands it
// to the same group commit as io_uring's (flush_batcher: a flush covers every write completed
// before it started, a failed flush fails every write it covered, one flush at a time, started
// once no other write is running or the oldest waiting one has waited a write's time; the
// worker that finds it due runs it while the others go on writing). Only a durable (or failed)
// write goes on the ready list that complete() hands back. The I/O itself is the caller's
// (write_fn, flush_fn), so the rule is tested without a device (psync_pool_test.cpp).
#pragma once

#include "writer/group_commit.hpp"

#include <wzero/wzero.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace wz::writer_detail {

// Threads at most per pool (the queue depth, if smaller). A thread is created only when a
// write is queued and no worker is idle, so a writer kept at QD q has about q of them. Measured
// on ext4 over a loop device (README, "psync"), QD 32 and 64: a cap of 64 against 16 gave
// 10-20% more writes per second and a p99 2-4x lower (a write no longer queues for a thread),
// at the same CPU per write; a pool past the writes in flight gains nothing.
constexpr unsigned psync_max_threads = 64;

class psync_pool {
public:
    using clock = std::chrono::steady_clock;
    struct job {
        std::uint64_t user_data = 0;
        const unsigned char* buf = nullptr;
        std::size_t len = 0;
        std::uint64_t offset = 0;
        clock::time_point t0;
        // Flush mode: write_fn makes this write durable itself (RWF_DSYNC: it goes alone,
        // lone_writes), so it takes no part in the group commit.
        bool alone = false;
    };
    struct finished {
        std::uint64_t user_data = 0;
        std::size_t len = 0;
        std::optional<error_info> error;
        double latency_us = 0;  // submit() to durable (or failed)
        bool alone = false;     // the job's
    };
    // The whole write of a job (short writes continued): ok, or the error naming its range.
    using write_fn = std::function<status(const job&)>;

    // The flush (fdatasync or NVMe Flush): ok, or its error naming the device.
    using flush_fn = std::function<status()>;

    // `threads`: the most workers (created as submit() needs them, at most psync_max_threads).
    // `flush`: flush mode when set, else every write is durable when write_fn returns.
    // `what`: the target, for messages.
    psync_pool(unsigned threads, write_fn write, flush_fn flush, std::string what);
    // Drops the jobs no worker has started, waits for those running, joins the workers.
    ~psync_pool();
    psync_pool(const psync_pool&) = delete;
    psync_pool& operator=(const psync_pool&) = delete;

    // Queues a job; fails only when no worker can be created at all.
    status submit(const job& j);
    // Waits until min(min_complete, in_flight()) jobs are finished, moves every finished one
    // to `out`, returns how many.
    std::size_t complete(std::vector<finished>& out, std::size_t min_complete);
    [[nodiscard]] std::size_t in_flight() const;
    [[nodiscard]] std::uint64_t blocking_waits() const;
    [[nodiscard]] std::size_t threads() const;

private:
    void work();
    // With mutex_ held: `slot` is durable or failed; frees the slot.
    void finish(std::uint32_t slot, status st);

    const unsigned max_threads_;
    const write_fn write_;
    const flush_fn flush_;
    const std::string what_;

    mutable std::mutex mutex_;
    std::condition_variable work_cv_;  // a job was queued, or stop
    std::condition_variable done_cv_;  // a job finished
    std::vector<job> slots_;                 // jobs between submit() and finish()
    std::vector<std::uint32_t> free_slots_;
    std::deque<std::uint32_t> queue_;        // submitted, no worker yet
    unsigned running_ = 0;                   // in write_
    flush_batcher group_;                    // flush mode
    std::vector<finished> ready_;
    std::size_t in_flight_ = 0;  // submitted, not yet handed back
    unsigned idle_ = 0;          // workers waiting for a job
    bool stopping_ = false;
    std::uint64_t blocking_waits_ = 0;
    std::vector<std::thread> workers_;
};

}  // namespace wz::writer_detail
