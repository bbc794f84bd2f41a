// SPDX-License-Identifier: MIT
#include "zero/kernel_zero.hpp"

#include "probe/fs_traits.hpp"

#include <fcntl.h>
#include <linux/falloc.h>

#include <cerrno>

#ifndef FALLOC_FL_WRITE_ZEROES
#define FALLOC_FL_WRITE_ZEROES 0x80  // Linux 6.17; Debian 12's headers predate it
#endif

namespace wz::zero {

bool kernel_zero_refused(int err) noexcept {
    return err == EOPNOTSUPP || err == EINVAL;
}

int kernel_write_zeroes(int fd, std::uint64_t offset, std::uint64_t length, std::optional<dev_t> fs_dev) {
    if (::fallocate(fd, FALLOC_FL_WRITE_ZEROES, static_cast<off_t>(offset), static_cast<off_t>(length)) == 0) {
        return 0;
    }
    const int err = errno;
    if (fs_dev && kernel_zero_refused(err)) {
        probe::fs::note_kernel_write_zeroes_refused(*fs_dev);
    }
    return -err;
}

}  // namespace wz::zero
