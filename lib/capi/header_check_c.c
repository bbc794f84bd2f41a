/* SPDX-License-Identifier: MIT */
/* Compiled as C99: the C header must stand on its own. */
#include <wzero/wzero.h>
