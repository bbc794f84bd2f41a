// SPDX-License-Identifier: MIT
#include "util/errors.hpp"

#include <fmt/format.h>

#include <cstring>

namespace wz {

std::string errno_text(int errnum) {
    return std::system_category().message(errnum);
}

error_info make_error(std::string_view operation, std::string_view path, int errnum) {
    return error_info{std::error_code(errnum, std::system_category()),
                 fmt::format("{} {}: {}", operation, path, errno_text(errnum))};
}

error_info make_error_range(std::string_view operation, std::string_view path, std::uint64_t offset,
                       std::uint64_t length, int errnum) {
    return error_info{std::error_code(errnum, std::system_category()),
                 fmt::format("{} {} [offset {}, length {}]: {}", operation, path, offset, length,
                             errno_text(errnum))};
}

error_info make_error_msg(int errnum, std::string message) {
    return error_info{std::error_code(errnum, std::system_category()), std::move(message)};
}

error_info make_error_msg(int errnum, error_reason reason, std::string message) {
    return error_info{std::error_code(errnum, std::system_category()), std::move(message), reason};
}

}  // namespace wz
