// SPDX-License-Identifier: MIT
// The capability record of a file or block device (wz::stat's): the probes' facts, the plan's
// assessment of them, and the process's I/O engine.
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
#include "record/record.hpp"
#include "record/write_cache.hpp"
#include "util/cached_only.hpp"
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
#include <chrono>
#include <map>
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
    // When the write-cache facts (nvme.vwc_enabled, cache.kernel) were read (the start of the
    // probe or re-read), and the effective cache they give (plan::effective_cache).
    record::cache_clock::time_point cache_read_at;
    plan::cache_verdict cache_verdict;
};

std::mutex cache_mutex;
std::unordered_map<dev_t, device_facts> device_cache;

// The data device of a regular file's filesystem, as stat_here resolved it, by the file's
// (st_dev, mount id): what wz::write_cache asks about without a whole stat per call. The mount
// id keeps an anonymous st_dev that a later mount reuses from naming the earlier one's device.
struct file_device {
    std::vector<dev_t> devnos;     // every device the data may be on (btrfs: several)
    std::string no_device_reason;  // without a device: the record's effective_reason
};
std::map<std::pair<dev_t, std::uint64_t>, file_device> file_devices;  // under cache_mutex

// The verdict of the facts as they are now.
void settle_cache_verdict(device_facts& f) {
    if (!f.device) {
        auto it = f.unknown.find("device");
        f.cache_verdict = {std::nullopt, fmt::format("the block device is unknown: {}",
                                                     it != f.unknown.end() ? it->second : "not found")};
        return;
    }
    capabilities c;
    c.device = f.device;
    c.nvme = f.nvme;
    c.cache = f.cache;
    c.unknown = f.unknown;
    f.cache_verdict = plan::effective_cache(c);
}

const std::string& kernel_release() {
    static const std::string release = [] {
        struct ::utsname u {};
        return ::uname(&u) == 0 ? std::string(u.release) : std::string();
    }();
    return release;
}

device_facts probe_device(dev_t devno) {
    device_facts f;
    f.cache_read_at = record::cache_clock::now();
    probe::sysfs::tree sys;
    auto node = probe::sysfs::find_block_node(sys, major(devno), minor(devno));
    if (!node) {
        f.unknown["device"] = node.error().message;
        return f;
    }
    device_info dev;
    probe::sysfs::read_block_info(sys, *node, dev, f.write_zeroes, f.cache, f.unknown);
    if (dev.kind == "nvme") {
        nvme_info n;
        probe::nvme::probe_namespace(sys, *node, dev, n, f.unknown);
        f.nvme = std::move(n);
    }
    f.device = std::move(dev);
    settle_cache_verdict(f);
    return f;
}

