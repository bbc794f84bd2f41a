// SPDX-License-Identifier: MIT
// Unit tests only: what a sanitizer build (tools/sanitize.sh) cannot run, and why.
#pragma once

namespace wz::testing {

// tools/sanitize.sh asan builds with AddressSanitizer and UndefinedBehaviorSanitizer
// together; g++ says so only for the first (__SANITIZE_ADDRESS__).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool asan_ubsan_build = true;
#else
inline constexpr bool asan_ubsan_build = false;
#endif
// tools/sanitize.sh tsan.
#if defined(__SANITIZE_THREAD__)
inline constexpr bool tsan_build = true;
#else
inline constexpr bool tsan_build = false;
#endif
inline constexpr bool sanitizer_build = asan_ubsan_build || tsan_build;

// A test that lowers RLIMIT_NOFILE to the lowest free descriptor: UBSan's vptr check, on a
// type it has not seen yet, reads the object through a pipe(2) it opens for the purpose
// (compiler-rt's IsAccessibleMemoryRange, sanitizer_posix_libcdep.cpp; libubsan of g++ 12
// too), gets EMFILE, and reports an "invalid vptr" for a valid object.
inline constexpr const char* no_descriptor_left_under_ubsan =
    "UBSan's vptr check opens a pipe to read the object (compiler-rt IsAccessibleMemoryRange): with no "
    "descriptor left it reports a valid object as invalid";

}  // namespace wz::testing
