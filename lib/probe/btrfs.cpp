// SPDX-License-Identifier: MIT
#include "probe/btrfs.hpp"

#include "util/errors.hpp"

#include <linux/btrfs.h>
#include <sys/ioctl.h>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace wz::probe::btrfs {

std::string format_fsid(std::span<const std::uint8_t, 16> fsid) {
    std::string out;
    for (std::size_t i = 0; i < fsid.size(); ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            out += '-';
        }
        out += fmt::format("{:02x}", fsid[i]);
    }
    return out;
}

result<std::vector<member>> sysfs_members(const sysfs::tree& sys, const std::string& fsid) {
    const std::string dir = fmt::format("fs/btrfs/{}/devices", fsid);
    std::error_code ec;
    std::filesystem::directory_iterator entries(fmt::format("{}/{}", sys.root(), dir), ec);
    if (ec) {
        return make_error_msg(ec.value(), fmt::format("list the devices of btrfs {}: {}/{}: {}", fsid, sys.root(), dir,
                                                      ec.message()));
    }
    std::vector<member> out;
    for (const auto& e : entries) {
        member m;
        m.name = e.path().filename().string();
        const std::string dev_attr = fmt::format("{}/{}/dev", dir, m.name);
        auto text = sys.read(dev_attr);
        auto mm = text ? sysfs::parse_dev(*text) : std::nullopt;
        if (!mm) {
            return make_error_msg(ENODEV, fmt::format("list the devices of btrfs {}: {}/{} is not readable", fsid,
                                                      sys.root(), dev_attr));
        }
        m.major = mm->first;
        m.minor = mm->second;
        out.push_back(std::move(m));
    }
    std::sort(out.begin(), out.end(),
              [](const member& a, const member& b) { return std::pair(a.major, a.minor) < std::pair(b.major, b.minor); });
    return out;
}

result<filesystem> devices_of(int fd, const std::string& path, const sysfs::tree& sys) {
    struct btrfs_ioctl_fs_info_args args {};
    if (::ioctl(fd, BTRFS_IOC_FS_INFO, &args) != 0) {
        return make_error("BTRFS_IOC_FS_INFO", path, errno);
    }
    filesystem fs;
    fs.fsid = format_fsid(std::span<const std::uint8_t, 16>(args.fsid, 16));
    fs.num_devices = args.num_devices;
    auto members = sysfs_members(sys, fs.fsid);
    if (!members) {
        return members.error();
    }
    if (members->empty()) {
        return make_error_msg(ENODEV, fmt::format("list the devices of btrfs {} (holding {}): {}/fs/btrfs/{}/devices "
                                                  "is empty",
                                                  fs.fsid, path, sys.root(), fs.fsid));
    }
    fs.devices = std::move(*members);
    return fs;
}

}  // namespace wz::probe::btrfs
