// SPDX-License-Identifier: MIT
// wz::stat(): the capability record of a file or block device.
// Per-file facts (statx, statfs, mount) are read on every call; per-device facts
// (sysfs limits, NVMe identify data, the write cache feature) are cached per dev_t,
// because they cost admin commands and change only on Set Features or hotplug.

#include "io/engine_select.hpp"
#include "plan/assess.hpp"
#include "probe/btrfs.hpp"
#include "probe/file_kind.hpp"
#include "probe/fs.hpp"
#include "probe/fs_traits.hpp"
#include "probe/nvme_probe.hpp"
#include "probe/sysfs.hpp"
#include "util/errors.hpp"
#include "util/private_fd_table.hpp"
#include "util/privilege.hpp"
#include "util/reopen.hpp"
#include "util/unique_fd.hpp"

#include <wzero/wzero.hpp>

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <unordered_map>

namespace wz {

namespace {

struct device_facts {
    std::optional<device_info> device;
    write_zeroes_info write_zeroes;
    std::optional<nvme_info> nvme;
    cache_info cache;
    unknown_reasons unknown;
};

std::mutex cache_mutex;
std::unordered_map<dev_t, device_facts> device_cache;

const std::string& kernel_release() {
    static const std::string release = [] {
        struct ::utsname u {};
        return ::uname(&u) == 0 ? std::string(u.release) : std::string();
    }();
    return release;
}

device_facts probe_device(dev_t devno) {
    device_facts f;
    sysfs::tree sys;
    auto node = sysfs::find_block_node(sys, major(devno), minor(devno));
    if (!node) {
        f.unknown["device"] = node.error().message;
        return f;
    }
    device_info dev;
    sysfs::read_block_info(sys, *node, dev, f.write_zeroes, f.cache, f.unknown);
    if (dev.kind == "nvme") {
        nvme_info n;
        nvme::probe_namespace(sys, *node, dev, n, f.unknown);
        f.nvme = std::move(n);
    }
    f.device = std::move(dev);
    return f;
}

// Where a regular file's data is: the block devices, or why none can be named.
struct data_location {
    std::vector<dev_t> devices;  // empty: none, or not known (`why`)
    std::string why;             // for unknown["device"] when `devices` is empty
};

// xfs keeps a realtime file's data on its realtime device (mkfs -r rtdev=, mount -o rtdev=),
// not on the device st_dev names; FIEMAP then gives offsets on that device.
bool xfs_realtime_file(int fd) {
    struct ::fsxattr fsx {};
    return ::ioctl(fd, FS_IOC_FSGETXATTR, &fsx) == 0 && (fsx.fsx_xflags & FS_XFLAG_REALTIME) != 0;
}

// From the descriptor and the filesystem's own facts only: st_dev where it is the data's block
// device; btrfs's own device list; nothing else. The mount's source is never taken for the
// device: it names one device of a filesystem that may have several, or a device that is not
// where the data goes (an overlay's, a FUSE server's).
data_location locate_data(int fd, const std::string& path, const struct ::statx& stx, const fs_info& fs) {
    data_location loc;
    const dev_t st_dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
    const fsprobe::fs_traits traits = fsprobe::fs_traits_of(fs.type);
    if (traits.memory_only) {
        loc.why = fmt::format("{} on {} keeps data in memory: no block device", fs.type, fs.mount_point);
        return loc;
    }
    if (fs.type == "btrfs") {
        // Each subvolume (and on Linux 6.x the top level too) has an anonymous st_dev of its own.
        auto b = btrfs::devices_of(fd, path, sysfs::tree());
        if (!b) {
            loc.why = fmt::format("btrfs: {}", b.error().message);
            return loc;
        }
        for (const auto& m : b->devices) {
            loc.devices.push_back(makedev(m.major, m.minor));
        }
        return loc;
    }
    if (stx.stx_dev_major == 0) {
        loc.why = fmt::format("{} on {}: st_dev {}:{} is not a block device (an anonymous number), and the record "
                              "does not resolve the devices of {}",
                              fs.type, fs.mount_point.empty() ? std::string("an unknown mount") : fs.mount_point,
                              stx.stx_dev_major, stx.stx_dev_minor, fs.type);
        return loc;
    }
    if (fs.type == "xfs" && xfs_realtime_file(fd)) {
        loc.why = fmt::format("xfs realtime file: its data is on the filesystem's realtime device, not on {}:{}, and "
                              "the record does not resolve that device",
                              stx.stx_dev_major, stx.stx_dev_minor);
        return loc;
    }
    loc.devices.push_back(st_dev);
    return loc;
}

device_facts facts_of(dev_t devno, bool refresh) {
    {
        std::lock_guard lock(cache_mutex);
        auto it = device_cache.find(devno);
        if (it != device_cache.end() && !refresh && (it->second.device || !it->second.unknown.empty())) {
            return it->second;
        }
    }
    device_facts facts = probe_device(devno);
    std::lock_guard lock(cache_mutex);
    device_cache[devno] = facts;
    return facts;
}

result<capabilities> stat_here(int fd, const std::string& path, const stat_options& options) {
    struct ::statx stx {};
    if (::statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_DIOALIGN, &stx) != 0) {
        return make_error("statx", path, errno);
    }
    capabilities caps;
    caps.path = path;
    caps.kernel_release = kernel_release();
    const file_kind kind = file_kind_of(stx.stx_mode);
    if (kind == file_kind::directory) {
        return make_error_msg(EISDIR, fmt::format("stat {}: Is a directory (expected a regular file or a block device)",
                                                  path));
    }
    if (kind != file_kind::regular && kind != file_kind::block) {
        return make_error_msg(EINVAL, fmt::format("stat {}: {} (expected a regular file or a block device)", path,
                                                  describe(kind)));
    }
    caps.file_type = record_name(kind);

