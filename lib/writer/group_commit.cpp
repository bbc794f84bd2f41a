// SPDX-License-Identifier: MIT
#include "writer/group_commit.hpp"

namespace wz::writer_detail {

status shared_flush::commit(const flush_fn& flush) {
    std::unique_lock lk(mutex_);
    const std::uint64_t mine = ++completed_;
    while (settled_ < mine) {
        if (!flushing_) {
            flushing_ = true;
            const std::uint64_t target = completed_;  // all of these completed before the flush
            lk.unlock();
            auto e = flush();
            lk.lock();
            flushing_ = false;
            // One flush at a time: nothing settled the range while this one ran.
            if (!e.ok()) {
                failed_.push_back(failed_range{settled_, target, std::move(e).error(), target - settled_});
            }
            settled_ = target;
            cv_.notify_all();
        } else {
            cv_.wait(lk);
        }
    }
    // Settled: failed if a failed flush covered it, whatever flushes came after.
    for (auto it = failed_.begin(); it != failed_.end(); ++it) {
        if (it->first < mine && mine <= it->last) {
            error_info e = it->error;
            if (--it->untaken == 0) {
                failed_.erase(it);
            }
            return e;
        }
    }
    return {};
}

std::size_t shared_flush::failed_ranges_held() {
    std::lock_guard lk(mutex_);
    return failed_.size();
}

void flush_batcher::write_completed(std::uint32_t id, clock::duration took, clock::time_point now) {
    const double took_us = std::chrono::duration<double, std::micro>(took).count();
    write_mean_us_ = write_mean_us_ == 0 ? took_us : 0.875 * write_mean_us_ + 0.125 * took_us;
    if (waiting_.empty()) {
        waiting_since_ = now;
    }
    waiting_.push_back(id);
}

bool flush_batcher::flush_due(clock::time_point now, std::size_t unsettled) const {
    if (in_flight_ || waiting_.empty()) {
        return false;
    }
    const bool others_on_device = unsettled > waiting_.size() + covered_.size();
    const double waited_us = std::chrono::duration<double, std::micro>(now - waiting_since_).count();
    // Otherwise looked at again at the next completion.
    return !others_on_device || waited_us >= write_mean_us_;
}

const std::vector<std::uint32_t>& flush_batcher::start_flush() {
    covered_.swap(waiting_);
    waiting_.clear();
    in_flight_ = true;
    return covered_;
}

void flush_batcher::unstart_flush() {
    // Nothing completed in between (one thread): waiting_ is empty, and its start time stays.
    waiting_.swap(covered_);
    in_flight_ = false;
}

const std::vector<std::uint32_t>& flush_batcher::flush_completed() {
    in_flight_ = false;
    // The three lists trade buffers and keep their capacity (reserve()).
    done_.clear();
    done_.swap(covered_);
    return done_;
}

void flush_batcher::reserve(std::size_t n) {
    for (auto* v : {&waiting_, &covered_, &done_}) {
        if (v->capacity() < n) {
            v->reserve(2 * n);
        }
    }
}

}  // namespace wz::writer_detail
