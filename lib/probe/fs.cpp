// SPDX-License-Identifier: MIT
#include "probe/fs.hpp"

#include "probe/fs_traits.hpp"
#include "util/errors.hpp"

#include <libmount.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace wz::fsprobe {

result<mount_entry> find_mount(const std::string& path, dev_t st_dev) {
    std::unique_ptr<libmnt_table, decltype(&mnt_free_table)> tb(mnt_new_table(), mnt_free_table);
    if (!tb) {
        return make_error("allocate mount table for", path, ENOMEM);
    }
    int rc = mnt_table_parse_file(tb.get(), "/proc/self/mountinfo");
    if (rc != 0) {
        return make_error("parse /proc/self/mountinfo for", path, rc < 0 ? -rc : EINVAL);
    }
    // btrfs gives each subvolume its own anonymous st_dev, which mountinfo does not show:
    // there the mount point found by walking up the path decides.
    libmnt_fs* fs = mnt_table_find_devno(tb.get(), st_dev, MNT_ITER_BACKWARD);
    if (fs == nullptr) {
        std::unique_ptr<char, decltype(&std::free)> mp(mnt_get_mountpoint(path.c_str()), std::free);
        if (mp) {
            fs = mnt_table_find_target(tb.get(), mp.get(), MNT_ITER_BACKWARD);
        }
    }
    if (fs == nullptr) {
        return make_error_msg(ENOENT, fmt::format("find the mount of {}: not in /proc/self/mountinfo", path));
    }
    mount_entry e;
    auto str = [](const char* s) { return s != nullptr ? std::string(s) : std::string(); };
    e.target = str(mnt_fs_get_target(fs));
    e.source = str(mnt_fs_get_source(fs));
    e.fstype = str(mnt_fs_get_fstype(fs));
    e.options = str(mnt_fs_get_options(fs));
    e.devno = mnt_fs_get_devno(fs);
    return e;
}

namespace {

std::mutex mount_cache_mutex;
std::unordered_map<dev_t, mount_entry> mount_cache;

result<mount_entry> cached_mount(const std::string& path, dev_t st_dev, bool refresh) {
    if (!refresh) {
        std::lock_guard lock(mount_cache_mutex);
        auto it = mount_cache.find(st_dev);
        if (it != mount_cache.end()) {
            return it->second;
        }
    }
    auto m = find_mount(path, st_dev);
    if (m) {
        std::lock_guard lock(mount_cache_mutex);
        mount_cache[st_dev] = *m;
    }
    return m;
}

}  // namespace

result<fs_info> probe_fs(int fd, const std::string& path, dev_t st_dev, bool refresh) {
    struct ::statfs sfs {};
    if (::fstatfs(fd, &sfs) != 0) {
        return make_error("statfs", path, errno);
    }
    fs_info info;
    info.magic = static_cast<std::uint64_t>(sfs.f_type);
    info.block_size = static_cast<std::uint64_t>(sfs.f_bsize);
    auto m = cached_mount(path, st_dev, refresh);
    info.type = fs_type_name(info.magic, m ? std::string_view(m->fstype) : std::string_view());
    if (m) {
        info.mount_point = m->target;
        info.mount_source = m->source;
        info.mount_options = m->options;
    }
    const fs_traits traits = fs_traits_of(info.type);
    info.cow = traits.cow;
    if (info.cow) {
        info.cow_reason = fmt::format("{} writes data out of place: written extents do not make overwrites cheaper",
                                      info.type);
        if (traits.nocow_per_file) {
            int flags = 0;
            if (::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 && (flags & FS_NOCOW_FL) != 0) {
                info.cow = false;
                info.cow_reason = fmt::format("{} file with the No_COW attribute (chattr +C): data is overwritten "
                                              "in place",
                                              info.type);
            } else if (info.mount_options.find("nodatacow") != std::string::npos) {
                info.cow = false;
                info.cow_reason = fmt::format("{} mounted nodatacow: data is overwritten in place", info.type);
            }
        }
    } else {
        info.cow_reason = fmt::format("{} overwrites allocated blocks in place", info.type);
    }
    int flags = 0;
    const bool ext = traits.fallocate == fallocate_support::extents_flag;
    const int flags_err = ext && ::ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0 ? errno : 0;
    assess_fallocate(info, ext ? std::optional<int>(flags) : std::nullopt, flags_err);
    return info;
}

void assess_fallocate(fs_info& info, std::optional<int> inode_flags, int flags_err) {
    switch (fs_traits_of(info.type).fallocate) {
    case fallocate_support::extents_flag:
        if (flags_err != 0 || !inode_flags) {
            info.fallocate.reset();
            info.fallocate_reason = fmt::format("FS_IOC_GETFLAGS: {}: whether the file is extent-mapped is unknown",
                                                errno_text(flags_err != 0 ? flags_err : EINVAL));
        } else if ((*inode_flags & FS_EXTENT_FL) != 0) {
            info.fallocate = true;
            info.fallocate_reason = fmt::format("{} file with extents: fallocate(0) allocates unwritten extents",
                                                info.type);
        } else {
            info.fallocate = false;
            info.fallocate_reason = fmt::format("{} file mapped by indirect blocks (no extents flag): fallocate(2) "
                                                "is refused (EOPNOTSUPP)",
                                                info.type);
        }
        return;
    case fallocate_support::yes:
        info.fallocate = true;
        info.fallocate_reason = fmt::format("{} implements fallocate(0)", info.type);
        return;
    case fallocate_support::unknown: break;
    }
    info.fallocate.reset();
    info.fallocate_reason = fmt::format("not known for {}: tried, and a refusal falls back to data writes",
                                        info.type);
}

}  // namespace wz::fsprobe
