// SPDX-License-Identifier: MIT
#include "zero/kernel_zero.hpp"

#include "probe/fs_traits.hpp"
#include "testing/scratch_dir.hpp"
#include "util/unique_fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace wz::zero {
namespace {

// Only a refusal is remembered, and only for the filesystem named: a failure of the call
// itself (EBADF) is not "this filesystem has no FALLOC_FL_WRITE_ZEROES".
TEST(KernelZero, RemembersRefusalsOnly) {
    testing::scratch_dir dir("wz_kzero");
    const std::string path = (dir.path() / "f").string();
    {
        unique_fd w(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
        ASSERT_TRUE(w);
        ASSERT_EQ(::ftruncate(w.get(), 1 << 20), 0);
    }
    struct ::stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);

    unique_fd ro(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(ro);
    EXPECT_EQ(kernel_write_zeroes(ro.get(), 0, 4096, st.st_dev), -EBADF);
    EXPECT_FALSE(kernel_zero_refused(EBADF));
    EXPECT_FALSE(probe::fs::kernel_write_zeroes_refused(st.st_dev));

    unique_fd rw(::open(path.c_str(), O_RDWR | O_CLOEXEC));
    ASSERT_TRUE(rw);
    const int rc = kernel_write_zeroes(rw.get(), 0, 4096, std::nullopt);
    if (rc == 0) {
        GTEST_SKIP() << "the kernel zeroes here (Linux 6.17+, ext4 over a device with unmap write zeroes)";
    }
    EXPECT_TRUE(kernel_zero_refused(-rc)) << -rc;
    EXPECT_FALSE(probe::fs::kernel_write_zeroes_refused(st.st_dev));  // nullopt: nothing to remember
    EXPECT_EQ(kernel_write_zeroes(rw.get(), 0, 4096, st.st_dev), rc);
    EXPECT_TRUE(probe::fs::kernel_write_zeroes_refused(st.st_dev));
}

}  // namespace
}  // namespace wz::zero
