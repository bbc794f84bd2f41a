// SPDX-License-Identifier: MIT
// The write log of Linux's dm-log-writes target and QEMU's blklogwrites block driver (the same
// format, little-endian, packed; xfstests' src/log-writes reads it too):
//
//   sector 0:        struct log_write_super { u64 magic; u64 version; u64 nr_entries;
//                                             u32 sectorsize; }
//   then per entry:  one log sector holding struct log_write_entry { u64 sector;
//                    u64 nr_sectors; u64 flags; u64 data_len; }, the rest of that sector zero
//                    (a mark's name instead, data_len bytes), followed by nr_sectors data
//                    sectors for a write (none for a flush, a discard or a mark). A flush
//                    entry with sectors is dm-log-writes' REQ_PREFLUSH write: the flush
//                    comes first, then the write.
//
// `sector` and `nr_sectors` count in log sectors (sectorsize bytes), not in the device's LBAs.
// The superblock's nr_entries is rewritten only at flushes and every N entries (QEMU: N is
// log-super-update-interval, 4096 by default; dm-log-writes: at every flush), so a log that
// ended cleanly may hold more entries than it counts: parse_log() reads on past nr_entries
// until the end of the log, an all-zero entry sector, or an entry that is not well formed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace wzt {

inline constexpr std::uint64_t log_magic = 0x6a736677736872ULL;
inline constexpr std::uint64_t log_version = 1;
inline constexpr std::uint64_t log_flush = 1;
inline constexpr std::uint64_t log_fua = 2;
inline constexpr std::uint64_t log_discard = 4;
inline constexpr std::uint64_t log_mark = 8;
inline constexpr std::uint64_t log_metadata = 16;
inline constexpr std::uint64_t log_known_flags = log_flush | log_fua | log_discard | log_mark | log_metadata;

struct log_entry {
    std::uint64_t sector = 0;      // first sector, in log sectors
    std::uint64_t nr_sectors = 0;  // length, in log sectors
    std::uint64_t flags = 0;
    std::uint64_t data = 0;        // byte offset of a write's data in the log (0: none)
    std::string mark;              // a mark's name

    [[nodiscard]] bool is_write() const { return (flags & (log_discard | log_mark)) == 0 && nr_sectors != 0; }
    [[nodiscard]] bool is_flush() const { return (flags & log_flush) != 0; }
    [[nodiscard]] bool is_discard() const { return (flags & log_discard) != 0; }
};

struct parsed_log {
    std::uint32_t sector_size = 0;
    std::uint64_t nr_entries = 0;  // what the superblock counts
    std::vector<log_entry> entries;
    std::string error;  // empty when the whole log is well formed; else why parsing stopped
};

// Parses the log held in [data, data + size). device_sectors, when not 0, is the device's size
// in log sectors: an entry reaching past it is not well formed. Never reads outside the
// buffer; a malformed log gives the entries before the fault and the reason in `error`.
parsed_log parse_log(const unsigned char* data, std::size_t size, std::uint64_t device_sectors = 0);

}  // namespace wzt
