// SPDX-License-Identifier: MIT
// Zeroing through the C ABI: wz_create_zeroed, wz_zero_range, wz_extend, wz_rezero and
// PostgreSQL's pg_pwrite_zeros() shape, wz_pwrite_zeros.

#include "capi/capi_internal.hpp"
#include "util/reopen.hpp"

#include <fcntl.h>

#include <atomic>
#include <limits>

namespace {

using wz::capi::fail;

// The smallest sizes a caller may pass: the structs as 0.2.0 released them. Literal, so that
// a member appended later (at the end, docs/abi.md) leaves them where callers built against
// 0.2.0 need them.
constexpr std::size_t zero_opts_first_size = 56;
static_assert(sizeof(wz_zero_opts) >= zero_opts_first_size);
constexpr std::uint32_t known_zero_flags = WZ_ZERO_NO_SYNC | WZ_ZERO_NO_FALLBACK | WZ_ZERO_FORCE;

static_assert(WZ_METHOD_AUTO == static_cast<int>(wz::method_request::automatic) &&
              WZ_METHOD_KERNEL == static_cast<int>(wz::method_request::kernel) &&
              WZ_METHOD_NVME == static_cast<int>(wz::method_request::nvme) &&
              WZ_METHOD_ZEROOUT == static_cast<int>(wz::method_request::zeroout) &&
              WZ_METHOD_WRITE == static_cast<int>(wz::method_request::write));

// The options of one call, and the cancel flag the C progress callback sets: it lives as
// long as the call, which is as long as preallocate_options::cancel is read.
struct zero_call {
    wz::preallocate_options options;
    std::atomic<bool> cancel{false};
    wz_progress_fn progress = nullptr;
    void* progress_arg = nullptr;
    wz_zero_result* result = nullptr;  // checked, to be filled from `report`
    std::uint32_t result_size = 0;
    wz::preallocate_report report;
};

constexpr std::size_t zero_result_first_size = 64;  // as zero_opts_first_size
static_assert(sizeof(wz_zero_result) >= zero_result_first_size);
static_assert(std::size(wz::all_zero_methods) == WZ_ZERO_METHOD_COUNT);

// wz_zero_opts to preallocate_options. Returns 0 or -errno (message naming OPERATION).
int to_options(const wz_zero_opts* in, const std::string& operation, zero_call& call) {
    wz_zero_opts o;
    if (const int rc = wz::capi::copy_struct_in(o, in, zero_opts_first_size, operation.c_str(), "wz_zero_opts");
        rc < 0) {
        return rc;
    }
    if ((o.flags & ~known_zero_flags) != 0) {
        return fail(EINVAL, operation + ": unknown wz_zero_opts.flags bits " + std::to_string(o.flags & ~known_zero_flags));
    }
    if (o.reserved != 0) {
        return fail(EINVAL, operation + ": wz_zero_opts.reserved must be 0");
    }
    if (o.method < WZ_METHOD_AUTO || o.method > WZ_METHOD_WRITE) {
        return fail(EINVAL, operation + ": wz_zero_opts.method " + std::to_string(o.method) +
                                " is no enum wz_method_request");
    }
    wz::preallocate_options& p = call.options;
    p.method = static_cast<wz::method_request>(o.method);
    switch (o.verify) {
    case WZ_VERIFY_EXTENTS: p.verify = wz::verify_mode::extents; break;
    case WZ_VERIFY_NONE: p.verify = wz::verify_mode::none; break;
    case WZ_VERIFY_DATA: p.verify = wz::verify_mode::data; break;
    default:
        return fail(EINVAL, operation + ": wz_zero_opts.verify " + std::to_string(o.verify) + " is no enum wz_verify");
    }
    p.sync = (o.flags & WZ_ZERO_NO_SYNC) == 0;
    p.fallback = (o.flags & WZ_ZERO_NO_FALLBACK) == 0;
    p.force = (o.flags & WZ_ZERO_FORCE) != 0;
    p.queue_depth = o.queue_depth;
    p.rate_bytes_per_second = o.rate_bytes_per_second;
    p.cancel = &call.cancel;
    if (o.result != nullptr) {
        if (const int rc = wz::capi::check_struct_out(o.result, sizeof(wz_zero_result), zero_result_first_size,
                                                      operation.c_str(), "wz_zero_result", &call.result_size);
            rc < 0) {
            return rc;
        }
        call.result = o.result;
    }
    if (o.progress != nullptr) {
        call.progress = o.progress;
        call.progress_arg = o.progress_arg;
        // A non-zero return stops the run: the engine sees the flag and ends with ECANCELED.
        p.on_progress = [&call](const wz::progress_info& info) {
            if (call.progress(info.bytes_done, info.bytes_total, call.progress_arg) != 0) {
                call.cancel.store(true, std::memory_order_relaxed);
            }
        };
    }
    return 0;
}

int done(const wz::status& s) {
    if (!s.ok()) {
        return fail(s.error());
    }
    return 0;
}

// Fills the caller's wz_zero_result (if any) from the report, then maps the status.
int done(zero_call& call, const wz::status& s) {
    if (call.result != nullptr) {
        const wz::preallocate_report& r = call.report;
        wz_zero_result out{};
        out.size = sizeof out;
        out.flags = (r.verified.value_or(false) ? WZ_RESULT_VERIFIED : 0U) |
                    (!r.verified.has_value() && s.ok() ? WZ_RESULT_NOT_PROVEN : 0U) |
                    (r.flushed ? WZ_RESULT_FLUSHED : 0U) | (r.copy_on_write ? WZ_RESULT_COPY_ON_WRITE : 0U);
        out.bytes_done = r.bytes_done;
        for (std::size_t i = 0; i < std::size(wz::all_zero_methods); ++i) {
            auto it = r.bytes_by_method.find(wz::all_zero_methods[i]);
            out.bytes_by_method[i] = it == r.bytes_by_method.end() ? 0 : it->second;
        }
        out.device_commands = r.device_commands;
        wz::capi::fill_struct_out(call.result, call.result_size, &out, sizeof out);
    }
    if (!s.ok()) {
        return fail(s.error());
    }
    return 0;
}

std::string range_text(const char* op, int fd, std::uint64_t offset, std::uint64_t length) {
    return std::string(op) + " " + wz::self_fd_name(fd) + " [offset " + std::to_string(offset) + ", length " +
           std::to_string(length) + "]";
}

}  // namespace

