// SPDX-License-Identifier: MIT
#include "plan/assess.hpp"

#include "plan/method_order.hpp"
#include "probe/fs_traits.hpp"
#include "probe/file_kind.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace wz::plan {

namespace {

// The traits of the record's filesystem (none for a block device).
probe::fs::fs_traits traits_of(const capabilities& caps) {
    return caps.fs ? probe::fs::fs_traits_of(caps.fs->type) : probe::fs::fs_traits{};
}

std::string bytes_text(std::uint64_t b) {
    if (b != 0 && b % (1ULL << 30) == 0) {
        return fmt::format("{} GiB", b >> 30);
    }
    if (b != 0 && b % (1ULL << 20) == 0) {
        return fmt::format("{} MiB", b >> 20);
    }
    if (b != 0 && b % (1ULL << 10) == 0) {
        return fmt::format("{} KiB", b >> 10);
    }
    return fmt::format("{} bytes", b);
}

method_assessment yes(std::string why) { return {true, std::move(why)}; }
method_assessment no(std::string why) { return {false, std::move(why)}; }
method_assessment unknown(std::string why) { return {std::nullopt, std::move(why)}; }

}  // namespace

std::optional<kernel_version> parse_kernel_release(const std::string& release) {
    kernel_version v;
    const char* p = release.data();
    const char* end = p + release.size();
    auto r1 = std::from_chars(p, end, v.major);
    if (r1.ec != std::errc() || r1.ptr == end || *r1.ptr != '.') {
        return std::nullopt;
    }
    auto r2 = std::from_chars(r1.ptr + 1, end, v.minor);
    if (r2.ec != std::errc()) {
        return std::nullopt;
    }
    return v;
}

// What RWF_DSYNC on an O_DIRECT overwrite of written extents costs at the device. The
// iomap direct I/O path sends it as one FUA write and skips the flush when the queue has
// FUA and the inode needs no metadata for fdatasync (IOMAP_F_DIRTY clear): a pure overwrite.
// Where that is confirmed: fs_traits::dsync_overwrite_fua.
static void assess_dsync_overwrite(capabilities& caps) {
    cache_info& c = caps.cache;
    if (file_kind_of(caps) != file_kind::regular || !caps.device) {
        c.dsync_overwrite_fua.reset();
        c.dsync_overwrite_reason = file_kind_of(caps) == file_kind::regular ? "no block device" : "not a regular file";
        return;
    }
    const std::string fs = caps.fs ? caps.fs->type : std::string();
    const probe::fs::fs_traits traits = traits_of(caps);
    if (!traits.dsync_overwrite_fua) {
        c.dsync_overwrite_fua = false;
        c.dsync_overwrite_reason = fmt::format("{}: not confirmed to send O_DSYNC overwrites as FUA alone{}",
                                               fs.empty() ? "unknown filesystem" : fs,
                                               traits.cow ? " (copy on write: each overwrite is new metadata)" : "");
        return;
    }
    if (!c.fua) {
        c.dsync_overwrite_fua.reset();
        c.dsync_overwrite_reason = "queue/fua unknown";
        return;
    }
    c.dsync_overwrite_fua = *c.fua;
    c.dsync_overwrite_reason =
        *c.fua ? fmt::format("{} sends an O_DSYNC O_DIRECT overwrite of written extents as one FUA write, no flush "
                             "(iomap; measured at the device on Linux 6.1 and 7.2)",
                             fs)
               : fmt::format("{} over a queue without FUA: an O_DSYNC write is followed by a flush", fs);
}

