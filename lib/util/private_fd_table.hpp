// SPDX-License-Identifier: MIT
#pragma once

// The process's POSIX record locks (fcntl F_SETLK/F_SETLKW) belong to the process and the
// inode, and closing ANY descriptor of a file in the process drops all of them: close(2)
// calls locks_remove_posix() with the process's file table as the owner (fs/file.c
// filp_close; fs/locks.c removes the locks of that owner only). The library reopens the
// caller's file through /proc/thread-self/fd (O_DIRECT data writes, verification reads), probes
// open files by path, and closes those descriptors before it returns: done in the process's
// table, each close would silently unlock a database that locks its file this way (SQLite).
//
// So every public call that opens a file runs on a thread whose descriptor table is its own
// (unshare(CLONE_FILES)): everything the call opens lives only in that table, and its
// closes name that table as the owner, which holds no lock. Those threads are long-lived
// workers whose tables are empty between calls; a call names the caller's descriptors it uses,
// and its worker takes them from the process's table at the same numbers (pidfd_getfd,
// Linux 5.6), so the body's code is the same as in place, and closes them before the caller
// goes on (private_fd_table.cpp says how). Threads the call starts (the psync engine's
// workers) and io_uring's io-wq workers share the worker's table. The calling thread waits,
// and runs the callbacks the call makes (progress, extents) itself: they see the process's
// own table, as before.
//
// Where a worker cannot take the descriptors (pidfd_getfd missing or refused, a calling thread
// with a table of its own, a descriptor that is not open), the call runs on a thread of its
// own with a copy of the whole table: its start, unshare and join cost 0.04-0.2 ms on the
// 2-core test VM, and the copy holds a reference to every open file of the process until the
// call returns (a pipe's write end closed meanwhile by another thread reaches EOF only then).
// Where unshare(CLONE_FILES) is refused (EPERM: a seccomp profile such as Docker's default,
// which allows unshare only with CAP_SYS_ADMIN; ENOSYS), the calls run in place, as before
// this existed, from the first refusal on: they work, and their closes drop the process's
// POSIX locks on the file (libwzero(3)).

#include "util/errors.hpp"
#include "util/unique_fd.hpp"

#include <wzero/wzero.hpp>

#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace wz {

class private_fd_table {
public:
    // True on a thread that runs in a table of its own: calls made from there run in place.
    [[nodiscard]] static bool active() noexcept;

    // For a program that never takes POSIX record locks (the wzero CLI, at its start): every
    // call then runs in place, on the caller's thread and in the process's table, as before
    // this existed; the program keeps its single-threaded signal handling (a run may be
    // stopped with SIGSTOP/SIGCONT around its SIGTERM handler). Not for a library user.
    static void process_takes_no_posix_locks() noexcept;

    // Runs `body` on a thread with its own descriptor table (in place when active());
    // meanwhile the calling thread runs what the body hands to on_caller(). CALLER_FDS are
    // every descriptor of the caller's the body uses (negative numbers, AT_FDCWD among them,
    // are skipped): they are at the same numbers in the body's table, and nothing else of
    // the caller's is, but stderr. Exceptions of `body` reach the caller. Returns 0, or the
    // errno that kept the thread from being started or from unsharing its table (then `body`
    // did not run).
    int run(const std::function<void()>& body, std::span<const int> caller_fds = {});

    // From the body: runs `fn` on the thread that called run() (in place when run() ran the
    // body in place) and returns once it has; an exception of `fn` is thrown here.
    void on_caller(const std::function<void()>& fn);

    struct shared;  // run()'s rendezvous with the body's thread (private_fd_table.cpp)

private:
    shared* s_ = nullptr;
};

// The public call `what` (for the message of a failure to start) run as above, with the
// caller's descriptors CALLER_FDS: `fn` returns a status or a result<T>.
template <class R, class Fn>
R in_private_fd_table(std::string_view what, private_fd_table& table, std::span<const int> caller_fds, Fn&& fn) {
    std::optional<R> out;
    const int err = table.run([&] { out.emplace(fn()); }, caller_fds);
    if (err != 0) {
        return make_error_msg(err, std::string(what) +
                                       ": starting a thread with its own descriptor table (unshare CLONE_FILES, "
                                       "so that the call's closes keep the process's POSIX locks): " +
                                       errno_text(err));
    }
    return std::move(*out);
}

template <class R, class Fn>
R in_private_fd_table(std::string_view what, std::span<const int> caller_fds, Fn&& fn) {
    private_fd_table table;
    return in_private_fd_table<R>(what, table, caller_fds, std::forward<Fn>(fn));
}

// Descriptors that must outlive the call (the durable writer's) are made in the body's table
// and then carried into the caller's table over a socket pair (SCM_RIGHTS): receiving
// installs them there and closes nothing, and a call that fails before carries nothing, so
// its closes stay in the body's table.
class fd_passage {
public:
    // On the caller's thread, before run(), whose caller_fds must hold sender().
    static result<fd_passage> make(std::string_view what);
    [[nodiscard]] int sender() const noexcept { return send_.get(); }
    // From the body: FDS (of the body's table) installed in the caller's table, close-on-exec;
    // their numbers there, in order. The body's own descriptors stay open (its table's).
    result<std::vector<int>> carry(private_fd_table& table, const std::vector<int>& fds, std::string_view what);

private:
    unique_fd send_, receive_;
};

// preallocate_options whose on_progress, if any, runs on the caller's thread.
[[nodiscard]] preallocate_options progress_on_caller(const preallocate_options& options, private_fd_table& table);

}  // namespace wz
