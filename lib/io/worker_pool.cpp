// SPDX-License-Identifier: MIT
#include "io/worker_pool.hpp"

#include "util/errors.hpp"
#include "util/signal_free_thread.hpp"

#include <pthread.h>

#include <fmt/format.h>

#include <algorithm>
#include <system_error>

namespace wz::io {

worker_pool::worker_pool(unsigned max_threads, std::string what)
    : max_threads_(std::clamp(max_threads, 1U, max_worker_threads)), what_(std::move(what)) {
    // Room for every worker up front: a push_back that failed with the new thread running
    // would terminate.
    threads_.reserve(max_threads_);
}

int worker_pool::add_worker() {
    try {
        threads_.push_back(signal_free_thread([this] { work(); }));
    } catch (const std::system_error& e) {
        return e.code().value() != 0 ? e.code().value() : EAGAIN;
    }
    return 0;
}

error_info worker_pool::no_worker(int err) const {
    return make_error_msg(err, fmt::format("{}: psync engine: no worker thread could be started: {}", what_,
                                           errno_text(err)));
}

status worker_pool::start(unsigned n) {
    std::lock_guard lock(mutex_);
    int err = 0;
    while (threads_.size() < std::clamp(n, 1U, max_threads_) && err == 0) {
        err = add_worker();
    }
    if (threads_.empty()) {
        return no_worker(err);
    }
    return {};
}

status worker_pool::post(task t) {
    {
        std::lock_guard lock(mutex_);
        queue_.push_back(std::move(t));
        if (queue_.size() > idle_ && threads_.size() < max_threads_) {
            // With at least one worker the task runs, later, when creating this one fails.
            if (const int err = add_worker(); err != 0 && threads_.empty()) {
                queue_.pop_back();
                return no_worker(err);
            }
        }
    }
    work_cv_.notify_one();
    return {};
}

status worker_pool::submit(std::uint64_t tag, job j) {
    {
        // Room for this completion now, on the caller's thread: a worker's push_back must
        // not allocate (bad_alloc there would end the process).
        std::lock_guard lock(mutex_);
        done_.reserve(jobs_out_ + 1);
        ++jobs_out_;
    }
    auto s = post([this, tag, j = std::move(j)] {
        const std::int64_t result = j();
        std::lock_guard lock(mutex_);
        done_.push_back(completion{tag, result});
        done_cv_.notify_one();
    });
    if (!s.ok()) {
        std::lock_guard lock(mutex_);
        --jobs_out_;
    }
    return s;
}

bool worker_pool::wait(std::optional<std::chrono::nanoseconds> timeout, std::vector<completion>& out) {
    std::unique_lock lock(mutex_);
    auto ready = [this] { return !done_.empty(); };
    if (timeout) {
        if (!done_cv_.wait_for(lock, *timeout, ready)) {
            return false;
        }
    } else {
        done_cv_.wait(lock, ready);
    }
    out.insert(out.end(), done_.begin(), done_.end());
    jobs_out_ -= done_.size();
    done_.clear();
    return true;
}

void worker_pool::stop() {
    {
        std::lock_guard lock(mutex_);
        quit_ = true;
        queue_.clear();
    }
    work_cv_.notify_all();
    for (auto& t : threads_) {
        t.join();
    }
    threads_.clear();
}

unsigned worker_pool::threads() const {
    std::lock_guard lock(mutex_);
    return static_cast<unsigned>(threads_.size());
}

void worker_pool::work() {
    ::pthread_setname_np(::pthread_self(), "wz-psync");
    std::unique_lock lock(mutex_);
    for (;;) {
        ++idle_;
        work_cv_.wait(lock, [this] { return quit_ || !queue_.empty(); });
        --idle_;
        if (queue_.empty()) {
            return;  // quit_, and nothing left that was handed out
        }
        task t = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        t();
        lock.lock();
    }
}

}  // namespace wz::io
