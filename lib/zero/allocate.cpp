// SPDX-License-Identifier: MIT
// wz::allocate(): fallocate(2) mode 0 (posix_fallocate) with written zeroes. What
// `wzero-fallocate` does without a mode option: allocate a range and keep its data. The
// zeroing is preallocate()'s, applied to the holes and unwritten extents only.

#include "extent/fiemap.hpp"
#include "probe/file_kind.hpp"
#include "record/record.hpp"
#include "target/target.hpp"
#include "util/errors.hpp"
#include "verify/verify.hpp"
#include "zero/on_path.hpp"
#include "zero/zero.hpp"

#include <wzero/wzero.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace wz {

namespace {

constexpr std::size_t max_reported_lines = 256;

struct piece {
    std::uint64_t offset = 0, length = 0;
};

// What the range [offset, end) of the file holds: the pieces with no data in them (holes and
// unwritten extents, adjacent ones joined) and the bytes of data around them.
struct range_map {
    std::vector<piece> empty;
    std::uint64_t data_bytes = 0;
    std::string how;  // the decision line saying how it was mapped
};

void add_empty(std::vector<piece>& out, std::uint64_t offset, std::uint64_t length) {
    if (!out.empty() && out.back().offset + out.back().length == offset) {
        out.back().length += length;
    } else {
        out.push_back({offset, length});
    }
}

// Holes only, by SEEK_DATA/SEEK_HOLE: for filesystems without FIEMAP (tmpfs), which have
// no unwritten extents to find either.
result<range_map> map_by_seek(int fd, const std::string& path, std::uint64_t offset, std::uint64_t end) {
    range_map m;
    std::uint64_t pos = offset;
    while (pos < end) {
        const off_t data = ::lseek(fd, static_cast<off_t>(pos), SEEK_DATA);
        if (data < 0 && errno != ENXIO) {
            return make_error_range("lseek(SEEK_DATA)", path, pos, end - pos, errno);
        }
        const std::uint64_t data_at = data < 0 ? end : std::min<std::uint64_t>(static_cast<std::uint64_t>(data), end);
        if (data_at > pos) {
            add_empty(m.empty, pos, data_at - pos);
        }
        if (data_at >= end) {
            break;
        }
        const off_t hole = ::lseek(fd, static_cast<off_t>(data_at), SEEK_HOLE);
        if (hole < 0) {
            return make_error_range("lseek(SEEK_HOLE)", path, data_at, end - data_at, errno);
        }
        const std::uint64_t hole_at = std::min<std::uint64_t>(static_cast<std::uint64_t>(hole), end);
        m.data_bytes += hole_at - data_at;
        pos = hole_at;
    }
    m.how = "allocate: no extent map here (FIEMAP not supported): holes found with SEEK_DATA/SEEK_HOLE";
    return m;
}

// The first FIEMAP request carries FIEMAP_FLAG_SYNC: dirty pages are written back (and, on
// ext4 and xfs, their unwritten extents converted: the pages stay under writeback until the
// conversion is done) before the map is taken, so data still in the page cache is data here.
// Only holes and unwritten extents are empty; everything else (written, delalloc, shared,
// encoded, inline, unknown) holds or may hold data and is kept.
result<range_map> map_file_range(int fd, const std::string& path, std::uint64_t offset, std::uint64_t end) {
    range_map m;
    extent::walker walk(fd, path, offset, end - offset, extent::walker::default_batch, true);
    std::vector<extent::extent> batch;
    while (true) {
        auto more = walk.next(batch);
        if (!more) {
            const int err = more.error().code.value();
            if (err == EOPNOTSUPP || err == ENOTTY) {
                return map_by_seek(fd, path, offset, end);
            }
            return more.error();
        }
        if (!*more) {
            break;
        }
        for (const auto& e : batch) {
            if (e.type == extent::kind::hole || e.type == extent::kind::unwritten) {
                add_empty(m.empty, e.offset, e.length);
            } else {
                m.data_bytes += e.length;
            }
        }
    }
    m.how = "allocate: the range's map taken with FIEMAP after writing back dirty pages (FIEMAP_FLAG_SYNC)";
    return m;
}

// Adds what one preallocate() call did to the report of the whole allocate().
void merge(preallocate_report& into, const preallocate_report& part) {
    for (const auto& [m, b] : part.bytes_by_method) {
        into.bytes_by_method[m] += b;
    }
    into.bytes_done += part.bytes_done;
    into.device_commands += part.device_commands;
    if (!part.passthrough_path.empty()) {
        into.passthrough_path = part.passthrough_path;
    }
    if (!part.io_engine.empty()) {
        into.io_engine = part.io_engine;
    }
    into.flushed = into.flushed || part.flushed;
    into.copy_on_write = into.copy_on_write || part.copy_on_write;
    for (const auto& d : part.decisions) {
        if (into.decisions.size() < max_reported_lines &&
            std::find(into.decisions.begin(), into.decisions.end(), d) == into.decisions.end()) {
            into.decisions.push_back(d);
        }
    }
    for (const auto& op : part.plan) {
        if (into.plan.size() < max_reported_lines) {
            into.plan.push_back(op);
        }
    }
    if (into.cleanup.empty()) {
        into.cleanup = part.cleanup;
    }
}

status allocate_file(int fd, const std::string& path, std::uint64_t offset, std::uint64_t length,
                     const preallocate_options& options, const zero::sync_plan& sync, preallocate_report& rep) {
    const std::string what = fmt::format("allocate {} [offset {}, length {}]", path, offset, length);
    struct ::stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        return make_error_msg(err, fmt::format("{}: fstat: {}", what, errno_text(err)));
    }
    const file_kind kind = file_kind_of(st.st_mode);
    if (kind == file_kind::block) {
        // fallocate(2) mode 0 on a block device is EOPNOTSUPP (block/fops.c blkdev_fallocate
        // takes only zeroing and punching modes): a device has no holes to allocate.
        return make_error_msg(EOPNOTSUPP, fmt::format("{}: a block device has no holes or unwritten extents to "
                                                      "allocate (fallocate(2) mode 0 is not supported on block "
                                                      "devices): Operation not supported",
                                                      what));
    }
    if (kind != file_kind::regular) {
        return make_error_msg(kind == file_kind::directory ? EISDIR : EINVAL,
                              fmt::format("{}: {}, not a regular file", what, describe(kind)));
    }
    if (length == 0) {
        return make_error_msg(EINVAL, fmt::format("{}: length must be greater than zero", what));
    }
    if (offset > static_cast<std::uint64_t>(INT64_MAX) || length > static_cast<std::uint64_t>(INT64_MAX) - offset) {
        return make_error_msg(EFBIG, fmt::format("{}: offset + length overflows", what));
    }
    if (!options.dry_run) {
        if (auto s = target::check_positioned_writes(fd, what); !s.ok()) {
            return s;
        }
    }
    const std::uint64_t end = offset + length;
    const auto size = static_cast<std::uint64_t>(st.st_size);
    const std::uint64_t inside_end = std::min(end, size);

