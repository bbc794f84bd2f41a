// SPDX-License-Identifier: MIT
#pragma once

#include "probe/sysfs.hpp"

#include <wzero/wzero.hpp>

#include <optional>
#include <string>

namespace wz::probe::nvme {

// The volatile write cache's current state (Get Features FID 06h, SEL current, DW0 bit 0:
// WCE) as the controller answers through `fd`, an open namespace block device or generic
// char device of DEVICE (named in the reason). `enabled` nullopt: not read, `why_not` says why
// (no privilege, an NVMe status, ...).
struct wce_reading {
    std::optional<bool> enabled;
    std::string why_not;
};
wce_reading read_wce(int fd, const std::string& device);

// The same re-read for a namespace already probed: through its generic char device (no
// database locks that inode: a close there releases nobody's POSIX record locks), else its
// block device. One admin command; opens and closes the device node.
wce_reading reread_wce(const nvme_info& ns);

// Probes the namespace behind `node` (an nvme disk or one of its partitions) with
// libnvme: Identify Controller/Namespace, the NVM-specific pages, Get Features FID 06h.
// What cannot be read (no privilege, old kernel or device) is recorded in `unknown`
// with its reason; nothing is guessed.
void probe_namespace(const sysfs::tree& sys, const sysfs::block_node& node, const device_info& dev,
                     nvme_info& out, unknown_reasons& unknown);

}  // namespace wz::probe::nvme
