// SPDX-License-Identifier: MIT
// Makes files with many separate extents for memory benchmarks and tests.
//   make_fragmented FILE SIZE_BYTES STRIDE_BYTES [BLOCK_BYTES]
//     A sparse file: fallocate(0) of one block every `stride` bytes, so that no two extents
//     touch (unwritten extents with holes between them).
//   make_fragmented --written FILE OTHER SIZE_BYTES [BLOCK_BYTES]
//     FILE becomes SIZE bytes of written zeroes, one extent per block with no hole: blocks of
//     FILE and OTHER are allocated in turn (fallocate(0) allocates at once, with no delayed
//     allocation to merge them), so that no two blocks of FILE are adjacent on the device;
//     then FILE is written with zeroes and fdatasync'ed, which converts each unwritten extent
//     in place. OTHER is left as unwritten extents; delete it afterwards.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int make_sparse(const char* path, long long size, long long stride, long long block) {
    int fd = ::open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ::ftruncate(fd, size) != 0) {
        std::fprintf(stderr, "%s: %s\n", path, std::strerror(errno));
        return 1;
    }
    for (long long off = 0; off < size; off += stride) {
        if (::fallocate(fd, 0, off, block) != 0) {
            std::fprintf(stderr, "fallocate %s at %lld: %s\n", path, off, std::strerror(errno));
            return 1;
        }
    }
    return ::close(fd) == 0 ? 0 : 1;
}

int make_written(const char* path, const char* other, long long size, long long block) {
    const int fd = ::open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    const int ofd = ::open(other, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ofd < 0) {
        std::fprintf(stderr, "open %s or %s: %s\n", path, other, std::strerror(errno));
        return 1;
    }
    for (long long off = 0; off < size; off += block) {
        if (::fallocate(fd, 0, off, block) != 0 || ::fallocate(ofd, 0, off, block) != 0) {
            std::fprintf(stderr, "fallocate %s/%s at %lld: %s\n", path, other, off, std::strerror(errno));
            return 1;
        }
    }
    const std::vector<char> zeroes(1 << 20, 0);
    for (long long off = 0; off < size;) {
        const long long want = std::min<long long>(static_cast<long long>(zeroes.size()), size - off);
        const ssize_t n = ::pwrite(fd, zeroes.data(), static_cast<size_t>(want), off);
        if (n <= 0) {
            std::fprintf(stderr, "write %s at %lld: %s\n", path, off, n < 0 ? std::strerror(errno) : "short write");
            return 1;
        }
        off += n;
    }
    if (::fdatasync(fd) != 0) {
        std::fprintf(stderr, "fdatasync %s: %s\n", path, std::strerror(errno));
        return 1;
    }
    return ::close(fd) == 0 && ::close(ofd) == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc >= 5 && std::string(argv[1]) == "--written") {
        return make_written(argv[2], argv[3], std::atoll(argv[4]), argc > 5 ? std::atoll(argv[5]) : 4096);
    }
    if (argc < 4 || argv[1][0] == '-') {
        std::fprintf(stderr, "usage: %s FILE SIZE STRIDE [BLOCK]\n       %s --written FILE OTHER SIZE [BLOCK]\n",
                     argv[0], argv[0]);
        return 1;
    }
    const long long block = argc > 4 ? std::atoll(argv[4]) : 4096;
    return make_sparse(argv[1], std::atoll(argv[2]), std::atoll(argv[3]), block);
}
