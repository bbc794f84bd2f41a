// SPDX-License-Identifier: MIT
// SIGINT, SIGTERM and SIGHUP during a long run (alloc, bench write): stop, not die.

#include "cli.hpp"

#include <csignal>

namespace wzcli {

namespace {

// Lock-free atomics: the only state a handler may touch (async-signal-safe).
std::atomic<bool> stop_requested{false};
std::atomic<int> first_signal{0};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

extern "C" void on_stop_signal(int sig) {
    int none = 0;
    (void)first_signal.compare_exchange_strong(none, sig);  // wz: ignored-error (a later signal only repeats the request)
    stop_requested.store(true);
}

}  // namespace

const std::atomic<bool>& catch_stop_signals() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    // The handler stays installed (no SA_RESETHAND): a second signal while in-flight I/O is
    // reaped is the same request again, not a kill halfway through the reap. SIGKILL still
    // kills; what the kernel had taken then completes or is cancelled without us.
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
        (void)sigaction(sig, &sa, nullptr);  // wz: ignored-error (cannot fail for these; the default would kill)
    }
    return stop_requested;
}

int stop_signal() { return first_signal.load(); }

std::string signal_name(int sig) {
    switch (sig) {
    case SIGINT:
        return "SIGINT";
    case SIGTERM:
        return "SIGTERM";
    case SIGHUP:
        return "SIGHUP";
    default:
        return "signal " + std::to_string(sig);
    }
}

}  // namespace wzcli
