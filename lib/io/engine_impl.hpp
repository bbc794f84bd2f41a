// SPDX-License-Identifier: MIT
// Private to lib/io: the engine interface behind write_zeroes() and nvme_write_zeroes(), its
// two implementations (io_uring, psync), and the bookkeeping both share so that their
// guarantees are the same by construction: bytes_done as a contiguous prefix, the lowest
// failing range in the error, the rate limit, progress and cancel on the caller's thread.
#pragma once

#include "io/engine.hpp"
#include "io/pacing.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <vector>

namespace wz::io {

// One way of issuing the I/O. Arguments reach it checked (write_zeroes/nvme_write_zeroes do
// that once for both), with something to do (length > 0, at least one command).
class engine {
public:
    engine() = default;
    engine(const engine&) = delete;
    engine& operator=(const engine&) = delete;
    virtual ~engine() = default;
    [[nodiscard]] virtual io_engine kind() const noexcept = 0;
    virtual result<io_outcome> write_zeroes(const zero_write_request& req, const progress_fn& progress,
                                            const rate_limit& rate, io_outcome& out) = 0;
    virtual result<io_outcome> nvme_write_zeroes(const nvme_target& t, std::span<const nvme_zero_cmd> cmds,
                                                 unsigned queue_depth, const progress_fn& progress,
                                                 const rate_limit& rate, passthrough_path* used,
                                                 passthrough_choice choice, io_outcome& out) = 0;
};

// Writes through io_uring (WRITE_FIXED / WRITE; uring_cmd, else the ioctl one at a time).
// When the automatic choice picked it and its ring setup is refused for good
// (fall_back_to_psync), the same request runs on psync: nothing was written yet.
class uring_engine final : public engine {
public:
    [[nodiscard]] io_engine kind() const noexcept override { return io_engine::io_uring; }
    result<io_outcome> write_zeroes(const zero_write_request& req, const progress_fn& progress, const rate_limit& rate,
                                    io_outcome& out) override;
    result<io_outcome> nvme_write_zeroes(const nvme_target& t, std::span<const nvme_zero_cmd> cmds,
                                         unsigned queue_depth, const progress_fn& progress, const rate_limit& rate,
                                         passthrough_path* used, passthrough_choice choice,
                                         io_outcome& out) override;
};

// A worker_pool doing pwrite and the NVMe passthrough ioctl, one thread per command in
// flight: queue_depth, capped at detail::psync_zero_depth.
class psync_engine final : public engine {
public:
    [[nodiscard]] io_engine kind() const noexcept override { return io_engine::psync; }
    result<io_outcome> write_zeroes(const zero_write_request& req, const progress_fn& progress, const rate_limit& rate,
                                    io_outcome& out) override;
    result<io_outcome> nvme_write_zeroes(const nvme_target& t, std::span<const nvme_zero_cmd> cmds,
                                         unsigned queue_depth, const progress_fn& progress, const rate_limit& rate,
                                         passthrough_path* used, passthrough_choice choice,
                                         io_outcome& out) override;
};

// The process's engine (wz::current_io_engine()), or the one named.
[[nodiscard]] engine& engine_for(io_engine e);

namespace detail {

// Beyond a few thousand writes in flight nothing is gained for zeroing; the ring and the op
// table would only grow (the kernel's own cap is 32768 entries).
constexpr unsigned max_queue_depth = 4096;

// psync's queue depth for zeroing, whatever is asked: one thread per write or NVMe command in
// flight. Measured (docs/performance.md, "The two I/O engines"): on a loop device over a file
// and on a file over a loop device, 1 MiB O_DIRECT zero writes gain nothing beyond 8
// concurrent pwrites on this class of machine, and NVMe Write Zeroes commands are short. More
// threads would only cost stacks.
constexpr unsigned psync_zero_depth = 8;

struct write_op {
    std::uint64_t chunk = 0;      // index of the chunk this write belongs to
    std::uint64_t offset = 0;     // absolute file offset of what is left of the chunk
    std::uint64_t remaining = 0;  // bytes left (short writes shrink it)
    bool live = false;            // submitted or queued, not yet finished with
};

// The state of one write_zeroes run, whichever engine issues the writes: chunks handed out
// in order, ops (one per write in flight) recycled, the contiguous prefix, the lowest failure.
class zero_tracker {
public:
    zero_tracker(const zero_write_request& req, const progress_fn& progress, const rate_limit& rate)
        : req_(req), progress_(progress), bucket_(rate.bytes_per_second, req.chunk_bytes),
          chunks_((req.length + req.chunk_bytes - 1) / req.chunk_bytes) {}

