// SPDX-License-Identifier: MIT
#include "writer/cache_watch.hpp"

namespace wz::writer_detail {

bool reread_due(watch_clock::time_point verified_at, watch_clock::time_point now,
                watch_clock::duration max_age) noexcept {
    if (verified_at > now) {
        return false;
    }
    return max_age <= watch_clock::duration::zero() || now - verified_at > max_age;
}

cache_move after_reread(const std::optional<cache_mode>& effective, const through_facts& facts) noexcept {
    if (effective == cache_mode::write_through) {
        return {};
    }
    cache_move m;
    m.move = true;
    m.to = !facts.forced && (facts.nvme_fua || facts.file_fua) ? durability_mode::fua : durability_mode::flush;
    return m;
}

}  // namespace wz::writer_detail
