// SPDX-License-Identifier: MIT
#include "probe/file_kind.hpp"

#include <sys/stat.h>

namespace wz {

file_kind file_kind_of(mode_t mode) noexcept {
    switch (mode & S_IFMT) {
    case S_IFREG: return file_kind::regular;
    case S_IFBLK: return file_kind::block;
    case S_IFDIR: return file_kind::directory;
    case S_IFIFO: return file_kind::fifo;
    case S_IFCHR: return file_kind::char_device;
    case S_IFSOCK: return file_kind::socket;
    case S_IFLNK: return file_kind::symlink;
    default: return file_kind::other;
    }
}

file_kind file_kind_of(const capabilities& caps) noexcept {
    if (caps.file_type == record_name(file_kind::regular)) {
        return file_kind::regular;
    }
    if (caps.file_type == record_name(file_kind::block)) {
        return file_kind::block;
    }
    return file_kind::other;
}

const char* record_name(file_kind kind) noexcept {
    switch (kind) {
    case file_kind::regular: return "regular";
    case file_kind::block: return "block";
    default: return "";
    }
}

const char* describe(file_kind kind) noexcept {
    switch (kind) {
    case file_kind::fifo: return "a FIFO";
    case file_kind::char_device: return "a character device";
    case file_kind::socket: return "a socket";
    case file_kind::symlink: return "a symbolic link";
    case file_kind::directory: return "a directory";
    default: return "not a regular file or block device";
    }
}

}  // namespace wz