    std::vector<dev_t> devnos;
    if (kind == file_kind::regular) {
        caps.size_bytes = stx.stx_size;
        auto fs = fsprobe::probe_fs(fd, path, options.refresh, caps.unknown);
        if (!fs) {
            return fs.error();
        }
        caps.fs = std::move(*fs);
        if (!caps.fs->fallocate) {
            caps.unknown["fs.fallocate"] = caps.fs->fallocate_reason;
        }
        data_location loc = locate_data(fd, path, stx, *caps.fs);
        devnos = std::move(loc.devices);
        if (devnos.empty()) {
            caps.unknown["device"] = std::move(loc.why);
        }
    } else {
        devnos.push_back(makedev(stx.stx_rdev_major, stx.stx_rdev_minor));
    }
    if ((stx.stx_mask & STATX_DIOALIGN) != 0 && stx.stx_dio_mem_align != 0) {
        caps.dio = dio_alignment{stx.stx_dio_mem_align, stx.stx_dio_offset_align, "statx"};
    }

    for (std::size_t i = 0; i < devnos.size(); ++i) {
        device_facts facts = facts_of(devnos[i], options.refresh);
        const std::string prefix = plan::device_unknown_prefix(i);
        for (const auto& [k, v] : facts.unknown) {
            caps.unknown[prefix + k] = v;
        }
        if (!facts.device) {
            // One device of several that cannot be read leaves the record without a device,
            // rather than with the others': their answer would not cover it.
            caps.device.reset();
            caps.devices.clear();
            caps.nvme.reset();
            caps.write_zeroes = {};
            caps.cache = {};
            if (devnos.size() > 1) {
                caps.unknown["device"] = fmt::format("{}:{}, one of the {} devices under the file: {}",
                                                     major(devnos[i]), minor(devnos[i]), devnos.size(),
                                                     facts.unknown["device"]);
            }
            break;
        }
        if (i == 0) {
            caps.device = facts.device;
            caps.write_zeroes = facts.write_zeroes;
            caps.nvme = facts.nvme;
            caps.cache = facts.cache;
        }
        caps.devices.push_back(data_device{std::move(*facts.device), std::move(facts.nvme), facts.cache});
    }
    if (kind == file_kind::block && caps.device) {
        caps.size_bytes = caps.device->size_bytes;
    }

