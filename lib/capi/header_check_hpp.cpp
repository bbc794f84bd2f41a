// SPDX-License-Identifier: MIT
// The C++ header must stand on its own.
#include <wzero/wzero.hpp>
