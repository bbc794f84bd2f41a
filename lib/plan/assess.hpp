// SPDX-License-Identifier: MIT
#pragma once

// The method rules (docs/design.md) applied to a probed capability record.
// Pure: the record and a few facts about the process in, verdicts out. No I/O here.

#include <wzero/wzero.hpp>

#include <optional>
#include <string>

namespace wz::plan {

struct kernel_version {
    unsigned major = 0, minor = 0;
    friend bool operator<(const kernel_version& a, const kernel_version& b) {
        return a.major != b.major ? a.major < b.major : a.minor < b.minor;
    }
};
// "6.17.0-rc3-amd64" -> {6, 17}; nullopt when it does not start with N.N.
std::optional<kernel_version> parse_kernel_release(const std::string& release);

// FALLOC_FL_WRITE_ZEROES was merged in Linux 6.17, for ext4 and block devices.
inline constexpr kernel_version write_zeroes_falloc_since{6, 17};

struct assess_inputs {
    std::optional<kernel_version> kernel;
    // May this process send NVMe I/O passthrough commands to the namespace's passthrough
    // device? (CAP_SYS_ADMIN, or the device opened for write: Linux 6.2+ nvme_cmd_allowed).
    std::optional<bool> may_passthrough;
    // io_uring was asked for (caps.io.forced) and cannot be set up here: why (probe_io_uring).
    std::optional<std::string> io_uring_refused;
};

// Fills caps.cache.effective/flush_needed (with reasons), caps.methods and
// caps.recommended_method from everything else in the record.
void assess(capabilities& caps, const assess_inputs& in);

// One method's verdict: the switch that adding a method extends.
method_assessment assess_method(const capabilities& caps, const assess_inputs& in, zero_method m);

// The device's effective write cache and why, from the record's NVMe VWC and WCE, else the
// kernel's queue/write_cache (nullopt: no device, or nothing readable). The part of the cache
// verdict that a re-read of the write cache changes: the probe recomputes it after one.
struct cache_verdict {
    std::optional<cache_mode> effective;
    std::string reason;
};
[[nodiscard]] cache_verdict effective_cache(const capabilities& caps);

// Pieces of assess(), exposed for the unit tests.
// The record's cache: each of caps.devices on its own (assess_device_cache), then the file's
// answer: one device's, the least safe of several, the safe side where no device is known
// (a flush needed, except on a memory filesystem), and a flush needed for a regular file
// whose filesystem does not overwrite written extents in place, whatever the cache.
void assess_cache(capabilities& caps);
// One device's effective cache mode and whether a durable write to it needs a flush, from
// the kernel's mode and, on NVMe, the controller's VWC and WCE; reasons looked up in `unknown`
// under `unknown_prefix` (device_unknown_prefix).
void assess_device_cache(const device_info& dev, const std::optional<nvme_info>& nvme, cache_info& cache,
                         const unknown_reasons& unknown, const std::string& unknown_prefix);
// Where the facts of caps.devices[index] that could not be read are keyed in caps.unknown:
// "" for the first (the record's `device`), "devices[N]." for the others.
std::string device_unknown_prefix(std::size_t index);
method_assessment assess_kernel(const capabilities& caps, const assess_inputs& in);
method_assessment assess_nvme(const capabilities& caps, const assess_inputs& in, bool with_deac);
method_assessment assess_zeroout(const capabilities& caps);
method_assessment assess_write(const capabilities& caps, const assess_inputs& in);

}  // namespace wz::plan
