// SPDX-License-Identifier: MIT
// Private to lib/writer: the writer's asynchronous API on the psync engine (no io_uring), on
// lib/io's worker_pool. submit() queues a write; a worker runs it and, in flush mode, hands it
// to the same group commit as io_uring's (flush_batcher: a flush covers every write completed
// before it started, a failed flush fails every write it covered, one flush at a time, started
// once no other write is running or the oldest waiting one has waited a write's time; the
// worker that finds it due runs it while the others go on writing). Only a durable (or failed)
// write goes on the ready list that complete() hands back. The I/O itself is the caller's
// (write_fn, flush_fn), so the rule is tested without a device (psync_pool_test.cpp).
#pragma once

#include "io/worker_pool.hpp"
#include "writer/group_commit.hpp"

#include <wzero/wzero.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

namespace wz::writer_detail {

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

    // `threads`: the most workers (the queue depth; created as submit() needs them, at most
    // io::max_worker_threads).
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
    // On a worker: writes job `slot`, then runs the flushes that are due.
    void run(std::uint32_t slot);
    // With mutex_ held: `slot` is durable or failed; frees the slot.
    void finish(std::uint32_t slot, status st);

    const write_fn write_;
    const flush_fn flush_;
    const std::string what_;

    mutable std::mutex mutex_;
    std::condition_variable done_cv_;  // a job finished
    std::vector<job> slots_;                 // jobs between submit() and finish()
    std::vector<std::uint32_t> free_slots_;
    flush_batcher group_;                    // flush mode
    std::vector<finished> ready_;
    std::size_t in_flight_ = 0;  // submitted, not yet handed back
    std::uint64_t blocking_waits_ = 0;
    // Last: its workers use everything above until the destructor has joined them.
    io::worker_pool pool_;
};

}  // namespace wz::writer_detail
