// SPDX-License-Identifier: MIT
#include "file_policy.hpp"

#include <cerrno>

#include <rocksdb/transaction_log.h>
#include <rocksdb/types.h>

namespace ROCKSDB_NAMESPACE {
// RocksDB's file-name parser (file/filename.h, not installed by librocksdb-dev but exported
// by librocksdb.so since 2013 with this signature): the one that decides, inside RocksDB,
// which file is a WAL and which a MANIFEST. Declared here rather than reimplemented so the
// two can never disagree; a changed signature is a link error, not a silent mismatch.
bool ParseFileName(const std::string& filename, uint64_t* number, FileType* type, WalFileType* log_type);
}  // namespace ROCKSDB_NAMESPACE

namespace wz::rocksdb_plugin {

const char* to_string(file_role r) noexcept {
    switch (r) {
    case file_role::wal:
        return "WAL";
    case file_role::manifest:
        return "MANIFEST";
    case file_role::table:
        return "SST";
    case file_role::blob:
        return "blob";
    case file_role::other:
        return "other";
    }
    return "other";
}

file_role classify(std::string_view path) {
    const auto slash = path.rfind('/');
    const std::string base(slash == std::string_view::npos ? path : path.substr(slash + 1));
    std::uint64_t number = 0;
    ROCKSDB_NAMESPACE::FileType type{};
    ROCKSDB_NAMESPACE::WalFileType wal_type{};
    if (base.empty() || !ROCKSDB_NAMESPACE::ParseFileName(base, &number, &type, &wal_type)) {
        return file_role::other;
    }
    switch (type) {
    case ROCKSDB_NAMESPACE::kWalFile:
        return file_role::wal;
    case ROCKSDB_NAMESPACE::kDescriptorFile:
        return file_role::manifest;
    case ROCKSDB_NAMESPACE::kTableFile:
        return file_role::table;
    case ROCKSDB_NAMESPACE::kBlobFile:
        return file_role::blob;
    default:
        return file_role::other;
    }
}

file_policy decide(file_role role, const std::optional<storage_facts>& facts) {
    file_policy p;
    p.role = role;
    if (role != file_role::wal && role != file_role::manifest) {
        p.reason = "not a WAL or MANIFEST: the default file system's calls";
        return p;
    }
    if (!facts) {
        p.reason = "no capability record for the file: the default file system's calls";
        return p;
    }
    if (facts->cow) {
        p.reason = facts->fs_type + " is copy-on-write here: written extents gain nothing";
        return p;
    }
    if (facts->fs_type != "ext4" && facts->fs_type != "xfs") {
        p.reason = (facts->fs_type.empty() ? std::string("no filesystem") : facts->fs_type) +
                   ": in-place overwrites of written extents not confirmed";
        return p;
    }
    p.prealloc = prealloc_route::written_zeroes;
    if (facts->data_journal) {
        p.reason = "written zeroes; Sync is fdatasync: data=journal puts the data through the journal";
    } else if (!facts->flush_needed.has_value()) {
        p.reason = "written zeroes; Sync is fdatasync: the device's write cache is not known";
    } else if (*facts->flush_needed) {
        p.reason = "written zeroes; Sync is fdatasync: write-back cache (one flush, no journal commit)";
    } else {
        p.sync_inside = sync_route::writeback_only;
        p.reason = "written zeroes; Sync is writeback without a flush inside them: write-through device";
    }
    return p;
}

sync_route route_for_sync(const file_policy& policy, std::uint64_t appended_end, std::uint64_t durable_end) noexcept {
    if (policy.prealloc != prealloc_route::written_zeroes || appended_end > durable_end) {
        return sync_route::wrapped;
    }
    return policy.sync_inside;
}

std::optional<zero_span> next_zero_span(std::uint64_t zeroed_end, std::uint64_t appended_end, std::uint64_t want_end,
                                        std::uint64_t block) noexcept {
    if (block == 0) {
        return std::nullopt;
    }
    const auto round_up = [block](std::uint64_t v) { return (v + block - 1) / block * block; };
    const std::uint64_t start = round_up(zeroed_end > appended_end ? zeroed_end : appended_end);
    const std::uint64_t end = round_up(want_end);
    if (end <= start || want_end <= zeroed_end) {
        return std::nullopt;
    }
    return zero_span{start, end - start};
}

bool prealloc_gives_way(int err) noexcept {
    return err == ENOSPC || err == EDQUOT || err == EFBIG;
}

}  // namespace wz::rocksdb_plugin