void assess_device_cache(const device_info& dev, const std::optional<nvme_info>& n, cache_info& c,
                         const unknown_reasons& unknown, const std::string& unknown_prefix) {
    if (n && n->vwc_present && !*n->vwc_present) {
        c.effective = cache_mode::write_through;
        c.effective_reason = "the controller has no volatile write cache (Identify Controller VWC bit 0 = 0)";
    } else if (n && n->vwc_present && n->vwc_enabled) {
        if (*n->vwc_enabled) {
            c.effective = cache_mode::write_back;
            c.effective_reason = "volatile write cache present and enabled (Get Features FID 06h: WCE = 1)";
        } else {
            c.effective = cache_mode::write_through;
            c.effective_reason = fmt::format(
                "volatile write cache present but disabled (Get Features FID 06h: WCE = 0){}",
                c.kernel == cache_mode::write_back ? "; Linux still reports \"write back\" and sends flushes" : "");
        }
    } else if (c.kernel) {
        c.effective = c.kernel;
        if (n) {
            auto it = unknown.find(unknown_prefix + "nvme.vwc_enabled");
            c.effective_reason = fmt::format("as the kernel reports: the device's WCE could not be read ({})",
                                             it != unknown.end() ? it->second : "unknown");
        } else if (dev.kind == "loop") {
            c.effective_reason = "as the kernel reports: a loop device's writes land in the backing file's page cache "
                                 "until it is flushed";
        } else {
            c.effective_reason = fmt::format("as the kernel reports for {}", dev.disk);
        }
    } else {
        c.effective.reset();
        c.effective_reason = "the kernel's cache mode could not be read";
    }

    if (!c.effective) {
        c.flush_needed = true;
        c.flush_reason = "cache mode unknown: a flush is taken as needed (the safe side)";
    } else if (*c.effective == cache_mode::write_through) {
        c.flush_needed = false;
        c.flush_reason = "write-through: a completed write is on stable media, a flush would do nothing";
    } else {
        c.flush_needed = true;
        c.flush_reason = c.fua.value_or(false)
                             ? "write-back: a durable write needs a flush, or FUA on each write (FUA supported)"
                             : "write-back without FUA: a durable write needs a flush";
    }
}

cache_verdict effective_cache(const capabilities& caps) {
    if (!caps.device) {
        return {std::nullopt, fmt::format("no block device under {} ({}): nothing to cache", caps.path,
                                          caps.fs ? caps.fs->type : "?")};
    }
    cache_info c = caps.cache;
    assess_device_cache(*caps.device, caps.nvme, c, caps.unknown, "");
    return {c.effective, std::move(c.effective_reason)};
}

namespace {

std::string mode_text(const std::optional<cache_mode>& m) { return m ? to_string(*m) : "unknown"; }

// The answer of several devices holding one filesystem's data (btrfs), any of which a write
// may land on (or all of them, for mirrored profiles): the least safe device decides each fact.
void combine_device_caches(capabilities& caps) {
    cache_info& c = caps.cache;
    const auto& devs = caps.devices;
    auto any = [&](auto pred) { return std::any_of(devs.begin(), devs.end(), pred); };
    auto all = [&](auto pred) { return std::all_of(devs.begin(), devs.end(), pred); };
    auto combine_mode = [&](std::optional<cache_mode> cache_info::*field) -> std::optional<cache_mode> {
        if (any([&](const data_device& d) { return d.cache.*field == cache_mode::write_back; })) {
            return cache_mode::write_back;
        }
        if (all([&](const data_device& d) { return d.cache.*field == cache_mode::write_through; })) {
            return cache_mode::write_through;
        }
        return std::nullopt;
    };
    c.kernel = combine_mode(&cache_info::kernel);
    c.effective = combine_mode(&cache_info::effective);
    if (all([](const data_device& d) { return d.cache.fua == true; })) {
        c.fua = true;
    } else if (any([](const data_device& d) { return d.cache.fua == false; })) {
        c.fua = false;
    } else {
        c.fua.reset();
    }
    std::string each;
    for (const auto& d : devs) {
        each += fmt::format("{}{} {}", each.empty() ? "" : ", ", d.device.path, mode_text(d.cache.effective));
    }
    const std::string fs = caps.fs ? caps.fs->type : std::string("the filesystem");
    c.effective_reason = fmt::format("{} over {} devices ({}): {}", fs, devs.size(), each,
                                     c.effective == cache_mode::write_back ? "write-back, as the least safe of them"
                                     : c.effective                         ? "all write-through"
                                                                           : "not known for all of them");
    std::string needing;
    for (const auto& d : devs) {
        if (d.cache.flush_needed != false) {
            needing += fmt::format("{}{} ({})", needing.empty() ? "" : "; ", d.device.path, d.cache.flush_reason);
        }
    }
    if (needing.empty()) {
        c.flush_needed = false;
        c.flush_reason = fmt::format("none of the {} devices of {} needs one: all write-through", devs.size(), fs);
    } else {
        c.flush_needed = true;
        c.flush_reason = fmt::format("a write may land on any of the {} devices of {}, and a flush is needed for {}",
                                     devs.size(), fs, needing);
    }
}

// Do pure overwrites of this file's written extents stay where they are, so that writing the
// data (with no flush, on a write-through device) makes them durable? Only where confirmed:
// ext4 and xfs (fs_traits::in_place_rezero), with no copy-on-write and data not journalled.
std::optional<std::string> not_in_place(const capabilities& caps) {
    if (file_kind_of(caps) != file_kind::regular) {
        return std::nullopt;
    }
    if (!caps.fs) {
        return std::string("the filesystem is not known");
    }
    if (caps.fs->cow) {
        return fmt::format("{} writes this file's data out of place (copy on write): an overwrite is new metadata "
                           "that only the filesystem's commit (fdatasync) makes durable",
                           caps.fs->type);
    }
    if (!traits_of(caps).in_place_rezero) {
        return fmt::format("{} is not known to overwrite written extents in place (only {} are): the filesystem's "
                           "fdatasync is taken as needed",
                           caps.fs->type, probe::fs::fs_names_with(&probe::fs::fs_traits::in_place_rezero));
    }
    if (caps.fs->mount_options.find("data=journal") != std::string::npos) {
        return fmt::format("{} mounted data=journal: data goes through the journal, which only fdatasync commits",
                           caps.fs->type);
    }
    return std::nullopt;
}

}  // namespace

