// SPDX-License-Identifier: MIT
#pragma once

namespace wz {

// Does this process have CAP_SYS_ADMIN in its effective set? (NVMe admin commands and
// unrestricted I/O passthrough need it.)
bool has_cap_sys_admin() noexcept;

// May this process send NVMe I/O passthrough commands to `char_device`? CAP_SYS_ADMIN, or
// the device writable by us (Linux 6.2+ nvme_cmd_allowed lets a writable fd send I/O).
bool may_passthrough(const char* char_device) noexcept;

}  // namespace wz
