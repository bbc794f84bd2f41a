// SPDX-License-Identifier: MIT
// The database file lifecycle on a real filesystem (a scratch directory): what appears under
// a name, sizes, modes, refusals that leave everything as it was. Canaries around the range on
// ext4/xfs/btrfs/tmpfs/a raw partition are fstests generic/006; crashes are the VM's.
#include "testing/scratch_dir.hpp"
#include "util/unique_fd.hpp"

#include <wzero/wzero.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace {

using wz::testing::contents;
using wz::testing::scratch_dir;

std::set<std::string> entries(const std::string& dir) {
    std::set<std::string> out;
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
        return out;
    }
    while (dirent* e = ::readdir(d)) {
        const std::string n = e->d_name;
        if (n != "." && n != "..") {
            out.insert(n);
        }
    }
    ::closedir(d);
    return out;
}

void write_file(const std::string& path, const std::string& data) {
    wz::unique_fd f(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    ASSERT_GE(f.get(), 0);
    ASSERT_EQ(::pwrite(f.get(), data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
    ASSERT_EQ(::fsync(f.get()), 0);
}

bool all_zero(const std::string& s, std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
        if (s[i] != '\0') {
            return false;
        }
    }
    return true;
}

std::string pattern(std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) {
        s[i] = static_cast<char>('a' + (i * 7) % 26);
    }
    return s;
}

TEST(create_zeroed, appears_complete_with_the_mode_less_the_umask) {
    scratch_dir d("wz_lifecycle");
    wz::unique_fd dir(::open(d.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    const mode_t old = ::umask(022);
    wz::preallocate_report rep;
    const wz::status st = wz::create_zeroed(dir.get(), "seg1", 1 << 20, 0666, {}, &rep);
    ::umask(old);
    ASSERT_TRUE(st.ok()) << st.error().message;
    struct stat sb {};
    ASSERT_EQ(::stat((d.path() / "seg1").c_str(), &sb), 0);
    EXPECT_EQ(sb.st_size, 1 << 20);
    EXPECT_EQ(sb.st_mode & 07777, 0644U);
    const std::string c = contents(d.path() / "seg1");
    EXPECT_TRUE(all_zero(c, 0, c.size()));
    EXPECT_EQ(rep.verified, std::optional<bool>(true));
    EXPECT_EQ(entries(d.path()), std::set<std::string>{"seg1"});  // no temporary left
    EXPECT_NE(rep.decisions.front().find("O_TMPFILE"), std::string::npos) << rep.decisions.front();
}

TEST(create_zeroed, at_fdcwd_and_size_zero) {
    scratch_dir d("wz_lifecycle");
    const std::string here = std::filesystem::current_path();
    ASSERT_EQ(::chdir(d.path().c_str()), 0);
    const wz::status st = wz::create_zeroed(AT_FDCWD, "empty", 0, 0600);
    ASSERT_EQ(::chdir(here.c_str()), 0);
    ASSERT_TRUE(st.ok()) << st.error().message;
    struct stat sb {};
    ASSERT_EQ(::stat((d.path() / "empty").c_str(), &sb), 0);
    EXPECT_EQ(sb.st_size, 0);
}

TEST(create_zeroed, an_existing_name_is_eexist_and_untouched) {
    scratch_dir d("wz_lifecycle");
    const std::string keep = d.path() / "seg1";
    write_file(keep, "precious");
    wz::unique_fd dir(::open(d.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    const wz::status st = wz::create_zeroed(dir.get(), "seg1", 1 << 20, 0644);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), std::errc::file_exists);
    EXPECT_NE(st.error().message.find(keep), std::string::npos) << st.error().message;
    EXPECT_EQ(contents(keep), "precious");
    EXPECT_EQ(entries(d.path()), std::set<std::string>{"seg1"});
    // A dangling symlink is a name too: never followed, never replaced.
    ASSERT_EQ(::symlink("nowhere", (d.path() / "link").c_str()), 0);
    EXPECT_EQ(wz::create_zeroed(dir.get(), "link", 4096, 0644).code(), std::errc::file_exists);
    EXPECT_FALSE(std::filesystem::exists(d.path() / "nowhere"));
}

TEST(create_zeroed, bad_paths_and_directories) {
    scratch_dir d("wz_lifecycle");
    wz::unique_fd dir(::open(d.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_EQ(::mkdir((d.path() / "sub").c_str(), 0755), 0);
    const std::vector<std::string> names = {"", ".", "..", "sub/.", "sub/..", std::string("nul\0x", 5)};
    for (const std::string& name : names) {
        const wz::status st = wz::create_zeroed(dir.get(), name, 4096, 0644);
        ASSERT_FALSE(st.ok()) << "name '" << name << "'";
        EXPECT_EQ(st.code(), std::errc::invalid_argument) << st.error().message;
    }
    // As open(2) answers them.
    EXPECT_EQ(wz::create_zeroed(dir.get(), "sub/", 4096, 0644).code(), std::errc::is_a_directory);
    EXPECT_EQ(wz::create_zeroed(dir.get(), "missing/seg", 4096, 0644).code(), std::errc::no_such_file_or_directory);
    EXPECT_EQ(wz::create_zeroed(dir.get(), std::string(300, 'x'), 4096, 0644).code(), std::errc::filename_too_long);
    EXPECT_EQ(wz::create_zeroed(dir.get(), "sub/" + std::string(300, 'x'), 4096, 0644).code(),
              std::errc::filename_too_long);
    const std::string file = d.path() / "plain";
    write_file(file, "x");
    EXPECT_EQ(wz::create_zeroed(dir.get(), "plain/seg", 4096, 0644).code(), std::errc::not_a_directory);
    wz::unique_fd not_dir(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
    EXPECT_EQ(wz::create_zeroed(not_dir.get(), "seg", 4096, 0644).code(), std::errc::not_a_directory);
    EXPECT_EQ(wz::create_zeroed(-1, "seg", 4096, 0644).code(), std::errc::bad_file_descriptor);
    const wz::status missing = wz::create_zeroed(dir.get(), "missing/seg", 4096, 0644);
    EXPECT_NE(missing.error().message.find("\"missing/seg\""), std::string::npos) << missing.error().message;
    EXPECT_EQ(entries(d.path()), (std::set<std::string>{"plain", "sub"}));
    EXPECT_TRUE(entries(d.path() / "sub").empty());
}

// Paths as openat(2) takes them: below the directory descriptor, absolute (whatever the
// descriptor, as openat ignores it then), through a symlink in the directory part.
TEST(create_zeroed, paths_as_openat_takes_them) {
    scratch_dir d("wz_lifecycle");
    wz::unique_fd dir(::open(d.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_EQ(::mkdir((d.path() / "wal").c_str(), 0755), 0);
    ASSERT_EQ(::symlink("wal", (d.path() / "lnk").c_str()), 0);
    wz::preallocate_report rep;
    const wz::status rel = wz::create_zeroed(dir.get(), "wal/000001", 1 << 20, 0600, {}, &rep);
    ASSERT_TRUE(rel.ok()) << rel.error().message;
    EXPECT_EQ(rep.path, (d.path() / "wal" / "000001").string());
    const std::string abs = d.path() / "wal" / "000002";
    const wz::status a = wz::create_zeroed(AT_FDCWD, abs, 1 << 20, 0600);
    ASSERT_TRUE(a.ok()) << a.error().message;
    const wz::status b = wz::create_zeroed(-1, (d.path() / "wal" / "000003").string(), 4096, 0600);
    ASSERT_TRUE(b.ok()) << b.error().message;
    const wz::status l = wz::create_zeroed(dir.get(), "lnk/000004", 4096, 0600);
    ASSERT_TRUE(l.ok()) << l.error().message;
    const wz::status dots = wz::create_zeroed(dir.get(), "wal/../wal//000005", 4096, 0600);
    ASSERT_TRUE(dots.ok()) << dots.error().message;
    EXPECT_EQ(entries(d.path() / "wal"), (std::set<std::string>{"000001", "000002", "000003", "000004", "000005"}));
    EXPECT_EQ(entries(d.path()), (std::set<std::string>{"lnk", "wal"}));
    const std::string c = contents(d.path() / "wal" / "000002");
    EXPECT_EQ(c.size(), std::size_t{1} << 20);
    EXPECT_TRUE(all_zero(c, 0, c.size()));
    // The last component is never followed, in a subdirectory too.
    ASSERT_EQ(::symlink("elsewhere", (d.path() / "wal" / "link").c_str()), 0);
    EXPECT_EQ(wz::create_zeroed(dir.get(), "wal/link", 4096, 0644).code(), std::errc::file_exists);
    EXPECT_EQ(wz::create_zeroed(dir.get(), "wal/000001", 4096, 0644).code(), std::errc::file_exists);
    EXPECT_FALSE(std::filesystem::exists(d.path() / "wal" / "elsewhere"));
}

// The directory is resolved once: renamed while the file is being zeroed, and a new one made
// under its old name, the file still lands in the directory the call started in.
TEST(create_zeroed, the_directory_is_resolved_once) {
    scratch_dir d("wz_lifecycle");
    ASSERT_EQ(::mkdir((d.path() / "wal").c_str(), 0755), 0);
    const std::string wal = d.path() / "wal";
    const std::string moved = d.path() / "wal.old";
    bool swapped = false;
    wz::preallocate_options o;
    o.method = wz::method_request::write;
    o.on_progress = [&](const wz::progress_info&) {
        if (!swapped) {
            swapped = ::rename(wal.c_str(), moved.c_str()) == 0 && ::mkdir(wal.c_str(), 0755) == 0;
        }
    };
    const wz::status st = wz::create_zeroed(AT_FDCWD, wal + "/seg", 8 << 20, 0600, o);
    ASSERT_TRUE(st.ok()) << st.error().message;
    ASSERT_TRUE(swapped) << "no progress callback ran while the file was zeroed";
    EXPECT_EQ(entries(moved), std::set<std::string>{"seg"});
    EXPECT_TRUE(entries(wal).empty());
}

TEST(create_zeroed, a_failure_leaves_nothing) {
    scratch_dir d("wz_lifecycle");
    wz::unique_fd dir(::open(d.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    // Larger than the filesystem can hold: refused by the free-space check or by ENOSPC.
    const wz::status st = wz::create_zeroed(dir.get(), "huge", std::uint64_t{1} << 60, 0644);
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(entries(d.path()).empty());
    // Cancelled before it starts: ECANCELED, nothing left.
    std::atomic<bool> cancel{true};
    wz::preallocate_options o;
    o.cancel = &cancel;
    const wz::status c = wz::create_zeroed(dir.get(), "cancelled", 8 << 20, 0644, o);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.code(), std::errc::operation_canceled) << c.error().message;
    EXPECT_TRUE(entries(d.path()).empty());
}

TEST(create_zeroed, dry_run_creates_nothing) {
    scratch_dir d("wz_lifecycle");
    wz::unique_fd dir(::open(d.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    wz::preallocate_options o;
    o.dry_run = true;
    wz::preallocate_report rep;
    const wz::status st = wz::create_zeroed(dir.get(), "seg", 1 << 20, 0644, o, &rep);
    ASSERT_TRUE(st.ok()) << st.error().message;
    EXPECT_FALSE(rep.plan.empty());
    EXPECT_TRUE(entries(d.path()).empty());
}

TEST(extend, grows_with_written_zeroes_and_never_truncates) {
    scratch_dir d("wz_lifecycle");
    const std::string f = d.path() / "tbl";
    const std::string head = pattern(10000);  // not block aligned: the tail of a block is kept
    write_file(f, head);
    wz::unique_fd fd(::open(f.c_str(), O_RDWR | O_CLOEXEC));
    wz::preallocate_report rep;
    const wz::status st = wz::extend(fd.get(), 1 << 20, {}, &rep);
    ASSERT_TRUE(st.ok()) << st.error().message;
    EXPECT_EQ(rep.verified, std::optional<bool>(true));
    std::string c = contents(f);
    ASSERT_EQ(c.size(), std::size_t{1} << 20);
    EXPECT_TRUE(c.substr(0, head.size()) == head) << "the old data changed";
    EXPECT_TRUE(all_zero(c, head.size(), c.size()));
    // Same size: only a sync. Smaller: EINVAL, nothing changes.
    EXPECT_TRUE(wz::extend(fd.get(), 1 << 20).ok());
    const wz::status smaller = wz::extend(fd.get(), 4096);
    ASSERT_FALSE(smaller.ok());
    EXPECT_EQ(smaller.code(), std::errc::invalid_argument);
    EXPECT_NE(smaller.error().message.find("never truncates"), std::string::npos) << smaller.error().message;
    c = contents(f);
    EXPECT_EQ(c.size(), std::size_t{1} << 20);
}

TEST(rezero, recycles_inside_the_file_only) {
    scratch_dir d("wz_lifecycle");
    const std::string f = d.path() / "wal";
    const std::string data = pattern(1 << 20);
    write_file(f, data);
    wz::unique_fd fd(::open(f.c_str(), O_RDWR | O_CLOEXEC));
    wz::preallocate_report rep;
    const wz::status st = wz::rezero(fd.get(), 65536, 3 * 65536, {}, &rep);
    ASSERT_TRUE(st.ok()) << st.error().message;
    EXPECT_EQ(rep.verified, std::optional<bool>(true));
    EXPECT_EQ(rep.bytes_by_method[wz::zero_method::kernel], 0U);  // never FALLOC_FL_WRITE_ZEROES
    const std::string c = contents(f);
    ASSERT_EQ(c.size(), data.size());
    EXPECT_TRUE(c.substr(0, 65536) == data.substr(0, 65536)) << "bytes before the range changed";
    EXPECT_TRUE(all_zero(c, 65536, 4 * 65536));
    EXPECT_TRUE(c.substr(4 * 65536) == data.substr(4 * 65536)) << "bytes after the range changed";

    const wz::status past = wz::rezero(fd.get(), (1 << 20) - 4096, 8192);
    ASSERT_FALSE(past.ok());
    EXPECT_EQ(past.code(), std::errc::invalid_argument);
    EXPECT_EQ(wz::rezero(fd.get(), 0, 0).code(), std::errc::invalid_argument);
    wz::preallocate_options k;
    k.method = wz::method_request::kernel;
    EXPECT_EQ(wz::rezero(fd.get(), 0, 4096, k).code(), std::errc::invalid_argument);
    EXPECT_EQ(contents(f).size(), data.size());
}

TEST(zero_range, refuses_descriptors_it_cannot_write_as_asked) {
    scratch_dir d("wz_lifecycle");
    const std::string f = d.path() / "x";
    const std::string data = pattern(65536);
    write_file(f, data);
    {
        wz::unique_fd ro(::open(f.c_str(), O_RDONLY | O_CLOEXEC));
        EXPECT_EQ(wz::zero_range(ro.get(), 0, 4096).code(), std::errc::bad_file_descriptor);
        EXPECT_EQ(wz::extend(ro.get(), 1 << 20).code(), std::errc::bad_file_descriptor);
        EXPECT_EQ(wz::rezero(ro.get(), 0, 4096).code(), std::errc::bad_file_descriptor);
    }
    {
        // pwrite on an O_APPEND description appends whatever the offset: refused.
        wz::unique_fd ap(::open(f.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
        const wz::status st = wz::zero_range(ap.get(), 0, 4096);
        EXPECT_EQ(st.code(), std::errc::invalid_argument);
        EXPECT_EQ(wz::extend(ap.get(), 1 << 20).code(), std::errc::invalid_argument);
        EXPECT_EQ(wz::rezero(ap.get(), 0, 4096).code(), std::errc::invalid_argument);
    }
    {
        int p[2];
        ASSERT_EQ(::pipe(p), 0);
        wz::unique_fd r(p[0]), w(p[1]);
        EXPECT_FALSE(wz::zero_range(w.get(), 0, 4096).ok());
        EXPECT_FALSE(wz::extend(w.get(), 4096).ok());
        EXPECT_FALSE(wz::rezero(w.get(), 0, 4096).ok());
        wz::unique_fd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        EXPECT_FALSE(wz::zero_range(s.get(), 0, 4096).ok());
        wz::unique_fd dir(::open(d.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        EXPECT_FALSE(wz::zero_range(dir.get(), 0, 4096).ok());
        EXPECT_FALSE(wz::extend(dir.get(), 4096).ok());
    }
    EXPECT_TRUE(contents(f) == data) << "the file changed";
}

TEST(zero_range, without_sync_still_written_and_verified) {
    scratch_dir d("wz_lifecycle");
    const std::string f = d.path() / "x";
    write_file(f, pattern(65536));
    wz::unique_fd fd(::open(f.c_str(), O_RDWR | O_CLOEXEC));
    wz::preallocate_options o;
    o.sync = false;
    wz::preallocate_report rep;
    const wz::status st = wz::zero_range(fd.get(), 65536, 1 << 20, o, &rep);
    ASSERT_TRUE(st.ok()) << st.error().message;
    EXPECT_FALSE(rep.flushed);
    EXPECT_EQ(rep.verified, std::optional<bool>(true));
    bool said = false;
    for (const auto& line : rep.decisions) {
        said = said || line.find("sync: left to the caller") != std::string::npos;
    }
    EXPECT_TRUE(said);
    const std::string c = contents(f);
    EXPECT_EQ(c.size(), std::size_t{65536} + (1 << 20));
    EXPECT_TRUE(all_zero(c, 65536, c.size()));
}

}  // namespace