extern "C" {

int wz_create_zeroed(int dirfd, const char* path, uint64_t size, mode_t mode, const struct wz_zero_opts* opts) {
    return wz::capi::guarded("wz_create_zeroed", [&]() -> int {
        if (path == nullptr) {
            return fail(EINVAL, "wz_create_zeroed in " + (dirfd == AT_FDCWD ? std::string(".") : wz::self_fd_name(dirfd)) +
                                    ": path is NULL");
        }
        zero_call call;
        if (const int rc = to_options(opts, std::string("wz_create_zeroed ") + path, call); rc < 0) {
            return rc;
        }
        return done(call, wz::create_zeroed(dirfd, path, size, mode, call.options, &call.report));
    });
}

int wz_zero_range(int fd, uint64_t offset, uint64_t length, const struct wz_zero_opts* opts) {
    return wz::capi::guarded("wz_zero_range", [&]() -> int {
        zero_call call;
        if (const int rc = to_options(opts, range_text("wz_zero_range", fd, offset, length), call); rc < 0) {
            return rc;
        }
        return done(call, wz::zero_range(fd, offset, length, call.options, &call.report));
    });
}

int wz_extend(int fd, uint64_t new_size, const struct wz_zero_opts* opts) {
    return wz::capi::guarded("wz_extend", [&]() -> int {
        zero_call call;
        if (const int rc = to_options(opts, "wz_extend " + wz::self_fd_name(fd) + " to " + std::to_string(new_size) +
                                                " bytes",
                                      call);
            rc < 0) {
            return rc;
        }
        return done(call, wz::extend(fd, new_size, call.options, &call.report));
    });
}

int wz_rezero(int fd, uint64_t offset, uint64_t length, const struct wz_zero_opts* opts) {
    return wz::capi::guarded("wz_rezero", [&]() -> int {
        zero_call call;
        if (const int rc = to_options(opts, range_text("wz_rezero", fd, offset, length), call); rc < 0) {
            return rc;
        }
        return done(call, wz::rezero(fd, offset, length, call.options, &call.report));
    });
}

ssize_t wz_pwrite_zeros(int fd, size_t size, off_t offset) {
    const int rc = wz::capi::guarded("wz_pwrite_zeros", [&]() -> int {
        if (offset < 0) {
            return fail(EINVAL, range_text("wz_pwrite_zeros", fd, static_cast<std::uint64_t>(offset), size) +
                                    ": negative offset");
        }
        if (size > static_cast<std::size_t>(std::numeric_limits<ssize_t>::max()) ||
            static_cast<std::uint64_t>(size) >
                static_cast<std::uint64_t>(std::numeric_limits<off_t>::max()) - static_cast<std::uint64_t>(offset)) {
            // pwrite(2) says EFBIG for a write past the largest offset a file can have.
            return fail(EFBIG, range_text("wz_pwrite_zeros", fd, static_cast<std::uint64_t>(offset), size) +
                                   ": the range ends past the largest file offset");
        }
        if (size == 0) {
            return 0;  // as pwrite(2): nothing to write, nothing written
        }
        // The caller syncs (pg_pwrite_zeros is followed by pg_fsync), and the zeroes are
        // written by the call itself: no sync, no verification pass.
        wz::preallocate_options o;
        o.sync = false;
        o.verify = wz::verify_mode::none;
        return done(wz::zero_range(fd, static_cast<std::uint64_t>(offset), size, o));
    });
    if (rc < 0) {
        errno = -rc;
        return -1;
    }
    return static_cast<ssize_t>(size);
}

}  // extern "C"
