// SPDX-License-Identifier: MIT
// Private to lib/io: the psync engine's threads. A few workers run blocking system calls
// (pwrite, the NVMe passthrough ioctl); the calling thread hands out jobs and collects their
// results, so that all bookkeeping, progress and cancellation stay on the caller's thread,
// exactly as with a ring.
#pragma once

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

namespace wz::io::detail {

// Threads a psync run starts at most, whatever the queue depth asks for. Measured (README,
// "psync next to io_uring"): on a loop device over a file and on a file over a loop device,
// 1 MiB O_DIRECT zero writes gain nothing beyond 8 concurrent pwrites on this class of
// machine, and NVMe Write Zeroes commands are short. More threads would only cost stacks.
constexpr unsigned psync_max_threads = 8;

class worker_pool {
public:
    // What a job returns: bytes written or 0 / an NVMe status (>= 0), or -errno.
    using job = std::function<std::int64_t()>;
    struct completion {
        std::uint64_t tag;
        std::int64_t result;
    };

    worker_pool() = default;
    worker_pool(const worker_pool&) = delete;
    worker_pool& operator=(const worker_pool&) = delete;
    ~worker_pool() { stop(); }

    // Starts up to `threads` workers with every signal blocked (so that SIGINT, SIGTERM and
    // the like are delivered to the caller's threads, where the CLI's handlers run). Fewer
    // than asked is fine (RLIMIT_NPROC, a container's pids limit); none is an error naming
    // `what`.
    [[nodiscard]] status start(unsigned threads, std::string_view what);
    [[nodiscard]] unsigned threads() const noexcept { return static_cast<unsigned>(threads_.size()); }

    // Callers keep no more jobs outstanding than there are threads, so a job never waits
    // behind another: everything submitted is in flight.
    void submit(std::uint64_t tag, job j);
    // Waits until at least one completion is there or `timeout` passes, then moves every
    // completion there into `out` (appending). Returns false on timeout with none.
    bool wait(std::optional<std::chrono::nanoseconds> timeout, std::vector<completion>& out);
    // Finishes the jobs already started, drops the others, joins every worker. Idempotent.
    void stop();

private:
    void work();

    std::mutex mutex_;
    std::condition_variable work_cv_;  // workers wait here for jobs
    std::condition_variable done_cv_;  // the caller waits here for completions
    std::deque<std::pair<std::uint64_t, job>> queue_;
    std::vector<completion> done_;
    bool quit_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace wz::io::detail
