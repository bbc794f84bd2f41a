// SPDX-License-Identifier: MIT
// wz::verify() and the zero check behind it (see verify.hpp).

#include "verify/verify.hpp"

#include "extent/fiemap.hpp"
#include "probe/file_kind.hpp"
#include "target/target.hpp"
#include "util/aligned_buffer.hpp"
#include "util/errors.hpp"
#include "util/reopen.hpp"
#include "util/unique_fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace wz {

namespace verify_detail {

result<std::uint64_t> current_size(int fd, const std::string& path, const capabilities& caps) {
    if (file_kind_of(caps) != file_kind::regular) {
        return caps.size_bytes;
    }
    struct ::stat st {};
    if (::fstat(fd, &st) != 0) {
        return make_error("fstat", path, errno);
    }
    return static_cast<std::uint64_t>(st.st_size);
}

status verify_range(int fd, const std::string& path, const capabilities& caps, std::uint64_t offset,
                                       std::uint64_t length, verify_mode mode, preallocate_report& rep,
                                       verify_extent_of_damage* damage) {
    if (mode == verify_mode::none) {
        return {};
    }
    const std::uint64_t end = offset + length;
    verify_extent_of_damage local;
    verify_extent_of_damage& found = damage != nullptr ? *damage : local;
    found.good_end = offset;
    auto size = current_size(fd, path, caps);
    if (!size) {
        return size.error();
    }
    found.size_bytes = *size;
    const bool regular = file_kind_of(caps) == file_kind::regular;
    if (end > *size) {
        found.missing = true;
        // pread stops at the end: what is not there must not count as zeroes read back.
        rep.verified = false;
        rep.verify_detail = fmt::format("the range ends at {}, past the end of the {} ({} bytes)", end,
                                        regular ? "file" : "device", *size);
        return make_error_msg(EINVAL, fmt::format("verify {} [offset {}, length {}]: range ends past the end of the "
                                                  "{} ({} bytes)",
                                                  path, offset, length, regular ? "file" : "device", *size));
    }
    std::string extents_detail;
    bool extents_checked = false;
    if (regular) {
        // Walked batch by batch, never collected: memory stays bounded however many extents
        // the range has (a file can have hundreds of thousands).
        extent::walker walk(fd, path, offset, length, 512, true);
        std::vector<extent::extent> batch;
        std::uint64_t extents_seen = 0;
        bool have_map = true;
        while (true) {
            auto more = walk.next(batch);
            if (!more) {
                // No FIEMAP (tmpfs, some FUSE): nothing can tell a hole from written zeroes.
                // Any other failure is a failure to verify, not a pass. FIEMAP is refused on
                // the first request or not at all, so nothing was counted as checked yet.
                const int err = more.error().code.value();
                if ((err != EOPNOTSUPP && err != ENOTTY) || extents_seen != 0) {
                    return more.error();
                }
                extents_detail = fmt::format("extents not checked: {}", more.error().message);
                have_map = false;
                break;
            }
            if (!*more) {
                break;
            }
            for (const auto& e : batch) {
                if (e.type == extent::kind::hole || e.type == extent::kind::unwritten ||
                    e.type == extent::kind::delalloc) {
                    found.good_end = e.offset;
                    found.missing = true;
                    rep.verified = false;
                    rep.verify_detail = fmt::format("{} extent at offset {}, length {}", extent::to_string(e.type),
                                                    e.offset, e.length);
                    return make_error_msg(EIO, fmt::format("verify {}: {} extent left at [offset {}, length {}]",
                                                           path, extent::to_string(e.type), e.offset, e.length));
                }
            }
            extents_seen += batch.size();
        }
        if (have_map) {
            extents_checked = true;
            extents_detail = fmt::format("{} extents, no hole or unwritten extent", extents_seen);
        }
    } else {
        extents_detail = "block device: no extents";
    }
    if (mode == verify_mode::extents) {
        // Without a map (tmpfs, FUSE) the extents prove nothing: say so rather than pass.
        if (extents_checked) {
            rep.verified = true;
            found.good_end = end;
        } else {
            rep.verified.reset();
        }
        rep.verify_detail = extents_detail;
        return {};
    }
    // Data: read the range back (O_DIRECT where possible, so the device answers).
    unique_fd rfd = reopen_self(fd, O_RDONLY | O_DIRECT | O_CLOEXEC);
    bool direct = true;
    if (!rfd) {
        rfd = reopen_self(fd, O_RDONLY | O_CLOEXEC);
        direct = false;
        if (!rfd) {
            return make_error("open for verification", path, errno);
        }
    }
    const std::uint64_t align = caps.dio && direct ? std::max<std::uint64_t>(caps.dio->offset_align, 4096) : 1;
    const std::size_t chunk = 4U << 20;
    aligned_bytes buf = aligned_buffer(chunk);
    if (!buf) {
        return make_error_msg(ENOMEM, fmt::format("read back {}: buffer of {} bytes: {}", path, chunk,
                                                  errno_text(ENOMEM)));
    }
    std::uint64_t pos = offset / align * align;
    while (pos < end) {
        std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, (end - pos + align - 1) / align * align));
        ssize_t n = ::pread(rfd.get(), buf.get(), want, static_cast<off_t>(pos));
        if (n < 0) {
            return make_error_range("read back", path, pos, want, errno);
        }
        if (n == 0) {
            // The size was checked above: the file shrank while it was read.
            auto now = current_size(fd, path, caps);
            found.good_end = std::max(pos, offset);
            found.missing = true;
            found.size_bytes = now ? *now : found.size_bytes;
            rep.verified = false;
            rep.verify_detail = fmt::format("end of file at offset {} while reading back", found.good_end);
            return make_error_msg(EIO, fmt::format("read back {} [offset {}, length {}]: end of file at offset {} "
                                                   "(size now {} bytes)",
                                                   path, pos, want, pos, found.size_bytes));
        }
        for (ssize_t i = 0; i < n; ++i) {
            const std::uint64_t at = pos + static_cast<std::uint64_t>(i);
            if (at >= offset && at < end && buf.get()[i] != 0) {
                found.good_end = at;
                rep.verified = false;
                rep.verify_detail = fmt::format("non-zero byte at offset {}", at);
                return make_error_msg(EIO, fmt::format("verify {}: non-zero byte at offset {}", path, at));
            }
        }
        pos += static_cast<std::uint64_t>(n);
        found.good_end = std::min(std::max(pos, offset), end);
    }
    const std::string read_detail =
        fmt::format("{} bytes read back as zeroes{}", length, direct ? " (O_DIRECT)" : "");
    if (regular && !extents_checked) {
        // Zeroes read back from a hole or an unwritten extent too: not a proof of written zeroes.
        found.good_end = offset;
        rep.verified.reset();
        rep.verify_detail = fmt::format("{}; {}, but holes and unwritten extents also read as zeroes",
                                        extents_detail, read_detail);
        return {};
    }
    rep.verified = true;
    rep.verify_detail = fmt::format("{}; {}", extents_detail, read_detail);
    return {};
}

status verify_path(const std::string& path, std::uint64_t offset, std::uint64_t length, verify_mode mode,
                   preallocate_report& rep) {
    rep.path = path;
    rep.offset = offset;
    rep.length = length;
    auto t = target::open_with_record(path, offset, length);
    if (!t) {
        return t.error();
    }
    auto& [fd, caps] = *t;
    rep.length = length;
    if (length == 0) {
        return make_error_msg(EINVAL, fmt::format("verify {}: empty range", path));
    }
    return verify_detail::verify_range(fd.get(), path, caps, offset, length, mode, rep);
}

}  // namespace verify_detail

}  // namespace wz
