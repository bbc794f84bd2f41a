// SPDX-License-Identifier: MIT
// The C API: thin wrappers over the C++ one. No exception crosses this boundary.
// This file: what every family shares (the thread's last error, extensible structs), the
// version and the JSON capability record. Zeroing, wz_stat and the writer have their own.

#include "capi/capi_internal.hpp"

#include <algorithm>
#include <cstring>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

namespace wz::capi {

namespace {

// Per thread, as errno: a failure on one thread never overwrites another's message.
thread_local std::string last_error;
thread_local error_reason last_reason = error_reason::none;

// The C values are the C++ ones: wz_last_error_reason() hands the reason on as it is.
static_assert(static_cast<int>(error_reason::none) == WZ_REASON_NONE);
static_assert(static_cast<int>(error_reason::in_use) == WZ_REASON_IN_USE);
static_assert(static_cast<int>(error_reason::lease_lost) == WZ_REASON_LEASE_LOST);
static_assert(static_cast<int>(error_reason::exclusive_unavailable) == WZ_REASON_EXCLUSIVE_UNAVAILABLE);
static_assert(static_cast<int>(error_reason::holds_data) == WZ_REASON_HOLDS_DATA);
static_assert(static_cast<int>(error_reason::method_unavailable) == WZ_REASON_METHOD_UNAVAILABLE);
static_assert(static_cast<int>(error_reason::in_place_excluded) == WZ_REASON_IN_PLACE_EXCLUDED);
static_assert(static_cast<int>(error_reason::not_written) == WZ_REASON_NOT_WRITTEN);
static_assert(static_cast<int>(error_reason::unsafe_durability) == WZ_REASON_UNSAFE_DURABILITY);

}  // namespace

void set_last_error(const char* message) noexcept {
    last_reason = error_reason::none;
    try {
        last_error = message;
    } catch (...) {  // deliberately ignored: out of memory keeps the previous text
    }
}

void set_last_error(const std::string& message) noexcept { set_last_error(message.c_str()); }

void set_last_error(const error_info& err) noexcept {
    set_last_error(err.message);
    last_reason = err.reason;
}

const char* last_error_text() noexcept { return last_error.c_str(); }

int last_error_reason() noexcept { return static_cast<int>(last_reason); }

int fail(int errnum, const std::string& message) noexcept {
    set_last_error(message);
    return -errnum;
}

int fail(const error_info& err) noexcept {
    const int code = err.code.value();
    set_last_error(err);
    // A negative or zero code is no errno a C caller could act on.
    return code > 0 ? -code : -EIO;
}

namespace {

// The rule every extensible struct follows, input or output: the caller's size is at least
// the first version's (EINVAL), and bytes past what this library knows are zero (E2BIG), as
// the kernel's copy_struct_from_user() has it. A struct declared with an initializer
// ({ .size = sizeof c }) meets it in every version.
int check_size(const void* user, std::size_t known_size, std::size_t first_version_size, const char* operation,
               const char* struct_name, std::uint32_t* size_out) noexcept {
    // Every extensible struct starts with `uint32_t size`.
    std::uint32_t user_size = 0;
    std::memcpy(&user_size, user, sizeof user_size);
    if (user_size < first_version_size) {
        set_last_error(std::string(operation) + ": struct " + struct_name + " size " + std::to_string(user_size) +
                       " is smaller than its first version (" + std::to_string(first_version_size) +
                       " bytes): set it to sizeof(struct " + struct_name + ")");
        return -EINVAL;
    }
    if (user_size > known_size) {
        // A newer header's fields this library does not know: harmless only when unset.
        const auto* bytes = static_cast<const unsigned char*>(user);
        if (!std::all_of(bytes + known_size, bytes + user_size, [](unsigned char b) { return b == 0; })) {
            set_last_error(std::string(operation) + ": struct " + struct_name + " size " + std::to_string(user_size) +
                           " has non-zero bytes past the " + std::to_string(known_size) +
                           " this library knows (built against a newer header?)");
            return -E2BIG;
        }
    }
    *size_out = user_size;
    return 0;
}

}  // namespace

int copy_struct_in(void* dst, std::size_t known_size, const void* src, std::size_t first_version_size,
                   const char* operation, const char* struct_name) noexcept {
    std::memset(dst, 0, known_size);
    if (src == nullptr) {
        return 0;  // NULL options: the defaults, which are all-zero
    }
    std::uint32_t user_size = 0;
    if (const int rc = check_size(src, known_size, first_version_size, operation, struct_name, &user_size); rc < 0) {
        return rc;
    }
    std::memcpy(dst, src, std::min<std::size_t>(user_size, known_size));
    return 0;
}

int check_struct_out(const void* dst, std::size_t known_size, std::size_t first_version_size, const char* operation,
                     const char* struct_name, std::uint32_t* size_out) noexcept {
    if (dst == nullptr) {
        set_last_error(std::string(operation) + ": struct " + struct_name + " pointer is NULL");
        return -EINVAL;
    }
    return check_size(dst, known_size, first_version_size, operation, struct_name, size_out);
}

void fill_struct_out(void* dst, std::uint32_t caller_size, const void* src, std::size_t known_size) noexcept {
    // The size member stays what the caller set; bytes past known_size were checked zero.
    const std::size_t n = std::min<std::size_t>(caller_size, known_size);
    std::memcpy(static_cast<unsigned char*>(dst) + sizeof(std::uint32_t),
                static_cast<const unsigned char*>(src) + sizeof(std::uint32_t), n - sizeof(std::uint32_t));
}

}  // namespace wz::capi