    std::vector<piece> todo;
    if (offset < inside_end) {
        auto m = map_file_range(fd, path, offset, inside_end);
        if (!m) {
            return m.error();
        }
        rep.decisions.push_back(m->how);
        std::uint64_t empty_bytes = 0;
        for (const auto& p : m->empty) {
            empty_bytes += p.length;
        }
        rep.decisions.push_back(fmt::format("allocate: inside the file ({} bytes): {} bytes of data kept, {} bytes "
                                            "in {} holes or unwritten extents to make written zeroes",
                                            size, m->data_bytes, empty_bytes, m->empty.size()));
        todo = std::move(m->empty);
    }
    const std::uint64_t grow_from = std::max(offset, size);
    if (end > size) {
        rep.decisions.push_back(
            offset > size ? fmt::format("allocate: the file grows from {} to {} bytes; [{}, {}) stays a hole, as "
                                        "fallocate(2) leaves it (outside the range)",
                                        size, end, size, offset)
                          : fmt::format("allocate: the file grows from {} to {} bytes with written zeroes", size, end));
        todo.push_back({grow_from, end - grow_from});
    }
    std::uint64_t total = 0;
    for (const auto& p : todo) {
        total += p.length;
    }

    // One flush at the end, not one per piece: every piece but the last runs without sync;
    // the last (the growth, when there is one) syncs the whole file with its fdatasync.
    std::uint64_t done_before = 0;
    for (std::size_t i = 0; i < todo.size(); ++i) {
        const piece& p = todo[i];
        preallocate_options o = options;
        o.sync = options.sync && i + 1 == todo.size();
        if (options.on_progress) {
            o.on_progress = [&options, done_before, total](const progress_info& pi) {
                options.on_progress(progress_info{done_before + pi.bytes_done, total});
            };
        }
        preallocate_report part;
        auto r = zero::preallocate_in_place(fd, path, p.offset, p.length, o, &part, sync);
        merge(rep, r ? *r : part);
        if (!r) {
            return r.error();
        }
        done_before += p.length;
    }
    if (options.dry_run) {
        return {};
    }
    if (todo.empty() && options.sync && sync.by_name_commit.empty() && ::fdatasync(fd) != 0) {
        // Nothing to zero; still durable on return, as preallocate() is.
        return make_error_range("fdatasync", path, offset, length, errno);
    }
    if (options.verify == verify_mode::none) {
        return {};
    }
    // The pieces proved themselves; the data between them was written extents when mapped.
    // The whole range is proven here, the data included (extents only: data is not zeroes).
    auto caps = record::of(fd, path);
    if (!caps) {
        return caps.error();
    }
    preallocate_report proof;
    auto v = verify_detail::verify_range(fd, path, *caps, offset, length, verify_mode::extents, proof);
    rep.verified = proof.verified;
    rep.verify_detail = proof.verify_detail;
    if (!v.ok()) {
        error_info e = std::move(v).error();
        e.message += " (the range was mapped before it was zeroed: another process changed the file meanwhile)";
        return e;
    }
    return {};
}

