// SPDX-License-Identifier: MIT
// The psync engine's threads, for zeroing (io::psync_engine: pwrite and the NVMe passthrough
// ioctl) and for the writer's asynchronous API without io_uring (lib/writer/psync_pool.hpp).
// Workers run blocking system calls; a thread is created only when a task is posted and no
// worker is idle, up to the pool's cap, so a caller keeping q tasks in flight has about q
// threads. Every worker blocks every signal (signal_free_thread) and is named "wz-psync".
#pragma once

#include <wzero/wzero.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace wz::io {

// The most threads one pool runs, whatever its caller asks for: the writer's asynchronous API
// at queue depth 64. Measured on ext4 over a loop device (docs/performance.md), QD 32 and 64: 64
// threads against 16 gave 10-20% more writes per second and a p99 2-4x lower (a write no
// longer queues for a thread), at the same CPU per write. Zeroing asks for fewer
// (detail::psync_zero_depth).
constexpr unsigned max_worker_threads = 64;

class worker_pool {
public:
    // Runs on a worker. Must not throw: an exception leaving a thread ends the process.
    using task = std::function<void()>;
    // A task whose result wait() hands back: bytes written or 0 / an NVMe status (>= 0), or
    // -errno. Must not throw either.
    using job = std::function<std::int64_t()>;
    struct completion {
        std::uint64_t tag;
        std::int64_t result;
    };

    // `max_threads`: the most workers (at least 1, at most max_worker_threads). `what` names
    // the run in errors.
    worker_pool(unsigned max_threads, std::string what);
    worker_pool(const worker_pool&) = delete;
    worker_pool& operator=(const worker_pool&) = delete;
    ~worker_pool() { stop(); }

    // Creates workers up front until there are `n` (at most the cap), for a caller that will
    // keep them all busy at once. Fewer than asked is fine (RLIMIT_NPROC, a container's pids
    // limit); none at all is an error naming `what`.
    [[nodiscard]] status start(unsigned n);
    // Queues `t` and wakes an idle worker, or creates one when none is idle and the cap allows.
    // Fails only when there is no worker and none can be created; `t` is then not queued.
    [[nodiscard]] status post(task t);
    // Posts `j`; its result goes, with `tag`, to the completions wait() hands back.
    [[nodiscard]] status submit(std::uint64_t tag, job j);
    // Waits until at least one completion of submit() is there or `timeout` passes, then moves
    // every completion there into `out` (appending). Returns false on timeout with none.
    bool wait(std::optional<std::chrono::nanoseconds> timeout, std::vector<completion>& out);
    // Finishes the tasks already started, drops the others, joins every worker. Idempotent.
    void stop();
    [[nodiscard]] unsigned threads() const;

private:
    void work();
    // With mutex_ held: one more worker. 0 or the errno of the failed creation.
    int add_worker();
    // The error of a pool left without a worker: naming `what`, the errno of the creation.
    [[nodiscard]] error_info no_worker(int err) const;

    const unsigned max_threads_;
    const std::string what_;
    mutable std::mutex mutex_;
    std::condition_variable work_cv_;  // a task was queued, or stop
    std::condition_variable done_cv_;  // a job's completion is there
    std::deque<task> queue_;
    std::vector<completion> done_;
    std::size_t jobs_out_ = 0;  // submitted, not yet handed back by wait()
    unsigned idle_ = 0;         // workers waiting for a task
    bool quit_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace wz::io