void assess_cache(capabilities& caps) {
    for (std::size_t i = 0; i < caps.devices.size(); ++i) {
        data_device& d = caps.devices[i];
        assess_device_cache(d.device, d.nvme, d.cache, caps.unknown, device_unknown_prefix(i));
    }
    cache_info& c = caps.cache;
    if (!caps.device) {
        c.effective.reset();
        if (traits_of(caps).memory_only) {
            c.flush_needed = false;
            c.effective_reason = fmt::format("no block device under {} ({}): nothing to cache", caps.path,
                                             caps.fs->type);
            c.flush_reason = fmt::format("{} keeps data in memory only: fsync does nothing and nothing is durable",
                                         caps.fs->type);
        } else {
            auto it = caps.unknown.find("device");
            c.effective_reason = fmt::format("the device under {} is not known ({})", caps.path,
                                             it != caps.unknown.end() ? it->second : "no reason given");
            c.flush_needed = true;
            c.flush_reason = "the device and its cache are not known: a flush is taken as needed (the safe side)";
        }
    } else if (caps.devices.size() > 1) {
        combine_device_caches(caps);
    } else {
        assess_device_cache(*caps.device, caps.nvme, c, caps.unknown, "");
    }
    if (caps.device && c.flush_needed == false) {
        if (auto why = not_in_place(caps)) {
            c.flush_needed = true;
            c.flush_reason = fmt::format("{}, whatever the cache ({})", *why, mode_text(c.effective));
        }
    }
    assess_dsync_overwrite(caps);
}

std::string device_unknown_prefix(std::size_t index) {
    return index == 0 ? std::string() : fmt::format("devices[{}].", index);
}

