// SPDX-License-Identifier: MIT
// Shared by the C API's translation units: the thread's last error, the extensible-struct
// rules and the guard that keeps C++ exceptions from crossing the C ABI.
#pragma once

#include <wzero/wzero.h>
#include <wzero/wzero.hpp>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <type_traits>

namespace wz::capi {

// Sets the calling thread's wz_last_error() text. Never throws: a message that cannot be
// stored (out of memory) leaves the previous one, and the return value still says what failed.
void set_last_error(const char* message) noexcept;
void set_last_error(const std::string& message) noexcept;
// The same with the error's reason (those above set WZ_REASON_NONE).
void set_last_error(const error_info& err) noexcept;
// The thread's message ("" until a call fails), for wz_last_error().
const char* last_error_text() noexcept;
// The thread's enum wz_error_reason, for wz_last_error_reason().
int last_error_reason() noexcept;

// Records MESSAGE and returns -ERRNUM: the common failure path of every entry point.
int fail(int errnum, const std::string& message) noexcept;

// The negative errno for a C++ error (EIO when the library gave no code), its message kept.
int fail(const error_info& err) noexcept;

// An option struct the caller passes in: NULL means the defaults (all-zero);
// a size below the first version's is EINVAL; bytes past what this library knows must be
// zero (E2BIG otherwise), as the kernel's copy_struct_from_user() does. FIRST_VERSION_SIZE is
// the size of the struct as the first header that had it declared it. Returns 0 or -errno
// (the message then names OPERATION and the struct).
int copy_struct_in(void* dst, std::size_t known_size, const void* src, std::size_t first_version_size,
                   const char* operation, const char* struct_name) noexcept;

template <class T>
int copy_struct_in(T& dst, const T* src, std::size_t first_version_size, const char* operation,
                   const char* struct_name) noexcept {
    static_assert(std::is_trivially_copyable_v<T>);
    return copy_struct_in(&dst, sizeof(T), src, first_version_size, operation, struct_name);
}

// A result struct the caller passes out: the same size rule as copy_struct_in (EINVAL below
// the first version's size, E2BIG for non-zero bytes past what this library knows), and NULL
// is EINVAL. SIZE_OUT receives the caller's size for fill_struct_out(), which fills what this
// library knows and leaves the caller's size member as it was. Returns 0 or -errno.
int check_struct_out(const void* dst, std::size_t known_size, std::size_t first_version_size, const char* operation,
                     const char* struct_name, std::uint32_t* size_out) noexcept;
void fill_struct_out(void* dst, std::uint32_t caller_size, const void* src, std::size_t known_size) noexcept;

// Runs BODY, turning any C++ exception into a negative errno (ENOMEM for std::bad_alloc, EIO
// otherwise) with a message naming OPERATION: no exception crosses the C ABI.
template <class Body>
auto guarded(const char* operation, Body&& body) noexcept -> decltype(body()) {
    try {
        return body();
    } catch (const std::bad_alloc&) {
        set_last_error(std::string(operation) + ": out of memory");
        return static_cast<decltype(body())>(-ENOMEM);
    } catch (const std::exception& e) {
        set_last_error(std::string(operation) + ": internal error: " + e.what());
        return static_cast<decltype(body())>(-EIO);
    } catch (...) {
        set_last_error(std::string(operation) + ": internal error");
        return static_cast<decltype(body())>(-EIO);
    }
}

}  // namespace wz::capi
