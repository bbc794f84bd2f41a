// SPDX-License-Identifier: MIT
// wz::version(): the library's version, set by the build (project(wzero VERSION ...)).

#include <wzero/wzero.hpp>

namespace wz {

const char* version() noexcept { return WZERO_VERSION; }

}  // namespace wz
