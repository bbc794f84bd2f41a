// SPDX-License-Identifier: MIT
// util/reopen: the one /proc/thread-self/fd reopen.

#include "util/reopen.hpp"

#include "testing/scratch_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

namespace wz {
namespace {

bool same_inode(int a, int b) {
    struct ::stat sa {}, sb {};
    return ::fstat(a, &sa) == 0 && ::fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

TEST(reopen_self, same_inode_with_new_flags_after_unlink) {
    testing::scratch_dir dir;
    const std::string path = (dir.path() / "f").string();
    unique_fd orig(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    ASSERT_TRUE(orig);
    ASSERT_EQ(::write(orig.get(), "abc", 3), 3);
    ASSERT_EQ(::unlink(path.c_str()), 0);  // the name is gone: only the descriptor leads there
    unique_fd ro = reopen_self(orig.get(), O_RDONLY);
    ASSERT_TRUE(ro) << errno;
    EXPECT_TRUE(same_inode(orig.get(), ro.get()));
    char buf[3] = {};
    EXPECT_EQ(::pread(ro.get(), buf, 3, 0), 3);
    EXPECT_EQ(std::string(buf, 3), "abc");
    EXPECT_EQ(::fcntl(ro.get(), F_GETFL) & O_ACCMODE, O_RDONLY);
    EXPECT_NE(::fcntl(ro.get(), F_GETFD) & FD_CLOEXEC, 0);  // added even when not asked for
    EXPECT_LT(::write(ro.get(), "x", 1), 0);
}

TEST(reopen_self, opens_an_o_path_handle) {
    testing::scratch_dir dir;
    const std::string path = (dir.path() / "g").string();
    unique_fd made(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    ASSERT_TRUE(made);
    unique_fd handle(::open(path.c_str(), O_PATH | O_CLOEXEC));
    ASSERT_TRUE(handle);
    unique_fd rw = reopen_self(handle.get(), O_RDWR);
    ASSERT_TRUE(rw) << errno;
    EXPECT_TRUE(same_inode(made.get(), rw.get()));
    EXPECT_EQ(::write(rw.get(), "x", 1), 1);
}

TEST(reopen_self, errors_as_open) {
    errno = 0;
    EXPECT_FALSE(reopen_self(-1, O_RDONLY));
    EXPECT_EQ(errno, EBADF);
    // A number that is not open: nothing under /proc/self/fd.
    int spare = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(spare, 0);
    ASSERT_EQ(::close(spare), 0);
    errno = 0;
    EXPECT_FALSE(reopen_self(spare, O_RDONLY));
    EXPECT_EQ(errno, ENOENT);
    EXPECT_EQ(self_fd_path(7), "/proc/thread-self/fd/7");
}

}  // namespace
}  // namespace wz
