// SPDX-License-Identifier: MIT
#include "extent/fiemap.hpp"

#include "util/errors.hpp"

#include <linux/fs.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

namespace wz::extent {

namespace {

constexpr std::uint64_t max_u64 = std::numeric_limits<std::uint64_t>::max();

// Flags under which fe_physical is not the device address of fe_logical, byte for byte.
constexpr std::uint32_t non_linear_flags =
    FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_DATA_INLINE;

}  // namespace

const char* to_string(kind k) noexcept {
    switch (k) {
    case kind::written: return "written";
    case kind::unwritten: return "unwritten";
    case kind::hole: return "hole";
    case kind::shared: return "shared";
    case kind::encoded: return "encoded";
    case kind::encrypted: return "encrypted";
    case kind::inline_data: return "inline_data";
    case kind::delalloc: return "delalloc";
    case kind::unknown: return "unknown";
    }
    return "unknown";
}

kind classify(std::uint32_t fiemap_flags) noexcept {
    if ((fiemap_flags & FIEMAP_EXTENT_DELALLOC) != 0) {
        return kind::delalloc;
    }
    if ((fiemap_flags & FIEMAP_EXTENT_UNKNOWN) != 0) {
        return kind::unknown;
    }
    if ((fiemap_flags & FIEMAP_EXTENT_DATA_ENCRYPTED) != 0) {
        return kind::encrypted;
    }
    if ((fiemap_flags & FIEMAP_EXTENT_ENCODED) != 0) {
        return kind::encoded;
    }
    if ((fiemap_flags & (FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_DATA_TAIL | FIEMAP_EXTENT_NOT_ALIGNED)) != 0) {
        return kind::inline_data;
    }
    if ((fiemap_flags & FIEMAP_EXTENT_SHARED) != 0) {
        return kind::shared;
    }
    if ((fiemap_flags & FIEMAP_EXTENT_UNWRITTEN) != 0) {
        return kind::unwritten;
    }
    return kind::written;
}

walker::walker(int fd, std::string path, std::uint64_t offset, std::uint64_t length, std::uint32_t batch_extents,
               bool sync)
    : fd_(fd),
      path_(std::move(path)),
      offset_(offset),
      length_(length),
      end_(offset + length),
      cursor_(offset),
      // fm_extent_count == 0 only counts extents: at least one slot to make progress.
      batch_extents_(std::max<std::uint32_t>(batch_extents, 1)),
      sync_(sync) {}

result<bool> walker::next(std::vector<extent>& out) {
    out.clear();
    if (finished_) {
        return false;
    }
    if (length_ > max_u64 - offset_) {
        finished_ = true;
        return make_error_range("FIEMAP", path_, offset_, length_, EINVAL);
    }
    if (cursor_ == end_) {
        finished_ = true;
        return false;
    }
    return fetch_batch(out);
}

result<bool> walker::fetch_batch(std::vector<extent>& out) {
    if (request_.empty()) {
        request_.resize(sizeof(fiemap) + std::size_t{batch_extents_} * sizeof(fiemap_extent));
    }
    std::memset(request_.data(), 0, request_.size());
    // operator new aligns the buffer for any fundamental type, enough for struct fiemap.
    auto* map = reinterpret_cast<fiemap*>(request_.data());
    map->fm_start = cursor_;
    map->fm_length = end_ - cursor_;
    // SYNC flushes the whole file (filemap_write_and_wait): once per walk is enough.
    map->fm_flags = sync_ && cursor_ == offset_ ? FIEMAP_FLAG_SYNC : 0;
    map->fm_extent_count = batch_extents_;
    int rc = 0;
    do {
        rc = ::ioctl(fd_, FS_IOC_FIEMAP, map);
    } while (rc < 0 && errno == EINTR);
    if (rc < 0) {
        const int err = errno;
        finished_ = true;
        return make_error_range("FIEMAP", path_, cursor_, end_ - cursor_, err);
    }

    const std::uint32_t mapped = std::min(map->fm_mapped_extents, batch_extents_);
    const std::uint64_t request_start = cursor_;
    switch (detail::apply_fiemap_batch({map->fm_extents, mapped}, mapped == batch_extents_, cursor_, end_, out)) {
    case detail::batch_outcome::more:
        return true;
    case detail::batch_outcome::done:
        finished_ = true;
        return true;
    case detail::batch_outcome::stalled:
        break;
    }
    // Asking again from the same offset would return the same answer forever.
    finished_ = true;
    return make_error_range("FIEMAP (no progress)", path_, request_start, end_ - request_start, EIO);
}

namespace detail {

namespace {

void add_hole_until(std::vector<extent>& out, std::uint64_t& cursor, std::uint64_t until) {
    if (until > cursor) {
        out.push_back(extent{cursor, until - cursor, std::nullopt, kind::hole, 0});
        cursor = until;
    }
}

}  // namespace

batch_outcome apply_fiemap_batch(std::span<const fiemap_extent> answer, bool full, std::uint64_t& cursor,
                                 std::uint64_t end, std::vector<extent>& out) {
    const std::uint64_t request_start = cursor;
    // An empty request is covered already (walker::next never makes one; an extent over the
    // cursor would otherwise come out with length 0).
    if (cursor >= end) {
        return batch_outcome::done;
    }
    bool range_done = false;
    for (const fiemap_extent& fe : answer) {
        // __u64 is unsigned long long, std::uint64_t unsigned long: one type for std::min/max.
        const std::uint64_t logical = fe.fe_logical;
        const std::uint64_t fe_end = logical + std::min<std::uint64_t>(fe.fe_length, max_u64 - logical);
        if (logical >= end) {
            range_done = true;
            break;
        }
        // Older ext4 returns the whole extent containing fm_start (one that straddled the
        // previous request's end): only what lies past the cursor is new.
        if (fe_end > cursor && fe.fe_length != 0) {
            const std::uint64_t start = std::max(logical, cursor);
            const std::uint64_t stop = std::min(fe_end, end);
            add_hole_until(out, cursor, start);
            std::optional<std::uint64_t> physical;
            // A device range that would run past 2^64 wraps to unrelated low addresses: no
            // address at all, like the non-linear kinds.
            if ((fe.fe_flags & non_linear_flags) == 0 && fe.fe_physical <= max_u64 - (stop - logical)) {
                physical = fe.fe_physical + (start - logical);
            }
            out.push_back(extent{start, stop - start, physical, classify(fe.fe_flags), fe.fe_flags});
            cursor = stop;
        }
        // iomap sets LAST on the last extent of the requested range, older ext4 on the last of
        // the file: either way nothing more lies in [cursor, end).
        if ((fe.fe_flags & FIEMAP_EXTENT_LAST) != 0 || cursor >= end) {
            range_done = true;
            break;
        }
    }
    // A short answer means the kernel had nothing more in the request.
    if (range_done || !full) {
        add_hole_until(out, cursor, end);
        return batch_outcome::done;
    }
    return cursor == request_start ? batch_outcome::stalled : batch_outcome::more;
}

}  // namespace detail

result<std::vector<extent>> map_range(int fd, const std::string& path, std::uint64_t offset, std::uint64_t length,
                                      bool sync) {
    walker walk(fd, path, offset, length, 512, sync);
    std::vector<extent> all;
    std::vector<extent> batch;
    for (;;) {
        auto more = walk.next(batch);
        if (!more) {
            return more.error();
        }
        if (!*more) {
            return all;
        }
        all.insert(all.end(), batch.begin(), batch.end());
    }
}

std::optional<std::uint64_t> to_lba(std::uint64_t physical, std::uint64_t partition_start_bytes,
                                    std::uint32_t lba_bytes) noexcept {
    if (lba_bytes == 0 || physical > max_u64 - partition_start_bytes) {
        return std::nullopt;
    }
    const std::uint64_t device_bytes = physical + partition_start_bytes;
    if (device_bytes % lba_bytes != 0) {
        return std::nullopt;
    }
    return device_bytes / lba_bytes;
}

}  // namespace wz::extent
