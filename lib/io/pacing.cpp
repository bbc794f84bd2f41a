// SPDX-License-Identifier: MIT
#include "io/pacing.hpp"


namespace wz::io {

std::uint64_t paced_piece_bytes(std::uint64_t bytes_per_second) noexcept {
    if (bytes_per_second == 0) {
        return 0;
    }
    const std::uint64_t units = bytes_per_second / pieces_per_second / piece_unit_bytes;
    return std::clamp(units * piece_unit_bytes, piece_unit_bytes, piece_max_bytes);
}

std::uint64_t piece_length(std::uint64_t at, std::uint64_t end, std::uint64_t piece) noexcept {
    if (at >= end) {
        return 0;
    }
    if (piece == 0) {
        return end - at;
    }
    const std::uint64_t to_boundary = piece - at % piece;
    return std::min(to_boundary, end - at);
}

nvme_piece_blocks nvme_pieces(std::uint64_t piece_bytes, std::uint32_t lba_bytes, std::uint32_t deac_unit_lba) noexcept {
    constexpr std::uint64_t max_nlb = 65536;  // CDW12 bits 15:0, 0's based
    nvme_piece_blocks b;
    if (piece_bytes == 0 || lba_bytes == 0) {
        return b;
    }
    const std::uint64_t plain = std::clamp<std::uint64_t>(piece_bytes / lba_bytes, 1, max_nlb);
    const std::uint64_t unit = std::max<std::uint32_t>(deac_unit_lba, 1);
    // A DEAC piece is whole units, at least one, even when one unit is more than a piece:
    // deallocation is what the device does well, and a granule is the least it takes.
    std::uint64_t deac = std::max(plain / unit, std::uint64_t{1}) * unit;
    if (deac > max_nlb) {
        // Only where a unit is so large that the planner's commands hold one at most.
        deac = max_nlb;
    }
    b.plain = static_cast<std::uint32_t>(plain);
    b.deac = static_cast<std::uint32_t>(deac);
    return b;
}

bool pacer::admit(std::uint64_t bytes, const progress_fn& progress) {
    while (auto wait = bucket_.take(bytes)) {
        detail::sleep_slice(*wait);
        if (progress && !progress(0)) {
            return false;
        }
    }
    return true;
}

}  // namespace wz::io
