// SPDX-License-Identifier: MIT
#include "util/private_fd_table.hpp"

#include "util/signal_free_thread.hpp"

#include <sched.h>

#include <cerrno>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

namespace wz {

namespace {
thread_local bool private_table = false;
}  // namespace

struct private_fd_table::shared {
    std::mutex mutex;
    std::condition_variable cv;
    bool finished = false;
    const std::function<void()>* pending = nullptr;  // handed to the caller by on_caller()
    bool pending_done = false;
    std::exception_ptr pending_error;
};

bool private_fd_table::active() noexcept { return private_table; }

int private_fd_table::run(const std::function<void()>& body) {
    if (private_table) {
        body();
        return 0;
    }
    shared s;
    int err = 0;
    std::exception_ptr body_error;
    s_ = &s;
    std::thread t;
    try {
        t = signal_free_thread([&] {
            // CLONE_FILES needs no privilege and is allowed in a multi-threaded process (unlike
            // CLONE_NEWNS or CLONE_VM): the thread alone gets the copy.
            if (::unshare(CLONE_FILES) != 0) {
                err = errno;
            } else {
                private_table = true;
                try {
                    body();
                } catch (...) {
                    body_error = std::current_exception();
                }
            }
            std::lock_guard lock(s.mutex);
            s.finished = true;
            s.cv.notify_all();
        });
    } catch (const std::system_error& e) {
        s_ = nullptr;
        return e.code().value() != 0 ? e.code().value() : EAGAIN;
    }
    std::unique_lock lock(s.mutex);
    for (;;) {
        s.cv.wait(lock, [&] { return s.finished || (s.pending != nullptr && !s.pending_done); });
        if (s.pending != nullptr && !s.pending_done) {
            const std::function<void()>* fn = s.pending;
            lock.unlock();
            std::exception_ptr fn_error;
            try {
                (*fn)();
            } catch (...) {
                fn_error = std::current_exception();
            }
            lock.lock();
            s.pending_error = fn_error;
            s.pending_done = true;
            s.cv.notify_all();
            continue;
        }
        break;  // finished, nothing pending
    }
    lock.unlock();
    t.join();
    s_ = nullptr;
    if (body_error) {
        std::rethrow_exception(body_error);
    }
    return err;
}

void private_fd_table::on_caller(const std::function<void()>& fn) {
    if (s_ == nullptr) {
        fn();  // run() ran the body in place: this is the caller's thread
        return;
    }
    shared& s = *s_;
    std::unique_lock lock(s.mutex);
    s.cv.wait(lock, [&] { return s.pending == nullptr; });  // one at a time
    s.pending = &fn;
    s.pending_done = false;
    s.pending_error = nullptr;
    s.cv.notify_all();
    s.cv.wait(lock, [&] { return s.pending_done; });
    s.pending = nullptr;
    std::exception_ptr fn_error = std::exchange(s.pending_error, nullptr);
    s.cv.notify_all();
    lock.unlock();
    if (fn_error) {
        std::rethrow_exception(fn_error);
    }
}

preallocate_options progress_on_caller(const preallocate_options& options, private_fd_table& table) {
    preallocate_options o = options;
    if (options.on_progress) {
        o.on_progress = [&table, fn = options.on_progress](const progress_info& info) {
            table.on_caller([&] { fn(info); });
        };
    }
    return o;
}

}  // namespace wz