method_assessment assess_kernel(const capabilities& caps, const assess_inputs& in) {
    const bool is_block = file_kind_of(caps) == file_kind::block;
    if (!in.kernel) {
        return unknown("kernel version unknown");
    }
    if (*in.kernel < write_zeroes_falloc_since) {
        return no(fmt::format("Linux {}.{} predates FALLOC_FL_WRITE_ZEROES (6.17)", in.kernel->major,
                              in.kernel->minor));
    }
    if (!is_block) {
        if (!caps.fs) {
            return unknown("filesystem unknown");
        }
        if (caps.fs->fallocate == false) {
            return no(caps.fs->fallocate_reason);
        }
        if (!traits_of(caps).kernel_write_zeroes) {
            return no(fmt::format("{} does not implement FALLOC_FL_WRITE_ZEROES (Linux implements it for {} and "
                                  "block devices)",
                                  caps.fs->type, probe::fs::fs_names_with(&probe::fs::fs_traits::kernel_write_zeroes)));
        }
    }
    if (!caps.device) {
        return no("no block device to offload to");
    }
    if (!caps.write_zeroes.unmap) {
        auto it = caps.unknown.find("write_zeroes.unmap");
        return unknown(it != caps.unknown.end() ? it->second : "unmap write zeroes support unknown");
    }
    if (!*caps.write_zeroes.unmap) {
        return no(fmt::format("{} has no unmap write zeroes (write_zeroes_unmap_max_bytes = 0): the kernel returns "
                              "EOPNOTSUPP",
                              caps.device->disk));
    }
    return yes(fmt::format("{}{} with unmap write zeroes (up to {} per command), Linux {}.{}",
                           is_block ? std::string("block device ") : caps.fs->type + " on ", caps.device->disk,
                           bytes_text(*caps.write_zeroes.unmap_max_bytes), in.kernel->major, in.kernel->minor));
}

method_assessment assess_nvme(const capabilities& caps, const assess_inputs& in, bool with_deac) {
    if (!caps.device) {
        return no("no block device");
    }
    if (caps.devices.size() > 1) {
        // FIEMAP's addresses cannot name one of them: never aim commands at a guess.
        return no(fmt::format("the data is on {} devices: an extent's address does not say which", caps.devices.size()));
    }
    if (caps.device->kind == "dm" || caps.device->kind == "md") {
        return no(fmt::format("{} is a {} stack: the mapping to namespace LBAs is not known", caps.device->disk,
                              caps.device->kind));
    }
    if (!caps.nvme) {
        return no(fmt::format("{} is not an NVMe namespace ({})", caps.device->disk, caps.device->kind));
    }
    const nvme_info& n = *caps.nvme;
    if (file_kind_of(caps) == file_kind::regular) {
        if (!traits_of(caps).in_place_rezero) {
            return no(fmt::format("{} is not {}: passthrough zeroing of file extents is only done where "
                                  "extents are overwritten in place",
                                  caps.fs ? caps.fs->type : "the filesystem",
                                  probe::fs::fs_names_with(&probe::fs::fs_traits::in_place_rezero)));
        }
    }
    if (!n.write_zeroes_supported) {
        auto it = caps.unknown.find("nvme.oncs");
        return unknown(it != caps.unknown.end() ? it->second : "ONCS unknown");
    }
    if (!*n.write_zeroes_supported) {
        return no(fmt::format("the controller does not support Write Zeroes (ONCS {:#x}, bit 3 clear)", *n.oncs));
    }
    if (n.passthrough == passthrough_route::none) {
        return no(fmt::format("no passthrough device: {}", n.passthrough_reason));
    }
    if (with_deac) {
        if (!n.dlfeat) {
            auto it = caps.unknown.find("nvme.dlfeat");
            return unknown(it != caps.unknown.end() ? it->second : "DLFEAT unknown");
        }
        if (!n.deac.value_or(false)) {
            return no(fmt::format("DLFEAT {:#04x}: WZDS={} DRB={:03b}: the namespace does not promise that Write "
                                  "Zeroes with DEAC deallocates and reads back zeroes",
                                  *n.dlfeat, n.wzds.value_or(false) ? 1 : 0, n.dlfeat_read_behavior.value_or(0)));
        }
    }
    if (!in.may_passthrough) {
        return unknown("whether this process may send NVMe passthrough commands is unknown");
    }
    if (!*in.may_passthrough) {
        return no(fmt::format("needs CAP_SYS_ADMIN, or on Linux 6.2+ write access to {}", n.passthrough_device));
    }
    std::string scope = file_kind_of(caps) == file_kind::regular ? "already-written extents, through " : "through ";
    const std::string via = n.passthrough == passthrough_route::block_device
                                ? n.passthrough_device + " (the block device's NVME_IOCTL_IO_CMD: no generic char device)"
                                : n.passthrough_device;
    if (with_deac) {
        std::string geo = n.npdg_bytes ? fmt::format("; DEAC on {}-aligned multiples of {}", bytes_text(*n.npda_bytes),
                                                     bytes_text(*n.npdg_bytes))
                                       : "; no preferred deallocate granularity stated";
        return yes(fmt::format("{}{} with DEAC (DLFEAT {:#04x}: WZDS=1, DRB=001b){}", scope, via,
                               *n.dlfeat, geo));
    }
    return yes(fmt::format("{}{} (ONCS bit 3)", scope, via));
}

