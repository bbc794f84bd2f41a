// SPDX-License-Identifier: MIT
#include "util/private_fd_table.hpp"

#include "util/signal_free_thread.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <span>
#include <utility>
#include <vector>

namespace wz {

namespace {
thread_local bool private_table = false;

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

namespace {

// ---- The workers ----------------------------------------------------------------------------
// A thread per call costs its start, the table copy and the join (wz::stat: 7 us in place, 73
// us through a thread of its own, on the 2-core test machine under load). A worker instead
// unshares its table once, empties it, and stays: between calls it holds nothing of the
// process's but /dev/null (at 0, 1 and 2, so that no file a call opens ever gets a stdio
// number) and a pidfd of the process. A call hands it the caller's descriptor numbers; the
// worker takes each one from the process's table with pidfd_getfd(2) at the same number (the
// body's code is the same either way), runs the body, closes everything the call left (those
// closes name the worker's table as the owner: no POSIX lock of the process goes), and is
// idle again. The caller's stderr is taken too (a sanitizer's report, a library's message),
// and given back to /dev/null after. Where pidfd_getfd is missing (before Linux 5.6) or
// refused (seccomp), where the calling thread's table is not the process's (kcmp), or where a
// descriptor cannot be taken (not open, RLIMIT_NOFILE), the call runs on a thread of its own
// as before. A process that forks starts over in the child; the library is linked
// -z nodelete, so a parked worker never outlives the code it waits in.

struct pool_job {
    const std::function<void()>* body = nullptr;
    std::vector<int> fds;  // the caller's numbers, ascending, stderr included
    private_fd_table::shared* s = nullptr;
    bool declined = false;  // not run: the caller runs it on a thread of its own
    std::exception_ptr error;
};

struct pool_state;

struct worker {
    pool_state* owner = nullptr;
    std::mutex m;
    std::condition_variable cv;
    std::atomic<pool_job*> job{nullptr};
    int pidfd = -1;
    int nullfd = -1;  // /dev/null, the placeholder for 0, 1 and 2
};

constexpr std::size_t max_idle_workers = 4;

struct pool_state {
    pid_t pid = ::getpid();
    std::mutex m;
    std::vector<worker*> idle;
    bool broken = false;  // pidfd_open/pidfd_getfd/kcmp refused: threads of their own from then on
};
// Never freed: a parked worker refers to it until the process ends. Replaced in a forked child,
// which has none of the parent's workers (only the forking thread is copied); the parent's list
// and its mutex (which another thread may have held at the fork) are left alone there.
std::atomic<pool_state*> pool{nullptr};

pool_state& the_pool() {
    pool_state* p = pool.load(std::memory_order_acquire);
    if (p == nullptr || p->pid != ::getpid()) {
        auto* fresh = new pool_state;
        if (pool.compare_exchange_strong(p, fresh, std::memory_order_acq_rel)) {
            return *fresh;
        }
        delete fresh;  // another thread of this process was first
        return *p;
    }
    return *p;
}

// close_range(2) for [first, last]; before Linux 5.9, by number up to the highest one /proc
// lists.
void close_numbers(unsigned first, unsigned last) noexcept {
    if (first > last) {
        return;
    }
    if (::syscall(SYS_close_range, first, last, 0U) == 0) {
        return;
    }
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
    for (int fd = static_cast<int>(first); fd <= highest && static_cast<unsigned>(fd) <= last; ++fd) {
        (void)::close(fd);  // wz: ignored-error (the worker's own table being emptied; EBADF for gaps)
    }
}

// Moves the worker's own descriptor `fd` above `floor` (a number a call asks for).
bool move_above(int& fd, int floor) noexcept {
    const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, floor + 1);
    if (moved < 0) {
        return false;
    }
    (void)::close(fd);  // wz: ignored-error (the worker's own copy; nothing to report)
    fd = moved;
    return true;
}

// Everything but the worker's own two descriptors closed, /dev/null at 0, 1 and 2 (those of
// them a call took from the caller, bit n of STDIO_TAKEN, put back).
void empty_table(worker& w, unsigned stdio_taken = 7U) noexcept {
    const int lo = std::min(w.pidfd, w.nullfd), hi = std::max(w.pidfd, w.nullfd);
    close_numbers(3, static_cast<unsigned>(lo) - 1);
    close_numbers(static_cast<unsigned>(lo) + 1, static_cast<unsigned>(hi) - 1);
    close_numbers(static_cast<unsigned>(hi) + 1, ~0U);
    for (int n = 0; n < 3; ++n) {
        if ((stdio_taken & (1U << n)) != 0) {
            (void)::dup3(w.nullfd, n, O_CLOEXEC);  // wz: ignored-error (a number below 3 is always in the table)
        }
    }
}

// The caller's descriptors at their numbers in the worker's table: 0, or the errno that kept
// one from being taken (then the worker's table is emptied again).
int take_descriptors(worker& w, const std::vector<int>& fds, unsigned& stdio_taken) noexcept {
    const int highest = fds.empty() ? -1 : fds.back();
    for (int* own : {&w.pidfd, &w.nullfd}) {
        if (*own <= highest && !move_above(*own, std::max(highest, std::max(w.pidfd, w.nullfd)))) {
            return errno;
        }
    }
    for (const int n : fds) {
        // Ascending: every number below n that is asked for is in place, so the lowest free
        // number (where pidfd_getfd installs) is n itself or a gap that is not asked for.
        const int got = static_cast<int>(::syscall(SYS_pidfd_getfd, w.pidfd, n, 0U));
        if (got < 0) {
            if (n == 2 && errno == EBADF) {
                continue;  // the caller has no stderr: /dev/null stays
            }
            return errno;
        }
        if (got != n) {
            const bool placed = ::dup3(got, n, O_CLOEXEC) == n;
            const int err = errno;
            (void)::close(got);  // wz: ignored-error (the worker's own temporary copy)
            if (!placed) {
                return err;
            }
        }
        if (n < 3) {
            stdio_taken |= 1U << n;
        }
    }
    return 0;
}

void finish(private_fd_table::shared& s) {
    std::lock_guard lock(s.mutex);
    s.finished = true;
    s.cv.notify_all();
}

// 0, or the errno that kept the job from running (declined).
int run_job(worker& w, pool_job& job) {
    unsigned stdio_taken = 0;
    if (const int err = take_descriptors(w, job.fds, stdio_taken); err != 0) {
        job.declined = true;
        empty_table(w, stdio_taken);
        return err;
    }
    try {
        (*job.body)();
    } catch (...) {
        job.error = std::current_exception();
    }
    // Before the caller goes on: nothing of the process's stays referenced (a pipe's write end
    // the caller closes next must be the last one).
    empty_table(w, stdio_taken);
    return 0;
}

void worker_main(worker* w) {
    (void)::pthread_setname_np(::pthread_self(), "wz-table");  // wz: ignored-error (a name for ps -L only)
    pool_state& p = *w->owner;
    pool_job* job = w->job.exchange(nullptr, std::memory_order_acq_rel);
    bool ready = false;
    if (::unshare(CLONE_FILES) == 0) {
        private_table = true;
        close_numbers(0, ~0U);
        w->nullfd = ::open("/dev/null", O_RDWR | O_CLOEXEC);  // 0: the table is empty
        w->pidfd = static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0U));
        // High numbers, out of the way: a body that used a descriptor of the caller's not
        // named to run() meets EBADF, not /dev/null or the pidfd.
        ready = w->nullfd >= 0 && w->pidfd >= 0 && (move_above(w->nullfd, 510) || move_above(w->nullfd, 2)) &&
                (move_above(w->pidfd, 510) || move_above(w->pidfd, 2));
        if (ready) {
            empty_table(*w);
        } else {
            std::lock_guard lock(p.m);
            p.broken = true;  // no pidfd_open (before Linux 5.3, or seccomp)
        }
    }
    for (;;) {
        if (ready) {
            const int err = run_job(*w, *job);
            if (err == ENOSYS || err == EPERM) {
                std::lock_guard lock(p.m);
                p.broken = true;  // no pidfd_getfd (before Linux 5.6, or seccomp)
            }
        } else {
            job->declined = true;
        }
        bool keep = false;
        if (ready) {
            std::lock_guard lock(p.m);
            if (!p.broken && p.idle.size() < max_idle_workers) {
                p.idle.push_back(w);
                keep = true;
            }
        }
        finish(*job->s);  // the caller may return now; `job` is gone after this
        if (!keep) {
            if (w->pidfd >= 0) {
                (void)::close(w->pidfd);  // wz: ignored-error (the worker's own; it ends)
            }
            if (w->nullfd >= 0) {
                (void)::close(w->nullfd);  // wz: ignored-error (as above)
            }
            delete w;
            return;
        }
        std::unique_lock lock(w->m);
        w->cv.wait(lock, [w] { return w->job.load(std::memory_order_acquire) != nullptr; });
        job = w->job.exchange(nullptr, std::memory_order_acq_rel);
    }
}

