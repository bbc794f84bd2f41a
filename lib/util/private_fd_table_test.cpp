// SPDX-License-Identifier: MIT
// util/private_fd_table: a call's descriptors live in a table of its own, its callbacks run on
// the caller's thread. (That the process keeps its POSIX locks through every public call is
// wzero_posix_locks_test's, ctest posix_locks.)

#include "util/private_fd_table.hpp"

#include "testing/scratch_dir.hpp"
#include "util/reopen.hpp"
#include "util/unique_fd.hpp"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <wzero/wzero.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <thread>

namespace wz {
namespace {

// When run() returns, the call's copy of the table holds no file any more: the caller's close
// of a pipe's write end is the last one, and the read end sees EOF at once (the kernel would
// release a dying thread's table only after pthread_join returned). Many rounds: the window
// is short.
TEST(private_fd_table, no_file_is_held_once_run_returns) {
    for (int round = 0; round < 200; ++round) {
        int p[2] = {-1, -1};
        ASSERT_EQ(::pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        unique_fd r(p[0]);
        unique_fd w(p[1]);
        private_fd_table table;
        ASSERT_EQ(table.run([] {}), 0);
        w.reset();
        char c = 0;
        ASSERT_EQ(::read(r.get(), &c, 1), 0) << "round " << round << ": no EOF, errno " << errno;
    }
}

// Where unshare is refused (Docker's default seccomp profile allows it only with
// CAP_SYS_ADMIN), the calls still work, in place. A child process installs a real seccomp
// filter that fails unshare with EPERM, then runs a body and wz::stat.
TEST(private_fd_table, refused_unshare_runs_the_calls_in_place) {
#if defined(__x86_64__)
    constexpr std::uint32_t arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
    constexpr std::uint32_t arch = AUDIT_ARCH_AARCH64;
#else
    GTEST_SKIP() << "no seccomp architecture constant for this build";
#endif
    testing::scratch_dir dir;
    const std::string path = (dir.path() / "f").string();
    unique_fd f(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    ASSERT_TRUE(f);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        sock_filter prog[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_unshare, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        sock_fprog fprog{static_cast<unsigned short>(sizeof prog / sizeof prog[0]), prog};
        if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) != 0) {
            ::_exit(10);
        }
        if (::unshare(CLONE_FILES) == 0 || errno != EPERM) {
            ::_exit(11);  // the filter does not refuse it: the test would prove nothing
        }
        bool ran = false, active = true;
        private_fd_table table;
        if (table.run([&] {
                ran = true;
                active = private_fd_table::active();
            }) != 0) {
            ::_exit(12);
        }
        if (!ran || active) {
            ::_exit(13);
        }
        if (!wz::stat(f.get(), path)) {
            ::_exit(14);
        }
        ::_exit(0);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
    EXPECT_EQ(WEXITSTATUS(status), 0) << "10 seccomp, 11 not refused, 12 run failed, 13 not in place, 14 stat failed";
}

TEST(private_fd_table, descriptors_opened_by_the_body_are_not_the_callers) {
    testing::scratch_dir dir;
    const std::string path = (dir.path() / "f").string();
    unique_fd caller(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    ASSERT_TRUE(caller);
    int opened = -1;
    struct ::stat in_body {};
    bool reopened = false;
    private_fd_table table;
    const int carried[] = {caller.get()};
    ASSERT_EQ(table.run([&] {
        EXPECT_TRUE(private_fd_table::active());
        // The caller's descriptor is there under its number ...
        EXPECT_EQ(::fstat(caller.get(), &in_body), 0);
        // ... and /proc/thread-self/fd reopens what this table holds.
        unique_fd r = reopen_self(caller.get(), O_RDONLY);
        reopened = static_cast<bool>(r);
        opened = r.release();  // left open: the table is emptied after the body
    }, carried),
              0);
    EXPECT_FALSE(private_fd_table::active());
    ASSERT_TRUE(reopened);
    ASSERT_GE(opened, 0);
    // Not open in the caller's table (or, if the number is taken there, another file).
    struct ::stat here {};
    if (::fstat(opened, &here) == 0) {
        EXPECT_FALSE(here.st_ino == in_body.st_ino && here.st_dev == in_body.st_dev);
    } else {
        EXPECT_EQ(errno, EBADF);
    }
}

// The body's table holds the descriptors the caller names, at the same numbers (a high number
// too), and the caller's stderr, and no other descriptor of the caller's; a descriptor the
// caller names that the body keeps open is closed once run() returns (a pipe's write end: EOF).
TEST(private_fd_table, the_body_sees_the_named_descriptors_at_their_numbers_and_no_other) {
    testing::scratch_dir dir;
    const std::string path = (dir.path() / "f").string();
    unique_fd low(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    ASSERT_TRUE(low);
    unique_fd high(::fcntl(low.get(), F_DUPFD_CLOEXEC, 200));
    ASSERT_GE(high.get(), 200);
    unique_fd other(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(other);
    int p[2] = {-1, -1};
    ASSERT_EQ(::pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
    unique_fd r(p[0]);
    unique_fd w(p[1]);
    struct ::stat file {}, err {};
    ASSERT_EQ(::fstat(low.get(), &file), 0);
    ASSERT_EQ(::fstat(2, &err), 0);
    for (int round = 0; round < 3; ++round) {
        bool high_same = false, err_same = false, other_open = true, pipe_open = false;
        private_fd_table table;
        const int carried[] = {high.get(), w.get()};
        ASSERT_EQ(table.run([&] {
            struct ::stat st {};
            high_same = ::fstat(high.get(), &st) == 0 && st.st_ino == file.st_ino && st.st_dev == file.st_dev;
            err_same = ::fstat(2, &st) == 0 && st.st_ino == err.st_ino && st.st_dev == err.st_dev;
            // Not named: not open there, or another file under that number.
            other_open = ::fstat(other.get(), &st) == 0 && st.st_ino == file.st_ino && st.st_dev == file.st_dev;
            pipe_open = ::fcntl(w.get(), F_GETFD) >= 0;
        }, carried),
                  0);
        EXPECT_TRUE(high_same) << "round " << round;
        EXPECT_TRUE(err_same) << "round " << round;
        EXPECT_FALSE(other_open) << "round " << round;
        EXPECT_TRUE(pipe_open) << "round " << round;
    }
    w.reset();
    char c = 0;
    EXPECT_EQ(::read(r.get(), &c, 1), 0) << "no EOF: the body's table still holds the write end, errno " << errno;
}

// Calls one after another run on the same long-lived worker, not on a thread each; a call made
// while another runs gets a worker of its own.
TEST(private_fd_table, calls_reuse_an_idle_worker) {
    pid_t first = 0, second = 0, nested_outer = 0, concurrent = 0;
    private_fd_table a;
    ASSERT_EQ(a.run([&] { first = ::gettid(); }), 0);
    private_fd_table b;
    ASSERT_EQ(b.run([&] { second = ::gettid(); }), 0);
    EXPECT_NE(first, ::gettid());
    EXPECT_EQ(first, second) << "a thread per call: the worker was not kept";
    std::atomic<bool> started{false}, release{false};
    std::thread t([&] {
        private_fd_table c;
        (void)c.run([&] {
            nested_outer = ::gettid();
            started = true;
            while (!release) {
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
        });
    });
    while (!started) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    private_fd_table d;
    EXPECT_EQ(d.run([&] { concurrent = ::gettid(); }), 0);
    release = true;
    t.join();
    EXPECT_NE(concurrent, 0);
    EXPECT_NE(concurrent, nested_outer);
}

// A forked child has none of the parent's workers: its calls start their own.
TEST(private_fd_table, a_forked_child_runs_calls_too) {
    private_fd_table warm;
    ASSERT_EQ(warm.run([] {}), 0);  // a worker idle in the parent
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        bool ran = false;
        private_fd_table table;
        const int rc = table.run([&] { ran = private_fd_table::active(); });
        ::_exit(rc == 0 && ran ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(private_fd_table, on_caller_runs_on_the_calling_thread_and_nested_runs_in_place) {
    const std::thread::id me = std::this_thread::get_id();
    std::thread::id body_thread, relayed_thread, nested_thread;
    private_fd_table table;
    ASSERT_EQ(table.run([&] {
        body_thread = std::this_thread::get_id();
        table.on_caller([&] { relayed_thread = std::this_thread::get_id(); });
        private_fd_table inner;
        EXPECT_EQ(inner.run([&] { nested_thread = std::this_thread::get_id(); }), 0);
    }),
              0);
    EXPECT_NE(body_thread, me);
    EXPECT_EQ(relayed_thread, me);
    EXPECT_EQ(nested_thread, body_thread);
}

TEST(private_fd_table, exceptions_reach_the_caller) {
    private_fd_table table;
    EXPECT_THROW((void)table.run([] { throw std::runtime_error("body"); }), std::runtime_error);
    private_fd_table relay;
    EXPECT_THROW((void)relay.run([&] { relay.on_caller([] { throw std::invalid_argument("callback"); }); }),
                 std::invalid_argument);
}

TEST(private_fd_table, progress_of_a_public_call_runs_on_the_caller) {
    testing::scratch_dir dir;
    const std::string path = (dir.path() / "g").string();
    unique_fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    ASSERT_TRUE(fd);
    const std::thread::id me = std::this_thread::get_id();
    int calls = 0, elsewhere = 0;
    preallocate_options o;
    o.method = method_request::write;
    o.on_progress = [&](const progress_info&) {
        ++calls;
        elsewhere += std::this_thread::get_id() != me ? 1 : 0;
    };
    ASSERT_TRUE(extend(fd.get(), 8 << 20, o).ok());
    EXPECT_GT(calls, 0);
    EXPECT_EQ(elsewhere, 0);
}

}  // namespace
}  // namespace wz
