// SPDX-License-Identifier: MIT
// A worker thread that never runs a signal handler: the psync engine's pools (lib/io,
// lib/writer). The application's handlers (the CLI's SIGINT/SIGTERM/SIGHUP) then run on its
// own threads, and a blocking pwrite or fdatasync in a worker is never cut short (EINTR).
#pragma once

#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

namespace wz {

// Starts std::thread(fn) with every signal blocked: a new thread inherits its creator's mask,
// so the mask is blocked around the creation (not even the thread's first instruction can
// take a signal) and the caller's restored, also when std::thread throws std::system_error
// (EAGAIN: RLIMIT_NPROC, a container's pids limit), which propagates.
template <class Fn>
std::thread signal_free_thread(Fn&& fn) {
    sigset_t all{};
    sigset_t old{};
    sigfillset(&all);
    // Cannot fail with a valid `how` and set (EINVAL only); the mask is restored either way.
    (void)::pthread_sigmask(SIG_SETMASK, &all, &old);  // wz: ignored-error (see above)
    struct restore {
        const sigset_t& mask;
        ~restore() { (void)::pthread_sigmask(SIG_SETMASK, &mask, nullptr); }  // wz: ignored-error (as above)
    } guard{old};
    return std::thread(std::forward<Fn>(fn));
}

}  // namespace wz