method_assessment assess_zeroout(const capabilities& caps) {
    if (file_kind_of(caps) != file_kind::block) {
        return no("BLKZEROOUT works on block devices only");
    }
    if (caps.write_zeroes.max_bytes > 0) {
        return yes(fmt::format("device Write Zeroes up to {} per command; never deallocates (NOUNMAP)",
                               bytes_text(caps.write_zeroes.max_bytes)));
    }
    return yes("no device Write Zeroes: the kernel writes zero pages");
}

method_assessment assess_write(const capabilities& caps, const assess_inputs& in) {
    if (caps.io.engine == io_engine::io_uring && in.io_uring_refused) {
        return no(fmt::format("io_uring was asked for ({}) and cannot be set up: {}", caps.io.reason,
                              *in.io_uring_refused));
    }
    const std::string engine = caps.io.engine == io_engine::io_uring
                                   ? std::string("io_uring")
                                   : fmt::format("psync threads ({})", caps.io.reason);
    if (caps.dio) {
        return yes(fmt::format("O_DIRECT writes of zeroes through {} (alignment: memory {}, offset {} bytes)", engine,
                               caps.dio->mem_align, caps.dio->offset_align));
    }
    return yes(fmt::format("buffered writes of zeroes through {} (O_DIRECT is not supported here)", engine));
}

method_assessment assess_method(const capabilities& caps, const assess_inputs& in, zero_method m) {
    switch (m) {
    case zero_method::kernel: return assess_kernel(caps, in);
    case zero_method::nvme_deac: return assess_nvme(caps, in, true);
    case zero_method::nvme: return assess_nvme(caps, in, false);
    case zero_method::zeroout: return assess_zeroout(caps);
    case zero_method::write: return assess_write(caps, in);
    }
    return unknown("not assessed");
}

void assess(capabilities& caps, const assess_inputs& in) {
    assess_cache(caps);
    caps.methods.clear();
    for (zero_method m : all_zero_methods) {
        caps.methods[m] = assess_method(caps, in, m);
    }

    auto usable = [&](zero_method m) { return caps.methods[m].usable.value_or(false); };
    caps.recommended_method.reset();
    if (file_kind_of(caps) == file_kind::block) {
        // Passthrough with DEAC first (block_device_first says why).
        for (zero_method m : block_device_order()) {
            if (usable(m)) {
                caps.recommended_method = m;
                caps.recommended_reason = caps.methods[m].reason;
                break;
            }
        }
        return;
    }
    if (usable(zero_method::kernel)) {
        caps.recommended_method = zero_method::kernel;
        caps.recommended_reason = "the kernel zeroes by deallocation and converts the extents in one call";
    } else if (!usable(zero_method::write)) {
        caps.recommended_reason = "no method can run here: " + caps.methods[zero_method::write].reason;
    } else {
        caps.recommended_method = zero_method::write;
        caps.recommended_reason =
            usable(zero_method::nvme_deac) || usable(zero_method::nvme)
                ? "new extents are unwritten after fallocate: data writes convert them; NVMe Write Zeroes re-zeroes "
                  "already-written extents"
                : caps.fs && caps.fs->fallocate == false
                ? fmt::format("no offload is available for this file; {}: data writes allocate and zero the range",
                              caps.fs->fallocate_reason)
                : "no offload is available for this file";
        if (caps.fs && caps.fs->cow) {
            caps.recommended_reason += fmt::format(" ({} is copy-on-write: written extents gain nothing)", caps.fs->type);
        }
    }
}

}  // namespace wz::plan
