// SPDX-License-Identifier: MIT
// The shared library is the whole wzero_core archive; this file only anchors the target.
