// SPDX-License-Identifier: MIT
// The wzero FileSystem under a real RocksDB, in a scratch directory of the build tree: the
// WAL is written extents with a zero tail while the database is open, a process that dies
// without closing leaves that tail and every synced key is read back (strictest recovery
// mode, also with recycled logs), and a clean close cuts the tail off.
#include "wzero_fs.hpp"

#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/utilities/object_registry.h>

#include <wzero/wzero.hpp>

#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>

#include <cstdlib>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

namespace wz::rocksdb_plugin {
namespace {

namespace rdb = ROCKSDB_NAMESPACE;
namespace fs = std::filesystem;

std::string scratch(const char* name) {
    const fs::path dir = fs::path(WZERO_ROCKSDB_SCRATCH) / name;
    fs::remove_all(dir);
    fs::create_directories(dir.parent_path());
    return dir.string();
}

std::vector<std::string> wals(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) {
        const auto n = e.path().filename().string();
        if (n.size() > 4 && n.compare(n.size() - 4, 4, ".log") == 0) {
            out.push_back(e.path().string());
        }
    }
    return out;
}

// Holes or unwritten extents in the whole file.
int not_written_extents(const std::string& path) {
    auto m = wz::map_extents(path, 0, 0);
    EXPECT_TRUE(m.has_value()) << (m ? "" : m.error().message);
    int n = 0;
    if (m) {
        for (const auto& e : *m) {
            n += e.kind != "written" ? 1 : 0;
        }
    }
    return n;
}

struct db_env {
    std::shared_ptr<rdb::FileSystem> fs = std::make_shared<wzero_file_system>(rdb::FileSystem::Default());
    std::unique_ptr<rdb::Env> env = rdb::NewCompositeEnv(fs);
};

rdb::Options options_on(rdb::Env* env, int recycle) {
    rdb::Options o;
    o.create_if_missing = true;
    o.env = env;
    o.recycle_log_file_num = static_cast<size_t>(recycle);
    o.write_buffer_size = 4 << 20;  // a 4.4 MiB WAL preallocation block
    o.avoid_flush_during_shutdown = true;
    return o;
}

std::string key(int i) { return "key" + std::to_string(i); }

// In a fresh process (no RocksDB thread pool inherited across fork): keys [first, first + n)
// with sync=true, a memtable flush every `flush_every` keys, then death without a close.
void write_and_die(const std::string& dir, int first, int n, int recycle, int flush_every,
                   const char* then = "wzero") {
    const std::string cmd = std::string(WZERO_ROCKSDB_ACKWRITER) + " " + dir + " " + std::to_string(first) + " " +
                            std::to_string(n) + " " + std::to_string(recycle) + " " + std::to_string(flush_every) +
                            " " + then + " >/dev/null";
    const int st = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << cmd << ": status " << st;
}

void expect_keys(const std::string& dir, int n, int recycle, rdb::WALRecoveryMode mode) {
    db_env e;
    auto o = options_on(e.env.get(), recycle);
    o.wal_recovery_mode = mode;
    o.paranoid_checks = true;
    rdb::DB* db = nullptr;
    const auto s = rdb::DB::Open(o, dir, &db);
    ASSERT_TRUE(s.ok()) << s.ToString();
    int found = 0;
    for (int i = 0; i < n; ++i) {
        std::string v;
        if (db->Get(rdb::ReadOptions(), key(i), &v).ok() && v == std::string(100, static_cast<char>('a' + i % 26))) {
            ++found;
        }
    }
    EXPECT_EQ(found, n);
    EXPECT_TRUE(db->Close().ok());
    delete db;
}

TEST(RocksdbWzeroFs, RegisteredByName) {
    // The registry route db_bench --fs_uri takes: plugin.cpp's initialiser, linked into this
    // binary, ran before main().
    std::shared_ptr<rdb::FileSystem> fs;
    const auto s = rdb::FileSystem::CreateFromString(rdb::ConfigOptions(), "wzero", &fs);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_STREQ(fs->Name(), "wzero");
}

// The status kinds RocksDB's error handler decides on, as env/io_posix.cc's IOError() gives
// them: a full filesystem is NoSpace and retryable (the DB resumes once space is freed), a
// missing path PathNotFound; a run another process stopped by taking the file is IOFenced.
TEST(RocksdbWzeroFs, ErrorsMappedAsRocksdbsOwn) {
    enum class kind { no_space, path_not_found, stale, fenced, io_error };
    struct row {
        const char* name;
        int err;
        wz::error_reason reason;
        kind want;
        bool retryable;
    };
    const row rows[] = {
        {"ENOSPC", ENOSPC, wz::error_reason::none, kind::no_space, true},
        {"ENOENT", ENOENT, wz::error_reason::none, kind::path_not_found, false},
        {"ESTALE", ESTALE, wz::error_reason::none, kind::stale, false},
        {"EIO", EIO, wz::error_reason::none, kind::io_error, false},
        {"EDQUOT: no NoSpace in io_posix.cc either", EDQUOT, wz::error_reason::none, kind::io_error, false},
        {"lease lost", EBUSY, wz::error_reason::lease_lost, kind::fenced, false},
        {"EBUSY, the file in use", EBUSY, wz::error_reason::in_use, kind::io_error, false},
    };
    const auto kind_of = [](const rdb::IOStatus& s) {
        return s.IsNoSpace()                            ? kind::no_space
               : s.IsPathNotFound()                     ? kind::path_not_found
               : s.subcode() == rdb::Status::kStaleFile ? kind::stale
               : s.IsIOFenced()                         ? kind::fenced
               : s.IsIOError()                          ? kind::io_error
                                                        : kind::no_space;  // never: every row is an I/O error
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.name);
        const wz::error_info e{std::error_code(r.err, std::system_category()), "zero /db/000004.log: failed",
                               r.reason};
        const auto s = io_status_of("wzero zero_range", "/db/000004.log", e);
        ASSERT_FALSE(s.ok());
        EXPECT_TRUE(s.IsIOError()) << s.ToString();
        EXPECT_EQ(kind_of(s), r.want) << s.ToString();
        EXPECT_EQ(s.GetRetryable(), r.retryable) << s.ToString();
        if (r.reason == wz::error_reason::none) {
            const auto by_errno = io_status_of("fdatasync", "/db/000004.log", r.err);
            EXPECT_EQ(kind_of(by_errno), r.want) << by_errno.ToString();
            EXPECT_EQ(by_errno.GetRetryable(), r.retryable) << by_errno.ToString();
        }
    }
    EXPECT_EQ(io_status_of("fdatasync", "/db/000004.log", ENOSPC).ToString(),
              "IO error: No space left on device: While fdatasync: /db/000004.log: No space left on device");
}

