// SPDX-License-Identifier: MIT
// wz_stat(): the part of the capability record a database decides on, as a C struct.

#include "capi/capi_internal.hpp"
#include "util/reopen.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

namespace {

// The smallest size a caller may pass: the struct as 0.2.0 released it. Literal, so that a
// member appended later (at the end, docs/abi.md) leaves it where callers built against 0.2.0
// need it.
constexpr std::size_t caps_first_size = 96;
constexpr std::size_t cache_state_first_size = 24;
static_assert(sizeof(wz_caps) >= caps_first_size && sizeof(wz_cache_state) >= cache_state_first_size);

// The C enum indexes method_usable[] by the C++ record's order: keep them in step.
static_assert(wz::all_zero_methods[WZ_ZERO_KERNEL] == wz::zero_method::kernel);
static_assert(wz::all_zero_methods[WZ_ZERO_NVME_DEAC] == wz::zero_method::nvme_deac);
static_assert(wz::all_zero_methods[WZ_ZERO_NVME] == wz::zero_method::nvme);
static_assert(wz::all_zero_methods[WZ_ZERO_ZEROOUT] == wz::zero_method::zeroout);
static_assert(wz::all_zero_methods[WZ_ZERO_WRITE] == wz::zero_method::write);
static_assert(std::size(wz::all_zero_methods) == WZ_ZERO_METHOD_COUNT);
static_assert(WZ_CACHE_WRITE_BACK == static_cast<int>(wz::cache_mode::write_back) &&
              WZ_CACHE_WRITE_THROUGH == static_cast<int>(wz::cache_mode::write_through));

std::int32_t tri(const std::optional<bool>& v) {
    if (!v) {
        return WZ_UNKNOWN;
    }
    return *v ? 1 : 0;
}

std::int32_t method_index(wz::zero_method m) {
    for (std::size_t i = 0; i < std::size(wz::all_zero_methods); ++i) {
        if (wz::all_zero_methods[i] == m) {
            return static_cast<std::int32_t>(i);
        }
    }
    return WZ_UNKNOWN;
}

wz_caps to_c(const wz::capabilities& rec) {
    wz_caps c{};
    c.size = sizeof c;
    c.file_type = rec.file_type == "block" ? WZ_FILE_BLOCK : WZ_FILE_REGULAR;
    c.size_bytes = rec.size_bytes;
    c.cache_effective = rec.cache.effective ? static_cast<std::int32_t>(*rec.cache.effective) : WZ_UNKNOWN;
    c.flush_needed = tri(rec.cache.flush_needed);
    c.fua = tri(rec.cache.fua);
    c.dsync_overwrite_fua = tri(rec.cache.dsync_overwrite_fua);
    if (rec.dio) {
        c.dio_mem_align = rec.dio->mem_align;
        c.dio_offset_align = rec.dio->offset_align;
    }
    c.recommended_method = rec.recommended_method ? method_index(*rec.recommended_method) : WZ_UNKNOWN;
    if (rec.nvme) {
        c.deac = tri(rec.nvme->deac);
        c.lba_bytes = rec.nvme->lba_bytes;
        c.npdg_bytes = rec.nvme->npdg_bytes.value_or(0);
        c.npda_bytes = rec.nvme->npda_bytes.value_or(0);
    } else {
        // Not an NVMe namespace: there is no Write Zeroes with DEAC to rely on.
        c.deac = 0;
    }
    for (std::size_t i = 0; i < std::size(wz::all_zero_methods); ++i) {
        const auto it = rec.methods.find(wz::all_zero_methods[i]);
        c.method_usable[i] = it == rec.methods.end() ? WZ_UNKNOWN : tri(it->second.usable);
    }
    return c;
}

}  // namespace

extern "C" int wz_stat(const char* path, struct wz_caps* caps) {
    return wz::capi::guarded("wz_stat", [&]() -> int {
        std::uint32_t caller_size = 0;
        if (path == nullptr) {
            return wz::capi::fail(EINVAL, "wz_stat: path is NULL");
        }
        if (const int rc = wz::capi::check_struct_out(caps, sizeof(wz_caps), caps_first_size, (std::string("wz_stat ") + path).c_str(),
                                                       "wz_caps", &caller_size);
            rc < 0) {
            return rc;
        }
        auto rec = wz::stat(path);
        if (!rec) {
            return wz::capi::fail(rec.error());
        }
        const wz_caps c = to_c(*rec);
        wz::capi::fill_struct_out(caps, caller_size, &c, sizeof c);
        return 0;
    });
}

extern "C" int wz_write_cache(int fd, uint64_t max_age_ns, struct wz_cache_state* out) {
    return wz::capi::guarded("wz_write_cache", [&]() -> int {
        const std::string path = wz::self_fd_name(fd);
        std::uint32_t caller_size = 0;
        if (const int rc = wz::capi::check_struct_out(out, sizeof(wz_cache_state), cache_state_first_size,
                                                       ("wz_write_cache " + path).c_str(), "wz_cache_state",
                                                       &caller_size);
            rc < 0) {
            return rc;
        }
        if (fd < 0) {
            return wz::capi::fail(EBADF, "wz_write_cache: fd " + std::to_string(fd) + " is not a descriptor");
        }
        if (max_age_ns > static_cast<std::uint64_t>(std::chrono::nanoseconds::max().count())) {
            return wz::capi::fail(EINVAL, "wz_write_cache " + path + ": max_age_ns " + std::to_string(max_age_ns) +
                                              " is too large");
        }
        auto r = wz::write_cache(fd, path, std::chrono::nanoseconds(static_cast<std::int64_t>(max_age_ns)));
        if (!r) {
            return wz::capi::fail(r.error());
        }
        wz_cache_state c{};
        c.size = sizeof c;
        c.effective = r->effective ? static_cast<std::int32_t>(*r->effective) : WZ_UNKNOWN;
        c.age_ns = static_cast<std::uint64_t>(std::max<std::int64_t>(r->age.count(), 0));
        c.flags = r->reread ? WZ_WRITE_CACHE_REREAD : 0;
        wz::capi::fill_struct_out(out, caller_size, &c, sizeof c);
        return 0;
    });
}