// Whether the calling thread's descriptor table is the process's (the main thread's), the one
// pidfd_getfd takes from.
bool caller_table_is_the_process_s(pool_state& p) noexcept {
    const long same = ::syscall(SYS_kcmp, ::getpid(), ::gettid(), KCMP_FILES, 0UL, 0UL);
    if (same < 0 && (errno == ENOSYS || errno == EPERM || errno == EACCES)) {
        std::lock_guard lock(p.m);
        p.broken = true;  // no kcmp (CONFIG_KCMP off, or seccomp)
    }
    return same == 0;
}

// On the caller's thread until the body has finished: runs what the body hands to
// on_caller().
void serve(private_fd_table::shared& s) {
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
        return;  // finished, nothing pending
    }
}

// The body on an idle worker (or a new one): true if it ran there (its exception, if any, in
// *error); false if it did not run, and the caller runs it on a thread of its own.
bool run_on_worker(private_fd_table::shared& s, const std::function<void()>& body, std::span<const int> fds,
                   std::exception_ptr* error) {
    pool_state& p = the_pool();
    {
        std::lock_guard lock(p.m);
        if (p.broken) {
            return false;
        }
    }
    if (!caller_table_is_the_process_s(p)) {
        return false;
    }
    pool_job job;
    job.body = &body;
    job.s = &s;
    job.fds.assign(fds.begin(), fds.end());
    job.fds.push_back(2);  // stderr
    std::erase_if(job.fds, [](int fd) { return fd < 0; });  // AT_FDCWD, "no descriptor"
    std::sort(job.fds.begin(), job.fds.end());
    job.fds.erase(std::unique(job.fds.begin(), job.fds.end()), job.fds.end());
    worker* w = nullptr;
    {
        std::lock_guard lock(p.m);
        if (!p.idle.empty()) {
            w = p.idle.back();
            p.idle.pop_back();
        }
    }
    if (w != nullptr) {
        std::lock_guard lock(w->m);
        w->job.store(&job, std::memory_order_release);
        w->cv.notify_one();
    } else {
        w = new worker;
        w->owner = &p;
        w->job.store(&job, std::memory_order_relaxed);
        try {
            signal_free_thread([w] { worker_main(w); }).detach();
        } catch (const std::system_error&) {
            delete w;
            return false;  // the thread of its own will meet the same limit and say so
        }
    }
    serve(s);
    if (job.declined) {
        s.finished = false;
        return false;
    }
    *error = job.error;
    return true;
}

}  // namespace

bool private_fd_table::active() noexcept { return private_table; }

void private_fd_table::process_takes_no_posix_locks() noexcept { in_place_always.store(true); }

int private_fd_table::run(const std::function<void()>& body, std::span<const int> caller_fds) {
    if (private_table || in_place_always.load(std::memory_order_relaxed) ||
        unshare_refused.load(std::memory_order_relaxed)) {
        body();
        return 0;
    }
    shared s;
    int err = 0;
    std::exception_ptr body_error;
    s_ = &s;
    if (run_on_worker(s, body, caller_fds, &body_error)) {
        s_ = nullptr;
        if (body_error) {
            std::rethrow_exception(body_error);
        }
        return 0;
    }
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
                close_numbers(0, ~0U);
            }
            finish(s);
        });
    } catch (const std::system_error& e) {
        s_ = nullptr;
        return e.code().value() != 0 ? e.code().value() : EAGAIN;
    }
    serve(s);
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
