// SPDX-License-Identifier: MIT
// The C header compiled as C++.
#include <wzero/wzero.h>