namespace {

void copy_message(const std::string& msg, char* buf, unsigned long len) {
    if (buf == nullptr || len == 0) {
        return;
    }
    std::size_t n = std::min<std::size_t>(msg.size(), len - 1);
    std::memcpy(buf, msg.data(), n);
    buf[n] = '\0';
}

}  // namespace

using wz::capi::fail;
using wz::capi::set_last_error;

extern "C" {

const char* wz_version(void) { return wz::version(); }

int wz_io_engine(int request, char* reason, size_t reason_len) {
    try {
        if (request != WZ_ENGINE_AUTO) {
            if (request != WZ_ENGINE_IO_URING && request != WZ_ENGINE_PSYNC) {
                return wz::capi::fail(EINVAL, fmt::format("wz_io_engine: unknown request {}", request));
            }
            const wz::status st = wz::select_io_engine(request == WZ_ENGINE_PSYNC ? wz::io_engine_request::psync
                                                                                  : wz::io_engine_request::io_uring);
            if (!st.ok()) {
                return wz::capi::fail(st.error());
            }
        }
        const wz::io_engine_info e = wz::current_io_engine();
        if (reason != nullptr && reason_len > 0) {
            const std::size_t n = std::min(e.reason.size(), reason_len - 1);
            std::memcpy(reason, e.reason.data(), n);
            reason[n] = '\0';
        }
        return e.engine == wz::io_engine::psync ? WZ_ENGINE_PSYNC : WZ_ENGINE_IO_URING;
    } catch (...) {
        return wz::capi::fail(ENOMEM, "wz_io_engine: out of memory");
    }
}

const char* wz_last_error(void) {
    // c_str() of a thread_local string does not throw; "" until the first failure.
    return wz::capi::last_error_text();
}

int wz_last_error_reason(void) { return wz::capi::last_error_reason(); }

int wz_stat_json(const char* path, char** json_out, char* errbuf, unsigned long errbuf_len) {
    const int rc = wz::capi::guarded("wz_stat_json", [&]() -> int {
        if (path == nullptr || json_out == nullptr) {
            return fail(EINVAL, "wz_stat_json: path and json_out must not be NULL");
        }
        *json_out = nullptr;
        auto caps = wz::stat(path);
        if (!caps) {
            return fail(caps.error());
        }
        std::string text = wz::to_json(*caps);
        char* out = static_cast<char*>(std::malloc(text.size() + 1));
        if (out == nullptr) {
            return fail(ENOMEM, std::string("wz_stat_json ") + path + ": out of memory");
        }
        std::memcpy(out, text.c_str(), text.size() + 1);
        *json_out = out;
        return 0;
    });
    if (rc < 0) {
        copy_message(wz_last_error(), errbuf, errbuf_len);
    }
    return rc;
}

void wz_free(void* p) { std::free(p); }

}  // extern "C"
