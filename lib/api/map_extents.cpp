// SPDX-License-Identifier: MIT
// wz::map_extents(): the extents of a file range with the device addresses behind them
// (what `wzero map` prints), streamed batch by batch or collected in one vector.

#include "api/entry.hpp"
#include "extent/fiemap.hpp"
#include "plan/zero_plan.hpp"
#include "probe/file_kind.hpp"
#include "probe/fs_traits.hpp"
#include "target/target.hpp"
#include "util/errors.hpp"
#include "util/private_fd_table.hpp"

#include <wzero/wzero.hpp>

#include <fmt/format.h>

namespace wz {

namespace {

// The walk, on the thread with its own descriptor table; each batch goes to `on_batch` (which
// runs the caller's callback on the caller's thread).
status map_extents_here(const std::string& path, std::uint64_t offset, std::uint64_t length,
                        const std::function<status(const std::vector<mapped_extent>&)>& on_batch) {
    const std::uint64_t asked = length;  // 0: to the end of the file
    auto t = target::open_with_record(path, offset, length);
    if (!t) {
        return t.error();
    }
    auto& [fd, caps_value] = *t;
    const capabilities* caps = &caps_value;
    if (file_kind_of(*caps) != file_kind::regular) {
        return make_error_msg(EINVAL, fmt::format("map {}: not a regular file", path));
    }
    // A range past the end is refused, as verify refuses it: FIEMAP would call it a hole.
    const std::uint64_t size = caps->size_bytes;
    if (asked == 0 ? offset > size : asked > size || offset > size - asked) {
        return make_error_msg(EINVAL, asked == 0 ? fmt::format("map {} [offset {}]: the offset is past the end of the "
                                                               "file ({} bytes)",
                                                               path, offset, size)
                                                 : fmt::format("map {} [offset {}, length {}]: range ends past the end "
                                                               "of the file ({} bytes)",
                                                               path, offset, asked, size));
    }
    if (length == 0) {
        return {};
    }
    // FIEMAP's addresses are offsets on the record's device only where there is exactly one
    // device and the filesystem does not map its own logical addresses onto its devices.
    const bool fs_logical = caps->fs && probe::fs::fs_traits_of(caps->fs->type).fiemap_logical;
    const extent_addresses addresses = fs_logical                                        ? extent_addresses::fs_logical
                                       : caps->device && caps->devices.size() == 1 ? extent_addresses::device
                                                                                         : extent_addresses::unknown;
    const std::uint32_t lbs = caps->nvme && caps->nvme->lba_bytes != 0 ? caps->nvme->lba_bytes
                              : caps->device && caps->device->logical_block_size != 0
                                  ? caps->device->logical_block_size
                                  : 512;
    const std::uint64_t part = caps->device ? caps->device->partition_start_bytes : 0;
    // The planner's geometry and rule, so that "aligned" here means what a DEAC run would do.
    const plan::nvme_geometry geo = plan::geometry_from(*caps);
    // One batch of 512 extents (about 20 KiB) at a time: nothing here grows with the file.
    extent::walker walk(fd.get(), path, offset, length, 512, true);
    std::vector<extent::extent> batch;
    std::vector<mapped_extent> out;
    mapped_extent m;
    while (true) {
        auto more = walk.next(batch);
        if (!more) {
            return more.error();
        }
        if (!*more) {
            return {};
        }
        out.clear();
        for (const auto& e : batch) {
            m = mapped_extent{};
            m.offset = e.offset;
            m.length = e.length;
            m.kind = extent::to_string(e.type);
            m.flags = e.flags;
            m.addresses = addresses;
            if (addresses == extent_addresses::fs_logical) {
                m.logical = e.physical;
            } else if (addresses == extent_addresses::device) {
                m.physical = e.physical;
            }
            if (m.physical) {
                m.lba = extent::to_lba(*e.physical, part, lbs);
                m.nlb = e.length / lbs;
                if (m.lba && geo.npdg_bytes && geo.npda_bytes) {
                    m.dealloc_aligned = plan::dealloc_aligned(geo, *m.lba, m.nlb);
                }
            }
            out.push_back(m);
        }
        if (auto s = on_batch(out); !s.ok()) {
            return s;
        }
    }
}

}  // namespace

// The file is opened by PATH and closed: in a table of its own (util/private_fd_table.hpp), so
// that the process keeps its POSIX locks on it. `on_extent` runs on the caller's thread, one
// batch at a time.
status map_extents(const std::string& path, std::uint64_t offset, std::uint64_t length,
                   const std::function<status(const mapped_extent&)>& on_extent) {
    return api::entry<status>(fmt::format("map {}", path), {}, [&](private_fd_table& table) {
        return map_extents_here(path, offset, length, [&](const std::vector<mapped_extent>& extents) {
            status s;
            table.on_caller([&] {
                for (const mapped_extent& e : extents) {
                    if (s = on_extent(e); !s.ok()) {
                        return;
                    }
                }
            });
            return s;
        });
    });
}

result<std::vector<mapped_extent>> map_extents(const std::string& path, std::uint64_t offset, std::uint64_t length) {
    std::vector<mapped_extent> out;
    auto s = map_extents(path, offset, length, [&out](const mapped_extent& m) -> status {
        out.push_back(m);
        return {};
    });
    if (!s.ok()) {
        return std::move(s).error();
    }
    return out;
}

}  // namespace wz
