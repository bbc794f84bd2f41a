// SPDX-License-Identifier: MIT
#include "util/privilege.hpp"

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace wz {

bool has_cap_sys_admin() noexcept {
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (::syscall(SYS_capget, &hdr, data) != 0) {
        return false;
    }
    return (data[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective & CAP_TO_MASK(CAP_SYS_ADMIN)) != 0;
}

bool may_passthrough(const char* char_device) noexcept {
    return has_cap_sys_admin() || ::access(char_device, W_OK) == 0;
}

}  // namespace wz
