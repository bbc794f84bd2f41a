// SPDX-License-Identifier: MIT
// wz::allocate() on a real filesystem (a scratch directory, /var/tmp or WZ_TEST_DIR): data in
// the range is kept (also data still in the page cache, over a hole or an unwritten extent),
// holes and unwritten extents become written zeroes, the file grows and never shrinks. ext4
// and xfs on loop devices: fstests host/052.
#include "testing/scratch_dir.hpp"
#include "util/unique_fd.hpp"

#include <wzero/wzero.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace {

using wz::testing::contents;
using wz::testing::scratch_dir;

constexpr std::uint64_t kib = 1024;

std::string pattern(std::size_t n, char base) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) {
        s[i] = static_cast<char>(base + static_cast<char>((i * 7) % 26));
    }
    return s;
}

void put(int fd, const std::string& data, std::uint64_t offset) {
    ASSERT_EQ(::pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset)), static_cast<ssize_t>(data.size()));
}

// Kinds of extent in [offset, offset + length), or "" where the filesystem has no extent map.
std::string kinds(const std::string& path, std::uint64_t offset, std::uint64_t length) {
    auto m = wz::map_extents(path, offset, length);
    if (!m) {
        return "";
    }
    std::string out;
    for (const auto& e : *m) {
        if (out.find(e.kind) == std::string::npos) {
            out += (out.empty() ? "" : ",") + e.kind;
        }
    }
    return out;
}

bool has_extent_map(const std::string& dir) {
    const std::string probe = dir + "/probe";
    wz::unique_fd f(::open(probe.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    const bool ok = f.get() >= 0 && ::pwrite(f.get(), "x", 1, 0) == 1 && ::fsync(f.get()) == 0 &&
                    static_cast<bool>(wz::map_extents(probe, 0, 1));
    ::unlink(probe.c_str());
    return ok;
}

TEST(allocate, keeps_data_fills_holes_and_unwritten_extents_and_grows) {
    scratch_dir d("wz_allocate");
    const std::string path = d.path() / "f";
    wz::unique_fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    ASSERT_GE(fd.get(), 0);
    // [0, 64K) data on disk; [64K, 256K) a hole; [256K, 320K) data only in the page cache,
    // over a hole; [512K, 640K) an unwritten extent with 8K of dirty data at its start;
    // size 1 MiB.
    const std::string a = pattern(64 * kib, 'a'), b = pattern(64 * kib, 'A'), c = pattern(8 * kib, 'k');
    put(fd.get(), a, 0);
    ASSERT_EQ(::ftruncate(fd.get(), 1024 * kib), 0);
    ASSERT_EQ(::fsync(fd.get()), 0);
    const bool unwritten = ::fallocate(fd.get(), 0, 512 * kib, 128 * kib) == 0;
    put(fd.get(), b, 256 * kib);
    put(fd.get(), c, 512 * kib);

    wz::preallocate_report rep;
    auto r = wz::allocate(fd.get(), path, 0, 2048 * kib, {}, &rep);
    ASSERT_TRUE(r) << r.error().message;
    struct stat st {};
    ASSERT_EQ(::fstat(fd.get(), &st), 0);
    EXPECT_EQ(static_cast<std::uint64_t>(st.st_size), 2048 * kib);
    const std::string got = contents(path);
    ASSERT_EQ(got.size(), 2048 * kib);
    std::string want(2048 * kib, '\0');
    want.replace(0, a.size(), a);
    want.replace(256 * kib, b.size(), b);
    want.replace(512 * kib, c.size(), c);
    EXPECT_TRUE(got == want) << "data in the range was not kept, or the rest is not zeroes";
    // Everything but the three pieces of data was zeroed.
    EXPECT_EQ(r->bytes_done, 2048 * kib - a.size() - b.size() - c.size()) << "unwritten extent made: " << unwritten;
    if (has_extent_map(d.path())) {
        EXPECT_EQ(kinds(path, 0, 2048 * kib), "written");
        EXPECT_EQ(r->verified, std::optional<bool>(true)) << r->verify_detail;
    }
}

TEST(allocate, a_range_past_the_end_grows_and_leaves_the_gap_a_hole) {
    scratch_dir d("wz_allocate");
    const std::string path = d.path() / "f";
    wz::unique_fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    ASSERT_GE(fd.get(), 0);
    const std::string a = pattern(64 * kib, 'a');
    put(fd.get(), a, 0);
    auto r = wz::allocate(fd.get(), path, 1024 * kib, 64 * kib, {});
    ASSERT_TRUE(r) << r.error().message;
    struct stat st {};
    ASSERT_EQ(::fstat(fd.get(), &st), 0);
    EXPECT_EQ(static_cast<std::uint64_t>(st.st_size), 1088 * kib);
    EXPECT_EQ(r->bytes_done, 64 * kib);
    const std::string got = contents(path);
    EXPECT_TRUE(got.substr(0, a.size()) == a) << "data before the range changed";
    EXPECT_TRUE(got.substr(64 * kib) == std::string(1024 * kib, '\0')) << "not zeroes after the data";
    if (has_extent_map(d.path())) {
        EXPECT_EQ(kinds(path, 64 * kib, 960 * kib), "hole");  // fallocate(2) leaves it so too
        EXPECT_EQ(kinds(path, 1024 * kib, 64 * kib), "written");
    }
}

TEST(allocate, never_shrinks_and_all_data_is_a_no_op) {
    scratch_dir d("wz_allocate");
    const std::string path = d.path() / "f";
    wz::unique_fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    ASSERT_GE(fd.get(), 0);
    const std::string a = pattern(256 * kib, 'a');
    put(fd.get(), a, 0);
    auto r = wz::allocate(fd.get(), path, 64 * kib, 64 * kib, {});
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->bytes_done, 0U);
    EXPECT_TRUE(contents(path) == a) << "data in the range changed";
}

TEST(allocate, refusals) {
    scratch_dir d("wz_allocate");
    const std::string path = d.path() / "f";
    wz::unique_fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    ASSERT_GE(fd.get(), 0);
    auto zero = wz::allocate(fd.get(), path, 0, 0, {});
    ASSERT_FALSE(zero);
    EXPECT_EQ(zero.error().code, std::errc::invalid_argument);
    auto over = wz::allocate(fd.get(), path, UINT64_MAX - 10, 100, {});
    ASSERT_FALSE(over);
    EXPECT_EQ(over.error().code, std::errc::file_too_large);
    wz::unique_fd ro(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    auto bad = wz::allocate(ro.get(), path, 0, 4096, {});
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find(path), std::string::npos) << bad.error().message;
    auto dir = wz::allocate(d.path().string(), 0, 4096, {});
    ASSERT_FALSE(dir);
    EXPECT_EQ(dir.error().code, std::errc::is_a_directory) << dir.error().message;
}

TEST(allocate, the_path_form_creates_the_file_0666_less_the_umask) {
    scratch_dir d("wz_allocate");
    for (const mode_t mask : {mode_t{022}, mode_t{002}}) {
        const std::string path = d.path() / ("new" + std::to_string(mask));
        const mode_t old = ::umask(mask);
        auto r = wz::allocate(path, 4096, 64 * kib, {});
        ::umask(old);
        ASSERT_TRUE(r) << r.error().message;
        struct stat st {};
        ASSERT_EQ(::stat(path.c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 07777, 0666U & ~mask);
        EXPECT_EQ(static_cast<std::uint64_t>(st.st_size), 68 * kib);
    }
}

}  // namespace
