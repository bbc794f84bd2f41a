#include "writer/group_commit.hpp"

#include <algorithm>

namespace wz::writer_detail {

std::optional<error_info> shared_flush::commit(const flush_fn& flush) {
    std::unique_lock lk(mutex_);
    const std::uint64_t mine = ++completed_;
    while (durable_ < mine) {
        if (!flushing_) {
            flushing_ = true;
            const std::uint64_t target = completed_;  // all of these completed before the flush
            lk.unlock();
            auto e = flush();
            lk.lock();
            flushing_ = false;
            if (!e) {
                durable_ = std::max(durable_, target);
            }
            cv_.notify_all();
            if (e) {
                return e;
            }
        } else {
            cv_.wait(lk);
        }
    }
    return std::nullopt;
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

std::vector<std::uint32_t> flush_batcher::flush_completed() {
    in_flight_ = false;
    std::vector<std::uint32_t> done;
    done.swap(covered_);
    return done;
}

}  // namespace wz::writer_detail
