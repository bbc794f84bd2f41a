// SPDX-License-Identifier: MIT
#include "writer/psync_pool.hpp"

#include "util/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <new>

namespace wz::writer_detail {

psync_pool::psync_pool(unsigned threads, write_fn write, flush_fn flush, std::string what)
    : write_(std::move(write)), flush_(std::move(flush)), what_(std::move(what)), pool_(threads, what_) {}

psync_pool::~psync_pool() {
    // The jobs no worker has started are dropped: never written, never acknowledged (close()
    // waits for them first); a running write (or flush) finishes: its buffer is in use until
    // then.
    pool_.stop();
}

status psync_pool::submit(const job& j) {
    std::unique_lock lock(mutex_);
    // Room for every job in flight to finish without allocating on a worker (finish(), the
    // group commit's lists): a failure here is the caller's bad_alloc, which it can report.
    const std::size_t jobs = in_flight_ + 1;
    if (ready_.capacity() < ready_.size() + jobs) {
        ready_.reserve(2 * (ready_.size() + jobs));
    }
    if (free_slots_.capacity() < slots_.size() + 1) {
        free_slots_.reserve(2 * (slots_.size() + 1));
    }
    group_.reserve(jobs);
    std::uint32_t slot = 0;
    if (free_slots_.empty()) {
        slot = static_cast<std::uint32_t>(slots_.size());
        slots_.push_back(j);
    } else {
        slot = free_slots_.back();
        free_slots_.pop_back();
        slots_[slot] = j;
    }
    ++in_flight_;
    lock.unlock();
    if (auto s = pool_.post([this, slot] { run(slot); }); !s.ok()) {
        lock.lock();
        free_slots_.push_back(slot);
        --in_flight_;
        return make_error_range("psync: create a worker thread for write", what_, j.offset, j.len,
                                s.code().value());
    }
    return {};
}

// Runs on the workers, where an allocation failing could not be reported (an exception
// leaving a thread ends the process): ready_ and free_slots_ have room reserved by submit(),
// and the error's text is moved, not copied.
void psync_pool::finish(std::uint32_t slot, status st) {
    const job& j = slots_[slot];
    finished f;
    f.user_data = j.user_data;
    f.len = j.len;
    f.alone = j.alone;
    if (!st.ok()) {
        f.error = std::move(st).error();
    }
    f.latency_us = std::chrono::duration<double, std::micro>(clock::now() - j.t0).count();
    ready_.push_back(std::move(f));
    free_slots_.push_back(slot);
}

namespace {

// A write or flush function that throws would end the process (an exception leaving a
// thread calls std::terminate): under RLIMIT_AS (`ulimit -v`) the writer's own small
// allocations can fail on these threads. It becomes that job's error instead, which the
// caller gets from complete() like any other.
template <class F>
status without_exceptions(F&& f, const char* what, std::uint64_t offset, std::size_t len) noexcept {
    try {
        return f();
    } catch (const std::bad_alloc&) {
        // This thread's malloc arena may be the one that cannot grow: the message with its
        // range may not be possible either, and then a short one (std::string's in-place
        // buffer, no allocation) is.
        try {
            return error_info{std::error_code(ENOMEM, std::generic_category()),
                              fmt::format("{} [offset {}, length {}]: out of memory", what, offset, len)};
        } catch (const std::bad_alloc&) {
            return error_info{std::error_code(ENOMEM, std::generic_category()), "out of memory"};
        }
    } catch (const std::exception& e) {
        return error_info{std::error_code(EIO, std::generic_category()),
                          fmt::format("{} [offset {}, length {}]: {}", what, offset, len, e.what())};
    }
}

}  // namespace

void psync_pool::run(std::uint32_t slot) {
    std::unique_lock lock(mutex_);
    const job j = slots_[slot];
    lock.unlock();
    status st = without_exceptions([&] { return write_(j); }, "write (psync)", j.offset, j.len);
    lock.lock();
    auto now = clock::now();
    if (!st.ok() || !flush_ || j.alone) {
        finish(slot, std::move(st));
        done_cv_.notify_all();
    } else {
        group_.write_completed(slot, now - j.t0, now);
    }
    if (!flush_) {
        return;
    }
    // This worker runs the flushes that are due now (a failed write may make one due: it
    // was the other write on the device); writes completed while one runs wait for the
    // next, which it starts when that one is back and nothing else is running.
    while (group_.flush_due(now, in_flight_ - ready_.size())) {
        group_.start_flush();
        lock.unlock();
        const status flushed = without_exceptions([&] { return flush_(); }, "flush (psync)", 0, 0);
        lock.lock();
        for (const std::uint32_t id : group_.flush_completed()) {
            if (flushed.ok()) {
                finish(id, flushed);
            } else {
                // Its error goes to every write it covered, each naming its own range.
                error_info err = flushed.error();
                err.message += fmt::format(" (write [offset {}, length {}] not durable)", slots_[id].offset,
                                           slots_[id].len);
                finish(id, err);
            }
        }
        done_cv_.notify_all();
        now = clock::now();
    }
}

std::size_t psync_pool::complete(std::vector<finished>& out, std::size_t min_complete) {
    std::unique_lock lock(mutex_);
    min_complete = std::min(min_complete, in_flight_);
    while (ready_.size() < min_complete) {
        ++blocking_waits_;
        done_cv_.wait(lock);
    }
    const std::size_t n = ready_.size();
    for (auto& f : ready_) {
        out.push_back(std::move(f));
    }
    ready_.clear();
    in_flight_ -= n;
    return n;
}

std::size_t psync_pool::in_flight() const {
    std::lock_guard lock(mutex_);
    return in_flight_;
}

std::uint64_t psync_pool::blocking_waits() const {
    std::lock_guard lock(mutex_);
    return blocking_waits_;
}

std::size_t psync_pool::threads() const { return pool_.threads(); }

}  // namespace wz::writer_detail
