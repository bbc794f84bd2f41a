// SPDX-License-Identifier: MIT
#pragma once

// The kernel's write-zeroes offload, fallocate(FALLOC_FL_WRITE_ZEROES): its one call site.

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace wz::zero {

// Zeroes [offset, offset + length) of `fd` with FALLOC_FL_WRITE_ZEROES (Linux 6.17): 0, or
// -errno. A refusal (kernel_zero_refused) on a regular file is remembered for its filesystem,
// `fs_dev` (its st_dev; see probe::fs::kernel_write_zeroes_refused); nullopt (a block device):
// nothing is remembered.
[[nodiscard]] int kernel_write_zeroes(int fd, std::uint64_t offset, std::uint64_t length,
                                      std::optional<dev_t> fs_dev);

// Is -err the kernel saying "not here" (EOPNOTSUPP; EINVAL from kernels before 6.17, which
// do not know the flag), rather than a failure of the zeroing itself?
[[nodiscard]] bool kernel_zero_refused(int err) noexcept;

}  // namespace wz::zero