    // Writes in flight at most: queue depth, capped, and no more than there are chunks.
    [[nodiscard]] unsigned depth(unsigned cap) const {
        return static_cast<unsigned>(std::min<std::uint64_t>({req_.queue_depth, max_queue_depth, chunks_, cap}));
    }
    void init_ops(unsigned depth) {
        ops_.resize(depth);
        for (unsigned i = depth; i-- > 0;) {
            free_ops_.push_back(i);
        }
    }
    // Takes the next chunk when an op is free and the bucket allows it: the op's index, or
    // nullopt (then `*token_wait` says how long the bucket wants, if that was the reason).
    std::optional<unsigned> next(std::optional<nanoseconds>* token_wait) {
        if (stop_ || next_chunk_ >= chunks_ || free_ops_.empty()) {
            return std::nullopt;
        }
        const std::uint64_t len = chunk_length(next_chunk_);
        if ((*token_wait = bucket_.take(len))) {
            return std::nullopt;
        }
        const unsigned index = free_ops_.back();
        free_ops_.pop_back();
        ops_[index] = write_op{next_chunk_, chunk_start(next_chunk_), len, true};
        ++next_chunk_;
        return index;
    }
    [[nodiscard]] const write_op& op(unsigned index) const { return ops_[index]; }
    void issued() { ++commands_; }
    // A write finished with `res` (bytes, or -errno). true: resubmit the op for the rest of a
    // short write; false: the op is finished with (back on the free list).
    bool complete(unsigned index, std::int64_t res) {
        write_op& op = ops_[index];
        if (res <= 0) {
            // A zero-byte write of a non-empty range would be resubmitted forever: call it EIO.
            abandon(op, res == 0 ? EIO : static_cast<int>(-res));
            stop_ = true;
            release(index);
            return false;
        }
        const auto written = static_cast<std::uint64_t>(res);
        newly_done_ += written;
        op.offset += written;
        op.remaining -= written;
        if (op.remaining == 0) {
            complete_above_.insert(op.chunk);
            release(index);
            return false;
        }
        // Stopping: the rest of a short write is given up, unless it lies below the lowest
        // failure so far. Then it goes on, so that the error names the range where the zeroes
        // really stop (completion order differs between engines: a write cut short at
        // RLIMIT_FSIZE may come back after the one beyond it failed with EFBIG).
        if (stop_ && !(failure_ && op.offset < failure_->offset)) {
            abandon(op, 0);
            release(index);
            return false;
        }
        return true;
    }
    // Reports newly completed bytes (possibly none) and stops the run if the caller cancels.
    void report_progress() {
        if (progress_ && !cancelled_ && !progress_(newly_done_)) {
            cancelled_ = true;
            stop_ = true;
        }
        newly_done_ = 0;
    }
    [[nodiscard]] bool has_news() const { return newly_done_ > 0; }
    void stop() { stop_ = true; }
    [[nodiscard]] bool stopping() const { return stop_; }
    [[nodiscard]] bool all_handed_out() const { return next_chunk_ >= chunks_; }
    [[nodiscard]] std::uint64_t commands() const { return commands_; }
    // Fills `out` and returns the run's result; `engine_errno` (non-zero) is the engine itself
    // failing (ring or pool), named `engine_name` in the message.
    result<io_outcome> finish(io_outcome& out, int engine_errno, const char* engine_name);

private:
    [[nodiscard]] std::uint64_t chunk_start(std::uint64_t chunk) const { return req_.offset + chunk * req_.chunk_bytes; }
    [[nodiscard]] std::uint64_t chunk_length(std::uint64_t chunk) const {
        return std::min<std::uint64_t>(req_.chunk_bytes, req_.offset + req_.length - chunk_start(chunk));
    }
    void abandon(const write_op& op, int errnum) {
        if (!lowest_abandoned_ || op.offset < *lowest_abandoned_) {
            lowest_abandoned_ = op.offset;
        }
        if (errnum != 0 && (!failure_ || op.offset < failure_->offset)) {
            failure_ = failure{op.offset, op.remaining, errnum};
        }
    }
    void release(unsigned index) {
        ops_[index].live = false;
        free_ops_.push_back(index);
    }
    [[nodiscard]] std::uint64_t contiguous_done();

    const zero_write_request& req_;
    const progress_fn& progress_;
    token_bucket bucket_;
    const std::uint64_t chunks_;

    std::vector<write_op> ops_;
    std::vector<unsigned> free_ops_;
    std::uint64_t next_chunk_ = 0;
    std::uint64_t commands_ = 0;
    std::uint64_t newly_done_ = 0;  // bytes completed since the last progress call

    // bytes_done bookkeeping. Chunks are issued in order; `low_` is the first chunk not known
    // complete, `complete_above_` those above it that are. A chunk's written part is always a
    // prefix (short writes resubmit the rest), so the exact contiguous count is
    // chunk_start(low_) + the prefix of chunk low_, taken from its in-flight op or from
    // where it was abandoned.
    std::uint64_t low_ = 0;
    std::set<std::uint64_t> complete_above_;
    std::optional<std::uint64_t> lowest_abandoned_;  // absolute offset

    // The lowest failing range wins: it is the one that bounds bytes_done.
    struct failure {
        std::uint64_t offset, length;
        int errnum;
    };
    std::optional<failure> failure_;
    bool stop_ = false;
    bool cancelled_ = false;
};

}  // namespace detail

}  // namespace wz::io
