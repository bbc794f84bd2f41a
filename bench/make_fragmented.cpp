// SPDX-License-Identifier: MIT
// Makes a sparse file with many separate extents for memory benchmarks: fallocate(0) of
// one block every `stride` bytes, so that no two extents touch.
//   make_fragmented FILE SIZE_BYTES STRIDE_BYTES [BLOCK_BYTES]

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s FILE SIZE STRIDE [BLOCK]\n", argv[0]);
        return 1;
    }
    const long long size = std::atoll(argv[2]);
    const long long stride = std::atoll(argv[3]);
    const long long block = argc > 4 ? std::atoll(argv[4]) : 4096;
    int fd = ::open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ::ftruncate(fd, size) != 0) {
        std::fprintf(stderr, "%s: %s\n", argv[1], std::strerror(errno));
        return 1;
    }
    for (long long off = 0; off < size; off += stride) {
        if (::fallocate(fd, 0, off, block) != 0) {
            std::fprintf(stderr, "fallocate %s at %lld: %s\n", argv[1], off, std::strerror(errno));
            return 1;
        }
    }
    return ::close(fd) == 0 ? 0 : 1;
}
