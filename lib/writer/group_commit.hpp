// SPDX-License-Identifier: MIT
// Private to lib/writer: group commit, the policy that decides when a flush starts and which
// completed writes a finished flush makes durable. A flush makes durable exactly the writes
// that had completed when it started; a write completed later waits for the next one.
// Both classes run no I/O themselves: the flush is the caller's (a function for shared_flush,
// a submitted command for flush_batcher), so the policy is tested without a device
// (group_commit_test.cpp).
#pragma once

#include <wzero/wzero.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

namespace wz::writer_detail {

// The synchronous path: threads whose writes completed share flushes. One flush runs at a time;
// a thread whose write is not yet covered either starts the next flush (covering every write
// completed so far, its own and those of the threads waiting) or waits for the running one
// and looks again.
//
// A failed flush fails every write it covered, and for good: a later flush that succeeds says
// nothing about them. Linux reports a writeback error once per open file description (errseq_t,
// since 4.13), so on a shared descriptor a second fdatasync after a failed one very probably
// succeeds although the data of the first never reached the media (PostgreSQL's "fsyncgate",
// 2018). The failed range keeps its error until each of its waiters has taken it.
class shared_flush {
public:
    using flush_fn = std::function<status()>;

    // Called once a write has completed: returns when a flush started after that completion
    // succeeded (ok), or with the error of the first flush that covered it and failed,
    // whichever thread ran that flush. A write completed while a flush ran is not covered by
    // it: the next flush decides for it.
    status commit(const flush_fn& flush);

    // Failed ranges whose waiters have not all taken their error yet (for tests: 0 once every
    // commit has returned).
    [[nodiscard]] std::size_t failed_ranges_held();

private:
    // Writes (first, last] were covered by a flush that failed with `error`.
    struct failed_range {
        std::uint64_t first = 0;  // exclusive
        std::uint64_t last = 0;
        error_info error;
        std::uint64_t untaken = 0;  // waiters in the range that have not returned yet
    };

    std::mutex mutex_;
    std::condition_variable cv_;
    std::uint64_t completed_ = 0;  // writes completed so far (sequence numbers)
    std::uint64_t settled_ = 0;    // every write with sequence <= settled_ is durable or failed
    bool flushing_ = false;
    std::vector<failed_range> failed_;  // at most one per waiting thread; usually empty
};

// The asynchronous path, fed with events (not thread-safe: on io_uring from the one thread
// calling submit/complete, on psync from the pool's workers under the pool's mutex):
// write_completed, then flush_due at each look at the completion queue; start_flush when it
// says so and flush_completed when the flush comes back. Writes are named by the caller's
// ids (the writer's slots).
//
// A flush starts once no other write is on the device, or once the oldest waiting write has
// waited as long as a write takes (a running mean from submit to completion). Writes
// submitted together complete together: one flush then covers all of them (at queue depth q,
// 1/q flush per write), where starting at the first completion split every cohort in two
// (2/q: one flush per two writes at QD 4). A write waits for its cohort at most about one
// write time, far less than the flush it saves; with nothing else in flight it does not wait.
class flush_batcher {
public:
    using clock = std::chrono::steady_clock;

    // Write `id` completed at `now`, `took` after its submission: it waits for a flush.
    void write_completed(std::uint32_t id, clock::duration took, clock::time_point now);

    // Whether a flush should start now, `unsettled` being the writes submitted and neither
    // durable nor failed yet (those waiting here and those a flush in flight covers included).
    [[nodiscard]] bool flush_due(clock::time_point now, std::size_t unsettled) const;

    // The flush starts: it covers every write waiting now. Returns them.
    const std::vector<std::uint32_t>& start_flush();
    // The flush could not be queued after all: its writes wait again, for the next look.
    void unstart_flush();
    // The flush came back: returns the writes it covered (durable, or failed with its error),
    // which are no longer held here. Valid until the next call.
    const std::vector<std::uint32_t>& flush_completed();
    // Room for N writes in every list, so that completions and flushes never allocate (the
    // psync pool's workers cannot report a failed allocation).
    void reserve(std::size_t n);

    [[nodiscard]] bool flush_in_flight() const noexcept { return in_flight_; }
    [[nodiscard]] std::size_t waiting() const noexcept { return waiting_.size(); }
    [[nodiscard]] std::size_t covered() const noexcept { return covered_.size(); }
    [[nodiscard]] double mean_write_us() const noexcept { return write_mean_us_; }

private:
    std::vector<std::uint32_t> waiting_;  // completed, waiting for a flush
    std::vector<std::uint32_t> covered_;  // made durable by the flush in flight
    std::vector<std::uint32_t> done_;     // what the last flush_completed() returned
    bool in_flight_ = false;
    clock::time_point waiting_since_;  // when the oldest of waiting_ completed
    double write_mean_us_ = 0;
};

// Flush mode on a regular file: a write with nothing to group with goes alone, as RWF_DSYNC:
// the filesystem's own write and flush, the device commands O_DSYNC sends, in the write's one
// call (on a raw block device every write on io_uring goes so: rwf_dsync_use). As a write and
// then a flush of its own it cost a round trip more for the same device work (on io_uring an
// fsync the kernel hands to a worker thread): at QD 1 on ext4 and xfs over
// a direct-I/O loop device, 2 io_uring_enter calls more per write, 2-3x the CPU per write and
// fewer writes per second than O_DSYNC (docs/performance.md, QD 1). A write is alone when no
// other write of the writer is in flight (submitted, not yet durable) as it starts and none was
// beside the previous one either: a queue depth of 1 that lasts. The first write of a burst
// submitted together so still joins the burst's group commit (the write before it, the last of
// the previous burst, had company); only a writer's very first burst sends one flush more.
// Not thread-safe: each user keeps it under its own lock or on its one thread.
class lone_writes {
public:
    // A write starts with `others_in_flight` writes of the writer not yet durable: whether it
    // goes alone.
    [[nodiscard]] bool starts(std::size_t others_in_flight) noexcept {
        const bool alone = others_in_flight == 0 && previous_alone_;
        previous_alone_ = others_in_flight == 0;
        return alone;
    }

private:
    bool previous_alone_ = true;  // a new writer has had no company yet
};

}  // namespace wz::writer_detail
