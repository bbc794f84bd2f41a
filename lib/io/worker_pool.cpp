// SPDX-License-Identifier: MIT
#include "io/worker_pool.hpp"

#include "util/errors.hpp"
#include "util/signal_free_thread.hpp"

#include <fmt/format.h>

#include <system_error>

namespace wz::io::detail {

status worker_pool::start(unsigned threads, std::string_view what) {
    int create_errno = 0;
    // Room first: a push_back that failed with the new thread running would terminate.
    threads_.reserve(threads);
    for (unsigned i = 0; i < threads; ++i) {
        try {
            threads_.push_back(signal_free_thread([this] { work(); }));
        } catch (const std::system_error& e) {
            create_errno = e.code().value();
            break;
        }
    }
    if (threads_.empty()) {
        return make_error_msg(create_errno != 0 ? create_errno : EAGAIN,
                              fmt::format("{}: psync engine: no worker thread could be started: {}", what,
                                          errno_text(create_errno != 0 ? create_errno : EAGAIN)));
    }
    return {};
}

void worker_pool::submit(std::uint64_t tag, job j) {
    {
        std::lock_guard lock(mutex_);
        queue_.emplace_back(tag, std::move(j));
    }
    work_cv_.notify_one();
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

void worker_pool::work() {
    std::unique_lock lock(mutex_);
    for (;;) {
        work_cv_.wait(lock, [this] { return quit_ || !queue_.empty(); });
        if (queue_.empty()) {
            return;  // quit_, and nothing left that was handed out
        }
        auto [tag, j] = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        const std::int64_t result = j();
        lock.lock();
        done_.push_back(completion{tag, result});
        done_cv_.notify_one();
    }
}

}  // namespace wz::io::detail