result<preallocate_report> allocate_here(int fd, const std::string& path, std::uint64_t offset, std::uint64_t length,
                                         const preallocate_options& options, const zero::sync_plan& sync,
                                         preallocate_report* partial) {
    preallocate_report rep;
    rep.path = path;
    rep.offset = offset;
    rep.length = length;
    for (auto m : all_zero_methods) {
        rep.bytes_by_method[m] = 0;
    }
    const auto start = std::chrono::steady_clock::now();
    auto s = allocate_file(fd, path, offset, length, options, sync, rep);
    rep.elapsed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (partial != nullptr) {
        *partial = rep;
    }
    if (!s.ok()) {
        return std::move(s).error();
    }
    return rep;
}

}  // namespace

namespace zero {

result<preallocate_report> allocate(int fd, const std::string& path, std::uint64_t offset, std::uint64_t length,
                                    const preallocate_options& options, preallocate_report* partial) {
    return run_on_descriptor(
        fd, path, offset, length, options, partial,
        [&](int d, const zero::sync_plan& sync, preallocate_report* p) {
            return allocate_here(d, path, offset, length, options, sync, p);
        },
        true);
}

result<preallocate_report> allocate(const std::string& path, std::uint64_t offset, std::uint64_t length,
                                    const preallocate_options& options, preallocate_report* partial) {
    return run_on_path(
        path, offset, length, options, partial,
        [&](int fd, const zero::sync_plan& sync, preallocate_report* p) {
            return allocate_here(fd, path, offset, length, options, sync, p);
        },
        true);
}

}  // namespace zero

}  // namespace wz
