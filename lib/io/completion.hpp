// SPDX-License-Identifier: MIT
// Private to lib: how an io_uring's owner waits for completions (interrupt, poll, adaptive).
// The adaptive policy is a small state machine over four ring operations, so it is unit-tested
// with a scripted ring (completion_test.cpp) and run on the real one by lib/writer.
#pragma once

#include <wzero/wzero.hpp>

#include <optional>

namespace wz::io {

// nullopt when the settings are usable with a ring of `queue_depth` entries: a non-zero
// queue depth and, for the adaptive mode (the only one reading the rest), every value
// non-zero and low_watermark < high_watermark < queue_depth. Else EINVAL naming the values.
[[nodiscard]] status validate(const completion_options& o, unsigned queue_depth);

struct reaper_counters {
    std::uint64_t blocking_waits = 0, busy_looks = 0, idle_sleeps = 0;
    reaper_counters& operator+=(const reaper_counters& o) {
        blocking_waits += o.blocking_waits;
        busy_looks += o.busy_looks;
        idle_sleeps += o.idle_sleeps;
        return *this;
    }
};

// Ops: unsigned drain()       - handle every completion ready now, without a syscall; count
//      int wait()             - block until at least one completion is ready: 0 or -errno
//      unsigned in_flight()   - commands submitted and not yet reaped
//      void sleep(microseconds)
//
// reap() is called when the caller needs completions and something is in flight. It returns
// how many completions it handled (> 0), 0 when nothing is in flight, or -errno from wait().
// interrupt and poll: drain, else one blocking wait (with IOPOLL the kernel polls inside it).
// adaptive: the first wait is blocking; after it returns the reaper stays "awake" across
// calls, looking at the completion queue without waiting in the kernel: it spins while
// in_flight >= high, sleeps `interval` between looks while below; after 3 consecutive empty
// looks with in_flight < low, or max_loops looks, it goes back to blocking waits.
class reaper {
public:
    explicit reaper(const completion_options& o) : o_(o) {}

    template <class Ops>
    int reap(Ops& ops) {
        if (const unsigned n = ops.drain(); n > 0) {
            note_progress();
            return static_cast<int>(n);
        }
        if (ops.in_flight() == 0) {
            return 0;
        }
        if (o_.mode == completion_mode::adaptive && awake_) {
            for (;;) {
                if (++looks_ > o_.max_loops) {
                    awake_ = false;  // long enough awake: back to blocking waits
                    break;
                }
                ++counters_.busy_looks;
                if (const unsigned n = ops.drain(); n > 0) {
                    empty_below_low_ = 0;
                    return static_cast<int>(n);
                }
                const unsigned inflight = ops.in_flight();
                if (inflight == 0) {
                    return 0;
                }
                if (inflight >= o_.high_watermark) {
                    empty_below_low_ = 0;
                    continue;  // heavy load: the next completion is close, do not sleep
                }
                if (inflight < o_.low_watermark) {
                    if (++empty_below_low_ >= empty_looks_to_block) {
                        awake_ = false;  // light load: an interrupt is cheaper than looking
                        break;
                    }
                } else {
                    empty_below_low_ = 0;
                }
                ++counters_.idle_sleeps;
                ops.sleep(o_.interval);
            }
        }
        ++counters_.blocking_waits;
        if (int rc = ops.wait(); rc < 0) {
            return rc;
        }
        if (o_.mode == completion_mode::adaptive) {
            awake_ = true;
            looks_ = 0;
            empty_below_low_ = 0;
        }
        return static_cast<int>(ops.drain());
    }

    [[nodiscard]] const reaper_counters& counters() const { return counters_; }
    [[nodiscard]] bool awake() const { return awake_; }

    static constexpr unsigned empty_looks_to_block = 3;

private:
    void note_progress() {
        if (awake_) {
            empty_below_low_ = 0;
        }
    }

    completion_options o_;
    reaper_counters counters_;
    bool awake_ = false;
    unsigned looks_ = 0;
    unsigned empty_below_low_ = 0;
};

}  // namespace wz::io
