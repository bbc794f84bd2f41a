// SPDX-License-Identifier: MIT
#pragma once

// Page-aligned buffers for O_DIRECT reads and writes, freed with std::free.

#include <cstddef>
#include <cstdlib>
#include <memory>

namespace wz {

using aligned_bytes = std::unique_ptr<unsigned char, decltype(&std::free)>;

// A page-aligned buffer for O_DIRECT reads; empty on allocation failure.
inline aligned_bytes aligned_buffer(std::size_t bytes) {
    void* raw = nullptr;
    if (::posix_memalign(&raw, 4096, bytes) != 0) {
        raw = nullptr;
    }
    return aligned_bytes(static_cast<unsigned char*>(raw), std::free);
}

}  // namespace wz
