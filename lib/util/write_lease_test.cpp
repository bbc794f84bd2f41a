// SPDX-License-Identifier: MIT
// util/write_lease: exclusive use of a file for a call, and reopen_self() under it.

#include "util/write_lease.hpp"

#include "testing/scratch_dir.hpp"
#include "util/reopen.hpp"
#include "util/unique_fd.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>

namespace wz {
namespace {

// Leases need the file's owner or CAP_LEASE; the scratch dir is the test's own.
class write_lease_test : public ::testing::Test {
protected:
    void SetUp() override {
        path_ = (dir_.path() / "f").string();
        fd_.reset(::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
        ASSERT_TRUE(fd_) << errno;
        ASSERT_EQ(::ftruncate(fd_.get(), 1 << 20), 0);
    }
    // A child that opens the file (for reading, without blocking: the open fails with
    // EWOULDBLOCK while the lease is held, and starts breaking it) and reports the errno.
    int open_in_child() const {
        const pid_t pid = ::fork();
        if (pid == 0) {
            const int fd = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
            ::_exit(fd >= 0 ? 0 : errno);
        }
        int st = 0;
        ::waitpid(pid, &st, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    }
    testing::scratch_dir dir_;
    std::string path_;
    unique_fd fd_;
};

TEST_F(write_lease_test, taken_on_the_only_description_and_released) {
    write_lease lease;
    ASSERT_EQ(lease.take(fd_.get()), 0);
    EXPECT_TRUE(lease.held());
    EXPECT_EQ(::fcntl(fd_.get(), F_GETLEASE), F_WRLCK);
    EXPECT_FALSE(lease.broken());
    EXPECT_EQ(write_lease::held_on(fd_.get()), &lease);
    lease.release();
    EXPECT_FALSE(lease.held());
    EXPECT_EQ(::fcntl(fd_.get(), F_GETLEASE), F_UNLCK);
    EXPECT_EQ(write_lease::held_on(fd_.get()), nullptr);
}

TEST_F(write_lease_test, refused_while_another_description_is_open) {
    unique_fd other(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));  // a reader is enough
    ASSERT_TRUE(other);
    write_lease lease;
    EXPECT_EQ(lease.take(fd_.get()), -EAGAIN);
    EXPECT_FALSE(lease.held());
    other.reset();
    EXPECT_EQ(lease.take(fd_.get()), 0);
}

TEST_F(write_lease_test, refused_on_a_read_only_description) {
    unique_fd ro(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
    fd_.reset();
    write_lease lease;
    EXPECT_EQ(lease.take(ro.get()), -EBADF);
}

TEST_F(write_lease_test, reopen_shares_the_description_and_keeps_the_lease) {
    write_lease lease;
    ASSERT_EQ(lease.take(fd_.get()), 0);
    {
        unique_fd direct = reopen_self(fd_.get(), O_WRONLY | O_DIRECT);
        ASSERT_TRUE(direct) << errno;
        EXPECT_NE(::fcntl(fd_.get(), F_GETFL) & O_DIRECT, 0);  // one description: the flag is on it
        unique_fd plain = reopen_self(fd_.get(), O_RDONLY);
        ASSERT_TRUE(plain);
        EXPECT_EQ(::fcntl(fd_.get(), F_GETFL) & O_DIRECT, 0);
    }
    EXPECT_EQ(::fcntl(fd_.get(), F_GETLEASE), F_WRLCK);  // an open(2) would have broken it
    EXPECT_FALSE(lease.broken());
    ASSERT_EQ(lease.set_direct(true), 0);
    lease.release();
    EXPECT_EQ(::fcntl(fd_.get(), F_GETFL) & O_DIRECT, 0);  // restored as it was before take()
}

TEST_F(write_lease_test, another_process_opening_breaks_it_without_a_signal) {
    // SIGIO would end this process (its default action) if the break were announced with it.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    struct sigaction old_io {}, old_urg {};
    ASSERT_EQ(::sigaction(SIGIO, &dfl, &old_io), 0);
    ASSERT_EQ(::sigaction(SIGURG, &dfl, &old_urg), 0);
    ASSERT_EQ(::fcntl(fd_.get(), F_SETSIG, 0), 0);
    write_lease lease;
    ASSERT_EQ(lease.take(fd_.get()), 0);
    EXPECT_EQ(open_in_child(), EWOULDBLOCK);  // the opener waits (here: would wait)
    EXPECT_TRUE(lease.broken());
    lease.release();
    EXPECT_EQ(::fcntl(fd_.get(), F_GETSIG), 0);  // the description's settings restored
    EXPECT_EQ(open_in_child(), 0);
    ::sigaction(SIGIO, &old_io, nullptr);
    ::sigaction(SIGURG, &old_urg, nullptr);
}

TEST_F(write_lease_test, holders_name_another_process) {
    int ready[2];
    ASSERT_EQ(::pipe2(ready, O_CLOEXEC), 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
        (void)!::write(ready[1], fd >= 0 ? "y" : "n", 1);
        ::pause();
        ::_exit(0);
    }
    char c = 0;
    ASSERT_EQ(::read(ready[0], &c, 1), 1);
    EXPECT_EQ(c, 'y');
    struct ::stat st {};
    ASSERT_EQ(::fstat(fd_.get(), &st), 0);
    const auto who = file_holders(st.st_dev, st.st_ino, fd_.get(), 8);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    ::close(ready[0]);
    ::close(ready[1]);
    bool found = false;
    for (const auto& w : who) {
        found = found || (w.pid == pid && !w.self);
    }
    EXPECT_TRUE(found) << (who.empty() ? std::string("nobody") : to_string(who.front()));
    // The calling thread's own descriptor is not someone else.
    EXPECT_TRUE(file_holders(st.st_dev, st.st_ino, fd_.get(), 8).empty());
}

}  // namespace
}  // namespace wz
