// SPDX-License-Identifier: MIT
#pragma once

// The error category of NVMe completion status values, shared by the probe (admin commands
// through libnvme) and the I/O engine (Write Zeroes and Flush through passthrough), so that
// neither depends on the other.

#include <system_error>

namespace wz {

// NVMe completion status values (SCT and SC, as libnvme and the passthrough ioctl return
// them: > 0) are not errnos: they get their own category, "nvme-status".
const std::error_category& nvme_status_category() noexcept;

}  // namespace wz
