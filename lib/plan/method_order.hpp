// SPDX-License-Identifier: MIT
#pragma once

// The order in which zeroing methods are preferred. There is one: wz::all_zero_methods
// (best first), which the record, the assessor and the planner all walk. What departs from
// it is stated here as data, with its reason, not as a second list.

#include <wzero/wzero.hpp>

#include <algorithm>
#include <array>
#include <iterator>
#include <optional>
#include <vector>

namespace wz::plan {

// A block device takes NVMe Write Zeroes with DEAC before the kernel's path: passthrough
// keeps DEAC to the NPDA/NPDG-aligned spans (split_nvme_range), where the kernel's
// REQ_OP_WRITE_ZEROES with unmap deallocates over the whole range. (A regular file has no
// such choice: the kernel's call converts its extents, passthrough only re-zeroes written
// ones; see plan_file_first_stage and plan_file_extents.)
inline constexpr zero_method block_device_first = zero_method::nvme_deac;

using method_order = std::array<zero_method, std::size(all_zero_methods)>;

// all_zero_methods with block_device_first moved to the front.
constexpr method_order block_device_order() {
    method_order order{};
    order[0] = block_device_first;
    std::size_t n = 1;
    for (zero_method m : all_zero_methods) {
        if (m != block_device_first) {
            order[n++] = m;
        }
    }
    return order;
}

// The request (--method) that selects a method: nvme selects Write Zeroes with DEAC where
// it may be set and without where not.
constexpr method_request request_of(zero_method m) {
    switch (m) {
    case zero_method::kernel: return method_request::kernel;
    case zero_method::nvme_deac:
    case zero_method::nvme: return method_request::nvme;
    case zero_method::zeroout: return method_request::zeroout;
    case zero_method::write: return method_request::write;
    }
    return method_request::automatic;
}

// The method a request names (automatic: none), for messages.
constexpr std::optional<zero_method> named_method(method_request r) {
    switch (r) {
    case method_request::kernel: return zero_method::kernel;
    case method_request::nvme: return zero_method::nvme;
    case method_request::zeroout: return zero_method::zeroout;
    case method_request::write: return zero_method::write;
    case method_request::automatic: break;
    }
    return std::nullopt;
}

// The requests a block device tries, in order: block_device_order() by request, each once.
inline std::vector<method_request> block_device_requests() {
    std::vector<method_request> out;
    for (zero_method m : block_device_order()) {
        const method_request r = request_of(m);
        if (std::find(out.begin(), out.end(), r) == out.end()) {
            out.push_back(r);
        }
    }
    return out;
}

}  // namespace wz::plan
