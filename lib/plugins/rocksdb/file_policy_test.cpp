// SPDX-License-Identifier: MIT
#include "file_policy.hpp"

#include <gtest/gtest.h>

#include <cerrno>

#include <string>
#include <vector>

namespace wz::rocksdb_plugin {
namespace {

TEST(RocksdbFilePolicy, ClassifiesByRocksdbsOwnNames) {
    const struct {
        const char* path;
        file_role role;
    } rows[] = {
        {"/var/lib/db/000012.log", file_role::wal},
        {"000012.log", file_role::wal},
        {"/wal_dir/000000000123.log", file_role::wal},
        {"/var/lib/db/archive/000012.log", file_role::wal},
        {"/var/lib/db/MANIFEST-000005", file_role::manifest},
        {"MANIFEST-000001", file_role::manifest},
        {"/var/lib/db/000007.sst", file_role::table},
        {"/var/lib/db/000007.ldb", file_role::table},
        {"/var/lib/db/000009.blob", file_role::blob},
        {"/var/lib/db/CURRENT", file_role::other},
        {"/var/lib/db/LOCK", file_role::other},
        {"/var/lib/db/IDENTITY", file_role::other},
        {"/var/lib/db/OPTIONS-000011", file_role::other},
        {"/var/lib/db/OPTIONS-000011.dbtmp", file_role::other},
        {"/var/lib/db/000004.dbtmp", file_role::other},
        {"/var/lib/db/LOG", file_role::other},
        {"/var/lib/db/LOG.old.1690000000123456", file_role::other},
        // Names that only look like a WAL or a MANIFEST.
        {"/var/lib/db/wal.log", file_role::other},
        {"/var/lib/db/12.log.1", file_role::other},
        {"/var/lib/db/MANIFEST-", file_role::other},
        {"/var/lib/db/MANIFEST", file_role::other},
        {"/var/lib/db/manifest-000005", file_role::other},
        {"/var/lib/db/000012.LOG", file_role::other},
        {"/var/lib/db/", file_role::other},
        {"", file_role::other},
    };
    for (const auto& r : rows) {
        EXPECT_EQ(classify(r.path), r.role) << r.path;
    }
}

storage_facts facts(const char* fs, bool cow, bool data_journal, std::optional<bool> flush_needed) {
    storage_facts f;
    f.fs_type = fs;
    f.cow = cow;
    f.data_journal = data_journal;
    f.flush_needed = flush_needed;
    return f;
}

TEST(RocksdbFilePolicy, DecisionTable) {
    const struct {
        file_role role;
        std::optional<storage_facts> facts;
        prealloc_route prealloc;
        sync_route sync;
    } rows[] = {
        // Only the WAL and the MANIFEST are touched.
        {file_role::table, facts("ext4", false, false, false), prealloc_route::wrapped, sync_route::wrapped},
        {file_role::blob, facts("xfs", false, false, false), prealloc_route::wrapped, sync_route::wrapped},
        {file_role::other, facts("xfs", false, false, false), prealloc_route::wrapped, sync_route::wrapped},
        // No record, copy-on-write, filesystems not confirmed in place: left alone.
        {file_role::wal, std::nullopt, prealloc_route::wrapped, sync_route::wrapped},
        {file_role::wal, facts("btrfs", true, false, false), prealloc_route::wrapped, sync_route::wrapped},
        {file_role::wal, facts("tmpfs", false, false, false), prealloc_route::wrapped, sync_route::wrapped},
        {file_role::manifest, facts("", false, false, false), prealloc_route::wrapped, sync_route::wrapped},
        // ext4 and xfs: written zeroes; a flush is skipped only where the device writes through.
        {file_role::wal, facts("ext4", false, false, true), prealloc_route::written_zeroes, sync_route::wrapped},
        {file_role::wal, facts("xfs", false, false, true), prealloc_route::written_zeroes, sync_route::wrapped},
        {file_role::wal, facts("ext4", false, false, std::nullopt), prealloc_route::written_zeroes,
         sync_route::wrapped},
        {file_role::wal, facts("ext4", false, false, false), prealloc_route::written_zeroes,
         sync_route::writeback_only},
        {file_role::manifest, facts("xfs", false, false, false), prealloc_route::written_zeroes,
         sync_route::writeback_only},
        // data=journal: data goes through the journal, writeback alone does not commit it.
        {file_role::wal, facts("ext4", false, true, false), prealloc_route::written_zeroes, sync_route::wrapped},
    };
    for (const auto& r : rows) {
        const auto p = decide(r.role, r.facts);
        const std::string what = std::string(to_string(r.role)) + " on " + (r.facts ? r.facts->fs_type : "?");
        EXPECT_EQ(p.role, r.role) << what;
        EXPECT_EQ(p.prealloc, r.prealloc) << what << ": " << p.reason;
        EXPECT_EQ(p.sync_inside, r.sync) << what << ": " << p.reason;
        EXPECT_FALSE(p.reason.empty()) << what;
    }
}

TEST(RocksdbFilePolicy, SyncSkipsTheFlushOnlyInsideTheDurableWrittenSize) {
    const auto through = decide(file_role::wal, facts("xfs", false, false, false));
    EXPECT_EQ(route_for_sync(through, 0, 0), sync_route::writeback_only);
    EXPECT_EQ(route_for_sync(through, 4096, 1 << 20), sync_route::writeback_only);
    EXPECT_EQ(route_for_sync(through, 1 << 20, 1 << 20), sync_route::writeback_only);
    // One byte past the durable size: the size must be committed, fdatasync does it.
    EXPECT_EQ(route_for_sync(through, (1 << 20) + 1, 1 << 20), sync_route::wrapped);
    const auto back = decide(file_role::wal, facts("ext4", false, false, true));
    EXPECT_EQ(route_for_sync(back, 4096, 1 << 20), sync_route::wrapped);
    const auto sst = decide(file_role::table, facts("xfs", false, false, false));
    EXPECT_EQ(route_for_sync(sst, 0, 1 << 20), sync_route::wrapped);
}

TEST(RocksdbFilePolicy, ZeroSpans) {
    constexpr std::uint64_t k4 = 4096;
    // db_bench's WAL preallocation block: write_buffer_size * 1.1 = 73819750, not page aligned.
    constexpr std::uint64_t wal_block = 67108864 + 67108864 / 10;
    const struct {
        std::uint64_t zeroed, appended, want, block;
        std::optional<zero_span> span;
    } rows[] = {
        {0, 0, wal_block, k4, zero_span{0, 18023 * k4}},
        // The second block: from where the first ended, never over appended bytes.
        {18023 * k4, wal_block + 100, 2 * wal_block, k4, zero_span{18023 * k4, 36045 * k4 - 18023 * k4}},
        // Appended past what was zeroed (a failed zeroing): start after the last appended block.
        {0, 10000, 20000, k4, zero_span{3 * k4, 2 * k4}},
        // A recycled file: the old content stays, zeroing starts after it.
        {250001, 0, wal_block, k4, zero_span{62 * k4, 18023 * k4 - 62 * k4}},
        {0, 0, 1, k4, zero_span{0, k4}},
        {0, 0, 100, 65536, zero_span{0, 65536}},
        // Nothing left to do.
        {k4, 0, k4, k4, std::nullopt},
        {8 * k4, 0, 5 * k4, k4, std::nullopt},
        {0, 5000, 6000, k4, std::nullopt},   // inside the last appended block
        {0, 0, 0, k4, std::nullopt},
        {0, 0, k4, 0, std::nullopt},
    };
    for (const auto& r : rows) {
        const auto got = next_zero_span(r.zeroed, r.appended, r.want, r.block);
        EXPECT_EQ(got, r.span) << "zeroed " << r.zeroed << " appended " << r.appended << " want " << r.want << " block "
                               << r.block << ": got " << (got ? std::to_string(got->offset) + "+" +
                                                                    std::to_string(got->length)
                                                              : std::string("none"));
    }
}

// No space, no quota, past the file size limit: the zeroes do not fit, and RocksDB's own
// preallocation takes over. Anything else is an error of the file.
TEST(RocksdbFilePolicy, PreallocationGivesWayOnlyWhereTheZeroesDoNotFit) {
    EXPECT_TRUE(prealloc_gives_way(ENOSPC));
    EXPECT_TRUE(prealloc_gives_way(EDQUOT));
    EXPECT_TRUE(prealloc_gives_way(EFBIG));
    for (const int err : {0, EIO, EROFS, EBADF, EINVAL, EOPNOTSUPP, EBUSY, ENOMEM}) {
        EXPECT_FALSE(prealloc_gives_way(err)) << err;
    }
}

}  // namespace
}  // namespace wz::rocksdb_plugin
