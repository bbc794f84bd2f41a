// SPDX-License-Identifier: MIT
// A signal that would end the process during a long run (alloc, bench write): stop, not die.

#include "cli.hpp"

#include <csignal>
#include <cstring>  // sigabbrev_np (glibc 2.32)

#include <fmt/format.h>

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

// The signals catch_stop_signals() catches.
sigset_t stop_signal_set() {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM, SIGVTALRM, SIGPROF, SIGIO,
                    SIGPWR, SIGSTKFLT, SIGXCPU}) {
        sigaddset(&set, sig);
    }
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; ++sig) {
        sigaddset(&set, sig);
    }
    return set;
}

}  // namespace

const std::atomic<bool>& catch_stop_signals() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    // The handler stays installed (no SA_RESETHAND): a second signal while in-flight I/O is
    // reaped is the same request again, not a kill halfway through the reap. SIGKILL still
    // kills; what the kernel had taken then completes or is cancelled without us, and a file
    // the run was creating has no name yet (zero/on_path.hpp). Caught: every signal whose
    // default action ends the process and that comes from outside it (kill(1), a terminal, a
    // timer, a closed pipe), the real-time ones included. Not the ones a fault raises (SIGSEGV,
    // SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT): returning from those would run the
    // faulting code again. SIGXFSZ is ignored instead (main.cpp).
    const sigset_t set = stop_signal_set();
    for (int sig = 1; sig <= SIGRTMAX; ++sig) {
        if (sigismember(&set, sig) == 1) {
            (void)sigaction(sig, &sa, nullptr);  // wz: ignored-error (cannot fail for these; the default would kill)
        }
    }
    return stop_requested;
}

void hold_stop_signals() {
    const sigset_t set = stop_signal_set();
    (void)pthread_sigmask(SIG_BLOCK, &set, nullptr);  // wz: ignored-error (fails only for a bad HOW)
}

int stop_signal() { return first_signal.load(); }

std::string signal_name(int sig) {
    if (sig >= SIGRTMIN && sig <= SIGRTMAX) {
        return sig == SIGRTMIN ? "SIGRTMIN" : fmt::format("SIGRTMIN+{}", sig - SIGRTMIN);
    }
    if (const char* abbrev = sigabbrev_np(sig)) {
        return std::string("SIG") + abbrev;
    }
    return "signal " + std::to_string(sig);
}

}  // namespace wzcli
