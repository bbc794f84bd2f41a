#pragma once

#include <wzero/wzero.hpp>

#include <cerrno>
#include <cstdint>
#include <string>
#include <string_view>

namespace wz {

// Errno text without the locale dance of strerror_r variants.
std::string errno_text(int errnum);

// "OPERATION PATH: errno text" (and the byte range, when one is given).
error_info make_error(std::string_view operation, std::string_view path, int errnum);
error_info make_error_range(std::string_view operation, std::string_view path, std::uint64_t offset,
                       std::uint64_t length, int errnum);
// An error whose message is given as is (with errnum as its code).
error_info make_error_msg(int errnum, std::string message);

}  // namespace wz