    if ((stx.stx_mask & STATX_DIOALIGN) == 0) {
        // No answer from statx (btrfs, or block devices before Linux 6.11): whether O_DIRECT
        // works is found by opening; the larger of the fs block and the logical block is an
        // alignment every filesystem accepts. A filesystem's answer holds for all its files,
        // so it is asked once per st_dev; a block device's node shares its st_dev (devtmpfs)
        // with every other device node: asked each time.
        auto try_open = [fd] {
            unique_fd dfd = reopen_self(fd, O_RDONLY | O_DIRECT | O_CLOEXEC);
            return dfd ? 0 : errno;
        };
        const int open_err =
            kind == file_kind::regular
                ? fsprobe::direct_open_errno(makedev(stx.stx_dev_major, stx.stx_dev_minor), options.refresh, try_open)
                : try_open();
        if (open_err == 0) {
            // Over several devices (btrfs), the largest logical block: a direct write may go to any.
            std::uint32_t lbs = 512;
            for (const auto& d : caps.devices) {
                lbs = std::max(lbs, d.device.logical_block_size);
            }
            const auto fsb = static_cast<std::uint32_t>(caps.fs ? caps.fs->block_size : 0);
            caps.dio = dio_alignment{lbs, std::max(lbs, fsb), "block size"};
        } else {
            caps.unknown["dio"] = fmt::format("statx reports no DIO alignment and O_DIRECT open failed: {}",
                                              errno_text(open_err));
        }
    }

    plan::assess_inputs in;
    in.kernel = plan::parse_kernel_release(caps.kernel_release);
    if (caps.nvme && !caps.nvme->char_device.empty()) {
        in.may_passthrough = may_passthrough(caps.nvme->char_device.c_str());
    }
    caps.io = current_io_engine();
    if (caps.io.engine == io_engine::io_uring && caps.io.forced) {
        in.io_uring_refused = io::probe_io_uring();
    }
    plan::assess(caps, in);
    return caps;
}

result<capabilities> stat_here(const std::string& path, const stat_options& options) {
    // O_PATH first: statx on it tells the type without opening a FIFO (which would block)
    // or a device we were not asked to touch.
    unique_fd probe(::open(path.c_str(), O_PATH | O_CLOEXEC));
    if (!probe) {
        return make_error("stat", path, errno);
    }
    struct ::statx stx {};
    if (::statx(probe.get(), "", AT_EMPTY_PATH, STATX_TYPE, &stx) != 0) {
        return make_error("statx", path, errno);
    }
    const file_kind kind = file_kind_of(stx.stx_mode);
    if (kind != file_kind::regular && kind != file_kind::block) {
        return stat_here(probe.get(), path, options);  // reports the type error
    }
    // The inode just checked, not the name again (it may have been swapped since).
    unique_fd fd = reopen_self(probe.get(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (!fd) {
        return make_error("open", path, errno);
    }
    return stat_here(fd.get(), path, options);
}

}  // namespace

// The probes reopen the file (an O_DIRECT read of the alignment, the path's descriptors): in
// a table of their own (util/private_fd_table.hpp), so that the process keeps its POSIX locks.
result<capabilities> stat(int fd, const std::string& path, const stat_options& options) {
    return in_private_fd_table<result<capabilities>>(fmt::format("stat {}", path),
                                                     [&] { return stat_here(fd, path, options); });
}

result<capabilities> stat(const std::string& path, const stat_options& options) {
    return in_private_fd_table<result<capabilities>>(fmt::format("stat {}", path),
                                                     [&] { return stat_here(path, options); });
}

}  // namespace wz
