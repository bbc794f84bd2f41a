// SPDX-License-Identifier: MIT
#include "util/privilege.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace wz {

namespace {

// Linux 6.2 or later ("6.2.0-..."); false when the release does not parse.
bool kernel_at_least_6_2() noexcept {
    utsname u{};
    unsigned major = 0, minor = 0;
    if (::uname(&u) != 0 || std::sscanf(u.release, "%u.%u", &major, &minor) != 2) {
        return false;
    }
    return major > 6 || (major == 6 && minor >= 2);
}

}  // namespace

bool has_cap_sys_admin() noexcept {
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (::syscall(SYS_capget, &hdr, data) != 0) {
        return false;
    }
    return (data[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective & CAP_TO_MASK(CAP_SYS_ADMIN)) != 0;
}

bool may_passthrough(const nvme_info& n) noexcept {
    if (n.passthrough == passthrough_route::none || n.passthrough_device.empty()) {
        return false;
    }
    return has_cap_sys_admin() || (kernel_at_least_6_2() && ::access(n.passthrough_device.c_str(), W_OK) == 0);
}

int open_passthrough(const nvme_info& n) noexcept {
    if (n.passthrough == passthrough_route::none || n.passthrough_device.empty()) {
        errno = ENODEV;
        return -1;
    }
    const int mode = n.passthrough == passthrough_route::block_device && has_cap_sys_admin() ? O_RDONLY : O_RDWR;
    return ::open(n.passthrough_device.c_str(), mode | O_CLOEXEC);
}

}  // namespace wz