TEST(RocksdbWzeroFs, CrashLeavesAZeroTailThatRecoverySkips) {
    const auto dir = scratch("crash");
    write_and_die(dir, 0, 300, 0, 0);
    const auto logs = wals(dir);
    ASSERT_EQ(logs.size(), 1u);
    struct ::stat st {};
    ASSERT_EQ(::stat(logs[0].c_str(), &st), 0);
    auto caps = wz::stat(logs[0]);
    ASSERT_TRUE(caps.has_value());
    if (!caps->fs || (caps->fs->type != "ext4" && caps->fs->type != "xfs")) {
        GTEST_SKIP() << "the build tree is on " << (caps->fs ? caps->fs->type : "?") << ": the plugin leaves it alone";
    }
    // 300 records of ~130 bytes; the file is the preallocated block, written extents throughout.
    EXPECT_GE(st.st_size, 4 << 20);
    EXPECT_EQ(not_written_extents(logs[0]), 0);
    expect_keys(dir, 300, 0, rdb::WALRecoveryMode::kAbsoluteConsistency);
}

// Recycled logs, closed cleanly. RocksDB 7.8.3 recycles only under kSkipAnyCorruptedRecords
// (the writer sets it), and there its log::Reader loops for ever on the first record of an
// older log (kOldRecord falls through to kBadRecord without consuming the record), so a
// recycled log left by a process death cannot be recovered with RocksDB's own file system
// either (wz_rocksdb_ackwriter ... posix, then a reopen: hangs). Not tested here for that reason.
TEST(RocksdbWzeroFs, RecycledLogsReopen) {
    const auto dir = scratch("recycle");
    write_and_die(dir, 0, 400, 4, 100, "wzero close");  // four memtable flushes: logs recycled
    expect_keys(dir, 400, 4, rdb::WALRecoveryMode::kSkipAnyCorruptedRecords);
    write_and_die(dir, 400, 200, 4, 50, "wzero close");
    expect_keys(dir, 600, 4, rdb::WALRecoveryMode::kSkipAnyCorruptedRecords);
}

TEST(RocksdbWzeroFs, CloseCutsTheTailOff) {
    const auto dir = scratch("close");
    db_env e;
    rdb::DB* db = nullptr;
    ASSERT_TRUE(rdb::DB::Open(options_on(e.env.get(), 0), dir, &db).ok());
    rdb::WriteOptions w;
    w.sync = true;
    for (int i = 0; i < 50; ++i) {
        ASSERT_TRUE(db->Put(w, key(i), "v").ok());
    }
    const auto logs = wals(dir);
    ASSERT_EQ(logs.size(), 1u);
    ASSERT_TRUE(db->Close().ok());
    delete db;
    struct ::stat st {};
    ASSERT_EQ(::stat(logs[0].c_str(), &st), 0);
    EXPECT_LT(st.st_size, 64 << 10);  // 50 small records, no zero tail
}

