// SPDX-License-Identifier: MIT
#include "util/private_fd_table.hpp"

#include "util/signal_free_thread.hpp"

#include <dirent.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

namespace wz {

namespace {
thread_local bool private_table = false;

// close_range(2) is Linux 5.9+: before it, every descriptor of the (private) table by
// number, up to the highest one /proc lists.
void close_all_fallback() noexcept {
    int highest = -1;
    if (DIR* d = ::opendir("/proc/thread-self/fd")) {
        const int own = ::dirfd(d);
        while (const dirent* e = ::readdir(d)) {
            const int fd = std::atoi(e->d_name);
            if (e->d_name[0] != '.' && fd != own && fd > highest) {
                highest = fd;
            }
        }
        ::closedir(d);
    }
    for (int fd = 0; fd <= highest; ++fd) {
        (void)::close(fd);  // wz: ignored-error (a private copy being emptied; EBADF for gaps)
    }
}
std::atomic<bool> in_place_always{false};
// unshare(CLONE_FILES) refused once (EPERM: a seccomp profile such as Docker's default, which
// allows unshare only with CAP_SYS_ADMIN; ENOSYS): every call runs in place from then on.
std::atomic<bool> unshare_refused{false};
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

void private_fd_table::process_takes_no_posix_locks() noexcept { in_place_always.store(true); }

int private_fd_table::run(const std::function<void()>& body) {
    if (private_table || in_place_always.load(std::memory_order_relaxed) ||
        unshare_refused.load(std::memory_order_relaxed)) {
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
                // Empty the copy before the caller goes on: the kernel releases a dying
                // thread's table (exit_files) only after pthread_join has returned, and until
                // then it holds a reference to every file the process had open (a caller's
                // close would not be the last: umount busy, a pipe without EOF). These closes
                // name the copy as the owner, so they drop no POSIX lock of the process.
                if (::syscall(SYS_close_range, 0U, ~0U, 0U) != 0) {
                    close_all_fallback();
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
    if (err == EPERM || err == ENOSYS) {
        // Refused (the body did not run): in place, as before the private tables. The calls
        // work; their closes then drop the process's POSIX locks on the file (libwzero(3)).
        unshare_refused.store(true, std::memory_order_relaxed);
        body();
        return 0;
    }
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

result<fd_passage> fd_passage::make(std::string_view what) {
    int sv[2] = {-1, -1};
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        const int err = errno;
        return make_error_msg(err, std::string(what) + ": socketpair (to carry descriptors out of the call's own "
                                                       "descriptor table): " +
                                       errno_text(err));
    }
    fd_passage p;
    p.send_.reset(sv[0]);
    p.receive_.reset(sv[1]);
    return p;
}

result<std::vector<int>> fd_passage::carry(private_fd_table& table, const std::vector<int>& fds,
                                           std::string_view what) {
    if (fds.empty()) {
        return std::vector<int>{};
    }
    constexpr std::size_t max_fds = 8;
    if (fds.size() > max_fds) {
        return make_error_msg(EINVAL, std::string(what) + ": more than 8 descriptors to carry");
    }
    union {
        char buf[CMSG_SPACE(sizeof(int) * max_fds)];
        struct cmsghdr align;
    } control{};
    char byte = 0;
    ::iovec iov{&byte, 1};
    ::msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.buf;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    if (::sendmsg(send_.get(), &msg, MSG_NOSIGNAL) != 1) {
        const int err = errno;
        return make_error_msg(err, std::string(what) + ": sendmsg SCM_RIGHTS: " + errno_text(err));
    }
    std::vector<int> out;
    int err = 0;
    std::string problem;
    table.on_caller([&] {
        union {
            char buf[CMSG_SPACE(sizeof(int) * max_fds)];
            struct cmsghdr align;
        } in{};
        char b = 0;
        ::iovec v{&b, 1};
        ::msghdr m{};
        m.msg_iov = &v;
        m.msg_iovlen = 1;
        m.msg_control = in.buf;
        m.msg_controllen = sizeof in.buf;
        if (::recvmsg(receive_.get(), &m, MSG_CMSG_CLOEXEC) != 1) {
            err = errno;
            problem = "recvmsg: " + errno_text(err);
            return;
        }
        for (cmsghdr* h = CMSG_FIRSTHDR(&m); h != nullptr; h = CMSG_NXTHDR(&m, h)) {
            if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
                const std::size_t n = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                out.resize(n);
                std::memcpy(out.data(), CMSG_DATA(h), n * sizeof(int));
            }
        }
        if ((m.msg_flags & MSG_CTRUNC) != 0 || out.size() != fds.size()) {
            // RLIMIT_NOFILE: the kernel installed what fit (or nothing).
            for (int fd : out) {
                (void)::close(fd);  // wz: ignored-error (nothing to report beyond EMFILE)
            }
            out.clear();
            err = EMFILE;
            problem = "recvmsg SCM_RIGHTS: not every descriptor could be received (RLIMIT_NOFILE?)";
        }
    });
    if (err != 0) {
        return make_error_msg(err, std::string(what) + ": " + problem);
    }
    return out;
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
