// SPDX-License-Identifier: MIT
#pragma once

#include "probe/sysfs.hpp"

#include <wzero/wzero.hpp>

namespace wz::nvme {

// Probes the namespace behind `node` (an nvme disk or one of its partitions) with
// libnvme: Identify Controller/Namespace, the NVM-specific pages, Get Features FID 06h.
// What cannot be read (no privilege, old kernel or device) is recorded in `unknown`
// with its reason; nothing is guessed.
void probe_namespace(const sysfs::tree& sys, const sysfs::block_node& node, const device_info& dev,
                     nvme_info& out, unknown_reasons& unknown);

}  // namespace wz::nvme
