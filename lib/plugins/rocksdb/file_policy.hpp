// SPDX-License-Identifier: MIT
// What the wzero RocksDB FileSystem does with each file: pure decisions, unit-tested
// (file_policy_test.cpp) without a database or a device.
//
// Which files: RocksDB's own file-name parser (rocksdb::ParseFileName, exported by
// librocksdb) on the base name. Only the write-ahead log (NNNNNN.log) and the MANIFEST-NNNNNN
// are changed; SST, blob, OPTIONS, CURRENT, LOCK, IDENTITY, info logs and temporaries go to
// the default file system untouched.
//
// Preallocation (PrepareWrite / Allocate). RocksDB's POSIX file system preallocates the WAL
// and the MANIFEST with fallocate(FALLOC_FL_KEEP_SIZE): unwritten extents beyond the end of
// the file, so each fdatasync after an append also commits the conversion of the extent
// and the new size (a journal commit on ext4 and xfs). Here the same ranges are written
// zeroes (wz::zero_range, durable on return) and the file size grows with them. The size
// cannot stay behind: written blocks past the end of a file do not exist on ext4 or xfs
// (truncate frees them). What that changes for readers, checked against log_reader.cc:
//   - a crash leaves a zero tail after the last record. log::Reader skips a header of zeroes
//     (type kZeroType, length 0) without reporting a drop, the rest of its 32 KiB block at a
//     time, to the end of the file: the case RocksDB keeps for mmap writes, which preallocate
//     the same way (io_posix.cc PosixMmapFile: "the reading code knows enough to skip zero
//     suffixes"). Recovery in every WALRecoveryMode reads the same records as without the
//     tail; a torn last record is reported as RocksDB reports it today.
//   - Close() cuts the file back to what was appended (ftruncate), as PosixWritableFile does
//     after its own preallocation: closed WALs and MANIFESTs have their exact sizes.
//   - a reader that tails a live WAL or MANIFEST (a secondary instance, GetUpdatesSince on
//     the current log) skips the zeroed blocks ahead of the writer and would miss records
//     appended there later. RocksDB says the same of its own fallocate_with_keep_size=false
//     (PosixFileSystem::OptimizeForLogWrite). Do not use this file system under such readers.
// Where the written zeroes do not fit (ENOSPC, EDQUOT, EFBIG: prealloc_gives_way), the same
// range goes to the default file system's Allocate, fallocate(KEEP_SIZE), as without this
// file system: its blocks (a part, near full) are then the ones the appends use, so that no
// append fails that RocksDB's own file system would have taken. PrepareWrite ignores that
// result too, and the next preallocation block tries written zeroes again; Close releases
// what KEEP_SIZE left past the end, as PosixWritableFile::Close does.
// Copy-on-write filesystems gain nothing from written extents, and filesystems other than
// ext4 and xfs are not confirmed to overwrite in place: there the wrapped file is left alone.
//
// Recycling (ReuseWritableFile, recycle_log_file_num > 0). RocksDB renames an old WAL and
// writes the new log from offset 0 over the old records. The recyclable record format carries
// the log number in every header, so log::Reader reports an old record as kOldRecord, the
// end of the log: the old content is harmless and zeroing it would cost a write of the whole
// file per log switch for nothing. So the old content is kept; only a file that is not
// written extents all through (made by another file system, or punched) is made so with
// wz::rezero once, before RocksDB writes to it. Where that does not fit (prealloc_gives_way),
// the file is left to the default file system, as RocksDB's own would use it.
//
// Sync (the decision table; Fsync, RangeSync and every other file type: the wrapped call).
// RocksDB appends through the page cache (the WAL and the MANIFEST are never direct I/O), so
// a sync must write dirty pages out; the kernel's writeback cannot carry FUA.
//   file   record                                     appended bytes   Sync
//   WAL,   in place (ext4, xfs without data=journal),  all below the    sync_file_range(WAIT_
//   MANI-  extents written by us, the device           durable written  BEFORE|WRITE|WAIT_AFTER):
//   FEST   write-through (cache.flush_needed false:    size             the pages reach the
//          the writer's `through` mode)                                 device, no flush
//   WAL,   the same but a write-back cache (the        any              fdatasync (wrapped): no
//   MANI-  writer's `fua` or `flush` mode)                              journal commit, one flush
//   FEST
//   any    anything else (beyond the durable size,     any              wrapped Sync: fdatasync
//          CoW, other fs, data=journal, unknown cache)
// sync_file_range with all three flags is WB_SYNC_ALL writeback of the range (Linux 5.2+,
// fs/sync.c) and, with no size change and no extent conversion pending, nothing else is
// needed for the data to be readable after power loss on a write-through device. The record
// of the open says write-through; Set Features FID 06h, a vendor tool or a controller reset
// can make that false later without Linux noticing, so after each sync_file_range the cache
// is asked again (wz::write_cache, an answer at most wz::default_cache_max_age old, read again
// when older): anything but write-through makes that Sync, and every later one of the file,
// the wrapped fdatasync. RocksDB's
// write group already shares one sync among concurrent writers (its group commit).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace wz::rocksdb_plugin {

