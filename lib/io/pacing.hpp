// SPDX-License-Identifier: MIT
// Private to lib: the rate limit's one mechanism, whatever zeroes the bytes. A token bucket is
// charged with the bytes a command zeroes before it is sent, and under a rate every command is
// cut into pieces small enough for the bucket to meter: data writes and NVMe Write Zeroes in
// the engines (io_uring and psync alike), BLKZEROOUT and fallocate(FALLOC_FL_WRITE_ZEROES) in
// the executor (lib/zero), one piece per call.
#pragma once

#include "io/engine.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <thread>

namespace wz::io {

// Pieces are whole multiples of this: a multiple of every logical block and page size Linux
// has, so that a cut never falls inside a block or a page.
inline constexpr std::uint64_t piece_unit_bytes = std::uint64_t{64} << 10;
// About this many pieces a second under a rate: steps no coarser than the 50 ms in which a
// wait looks at the caller's cancel, and the bucket never lets through more than a twentieth
// of a second's worth at once.
inline constexpr std::uint64_t pieces_per_second = 20;
// Above this a piece gains nothing (one call already keeps the device busy for milliseconds)
// and a cancel would wait for it.
inline constexpr std::uint64_t piece_max_bytes = std::uint64_t{64} << 20;

// The most bytes one command zeroes under `bytes_per_second`: rate / 20 rounded down to
// piece_unit_bytes, at least one unit (at a rate that low the per-call cost cannot matter),
// at most piece_max_bytes. 0 without a rate: commands stay as large as each method takes.
[[nodiscard]] std::uint64_t paced_piece_bytes(std::uint64_t bytes_per_second) noexcept;

// The length of the piece of [at, end) that starts at `at`: up to the next multiple of
// `piece` (so that an unaligned range's pieces are aligned after the first one), or to `end`.
// piece 0: all of [at, end).
[[nodiscard]] std::uint64_t piece_length(std::uint64_t at, std::uint64_t end, std::uint64_t piece) noexcept;

// NVMe Write Zeroes pieces, in logical blocks. A command without DEAC may be cut anywhere; one
// with DEAC only at multiples of `deac_unit_lba` from its start (the deallocation granularity
// and alignment's common multiple: every piece then starts aligned and covers whole granules,
// as the command did). piece_bytes 0: 65536, the most one command can carry, so nothing is cut.
struct nvme_piece_blocks {
    std::uint32_t plain = 65536;
    std::uint32_t deac = 65536;
};
[[nodiscard]] nvme_piece_blocks nvme_pieces(std::uint64_t piece_bytes, std::uint32_t lba_bytes,
                                            std::uint32_t deac_unit_lba) noexcept;

namespace detail {

using std::chrono::nanoseconds;
using steady = std::chrono::steady_clock;

// Charged before each submission. Starts empty so that the average from the very start holds
// (a full bucket would let the first piece through free): by any time t after it was made, at
// most rate * t bytes were taken. Holds at most two pieces (`piece_bytes`, grown to the
// largest amount ever asked for at once): a wake-up that comes late (timer slack, a busy
// scheduler: milliseconds in a VM) leaves its lateness as credit for the next piece instead of
// losing it, which with room for one piece only would slow every piece by that much; and an
// idle pause turns into a burst of at most two pieces, a tenth of a second's worth.
class token_bucket {
public:
    token_bucket(std::uint64_t bytes_per_second, std::uint64_t piece_bytes, steady::time_point start = steady::now())
        : rate_(static_cast<double>(bytes_per_second)), capacity_(2.0 * static_cast<double>(piece_bytes)),
          last_(start) {}

    // nullopt when `bytes` were taken; else how long until they will be there (nothing taken).
    std::optional<nanoseconds> take(std::uint64_t bytes) { return take(bytes, steady::now()); }
    std::optional<nanoseconds> take(std::uint64_t bytes, steady::time_point now) {
        if (rate_ <= 0) {
            return std::nullopt;
        }
        const auto need = static_cast<double>(bytes);
        capacity_ = std::max(capacity_, 2 * need);  // else a larger request would wait forever
        const double elapsed_s = std::chrono::duration<double>(now - last_).count();
        last_ = std::max(last_, now);
        tokens_ = std::min(capacity_, tokens_ + std::max(elapsed_s, 0.0) * rate_);
        if (tokens_ >= need) {
            tokens_ -= need;
            return std::nullopt;
        }
        const double wait_ns = std::ceil((need - tokens_) / rate_ * 1e9);
        return nanoseconds(std::max<std::int64_t>(static_cast<std::int64_t>(wait_ns), 1000));
    }
    [[nodiscard]] bool limited() const { return rate_ > 0; }

private:
    double rate_;
    double capacity_;
    double tokens_ = 0;
    steady::time_point last_;
};

// Longest sleep between looks at the caller's cancel while the rate limit holds a command
// back: the wait for one piece can be long (64 KiB at --rate 1 is 18 hours), and a SIGINT
// must end the run at once, not after it.
inline constexpr nanoseconds rate_wait_slice = std::chrono::milliseconds(50);

// The engines' loops (ring or worker_pool) while take() holds a command back for `token_wait`:
// with nothing in flight, sleep_slice sleeps one slice of it, the caller then asking progress;
// with commands in flight, reap_timeout bounds the wait for a completion (none while no longer
// handing out, or when no tokens are awaited: until a completion comes).
inline void sleep_slice(nanoseconds token_wait) { std::this_thread::sleep_for(std::min(token_wait, rate_wait_slice)); }
[[nodiscard]] inline std::optional<nanoseconds> reap_timeout(const std::optional<nanoseconds>& token_wait,
                                                             bool handing_out) {
    if (!handing_out || !token_wait) {
        return std::nullopt;
    }
    return std::min(*token_wait, rate_wait_slice);
}

}  // namespace detail

// The bucket for commands sent one at a time by a caller that has nothing else to wait for
// meanwhile (BLKZEROOUT, fallocate, the NVMe ioctl, the first passthrough command): admit()
// sleeps until the bytes may go, in slices of at most detail::rate_wait_slice, and asks
// progress(0) after each slice, so that a cancel ends the wait at once. The engines' loops,
// which wait for completions meanwhile, call take() and sleep in their own wait.
class pacer {
public:
    pacer(const rate_limit& rate, std::uint64_t largest_piece_bytes)
        : bucket_(rate.bytes_per_second, largest_piece_bytes) {}
    // true once `bytes` were taken (at once without a rate); false when progress said stop
    // (nothing taken then).
    [[nodiscard]] bool admit(std::uint64_t bytes, const progress_fn& progress);
    [[nodiscard]] std::optional<detail::nanoseconds> take(std::uint64_t bytes) { return bucket_.take(bytes); }
    [[nodiscard]] bool limited() const { return bucket_.limited(); }

private:
    detail::token_bucket bucket_;
};

}  // namespace wz::io
