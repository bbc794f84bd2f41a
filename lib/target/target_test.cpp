// SPDX-License-Identifier: MIT
// target: one open per path, decided on the descriptor: a fifo does not block it, a dangling
// symlink or a pseudo filesystem gets no new file, a swapped name cannot redirect it.

#include "target/target.hpp"
#include "testing/scratch_dir.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace {

using wz::target::access;
using wz::target::open_request;

class target_test : public ::testing::Test {
protected:
    wz::testing::scratch_dir dir_{"wz_target"};
    std::string at(const std::string& name) const { return (dir_.path() / name).string(); }
};

TEST_F(target_test, fifo_is_refused_without_blocking) {
    ASSERT_EQ(::mkfifo(at("fifo").c_str(), 0600), 0);
    // A FIFO with no writer would block a plain open(O_RDONLY) forever.
    auto r = wz::target::open(at("fifo"), open_request{});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code.value(), EINVAL);
    EXPECT_NE(r.error().message.find("a FIFO"), std::string::npos) << r.error().message;
}

TEST_F(target_test, directory_is_eisdir) {
    auto r = wz::target::open(dir_.path().string(), open_request{access::write});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code.value(), EISDIR);
}

TEST_F(target_test, missing_name_created_only_when_asked) {
    auto r = wz::target::open(at("new"), open_request{access::write});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code.value(), ENOENT);

    open_request dry{access::write, true, true};
    auto d = wz::target::open(at("new"), dry);
    ASSERT_TRUE(d) << d.error().message;
    EXPECT_TRUE(d->would_create);
    EXPECT_FALSE(d->fd);
    EXPECT_NE(::access(at("new").c_str(), F_OK), 0) << "a dry run created the file";

    auto c = wz::target::open(at("new"), open_request{access::write, true});
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_TRUE(c->created);
    EXPECT_TRUE(S_ISREG(c->st.st_mode));
    EXPECT_EQ(wz::target::remove_created(*c), 0);
    EXPECT_NE(::access(at("new").c_str(), F_OK), 0);
}

TEST_F(target_test, never_creates_through_a_dangling_symlink) {
    ASSERT_EQ(::symlink(at("elsewhere").c_str(), at("link").c_str()), 0);
    auto r = wz::target::open(at("link"), open_request{access::write, true});
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("symbolic link"), std::string::npos) << r.error().message;
    EXPECT_NE(::access(at("elsewhere").c_str(), F_OK), 0) << "created the symlink's target";
}

TEST_F(target_test, remove_created_leaves_a_replaced_name_alone) {
    auto c = wz::target::open(at("f"), open_request{access::write, true});
    ASSERT_TRUE(c) << c.error().message;
    // Someone else's file now has the name: not ours to remove.
    ASSERT_EQ(::rename(at("f").c_str(), at("moved").c_str()), 0);
    std::ofstream(at("f")) << "theirs";
    EXPECT_EQ(wz::target::remove_created(*c), -ESTALE);
    EXPECT_EQ(::access(at("f").c_str(), F_OK), 0);
}

TEST_F(target_test, no_files_on_pseudo_filesystems) {
    for (const char* p : {"/proc/wz-target-test-typo", "/sys/wz-target-test-typo"}) {
        auto r = wz::target::open(p, open_request{access::write, true});
        ASSERT_FALSE(r) << p;
        EXPECT_NE(r.error().message.find("refusing to create"), std::string::npos) << r.error().message;
    }
}

TEST_F(target_test, regular_file_reopened_on_the_same_inode) {
    std::ofstream(at("data")) << "x";
    struct ::stat want {};
    ASSERT_EQ(::stat(at("data").c_str(), &want), 0);
    auto r = wz::target::open(at("data"), open_request{access::write});
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->st.st_ino, want.st_ino);
    EXPECT_EQ(::fcntl(r->fd.get(), F_GETFL) & O_ACCMODE, O_RDWR);
    EXPECT_FALSE(r->created);
}

}  // namespace