enum class file_role {
    wal,       // NNNNNN.log (also under wal_dir or archive/)
    manifest,  // MANIFEST-NNNNNN
    table,     // NNNNNN.sst, NNNNNN.ldb
    blob,      // NNNNNN.blob
    other,     // CURRENT, LOCK, IDENTITY, OPTIONS-N, LOG, LOG.old.N, N.dbtmp, anything else
};
[[nodiscard]] const char* to_string(file_role r) noexcept;

// The role of a file RocksDB opens, by its path (RocksDB's parser on the base name).
[[nodiscard]] file_role classify(std::string_view path);

// Facts about the file's storage, from wz::stat on the open file.
struct storage_facts {
    std::string fs_type;                 // "ext4", "xfs", "btrfs", "tmpfs", ...
    bool cow = false;                    // data copy-on-write for this file
    bool data_journal = false;           // ext4 mounted data=journal
    std::optional<bool> flush_needed;    // cache.flush_needed: does durability need a flush?
};

enum class prealloc_route {
    wrapped,        // the default file system's fallocate(KEEP_SIZE), or nothing
    written_zeroes  // wz::zero_range: written zeroes, the size grows
};
enum class sync_route {
    wrapped,        // the default file system's Sync: fdatasync
    writeback_only  // sync_file_range(WAIT_BEFORE|WRITE|WAIT_AFTER): no flush
};

struct file_policy {
    file_role role = file_role::other;
    prealloc_route prealloc = prealloc_route::wrapped;
    // Sync while every appended byte lies below the durable written size.
    sync_route sync_inside = sync_route::wrapped;
    std::string reason;  // one line: why, for WZERO_ROCKSDB_VERBOSE
};

// The policy for a file of ROLE on storage FACTS (nullopt: wz::stat failed: wrapped).
[[nodiscard]] file_policy decide(file_role role, const std::optional<storage_facts>& facts);

// The route of one Sync call: POLICY's sync_inside while the bytes RocksDB appended lie
// inside the durable written zeroes, the wrapped call otherwise.
[[nodiscard]] sync_route route_for_sync(const file_policy& policy, std::uint64_t appended_end,
                                        std::uint64_t durable_end) noexcept;

// The range to zero so that [0, want_end) is written zeroes, given that [0, zeroed_end) is
// and that RocksDB has appended [0, appended_end) (never zeroed over). Starts on a BLOCK
// boundary at or after both (the block holding the last appended byte is already a written
// block), ends at want_end rounded up to BLOCK. Empty (nullopt) when nothing is left.
struct zero_span {
    std::uint64_t offset = 0, length = 0;
    friend bool operator==(const zero_span&, const zero_span&) = default;
};
[[nodiscard]] std::optional<zero_span> next_zero_span(std::uint64_t zeroed_end, std::uint64_t appended_end,
                                                      std::uint64_t want_end, std::uint64_t block) noexcept;

// Whether written zeroes that failed with ERR (an errno) give way to what RocksDB's own file
// system does: ENOSPC, EDQUOT and EFBIG say that the zeroes do not fit (the filesystem, the
// quota, the file size limit), not that the file cannot be written. Any other error is one.
[[nodiscard]] bool prealloc_gives_way(int err) noexcept;

}  // namespace wz::rocksdb_plugin
