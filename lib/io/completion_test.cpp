// SPDX-License-Identifier: MIT
// The completion reaper's policies against a scripted ring: what it does (drain, blocking
// wait, sleep) for a given sequence of ring states, and the settings' validation.
#include "io/completion.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <string>

namespace {

// A ring whose completions arrive as scripted: each look at the CQ (drain) pops the next
// count of completions (0 when the script is empty); wait() always finds one.
struct scripted_ring {
    std::deque<unsigned> arrivals;
    unsigned inflight = 0;
    std::string log;  // d = drain with completions, e = empty drain, W = wait, s = sleep

    unsigned drain() {
        unsigned n = 0;
        if (!arrivals.empty()) {
            n = std::min(arrivals.front(), inflight);
            arrivals.pop_front();
        }
        inflight -= n;
        log += n > 0 ? 'd' : 'e';
        return n;
    }
    int wait() {
        log += 'W';
        arrivals.push_front(1);  // the wait returns with one completion ready
        return 0;
    }
    unsigned in_flight() const { return inflight; }
    void sleep(std::chrono::microseconds) { log += 's'; }
};

wz::completion_options adaptive() {
    wz::completion_options o;
    o.mode = wz::completion_mode::adaptive;
    return o;  // high 32, low 3, 30 us, 1000 loops
}

TEST(Reaper, InterruptBlocksWhenNothingIsReady) {
    wz::io::reaper r(wz::completion_options{});
    scripted_ring ring;
    ring.inflight = 5;
    EXPECT_EQ(r.reap(ring), 1);
    EXPECT_EQ(ring.log, "eWd");
    EXPECT_EQ(r.counters().blocking_waits, 1U);
    ring.log.clear();
    EXPECT_EQ(r.reap(ring), 1);  // still blocking: interrupt never stays awake
    EXPECT_EQ(ring.log, "eWd");
}

TEST(Reaper, NothingInFlightReturnsZeroWithoutWaiting) {
    for (auto mode : {wz::completion_mode::interrupt, wz::completion_mode::poll, wz::completion_mode::adaptive}) {
        wz::completion_options o;
        o.mode = mode;
        wz::io::reaper r(o);
        scripted_ring ring;
        EXPECT_EQ(r.reap(ring), 0);
        EXPECT_EQ(r.counters().blocking_waits, 0U);
    }
}

TEST(Reaper, AdaptiveSpinsAboveTheHighWatermark) {
    wz::io::reaper r(adaptive());
    scripted_ring ring;
    ring.inflight = 40;
    EXPECT_EQ(r.reap(ring), 1);  // the first wait is a blocking one
    EXPECT_TRUE(r.awake());
    ring.log.clear();
    ring.arrivals = {0, 0, 0, 0, 2};  // a look before the loop, three empty ones in it, then two
    EXPECT_EQ(r.reap(ring), 2);
    // 39 in flight (>= 32): empty looks follow each other without a sleep.
    EXPECT_EQ(ring.log, "eeeed");
    EXPECT_EQ(r.counters().busy_looks, 4U);
    EXPECT_EQ(r.counters().idle_sleeps, 0U);
    EXPECT_EQ(r.counters().blocking_waits, 1U);
}

TEST(Reaper, AdaptiveSleepsBetweenTheWatermarks) {
    wz::io::reaper r(adaptive());
    scripted_ring ring;
    ring.inflight = 11;
    ASSERT_EQ(r.reap(ring), 1);
    ring.log.clear();
    ring.arrivals = {0, 0, 0, 0, 0, 1};  // 10 in flight: between low 3 and high 32
    EXPECT_EQ(r.reap(ring), 1);
    EXPECT_EQ(ring.log, "eesesesesd");  // a sleep after each empty look in the loop
    EXPECT_EQ(r.counters().idle_sleeps, 4U);
    EXPECT_EQ(r.counters().blocking_waits, 1U);
    EXPECT_TRUE(r.awake());  // 5 empty looks, but never below the low watermark
}

TEST(Reaper, AdaptiveGoesBackToBlockingAfterThreeEmptyLooksBelowLow) {
    wz::io::reaper r(adaptive());
    scripted_ring ring;
    ring.inflight = 3;
    ASSERT_EQ(r.reap(ring), 1);  // now 2 in flight, below the low watermark of 3
    ring.log.clear();
    EXPECT_EQ(r.reap(ring), 1);
    // e (first look), then in the loop: e s e s e (third empty look below low) -> W d.
    EXPECT_EQ(ring.log, "eeseseWd");
    EXPECT_EQ(r.counters().idle_sleeps, 2U);
    EXPECT_EQ(r.counters().blocking_waits, 2U);
}

TEST(Reaper, AdaptiveMaxLoopsEndsTheAwakePhase) {
    auto o = adaptive();
    o.max_loops = 5;
    wz::io::reaper r(o);
    scripted_ring ring;
    ring.inflight = 100;
    ASSERT_EQ(r.reap(ring), 1);
    ring.log.clear();
    EXPECT_EQ(r.reap(ring), 1);  // 99 in flight: spins, but only max_loops looks
    EXPECT_EQ(ring.log, "eeeeeeWd");
    EXPECT_EQ(r.counters().busy_looks, 5U);
    EXPECT_EQ(r.counters().blocking_waits, 2U);
}

TEST(Reaper, WaitErrorsComeBack) {
    struct failing : scripted_ring {
        int wait() { return -EINTR; }
    } ring;
    ring.inflight = 1;
    wz::io::reaper r(wz::completion_options{});
    EXPECT_EQ(r.reap(ring), -EINTR);
}

TEST(CompletionOptions, Validation) {
    EXPECT_TRUE(wz::io::validate(wz::completion_options{}, 128).ok());
    EXPECT_TRUE(wz::io::validate(adaptive(), 128).ok());
    EXPECT_FALSE(wz::io::validate(wz::completion_options{}, 0).ok());
    // Interrupt and poll do not read the watermarks.
    wz::completion_options unused;
    unused.high_watermark = 0;
    EXPECT_TRUE(wz::io::validate(unused, 8).ok());

    struct bad_case {
        unsigned high, low, interval_us, loops, depth;
        const char* why;
    };
    for (const bad_case& c : {bad_case{32, 3, 30, 1000, 32, "below the queue depth"},
                              bad_case{32, 3, 30, 1000, 16, "below the queue depth"},
                              bad_case{8, 8, 30, 1000, 128, "below the high watermark"},
                              bad_case{4, 9, 30, 1000, 128, "below the high watermark"},
                              bad_case{0, 3, 30, 1000, 128, "non-zero"},
                              bad_case{32, 0, 30, 1000, 128, "non-zero"},
                              bad_case{32, 3, 0, 1000, 128, "non-zero"},
                              bad_case{32, 3, 30, 0, 128, "non-zero"}}) {
        auto o = adaptive();
        o.high_watermark = c.high;
        o.low_watermark = c.low;
        o.interval = std::chrono::microseconds(c.interval_us);
        o.max_loops = c.loops;
        auto e = wz::io::validate(o, c.depth);
        ASSERT_FALSE(e.ok()) << c.high << " " << c.low << " " << c.depth;
        EXPECT_EQ(e.code().value(), EINVAL);
        EXPECT_NE(e.error().message.find(c.why), std::string::npos) << e.error().message;
    }
}

}  // namespace
