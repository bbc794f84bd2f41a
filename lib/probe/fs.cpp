// SPDX-License-Identifier: MIT
#include "probe/fs.hpp"

#include "probe/fs_traits.hpp"
#include "util/errors.hpp"

#include <fcntl.h>
#include <libmount.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <fmt/format.h>

#include <charconv>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <unordered_map>

namespace wz::probe::fs {

// Debian 12's headers predate it (Linux 6.8).
#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x00004000U
#endif

std::optional<int> parse_fdinfo_mnt_id(std::string_view fdinfo) {
    constexpr std::string_view key = "mnt_id:";
    std::size_t at = 0;
    while (at < fdinfo.size()) {
        std::size_t eol = fdinfo.find('\n', at);
        if (eol == std::string_view::npos) {
            eol = fdinfo.size();
        }
        std::string_view line = fdinfo.substr(at, eol - at);
        at = eol + 1;
        if (line.substr(0, key.size()) != key) {
            continue;
        }
        line.remove_prefix(key.size());
        while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) {
            line.remove_prefix(1);
        }
        int id = 0;
        auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), id, 10);
        if (ec != std::errc() || p == line.data() || id < 0) {
            return std::nullopt;
        }
        return id;
    }
    return std::nullopt;
}

result<int> mount_id_of(int fd, const std::string& path) {
    struct ::statx stx {};
    if (::statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) != 0) {
        return make_error("statx (mount id)", path, errno);
    }
    if ((stx.stx_mask & STATX_MNT_ID) != 0) {
        return static_cast<int>(stx.stx_mnt_id);
    }
    // Before Linux 5.8: the descriptor's fdinfo, in this thread's table (/proc/self is the
    // thread group leader's, which need not hold this descriptor: util/private_fd_table.hpp).
    const std::string info_path = fmt::format("/proc/thread-self/fdinfo/{}", fd);
    std::ifstream in(info_path);
    std::ostringstream text;
    if (in) {
        text << in.rdbuf();
    }
    if (!in) {
        return make_error_msg(ENOENT, fmt::format("find the mount of {}: statx has no STATX_MNT_ID and {} is not "
                                                  "readable",
                                                  path, info_path));
    }
    if (auto id = parse_fdinfo_mnt_id(text.str())) {
        return *id;
    }
    return make_error_msg(ENOENT, fmt::format("find the mount of {}: statx has no STATX_MNT_ID and {} has no "
                                              "mnt_id line",
                                              path, info_path));
}

result<mount_entry> find_mount(int fd, const std::string& path) {
    auto id = mount_id_of(fd, path);
    if (!id) {
        return id.error();
    }
    std::unique_ptr<libmnt_table, decltype(&mnt_free_table)> tb(mnt_new_table(), mnt_free_table);
    if (!tb) {
        return make_error("allocate mount table for", path, ENOMEM);
    }
    // This thread's mount namespace, as the descriptor's mount id is.
    int rc = mnt_table_parse_file(tb.get(), "/proc/thread-self/mountinfo");
    if (rc != 0) {
        return make_error("parse /proc/thread-self/mountinfo for", path, rc < 0 ? -rc : EINVAL);
    }
    std::unique_ptr<libmnt_iter, decltype(&mnt_free_iter)> it(mnt_new_iter(MNT_ITER_FORWARD), mnt_free_iter);
    if (!it) {
        return make_error("allocate mount table iterator for", path, ENOMEM);
    }
    libmnt_fs* fs = nullptr;
    libmnt_fs* found = nullptr;
    while (mnt_table_next_fs(tb.get(), it.get(), &fs) == 0) {
        if (mnt_fs_get_id(fs) == *id) {
            found = fs;
            break;
        }
    }
    if (found == nullptr) {
        return make_error_msg(ENOENT, fmt::format("find the mount of {}: mount id {} is not in "
                                                  "/proc/thread-self/mountinfo (detached with umount -l, or "
                                                  "mounted in another mount namespace)",
                                                  path, *id));
    }
    mount_entry e;
    auto str = [](const char* s) { return s != nullptr ? std::string(s) : std::string(); };
    e.id = *id;
    e.target = str(mnt_fs_get_target(found));
    e.source = str(mnt_fs_get_source(found));
    e.fstype = str(mnt_fs_get_fstype(found));
    e.options = str(mnt_fs_get_options(found));
    e.devno = mnt_fs_get_devno(found);
    return e;
}

namespace {

// Cached by the mount's unique id (never reused while the system runs): a cache keyed by
// st_dev or by the reusable mount id would hand a later mount the entry of an earlier one
// that had the same number (anonymous device numbers and mount ids are both allocated
// lowest-free).
std::mutex mount_cache_mutex;
std::unordered_map<std::uint64_t, mount_entry> mount_cache;

std::optional<std::uint64_t> unique_mount_id(int fd) {
    struct ::statx stx {};
    if (::statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID_UNIQUE, &stx) != 0 || (stx.stx_mask & STATX_MNT_ID_UNIQUE) == 0) {
        return std::nullopt;
    }
    return stx.stx_mnt_id;
}

result<mount_entry> cached_mount(int fd, const std::string& path, bool refresh) {
    const std::optional<std::uint64_t> key = unique_mount_id(fd);
    if (key && !refresh) {
        std::lock_guard lock(mount_cache_mutex);
        auto it = mount_cache.find(*key);
        if (it != mount_cache.end()) {
            return it->second;
        }
    }
    auto m = find_mount(fd, path);
    if (m && key) {
        std::lock_guard lock(mount_cache_mutex);
        mount_cache[*key] = *m;
    }
    return m;
}

}  // namespace

result<fs_info> probe_fs(int fd, const std::string& path, bool refresh, unknown_reasons& unknown) {
    struct ::statfs sfs {};
    if (::fstatfs(fd, &sfs) != 0) {
        return make_error("statfs", path, errno);
    }
    fs_info info;
    info.magic = static_cast<std::uint64_t>(sfs.f_type);
    info.block_size = static_cast<std::uint64_t>(sfs.f_bsize);
    auto m = cached_mount(fd, path, refresh);
    info.type = fs_type_name(info.magic, m ? std::string_view(m->fstype) : std::string_view());
    if (m) {
        info.mount_point = m->target;
        info.mount_source = m->source;
        info.mount_options = m->options;
    } else {
        unknown["fs.mount_point"] = m.error().message;
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

}  // namespace wz::probe::fs
