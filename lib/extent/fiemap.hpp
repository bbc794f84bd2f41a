// SPDX-License-Identifier: MIT
#pragma once

#include <wzero/wzero.hpp>

#include <linux/fiemap.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace wz::extent {

// What a byte range of a file is backed by, as FS_IOC_FIEMAP reports it.
enum class kind { written, unwritten, hole, shared, encoded, encrypted, inline_data, delalloc, unknown };
[[nodiscard]] const char* to_string(kind k) noexcept;  // the enumerator's name: "inline_data"

// Classification of one FIEMAP extent's flags. The most restrictive meaning wins, because a
// caller that zeroes through the block device must not touch data it cannot address safely:
// DELALLOC -> delalloc; UNKNOWN -> unknown; DATA_ENCRYPTED -> encrypted; ENCODED -> encoded;
// DATA_INLINE, DATA_TAIL or NOT_ALIGNED -> inline_data; SHARED -> shared; UNWRITTEN ->
// unwritten; else written. DELALLOC is tested before UNKNOWN since the kernel always sets
// UNKNOWN along with DELALLOC (linux/fiemap.h), which would otherwise hide it.
[[nodiscard]] kind classify(std::uint32_t fiemap_flags) noexcept;

struct extent {
    std::uint64_t offset = 0;  // file offset, bytes (clipped to the requested range)
    std::uint64_t length = 0;  // bytes
    // Bytes from the start of the filesystem's block device (partition-relative), clipped like
    // offset. nullopt for holes and wherever the file offset does not map linearly to a
    // device address: UNKNOWN/DELALLOC (no location yet), ENCODED (compressed), DATA_INLINE
    // (data inside a metadata block), and where the kernel's device range would run past 2^64.
    std::optional<std::uint64_t> physical;
    kind type = kind::hole;
    // Raw FIEMAP_EXTENT_* flags (0 for holes). FIEMAP_EXTENT_LAST is as the kernel set it for
    // the request: with iomap (ext4, xfs) the last extent inside the requested range has it,
    // even when the file goes on.
    std::uint32_t flags = 0;
};

// Walks [offset, offset + length) of an open file with FS_IOC_FIEMAP, `batch_extents` extents
// per ioctl, so memory stays bounded for files with millions of extents. Yields extents in
// file order, clipped to the range, with holes synthesized between and after them: the range
// is covered exactly once (the lengths add up to `length`). Extents are reported as the
// filesystem splits them; adjacent ones are not merged.
class walker {
public:
    // Extents per FIEMAP ioctl unless the caller says otherwise: 512 of 56 bytes, 28 KiB.
    static constexpr std::uint32_t default_batch = 512;

    // `path` names the file in error messages. `sync` sets FIEMAP_FLAG_SYNC on the first
    // request, so that delayed allocations are resolved before they are mapped.
    walker(int fd, std::string path, std::uint64_t offset, std::uint64_t length,
           std::uint32_t batch_extents = default_batch, bool sync = false);

    // Fills `out` (cleared first) with the next extents: true while it hands out extents,
    // false once the range is exhausted. FIEMAP failing is an error naming the path and range.
    result<bool> next(std::vector<extent>& out);

private:
    result<bool> fetch_batch(std::vector<extent>& out);

    int fd_;
    std::string path_;
    std::uint64_t offset_;
    std::uint64_t length_;
    std::uint64_t end_;
    std::uint64_t cursor_;  // everything before it has been handed out
    std::uint32_t batch_extents_;
    bool sync_;
    bool finished_ = false;
    std::vector<std::byte> request_;  // struct fiemap + batch_extents_ struct fiemap_extent
};

namespace detail {

enum class batch_outcome { more, done, stalled };

// The ioctl-free half of walker::next(), separate so that kernel answers a test filesystem
// does not produce (straddling, unsorted, short, stalled) can be tested: applies one
// FS_IOC_FIEMAP answer for the request [cursor, end) to the walk. Appends the extents past
// `cursor` (clipped, holes synthesized) to `out` and advances `cursor`. `full` means the
// answer used every slot of the request, so more extents may follow. `done`: [cursor, end)
// is now covered, trailing hole included; `stalled`: a full answer that did not advance.
batch_outcome apply_fiemap_batch(std::span<const fiemap_extent> answer, bool full, std::uint64_t& cursor,
                                 std::uint64_t end, std::vector<extent>& out);

}  // namespace detail

// The whole range in one vector (small files, tests).
[[nodiscard]] result<std::vector<extent>> map_range(int fd, const std::string& path, std::uint64_t offset,
                                                    std::uint64_t length, bool sync = false);

// Device LBA of a partition-relative physical byte offset: (physical + partition_start_bytes)
// / lba_bytes. nullopt when that byte is not on an LBA boundary (or lba_bytes is 0, or the sum
// overflows): a partial LBA cannot be addressed by a block command.
[[nodiscard]] std::optional<std::uint64_t> to_lba(std::uint64_t physical, std::uint64_t partition_start_bytes,
                                                  std::uint32_t lba_bytes) noexcept;

}  // namespace wz::extent