// The file system the scratch directory is on gets written zeroes (ext4, xfs), or the plugin
// leaves every file alone there and there is nothing to test.
bool zeroes_here(const std::string& dir) {
    fs::create_directories(dir);
    const std::string probe = dir + "/probe";
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT, 0644);
    if (fd >= 0) {
        ::close(fd);
    }
    auto caps = wz::stat(probe);
    fs::remove(probe);
    return caps && caps->fs && (caps->fs->type == "ext4" || caps->fs->type == "xfs");
}

// A process under RLIMIT_FSIZE (`ulimit -f`) below the WAL's preallocation block: the written
// zeroes fail with EFBIG, and the block is preallocated as RocksDB's own file system does it,
// fallocate(KEEP_SIZE) past the end, which the limit does not apply to. Before, the failure
// was ignored and the WAL had no preallocation at all.
TEST(RocksdbWzeroFs, PreallocationPastTheFileSizeLimitIsRocksdbsOwn) {
    const auto dir = scratch("fsize-limit");
    const auto posix_dir = scratch("fsize-limit-posix");
    if (!zeroes_here(fs::path(dir).parent_path().string())) {
        GTEST_SKIP() << "the build tree is not on ext4 or xfs: the plugin leaves it alone";
    }
    for (const auto& [d, which] : {std::pair{dir, "wzero"}, std::pair{posix_dir, "posix"}}) {
        const std::string cmd = "ulimit -f 2048 && " + std::string(WZERO_ROCKSDB_ACKWRITER) + " " + d + " 0 300 0 0 " +
                                which + " >/dev/null";
        const int st = std::system(cmd.c_str());
        ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << cmd << ": status " << st;
    }
    const auto logs = wals(dir);
    const auto posix_logs = wals(posix_dir);
    ASSERT_EQ(logs.size(), 1u);
    ASSERT_EQ(posix_logs.size(), 1u);
    struct ::stat st {}, posix_st {};
    ASSERT_EQ(::stat(logs[0].c_str(), &st), 0);
    ASSERT_EQ(::stat(posix_logs[0].c_str(), &posix_st), 0);
    EXPECT_EQ(st.st_size, posix_st.st_size) << "the WAL holds what was appended, no zero tail";
    EXPECT_LT(st.st_size, 2 << 20);
    // 4.4 MiB preallocated past the end, by both.
    EXPECT_GE(static_cast<std::uint64_t>(st.st_blocks) * 512, 4u << 20) << logs[0];
    EXPECT_GE(static_cast<std::uint64_t>(posix_st.st_blocks) * 512, 4u << 20) << posix_logs[0];
    expect_keys(dir, 300, 0, rdb::WALRecoveryMode::kAbsoluteConsistency);
}

// A recycled log that is not written extents throughout and whose re-zeroing does not fit
// (here a sparse file larger than its filesystem: ENOSPC before any write) is written as
// RocksDB's own file system would write it. Before, ReuseWritableFile failed, and with it
// RocksDB's switch to a new log.
TEST(RocksdbWzeroFs, RecycledLogThatDoesNotFitIsRocksdbsOwn) {
    const auto dir = scratch("recycle-nospace");
    fs::create_directories(dir);
    if (!zeroes_here(dir)) {
        GTEST_SKIP() << "the build tree is not on ext4 or xfs: the plugin leaves it alone";
    }
    struct ::statvfs sv {};
    ASSERT_EQ(::statvfs(dir.c_str(), &sv), 0);
    const std::uint64_t fs_bytes = static_cast<std::uint64_t>(sv.f_blocks) * sv.f_frsize;
    const std::uint64_t size = 2 * fs_bytes;
    if (size > (std::uint64_t{8} << 40)) {
        GTEST_SKIP() << "a filesystem of " << fs_bytes << " bytes: no sparse file twice as large fits ext4's limit";
    }
    const std::string old_log = dir + "/000003.log";
    const std::string new_log = dir + "/000005.log";
    {
        const int fd = ::open(old_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(size)), 0);
        ::close(fd);
    }
    wzero_file_system wfs(rdb::FileSystem::Default());
    std::unique_ptr<rdb::FSWritableFile> file;
    const auto s = wfs.ReuseWritableFile(new_log, old_log, rdb::FileOptions(), &file, nullptr);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_TRUE(file->Append("a record", rdb::IOOptions(), nullptr).ok());
    ASSERT_TRUE(file->Sync(rdb::IOOptions(), nullptr).ok());
    ASSERT_TRUE(file->Close(rdb::IOOptions(), nullptr).ok());
    std::string head(8, '\0');
    const int fd = ::open(new_log.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(::pread(fd, head.data(), head.size(), 0), 8);
    ::close(fd);
    EXPECT_EQ(head, "a record");
    fs::remove_all(dir);
}

}  // namespace
}  // namespace wz::rocksdb_plugin
