// SPDX-License-Identifier: MIT
#pragma once

#include <wzero/wzero.hpp>

namespace wz {

// Does this process have CAP_SYS_ADMIN in its effective set? (NVMe admin commands and
// unrestricted I/O passthrough need it.)
bool has_cap_sys_admin() noexcept;

// May this process send NVMe I/O commands through N.passthrough_device? With CAP_SYS_ADMIN
// always. Without it only on Linux 6.2+, whose nvme_cmd_allowed takes I/O commands on a
// descriptor opened for writing: the device must then be writable by us. False when the
// namespace has no passthrough route.
bool may_passthrough(const nvme_info& n) noexcept;

// Opens N.passthrough_device for NVMe I/O commands, close-on-exec: the char device O_RDWR;
// the block device O_RDONLY with CAP_SYS_ADMIN (the ioctl asks no more of it, and a read-only
// open never meets the kernel's refusal of writers to a mounted device), else O_RDWR.
// -1 with errno on failure, ENODEV when there is no route.
int open_passthrough(const nvme_info& n) noexcept;

}  // namespace wz
