// SPDX-License-Identifier: MIT
#pragma once

#include <wzero/wzero.hpp>

#include <cerrno>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace wz {

// Errno text without the locale dance of strerror_r variants.
std::string errno_text(int errnum);

// "OPERATION PATH: errno text" (and the byte range, when one is given).
error_info make_error(std::string_view operation, std::string_view path, int errnum);
error_info make_error_range(std::string_view operation, std::string_view path, std::uint64_t offset,
                       std::uint64_t length, int errnum);
// An error whose message is given as is (with errnum as its code).
error_info make_error_msg(int errnum, std::string message);
// The same, with what the caller can change (error_reason): set where a refusal is decided.
error_info make_error_msg(int errnum, error_reason reason, std::string message);

// A status as a data field holds it (a write's outcome kept until complete() hands it back):
// nullopt for success.
inline std::optional<error_info> error_of(status s) {
    if (s.ok()) {
        return std::nullopt;
    }
    return std::move(s).error();
}

}  // namespace wz