// Reads the write-cache facts of F again (see record/write_cache.hpp): WCE where the controller
// has a volatile write cache, and the kernel's queue/write_cache of the disk.
void reread_cache_facts(device_facts& f) {
    if (f.nvme && f.nvme->vwc_present.value_or(false)) {
        auto wce = probe::nvme::reread_wce(*f.nvme);
        f.nvme->vwc_enabled = wce.enabled;
        if (wce.enabled) {
            f.unknown.erase("nvme.vwc_enabled");
        } else {
            f.unknown["nvme.vwc_enabled"] = std::move(wce.why_not);
        }
    }
    if (f.device) {
        const std::string& disk = f.device->disk;
        const std::string attr = "block/" + disk.substr(disk.rfind('/') + 1) + "/queue/write_cache";
        probe::sysfs::tree sys;
        auto text = sys.read(attr);
        f.cache.kernel = text ? probe::sysfs::parse_write_cache(*text) : std::nullopt;
        if (f.cache.kernel) {
            f.unknown.erase("cache.kernel");
        } else {
            f.unknown["cache.kernel"] = fmt::format("/sys/{} is not readable", attr);
        }
    }
    settle_cache_verdict(f);
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
    const probe::fs::fs_traits traits = probe::fs::fs_traits_of(fs.type);
    if (traits.memory_only) {
        loc.why = fmt::format("{} on {} keeps data in memory: no block device", fs.type, fs.mount_point);
        return loc;
    }
    if (fs.type == "btrfs") {
        // Each subvolume (and on Linux 6.x the top level too) has an anonymous st_dev of its own.
        auto b = probe::btrfs::devices_of(fd, path, probe::sysfs::tree());
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
    if (cached_only::refuse()) {
        return device_facts{};  // a first probe opens the device's nodes: through the worker
    }
    device_facts facts = probe_device(devno);
    std::lock_guard lock(cache_mutex);
    device_cache[devno] = facts;
    return facts;
}

result<capabilities> stat_here(int fd, const std::string& path, const stat_options& options) {
    struct ::statx stx {};
    if (::statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_DIOALIGN | STATX_MNT_ID, &stx) != 0) {
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
        auto fs = probe::fs::probe_fs(fd, path, options.refresh, caps.unknown);
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
                ? probe::fs::direct_open_errno(makedev(stx.stx_dev_major, stx.stx_dev_minor), options.refresh, try_open)
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
    if (caps.nvme && caps.nvme->passthrough != passthrough_route::none) {
        in.may_passthrough = may_passthrough(*caps.nvme);
    }
    caps.io = current_io_engine();
    if (caps.io.engine == io_engine::io_uring && caps.io.forced) {
        in.io_uring_refused = io::probe_io_uring();
    }
    plan::assess(caps, in);
    if (kind == file_kind::regular && (stx.stx_mask & STATX_MNT_ID) != 0) {
        file_device fdev;
        if (caps.device) {
            for (const auto& d : caps.devices) {
                fdev.devnos.push_back(makedev(d.device.major, d.device.minor));
            }
        } else {
            fdev.no_device_reason = caps.cache.effective_reason;
        }
        std::lock_guard lock(cache_mutex);
        file_devices[{makedev(stx.stx_dev_major, stx.stx_dev_minor), stx.stx_mnt_id}] = std::move(fdev);
    }
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

namespace record {

result<capabilities> of(int fd, const std::string& path, const stat_options& options) {
    return stat_here(fd, path, options);
}

result<capabilities> of(const std::string& path, const stat_options& options) { return stat_here(path, options); }

namespace {

// The whole record, for a device or filesystem not asked about before: its opens and closes in
// a table of their own (util/private_fd_table.hpp), so that the process keeps its POSIX locks.
result<capabilities> probe_whole(int fd, const std::string& path) {
    const int fds[] = {fd};
    return in_private_fd_table<result<capabilities>>(fmt::format("stat {}", path), fds,
                                                     [&] { return stat_here(fd, path, stat_options{}); });
}

// One re-read at a time, whatever the device: they are rare (one per device per max age at
// most), and a caller that waited finds the answer it waited for fresh.
std::mutex reread_mutex;

cache_reading reading_of(const device_facts& f, bool reread) {
    return {f.cache_verdict.effective, f.cache_verdict.reason, f.cache_read_at, reread};
}

bool fresh(const device_facts& f, cache_clock::duration max_age, cache_clock::time_point now) {
    return f.device && now - f.cache_read_at <= max_age;
}

}  // namespace

cache_reading device_write_cache(dev_t devno, cache_clock::duration max_age) {
    {
        std::lock_guard lock(cache_mutex);
        auto it = device_cache.find(devno);
        if (it != device_cache.end() && fresh(it->second, max_age, cache_clock::now())) {
            return reading_of(it->second, false);
        }
    }
    std::lock_guard one(reread_mutex);
    device_facts f;
    {
        std::lock_guard lock(cache_mutex);
        auto it = device_cache.find(devno);
        if (it != device_cache.end()) {
            if (fresh(it->second, max_age, cache_clock::now())) {
                return reading_of(it->second, false);
            }
            f = it->second;
        }
    }
    if (!f.device) {
        // Never probed here, or probed without finding the device: all of it, once more.
        f = probe_device(devno);
        std::lock_guard lock(cache_mutex);
        device_cache[devno] = f;
        return reading_of(f, true);
    }
    f.cache_read_at = cache_clock::now();
    reread_cache_facts(f);
    std::lock_guard lock(cache_mutex);
    device_facts& held = device_cache[devno];
    if (held.cache_read_at < f.cache_read_at) {
        // Only the cache facts: a wz::stat with refresh may have replaced the rest meanwhile.
        if (held.nvme && f.nvme) {
            held.nvme->vwc_enabled = f.nvme->vwc_enabled;
        }
        held.cache.kernel = f.cache.kernel;
        for (const char* key : {"nvme.vwc_enabled", "cache.kernel"}) {
            if (auto u = f.unknown.find(key); u != f.unknown.end()) {
                held.unknown[key] = u->second;
            } else {
                held.unknown.erase(key);
            }
        }
        held.cache_read_at = f.cache_read_at;
        settle_cache_verdict(held);
        return reading_of(held, true);
    }
    return reading_of(held, false);  // a whole probe since ours started is the fresher answer
}

result<write_cache_state> write_cache(int fd, const std::string& path, std::chrono::nanoseconds max_age) {
    if (max_age.count() < 0) {
        return make_error_msg(EINVAL, fmt::format("write cache {}: the maximum age must not be negative ({} ns)",
                                                  path, max_age.count()));
    }
    const auto called = record::cache_clock::now();
    struct ::statx stx {};
    if (::statx(fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_MNT_ID, &stx) != 0) {
        return make_error("statx", path, errno);
    }
    const file_kind kind = file_kind_of(stx.stx_mode);
    std::vector<dev_t> devnos;
    if (kind == file_kind::block) {
        devnos.push_back(makedev(stx.stx_rdev_major, stx.stx_rdev_minor));
        bool known = false;
        {
            std::lock_guard lock(cache_mutex);
            auto it = device_cache.find(devnos.front());
            known = it != device_cache.end() && it->second.device;
        }
        if (!known) {
            // Probed whole by the record, whose opens and closes keep the process's locks.
            if (auto caps = probe_whole(fd, path); !caps) {
                return caps.error();
            }
        }
    } else if (kind == file_kind::regular) {
        if ((stx.stx_mask & STATX_MNT_ID) == 0) {
            return make_error_msg(ENOTSUP, fmt::format("write cache {}: statx gives no mount id (Linux 5.8+)",
                                                       path));
        }
        const std::pair<dev_t, std::uint64_t> key{makedev(stx.stx_dev_major, stx.stx_dev_minor), stx.stx_mnt_id};
        std::optional<file_device> known;
        {
            std::lock_guard lock(cache_mutex);
            if (auto it = file_devices.find(key); it != file_devices.end()) {
                known = it->second;
            }
        }
        if (!known) {
            // The first question about this filesystem: the record resolves its devices (and
            // files them under the key).
            auto caps = probe_whole(fd, path);
            if (!caps) {
                return caps.error();
            }
            known.emplace();
            if (caps->device) {
                for (const auto& d : caps->devices) {
                    known->devnos.push_back(makedev(d.device.major, d.device.minor));
                }
            } else {
                known->no_device_reason = caps->cache.effective_reason;
            }
        }
        if (known->devnos.empty()) {
            write_cache_state st;
            st.reason = known->no_device_reason;
            return st;
        }
        devnos = known->devnos;
    } else {
        return make_error_msg(kind == file_kind::directory ? EISDIR : EINVAL,
                              fmt::format("write cache {}: {} (expected a regular file or a block device)", path,
                                          describe(kind)));
    }
    // Over several devices (btrfs) the least safe answer, as the record's: write-back if any
    // device is, unknown if any is unknown, write-through only if all are; the oldest reading.
    write_cache_state st;
    bool all_through = true;
    std::string reasons;
    for (const dev_t devno : devnos) {
        const record::cache_reading r = record::device_write_cache(devno, max_age);
        const auto age = std::chrono::duration_cast<std::chrono::nanoseconds>(record::cache_clock::now() - r.read_at);
        st.age = std::max(st.age, age);
        st.reread = st.reread || r.reread || r.read_at >= called;  // also the first read, by the stat above
        if (r.effective == cache_mode::write_back) {
            st.effective = cache_mode::write_back;
        }
        all_through = all_through && r.effective == cache_mode::write_through;
        reasons += (reasons.empty() ? "" : "; ") +
                   (devnos.size() > 1 ? fmt::format("{}:{}: {}", major(devno), minor(devno), r.reason) : r.reason);
    }
    if (all_through) {
        st.effective = cache_mode::write_through;
    }
    st.reason = std::move(reasons);
    return st;
}

}  // namespace record

}  // namespace wz
